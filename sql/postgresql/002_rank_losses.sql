-- 002_rank_losses.sql: the loss each data-parallel rank printed for a step
-- (sql/011_rank_losses.sql has the why). The step's loss in steps is their
-- mean.
CREATE TABLE rank_losses (
  run_id bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   bigint NOT NULL,
  rank   bigint NOT NULL,
  loss   double precision,
  PRIMARY KEY (run_id, step, rank)
);
