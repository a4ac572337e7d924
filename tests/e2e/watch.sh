#!/bin/sh
# End-to-end: runmon watch with a local webhook receiver, Slack-shaped and
# Alertmanager-shaped payloads, dedup across restarts, retries, W&B alerts
# on the fake server, SIGTERM. Usage: watch.sh RUNMON FAKE_WANDB
set -eu
runmon=$1
fake=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/common.sh"
wait_file() { for _ in $(seq $((50 * ${RUNMON_TEST_SLOW:-1}))); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "no $1"; }
receiver() { # receiver NAME FAILS: sets $hook
	python3 "$here/receiver.py" "$tmp/$1.port" "$tmp/$1.log" "$2" &
	pids="$pids $!"
	wait_file "$tmp/$1.port"
	hook="http://127.0.0.1:$(cat "$tmp/$1.port")/hook"
}
db=$tmp/w.db
"$runmon" --db "$db" simulate --strategy chunked --steps 4000 --seed 3 --spikes bucket --reset-every 25 --run homog >/dev/null
"$runmon" --db "$db" simulate --strategy interleaved --steps 4000 --seed 3 --run inter >/dev/null

# 1. One tick: alerts for the homogeneous run only, on every channel.
receiver am 0; am=$hook
receiver slack 0; slack=$hook
"$runmon" --db "$db" watch --once --offline --webhook "$am" --slack-webhook "$slack" homog inter >"$tmp/out"
grep -q "^[0-9T:-]*Z ALERT critical homog RunmonHomogeneousBatching: homogeneous batching" "$tmp/out" || fail "stdout: $(cat "$tmp/out")"
grep -q "^[0-9T:-]*Z ALERT critical homog RunmonResetsByBucket: loss resets cluster in bucket 5" "$tmp/out" || fail "resets alert"
if grep -q " inter " "$tmp/out"; then fail "a healthy run alerted"; fi
python3 - "$tmp/am.log" "$tmp/slack.log" <<'PY' || fail "payloads"
import json, re, sys
am = [json.loads(l) for l in open(sys.argv[1])]
assert len(am) == 1, len(am)
d = am[0]
assert d["version"] == "4" and d["status"] == "firing" and len(d["alerts"]) == 2
for a in d["alerts"]:
    assert re.fullmatch(r"[0-9a-f]{16}", a["fingerprint"])
    assert a["labels"]["run"] == "homog" and a["labels"]["severity"] == "critical"
    assert a["annotations"]["fix"] and a["startsAt"].endswith("Z")
assert {a["labels"]["alertname"] for a in d["alerts"]} == {"RunmonHomogeneousBatching", "RunmonResetsByBucket"}
assert [a["labels"]["bucket"] for a in d["alerts"] if a["labels"]["detector"] == "resets_by_bucket"] == ["5"]
sl = [json.loads(l) for l in open(sys.argv[2])]
assert len(sl) == 1 and sl[0]["text"].startswith("runmon:") and len(sl[0]["blocks"]) == 2
assert all(b["type"] == "section" and len(b["text"]["text"]) < 3000 for b in sl[0]["blocks"])
PY

# 2. A restart: the same incidents alert nowhere again.
"$runmon" --db "$db" watch --once --offline --webhook "$am" --slack-webhook "$slack" homog inter >"$tmp/out2"
[ ! -s "$tmp/out2" ] || fail "alerted again: $(cat "$tmp/out2")"
[ "$(wc -l <"$tmp/am.log")" = 1 ] || fail "webhook got a second POST"
if sqlite3 "$db" "SELECT channel FROM alerts" | grep -q "127.0.0.1"; then fail "a webhook URL in the database"; fi

# 2b. The Slack URL is a secret (issue 67.4): from a file or the environment
# it stays out of the process list, and errors name the file, never the URL.
"$runmon" --db "$db" simulate --strategy chunked --steps 4000 --seed 4 --run homog2 >/dev/null
receiver slackf 0
printf '  %s  \n' "$hook" >"$tmp/slack.url"
"$runmon" --db "$db" watch --once --offline --slack-webhook-file "$tmp/slack.url" homog2 >/dev/null || fail "--slack-webhook-file"
[ "$(wc -l <"$tmp/slackf.log")" = 1 ] || fail "--slack-webhook-file: no post"
"$runmon" --db "$db" simulate --strategy chunked --steps 4000 --seed 5 --run homog3 >/dev/null
receiver slacke 0
RUNMON_SLACK_WEBHOOK=$hook "$runmon" --db "$db" watch --once --offline homog3 >/dev/null || fail "RUNMON_SLACK_WEBHOOK"
[ "$(wc -l <"$tmp/slacke.log")" = 1 ] || fail "RUNMON_SLACK_WEBHOOK: no post"
# --once is one look: a run it cannot find is exit 2, as the help says (a
# typo in a cron line must not pass as "watched") (issue 66).
set +e
"$runmon" --db "$db" watch --once --offline homog nosuch >"$tmp/typo.out" 2>"$tmp/err"
code=$?
set -e
[ $code = 2 ] && grep -q "no run 'nosuch'" "$tmp/err" || fail "watch --once of an unknown run: exit $code, $(cat "$tmp/err")"
set +e
"$runmon" --db "$db" watch --once --offline --slack-webhook-file "$tmp/no-such.url" homog >/dev/null 2>"$tmp/err"
code=$?
set -e
[ $code = 2 ] && grep -q "cannot read '.*no-such.url'" "$tmp/err" || fail "a missing webhook file: exit $code, $(cat "$tmp/err")"
printf 'not-a-url-but-s3cr3t\n' >"$tmp/bad.url"
set +e
"$runmon" --db "$db" watch --once --offline --slack-webhook-file "$tmp/bad.url" homog >/dev/null 2>"$tmp/err"
code=$?
set -e
[ $code = 2 ] && grep -q "the Slack webhook (.*bad.url) is no http(s) URL" "$tmp/err" || fail "a bad webhook file: exit $code, $(cat "$tmp/err")"
if grep -q s3cr3t "$tmp/err"; then fail "the webhook's text in an error"; fi
set +e
"$runmon" --db "$db" watch --once --offline --slack-webhook "$hook" --slack-webhook-file "$tmp/slack.url" homog >/dev/null 2>&1
code=$?
set -e
[ $code = 2 ] || fail "--slack-webhook with --slack-webhook-file: exit $code"

# 3. A receiver that answers 500 twice: delivered after retries.
receiver flaky 2
"$runmon" --db "$db" watch --once --offline --retry-wait 0.1 --webhook "$hook" homog >/dev/null
[ "$(wc -l <"$tmp/flaky.log")" = 1 ] || fail "no delivery after retries"
# 4. One that keeps failing: recorded as failed, sent on a later tick.
receiver down 1000
set +e
"$runmon" --db "$db" watch --once --offline --retry-max 1 --retry-wait 0.1 --webhook "$hook/secret-path?token=s3cr3t" homog \
	>/dev/null 2>"$tmp/err"
code=$?
set -e
# --once exits 3 so cron sees it; the webhook is named by scheme and host,
# its path (often its secret) hidden.
[ $code = 3 ] || fail "--once with a failed delivery: exit $code"
grep -q "alert delivery to webhook http://127.0.0.1:[0-9]*/.* failed, will retry next tick" "$tmp/err" \
	|| fail "failure warning: $(cat "$tmp/err")"
grep -q "an alert delivery failed (it is retried on the next run)" "$tmp/err" || fail "exit 3 unexplained"
if grep -q "s3cr3t\|secret-path" "$tmp/err"; then fail "the webhook's path in a message"; fi
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM alerts WHERE status = 'failed'")" -ge 1 ] || fail "failure recorded"
# A password holding an unescaped '/', '?' or '#' (issue 49.7): where the
# host begins is not sure, so nothing after the scheme shows.
set +e
"$runmon" --db "$db" watch --once --offline --retry-max 1 --retry-wait 0.1 \
	--webhook "http://hookuser:pw/x?y#z@127.0.0.1:9/hook" homog >/dev/null 2>"$tmp/err"
set -e
grep -q "alert delivery to webhook http://… failed" "$tmp/err" || fail "a webhook with a raw password: $(cat "$tmp/err")"
if grep -q "hookuser\|pw/x\|x?y\|y#z" "$tmp/err"; then fail "a webhook's password in a message: $(cat "$tmp/err")"; fi

# 4b. A bad line in a followed sidecar (issue 49.3): the good lines before
# it are kept, the position stays before it, and the watch goes on.
python3 -c 'import json
for s in range(4000, 4010): print(json.dumps({"step": s, "bucket": s % 3, "n": 4, "max_len": 100}))
print("{\"step\": 4010, \"bucket\": ")
for s in range(4011, 4020): print(json.dumps({"step": s, "bucket": s % 3, "n": 4, "max_len": 100}))' >"$tmp/side.jsonl"
set +e
"$runmon" --db "$db" watch --once --offline --batches "inter=$tmp/side.jsonl" inter >/dev/null 2>"$tmp/err"
set -e
grep -q "side.jsonl:11: .*(will retry next tick)" "$tmp/err" || fail "a sidecar's bad line: $(cat "$tmp/err")"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches WHERE step >= 4000")" = 10 ] || fail "the good lines before a bad one"
[ "$(sqlite3 "$db" "SELECT lineno FROM tails WHERE path LIKE '%side.jsonl'")" = 10 ] || fail "the position before the bad line"

# 5. W&B alerts on a synced run; the run is finished, so watch stops by itself.
KEY=0123456789abcdef0123456789abcdef01234567
"$fake" --port-file "$tmp/fake.port" --key "$KEY" --log "$tmp/fake.log" --run "acme/llm/r1:steps=3000" &
pids="$pids $!"
wait_file "$tmp/fake.port"
WANDB_API_KEY=$KEY WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/fake.port")" timeout 60 \
	"$runmon" --db "$db" watch --every 1 --wandb-alert acme/llm/r1 >"$tmp/out3" || fail "watch of a finished run"
grep -q "^[0-9T:-]*Z ALERT [a-z]* acme/llm/r1 RunmonHomogeneousBatching" "$tmp/out3" || fail "W&B run alert: $(cat "$tmp/out3")"
grep -q '^mutation NotifyScriptableRunAlert.*"runName":"r1".*"severity":"\(WARN\|ERROR\)".*"waitDuration":300000' \
	"$tmp/fake.log" || fail "W&B mutation: $(grep mutation "$tmp/fake.log")"

# 5a. W&B refuses an alert (a GraphQL error): recorded as failed, exit 3,
# and raised again on the next run, where it goes through.
"$fake" --port-file "$tmp/af.port" --key "$KEY" --log "$tmp/af.log" --fault alertfail:1 --run "acme/llm/r3:steps=3000" &
pids="$pids $!"
wait_file "$tmp/af.port"
before=$(sqlite3 "$db" "SELECT MAX(id) FROM alerts")
export WANDB_API_KEY=$KEY WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/af.port")"
set +e
"$runmon" --db "$db" watch --once --wandb-alert acme/llm/r3 >/dev/null 2>"$tmp/af.err"
rc=$?
set -e
[ "$rc" = 3 ] || fail "a refused W&B alert: exit $rc, $(cat "$tmp/af.err")"
grep -q "alert delivery to W&B alerts failed.*W&B did not accept the alert" "$tmp/af.err" || fail "the refusal unsaid: $(cat "$tmp/af.err")"
[ "$(sqlite3 "$db" "SELECT group_concat(DISTINCT status) FROM alerts WHERE channel = 'wandb' AND id > $before")" = failed ] ||
	fail "a refused W&B alert logged as: $(sqlite3 "$db" "SELECT status FROM alerts WHERE channel = 'wandb' AND id > $before")"
"$runmon" --db "$db" watch --once --wandb-alert acme/llm/r3 >/dev/null 2>"$tmp/af.err" || fail "the retry: $(cat "$tmp/af.err")"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM alerts WHERE channel = 'wandb' AND status = 'sent' AND id > $before")" -ge 1 ] || fail "the refused alert not raised again"
[ "$(grep -c '^mutation NotifyScriptableRunAlert' "$tmp/af.log")" -ge 2 ] || fail "no second try: $(grep mutation "$tmp/af.log")"
unset WANDB_API_KEY WANDB_BASE_URL

# 5b. Resets start clustering mid-run: the run grows between ticks (300
# steps per history request) and spikes in bucket 5 from step 5500 on.
"$fake" --port-file "$tmp/grow.port" --key "$KEY" --run "acme/llm/r2:steps=8000,grow=300,resets=5500" &
pids="$pids $!"
wait_file "$tmp/grow.port"
export WANDB_API_KEY=$KEY WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/grow.port")"
"$runmon" --db "$db" watch --once acme/llm/r2 >"$tmp/g1"
grep -q "^[0-9T:-]*Z ALERT critical acme/llm/r2 RunmonHomogeneousBatching" "$tmp/g1" || fail "first tick: $(cat "$tmp/g1")"
if grep -q RunmonResetsByBucket "$tmp/g1"; then fail "resets alert before the resets"; fi
timeout 60 "$runmon" --db "$db" watch --every 1 acme/llm/r2 >"$tmp/g2" || fail "watch of a growing run"
grep -q "^[0-9T:-]*Z ALERT critical acme/llm/r2 RunmonResetsByBucket: loss resets cluster in bucket 5" "$tmp/g2" ||
	fail "no resets alert mid-run: $(cat "$tmp/g2")"
if grep -q RunmonHomogeneousBatching "$tmp/g2"; then fail "verdict alerted twice"; fi
unset WANDB_API_KEY WANDB_BASE_URL

# 6. SIGTERM during a loop: exit 0, database intact.
sqlite3 "$db" ".backup '$tmp/term.db'" # with no alert sent yet, the first tick prints them
sqlite3 "$tmp/term.db" "DELETE FROM alerts"
"$runmon" --db "$tmp/term.db" watch --every 1 --offline homog inter >"$tmp/term.out" &
victim=$!
# Past the first tick (its alerts are out), so the handler is in place even
# when runmon starts slowly (valgrind, a loaded machine).
for i in $(seq 600); do [ -s "$tmp/term.out" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM $victim
set +e
wait $victim
rc=$?
set -e
[ $rc = 0 ] || fail "SIGTERM exit $rc"
[ -s "$tmp/term.out" ] || fail "SIGTERM: the first tick printed no alert"
[ "$(sqlite3 "$tmp/term.db" "PRAGMA integrity_check")" = ok ] || fail "integrity after SIGTERM"
# 7. A growing batch sidecar: the losses are stored, the batch composition
# arrives while the watch runs, its last line half-written.
"$runmon" simulate --strategy chunked --steps 4000 --seed 3 --spikes bucket --reset-every 25 --out "$tmp/sim" >/dev/null
"$runmon" --db "$db" import --run side "$tmp/sim/history.jsonl" >/dev/null
side=$tmp/side.jsonl
: >"$side"
"$runmon" --db "$db" watch --once --offline --batches "side=$side" side >"$tmp/s1"
# Without batches the loss alone speaks: homogeneous batching suspected (warn)
# and nothing surer; the batches then confirm it.
if [ -s "$tmp/s1" ]; then
	grep -q "ALERT warn side RunmonSuspectedHomogeneousBatching: suspected homogeneous batching (from the loss alone)" "$tmp/s1" \
		&& [ "$(grep -c ALERT "$tmp/s1")" = 1 ] || fail "alerted without batches: $(cat "$tmp/s1")"
fi
head -n 2000 "$tmp/sim/batches.jsonl" >"$side"
tail -n +2001 "$tmp/sim/batches.jsonl" | head -c 300 >>"$side"
"$runmon" --db "$db" watch --once --offline --batches "side=$side" side >"$tmp/s2"
grep -q "^[0-9T:-]*Z ALERT \(warn\|critical\) side RunmonHomogeneousBatching" "$tmp/s2" || fail "sidecar tick: $(cat "$tmp/s2")"
if grep -q "RunmonInstability" "$tmp/s2"; then fail "resets where no batch was recorded called instability"; fi
[ "$(sqlite3 "$db" "SELECT lineno FROM tails")" = 2002 ] || fail "position after a half-written line"
tail -n +2001 "$tmp/sim/batches.jsonl" | tail -c +301 >>"$side"
"$runmon" --db "$db" watch --once --offline --batches "side=$side" side >"$tmp/s3"
[ "$(sqlite3 "$db" "SELECT offset FROM tails")" = "$(wc -c <"$side")" ] || fail "sidecar not read to its end"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'side'")" = 4000 ] ||
	fail "sidecar rows"
if grep -q RunmonHomogeneousBatching "$tmp/s3"; then fail "verdict alerted twice"; fi
# 7a. A sidecar rewritten in place past its old offset before the next tick
# (a trainer restarted with open(path, "w"), copytruncate then writes): the
# file is read again from its start, no row twice (issue 35.4). Twice: the
# start changed (its hash), then the same start with longer lines after it
# (the old offset no longer ends a line).
"$runmon" --db "$db" import --run rew "$tmp/sim/history.jsonl" >/dev/null
rew=$tmp/rew.jsonl
head -n 300 "$tmp/sim/batches.jsonl" >"$rew"
"$runmon" --db "$db" watch --once --offline --batches "rew=$rew" rew >/dev/null 2>"$tmp/r1" || fail "rewrite tick 1"
cat >"$tmp/rewrite.py" <<'PY'
import json, sys
# rewrite.py SRC DST N K: DST, truncated in place (the same inode, as
# open(path, "w") keeps it), gets SRC's first N rows, "restart": 1 in the
# first K of them and "restart": 22 in the rest.
src, dst, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [json.loads(l) for l in open(src)][:n]
with open(dst, "r+") as f:
    f.truncate(0)
    for i, r in enumerate(rows):
        r["restart"] = 1 if i < k else 22
        f.write(json.dumps(r) + "\n")
PY
python3 "$tmp/rewrite.py" "$tmp/sim/batches.jsonl" "$rew" 400 400
"$runmon" --db "$db" watch --once --offline --batches "rew=$rew" rew >/dev/null 2>"$tmp/r2" || fail "rewrite tick 2"
if grep -q "will retry" "$tmp/r2"; then fail "a rewritten sidecar read from mid-line: $(cat "$tmp/r2")"; fi
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'rew'")" = 400 ] \
	|| fail "rewritten sidecar: rows"
off=$(wc -c <"$rew")
[ "$(sqlite3 "$db" "SELECT offset FROM tails WHERE path LIKE '%rew.jsonl'")" = "$off" ] \
	|| fail "rewritten sidecar not read to its end"
head -c 1024 "$rew" >"$tmp/head1"
python3 "$tmp/rewrite.py" "$tmp/sim/batches.jsonl" "$rew" 500 40
cmp -s "$tmp/head1" "$(head -c 1024 "$rew" >"$tmp/head2"; echo "$tmp/head2")" || fail "the test's rewrite changed the file's start"
[ -n "$(tail -c +"$off" "$rew" | head -c 1)" ] || fail "the test's old offset still ends a line"
"$runmon" --db "$db" watch --once --offline --batches "rew=$rew" rew >/dev/null 2>"$tmp/r3" || fail "rewrite tick 3"
if grep -q "will retry" "$tmp/r3"; then fail "a rewritten sidecar read from mid-line: $(cat "$tmp/r3")"; fi
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'rew'")" = 500 ] \
	|| fail "rewritten sidecar, second time: rows"
# 7b. The same as a CSV sidecar (a .csv path): the header is read first,
# then the lines past the position; a half-written header waits.
python3 - "$tmp/sim/batches.jsonl" "$tmp/batches.csv" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cols = list(rows[0])
with open(sys.argv[2], "w") as f:
    f.write(",".join(cols) + "\n")
    for r in rows:
        f.write(",".join(str(r[c]) for c in cols) + "\n")
PY
"$runmon" --db "$db" import --run sidecsv "$tmp/sim/history.jsonl" >/dev/null
csv=$tmp/side.csv
head -c 10 "$tmp/batches.csv" >"$csv"
"$runmon" --db "$db" watch --once --offline --batches "sidecsv=$csv" sidecsv >"$tmp/c1" || fail "csv tick 1"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM tails WHERE path LIKE '%side.csv'")" = 0 ] || fail "position kept before the header"
head -n 2001 "$tmp/batches.csv" >"$csv"
tail -n +2002 "$tmp/batches.csv" | head -c 300 >>"$csv"
"$runmon" --db "$db" watch --once --offline --batches "sidecsv=$csv" sidecsv >"$tmp/c2"
grep -q "^[0-9T:-]*Z ALERT \(warn\|critical\) sidecsv RunmonHomogeneousBatching" "$tmp/c2" || fail "csv sidecar tick: $(cat "$tmp/c2")"
[ "$(sqlite3 "$db" "SELECT lineno FROM tails WHERE path LIKE '%side.csv'")" = "$(wc -l <"$csv")" ] || fail "csv position"
tail -n +2002 "$tmp/batches.csv" | tail -c +301 >>"$csv"
"$runmon" --db "$db" watch --once --offline --batches "sidecsv=$csv" sidecsv >"$tmp/c3"
[ "$(sqlite3 "$db" "SELECT offset FROM tails WHERE path LIKE '%side.csv'")" = "$(wc -c <"$csv")" ] || fail "csv not read to its end"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'sidecsv'")" = 4000 ] ||
	fail "csv sidecar rows"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM imports WHERE path LIKE '%side.csv'")" = 2 ] || fail "idle csv ticks logged"

# 7c. A console log (a .log path) that carries the losses and the batch
# lengths, no bucket ids, among banners and progress bars: one tick reads
# what is complete, the verdict comes from the lengths.
python3 - "$tmp/sim/history.jsonl" "$tmp/sim/batches.jsonl" "$tmp/console.txt" <<'PY'
import json, sys
hist = [json.loads(l) for l in open(sys.argv[1])]
bat = {r["step"]: r for r in map(json.loads, open(sys.argv[2]))}
with open(sys.argv[3], "w") as f:
    f.write("using world size: 1\n==========\n")
    for h in hist:
        b = bat[h["_step"]]
        if h["_step"] % 500 == 0:
            f.write(" 12%%|##        | %d/4000 [00:30<03:36, 15.0it/s, loss=%.3f]\n" % (h["_step"], h["train/loss"]))
        f.write("[rank0]: 2026-11-30 10:00:00 INFO train | step=%d loss=%.6f lr=%g n=%d max_len=%d tokens=%d\n"
                % (h["_step"], h["train/loss"], h["train/lr"], b["n"], b["max_len"], b["tokens"]))
PY
log=$tmp/train.log
head -n 2002 "$tmp/console.txt" >"$log"
tail -n +2003 "$tmp/console.txt" | head -c 40 >>"$log"
"$runmon" --db "$db" watch --once --offline --batches "console=$log" console >"$tmp/g1"
grep -q "^[0-9T:-]*Z ALERT \(warn\|critical\) console RunmonHomogeneousBatching" "$tmp/g1" || fail "console log tick: $(cat "$tmp/g1")"
[ "$(sqlite3 "$db" "SELECT lineno FROM tails WHERE path LIKE '%train.log'")" = 2002 ] || fail "console log position"
tail -n +2003 "$tmp/console.txt" | tail -c +41 >>"$log"
"$runmon" --db "$db" watch --once --offline --batches "console=$log" console >"$tmp/g2"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'console'")" = 4000 ] ||
	fail "console log steps"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'console'")" = 4000 ] ||
	fail "console log batches"

# 8. Another process imports the batches of a run being watched: the next
# tick re-diagnoses it although the watch itself read nothing new.
"$runmon" --db "$db" import --run late "$tmp/sim/history.jsonl" >/dev/null
"$runmon" --db "$db" watch --every 1 --offline --stats late >"$tmp/l1" 2>"$tmp/l1.err" &
watcher=$!
sleep 2
if grep -v RunmonSuspectedHomogeneousBatching "$tmp/l1" | grep -q ALERT; then # the loss alone may suspect it
	fail "alerted before the batches: $(cat "$tmp/l1")"
fi
"$runmon" --db "$db" import --run late "$tmp/sim/batches.jsonl" >/dev/null
# A bound on a hang, not a timing: the tick that notices diagnoses the whole
# run, which under valgrind on a loaded machine took longer than 40 s.
for _ in $(seq $((600 * ${RUNMON_TEST_SLOW:-1}))); do grep -q " RunmonHomogeneousBatching" "$tmp/l1" && break; sleep 0.1; done
kill -TERM $watcher
wait $watcher || fail "watch exit status"
grep -q "^[0-9T:-]*Z ALERT critical late RunmonHomogeneousBatching" "$tmp/l1" || fail "external import not noticed"
grep -q "^watch: [0-9]* ticks; first [0-9.]* ms CPU; later ticks median" "$tmp/l1.err" || fail "--stats: $(cat "$tmp/l1.err")"

# 9. A flood: with one message an hour allowed, the second run's alerts wait,
# unlogged, and a warning says so.
receiver rate 0
"$runmon" --db "$db" watch --once --offline --max-per-hour 1 --webhook "$hook" homog side >/dev/null 2>"$tmp/rate.err"
[ "$(wc -l <"$tmp/rate.log")" = 1 ] || fail "rate limit: $(wc -l <"$tmp/rate.log") messages"
grep -q "more than 1 alert messages in an hour to webhook http://127.0.0.1:[0-9]*/.*; holding the rest" "$tmp/rate.err" ||
	fail "no flood warning: $(cat "$tmp/rate.err")"
ch=$(sqlite3 "$db" "SELECT channel FROM alerts WHERE channel LIKE 'webhook:%' ORDER BY id DESC LIMIT 1")
[ "$(sqlite3 "$db" "SELECT COUNT(DISTINCT fingerprint) FROM alerts WHERE channel = '$ch'")" = 2 ] ||
	fail "held alerts were logged"

# 10. A delivery that failed is sent again on a later tick, even one that
# does not re-diagnose (nothing new arrived).
# The watch is stopped once both resends are logged: stopped as soon as the
# receiver had the message, a delivery whose answer was still on its way
# was cut short (seen on a loaded machine).
receiver later 1
"$runmon" --db "$db" watch --every 1 --offline --retry-max 0 --webhook "$hook" homog >/dev/null 2>&1 &
watcher=$!
wait_file "$tmp/later.log"
sent=0
for _ in $(seq $((100 * ${RUNMON_TEST_SLOW:-1}))); do
	ch=$(sqlite3 "$db" "SELECT channel FROM alerts WHERE status = 'failed' ORDER BY id DESC LIMIT 1" 2>/dev/null || true)
	sent=$(sqlite3 "$db" "SELECT COUNT(*) FROM alerts WHERE channel = '$ch' AND status = 'sent'" 2>/dev/null || echo 0)
	[ "$sent" = 2 ] && break
	sleep 0.1
done
kill -TERM $watcher
wait $watcher || fail "watch exit status"
[ "$sent" = 2 ] || fail "failed delivery not resent: $sent sent"

# 11. SIGTERM in the middle of a sync: the windows fetched so far are
# committed with the cursor, the rest is left, and a restart completes it.
"$fake" --port-file "$tmp/slow.port" --key "$KEY" --latency-ms 50 --run "acme/llm/slow:steps=100000" &
pids="$pids $!"
wait_file "$tmp/slow.port"
export WANDB_API_KEY=$KEY WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/slow.port")"
"$runmon" --db "$db" watch --every 1 acme/llm/slow >/dev/null 2>"$tmp/slow.err" &
watcher=$!
for _ in $(seq $((300 * ${RUNMON_TEST_SLOW:-1}))); do # until the first windows are in
	[ "$(sqlite3 "$db" "SELECT COALESCE(MAX(sync_cursor), 0) > 0 FROM runs WHERE name = 'slow'" 2>/dev/null)" = 1 ] && break
	sleep 0.05
done
kill -TERM $watcher
t0=$(date +%s)
wait $watcher || fail "SIGTERM mid-sync: exit status"
[ $(($(date +%s) - t0)) -le $((3 * ${RUNMON_TEST_SLOW:-1})) ] || fail "SIGTERM mid-sync took too long"
[ "$(sqlite3 "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity after SIGTERM mid-sync"
set -- $(sqlite3 -separator ' ' "$db" "SELECT r.sync_cursor, (SELECT COUNT(*) FROM steps WHERE run_id = r.id),
	(SELECT COUNT(*) FROM steps WHERE run_id = r.id AND step >= r.sync_cursor) FROM runs r WHERE r.name = 'slow'")
[ "$1" -gt 0 ] && [ "$1" -lt 100000 ] || fail "cursor after SIGTERM: $1"
[ "$2" = "$1" ] && [ "$3" = 0 ] || fail "steps after SIGTERM: cursor $1, steps $2, beyond $3"
"$runmon" --db "$db" watch --once acme/llm/slow >/dev/null
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'slow'")" = 100000 ] ||
	fail "resumed sync incomplete"
unset WANDB_API_KEY WANDB_BASE_URL

# 12. A webhook that accepts and never answers (issue 35.6): delivery is off
# the tick, so the other webhook gets its alerts at once, /metrics and
# /-/ready answer, ticks go on, and SIGTERM ends the watch within a second
# (it took the whole retry budget); the stalled delivery is logged failed,
# to be tried again on the next start, and the good one is never sent twice.
python3 - "$tmp/stall.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
while True:
    c, _ = s.accept()  # and never answer
    held.append(c)
PY
pids="$pids $!"
wait_file "$tmp/stall.port"
stall="http://127.0.0.1:$(cat "$tmp/stall.port")/hook"
receiver good 0; good=$hook
"$runmon" --db "$tmp/st.db" simulate --strategy chunked --steps 4000 --seed 3 --spikes bucket --reset-every 25 --run homog >/dev/null
"$runmon" --db "$tmp/st.db" watch --offline --every 0.3 --metrics 127.0.0.1:0 --webhook "$stall" --webhook "$good" homog \
	>"$tmp/st.out" 2>"$tmp/st.err" &
watcher=$!
pids="$pids $watcher"
for _ in $(seq $((100 * ${RUNMON_TEST_SLOW:-1}))); do [ -s "$tmp/good.log" ] && break; sleep 0.1; done
[ -s "$tmp/good.log" ] || fail "the good webhook waited behind the stalled one: $(cat "$tmp/st.err")"
# A long-running watch says what it watches and where alerts go.
grep -q "^watch: every 0.3s, homog; alerts at warn or above to stdout, webhook http://127.0.0.1:[0-9]*/.*, webhook http" \
	"$tmp/st.err" || fail "no 'watching' line: $(cat "$tmp/st.err")"
mbase=$(sed -n 's|^watch: serving metrics on \(http://127.0.0.1:[0-9]*\)/metrics$|\1|p' "$tmp/st.err")
[ "$(curl -s -o /dev/null -w "%{http_code}" --max-time 5 "$mbase/-/ready")" = 200 ] || fail "not ready behind a stalled webhook"
for _ in $(seq $((100 * ${RUNMON_TEST_SLOW:-1}))); do [ "$(curl -s -o /dev/null -w "%{http_code}" --max-time 5 "$mbase/-/ready")" = 200 ] && break; sleep 0.1; done
t1=$(curl -sf --max-time 5 "$mbase/metrics" | sed -n 's/^runmon_tick_duration_seconds_count \([0-9]*\)$/\1/p')
sleep $((2 * ${RUNMON_TEST_SLOW:-1}))
t2=$(curl -sf --max-time 5 "$mbase/metrics" | sed -n 's/^runmon_tick_duration_seconds_count \([0-9]*\)$/\1/p')
[ "$t2" -gt "$t1" ] || fail "ticks stopped behind a stalled webhook ($t1, $t2)"
t0=$(date +%s.%N)
kill -TERM $watcher
set +e; wait $watcher; code=$?; set -e
t3=$(date +%s.%N)
[ "$code" = 0 ] || fail "SIGTERM with a stalled webhook: exit $code"
awk "BEGIN { exit !($t3 - $t0 < ${RUNMON_TEST_SLOW:-1}) }" || fail "SIGTERM with a stalled webhook took $t0 .. $t3"
[ "$(wc -l <"$tmp/good.log")" = 1 ] || fail "the good webhook got $(wc -l <"$tmp/good.log") POSTs"
[ "$(sqlite3 "$tmp/st.db" "SELECT COUNT(*) FROM alerts WHERE channel LIKE 'webhook:%' AND status = 'sent'")" = 2 ] \
	|| fail "sent alerts: $(sqlite3 "$tmp/st.db" "SELECT channel, status FROM alerts")"
[ "$(sqlite3 "$tmp/st.db" "SELECT COUNT(*) FROM alerts WHERE channel LIKE 'webhook:%' AND status = 'failed'")" -ge 2 ] \
	|| fail "the stalled delivery is not logged failed: $(sqlite3 "$tmp/st.db" "SELECT channel, status FROM alerts")"
"$runmon" --db "$tmp/st.db" watch --once --offline --webhook "$good" homog >/dev/null
[ "$(wc -l <"$tmp/good.log")" = 1 ] || fail "the good webhook got its alerts twice"

echo "e2e watch: all checks passed"
