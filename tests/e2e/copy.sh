#!/bin/sh
# End-to-end: runmon copy between SQLite and a real PostgreSQL server
# (run through tests/tools/pg/with_cluster.sh). A store with every kind of row
# (lengths as blobs, NaN and infinite losses, evals, fitted levels and
# length factors, findings, imports, a W&B run, text with tabs, newlines and
# backslashes, a file position) goes to PostgreSQL and back, and every table
# comes back row for row, with the report history and the alert log;
# copying again changes nothing; named runs; two
# copies of one run at once; the views answer on PostgreSQL as on SQLite;
# the other commands refuse a PostgreSQL URI without showing its password.
# Usage: copy.sh RUNMON DATA
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"
pg=${RUNMON_TEST_PG:?run through tests/tools/pg/with_cluster.sh}
a=$tmp/a.db
b=$tmp/b.db
"$runmon" --db "$a" simulate --strategy chunked --steps 3000 --lens --run lensy >/dev/null
"$runmon" --db "$a" demo --steps 2000 >/dev/null # fitted levels, length factors, findings
"$runmon" --db "$a" import --run imp "$data/wandb-history.jsonl" >/dev/null # NaN, Infinity, evals
"$runmon" --db "$a" import "$data/logs/icefall.log" >/dev/null # a loss per rank
"$runmon" --db "$a" import "$data/logs/quirks/gan-brackets.log" >/dev/null # another loss beside the one diagnosed
"$runmon" --db "$a" diagnose lensy >/dev/null || true
sqlite3 "$a" "UPDATE runs SET entity = 'acme', project = 'llm', source = 'wandb' WHERE name = 'imp';
UPDATE runs SET config_json = '{\"note\": \"tab' || char(9) || 'newline' || char(10) || 'back\\slash \\N\"}',
       display_name = 'quote '' and ' || char(13) WHERE name = 'lensy';
UPDATE steps SET loss = 9e999 WHERE step = 3 AND run_id = (SELECT id FROM runs WHERE name = 'imp');
INSERT INTO tails VALUES ('/var/log/train.log', (SELECT id FROM runs WHERE name = 'lensy'), 2049, 77, 123456, 789, 1764396000.5, 1024, -8070450532247928832);"
# The history beside the runs: two reports (what each saw) and the alert log.
SOURCE_DATE_EPOCH=1764396000 "$runmon" --db "$a" report --all -o /dev/null || true
SOURCE_DATE_EPOCH=1764482400 "$runmon" --db "$a" report --all -o /dev/null || true
sqlite3 "$a" "INSERT INTO alerts(finding_id, fingerprint, channel, severity, sent_at, status) VALUES
  (7, 'fp1', 'stdout', 'warn', 1764396000.25, 'sent'), (NULL, 'fp2', 'webhook:ab12', 'critical', 1764396001, 'failed')"
[ "$(sqlite3 "$a" "SELECT COUNT(*) FROM steps WHERE loss IS NULL AND nan_mask & 1")" -ge 1 ] || fail "no NaN loss in the fixture"
[ "$(sqlite3 "$a" "SELECT COUNT(*) FROM rank_losses")" = 6 ] || fail "no rank losses in the fixture"
[ "$(sqlite3 "$a" "SELECT COUNT(*) FROM other_losses")" = 4 ] || fail "no other losses in the fixture"
[ "$(sqlite3 "$a" "SELECT COUNT(*) FROM steps WHERE loss > 1e308 OR loss < -1e308")" = 2 ] || fail "no infinite losses in the fixture"

"$runmon" copy --from "$a" --to "$pg" --all >"$tmp/out" || fail "copy to PostgreSQL: $(cat "$tmp/out")"
grep -q "^copied lensy: 3000 steps, 3000 batches, 6 buckets" "$tmp/out" || fail "copy output: $(cat "$tmp/out")"
grep -q "^7 runs copied to postgresql://runmon@/runmon" "$tmp/out" || fail "copy summary: $(cat "$tmp/out")"
"$runmon" copy --from "$pg" --to "$b" --all >/dev/null || fail "copy from PostgreSQL"

# Every table, row for row: runs by name (ids are each store's own),
# children with the run's name for its id, identity ids left out.
same() { # A B: the two SQLite stores hold the same rows
	python3 - "$1" "$2" <<'PY'
import sqlite3, sys
def rows(path):
    c = sqlite3.connect(path)
    names = {i: (e, p, n) for i, e, p, n in c.execute("SELECT id, entity, project, name FROM runs")}
    out = {}
    reports = dict(c.execute("SELECT id, generated_at FROM reports"))
    for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"):
        cols = [r[1] for r in c.execute(f"PRAGMA table_info({t})")]
        keep = [x for x in cols if x not in ("id", "finding_id")]  # each store's own ids
        got = []
        for r in c.execute(f"SELECT {', '.join(chr(34) + x + chr(34) for x in keep)} FROM {t}"):
            r = list(r)
            for col, ids in (("run_id", names), ("report_id", reports)):  # ids as what they name
                if col in keep:
                    r[keep.index(col)] = ids[r[keep.index(col)]]
            got.append(repr(r))
        out[t] = sorted(got)
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a.keys() == b.keys(), (a.keys(), b.keys())
for t in a:
    if a[t] != b[t]:
        diff = sorted(set(a[t]) ^ set(b[t]))[:3]
        sys.exit(f"table {t}: {len(a[t])} rows vs {len(b[t])}; first differences: {diff}")
print(sum(len(v) for v in a.values()), "rows in", len(a), "tables")
PY
}
n=$(same "$a" "$b") || fail "SQLite -> PostgreSQL -> SQLite changed rows"
case $n in [0-9][0-9][0-9][0-9]*" rows in 18 tables") ;; *) fail "compared too little: $n" ;; esac
grep -q "7 runs copied to .*, with 2 reports and 2 new alerts" "$tmp/out" || fail "history summary: $(tail -1 "$tmp/out")"

# Again: nothing changes, on PostgreSQL or back.
counts="SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM steps), (SELECT COUNT(*) FROM batches), (SELECT COUNT(*) FROM findings), (SELECT max(id) FROM runs), (SELECT COUNT(*) FROM reports), (SELECT COUNT(*) FROM report_runs), (SELECT COUNT(*) FROM alerts)"
before=$(psql -X -At "$pg" -c "$counts")
"$runmon" copy --from "$a" --to "$pg" --all >/dev/null || fail "second copy"
after=$(psql -X -At "$pg" -c "$counts")
[ "$before" = "$after" ] || fail "a second copy changed PostgreSQL: $before -> $after"
"$runmon" copy --from "$pg" --to "$b" --all >/dev/null || fail "second copy back"
same "$a" "$b" >/dev/null || fail "a second copy back changed rows"

# The diagnosis of a run read back is the same.
"$runmon" --db "$a" diagnose demo-homogeneous --json >"$tmp/da.json" || [ $? = 1 ]
"$runmon" --db "$b" diagnose demo-homogeneous --json >"$tmp/db.json" || [ $? = 1 ]
cmp -s "$tmp/da.json" "$tmp/db.json" || fail "the diagnosis differs after the round trip"

# The views answer on PostgreSQL as on SQLite.
for q in "SELECT COUNT(*), ROUND(CAST(SUM(adjusted) AS numeric), 6) FROM adjusted_loss" \
	"SELECT COUNT(*), ROUND(CAST(SUM(adjusted) AS numeric), 6) FROM length_adjusted_loss" \
	"SELECT COUNT(*), ROUND(CAST(SUM(mean_loss) AS numeric), 6) FROM bucket_loss"; do
	p=$(psql -X -At -F'|' "$pg" -c "$q")
	s=$(sqlite3 "$a" "$(echo "$q" | sed 's/CAST(\(SUM([a-z_]*)\) AS numeric)/\1/')")
	[ "$(echo "$p" | cut -d'|' -f1)" = "$(echo "$s" | cut -d'|' -f1)" ] || fail "$q: $p vs $s"
	python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-6 * max(1, abs(a)))" \
		"$(echo "$p" | cut -d'|' -f2)" "$(echo "$s" | cut -d'|' -f2)" || fail "$q: $p vs $s"
done

# Named runs only; an unknown name is refused before anything is written.
"$runmon" copy --from "$pg" --to "$tmp/c.db" acme/llm/imp >/dev/null || fail "copy of a named run"
[ "$(sqlite3 "$tmp/c.db" "SELECT entity || '/' || project || '/' || name FROM runs")" = acme/llm/imp ] || fail "named copy"
set +e
"$runmon" copy --from "$a" --to "$tmp/d.db" lensy nosuchrun 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "no run 'nosuchrun'" "$tmp/err" || fail "unknown run: exit $rc, $(cat "$tmp/err")"
[ "$(sqlite3 "$tmp/d.db" "SELECT COUNT(*) FROM runs")" = 0 ] || fail "an unknown run let others be copied"

# Two copies of one run at once: they take turns, both succeed, one result.
"$runmon" copy --from "$a" --to "$pg" lensy >/dev/null &
p1=$!
"$runmon" copy --from "$a" --to "$pg" lensy >/dev/null || fail "concurrent copy"
wait $p1 || fail "concurrent copy (first)"
[ "$(psql -X -At "$pg" -c "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'lensy'")" = 3000 ] \
	|| fail "concurrent copies left the wrong rows"

# A copy that fails half-way through a run (a trigger refuses its evals,
# after its steps went in) leaves that run as it was.
sqlite3 "$a" "INSERT INTO steps(run_id, step, loss, nan_mask) SELECT id, 99, 0.5, 0 FROM runs WHERE name = 'imp'"
psql -X -q "$pg" -c "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RAISE EXCEPTION 'refused by a test trigger'; END \$\$" \
	-c "CREATE TRIGGER refuse BEFORE INSERT ON evals FOR EACH ROW EXECUTE FUNCTION refuse()"
imp_steps="SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'imp'"
before=$(psql -X -At "$pg" -c "$imp_steps")
set +e
"$runmon" copy --from "$a" --to "$pg" acme/llm/imp >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ $rc = 4 ] && grep -q "refused by a test trigger" "$tmp/err" || fail "a failing copy: exit $rc, $(cat "$tmp/err")"
[ "$(psql -X -At "$pg" -c "$imp_steps")" = "$before" ] || fail "a failed copy left the run half-written"
psql -X -q "$pg" -c "DROP TRIGGER refuse ON evals"
"$runmon" copy --from "$a" --to "$pg" acme/llm/imp >/dev/null || fail "the copy after the failure"
[ "$(psql -X -At "$pg" -c "$imp_steps")" = $((before + 1)) ] || fail "the copy after the failure did not add the step"

# Usage errors, and the other commands refuse a PostgreSQL URI without
# showing its password.
for bad in "--from $a" "--to $b --all" "--from $a --to $a --all" "--from $a --to $b" "--from $a --to $b --all lensy"; do
	set +e
	# shellcheck disable=SC2086
	"$runmon" copy $bad >/dev/null 2>&1
	rc=$?
	set -e
	[ $rc = 2 ] || fail "copy $bad: exit $rc, not 2"
done
secret=$(echo "$pg" | sed 's|postgresql://runmon@|postgresql://runmon:S3cretPw@|')
set +e
"$runmon" --db "$secret" runs >"$tmp/out" 2>"$tmp/err"
rc=$?
"$runmon" copy --from "$secret" --to "$b" --all >>"$tmp/out" 2>>"$tmp/err"
rc2=$?
set -e
[ $rc = 4 ] && grep -q "password authentication failed" "$tmp/err" || fail "runs with a wrong password: exit $rc, $(cat "$tmp/err")"
[ $rc2 != 0 ] || fail "a wrong password was accepted"
! grep -q S3cretPw "$tmp/out" "$tmp/err" || fail "the password was shown: $(cat "$tmp/err")"
grep -q "runmon:\*\*\*@" "$tmp/err" || fail "the database is not named redacted: $(cat "$tmp/err")"
echo "copy: SQLite -> PostgreSQL -> SQLite row for row ($n), idempotent, named, concurrent, views agree"
