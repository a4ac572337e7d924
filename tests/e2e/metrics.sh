#!/bin/sh
# End-to-end: watch --metrics. Scrapes during a watch of the fake W&B
# server and checks the values against diagnose --json and runs --json of
# the same runs; the exposition through promtool and a strict parser;
# hostile run names in labels; stalled scrapers that must not stall the
# watch; /-/ready, /-/healthy, 404, 405, HEAD; --metrics-path; a port in
# use; SIGTERM. Usage: metrics.sh RUNMON FAKE_WANDB
set -eu
runmon=$1
fake=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/common.sh"
slow=${RUNMON_TEST_SLOW:-1}
wait_file() { for _ in $(seq $((100 * slow))); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "no $1"; }
command -v promtool >/dev/null || fail "promtool is missing (Debian's prometheus package; .ci/run installs it)"
command -v curl >/dev/null || fail "curl is missing"
# status PATH [curl options]: the HTTP status of a request to the endpoint.
status() { p=$1; shift; curl -s -o /dev/null -w "%{http_code}" --max-time $((10 * slow)) "$@" "$base$p"; }
scrape() { curl -sf --max-time $((10 * slow)) "$base/metrics" >"$1" || fail "scrape failed"; }

KEY=0123456789abcdef0123456789abcdef01234567
db=$tmp/m.db
# A local run with a hostile name: a quote, a backslash, a newline and a
# byte that is not UTF-8.
hostile=$(printf 'we"ird\\na\nme\377')
"$runmon" --db "$db" simulate --strategy chunked --steps 3000 --seed 4 --run "$hostile" >/dev/null
# m1 stays "running" with nothing new; g1 grows by 300 steps per history
# request until it finishes. The first history request answers after 1.5 s,
# so the first tick is still running when /-/ready is asked.
"$fake" --port-file "$tmp/fake.port" --key "$KEY" --fault slow:1 --slow-ms 1500 \
	--run "acme/llm/m1:steps=4000,state=running,resets=2000" --run "acme/llm/g1:steps=9000,grow=300" &
pids="$pids $!"
wait_file "$tmp/fake.port"
export WANDB_API_KEY=$KEY WANDB_BASE_URL="http://127.0.0.1:$(cat "$tmp/fake.port")"

"$runmon" --db "$db" watch --every 0.2 --metrics 127.0.0.1:0 acme/llm/m1 acme/llm/g1 "$hostile" \
	>"$tmp/out" 2>"$tmp/err" &
watcher=$!
pids="$pids $watcher"
wait_file "$tmp/err"
base=$(sed -n 's|^watch: serving metrics on \(http://127.0.0.1:[0-9]*\)/metrics$|\1|p' "$tmp/err")
[ -n "$base" ] || fail "no 'serving metrics' line: $(cat "$tmp/err")"

# 1. Health at once; ready only after the first tick.
[ "$(status /-/healthy)" = 200 ] || fail "/-/healthy"
[ "$(status /-/ready)" = 503 ] || fail "/-/ready before the first tick"
for _ in $(seq $((600 * slow))); do [ "$(status /-/ready)" = 200 ] && break; sleep 0.1; done
[ "$(status /-/ready)" = 200 ] || fail "never ready: $(cat "$tmp/err")"

# 2. Stalled scrapers: 10 that send half a request and 10 that ask and do
# not read, held open for 3 s. The watch goes on: g1 grows, ticks count up,
# and a scrape in the middle answers.
scrape "$tmp/s0"
python3 - "${base#http://}" "$tmp/s0" "$tmp/s1" "$slow" <<'PY' || fail "the watch stalled behind stuck scrapers"
import socket, subprocess, sys, time
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0] if "/" in sys.argv[0] else ".")
host, port = sys.argv[1].rsplit(":", 1)
held = []
for i in range(20):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.bind(("127.0.0.%d" % (2 + i % 3), 0))  # 7 a client: under the limit per address
    s.connect((host, int(port)))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + (b"\r\n" if i % 2 else b""))
    held.append(s)
time.sleep(3 * float(sys.argv[4]))
t0 = time.monotonic()
subprocess.run(["curl", "-sf", "--max-time", "5", "-o", sys.argv[3], "http://%s:%s/metrics" % (host, port)], check=True)
assert time.monotonic() - t0 < 5, "a scrape waited behind the stuck ones"
PY
python3 - "$tmp/s0" "$tmp/s1" <<PY || fail "no progress while scrapers stalled"
import sys
sys.path.insert(0, "$here")
from exposition import parse, get
a, b = (parse(open(f, encoding="utf-8").read()) for f in sys.argv[1:])
ticks = lambda s: get(s, "runmon_tick_duration_seconds_count")
step = lambda s: get(s, "runmon_last_step", run="g1")
assert ticks(b) >= ticks(a) + 3, (ticks(a), ticks(b))
assert step(b) > step(a), (step(a), step(b))
PY

# 2b. Slowloris (issue 35.7): 30 connections from one address, each sending
# a header line every 2 s (never idle for the 10 s timeout). One address
# holds at most 8; a scrape from another answers at once; and each
# trickling request is cut at its 10 s deadline.
python3 - "${base#http://}" "$slow" <<'PY' || fail "slowloris"
import socket, subprocess, sys, time
host, port = sys.argv[1].rsplit(":", 1)
slow = float(sys.argv[2])
held, t0 = [], time.monotonic()
for i in range(30):
    s = socket.socket()
    s.bind(("127.0.0.9", 0))
    s.connect((host, int(port)))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
time.sleep(slow)

def closed(s):
    """Has the server closed s? (a header line sent, then a peek)"""
    try:
        s.sendall(b"X-Trickle: 1\r\n")
        s.setblocking(False)
        try:
            gone = s.recv(1024) == b""
        except BlockingIOError:
            gone = False
        s.setblocking(True)
        return gone
    except OSError:
        return True

early = {i for i in range(30) if closed(held[i])}  # refused at once: over 8 from one address
t1 = time.monotonic()
subprocess.run(["curl", "-sf", "--max-time", str(5 * slow), "-o", "/dev/null", "http://%s:%s/metrics" % (host, port)],
               check=True)
assert time.monotonic() - t1 < 5 * slow, "a scrape waited behind the trickling clients"
alive, late = set(range(30)) - early, []
while alive and time.monotonic() - t0 < 25 * slow:
    for i in list(alive):
        if closed(held[i]):
            alive.discard(i)
            late.append(time.monotonic() - t0)
    time.sleep(2)
assert not alive, "%d trickling connections outlived the deadline" % len(alive)
assert len(early) >= 22, "only %d of 30 refused at once (8 a client)" % len(early)
assert len(late) <= 8 and all(8 <= t <= 16 * slow for t in late), "deadline: %r" % sorted(late)
PY

# 3. The exposition: promtool, the strict parser, and the values against
# diagnose --json and runs --json of the same runs. m1 gains nothing, so
# the watch's last full diagnosis and this one read the same rows.
scrape "$tmp/scrape"
promtool check metrics <"$tmp/scrape" || fail "promtool check metrics"
if grep -q "$KEY" "$tmp/scrape"; then fail "the API key in the metrics"; fi
for r in acme/llm/m1 "$hostile"; do
	"$runmon" --db "$db" diagnose --json --offline "$r" >"$tmp/d.json" || [ $? = 1 ] || fail "diagnose $r"
	name=$(printf '%s' "$r" | od -An -tx1 | tr -d ' \n')
	cp "$tmp/d.json" "$tmp/d-$name.json"
done
"$runmon" --db "$db" runs --json >"$tmp/runs.json"
python3 - "$tmp" "$tmp/scrape" "$tmp/runs.json" <<PY || fail "metrics differ from diagnose --json"
import glob, json, math, sys
sys.path.insert(0, "$here")
from exposition import parse, get
s = parse(open(sys.argv[2], encoding="utf-8").read())
sev = {"none": 0, "info": 1, "warn": 2, "critical": 3}
hyp = {"homogeneous batching": "homogeneous_batching", "resets specific to some buckets": "bucket_resets",
       "checkpoint interference": "checkpoint", "epoch boundaries": "epoch", "learning-rate changes": "lr_changes",
       "genuine instability": "instability", "a periodic event": "periodic", "a fixed data order": "fixed_order", "divergence": "divergence"}
listed = json.load(open(sys.argv[3]))
listed = listed["runs"] if isinstance(listed, dict) else listed
checked = 0
for f in glob.glob(sys.argv[1] + "/d-*.json"):
    d = json.load(open(f))
    name, ent, proj = d["run"]["name"], d["run"]["entity"], d["run"]["project"]
    lab = dict(run=name, entity=ent, project=proj)
    # diagnose --json writes 10 significant digits; integers are exact.
    def eq(metric, want, **more):
        got = get(s, metric, **lab, **more)
        assert got == want or (isinstance(want, float) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)), \
            "%s %s: %r != %r" % (metric, name, got, want)
    eq("runmon_verdict_severity", sev[d["severity"]])
    for h in d["hypotheses"]:
        eq("runmon_hypothesis_severity", sev[h["severity"]], hypothesis=hyp[h["name"]])
    eq("runmon_runs_test_z", d["runs_test"]["z"])
    eq("runmon_loss_bucket_eta_squared", d["split"]["eta2"])
    eq("runmon_loss_modes", d["split"]["modes"]["count"])
    eq("runmon_ladders", d["ladder"]["count"])
    eq("runmon_loss_resets_total", d["resets"]["spikes"])
    eq("runmon_bucket_resets_clustered", int(d["resets"]["cluster_by_bucket"]))
    eq("runmon_resets_by_bucket_q", d["resets"]["by_bucket"]["q"])
    label = {b["bucket"]: b["label"] for b in d["bucket_labels"]}
    for b in d["resets"]["by_bucket"]["buckets"]:
        eq("runmon_bucket_loss_resets_total", b["spikes"], bucket=label[b["bucket"]])
    eq("runmon_last_step", d["latest"]["step"])
    eq("runmon_loss", d["latest"]["loss"])
    eq("runmon_loss_adjusted", d["latest"]["adjusted"])
    if d["latest"]["length_adjusted"] is not None:
        eq("runmon_loss_length_adjusted", d["latest"]["length_adjusted"])
    r = [r for r in listed if r["run"] in (name, "%s/%s/%s" % (ent, proj, name))]
    assert len(r) == 1, name
    eq("runmon_batch_composition_ratio", r[0]["batch_share"])
    if d["cost"]["ok"]:
        eq("runmon_padding_efficiency_ratio", d["cost"]["efficiency"])
    eq("runmon_run_finished", 0)
    checked += 1
assert checked == 2, checked
# The hostile name, read back through the escapes: malformed byte as U+FFFD.
assert get(s, "runmon_run_info", run='we"ird\\\\na\nme\ufffd') == 1
m1 = dict(run="m1", entity="acme", project="llm")
assert get(s, "runmon_verdict_severity", **m1) == 3 and get(s, "runmon_bucket_resets_clustered", **m1) == 1
assert get(s, "runmon_sync_errors_total", **m1) == 0
import time
assert 0 < time.time() - get(s, "runmon_last_sync_timestamp_seconds", **m1) < 300
PY
grep -q 'run="we\\"ird\\\\na\\nme' "$tmp/scrape" || fail "escaped label: $(grep runmon_run_info "$tmp/scrape")"

# 4. A finished run stays scraped, and the watch goes on serving.
for _ in $(seq $((300 * slow))); do
	scrape "$tmp/fin"
	grep -q '^runmon_run_finished{entity="acme",project="llm",run="g1"} 1$' "$tmp/fin" && break
	sleep 0.2
done
grep -q '^runmon_run_finished{entity="acme",project="llm",run="g1"} 1$' "$tmp/fin" || fail "g1 never finished"
grep -q '^runmon_last_step{entity="acme",project="llm",run="g1"} 8999$' "$tmp/fin" || fail "g1's last step"
kill -0 $watcher || fail "watch exited when a run finished"

# 5. The other paths and methods.
[ "$(status /nope)" = 404 ] || fail "404"
[ "$(status /metrics -X POST)" = 405 ] || fail "405"
curl -s -D - -o /dev/null -X DELETE "$base/metrics" | grep -qi '^Allow: GET, HEAD' || fail "Allow header"
curl -sI "$base/metrics" | grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' || fail "HEAD"
curl -s "$base/" | grep -q 'href="/metrics"' || fail "the index page"

# 6. A port in use: a clear error, exit 3, nothing served.
port=${base##*:}
if "$runmon" --db "$db" watch --offline --metrics "127.0.0.1:$port" acme/llm/m1 2>"$tmp/inuse"; then fail "second listener"; else rc=$?; fi
[ $rc = 3 ] || fail "port in use: exit $rc"
grep -q "cannot listen on 127.0.0.1:$port for --metrics: Address already in use" "$tmp/inuse" || fail "$(cat "$tmp/inuse")"

# 7. SIGTERM: exit 0, the port closed.
kill -TERM $watcher
wait $watcher || fail "watch exit status $? on SIGTERM"
[ "$(status /-/healthy)" = 000 ] || fail "still serving after exit"

# 8. --metrics-path, and bad values.
"$runmon" --db "$db" watch --offline --every 0.2 --metrics 0 --metrics-path /prom "$hostile" 2>"$tmp/err2" &
watcher=$!
pids="$pids $watcher"
wait_file "$tmp/err2"
base=$(sed -n 's|^watch: serving metrics on \(http://127.0.0.1:[0-9]*\)/prom$|\1|p' "$tmp/err2")
[ -n "$base" ] || fail "PORT alone: $(cat "$tmp/err2")"
for _ in $(seq $((300 * slow))); do [ "$(status /-/ready)" = 200 ] && break; sleep 0.1; done
curl -sf "$base/prom" | grep -q '^runmon_run_info' || fail "--metrics-path"
[ "$(status /metrics)" = 404 ] || fail "/metrics beside --metrics-path"
curl -sf "$base/" | grep -q '<a href="/prom">Metrics</a>' || fail "the index page's link: $(curl -s "$base/")"
kill -TERM $watcher
wait $watcher || fail "exit on SIGTERM"
for bad in "--metrics ::1:80" "--metrics 127.0.0.1:65536" "--metrics host:" "--metrics-path metrics" \
	"--metrics-path /-/x" "--metrics-path /" "--once --metrics 0" "--metrics-path /m\"><script>x</script>" \
	"--metrics-path /m&amp;" "--metrics-path /m'x"; do
	# shellcheck disable=SC2086
	if "$runmon" --db "$db" watch --offline $bad acme/llm/m1 2>"$tmp/bad"; then fail "accepted $bad"; else rc=$?; fi
	[ $rc = 2 ] || fail "$bad: exit $rc"
	grep -q "see 'runmon watch --help'" "$tmp/bad" || fail "$bad: $(cat "$tmp/bad")"
done
echo "metrics: ok"
