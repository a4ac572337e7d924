#!/bin/sh
# tests/valgrind.sh PROGRAM ARGS... - runs PROGRAM under valgrind memcheck:
# an invalid read or write, a use of uninitialised memory, or a leak
# (definite or indirect) fails with status 99; otherwise PROGRAM's own
# status comes through, so the tests' checks of exit codes still hold.
# The suppressions cover what libcurl's and OpenSSL's global state keep
# until exit, which is not runmon's to free.
here=$(cd "$(dirname "$0")" && pwd)
exec valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
	--errors-for-leak-kinds=definite,indirect --track-origins=no --child-silent-after-fork=yes \
	--suppressions="$here/valgrind.supp" "$@"
