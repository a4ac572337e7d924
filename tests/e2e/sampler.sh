#!/bin/sh
# End-to-end: a pure-Python data-parallel training loop (tiny_train.py)
# orders its batches with runmon_sampler.StrideBucketSampler and records
# them with runmon_record; runmon diagnoses the run healthy. The same
# batches sorted by bucket are flagged as homogeneous batching.
# Usage: sampler.sh RUNMON SOURCE_DIR
set -eu
runmon=$1
src=$2
. "$(dirname "$0")/common.sh"

# train ORDER SEED [tiny_train options]: a run in its own database, diagnosed
train() {
	order=$1 seed=$2
	shift 2
	dir=$tmp/$order-$seed$(echo "$*" | tr -d ' -')
	python3 "$src/tests/unit/python/tiny_train.py" "$dir" --order "$order" --seed "$seed" "$@" ||
		fail "tiny_train $order $seed $*"
	"$runmon" --db "$dir/db" import --run tiny "$dir/history.jsonl" "$dir"/batches*.jsonl >"$dir/import.txt"
	"$runmon" --db "$dir/db" diagnose --json tiny >"$dir/d.json" || [ $? = 1 ] || fail "diagnose $order $seed"
	"$runmon" --db "$dir/db" diagnose tiny >"$dir/d.txt" || true
}

healthy=0 flagged=0
for seed in 1 2; do
	for shape in "--ranks 2 --accum 2" "--ranks 4 --accum 1" "--ranks 1 --accum 1"; do
		# shellcheck disable=SC2086 # the shape's words
		train stride $seed $shape
		case $(field "$dir/d.json" severity) in
		ok | info) healthy=$((healthy + 1)) ;;
		*) fail "stride, seed $seed, $shape: $(sed -n 3p "$dir/d.txt")" ;;
		esac
		z=$(field "$dir/d.json" runs_test.z)
		python3 -c "import sys; sys.exit(not float('$z') > 4)" || fail "stride, seed $seed, $shape: runs z $z, not interleaved"
		# shellcheck disable=SC2086
		train stride-sorted $seed $shape
		[ "$(field "$dir/d.json" verdict.hypothesis)" = "homogeneous batching" ] ||
			fail "sorted, seed $seed, $shape: $(sed -n 3p "$dir/d.txt")"
		case $(field "$dir/d.json" severity) in
		warn | critical) flagged=$((flagged + 1)) ;;
		*) fail "sorted, seed $seed, $shape: not flagged" ;;
		esac
	done
done
# compare names the change: the sorted batches, then the sampler's order.
for order in stride-sorted stride; do
	d=$tmp/$order-1ranks2accum2
	"$runmon" --db "$tmp/both.db" import --run "$order" "$d/history.jsonl" "$d"/batches*.jsonl >/dev/null
done
"$runmon" --db "$tmp/both.db" compare stride-sorted stride >"$tmp/cmp.txt" || fail "compare: exit $?: $(tail -3 "$tmp/cmp.txt")"
grep -q "^Result: resolved: homogeneous batching resolved" "$tmp/cmp.txt" || fail "compare: $(tail -1 "$tmp/cmp.txt")"
if "$runmon" --db "$tmp/both.db" compare stride stride-sorted >/dev/null; then fail "compare: the reverse is worse"; fi
echo "sampler: $healthy of 6 stride runs healthy, $flagged of 6 sorted runs flagged; compare names the change"
