#!/usr/bin/env python3
"""Writes a plain training loop's console log over several epochs, the step
counting from 1 each epoch ("epoch 2, step 30, training loss = 4.33"):
each batch has a difficulty of its own (two much harder ones), the data in
the same order every epoch (fixed) or shuffled anew (shuffled). For the
fixed-data-order tests.

usage: epoch_log.py fixed|shuffled SEED OUT [EPOCHS STEPS LOG_EVERY]
"""
import math
import random
import sys

fixed = sys.argv[1] == "fixed"
rng = random.Random(int(sys.argv[2]))
epochs, steps, every = (int(a) for a in (sys.argv[4:7] if len(sys.argv) > 4 else (4, 2000, 10)))
hard = [rng.gauss(0, 0.08) for _ in range(steps)]
for b in (759, 1299):  # the batches logged at in-epoch steps 760 and 1300
    if b < steps:
        hard[b] += 1.2
order = list(range(steps))
t = 0
with open(sys.argv[3], "w") as f:
    f.write("2024-01-01 09:59:00 INFO starting training\n")
    for e in range(1, epochs + 1):
        if not fixed:
            rng.shuffle(order)
        for s in range(1, steps + 1):
            t += 1
            if s % every:
                continue
            loss = 2 + 3 * math.exp(-t / 3000) + hard[order[s - 1]] + rng.gauss(0, 0.03)
            f.write(f"2024-01-01 10:00:00 INFO epoch {e}, step {s}, training loss = {loss:.4f}\n")
