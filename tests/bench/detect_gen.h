/* detect_gen.h: the labelled suite of bench_detect: a seeded generator of hosts whose pool
 * tables hold one event row of a known shape among churning background rows.
 *
 * A host has `rows` background rows (4-byte tags "Bxyz", base bytes 4 KiB .. 8 MiB, 16 .. 4096
 * bytes per allocation, a quarter of them constant, the rest churning: every point their
 * outstanding allocations are drawn again within +-10 % of their base, allocs rising by 100 ..
 * 10,000 calls) and one event row (tag "Evnt", nonpaged) whose outstanding allocations follow
 * the shape over the series' `points` points (index k = 0 .. points-1, u = k / (points - 1)):
 *   leaks (label 1):
 *     linear       +g allocations a point;
 *     noisy-frees  +g a point plus uniform noise of +-1.2 g (it falls now and then);
 *     late-start   flat (+-1 % churn) until u = 0.4 .. 0.6, then +g a point;
 *     reboot       +g a point; the host reboots at the middle point: every row's counters
 *                  start again from small values and the event row from its base (boot
 *                  instance changes);
 *     step         +3g every third point, flat between;
 *     slow         +1 allocation a point (of 256 .. 1024 bytes);
 *   not leaks (label 0):
 *     cache        +g a point until u = 0.35, then flat with +-1 % churn;
 *     bulk-free    +g a point until u = 0.6, then back to its base;
 *     flat         +-10 % churn like the background.
 * g is 8 .. 64 allocations (seeded), the event's allocation 256 .. 2048 bytes, its base 64 ..
 * 4,096 allocations. Same seed, same host.
 *
 * Noise regimes (how the rows that do not leak move; pw_gen_set_noise):
 *   redraw (the default, the suite's first regime): as above, every churning row's outstanding
 *     allocations drawn again within +-10 % of its base at every point;
 *   walk (calibrated on real multi-screen poolmon captures, docs/internals/detection.md
 *     "Noise regimes"): at each point a churning row moves with probability 0.35, by
 *     1 + floor(E x (1 + 0.0015 base)) allocations (E exponential of mean 1) up or down with
 *     equal odds, kept within 5 such steps of its base (reflected); it stays put otherwise.
 *     The flat event row (and the flat parts of late-start and cache) moves the same way.
 *   still (a host whose rows hold still between screens but one or two, as a user's own capture
 *     of a quiet machine: the textbook capture where one tag grows and nothing else does):
 *     every background row keeps its outstanding allocations and bytes (a churning row's Allocs
 *     and Frees rise alike by 100 .. 10,000 calls), but for the host's movers
 *     (pw_gen_still_movers, by seed): none, or one or two rows that move, small (the walk above,
 *     as rows of real captures move: a few allocations, at 35 % of the points) or large (a step
 *     of the walk ten times as far, at every point: 1 + floor(10 E (1 + 0.0015 base))
 *     allocations, kept within 5 such steps of the base: 10-30 allocations on small rows, 1.5 %
 *     of rows of thousands, more than any row of the real captures moved), their Allocs rising
 *     by what they add.
 *     The flat event row and the flat parts of late-start and cache hold still. The reboot
 *     shape's host reboots after its first point (a capture begun one screen before a reboot:
 *     3 points at least; 4 are judged on their last 3).
 *     Measured basis: of 44 row-steps between real screens 8 moved (18 %; 6 of 16 over the
 *     longer gap, case10 -> case11), by 1, 1, 2, 2, 2, 3, 3 and 6 allocations; the rows of
 *     thousands moved by 0.1-0.2 % (Strg 3,727 +6, Fat 1,691 +2), the small ones by 1-3.
 */
#ifndef PW_DETECT_GEN_H
#define PW_DETECT_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

typedef enum {
    PW_GEN_LINEAR = 0,
    PW_GEN_NOISY_FREES,
    PW_GEN_LATE_START,
    PW_GEN_REBOOT,
    PW_GEN_STEP,
    PW_GEN_SLOW,
    PW_GEN_CACHE,
    PW_GEN_BULK_FREE,
    PW_GEN_FLAT,
    PW_GEN_SHAPES
} pw_gen_shape_t;

/* "linear", "noisy-frees", ... */
const char *pw_gen_shape_name(pw_gen_shape_t s);

/* 1 for the leak shapes. */
int pw_gen_shape_leak(pw_gen_shape_t s);

/* Fewest points at which the shape is itself (reboot: 4, late-start and step: 6, the rest 2). */
size_t pw_gen_shape_min_points(pw_gen_shape_t s);

typedef enum {
    PW_GEN_NOISE_REDRAW = 0,
    PW_GEN_NOISE_WALK = 1,
    PW_GEN_NOISE_STILL = 2
} pw_gen_noise_t;

/* "redraw", "walk", "still". */
const char *pw_gen_noise_name(pw_gen_noise_t n);

typedef struct pw_gen_s pw_gen_t;

/* A host of `rows` background rows and the event row of `shape` over `points` points spaced
 * `interval_ms` from `start_ms`. Returns NULL on ENOMEM. */
pw_gen_t *pw_gen_new(uint64_t seed, pw_gen_shape_t shape, size_t points, size_t rows,
                     int64_t start_ms, int64_t interval_ms);

/* Sets the noise regime of the rows that do not leak (before the first pw_gen_next; default
 * PW_GEN_NOISE_REDRAW). The walk draws from its own stream: the hosts' rows and events are the
 * same under both regimes. */
void pw_gen_set_noise(pw_gen_t *g, pw_gen_noise_t n);

/* The still regime's movers of the host of `seed`: *small rows that walk as calibrated, *large
 * rows that take a step of the walk ten times as far at every point (rows B000, B001 in that
 * order). By seed % 6: none (the event row alone can move), 1 small, 2 small, 1 large,
 * 2 large, 1 small and 1 large. Returns *small + *large. */
unsigned pw_gen_still_movers(uint64_t seed, unsigned *small, unsigned *large);

/* Point k (0, 1, ... in order) into `out` (reset here) with totals; *boot is the boot instance
 * (1, then 2 after a reboot). Returns 0, PW_ENOENT past the last point, PW_ENOMEM. */
int pw_gen_next(pw_gen_t *g, pw_sample_t *out, uint32_t *boot);

/* Day shapes: the event row over hours of real time, for the rule between a cache that levelled
 * off and a leak that paused (the growth of the event row in allocations per hour is 4 g, its
 * allocation 256 .. 2,048 bytes, as above; every point its outstanding allocations churn by
 * +-1 % of its base; the background rows as in the regime set, by default redraw):
 *   office       leak: grows from the start while the UTC hour is in [8, 18), flat otherwise
 *                (an office-hours leak: ~10 h a day, flat ~14 h);
 *   plateau      leak: flat for onset_h, grows for grow_h, then flat for flat_h (a leak that
 *                paused: the suite takes flat_h <= 1.5 grow_h);
 *   cache-fill   not: flat for onset_h, then fills over grow_h, its rate falling from 2 x 4 g
 *                an hour to 0 as it nears its level (cap (1 - (1 - u)^2), u the share of
 *                grow_h gone), then flat for flat_h;
 *   cache-level  not: flat for onset_h, grows at 4 g an hour for grow_h, then flat for flat_h
 *                (the suite takes flat_h >= 2.5 grow_h: between 1.5 and 2.5 times its growth,
 *                such a row is a leak that paused as well as a cache, and no series can tell).
 * The series has points spaced interval_ms from start_ms until onset_h + grow_h + flat_h hours
 * (office: `points` points). */
typedef enum {
    PW_GEN_DAY_OFFICE = 0,
    PW_GEN_DAY_PLATEAU,
    PW_GEN_DAY_CACHE_FILL,
    PW_GEN_DAY_CACHE_LEVEL,
    PW_GEN_DAY_SHAPES
} pw_gen_day_t;

/* "office", "plateau", "cache-fill", "cache-level". */
const char *pw_gen_day_name(pw_gen_day_t s);

/* 1 for the leak day shapes (office, plateau). */
int pw_gen_day_leak(pw_gen_day_t s);

/* A host of `rows` background rows and the event row of day shape `shape` (hours as above;
 * office ignores them and takes `points` points). Returns NULL on ENOMEM or a bad shape. */
pw_gen_t *pw_gen_new_day(uint64_t seed, pw_gen_day_t shape, double onset_h, double grow_h,
                         double flat_h, size_t points, size_t rows, int64_t start_ms,
                         int64_t interval_ms);

/* The event row's tag ("Evnt") and pool. */
#define PW_GEN_EVENT_TAG  "Evnt"
#define PW_GEN_EVENT_POOL PW_POOL_NONPAGED

void pw_gen_free(pw_gen_t *g);

/* Appends one poolmon screen of `s` (XP layout: header lines with the totals, the column
 * header, one row per entry) to `out` (grown with realloc; *len updated). crlf: CRLF line ends.
 * Returns 0 or PW_ENOMEM. */
int pw_gen_poolmon_screen(const pw_sample_t *s, int crlf, char **out, size_t *len, size_t *cap);

#endif /* PW_DETECT_GEN_H */
