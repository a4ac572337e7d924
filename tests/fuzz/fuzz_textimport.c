/*
 * fuzz_textimport.c - libFuzzer target for the text importers: W&B
 * history rows with NaN tokens, plain JSONL and CSV, the sidecar as JSONL
 * and CSV, the W&B chart CSV export, TensorBoard CSV, trainer_state.json and
 * JSON arrays of records, through detection, the key mapper and the store.
 * The first byte picks the format (0: detect, as runmon does) and whether
 * bad lines are skipped.
 */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t bounds[] = {0, 770, 1216, 1728, 2432, 3296, 8192};
	if (!size)
		return 0;
	struct rm_import_opts o = {.skip_bad = data[0] >> 7};
	int f = (data[0] & 0x7f) % (RM_FMT_COUNT - 1); /* the text formats: all but the W&B log */
	o.format = (enum rm_format)(f >= RM_FMT_WANDB_LOG ? f + 1 : f);
	if (data[0] & 0x40) {
		o.bounds = bounds;
		o.nbounds = 7;
	}
	fuzz_import_bytes(data + 1, size - 1, &o);
	return 0;
}
