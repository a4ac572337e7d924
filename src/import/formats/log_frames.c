/*
 * log_frames.c - what one physical line of a console log holds before its
 * pairs are read: the frames a progress bar redrew over it with '\r' (each
 * one a line of its own), the records of several ranks glued together where
 * their output interleaved without a newline ("...92.05 %[2] Finished ...",
 * and a dangling "[4] " at the end), and a progress bar's own parts (the
 * text before it, its counter, the metrics after its rate).
 */
#include <ctype.h>
#include <string.h>

#include "log_internal.h"
#include "runmon/common.h"

/* "[12] " at s[i] (a rank tag as MPI launchers prefix output; "[12]" at
 * the end): its length, or 0. */
static size_t rank_tag(const char *s, size_t i, size_t n)
{
	if (i >= n || s[i] != '[')
		return 0;
	size_t j = i + 1;
	while (j < n && j - i <= 6 && isdigit((unsigned char)s[j]))
		j++;
	if (j == i + 1 || j >= n || s[j] != ']')
		return 0;
	j++;
	if (j == n)
		return j - i;
	return s[j] == ' ' ? j + 1 - i : 0;
}

static void seg_add(struct log_segs *g, size_t at, size_t len, int frame);

/* "12: " at s[i] (srun --label, and launchers like it): its length, or 0. */
static size_t label_tag(const char *s, size_t i, size_t n)
{
	size_t j = i;
	while (j < n && j - i < 6 && isdigit((unsigned char)s[j]))
		j++;
	return j > i && j + 1 < n && s[j] == ':' && s[j + 1] == ' ' ? j + 2 - i : 0;
}

/* The word at s[i] (letters, digits, '_'): its length. */
static size_t word_at(const char *s, size_t i, size_t n)
{
	size_t j = i;
	while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
		j++;
	return j - i;
}

/* Splits a frame that opens with "N: " at each " M: " that opens the same
 * record again ("0: step 10 loss 2.5 1: step 10 loss 2.6"): the same
 * first word after the label, so that "epoch 1: loss" is never split. */
static int split_labels(struct log_segs *g, const char *s, size_t at, size_t lead, size_t end, int frame)
{
	size_t first = label_tag(s, lead, end), w0 = lead + first, wl = word_at(s, w0, end);
	if (!first || !wl || !isalpha((unsigned char)s[w0]))
		return 0;
	size_t st = at;
	for (size_t i = w0 + wl; i + 1 < end; i++) {
		if (s[i] != ' ' || !isdigit((unsigned char)s[i + 1]))
			continue;
		size_t t = label_tag(s, i + 1, end), w = i + 1 + t;
		if (t && word_at(s, w, end) == wl && !memcmp(s + w, s + w0, wl)) {
			seg_add(g, st, i - st, frame);
			st = i + 1;
			i = w + wl;
		}
	}
	seg_add(g, st, end - st, frame);
	return 1;
}

static void seg_add(struct log_segs *g, size_t at, size_t len, int frame)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->seg = rm_xrealloc(g->seg, g->cap * sizeof(*g->seg));
	}
	g->seg[g->n].at = at;
	g->seg[g->n].len = len;
	g->seg[g->n].frame = frame;
	g->n++;
}

/* Splits one frame at the rank tags after its first: a tag with text after
 * it opens a record, a tag with none is dropped. */
static void split_ranks(struct log_segs *g, const char *s, size_t at, size_t end, int frame)
{
	size_t lead = at;
	while (lead < end && (s[lead] == ' ' || s[lead] == '\t'))
		lead++;
	size_t first = rank_tag(s, lead, end);
	if (!first) {
		if (!split_labels(g, s, at, lead, end, frame))
			seg_add(g, at, end - at, frame);
		return;
	}
	size_t st = at;
	for (const char *p = s + lead + first; p < s + end && (p = memchr(p, '[', (size_t)(s + end - p)));) {
		size_t i = (size_t)(p - s), t = rank_tag(s, i, end);
		size_t after = i + t;
		if (!t || (after < end && !isalpha((unsigned char)s[after]))) {
			p++;
			continue;
		}
		seg_add(g, st, i - st, frame);
		st = i;
		p = s + after;
	}
	size_t rest = st;
	while (rest < end && (s[rest] == ' ' || s[rest] == '\t'))
		rest++;
	if (st > at && rank_tag(s, rest, end) == end - rest)
		return; /* "[4] " and nothing: a prefix of output still to come */
	seg_add(g, st, end - st, frame);
}

void rm_log_segments(const char *s, size_t n, struct log_segs *g)
{
	g->n = 0;
	const char *cr = memchr(s, '\r', n);
	if (!cr) {
		split_ranks(g, s, 0, n, 0);
		return;
	}
	int frames = 0;
	for (size_t st = 0; st <= n;) {
		const char *e = st < n ? memchr(s + st, '\r', n - st) : NULL;
		size_t end = e ? (size_t)(e - s) : n;
		if (strspn(s + st, " \t") < end - st) {
			frames++;
			split_ranks(g, s, st, end, 1);
		}
		st = end + 1;
	}
	if (frames < 2) /* a line ended by CR LF, or one frame: no redraws */
		for (size_t i = 0; i < g->n; i++)
			g->seg[i].frame = 0;
}

/* ---- progress bars --------------------------------------------------------- */

/* "00:30<00:36", "00:00<?", "15.0it/s", "?it/s", "1.17s/it", "3.2 it/s":
 * the bar's own figures, not metrics. */
static int bar_figure(const char *s, size_t n)
{
	while (n && *s == ' ')
		s++, n--;
	if (memchr(s, '<', n))
		return 1;
	return n >= 4 && (!memcmp(s + n - 4, "it/s", 4) || !memcmp(s + n - 4, "s/it", 4));
}

/* Reads "n/total" or "n" at s[i]; returns the index after it, or 0. */
static size_t bar_counter(const char *s, size_t i, size_t n, int64_t *count, int64_t *total)
{
	*total = 0;
	size_t d = i;
	int64_t v = 0;
	while (d < n && isdigit((unsigned char)s[d]) && v < ((int64_t)1 << 50))
		v = v * 10 + (s[d++] - '0');
	if (d == i)
		return 0;
	*count = v;
	if (d < n && s[d] == '/') {
		size_t t = ++d;
		int64_t tot = 0;
		while (d < n && (isdigit((unsigned char)s[d]) || s[d] == '?')) {
			if (isdigit((unsigned char)s[d]) && tot < ((int64_t)1 << 50))
				tot = tot * 10 + (s[d] - '0');
			d++;
		}
		if (d == t)
			return 0;
		*total = tot;
	}
	return d;
}

/* The metrics after the bar's time and rate: "[00:30<00:36, 15.0it/s,
 * loss=2.31, v_num=0]" gives "loss=2.31, v_num=0". */
static void bar_postfix(const char *s, size_t i, size_t n, struct log_bar *b)
{
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n || s[i] != '[')
		return;
	const char *close = memchr(s + i, ']', n - i);
	size_t end = close ? (size_t)(close - s) : n;
	for (size_t st = i + 1; st < end;) {
		const char *c = memchr(s + st, ',', end - st);
		size_t e = c ? (size_t)(c - s) : end;
		if (!bar_figure(s + st, e - st)) {
			b->post = s + st;
			b->postlen = end - st;
			return;
		}
		st = e + 1;
	}
}

/* The first c at s[0..n) followed by next (a memchr walk: most lines hold
 * no c, and this runs on every line with a '|' or a '['). */
static const char *pair_at(const char *s, size_t n, char c, char next)
{
	for (const char *p = s, *end = s + n; (p = memchr(p, c, (size_t)(end - p))); p++)
		if (p + 1 < end && p[1] == next)
			return p;
	return NULL;
}

/* Keras's bar, "  12/100 [=====>........] - ETA: 1:23 - loss: 2.30": the
 * counter first, the bar of '=', '>' and '.', the metrics after it; with
 * verbose=2, the counter and the metrics alone, once an epoch. */
static int keras_bar(const char *s, size_t n, struct log_bar *b)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	size_t after = bar_counter(s, i, n, &b->count, &b->total);
	if (!after || after == i || after + 3 >= n || s[after] != ' ')
		return 0;
	if (s[after + 1] == '-' && s[after + 2] == ' ') { /* fit(verbose=2): "128/128 - 5s - loss: 3.1" */
		b->at = 0;
		b->post = s + after;
		b->postlen = n - after;
		return 1;
	}
	if (s[after + 1] != '[')
		return 0;
	size_t j = after + 2;
	while (j < n && (s[j] == '=' || s[j] == '>' || s[j] == '.'))
		j++;
	if (j >= n || s[j] != ']' || j == after + 2)
		return 0;
	b->at = 0;
	b->post = s + j + 1;
	b->postlen = n - j - 1;
	return 1;
}

int rm_log_bar(const char *s, size_t n, struct log_bar *b)
{
	memset(b, 0, sizeof(*b));
	if (keras_bar(s, n, b))
		return 1;
	const char *pct = pair_at(s, n, '%', '|');
	size_t after;
	if (pct) {
		size_t at = (size_t)(pct - s);
		while (at && (isdigit((unsigned char)s[at - 1]) || s[at - 1] == '.'))
			at--;
		if (at == (size_t)(pct - s))
			return 0;
		const char *bar_end = memchr(pct + 2, '|', n - (size_t)(pct + 2 - s));
		if (!bar_end)
			return 0;
		size_t i = (size_t)(bar_end - s) + 1;
		while (i < n && s[i] == ' ')
			i++;
		if (!(after = bar_counter(s, i, n, &b->count, &b->total)))
			return 0;
		b->at = at;
	} else {
		/* a bar without a total: "450it [00:30, 15.0it/s, loss=2.31]" */
		const char *it = NULL;
		for (const char *br = s; !it && (br = memchr(br, '[', n - (size_t)(br - s))); br++)
			if (br - s >= 3 && br[-3] == 'i' && br[-2] == 't' && br[-1] == ' ')
				it = br - 3;
		if (!it || it == s || !isdigit((unsigned char)it[-1]))
			return 0;
		size_t d = (size_t)(it - s);
		while (d && isdigit((unsigned char)s[d - 1]))
			d--;
		if (d && s[d - 1] != ' ' && s[d - 1] != ':')
			return 0;
		bar_counter(s, d, n, &b->count, &b->total);
		after = (size_t)(it - s) + 2;
		b->at = d;
	}
	while (b->at && (s[b->at - 1] == ' ' || s[b->at - 1] == ':'))
		b->at--;
	bar_postfix(s, after, n, b);
	return 1;
}
