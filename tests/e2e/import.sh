#!/bin/sh
# End-to-end: drive the real runmon binary on fixture files and read the
# database back with sqlite3. Usage: import.sh RUNMON DATA_DIR
set -eu
runmon=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/e2e.db
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$db" "$1"; }

"$runmon" --version | grep -q '^runmon ' || fail "--version"
"$runmon" --help | grep -q 'import' || fail "--help lists import"
"$runmon" help import | grep -q -- '--skip-bad' || fail "help import"

# History plus sidecar into one run, with bucket boundaries.
out=$("$runmon" --db "$db" import --run demo --buckets 0,770,1216,1728,2432,3296,8192 \
	"$data/wandb-history.jsonl" "$data/sidecar.jsonl")
echo "$out"
echo "$out" | grep -q "wandb-history -> run 'demo': 9 lines, 7 steps (5 new), 2 batches" || fail "history summary"
echo "$out" | grep -q "step counter restarted 1 time: line 5 (step 2 after 3)" || fail "restart line"
echo "$out" | grep -q "2 rows replaced" || fail "replaced count"
[ "$(q 'SELECT COUNT(*) FROM steps')" = 5 ] || fail "steps stored"
[ "$(q 'SELECT COUNT(*) FROM batches')" = 4 ] || fail "batches stored"

# RUNMON_DB is the same as --db; runs lists the run.
RUNMON_DB=$db "$runmon" runs | grep -q '^demo .* 0\.\.4 ' || fail "runs table"
"$runmon" --db "$db" runs --json | grep -q '"run": "demo"' || fail "runs --json"

# Re-import: nothing changes.
before=$(q 'SELECT total(loss*step), COUNT(*) FROM steps')
"$runmon" --db "$db" import --run demo "$data/wandb-history.jsonl" >/dev/null
[ "$(q 'SELECT total(loss*step), COUNT(*) FROM steps')" = "$before" ] || fail "re-import changed steps"

# A bad line: exit 2, file:line on stderr, nothing committed.
set +e
err=$("$runmon" --db "$db" import --run other "$data/bad.jsonl" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] || fail "bad line exit code $rc"
echo "$err" | grep -q "runmon: error: .*bad.jsonl:3: column 32: expected a string key" || fail "bad line message: $err"
[ "$(q "SELECT COUNT(*) FROM runs WHERE name = 'other'")" = 0 ] || fail "bad import committed"

# --skip-bad imports the rest.
"$runmon" --db "$db" import --run other --skip-bad "$data/bad.jsonl" | grep -q "skipped 2 bad lines (3, 5)" \
	|| fail "skip-bad summary"

# Two writers of one log: one line says so, and no restart list.
python3 -c "
for s in range(200):
    print('{\"step\": %d, \"loss\": %.3f}' % (s, 2 - s / 1000))
    if s >= 2:
        print('{\"step\": %d, \"loss\": %.3f}' % (s - 2, 2 - (s - 2) / 1000))
" >"$tmp/two.jsonl"
"$runmon" --db "$tmp/two.db" import --run two "$tmp/two.jsonl" >"$tmp/two.out"
grep -q "each step appears 2 times: 2 writers interleaved in one file; the later row of each step is kept" "$tmp/two.out" \
	|| fail "two writers: $(cat "$tmp/two.out")"
if grep -q "restarted" "$tmp/two.out"; then fail "two writers reported as restarts"; fi

# Usage errors exit 2.
set +e
"$runmon" --db "$db" import >/dev/null 2>&1; [ $? = 2 ] || fail "no file: exit 2"
"$runmon" --db "$db" frobnicate >/dev/null 2>&1; [ $? = 2 ] || fail "unknown command: exit 2"
"$runmon" --db "$db" import --buckets 5,3 x >/dev/null 2>&1; [ $? = 2 ] || fail "bad buckets: exit 2"
"$runmon" --db /nonexistent/dir/x.db import "$data/sidecar.jsonl" >/dev/null 2>&1; [ $? = 4 ] || fail "bad db path: exit 4"
"$runmon" --db /nonexistent/dir/x.db runs >/dev/null 2>&1; [ $? = 2 ] || fail "runs on a missing database: exit 2"
set -e
echo "e2e import: all checks passed"
