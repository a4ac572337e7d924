#!/usr/bin/env python3
"""Writes a synthetic W&B wandb-history.jsonl with batch keys (12 keys), as a
homogeneously batched run logs it: about 270 bytes a line, NaN now and then.

usage: gen_history.py LINES > history.jsonl
"""
import math
import random
import sys

BOUNDS = [0, 770, 1216, 1728, 2432, 3296, 8192]
LEVEL = [0.55, 0.8, 1.05, 1.2, 1.6, 2.4]


def main():
    n = int(sys.argv[1])
    rnd = random.Random(7)
    out = sys.stdout
    bucket, left = 0, 0
    t0 = 1714556400.0
    for step in range(n):
        if left == 0:  # homogeneous batching: long streaks of one bucket
            bucket, left = rnd.randrange(6), rnd.randrange(20, 200)
        left -= 1
        lo, hi = BOUNDS[bucket], BOUNDS[bucket + 1]
        nseq = max(1, 65536 // hi)
        max_len = rnd.randint(lo + 1, hi)
        min_len = rnd.randint(lo + 1, max_len)
        mean_len = round((min_len + max_len) / 2, 1)
        tokens = int(mean_len * nseq)
        trend = 1.0 + 2.0 * math.exp(-step / 50000.0)
        loss = float("nan") if step % 100000 == 99999 else round(LEVEL[bucket] * trend + rnd.gauss(0, 0.05), 6)
        out.write('{"_step": %d, "_runtime": %.3f, "_timestamp": %.3f, "train/loss": %s, '
                  '"train/lr": %.8f, '
                  '"batch/bucket": %d, "batch/n": %d, "batch/min_len": %d, "batch/max_len": %d, '
                  '"batch/mean_len": %.1f, "batch/tokens": %d, "batch/padded_tokens": %d}\n'
                  % (step, step * 0.41, t0 + step * 0.41, "NaN" if loss != loss else repr(loss),
                     3e-4 * min(1.0, step / 2000.0),
                     bucket, nseq, min_len, max_len, mean_len, tokens, nseq * max_len - tokens))


if __name__ == "__main__":
    main()
