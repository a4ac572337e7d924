/*
 * infer.c - what a file's rows say of their keys where no known name does.
 *
 * A reader shows the head of its file to an rm_infer before it reads the
 * whole: every row with its keys and numbers. Where the mapper's lists
 * name no loss, the key named most like one wins ("loss" over "total_loss"
 * over "total" over "nll" over "cost" over a component such as "d_loss"),
 * among those that recur and vary; where no known step is in the loss
 * rows, an integer that rises with them is the step (one named like a
 * counter first: "it", "iter", "timesteps"); a leading "[N]" tag that
 * cycles rather than rises is the rank. The other loss-named series that
 * vary are told (kept each, the first diagnosed). The decision goes to the
 * mapper as opts->guess, and its reasons to import --explain.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runmon/sink.h"

#define MAX_KEYS 512 /* keys followed; a file with more is a dump, not a log */

struct key_stat {
	char *name;
	size_t len;
	int order;          /* first seen */
	int target;         /* the mapper's, without any guess */
	int loss_score;     /* how much the name says loss (0: not at all) */
	int step_score;     /* how much the name says counter (0: a time, a size) */
	uint64_t rows;      /* training rows holding it as a number */
	uint64_t loss_rows; /* of those, rows that also hold a loss-named key */
	uint64_t bar_rows;  /* of those, rows read from a progress bar's frame */
	uint64_t ints;      /* integral values in [0, 2^53) */
	uint64_t rises, falls, same;
	double last, min, max, first;
	int has_last;
	uint64_t resets; /* falls to the first value or below: another run starting in the file */
	/* The key that rose in the row where this one first fell, and how
	 * many of this one's falls it rose at: an epoch this counts within. */
	int partner;
	uint64_t partner_rises;
};

struct rm_infer {
	struct rm_mapper map;
	struct key_stat key[MAX_KEYS];
	int nkeys;
	uint64_t rows;       /* training rows with a number */
	uint64_t known_loss; /* rows with a key the mapper takes for the loss */
};

/* ---- names ---------------------------------------------------------------- */

/* Splits the key's last part ("train/box_loss" -> box_loss, "value.loss"
 * -> loss) into lower-case words at '_', '-' and ' '; returns the count. */
#define MAX_WORDS 8
static int key_words(const char *k, size_t n, char w[MAX_WORDS][24], const char **last, size_t *lastlen)
{
	size_t st = n;
	while (st > 0 && k[st - 1] != '/' && k[st - 1] != '.' && k[st - 1] != ':')
		st--;
	*last = k + st;
	*lastlen = n - st;
	int nw = 0;
	for (size_t i = st; i < n && nw < MAX_WORDS;) {
		while (i < n && (k[i] == '_' || k[i] == '-' || k[i] == ' '))
			i++;
		size_t j = 0;
		while (i < n && k[i] != '_' && k[i] != '-' && k[i] != ' ') {
			if (j < 23)
				w[nw][j++] = (char)(k[i] >= 'A' && k[i] <= 'Z' ? k[i] | 0x20 : k[i]);
			i++;
		}
		if (j)
			w[nw++][j] = 0;
	}
	return nw;
}

static int word_in(const char *w, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(w, list[i]))
			return 1;
	return 0;
}

/* An evaluation's key in any part ("val/box_loss", "validation/main/loss",
 * "test_loss") is no training loss. */
static int evalish(const char *k, size_t n)
{
	static const char *const words[] = {"val",  "valid",   "validation", "eval", "evaluation",
	                                    "test", "testing", "dev",        "tel",  NULL};
	for (size_t i = 0; i < n;) {
		size_t j = i;
		char w[24];
		size_t wl = 0;
		while (j < n && k[j] != '/' && k[j] != '.' && k[j] != '_' && k[j] != '-' && k[j] != ' ') {
			if (wl < sizeof(w) - 1)
				w[wl++] = (char)(k[j] >= 'A' && k[j] <= 'Z' ? k[j] | 0x20 : k[j]);
			j++;
		}
		w[wl] = 0;
		if (wl && word_in(w, words))
			return 1;
		i = j + 1;
	}
	return 0;
}

static int is_perplexity(char w[MAX_WORDS][24], int nw)
{
	return nw && (!strcmp(w[nw - 1], "ppl") || !strcmp(w[nw - 1], "perplexity"));
}

/* Is the key's name a perplexity's ("ppl", "train-perplexity")? */
static int perplexity_name(const char *k, size_t n)
{
	char w[MAX_WORDS][24];
	const char *last;
	size_t lastlen;
	int nw = key_words(k, n, w, &last, &lastlen);
	return is_perplexity(w, nw);
}

/* How much a key's name says "the training loss": 100 for loss itself, 95
 * for a whole loss under a prefix or with a word saying so (main/loss,
 * total_loss, train_loss), 85 a bare total, 75 the names of cross-entropy,
 * 72 a cost (a time in some trainers: GluonCV's "Training cost"), 60 a component (d_loss, loss_cls), 30 a perplexity; 0
 * for what only mentions a loss (loss_scale, a weight) and for evaluations. */
static int loss_score(const char *k, size_t n)
{
	static const char *const whole[] = {"total", "tot",  "train",    "training",  "overall", "sum",
	                                    "all",   "full", "combined", "objective", NULL};
	/* What only mentions a loss, and what is a time, a rate, a count or a
	 * learning rate whatever else its name says ("time-cost" is seconds). */
	static const char *const not_loss[] = {
	    "scale", "scaler",   "weight", "weights", "coef",   "coeff",   "lambda", "ratio",      "type",
	    "fn",    "func",     "factor", "clip",    "best",   "min",     "max",    "std",        "var",
	    "time",  "sec",      "secs",   "seconds", "ms",     "rate",    "speed",  "lr",         "elapsed",
	    "eta",   "duration", "count",  "num",     "tokens", "samples", "per",    "throughput", NULL};
	static const char *const xent[] = {"nll", "xent", "ce", "crossentropy", "cross_entropy", "cross-entropy", NULL};
	char w[MAX_WORDS][24];
	const char *last;
	size_t lastlen;
	if (n == strlen(RM_GUESS_UNNAMED) && !memcmp(k, RM_GUESS_UNNAMED, n))
		return 10; /* a counter's one number, where nothing is named a loss */
	if (evalish(k, n))
		return 0;
	int nw = key_words(k, n, w, &last, &lastlen), loss = 0, says_whole = 0;
	for (int i = 0; i < nw; i++) {
		if (word_in(w[i], not_loss))
			return 0;
		loss |= !strcmp(w[i], "loss") || !strcmp(w[i], "losses");
		says_whole |= word_in(w[i], whole);
	}
	if (nw == 1 && !strcmp(w[0], "loss"))
		return lastlen == n ? 100 : 95;
	if (loss)
		return says_whole ? 95 : 60;
	if (nw == 1 && (!strcmp(w[0], "total") || !strcmp(w[0], "objective")))
		return 85;
	for (int i = 0; i < nw; i++)
		if (!strcmp(w[i], "cost"))
			return 72; /* under a cross-entropy's name: GluonCV's "Training cost" is seconds */
	char joined[64];
	size_t jl = lastlen < sizeof(joined) - 1 ? lastlen : sizeof(joined) - 1;
	for (size_t i = 0; i < jl; i++)
		joined[i] = (char)(last[i] >= 'A' && last[i] <= 'Z' ? last[i] | 0x20 : last[i]);
	joined[jl] = 0;
	if (word_in(joined, xent))
		return 75;
	/* "trl": llm.c's train loss beside "tel", its eval loss (evalish) */
	if (nw == 1 && !strcmp(w[0], "trl"))
		return 95;
	/* a perplexity, bare or of training ("Train-perplexity"): exp of a
	 * loss, stored as its logarithm (rm_guess.loss_log) */
	if (is_perplexity(w, nw) && (nw == 1 || (nw == 2 && word_in(w[0], whole))))
		return 30;
	/* "Loss/tok": a loss per unit (GNMT's per-token loss) */
	if (n > 5 && !strncasecmp(k, "loss/", 5) && !memchr(k + 5, '/', n - 5))
		return 90;
	return 0;
}

/* How much a key's name says "a counter of steps": 2 for the words
 * trainers count steps with, 1 for any other, 0 for times, sizes and
 * rates (an integral "elapsed 120" rises too). */
static int step_score(const char *k, size_t n)
{
	static const char *const counter[] = {
	    "step",   "steps",   "iter",    "iters",    "iteration", "iterations",  "it",  "batch", "batches",
	    "update", "updates", "counter", "timestep", "timesteps", "num_updates", "idx", "index", NULL};
	static const char *const not_counter[] = {
	    "time",   "sec",    "secs",    "seconds", "s",      "ms",   "elapsed", "eta",  "duration",
	    "wall",   "date",   "mem",     "memory",  "lr",     "rate", "speed",   "size", "len",
	    "length", "tokens", "samples", "gpu_mem", "labels", "img",  "max",     "min",  NULL};
	char w[MAX_WORDS][24];
	const char *last;
	size_t lastlen;
	int nw = key_words(k, n, w, &last, &lastlen), letters = 0;
	for (size_t i = 0; i < n; i++)
		letters |= (k[i] | 0x20) >= 'a' && (k[i] | 0x20) <= 'z';
	if (!letters || (memchr(k, '/', n) && lastlen == n))
		return 0; /* "(": punctuation read as a name is no counter */
	if (n == 1 && (k[0] | 0x20) == 's')
		return 1; /* "s:12" (llm.c): a unit follows its number, a key precedes it */
	for (int i = 0; i < nw; i++)
		if (word_in(w[i], not_counter) || strchr(w[i], '/'))
			return 0;
	return nw && word_in(w[nw - 1], counter) ? 2 : 1;
}

/* ---- the scan ------------------------------------------------------------- */

struct rm_infer *rm_infer_new(enum rm_format fmt, const struct rm_import_opts *opts)
{
	struct rm_infer *in = rm_xcalloc(1, sizeof(*in));
	rm_mapper_init(&in->map, fmt, opts);
	return in;
}

void rm_infer_free(struct rm_infer *in)
{
	if (!in)
		return;
	for (int i = 0; i < in->nkeys; i++)
		free(in->key[i].name);
	rm_mapper_release(&in->map);
	free(in);
}

static struct key_stat *stat_for(struct rm_infer *in, const char *key, size_t klen)
{
	for (int i = 0; i < in->nkeys; i++)
		if (in->key[i].len == klen && !memcmp(in->key[i].name, key, klen))
			return &in->key[i];
	if (in->nkeys == MAX_KEYS)
		return NULL;
	struct key_stat *s = &in->key[in->nkeys];
	memset(s, 0, sizeof(*s));
	s->name = rm_xstrndup(key, klen);
	s->len = klen;
	s->order = in->nkeys++;
	int prio;
	s->target = (int)rm_mapper_target(&in->map, key, klen, &prio);
	s->loss_score = loss_score(key, klen);
	s->step_score = step_score(key, klen);
	s->min = INFINITY;
	s->max = -INFINITY;
	return s;
}

void rm_infer_row(struct rm_infer *in, const struct rm_row *row, int flags)
{
	struct key_stat *seen[64];
	signed char moved[64]; /* -1 fell, 1 rose, 0 neither */
	size_t ns = 0;
	int lossy = 0, known = 0;
	if (flags & RM_INFER_EVAL)
		return;
	for (size_t i = 0; i < row->n && ns < 64; i++) {
		const struct rm_field *f = &row->f[i];
		double v;
		if (rm_field_num(f, &v) != 1)
			continue;
		struct key_stat *s = stat_for(in, f->key, f->klen);
		if (!s || s->target == T_EVAL)
			continue;
		seen[ns++] = s;
		lossy |= s->loss_score > 0;
		known |= s->target == T_LOSS;
		s->rows++;
		s->bar_rows += (flags & RM_INFER_BAR) != 0;
		if (isfinite(v)) {
			s->min = fmin(s->min, v);
			s->max = fmax(s->max, v);
		}
		s->ints += v >= 0 && v < 9007199254740992.0 && v == floor(v);
		moved[ns - 1] = s->has_last ? (v > s->last) - (v < s->last) : 0;
		if (s->has_last)
			v > s->last ? s->rises++ : v < s->last ? s->falls++ : s->same++;
		else
			s->first = v;
		s->resets += s->has_last && v < s->last && v <= s->first;
		s->last = v;
		s->has_last = 1;
	}
	if (!ns)
		return;
	for (size_t i = 0; i < ns; i++) {
		if (moved[i] >= 0)
			continue;
		for (size_t j = 0; j < ns; j++) {
			int idx = (int)(seen[j] - in->key);
			if (moved[j] <= 0 || (seen[i]->falls > 1 && idx != seen[i]->partner))
				continue;
			if (seen[i]->falls == 1)
				seen[i]->partner = idx;
			seen[i]->partner_rises++;
			break;
		}
	}
	in->rows++;
	in->known_loss += known;
	for (size_t i = 0; i < ns; i++)
		seen[i]->loss_rows += lossy || known;
}

/* ---- the decision ---------------------------------------------------------- */

static int varies(const struct key_stat *s)
{
	return s->max > s->min;
}

/* The loss among keys named like one: recurring, varying (a constant, as
 * an unused loss term's 0.0, says nothing), not a count; the best name,
 * then the most rows, then the first seen. */
static struct key_stat *pick_loss(struct rm_infer *in)
{
	struct key_stat *best = NULL;
	for (int i = 0; i < in->nkeys; i++) {
		struct key_stat *s = &in->key[i];
		if (!s->loss_score || s->rows < 2 || !varies(s) || s->target == T_STEP || s->target == T_EPOCH)
			continue;
		if (s->ints == s->rows && s->loss_score < 95)
			continue; /* whole numbers throughout: a count */
		if (!best || s->loss_score > best->loss_score ||
		    (s->loss_score == best->loss_score && s->rows > best->rows))
			best = s;
	}
	return best;
}

/* Rises nearly always: a fall now and then (ranks a little out of order),
 * and up to three starts over (runs appended to the file) besides. */
static int rises_with_runs(const struct key_stat *s)
{
	/* A counter by its name (an epoch, "step") may start over often: the
	 * runs of a sweep appended to one file (DeiT's log.txt of twelve
	 * fine-tunings, each counting epochs 9..49), so long as each run
	 * holds three records on average. Another integer that cycles is a
	 * rank or a device, not a step. */
	int named = s->step_score == 2 || s->target == T_EPOCH;
	uint64_t runs = s->resets <= 3 || named ? s->resets : 0;
	return s->rises > (s->falls - runs) * 9 && s->rises > runs * 2;
}

/* A step counter: an integer in nearly every loss row that rises with
 * them (a fall now and then: a counter that restarts each epoch, ranks a
 * little out of order), named like a counter first. The epoch, last. */
static struct key_stat *pick_step(struct rm_infer *in, const struct key_stat *loss, int want_epoch)
{
	struct key_stat *best = NULL;
	uint64_t need = loss ? loss->rows : in->rows;
	for (int i = 0; i < in->nkeys; i++) {
		struct key_stat *s = &in->key[i];
		if (s == loss || s->loss_score || !s->step_score || (s->target == T_EPOCH) != want_epoch)
			continue;
		if (s->target != T_NONE && s->target != T_EPOCH)
			continue; /* the mapper knows it as something else (a rate, a size) */
		uint64_t moves = s->rises + s->falls + s->same;
		if (s->ints < s->rows || !varies(s) || s->loss_rows * 10 < need * 8 || !rises_with_runs(s) ||
		    moves == 0)
			continue;
		if (!best || s->step_score > best->step_score ||
		    (s->step_score == best->step_score && s->rises > best->rises))
			best = s;
	}
	return best;
}

/* "E=1 B=50 ... E=2 B=50": a counter that starts over exactly where the
 * chosen one rises counts within it (batches within an epoch): the finer
 * axis is the step, the chosen one its epoch. */
static struct key_stat *counter_within(struct rm_infer *in, const struct key_stat *outer, const struct key_stat *loss)
{
	uint64_t need = loss ? loss->rows : in->rows;
	if (outer->target == T_EPOCH)
		return NULL; /* the mapper composes a known epoch already */
	for (int i = 0; i < in->nkeys; i++) {
		struct key_stat *s = &in->key[i];
		if (s == outer || s == loss || s->loss_score || !s->step_score || s->target != T_NONE ||
		    s->ints < s->rows || s->loss_rows * 10 < need * 8)
			continue;
		if (s->falls >= 1 && &in->key[s->partner] == outer && s->partner_rises == s->falls &&
		    s->rises > s->falls && s->rises >= outer->rises)
			return s;
	}
	return NULL;
}

/* The counter the chosen step counts within: a key no name says, that
 * rose at every fall of the step and rarely otherwise. */
static struct key_stat *counter_around(struct rm_infer *in, const struct key_stat *step)
{
	if (!step->falls || step->partner_rises != step->falls || step->target == T_EPOCH)
		return NULL;
	struct key_stat *p = &in->key[step->partner];
	for (int i = 0; i < in->nkeys; i++)
		if (in->key[i].target == T_EPOCH && in->key[i].loss_rows)
			return NULL; /* a known epoch: the mapper composes with it */
	if (p == step || p->loss_score || p->target != T_NONE || p->ints < p->rows || p->falls ||
	    p->rises > step->falls * 2)
		return NULL;
	return p;
}

/* A leading "[N]" tag is a rank when it cycles: it falls back as often as
 * it rises (each rank prints in turn), over few values. */
static struct key_stat *pick_rank(struct rm_infer *in)
{
	for (int i = 0; i < in->nkeys; i++) {
		struct key_stat *s = &in->key[i];
		if (strcmp(s->name, RM_GUESS_TAG) || s->ints < s->rows || s->max >= 65536)
			continue;
		if (!varies(s) || s->falls * 5 >= s->rises)
			return s;
	}
	return NULL;
}

static void say(struct rm_guess *g, const char *fmt, ...) RM_PRINTF(2, 3);
static void say(struct rm_guess *g, const char *fmt, ...)
{
	size_t n = strlen(g->why);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->why + n, sizeof(g->why) - n, fmt, ap);
	va_end(ap);
}

/* The loss-named series beside the loss (its components, a GAN's other
 * loss): kept apart, never diagnosed. A count (whole numbers throughout)
 * is none. */
static void pick_also(struct rm_infer *in, const struct key_stat *loss, struct rm_guess *g)
{
	for (int i = 0; i < in->nkeys && g->nalso < RM_GUESS_ALSO; i++) {
		struct key_stat *s = &in->key[i];
		if (s != loss && s->loss_score >= 60 && s->rows >= 2 && varies(s) && s->target == T_NONE &&
		    s->ints < s->rows)
			g->also[g->nalso++] = rm_xstrdup(s->name);
	}
}

void rm_infer_decide(struct rm_infer *in, struct rm_guess *g)
{
	const struct rm_import_opts *o = in->map.opts;
	memset(g, 0, sizeof(*g));
	struct key_stat *loss = NULL, *step = NULL, *rank = pick_rank(in);
	if (rank) {
		g->rank = rm_xstrdup(rank->name);
		say(g, "rank '%s': a leading tag that cycles over %.0f values; ", rank->name,
		    rank->max - rank->min + 1);
	}
	if (!o->loss_key && !in->known_loss && (loss = pick_loss(in))) {
		g->loss = rm_xstrdup(loss->name);
		g->loss_log = perplexity_name(loss->name, loss->len);
		if (!strcmp(loss->name, RM_GUESS_UNNAMED))
			say(g,
			    "loss %s: the number beside a counter on lines of those two alone, where no series is "
			    "named a loss",
			    loss->name);
		else
			say(g, "loss '%s': named like a loss%s", loss->name,
			    g->loss_log              ? " (a perplexity, exp of a loss: stored as its logarithm)"
			    : loss->loss_score >= 95 ? ""
			    : loss->loss_score >= 72 ? " (a total, a cost, a cross-entropy)"
			                             : "");
		pick_also(in, loss, g);
		if (g->nalso)
			say(g, ", the first of %zu loss-named series that vary (the others kept apart)", g->nalso + 1);
		say(g, "; ");
	} else {
		pick_also(in, NULL, g); /* beside a loss of a known name (mmdet's loss_cls beside its loss) */
	}
	int known_step = 0;
	for (int i = 0; i < in->nkeys; i++)
		known_step |= in->key[i].target == T_STEP && in->key[i].loss_rows;
	if (!o->step_key && !known_step) {
		const struct key_stat *l = loss;
		for (int i = 0; !l && i < in->nkeys; i++)
			if (in->key[i].target == T_LOSS)
				l = &in->key[i];
		if ((step = pick_step(in, l, 0)) || (step = pick_step(in, l, 1))) {
			struct key_stat *within = counter_within(in, step, l), *outer = counter_around(in, step);
			if (outer) {
				g->epoch = rm_xstrdup(outer->name);
				say(g, "epoch '%s': it rises where the step '%s' starts over; ", outer->name,
				    step->name);
			} else if (within) {
				g->epoch = rm_xstrdup(step->name);
				say(g, "epoch '%s', the counter '%s' starts over at each of its rises; ", step->name,
				    within->name);
				step = within;
			}
			g->step = rm_xstrdup(step->name);
			say(g, "step '%s': %s", step->name,
			    step->target == T_EPOCH ? "the epoch, the only counter that rises with the records"
			    : step->step_score == 2 ? "named like a counter, an integer that rises with the records"
			                            : "an integer that rises with the records");
			say(g, "; ");
		}
	}
	if (!step && !g->epoch) { /* a step by a known name: does it count within an epoch no name says? */
		for (int i = 0; i < in->nkeys && !step; i++)
			if (in->key[i].target == T_STEP && in->key[i].loss_rows)
				step = &in->key[i];
		struct key_stat *outer = step ? counter_around(in, step) : NULL;
		if (outer) {
			g->epoch = rm_xstrdup(outer->name);
			say(g, "epoch '%s': it rises where the step '%s' starts over; ", outer->name, step->name);
		}
	}
	g->has_step = known_step || step;
	/* Bars hold the records when the loss is printed elsewhere at most a
	 * quarter as often (YOLO's table under a bar; AllenNLP's epoch table
	 * beside its frames); a "loss_ota=1" in a settings line elsewhere does
	 * not count. */
	uint64_t bar = 0, line = 0;
	for (int i = 0; i < in->nkeys; i++) {
		struct key_stat *s = &in->key[i];
		if (s == loss || (!loss && s->target == T_LOSS)) {
			bar += s->bar_rows;
			line += s->rows - s->bar_rows;
		}
	}
	g->bar_records = bar && line * 4 <= bar;
	size_t n = strlen(g->why);
	while (n && (g->why[n - 1] == ' ' || g->why[n - 1] == ';'))
		g->why[--n] = 0;
}

void rm_guess_release(struct rm_guess *g)
{
	free(g->loss);
	free(g->step);
	free(g->rank);
	free(g->epoch);
	for (size_t i = 0; i < g->nalso; i++)
		free(g->also[i]);
	memset(g, 0, sizeof(*g));
}
