-- 004_other_losses.sql: the other loss-named series of a training record
-- (sql/013_other_losses.sql has the why).
CREATE TABLE other_losses (
  run_id bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   bigint NOT NULL,
  key    text NOT NULL,
  loss   double precision,
  PRIMARY KEY (run_id, key, step)
);
