#!/usr/bin/env python3
"""A tiny data-parallel "training loop" in pure Python (no torch) that
records its batches with runmon_record, the way a real script would.

Sequences get lengths from a skewed mix; a length-grouped sampler builds
batches from one bucket at a time and orders them either in long same-bucket
streaks (homogeneous) or shuffled (interleaved). Each optimizer step takes
ranks x accum consecutive batches of the global order. With --order stride,
each rank's batches come from runmon_sampler.StrideBucketSampler (its
micro-batches consecutive); stride-sorted takes the same batches sorted by
bucket, the order homogeneous batching gives. The loss of a batch
depends on its lengths (longer sequences, higher loss), and the loss the
trainer logs at a step is the mean over its batches.

usage: tiny_train.py OUTDIR --order homogeneous|interleaved|stride|stride-sorted [--steps N]
       [--ranks R] [--accum A] [--seed S] [--log-every K] [--one-file]
Writes OUTDIR/history.jsonl and OUTDIR/batches-rank<R>.jsonl (or, with
--one-file, every rank appends to OUTDIR/batches.jsonl).
"""

import argparse
import json
import math
import os
import random
import sys

# The installed module when RUNMON_PYTHON names its directory, else the source tree's.
sys.path.insert(0, os.environ.get("RUNMON_PYTHON") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "contrib", "python"))
import runmon_record  # noqa: E402
import runmon_sampler  # noqa: E402

BOUNDS = [0, 770, 1216, 1728, 2432, 3296, 8192]
PAD = 0


class Vec:
    """What a 1-D tensor offers the recorder: tolist()."""

    def __init__(self, values):
        self.values = values

    def tolist(self):
        return list(self.values)


class Mask:
    """An attention mask as a 2-D tensor would present it: sum(dim=1)."""

    def __init__(self, lens):
        self.lens = lens
        self.shape = (len(lens), max(lens))

    def sum(self, dim):
        assert dim == 1
        return Vec(self.lens)


def lengths_of(rng, n):
    # Most sequences short, a long tail, as in instruction or translation data.
    return [min(8000, max(16, int(rng.lognormvariate(6.6, 0.6)))) for _ in range(n)]


def batches_by_bucket(rng, lens, per_batch):
    by = {}
    for i, n in enumerate(lens):
        by.setdefault(runmon_record.bucket_of(n, BOUNDS), []).append(i)
    out = []
    for b in sorted(by):
        idx = by[b]
        rng.shuffle(idx)
        out += [idx[k:k + per_batch] for k in range(0, len(idx) - per_batch + 1, per_batch)]
    return out


def order(rng, batches, lens, how):
    if how == "interleaved":
        rng.shuffle(batches)
        return batches
    # homogeneous: streaks of 40 batches of one bucket, the buckets in turn
    by = {}
    for bt in batches:
        by.setdefault(runmon_record.bucket_of(max(lens[i] for i in bt), BOUNDS), []).append(bt)
    out = []
    while any(by.values()):
        for b in [b for b in by if by[b]]:
            out += by[b][:40]
            del by[b][:40]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--order", choices=["homogeneous", "interleaved", "stride", "stride-sorted"], required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--one-file", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    per_batch = 8
    need = a.steps * a.ranks * a.accum
    # a stride epoch is the run (a tenth more), so sorting it reaches every bucket
    lens = lengths_of(rng, need * per_batch * (11 if a.order.startswith("stride") else 20) // 10)
    if a.order.startswith("stride"):
        per_rank = []
        for r in range(a.ranks):
            s = runmon_sampler.StrideBucketSampler(lens, BOUNDS, per_batch, seed=a.seed, rank=r, world_size=a.ranks,
                                                   accumulation=a.accum)
            mine = list(s)
            if a.order == "stride-sorted":
                mine.sort(key=lambda bt: s.buckets[bt[0]])
            per_rank.append(mine)
        # the global order as the loop below reads it: step, rank, micro-batch
        glob = [per_rank[r][s * a.accum + m] for s in range(len(per_rank[0]) // a.accum)
                for r in range(a.ranks) for m in range(a.accum)]
    else:
        glob = order(rng, batches_by_bucket(rng, lens, per_batch), lens, a.order)
    if len(glob) < need:
        sys.exit(f"tiny_train: {len(glob)} batches, {need} needed")
    os.makedirs(a.outdir, exist_ok=True)
    name = "batches.jsonl" if a.one_file else "batches-rank{rank}.jsonl"
    ids = {"buckets": BOUNDS} if a.order.startswith("stride") else {}  # the sampler's buckets, recorded
    recs = [runmon_record.BatchRecorder(os.path.join(a.outdir, name), rank=r, **ids) for r in range(a.ranks)]
    hist = open(os.path.join(a.outdir, "history.jsonl"), "w")
    interval = []
    for step in range(1, a.steps + 1):  # the loss of step s covers its batches, logged under s
        losses = []
        for r in range(a.ranks):
            for m in range(a.accum):
                bt = glob[((step - 1) * a.ranks + r) * a.accum + m]
                bl = [lens[i] for i in bt]
                recs[r].record(step, batch={"attention_mask": Mask(bl), "input_ids": None})
                mean = sum(bl) / len(bl)
                level = 0.35 + 0.5 * math.log2(1 + mean / 500)
                losses.append(level * (1 + 1.5 * math.exp(-step / 800)) + rng.gauss(0, 0.04))
        interval.append(sum(losses) / len(losses))
        if step % a.log_every == 0:
            hist.write(json.dumps({"step": step, "loss": round(sum(interval) / len(interval), 5),
                                   "learning_rate": 3e-4}) + "\n")
            interval = []
    hist.close()
    for r in recs:
        r.close()


if __name__ == "__main__":
    main()
