# End-to-end: housekeeping of the runs a store holds (issue 50.2). rm
# removes runs whole and all or nothing; mv renames a run with its report
# history; demo without --db keeps to its own file.
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
db=$tmp/h.db
count() { sqlite3 "$db" "SELECT COUNT(*) FROM $1"; }

for r in a b c; do "$runmon" --db "$db" simulate --steps 300 --run "$r" >/dev/null; done
"$runmon" --db "$db" diagnose a >/dev/null || true
[ "$(count findings)" -gt 0 ] || fail "diagnose stored no finding to remove"

# --dry-run says what would go and keeps it.
"$runmon" --db "$db" rm --dry-run a >"$tmp/out" || fail "rm --dry-run: exit $?"
grep -q "^would remove a: 300 steps, 300 with batch composition$" "$tmp/out" || fail "rm --dry-run: $(cat "$tmp/out")"
[ "$(count runs)" = 3 ] && [ "$(count steps)" = 900 ] || fail "rm --dry-run removed something"

# A name that is not there removes nothing, not even the runs before it.
if "$runmon" --db "$db" rm a nosuch >"$tmp/out" 2>"$tmp/err"; then fail "rm of an unknown run exited 0"; fi
grep -q "no run 'nosuch'.*(nothing removed)" "$tmp/err" || fail "rm unknown: $(cat "$tmp/err")"
[ "$(count runs)" = 3 ] && [ "$(count steps)" = 900 ] || fail "a refused rm removed a run"
if "$runmon" --db "$db" rm a a 2>"$tmp/err"; then fail "rm of a run named twice"; fi
grep -q "run 'a' is named twice" "$tmp/err" || fail "rm a a: $(cat "$tmp/err")"

# rm takes every row of the run, and only of that run.
"$runmon" --db "$db" rm a b >"$tmp/out" || fail "rm a b: exit $?"
grep -q "^removed a: 300 steps" "$tmp/out" && grep -q "^removed b: 300 steps" "$tmp/out" || fail "rm: $(cat "$tmp/out")"
for t in runs; do [ "$(count $t)" = 1 ] || fail "rm left $(count $t) $t"; done
for t in steps batches; do [ "$(count $t)" = 300 ] || fail "rm left $(count $t) rows of $t"; done
for t in findings buckets bucket_levels imports; do
	[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM $t WHERE run_id NOT IN (SELECT id FROM runs)")" = 0 ] ||
		fail "rm left rows of $t behind"
done
"$runmon" --db "$db" runs | grep -q "^c " || fail "rm removed the run it was not given"
if "$runmon" --db "$db" rm 2>"$tmp/err"; then fail "rm without a run exited 0"; fi
grep -q "name the runs to remove" "$tmp/err" || fail "rm with no run: $(cat "$tmp/err")"

# mv: the data and the report history follow; a taken name is refused.
"$runmon" --db "$db" report --all --keep -o "$tmp/r1.html" >/dev/null 2>&1 || true
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM report_runs WHERE run = 'c'")" = 1 ] || fail "the report kept no history of c"
"$runmon" --db "$db" mv c acme/llm/c2 >"$tmp/out" || fail "mv: exit $?"
grep -q "^renamed c to acme/llm/c2$" "$tmp/out" || fail "mv: $(cat "$tmp/out")"
[ "$(sqlite3 "$db" "SELECT entity || '|' || project || '|' || name FROM runs")" = "acme|llm|c2" ] || fail "mv: $(sqlite3 "$db" 'SELECT * FROM runs')"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM report_runs WHERE run = 'acme/llm/c2'")" = 1 ] || fail "mv: the report history stayed behind"
"$runmon" --db "$db" diagnose c2 >"$tmp/out" || true
grep -q "^run acme/llm/c2: 300 loss points" "$tmp/out" || fail "diagnose after mv: $(head -2 "$tmp/out")"
"$runmon" --db "$db" simulate --steps 300 --run d >/dev/null
if "$runmon" --db "$db" mv d acme/llm/c2 2>"$tmp/err"; then fail "mv onto a taken name exited 0"; fi
grep -q "there is a run 'acme/llm/c2' already" "$tmp/err" || fail "mv taken: $(cat "$tmp/err")"
if "$runmon" --db "$db" mv d bad/name 2>"$tmp/err"; then fail "mv to a two-part name exited 0"; fi
grep -q "'bad/name' is not a run name" "$tmp/err" || fail "mv bad: $(cat "$tmp/err")"
if "$runmon" --db "$db" mv d 2>/dev/null; then fail "mv with one name exited 0"; fi
# an empty part of a W&B path is no name (issue 67's mutant took 'acme//x')
for bad in 'acme//x' '/llm/x' 'acme/llm/'; do
	if "$runmon" --db "$db" mv d "$bad" 2>"$tmp/err"; then fail "mv to '$bad' exited 0"; fi
	grep -q "'$bad' is not a run name" "$tmp/err" || fail "mv '$bad': $(cat "$tmp/err")"
done
[ "$(count runs)" = 2 ] || fail "a refused mv changed the runs"

# demo without --db: its own file beside the default database, said so.
mkdir "$tmp/home"
HOME=$tmp/home XDG_DATA_HOME= RUNMON_DB= "$runmon" demo --steps 2000 >"$tmp/out" 2>&1 || fail "demo: $(cat "$tmp/out")"
own=$tmp/home/.local/share/runmon/demo.db
grep -q "the runs are in $own (the demo's own database" "$tmp/out" || fail "demo does not say where: $(head -1 "$tmp/out")"
[ "$(sqlite3 "$own" "SELECT COUNT(*) FROM runs")" = 3 ] || fail "demo's database has not its three runs"
[ ! -e "$tmp/home/.local/share/runmon/runmon.db" ] || fail "demo without --db wrote the default database"
RUNMON_DB=$db "$runmon" demo --steps 2000 >"$tmp/out" 2>&1 || fail "demo under RUNMON_DB: $(cat "$tmp/out")"
"$runmon" --db "$db" runs | grep -q "^demo-random " || fail "demo under RUNMON_DB wrote elsewhere"

# runs (issue 50.6): the last verdict, true composition for simulated runs,
# columns that a long name shifts but never breaks, a schema in the JSON.
r=$tmp/r.db
"$runmon" --db "$r" simulate --strategy interleaved --steps 3000 --run ok >/dev/null
"$runmon" --db "$r" simulate --steps 3000 --run a-long-sweep-run-name-lr3e-4-bs64-seed17-warmup500 >/dev/null
"$runmon" --db "$r" simulate --steps 3000 --run never >/dev/null
"$runmon" --db "$r" diagnose ok >/dev/null || fail "diagnose ok"
"$runmon" --db "$r" diagnose a-long-sweep-run-name-lr3e-4-bs64-seed17-warmup500 >/dev/null && fail "the chunked run passed"
"$runmon" --db "$r" runs >"$tmp/runs.txt"
python3 - "$tmp/runs.txt" <<'PY' || fail "runs table: $(cat "$tmp/runs.txt")"
import sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0]
cols = ["RUN", "SOURCE", "STEPS", "RANGE", "WITH BATCHES", "LOSS KEY", "UPDATED", "VERDICT", "COMPOSITION FROM"]
at = [head.index(c) for c in cols]
assert at == sorted(at), head
rows = {l.split()[0]: l for l in lines[1:]}
for name, l in rows.items():
    # every column starts where its header does, however long the name
    assert l[at[1]:].startswith("sim "), (name, l)
    assert l[at[6]:at[6] + 20].endswith("Z"), (name, l)
    assert l[at[8]:] == "bucket, n, max_len", (name, l[at[8]:])
verdict = {n: l[at[7]:at[8]].strip() for n, l in rows.items()}
assert verdict["ok"] == "healthy", verdict
assert verdict["never"] == "-", verdict
assert verdict["a-long-sweep-run-name-lr3e-4-bs64-seed17-warmup500"] in ("warn: homogeneous batching", "critical: homogeneous batching"), verdict
PY
"$runmon" --db "$r" runs --json >"$tmp/runs.json"
python3 - "$tmp/runs.json" <<'PY' || fail "runs --json: $(head -c 400 "$tmp/runs.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "runmon.runs/1"
by = {r["run"]: r for r in doc["runs"]}
assert by["never"]["verdict"] is None and by["ok"]["verdict"]["healthy"] is True, by
assert by["ok"]["verdict"]["severity"] == "info" and by["ok"]["composition"] == "bucket, n, max_len", by["ok"]
PY
echo "e2e housekeeping: all checks passed"
