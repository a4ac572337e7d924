/*
 * row.c - field list storage and number conversion for struct rm_row.
 */
#include "runmon/parse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rm_row_init(struct rm_row *row)
{
	memset(row, 0, sizeof(*row));
}

void rm_row_release(struct rm_row *row)
{
	free(row->f);
	free(row->arena);
	free(row->nums);
	free(row->spans);
	rm_row_init(row);
}

void rm_row_clear(struct rm_row *row)
{
	row->n = 0;
	row->alen = 0;
	row->nn = 0;
	row->ns = 0;
}

struct rm_field *rm_row_add(struct rm_row *row, const char *key, size_t klen, int copy_key)
{
	if (row->n == row->cap) {
		row->cap = row->cap ? row->cap * 2 : 32;
		row->f = rm_xrealloc(row->f, row->cap * sizeof(*row->f));
	}
	struct rm_field *f = &row->f[row->n++];
	memset(f, 0, sizeof(*f));
	f->klen = (uint32_t)klen;
	f->key = key;
	if (copy_key) {
		/* Keys are fixed up to arena addresses once parsing is done
		 * (rm_row_fix_keys), since the arena may move while growing. */
		if (row->alen + klen + 1 > row->acap) {
			row->acap = (row->alen + klen + 1) * 2;
			row->arena = rm_xrealloc(row->arena, row->acap);
		}
		memcpy(row->arena + row->alen, key, klen);
		row->arena[row->alen + klen] = '\0';
		f->key = NULL;
		f->key_in_arena = 1;
		f->koff = (uint32_t)row->alen;
		row->alen += klen + 1;
	}
	return f;
}

void rm_row_fix_keys(struct rm_row *row)
{
	for (size_t i = 0; i < row->n; i++)
		if (row->f[i].key_in_arena)
			row->f[i].key = row->arena + row->f[i].koff;
}

const struct rm_field *rm_row_get(const struct rm_row *row, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < row->n; i++)
		if (row->f[i].klen == klen && !memcmp(row->f[i].key, key, klen))
			return &row->f[i];
	return NULL;
}

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path (W. D. Clinger, "How to read floating point numbers
 * accurately", PLDI 1990): when the decimal mantissa fits in 53 bits and
 * |exponent| <= 22, one IEEE multiply or divide of two exact values is
 * correctly rounded. Everything else goes to strtod. */
int rm_parse_double(const char *s, size_t n, double *out)
{
	const char *p = s, *end = s + n;
	int neg = 0;
	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (end - p == 3 && !memcmp(p, "NaN", 3) && !neg) {
		*out = NAN;
		return 1;
	}
	if (end - p == 8 && !memcmp(p, "Infinity", 8)) {
		*out = neg ? -INFINITY : INFINITY;
		return 1;
	}
	uint64_t mant = 0;
	int digits = 0, exp10 = 0, any = 0;
	while (p < end && *p >= '0' && *p <= '9') {
		if (digits < 19)
			mant = mant * 10 + (uint64_t)(*p - '0');
		else
			exp10++;
		if (mant)
			digits++;
		any = 1;
		p++;
	}
	if (p < end && *p == '.') {
		p++;
		while (p < end && *p >= '0' && *p <= '9') {
			if (digits < 19) {
				mant = mant * 10 + (uint64_t)(*p - '0');
				exp10--;
				if (mant)
					digits++;
			}
			any = 1;
			p++;
		}
	}
	if (!any)
		return 0;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0, e = 0, edig = 0;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		while (p < end && *p >= '0' && *p <= '9') {
			if (e < 10000)
				e = e * 10 + (*p - '0');
			edig = 1;
			p++;
		}
		if (!edig)
			return 0;
		exp10 += eneg ? -e : e;
	}
	if (p != end)
		return 0;
	if (digits <= 15 && mant < (1ull << 53) && exp10 >= -22 && exp10 <= 22) {
		double v = (double)mant;
		v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
		*out = neg ? -v : v;
		return 1;
	}
	char tmp[128];
	if (n >= sizeof(tmp)) {
		char *big = rm_xstrndup(s, n);
		*out = strtod(big, NULL);
		free(big);
	} else {
		memcpy(tmp, s, n);
		tmp[n] = '\0';
		*out = strtod(tmp, NULL);
	}
	return 1;
}

/* A CSV cell may spell non-finite values as Python, pandas or Go print them. */
static int parse_cell(const char *s, size_t n, double *out)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == 0)
		return 0;
	if (*s == '+') {
		s++;
		n--;
	}
	if (rm_parse_double(s, n, out))
		return 1;
	int neg = n && *s == '-';
	const char *w = s + neg;
	size_t wn = n - (size_t)neg;
	if ((wn == 3 && !strncasecmp(w, "nan", 3)) && !neg) {
		*out = NAN;
		return 1;
	}
	if ((wn == 3 && !strncasecmp(w, "inf", 3)) || (wn == 8 && !strncasecmp(w, "infinity", 8))) {
		*out = neg ? -INFINITY : INFINITY;
		return 1;
	}
	/* Leading-dot or trailing-dot decimals (".5", "5.") that JSON forbids. */
	char tmp[64];
	if (n < sizeof(tmp)) {
		char *endp;
		memcpy(tmp, s, n);
		tmp[n] = '\0';
		double v = strtod(tmp, &endp);
		if (endp == tmp + n) {
			*out = v;
			return 1;
		}
	}
	return -1;
}

int rm_field_num(const struct rm_field *f, double *out)
{
	if (f->have_num) {
		*out = f->num;
		return 1;
	}
	switch (f->type) {
	case RM_F_NUM: return rm_parse_double(f->raw, f->rlen, out) ? 1 : -1;
	case RM_F_STR:
		/* W&B writes non-finite values as strings in JSON-typed fields. */
		if (f->rlen == 3 && !memcmp(f->raw, "NaN", 3)) {
			*out = NAN;
			return 1;
		}
		if (f->rlen == 8 && !memcmp(f->raw, "Infinity", 8)) {
			*out = INFINITY;
			return 1;
		}
		if (f->rlen == 9 && !memcmp(f->raw, "-Infinity", 9)) {
			*out = -INFINITY;
			return 1;
		}
		/* Loggers that format every value (fairseq's JSON lines) quote
		 * numbers: "11.52". An empty string is no number. */
		return f->rlen ? parse_cell(f->raw, f->rlen, out) : -1;
	case RM_F_CELL: return parse_cell(f->raw, f->rlen, out);
	case RM_F_NULL: return 0;
	default: return -1;
	}
}
