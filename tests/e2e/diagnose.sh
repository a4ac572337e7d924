#!/bin/sh
# End-to-end: simulate, import and diagnose with the real binary; read the
# JSON and the findings table back. Usage: diagnose.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
db=$tmp/d.db
rc() { set +e; "$@" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; set -e; cat "$tmp/rc"; }

# The user's path: files from a trainer, imported, then diagnosed.
"$runmon" simulate --strategy chunked --steps 6000 --seed 3 --out "$tmp/run" | grep -q "wrote" || fail "simulate --out"
"$runmon" --db "$db" import --run homog "$tmp/run/history.jsonl" "$tmp/run/batches.jsonl" >/dev/null
[ "$(rc "$runmon" --db "$db" diagnose homog)" = 1 ] || fail "homogeneous run: exit 1 expected"
grep -q "^VERDICT  \(warn\|critical\): homogeneous batching" "$tmp/out" || fail "verdict line: $(head -5 "$tmp/out")"
grep -q "What to do:" "$tmp/out" || fail "fix section"
grep -q "bucket-adjusted" "$tmp/out" || fail "adjusted curve"
if grep -q "$(printf '\033')" "$tmp/out"; then fail "colour escapes when stdout is not a terminal"; fi
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM findings WHERE detector = 'same_bucket_runs'")" = 1 ] || fail "findings stored"

# JSON: the documented schema, parsed by a strict parser.
rc "$runmon" --db "$db" diagnose homog --json >/dev/null
python3 - "$tmp/out" <<'PY' || fail "json schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "runmon.diagnosis/4"
assert d["run"]["name"] == "homog"
assert d["severity"] in ("warn", "critical") and d["healthy"] is False
assert d["verdict"]["hypothesis"] == "homogeneous batching" and d["verdict"]["fix"]
assert d["runs_test"]["z"] < -4 and d["runs_test"]["flagged"] is True
assert len(d["split"]["buckets"]) == 6 and d["split"]["eta2"] > 0.5
assert len(d["curve"]["adjusted"]) == 40
for key in ("ladder", "resets", "hypotheses"):
    assert key in d
c = d["cost"]
assert c["ok"] and 0 < c["efficiency"] <= 1 and c["tokens_per_batch"] > 0
eff = {s["strategy"]: s["efficiency"] for s in c["strategies"]}
assert len(eff) == 5 and eff["fully random"] < eff["bucketed (current boundaries)"] <= eff["sorted"]
assert len(c["buckets"]) == 6 and c["fitted_boundaries"][0] == 0
PY

# The fix: interleaved batches of the same data are healthy (exit 0).
"$runmon" --db "$db" simulate --strategy interleaved --steps 6000 --seed 3 --run inter >/dev/null
[ "$(rc "$runmon" --db "$db" diagnose inter)" = 0 ] || fail "interleaved run: exit 0 expected"
grep -q "^VERDICT  ok: healthy order" "$tmp/out" || fail "info verdict (a split in a healthy order)"
# --fail-on info makes the information-level split fail the job.
[ "$(rc "$runmon" --db "$db" diagnose inter --fail-on info)" = 1 ] || fail "--fail-on info"

# Diagnosing again replaces the findings; --since limits the steps.
"$runmon" --db "$db" diagnose homog >/dev/null || true
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM findings WHERE detector = 'same_bucket_runs'")" = 1 ] || fail "findings replaced"
rc "$runmon" --db "$db" diagnose homog --since 3000 --json >/dev/null
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['first_step'] >= 3000, d['first_step']" "$tmp/out" \
	|| fail "--since"

# Errors: unknown run (2), bad option (2).
[ "$(rc "$runmon" --db "$db" diagnose nosuchrun)" = 2 ] || fail "unknown run exit"
grep -q "no run 'nosuchrun' in database" "$tmp/err" || fail "unknown run message"
[ "$(rc "$runmon" --db "$db" diagnose homog --fail-on loud)" = 2 ] || fail "bad --fail-on"

# demo: both runs, side by side, exit 0.
[ "$(rc "$runmon" --db "$tmp/demo.db" demo --steps 5000)" = 0 ] || fail "demo exit"
grep -q "demo-homogeneous *demo-interleaved" "$tmp/out" || fail "demo table"
grep -q "^demo-homogeneous: homogeneous batching" "$tmp/out" || fail "demo verdict"
"$runmon" --db "$tmp/demo.db" runs | grep -q "^demo-interleaved" || fail "demo runs stored"

# --offline: a W&B run is diagnosed from the store without a sync (the
# server below refuses connections, so a sync attempt would warn).
"$runmon" --db "$db" import --run acme/llm/w1 "$tmp/run/history.jsonl" "$tmp/run/batches.jsonl" >/dev/null
export WANDB_BASE_URL=http://127.0.0.1:9 WANDB_API_KEY=k0123456789
rc "$runmon" --db "$db" diagnose --offline acme/llm/w1 >/dev/null
grep -q "^VERDICT" "$tmp/out" || fail "--offline: no verdict"
if grep -q "not synced" "$tmp/err"; then fail "--offline still synced: $(cat "$tmp/err")"; fi
rc "$runmon" --db "$db" diagnose acme/llm/w1 >/dev/null
grep -q "not synced" "$tmp/err" || fail "without --offline a W&B run is synced first"
unset WANDB_BASE_URL WANDB_API_KEY

# Ladders without batch composition: rises are reported, and said to be
# untested, never "p = 1.000 (0 permutations)".
"$runmon" --db "$db" import --run nocomp "$tmp/run/history.jsonl" >/dev/null
rc "$runmon" --db "$db" diagnose nocomp >/dev/null
grep -q "not tested against bucket order: no batch composition" "$tmp/out" || fail "ladders without composition: $(sed -n '/Ladders/,/^$/p' "$tmp/out")"
if grep -q "0 permutations\|long-bucket share" "$tmp/out"; then fail "ladder test claimed without composition"; fi
rc "$runmon" --db "$db" diagnose nocomp --json >/dev/null
python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['ladder']; assert l['tested'] is False and l['p'] is None, l" "$tmp/out" \
	|| fail "ladder JSON without composition"
# Lengths only (a sidecar with lens statistics, no bucket id, no --buckets):
# buckets are derived from max_len, and both verdicts are right.
for st in chunked interleaved; do
	"$runmon" simulate --strategy $st --no-bucket --steps 6000 --seed 4 --out "$tmp/lo-$st" >/dev/null
	if grep -q '"bucket"' "$tmp/lo-$st/batches.jsonl"; then fail "--no-bucket wrote bucket ids"; fi
	"$runmon" --db "$db" import --run "lo-$st" "$tmp/lo-$st/history.jsonl" "$tmp/lo-$st/batches.jsonl" >/dev/null
	rc "$runmon" --db "$db" diagnose "lo-$st" >/dev/null
	grep -q "no bucket ids recorded: buckets derived from max_len (else mean_len), boundaries 0,770," "$tmp/out" \
		|| fail "lengths only, $st: $(head -3 "$tmp/out")"
	if grep -q "record batch composition" "$tmp/out" || grep "^VERDICT" "$tmp/out" | grep -q "instability"; then
		fail "lengths only, $st: $(grep VERDICT "$tmp/out")"
	fi
done
rc "$runmon" --db "$db" diagnose lo-chunked >/dev/null
grep -q "^VERDICT  \(warn\|critical\): homogeneous batching" "$tmp/out" || fail "lengths only, chunked: $(grep VERDICT "$tmp/out")"
[ "$(rc "$runmon" --db "$db" diagnose lo-interleaved)" = 0 ] || fail "lengths only, interleaved: $(grep VERDICT "$tmp/out")"
rc "$runmon" --db "$db" diagnose lo-chunked --json >/dev/null
python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['buckets_derived']; assert b['from'] == 'max_len, else mean_len' and b['boundaries'][:2] == [0, 770] and len(b['boundaries']) >= 4, b" "$tmp/out" \
	|| fail "buckets_derived in JSON"

# fairseq's JSON log (--log-format json): every value a string, the step in
# num_updates, and the batch as per-interval means wpb (tokens) and bsz
# (sentences). Homogeneous and interleaved orders, 10 updates an interval.
for st in chunked interleaved; do
	python3 - "$tmp/lo-$st/history.jsonl" "$tmp/lo-$st/batches.jsonl" >"$tmp/fairseq-$st.json" <<'PY'
import json, sys
hist = [json.loads(l) for l in open(sys.argv[1])]
bat = [json.loads(l) for l in open(sys.argv[2])]
for i in range(0, len(hist) - 9, 10):
    h, b = hist[i:i + 10], bat[i:i + 10]
    row = {"epoch": 1 + i // 2000, "update": round(i / 2000, 3),
           "loss": "%.3f" % (sum(r["train/loss"] for r in h) / 10),
           "nll_loss": "%.3f" % (sum(r["train/loss"] for r in h) / 10 * 0.98),
           "ppl": "%.2f" % 2.5, "wps": "10624.4", "ups": "2.92",
           "wpb": "%.1f" % (sum(r["tokens"] for r in b) / 10), "bsz": "%.1f" % (sum(r["n"] for r in b) / 10),
           "num_updates": str(i + 10), "lr": "%.4g" % h[-1]["train/lr"], "gnorm": "1.175",
           "train_wall": "34", "gb_free": "10.7", "wall": str(38 + i)}
    print(json.dumps(row))
PY
	"$runmon" --db "$db" import --run "fs-$st" "$tmp/fairseq-$st.json" >"$tmp/fs.out" || fail "fairseq import: $(cat "$tmp/fs.out")"
	grep -q "600 steps (600 new), 600 batches, steps 10..6000, loss key 'loss'" "$tmp/fs.out" || fail "fairseq summary: $(cat "$tmp/fs.out")"
done
rc "$runmon" --db "$db" diagnose fs-chunked >/dev/null
grep -q "buckets derived from max_len (else mean_len)" "$tmp/out" || fail "fairseq: no derived buckets: $(head -3 "$tmp/out")"
grep -q "^VERDICT  \(warn\|critical\): homogeneous batching" "$tmp/out" || fail "fairseq, chunked: $(grep VERDICT "$tmp/out")"
[ "$(rc "$runmon" --db "$db" diagnose fs-interleaved)" = 0 ] || fail "fairseq, interleaved: $(grep VERDICT "$tmp/out")"
[ "$(sqlite3 "$db" "SELECT n || ',' || tokens FROM batches WHERE step = 10 AND run_id = (SELECT id FROM runs WHERE name = 'fs-chunked')")" != "" ] \
	|| fail "fairseq: wpb/bsz not stored"

grep -q "batch composition from bsz (n), wpb (tokens)" "$tmp/out" || fail "fairseq: composition keys not named: $(head -3 "$tmp/out")"

# Lengths only, healthy order: the loss follows length, and the view that
# dashboards read takes the length effect out.
rc "$runmon" --db "$db" diagnose lo-interleaved --json >/dev/null
# Each batch holds one bucket: the boundaries derived are the sampler's own
# (the cuts no batch straddles), so resets are held against bucket levels.
python3 - "$tmp/out" <<'PY' || fail "length coupling json"
import json, sys
d = json.load(open(sys.argv[1]))
L = d["length"]
assert L["ok"] and L["coupled"] and not L["ordered"] and not L["resets_on_length_adjusted"], L
assert 0 < L["r2_ci"][0] <= L["r2"] <= L["r2_ci"][1] <= 1 and L["slope_ci"][0] < L["slope"] < L["slope_ci"][1], L
assert d["buckets_derived"]["boundaries"] == [0, 770, 1216, 1728, 2432, 3296, 8192] or \
    d["buckets_derived"]["boundaries"][1] <= 770, d["buckets_derived"]
assert "bucket-adjusted" in d["verdict"]["summary"], d["verdict"]
assert len(d["curve"]["length_adjusted"]) == 40
PY
# Mean lengths alone (fairseq's wpb / bsz): no spans to cut by, a least-
# padding fit, and resets held against the length-adjusted loss.
rc "$runmon" --db "$db" diagnose fs-interleaved --json >/dev/null
python3 - "$tmp/out" <<'PY' || fail "fairseq length coupling json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["length"]["resets_on_length_adjusted"] and "length-adjusted" in d["verdict"]["summary"], d["verdict"]
PY
python3 - "$db" <<'PY' || fail "length_adjusted_loss view"
import math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rid = db.execute("SELECT id FROM runs WHERE name = 'lo-interleaved'").fetchone()[0]
scale, slope, ref = db.execute("SELECT scale, slope, ref_len FROM length_levels WHERE run_id = ?", (rid,)).fetchone()
rows = db.execute("SELECT loss, length, adjusted FROM length_adjusted_loss WHERE run_id = ?", (rid,)).fetchall()
steps = db.execute("SELECT COUNT(*) FROM steps WHERE run_id = ?", (rid,)).fetchone()[0]
assert scale == "log" and len(rows) == steps, (scale, len(rows), steps)
for loss, length, adj in rows:  # the 1% table is within 0.5% of the exact effect
    exact = loss * (ref / length) ** slope
    assert abs(adj / exact - 1) < 0.006 * max(1, slope), (loss, length, adj, exact)
raw = [r[0] for r in rows]; adj = [r[2] for r in rows]
sd = lambda v: math.sqrt(sum((x - sum(v) / len(v)) ** 2 for x in v) / len(v))
assert sd(adj) < 0.6 * sd(raw), (sd(adj), sd(raw))  # the length levels are gone
PY

# Cumulative counters only (the OpenAI fine-tuning metrics): differenced
# into per-interval means, enough to tell the orders apart at 10 steps an
# interval.
for st in chunked interleaved; do
	"$runmon" simulate --strategy $st --cumulative --log-every 10 --steps 6000 --seed 4 --out "$tmp/cu-$st" >"$tmp/sim.out"
	grep -q "cumulative counters" "$tmp/sim.out" || fail "simulate --cumulative: $(cat "$tmp/sim.out")"
	[ ! -e "$tmp/cu-$st/batches.jsonl" ] || fail "--cumulative wrote a batch file"
	"$runmon" --db "$db" import --run "cu-$st" "$tmp/cu-$st/history.jsonl" >"$tmp/cu.out"
	grep -q "599 batches" "$tmp/cu.out" || fail "cumulative import: $(cat "$tmp/cu.out")"
	grep -q "from elapsed_tokens (cumulative tokens, differenced), elapsed_examples (cumulative sequences, differenced)" \
		"$tmp/cu.out" || fail "cumulative keys not named: $(cat "$tmp/cu.out")"
done
[ "$(rc "$runmon" --db "$db" diagnose cu-chunked)" = 1 ] || fail "cumulative, chunked: $(grep VERDICT "$tmp/out")"
grep -q "^VERDICT  \(warn\|critical\): homogeneous batching" "$tmp/out" || fail "cumulative, chunked: $(grep VERDICT "$tmp/out")"
[ "$(rc "$runmon" --db "$db" diagnose cu-interleaved)" = 0 ] || fail "cumulative, interleaved: $(grep VERDICT "$tmp/out")"
"$runmon" --db "$db" runs >"$tmp/runs.out"
grep "^cu-chunked " "$tmp/runs.out" | grep -q "elapsed_tokens (cumulative tokens, differenced)" || fail "runs: composition: $(cat "$tmp/runs.out")"
"$runmon" --db "$db" runs --json | python3 -c '
import json, sys
r = {x["run"]: x for x in json.load(sys.stdin)["runs"]}
assert r["fs-chunked"]["composition"] == "bsz (n), wpb (tokens)", r["fs-chunked"]
assert r["homog"]["composition"] is not None' || fail "runs --json composition"

# A counter that falls (a resume, a new epoch) starts the differencing
# over; a token counter with no sequence count is not enough, and says so.
cat >"$tmp/tok.jsonl" <<'EOF'
{"step": 10, "loss": 2.5, "num_input_tokens_seen": 20480}
{"step": 20, "loss": 2.4, "num_input_tokens_seen": 40960}
{"step": 30, "loss": 2.3, "num_input_tokens_seen": 51200}
{"step": 15, "loss": 2.9, "num_input_tokens_seen": 1000}
{"step": 25, "loss": 2.2, "num_input_tokens_seen": 11240}
EOF
"$runmon" --db "$db" import "$tmp/tok.jsonl" >/dev/null
q="SELECT group_concat(step || ':' || tokens, ' ') FROM (SELECT step, tokens FROM batches WHERE run_id = (SELECT id FROM runs WHERE name = 'tok') ORDER BY step)"
[ "$(sqlite3 "$db" "$q")" = "20:2048 25:1024 30:1024" ] || fail "counter differencing: $(sqlite3 "$db" "$q")"
rc "$runmon" --db "$db" diagnose tok >/dev/null
grep -q "not enough to test: 3 batches have a token count but no sequence count or length" "$tmp/out" || fail "tokens only: $(grep VERDICT "$tmp/out")"
if grep -q "record batch composition" "$tmp/out"; then fail "tokens only: asked to record composition"; fi

# --length-key and --count-key name keys runmon does not know.
printf 'step,loss,seq_len,n_seqs\n1,2.0,500,8\n2,2.1,700,8\n' >"$tmp/lk.csv"
"$runmon" --db "$db" import --length-key seq_len --count-key n_seqs "$tmp/lk.csv" >"$tmp/lk.out"
grep -q "batch composition from n_seqs (n), seq_len (mean_len)" "$tmp/lk.out" || fail "--length-key: $(cat "$tmp/lk.out")"
q="SELECT group_concat(n || '/' || mean_len || '/' || tokens, ' ') FROM batches WHERE run_id = (SELECT id FROM runs WHERE name = 'lk')"
[ "$(sqlite3 "$db" "$q")" = "8/500.0/4000 8/700.0/5600" ] || fail "--length-key/--count-key not stored: $(sqlite3 "$db" "$q")"


# A loop that never shuffles: the order is named with its repeated spikes,
# in text, JSON and the findings; the same loop shuffling every epoch is quiet.
gen=$(dirname "$0")/../tools/epoch_log.py
python3 "$gen" fixed 5 "$tmp/fixed.log"
python3 "$gen" shuffled 5 "$tmp/shuffled.log"
"$runmon" --db "$db" import "$tmp/fixed.log" "$tmp/shuffled.log" >/dev/null || fail "import epoch logs"
[ "$(rc "$runmon" --db "$db" diagnose fixed)" = 1 ] || fail "fixed order: exit 1 expected: $(head -3 "$tmp/out")"
grep -q "^VERDICT  warn: the data order repeats every epoch (no shuffle).*the spikes at in-epoch steps 760, 1300 are the same batches" "$tmp/out" \
	|| grep -q "^VERDICT  warn: the data order repeats every epoch (no shuffle).*the spikes at in-epoch steps 1300, 760 are the same batches" "$tmp/out" \
	|| fail "fixed-order verdict: $(grep VERDICT "$tmp/out")"
grep -q "shuffle the data every epoch" "$tmp/out" || fail "fixed-order fix"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM findings f JOIN runs r ON r.id = f.run_id WHERE r.name = 'fixed' AND detector = 'fixed_order'")" = 1 ] \
	|| fail "fixed_order finding"
"$runmon" --db "$db" diagnose fixed --json >"$tmp/fixed.json" || [ $? = 1 ]
python3 -c "import json, sys; o = json.load(open(sys.argv[1]))['order']; sys.exit(not (o['flagged'] and o['epochs'] == 4 and o['epochs_from'] == 'epoch' and len(o['repeated_spikes']) == 2))" "$tmp/fixed.json" \
	|| fail "order in JSON: $(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['order'])" "$tmp/fixed.json")"
[ "$(rc "$runmon" --db "$db" diagnose shuffled)" = 0 ] || fail "shuffled epochs: exit 0 expected: $(grep VERDICT "$tmp/out")"
grep -q "^Order across epochs" "$tmp/out" || fail "order section on the shuffled run"
if grep -q "repeats every epoch" "$tmp/out"; then fail "shuffled epochs called a fixed order"; fi

# Two causes at once (issue 36): checkpoint saves that spike beside
# homogeneous batching on 4 ranks with derived buckets. Both are in the
# verdict and each has its fix; the resets' period, the megabatch's own,
# is not called a cause.
"$runmon" --db "$db" simulate --strategy hf-megabatch --steps 10000 --ranks 4 --no-bucket --spikes checkpoint \
	--seed 7 --run two >/dev/null
rc "$runmon" --db "$db" diagnose two --checkpoint-every 500 >/dev/null
grep "^VERDICT" "$tmp/out" | grep -q "homogeneous batching.*; also loss resets follow checkpoint saves" \
	|| fail "second cause lost: $(grep VERDICT "$tmp/out")"
grep -q "check what a checkpoint save does to training" "$tmp/out" || fail "second cause has no fix"
if grep "^VERDICT" "$tmp/out" | grep -q "recur every"; then fail "the order's period called a cause"; fi
rc "$runmon" --db "$db" diagnose two --checkpoint-every 500 --json >/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["verdict"]["causes"]; assert c == ["homogeneous batching", "checkpoint interference"], c' \
	"$tmp/out" || fail "verdict.causes"
rc "$runmon" --db "$db" diagnose two >/dev/null
cp "$tmp/out" "$tmp/two.txt"
rc "$runmon" --db "$db" diagnose two --json >/dev/null
cp "$tmp/out" "$tmp/two.json"
[ "$(rc "$runmon" --db "$db" report two -o "$tmp/two.html")" = 1 ] || fail "report of a run at warn: exit 1"
# One number per quantity across text, JSON and HTML: the verdict's word,
# the measured padding efficiency (the price quotes it, never a re-pack's
# "today"), the global spike counts; the share with composition is <= 100%.
python3 - "$tmp/two.txt" "$tmp/two.json" "$tmp/two.html" <<'PY' || fail "text, JSON and HTML disagree"
import json, re, sys
text, d, html = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), open(sys.argv[3]).read()
word = re.search(r"^VERDICT  (\w+):", text, re.M).group(1)
assert word == d["severity"] and word in ("warn", "critical"), (word, d["severity"])
assert "<span class='%s'>%s</span>" % (word, word) in html
eff = "%.1f%%" % (100 * d["cost"]["efficiency"])
assert "padding efficiency %s (real tokens" % eff in text, eff
assert "padding efficiency (%s)" % eff in text and "padding efficiency (%s)" % eff in html, eff
for f in re.findall(r"padding efficiency \(?([0-9.]+)%", text + html):
    assert f + "%" == eff, (f, eff)
r = d["resets"]
assert "flags %d in the loss and %d in the length-adjusted loss" % (r["spikes_global"], r["spikes_adjusted"]) in text
PY
# ... and the metrics a watch serves for the same run (the fourth view).
"$runmon" --db "$db" runs --json >"$tmp/two-runs.json"
# The file exists before the watch starts: under set -e, a sed of a file
# the background job has not made yet ended the test with no FAIL line.
: >"$tmp/w.err"
"$runmon" --db "$db" watch --offline --every 60 --metrics 127.0.0.1:0 two >/dev/null 2>"$tmp/w.err" &
watcher=$!
pids="$pids $watcher"
for _ in $(seq 300); do
	base=$(sed -n 's|^watch: serving metrics on \(http://127.0.0.1:[0-9]*\)/metrics$|\1|p' "$tmp/w.err" || true)
	[ -n "$base" ] && curl -sf --max-time 5 "$base/metrics" >"$tmp/two.prom" 2>/dev/null \
		&& grep -q '^runmon_verdict_severity{' "$tmp/two.prom" && break
	sleep 0.1
done
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
grep -q '^runmon_verdict_severity{' "$tmp/two.prom" 2>/dev/null || fail "no metrics from the watch: $(cat "$tmp/w.err")"
python3 - "$tmp/two.txt" "$tmp/two.json" "$tmp/two.html" "$tmp/two.prom" "$tmp/two-runs.json" <<'PY' \
	|| fail "text, JSON, HTML and metrics disagree"
import json, re, sys
text, d, html, prom = (open(f).read() for f in sys.argv[1:5])
d = json.loads(d)
share = [r for r in json.load(open(sys.argv[5]))["runs"] if r["run"] == "two"][0]["batch_share"]
m = {k: float(v) for k, v in re.findall(r'^(runmon_\w+)\{[^}]*run="two"\} (\S+)$', prom, re.M)}
def close(a, b):  # the exposition writes 10 significant digits
    return abs(a - b) <= 1e-8 * max(1.0, abs(b))
sev = ["none", "info", "warn", "critical"]
assert sev[int(m["runmon_verdict_severity"])] == d["severity"], (m["runmon_verdict_severity"], d["severity"])
z, eta = d["runs_test"]["z"], d["split"]["eta2"]
assert close(m["runmon_runs_test_z"], z) and "z = %.2f" % z in text and "z = %.2f" % z in html, z
assert close(m["runmon_loss_bucket_eta_squared"], eta), (m, eta)
name = "R" if d["split"]["mixed"] else "eta"
assert "%s^2 = %.3f" % (name, eta) in text and "%s&sup2; = %.3f" % (name, eta) in html, (name, eta)
eff = d["cost"]["efficiency"]
assert close(m["runmon_padding_efficiency_ratio"], eff) and "(%.1f%%)" % (100 * eff) in html, eff
assert 0 < share <= 1 and close(m["runmon_batch_composition_ratio"], share), share
assert "<td>%.0f%%</td></tr>" % (100 * share) in html, share
assert m["runmon_loss_resets_total"] == d["resets"]["spikes"], (m, d["resets"]["spikes"])
assert m["runmon_last_step"] == d["latest"]["step"]
PY
"$runmon" --db "$db" simulate --strategy interleaved --steps 3000 --log-every 10 --seed 5 --out "$tmp/every10" >/dev/null
"$runmon" --db "$db" import --run every10 "$tmp/every10/history.jsonl" "$tmp/every10/batches.jsonl" >/dev/null
"$runmon" --db "$db" runs | grep "^every10 " | grep -q " 100% " || fail "share at log every 10: $("$runmon" --db "$db" runs | grep every10)"
"$runmon" --db "$db" runs --json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["runs"]:
    assert 0 <= r["batch_share"] <= 1, r' || fail "batch_share above 1"

# --since by time: the first step logged at or after it, from the steps'
# times (W&B's _timestamp); a run without times, or none that late, says so.
"$runmon" --db "$db" simulate --strategy chunked --steps 3000 --seed 2 --out "$tmp/timed" >/dev/null
"$runmon" --db "$db" import --run timed "$tmp/timed/history.jsonl" "$tmp/timed/batches.jsonl" >/dev/null
at=$(python3 -c '
import json, sys, time
rows = [json.loads(l) for l in open(sys.argv[1])]
t = rows[len(rows) // 2]["_timestamp"] - 0.001
print(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), min(r["_step"] for r in rows if r["_timestamp"] >= int(t)))' \
	"$tmp/timed/history.jsonl")
rc "$runmon" --db "$db" diagnose timed --since "${at% *}" --json >/dev/null
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["since"] == int(sys.argv[2]) == d["first_step"], (d["since"], sys.argv[2])' \
	"$tmp/out" "${at#* }" || fail "--since a time: $(head -c 300 "$tmp/out") $(cat "$tmp/err")"
[ "$(rc "$runmon" --db "$db" diagnose timed --since 24h)" = 2 ] && grep -q "since 24h: no step was logged at or after that time" "$tmp/err" \
	|| fail "--since after the last step: $(cat "$tmp/err")"
printf 'step,loss\n1,2.0\n2,1.9\n3,1.8\n' >"$tmp/untimed.csv"
"$runmon" --db "$db" import --run untimed "$tmp/untimed.csv" >/dev/null
[ "$(rc "$runmon" --db "$db" diagnose untimed --since 7d)" = 2 ] && grep -q "logs no step times: give --since a step" "$tmp/err" \
	|| fail "--since a time without step times: $(cat "$tmp/err")"

# On an 80-column terminal the text wraps (prose hangs under its text); to
# a file every line stays whole, as scripts read it.
(cd "$tmp" && COLUMNS=80 script -qec "'$runmon' --db '$db' diagnose two" /dev/null >"$tmp/tty.txt" </dev/null) || true
python3 - "$tmp/tty.txt" <<'PY' || fail "terminal text wider than 80 columns"
import re, sys
text = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], encoding="utf-8").read()).replace("\r", "")
wide = [l for l in text.split("\n") if len(l) > 80]
assert "VERDICT" in text and not wide, wide[:3]
assert re.search(r"^VERDICT .*\n {9}\S", text, re.M), "no hanging indent under the verdict"
PY
"$runmon" --db "$db" diagnose two >"$tmp/file.txt" || true
grep -q "^VERDICT .*; also loss resets follow checkpoint saves" "$tmp/file.txt" || fail "text to a file was wrapped"

# Words people read right (issue 50.3): streaks, the sign of z, the unit of
# evidence and levels, the ladders listed tallest first with how many shown.
"$runmon" --db "$db" simulate --steps 8000 --spikes bucket --run words >/dev/null || fail "simulate words"
"$runmon" --db "$db" diagnose words >"$tmp/words.txt" || true
python3 - "$tmp/words.txt" <<'PY' || fail "the words of diagnose: $(head -5 "$tmp/words.txt")"
import re, sys
t = open(sys.argv[1]).read()
assert re.search(r"^VERDICT  critical: homogeneous batching: \d+ same-bucket streaks where random order gives \d+ "
                 r"\(z = -[\d.]+: fewer, longer streaks than random\)", t, re.M), t[:400]
assert "same-bucket runs" not in t and " runs, " not in t
assert re.search(r"^  \d+ streaks, [\d.]+ expected in random order \(sd [\d.]+\): z = -[\d.]+ \(below 0: fewer, "
                 r"longer streaks than random\)", t, re.M)
assert "Hypotheses, strongest first (evidence: -log10 of the strongest q-value):" in t
assert re.search(r"^  bucket  x trend ", t, re.M), "levels say what they are a multiple of"
m = re.search(r"^  (\d+) ladders \(intervals of \d+ points, (\d+) shown, tallest first\)", t, re.M)
assert m and int(m.group(1)) > int(m.group(2)) == 5, m and m.group(0)
heights = [float(h) for h in re.findall(r"^  steps \d+\.\.\d+: \d+ rises, \+([\d.]+), long-bucket", t, re.M)]
assert len(heights) == 5 and heights == sorted(heights, reverse=True), heights
assert "StrideBucketSampler" in t and "pip install ./contrib/python" in t, "the fix names the shipped sampler"
for share, overall, note in re.findall(r"long-bucket share (\d+)% \(overall (\d+)%(: not over a long streak)?\)", t):
    assert (int(share) <= int(overall)) == bool(note) or int(share) == int(overall), (share, overall, note)
PY

# The join, always visible (issue 64.3): every point with its batch here;
# a sidecar from a recorder that counted from another origin meets no loss
# step, and the diagnosis says so instead of "healthy" (exit 1), with both
# step ranges, in the text, the JSON and the report.
rc "$runmon" --db "$db" diagnose homog >/dev/null
grep -q "^join: 6000 of 6000 loss points have their batches; 6000 of 6000 batches have a loss$" "$tmp/out" \
	|| fail "join line: $(head -5 "$tmp/out")"
"$runmon" simulate --strategy mixed --steps 1200 --seed 5 --out "$tmp/mix" >/dev/null || fail "simulate mixed"
python3 - "$tmp/mix/batches.jsonl" "$tmp/mix/later.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        row = json.loads(line)
        row["step"] += 5000
        out.write(json.dumps(row) + "\n")
PY
"$runmon" --db "$db" import --run apart "$tmp/mix/history.jsonl" "$tmp/mix/later.jsonl" >/dev/null || fail "import apart"
[ "$(rc "$runmon" --db "$db" diagnose apart)" = 1 ] || fail "batches meeting no loss: exit $(cat "$tmp/rc")"
grep -q "^join: 0 of 1200 loss points have their batches; 0 of 1200 batches have a loss (warning: under half the loss points have their batches: losses at steps 0..1199, batches at 5000..6199)$" "$tmp/out" \
	|| fail "join warning: $(head -5 "$tmp/out")"
grep -q "^VERDICT  warn: the batches meet no loss step: losses at steps 0..1199, batches at 5000..6199" "$tmp/out" \
	|| fail "join verdict: $(grep VERDICT "$tmp/out")"
if grep -q "healthy" "$tmp/out"; then fail "batches meeting no loss called healthy"; fi
"$runmon" --db "$db" import --run together "$tmp/mix/history.jsonl" "$tmp/mix/batches.jsonl" >/dev/null
[ "$(rc "$runmon" --db "$db" diagnose together)" = 0 ] || fail "the same run joined: exit $(cat "$tmp/rc")"
rc "$runmon" --db "$db" diagnose apart --json >/dev/null
[ "$(field "$tmp/out" join.none)" = True ] && [ "$(field "$tmp/out" join.batch_first_step)" = 5000 ] \
	|| fail "join in JSON: $(field "$tmp/out" join)"
rc "$runmon" --db "$db" report apart --format md -o "$tmp/apart.md" >/dev/null
grep -q "^join: 0 of 1200 loss points have their batches" "$tmp/apart.md" || fail "join in the report"

# What a logged point is (issue 64.2): the same mixed run logged every 10
# steps as one step's loss, as the mean of the 10, and as one step's loss
# printed one step late; diagnose reads each as it was written, says so,
# and --loss-is overrides.
python3 - "$tmp/mix" <<'PY'
import json, os, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(d, "history.jsonl"))]
with open(os.path.join(d, "one.jsonl"), "w") as one, open(os.path.join(d, "late.jsonl"), "w") as late, \
        open(os.path.join(d, "mean.jsonl"), "w") as mean:
    acc = []
    for r in rows:
        acc.append(r["train/loss"])
        if r["_step"] % 10 == 0:
            one.write(json.dumps(r) + "\n")
            late.write(json.dumps(dict(r, _step=r["_step"] + 1)) + "\n")
        if r["_step"] % 10 == 9:
            mean.write(json.dumps(dict(r, **{"train/loss": sum(acc) / len(acc)})) + "\n")
            acc = []
PY
for w in "one step 0" "late step -1" "mean mean 0"; do
	set -- $w
	"$runmon" --db "$db" import --run "read-$1" "$tmp/mix/$1.jsonl" "$tmp/mix/batches.jsonl" >/dev/null || fail "import $1"
	rc "$runmon" --db "$db" diagnose "read-$1" --json >/dev/null
	[ "$(field "$tmp/out" reading.is)" = "$2" ] && [ "$(field "$tmp/out" reading.stamp_shift)" = "$3" ] \
		|| fail "reading of $1: $(field "$tmp/out" reading)"
done
rc "$runmon" --db "$db" diagnose read-one >/dev/null
grep -q "^each point is one step's loss, joined to its own batch (a point every 10 steps; its composition explains the loss where the mean's cannot: R^2 0\.[0-9]* against 0\.[0-9]*, p [0-9.e-]*)" "$tmp/out" \
	|| fail "reading said: $(sed -n 3,5p "$tmp/out")"
rc "$runmon" --db "$db" diagnose read-one --loss-is mean >/dev/null
grep -q "^each point is the mean of the steps since the previous point (a point every 10 steps; given with --loss-is)" "$tmp/out" \
	|| fail "--loss-is mean: $(sed -n 3,5p "$tmp/out")"
rc "$runmon" --db "$db" diagnose read-one --loss-is step --json >/dev/null
[ "$(field "$tmp/out" reading.given)" = True ] && [ "$(field "$tmp/out" reading.is)" = step ] &&
	[ "$(field "$tmp/out" reading.stamp_shift)" = 0 ] && [ "$(field "$tmp/out" reading.basis)" = given ] ||
	fail "--loss-is step: $(field "$tmp/out" reading)"
# a stamp as given is the batch's own step: each point meets its one batch
[ "$(field "$tmp/out" join.with_batches)" = "$(field "$tmp/out" join.points)" ] &&
	[ "$(field "$tmp/out" join.batches_with_loss)" = "$(field "$tmp/out" join.points)" ] ||
	fail "--loss-is step joins: $(field "$tmp/out" join)"
[ "$(rc "$runmon" --db "$db" diagnose read-one --loss-is sometimes)" = 2 ] || fail "--loss-is sometimes accepted"
# In a chunked order one step's loss cannot be told from the mean of its
# ten: the evidence does not decide, and diagnose says what it assumed
# (the mean) and the option that says otherwise; a key that names a
# step's value (Lightning's train_loss_step) keeps that convention.
python3 - "$tmp/run" <<'PY'
import json, os, sys
d = sys.argv[1]
with open(os.path.join(d, "plain10.jsonl"), "w") as plain, open(os.path.join(d, "light10.jsonl"), "w") as light:
    for line in open(os.path.join(d, "history.jsonl")):
        r = json.loads(line)
        if r["_step"] % 10 == 0:
            plain.write(json.dumps({"_step": r["_step"], "loss": r["train/loss"]}) + "\n")
            light.write(json.dumps({"_step": r["_step"], "train_loss_step": r["train/loss"]}) + "\n")
PY
for w in "plain mean assumed none" "light step convention|agrees step"; do
	set -- $w
	"$runmon" --db "$db" import --run "chunk-$1" "$tmp/run/${1}10.jsonl" "$tmp/run/batches.jsonl" >/dev/null || fail "import chunk-$1"
	rc "$runmon" --db "$db" diagnose "chunk-$1" --json >/dev/null
	[ "$(field "$tmp/out" reading.is)" = "$2" ] && echo "|$3|" | grep -q "|$(field "$tmp/out" reading.basis)|" \
		&& [ "$(field "$tmp/out" reading.convention)" = "$4" ] || fail "chunk-$1: $(field "$tmp/out" reading)"
done
rc "$runmon" --db "$db" diagnose chunk-plain >/dev/null
grep -q "^each point is the mean of the steps since the previous point (a point every 10 steps; assumed: the batches' composition cannot tell it from one step's loss, .*; --loss-is step if each point is one step's)" "$tmp/out" \
	|| fail "assumed reading said: $(grep "each point" "$tmp/out")"
rc "$runmon" --db "$db" diagnose chunk-light >/dev/null
grep -q "^each point is one step's loss, joined to its own batch (a point every 10 steps; the loss key is a step's value (Lightning's <name>_step)" "$tmp/out" \
	|| fail "convention said: $(grep "each point" "$tmp/out")"

# A fully shuffled run (issue 65.2): every batch mixes lengths of every
# bucket, labelled by its longest sample, its loss the token mean of
# heavy-tailed per-sample losses (a batch of a few short samples averages
# few tokens: single-point spikes). Healthy: no spike is a reset, no bucket
# is a cluster. Two seeds; the detector before this fix warned on both.
for seed in 1 2; do
	mkdir -p "$tmp/shuf$seed"
	python3 - "$seed" "$tmp/shuf$seed" <<'PY'
import json, math, random, sys
rng = random.Random(int(sys.argv[1]))
bounds = [0, 770, 1216, 1728, 2432, 3296, 8192]
level = [0.55, 0.8, 1.05, 1.3, 1.7, 2.4]
def bucket(n):
    return next(i for i in range(6) if n <= bounds[i + 1])
def t3():  # Student's t, 3 degrees of freedom
    return rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
with open(sys.argv[2] + "/history.jsonl", "w") as h, open(sys.argv[2] + "/batches.jsonl", "w") as b:
    for s in range(8000):
        lens = [min(8192, max(16, int(rng.lognormvariate(6.6, 0.6)))) for _ in range(16)]
        trend = 1 + 1.5 * math.exp(-s / 3000)
        loss = sum(n * level[bucket(n)] * trend * math.exp(0.25 * t3() / math.sqrt(n / 300)) for n in lens) / sum(lens)
        h.write(json.dumps({"_step": s, "train/loss": loss * (1 + rng.gauss(0, 0.03))}) + "\n")
        b.write(json.dumps({"step": s, "bucket": bucket(max(lens)), "lens": lens}) + "\n")
PY
	"$runmon" --db "$db" import --run "shuffled-$seed" "$tmp/shuf$seed/history.jsonl" "$tmp/shuf$seed/batches.jsonl" >/dev/null \
		|| fail "import shuffled-$seed"
	[ "$(rc "$runmon" --db "$db" diagnose "shuffled-$seed")" = 0 ] || fail "shuffled-$seed flagged: $(grep VERDICT "$tmp/out")"
	grep -q "^VERDICT  ok: healthy order" "$tmp/out" || fail "shuffled-$seed: $(grep VERDICT "$tmp/out")"
done

# Resets logged as 10-step means of an interleaved order (issue 65.2):
# each point holds every bucket alike, so no bucket could show; the verdict
# says the bucket cannot be told, never "genuine instability" (the resets
# begin in bucket 5), with ids and with lengths only alike.
for nb in "" --no-bucket; do
	"$runmon" --db "$db" simulate --strategy interleaved --steps 10000 --seed 1 --spikes bucket $nb --log-every 10 \
		--run "blind$nb" >/dev/null || fail "simulate blind$nb"
	rc "$runmon" --db "$db" diagnose "blind$nb" >/dev/null
	grep -q "^VERDICT  warn: [0-9]* loss resets .*whether they begin in one bucket cannot be told: each point averages 10 steps" "$tmp/out" \
		|| fail "blind$nb: $(grep VERDICT "$tmp/out")"
	if grep "^VERDICT" "$tmp/out" | grep -q "genuine instability"; then fail "blind$nb named instability"; fi
done

# Words that match the numbers: the bucket resets begin in is named by its
# lengths, the shortest as the shortest (never "the longest" by habit).
for w in "5 longest" "0 shortest"; do
	set -- $w
	"$runmon" --db "$db" simulate --strategy interleaved --steps 8000 --seed 1 --spikes bucket --reset-bucket "$1" \
		--run "resets-in-$1" >/dev/null || fail "simulate resets in $1"
	rc "$runmon" --db "$db" diagnose "resets-in-$1" >/dev/null
	grep -q "inspect the samples of bucket $1 (the $2 sequences, [0-9]* to [0-9]* long: truncation" "$tmp/out" \
		|| fail "resets in bucket $1: $(grep -A3 "What to do" "$tmp/out")"
done

echo "e2e diagnose: all checks passed"
