#!/bin/sh
# End-to-end: runmon buckets on the three input shapes, JSON output, a bad
# line, and the fitted boundaries fed to simulate. Usage: buckets.sh RUNMON DATA
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"

printf '1\n2\n3\n10\n' >"$tmp/lens.txt"
out=$("$runmon" buckets --k 2 "$tmp/lens.txt")
echo "$out" | grep -q "fitted boundaries (least padding): 0,3,10" || fail "numbers: $out"
# A sidecar's lens arrays.
"$runmon" buckets --k 3 "$data/sidecar.jsonl" 2>"$tmp/err" | grep -q "^8 sequences" || fail "sidecar"
grep -q "1 rows had no \"lens\"" "$tmp/err" || fail "sidecar note"
# A CSV column, as exported from a dataset's stored lengths.
printf 'id,seq_len\n1,100\n2,120\n3,3000\n4,3100\n' >"$tmp/lens.csv"
"$runmon" buckets --k 2 --json "$tmp/lens.csv" >"$tmp/out.json"
python3 - "$tmp/out.json" <<'PY' || fail "json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sequences"] == 4 and d["k"] == 2
assert d["fitted"]["boundaries"] == [0, 120, 3100], d["fitted"]["boundaries"]
assert d["fitted"]["padding"] == 20 + 100
assert d["fitted"]["efficiency"] <= 1 and d["equal_width"]["padding"] >= d["fitted"]["padding"]
PY
# Bad input names the line; exit 2.
printf '5\nfive\n' >"$tmp/bad.txt"
set +e
"$runmon" buckets "$tmp/bad.txt" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] || fail "bad line exit $rc"
grep -q "bad.txt:2: not a number" "$tmp/err" || fail "bad line message"
# The boundaries go straight into simulate.
b=$("$runmon" buckets --k 2 "$tmp/lens.txt" | sed -n 's/^preview the loss signature: runmon simulate --buckets //p')
"$runmon" --db "$tmp/s.db" simulate --steps 500 --buckets "$b" --run pv | grep -q "simulated run 'pv'" || fail "simulate --buckets"
[ "$(sqlite3 "$tmp/s.db" "SELECT group_concat(hi, ',') FROM buckets")" = "3,10" ] || fail "buckets stored"
echo "e2e buckets: all checks passed"
