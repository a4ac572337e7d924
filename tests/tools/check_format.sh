#!/bin/sh
# Fails if any C file under src/, include/ or tests/ differs from what
# clang-format makes of it (.clang-format at the root).
clang_format=$1
root=$2
cd "$root" || exit 2
bad=0
for f in $(find src include tests -name '*.[ch]' | sort); do
	if ! "$clang_format" --style=file "$f" | cmp -s - "$f"; then
		echo "not formatted: $f (run: clang-format -i $f)"
		bad=1
	fi
done
exit $bad
