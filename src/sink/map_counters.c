/*
 * map_counters.c - batch composition a row gives only over time: cumulative
 * counters differenced into per-batch amounts, and a token rate times its
 * interval's seconds. Part of the key mapper (map.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "map_internal.h"

/* A cumulative counter's value: NaN when absent or null. */
static int counter(const struct rm_field *f, double *out, char *why, size_t whylen)
{
	*out = NAN;
	if (!f)
		return 0;
	int rc = rm_field_num(f, out);
	if (rc == 0)
		*out = NAN;
	else if (rc < 0 || !(*out >= 0 && *out < 9007199254740992.0)) {
		snprintf(why, whylen, "'%.*s' is not a counter (a non-negative number)", (int)f->klen, f->key);
		return -1;
	}
	return 0;
}

/* Cumulative counters become per-batch amounts: the growth since the last
 * row that had them, over the steps in between. A counter that falls (a
 * new epoch for Marian's Sen., a restart) or a step that does not advance
 * starts the differencing over, and that interval gets nothing: its start
 * is unknown. The batch's own values win where both are given. */
int rm_map_cumulative(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec, char *why,
                      size_t whylen)
{
	double tok, n;
	if (counter(pick[T_CUM_TOKENS], &tok, why, whylen) || counter(pick[T_CUM_N], &n, why, whylen))
		return -1;
	if (isnan(tok) && isnan(n))
		return 0;
	int usable = m->cum_have && rec->step > m->cum_step && !(tok < m->cum_tokens) && !(n < m->cum_n) &&
	             isnan(tok) == isnan(m->cum_tokens) && isnan(n) == isnan(m->cum_n);
	double steps = (double)(rec->step - m->cum_step), dt = tok - m->cum_tokens, dn = n - m->cum_n;
	m->cum_have = 1;
	m->cum_step = rec->step;
	m->cum_tokens = tok;
	m->cum_n = n;
	if (!usable || !(dt > 0 || dn > 0))
		return 0;
	struct rm_batch *b = &rec->b;
#define HAS(f)    ((b->have >> (f)) & 1)
#define SET(f, x) (b->v[f] = (x), b->have |= 1u << (f))
	if (dt > 0 && !HAS(RM_B_TOKENS))
		SET(RM_B_TOKENS, round(dt / steps));
	if (dn > 0 && !HAS(RM_B_N))
		SET(RM_B_N, fmax(1, round(dn / steps)));
	if (dt > 0 && dn > 0 && !HAS(RM_B_MEAN_LEN))
		SET(RM_B_MEAN_LEN, dt / dn);
#undef HAS
#undef SET
	return 0;
}

/* The second number of "src/tgt" (OpenNMT-py's "298/315 tok/s": the
 * target side, whose tokens the loss is averaged over), else the number. */
static int rate_of(const struct rm_field *f, double *v)
{
	const char *slash = f->rlen ? memchr(f->raw, '/', f->rlen) : NULL;
	if (!slash)
		return rm_field_num(f, v) == 1 && isfinite(*v) && *v > 0;
	char buf[64];
	size_t n = f->rlen - (size_t)(slash + 1 - f->raw);
	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, slash + 1, n);
	buf[n] = 0;
	char *end;
	*v = strtod(buf, &end);
	return end != buf && isfinite(*v) && *v > 0;
}

/* Tokens of a logged interval from its rate: the rate times the
 * interval's seconds (given, or the difference of the elapsed seconds),
 * over the steps since the last such row. The first row's interval has no
 * known start and gets nothing, as with cumulative counters; the batch's
 * own token count wins. */
void rm_map_rate_tokens(struct rm_mapper *m, const struct rm_field *const *pick, struct rm_record *rec)
{
	double rate, secs = NAN, elapsed = NAN, v;
	int ok = rate_of(pick[T_TOK_RATE], &rate);
	if (pick[T_ELAPSED_S] && rm_field_num(pick[T_ELAPSED_S], &v) == 1 && isfinite(v))
		elapsed = v;
	if (pick[T_INTERVAL_S] && rm_field_num(pick[T_INTERVAL_S], &v) == 1 && isfinite(v) && v > 0)
		secs = v;
	else if (m->rate_have && elapsed > m->rate_elapsed)
		secs = elapsed - m->rate_elapsed;
	int64_t steps = m->rate_have ? rec->step - m->rate_step : 0;
	m->rate_have = 1;
	m->rate_step = rec->step;
	m->rate_elapsed = elapsed;
	if (!ok || !(secs > 0) || steps <= 0 || ((rec->b.have >> RM_B_TOKENS) & 1))
		return;
	rec->b.v[RM_B_TOKENS] = fmax(1, round(rate * secs / (double)steps));
	rec->b.have |= 1u << RM_B_TOKENS;
}
