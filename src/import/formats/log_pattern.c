/*
 * log_pattern.c - the console-log reader's --pattern: "step:{step}
 * loss:{loss}" compiled into literals and field names, and a literal
 * matched with blanks read flexibly. log.c matches a line with them.
 */
#include <ctype.h>
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
