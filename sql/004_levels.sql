-- 004_levels.sql: the per-bucket loss levels a diagnosis fits, so that
-- dashboards can draw the bucket-adjusted loss. Derived: replaced by each
-- diagnose or report.

CREATE TABLE bucket_levels (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  bucket INTEGER NOT NULL,
  scale  TEXT NOT NULL,                    -- 'log': level is a ratio; 'linear': shift is added
  shift  REAL NOT NULL,                    -- offset in the fitted scale
  level  REAL NOT NULL,                    -- ratio (log scale) or additive offset (linear)
  PRIMARY KEY (run_id, bucket)
) WITHOUT ROWID;

-- The loss with each bucket's level taken out: the curve to watch.
CREATE VIEW adjusted_loss AS
SELECT s.run_id, s.step, s.ts, s.bucket, s.loss,
       CAST(CASE l.scale WHEN 'log' THEN s.loss / l.level ELSE s.loss - l.level END AS REAL) AS adjusted
FROM step_batches s
JOIN bucket_levels l ON l.run_id = s.run_id AND l.bucket = s.bucket
WHERE s.loss IS NOT NULL;
