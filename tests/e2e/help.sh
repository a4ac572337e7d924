#!/bin/sh
# What the command tables make besides the parser: the man pages (each
# renders with groff without a warning, and the build's copy is what the
# binary writes now), bash completion (commands, options and the values of
# a choice, with the words a user types), and `cmake --install` putting
# both where man and bash-completion look. Usage: help.sh RUNMON BUILD_DIR
set -eu
runmon=$1
build=$2
. "$(dirname "$0")/common.sh"
rc() { "$@" >"$tmp/out" 2>"$tmp/err" && echo 0 || echo $?; }
command -v groff >/dev/null || fail "groff is missing (Debian's groff-base; .ci/run installs it)"
pages=0
for page in "$build"/man/*.1; do
	name=$(basename "$page" .1)
	cmd=${name#runmon}
	cmd=${cmd#-}
	"$runmon" help --man $cmd >"$tmp/page.1"
	cmp -s "$page" "$tmp/page.1" || fail "$page is not what 'runmon help --man $cmd' writes: rebuild"
	groff -man -Tutf8 -ww -z "$page" 2>"$tmp/warn" || fail "groff failed on $page"
	[ ! -s "$tmp/warn" ] || fail "groff warns on $page: $(head -3 "$tmp/warn")"
	groff -man -Tutf8 "$page" 2>/dev/null | sed 's/.\x08//g' >"$tmp/page.txt"
	grep -q "EXIT STATUS" "$tmp/page.txt" || fail "$page has no exit status"
	# a word the source text hyphenates at a line's end stays one word
	# ("length-adjusted", never "length- adjusted", issue 66)
	! grep -n "[a-z]- [a-z]" "$tmp/page.txt" >"$tmp/split" || fail "$page splits a word: $(head -2 "$tmp/split")"
	pages=$((pages + 1))
done
ncmd=$("$runmon" help --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$pages" = $((ncmd + 1)) ] || fail "$pages man pages for $ncmd commands"
groff -man -Tutf8 "$build/man/runmon-diagnose.1" 2>/dev/null | sed 's/.\x08//g' | grep -q "runmon diagnose demo-homogeneous" \
	|| fail "runmon-diagnose(1) without its examples"

# --man asked of runmon itself, not of help: the error names the way
# (issue 66).
[ "$(rc "$runmon" --man)" = 2 ] && grep -q "the manual is 'runmon help --man'" "$tmp/err" \
	|| fail "runmon --man: $(cat "$tmp/err")"

# help --man on a terminal: the page as man shows it, not its roff (issue
# 50); redirected, the roff (checked above).
command -v script >/dev/null || fail "script (util-linux) is missing"
MANPAGER=cat script -qec "'$runmon' help --man diagnose" /dev/null >"$tmp/tty" </dev/null || fail "help --man on a terminal"
sed 's/.\x08//g' "$tmp/tty" | grep -q "EXIT STATUS" || fail "help --man on a terminal: no page: $(head -5 "$tmp/tty")"
if grep -q '^\.SH' "$tmp/tty"; then fail "help --man on a terminal printed roff"; fi

# The parser's error paths, each in one line (options.py checks the whole
# contract; this runs under valgrind too).
err() { set +e; "$runmon" "$@" >/dev/null 2>"$tmp/err"; echo $? >"$tmp/rc"; set -e; }
err --db "$tmp/x.db" diagnose x --jsn
[ "$(cat "$tmp/rc")" = 2 ] && grep -qx "runmon: error: unknown option --jsn for diagnose; did you mean --json?" "$tmp/err" \
	|| fail "unknown option: $(cat "$tmp/err")"
err diagnos x
grep -qx "runmon: error: unknown command 'diagnos'; did you mean 'diagnose'?" "$tmp/err" || fail "command: $(cat "$tmp/err")"
err --db "$tmp/x.db" report --output
grep -qx "runmon: error: --output needs a value: FILE" "$tmp/err" || fail "missing value: $(cat "$tmp/err")"
err --db "$tmp/x.db" simulate --strategy strided --steps 10 --out "$tmp/sim"
[ "$(cat "$tmp/rc")" = 2 ] && grep -qx "runmon: error: --strategy wants one of sorted, chunked, bucketed-random, interleaved, mixed, hf-megabatch, stride, not 'strided'; did you mean 'stride'?" "$tmp/err" \
	|| fail "choice suggestion: $(cat "$tmp/err")"
err --db "$tmp/x.db" report --all --fail-on=loud
[ "$(cat "$tmp/rc")" = 2 ] && grep -qx "runmon: error: --fail-on wants one of info, warn, critical, not 'loud'" "$tmp/err" \
	|| fail "choice without a near one: $(cat "$tmp/err")"
err --db "$tmp/x.db" runs --json=yes
grep -qx "runmon: error: --json takes no value (got 'yes')" "$tmp/err" || fail "flag value: $(cat "$tmp/err")"
err --db "$tmp/x.db" simulate --steps 300 --run named -- extra
grep -q "unexpected argument 'extra'" "$tmp/err" || fail "after --: $(cat "$tmp/err")"
"$runmon" --db "$tmp/x.db" simulate --run named --steps 300 >/dev/null
err --db "$tmp/x.db" diagnose nmaed
grep -q "did you mean 'named'?" "$tmp/err" || fail "run suggestion: $(cat "$tmp/err")"

# Completion: COMP_WORDS as bash fills them for the word being typed.
cat >"$tmp/complete.bash" <<'BASH'
. "$1"
complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _runmon; echo "${COMPREPLY[*]}"; }
check() { want=$1; shift; got=$(complete_words "$@"); [ "$got" = "$want" ] || { echo "completing '$*': got '$got', want '$want'"; exit 1; }; }
check "diagnose" runmon diag
check "runs report rm" runmon r
check "--json" runmon diagnose --js
check "info warn critical" runmon report --fail-on ""
check "html md json" runmon --db x.db report --format ""
check "lockstep sharded independent" runmon simulate --rank-mode ""
check "--fail-on --fail-on-new" runmon report --fail
check "" runmon diagnose --since ""
check "diagnose" runmon help diag
cd "$2" && touch notes.log && check "notes.log" runmon import not
BASH
bash "$tmp/complete.bash" "$build/runmon.bash" "$tmp" || fail "bash completion"

# cmake --install: the pages and the completion where their readers look.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install"
[ -x "$tmp/prefix/bin/runmon" ] || fail "no bin/runmon installed"
[ -f "$tmp/prefix/share/man/man1/runmon-report.1" ] || fail "no man page installed"
[ -f "$tmp/prefix/share/bash-completion/completions/runmon" ] || fail "no completion installed"
# the recorder's package with its in-tree build backend (pyproject.toml
# names _build; without it pip install fails, issue 66)
[ -f "$tmp/prefix/share/runmon/python/_build/runmon_build.py" ] || fail "no _build backend installed beside pyproject.toml"
MANPATH="$tmp/prefix/share/man" man -P cat runmon-report 2>/dev/null | sed 's/.\x08//g' | grep -q "fail-on-new" \
	|| fail "man does not find the installed runmon-report(1)"
echo "help: $pages man pages render without warnings, completion completes, install places both"
