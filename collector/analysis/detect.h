/* detect.h: the leak detection engine. One (host, tag, pool) series in, one verdict out.
 *
 * Every workflow calls this one function: live agents (10 s points), replayed and imported
 * poolmon captures (15-minute screens, 2 to hundreds of them), the benchmark and the tests. There
 * is no length at which nothing is judged: one point is "too short" and says so, two points get
 * a low-confidence verdict by comparison, longer series get trend statistics.
 *
 * Pure: no I/O, no clock, no globals; scratch memory on the stack (series are bounded to
 * PW_DETECT_MAX_POINTS, larger inputs are thinned first). Also here: the bounded ring that holds
 * a series between evaluations (pw_detect_ring_t), so the collector keeps what the engine needs
 * without reading the store back.
 *
 * Method (a series oldest first; "outstanding" = bytes and diff = allocs - frees):
 *  1. Segments. A new segment starts where the boot instance changes or both cumulative
 *     counters (allocs and frees) go down (a reboot or counter reset inside a capture). Points
 *     are compared only within a segment: a reboot's drop is neither a free nor a trend.
 *  2. Late start. In the last segment (>= 8 points) a broken-stick fit finds where growth
 *     began: for each split k, least squares of y = a + b max(0, t - t_k); the split with the
 *     smallest squared error is taken when it explains the data clearly better than one line
 *     (SSE <= 0.6 of the straight fit's), the part before it is flat (its Theil-Sen slope at
 *     most a quarter of b) and the part after it holds at least 6 points and a quarter of the
 *     segment, and the growth after it reaches twice the band (max - min) the row moved in before
 *     it (a row that wanders by a few allocations has a rising stretch somewhere, and the search
 *     finds it); its significance level is then a fifth of the usual (the split was searched). The
 * judged window then starts at k ("since 10:45"). Earlier segments (2 points or more) are pooled
 * with it: a leak that continues across a reboot grows in each, and pooling them all (not only
 * those that grew) keeps the test unbiased.
 *  3. Statistics over the judged windows, pairs taken within a window only (the seasonal
 *     Kendall test and the seasonal Sen slope: Hirsch, Slack & Smith 1982, Water Resour. Res.
 *     18:107): Theil-Sen slope of bytes per hour with Sen's 90 % interval; Mann-Kendall S,
 *     Var(S) (ties corrected, summed over windows), one-sided upward p = erfc(Z / sqrt 2) / 2;
 *     the same slope for diff; the points' noise (scatter = 1.4826 MAD / sqrt 2 of consecutive
 *     differences less the fitted slope: the shape of the growth is not noise) and SNR = net
 *     growth (slope x span) / scatter; the fraction of steps that rose;
 *     the largest fall from a running maximum relative to the rise (bulk free); saturation =
 *     Theil-Sen slope of the last third / slope of the first two thirds (>= 9 points); the
 *     flat tail (time within max(3 scatter, 2 % of the rise) of the last value, or, when longer,
 *     since the split of a growth-then-flat fit y = c + d min(t, t_k) that explains the data
 *     clearly better than a line and whose tail is flat: a cache that levelled off and churns
 *     around its level leaves any band around its last value) against the time it grew before;
 *     drift t = mean / (sd / sqrt k) of the k step rates (bytes / h) of
 *     the steps that moved (a leak in steps rests in between); of a row with a flat tail, the
 *     deceleration of the growth before it (>= 12 points): the median rate of the rising steps
 *     in the last third of the rise over that in the first third (rising steps only: by more
 *     than half the scatter, so a pause inside the growth, and its churn, is no slowing down;
 *     thirds of the rise, so where it began does not matter).
 *  4. Verdict, first that applies:
 *       too-short      one point in every window, fewer than min_points points, or windows
 *                      spanning < min_span_ms;
 *       plateau        bytes did not change, or the net growth is below min_growth_bytes;
 *       noise          no net growth, a fall of half the rise or more (freed in bulk), or
 *                      growth not significant for >= 4 points: p >= alpha' (alpha below 8
 *                      points, alpha / 5 below 24, alpha / 50 from 24: a series is judged again
 *                      and again), SNR < min_snr, or drift t < 2.5 (>= 6 points);
 *       growing-cache  growth that levelled off (flat for more than twice as long as it grew,
 *                      or saturation < 0.15 and flat longer than it grew), growth that filled
 *                      up (flat for a quarter of the time it grew or more, its deceleration
 *                      <= 0.6: a cache fills its working set ever more slowly, while a leak
 *                      grows at its cause's pace until the cause pauses, so an office-hours
 *                      leak in its overnight pause, flat 14 h after 10 h, stays a leak), or
 *                      bytes that rose with no more outstanding allocations (diff flat or
 *                      falling);
 *       leak           otherwise (2-3 points: bytes and diff rose at every step).
 *  5. Confidence in [0, 1]: (1 - p) x min(1, (points - 1) / 11) x min(1, SNR / 6) for trends;
 *     0.15 for 2 points, 0.25 for 3. Score (ranks suspects of a host and of the fleet):
 *       score = log10(1 + rate in KiB/h) x confidence x w,   w = 1 leak, 0.3 growing-cache
 *     so a cache ranks below a leak of comparable size, and a 2-screen comparison ranks below a
 *     trend. The evidence is one line of words with the numbers.
 */
#ifndef PW_DETECT_H
#define PW_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_DETECT_MAX_POINTS  128 /* points judged; more are thinned evenly (ends kept) */
#define PW_DETECT_RING        64  /* points a ring keeps */
#define PW_DETECT_RING_RECENT 16  /* of which the newest at full resolution */

/* One point of a (host, tag, pool) series. */
typedef struct pw_detect_point_s {
    int64_t ts_ms;          /* ms since the Unix epoch, non-decreasing */
    uint64_t allocs, frees; /* cumulative counters (only their direction is used) */
    uint64_t diff;          /* allocations outstanding (objects in use for Linux slab) */
    uint64_t bytes;         /* bytes outstanding */
    uint32_t boot;          /* boot or agent instance number; a change starts a segment */
} pw_detect_point_t;

typedef enum {
    PW_DETECT_TOO_SHORT = 0,
    PW_DETECT_PLATEAU = 1,
    PW_DETECT_NOISE = 2,
    PW_DETECT_GROWING_CACHE = 3,
    PW_DETECT_LEAK = 4
} pw_detect_verdict_t;

typedef struct pw_detect_opts_s {
    double alpha;                /* one-sided significance of the upward trend; default 0.05 */
    double min_snr;              /* net growth / robust scatter; default 3 */
    double min_growth_bytes;     /* net growth below this is a plateau; default 4096 */
    double min_rate_bytes_per_h; /* slower is a plateau; default 1024 (24 KiB/day) */
    size_t min_points;           /* fewer points in the judged windows: too short; default 2
                                    (the collector asks 6 of a live row, a trend and drift test: with
                                    samples every 10 s, 2 or 3 points would be churn) */
    int64_t min_span_ms;         /* judged windows shorter than this are too short; default
                                    10 min (two screens 15 min apart are judged; two live
                                    samples 10 s apart are not) */
} pw_detect_opts_t;

/* Fills the defaults above. */
void pw_detect_opts_default(pw_detect_opts_t *o);

typedef struct pw_detect_s {
    pw_detect_verdict_t verdict;
    double confidence;       /* 0 .. 1 (method above) */
    double score;            /* 0 unless leak or growing-cache */
    double rate_bytes_per_h; /* seasonal Theil-Sen slope of bytes; 0 below 2 points */
    double rate_low_bytes_per_h, rate_high_bytes_per_h; /* Sen's 90 % interval (= rate < 4 pts) */
    double diff_rate_per_h;                             /* the same for outstanding allocations */
    double mk_p;            /* one-sided upward Mann-Kendall p; 1 below 4 points */
    double snr;             /* net growth / scatter; +inf when the scatter is 0 */
    double saturation;      /* late / early slope; 1 when not measured */
    double decel;           /* of a row that levelled off: the pace of the last third of its
                               growth / that of the first third (time thirds); 1 when not
                               measured (no flat tail, or fewer than 3 points in a third) */
    double fall;            /* largest fall from a running maximum / rise; 0 when none */
    double drift_t;         /* mean rate of the steps that moved / (sd / sqrt(their count)) */
    int64_t flat_ms;        /* time the judged window has stayed within noise of its last value */
    int64_t since_ms;       /* first point of the judged part (after a late start) */
    int64_t span_ms;        /* time covered by the judged windows (sum) */
    size_t points;          /* points judged (after thinning) */
    size_t segments;        /* windows pooled (1 + earlier boots that grew) */
    size_t steps, steps_up; /* consecutive pairs within windows, and those where bytes rose */
    size_t steps_moved;     /* ... and those where bytes changed (rose or fell) */
    int64_t rise_ms;        /* time covered by the steps where bytes rose (a run of equal points
                               in a ring is one step: its time counts as not rising) */
    int64_t growth_bytes;   /* net growth of bytes summed over the windows */
    int64_t growth_diff;    /* net growth of outstanding allocations over the windows */
    int64_t growth_allocs, growth_frees; /* counter deltas over the windows (plain differences:
                                            a wrapped 32-bit counter gives a negative delta) */
    uint64_t first_bytes, last_bytes;    /* of the judged window of the last segment */
    double per_alloc_bytes;              /* growth_bytes / growth_diff when both > 0, else 0 */
    char evidence[256]; /* "outstanding +1,047 allocations of 1,024 B (+1.0 MiB) over ..." */
} pw_detect_t;

/* A span of time in words for evidence and notes: "45 min" below 1 h, "3.5 h" below 48 h, else
 * "2.1 days". Writes at most cap bytes to out (NUL-terminated). */
void pw_detect_fmt_span(int64_t ms, char *out, size_t cap);

/* The verdict's name: "too-short", "plateau", "noise", "growing-cache", "leak". */
const char *pw_detect_verdict_name(pw_detect_verdict_t v);

/* Judges the series p[0..n) (oldest first; n may be 0). opts may be NULL for the defaults.
 * Returns 0 with *out filled (whatever the verdict), or PW_EINVAL (NULL out, NULL p with n > 0,
 * time stamps going backwards). */
int pw_detect_eval(const pw_detect_point_t *p, size_t n, const pw_detect_opts_t *opts,
                   pw_detect_t *out);

/* Peers for short series (and sparse trends). With 2 or 3 points there is no trend to test: a
 * churning tag rises between two screens as often as not. A leak verdict from fewer than 4
 * points therefore stands only when the row stands out among the host's rows in v[0..n) with 2
 * points or more (also the flat and falling ones), g = (last - first) / first bytes of the judged
 * window its relative growth, z = (x - median) / (1.4826 MAD) a robust z (Iglewicz & Hoaglin's
 * outlier rule at PW_DETECT_PEER_Z, 3.5), in any of four ways:
 *  - among all rows, z of g >= 3.5 and g >= 10 % (when the MAD is 0, more than half the rows
 *    did not move: no spread to stand out of, this way does not apply);
 *  - among the rows that moved (bytes changed; 5 of them at least), z >= 3.5 both of g and of
 *    the growth in bytes, and a growth of PW_DETECT_PEER_MIN_BYTES (4 KiB, the trend test's
 *    plateau floor) at least; here, when the MAD is 0, the scale is 1.2533 x the mean absolute
 *    deviation from the median (the modified z-score's usual fallback: sqrt(pi / 2) x the mean
 *    absolute deviation estimates a normal sigma). A churning big row grows most in bytes, a
 *    small one most relative to itself: a leak must do both;
 *  - dominant (2-3 points, and sparse trends that still rise: flat no longer than their mean
 *    time between rises, flat_ms x steps_up <= span_ms): it grew by PW_DETECT_PEER_MIN_BYTES
 *    at least and by PW_DETECT_PEER_DOMINANT (4) times the largest change (rise or fall) of
 *    every other row, both in bytes and in outstanding allocations, and in outstanding
 *    allocations by 4 times what a row of a still host moves by in as many steps as it rose
 *    (steps_up x the larger of PW_DETECT_STILL_MOVE_ALLOCS, 3 allocations, and
 *    PW_DETECT_STILL_MOVE_SHARE, 0.2 %, of its first outstanding allocations: how far rows of
 *    real captures moved between screens, docs/internals/detection.md "Noise regimes"). What
 *    a poolmon user sees sorting two screens by the change (a leak of +12 % among rows that
 *    churn by up to 15 % either way, but by 30 x fewer bytes); and when no other row changed
 *    (a user's capture of a quiet host: +3,906 allocations of 512 B, every other row still)
 *    the only row that moved is dominant once its move is beyond that noise (its evidence
 *    then says "no other tag changed its bytes or outstanding allocations"), but a row that
 *    rose 6 allocations a step is not. A sparse trend that never fell (fall 0) is held to that
 *    still-row noise alone, not to the other rows' changes between its ends (a row that
 *    wanders far, up and down, ends further from its start than a leak in a few steps); one
 *    that also rose in PW_DETECT_RUN_RISES (8) steps or more, 3 of 4 of its steps at least, to
 *    that noise times the square root of its rises, not times their count (moves of a still
 *    row go either way: a leak of office hours on a big row rises within that noise at every
 *    screen of its day and never falls);
 *  - kept (2-3 points only): it grew by PW_DETECT_PEER_MIN_BYTES at least, added more
 *    outstanding allocations and grew more relative to itself than any other row, and still
 *    holds PW_DETECT_PEER_DOMINANT (4) times the share of the allocations it made (growth of
 *    Diff / growth of Allocs) that any other row holds, its own counters agreeing (Allocs rose,
 *    Frees did not fall, Diff rose by no more than Allocs; a row whose counters contradict each
 *    other is taken to hold all it made). Churn frees what it allocates, a leak keeps it: rows
 *    of real captures make hundreds to thousands of allocations between screens and hold a few
 *    of them (GTmp +9,547 calls at a Diff of 0), so a leak that grows less in bytes than a big
 *    row's churn still stands out by what it keeps. Such a verdict says so in its evidence
 *    ("still holds 19.7 % of the 137 allocations it made, 39 times the most any other tag
 *    holds").
 * Rows of real captures mostly do not move between screens, and those that do move by a few
 * allocations (docs/internals/detection.md, "Noise regimes"): the second way finds a leak among
 * them; the first, among rows that all churn. Among such still rows (the median row moved in
 * fewer than 3 of 4 of its steps) a row that moved up a few times by a few allocations passes
 * the trend tests of 4 points or more as a leak in steps does: a trend verdict that rose during
 * less than 3/4 of the time it was judged over (rise_ms against span_ms: a run of equal points
 * is one step of a ring, so counting steps would overrate it) must stand out the same way, and
 * by the first way only when the share of its allocations it kept also stands out among the
 * rows that moved (robust z >= 3.5; 5 of them at least): most rows of such a host did not move,
 * so the scale of relative growth is a few rows' moves, and a small row that wandered up a few
 * allocations among thousands it made and freed is an outlier by its size alone. Other trends
 * stand on their own. A verdict judged on fewer than 4 points (steps + segments: a short
 * last boot after a long one) is a comparison, however many points the row has. Fewer than 5
 * rows: no peer test (a capture of one tag, like Microsoft's `poolmon /iDrsd` example, is judged
 * alone). Verdicts that fail become noise, with the reason appended to their evidence, and lose
 * their score. Returns how many were demoted. */
#define PW_DETECT_PEER_Z            3.5
#define PW_DETECT_PEER_MIN_BYTES    4096.0
#define PW_DETECT_PEER_DOMINANT     4.0
#define PW_DETECT_STILL_MOVE_ALLOCS 3.0
#define PW_DETECT_STILL_MOVE_SHARE  0.002
#define PW_DETECT_RUN_RISES         8
size_t pw_detect_peer_screen(pw_detect_t *const *v, size_t n);

/* ---- the ring: a bounded series between evaluations ------------------------------------ */

/* Up to PW_DETECT_RING points, oldest first, covering everything pushed since init: the newest
 * PW_DETECT_RING_RECENT at full resolution, and before them up to 48 points spread evenly over
 * the whole history (a point joins them when it is at least `stride_ms` after the last one; when
 * they are full, the stride doubles, or becomes a 24th of their span, and they are thinned to it;
 * the first point and the ends of segments, boots or counter resets, always stay). Theil-Sen
 * weighs every pair alike, so the days before must not be outvoted by a dense recent stretch;
 * the recent points let a leak that just began show within minutes. A run of equal points keeps
 * only its first and last: a row that changes every few samples is piecewise constant, and
 * repeated values would read as a trend; a counter reset inside such a run (both cumulative
 * counters fell: a reboot in a capture) keeps its point, or the segment it starts would be lost.
 * Fixed memory: 64 x 48 bytes. */
typedef struct pw_detect_ring_s {
    uint16_t n;        /* points in p */
    uint16_t n_spread; /* p[0 .. n_spread) are the spread points, the rest the recent ones */
    uint16_t dirty;    /* pushes since the caller last set it to 0 */
    int64_t stride_ms; /* minimum spacing of the spread points */
    pw_detect_point_t p[PW_DETECT_RING];
} pw_detect_ring_t;

/* Empties the ring. */
void pw_detect_ring_init(pw_detect_ring_t *r);

/* Appends a point. A point older than the newest is dropped (returns PW_EINVAL); otherwise 0. */
int pw_detect_ring_push(pw_detect_ring_t *r, const pw_detect_point_t *pt);

#endif /* PW_DETECT_H */
