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

/* One line's pairs: keys are built in keys[], values parsed. */
struct log_line {
	struct rm_row row;
	char keys[4096];
	size_t klen;
	int eval;    /* an evaluation line */
	int summary; /* an end-of-epoch summary (fairseq's [train]) */
	char *py;    /* a Python dict converted to JSON */
	char rankbuf[24];
	size_t pycap;
	uint8_t *target; /* each field's enum rm_target, and its priority */
	uint8_t *prio;
	size_t tcap;
};

/* Appends a key made of words w[0..nw) to the line's key buffer, lower-
 * cased, words joined by '_', trailing ':' '.' '=' cut; eval lines prefix
 * "eval_" to all but the step and epoch. Returns the key or NULL. */
static const char *make_key(struct log_line *ll, const char *const *w, const size_t *wl, int nw, size_t *klen)
{
	char key[MAX_KEY];
	size_t k = 0;
	for (int i = 0; i < nw; i++) {
		if (k && k < sizeof(key) - 1)
			key[k++] = '_';
		for (size_t j = 0; j < wl[i] && k < sizeof(key) - 1; j++) {
			char c = w[i][j];
			key[k++] = c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c;
		}
	}
	while (k && (key[k - 1] == ':' || key[k - 1] == '.' || key[k - 1] == '=' || key[k - 1] == ','))
		k--;
	size_t lead = 0;
	while (lead < k && (key[lead] == '|' || key[lead] == '-' || key[lead] == '*'))
		lead++;
	if (lead == k)
		return NULL;
	/* Megatron's "validation loss at iteration 1000" names the step of an
	 * evaluation ("saving checkpoint at iteration 30" is no record). */
	static const char at_iter[] = "_at_iteration";
	if (k - lead >= sizeof(at_iter) - 1 && !memcmp(key + k - (sizeof(at_iter) - 1), at_iter, sizeof(at_iter) - 1)) {
		ll->eval |= k - lead >= 5 && !memcmp(key + lead, "valid", 5);
		lead = k - (sizeof(at_iter) - 1) + 4;
	}
	if (ll->klen + (k - lead) + 1 > sizeof(ll->keys))
		return NULL;
	char *out = ll->keys + ll->klen;
	memcpy(out, key + lead, k - lead);
	out[k - lead] = 0;
	ll->klen += k - lead + 1;
	*klen = k - lead;
	return out;
}

static void add_pair(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen, double v)
{
	struct rm_field *f = rm_row_add(&ll->row, key, klen, 0);
	f->type = RM_F_NUM;
	f->have_num = 1;
	f->num = v;
	f->raw = raw;
	f->rlen = (uint32_t)rlen;
}

static void add_text(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen)
{
	while (rlen >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw[rlen - 1] == raw[0])
		raw++, rlen -= 2;
	struct rm_field *f = rm_row_add(&ll->row, key, klen, 0);
	f->type = rlen ? RM_F_CELL : RM_F_NULL;
	f->raw = raw;
	f->rlen = (uint32_t)rlen;
}

/* A token "key=value" or "key:value" (the key starts like a word). */
static int split_glued(const char *t, size_t n, size_t *at)
{
	if (!n || !rm_log_key_start((unsigned char)t[0]))
		return 0;
	for (size_t i = 1; i + 1 < n; i++) {
		if (t[i] == '=') {
			*at = i;
			return 1;
		}
		if (t[i] == ':' && (isdigit((unsigned char)t[i + 1]) || t[i + 1] == '-' || t[i + 1] == '.')) {
			*at = i;
			return 1;
		}
	}
	return 0;
}

/* Reads the pairs of one field (text between separators). carry holds a
 * key left by a field with words and no number (Marian's
 * "ce-mean-words : 5.21"). */
static void field_pairs(struct log_line *ll, const char *s, size_t n, const char **carry_w, size_t *carry_l,
                        int *ncarry, int later)
{
	const char *w[MAX_KEY_WORDS];
	size_t wl[MAX_KEY_WORDS];
	int nw = 0;
	const char *lonely = NULL; /* a number with no key before it: "7701.40 words/s" */
	size_t lonely_len = 0;
	double lonely_v = 0;
	size_t i = 0;
	if (*ncarry) {
		memcpy(w, carry_w, sizeof(*w) * (size_t)*ncarry);
		memcpy(wl, carry_l, sizeof(*wl) * (size_t)*ncarry);
		nw = *ncarry;
		*ncarry = 0;
	}
	for (int first = 1; i < n; first = 0) {
		while (i < n && rm_log_space((unsigned char)s[i]))
			i++;
		size_t st = i;
		while (i < n && !rm_log_space((unsigned char)s[i]))
			i++;
		if (i == st)
			break;
		const char *t = s + st;
		size_t tl = i - st, at;
		double v;
		size_t klen;
		const char *key;
		int num = rm_log_number(t, tl, &v);
		if (first && !num)
			nw = 0; /* the carried key names only a number that opens the field */
		if (tl == 1 && (*t == '=' || *t == ':') && nw && later)
			continue; /* "epoch 2, step 30750, training loss = 4.33": the sign between
			           * key and value, in a field after the first (a line of one such
			           * field is a setting: "eval_interval = 250", "Num examples = 25,000") */
		if (split_glued(t, tl, &at)) {
			const char *val = t + at + 1;
			size_t vl = tl - at - 1;
			while (vl && (val[vl - 1] == ',' || val[vl - 1] == ';'))
				vl--;
			const char *kw[1] = {t};
			size_t kl[1] = {at};
			if ((key = make_key(ll, kw, kl, 1, &klen))) {
				if (rm_log_number(val, vl, &v))
					add_pair(ll, key, klen, val, vl, v);
				else
					add_text(ll, key, klen, val, vl);
			}
			nw = 0, lonely = NULL;
		} else if (num) {
			double mean[3];
			if (nw && (key = make_key(ll, w, wl, nw, &klen))) {
				if (klen == 3 && !memcmp(key, "bsz", 3) && rm_log_triple(t, tl, mean)) {
					/* OpenNMT-py 3.x's "bsz: 1772/1813/63": a batch's mean
					 * source tokens, target tokens and sentences */
					add_pair(ll, key, klen, t, tl, mean[2]);
					add_pair(ll, "bsz_tgt_tokens", 14, t, tl, mean[1]);
				} else {
					add_pair(ll, key, klen, t, tl, v);
				}
			} else {
				lonely = t, lonely_len = tl, lonely_v = v;
			}
			nw = 0;
		} else if (rm_log_key_start((unsigned char)t[0]) && !rm_log_is_level(t, tl)) {
			size_t ul = tl;
			while (ul && (t[ul - 1] == '.' || t[ul - 1] == ',' || t[ul - 1] == ';' || t[ul - 1] == ']'))
				ul--;
			if (lonely && rm_log_count_unit(t, ul)) { /* "over 52.00 utterances" */
				const char *kw[1] = {t};
				size_t kl[1] = {ul};
				if ((key = make_key(ll, kw, kl, 1, &klen)))
					add_pair(ll, key, klen, lonely, lonely_len, lonely_v);
				lonely = NULL;
				nw = 0;
				continue;
			}
			if (tl == 4 && !memcmp(t, "over", 4)) { /* the number after it is a count */
				nw = 0;
				continue;
			}
			if (lonely && memchr(t, '/', tl)) { /* a rate after its number */
				const char *kw[1] = {t};
				size_t kl[1] = {ul};
				if ((key = make_key(ll, kw, kl, 1, &klen)))
					add_pair(ll, key, klen, lonely, lonely_len, lonely_v);
				lonely = NULL;
				continue;
			}
			if (nw == MAX_KEY_WORDS) {
				memmove(w, w + 1, sizeof(*w) * (MAX_KEY_WORDS - 1));
				memmove(wl, wl + 1, sizeof(*wl) * (MAX_KEY_WORDS - 1));
				nw--;
			}
			w[nw] = t, wl[nw] = tl, nw++;
			lonely = NULL;
		} else {
			nw = 0, lonely = NULL; /* a date, a path, punctuation: no key spans it */
		}
	}
	if (nw && nw <= MAX_KEY_WORDS) {
		memcpy((void *)carry_w, w, sizeof(*w) * (size_t)nw);
		memcpy(carry_l, wl, sizeof(*wl) * (size_t)nw);
		*ncarry = nw;
	}
}

/* Splits s into fields at the separators " | ", "|", ", " and " : " and
 * reads each; a key with no number carries over to the next field. */
static void pairs(struct log_line *ll, const char *s, size_t n)
{
	const char *carry_w[MAX_KEY_WORDS];
	size_t carry_l[MAX_KEY_WORDS];
	int ncarry = 0;
	size_t st = 0, i = 0;
	for (;;) {
		i = rm_log_next_sep(s, i, n);
		size_t end = i, next;
		if (i == n) {
			end = n, next = n;
		} else if (s[i] == '|') {
			next = i + 1;
		} else if (s[i] == ',' && i + 1 < n && s[i + 1] == ' ') {
			next = i + 2;
		} else if (s[i] == ':' && i > st && s[i - 1] == ' ' && i + 1 < n && s[i + 1] == ' ') {
			end = i - 1, next = i + 2;
		} else {
			i++;
			continue;
		}
		field_pairs(ll, s + st, end - st, carry_w, carry_l, &ncarry, st > 0);
		if (i == n)
			return;
		st = i = next;
	}
}

/* Rewrites a Python dict literal as JSON into ll->py: quotes, True,
 * False, None, nan, inf, and a scalar's repr (tensor(2.31, device='cuda:0',
 * grad_fn=<...>), np.float64(0.5)) as its number. Returns its length, or 0
 * if it holds anything JSON cannot (tuples, sets, other reprs). */
static size_t python_to_json(struct log_line *ll, const char *s, size_t n)
{
	if (ll->pycap < 3 * n + 16) /* "inf" becomes "Infinity"; a quote, \" */
		ll->py = rm_xrealloc(ll->py, ll->pycap = 3 * n + 16);
	char *o = ll->py;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\'' || c == '"') {
			char q = c;
			*o++ = '"';
			for (i++; i < n && s[i] != q; i++) {
				if (s[i] == '\\' && i + 1 < n) {
					if (s[i + 1] == '\'')
						*o++ = s[++i];
					else
						*o++ = s[i], *o++ = s[++i];
				} else if (s[i] == '"') {
					*o++ = '\\', *o++ = '"';
				} else {
					*o++ = s[i];
				}
			}
			if (i >= n)
				return 0;
			*o++ = '"';
			continue;
		}
		static const char *const reprs[] = {"tensor(", "np.float64(", "np.float32(", "np.int64("};
		for (size_t r = 0; r < sizeof(reprs) / sizeof(reprs[0]); r++) {
			size_t rl = strlen(reprs[r]);
			if (n - i > rl && !memcmp(s + i, reprs[r], rl) &&
			    (i == 0 || !isalnum((unsigned char)s[i - 1]))) {
				const char *close = memchr(s + i + rl, ')', n - i - rl);
				if (!close)
					return 0;
				for (i += rl; i < n && s[i] != ',' && s + i < close; i++)
					*o++ = s[i]; /* the value; device=, dtype=, grad_fn= dropped */
				i = (size_t)(close - s);
				c = 0;
				break;
			}
		}
		if (!c)
			continue;
		static const struct {
			const char *py, *json;
		} words[] = {{"True", "true"}, {"False", "false"},    {"None", "null"},
		             {"nan", "NaN"},   {"-inf", "-Infinity"}, {"inf", "Infinity"}};
		int hit = 0;
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
			size_t wl = strlen(words[w].py);
			if (n - i >= wl && !memcmp(s + i, words[w].py, wl) &&
			    (i == 0 || !isalnum((unsigned char)s[i - 1]))) {
				size_t jl = strlen(words[w].json);
				memcpy(o, words[w].json, jl);
				o += jl;
				i += wl - 1;
				hit = 1;
				break;
			}
		}
		if (hit)
			continue;
		if (c == '(' || c == ')')
			return 0;
		*o++ = c;
	}
	*o = 0;
	return (size_t)(o - ll->py);
}

/* What earlier tries of one line found, so that a line is matched in time
 * linear in its length: field f started in [from, to] ends at to (no
 * terminator lies between), and the literal after it, tried at to, ends
 * at lit_end (or fails: lit_ok 0). A try from a later start whose field
 * starts in that span reuses both instead of scanning to the line's end
 * again ("L={loss} Z" on a line of "L=L=L=..." was quadratic). */
struct pattern_memo {
	size_t from[MAX_PATTERN_FIELDS], to[MAX_PATTERN_FIELDS], lit_end[MAX_PATTERN_FIELDS];
	int lit_ok[MAX_PATTERN_FIELDS];
};

static int pattern_at(const struct pattern *pt, struct pattern_memo *memo, struct log_line *ll, const char *s, size_t n,
                      size_t pos)
{
	rm_row_clear(&ll->row);
	ll->klen = 0;
	if (!rm_log_literal_at(pt->lit[0], pt->litlen[0], s, n, &pos))
		return 0;
	for (int f = 0; f < pt->n; f++) {
		size_t st = pos;
		if (memo->from[f] <= st && st <= memo->to[f]) {
			pos = memo->to[f];
		} else {
			const char *next = pt->lit[f + 1];
			size_t nextlen = pt->litlen[f + 1];
			char stop = 0;
			for (size_t i = 0; i < nextlen && !stop; i++) /* the next literal's first non-blank */
				stop = isspace((unsigned char)next[i]) ? 0 : next[i];
			while (pos < n && !isspace((unsigned char)s[pos]) && s[pos] != stop)
				pos++;
			memo->from[f] = st, memo->to[f] = pos;
			memo->lit_end[f] = pos;
			memo->lit_ok[f] = rm_log_literal_at(pt->lit[f + 1], pt->litlen[f + 1], s, n, &memo->lit_end[f]);
		}
		if (pos == st || !memo->lit_ok[f])
			return 0;
		const char *w[1] = {pt->name[f]};
		size_t wl[1] = {pt->namelen[f]}, klen;
		double v;
		const char *key = make_key(ll, w, wl, 1, &klen);
		if (!key)
			return 0;
		if (rm_log_number(s + st, pos - st, &v))
			add_pair(ll, key, klen, s + st, pos - st, v);
		else
			add_text(ll, key, klen, s + st, pos - st);
		pos = memo->lit_end[f];
	}
	return 1;
}

static enum line_kind pattern_parse(const struct pattern *pt, struct log_line *ll, const char *s, size_t n)
{
	struct pattern_memo memo;
	for (int f = 0; f < pt->n; f++)
		memo.from[f] = SIZE_MAX, memo.to[f] = 0;
	int lead_blank = pt->litlen[0] && isspace((unsigned char)pt->lit[0][0]);
	for (size_t pos = 0; pos < n; pos++) {
		if (pt->litlen[0] ? s[pos] != pt->lit[0][0] && !lead_blank : pos && !isspace((unsigned char)s[pos - 1]))
			continue;
		/* a start inside a run of blanks matches as the run's first does */
		if (lead_blank && pos && isspace((unsigned char)s[pos]) && isspace((unsigned char)s[pos - 1]))
			continue;
		if (pattern_at(pt, &memo, ll, s, n, pos))
			return LINE_RECORD;
	}
	rm_row_clear(&ll->row);
	return LINE_NONE;
}

/* Reads one line into ll->row. Returns LINE_RECORD when it has pairs,
 * LINE_NONE when it is not a record, LINE_BAD with why set. */
static enum line_kind log_parse(struct log_line *ll, char *line, size_t len, char *why, size_t whylen)
{
	rm_row_clear(&ll->row);
	ll->klen = 0;
	ll->eval = ll->summary = 0;
	/* Progress bars redraw with '\r': the last frame with text counts. */
	for (char *cr; (cr = memchr(line, '\r', len));) {
		size_t rest = len - (size_t)(cr + 1 - line);
		if (strspn(cr + 1, " \t") >= rest) {
			len = (size_t)(cr - line);
			break;
		}
		len = rest;
		line = cr + 1;
	}
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	if (!len) {
		snprintf(why, whylen, "blank (a progress bar's last frame)");
		return LINE_NONE;
	}
	char *brace = memchr(line, '{', len);
	if (brace && line[len - 1] == '}') {
		size_t plen = (size_t)(brace - line), olen = len - plen;
		ll->eval = rm_log_has_word(line, plen, "valid") || rm_log_has_word(line, plen, "[eval");
		ll->summary = rm_log_has_word(line, plen, "[train]");
		struct rm_err perr;
		char *obj = brace;
		char saved = line[len];
		line[len] = 0; /* the JSON reader wants the object NUL-terminated */
		int bad = rm_jsonrow_parse(&ll->row, obj, olen, &perr);
		if (bad) {
			size_t jl = python_to_json(ll, obj, olen);
			bad = !jl || rm_jsonrow_parse(&ll->row, ll->py, jl, &perr);
		}
		line[len] = saved;
		if (!bad)
			return LINE_RECORD;
		rm_row_clear(&ll->row);
		if (!rm_log_record_like(obj, olen)) {
			snprintf(why, whylen, "an object that is no record (a config dump, a repr)");
			return LINE_NONE;
		}
		snprintf(why, whylen, "the object after the prefix does not parse: %.200s", perr.msg);
		return LINE_BAD;
	}
	/* A progress bar's frame ("45%|####  | 450/1000 [00:30<00:36, 15.0it/s,
	 * loss=2.31]") restates a metric the logger records properly. */
	if (memchr(line, '%', len) && memmem(line, len, "%|", 2) &&
	    (memmem(line, len, "it/s", 4) || memmem(line, len, "s/it", 4))) {
		snprintf(why, whylen, "a progress bar's frame");
		return LINE_NONE;
	}
	/* Tags in brackets before the record: "[valid]" marks an evaluation. */
	size_t i = 0;
	while (i < len) {
		while (i < len && isspace((unsigned char)line[i]))
			i++;
		if (i < len && line[i] == '[' &&
		    !(len - i > 6 && !strncmp(line + i, "[rank", 5) &&
		      isdigit((unsigned char)line[i + 5]))) { /* a rank is read below */
			char *close = memchr(line + i, ']', len - i);
			if (!close)
				break;
			if (rm_log_has_word(line + i, (size_t)(close - line - i), "valid"))
				ll->eval = 1;
			i = (size_t)(close - line) + 1;
			continue;
		}
		break;
	}
	if (rm_log_has_word(line + i, len - i, "valid on '") || rm_log_has_word(line + i, len - i, "validation"))
		ll->eval = 1;
	int64_t rank = rm_log_open_groups(line + i, len - i);
	pairs(ll, line + i, len - i);
	if (rank >= 0 && ll->row.n) {
		int n = snprintf(ll->rankbuf, sizeof(ll->rankbuf), "%lld", (long long)rank);
		add_pair(ll, "rank", 4, ll->rankbuf, (size_t)n, (double)rank);
	}
	if (ll->row.n > MAX_RECORD_FIELDS) { /* TrainConfig(... epoch=None ...) */
		snprintf(why, whylen, "over %d name-value pairs (an argument dump, a repr)", MAX_RECORD_FIELDS);
		return LINE_NONE;
	}
	if (!ll->row.n)
		snprintf(why, whylen, "no name and number (a banner, a message)");
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
	static const char *const words[] = {"val", "valid", "validation", "eval", "evaluation", "test"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == klen && !strncasecmp(key, words[i], klen))
			return 1;
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

struct log_reader {
	struct log_line ll;
	struct pattern pattern;
	int has_pattern;
	int64_t records; /* loss records so far, for lines without a step */
	int64_t last_step;
	char stepbuf[32];
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
};

/* Turns one line into a row for the mapper, or says it is no record. A
 * line without a step (the HF Trainer's dicts) takes the record count
 * times --log-every; an evaluation without one, the last step. */
static enum line_kind log_row(struct log_reader *r, struct rm_mapper *m, char *line, size_t len, char *why,
                              size_t whylen)
{
	enum line_kind kind =
	    r->has_pattern ? pattern_parse(&r->pattern, &r->ll, line, len) : log_parse(&r->ll, line, len, why, whylen);
	if (kind == LINE_NONE && r->has_pattern)
		snprintf(why, whylen, "does not match --pattern");
	if (kind != LINE_RECORD)
		return kind;
	if (r->ll.summary) {
		snprintf(why, whylen, "an end-of-epoch summary ([train] ...)");
		return LINE_NONE;
	}
	unsigned set = drop_words(&r->ll, classify_fields(&r->ll, m));
	set = mark_eval(&r->ll, set);
	int useful = HAS_T(set, T_LOSS) || HAS_T(set, T_EVAL);
	for (int t = T_BUCKET; t <= T_TOK_RATE; t++)
		useful |= HAS_T(set, t) && t != T_RANK && t != T_MICRO && HAS_T(set, T_STEP);
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
		if (f && rm_field_num(f, &v) == 1 && v >= 0 && v < 9e15)
			r->last_step = (int64_t)v;
		return LINE_RECORD;
	}
	if (HAS_T(set, T_LOSS))
		r->last_step = ++r->records * (m->opts->log_every > 0 ? m->opts->log_every : 1);
	int n = snprintf(r->stepbuf, sizeof(r->stepbuf), "%lld", (long long)r->last_step);
	add_pair(&r->ll, "step", 4, r->stepbuf, (size_t)n, (double)r->last_step);
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

static enum line_kind log_parse_line(void *ctx, struct rm_mapper *m, char *line, size_t len, uint64_t *lineno,
                                     const struct rm_row **row, char *why, size_t whylen)
{
	struct log_reader *r = ctx;
	*row = &r->ll.row;
	if (line) {
		len = rm_log_strip_escapes(line, len);
		if (strspn(line, " \t\r") == len)
			return LINE_SKIP;
	}
	if (r->has_pattern)
		return line ? log_row(r, m, line, len, why, whylen) : LINE_SKIP;
	if (line && r->has_held && rm_log_continuation(line, len)) {
		if (r->has_held == 1)
			open_header(r);
		r->has_held = 2;
		hold(r, line, len, 1);
		return LINE_SKIP;
	}
	/* The held line is complete: read it (the row points into its buffer,
	 * kept as the spare until the next call); the new line is held. */
	enum line_kind kind = LINE_SKIP;
	uint64_t now = *lineno;
	if (r->has_held) {
		char *text = r->held;
		size_t tlen = r->hlen, cap = r->hcap;
		r->held = r->spare;
		r->hcap = r->spare_cap;
		r->spare = text;
		r->spare_cap = cap;
		r->hlen = 0;
		r->has_held = 0;
		*lineno = r->held_at;
		kind = log_row(r, m, text, tlen, why, whylen);
	}
	if (line) {
		hold(r, line, len, 0);
		r->has_held = 1;
		r->held_at = now;
	}
	return kind;
}

static int log_read(struct rm_store *st, const struct rm_import_opts *opts, const char *path, enum rm_format fmt,
                    struct rm_tail_pos *pos, struct rm_import_report *rep, struct rm_err *err)
{
	struct log_reader r;
	char why[128];
	memset(&r, 0, sizeof(r));
	if (opts->pattern && rm_log_pattern_compile(opts->pattern, &r.pattern, why, sizeof(why)))
		return rm_err_set(err, RM_E_USAGE, "--pattern: %s", why);
	r.has_pattern = opts->pattern != NULL;
	log_line_init(&r.ll);
	int rc = rm_read_lines(st, opts, path, fmt, pos, rep, log_parse_line, &r, err);
	if (!rc && r.records)
		rep->r[rep->n - 1].synthetic_steps = 1;
	log_line_release(&r.ll);
	free(r.held);
	free(r.spare);
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

/* A console log: among the first lines of the file's head, one that reads
 * as a record with a step or a loss. */
int rm_sniff_log(const struct sniff *s)
{
	struct log_reader r;
	struct rm_mapper m;
	int found = 0;
	if (!s->nhead)
		return 0;
	memset(&r, 0, sizeof(r));
	log_line_init(&r.ll);
	rm_mapper_init(&m, RM_FMT_LOG, s->opts);
	char *copy = rm_xstrndup((const char *)s->head, s->nhead);
	char *p = copy, *end = copy + s->nhead;
	for (int lines = 0; p < end && lines < 5000 && !found; lines++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break; /* a line cut by the head's end */
		char why[64];
		*nl = 0;
		if (log_row(&r, &m, p, (size_t)(nl - p), why, sizeof(why)) == LINE_RECORD) {
			found = 1; /* a loss, an eval, or a step with batch composition */
		}
		p = nl + 1;
	}
	free(copy);
	rm_mapper_release(&m);
	log_line_release(&r.ll);
	return found;
}
