#!/usr/bin/env python3
"""doctables.py - the option tables of docs/commands.md and docs/watching.md,
generated from the binary's own tables (`runmon help --json`, the table the
parser, --help, the man pages and the completion are made from).

usage: doctables.py RUNMON DOC... [--update]

Each block between `<!-- options: CMD -->` and `<!-- end options -->` is
replaced by CMD's table: every option but --db, --help and --quiet (the same for all
commands, under Conventions). Without --update, exit 1 and name each block
that differs from what the binary gives; with it, rewrite the files.
"""
import json
import re
import subprocess
import sys

BLOCK = re.compile(r"(<!-- options: (\w+) -->\n)(.*?)(<!-- end options -->)", re.S)


def cell(text):
    return text.replace("|", "\\|")


def table(cmd):
    rows = ["| option | meaning | default |", "|---|---|---|"]
    for o in cmd["options"]:
        if o["name"] in ("db", "help", "quiet"):
            continue
        name = f"`--{o['name']}" + (f" {o['arg']}`" if o.get("arg") else "`")
        if o.get("short"):
            name = f"`-{o['short']}`, " + name
        help_text = o["help"]
        choices = (o.get("choices") or "").split()
        if sum(c in help_text for c in choices) < 2 and choices:  # the help names them, or the table does
            help_text += ": " + ", ".join(f"`{c}`" for c in choices)
        default = o.get("default") or ""
        if default and " " not in default:  # a value, not a description of one
            default = f"`{default}`"
        rows.append(f"| {cell(name)} | {cell(help_text)} | {cell(default)} |")
    return "\n".join(rows) + "\n"


def main(argv):
    update = "--update" in argv
    args = [a for a in argv if a != "--update"]
    runmon, docs = args[0], args[1:]
    out = subprocess.run([runmon, "help", "--json"], capture_output=True, text=True, check=True).stdout
    tables = {c["name"]: c for c in json.loads(out)}
    stale, missing, seen = [], [], set()
    for path in docs:
        text = open(path).read()

        def fill(m):
            name = m.group(2)
            seen.add(name)
            if name not in tables:
                missing.append(f"{path}: no command '{name}'")
                return m.group(0)
            want = table(tables[name])
            if m.group(3) != want:
                stale.append(f"{path}: the options of '{name}' differ from 'runmon help --json'")
            return m.group(1) + want + m.group(4)

        new = BLOCK.sub(fill, text)
        if update and new != text:
            open(path, "w").write(new)
    for name in sorted(set(tables) - seen):
        missing.append(f"no option table for '{name}' in {' '.join(docs)}")
    for s in missing + ([] if update else stale):
        print("FAIL:", s)
    if stale and not update:
        print("(tests/tools/doctables.py RUNMON DOC... --update rewrites them)")
    return 1 if missing or (stale and not update) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
