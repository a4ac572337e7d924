/*
 * log_pattern.c - the console-log reader's --pattern: "step:{step}
 * loss:{loss}" compiled into literals and field names, a literal matched
 * with blanks read flexibly, and a line matched against the whole.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log_internal.h"
#include "runmon/import.h"

/* ---- --pattern ------------------------------------------------------------
 * "step:{step} loss:{loss}": literal text with named fields. A run of
 * blanks in the pattern matches any run of blanks (or none); a field takes
 * the text up to the pattern's next non-blank character, a blank or the end,
 * and is a number when it reads as one. The pattern may match anywhere in a
 * line; a line it does not match holds no record. */

int rm_log_pattern_compile(const char *p, struct pattern *pt, char *why, size_t whylen)
{
	memset(pt, 0, sizeof(*pt));
	const char *lit = p;
	for (;;) {
		const char *open = strchr(lit, '{');
		const char *close = open ? strchr(open, '}') : NULL;
		if (open ? memchr(lit, '}', (size_t)(open - lit)) != NULL : strchr(lit, '}') != NULL)
			return snprintf(why, whylen, "a '}' without its '{'"), -1;
		if (!open) {
			pt->lit[pt->n] = lit;
			pt->litlen[pt->n] = strlen(lit);
			break;
		}
		if (!close)
			return snprintf(why, whylen, "a '{' without its '}'"), -1;
		if (pt->n == MAX_PATTERN_FIELDS)
			return snprintf(why, whylen, "more than %d fields", MAX_PATTERN_FIELDS), -1;
		size_t nl = (size_t)(close - open - 1);
		if (!nl || nl > RM_LOG_MAX_KEY - 8 ||
		    strspn(open + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") < nl)
			return snprintf(why, whylen, "'{%.*s}' is not a field name (letters, digits, _ . / -)", (int)nl,
			                open + 1),
			       -1;
		if (pt->n && open == lit)
			return snprintf(why, whylen, "fields '%.*s' and '%.*s' need text between them",
			                (int)pt->namelen[pt->n - 1], pt->name[pt->n - 1], (int)nl, open + 1),
			       -1;
		pt->lit[pt->n] = lit;
		pt->litlen[pt->n] = (size_t)(open - lit);
		pt->name[pt->n] = open + 1;
		pt->namelen[pt->n] = nl;
		pt->n++;
		lit = close + 1;
	}
	if (!pt->n)
		return snprintf(why, whylen, "no {field} in the pattern"), -1;
	return 0;
}

int rm_log_pattern_check(const char *pattern, char *why, size_t whylen)
{
	struct pattern pt;
	return rm_log_pattern_compile(pattern, &pt, why, whylen);
}

/* Matches literal l at s[*pos..n), blanks flexibly; moves *pos past it. */
int rm_log_literal_at(const char *l, size_t ll, const char *s, size_t n, size_t *pos)
{
	size_t i = 0, p = *pos;
	while (i < ll) {
		if (isspace((unsigned char)l[i])) {
			while (i < ll && isspace((unsigned char)l[i]))
				i++;
			while (p < n && isspace((unsigned char)s[p]))
				p++;
			continue;
		}
		if (p >= n || s[p] != l[i])
			return 0;
		i++, p++;
	}
	*pos = p;
	return 1;
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
		const char *key = rm_log_make_key(ll, w, wl, 1, &klen);
		if (!key)
			return 0;
		if (rm_log_number(s + st, pos - st, &v))
			rm_log_add_pair(ll, key, klen, s + st, pos - st, v);
		else
			rm_log_add_text(ll, key, klen, s + st, pos - st);
		pos = memo->lit_end[f];
	}
	return 1;
}

int rm_log_pattern_parse(const struct pattern *pt, struct log_line *ll, const char *s, size_t n)
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
			return 1;
	}
	rm_row_clear(&ll->row);
	return 0;
}
