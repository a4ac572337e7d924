/*
 * stats.h - numerics shared by the detectors: order statistics, running
 * medians, distribution tails, trend and multiple-testing helpers, and a
 * seeded random generator so every result is reproducible.
 *
 * Pure functions over arrays: no I/O, no clock, no global state.
 */
#ifndef RUNMON_STATS_H
#define RUNMON_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Median of x[0..n) (n > 0); reorders x. */
double rm_median_inplace(double *x, size_t n);
/* Median of x without changing it; scratch holds n doubles. */
double rm_median(const double *x, size_t n, double *scratch);
/* Median absolute deviation about med (unscaled); scratch holds n doubles. */
double rm_mad(const double *x, size_t n, double med, double *scratch);

/* out[i] = median of x[i-w/2 .. i+w/2] clipped to [0, n). w odd >= 1.
 * Windows up to 64 keep a sorted window (binary search, a memmove of at
 * most w values per step); larger ones use ranks in a Fenwick tree,
 * O(n log n) whatever w is. */
void rm_running_median(const double *x, size_t n, size_t w, double *out);

double rm_norm_cdf(double z);
/* Inverse of rm_norm_cdf for 0 < p < 1 (relative error < 1e-13). */
double rm_norm_quantile(double p);
/* Upper tail of chi-square with df degrees of freedom. */
double rm_chi2_sf(double x, double df);
/* Upper tail of F(d1, d2). */
double rm_f_sf(double f, double d1, double d2);
/* The p-quantile of Student's t with df degrees of freedom (p in (0.5, 1)). */
double rm_t_quantile(double p, double df);
/* P(X >= k) for X ~ Binomial(n, p). */
double rm_binom_sf(double k, double n, double p);
/* Regularized incomplete beta I_x(a, b). */
double rm_betainc(double a, double b, double x);

/* Mann-Kendall trend test: S, its tie-corrected variance and the
 * continuity-corrected z. O(n^2): meant for short segments. */
struct rm_mk {
	double s, var, z;
};
struct rm_mk rm_mann_kendall(const double *x, size_t n);

/* Benjamini-Hochberg adjusted p-values (q[i] for p[i]); q may alias p. */
void rm_bh_adjust(const double *p, size_t m, double *q);

/* Autocorrelation of x at lags 0..maxlag (out has maxlag+1 entries). */
void rm_acf(const double *x, size_t n, size_t maxlag, double *out);
/* Autocorrelation of x at one lag, given its mean and sum of squares. */
double rm_acf_lag(const double *x, size_t n, double mean, double ss, size_t lag);

/* splitmix64: small, fast, and the same stream on every platform. */
struct rm_rng {
	uint64_t s;
};
uint64_t rm_rng_next(struct rm_rng *r);
double rm_rng_uniform(struct rm_rng *r); /* [0, 1) */
double rm_rng_normal(struct rm_rng *r);
/* Uniform integer in [0, n). */
uint64_t rm_rng_below(struct rm_rng *r, uint64_t n);
void rm_rng_shuffle_int(struct rm_rng *r, int *a, size_t n);
void rm_rng_shuffle_u8(struct rm_rng *r, uint8_t *a, size_t n);

/* Solves the k x k system A x = b in place (Gaussian elimination with
 * partial pivoting); a singular column gets x = 0. */
void rm_solve(double *A, double *b, int k, double *x);

#endif
