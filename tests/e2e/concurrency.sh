#!/bin/sh
# Many collectors on one PostgreSQL store (RUNMON_TEST_PG): 8 syncs of
# different runs and 2 of the same run at once, with readers running
# `report` throughout. Every row lands once, nothing deadlocks, every
# reader succeeds, and a writer held up by the other on its run says so.
# Usage: with_cluster.sh concurrency.sh RUNMON FAKE_WANDB
set -eu
runmon=$1
fake=$2
. "$(dirname "$0")/common.sh"
pg=$RUNMON_TEST_PG
KEY=0123456789abcdef0123456789abcdef01234567
export WANDB_API_KEY=$KEY

specs="acme/llm/shared:steps=10000,nan=97,resets=500"
for i in 0 1 2 3 4 5 6 7; do
	specs="$specs acme/llm/r$i:steps=$((2000 + 250 * i)),nan=$((50 + i))"
done
set --
for s in $specs; do set -- "$@" --run "$s"; done
"$fake" --port-file "$tmp/port" --key "$KEY" --latency-ms 40 "$@" &
pids="$pids $!"
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
export WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")"
"$runmon" --db "$pg" runs >/dev/null # the schema, before the crowd

# Readers: reports of every run, over and over, while the writers write.
(
	set +e
	n=0
	while [ ! -e "$tmp/stop" ]; do
		"$runmon" --db "$pg" report --all --format json -o "$tmp/report.json" >/dev/null 2>"$tmp/reader.err"
		rc=$?
		[ $rc -le 1 ] || { echo "reader: exit $rc: $(cat "$tmp/reader.err")" >"$tmp/reader.fail"; exit 1; }
		n=$((n + 1))
		echo $n >"$tmp/reads"
	done
) &
reader=$!

writers=""
for i in 0 1 2 3 4 5 6 7; do
	timeout 180 "$runmon" --db "$pg" sync --jobs 2 --page-size 250 "acme/llm/r$i" >"$tmp/w$i.out" 2>"$tmp/w$i.err" &
	writers="$writers $!"
done
for j in a b; do
	timeout 180 "$runmon" --db "$pg" sync --jobs 2 --page-size 250 acme/llm/shared >"$tmp/s$j.out" 2>"$tmp/s$j.err" &
	writers="$writers $!"
done
failed=0
for w in $writers; do wait "$w" || failed=$((failed + 1)); done
touch "$tmp/stop"
wait $reader || true
[ $failed = 0 ] || fail "$failed of 10 writers failed (124: a deadlock ran into the timeout): $(cat "$tmp"/w*.err "$tmp"/s*.err | head -5)"
[ ! -e "$tmp/reader.fail" ] || fail "$(cat "$tmp/reader.fail")"
[ "$(cat "$tmp/reads")" -ge 2 ] || fail "$(cat "$tmp/reads") reports read while the writers wrote"

# Every row of every run once: the server's rows, counted, and no more.
for s in $specs; do
	name=${s%%:*}
	name=${name##*/}
	want=$("$fake" --dump "$s" | grep -c .)
	got=$(psql -qAt "$pg" -c "SELECT COUNT(*), COUNT(DISTINCT step), MAX(r.sync_cursor)
		FROM steps JOIN runs r ON r.id = run_id WHERE r.name = '$name'")
	[ "$got" = "$want|$want|$want" ] || fail "$name: rows|steps|cursor $got, the server has $want"
done

# The two collectors of one run took turns, and the one that waited said
# who held the run.
grep -h "run 'acme/llm/shared' is being written by runmon pid [0-9]* on .*; waiting for it to commit" \
	"$tmp/sa.err" "$tmp/sb.err" >"$tmp/told" || fail "no writer said it waited: $(cat "$tmp/sa.err" "$tmp/sb.err")"
[ "$(wc -l <"$tmp/told")" -le 2 ] || fail "a writer said it waited more than once: $(cat "$tmp/told")"
! grep -l "waiting" "$tmp"/w*.err >/dev/null || fail "a collector of its own run waited: $(grep -h waiting "$tmp"/w*.err)"
echo "concurrency: 10 collectors, $(cat "$tmp/reads") reports read meanwhile, every row once; $(head -1 "$tmp/told")"
