#!/bin/sh
# End-to-end: runmon report in HTML (structure, escaping), Markdown and JSON
# (golden files), exit status and --since. Usage: report.sh RUNMON DATA [--update]
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"
db=$tmp/r.db
export SOURCE_DATE_EPOCH=1764403200
"$runmon" --db "$db" simulate --strategy chunked --steps 3000 --seed 2 --spikes bucket --run homog >/dev/null
"$runmon" --db "$db" simulate --strategy interleaved --steps 3000 --seed 2 --run inter >/dev/null

# Golden files: the Markdown and the JSON of the same two runs.
"$runmon" --db "$db" report homog inter --format md -o "$tmp/r.md" || [ $? = 1 ] || fail "md exit"
"$runmon" --db "$db" report homog inter -o "$tmp/r.json" || [ $? = 1 ] || fail "json exit"
if [ "${3:-}" = --update ]; then
	cp "$tmp/r.md" "$data/golden/report.md"
	cp "$tmp/r.json" "$data/golden/report.json"
fi
diff -u "$data/golden/report.md" "$tmp/r.md" || fail "Markdown differs from tests/data/golden/report.md"
diff -u "$data/golden/report.json" "$tmp/r.json" >/dev/null || fail "JSON differs from tests/data/golden/report.json"
[ ! -e "$tmp/r.md.tmp" ] || fail "temporary file left behind"

# A hostile run name and key: escaped everywhere.
printf '{"step": 1, "l\\"o&ss<b>": 2.0}\n{"step": 2, "l\\"o&ss<b>": 1.5}\n' >"$tmp/x.jsonl"
"$runmon" --db "$db" import --run '<script>alert(1)</script>' --loss-key 'l"o&ss<b>' "$tmp/x.jsonl" >/dev/null
set +e
"$runmon" --db "$db" report --all -o "$tmp/r.html"
rc=$?
set -e
[ $rc = 1 ] || fail "the critical run should make the report exit 1 (got $rc)"
python3 - "$tmp/r.html" <<'PY' || fail "HTML structure"
import sys
from html.parser import HTMLParser
text = open(sys.argv[1]).read()
assert "<script" not in text.lower(), "a raw <script> tag"
assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections, self.svgs, self.rows, self.links = 0, {}, 0, []
        self.cur = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections += 1
            self.cur = a["id"]
            self.svgs[self.cur] = []
        if tag == "svg":
            self.svgs[self.cur if self.cur else "top"] = self.svgs.get(self.cur, []) + [a.get("class")]
        if tag == "tr":
            self.rows += 1
        if tag == "a":
            self.links.append(a.get("href"))
p = P()
p.feed(text)
assert p.sections == 3, p.sections
for run in ("run-0", "run-1"):  # the simulated runs have all three charts
    assert sorted(p.svgs[run]) == ["chart buckets", "chart loss", "chart strip"], p.svgs[run]
assert p.svgs["run-2"] == ["chart loss"], p.svgs["run-2"]  # no batch composition: the loss only
assert all(h.startswith("#run-") for h in p.links)
PY
grep -q '\\<script\\>alert(1)\\</script\\>' "$tmp/r.md" 2>/dev/null || "$runmon" --db "$db" report --all --format md \
	| grep -q '\\<script\\>alert(1)\\</script\\>' || fail "Markdown escaping"

# Healthy runs only: exit 0. --since selects recently updated runs.
"$runmon" --db "$db" report inter -o "$tmp/h.html" || fail "healthy report exit"
n=$(SOURCE_DATE_EPOCH= "$runmon" --db "$db" report --all --since 1h --format json --fail-on critical | python3 -c "import json,sys; print(len(json.load(sys.stdin)['runs']))") \
	|| n=x
[ "$n" = 3 ] || fail "--since 1h: $n runs"
set +e
SOURCE_DATE_EPOCH=4102444800 "$runmon" --db "$db" report --all --since 1h --format json >"$tmp/none.json"
set -e
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['runs'] == []" "$tmp/none.json" || fail "--since in the future"
echo "e2e report: all checks passed"
