#!/bin/sh
# End-to-end: runs shaped as real ones are, through the real binary
# (simulate -> store -> diagnose / watch / compare), held to their truth
# (issue 46): no resets alarm on a chunked run without resets logged every
# 10 steps on 4 ranks; decaying resets in the longest bucket named as that
# bucket's on 1 and 4 ranks, logged every step and every 10; the loss alone
# of a bucketed run suspected; a NaN tail critical with its first step and
# an alert; lengths without ids give the sampler's own boundaries; two such
# runs compared by one bucketing; --out writes the truth. Usage: truth.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
db=$tmp/t.db
rc() { "$@" >"$tmp/out" 2>"$tmp/err" && echo 0 || echo $?; }
sim() { "$runmon" --db "$db" simulate "$@" >/dev/null || fail "simulate $*"; }

# 1. Chunked, 4 ranks, the loss the mean of every 10 steps, no resets at all.
sim --strategy chunked --steps 30000 --ranks 4 --log-every 10 --spikes none --run calm
rc "$runmon" --db "$db" diagnose calm --json >/dev/null
python3 - "$tmp/out" <<'PY' || fail "a run without resets: resets found"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["resets"]
assert r["interval"] == 10 and r["spikes"] <= 2 and not r["cluster_by_bucket"], r
assert d["verdict"]["causes"] == ["homogeneous batching"], d["verdict"]
PY
"$runmon" --db "$db" watch --once --offline calm >"$tmp/w"
if grep -q "RunmonResetsByBucket\|RunmonInstability" "$tmp/w"; then fail "resets alert on a run without: $(cat "$tmp/w")"; fi

# 2. Resets that jump and decay, all begun in the longest bucket (5).
for shape in "1 1" "1 10" "4 1" "4 10"; do
	set -- $shape
	sim --strategy chunked --steps 30000 --ranks "$1" --log-every "$2" --spikes bucket --run "b$1x$2"
	rc "$runmon" --db "$db" diagnose "b$1x$2" --json >/dev/null
	python3 - "$tmp/out" <<'PY' || fail "resets in bucket 5, $1 ranks, every $2 steps: not named"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["resets"]
top = max(r["by_bucket"]["buckets"], key=lambda b: b["enrichment"])
assert r["cluster_by_bucket"] and top["bucket"] == 5 and top["q"] < 0.01, (top, r["spikes"])
assert d["severity"] == "critical" and "loss resets cluster by bucket" in d["verdict"]["summary"], d["verdict"]
PY
done
"$runmon" --db "$db" watch --once --offline b4x10 >"$tmp/w"
grep -q "ALERT [a-z]* b4x10 RunmonResetsByBucket: loss resets cluster in bucket 5" "$tmp/w" || fail "no alert: $(cat "$tmp/w")"

# 3. The loss alone of a bucketed run: a braid of three levels, suspected.
sim --strategy bucketed-random --steps 20000 --loss-only --run braid
[ "$(rc "$runmon" --db "$db" diagnose braid)" = 1 ] || fail "loss alone: exit $(cat "$tmp/err")"
grep -q "^VERDICT  warn: suspected homogeneous batching (from the loss alone): it switches between 3 levels" "$tmp/out" \
	|| fail "loss alone: $(grep VERDICT "$tmp/out")"
grep -q "record each batch's bucket or lengths" "$tmp/out" || fail "loss alone: no way to confirm"
# The report's overview keeps the word "suspected" (issue 66.3).
"$runmon" --db "$db" report braid --format md -o "$tmp/braid.md" >/dev/null 2>&1 || true
grep -q "| suspected homogeneous batching |" "$tmp/braid.md" || fail "report overview drops suspected: $(grep braid "$tmp/braid.md" | head -3)"
# ... and a healthy one stays silent.
sim --strategy mixed --steps 20000 --loss-only --run calm-alone
[ "$(rc "$runmon" --db "$db" diagnose calm-alone)" = 0 ] || fail "mixed loss alone: $(grep VERDICT "$tmp/out")"

# 4. A loss that turns NaN for its last 5%: critical, first bad step named.
sim --strategy interleaved --steps 20000 --diverge nan --run nan
[ "$(rc "$runmon" --db "$db" diagnose nan)" = 1 ] || fail "NaN run: exit"
grep -q "^VERDICT  critical: the loss diverges at step 19000: from there 1000 of its points are NaN" "$tmp/out" \
	|| fail "NaN run: $(grep VERDICT "$tmp/out")"
rc "$runmon" --db "$db" diagnose nan --json >/dev/null
python3 - "$tmp/out" <<'PY' || fail "NaN run: JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["latest"]["step"] == 19999 and d["latest"]["loss"] is None and d["latest"]["nonfinite"] == "nan", d["latest"]
assert d["divergence"]["first_step"] == 19000 and d["divergence"]["nan"] == 1000, d["divergence"]
assert d["verdict"]["causes"][0] == "divergence", d["verdict"]
PY
"$runmon" --db "$db" watch --once --offline nan >"$tmp/w"
grep -q "ALERT critical nan RunmonDivergence: the loss diverges at step 19000" "$tmp/w" || fail "no divergence alert"
sim --strategy interleaved --steps 20000 --diverge explode --run boom
[ "$(rc "$runmon" --db "$db" diagnose boom)" = 1 ] || fail "exploding run: exit"
grep -q "^VERDICT  critical: the loss diverges at step 190[0-9][0-9]: it explodes to [0-9.e+]*, [0-9]*x the median loss before" "$tmp/out" \
	|| fail "exploding run: $(grep VERDICT "$tmp/out")"
# its peak is the largest loss of the tail, never NaN (issue 67's mutant)
rc "$runmon" --db "$db" diagnose boom --json >/dev/null
python3 - "$tmp/out" "$db" <<'PY' || fail "exploding run's peak: $(grep -o '"divergence": {[^}]*}' "$tmp/out")"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))["divergence"]
top = sqlite3.connect(sys.argv[2]).execute(
    "SELECT MAX(loss) FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = 'boom') AND step >= ?",
    (d["first_step"],)).fetchone()[0]
assert d["peak"] is not None and abs(d["peak"] - top) <= 1e-9 * top, (d["peak"], top)
PY

# 5. Lengths without bucket ids: the sampler's own boundaries, and two runs
# compared by one bucketing.
sim --strategy chunked --steps 8000 --no-bucket --run lens-a
sim --strategy stride --steps 8000 --no-bucket --run lens-b
rc "$runmon" --db "$db" diagnose lens-a --json >/dev/null
python3 - "$tmp/out" <<'PY' || fail "derived boundaries: the sampler's (each the longest length below the cut)"
import json, sys
b = json.load(open(sys.argv[1]))["buckets_derived"]["boundaries"]
assert b[:6] == [0, 770, 1216, 1728, 2432, 3296] and 8000 < b[6] <= 8192, b
PY
rc "$runmon" --db "$db" compare lens-a lens-b >/dev/null
grep -q "^  buckets derived from lengths *0,770,1216,1728,2432,3296,8[0-9]* *the same" "$tmp/out" \
	|| fail "compare: one bucketing: $(head -5 "$tmp/out")"
# every bucket's level row holds both runs' levels (lined up: one bucketing)
[ "$(grep -c '^    level, bucket (.*x  *[0-9.]*x ' "$tmp/out")" = 6 ] || fail "compare: levels: $(grep level "$tmp/out")"

# 6. --out writes the truth beside the run's files.
"$runmon" simulate --strategy chunked --steps 3000 --spikes bucket --loss-only --out "$tmp/o" >/dev/null
[ -s "$tmp/o/truth.json" ] && [ ! -e "$tmp/o/batches.jsonl" ] || fail "--out with --loss-only"
python3 - "$tmp/o/truth.json" <<'PY' || fail "truth.json"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["causes"] == ["homogeneous_batching"] and t["reset_bucket"] == 5 and t["resets"], t
assert all(r["bucket"] == 5 for r in t["resets"]) and t["diverge_step"] == -1, t
PY
# Options that go together, and those that do not.
[ "$(rc "$runmon" simulate --reset-bucket 9 --spikes bucket --out "$tmp/x")" = 2 ] || fail "--reset-bucket 9 accepted"
[ "$(rc "$runmon" simulate --reset-every 10 --out "$tmp/x")" = 2 ] || fail "--reset-every without spikes"
[ "$(rc "$runmon" simulate --diverge-at 10 --out "$tmp/x")" = 2 ] || fail "--diverge-at without --diverge"
[ "$(rc "$runmon" simulate --loss-only --cumulative --out "$tmp/x")" = 2 ] || fail "--loss-only --cumulative"
echo "e2e truth: all checks passed"
