#!/usr/bin/env python3
"""Writes TensorBoard event files for runmon's tests, from JSON lines.

Written from the format's documentation, not from runmon's reader:
TFRecord framing (tensorflow.org/tutorials/load_data/tfrecord: uint64
length, uint32 masked_crc32c(length), data, uint32 masked_crc32c(data),
little-endian; masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8) around
tensorflow.Event messages (tensorflow/core/util/event.proto,
summary.proto, tensor.proto; protobuf wire format from
protobuf.dev/programming-guides/encoding). CRC-32C is checked against the
published vectors (RFC 3720 B.4, and "123456789") before anything is
written.

Each input line is an object with "_step" (or "step") and numeric values;
each value becomes one event (one tag per event, as SummaryWriter writes).

Usage: tfevents_write.py [options] IN.jsonl OUT
  --form simple|float_val|float_val_unpacked|content|double
                       how a scalar is stored (default simple: simple_value;
                       the others: a TensorProto, as tf.summary writes)
  --text               an HF-style text summary (a DT_STRING tensor) first
  --hparams            Lightning's metadata-only hparams values first
  --histogram          a histogram value at the first step (not a scalar)
  --repeat TAG         write TAG twice at each step it has (Lightning's epoch)
  --vector TAG         write TAG as a tensor of two floats (shape [2]: the
                       value and twice it), which is no scalar
  --damage N           flip a byte in record N's data (its checksum fails)
  --damage-length N    flip a byte in record N's length
  --cut BYTES          leave off the last BYTES bytes (a writer killed)
  --wall T             wall_time of the first event (default 1.7e9); 'now'
  --append             add to OUT (a writer that flushed more)
"""
import json
import math
import struct
import sys
import time


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


VECTORS = [(b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43),
           (bytes(range(32)), 0x46DD794E), (bytes(range(31, -1, -1)), 0x113FDB5C)]
for data, want in VECTORS:
    assert crc32c(data) == want, "CRC-32C fails a published test vector"


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_varint(num, v):
    return key(num, 0) + varint(v)


def f_double(num, v):
    return key(num, 1) + struct.pack("<d", v)


def f_float(num, v):
    return key(num, 5) + struct.pack("<f", v)


def f_bytes(num, b):
    return key(num, 2) + varint(len(b)) + b


DT_FLOAT, DT_DOUBLE, DT_STRING = 1, 2, 7


def tensor(form, v):
    shape = f_bytes(2, b"")  # TensorShapeProto with no dims: a scalar
    if form == "float_val":
        return f_varint(1, DT_FLOAT) + shape + f_bytes(5, struct.pack("<f", v))  # packed
    if form == "float_val_unpacked":
        return f_varint(1, DT_FLOAT) + shape + f_float(5, v)
    if form == "content":
        return f_varint(1, DT_FLOAT) + shape + f_bytes(4, struct.pack("<f", v))
    if form == "double":
        return f_varint(1, DT_DOUBLE) + shape + f_bytes(6, struct.pack("<d", v))
    raise SystemExit("unknown --form " + form)


def vector_value(tag, v):
    # TensorShapeProto dim 2 {size 1: 2}: a tensor of two floats, packed
    shape = f_bytes(2, f_bytes(2, f_varint(1, 2)))
    t = f_varint(1, DT_FLOAT) + shape + f_bytes(5, struct.pack("<ff", v, 2 * v))
    return f_bytes(1, tag.encode()) + f_bytes(8, t)


def scalar_metadata():
    # SummaryMetadata: plugin_data 1 {plugin_name 1}, data_class 4 = SCALAR (1)
    return f_bytes(9, f_bytes(1, f_bytes(1, b"scalars")) + f_varint(4, 1))


def value(tag, v, form, first):
    body = f_bytes(1, tag.encode())
    if form == "simple":
        return body + f_float(2, v)
    return body + (scalar_metadata() if first else b"") + f_bytes(8, tensor(form, v))


def event(wall, step, summary_values=None, file_version=None):
    e = f_double(1, wall) + f_varint(2, step)
    if file_version:
        e += f_bytes(3, file_version.encode())
    if summary_values:
        e += f_bytes(5, b"".join(f_bytes(1, v) for v in summary_values))
    return e


def text_value(tag, s):
    t = f_varint(1, DT_STRING) + f_bytes(2, f_bytes(2, f_varint(1, 1))) + f_bytes(8, s.encode())
    meta = f_bytes(9, f_bytes(1, f_bytes(1, b"text")))
    return f_bytes(1, tag.encode()) + meta + f_bytes(8, t)


def hparams_value(tag):
    meta = f_bytes(9, f_bytes(1, f_bytes(1, b"hparams") + f_bytes(2, b"\x12\x00")))
    return f_bytes(1, tag.encode()) + meta


def histogram_value(tag):
    histo = f_double(1, 0) + f_double(2, 3) + f_double(3, 5) + f_double(4, 5) + f_double(5, 11)
    return f_bytes(1, tag.encode()) + f_bytes(5, histo)


def frame(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(crc32c(length))) + data + struct.pack("<I", masked(crc32c(data)))


def main(argv):
    opts = {"form": "simple", "repeat": None, "vector": None, "damage": None, "damage_length": None, "cut": 0,
            "wall": "1.7e9"}
    flags = set()
    args = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--text", "--hparams", "--histogram", "--append"):
            flags.add(a[2:])
        elif a.startswith("--") and a[2:].replace("-", "_") in opts:
            opts[a[2:].replace("-", "_")] = argv[i + 1]
            i += 1
        else:
            args.append(a)
        i += 1
    if len(args) != 2:
        raise SystemExit(__doc__)
    src, out = args
    wall = time.time() if opts["wall"] == "now" else float(opts["wall"])
    records = [] if "append" in flags else [event(wall, 0, file_version="brain.Event:2")]
    if "text" in flags:
        records.append(event(wall, 0, [text_value("args/text_summary", '{"logging_steps": 25}')]))
    if "hparams" in flags:
        records += [event(wall, 0, [hparams_value(t)]) for t in
                    ("_hparams_/experiment", "_hparams_/session_start_info")]
    seen = set()
    for n, line in enumerate(open(src)):
        row = json.loads(line)
        step = int(row.get("_step", row.get("step")))
        if n == 0 and "histogram" in flags:
            records.append(event(wall, step, [histogram_value("classes")]))
        for tag, v in row.items():
            if tag in ("_step", "step") or not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            times = 2 if tag == opts["repeat"] else 1
            for _ in range(times):
                val = vector_value(tag, float(v)) if tag == opts["vector"] else value(tag, float(v), opts["form"],
                                                                                       tag not in seen)
                records.append(event(wall + n * 0.5, step, [val]))
                seen.add(tag)
    blob = bytearray()
    offsets = []
    for r in records:
        offsets.append(len(blob))
        blob += frame(r)
    if opts["damage"] is not None:
        blob[offsets[int(opts["damage"]) - 1] + 12 + 2] ^= 0x5A
    if opts["damage_length"] is not None:
        blob[offsets[int(opts["damage_length"]) - 1]] ^= 0x01
    if int(opts["cut"]):
        del blob[-int(opts["cut"]):]
    with open(out, "ab" if "append" in flags else "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1:])
