// gen_hf_dataset.mjs - a saved Hugging Face dataset for the `buckets`
// benchmark, written by the reference Arrow implementation (npm's
// apache-arrow, installed in tests/data/arrow): ROWS rows of input_ids
// (int32 token lists, zeros) and a seq_len column, log-normal lengths
// (median 1100, up to 8192; divided by SHRINK when given), in shards of about
// 500 MB of 1000-row record batches, with state.json, as save_to_disk writes.
//
// usage: node gen_hf_dataset.mjs DIR [ROWS] [SHRINK]    (defaults 902087 1)
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';

const A = createRequire(new URL('../data/arrow/package.json', import.meta.url))('apache-arrow');
const [dir, rowsArg, shrinkArg] = process.argv.slice(2);
const rows = Number(rowsArg || 902087), shrink = Number(shrinkArg || 1);

let seed = 2463534242;
function rand() {
	seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
	return (seed + 0.5) / 4294967296;
}
function length() {
	const z = Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
	const len = Math.min(8192, Math.max(16, Math.round(Math.exp(Math.log(1100) + 0.75 * z))));
	return Math.max(1, Math.ceil(len / shrink));
}

const item = new A.Field('item', new A.Int32(), true);
const fields = [new A.Field('input_ids', new A.List(item), true), new A.Field('seq_len', new A.Int64(), true)];
const schema = new A.Schema(fields, new Map([['huggingface', '{"info": {"features": {}}}']]));

function batch(lens) {
	const offsets = new Int32Array(lens.length + 1);
	for (let i = 0; i < lens.length; i++)
		offsets[i + 1] = offsets[i] + lens[i];
	const tokens = A.makeData({type: item.type, length: offsets[lens.length], data: new Int32Array(offsets[lens.length])});
	const ids = A.makeData({type: fields[0].type, length: lens.length, nullCount: 0, valueOffsets: offsets, child: tokens});
	const sl = A.makeData({type: fields[1].type, length: lens.length, data: BigInt64Array.from(lens, BigInt)});
	return new A.RecordBatch(schema, A.makeData({type: new A.Struct(fields), length: lens.length, nullCount: 0,
		children: [ids, sl]}));
}

fs.rmSync(dir, {recursive: true, force: true});
fs.mkdirSync(dir, {recursive: true});
const lens = Array.from({length: rows}, length);
const bytes = lens.reduce((a, b) => a + 4 * b + 12, 0);
const shards = Math.max(1, Math.ceil(bytes / 500e6)), per = Math.ceil(rows / shards), files = [];
for (let s = 0; s < shards; s++) {
	const name = `data-${String(s).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.arrow`;
	const w = new A.RecordBatchStreamWriter();
	w.reset(undefined, schema);
	for (let o = s * per; o < Math.min(rows, (s + 1) * per); o += 1000)
		w.write(batch(lens.slice(o, Math.min(o + 1000, (s + 1) * per, rows))));
	w.finish();
	fs.writeFileSync(path.join(dir, name), w.toUint8Array(true));
	files.push({filename: name});
}
fs.writeFileSync(path.join(dir, 'state.json'), JSON.stringify({_data_files: files, _split: 'train'}) + '\n');
fs.writeFileSync(path.join(dir, 'dataset_info.json'), '{"features": {}}\n');
console.log(`${dir}: ${rows} rows, ${lens.reduce((a, b) => a + b, 0)} tokens, ${shards} shards`);
