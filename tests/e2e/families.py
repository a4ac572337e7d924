#!/usr/bin/env python3
"""End-to-end: trainer families' console logs (issue 63.4), each a small
fixture of the project's own written from the family's logging code, read
by the real binary with no flag, and checked point by point against the
points the fixture's author wrote down by hand.

tests/data/logs/families/NAME.log (or .json, .txt) is the log (tests/data/logs/shapes/
holds the shapes that broke the reader, issue 63, in the same form); NAME.expect says where it
comes from and what a reader must find:

    # family: fairseq
    # source: facebookresearch/fairseq fairseq/logging/progress_bar.py
    # loss: log          (optional: the value stored is log(the printed
    #                     perplexity); the points below are already logs)
    100 4.123
    200 3.9
    # run 2             (the points of the file's next run, NAME-2)
    ? 2.5               (? : the log carries no global step; order only)

tests/data/logs/families/KNOWN_GAPS lists, one a line ("SLUG: why"),
the fixtures the reader does not yet read right: each is run and its
failure printed as a gap; a gap that passes fails the test until it is
taken off the list, so the list only shrinks.

Every training-loss point, in order, and nothing else: an eval,
validation or test value, a running epoch summary printed beside the
per-step points, or a config value is no point. Losses compare to 1e-6
relative (1e-4 for a logged perplexity's log).
Usage: families.py RUNMON DATA_DIR
"""
import math
import os
import sqlite3
import subprocess
import sys
import tempfile


def parse_expect(path):
    meta, runs = {}, [[]]
    for n, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if body.startswith("run "):
                runs.append([])
            elif ":" in body:
                k, v = body.split(":", 1)
                meta[k.strip()] = v.strip()
            continue
        step, loss = line.split()[:2]
        runs[-1].append((None if step == "?" else int(step), float(loss), n))
    return meta, [r for r in runs if r]


def check(runmon, log, expect, tmp):
    name = os.path.splitext(os.path.basename(log))[0]
    meta, runs = parse_expect(expect)
    for k in ("family", "source"):
        if k not in meta:
            return [f"{expect}: no '# {k}:' line"]
    db = os.path.join(tmp, name + ".db")
    p = subprocess.run([runmon, "--db", db, "--quiet", "import", "--run", name, log],
                       capture_output=True, text=True)
    if p.returncode:
        return [f"{name} ({meta['family']}): import exit {p.returncode}: {p.stderr.strip()}"]
    con = sqlite3.connect(db)
    errs = []
    tol = 1e-4 if meta.get("loss") == "log" else 1e-6
    stored = {r[0] for r in con.execute("SELECT name FROM runs")}
    want_names = [name] + [f"{name}-{i}" for i in range(2, len(runs) + 1)]
    if stored != set(want_names):
        errs.append(f"{name} ({meta['family']}): runs {sorted(stored)}, want {want_names}")
    for rname, want in zip(want_names, runs):
        got = con.execute("SELECT s.step, s.loss FROM steps s JOIN runs r ON r.id = s.run_id "
                          "WHERE r.name = ? ORDER BY s.step", (rname,)).fetchall()
        if len(got) != len(want):
            errs.append(f"{rname} ({meta['family']}): {len(got)} points, want {len(want)}: "
                        f"got {got[:6]}..., want {[(s, l) for s, l, _ in want[:6]]}...")
            continue
        for (gs, gl), (ws, wl, at) in zip(got, want):
            bad_step = ws is not None and gs != ws
            bad_loss = gl is None or not math.isclose(gl, wl, rel_tol=tol, abs_tol=1e-9)
            if bad_step or bad_loss:
                errs.append(f"{rname} ({meta['family']}): {expect}:{at}: got step {gs} loss {gl}, "
                            f"want step {ws if ws is not None else '?'} loss {wl}")
                break
    con.close()
    return errs


def main():
    runmon, data = sys.argv[1], sys.argv[2]
    dirs = [os.path.join(data, "logs", d) for d in ("families", "shapes")]
    logs = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d)
                  if not f.endswith(".expect") and f != "KNOWN_GAPS")
    only = sys.argv[3:]
    gaps = {}
    gap_file = os.path.join(dirs[0], "KNOWN_GAPS")
    for raw in open(gap_file, encoding="utf-8") if os.path.exists(gap_file) else []:
        if raw.strip() and not raw.startswith("#"):
            slug, why = raw.split(":", 1)
            gaps[slug.strip()] = why.strip()
    errs, families, gapped, passed = [], set(), [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in logs:
            slug = os.path.splitext(os.path.basename(f))[0]
            if only and slug not in only:
                continue
            log = f
            expect = os.path.join(os.path.dirname(f), slug + ".expect")
            if not os.path.exists(expect):
                errs.append(f"{f}: no {os.path.basename(expect)}")
                continue
            families.add(parse_expect(expect)[0].get("family"))
            got = check(runmon, log, expect, tmp)
            if slug in gaps and got:
                gapped.append(f"{slug} ({gaps[slug]}): {got[0]}")
            elif slug in gaps:
                errs.append(f"{slug}: reads right now: take it off {gap_file}")
            elif got:
                errs += got
            else:
                passed += 1
    for g in gapped:
        print("known gap:", g, file=sys.stderr)
    for e in errs:
        print("FAIL:", e, file=sys.stderr)
    print(f"families: {len(families)}, exact: {passed}, known gaps: {len(gapped)}")
    print(f"{passed + len(gapped)} passed, {len(errs)} failed")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
