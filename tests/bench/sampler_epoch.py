"""The stride sampler's overhead in CPython: building one epoch's batches
for 1M samples (contrib/python/runmon_sampler.py), the median of three
epochs, with a batch size, with a token budget, and as rank 0 of 8 with
two micro-batches a step. Construction (bucketing the lengths, once per
run) is timed apart. Prints the figures and checks the target (<= 1 s).

usage: python3 sampler_epoch.py SRC_DIR [N]
"""
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(sys.argv[1], "contrib", "python"))
from runmon_sampler import StrideBucketSampler  # noqa: E402
from targets import check  # noqa: E402

n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
rng = random.Random(1)
lengths = [min(8192, max(16, int(rng.lognormvariate(7.0, 0.75)))) for _ in range(n)]
bounds = [0, 770, 1216, 1728, 2432, 3296, 8192]
row = "  {:<44} {:>8} {:>9}"
print(row.format("", "seconds", "batches"))
results = {}
for name, kw in (("batch_size 32", dict(batch_size=32)), ("max_tokens 65536", dict(max_tokens=65536)),
                 ("batch_size 32, rank 0 of 8, accumulation 2", dict(batch_size=32, world_size=8, accumulation=2))):
    t0 = time.perf_counter()
    s = StrideBucketSampler(lengths, bounds, kw.pop("batch_size", None), **kw)
    built = time.perf_counter() - t0
    times = []
    for epoch in range(3):
        t0 = time.perf_counter()
        nb = len(s.epoch_batches(epoch))
        times.append(time.perf_counter() - t0)
    results[name] = statistics.median(times)
    print(row.format("construction (" + name + ")", "%.2f" % built, ""))
    print(row.format("an epoch (" + name + ")", "%.2f" % results[name], "{:,}".format(nb)))
print("  target: an epoch of %d samples <= 1 s: %s (batch size), %s (token budget)"
      % (n, check("sampler: an epoch of 1M samples, batch size", results["batch_size 32"], "<=", 1, "s"),
         check("sampler: an epoch of 1M samples, token budget", results["max_tokens 65536"], "<=", 1, "s")))
