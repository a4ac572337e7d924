#!/usr/bin/env python3
"""options.py - the option contract: what the command reference and --help
name, the parser accepts, and what the parser accepts, both document.

usage: options.py RUNMON SRC_DIR DOC...   (docs/commands.md docs/watching.md)

For each command: the options of its table as the binary reports them
(`runmon help --json`, the table the parser, --help, the man pages and the
completion are made from), the options its --help lists, the options its
section's table lists (generated from the same table: tests/tools/doctables.py
checks that) and any other `--option` its section names. Every documented
option must be in the table; every option of the table must be in --help and
in its section's table. Then each option is given to the
real binary with a valid value, followed by --help: options are read in
order, so exit 0 with the usage text proves the parser took the option and
its value. Every option is refused when written as a prefix of itself (with
the whole name suggested); a mistyped command and run name get the nearest;
every --help has examples, each of which the parser takes, and the exit
statuses.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

runmon, src = sys.argv[1:3]
doc_paths = sys.argv[3:]

# A valid value for each option that takes one. A new option must be added
# here, or the test fails and says so.
VALUES = {
    "run": "r1", "format": "auto", "loss-key": "loss", "step-key": "step", "batch-prefix": "batch/",
    "buckets": "0,770,1216", "since": "10", "fail-on": "critical", "checkpoint-every": "500", "loss-is": "step",
    "steps-per-epoch": "1000", "ladder-interval": "10", "seed": "7", "output": "-",
    "jobs": "2", "max-jobs": "8", "page-size": "500", "retry-max": "3", "retry-wait": "2s", "state": "running",
    "every": "2s", "batches": "r1=b.jsonl", "diagnose-every": "30m", "window": "5000",
    "max-per-hour": "10", "wandb-dir": ".", "webhook": "http://127.0.0.1:9/hook",
    "slack-webhook": "http://127.0.0.1:9/slack", "slack-webhook-file": "slack.url", "min-severity": "warn",
    "strategy": "chunked", "max-cost": "5", "max-loss": "1.5",
    "steps": "1000", "log-every": "1", "spikes": "bucket", "save-every": "500", "out": "x",
    "k": "4", "max-len": "8192", "tokens-per-batch": "16384", "column": "seq_len",
    "length-key": "seq_len", "count-key": "n_seqs", "pattern": "step:{step} loss:{loss}",
    "list-column": "input_ids", "split": "train", "lengths-from": "lengths.txt", "lengths-column": "seq_len",
    "metrics": "127.0.0.1:9464", "metrics-path": "/metrics", "ranks": "4", "rank-mode": "independent", "micro": "2",
    "fail-on-new": "warn", "since-report": "20h", "baseline": "last.json",
    "from": "a.db", "to": "b.db", "at": "1000",
    "reset-steps": "15", "reset-height": "2.5", "reset-bucket": "5", "lr-restarts": "500", "diverge": "nan",
    "diverge-at": "900", "reset-every": "50",
}
# Values that differ by command (report --since is a duration, sync --since a time).
PER_COMMAND = {("report", "since"): "24h", ("sync", "since"): "2026-01-01", ("import", "format"): "auto",
               ("report", "format"): "md",
               ("export", "format"): "jsonl"}
GLOBAL = {"db", "help", "quiet"}

readme = "\n".join(open(p).read() for p in doc_paths)
sections = dict(re.findall(r"^## `runmon (\w+)[^\n]*\n(.*?)(?=^#{1,2} )", readme + "\n## end", re.M | re.S))
failures = []


def run(args):
    return subprocess.run([runmon] + args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


TABLES = {c["name"]: c for c in json.loads(run(["help", "--json"]).stdout)}


def declared(cmd):
    return {o["name"]: ("no" if o.get("arg") is None else "required") for o in TABLES.get(cmd, {}).get("options", [])}


commands = sorted(re.findall(r"^  ([a-z]+) {2,}", run(["--help"]).stdout, re.M))
if len(commands) < 9:
    failures.append(f"runmon --help lists {len(commands)} commands")
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "t.db")
    checked = 0
    for cmd in commands:
        opts = declared(cmd)
        if not opts:
            failures.append(f"{cmd}: no option table in 'runmon help --json'")
            continue
        help_text = run([cmd, "--help"]).stdout
        if "\nExamples:\n" not in help_text or "\nExit status: " not in help_text:
            failures.append(f"{cmd} --help has no examples or no exit status")
        if help_text != run(["help", cmd]).stdout:
            failures.append(f"'runmon help {cmd}' is not '{cmd} --help'")
        if any(len(line) > 80 for line in help_text.split("\n")):
            failures.append(f"{cmd} --help has lines over 80 columns")
        for ex in TABLES[cmd]["examples"]:  # each example is taken by the parser
            words = shlex.split(ex.split("  #")[0])
            if words[0] != "runmon" or cmd not in words:
                failures.append(f"{cmd}: example '{ex}' is not a runmon {cmd} command")
                continue
            r = run(["--db", db] + words[1:] + ["--help"])
            if r.returncode != 0:
                failures.append(f"{cmd}: example '{ex}' is refused: {r.stderr.strip()[:200]}")
        for o in opts:  # whole names only: a prefix is refused (one per option: valgrind runs this too)
            short = o[:-1]
            if len(short) < 2 or short in opts:
                continue
            r = run(["--db", db, cmd, f"--{short}", "x", "--help"])
            if r.returncode != 2 or "unknown option --%s" % short not in r.stderr:
                failures.append(f"{cmd} --{short} was taken (exit {r.returncode}) as a prefix of --{o}")
            checked += 1
        in_help = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", help_text))
        body = sections.get(cmd)
        if body is None:
            failures.append(f"{cmd}: no section '## `runmon {cmd} ...`' in {' '.join(doc_paths)}")
            body = ""
        head = re.search(rf"^## `runmon {cmd}([^`]*)`", readme, re.M)
        table = set()
        for cell in re.findall(r"^\| ([^|]*`-[^|]*)\|", body, re.M):
            table |= set(re.findall(r"--([a-z][a-z0-9-]*)", cell))
        table |= set(re.findall(r"--([a-z][a-z0-9-]*)", head.group(1) if head else ""))
        named = set(re.findall(r"`--([a-z][a-z0-9-]*)", body))
        for o in sorted((in_help | table | named) - set(opts) - GLOBAL):
            failures.append(f"{cmd}: --{o} is documented but the parser does not declare it")
        for o in sorted(set(opts) - GLOBAL):
            if o not in in_help:
                failures.append(f"{cmd}: --{o} is accepted but missing from '{cmd} --help'")
            if o not in table:
                failures.append(f"{cmd}: --{o} is accepted but missing from the {cmd} section's table")
        for o, kind in sorted(opts.items()):
            if o == "help":
                continue
            args = [cmd, f"--{o}"]
            if kind == "required":
                if o == "db":
                    v = db
                else:
                    v = PER_COMMAND.get((cmd, o), VALUES.get(o))
                if v is None:
                    failures.append(f"{cmd}: --{o} has no sample value in tests/e2e/options.py")
                    continue
                args.append(v)
            r = run(["--db", db] + args + ["--help"])
            checked += 1
            if r.returncode != 0 or not r.stdout.startswith("usage: runmon " + cmd):
                failures.append(f"runmon {' '.join(args)} --help: exit {r.returncode}: {r.stderr.strip()[:200]}")

    # Whole numbers and steps take nothing after their digits (issue 49's
    # mutants: an integer parser accepting "10x" left every test green), and
    # --buckets no repeated boundary.
    for cmd, table in sorted(TABLES.items()):
        for o in table.get("options", []):
            if o.get("kind") not in ("count", "step", "number"):
                continue
            for v in ("10x", "-3", "", "nan") + (("1.5",) if o["kind"] != "number" else ()):
                r = run(["--db", db, cmd, f"--{o['name']}", v, "--help"])
                if r.returncode != 2 or f"--{o['name']}" not in r.stderr:
                    failures.append(f"{cmd} --{o['name']} '{v}' was not refused with a message naming it")
            checked += 1
    for cmd, rest in (("simulate", ["--steps", "200", "--run", "b"]), ("import", ["nosuchfile"]),
                      ("sync", ["a/b/c"]), ("watch", ["--once", "--offline", "x"])):
        if "buckets" not in declared(cmd):
            failures.append(f"{cmd} has no --buckets")
            continue
        r = run(["--db", db, cmd, "--buckets", "0,100,100,200"] + rest)
        if r.returncode != 2 or "--buckets wants 2 to 33 increasing lengths" not in r.stderr:
            failures.append(f"{cmd} --buckets with a repeated boundary: exit {r.returncode}: {r.stderr.strip()[:120]}")
        checked += 1

    # --since: one meaning everywhere, told apart by form.
    for cmd, good, bad in [("diagnose", ["12000", "24h", "0.5d", "2026-12-01", "2026-12-01T06:00:00Z"], ["", "24x", "-1", "h", "1 h", "1.5"]),
                           ("report", ["24h", "30m", "2026-12-01", "2026-12-01T06:00:00Z"], ["12000", "", "h", "2026-13-01"]),
                           ("sync", ["7d", "2026-12-01", "2026-12-01T06:00:00Z"], ["12000", "", "1x"])]:
        if "since" not in declared(cmd) or "WHEN" not in json.dumps(TABLES[cmd]["options"]):
            failures.append(f"{cmd} --since is not a WHEN")
        for v in good:
            r = run(["--db", db, cmd, "--since", v, "--help"])
            if r.returncode != 0:
                failures.append(f"{cmd} --since {v}: exit {r.returncode}: {r.stderr.strip()[:120]}")
        for v in bad:
            r = run(["--db", db, cmd, "--since", v, "--help"])
            if r.returncode != 2 or f"'{v}'" not in r.stderr:
                failures.append(f"{cmd} --since '{v}' was not refused with a message naming it")
        checked += 1

    # Typos: the nearest command, option and run, each in one line.
    r = run(["diagnos", "x"])
    if r.returncode != 2 or r.stderr.strip() != "runmon: error: unknown command 'diagnos'; did you mean 'diagnose'?":
        failures.append(f"mistyped command: {r.stderr.strip()!r}")
    r = run(["--db", db, "diagnose", "x", "--jsn"])
    if r.returncode != 2 or r.stderr.strip() != "runmon: error: unknown option --jsn for diagnose; did you mean --json?":
        failures.append(f"mistyped option: {r.stderr.strip()!r}")
    r = run(["--db", db, "--json", "runs"])
    if r.returncode != 2 or "'--json' before the command: a command's options go after it" not in r.stderr:
        failures.append(f"a command's option before it: {r.stderr.strip()!r}")
    r = run(["--db", db, "report", "--all", "--fail", "critical"])
    if r.returncode != 2 or "unknown option --fail for report" not in r.stderr or r.stderr.count("\n") != 1:
        failures.append(f"report --fail: {r.stderr.strip()!r}")
    run(["--db", db, "simulate", "--steps", "300", "--run", "demo-homogeneous"])
    r = run(["--db", db, "diagnose", "demo-homogenous"])
    if r.returncode != 2 or "did you mean 'demo-homogeneous'?" not in r.stderr:
        failures.append(f"mistyped run: {r.stderr.strip()!r}")
    r = run(["--db", db, "diagnose", "--json=yes", "demo-homogeneous"])
    if r.returncode != 2 or "--json takes no value" not in r.stderr:
        failures.append(f"a flag with a value: {r.stderr.strip()!r}")
    r = run(["--db", db, "diagnose", "demo-homogeneous", "--since"])
    if r.returncode != 2 or "--since needs a value" not in r.stderr:
        failures.append(f"an option without its value: {r.stderr.strip()!r}")
    # Options after positionals, "--" before a name that looks like one.
    r = run(["--db", db, "diagnose", "demo-homogeneous", "--json"])
    if r.returncode not in (0, 1) or not r.stdout.startswith("{"):
        failures.append(f"an option after the run: exit {r.returncode}")
    r = run(["--db", db, "diagnose", "--", "--json"])
    if r.returncode != 2 or "no run '--json'" not in r.stderr:
        failures.append(f"'--' then a name: {r.stderr.strip()!r}")

    # Durations: one parser for every option that takes a time.
    for cmd, opt in [("report", "since-report"), ("watch", "every"), ("watch", "diagnose-every"),
                     ("watch", "retry-wait"), ("sync", "retry-wait")]:
        for v in ["500ms", "2s", "5m", "1h", "1d", "2", "0.5"]:
            if opt == "retry-wait" and v in ("5m", "1h", "1d"):
                continue  # beyond the 60 s cap
            r = run(["--db", db, cmd, f"--{opt}", v, "--help"])
            if r.returncode != 0:
                failures.append(f"{cmd} --{opt} {v}: exit {r.returncode}: {r.stderr.strip()[:120]}")
        for v in ["", "2x", "-1s", "s", "1 h", "nan", "1e999"]:
            r = run(["--db", db, cmd, f"--{opt}", v, "--help"])
            if r.returncode != 2 or v not in r.stderr:
                failures.append(f"{cmd} --{opt} '{v}' was not refused with a message naming it")
        checked += 1

for f in failures:
    print("FAIL:", f)
print(f"options: {len(commands)} commands, {checked} options given to the parser")
sys.exit(1 if failures else 0)
