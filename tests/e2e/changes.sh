#!/bin/sh
# End-to-end: what changed since the last report. Two nights of runs, each
# kind of change once (new, risen, fallen, resolved, changed, unchanged),
# two of them in a W&B project; the second night's Markdown digest and the
# JSON's summary, changes and overview against golden files; --baseline FILE
# gives the same changes as the stored report; --fail-on-new alerts once;
# bad options are refused. Usage: changes.sh RUNMON DATA [--update]
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"
db=$tmp/c.db
sim() { # NAME STRATEGY [options]: 6000 steps, seed 2
	name=$1
	shift
	"$runmon" --db "$db" simulate --steps 6000 --seed 2 --run "$name" --strategy "$@" >/dev/null
}
report() { # EPOCH [options]: the exit status is echoed, not failed on
	epoch=$1
	shift
	set +e
	SOURCE_DATE_EPOCH=$epoch "$runmon" --db "$db" report --all "$@" 2>"$tmp/err"
	echo $? >"$tmp/rc"
	set -e
}
rc() { cat "$tmp/rc"; }

# Night 1 (2025-11-29 06:00Z).
sim steady chunked --spikes bucket
sim rising interleaved
sim falling chunked --spikes bucket
sim fixed chunked
sim moved interleaved --spikes checkpoint
sim healthy interleaved
# Two runs are a W&B project's, as sync would have stored them.
sqlite3 "$db" "UPDATE runs SET entity = 'acme', project = 'llm' WHERE name IN ('rising', 'healthy')"
report 1764396000 --format json -o "$tmp/night1.json" --fail-on-new warn
[ "$(rc)" = 1 ] || fail "the first report sees everything as new: --fail-on-new warn should exit 1 (got $(rc))"
grep -q '"text": "4 of 6 runs need attention; no earlier report to compare with."' "$tmp/night1.json" \
	|| fail "first report's summary: $(grep '"text"' "$tmp/night1.json")"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM reports")" = 1 ] || fail "the report was not kept"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM report_runs")" = 6 ] || fail "the report's runs were not kept"

# Night 2 (24 h later): each kind of change once.
sqlite3 "$db" "UPDATE runs SET entity = '', project = '' WHERE name IN ('rising', 'healthy')" # simulate them again
sim rising chunked --spikes bucket    # ok -> critical
sim falling sorted                    # critical -> warn
sim fixed interleaved                 # warn -> ok
sim moved interleaved --spikes bucket # warn, another cause
sim newcomer sorted                   # not seen before
sqlite3 "$db" "UPDATE runs SET entity = 'acme', project = 'llm' WHERE name IN ('rising', 'healthy')"
# An ad hoc report in between (2025-11-29 18:00Z) of one run: with
# --since-report 20h the nightly compares with the night before, not with it.
SOURCE_DATE_EPOCH=1764439200 "$runmon" --db "$db" report fixed -o "$tmp/adhoc.md" || true
# Only a report of --all is kept as a baseline (issue 48): a report of named
# runs, --compare and --all --no-keep are not, unless --keep.
kept() { sqlite3 "$db" "SELECT COUNT(*) FROM reports"; }
[ "$(kept)" = 1 ] || fail "an ad hoc report of named runs was kept as a baseline: $(kept) reports"
SOURCE_DATE_EPOCH=1764439200 "$runmon" --db "$db" report --compare fixed fixed -o /dev/null || true
SOURCE_DATE_EPOCH=1764439200 "$runmon" --db "$db" report --all --no-keep -o /dev/null || true
[ "$(kept)" = 1 ] || fail "--compare or --all --no-keep was kept as a baseline: $(kept) reports"
cp "$db" "$tmp/keep.db"
SOURCE_DATE_EPOCH=1764439200 "$runmon" --db "$tmp/keep.db" report fixed --keep -o /dev/null || true
[ "$(sqlite3 "$tmp/keep.db" "SELECT COUNT(*) FROM reports")" = 2 ] || fail "report RUN --keep was not kept"
report 1764482400 --format md -o "$tmp/night2.md" --since-report 20h --fail-on-new warn
[ "$(rc)" = 1 ] || fail "night 2 has a new and a risen run: --fail-on-new warn should exit 1 (got $(rc))"
report 1764482400 --format json -o "$tmp/night2.json" --since-report 20h
python3 - "$tmp/night2.json" "$tmp/night2.head.json" <<'PY' || fail "JSON report head"
import json, sys
doc = json.load(open(sys.argv[1]))
head = {k: doc[k] for k in ("schema", "generated", "summary", "changes", "overview")}
kinds = {r["run"]: r["change"] for r in doc["changes"]["runs"]}
assert kinds == {"acme/llm/rising": "risen", "falling": "fallen", "fixed": "resolved", "moved": "changed",
                 "newcomer": "new"}, kinds
assert doc["changes"]["counts"]["unchanged"] == 2, doc["changes"]["counts"]
assert doc["changes"]["baseline"]["generated"] == "2025-11-29T06:00:00Z", doc["changes"]["baseline"]
order = [o["run"] for o in doc["overview"]]
assert order[:2] == ["acme/llm/rising", "acme/llm/healthy"], order  # the group with the worst run first
assert [r["run"]["name"] for r in doc["runs"]] == [o.split("/")[-1] for o in order]  # sections follow
json.dump(head, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
PY
if [ "${3:-}" = --update ]; then
	cp "$tmp/night2.md" "$data/golden/changes.md"
	cp "$tmp/night2.head.json" "$data/golden/changes.json"
fi
diff -u "$data/golden/changes.md" "$tmp/night2.md" || fail "Markdown differs from tests/data/golden/changes.md"
diff -u "$data/golden/changes.json" "$tmp/night2.head.json" || fail "JSON differs from tests/data/golden/changes.json"

# --baseline FILE: the first night's JSON report gives the same changes.
report 1764482400 --format json -o "$tmp/file.json" --baseline "$tmp/night1.json"
python3 - "$tmp/night2.json" "$tmp/file.json" "$tmp/night1.json" <<'PY' || fail "--baseline FILE"
import json, sys
a, b = (json.load(open(p))["changes"] for p in sys.argv[1:3])
assert b["baseline"] == {"generated": "2025-11-29T06:00:00Z", "file": sys.argv[3]}, b["baseline"]
assert a["runs"] == b["runs"] and a["counts"] == b["counts"], (a, b)
PY

# Night 3: nothing new. --fail-on-new exits 0 though runs are critical;
# --fail-on still fails on them.
report 1764568800 --format md -o "$tmp/night3.md" --fail-on-new warn
[ "$(rc)" = 0 ] || fail "nothing new: --fail-on-new warn should exit 0 (got $(rc)): $(cat "$tmp/err")"
grep -q "nothing changed since the report of 2025-11-30T06:00:00Z" "$tmp/night3.md" || fail "night 3 summary"
grep -q "^## acme/llm/rising" "$tmp/night3.md" || fail "a critical run is detailed even when unchanged"
! grep -q "^## acme/llm/healthy" "$tmp/night3.md" || fail "a healthy unchanged run is not detailed in the digest"
grep -q "healthy runs\? unchanged since the baseline" "$tmp/night3.md" || fail "the digest says what it left out"
report 1764568800 --format md -o /dev/null --fail-on-new warn --fail-on critical
[ "$(rc)" = 1 ] || fail "--fail-on critical with --fail-on-new: critical runs still fail (got $(rc))"
# A finding that appears at info only: --fail-on-new warn stays 0, info fails.
sim healthy2 interleaved
report 1764655200 --format md -o /dev/null --fail-on-new warn --since-report 2025-12-01T06:00:00Z
[ "$(rc)" = 0 ] || fail "a new healthy run is not news at warn (got $(rc))"
report 1764655200 --format md -o /dev/null --fail-on-new info --since-report 2025-12-01
[ "$(rc)" = 1 ] || fail "a new run with info findings is news at info (got $(rc))"

# Bad options and baselines: exit 2, the file named, nothing kept.
before=$(sqlite3 "$db" "SELECT COUNT(*) FROM reports")
for bad in "--since-report yesterday" "--since-report 2025-13-01" "--fail-on-new loud" \
	"--baseline $tmp/night1.json --since-report 1d"; do
	# shellcheck disable=SC2086
	report 1764655200 -o /dev/null $bad
	[ "$(rc)" = 2 ] || fail "'$bad' should be a usage error (got $(rc))"
done
report 1764655200 -o /dev/null --baseline "$tmp/none.json"
[ "$(rc)" = 2 ] && grep -q "none.json" "$tmp/err" || fail "missing baseline: $(cat "$tmp/err")"
report 1764655200 -o /dev/null --baseline "$tmp/night2.md"
[ "$(rc)" = 2 ] && grep -q "night2.md' line 1: .*--format json" "$tmp/err" || fail "Markdown baseline: $(cat "$tmp/err")"
printf '{"schema": "runmon.report/1", "generated": "2025-11-29T06:00:00Z", "overview": [{"run": "x"}]}' >"$tmp/half.json"
report 1764655200 -o /dev/null --baseline "$tmp/half.json"
[ "$(rc)" = 2 ] && grep -q "half.json': overview entry 1 lacks" "$tmp/err" || fail "malformed baseline: $(cat "$tmp/err")"
report 1764655200 -o "$tmp/no/such/dir/r.md"
[ "$(rc)" = 4 ] || fail "an output that cannot be written: exit $(rc), not 4: $(cat "$tmp/err")"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM reports")" = "$before" ] || fail "a refused report was kept"
echo "changes: new, risen, fallen, resolved, changed and unchanged runs reported; --baseline, --since-report and --fail-on-new checked"
