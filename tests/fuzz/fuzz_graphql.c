/*
 * fuzz_graphql.c - libFuzzer target for what runmon reads from W&B's
 * GraphQL API: the HistoryPage response scanner (data.project.run.history,
 * errors, null runs), each history row string unescaped and parsed as sync
 * does, and the timestamps of run metadata.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "runmon/parse.h"
#include "runmon/wandb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = fuzz_cstring(data, size), why[256];
	struct rm_row outer, row;
	const struct rm_field *hist;
	rm_row_init(&outer);
	rm_row_init(&row);
	if (!rm_wandb_parse_history(body, size, &outer, &hist, why, sizeof(why)) && hist && hist->type == RM_F_STRARR) {
		for (uint32_t i = 0; i < hist->arr_len; i++) {
			const struct rm_span *sp = &outer.spans[hist->arr_off + i];
			char *line = malloc(sp->len + 1);
			size_t n = sp->escaped ? rm_json_unescape(sp->p, sp->len, line) : sp->len;
			if (!sp->escaped)
				memcpy(line, sp->p, sp->len);
			line[n] = '\0';
			struct rm_err err;
			rm_jsonrow_parse(&row, line, n, &err);
			free(line);
		}
	}
	rm_row_release(&row);
	rm_row_release(&outer);
	rm_wandb_parse_time(body);
	free(body);
	return 0;
}
