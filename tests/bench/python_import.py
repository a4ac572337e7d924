#!/usr/bin/env python3
"""Reference for the import benchmark: what a team would write in Python.
Reads W&B history rows with json and upserts them into runmon's tables
with sqlite3, in one transaction as runmon does.

usage: python_import.py DB HISTORY.jsonl   (DB must already have runmon's schema)
"""
import json
import sqlite3
import sys

STEP_SQL = ("INSERT INTO steps(run_id, step, loss, lr, epoch, grad_norm, runtime, ts, nan_mask)"
            " VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id, step) DO UPDATE SET loss=excluded.loss,"
            " lr=excluded.lr, epoch=excluded.epoch, grad_norm=excluded.grad_norm,"
            " runtime=excluded.runtime, ts=excluded.ts, nan_mask=excluded.nan_mask")
BATCH_SQL = ("INSERT INTO batches(run_id, step, rank, bucket, n, min_len, max_len, mean_len, tokens,"
             " padded_tokens) VALUES (?,?,0,?,?,?,?,?,?,?) ON CONFLICT(run_id, step, rank) DO UPDATE SET"
             " bucket=excluded.bucket, n=excluded.n, min_len=excluded.min_len, max_len=excluded.max_len,"
             " mean_len=excluded.mean_len, tokens=excluded.tokens, padded_tokens=excluded.padded_tokens")


def main():
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("BEGIN")
    run_id = db.execute("INSERT INTO runs(source, name) VALUES ('file', 'python') RETURNING id").fetchone()[0]
    with open(sys.argv[2]) as f:
        for line in f:
            r = json.loads(line)
            loss = r.get("train/loss")
            nan = 1 if loss is not None and loss != loss else 0
            db.execute(STEP_SQL, (run_id, r["_step"], None if nan else loss, r.get("train/lr"),
                                  r.get("train/epoch"), r.get("train/grad_norm"), r.get("_runtime"),
                                  r.get("_timestamp"), nan))
            db.execute(BATCH_SQL, (run_id, r["_step"], r.get("batch/bucket"), r.get("batch/n"),
                                   r.get("batch/min_len"), r.get("batch/max_len"), r.get("batch/mean_len"),
                                   r.get("batch/tokens"), r.get("batch/padded_tokens")))
    db.execute("COMMIT")


if __name__ == "__main__":
    main()
