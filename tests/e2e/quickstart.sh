#!/bin/sh
# quickstart.sh - the README's install line works as a user with sudo and as
# root without it (the usual container). apt-get and sudo are stubs that log
# their arguments; nothing is installed. Usage: quickstart.sh RUNMON README
# (RUNMON unused: every e2e script takes the binary first).
set -eu
readme=$2
. "$(dirname "$0")/common.sh"
# The first command line of the Quick start's first shell block.
line=$(python3 - "$readme" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
qs = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S).group(1)
block = re.search(r"```sh\n(.*?)```", qs, re.S).group(1)
print(block.splitlines()[0])
PY
)
case $line in *apt-get*) ;; *) fail "the first Quick start line installs nothing: $line" ;; esac
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
PATH="$tmp/nosudo:$tmp/bin" sh -ec "$line" || fail "as root without sudo: $line"
grep -q "^apt-get install" "$tmp/nosudo/log" || fail "no install without sudo"
PATH="$tmp/withsudo:$tmp/bin" sh -ec "$line" || fail "with sudo: $line"
[ "$(grep -c '^sudo apt-get' "$tmp/withsudo/log")" = 2 ] || fail "sudo not used for both apt-get calls"
echo "quickstart: the install line runs with and without sudo"
