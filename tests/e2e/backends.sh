#!/bin/sh
# End-to-end on both backends: every command does the same work on a SQLite
# file and on PostgreSQL (RUNMON_TEST_PG, from tests/tools/pg/with_cluster.sh),
# and the two give the same output and the same rows, table by table (the
# PostgreSQL store is copied back to SQLite to be compared).
# Usage: with_cluster.sh backends.sh RUNMON FAKE_WANDB DATA
set -eu
runmon=$1
fake=$2
data=$3
. "$(dirname "$0")/common.sh"
pg=$RUNMON_TEST_PG
lite=$tmp/lite.db
KEY=0123456789abcdef0123456789abcdef01234567
export WANDB_API_KEY=$KEY

# Times and database names differ between the two by nature.
quote() { printf '%s' "$1" | sed 's/[][\.*^$?+(){}|#&]/\\&/g'; }
pg_re=$(quote "$pg")
lite_re=$(quote "$lite")
norm() {
	sed -E "s#$pg_re#DB#g; s#$lite_re#DB#g; s#[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z#TIME#g" "$1" |
		sed -E 's#, [0-9.]+ s \(#, N s (#; s#"generated": *"[^"]*"#"generated": "TIME"#; s#"(generated_at|synced_at)": *[0-9.e+]+#"\1": 0#g'
}

# both ARGS...: runmon ARGS on each backend; the exit codes and outputs
# (standard output and error) must be the same.
both() {
	set +e
	"$runmon" --db "$lite" "$@" >"$tmp/lite.out" 2>"$tmp/lite.err"
	a=$?
	"$runmon" --db "$pg" "$@" >"$tmp/pg.out" 2>"$tmp/pg.err"
	b=$?
	set -e
	[ $a = $b ] || fail "$*: exit $a on SQLite, $b on PostgreSQL: $(cat "$tmp/pg.err")"
	for f in out err; do
		norm "$tmp/lite.$f" >"$tmp/l.$f"
		norm "$tmp/pg.$f" >"$tmp/p.$f"
		cmp -s "$tmp/l.$f" "$tmp/p.$f" || fail "$*: standard $f differs:
$(diff "$tmp/l.$f" "$tmp/p.$f" | head -20)"
	done
	return $a
}

# Each table's rows, by run name, without the columns that hold the time
# of writing: rows(DB) prints them sorted.
rows() {
	sqlite3 "$1" "
	CREATE TEMP VIEW rn AS SELECT id, entity || '/' || project || '/' || name AS run FROM runs;
	SELECT 'runs', source, entity, project, name, display_name, state, quote(created_at), quote(heartbeat_at),
	       config_json, loss_key, last_step, sync_cursor, remote_last_step, history_lines FROM runs;
	SELECT 'steps', run, step, quote(loss), quote(lr), quote(epoch), quote(grad_norm), quote(runtime), quote(ts),
	       nan_mask FROM steps JOIN rn ON rn.id = run_id;
	SELECT 'batches', run, step, rank, micro, bucket, n, min_len, max_len, quote(mean_len), tokens, padded_tokens,
	       hex(lens) FROM batches JOIN rn ON rn.id = run_id;
	SELECT 'evals', run, step, key, quote(value) FROM evals JOIN rn ON rn.id = run_id;
	SELECT 'rank_losses', run, step, rank, quote(loss) FROM rank_losses JOIN rn ON rn.id = run_id;
	SELECT 'other_losses', run, key, step, quote(loss) FROM other_losses JOIN rn ON rn.id = run_id;
	SELECT 'buckets', run, bucket, lo, hi FROM buckets JOIN rn ON rn.id = run_id;
	SELECT 'findings', run, detector, severity, first_step, last_step, quote(statistic), quote(p_value),
	       evidence_json FROM findings JOIN rn ON rn.id = run_id;
	SELECT 'imports', run, path, format, lines, steps, batches, replaced, restarts, skipped, composition
	       FROM imports JOIN rn ON rn.id = run_id;
	SELECT 'bucket_levels', run, bucket, scale, quote(shift), quote(level) FROM bucket_levels JOIN rn ON rn.id = run_id;
	SELECT 'bucket_labels', run, bucket, label FROM bucket_labels JOIN rn ON rn.id = run_id;
	SELECT 'length_levels', run, scale, quote(slope), quote(ref_len), quote(r2) FROM length_levels JOIN rn ON rn.id = run_id;
	SELECT 'length_factors', run, quote(lo), quote(hi), quote(effect) FROM length_factors JOIN rn ON rn.id = run_id;
	SELECT 'tails', run, path, dev, ino, offset, lineno FROM tails JOIN rn ON rn.id = run_id;
	SELECT 'alerts', fingerprint, channel, severity, status FROM alerts;
	SELECT 'report_runs', run, severity, verdict, last_step FROM report_runs;
	SELECT 'report_findings', run, detector, severity, first_step FROM report_findings;
	" | sort
}

# The two stores hold the same rows.
same_rows() {
	rm -f "$tmp/back.db"
	"$runmon" copy --from "$pg" --to "$tmp/back.db" --all >/dev/null || fail "copy back: $*"
	rows "$lite" >"$tmp/lite.rows"
	rows "$tmp/back.db" >"$tmp/pg.rows"
	cmp -s "$tmp/lite.rows" "$tmp/pg.rows" || fail "$*: the stores differ:
$(diff "$tmp/lite.rows" "$tmp/pg.rows" | head -20)"
	echo "  $*: $(wc -l <"$tmp/lite.rows") rows alike"
}

# 1. Import: every format the fixtures hold, restarts and replaced rows.
both import "$data/sidecar.jsonl" "$data/wandb-history.jsonl" || fail "import: $(cat "$tmp/pg.err")"
both import --run sc "$data/sidecar.csv" || fail "import csv"
both import "$data/trainer_state.json" "$data/tensorboard.csv" "$data/wandb_export.csv" || fail "import: $(cat "$tmp/pg.err")"
for f in "$data"/logs/*.log "$data"/logs/quirks/gan-brackets.log "$data"/logs/quirks/metrics.jsonl; do
	both import "$f" || fail "import $f: $(cat "$tmp/pg.err")"
done
grep -q "also kept, not diagnosed: loss_box_reg, loss_cls" "$tmp/pg.out" || fail "other losses: $(cat "$tmp/pg.out")"
both import --run lens --buckets 0,64,128,256 "$data/arrow/seqlen" >/dev/null 2>&1 || true
# Keys and a run name that are not UTF-8 (Latin-1, issue 49.12): stored
# alike on both backends, as U+FFFD; PostgreSQL refused them.
printf '{"step": 1, "loss": 2.5, "eval_r\351sum\351": 0.5}\n{"step": 2, "loss": 2.4}\n' >"$tmp/latin1.jsonl"
both import --run "$(printf 'caf\351')" "$tmp/latin1.jsonl" || fail "a Latin-1 key and run name: $(cat "$tmp/pg.err")"
[ "$(sqlite3 "$lite" "SELECT hex(key) FROM evals WHERE key LIKE 'eval_r%sum%'")" = 6576616C5F72EFBFBD73756DEFBFBD ] \
	|| fail "a Latin-1 key is not stored as U+FFFD"
# A simulated run and imported data are not mixed unasked (issue 50.2), on
# both: PostgreSQL's EXISTS is a boolean, which the check must read as one.
both simulate --steps 200 --run guarded || fail "simulate guarded: $(cat "$tmp/pg.err")"
if both import --run guarded "$tmp/latin1.jsonl"; then fail "an import into a simulated run was not refused"; fi
grep -q "run 'guarded' holds a simulated run" "$tmp/pg.err" || fail "guard on PostgreSQL: $(cat "$tmp/pg.err")"
both import --replace --run guarded "$tmp/latin1.jsonl" || fail "import --replace: $(cat "$tmp/pg.err")"
same_rows import

# 2. A bad line rejects the whole file and keeps nothing (exit 2 on both).
if both import --run bad "$data/sidecar.jsonl" "$data/bad.jsonl"; then fail "a bad file was taken"; fi
[ "$(cat "$tmp/lite.out" "$tmp/lite.err" | grep -c .)" -gt 0 ] || fail "no message for the bad file"
same_rows "a refused import"

# Importing again changes nothing.
both import "$data/sidecar.jsonl" "$data/wandb-history.jsonl" || fail "import again: $(cat "$tmp/pg.err" "$tmp/lite.err")"
both import "$data/sidecar.jsonl" "$data/wandb-history.jsonl" || fail "import again: $(cat "$tmp/pg.err" "$tmp/lite.err")"

# 3. Simulate and diagnose: the same verdicts, levels and findings.
both simulate --strategy chunked --steps 8000 --run chunked --spikes bucket >/dev/null || fail simulate
both simulate --strategy interleaved --steps 6000 --run inter --ranks 4 --lens >/dev/null || fail simulate
both simulate --strategy chunked --steps 4000 --run nob --no-bucket --cumulative >/dev/null || fail simulate
for r in chunked inter nob sc data; do
	both diagnose "$r" >/dev/null || [ $? = 1 ] || fail "diagnose $r: $(cat "$tmp/pg.err")"
	both diagnose --json "$r" >/dev/null || [ $? = 1 ] || fail "diagnose --json $r"
done
grep -q '"verdict"' "$tmp/pg.out" || fail "no JSON diagnosis: $(head -c 300 "$tmp/pg.out")"
same_rows diagnose

# 4. Demo, runs, buckets.
both demo --steps 3000 >/dev/null || [ $? = 1 ] || fail "demo: $(cat "$tmp/pg.err")"
both runs || fail "runs"
grep -q "demo-homogeneous" "$tmp/pg.out" || fail "runs on PostgreSQL: $(cat "$tmp/pg.out")"
both buckets --k 3 "$data/arrow/seqlen" || fail "buckets"
same_rows demo

# 5. Report twice: the second says what changed since the first, kept in
# each store.
both report --all --format json -o - >/dev/null || [ $? = 1 ] || fail "report: $(cat "$tmp/pg.err")"
both simulate --strategy chunked --steps 3000 --run late >/dev/null || fail simulate
both report --all --format md -o - >/dev/null || [ $? = 1 ] || fail "report 2: $(cat "$tmp/pg.err")"
grep -q "1 new" "$tmp/pg.out" || fail "the second report saw no new run: $(head -5 "$tmp/pg.out")"
same_rows report
# mv and rm (issue 50.2): one transaction each, the report history renamed.
both mv late late-renamed || fail "mv: $(cat "$tmp/pg.err")"
if both rm demo-random nosuch; then fail "rm of an unknown run exited 0"; fi
both rm demo-random || fail "rm: $(cat "$tmp/pg.err")"
[ "$(sqlite3 "$lite" "SELECT COUNT(*) FROM report_runs WHERE run = 'late-renamed'")" = 1 ] || fail "mv: the history stayed"
same_rows housekeeping

# 6. Watch: a growing sidecar followed tick by tick, with a webhook.
side=$tmp/side.jsonl
head -n 2 "$data/sidecar.jsonl" >"$side"
both watch --once --offline --batches "side=$side" side >/dev/null || [ $? = 1 ] || fail "watch: $(cat "$tmp/pg.err")"
tail -n +3 "$data/sidecar.jsonl" >>"$side"
both watch --once --offline --batches "side=$side" side >/dev/null || [ $? = 1 ] || fail "watch 2: $(cat "$tmp/pg.err")"
same_rows watch

# 7. Sync from the fake W&B server, through faults, then killed with -9
# half-way and resumed: no gap, no duplicate, on either backend.
"$fake" --port-file "$tmp/port" --key "$KEY" --latency-ms 20 \
	--run "acme/llm/r1:steps=3000,nan=97" --run "acme/llm/big:steps=30000,nan=50,resets=2000" \
	--fault 500:2 --fault 429:2 --fault truncate:1 --retry-after 0.1 &
pids="$pids $!"
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
export WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")"
both sync --jobs 3 --page-size 500 acme/llm/r1 >/dev/null || fail "sync: $(cat "$tmp/pg.err")"
# The run's sync cursor, read by each engine's own client.
cursor() {
	q="SELECT COALESCE(MAX(sync_cursor), 0) FROM runs WHERE name = 'big'"
	case $1 in
	postgresql://*) psql -qAt "$1" -c "$q" 2>/dev/null || echo 0 ;;
	*) sqlite3 "$1" "$q" 2>/dev/null || echo 0 ;;
	esac
}
for db in "$lite" "$pg"; do
	# Killed as soon as its first windows are committed: a fixed delay was a
	# race on a loaded machine (under valgrind one try committed nothing,
	# the next all 120 windows).
	"$runmon" --db "$db" sync --jobs 2 --page-size 250 acme/llm/big >/dev/null 2>&1 &
	victim=$!
	for _ in $(seq $((1200 * ${RUNMON_TEST_SLOW:-1}))); do
		[ "$(cursor "$db")" -gt 0 ] && break
		sleep 0.05
	done
	kill -9 $victim 2>/dev/null || true
	wait $victim 2>/dev/null || true
	c=$(cursor "$db")
	[ "$c" -gt 0 ] && [ "$c" -lt 30000 ] || fail "a partial sync was expected on $db (cursor $c)"
	"$runmon" --db "$db" sync --jobs 4 acme/llm/big >/dev/null 2>"$tmp/sync.err" || fail "resume: $(cat "$tmp/sync.err")"
	echo "  killed at cursor $c of 30000, resumed"
done
both diagnose acme/llm/big >/dev/null || [ $? = 1 ] || fail "diagnose big: $(cat "$tmp/pg.err")"
same_rows "sync, kill -9 and resume"
"$fake" --dump "acme/llm/big:steps=30000,nan=50,resets=2000" | grep -c . >"$tmp/n"
[ "$(sqlite3 "$tmp/back.db" "SELECT COUNT(*) FROM steps JOIN runs r ON r.id = run_id WHERE r.name = 'big'")" = "$(cat "$tmp/n")" ] ||
	fail "big: not every row once"

# 8. A password in the URI works and is never shown, on success or failure.
pw=$(cut -d: -f5 "$PGPASSFILE")
secret=$(echo "$pg" | sed "s|postgresql://runmon@|postgresql://runmon:$pw@|")
PGPASSFILE=/dev/null "$runmon" --db "$secret" demo --steps 2000 >"$tmp/s.out" 2>&1 || [ $? = 1 ] || fail "demo with a password: $(cat "$tmp/s.out")"
PGPASSFILE=/dev/null "$runmon" --db "$secret" diagnose nosuchrun >>"$tmp/s.out" 2>&1 && fail "a missing run was found"
PGPASSFILE=/dev/null "$runmon" --db "$(echo "$secret" | sed 's|/runmon?|/nosuchdb?|')" runs >>"$tmp/s.out" 2>&1 && fail "a missing database was opened"
grep -q "Full reports: runmon --db postgresql://runmon:\*\*\*@" "$tmp/s.out" || fail "demo does not name the database redacted: $(cat "$tmp/s.out")"
! grep -q "$pw" "$tmp/s.out" || fail "the password was shown: $(grep "$pw" "$tmp/s.out")"
# A key=value string after postgresql:// goes to libpq as such (issue 35.12),
# its password never shown either.
host=$(echo "$pg" | sed -n 's|.*[?&]host=\([^&]*\).*|\1|p')
kv="postgresql://host=$host port=5432 dbname=runmon user=runmon password=$pw"
PGPASSFILE=/dev/null "$runmon" --db "$kv" runs >"$tmp/kv.out" 2>&1 || fail "a key=value string: $(cat "$tmp/kv.out")"
grep -q "sc" "$tmp/kv.out" || fail "a key=value string: no runs listed: $(cat "$tmp/kv.out")"
PGPASSFILE=/dev/null "$runmon" --db "postgresql://host=$host port=5432 dbname=nosuchdb user=runmon password=$pw" runs \
	>"$tmp/kv.out" 2>&1 && fail "a missing database was opened by key=value"
grep -q "password=\*\*\*" "$tmp/kv.out" || fail "key=value not named redacted: $(cat "$tmp/kv.out")"
! grep -q "$pw" "$tmp/kv.out" || fail "the key=value password was shown"

# 9. A role that may only read (a reporting one, Grafana's): runs, diagnose
# and report work and keep nothing; an import is refused, naming why.
psql -qAt "$pg" -c "CREATE ROLE reader LOGIN PASSWORD 'rpw'" -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader"
ro=$(echo "$pg" | sed 's|postgresql://runmon@|postgresql://reader:rpw@|')
kept=$(psql -qAt "$pg" -c "SELECT COUNT(*) FROM reports")
PGPASSFILE=/dev/null "$runmon" --db "$ro" runs >"$tmp/ro.out" 2>&1 || fail "runs as a reader: $(cat "$tmp/ro.out")"
PGPASSFILE=/dev/null "$runmon" --db "$ro" diagnose chunked >"$tmp/ro.out" 2>&1 || [ $? = 1 ] || fail "diagnose as a reader: $(cat "$tmp/ro.out")"
PGPASSFILE=/dev/null "$runmon" --db "$ro" report --all -o "$tmp/ro.html" 2>"$tmp/ro.err" || [ $? = 1 ] || fail "report as a reader: $(cat "$tmp/ro.err")"
grep -q "read-only database: this report is not kept" "$tmp/ro.err" || fail "report as a reader: $(cat "$tmp/ro.err")"
[ "$(psql -qAt "$pg" -c "SELECT COUNT(*) FROM reports")" = "$kept" ] || fail "a reader's report was kept"
set +e
PGPASSFILE=/dev/null "$runmon" --db "$ro" import --run ro "$data/sidecar.jsonl" >"$tmp/ro.out" 2>&1
rc=$?
set -e
[ $rc = 4 ] && grep -q "permission denied for table runs" "$tmp/ro.out" || fail "import as a reader: exit $rc, $(cat "$tmp/ro.out")"

echo "backends: SQLite and PostgreSQL alike through import, diagnose, demo, report, watch and sync"
