#!/bin/sh
# End-to-end: a tiny pure-Python data-parallel training loop records its
# batches with the installed runmon_record module, and runmon imports the
# sidecars with the loss history and diagnoses the run.
# Usage: recorder.sh RUNMON BUILD_DIR SOURCE_DIR
set -eu
runmon=$1
build=$2
src=$3
. "$(dirname "$0")/common.sh"

# cmake --install puts the module under share/runmon/python.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
RUNMON_PYTHON=$tmp/prefix/share/runmon/python
[ -f "$RUNMON_PYTHON/runmon_record.py" ] || fail "runmon_record.py not installed"
export RUNMON_PYTHON

# field NAME: one value of diagnose --json, e.g. verdict.hypothesis
field() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[k]
print(d)' "$1" "$2"
}

# train ORDER SEED [tiny_train options]: a run, imported into its own database and diagnosed
train() {
	order=$1 seed=$2
	shift 2
	dir=$tmp/$order-$seed
	python3 "$src/tests/unit/python/tiny_train.py" "$dir" --order "$order" --seed "$seed" "$@"
	"$runmon" --db "$dir/db" import --run tiny "$dir/history.jsonl" "$dir"/batches*.jsonl >"$dir/import.txt"
	"$runmon" --db "$dir/db" diagnose --json tiny >"$dir/d.json" || [ $? = 1 ] || fail "diagnose $order $seed"
	"$runmon" --db "$dir/db" diagnose tiny >"$dir/d.txt" || true
}

for seed in 1 2 3; do
	train homogeneous $seed
	dir=$tmp/homogeneous-$seed
	grep -q "6000 batches" "$dir/import.txt" || fail "seed $seed: a rank's 3000 steps x 2 micro-batches"
	[ "$(field "$dir/d.json" verdict.hypothesis)" = "homogeneous batching" ] || fail "seed $seed: $(cat "$dir/d.txt")"
	case $(field "$dir/d.json" severity) in warn | critical) ;; *) fail "seed $seed: homogeneous not flagged" ;; esac
	[ "$(sqlite3 "$dir/db" 'SELECT COUNT(DISTINCT rank) || COUNT(DISTINCT micro) || COUNT(*) FROM batches')" = 2212000 ] ||
		fail "seed $seed: ranks x micro-batches stored"

	train interleaved $seed
	dir=$tmp/interleaved-$seed
	case $(field "$dir/d.json" severity) in ok | info) ;; *) fail "seed $seed: false alarm on interleaved: $(cat "$dir/d.txt")" ;; esac
done

# Every rank appending to one file, each line with its rank field.
train homogeneous 4 --one-file --ranks 4 --accum 1
dir=$tmp/homogeneous-4
[ "$(sqlite3 "$dir/db" 'SELECT COUNT(DISTINCT rank) FROM batches')" = 4 ] || fail "one file: 4 ranks"
[ "$(field "$dir/d.json" verdict.hypothesis)" = "homogeneous batching" ] || fail "one file: $(cat "$dir/d.txt")"
train interleaved 4 --one-file --ranks 4 --accum 1
case $(field "$tmp/interleaved-4/d.json" severity) in ok | info) ;; *) fail "one file: false alarm" ;; esac

echo "recorder e2e: ok"
