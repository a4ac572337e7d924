#!/bin/sh
# End-to-end: data-parallel runs (issue 23). simulate writes a 4-rank run;
# its sidecar is imported as one file with a rank field and as one file per
# rank, and diagnose names the shape of each.
# Usage: ranks.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"

# j FILE EXPR: a Python expression over the JSON document d
j() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# case NAME STRATEGY MODE [simulate options]: simulate to files, import both ways, diagnose
case_() {
	name=$1 strat=$2 mode=$3
	shift 3
	dir=$tmp/$name
	"$runmon" simulate --out "$dir" --strategy "$strat" --ranks 4 --rank-mode "$mode" --steps 5000 --seed 5 "$@" >/dev/null
	# one file per rank, split from the rank field
	python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
out = {}
for line in open(f"{d}/batches.jsonl"):
    r = json.loads(line)
    if r["rank"] not in out:
        out[r["rank"]] = open(f"{d}/rank{r['rank']}.jsonl", "w")
    out[r["rank"]].write(line)
PY
	"$runmon" --db "$dir/one.db" import --run r "$dir/history.jsonl" "$dir/batches.jsonl" >/dev/null
	"$runmon" --db "$dir/per.db" import --run r "$dir/history.jsonl" "$dir"/rank[0-9].jsonl >/dev/null
	for form in one per; do
		"$runmon" --db "$dir/$form.db" diagnose --json r >"$dir/$form.json" || [ $? = 1 ] || fail "$name: diagnose $form"
	done
	# the two forms of the sidecar give the same store, row for row, and the same diagnosis
	for db in one per; do
		sqlite3 "$dir/$db.db" "SELECT step, rank, micro, bucket, n, max_len, tokens FROM batches ORDER BY 1, 2, 3" >"$dir/$db.rows"
	done
	cmp -s "$dir/one.rows" "$dir/per.rows" || fail "$name: per-rank files store other rows than one file"
	python3 - "$dir/one.json" "$dir/per.json" <<'PY' || fail "$name: the two imports diagnose differently"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    d["run"].pop("composition", None)
assert a == b
PY
}

case_ independent chunked independent
d=$tmp/independent/one.json
[ "$(j "$d" 'd["schema"]')" = runmon.diagnosis/4 ] || fail "schema version"
[ "$(j "$d" 'd["mixture"]["shape"]')" = rank_streaks ] || fail "independent: shape $(j "$d" 'd["mixture"]["shape"]')"
[ "$(j "$d" 'd["verdict"]["hypothesis"]')" = "homogeneous batching" ] || fail "independent: hypothesis"
[ "$(j "$d" 'd["severity"]')" = warn ] || fail "independent: severity $(j "$d" 'd["severity"]')"
j "$d" 'd["verdict"]["summary"]' | grep -q "^each rank streaks, the global step mixes them" || fail "independent: summary"
# the drift says how far (its total variation against a random order's)
# and how long (issue 67: a mutant that dropped either kept every test green)
j "$d" 'd["verdict"]["summary"]' |
	grep -q "the composition drifts: windows of [0-9]* steps stray from the run's proportions by a total variation of [0-9.]* where a random order of the steps gives [0-9.]*, for ~[0-9]* steps at a time" ||
	fail "independent: drift words: $(j "$d" 'd["verdict"]["summary"]')"
j "$d" '" ".join(d["verdict"]["fix"])' | grep -q "interleave per rank" || fail "independent: fix"
[ "$(j "$d" 'd["mixture"]["ranks"], d["mixture"]["ranks_streaking"], d["runs_test"]["sequences"]')" = "(4, 4, 4)" ] ||
	fail "independent: ranks"
[ "$(j "$d" 'd["mixture"]["drifts"] and d["mixture"]["persistence_steps"] >= 10')" = True ] || fail "independent: drift"
[ "$(j "$d" 'd["split"]["mixed"] and d["split"]["eta2"] > 0.5')" = True ] || fail "independent: R^2 on shares"
[ "$(j "$d" 'd["batches"]')" = 20000 ] || fail "independent: 4 batch rows a step"
"$runmon" --db "$tmp/independent/one.db" diagnose r | grep -q "^Ranks and micro-batches: rank_streaks" ||
	fail "independent: text section"

case_ lockstep chunked lockstep
d=$tmp/lockstep/one.json
[ "$(j "$d" 'd["mixture"]["shape"], d["severity"] in ("warn", "critical")')" = "('lockstep', True)" ] ||
	fail "lockstep: $(j "$d" 'd["mixture"]["shape"], d["severity"]')"
j "$d" 'd["verdict"]["summary"]' | grep -q "ranks in lockstep on one bucket" || fail "lockstep: summary"
[ "$(j "$d" 'd["mixture"]["concordance"]["observed"] > 0.9')" = True ] || fail "lockstep: concordance"

case_ random bucketed-random sharded
d=$tmp/random/one.json
[ "$(j "$d" 'd["mixture"]["shape"], d["healthy"]')" = "('random', True)" ] ||
	fail "random: $(j "$d" 'd["mixture"]["shape"], d["severity"]')"

# Micro-batches too: 4 ranks x 2 micro-batches, each rank its own streaks.
case_ micro chunked independent --micro 2
d=$tmp/micro/one.json
[ "$(j "$d" 'd["mixture"]["shape"], d["runs_test"]["sequences"], d["mixture"]["batches_per_step"]')" = \
	"('rank_streaks', 8, 8.0)" ] || fail "micro: $(j "$d" 'd["mixture"]["shape"], d["runs_test"]["sequences"]')"
head -1 "$tmp/micro/batches.jsonl" | grep -q '"rank": 0, "micro": 0' || fail "micro: sidecar fields"

# Mixed batches: with each batch's lengths ("lens", as the recorder writes
# them) a batch counts in every bucket by its token share, so the split
# recovers the levels that the bucket of its longest sequence blurs; the
# boundaries are the ids' own (no --buckets): each bucket up to its longest.
case_ lens mixed sharded --lens
case_ nolens mixed sharded
d=$tmp/lens/one.json
head -1 "$tmp/lens/batches.jsonl" | grep -q '"lens": \[' || fail "lens: no lens in the sidecar"
[ "$(j "$d" 'd["split"]["mixed_batches"] >= 19800, d["healthy"]')" = "(True, True)" ] ||
	fail "lens: $(j "$d" 'd["split"]["mixed_batches"], d["severity"]')"
[ "$(j "$d" 'd["split"]["eta2"] > 0.6 and d["split"]["buckets"][-1]["level"] / d["split"]["buckets"][0]["level"] > 2.5')" = True ] ||
	fail "lens: split $(j "$d" 'd["split"]["eta2"], [b["level"] for b in d["split"]["buckets"]]')"
[ "$(j "$tmp/nolens/one.json" 'd["split"]["mixed_batches"] == 0 and d["split"]["eta2"] < 0.5')" = True ] ||
	fail "nolens: $(j "$tmp/nolens/one.json" 'd["split"]["mixed_batches"], d["split"]["eta2"]')"
"$runmon" --db "$tmp/lens/one.db" diagnose r | grep -q "of 20000 batches hold lengths of several buckets" ||
	fail "lens: text"
"$runmon" simulate --out "$tmp/x" --lens --cumulative 2>"$tmp/err" && fail "--lens --cumulative accepted"
grep -q -- "--lens records batches" "$tmp/err" || fail "--lens --cumulative message"

# Bad rank modes are usage errors.
"$runmon" simulate --out "$tmp/x" --rank-mode diagonal 2>"$tmp/err" && fail "bad --rank-mode accepted"
grep -q -- "--rank-mode wants one of lockstep, sharded, independent, not 'diagonal'" "$tmp/err" || fail "--rank-mode message: $(cat "$tmp/err")"
"$runmon" simulate --out "$tmp/x" --strategy mixed --rank-mode independent 2>"$tmp/err" && fail "independent mixed accepted"
"$runmon" simulate --out "$tmp/x" --ranks 0 2>/dev/null && fail "--ranks 0 accepted"
"$runmon" simulate --out "$tmp/x" --micro 65 2>/dev/null && fail "--micro 65 accepted"
echo "e2e ranks: all checks passed"
