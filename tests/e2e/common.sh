# tests/e2e/common.sh - sourced by the end-to-end scripts: a scratch
# directory, background processes ($pids) killed on exit, and fail.
# The script sets its own arguments (runmon=$1 ...) before sourcing this.
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# field FILE KEY.KEY...: one value of a JSON file (a number indexes a list),
# e.g. field d.json verdict.hypothesis
field() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$1" "$2"
}
