#!/bin/sh
# hostile.sh - careless and hostile input to the real binary (issue 19):
# each section is one defect's regression test. Usage: hostile.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
cd "$tmp"
rc() { set +e; "$@" >out 2>err; echo $? >rcfile; set -e; cat rcfile; }
esc=$(printf '\033')
noesc() { if grep -q "$esc" "$@"; then fail "an escape sequence reached the terminal: $*"; fi; }
"$runmon" simulate --strategy chunked --steps 3000 --seed 5 --out sim >/dev/null

# 1. A batch too large to exist is a bad line, named by file and line; the
# nightly report of the other runs still works.
printf '{"step":0,"bucket":0,"n":2305843009213693952,"max_len":100,"tokens":100}\n' >huge.jsonl
[ "$(rc "$runmon" --db h.db import --run r1 sim/history.jsonl huge.jsonl)" = 2 ] || fail "huge n: exit $(cat rcfile)"
grep -q "huge.jsonl:1: n .* is not a sequence count" err || fail "huge n message: $(cat err)"
[ "$(sqlite3 h.db 'SELECT COUNT(*) FROM runs')" = 0 ] || fail "a refused import stored a run"
"$runmon" --db h.db import --run good sim/history.jsonl sim/batches.jsonl >/dev/null
# Rows an older runmon let through: the store holds them, diagnose survives.
sqlite3 h.db "INSERT INTO batches (run_id, step, rank, bucket, n, min_len, max_len, tokens)
              SELECT id, 5, 1, 0, 2305843009213693952, -7, 9000000000000000000, 100 FROM runs WHERE name = 'good'"
[ "$(rc "$runmon" --db h.db report --all --format json --fail-on critical)" != 2 ] || fail "report --all: $(cat err)"
python3 -c "import json,sys; assert len(json.load(open('out'))['runs']) == 1" || fail "report --all lost the run"

# 3. Terminal escapes in names and keys never reach the terminal.
bad=$(printf 'x\033]0;pwned\007\033[31mred')
"$runmon" --db t.db import --run "$bad" sim/history.jsonl sim/batches.jsonl >imp.out
noesc imp.out
grep -q 'x\\x1b\]0;pwned\\x07\\x1b\[31mred' imp.out || fail "import summary does not show the escaped name: $(cat imp.out)"
printf "step,l${esc}[2Joss\n0,1.5\n1,1.4\n" >"k${esc}[2J.csv"
"$runmon" --db t.db import --loss-key "l${esc}[2Joss" "k${esc}[2J.csv" >imp2.out
noesc imp2.out
"$runmon" --db t.db runs >runs.out
noesc runs.out
[ "$(grep -c 'x\\x1b' runs.out)" = 1 ] || fail "runs: the escaped name is missing"
rc "$runmon" --db t.db diagnose "$bad" >/dev/null
noesc out err
grep -q "^run x\\\\x1b" out || fail "diagnose header: $(head -2 out)"
rc "$runmon" --db t.db diagnose "nosuch${esc}[2J" >/dev/null
noesc err
grep -q 'nosuch\\x1b\[2J' err || fail "error message: $(cat err)"
"$runmon" --db t.db report --all --format md >r.md || true
noesc r.md
# copy prints each run's name, compare the runs' bucket labels (issue 67.5)
"$runmon" copy --from t.db --to copied.db "$bad" >copy.out 2>&1 || fail "copy: $(cat copy.out)"
noesc copy.out
grep -q 'copied x\\x1b' copy.out || fail "copy: the escaped name is missing: $(cat copy.out)"
python3 - sim/batches.jsonl lab.jsonl <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        row = json.loads(line)
        row["bucket"] = "b\x1b[2J%d" % row["bucket"]
        out.write(json.dumps(row) + "\n")
PY
"$runmon" --db t.db import --run labelled sim/history.jsonl lab.jsonl >/dev/null || fail "import text labels"
rc "$runmon" --db t.db compare labelled "$bad" >/dev/null
noesc out err
grep -q 'level, bucket b\\x1b\[2J' out || fail "compare: the escaped label is missing: $(grep level out | head -3)"

# 5. Invalid UTF-8 in a run name or key: no run vanishes from JSON.
u=$(printf 'bad\377name')
printf 'step,lo\377ss\n0,1.5\n1,1.4\n2,1.3\n' >u.csv
"$runmon" --db u.db import --run "$u" --loss-key "$(printf 'lo\377ss')" u.csv >/dev/null
"$runmon" --db u.db runs --json >runs.json
python3 - <<'PY' || fail "runs --json with invalid UTF-8"
import json
doc = json.load(open("runs.json"))
assert doc["schema"] == "runmon.runs/1", doc
runs = doc["runs"]
assert [r["run"] for r in runs] == ["bad\ufffdname"], runs
assert runs[0]["loss_key"] == "lo\ufffdss", runs
PY
rc "$runmon" --db u.db report --all --format json >/dev/null
python3 -c "import json; r = json.load(open('out'))['runs']; assert r[0]['run']['name'] == 'bad\ufffdname', r" \
	|| fail "report json with invalid UTF-8: $(cat err)"
rc "$runmon" --db u.db diagnose "$u" --json >/dev/null
python3 -c "import json; d = json.load(open('out')); assert d['run']['name'] == 'bad\ufffdname'" \
	|| fail "diagnose --json with invalid UTF-8: exit $(cat rcfile) $(cat err)"

# 6. A partial diagnosis (--since) is printed, not stored over the full one.
"$runmon" --db p.db import --run homog sim/history.jsonl sim/batches.jsonl >/dev/null
rc "$runmon" --db p.db diagnose homog >/dev/null
before=$(sqlite3 p.db "SELECT group_concat(detector || severity || created_at) FROM findings")
[ -n "$before" ] || fail "a full diagnosis stored nothing"
rc "$runmon" --db p.db diagnose homog --since 2900 >/dev/null
grep -q "^Findings not stored: this diagnosis covers steps >= 2900 only" out || fail "--since: not said"
[ "$(sqlite3 p.db "SELECT group_concat(detector || severity || created_at) FROM findings")" = "$before" ] \
	|| fail "--since replaced the stored findings"
rc "$runmon" --db p.db diagnose homog --since 2900 --json >/dev/null
python3 -c "import json; assert json.load(open('out'))['findings'] == 'not stored: partial diagnosis'" \
	|| fail "--since --json: findings field"

# 9. Another program's database is refused before anything is written; a
# read command never creates a database.
sqlite3 places.sqlite "CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT); INSERT INTO moz_places (url) VALUES ('x')"
sum=$(cksum places.sqlite)
for cmd in runs "report --all" "import --run x sim/history.jsonl"; do
	[ "$(rc "$runmon" --db places.sqlite $cmd)" = 4 ] || fail "foreign database, $cmd: exit $(cat rcfile)"
	grep -q "'places.sqlite' is not a runmon database" err || fail "foreign database message: $(cat err)"
done
[ "$(cksum places.sqlite)" = "$sum" ] && [ ! -e places.sqlite-wal ] || fail "the foreign database was modified"
[ "$(sqlite3 places.sqlite "PRAGMA user_version")" = 0 ] || fail "user_version set on a foreign database"
[ "$(rc "$runmon" --db missing.db runs)" = 2 ] && grep -q "no database at 'missing.db'" err \
	|| fail "runs on a missing database: exit $(cat rcfile) $(cat err)"
[ ! -e missing.db ] || fail "runs created a database"
[ "$(rc "$runmon" --db missing.db report --all)" = 2 ] && [ ! -e missing.db ] || fail "report on a missing database"

# 10. An empty --db is an error, not the default database.
export HOME="$tmp/home" XDG_DATA_HOME=
for args in "--db= runs" "--db '' runs" "runs --db ''" "import --db '' sim/history.jsonl"; do
	[ "$(eval rc "$runmon" $args)" = 2 ] || fail "runmon $args: exit $(cat rcfile)"
	grep -q "empty database path" err || fail "runmon $args: $(cat err)"
done
[ ! -e "$tmp/home/.local/share/runmon/runmon.db" ] || fail "an empty --db wrote the default database"
RUNMON_DB= "$runmon" import --run d sim/history.jsonl >/dev/null || fail "RUNMON_DB= (empty) is unset"
[ -e "$tmp/home/.local/share/runmon/runmon.db" ] || fail "RUNMON_DB= did not use the default database"

# 7. Nothing imported is an error, not exit 0.
[ "$(rc "$runmon" --db n.db import --run a --loss-key typo sim/history.jsonl)" = 2 ] \
	&& grep -q "history.jsonl: no loss key 'typo' (given with --loss-key)" err || fail "--loss-key typo: $(cat err)"
[ "$(rc "$runmon" --db n.db import --run a --loss-key '' sim/history.jsonl)" = 2 ] \
	&& grep -q -- "--loss-key wants a value" err || fail "--loss-key '': $(cat err)"
[ "$(rc "$runmon" --db n.db import --run '' sim/history.jsonl)" = 2 ] || fail "--run ''"
printf 'not json\n{"step":\n' >allbad.jsonl
[ "$(rc "$runmon" --db n.db import --run b --skip-bad --format jsonl allbad.jsonl)" = 2 ] \
	&& grep -q "allbad.jsonl: no good line: 2 bad lines skipped" err || fail "--skip-bad, no good line: $(cat err)"
grep -q -- "--skip-bad imports" err && fail "suggests --skip-bad when it was given"
[ "$(sqlite3 n.db 'SELECT COUNT(*) FROM runs')" = 0 ] || fail "an empty run was created"

# 8. Streams are read once: stdin, process substitution and a FIFO import
# like the file (format detected, nothing lost).
"$runmon" --db f.db import --run file sim/history.jsonl >/dev/null
want=$(sqlite3 f.db "SELECT COUNT(*), SUM(loss) FROM steps")
"$runmon" --db s1.db import --run s - <sim/history.jsonl >s1.out || fail "import - (stdin)"
grep -q "^-: wandb-history -> run 's'" s1.out || fail "stdin summary: $(cat s1.out)"
cat sim/history.jsonl | "$runmon" --db s2.db import --run s /dev/stdin >/dev/null || fail "import /dev/stdin (a pipe)"
mkfifo fifo
timeout 300 sh -c 'cat sim/history.jsonl >fifo' &
timeout 300 "$runmon" --db s3.db import --run s fifo >/dev/null || fail "import from a FIFO"
for d in s1.db s2.db s3.db; do
	[ "$(sqlite3 $d "SELECT COUNT(*), SUM(loss) FROM steps")" = "$want" ] || fail "$d: $(sqlite3 $d 'SELECT COUNT(*) FROM steps') steps"
done
if command -v bash >/dev/null; then
	bash -c '"$1" --db s4.db import --run s <(cat sim/batches.jsonl)' _ "$runmon" >/dev/null || fail "process substitution"
	[ "$(sqlite3 s4.db "SELECT COUNT(*) FROM batches")" = 3000 ] || fail "process substitution lost batches"
fi

# 12. Messages say what is wrong, and where.
printf '{"step": null, "loss": 1}\n' >null.jsonl
rc "$runmon" --db m.db import null.jsonl >/dev/null
grep -q "null.jsonl:1: the step 'step' is null" err || fail "null step: $(cat err)"
grep -q "(null)" err && fail "(null) printed"
printf '{"step": "5", "loss": 1.5}\n{"step": "6", "loss": "1.25"}\n' >strstep.jsonl
"$runmon" --db m.db import --run q strstep.jsonl >/dev/null || fail "numbers written as strings"
[ "$(sqlite3 m.db "SELECT group_concat(step || ':' || loss) FROM steps")" = "5:1.5,6:1.25" ] || fail "string numbers"
printf '{"step": "five", "loss": 1}\n' >wordstep.jsonl
rc "$runmon" --db m.db import wordstep.jsonl >/dev/null
grep -q "the step 'step' is not a number: five" err || fail "word step: $(cat err)"
printf '{"step": 1e18, "loss": 1}\n' >bigstep.jsonl
rc "$runmon" --db m.db import bigstep.jsonl >/dev/null
grep -q "step 1000000000000000000 is beyond 2^53" err || fail "big step: $(cat err)"
: >empty.jsonl
[ "$(rc "$runmon" --db m.db import empty.jsonl)" = 2 ] && grep -q "empty.jsonl: file is empty" err || fail "empty file"
grep -q -- "--skip-bad" err && fail "an empty file suggests --skip-bad"
[ "$(rc "$runmon" --db m.db import nosuchfile.jsonl)" = 2 ] && grep -q "cannot read 'nosuchfile.jsonl'" err \
	|| fail "missing file: exit $(cat rcfile)"
seq 100 2000 >lens.txt
[ "$(rc "$runmon" buckets --max-len 1 lens.txt)" = 2 ] || fail "buckets --max-len 1"
[ "$(rc "$runmon" buckets --max-len 9223372036854775807 lens.txt)" = 2 ] || fail "buckets --max-len 2^63-1"
"$runmon" buckets --max-len 6 --json lens.txt >b.json || fail "buckets --max-len 6"
python3 -c "import json; b = json.load(open('b.json'))['equal_width']['boundaries']; assert b == sorted(set(b)) and b[0] == 0, b" \
	|| fail "equal-width boundaries not increasing"

# 4. Bucket labels as people write them: upper bounds, names, negative and
# huge integers give the verdict the plain ids give, naming the label.
"$runmon" simulate --strategy interleaved --spikes bucket --steps 6000 --seed 11 --out lab >/dev/null
"$runmon" --db l.db import --run ids lab/history.jsonl lab/batches.jsonl >/dev/null
rc "$runmon" --db l.db diagnose ids >/dev/null
grep "^VERDICT" out >want.verdict
grep -q "loss resets cluster in bucket 5 " want.verdict || fail "the plain run's verdict: $(cat want.verdict)"
cat >relabel.py <<'PY'
import json, sys
labels = json.loads(sys.argv[1])
for line in sys.stdin:
    r = json.loads(line)
    r["bucket"] = labels[r["bucket"]]
    print(json.dumps(r))
PY
relabel() { # relabel NAME JSON-LIST-OF-6-LABELS
	python3 relabel.py "$2" <lab/batches.jsonl >"lab/$1.jsonl"
	"$runmon" --db l.db import --run "$1" lab/history.jsonl "lab/$1.jsonl" >/dev/null
	rc "$runmon" --db l.db diagnose "$1" >/dev/null
}
relabel upper '[1216, 770, 1728, 2432, 3296, 8192]'
grep -q "loss resets cluster in bucket 8192 " out || fail "upper-bound labels: $(grep VERDICT out)"
grep -q "6000 batches with a bucket, 6 buckets" out || fail "upper-bound labels dropped: $(head -1 out)"
relabel names '["xs", "s", "m", "l", "xl", "long 3296-8192"]'
grep -q "loss resets cluster in bucket long 3296-8192 " out || fail "text labels: $(grep VERDICT out)"
# JSON text labels are decoded (issue 35.1): Python writes "lång" as
# "l\u00e5ng", and one label written two ways is one bucket.
relabel escaped '["xs", "s", "m", "l", "xl", "lång"]'
grep -q "loss resets cluster in bucket lång " out || fail "escaped label: $(grep VERDICT out)"
cat >twoways.py <<'PY'
import json, sys
labels = json.loads(sys.argv[1])
for i, line in enumerate(sys.stdin):
    r = json.loads(line)
    label = labels[r["bucket"]]
    r["bucket"] = "@"
    text = "".join("\\u%04x" % ord(c) for c in label) if i % 2 else json.dumps(label)[1:-1]
    print(json.dumps(r).replace('"@"', '"' + text + '"'))
PY
python3 twoways.py '["xs", "s", "m", "l", "xl", "q\"uo\\te"]' <lab/batches.jsonl >lab/twoways.jsonl
grep -q 'u0071' lab/twoways.jsonl || fail "twoways.py wrote no escapes"
"$runmon" --db l.db import --run twoways lab/history.jsonl lab/twoways.jsonl >/dev/null
rc "$runmon" --db l.db diagnose twoways >/dev/null
grep -q "6000 batches with a bucket, 6 buckets" out || fail "one label written two ways: $(head -1 out)"
[ "$(sqlite3 l.db "SELECT label FROM bucket_labels WHERE label LIKE 'q%'")" = 'q"uo\te' ] \
	|| fail "a quote and a backslash kept escaped: $(sqlite3 l.db "SELECT label FROM bucket_labels")"
# Six labels sharing their first 60 bytes stay six (issue 35.2): whole in
# the store and in JSON, apart in the text tables (shortened with a hash).
long="bucket-of-sequences-from-the-webcrawl-shard-with-a-long-prefix"
relabel longs "[\"$long-a\", \"$long-b\", \"$long-c\", \"$long-d\", \"$long-e\", \"$long-f\"]"
grep -q "6000 batches with a bucket, 6 buckets" out || fail "long labels merged: $(head -1 out)"
[ "$(sed -n '/^Same-bucket streaks/,/^$/p' out | grep -c "^  *bucket-of-sequences-from-the-webc.*~[0-9a-f]\{6\} ")" = 6 ] \
	|| fail "long labels not shown apart: $(sed -n '/^Same-bucket streaks/,/^$/p' out)"
[ "$(sed -n '/^Same-bucket streaks/,/^$/p' out | grep -o "bucket-of-sequences-from-the-webc[^ ]*" | sort -u | wc -l)" = 6 ] \
	|| fail "long labels shown alike: $(sed -n '/^Same-bucket streaks/,/^$/p' out)"
rc "$runmon" --db l.db diagnose --json longs >/dev/null
python3 - "$long" <<'PY' || fail "long labels in JSON"
import json, sys
d = json.load(open("out"))
labels = sorted(l["label"] for l in d["bucket_labels"])
assert labels == [sys.argv[1] + "-" + c for c in "abcdef"], labels
PY
relabel signed '[-3, -2, -1, 0, 1, 2]'
grep -q "loss resets cluster in bucket 2 " out || fail "negative labels: $(grep VERDICT out)"
relabel huge '[4294967296, 4294967297, 4294967298, 4294967299, 4294967300, 4294967301]'
grep -q "loss resets cluster in bucket 4294967301 " out || fail "labels beyond 2^32: $(grep VERDICT out)"
[ "$(sqlite3 l.db "SELECT MAX(bucket) FROM batches WHERE run_id = (SELECT id FROM runs WHERE name = 'huge')")" = 4294967301 ] \
	|| fail "labels beyond 2^32 stored modulo 2^32"
# The stored levels join the stored labels (dashboards' adjusted_loss).
[ "$(sqlite3 l.db "SELECT COUNT(DISTINCT bucket) FROM adjusted_loss WHERE run_id = (SELECT id FROM runs WHERE name = 'names')")" = 6 ] \
	|| fail "adjusted_loss does not join text labels"
printf '{"step":0,"bucket":1.5,"max_len":100}\n' >half.jsonl
rc "$runmon" --db l.db import --run h half.jsonl >/dev/null
grep -q "half.jsonl:1: bucket 1.5 is neither an integer below 2^50 nor a text label" err || fail "bucket 1.5: $(cat err)"
# More labels than the detectors count: grouped by length, and said.
python3 - >many.jsonl <<'PY'
import json
for s in range(4000):
    b = s % 40
    print(json.dumps({"step": s, "bucket": "b%02d" % b, "n": 4, "max_len": 100 + 50 * b}))
PY
"$runmon" --db l.db import --run many lab/history.jsonl many.jsonl >/dev/null
rc "$runmon" --db l.db diagnose many >/dev/null
grep -q "4000 batches with a bucket, 32 buckets (40 bucket labels, grouped by length into 32)" out \
	|| fail "40 labels: $(head -1 out)"
[ "$(rc "$runmon" --db l.db import --run x --buckets "$(seq -s, 0 100 3400)" lab/batches.jsonl)" = 2 ] \
	|| fail "--buckets with 35 boundaries accepted"

# --pattern in time linear in the line (issue 35.3): a field that runs to
# the line's end from every start, and a run of blanks tried from each of
# its bytes, were quadratic (a 2 MB line: about 13 minutes). 4 MB lines
# each, bounded at 60 s (linear: well under a second).
python3 - >quad.log <<'PY'
import sys
sys.stdout.write("L=" * 2000000 + "\n")
sys.stdout.write(" " * 4000000 + "x\n")
sys.stdout.write("step 7 L=2.5 Z\n")
PY
[ "$(rc timeout $((60 * ${RUNMON_TEST_SLOW:-1})) "$runmon" --db quad.db import --run quad --pattern 'L={loss} Z' quad.log)" = 0 ] \
	|| fail "--pattern on a 4 MB line: exit $(cat rcfile) $(cat err)"
[ "$(sqlite3 quad.db "SELECT step || ':' || loss FROM steps")" = "1:2.5" ] || fail "--pattern quad: wrong rows"
[ "$(rc timeout $((60 * ${RUNMON_TEST_SLOW:-1})) "$runmon" --db quad.db import --run quad2 --pattern ' {step} L={loss}' quad.log)" = 0 ] \
	|| fail "--pattern with a leading blank on 4 MB of blanks: exit $(cat rcfile) $(cat err)"
[ "$(sqlite3 quad.db "SELECT step || ':' || loss FROM steps WHERE run_id = (SELECT id FROM runs WHERE name = 'quad2')")" = "7:2.5" ] \
	|| fail "--pattern quad2: wrong rows"

# Endless streams (issue 49.4): /dev/zero is refused from its first bytes,
# nothing spooled; an endless stream of text stops at RUNMON_SPOOL_MAX.
[ "$(rc timeout 20 "$runmon" --db zero.db import --run z /dev/zero)" = 2 ] || fail "/dev/zero: exit $(cat rcfile)"
grep -q "^runmon: error: /dev/zero: binary data, not a training log" err || fail "/dev/zero: $(cat err)"
set +e
yes "step 1 loss 2.5" | RUNMON_SPOOL_MAX=1000000 timeout 20 "$runmon" --db zero.db import --run y - >out 2>err
code=$?
set -e
[ $code = 2 ] || fail "an endless stream: exit $code $(cat err)"
grep -q "^runmon: error: -: more than 1000000 bytes from a stream (RUNMON_SPOOL_MAX)" err || fail "an endless stream: $(cat err)"

# What another writer may have stored (issue 49.16): a step of INT64_MAX
# and a save interval of 1e300 overflowed signed sums and a float cast.
# Readers take steps below 2^53, as import writes them.
"$runmon" --db huge.db simulate --steps 2000 --run huge >/dev/null
sqlite3 huge.db "INSERT INTO steps(run_id, step, loss) VALUES (1, 9223372036854775807, 1.0), (1, 9223372036854775806, 1.0);
INSERT INTO batches(run_id, step, rank, micro, bucket, n, max_len) VALUES (1, 9223372036854775807, 0, 0, 2, 4, 100);
UPDATE runs SET config_json = '{\"save_steps\": {\"value\": 1e300}, \"eval_steps\": 9223372036854775807}'"
for c in diagnose report compare; do
	case $c in report) set -- -o huge.html ;; compare) set -- --at 1000 ;; *) set -- ;; esac
	code=$(rc "$runmon" --db huge.db $c huge "$@")
	[ "$code" -le 1 ] || fail "$c of a run with a step of INT64_MAX: exit $code $(cat err)"
done
"$runmon" --db huge.db diagnose huge >out 2>&1 || true
grep -q "^run huge: 2000 loss points, steps 0..1999" out || fail "a step beyond 2^53 was read: $(head -1 out)"

# A quoted cell over several lines, as pandas and Python's csv module write
# a note with newlines (issue 49.13): one record; a quote left open to the
# end of the file is a bad line naming where it opened.
python3 - >multi.csv <<'PY'
import csv, sys
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["step", "loss", "note"])
w.writerow([1, 2.5, "plain"])
w.writerow([2, 2.4, 'line one\nline two, with "quotes"\n\nand a blank line'])
w.writerow([3, 2.3, ""])
PY
[ "$(rc "$runmon" --db multi.db import --run multi multi.csv)" = 0 ] || fail "a multi-line quoted cell: $(cat err)"
[ "$(sqlite3 multi.db "SELECT group_concat(step || ':' || loss) FROM steps")" = "1:2.5,2:2.4,3:2.3" ] || fail "multi-line cell: rows"
printf 'step,loss,note\n1,2.5,ok\n2,2.4,"never closed\n3,2.3,x\n' >open.csv
[ "$(rc "$runmon" --db multi.db import --run open open.csv)" = 2 ] || fail "an open quote: exit $(cat rcfile)"
grep -q "open.csv:4: a quoted cell opened on line 3 is not closed by the end of the file" err || fail "an open quote: $(cat err)"

# A plain import in time linear in the line (issue 49.9, 49.10): a word
# looked for in a line of ordinary text, and "name[" groups that never
# close, rescanned the rest of the line at each letter or group (4 MB of
# text: 38 s; 1 MB of groups: 2 s). 16 MB of text and 8 MB of groups,
# bounded at 60 s each (linear: well under a second).
python3 - >long.log <<'PY'
import sys
s = "The model was trained for 10 epochs with a learning rate of 0.001 and evaluated every 500 steps; "
sys.stdout.write("step 1 loss 2.5\n" + s * (16000000 // len(s)) + "\n" + "loss[" * 1600000 + "\nstep 2 loss 2.4\n")
PY
[ "$(rc timeout $((60 * ${RUNMON_TEST_SLOW:-1})) "$runmon" --db long.db import --run long long.log)" = 0 ] \
	|| fail "a plain import of 24 MB lines: exit $(cat rcfile) $(cat err)"
[ "$(sqlite3 long.db "SELECT group_concat(step || ':' || loss) FROM steps")" = "1:2.5,2:2.4" ] || fail "long lines: wrong rows"

echo "e2e hostile: all checks passed"
