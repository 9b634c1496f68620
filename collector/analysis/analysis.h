/* analysis.h: pure statistics over time series for the collector (methods below):
 * nonpaged/paged pressure and time to exhaustion, leak suspects per (host, tag, pool type),
 * fleet distributions, robust outliers and shared attributes of suspect hosts.
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

/* ------------------------------------------------------------------------------------------ */
/* Leak suspects                                                                                */

/* One point of a (host, tag, pool type) row. */
typedef struct pw_row_point_s {
    int64_t ts_ms;
    uint64_t bytes; /* bytes outstanding */
    uint64_t diff;  /* allocations outstanding (objects in use for Linux slab) */
} pw_row_point_t;

typedef struct pw_leak_opts_s {
    int64_t window_ms;      /* analysed window ending at the row's last point; default 30 min */
    size_t parts;           /* sub-windows of equal duration; default 3 (2..16) */
    size_t min_parts_up;    /* parts with a significant upward bytes trend; default 2 */
    double alpha;           /* per-part Mann-Kendall significance (two-sided); default 0.01 */
    size_t min_points;      /* points in the window; default 12 */
    size_t min_points_part; /* points in each part; default 4 */
    int64_t min_span_ms;    /* first to last point in the window; default 20 min */
    double min_rate_bytes_per_h; /* Theil-Sen growth over the window; default 16384 (16 KiB/h) */
    bool require_diff;           /* diff must also rise in min_parts_up parts; default true */
    double min_snr; /* growth over the window (Theil-Sen slope x span) at least min_snr times the
                       row's own scatter around that fit (1.4826 x MAD of the residuals, a robust
                       standard deviation); default 3 (a 3-sigma rule); 0 = off */
} pw_leak_opts_t;

/* Fills the defaults above. They are tuned so that a 1 MB/h leak sampled every 10 s is flagged
 * after at most 30 min of growth (all three 10-min parts rise), while noisy flat churn (each
 * part's chance of a false "significant up" is alpha/2 = 0.5 %, and two are needed) and caches
 * that levelled off (last part flat) are not. Slow leaks (1 MB/day) need a longer window, e.g.
 * 12 h with min_rate 4096: the collector runs both. min_snr (3) asks the growth over the window
 * to stand out of the row's own scatter: a churning row tested in window after window shows a
 * small "significant" tilt now and then (bench_detect: 3 such transient suspects of background
 * rows in the leak-step and leak-slow presets without it, 0 with it, no leak flagged later). */
void pw_leak_opts_default(pw_leak_opts_t *o);

typedef struct pw_leak_input_s {
    const pw_row_point_t *pts; /* the row's series, oldest first */
    size_t n;
    const pw_point_t *host; /* the host's total of the same pool type (nonpaged bytes for a
                               nonpaged row), oldest first; NULL/0 = unknown (share = -1) */
    size_t n_host;
    uint64_t first_bytes; /* the row's first value since agent start or boot */
    bool has_first;       /* false: the first point of pts stands in for it */
} pw_leak_input_t;

/* Why a row is or is not a suspect: the first check that failed, PW_LEAK_SUSPECT when none. */
typedef enum {
    PW_LEAK_SUSPECT = 0,
    PW_LEAK_TOO_FEW_POINTS = 1, /* n < min_points or a part < min_points_part */
    PW_LEAK_SPAN_TOO_SHORT = 2, /* span < min_span_ms (a single snapshot ends here or above) */
    PW_LEAK_NOT_SUSTAINED = 3,  /* bytes rise significantly in fewer than min_parts_up parts */
    PW_LEAK_PLATEAU = 4,        /* the last part has no significant upward trend */
    PW_LEAK_DIFF_FLAT = 5,      /* diff does not rise in min_parts_up parts */
    PW_LEAK_RATE_TOO_LOW = 6,   /* Theil-Sen slope (or its lower bound) below min rate */
    PW_LEAK_NOISE = 7           /* growth over the window below min_snr x the row's scatter */
} pw_leak_verdict_t;

typedef struct pw_leak_s {
    pw_leak_verdict_t verdict;
    bool suspect; /* verdict == PW_LEAK_SUSPECT */
    double score; /* ranking score (below), 0 when not a suspect */
    size_t n_window;
    int64_t span_ms;
    size_t parts_up_bytes;   /* parts with significant upward MK on bytes */
    size_t parts_up_diff;    /* ... on diff */
    double last_part_p;      /* MK p of the last part (bytes) */
    double mk_z;             /* MK Z over the whole window (bytes) */
    double rate_bytes_per_h; /* Theil-Sen over the window */
    double rate_low_bytes_per_h, rate_high_bytes_per_h; /* Sen's CI at 1 - alpha */
    double diff_rate_per_h;                             /* Theil-Sen of diff over the window */
    double host_rate_bytes_per_h; /* Theil-Sen of the host series over the same window */
    double share;                 /* rate / host_rate clamped to [0, 1]; -1 when unknown or host
                                     rate <= 0 */
    uint64_t first_bytes;         /* since agent start / boot */
    uint64_t last_bytes;
    double growth_ratio;  /* last / first (the "600 KB -> 10 MB" test); +inf when first = 0 */
    double consistency;   /* parts_up_bytes / parts */
    double scatter_bytes; /* 1.4826 x MAD of bytes - (intercept + slope t) over the window */
    double snr; /* rate x span / scatter_bytes; +inf when the scatter is 0, 0 below 3 points */
} pw_leak_t;

/* Judges one row. Score (documented, dimensionless, higher = more suspect):
 *   score = log10(1 + rate_KiB_per_h) * (0.5 + 0.5 consistency) * (1 + max(share, 0))
 *           * (1 + log10(max(growth_ratio, 1)))     (growth_ratio capped at 1e6)
 * so a faster, steadier leak that explains more of the host's growth and has grown more since
 * boot ranks first. opts may be NULL for the defaults.
 * Returns 0 (out filled, whatever the verdict), PW_EINVAL (NULL, unsorted, bad opts) or
 * PW_ENOMEM. */
int pw_leak_eval(const pw_leak_input_t *in, const pw_leak_opts_t *opts, pw_leak_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Screen comparison (short series)                                                             */

/* When a row has only a few screens (an imported or replayed poolmon capture: e.g. two screens
 * taken before and after one print job), no trend test is possible: pw_leak_eval needs at least
 * min_points (12) points over min_span_ms. What an admin does by hand then is compare the screens
 * and look for tags whose Diff (allocs - frees) and Bytes grew (Microsoft windows-driver-docs,
 * poolmon-examples.md Example 4: `poolmon /iDrsd` before and after one print job, Drsd Diff
 * 21 -> 27, Bytes 17472 -> 22464). This is weaker evidence than a trend and is labelled as such
 * (PW_LEAK_METHOD_COMPARE). */

/* One screen of a (host, tag, pool type) row: poolmon's counters. */
typedef struct pw_screen_row_s {
    int64_t ts_ms;
    uint64_t allocs, frees; /* cumulative counters */
    uint64_t diff;          /* allocations outstanding (allocs - frees) */
    uint64_t bytes;         /* bytes outstanding */
} pw_screen_row_t;

/* How a suspect was judged. */
typedef enum {
    PW_LEAK_METHOD_TREND = 0,  /* pw_leak_eval: trend tests over a window */
    PW_LEAK_METHOD_COMPARE = 1 /* pw_screen_compare: first vs last of a few screens */
} pw_leak_method_t;

/* Why a row is or is not a suspect by comparison: the first check that failed. */
typedef enum {
    PW_CMP_SUSPECT = 0,
    PW_CMP_ONE_SCREEN = 1, /* fewer than 2 screens: a single snapshot never raises a suspect */
    PW_CMP_NOT_GROWN = 2,  /* diff or bytes of the last screen not above the first's */
    PW_CMP_FELL = 3        /* diff or bytes fell between two consecutive screens */
} pw_cmp_verdict_t;

typedef struct pw_compare_s {
    pw_cmp_verdict_t verdict;
    bool suspect;    /* verdict == PW_CMP_SUSPECT */
    double score;    /* ranking score (below), 0 when not a suspect */
    size_t screens;  /* screens compared (n) */
    int64_t span_ms; /* last - first time stamp */
    /* last screen - first screen. allocs/frees are plain differences of the counters (a
     * wrapped 32-bit counter gives a negative delta; the verdict uses only diff and bytes). */
    int64_t d_allocs, d_frees, d_diff, d_bytes;
    double per_alloc;        /* d_bytes / d_diff in bytes (size of each added allocation);
                                0 when d_diff <= 0 */
    uint64_t first_bytes;    /* bytes of the first screen */
    uint64_t last_bytes;     /* bytes of the last screen */
    size_t steps_up;         /* consecutive screen pairs in which bytes rose */
    double rate_bytes_per_h; /* d_bytes / span in hours; 0 when span is 0 (screens whose time
                                stamps were assumed by the importer give an assumed rate) */
} pw_compare_t;

/* Compares the screens s[0..n) of one row, oldest first. A suspect needs n >= 2, diff and bytes
 * of the last screen above the first's, and neither falling between consecutive screens (a tag
 * that grew and then fell back is a cache or a burst, not a leak). Score (dimensionless, ranks
 * by bytes growth; half weight of a trend score because two screens are weaker evidence):
 *   score = 0.5 * log10(1 + d_bytes / 1024)
 * Returns 0 (out filled, whatever the verdict), PW_EINVAL (NULL with n > 0, NULL out, or time
 * stamps going backwards). */
int pw_screen_compare(const pw_screen_row_t *s, size_t n, pw_compare_t *out);

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
