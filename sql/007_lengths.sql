-- 007_lengths.sql: what a run's batch composition came from, and the
-- fitted length effect, so that dashboards can draw the length-adjusted
-- loss.

-- The keys an import read batch composition from, as "key (field), ...",
-- e.g. "wpb (tokens), bsz (n)"; NULL when the file had none.
ALTER TABLE imports ADD COLUMN composition TEXT;

-- Derived: the length effect a diagnosis fits (one row per run), replaced
-- by each full diagnose or report. The loss at the reference length is
-- loss * (ref_len / length)^slope on the log scale, loss - slope *
-- ln(length / ref_len) on the linear one.
CREATE TABLE length_levels (
  run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  scale   TEXT NOT NULL,                   -- 'log' or 'linear'
  slope   REAL NOT NULL,                   -- per unit of ln(length)
  ref_len REAL NOT NULL,                   -- tokens
  r2      REAL NOT NULL                    -- share of the detrended loss the length explains
);

-- The same effect tabulated over the run's lengths, so that the view below
-- needs no math functions (SQLite builds, Grafana's among them, often lack
-- ln and exp): lengths in (lo, hi], bins 1% wide (wider if there would be
-- over 2000 of them), each with the effect at its geometric middle (within
-- 0.5% of the exact one at slope 1).
CREATE TABLE length_factors (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  lo     REAL NOT NULL,
  hi     REAL NOT NULL,
  effect REAL NOT NULL,                    -- log scale: a ratio to divide by; linear: a shift to subtract
  PRIMARY KEY (run_id, lo)
) WITHOUT ROWID;

-- The loss with the length effect taken out: the curve to watch when no
-- bucket id is recorded. The length is max_len, else mean_len, as the
-- detectors read it.
CREATE VIEW length_adjusted_loss AS
SELECT s.run_id, s.step, s.ts, s.loss, COALESCE(s.max_len, s.mean_len) AS length,
       CAST(CASE l.scale WHEN 'log' THEN s.loss / f.effect ELSE s.loss - f.effect END AS REAL) AS adjusted
FROM step_batches s
JOIN length_levels l ON l.run_id = s.run_id
JOIN length_factors f ON f.run_id = s.run_id
     AND f.lo < COALESCE(s.max_len, s.mean_len) AND COALESCE(s.max_len, s.mean_len) <= f.hi
WHERE s.loss IS NOT NULL;
