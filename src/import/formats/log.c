/*
 * log.c - trainers' console logs: one record per line, after any
 * prefix (timestamps, "[rank0]:", "| INFO | name |", "[train_inner]").
 *
 * A line is read in one of two ways:
 *  - an object after the prefix: JSON (fairseq's hydra logger, whose values
 *    are mostly numeric strings) or a Python dict (Hugging Face's Trainer,
 *    single quotes, True/None/nan);
 *  - name/value pairs: "key=value" (logfmt, fairseq's simple format,
 *    DeepSpeed), "key:value" (modded-nanoGPT), and "key value" or
 *    "key: value" in fields split by " | ", ", " or " : " (fairseq's pipe
 *    format, Megatron-LM, Marian, nanoGPT). A key is the words before a
 *    number; a number may carry thousands separators, a unit (s, ms, %,
 *    GB) or a total ("100/500000").
 * Keys are lower-cased with words joined by "_" ("lm loss:" is lm_loss,
 * "Up." is up); the mapper knows the trainers' names for the step, the
 * loss and the batch composition. A line with an evaluation key (val_,
 * valid_, eval_), a "[valid]" tag or Megatron's "validation loss at" is
 * an evaluation: its other metrics become eval_ metrics. Lines that give
 * no record (banners, config dumps, tracebacks, progress bars) are counted
 * and skipped; an object after a prefix that mentions a loss but does not
 * parse is a bad line. Formats per trainer: shared/logformats.md.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "log_internal.h"
#include "runmon/parse.h"

#define MAX_KEY_WORDS 4 /* "elapsed time per iteration" */
/* A line of more name/value pairs than this is a settings dump, not a
 * record (trainers log 5 to 40 metrics a line). */
#define MAX_RECORD_FIELDS 64
#define MAX_KEY           RM_LOG_MAX_KEY

struct log_reader {
	struct log_line ll;
	struct pattern pattern;
	int has_pattern;
	int64_t records; /* loss records so far, for lines without a step */
	/* The head's scan (log_infer): training records without a step, and
	 * the fractional epoch the latest carried (the HF Trainer's dicts)
	 * with its count, 0 none. */
	int64_t stepless, rec_epoch_at;
	double rec_epoch;
	struct log_roles roles; /* the loops of the bars, the head's lines by role */
	/* The training bar's counter the records took for their step. */
	int64_t bar_taken, bar_steps;
	int64_t conf_records; /* records numbered by the logging_steps a config dump said */
	int64_t bar_gap;      /* the steps between the last two records it gave */
	int64_t set_count;    /* 1 + the counter a frame was drawn at twice (superseded), or 0 */
	int64_t last_step;
	/* A record over lines: a header holding only its step ("step 10",
	 * "=== iteration 100 ==="), its fields on the lines below. The
	 * header's step stands for them until the next; a second loss under
	 * one header says the file has no such headers (never_pend). */
	int64_t pend_step;
	int has_pend, pend_loss, never_pend;
	double pend_epoch; /* "Epoch 1/3" on a line of its own (Keras): the epoch of the lines below */
	int has_pend_epoch;
	/* The line read last, held until the next shows whether indented
	 * lines continue it (OLMo's "[step=12/2500,epoch=0]" header, then
	 * "    train/CrossEntropyLoss=3.2" lines): its text with the
	 * continuations joined as fields, and its line number. */
	char *held;
	size_t hlen, hcap;
	uint64_t held_at;
	int has_held; /* 1 a line, 2 a line with continuations */
	char *spare;  /* the line read before: the row points into it */
	size_t spare_cap;
	/* The spare's records (frames, ranks' glued records), the next to read. */
	struct log_segs segs;
	size_t next_seg;
	uint64_t segs_at;
	struct log_table table;       /* the last table header seen */
	const struct rm_guess *guess; /* what the file's head implied (NULL while it is read) */
	/* A progress bar's record text (what precedes the bar and its metrics),
	 * and the last frame's, which a redraw repeats. */
	char *bartext, *last_frame;
	size_t barcap, last_len, last_cap;
};

/* The tags in brackets before a record: "[valid]" marks an evaluation; a
 * bare number ("[3] ") is kept as the tag (a rank, or a counter: the file
 * decides, infer.c). Returns where the record starts. */
static size_t skip_tags(struct log_line *ll, const char *line, size_t len, int64_t *tag)
{
	size_t i = 0;
	*tag = -1;
	while (i < len && isspace((unsigned char)line[i]))
		i++;
	size_t d = i;
	while (d < len && d - i < 6 && isdigit((unsigned char)line[d]))
		d++;
	if (d > i && d + 1 < len && line[d] == ':' && line[d + 1] == ' ') { /* "3: " (srun --label) */
		int64_t v = 0;
		for (size_t k = i; k < d; k++)
			v = v * 10 + (line[k] - '0');
		*tag = v;
		i = d + 2;
	}
	while (i < len) {
		while (i < len && isspace((unsigned char)line[i]))
			i++;
		if (i < len && line[i] == '[' &&
		    !(len - i > 6 && !strncmp(line + i, "[rank", 5) &&
		      isdigit((unsigned char)line[i + 5]))) { /* a rank is read below */
			const char *close = memchr(line + i, ']', len - i);
			size_t end;
			if (!close || memchr(line + i + 1, '[', (size_t)(close - line) - i - 1))
				break; /* "[  7 Epoch:[ 0/25]": a counter left open */
			char cbuf[48];
			size_t cl;
			if (rm_log_word_group(line, i, len, &end) || rm_log_counter_time(line, i, len, &end, cbuf, &cl))
				break; /* "[Epoch 1/10][Batch 0/300]", "[15 | 6.02]": fields, not a tag */
			size_t tl = (size_t)(close - line) - i - 1;
			if (tl && tl <= 7 && strspn(line + i + 1, "0123456789") == tl && *tag < 0) {
				int64_t v = 0;
				for (size_t k = 0; k < tl; k++)
					v = v * 10 + (line[i + 1 + k] - '0');
				*tag = v;
			} else if (tl && strspn(line + i + 1, "0123456789 /") == tl) {
				break; /* "[  1/ 50]": a counter, read with the pairs */
			}
			if (rm_log_has_word(line + i, (size_t)(close - line - i), "valid"))
				ll->eval = 1;
			i = (size_t)(close - line) + 1;
			continue;
		}
		break;
	}
	return i;
}

/* "128/128 - 5s - loss: ...": a counter and its total, then " - " (Keras's
 * fit with verbose=2, one line an epoch). */
static int keras_epoch_line(const char *s, size_t n)
{
	size_t i = strspn(s, " ");
	size_t d = i + strspn(s + i, "0123456789");
	if (d == i || d >= n || s[d] != '/')
		return 0;
	size_t e = d + 1 + strspn(s + d + 1, "0123456789");
	return e > d + 1 && e + 3 <= n && !memcmp(s + e, " - ", 3);
}

/* Does the record open with a word of evaluation ("Testing at - 6400/...",
 * "Epoch(val) [1][30045]", "Validation: ...")? */
static int eval_opening(const char *s, size_t n)
{
	static const char *const words[] = {"test",       "testing",    "eval", "evaluating", "evaluation",
	                                    "validating", "validation", "val",  "valid",      NULL};
	size_t i = 0;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	size_t st = i;
	while (i < n && isalpha((unsigned char)s[i]))
		i++;
	if (rm_log_word_in(s + st, i - st, words))
		return 1;
	return rm_log_has_word(s, n, "(val)") || rm_log_has_word(s, n, "(eval)") || rm_log_has_word(s, n, "(test)");
}

/* A line holding one object after its prefix: JSON, or a Python dict. */
static enum line_kind log_object(struct log_line *ll, char *line, size_t len, char *brace, char *why, size_t whylen)
{
	size_t plen = (size_t)(brace - line), olen = len - plen;
	ll->eval = rm_log_has_word(line, plen, "valid") || rm_log_has_word(line, plen, "[eval");
	ll->summary = rm_log_has_word(line, plen, "[train]");
	struct rm_err perr;
	char saved = line[len];
	line[len] = 0; /* the JSON reader wants the object NUL-terminated */
	int bad = rm_jsonrow_parse(&ll->row, brace, olen, &perr);
	if (bad) {
		size_t jl = rm_log_python_json(ll, brace, olen);
		bad = !jl || rm_jsonrow_parse(&ll->row, ll->py, jl, &perr);
	}
	line[len] = saved;
	if (!bad)
		return LINE_RECORD;
	rm_row_clear(&ll->row);
	if (!rm_log_record_like(brace, olen)) {
		snprintf(why, whylen, "an object that is no record (a config dump, a repr)");
		return LINE_NONE;
	}
	snprintf(why, whylen, "the object after the prefix does not parse: %.200s", perr.msg);
	return LINE_BAD;
}

/* A progress bar's frame: its record is the text before the bar and the
 * metrics after its rate; the bar's counter is the batch. Returns the
 * record's text (in r->bartext), or NULL when the bar holds none. */
static char *bar_record(struct log_reader *r, const char *line, size_t *len, const struct log_bar *b)
{
	size_t need = b->at + b->postlen + 8;
	if (!b->at && !b->postlen)
		return NULL;
	if (need > r->barcap)
		r->bartext = rm_xrealloc(r->bartext, r->barcap = need * 2);
	memcpy(r->bartext, line, b->at);
	*len = b->at;
	if (b->postlen) {
		memcpy(r->bartext + *len, " | ", 3);
		memcpy(r->bartext + *len + 3, b->post, b->postlen);
		*len += 3 + b->postlen;
	}
	r->bartext[*len] = 0;
	return r->bartext;
}

static int has_key(const struct log_line *ll, const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; i < ll->row.n; i++)
		if (ll->row.f[i].klen == n && !memcmp(ll->row.f[i].key, key, n))
			return 1;
	return 0;
}

/* The loop of a bar's frame (log_roles.c); an evaluation's frame makes
 * its line an evaluation. */
static int64_t log_bar_loop(struct log_reader *r, const struct log_bar *b)
{
	int64_t passes = rm_log_bar_loop(&r->roles, b, r->guess);
	if (passes == -2)
		r->ll.eval = 1;
	return passes;
}

/* Is text the last frame's again (a bar redrawn, its counter moved on)? */
static int redrawn(struct log_reader *r, const char *text, size_t n)
{
	int same = r->last_len == n && r->last_frame && !memcmp(r->last_frame, text, n);
	if (n + 1 > r->last_cap)
		r->last_frame = rm_xrealloc(r->last_frame, r->last_cap = n + 1);
	memcpy(r->last_frame, text, n);
	r->last_len = n;
	return same;
}

/* Reads one record's text into ll->row (frame: one of several frames of a
 * physical line). Returns LINE_RECORD when it has pairs, LINE_NONE when it
 * is no record, LINE_SKIP for a redraw, LINE_BAD with why set. */
static enum line_kind log_parse(struct log_reader *r, char *line, size_t len, int frame, char *why, size_t whylen)
{
	struct log_line *ll = &r->ll;
	struct log_bar bar;
	rm_row_clear(&ll->row);
	ll->klen = 0;
	ll->eval = ll->summary = 0;
	ll->nnum = 0;
	ll->bar = 0;
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	if (!len) {
		snprintf(why, whylen, "blank");
		return LINE_NONE;
	}
	char *brace = memchr(line, '{', len);
	if (brace && line[len - 1] == '}') {
		/* "| 50/9375 [00:10<31:41]{'loss': 0.69, ...}": the frame the
		 * HF Trainer's dict was written after says its step */
		if (brace > line && rm_log_bar(line, (size_t)(brace - line), &bar))
			log_bar_loop(r, &bar);
		return log_object(ll, line, len, brace, why, whylen);
	}
	int has_bar = memchr(line, '|', len) || memchr(line, '[', len) || keras_epoch_line(line, len)
	                  ? rm_log_bar(line, len, &bar)
	                  : 0;
	int64_t passes = has_bar ? log_bar_loop(r, &bar) : -1;
	/* A bar's metrics restate what a logger records properly; they are the
	 * records only where no line but a bar's holds a loss. */
	const struct rm_guess *g = r->guess;
	if (has_bar && ((g && !g->bar_records) || !(line = bar_record(r, line, &len, &bar)))) {
		snprintf(why, whylen, "a progress bar's frame");
		return LINE_NONE;
	}
	r->ll.bar = has_bar;
	/* redrawn at its counter: the step's own, but for the redraw a bar's
	 * close() makes at its end (YOLO's "4/4" twice, after step 3's) */
	int set_here = has_bar && r->set_count == bar.count + 1 && !(bar.total && bar.count >= bar.total);
	if (frame && redrawn(r, line, len) && !set_here)
		return LINE_SKIP;
	int64_t tag;
	size_t i = skip_tags(ll, line, len, &tag);
	if (eval_opening(line + i, len - i) || rm_log_has_word(line + i, len - i, "valid on '") ||
	    rm_log_has_word(line + i, len - i, "validation"))
		ll->eval = 1;
	int64_t rank = rm_log_open_groups(line + i, len - i);
	size_t n = len - i;
	const char *text = rm_log_normalize(ll, line + i, &n);
	if (!r->table.n || !rm_log_table_row(&r->table, ll, text, n))
		rm_log_pairs(ll, text, n);
	if (!ll->row.n && !has_bar)
		rm_log_bare_pair(ll, text, n);
	if (!ll->row.n && !has_bar && rm_log_table_header(text, n, &r->table)) {
		snprintf(why, whylen, "a table's header");
		return LINE_NONE;
	}
	if (ll->row.n && rank >= 0)
		rm_log_add_number(ll, "rank", rank);
	if (ll->row.n && tag >= 0)
		rm_log_add_number(ll, RM_GUESS_TAG, tag);
	if (ll->row.n && has_bar && passes != -2)
		rm_log_add_number(ll, "batch", bar.count);
	if (ll->row.n && passes >= 0 && !r->has_pend_epoch && !has_key(ll, "epoch"))
		rm_log_add_number(ll, "epoch", passes);
	if (ll->row.n >= LOG_TPL_FIELDS && !has_bar && g && g->nsummary && rm_log_is_summary(g, line, len))
		ll->summary = 1;
	if (ll->row.n > MAX_RECORD_FIELDS) { /* TrainConfig(... epoch=None ...) */
		snprintf(why, whylen, "over %d name-value pairs (an argument dump, a repr)", MAX_RECORD_FIELDS);
		return LINE_NONE;
	}
	if (!ll->row.n)
		snprintf(why, whylen, has_bar ? "a progress bar's frame" : "no name and number (a banner, a message)");
	return ll->row.n ? LINE_RECORD : LINE_NONE;
}

#define HAS_T(set, t) (((set) >> (t)) & 1)

/* Looks up each field's target once (the mapper hashes the key); returns
 * the targets the row holds, as a bit set. */
static unsigned classify_fields(struct log_line *ll, struct rm_mapper *m)
{
	unsigned set = 0;
	if (ll->tcap < ll->row.n) {
		ll->tcap = ll->row.n * 2;
		ll->target = rm_xrealloc(ll->target, ll->tcap);
		ll->prio = rm_xrealloc(ll->prio, ll->tcap);
	}
	for (size_t i = 0; i < ll->row.n; i++) {
		int prio;
		enum rm_target t = rm_mapper_target(m, ll->row.f[i].key, ll->row.f[i].klen, &prio);
		ll->target[i] = (uint8_t)t;
		ll->prio[i] = (uint8_t)prio;
		set |= 1u << t;
	}
	return set;
}

/* A word where a step, loss or rate would be a number ("epoch=None",
 * "loss=None" in a settings repr) says the line does not log that value:
 * the field is dropped, not taken for a bad record. Returns the new set. */
static unsigned drop_words(struct log_line *ll, unsigned set)
{
	size_t o = 0;
	unsigned kept = 0;
	for (size_t i = 0; i < ll->row.n; i++) {
		enum rm_target t = (enum rm_target)ll->target[i];
		double v;
		if (t >= T_STEP && t <= T_TS && rm_field_num(&ll->row.f[i], &v) != 1)
			continue;
		ll->row.f[o] = ll->row.f[i];
		ll->target[o] = ll->target[i];
		ll->prio[o] = ll->prio[i];
		kept |= 1u << t;
		o++;
	}
	if (o == ll->row.n)
		return set;
	ll->row.n = o;
	return kept;
}

/* The word that marks an evaluation is no metric's name. */
static int eval_word(const char *key, size_t klen)
{
	static const char *const words[] = {"val", "valid", "validation", "eval", "evaluation", "test", NULL};
	return rm_log_word_in(key, klen, words);
}

/* "loss: 2.0 - val_loss: 2.1" (Keras's epoch line): a bare loss beside its
 * own name under an evaluation's prefix is training's value on that line.
 * nanoGPT's "train loss 3.21, val loss 3.30" is no twin ("train_loss" is
 * not "loss"): an estimate over evaluation batches. */
static int has_eval_twin(const struct log_line *ll, const struct rm_field *f)
{
	for (size_t i = 0; i < ll->row.n; i++) {
		const struct rm_field *e = &ll->row.f[i];
		size_t pl = rm_log_eval_prefix(e->key, e->klen);
		if (pl && e->klen == pl + f->klen && !memcmp(e->key + pl, f->key, f->klen))
			return 1;
	}
	return 0;
}

/* An evaluation line's metrics become eval_ metrics, except what names
 * the step or epoch, so that train loss on an eval line (nanoGPT's "step
 * 100: train loss 3.21, val loss 3.30", an estimate over eval batches) is
 * not taken for a step's loss. */
static unsigned mark_eval(struct log_line *ll, unsigned set)
{
	if (!ll->eval && !HAS_T(set, T_EVAL))
		return set;
	/* Only its keys say evaluation, no word or tag before them, and the
	 * loss has its twin: training's values beside validation's. */
	for (size_t i = 0; !ll->eval && i < ll->row.n; i++)
		if (ll->target[i] == T_LOSS ||
		    (ll->target[i] == T_NONE && memmem(ll->row.f[i].key, ll->row.f[i].klen, "loss", 4))) {
			ll->keyed = 1;
			if (ll->keyed_train || has_eval_twin(ll, &ll->row.f[i]))
				return set;
		}
	ll->eval = 1;
	for (size_t i = 0; i < ll->row.n; i++) {
		struct rm_field *f = &ll->row.f[i];
		enum rm_target t = (enum rm_target)ll->target[i];
		if (t == T_STEP || t == T_EPOCH || t == T_RANK || t == T_EVAL || f->klen + 6 > MAX_KEY)
			continue;
		if (eval_word(f->key, f->klen)) { /* "validation: 960", a dataset's size: no metric */
			ll->target[i] = T_NONE;
			continue;
		}
		char *out = ll->keys + ll->klen;
		if (ll->klen + f->klen + 6 > sizeof(ll->keys))
			continue;
		memcpy(out, "eval_", 5);
		memcpy(out + 5, f->key, f->klen);
		out[5 + f->klen] = 0;
		ll->klen += f->klen + 6;
		f->key = out;
		f->klen += 5;
		ll->target[i] = T_EVAL;
	}
	set = 0;
	for (size_t i = 0; i < ll->row.n; i++)
		set |= 1u << ll->target[i];
	return set;
}

static void log_line_init(struct log_line *ll)
{
	memset(ll, 0, sizeof(*ll));
	rm_row_init(&ll->row);
}

static void log_line_release(struct log_line *ll)
{
	rm_row_release(&ll->row);
	free(ll->py);
	free(ll->norm);
	free(ll->target);
	free(ll->prio);
}

/* The line's step field, renamed "step" unless the user named the step
 * key: the mapper keeps the first step key it sees, and one log mixes
 * several (fairseq's num_updates and valid_num_updates, nanoGPT's iter and
 * step). Where a line has more than one, the likeliest wins. */
static struct rm_field *step_field(struct log_line *ll, struct rm_mapper *m)
{
	struct rm_row *row = &ll->row;
	struct rm_field *best = NULL;
	int best_prio = 0;
	for (size_t i = 0; i < row->n; i++)
		if (ll->target[i] == T_STEP && (!best || ll->prio[i] < best_prio))
			best = &row->f[i], best_prio = ll->prio[i];
	if (best && !m->opts->step_key) {
		for (size_t i = 0; i < row->n; i++)
			if (&row->f[i] != best && row->f[i].klen == 4 && !memcmp(row->f[i].key, "step", 4))
				row->f[i].key = "step_", row->f[i].klen = 5; /* a lesser "step" gives way */
		best->key = "step";
		best->klen = 4;
	}
	return best;
}

/* Gives a row without a step the step of the header above it, or drops
 * the header once a row brings its own step. Returns the new set. */
static unsigned take_header(struct log_reader *r, struct rm_mapper *m, unsigned set)
{
	if (r->has_pend_epoch && !HAS_T(set, T_EPOCH) && (HAS_T(set, T_LOSS) || HAS_T(set, T_EVAL))) {
		rm_log_add_number(&r->ll, "epoch", (int64_t)r->pend_epoch);
		set = classify_fields(&r->ll, m);
	}
	if (HAS_T(set, T_STEP)) {
		r->has_pend = 0;
		return set;
	}
	if (!r->has_pend || (!HAS_T(set, T_LOSS) && !HAS_T(set, T_EVAL) && set < (1u << T_BUCKET)))
		return set;
	if (HAS_T(set, T_LOSS) && !HAS_T(set, T_EVAL) && r->pend_loss++) {
		r->has_pend = 0, r->never_pend = 1; /* two losses under one header: no header */
		return set;
	}
	rm_log_add_number(&r->ll, m->opts->step_key ? m->opts->step_key : "step", r->pend_step);
	return classify_fields(&r->ll, m);
}

/* Is every loss on the line exactly 0? */
static int loss_is_zero(const struct log_line *ll)
{
	int any = 0;
	for (size_t i = 0; i < ll->row.n; i++) {
		double v;
		if (ll->target[i] != T_LOSS)
			continue;
		if (rm_field_num(&ll->row.f[i], &v) != 1 || v != 0)
			return 0;
		any = 1;
	}
	return any;
}

/* Turns one line into a row for the mapper, or says it is no record. A
 * line without a step (the HF Trainer's dicts) takes the record count
 * times --log-every; an evaluation without one, the last step. */
static enum line_kind log_row(struct log_reader *r, struct rm_mapper *m, char *line, size_t len, int frame, char *why,
                              size_t whylen)
{
	enum line_kind kind;
	if (r->has_pattern) {
		r->ll.nnum = 0;
		kind = rm_log_pattern_parse(&r->pattern, &r->ll, line, len) ? LINE_RECORD : LINE_NONE;
		if (kind == LINE_NONE)
			snprintf(why, whylen, "does not match --pattern");
	} else {
		kind = log_parse(r, line, len, frame, why, whylen);
	}
	if (kind != LINE_RECORD)
		return kind;
	if (r->ll.summary) {
		snprintf(why, whylen, "an end-of-epoch summary ([train] ...)");
		return LINE_NONE;
	}
	unsigned set = drop_words(&r->ll, classify_fields(&r->ll, m));
	r->ll.keyed = 0;
	r->ll.keyed_train = r->guess && r->guess->keyed_train;
	set = mark_eval(&r->ll, set);
	set = take_header(r, m, set);
	int useful = HAS_T(set, T_LOSS) || HAS_T(set, T_EVAL);
	for (int t = T_BUCKET; t <= T_TOK_RATE; t++)
		useful |= HAS_T(set, t) && t != T_RANK && t != T_MICRO && HAS_T(set, T_STEP);
	if (!useful && !HAS_T(set, T_STEP) && HAS_T(set, T_EPOCH) && r->ll.row.n == 1 && !r->ll.eval) {
		double v;
		if (rm_field_num(&r->ll.row.f[0], &v) == 1 && v >= 0 && v < 1e9) {
			r->pend_epoch = v;
			r->has_pend_epoch = 1;
			snprintf(why, whylen, "an epoch's header: the epoch of the lines below");
			return LINE_NONE;
		}
	}
	if (!useful && HAS_T(set, T_STEP) && r->ll.row.n <= 3 && !r->never_pend && !r->ll.eval) {
		struct rm_field *f = step_field(&r->ll, m);
		double v;
		if (f && rm_field_num(f, &v) == 1 && v >= 0 && v < 9e15) {
			r->pend_step = (int64_t)v;
			r->has_pend = 1;
			r->pend_loss = 0;
			snprintf(why, whylen, "a record's header: its step, for the fields on the lines below");
			return LINE_NONE;
		}
	}
	if (!useful || HAS_T(set, T_SUMMARY)) {
		snprintf(why, whylen, "%s",
		         HAS_T(set, T_SUMMARY)
		             ? "a run summary (train_runtime ...)"
		             : "no loss, eval, or composition with a step (settings, sizes, timings)");
		return LINE_NONE;
	}
	if (HAS_T(set, T_STEP)) {
		struct rm_field *f = step_field(&r->ll, m);
		double v;
		if (f && rm_field_num(f, &v) == 1 && v == 0 && HAS_T(set, T_LOSS) && loss_is_zero(&r->ll)) {
			/* "Steps: 0 | Loss: 0.000000": a bar drawn before its first batch */
			snprintf(why, whylen, "a loss of 0 at step 0 (a progress bar's start, before any batch)");
			return LINE_NONE;
		}
		if (f && rm_field_num(f, &v) == 1 && v >= 0 && v < 9e15)
			r->last_step = (int64_t)v;
		return LINE_RECORD;
	}
	if (HAS_T(set, T_LOSS) && !HAS_T(set, T_EVAL) && m->opts->guess && m->opts->guess->has_step) {
		snprintf(why, whylen, "a loss without the step the file's records carry (a sample, a summary)");
		return LINE_NONE;
	}
	/* The HF Trainer's dicts carry no step; the tqdm frame drawn before
	 * each does ("10/60"). A bar that has not moved since the last record
	 * says nothing of this one. --log-every says otherwise. */
	if (HAS_T(set, T_LOSS) && m->opts->log_every <= 0 && r->roles.bar_now > r->bar_taken) {
		r->bar_gap = r->bar_taken ? r->roles.bar_now - r->bar_taken : 0;
		r->last_step = r->bar_taken = r->roles.bar_now;
		r->bar_steps++;
	} else if (HAS_T(set, T_LOSS) && m->opts->log_every <= 0 && r->bar_gap > 0) {
		/* no frame drawn since (tqdm skips redraws): one interval on */
		r->last_step = r->bar_taken = r->roles.bar_now = r->last_step + r->bar_gap;
		r->bar_steps++;
	} else if (HAS_T(set, T_LOSS) && m->opts->log_every <= 0 && m->opts->guess && m->opts->guess->logging_steps) {
		/* no bar; the file's own config said the interval */
		r->last_step = ++r->conf_records * m->opts->guess->logging_steps;
	} else if (HAS_T(set, T_LOSS)) {
		r->last_step = ++r->records * (m->opts->log_every > 0 ? m->opts->log_every : 1);
	}
	rm_log_add_number(&r->ll, "step", r->last_step);
	return LINE_RECORD;
}

static void hold(struct log_reader *r, const char *s, size_t n, int join)
{
	size_t need = r->hlen + n + 4;
	if (need > r->hcap) {
		r->hcap = need * 2;
		r->held = rm_xrealloc(r->held, r->hcap);
	}
	if (join) { /* a continuation: its pair becomes one more field */
		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		memcpy(r->held + r->hlen, " | ", 3);
		r->hlen += 3;
	}
	memcpy(r->held + r->hlen, s, n);
	r->hlen += n;
	r->held[r->hlen] = 0;
}

/* A header in brackets ("[step=12/2500,epoch=0]") holds the record's step:
 * its pairs are fields, not a tag to skip. */
static void open_header(struct log_reader *r)
{
	char *open = r->hlen && r->held[r->hlen - 1] == ']' ? strrchr(r->held, '[') : NULL;
	if (!open || !memchr(open, '=', (size_t)(r->held + r->hlen - open)))
		return;
	for (char *c = open; c < r->held + r->hlen; c++)
		if (*c == '[' || *c == ']' || *c == ',')
			*c = *c == ',' ? '|' : ' ';
}

/* The next record of the spare's segments; LINE_MORE when more follow. */
/* tqdm draws a step twice: update() moves the counter with the metrics
 * shown before, set_postfix() or set_description() redraws the same
 * counter with the step's own (kohya, YOLO). Is frame k followed by a
 * frame of the same counter? Then the later one is the step's, and is its
 * point even where its text repeats the last (a loss that did not move). */
static int superseded(struct log_reader *r, size_t k)
{
	struct log_bar a, b;
	if (k + 1 >= r->segs.n || !r->segs.seg[k].frame || !r->segs.seg[k + 1].frame)
		return 0;
	const char *s = r->spare + r->segs.seg[k].at, *t = r->spare + r->segs.seg[k + 1].at;
	size_t n = r->segs.seg[k].len, m = r->segs.seg[k + 1].len;
	if (!memchr(s, '|', n) || !memchr(t, '|', m) || !rm_log_bar(s, n, &a) || !rm_log_bar(t, m, &b))
		return 0;
	if (a.count != b.count || a.total != b.total)
		return 0;
	r->set_count = b.count + 1;
	return 1;
}

static enum line_kind next_segment(struct log_reader *r, struct rm_mapper *m, uint64_t *lineno, char *why,
                                   size_t whylen)
{
	*lineno = r->segs_at;
	while (r->next_seg < r->segs.n) {
		size_t k = r->next_seg++;
		char *text = r->spare + r->segs.seg[k].at;
		size_t n = r->segs.seg[k].len;
		if (superseded(r, k))
			continue;
		enum line_kind kind = log_row(r, m, text, n, r->segs.seg[k].frame, why, whylen);
		/* a frame that holds nothing goes unsaid, its line says it once */
		if (kind == LINE_SKIP || (kind == LINE_NONE && r->next_seg < r->segs.n && r->segs.seg[k].frame))
			continue;
		return r->next_seg < r->segs.n ? (enum line_kind)(kind | LINE_MORE) : kind;
	}
	return LINE_SKIP;
}

static enum line_kind log_parse_line(void *ctx, struct rm_mapper *m, char *line, size_t len, uint64_t *lineno,
                                     const struct rm_row **row, char *why, size_t whylen)
{
	struct log_reader *r = ctx;
	*row = &r->ll.row;
	if (r->next_seg < r->segs.n) /* called again for the held line's next record */
		return next_segment(r, m, lineno, why, whylen);
	if (line) {
		len = rm_log_strip_escapes(line, len);
		if (strspn(line, " \t\r") == len)
			return LINE_SKIP;
	}
	if (r->has_pattern)
		return line ? log_row(r, m, line, len, 0, why, whylen) : LINE_SKIP;
	if (line && r->has_held && rm_log_continuation(line, len)) {
		if (r->has_held == 1)
			open_header(r);
		r->has_held = 2;
		hold(r, line, len, 1);
		return LINE_SKIP;
	}
	/* The held line is complete: read its records (the row points into its
	 * buffer, kept as the spare until the next line); the new line is held. */
	uint64_t now = *lineno;
	int had = r->has_held;
	if (had) {
		char *text = r->held;
		size_t tlen = r->hlen, cap = r->hcap;
		r->held = r->spare;
		r->hcap = r->spare_cap;
		r->spare = text;
		r->spare_cap = cap;
		r->hlen = 0;
		r->has_held = 0;
		r->segs_at = r->held_at;
		rm_log_segments(text, tlen, &r->segs);
		r->next_seg = 0;
	}
	if (line) {
		hold(r, line, len, 0);
		r->has_held = 1;
		r->held_at = now;
	}
	return had ? next_segment(r, m, lineno, why, whylen) : LINE_SKIP;
}

static void log_reader_init(struct log_reader *r)
{
	memset(r, 0, sizeof(*r));
	log_line_init(&r->ll);
}

static void log_reader_release(struct log_reader *r)
{
	log_line_release(&r->ll);
	free(r->held);
	free(r->spare);
	free(r->segs.seg);
	free(r->bartext);
	free(r->last_frame);
}

/* Shows the rows of lines in buf (n bytes, edited) to in; returns the
 * bytes of whole lines read, stopping after max_rows rows. */
/* The head's scan: does the record hold a loss-named key beside one an
 * evaluation's prefix names (a keyed line), or a loss-named key alone? */
static size_t scan_text(struct log_reader *r, char *buf, size_t n, struct rm_infer *in, uint64_t max_rows,
                        uint64_t *rows)
{
	char *p = buf, *end = buf + n, why[128];
	while (p < end && *rows < max_rows) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* a line cut by the buffer's end */
		size_t len = rm_log_strip_escapes(p, (size_t)(nl - p));
		rm_log_segments(p, len, &r->segs);
		for (size_t k = 0; k < r->segs.n; k++) {
			char *t = p + r->segs.seg[k].at;
			rm_log_roles_banner(&r->roles, t, r->segs.seg[k].len);
			if (log_parse(r, t, r->segs.seg[k].len, r->segs.seg[k].frame, why, sizeof(why)) ==
			        LINE_RECORD &&
			    !r->ll.summary) {
				rm_log_roles_count(&r->roles, &r->ll, t, r->segs.seg[k].len);
				rm_infer_row(in, &r->ll.row,
				             (r->ll.eval ? RM_INFER_EVAL : 0) | (r->ll.bar ? RM_INFER_BAR : 0));
				++*rows;
			}
		}
		p = nl + 1;
	}
	r->segs.n = 0;
	return (size_t)(p - buf);
}

#define SCAN_BYTES (16u << 20) /* the head a log's keys are inferred from */
#define SCAN_ROWS  4000        /* records enough to infer from */

/* What the head of the file says of its keys (infer.c), into g. */
static int log_infer(const struct rm_import_opts *opts, const char *path, struct rm_guess *g, struct rm_err *err)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return rm_err_set(err, RM_E_INPUT, "cannot read '%s': %s", rm_shown_path(opts, path), strerror(errno));
	struct rm_infer *in = rm_infer_new(RM_FMT_LOG, opts);
	struct log_reader r;
	log_reader_init(&r);
	size_t cap = 1u << 20, have = 0, total = 0;
	char *buf = rm_xmalloc(cap + 1);
	uint64_t rows = 0;
	int whole = 0; /* every line of the file was scanned */
	for (;;) {
		size_t got = fread(buf + have, 1, cap - have, fp);
		have += got;
		total += got;
		int eof = got == 0;
		if (eof && have && buf[have - 1] != '\n')
			buf[have++] = '\n'; /* the last line, unended */
		size_t used = scan_text(&r, buf, have, in, SCAN_ROWS, &rows);
		whole = eof && used == have && rows < SCAN_ROWS;
		if (eof || rows >= SCAN_ROWS || total >= SCAN_BYTES)
			break;
		if (!used && have == cap) /* a line longer than the buffer */
			buf = rm_xrealloc(buf, (cap *= 2) + 1);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	fclose(fp);
	free(buf);
	rm_infer_decide(in, g);
	rm_log_roles_decide(&r.roles, whole, g);
	log_reader_release(&r);
	rm_infer_free(in);
	return RM_OK;
}

static int log_read(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                    struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct log_reader r;
	struct rm_guess g = {0};
	struct rm_import_opts o = *opts;
	struct pattern pt;
	char why[128];
	if (opts->pattern && rm_log_pattern_compile(opts->pattern, &pt, why, sizeof(why)))
		return rm_err_set(err, RM_E_USAGE, "--pattern: %s", why);
	int rc = opts->pattern ? RM_OK : log_infer(opts, path, &g, err);
	if (rc)
		return rc;
	log_reader_init(&r);
	if (opts->pattern)
		r.pattern = pt;
	r.has_pattern = opts->pattern != NULL;
	o.guess = &g;
	r.guess = &g;
	if (opts->explain && g.why[0])
		fprintf(opts->explain, "  inferred from the file: %s\n", rm_tx(g.why));
	size_t first = rep->n; /* the file's runs: one, or those appended to it */
	rc = rm_read_lines(st, &o, path, fmt, pos, rep, log_parse_line, &r, err);
	for (size_t i = first; !rc && i < rep->n; i++)
		rep->r[i].synthetic_steps |= r.records        ? (opts->log_every > 0 ? 4 : 1)
		                             : r.bar_steps    ? 2
		                             : r.conf_records ? (g.interval_from_total ? 5 : 3)
		                                              : 0;
	log_reader_release(&r);
	rm_guess_release(&g);
	return rc;
}

int rm_read_log(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                struct rm_import_report *rep, struct rm_err *err)
{
	return log_read(st, opts, path, fmt, NULL, rep, err);
}

int rm_tail_log(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	return log_read(st, opts, path, fmt, pos, rep, err);
}

/* A console log: the file's head holds a record (a loss, an eval, or a
 * step with batch composition), by the names runmon knows or by what the
 * head's rows imply of theirs. */
int rm_sniff_log(const struct sniff *s)
{
	struct log_reader r;
	struct rm_mapper m;
	struct rm_guess g = {0};
	struct rm_import_opts o = *s->opts;
	int found = 0;
	if (!s->nhead)
		return 0;
	if (!o.pattern) {
		struct rm_infer *in = rm_infer_new(RM_FMT_LOG, s->opts);
		char *copy = rm_xstrndup((const char *)s->head, s->nhead);
		uint64_t rows = 0;
		log_reader_init(&r);
		scan_text(&r, copy, s->nhead, in, SCAN_ROWS, &rows);
		log_reader_release(&r);
		free(copy);
		rm_infer_decide(in, &g);
		rm_infer_free(in);
		o.guess = &g;
	}
	log_reader_init(&r);
	r.guess = o.guess;
	rm_mapper_init(&m, RM_FMT_LOG, &o);
	char *copy = rm_xstrndup((const char *)s->head, s->nhead);
	char *p = copy, *end = copy + s->nhead, why[128];
	for (int lines = 0; p < end && lines < 5000 && !found; lines++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* a line cut by the head's end */
		size_t len = rm_log_strip_escapes(p, (size_t)(nl - p));
		rm_log_segments(p, len, &r.segs);
		for (size_t k = 0; k < r.segs.n && !found; k++)
			found = log_row(&r, &m, p + r.segs.seg[k].at, r.segs.seg[k].len, r.segs.seg[k].frame, why,
			                sizeof(why)) == LINE_RECORD;
		p = nl + 1;
	}
	free(copy);
	rm_mapper_release(&m);
	log_reader_release(&r);
	rm_guess_release(&g);
	return found;
}
