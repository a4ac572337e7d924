#!/bin/sh
# End-to-end: a real PyTorch training (examples/torch: a byte-level model on
# the standard library's sources, 2 ranks over gloo, CPU) in three orders,
# read back by runmon: the length-sorted order is flagged as homogeneous
# batching, the stride sampler's run is healthy, compare says the fix
# resolved it, and the boundaries runmon derives from the recorded lengths
# (no bucket ids) are the sampler's own. Then the join (issue 64.5): the
# same losses as five trainers log them every 5 steps (train.py), each
# imported with the recorder's sidecars and checked against the every-step
# log. Usage: torch.sh RUNMON SRC
set -eu
runmon=$1
src=$2
. "$(dirname "$0")/common.sh"
sh "$src/examples/torch/run.sh" "$runmon" "$tmp" >"$tmp/log" 2>&1 || fail "examples/torch/run.sh: $(tail -20 "$tmp/log")"
db=$tmp/runmon.db
rc() { "$@" >"$tmp/out" 2>"$tmp/err" && echo 0 || echo $?; }
for order in sorted stride random; do
	[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = 'torch-$order'")" = 1000 ] \
		|| fail "$order: steps"
	[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM batches b JOIN runs r ON r.id = b.run_id WHERE r.name = 'torch-$order'")" = 2000 ] \
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
grep -q "^Result: resolved: homogeneous batching resolved" "$tmp/out" || fail "compare: $(tail -1 "$tmp/out")"

# The styles: "style first last reading" (the reading each point is, as
# the trainer writes it).
styles="hf.log 5 1000 mean
megatron.log 5 1000 mean
nanogpt.log 0 995 step
metrics.csv 4 999 step
print.log 5 1000 step"
# one number of the diagnosis's JSON
num() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$tmp/out" "$1"; }
spread='max(b["level"] for b in d["split"]["buckets"]) - min(b["level"] for b in d["split"]["buckets"])'
for order in sorted stride; do
	rc "$runmon" --db "$db" diagnose "torch-$order" --json >/dev/null
	every=$(num "$spread")
	echo "$styles" | while read -r file first last truth; do
		run=torch-$order-${file%.*}
		"$runmon" --db "$db" import --run "$run" "$tmp/$order/$file" "$tmp/$order"/batches-rank*.jsonl >"$tmp/imp" 2>&1 \
			|| fail "$run: import: $(cat "$tmp/imp")"
		grep -q "^  join: 200 of 200 loss points have their batches" "$tmp/imp" || fail "$run: import's join: $(cat "$tmp/imp")"
		grep -q "^  each point is " "$tmp/imp" || fail "$run: import's reading: $(cat "$tmp/imp")"
		code=$(rc "$runmon" --db "$db" diagnose "$run" --json)
		[ "$(field "$tmp/out" join.points)" = 200 ] && [ "$(field "$tmp/out" join.with_batches)" = 200 ] \
			&& [ "$(field "$tmp/out" join.loss_first_step)" = "$first" ] \
			&& [ "$(field "$tmp/out" join.loss_last_step)" = "$last" ] || fail "$run: join $(field "$tmp/out" join)"
		# each point at its own step: first, first + 5, ..., last
		[ "$(sqlite3 "$db" "SELECT COUNT(DISTINCT s.step) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.name = '$run' AND (s.step - $first) % 5 = 0")" = 200 ] \
			|| fail "$run: points off the every-5 grid from $first"
		# a reading the evidence decides is the true one; where it cannot
		# decide, the starting point (a _step key's convention, else the
		# mean) is said as such
		basis=$(field "$tmp/out" reading.basis)
		is=$(field "$tmp/out" reading.is)
		[ "$basis" != fit ] || [ "$is" = "$truth" ] || fail "$run: read as $is ($basis), written as $truth"
		[ "$file" != metrics.csv ] || [ "$is" = step ] || fail "$run: train_loss_step read as $is"
		case $order in
		sorted)
			# the sick order: each style flags it, and its split is the
			# every-step log's within 30%
			[ "$code" = 1 ] || fail "$run: sorted not flagged: $(field "$tmp/out" severity)"
			got=$(num "$spread")
			python3 -c "import sys; g, e = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(g - e) > 0.3 * e)" "$got" "$every" \
				|| fail "$run: split (level spread) $got, every step $every"
			;;
		stride)
			[ "$code" = 0 ] || fail "$run: the stride sampler flagged: $(field "$tmp/out" severity)"
			;;
		esac
		echo "$run: $is ($basis), $(field "$tmp/out" severity)" >>"$tmp/styles"
	done
done
[ "$(wc -l <"$tmp/styles")" = 10 ] || fail "styles: $(cat "$tmp/styles")"
# A recorder that counted from another origin: its batches meet no loss
# step, and the diagnosis says so instead of "healthy".
python3 - "$tmp/stride" <<'PY'
import json, os, sys
d = sys.argv[1]
for r in (0, 1):
    with open(os.path.join(d, f"batches-rank{r}.jsonl")) as f, open(os.path.join(d, f"later-rank{r}.jsonl"), "w") as out:
        for line in f:
            b = json.loads(line)
            b["step"] += 5000
            out.write(json.dumps(b) + "\n")
PY
"$runmon" --db "$db" import --run torch-apart "$tmp/stride/history.jsonl" "$tmp/stride"/later-rank*.jsonl >"$tmp/imp" 2>&1 \
	|| fail "apart: import: $(cat "$tmp/imp")"
grep -q "^  join: 0 of 1000 loss points have their batches; 0 of 2000 batches have a loss" "$tmp/imp" \
	|| fail "apart: import's join: $(cat "$tmp/imp")"
[ "$(rc "$runmon" --db "$db" diagnose torch-apart)" = 1 ] || fail "apart: exit $(grep VERDICT "$tmp/out")"
grep -q "batches meet no loss step" "$tmp/out" || fail "apart: $(grep VERDICT "$tmp/out")"

# --per-sample (issue 65.1: the truth matrix's second generator re-batches
# what it writes): every sample's loss and length at every step, and a
# rank's token-weighted mean of them is that rank's loss, so the mean over
# the ranks is the logged loss of the step.
py=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || fail "no python3 with PyTorch (run.sh found one)"
"$py" "$src/examples/torch/train.py" "$tmp/ps" --steps 12 --orders random --per-sample >"$tmp/ps.log" 2>&1 \
	|| fail "train.py --per-sample: $(tail -5 "$tmp/ps.log")"
python3 - "$tmp/ps/random" <<'PY' || fail "--per-sample: the samples do not make the logged loss"
import csv, json, os, sys
d = sys.argv[1]
logged = {r["_step"]: r["train/loss"] for r in map(json.loads, open(os.path.join(d, "history.jsonl")))}
per = {}
for rank in (0, 1):
    rows = list(csv.DictReader(open(os.path.join(d, "samples-rank%d.csv" % rank))))
    assert len(rows) == 12 * 16, len(rows)
    for r in rows:
        num, den = per.setdefault((int(r["step"]), rank), [0.0, 0])
        per[(int(r["step"]), rank)] = [num + float(r["loss"]) * (int(r["len"]) - 1), den + int(r["len"]) - 1]
for step, loss in logged.items():
    mean = sum(per[(step, k)][0] / per[(step, k)][1] for k in (0, 1)) / 2
    assert abs(mean - loss) < 2e-5 * loss, (step, mean, loss)  # 5 digits a sample; len-weighting is off by 2e-4
assert sorted(logged) == list(range(12))
PY
echo "e2e torch: sorted flagged, the sampler healthy, resolved; derived boundaries the sampler's; five logging styles joined; per-sample losses make the logged loss"
sed 's/^/  /' "$tmp/styles"
