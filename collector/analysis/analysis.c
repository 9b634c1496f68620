/* analysis.c: see analysis.h for the formulas and their sources. */
#include "analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "detect.h"

/* ------------------------------------------------------------------------------------------ */
/* helpers */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of an already sorted array. */
static double sorted_median(const double *s, size_t n)
{
    if (n % 2)
        return s[n / 2];
    return (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

/* Index of the i-th of m evenly spaced points among n (m <= n, m >= 2). */
static size_t decimate_index(size_t i, size_t n, size_t m)
{
    return (size_t)(((uint64_t)i * (uint64_t)(n - 1)) / (uint64_t)(m - 1));
}

/* Number of points used by the O(n^2) statistics. */
static size_t capped(size_t n)
{
    return n > PW_ANALYSIS_MAX_POINTS ? PW_ANALYSIS_MAX_POINTS : n;
}

/* ------------------------------------------------------------------------------------------ */
/* basic statistics */

double pw_stats_norm_cdf(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0));
}

double pw_stats_norm_quantile(double p)
{
    if (!(p > 0.0))
        return -INFINITY;
    if (!(p < 1.0))
        return INFINITY;
    double lo = -40.0, hi = 40.0;
    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2.0;
        if (pw_stats_norm_cdf(mid) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2.0;
}

/* k-th smallest of v[0..n) (reorders v): Hoare's selection. */
static double select_k(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double piv = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < piv)
                i++;
            while (v[j] > piv)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

double pw_stats_quantile7(double *v, size_t n, double p)
{
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        lo = n - 1;
    double a = select_k(v, n, lo);
    if (lo + 1 >= n)
        return a;
    /* After the selection v[lo+1 ..] are all >= v[lo]: the next order statistic is their min. */
    double b = v[lo + 1];
    for (size_t i = lo + 2; i < n; i++)
        if (v[i] < b)
            b = v[i];
    return a + (h - (double)lo) * (b - a);
}

int pw_stats_median(const double *x, size_t n, double *out)
{
    if (x == NULL || n == 0 || out == NULL)
        return PW_EINVAL;
    double *s = pw_malloc(n * sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    memcpy(s, x, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    *out = sorted_median(s, n);
    pw_free(s);
    return 0;
}

int pw_stats_quantile(const double *x, size_t n, double p, double *out)
{
    if (x == NULL || n == 0 || out == NULL || !(p >= 0.0 && p <= 1.0))
        return PW_EINVAL;
    double *s = pw_malloc(n * sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    memcpy(s, x, n * sizeof(*s));
    *out = pw_stats_quantile7(s, n, p);
    pw_free(s);
    return 0;
}

int pw_stats_mad(const double *x, size_t n, double *median_out, double *mad_out)
{
    if (x == NULL || n == 0)
        return PW_EINVAL;
    double med, mad;
    int rc = pw_stats_median(x, n, &med);
    if (rc < 0)
        return rc;
    double *d = pw_malloc(n * sizeof(*d));
    if (d == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < n; i++)
        d[i] = fabs(x[i] - med);
    qsort(d, n, sizeof(*d), cmp_double);
    mad = sorted_median(d, n);
    pw_free(d);
    if (median_out)
        *median_out = med;
    if (mad_out)
        *mad_out = mad;
    return 0;
}

int pw_stats_robust_z(const double *x, size_t n, double *z)
{
    if (z == NULL)
        return PW_EINVAL;
    double med, mad;
    int rc = pw_stats_mad(x, n, &med, &mad);
    if (rc < 0)
        return rc;
    if (mad > 0.0) {
        for (size_t i = 0; i < n; i++)
            z[i] = 0.6745 * (x[i] - med) / mad;
        return 0;
    }
    /* MAD = 0 (more than half the values equal): fall back to the mean absolute deviation. */
    double mean_ad = 0.0;
    for (size_t i = 0; i < n; i++)
        mean_ad += fabs(x[i] - med);
    mean_ad /= (double)n;
    for (size_t i = 0; i < n; i++)
        z[i] = mean_ad > 0.0 ? (x[i] - med) / (1.253314 * mean_ad) : 0.0;
    return 0;
}

/* Ties-corrected Var(S) for the values y[0..n) (any order). */
static int mk_variance(const double *y, size_t n, double *var_out)
{
    double *s = pw_malloc(n * sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    memcpy(s, y, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    double dn = (double)n;
    double var = dn * (dn - 1.0) * (2.0 * dn + 5.0);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && s[j] == s[i])
            j++;
        double t = (double)(j - i);
        if (t > 1.0)
            var -= t * (t - 1.0) * (2.0 * t + 5.0);
        i = j;
    }
    pw_free(s);
    *var_out = var / 18.0;
    return 0;
}

/* Mann-Kendall on already decimated values. */
static int mk_raw(const double *y, size_t n, pw_mk_t *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    out->p = 1.0;
    if (n < 3)
        return 0;
    int64_t s = 0;
    for (size_t i = 0; i + 1 < n; i++)
        for (size_t j = i + 1; j < n; j++)
            s += (y[j] > y[i]) - (y[j] < y[i]);
    double var;
    int rc = mk_variance(y, n, &var);
    if (rc < 0)
        return rc;
    out->s = s;
    out->var = var;
    if (var > 0.0) {
        if (s > 0)
            out->z = ((double)s - 1.0) / sqrt(var);
        else if (s < 0)
            out->z = ((double)s + 1.0) / sqrt(var);
        out->p = erfc(fabs(out->z) / sqrt(2.0));
    }
    return 0;
}

int pw_stats_mann_kendall(const double *y, size_t n, pw_mk_t *out)
{
    if ((y == NULL && n > 0) || out == NULL)
        return PW_EINVAL;
    size_t m = capped(n);
    if (m == n)
        return mk_raw(y, n, out);
    double *d = pw_malloc(m * sizeof(*d));
    if (d == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < m; i++)
        d[i] = y[decimate_index(i, n, m)];
    int rc = mk_raw(d, m, out);
    pw_free(d);
    return rc;
}

/* Value of 1-based fractional rank r among sorted s[0..n), clamped to [1, n]. */
static double rank_value(const double *s, size_t n, double r)
{
    if (r <= 1.0)
        return s[0];
    if (r >= (double)n)
        return s[n - 1];
    size_t k = (size_t)floor(r); /* 1 <= k < n */
    double f = r - (double)k;
    return s[k - 1] + f * (s[k] - s[k - 1]);
}

/* Theil-Sen on already decimated points. */
static int theil_sen_raw(const double *x, const double *y, size_t n, double alpha,
                         pw_theilsen_t *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n < 2)
        return 0;
    size_t cap = n * (n - 1) / 2;
    double *sl = pw_malloc(cap * sizeof(*sl));
    if (sl == NULL)
        return PW_ENOMEM;
    size_t np = 0;
    for (size_t i = 0; i + 1 < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (x[j] != x[i])
                sl[np++] = (y[j] - y[i]) / (x[j] - x[i]);
    if (np == 0) {
        pw_free(sl);
        return 0;
    }
    qsort(sl, np, sizeof(*sl), cmp_double);
    out->pairs = np;
    out->slope = sorted_median(sl, np);

    double var;
    int rc = mk_variance(y, n, &var);
    if (rc < 0) {
        pw_free(sl);
        return rc;
    }
    double c = pw_stats_norm_quantile(1.0 - alpha / 2.0) * sqrt(var);
    double m1 = ((double)np - c) / 2.0;
    double m2 = ((double)np + c) / 2.0;
    out->low = rank_value(sl, np, m1);
    out->high = rank_value(sl, np, m2 + 1.0);

    /* intercept: median of y - b x, reusing the slope buffer (cap >= n for n >= 3; n == 2
     * gives cap 1, so allocate in that case) */
    double *r = n <= cap ? sl : pw_malloc(n * sizeof(*r));
    if (r == NULL) {
        pw_free(sl);
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = y[i] - out->slope * x[i];
    qsort(r, n, sizeof(*r), cmp_double);
    out->intercept = sorted_median(r, n);
    if (r != sl)
        pw_free(r);
    pw_free(sl);
    return 0;
}

int pw_stats_theil_sen(const double *x, const double *y, size_t n, double alpha, pw_theilsen_t *out)
{
    if (out == NULL || (n > 0 && (x == NULL || y == NULL)) || !(alpha > 0.0 && alpha < 1.0))
        return PW_EINVAL;
    size_t m = capped(n);
    if (m == n)
        return theil_sen_raw(x, y, n, alpha, out);
    double *dx = pw_malloc(2 * m * sizeof(*dx));
    if (dx == NULL)
        return PW_ENOMEM;
    double *dy = dx + m;
    for (size_t i = 0; i < m; i++) {
        size_t k = decimate_index(i, n, m);
        dx[i] = x[k];
        dy[i] = y[k];
    }
    int rc = theil_sen_raw(dx, dy, m, alpha, out);
    pw_free(dx);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* pressure */

void pw_pressure_opts_default(pw_pressure_opts_t *o)
{
    o->warn_ratio = 0.70;
    o->critical_ratio = 0.85;
    o->window_ms = 2 * 3600 * 1000LL;
    o->alpha = 0.05;
    o->min_points = 6;
    o->max_extrapolation = 24.0;
}

static int64_t hours_to_ms(double h)
{
    double ms = h * PW_MS_PER_HOUR;
    if (!(ms < 9.0e18))
        return INT64_MAX;
    return (int64_t)ceil(ms);
}

int pw_pressure_eval(const pw_point_t *pts, size_t n, uint64_t limit_bytes,
                     const pw_pressure_opts_t *opts, pw_pressure_t *out)
{
    pw_pressure_opts_t def;
    if (opts == NULL) {
        pw_pressure_opts_default(&def);
        opts = &def;
    }
    if (pts == NULL || n == 0 || out == NULL || opts->window_ms <= 0 ||
        !(opts->alpha > 0.0 && opts->alpha < 1.0) || !(opts->warn_ratio > 0.0) ||
        !(opts->critical_ratio >= opts->warn_ratio))
        return PW_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (pts[i].ts_ms < pts[i - 1].ts_ms)
            return PW_EINVAL;

    memset(out, 0, sizeof(*out));
    out->eta_ms = out->eta_soon_ms = out->eta_late_ms = -1;
    out->mk_p = 1.0;
    double used = pts[n - 1].v < 0 ? 0.0 : pts[n - 1].v;
    out->used_bytes = (uint64_t)used;
    out->limit_bytes = limit_bytes;
    if (limit_bytes == 0) {
        out->level = PW_LEVEL_UNKNOWN;
    } else {
        out->ratio = used / (double)limit_bytes;
        out->level = out->ratio >= opts->critical_ratio ? PW_LEVEL_CRITICAL
                     : out->ratio >= opts->warn_ratio   ? PW_LEVEL_WARN
                                                        : PW_LEVEL_OK;
    }

    int64_t t_end = pts[n - 1].ts_ms;
    int64_t t_start = t_end - opts->window_ms;
    size_t first = n;
    while (first > 0 && pts[first - 1].ts_ms >= t_start)
        first--;
    size_t w = n - first;
    out->n_window = w;
    if (w < opts->min_points || w < 3)
        return 0;

    size_t m = capped(w);
    double *x = pw_malloc(2 * m * sizeof(*x));
    if (x == NULL)
        return PW_ENOMEM;
    double *y = x + m;
    for (size_t i = 0; i < m; i++) {
        const pw_point_t *p = &pts[first + (m == w ? i : decimate_index(i, w, m))];
        x[i] = (double)(p->ts_ms - pts[first].ts_ms) / PW_MS_PER_HOUR;
        y[i] = p->v;
    }
    pw_theilsen_t ts;
    pw_mk_t mk;
    int rc = theil_sen_raw(x, y, m, opts->alpha, &ts);
    if (rc == 0)
        rc = mk_raw(y, m, &mk);
    pw_free(x);
    if (rc < 0)
        return rc;

    out->slope_bytes_per_h = ts.slope;
    out->slope_low_bytes_per_h = ts.low;
    out->slope_high_bytes_per_h = ts.high;
    out->mk_p = mk.p;
    out->trend_up = ts.slope > 0.0 && mk.s > 0 && mk.p < opts->alpha;
    if (!out->trend_up || limit_bytes == 0)
        return 0;
    double room = (double)limit_bytes - used;
    if (room <= 0.0) {
        out->eta_ms = out->eta_soon_ms = out->eta_late_ms = 0;
        return 0;
    }
    out->eta_ms = hours_to_ms(room / ts.slope);
    out->eta_soon_ms = hours_to_ms(room / (ts.high > ts.slope ? ts.high : ts.slope));
    out->eta_late_ms = ts.low > 0.0 ? hours_to_ms(room / ts.low) : -1;
    double span_ms = (double)(pts[n - 1].ts_ms - pts[first].ts_ms);
    if (opts->max_extrapolation > 0.0 && (double)out->eta_ms > opts->max_extrapolation * span_ms) {
        out->eta_ms = out->eta_soon_ms = out->eta_late_ms = -1;
        out->eta_beyond = true;
    }
    return 0;
}

const char *pw_eta_method_name(pw_eta_method_t m)
{
    switch (m) {
    case PW_ETA_METHOD_TREND:
        return "trend";
    case PW_ETA_METHOD_NET:
        return "net";
    case PW_ETA_METHOD_DAY:
        return "day";
    case PW_ETA_METHOD_LEAK:
        return "leak";
    default:
        return NULL;
    }
}

int pw_pressure_leak_eta(const pw_pressure_t *pool, double rate, double rate_low, double rate_high,
                         size_t points, int64_t span_ms, const pw_pressure_opts_t *opts,
                         pw_leak_eta_t *out)
{
    pw_pressure_opts_t def;
    if (opts == NULL) {
        pw_pressure_opts_default(&def);
        opts = &def;
    }
    if (pool == NULL || out == NULL)
        return PW_EINVAL;
    memset(out, 0, sizeof(*out));
    out->basis = PW_ETA_NONE;
    out->eta_ms = out->eta_soon_ms = out->eta_late_ms = -1;
    char a[32], b[32];
    if (pool->limit_bytes == 0) {
        snprintf(out->note, sizeof(out->note), "no ETA: the pool's limit is unknown");
        return 0;
    }
    if (pool->eta_ms >= 0) {
        out->basis = PW_ETA_POOL;
        out->eta_ms = pool->eta_ms;
        out->eta_soon_ms = pool->eta_soon_ms;
        out->eta_late_ms = pool->eta_late_ms;
        out->method = PW_ETA_METHOD_TREND;
        out->rate_bytes_per_h = pool->slope_bytes_per_h;
        snprintf(out->note, sizeof(out->note), "from the pool's trend over %zu points",
                 pool->n_window);
        return 0;
    }
    if (pool->eta_beyond) {
        snprintf(out->note, sizeof(out->note),
                 "no ETA: at the pool's trend it runs out further ahead than %.0f times the "
                 "time its points span",
                 opts->max_extrapolation);
        return 0;
    }
    if (pool->n_window >= opts->min_points && pool->n_window >= 3) {
        snprintf(out->note, sizeof(out->note),
                 "no ETA: the pool as a whole does not rise (trend p %.2g over %zu points)",
                 pool->mk_p, pool->n_window);
        return 0;
    }
    /* Too few points for the pool's trend: the leak's own growth from the pool's last value. */
    pw_detect_fmt_span(span_ms, a, sizeof(a));
    if (!(rate > 0.0) || span_ms <= 0) {
        snprintf(out->note, sizeof(out->note),
                 "no ETA: too few points (%zu over %s) and the leak's growth gives no rate", points,
                 a);
        return 0;
    }
    double room = (double)pool->limit_bytes - (double)pool->used_bytes;
    if (room <= 0.0) {
        out->basis = PW_ETA_LEAK;
        out->eta_ms = out->eta_soon_ms = out->eta_late_ms = 0;
        snprintf(out->note, sizeof(out->note), "the pool is at its limit");
        return 0;
    }
    int64_t eta = hours_to_ms(room / rate);
    if (opts->max_extrapolation > 0.0 && (double)eta > opts->max_extrapolation * (double)span_ms) {
        pw_detect_fmt_span((int64_t)(opts->max_extrapolation * (double)span_ms), b, sizeof(b));
        char c[32];
        pw_detect_fmt_span(eta, c, sizeof(c));
        snprintf(out->note, sizeof(out->note),
                 "no ETA: too few points for one (%zu over %s say nothing past %s; at this "
                 "leak's rate alone %s)",
                 points, a, b, c);
        return 0;
    }
    out->basis = PW_ETA_LEAK;
    out->method = PW_ETA_METHOD_LEAK;
    out->rate_bytes_per_h = rate;
    out->window_ms = span_ms;
    out->eta_ms = eta;
    out->eta_soon_ms = hours_to_ms(room / (rate_high > rate ? rate_high : rate));
    out->eta_late_ms =
        rate_low > 0.0 ? hours_to_ms(room / (rate_low < rate ? rate_low : rate)) : -1;
    snprintf(out->note, sizeof(out->note),
             "from this leak's growth alone, low confidence: %zu points over %s (the pool's "
             "trend needs %zu in its window)%s",
             points, a, opts->min_points, points < 3 ? "; one step, so no range" : "");
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* fleet */

int pw_fleet_dist(const double *v, size_t n, pw_dist_t *out)
{
    if (v == NULL || n == 0 || out == NULL)
        return PW_EINVAL;
    double *s = pw_malloc(n * sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->p50 = pw_stats_quantile7(s, n, 0.5);
    out->p90 = pw_stats_quantile7(s, n, 0.9);
    pw_free(s);
    return 0;
}

/* qsort context for index sorts (qsort has no user pointer in C11). */
typedef struct {
    size_t idx;
    uint32_t group;
} grp_ix_t;

static int cmp_grp(const void *a, const void *b)
{
    const grp_ix_t *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int pw_fleet_outliers(const double *v, const uint32_t *group, size_t n, double threshold, double *z,
                      bool *outlier)
{
    if (v == NULL || group == NULL || z == NULL || n == 0)
        return PW_EINVAL;
    grp_ix_t *ix = pw_malloc(n * sizeof(*ix));
    double *gv = pw_malloc(2 * n * sizeof(*gv));
    if (ix == NULL || gv == NULL) {
        pw_free(ix);
        pw_free(gv);
        return PW_ENOMEM;
    }
    double *gz = gv + n;
    for (size_t i = 0; i < n; i++)
        ix[i] = (grp_ix_t){i, group[i]};
    qsort(ix, n, sizeof(*ix), cmp_grp);
    int count = 0, rc = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ix[j].group == ix[i].group)
            j++;
        size_t m = j - i;
        for (size_t k = 0; k < m; k++)
            gv[k] = v[ix[i + k].idx];
        if (m >= 3) {
            rc = pw_stats_robust_z(gv, m, gz);
            if (rc < 0)
                break;
        } else {
            for (size_t k = 0; k < m; k++)
                gz[k] = 0.0;
        }
        for (size_t k = 0; k < m; k++) {
            size_t h = ix[i + k].idx;
            z[h] = gz[k];
            bool o = gz[k] >= threshold;
            if (outlier)
                outlier[h] = o;
            count += o;
        }
        i = j;
    }
    pw_free(ix);
    pw_free(gv);
    return rc < 0 ? rc : count;
}

/* log of the binomial coefficient C(n, k). */
static double lchoose(double n, double k)
{
    return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
}

/* P(X >= a) for X ~ Hypergeometric(N population, K successes, n draws). */
static double hyper_upper(size_t N, size_t K, size_t n, size_t a)
{
    size_t hi = K < n ? K : n;
    double denom = lchoose((double)N, (double)n), p = 0.0;
    for (size_t x = a; x <= hi; x++) {
        if (n - x > N - K)
            continue;
        p += exp(lchoose((double)K, (double)x) + lchoose((double)(N - K), (double)(n - x)) - denom);
    }
    return p > 1.0 ? 1.0 : p;
}

typedef struct {
    const char *value;
    bool suspect;
} val_ix_t;

static int cmp_val(const void *a, const void *b)
{
    const val_ix_t *x = a, *y = b;
    return strcmp(x->value, y->value);
}

static int cmp_share(const void *a, const void *b)
{
    const pw_attr_share_t *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    if (x->lift != y->lift)
        return x->lift > y->lift ? -1 : 1;
    if (x->attr != y->attr)
        return x->attr < y->attr ? -1 : 1;
    return strcmp(x->value, y->value);
}

int pw_fleet_shared_attrs(const char *const *attrs, size_t n_hosts, size_t n_attrs,
                          const bool *suspect, size_t min_suspects, pw_attr_share_t **out,
                          size_t *n_out)
{
    if (out == NULL || n_out == NULL || (n_hosts > 0 && (attrs == NULL || suspect == NULL)))
        return PW_EINVAL;
    *out = NULL;
    *n_out = 0;
    if (n_hosts == 0 || n_attrs == 0)
        return 0;
    val_ix_t *vals = pw_malloc(n_hosts * sizeof(*vals));
    if (vals == NULL)
        return PW_ENOMEM;
    pw_attr_share_t *res = NULL;
    size_t nres = 0, cap = 0;
    int rc = 0;
    for (size_t j = 0; j < n_attrs && rc == 0; j++) {
        size_t m = 0, sus = 0;
        for (size_t i = 0; i < n_hosts; i++) {
            const char *val = attrs[i * n_attrs + j];
            if (val == NULL)
                continue;
            vals[m++] = (val_ix_t){val, suspect[i]};
            sus += suspect[i];
        }
        if (sus == 0)
            continue;
        qsort(vals, m, sizeof(*vals), cmp_val);
        for (size_t i = 0; i < m;) {
            size_t k = i, sw = 0;
            while (k < m && strcmp(vals[k].value, vals[i].value) == 0)
                sw += vals[k++].suspect;
            size_t hw = k - i;
            double fs = (double)sw / (double)sus, fh = (double)hw / (double)m;
            if (sw >= min_suspects && sw > 0 && fs > fh) {
                if (nres == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    pw_attr_share_t *r = pw_realloc(res, nc * sizeof(*r));
                    if (r == NULL) {
                        rc = PW_ENOMEM;
                        break;
                    }
                    res = r;
                    cap = nc;
                }
                res[nres++] = (pw_attr_share_t){
                    .attr = j,
                    .value = vals[i].value,
                    .suspects_with = sw,
                    .suspects = sus,
                    .hosts_with = hw,
                    .hosts = m,
                    .frac_suspects = fs,
                    .frac_hosts = fh,
                    .lift = fs / fh,
                    .p = hyper_upper(m, hw, sus, sw),
                };
            }
            i = k;
        }
    }
    pw_free(vals);
    if (rc < 0) {
        pw_free(res);
        return rc;
    }
    if (nres > 1)
        qsort(res, nres, sizeof(*res), cmp_share);
    *out = res;
    *n_out = nres;
    return 0;
}
