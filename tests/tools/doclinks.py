#!/usr/bin/env python3
"""doclinks.py - every relative link of the README, CONTRIBUTING.md and
docs/*.md leads somewhere: the file exists and, with #anchor, the file has
a heading of that anchor (GitHub's rule: lower case, punctuation but - and _
dropped, spaces to -). usage: doclinks.py SRC_DIR
"""
import glob
import os
import re
import sys

src = sys.argv[1]
files = [os.path.join(src, f) for f in ("README.md", "CONTRIBUTING.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))


def anchors(path):
    text = re.sub(r"```.*?```", "", open(path).read(), flags=re.S)
    out = set()
    for h in re.findall(r"^#{1,6} +(.*)$", text, re.M):
        out.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
    return out


bad = []
for f in files:
    text = re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(dest):
            bad.append(f"{os.path.relpath(f, src)}: link to {target}: no such file")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append(f"{os.path.relpath(f, src)}: link to {target}: no such heading")
for b in bad:
    print("FAIL:", b)
print(f"doclinks: {len(files)} files, {len(bad)} broken links")
sys.exit(1 if bad else 0)
