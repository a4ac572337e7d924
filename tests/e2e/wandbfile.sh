#!/bin/sh
# End-to-end: W&B's own run-ID.wandb logs, written byte for byte by
# jsonl2wandb: import of a run directory (and wandb/latest-run) equals the
# import of the same rows as JSONL; damage and a cut-off tail; watch
# --wandb-dir following a log as it grows, a record half-written between
# ticks, a new run appearing; diagnose on a run directory.
# Usage: wandbfile.sh RUNMON JSONL2WANDB
set -eu
runmon=$1
j2w=$2
. "$(dirname "$0")/common.sh"
q() { sqlite3 "$1" "$2"; }
cd "$tmp"

# A homogeneous run with bucket resets, as one W&B history (batch/* keys).
"$runmon" simulate --strategy chunked --steps 6000 --seed 4 --spikes bucket --reset-every 25 --out sim >/dev/null
"$runmon" simulate --strategy interleaved --steps 3000 --seed 4 --out healthy >/dev/null
merge() { python3 - "$1" <<'PY'
import json, sys
d = sys.argv[1]
b = {r["step"]: r for r in map(json.loads, open(d + "/batches.jsonl"))}
with open(d + "/merged.jsonl", "w") as f:
    for i, r in enumerate(map(json.loads, open(d + "/history.jsonl"))):
        for k, v in b.get(r["_step"], {}).items():
            if k != "step":
                r["batch/" + k] = v
        if i == 17:
            r["train/loss"] = float("nan")   # written as a bare NaN
        f.write(json.dumps(r) + "\n")
PY
}
merge sim
merge healthy
dir=wandb/run-20261129_101500-ab12cd34
mkdir -p "$dir"
"$j2w" --run ab12cd34 --entity acme --project llm --name brave-fox --config save_steps=500 --noise 5 --exit 0 \
	sim/merged.jsonl "$dir/run-ab12cd34.wandb"
ln -s run-20261129_101500-ab12cd34 wandb/latest-run

# 1. The directory (through latest-run) imports as the JSONL does, row for row.
"$runmon" --db a.db import wandb/latest-run >out || fail "import: $(cat out)"
grep -q "wandb-log -> run 'acme/llm/ab12cd34': 7202 records, 6000 steps (6000 new), 6000 batches" out || fail "$(cat out)"
"$runmon" --db b.db import --run acme/llm/ab12cd34 sim/merged.jsonl >/dev/null
[ "$(q a.db "SELECT source, entity, project, name, display_name, state, json_extract(config_json, '\$.save_steps') FROM runs")" = \
	"wandb|acme|llm|ab12cd34|brave-fox|finished|500" ] || fail "run record: $(q a.db 'SELECT * FROM runs')"
for t in steps batches; do
	[ "$(q a.db "SELECT * FROM $t ORDER BY step" | md5sum)" = "$(q b.db "SELECT * FROM $t ORDER BY step" | md5sum)" ] ||
		fail "$t differ from the JSONL import"
done
[ "$(q a.db "SELECT nan_mask > 0 AND loss IS NULL FROM steps WHERE step = 17")" = 1 ] || fail "NaN"
# Older SDKs: one item per key, objects whole.
"$j2w" --legacy --run ab12cd34 --entity acme --project llm sim/merged.jsonl legacy.wandb
"$runmon" --db c.db import legacy.wandb >/dev/null
[ "$(q c.db "SELECT * FROM steps ORDER BY step" | md5sum)" = "$(q b.db "SELECT * FROM steps ORDER BY step" | md5sum)" ] ||
	fail "legacy items differ"

# 2. A damaged chunk: reported, the rest of its block lost, nothing else.
cp "$dir/run-ab12cd34.wandb" damaged.wandb
printf 'X' | dd of=damaged.wandb bs=1 seek=100000 conv=notrunc 2>/dev/null
"$runmon" --db d.db import damaged.wandb >out || fail "damaged import failed: $(cat out)"
grep -q "skipped 1 damaged chunk" out || fail "damage not reported: $(cat out)"
n=$(q d.db "SELECT COUNT(*) FROM steps")
[ "$n" -lt 6000 ] && [ "$n" -gt 5800 ] || fail "damaged: $n steps"
q d.db "ATTACH 'a.db' AS a; SELECT COUNT(*) FROM (SELECT step, loss, lr FROM steps EXCEPT SELECT step, loss, lr FROM a.steps)" |
	grep -qx 0 || fail "damaged import holds rows the log does not"

# 3. Cut off mid-record: the complete records, and a note; not finished.
size=$(wc -c <"$dir/run-ab12cd34.wandb")
head -c $((size - 400)) "$dir/run-ab12cd34.wandb" >cut.wandb
"$runmon" --db e.db import cut.wandb >out || fail "cut import failed"
grep -q "bytes are an incomplete record" out || fail "cut not reported: $(cat out)"
[ "$(q e.db "SELECT COALESCE(state, '-') FROM runs")" = "-" ] || fail "a cut log marked finished"

# 4. watch --wandb-dir: a live offline run, half a record written at a tick.
live=wandb2/offline-run-20261129_120000-zz99
mkdir -p "$live"
"$j2w" --run zz99 --project llm --name live --exit 0 sim/merged.jsonl full.wandb
size=$(wc -c <full.wandb)
half=$((size / 2 + 123))
head -c "$half" full.wandb >"$live/run-zz99.wandb"
"$runmon" --db w.db watch --once --wandb-dir wandb2 >out1 || fail "watch tick 1"
grep -q "^[0-9T:-]*Z ALERT \(warn\|critical\) zz99 RunmonHomogeneousBatching" out1 || fail "no alert on the live run: $(cat out1)"
n1=$(q w.db "SELECT COUNT(*) FROM steps")
off=$(q w.db "SELECT offset FROM tails")
[ "$n1" -gt 2000 ] && [ "$n1" -lt 4000 ] && [ "$off" -le "$half" ] || fail "tick 1: $n1 steps, offset $off of $half"
[ "$(q w.db "SELECT COALESCE(state, '-') FROM runs")" = "-" ] || fail "live run finished early"
tail -c +$((half + 1)) full.wandb >>"$live/run-zz99.wandb"     # the writer goes on
"$runmon" --db w.db watch --once --wandb-dir wandb2 >out2 || fail "watch tick 2"
[ "$(q w.db "SELECT COUNT(*) || ' ' || (SELECT state FROM runs) FROM steps")" = "6000 finished" ] ||
	fail "tick 2: $(q w.db 'SELECT COUNT(*) FROM steps')"
[ "$(q w.db "SELECT * FROM steps ORDER BY step" | md5sum)" = "$(q b.db "SELECT * FROM steps ORDER BY step" | md5sum)" ] ||
	fail "live reading lost or doubled rows"
# Alerted once per severity: a second tick alerts again only if the verdict rose.
if grep -q RunmonHomogeneousBatching out2; then
	grep -q "ALERT warn zz99" out1 && grep -q "ALERT critical zz99" out2 || fail "alerted twice: $(cat out2)"
fi
# A new, healthy run appears; the finished one is not read again.
mkdir -p wandb2/run-20261129_130000-hh11
"$j2w" --run hh11 --entity acme --project llm healthy/merged.jsonl wandb2/run-20261129_130000-hh11/run-hh11.wandb
"$runmon" --db w.db watch --once --wandb-dir wandb2 >out3 || fail "watch tick 3"
[ ! -s out3 ] || fail "healthy run alerted: $(cat out3)"
[ "$(q w.db "SELECT COUNT(*) FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = 'hh11')")" = 3000 ] ||
	fail "new run not read"

# 4a. A bad record in a followed log (issue 49.3): the records before it are
# kept, the position stays before it, the watch says which record; a
# second tick keeps what it had.
mkdir -p wandbbad/offline-run-20261129_140000-bb77
python3 - sim/merged.jsonl >badrec.jsonl <<'PY'
import sys
for i, line in enumerate(open(sys.argv[1])):
    if i == 1500:  # a batch of no sequences, refused as import refuses it
        line = line.replace('"batch/n": ', '"batch/n": 0, "was_n": ', 1)
    sys.stdout.write(line)
PY
grep -q '"batch/n": 0' badrec.jsonl || fail "the bad record was not made"
"$j2w" --run bb77 --project llm --name badrec badrec.jsonl wandbbad/offline-run-20261129_140000-bb77/run-bb77.wandb
"$runmon" --db br.db watch --once --wandb-dir wandbbad >/dev/null 2>err || true
grep -q "record [0-9]*: .*n 0 is not a sequence count.*(will retry next tick)" err || fail "bad record: $(cat err)"
n=$(q br.db "SELECT COUNT(*) FROM steps")
[ "$n" -ge 1400 ] && [ "$n" -le 1500 ] || fail "bad record: $n steps kept before it"
"$runmon" --db br.db watch --once --wandb-dir wandbbad >/dev/null 2>err || true
[ "$(q br.db "SELECT COUNT(*) FROM steps")" = "$n" ] || fail "bad record: a second tick changed the steps"
# diagnose DIR diagnoses the records before it, and says so.
"$runmon" --db br2.db diagnose wandbbad/offline-run-20261129_140000-bb77 >out 2>err || [ $? = 1 ] || fail "diagnose DIR with a bad record: $(cat err)"
grep -q "n 0 is not a sequence count.*; diagnosing the records before it" err || fail "diagnose DIR: $(cat err)"
grep -q "^run .*: [0-9]* loss points" out || fail "diagnose DIR: $(head -3 out)"

# 4b. A long healthy run turns homogeneous: the ticks between full diagnoses
# read the last --window steps, so the alert comes while the stored findings
# (the full run's, refreshed at 10% growth) still say healthy.
"$runmon" simulate --strategy interleaved --steps 30000 --seed 5 --out long >/dev/null
"$runmon" simulate --strategy chunked --steps 3000 --seed 5 --spikes bucket --reset-every 25 --out turn >/dev/null
merge long
merge turn
python3 - <<'PY'
import json
with open("turn/shifted.jsonl", "w") as f:
    for l in open("turn/merged.jsonl"):
        r = json.loads(l)
        r["_step"] += 30000
        f.write(json.dumps(r) + "\n")
PY
mkdir -p wandb3/run-20261129_140000-tt22
"$j2w" --run tt22 --entity acme --project llm long/merged.jsonl wandb3/run-20261129_140000-tt22/run-tt22.wandb
"$runmon" --db t.db watch --every 1 --wandb-dir wandb3 >t2 &
watcher=$!
for _ in $(seq $((100 * ${RUNMON_TEST_SLOW:-1}))); do
	n=$(q t.db "SELECT COUNT(*) FROM findings" 2>/dev/null || true)
	[ -n "$n" ] && [ "$n" != 0 ] && break
	sleep 0.1
done
[ ! -s t2 ] || fail "healthy part alerted: $(cat t2)"
"$j2w" --append --lines 1-2000 turn/shifted.jsonl wandb3/run-20261129_140000-tt22/run-tt22.wandb
for _ in $(seq $((60 * ${RUNMON_TEST_SLOW:-1}))); do grep -q RunmonResetsByBucket t2 && break; sleep 0.1; done
kill -TERM $watcher
wait $watcher || fail "watch exit status"
grep -q "^[0-9T:-]*Z ALERT [a-z]* acme/llm/tt22 RunmonResetsByBucket: loss resets cluster in bucket 5" t2 ||
	fail "no alert from the window: $(cat t2)"
[ "$(q t.db "SELECT COUNT(*) FROM steps")" = 32000 ] || fail "turn: steps"
[ "$(q t.db "SELECT COUNT(*) FROM findings WHERE severity <> 'info'")" = 0 ] ||
	fail "the alert came from a full diagnosis, not the window: $(q t.db "SELECT detector, severity, created_at FROM findings")"

# 5. diagnose on a run directory reads the log first.
code=0
"$runmon" --db f.db diagnose "$dir" >out || code=$?
[ "$code" = 1 ] && grep -q "VERDICT  critical: homogeneous batching" out || fail "diagnose dir: $code $(head -3 out)"
echo "wandbfile: ok"
