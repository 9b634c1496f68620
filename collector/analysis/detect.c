/* detect.c: the leak detection engine (method in detect.h). */
#include "detect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP     PW_DETECT_MAX_POINTS
#define MAXPAIRS (MAXP * (MAXP - 1) / 2)
#define Z90      1.6448536269514722 /* z_{0.95}: Sen's two-sided 90 % interval */

void pw_detect_opts_default(pw_detect_opts_t *o)
{
    o->alpha = 0.05;
    o->min_snr = 3.0;
    o->min_growth_bytes = 4096.0;
    o->min_rate_bytes_per_h = 1024.0;
    o->min_span_ms = 10 * 60000;
    o->min_points = 2;
}

const char *pw_detect_verdict_name(pw_detect_verdict_t v)
{
    switch (v) {
    case PW_DETECT_TOO_SHORT:
        return "too-short";
    case PW_DETECT_PLATEAU:
        return "plateau";
    case PW_DETECT_NOISE:
        return "noise";
    case PW_DETECT_GROWING_CACHE:
        return "growing-cache";
    case PW_DETECT_LEAK:
        return "leak";
    }
    return "?";
}

/* ---- small statistics ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* A window: points [a, b) of the judged series. */
typedef struct {
    size_t a, b;
} win_t;

/* Sorted pair slopes of y over x within each window (x distinct pairs only). */
static size_t pair_slopes(const double *x, const double *y, const win_t *w, size_t nw, double *out)
{
    size_t k = 0;
    for (size_t s = 0; s < nw; s++)
        for (size_t i = w[s].a; i < w[s].b; i++)
            for (size_t j = i + 1; j < w[s].b; j++)
                if (x[j] != x[i])
                    out[k++] = (y[j] - y[i]) / (x[j] - x[i]);
    qsort(out, k, sizeof(*out), cmp_double);
    return k;
}

static double sorted_median(const double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Value of rank r (1-based, fractional: linear between neighbours, clamped to [1, n]). */
static double rank_value(const double *v, size_t n, double r)
{
    if (r < 1.0)
        r = 1.0;
    if (r > (double)n)
        r = (double)n;
    size_t lo = (size_t)floor(r);
    double f = r - (double)lo;
    if (lo >= n)
        return v[n - 1];
    return v[lo - 1] + f * (v[lo] - v[lo - 1]);
}

/* Kendall's S and its ties-corrected variance, summed over windows. */
static void mk_sum(const double *y, const win_t *w, size_t nw, double *s_out, double *var_out)
{
    double s = 0.0, var = 0.0;
    double tmp[MAXP];
    for (size_t k = 0; k < nw; k++) {
        size_t n = w[k].b - w[k].a;
        for (size_t i = w[k].a; i < w[k].b; i++)
            for (size_t j = i + 1; j < w[k].b; j++)
                s += (y[j] > y[i]) - (y[j] < y[i]);
        double v = (double)n * (n - 1) * (2.0 * n + 5);
        memcpy(tmp, y + w[k].a, n * sizeof(*tmp));
        qsort(tmp, n, sizeof(*tmp), cmp_double);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j < n && tmp[j] == tmp[i])
                j++;
            double t = (double)(j - i);
            v -= t * (t - 1) * (2 * t + 5);
            i = j;
        }
        var += v / 18.0;
    }
    *s_out = s;
    *var_out = var;
}

typedef struct {
    double slope, low, high;
} sen_t;

/* Seasonal Theil-Sen slope with Sen's interval at z (pairs within windows). */
static sen_t sen_slope(const double *x, const double *y, const win_t *w, size_t nw, double var_s,
                       double *scratch)
{
    sen_t r = {0, 0, 0};
    size_t np = pair_slopes(x, y, w, nw, scratch);
    if (np == 0)
        return r;
    r.slope = sorted_median(scratch, np);
    double c = Z90 * sqrt(var_s > 0 ? var_s : 0);
    r.low = rank_value(scratch, np, ((double)np - c) / 2.0);
    r.high = rank_value(scratch, np, ((double)np + c) / 2.0 + 1.0);
    if (var_s <= 0)
        r.low = r.high = r.slope;
    return r;
}

/* Plain Theil-Sen slope of points [a, b) (no interval). */
static double ts_slope(const double *x, const double *y, size_t a, size_t b, double *scratch)
{
    win_t w = {a, b};
    size_t np = pair_slopes(x, y, &w, 1, scratch);
    return sorted_median(scratch, np);
}

/* Least squares of y on a hinge at x_k over [a, b), with an intercept: u = max(0, x - x_k)
 * (flat, then growing: a late start) or, with `level`, u = min(x, x_k) (growing, then flat: a
 * cache that levelled off). Returns the squared error (INFINITY when u does not vary) and the
 * slope in *slope. A hinge at the first point (late) or at the last (level) is one line. */
static double hinge_fit(const double *x, const double *y, size_t a, size_t b, size_t k, int level,
                        double *slope)
{
    size_t n = b - a;
    double su = 0, sy = 0, suu = 0, suy = 0;
    for (size_t i = a; i < b; i++) {
        double u = level ? (x[i] < x[k] ? x[i] : x[k]) : (x[i] > x[k] ? x[i] - x[k] : 0.0);
        su += u;
        sy += y[i];
        suu += u * u;
        suy += u * y[i];
    }
    double den = (double)n * suu - su * su;
    if (den <= 0)
        return INFINITY;
    double bb = ((double)n * suy - su * sy) / den, aa = (sy - bb * su) / (double)n;
    double sse = 0;
    for (size_t i = a; i < b; i++) {
        double u = level ? (x[i] < x[k] ? x[i] : x[k]) : (x[i] > x[k] ? x[i] - x[k] : 0.0);
        double e = y[i] - aa - bb * u;
        sse += e * e;
    }
    *slope = bb;
    return sse;
}

/* The best hinge of [a, b) over the splits k in [k0, k1): the split with the smallest squared
 * error and a positive slope, taken when it explains the data clearly better than one line
 * (SSE <= 0.6 of the straight fit's). Returns the split, or SIZE_MAX when there is none. */
static size_t best_hinge(const double *x, const double *y, size_t a, size_t b, size_t k0, size_t k1,
                         int level)
{
    double slope = 0, best_sse = INFINITY;
    double sse0 = hinge_fit(x, y, a, b, level ? b - 1 : a, level, &slope);
    size_t best = SIZE_MAX;
    for (size_t k = k0; k < k1; k++) {
        double sse = hinge_fit(x, y, a, b, k, level, &slope);
        if (slope > 0 && sse < best_sse) {
            best_sse = sse;
            best = k;
        }
    }
    if (best == SIZE_MAX || !(best_sse <= 0.6 * sse0))
        return SIZE_MAX;
    return best;
}

/* a late start's growth must reach this many times the band the row churned in before it */
#define LATE_BAND 2.0
/* A growth whose last third ran at most this share of its first third's pace slowed into its
 * level: a cache filling (docs/internals/detection.md "Caches that fill, leaks that pause") */
#define DECEL_CACHE 0.6

/* Late start on [a, b) (>= 8 points): returns the split index (a when one line fits as well). */
static size_t late_start(const double *x, const double *y, size_t a, size_t b, double *scratch)
{
    size_t n = b - a;
    if (n < 8)
        return a;
    /* the growth after the split has at least 6 points and a quarter of the segment: a short
     * rising tail of churn always exists somewhere, and the search would find it */
    size_t min_after = n / 4 > 6 ? n / 4 : 6;
    size_t best = best_hinge(x, y, a, b, a + 1, b - min_after + 1, 0);
    if (best == SIZE_MAX)
        return a;
    /* The part before the split must be flat next to the growth after it. */
    double before = ts_slope(x, y, a, best + 1, scratch), after = ts_slope(x, y, best, b, scratch);
    if (after <= 0 || before > 0.25 * after)
        return a;
    /* ... and the growth must leave the band the row churned in before it: a rise no larger
     * than its earlier churn is more churn (a row that wanders by a few allocations has a
     * rising stretch somewhere, and the search finds it) */
    double lo = y[a], hi = y[a];
    for (size_t i = a; i <= best; i++) {
        lo = y[i] < lo ? y[i] : lo;
        hi = y[i] > hi ? y[i] : hi;
    }
    if (after * (x[b - 1] - x[best]) < LATE_BAND * (hi - lo))
        return a;
    return best;
}

/* Levelling off on [a, b) (>= 9 points), the mirror of late_start: the best hinge y = c +
 * d min(x, x_k) over the splits that leave 4 points or more on each side, when the part after
 * it is flat next to the growth before it (Theil-Sen slope at most a quarter). Returns the split,
 * or b when there is none: a cache that stopped growing and churns around its level wanders out
 * of any fixed band around its last value, so the band alone (flat_ms) cannot say when it
 * stopped. */
static size_t level_off(const double *x, const double *y, size_t a, size_t b, double *scratch)
{
    if (b - a < 9)
        return b;
    size_t best = best_hinge(x, y, a, b, a + 3, b - 3, 1);
    if (best == SIZE_MAX)
        return b;
    double before = ts_slope(x, y, a, best + 1, scratch), after = ts_slope(x, y, best, b, scratch);
    if (before <= 0 || after > 0.25 * before)
        return b;
    return best;
}

/* Deceleration of the growth on [a, g] (g the last point before the row levelled off, rise
 * R = y[g] - y[a]): the median rate (bytes / h) of its rising steps in the last third of R over
 * that in the first third (a step belongs where its midpoint lies; a step rises when it rose by
 * more than min_rise, half the points' scatter: churn in a pause rises and falls by that); 1
 * when either third holds fewer than 3 rising steps or the growth part fewer than 12 points.
 * Rates of rising steps
 * only: a leak that paused overnight grows again at the pace of its cause, and its pause is no
 * slowing down. A cache fills its working set ever more slowly as it holds more of it (its rate
 * falls towards 0 as it nears its level); a leak grows at the pace of its cause until the cause
 * pauses (an office-hours leak grows at one rate all day, then stops at once). Thirds of the
 * rise, not of the time: where the growth began does not matter (a cache begins to fill some
 * time after boot, and a row's first ring points can be hours apart). scratch: 2 x MAXP. */
static double growth_decel(const double *x, const double *y, size_t a, size_t g, double min_rise,
                           double *scratch)
{
    if (g < a + 11 || y[g] <= y[a])
        return 1.0;
    double r = y[g] - y[a], *early = scratch, *late = scratch + MAXP;
    size_t ne = 0, nl = 0;
    for (size_t i = a + 1; i <= g; i++) {
        if (y[i] - y[i - 1] <= min_rise || x[i] <= x[i - 1])
            continue; /* (churn during a pause rises too, by the points' own noise) */
        double f = ((y[i] + y[i - 1]) / 2 - y[a]) / r, rate = (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
        if (f <= 1.0 / 3)
            early[ne++] = rate;
        else if (f >= 2.0 / 3)
            late[nl++] = rate;
    }
    if (ne < 3 || nl < 3)
        return 1.0;
    double e = median_of(early, ne);
    return e > 0 ? median_of(late, nl) / e : 1.0;
}

/* "1.5 MiB", "812 KiB", "640 B" */
static void fmt_bytes(double b, char *out, size_t cap)
{
    double a = fabs(b);
    const char *sign = b < 0 ? "-" : "";
    if (a >= 1024.0 * 1024 * 1024)
        snprintf(out, cap, "%s%.1f GiB", sign, a / (1024.0 * 1024 * 1024));
    else if (a >= 1024.0 * 1024)
        snprintf(out, cap, "%s%.1f MiB", sign, a / (1024.0 * 1024));
    else if (a >= 1024.0)
        snprintf(out, cap, "%s%.0f KiB", sign, a / 1024.0);
    else
        snprintf(out, cap, "%s%.0f B", sign, a);
}

void pw_detect_fmt_span(int64_t ms, char *out, size_t cap)
{
    double h = (double)ms / 3600000.0;
    if (h >= 48)
        snprintf(out, cap, "%.1f days", h / 24.0);
    else if (h >= 1)
        snprintf(out, cap, "%.1f h", h);
    else
        snprintf(out, cap, "%.0f min", (double)ms / 60000.0);
}

/* ---- the verdict ---------------------------------------------------------------------------- */

static void evidence(pw_detect_t *o, const char *why)
{
    char g[32], pa[32], sp[32];
    fmt_bytes((double)o->growth_bytes, g, sizeof(g));
    fmt_bytes(o->per_alloc_bytes, pa, sizeof(pa));
    pw_detect_fmt_span(o->span_ms, sp, sizeof(sp));
    int len;
    if (o->growth_diff > 0 && o->per_alloc_bytes > 0)
        len = snprintf(o->evidence, sizeof(o->evidence),
                       "outstanding %+lld allocations of %s (%s%s) over %s, rose in %zu of %zu "
                       "steps",
                       (long long)o->growth_diff, pa, o->growth_bytes >= 0 ? "+" : "", g, sp,
                       o->steps_up, o->steps);
    else
        len = snprintf(o->evidence, sizeof(o->evidence),
                       "bytes %s%s, outstanding allocations %+lld over %s, rose in %zu of %zu "
                       "steps",
                       o->growth_bytes >= 0 ? "+" : "", g, (long long)o->growth_diff, sp,
                       o->steps_up, o->steps);
    if (len > 0 && (size_t)len < sizeof(o->evidence) && why != NULL && why[0] != '\0')
        snprintf(o->evidence + len, sizeof(o->evidence) - (size_t)len, "; %s", why);
}

int pw_detect_eval(const pw_detect_point_t *p, size_t n, const pw_detect_opts_t *opts,
                   pw_detect_t *out)
{
    if (out == NULL || (p == NULL && n > 0))
        return PW_EINVAL;
    memset(out, 0, sizeof(*out));
    out->mk_p = 1.0;
    out->saturation = 1.0;
    out->decel = 1.0;
    for (size_t i = 1; i < n; i++)
        if (p[i].ts_ms < p[i - 1].ts_ms)
            return PW_EINVAL;
    pw_detect_opts_t dflt;
    if (opts == NULL) {
        pw_detect_opts_default(&dflt);
        opts = &dflt;
    }
    out->verdict = PW_DETECT_TOO_SHORT;
    if (n < 2) {
        out->points = n;
        snprintf(out->evidence, sizeof(out->evidence),
                 n == 0 ? "no points" : "one point: a single snapshot is no evidence of growth");
        return 0;
    }

    /* Thin to MAXP points (the ends and segment boundaries survive: indices i (n-1)/(m-1)). */
    size_t m = n > MAXP ? MAXP : n;
    double x[MAXP], yb[MAXP], yd[MAXP];
    uint32_t boot[MAXP];
    uint64_t al[MAXP], fr[MAXP];
    for (size_t i = 0; i < m; i++) {
        size_t j = m == n ? i : (size_t)((double)i * (double)(n - 1) / (double)(m - 1));
        x[i] = (double)(p[j].ts_ms - p[0].ts_ms) / 3600000.0;
        yb[i] = (double)p[j].bytes;
        yd[i] = (double)p[j].diff;
        boot[i] = p[j].boot;
        al[i] = p[j].allocs;
        fr[i] = p[j].frees;
    }
    out->points = m;

    /* 1. segments */
    win_t seg[MAXP];
    size_t ns = 0, start = 0;
    for (size_t i = 1; i <= m; i++)
        if (i == m || boot[i] != boot[i - 1] || (al[i] < al[i - 1] && fr[i] < fr[i - 1])) {
            seg[ns++] = (win_t){start, i};
            start = i;
        }
    double scratch[MAXPAIRS]; /* 65 KB of stack: pair slopes */

    /* 2. the last segment with two points or more, from its late start; earlier segments that
     * grew are pooled with it. */
    size_t last = ns;
    while (last > 0 && seg[last - 1].b - seg[last - 1].a < 2)
        last--;
    if (last == 0) {
        snprintf(out->evidence, sizeof(out->evidence),
                 "one point per boot: a single snapshot is no evidence of growth");
        return 0;
    }
    win_t w[MAXP];
    size_t nw = 0;
    win_t judged = seg[last - 1];
    judged.a = late_start(x, yb, judged.a, judged.b, scratch);
    for (size_t s = 0; s + 1 < last; s++)
        if (seg[s].b - seg[s].a >= 2) /* all of them: choosing those that grew would bias */
            w[nw++] = seg[s];
    w[nw++] = judged;
    out->segments = nw;
    out->since_ms = p[0].ts_ms + (int64_t)llround(x[judged.a] * 3600000.0);
    out->first_bytes = (uint64_t)yb[judged.a];
    out->last_bytes = (uint64_t)yb[judged.b - 1];

    /* 3. statistics */
    size_t pts = 0;
    double rise = 0, fall = 0, scatter_v[MAXP];
    int all_up = 1;
    for (size_t s = 0; s < nw; s++) {
        out->span_ms += (int64_t)llround((x[w[s].b - 1] - x[w[s].a]) * 3600000.0);
        out->growth_bytes += (int64_t)(yb[w[s].b - 1] - yb[w[s].a]);
        out->growth_diff += (int64_t)(yd[w[s].b - 1] - yd[w[s].a]);
        out->growth_allocs += (int64_t)(al[w[s].b - 1] - al[w[s].a]);
        out->growth_frees += (int64_t)(fr[w[s].b - 1] - fr[w[s].a]);
        pts += w[s].b - w[s].a;
        double runmax = yb[w[s].a];
        for (size_t i = w[s].a + 1; i < w[s].b; i++) {
            out->steps++;
            if (yb[i] > yb[i - 1]) {
                out->steps_up++;
                out->rise_ms += (int64_t)llround((x[i] - x[i - 1]) * 3600000.0);
            }
            if (yb[i] != yb[i - 1])
                out->steps_moved++;
            if (!(yb[i] > yb[i - 1] && yd[i] > yd[i - 1]))
                all_up = 0;
            if (yb[i] > runmax)
                runmax = yb[i];
            if (runmax - yb[i] > fall)
                fall = runmax - yb[i];
        }
        if (runmax - yb[w[s].a] > rise)
            rise = runmax - yb[w[s].a];
    }
    out->fall = rise > 0 ? fall / rise : 0.0;
    if (out->growth_bytes > 0 && out->growth_diff > 0)
        out->per_alloc_bytes = (double)out->growth_bytes / (double)out->growth_diff;
    double s_b, var_b, s_d, var_d;
    mk_sum(yb, w, nw, &s_b, &var_b);
    mk_sum(yd, w, nw, &s_d, &var_d);
    sen_t sb = sen_slope(x, yb, w, nw, var_b, scratch);
    sen_t sd = sen_slope(x, yd, w, nw, var_d, scratch);
    out->rate_bytes_per_h = sb.slope;
    out->rate_low_bytes_per_h = sb.low;
    out->rate_high_bytes_per_h = sb.high;
    out->diff_rate_per_h = sd.slope;
    if (pts >= 4 && var_b > 0) {
        double z = s_b > 0 ? (s_b - 1) / sqrt(var_b) : s_b < 0 ? (s_b + 1) / sqrt(var_b) : 0;
        out->mk_p = 0.5 * erfc(z / sqrt(2.0));
    }
    /* the points' own noise, whatever the shape of the growth: the scatter of consecutive
     * differences around the fitted slope, 1.4826 MAD / sqrt 2 (a curve that bends, like a
     * cache levelling off, is not noise) */
    size_t nv = 0;
    for (size_t s = 0; s < nw; s++)
        for (size_t i = w[s].a + 1; i < w[s].b; i++)
            scatter_v[nv++] = (yb[i] - yb[i - 1]) - sb.slope * (x[i] - x[i - 1]);
    double med = median_of(scatter_v, nv);
    for (size_t i = 0; i < nv; i++)
        scatter_v[i] = fabs(scatter_v[i] - med);
    double scatter = 1.4826 * median_of(scatter_v, nv) / sqrt(2.0);
    double net = sb.slope * (double)out->span_ms / 3600000.0;
    out->snr = scatter > 0 ? net / scatter : (net > 0 ? INFINITY : 0.0);
    size_t jn = judged.b - judged.a;
    if (jn >= 9) {
        size_t cut = judged.a + (2 * jn) / 3;
        double early = ts_slope(x, yb, judged.a, cut + 1, scratch);
        double late = ts_slope(x, yb, cut, judged.b, scratch);
        out->saturation = early > 0 ? late / early : 1.0;
    }
    /* how long the judged window has stayed at its last level, and how long it grew before */
    double tol = 3.0 * scatter > 0.02 * rise ? 3.0 * scatter : 0.02 * rise;
    size_t top = judged.b - 1;
    while (top > judged.a && yb[top - 1] >= yb[judged.b - 1] - tol)
        top--;
    out->flat_ms = (int64_t)llround((x[judged.b - 1] - x[top]) * 3600000.0);
    int64_t grow_ms = (int64_t)llround((x[top] - x[judged.a]) * 3600000.0);
    /* or, when it levelled off and churns around its level since, from the fitted split */
    size_t lk = level_off(x, yb, judged.a, judged.b, scratch);
    int64_t lflat_ms = 0, lgrow_ms = 0;
    if (lk < judged.b) {
        lflat_ms = (int64_t)llround((x[judged.b - 1] - x[lk]) * 3600000.0);
        lgrow_ms = (int64_t)llround((x[lk] - x[judged.a]) * 3600000.0);
        if (lflat_ms > out->flat_ms && lgrow_ms > 0) {
            out->flat_ms = lflat_ms;
            grow_ms = lgrow_ms;
        }
    }
    /* did the growth slow down into its level (a cache filling), or stop at full pace? */
    out->decel =
        out->flat_ms > 0 ? growth_decel(x, yb, judged.a, top, 0.5 * scatter, scratch) : 1.0;
    /* drift: the mean rate of the steps against their scatter, t = mean / (sd / sqrt k) (a
     * random walk drifts by chance, but rarely by 2.5 of its own steps' deviations) */
    double sum = 0, sum2 = 0;
    size_t k = 0;
    for (size_t s = 0; s < nw; s++)
        for (size_t i = w[s].a + 1; i < w[s].b; i++) {
            if (x[i] <= x[i - 1] || yb[i] == yb[i - 1])
                continue; /* only the steps that moved: a leak in steps rests in between */
            double r = (yb[i] - yb[i - 1]) / (x[i] - x[i - 1]); /* steps as rates: the points
                                                                   are not evenly spaced */
            sum += r;
            sum2 += r * r;
            k++;
        }
    double mean = k > 0 ? sum / (double)k : 0.0;
    double var = k > 1 ? (sum2 - sum * mean) / (double)(k - 1) : 0.0;
    out->drift_t = var > 0 ? mean / sqrt(var / (double)k) : (mean > 0 ? INFINITY : 0.0);
    /* a series judged again and again (the collector every 30 s, an import's many rows) is
     * tested many times: the longer the series, the stricter the level (real leaks over many
     * points have p far below it) */
    double alpha = pts < 8 ? opts->alpha : pts < 24 ? opts->alpha / 5 : opts->alpha / 50;
    if (judged.a > seg[last - 1].a)
        alpha /= 5; /* the split was searched for: it must be clearer than a whole series */

    /* 4. verdict */
    char why[128] = "";
    int changed = 0;
    for (size_t s = 0; s < nw && !changed; s++)
        for (size_t i = w[s].a + 1; i < w[s].b && !changed; i++)
            changed = yb[i] != yb[w[s].a];
    if (pts <= nw) {
        out->verdict = PW_DETECT_TOO_SHORT;
        snprintf(why, sizeof(why), "one point per window");
    } else if (!changed) {
        out->verdict = PW_DETECT_PLATEAU;
        snprintf(why, sizeof(why), "bytes unchanged");
    } else if (pts < opts->min_points) {
        out->verdict = PW_DETECT_TOO_SHORT;
        snprintf(why, sizeof(why), "%zu points: a verdict needs %zu", pts, opts->min_points);
    } else if (out->span_ms < opts->min_span_ms) {
        out->verdict = PW_DETECT_TOO_SHORT;
        snprintf(why, sizeof(why), "only %.0f s of data: too short to tell growth from churn",
                 (double)out->span_ms / 1000.0);
    } else if (out->growth_bytes <= 0 || sb.slope <= 0) {
        out->verdict = PW_DETECT_NOISE;
        snprintf(why, sizeof(why), "no net growth");
    } else if ((double)out->growth_bytes < opts->min_growth_bytes && pts >= 4) {
        out->verdict = PW_DETECT_PLATEAU;
        snprintf(why, sizeof(why), "growth below %.0f B", opts->min_growth_bytes);
    } else if (pts >= 4 && sb.slope < opts->min_rate_bytes_per_h) {
        out->verdict = PW_DETECT_PLATEAU;
        snprintf(why, sizeof(why), "slower than %.0f B/h", opts->min_rate_bytes_per_h);
    } else if (out->fall >= 0.5) {
        out->verdict = PW_DETECT_NOISE;
        snprintf(why, sizeof(why), "fell back by %.0f %% of its rise (freed in bulk)",
                 out->fall * 100);
    } else if (pts < 4 && !all_up) {
        out->verdict = PW_DETECT_NOISE;
        snprintf(why, sizeof(why), "bytes and allocations did not both rise at every step");
    } else if (pts >= 4 && (out->mk_p >= alpha || out->snr < opts->min_snr ||
                            (pts >= 6 && out->drift_t < 2.5))) {
        out->verdict = PW_DETECT_NOISE;
        snprintf(why, sizeof(why), "not significant (p %.3g, growth %.1f x scatter, drift %.1f)",
                 out->mk_p, out->snr, out->drift_t);
    } else if (jn >= 4 && grow_ms > 0 &&
               (out->flat_ms > 2 * grow_ms ||
                (jn >= 9 && out->saturation < 0.15 && out->flat_ms > grow_ms))) {
        char a[32], b[32];
        pw_detect_fmt_span(out->flat_ms, a, sizeof(a));
        pw_detect_fmt_span(grow_ms, b, sizeof(b));
        out->verdict = PW_DETECT_GROWING_CACHE;
        snprintf(why, sizeof(why), "levelled off: flat for %s after growing for %s", a, b);
    } else if (grow_ms > 0 && 4 * out->flat_ms >= grow_ms && out->decel <= DECEL_CACHE) {
        char a[32], b[32];
        pw_detect_fmt_span(out->flat_ms, a, sizeof(a));
        pw_detect_fmt_span(grow_ms, b, sizeof(b));
        out->verdict = PW_DETECT_GROWING_CACHE;
        snprintf(why, sizeof(why), "filled up: grew for %s, its pace falling to %d %%, flat for %s",
                 b, (int)lround(out->decel * 100), a);
    } else if (out->growth_diff <= 0 && sd.slope <= 0) {
        out->verdict = PW_DETECT_GROWING_CACHE;
        snprintf(why, sizeof(why), "bytes rose without more outstanding allocations");
    } else {
        out->verdict = PW_DETECT_LEAK;
        if (nw > 1)
            snprintf(why, sizeof(why), "grew in each of %zu boots", nw);
        else if (judged.a > seg[last - 1].a)
            snprintf(why, sizeof(why), "flat before it began growing");
    }

    /* 5. confidence and score */
    if (out->verdict == PW_DETECT_LEAK || out->verdict == PW_DETECT_GROWING_CACHE) {
        if (pts < 4) {
            out->confidence = pts == 2 ? 0.15 : 0.25;
        } else {
            double lf = (double)(pts - 1) / 11.0, sf = out->snr / 6.0;
            out->confidence = (1.0 - out->mk_p) * (lf < 1 ? lf : 1) * (sf < 1 ? sf : 1);
        }
        double kib = out->rate_bytes_per_h / 1024.0;
        double wgt = out->verdict == PW_DETECT_LEAK ? 1.0 : 0.3;
        out->score = log10(1.0 + (kib > 0 ? kib : 0)) * out->confidence * wgt;
    }
    evidence(out, why);
    return 0;
}

static double rel_growth(const pw_detect_t *d)
{
    double f = d->first_bytes > 0 ? (double)d->first_bytes : 1.0;
    return ((double)d->last_bytes - (double)d->first_bytes) / f;
}

static double abs_growth(const pw_detect_t *d)
{
    return (double)d->last_bytes - (double)d->first_bytes;
}

/* Robust location and scale of v[0..m) (reordered): the median, and 1.4826 x MAD; when more than
 * half the values are equal (MAD 0) 1.2533 x the mean absolute deviation from the median instead
 * (the modified z-score's usual fallback; 1.2533 = sqrt(pi / 2) makes it estimate a normal sigma
 * too). */
static void robust(double *v, size_t m, double *med, double *scale)
{
    *med = median_of(v, m);
    double sum = 0;
    for (size_t i = 0; i < m; i++) {
        v[i] = fabs(v[i] - *med);
        sum += v[i];
    }
    double mad = median_of(v, m);
    *scale = mad > 0 ? 1.4826 * mad : 1.2533 * sum / (double)m;
}

static double zscore(double x, double med, double scale)
{
    return scale > 0 ? (x - med) / scale : (x > med ? INFINITY : 0.0);
}

/* The row's counters over its windows tell one story: allocations and frees did not go
 * backwards, and no more became outstanding than were allocated */
static int counters_agree(const pw_detect_t *d)
{
    return d->growth_allocs > 0 && d->growth_frees >= 0 && d->growth_diff <= d->growth_allocs;
}

/* Points in the judged windows (a short last boot after a long one is judged on its few) */
static size_t judged_points(const pw_detect_t *d)
{
    return d->steps + d->segments;
}

/* The share of the allocations a row made over its windows that it still holds: growth in
 * outstanding allocations / allocations made. 0 when its outstanding allocations did not rise;
 * 1 when its counters contradict each other (frees went backwards, or more became outstanding
 * than were allocated): whatever it kept cannot be told, so it is taken as all. */
static double kept_share(const pw_detect_t *d)
{
    if (d->growth_diff <= 0)
        return 0.0;
    if (!counters_agree(d))
        return 1.0;
    return (double)d->growth_diff / (double)d->growth_allocs;
}

/* What a row of a still host moves by between two screens (PW_DETECT_STILL_MOVE_*), in
 * outstanding allocations, for a row of d's size (its first outstanding allocations: first
 * bytes / bytes per allocation) */
static double still_move(const pw_detect_t *d)
{
    double first = d->per_alloc_bytes > 0 ? (double)d->first_bytes / d->per_alloc_bytes : 0;
    double share = PW_DETECT_STILL_MOVE_SHARE * first;
    return share > PW_DETECT_STILL_MOVE_ALLOCS ? share : PW_DETECT_STILL_MOVE_ALLOCS;
}

/* Keeps the two largest of a measure over the rows, and which row holds the largest. */
typedef struct {
    double v[2];
    size_t top;
} top2_t;

static void top2_add(top2_t *t, double x, size_t i)
{
    if (t->top == SIZE_MAX || x > t->v[0]) {
        t->v[1] = t->v[0];
        t->v[0] = x;
        t->top = i;
    } else if (x > t->v[1]) {
        t->v[1] = x;
    }
}

/* The largest value of the measure among the rows other than row i */
static double top2_other(const top2_t *t, size_t i)
{
    return i == t->top ? t->v[1] : t->v[0];
}

size_t pw_detect_peer_screen(pw_detect_t *const *v, size_t n)
{
    size_t m = 0, moved = 0, demoted = 0;
    /* the two largest changes of any row, in bytes and in outstanding allocations (rises and
     * falls alike), and which row made the largest */
    double big_b[2] = {0, 0}, big_d[2] = {0, 0};
    size_t top_b = SIZE_MAX, top_d = SIZE_MAX;
    /* the two largest relative growths, rises in outstanding allocations and kept shares */
    top2_t t_rel = {{-INFINITY, -INFINITY}, SIZE_MAX}, t_diff = t_rel, t_kept = t_rel;
    for (size_t i = 0; i < n; i++)
        if (v[i]->points >= 2) {
            m++;
            moved += abs_growth(v[i]) != 0;
            double cb = fabs((double)v[i]->growth_bytes), cd = fabs((double)v[i]->growth_diff);
            if (cb > big_b[0])
                big_b[1] = big_b[0], big_b[0] = cb, top_b = i;
            else if (cb > big_b[1])
                big_b[1] = cb;
            if (cd > big_d[0])
                big_d[1] = big_d[0], big_d[0] = cd, top_d = i;
            else if (cd > big_d[1])
                big_d[1] = cd;
            top2_add(&t_rel, rel_growth(v[i]), i);
            top2_add(&t_diff, (double)v[i]->growth_diff, i);
            top2_add(&t_kept, kept_share(v[i]), i);
        }
    if (m < 5)
        return 0;
    double *g = malloc((m + 2 * moved) * sizeof(*g));
    if (g == NULL)
        return 0; /* out of memory: the verdicts stay as they are */
    /* do the host's rows mostly stand still between points? the median row's share of steps
     * that moved (a run of equal points is one step in a ring) */
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i]->points >= 2 && v[i]->steps > 0)
            g[ns++] = (double)v[i]->steps_moved / (double)v[i]->steps;
    int still = ns > 0 && median_of(g, ns) < 0.75;
    size_t k = 0, j = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i]->points >= 2) {
            g[k++] = rel_growth(v[i]);
            if (abs_growth(v[i]) != 0) {
                g[m + j] = rel_growth(v[i]);
                g[m + moved + j++] = abs_growth(v[i]);
            }
        }
    /* all rows, relative growth: the median and MAD (no fallback: when most rows did not move
     * there is no spread to stand out of) */
    double med_all = median_of(g, m);
    for (size_t i = 0; i < m; i++)
        g[i] = fabs(g[i] - med_all);
    double mad_all = 1.4826 * median_of(g, m);
    /* the rows that moved: relative and byte growth, and the share of their allocations they
     * kept */
    double med_r = 0, sc_r = 0, med_a = 0, sc_a = 0, med_k = 0, sc_k = 0;
    if (moved >= 5) {
        robust(g + m, moved, &med_r, &sc_r);
        robust(g + m + moved, moved, &med_a, &sc_a);
        size_t q = 0; /* g[0 .. m) is free again */
        for (size_t i = 0; i < n; i++)
            if (v[i]->points >= 2 && abs_growth(v[i]) != 0)
                g[q++] = kept_share(v[i]);
        robust(g, q, &med_k, &sc_k);
    }
    free(g);
    for (size_t i = 0; i < n; i++) {
        pw_detect_t *d = v[i];
        /* a trend of 4 points or more stands on its own, unless it rests on few rises (a quarter
         * of its steps or more did not rise) among rows that mostly stand still: there a row
         * that moved up a few times by a few allocations passes the trend tests as a leak in
         * steps does */
        if (d->verdict != PW_DETECT_LEAK ||
            (judged_points(d) >= 4 && (!still || 4 * d->rise_ms >= 3 * d->span_ms)))
            continue;
        double r = rel_growth(d);
        double z = mad_all > 0 ? (r - med_all) / mad_all : 0.0;
        /* an outlier among all rows, relative to itself; a sparse trend also by what it kept:
         * on a still host most rows did not move, so the scale is a few rows' moves and a
         * small row that wandered up a few allocations is "an outlier" by its size alone */
        if (z >= PW_DETECT_PEER_Z && r >= 0.10 &&
            (judged_points(d) < 4 ||
             (moved >= 5 && zscore(kept_share(d), med_k, sc_k) >= PW_DETECT_PEER_Z)))
            continue;
        double zr = moved >= 5 ? zscore(r, med_r, sc_r) : 0.0;
        double za = moved >= 5 ? zscore(abs_growth(d), med_a, sc_a) : 0.0;
        if (zr >= PW_DETECT_PEER_Z && za >= PW_DETECT_PEER_Z &&
            abs_growth(d) >= PW_DETECT_PEER_MIN_BYTES)
            continue; /* an outlier among the rows that moved, in both senses */
        double ob = i == top_b ? big_b[1] : big_b[0], od = i == top_d ? big_d[1] : big_d[0];
        /* dominant: it grew several times more than any other row changed, and than a row of a
         * still host moves by in as many steps as it rose — so the only row that moved is
         * dominant when its move is beyond that noise, and a row one allocation beside it is
         * judged the same. A sparse trend on a still host is judged so too while it keeps
         * rising (flat no longer than its mean time between rises: a cache that levelled off
         * is not) */
        int compared = judged_points(d) < 4 || d->flat_ms * (int64_t)d->steps_up <= d->span_ms;
        double od_still = still_move(d) * (double)d->steps_up;
        /* a sparse trend that never fell rose in steps only: what other rows changed between
         * its ends is no measure of it (a row that wanders far, up and down, ends further from
         * where it began than a leak in a few steps); it is held to the still row's noise */
        double ob_cmp = ob, od_cmp = od > od_still ? od : od_still;
        if (judged_points(d) >= 4 && d->fall == 0) {
            ob_cmp = 0;
            od_cmp = od_still;
            /* ... and one that rose in 8 steps or more, nearly every step it took, to what that
             * noise adds up to: moves of a still row go either way, so k of them end about
             * sqrt(k) moves from where they began, and 8 rises without a fall are a chance of
             * 1 in 256 (a leak of office hours rises in every step of its 10 hours a day, each
             * within the noise of a row of 100,000 allocations, and never falls) */
            if (d->steps_up >= PW_DETECT_RUN_RISES && 4 * d->steps_up >= 3 * d->steps)
                od_cmp = still_move(d) * sqrt((double)d->steps_up);
        }
        if (compared && (double)d->growth_bytes >= PW_DETECT_PEER_MIN_BYTES && d->growth_diff > 0 &&
            (double)d->growth_bytes >= PW_DETECT_PEER_DOMINANT * ob_cmp &&
            (double)d->growth_diff >= PW_DETECT_PEER_DOMINANT * od_cmp) {
            static const char said[] = "; no other tag";
            size_t len = strlen(d->evidence);
            if (ob == 0 && od == 0 && strstr(d->evidence, said) == NULL)
                snprintf(d->evidence + len, sizeof(d->evidence) - len,
                         "%s changed its bytes or outstanding allocations", said);
            continue;
        }
        double kept_other = top2_other(&t_kept, i);
        if (judged_points(d) < 4 && counters_agree(d) && kept_other > 0 &&
            (double)d->growth_bytes >= PW_DETECT_PEER_MIN_BYTES && d->growth_diff > 0 &&
            r > top2_other(&t_rel, i) && (double)d->growth_diff > top2_other(&t_diff, i) &&
            kept_share(d) >= PW_DETECT_PEER_DOMINANT * kept_other) {
            /* it kept what it allocated: the most outstanding allocations added, the most growth
             * relative to itself, and several times the share of its new allocations that any
             * other row still holds (churn frees what it allocates) */
            static const char said[] = "; still holds";
            size_t len = strlen(d->evidence);
            if (strstr(d->evidence, said) == NULL) /* a verdict kept between passes is screened
                                                      again: say it once */
                snprintf(d->evidence + len, sizeof(d->evidence) - len,
                         "%s %.1f %% of the %lld allocations it made, %.0f times the most any "
                         "other tag holds",
                         said, kept_share(d) * 100, (long long)d->growth_allocs,
                         kept_share(d) / kept_other);
            continue;
        }
        d->verdict = PW_DETECT_NOISE;
        d->score = 0;
        d->confidence = 0;
        size_t len = strlen(d->evidence);
        snprintf(d->evidence + len, sizeof(d->evidence) - len,
                 "; growth of %+.1f %% (%+.0f B) does not stand out among %zu tags (z %.1f; "
                 "among the %zu that moved z %.1f and %.1f: both must reach %.1f, and %.0f B)",
                 r * 100, abs_growth(d), m, z, moved, zr, za, PW_DETECT_PEER_Z,
                 PW_DETECT_PEER_MIN_BYTES);
        demoted++;
    }
    return demoted;
}

/* ---- the ring ------------------------------------------------------------------------------- */

void pw_detect_ring_init(pw_detect_ring_t *r)
{
    memset(r, 0, sizeof(*r));
}

/* b starts a new segment after a (as pw_detect_eval splits): another boot, or both cumulative
 * counters went down (a reboot or counter reset inside a capture) */
static int seg_edge(const pw_detect_point_t *a, const pw_detect_point_t *b)
{
    return a->boot != b->boot || (b->allocs < a->allocs && b->frees < a->frees);
}

/* b follows a with the same values in the same segment: a run of such points is one level */
static int same_values(const pw_detect_point_t *a, const pw_detect_point_t *b)
{
    return a->bytes == b->bytes && a->diff == b->diff && !seg_edge(a, b);
}

/* Thins the spread part p[0 .. n_spread) to points at least `stride` apart (the first, the
 * last and the ends of segments always kept). */
static void spread_thin(pw_detect_ring_t *r)
{
    size_t k = 0, n = r->n_spread;
    for (size_t i = 0; i < n; i++) {
        int edge = i == 0 || i + 1 == n || seg_edge(&r->p[i - 1], &r->p[i]) ||
                   seg_edge(&r->p[i], &r->p[i + 1]);
        if (edge || r->p[i].ts_ms - r->p[k - 1].ts_ms >= r->stride_ms)
            r->p[k++] = r->p[i];
    }
    memmove(r->p + k, r->p + n, (r->n - n) * sizeof(r->p[0]));
    r->n = (uint16_t)(r->n - (n - k));
    r->n_spread = (uint16_t)k;
}

int pw_detect_ring_push(pw_detect_ring_t *r, const pw_detect_point_t *pt)
{
    if (r->n > 0 && pt->ts_ms < r->p[r->n - 1].ts_ms)
        return PW_EINVAL;
    r->dirty++;
    /* a run of equal values keeps its first and last point (a counter reset inside it stays:
     * it splits the run into two segments) */
    if (r->n - r->n_spread >= 2 && same_values(&r->p[r->n - 1], pt) &&
        same_values(&r->p[r->n - 2], &r->p[r->n - 1]) && same_values(&r->p[r->n - 2], pt)) {
        r->p[r->n - 1] = *pt;
        return 0;
    }
    r->p[r->n++] = *pt;
    if (r->n - r->n_spread <= PW_DETECT_RING_RECENT)
        return 0;
    /* the oldest recent point moves to the spread part when it is a stride after its last
     * point (or starts or ends a segment), else it is dropped */
    const pw_detect_point_t *o = &r->p[r->n_spread];
    int keep = r->n_spread == 0 || seg_edge(&r->p[r->n_spread - 1], o) ||
               o->ts_ms - r->p[r->n_spread - 1].ts_ms >= r->stride_ms ||
               seg_edge(o, &r->p[r->n_spread + 1]);
    if (keep) {
        r->n_spread++;
    } else {
        memmove(r->p + r->n_spread, r->p + r->n_spread + 1,
                (r->n - r->n_spread - 1) * sizeof(r->p[0]));
        r->n--;
    }
    if (r->n_spread >= PW_DETECT_RING - PW_DETECT_RING_RECENT) {
        int64_t span = r->p[r->n_spread - 1].ts_ms - r->p[0].ts_ms;
        int64_t want = span / ((PW_DETECT_RING - PW_DETECT_RING_RECENT) / 2);
        r->stride_ms = r->stride_ms * 2 > want ? r->stride_ms * 2 : want;
        if (r->stride_ms < 1)
            r->stride_ms = 1;
        spread_thin(r);
    }
    return 0;
}
