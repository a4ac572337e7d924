"""Tests of contrib/python/runmon_record.py, with fake tensors, a fake
Hugging Face Trainer, a fake Lightning Trainer and a fake wandb run. The
round trips go through the real runmon binary named by $RUNMON.

Run: RUNMON=build/runmon python3 -m unittest discover -s tests/unit/python
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import types
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "contrib", "python"))
import runmon_record  # noqa: E402

RUNMON = os.environ.get("RUNMON")
BOUNDS = [0, 770, 1216, 1728, 2432, 3296, 8192]


def need_runmon(test):
    """Round trips need the binary; ctest always gives it, so its absence
    is a failure there, not a skip."""
    def run(self):
        self.assertTrue(RUNMON and os.access(RUNMON, os.X_OK), "set RUNMON to the runmon binary")
        return test(self)
    run.__name__ = test.__name__
    return run


def runmon(*args, check=True):
    p = subprocess.run([RUNMON, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"runmon {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


# ---- fake tensors -----------------------------------------------------------

class FakeTensor:
    """A 2-D tensor as far as the recorder uses one: sum(dim=1), !=, tolist()."""

    def __init__(self, rows):
        self.rows = [list(r) for r in rows]
        self.shape = (len(self.rows), len(self.rows[0]) if self.rows else 0)

    def sum(self, dim=None):
        if dim != 1:
            raise TypeError("sum over dim 1 only")
        return FakeVector([sum(r) for r in self.rows])

    def __ne__(self, other):
        return FakeTensor([[int(x != other) for x in r] for r in self.rows])

    def tolist(self):
        return [list(r) for r in self.rows]


class FakeVector:
    def __init__(self, values):
        self.values = values

    def tolist(self):
        return list(self.values)


class FakeArray(FakeTensor):
    """numpy's spelling: sum(axis=1)."""

    def sum(self, axis=None, **kw):
        if kw or axis != 1:
            raise TypeError("sum(axis=1) only")
        return FakeVector([sum(r) for r in self.rows])


def padded(lens, pad=0, tok=7):
    width = max(lens)
    ids = [[tok] * n + [pad] * (width - n) for n in lens]
    mask = [[1] * n + [0] * (width - n) for n in lens]
    return ids, mask


class Lengths(unittest.TestCase):
    def test_attention_mask_tensor_array_and_lists(self):
        ids, mask = padded([5, 3, 1])
        self.assertEqual(runmon_record.lengths({"attention_mask": FakeTensor(mask)}), [5, 3, 1])
        self.assertEqual(runmon_record.lengths({"attention_mask": FakeArray(mask)}), [5, 3, 1])
        self.assertEqual(runmon_record.lengths({"attention_mask": mask, "input_ids": ids}), [5, 3, 1])

    def test_input_ids_with_pad_id(self):
        ids, _ = padded([4, 2], pad=50256)
        self.assertEqual(runmon_record.lengths({"input_ids": FakeTensor(ids)}, pad_id=50256), [4, 2])
        self.assertEqual(runmon_record.lengths({"input_ids": ids}, pad_id=50256), [4, 2])

    def test_ragged_lists_and_length_keys(self):
        self.assertEqual(runmon_record.lengths({"input_ids": [[1, 2, 3], [4]]}), [3, 1])
        self.assertEqual(runmon_record.lengths({"lengths": FakeVector([9, 8])}), [9, 8])
        self.assertEqual(runmon_record.lengths(types.SimpleNamespace(attention_mask=[[1, 1, 0]])), [2])

    def test_padded_tensor_without_pad_id_is_refused(self):
        ids, _ = padded([4, 2])
        with self.assertRaisesRegex(ValueError, "pad_id"):
            runmon_record.lengths({"input_ids": FakeTensor(ids)})
        with self.assertRaisesRegex(ValueError, "no attention_mask"):
            runmon_record.lengths({"labels": [1]})

    def test_bucket_of_edges(self):
        b = runmon_record.bucket_of
        self.assertEqual([b(x, BOUNDS) for x in (1, 770, 771, 1216, 8192, 9000)], [0, 0, 1, 1, 5, 5])
        with self.assertRaises(ValueError):
            b(3, [0])


class Recorder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_fields_micro_and_buckets(self):
        path = os.path.join(self.dir, "b.jsonl")
        with runmon_record.BatchRecorder(path, rank=2, buckets=BOUNDS) as rec:
            rec.record(10, lens=[800, 20])
            rec.record(10, batch={"attention_mask": FakeTensor(padded([30, 40])[1])})
            rec.record(11, n=4, tokens=100, max_len=30)
            rec.record(12, bucket=3)
            rec.record(12, lens=[5], micro=7)
        rows = read_lines(path)
        self.assertEqual(rows[0], {"step": 10, "rank": 2, "micro": 0, "bucket": 1, "lens": [800, 20]})
        self.assertEqual(rows[1], {"step": 10, "rank": 2, "micro": 1, "bucket": 0, "lens": [30, 40]})
        self.assertEqual(rows[2], {"step": 11, "rank": 2, "micro": 0, "bucket": 0, "n": 4, "tokens": 100, "max_len": 30})
        self.assertEqual(rows[3], {"step": 12, "rank": 2, "micro": 0, "bucket": 3})
        self.assertEqual(rows[4]["micro"], 7)

    def test_bad_values_are_refused_before_writing(self):
        path = os.path.join(self.dir, "b.jsonl")
        rec = runmon_record.BatchRecorder(path, rank=0)
        for kwargs in ({"lens": [-1]}, {"lens": []}, {"lens": [1.5]}, {}, {"n": 0}, {"bucket": True}):
            with self.assertRaises(ValueError, msg=kwargs):
                rec.record(1, **kwargs)
        with self.assertRaises(ValueError):
            rec.record(1.5, lens=[1])
        with self.assertRaises(ValueError):
            runmon_record.BatchRecorder(path, buckets=[5, 1])
        with self.assertRaises(ValueError):
            runmon_record.BatchRecorder()
        rec.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            rec.record(1, lens=[1])
        self.assertEqual(os.path.getsize(path), 0)

    def test_rank_from_env_and_torch_distributed(self):
        saved = {k: os.environ.pop(k, None) for k in ("RANK", "LOCAL_RANK")}
        try:
            self.assertEqual(runmon_record.rank_from_env(), 0)
            os.environ["LOCAL_RANK"] = "1"
            self.assertEqual(runmon_record.rank_from_env(), 1)
            dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True, get_rank=lambda: 5)
            sys.modules["torch.distributed"] = dist
            try:
                self.assertEqual(runmon_record.rank_from_env(), 5)
                os.environ["RANK"] = "3"
                self.assertEqual(runmon_record.rank_from_env(), 3)
            finally:
                del sys.modules["torch.distributed"]
            path = os.path.join(self.dir, "r{rank}.jsonl")
            with runmon_record.BatchRecorder(path) as rec:
                self.assertEqual(rec.path, os.path.join(self.dir, "r3.jsonl"))
                rec.record(1, lens=[2])
            self.assertEqual(read_lines(rec.path)[0]["rank"], 3)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v

    def test_partial_last_line_is_cut_before_appending(self):
        path = os.path.join(self.dir, "b.jsonl")
        with open(path, "w") as f:
            f.write('{"step":1,"rank":0,"micro":0,"lens":[3]}\n{"step":2,"ra')
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with runmon_record.BatchRecorder(path, rank=0) as rec:
                rec.record(2, lens=[4])
        self.assertTrue(any("partial last line" in str(x.message) for x in w))
        self.assertEqual([r["step"] for r in read_lines(path)], [1, 2])

    @need_runmon
    def test_bucket_of_agrees_with_runmon(self):
        # max lengths at and around every boundary, recorded without a
        # bucket; runmon derives its own from --buckets.
        maxes = sorted({max(1, x + d) for x in BOUNDS for d in (-1, 0, 1)})
        path = os.path.join(self.dir, "b.jsonl")
        with runmon_record.BatchRecorder(path, rank=0) as rec:
            for step, m in enumerate(maxes):
                rec.record(step, lens=[1, m])
        db = os.path.join(self.dir, "s.db")
        runmon("--db", db, "import", "--run", "r", "--buckets", ",".join(map(str, BOUNDS)), path)
        got = dict(sqlite3.connect(db).execute("SELECT max_len, bucket FROM batches").fetchall())
        self.assertEqual(got, {m: runmon_record.bucket_of(m, BOUNDS) for m in maxes})

    @need_runmon
    def test_kill_at_any_time_leaves_a_file_runmon_reads(self):
        path = os.path.join(self.dir, "b.jsonl")
        writer = (
            "import sys; sys.path.insert(0, sys.argv[2]); import runmon_record as r\n"
            "rec = r.BatchRecorder(sys.argv[1], rank=0, buckets=[0, 770, 1216, 8192])\n"
            "step = 0\n"
            "while True:\n"
            "    step += 1\n"
            "    for m in range(4): rec.record(step, lens=[(step * 7 + m) % 2000 + 1] * 64)\n"
        )
        module_dir = os.path.dirname(runmon_record.__file__)
        for attempt in range(5):  # each kill lands somewhere else; the file grows across restarts
            before = os.path.getsize(path) if os.path.exists(path) else 0
            p = subprocess.Popen([sys.executable, "-c", writer, path, module_dir])
            deadline = time.monotonic() + 30  # a loaded machine starts Python slowly
            while time.monotonic() < deadline and (not os.path.exists(path) or os.path.getsize(path) < before + 4096):
                time.sleep(0.005)
            time.sleep(0.003 * attempt)
            p.send_signal(signal.SIGKILL)
            p.wait()
            with open(path, "rb") as f:
                data = f.read()
            # Whole lines, or the last one cut: SIGKILL can stop a write at
            # a page boundary (Linux checks fatal signals between pages).
            # The next writer to open the file cuts it off.
            cut = len(data) - (data.rfind(b"\n") + 1)
            self.assertLess(cut, 512, f"attempt {attempt}: a cut longer than a line")  # lines are < 400 bytes
        with warnings.catch_warnings():  # the trainer restarting once more
            warnings.simplefilter("ignore")
            runmon_record.BatchRecorder(path, rank=0).close()
        with open(path, "rb") as f:
            data = f.read()
        self.assertTrue(data.endswith(b"\n"), "a reopened recorder leaves whole lines")
        lines = data.count(b"\n")
        self.assertGreater(lines, 20)
        db = os.path.join(self.dir, "k.db")
        out = runmon("--db", db, "import", "--run", "k", path).stdout
        self.assertIn(f"{lines} lines", out)
        stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        # Restarts rewrite step 1.. again; each (step, rank, micro) is one row.
        distinct = len({(r["step"], r["rank"], r["micro"]) for r in read_lines(path)})
        self.assertEqual(stored, distinct)


# ---- Hugging Face -----------------------------------------------------------

class FakeHFCallbackBase:
    """transformers.TrainerCallback: every event a no-op."""

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)


def install_fake(name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules[name] = mod
    return mod


class FakeTrainer:
    """The parts of transformers.Trainer's loop that decide the step a loss
    is logged under: training_step per micro-batch, global_step += 1 after
    each gradient_accumulation_steps, then the loss of the interval is
    logged at the new global_step every logging_steps."""

    def __init__(self, args, batches, loss_of, tokenizer=None):
        self.args = args
        self.state = types.SimpleNamespace(global_step=0, log_history=[])
        self.batches = batches
        self.loss_of = loss_of
        self.processing_class = tokenizer
        self.callbacks = []

    def add_callback(self, cb):
        self.callbacks.append(cb)

    def training_step(self, model, inputs, num_items_in_batch=None):
        return self.loss_of(inputs)

    def train(self):
        acc = self.args.gradient_accumulation_steps
        interval = []
        for i, inputs in enumerate(self.batches):
            interval.append(self.training_step(None, inputs, num_items_in_batch=8))
            if (i + 1) % acc == 0:
                self.state.global_step += 1
                if self.state.global_step % self.args.logging_steps == 0:
                    self.state.log_history.append(
                        {"loss": round(sum(interval) / len(interval), 4), "learning_rate": 1e-4,
                         "epoch": 0.01 * self.state.global_step, "step": self.state.global_step})
                    interval = []
        for cb in self.callbacks:
            cb.on_train_end(self.args, self.state, None)


def hf_batches(rank, steps, acc):
    """Micro-batch m of step s on rank r: every sequence is 100*s + 10*r + m
    long (right-padded, pad id 0), so each line says where it came from."""
    out = []
    for s in range(1, steps + 1):
        for m in range(acc):
            n = 100 * s + 10 * rank + m
            ids, mask = padded([n, n - 5 if n > 5 else n])
            out.append({"input_ids": FakeTensor(ids), "attention_mask": FakeTensor(mask)})
    return out


class HuggingFace(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        runmon_record._built.clear()
        install_fake("transformers", TrainerCallback=FakeHFCallbackBase)

    def tearDown(self):
        sys.modules.pop("transformers", None)
        runmon_record._built.clear()
        self.tmp.cleanup()

    def train(self, how, steps=6, acc=4, ranks=2):
        trainers = []
        for rank in range(ranks):
            args = types.SimpleNamespace(output_dir=self.dir, process_index=rank, gradient_accumulation_steps=acc,
                                         logging_steps=2)
            loss = lambda inputs: 1.0 + inputs["attention_mask"].sum(dim=1).tolist()[0] / 1000  # noqa: E731
            batches = hf_batches(rank, steps, acc)
            if how == "mixin":
                cls = type("MyTrainer", (runmon_record.RunmonTrainerMixin, FakeTrainer), {})
                t = cls(args, batches, loss, tokenizer=types.SimpleNamespace(pad_token_id=0))
            else:
                t = FakeTrainer(args, batches, loss, tokenizer=types.SimpleNamespace(pad_token_id=0))
                rec = runmon_record.attach(t)
                self.assertIsInstance(t.callbacks[0], FakeHFCallbackBase)
            t.train()
            if how == "attach":
                self.assertIsNone(rec._fd, "the callback closes the file at on_train_end")
            trainers.append(t)
        return trainers

    def check_sidecars(self, steps=6, acc=4, ranks=2):
        for rank in range(ranks):
            rows = read_lines(os.path.join(self.dir, f"runmon-batches-rank{rank}.jsonl"))
            self.assertEqual(len(rows), steps * acc)
            for i, row in enumerate(rows):
                s, m = i // acc + 1, i % acc
                n = 100 * s + 10 * rank + m
                # the step the Trainer logs this micro-batch's loss under
                self.assertEqual((row["step"], row["rank"], row["micro"]), (s, rank, m))
                self.assertEqual(row["lens"], [n, n - 5])

    def test_attach_gradient_accumulation_4_by_2_ranks(self):
        self.train("attach")
        self.check_sidecars()

    def test_mixin_gradient_accumulation_4_by_2_ranks(self):
        self.train("mixin")
        self.check_sidecars()

    @need_runmon
    def test_round_trip_through_runmon(self):
        trainers = self.train("attach")
        state = os.path.join(self.dir, "trainer_state.json")
        with open(state, "w") as f:
            json.dump({"global_step": 6, "log_history": trainers[0].state.log_history}, f)
        db = os.path.join(self.dir, "hf.db")
        runmon("--db", db, "import", "--run", "hf", state,
               *[os.path.join(self.dir, f"runmon-batches-rank{r}.jsonl") for r in range(2)])
        con = sqlite3.connect(db)
        per_step = con.execute("SELECT step, COUNT(*), COUNT(DISTINCT rank), COUNT(DISTINCT micro), SUM(n)"
                               " FROM batches GROUP BY step ORDER BY step").fetchall()
        self.assertEqual(per_step, [(s, 8, 2, 4, 16) for s in range(1, 7)])
        # The logged steps (2, 4, 6) each find their micro-batches.
        joined = con.execute("SELECT step, n FROM step_batches WHERE loss IS NOT NULL ORDER BY step").fetchall()
        self.assertEqual(joined, [(2, 16), (4, 16), (6, 16)])

    @need_runmon
    def test_diagnose_flags_a_homogeneous_order_and_passes_a_shuffled_one(self):
        import random

        import tiny_train

        verdicts = {}
        for how in ("homogeneous", "interleaved"):
            rng = random.Random(7)
            lens = tiny_train.lengths_of(rng, 2 * 2 * 2000 * 8 * 2)
            glob = tiny_train.order(rng, tiny_train.batches_by_bucket(rng, lens, 8), lens, how)
            out = os.path.join(self.dir, how)
            history = []
            for rank in range(2):  # rank r takes every other pair of micro-batches of the global order
                mine = [glob[(i // 2 * 2 + rank) * 2 + i % 2] for i in range(2 * 2000)]
                batches = [{"attention_mask": tiny_train.Mask([lens[j] for j in bt])} for bt in mine]
                args = types.SimpleNamespace(output_dir=out, process_index=rank, gradient_accumulation_steps=2,
                                             logging_steps=1)

                def loss(inputs):
                    bl = inputs["attention_mask"].lens
                    return 0.35 + 0.5 * (sum(bl) / len(bl) / 500) ** 0.5 + rng.gauss(0, 0.03)

                t = FakeTrainer(args, batches, loss)
                runmon_record.attach(t)
                t.train()
                history.append(t.state.log_history)
            state = os.path.join(out, "trainer_state.json")
            with open(state, "w") as f:  # the logged loss: the mean over ranks
                json.dump({"log_history": [dict(a, loss=round((a["loss"] + b["loss"]) / 2, 5))
                                           for a, b in zip(*history)]}, f)
            db = os.path.join(out, "d.db")
            runmon("--db", db, "import", "--run", how, state,
                   *[os.path.join(out, f"runmon-batches-rank{r}.jsonl") for r in range(2)])
            d = json.loads(runmon("--db", db, "diagnose", "--json", how, check=False).stdout)
            verdicts[how] = (d["verdict"]["hypothesis"], d["severity"])
        self.assertEqual(verdicts["homogeneous"][0], "homogeneous batching")
        self.assertIn(verdicts["homogeneous"][1], ("warn", "critical"))
        self.assertIn(verdicts["interleaved"][1], ("ok", "info"))

    def test_callback_without_transformers(self):
        sys.modules.pop("transformers")
        sys.modules["transformers"] = None  # import fails, as when it is not installed
        try:
            cb_class = runmon_record.RunmonCallback
            rec = runmon_record.BatchRecorder(os.path.join(self.dir, "b.jsonl"), rank=0)
            cb = cb_class(rec)
            for event in runmon_record._HF_EVENTS:  # the Trainer calls every event on every callback
                self.assertIsNone(getattr(cb, event)(None, None, None))
            self.assertIsNone(rec._fd)
        finally:
            sys.modules.pop("transformers")


# ---- Lightning --------------------------------------------------------------

class FakeLightningCallback:
    def __init__(self):
        self.initialised = True


class FakeLightningTrainer:
    """Lightning's epoch loop as far as steps go: on_train_batch_start for
    each batch; _batches_that_stepped grows after each optimizer step
    (every accumulate_grad_batches batches), after the step's metrics were
    logged under its old value."""

    def __init__(self, callbacks, rank, root, accumulate):
        for cb in callbacks:
            if not isinstance(cb, FakeLightningCallback):
                raise TypeError("callbacks must be Callback instances")
        self.callbacks = callbacks
        self.global_rank = rank
        self.default_root_dir = root
        self.accumulate = accumulate
        self.fit_loop = types.SimpleNamespace(epoch_loop=types.SimpleNamespace(_batches_that_stepped=0))
        self.logged = []

    @property
    def global_step(self):
        return self.fit_loop.epoch_loop._batches_that_stepped

    def fit(self, batches):
        loop = self.fit_loop.epoch_loop
        for i, batch in enumerate(batches):
            for cb in self.callbacks:
                cb.on_train_batch_start(self, None, batch, i)
            if (i + 1) % self.accumulate == 0:
                self.logged.append(loop._batches_that_stepped)
                loop._batches_that_stepped += 1
        for cb in self.callbacks:
            cb.on_train_end(self, None)


class Lightning(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        runmon_record._built.clear()
        install_fake("lightning")
        install_fake("lightning.pytorch", Callback=FakeLightningCallback)

    def tearDown(self):
        for m in ("lightning", "lightning.pytorch"):
            sys.modules.pop(m, None)
        runmon_record._built.clear()
        self.tmp.cleanup()

    def test_steps_are_the_ones_lightning_logs_under(self):
        for rank in range(2):
            cb = runmon_record.RunmonLightningCallback(buckets=BOUNDS)
            self.assertTrue(cb.initialised, "the Lightning base class is initialised")
            t = FakeLightningTrainer([cb], rank, self.tmp.name, accumulate=4)
            batches = [{"attention_mask": FakeTensor(padded([100 + i, 900])[1])} for i in range(12)]
            t.fit(batches)
            rows = read_lines(os.path.join(self.tmp.name, f"runmon-batches-rank{rank}.jsonl"))
            self.assertEqual([(r["step"], r["micro"]) for r in rows], [(i // 4, i % 4) for i in range(12)])
            self.assertEqual(sorted({r["step"] for r in rows}), t.logged)
            self.assertTrue(all(r["rank"] == rank and r["bucket"] == 1 for r in rows))
            self.assertIsNone(cb.recorder._fd)

    def test_lens_fn_for_tuple_batches(self):
        cb = runmon_record.RunmonLightningCallback(lens_fn=lambda batch: batch[1])
        t = FakeLightningTrainer([cb], 0, self.tmp.name, accumulate=1)
        t.fit([("x", [3, 4]), ("y", [5])])
        rows = read_lines(os.path.join(self.tmp.name, "runmon-batches-rank0.jsonl"))
        self.assertEqual([(r["step"], r["lens"]) for r in rows], [(0, [3, 4]), (1, [5])])

    def test_importable_without_lightning(self):
        for m in ("lightning", "lightning.pytorch"):
            sys.modules[m] = None
        sys.modules["pytorch_lightning"] = None
        try:
            cb = runmon_record.RunmonLightningCallback(path=os.path.join(self.tmp.name, "b.jsonl"))
            self.assertNotIsInstance(cb, FakeLightningCallback)
        finally:
            sys.modules.pop("pytorch_lightning")


# ---- W&B ----------------------------------------------------------------------

class FakeRun:
    """wandb's row building: log(commit=False) merges into the pending row,
    a committing log writes it and moves run.step on."""

    def __init__(self):
        self.step = 0
        self.pending = {}
        self.rows = []

    def log(self, data, commit=None):
        self.pending.update(data)
        if commit is not False:
            self.rows.append(dict(self.pending, _step=self.step))
            self.pending = {}
            self.step += 1


class Wandb(unittest.TestCase):
    def test_keys_join_the_loss_row_as_interval_means(self):
        run = FakeRun()
        rec = runmon_record.BatchRecorder(wandb=run, rank=0, buckets=BOUNDS)
        for step in range(1, 7):
            for m in range(2):
                rec.record(step, lens=[100 * step + m, 50])
            if step % 3 == 0:  # the trainer logs every 3 steps
                run.log({"train/loss": 1.0, "train/global_step": step})
        self.assertEqual(len(run.rows), 2)
        first = run.rows[0]
        self.assertEqual(first["train/global_step"], 3)
        self.assertEqual(first["batch/n"], 4)  # 2 micro-batches of 2, per step
        self.assertEqual(first["batch/max_len"], 301)
        self.assertEqual(first["batch/min_len"], 50)
        tokens = sum(100 * s + m + 50 for s in (1, 2, 3) for m in (0, 1))
        self.assertEqual(first["batch/tokens"], round(tokens / 3))
        self.assertAlmostEqual(first["batch/mean_len"], tokens / 12)
        self.assertEqual(first["batch/bucket"], 0)
        self.assertEqual(run.rows[1]["batch/max_len"], 601)

    @need_runmon
    def test_runmon_reads_the_rows(self):
        run = FakeRun()
        rec = runmon_record.BatchRecorder(wandb=run, rank=0)
        for step in range(1, 11):
            rec.record(step, lens=[10 * step, 5])
            run.log({"train/loss": 2.0 - step / 10, "train/global_step": step})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "history.jsonl")
            with open(path, "w") as f:
                for row in run.rows:
                    f.write(json.dumps(row) + "\n")
            db = os.path.join(d, "w.db")
            runmon("--db", db, "import", "--run", "w", path)
            # Each loss row finds the batches of its own step, whichever step key runmon reads.
            got = sqlite3.connect(db).execute(
                "SELECT round(loss, 6), n, max_len, tokens FROM step_batches ORDER BY step").fetchall()
            self.assertEqual(got, [(round(2.0 - s / 10, 6), 2, 10 * s, 10 * s + 5) for s in range(1, 11)])

    def test_module_form(self):
        run = FakeRun()
        module = types.SimpleNamespace(run=run, log=run.log)
        rec = runmon_record.BatchRecorder(wandb=module, rank=0)
        rec.record(1, bucket=2)
        run.log({"loss": 1})
        self.assertEqual(run.rows[0]["batch/bucket"], 2)


if __name__ == "__main__":
    unittest.main()
