/*
 * log_roles.c - what a console log's lines are, from the file as a whole
 * rather than line by line: which loop a progress bar's frame belongs to
 * (by its total: "k/475" trains, "k/8" validates) and the epochs a bar
 * that runs to its end and begins again counts; whether lines holding a
 * loss beside a val_ key are the training record or evaluations; and
 * which templates of lines restate the loss as a summary. The head's scan
 * counts (rm_log_roles_count, rm_log_bar_loop), rm_log_roles_decide puts
 * the verdict in the guess, and the reading asks it.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "import/import_internal.h"
#include "log_internal.h"

/* A line's template: the words of its text in order (letters and '_',
 * two or more, lower-cased), each hashed (FNV-1a, 32 bits), the first
 * LOG_TPL_WORDS of them. Numbers, padding, punctuation and the spellings
 * of a missing number ("nan") are left out, so that "[ 0/73]" and
 * "[10/73]" are one template. Returns the count of words kept. */
static int line_template(const char *s, size_t n, uint32_t *w)
{
	static const char *const not_words[] = {"nan", "inf", "infinity", "none", "null", "true", "false", NULL};
	int nw = 0;
	for (size_t i = 0; i < n && nw < LOG_TPL_WORDS;) {
		size_t j = i;
		while (j < n && (isalpha((unsigned char)s[j]) || s[j] == '_'))
			j++;
		int word = j - i >= 2 && !rm_log_word_in(s + i, j - i, not_words);
		if (word) {
			uint32_t h = 2166136261u;
			for (size_t k = i; k < j; k++)
				h = (h ^ (unsigned char)tolower((unsigned char)s[k])) * 16777619u;
			w[nw++] = h;
		}
		i = j > i ? j : i + 1;
	}
	return nw;
}

static uint64_t template_hash(const uint32_t *w, int nw)
{
	uint64_t h = 14695981039346656037u;
	for (int i = 0; i < nw; i++)
		h = (h ^ w[i]) * 1099511628211u;
	return h;
}

/* Is a's word list b's with words left out? */
static int subsequence(const uint32_t *a, int na, const uint32_t *b, int nb)
{
	int i = 0;
	for (int j = 0; j < nb && i < na; j++)
		i += a[i] == b[j];
	return i == na;
}

/* Counts a training line's template; past LOG_TEMPLATES kinds, no more. */
static void count_template(struct log_roles *r, const char *line, size_t len)
{
	uint32_t w[LOG_TPL_WORDS];
	int nw = line_template(line, len, w), i = 0;
	uint64_t h = template_hash(w, nw);
	while (i < r->ntpl && r->tpl[i].hash != h)
		i++;
	if (i == r->ntpl) {
		if (r->ntpl == LOG_TEMPLATES)
			return;
		r->tpl[r->ntpl].hash = h;
		r->tpl[r->ntpl].nw = nw;
		memcpy(r->tpl[r->ntpl++].w, w, sizeof(w[0]) * (size_t)nw);
	}
	r->tpl[i].lines++;
}

/* The templates of training lines far rarer than the most frequent one
 * (a quarter of its lines or fewer): summaries of an epoch or a run that
 * restate the loss in another shape (fairseq's "| train | epoch 001 |
 * loss 8.119 |" beside its "train_inner" lines, ESPnet's "epoch results"),
 * into g. */
static void find_summaries(const struct log_roles *r, struct rm_guess *g)
{
	int top = 0;
	for (int i = 1; i < r->ntpl; i++)
		if (r->tpl[i].lines > r->tpl[top].lines)
			top = i;
	const uint32_t *tw = r->tpl[top].w;
	int tn = r->tpl[top].nw;
	for (int i = 0; i < r->ntpl && g->nsummary < RM_GUESS_SUMMARIES; i++) {
		const uint32_t *w = r->tpl[i].w;
		int n = r->tpl[i].nw;
		/* the training line with a word more or less ("eta: 1 day,
		 * 17:14:43", a warning glued to its end) is the same record */
		if (i != top && r->tpl[i].lines * 4 <= r->tpl[top].lines && !subsequence(w, n, tw, tn) &&
		    !subsequence(tw, tn, w, n))
			g->summary[g->nsummary++] = r->tpl[i].hash;
	}
}

/* The text of a record's val_ values, hashed (FNV-1a). */
static uint64_t eval_values(const struct log_line *ll)
{
	uint64_t h = 14695981039346656037u;
	for (size_t i = 0; i < ll->row.n; i++) {
		const struct rm_field *f = &ll->row.f[i];
		if (f->klen < 4 || strncasecmp(f->key, "val", 3) || !f->raw)
			continue;
		for (uint32_t k = 0; k < f->rlen; k++)
			h = (h ^ (unsigned char)f->raw[k]) * 1099511628211u;
	}
	return h;
}

/* A training record of the head without a step, and its epoch: the
 * head's scan reads names only (the mapper decides later), so this is the
 * shape of the HF Trainer's dicts, a "loss" with no step name beside it. */
static void count_stepless(struct log_roles *r, const struct log_line *ll)
{
	static const char *const steps[] = {"step", "steps", "global_step", "_step", "iter", "iteration", NULL};
	double epoch = NAN, v;
	int loss = 0;
	if (ll->eval || ll->bar)
		return;
	for (size_t i = 0; i < ll->row.n; i++) {
		const struct rm_field *f = &ll->row.f[i];
		if (rm_log_word_in(f->key, f->klen, steps))
			return;
		loss |= f->klen == 4 && !memcmp(f->key, "loss", 4);
		if (f->klen == 5 && !memcmp(f->key, "epoch", 5) && rm_field_num(f, &v) == 1 && v > 0 && v < 1e9)
			epoch = v;
	}
	if (!loss)
		return;
	r->stepless++;
	if (isfinite(epoch)) {
		r->rec_epoch = epoch;
		r->rec_epoch_at = r->stepless;
	}
}

void rm_log_roles_count(struct log_roles *r, const struct log_line *ll, const char *line, size_t len)
{
	count_stepless(r, ll);
	int loss = 0, eval = 0;
	for (size_t i = 0; i < ll->row.n; i++) {
		const struct rm_field *f = &ll->row.f[i];
		int pre = rm_log_eval_prefix(f->key, f->klen) != 0;
		eval |= pre;
		loss |= !pre && memmem(f->key, f->klen, "loss", 4) != NULL;
	}
	if (ll->eval || !loss)
		return;
	if (eval) {
		uint64_t h = eval_values(ll);
		r->keyed_lines++;
		r->carried += r->keyed_lines > 1 && h == r->last_eval;
		r->last_eval = h;
	} else {
		r->train_lines++;
		if (!ll->bar && ll->row.n >= LOG_TPL_FIELDS)
			count_template(r, line, len);
	}
}

int rm_log_is_summary(const struct rm_guess *g, const char *line, size_t len)
{
	uint32_t w[LOG_TPL_WORDS];
	uint64_t h = template_hash(w, line_template(line, len, w));
	for (int i = 0; i < g->nsummary; i++)
		if (g->summary[i] == h)
			return 1;
	return 0;
}

/* Follows the loop a bar's frame belongs to (by its total). A bar that
 * ran to its end (90% of its total: the last frames may be cut) and
 * begins again is the loop's next pass: an epoch no line names. Another
 * loop than the training one (g->bar_total) is an evaluation's. Returns
 * the passes of the frame's loop before it, or -1 for a bar without a
 * total, -2 for an evaluation's (which counts no step: it takes the last
 * training step). */
int64_t rm_log_bar_loop(struct log_roles *r, const struct log_bar *b, const struct rm_guess *g)
{
	if (b->total <= 0)
		return -1;
	int i = 0;
	while (i < r->nloops && r->loop[i].total != b->total)
		i++;
	if (i == r->nloops) {
		if (r->nloops == LOG_LOOPS)
			return -1;
		r->loop[r->nloops++].total = b->total;
	}
	if (b->count < r->loop[i].prev && r->loop[i].prev * 10 >= b->total * 9)
		r->loop[i].passes++;
	r->loop[i].prev = b->count;
	r->loop[i].frames++;
	int top = 1; /* the loop with the most frames so far: training's */
	for (int j = 0; j < r->nloops; j++)
		top &= j == i || r->loop[j].frames <= r->loop[i].frames;
	if (top)
		r->bar_now = b->count + r->loop[i].passes * b->total;
	if (g && g->bar_total && b->total != g->bar_total)
		return -2;
	return r->loop[i].passes;
}

/* The training loop's total where bars of several totals carry metrics:
 * the one with the most frames. 0 for one loop or none. */
static int64_t training_total(const struct log_roles *r)
{
	int best = 0;
	for (int i = 1; i < r->nloops; i++)
		if (r->loop[i].frames > r->loop[best].frames)
			best = i;
	return r->nloops > 1 ? r->loop[best].total : 0;
}

void rm_log_roles_decide(const struct log_roles *r, int whole, struct rm_guess *g)
{
	g->bar_total = training_total(r);
	/* Loss lines beside a val_ key whose value most of them repeat from
	 * the line before are training lines that carry the last validation
	 * along (NeMo's "reduced_train_loss: 8.36 | ... | val_loss: 8.604" on
	 * every line after the first validation); where each brings a value
	 * of its own (nanoGPT's "step 250: train loss 1.97, val loss 2.01"),
	 * the line is an evaluation, its train loss an estimate over
	 * evaluation batches, unless no other line holds a training loss:
	 * then these lines are the training record (fastai's epoch table
	 * "epoch train_loss valid_loss accuracy time"). */
	g->keyed_train = r->keyed_lines >= 2 && (r->carried * 2 >= r->keyed_lines || r->train_lines == 0);
	g->logging_steps = r->logging_steps;
	/* a head read whole may say the interval by its banner's total (the
	 * reader's bar and --log-every still come first) */
	if (!g->logging_steps && whole && (g->logging_steps = rm_log_roles_interval(r)) > 0)
		g->interval_from_total = 1;
	find_summaries(r, g);
}

/* The number after a name and its separators ("logging_steps=50",
 * "logging_steps: 50", "'logging_steps': 50", "Total optimization steps =
 * 1,200"), thousands separators read; 0 when none. */
static int64_t number_after(const char *s, size_t n, const char *name)
{
	size_t nl = strlen(name);
	const char *p = n >= nl ? memmem(s, n, name, nl) : NULL;
	if (!p)
		return 0;
	size_t i = (size_t)(p - s) + nl;
	while (i < n && strchr(" \t=:'\"", s[i]))
		i++;
	int64_t v = 0;
	int digits = 0;
	for (; i < n && (isdigit((unsigned char)s[i]) || (s[i] == ',' && digits)); i++)
		if (s[i] != ',' && v < ((int64_t)1 << 50)) {
			v = v * 10 + (s[i] - '0');
			digits = 1;
		}
	return digits ? v : 0;
}

void rm_log_roles_banner(struct log_roles *r, const char *s, size_t n)
{
	int64_t v;
	if (!r->logging_steps && (v = number_after(s, n, "logging_steps")) > 0)
		r->logging_steps = v;
	if (!r->total_steps && (v = number_after(s, n, "Total optimization steps")) > 0)
		r->total_steps = v;
	if (!r->num_epochs && (v = number_after(s, n, "Num Epochs")) > 0)
		r->num_epochs = v;
}

/* Lines without a step, no bar and no config interval, read whole: the
 * HF Trainer logs at every multiple of logging_steps k up to its banner's
 * "Total optimization steps" T, so R records say floor(T / k) = R, true of
 * the k in (T / (R + 1), T / R]. One k there is the interval; several are
 * told apart by the last record's fractional epoch against the banner's
 * "Num Epochs" E (k ~ epoch x T / (E x R), the epoch rounded to 2
 * places), which must agree with the k taken when it is logged. 0: the
 * file does not say. */
int64_t rm_log_roles_interval(const struct log_roles *r)
{
	int64_t T = r->total_steps, R = r->stepless;
	if (T <= 0 || R <= 0 || R > T)
		return 0;
	int64_t lo = T / (R + 1) + 1, hi = T / R;
	if (lo > hi)
		return 0;
	int64_t k = lo == hi ? lo : 0;
	if (r->rec_epoch_at > 0 && r->num_epochs > 0) {
		double per_epoch = (double)T / (double)r->num_epochs;
		double est = r->rec_epoch * per_epoch / (double)r->rec_epoch_at;
		double slack = 0.5 + 0.005 * per_epoch / (double)r->rec_epoch_at;
		if (!k) {
			k = (int64_t)llround(est);
			k = k < lo ? lo : k > hi ? hi : k;
		}
		if (fabs((double)k - est) > slack)
			return 0; /* the epochs say another interval, or the banner another run */
	}
	return k;
}
