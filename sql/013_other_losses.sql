-- 013_other_losses.sql: the other loss-named series of a training record
-- (a GAN's d_loss beside its g_loss, a CTC loss beside an attention loss,
-- parts of a total). The diagnosis reads one loss, the one in steps; the
-- others are kept here, by their key, so nothing the log held is lost.
-- Rows a rank printed are left out (their steps' losses are per rank).
CREATE TABLE other_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  key    TEXT NOT NULL,
  loss   REAL,                              -- NULL when not finite (NaN, inf)
  PRIMARY KEY (run_id, key, step)
) WITHOUT ROWID;
