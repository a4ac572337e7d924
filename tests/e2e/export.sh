# End-to-end: runmon export (issue 50.8). The bucket-adjusted column is the
# adjusted_loss view's value row for row; non-finite losses say what they
# were; a row's shares describe the batches it covers; nothing stored moves.
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
db=$tmp/e.db

"$runmon" --db "$db" simulate --steps 3000 --run homog >/dev/null
"$runmon" --db "$db" diagnose homog >/dev/null || true
before=$(sqlite3 "$db" "SELECT COUNT(*), SUM(severity = 'critical') FROM findings")
"$runmon" --db "$db" export homog -o "$tmp/h.csv" || fail "export: exit $?"
[ "$(sqlite3 "$db" "SELECT COUNT(*), SUM(severity = 'critical') FROM findings")" = "$before" ] || fail "export changed the findings"
python3 - "$tmp/h.csv" "$db" <<'PY' || fail "export against the adjusted_loss view"
import csv, sqlite3, sys
rows = {int(r["step"]): r for r in csv.DictReader(open(sys.argv[1]))}
assert len(rows) == 3000, len(rows)
n = 0
for step, loss, adj in sqlite3.connect(sys.argv[2]).execute("SELECT step, loss, adjusted FROM adjusted_loss"):
    r = rows[step]
    assert abs(float(r["loss"]) - loss) <= 1e-7 * abs(loss), (step, r["loss"], loss)
    assert abs(float(r["bucket_adjusted"]) - adj) <= 1e-7 * max(1, abs(adj)), (step, r["bucket_adjusted"], adj)
    shares = [float(v) for k, v in r.items() if k.startswith("share_")]
    assert abs(sum(shares) - 1) < 1e-9 and r["batches"] == "1" and r["ranks"] == "1", r
    assert r["share_" + r["bucket"]] == "1", r
    n += 1
assert n == 3000, n
PY

# Non-finite and missing losses, and a loss logged every 4 steps over
# every step's batch: each row covers the 4 batches since the previous.
python3 -c 'import json
for s in range(0, 400):
    rec = {"step": s, "batch/bucket": (s // 20) % 3, "batch/n": 8, "batch/max_len": [100, 900, 3000][(s // 20) % 3]}
    if s % 4 == 3:
        rec["loss"] = {99: "NaN", 199: "Infinity"}.get(s, 1.0 + 0.5 * ((s // 20) % 3) + 0.001 * (s % 7))
    print(json.dumps(rec).replace("\"NaN\"", "NaN").replace("\"Infinity\"", "Infinity"))' >"$tmp/k4.jsonl"
"$runmon" --db "$db" import --run k4 "$tmp/k4.jsonl" >/dev/null || fail "import k4"
"$runmon" --db "$db" export k4 -o "$tmp/k4.jsonl.out" --format jsonl || fail "export --format jsonl: exit $?"
"$runmon" --db "$db" export k4 -o "$tmp/k4b.jsonl" >/dev/null 2>&1 || fail "export -o FILE.jsonl"
python3 - "$tmp/k4.jsonl.out" "$tmp/k4b.jsonl" <<'PY' || fail "export of k4"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
again = [json.loads(l) for l in open(sys.argv[2])]  # the format from the extension
assert rows == again, "format from the extension differs"
assert [r["step"] for r in rows] == list(range(3, 400, 4)), [r["step"] for r in rows][:5]
by = {r["step"]: r for r in rows}
assert by[99]["loss"] is None and by[99]["loss_logged"] == "nan" and by[99]["bucket_adjusted"] is None, by[99]
assert by[199]["loss"] is None and by[199]["loss_logged"] == "inf", by[199]
ok = [r for r in rows if r["loss"] is not None]
assert len(ok) == 98 and all("loss_logged" not in r and r["bucket_adjusted"] is not None for r in ok)
for r in rows:
    assert r["batches"] == 4 and r["ranks"] == 1, r
    assert abs(sum(r["shares"].values()) - 1) < 1e-9, r
    assert r["bucket"] == max(r["shares"], key=r["shares"].get), r
# steps 16..19 and 20..23 straddle a bucket change: row 19 is all bucket 0, row 23 all bucket 1
assert by[19]["shares"] == {"0": 1} and by[23]["shares"] == {"1": 1}, (by[19], by[23])
PY
grep -q "^step,loss," "$tmp/k4b.jsonl" && fail "-o FILE.jsonl wrote CSV"

# Ranks: a 4-rank run without bucket ids (derived buckets, labelled by range).
"$runmon" --db "$db" simulate --steps 600 --ranks 4 --no-bucket --run r4 >/dev/null
"$runmon" --db "$db" export r4 >"$tmp/r4.csv" || fail "export r4"
head -1 "$tmp/r4.csv" | grep -q '^step,loss,bucket_adjusted,length_adjusted,batches,ranks,bucket,"share_(0, ' || fail "derived labels: $(head -1 "$tmp/r4.csv")"
[ "$(awk -F, 'NR > 1 && $5 == 4 && $6 == 4' "$tmp/r4.csv" | wc -l)" = 600 ] || fail "r4: batches and ranks per row"
[ "$(awk -F, 'NR > 1 && $4 != ""' "$tmp/r4.csv" | wc -l)" = 600 ] || fail "r4: no length-adjusted loss"

# Refusals: nothing written, the exit code of the cause.
set +e
# CSV doubles a quote inside a quoted cell, a label's included; -o FILE.json
# writes JSON lines, as .jsonl does (issue 67: both edits left every test green)
python3 - "$tmp" <<'PY'
import json, sys
with open(sys.argv[1] + "/q.jsonl", "w") as f, open(sys.argv[1] + "/qb.jsonl", "w") as g:
    for i in range(60):
        f.write(json.dumps({"step": i, "loss": 2.0 - i * 0.01}) + "\n")
        g.write(json.dumps({"step": i, "bucket": 'say "hi", %d' % (i % 2), "n": 4, "max_len": 100}) + "\n")
PY
"$runmon" --db "$db" import --run quoted "$tmp/q.jsonl" "$tmp/qb.jsonl" >/dev/null || fail "import quoted labels"
"$runmon" --db "$db" export quoted -o "$tmp/quoted.csv" || fail "export quoted"
"$runmon" --db "$db" export quoted -o "$tmp/quoted.json" || fail "export -o FILE.json"
head -1 "$tmp/quoted.csv" | grep -qF ',"share_say ""hi"", 0","share_say ""hi"", 1"' || fail "CSV quoting: $(head -1 "$tmp/quoted.csv")"
sed -n 2p "$tmp/quoted.csv" | grep -qF ',"say ""hi"", 0",' || fail "CSV quoting of a cell: $(sed -n 2p "$tmp/quoted.csv")"
python3 -c 'import csv, sys; r = list(csv.reader(open(sys.argv[1]))); assert r[1][6] == "say \"hi\", 0", r[1]' "$tmp/quoted.csv" \
	|| fail "CSV does not read back"
python3 -c 'import json, sys; r = [json.loads(l) for l in open(sys.argv[1])]; assert len(r) == 60 and r[0]["bucket"] == "say \"hi\", 0", r[0]' \
	"$tmp/quoted.json" || fail "-o FILE.json is no JSON lines: $(head -c 200 "$tmp/quoted.json")"
"$runmon" --db "$db" export nosuch -o "$tmp/none.csv" 2>"$tmp/err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "no run 'nosuch'" "$tmp/err" && [ ! -e "$tmp/none.csv" ] || fail "unknown run: exit $rc $(cat "$tmp/err")"
if "$runmon" --db "$db" export homog --format parquet 2>"$tmp/err"; then fail "--format parquet accepted"; fi
grep -q "parquet" "$tmp/err" || fail "bad format: $(cat "$tmp/err")"
set +e
"$runmon" --db "$db" export homog -o "$tmp/no/such/dir/x.csv" 2>"$tmp/err"; rc=$?
set -e
[ $rc = 4 ] || fail "an unwritable output: exit $rc $(cat "$tmp/err")"
echo "e2e export: all checks passed"
