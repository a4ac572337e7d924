# tests/e2e/common.sh - sourced by the end-to-end scripts that start
# servers: a scratch directory, background processes killed on exit, fail.
# The script sets its own arguments (runmon=$1 ...) before sourcing this.
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
