#!/usr/bin/env python3
"""Writes a synthetic fairseq console log as the hydra logger prints it with
--log-format json: a prefix, then a JSON object whose values are numeric
strings; a validation line every 1000 updates and a banner now and then,
as a long run's log has them. About 330 bytes a line.

usage: gen_fairseq_log.py LINES > train.log
"""
import math
import random
import sys


def main():
    n = int(sys.argv[1])
    rnd = random.Random(7)
    out = sys.stdout
    out.write("[2025-01-10 14:01:02,311][fairseq_cli.train][INFO] - {'_name': None, 'common': {'log_format': 'json'}}\n")
    bucket, left = 0, 0
    written = 1
    step = 0
    while written < n:
        step += 1
        if left == 0:
            bucket, left = rnd.randrange(6), rnd.randrange(20, 200)
        left -= 1
        wpb = 4096 + bucket * 2000 + rnd.randint(-200, 200)
        bsz = round(wpb / (100 + bucket * 300 + rnd.random() * 50), 1)
        loss = 1.0 + 2.0 * math.exp(-step / 50000.0) + bucket * 0.3 + rnd.gauss(0, 0.05)
        s = 14 * 3600 + step // 2
        stamp = "2025-01-10 %02d:%02d:%02d,%03d" % (s // 3600 % 24, s // 60 % 60, s % 60, step % 1000)
        out.write('[%s][train_inner][INFO] - {"epoch": %d, "update": %.3f, "loss": "%.3f", "nll_loss": "%.3f", '
                  '"ppl": "%.2f", "wps": "%.1f", "ups": "1.77", "wpb": "%d", "bsz": "%.1f", "num_updates": "%d", '
                  '"lr": "%.6g", "gnorm": "%.3f", "loss_scale": "128", "train_wall": "%d", "gb_free": "9.8", '
                  '"wall": "%d"}\n'
                  % (stamp, step // 5000 + 1, step / 5000, loss, loss * 0.98, 2 ** loss, 21000 + rnd.random() * 500,
                     wpb, bsz, step, 5e-4 * min(1.0, step / 4000), 1 + rnd.random(), step // 2, step // 2 + 5))
        written += 1
        if step % 1000 == 0 and written < n:
            out.write('[%s][valid][INFO] - {"epoch": %d, "valid_loss": "%.3f", "valid_nll_loss": "%.3f", '
                      '"valid_ppl": "%.2f", "valid_num_updates": "%d"}\n'
                      % (stamp, step // 5000 + 1, loss, loss * 0.98, 2 ** loss, step))
            written += 1
        if step % 5000 == 0 and written < n:
            out.write("[%s][fairseq.trainer][INFO] - begin training epoch %d\n" % (stamp, step // 5000 + 1))
            written += 1


main()
