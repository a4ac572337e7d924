"""A strict reader of the Prometheus text exposition format 0.0.4, written
from the format's documentation (prometheus.io/docs/instrumenting/
exposition_formats), for the metrics test: it rejects what a lenient
scraper would let through (a family split in two, a sample before its
# TYPE, an escape the format does not define, a histogram whose buckets do
not add up) and returns {(name, labels): value} to compare.

usage: exposition.py FILE   (exit 1 with the line at fault)
"""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Bad(Exception):
    pass


def value(text, where):
    special = {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
    if text in special:
        return special[text]
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise Bad("%s: value %r is not a Go float" % (where, text))
    return float(text)


def labels(text, where):
    """The {...} part after the opening brace: returns (dict, rest)."""
    out, i = {}, 0
    while True:
        if text[i] == "}":
            return out, text[i + 1:]
        m = re.match(r"([^=]*)=\"", text[i:])
        if not m or not LABEL.match(m.group(1)):
            raise Bad("%s: bad label name at %r" % (where, text[i:i + 20]))
        name, i, val = m.group(1), i + m.end(), []
        while text[i] != '"':
            if text[i] == "\n":
                raise Bad("%s: raw newline in a label value" % where)
            if text[i] == "\\":
                esc = {"\\": "\\", '"': '"', "n": "\n"}.get(text[i + 1])
                if esc is None:
                    raise Bad("%s: undefined escape \\%s" % (where, text[i + 1]))
                val.append(esc)
                i += 2
            else:
                val.append(text[i])
                i += 1
        if name in out:
            raise Bad("%s: label %s twice" % (where, name))
        out[name] = "".join(val)
        i += 1
        if text[i] == ",":
            i += 1


def base_name(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def parse(text):
    if not text.endswith("\n"):
        raise Bad("the exposition does not end with a newline")
    types, helps, done, samples = {}, {}, set(), {}
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d" % n
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not NAME.match(parts[2]):
                raise Bad("%s: malformed %s" % (where, parts[1]))
            fam = parts[2]
            table = helps if parts[1] == "HELP" else types
            if fam in table:
                raise Bad("%s: second %s for %s" % (where, parts[1], fam))
            if fam in done or fam in samples_of(samples, types):
                raise Bad("%s: %s for %s after its samples" % (where, parts[1], fam))
            if parts[1] == "TYPE" and parts[3] not in TYPES:
                raise Bad("%s: unknown type %s" % (where, parts[3]))
            if parts[1] == "HELP" and re.search(r"\\[^\\n]", parts[3]):
                raise Bad("%s: undefined escape in HELP" % where)
            table[fam] = parts[3]
            if current and current != fam:
                done.add(current)
            current = fam
            continue
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{?)", line)
        if not m:
            raise Bad("%s: not a sample: %r" % (where, line))
        name = m.group(1)
        lab, rest = labels(line[m.end():], where) if m.group(2) else ({}, line[m.end():])
        fam = base_name(name, types)
        if fam not in types:
            raise Bad("%s: sample of %s before its # TYPE" % (where, fam))
        if fam in done:
            raise Bad("%s: %s's samples are not together" % (where, fam))
        if current != fam:
            if current:
                done.add(current)
            current = fam
        if types[fam] == "counter" and not name.endswith("_total"):
            raise Bad("%s: counter %s without _total" % (where, name))
        fields = rest.split(" ")
        if fields[0] != "" or len(fields) not in (2, 3):
            raise Bad("%s: expected ' VALUE [TIMESTAMP]' after the labels: %r" % (where, rest))
        key = (name, tuple(sorted(lab.items())))
        if key in samples:
            raise Bad("%s: %s%s twice" % (where, name, lab))
        samples[key] = value(fields[1], where)
        if types[fam] == "counter" and not samples[key] >= 0:
            raise Bad("%s: counter %s is %r" % (where, name, samples[key]))
    histograms(types, samples)
    return samples


def samples_of(samples, types):
    return {base_name(k[0], types) for k in samples}


def histograms(types, samples):
    for fam, t in types.items():
        if t != "histogram":
            continue
        buckets = sorted((value(dict(k[1])["le"], fam), v) for k, v in samples.items() if k[0] == fam + "_bucket")
        if not buckets or buckets[-1][0] != math.inf:
            raise Bad("%s: no +Inf bucket" % fam)
        if any(b[1] < a[1] for a, b in zip(buckets, buckets[1:])):
            raise Bad("%s: buckets not cumulative" % fam)
        count = samples.get((fam + "_count", ()))
        if count != buckets[-1][1] or (fam + "_sum", ()) not in samples:
            raise Bad("%s: _count %r is not the +Inf bucket %r, or no _sum" % (fam, count, buckets[-1][1]))


def get(samples, name, **lab):
    """The value of the one series of name with these labels (among others)."""
    found = [v for (n, ls), v in samples.items() if n == name and all(dict(ls).get(k) == x for k, x in lab.items())]
    if len(found) != 1:
        raise KeyError("%s%s: %d series" % (name, lab, len(found)))
    return found[0]


if __name__ == "__main__":
    try:
        s = parse(open(sys.argv[1], encoding="utf-8").read())
    except (Bad, UnicodeDecodeError) as e:
        sys.exit("exposition: %s" % e)
    print("%d samples" % len(s))
