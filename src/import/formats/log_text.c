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

int rm_log_key_start(int c)
{
	return isalpha(c) || c == '_' || c == '(';
}

/* Parses a number as logs write it: "1,702,559", "221.07s", "410ms",
 * "12.34%", "100/500000" (the first), "7.45E+00", "[0.0001]", "001".
 * Returns 1 and *out, or 0. */
int rm_log_number(const char *s, size_t n, double *out)
{
	char buf[64];
	size_t k = 0, i = 0;
	/* A diverged loss: "nan", "inf", "-inf" (Python's and torch's). */
	{
		size_t j = n && (s[0] == '-' || s[0] == '+'), m = n;
		while (m > j && strchr(",;", s[m - 1]))
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

int rm_log_has_word(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);
	for (size_t i = 0; i + wl <= n; i++)
		if (tolower((unsigned char)s[i]) == w[0] && !strncasecmp(s + i, w, wl))
			return 1;
	return 0;
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
