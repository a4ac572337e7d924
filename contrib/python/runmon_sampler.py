"""runmon_sampler - length-bucketed batches, buckets interleaved by stride.

The fix runmon names for homogeneous batching, shipped: every batch holds
one length bucket (so padding stays what bucketing gives), and the buckets
take turns in proportion to their size, so that in every stretch of an
epoch each bucket stays within about one batch of its share. Standard
library only; usable as a PyTorch `batch_sampler`:

    from runmon_sampler import StrideBucketSampler
    sampler = StrideBucketSampler(lengths, [0, 770, 1216, 1728, 2432, 3296, 8192],
                                  batch_size=16, seed=0, rank=rank, world_size=world)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=pad_collate)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader: ...

The specification (runmon's `simulate --strategy stride` implements the same
one in C, src/sim/stride.c, and a test checks that both give the same
batches for the same lengths, seed and epoch):

1. Sample i goes to bucket b when B[b] < lengths[i] <= B[b+1] for the
   boundaries B[0..k]; a length up to B[1] goes to bucket 0 and one above
   B[k-1] to bucket k-1 (as `runmon import --buckets`).
2. The order within buckets: one `random.Random((seed << 32) | epoch)`
   shuffles each bucket's indices, ascending before, bucket 0 first
   (`random.shuffle`: MT19937 and Fisher-Yates), so the order differs by
   epoch and reproduces for the same seed.
3. Batches within each bucket, in that order: `batch_size` indices each;
   or, with `max_tokens`, as many as fit when a batch costs
   count x its longest length (a sample over the budget is a batch alone;
   an empty sample counts as one token).
   `drop_last` drops a bucket's last batch when it is not full (fewer than
   batch_size indices, or room for one more of its longest length).
4. Interleaving, in proportion: with n_b batches in bucket b and N in
   all, batch t (from 0) comes from the bucket furthest behind its share
   after it, (t + 1) n_b - N k_b largest, k_b its batches so far; ties go
   to the lower bucket. This is stride scheduling (each bucket advances by
   a stride of N / n_b) ranked by lag rather than by pass: with passes,
   buckets of one batch all fall due at the same moment and run together,
   putting a large bucket five batches behind. After any t batches,
   bucket b has had t n_b / N of them within 1.5 (the most measured over
   thousands of shapes; below 1 when no bucket is tiny).
5. Ranks: the global order is cut into steps of world_size batches (the
   last step filled with the order's first batches, as PyTorch's
   DistributedSampler pads; dropped with drop_last). Within step s, each
   batch in turn goes to the rank, of those without one yet, that has had
   the fewest batches of its bucket; ties to the first counting from
   s mod world_size. So every step holds the buckets in proportion across
   ranks (no lockstep), each rank's own sequence interleaves (within about
   three batches of its share in every prefix), and the ranks share the
   epoch without overlap.
6. Gradient accumulation: with `accumulation` A, each rank's micro-batch
   m of a step is a rank of its own, rank x A + m of world_size x A, and
   a rank yields its A micro-batches step by step. Each micro-batch slot
   then interleaves across steps as a rank does (a sampler blind to A
   would give slot 0 the even batches of an alternating order: a streak
   in every slot, which runmon reads per slot).
"""

import bisect
import random

__all__ = ["StrideBucketSampler", "bucket_of"]


def bucket_of(length, boundaries):
    """The bucket of one length: B[b] < length <= B[b+1], clamped."""
    return bisect.bisect_left(boundaries, length, 1, len(boundaries) - 1) - 1


def _batches(indices, lengths, batch_size, max_tokens, drop_last):
    if max_tokens is None:
        out = [indices[i:i + batch_size] for i in range(0, len(indices), batch_size)]
        if drop_last and out and len(out[-1]) < batch_size:
            out.pop()
        return out
    # A batch from position a is the longest run a..a+c-1 whose count x
    # longest fits the budget (a single sample always does), as adding
    # samples one by one while they fit gives: c x longest only grows with
    # c. Every batch holds at least budget // the bucket's longest, so the
    # loop starts there and adds the few more one by one.
    # a sample takes a slot of at least one token: a bucket of empty
    # samples makes batches of max_tokens samples, never one endless batch
    lens = [max(1, lengths[i]) for i in indices]
    n = len(lens)
    if not n:
        return []
    least = max(1, max_tokens // max(lens))
    out, a = [], 0
    while a < n:
        c = min(least, n - a)
        top = max(lens[a:a + c])
        while a + c < n:
            nxt = lens[a + c]
            if nxt > top:
                if (c + 1) * nxt > max_tokens:
                    break
                top = nxt
            elif (c + 1) * top > max_tokens:
                break
            c += 1
        out.append(indices[a:a + c])
        a += c
    if drop_last and (len(out[-1]) + 1) * top <= max_tokens:
        out.pop()
    return out


def _interleave(per_bucket):
    """The buckets' batches in proportion: the bucket most behind next."""
    counts = [len(b) for b in per_bucket]
    live = [b for b, n in enumerate(counts) if n]
    taken = [0] * len(per_bucket)
    order, buckets = [], []
    total = sum(counts)
    for t in range(1, total + 1):
        best, lag = -1, 0
        for b in live:
            if taken[b] == counts[b]:
                continue
            behind = t * counts[b] - total * taken[b]
            if best < 0 or behind > lag:
                best, lag = b, behind
        order.append(per_bucket[best][taken[best]])
        buckets.append(best)
        taken[best] += 1
    return order, buckets, counts


def _shard(order, buckets, counts, world_size, drop_last):
    """Each rank's batches: steps of world_size, dealt to the rank furthest
    behind on each batch's bucket."""
    total = len(order)
    if world_size == 1:
        return [order]
    steps = total // world_size if drop_last else -(-total // world_size)
    need = steps * world_size
    idx = list(range(need)) if need <= total else list(range(total)) + [i % total for i in range(need - total)]
    k = len(counts)
    got = [[0] * k for _ in range(world_size)]
    ranks = [[] for _ in range(world_size)]
    for s in range(steps):
        free = [(s + i) % world_size for i in range(world_size)]
        for j in idx[s * world_size:(s + 1) * world_size]:
            b = buckets[j]
            pos = min(range(len(free)), key=lambda p: got[free[p]][b])  # the first of the fewest
            best = free[pos]
            del free[pos]
            got[best][b] += 1
            ranks[best].append(order[j])
    return ranks


class StrideBucketSampler:
    """Yields lists of indices, one batch each, buckets interleaved by
    stride (see the module's specification). `lengths`: each sample's
    length in tokens; `boundaries`: the buckets' boundaries, ascending;
    `batch_size` samples per batch, or `max_tokens` (padded tokens per
    batch) instead."""

    def __init__(self, lengths, boundaries, batch_size=None, *, max_tokens=None, seed=0, rank=0,
                 world_size=1, drop_last=False, accumulation=1):
        if (batch_size is None) == (max_tokens is None):
            raise ValueError("give batch_size or max_tokens, not both or neither")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive integer, not {max_tokens!r}")
        bounds = [int(b) for b in boundaries]
        if len(bounds) < 2 or any(a >= b for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"boundaries must be at least two, strictly ascending: {boundaries!r}")
        if not isinstance(world_size, int) or world_size < 1 or not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank!r} of world_size {world_size!r}: need 0 <= rank < world_size")
        if not isinstance(accumulation, int) or accumulation < 1:
            raise ValueError(f"accumulation must be a positive integer, not {accumulation!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        self.lengths = [int(n) for n in lengths]
        if any(n < 0 for n in self.lengths):
            raise ValueError("lengths must not be negative")
        self.boundaries = bounds
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self.seed, self.rank, self.world_size, self.drop_last = seed, rank, world_size, drop_last
        self.accumulation = accumulation
        interior = bounds[1:-1]
        self.buckets = [bisect.bisect_left(interior, n) for n in self.lengths]
        self._members = [[] for _ in range(len(bounds) - 1)]
        for i, b in enumerate(self.buckets):
            self._members[b].append(i)
        self.epoch = 0
        self._resume = 0  # batches of this epoch already yielded, from load_state_dict
        self._yielded = 0
        self._cache = None

    def set_epoch(self, epoch):
        """The epoch to iterate next: its order differs from every other's."""
        if not isinstance(epoch, int) or not 0 <= epoch < 2 ** 32:
            raise ValueError(f"epoch must be an integer in [0, 2^32), not {epoch!r}")
        if epoch != self.epoch:
            self._resume = 0
        self.epoch = epoch

    def epoch_batches(self, epoch=None, rank=None):
        """This rank's batches of an epoch, as lists of indices."""
        epoch = self.epoch if epoch is None else epoch
        rank = self.rank if rank is None else rank
        key = (epoch, rank)
        if self._cache and self._cache[0] == key:
            return self._cache[1]
        rng = random.Random((self.seed << 32) | epoch)
        per = []
        for members in self._members:
            members = members[:]
            rng.shuffle(members)
            per.append(_batches(members, self.lengths, self.batch_size, self.max_tokens, self.drop_last))
        order, buckets, counts = _interleave(per)
        acc = self.accumulation
        slots = _shard(order, buckets, counts, self.world_size * acc, self.drop_last)[rank * acc:(rank + 1) * acc]
        mine = [s[j] for j in range(len(slots[0])) for s in slots]  # step by step, micro-batch by micro-batch
        self._cache = (key, mine)
        return mine

    def __iter__(self):
        batches = self.epoch_batches()
        start, self._resume = self._resume, 0
        self._yielded = start
        for b in batches[start:]:
            self._yielded += 1
            yield list(b)
        self._yielded = 0

    def __len__(self):
        return len(self.epoch_batches())

    def _fingerprint(self):
        return [len(self.lengths), self.boundaries, self.batch_size, self.max_tokens, self.world_size,
                self.drop_last, self.accumulation]

    def state_dict(self):
        """Where this rank is: the epoch and the batches it has yielded."""
        return {"seed": self.seed, "epoch": self.epoch, "rank": self.rank, "yielded": self._yielded,
                "config": self._fingerprint()}

    def load_state_dict(self, state):
        """Resume: the next iteration continues the saved epoch's order
        after the batches already yielded."""
        if state.get("config") != self._fingerprint() or state.get("seed") != self.seed:
            raise ValueError("state_dict is of a sampler with other lengths, boundaries, batch size, seed or world size")
        self.epoch = int(state["epoch"])
        self._resume = int(state["yielded"])
        self._yielded = self._resume
