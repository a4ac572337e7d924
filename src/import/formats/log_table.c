/*
 * log_table.c - console logs that print a table: a header of names, then
 * rows of as many numbers under it (YOLOv5's "Epoch gpu_mem box obj cls
 * total labels img_size", then "14/299 11.8G 0.05367 ... 640"), columns
 * aligned with blanks. A row takes
 * its keys from the header above it; any other line leaves the header for
 * the rows that may still come.
 */
#include <ctype.h>
#include <string.h>

#include "log_internal.h"

/* The blank-separated words of s[0..n): their starts and lengths. */
static int words(const char *s, size_t n, const char **w, size_t *wl, int max)
{
	int k = 0;
	for (size_t i = 0; i < n;) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		size_t st = i;
		while (i < n && !isspace((unsigned char)s[i]))
			i++;
		if (i == st)
			break;
		if (k == max)
			return max + 1;
		w[k] = s + st;
		wl[k++] = i - st;
	}
	return k;
}

int rm_log_table_header(const char *s, size_t n, struct log_table *t)
{
	const char *w[RM_LOG_TABLE_MAX];
	size_t wl[RM_LOG_TABLE_MAX];
	int k = words(s, n, w, wl, RM_LOG_TABLE_MAX);
	if (k < 3 || k > RM_LOG_TABLE_MAX)
		return 0;
	for (int i = 0; i < k; i++) {
		double v;
		if (!isalpha((unsigned char)w[i][0]) || wl[i] >= sizeof(t->name[0]) || rm_log_number(w[i], wl[i], &v) ||
		    memchr(w[i], '=', wl[i]) || memchr(w[i], ',', wl[i]) || memchr(w[i], '|', wl[i]))
			return 0;
		if (i < k - 1 && w[i][wl[i] - 1] == ':')
			return 0; /* "Loading weights: done" is a sentence */
	}
	/* a table aligns its columns: blanks wider than one between most
	 * names ("Loading dataset from data/x.pt" is a sentence) */
	int wide = 0;
	for (int i = 1; i < k; i++)
		wide += w[i] - (w[i - 1] + wl[i - 1]) >= 2 ||
		        memchr(w[i - 1] + wl[i - 1], '\t', (size_t)(w[i] - w[i - 1] - wl[i - 1]));
	if (wide * 2 < k - 1)
		return 0;
	for (int i = 0; i < k; i++) {
		memcpy(t->name[i], w[i], wl[i]);
		t->name[i][wl[i]] = 0;
	}
	t->n = k;
	return 1;
}

/* A table's time column, "00:41" or "1:02:03" (fastai's, Keras's): the
 * seconds. Only whole cells of digit groups parted by ':' , the later
 * groups of two digits each. */
static int duration(const char *s, size_t n, double *out)
{
	double v = 0;
	int groups = 0;
	for (size_t i = 0; i < n;) {
		size_t st = i;
		unsigned g = 0;
		while (i < n && isdigit((unsigned char)s[i]) && i - st < 4)
			g = g * 10 + (unsigned)(s[i++] - '0');
		if (i == st || (groups && (i - st != 2 || g > 59)) || ++groups > 3)
			return 0;
		v = v * 60 + g;
		if (i < n && (s[i] != ':' || ++i == n))
			return 0;
	}
	if (groups < 2)
		return 0;
	*out = v;
	return 1;
}

int rm_log_table_row(const struct log_table *t, struct log_line *ll, const char *s, size_t n)
{
	const char *w[RM_LOG_TABLE_MAX];
	size_t wl[RM_LOG_TABLE_MAX];
	double v[RM_LOG_TABLE_MAX];
	if (!t->n || words(s, n, w, wl, RM_LOG_TABLE_MAX) != t->n)
		return 0;
	for (int i = 0; i < t->n; i++)
		if (!rm_log_number(w[i], wl[i], &v[i]) && !duration(w[i], wl[i], &v[i]))
			return 0;
	for (int i = 0; i < t->n; i++) {
		const char *kw[1] = {t->name[i]};
		size_t kl[1] = {strlen(t->name[i])}, klen;
		const char *key = rm_log_make_key(ll, kw, kl, 1, &klen);
		if (key)
			rm_log_add_pair(ll, key, klen, w[i], wl[i], v[i]);
	}
	return 1;
}
