/*
 * log_pairs.c - the console-log reader's name/value pairs: a line's text
 * split into fields at " | ", ", " and " : ", each read as "key=value",
 * "key:value", "key value" or "key: value" (a key is the words before a
 * number); bracketed counters and a value's second reading in parentheses
 * made plain first; a Python dict rewritten as JSON. See log.c.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log_internal.h"
#include "runmon/parse.h"
#include "runmon/sink.h"

#define MAX_KEY_WORDS 4 /* "elapsed time per iteration" */
#define MAX_KEY       RM_LOG_MAX_KEY

/* Appends a key made of words w[0..nw) to the line's key buffer, lower-
 * cased, words joined by '_', trailing ':' '.' '=' cut; eval lines prefix
 * "eval_" to all but the step and epoch. Returns the key or NULL. */
const char *rm_log_make_key(struct log_line *ll, const char *const *w, const size_t *wl, int nw, size_t *klen)
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

void rm_log_add_pair(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen, double v)
{
	struct rm_field *f = rm_row_add(&ll->row, key, klen, 0);
	f->type = RM_F_NUM;
	f->have_num = 1;
	f->num = v;
	f->raw = raw;
	f->rlen = (uint32_t)rlen;
}

void rm_log_add_text(struct log_line *ll, const char *key, size_t klen, const char *raw, size_t rlen)
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
/* A unit per time or per step after its number: "samples/sec", "tok/s",
 * "it/s", "tokens/step" (not "Loss/tok", a key). */
static int rate_unit(const char *t, size_t n)
{
	static const char *const per[] = {"s", "sec", "secs", "second", "seconds", "ms",     "min",
	                                  "h", "hr",  "step", "iter",   "batch",   "update", NULL};
	while (n && (t[n - 1] == ',' || t[n - 1] == ';' || t[n - 1] == ')' || t[n - 1] == ']'))
		n--;
	const char *slash = NULL;
	for (size_t i = 0; i < n; i++)
		if (t[i] == '/')
			slash = t + i;
	if (!slash || slash == t)
		return 0;
	size_t pl = n - (size_t)(slash + 1 - t);
	for (int i = 0; per[i]; i++)
		if (pl == strlen(per[i]) && !strncasecmp(slash + 1, per[i], pl))
			return 1;
	return 0;
}

/* The token after position i of s[0..n) (its start and length; 0 at the end). */
static size_t next_token(const char *s, size_t i, size_t n, const char **t)
{
	while (i < n && rm_log_space((unsigned char)s[i]))
		i++;
	size_t st = i;
	while (i < n && !rm_log_space((unsigned char)s[i]))
		i++;
	*t = s + st;
	return i - st;
}

static int time_word(const char *w, size_t n)
{
	static const char *const words[] = {"time", "wall", "elapsed", "eta", "speed", "throughput", NULL};
	return rm_log_word_in(w, n, words);
}

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
		if (tl >= 2 && t[tl - 1] == '/' && rm_log_number(t, tl - 1, &v)) {
			const char *u;
			size_t ul = next_token(s, i, n, &u);
			double total;
			if (ul && rm_log_number(u, ul, &total)) { /* "  500/ 2983 batches": a count and its total */
				num = 1;
				i = (size_t)(u - s) + ul;
				tl = i - st;
			}
		}
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
			/* "Time cost=2.771" (MXNet's epoch line): the word of time
			 * before a glued pair names it, so a time is never a cost */
			const char *kw[2] = {t, t};
			size_t kl[2] = {at, at};
			int nk = 1;
			if (nw && time_word(w[nw - 1], wl[nw - 1])) {
				kw[0] = w[nw - 1], kl[0] = wl[nw - 1];
				nk = 2;
			}
			if ((key = rm_log_make_key(ll, kw, kl, nk, &klen))) {
				if (rm_log_number(val, vl, &v))
					rm_log_add_pair(ll, key, klen, val, vl, v);
				else
					rm_log_add_text(ll, key, klen, val, vl);
			}
			nw = 0, lonely = NULL;
		} else if (num) {
			double mean[3];
			const char *u;
			size_t ul = next_token(s, i, n, &u);
			if (nw && ul && rate_unit(u, ul))
				nw = 0; /* "Speed: 76.66 samples/sec": the number is the unit's */
			if (nw && (key = rm_log_make_key(ll, w, wl, nw, &klen))) {
				double v2;
				if (klen == 3 && !memcmp(key, "bsz", 3) && rm_log_triple(t, tl, mean)) {
					/* OpenNMT-py 3.x's "bsz: 1772/1813/63": a batch's mean
					 * source tokens, target tokens and sentences */
					rm_log_add_pair(ll, key, klen, t, tl, mean[2]);
					rm_log_add_pair(ll, "bsz_tgt_tokens", 14, t, tl, mean[1]);
				} else if (ul && memmem(key, klen, "loss", 4) && strspn(t, "0123456789") == tl &&
				           memchr(u, '.', ul) && rm_log_number(u, ul, &v2)) {
					/* "Train loss 0 1.462118" (NVIDIA's Tacotron2): a
					 * loss named, then the iteration, then its value */
					rm_log_add_pair(ll, "counter", 7, t, tl, v);
					rm_log_add_pair(ll, key, klen, u, ul, v2);
					i = (size_t)(u - s) + ul;
				} else {
					rm_log_add_pair(ll, key, klen, t, tl, v);
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
				if ((key = rm_log_make_key(ll, kw, kl, 1, &klen)))
					rm_log_add_pair(ll, key, klen, lonely, lonely_len, lonely_v);
				lonely = NULL;
				nw = 0;
				continue;
			}
			if (tl == 4 && !memcmp(t, "over", 4)) { /* the number after it is a count */
				nw = 0;
				continue;
			}
			if (lonely && rate_unit(t, ul)) { /* a rate after its number */
				const char *kw[1] = {t};
				size_t kl[1] = {ul};
				if ((key = rm_log_make_key(ll, kw, kl, 1, &klen)))
					rm_log_add_pair(ll, key, klen, lonely, lonely_len, lonely_v);
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
void rm_log_pairs(struct log_line *ll, const char *s, size_t n)
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
size_t rm_log_python_json(struct log_line *ll, const char *s, size_t n)
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

void rm_log_add_number(struct log_line *ll, const char *key, int64_t v)
{
	if (ll->nnum == (int)(sizeof(ll->numbuf) / sizeof(ll->numbuf[0])))
		return;
	char *buf = ll->numbuf[ll->nnum++];
	int n = snprintf(buf, sizeof(ll->numbuf[0]), "%lld", (long long)v);
	rm_log_add_pair(ll, key, strlen(key), buf, (size_t)n, (double)v);
}

/* ---- counters in brackets ------------------------------------------------ */

/* "[ 50/ 300]", "[1]", "[0.0001]" at s[i]: a number, or two with a '/',
 * blanks anywhere inside. Writes them without blanks to buf (bl bytes) and
 * sets *end past the ']'; 0 when s[i] opens anything else. */
static int numeric_group(const char *s, size_t i, size_t n, size_t *end, char *buf, size_t *bl)
{
	size_t k = 0;
	int slash = 0, digits = 0;
	for (i++; i < n && k < 40; i++) {
		char c = s[i];
		if (c == ']') {
			*end = i + 1;
			*bl = k;
			return digits && buf[k - 1] != '/';
		}
		if (c == ' ' || c == '\t')
			continue;
		if (c == '(' && slash && buf[k - 1] != '/') { /* timm's "[  50/1251 (  4%)]": the share done */
			const char *close = memchr(s + i, ')', n - i < 16 ? n - i : 16);
			if (!close || close + 1 >= s + n || close[1] != ']')
				return 0;
			*end = (size_t)(close - s) + 2;
			*bl = k;
			return 1;
		}
		if (c == '-' && digits && !slash && k && isdigit((unsigned char)buf[k - 1]) && i + 1 < n &&
		    isdigit((unsigned char)s[i + 1])) {
			k = 0; /* "[0-200]" (MXNet's Speedometer): the batches up to 200, the last the record's */
			continue;
		}
		if (c == '/' && digits && !slash && buf[k - 1] != '/')
			slash = 1;
		else if (isdigit((unsigned char)c))
			digits = 1;
		else if (!(c == '.' || ((c == '-' || c == '+') && !k)))
			return 0;
		buf[k++] = c;
	}
	return 0;
}

/* "[15 | 6.02]": a counter and the seconds since the start, as the GPT-2
 * fine-tuning scripts print them; into buf as " counter 15 elapsed 6.02 ". */
int rm_log_counter_time(const char *s, size_t i, size_t n, size_t *end, char *buf, size_t *bl)
{
	size_t j = i + 1, d0, d1, t0, t1;
	while (j < n && s[j] == ' ')
		j++;
	for (d0 = j; j < n && isdigit((unsigned char)s[j]);)
		j++;
	d1 = j;
	while (j < n && s[j] == ' ')
		j++;
	if (d1 == d0 || d1 - d0 > 15 || j >= n || s[j] != '|')
		return 0;
	for (j++; j < n && s[j] == ' ';)
		j++;
	for (t0 = j; j < n && (isdigit((unsigned char)s[j]) || s[j] == '.');)
		j++;
	t1 = j;
	while (j < n && s[j] == ' ')
		j++;
	if (t1 == t0 || t1 - t0 > 20 || j >= n || s[j] != ']')
		return 0;
	*bl = (size_t)snprintf(buf, 48, " counter %.*s elapsed %.*s ", (int)(d1 - d0), s + d0, (int)(t1 - t0), s + t0);
	*end = j + 1;
	return 1;
}

/* Does the text before out[o] end in a number ("0.52 ", "5.26s ")? */
static int after_number(const char *out, size_t o)
{
	while (o && (out[o - 1] == ' ' || out[o - 1] == '\t'))
		o--;
	size_t e = o;
	while (o && !isspace((unsigned char)out[o - 1]) && out[o - 1] != '(' && out[o - 1] != '=' && out[o - 1] != ':')
		o--;
	double v;
	return e > o && rm_log_number(out + o, e - o, &v);
}

/* "(0.61)", "(65.81%)" at s[i]: sets *end past the ')'. */
static int paren_number(const char *s, size_t i, size_t n, size_t *end)
{
	const char *close = memchr(s + i, ')', n - i < 40 ? n - i : 40);
	double v;
	size_t a = i + 1; /* "( 0.1)": timm pads the mean to align it */
	while (close && a < (size_t)(close - s) && s[a] == ' ')
		a++;
	if (!close || close == s + a || memchr(s + a, ' ', (size_t)(close - s) - a))
		return 0;
	*end = (size_t)(close - s) + 1;
	return rm_log_number(s + a, (size_t)(close - s) - a, &v);
}

static void put(char *out, size_t *o, const char *s, size_t n)
{
	memcpy(out + *o, s, n);
	*o += n;
}

/* "[Epoch 1/10]", "[D loss: 0.69]": a bracket of words and numbers
 * (a letter first, no bracket inside, a blank, a digit) holds fields,
 * not a tag ("[INFO]", "[train.py:120]"); *end is past its ']'. */
int rm_log_word_group(const char *s, size_t i, size_t n, size_t *end)
{
	if (i + 1 >= n || !isalpha((unsigned char)s[i + 1]))
		return 0;
	int digit = 0, gap = 0;
	for (size_t j = i + 1; j < n; j++) {
		if (s[j] == ']') {
			*end = j + 1;
			return digit && gap;
		}
		if (s[j] == '[')
			return 0;
		digit |= isdigit((unsigned char)s[j]) != 0;
		gap |= s[j] == ' ';
	}
	return 0;
}

/* A scalar's repr, "tensor(2.31, device='cuda:0', grad_fn=<DivBackward0>)"
 * or "np.float64(0.5)", whose name out ends with and whose '(' is at s[i]:
 * the name is taken back from out and the number put in its place; *end
 * is past the ')'. */
static int scalar_repr(const char *s, size_t i, size_t n, char *out, size_t *o, size_t *end)
{
	static const char *const names[] = {"tensor", "np.float64", "np.float32", "np.int64", "array"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		size_t nl = strlen(names[k]);
		if (*o < nl || memcmp(out + *o - nl, names[k], nl) ||
		    (*o > nl && (isalnum((unsigned char)out[*o - nl - 1]) || out[*o - nl - 1] == '.')))
			continue;
		size_t j = i + 1, st;
		while (j < n && (s[j] == ' ' || s[j] == '['))
			j++;
		for (st = j; j < n && (isdigit((unsigned char)s[j]) || strchr("+-.eE", s[j]));)
			j++;
		const char *close = memchr(s + j, ')', n - j);
		if (j == st || !close)
			return 0;
		*o -= nl;
		memcpy(out + *o, s + st, j - st);
		*o += j - st;
		*end = (size_t)(close - s) + 1;
		return 1;
	}
	return 0;
}

const char *rm_log_normalize(struct log_line *ll, const char *s, size_t *np)
{
	size_t n = *np, o = 0, i = 0;
	if (!memchr(s, '[', n) && !memchr(s, '(', n))
		return s;
	if (ll->normcap < 2 * n + 64)
		ll->norm = rm_xrealloc(ll->norm, ll->normcap = 2 * n + 64);
	char *out = ll->norm;
	int changed = 0, prev_group = 0;
	/* "[       7 Epoch:[ 0/25]": a counter opened and never closed */
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	if (i < n && s[i] == '[') {
		size_t j = i + 1, d;
		while (j < n && s[j] == ' ')
			j++;
		for (d = j; d < n && isdigit((unsigned char)s[d]);)
			d++;
		const char *cl = d < n ? memchr(s + d, ']', n - d) : NULL,
		           *op = d < n ? memchr(s + d, '[', n - d) : NULL;
		size_t w = d;
		while (w < n && s[w] == ' ')
			w++;
		if (d > j && w > d && w < n && isalpha((unsigned char)s[w]) && (!cl || (op && op < cl))) {
			put(out, &o, "counter ", 8);
			put(out, &o, s + j, d - j);
			i = d, changed = 1;
		}
	}
	while (i < n) {
		char c = s[i], buf[48];
		size_t end, bl;
		if (c == '[' && rm_log_counter_time(s, i, n, &end, buf, &bl)) {
			put(out, &o, buf, bl); /* "[15 | 6.02] loss=2.81" (nshepperd's gpt-2) */
			i = end, prev_group = 0, changed = 1;
			continue;
		}
		if (c == '[' && numeric_group(s, i, n, &end, buf, &bl)) {
			size_t e3, bl3;
			char b3[48];
			if (end + 1 < n && s[end] == '/' && s[end + 1] == '[' && !memchr(buf, '/', bl) &&
			    numeric_group(s, end + 1, n, &e3, b3, &bl3) && !memchr(b3, '/', bl3) &&
			    bl + 1 + bl3 < sizeof(buf)) {
				buf[bl++] = '/'; /* "Batch [0019]/[0149]" (GluonCV): a count and its total */
				memcpy(buf + bl, b3, bl3);
				bl += bl3;
				end = e3;
			}
			/* a second group counts within the first ("Epoch [1][50/300]",
			 * "Epoch: 0 [100/2000]"); two groups opening the line with no
			 * word, "[0/25][10/469] Loss_D: ..." (PyTorch's dcgan), are the
			 * epoch and the batch within it */
			int within = prev_group || after_number(out, o);
			size_t e2, bl2;
			char b2[48];
			int lead = !within && strspn(out, " \t") >= o && end < n && s[end] == '[' &&
			           numeric_group(s, end, n, &e2, b2, &bl2) && memchr(buf, '/', bl);
			if (lead)
				put(out, &o, " epoch ", 7);
			else
				put(out, &o, within ? " iter " : " ", within ? 6 : 1);
			put(out, &o, buf, bl);
			out[o++] = ' ';
			i = end, prev_group = 1, changed = 1;
			continue;
		}
		if (c == '[' && rm_log_word_group(s, i, n, &end)) {
			out[o++] = ' ';
			put(out, &o, s + i + 1, end - i - 2);
			out[o++] = ' ';
			i = end, prev_group = 0, changed = 1;
			continue;
		}
		if (c == '(' && scalar_repr(s, i, n, out, &o, &end)) {
			i = end, changed = 1; /* "loss=tensor(2.31, device='cuda:0')": the number */
			continue;
		}
		if (c == '(' && paren_number(s, i, n, &end) && after_number(out, o)) {
			memset(out + o, ' ', end - i); /* the value read again: a mean since the start */
			o += end - i;
			i = end, changed = 1;
			continue;
		}
		/* the text up to the next bracket, copied whole */
		size_t e = i + 1;
		while (e < n && s[e] != '[' && s[e] != '(')
			e++;
		for (size_t j = i; prev_group && j < e; j++)
			if (!isspace((unsigned char)s[j]) && s[j] != ':')
				prev_group = 0;
		put(out, &o, s + i, e - i);
		i = e;
	}
	if (!changed)
		return s;
	out[o] = 0;
	*np = o;
	return out;
}

/* "12:\t0.583" (NVIDIA WaveGlow's print of an iteration and its loss), "12
 * 0.583": a line of an integer counter and one number with a fraction,
 * nothing else. The counter is the step; the number is kept unnamed, and
 * is the loss only where the file names none (rm_infer). */
void rm_log_bare_pair(struct log_line *ll, const char *s, size_t n)
{
	size_t i = 0, a, b;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	a = i;
	while (i < n && isdigit((unsigned char)s[i]))
		i++;
	if (i == a || i - a > 15)
		return;
	size_t ae = i;
	if (i < n && (s[i] == ':' || s[i] == ','))
		i++;
	if (i == n || (!isspace((unsigned char)s[i]) && i == ae))
		return;
	while (i < n && isspace((unsigned char)s[i]))
		i++;
	b = i;
	double step, v;
	if (b == n || !memchr(s + b, '.', n - b) || memchr(s + b, ' ', n - b) || memchr(s + b, '\t', n - b) ||
	    !rm_log_number(s + a, ae - a, &step) || !rm_log_number(s + b, n - b, &v) || !isfinite(v))
		return;
	rm_log_add_number(ll, "step", (int64_t)step);
	rm_log_add_pair(ll, RM_GUESS_UNNAMED, strlen(RM_GUESS_UNNAMED), s + b, n - b, v);
}
