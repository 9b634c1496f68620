/* test_analysis.c: statistics against hand computations, pool pressure and time to exhaustion,
 * leak suspects (1 MB/h leak, churn, plateau, snapshots, the Ddk story) and the fleet view.
 * Numbers in comments were worked out by hand (a calculator for the square roots and erfc). */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "analysis.h"
#include "detect.h"

#define MiB     1048576.0
#define KiB     1024.0
#define MIN_MS  60000LL
#define HOUR_MS 3600000LL
#define TOL     1e-9

/* cmocka 1.1 has no assert_double_equal: |a - b| <= eps, printing both on failure. */
#define assert_double_equal(a, b, eps) assert_near_at((a), (b), (eps), #a, __FILE__, __LINE__)
static void assert_near_at(double a, double b, double eps, const char *what, const char *file,
                           int line)
{
    if (!(fabs(a - b) <= eps) && !(a == b)) {
        print_error("%s:%d: %s = %.12g, expected %.12g +- %g\n", file, line, what, a, b, eps);
        _fail(file, line);
    }
}

/* Deterministic noise in [-1, 1): xorshift32. */
static double noise(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return (double)x / 2147483648.0 - 1.0;
}

/* ------------------------------------------------------------------------------------------ */
/* basic statistics */

static void test_median_mad_robust_z(void **state)
{
    (void)state;
    /* x sorted = 2 4 4 5 7 9 30: median 5; |x - 5| = 3 1 1 0 2 4 25 -> sorted 0 1 1 2 3 4 25,
     * MAD 2; M(30) = 0.6745 * 25 / 2 = 8.43125; M(2) = 0.6745 * -3 / 2 = -1.01175 */
    const double x[] = {4, 30, 2, 5, 9, 4, 7};
    double med, mad, z[7];
    assert_int_equal(pw_stats_mad(x, 7, &med, &mad), 0);
    assert_true(med == 5.0);
    assert_true(mad == 2.0);
    assert_int_equal(pw_stats_robust_z(x, 7, z), 0);
    assert_double_equal(z[1], 8.43125, TOL);
    assert_double_equal(z[2], -1.01175, TOL);
    assert_double_equal(z[3], 0.0, TOL);

    /* even n: (3 + 8) / 2 */
    const double e[] = {10, 1, 8, 3};
    assert_int_equal(pw_stats_median(e, 4, &med), 0);
    assert_true(med == 5.5);

    /* MAD = 0: 5 5 5 5 9, MeanAD = 4 / 5 = 0.8, M(9) = 4 / (1.253314 * 0.8) = 3.9894232 */
    const double f[] = {5, 5, 9, 5, 5};
    assert_int_equal(pw_stats_robust_z(f, 5, z), 0);
    assert_double_equal(z[2], 3.989423241103187, 1e-9);
    assert_double_equal(z[0], 0.0, TOL);
    /* all equal: 0 */
    const double g[] = {7, 7, 7};
    assert_int_equal(pw_stats_robust_z(g, 3, z), 0);
    assert_true(z[0] == 0.0 && z[2] == 0.0);

    assert_int_equal(pw_stats_median(x, 0, &med), PW_EINVAL);

    /* type 7: 1 2 3 4 10, p90: h = 4 * 0.9 = 3.6 -> 4 + 0.6 * (10 - 4) = 7.6 */
    const double q[] = {10, 3, 1, 4, 2};
    double v;
    assert_int_equal(pw_stats_quantile(q, 5, 0.9, &v), 0);
    assert_double_equal(v, 7.6, TOL);
    pw_dist_t d;
    assert_int_equal(pw_fleet_dist(q, 5, &d), 0);
    assert_int_equal(d.n, 5);
    assert_true(d.min == 1.0 && d.max == 10.0 && d.p50 == 3.0);
    assert_double_equal(d.p90, 7.6, TOL);
}

static void test_normal(void **state)
{
    (void)state;
    assert_double_equal(pw_stats_norm_cdf(0.0), 0.5, TOL);
    assert_double_equal(pw_stats_norm_cdf(1.959963984540054), 0.975, 1e-12);
    assert_double_equal(pw_stats_norm_quantile(0.975), 1.959963984540054, 1e-9);
    assert_double_equal(pw_stats_norm_quantile(0.75), 0.6744897501960817, 1e-9);
    assert_true(isinf(pw_stats_norm_quantile(0.0)));
}

static void test_mann_kendall(void **state)
{
    (void)state;
    pw_mk_t mk;
    /* 1 3 2 5 4: + pairs: from 1: 4; from 3: (2-) (5+) (4+) = +1; from 2: +2; from 5: -1
     * S = 6; Var = 5 * 4 * 15 / 18 = 16.667; Z = 5 / 4.0825 = 1.2247449;
     * p = erfc(Z / sqrt 2) = 0.2206714 */
    const double a[] = {1, 3, 2, 5, 4};
    assert_int_equal(pw_stats_mann_kendall(a, 5, &mk), 0);
    assert_int_equal(mk.s, 6);
    assert_double_equal(mk.var, 300.0 / 18.0, TOL);
    assert_double_equal(mk.z, 1.224744871391589, 1e-9);
    assert_double_equal(mk.p, 0.22067136191984688, 1e-9);

    /* ties: 1 2 2 3 3 3 4: S = 6 + 4 + 4 + 1 + 1 + 1 = 17 (tied pairs count 0);
     * Var = [7*6*19 - 2*1*9 - 3*2*11] / 18 = (798 - 18 - 66) / 18 = 714 / 18 = 39.667;
     * Z = 16 / 6.29815 = 2.5404294; p = 0.0110716 */
    const double b[] = {1, 2, 2, 3, 3, 3, 4};
    assert_int_equal(pw_stats_mann_kendall(b, 7, &mk), 0);
    assert_int_equal(mk.s, 17);
    assert_double_equal(mk.var, 714.0 / 18.0, TOL);
    assert_double_equal(mk.z, 2.540429395319823, 1e-9);
    assert_double_equal(mk.p, 0.011071644553191887, 1e-9);

    /* decreasing 5 4 3 2 1: S = -10, Z = (-10 + 1) / 4.0825 = -2.2045408 */
    const double c[] = {5, 4, 3, 2, 1};
    assert_int_equal(pw_stats_mann_kendall(c, 5, &mk), 0);
    assert_int_equal(mk.s, -10);
    assert_double_equal(mk.z, -2.2045407685048604, 1e-9);

    /* constant: var = 0 -> p = 1; n < 3 -> p = 1 */
    const double k[] = {4, 4, 4, 4};
    assert_int_equal(pw_stats_mann_kendall(k, 4, &mk), 0);
    assert_int_equal(mk.s, 0);
    assert_true(mk.var == 0.0 && mk.p == 1.0);
    assert_int_equal(pw_stats_mann_kendall(a, 2, &mk), 0);
    assert_true(mk.p == 1.0);
}

static void test_theil_sen(void **state)
{
    (void)state;
    /* x 0..4, y 1 3 2 5 4: pair slopes sorted -1 -1 1/3 1/2 3/4 1 1 4/3 2 3 (N' = 10);
     * slope = (3/4 + 1) / 2 = 0.875; y - 0.875 x = 1 2.125 0.25 2.375 0.5 -> intercept 1.
     * alpha 0.5: z = 0.6744898, C = z sqrt(16.667) = 2.7535929,
     *   M1 = (10 - C)/2 = 3.6232036 -> 1/3 + 0.6232036 (1/2 - 1/3) = 0.4372006
     *   M2 + 1 = (10 + C)/2 + 1 = 7.3767964 -> 1 + 0.3767964 (4/3 - 1) = 1.1255988
     * alpha 0.05: C = 8.0015 -> M1 = 0.999 (clamped to rank 1: -1), M2+1 = 10.0008 (rank 10: 3) */
    const double x[] = {0, 1, 2, 3, 4}, y[] = {1, 3, 2, 5, 4};
    pw_theilsen_t ts;
    assert_int_equal(pw_stats_theil_sen(x, y, 5, 0.5, &ts), 0);
    assert_int_equal(ts.pairs, 10);
    assert_double_equal(ts.slope, 0.875, TOL);
    assert_double_equal(ts.intercept, 1.0, TOL);
    assert_double_equal(ts.low, 0.43720059378920967, 1e-9);
    assert_double_equal(ts.high, 1.1255988124215808, 1e-9);
    assert_int_equal(pw_stats_theil_sen(x, y, 5, 0.05, &ts), 0);
    assert_double_equal(ts.low, -1.0, TOL);
    assert_double_equal(ts.high, 3.0, TOL);

    /* an outlier does not move the slope: y = 2x + 1 except y[3] = 100 -> 7 of 10 slopes are
     * exactly 2, so the median is 2 */
    const double y2[] = {1, 3, 5, 100, 9};
    assert_int_equal(pw_stats_theil_sen(x, y2, 5, 0.05, &ts), 0);
    assert_double_equal(ts.slope, 2.0, TOL);

    /* equal x are skipped; all equal -> no pairs */
    const double xs[] = {1, 1, 1};
    assert_int_equal(pw_stats_theil_sen(xs, y, 3, 0.05, &ts), 0);
    assert_int_equal(ts.pairs, 0);
    assert_true(ts.slope == 0.0);
    assert_int_equal(pw_stats_theil_sen(x, y, 5, 0.0, &ts), PW_EINVAL);
}

static void test_decimation(void **state)
{
    (void)state;
    /* 5000 points on y = 3x - 7: decimated to 2000, the slope stays exactly 3 */
    size_t n = 5000;
    double *x = malloc(n * sizeof(*x)), *y = malloc(n * sizeof(*y));
    for (size_t i = 0; i < n; i++) {
        x[i] = (double)i;
        y[i] = 3.0 * (double)i - 7.0;
    }
    pw_theilsen_t ts;
    assert_int_equal(pw_stats_theil_sen(x, y, n, 0.05, &ts), 0);
    assert_int_equal(ts.n, PW_ANALYSIS_MAX_POINTS);
    assert_double_equal(ts.slope, 3.0, TOL);
    assert_double_equal(ts.intercept, -7.0, 1e-6);
    pw_mk_t mk;
    assert_int_equal(pw_stats_mann_kendall(y, n, &mk), 0);
    assert_int_equal(mk.n, PW_ANALYSIS_MAX_POINTS);
    assert_int_equal(mk.s, 2000LL * 1999 / 2);
    free(x);
    free(y);
}

/* ------------------------------------------------------------------------------------------ */
/* pressure */

static void test_pressure_linear_exact(void **state)
{
    (void)state;
    /* 13 points every 10 min: 50 MiB + 1 MiB per step (6 MiB/h). Last = 62 MiB, limit
     * 128 MiB: ratio 62/128 = 0.484375, room 66 MiB -> ETA 66 / 6 = 11 h = 39,600,000 ms; all
     * pair slopes equal, so the band collapses to the same ETA. */
    pw_point_t p[13];
    for (int i = 0; i < 13; i++)
        p[i] = (pw_point_t){1700000000000LL + i * 10 * MIN_MS, 50 * MiB + i * MiB};
    pw_pressure_t out;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.used_bytes, 62 * 1048576ULL);
    assert_double_equal(out.ratio, 0.484375, TOL);
    assert_int_equal(out.level, PW_LEVEL_OK);
    assert_int_equal(out.n_window, 13);
    assert_double_equal(out.slope_bytes_per_h, 6 * MiB, 1e-6);
    assert_double_equal(out.slope_low_bytes_per_h, 6 * MiB, 1e-6);
    assert_double_equal(out.slope_high_bytes_per_h, 6 * MiB, 1e-6);
    assert_true(out.trend_up);
    assert_int_equal(out.eta_ms, 39600000);
    assert_int_equal(out.eta_soon_ms, 39600000);
    assert_int_equal(out.eta_late_ms, 39600000);

    /* window 1 h: 7 points (t = 60 .. 120 min), same slope */
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    o.window_ms = HOUR_MS;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, &o, &out), 0);
    assert_int_equal(out.n_window, 7);
    assert_int_equal(out.eta_ms, 39600000);
    assert_false(out.eta_beyond);

    /* Extrapolation: 2 h of points allow ETAs up to 24 x 2 h = 48 h. Limit 62 + 6 * 48 MiB:
     * room 288 MiB, ETA exactly 48 h, given; one MiB more of room is 48 h 10 min, not given. */
    assert_int_equal(pw_pressure_eval(p, 13, (62 + 288) * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.eta_ms, 48 * HOUR_MS);
    assert_false(out.eta_beyond);
    assert_int_equal(pw_pressure_eval(p, 13, (62 + 289) * 1048576ULL, NULL, &out), 0);
    assert_true(out.trend_up);
    assert_true(out.eta_beyond);
    assert_int_equal(out.eta_ms, -1);
    assert_int_equal(out.eta_soon_ms, -1);
    assert_int_equal(out.eta_late_ms, -1);
    /* ... and with no limit on extrapolation: 289 / 6 h = 48 h 10 min = 173,400,000 ms */
    o.window_ms = 2 * HOUR_MS;
    o.max_extrapolation = 0;
    assert_int_equal(pw_pressure_eval(p, 13, (62 + 289) * 1048576ULL, &o, &out), 0);
    assert_int_equal(out.eta_ms, 173400000);

    /* levels: 90/128 = 0.703 WARN, 110/128 = 0.859 CRITICAL, limit 0 UNKNOWN */
    p[12].v = 90 * MiB;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.level, PW_LEVEL_WARN);
    p[12].v = 110 * MiB;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.level, PW_LEVEL_CRITICAL);
    assert_int_equal(pw_pressure_eval(p, 13, 0, NULL, &out), 0);
    assert_int_equal(out.level, PW_LEVEL_UNKNOWN);
    assert_int_equal(out.eta_ms, -1);
    /* above the limit: ETA 0 */
    p[12].v = 130 * MiB;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.eta_ms, 0);
}

static void test_pressure_no_eta(void **state)
{
    (void)state;
    pw_point_t p[13];
    pw_pressure_t out;
    /* flat: slope 0, no ETA */
    for (int i = 0; i < 13; i++)
        p[i] = (pw_point_t){i * 10 * MIN_MS, 80 * MiB};
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_true(out.slope_bytes_per_h == 0.0);
    assert_false(out.trend_up);
    assert_int_equal(out.eta_ms, -1);
    assert_int_equal(out.eta_soon_ms, -1);
    /* decreasing */
    for (int i = 0; i < 13; i++)
        p[i].v = 100 * MiB - i * MiB;
    assert_int_equal(pw_pressure_eval(p, 13, 128 * 1048576ULL, NULL, &out), 0);
    assert_true(out.slope_bytes_per_h < 0.0);
    assert_int_equal(out.eta_ms, -1);
    /* not significant: 1 3 2 5 4 pattern (p = 0.22) */
    const double pat[] = {1, 3, 2, 5, 4};
    for (int i = 0; i < 5; i++)
        p[i].v = 80 * MiB + pat[i] * MiB;
    assert_int_equal(pw_pressure_eval(p, 5, 128 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.n_window, 5); /* < min_points 6: no trend at all */
    assert_int_equal(out.eta_ms, -1);
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    o.min_points = 3;
    assert_int_equal(pw_pressure_eval(p, 5, 128 * 1048576ULL, &o, &out), 0);
    assert_double_equal(out.slope_bytes_per_h, 0.875 * MiB * 6, 1e-3); /* per 10 min -> per h */
    assert_double_equal(out.mk_p, 0.22067136191984688, 1e-9);
    assert_false(out.trend_up);
    assert_int_equal(out.eta_ms, -1);
    /* unsorted input */
    p[1].ts_ms = -1;
    assert_int_equal(pw_pressure_eval(p, 5, 128 * 1048576ULL, &o, &out), PW_EINVAL);
}

/* The extrapolation cap is counted from the trend window, not from the start of the history:
 * 10 h of history at 10-min steps, +1 MiB/h from 50 MiB (60 MiB at the end), the default 2-h
 * window holds t = 8 .. 10 h (13 points, span 2 h), so ETAs up to 24 x 2 h = 48 h are given.
 * Limit 107 MiB: (107 - 60) / 1 = 47 h, given; limit 120 MiB: 60 h, beyond (a cap counted from
 * the history's start, 24 x 10 h = 240 h, would give it). */
static void test_pressure_eta_cap_window(void **state)
{
    (void)state;
    pw_point_t p[61];
    for (int i = 0; i < 61; i++)
        p[i] = (pw_point_t){i * 10 * MIN_MS, 50 * MiB + (double)i * MiB / 6.0};
    pw_pressure_t out;
    assert_int_equal(pw_pressure_eval(p, 61, 107 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.n_window, 13);
    assert_true(out.trend_up);
    assert_double_equal(out.slope_bytes_per_h, MiB, 1e-6);
    assert_int_equal(out.eta_ms, 47 * HOUR_MS);
    assert_false(out.eta_beyond);
    assert_int_equal(pw_pressure_eval(p, 61, 120 * 1048576ULL, NULL, &out), 0);
    assert_true(out.trend_up);
    assert_true(out.eta_beyond);
    assert_int_equal(out.eta_ms, -1);
    /* exactly at the cap (48 h) it is still given; a minute over, not */
    assert_int_equal(pw_pressure_eval(p, 61, 108 * 1048576ULL, NULL, &out), 0);
    assert_int_equal(out.eta_ms, 48 * HOUR_MS);
    assert_false(out.eta_beyond);
    uint64_t over = 108 * 1048576ULL + 1048576ULL / 60;
    assert_int_equal(pw_pressure_eval(p, 61, over, NULL, &out), 0);
    assert_true(out.eta_beyond);
}

/* A named leak's ETA when its pool has too few points for a trend (an import of 3 screens, 15
 * min apart: 108 MiB at the last, limit 138 MiB, 30 MiB of room). The leak grew 2.5 MiB and
 * then 5 MiB (15 MiB/h from first to last, its pair slopes 10 and 20 MiB/h the range): ETA
 * 30 / 15 = 2 h, between 30 / 20 = 1.5 h and 30 / 10 = 3 h, said to come from the leak alone. */
static void test_leak_eta(void **state)
{
    (void)state;
    pw_point_t p[13];
    p[0] = (pw_point_t){0, 100.5 * MiB};
    p[1] = (pw_point_t){15 * MIN_MS, 103 * MiB};
    p[2] = (pw_point_t){30 * MIN_MS, 108 * MiB};
    pw_pressure_t pool;
    uint64_t limit = 138 * 1048576ULL;
    assert_int_equal(pw_pressure_eval(p, 3, limit, NULL, &pool), 0);
    assert_int_equal(pool.n_window, 3);
    assert_int_equal(pool.eta_ms, -1); /* too few points for the pool's trend */
    pw_leak_eta_t e;
    assert_int_equal(
        pw_pressure_leak_eta(&pool, 15 * MiB, 10 * MiB, 20 * MiB, 3, 30 * MIN_MS, NULL, &e), 0);
    assert_int_equal(e.basis, PW_ETA_LEAK);
    assert_int_equal(e.eta_ms, 2 * HOUR_MS);
    assert_int_equal(e.eta_soon_ms, 3 * HOUR_MS / 2);
    assert_int_equal(e.eta_late_ms, 3 * HOUR_MS);
    assert_string_equal(e.note, "from this leak's growth alone, low confidence: 3 points over 30 "
                                "min (the pool's trend needs 6 in its window)");
    /* two screens: one step, no range (its interval is the rate itself) */
    assert_int_equal(
        pw_pressure_leak_eta(&pool, 15 * MiB, 15 * MiB, 15 * MiB, 2, 15 * MIN_MS, NULL, &e), 0);
    assert_int_equal(e.eta_ms, 2 * HOUR_MS);
    assert_int_equal(e.eta_soon_ms, 2 * HOUR_MS);
    assert_int_equal(e.eta_late_ms, 2 * HOUR_MS);
    assert_non_null(strstr(e.note, "2 points over 15 min (the pool's trend needs 6 in its "
                                   "window); one step, so no range"));
    /* at 1 MiB/h the pool would last 30 h: 30 min of screens say nothing past 24 x 30 min */
    assert_int_equal(pw_pressure_leak_eta(&pool, MiB, 0.5 * MiB, 2 * MiB, 3, 30 * MIN_MS, NULL, &e),
                     0);
    assert_int_equal(e.basis, PW_ETA_NONE);
    assert_int_equal(e.eta_ms, -1);
    assert_string_equal(e.note, "no ETA: too few points for one (3 over 30 min say nothing past "
                                "12.0 h; at this leak's rate alone 30.0 h)");
    /* a leak whose slower end does not grow: no late end (maybe never) */
    assert_int_equal(pw_pressure_leak_eta(&pool, 15 * MiB, 0, 20 * MiB, 3, 30 * MIN_MS, NULL, &e),
                     0);
    assert_int_equal(e.eta_late_ms, -1);
    /* the limit unknown: no ETA, and why */
    assert_int_equal(pw_pressure_eval(p, 3, 0, NULL, &pool), 0);
    assert_int_equal(
        pw_pressure_leak_eta(&pool, 15 * MiB, 10 * MiB, 20 * MiB, 3, 30 * MIN_MS, NULL, &e), 0);
    assert_int_equal(e.basis, PW_ETA_NONE);
    assert_string_equal(e.note, "no ETA: the pool's limit is unknown");
    /* 13 points rising 1 MiB/h (test_pressure_eta_cap_window's): the pool's own trend, 47 h */
    for (int i = 0; i < 13; i++)
        p[i] = (pw_point_t){i * 10 * MIN_MS, 58 * MiB + (double)i * MiB / 6.0};
    assert_int_equal(pw_pressure_eval(p, 13, 107 * 1048576ULL, NULL, &pool), 0);
    assert_int_equal(
        pw_pressure_leak_eta(&pool, 15 * MiB, 10 * MiB, 20 * MiB, 3, 30 * MIN_MS, NULL, &e), 0);
    assert_int_equal(e.basis, PW_ETA_POOL);
    assert_int_equal(e.eta_ms, 47 * HOUR_MS);
    assert_string_equal(e.note, "from the pool's trend over 13 points");
    /* 13 flat points: the pool does not rise, whatever the leak says */
    for (int i = 0; i < 13; i++)
        p[i].v = 60 * MiB;
    assert_int_equal(pw_pressure_eval(p, 13, 107 * 1048576ULL, NULL, &pool), 0);
    assert_int_equal(
        pw_pressure_leak_eta(&pool, 15 * MiB, 10 * MiB, 20 * MiB, 3, 30 * MIN_MS, NULL, &e), 0);
    assert_int_equal(e.basis, PW_ETA_NONE);
    assert_string_equal(e.note, "no ETA: the pool as a whole does not rise (trend p 1 over 13 "
                                "points)");
    assert_int_equal(pw_pressure_leak_eta(NULL, 1, 1, 1, 3, 1, NULL, &e), PW_EINVAL);
}

/* ------------------------------------------------------------------------------------------ */
/* leak suspects */

/* A row series at 10 s: flat at `base` for `flat_min` minutes, then +rate bytes/h for
 * `grow_min` minutes, then flat again; noise of +-amp bytes; diff = bytes / 256. Points as the
 * collector holds them (detect.h), boot 1. */
static pw_detect_point_t *make_row(size_t n, double base, double rate_per_h, int flat_min,
                                   int grow_min, double amp, uint32_t seed)
{
    pw_detect_point_t *p = calloc(n, sizeof(*p));
    uint32_t s = seed;
    for (size_t i = 0; i < n; i++) {
        int64_t t = (int64_t)i * 10000;
        double g = (double)(t - flat_min * MIN_MS) / (double)HOUR_MS;
        double gmax = grow_min / 60.0;
        g = g < 0 ? 0 : g > gmax ? gmax : g;
        double b = base + rate_per_h * g + amp * noise(&s);
        p[i].ts_ms = 1700000000000LL + t;
        p[i].bytes = (uint64_t)b;
        p[i].diff = (uint64_t)(b / 256.0);
        p[i].allocs = 1000000 + 10 * (uint64_t)i + p[i].diff;
        p[i].frees = 1000000 + 10 * (uint64_t)i;
        p[i].boot = 1;
    }
    return p;
}

/* The engine as the collector runs it: every point pushed into a ring, the ring judged after
 * each push (the collector judges every 30 s; every sample is stricter). Returns the index of
 * the first leak verdict at or after `from`, or n; `flat_until`: no leak verdict before it. */
static size_t first_leak(const pw_detect_point_t *p, size_t n, size_t flat_until, size_t from)
{
    pw_detect_ring_t r;
    pw_detect_ring_init(&r);
    size_t found = n;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pw_detect_ring_push(&r, &p[i]), 0);
        pw_detect_t d;
        assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
        if (i < flat_until && d.verdict == PW_DETECT_LEAK)
            print_message("point %zu: %s\n", i, d.evidence);
        if (i < flat_until)
            assert_int_not_equal(d.verdict, PW_DETECT_LEAK);
        if (d.verdict == PW_DETECT_LEAK && found == n && i >= from)
            found = i;
    }
    return found;
}

static void test_leak_1mb_per_hour_within_30_min(void **state)
{
    (void)state;
    /* 1 h flat at 2 MiB, then 1 MiB/h for 2 h, at 10 s sampling, +-8 KiB of churn */
    size_t n = 3 * 360 + 1;
    pw_detect_point_t *p = make_row(n, 2 * MiB, MiB, 60, 120, 8 * KiB, 12345);
    size_t at = first_leak(p, n, 361, 0);
    assert_true(at > 361 && at - 361 <= 180); /* within 30 min = 180 samples */
    print_message("1 MiB/h leak flagged %.1f min after it started\n", (double)(at - 361) / 6.0);
    /* at the end, through a ring: the numbers justify it */
    pw_detect_ring_t r;
    pw_detect_ring_init(&r);
    for (size_t i = 0; i < n; i++)
        pw_detect_ring_push(&r, &p[i]);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_double_equal(d.rate_bytes_per_h, MiB, 0.1 * MiB);
    assert_true(d.rate_low_bytes_per_h <= d.rate_bytes_per_h);
    assert_true(d.rate_high_bytes_per_h >= d.rate_bytes_per_h);
    /* the flat first hour is cut off: growth began at minute 60 (+- a few minutes of noise) */
    assert_true(llabs(d.since_ms - (1700000000000LL + 60 * MIN_MS)) <= 10 * MIN_MS);
    free(p);
}

static void test_leak_churn_plateau_and_gates(void **state)
{
    (void)state;
    /* 4 MiB +- 256 KiB of churn for 3 h: never a leak */
    size_t n = 3 * 360 + 1;
    pw_detect_point_t *p = make_row(n, 4 * MiB, 0, 0, 0, 256 * KiB, 777);
    assert_int_equal(first_leak(p, n, n, 0), n);
    free(p);
    /* a cache: 1 MiB, grows 8 MiB/h for 1 h, then levels off for 2 h: once it has been flat
     * for longer than it grew (and its last third is flat), never a leak again; until then it
     * cannot be told from a leak that pauses */
    n = 3 * 360 + 1;
    p = make_row(n, MiB, 8 * MiB, 0, 60, 4 * KiB, 99);
    assert_int_equal(first_leak(p, n, 0, 360 + 380), n);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, n, NULL, &d), 0); /* 1,081 points: thinned to 128 */
    assert_int_equal(d.points, PW_DETECT_MAX_POINTS);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
    free(p);
    /* bytes rise 1 MiB/h but diff stays at 50 (one allocation growing): not a leak */
    n = 181;
    p = make_row(n, 2 * MiB, MiB, 0, 60, 0, 1);
    for (size_t i = 0; i < n; i++)
        p[i].diff = 50;
    assert_int_equal(pw_detect_eval(p, n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
    free(p);
    /* steady but tiny growth: 512 B/h over 30 min (256 B) is below the growth floor */
    p = make_row(n, 2 * MiB, 512, 0, 60, 0, 1);
    assert_int_equal(pw_detect_eval(p, n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_PLATEAU);
    free(p);
}

/* The noise gate: 12 points 1 min apart, 1,000,000 B + 60,000 B/min + residuals r,
 * r = 0, +R, -R, +R, -R, 0, 0, +R, -R, +R, -R, 0. The Theil-Sen slope is 3.6e6 B/h (pair slopes
 * symmetric about it). Consecutive differences less the slope: R, -2R, 2R, -2R, R, 0, R, -2R,
 * 2R, -2R, R; their median is R, the absolute deviations from it 0, 3R, R, 3R, 0, R, 0, 3R, R,
 * 3R, 0, median R: scatter = 1.4826 R / sqrt 2; net growth 3.6e6 x 11/60 = 660,000 B.
 * R = 300,000: SNR = 660,000 / 314,508.6 = 2.0985 < 3, noise; R = 25,000: 25.18, every step
 * up (60,000 - 2R > 0), a leak. */
static void test_leak_noise_gate(void **state)
{
    (void)state;
    const int sign[12] = {0, 1, -1, 1, -1, 0, 0, 1, -1, 1, -1, 0};
    pw_detect_point_t p[12];
    for (int i = 0; i < 12; i++)
        p[i] = (pw_detect_point_t){1700000000000LL + i * MIN_MS,
                                   5000 + 20 * (uint64_t)i,
                                   4900 + 10 * (uint64_t)i,
                                   100 + 10 * (uint64_t)i,
                                   (uint64_t)(1000000 + 60000 * i + 300000 * sign[i]),
                                   1};
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 12, NULL, &d), 0);
    assert_double_equal(d.rate_bytes_per_h, 3600000.0, 1e-6);
    assert_double_equal(d.snr, 660000.0 / (1.4826 * 300000 / sqrt(2.0)), 1e-9);
    assert_int_equal(d.verdict, PW_DETECT_NOISE);
    for (int i = 0; i < 12; i++)
        p[i].bytes = (uint64_t)(1000000 + 60000 * i + 25000 * sign[i]);
    assert_int_equal(pw_detect_eval(p, 12, NULL, &d), 0);
    assert_double_equal(d.snr, 660000.0 / (1.4826 * 25000 / sqrt(2.0)), 1e-9);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
}

/* ------------------------------------------------------------------------------------------ */
/* the Ddk story: Windows Server 2003 R2 with /3GB, nonpaged limit 128 MB, nonpaged
 * 30 MB after boot and 120 MB at the fault, growth in the daytime only (08:00-18:00 here).
 * Rebuilt at 1-min sampling over 90 h (boot at 00:00 of day 0, fault at 18:00 of day 3 =
 * 40 daytime hours): host = 30 MiB + 90 MiB * daytime_hours / 40 (+-32 KiB), i.e. 2.25 MiB
 * per daytime hour; Ddk 600 KB -> 10 MB (9.4 MB over 40 h = 235 KB per daytime hour, +-1 KiB);
 * Mmcm 12 MB and r100 8 MB "just as large right after boot" and flat with churn; Irp churns;
 * NtfC (a cache) warms up 3 MiB from 00:30 to 02:30 after boot then levels off; Slow
 * grows 30 KB/h all day and night (a slower real leak: ranks below Ddk). */

#define STORY_N  (90 * 60 + 1)
#define STORY_T0 1700000000000LL
#define N_TAGS   6
enum { T_DDK, T_MMCM, T_R100, T_IRP, T_NTFC, T_SLOW };
static const char *const story_tags[N_TAGS] = {"Ddk", "Mmcm", "r100", "Irp", "NtfC", "Slow"};

static double day_hours(int64_t minute)
{
    double h = 0;
    int64_t day = minute / 1440, m = minute % 1440;
    h += 10.0 * (double)day;
    if (m > 8 * 60)
        h += (double)((m < 18 * 60 ? m : 18 * 60) - 8 * 60) / 60.0;
    return h;
}

typedef struct {
    pw_point_t host[STORY_N];
    pw_detect_point_t row[N_TAGS][STORY_N];
} story_t;

static story_t *make_story(void)
{
    story_t *s = malloc(sizeof(*s));
    uint32_t r = 2003;
    for (int64_t i = 0; i < STORY_N; i++) {
        int64_t ts = STORY_T0 + i * MIN_MS;
        double dh = day_hours(i);
        s->host[i] = (pw_point_t){ts, 30 * MiB + 90 * MiB * dh / 40.0 + 32 * KiB * noise(&r)};
        double v[N_TAGS];
        v[T_DDK] = 600000.0 + 9400000.0 * dh / 40.0 + KiB * noise(&r);
        v[T_MMCM] = 12000000.0 + 64 * KiB * noise(&r);
        v[T_R100] = 8000000.0 + 48 * KiB * noise(&r);
        v[T_IRP] = 2 * MiB + 512 * KiB * noise(&r);
        double warm = (double)(i - 30) / 120.0;
        warm = warm < 0 ? 0 : warm > 1 ? 1 : warm;
        v[T_NTFC] = MiB + 3 * MiB * warm + 2 * KiB * noise(&r);
        v[T_SLOW] = 1000000.0 + 30000.0 * (double)i / 60.0 + 100 * noise(&r);
        for (int k = 0; k < N_TAGS; k++) {
            s->row[k][i].ts_ms = ts;
            s->row[k][i].bytes = (uint64_t)v[k];
            s->row[k][i].diff = (uint64_t)(v[k] / (k == T_DDK ? 128.0 : 512.0));
            s->row[k][i].allocs = 100000 + 50 * (uint64_t)i + s->row[k][i].diff;
            s->row[k][i].frees = 100000 + 50 * (uint64_t)i;
            s->row[k][i].boot = 1;
        }
    }
    return s;
}

static void test_ddk_story_pressure(void **state)
{
    (void)state;
    story_t *s = make_story();
    const uint64_t limit = 128 * 1048576ULL;
    int64_t first_eta = -1, first_warn = -1, first_crit = -1;
    double at_eta = 0, at_warn = 0, at_crit = 0;
    pw_pressure_t out;
    for (size_t i = 5; i < STORY_N; i += 5) {
        assert_int_equal(pw_pressure_eval(s->host, i + 1, limit, NULL, &out), 0);
        double used = s->host[i].v;
        if (out.eta_ms >= 0 && first_eta < 0) {
            first_eta = (int64_t)i;
            at_eta = used;
        }
        if (out.level >= PW_LEVEL_WARN && first_warn < 0) {
            first_warn = (int64_t)i;
            at_warn = used;
        }
        if (out.level >= PW_LEVEL_CRITICAL && first_crit < 0) {
            first_crit = (int64_t)i;
            at_crit = used;
        }
        if (i % 1440 == 3 * 60) /* 03:00: nights are flat, no ETA */
            assert_int_equal(out.eta_ms, -1);
    }
    /* ETA on the first morning, at ~30 MiB; warn at 70 % (89.6 MiB: 26.5 daytime hours, day 2
     * 14:29, 27.5 h before the fault), critical at 85 % (108.8 MiB: 35.0 daytime hours, day 3
     * 13:01, 5 h before the fault): both well before 120 MB */
    assert_true(first_eta >= 8 * 60 && first_eta < 10 * 60);
    assert_true(at_eta < 35 * MiB);
    assert_true(at_warn >= 89.6 * MiB && at_warn < 90.2 * MiB);
    assert_true(at_crit >= 108.8 * MiB && at_crit < 109.4 * MiB);
    assert_true(STORY_N - 1 - first_warn > 24 * 60);
    assert_true(STORY_N - 1 - first_crit > 4 * 60);

    /* day 3 at 12:00: used = 30 + 90 * 34 / 40 = 106.5 MiB, slope 2.25 MiB/h ->
     * ETA = (128 - 106.5) / 2.25 = 9.56 h (linear extrapolation) */
    size_t noon = 3 * 1440 + 12 * 60;
    assert_int_equal(pw_pressure_eval(s->host, noon + 1, limit, NULL, &out), 0);
    assert_int_equal(out.level, PW_LEVEL_WARN);
    assert_double_equal(out.slope_bytes_per_h, 2.25 * MiB, 0.05 * MiB);
    assert_true(out.eta_ms > (int64_t)(9.3 * HOUR_MS) && out.eta_ms < (int64_t)(9.8 * HOUR_MS));
    assert_true(out.eta_soon_ms <= out.eta_ms && out.eta_ms <= out.eta_late_ms);
    free(s);
}

static void test_ddk_story_suspects(void **state)
{
    (void)state;
    story_t *s = make_story();
    /* Every row through a ring, judged at 10:00, 14:00, 17:30 and 03:00 of each day: from the
     * first day's 14:00 on, Ddk is the top leak; Mmcm, r100 and Irp (flat with churn) are never
     * leaks, NtfC (a cache that warmed up after boot) never once it levelled off. At night Ddk
     * stays a leak (it has grown for days): the verdict does not flicker with the office hours. */
    pw_detect_ring_t r[N_TAGS];
    for (int k = 0; k < N_TAGS; k++)
        pw_detect_ring_init(&r[k]);
    size_t i = 0;
    const int64_t minutes[] = {3 * 60, 10 * 60, 14 * 60, 17 * 60 + 30};
    for (int day = 0; day < 4; day++) {
        for (size_t m = 0; m < 4; m++) {
            size_t at = (size_t)(day * 1440 + minutes[m]);
            if (at >= STORY_N)
                break;
            for (; i <= at; i++)
                for (int k = 0; k < N_TAGS; k++)
                    assert_int_equal(pw_detect_ring_push(&r[k], &s->row[k][i]), 0);
            int top = -1;
            double best = 0;
            for (int k = 0; k < N_TAGS; k++) {
                pw_detect_t d;
                assert_int_equal(pw_detect_eval(r[k].p, r[k].n, NULL, &d), 0);
                if (k == T_MMCM || k == T_R100 || k == T_IRP || (k == T_NTFC && at > 5 * 60))
                    assert_int_not_equal(d.verdict, PW_DETECT_LEAK);
                if (k == T_DDK)
                    print_message("  Ddk %s conf %.2f since %.1f h pts %zu: %s\n",
                                  pw_detect_verdict_name(d.verdict), d.confidence,
                                  (double)(d.since_ms - STORY_T0) / 3.6e6, d.points, d.evidence);
                if (k == T_DDK && (day > 0 || m >= 2)) {
                    assert_int_equal(d.verdict, PW_DETECT_LEAK);
                    if (day == 0) /* flat until 08:00 */
                        assert_true(d.since_ms >= STORY_T0 + 7 * 60 * MIN_MS);
                    assert_non_null(strstr(d.evidence, "allocations of"));
                }
                if (d.verdict == PW_DETECT_LEAK && d.score > best) {
                    best = d.score;
                    top = k;
                }
            }
            print_message("day %d %02d:%02d: top leak %s score %.3f\n", day, (int)(minutes[m] / 60),
                          (int)(minutes[m] % 60), top >= 0 ? story_tags[top] : "-", best);
            if (day > 0 || m >= 2)
                assert_int_equal(top, T_DDK);
        }
    }
    /* the slower leak (30 KB/h, day and night) is found too, below Ddk */
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r[T_SLOW].p, r[T_SLOW].n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* fleet */

static void test_fleet_outliers(void **state)
{
    (void)state;
    /* group 1: 100 102 98 101 99 300 -> median 100.5, |d| sorted 0.5 0.5 1.5 1.5 2.5 199.5,
     *   MAD 1.5; M(300) = 0.6745 * 199.5 / 1.5 = 89.7085; M(98) = 0.6745 * -2.5 / 1.5
     * group 2: 300 310 305 -> median 305, MAD 5; M(310) = 0.6745, M(300) = -0.6745: 300 is
     *   normal for this build
     * group 3: two hosts -> z = 0 */
    const double v[] = {100, 300, 102, 310, 98, 1, 101, 305, 99, 1000, 300};
    const uint32_t g[] = {1, 2, 1, 2, 1, 3, 1, 2, 1, 3, 1};
    double z[11];
    bool o[11];
    assert_int_equal(pw_fleet_outliers(v, g, 11, 3.5, z, o), 1);
    assert_double_equal(z[10], 89.7085, 1e-9);
    assert_true(o[10]);
    assert_double_equal(z[4], 0.6745 * -2.5 / 1.5, 1e-9);
    assert_double_equal(z[3], 0.6745, 1e-9);
    assert_double_equal(z[1], -0.6745, 1e-9);
    assert_false(o[1]);
    assert_true(z[5] == 0.0 && z[9] == 0.0);
    assert_false(o[9]);
    assert_int_equal(pw_fleet_outliers(v, g, 0, 3.5, z, o), PW_EINVAL);
}

static void test_fleet_shared_attrs(void **state)
{
    (void)state;
    /* 10 hosts, suspects 0 1 2.
     * build: 0-4 "20348", 5-9 "17763": 20348 in 3/3 suspects vs 5/10 hosts, lift 2,
     *   p = P(X >= 3 | N 10, K 5, n 3) = C(5,3) / C(10,3) = 10 / 120 = 0.083333
     * agent: 0 1 3 4 5 "1.2", 2 6 7 8 9 "1.3": 1.2 in 2/3 vs 5/10, lift 4/3,
     *   p = [C(5,2) C(5,1) + C(5,3)] / 120 = 60 / 120 = 0.5; 1.3 (1/3 < 1/2) not reported
     * site: host 2 unknown; 0 1 3 4 "east", 5-9 "west": east in 2/2 known suspects vs 4/9
     *   hosts, lift 2.25, p = C(4,2) / C(9,2) = 6 / 36 = 0.166667 */
    const char *a[10 * 3] = {
        "20348", "1.2",   "east",  "20348", "1.2",   "east",  "20348", "1.3",   NULL,    "20348",
        "1.2",   "east",  "20348", "1.2",   "east",  "17763", "1.2",   "west",  "17763", "1.3",
        "west",  "17763", "1.3",   "west",  "17763", "1.3",   "west",  "17763", "1.3",   "west",
    };
    const bool sus[10] = {true, true, true};
    pw_attr_share_t *r = NULL;
    size_t n = 0;
    assert_int_equal(pw_fleet_shared_attrs(a, 10, 3, sus, 2, &r, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(r[0].attr, 0);
    assert_string_equal(r[0].value, "20348");
    assert_int_equal(r[0].suspects_with, 3);
    assert_int_equal(r[0].hosts_with, 5);
    assert_double_equal(r[0].lift, 2.0, TOL);
    assert_double_equal(r[0].p, 10.0 / 120.0, 1e-9);
    assert_int_equal(r[1].attr, 2);
    assert_string_equal(r[1].value, "east");
    assert_int_equal(r[1].suspects, 2);
    assert_int_equal(r[1].hosts, 9);
    assert_double_equal(r[1].lift, 2.25, TOL);
    assert_double_equal(r[1].p, 6.0 / 36.0, 1e-9);
    assert_int_equal(r[2].attr, 1);
    assert_string_equal(r[2].value, "1.2");
    assert_double_equal(r[2].frac_suspects, 2.0 / 3.0, TOL);
    assert_double_equal(r[2].lift, 4.0 / 3.0, TOL);
    assert_double_equal(r[2].p, 0.5, 1e-9);
    pw_free(r);
    /* min_suspects 3 keeps only the build */
    assert_int_equal(pw_fleet_shared_attrs(a, 10, 3, sus, 3, &r, &n), 0);
    assert_int_equal(n, 1);
    pw_free(r);
    /* no suspects: nothing */
    const bool none[10] = {false};
    assert_int_equal(pw_fleet_shared_attrs(a, 10, 3, none, 1, &r, &n), 0);
    assert_int_equal(n, 0);
    assert_null(r);
}

/* ------------------------------------------------------------------------------------------ */
/* screen comparison (a few screens: an imported poolmon capture) */

static void test_alloc_failures(void **state)
{
    (void)state;
    const double x[] = {0, 1, 2, 3, 4}, y[] = {1, 3, 2, 5, 4};
    pw_theilsen_t ts;
    pw_mk_t mk;
    double med;
    pw_alloc_fail_after(1);
    assert_int_equal(pw_stats_theil_sen(x, y, 5, 0.05, &ts), PW_ENOMEM);
    pw_alloc_fail_after(1);
    assert_int_equal(pw_stats_mann_kendall(y, 5, &mk), PW_ENOMEM);
    pw_alloc_fail_after(1);
    assert_int_equal(pw_stats_median(y, 5, &med), PW_ENOMEM);
    pw_alloc_fail_after(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_mad_robust_z),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_mann_kendall),
        cmocka_unit_test(test_theil_sen),
        cmocka_unit_test(test_decimation),
        cmocka_unit_test(test_pressure_linear_exact),
        cmocka_unit_test(test_pressure_no_eta),
        cmocka_unit_test(test_pressure_eta_cap_window),
        cmocka_unit_test(test_leak_eta),
        cmocka_unit_test(test_leak_1mb_per_hour_within_30_min),
        cmocka_unit_test(test_leak_churn_plateau_and_gates),
        cmocka_unit_test(test_leak_noise_gate),
        cmocka_unit_test(test_ddk_story_pressure),
        cmocka_unit_test(test_ddk_story_suspects),
        cmocka_unit_test(test_fleet_outliers),
        cmocka_unit_test(test_fleet_shared_attrs),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
