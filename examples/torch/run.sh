#!/bin/sh
# The real training, end to end: train three orders (examples/torch/train.py),
# import each into a runmon store, diagnose each, and compare the fix with the
# problem. Usage: examples/torch/run.sh [RUNMON [OUTDIR]]
#   RUNMON  the runmon binary (default: runmon on PATH, else ./build/runmon)
#   OUTDIR  where the runs and the store go (default: a new temporary one)
# Needs PyTorch: Debian's python3-torch (apt-get install python3-torch).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runmon=${1:-$(command -v runmon || echo "$here/../../build/runmon")}
out=${2:-$(mktemp -d)}
db=$out/runmon.db
py=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then
		py=$p
		break
	fi
done
[ -n "$py" ] || { echo "run.sh: no python3 with PyTorch here: apt-get install python3-torch" >&2; exit 2; }
"$py" "$here/train.py" "$out"
rm -f "$db"
for order in sorted stride random; do
	"$runmon" --db "$db" import --run "torch-$order" "$out/$order/history.jsonl" "$out/$order"/batches-rank*.jsonl >/dev/null
done
for order in sorted stride random; do
	echo "== runmon diagnose torch-$order"
	"$runmon" --db "$db" diagnose "torch-$order" | sed -n '1,4p' || true
done
echo "== runmon compare torch-sorted torch-stride"
"$runmon" --db "$db" compare torch-sorted torch-stride
echo "runs and store: $out"
