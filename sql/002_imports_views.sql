-- 002_imports_views.sql: import log and the views reports and dashboards use.

-- One row per imported file: what it held and how messy it was.
CREATE TABLE imports (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  path        TEXT NOT NULL,
  format      TEXT NOT NULL,
  lines       INTEGER NOT NULL,
  steps       INTEGER NOT NULL,              -- step rows written
  batches     INTEGER NOT NULL,              -- batch rows written
  replaced    INTEGER NOT NULL,              -- rows that replaced an earlier row of the same step
  restarts    INTEGER NOT NULL,              -- times the step counter went backwards
  skipped     INTEGER NOT NULL,              -- bad lines skipped (--skip-bad)
  imported_at REAL NOT NULL                  -- unix seconds
);

-- Batch composition per step, aggregated over data-parallel ranks. The
-- bucket is the lowest one any rank used; ranks normally agree.
CREATE VIEW step_batch AS
SELECT run_id, step,
       MIN(bucket)                         AS bucket,
       COUNT(*)                            AS ranks,
       SUM(n)                              AS n,
       MIN(min_len)                        AS min_len,
       MAX(max_len)                        AS max_len,
       CAST(SUM(tokens) AS REAL) / NULLIF(SUM(n), 0) AS mean_len,
       SUM(tokens)                         AS tokens,
       SUM(padded_tokens)                  AS padded_tokens
FROM batches
GROUP BY run_id, step;

-- Steps joined with their batch composition (NULL bucket when unknown).
CREATE VIEW step_batches AS
SELECT s.run_id, s.step, s.loss, s.lr, s.epoch, s.grad_norm, s.runtime, s.ts, s.nan_mask,
       b.bucket, b.n, b.min_len, b.max_len, b.mean_len, b.tokens, b.padded_tokens
FROM steps s
LEFT JOIN step_batch b ON b.run_id = s.run_id AND b.step = s.step;

-- Per-bucket loss statistics over finite losses.
CREATE VIEW bucket_loss AS
SELECT run_id, bucket,
       COUNT(*)                                   AS steps,
       CAST(AVG(loss) AS REAL)                    AS mean_loss,
       CAST(MIN(loss) AS REAL)                    AS min_loss,
       CAST(MAX(loss) AS REAL)                    AS max_loss,
       CAST(AVG(loss * loss) - AVG(loss) * AVG(loss) AS REAL) AS var_loss,
       CAST(SUM(tokens) AS REAL) / NULLIF(SUM(tokens + padded_tokens), 0) AS padding_efficiency
FROM step_batches
WHERE loss IS NOT NULL AND loss BETWEEN -1e308 AND 1e308
GROUP BY run_id, bucket;
