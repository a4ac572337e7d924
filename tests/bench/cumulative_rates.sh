#!/bin/sh
# tests/bench/cumulative_rates.sh - verdicts on runs that log only cumulative
# token and sequence counters (elapsed_tokens, elapsed_examples) with the
# loss every K steps, through the real path: simulate --cumulative --out,
# import, diagnose. Prints, per order, how many of SEEDS runs were called
# homogeneous and how many raised any alarm.
#
# usage: tests/bench/cumulative_rates.sh [BUILD_DIR] [SEEDS] [K]   (defaults: build 100 10)
set -eu
runmon=${1:-build}/runmon
seeds=${2:-100}
k=${3:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for st in sorted chunked hf-megabatch interleaved bucketed-random mixed; do
	homog=0 alarm=0 coupled=0
	seed=1
	while [ $seed -le "$seeds" ]; do
		rm -f "$work/c.db"
		"$runmon" simulate --strategy $st --cumulative --log-every "$k" --steps 6000 --seed $seed \
			--out "$work/run" >/dev/null
		"$runmon" --db "$work/c.db" import --run r "$work/run/history.jsonl" >/dev/null
		"$runmon" --db "$work/c.db" diagnose r --json --fail-on critical >"$work/d.json" || :
		set -- $(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(int(d["verdict"]["hypothesis"] == "homogeneous batching" and d["severity"] in ("warn", "critical")),
      int(d["severity"] in ("warn", "critical")), int(d["length"]["coupled"]))' "$work/d.json")
		homog=$((homog + $1)) alarm=$((alarm + $2)) coupled=$((coupled + $3))
		seed=$((seed + 1))
	done
	echo "cumulative counters, loss every $k steps, $st: homogeneous $homog/$seeds, any alarm $alarm/$seeds, length coupled $coupled/$seeds"
done
