#!/usr/bin/env python3
"""layercheck.py - runmon's layer check (ctest: layers).

usage: layercheck.py ROOT [OBJDIR...]

Reads the layer table in ROOT/src/LAYERS and checks every file under
ROOT/src and ROOT/include/runmon against it:
  - a layer uses another only through its public header
    (include/runmon/LAYER.h), and only one it may use;
  - a private header is included only from its own layer;
  - system headers named in `lib` lines are used only where allowed;
  - the table, and the folder include graph, have no cycle;
  - no function is longer than max-function-lines, no .c longer than
    max-file-lines.
With object directories (the build's CMakeFiles/<target>.dir), it also reads
the compiled objects with nm:
  - no circle of calls between files (a file-level call graph cycle);
  - `sym` rules (functions a layer may not call);
  - every symbol the core library exports carries the rm_ prefix.
Prints one line per violation and exits 1 when there is any.
"""
import os
import re
import subprocess
import sys


def read_table(path):
    uses, libs, syms, limits = {}, [], [], {}
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if line[0] == "lib":
            libs.append((line[1], line[2], line[3:]))
        elif line[0] == "sym":
            syms.append((line[1], line[2], line[3:]))
        elif line[0].startswith("max-"):
            limits[line[0]] = int(line[1])
        else:
            uses[line[0]] = set(line[1:])
    return uses, libs, syms, limits


def find_cycle(graph):
    """A cycle of graph (dict node -> set of nodes) as a list, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if m == n:
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def layer_of(rel):
    """The layer of a path relative to ROOT."""
    parts = rel.split("/")
    if parts[0] == "include":
        return os.path.splitext(parts[-1])[0]
    if len(parts) == 2:  # src/main.c
        return os.path.splitext(parts[1])[0]
    return parts[1]


def sources(root):
    for top in ("src", "include/runmon"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check_includes(root, uses, libs, bad):
    edges = {}
    for rel in sorted(sources(root)):
        layer = layer_of(rel)
        if layer not in uses:
            bad.append(f"{rel}: folder '{layer}' is no layer of src/LAYERS")
            continue
        allowed = uses[layer] | {layer}
        src_rel = rel[4:] if rel.startswith("src/") else None
        for n, text in enumerate(open(os.path.join(root, rel), encoding="utf-8"), 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            kind, name = m.groups()
            where = f"{rel}:{n}"
            if kind == "<":
                for lib, mode, who in libs:
                    if name != lib or not src_rel:
                        continue
                    hit = any(src_rel == w or layer == w for w in who)
                    if (mode == "only") != hit:
                        bad.append(f"{where}: <{name}> is not for {src_rel} ({mode} {' '.join(who)})")
                continue
            if name.startswith("runmon/"):
                used = os.path.splitext(name[len("runmon/"):])[0]
                if not os.path.exists(os.path.join(root, "include", name)):
                    bad.append(f"{where}: {name} does not exist")
                    continue
            elif name == "cmd/cli.h":
                used = "cmd"
            else:
                here = os.path.dirname(rel)
                cands = [os.path.normpath(os.path.join(here, name)), os.path.normpath(os.path.join("src", name))]
                found = [c for c in cands if os.path.exists(os.path.join(root, c))]
                if not found:
                    bad.append(f"{where}: private header {name} not found beside it")
                    continue
                used = layer_of(found[0])
                if used != layer:
                    bad.append(f"{where}: {name} is {used}'s private header; use include/runmon/{used}.h")
                    continue
            if used not in allowed:
                bad.append(f"{where}: layer {layer} may not use {used} (src/LAYERS)")
            if used != layer:
                edges.setdefault(layer, set()).add(used)
    return edges


FUNC_NAME = re.compile(r"\b(\w+)\s*\(")


def check_sizes(root, limits, bad):
    """Functions open with '{' alone in column 0 and close with '}' there
    (the project's clang-format style); the name is on the nearest line
    above that starts in column 0."""
    max_fn = limits.get("max-function-lines", 10**9)
    max_file = limits.get("max-file-lines", 10**9)
    for rel in sources(root):
        if not rel.endswith(".c"):
            continue
        lines = open(os.path.join(root, rel), encoding="utf-8").read().split("\n")
        if len(lines) - 1 > max_file:
            bad.append(f"{rel}: {len(lines) - 1} lines (at most {max_file})")
        start = None
        for i, text in enumerate(lines):
            if text == "{":
                start = i
            elif text == "}" and start is not None:
                if i - start - 1 > max_fn:
                    k = start - 1
                    while k > 0 and lines[k][:1] in (" ", "\t", ""):
                        k -= 1
                    m = FUNC_NAME.search(lines[k])
                    name = m.group(1) if m else "?"
                    bad.append(f"{rel}:{start + 1}: function {name} is {i - start - 1} lines (at most {max_fn})")
                start = None


def nm(objects):
    out = subprocess.run(["nm", "-A", "-P"] + objects, capture_output=True, text=True, check=True).stdout
    defined, undefined = {}, {}
    for line in out.splitlines():
        head, _, rest = line.partition(": ")
        f = rest.split()
        if len(f) < 2:
            continue
        sym, kind = f[0], f[1]
        if kind == "U":
            undefined.setdefault(head, set()).add(sym)
        elif kind in "TDBRCV" or kind in "tdbr":
            if kind.isupper():
                defined.setdefault(head, set()).add(sym)
    return defined, undefined


def source_of(obj):
    m = re.search(r"\.dir/(.*)\.o$", obj)
    return m.group(1) if m else obj


def check_objects(objdirs, syms, bad):
    objects = []
    for d in objdirs:
        for dp, _, files in os.walk(d):
            objects += [os.path.join(dp, f) for f in sorted(files) if f.endswith(".o")]
    # An object whose source is gone (a build tree older than a rename) is
    # no part of the program.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    objects = [o for o in objects if not source_of(o).startswith("src/") or
               os.path.exists(os.path.join(root, source_of(o)))]
    if not objects:
        bad.append(f"no object files under {' '.join(objdirs)}")
        return
    defined, undefined = nm(objects)
    owner = {}
    for obj, names in defined.items():
        for s in names:
            owner[s] = obj
    calls = {}
    for obj, names in undefined.items():
        for s in names:
            if s in owner and owner[s] != obj:
                calls.setdefault(source_of(obj), set()).add(source_of(owner[s]))
    while True:
        cycle = find_cycle(calls)
        if not cycle:
            break
        bad.append("circle of calls between files: " + " -> ".join(cycle))
        calls[cycle[0]].discard(cycle[1])  # report each circle once
    for layer, mode, names in syms:
        for obj, used in undefined.items():
            src = source_of(obj)
            if src.startswith(f"src/{layer}/") and mode == "never":
                for s in sorted(used & set(names)):
                    bad.append(f"{src}: calls {s}, which layer {layer} may not")
    for obj, names in defined.items():
        src = source_of(obj)
        if "runmon_core.dir" not in obj:
            continue
        for s in sorted(names):
            if s.startswith("__"):  # the compiler's own (ASan's __odr_asan.*)
                continue
            if not s.startswith(("rm_", "RM_")):
                bad.append(f"{src}: exports {s} without the rm_ prefix")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    uses, libs, syms, limits = read_table(os.path.join(root, "src", "LAYERS"))
    bad = []
    for layer, used in uses.items():
        for u in used:
            if u not in uses:
                bad.append(f"src/LAYERS: {layer} uses '{u}', which is no layer")
    cycle = find_cycle(uses)
    if cycle:
        bad.append("src/LAYERS: the table has a cycle: " + " -> ".join(cycle))
    edges = check_includes(root, uses, libs, bad)
    cycle = find_cycle(edges)
    if cycle:
        bad.append("folder include graph has a cycle: " + " -> ".join(cycle))
    check_sizes(root, limits, bad)
    if len(sys.argv) > 2:
        check_objects(sys.argv[2:], syms, bad)
    for b in bad:
        print(b)
    n = sum(1 for _ in sources(root))
    print(f"layercheck: {n} files, {len(uses)} layers, {len(bad)} problems")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
