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
# Issue 66.3: the glossary. `help terms` fits 80 columns; docs/terms.md is
# what `help terms --markdown` writes; every statistic the outputs name has
# its line; reports link each evidence row to it; at 80 columns diagnose and
# compare keep every line within 80, their tables whole rows.
docs=$(dirname "$0")/../../docs
[ "$(rc "$runmon" help terms)" = 0 ] || fail "help terms: $(cat "$tmp/err")"
python3 -c 'import sys; bad = [l for l in open(sys.argv[1]) if len(l.rstrip("\n")) > 80]; sys.exit(bool(bad))' "$tmp/out" ||
	fail "help terms: a line over 80 columns"
cp "$tmp/out" "$tmp/terms.txt"
"$runmon" help terms --markdown | cmp -s - "$docs/terms.md" ||
	fail "docs/terms.md is not what 'runmon help terms --markdown' writes: regenerate it"
[ "$(rc "$runmon" help terms --bogus)" = 2 ] || fail "help terms --bogus: not refused"
grep -q "help terms takes --markdown or nothing, not '--bogus'" "$tmp/err" || fail "help terms --bogus: $(cat "$tmp/err")"
grep -q "runmon help terms" "$docs/../README.md" || fail "the README does not name runmon help terms"
grep -q "(docs/terms.md)" "$docs/../README.md" || fail "the README does not link docs/terms.md"
db=$tmp/terms.db
"$runmon" --db "$db" demo --steps 1500 >/dev/null 2>&1 || fail "demo for the glossary"
for word in "ok, info, warn, critical" "same-bucket streaks, z" "eta^2" "R^2 on bucket shares" "modes, trimodal" \
	"BIC" "x trend" "95% interval" "q-value" "evidence" "Mann-Kendall z" "Cramer's V" "effective points" \
	"coupled, ordered" "bucket-adjusted loss" "padding efficiency" "tokens per second" "lockstep"; do
	grep -qF "$word" "$tmp/terms.txt" || fail "help terms: no line for '$word'"
done
for run in demo-homogeneous demo-interleaved demo-random; do
	COLUMNS=80 "$runmon" --db "$db" diagnose "$run" >"$tmp/narrow.txt" || true
	grep -q "runmon help terms" "$tmp/narrow.txt" || fail "$run: diagnose does not point at the glossary"
	python3 - "$tmp/narrow.txt" "$run" <<'PY' || fail "$run at 80 columns"
import re, sys
text = open(sys.argv[1]).read()
long = [l for l in text.splitlines() if len(l) > 80]
assert not long, long[:3]
sec = text.split("\nLoss by bucket\n")[1].split("\n\n")[0]
rows = [l for l in sec.splitlines() if re.match(r"^ +[0-9]+  [x+-]", l)]
assert len(rows) >= 4, sec  # one whole row a bucket, not fragments
assert all(len(l.split()) >= 4 for l in rows), rows
assert " mode " not in text or "mode  0" not in text
PY
done
COLUMNS=80 "$runmon" --db "$db" compare demo-homogeneous demo-random >"$tmp/narrow.txt" || true
python3 -c 'import sys; bad = [l for l in open(sys.argv[1]) if "|" not in l and len(l.rstrip("\n")) > 80 and not l.startswith(("Before,", "After,", "Result:", "The price:"))]; sys.exit(bool(bad))' "$tmp/narrow.txt" ||
	fail "compare at 80 columns: a table line over 80"
grep -q "^      before  139 vs\|^      before  [0-9]* vs [0-9]* random" "$tmp/narrow.txt" || fail "compare at 80 columns: not a row to a block"
"$runmon" --db "$db" report demo-homogeneous -o "$tmp/terms.html" >/dev/null 2>&1 || true
python3 - "$tmp/terms.html" <<'PY' || fail "report: the glossary"
import re, sys
html = open(sys.argv[1]).read()
assert "<section id='terms'><h2>Terms</h2>" in html
for term in ("streaks", "eta2", "reset", "padding"):
    assert "<tr id='term-%s'>" % term in html, term
    assert re.search(r"<td><a href='#term-%s' title='[^']+'>" % term, html), term
PY

echo "help: $pages man pages render without warnings, completion completes, install places both"
