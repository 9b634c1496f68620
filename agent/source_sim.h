/* source_sim.h: the simulated fleet ("sim:PRESET[/N]"): host N of a named, seeded preset.
 *
 * A preset is a reproducible scenario: how many (tag, pool) rows a host has, how many of them
 * change per sample, which rows leak or grow as caches and how, the OS (for the pool limits of
 * the rule table in source_win.h) and a seed. Host N derives its own seed from the preset's
 * (or the configured) seed and N, and is named "sim-<preset>-<N>".
 *
 * The generator, per host:
 *  - Rows: the events' rows first (leaks, caches, flat decoys), then background rows: tags
 *    and per-allocation sizes from the public poolmon captures (Thre, File, MmSt, Ntfr, NtFs,
 *    Io, CM, Even, Toke, FMfn, Mmdi, ...), then generated 4-byte tags up to the preset's row
 *    count. Row order is fixed for the life of the host.
 *  - Churn: sample 0 is the initial state. For each later sample exactly
 *    floor(background_rows * churn_permille / 1000) distinct background rows change (chosen by a
 *    seeded stride walk): allocs and frees both rise by at least 1, diff moves within +-10 % of
 *    the row's base, bytes = diff * the row's allocation size (noisy, flat). Other background
 *    rows are unchanged.
 *  - Events: every event row changes every sample (allocs and frees rise); its bytes are
 *    base_bytes + growth(t), growth as pw_sim_event_growth_bytes() says, in whole blocks.
 *  - Counters are 32-bit (counter_width 32) and wrap naturally; diff = allocs - frees mod 2^32.
 *  - Time: sample k is stamped sim_start_ms + k * sim_interval_ms (defaults: now, 10 s), so a
 *    day of samples takes well under a second to generate. Only bursty leaks depend on the
 *    start (they grow during UTC day hours); everything else depends on k alone.
 *  - Totals: nonpaged/paged bytes = sum of the rows of that pool + the preset's untagged
 *    remainder; limits from pw_win_pool_limits() for the preset's OS and RAM (overridden by
 *    the configuration's limits); physical memory = the preset's RAM; commit limit = 1.5 * RAM,
 *    commit = pools + RAM / 4, available = RAM / 2 (plausible constants, not modelled).
 *  - Pool events: a sample whose nonpaged total is at or above the nonpaged limit carries a
 *    srv 2019 ("the nonpaged pool was empty", pw_sim_events) when it is the first such sample
 *    or at least an hour of simulated time after the last srv 2019: Windows' Server service
 *    logs it at a failed allocation, again and again while the pool stays full; at most once
 *    an hour (a pool that hovers at its limit would log one at each crossing) keeps the
 *    collector's PoolEmpty firing (it resolves after an hour without one). The rows are not
 *    capped at the limit (a simulated leak goes on). A preset whose pools stay below their
 *    limits (ddk-2003 ends 14 days near 120 of its 128 MB) logs none.
 */
#ifndef PW_SOURCE_SIM_H
#define PW_SOURCE_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"
#include "source.h"
#include "source_win.h"
#include "winevent.h"

typedef enum {
    PW_SIM_LEAK_LINEAR = 0, /* grows at rate from onset on */
    PW_SIM_LEAK_STEP = 1,   /* same mean rate, landing in steps every step_period_ms from onset */
    PW_SIM_LEAK_BURSTY = 2, /* grows at rate only during [day_start_h, day_end_h) UTC */
    PW_SIM_CACHE = 3,       /* fills from onset: rate at onset, slowing to 0 at cap_bytes
                               (reached 2 cap / rate after onset), then plateaus */
    PW_SIM_FLAT = 4         /* large but flat (base_bytes forever): a decoy, not a leak */
} pw_sim_kind_t;

#define PW_SIM_ALL_HOSTS (-1)

/* One injected behaviour: ground truth for the detection benchmark. */
typedef struct pw_sim_event_s {
    pw_sim_kind_t kind;
    char tag[5]; /* 4 tag bytes + NUL (tags here are printable) */
    pw_pool_t pool;
    int host;                /* host index it applies to, PW_SIM_ALL_HOSTS = every host */
    uint64_t onset_ms;       /* simulated ms after sample 0 when growth starts */
    uint64_t rate_bytes;     /* growth rate: rate_bytes per rate_period_ms */
    uint64_t rate_period_ms; /* 3600000 (per hour) or 86400000 (per day) */
    uint32_t block_bytes;    /* size of each allocation the row makes (its per-alloc) */
    uint64_t base_bytes;     /* bytes outstanding at sample 0 (a multiple of block_bytes) */
    uint64_t cap_bytes;      /* PW_SIM_CACHE: growth stops at this many bytes above base */
    uint64_t step_period_ms; /* PW_SIM_LEAK_STEP: spacing of the steps */
    uint32_t day_start_h;    /* PW_SIM_LEAK_BURSTY: UTC hours, start inclusive */
    uint32_t day_end_h;      /*   end exclusive */
} pw_sim_event_t;

typedef struct pw_sim_preset_s {
    const char *name;
    const char *description;
    uint32_t hosts;          /* fleet size: valid N are 0 ... hosts - 1 */
    uint32_t rows;           /* (tag, pool) rows per host, events included */
    uint32_t churn_permille; /* background rows changed per sample, per mille */
    uint64_t seed;           /* default seed (pw_source_config_t.sim_seed overrides) */
    uint64_t duration_ms;    /* the scenario's nominal length, for benchmarks */
    pw_win_os_t os;          /* for the pool-limit rule table and the host info */
    uint64_t ram_bytes;
    uint64_t nonpaged_base_bytes;     /* background nonpaged rows at sample 0, about */
    uint64_t paged_base_bytes;        /* background paged rows at sample 0, about */
    uint64_t untagged_nonpaged_bytes; /* pool not attributed to any row */
    uint64_t untagged_paged_bytes;
    const pw_sim_event_t *events;
    size_t n_events;
} pw_sim_preset_t;

/* Presets: steady, leak-linear, leak-step, leak-bursty, leak-slow, cache-plateau, ddk-2003,
 * fleet-small (descriptions in each preset). Static storage, never NULL within range. */
size_t pw_sim_preset_count(void);
const pw_sim_preset_t *pw_sim_preset_at(size_t i);

/* The preset named `name`, or NULL. */
const pw_sim_preset_t *pw_sim_preset_find(const char *name);

/* Ground truth: stores in out[0 .. max-1] pointers to the preset's events that apply to host
 * `host` (leaks, caches and flat decoys; kind says which) and returns how many apply (may be
 * more than max). Pointers are to static storage. */
size_t pw_sim_ground_truth(const pw_sim_preset_t *p, uint32_t host, const pw_sim_event_t **out,
                           size_t max);

/* Mean growth rate of an event in bytes per hour while it grows (0 for PW_SIM_FLAT; a cache's
 * at its onset, twice its mean while it fills). */
double pw_sim_event_rate_bytes_per_h(const pw_sim_event_t *e);

/* The bytes above base_bytes the event's row holds at simulated time `t_ms` (ms after sample
 * 0) when sample 0 was taken at `start_ms` (ms since the Unix epoch; only bursty leaks use it):
 * whole blocks of floor(rate_bytes * growing_ms / rate_period_ms) bytes, where growing_ms is
 * the time since onset (linear, cache), since onset up to the last step with the first step at
 * onset (step), or the UTC day-hour time since onset (bursty); a cache fills instead: whole
 * blocks of cap (1 - (1 - t / fill)^2) at t ms after onset, fill = 2 cap / rate (its rate falls
 * from rate at onset to 0 at cap_bytes), cap_bytes from then on. */
uint64_t pw_sim_event_growth_bytes(const pw_sim_event_t *e, uint64_t start_ms, uint64_t t_ms);

/* ---- the generator ------------------------------------------------------------------------ */

typedef struct pw_sim_s pw_sim_t;

/* Creates host `host` of preset `preset`. cfg (may be NULL) supplies sim_seed, sim_start_ms,
 * sim_interval_ms and the limit overrides; it is not retained. On success *out is a new
 * generator (free with pw_sim_free) positioned at sample 0. Returns 0, PW_EINVAL (unknown
 * preset: `d` lists them; host out of range), PW_ENOMEM. */
int pw_sim_new(const char *preset, uint32_t host, const pw_source_config_t *cfg, pw_sim_t **out,
               pw_diag_t *d);

/* Writes the current sample into `out` (reset by the caller or not: entries are appended after
 * out->n = 0) with timestamp_ms set, then advances to the next one. Returns 0 or PW_ENOMEM. */
int pw_sim_next(pw_sim_t *sim, pw_sample_t *out);

/* The host's description: kind PW_SOURCE_SIMULATED, counter_width 32, host name
 * "sim-<preset>-<N>", the preset's OS, RAM, limits; boot time = sim start. */
void pw_sim_info(const pw_sim_t *sim, pw_source_info_t *info);

/* The preset the generator runs; never NULL. */
const pw_sim_preset_t *pw_sim_preset(const pw_sim_t *sim);

/* Frees the generator. Accepts NULL. */
void pw_sim_free(pw_sim_t *sim);

/* The pool events of the sample pw_sim_next wrote last (see "Pool events" at the top): a srv
 * 2019 stamped with that sample's time (provider "Srv", record id the sample's index + 1, as
 * the Windows agent's subscription would deliver it) into out[0..max). Returns how many (0 or
 * 1; 0 when max is 0). */
size_t pw_sim_events(const pw_sim_t *sim, pw_winevent_t *out, size_t max);

/* The host's big-pool table as it is now (the next sample's rows), summarised for `tag` (4
 * bytes) as the Windows source does (bigpool.h): each outstanding allocation of a row whose
 * block is larger than a page less the pool header (4080 bytes on x64, 4088 on x86) is one
 * entry of the preset's layout; smaller blocks are not in the table. Returns 0, PW_ENOMEM or
 * PW_ETOOBIG (more than PW_BIGPOOL_MAX_COUNT entries). */
struct pw_bigpool_summary_s;
int pw_sim_big_pool(const pw_sim_t *sim, const uint8_t tag[4], struct pw_bigpool_summary_s *out,
                    pw_diag_t *d);

#endif /* PW_SOURCE_SIM_H */
