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
assert d["schema"] == "runmon.buckets/1" and d["sequences"] == 4 and d["k"] == 2
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
# One rule for a length (issue 49.14): 0..2^30, as import takes a batch's;
# buckets refused 0 and 1e9..2^30.
printf '0\n5\n1000000000\n1073741824\n' >"$tmp/edge.txt"
"$runmon" buckets --k 2 "$tmp/edge.txt" 2>"$tmp/err" | grep -q "^4 sequences" || fail "lengths 0 and 2^30: $(cat "$tmp/err")"
printf '5\n1073741825\n' >"$tmp/over.txt"
set +e
"$runmon" buckets "$tmp/over.txt" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "over.txt:2: 1073741825 is not a length (an integer in 0..2^30)" "$tmp/err" || fail "2^30+1: exit $rc, $(cat "$tmp/err")"
# The boundaries go straight into simulate.
b=$("$runmon" buckets --k 2 "$tmp/lens.txt" | sed -n 's/^preview the loss signature: runmon simulate --buckets //p')
"$runmon" --db "$tmp/s.db" simulate --steps 500 --buckets "$b" --run pv | grep -q "simulated run 'pv'" || fail "simulate --buckets"
[ "$(sqlite3 "$tmp/s.db" "SELECT group_concat(hi, ',') FROM buckets")" = "3,10" ] || fail "buckets stored"

# A saved Hugging Face dataset (tests/data/arrow, written by apache-arrow in
# save_to_disk's layout): the seq_len column by default, the offsets of
# input_ids without one; the note says which column, rows and shards.
"$runmon" buckets --k 4 "$data/arrow/seqlen" >"$tmp/out" 2>"$tmp/err" || fail "dataset: $(cat "$tmp/err")"
grep -q "^900 sequences" "$tmp/out" || fail "dataset count: $(cat "$tmp/out")"
grep -q "900 lengths from column seq_len (int64), 900 rows in 3 shards" "$tmp/err" || fail "dataset note: $(cat "$tmp/err")"
"$runmon" buckets --k 4 --list-column input_ids "$data/arrow/seqlen" >"$tmp/out2" 2>/dev/null
[ "$(sed -n 3p "$tmp/out")" = "$(sed -n 3p "$tmp/out2")" ] || fail "offsets and seq_len disagree"
"$runmon" buckets --json --k 3 "$data/arrow/ids" >"$tmp/ids.json" 2>"$tmp/err" || fail "ids: $(cat "$tmp/err")"
python3 - "$tmp/ids.json" "$data/arrow/ids.expected" <<'PY' || fail "ids json"
import json, sys
d = json.load(open(sys.argv[1]))
want = [int(x) for x in open(sys.argv[2]).read().split() if x != "null"]
s = d["source"]
assert s["column"] == "input_ids" and s["from_offsets"] and s["type"] == "list<int32>", s
assert s["rows"] == 700 and s["shards"] == 2 and s["null_rows"] == 7 and s["empty_rows"] == 0, s
assert d["sequences"] == len(want) and d["fitted"]["tokens"] == sum(want), (d["sequences"], d["fitted"]["tokens"])
assert d["fitted"]["boundaries"][-1] == max(want)
PY
# One shard on its own, the file format, a uint16 column with nulls, and
# empty lists left out.
"$runmon" buckets --k 2 "$data/arrow/seqlen/data-00001-of-00003.arrow" 2>/dev/null | grep -q "^300 sequences" || fail "one shard"
"$runmon" buckets --k 2 "$data/arrow/filefmt" 2>/dev/null | grep -q "^300 sequences" || fail "file format"
"$runmon" buckets --k 2 "$data/arrow/large" 2>"$tmp/err" | grep -q "^362 sequences" || fail "uint16 with nulls"
grep -q "column length (uint16), 400 rows in 1 shard; left out 30 null and 8 empty rows" "$tmp/err" || fail "nulls note: $(cat "$tmp/err")"
"$runmon" buckets --k 2 --column tokens "$data/arrow/large" 2>"$tmp/err" | grep -q "^392 sequences" || fail "large_list"
grep -q "left out 0 null and 8 empty rows" "$tmp/err" || fail "empty note: $(cat "$tmp/err")"
# A DatasetDict: train by default, --split for another.
mkdir -p "$tmp/dd/train" "$tmp/dd/test"
cp "$data/arrow/seqlen/"* "$tmp/dd/train/"
cp "$data/arrow/ids/"* "$tmp/dd/test/"
echo '{"splits": ["train", "test"]}' >"$tmp/dd/dataset_dict.json"
"$runmon" buckets --k 2 "$tmp/dd" 2>"$tmp/err" | grep -q "^900 sequences" || fail "dict train"
grep -q "split train" "$tmp/err" || fail "dict note: $(cat "$tmp/err")"
"$runmon" buckets --k 2 --split test "$tmp/dd" 2>/dev/null | grep -q "^693 sequences" || fail "dict --split"
# Bad input: a clear error naming the file, exit 2.
expect_err() { # expect_err NEEDLE ARGS...
	needle=$1
	shift
	set +e
	"$runmon" "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	set -e
	[ $rc = 2 ] || fail "exit $rc for $*"
	grep -qF -e "$needle" "$tmp/err" || fail "wanted '$needle' for $*: $(cat "$tmp/err")"
}
expect_err "column text is utf8; lengths want integers or a list column" buckets --column text "$data/arrow/seqlen"
expect_err "column lang is dictionary-encoded" buckets --column lang "$data/arrow/ids"
expect_err "no column nope; the columns are: text, input_ids, attention_mask, seq_len" buckets --column nope "$data/arrow/seqlen"
expect_err "no split validation; the splits are: train, test" buckets --split validation "$tmp/dd"
expect_err "--list-column is for Arrow data" buckets --list-column input_ids "$tmp/lens.txt"
mkdir "$tmp/cut"
head -c 20000 "$data/arrow/seqlen/data-00000-of-00003.arrow" >"$tmp/cut/data-00000-of-00001.arrow"
expect_err "cut/data-00000-of-00001.arrow: message 1: a body that runs past the end of the file (truncated?)" buckets "$tmp/cut"
printf 'junk' >"$tmp/cut/x.arrow"
expect_err "x.arrow: message 0: metadata that runs past the end of the file" buckets "$tmp/cut/x.arrow"
mkdir "$tmp/empty"
expect_err "no .arrow files" buckets "$tmp/empty"
# A shard listed three times in state.json counts once; a FIFO named as a
# shard, or as state.json, does not hold the command (issue 35.12).
mkdir "$tmp/thrice"
cp "$data/arrow/seqlen/"* "$tmp/thrice/"
python3 - "$tmp/thrice/state.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["_data_files"] = [s["_data_files"][0]] * 3 + s["_data_files"][1:]
json.dump(s, open(sys.argv[1], "w"))
PY
"$runmon" buckets --k 4 "$tmp/thrice" 2>"$tmp/err" | grep -q "^900 sequences" || fail "a shard listed thrice: $(cat "$tmp/err")"
mkdir "$tmp/fifo"
cp "$data/arrow/seqlen/state.json" "$tmp/fifo/"
mkfifo "$tmp/fifo/$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['_data_files'][0]['filename'])" "$tmp/fifo/state.json")"
set +e
timeout $((10 * ${RUNMON_TEST_SLOW:-1})) "$runmon" buckets "$tmp/fifo" >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] || fail "a FIFO as a shard: exit $rc: $(cat "$tmp/err")"
grep -q "not a regular file" "$tmp/err" || fail "a FIFO as a shard: $(cat "$tmp/err")"
mkdir "$tmp/fifo2"
cp "$data/arrow/seqlen/"*.arrow "$tmp/fifo2/"
mkfifo "$tmp/fifo2/state.json"
[ "$(timeout $((10 * ${RUNMON_TEST_SLOW:-1})) "$runmon" buckets --k 4 "$tmp/fifo2" 2>"$tmp/err" | grep -c "^900 sequences")" = 1 ] \
	|| fail "a FIFO as state.json: $(cat "$tmp/err")"

# The same reader feeds simulate (lengths drawn from the dataset, buckets
# fitted to them) and diagnose's cost side.
"$runmon" --db "$tmp/d.db" simulate --steps 2000 --lengths-from "$data/arrow/seqlen" --run ds >/dev/null 2>"$tmp/err" ||
	fail "simulate --lengths-from: $(cat "$tmp/err")"
grep -q "buckets fitted to those lengths: 0," "$tmp/err" || fail "simulate fit note"
top=$(sqlite3 "$tmp/d.db" "SELECT max(hi) FROM buckets")
maxlen=$(grep -v null "$data/arrow/seqlen.expected" | sort -n | tail -1)
[ "$top" = "$maxlen" ] || fail "simulated buckets end at $top, the data at $maxlen"
[ "$(sqlite3 "$tmp/d.db" "SELECT max(max_len) <= $maxlen AND min(min_len) >= 1 FROM batches")" = 1 ] || fail "simulated lengths"
"$runmon" --db "$tmp/d.db" simulate --steps 500 --lengths-from "$data/arrow/large" --lengths-column tokens --buckets 0,100,600 --run ds2 >/dev/null 2>"$tmp/err" || fail "simulate --lengths-column"
grep -q "from the offsets of tokens" "$tmp/err" || fail "simulate column note"
"$runmon" --db "$tmp/d.db" diagnose ds --json --lengths-from "$data/arrow/ids" --fail-on critical >"$tmp/dg.json" 2>"$tmp/err" || true
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['cost']; assert c['dataset_lengths']==693 and not c['lengths_reconstructed'], c" "$tmp/dg.json" || fail "diagnose --lengths-from json"
"$runmon" --db "$tmp/d.db" diagnose ds --lengths-from "$data/arrow/seqlen" --lengths-column seq_len --fail-on critical 2>/dev/null | grep -q "the dataset's lengths (900 sequences) re-packed" || fail "diagnose --lengths-column"
expect_err "--lengths-column goes with --lengths-from" diagnose ds --lengths-column seq_len
# Issue 66.2: one padding model. A sidecar that recorded every batch's
# lengths ("lens"): diagnose re-packs them as recorded, and fits the
# boundaries `buckets` fits to the same lengths (the same K and budget),
# with the same packed figure; the price's moves are from the measured
# efficiency, to the re-packed figures the table shows.
"$runmon" simulate --steps 3000 --lens --strategy chunked --run lens --out "$tmp/lens" >/dev/null 2>&1 || fail "simulate --lens"
"$runmon" --db "$tmp/l.db" import --run lens "$tmp/lens/history.jsonl" "$tmp/lens/batches.jsonl" >/dev/null 2>&1 || fail "import lens"
"$runmon" --db "$tmp/l.db" diagnose lens --json >"$tmp/l.json" || true
"$runmon" --db "$tmp/l.db" diagnose lens >"$tmp/l.txt" || true
grep -q "re-packed at [0-9]* tokens a batch (the lengths as recorded):" "$tmp/l.txt" || fail "lens: not re-packed as recorded: $(grep re-packed "$tmp/l.txt")"
set -- $(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['cost']; print(len(c['fitted_boundaries']) - 1, c['tokens_per_batch'])" "$tmp/l.json")
"$runmon" buckets --k "$1" --tokens-per-batch "$2" --json "$tmp/lens/batches.jsonl" >"$tmp/lb.json" 2>/dev/null || fail "buckets on the lens"
python3 - "$tmp/l.json" "$tmp/lb.json" "$tmp/l.txt" <<'PY' || fail "lens: diagnose and buckets disagree"
import json, re, sys
c = json.load(open(sys.argv[1]))["cost"]
b = json.load(open(sys.argv[2]))
assert c["lengths_recorded_batches"] == 3000 and not c["lengths_reconstructed"], c
assert c["fitted_boundaries"] == b["fitted"]["boundaries"], (c["fitted_boundaries"], b["fitted"]["boundaries"])
eff = {s["strategy"]: s["efficiency"] for s in c["strategies"]}
assert abs(eff["bucketed (fitted boundaries)"] - b["fitted"]["packed_efficiency"]) < 0.002, (eff, b["fitted"])
assert eff["bucketed (fitted boundaries)"] >= eff["bucketed (current boundaries)"], eff
# recorded lengths re-packed on the run's own boundaries give the measured figure
assert abs(eff["bucketed (current boundaries)"] - c["efficiency"]) < 0.01, (eff, c["efficiency"])
text = open(sys.argv[3]).read()
m = re.search(r"measured padding efficiency \(([\d.]+)%\); re-packing this run's lengths, fully random batches "
              r"would give ([\d.]+)% \(([-+][\d.]+) points\)", text)
assert m, re.findall(r"the price: .*", text)
now, rnd, move = map(float, m.groups())
assert abs(now - 100 * c["efficiency"]) < 0.06 and abs(rnd - 100 * eff["fully random"]) < 0.06, m.groups()
assert abs((rnd - now) - move) < 0.11, m.groups()
PY
echo "e2e buckets: all checks passed"
