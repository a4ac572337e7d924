#!/bin/sh
# End-to-end: a tiny pure-Python data-parallel training loop records its
# batches with the installed runmon_record module, and runmon imports the
# sidecars with the loss history and diagnoses the run.
# Usage: recorder.sh RUNMON BUILD_DIR SOURCE_DIR
set -eu
runmon=$1
build=$2
src=$3
. "$(dirname "$0")/common.sh"

# cmake --install puts the module under share/runmon/python.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
RUNMON_PYTHON=$tmp/prefix/share/runmon/python
[ -f "$RUNMON_PYTHON/runmon_record.py" ] || fail "runmon_record.py not installed"
export RUNMON_PYTHON

# train ORDER SEED [tiny_train options]: a run, imported into its own database and diagnosed
train() {
	order=$1 seed=$2
	shift 2
	dir=$tmp/$order-$seed
	python3 "$src/tests/unit/python/tiny_train.py" "$dir" --order "$order" --seed "$seed" "$@"
	"$runmon" --db "$dir/db" import --run tiny "$dir/history.jsonl" "$dir"/batches*.jsonl >"$dir/import.txt"
	"$runmon" --db "$dir/db" diagnose --json tiny >"$dir/d.json" || [ $? = 1 ] || fail "diagnose $order $seed"
	"$runmon" --db "$dir/db" diagnose tiny >"$dir/d.txt" || true
}

for seed in 1 2 3; do
	train homogeneous $seed
	dir=$tmp/homogeneous-$seed
	grep -q "6000 batches" "$dir/import.txt" || fail "seed $seed: a rank's 3000 steps x 2 micro-batches"
	[ "$(field "$dir/d.json" verdict.hypothesis)" = "homogeneous batching" ] || fail "seed $seed: $(cat "$dir/d.txt")"
	case $(field "$dir/d.json" severity) in warn | critical) ;; *) fail "seed $seed: homogeneous not flagged" ;; esac
	[ "$(sqlite3 "$dir/db" 'SELECT COUNT(DISTINCT rank) || COUNT(DISTINCT micro) || COUNT(*) FROM batches')" = 2212000 ] ||
		fail "seed $seed: ranks x micro-batches stored"

	train interleaved $seed
	dir=$tmp/interleaved-$seed
	case $(field "$dir/d.json" severity) in ok | info) ;; *) fail "seed $seed: false alarm on interleaved: $(cat "$dir/d.txt")" ;; esac
done

# Every rank appending to one file, each line with its rank field.
train homogeneous 4 --one-file --ranks 4 --accum 1
dir=$tmp/homogeneous-4
[ "$(sqlite3 "$dir/db" 'SELECT COUNT(DISTINCT rank) FROM batches')" = 4 ] || fail "one file: 4 ranks"
[ "$(field "$dir/d.json" verdict.hypothesis)" = "homogeneous batching" ] || fail "one file: $(cat "$dir/d.txt")"
train interleaved 4 --one-file --ranks 4 --accum 1
case $(field "$tmp/interleaved-4/d.json" severity) in ok | info) ;; *) fail "one file: false alarm" ;; esac

# The recorder refuses exactly what import refuses (issue 35.11): each
# record below is tried through BatchRecorder.record, and, as the line the
# recorder would write, through runmon import; both must agree. Large
# integers in import's errors print as integers.
cat >"$tmp/limits.py" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["RUNMON_PYTHON"])
import runmon_record as rr
runmon, tmp = sys.argv[1], sys.argv[2]
S, B = (1 << 53), (1 << 50)
cases = [
    dict(step=S - 1, n=1, max_len=5), dict(step=S, n=1, max_len=5), dict(step=-1, n=1), dict(step=1 << 60, n=1),
    dict(step=1, bucket=B - 1), dict(step=1, bucket=B), dict(step=1, bucket=-(B - 1)), dict(step=1, bucket=-B),
    dict(step=1, bucket="long"), dict(step=1, bucket="x" * 200), dict(step=1, bucket="x" * 201),
    dict(step=1, bucket="\u00e9" * 100), dict(step=1, bucket="\u00e9" * 101), dict(step=1, bucket="a\0b"),
    dict(step=1, bucket=""),
    dict(step=1, n=4, max_len=10, tokens=42), dict(step=1, n=4, max_len=10, tokens=43),
    dict(step=1, n=4, min_len=5, tokens=18), dict(step=1, n=4, min_len=5, tokens=17),
    dict(step=1, n=1, tokens=10 ** 20), dict(step=1, n=1, tokens=B), dict(step=1, n=1, tokens=B + 1),
    dict(step=1, n=2, min_len=6, max_len=5), dict(step=1, n=1 << 20, max_len=1), dict(step=1, n=(1 << 20) + 1),
    dict(step=1, n=0), dict(step=1, n=1, max_len=1 << 30), dict(step=1, n=1, max_len=(1 << 30) + 1),
    dict(step=1, n=1, min_len=(1 << 30) + 1), dict(step=1, micro=S - 1, n=1), dict(step=1, micro=S, n=1),
    dict(step=1, lens=[1, 1 << 30]), dict(step=1, lens=[1, (1 << 30) + 1]), dict(step=1, lens=[-1]),
]
bad = 0
for i, c in enumerate(cases):
    path = os.path.join(tmp, "lim-%d.jsonl" % i)
    try:
        with rr.BatchRecorder(path, rank=0) as r:
            r.record(**c)
        took = True
    except ValueError:
        took = False
    line = {"step": c["step"], "rank": 0, "micro": c.get("micro", 0)}
    line.update({k: v for k, v in c.items() if k not in ("step", "micro")})
    with open(path, "w") as f:
        f.write(json.dumps(line) + "\n")
    p = subprocess.run([runmon, "--db", os.path.join(tmp, "lim.db"), "import", "--run", "lim%d" % i, path],
                       capture_output=True, text=True)
    if took != (p.returncode == 0):
        print("case %r: recorder %s, import exit %d: %s" % (c, "took it" if took else "refused it", p.returncode,
                                                          p.stderr.strip()))
        bad += 1
    if p.returncode and "e+" in p.stderr:
        print("case %r: a large integer in exponent form: %s" % (c, p.stderr.strip()))
        bad += 1
sys.exit(1 if bad else 0)
PY
python3 "$tmp/limits.py" "$runmon" "$tmp" >"$tmp/limits.out" 2>&1 || fail "recorder and import disagree: $(cat "$tmp/limits.out")"

# Two recorders sharing one file (no {rank}): a recorder that opens the
# file and cuts a partial last line must not cut what the other appended in
# between (issue 35.10). The cut is slowed by 50 ms so that the other
# writer's lines land in that window every time; 10 rounds, and every line
# of the other writer must be there but the one a partial line was glued to.
cat >"$tmp/race.py" <<'PY'
import json, multiprocessing, os, sys, time
sys.path.insert(0, os.environ["RUNMON_PYTHON"])
import runmon_record as rr
path, rounds = sys.argv[1], 10

def writer(stop):
    with rr.BatchRecorder(path, rank=1) as r:
        i = 0
        while not stop.is_set():
            r.record(i, n=1, max_len=5)
            i += 1
            time.sleep(0.0005)
        return

slow = os.ftruncate
def slow_cut(fd, length):
    time.sleep(0.05)
    slow(fd, length)
rr.os.ftruncate = slow_cut
open(path, "w").close()
stop = multiprocessing.Event()
w = multiprocessing.Process(target=writer, args=(stop,))
w.start()
time.sleep(0.2)
for k in range(rounds):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"step":%d,"rank":0,"micro":0,"n":1,"max' % k)  # a writer killed mid-line
    os.close(fd)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rr.BatchRecorder(path, rank=0).close()
    time.sleep(0.02)
stop.set()
w.join()
steps, glued = set(), 0
for line in open(path, "rb"):
    try:
        rec = json.loads(line)
    except ValueError:
        glued += 1
        continue
    if rec["rank"] == 1:
        steps.add(rec["step"])
lost = (max(steps) + 1 - len(steps)) if steps else 0
print("writer lines", len(steps), "lost", lost, "glued", glued)
sys.exit(0 if lost <= glued and lost <= rounds else 1)
PY
python3 "$tmp/race.py" "$tmp/shared.jsonl" >"$tmp/race.out" 2>&1 || fail "a cut took another writer's lines: $(cat "$tmp/race.out")"

echo "recorder e2e: ok"
