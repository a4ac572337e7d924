"""Targets of tests/bench/run: check() compares a figure with its target and
keeps it (in $BENCH_SUMMARY) for the table that ends the run; running this
file prints that table.

usage (inside the run): from targets import check
                        check("import vs Python loop", 3.5, ">=", 3, "x")
       at the end:      python3 targets.py SUMMARY.tsv
"""
import os
import sys


def check(name, value, op, target, unit=""):
    ok = value <= target if op == "<=" else value >= target
    path = os.environ.get("BENCH_SUMMARY")
    if path:
        with open(path, "a") as f:
            f.write("\t".join((name, repr(float(value)), op, repr(float(target)), unit, "ok" if ok else "MISSED")) + "\n")
    return "ok" if ok else "MISSED"


def table(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path)]
    fmt = "| {:<46} | {:>10} | {:>10} | {:>6} | {:<6} |"
    print(fmt.format("figure", "measured", "target", "ratio", ""))
    print(fmt.format("-" * 46, "-" * 10, "-" * 10, "-" * 6, "-" * 6))
    for name, value, op, target, unit, status in rows:
        v, t = float(value), float(target)
        # ratio > 1 means better than the target, whichever way it points
        ratio = (t / v if v else float("inf")) if op == "<=" else v / t
        print(fmt.format(name, "%.3g %s" % (v, unit), "%s %.3g %s" % (op, t, unit), "%.2f" % ratio, status))
    missed = sum(r[5] != "ok" for r in rows)
    print("\n%d of %d targets met" % (len(rows) - missed, len(rows)))


if __name__ == "__main__":
    table(sys.argv[1])
