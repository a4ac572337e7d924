-- 001_init.sql: runmon's durable tables.
--
-- Durable data (runs, steps, batches, buckets, alert log) is what sources
-- wrote; findings are derived and may be dropped and recomputed at any time.
-- Times are unix seconds (REAL) so Grafana's SQLite datasource reads them
-- as timestamps without conversion. Metric columns are declared REAL so the
-- datasource types them as float64.

-- One training run. A W&B run is (entity, project, name) with name the W&B
-- run id; a run imported from files has entity = '' and project = ''.
CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  source       TEXT NOT NULL,              -- 'file' or 'wandb'
  entity       TEXT NOT NULL DEFAULT '',
  project      TEXT NOT NULL DEFAULT '',
  name         TEXT NOT NULL,              -- W&B run id, or the local run name
  display_name TEXT,
  state        TEXT,                       -- running, finished, crashed, failed, ...
  created_at   REAL,                       -- unix seconds
  heartbeat_at REAL,                       -- unix seconds
  config_json  TEXT,
  loss_key     TEXT,                       -- the history key read as the loss
  last_step    INTEGER,                    -- highest step stored
  synced_at    REAL,                       -- unix seconds of the last import or sync
  UNIQUE (entity, project, name)
);

-- One row per optimizer step. loss, lr, epoch and grad_norm keep +/-Inf as
-- REAL infinities; SQLite cannot store NaN, so a NaN is stored as NULL with
-- its bit set in nan_mask (1 loss, 2 lr, 4 epoch, 8 grad_norm). A NULL with
-- the bit clear means the value was not logged.
CREATE TABLE steps (
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step      INTEGER NOT NULL,
  loss      REAL,
  lr        REAL,
  epoch     REAL,
  grad_norm REAL,
  runtime   REAL,                          -- seconds since the run started
  ts        REAL,                          -- unix seconds
  nan_mask  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

-- Batch composition per step, per data-parallel rank (rank 0 when the
-- trainer records none). Lengths are in tokens; padded_tokens counts the
-- padding added to reach max_len: n * max_len - tokens.
CREATE TABLE batches (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  rank          INTEGER NOT NULL DEFAULT 0,
  bucket        INTEGER,
  n             INTEGER,                   -- sequences in the batch
  min_len       INTEGER,
  max_len       INTEGER,
  mean_len      REAL,
  tokens        INTEGER,                   -- real (unpadded) tokens
  padded_tokens INTEGER,                   -- padding tokens
  PRIMARY KEY (run_id, step, rank)
) WITHOUT ROWID;

-- Bucket boundaries when known: bucket b holds lengths in (lo, hi].
CREATE TABLE buckets (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  bucket INTEGER NOT NULL,
  lo     INTEGER NOT NULL,
  hi     INTEGER NOT NULL,
  PRIMARY KEY (run_id, bucket)
) WITHOUT ROWID;

-- Evaluation rows, kept apart from training steps (same step numbers).
CREATE TABLE evals (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  key    TEXT NOT NULL,
  value  REAL,                             -- NULL for NaN
  PRIMARY KEY (run_id, step, key)
) WITHOUT ROWID;

-- Derived: detector output, replaced on each diagnosis.
CREATE TABLE findings (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  detector      TEXT NOT NULL,
  severity      TEXT NOT NULL,             -- info, warn, critical
  first_step    INTEGER,
  last_step     INTEGER,
  statistic     REAL,
  p_value       REAL,
  evidence_json TEXT,
  created_at    REAL NOT NULL              -- unix seconds
);

-- Durable: one row per delivery attempt, so alerting is idempotent across
-- restarts. Keyed by a fingerprint, not by finding id, since findings are
-- recomputed.
CREATE TABLE alerts (
  id          INTEGER PRIMARY KEY,
  finding_id  INTEGER,
  fingerprint TEXT NOT NULL,
  channel     TEXT NOT NULL,
  severity    TEXT NOT NULL,
  sent_at     REAL NOT NULL,               -- unix seconds
  status      TEXT NOT NULL                -- sent, failed
);
CREATE INDEX alerts_fingerprint ON alerts(fingerprint, channel);
