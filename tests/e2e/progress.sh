#!/bin/sh
# End-to-end: the progress line. On a terminal (a pty from script(1)) long
# work draws one line on stderr, redrawn in place and erased at the end;
# with stderr a file, or with --quiet, nothing is drawn. A FIFO fed slowly
# makes the import long enough to draw; a refused connection makes sync
# retry, and the retry is told with its wait. Usage: progress.sh RUNMON
set -eu
runmon=$1
. "$(dirname "$0")/common.sh"
cd "$tmp"
export TERM=xterm # a dumb terminal gets no line; CI may set one
esc=$(printf '\033\\[K')
slow=$((2 * ${RUNMON_TEST_SLOW:-1}))
feed() { (printf 'step 1 loss 2.0\n'; sleep "$slow"; printf 'step 2 loss 1.9\n') >"$1"; }

# A terminal: the import is told while it runs, then erased; the summary follows.
mkfifo f1
feed f1 &
script -qec "'$runmon' --db p.db import --run p1 f1" /dev/null >tty1 </dev/null || fail "import on a pty: $(cat tty1)"
grep -q "${esc}import f1" tty1 || fail "no progress line on a terminal: $(od -c tty1 | head)"
grep -q "2 steps" tty1 || fail "no summary: $(cat tty1)"

# stderr a file: nothing drawn there, the summary still on stdout.
mkfifo f2
feed f2 &
script -qec "'$runmon' --db p.db import --run p2 f2 2>err2" /dev/null >tty2 </dev/null || fail "import, stderr a file"
if grep -q "$esc" err2 tty2; then fail "progress drawn with stderr a file: $(od -c err2 | head)"; fi
grep -q "2 steps" tty2 || fail "summary lost: $(cat tty2)"

# --quiet on a terminal: nothing drawn.
mkfifo f3
feed f3 &
script -qec "'$runmon' --quiet --db p.db import --run p3 f3" /dev/null >tty3 </dev/null || fail "import --quiet"
if grep -q "$esc" tty3; then fail "progress drawn with --quiet: $(od -c tty3 | head)"; fi
# --quiet after the command, as after any other option (issue 50)
mkfifo f5
feed f5 &
script -qec "'$runmon' --db p.db import --run p5 f5 --quiet" /dev/null >tty5 </dev/null || fail "import ... --quiet"
if grep -q "$esc" tty5; then fail "progress drawn with --quiet after the command: $(od -c tty5 | head)"; fi
grep -q "2 steps" tty5 || fail "--quiet after the command lost the summary: $(cat tty5)"

# A sync that cannot connect says it retries, how often and after what wait.
export WANDB_API_KEY=k0123456789 WANDB_BASE_URL=http://127.0.0.1:9
script -qec "'$runmon' --db p.db sync --retry-max 1 --retry-wait 1s acme/llm/x1" /dev/null >tty4 </dev/null || true
grep -q "${esc}sync acme/llm/x1: retrying 1/1 in 1 s: " tty4 || fail "no retry line: $(cat tty4)"
if grep -q k0123456789 tty4; then fail "the API key on the terminal"; fi
script -qec "'$runmon' --db p.db sync --retry-max 1 --retry-wait 1s acme/llm/x1 2>err5" /dev/null >tty5 </dev/null || true
if grep -q "retrying" err5; then fail "retry line with stderr a file: $(cat err5)"; fi
echo "e2e progress: all checks passed"
