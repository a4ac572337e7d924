#!/bin/sh
# quickstart.sh - the README's two Quick start blocks: the first installs what
# building and running need and nothing only the tests use, the second what
# the tests need; between them they install every package .ci/run does (but
# CI's own fuzzing and valgrind tools). Each install line works as a user with
# sudo and as root without it (the usual container): apt-get and sudo are
# stubs that log their arguments, nothing is installed.
# Usage: quickstart.sh RUNMON README CI_RUN (RUNMON unused: every e2e script
# takes the binary first).
set -eu
readme=$2
cirun=$3
. "$(dirname "$0")/common.sh"
# The first line of each shell block of the Quick start, one per line.
python3 - "$readme" >"$tmp/lines" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
qs = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S).group(1)
for block in re.findall(r"```sh\n(.*?)```", qs, re.S):
    print(block.splitlines()[0])
PY
[ "$(wc -l <"$tmp/lines")" = 2 ] || fail "the Quick start has $(wc -l <"$tmp/lines") shell blocks, not 2"
build=$(sed -n 1p "$tmp/lines")
tests=$(sed -n 2p "$tmp/lines")
pkgs() { printf '%s\n' "$1" | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -v -x -E 'apt-get|update|install|sudo|command|v' | sort -u; }
pkgs "$build" >"$tmp/build"
pkgs "$tests" >"$tmp/tests"
for p in cmake libcurl4-openssl-dev libjansson-dev libsqlite3-dev libpq-dev libmicrohttpd-dev; do
	grep -q -x "$p" "$tmp/build" || fail "the build block does not install $p"
done
for p in libcmocka-dev chromium prometheus postgresql clang-format; do
	grep -q -x "$p" "$tmp/build" && fail "the build block installs $p, which only the tests use"
	grep -q -x "$p" "$tmp/tests" || fail "the test block does not install $p"
done
# Every package CI installs is in one of the blocks, but CI's own tools.
sed -n '/apt-get install/,/^[^\t ]/p' "$cirun" | sed -n '1,/[^\\]$/p' | tr -d '\\' >"$tmp/ci"
pkgs "$(tr '\n\t' '  ' <"$tmp/ci")" | grep -v -x -E 'y|no-install-recommends|clang|libclang-rt-[0-9]+-dev|valgrind' >"$tmp/cipkgs"
missing=$(sort -u "$tmp/build" "$tmp/tests" | comm -23 "$tmp/cipkgs" -)
[ -z "$missing" ] || fail "CI installs what the Quick start does not: $missing"
mkdir "$tmp/nosudo" "$tmp/withsudo"
for d in nosudo withsudo; do
	printf '#!/bin/sh\necho "apt-get $*" >>%s/log\n' "$tmp/$d" >"$tmp/$d/apt-get"
	chmod +x "$tmp/$d/apt-get"
done
printf '#!/bin/sh\necho "sudo $1" >>%s/log\nexec "$@"\n' "$tmp/withsudo" >"$tmp/withsudo/sudo"
chmod +x "$tmp/withsudo/sudo"
# Only the stubs and the shell's own tools: no real sudo or apt-get.
mkdir "$tmp/bin"
for t in sh python3; do ln -s "$(command -v $t)" "$tmp/bin/$t"; done
for line in "$build" "$tests"; do
	PATH="$tmp/nosudo:$tmp/bin" sh -ec "$line" || fail "as root without sudo: $line"
	PATH="$tmp/withsudo:$tmp/bin" sh -ec "$line" || fail "with sudo: $line"
done
[ "$(grep -c '^apt-get install' "$tmp/nosudo/log")" = 2 ] || fail "not two installs without sudo"
[ "$(grep -c '^sudo apt-get' "$tmp/withsudo/log")" = 3 ] || fail "sudo not used for every apt-get call"
echo "quickstart: $(wc -l <"$tmp/build") build packages, $(wc -l <"$tmp/tests") test packages; both install lines run with and without sudo"
