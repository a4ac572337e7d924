#!/bin/sh
# End-to-end: TensorBoard event files, written by tfevents_write.py (a
# writer that follows the format's documentation and checks CRC-32C
# against the published vectors): scalars as simple_value and in the
# tensor forms, HF's text summaries, Lightning's metadata-only hparams and
# repeated epoch, a histogram; a simulated homogeneous run diagnosed from
# its event file; directories and trees (one run per event directory, a
# restarted writer's second file); damage, a cut-off tail, stdin; watch
# following a growing event file.
# Usage: tfevents.sh RUNMON SRC
set -eu
runmon=$1
writer=$2/tests/tools/tfevents_write.py
. "$(dirname "$0")/common.sh"
q() { sqlite3 "$1" "$2"; }
tb() { python3 "$writer" "$@" || fail "tfevents_write.py $*"; }
cd "$tmp"

# A homogeneous run with bucket resets and a healthy one, each as one series
# of rows: the loss and batch/* tags at every step.
"$runmon" simulate --strategy chunked --steps 3000 --seed 4 --spikes bucket --reset-every 25 --out sim >/dev/null
"$runmon" simulate --strategy interleaved --steps 3000 --seed 4 --out healthy >/dev/null
merge() { python3 - "$1" <<'PY'
import json, sys
d = sys.argv[1]
b = {r["step"]: r for r in map(json.loads, open(d + "/batches.jsonl"))}
with open(d + "/merged.jsonl", "w") as f:
    for r in map(json.loads, open(d + "/history.jsonl")):
        out = {"_step": r["_step"], "train/loss": r["train/loss"]}
        for k, v in b.get(r["_step"], {}).items():
            if k != "step" and isinstance(v, (int, float)):
                out["batch/" + k] = v
        f.write(json.dumps(out) + "\n")
PY
}
merge sim
merge healthy
mkdir -p runs/sick runs/healthy
tb sim/merged.jsonl runs/sick/events.out.tfevents.1751747371.host.1.0
tb healthy/merged.jsonl runs/healthy/events.out.tfevents.1751747371.host.2.0

# 1. A file: detected from its bytes, named after its directory, every step.
"$runmon" --db a.db import runs/sick/events.out.tfevents.1751747371.host.1.0 >out || fail "import: $(cat out)"
grep -q "tfevents -> run 'sick': [0-9]* records, 3000 steps (3000 new), 3000 batches, steps 0..2999, loss key 'train/loss'" out ||
	fail "$(cat out)"
# Float32 values read back as the shortest decimal of the float.
python3 - sim/merged.jsonl a.db <<'PY' || fail "loss values"
import json, sqlite3, struct, sys
want = {r["_step"]: struct.unpack("<f", struct.pack("<f", r["train/loss"]))[0] for r in map(json.loads, open(sys.argv[1]))}
got = dict(sqlite3.connect(sys.argv[2]).execute("SELECT step, loss FROM steps"))
assert len(got) == len(want), (len(got), len(want))
bad = [s for s in want if struct.pack("<f", got[s]) != struct.pack("<f", want[s])]
assert not bad, "steps %s differ" % bad[:5]
long_repr = [s for s in got if len(repr(got[s])) > 11]
assert not long_repr, "not shortest: %r" % [got[s] for s in long_repr[:3]]
PY
"$runmon" --db a.db diagnose sick >out 2>&1 || [ $? = 1 ] || fail "diagnose: $(cat out)"
grep -q "^VERDICT .*homogeneous batching" out || fail "sick run: $(head -5 out)"
"$runmon" --db a.db import runs/healthy/events.out.tfevents.1751747371.host.2.0 >/dev/null
"$runmon" --db a.db diagnose healthy >out 2>&1 || fail "healthy diagnose exit: $(head -5 out)"
if grep -q "^VERDICT .*homogeneous" out; then fail "healthy run called homogeneous: $(head -3 out)"; fi

# 2. The tensor forms hold the same values; the quirks of real writers
# (text and hparams summaries, a histogram, a tag written twice at a step)
# change nothing.
head -n 400 sim/merged.jsonl >short.jsonl
tb short.jsonl simple.tfevents
"$runmon" --db s.db import --run f simple.tfevents >/dev/null || fail "simple"
want=$(q s.db "SELECT step, loss, n FROM steps JOIN batches USING (run_id, step) ORDER BY step" | md5sum)
for form in float_val float_val_unpacked content; do
	tb --form $form short.jsonl $form.tfevents
	"$runmon" --db $form.db import --run f $form.tfevents >out || fail "$form: $(cat out)"
	[ "$(q $form.db "SELECT step, loss, n FROM steps JOIN batches USING (run_id, step) ORDER BY step" | md5sum)" = "$want" ] ||
		fail "$form differs from simple_value"
done
tb --form double short.jsonl double.tfevents
"$runmon" --db d.db import --run f double.tfevents >/dev/null || fail "double"
[ "$(q d.db "SELECT COUNT(*) FROM steps s JOIN batches b USING (run_id, step) WHERE s.loss > 0")" = 400 ] || fail "double"
python3 - short.jsonl d.db <<'PY' || fail "double values are not exact"
import json, sqlite3, sys
want = {r["_step"]: r["train/loss"] for r in map(json.loads, open(sys.argv[1]))}
got = dict(sqlite3.connect(sys.argv[2]).execute("SELECT step, loss FROM steps"))
assert got == want
PY
tb --text --hparams --histogram --repeat batch/n short.jsonl quirks.tfevents
"$runmon" --db qk.db import --run f quirks.tfevents >out || fail "quirks: $(cat out)"
[ "$(q qk.db "SELECT step, loss, n FROM steps JOIN batches USING (run_id, step) ORDER BY step" | md5sum)" = "$want" ] ||
	fail "quirks changed the rows: $(cat out)"
# A file of other scalars names them when no loss is among them.
python3 -c 'import json; [print(json.dumps({"_step": i, "metrics/mAP": 0.1 * i})) for i in range(5)]' >map.jsonl
tb map.jsonl map.tfevents
"$runmon" --db m.db import map.tfevents >out 2>err && fail "no loss accepted"
grep -q "map.tfevents: nothing to import.*keys read: metrics/mAP" err || fail "no loss: $(cat err)"

# 3. Directories: one run per directory of event files; a restarted writer's
# second file in the same directory goes on with the run.
mkdir -p tb/exp1/version_0 tb/exp1/version_1 tb/exp2/version_0 tb/exp2/version_9
head -n 200 sim/merged.jsonl >part1.jsonl
sed -n '201,400p' sim/merged.jsonl >part2.jsonl
tb short.jsonl tb/exp1/version_0/events.out.tfevents.1000.host.1.0
tb part1.jsonl tb/exp1/version_1/events.out.tfevents.1000.host.1.0
tb part2.jsonl tb/exp1/version_1/events.out.tfevents.2000.host.1.0
tb part1.jsonl tb/exp2/version_0/events.out.tfevents.1000.host.1.0
: >empty.jsonl
tb --text empty.jsonl tb/exp2/version_9/events.out.tfevents.1000.host.1.0
"$runmon" --db t.db import tb >out || fail "tree: $(cat out)"
[ "$(q t.db "SELECT name || ':' || (SELECT COUNT(*) FROM steps WHERE run_id = runs.id) FROM runs ORDER BY name" | tr '\n' ' ')" = \
	"exp1-version_0:400 exp1-version_1:400 exp2-version_0:200 " ] || fail "tree runs: $(q t.db 'SELECT name FROM runs')"
"$runmon" --db t1.db import tb/exp1/version_1 >out || fail "dir: $(cat out)"
grep -q "run 'exp1-version_1': .* 400 steps" out || fail "dir (a version_N goes with its experiment, as in the tree): $(cat out)"
[ "$(q t1.db "SELECT step, loss, n FROM steps JOIN batches USING (run_id, step) ORDER BY step" | md5sum)" = "$want" ] ||
	fail "two files of one run differ from one"
"$runmon" --db t2.db import --run mine tb/exp1/version_1 >/dev/null && [ "$(q t2.db "SELECT name FROM runs")" = mine ] ||
	fail "--run on a directory"
# --run on a tree prefixes each run's own name (issue 67's mutant appended
# it), and a file named from its own directory ("./events...") takes the
# directory's name, never "." (another mutant).
"$runmon" --db t3.db import --run mine tb >/dev/null || fail "--run on a tree"
[ "$(q t3.db "SELECT group_concat(name, ' ') FROM (SELECT name FROM runs ORDER BY name)")" = "mine-exp1-version_0 mine-exp1-version_1 mine-exp2-version_0" ] ||
	fail "--run on a tree: $(q t3.db 'SELECT name FROM runs')"
(cd tb/exp2/version_0 && "$runmon" --db "$PWD/../../../t4.db" import ./events.out.tfevents.1000.host.1.0 >/dev/null) || fail "./events"
[ "$(q t4.db "SELECT name FROM runs")" = exp2-version_0 ] || fail "./events named: $(q t4.db 'SELECT name FROM runs')"
# diagnose reads an event directory (or file) first; a tree of several runs
# is stored and its runs named.
"$runmon" --db dg.db diagnose runs/sick >out 2>&1 || [ $? = 1 ] || fail "diagnose DIR: $(cat out)"
grep -q "^run sick: 3000 loss points" out && grep -q "^VERDICT .*homogeneous batching" out || fail "diagnose DIR: $(head -3 out)"
"$runmon" --db dg.db diagnose tb 2>err && fail "diagnose of a tree of runs"
grep -q "tb holds 3 TensorBoard runs, now stored (exp1-version_0, exp1-version_1, exp2-version_0): diagnose one by name" err ||
	fail "diagnose tree: $(cat err)"
"$runmon" --db f.db import --format tfevents --run named map.tfevents --loss-key metrics/mAP >out || fail "--format: $(cat out)"
grep -q "tfevents -> run 'named': 6 records, 5 steps" out || fail "--format tfevents: $(cat out)"
mkdir nothing
"$runmon" --db t3.db import nothing 2>err && fail "an empty directory imported"
grep -q "TensorBoard" err || fail "empty directory: $(cat err)"

# 4. Damage: a record whose data fails its checksum is a bad record (its
# number said; --skip-bad passes it); a length that fails its checksum ends
# the framing, and nothing is stored.
tb --damage 50 short.jsonl dmg.tfevents
"$runmon" --db x.db import --run f dmg.tfevents >out 2>err && fail "damaged data accepted"
grep -q "dmg.tfevents: record 50: the record's checksum does not match" err || fail "damaged data: $(cat err)"
[ "$(q x.db "SELECT COUNT(*) FROM runs")" = 0 ] || fail "a damaged import left a run"
"$runmon" --db x.db import --skip-bad --run f dmg.tfevents >out || fail "--skip-bad: $(cat out)"
grep -q "skipped 1 bad record (50); first: the record.s checksum does not match" out || fail "--skip-bad names the record: $(cat out)"
"$runmon" --db x.db import --run g simple.tfevents >/dev/null
tb --damage-length 60 short.jsonl dmglen.tfevents
"$runmon" --db x.db import --run f dmglen.tfevents >out 2>err && fail "damaged length accepted"
grep -q "dmglen.tfevents: record 60 (byte [0-9]*): the length's checksum does not match" err || fail "length: $(cat err)"
[ "$(q x.db "SELECT COUNT(*) FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = 'g')")" = 400 ] ||
	fail "a failed import touched another run"
# A writer killed mid-record: what is complete is read, the rest is said.
tb --cut 9 short.jsonl cut.tfevents
"$runmon" --db c.db import --run f cut.tfevents >out || fail "cut: $(cat out)"
grep -q "the last [0-9]* bytes are an incomplete record" out || fail "cut: $(cat out)"
[ "$(q c.db "SELECT COUNT(*) FROM steps")" -ge 399 ] || fail "cut lost steps"
# Cut one byte into the data's checksum: that record is the incomplete
# tail, never framed past the file's end (issue 67's mutant over-read the
# heap, which ASan reports).
tb --cut 3 short.jsonl crc.tfevents
"$runmon" --db crc.db import --run f crc.tfevents >out || fail "cut into the CRC: $(cat out)"
grep -q "the last [0-9]* bytes are an incomplete record" out || fail "cut into the CRC: $(cat out)"
[ "$(q crc.db "SELECT COUNT(*) FROM steps")" = 400 ] || [ "$(q crc.db "SELECT COUNT(*) FROM steps")" = 399 ] ||
	fail "cut into the CRC: $(q crc.db "SELECT COUNT(*) FROM steps") steps"
# A tensor of two values is no scalar: the loss is never its first value
# (issue 67's mutant took it as one).
tb --vector train/loss short.jsonl vec.tfevents
"$runmon" --db vec.db import --run v vec.tfevents >out 2>&1 || true
[ "$(q vec.db "SELECT COUNT(*) FROM steps WHERE loss IS NOT NULL" 2>/dev/null || echo 0)" = 0 ] ||
	fail "a [2] tensor read as the loss: $(q vec.db "SELECT step, loss FROM steps LIMIT 3")"
# A stream is spooled and read like a file (binary, yet not refused).
"$runmon" --db st.db import --run piped - <simple.tfevents >out || fail "stdin: $(cat out)"
[ "$(q st.db "SELECT COUNT(*) FROM steps")" = 400 ] || fail "stdin"

# 5. watch follows a growing event file: a record half-written waits; the
# last step waits while its events are recent (its other tags may follow).
tb part1.jsonl a.tfevents
tb short.jsonl full.tfevents
live=$tmp/live/events.out.tfevents.1000.host.1.0
mkdir -p live
head -c $(($(wc -c <a.tfevents) + 7)) full.tfevents >"$live"
"$runmon" --db w.db watch --once --offline --batches "lv=$live" lv >/dev/null 2>err || [ $? = 1 ] || fail "watch 1: $(cat err)"
[ "$(q w.db "SELECT COUNT(*) FROM steps")" = 200 ] || fail "tick 1: $(q w.db 'SELECT COUNT(*) FROM steps') $(cat err)"
cp full.tfevents "$live.tmp" && cat "$live.tmp" >"$live" && rm "$live.tmp"
"$runmon" --db w.db watch --once --offline --batches "lv=$live" lv >/dev/null 2>err || [ $? = 1 ] || fail "watch 2: $(cat err)"
[ "$(q w.db "SELECT step, loss, n FROM steps JOIN batches USING (run_id, step) ORDER BY step" | md5sum)" = "$want" ] ||
	fail "tick 2: $(q w.db 'SELECT COUNT(*) FROM steps')"
# A step stamped later than now (a writer's clock ahead, or this second) is
# held; the next step lets it through.
python3 -c 'import json, sys; r = json.loads(sys.stdin.readlines()[-1]); r["_step"] = 400; print(json.dumps(r)); r["_step"] = 401; print(json.dumps(r), file=sys.stderr)' \
	<part2.jsonl >s400.jsonl 2>s401.jsonl
tb --append --wall "$(($(date +%s) + 3600))" s400.jsonl "$live"
"$runmon" --db w.db watch --once --offline --batches "lv=$live" lv >/dev/null 2>err || [ $? = 1 ] || fail "watch 3: $(cat err)"
[ "$(q w.db "SELECT COUNT(*) FROM steps")" = 400 ] || fail "tick 3: a recent step was not held back"
tb --append s401.jsonl "$live"
"$runmon" --db w.db watch --once --offline --batches "lv=$live" lv >/dev/null 2>err || [ $? = 1 ] || fail "watch 4: $(cat err)"
[ "$(q w.db "SELECT COUNT(*) FROM steps WHERE step >= 400")" = 2 ] || fail "tick 4: $(q w.db 'SELECT MAX(step) FROM steps')"

# A followed event file with a damaged record (issue 67.2): the records
# before it are stored and the position waits before it; --skip-bad passes
# it. dmg.tfevents holds 200 steps of 2 records each after its header.
mkdir -p dm
cp dmg.tfevents dm/events.out.tfevents.1.host.1.0
"$runmon" --db dm.db watch --once --offline --batches "dm=$tmp/dm/events.out.tfevents.1.host.1.0" dm >/dev/null 2>err || true
grep -q "record 50: the record's checksum does not match" err || fail "watch, a damaged record: $(cat err)"
before=$(q dm.db "SELECT COUNT(*) FROM steps")
[ "$before" -gt 0 ] && [ "$before" -lt 200 ] || fail "watch, a damaged record: $before steps stored before it"
"$runmon" --db dm.db watch --once --offline --skip-bad --batches "dm=$tmp/dm/events.out.tfevents.1.host.1.0" dm >/dev/null 2>err || true
[ "$(q dm.db "SELECT COUNT(*) FROM steps")" -gt "$before" ] || fail "watch --skip-bad: still stuck at $before: $(cat err)"

# A FIFO named like an event file never blocks a tick (issue 67.6).
mkfifo fifo.tfevents
timeout 20 "$runmon" --db ff.db watch --once --offline --batches "ff=$tmp/fifo.tfevents" ff >/dev/null 2>err || true
grep -q "fifo.tfevents: not a regular file: watch follows files as they grow" err || fail "a FIFO: $(cat err)"

# Two experiments' lightning_logs/version_0 are two runs (issue 67): each
# named with its experiment, whatever path reaches it.
mkdir -p e1/lightning_logs/version_0 e2/lightning_logs/version_0
tb short.jsonl e1/lightning_logs/version_0/events.out.tfevents.1.h.1.0
tb short.jsonl e2/lightning_logs/version_0/events.out.tfevents.1.h.1.0
"$runmon" --db lv.db import e1/lightning_logs/version_0 >out || fail "e1's version_0"
"$runmon" --db lv.db import e2/lightning_logs/version_0 >out || fail "e2's version_0: $(cat out)"
[ "$(q lv.db "SELECT group_concat(name, ' ') FROM (SELECT name FROM runs ORDER BY name)")" = "e1-version_0 e2-version_0" ] \
	|| fail "version_0 runs: $(q lv.db 'SELECT name FROM runs')"
(cd e1/lightning_logs/version_0 && "$runmon" --db "$tmp/lv2.db" import ./events.out.tfevents.1.h.1.0 >"$tmp/out") || fail "from ."
grep -q "run 'e1-version_0'" out || fail "a file in .: $(cat out)"

# A tree too big to read whole is refused, never read in part (issue 67.3):
# an event file below the depth limit, and more directories than the limit.
mkdir -p deep/1/2/3/4/5/6/7/8/9
cp runs/sick/events.out.tfevents.1751747371.host.1.0 deep/1/2/3/4/5/6/7/8/9/
cp runs/healthy/events.out.tfevents.1751747371.host.2.0 deep/
set +e
"$runmon" --db deep.db import deep >out 2>err; code=$?
set -e
[ $code = 2 ] && grep -q "deep: a tree of more than 10000 directories, or deeper than 8 levels: none of it was read" err \
	|| fail "a deep tree: exit $code, $(cat err)"
[ ! -s deep.db ] || [ "$(q deep.db "SELECT COUNT(*) FROM steps")" = 0 ] || fail "a deep tree stored steps"
python3 -c 'import os; [os.makedirs("wide/d%05d" % i) for i in range(10001)]'
set +e
"$runmon" --db deep.db import wide >out 2>err; code=$?
set -e
[ $code = 2 ] && grep -q "wide: a tree of more than 10000 directories" err || fail "a wide tree: exit $code, $(cat err)"
echo ok
