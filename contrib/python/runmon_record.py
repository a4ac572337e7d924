"""runmon_record: record each batch's composition the way runmon reads it.

One line in a training script writes a sidecar (JSONL, one object per
micro-batch) or W&B ``batch/*`` keys that ``runmon import``, ``watch`` and
``sync`` read. Standard library only; PyTorch, Hugging Face, Lightning and
wandb objects are duck-typed and never imported here unless the caller uses
them.

    from runmon_record import BatchRecorder
    rec = BatchRecorder("batches.jsonl", buckets=[0, 770, 1216, 1728, 2432, 3296, 8192])
    for step, batch in enumerate(loader):
        rec.record(step, batch=batch)      # lengths from batch["attention_mask"]

Hugging Face ``Trainer``: ``attach(trainer)``, or the ``RunmonTrainerMixin``.
Lightning: ``callbacks=[RunmonLightningCallback()]``.

Each line is one ``os.write`` on a descriptor opened with ``O_APPEND``: no
user-space buffer to lose, and ranks appending to one local file do not
interleave within a line. A kill leaves whole lines, but for one case: Linux
may stop a write at a page boundary when the process is killed, cutting the
last line short; the next recorder to open the file cuts it off.
"""

import json
import os
import sys
import warnings

try:
    import fcntl
except ImportError:  # not POSIX: no locks, and one file per rank is the safe mode
    fcntl = None

__all__ = [
    "BatchRecorder",
    "lengths",
    "bucket_of",
    "rank_from_env",
    "attach",
    "RunmonTrainerMixin",
    "RunmonCallback",
    "RunmonLightningCallback",
]

# What `runmon import` accepts (docs/formats.md, "What import validates, and the
# limits"; include/runmon/model.h): the recorder refuses, with ValueError
# naming the field, exactly the lines import would refuse, so a sidecar
# never fails an import or stalls a `watch --batches` tail. Inclusive.
LIMITS = {
    "step": (0, (1 << 53) - 1),
    "rank": (0, (1 << 53) - 1),
    "micro": (0, (1 << 53) - 1),
    "n": (1, 1 << 20),
    "length": (0, 1 << 30),  # each of lens, min_len, max_len
    "tokens": (0, 1 << 50),
    "bucket": (-(1 << 50) + 1, (1 << 50) - 1),  # or a text label
}
LABEL_BYTES = 200  # a text bucket label: 1..200 bytes of UTF-8, no NUL
TOKENS_SLACK = 0.5  # tokens may pass n * max_len (or fall below n * min_len) by this much a sequence
MAX_SEQUENCES = LIMITS["n"][1]
MAX_LENGTH = LIMITS["length"][1]

# The sidecar names runmon reads, and their W&B history form (docs/formats.md,
# "Recording batch composition").
WANDB_PREFIX = "batch/"


def _rows(x):
    """A 2-D tensor, array or list of lists as a list of row lists."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    return [list(r) for r in x]


def _row_sums(mask):
    """Per-row sums of a 0/1 mask, on the device when it is a tensor."""
    for kwargs in ({"dim": 1}, {"axis": 1}):
        try:
            return [int(v) for v in mask.sum(**kwargs).tolist()]
        except (AttributeError, TypeError):
            pass
    return [int(sum(r)) for r in _rows(mask)]


def lengths(batch=None, attention_mask=None, input_ids=None, pad_id=None):
    """The real (unpadded) length of each sequence of a batch.

    From, in order: an attention mask; ``input_ids`` with a pad id (tokens
    that are not padding); ragged ``input_ids`` (the length of each list);
    a ``lengths``/``lens``/``seq_len`` entry. ``batch`` may be a mapping
    holding any of these (a Hugging Face batch) or an object with the same
    attributes.
    """
    if batch is not None:
        get = batch.get if hasattr(batch, "get") else (lambda k: getattr(batch, k, None))
        if attention_mask is None:
            attention_mask = get("attention_mask")
        if input_ids is None:
            input_ids = get("input_ids")
        if attention_mask is None and input_ids is None:
            for key in ("lengths", "lens", "seq_len", "length"):
                given = get(key)
                if given is not None:
                    given = given.tolist() if hasattr(given, "tolist") else given
                    return [int(v) for v in (given if isinstance(given, (list, tuple)) else [given])]
    if attention_mask is not None:
        return _row_sums(attention_mask)
    if input_ids is not None:
        if pad_id is not None:
            try:
                return _row_sums(input_ids != pad_id)
            except (AttributeError, TypeError):
                pass
            return [sum(1 for t in r if t != pad_id) for r in _rows(input_ids)]
        if hasattr(input_ids, "shape"):
            raise ValueError("input_ids is a padded tensor: give attention_mask or pad_id")
        return [len(r) for r in input_ids]
    raise ValueError("the batch has no attention_mask, input_ids or lengths")


def bucket_of(length, boundaries):
    """The bucket runmon gives a batch of this max length: bucket b holds
    lengths in (boundaries[b], boundaries[b+1]]; longer ones go to the last."""
    if len(boundaries) < 2:
        raise ValueError("bucket boundaries need at least two values")
    for b in range(len(boundaries) - 1):
        if length <= boundaries[b + 1]:
            return b
    return len(boundaries) - 2


def rank_from_env():
    """The data-parallel rank: RANK (torchrun, the global rank), else
    torch.distributed when it is initialised, else LOCAL_RANK (one node),
    else 0. torch is consulted only when the program imported it."""
    if os.environ.get("RANK", "").isdigit():
        return int(os.environ["RANK"])
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-initialised process group is no rank
            pass
    if os.environ.get("LOCAL_RANK", "").isdigit():
        return int(os.environ["LOCAL_RANK"])
    return 0


def _whole(name, v, lo=None, hi=None, limit=None):
    """v as an int within LIMITS[limit or name] (or lo..hi), else ValueError."""
    if lo is None and hi is None:
        lo, hi = LIMITS[limit or name]
    if isinstance(v, bool) or v is None:
        raise ValueError(f"{name} must be a whole number, not {v!r}")
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"{name} must be a whole number, not {v!r}")
        v = int(v)
    v = int(v)
    if v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name} {v} is outside {lo}..{hi if hi is not None else ''}")
    return v


def _bucket(v):
    """A bucket as import takes it: an integer within LIMITS, or a text
    label of 1..LABEL_BYTES bytes of UTF-8 without NUL."""
    if isinstance(v, str):
        raw = v.encode("utf-8", "surrogatepass")
        if not 1 <= len(raw) <= LABEL_BYTES or "\0" in v:
            raise ValueError(f"bucket label must be 1..{LABEL_BYTES} bytes without NUL, not {len(raw)} bytes")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("bucket label is not valid UTF-8 (a lone surrogate)") from None
        return v
    return _whole("bucket", v)


def _check_counts(step, n, tokens, min_len, max_len):
    """Import's rules between the counts: min_len <= max_len, and
    n * min_len <= tokens <= n * max_len within TOKENS_SLACK a sequence."""
    if min_len is not None and max_len is not None and min_len > max_len:
        raise ValueError(f"step {step}: min_len {min_len} is above max_len {max_len}")
    if tokens is None or n is None:
        return
    if max_len is not None and tokens > n * max_len + TOKENS_SLACK * n:
        raise ValueError(f"step {step}: tokens {tokens} exceed n * max_len = {n * max_len}")
    if min_len is not None and tokens < n * min_len - TOKENS_SLACK * n:
        raise ValueError(f"step {step}: tokens {tokens} are below n * min_len = {n * min_len}")


class _Interval:
    """Batches since W&B last committed a row, summed as runmon's
    cumulative counters are differenced: per-step means of n and tokens."""

    def __init__(self):
        self.steps = set()
        self.n = self.tokens = self.padded = 0
        self.min_len = self.max_len = self.bucket = None

    def add(self, step, n, tokens, padded, min_len, max_len, bucket):
        self.steps.add(step)
        self.n += n
        self.tokens += tokens
        self.padded += padded
        self.min_len = min_len if self.min_len is None else min(self.min_len, min_len)
        self.max_len = max_len if self.max_len is None else max(self.max_len, max_len)
        if bucket is not None:  # the lowest, as runmon's step_batch view
            self.bucket = bucket if self.bucket is None else min(self.bucket, bucket)

    def keys(self):
        k = max(1, len(self.steps))
        out = {
            "n": max(1, round(self.n / k)),
            "min_len": self.min_len,
            "max_len": self.max_len,
            "mean_len": self.tokens / self.n if self.n else None,
            "tokens": round(self.tokens / k),
            "padded_tokens": round(self.padded / k),
        }
        if self.bucket is not None:
            out["bucket"] = self.bucket
        return {WANDB_PREFIX + key: v for key, v in out.items() if v is not None}


class BatchRecorder:
    """Writes one record per micro-batch: ``{"step", "rank", "micro", ...}``.

    path: the sidecar; ``{rank}`` in it is replaced by the rank (a file per
        rank). Without it, every rank appends to the one file, each line
        carrying its rank: safe on a local file system, not over NFS.
    rank: the data-parallel rank; default ``rank_from_env()``.
    buckets: boundaries to give each batch a bucket id from its max length,
        when the sampler does not expose one.
    pad_id: the pad token, to count lengths from ``input_ids``.
    wandb: a wandb run (or the ``wandb`` module) to log ``batch/*`` keys to
        instead of a file, with ``commit=False`` so that they join the row
        the loss is logged in.
    """

    def __init__(self, path=None, rank=None, buckets=None, pad_id=None, wandb=None):
        if (path is None) == (wandb is None):
            raise ValueError("give a sidecar path or a wandb run, one of the two")
        self.rank = _whole("rank", rank_from_env() if rank is None else rank)
        self.buckets = list(buckets) if buckets is not None else None
        if self.buckets is not None and (len(self.buckets) < 2 or self.buckets != sorted(self.buckets)):
            raise ValueError(f"bucket boundaries must be at least two ascending values: {self.buckets}")
        self.pad_id = pad_id
        self.path = None
        self._fd = None
        self._wandb = wandb
        self._interval = None
        self._interval_row = None
        self._last_step = None
        self._micro = 0
        if path is not None:
            self.path = os.fspath(path).replace("{rank}", str(self.rank))
            self._open()

    def _open(self):
        d = os.path.dirname(self.path)
        if d:
            os.makedirs(d, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # Under an exclusive lock: recorders of other ranks appending to the
        # same file hold a shared one for each write, so nothing they append
        # lands between the look at the end and the cut (issue 35.10).
        self._lock(True)
        try:
            self._drop_partial_line()
        finally:
            self._unlock()

    def _lock(self, exclusive):
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def _unlock(self):
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _drop_partial_line(self):
        """A line cut short by a full disk or a killed writer would make
        runmon reject the file: cut it off before appending."""
        with open(self.path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            if end == 0:
                return
            f.seek(end - 1)
            if f.read(1) == b"\n":
                return
            back = min(end, 1 << 20)
            f.seek(end - back)
            tail = f.read(back)
        cut = tail.rfind(b"\n")
        keep = end - back + cut + 1 if cut >= 0 else (0 if back == end else None)
        if keep is None:  # a line over 1 MiB: not a sidecar we wrote
            raise ValueError(f"{self.path}: ends in a partial line over 1 MiB long; not a sidecar")
        os.ftruncate(self._fd, keep)
        warnings.warn(f"{self.path}: dropped a partial last line ({end - keep} bytes) before appending")

    def record(self, step, lens=None, bucket=None, n=None, tokens=None, max_len=None, min_len=None, micro=None,
               batch=None):
        """Records one (micro-)batch of optimizer step ``step``: the step the
        trainer logs this batch's loss under.

        Give the lengths (``lens``, or ``batch`` to read them from), or the
        counts (``n`` sequences, ``tokens`` real tokens, ``max_len``).
        ``micro`` numbers the micro-batches of a step under gradient
        accumulation; by default it counts the calls with the same step.
        """
        step = _whole("step", step)
        if batch is not None and lens is None:
            lens = lengths(batch, pad_id=self.pad_id)
        rec = {"step": step, "rank": self.rank}
        if micro is None:
            micro = self._micro + 1 if step == self._last_step else 0
        rec["micro"] = self._micro = _whole("micro", micro)
        self._last_step = step
        if lens is not None:
            lens = [_whole("length", v) for v in (lens.tolist() if hasattr(lens, "tolist") else lens)]
            if not lens or len(lens) > MAX_SEQUENCES:
                raise ValueError(f"step {step}: a batch holds 1..{MAX_SEQUENCES} sequences, not {len(lens)}")
            n, tokens, max_len, min_len = len(lens), sum(lens), max(lens), min(lens)
        if n is not None:
            n = _whole("n", n)
        if tokens is not None:
            tokens = _whole("tokens", tokens)
        if max_len is not None:
            max_len = _whole("max_len", max_len, limit="length")
        if min_len is not None:
            min_len = _whole("min_len", min_len, limit="length")
        _check_counts(step, n, tokens, min_len, max_len)
        if bucket is None and self.buckets is not None and max_len is not None:
            bucket = bucket_of(max_len, self.buckets)
        if bucket is not None:
            rec["bucket"] = _bucket(bucket)
        if lens is not None:
            rec["lens"] = lens
        else:
            for key, v in (("n", n), ("tokens", tokens), ("max_len", max_len), ("min_len", min_len)):
                if v is not None:
                    rec[key] = v
        if len(rec) == 3:
            raise ValueError(f"step {step}: nothing to record (give lens, batch, bucket or counts)")
        if self._wandb is not None:
            self._log_wandb(rec, n, tokens, min_len, max_len)
        else:
            self._write(rec)
        return rec

    def _write(self, rec):
        if self._fd is None:
            raise ValueError(f"{self.path}: the recorder is closed")
        data = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        self._lock(False)  # shared: writers append together, a cut waits for them
        try:
            while data:  # a short write (a full disk) leaves a partial line the next open cuts off
                data = data[os.write(self._fd, data):]
        finally:
            self._unlock()

    def _log_wandb(self, rec, n, tokens, min_len, max_len):
        run = getattr(self._wandb, "run", None) or self._wandb
        # The row W&B is building: its step counter moves when a row is
        # committed. Without one, each recorded step is its own interval.
        row = getattr(run, "step", None)
        row = rec["step"] if row is None else ("row", row)
        if self._interval is None or row != self._interval_row:
            self._interval, self._interval_row = _Interval(), row
        if None not in (n, tokens, max_len):
            self._interval.add(rec["step"], n, tokens, n * max_len - tokens, min_len if min_len is not None else max_len,
                               max_len, rec.get("bucket"))
            keys = self._interval.keys()
        else:  # counts without lengths: as given, the last batch's
            keys = {WANDB_PREFIX + k: rec[k] for k in ("bucket", "n", "tokens", "max_len", "min_len") if k in rec}
        self._wandb.log(keys, commit=False)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- Hugging Face Trainer -------------------------------------------------
#
# Trainer callbacks never see the batch, so the batch is recorded from
# training_step. The Trainer logs the loss at global_step s for the
# micro-batches it ran while global_step was s - 1 (it increments after the
# optimizer step, then logs), so a batch belongs to global_step + 1.

_DEFAULT_NAME = "runmon-batches-rank{rank}.jsonl"


def _hf_pad_id(trainer):
    for name in ("processing_class", "tokenizer"):
        tok = getattr(trainer, name, None)
        pad = getattr(tok, "pad_token_id", None)
        if pad is not None:
            return pad
    return None


def _hf_recorder(trainer, path=None, **kwargs):
    """A recorder for the Trainer's rank (``args.process_index``) and pad
    token, writing under ``output_dir`` unless a path or wandb is given."""
    args = trainer.args
    if kwargs.get("rank") is None:
        kwargs["rank"] = getattr(args, "process_index", None)
    if kwargs.get("pad_id") is None:
        kwargs["pad_id"] = _hf_pad_id(trainer)
    if path is None and kwargs.get("wandb") is None:
        path = os.path.join(getattr(args, "output_dir", None) or ".", _DEFAULT_NAME)
    return BatchRecorder(path, **kwargs)


def _hf_record(trainer, recorder, inputs):
    recorder.record(trainer.state.global_step + 1, batch=inputs)


class RunmonTrainerMixin:
    """``class MyTrainer(RunmonTrainerMixin, Trainer)``: records every
    micro-batch to ``<output_dir>/runmon-batches-rank<R>.jsonl``. Set
    ``runmon_path``, ``runmon_buckets`` or ``runmon_wandb`` on the class or
    the instance to change where and how."""

    runmon_path = None
    runmon_buckets = None
    runmon_wandb = None

    def training_step(self, model, inputs, *args, **kwargs):
        rec = self.__dict__.get("_runmon_recorder")
        if rec is None:
            rec = _hf_recorder(self, self.runmon_path, buckets=self.runmon_buckets, wandb=self.runmon_wandb)
            self._runmon_recorder = rec
        _hf_record(self, rec, inputs)
        return super().training_step(model, inputs, *args, **kwargs)


def attach(trainer, path=None, **kwargs):
    """Records every micro-batch a Hugging Face ``Trainer`` (any subclass)
    trains on, and closes the file when training ends. Returns the recorder.
    kwargs go to ``BatchRecorder`` (``buckets``, ``pad_id``, ``wandb``)."""
    rec = _hf_recorder(trainer, path, **kwargs)
    inner = trainer.training_step

    def training_step(model, inputs, *args, **kw):
        _hf_record(trainer, rec, inputs)
        return inner(model, inputs, *args, **kw)

    trainer.training_step = training_step
    trainer.add_callback(__getattr__("RunmonCallback")(rec))
    return rec


# The callback classes subclass the framework's own base when it can be
# imported, so that its trainer accepts them; they are built on first use
# (PEP 562), so importing this module never imports the framework.

_HF_EVENTS = ("on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_step_begin",
              "on_pre_optimizer_step", "on_optimizer_step", "on_substep_end", "on_step_end", "on_evaluate",
              "on_predict", "on_save", "on_log", "on_prediction_step")

_built = {}


def _base_class(candidates):
    import importlib

    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return None


def _build_hf_callback():
    base = _base_class([("transformers", "TrainerCallback")])
    if base is None:  # the events the Trainer calls on every callback, as no-ops
        base = type("TrainerCallback", (), {e: (lambda self, *a, **k: None) for e in _HF_EVENTS})

    class RunmonCallback(base):
        """Closes the recorder when training ends (``attach`` adds it)."""

        def __init__(self, recorder):
            self.recorder = recorder

        def on_train_end(self, args, state, control, **kwargs):
            self.recorder.close()

    return RunmonCallback


def _build_lightning_callback():
    base = _base_class([("lightning.pytorch", "Callback"), ("pytorch_lightning", "Callback")]) or object

    class RunmonLightningCallback(base):
        """Records each training batch from ``on_train_batch_start``.

        Lightning logs a step's metrics under the count of optimizer steps
        taken before it (``_batches_that_stepped``, which ``global_step``
        equals with one optimizer), so a batch belongs to that step; the
        micro-batches of ``accumulate_grad_batches`` share it. The file goes
        to ``<default_root_dir>/runmon-batches-rank<R>.jsonl`` unless
        ``path`` says otherwise.
        """

        def __init__(self, path=None, buckets=None, pad_id=None, lens_fn=None, wandb=None):
            super().__init__()
            self.path, self.buckets, self.pad_id, self.lens_fn, self.wandb = path, buckets, pad_id, lens_fn, wandb
            self.recorder = None

        def _recorder(self, trainer):
            if self.recorder is None:
                rank = getattr(trainer, "global_rank", None)
                if self.wandb is not None:
                    self.recorder = BatchRecorder(rank=rank, buckets=self.buckets, pad_id=self.pad_id,
                                                  wandb=self.wandb)
                else:
                    path = self.path or os.path.join(getattr(trainer, "default_root_dir", None) or ".", _DEFAULT_NAME)
                    self.recorder = BatchRecorder(path, rank=rank, buckets=self.buckets, pad_id=self.pad_id)
            return self.recorder

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
            loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
            step = getattr(loop, "_batches_that_stepped", None)
            if step is None:
                step = trainer.global_step
            lens = self.lens_fn(batch) if self.lens_fn is not None else None
            self._recorder(trainer).record(step, lens=lens, batch=None if lens is not None else batch)

        def on_train_end(self, trainer, pl_module):
            if self.recorder is not None:
                self.recorder.close()

    return RunmonLightningCallback


def __getattr__(name):
    builders = {"RunmonCallback": _build_hf_callback, "RunmonLightningCallback": _build_lightning_callback}
    if name not in builders:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _built:
        _built[name] = builders[name]()
    return _built[name]
