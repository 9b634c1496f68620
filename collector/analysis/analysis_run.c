/* analysis_run.c: the detection engine (detect.h) and the pressure statistics (analysis.h) run
 * over the fleet, as a stream.
 *
 * State, per host (bytes for a 2,000-row host in brackets; pw_analysis_run_state_bytes):
 *  - one row record per (tag, pool) [56 B each + a 4-byte hash slot per half-empty slot, 128 KB]:
 *    its first point of the current boot (time, bytes, diff), its lowest and last bytes, its mean
 *    step and its candidate slot. Updated from ingest's observer on every applied sample, for the
 *    rows it changed (pw_host_changed_rows; every row after a keyframe or a new boot): a
 *    candidate that did not change is carried to the host's newest time before it is judged;
 *  - candidates [up to CAND_LIVE = 12 rows, 3.6 KB each: a pw_detect_ring_t of 64 points and the
 *    last verdict]: a row becomes one when its bytes rose MIN_GROWTH (64 KiB) above their lowest
 *    since the boot began; its ring starts with the row's first point of the boot and then takes
 *    every sample. When all slots are taken, a candidate whose last verdicts were not "leak" for
 *    a while gives way to a row that grew more (or any candidate that is not a leak, to a row
 *    that grew twice as much: a backfill fills the slots before a pass). Hosts of few, slow screens
 * (imports, replayed captures: an interval of 5 min or more) are "dense": every row is a candidate
 * from its first screen (up to CAND_DENSE rows), so a 2-screen capture is judged on every tag;
 *  - pool totals for pressure [2 x (120 + 168) points, 9 KB]: the last 2 h at >= 1 min spacing
 *    and the last 24 h at >= 10 min.
 * The store is read only to rebuild this state after a restart (tables at up to REBUILD_TABLES
 * times over the last 7 days, every screen of a host of screens up to DENSE_REBUILD_TABLES, totals
 * of the last 24 h).
 *
 * Passes: a timer every PASS_MS on the loop picks the hosts with new data (and candidates whose
 * ring changed enough: a verdict that stays the same is re-checked after 1, 2, 4 ... 32 new
 * points), and the libuv thread pool evaluates them: pw_detect_eval per due candidate, the
 * grouping of the host's candidates, pressure with its ETA. The worker and the loop share a
 * host's state under the host's mutex (held per host for the evaluation of one host, about a
 * millisecond): acks and API requests never wait for a pass. When the work is done the loop
 * publishes the suspects, raises and resolves alerts and hands transitions to the callback.
 * Without a loop (tests, bench_detect) pw_analysis_run_pass does the same inline.
 *
 * Findings: a host's candidates judged leak or growing-cache whose byte increments correlate
 * (Pearson r >= GROUP_R (0.8) over 16 common time steps) are one finding; its head is the
 * best-ranked (a leak before a cache, then by score). Suspects are the findings with a leak
 * verdict; a suspect stays listed until a later verdict says otherwise (no flicker between passes);
 * one "PoolTagLeak" alert per finding, raised by its head, for hosts that stream live and for
 * imports of 4 screens or more (pending, as their pools' pressure alerts: no later evaluation
 * holds them for their `for`). Alerts "NonpagedPoolPressure"/"PagedPoolPressure" at the
 * warn and critical ratios of the pool limit (pw_host_limit: the Hello's, else the sample's).
 */
#include "analysis_run.h"
#include "alert_file.h"
#include "alloc.h"
#include "clock.h"
#include "log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD            "analysis"
#define PASS_MS        30000
#define CAND_LIVE      12
#define CAND_DENSE     4096
#define MIN_GROWTH     (64u << 10)
#define DENSE_INTERVAL (5u * 60 * 1000)
#define MAX_BACKOFF    32
#define LEAK_FOR_MS                                                                                \
    (5 * 60 * 1000)                            /* a finding's head is a leak this long before it   \
                                                   fires (findings settle within minutes) */
#define SILENT_MIN_MS     60000                /* HostSilent after 3 intervals, at least this */
#define AGENT_RING        48                   /* agent footprint points kept: 4 h at ... */
#define AGENT_STEP_MS     300000               /* ... one point per 5 min */
#define AGENT_MIN_POINTS  13                   /* AgentFootprint is judged over 1 h at least */
#define AGENT_RATIO       1.5                  /* grown to 1.5 x its first hour's minimum ... */
#define AGENT_MIN_GROWTH  ((uint64_t)16 << 20) /* ... and by 16 MiB (or 1,000 handles) */
#define AGENT_MIN_HANDLES 1000
#define AGENT_FOR_MS      (15 * 60 * 1000)      /* pending this long (3 points) before it fires */
#define EMPTY_QUIET_MS    (60 * 60 * 1000)      /* PoolEmpty resolves after an hour without one */
#define NAMED_KEEP_MS     (24 * 60 * 60 * 1000) /* a 2004's named tags count as evidence 24 h */
#define ALERT_UNKNOWN     3                     /* cand_t.alerting before its first look-up */
#define PUBLISH_SLICE_NS  (10ull * 1000000)     /* loop time a tick may spend publishing */
#define LOG_ALERTS        50                    /* alert transitions logged one by one per pass */
#define LIVE_MIN_POINTS   6 /* a live row's verdict: a trend test with its drift test (6 points) */
#define LIVE_MIN_SAMPLES                                                                           \
    12                   /* ... and on 12 samples at least since it became a candidate (a          \
                            flat stretch is one point of its ring, but many samples) */
#define QUIET_EVICT    3 /* non-leak verdicts in a row before a candidate may give way */
#define GROUP_R        0.8
#define GROUP_STEPS    16
#define GROUP_KEEP_R   0.5 /* a finding's members stay while they correlate this much */
#define GROUP_MAX      256 /* more candidates (a big capture): findings stay single */
#define RECENT_N       120
#define RECENT_STEP_MS 60000LL
#define LONG_N         168 /* 28 h at 10 min: a day and the 2 h before it (day_repeats) */
#define DAY_POINTS     144 /* the day's window: its last 24 h, 144 points at most */
#define LONG_STEP_MS   600000LL
#define TREND_MS       (2LL * 3600000)
#define LONG_TREND_MS  (24LL * 3600000)
#define REBUILD_TABLES 32
#define REBUILD_MS     (7ULL * 24 * 3600000)
/* A host of screens is rebuilt from every screen, as its import fed them, up to this many
 * spread over its history (90 days of 15-minute screens are 8,640: every other one); its
 * newest screen always. */
#define DENSE_REBUILD_TABLES 4096
#define EXTEND_MS                                                                                  \
    (30ULL * 24 * 3600000)      /* a restored suspect's history: the 1-min rollups'                \
                                   default retention */
#define EXTEND_STEP_MS 60000ULL /* a point's time is its step's start: within a minute */
#define RESEND_PASSES  2        /* Prometheus resends firing alerts every minute */
#define SUSPECT_SNAPSHOT_EVERY_MS                                                                  \
    (3600LL * 1000) /* a tag's on_suspect at most this often per host (an episode that ends and    \
                       begins again within it is not asked again) */
#define SUSPECT_ASKED_N   8    /* tags whose last ask a host remembers */
#define FOUND_KEEP_PASSES 20   /* passes a restored found time waits for its suspect (10 min) */
#define KEPT_MAX          4096 /* suspects whose rings a clean stop keeps (~3 KB each) */
#define KEPT_LAG_PASSES                                                                            \
    4 /* a kept pressure is restored when the store's newest sample of its host is at most this    \
         many passes newer (a pass and its publication; plus kept_every after a crash) */

/* ---- state ---------------------------------------------------------------------------------- */

typedef struct {
    uint64_t hash;              /* of (pool, tag bytes) */
    uint64_t last;              /* bytes of the last sample */
    uint64_t seg_min;           /* lowest bytes since the row's boot began */
    uint64_t first_bytes;       /* the row's first point of the boot: bytes, ... */
    uint32_t first_s;           /* ... its time (s after the host's epoch_ms), ... */
    uint32_t first_diff;        /* ... its diff (saturated: only the ring's seed point uses it) */
    uint32_t tag_off;           /* tag bytes in the host's arena */
    float step;                 /* mean |change of bytes| per sample (exponential, 1/16): the row's
                                   own churn, so a row that only churns is not made a candidate */
    int16_t cand;               /* candidate slot, -1 */
    uint8_t tag_len, pool, gen; /* gen: the host's boot generation of first_* and seg_min */
} row_t;

typedef struct {
    uint32_t row;      /* UINT32_MAX: free slot */
    uint16_t backoff;  /* new points needed before the next evaluation */
    uint64_t since;    /* the host's count of tables fed when it became a candidate */
    uint8_t quiet;     /* evaluations in a row that were not "leak" */
    uint8_t has;       /* res holds a verdict */
    uint8_t named;     /* res carries a 2004's naming (evidence and boost): once per verdict */
    uint8_t alerting;  /* its PoolTagLeak: 0 none (nothing to look up), 1 pending, 2 firing,
                          ALERT_UNKNOWN not looked up yet */
    uint64_t found_ms; /* when first judged a leak, 0 while it is not one */
    uint8_t extend;    /* 1: rebuilt from raw chunks only; once a suspect, its ring reaches
                          back into the rollups (extend_suspects), then 2 */
    uint32_t group;    /* finding: slot of its head */
    uint16_t group_n;
    uint8_t episode_told; /* on_suspect was called for this suspect episode (found_ms) */
    pw_detect_ring_t ring;
    pw_detect_t res;
} cand_t;

typedef struct {
    pw_point_t v[2][RECENT_N]; /* nonpaged, paged */
    size_t n;
} recent_t;

typedef struct {
    pw_point_t v[2][LONG_N];
    size_t n;
} longr_t;

typedef struct {
    uv_mutex_t mu; /* shared with the worker: rows, cands, totals, next */
    int mu_init;
    const pw_host_t *h;
    char name[256];
    row_t *rows;
    size_t n_rows, cap_rows;
    uint32_t *slots; /* open addressing: row index + 1, 0 empty */
    size_t n_slots;
    uint8_t *tags;
    size_t tags_len, tags_cap;
    cand_t *cands;
    size_t n_cands, cap_cands;
    uint8_t gen;
    uint8_t boot_id[64];
    size_t boot_id_len;
    int dense;
    int screens;          /* fed whole screens (an import): a row missing from one was left out */
    uint32_t last_pools;  /* pools (1 << pw_pool_t) with a row in the newest table fed */
    int64_t epoch_ms;     /* time of the first point fed (row times are seconds after it) */
    uint8_t fed_gen;      /* the boot generation of the last table fed */
    uint64_t fed;         /* tables fed */
    int64_t last_ts;      /* newest point fed */
    int64_t boot_ts;      /* the first point of the host's current boot: a new boot id, or in
                             screens (which carry none) most rows' counters going down; the
                             pools' totals before it are an earlier boot's (eval_host) */
    int64_t evaluated_ts; /* last_ts when last evaluated */
    recent_t recent;
    longr_t longr;
    uint64_t np_limit, pg_limit;
    int have_limits;
    /* results */
    pw_analysis_host_t next; /* written by the worker */
    pw_analysis_host_t pub;  /* published by the loop */
    int judged, next_ready;
    int restore_checked;
    int silent_alerting; /* a HostSilent of this host fired and may need resolving */
    int64_t heard_ms;    /* the analysis' clock when its last live sample came (0: not since
                            the start): a backfill's samples are old, its agent is not silent */
    int64_t heard_ts;    /* that sample's time */
    int catching_up;     /* its samples come older than its silence time, faster than real
                            time (pw_analysis_loading) */
    int64_t caught_ts;   /* the sample time it caught up at: loading until a pass saw it */
    int alerts_dropped;  /* retired: its alerts were taken out of the set */
    /* the agent's own footprint: one point per AGENT_STEP_MS, the last AGENT_RING */
    struct {
        int64_t ts;
        uint64_t rss, handles;
    } agent[AGENT_RING];
    size_t n_agent;
    int agent_alerting;
    /* the last on_suspect asks of this host: (tag, pool) and the alerts' clock then */
    struct {
        uint8_t tag[PW_TAG_MAX];
        uint8_t tag_len, pool;
        int64_t ms;
    } asked[SUSPECT_ASKED_N];
    size_t n_asked;
    /* pool events (loop only): the newest srv 2019 ([0], nonpaged) and 2020 ([1], paged) */
    int64_t empty_last[2];
    int empty_checked;     /* empty_last read back from the store since this process started */
    int empty_alerting[2]; /* a PoolEmpty of the pool is (or may be: restored) firing */
    /* the newest Resource-Exhaustion-Detector 2004's named tags (evidence for detection) */
    pw_winevent_t named;
} host_state_t;

typedef struct pw_analysis_run_s {
    uv_loop_t *loop; /* NULL: no timer, no worker */
    pw_ingest_t *ing;
    const pw_fleet_t *fleet;
    pw_store_t *store;
    pw_analysis_opts_t o;
    host_state_t **hs; /* by host index */
    size_t n_hs;
    uv_timer_t timer;
    uv_work_t work;
    int working; /* a job is on the thread pool */
    int closing;
    int timer_closed;
    int import_due;        /* screens were imported, or a restored suspect reaches back into
                              the store (extend_suspects): the next tick runs a pass */
    size_t logged;         /* alert transitions of the pass being published */
    size_t suspect_calls;  /* on_suspect calls that asked in the pass being published */
    int publishing;        /* a publication is under way (publish_some) */
    int collecting;        /* hosts are being gathered for a pass (collect_some) */
    size_t collect_cursor; /* next index into the fleet's hosts for collect_some */
    size_t pub_hi;         /* next host of it */
    pw_suspect_t *pub_v;   /* the list being built */
    size_t pub_n, pub_cap;
    int64_t pub_now;    /* the alerts' clock of it */
    host_state_t **job; /* hosts of the job (states are never freed while the run lives) */
    size_t n_job, cap_job;
    uint64_t last_pass_ms;
    pw_alert_set_t *alerts;
    pw_suspect_t *suspects; /* published */
    size_t n_suspects, cap;
    uint64_t suspects_gen; /* +1 at each publication of `suspects` */
    uint64_t passes;
    size_t restore_cursor;
    char *alerts_path;
    int alerts_dirty;
    pw_detect_opts_t dopts;      /* screens (dense hosts) */
    pw_detect_opts_t dopts_live; /* live hosts: more points before a verdict */
    pw_sample_t table;           /* rebuild scratch */
    pw_analysis_stats_t stats;
    uint64_t pass_t0;                      /* the pass in progress: its start (hrtime ns) */
    uint64_t job_ns, job_cands, job_hosts; /* the worker's counts of its job, folded into
                                              stats on the loop when the job is done */
    /* found times of the suspects before the restart (the alerts file), sorted by (host, pool,
     * tag): a candidate judged a leak again takes its time back (found_ms 0 once taken); the
     * others are kept in the file for FOUND_KEEP_PASSES passes (a live row is judged only
     * after 12 samples), then dropped */
    pw_alert_found_t *found;
    size_t n_found;
    int found_passes;
    uint64_t found_sig; /* of the suspects' found times last written to the file */
    /* the suspects' rings and big-pool snapshots kept at the last clean stop
     * (<store.path>.suspects.json), sorted by pw_alert_kept_cmp: a host's are put back when
     * its state is rebuilt (restore_host), then dropped after FOUND_KEEP_PASSES passes */
    char *kept_path;
    pw_alert_kept_t *kept;
    size_t n_kept;
    int kept_passes;
    /* the background save of kept_path (kept_maybe_save): one job at a time with its own copy
     * (kv, khv); kept_mu orders its write with the clean stop's, which comes last (kept_final) */
    uv_work_t kept_work;
    int kept_saving, kept_final, kept_mu_init;
    uv_mutex_t kept_mu;
    pw_alert_kept_t *kv;
    size_t kn;
    pw_alert_kept_host_t *khv;
    size_t khn;
    uint64_t kept_checked_ms;        /* loop time a background copy was last taken */
    uint64_t kept_sig, kept_new_sig; /* of what the file holds; of the copy being written */
    uint64_t kept_saves;             /* background saves written */
} run_t;

static void kept_maybe_save(run_t *rn);

static uint64_t row_hash(int pool, const uint8_t *tag, size_t len)
{
    uint64_t x = 14695981039346656037ull; /* FNV-1a */
    x = (x ^ (uint8_t)pool) * 1099511628211ull;
    for (size_t i = 0; i < len; i++)
        x = (x ^ tag[i]) * 1099511628211ull;
    return x;
}

static host_state_t *state_of(run_t *rn, const pw_host_t *h)
{
    if (h->index >= rn->n_hs) {
        size_t nn = rn->fleet->n > h->index ? rn->fleet->n : h->index + 1;
        host_state_t **p = pw_realloc(rn->hs, nn * sizeof(*p));
        if (p == NULL)
            return NULL;
        memset(p + rn->n_hs, 0, (nn - rn->n_hs) * sizeof(*p));
        rn->hs = p;
        rn->n_hs = nn;
    }
    host_state_t *s = rn->hs[h->index];
    if (s == NULL) {
        s = pw_calloc(1, sizeof(*s));
        if (s == NULL)
            return NULL;
        if (uv_mutex_init(&s->mu) != 0) {
            pw_free(s);
            return NULL;
        }
        s->mu_init = 1;
        s->silent_alerting = 1; /* unknown: a HostSilent restored at start is looked at once */
        s->agent_alerting = 1;  /* ... and an AgentFootprint */
        s->h = h;
        snprintf(s->name, sizeof(s->name), "%s", h->name);
        rn->hs[h->index] = s;
    }
    return s;
}

static void state_free(host_state_t *s)
{
    if (s == NULL)
        return;
    if (s->mu_init)
        uv_mutex_destroy(&s->mu);
    pw_free(s->rows);
    pw_free(s->slots);
    pw_free(s->tags);
    pw_free(s->cands);
    pw_free(s);
}

static int slots_grow(host_state_t *s)
{
    size_t n = s->n_slots ? s->n_slots * 2 : 256;
    uint32_t *v = pw_calloc(n, sizeof(*v));
    if (v == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < s->n_rows; i++) {
        size_t j = (size_t)s->rows[i].hash & (n - 1);
        while (v[j] != 0)
            j = (j + 1) & (n - 1);
        v[j] = (uint32_t)i + 1;
    }
    pw_free(s->slots);
    s->slots = v;
    s->n_slots = n;
    return 0;
}

/* The row of (tag, pool), added when new; NULL on ENOMEM. */
static row_t *row_get(host_state_t *s, const uint8_t *tag, size_t len, int pool)
{
    uint64_t hash = row_hash(pool, tag, len);
    if (s->n_slots > 0) {
        for (size_t j = (size_t)hash & (s->n_slots - 1); s->slots[j] != 0;
             j = (j + 1) & (s->n_slots - 1)) {
            row_t *r = &s->rows[s->slots[j] - 1];
            if (r->hash == hash && r->pool == pool && r->tag_len == len &&
                memcmp(s->tags + r->tag_off, tag, len) == 0)
                return r;
        }
    }
    if ((s->n_rows + 1) * 2 > s->n_slots && slots_grow(s) != 0)
        return NULL;
    if (s->n_rows == s->cap_rows) {
        size_t nc = s->cap_rows ? s->cap_rows * 2 : 64;
        row_t *v = pw_realloc(s->rows, nc * sizeof(*v));
        if (v == NULL)
            return NULL;
        s->rows = v;
        s->cap_rows = nc;
    }
    if (s->tags_len + len > s->tags_cap) {
        size_t nc = s->tags_cap ? s->tags_cap * 2 + len : 4096;
        uint8_t *v = pw_realloc(s->tags, nc);
        if (v == NULL)
            return NULL;
        s->tags = v;
        s->tags_cap = nc;
    }
    memcpy(s->tags + s->tags_len, tag, len);
    row_t *r = &s->rows[s->n_rows];
    memset(r, 0, sizeof(*r));
    r->hash = hash;
    r->tag_off = (uint32_t)s->tags_len;
    r->tag_len = (uint8_t)len;
    r->pool = (uint8_t)pool;
    r->cand = -1;
    r->gen = (uint8_t)(s->gen - 1); /* not seen in this boot yet */
    s->tags_len += len;
    size_t j = (size_t)hash & (s->n_slots - 1);
    while (s->slots[j] != 0)
        j = (j + 1) & (s->n_slots - 1);
    s->slots[j] = (uint32_t)++s->n_rows;
    return r;
}

/* A free candidate slot for row `ri` (its ring seeded with the row's first point of the boot
 * when that is older than `now`), or -1. Live hosts: a candidate whose last QUIET_EVICT verdicts
 * were not leaks and whose row grew less gives way. */
static int cand_take(host_state_t *s, uint32_t ri, uint64_t growth)
{
    size_t cap = s->dense ? CAND_DENSE : CAND_LIVE;
    long slot = -1;
    for (size_t i = 0; i < s->n_cands && slot < 0; i++)
        if (s->cands[i].row == UINT32_MAX)
            slot = (long)i;
    if (slot < 0 && s->n_cands < cap) {
        if (s->n_cands == s->cap_cands) {
            size_t nc = s->cap_cands ? s->cap_cands * 2 : (s->dense ? 64 : CAND_LIVE);
            cand_t *v = pw_realloc(s->cands, nc * sizeof(*v));
            if (v == NULL)
                return -1;
            s->cands = v;
            s->cap_cands = nc;
        }
        slot = (long)s->n_cands++;
    }
    if (slot < 0) {
        /* The candidate that grew least gives way when this row grew more and the candidate's
         * last QUIET_EVICT verdicts were not leaks, or when this row grew more than twice as
         * much and the candidate is not a leak now (a burst of samples - an agent's backfill -
         * fills the slots before any pass has judged them). */
        uint64_t least = UINT64_MAX;
        for (size_t i = 0; i < s->n_cands; i++) {
            const cand_t *c = &s->cands[i];
            const row_t *r = &s->rows[c->row];
            uint64_t g = r->last > r->seg_min ? r->last - r->seg_min : 0;
            int leak = c->has && c->res.verdict == PW_DETECT_LEAK;
            int gives = (c->alerting == 0 || c->alerting == ALERT_UNKNOWN) && /* an alert of
                                                                      it must resolve first */
                        ((c->quiet >= QUIET_EVICT && g < growth) || (!leak && g < growth / 2));
            if (gives && g < least) {
                least = g;
                slot = (long)i;
            }
        }
        if (slot < 0)
            return -1;
        s->rows[s->cands[slot].row].cand = -1;
    }
    cand_t *c = &s->cands[slot];
    memset(c, 0, sizeof(*c));
    c->row = ri;
    c->backoff = 1;
    c->alerting = ALERT_UNKNOWN; /* a firing alert restored at start is looked up once */
    c->since = s->fed;
    c->group = (uint32_t)slot;
    pw_detect_ring_init(&c->ring);
    s->rows[ri].cand = (int16_t)slot;
    return (int)slot;
}

/* One row's values of a sample, however the sample is held. */
typedef struct {
    const uint8_t *tag;
    size_t len;
    int pool;
    uint64_t allocs, frees, diff, bytes;
} rowv_t;

typedef void (*row_fn)(const void *src, size_t i, rowv_t *out);

static void view_row(const void *src, size_t i, rowv_t *o)
{
    pw_host_row_t r;
    pw_host_row_plain(src, i, &r);
    *o = (rowv_t){r.tag, r.tag_len, r.pool, r.allocs, r.frees, r.diff, r.bytes};
}

static void entry_row(const void *src, size_t i, rowv_t *o)
{
    const pw_entry_t *e = &((const pw_sample_t *)src)->entries[i];
    *o = (rowv_t){e->tag, e->tag_len, e->pool, e->allocs, e->frees, e->diff, e->bytes};
}

static void totals_note(host_state_t *s, int64_t ts, uint64_t np, uint64_t pg)
{
    recent_t *r = &s->recent;
    if (r->n == 0 || ts - r->v[0][r->n - 1].ts_ms >= RECENT_STEP_MS) {
        if (r->n == RECENT_N) {
            memmove(r->v[0], r->v[0] + 1, (RECENT_N - 1) * sizeof(pw_point_t));
            memmove(r->v[1], r->v[1] + 1, (RECENT_N - 1) * sizeof(pw_point_t));
            r->n--;
        }
        r->n++;
    }
    if (r->n > 0 && ts >= r->v[0][r->n - 1].ts_ms) { /* the newest point replaces the last */
        r->v[0][r->n - 1] = (pw_point_t){ts, (double)np};
        r->v[1][r->n - 1] = (pw_point_t){ts, (double)pg};
    }
    longr_t *l = &s->longr;
    if (l->n == 0 || ts - l->v[0][l->n - 1].ts_ms >= LONG_STEP_MS) {
        if (l->n == LONG_N) {
            memmove(l->v[0], l->v[0] + 1, (LONG_N - 1) * sizeof(pw_point_t));
            memmove(l->v[1], l->v[1] + 1, (LONG_N - 1) * sizeof(pw_point_t));
            l->n--;
        }
        l->v[0][l->n] = (pw_point_t){ts, (double)np};
        l->v[1][l->n] = (pw_point_t){ts, (double)pg};
        l->n++;
    }
}

/* Feeds one table (n rows through `get`) at time ts of boot `boot_id` into the host's state.
 * Called with the host's mutex held. */
static void feed(host_state_t *s, const void *src, size_t n, row_fn get, int64_t ts,
                 const uint8_t *boot_id, size_t boot_len, const pw_totals_t *tot,
                 const uint32_t *only, size_t n_only)
{
    if (ts < s->last_ts)
        return; /* older than what the state holds (an import of earlier screens): skipped */
    if (boot_len != s->boot_id_len || memcmp(boot_id, s->boot_id, boot_len) != 0) {
        s->gen++;
        memcpy(s->boot_id, boot_id, boot_len);
        s->boot_id_len = boot_len;
        s->boot_ts = ts;
    }
    if (s->epoch_ms == 0)
        s->epoch_ms = ts;
    s->fed++;
    s->last_ts = ts;
    if (tot != NULL)
        totals_note(s, ts, tot->nonpaged_bytes, tot->paged_bytes);
    /* a new boot, or a table that may have changed anywhere: every row; else the changed */
    int all = only == NULL || s->fed_gen != s->gen;
    s->fed_gen = s->gen;
    size_t m = all ? n : n_only;
    if (all)
        s->last_pools = 0;
    /* screens carry no boot id: a reboot inside a capture shows as the counters of most rows
     * that had counted going down (every row of a host of screens has a ring to compare with) */
    size_t counted = 0, reset = 0;
    for (size_t j = 0; j < m; j++) {
        size_t i = all ? j : only[j];
        rowv_t v;
        get(src, i, &v);
        if (all && v.pool < 32)
            s->last_pools |= 1u << v.pool;
        row_t *r = row_get(s, v.tag, v.len, v.pool);
        if (r == NULL)
            continue; /* out of memory: the row is not followed */
        uint32_t ri = (uint32_t)(r - s->rows);
        if (r->gen != s->gen) {
            r->gen = s->gen;
            r->first_s = (uint32_t)((ts - s->epoch_ms) / 1000);
            r->first_bytes = v.bytes;
            r->first_diff = v.diff > UINT32_MAX ? UINT32_MAX : (uint32_t)v.diff;
            r->seg_min = v.bytes;
            r->step = 0;
        } else {
            double dlt =
                v.bytes > r->last ? (double)(v.bytes - r->last) : (double)(r->last - v.bytes);
            r->step += (float)((dlt - r->step) / 16.0);
        }
        r->last = v.bytes;
        if (v.bytes < r->seg_min)
            r->seg_min = v.bytes;
        if (r->cand < 0) {
            uint64_t g = v.bytes - r->seg_min;
            /* live: grown 64 KiB above its lowest, and by more than 8 of its usual steps */
            if (!s->dense && (g < MIN_GROWTH || (double)g < 8.0 * r->step))
                continue;
            if (cand_take(s, ri, g) < 0)
                continue;
            r = &s->rows[ri];
            int64_t first_ts = s->epoch_ms + (int64_t)r->first_s * 1000;
            if (first_ts < ts) { /* seed: the row's first point of this boot */
                pw_detect_point_t p0 = {first_ts,      r->first_diff,  0,
                                        r->first_diff, r->first_bytes, s->gen};
                pw_detect_ring_push(&s->cands[r->cand].ring, &p0);
            }
        }
        pw_detect_ring_t *rg = &s->cands[r->cand].ring;
        if (s->dense && rg->n > 0 && rg->p[rg->n - 1].boot == s->gen &&
            rg->p[rg->n - 1].allocs > 0 && rg->p[rg->n - 1].ts_ms < ts) {
            counted++;
            reset += v.allocs < rg->p[rg->n - 1].allocs || v.frees < rg->p[rg->n - 1].frees;
        }
        pw_detect_point_t p = {ts, v.allocs, v.frees, v.diff, v.bytes, s->gen};
        pw_detect_ring_push(rg, &p);
    }
    if (reset > 0 && 2 * reset > counted)
        s->boot_ts = ts;
}

static int host_dense(const pw_host_t *h)
{
    return pw_host_imported(h) || h->interval_ms >= DENSE_INTERVAL ||
           h->source_kind == POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY;
}

static void restore_host(run_t *rn, const pw_host_t *h, host_state_t *s);

/* One point of the agent's own footprint per AGENT_STEP_MS of sample time (the oldest gives
 * way when the ring is full). */
static void agent_note(host_state_t *s, int64_t ts, const pw_totals_t *t)
{
    if (t->agent_rss_bytes == 0 && t->agent_handles == 0)
        return;
    /* An agent restart starts its figures over: its resident set dropped by AGENT_MIN_GROWTH */
    if (s->n_agent > 0 && t->agent_rss_bytes + AGENT_MIN_GROWTH < s->agent[s->n_agent - 1].rss)
        s->n_agent = 0;
    if (s->n_agent > 0 && ts < s->agent[s->n_agent - 1].ts + AGENT_STEP_MS)
        return;
    if (s->n_agent == AGENT_RING) {
        memmove(&s->agent[0], &s->agent[1], (AGENT_RING - 1) * sizeof(s->agent[0]));
        s->n_agent--;
    }
    s->agent[s->n_agent].ts = ts;
    s->agent[s->n_agent].rss = t->agent_rss_bytes;
    s->agent[s->n_agent].handles = t->agent_handles;
    s->n_agent++;
}

/* ingest's observer: a streamed sample (screen NULL: read the table through the view) or one
 * imported screen. */
static int64_t clock_ms(const run_t *rn);
static int silence_watched(const pw_host_t *h);

/* A live sample came at `heard` (the analysis' clock): is its agent catching up? Behind by more
 * than its silence time and its sample times running at least twice as fast as the clock since
 * the previous one: a backlog (a backfill, a resent spool). Behind at the clock's pace is a
 * wrong agent clock, not a backlog; within the silence time it has caught up. */
static void note_heard(run_t *rn, host_state_t *s, const pw_host_t *h, int64_t heard)
{
    int64_t ts = (int64_t)pw_host_ts(h), prev_ms = s->heard_ms, prev_ts = s->heard_ts;
    int behind = silence_watched(h) && heard - ts > pw_analysis_silent_after_ms(rn, h);
    int fast = prev_ms != 0 && ts > prev_ts && ts - prev_ts > 2 * (heard - prev_ms);
    int was = s->catching_up;
    s->catching_up = behind && fast;
    if (was && !s->catching_up)
        s->caught_ts = ts;
    s->heard_ms = heard;
    s->heard_ts = ts;
}

static void on_sample(void *arg, const pw_host_t *h, const pw_sample_t *screen)
{
    run_t *rn = arg;
    host_state_t *s = state_of(rn, h);
    if (s == NULL)
        return;
    /* A host the store had, back before its state was rebuilt (an agent that reconnects at
     * once after a restart): rebuild first, or the new sample would make every stored table
     * "older than the state" and the history would be lost to the analysis. */
    if (!s->restore_checked)
        restore_host(rn, h, s);
    uv_mutex_lock(&s->mu);
    if (s->n_rows == 0)
        s->dense = screen != NULL || host_dense(h); /* an import is screens by definition */
    if (screen != NULL) {
        rn->import_due = 1;
        s->screens = 1;
        feed(s, screen, screen->n, entry_row, (int64_t)screen->timestamp_ms, (const uint8_t *)"i",
             1, &screen->totals, NULL, 0);
    } else {
        note_heard(rn, s, h, clock_ms(rn));
        const uint32_t *idx;
        size_t nch = pw_host_changed_rows(h, &idx);
        feed(s, h, pw_host_nrows(h), view_row, (int64_t)pw_host_ts(h), h->boot_id, h->boot_id_len,
             pw_host_totals(h), nch == SIZE_MAX ? NULL : idx, nch == SIZE_MAX ? 0 : nch);
        agent_note(s, (int64_t)pw_host_ts(h), pw_host_totals(h));
    }
    uv_mutex_unlock(&s->mu);
}

/* ---- evaluation (the worker, or inline) ----------------------------------------------------- */

/* Bytes of a ring at time t by linear interpolation (clamped to its ends). */
static double ring_at(const pw_detect_ring_t *r, int64_t t)
{
    if (t <= r->p[0].ts_ms)
        return (double)r->p[0].bytes;
    for (size_t i = 1; i < r->n; i++)
        if (t <= r->p[i].ts_ms) {
            const pw_detect_point_t *a = &r->p[i - 1], *b = &r->p[i];
            double f =
                b->ts_ms > a->ts_ms ? (double)(t - a->ts_ms) / (double)(b->ts_ms - a->ts_ms) : 1.0;
            return (double)a->bytes + f * ((double)b->bytes - (double)a->bytes);
        }
    return (double)r->p[r->n - 1].bytes;
}

/* Pearson r of the byte increments of two rings over GROUP_STEPS steps of their common time;
 * 0 when they do not overlap or one does not vary. */
static double increments_r(const pw_detect_ring_t *a, const pw_detect_ring_t *b)
{
    int64_t t0 = a->p[0].ts_ms > b->p[0].ts_ms ? a->p[0].ts_ms : b->p[0].ts_ms;
    int64_t t1 =
        a->p[a->n - 1].ts_ms < b->p[b->n - 1].ts_ms ? a->p[a->n - 1].ts_ms : b->p[b->n - 1].ts_ms;
    if (t1 <= t0)
        return 0.0;
    double da[GROUP_STEPS], db[GROUP_STEPS], pa = ring_at(a, t0), pb = ring_at(b, t0);
    double ma = 0, mb = 0;
    for (int k = 1; k <= GROUP_STEPS; k++) {
        int64_t t = t0 + (t1 - t0) * k / GROUP_STEPS;
        double va = ring_at(a, t), vb = ring_at(b, t);
        da[k - 1] = va - pa;
        db[k - 1] = vb - pb;
        pa = va;
        pb = vb;
        ma += da[k - 1];
        mb += db[k - 1];
    }
    ma /= GROUP_STEPS;
    mb /= GROUP_STEPS;
    double sab = 0, saa = 0, sbb = 0;
    for (int k = 0; k < GROUP_STEPS; k++) {
        sab += (da[k] - ma) * (db[k] - mb);
        saa += (da[k] - ma) * (da[k] - ma);
        sbb += (db[k] - mb) * (db[k] - mb);
    }
    if (saa <= 0 || sbb <= 0)
        return 0.0;
    return sab / sqrt(saa * sbb);
}

static int growing(const cand_t *c)
{
    return c->row != UINT32_MAX && c->has &&
           (c->res.verdict == PW_DETECT_LEAK || c->res.verdict == PW_DETECT_GROWING_CACHE);
}

/* Ranks a over b: a leak before a cache, then the higher score. */
static int ranks_above(const cand_t *a, const cand_t *b)
{
    int la = a->res.verdict == PW_DETECT_LEAK, lb = b->res.verdict == PW_DETECT_LEAK;
    if (la != lb)
        return la;
    return a->res.score > b->res.score;
}

/* Groups the host's growing candidates into findings (union by correlated increments; the
 * head is the best-ranked member). */
static void relabel(host_state_t *s, uint32_t from, uint32_t to)
{
    for (size_t k = 0; k < s->n_cands; k++)
        if (s->cands[k].group == from)
            s->cands[k].group = to;
}

static void group_host(host_state_t *s)
{
    size_t n = s->n_cands;
    uint32_t prev[GROUP_MAX];
    for (size_t i = 0; i < n; i++) {
        if (i < GROUP_MAX)
            prev[i] = s->cands[i].group < n ? s->cands[i].group : (uint32_t)i;
        s->cands[i].group = (uint32_t)i;
        s->cands[i].group_n = 1;
    }
    if (n > GROUP_MAX)
        return; /* a capture with thousands of changing rows: findings stay single */
    /* A finding stays together while its tags still move together (r >= GROUP_KEEP_R), so
     * members and alerts do not come and go from pass to pass; new members join at GROUP_R. */
    for (size_t i = 0; i < n; i++) {
        uint32_t h = prev[i];
        if (h != i && prev[h] == h && growing(&s->cands[i]) && growing(&s->cands[h]) &&
            s->cands[i].group != s->cands[h].group &&
            increments_r(&s->cands[i].ring, &s->cands[h].ring) >= GROUP_KEEP_R)
            relabel(s, s->cands[i].group, s->cands[h].group);
    }
    for (size_t i = 0; i < n; i++) {
        if (!growing(&s->cands[i]))
            continue;
        for (size_t j = i + 1; j < n; j++) {
            if (!growing(&s->cands[j]) || s->cands[j].group == s->cands[i].group)
                continue;
            if (increments_r(&s->cands[i].ring, &s->cands[j].ring) < GROUP_R)
                continue;
            relabel(s, s->cands[j].group, s->cands[i].group);
        }
    }
    /* The head of each group: a former head that is still a member (the best ranked of them),
     * unless it is a cache and a member is a leak; else the best-ranked member. Members point
     * at the head's slot. */
    for (size_t i = 0; i < n; i++) {
        if (!growing(&s->cands[i]) || s->cands[i].group != i)
            continue;
        size_t best = i, cnt = 0;
        long former = -1;
        for (size_t k = 0; k < n; k++) {
            if (!growing(&s->cands[k]) || s->cands[k].group != i)
                continue;
            cnt++;
            if (ranks_above(&s->cands[k], &s->cands[best]))
                best = k;
            if (prev[k] == k && (former < 0 || ranks_above(&s->cands[k], &s->cands[former])))
                former = (long)k;
        }
        size_t head = best;
        if (former >= 0 && (s->cands[former].res.verdict == PW_DETECT_LEAK ||
                            s->cands[best].res.verdict != PW_DETECT_LEAK))
            head = (size_t)former;
        for (size_t k = 0; k < n; k++)
            if (growing(&s->cands[k]) && s->cands[k].group == i) {
                s->cands[k].group = (uint32_t)(head | 0x80000000u); /* marked: done */
                s->cands[k].group_n = (uint16_t)cnt;
            }
    }
    for (size_t i = 0; i < n; i++)
        s->cands[i].group &= 0x7fffffffu;
}

static void pressure_eval(const pw_point_t *pts, size_t n, uint64_t limit, int64_t window,
                          pw_pressure_t *out)
{
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    o.window_ms = window;
    if (n == 0 || pw_pressure_eval(pts, n, limit, &o, out) != 0) {
        memset(out, 0, sizeof(*out));
        out->limit_bytes = limit;
        out->level = PW_LEVEL_UNKNOWN;
        out->eta_ms = out->eta_soon_ms = out->eta_late_ms = -1;
        out->mk_p = 1.0;
    }
}

/* Over the last 24 h (rising by Mann-Kendall) the ETA comes from the net growth of the day,
 * (last - first) / span: a pool that grows 10 h a day is flat in most pairs of points, and
 * their median slope (Theil-Sen) reads a fraction of the day's real growth, which would put the
 * exhaustion days too late. The interval stays Sen's. */
static void long_eta(const pw_point_t *p, size_t n, pw_pressure_t *pr)
{
    double span_h = n > 1 ? (double)(p[n - 1].ts_ms - p[0].ts_ms) / 3600000.0 : 0.0;
    if (span_h <= 0 || p[n - 1].v <= p[0].v)
        return;
    double rate = (p[n - 1].v - p[0].v) / span_h;
    pr->slope_bytes_per_h = rate;
    if (pr->limit_bytes == 0)
        return;
    double room = (double)pr->limit_bytes - (double)pr->used_bytes;
    pr->eta_beyond = false;
    pr->eta_ms = room <= 0 ? 0 : (int64_t)(room / rate * 3600000.0);
    if (pr->eta_soon_ms > pr->eta_ms)
        pr->eta_soon_ms = pr->eta_ms;
    if (pr->eta_late_ms >= 0 && pr->eta_late_ms < pr->eta_ms)
        pr->eta_late_ms = pr->eta_ms;
    if (pr->eta_ms > (int64_t)(24.0 * span_h * 3600000.0)) { /* max_extrapolation: 24 spans */
        pr->eta_ms = pr->eta_soon_ms = pr->eta_late_ms = -1;
        pr->eta_beyond = true;
    }
}

/* A window of 24 h 10-min points this long holds a whole day's cycle. */
#define DAY_SPAN_MS (23LL * 3600000)

/* 1 when the pool rose at this hour yesterday as it rises now: over the 2 h that ended 24 h ago
 * ([now - 26 h, now - 24 h], the same hours of the clock as the last 2 h) by half its rise over
 * the last 2 h at least. A leak of office hours seen at 17:15 rose from 15:15 to 17:15
 * yesterday; a leak that began an hour ago did not (its 2-h trend says when the pool runs out,
 * not yesterday). p[0..n): the pool's points of this boot, the newest last; when they do not
 * reach back 26 h, the first 2 h of the last 24 h stand in for yesterday's (which is right for
 * hours inside the cycle, not for the last 2 h of its growth). */
static int day_repeats(const pw_point_t *p, size_t n)
{
    if (n < 3)
        return 0;
    int64_t now = p[n - 1].ts_ms;
    size_t s = 0; /* the first point of the last 24 h */
    while (s + 1 < n && now - p[s].ts_ms > LONG_TREND_MS)
        s++;
    if (now - p[s].ts_ms < DAY_SPAN_MS)
        return 0;
    size_t b = n - 1;
    while (b > 0 && now - p[b - 1].ts_ms <= TREND_MS)
        b--;
    int64_t y1 = now - LONG_TREND_MS, y0 = y1 - TREND_MS;
    size_t a0 = s, a1 = s;
    if (p[0].ts_ms <= y0 + LONG_STEP_MS) {
        a0 = 0; /* yesterday's same 2 h: from the first point at y0 or after, to y1 */
        while (a0 + 1 < n && p[a0].ts_ms < y0)
            a0++;
        a1 = a0;
        while (a1 + 1 < n && p[a1 + 1].ts_ms <= y1)
            a1++;
    } else {
        while (a1 + 1 < n && p[a1 + 1].ts_ms - p[s].ts_ms <= TREND_MS)
            a1++;
    }
    double then = p[a1].v - p[a0].v, rise = p[n - 1].v - p[b].v;
    return rise > 0 && then >= 0.5 * rise;
}

/* The ETA of a pool whose day repeats (the "seasonal naive" forecast): the window's profile (a
 * day's growth G from its first point, at p[0] = about now - 24 h) happens again from p[0] +
 * 24 h on, k = ceil(room / G) - 1 whole times, then until the rest of the room (0 < rest <= G)
 * is taken, at the first time of the profile that grew by it. A pool that grows 10 h a day runs
 * out in the hours it grows, which a straight line through the day's net growth misses by up to
 * half a day, and the last 2 h's trend by days (at 14:00 it reads the office hours' rate as if
 * it went on all night; at night it reads none). Range: with the day repeating the pool runs
 * out within a day of room / G days either way; the soonest is the 2-h trend's ETA (`soon_ms`,
 * -1 when it gives none) when that is sooner. The ETA and the interval's ends are durations
 * from the newest point (ms), as pressure_eval's; slope_bytes_per_h the day's net growth per
 * hour. */
static void day_eta(const pw_point_t *p, size_t n, pw_pressure_t *pr, int64_t soon_ms,
                    pw_pool_how_t *how)
{
    const int64_t day = LONG_TREND_MS;
    int64_t span = p[n - 1].ts_ms - p[0].ts_ms;
    double g = p[n - 1].v - p[0].v;
    if (span <= 0 || span > day || g <= 0)
        return;
    pr->slope_bytes_per_h = g / ((double)span / 3600000.0);
    /* what a reader can check the ETA against: the pace of the day's growth while it grew (its
     * steps that rose by half the day's mean step or more: office hours, not the night's
     * creep), and for how long */
    double rose = 0.0, mean = g / (double)(n - 1);
    int64_t grew = 0;
    for (size_t i = 1; i < n; i++) {
        double d = p[i].v - p[i - 1].v;
        if (d >= 0.5 * mean) {
            rose += d;
            grew += p[i].ts_ms - p[i - 1].ts_ms;
        }
    }
    how->method = PW_ETA_METHOD_DAY;
    how->window_ms = span;
    how->day_bytes = g;
    how->grew_ms = grew;
    how->rate_bytes_per_h = grew > 0 ? rose / ((double)grew / 3600000.0) : pr->slope_bytes_per_h;
    if (pr->limit_bytes == 0)
        return;
    double room = (double)pr->limit_bytes - (double)pr->used_bytes;
    pr->eta_beyond = false;
    if (room <= 0) {
        pr->eta_ms = pr->eta_soon_ms = pr->eta_late_ms = 0;
        return;
    }
    double days = room / g, k = ceil(days) - 1.0, rest = room - k * g;
    int64_t x = span;
    for (size_t i = 1; i < n; i++) {
        double c = p[i].v - p[0].v;
        if (c < rest)
            continue;
        double c0 = p[i - 1].v - p[0].v, f = c > c0 ? (rest - c0) / (c - c0) : 1.0;
        x = (p[i - 1].ts_ms - p[0].ts_ms) + (int64_t)(f * (double)(p[i].ts_ms - p[i - 1].ts_ms));
        break;
    }
    int64_t lead = day - span; /* from now to p[0] + 24 h, where the profile begins again */
    pr->eta_ms = lead + (int64_t)k * day + x;
    int64_t lo = lead + (int64_t)((days - 1.0) * (double)day);
    pr->eta_soon_ms = soon_ms >= 0 && soon_ms < pr->eta_ms ? soon_ms : lo > 0 ? lo : 0;
    if (pr->eta_soon_ms > pr->eta_ms)
        pr->eta_soon_ms = pr->eta_ms;
    pr->eta_late_ms = lead + (int64_t)((days + 1.0) * (double)day);
    if (pr->eta_late_ms < pr->eta_ms)
        pr->eta_late_ms = pr->eta_ms;
    if ((double)pr->eta_ms > 24.0 * (double)span) { /* max_extrapolation: 24 spans */
        pr->eta_ms = pr->eta_soon_ms = pr->eta_late_ms = -1;
        pr->eta_beyond = true;
    }
}

/* Evaluates one host: due candidates, findings, pressure. Host mutex held. */
/* Resource-Exhaustion-Detector 2004 names the top pool tags when the system ran low on
 * commit: a leak verdict of a tag it named in the last NAMED_KEEP_MS says so in its evidence
 * and scores NAMED_BOOST x higher, which decides between findings that are otherwise alike
 * (the head of tags that grew together). A named tag is never made a suspect by it: 2004 names
 * the biggest consumers of that moment, and a big pool (a file cache's MmSt, Ntff) is not a
 * growing one; only the tag's own curve says leak. Worker thread, under s->mu. */
#define NAMED_BOOST 1.1
static void named_evidence(host_state_t *s)
{
    const pw_winevent_t *nm = &s->named;
    if (nm->n_tags == 0 || (int64_t)nm->ts_ms + NAMED_KEEP_MS < s->last_ts ||
        (int64_t)nm->ts_ms > s->last_ts + NAMED_KEEP_MS)
        return;
    for (size_t i = 0; i < s->n_cands; i++) {
        cand_t *c = &s->cands[i];
        if (c->row == UINT32_MAX || !c->has || c->named || c->res.verdict != PW_DETECT_LEAK)
            continue;
        const row_t *r = &s->rows[c->row];
        if (r->tag_len != 4 || r->pool > PW_POOL_NONPAGED)
            continue;
        uint8_t want =
            r->pool == PW_POOL_NONPAGED ? PW_WINEVENT_POOL_NONPAGED : PW_WINEVENT_POOL_PAGED;
        for (size_t k = 0; k < nm->n_tags; k++) {
            if (nm->tags[k].pool != want || memcmp(nm->tags[k].tag, s->tags + r->tag_off, 4) != 0)
                continue;
            struct tm tm;
            char when[32] = "?";
            if (pw_clock_gmtime((int64_t)(nm->ts_ms / 1000), &tm) == 0)
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%SZ", &tm);
            size_t len = strlen(c->res.evidence);
            if (nm->tags[k].bytes)
                snprintf(c->res.evidence + len, sizeof(c->res.evidence) - len,
                         "; named by Resource-Exhaustion-Detector at %s (%.1f MiB)", when,
                         (double)nm->tags[k].bytes / 1048576.0);
            else
                snprintf(c->res.evidence + len, sizeof(c->res.evidence) - len,
                         "; named by Resource-Exhaustion-Detector at %s", when);
            c->res.score *= NAMED_BOOST;
            c->named = 1;
            break;
        }
    }
}

static int cmp_found(const void *a, const void *b)
{
    const pw_alert_found_t *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c == 0)
        c = strcmp(x->pool, y->pool);
    return c != 0 ? c : strcmp(x->tag, y->tag);
}

/* The found time the candidate's suspect had before the restart (taken: once), or 0. Only one
 * that is not after the host's newest sample: a later one belongs to no episode of this
 * evidence. The worker (or inline); the loop leaves rn->found alone while a job runs. */
static uint64_t found_before(run_t *rn, const host_state_t *s, const cand_t *c)
{
    if (rn->n_found == 0)
        return 0;
    const row_t *r = &s->rows[c->row];
    pw_alert_found_t key;
    memset(&key, 0, sizeof(key));
    snprintf(key.host, sizeof(key.host), "%.127s", s->name);
    char shown[PW_TAG_MAX * 4 + 1];
    pw_row_format(s->tags + r->tag_off, r->tag_len, r->pool, shown, sizeof(shown));
    snprintf(key.tag, sizeof(key.tag), "%.127s", shown); /* as its alert's key */
    snprintf(key.pool, sizeof(key.pool), "%s", pw_pool_name(r->pool));
    pw_alert_found_t *f = bsearch(&key, rn->found, rn->n_found, sizeof(key), cmp_found);
    if (f == NULL || f->found_ms <= 0 || f->found_ms > s->last_ts)
        return 0;
    uint64_t ms = (uint64_t)f->found_ms;
    f->found_ms = 0;
    return ms;
}

/* A row an imported capture's newest screen left out while it shows rows of the row's pool: a
 * console's window (poolmon sorted by bytes shows the rows that fit) or a filter dropped it.
 * Windows keeps a tag in its table once allocated, so it is not gone, and its value now is not
 * known: no verdict rests on its last value seen (a tag that fell out of a window sorted by
 * bytes fell). */
static void out_of_view(cand_t *c, int64_t last_ts)
{
    char ago[32];
    pw_detect_fmt_span(last_ts - c->ring.p[c->ring.n - 1].ts_ms, ago, sizeof(ago));
    memset(&c->res, 0, sizeof(c->res));
    c->res.verdict = PW_DETECT_TOO_SHORT;
    snprintf(c->res.evidence, sizeof(c->res.evidence),
             "not on the capture's last screen (last seen %s before it): left out of the view, "
             "its value now unknown",
             ago);
    c->has = 1;
    c->named = 0;
    c->found_ms = 0;
    c->episode_told = 0;
    c->quiet = (uint8_t)(c->quiet < 255 ? c->quiet + 1 : 255);
    c->ring.dirty = 0;
}

static void eval_host(run_t *rn, host_state_t *s)
{
    uint32_t judged = 0;
    for (size_t i = 0; i < s->n_cands; i++) {
        cand_t *c = &s->cands[i];
        if (c->row == UINT32_MAX)
            continue;
        judged++;
        const row_t *cr = &s->rows[c->row];
        if (s->screens && c->ring.n > 0 && c->ring.p[c->ring.n - 1].ts_ms < s->last_ts &&
            cr->pool < 32 && (s->last_pools & (1u << cr->pool))) {
            out_of_view(c, s->last_ts);
            continue;
        }
        /* rows are fed only when they change: a candidate that did not is still where it was */
        if (c->ring.n > 0 && c->ring.p[c->ring.n - 1].ts_ms < s->last_ts) {
            pw_detect_point_t now = c->ring.p[c->ring.n - 1];
            now.ts_ms = s->last_ts;
            pw_detect_ring_push(&c->ring, &now);
        }
        if (!s->dense && s->fed - c->since < LIVE_MIN_SAMPLES)
            continue; /* not judged yet */
        /* a verdict that stays the same is checked again after 1, 2, 4 ... new points; an
         * import's every new screen (files imported one by one: each is the capture's news) */
        if (c->has && c->ring.dirty < (s->screens ? 1 : c->backoff))
            continue;
        pw_detect_t d;
        rn->job_cands++;
        if (pw_detect_eval(c->ring.p, c->ring.n, s->dense ? &rn->dopts : &rn->dopts_live, &d) != 0)
            continue;
        int same = c->has && d.verdict == c->res.verdict;
        c->backoff =
            same ? (uint16_t)(c->backoff * 2 > MAX_BACKOFF ? MAX_BACKOFF : c->backoff * 2) : 1;
        c->quiet = d.verdict == PW_DETECT_LEAK ? 0 : (uint8_t)(c->quiet < 255 ? c->quiet + 1 : 255);
        if (d.verdict == PW_DETECT_LEAK && c->found_ms == 0) {
            uint64_t before = found_before(rn, s, c);
            c->found_ms = before ? before : (uint64_t)s->last_ts;
            if (before) /* a suspect from before the restart: its episode was told then */
                c->episode_told = 1;
        } else if (d.verdict != PW_DETECT_LEAK) {
            c->found_ms = 0;
            c->episode_told = 0; /* the episode ended: a new leak verdict is a new one */
        }
        c->res = d;
        c->has = 1;
        c->named = 0;
        c->ring.dirty = 0;
    }
    if (s->dense) {
        /* short series: a leak verdict must stand out among the host's rows */
        pw_detect_t **v = pw_malloc((s->n_cands ? s->n_cands : 1) * sizeof(*v));
        size_t k = 0;
        for (size_t i = 0; v != NULL && i < s->n_cands; i++)
            if (s->cands[i].row != UINT32_MAX && s->cands[i].has)
                v[k++] = &s->cands[i].res;
        if (v != NULL)
            pw_detect_peer_screen(v, k);
        pw_free(v);
    }
    named_evidence(s);
    group_host(s);
    pw_analysis_host_t *nx = &s->next;
    memset(nx, 0, sizeof(*nx));
    nx->rows_judged = judged;
    for (int pool = 0; pool < 2; pool++) {
        uint64_t limit = pool ? s->pg_limit : s->np_limit;
        pw_pressure_t *pr = pool ? &nx->pg : &nx->np;
        int64_t *win = pool ? &nx->pg_trend_ms : &nx->np_trend_ms;
        pw_pool_how_t *how = pool ? &nx->pg_how : &nx->np_how;
        /* Only the points of the current boot: a reboot's fall of the pool is no trend, and a
         * window across it would average the growth since with the drop (a week late). */
        const pw_point_t *rv = s->recent.v[pool];
        size_t rn_ = s->recent.n;
        while (rn_ > 1 && rv[0].ts_ms < s->boot_ts)
            rv++, rn_--;
        pressure_eval(rv, rn_, limit, TREND_MS, pr);
        *win = TREND_MS;
        if (pr->eta_ms >= 0) {
            how->method = PW_ETA_METHOD_TREND;
            how->rate_bytes_per_h = pr->slope_bytes_per_h;
            how->window_ms = rv[rn_ - 1].ts_ms - rv[0].ts_ms;
            if (how->window_ms > TREND_MS) /* pressure_eval's window: the last 2 h */
                how->window_ms = TREND_MS;
        }
        /* the long ring of this boot (168 points: 28 h at 10 min, 42 h of 15-minute screens),
         * and its last 24 h */
        const pw_point_t *fv = s->longr.v[pool];
        size_t fn = s->longr.n;
        int64_t cut = 0;
        while (fn > 1 && fv[0].ts_ms < s->boot_ts)
            fv++, fn--, cut = s->boot_ts;
        const pw_point_t *lv = fv;
        size_t ln = fn;
        while (ln > 1 && (ln > DAY_POINTS || lv[ln - 1].ts_ms - lv[0].ts_ms > LONG_TREND_MS))
            lv++, ln--;
        for (size_t k = 0; cut == 0 && k < s->recent.n; k++)
            if (s->recent.v[pool][k].ts_ms < s->boot_ts)
                cut = s->boot_ts;
        how->since_boot_ms = cut;
        int flat = !pr->trend_up || pr->eta_ms < 0;
        if (ln > 0 && (flat || day_repeats(fv, fn))) {
            /* flat for 2 h (a leak of office hours at night), or creeping up too slowly for an
             * ETA within 24 spans of 2 h (other tags at night), or rising now as it rose at
             * this hour yesterday (office hours): the last 24 h may still rise, and with a
             * whole day of them the day repeated gives the ETA (day_eta), with less their net
             * growth */
            pw_pressure_t lp;
            pw_pool_how_t lh = {0};
            pressure_eval(lv, ln, limit, LONG_TREND_MS, &lp);
            if (lp.trend_up) {
                lp.used_bytes = pr->used_bytes; /* the newest value, not the last 10-min point */
                if (lv[ln - 1].ts_ms - lv[0].ts_ms >= DAY_SPAN_MS) {
                    day_eta(lv, ln, &lp, flat ? -1 : pr->eta_ms, &lh);
                } else {
                    long_eta(lv, ln, &lp);
                    lh.method = PW_ETA_METHOD_NET;
                    lh.rate_bytes_per_h = lp.slope_bytes_per_h;
                    lh.window_ms = lv[ln - 1].ts_ms - lv[0].ts_ms;
                }
                if (!pr->trend_up || lp.eta_ms >= 0) {
                    *pr = lp;
                    *win = LONG_TREND_MS;
                    lh.since_boot_ms = how->since_boot_ms;
                    *how = lh;
                }
            }
        }
        if (pr->eta_ms < 0) { /* no ETA: nothing to say how */
            int64_t b = how->since_boot_ms;
            memset(how, 0, sizeof(*how));
            how->since_boot_ms = b;
        }
    }
    nx->have_pressure = s->recent.n > 0;
    nx->judged_ts = s->last_ts;
    s->evaluated_ts = s->last_ts;
    s->next_ready = 1;
}

static void work_cb(uv_work_t *w)
{
    run_t *rn = w->data;
    uint64_t t0 = uv_hrtime();
    rn->job_cands = 0;
    for (size_t i = 0; i < rn->n_job; i++) {
        host_state_t *s = rn->job[i];
        uv_mutex_lock(&s->mu);
        eval_host(rn, s);
        uv_mutex_unlock(&s->mu);
    }
    rn->job_ns = uv_hrtime() - t0;
    rn->job_hosts = rn->n_job;
}

/* ---- publication (the loop) ----------------------------------------------------------------- */

const char *pw_analysis_alert_name(const pw_alert_key_t *k)
{
    if (k->tag[0] != '\0')
        return "PoolTagLeak";
    if (strcmp(k->pool, PW_ALERT_POOL_SILENT) == 0)
        return "HostSilent";
    if (strcmp(k->pool, PW_ALERT_POOL_AGENT) == 0)
        return "AgentFootprint";
    if (strcmp(k->pool, PW_ALERT_POOL_NP_EMPTY) == 0 ||
        strcmp(k->pool, PW_ALERT_POOL_PG_EMPTY) == 0)
        return "PoolEmpty";
    return strcmp(k->pool, "paged") == 0 ? "PagedPoolPressure" : "NonpagedPoolPressure";
}

void pw_analysis_alert_text(const pw_alert_key_t *k, double value, char *summary, size_t scap,
                            char *description, size_t dcap)
{
    if (k->tag[0] != '\0') {
        snprintf(summary, scap, "%s: pool tag '%s' (%s) keeps growing", k->host, k->tag, k->pool);
        snprintf(description, dcap,
                 "leak suspect: outstanding bytes and allocations grow steadily");
    } else if (strcmp(k->pool, PW_ALERT_POOL_AGENT) == 0) {
        snprintf(summary, scap, "%s: the poolwatch agent grew to %.1f x its size", k->host, value);
        snprintf(description, dcap,
                 "the agent's own resident set or handles keep growing (an exporter that leaks "
                 "into the memory it watches)");
    } else if (strcmp(k->pool, PW_ALERT_POOL_NP_EMPTY) == 0 ||
               strcmp(k->pool, PW_ALERT_POOL_PG_EMPTY) == 0) {
        int np = strcmp(k->pool, PW_ALERT_POOL_NP_EMPTY) == 0;
        snprintf(summary, scap, "%s: the %s pool ran out (srv %d: the pool was empty)", k->host,
                 np ? "nonpaged" : "paged", np ? 2019 : 2020);
        snprintf(description, dcap,
                 "Windows logged that the server could not allocate from the %s pool because it "
                 "was empty; resolves after an hour without another such event",
                 np ? "nonpaged" : "paged");
    } else if (strcmp(k->pool, PW_ALERT_POOL_SILENT) == 0) {
        snprintf(summary, scap, "%s: no sample for %.0f s", k->host, value);
        snprintf(description, dcap,
                 "the host's agent stopped reporting (a host whose pool ran out stops answering)");
    } else {
        snprintf(summary, scap, "%s: %s pool at %.1f %% of its limit", k->host, k->pool,
                 value * 100.0);
        snprintf(description, dcap, "used / limit = %.3f", value);
    }
}

static void notify(run_t *rn, const pw_alert_transition_t *tr, int resend)
{
    char sum[400], desc[300];
    pw_analysis_alert_text(&tr->key, tr->value, sum, sizeof(sum), desc, sizeof(desc));
    rn->o.on_alert(rn->o.on_alert_arg, tr, pw_analysis_alert_name(&tr->key), sum, desc, resend);
}

static void resend_firing(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to == PW_ALERT_FIRING)
        notify(arg, cur, 1);
}

static void alert(run_t *rn, const char *host, const char *tag, const char *pool,
                  const char *severity, double value, double threshold, double hyst, int64_t for_ms,
                  int64_t now_ms)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.tag, sizeof(k.tag), "%s", tag);
    snprintf(k.pool, sizeof(k.pool), "%s", pool);
    snprintf(k.severity, sizeof(k.severity), "%s", severity);
    pw_alert_rule_t rule = {threshold, hyst, for_ms, 15 * 60 * 1000};
    pw_alert_transition_t tr;
    int r = pw_alert_eval(rn->alerts, &rule, &k, value, now_ms, &tr);
    /* a restart of a big fleet moves thousands of alerts at once: the first LOG_ALERTS of a
     * pass are logged one by one, the rest counted in one line at its end */
    if (r > 0 && rn->logged++ < LOG_ALERTS)
        PW_LOG_INFO(MOD, "alert %s%s%s %s %s: %s -> %s (value %.3f)", host, tag[0] ? " " : "", tag,
                    pool, severity, pw_alert_state_name(tr.from), pw_alert_state_name(tr.to),
                    value);
    if (r > 0 && rn->o.on_alert != NULL)
        notify(rn, &tr, 0);
    if (r > 0) /* the file keeps pending and firing alerts: every transition changes it */
        rn->alerts_dirty = 1;
}

/* Writes the alerts file: the alerts, the published suspects' found times, and the found times
 * restored from it that wait for their suspect. On the loop, no job running. */
static void save_alerts(run_t *rn)
{
    rn->alerts_dirty = 0;
    if (rn->alerts_path == NULL)
        return;
    size_t n = 0;
    pw_alert_found_t *f = pw_malloc((rn->n_suspects + rn->n_found + 1) * sizeof(*f));
    if (f == NULL) {
        PW_LOG_WARN(MOD, "out of memory: the suspects' found times are not kept in %s",
                    rn->alerts_path);
    } else {
        for (size_t i = 0; i < rn->n_suspects; i++) {
            const pw_suspect_t *x = &rn->suspects[i];
            if (x->found_ms == 0)
                continue;
            pw_alert_found_t *o = &f[n++];
            memset(o, 0, sizeof(*o));
            char shown[PW_TAG_MAX * 4 + 1];
            pw_row_format(x->tag, x->tag_len, x->pool, shown, sizeof(shown));
            snprintf(o->host, sizeof(o->host), "%.127s", x->host);
            snprintf(o->tag, sizeof(o->tag), "%.127s", shown);
            snprintf(o->pool, sizeof(o->pool), "%s", pw_pool_name(x->pool));
            o->found_ms = (int64_t)x->found_ms;
        }
        for (size_t i = 0; !rn->working && i < rn->n_found; i++) /* (the worker takes them) */
            if (rn->found[i].found_ms > 0)
                f[n++] = rn->found[i];
    }
    pw_alert_save_found(rn->alerts, f, n, rn->alerts_path);
    pw_free(f);
}

/* A signature of the published suspects' found times: the file is written again when it
 * changes (a suspect came or went). */
static uint64_t found_signature(const run_t *rn)
{
    uint64_t sig = rn->n_suspects;
    for (size_t i = 0; i < rn->n_suspects; i++) {
        const pw_suspect_t *x = &rn->suspects[i];
        uint64_t h = row_hash(x->pool, x->tag, x->tag_len) ^ x->found_ms;
        for (const char *c = x->host; *c; c++)
            h = (h ^ (uint8_t)*c) * 1099511628211ull;
        sig += h * 0x9e3779b97f4a7c15ull; /* order does not matter */
    }
    return sig;
}

static void tell_resolved(const pw_alert_transition_t *tr, void *arg)
{
    notify((run_t *)arg, tr, 0);
}

/* A retired host's alerts leave the set (and the alerts file); receivers are told the firing
 * and pending ones resolved, so Alertmanager and webhooks do not keep them open. */
static void drop_alerts(run_t *rn, host_state_t *s, int64_t now_ms)
{
    size_t n = pw_alert_drop_host(rn->alerts, s->name, now_ms,
                                  rn->o.on_alert != NULL ? tell_resolved : NULL, rn);
    s->alerts_dropped = 1;
    if (n == 0)
        return;
    PW_LOG_INFO(MOD, "host %s retired: its %zu alert(s) removed, receivers told resolved", s->name,
                n);
    rn->alerts_dirty = 1;
}

/* A host renamed by an operator (pw_ingest_rename, imported hosts) keeps its state: its findings
 * are listed under the new name, its alerts under the old one resolve (receivers are told) and
 * are raised again under the new name by the next pass, which judges the host again. On the
 * loop. Returns 1 when the name changed. */
static int follow_name(run_t *rn, host_state_t *s, const pw_host_t *h, int64_t now_ms)
{
    if (strcmp(s->name, h->name) == 0)
        return 0;
    size_t n = pw_alert_drop_host(rn->alerts, s->name, now_ms,
                                  rn->o.on_alert != NULL ? tell_resolved : NULL, rn);
    if (n > 0) {
        PW_LOG_INFO(MOD, "host %s renamed %s: its %zu alert(s) under the old name resolved",
                    s->name, h->name, n);
        rn->alerts_dirty = 1;
    }
    uv_mutex_lock(&s->mu);
    snprintf(s->name, sizeof(s->name), "%s", h->name);
    s->evaluated_ts = INT64_MIN;
    for (size_t i = 0; i < s->n_cands; i++)
        if (s->cands[i].alerting != 0)
            s->cands[i].alerting = ALERT_UNKNOWN;
    uv_mutex_unlock(&s->mu);
    return 1;
}

static int64_t wall_ms(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int64_t clock_ms(const run_t *rn)
{
    return rn->o.now_ms != NULL ? rn->o.now_ms(rn->o.now_arg) : wall_ms();
}

/* Urgency rank of a pressure level: critical, warn, then the rest (ok; unknown limit). */
static int level_rank(int level)
{
    return level == PW_LEVEL_CRITICAL ? 0 : level == PW_LEVEL_WARN ? 1 : 2;
}

/* The fleet's list by urgency (analysis_run.h): a leak on a host about to run out comes before
 * a faster one with room to spare. */
static int cmp_suspect(const void *a, const void *b)
{
    const pw_suspect_t *x = a, *y = b;
    int c = level_rank(x->level) - level_rank(y->level);
    if (c != 0)
        return c;
    if (x->eta_ms != y->eta_ms) {
        if (x->eta_ms < 0 || y->eta_ms < 0)
            return x->eta_ms < 0 ? 1 : -1;
        return x->eta_ms < y->eta_ms ? -1 : 1;
    }
    if (x->finding_score != y->finding_score)
        return x->finding_score > y->finding_score ? -1 : 1;
    c = strcmp(x->host, y->host);
    if (c != 0)
        return c;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->head != y->head)
        return x->head ? -1 : 1;
    return x->d.score > y->d.score ? -1 : x->d.score < y->d.score;
}

static int cmp_suspect_ptr(const void *a, const void *b)
{
    return cmp_suspect(*(const pw_suspect_t *const *)a, *(const pw_suspect_t *const *)b);
}

int64_t pw_analysis_silent_after_ms(const pw_analysis_run_t *rn, const pw_host_t *h)
{
    if (rn != NULL && rn->o.silent_after_ms > 0)
        return rn->o.silent_after_ms;
    int64_t after = 3 * (int64_t)h->interval_ms;
    return after < SILENT_MIN_MS ? SILENT_MIN_MS : after;
}

/* Seconds at now_ms since the host's newest sample, or since its last sample came when that is
 * later (`heard_ms`: a backfill's samples are old while it streams); 0 without one. */
static double quiet_s(const pw_host_t *h, int64_t heard_ms, int64_t now_ms)
{
    int64_t last = (int64_t)h->last_seen_ms > heard_ms ? (int64_t)h->last_seen_ms : heard_ms;
    return last > 0 && now_ms > last ? (double)(now_ms - last) / 1000.0 : 0.0;
}

/* Whether HostSilent watches the host: it streamed since this collector started, from an agent
 * (not an import, not a replay of saved screens), and did not say Goodbye. */
static int silence_watched(const pw_host_t *h)
{
    return pw_host_streaming(h) && !pw_host_imported(h) && h->stopped_ms == 0 &&
           h->source_kind != POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY;
}

const char *pw_analysis_connection(const pw_analysis_run_t *rn, const pw_host_t *h, int64_t now_ms)
{
    int conn = pw_host_connected(h);
    if (h->stopped_ms != 0 && !conn)
        return "stopped";
    if (pw_host_imported(h))
        return "imported";
    const host_state_t *st =
        rn != NULL && h->index < rn->n_hs ? rn->hs[h->index] : NULL; /* the loop's view */
    if (silence_watched(h) && quiet_s(h, st ? st->heard_ms : 0, now_ms) * 1000.0 >=
                                  (double)pw_analysis_silent_after_ms(rn, h))
        return "silent";
    return conn ? "streaming" : "disconnected";
}

int pw_analysis_loading(const pw_analysis_run_t *rn, const pw_host_t *h, int64_t now_ms)
{
    const host_state_t *st = rn != NULL && h->index < rn->n_hs ? rn->hs[h->index] : NULL;
    if (st == NULL || !silence_watched(h))
        return 0;
    if (st->catching_up)
        return now_ms - st->heard_ms < pw_analysis_silent_after_ms(rn, h);
    return st->caught_ts != 0 && (!st->judged || st->pub.judged_ts < st->caught_ts);
}

/* HostSilent: a host that streamed since this collector started and has sent nothing for its
 * silence time ([alerts] silent_after, default max(3 intervals, 60 s)) of its own sample time;
 * critical when its nonpaged pool was at warn or above (a server whose pool runs out stops
 * answering), else warning; resolved by its next sample, or by its agent's Goodbye (a clean
 * stop is not silence). The value is the seconds of silence. */
static void silent_alert(run_t *rn, host_state_t *s, const pw_host_t *h, int64_t now_ms)
{
    int64_t after = pw_analysis_silent_after_ms(rn, h);
    /* a clean stop is not silence: a HostSilent that fired resolves */
    double quiet = h->stopped_ms != 0 ? 0.0 : quiet_s(h, s->heard_ms, now_ms);
    int crit =
        s->judged && (s->pub.np.level == PW_LEVEL_WARN || s->pub.np.level == PW_LEVEL_CRITICAL);
    double th = (double)after / 1000.0;
    if (quiet < th && !s->silent_alerting)
        return; /* the common case: it speaks, and no HostSilent of it to resolve */
    alert(rn, s->name, "", PW_ALERT_POOL_SILENT, "critical", crit ? quiet : 0.0, th, 0, 0, now_ms);
    alert(rn, s->name, "", PW_ALERT_POOL_SILENT, "warning", crit ? 0.0 : quiet, th, 0, 0, now_ms);
    s->silent_alerting = quiet >= th;
}

/* AgentFootprint: the host's own agent grows. Over its footprint points (one per 5 min, the
 * last 4 h, at least 1 h of them; rebuilt from the store after a restart), the minimum of the
 * last 3 against the minimum of the first 6: pending (warning) when the resident set reached
 * AGENT_RATIO x and grew by AGENT_MIN_GROWTH, or the handles AGENT_RATIO x and by
 * AGENT_MIN_HANDLES, firing when that held AGENT_FOR_MS; minima, so that a moment's peak (a
 * reconnect's buffers) does not count. The value is the larger of the two ratios; resolved
 * below 1.4. An agent restart starts its figures over (agent_note). */
static void agent_alert(run_t *rn, host_state_t *s, int64_t now_ms)
{
    size_t n = s->n_agent;
    double ratio = 0.0;
    if (n >= AGENT_MIN_POINTS) {
        uint64_t r0 = UINT64_MAX, r1 = UINT64_MAX, h0 = UINT64_MAX, h1 = UINT64_MAX;
        for (size_t i = 0; i < 6; i++) {
            r0 = s->agent[i].rss < r0 ? s->agent[i].rss : r0;
            h0 = s->agent[i].handles < h0 ? s->agent[i].handles : h0;
        }
        for (size_t i = n - 3; i < n; i++) {
            r1 = s->agent[i].rss < r1 ? s->agent[i].rss : r1;
            h1 = s->agent[i].handles < h1 ? s->agent[i].handles : h1;
        }
        if (r0 > 0 && r1 >= r0 + AGENT_MIN_GROWTH)
            ratio = (double)r1 / (double)r0;
        if (h0 > 0 && h1 >= h0 + AGENT_MIN_HANDLES && (double)h1 / (double)h0 > ratio)
            ratio = (double)h1 / (double)h0;
    }
    if (ratio < AGENT_RATIO && !s->agent_alerting)
        return;
    alert(rn, s->name, "", PW_ALERT_POOL_AGENT, "warning", ratio, AGENT_RATIO, 0.1, AGENT_FOR_MS,
          now_ms);
    pw_alert_key_t key;
    memset(&key, 0, sizeof(key));
    snprintf(key.host, sizeof(key.host), "%.127s", s->name);
    snprintf(key.pool, sizeof(key.pool), PW_ALERT_POOL_AGENT);
    snprintf(key.severity, sizeof(key.severity), "warning");
    s->agent_alerting = pw_alert_state(rn->alerts, &key, NULL) != PW_ALERT_INACTIVE &&
                        pw_alert_state(rn->alerts, &key, NULL) != PW_ALERT_RESOLVED;
}

/* The pool-empty events of the last EMPTY_QUIET_MS, read back once after a start (a PoolEmpty
 * restored from the alerts file resolves on time, or stays while its events are recent). */
static void empty_restore(run_t *rn, host_state_t *s, int64_t now_ms)
{
    s->empty_checked = 1;
    s->empty_alerting[0] = s->empty_alerting[1] = 1; /* unknown: looked at once */
    if (rn->store == NULL || now_ms <= EMPTY_QUIET_MS)
        return;
    pw_store_event_t *ev = NULL;
    pw_diag_t d;
    int64_t n = pw_store_events(rn->store, s->name, (uint64_t)(now_ms - EMPTY_QUIET_MS),
                                (uint64_t)INT64_MAX, 256, &ev, &d);
    for (int64_t i = 0; i < n; i++) {
        pw_winevent_kind_t k = pw_winevent_kind(&ev[i].ev);
        int p = k == PW_WINEVENT_NONPAGED_EMPTY ? 0 : k == PW_WINEVENT_PAGED_EMPTY ? 1 : -1;
        if (p >= 0 && (int64_t)ev[i].ev.ts_ms > s->empty_last[p])
            s->empty_last[p] = (int64_t)ev[i].ev.ts_ms;
    }
    pw_free(ev);
}

/* PoolEmpty (critical): srv 2019 (nonpaged) or 2020 (paged) said the pool was empty. Fires at
 * once, from the event (pw_ingest's observer), with no `for`: Windows' own verdict needs no
 * confirmation. Resolves when the newest such event of that pool is EMPTY_QUIET_MS old (an hour
 * of quiet): a pool that runs out logs the event again and again while it stays out. */
static void empty_alert(run_t *rn, host_state_t *s, int64_t now_ms)
{
    if (!s->empty_checked)
        empty_restore(rn, s, now_ms);
    static const char *const pool[2] = {PW_ALERT_POOL_NP_EMPTY, PW_ALERT_POOL_PG_EMPTY};
    for (int p = 0; p < 2; p++) {
        int on = s->empty_last[p] != 0 && now_ms - s->empty_last[p] < EMPTY_QUIET_MS;
        if (!on && !s->empty_alerting[p])
            continue;
        alert(rn, s->name, "", pool[p], "critical", on ? 1.0 : 0.0, 1.0, 0.0, 0, now_ms);
        s->empty_alerting[p] = on;
    }
}

/* ingest's observer of stored pool events (loop). */
static void on_events(void *arg, const pw_host_t *h, const pw_winevent_t *ev, size_t n)
{
    run_t *rn = arg;
    host_state_t *s = state_of(rn, h);
    if (s == NULL)
        return;
    int empty = 0;
    for (size_t i = 0; i < n; i++) {
        pw_winevent_kind_t k = pw_winevent_kind(&ev[i]);
        int p = k == PW_WINEVENT_NONPAGED_EMPTY ? 0 : k == PW_WINEVENT_PAGED_EMPTY ? 1 : -1;
        if (p >= 0 && (int64_t)ev[i].ts_ms > s->empty_last[p]) {
            s->empty_last[p] = (int64_t)ev[i].ts_ms;
            empty = 1;
        }
        if (k == PW_WINEVENT_DIAGNOSIS && ev[i].ts_ms >= s->named.ts_ms) {
            uv_mutex_lock(&s->mu); /* the worker reads it */
            s->named = ev[i];
            s->evaluated_ts = INT64_MIN; /* judged again at the next pass, with it */
            uv_mutex_unlock(&s->mu);
            rn->import_due = 1; /* (an imported host gets no sample to make it due) */
        }
    }
    if (empty) {
        int64_t now = clock_ms(rn);
        empty_alert(rn, s, now);
        if (rn->alerts_dirty && rn->alerts_path != NULL && !rn->working) /* kept at once */
            save_alerts(rn);
    }
}

/* The row's growth over the host pool's last 24 h (its long totals) as a share of the pool's
 * growth over the same time, clamped to [0, 1]; -1 when the pool did not grow (or no totals).
 * The same window for both: a leak judged over 14 days is not set against 2 h of the host. */
static double share_of_host(const host_state_t *s, const cand_t *c, int pool)
{
    const longr_t *l = &s->longr;
    if (l->n < 2 || c->ring.n < 2)
        return -1.0;
    int k = pool == PW_POOL_PAGED;
    double host = l->v[k][l->n - 1].v - l->v[k][0].v;
    if (host <= 0)
        return -1.0;
    int64_t t0 = l->v[k][0].ts_ms, t1 = l->v[k][l->n - 1].ts_ms;
    double row = ring_at(&c->ring, t1) - ring_at(&c->ring, t0);
    double sh = row / host;
    return sh < 0 ? 0.0 : sh > 1 ? 1.0 : sh;
}

static int append_suspect(run_t *rn, pw_suspect_t **v, size_t *n, size_t *cap,
                          const host_state_t *s, const cand_t *c, size_t slot)
{
    (void)rn;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        pw_suspect_t *p = pw_realloc(*v, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        *v = p;
        *cap = nc;
    }
    const row_t *r = &s->rows[c->row];
    pw_suspect_t *x = &(*v)[(*n)++];
    memset(x, 0, sizeof(*x));
    snprintf(x->host, sizeof(x->host), "%s", s->name);
    memcpy(x->tag, s->tags + r->tag_off, r->tag_len);
    x->tag_len = r->tag_len;
    x->pool = r->pool;
    x->head = c->group == slot;
    x->group = c->group;
    x->group_n = c->group_n;
    x->finding_score = s->cands[c->group].res.score;
    /* urgency: the pressure of the pool the finding's head grows in (a session pool is paged) */
    const cand_t *hd = &s->cands[c->group];
    int hpool = hd->row != UINT32_MAX ? s->rows[hd->row].pool : r->pool;
    const pw_pressure_t *pr = hpool == PW_POOL_NONPAGED ? &s->pub.np : &s->pub.pg;
    x->level = (uint8_t)(s->pub.have_pressure ? pr->level : PW_LEVEL_UNKNOWN);
    /* the pool's ETA, or, when it has too few points for a trend (an import of 2-3 screens),
     * the head's own growth's: as /api/v1/leaks shows it (pw_pressure_leak_eta) */
    x->eta_ms = -1;
    if (s->pub.have_pressure) {
        const pw_detect_t *hr = &hd->res;
        pw_leak_eta_t le;
        if (pw_pressure_leak_eta(pr, hr->rate_bytes_per_h, hr->rate_low_bytes_per_h,
                                 hr->rate_high_bytes_per_h, hr->steps + hr->segments, hr->span_ms,
                                 NULL, &le) == 0)
            x->eta_ms = le.eta_ms;
    }
    x->found_ms = c->found_ms;
    x->d = c->res;
    x->share = share_of_host(s, c, r->pool);
    return 0;
}

/* "dentry, kmalloc-64 +2": the finding's other tags (head), or the head's tag (member). */
static void finding_text(const host_state_t *s, const cand_t *c, size_t slot, char *out, size_t cap)
{
    out[0] = '\0';
    size_t len = 0, shown = 0, more = 0;
    for (size_t k = 0; k < s->n_cands; k++) {
        const cand_t *o = &s->cands[k];
        if (!growing(o) || o->group != c->group)
            continue;
        if ((c->group == slot && k == slot) || (c->group != slot && k != c->group))
            continue;
        const row_t *r = &s->rows[o->row];
        char t[PW_TAG_MAX * 4 + 1];
        pw_row_format(s->tags + r->tag_off, r->tag_len, r->pool, t, sizeof(t));
        if (shown < 3 && len + strlen(t) + 3 < cap) {
            len += (size_t)snprintf(out + len, cap - len, "%s%s", shown ? ", " : "", t);
            shown++;
        } else {
            more++;
        }
    }
    if (more > 0 && len + 8 < cap)
        snprintf(out + len, cap - len, " +%zu", more);
}

/* on_suspect for a suspect of a live host whose episode was not told yet: once per episode,
 * a tag at most once per SUSPECT_SNAPSHOT_EVERY_MS per host, PW_ANALYSIS_SUSPECT_CALLS per
 * pass. Host mutex held. */
static void tell_suspect(run_t *rn, host_state_t *s, cand_t *c, const pw_suspect_t *x,
                         int64_t now_ms)
{
    if (rn->o.on_suspect == NULL || c->episode_told ||
        rn->suspect_calls >= PW_ANALYSIS_SUSPECT_CALLS)
        return;
    size_t slot = s->n_asked, oldest = 0;
    for (size_t i = 0; i < s->n_asked; i++) {
        if (s->asked[i].tag_len == x->tag_len && s->asked[i].pool == x->pool &&
            memcmp(s->asked[i].tag, x->tag, x->tag_len) == 0)
            slot = i;
        if (s->asked[i].ms < s->asked[oldest].ms)
            oldest = i;
    }
    if (slot < s->n_asked && now_ms - s->asked[slot].ms < SUSPECT_SNAPSHOT_EVERY_MS) {
        c->episode_told = 1; /* asked within the hour: this episode is that one's */
        return;
    }
    int r = rn->o.on_suspect(rn->o.on_suspect_arg, s->h, x);
    if (r < 0)
        return; /* not now: again at a later pass */
    c->episode_told = 1;
    if (r == 0)
        return;
    rn->suspect_calls++;
    if (slot == s->n_asked) {
        if (s->n_asked < SUSPECT_ASKED_N)
            s->n_asked++;
        else
            slot = oldest;
    }
    memcpy(s->asked[slot].tag, x->tag, x->tag_len);
    s->asked[slot].tag_len = x->tag_len;
    s->asked[slot].pool = x->pool;
    s->asked[slot].ms = now_ms;
}

/* Starts publishing the pass just judged: publish_some does it a slice at a time. */
static void publish_start(run_t *rn)
{
    rn->pub_now = clock_ms(rn);
    rn->logged = 0;
    rn->suspect_calls = 0;
    rn->pub_hi = 0;
    rn->pub_n = 0;
    rn->publishing = 1;
}

/* Publishes hosts until `budget_ns` of the loop is spent (0: all), then the list: the API reads
 * the last complete list meanwhile. Returns 1 when the publication is complete. */
static int publish_some(run_t *rn, uint64_t budget_ns)
{
    uint64_t t_loop = uv_hrtime();
    int64_t now_ms = rn->pub_now;
    pw_suspect_t *v = rn->pub_v;
    size_t n = rn->pub_n, cap = rn->pub_cap;
    for (; rn->pub_hi < rn->n_hs; rn->pub_hi++) {
        if (budget_ns != 0 && uv_hrtime() - t_loop >= budget_ns)
            break;
        host_state_t *s = rn->hs[rn->pub_hi];
        if (s == NULL)
            continue;
        if (pw_host_retired(s->h)) { /* retired: its findings leave the list, its alerts the set */
            if (!s->alerts_dropped)
                drop_alerts(rn, s, now_ms);
            continue;
        }
        uv_mutex_lock(&s->mu);
        int fresh = s->next_ready;
        if (fresh) {
            s->pub = s->next;
            s->next_ready = 0;
            s->judged = 1;
        }
        size_t first = n;
        const pw_host_t *h = s->h;
        int live = pw_host_streaming(h) && !pw_host_imported(h);
        for (size_t i = 0; i < s->n_cands; i++) {
            cand_t *c = &s->cands[i];
            if (!growing(c))
                continue;
            const cand_t *head = &s->cands[c->group];
            if (head->res.verdict != PW_DETECT_LEAK || c->res.verdict != PW_DETECT_LEAK)
                continue;
            /* a restored suspect gets its history back at the next tick's pass, not 30 s on */
            if (c->extend == 1 && rn->store != NULL)
                rn->import_due = 1;
            if (append_suspect(rn, &v, &n, &cap, s, c, i) == 0) {
                finding_text(s, c, i, v[n - 1].with, sizeof(v[n - 1].with));
                if (live)
                    tell_suspect(rn, s, c, &v[n - 1], now_ms);
            }
        }
        s->pub.n_suspects = (uint32_t)(n - first);

        /* alerts: one per finding (its head) on live hosts and imports (an operator asks which
         * tag leaks: the answer is an alert too, as its pool's pressure is); fresh results only,
         * so an import's stays pending (nothing new comes to hold it longer) */
        if (fresh && (live || pw_host_imported(h))) {
            for (size_t i = 0; i < s->n_cands; i++) {
                const cand_t *c = &s->cands[i];
                if (c->row == UINT32_MAX || !c->has)
                    continue;
                const row_t *r = &s->rows[c->row];
                char shown[PW_TAG_MAX * 4 + 1];
                pw_row_format(s->tags + r->tag_off, r->tag_len, r->pool, shown, sizeof(shown));
                /* a comparison of 2 or 3 screens (a replayed capture) is listed, not alerted */
                int on = growing(c) && c->group == i && c->res.verdict == PW_DETECT_LEAK &&
                         c->res.points >= 4;
                /* most candidates are not leaks and have no alert: nothing to look up; a firing
                 * alert that stays on has nothing to change either */
                if (!on && !s->cands[i].alerting)
                    continue;
                if (on && s->cands[i].alerting == 2)
                    continue;
                pw_alert_key_t key;
                memset(&key, 0, sizeof(key));
                snprintf(key.host, sizeof(key.host), "%.127s", s->name);
                snprintf(key.tag, sizeof(key.tag), "%.127s", shown);
                snprintf(key.pool, sizeof(key.pool), "%s", pw_pool_name(r->pool));
                snprintf(key.severity, sizeof(key.severity), "warning");
                if (on || pw_alert_state(rn->alerts, &key, NULL) != PW_ALERT_INACTIVE)
                    alert(rn, s->name, shown, pw_pool_name(r->pool), "warning", on ? 1.0 : 0.0, 1.0,
                          0.5, LEAK_FOR_MS, now_ms);
                pw_alert_state_t st = pw_alert_state(rn->alerts, &key, NULL);
                s->cands[i].alerting = st == PW_ALERT_FIRING ? 2 : st == PW_ALERT_PENDING ? 1 : 0;
            }
        }
        if (live && h->source_kind != POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY)
            silent_alert(rn, s, h, now_ms); /* (also resolves a HostSilent of a stopped host) */
        if (live)
            agent_alert(rn, s, now_ms);
        if (s->empty_alerting[0] || s->empty_alerting[1] || !s->empty_checked)
            empty_alert(rn, s, now_ms);
        if (fresh && s->pub.have_pressure) {
            pw_pressure_opts_t o;
            pw_pressure_opts_default(&o);
            for (int pool = 0; pool < 2; pool++) {
                const pw_pressure_t *pr = pool ? &s->pub.pg : &s->pub.np;
                if (pr->limit_bytes == 0)
                    continue;
                const char *pn = pool ? "paged" : "nonpaged";
                /* at the critical ratio the warning gives way (one alert per pool, as an
                 * Alertmanager inhibit rule would: not "critical firing, warning pending") */
                int crit = pr->ratio >= o.critical_ratio;
                alert(rn, s->name, "", pn, "warning", crit ? 0.0 : pr->ratio, o.warn_ratio, 0.02,
                      5 * 60 * 1000, now_ms);
                alert(rn, s->name, "", pn, "critical", pr->ratio, o.critical_ratio, 0.02, 60 * 1000,
                      now_ms);
            }
        }
        uv_mutex_unlock(&s->mu);
    }
    if (rn->pub_hi < rn->n_hs) {
        rn->pub_v = v;
        rn->pub_n = n;
        rn->pub_cap = cap;
        uint64_t spent = uv_hrtime() - t_loop;
        if (spent > rn->stats.max_loop_ns)
            rn->stats.max_loop_ns = spent;
        return 0;
    }
    rn->pub_v = NULL;
    rn->pub_n = rn->pub_cap = 0;
    rn->publishing = 0;
    /* findings by their head's score, each head followed by its members: one sort */
    if (n > 1) { /* sort pointers, then place each suspect once (they are ~1 KB each) */
        const pw_suspect_t **ord = pw_malloc(n * sizeof(*ord));
        pw_suspect_t *out = ord != NULL ? pw_malloc(n * sizeof(*out)) : NULL;
        if (out != NULL) {
            for (size_t i = 0; i < n; i++)
                ord[i] = &v[i];
            qsort(ord, n, sizeof(*ord), cmp_suspect_ptr);
            for (size_t i = 0; i < n; i++)
                out[i] = *ord[i];
            pw_free(v);
            v = out;
        } else {
            qsort(v, n, sizeof(*v), cmp_suspect); /* out of memory: in place */
        }
        pw_free(ord);
    }
    pw_free(rn->suspects);
    rn->suspects = v;
    rn->n_suspects = n;
    rn->cap = n;
    rn->suspects_gen++;
    if (rn->logged > LOG_ALERTS)
        PW_LOG_INFO(MOD, "%zu more alert transitions in this pass (GET /api/v1/alerts lists them)",
                    rn->logged - LOG_ALERTS);
    pw_alert_expire(rn->alerts, now_ms);
    kept_maybe_save(rn);
    if (rn->n_kept > 0 && --rn->kept_passes <= 0) { /* every host was rebuilt long since */
        pw_free(rn->kept);
        rn->kept = NULL;
        rn->n_kept = 0;
    }
    if (rn->n_found > 0 && --rn->found_passes <= 0) { /* waited long enough */
        pw_free(rn->found);
        rn->found = NULL;
        rn->n_found = 0;
        rn->alerts_dirty = 1;
    }
    uint64_t sig = found_signature(rn);
    if (sig != rn->found_sig) {
        rn->found_sig = sig;
        rn->alerts_dirty = 1;
    }
    if (rn->alerts_dirty)
        save_alerts(rn);
    if (rn->o.on_alert != NULL && rn->passes % RESEND_PASSES == RESEND_PASSES - 1)
        pw_alert_foreach(rn->alerts, resend_firing, rn);
    rn->passes++;
    rn->stats.passes = rn->passes;
    rn->stats.last_work_ns = rn->job_ns;
    rn->stats.work_ns += rn->job_ns;
    rn->stats.cands_judged += rn->job_cands;
    rn->stats.hosts_judged += rn->job_hosts;
    rn->job_ns = rn->job_cands = rn->job_hosts = 0;
    uint64_t spent = uv_hrtime() - t_loop;
    if (spent > rn->stats.max_loop_ns)
        rn->stats.max_loop_ns = spent;
    if (rn->pass_t0 != 0)
        rn->stats.last_pass_ns = uv_hrtime() - rn->pass_t0;
    return 1;
}

/* The whole publication at once (no loop: tests and bench_detect). */
static void publish(run_t *rn)
{
    publish_start(rn);
    publish_some(rn, 0);
}

/* ---- rebuild after a restart ------------------------------------------------------------------
 */

static int rebuild_totals_cb(void *arg, uint64_t ts_ms, const pw_totals_t *t)
{
    totals_note(arg, (int64_t)ts_ms, t->nonpaged_bytes, t->paged_bytes);
    agent_note(arg, (int64_t)ts_ms, t); /* the agent's own footprint, as its samples said */
    return 0;
}

/* What a restart lost of a host that the store has: the fleet's totals ring (ingest reads it
 * back) and this state: tables at up to REBUILD_TABLES times of the last 7 days (the first 256
 * screens of an imported host), then the totals of the last 24 h. */
/* The candidate of row (tag, pool) of s, or NULL. The host's mutex held. */
static cand_t *cand_of(host_state_t *s, const uint8_t *tag, size_t len, int pool)
{
    for (size_t i = 0; i < s->n_cands; i++) {
        cand_t *c = &s->cands[i];
        if (c->row == UINT32_MAX)
            continue;
        const row_t *r = &s->rows[c->row];
        if (r->pool == pool && r->tag_len == len && memcmp(s->tags + r->tag_off, tag, len) == 0)
            return c;
    }
    return NULL;
}

/* What the last clean stop kept of this host's suspects: their big-pool snapshots go back to
 * the fleet, and a candidate rebuilt from the store takes back the ring it was judged on (its
 * boots renumbered: the newest is the host's current generation), unless the store holds
 * samples newer than that ring (the file is from an older stop, and the collector crashed
 * since). So a suspect's evidence and rate after a clean restart are those before it. The
 * host's mutex held. */
/* At start: each host's pressure as the last stop (or background save) published it: its
 * level and ETA are the API's and the alerts' from the start, as before the stop, until the first
 * pass judges the host again. Also when the store holds newer samples than the verdict saw, as
 * long as they are newer by at most what a save can lag (KEPT_LAG_PASSES passes and one of the
 * host's intervals, plus [analysis] kept_every after a crash): a host that streams has samples the
 * last pass before a clean stop did not see, and without its verdict the views would judge a ring
 * rebuilt from 1-min buckets meanwhile ("does not rise" at night for a leak of office hours). A
 * verdict older than that (a file from an earlier stop, a backlog stored since) is not shown as
 * current: the host waits for the first pass ("not judged yet"). The store may also be behind the
 * verdict by a group commit that a crash cut short (its agents send those samples again). */
static void restore_pressure(run_t *rn)
{
    pw_alert_kept_host_t *hv;
    size_t nh = pw_alert_load_kept_hosts(rn->kept_path, &hv), used = 0;
    for (size_t i = 0; i < nh; i++) {
        const pw_host_t *h = pw_fleet_find(rn->fleet, hv[i].host);
        if (h == NULL)
            continue;
        int64_t seen = (int64_t)h->last_seen_ms, judged = hv[i].pub.judged_ts;
        int64_t lag = (int64_t)rn->o.kept_every_ms + KEPT_LAG_PASSES * (int64_t)PASS_MS +
                      (int64_t)h->interval_ms;
        if (seen - judged > lag || judged - seen > lag)
            continue;
        host_state_t *s = state_of(rn, h);
        if (s == NULL)
            break;
        s->pub = hv[i].pub;
        s->judged = 1;
        used++;
    }
    if (nh > 0)
        PW_LOG_INFO(MOD, "%zu of %zu hosts' pressure restored from %s", used, nh, rn->kept_path);
    pw_free(hv);
}

static int cmp_kept_rank(const void *a, const void *b)
{
    const pw_alert_kept_t *x = *(const pw_alert_kept_t *const *)a,
                          *y = *(const pw_alert_kept_t *const *)b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* At start: the suspects as the last stop (or background save) published them, in their
 * order, until the first pass publishes its own: /leaks, the dashboard and the alerts'
 * "fastest-growing suspect" have them from the start instead of nothing for a pass. Hosts
 * no longer in the fleet are left out. */
static void publish_kept(run_t *rn)
{
    const pw_alert_kept_t **ord = pw_malloc((rn->n_kept ? rn->n_kept : 1) * sizeof(*ord));
    pw_suspect_t *v = pw_malloc((rn->n_kept ? rn->n_kept : 1) * sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; ord != NULL && v != NULL && i < rn->n_kept; i++)
        if (rn->kept[i].has_suspect && pw_fleet_find(rn->fleet, rn->kept[i].host) != NULL)
            ord[n++] = &rn->kept[i];
    if (n == 0 || ord == NULL || v == NULL) {
        pw_free(ord);
        pw_free(v);
        return;
    }
    qsort(ord, n, sizeof(*ord), cmp_kept_rank);
    for (size_t i = 0; i < n; i++)
        v[i] = ord[i]->suspect;
    pw_free(ord);
    pw_free(rn->suspects);
    rn->suspects = v;
    rn->n_suspects = rn->cap = n;
    rn->suspects_gen++;
    PW_LOG_INFO(MOD, "%zu suspects listed as kept until the first analysis pass", n);
}

static void apply_kept(run_t *rn, const pw_host_t *h, host_state_t *s)
{
    size_t lo = 0, hi = rn->n_kept;
    while (lo < hi) { /* the host's first entry */
        size_t mid = (lo + hi) / 2;
        if (strcmp(rn->kept[mid].host, s->name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < rn->n_kept && strcmp(rn->kept[i].host, s->name) == 0; i++) {
        const pw_alert_kept_t *k = &rn->kept[i];
        if (k->has_big_pool)
            pw_ingest_big_pool_restore(rn->ing, h, &k->big_pool);
        cand_t *c = cand_of(s, k->tag, k->tag_len, k->pool);
        if (c == NULL || k->ring.n == 0 ||
            (c->ring.n > 0 && k->ring.p[k->ring.n - 1].ts_ms < c->ring.p[c->ring.n - 1].ts_ms))
            continue;
        uint32_t last = k->ring.p[k->ring.n - 1].boot;
        c->ring = k->ring;
        for (size_t j = 0; j < c->ring.n; j++)
            c->ring.p[j].boot = (uint32_t)s->gen - (last - c->ring.p[j].boot);
        c->ring.dirty = c->ring.dirty ? c->ring.dirty : 1;
        c->extend = 2;      /* its history is the ring's: nothing to reach back for */
        if (k->has_suspect) /* listed before the stop: not a new suspect (on_suspect) */
            c->episode_told = 1;
    }
}

static void restore_host(run_t *rn, const pw_host_t *h, host_state_t *s)
{
    if (s->restore_checked)
        return;
    s->restore_checked = 1;
    if (!pw_ingest_restore_history(rn->ing, h, 3ULL * 3600000))
        return;
    uv_mutex_lock(&s->mu);
    s->dense = host_dense(h);
    uint64_t to = h->last_seen_ms;
    uint64_t from = s->dense ? 0 : (to > REBUILD_MS ? to - REBUILD_MS : 0);
    uint64_t step = 1;
    /* an import's screens are one series ("i", as pw_ingest_import feeds them); a replay's, like
     * a live host's, carry its agent's boot id, so screens it sends after the restart join them */
    int imported = pw_host_imported(h);
    s->screens = imported;
    const uint8_t *boot = imported ? (const uint8_t *)"i" : h->boot_id;
    size_t boot_len = imported ? 1 : h->boot_id_len;
    /* REBUILD_TABLES spread tables, then the newest (the spread's step rounds up: it would
     * stop short of where the live state stood) */
    int tables = s->dense ? DENSE_REBUILD_TABLES : REBUILD_TABLES;
    for (int k = 0; k < tables + 1 && from <= to; k++) {
        pw_diag_t d;
        int r = pw_store_table_at(rn->store, h->name, from, &rn->table, &d);
        if (r != 0) {
            if (r != PW_ENOENT)
                PW_LOG_WARN(MOD, "%s: state from the store: %s (%s)", h->name, pw_strerror(r),
                            d.msg);
            break;
        }
        if (k == 0) /* spread the tables over what the store holds */
            step = (to - rn->table.timestamp_ms) / (uint64_t)tables + 1;
        feed(s, &rn->table, rn->table.n, entry_row, (int64_t)rn->table.timestamp_ms, boot, boot_len,
             NULL, NULL, 0);
        uint64_t next = rn->table.timestamp_ms + step;
        from = next > from ? next : from + 1;
        if ((k == tables - 1 || from > to) && rn->table.timestamp_ms < to)
            from = to;
    }
    if (!s->dense) /* raw chunks cover the last days only (48 h by default) */
        for (size_t i = 0; i < s->n_cands; i++)
            if (s->cands[i].row != UINT32_MAX)
                s->cands[i].extend = 1;
    if (rn->n_kept > 0)
        apply_kept(rn, h, s);
    s->recent.n = 0;
    s->longr.n = 0;
    s->n_agent = 0;
    /* the long ring's reach: a day and the 2 h before it (day_repeats) */
    const uint64_t reach = (uint64_t)(LONG_TREND_MS + TREND_MS + LONG_STEP_MS);
    uint64_t tfrom = to > reach ? to - reach : 0;
    pw_diag_t d;
    pw_store_totals(rn->store, h->name, tfrom, to, rebuild_totals_cb, s, &d);
    uv_mutex_unlock(&s->mu);
}

/* A restored candidate judged a leak gets back the history its ring held before the restart:
 * the row's points before the ring's first, from the store's series (the 1-min level beyond
 * the raw retention, one point a minute, EXTEND_MS at most), as far back as its counters
 * only rose (a fall is a reboot the rollups do not mark: the segment ends there). Only suspects,
 * and once each: a query per candidate of a 10,000-host fleet would hold the start for minutes.
 * The host is judged again at this pass. On the loop, the host's mutex held. */
static void extend_suspects(run_t *rn, host_state_t *s)
{
    for (size_t i = 0; i < s->n_cands; i++) {
        cand_t *c = &s->cands[i];
        if (rn->store == NULL || c->row == UINT32_MAX || c->extend != 1 || !c->has ||
            c->res.verdict != PW_DETECT_LEAK || c->ring.n == 0)
            continue;
        c->extend = 2;
        const row_t *r = &s->rows[c->row];
        const pw_detect_point_t *p0 = &c->ring.p[0];
        uint64_t to = p0->ts_ms > 0 ? (uint64_t)p0->ts_ms - 1 : 0;
        uint64_t from = to > EXTEND_MS ? to - EXTEND_MS : 0;
        pw_store_series_t ser;
        memset(&ser, 0, sizeof(ser));
        pw_diag_t d;
        int64_t n = pw_store_series(rn->store, s->name, s->tags + r->tag_off, r->tag_len,
                                    (pw_pool_t)r->pool, from, to, EXTEND_STEP_MS, &ser, &d);
        if (n < 0)
            PW_LOG_WARN(MOD, "%s: history of a suspect from the store: %s (%s)", s->name,
                        pw_strerror((int)n), d.msg);
        size_t k = ser.n; /* ser.points[k ..) join the ring */
        /* counters to compare with: the ring's seed point carries none (allocs = its diff,
         * frees 0), a later point's are as good (they only rose since) */
        const pw_detect_point_t *ref = p0;
        for (size_t j = 0; j + 1 < c->ring.n && ref->frees == 0; j++)
            ref = &c->ring.p[j + 1];
        uint64_t allocs = ref->allocs, frees = ref->frees;
        while (k > 0 && ser.points[k - 1].ts_ms < (uint64_t)p0->ts_ms &&
               ser.points[k - 1].allocs <= allocs && ser.points[k - 1].frees <= frees) {
            k--;
            allocs = ser.points[k].allocs;
            frees = ser.points[k].frees;
        }
        if (k < ser.n) {
            pw_detect_ring_t old = c->ring; /* p0 points into the ring: read from the copy */
            p0 = &old.p[0];
            pw_detect_ring_init(&c->ring);
            for (size_t j = k; j < ser.n; j++) {
                const pw_store_point_t *q = &ser.points[j];
                pw_detect_point_t pt = {(int64_t)q->ts_ms, q->allocs, q->frees,
                                        q->diff,           q->bytes,  p0->boot};
                pw_detect_ring_push(&c->ring, &pt);
            }
            /* the seed point's counters are made up (allocs = diff, frees 0): between real
             * ones they would read as a reset */
            size_t j0 = old.n > 1 && old.p[0].frees == 0 && old.p[0].allocs == old.p[0].diff;
            for (size_t j = j0; j < old.n; j++)
                pw_detect_ring_push(&c->ring, &old.p[j]);
            c->backoff = 1;
            c->ring.dirty = 1;
            s->evaluated_ts = INT64_MIN; /* judged again with its history */
        }
        pw_store_series_free(&ser);
    }
}

static int restore_some(run_t *rn, uint64_t slice_ns)
{
    uint64_t t0 = uv_hrtime();
    while (rn->restore_cursor < rn->fleet->n && uv_hrtime() - t0 < slice_ns) {
        const pw_host_t *h = rn->fleet->hosts[rn->restore_cursor++];
        host_state_t *s = state_of(rn, h);
        if (s)
            restore_host(rn, h, s);
    }
    return rn->restore_cursor < rn->fleet->n;
}

/* ---- the pass ----------------------------------------------------------------------------- */

/* Starts gathering the hosts with something to evaluate into rn->job. Returns 0, or PW_ENOMEM
 * (no pass this time). */
static int collect_start(run_t *rn)
{
    rn->n_job = 0;
    rn->collect_cursor = 0;
    if (rn->cap_job < rn->fleet->n) {
        host_state_t **v = pw_realloc(rn->job, rn->fleet->n * sizeof(*v));
        if (v == NULL)
            return PW_ENOMEM;
        rn->job = v;
        rn->cap_job = rn->fleet->n;
    }
    rn->collecting = 1;
    return 0;
}

/* Gathers hosts (limits refreshed from the fleet view) for up to budget_ns of loop time: 10,000
 * hosts take ~0.1 s, longer than an API request should wait. Hosts only join the fleet (a
 * retired host keeps its index), so the cursor stays valid between slices; a host that joins
 * meanwhile waits for the next pass. Returns 1 while hosts remain. */
static int collect_some(run_t *rn, uint64_t budget_ns)
{
    uint64_t t0 = uv_hrtime();
    size_t end = rn->fleet->n < rn->cap_job ? rn->fleet->n : rn->cap_job;
    while (rn->collect_cursor < end) {
        const pw_host_t *h = rn->fleet->hosts[rn->collect_cursor++];
        if (pw_host_retired(h))
            continue; /* retired by an operator: nothing to judge */
        host_state_t *s = state_of(rn, h);
        if (s == NULL)
            continue;
        restore_host(rn, h, s);
        follow_name(rn, s, h, clock_ms(rn));
        uint64_t np = pw_host_limit(h, PW_POOL_NONPAGED), pg = pw_host_limit(h, PW_POOL_PAGED);
        uv_mutex_lock(&s->mu);
        if (s->pub.n_suspects > 0)
            extend_suspects(rn, s);
        int due = s->last_ts != s->evaluated_ts || np != s->np_limit || pg != s->pg_limit ||
                  !s->have_limits;
        s->np_limit = np;
        s->pg_limit = pg;
        s->have_limits = 1;
        uv_mutex_unlock(&s->mu);
        if (due && s->n_rows + s->recent.n > 0)
            rn->job[rn->n_job++] = s;
        if ((rn->collect_cursor & 63) == 0 && uv_hrtime() - t0 >= budget_ns)
            break;
    }
    rn->collecting = rn->collect_cursor < end;
    return rn->collecting;
}

void pw_analysis_run_pass(pw_analysis_run_t *rn)
{
    if (rn == NULL || rn->working)
        return;
    rn->pass_t0 = uv_hrtime();
    if (collect_start(rn) == 0)
        while (collect_some(rn, UINT64_MAX))
            ;
    work_cb(&(uv_work_t){.data = rn});
    publish(rn);
}

static void run_free(run_t *rn);
static void on_rename(void *arg, const pw_host_t *h, const char *from);

static void after_work_cb(uv_work_t *w, int status)
{
    run_t *rn = w->data;
    (void)status;
    rn->working = 0;
    if (!rn->closing) {
        publish_start(rn); /* the timer goes on with it, a slice a tick */
        publish_some(rn, PUBLISH_SLICE_NS);
    } else if (rn->timer_closed && !rn->kept_saving) {
        run_free(rn);
    }
}

/* One slice of gathering on the loop; once every host is gathered, the pass goes to the
 * thread pool (or, with nothing to judge, straight to publication). */
static void collect_tick(run_t *rn)
{
    uint64_t t0 = uv_hrtime();
    int more = collect_some(rn, PUBLISH_SLICE_NS);
    uint64_t spent = uv_hrtime() - t0;
    if (spent > rn->stats.max_loop_ns)
        rn->stats.max_loop_ns = spent;
    if (more)
        return;
    if (rn->n_job == 0) {
        publish_start(rn);
        publish_some(rn, PUBLISH_SLICE_NS);
        return;
    }
    rn->work.data = rn;
    if (uv_queue_work(rn->loop, &rn->work, work_cb, after_work_cb) == 0)
        rn->working = 1;
}

static void on_timer(uv_timer_t *t)
{
    run_t *rn = t->data;
    if (rn->working)
        return;
    if (rn->publishing) {
        publish_some(rn, PUBLISH_SLICE_NS);
        return;
    }
    if (rn->collecting) {
        collect_tick(rn);
        return;
    }
    if (restore_some(rn, 20ull * 1000000))
        return;
    uint64_t now = uv_now(rn->loop);
    /* an import is judged at once: its answer is already in the screens */
    if (now - rn->last_pass_ms < PASS_MS && !rn->import_due)
        return;
    rn->import_due = 0;
    rn->last_pass_ms = now;
    rn->pass_t0 = uv_hrtime();
    if (collect_start(rn) == 0)
        collect_tick(rn);
}

/* ---- life ---------------------------------------------------------------------------------- */

int pw_analysis_run_new(uv_loop_t *loop, pw_ingest_t *ing, const pw_analysis_opts_t *opts,
                        pw_analysis_run_t **out)
{
    run_t *rn = pw_calloc(1, sizeof(*rn));
    if (rn == NULL || pw_alert_set_new(&rn->alerts) != 0) {
        pw_free(rn);
        return PW_ENOMEM;
    }
    rn->loop = loop;
    rn->ing = ing;
    rn->fleet = pw_ingest_fleet(ing);
    rn->store = pw_ingest_store(ing);
    if (opts)
        rn->o = *opts;
    rn->o.alerts_path = NULL;
    pw_detect_opts_default(&rn->dopts);
    rn->dopts_live = rn->dopts;
    rn->dopts_live.min_points = LIVE_MIN_POINTS;
    pw_sample_init(&rn->table);
    if (opts && opts->alerts_path) {
        size_t n = strlen(opts->alerts_path) + 1;
        rn->alerts_path = pw_malloc(n);
        if (rn->alerts_path != NULL)
            memcpy(rn->alerts_path, opts->alerts_path, n);
    }
    if (rn->alerts_path != NULL) { /* logs what it restored */
        pw_alert_load_found(rn->alerts, rn->alerts_path, &rn->found, &rn->n_found);
        if (rn->n_found > 0)
            qsort(rn->found, rn->n_found, sizeof(*rn->found), cmp_found);
        rn->found_passes = FOUND_KEEP_PASSES;
    }
    if (opts && opts->kept_path) {
        size_t n = strlen(opts->kept_path) + 1;
        rn->kept_path = pw_malloc(n);
        if (rn->kept_path != NULL) {
            memcpy(rn->kept_path, opts->kept_path, n);
            rn->kept_mu_init = uv_mutex_init(&rn->kept_mu) == 0;
            rn->n_kept = pw_alert_load_kept(rn->kept_path, &rn->kept); /* logs what it read */
            rn->kept_passes = FOUND_KEEP_PASSES;
            publish_kept(rn);
            restore_pressure(rn);
        }
    }
    pw_ingest_on_sample(ing, on_sample, rn);
    pw_ingest_on_events(ing, on_events, rn);
    pw_ingest_on_rename(ing, on_rename, rn);
    if (loop != NULL) {
        uv_timer_init(loop, &rn->timer);
        rn->timer.data = rn;
        rn->last_pass_ms = uv_now(loop); /* the first pass PASS_MS after start */
        uv_timer_start(&rn->timer, on_timer, 100, 100);
    }
    *out = rn;
    return 0;
}

static void run_free(run_t *rn)
{
    pw_alert_set_free(rn->alerts);
    pw_free(rn->found);
    pw_free(rn->suspects);
    pw_free(rn->pub_v);
    pw_free(rn->job);
    pw_free(rn->alerts_path);
    pw_free(rn->kept_path);
    pw_free(rn->kept);
    pw_free(rn->kv);
    pw_free(rn->khv);
    if (rn->kept_mu_init)
        uv_mutex_destroy(&rn->kept_mu);
    for (size_t i = 0; i < rn->n_hs; i++)
        state_free(rn->hs[i]);
    pw_free(rn->hs);
    pw_sample_close(&rn->table);
    pw_free(rn);
}

static void on_timer_closed(uv_handle_t *h)
{
    run_t *rn = h->data;
    rn->timer_closed = 1;
    if (!rn->working && !rn->kept_saving)
        run_free(rn);
}

/* What <store.path>.suspects.json keeps: the published suspects' rings, verdicts and big-pool
 * snapshots (the most urgent KEPT_MAX) and every judged host's pressure, copied into *v and *hv
 * (owned by the caller: pw_free), for apply_kept, publish_kept and restore_pressure after a
 * restart. Returns 0 or PW_ENOMEM (logged). On the loop. */
static int build_kept(run_t *rn, pw_alert_kept_t **v_out, size_t *n_out,
                      pw_alert_kept_host_t **hv_out, size_t *nh_out)
{
    size_t cap = rn->n_suspects < KEPT_MAX ? rn->n_suspects : KEPT_MAX, n = 0, nh = 0;
    pw_alert_kept_t *v = pw_malloc((cap ? cap : 1) * sizeof(*v));
    pw_alert_kept_host_t *hv = pw_malloc((rn->n_hs ? rn->n_hs : 1) * sizeof(*hv));
    if (v == NULL || hv == NULL) {
        PW_LOG_WARN(MOD, "out of memory: the suspects' rings are not kept in %s", rn->kept_path);
        pw_free(v);
        pw_free(hv);
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < rn->n_suspects && n < cap; i++) {
        const pw_suspect_t *x = &rn->suspects[i];
        const pw_host_t *h = pw_fleet_find(rn->fleet, x->host);
        host_state_t *s = h != NULL && h->index < rn->n_hs ? rn->hs[h->index] : NULL;
        if (s == NULL || pw_host_retired(h))
            continue;
        uv_mutex_lock(&s->mu);
        const cand_t *c = cand_of(s, x->tag, x->tag_len, x->pool);
        if (c != NULL && c->ring.n > 0) {
            pw_alert_kept_t *k = &v[n++];
            memset(k, 0, sizeof(*k));
            snprintf(k->host, sizeof(k->host), "%s", s->name);
            memcpy(k->tag, x->tag, x->tag_len);
            k->tag_len = x->tag_len;
            k->pool = x->pool;
            k->ring = c->ring;
            k->has_suspect = 1;
            k->rank = (uint32_t)i;
            k->suspect = *x;
            const pw_bigpool_snap_t *bp = pw_host_big_pool(h, x->tag, x->tag_len);
            if (bp != NULL && x->tag_len == 4) {
                k->has_big_pool = 1;
                k->big_pool = *bp;
            }
        }
        uv_mutex_unlock(&s->mu);
    }
    /* every judged host's pressure as published (its ETA until the first pass after a start) */
    for (size_t i = 0; i < rn->n_hs && i < rn->fleet->n; i++) {
        const host_state_t *s = rn->hs[i];
        if (s == NULL || !s->judged || !s->pub.have_pressure ||
            pw_host_retired(rn->fleet->hosts[i]))
            continue;
        pw_alert_kept_host_t *k = &hv[nh++];
        memset(k, 0, sizeof(*k));
        snprintf(k->host, sizeof(k->host), "%s", rn->fleet->hosts[i]->name);
        k->pub = s->pub;
        k->pub.n_suspects = 0;
    }
    *v_out = v;
    *n_out = n;
    *hv_out = hv;
    *nh_out = nh;
    return 0;
}

/* What a copy holds that a restart would show differently: each kept suspect's identity, rank,
 * ring (length, newest point), verdict and big-pool snapshot time; each host's pressure (the
 * sample it judged, levels and ETAs). FNV-1a. */
static uint64_t kept_signature(const pw_alert_kept_t *v, size_t n, const pw_alert_kept_host_t *hv,
                               size_t nh)
{
    uint64_t h = 1469598103934665603ULL;
#define MIX(p, len)                                                                                \
    for (size_t b_ = 0; b_ < (len); b_++)                                                          \
        h = (h ^ ((const uint8_t *)(p))[b_]) * 1099511628211ULL;
    for (size_t i = 0; i < n; i++) {
        const pw_alert_kept_t *k = &v[i];
        const pw_detect_point_t *last = k->ring.n ? &k->ring.p[k->ring.n - 1] : NULL;
        MIX(k->host, strlen(k->host))
        MIX(k->tag, k->tag_len)
        MIX(&k->pool, sizeof(k->pool))
        MIX(&k->rank, sizeof(k->rank))
        MIX(&k->ring.n, sizeof(k->ring.n))
        if (last != NULL)
            MIX(last, sizeof(*last))
        MIX(&k->suspect.d.rate_bytes_per_h, sizeof(double))
        MIX(k->suspect.d.evidence, strlen(k->suspect.d.evidence))
        MIX(&k->suspect.eta_ms, sizeof(k->suspect.eta_ms))
        MIX(&k->big_pool.taken_ms, sizeof(k->big_pool.taken_ms))
    }
    for (size_t i = 0; i < nh; i++) {
        const pw_analysis_host_t *a = &hv[i].pub;
        MIX(hv[i].host, strlen(hv[i].host))
        MIX(&a->judged_ts, sizeof(a->judged_ts))
        MIX(&a->np.level, sizeof(a->np.level))
        MIX(&a->np.eta_ms, sizeof(a->np.eta_ms))
        MIX(&a->pg.level, sizeof(a->pg.level))
        MIX(&a->pg.eta_ms, sizeof(a->pg.eta_ms))
    }
#undef MIX
    return h;
}

/* At a clean stop: what the file keeps, written now and last (after a background save still
 * running: kept_final stops one that has not written yet). */
static void save_kept(run_t *rn)
{
    pw_alert_kept_t *v;
    pw_alert_kept_host_t *hv;
    size_t n, nh;
    if (build_kept(rn, &v, &n, &hv, &nh) != 0)
        return;
    if (rn->kept_mu_init)
        uv_mutex_lock(&rn->kept_mu);
    pw_alert_save_kept(rn->kept_path, v, n, hv, nh);
    rn->kept_final = 1;
    if (rn->kept_mu_init)
        uv_mutex_unlock(&rn->kept_mu);
    pw_free(hv);
    pw_free(v);
}

/* The worker's part of a background save: JSON, write, fsync, rename (pw_alert_save_kept). */
static void kept_work_cb(uv_work_t *w)
{
    run_t *rn = w->data;
    uv_mutex_lock(&rn->kept_mu);
    int r =
        rn->kept_final ? 1 : pw_alert_save_kept(rn->kept_path, rn->kv, rn->kn, rn->khv, rn->khn);
    uv_mutex_unlock(&rn->kept_mu);
    if (r == 0)
        rn->kept_sig = rn->kept_new_sig; /* the loop reads it after kept_after_cb */
}

static void kept_after_cb(uv_work_t *w, int status)
{
    run_t *rn = w->data;
    if (status == 0 && rn->kept_sig == rn->kept_new_sig)
        rn->kept_saves++;
    pw_free(rn->kv);
    pw_free(rn->khv);
    rn->kv = NULL;
    rn->khv = NULL;
    rn->kept_saving = 0;
    if (rn->closing && rn->timer_closed && !rn->working)
        run_free(rn);
}

/* After a pass's publication: the kept file written again in the background when what it would
 * hold changed since it was last written, at most once per kept_every_ms. The loop's share is a
 * copy of the suspects' rings and the hosts' pressure (KEPT_MAX suspects at most) and its
 * signature; JSON, write and fsync run on a worker. */
static void kept_maybe_save(run_t *rn)
{
    uint64_t now = rn->loop != NULL ? uv_now(rn->loop) : 0;
    if (rn->loop == NULL || rn->kept_path == NULL || rn->o.kept_every_ms == 0 || rn->kept_saving ||
        rn->closing || !rn->kept_mu_init ||
        (rn->kept_checked_ms != 0 && now - rn->kept_checked_ms < rn->o.kept_every_ms))
        return;
    rn->kept_checked_ms = now;
    if (build_kept(rn, &rn->kv, &rn->kn, &rn->khv, &rn->khn) != 0)
        return;
    rn->kept_new_sig = kept_signature(rn->kv, rn->kn, rn->khv, rn->khn);
    if (rn->kept_new_sig == rn->kept_sig) { /* unchanged: nothing to write */
        pw_free(rn->kv);
        pw_free(rn->khv);
        rn->kv = NULL;
        rn->khv = NULL;
        return;
    }
    rn->kept_work.data = rn;
    if (uv_queue_work(rn->loop, &rn->kept_work, kept_work_cb, kept_after_cb) == 0) {
        rn->kept_saving = 1;
    } else {
        pw_free(rn->kv);
        pw_free(rn->khv);
        rn->kv = NULL;
        rn->khv = NULL;
    }
}

uint64_t pw_analysis_run_kept_saves(const pw_analysis_run_t *rn)
{
    return rn != NULL ? rn->kept_saves : 0;
}

void pw_analysis_run_close(pw_analysis_run_t *rn)
{
    if (rn == NULL)
        return;
    if (rn->alerts_dirty && rn->alerts_path != NULL)
        save_alerts(rn);
    if (rn->kept_path != NULL)
        save_kept(rn);
    pw_ingest_on_sample(rn->ing, NULL, NULL);
    pw_ingest_on_events(rn->ing, NULL, NULL);
    pw_ingest_on_rename(rn->ing, NULL, NULL);
    if (rn->loop == NULL) {
        run_free(rn);
        return;
    }
    rn->closing = 1;
    uv_timer_stop(&rn->timer);
    if (rn->working) {
        /* the job finishes on the pool; the state is freed after it (uv_cancel may fail once
         * the work started, so wait for it on the loop instead) */
        uv_cancel((uv_req_t *)&rn->work);
    }
    if (rn->kept_saving) /* the clean stop's save above is newer: a save not started is not needed
                          */
        uv_cancel((uv_req_t *)&rn->kept_work);
    uv_close((uv_handle_t *)&rn->timer, on_timer_closed);
}

int64_t pw_analysis_run_first_pass_in_ms(const pw_analysis_run_t *rn)
{
    if (rn == NULL || rn->passes > 0 || rn->loop == NULL)
        return -1;
    uint64_t now = uv_now(rn->loop), due = rn->last_pass_ms + PASS_MS;
    return due > now ? (int64_t)(due - now) : 0;
}

/* ingest's rename observer: the host's suspects are listed under its new name from now on (the
 * published list too, and one being built), not from the next pass on. */
static void on_rename(void *arg, const pw_host_t *h, const char *from)
{
    run_t *rn = arg;
    if (h->index >= rn->n_hs || rn->hs[h->index] == NULL)
        return;
    if (!follow_name(rn, rn->hs[h->index], h, clock_ms(rn)))
        return;
    /* the lists already published (and one being built) name it by its old name; a reader's
     * order by host of the published one (remote write) is stale now: a new number */
    int changed = 0;
    for (size_t i = 0; i < rn->n_suspects; i++)
        if (strcmp(rn->suspects[i].host, from) == 0) {
            snprintf(rn->suspects[i].host, sizeof(rn->suspects[i].host), "%s", h->name);
            changed = 1;
        }
    rn->suspects_gen += changed;
    for (size_t i = 0; i < rn->pub_n; i++)
        if (strcmp(rn->pub_v[i].host, from) == 0)
            snprintf(rn->pub_v[i].host, sizeof(rn->pub_v[i].host), "%s", h->name);
}

size_t pw_analysis_run_suspects(const pw_analysis_run_t *rn, const pw_suspect_t **out)
{
    *out = rn ? rn->suspects : NULL;
    return rn ? rn->n_suspects : 0;
}

uint64_t pw_analysis_run_suspects_gen(const pw_analysis_run_t *rn)
{
    return rn ? rn->suspects_gen : 0;
}

const pw_alert_set_t *pw_analysis_run_alerts(const pw_analysis_run_t *rn)
{
    return rn ? rn->alerts : NULL;
}

const pw_analysis_host_t *pw_analysis_run_host(const pw_analysis_run_t *rn, const pw_host_t *h)
{
    if (rn == NULL || h->index >= rn->n_hs || rn->hs[h->index] == NULL || !rn->hs[h->index]->judged)
        return NULL;
    return &rn->hs[h->index]->pub;
}

int64_t pw_analysis_run_empty_last(const pw_analysis_run_t *rn, const pw_host_t *h, int pool)
{
    if (rn == NULL || pool < 0 || pool > 1 || h->index >= rn->n_hs || rn->hs[h->index] == NULL)
        return 0;
    return rn->hs[h->index]->empty_last[pool];
}

void pw_analysis_run_stats(const pw_analysis_run_t *rn, pw_analysis_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (rn != NULL)
        *out = rn->stats;
}

int pw_analysis_run_feed(pw_analysis_run_t *rn, const pw_host_t *h, const pw_sample_t *t,
                         const uint8_t *boot, size_t boot_len)
{
    host_state_t *s = state_of(rn, h);
    if (s == NULL)
        return PW_ENOMEM;
    uv_mutex_lock(&s->mu);
    if (s->n_rows == 0)
        s->dense = host_dense(h);
    feed(s, t, t->n, entry_row, (int64_t)t->timestamp_ms, boot, boot_len, &t->totals, NULL, 0);
    uv_mutex_unlock(&s->mu);
    return 0;
}

size_t pw_analysis_run_state_bytes(const pw_analysis_run_t *rn, const pw_host_t *h)
{
    if (rn == NULL || h->index >= rn->n_hs || rn->hs[h->index] == NULL)
        return 0;
    const host_state_t *s = rn->hs[h->index];
    return sizeof(*s) + s->cap_rows * sizeof(row_t) + s->n_slots * sizeof(uint32_t) + s->tags_cap +
           s->cap_cands * sizeof(cand_t);
}

int pw_analysis_run_publish(pw_analysis_run_t *rn, const pw_suspect_t *s, size_t n)
{
    pw_suspect_t *v = pw_malloc((n ? n : 1) * sizeof(*v));
    if (v == NULL)
        return PW_ENOMEM;
    if (n)
        memcpy(v, s, n * sizeof(*v));
    pw_free(rn->suspects);
    rn->suspects = v;
    rn->n_suspects = rn->cap = n;
    rn->suspects_gen++;
    return 0;
}

pw_alert_set_t *pw_analysis_run_alert_set(pw_analysis_run_t *rn)
{
    return rn->alerts;
}

int pw_analysis_run_set_host(pw_analysis_run_t *rn, const pw_host_t *h,
                             const pw_analysis_host_t *res)
{
    host_state_t *s = state_of(rn, h);
    if (s == NULL)
        return PW_ENOMEM;
    s->pub = *res;
    s->judged = 1;
    return 0;
}
