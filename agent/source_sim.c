/* source_sim.c: the simulated fleet source ("sim:PRESET[/N]"); the model is described in
 * source_sim.h. Deterministic: everything comes from a seeded generator, never from the clock
 * (except the default start time, which only bursty leaks look at). */
#include "source_sim.h"
#include "source_internal.h"
#include "alloc.h"
#include "bigpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KiB                     1024ull
#define MiB                     (1024ull * KiB)
#define GiB                     (1024ull * MiB)
#define HOUR_MS                 3600000ull
#define DAY_MS                  (24ull * HOUR_MS)
#define N_                      PW_POOL_NONPAGED
#define P_                      PW_POOL_PAGED
#define SIM_DEFAULT_INTERVAL_MS 10000ull

/* ---- presets ------------------------------------------------------------------------------ */

/* Windows Server 2019 x64 and 2016 x64 (build numbers of their RTM releases). */
#define OS_2019                                                                                    \
    {                                                                                              \
        .major = 10, .minor = 0, .build = 17763, .server = 1, .arch = PW_WIN_ARCH_X64              \
    }
#define OS_2016                                                                                    \
    {                                                                                              \
        .major = 10, .minor = 0, .build = 14393, .server = 1, .arch = PW_WIN_ARCH_X64              \
    }
/* Windows Server 2003 R2 x86 booted with /3GB: the Ddk story. */
#define OS_2003_3GB                                                                                \
    {                                                                                              \
        .major = 5, .minor = 2, .build = 3790, .server = 1, .arch = PW_WIN_ARCH_X86,               \
        .increase_user_va = 1                                                                      \
    }

static const pw_sim_event_t ev_leak_linear[] = {
    {.kind = PW_SIM_LEAK_LINEAR,
     .tag = "NtFC",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = HOUR_MS,
     .rate_bytes = MiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 256,
     .base_bytes = 64 * KiB},
};
static const pw_sim_event_t ev_leak_step[] = {
    {.kind = PW_SIM_LEAK_STEP,
     .tag = "Proc",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 2 * HOUR_MS,
     .rate_bytes = 512 * KiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 2048,
     .base_bytes = 1 * MiB,
     .step_period_ms = 4 * HOUR_MS},
};
static const pw_sim_event_t ev_leak_bursty[] = {
    {.kind = PW_SIM_LEAK_BURSTY,
     .tag = "Ddk ",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 0,
     .rate_bytes = 256 * KiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 512,
     .base_bytes = 600 * KiB,
     .day_start_h = 8,
     .day_end_h = 18},
};
static const pw_sim_event_t ev_leak_slow[] = {
    {.kind = PW_SIM_LEAK_LINEAR,
     .tag = "SysR",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 0,
     .rate_bytes = MiB,
     .rate_period_ms = DAY_MS,
     .block_bytes = 64,
     .base_bytes = 128 * KiB},
};
static const pw_sim_event_t ev_cache_plateau[] = {
    {.kind = PW_SIM_CACHE,
     .tag = "FMfn",
     .pool = P_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = HOUR_MS / 2,
     .rate_bytes = 20 * MiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 512,
     .base_bytes = 4 * MiB,
     .cap_bytes = 60 * MiB},
};
/* Ddk 600 KB at boot to about 10 MB after 14 days of office hours (68.75 KB/h * 140 h);
 * nonpaged from about 30 MB to about 110-120 MB, mostly caches that plateau; Mmcm and r100
 * large but flat. */
static const pw_sim_event_t ev_ddk_2003[] = {
    {.kind = PW_SIM_LEAK_BURSTY,
     .tag = "Ddk ",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 0,
     .rate_bytes = 563200, /* 550 KiB per office hour: the climb is Ddk's */
     .rate_period_ms = HOUR_MS,
     .block_bytes = 512,
     .base_bytes = 600 * KiB,
     .day_start_h = 8,
     .day_end_h = 18},
    {.kind = PW_SIM_FLAT,
     .tag = "Mmcm",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .block_bytes = 4096,
     .base_bytes = 8 * MiB},
    {.kind = PW_SIM_FLAT,
     .tag = "r100",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .block_bytes = 2048,
     .base_bytes = 5 * MiB},
    {.kind = PW_SIM_CACHE,
     .tag = "Irp ",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = HOUR_MS,
     .rate_bytes = MiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 256,
     .base_bytes = 512 * KiB,
     .cap_bytes = 6 * MiB},
    {.kind = PW_SIM_CACHE,
     .tag = "File",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 2 * HOUR_MS,
     .rate_bytes = 512 * KiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 256,
     .base_bytes = 1 * MiB,
     .cap_bytes = 4 * MiB},
    {.kind = PW_SIM_CACHE,
     .tag = "Ntfr",
     .pool = N_,
     .host = PW_SIM_ALL_HOSTS,
     .onset_ms = 3 * HOUR_MS,
     .rate_bytes = 256 * KiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 64,
     .base_bytes = 512 * KiB,
     .cap_bytes = 2 * MiB},
};
static const pw_sim_event_t ev_fleet_small[] = {
    {.kind = PW_SIM_LEAK_LINEAR,
     .tag = "NtFC",
     .pool = N_,
     .host = 3,
     .onset_ms = 2 * HOUR_MS,
     .rate_bytes = 4 * MiB,
     .rate_period_ms = HOUR_MS,
     .block_bytes = 256,
     .base_bytes = 64 * KiB},
};

#define EVENTS(a) a, sizeof(a) / sizeof(a[0])

static const pw_sim_preset_t presets[] = {
    {"steady", "3000 rows, 5% change per sample, no leak (codec and agent benchmarks)", 10000, 3000,
     50, 0x5EEDu, DAY_MS, OS_2019, 32 * GiB, 600 * MiB, 1200 * MiB, 40 * MiB, 100 * MiB, NULL, 0},
    {"leak-linear", "1 MB/h nonpaged leak in NtFC from 1 h on", 1, 1000, 50, 0x11EAu, DAY_MS,
     OS_2019, 16 * GiB, 300 * MiB, 600 * MiB, 20 * MiB, 50 * MiB, EVENTS(ev_leak_linear)},
    {"leak-step", "nonpaged leak in Proc: 2 MB at once every 4 h from 2 h on", 1, 1000, 50, 0x57E9u,
     2 * DAY_MS, OS_2019, 16 * GiB, 300 * MiB, 600 * MiB, 20 * MiB, 50 * MiB, EVENTS(ev_leak_step)},
    {"leak-bursty", "nonpaged leak in Ddk, 256 KB/h during 08-18 UTC only", 1, 1000, 50, 0xB0257u,
     3 * DAY_MS, OS_2019, 16 * GiB, 300 * MiB, 600 * MiB, 20 * MiB, 50 * MiB,
     EVENTS(ev_leak_bursty)},
    {"leak-slow", "very slow nonpaged leak in SysR: 1 MB/day", 1, 1000, 50, 0x510Eu, 7 * DAY_MS,
     OS_2019, 16 * GiB, 300 * MiB, 600 * MiB, 20 * MiB, 50 * MiB, EVENTS(ev_leak_slow)},
    {"cache-plateau",
     "paged cache FMfn fills at 20 MB/h falling to 0 at +60 MB (6 h), then plateaus; no leak", 1,
     1000, 50, 0xCACEu, DAY_MS, OS_2019, 16 * GiB, 300 * MiB, 600 * MiB, 20 * MiB, 50 * MiB,
     EVENTS(ev_cache_plateau)},
    {"ddk-2003",
     "Windows Server 2003 x86 /3GB (128 MB nonpaged limit): Ddk leaks 550 KiB an office hour, "
     "nonpaged ~32 MiB -> ~119 MiB over 14 days, nearly all of it Ddk",
     1, 800, 50, 0xDD2003u, 14 * DAY_MS, OS_2003_3GB, 4 * GiB, 14 * MiB, 60 * MiB, 2 * MiB, 8 * MiB,
     EVENTS(ev_ddk_2003)},
    {"fleet-small", "8 hosts of Windows Server 2016; host 3 leaks 4 MB/h nonpaged in NtFC", 8, 1500,
     50, 0xF1EE7u, DAY_MS, OS_2016, 16 * GiB, 400 * MiB, 800 * MiB, 20 * MiB, 50 * MiB,
     EVENTS(ev_fleet_small)},
};

#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

size_t pw_sim_preset_count(void)
{
    return N_PRESETS;
}

const pw_sim_preset_t *pw_sim_preset_at(size_t i)
{
    return i < N_PRESETS ? &presets[i] : NULL;
}

const pw_sim_preset_t *pw_sim_preset_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

static int event_applies(const pw_sim_event_t *e, uint32_t host)
{
    return e->host == PW_SIM_ALL_HOSTS || (e->host >= 0 && (uint32_t)e->host == host);
}

size_t pw_sim_ground_truth(const pw_sim_preset_t *p, uint32_t host, const pw_sim_event_t **out,
                           size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_events; i++) {
        if (!event_applies(&p->events[i], host))
            continue;
        if (n < max)
            out[n] = &p->events[i];
        n++;
    }
    return n;
}

double pw_sim_event_rate_bytes_per_h(const pw_sim_event_t *e)
{
    if (e->kind == PW_SIM_FLAT || e->rate_period_ms == 0)
        return 0;
    return (double)e->rate_bytes * (double)HOUR_MS / (double)e->rate_period_ms;
}

/* UTC day-hour milliseconds in [0, x) since the epoch for the window [s, s + w) of each day. */
static uint64_t day_ms_before(uint64_t x, uint64_t s, uint64_t w)
{
    uint64_t in_day = x % DAY_MS;
    uint64_t part = in_day > s ? in_day - s : 0;
    return x / DAY_MS * w + (part < w ? part : w);
}

/* floor(rate * ms / period) without overflow for any rate below 2^64 / period. */
static uint64_t scale_rate(uint64_t rate, uint64_t ms, uint64_t period)
{
    return ms / period * rate + rate * (ms % period) / period;
}

uint64_t pw_sim_event_growth_bytes(const pw_sim_event_t *e, uint64_t start_ms, uint64_t t_ms)
{
    if (e->kind == PW_SIM_FLAT || t_ms < e->onset_ms || e->rate_period_ms == 0 ||
        e->block_bytes == 0)
        return 0;
    uint64_t grow_ms = t_ms - e->onset_ms;
    switch (e->kind) {
    case PW_SIM_LEAK_STEP:
        if (e->step_period_ms)
            grow_ms = (grow_ms / e->step_period_ms + 1) * e->step_period_ms;
        break;
    case PW_SIM_LEAK_BURSTY: {
        uint64_t s = (uint64_t)e->day_start_h * HOUR_MS;
        uint64_t w = e->day_end_h > e->day_start_h ? (e->day_end_h - e->day_start_h) * HOUR_MS : 0;
        grow_ms =
            day_ms_before(start_ms + t_ms, s, w) - day_ms_before(start_ms + e->onset_ms, s, w);
        break;
    }
    default:
        break;
    }
    uint64_t bytes;
    if (e->kind == PW_SIM_CACHE) {
        /* a cache fills its working set ever more slowly: its rate falls from rate_bytes per
         * period at onset to 0 when it reaches cap_bytes, at fill = 2 cap / rate after onset
         * (cap (1 - (1 - t / fill)^2): the more of the set it holds, the fewer misses add) */
        double fill =
            2.0 * (double)e->cap_bytes * (double)e->rate_period_ms / (double)e->rate_bytes;
        double u = (double)grow_ms / fill;
        bytes = u >= 1.0 ? e->cap_bytes
                         : (uint64_t)((double)e->cap_bytes * (1.0 - (1.0 - u) * (1.0 - u)));
    } else {
        bytes = scale_rate(e->rate_bytes, grow_ms, e->rate_period_ms);
    }
    return bytes / e->block_bytes * e->block_bytes;
}

/* ---- tag mix from the real captures -------------------------------------------------------- */

/* (tag, pool, bytes per allocation, typical outstanding allocations). Sizes and counts from
 * the public poolmon captures (shared data README, case number in the comment); rows marked
 * "assumed" are tags named in the sources issue whose captures are screenshots or prose only,
 * with a plausible size. */
typedef struct {
    char tag[5];
    uint8_t pool;
    uint32_t size;
    uint32_t diff;
} real_tag_t;

static const real_tag_t real_tags[] = {
    {"Thre", N_, 3515, 3749},  /* case15 */
    {"File", N_, 154, 85283},  /* case01 */
    {"File", P_, 66, 60},      /* case16 */
    {"MmSt", P_, 482, 173},    /* case03 */
    {"Ntfr", N_, 64, 162180},  /* case01 */
    {"Ntfn", N_, 40, 93703},   /* case01 */
    {"NtFs", N_, 40, 93696},   /* case01 */
    {"Io  ", N_, 723, 127},    /* case02 */
    {"CM  ", P_, 4901, 281},   /* case03 */
    {"Strg", P_, 85, 3727},    /* case03 */
    {"Fat ", P_, 103, 1691},   /* case03 */
    {"Wait", N_, 281, 30},     /* case02 */
    {"Gxlt", P_, 108, 8},      /* case02 */
    {"Ustm", P_, 56, 44},      /* case02 */
    {"Key ", P_, 103, 842},    /* case02 */
    {"SePa", N_, 135, 27},     /* case02 */
    {"NtFB", P_, 25208, 10},   /* case05 */
    {"NtFC", P_, 64, 10},      /* case05 (paged on XP) */
    {"NtFL", N_, 3410, 8},     /* case05 */
    {"NtFS", P_, 266, 301},    /* case05 */
    {"IpSI", N_, 51, 1027},    /* case08 */
    {"IpFI", N_, 284, 26},     /* case08 */
    {"IpTI", N_, 1800, 3},     /* case08 */
    {"Drsd", P_, 832, 21},     /* case09 */
    {"Gcac", P_, 5453, 56},    /* case11 */
    {"Bmfd", P_, 2313, 25},    /* case11 */
    {"GDev", P_, 3378, 6},     /* case11 */
    {"Gbaf", P_, 704, 26},     /* case11 */
    {"ConT", N_, 62166, 688},  /* case15 */
    {"HidC", P_, 112, 8},      /* case19 */
    {"HidC", N_, 166, 119},    /* case19 */
    {"HidP", N_, 419, 16},     /* case19 */
    {"FMfn", P_, 557, 20000},  /* case16 size; count reduced */
    {"Toke", P_, 1200, 10000}, /* case16 size; count reduced */
    {"SeAt", P_, 200, 1000},   /* case16 */
    {"SeTl", N_, 200, 400},    /* case16 */
    {"3MEM", N_, 82, 3},       /* case06 */
    {"Even", N_, 64, 5000},    /* assumed */
    {"Irp ", N_, 240, 900},    /* assumed */
    {"Mmdi", N_, 1024, 200},   /* assumed */
    {"MmCa", P_, 208, 3000},   /* assumed */
    {"EtwB", N_, 4096, 40},    /* assumed */
    {"Pp  ", P_, 32, 2000},    /* assumed (32 B per call, EFI_Driver_Access#1) */
    {"Mdl ", N_, 144, 300},    /* assumed */
    {"Vad ", N_, 64, 8000},    /* assumed */
    {"ObNm", P_, 96, 600},     /* assumed */
};

#define N_REAL_TAGS (sizeof(real_tags) / sizeof(real_tags[0]))

/* ---- generator ---------------------------------------------------------------------------- */

typedef struct {
    uint8_t tag[4];
    uint8_t pool;
    uint32_t size;     /* bytes per allocation */
    uint32_t base;     /* base outstanding allocations */
    uint32_t activity; /* max allocs per change */
    uint32_t allocs, frees, diff;
    const pw_sim_event_t *event; /* NULL for background rows */
} row_t;

struct pw_sim_s {
    const pw_sim_preset_t *preset;
    uint32_t host;
    uint64_t rng;
    uint64_t start_ms, interval_ms;
    uint64_t k; /* index of the next sample */
    row_t *rows;
    size_t n_rows, n_events, n_bg; /* events first, then background */
    size_t stride;                 /* coprime with n_bg */
    pw_win_limit_overrides_t ovr;
    pw_pool_limit_t nonpaged_limit, paged_limit;
    /* pool events (source_sim.h): the last sample's srv 2019 */
    int has_event, logged;
    uint64_t empty_ms; /* time of the last srv 2019 */
    pw_winevent_t event;
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t next_rand(pw_sim_t *sim)
{
    return splitmix64(&sim->rng);
}

static uint32_t rand_below(pw_sim_t *sim, uint32_t n)
{
    return n ? (uint32_t)(next_rand(sim) % n) : 0;
}

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Open-addressing set of (tag, pool) keys, to keep every row distinct. */
typedef struct {
    uint64_t *slots;
    size_t mask;
} keyset_t;

static int keyset_add(keyset_t *s, const uint8_t tag[4], uint8_t pool)
{
    uint64_t key = ((uint64_t)tag[0] | (uint64_t)tag[1] << 8 | (uint64_t)tag[2] << 16 |
                    (uint64_t)tag[3] << 24 | (uint64_t)(pool + 1) << 32);
    uint64_t x = key;
    size_t i = (size_t)splitmix64(&x) & s->mask;
    while (s->slots[i] != 0) {
        if (s->slots[i] == key)
            return 0;
        i = (i + 1) & s->mask;
    }
    s->slots[i] = key;
    return 1;
}

static void init_counters(pw_sim_t *sim, row_t *r, uint32_t diff)
{
    /* Lifetime allocations: from a few to billions, so long runs wrap some 32-bit counters. */
    uint32_t shift = 4 + rand_below(sim, 28);
    uint64_t lifetime = next_rand(sim) & ((1ull << shift) - 1);
    if (lifetime > UINT32_MAX - (uint64_t)diff)
        lifetime = UINT32_MAX - (uint64_t)diff;
    r->allocs = diff + (uint32_t)lifetime;
    r->frees = (uint32_t)lifetime;
    r->diff = diff;
    r->activity = 1 + (1u << rand_below(sim, 8));
}

static const char tag_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static int build_rows(pw_sim_t *sim)
{
    const pw_sim_preset_t *p = sim->preset;
    const pw_sim_event_t *ev[16];
    size_t n_ev = pw_sim_ground_truth(p, sim->host, ev, 16);
    if (n_ev > 16)
        n_ev = 16;
    size_t n = p->rows > n_ev ? p->rows : n_ev;
    sim->rows = pw_calloc(n, sizeof(row_t));
    keyset_t set;
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    set.slots = pw_calloc(cap, sizeof(uint64_t));
    set.mask = cap - 1;
    if (sim->rows == NULL || set.slots == NULL) {
        pw_free(set.slots);
        return PW_ENOMEM;
    }
    size_t w = 0;
    for (size_t i = 0; i < n_ev; i++) {
        row_t *r = &sim->rows[w++];
        memcpy(r->tag, ev[i]->tag, 4);
        r->pool = (uint8_t)ev[i]->pool;
        r->size = ev[i]->block_bytes ? ev[i]->block_bytes : 1;
        r->base = (uint32_t)(ev[i]->base_bytes / r->size);
        r->event = ev[i];
        keyset_add(&set, r->tag, r->pool);
        init_counters(sim, r, r->base);
    }
    sim->n_events = w;
    /* Background: the real tags (host-specific counts), then generated ones. */
    for (size_t i = 0; i < N_REAL_TAGS && w < n; i++) {
        const real_tag_t *t = &real_tags[i];
        row_t *r = &sim->rows[w];
        memcpy(r->tag, t->tag, 4);
        r->pool = t->pool;
        if (!keyset_add(&set, r->tag, r->pool)) {
            memset(r, 0, sizeof(*r));
            continue;
        }
        r->size = t->size;
        r->base = (uint32_t)((uint64_t)t->diff * (50 + rand_below(sim, 101)) / 100);
        w++;
    }
    while (w < n) {
        row_t *r = &sim->rows[w];
        uint64_t x = next_rand(sim);
        r->tag[0] = (uint8_t)tag_chars[x % 26];
        for (int c = 1; c < 4; c++)
            r->tag[c] = (uint8_t)tag_chars[(x >> (8 * c)) % (sizeof(tag_chars) - 1)];
        if (((x >> 40) & 15) == 0) /* some short tags, space padded as Windows shows them */
            r->tag[3] = ' ';
        r->pool = ((x >> 48) % 100) < 55 ? P_ : N_;
        if (!keyset_add(&set, r->tag, r->pool))
            continue;
        r->size = (16u << rand_below(sim, 9)) + 8 * rand_below(sim, 8);
        r->base = (1u << rand_below(sim, 12)) + rand_below(sim, 16);
        w++;
    }
    pw_free(set.slots);
    sim->n_rows = w;
    sim->n_bg = w - sim->n_events;
    /* Scale background counts so each pool sums to about the preset's base. */
    uint64_t sum[2] = {0, 0};
    for (size_t i = sim->n_events; i < w; i++)
        sum[sim->rows[i].pool == N_] += (uint64_t)sim->rows[i].base * sim->rows[i].size;
    uint64_t target[2] = {p->paged_base_bytes, p->nonpaged_base_bytes};
    for (size_t i = sim->n_events; i < w; i++) {
        row_t *r = &sim->rows[i];
        int np = r->pool == N_;
        if (target[np] && sum[np]) {
            double f = (double)target[np] / (double)sum[np];
            double b = (double)r->base * f + 0.5;
            r->base = b > 1e9 ? 1000000000u : (uint32_t)b;
        }
        init_counters(sim, r, r->base);
    }
    /* A stride coprime with the background count makes the churn walk visit distinct rows. */
    sim->stride = 1;
    if (sim->n_bg > 2) {
        do
            sim->stride = 1 + rand_below(sim, (uint32_t)(sim->n_bg - 1));
        while (gcd(sim->stride, sim->n_bg) != 1);
    }
    return 0;
}

int pw_sim_new(const char *preset, uint32_t host, const pw_source_config_t *cfg, pw_sim_t **out,
               pw_diag_t *d)
{
    const pw_sim_preset_t *p = pw_sim_preset_find(preset);
    if (p == NULL) {
        char names[256] = "";
        for (size_t i = 0; i < N_PRESETS; i++) {
            strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, presets[i].name, sizeof(names) - strlen(names) - 1);
        }
        return pw_diag_set(d, PW_EINVAL, 0, 0, "preset", "unknown sim preset '%s' (known: %s)",
                           preset ? preset : "", names);
    }
    if (host >= p->hosts)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "host",
                           "sim preset '%s' has %u host(s): host %u does not exist", p->name,
                           p->hosts, host);
    pw_sim_t *sim = pw_calloc(1, sizeof(*sim));
    if (sim == NULL)
        return PW_ENOMEM;
    sim->preset = p;
    sim->host = host;
    uint64_t seed = cfg && cfg->sim_seed ? cfg->sim_seed : p->seed;
    uint64_t mix = seed ^ (0xA0761D6478BD642Full * ((uint64_t)host + 1));
    sim->rng = splitmix64(&mix);
    sim->interval_ms = cfg && cfg->sim_interval_ms ? cfg->sim_interval_ms : SIM_DEFAULT_INTERVAL_MS;
    sim->start_ms = cfg && cfg->sim_start_ms ? cfg->sim_start_ms : (uint64_t)time(NULL) * 1000u;
    if (cfg) {
        sim->ovr.cfg_nonpaged_bytes = cfg->nonpaged_limit_bytes;
        sim->ovr.cfg_paged_bytes = cfg->paged_limit_bytes;
    }
    pw_win_pool_limits(&p->os, p->ram_bytes, p->ram_bytes / 2 * 3, &sim->ovr, &sim->nonpaged_limit,
                       &sim->paged_limit);
    int r = build_rows(sim);
    if (r != 0) {
        pw_sim_free(sim);
        return r;
    }
    *out = sim;
    return 0;
}

/* Moves a background row: diff to within +-10 % of its base, allocs and frees both up. */
static void churn_row(pw_sim_t *sim, row_t *r)
{
    uint32_t w = r->base / 10;
    int64_t target = (int64_t)r->base - w + rand_below(sim, 2 * w + 1);
    if (r->base == 0)
        target = rand_below(sim, 3);
    int64_t delta = target - (int64_t)r->diff;
    uint32_t act = 1 + rand_below(sim, r->activity);
    uint32_t add = act + (delta > 0 ? (uint32_t)delta : 0);
    uint32_t sub = act + (delta < 0 ? (uint32_t)-delta : 0);
    r->allocs += add; /* uint32_t: wraps at 2^32 like the kernel's ULONG */
    r->frees += sub;
    r->diff = (uint32_t)target;
}

static void advance(pw_sim_t *sim)
{
    sim->k++;
    uint64_t t = sim->k * sim->interval_ms;
    for (size_t i = 0; i < sim->n_events; i++) {
        row_t *r = &sim->rows[i];
        uint64_t grown = pw_sim_event_growth_bytes(r->event, sim->start_ms, t) / r->size;
        uint32_t diff = r->base + (uint32_t)grown;
        uint32_t act = 1 + rand_below(sim, r->activity);
        uint32_t up = diff > r->diff ? diff - r->diff : 0;
        r->allocs += act + up;
        r->frees += act;
        r->diff = r->allocs - r->frees;
    }
    if (sim->n_bg == 0)
        return;
    size_t m = sim->n_bg * sim->preset->churn_permille / 1000;
    size_t pos = rand_below(sim, (uint32_t)sim->n_bg);
    for (size_t j = 0; j < m; j++) {
        churn_row(sim, &sim->rows[sim->n_events + pos]);
        pos = (pos + sim->stride) % sim->n_bg;
    }
}

int pw_sim_next(pw_sim_t *sim, pw_sample_t *out)
{
    const pw_sim_preset_t *p = sim->preset;
    out->n = 0;
    memset(&out->totals, 0, sizeof(out->totals));
    out->timestamp_ms = sim->start_ms + sim->k * sim->interval_ms;
    uint64_t pool_bytes[PW_POOL__COUNT] = {0};
    for (size_t i = 0; i < sim->n_rows; i++) {
        const row_t *r = &sim->rows[i];
        uint64_t bytes = (uint64_t)r->diff * r->size;
        int rc = pw_sample_add(out, r->tag, 4, (pw_pool_t)r->pool, r->allocs, r->frees,
                               (uint32_t)(r->allocs - r->frees), bytes);
        if (rc != 0)
            return rc;
        pool_bytes[r->pool] += bytes;
    }
    pw_totals_t *t = &out->totals;
    t->nonpaged_bytes = pool_bytes[PW_POOL_NONPAGED] + p->untagged_nonpaged_bytes;
    t->paged_bytes = pool_bytes[PW_POOL_PAGED] + p->untagged_paged_bytes;
    t->nonpaged_limit_bytes = sim->nonpaged_limit.bytes;
    t->paged_limit_bytes = sim->paged_limit.bytes;
    t->physical_memory_bytes = p->ram_bytes;
    t->available_bytes = p->ram_bytes / 2;
    t->commit_limit_bytes = p->ram_bytes / 2 * 3;
    t->commit_bytes = t->nonpaged_bytes + t->paged_bytes + p->ram_bytes / 4;
    t->commit_peak_bytes = t->commit_bytes;
    /* the nonpaged pool at its limit: srv 2019 at the first such sample, then at most hourly */
    sim->has_event = 0;
    uint64_t lim = sim->nonpaged_limit.bytes;
    if (lim != 0 && t->nonpaged_bytes >= lim) {
        if (!sim->logged || out->timestamp_ms >= sim->empty_ms + HOUR_MS) {
            memset(&sim->event, 0, sizeof(sim->event));
            sim->event.ts_ms = out->timestamp_ms;
            sim->event.record_id = sim->k + 1;
            sim->event.event_id = 2019;
            sim->event.pool = PW_WINEVENT_POOL_NONPAGED;
            snprintf(sim->event.provider, sizeof(sim->event.provider), "%s",
                     PW_WINEVENT_PROVIDER_SRV);
            sim->empty_ms = out->timestamp_ms;
            sim->has_event = sim->logged = 1;
        }
    }
    advance(sim);
    return 0;
}

size_t pw_sim_events(const pw_sim_t *sim, pw_winevent_t *out, size_t max)
{
    if (!sim->has_event || max == 0)
        return 0;
    out[0] = sim->event;
    return 1;
}

void pw_sim_info(const pw_sim_t *sim, pw_source_info_t *info)
{
    const pw_sim_preset_t *p = sim->preset;
    memset(info, 0, sizeof(*info));
    info->kind = PW_SOURCE_SIMULATED;
    info->counter_width = 32;
    snprintf(info->host_name, sizeof(info->host_name), "sim-%s-%u", p->name, sim->host);
    snprintf(info->os_family, sizeof(info->os_family), "windows");
    snprintf(info->os_version, sizeof(info->os_version), "%u.%u", p->os.major, p->os.minor);
    info->os_build = p->os.build;
    snprintf(info->arch, sizeof(info->arch), "%s",
             p->os.arch == PW_WIN_ARCH_X64     ? "x64"
             : p->os.arch == PW_WIN_ARCH_ARM64 ? "arm64"
                                               : "x86");
    info->physical_memory_bytes = p->ram_bytes;
    info->boot_time_ms = sim->start_ms;
    info->nonpaged_limit = sim->nonpaged_limit;
    info->paged_limit = sim->paged_limit;
}

const pw_sim_preset_t *pw_sim_preset(const pw_sim_t *sim)
{
    return sim->preset;
}

void pw_sim_free(pw_sim_t *sim)
{
    if (sim == NULL)
        return;
    pw_free(sim->rows);
    pw_free(sim);
}

/* The simulated host's big-pool table: every outstanding allocation of a row whose block is
 * larger than a page less the pool header (16 bytes on x64, 8 on x86: Windows takes those from
 * the big-pool allocator) is one entry, laid out as SystemBigPoolInformation for the preset's
 * architecture (bigpool.h) with made-up addresses whose low bit says nonpaged; then the real
 * parser summarises it. Rows as they are now: the next sample's. */
int pw_sim_big_pool(const pw_sim_t *sim, const uint8_t tag[4], pw_bigpool_summary_t *out,
                    pw_diag_t *d)
{
    unsigned ptr = sim->preset->os.arch == PW_WIN_ARCH_X86 ? 4u : 8u;
    uint64_t min_size = 4096 - 2ull * ptr; /* larger than this */
    uint64_t count = 0;
    for (size_t i = 0; i < sim->n_rows; i++)
        if (sim->rows[i].size > min_size && sim->rows[i].pool != PW_POOL_SESSION)
            count += sim->rows[i].diff;
    if (count > PW_BIGPOOL_MAX_COUNT)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "big_pool",
                           "simulated big-pool table of %llu entries exceeds %u",
                           (unsigned long long)count, PW_BIGPOOL_MAX_COUNT);
    size_t esize = pw_bigpool_entry_size(ptr);
    size_t len = ptr + (size_t)count * esize;
    uint8_t *buf = pw_calloc(1, len);
    if (buf == NULL)
        return PW_ENOMEM;
    buf[0] = (uint8_t)count;
    buf[1] = (uint8_t)(count >> 8);
    buf[2] = (uint8_t)(count >> 16);
    buf[3] = (uint8_t)(count >> 24);
    uint8_t *e = buf + ptr;
    uint64_t va = 0x10000;
    for (size_t i = 0; i < sim->n_rows; i++) {
        const row_t *r = &sim->rows[i];
        if (r->size <= min_size || r->pool == PW_POOL_SESSION)
            continue;
        for (uint32_t k = 0; k < r->diff; k++, e += esize) {
            uint64_t a = va | (r->pool == PW_POOL_NONPAGED ? 1u : 0u);
            for (unsigned b = 0; b < ptr; b++) {
                e[b] = (uint8_t)(a >> (8 * b));
                e[ptr + b] = (uint8_t)((uint64_t)r->size >> (8 * b));
            }
            memcpy(e + 2 * ptr, r->tag, 4);
            va += ((uint64_t)r->size + 4095) / 4096 * 4096;
        }
    }
    int rc = pw_bigpool_summarize(buf, len, ptr, tag, out, d);
    pw_free(buf);
    return rc;
}

/* ---- the source ops ----------------------------------------------------------------------- */

typedef struct {
    pw_sim_t *sim;
} sim_priv_t;

static int sim_open(pw_source_t *src, const char *arg, const pw_source_config_t *cfg, pw_diag_t *d)
{
    sim_priv_t *priv = src->priv;
    char name[64];
    const char *slash = strchr(arg, '/');
    size_t len = slash ? (size_t)(slash - arg) : strlen(arg);
    if (len == 0 || len >= sizeof(name))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "preset",
                           "sim needs a preset: sim:PRESET[/N], e.g. sim:steady/0");
    memcpy(name, arg, len);
    name[len] = 0;
    unsigned long host = 0;
    if (slash) {
        char *end = NULL;
        const char *num = slash + 1;
        if (*num < '0' || *num > '9')
            return pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(num - arg), "host",
                               "sim host '%s' is not a number", num);
        host = strtoul(num, &end, 10);
        if (*end != 0 || host > UINT32_MAX)
            return pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(num - arg), "host",
                               "sim host '%s' is not a number", num);
    }
    int r = pw_sim_new(name, (uint32_t)host, cfg, &priv->sim, d);
    if (r != 0)
        return r;
    pw_sim_info(priv->sim, &src->info);
    return 0;
}

static int sim_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d)
{
    sim_priv_t *priv = src->priv;
    int r = pw_sim_next(priv->sim, out);
    if (r != 0)
        return pw_diag_set(d, r, 0, 0, "sample", "simulated sample: %s", pw_strerror(r));
    return 0;
}

static int sim_big_pool(pw_source_t *src, const uint8_t tag[4], pw_bigpool_summary_t *out,
                        pw_diag_t *d)
{
    sim_priv_t *priv = src->priv;
    return pw_sim_big_pool(priv->sim, tag, out, d);
}

static size_t sim_events(pw_source_t *src, pw_winevent_t *out, size_t max)
{
    sim_priv_t *priv = src->priv;
    return pw_sim_events(priv->sim, out, max);
}

static void sim_close(pw_source_t *src)
{
    sim_priv_t *priv = src->priv;
    if (priv != NULL)
        pw_sim_free(priv->sim);
}

const pw_source_ops_t pw__source_sim_ops = {
    .name = "sim",
    .description = "simulated fleet: sim:PRESET[/N] (steady, leak-linear, leak-step, "
                   "leak-bursty, leak-slow, cache-plateau, ddk-2003, fleet-small)",
    .priv_size = sizeof(sim_priv_t),
    .open = sim_open,
    .sample = sim_sample,
    .close = sim_close,
    .big_pool = sim_big_pool,
    .events = sim_events,
};
