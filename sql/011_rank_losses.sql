-- 011_rank_losses.sql: the loss each data-parallel rank printed for a step,
-- when the log names the rank on each line (icefall's "(3/4)", torchrun's
-- "[rank3]:", a "rank" key). The step's own loss in steps is their mean,
-- as DDP's all-reduce reports it; the detectors regress each rank's loss
-- on that rank's own batch (batches, same step and rank).
CREATE TABLE rank_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  rank   INTEGER NOT NULL,
  loss   REAL,                              -- NULL when not finite (NaN, inf)
  PRIMARY KEY (run_id, step, rank)
) WITHOUT ROWID;
