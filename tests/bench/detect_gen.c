/* detect_gen.c: the labelled suite's generator (detect_gen.h). */
#include "detect_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

typedef struct {
    char tag[5];
    int pool;
    uint64_t base_diff, per_alloc, allocs;
    uint64_t cur; /* walk: outstanding allocations now */
    int constant;
} bg_t;

struct pw_gen_s {
    uint64_t rng;
    pw_gen_shape_t shape;
    size_t points, rows, k;
    int64_t start_ms, interval_ms;
    bg_t *bg;
    uint64_t ev_base, ev_per, ev_allocs, ev_diff, g;
    double late_u;
    uint32_t boot;
    pw_gen_noise_t noise;
    uint64_t wrng;   /* the walk's own stream */
    uint64_t ev_cur; /* walk: the event row's flat value */
    uint64_t seed;
    int day; /* a day shape (pw_gen_new_day): day_shape, its hours */
    pw_gen_day_t day_shape;
    double onset_h, grow_h, flat_h;
};

static const char *const names[PW_GEN_SHAPES] = {
    "linear", "noisy-frees", "late-start", "reboot", "step", "slow", "cache", "bulk-free", "flat"};

const char *pw_gen_noise_name(pw_gen_noise_t n)
{
    return n == PW_GEN_NOISE_WALK ? "walk" : n == PW_GEN_NOISE_STILL ? "still" : "redraw";
}

/* Still regime: the movers of a host by its seed (detect_gen.h) */
static const struct {
    unsigned small, large;
} still_movers[] = {{0, 0}, {1, 0}, {2, 0}, {0, 1}, {0, 2}, {1, 1}};

unsigned pw_gen_still_movers(uint64_t seed, unsigned *small, unsigned *large)
{
    size_t c = seed % (sizeof(still_movers) / sizeof(*still_movers));
    *small = still_movers[c].small;
    *large = still_movers[c].large;
    return *small + *large;
}

const char *pw_gen_shape_name(pw_gen_shape_t s)
{
    return s < PW_GEN_SHAPES ? names[s] : "?";
}

int pw_gen_shape_leak(pw_gen_shape_t s)
{
    return s <= PW_GEN_SLOW;
}

size_t pw_gen_shape_min_points(pw_gen_shape_t s)
{
    return s == PW_GEN_REBOOT ? 4 : (s == PW_GEN_LATE_START || s == PW_GEN_STEP) ? 6 : 2;
}

/* splitmix64 */
static uint64_t rnd(pw_gen_t *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The walk's stream (splitmix64 on its own state): the rows and events stay those of the seed */
static double wunit01(pw_gen_t *g) /* [0, 1) */
{
    uint64_t z = (g->wrng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* One step of the calibrated walk (detect_gen.h) of a row now at `cur` around `base`, `times`
 * as far as the calibration (the still regime's large movers: 10) */
static uint64_t walk_step(pw_gen_t *g, uint64_t cur, uint64_t base, double times)
{
    double scale = times * (1.0 + 0.0015 * (double)base);
    double e = -log(1.0 - wunit01(g)); /* exponential, mean 1 */
    uint64_t step = 1 + (uint64_t)floor(e * scale);
    double bound = 5.0 * (1.0 + scale); /* 5 typical steps (mean 1 + scale) */
    double v = (double)cur + (wunit01(g) < 0.5 ? -(double)step : (double)step);
    if (v > (double)base + bound)
        v = 2.0 * ((double)base + bound) - v;
    if (v < (double)base - bound)
        v = 2.0 * ((double)base - bound) - v;
    return v < 0 ? 0 : (uint64_t)llround(v);
}

/* One point of the calibrated walk: it moves with probability 0.35 */
static uint64_t walk(pw_gen_t *g, uint64_t cur, uint64_t base)
{
    if (wunit01(g) >= 0.35)
        return cur;
    return walk_step(g, cur, base, 1.0);
}

static uint64_t between(pw_gen_t *g, uint64_t lo, uint64_t hi)
{
    return lo + rnd(g) % (hi - lo + 1);
}

static double unit(pw_gen_t *g) /* [-1, 1) */
{
    return (double)(rnd(g) >> 11) / 4503599627370496.0 - 1.0;
}

pw_gen_t *pw_gen_new(uint64_t seed, pw_gen_shape_t shape, size_t points, size_t rows,
                     int64_t start_ms, int64_t interval_ms)
{
    pw_gen_t *g = pw_calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->bg = pw_calloc(rows ? rows : 1, sizeof(*g->bg));
    if (g->bg == NULL) {
        pw_free(g);
        return NULL;
    }
    g->seed = seed;
    g->rng = seed * 0x2545f4914f6cdd1dull + (uint64_t)shape * 7919 + points;
    g->shape = shape;
    g->points = points;
    g->rows = rows;
    g->start_ms = start_ms;
    g->interval_ms = interval_ms;
    g->boot = 1;
    for (size_t i = 0; i < rows; i++) {
        bg_t *b = &g->bg[i];
        snprintf(b->tag, sizeof(b->tag), "B%03zu", i % 1000);
        b->pool = (int)(rnd(g) % 2);
        b->per_alloc = between(g, 16, 4096);
        uint64_t bytes = between(g, 4096, 8u << 20);
        b->base_diff = bytes / b->per_alloc + 1;
        b->allocs = b->base_diff + between(g, 1000, 1000000);
        b->constant = rnd(g) % 4 == 0;
    }
    g->ev_per = between(g, 256, 2048);
    g->ev_base = between(g, 64, 4096);
    g->g = between(g, 8, 64);
    g->ev_allocs = g->ev_base + between(g, 1000, 100000);
    g->ev_diff = g->ev_base;
    g->late_u = 0.4 + 0.2 * (unit(g) + 1) / 2;
    g->wrng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)shape * 104729 + points + 1;
    g->ev_cur = g->ev_base;
    for (size_t i = 0; i < rows; i++)
        g->bg[i].cur = g->bg[i].base_diff;
    return g;
}

void pw_gen_set_noise(pw_gen_t *g, pw_gen_noise_t n)
{
    g->noise = n;
}

void pw_gen_free(pw_gen_t *g)
{
    if (g == NULL)
        return;
    pw_free(g->bg);
    pw_free(g);
}

/* The point where the reboot shape's host reboots: the middle one, or on a still host the
 * second (a capture begun one screen before a reboot) */
static size_t reboot_at(const pw_gen_t *g)
{
    return g->noise == PW_GEN_NOISE_STILL ? 1 : g->points / 2;
}

static const char *const day_names[PW_GEN_DAY_SHAPES] = {"office", "plateau", "cache-fill",
                                                         "cache-level"};

const char *pw_gen_day_name(pw_gen_day_t s)
{
    return s < PW_GEN_DAY_SHAPES ? day_names[s] : "?";
}

int pw_gen_day_leak(pw_gen_day_t s)
{
    return s == PW_GEN_DAY_OFFICE || s == PW_GEN_DAY_PLATEAU;
}

pw_gen_t *pw_gen_new_day(uint64_t seed, pw_gen_day_t shape, double onset_h, double grow_h,
                         double flat_h, size_t points, size_t rows, int64_t start_ms,
                         int64_t interval_ms)
{
    if (shape >= PW_GEN_DAY_SHAPES || interval_ms <= 0)
        return NULL;
    if (shape != PW_GEN_DAY_OFFICE)
        points = (size_t)((onset_h + grow_h + flat_h) * 3600000.0 / (double)interval_ms) + 1;
    pw_gen_t *g = pw_gen_new(seed, PW_GEN_LINEAR, points, rows, start_ms, interval_ms);
    if (g == NULL)
        return NULL;
    g->day = 1;
    g->day_shape = shape;
    g->onset_h = onset_h;
    g->grow_h = grow_h;
    g->flat_h = flat_h;
    return g;
}

/* Hours of [8, 18) UTC in [a, b) (ms since the epoch) */
static double office_hours(int64_t a, int64_t b)
{
    const int64_t day = 86400000, h = 3600000;
    double sum = 0;
    for (int64_t d = a / day * day; d < b; d += day) {
        int64_t s = d + 8 * h, e = d + 18 * h;
        int64_t lo = s > a ? s : a, hi = e < b ? e : b;
        if (hi > lo)
            sum += (double)(hi - lo) / (double)h;
    }
    return sum;
}

/* A day shape's outstanding allocations at point k (detect_gen.h) */
static uint64_t day_diff(pw_gen_t *g, size_t k)
{
    int64_t t = g->start_ms + (int64_t)k * g->interval_ms;
    double rate = 4.0 * (double)g->g, th = (double)k * (double)g->interval_ms / 3600000.0, grown;
    double u = g->grow_h > 0 ? (th - g->onset_h) / g->grow_h : 1.0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    switch (g->day_shape) {
    case PW_GEN_DAY_OFFICE:
        grown = rate * office_hours(g->start_ms, t);
        break;
    case PW_GEN_DAY_CACHE_FILL: /* rate 2 x 4 g at first, 0 at its level: 4 g x grow_h in all */
        grown = rate * g->grow_h * (1.0 - (1.0 - u) * (1.0 - u));
        break;
    default: /* plateau, cache-level */
        grown = rate * g->grow_h * u;
        break;
    }
    double v = (double)g->ev_base + grown + 0.01 * (double)g->ev_base * unit(g);
    return v < 1 ? 1 : (uint64_t)v;
}

/* The event row's outstanding allocations at point k. */
static uint64_t event_diff(pw_gen_t *g, size_t k)
{
    uint64_t base = g->ev_base, d = g->ev_diff;
    if (g->day)
        return day_diff(g, k);
    switch (g->shape) {
    case PW_GEN_LINEAR:
        return base + g->g * k;
    case PW_GEN_NOISY_FREES: {
        double v = (double)d + (k ? (double)g->g + 1.2 * (double)g->g * unit(g) : 0.0);
        return v < 1 ? 1 : (uint64_t)v;
    }
    case PW_GEN_LATE_START: {
        size_t k0 = (size_t)(g->late_u * (double)(g->points - 1));
        double churn = (double)base * 0.01 * unit(g);
        if (g->noise == PW_GEN_NOISE_WALK && k <= k0)
            return k ? (g->ev_cur = walk(g, g->ev_cur, base)) : base;
        if (g->noise == PW_GEN_NOISE_STILL && k <= k0)
            return base;
        return k <= k0 ? (uint64_t)((double)base + churn) : base + g->g * (k - k0);
    }
    case PW_GEN_REBOOT: {
        size_t half = reboot_at(g);
        return k < half ? base + g->g * k : base + g->g * (k - half);
    }
    case PW_GEN_STEP:
        return base + 3 * g->g * (k / 3);
    case PW_GEN_SLOW:
        return base + k;
    case PW_GEN_CACHE: {
        size_t k1 = (size_t)(0.35 * (double)(g->points - 1));
        double churn = (double)base * 0.01 * unit(g);
        if (g->noise == PW_GEN_NOISE_WALK) { /* levelled off: it moves as any row that does not
                                                leak */
            uint64_t top = base + g->g * k1;
            if (k <= k1)
                return (g->ev_cur = base + g->g * k);
            return (g->ev_cur = walk(g, g->ev_cur, top));
        }
        if (g->noise == PW_GEN_NOISE_STILL)
            return base + g->g * (k < k1 ? k : k1);
        return (uint64_t)((double)(base + g->g * (k < k1 ? k : k1)) + churn);
    }
    case PW_GEN_BULK_FREE: {
        size_t k1 = (size_t)(0.6 * (double)(g->points - 1));
        return k <= k1 ? base + g->g * k : base;
    }
    case PW_GEN_FLAT:
    default: {
        double u = unit(g);
        if (g->noise == PW_GEN_NOISE_WALK)
            return k ? (g->ev_cur = walk(g, g->ev_cur, base)) : base;
        if (g->noise == PW_GEN_NOISE_STILL)
            return base;
        return (uint64_t)((double)base * (1.0 + 0.1 * u));
    }
    }
}

int pw_gen_next(pw_gen_t *g, pw_sample_t *out, uint32_t *boot)
{
    if (g->k >= g->points)
        return PW_ENOENT;
    size_t k = g->k++;
    pw_sample_reset(out);
    out->timestamp_ms = (uint64_t)(g->start_ms + (int64_t)k * g->interval_ms);
    if (g->shape == PW_GEN_REBOOT && k == reboot_at(g)) {
        /* every counter starts again */
        g->boot++;
        for (size_t i = 0; i < g->rows; i++)
            g->bg[i].allocs = g->bg[i].base_diff + between(g, 10, 1000);
        g->ev_allocs = g->ev_base + between(g, 10, 100);
    }
    *boot = g->boot;
    uint64_t np = 0, pg = 0;
    unsigned small = 0, large = 0;
    if (g->noise == PW_GEN_NOISE_STILL)
        pw_gen_still_movers(g->seed, &small, &large);
    for (size_t i = 0; i < g->rows; i++) {
        bg_t *b = &g->bg[i];
        uint64_t diff = b->base_diff;
        if (g->noise == PW_GEN_NOISE_STILL) {
            /* still: Diff and bytes hold; calls churn (Allocs and Frees rise alike); the movers
             * move, counting what they add in Allocs. The other regimes' draws are made: the
             * seed's stream stays */
            uint64_t calls = 0;
            if (!b->constant && k > 0) {
                (void)unit(g);
                calls = between(g, 100, 10000);
            }
            if (k > 0 && i < small + large) {
                diff = i < small ? walk(g, b->cur, b->base_diff)
                                 : walk_step(g, b->cur, b->base_diff, 10.0);
                calls += (diff > b->cur ? diff - b->cur : 0) + (diff != b->cur);
                b->cur = diff;
            } else if (i < small + large) {
                diff = b->cur;
            }
            b->allocs += calls;
        } else if (!b->constant && k > 0) {
            double u = unit(g); /* drawn in both regimes: the rest of the seed's stream stays */
            if (g->noise == PW_GEN_NOISE_WALK)
                diff = b->cur = walk(g, b->cur, b->base_diff);
            else
                diff = (uint64_t)((double)b->base_diff * (1.0 + 0.1 * u));
            b->allocs += between(g, 100, 10000);
        }
        if (b->allocs < diff)
            b->allocs = diff;
        uint64_t bytes = diff * b->per_alloc;
        if (pw_sample_add(out, b->tag, 4, b->pool, b->allocs, b->allocs - diff, diff, bytes) != 0)
            return PW_ENOMEM;
        *(b->pool == PW_POOL_PAGED ? &pg : &np) += bytes;
    }
    uint64_t d = event_diff(g, k);
    g->ev_allocs += (d > g->ev_diff ? d - g->ev_diff : 0) + between(g, 10, 500);
    g->ev_diff = d;
    if (g->ev_allocs < d)
        g->ev_allocs = d;
    uint64_t eb = d * g->ev_per;
    if (pw_sample_add(out, PW_GEN_EVENT_TAG, 4, PW_GEN_EVENT_POOL, g->ev_allocs, g->ev_allocs - d,
                      d, eb) != 0)
        return PW_ENOMEM;
    np += eb;
    out->totals.nonpaged_bytes = np + (24u << 20);
    out->totals.paged_bytes = pg + (64u << 20);
    return 0;
}

static int put(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap ? *cap * 2 : 65536) + n;
        char *p = realloc(*out, nc);
        if (p == NULL)
            return PW_ENOMEM;
        *out = p;
        *cap = nc;
    }
    memcpy(*out + *len, s, n);
    *len += n;
    (*out)[*len] = '\0';
    return 0;
}

int pw_gen_poolmon_screen(const pw_sample_t *s, int crlf, char **out, size_t *len, size_t *cap)
{
    const char *nl = crlf ? "\r\n" : "\n";
    char line[256];
    int n = snprintf(line, sizeof(line),
                     " Memory: 4193848K Avail: 2092344K  PageFlts:  1220   InRam Krnl: 2484K P: "
                     "7988K%s Commit:  930104K Limit: 8248432K Peak: 934028K            Pool N: "
                     "%lluK P: %lluK%s Tag  Type     Allocs            Frees            Diff   "
                     "Bytes       Per Alloc%s%s",
                     nl, (unsigned long long)(s->totals.nonpaged_bytes / 1024),
                     (unsigned long long)(s->totals.paged_bytes / 1024), nl, nl, nl);
    if (put(out, len, cap, line, (size_t)n) != 0)
        return PW_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const pw_entry_t *e = &s->entries[i];
        n = snprintf(line, sizeof(line),
                     " %.4s %-5s %10llu (   0) %10llu (   0) %8llu %10llu "
                     "(     0) %6llu%s",
                     (const char *)e->tag, e->pool == PW_POOL_PAGED ? "Paged" : "Nonp",
                     (unsigned long long)e->allocs, (unsigned long long)e->frees,
                     (unsigned long long)e->diff, (unsigned long long)e->bytes,
                     (unsigned long long)(e->diff ? e->bytes / e->diff : 0), nl);
        if (put(out, len, cap, line, (size_t)n) != 0)
            return PW_ENOMEM;
    }
    return 0;
}
