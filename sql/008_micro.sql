-- 008_micro.sql: gradient-accumulation micro-batches get a key of their
-- own. A step of a data-parallel run with accumulation is ranks x micro
-- batches; before this, a trainer had to fold the micro-batch into the rank.
-- SQLite cannot change a primary key in place, so the table is rebuilt.
-- The copy goes through a temporary table rather than a rename: renaming
-- would rewrite the views that name "batches" to name the old table.

CREATE TEMP TABLE batches_v7 AS SELECT * FROM batches;
DROP TABLE batches;

-- Batch composition per step, per data-parallel rank and micro-batch (0
-- when the trainer records none). Lengths are in tokens; padded_tokens
-- counts the padding added to reach max_len: n * max_len - tokens.
CREATE TABLE batches (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  rank          INTEGER NOT NULL DEFAULT 0,
  micro         INTEGER NOT NULL DEFAULT 0,  -- micro-batch within the step
  bucket        INTEGER,
  n             INTEGER,                     -- sequences in the batch
  min_len       INTEGER,
  max_len       INTEGER,
  mean_len      REAL,
  tokens        INTEGER,                     -- real (unpadded) tokens
  padded_tokens INTEGER,                     -- padding tokens
  PRIMARY KEY (run_id, step, rank, micro)
) WITHOUT ROWID;

INSERT INTO batches(run_id, step, rank, bucket, n, min_len, max_len, mean_len, tokens, padded_tokens)
  SELECT run_id, step, rank, bucket, n, min_len, max_len, mean_len, tokens, padded_tokens FROM batches_v7;
DROP TABLE batches_v7;
