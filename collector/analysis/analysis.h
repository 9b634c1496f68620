/* analysis.h: pure statistics over time series for the collector (methods below):
 * nonpaged/paged pressure and time to exhaustion, fleet distributions, robust outliers and
 * shared attributes of suspect hosts. Leak detection is detect.h.
 *
 * Everything here is a pure function of its arguments: no I/O, no clock, no globals, so the
 * collector can call it on ingest and on a timer and tests can check it against hand
 * computations. Functions that need scratch memory allocate it with pw_malloc and return
 * PW_ENOMEM when that fails; nothing is kept between calls.
 *
 * Series are given oldest first (timestamps non-decreasing, in ms since the Unix epoch);
 * functions return PW_EINVAL for a series that goes backwards.
 *
 * Formulas and their sources:
 *   Theil-Sen slope   b = median over i<j, x_i != x_j of (y_j - y_i) / (x_j - x_i)
 *                     (Theil 1950; Sen 1968, JASA 63:1379). Intercept a = median(y_i - b x_i).
 *   Slope CI          Sen 1968 / Gilbert 1987 ("Statistical Methods for Environmental
 *                     Pollution Monitoring", §16.5): with N' pair slopes sorted ascending and
 *                     C = z_{1-alpha/2} sqrt(Var(S)), the bounds are the slopes of rank
 *                     M1 = (N' - C) / 2 and M2 + 1 = (N' + C) / 2 + 1 (1-based), linearly
 *                     interpolated between neighbours and clamped to [1, N'].
 *   Mann-Kendall      S = sum_{i<j} sgn(y_j - y_i) (Mann 1945; Kendall 1975),
 *                     Var(S) = [n(n-1)(2n+5) - sum_t t(t-1)(2t+5)] / 18 over groups of t tied
 *                     values, Z = (S - 1)/sqrt(Var) if S > 0, (S + 1)/sqrt(Var) if S < 0, else
 *                     0; two-sided p = 2 (1 - Phi(|Z|)) = erfc(|Z| / sqrt 2) (normal
 *                     approximation, libm erfc).
 *   Median, MAD       MAD = median |x_i - median(x)| (unscaled).
 *   Robust z          M_i = 0.6745 (x_i - median) / MAD (Iglewicz & Hoaglin 1993, "How to
 *                     Detect and Handle Outliers", p. 12; they suggest |M| > 3.5 as outlier).
 *                     When MAD = 0 we use (x_i - median) / (1.253314 * MeanAD) (the IBM SPSS
 *                     convention, MeanAD = mean |x_i - median|); when that is 0 too, M = 0.
 *   Percentiles       linear interpolation between closest ranks, h = (n - 1) p (Hyndman & Fan
 *                     1996 type 7, the default of R and numpy).
 *
 * The pairwise statistics are O(n^2): series longer than PW_ANALYSIS_MAX_POINTS (2,000) are
 * first decimated deterministically to that many evenly spaced points (indices
 * floor(i (n - 1) / (m - 1)), i = 0 .. m-1: the first and last points are always kept).
 */
#ifndef PW_ANALYSIS_H
#define PW_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_ANALYSIS_MAX_POINTS 2000 /* cap for O(n^2) statistics, see above */
#define PW_MS_PER_HOUR         3600000.0

/* One point of a host-level series (e.g. nonpaged bytes). */
typedef struct pw_point_s {
    int64_t ts_ms; /* ms since the Unix epoch */
    double v;      /* value (bytes for pool series) */
} pw_point_t;

/* ------------------------------------------------------------------------------------------ */
/* Basic statistics                                                                             */

/* Standard normal CDF Phi(z) = erfc(-z / sqrt 2) / 2. */
double pw_stats_norm_cdf(double z);

/* Inverse of Phi for p in (0, 1) by bisection on pw_stats_norm_cdf (60 steps, |error| < 1e-12
 * in z for p in [1e-12, 1 - 1e-12]); returns -INFINITY / +INFINITY for p <= 0 / p >= 1. */
double pw_stats_norm_quantile(double p);

/* Median of x[0..n) into *out (x is not modified). Even n: mean of the two middle values.
 * Returns 0, PW_EINVAL (n == 0 or NULL) or PW_ENOMEM. */
int pw_stats_median(const double *x, size_t n, double *out);

/* Median and unscaled MAD (median absolute deviation from the median) of x[0..n).
 * Returns 0, PW_EINVAL or PW_ENOMEM. */
int pw_stats_mad(const double *x, size_t n, double *median_out, double *mad_out);

/* Robust z of every x[i] into z[i] (n values), formula above. Returns 0, PW_EINVAL, PW_ENOMEM. */
int pw_stats_robust_z(const double *x, size_t n, double *z);

/* p-th quantile (0 <= p <= 1) of x[0..n), type 7 (above). Returns 0, PW_EINVAL, PW_ENOMEM. */
int pw_stats_quantile(const double *x, size_t n, double p, double *out);

/* The same type 7 quantile of v[0..n) (n >= 1, 0 <= p <= 1) without a copy or a sort: v is
 * reordered by a selection, O(n) on average; no NaN in v. The one implementation: the query
 * API's fleet columns (api_v1.c) call it for every tag of a page. */
double pw_stats_quantile7(double *v, size_t n, double p);

/* Mann-Kendall trend test result. */
typedef struct pw_mk_s {
    size_t n;   /* points used (after decimation) */
    int64_t s;  /* Kendall's S */
    double var; /* Var(S), ties-corrected */
    double z;   /* continuity-corrected Z */
    double p;   /* two-sided p-value (1 when n < 3 or var == 0) */
} pw_mk_t;

/* Mann-Kendall on y[0..n) in time order (formula above). n < 3 gives s = 0, z = 0, p = 1.
 * Returns 0, PW_EINVAL (NULL) or PW_ENOMEM. */
int pw_stats_mann_kendall(const double *y, size_t n, pw_mk_t *out);

/* Theil-Sen fit result. Slope units are y units per x unit. */
typedef struct pw_theilsen_s {
    size_t n;         /* points used (after decimation) */
    size_t pairs;     /* pair slopes N' (pairs with x_i != x_j) */
    double slope;     /* median pair slope; 0 when pairs == 0 */
    double intercept; /* median(y - slope x) */
    double low, high; /* Sen's (1 - alpha) confidence bounds on the slope */
} pw_theilsen_t;

/* Theil-Sen slope and Sen's confidence interval at level 1 - alpha (0 < alpha < 1; e.g. 0.05)
 * for points (x[i], y[i]), i < n. The Mann-Kendall variance used for the interval is that of
 * y (ties-corrected). Fewer than 2 distinct x give slope = low = high = 0, pairs = 0.
 * Returns 0, PW_EINVAL (NULL, bad alpha) or PW_ENOMEM. */
int pw_stats_theil_sen(const double *x, const double *y, size_t n, double alpha,
                       pw_theilsen_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Pool pressure and time to exhaustion                                                        */

typedef enum {
    PW_LEVEL_OK = 0,
    PW_LEVEL_WARN = 1,
    PW_LEVEL_CRITICAL = 2,
    PW_LEVEL_UNKNOWN = 3 /* no limit known or no data */
} pw_level_t;

typedef struct pw_pressure_opts_s {
    double warn_ratio;        /* used/limit at or above which level is WARN; default 0.70 */
    double critical_ratio;    /* ... CRITICAL; default 0.85 */
    int64_t window_ms;        /* trend window ending at the last point; default 2 h */
    double alpha;             /* trend significance and CI level 1 - alpha; default 0.05 */
    size_t min_points;        /* fewer points in the window: no trend, no ETA; default 6 */
    double max_extrapolation; /* an ETA further ahead than this many times the span of the
                                 window's points is not given (eta_beyond instead): a trend of
                                 minutes says nothing about months; default 24 (2 h of data:
                                 ETAs up to 48 h); 0 = no limit */
} pw_pressure_opts_t;

/* Fills the defaults documented above. */
void pw_pressure_opts_default(pw_pressure_opts_t *o);

typedef struct pw_pressure_s {
    uint64_t used_bytes;      /* last value of the series */
    uint64_t limit_bytes;     /* as given */
    double ratio;             /* used / limit; 0 when limit is 0 */
    pw_level_t level;         /* from ratio and the thresholds; UNKNOWN when limit is 0 */
    size_t n_window;          /* points in the trend window (before decimation) */
    double slope_bytes_per_h; /* Theil-Sen over the window; 0 without a trend */
    double slope_low_bytes_per_h, slope_high_bytes_per_h; /* Sen's CI */
    double mk_p;         /* Mann-Kendall two-sided p over the window (1 without a trend) */
    bool trend_up;       /* slope > 0, MK S > 0 and mk_p < alpha */
    int64_t eta_ms;      /* (limit - used) / slope from the last point, -1 when none */
    int64_t eta_soon_ms; /* pessimistic: with slope_high; -1 when none */
    int64_t eta_late_ms; /* optimistic: with slope_low; -1 when slope_low <= 0 (maybe never) */
    bool eta_beyond;     /* trend_up, but the ETA is past max_extrapolation (ETAs are -1) */
} pw_pressure_t;

/* Pressure of one pool of one host. pts[0..n) is the pool's used bytes, oldest first;
 * limit_bytes its limit (0 = unknown). ETA is given only when trend_up and used < limit
 * (0 when used >= limit and trend_up), and not past max_extrapolation times the span of the
 * window's points (eta_beyond). opts may be NULL for the defaults.
 * Returns 0, PW_EINVAL (NULL out, n == 0, unsorted, bad opts) or PW_ENOMEM. */
int pw_pressure_eval(const pw_point_t *pts, size_t n, uint64_t limit_bytes,
                     const pw_pressure_opts_t *opts, pw_pressure_t *out);

/* When a named leak's pool runs out, and how that is known. The pool's own trend (pool) comes
 * first; when the pool has too few points in its window for a trend (an import of 2 or 3
 * screens), the leak's own growth (its rate and interval from the detection engine) stands in
 * for it, from the pool's last value; otherwise there is no ETA and the note says why. */
typedef enum {
    PW_ETA_NONE = 0, /* no ETA: `note` says why */
    PW_ETA_POOL = 1, /* the pool's trend (pw_pressure_eval) */
    PW_ETA_LEAK = 2  /* the leak's growth alone: the pool's trend had too few points */
} pw_eta_basis_t;

/* How a pool's ETA was reckoned (its basis PW_ETA_POOL or PW_ETA_LEAK). */
typedef enum {
    PW_ETA_METHOD_NONE = 0,
    PW_ETA_METHOD_TREND = 1, /* the pool's Theil-Sen trend over its last 2 h */
    PW_ETA_METHOD_NET = 2,   /* the pool's net growth over its window (under a day of points:
                                the last 24 h, or since its boot when that is sooner) */
    PW_ETA_METHOD_DAY = 3,   /* the last 24 h repeated ("seasonal naive") */
    PW_ETA_METHOD_LEAK = 4   /* the leak's own growth (the pool had too few points) */
} pw_eta_method_t;

/* The name of a method as the API gives it ("trend", "net", "day", "leak"); NULL for NONE. */
const char *pw_eta_method_name(pw_eta_method_t m);

typedef struct pw_leak_eta_s {
    pw_eta_basis_t basis;
    int64_t eta_ms;         /* ms after the pool's last point until it reaches its limit; -1 none */
    int64_t eta_soon_ms;    /* with the faster end of the growth interval; -1 none */
    int64_t eta_late_ms;    /* with the slower end; -1 when that end does not grow (maybe never) */
    char note[256];         /* how the ETA was obtained, or why there is none (never empty) */
    pw_eta_method_t method; /* how the ETA was reckoned; NONE without an ETA */
    double rate_bytes_per_h; /* the growth the ETA rests on, bytes/h: the 2-h trend's slope,
                                the window's net growth per hour, for the day method the pool's
                                pace during the hours of the day it grew, or the leak's rate;
                                0 without an ETA */
    int64_t window_ms;       /* the span of the points that rate comes from, ms (0: unknown) */
    int64_t grew_ms;         /* day method: the time of the day the pool grew, ms; else 0 */
    int64_t since_boot_ms;   /* > 0: the window was cut at the host's boot at this time (ms
                                since the epoch): older points are an earlier boot's; else 0 */
} pw_leak_eta_t;

/* The ETA of a named leak's pool. pool: pw_pressure_eval's result for the leak's pool (its
 * limit, last value, window). rate, rate_low, rate_high: the leak's growth in bytes/h and its
 * interval (pw_detect_t); points, span_ms: the points and time its verdict rests on. opts as
 * for pw_pressure_eval (NULL: defaults; min_points and max_extrapolation are used: an ETA from
 * the leak goes no further than max_extrapolation times its span). Returns 0 with *out filled,
 * or PW_EINVAL (NULL pool or out). Pure. */
int pw_pressure_leak_eta(const pw_pressure_t *pool, double rate, double rate_low, double rate_high,
                         size_t points, int64_t span_ms, const pw_pressure_opts_t *opts,
                         pw_leak_eta_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Fleet view                                                                                   */

typedef struct pw_dist_s {
    size_t n;
    double min, p50, p90, max; /* type 7 quantiles */
} pw_dist_t;

/* Distribution of one tag's value across hosts. Returns 0, PW_EINVAL (n == 0), PW_ENOMEM. */
int pw_fleet_dist(const double *v, size_t n, pw_dist_t *out);

/* Robust z of v[i] among the hosts with the same group[i] (e.g. an OS build id chosen by the
 * caller) into z[i]; outlier[i] = z[i] >= threshold (high side only: a leak shows as more
 * bytes; Iglewicz & Hoaglin suggest 3.5). Groups with fewer than 3 hosts get z = 0.
 * outlier may be NULL. Returns the number of outliers, PW_EINVAL or PW_ENOMEM. */
int pw_fleet_outliers(const double *v, const uint32_t *group, size_t n, double threshold, double *z,
                      bool *outlier);

/* One attribute value over-represented among suspect hosts. */
typedef struct pw_attr_share_s {
    size_t attr;          /* attribute index (column) */
    const char *value;    /* borrowed from the input */
    size_t suspects_with; /* suspect hosts with this value */
    size_t suspects;      /* suspect hosts with the attribute known */
    size_t hosts_with;    /* all hosts with this value */
    size_t hosts;         /* all hosts with the attribute known */
    double frac_suspects; /* suspects_with / suspects */
    double frac_hosts;    /* hosts_with / hosts */
    double lift;          /* frac_suspects / frac_hosts */
    double p;             /* one-sided hypergeometric (Fisher) p of >= suspects_with */
} pw_attr_share_t;

/* Attribute values over-represented among suspects. attrs is row-major: attrs[i * n_attrs + j]
 * is host i's value of attribute j (NULL = unknown); suspect[i] marks suspect hosts. Reports
 * every (attribute, value) with suspects_with >= min_suspects and frac_suspects > frac_hosts,
 * sorted by p ascending, then lift descending, then attribute index and value. *out is
 * allocated (free with pw_free; NULL when *n_out == 0); values point into attrs.
 * Returns 0, PW_EINVAL or PW_ENOMEM. */
int pw_fleet_shared_attrs(const char *const *attrs, size_t n_hosts, size_t n_attrs,
                          const bool *suspect, size_t min_suspects, pw_attr_share_t **out,
                          size_t *n_out);

#endif /* PW_ANALYSIS_H */
