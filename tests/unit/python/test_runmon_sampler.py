"""Tests of contrib/python/runmon_sampler.py: every guarantee of its
specification over many seeds and bucket shapes (a bucket with one batch,
buckets far apart in size, empty buckets), and the C of
`runmon simulate --strategy stride` (src/sim/stride.c, driven through
tests/tools/stride_order, named by $STRIDE_ORDER) giving the same batches."""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

sys.path.insert(0, os.environ.get("RUNMON_PYTHON") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "contrib", "python"))
from runmon_sampler import StrideBucketSampler, bucket_of  # noqa: E402

BOUNDS = [0, 770, 1216, 1728, 2432, 3296, 8192]


def skewed(rng, n, mu=7.0, sigma=0.75):
    return [min(9000, max(1, int(rng.lognormvariate(mu, sigma)))) for _ in range(n)]


def shaped(rng, counts):
    """Lengths with exactly counts[b] samples in bucket b of BOUNDS."""
    out = []
    for b, c in enumerate(counts):
        lo, hi = BOUNDS[b] + 1, BOUNDS[b + 1]
        out += [rng.randint(lo, hi) for _ in range(c)]
    rng.shuffle(out)
    return out


# Shapes: sizes far apart, one batch in a bucket, empty buckets, one bucket.
SHAPES = [[4000, 3000, 2000, 1000, 500, 200], [5000, 8, 8, 8, 8, 8], [8, 0, 0, 6000, 0, 1],
          [1, 1, 1, 1, 1, 3000], [0, 0, 700, 0, 0, 0], [300, 300, 300, 300, 300, 300]]


def prefix_deviation(seq_buckets, totals=None):
    """The largest |k_b(t) - t n_b / N| over every prefix t and bucket b."""
    totals = totals or Counter(seq_buckets)
    n = sum(totals.values())
    seen, worst = Counter(), 0.0
    for t, b in enumerate(seq_buckets, 1):
        seen[b] += 1
        for x, nx in totals.items():
            worst = max(worst, abs(seen[x] - t * nx / n))
    return worst


def longest_run(seq):
    best = run = 0
    prev = object()
    for x in seq:
        run = run + 1 if x == prev else 1
        prev = x
        best = max(best, run)
    return best


class Basics(unittest.TestCase):
    def test_bucket_of_follows_import_buckets(self):
        # (B[b], B[b+1]], the first and last clamped, as runmon import --buckets
        cases = {0: 0, 1: 0, 770: 0, 771: 1, 1216: 1, 3296: 4, 3297: 5, 8192: 5, 99999: 5}
        for n, b in cases.items():
            self.assertEqual(bucket_of(n, BOUNDS), b, n)
        s = StrideBucketSampler(list(cases), BOUNDS, 2)
        self.assertEqual(s.buckets, list(cases.values()))

    def test_refuses_bad_arguments(self):
        bad = [dict(batch_size=None), dict(batch_size=4, max_tokens=100), dict(batch_size=0),
               dict(batch_size=4, rank=2, world_size=2), dict(batch_size=4, world_size=0),
               dict(batch_size=4, seed=-1), dict(max_tokens=0), dict(batch_size=2.5),
               dict(batch_size=4, accumulation=0)]
        for kw in bad:
            with self.assertRaises(ValueError, msg=kw):
                StrideBucketSampler([5, 6], BOUNDS, kw.pop("batch_size", None), **kw)
        with self.assertRaises(ValueError):
            StrideBucketSampler([5], [10, 10, 20], 1)
        with self.assertRaises(ValueError):
            StrideBucketSampler([-1], BOUNDS, 1)
        with self.assertRaises(ValueError):
            StrideBucketSampler([5], BOUNDS, 1).set_epoch(-1)

    def test_batches_are_lists_of_ints_and_len_counts_them(self):
        s = StrideBucketSampler(skewed(random.Random(1), 999), BOUNDS, 10)
        out = list(s)
        self.assertEqual(len(out), len(s))
        self.assertTrue(all(isinstance(b, list) and all(isinstance(i, int) for i in b) for b in out))


class OneEpoch(unittest.TestCase):
    def test_once_per_epoch_one_bucket_per_batch(self):
        for seed in range(25):
            rng = random.Random(seed)
            lengths = shaped(rng, SHAPES[seed % len(SHAPES)]) if seed % 2 else skewed(rng, rng.randint(1, 3000))
            bs = rng.choice([1, 3, 8, 32])
            s = StrideBucketSampler(lengths, BOUNDS, bs, seed=seed)
            s.set_epoch(seed % 4)
            batches = list(s)
            flat = [i for b in batches for i in b]
            self.assertEqual(sorted(flat), list(range(len(lengths))), f"seed {seed}: each index once")
            short = Counter()
            for b in batches:
                self.assertEqual(len({s.buckets[i] for i in b}), 1, f"seed {seed}: one bucket a batch")
                self.assertLessEqual(len(b), bs)
                if len(b) < bs:
                    short[s.buckets[b[0]]] += 1
            self.assertTrue(all(v == 1 for v in short.values()), f"seed {seed}: one short batch per bucket")

    def test_drop_last_drops_only_each_buckets_short_batch(self):
        for seed in range(10):
            rng = random.Random(seed)
            lengths = shaped(rng, SHAPES[seed % len(SHAPES)])
            s = StrideBucketSampler(lengths, BOUNDS, 7, seed=seed, drop_last=True)
            batches = list(s)
            self.assertTrue(all(len(b) == 7 for b in batches))
            per = Counter(s.buckets)
            got = Counter(s.buckets[b[0]] for b in batches)
            for b, n in per.items():
                self.assertEqual(got[b], n // 7, f"seed {seed} bucket {b}")

    def test_every_prefix_holds_the_shares(self):
        worst = 0.0
        for seed in range(60):
            rng = random.Random(seed)
            counts = SHAPES[seed % len(SHAPES)] if seed < 12 else [rng.choice([0, 1, 2, 5, rng.randint(1, 4000)])
                                                                   for _ in range(6)]
            if not sum(counts):
                continue
            s = StrideBucketSampler(shaped(rng, counts), BOUNDS, rng.choice([1, 4, 16]), seed=seed)
            seq = [s.buckets[b[0]] for b in s]
            worst = max(worst, prefix_deviation(seq))
        # Measured 1.44 at most over thousands of shapes (the module's docstring).
        self.assertLessEqual(worst, 1.5)
        self.assertGreater(worst, 0.5)  # the measure reads something

    def test_far_apart_buckets_and_one_batch_bucket_spread_out(self):
        # one batch of the long bucket amid 5000 short ones: it lands mid-epoch,
        # not first or last; the short bucket never runs more than needed
        s = StrideBucketSampler(shaped(random.Random(3), [5000, 0, 0, 0, 0, 1]), BOUNDS, 1)
        seq = [s.buckets[b[0]] for b in s]
        where = seq.index(5)
        self.assertTrue(2000 < where < 3000, where)
        s = StrideBucketSampler(shaped(random.Random(4), [3000, 1000, 0, 0, 0, 0]), BOUNDS, 1)
        seq = [s.buckets[b[0]] for b in s]
        self.assertLessEqual(longest_run(seq), 3)  # three short, one medium, ...

    def test_epochs_differ_and_reproduce(self):
        lengths = skewed(random.Random(5), 4000)
        a = StrideBucketSampler(lengths, BOUNDS, 16, seed=1)
        b = StrideBucketSampler(lengths, BOUNDS, 16, seed=1)
        c = StrideBucketSampler(lengths, BOUNDS, 16, seed=2)
        e0 = list(a)
        a.set_epoch(1)
        e1 = list(a)
        self.assertEqual(e0, list(b), "same seed, same epoch: same batches")
        self.assertNotEqual(e0, e1, "epochs differ")
        self.assertNotEqual(e0, list(c), "seeds differ")
        self.assertNotEqual(sorted(map(tuple, e0)), sorted(map(tuple, e1)), "not the same batches reordered")


class TokenBudget(unittest.TestCase):
    def test_budget_once_per_epoch_and_shares(self):
        for seed in range(20):
            rng = random.Random(100 + seed)
            lengths = skewed(rng, rng.randint(50, 4000))
            budget = rng.choice([4096, 16384, 65536])
            s = StrideBucketSampler(lengths, BOUNDS, max_tokens=budget, seed=seed)
            batches = list(s)
            self.assertEqual(sorted(i for b in batches for i in b), list(range(len(lengths))))
            for b in batches:
                self.assertEqual(len({s.buckets[i] for i in b}), 1)
                cost = len(b) * max(lengths[i] for i in b)
                self.assertTrue(cost <= budget or len(b) == 1, f"seed {seed}: {cost} > {budget}")
            self.assertLessEqual(prefix_deviation([s.buckets[b[0]] for b in batches]), 1.5)

    def test_budget_drop_last_drops_each_buckets_last_batch_when_not_full(self):
        for seed in range(5):
            lengths = skewed(random.Random(9 + seed), 3000)
            keep = StrideBucketSampler(lengths, BOUNDS, max_tokens=20000, drop_last=True, seed=seed)
            every = StrideBucketSampler(lengths, BOUNDS, max_tokens=20000, seed=seed)
            kept = {tuple(b) for b in keep}
            dropped = [b for b in every if tuple(b) not in kept]
            self.assertEqual(len(kept) + len(dropped), len(every))
            self.assertLessEqual(len(Counter(keep.buckets[b[0]] for b in dropped)), len(dropped))
            for b in dropped:  # a bucket's last batch, with room for one more of its longest
                self.assertLessEqual((len(b) + 1) * max(lengths[i] for i in b), 20000)
            self.assertEqual(len(dropped), len({keep.buckets[b[0]] for b in dropped}), "one per bucket at most")

    def test_empty_samples_take_a_token_each(self):
        # issue 49.15: a bucket of zero-length samples divided by zero
        s = StrideBucketSampler([0] * 10 + [5000, 6000], BOUNDS, max_tokens=4)
        batches = list(s)
        self.assertEqual(sorted(i for b in batches for i in b), list(range(12)))
        self.assertEqual(sorted(len(b) for b in batches if b[0] < 10), [2, 4, 4])

    def test_a_sample_over_the_budget_is_a_batch_alone(self):
        s = StrideBucketSampler([9000, 9000, 10], BOUNDS, max_tokens=4096)
        self.assertEqual(sorted(map(sorted, s)), [[0], [1], [2]])


class Ranks(unittest.TestCase):
    def ranks(self, lengths, world, batch_size, **kw):
        out = []
        for r in range(world):
            s = StrideBucketSampler(lengths, BOUNDS, batch_size, rank=r, world_size=world, **kw)
            out.append((s, list(s)))
        return out

    def test_cover_without_overlap_no_lockstep_each_rank_interleaves(self):
        worst_dev, worst_run = 0.0, 0
        for seed in range(24):
            rng = random.Random(200 + seed)
            world = rng.choice([2, 3, 4, 8])
            lengths = shaped(rng, SHAPES[seed % len(SHAPES)]) if seed % 3 == 0 else skewed(rng, rng.randint(2000, 6000))
            drop = seed % 2 == 1
            got = self.ranks(lengths, world, batch_size=rng.choice([4, 8]), seed=seed, drop_last=drop)
            per_rank = [b for _, b in got]
            self.assertEqual(len({len(b) for b in per_rank}), 1, f"seed {seed}: every rank the same number")
            flat = [i for b in per_rank for bt in b for i in bt]
            whole = [i for b in StrideBucketSampler(lengths, BOUNDS, got[0][0].batch_size, seed=seed,
                                                    drop_last=drop) for i in b]
            if drop:
                self.assertEqual(len(flat), len(set(flat)), f"seed {seed}: no index twice")
                self.assertLess(len(whole) - len(flat), world * got[0][0].batch_size)
            else:
                self.assertEqual(set(flat), set(range(len(lengths))), f"seed {seed}: every index")
                self.assertLess(len(flat) - len(set(flat)), world * got[0][0].batch_size, "padding only")
            bk = got[0][0].buckets
            seqs = [[bk[b[0]] for b in bs] for bs in per_rank]
            totals = Counter(x for s in seqs for x in s)
            n = sum(totals.values())
            big = max(totals.values()) / n
            if big < 0.5:  # steps with every rank on one bucket: a quarter of random order's at most
                same = sum(1 for t in range(len(seqs[0])) if len({s[t] for s in seqs}) == 1) / len(seqs[0])
                by_chance = sum((v / n) ** world for v in totals.values())
                self.assertLessEqual(same, by_chance / 4, f"seed {seed}: lockstep")
            for s in seqs:
                worst_dev = max(worst_dev, prefix_deviation(s, totals))
                if big < 0.5:
                    worst_run = max(worst_run, longest_run(s))
        self.assertLessEqual(worst_dev, 4.0)  # each rank within about three batches of its share
        self.assertLessEqual(worst_run, 5)

    def test_accumulation_interleaves_every_micro_batch_slot(self):
        for seed in range(6):
            rng = random.Random(400 + seed)
            lengths = skewed(rng, 6000)
            world, acc = rng.choice([1, 2, 4]), rng.choice([2, 4])
            runs, steps = 0, set()
            for r in range(world):
                s = StrideBucketSampler(lengths, BOUNDS, 8, rank=r, world_size=world, accumulation=acc, seed=seed)
                mine = list(s)
                self.assertEqual(len(mine) % acc, 0)
                steps.add(len(mine) // acc)
                # micro-batch m of rank r is virtual rank r * acc + m of world * acc
                for m in range(acc):
                    v = StrideBucketSampler(lengths, BOUNDS, 8, rank=r * acc + m, world_size=world * acc, seed=seed)
                    self.assertEqual(mine[m::acc], list(v), f"seed {seed}: slot {m} of rank {r}")
                    runs = max(runs, longest_run([s.buckets[b[0]] for b in mine[m::acc]]))
            self.assertEqual(len(steps), 1, "every rank the same number of steps")
            self.assertLessEqual(runs, 5, f"seed {seed}: a slot streaks")

    def test_world_of_one_is_the_global_order(self):
        lengths = skewed(random.Random(7), 2000)
        self.assertEqual(list(StrideBucketSampler(lengths, BOUNDS, 8, world_size=1, seed=3)),
                         StrideBucketSampler(lengths, BOUNDS, 8, seed=3).epoch_batches())


class Resume(unittest.TestCase):
    def test_resume_mid_epoch_continues_exactly(self):
        for seed in range(8):
            rng = random.Random(300 + seed)
            lengths = skewed(rng, 3000)
            kw = dict(seed=seed, rank=seed % 2, world_size=2) if seed % 2 else dict(seed=seed, max_tokens=30000)
            bs = None if "max_tokens" in kw else 8
            a = StrideBucketSampler(lengths, BOUNDS, bs, **kw)
            a.set_epoch(2)
            whole = list(a)
            it = iter(a)
            cut = rng.randint(1, len(whole) - 1)
            head = [next(it) for _ in range(cut)]
            state = json.loads(json.dumps(a.state_dict()))  # saved in a checkpoint as JSON
            b = StrideBucketSampler(lengths, BOUNDS, bs, **kw)
            b.load_state_dict(state)
            self.assertEqual(head + list(b), whole, f"seed {seed}: cut at {cut}")
            b.set_epoch(3)  # the next epoch starts from its beginning
            self.assertEqual(len(list(b)), len(b))

    def test_a_new_epoch_after_a_resume_is_whole(self):
        # issue 49's mutant: set_epoch keeping the resume offset skipped the
        # batches yielded before the checkpoint in the next epoch too
        lengths = skewed(random.Random(5), 2000)
        a = StrideBucketSampler(lengths, BOUNDS, 8, seed=1)
        it = iter(a)
        for _ in range(10):
            next(it)
        b = StrideBucketSampler(lengths, BOUNDS, 8, seed=1)
        b.load_state_dict(a.state_dict())
        b.set_epoch(1)  # the saved epoch is skipped: the next starts whole
        self.assertEqual(len(list(b)), len(b))

    def test_state_of_another_sampler_is_refused(self):
        lengths = skewed(random.Random(1), 500)
        a = StrideBucketSampler(lengths, BOUNDS, 8)
        with self.assertRaises(ValueError):  # another accumulation (issue 49's mutant)
            StrideBucketSampler(lengths, BOUNDS, 8, accumulation=2).load_state_dict(a.state_dict())
        with self.assertRaises(ValueError):
            StrideBucketSampler(lengths, BOUNDS, 16).load_state_dict(a.state_dict())
        with self.assertRaises(ValueError):
            StrideBucketSampler(lengths[:-1], BOUNDS, 8).load_state_dict(a.state_dict())


class SameAsC(unittest.TestCase):
    """simulate --strategy stride's C gives the Python's batches."""

    def test_c_gives_the_same_batches(self):
        tool = os.environ.get("STRIDE_ORDER")
        self.assertTrue(tool and os.path.exists(tool), "STRIDE_ORDER must name tests/tools/stride_order (ctest sets it)")
        configs = [dict(batch_size=16), dict(max_tokens=16384), dict(batch_size=1, seed=2 ** 40 + 3),
                   dict(batch_size=7, drop_last=True, world_size=3, rank=2),
                   dict(max_tokens=20000, drop_last=True, world_size=4, rank=1, seed=9),
                   dict(batch_size=5, world_size=8, rank=7, seed=4294967296)]
        with tempfile.TemporaryDirectory() as tmp:
            for n, (shape_seed, cfg) in enumerate([(s, c) for s in range(3) for c in configs]):
                rng = random.Random(shape_seed)
                lengths = shaped(rng, SHAPES[shape_seed + 1]) if shape_seed else skewed(rng, 5000)
                if not shape_seed:  # empty samples cost a token each, in both
                    lengths[::97] = [0] * len(lengths[::97])
                path = os.path.join(tmp, f"l{shape_seed}.txt")
                with open(path, "w") as f:
                    f.write("\n".join(map(str, lengths)))
                for epoch in (0, 5):
                    kw = {k: v for k, v in cfg.items() if k != "batch_size"}
                    s = StrideBucketSampler(lengths, BOUNDS, cfg.get("batch_size"), **kw)
                    s.set_epoch(epoch)
                    want = [" ".join(map(str, b)) for b in s]
                    args = [tool, path, ",".join(map(str, BOUNDS)), "--epoch", str(epoch)]
                    for k, v in cfg.items():
                        args += ["--drop-last"] if k == "drop_last" else ["--" + k.replace("_", "-"), str(v)]
                    got = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
                    self.assertEqual(len(got), len(want), f"{cfg} epoch {epoch}")
                    diff = [i for i, (x, y) in enumerate(zip(got, want)) if x != y]
                    self.assertEqual(diff, [], f"{cfg} epoch {epoch}: batches differ from {diff[:1]}")


if __name__ == "__main__":
    unittest.main()
