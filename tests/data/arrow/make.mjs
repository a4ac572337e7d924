// make.mjs - writes the Arrow fixtures of runmon's tests with the reference
// JavaScript implementation (npm's apache-arrow), in the layout Hugging Face
// `Dataset.save_to_disk` produces: data-0000K-of-0000N.arrow shards in the
// Arrow IPC *stream* format, record batches of `writer_batch_size` rows,
// state.json naming the shards, dataset_info.json, and the schema's
// "huggingface" metadata. Beside each dataset, NAME.expected lists the
// length of every row in order ("null" for a null row), computed here from
// the values written, so the C reader is checked against the writer, row by
// row. Usage: npm ci && node make.mjs   (from this folder; output is committed)
import * as A from 'apache-arrow';
import fs from 'node:fs';
import path from 'node:path';

let seed = 12345;
function rand() { /* xorshift32: the fixtures are the same at every run */
	seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
	return seed / 4294967296;
}
function length() { /* log-normal around 40 tokens, 1..512 */
	const u = Math.max(rand(), 1e-9), v = rand();
	const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
	return Math.min(512, Math.max(1, Math.round(Math.exp(Math.log(40) + 0.8 * z))));
}
const ids = (n) => Int32Array.from({length: n}, (_, i) => (i * 7919 + n) % 50257);

// One row's values for the columns of a dataset; lens[i] null for a null row.
function rows(n, nullEvery) {
	const out = [];
	for (let i = 0; i < n; i++) {
		const len = length();
		const isNull = nullEvery && i % nullEvery === nullEvery - 1;
		out.push({len, isNull});
	}
	return out;
}

const hfMeta = (features) => new Map([['huggingface', JSON.stringify({info: {features}})]]);

function batchOf(schema, cols) {
	const children = schema.fields.map((f) => A.vectorFromArray(cols[f.name], f.type).data[0]);
	const data = A.makeData({type: new A.Struct(schema.fields), length: children[0].length, nullCount: 0, children});
	return new A.RecordBatch(schema, data);
}

// Writes one dataset: shards of rows, each in batches of batchRows.
function ipcBytes(schema, part, batchRows, colsOf, opts) {
	const W = opts.file ? A.RecordBatchFileWriter : A.RecordBatchStreamWriter;
	const w = new W();
	w.reset(undefined, schema);
	for (let o = 0; o < part.length; o += batchRows)
		w.write(batchOf(schema, colsOf(part.slice(o, o + batchRows))));
	w.finish();
	return w.toUint8Array(true);
}

// A small copy for the fuzzer's seed corpus (tests/fuzz/corpus/arrow): one
// option byte (fuzz_arrow.c: which column to ask for), then the file.
function writeSeed(name, schema, allRows, colsOf, opts, optionByte) {
	const dir = '../../fuzz/corpus/arrow';
	fs.mkdirSync(dir, {recursive: true});
	const bytes = ipcBytes(schema, allRows.slice(0, 12), 5, colsOf, opts);
	fs.writeFileSync(path.join(dir, name), Buffer.concat([Buffer.from([optionByte]), bytes]));
}

function writeDataset(dir, schema, allRows, shards, batchRows, colsOf, expectOf, opts = {}) {
	fs.rmSync(dir, {recursive: true, force: true});
	fs.mkdirSync(dir, {recursive: true});
	const files = [];
	const per = Math.ceil(allRows.length / shards);
	for (let s = 0; s < shards; s++) {
		const part = allRows.slice(s * per, (s + 1) * per);
		const name = `data-${String(s).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.arrow`;
		fs.writeFileSync(path.join(dir, name), ipcBytes(schema, part, batchRows, colsOf, opts));
		files.push({filename: name});
	}
	fs.writeFileSync(path.join(dir, 'state.json'), JSON.stringify({
		_data_files: files, _fingerprint: 'f00d' + shards, _format_columns: null, _format_kwargs: {},
		_format_type: null, _output_all_columns: false, _split: 'train'}, null, 2) + '\n');
	fs.writeFileSync(path.join(dir, 'dataset_info.json'), JSON.stringify({
		citation: '', description: '', features: {}, homepage: '', license: ''}) + '\n');
	fs.writeFileSync(dir + '.expected', allRows.map(expectOf).join('\n') + '\n');
	for (const [i, b] of (opts.seeds || [0]).entries())
		writeSeed(`${dir}-${i}`, schema, allRows, colsOf, opts, b);
}

const I32 = new A.Int32(), I8 = new A.Int8(), I64 = new A.Int64();
const listOf = (t) => new A.List(new A.Field('item', t, true));
const largeListOf = (t) => new A.LargeList(new A.Field('item', t, true));
const f = (name, type, nullable = true) => new A.Field(name, type, nullable);

// 1. A tokenized dataset with a seq_len column, as `dataset.map(...)` leaves
//    it: text, input_ids, attention_mask, seq_len; 3 shards, 100-row batches (datasets writes 1000).
{
	const schema = new A.Schema([f('text', new A.Utf8()), f('input_ids', listOf(I32)), f('attention_mask', listOf(I8)),
		f('seq_len', I64)], hfMeta({text: {dtype: 'string', _type: 'Value'}}));
	const r = rows(900, 0);
	writeDataset('seqlen', schema, r, 3, 100, (p) => ({
		text: p.map((x) => 'tok '.repeat(Math.min(x.len, 8))),
		input_ids: p.map((x) => ids(x.len)),
		attention_mask: p.map((x) => Int8Array.from({length: x.len}, () => 1)),
		seq_len: p.map((x) => BigInt(x.len)),
	}), (x) => String(x.len), {seeds: [0, 2]});
}
// 2. input_ids without seq_len, with null rows (every 97th): lengths from the
//    list offsets; a dictionary-encoded `lang` column first (dictionary
//    batches in the stream); 2 shards, 250-row batches.
{
	const schema = new A.Schema([f('lang', new A.Dictionary(new A.Utf8(), new A.Int32())),
		f('input_ids', listOf(I32)), f('attention_mask', listOf(I8)), f('labels', new A.Int64())], hfMeta({}));
	const r = rows(700, 97);
	writeDataset('ids', schema, r, 2, 250, (p) => ({
		lang: p.map((x, i) => ['en', 'de', 'fr'][i % 3]),
		input_ids: p.map((x) => x.isNull ? null : ids(x.len)),
		attention_mask: p.map((x) => x.isNull ? null : Int8Array.from({length: x.len}, () => 1)),
		labels: p.map((x, i) => BigInt(i % 2)),
	}), (x) => x.isNull ? 'null' : String(x.len), {seeds: [0, 3]});
}
// 3. One file: a struct column and a large_utf8 before a large_list<int32>
//    `tokens` column, and a uint16 `length` column with nulls (every 13th);
//    empty lists (length 0) on every 50th row.
{
	const meta = new A.Struct([f('source', new A.Utf8()), f('score', new A.Float32())]);
	const schema = new A.Schema([f('meta', meta), f('doc', new A.LargeUtf8()), f('tokens', largeListOf(I32)),
		f('length', new A.Uint16())], hfMeta({}));
	const r = rows(400, 0).map((x, i) => ({len: i % 50 === 49 ? 0 : x.len, nullLen: i % 13 === 12}));
	writeDataset('large', schema, r, 1, 128, (p) => ({
		meta: p.map((x, i) => ({source: 'src' + (i % 3), score: i / 10})),
		doc: p.map((x) => 'd'.repeat(x.len % 17)),
		tokens: p.map((x) => ids(x.len)),
		length: p.map((x) => x.nullLen ? null : x.len),
	}), (x) => String(x.len), {seeds: [0, 4]});
	const rl = r.map((x) => x.nullLen ? 'null' : String(x.len));
	fs.writeFileSync('large.length.expected', rl.join('\n') + '\n');
}
// 4. The Arrow IPC *file* format (ARROW1 magic and footer), as pyarrow's
//    `feather`/`ipc.new_file` writes: one shard, a bool, a float `score` (a
//    wrong type for lengths) and an int32 n_tokens column.
{
	const schema = new A.Schema([f('keep', new A.Bool()), f('score', new A.Float64()), f('n_tokens', new A.Int32())]);
	const r = rows(300, 0);
	writeDataset('filefmt', schema, r, 1, 120, (p) => ({
		keep: p.map((x, i) => i % 4 !== 0),
		score: p.map((x) => x.len / 3),
		n_tokens: p.map((x) => x.len),
	}), (x) => String(x.len), {file: true, seeds: [0, 1]});
}
