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

# 5. Invalid UTF-8 in a run name or key: no run vanishes from JSON.
u=$(printf 'bad\377name')
printf 'step,lo\377ss\n0,1.5\n1,1.4\n2,1.3\n' >u.csv
"$runmon" --db u.db import --run "$u" --loss-key "$(printf 'lo\377ss')" u.csv >/dev/null
"$runmon" --db u.db runs --json >runs.json
python3 - <<'PY' || fail "runs --json with invalid UTF-8"
import json
runs = json.load(open("runs.json"))
assert [r["run"] for r in runs] == ["bad\ufffdname"], runs
assert runs[0]["loss_key"] == "lo\ufffdss", runs
PY
rc "$runmon" --db u.db report --all --format json >/dev/null
python3 -c "import json; r = json.load(open('out'))['runs']; assert r[0]['run']['name'] == 'bad\ufffdname', r" \
	|| fail "report json with invalid UTF-8: $(cat err)"
rc "$runmon" --db u.db diagnose "$u" --json >/dev/null
python3 -c "import json; d = json.load(open('out')); assert d['run']['name'] == 'bad\ufffdname'" \
	|| fail "diagnose --json with invalid UTF-8: exit $(cat rcfile) $(cat err)"

echo "e2e hostile: all checks passed"
