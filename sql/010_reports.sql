-- 010_reports.sql: what each report saw, so that the next one can say what
-- changed (runs new, risen, fallen or resolved; findings that appeared or
-- went away). Runs are keyed by name (entity/project/name, or the local
-- name), not by id: a run deleted and imported again is the same run to
-- the people reading the report. Severities are the finding table's words.
CREATE TABLE reports (
  id           INTEGER PRIMARY KEY,
  generated_at REAL NOT NULL               -- unix seconds
);
CREATE INDEX reports_time ON reports(generated_at);

CREATE TABLE report_runs (
  report_id  INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
  run        TEXT NOT NULL,
  severity   TEXT NOT NULL,                -- none, info, warn, critical
  verdict    TEXT NOT NULL,                -- the top hypothesis, or 'healthy'
  last_step  INTEGER,
  PRIMARY KEY (run, report_id)
);

CREATE TABLE report_findings (
  report_id  INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
  run        TEXT NOT NULL,
  detector   TEXT NOT NULL,
  severity   TEXT NOT NULL,
  first_step INTEGER,
  PRIMARY KEY (run, report_id, detector)
);
