"""A real training for runmon to read: PyTorch on CPU, two data-parallel ranks.

A small byte-level language model (an embedding, causal convolutions, a head)
learns to continue Python's own standard-library sources, the paragraphs of
the .py files that every Python installation ships (no download, no
weights). Samples are bucketed by length (bytes) at BOUNDARIES, and the same
data is trained three ways:

  sorted   one bucket at a time, shortest first, each bucket shuffled: the
           homogeneous batching runmon looks for
  stride   the fix: runmon_sampler.StrideBucketSampler interleaves the
           buckets in proportion, one bucket per batch
  random   batches drawn from every length (padding costs most)

Each rank records its batches with runmon_record.BatchRecorder (lengths
only, no bucket ids: runmon derives the boundaries from them), and rank 0
writes the loss, averaged over the ranks, as W&B history rows. Ranks talk
over torch.distributed's gloo backend, through a file in the output
directory (no network port).

Rank 0 also logs the same losses the ways common trainers do, every
--log-every steps (the join runmon must get right, issue 64):

  hf.log        the Hugging Face Trainer's console: a banner, tqdm frames
                and a dict of the interval's mean loss, no step in it
                (the step is the frame before it, 1-based)
  nanogpt.log   nanoGPT's "iter N: loss X": one step's loss, 0-based
  metrics.csv   Lightning's CSVLogger: train_loss_step of the step whose
                index is logged (every k-th, 0-based)
  megatron.log  Megatron's "iteration N/ M | ... lm loss: X |": the mean
                of the interval, 1-based
  print.log     a hand-written loop's print(f"step {step + 1}/{steps} |
                loss ..."): one step's loss, 1-based over the 0-based
                recorder

    python3 examples/torch/train.py OUTDIR [--steps 1000] [--log-every 5] [--orders sorted,stride,random]

then OUTDIR/ORDER/history.jsonl and OUTDIR/ORDER/batches-rank*.jsonl are
one run each: runmon import --run torch-ORDER OUTDIR/ORDER/*.jsonl

With --per-sample, each rank also writes OUTDIR/ORDER/samples-rankR.csv:
every sample's own loss (the mean cross-entropy over its bytes) and length
at every step, the material of the truth matrix's second generator
(tests/tools/replay.c re-batches these real samples in any order).
"""

import argparse
import bisect
import glob
import json
import os
import random
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "contrib", "python"))
from runmon_record import BatchRecorder  # noqa: E402
from runmon_sampler import StrideBucketSampler  # noqa: E402

BOUNDARIES = [0, 40, 96, 160, 256]
WORLD = 2
BATCH = 16
PAD = 128  # bytes as 7-bit characters, 0..127 (the sources are ASCII)


def corpus(max_docs, seed=0):
    """Paragraphs (blank-line separated) of the standard library's .py
    files, as bytes, at most BOUNDARIES[-1] long, shuffled."""
    stdlib = os.path.dirname(os.__file__)
    docs = []
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py"))):
        with open(path, "rb") as f:
            for para in f.read().split(b"\n\n"):
                para = para.strip()
                if len(para) >= 8:
                    docs.append(para[: BOUNDARIES[-1]])
    if len(docs) < 1000:
        raise SystemExit(f"only {len(docs)} paragraphs under {stdlib}: not enough text to train on")
    random.Random(seed).shuffle(docs)
    return docs[:max_docs]


def sorted_batches(lengths, rank, epoch):
    """Homogeneous batching at its plainest: every batch of the shortest
    bucket, then of the next; each bucket shuffled; batches dealt to the
    ranks in turn (so both ranks sit in one bucket at a time)."""
    rng = random.Random(epoch)
    interior = BOUNDARIES[1:-1]
    members = [[] for _ in BOUNDARIES[1:]]
    for i, n in enumerate(lengths):
        members[bisect.bisect_left(interior, n)].append(i)
    batches = []
    for m in members:
        rng.shuffle(m)
        batches += [m[i : i + BATCH] for i in range(0, len(m) - BATCH + 1, BATCH)]
    return batches[rank::WORLD]


def random_batches(lengths, rank, epoch):
    order = list(range(len(lengths)))
    random.Random(1000 + epoch).shuffle(order)
    batches = [order[i : i + BATCH] for i in range(0, len(order) - BATCH + 1, BATCH)]
    return batches[rank::WORLD]


def batches_of(order, lengths, rank):
    """This rank's batches, epoch after epoch."""
    sampler = StrideBucketSampler(lengths, BOUNDARIES, BATCH, seed=0, rank=rank, world_size=WORLD, drop_last=True)
    epoch = 0
    while True:
        if order == "stride":
            sampler.set_epoch(epoch)
            yield from sampler
        elif order == "sorted":
            yield from sorted_batches(lengths, rank, epoch)
        else:
            yield from random_batches(lengths, rank, epoch)
        epoch += 1


class ByteLM(nn.Module):
    """Causal dilated convolutions over bytes (a few thousand steps a minute
    on one CPU core, where a recurrent net of the same size takes ten times
    as long): each position sees the 30 bytes before it."""

    def __init__(self, dim=16, channels=32, kernel=3, dilations=(1, 2, 4, 8)):
        super().__init__()
        self.emb = nn.Embedding(PAD + 1, dim, padding_idx=PAD)
        self.convs = nn.ModuleList()
        self.pads = []
        width = dim
        for d in dilations:
            self.convs.append(nn.Conv1d(width, channels, kernel, dilation=d))
            self.pads.append((kernel - 1) * d)
            width = channels
        self.head = nn.Linear(channels, PAD)

    def forward(self, x):
        h = self.emb(x).transpose(1, 2)
        for conv, pad in zip(self.convs, self.pads):
            h = torch.relu(conv(nn.functional.pad(h, (pad, 0))))
        return self.head(h.transpose(1, 2))


def collate(docs):
    """Inputs and next-byte targets, padded to the batch's longest."""
    width = max(len(d) for d in docs)
    x = torch.full((len(docs), width), PAD, dtype=torch.long)
    for i, d in enumerate(docs):
        x[i, : len(d)] = torch.tensor([min(b, PAD - 1) for b in d], dtype=torch.long)
    return x[:, :-1], x[:, 1:]


class TrainerLogs:
    """One step's loss (the mean over the ranks) written as W&B history rows
    and as five trainers' logs of it, each every k steps in that trainer's
    own convention (the module docstring lists them)."""

    def __init__(self, out, steps, k, per_epoch):
        self.steps, self.k, self.window, self.per_epoch = steps, k, [], per_epoch
        self.history = open(os.path.join(out, "history.jsonl"), "w")
        self.hf = open(os.path.join(out, "hf.log"), "w")
        self.nanogpt = open(os.path.join(out, "nanogpt.log"), "w")
        self.csv = open(os.path.join(out, "metrics.csv"), "w")
        self.megatron = open(os.path.join(out, "megatron.log"), "w")
        self.print = open(os.path.join(out, "print.log"), "w")
        # transformers/trainer.py's banner, the total with a thousands comma
        self.hf.write("***** Running training *****\n"
                      f"  Num examples = {per_epoch * BATCH * WORLD:,.0f}\n  Num Epochs = {steps / per_epoch:.0f}\n"
                      f"  Instantaneous batch size per device = {BATCH}\n"
                      f"  Gradient Accumulation steps = 1\n  Total optimization steps = {steps:,}\n")
        self.csv.write("epoch,step,train_loss_step\n")

    def bar(self, done):
        filled = done * 10 // self.steps
        return (f"\r{done * 100 // self.steps:3d}%|{'#' * filled}{' ' * (10 - filled)}| {done}/{self.steps} "
                f"[00:{done // 60:02d}<00:10, 9.85it/s]")

    def step(self, step, loss):
        self.history.write(json.dumps({"_step": step, "train/loss": loss, "train/lr": 3e-3}) + "\n")
        self.window.append(loss)
        done = step + 1  # the Trainer's global_step, counted after the update
        self.hf.write(self.bar(done))
        if step % self.k == 0:  # nanoGPT: iter_num % log_interval, before the increment
            self.nanogpt.write(f"iter {step}: loss {loss:.4f}, time 41.20ms, mfu -100.00%\n")
        if done % self.k == 0:
            mean = sum(self.window) / len(self.window)
            self.window = []
            # tqdm.write clears the bar, prints the dict and draws the bar again
            self.hf.write("\r" + " " * 60 + "\r" + str({"loss": round(mean, 4), "grad_norm": 0.5,
                                                        "learning_rate": 3e-3, "epoch": round(done / self.per_epoch, 2)}) + "\n")
            self.hf.write(self.bar(done))
            # Lightning logs when (batch index + 1) % log_every_n_steps == 0, at the index
            self.csv.write(f"0,{step},{loss}\n")
            self.print.write(f"step {done}/{self.steps} | loss {loss:.4f} | lr 3.0e-03\n")
            self.megatron.write(f" iteration {done:8d}/{self.steps:8d} | consumed samples: {done * BATCH * WORLD:12d} |"
                                f" elapsed time per iteration (ms): 41.2 | learning rate: 3.000E-03 |"
                                f" global batch size: {BATCH * WORLD:5d} | lm loss: {mean:.6E} | loss scale: 1.0 |"
                                " grad norm: 0.500 | number of skipped iterations:   0 | number of nan iterations:   0 |\n")

    def close(self):
        self.hf.write("\n")
        for f in (self.history, self.hf, self.nanogpt, self.csv, self.megatron, self.print):
            f.close()


def train(rank, args, order, docs):
    out = os.path.join(args.outdir, order)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(out, "rendezvous"), rank=rank,
                            world_size=WORLD)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.parallel.DistributedDataParallel(ByteLM())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)  # the mean over real tokens
    lengths = [len(d) for d in docs]
    rec = BatchRecorder(os.path.join(out, "batches-rank{rank}.jsonl"), rank=rank)
    styles = TrainerLogs(out, args.steps, args.log_every, len(docs) / (BATCH * WORLD)) if rank == 0 else None
    batches = batches_of(order, lengths, rank)
    samples = open(os.path.join(out, f"samples-rank{rank}.csv"), "w") if args.per_sample else None
    if samples:
        samples.write("step,len,loss\n")
    for step in range(args.steps):
        idx = next(batches)
        rec.record(step, lens=[lengths[i] for i in idx])
        x, y = collate([docs[i] for i in idx])
        if samples:  # the same mean over real tokens, kept per sample too
            tok = nn.functional.cross_entropy(model(x).reshape(-1, PAD), y.reshape(-1), ignore_index=PAD,
                                              reduction="none").reshape(y.shape)
            real = (y != PAD).sum(1)
            loss = tok.sum() / real.sum()
            own = (tok.sum(1) / real.clamp(min=1)).tolist()
            samples.write("".join(f"{step},{lengths[i]},{v:.5g}\n" for i, v in zip(idx, own)))
        else:
            loss = loss_fn(model(x).reshape(-1, PAD), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if styles:
            styles.step(step, mean.item() / WORLD)
    if styles:
        styles.close()
    if samples:
        samples.close()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=1000, help="optimizer steps per order (default 1000)")
    ap.add_argument("--docs", type=int, default=6000, help="paragraphs of text to train on (default 6000)")
    ap.add_argument("--orders", default="sorted,stride,random")
    ap.add_argument("--log-every", type=int, default=5, help="the console logs' interval (default 5)")
    ap.add_argument("--per-sample", action="store_true", help="also write each sample's loss and length a step")
    args = ap.parse_args()
    docs = corpus(args.docs)
    for order in args.orders.split(","):
        out = os.path.join(args.outdir, order)
        os.makedirs(out, exist_ok=True)
        for name in os.listdir(out):  # a fresh run: the recorder appends
            os.remove(os.path.join(out, name))
        mp.spawn(train, args=(args, order, docs), nprocs=WORLD, join=True)
        print(f"{order}: {args.steps} steps on {WORLD} ranks -> {out}", flush=True)


if __name__ == "__main__":
    main()
