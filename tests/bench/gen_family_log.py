#!/usr/bin/env python3
"""Writes a synthetic console log of one trainer family, and the same
records as JSON lines, for the log-import benchmark: a log must import at
no less than 0.8x the speed of its records as JSONL.

  icefall     a line per rank (2 ranks), "(r/2) Epoch E, batch B, loss[...]",
              the batch counter starting over each epoch
  opennmt     "Step N/M; acc: ..; ppl: ..; xent: ..; lr: ..; S/T tok/s;  E sec"
  olmo        "[step=N/M,epoch=E]" then five indented name=value lines
  megatron    " iteration N/ M | consumed samples: .. | ... | lm loss: .. |"
  plainloop   "epoch E, step S, training loss = X" (S starting over each epoch)
  windowmean  torchvision's "Epoch: [E]  [ B/N]  ...  loss: X (M)  time: ..."
  gan         "[Epoch E/N][Batch B/M] [D loss: X] [G loss: Y]"
  letters     "E=1 B=50 ppl=37.2", B counting within E (no name says so)
  block       "=== iteration N ===" then three "name: value" lines
  labels      two ranks' "R: step N loss X" glued on one line (srun --label)
  yolo        a tqdm bar's \r frames over a table row per batch, an epoch a line

usage: gen_family_log.py FAMILY LINES LOG JSONL
"""
import math
import random
import sys


def main():
    family, n, log_path, jsonl_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rnd = random.Random(11)
    per_epoch = 20000
    lines = 0
    step = 0
    with open(log_path, "w") as log, open(jsonl_path, "w") as js:
        log.write("2025-01-10 14:01:02,311 INFO starting training\n")
        while lines < n:
            step += 1
            loss = 1.0 + 2.0 * math.exp(-step / 50000.0) + rnd.gauss(0, 0.05)
            epoch, inner = (step - 1) // per_epoch + 1, (step - 1) % per_epoch + 1
            if family == "icefall":
                for r in range(2):
                    frames, dur, utt = rnd.randint(17000, 21000), rnd.randint(300, 1800), rnd.randint(40, 220)
                    grp = ("loss=%.4g, simple_loss=%.4g, pruned_loss=%.4g, ctc_loss=%.4g, over %d.00 frames."
                           " utt_duration=%d frames, utt_pad_proportion=0.01722, over %d.00 utterances."
                           % (loss, 2 * loss, loss / 2, 5.1, frames, dur, utt))
                    log.write("2023-09-12 18:12:16,581 INFO [train.py:888] (%d/2) Epoch %d, batch %d, loss[%s],"
                              " tot_loss[%s], batch size: %d, lr: 2.00e-02, grad_scale: 2.0\n"
                              % (r, epoch, inner, grp, grp, utt))
                    js.write('{"step": %d, "batch/rank": %d, "loss": %.4g, "batch/tokens": %d, "batch/mean_len": %d, "batch/n": %d,'
                             ' "lr": 0.02}\n' % (step, r, loss, frames, dur, utt))
                    lines += 1
            elif family == "opennmt":
                log.write("[2019-11-06 00:26:44,923 INFO] Step %d/100000000; acc:  %5.2f; ppl: %7.2f; xent: %.2f;"
                          " lr: 0.00100; %d/%d tok/s; %6d sec\n"
                          % (step, 40 + rnd.random(), math.exp(loss), loss, 298, 315, step * 2))
                js.write('{"step": %d, "loss": %.2f, "batch/tokens": 630, "lr": 0.001}\n' % (step, loss))
                lines += 1
            elif family == "olmo":
                log.write("2025-12-11 00:27:01.586\thost-02:0\tolmo.train:979\tINFO\t[step=%d/100000000,epoch=%d]\n"
                          "    optim/total_grad_norm=%.2f\n    train/CrossEntropyLoss=%.4f\n"
                          "    train/Perplexity=%s\n    throughput/total_tokens=%s\n"
                          % (step, epoch - 1, rnd.random() * 10, loss, "{:,}".format(int(math.exp(loss) * 100)),
                             "{:,}".format(step * 8388608)))
                js.write('{"step": %d, "loss": %.4f, "batch/tokens": 8388608, "grad_norm": 1.5}\n' % (step, loss))
                lines += 5
            elif family == "megatron":
                log.write(" iteration %8d/ 100000000 | consumed samples: %12d | consumed tokens: %12d |"
                          " elapsed time per iteration (ms): 1231.0 | learning rate: 4.000E-07 | global batch size:"
                          "    16 | lm loss: %.6E | loss scale: 1.0 | grad norm: 20.203 | num zeros: 0.0 |"
                          " actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
                          % (step, step * 16, step * 32768, loss))
                js.write('{"step": %d, "loss": %.6g, "batch/tokens": 32768, "batch/n": 16, "batch/mean_len": 2048, "lr": 4e-07}\n'
                         % (step, loss))
                lines += 1
            elif family == "plainloop":
                log.write("2024-01-01 10:00:00 INFO epoch %d, step %d, training loss = %.4f\n" % (epoch, inner, loss))
                js.write('{"step": %d, "loss": %.4f, "epoch": %d}\n' % (step, loss, epoch))
                lines += 1
            elif family == "windowmean":
                log.write("Epoch: [%d]  [%5d/%d]  eta: 0:10:00  lr: 0.000100  loss: %.4f (%.4f)  time: 0.5012"
                          "  data: 0.0101  max mem: 4512\n" % (epoch - 1, inner, per_epoch, loss, loss + 0.1))
                js.write('{"step": %d, "loss": %.4f, "epoch": %d}\n' % (step, loss, epoch - 1))
                lines += 1
            elif family == "gan":
                log.write("[Epoch %d/100][Batch %d/%d] [D loss: %.4f] [G loss: %.4f]\n"
                          % (epoch, inner, per_epoch, loss, 2 * loss))
                # the same records: G's loss is kept too (other_losses)
                js.write('{"step": %d, "loss": %.4f, "g_loss": %.4f, "epoch": %d}\n' % (step, loss, 2 * loss, epoch))
                lines += 1
            elif family == "letters":
                log.write("E=%d B=%d ppl=%.3f lr=0.5\n" % (epoch, inner, math.exp(loss)))
                js.write('{"step": %d, "loss": %.3f, "epoch": %d}\n' % (step, math.exp(loss), epoch))
                lines += 1
            elif family == "block":
                log.write("=== iteration %d ===\ntrain/loss: %.4f\ntrain/lr: 0.001\ntokens: 4096\n" % (step, loss))
                js.write('{"step": %d, "loss": %.4f, "batch/tokens": 4096, "lr": 0.001}\n' % (step, loss))
                lines += 4
            elif family == "labels":
                log.write("0: step %d loss %.4f 1: step %d loss %.4f\n" % (step, loss, step, loss + 0.01))
                for r in range(2):
                    js.write('{"step": %d, "batch/rank": %d, "loss": %.4f}\n' % (step, r, loss + 0.01 * r))
                lines += 1
            elif family == "yolo":
                ep, c = (step - 1) // 200, (step - 1) % 200 + 1  # 200 batches an epoch, an epoch a line
                if c == 1:
                    log.write("\n     Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n")
                # a value is drawn once per batch here (tqdm also redraws the same
                # values, which the reader drops): no two batches draw the same
                loss += step * 1e-7
                log.write("\r     %d/99     1.2G   %.5f   0.03000         0    %.6f        16       640: %3d%%|#  | %d/200"
                          " [00:01<00:02,  1.2it/s]" % (ep, loss / 3, loss, c // 2, c))
                if c == 200:
                    log.write("\n")
                js.write('{"step": %d, "loss": %.6f, "epoch": %d}\n' % (step, loss, ep))
                lines += 1
            else:
                sys.exit("unknown family " + family)


main()
