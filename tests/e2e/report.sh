#!/bin/sh
# End-to-end: runmon report in HTML (structure, escaping), Markdown and JSON
# (golden files), exit status and --since. Usage: report.sh RUNMON DATA [--update]
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"
db=$tmp/r.db
export SOURCE_DATE_EPOCH=1764403200
"$runmon" --db "$db" simulate --strategy chunked --steps 6000 --seed 2 --spikes bucket --run homog >/dev/null
"$runmon" --db "$db" simulate --strategy interleaved --steps 3000 --seed 2 --run inter >/dev/null

# Golden files: the Markdown and the JSON of the same two runs.
"$runmon" --db "$db" report homog inter --keep --format md -o "$tmp/r.md" || [ $? = 1 ] || fail "md exit" # the JSON's baseline
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
# one script, the report's own, last in the body, and allowed by the CSP by
# its hash (a run named <script>... must not add another)
import base64, hashlib, re
assert text.lower().count("<script") == 1, "a raw <script> tag"
own = re.search(r"<script>(.*?)</script>\n</body></html>\n$", text, re.S)
assert own, "the report's script is not the body's last element"
csp = re.search(r"<meta http-equiv='Content-Security-Policy' content=\"([^\"]*)\">", text).group(1)
digest = base64.b64encode(hashlib.sha256(own.group(1).encode()).digest()).decode()
assert "script-src 'sha256-%s'" % digest in csp and "default-src 'none'" in csp, csp
style = re.search(r"<style>(.*?)</style>", text, re.S).group(1)
assert "style-src 'sha256-%s'" % base64.b64encode(hashlib.sha256(style.encode()).digest()).decode() in csp, csp
assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections, self.svgs, self.rows, self.links = 0, {}, 0, []
        self.cur, self.lines = None, {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections += 1
            self.cur = a["id"]
            self.svgs[self.cur] = []
        if tag == "svg" and (a.get("class") or "").startswith("chart"):  # not the legend's swatches
            self.svgs[self.cur if self.cur else "top"] = self.svgs.get(self.cur, []) + [a.get("class")]
        if tag == "polyline":
            self.lines.setdefault(self.cur, []).append((a.get("class"), len(a.get("points", "").split())))
        if tag == "tr":
            self.rows += 1
        if tag == "a":
            self.links.append(a.get("href"))
p = P()
p.feed(text)
assert p.sections == 4, p.sections  # three runs and the glossary (issue 66.3)
assert p.cur == "terms", p.cur
for run in ("run-0", "run-1"):  # the simulated runs have all three charts
    assert sorted(p.svgs[run]) == ["chart buckets", "chart loss", "chart strip"], p.svgs[run]
assert p.svgs["run-2"] == ["chart loss"], p.svgs["run-2"]  # no batch composition: the loss only
for run in ("run-0", "run-1"):  # lengths recorded: the length-adjusted curve beside the bucket-adjusted one
    lines = dict(p.lines[run])
    assert lines.get("adjusted", 0) > 100 and lines.get("length-adjusted", 0) == lines["adjusted"], p.lines[run]
assert "length-adjusted" not in dict(p.lines.get("run-2", [])), p.lines.get("run-2")
assert all(h.startswith(("#run-", "#term-")) for h in p.links), p.links
terms = set(re.findall(r"<tr id='(term-[a-z0-9-]+)'>", text))
assert all(h[1:] in terms for h in p.links if h.startswith("#term-")), "a link to no glossary line"

# Charts that explain themselves (issue 20): a legend naming every bucket
# colour and every mark drawn, round ticks on both axes, hover text on
# spikes, ladders and the longest runs, only significant ladders shaded,
# the Okabe-Ito palette.
import re
sections = [s for s in re.split(r"<section id='", text)[1:] if not s.startswith("terms'")]
for sec in sections:
    run = sec.split("'", 1)[0]
    loss = re.search(r"<svg class='chart loss'.*?</svg>", sec, re.S).group(0)
    for axis in ("yticks", "xticks"):
        g = re.search(r"<g class='%s'.*?</g>" % axis, loss, re.S)
        assert g and len(re.findall(r"<text", g.group(0))) >= 3, (run, axis)
    labels = [float(v) for v in re.findall(r"<text x='\d+' y='[\d.]+'>([-\d.e+]+)</text>",
                                          re.search(r"<g class='yticks'.*?</g>", loss, re.S).group(0))]
    if "(log scale)" in loss:  # 1, 2 and 5 times powers of ten
        import math
        assert len(labels) >= 3 and all(
            min(abs(v / 10 ** math.floor(math.log10(v)) - m) for m in (1, 2, 5)) < 1e-9 for v in labels
        ), (run, labels)
    else:  # equal steps of 1, 2 or 5 times a power of ten, the values multiples of it
        steps = {round(b - a, 12) for a, b in zip(labels, labels[1:])}
        assert len(steps) == 1, (run, labels)
        st = steps.pop()
        assert float("%.1g" % st) == st and ("%.1e" % st)[0] in "125", (run, st)
        assert all(abs(v / st - round(v / st)) < 1e-6 for v in labels), (run, labels)
    legends = re.findall(r"<div class='legend'>(.*?)</div>", sec, re.S)
    assert legends, run
    keys = re.findall(r"<(?:span|button)[^>]* class='key'[^>]*>.*?</svg> (.*?)</(?:span|button)>", legends[0], re.S)
    assert any("bucket-adjusted loss" in k for k in keys), (run, keys)
    buckets = len(re.findall(r"bucket \w+", " ".join(k for k in keys if k.startswith("bucket "))))
    boxes = len(re.findall(r"<rect x='[\d.]+' y='[\d.]+' width='[\d.]+' height='[\d.]+' fill='#", sec))
    if "chart buckets" in sec:
        assert buckets == len(re.findall(r">bucket [^<]*</text>", sec)), (run, keys)
    spikes = re.findall(r"<path class='spike mark'[^>]*>(.*?)</path>", loss, re.S)
    assert all(re.match(r"<title>loss reset at step \d+: loss [\d.e+-]+, baseline [\d.e+-]+, bucket", t)
               for t in spikes), spikes[:2]
    assert bool(spikes) == any(k.startswith("loss reset") for k in keys), run
    # every reset ticked, the marked ones said to be the largest of all
    tick = re.search(r"<path class='resets'[^>]*><title>(\d+) loss resets?, each ticked in its column", loss)
    said = re.search(r"<td><a href='#term-reset'[^>]*>loss resets</a></td><td>(\d+) spikes?", sec)
    assert bool(tick) == bool(spikes) and (not tick or (said and tick.group(1) == said.group(1))), (run, said)
    if tick and int(tick.group(1)) > len(spikes):
        assert any(k.startswith("loss reset: the %d largest of %s marked" % (len(spikes), tick.group(1)))
                   for k in keys), (run, keys)
    ladders = re.findall(r"<rect class='ladder'[^>]*><title>ladder, steps \d+ to \d+", loss)
    assert bool(ladders) == any(k.startswith("significant ladder") for k in keys), run
    for t in re.findall(r"<rect class='run'[^>]*><title>([^<]*)</title>", sec):
        assert re.match(r"same-bucket streak: bucket \w+, steps \d+ to \d+, \d+ batches in a row", t), t
    colours = set(re.findall(r"<path class='band'[^>]*stroke='(#\w+)'", loss))
    assert colours, run
    assert colours <= {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
                       "#7F7F7F", "#999"}, colours
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

# Output safety (issue 19): a symlink planted where a fixed temporary name
# would be is never followed; a FIFO or device target is written in place
# and stays what it was; "-" is stdout; concurrent reports all succeed.
mkdir "$tmp/out"
echo precious >"$tmp/victim"
for name in r.html.tmp .r.html.tmp r.html~; do ln -s "$tmp/victim" "$tmp/out/$name"; done
"$runmon" --db "$db" report inter -o "$tmp/out/r.html" || fail "report beside planted symlinks"
[ "$(cat "$tmp/victim")" = precious ] || fail "a planted symlink was followed"
grep -q "<html" "$tmp/out/r.html" || fail "report not written"
[ "$(find "$tmp/out" -type f | wc -l)" = 1 ] || fail "temporary files left: $(ls -a "$tmp/out")"
mkfifo "$tmp/out/pipe.html"
timeout 300 cat "$tmp/out/pipe.html" >"$tmp/fromfifo" &
timeout 300 "$runmon" --db "$db" report inter -o "$tmp/out/pipe.html" || fail "report into a FIFO"
wait $!
[ -p "$tmp/out/pipe.html" ] || fail "the FIFO was replaced by a file"
grep -q "<html" "$tmp/fromfifo" || fail "nothing came through the FIFO"
"$runmon" --db "$db" report inter -o /dev/null || fail "-o /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
"$runmon" --db "$db" report inter --format md -o - | grep -q "^# " || fail "-o - writes to stdout"
[ ! -e ./- ] || fail "-o - created a file named -"
cpids=""
for i in 1 2 3 4; do
	"$runmon" --db "$db" report inter -o "$tmp/out/same.json" &
	cpids="$cpids $!"
done
for p in $cpids; do wait "$p" || fail "a concurrent report failed"; done
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/out/same.json" || fail "concurrent reports: bad file"
[ "$(find "$tmp/out" -type f | wc -l)" = 2 ] || fail "concurrent reports left files: $(ls -a "$tmp/out")"
# A name whose format cannot be told is refused, not written as HTML.
set +e
"$runmon" --db "$db" report inter -o "$tmp/out/x.txt" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "cannot tell the format from" "$tmp/err" || fail "-o x.txt: exit $rc"
[ ! -e "$tmp/out/x.txt" ] || fail "-o x.txt wrote a file"
"$runmon" --db "$db" report inter --format md -o "$tmp/out/x.txt" || fail "-o x.txt --format md"
# What was written and why the exit is 1, on stderr; no run is its own
# error; HTML meant for a terminal goes to a file named for the run.
set +e
"$runmon" --db "$db" report homog -o "$tmp/one.html" 2>"$tmp/err"; rc=$?
set -e
[ $rc = 1 ] || fail "report of a critical run: exit $rc"
grep -q "^report: wrote $tmp/one.html (html, 1 run; worst: critical)" "$tmp/err" || fail "no 'wrote' line: $(cat "$tmp/err")"
grep -q "^report: exit 1: 1 run at warn or worse (--fail-on warn)" "$tmp/err" || fail "exit 1 unexplained: $(cat "$tmp/err")"
"$runmon" --db "$db" report inter -o "$tmp/two.html" 2>"$tmp/err" || fail "healthy report: exit $?"
if grep -q "exit 1" "$tmp/err"; then fail "exit 1 told on a healthy report"; fi
set +e
"$runmon" --db "$db" report -o "$tmp/x.html" 2>"$tmp/err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "no run given: name runs, or --all" "$tmp/err" || fail "no run: exit $rc, $(cat "$tmp/err")"
(cd "$tmp" && script -qec "'$runmon' --db '$db' report inter" /dev/null >"$tmp/tty.out" 2>&1) || fail "report on a terminal: $(cat "$tmp/tty.out")"
[ -s "$tmp/runmon-report-inter.html" ] || fail "no runmon-report-inter.html: $(cat "$tmp/tty.out")"
grep -q "report: wrote runmon-report-inter.html" "$tmp/tty.out" || fail "terminal: $(cat "$tmp/tty.out")"
if grep -q "<html" "$tmp/tty.out"; then fail "HTML written to the terminal"; fi
# A run name holding '|' stays in its Markdown table cell (issue 49's
# mutant: an escape without '|' left every test green).
"$runmon" --db "$tmp/pipe.db" simulate --steps 500 --run 'a|b' >/dev/null
"$runmon" --db "$tmp/pipe.db" report --all --format md -o "$tmp/pipe.md" >/dev/null 2>&1 || true
python3 - "$tmp/pipe.md" <<'PY' || fail "a '|' in a run name broke the Markdown table: $(grep 'a.b' "$tmp/pipe.md" | head -3)"
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| a")]
assert rows, "no row of the run"
cells = re.split(r"(?<!\\)\|", rows[0].strip())[1:-1]
assert len(cells) == 6 and cells[0].strip() == "a\\|b", cells
PY
# A run with batches and no loss yet (a sidecar imported first) is not
# judged: its row says so, with no last step and no curve (issue 66).
python3 -c "import json; print('\n'.join(json.dumps({'step': s, 'bucket': s % 3}) for s in range(300)))" >"$tmp/side.jsonl"
"$runmon" --db "$tmp/noloss.db" import --run noloss "$tmp/side.jsonl" >/dev/null || fail "import a sidecar alone"
"$runmon" --db "$tmp/noloss.db" report --all --format md -o "$tmp/noloss.md" >/dev/null || fail "report of a run without loss: exit $?"
grep -q "^| noloss | batches, no loss logged | ok | new | - | - |$" "$tmp/noloss.md" \
	|| fail "a run without loss: $(grep '^| noloss' "$tmp/noloss.md")"
echo "e2e report: all checks passed"
# --jobs (issue 68.2): runs diagnosed at once, each worker on its own
# connection, and the same file as one after another, byte for byte.
"$runmon" --db "$db" simulate --strategy sorted --steps 3000 --seed 3 --run third >/dev/null
"$runmon" --db "$db" simulate --strategy mixed --steps 3000 --seed 4 --run fourth >/dev/null
for j in 1 3; do
	for f in html json; do
		"$runmon" --db "$db" report --all --no-keep --jobs $j -o "$tmp/jobs$j.$f" 2>/dev/null || [ $? = 1 ] || fail "--jobs $j --format $f"
	done
done
cmp -s "$tmp/jobs1.html" "$tmp/jobs3.html" || fail "--jobs 3 wrote another HTML than --jobs 1"
cmp -s "$tmp/jobs1.json" "$tmp/jobs3.json" || fail "--jobs 3 wrote another JSON than --jobs 1"
[ "$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['runs']))" "$tmp/jobs3.json")" \
	= "$("$runmon" --db "$db" runs --names | wc -l)" ] || fail "--jobs 3: not every run in the report"
for bad in 0 x 257; do
	set +e
	"$runmon" --db "$db" report --all --jobs $bad -o "$tmp/bad.html" 2>"$tmp/err"; rc=$?
	set -e
	[ $rc = 2 ] && grep -q -- "--jobs" "$tmp/err" || fail "--jobs $bad: exit $rc, $(cat "$tmp/err")"
done
