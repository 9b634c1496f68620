/* test_detect.c: the detection engine (collector/analysis/detect.c) on series whose numbers were
 * worked out by hand: comparisons of 2 and 3 screens (the Drsd print job of Microsoft's example),
 * a straight leak, a late start, a leak across a reboot, a cache that levels off, a bulk free,
 * a flat row, bytes without allocations, the ring's bounds, and a cache that fills against a
 * leak that pauses (overnight). */
#include "test_util.h"

#include <math.h>
#include <string.h>

#include "detect.h"

#define MiB  1048576ULL
#define Q_MS (15LL * 60000) /* 15-minute screens */
#define T0   1700000000000LL
#define EPS  1e-9

#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static pw_detect_point_t pt(int64_t i, uint64_t bytes, uint64_t diff, uint32_t boot)
{
    /* allocs rise by diff + 100 per point; frees follow (a busy tag) */
    return (pw_detect_point_t){
        T0 + i * Q_MS, 1000 + (uint64_t)i * 100 + diff, 1000 + (uint64_t)i * 100, diff, bytes,
        boot};
}

static void test_one_point(void **state)
{
    (void)state;
    pw_detect_t d;
    pw_detect_point_t p = pt(0, 100, 1, 1);
    assert_int_equal(pw_detect_eval(&p, 1, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_TOO_SHORT);
    assert_true(d.score == 0.0);
    assert_int_equal(pw_detect_eval(NULL, 0, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_TOO_SHORT);
    pw_detect_point_t back[2] = {pt(1, 1, 1, 1), pt(0, 2, 2, 1)};
    assert_int_equal(pw_detect_eval(back, 2, NULL, &d), PW_EINVAL);
}

/* Microsoft's Example 4: Drsd Diff 21 -> 27, Bytes 17472 -> 22464 around one print job. */
static void test_two_screens_drsd(void **state)
{
    (void)state;
    pw_detect_point_t p[2] = {pt(0, 17472, 21, 1), pt(1, 22464, 27, 1)};
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 2, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_int_equal(d.growth_bytes, 4992);
    assert_int_equal(d.growth_diff, 6);
    assert_near(d.per_alloc_bytes, 832.0, EPS);
    assert_near(d.rate_bytes_per_h, 4992.0 * 4, 1e-6); /* 15 min apart */
    assert_near(d.confidence, 0.15, EPS);
    /* log10(1 + 19968 / 1024) x 0.15 = log10(20.5) x 0.15 */
    assert_near(d.score, log10(20.5) * 0.15, 1e-12);
    assert_int_equal(d.steps, 1);
    assert_int_equal(d.steps_up, 1);
    assert_non_null(strstr(d.evidence, "outstanding +6 allocations of 832 B"));
    /* bytes up but diff down between the two screens: not a leak */
    p[1].diff = 20;
    assert_int_equal(pw_detect_eval(p, 2, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_NOISE);
    assert_true(d.score == 0.0);
}

/* 12 screens, +1 MiB and +1,024 allocations per screen: 4 MiB/h. Kendall S = 66,
 * Var(S) = 12 x 11 x 29 / 18 = 212.667, Z = 65 / 14.5831 = 4.4572, p = erfc(Z/sqrt2)/2. */
static void test_straight_leak(void **state)
{
    (void)state;
    pw_detect_point_t p[12];
    for (int i = 0; i < 12; i++)
        p[i] = pt(i, 30 * MiB + (uint64_t)i * MiB, 5000 + (uint64_t)i * 1024, 7);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 12, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_near(d.rate_bytes_per_h, 4.0 * MiB, 1e-6);
    assert_near(d.rate_low_bytes_per_h, 4.0 * MiB, 1e-6);
    assert_near(d.diff_rate_per_h, 4096.0, 1e-9);
    double z = 65.0 / sqrt(12.0 * 11 * 29 / 18);
    assert_near(d.mk_p, 0.5 * erfc(z / sqrt(2.0)), 1e-15);
    assert_true(isinf(d.snr));
    assert_near(d.saturation, 1.0, EPS);
    assert_near(d.confidence, 1.0 - d.mk_p, 1e-12);
    assert_near(d.score, log10(1.0 + 4096.0) * (1.0 - d.mk_p), 1e-9);
    assert_int_equal(d.growth_bytes, 11 * MiB);
    assert_int_equal(d.span_ms, 11 * Q_MS);
    assert_int_equal(d.since_ms, T0);
    assert_int_equal(d.steps_up, 11);
    assert_int_equal(d.segments, 1);
}

/* Flat for 6 screens, then +512 KiB a screen for 6: the judged part starts at screen 5 (the
 * last flat point is the corner of the broken stick). */
static void test_late_start(void **state)
{
    (void)state;
    pw_detect_point_t p[12];
    for (int i = 0; i < 12; i++) {
        uint64_t k = i < 6 ? 0 : (uint64_t)(i - 5);
        p[i] = pt(i, 10 * MiB + k * 512 * 1024 + (i % 2) * 4096, 900 + k * 256 + (i % 2), 1);
    }
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 12, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_int_equal(d.since_ms, T0 + 5 * Q_MS);
    assert_int_equal(d.first_bytes, 10 * MiB + 4096);
    assert_non_null(strstr(d.evidence, "flat before it began growing"));
}

/* A leak across a reboot: boot 1 grows 0..3 MiB in 4 screens, boot 2 again from 0.5 MiB.
 * Pooled: S = 6 + 6 = 12, Var = 2 x (4 x 3 x 13 / 18) = 17.333, Z = 11 / 4.1633 = 2.6421. */
static void test_reboot(void **state)
{
    (void)state;
    pw_detect_point_t p[8];
    for (int i = 0; i < 4; i++)
        p[i] = (pw_detect_point_t){T0 + i * Q_MS,
                                   50000 + (uint64_t)i * 2000,
                                   40000 + (uint64_t)i * 1000,
                                   10000 + (uint64_t)i * 1000,
                                   (uint64_t)i * MiB + 64,
                                   1};
    for (int i = 0; i < 4; i++)
        p[4 + i] = (pw_detect_point_t){T0 + (4 + i) * Q_MS,         300 + (uint64_t)i * 2000,
                                       200 + (uint64_t)i * 1000,    100 + (uint64_t)i * 1000,
                                       MiB / 2 + (uint64_t)i * MiB, 1};
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 8, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_int_equal(d.segments, 2);
    assert_int_equal(d.growth_bytes, 6 * MiB);
    assert_int_equal(d.steps, 6);
    double z = 11.0 / sqrt(2.0 * 4 * 3 * 13 / 18);
    assert_near(d.mk_p, 0.5 * erfc(z / sqrt(2.0)), 1e-15);
    assert_near(d.rate_bytes_per_h, 4.0 * MiB, 1e-6);
    assert_non_null(strstr(d.evidence, "grew in each of 2 boots"));
    /* the same points under one boot id: the drop reads as a fall, so not a leak */
    for (int i = 4; i < 8; i++) {
        p[i].allocs = 50000 + (uint64_t)i * 2000;
        p[i].frees = 40000 + (uint64_t)i * 1000;
    }
    assert_int_equal(pw_detect_eval(p, 8, NULL, &d), 0);
    assert_int_equal(d.segments, 1);
    assert_true(d.verdict != PW_DETECT_LEAK);
}

/* Rises for 6 screens, then flat: the last third (screens 8-11) has slope 0 -> cache. */
static void test_cache_levels_off(void **state)
{
    (void)state;
    pw_detect_point_t p[12];
    for (int i = 0; i < 12; i++) {
        uint64_t k = i < 6 ? (uint64_t)i : 5;
        p[i] = pt(i, 2 * MiB + k * MiB, 100 + k * 1000, 1);
    }
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 12, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
    assert_near(d.saturation, 0.0, EPS);
    /* a leak of the same size ranks above it */
    pw_detect_point_t q[12];
    for (int i = 0; i < 12; i++)
        q[i] = pt(i, 2 * MiB + (uint64_t)i * MiB * 5 / 11, 100 + (uint64_t)i * 454, 1);
    pw_detect_t l;
    assert_int_equal(pw_detect_eval(q, 12, NULL, &l), 0);
    assert_int_equal(l.verdict, PW_DETECT_LEAK);
    assert_true(l.score > d.score);
}

static void test_bulk_free_flat_and_no_allocs(void **state)
{
    (void)state;
    pw_detect_point_t p[8];
    /* up 0..5 MiB then down to 1 MiB: fell back by 80 % of its rise */
    uint64_t v[8] = {0, 1, 2, 3, 4, 5, 1, 2};
    for (int i = 0; i < 8; i++)
        p[i] = pt(i, v[i] * MiB, 10 + v[i] * 100, 1);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(p, 8, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_NOISE);
    assert_near(d.fall, 4.0 / 5.0, EPS);
    /* flat */
    for (int i = 0; i < 8; i++)
        p[i] = pt(i, 4096, 4, 1);
    assert_int_equal(pw_detect_eval(p, 8, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_PLATEAU);
    /* bytes rise, outstanding allocations do not (each block grows) */
    for (int i = 0; i < 8; i++)
        p[i] = pt(i, MiB + (uint64_t)i * MiB, 50, 1);
    assert_int_equal(pw_detect_eval(p, 8, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
}

/* The ring: runs of equal points keep their ends; 1,000 rising points stay within 64, the
 * first and the last kept, time order kept. */
static void test_ring(void **state)
{
    (void)state;
    pw_detect_ring_t r;
    pw_detect_ring_init(&r);
    for (int i = 0; i < 5; i++)
        assert_int_equal(pw_detect_ring_push(&r, &(pw_detect_point_t){T0 + i, 0, 0, 1, 7, 1}), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.p[0].ts_ms, T0);
    assert_int_equal(r.p[1].ts_ms, T0 + 4);
    assert_int_equal(pw_detect_ring_push(&r, &(pw_detect_point_t){T0, 0, 0, 1, 7, 1}), PW_EINVAL);
    pw_detect_ring_init(&r);
    for (int i = 0; i < 1000; i++) {
        pw_detect_point_t q = {T0 + i * 10000LL, 0, 0, (uint64_t)i, (uint64_t)i * 64, 1};
        assert_int_equal(pw_detect_ring_push(&r, &q), 0);
        assert_true(r.n <= PW_DETECT_RING);
    }
    assert_int_equal(r.p[0].ts_ms, T0);
    assert_int_equal(r.p[r.n - 1].ts_ms, T0 + 999 * 10000LL);
    for (int i = 1; i < r.n; i++)
        assert_true(r.p[i].ts_ms > r.p[i - 1].ts_ms);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_near(d.rate_bytes_per_h, 64.0 * 360, 1e-6); /* 64 B every 10 s */
}

/* Two screens of one capture (`first`, `last` bytes per row; allocations follow the bytes),
 * judged and screened by their peers into d[0..n). */
static void two_screens(const uint64_t *first, const uint64_t *last, size_t n, pw_detect_t *d,
                        pw_detect_t **v)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t d1 = last[i] > first[i] ? 110 : last[i] < first[i] ? 90 : 100;
        pw_detect_point_t p[2] = {pt(0, first[i], 100, 1), pt(1, last[i], d1, 1)};
        assert_int_equal(pw_detect_eval(p, 2, NULL, &d[i]), 0);
        v[i] = &d[i];
    }
}

/* The peer screen of 2-screen verdicts, worked out by hand. Ten rows: four did not move (as
 * most rows of a real capture do not between screens), six moved:
 *   A 200,000 -> 202,000 (+1 %, +2,000 B)     B 200,000 -> 212,000 (+6 %, +12,000 B)
 *   C 2,000,000 -> 2,001,000 (+0.05 %, +1,000 B)  D 50,000 -> 49,500 (-1 %)
 *   E 80,000 -> 80,800 (+1 %, +800 B)          F 400,000 -> 399,000 (-0.25 %)
 * A, B, C and E rose (a "leak" by comparison). Among all ten, relative growth: median 0,
 * MAD 0.0015, x 1.4826 = 0.0022239: B's z is 27.0 but it grew less than 10 %, A's and E's 4.5.
 * Among the six that moved, relative: median 0.00525, MAD 0.00625 (scale 0.0092663), z A
 * 0.51, B 5.91, C -0.51, E 0.51; bytes: median 900, MAD 1,250 (scale 1,853.25), z A 0.59,
 * B 5.99, C 0.05, E -0.05. Only B stands out in both (and grew 4 KiB or more): B stays a
 * leak; A, C and E become noise with the reason. */
static void test_peer_screen(void **state)
{
    (void)state;
    const uint64_t first[10] = {200000, 200000, 2000000, 50000, 80000,
                                400000, 1000,   5000,    70000, 90000};
    const uint64_t last[10] = {202000, 212000, 2001000, 49500, 80800,
                               399000, 1000,   5000,    70000, 90000};
    pw_detect_t d[10], *v[10];
    two_screens(first, last, 10, d, v);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[1].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[2].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[4].verdict, PW_DETECT_LEAK);
    assert_int_equal(pw_detect_peer_screen(v, 10), 3);
    assert_int_equal(d[1].verdict, PW_DETECT_LEAK);
    assert_true(d[1].score > 0);
    for (int i = 0; i < 5; i += 2) {
        assert_int_equal(d[i].verdict, PW_DETECT_NOISE);
        assert_true(d[i].score == 0.0);
    }
    assert_non_null(strstr(
        d[0].evidence, "; growth of +1.0 % (+2000 B) does not stand out among 10 tags (z 4.5; "
                       "among the 6 that moved z 0.5 and 0.6: both must reach 3.5, and 4096 B)"));
    assert_non_null(strstr(d[2].evidence, "(z 0.2; among the 6 that moved z -0.5 and 0.1"));

    /* the same shape a tenth the bytes (B +3,000 B, +6 %): z 5.9 and 15.7, but below 4 KiB */
    const uint64_t f2[10] = {20000, 50000, 200000, 5000, 8000, 40000, 1000, 5000, 70000, 90000};
    const uint64_t l2[10] = {20200, 53000, 200100, 4950, 8080, 39900, 1000, 5000, 70000, 90000};
    two_screens(f2, l2, 10, d, v);
    assert_int_equal(pw_detect_peer_screen(v, 10), 4);
    assert_int_equal(d[1].verdict, PW_DETECT_NOISE);
    assert_non_null(strstr(d[1].evidence, "among the 6 that moved z 5.9 and 15.7: both must reach "
                                          "3.5, and 4096 B)"));

    /* fewer than 5 rows that moved: none stands out (no spread to stand out of) */
    two_screens(first, last, 10, d, v);
    d[3].last_bytes = d[3].first_bytes; /* D and F as if they had not moved: 4 movers */
    d[5].last_bytes = d[5].first_bytes;
    assert_int_equal(pw_detect_peer_screen(v, 10), 4);
    assert_int_equal(d[1].verdict, PW_DETECT_NOISE);

    /* fewer than 5 rows: no peer test (Microsoft's `poolmon /iDrsd`: one tag) */
    two_screens(first, last, 4, d, v);
    assert_int_equal(pw_detect_peer_screen(v, 4), 0);
    assert_int_equal(d[1].verdict, PW_DETECT_LEAK);
}

/* Two screens 15 min apart where every row churns (by up to 15 % either way) and one grows far
 * more than any other row moves (a new user's capture, bytes and outstanding allocations):
 *   Lkme 20,480,000 -> 23,040,000 B, 20,000 -> 22,500   (+12.5 %, +2,560,000 B, +2,500)
 *   CM      981,504 ->  1,066,496 B,  1,917 ->  2,083   (+8.7 %, +84,992 B, +166)
 *   MmSt 331,760 -> 328,900 (1,276 -> 1,265)  Thre 259,888 -> 272,912 (439 -> 461)
 *   File 177,560 -> 159,160 (965 -> 865)      Io 96,882 -> 82,422 (134 -> 114)
 *   Key 83,430 -> 78,589 (810 -> 763)         Irp 60,532 -> 60,384 (409 -> 408)
 *   Ntfr 20,096 -> 19,392 (314 -> 303)        Wait 8,430 -> 7,587 (30 -> 27)
 *   SePa 3,645 -> 3,780 (27 -> 28)
 * Relative growth does not single Lkme out (all eleven moved; median -0.86 %, MAD 5.9 %: z 1.5),
 * but it grew 2,560,000 / 84,992 = 30.1 times the largest other change in bytes (CM's) and
 * 2,500 / 166 = 15.1 times in outstanding allocations (>= 4 both): dominant, a leak. The other
 * risers (CM, Thre, SePa) are noise. */
static void test_peer_screen_dominant(void **state)
{
    (void)state;
    static const uint64_t fb[11] = {20480000, 981504, 331760, 259888, 177560, 96882,
                                    83430,    60532,  20096,  8430,   3645};
    static const uint64_t lb[11] = {23040000, 1066496, 328900, 272912, 159160, 82422,
                                    78589,    60384,   19392,  7587,   3780};
    static const uint64_t fd[11] = {20000, 1917, 1276, 439, 965, 134, 810, 409, 314, 30, 27};
    static const uint64_t ld[11] = {22500, 2083, 1265, 461, 865, 114, 763, 408, 303, 27, 28};
    pw_detect_t d[11], *v[11];
    for (size_t i = 0; i < 11; i++) {
        pw_detect_point_t p[2] = {pt(0, fb[i], fd[i], 1), pt(1, lb[i], ld[i], 1)};
        assert_int_equal(pw_detect_eval(p, 2, NULL, &d[i]), 0);
        v[i] = &d[i];
    }
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].growth_bytes, 2560000);
    assert_int_equal(d[0].growth_diff, 2500);
    assert_int_equal(d[1].verdict, PW_DETECT_LEAK);
    assert_int_equal(pw_detect_peer_screen(v, 11), 3); /* CM, Thre, SePa */
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_true(d[0].score > 0);
    assert_int_equal(d[1].verdict, PW_DETECT_NOISE);
    assert_int_equal(d[3].verdict, PW_DETECT_NOISE);
    assert_int_equal(d[10].verdict, PW_DETECT_NOISE);

    /* Lkme at 3.9 times CM's change in outstanding allocations (+647): not dominant */
    for (size_t i = 0; i < 11; i++) {
        pw_detect_point_t p[2] = {pt(0, fb[i], fd[i], 1),
                                  pt(1, lb[i], i == 0 ? fd[0] + 647 : ld[i], 1)};
        assert_int_equal(pw_detect_eval(p, 2, NULL, &d[i]), 0);
    }
    assert_int_equal(pw_detect_peer_screen(v, 11), 4);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
}

/* Two screens of eight rows given in full (poolmon's Allocs, Frees, Diff = Allocs - Frees,
 * Bytes), 15 min apart, judged and screened by their peers into d[0..8). */
typedef struct {
    uint64_t allocs[2], frees[2], bytes[2];
} kept_row_t;

static size_t kept_screen(const kept_row_t *rows, pw_detect_t *d, pw_detect_t **v)
{
    for (size_t i = 0; i < 8; i++) {
        pw_detect_point_t p[2];
        for (int k = 0; k < 2; k++)
            p[k] = (pw_detect_point_t){T0 + k * Q_MS,    rows[i].allocs[k],
                                       rows[i].frees[k], rows[i].allocs[k] - rows[i].frees[k],
                                       rows[i].bytes[k], 1};
        assert_int_equal(pw_detect_eval(p, 2, NULL, &d[i]), 0);
        v[i] = &d[i];
    }
    return pw_detect_peer_screen(v, 8);
}

/* A leak on a host whose other rows hold still (the new user's textbook capture, 2026-12-02:
 * two screens, eight rows, Fk the only row whose bytes or outstanding allocations changed):
 *   Fk  Allocs 20,000 -> 23,906  Frees 10,000 (0)  Diff 10,000 -> 13,906 (+3,906) x 512 B
 *   Io, Key: allocs and frees moved alike (Diff and bytes unchanged); four rows did not move.
 * There is no spread to stand out of (MAD 0) and no other change to be several times, so it was
 * noise ("does not stand out among 8 tags"). The dominant way's rule: 4 times the largest change
 * of any other row (0) and 4 times what a row of a still host moves by in as many steps as it
 * rose: 1 step x max(3, 0.2 % of its first 10,000 allocations = 20) = 20, x 4 = 80 <= 3,906;
 * and +1,999,872 B >= 4 KiB: a leak, saying no other tag changed. */
static void test_peer_screen_lone(void **state)
{
    (void)state;
    kept_row_t rows[8] = {
        {{20000, 23906}, {10000, 10000}, {5120000, 7119872}},
        {{500000, 500000}, {499000, 499000}, {4000000, 4000000}},
        {{1021112, 1021162}, {1020985, 1021035}, {91912, 91912}},
        {{954821, 954831}, {953979, 953989}, {87528, 87528}},
        {{3971107, 3971107}, {3971077, 3971077}, {8456, 8456}},
        {{680348, 680348}, {680321, 680321}, {3656, 3656}},
        {{200, 200}, {0, 0}, {6400, 6400}},
        {{300, 300}, {100, 100}, {6400, 6400}},
    };
    pw_detect_t d[8], *v[8];
    assert_int_equal(kept_screen(rows, d, v), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].growth_diff, 3906);
    assert_int_equal(d[0].growth_bytes, 1999872);
    assert_true(d[0].score > 0);
    assert_non_null(strstr(d[0].evidence, "; no other tag changed its bytes or outstanding"));
    for (size_t i = 1; i < 8; i++)
        assert_int_not_equal(d[i].verdict, PW_DETECT_LEAK);
    /* the still-row noise: Fk +79 allocations (40,448 B) is under 80, +80 is not */
    rows[0] = (kept_row_t){{20000, 20079}, {10000, 10000}, {5120000, 5160448}};
    kept_screen(rows, d, v);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    rows[0] = (kept_row_t){{20000, 20080}, {10000, 10000}, {5120000, 5160960}};
    kept_screen(rows, d, v);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    /* the 4-KiB floor: a row of 100 allocations of 32 B rising +13 (> 4 x 3) but by 416 B */
    rows[0] = (kept_row_t){{20000, 20013}, {19900, 19900}, {3200, 3616}};
    kept_screen(rows, d, v);
    assert_int_not_equal(d[0].verdict, PW_DETECT_LEAK);
}

/* A leak that keeps what it allocates among rows that churn. Two screens, eight rows:
 *   Lk  Allocs 1,000 -> 1,137  Frees 500 -> 610        Diff 500 -> 527 (+27)  x 1,024 B
 *   A   50,000 -> 55,000       48,000 -> 52,981        2,000 -> 2,019 (+19)   x 4,096 B
 *   B   10,500 -> 11,500       10,000 -> 10,997        500 -> 503 (+3)        x 512 B
 *   C   20,300 -> 22,300       20,000 -> 22,003        300 -> 297 (-3)        x 256 B
 *   D   4,100 -> 4,500         4,000 -> 4,398          100 -> 102 (+2)        x 64 B
 *   E   31,000 -> 34,000       30,000 -> 33,000        1,000 (0)              x 128 B
 *   F   200                    0                       200 (0)                x 32 B
 *   G   105,000 -> 113,000     100,000 -> 108,010      5,000 -> 4,990 (-10)   x 1,024 B
 * Lk grew 27,648 B (+5.4 %): under 10 % (the first way), A grew more bytes (77,824: not
 * dominant), and among the six that moved its relative growth is not an outlier (median 0.775 %,
 * MAD 1.1 %, scale 1.6309 %: z 2.84). But it added the most outstanding allocations (27; A 19),
 * grew the most relative to itself (D +2 %, B +0.6 %, A +0.95 %), and still holds 27 / 137 =
 * 19.7 % of the allocations it made, where the most any other row holds is D's 2 / 400 = 0.5 %
 * (A 0.38 %, B 0.3 %; C and G fell, E and F did not rise): 39 times, >= 4: a leak. A, B
 * and D rose too (a leak by comparison) and are noise. Then, each taken away in turn: Lk
 * holding 3.9 times D's share (27 of 1,400 allocations: 1.93 %), A adding 28 allocations, Lk's
 * frees going backwards, or D's counters contradicting each other (what it holds cannot be told):
 * noise. */
static void test_peer_screen_kept(void **state)
{
    (void)state;
    kept_row_t rows[8] = {
        {{1000, 1137}, {500, 610}, {512000, 539648}},
        {{50000, 55000}, {48000, 52981}, {8192000, 8269824}},
        {{10500, 11500}, {10000, 10997}, {256000, 257536}},
        {{20300, 22300}, {20000, 22003}, {76800, 76032}},
        {{4100, 4500}, {4000, 4398}, {6400, 6528}},
        {{31000, 34000}, {30000, 33000}, {128000, 128000}},
        {{200, 200}, {0, 0}, {6400, 6400}},
        {{105000, 113000}, {100000, 108010}, {5120000, 5109760}},
    };
    pw_detect_t d[8], *v[8];
    assert_int_equal(kept_screen(rows, d, v), 3); /* A, B and D rose: compared, noise */
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].growth_allocs, 137);
    assert_int_equal(d[0].growth_diff, 27);
    assert_true(d[0].score > 0);
    assert_non_null(strstr(d[0].evidence, "; still holds 19.7 % of the 137 allocations it made, "
                                          "39 times the most any other tag holds"));
    assert_int_equal(d[1].verdict, PW_DETECT_NOISE);
    assert_non_null(strstr(d[1].evidence, "does not stand out among 8 tags"));
    /* screened again (a verdict kept between passes): said once */
    assert_int_equal(pw_detect_peer_screen(v, 8), 0);
    const char *first = strstr(d[0].evidence, "; still holds");
    assert_null(strstr(first + 1, "; still holds"));

    kept_row_t t = rows[0];
    rows[0] = (kept_row_t){{1000, 2400}, {500, 1873}, {512000, 539648}}; /* 3.9 times D's */
    assert_int_equal(kept_screen(rows, d, v), 4);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    rows[0] = t;

    kept_row_t a = rows[1];
    rows[1] = (kept_row_t){{50000, 55000}, {48000, 52972}, {8192000, 8273920}}; /* A +28 */
    assert_int_equal(kept_screen(rows, d, v), 4);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    rows[1] = a;

    kept_row_t dd = rows[4];
    rows[4] = (kept_row_t){{4100, 4504}, {4000, 4398}, {6400, 6784}}; /* D +6 %, above Lk */
    assert_int_equal(kept_screen(rows, d, v), 4);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    rows[4] = dd;

    /* Lk's frees went backwards (500 -> 498, Allocs +25, Diff +27 as before) */
    rows[0] = (kept_row_t){{1000, 1025}, {500, 498}, {512000, 539648}};
    kept_screen(rows, d, v);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    rows[0] = t;

    /* D's frees went backwards (4,000 -> 3,999, Allocs +1, Diff +2 as before): what D holds
     * cannot be told, so it is taken as all it made */
    rows[4] = (kept_row_t){{4100, 4101}, {4000, 3999}, {6400, 6528}};
    kept_screen(rows, d, v);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
}

/* A trend that rests on few rises is screened by its peers only among rows that mostly stand
 * still. "Step" of 1,000 B allocations grows twice by R over 9 screens (100 x 3, 100 + R x 3,
 * 100 + 2R x 3: 2 of its 8 steps rose, a leak by its trend). Beside 8 rows that move at every
 * screen (+-1,000 B in turn: the median row moved in 8 of 8) its trend stands on its own: a
 * leak. Beside 8 rows that never move (the median row moved in 0 of its steps: a still host) it
 * is the only row that moved, and it still rises (flat for 30 min, its mean time between rises
 * 60 min), so it stands out only as dominant: beyond 4 times what a row of a still host moves by
 * in its 2 rising steps, 4 x 2 x max(3, 0.2 % of 100) = 24 allocations. R = 11 (+22) is within
 * that noise; R = 30 (+60) is a leak. Until 2026-12-02 the rule was "nothing to stand out of:
 * noise" whatever R: the labelled suite's still hosts then named 0 of 36 step leaks at 9 to 24
 * screens (bench_detect still), now 21 of 36, with no false suspect added. */
static void test_peer_screen_sparse_trend(void **state)
{
    (void)state;
    pw_detect_t d[9], *v[9];
    static const uint64_t rise[2] = {11, 30};
    for (int host = 0; host < 2; host++)
        for (int k = 0; k < 2; k++) {
            for (int r = 0; r < 9; r++) {
                pw_detect_point_t p[9];
                for (int i = 0; i < 9; i++) {
                    uint64_t n = 100 + rise[k] * (uint64_t)(i / 3);
                    uint64_t b = r == 0 ? n * 1000 : host == 0 ? 50000 : 50000 + (i % 2 ? 1000 : 0);
                    p[i] = pt(i, b, r == 0 ? n : b / 500, 1);
                }
                assert_int_equal(pw_detect_eval(p, 9, NULL, &d[r]), 0);
                v[r] = &d[r];
            }
            assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
            assert_int_equal(d[0].steps, 8);
            assert_int_equal(d[0].steps_up, 2);
            assert_int_equal(d[0].steps_moved, 2);
            assert_int_equal(d[0].flat_ms, 2 * Q_MS);
            assert_int_equal(d[0].span_ms, 8 * Q_MS);
            assert_int_equal(d[1].steps_moved, host == 0 ? 0 : 8);
            size_t demoted = pw_detect_peer_screen(v, 9);
            if (host == 0 && k == 0) {
                assert_int_equal(demoted, 1);
                assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
                assert_non_null(strstr(d[0].evidence, "does not stand out among 9 tags"));
            } else {
                assert_int_equal(demoted, 0);
                assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
                assert_true((strstr(d[0].evidence, "; no other tag changed") != NULL) ==
                            (host == 0));
            }
        }
}

/* A leak of office hours in a capture of 3 days of 15-minute screens (the Ddk story: the
 * ddk-2003 simulation's screens 1,017 .. 1,304, 800 tags, imported; none was named). "Ddk " as
 * the collector's ring held it (its 40 points, logged from the product: minutes from the first,
 * outstanding allocations of 512 B): +32,725 over 3 days, rising in 37 of 39 steps of the ring
 * and never falling, but only during 61 % of the span (its nights are single steps). Nine rows
 * of 20 allocations (a still host: row r moves by 2 allocations at |r - 4| screens, all up or
 * all down, ending at 20 + 2 (r - 4), from -40 % to +40 %) and one, "Rise", of 118,625 that
 * rose by 500 at screens 50, 100 .. 250 (+2,500), each fed through a ring every screen as the
 * collector feeds a busy row (its counters move every screen; runs of equal bytes collapse). Ddk's
 * trend rose during less than 3/4 of its span on a host whose rows mostly stand still, so it must
 * stand out; its +27.7 % does not among rows that wander +-40 %, and a still row of its size moves
 * max(3, 0.2 % x 118,075) = 236.15 allocations a step: over 37 rises 4 x 37 x 236.15 = 34,950 >
 * 32,725 if the moves all went up. They go either way: 37 of them end about sqrt(37) moves away, 4
 * x 6.08 x 236.15 = 5,746 <= 32,725, and 37 rises without a fall are no chance: a leak. Rise rose 5
 * times (fewer than PW_DETECT_RUN_RISES, 8): held to 4 x 5 x 237.25 = 4,745 > 2,500, noise (by the
 * square root it would pass: 4 x 2.24 x 237.25 = 2,122). */
static void test_peer_screen_office_hours(void **state)
{
    (void)state;
    static const int64_t ddk[40][2] = {
        {0, 118075},    {75, 119450},   {150, 120825},  {225, 122200},  {1065, 122200},
        {1140, 123575}, {1215, 124950}, {1290, 126325}, {1365, 127700}, {1440, 129075},
        {1515, 130450}, {1530, 130725}, {1605, 132100}, {2505, 133200}, {2580, 134575},
        {2655, 135950}, {2730, 137325}, {2805, 138700}, {2880, 140075}, {2955, 141450},
        {3030, 142825}, {3105, 144200}, {3945, 144200}, {4020, 145575}, {4080, 146675},
        {4095, 146950}, {4110, 147225}, {4125, 147500}, {4140, 147775}, {4155, 148050},
        {4170, 148325}, {4185, 148600}, {4200, 148875}, {4215, 149150}, {4230, 149425},
        {4245, 149700}, {4260, 149975}, {4275, 150250}, {4290, 150525}, {4305, 150800}};
    enum { ROWS = 11, SCREENS = 288 };
    static pw_detect_ring_t ring[ROWS];
    pw_detect_t d[ROWS], *v[ROWS];
    pw_detect_point_t dp[40];
    for (int i = 0; i < 40; i++)
        dp[i] = pt(ddk[i][0] / 15, (uint64_t)ddk[i][1] * 512, (uint64_t)ddk[i][1], 1);
    for (int r = 1; r < ROWS; r++)
        pw_detect_ring_init(&ring[r]);
    uint64_t rise = 118625, small[9];
    for (int r = 0; r < 9; r++)
        small[r] = 20;
    for (int i = 0; i < SCREENS; i++) {
        if (i > 0 && i % 50 == 0 && i <= 250)
            rise += 500;
        /* busy rows (allocations and frees every screen) are fed every screen */
        pw_detect_point_t p = pt(i, rise * 512, rise, 1);
        assert_int_equal(pw_detect_ring_push(&ring[1], &p), 0);
        for (int r = 0; r < 9; r++) {
            /* at screens 60 k + 3 r (k = 1..4): the first r - 4 of them up by 2 (r > 4), the
             * first 4 - r down by 2 (r < 4) */
            int k = (i - 3 * r) / 60;
            if (i > 3 * r && (i - 3 * r) % 60 == 0 && k <= r - 4)
                small[r] += 2;
            if (i > 3 * r && (i - 3 * r) % 60 == 0 && k <= 4 - r)
                small[r] -= 2;
            p = pt(i, small[r] * 64, small[r], 1);
            assert_int_equal(pw_detect_ring_push(&ring[2 + r], &p), 0);
        }
    }
    for (int r = 0; r < 9; r++)
        assert_int_equal(small[r], (uint64_t)(20 + 2 * (r - 4)));
    assert_int_equal(pw_detect_eval(dp, 40, NULL, &d[0]), 0);
    v[0] = &d[0];
    for (int r = 1; r < ROWS; r++) {
        assert_int_equal(pw_detect_eval(ring[r].p, ring[r].n, NULL, &d[r]), 0);
        v[r] = &d[r];
    }
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].growth_diff, 32725);
    assert_true(d[0].fall == 0);
    assert_int_equal(d[0].steps, 39);
    assert_int_equal(d[0].steps_up, 37);
    assert_true(4 * d[0].rise_ms < 3 * d[0].span_ms); /* a sparse trend on a still host */
    assert_int_equal(d[1].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[1].steps_up, 5);
    assert_int_equal(d[1].growth_diff, 2500);
    assert_int_equal(pw_detect_peer_screen(v, ROWS), 1);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[1].verdict, PW_DETECT_NOISE);
}

/* A leak in steps on a still host beside one row that wanders far (the labelled suite's still
 * hosts with a large mover, step x9 and x24). "Step" of 1,000 B allocations: 100 x 3, 130 x 3,
 * 160 x 3 (+60, +60,000 B). "Wand" of 500 B: 100 160 110 170 120 180 130 190 131, up and down by
 * 50-60 each screen, +31 (+15,500 B) from end to end; seven rows never move (a still host).
 * Step's +60,000 B is not 4 x Wand's +15,500 B, but Step never fell: it rose in two steps only,
 * and what Wand changed between Step's ends is no measure of that; held to the still row's noise
 * (4 x 2 x 3 = 24 <= 60) it is a leak. The same verdict with a fall in it (fall 5 % of its rise:
 * the engine itself calls such a jittered step row noise, so the verdict is set here) is judged
 * against Wand as a comparison is: noise. */
static void test_peer_screen_steps_beside_mover(void **state)
{
    (void)state;
    static const uint64_t wand[9] = {100, 160, 110, 170, 120, 180, 130, 190, 131};
    pw_detect_t d[9], *v[9];
    for (int fell = 0; fell < 2; fell++) {
        for (int r = 0; r < 9; r++) {
            pw_detect_point_t p[9];
            for (int i = 0; i < 9; i++) {
                uint64_t n = 100 + 30 * (uint64_t)(i / 3);
                p[i] = r == 0   ? pt(i, n * 1000, n, 1)
                       : r == 1 ? pt(i, wand[i] * 500, wand[i], 1)
                                : pt(i, 50000 + 1000 * (uint64_t)r, 100, 1);
            }
            assert_int_equal(pw_detect_eval(p, 9, NULL, &d[r]), 0);
            v[r] = &d[r];
        }
        assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
        assert_int_equal(d[0].growth_diff, 60);
        assert_true(d[0].fall == 0);
        assert_int_equal(d[1].growth_bytes, 15500);
        if (fell)
            d[0].fall = 0.05;
        pw_detect_peer_screen(v, 9);
        assert_int_equal(d[0].verdict, fell ? PW_DETECT_NOISE : PW_DETECT_LEAK);
        if (!fell) /* another row changed: the evidence does not say none did */
            assert_null(strstr(d[0].evidence, "; no other tag changed"));
    }
}

/* A row's points through the ring as the collector feeds an import: 15-minute screens of `diff`
 * outstanding allocations of `per` bytes, the cumulative counters reset (both fall) from screen
 * `reset_at` on (0: never), one boot id (a capture has none). Returns the ring's points. */
static size_t screens_ring(const uint64_t *diff, size_t n, uint64_t per, size_t reset_at,
                           pw_detect_ring_t *r)
{
    pw_detect_ring_init(r);
    for (size_t i = 0; i < n; i++) {
        uint64_t base = reset_at && i >= reset_at ? 500 : 90000;
        pw_detect_point_t q = {T0 + (int64_t)i * Q_MS, base + i * 300 + diff[i],
                               base + i * 300,         diff[i],
                               diff[i] * per,          1};
        assert_int_equal(pw_detect_ring_push(r, &q), 0);
    }
    return r->n;
}

/* A row of the labelled suite's walk regime (gen walk reboot x9 seed 0, B013: 2,652 B per
 * allocation) that moved up by 3 allocations before a reboot at screen 4 and stood still after
 * it: 167 168 170 170 | 170 170 170 170 170. The run of 170s spans the reboot; the ring keeps
 * the point where the counters fell (else the reboot vanishes inside the run and the last
 * "boot" is one point: the 3 points before it were compared as a leak, "+3 allocations over 30
 * min, rose in 2 of 2 steps"). Kept: 167, 168, 170 (screens 2, 3), 170 (4, the reset), 170 (8):
 * windows of 4 and 2 points. Boot 1: S = 3 + 2 = 5, Var = (4 x 3 x 13 - 2 x 1 x 9) / 18 =
 * 7.6667; boot 2: two equal points, S = 0, Var = 0. Z = 4 / sqrt(7.6667), p = 0.0743: noise. */
static void test_ring_keeps_counter_reset(void **state)
{
    (void)state;
    static const uint64_t diff[9] = {167, 168, 170, 170, 170, 170, 170, 170, 170};
    pw_detect_ring_t r;
    assert_int_equal(screens_ring(diff, 9, 2652, 4, &r), 6);
    assert_int_equal(r.p[4].ts_ms, T0 + 4 * Q_MS);
    assert_int_equal(r.p[4].allocs, 500 + 4 * 300 + 170);
    assert_int_equal(r.p[5].ts_ms, T0 + 8 * Q_MS);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.segments, 2);
    assert_int_equal(d.steps, 4);
    assert_int_equal(d.steps_up, 2);
    assert_int_equal(d.growth_diff, 3);
    assert_near(d.mk_p, 0.5 * erfc(4.0 / sqrt(138.0 / 18) / sqrt(2.0)), 1e-15);
    assert_int_equal(d.verdict, PW_DETECT_NOISE);
}

/* Rows of a host that never move, judged beside `x` (their peers: a still host). */
static size_t still_host(pw_detect_t *x, pw_detect_t *d, pw_detect_t **v)
{
    v[0] = x;
    for (int k = 1; k < 9; k++) {
        pw_detect_point_t p[9];
        for (int i = 0; i < 9; i++)
            p[i] = pt(i, 50000 + 1000 * (uint64_t)k, 100, 1);
        assert_int_equal(pw_detect_eval(p, 9, NULL, &d[k]), 0);
        v[k] = &d[k];
    }
    return 9;
}

/* A row first seen once in the boot before and three times in this one: its 4 points are
 * judged as a comparison of the last 3 (the earlier boot's single point is no window), so it
 * must stand out among its peers like any 2-3 screen comparison. Its 4 points do not make it a
 * trend. Beside 8 rows that never move it is the only row that moved, so it stands out only as
 * dominant: beyond 4 times what a row of a still host moves by in its 2 rising steps, 2 x max(3,
 * 0.2 % of 100) = 6, x 4 = 24 allocations. +12 (+6,000 B, 6 a step) is within that noise: not
 * a leak; +24 (+12,000 B) is (the labelled suite's still hosts, docs/internals/detection.md,
 * chose this rule over naming any lone row of 4 KiB: bench_detect still, 2026-12-02). */
static void test_peer_screen_short_last_boot(void **state)
{
    (void)state;
    pw_detect_point_t p[4] = {pt(0, 50000, 100, 1), pt(1, 50000, 100, 2), pt(2, 53000, 106, 2),
                              pt(3, 56000, 112, 2)};
    pw_detect_t d[9], *v[9];
    assert_int_equal(pw_detect_eval(p, 4, NULL, &d[0]), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].points, 4);
    assert_int_equal(d[0].segments, 1);
    assert_int_equal(d[0].steps, 2);
    assert_near(d[0].confidence, 0.25, EPS);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 1);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    assert_non_null(strstr(d[0].evidence, "does not stand out among 9 tags"));

    /* 23 allocations (+11,500 B) are still noise, 24 (+12,000 B) a leak */
    p[2] = pt(2, 55500, 111, 2), p[3] = pt(3, 61500, 123, 2);
    assert_int_equal(pw_detect_eval(p, 4, NULL, &d[0]), 0);
    assert_int_equal(d[0].growth_diff, 23);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 1);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
    p[2] = pt(2, 56000, 112, 2), p[3] = pt(3, 62000, 124, 2);
    assert_int_equal(pw_detect_eval(p, 4, NULL, &d[0]), 0);
    assert_int_equal(d[0].growth_diff, 24);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_non_null(strstr(d[0].evidence, "; no other tag changed"));
}

/* A walk-regime row (gen walk linear x9 seed 4, B035: 2,552 B per allocation) that stood still
 * for 3 screens and then rose 4 times by a few allocations: 404 405 405 405 405 408 413 414 415.
 * In the ring the run of 405s is two points, so it "rose in 5 of 6 steps" and its trend passes
 * (a leak on its own); but it rose during 5 of its 8 quarter hours (75 of 120 min: 62.5 %), so on
 * a still host it must stand out, and beside rows that never move it does not. A slow leak of +1
 * allocation (877 B) at every screen rose all the time: it stands on its own. */
static void test_peer_screen_rise_time(void **state)
{
    (void)state;
    static const uint64_t walk[9] = {404, 405, 405, 405, 405, 408, 413, 414, 415};
    pw_detect_ring_t r;
    assert_int_equal(screens_ring(walk, 9, 2552, 0, &r), 7);
    pw_detect_t d[9], *v[9];
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d[0]), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].steps, 6);
    assert_int_equal(d[0].steps_up, 5);
    assert_int_equal(d[0].rise_ms, 5 * Q_MS);
    assert_int_equal(d[0].span_ms, 8 * Q_MS);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 1);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);

    static const uint64_t slow[9] = {547, 548, 549, 550, 551, 552, 553, 554, 555};
    assert_int_equal(screens_ring(slow, 9, 877, 0, &r), 9);
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d[0]), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].rise_ms, 8 * Q_MS);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
}

/* A row of the labelled suite's still hosts (gen still cache x24 seed 6, 714 B per allocation):
 * +44 allocations a screen for 8 screens, then 2,543 for 15 (a cache that filled). Through the
 * ring the flat run is two points, so its trend "rose in 8 of 9 steps" and is a leak (flat for
 * less than twice the 2.0 h it grew); on a still host it rose during 8 of its 23 quarter hours,
 * so it must stand out. It is the only row that moved, but it no longer rises: flat 3.75 h, 8 x
 * 3.75 h > its 5.75 h, so it is not judged dominant however far it grew: noise. */
static void test_peer_screen_levelled(void **state)
{
    (void)state;
    uint64_t diff[24];
    for (int i = 0; i < 24; i++)
        diff[i] = 2191 + 44 * (uint64_t)(i < 8 ? i : 8);
    pw_detect_ring_t r;
    screens_ring(diff, 24, 714, 0, &r);
    pw_detect_t d[9], *v[9];
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d[0]), 0);
    assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
    assert_int_equal(d[0].steps_up, 8);
    assert_int_equal(d[0].flat_ms, 15 * Q_MS);
    assert_int_equal(d[0].span_ms, 23 * Q_MS);
    assert_int_equal(pw_detect_peer_screen(v, still_host(&d[0], d, v)), 1);
    assert_int_equal(d[0].verdict, PW_DETECT_NOISE);
}

/* 9 screens of `diff` allocations of `per` B through the ring, `churn` allocations made and
 * freed between screens besides the change in diff; judged into *d. */
static void churn_row(const uint64_t *diff, uint64_t per, uint64_t churn, pw_detect_t *d)
{
    pw_detect_ring_t r;
    pw_detect_ring_init(&r);
    for (int i = 0; i < 9; i++) {
        pw_detect_point_t q = {T0 + i * Q_MS,
                               90000 + (uint64_t)i * churn + diff[i],
                               90000 + (uint64_t)i * churn,
                               diff[i],
                               diff[i] * per,
                               1};
        assert_int_equal(pw_detect_ring_push(&r, &q), 0);
    }
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, d), 0);
}

/* A sparse trend on a still host that stands out only by its size relative to itself. S is
 * the walk row of test_peer_screen_rise_time at a tenth of its size: 40 41 41 41 41 44 49 50 51
 * allocations of 3,072 B (+11, +27.5 %, +33,792 B), rising during 5 of its 8 quarter hours: a
 * leak by its trend, screened by its peers. Beside it 4 rows that never move and 5 that move a
 * few allocations (E +4 of 2,000 x 4,096 B, F +2 of 300 x 256 B, G +20 of 7,000 x 4,096 B,
 * H -3 of 150 x 512 B, I +2 of 60 x 2,048 B), every row making 300 allocations a screen besides.
 * Among all ten rows S's relative growth has z 129.4 (median 0.1 %, 1.4826 x MAD 0.212 %: most
 * rows did not move), above 3.5 and 10 %; among the six that moved its relative growth has z 13.2
 * but its bytes only 1.48 (G grew 81,920 B). What it kept: 11 of the 2,411 allocations it made
 * (0.456 %), beside E 4 / 2,404, F and I 2 / 2,402, G 20 / 2,420, H none: median 0.125 %, scale
 * 0.123 % (1.4826 x MAD 0.0832 %): z 2.69, under 3.5 — it kept what churn keeps: noise. The same
 * row freeing nothing (kept 11 of 11): z far above 3.5, a leak. */
static void test_peer_screen_sparse_kept(void **state)
{
    (void)state;
    static const uint64_t s[9] = {40, 41, 41, 41, 41, 44, 49, 50, 51};
    static const uint64_t still[4] = {1000, 200, 5000, 80}, still_per[4] = {512, 128, 64, 1024};
    static const uint64_t mv[5][9] = {{2000, 2000, 2003, 2003, 2001, 2001, 2004, 2004, 2004},
                                      {300, 300, 299, 299, 301, 301, 301, 302, 302},
                                      {7000, 7000, 7010, 7010, 7005, 7005, 7020, 7020, 7020},
                                      {150, 150, 149, 149, 148, 148, 148, 147, 147},
                                      {60, 60, 61, 61, 61, 62, 62, 62, 62}};
    static const uint64_t mv_per[5] = {4096, 256, 4096, 512, 2048};
    pw_detect_t d[10], *v[10];
    for (int churn = 300; churn >= 0; churn -= 300) {
        churn_row(s, 3072, (uint64_t)churn, &d[0]);
        for (int k = 0; k < 4; k++) {
            uint64_t flat[9];
            for (int i = 0; i < 9; i++)
                flat[i] = still[k];
            churn_row(flat, still_per[k], 300, &d[1 + k]);
        }
        for (int k = 0; k < 5; k++)
            churn_row(mv[k], mv_per[k], 300, &d[5 + k]);
        for (int k = 0; k < 10; k++)
            v[k] = &d[k];
        assert_int_equal(d[0].verdict, PW_DETECT_LEAK);
        assert_int_equal(d[0].growth_diff, 11);
        assert_int_equal(d[0].growth_allocs, churn ? 2411 : 11);
        assert_true(4 * d[0].rise_ms < 3 * d[0].span_ms);
        pw_detect_peer_screen(v, 10);
        assert_int_equal(d[0].verdict, churn ? PW_DETECT_NOISE : PW_DETECT_LEAK);
        if (churn)
            assert_non_null(strstr(d[0].evidence, "does not stand out among 10 tags (z 129.4; "
                                                  "among the 6 that moved z 13.2 and 1.5"));
    }
    assert_non_null(strstr(d[0].evidence, "rose in 5 of 6 steps"));
}

/* A walk-regime row (gen walk bulk-free x9 seed 2, B033: 1,808 B per allocation) that fell by
 * 10 allocations, stood still, and rose by 15: 4157 4147 4147 4147 4152 4154 4157 4157 4162.
 * The late-start search splits at screen 3 (the growth after it is flat before it), but the
 * rise after the split, 15 allocations, is less than twice the band of 10 the row churned in
 * before it: no late start. Judged whole, it is noise (it ends 5 allocations above its start). */
static void test_late_start_within_churn(void **state)
{
    (void)state;
    static const uint64_t diff[9] = {4157, 4147, 4147, 4147, 4152, 4154, 4157, 4157, 4162};
    pw_detect_ring_t r;
    assert_int_equal(screens_ring(diff, 9, 1808, 0, &r), 8);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.since_ms, T0);
    assert_int_equal(d.growth_diff, 5);
    assert_true(d.verdict != PW_DETECT_LEAK);
    assert_null(strstr(d.evidence, "flat before it began growing"));
}

/* A cache of the walk regime (gen walk cache x96 seed 7, Evnt: 1,049 B per allocation): +45
 * allocations a screen for 33 screens, then churning around its level for 62 (by up to 45
 * allocations: it leaves any band around its last value, so that band says it was flat only
 * for the last few screens). The fitted split where it levelled off says it grew for 8.25 h
 * (screen 0 to 33) and has been flat for 15.5 h since: flat longer than it grew, and its late
 * third has no slope: a growing cache, not a leak. Through the ring (96 screens thinned to its
 * 64 points), as an import feeds it. */
static void test_cache_churns_after_levelling_off(void **state)
{
    (void)state;
    static const uint64_t diff[96] = {
        3749, 3794, 3839, 3884, 3929, 3974, 4019, 4064, 4109, 4154, 4199, 4244, 4289, 4334,
        4379, 4424, 4469, 4514, 4559, 4604, 4649, 4694, 4739, 4784, 4829, 4874, 4919, 4964,
        5009, 5054, 5099, 5144, 5189, 5234, 5234, 5234, 5215, 5215, 5215, 5215, 5215, 5215,
        5215, 5215, 5220, 5220, 5220, 5220, 5220, 5218, 5218, 5218, 5218, 5218, 5218, 5218,
        5218, 5218, 5222, 5222, 5222, 5222, 5209, 5209, 5209, 5209, 5189, 5189, 5189, 5189,
        5193, 5193, 5200, 5200, 5200, 5200, 5200, 5200, 5200, 5212, 5212, 5212, 5212, 5223,
        5211, 5211, 5211, 5211, 5217, 5217, 5217, 5219, 5222, 5221, 5221, 5221};
    pw_detect_ring_t r;
    screens_ring(diff, 96, 1049, 0, &r);
    assert_true(r.n <= PW_DETECT_RING);
    pw_detect_t d;
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
    assert_true(d.saturation < 0.15);
    assert_non_null(strstr(d.evidence, "levelled off: flat for"));
    assert_non_null(strstr(d.evidence, "after growing for 8.2 h"));
}

/* A day of 15-minute screens from `day0` (ms, UTC midnight) + start_h: a row of 1 MiB at 256 B
 * an allocation whose growth in bytes at hour t is grown(t) */
static size_t day_series(pw_detect_point_t *p, int64_t start_ms, size_t n,
                         double (*grown)(double h, const void *arg), const void *arg)
{
    for (size_t i = 0; i < n; i++) {
        int64_t ts = start_ms + (int64_t)i * Q_MS;
        uint64_t b = MiB + (uint64_t)grown((double)(ts - start_ms) / 3600000.0, arg) / 256 * 256;
        p[i] = (pw_detect_point_t){
            ts, 5000 + (uint64_t)i * 100 + b / 256, 5000 + (uint64_t)i * 100, b / 256, b, 1};
    }
    return n;
}

/* flat 1 h, then grows 4 MiB over 8 h, then flat: linearly (a leak that paused), or filling
 * (its rate falling from 1 MiB/h to 0: 4 MiB (1 - (1 - u)^2)) */
static double grown_linear(double h, const void *arg)
{
    (void)arg;
    double u = (h - 1) / 8;
    return 4.0 * MiB * (u < 0 ? 0 : u > 1 ? 1 : u);
}

static double grown_fill(double h, const void *arg)
{
    (void)arg;
    double u = (h - 1) / 8;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    return 4.0 * MiB * (1 - (1 - u) * (1 - u));
}

/* 550 KiB an hour while the UTC hour is in [8, 18): the ddk-2003 leak; arg: the series' start
 * (ms since the epoch) */
static double grown_office(double h, const void *arg)
{
    int64_t start = *(const int64_t *)arg, t = start + (int64_t)llround(h * 3600000.0);
    double sum = 0;
    for (int64_t d = start / 86400000 * 86400000; d < t; d += 86400000) {
        int64_t a = d + 8 * 3600000LL, b = d + 18 * 3600000LL;
        a = a > start ? a : start;
        b = b < t ? b : t;
        if (b > a)
            sum += (double)(b - a) / 3600000.0;
    }
    return sum * 550 * 1024;
}

/* A cache that fills its working set (ever more slowly) and stays flat for less than twice the
 * time it grew is a growing cache; a leak of the same size that grew at one pace and paused as
 * long is a leak; so is an office-hours leak seen with one day of history in its overnight
 * pause (grew 10 h, flat 13.25 h). Worked by hand: the fill's rate at the share f of its rise is
 * 1 MiB/h x sqrt(1 - f); the rising steps of the first third of the rise (f 0 .. 1/3, 11 of
 * them at 15 min) have the median rate at f ~ 1/6 (0.91 MiB/h), those of the last third (up to
 * where it came within 2 % of its level) at f ~ 5/6 (0.41 MiB/h): decel ~ 0.45, less the steps'
 * own spread; the straight growth's steps all rise by 128 KiB: decel exactly 1; the office
 * leak's at 550 KiB/h, in whole blocks of 256 B: decel 1 within 1 %. */
static void test_cache_fills_leak_pauses(void **state)
{
    (void)state;
    const int64_t day0 = 19676LL * 86400000; /* 2023-11-15 00:00 UTC */
    pw_detect_point_t p[53];
    pw_detect_t d;
    /* 1 h flat + 8 h growth + 4 h flat: 13 h, 53 screens */
    day_series(p, day0, 53, grown_fill, NULL);
    assert_int_equal(pw_detect_eval(p, 53, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_GROWING_CACHE);
    assert_true(d.decel > 0.35 && d.decel < 0.5); /* ~0.45 by hand (above) */
    assert_non_null(strstr(d.evidence, "; filled up: grew for "));
    assert_int_equal(d.growth_bytes, (int64_t)(4 * MiB));
    day_series(p, day0, 53, grown_linear, NULL);
    assert_int_equal(pw_detect_eval(p, 53, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_near(d.decel, 1.0, EPS);
    /* office hours, a day of history ending at 07:15 UTC at one sample a minute, through the
     * ring as the collector keeps a live row: 1,441 samples from 07:15 the day before */
    int64_t start = day0 + 7 * 3600000LL + 15 * 60000;
    pw_detect_ring_t r;
    pw_detect_ring_init(&r);
    for (int64_t i = 0; i <= 1440; i++) {
        int64_t ts = start + i * 60000;
        uint64_t b = MiB + (uint64_t)grown_office((double)(i * 60000) / 3600000.0, &start);
        pw_detect_point_t q = {
            ts, 5000 + (uint64_t)i * 100 + b / 256, 5000 + (uint64_t)i * 100, b / 256, b, 1};
        assert_int_equal(pw_detect_ring_push(&r, &q), 0);
    }
    assert_int_equal(pw_detect_eval(r.p, r.n, NULL, &d), 0);
    assert_int_equal(d.verdict, PW_DETECT_LEAK);
    assert_near(d.decel, 1.0, 0.01); /* whole 256-byte blocks: the steps' rates differ by < 1 % */
    assert_int_equal(d.growth_bytes, (int64_t)(10 * 550 * 1024));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_point),
        cmocka_unit_test(test_two_screens_drsd),
        cmocka_unit_test(test_straight_leak),
        cmocka_unit_test(test_late_start),
        cmocka_unit_test(test_reboot),
        cmocka_unit_test(test_cache_levels_off),
        cmocka_unit_test(test_bulk_free_flat_and_no_allocs),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_peer_screen),
        cmocka_unit_test(test_peer_screen_dominant),
        cmocka_unit_test(test_peer_screen_lone),
        cmocka_unit_test(test_peer_screen_kept),
        cmocka_unit_test(test_peer_screen_sparse_trend),
        cmocka_unit_test(test_peer_screen_steps_beside_mover),
        cmocka_unit_test(test_peer_screen_office_hours),
        cmocka_unit_test(test_ring_keeps_counter_reset),
        cmocka_unit_test(test_peer_screen_short_last_boot),
        cmocka_unit_test(test_peer_screen_rise_time),
        cmocka_unit_test(test_peer_screen_levelled),
        cmocka_unit_test(test_peer_screen_sparse_kept),
        cmocka_unit_test(test_late_start_within_churn),
        cmocka_unit_test(test_cache_churns_after_levelling_off),
        cmocka_unit_test(test_cache_fills_leak_pauses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
