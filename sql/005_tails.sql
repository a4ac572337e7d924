-- 005_tails.sql: where `runmon watch --batches` stopped reading each
-- growing batch sidecar. dev and ino identify the file that was read, so
-- a rotation (a new file at the same path) is noticed; offset is the byte
-- just past the last complete line imported and lineno that line's number.
CREATE TABLE tails (
    path       TEXT PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    dev        INTEGER NOT NULL,
    ino        INTEGER NOT NULL,
    offset     INTEGER NOT NULL,
    lineno     INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
