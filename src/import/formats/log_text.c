/*
 * log_text.c - what the console-log reader reads a line's text with:
 * numbers as logs write them, words and keys, escape sequences, and which
 * lines continue a record or could have been one. See log_internal.h.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log_internal.h"
#include "runmon/parse.h"

#define SPACES(x) [' '] = (x), ['\t'] = (x), ['\n'] = (x), ['\v'] = (x), ['\f'] = (x), ['\r'] = (x)
#define RANGE10(x, c0)                                                                                                 \
	[c0] = (x), [c0 + 1] = (x), [c0 + 2] = (x), [c0 + 3] = (x), [c0 + 4] = (x), [c0 + 5] = (x), [c0 + 6] = (x),    \
	[c0 + 7] = (x), [c0 + 8] = (x), [c0 + 9] = (x)
#define LETTERS(c0)                                                                                                    \
	RANGE10(RM_LOG_KEY, c0), RANGE10(RM_LOG_KEY, c0 + 10), [c0 + 20] = RM_LOG_KEY, [c0 + 21] = RM_LOG_KEY,         \
	                                                             [c0 + 22] = RM_LOG_KEY, [c0 + 23] = RM_LOG_KEY,   \
	                                                             [c0 + 24] = RM_LOG_KEY, [c0 + 25] = RM_LOG_KEY

const unsigned char rm_log_class[256] = {
    SPACES(RM_LOG_SPACE), LETTERS('a'),        LETTERS('A'),
    ['_'] = RM_LOG_KEY,   ['('] = RM_LOG_KEY,  ['|'] = RM_LOG_SEP,
    [','] = RM_LOG_SEP,   [':'] = RM_LOG_SEP,  RANGE10(RM_LOG_DIGIT | RM_LOG_NUM0, '0'),
    ['-'] = RM_LOG_NUM0,  ['+'] = RM_LOG_NUM0, ['.'] = RM_LOG_NUM0,
    ['['] = RM_LOG_NUM0,  ['"'] = RM_LOG_NUM0, ['\''] = RM_LOG_NUM0,
};

/* Parses a number as logs write it: "1,702,559", "221.07s", "410ms",
 * "12.34%", "100/500000" (the first), "7.45E+00", "[0.0001]", "001".
 * Returns 1 and *out, or 0. */
int rm_log_number(const char *s, size_t n, double *out)
{
	char buf[64];
	size_t k = 0, i = 0;
	/* Most tokens of a line are words: out at once. */
	unsigned char c0 = n ? (unsigned char)s[0] : 0;
	if (!rm_log_num_start(c0) && (c0 | 0x20) != 'n' && (c0 | 0x20) != 'i')
		return 0;
	/* A diverged loss: "nan", "inf", "-inf" (Python's and torch's). */
	if (!(rm_log_class[c0] & RM_LOG_DIGIT)) {
		size_t j = n && (s[0] == '-' || s[0] == '+'), m = n;
		while (m > j && (s[m - 1] == ',' || s[m - 1] == ';'))
			m--;
		if ((m - j == 3 && !strncasecmp(s + j, "nan", 3)) || (m - j == 3 && !strncasecmp(s + j, "inf", 3)) ||
		    (m - j == 8 && !strncasecmp(s + j, "infinity", 8))) {
			*out = (s[j] | 0x20) == 'n' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
			return 1;
		}
	}
	while (i < n && (s[i] == '[' || s[i] == '"' || s[i] == '\''))
		i++;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		buf[k++] = s[i++];
	size_t digits = 0, group = 0;
	int commas = 0, dot = 0;
	for (; i < n && k < sizeof(buf) - 8; i++) {
		char c = s[i];
		if (isdigit((unsigned char)c)) {
			buf[k++] = c, digits++, group++;
		} else if (c == ',' && !dot && group >= 1 && group <= 3 && (!commas || group == 3) && n - i > 3 &&
		           isdigit((unsigned char)s[i + 1]) && isdigit((unsigned char)s[i + 2]) &&
		           isdigit((unsigned char)s[i + 3]) && (n - i == 4 || !isdigit((unsigned char)s[i + 4]))) {
			commas = 1, group = 0; /* a thousands separator: 1,702,559 */
		} else if (c == '.' && !dot) {
			buf[k++] = c, dot = 1;
		} else if ((c == 'e' || c == 'E') && digits && i + 1 < n &&
		           (isdigit((unsigned char)s[i + 1]) ||
		            ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < n && isdigit((unsigned char)s[i + 2])))) {
			buf[k++] = c;
			buf[k++] = s[++i];
			while (i + 1 < n && isdigit((unsigned char)s[i + 1]) && k < sizeof(buf) - 1)
				buf[k++] = s[++i];
			i++;
			break;
		} else {
			break;
		}
	}
	if (!digits)
		return 0;
	/* What may follow: a unit, a total, closing punctuation; not more text
	 * glued to digits such as a date (2025-03-02) or a time (09:12:40). */
	if (i < n) {
		char c = s[i];
		if (c == '-' || (c == ':' && i + 1 < n && isdigit((unsigned char)s[i + 1])) || c == '.' || c == ',')
			if (!(c == ',' && i + 1 == n) && !(c == '.' && i + 1 == n))
				return 0;
	}
	buf[k] = 0;
	return rm_parse_double(buf, k, out);
}

/* Does the word x hold byte b? (a zero byte of x ^ b..b, found the way of
 * "Bit Twiddling Hacks": (y - 0x01..01) & ~y & 0x80..80 is nonzero.) */
static inline uint64_t word_has(uint64_t x, unsigned char b)
{
	uint64_t y = x ^ (0x0101010101010101u * b);
	return (y - 0x0101010101010101u) & ~y & 0x8080808080808080u;
}

/* The index of the next '|', ',' or ':' in s[i..n), or n: eight bytes a
 * step where none is (a line's fields are long beside its separators). */
size_t rm_log_next_sep(const char *s, size_t i, size_t n)
{
	for (uint64_t w; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		if (word_has(w, '|') | word_has(w, ',') | word_has(w, ':'))
			break;
	}
	while (i < n && !rm_log_sep_char((unsigned char)s[i]))
		i++;
	return i;
}

/* A log level ("INFO", "WARNING:") is no key word. */
int rm_log_word_in(const char *w, size_t n, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strlen(list[i]) == n && !strncasecmp(w, list[i], n))
			return 1;
	return 0;
}

size_t rm_log_eval_prefix(const char *key, size_t klen)
{
	static const char *const prefixes[] = {"val_", "valid_", "eval_", "validation_", "test_", NULL};
	for (size_t p = 0; prefixes[p]; p++) {
		size_t pl = strlen(prefixes[p]);
		if (klen > pl && !strncasecmp(key, prefixes[p], pl))
			return pl;
	}
	return 0;
}

int rm_log_is_level(const char *t, size_t n)
{
	static const struct {
		const char *s;
		size_t n;
	} levels[] = {{"INFO", 4},  {"DEBUG", 5},    {"WARNING", 7}, {"WARN", 4},
	              {"ERROR", 5}, {"CRITICAL", 8}, {"INFO:", 5}};
	if (n < 4 || n > 8 || t[0] < 'C' || t[0] > 'W') /* upper case words only */
		return 0;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (levels[i].n == n && !memcmp(t, levels[i].s, n))
			return 1;
	return 0;
}

int rm_log_triple(const char *s, size_t n, double v[3])
{
	size_t i = 0;
	while (n && (s[n - 1] == ';' || s[n - 1] == ','))
		n--;
	for (int k = 0; k < 3; k++) {
		size_t st = i;
		while (i < n && ((rm_log_class[(unsigned char)s[i]] & RM_LOG_DIGIT) || s[i] == '.'))
			i++;
		if (i == st || !rm_parse_double(s + st, i - st, &v[k]) || (k < 2 ? i == n || s[i] != '/' : i != n))
			return 0;
		i++;
	}
	return 1;
}

int rm_log_has_word(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);
	if (wl > n)
		return 0;
	/* w is lower case: its first byte, and the upper case of a letter, are
	 * looked for with memchr (this runs over every line several times) */
	unsigned char lo = (unsigned char)w[0], up = (unsigned char)toupper(lo);
	const char *end = s + n - wl + 1;
	/* each memchr starts past the last one's find, so a line is read
	 * about twice however often the letter recurs (it was quadratic) */
	const char *a = memchr(s, lo, (size_t)(end - s)), *b = up != lo ? memchr(s, up, (size_t)(end - s)) : NULL;
	for (;;) {
		const char *at = a && (!b || a < b) ? a : b;
		if (!at)
			return 0;
		if (!strncasecmp(at, w, wl))
			return 1;
		if (at == a)
			a = memchr(at + 1, lo, (size_t)(end - at - 1));
		else
			b = memchr(at + 1, up, (size_t)(end - at - 1));
	}
}

/* Could an object that does not parse have been a training record? Only
 * a short one with a loss and a step among its keys: a config dump
 * (fairseq's hydra config as a Python dict, with bare words for values)
 * mentions 'loss' among hundreds of settings, and is no record. */
int rm_log_has_key(const char *obj, size_t n, const char *name)
{
	size_t kl = strlen(name);
	for (const char *p = obj; (p = memmem(p, n - (size_t)(p - obj), name, kl)); p += kl) {
		const char *q = p + kl;
		if (p == obj || (p[-1] != '"' && p[-1] != '\'') || q >= obj + n || *q != p[-1])
			continue;
		for (q++; q < obj + n && *q == ' '; q++)
			;
		if (q < obj + n && *q == ':')
			return 1;
	}
	return 0;
}

int rm_log_record_like(const char *obj, size_t n)
{
	if (n > 2000 || !(rm_log_has_key(obj, n, "loss") || rm_log_has_key(obj, n, "train_loss")))
		return 0;
	static const char *const steps[] = {"step", "num_updates", "iter", "iteration", "global_step", "epoch", NULL};
	for (int i = 0; steps[i]; i++)
		if (rm_log_has_key(obj, n, steps[i]))
			return 1;
	return 0;
}

/* Escape sequences (a notebook's or a terminal's colours, ESC [ ... m,
 * and the other CSI and OSC forms) are removed in place; returns the new
 * length. */
size_t rm_log_strip_escapes(char *s, size_t n)
{
	char *e = memchr(s, 0x1b, n);
	if (!e)
		return n;
	size_t o = (size_t)(e - s);
	for (size_t i = o; i < n;) {
		if (s[i] != 0x1b) {
			s[o++] = s[i++];
			continue;
		}
		i++;
		if (i < n && s[i] == '[') { /* CSI: parameters, then a final byte @..~ */
			for (i++; i < n && !(s[i] >= 0x40 && s[i] <= 0x7e); i++)
				;
			i += i < n;
		} else if (i < n && s[i] == ']') { /* OSC: up to BEL or ESC \ */
			for (i++; i < n && s[i] != 0x07 && !(s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\'); i++)
				;
			i += i < n ? (s[i] == 0x07 ? 1 : 2) : 0;
		} else {
			i += i < n; /* a two-byte sequence */
		}
	}
	return o;
}

/* An indented line of one name=value pair ("    train/CrossEntropyLoss=3.2",
 * "    System/Peak GPU Memory (MB)=101,291"): a field of the record above. */
int rm_log_continuation(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i < 2 || i == n || !rm_log_key_start((unsigned char)s[i]))
		return 0;
	const char *eq = memchr(s + i, '=', n - i);
	if (!eq || memchr(eq + 1, '=', n - (size_t)(eq + 1 - s)) || memmem(s + i, n - i, " | ", 3))
		return 0;
	if (memmem(s + i, (size_t)(eq - s) - i, ": ", 2))
		return 0; /* "(embed): Embedding(8, padding_idx=1)": a repr */
	double v;
	size_t vl = n - (size_t)(eq + 1 - s);
	while (vl && isspace((unsigned char)eq[1 + vl - 1]))
		vl--;
	for (size_t j = 0; j < vl; j++) /* the value is a number and nothing else */
		if (!isdigit((unsigned char)eq[1 + j]) && !strchr(".,eE+-", eq[1 + j]))
			return 0;
	return rm_log_number(eq + 1, vl, &v);
}

/* Words that say what a number counts ("20766.00 frames"): the number is
 * that count. */
int rm_log_count_unit(const char *t, size_t n)
{
	/* icefall's "over 52.00 utterances", OpenNMT's "184 sec", PyTorch's
	 * word_language_model "500/ 2983 batches" (the count of the epoch's) */
	static const char *const units[] = {"frames", "utterances", "sec", "batches", NULL};
	for (int i = 0; units[i]; i++)
		if (strlen(units[i]) == n && !memcmp(t, units[i], n))
			return 1;
	return 0;
}

/* Groups of pairs in brackets, as icefall writes a batch's figures,
 * "loss[loss=1.047, simple_loss=..., over 18145.00 frames. ...]": the
 * brackets go and the pairs are the line's. A group named tot_... is a
 * running average over the epoch, not the batch's: it goes whole. A rank
 * prefix, "(3/4)" before the record or torchrun's "[rank3]:", is blanked
 * and returned; -1 when there is none. Edits s in place. */
int64_t rm_log_open_groups(char *s, size_t n)
{
	int64_t rank = -1;
	const char *paren = memchr(s, '(', n), *bracket = memchr(s, '[', n), *eq = NULL;
	char *close = NULL;
	int close_known = 0, eq_known = 0;
	for (size_t i = 0; i < n; i++) {
		/* only a '(' or a '[' opens anything: skip to the nearer (memchr) */
		if (paren && paren < s + i)
			paren = memchr(s + i, '(', n - i);
		if (bracket && bracket < s + i)
			bracket = memchr(s + i, '[', n - i);
		if (!paren && !bracket)
			break;
		i = (size_t)((paren && (!bracket || paren < bracket) ? paren : bracket) - s);
		if (s[i] == '(' && (i == 0 || isspace((unsigned char)s[i - 1])) && i + 4 < n &&
		    isdigit((unsigned char)s[i + 1])) {
			size_t j = i + 1;
			int64_t r = 0, w = 0;
			while (j < n && isdigit((unsigned char)s[j]) && r < 1000000)
				r = r * 10 + (s[j++] - '0');
			if (j < n && s[j] == '/' && j + 1 < n && isdigit((unsigned char)s[j + 1])) {
				for (j++; j < n && isdigit((unsigned char)s[j]) && w < 1000000; j++)
					w = w * 10 + (s[j] - '0');
				if (j < n && s[j] == ')' && r < w && rank < 0) {
					rank = r;
					memset(s + i, ' ', j + 1 - i);
				}
			}
			continue;
		}
		if (s[i] == '[' && n - i > 6 && !strncmp(s + i, "[rank", 5) && isdigit((unsigned char)s[i + 5])) {
			size_t j = i + 5;
			int64_t r = 0;
			while (j < n && isdigit((unsigned char)s[j]) && r < 1000000)
				r = r * 10 + (s[j++] - '0');
			if (j < n && s[j] == ']' && rank < 0) {
				rank = r;
				memset(s + i, ' ', j + 1 - i + (j + 1 < n && s[j + 1] == ':'));
			}
			continue;
		}
		if (s[i] != '[' || i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_'))
			continue;
		/* the next ']' and '=' from here, looked for again only once
		 * passed (or blanked): a line of many "name[" stays linear */
		if (!close_known || (close && (close < s + i || *close != ']')))
			close = memchr(s + i, ']', n - i), close_known = 1;
		if (!eq_known || (eq && (eq < s + i || *eq != '=')))
			eq = memchr(s + i, '=', n - i), eq_known = 1;
		if (!close || !eq || eq > close)
			continue;
		size_t name = i;
		while (name > 0 && (isalnum((unsigned char)s[name - 1]) || s[name - 1] == '_'))
			name--;
		size_t end = (size_t)(close - s) + 1;
		if (i - name >= 4 && !strncmp(s + name, "tot_", 4)) {
			memset(s + name, ' ', end - name);
		} else {
			memset(s + name, ' ', i + 1 - name); /* "loss[" */
			*close = ' ';
		}
		i = end - 1;
	}
	return rank;
}
