#!/bin/sh
# End-to-end: drive the real runmon binary on fixture files and read the
# database back with sqlite3. Usage: import.sh RUNMON DATA_DIR
set -eu
runmon=$1
data=$2
. "$(dirname "$0")/common.sh"
db=$tmp/e2e.db
q() { sqlite3 "$db" "$1"; }

"$runmon" --version | grep -q '^runmon ' || fail "--version"
[ "$("$runmon" version)" = "$("$runmon" --version)" ] || fail "runmon version is not runmon --version"
"$runmon" --help | grep -q 'import' || fail "--help lists import"
"$runmon" help import | grep -q -- '--skip-bad' || fail "help import"

# History plus sidecar into one run, with bucket boundaries.
out=$("$runmon" --db "$db" import --run demo --buckets 0,770,1216,1728,2432,3296,8192 \
	"$data/wandb-history.jsonl" "$data/sidecar.jsonl")
echo "$out"
echo "$out" | grep -q "wandb-history -> run 'demo': 9 lines, 7 steps (5 new), 2 batches" || fail "history summary"
echo "$out" | grep -q "step counter restarted 1 time: line 5 (step 2 after 3)" || fail "restart line"
echo "$out" | grep -q "2 rows replaced" || fail "replaced count"
[ "$(q 'SELECT COUNT(*) FROM steps')" = 5 ] || fail "steps stored"
[ "$(q 'SELECT COUNT(*) FROM batches')" = 4 ] || fail "batches stored"

# RUNMON_DB is the same as --db; runs lists the run.
RUNMON_DB=$db "$runmon" runs | grep -q '^demo .* 0\.\.4 ' || fail "runs table"
"$runmon" --db "$db" runs --json | grep -q '"run": "demo"' || fail "runs --json"

# Re-import: nothing changes.
before=$(q 'SELECT total(loss*step), COUNT(*) FROM steps')
"$runmon" --db "$db" import --run demo "$data/wandb-history.jsonl" >/dev/null
[ "$(q 'SELECT total(loss*step), COUNT(*) FROM steps')" = "$before" ] || fail "re-import changed steps"

# A bad line: exit 2, file:line on stderr, nothing committed.
set +e
err=$("$runmon" --db "$db" import --run other "$data/bad.jsonl" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] || fail "bad line exit code $rc"
echo "$err" | grep -q "runmon: error: .*bad.jsonl:3: column 32: expected a string key" || fail "bad line message: $err"
[ "$(q "SELECT COUNT(*) FROM runs WHERE name = 'other'")" = 0 ] || fail "bad import committed"

# --skip-bad imports the rest.
"$runmon" --db "$db" import --run other --skip-bad "$data/bad.jsonl" | grep -q "skipped 2 bad lines (3, 5)" \
	|| fail "skip-bad summary"

# Two writers of one log: one line says so, and no restart list.
python3 -c "
for s in range(200):
    print('{\"step\": %d, \"loss\": %.3f}' % (s, 2 - s / 1000))
    if s >= 2:
        print('{\"step\": %d, \"loss\": %.3f}' % (s - 2, 2 - (s - 2) / 1000))
" >"$tmp/two.jsonl"
"$runmon" --db "$tmp/two.db" import --run two "$tmp/two.jsonl" >"$tmp/two.out"
grep -q "each step appears 2 times: 2 writers interleaved in one file; the later row of each step is kept" "$tmp/two.out" \
	|| fail "two writers: $(cat "$tmp/two.out")"
if grep -q "restarted" "$tmp/two.out"; then fail "two writers reported as restarts"; fi

# A console log as a user has it: a banner, a config dump, records, a
# validation line, a traceback and a resumed run (the counter goes back).
"$runmon" --db "$tmp/log.db" import "$data/logs/fairseq-resumed.log" >"$tmp/log.out"
cat "$tmp/log.out"
grep -q "fairseq-resumed.log: log -> run 'fairseq-resumed': 25 lines, 8 steps (6 new), 8 batches, 1 eval rows, steps 100..600" \
	"$tmp/log.out" || fail "log summary"
grep -q "batch composition from bsz (n), wpb (tokens)" "$tmp/log.out" || fail "log composition"
grep -q "step counter restarted 1 time: line 22 (step 400 after 500)" "$tmp/log.out" || fail "log restart"
grep -q "16 lines held no record" "$tmp/log.out" || fail "log non-records"
grep -q "the file holds 2 segments" "$tmp/log.out" || fail "log segments"
lq() { sqlite3 "$tmp/log.db" "$1"; }
[ "$(lq 'SELECT group_concat(step) FROM (SELECT step FROM steps ORDER BY step)')" = "100,200,300,400,500,600" ] || fail "log steps"
[ "$(lq 'SELECT loss FROM steps WHERE step = 400')" = 10.01 ] || fail "the resumed run's step 400 wins"
[ "$(lq "SELECT value FROM evals WHERE key = 'eval_loss' AND step = 300")" = 9.88 ] || fail "log eval"
[ "$(lq "SELECT n || '/' || tokens FROM batches WHERE step = 600")" = 352/10455 ] || fail "log batch"
[ "$(lq "SELECT format FROM imports")" = log ] || fail "log format logged"
# --log-every numbers the records of a log without steps (HF Trainer dicts).
"$runmon" --db "$tmp/log.db" import --run hf --log-every 50 "$data/logs/hf-console.log" >"$tmp/hf.out"
grep -q "steps 50..150" "$tmp/hf.out" || fail "--log-every: $(cat "$tmp/hf.out")"
grep -q "the lines carry no step" "$tmp/hf.out" || fail "--log-every note"
# --pattern reads a shape runmon does not know; a broken pattern is a usage error.
printf 'epoch 1 | it 10 | L=2.50 | toks 16,384\nbanner\nepoch 1 | it 20 | L=2.40 | toks 15,000\n' >"$tmp/own.txt"
"$runmon" --db "$tmp/log.db" import --run own --pattern 'it {step} | L={loss} | toks {tokens}' "$tmp/own.txt" >"$tmp/own.out"
grep -q "own.txt: log -> run 'own': 3 lines, 2 steps (2 new), 2 batches, steps 10..20" "$tmp/own.out" ||
	fail "--pattern: $(cat "$tmp/own.out")"
set +e
"$runmon" --db "$tmp/log.db" import --log-every 0 "$data/logs/hf-console.log" >/dev/null 2>&1
[ $? = 2 ] || fail "--log-every 0: exit 2"
"$runmon" --db "$tmp/log.db" import --pattern 'it {step' "$tmp/own.txt" 2>"$tmp/pat.err"
[ $? = 2 ] || fail "--pattern broken: exit 2"
grep -q "a '{' without its '}'" "$tmp/pat.err" || fail "--pattern message: $(cat "$tmp/pat.err")"
"$runmon" --db "$tmp/log.db" import --format csv --pattern 'it {step}' "$tmp/own.txt" >/dev/null 2>&1
[ $? = 2 ] || fail "--pattern with --format csv: exit 2"
set -e

# Golden imports: every trainer's fixture, its summary and the rows it gave,
# against tests/data/logs/golden.txt (regenerate: RUNMON_UPDATE_GOLDEN=1).
gdb=$tmp/golden.db
for f in "$data"/logs/*.log; do
	name=$(basename "$f" .log)
	"$runmon" --db "$gdb" import --run "$name" "$f" | sed "s|$data/||"
done >"$tmp/golden.txt"
sqlite3 "$gdb" "SELECT 'step', r.name, s.step, s.loss, s.lr, s.epoch FROM steps s JOIN runs r ON r.id = s.run_id
	ORDER BY r.name, s.step;
	SELECT 'batch', r.name, b.step, b.n, b.tokens, round(b.mean_len, 3), b.max_len FROM batches b
	JOIN runs r ON r.id = b.run_id ORDER BY r.name, b.step;
	SELECT 'eval', r.name, e.step, e.key, e.value FROM evals e JOIN runs r ON r.id = e.run_id
	ORDER BY r.name, e.step, e.key;
	SELECT 'other', r.name, o.step, o.key, o.loss FROM other_losses o JOIN runs r ON r.id = o.run_id
	ORDER BY r.name, o.step, o.key;" >>"$tmp/golden.txt"
if [ "${RUNMON_UPDATE_GOLDEN:-}" = 1 ]; then
	cp "$tmp/golden.txt" "$data/logs/golden.txt"
fi
diff -u "$data/logs/golden.txt" "$tmp/golden.txt" || fail "log imports differ from tests/data/logs/golden.txt"

# --explain: how a file is read, and nothing written (the database keeps
# its rows; a database that did not exist is not made).
before=$(q "SELECT (SELECT COUNT(*) FROM runs) || '/' || (SELECT COUNT(*) FROM steps)")
"$runmon" --db "$db" import --explain "$data/logs/opennmt.log" >"$tmp/explain" || fail "--explain exit"
after=$(q "SELECT (SELECT COUNT(*) FROM runs) || '/' || (SELECT COUNT(*) FROM steps)")
[ "$before" = "$after" ] || fail "--explain wrote: $before -> $after"
for want in "logs/opennmt.log: read as log (lines of text that are neither JSON lines nor CSV under a header)" \
	"  record at line 3:" \
	"xent                         7.69;            -> the loss" \
	"acc                          4.80;            -> ignored (not a key runmon knows)" \
	"tok/s                        298/315          -> composition: tokens per second" \
	"validation_perplexity        410.2            -> an eval metric" \
	"1 line: no name and number (a banner, a message); the first, line 1:" \
	"what an import would store (nothing was written):" \
	"opennmt.log: log -> run 'opennmt': 7 lines, 3 steps (3 new), 2 batches"; do
	grep -qF "$want" "$tmp/explain" || fail "--explain lacks '$want': $(cat "$tmp/explain")"
done
if grep -q "$(printf '\033')" "$tmp/explain"; then fail "--explain shows escapes raw"; fi
"$runmon" --db "$tmp/never.db" import --explain --format jsonl "$data/logs/megatron-ds.log" >"$tmp/explain" 2>&1 \
	&& fail "--explain of a log forced as jsonl: exit 2 expected"
[ ! -e "$tmp/never.db" ] || fail "--explain made a database"
"$runmon" --db "$tmp/never.db" import --explain --format jsonl --step-key it "$data/plain_iter.jsonl" >"$tmp/explain" || fail "--explain --format"
grep -q "read as jsonl (given with --format)" "$tmp/explain" || fail "--explain --format: $(head -2 "$tmp/explain")"
[ ! -e "$tmp/never.db" ] || fail "--explain made a database"
[ -z "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'runmon-explain-*' -newer "$tmp/explain" 2>/dev/null)" ] || fail "--explain left its scratch store"

# Readers compete (issue 63): a console log whose first line reads as a
# CSV header is read as a log, and --explain shows what each reader found.
sh=$data/logs/shapes
"$runmon" --db "$tmp/never.db" import --explain "$sh/llmc-main.log" >"$tmp/explain" || fail "--explain llmc-main.log"
grep -q "^  reader log  *(chosen) 7 records (7 losses), 0 bad lines" "$tmp/explain" \
	&& grep -q "^  reader csv  *0 records" "$tmp/explain" && grep -q "read as log" "$tmp/explain" \
	|| fail "--explain of competing readers: $(head -5 "$tmp/explain")"
"$runmon" --db "$tmp/never.db" import --explain "$sh/columns-per-epoch.json" >"$tmp/explain" || fail "--explain columns"
grep -q "^  reader hf-trainer-state explains nothing: .*no \"log_history\" array" "$tmp/explain" \
	&& grep -q "^  reader json-columns  *(chosen) 10 records" "$tmp/explain" || fail "--explain columns: $(head -6 "$tmp/explain")"
[ ! -e "$tmp/never.db" ] || fail "--explain made a database"
# JSON lines are no document: json-columns (which reads a file whole) does
# not compete for them (a 276 MB history took 550 MB when it did)
"$runmon" --db "$tmp/never.db" import --explain "$data/plain_iter.jsonl" >"$tmp/explain" || fail "--explain jsonl"
if grep -q "reader json-columns" "$tmp/explain"; then fail "json-columns competed for JSON lines"; fi
grep -q "reader jsonl  *(chosen)" "$tmp/explain" || fail "--explain jsonl: $(head -4 "$tmp/explain")"
# a JSON-lines file with a broken line is still JSON lines: the line is told
if "$runmon" --db "$tmp/badj.db" import "$data/bad.jsonl" >/dev/null 2>"$tmp/err"; then fail "bad.jsonl imported"; fi
grep -q "bad.jsonl:3: column 32: expected a string key" "$tmp/err" || fail "bad.jsonl: $(cat "$tmp/err")"

# Steps from the file's own evidence (issue 64.1): with no step, no bar
# and no config saying the interval, the record count is the last resort
# and a warning names the option that fixes it; --log-every numbers them.
printf "{'loss': 1.5}\n{'loss': 1.4}\n{'loss': 1.3}\n" >"$tmp/nostep.log"
"$runmon" --db "$tmp/ns.db" import "$tmp/nostep.log" >"$tmp/out" || fail "a log without steps"
grep -q "warning: the lines carry no step, no progress bar counts them and no config says the interval: steps are the record count; give --log-every N" "$tmp/out" \
	|| fail "no-step warning: $(cat "$tmp/out")"
"$runmon" --db "$tmp/ns2.db" import --log-every 10 "$tmp/nostep.log" >"$tmp/out" || fail "--log-every"
grep -q "steps 10..30" "$tmp/out" && grep -q "steps are the record count x --log-every$" "$tmp/out" \
	|| fail "--log-every: $(cat "$tmp/out")"

# Names by meaning (issue 67's unchosen mutants): a dynamic loss scale is no
# loss; of two loss-named keys alike, the one in more rows is the loss; a
# generic file name reached through ".." does not name its run "..".
printf '{"step": %d, "loss_scale": %d, "nll": 2.%d}\n' 1 65536 5 2 32768 4 3 65536 3 >"$tmp/scale.jsonl"
"$runmon" --db "$tmp/names.db" import "$tmp/scale.jsonl" >"$tmp/out" || fail "loss scale: $(cat "$tmp/out")"
grep -q "loss key 'nll'" "$tmp/out" || fail "a loss scale taken for the loss: $(cat "$tmp/out")"
printf '{"step": 1, "g_loss": 1.1, "d_loss": 2.0}\n{"step": 2, "d_loss": 1.9}\n{"step": 3, "d_loss": 1.8}\n{"step": 4, "g_loss": 1.0, "d_loss": 1.7}\n' \
	>"$tmp/tie.jsonl"
"$runmon" --db "$tmp/names.db" import "$tmp/tie.jsonl" >"$tmp/out" || fail "tie: $(cat "$tmp/out")"
grep -q "loss key 'd_loss'" "$tmp/out" || fail "a tie of loss names went to the rarer: $(cat "$tmp/out")"
mkdir -p "$tmp/up/sub"
cp "$data/wandb-history.jsonl" "$tmp/up/wandb-history.jsonl"
(cd "$tmp/up/sub" && "$runmon" --db "$tmp/names.db" import ../wandb-history.jsonl >"$tmp/out") || fail "import from ..: $(cat "$tmp/out")"
if grep -q "run '\.\.'" "$tmp/out"; then fail "a run named ..: $(cat "$tmp/out")"; fi

# An interrupted --explain leaves no scratch directory (issue 67).
mkdir "$tmp/scratch"
python3 -c 'import sys; sys.stdout.write("".join("step %d loss 2.5\n" % i for i in range(600000)))' >"$tmp/long.log"
TMPDIR=$tmp/scratch "$runmon" --db "$tmp/never.db" import --explain "$tmp/long.log" >/dev/null 2>&1 &
ex=$!
for _ in $(seq $((500 * ${RUNMON_TEST_SLOW:-1}))); do [ -n "$(ls "$tmp/scratch")" ] && break; sleep 0.01; done
[ -n "$(ls "$tmp/scratch")" ] || fail "--explain made no scratch directory"
kill -INT $ex
wait $ex || true
[ -z "$(ls "$tmp/scratch")" ] || fail "an interrupted --explain left $(ls "$tmp/scratch")"

# A step written twice in a row (a CSV's last row repeated, a resumed
# logger's first) replaces its row and is no restart (issue 49's mutant:
# step < prev read as <= left every test green).
printf '{"step":1,"loss":2}\n{"step":2,"loss":2}\n{"step":2,"loss":2.1}\n{"step":3,"loss":2}\n' >"$tmp/repeat.jsonl"
"$runmon" --db "$tmp/repeat.db" import "$tmp/repeat.jsonl" >"$tmp/repeat.out" || fail "a repeated step: $(cat "$tmp/repeat.out")"
grep -q "1 rows replaced an earlier row of the same step" "$tmp/repeat.out" || fail "a repeated step: $(cat "$tmp/repeat.out")"
if grep -q "restart" "$tmp/repeat.out"; then fail "a repeated step read as a restart: $(cat "$tmp/repeat.out")"; fi
[ "$(sqlite3 "$tmp/repeat.db" "SELECT restarts || ' ' || replaced FROM imports")" = "0 1" ] || fail "a repeated step: counts"

# Loss components beside a total: each kept, the total diagnosed, said so.
"$runmon" --db "$tmp/never.db" import --explain "$data/logs/quirks/metrics.jsonl" >"$tmp/explain" || fail "--explain metrics.jsonl"
grep -q "loss_cls .*-> another loss (kept apart, in other_losses)" "$tmp/explain" || fail "--explain of a component: $(head -12 "$tmp/explain")"
grep -q "total_loss .*-> the loss" "$tmp/explain" || fail "--explain of the total: $(head -12 "$tmp/explain")"

# Usage errors exit 2.
set +e
"$runmon" --db "$db" import >/dev/null 2>&1; [ $? = 2 ] || fail "no file: exit 2"
"$runmon" --db "$db" frobnicate >/dev/null 2>&1; [ $? = 2 ] || fail "unknown command: exit 2"
"$runmon" --db "$db" import --buckets 5,3 x >/dev/null 2>&1; [ $? = 2 ] || fail "bad buckets: exit 2"
"$runmon" --db /nonexistent/dir/x.db import "$data/sidecar.jsonl" >/dev/null 2>&1; [ $? = 4 ] || fail "bad db path: exit 4"
"$runmon" --db /nonexistent/dir/x.db runs >/dev/null 2>&1; [ $? = 2 ] || fail "runs on a missing database: exit 2"
# Files that are no training log are refused at once, named by what they
# are (exit 2), even with --format log; nothing is stored.
printf '<!DOCTYPE html>\n<html><body><p>loss 0.5 step 3</p>\n<p>loss 0.4 step 4</p></body></html>\n' >"$tmp/page.html"
printf '\211PNG\r\n\032\n\0\0\0\rIHDR' >"$tmp/pic.png"
printf 'step 1 loss 2.0\nstep 2 loss 1.9\n' | gzip >"$tmp/train.log.gz"
printf 'step 1 loss 2.0\0\0\0\1\2 step 2 loss 1.9\n' >"$tmp/blob.bin"
before=$(sqlite3 "$db" "SELECT COUNT(*) FROM steps")
for f in "page.html:an HTML page" "pic.png:a PNG image" "train.log.gz:a gzip archive" "blob.bin:binary data"; do
	file=${f%%:*} kind=${f#*:}
	for fmt in auto log; do
		"$runmon" --db "$db" import --format $fmt "$tmp/$file" >/dev/null 2>"$tmp/err"; code=$?
		[ $code = 2 ] && grep -q "$file: $kind, not a training log" "$tmp/err" \
			|| fail "$file (--format $fmt): exit $code, $(cat "$tmp/err")"
	done
done
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM steps")" = "$before" ] || fail "a refused file stored steps"
# A command that only reads never creates a database; a file that is no
# database says so in one sentence.
"$runmon" --db "$tmp/missing.db" diagnose foo >/dev/null 2>"$tmp/err"; code=$?
[ $code = 2 ] && [ ! -e "$tmp/missing.db" ] || fail "diagnose created a database: exit $code, $(cat "$tmp/err")"
echo "just text, long enough to be read as a header......................................" >"$tmp/text.db"
for c in runs "diagnose x"; do
	"$runmon" --db "$tmp/text.db" $c >/dev/null 2>"$tmp/err"
	grep -q "'.*text.db' is not an SQLite database; give another --db" "$tmp/err" || fail "$c on a text file: $(cat "$tmp/err")"
done
# Files of trainers runmon has no rules for, with no flag: a JSON array
# (also with --format json-array), runs appended to one log and one CSV.
q="$data/logs/quirks"
"$runmon" --db "$tmp/q.db" import "$q/chainer-log.json" >"$tmp/out" 2>&1 || fail "json array: $(cat "$tmp/out")"
grep -q "json-array -> run 'chainer-log'.*6 steps" "$tmp/out" || fail "json array: $(cat "$tmp/out")"
"$runmon" --db "$tmp/q2.db" import --format json-array --run ch "$q/chainer-log.json" >/dev/null 2>&1 \
	|| fail "--format json-array"
[ "$(sqlite3 "$tmp/q2.db" "SELECT COUNT(*) FROM evals WHERE key LIKE 'validation/%'")" -gt 0 ] \
	|| fail "json array: validation keys are evals"
"$runmon" --db "$tmp/q.db" import "$q/appended-runs.log" "$q/appended-runs.csv" >"$tmp/out" 2>&1 \
	|| fail "appended runs: $(cat "$tmp/out")"
grep -q "run 'appended-runs-3'" "$tmp/out" && grep -q "run 3 of the file: from line" "$tmp/out" \
	|| fail "appended runs: $(cat "$tmp/out")"
[ "$(sqlite3 "$tmp/q.db" "SELECT COUNT(*) FROM runs WHERE name LIKE 'appended-runs%'")" = 3 ] \
	|| fail "appended runs: the log's and the CSV's runs"
"$runmon" --db "$tmp/q.db" import --explain "$q/letters.log" >"$tmp/out" 2>&1 || fail "explain: $(cat "$tmp/out")"
grep -q "inferred from the file: loss 'ppl'.*epoch 'e'" "$tmp/out" || fail "explain inferred: $(cat "$tmp/out")"
# --explain groups the lines by template and names the training record's
"$runmon" --db "$tmp/q.db" import --explain "$q/record-block.log" >"$tmp/out" 2>&1 || fail "explain: $(cat "$tmp/out")"
grep -q "3 lines, 3 records (the training record): train/loss: #$" "$tmp/out" \
	&& grep -q "3 lines, 0 records: === iteration # ===$" "$tmp/out" || fail "explain templates: $(cat "$tmp/out")"
set -e
# Simulated and real data never mix unasked (issue 50.2): an import into a
# simulated run and a simulation over an imported one are refused, with
# nothing changed, until --replace.
g=$tmp/guard.db
"$runmon" --db "$g" simulate --steps 400 --run exp-b >/dev/null || fail "guard: simulate"
printf '{"step": %d, "loss": 1.5}\n' 0 1 2 >"$tmp/real.jsonl"
if "$runmon" --db "$g" import --run exp-b "$tmp/real.jsonl" >/dev/null 2>"$tmp/err"; then fail "import into a simulated run"; fi
grep -q "run 'exp-b' holds a simulated run; this import would mix with it: give another --run, or --replace" "$tmp/err" ||
	fail "guard: $(cat "$tmp/err")"
[ "$(sqlite3 "$g" "SELECT source || ' ' || (SELECT COUNT(*) FROM steps) FROM runs")" = "sim 400" ] || fail "guard: the run changed"
"$runmon" --db "$g" import --replace --run exp-b "$tmp/real.jsonl" >/dev/null || fail "import --replace"
[ "$(sqlite3 "$g" "SELECT source || ' ' || (SELECT COUNT(*) FROM steps) || ' ' || (SELECT COUNT(*) FROM batches) FROM runs")" = "file 3 0" ] ||
	fail "import --replace: $(sqlite3 "$g" 'SELECT source FROM runs')"
if "$runmon" --db "$g" simulate --steps 150 --run exp-b >/dev/null 2>"$tmp/err"; then fail "simulate over an imported run"; fi
grep -q "run 'exp-b' holds real data (source file); simulate would replace it" "$tmp/err" || fail "guard: $(cat "$tmp/err")"
[ "$(sqlite3 "$g" "SELECT COUNT(*) FROM steps")" = 3 ] || fail "guard: a refused simulate changed the run"
"$runmon" --db "$g" simulate --replace --steps 150 --run exp-b >/dev/null || fail "simulate --replace"
[ "$(sqlite3 "$g" "SELECT source || ' ' || (SELECT COUNT(*) FROM steps) FROM runs")" = "sim 150" ] || fail "simulate --replace"
"$runmon" --db "$g" simulate --steps 160 --run exp-b >/dev/null || fail "re-simulating a simulated run"
# Nothing replaced silently (issue 64.4): another file's overlapping steps
# are refused (exit 2, the run unchanged) unless --replace or --append; the
# same file again changes nothing; a file that goes on past the run's last
# step is added and said so.
o=$tmp/overlap
mkdir "$o"
for i in 0 10 20 30 40 50 60 70 80 90 100; do echo "step $i loss 2.$i"; done >"$o/a.log"
for i in 0 10 20 30 40 50; do echo "step $i loss 3.$i"; done >"$o/other.log"
for i in 110 120 130; do echo "step $i loss 1.$i"; done >"$o/cont.log"
odb=$o/o.db
"$runmon" --db "$odb" import --run ng "$o/a.log" >/dev/null || fail "overlap: first import"
held=$(sqlite3 "$odb" "SELECT COUNT(*) || ' ' || SUM(loss) FROM steps")
set +e
"$runmon" --db "$odb" import --run ng "$o/other.log" >"$tmp/out" 2>"$tmp/err"; code=$?
set -e
[ $code = 2 ] || fail "overlap: another file's steps: exit $code"
grep -q "other.log:1: step 0 is already in run 'ng', which holds steps 0..100 from .*a.log; give --replace (this file's rows win), --append (only the steps not stored are added), or another --run" "$tmp/err" \
	|| fail "overlap: message: $(cat "$tmp/err")"
[ "$(sqlite3 "$odb" "SELECT COUNT(*) || ' ' || SUM(loss) FROM steps")" = "$held" ] || fail "overlap: a refused import changed the run"
"$runmon" --db "$odb" import --run ng "$o/a.log" >"$tmp/out" || fail "overlap: the same file again"
grep -q "11 steps (0 new)" "$tmp/out" || fail "overlap: re-import: $(cat "$tmp/out")"
"$runmon" --db "$odb" import --run ng --append "$o/other.log" >"$tmp/out" || fail "overlap: --append"
grep -q "6 steps .*a.log gave this run were kept; this file's other steps were added (--append)" "$tmp/out" || fail "--append: $(cat "$tmp/out")"
[ "$(sqlite3 "$odb" "SELECT loss FROM steps WHERE step = 10")" = 2.1 ] || fail "--append replaced a stored step"
"$runmon" --db "$odb" import --run ng --replace "$o/other.log" >"$tmp/out" || fail "overlap: --replace"
grep -q "6 steps replaced the rows .*a.log gave this run (--replace)" "$tmp/out" || fail "--replace: $(cat "$tmp/out")"
[ "$(sqlite3 "$odb" "SELECT loss FROM steps WHERE step = 10")" = 3.1 ] || fail "--replace kept the stored step"
"$runmon" --db "$odb" import --run ng "$o/cont.log" >"$tmp/out" || fail "overlap: a continuation"
grep -q "continues the run past its last step (100, from " "$tmp/out" || fail "continuation: $(cat "$tmp/out")"
[ "$(sqlite3 "$odb" "SELECT COUNT(*) FROM steps")" = 14 ] || fail "continuation: steps"

# One frame after a carriage return is a line, not a redrawn bar: two
# lines alike are two records (issue 67: the mutant that took a lone \r
# frame for a redraw dropped the second).
printf '\rtrain loss: 0.5000\n\rtrain loss: 0.5000\n\rtrain loss: 0.4000\n' >"$tmp/cr1.log"
"$runmon" --db "$tmp/cr1.db" import --run cr1 --log-every 10 "$tmp/cr1.log" >/dev/null || fail "lone CR frames: import"
[ "$(sqlite3 "$tmp/cr1.db" "SELECT group_concat(step || ':' || loss, ' ') FROM (SELECT * FROM steps ORDER BY step)")" = "10:0.5 20:0.5 30:0.4" ] \
	|| fail "lone CR frames: $(sqlite3 "$tmp/cr1.db" "SELECT step, loss FROM steps")"

# A run replaced by a simulation loses every row of its old source: rank
# losses and the other losses too (issue 67: a clear that kept rank_losses
# left another run's losses under the new one).
cdb=$tmp/clear.db
"$runmon" --db "$cdb" import --run cl "$data/logs/icefall.log" "$data/logs/fairseq-hydra.log" >/dev/null || fail "clear: import"
[ "$(sqlite3 "$cdb" "SELECT (SELECT COUNT(*) FROM rank_losses) > 0 AND (SELECT COUNT(*) FROM other_losses) > 0")" = 1 ] \
	|| fail "clear: the fixtures hold no rank or other losses"
"$runmon" --db "$cdb" simulate --steps 500 --run cl --replace >/dev/null || fail "clear: simulate --replace"
for t in rank_losses other_losses; do
	[ "$(sqlite3 "$cdb" "SELECT COUNT(*) FROM $t")" = 0 ] || fail "clear: $t keeps rows of the replaced run"
done
[ "$(sqlite3 "$cdb" "SELECT COUNT(*) FROM steps")" = 500 ] || fail "clear: the simulation's own steps"
echo "e2e import: all checks passed"
