#!/bin/sh
# End-to-end: a real PyTorch training (examples/torch: a byte-level model on
# the standard library's sources, 2 ranks over gloo, CPU) in three orders,
# read back by runmon: the length-sorted order is flagged as homogeneous
# batching, the stride sampler's run is healthy, compare says the fix
# resolved it, and the boundaries runmon derives from the recorded lengths
# (no bucket ids) are the sampler's own. Usage: torch.sh RUNMON SRC
set -eu
runmon=$1
src=$2
. "$(dirname "$0")/common.sh"
sh "$src/examples/torch/run.sh" "$runmon" "$tmp" >"$tmp/log" 2>&1 || fail "examples/torch/run.sh: $(tail -20 "$tmp/log")"
db=$tmp/runmon.db
rc() { "$@" >"$tmp/out" 2>"$tmp/err" && echo 0 || echo $?; }
for order in sorted stride random; do
	[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'torch-$order'")" = 200 ] \
		|| fail "$order: steps"
	[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'torch-$order'")" = 400 ] \
		|| fail "$order: a batch per rank and step"
done
[ "$(rc "$runmon" --db "$db" diagnose torch-sorted)" = 1 ] || fail "sorted: not flagged: $(grep VERDICT "$tmp/out")"
grep -q "^VERDICT  \(warn\|critical\): homogeneous batching" "$tmp/out" || fail "sorted: $(grep VERDICT "$tmp/out")"
[ "$(rc "$runmon" --db "$db" diagnose torch-stride)" = 0 ] || fail "stride: not healthy: $(grep VERDICT "$tmp/out")"
[ "$(rc "$runmon" --db "$db" diagnose torch-random)" = 0 ] || fail "random: $(grep VERDICT "$tmp/out")"
for order in sorted stride; do
	rc "$runmon" --db "$db" diagnose "torch-$order" --json >/dev/null
	[ "$(field "$tmp/out" buckets_derived.boundaries)" = "[0, 40, 96, 160, 256]" ] \
		|| fail "$order: derived boundaries $(field "$tmp/out" buckets_derived.boundaries), the sampler's are 0,40,96,160,256"
done
[ "$(rc "$runmon" --db "$db" compare torch-sorted torch-stride)" = 0 ] || fail "compare: exit"
grep -q "^Result: no worse: homogeneous batching resolved" "$tmp/out" || fail "compare: $(tail -1 "$tmp/out")"
echo "e2e torch: sorted flagged, the sampler healthy, resolved; derived boundaries the sampler's"
