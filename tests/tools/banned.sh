#!/bin/sh
# banned.sh CC INCLUDE_DIR - the banned list in common.h holds: a call of
# each banned function fails to compile in runmon's own code, and a
# file without one compiles.
cc=$1
inc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf '#include "runmon/common.h"\nint ok(char *b, size_t n) { return snprintf(b, n, "%%d", 1); }\n' >"$tmp/ok.c"
"$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -fsyntax-only -I"$inc" "$tmp/ok.c" || { echo "banned: a clean file does not compile"; fail=1; }
for call in 'sprintf(b, "x")' 'vsprintf(b, "x", ap)' 'strcpy(b, "x")' 'strcat(b, "x")' 'strncpy(b, "x", 1)' \
	'strtok(b, "/")' 'atof(b)' 'atoi(b)' 'atol(b)' 'gmtime(&t)' 'localtime(&t)'; do
	printf '#include <stdarg.h>\n#include <time.h>\n#include "runmon/common.h"\nvoid f(char *b, va_list ap, time_t t) { (void)ap; (void)t; (void)%s; }\n' "$call" >"$tmp/bad.c"
	if "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -fsyntax-only -I"$inc" "$tmp/bad.c" 2>"$tmp/err"; then
		echo "banned: $call compiles"
		fail=1
	elif ! grep -q 'is_banned_in_runmon' "$tmp/err"; then
		echo "banned: $call fails for another reason:"; cat "$tmp/err"
		fail=1
	fi
done
[ $fail = 0 ] && echo "banned: 11 calls refused, a clean file compiles"
exit $fail
