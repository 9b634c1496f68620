/* bench_detect.c: the detection evaluation: a labelled suite fed through the collector's own
 * paths (ingest, the store, the analysis pass of collector/analysis/analysis_run.c), compared in
 * the same run with a plain Prometheus predict_linear-style threshold rule.
 *
 * Cases
 *  - simulated presets (agent/source_sim.h, ground truth from pw_sim_ground_truth: linear,
 *    step and bursty events are leaks; caches and flat decoys are not): steady (hosts 0-1),
 *    leak-linear, leak-step, leak-bursty, leak-slow, cache-plateau, ddk-2003 (the Ddk story:
 *    Windows Server 2003 x86 /3GB, 128 MB nonpaged limit), fleet-small (8 hosts, host 3
 *    leaks). 10 s sampling, the preset's duration, start 2024-01-01 00:00 UTC (bursty leaks
 *    grow 08-18 UTC).
 *  - real captures (tests/fixtures/poolmon, tests/fixtures/slabinfo; labels from
 *    shared/data/README.md): every poolmon file is one case. Its system screens form a series
 *    (15 min apart, the replay default); session screens are separate views, each a single
 *    snapshot (its own case and host: the API's import would file every screen of a file under
 *    one host). case09 (Drsd, two screens before/after one print job) is labelled "Drsd"; every
 *    other capture is a single snapshot (or no poolmon at all: cases 18, 32 are rejected) whose
 *    right answer is "no suspect". The slabinfo dumps are all single snapshots (the README gives
 *    no before/after numbers for any of them): the right answer is "no suspect" (case22 is the
 *    negative control "leak not in slab", case31 reclaimable dentries, case24 the `broken`
 *    cache, case20/25 inode/dentry growth, case23/26 buffer_head). Each cache is a row:
 *    bytes = num_slabs * pagesperslab * 4096 (active_objs * objsize when absent), diff =
 *    active_objs.
 *  - case09 rebuilt: the printer-driver leak as a series, ASSUMING one print job every 10 min
 *    (the capture gives the per-job leak: allocs +177, frees +171, 6 blocks of 832 B), 10 s
 *    sampling, 8 h, streamed as a Windows agent would. Labelled Drsd.
 *
 * The product's paths, per case (one store, ingest and analysis per case, so a pass judges the
 * case's host only):
 *  - streamed cases (presets, case09 rebuilt): an agent's Hello (pw_ingest_hello: counter
 *    width, source kind and the pool limits the source reports) and every sample delta-encoded
 *    (pw_delta_encode), framed (pw_codec_pack_frame) and handed to pw_ingest_frame, as the
 *    session layer does; pw_ingest_commit before every pass (the collector's group commit runs
 *    every 200 ms, i.e. before any pass).
 *  - captures: screens parsed into samples and imported with pw_ingest_import (counter width
 *    and content-hash boot id chosen as the API's POST /import does), then one pass at the time
 *    of the last screen (an import lands at once).
 *  - judging: pw_analysis_run_new (no loop) with a simulated clock (pw_analysis_opts_t.now_ms:
 *    the time of the sample the replay has reached, so `for` durations count sample time), and
 *    pw_analysis_run_pass every 30 s of sample time from the first sample on, the collector's
 *    cadence (the long pass is the product's: every 10th pass, the first included). Results
 *    only through pw_analysis_run_suspects (the rank is the product's order), pw_analysis_run_host
 *    (ETA) and pw_analysis_run_alerts (pressure: NonpagedPoolPressure warning / critical firing).
 *    Store: SQLite ":memory:" per case (PW_DETECT_STORE=DIR puts each case's store file
 *    in DIR instead; the file is removed after the case).
 *
 * Baseline ("predict_linear", a comparison rule, not the product; it sees the samples as they
 * are fed): for every row, the least-squares slope of bytes over the last hour (at least 30 min
 * of points) times 24 h >= 1 MiB, held for 10 min (a `for: 10m` rule); for the host:
 * predict_linear(nonpaged[1h], 4h) >= limit. Evaluated at the product's pass times (captures:
 * at every screen after the first and at the end).
 *
 * Scoring, per (case, host, tag, pool) row: "final" = suspect in the last pass of the case
 * (what an operator sees at the end; caches have levelled off by then); "any" = suspect in any
 * pass (every alert that went out). precision = TP / (TP + FP), recall = TP / leaks. Time to
 * flag = first pass that flags the leak row minus the first sample where it had grown.
 * real_cases_top1 = fraction of real cases (captures, case09 rebuilt, ddk-2003) whose
 * top-ranked final suspect is the labelled tag ("none" when the label is no suspect).
 * PW_DETECT_PASS_S overrides the pass period (seconds of sample time; default 30).
 *
 * Cost: the product's pass on one 1,000-row host (pressure Theil-Sen on 2 h of totals, up to 16
 * candidates read back from the store and judged) takes tens of ms of CPU; at a pass every 30 s
 * of sample time that is about 45 min of CPU per simulated day, so the whole suite (38 host-days)
 * runs for many hours. `bench_detect PRESET` runs only the presets whose name contains PRESET
 * (no captures); `bench_detect captures` runs only the captures and case09 rebuilt;
 * `bench_detect walk` and `bench_detect still` only the labelled captures of that noise regime
 * (seconds).
 *
 * End to end (`bench_detect e2e`, and part of the whole run unless PW_DETECT_E2E=0): the labelled
 * captures also go through the real binaries — `poolwatch import` into a running
 * poolwatch-collector, replay and sim agents over mutual TLS, `poolwatch leaks --json` — and the
 * API's lists are compared with the in-process ones (see "end to end" below).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alert.h"
#include "alloc.h"
#include "analysis.h"
#include "analysis_run.h"
#include "buf.h"
#include "codec.h"
#include "detect_gen.h"
#include "poolmon_layouts.h"
#include "delta.h"
#include "frame.h"
#include "ingest.h"
#include "poolmon_text.h"
#include "sample.h"
#include "slabinfo_text.h"
#include "source_sim.h"
#include "store.h"

#define SHORT_MS        (3600000LL)            /* the baseline rule's window (1 h) */
#define HOST_HIST       1024                   /* host totals kept for predict_linear */
#define START_MS        INT64_C(1704067200000) /* 2024-01-01 00:00:00 UTC */
#define PASS_MS         30000                  /* the collector's pass period */
#define HOST_NAME       "bench-host"
#define BASE_HORIZON_MS (24 * 3600000.0)
#define BASE_GROWTH     (1024.0 * 1024.0)
#define BASE_FOR_MS     (10 * 60000LL)

typedef struct {
    int64_t ts_ms;
    uint64_t bytes, diff;
} bpt_t;

typedef struct {
    bpt_t *p;
    size_t cap, head, n;
} ring_t;

static void ring_init(ring_t *r, size_t cap)
{
    r->p = pw_calloc(cap, sizeof(*r->p));
    if (r->p == NULL)
        abort();
    r->cap = cap;
    r->head = r->n = 0;
}

static void ring_push(ring_t *r, bpt_t v)
{
    r->p[(r->head + r->n) % r->cap] = v;
    if (r->n < r->cap)
        r->n++;
    else
        r->head = (r->head + 1) % r->cap;
}

static bpt_t *ring_at(ring_t *r, size_t i)
{
    return &r->p[(r->head + i) % r->cap];
}

typedef struct {
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len, pool;
    int leak;         /* label: 1 = leak */
    uint64_t base;    /* bytes at the first sample (for the onset) */
    int64_t onset_ms; /* first sample where a leak row had grown; -1 */
    ring_t s;         /* raw last hour, for the baseline rule */
    int64_t flag_ms;  /* first pass that flagged it, -1 */
    int final_flag;   /* flagged in the last pass */
    double final_score;
    int64_t bflag_ms, bcond_since; /* baseline */
    int bfinal;
    int64_t flag_last_ms; /* last pass that flagged it */
    size_t flag_passes;   /* passes that flagged it */
    char evidence[256];   /* the engine's words when last flagged */
    double flag_rate;     /* growth rate (B/h) when first flagged */
} row_t;

typedef struct {
    const char *name;
    int real;           /* counts for real_cases_top1 */
    const char *expect; /* label shown: tag or "none" */
    row_t *rows;
    size_t n, cap;
    ring_t np; /* host nonpaged totals (in .bytes), for predict_linear */
    uint64_t np_limit;
    int64_t first_ms, last_ms, last_pass_ms;
    int64_t pass_ms, next_pass;
    double warn_mb, crit_mb, base_near_mb; /* nonpaged MB when first fired, -1 */
    int64_t warn_ms, crit_ms, base_near_ms;
    double warn_eta_h;
    size_t top; /* row of the top-ranked suspect of the last pass, or SIZE_MAX */
    /* the product */
    char path[512]; /* store file, "" = :memory: */
    pw_store_t *store;
    pw_ingest_t *ing;
    pw_analysis_run_t *an;
    pw_host_t *host;
    int64_t clock_ms; /* the analysis' clock: the time the replay has reached */
    pw_delta_enc_t enc;
    int have_enc;
    pw_buf_t frame;
    int session;
    uint64_t seq;
    size_t passes, suspects_seen;
    double pass_s, ingest_s;
    char listed[512]; /* the last pass' suspects in the product's order: "tag/pool,..." */
} case_t;

typedef struct {
    size_t tp, fp, fn, tp_any, fp_any;
    size_t btp, bfp, bfn, btp_any, bfp_any;
    double minutes[256], bminutes[256];
    size_t n_min, n_bmin;
    size_t real, real_ok, breal_ok;
} score_t;

static score_t S;
static score_t *extra;   /* also scored into this (the labelled suite's shape), when set */
static int verbose = 1;  /* per-case lines (the labelled suite prints only its misses) */
static int trace_points; /* PW_DETECT_TRACE=points: false suspects' points too */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t tag_alerts_fired; /* PoolTagLeak transitions to firing, every case */

static void on_alert(void *arg, const pw_alert_transition_t *tr, const char *name,
                     const char *summary, const char *description, int resend)
{
    (void)arg, (void)name, (void)summary, (void)description;
    if (!resend && tr->to == PW_ALERT_FIRING && tr->key.tag[0] != '\0')
        tag_alerts_fired++;
}

static int64_t case_clock(void *arg)
{
    return ((case_t *)arg)->clock_ms;
}

static void die(const char *what, int r, const pw_diag_t *d)
{
    fprintf(stderr, "bench_detect: %s: %s%s%s\n", what, pw_strerror(r), d ? ": " : "",
            d ? d->msg : "");
    exit(1);
}

static int64_t pass_period_ms(void)
{
    const char *e = getenv("PW_DETECT_PASS_S");
    return e && atoll(e) > 0 ? atoll(e) * 1000 : PASS_MS;
}

/* A case with its own store, ingest and analysis pass on the case's clock. */
static void case_init(case_t *c, const char *name, int real, const char *expect)
{
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->real = real;
    c->expect = expect;
    c->pass_ms = pass_period_ms();
    c->first_ms = c->last_pass_ms = -1;
    c->top = SIZE_MAX;
    ring_init(&c->np, HOST_HIST);
    c->warn_mb = c->crit_mb = c->base_near_mb = -1;
    c->warn_ms = c->crit_ms = c->base_near_ms = -1;
    c->warn_eta_h = -1;
    const char *dir = getenv("PW_DETECT_STORE");
    if (dir != NULL && dir[0] != '\0') {
        static unsigned k;
        snprintf(c->path, sizeof(c->path), "%s/bench_detect.%ld.%u.db", dir, (long)getpid(), k++);
    }
    pw_buf_init(&c->frame, PW_FRAME_MAX_DEFAULT + 16);
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_store_open(c->path[0] ? c->path : ":memory:", NULL, &c->store, &d);
    if (r != 0)
        die("store", r, &d);
    if ((r = pw_ingest_new(c->store, &c->ing, &d)) != 0)
        die("ingest", r, &d);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = case_clock;
    o.now_arg = c;
    o.on_alert = on_alert;
    if ((r = pw_analysis_run_new(NULL, c->ing, &o, &c->an)) != 0)
        die("analysis", r, NULL);
}

static row_t *row_find(case_t *c, const uint8_t *tag, size_t len, int pool)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].tag_len == len && c->rows[i].pool == pool &&
            memcmp(c->rows[i].tag, tag, len) == 0)
            return &c->rows[i];
    return NULL;
}

static row_t *row_get(case_t *c, size_t hint, const pw_entry_t *e)
{
    if (hint < c->n && c->rows[hint].tag_len == e->tag_len && c->rows[hint].pool == e->pool &&
        memcmp(c->rows[hint].tag, e->tag, e->tag_len) == 0)
        return &c->rows[hint];
    row_t *f = row_find(c, e->tag, e->tag_len, e->pool);
    if (f != NULL)
        return f;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->rows = pw_realloc(c->rows, c->cap * sizeof(*c->rows));
        if (c->rows == NULL)
            abort();
    }
    row_t *r = &c->rows[c->n++];
    memset(r, 0, sizeof(*r));
    memcpy(r->tag, e->tag, e->tag_len);
    r->tag_len = e->tag_len;
    r->pool = e->pool;
    r->base = e->bytes;
    r->onset_ms = r->flag_ms = r->bflag_ms = r->bcond_since = -1;
    ring_init(&r->s, 400); /* an hour at 10 s, and some */
    return r;
}

static void label(case_t *c, const char *tag, int pool)
{
    size_t len = strlen(tag);
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].pool == pool && c->rows[i].tag_len == len &&
            memcmp(c->rows[i].tag, tag, len) == 0)
            c->rows[i].leak = 1;
}

/* ---- the baseline rule (the comparison, not the product) ---------------------------------- */

static void baseline(case_t *c, int64_t now)
{
    if (c->np_limit > 0 && c->np.n > 0 && c->base_near_ms < 0) {
        /* predict_linear(nonpaged[1h], 4h) >= limit */
        double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
        for (size_t i = 0; i < c->np.n; i++) {
            bpt_t *q = ring_at(&c->np, i);
            if (q->ts_ms < now - SHORT_MS)
                continue;
            double x = (double)(q->ts_ms - now) / 1000.0, y = (double)q->bytes;
            sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
        }
        double den = k * sxx - sx * sx;
        if (k >= 3 && den > 0) {
            double b = (k * sxy - sx * sy) / den, a = (sy - b * sx) / k;
            if (a + b * 4 * 3600.0 >= (double)c->np_limit) {
                c->base_near_ms = now;
                c->base_near_mb = (double)ring_at(&c->np, c->np.n - 1)->bytes / 1048576.0;
            }
        }
    }
    for (size_t i = 0; i < c->n; i++) {
        row_t *r = &c->rows[i];
        r->bfinal = 0;
        double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
        int64_t first = -1;
        for (size_t j = 0; j < r->s.n; j++) {
            bpt_t *q = ring_at(&r->s, j);
            if (q->ts_ms < now - SHORT_MS)
                continue;
            if (first < 0)
                first = q->ts_ms;
            double x = (double)(q->ts_ms - now) / 3600000.0, y = (double)q->bytes;
            sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
        }
        double den = k * sxx - sx * sx;
        int cond = 0;
        if (k >= 3 && den > 0 && now - first >= 30 * 60000LL) {
            double slope = (k * sxy - sx * sy) / den; /* bytes per hour */
            cond = slope * (BASE_HORIZON_MS / 3600000.0) >= BASE_GROWTH;
        }
        if (!cond) {
            r->bcond_since = -1;
            continue;
        }
        if (r->bcond_since < 0)
            r->bcond_since = now;
        if (now - r->bcond_since >= BASE_FOR_MS) {
            r->bfinal = 1;
            if (r->bflag_ms < 0)
                r->bflag_ms = now;
        }
    }
}

/* ---- the product's pass ----------------------------------------------------------------- */

static pw_alert_state_t np_alert(const case_t *c, const char *severity)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", HOST_NAME);
    snprintf(k.pool, sizeof(k.pool), "nonpaged");
    snprintf(k.severity, sizeof(k.severity), "%s", severity);
    return pw_alert_state(pw_analysis_run_alerts(c->an), &k, NULL);
}

/* One pass of the product at sample time `now`, and what it says, row by row. */
/* Appends "tag/pool" (trailing blanks of the tag dropped, as poolmon pads 4-byte tags) to a
 * comma-separated list; the end-to-end part builds the same list from the API's JSON. */
static void listed_add(char *list, size_t cap, const uint8_t *tag, size_t len, const char *pool)
{
    char t[PW_TAG_MAX * 4 + 1];
    pw_tag_format(tag, len, t, sizeof(t));
    for (size_t k = strlen(t); k > 0 && t[k - 1] == ' '; k--)
        t[k - 1] = '\0';
    size_t n = strlen(list);
    snprintf(list + n, cap - n, "%s%s/%s", n ? "," : "", t, pool);
}

static void pass(case_t *c, int64_t now)
{
    pw_diag_t d;
    int64_t r = pw_ingest_commit(c->ing, &d);
    if (r < 0)
        die("commit", (int)r, &d);
    c->clock_ms = now;
    double t0 = now_s();
    pw_analysis_run_pass(c->an);
    c->pass_s += now_s() - t0;
    c->passes++;
    c->last_pass_ms = now;

    for (size_t i = 0; i < c->n; i++) {
        c->rows[i].final_flag = 0;
        c->rows[i].final_score = 0;
    }
    c->top = SIZE_MAX;
    c->listed[0] = '\0';
    const pw_suspect_t *sus;
    size_t ns = pw_analysis_run_suspects(c->an, &sus);
    for (size_t k = 0; k < ns; k++) {
        const pw_suspect_t *s = &sus[k];
        listed_add(c->listed, sizeof(c->listed), s->tag, s->tag_len, pw_pool_name(s->pool));
        if (getenv("PW_DETECT_TRACE") != NULL)
            printf("  trace %s pass %zu: %.4s %s score %.2f: %s\n", c->name, c->passes,
                   (const char *)s->tag, pw_detect_verdict_name(s->d.verdict), s->d.score,
                   s->d.evidence);
        row_t *w = row_find(c, s->tag, s->tag_len, s->pool);
        if (w == NULL) {
            char t[PW_TAG_MAX * 4 + 1];
            pw_tag_format(s->tag, s->tag_len, t, sizeof(t));
            printf("  %s: suspect %s %s is no row the bench fed\n", c->name, t,
                   pw_pool_name(s->pool));
            continue;
        }
        if (c->top == SIZE_MAX)
            c->top = (size_t)(w - c->rows); /* the product's order: score descending */
        c->suspects_seen++;
        if (w->flag_ms < 0) {
            w->flag_ms = now;
            w->flag_rate = s->d.rate_bytes_per_h;
        }
        w->flag_last_ms = now;
        w->flag_passes++;
        w->final_flag = 1;
        w->final_score = s->d.score;
        snprintf(w->evidence, sizeof(w->evidence), "%s", s->d.evidence);
    }

    /* pressure: the product's NonpagedPoolPressure alerts */
    if (c->np_limit > 0 && c->np.n > 0) {
        double used = (double)ring_at(&c->np, c->np.n - 1)->bytes / 1048576.0;
        if (c->warn_ms < 0 && np_alert(c, "warning") == PW_ALERT_FIRING) {
            c->warn_ms = now;
            c->warn_mb = used;
            const pw_analysis_host_t *hr = pw_analysis_run_host(c->an, c->host);
            if (hr != NULL && hr->have_pressure && hr->np.eta_ms >= 0)
                c->warn_eta_h = (double)hr->np.eta_ms / 3600000.0;
        }
        if (c->crit_ms < 0 && np_alert(c, "critical") == PW_ALERT_FIRING) {
            c->crit_ms = now;
            c->crit_mb = used;
        }
    }
    baseline(c, now);
}

/* The bench's own view of a sample: rows, onsets, the baseline's series. */
static void track(case_t *c, const pw_sample_t *s)
{
    int64_t ts = (int64_t)s->timestamp_ms;
    for (size_t i = 0; i < s->n; i++) {
        const pw_entry_t *e = &s->entries[i];
        row_t *r = row_get(c, i, e);
        ring_push(&r->s, (bpt_t){ts, e->bytes, e->diff});
        if (r->onset_ms < 0 && e->bytes > r->base)
            r->onset_ms = ts;
    }
    ring_push(&c->np, (bpt_t){ts, s->totals.nonpaged_bytes, 0});
    if (c->first_ms < 0)
        c->first_ms = ts;
    c->last_ms = ts;
}

/* An agent's Hello for the case's host. */
static void stream_hello_boot(case_t *c, const pw_source_info_t *in, const char *boot)
{
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT,
                             pp = POOLWATCH__V1__POOL_LIMIT__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.host_name = HOST_NAME;
    h.agent_id.data = (uint8_t *)"agent:bench_detect";
    h.agent_id.len = 18;
    h.boot_id.data = (uint8_t *)(uintptr_t)boot;
    h.boot_id.len = strlen(boot);
    h.os_family = (char *)(uintptr_t)in->os_family;
    h.os_version = (char *)(uintptr_t)in->os_version;
    h.os_build = in->os_build;
    h.arch = (char *)(uintptr_t)in->arch;
    h.agent_version = "bench";
    h.source_kind = (Poolwatch__V1__SourceKind)in->kind;
    h.counter_width = in->counter_width ? in->counter_width : 64;
    h.physical_memory_bytes = in->physical_memory_bytes;
    np.bytes = in->nonpaged_limit.bytes;
    np.source = (Poolwatch__V1__LimitSource)in->nonpaged_limit.source;
    np.detail = (char *)(uintptr_t)in->nonpaged_limit.detail;
    pp.bytes = in->paged_limit.bytes;
    pp.source = (Poolwatch__V1__LimitSource)in->paged_limit.source;
    pp.detail = (char *)(uintptr_t)in->paged_limit.detail;
    h.nonpaged_limit = &np;
    h.paged_limit = &pp;
    h.boot_time_ms = in->boot_time_ms;
    h.interval_ms = 10000;
    pw_ingest_hello_res_t res;
    pw_diag_t d;
    int r = pw_ingest_hello(c->ing, &h, HOST_NAME, &c->session, &res, &d);
    if (r != 0)
        die("hello", r, &d);
    c->host = res.host;
    c->np_limit = c->host->nonpaged_limit_bytes; /* as the collector filed it */
    if (c->have_enc)
        pw_delta_enc_close(&c->enc);
    if ((r = pw_delta_enc_init(&c->enc, h.counter_width)) != 0)
        die("encoder", r, NULL);
    c->have_enc = 1;
}

static void stream_hello(case_t *c, const pw_source_info_t *in)
{
    stream_hello_boot(c, in, "boot:1");
}

/* One sample as the host's agent sends it: seq, delta, frame, pw_ingest_frame; a pass when the
 * replay has reached the next pass time. */
static void stream(case_t *c, pw_sample_t *s)
{
    track(c, s);
    double t0 = now_s();
    s->seq = ++c->seq;
    const Poolwatch__V1__Sample *msg;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_delta_encode(&c->enc, s, 0, &msg, &d);
    if (r != 0)
        die("encode", r, &d);
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_SAMPLE;
    env.sample = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    pw_buf_reset(&c->frame);
    if ((r = pw_codec_pack_frame(&env, PW_FRAME_MAX_DEFAULT, &c->frame)) != 0)
        die("frame", r, NULL);
    pw_ingest_frame_res_t res;
    int store_failed;
    r = pw_ingest_frame(c->ing, c->host, msg, c->frame.data + 4, c->frame.len - 4, &res,
                        &store_failed, &d);
    if (r != 0)
        die(store_failed ? "store put" : "ingest frame", r, &d);
    c->ingest_s += now_s() - t0;
    int64_t ts = (int64_t)s->timestamp_ms;
    if (c->next_pass == 0)
        c->next_pass = ts + c->pass_ms;
    if (ts >= c->next_pass) {
        pass(c, ts);
        c->next_pass += c->pass_ms;
    }
}

/* The end of a streamed case: a last pass at the last sample unless one ran there. */
static void stream_end(case_t *c)
{
    if (c->last_pass_ms != c->last_ms && c->first_ms >= 0)
        pass(c, c->last_ms);
}

/* A capture: its screens imported as the API's POST /import does (32-bit counters unless a
 * value needs 64, boot id = the content hash), then one pass at the last screen's time. The
 * baseline rule is evaluated at every screen after the first, as it would watch them arrive.
 * `key`/`key_len`: the bytes the content hash is taken over. */
static void import(case_t *c, pw_sample_t *ss, size_t n, unsigned width, const void *key,
                   size_t key_len)
{
    for (size_t i = 0; i < n; i++) {
        track(c, &ss[i]);
        if (i > 0)
            baseline(c, (int64_t)ss[i].timestamp_ms);
    }
    if (n == 0)
        return;
    char boot_id[40];
    uint64_t fnv = 1469598103934665603ull;
    for (size_t i = 0; i < key_len; i++)
        fnv = (fnv ^ ((const uint8_t *)key)[i]) * 1099511628211ull;
    snprintf(boot_id, sizeof(boot_id), "import:%016" PRIx64, fnv);
    pw_ingest_import_res_t ir;
    pw_diag_t d;
    pw_diag_clear(&d);
    double t0 = now_s();
    int r = pw_ingest_import(c->ing, HOST_NAME, width, boot_id, ss, n, &ir, &d);
    c->ingest_s += now_s() - t0;
    if (r != 0)
        die("import", r, &d);
    c->host = pw_fleet_find(pw_ingest_fleet(c->ing), HOST_NAME);
    pass(c, c->last_ms);
}

static unsigned capture_width(const pw_sample_t *ss, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < ss[i].n; j++)
            if (ss[i].entries[j].allocs > UINT32_MAX || ss[i].entries[j].frees > UINT32_MAX ||
                ss[i].entries[j].diff > UINT32_MAX)
                return 64;
    return 32;
}

/* Scoring and the per-case line. */
static void tally(score_t *t, const row_t *r)
{
    if (r->leak) {
        t->tp += r->final_flag;
        t->fn += !r->final_flag;
        t->tp_any += r->flag_ms >= 0;
        t->btp += r->bfinal;
        t->bfn += !r->bfinal;
        t->btp_any += r->bflag_ms >= 0;
        if (r->flag_ms >= 0 && r->onset_ms >= 0 && t->n_min < 256)
            t->minutes[t->n_min++] = (double)(r->flag_ms - r->onset_ms) / 60000.0;
        if (r->bflag_ms >= 0 && r->onset_ms >= 0 && t->n_bmin < 256)
            t->bminutes[t->n_bmin++] = (double)(r->bflag_ms - r->onset_ms) / 60000.0;
    } else {
        t->fp += r->final_flag;
        t->fp_any += r->flag_ms >= 0;
        t->bfp += r->bfinal;
        t->bfp_any += r->bflag_ms >= 0;
    }
}

/* Scoring and the per-case line. Returns 1 when the case's top suspect is its label. */
static int finish(case_t *c)
{
    const row_t *top = c->top != SIZE_MAX ? &c->rows[c->top] : NULL, *btop = NULL;
    size_t leaks = 0, nflag = 0, nany = 0;
    for (size_t i = 0; i < c->n; i++) {
        const row_t *r = &c->rows[i];
        leaks += r->leak;
        if (r->bfinal && (btop == NULL || r->bflag_ms < btop->bflag_ms))
            btop = r;
        nflag += r->final_flag;
        nany += r->flag_ms >= 0;
        tally(&S, r);
        if (extra != NULL)
            tally(extra, r);
    }
    char tshow[PW_TAG_MAX * 4 + 1] = "none", bshow[PW_TAG_MAX * 4 + 1] = "none";
    if (top)
        pw_tag_format(top->tag, top->tag_len, tshow, sizeof(tshow));
    if (btop)
        pw_tag_format(btop->tag, btop->tag_len, bshow, sizeof(bshow));
    /* trailing blanks of 4-byte poolmon tags do not count in the comparison */
    char tt[sizeof(tshow)], bt[sizeof(bshow)];
    snprintf(tt, sizeof(tt), "%s", tshow);
    snprintf(bt, sizeof(bt), "%s", bshow);
    for (size_t k = strlen(tt); k > 0 && tt[k - 1] == ' '; k--)
        tt[k - 1] = 0;
    for (size_t k = strlen(bt); k > 0 && bt[k - 1] == ' '; k--)
        bt[k - 1] = 0;
    int ok = strcmp(tt, c->expect) == 0, bok = strcmp(bt, c->expect) == 0;
    if (c->real) {
        S.real++;
        S.real_ok += ok;
        S.breal_ok += bok;
    }
    if (extra != NULL) {
        extra->real++;
        extra->real_ok += ok;
    }
    /* time to flag of the (first) leak row */
    char ttd[64] = "-";
    for (size_t i = 0; i < c->n; i++) {
        const row_t *r = &c->rows[i];
        if (!r->leak)
            continue;
        if (r->flag_ms >= 0 && r->onset_ms >= 0)
            snprintf(ttd, sizeof(ttd), "%.1f min", (double)(r->flag_ms - r->onset_ms) / 60000.0);
        else
            snprintf(ttd, sizeof(ttd), "never");
        break;
    }
    /* rows flagged at some pass that are not leaks (transient suspects: every such alert went
     * out), with when and how many passes */
    for (size_t i = 0; i < c->n; i++) {
        row_t *r = &c->rows[i];
        if (r->leak || r->flag_ms < 0)
            continue;
        char t[PW_TAG_MAX * 4 + 1];
        pw_tag_format(r->tag, r->tag_len, t, sizeof(t));
        if (!verbose)
            continue;
        printf("  %s: not a leak, flagged %s: %s %s from %.2f h to %.2f h (%zu passes), %.0f B/h "
               "when first flagged, bytes %llu at the end: %s\n",
               c->name, r->final_flag ? "at the end" : "transiently", t, pw_pool_name(r->pool),
               (double)(r->flag_ms - START_MS) / 3600000.0,
               (double)(r->flag_last_ms - START_MS) / 3600000.0, r->flag_passes, r->flag_rate,
               (unsigned long long)(r->s.n ? ring_at(&r->s, r->s.n - 1)->bytes : 0), r->evidence);
        if (trace_points) /* PW_DETECT_TRACE=points: the row's outstanding allocations */
            for (size_t k = 0; k < r->s.n; k++)
                printf("%s%llu%s",
                       k ? " " : "    diff: ", (unsigned long long)ring_at(&r->s, k)->diff,
                       k + 1 < r->s.n ? "" : "\n");
    }
    if (!verbose && ok && nflag == (top != NULL))
        return ok;
    printf("CASE %-44s rows=%-5zu leaks=%zu expect=%-5s top=%-5s %s ttd=%-10s flagged_final=%zu "
           "flagged_ever=%zu | baseline top=%s %s\n",
           c->name, c->n, leaks, c->expect, tt, ok ? "OK  " : "MISS", ttd, nflag, nany, bt,
           bok ? "OK" : "MISS");
    if (c->np_limit > 0 && c->warn_ms >= 0)
        printf("  pressure %s: limit %.0f MB, warn fired at %.1f MB (day %.2f, ETA %.1f h), "
               "critical at %.1f MB (day %.2f); baseline predict_linear(1h,4h)>=limit at %.1f "
               "MB (day %.2f)\n",
               c->name, (double)c->np_limit / 1048576.0, c->warn_mb,
               (double)(c->warn_ms - START_MS) / 86400000.0, c->warn_eta_h, c->crit_mb,
               c->crit_ms >= 0 ? (double)(c->crit_ms - START_MS) / 86400000.0 : -1.0,
               c->base_near_mb,
               c->base_near_ms >= 0 ? (double)(c->base_near_ms - START_MS) / 86400000.0 : -1.0);
    return ok;
}

static void case_free(case_t *c)
{
    pw_analysis_run_close(c->an);
    pw_ingest_free(c->ing);
    pw_store_close(c->store);
    if (c->path[0]) {
        char p[600];
        unlink(c->path);
        snprintf(p, sizeof(p), "%s-wal", c->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s-shm", c->path);
        unlink(p);
    }
    if (c->have_enc)
        pw_delta_enc_close(&c->enc);
    pw_buf_close(&c->frame);
    for (size_t i = 0; i < c->n; i++)
        pw_free(c->rows[i].s.p);
    pw_free(c->rows);
    pw_free(c->np.p);
}

/* ---- simulated presets -------------------------------------------------------------------- */

static const char *only; /* argv[1]: run only the presets whose name contains it */
static double ddk_warn_mb = -1, ddk_base_mb = -1, ddk_crit_mb = -1;
static double linear_minutes = -1, linear_bminutes = -1;

static void run_sim_window(const char *preset, uint32_t host, int64_t start_ms, int64_t interval_ms,
                           int64_t backfill_ms, int64_t duration_ms, const char *label_name);

static void run_sim(const char *preset, uint32_t host)
{
    const pw_sim_preset_t *p = pw_sim_preset_find(preset);
    if (only != NULL && strstr(preset, only) == NULL)
        return;
    if (p == NULL) {
        printf("CASE %s: unknown preset\n", preset);
        return;
    }
    run_sim_window(preset, host, START_MS, 10000, 0, (int64_t)p->duration_ms, NULL);
}

/* A preset's host from start_ms for duration_ms at one sample every interval_ms; the first
 * backfill_ms arrive at once (an agent's --sim.backfill: no pass until its end), then a pass
 * every pass period. label_name: the case's name (NULL: "sim:PRESET/HOST"). */
static void run_sim_window(const char *preset, uint32_t host, int64_t start_ms, int64_t interval_ms,
                           int64_t backfill_ms, int64_t duration_ms, const char *label_name)
{
    const pw_sim_preset_t *p = pw_sim_preset_find(preset);
    if (p == NULL) {
        printf("CASE %s: unknown preset\n", preset);
        return;
    }
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = (uint64_t)start_ms;
    cfg.sim_interval_ms = (uint64_t)interval_ms;
    pw_sim_t *sim;
    pw_diag_t d;
    if (pw_sim_new(preset, host, &cfg, &sim, &d) != 0) {
        printf("CASE %s/%u: %s\n", preset, host, d.msg);
        return;
    }
    pw_source_info_t info;
    pw_sim_info(sim, &info);
    static char names[64][64];
    static size_t n_names;
    char *name = names[n_names++ % 64];
    if (label_name != NULL)
        snprintf(name, 64, "%s", label_name);
    else
        snprintf(name, 64, "sim:%s/%u", preset, host);
    const pw_sim_event_t *ev[16];
    size_t ne = pw_sim_ground_truth(p, host, ev, 16);
    const char *expect = "none";
    for (size_t i = 0; i < ne && i < 16; i++)
        if (ev[i]->kind <= PW_SIM_LEAK_BURSTY)
            expect = ev[i]->tag;
    /* trailing blanks as finish() compares */
    static char ex[64][8];
    char *e = ex[(n_names - 1) % 64];
    snprintf(e, 8, "%s", expect);
    for (size_t k = strlen(e); k > 0 && e[k - 1] == ' '; k--)
        e[k - 1] = 0;
    int real = strcmp(preset, "ddk-2003") == 0;
    case_t c;
    case_init(&c, name, real, e);
    stream_hello(&c, &info);
    if (backfill_ms > 0)
        c.next_pass = start_ms + backfill_ms; /* the backfill lands before the first pass */
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t n_samples = (uint64_t)(duration_ms / interval_ms) + 1;
    double t0 = now_s();
    for (uint64_t k = 0; k < n_samples; k++) {
        s.n = 0;
        if (pw_sim_next(sim, &s) != 0)
            abort();
        stream(&c, &s);
        if (k == 0)
            for (size_t i = 0; i < ne && i < 16; i++)
                if (ev[i]->kind <= PW_SIM_LEAK_BURSTY)
                    label(&c, ev[i]->tag, ev[i]->pool);
    }
    stream_end(&c);
    finish(&c);
    printf("  (%s: %llu samples through ingest in %.1f s, %zu passes in %.1f s, total %.1f s)\n",
           name, (unsigned long long)n_samples, c.ingest_s, c.passes, c.pass_s, now_s() - t0);
    if (real) {
        ddk_warn_mb = c.warn_mb;
        ddk_crit_mb = c.crit_mb;
        ddk_base_mb = c.base_near_mb;
    }
    if (strcmp(preset, "leak-linear") == 0)
        for (size_t i = 0; i < c.n; i++)
            if (c.rows[i].leak && c.rows[i].onset_ms >= 0) {
                if (c.rows[i].flag_ms >= 0)
                    linear_minutes = (double)(c.rows[i].flag_ms - c.rows[i].onset_ms) / 60000.0;
                if (c.rows[i].bflag_ms >= 0)
                    linear_bminutes = (double)(c.rows[i].bflag_ms - c.rows[i].onset_ms) / 60000.0;
            }
    pw_sample_close(&s);
    pw_sim_free(sim);
    case_free(&c);
}

/* ---- real captures ----------------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static const char *poolmon_files[] = {
    "case01_poolmon_nt_serverfault_ntfs_collapsed_ws.txt",
    "case02_poolmon_xp_msdocs_display_sort_alloc.txt",
    "case03_poolmon_msdocs_findleak_markdown_hash_header.txt",
    "case04_poolmon_2000_msdocs_gflags_example9_dashed.txt",
    "case05_poolmon_xp_msdocs_ntf_mapped_driver.txt",
    "case06_poolmon_xp_msdocs_mem_unknown_driver_noheader.txt",
    "case07_poolmon_xp_msdocs_localtag_console_noise.txt",
    "case08_poolmon_xp_msdocs_ip_double_mapped.txt",
    "case09_poolmon_xp_msdocs_drsd_before_after_replay.txt",
    "case10_poolmon_2003_msdocs_session_pools_dh_space.txt",
    "case11_poolmon_2003_msdocs_session0_mapped_noleadspace.txt",
    "case12_poolmon_xp_msdocs_session_empty_header_only.txt",
    "case15_poolmon_win10_wide_nlog_mapped_cont_thre.txt",
    "case16_poolmon_win11_fak_semisynthetic_dup_file_tag.txt",
    "case17_poolmon_win10_header_only_korean_notes.txt",
    "case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt",
    "case19_poolmon_win10_msdocs_hid_mapped_truncated_col.txt",
    "case32_pooltags_alt_wsl41296_npmb_share_not_poolmon.txt",
};

static void run_poolmon(const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/poolmon/%s", PW_FIXTURES, file);
    size_t len;
    char *data = read_all(path, &len);
    const char *expect = strncmp(file, "case09", 6) == 0 ? "Drsd" : "none";
    pw_poolmon_doc_t doc;
    pw_diag_t d;
    pw_poolmon_opts_t o = {.start_ms = (uint64_t)START_MS};
    static char names[32][64];
    static size_t nn;
    char *name = names[nn++ % 32];
    snprintf(name, 64, "%.6s (poolmon)", file);
    if (data == NULL || pw_poolmon_parse(data, len, &o, &doc, &d) != 0) {
        /* not poolmon (cases 18, 32): the API's import refuses it, so no suspect */
        case_t c;
        case_init(&c, name, 1, expect);
        printf("  %s rejected by the parser: %s\n", file, data ? d.msg : "cannot read");
        finish(&c);
        case_free(&c);
        free(data);
        return;
    }
    /* System screens form the series; each session screen is its own snapshot. */
    pw_sample_t *ss = pw_calloc(doc.n_screens ? doc.n_screens : 1, sizeof(*ss));
    if (ss == NULL)
        abort();
    size_t snaps = 0;
    for (size_t i = 0; i < doc.n_screens; i++) {
        const pw_poolmon_screen_t *sc = &doc.screens[i];
        if (sc->session != PW_POOLMON_SESSION_NONE)
            continue;
        pw_sample_init(&ss[snaps]);
        if (pw_poolmon_screen_to_sample(sc, &ss[snaps]) != 0)
            abort();
        snaps++;
    }
    case_t c;
    case_init(&c, name, 1, expect);
    import(&c, ss, snaps, capture_width(ss, snaps), data, len);
    if (strncmp(file, "case09", 6) == 0)
        label(&c, "Drsd", PW_POOL_PAGED);
    printf("  %s: %zu screens, %zu in the system series\n", file, doc.n_screens, snaps);
    finish(&c);
    case_free(&c);
    for (size_t i = 0; i < snaps; i++)
        pw_sample_close(&ss[i]);
    for (size_t i = 0; i < doc.n_screens; i++) {
        const pw_poolmon_screen_t *sc = &doc.screens[i];
        if (sc->session == PW_POOLMON_SESSION_NONE)
            continue;
        case_t cs;
        char *sn = names[nn++ % 32];
        snprintf(sn, 64, "%.6s session screen %zu", file, i + 1);
        case_init(&cs, sn, 1, "none");
        pw_sample_init(&ss[0]);
        if (pw_poolmon_screen_to_sample(sc, &ss[0]) != 0)
            abort();
        char key[128];
        snprintf(key, sizeof(key), "%s#%zu", file, i);
        import(&cs, ss, 1, capture_width(ss, 1), key, strlen(key));
        pw_sample_close(&ss[0]);
        finish(&cs);
        case_free(&cs);
    }
    pw_free(ss);
    pw_poolmon_doc_close(&doc);
    free(data);
}

/* A Windows agent's description (no limits reported). */
static void windows_info(pw_source_info_t *info, unsigned width, const char *version,
                         const char *arch)
{
    memset(info, 0, sizeof(*info));
    info->kind = PW_SOURCE_WINDOWS;
    info->counter_width = width;
    snprintf(info->os_family, sizeof(info->os_family), "windows");
    snprintf(info->os_version, sizeof(info->os_version), "%s", version);
    snprintf(info->arch, sizeof(info->arch), "%s", arch);
}

/* case09 rebuilt: one print job every 10 min (assumed), each leaking 6 x 832 B in Drsd,
 * streamed by a Windows XP agent (32-bit counters, no limit reported). */
static void run_case09_rebuilt(void)
{
    case_t c;
    case_init(&c, "case09 rebuilt (1 job/10 min, 8 h)", 1, "Drsd");
    pw_source_info_t info;
    windows_info(&info, 32, "5.1", "x86");
    stream_hello(&c, &info);
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t allocs = 560, frees = 539; /* screen 1 */
    for (int64_t k = 0; k <= 8 * 360; k++) {
        if (k > 0 && k % 60 == 0)
            allocs += 177, frees += 171;
        pw_sample_reset(&s);
        s.timestamp_ms = (uint64_t)(START_MS + k * 10000);
        uint64_t diff = allocs - frees;
        pw_sample_add(&s, "Drsd", 4, PW_POOL_PAGED, allocs, frees, diff, diff * 832);
        s.totals.paged_bytes = 8004 * 1024 + (diff - 21) * 832;
        s.totals.nonpaged_bytes = 2224 * 1024;
        stream(&c, &s);
    }
    stream_end(&c);
    label(&c, "Drsd", PW_POOL_PAGED);
    finish(&c);
    case_free(&c);
    pw_sample_close(&s);
}

static const char *slab_files[] = {
    "case20_slabinfo_1.1_2004_inode_dentry_growth_2.4.26.txt",
    "case21_slabinfo_1.1stats_2001_wrapped_quoted_2.4.13ac.txt",
    "case22_slabinfo_1.1stats_2002_swapoff_leak_2.4.19.txt",
    "case23_slabinfo_1.1smp_2001_buffer_head_lowmem_2.4.15.txt",
    "case24_slabinfo_2.0stats_2003_broken_cache_manual_wrap.txt",
    "case25_slabinfo_2.0_2004_dcache_ext3_inode_growth_2.6.8.txt",
    "case26_slabinfo_2.0_2005_email_wrapped72_buffer_head_radix.txt",
    "case28_slabinfo_2.1_2016_partial_quoted_wrapped_header.txt",
    "case29_slabinfo_2.1_syslog_prefixed_ellipsis.txt",
    "case31_slabinfo_2.1_grep_dentry_single_line_plus_dentry_state.txt",
};

static void run_slab(const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/slabinfo/%s", PW_FIXTURES, file);
    size_t len;
    char *data = read_all(path, &len);
    pw_slabinfo_doc_t doc;
    memset(&doc, 0, sizeof(doc));
    pw_diag_t d;
    static char names[16][40];
    static size_t nn;
    char *name = names[nn++ % 16];
    snprintf(name, 40, "%.6s (slabinfo)", file);
    case_t c;
    case_init(&c, name, 1, "none");
    if (data == NULL || pw_slabinfo_parse(data, len, NULL, &doc, &d) != 0) {
        printf("  %s rejected: %s\n", file, data ? d.msg : "cannot read");
    } else {
        /* one sample per block (all single dumps here), imported as a capture */
        pw_sample_t *ss = pw_calloc(doc.n_blocks ? doc.n_blocks : 1, sizeof(*ss));
        if (ss == NULL)
            abort();
        const pw_slab_cache_t *biggest = NULL;
        uint64_t big = 0;
        for (size_t b = 0; b < doc.n_blocks; b++) {
            pw_sample_t *s = &ss[b];
            pw_sample_init(s);
            s->timestamp_ms = (uint64_t)(START_MS + (int64_t)b * 900000);
            for (size_t i = 0; i < doc.blocks[b].n_caches; i++) {
                const pw_slab_cache_t *sc = &doc.caches[doc.blocks[b].first_cache + i];
                uint64_t bytes;
                if (pw_slabinfo_cache_slab_bytes(sc, 4096, &bytes) != 0)
                    bytes = sc->active_objs * sc->objsize;
                size_t tl = sc->name_len < PW_TAG_MAX ? sc->name_len : PW_TAG_MAX;
                pw_sample_add(s, sc->name, tl, PW_POOL_PAGED, sc->active_objs, 0, sc->active_objs,
                              bytes);
                s->totals.paged_bytes += bytes;
                if (bytes > big)
                    big = bytes, biggest = sc;
            }
        }
        import(&c, ss, doc.n_blocks, capture_width(ss, doc.n_blocks), data, len);
        printf("  %s: %zu block(s), %zu caches, largest %s %.0f KiB (informative only)\n", file,
               doc.n_blocks, doc.n_caches, biggest ? biggest->name : "-", (double)big / 1024.0);
        for (size_t b = 0; b < doc.n_blocks; b++)
            pw_sample_close(&ss[b]);
        pw_free(ss);
    }
    finish(&c);
    case_free(&c);
    pw_slabinfo_doc_close(&doc);
    free(data);
}

/* ---- the labelled suite (detect_gen.h) ----------------------------------------------------- */

static int e2e_on; /* bench_detect e2e: every labelled capture also goes through the binaries */
static void e2e_capture(const char *host, int leak, const char *listed, const char *text,
                        size_t len);

#define GEN_SEEDS 12 /* hosts per (shape, length) */
#define GEN_ROWS  40 /* background rows per host */

static const size_t gen_lengths[] = {2, 3, 4, 9, 12, 24, 96};
#define N_LENGTHS (sizeof(gen_lengths) / sizeof(*gen_lengths))
static score_t gen_live[PW_GEN_SHAPES];
/* The labelled captures' scores of one noise regime (detect_gen.h) */
typedef struct {
    score_t shape[PW_GEN_SHAPES], len[N_LENGTHS], sl[PW_GEN_SHAPES][N_LENGTHS];
    size_t len_leaks[N_LENGTHS], len_standing[N_LENGTHS];
    /* the bound (leak_cost): per leak host, how many rows that do not leak match or beat the
     * leak by every measure ([0]: of growth, [1]: all); SIZE_MAX when it has no leak row */
    size_t cost[2][PW_GEN_SHAPES][N_LENGTHS][GEN_SEEDS];
} gen_scores_t;
static gen_scores_t gen_by_noise[3];
static pw_gen_noise_t gen_noise; /* the regime being run */

/* Is length li run under the current regime? 4 screens only for still hosts (a capture begun
 * one screen before a reboot, judged on its last 3: detect_gen.h). */
static int gen_len_run(size_t li)
{
    return gen_lengths[li] != 4 || gen_noise == PW_GEN_NOISE_STILL;
}

/* Fewest points of the shape under the current regime (a still host reboots after its first
 * point) */
static size_t gen_min_points(pw_gen_shape_t sh)
{
    return sh == PW_GEN_REBOOT && gen_noise == PW_GEN_NOISE_STILL ? 3 : pw_gen_shape_min_points(sh);
}

/* "walk " / "walk-" before a capture's name, by regime ("" for the first) */
static const char *gen_noise_prefix(int dash)
{
    if (gen_noise == PW_GEN_NOISE_REDRAW)
        return "";
    return gen_noise == PW_GEN_NOISE_WALK ? (dash ? "walk-" : "walk ")
                                          : (dash ? "still-" : "still ");
}
#define gen_shape        (gen_by_noise[gen_noise].shape)
#define gen_len          (gen_by_noise[gen_noise].len)
#define gen_sl           (gen_by_noise[gen_noise].sl)
#define gen_len_leaks    (gen_by_noise[gen_noise].len_leaks)
#define gen_len_standing (gen_by_noise[gen_noise].len_standing)
#define gen_cost         (gen_by_noise[gen_noise].cost)

/* Ground truth, not the product: does the leaking row's growth from the first to the last
 * screen exceed every other row's, in bytes or relative to its first bytes? Where it does not,
 * some other row grew more in both senses, so no comparison of the screens can single the leak
 * out: this bounds what any comparison of 2 or 3 screens can find (the background rows churn by up
 * to 10 % of their outstanding allocations each screen). */
static int leak_stands_out(const pw_sample_t *first, const pw_sample_t *last)
{
    double ev_abs = 0, ev_rel = 0, max_abs = -1e300, max_rel = -1e300;
    for (size_t i = 0; i < last->n; i++) {
        const pw_entry_t *e = &last->entries[i];
        const pw_entry_t *f = NULL;
        for (size_t j = 0; j < first->n && f == NULL; j++)
            if (first->entries[j].tag_len == e->tag_len && first->entries[j].pool == e->pool &&
                memcmp(first->entries[j].tag, e->tag, e->tag_len) == 0)
                f = &first->entries[j];
        if (f == NULL)
            continue;
        double ab = (double)e->bytes - (double)f->bytes;
        double rel = ab / (f->bytes ? (double)f->bytes : 1.0);
        if (e->tag_len == 4 && memcmp(e->tag, PW_GEN_EVENT_TAG, 4) == 0 &&
            e->pool == PW_GEN_EVENT_POOL) {
            ev_abs = ab, ev_rel = rel;
        } else {
            max_abs = ab > max_abs ? ab : max_abs;
            max_rel = rel > max_rel ? rel : max_rel;
        }
    }
    return ev_abs > max_abs || ev_rel > max_rel;
}

/* The bound: what any ranking of a host's rows by what its screens carry could reach. Each row
 * of the parsed capture (the product's data, after pw_poolmon_parse), over its last segment (from
 * the last screen where both its counters fell, as pw_detect_eval splits), is measured by
 *   of growth (BOUND_GROWTH): growth in bytes, growth in outstanding allocations (Diff), growth
 *   relative to its first bytes, its smallest step in bytes (did it rise at every screen);
 *   of the counters besides: the share of the allocations it made that it still holds (Diff
 *   growth / Allocs growth: 0 when Diff did not rise, 1 when its counters contradict each
 *   other), fewer frees (minus the Frees growth), the share of all allocations since boot still
 *   outstanding (Diff / Allocs at the last screen);
 * larger is more suspicious in each. A row that does not leak and matches or beats the leak by
 * every measure ranks at least as high under any ranking that rises with them: naming the leak
 * names that row too. Returns how many such rows the host has by the first `k` measures (0: some
 * ranking names the leak alone), SIZE_MAX when the leak row is missing. An upper bound only: a
 * ranking is also judged on the hosts without a leak, which this does not charge, and one
 * ranking must serve every host. */
#define BOUND_GROWTH   4
#define BOUND_MEASURES 7
static void row_measures(const pw_sample_t *ss, size_t n, size_t row, double *m)
{
    const pw_entry_t *e = &ss[n - 1].entries[row];
    size_t a = 0; /* first screen of the row's last segment */
    for (size_t i = 1; i < n; i++) {
        const pw_entry_t *p = &ss[i - 1].entries[row], *q = &ss[i].entries[row];
        if (q->allocs < p->allocs && q->frees < p->frees)
            a = i;
    }
    const pw_entry_t *f = &ss[a].entries[row];
    double db = (double)e->bytes - (double)f->bytes, dd = (double)e->diff - (double)f->diff;
    double da = (double)e->allocs - (double)f->allocs, df = (double)e->frees - (double)f->frees;
    double step = a + 1 < n ? INFINITY : 0;
    for (size_t i = a + 1; i < n; i++) {
        double s = (double)ss[i].entries[row].bytes - (double)ss[i - 1].entries[row].bytes;
        step = s < step ? s : step;
    }
    m[0] = db;
    m[1] = dd;
    m[2] = db / (f->bytes ? (double)f->bytes : 1.0);
    m[3] = step;
    m[4] = dd <= 0 ? 0 : (da <= 0 || df < 0 || dd > da) ? 1 : dd / da;
    m[5] = -df;
    m[6] = e->allocs ? (double)e->diff / (double)e->allocs : 0;
}

/* The rows of a generated capture are in the same order on every screen (the generator writes
 * them so; checked here, since the measures pair them by index). */
static size_t leak_cost(const pw_sample_t *ss, size_t n, size_t k_measures)
{
    size_t rows = ss[0].n, ev = SIZE_MAX, cost = 0;
    for (size_t i = 1; i < n; i++)
        if (ss[i].n != rows)
            return SIZE_MAX;
    for (size_t r = 0; r < rows; r++) {
        const pw_entry_t *e = &ss[0].entries[r];
        for (size_t i = 1; i < n; i++)
            if (ss[i].entries[r].tag_len != e->tag_len || ss[i].entries[r].pool != e->pool ||
                memcmp(ss[i].entries[r].tag, e->tag, e->tag_len) != 0)
                return SIZE_MAX;
        if (e->tag_len == 4 && memcmp(e->tag, PW_GEN_EVENT_TAG, 4) == 0 &&
            e->pool == PW_GEN_EVENT_POOL)
            ev = r;
    }
    if (ev == SIZE_MAX)
        return SIZE_MAX;
    double lm[BOUND_MEASURES], m[BOUND_MEASURES];
    row_measures(ss, n, ev, lm);
    for (size_t r = 0; r < rows; r++) {
        if (r == ev)
            continue;
        row_measures(ss, n, r, m);
        size_t k = 0;
        while (k < k_measures && m[k] >= lm[k])
            k++;
        cost += k == k_measures;
    }
    return cost;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The best recall over the leak hosts c[0..n) (their costs) at precision >= 0.95: the cheapest
 * first, each adding its cost in false suspects; *alone = those of cost 0. */
static double bound_recall(size_t *c, size_t n, size_t *alone)
{
    qsort(c, n, sizeof(*c), cmp_size);
    size_t tp = 0, fp = 0;
    *alone = 0;
    for (size_t i = 0; i < n && c[i] != SIZE_MAX; i++) {
        *alone += c[i] == 0;
        if ((double)(tp + 1) < 0.95 * (double)(tp + 1 + fp + c[i]))
            break;
        tp++, fp += c[i];
    }
    return n ? (double)tp / (double)n : 0.0;
}

/* A labelled capture of `points` 15-minute screens as poolmon text: poolmon's XP screens (LF
 * or CRLF by seed) when `layout` is -1, else the public layout `layout` (poolmon_layouts.h).
 * Returns the text (free()) and its length in *len. */
static size_t gen_console_rows; /* > 0: screens as a console of that many rows sorted by bytes */
static size_t gen_console_seen; /* screens of the last gen_text whose view showed the leak row */

static char *gen_text(pw_gen_shape_t shape, size_t points, uint64_t seed, int layout, size_t *len)
{
    pw_gen_t *g = pw_gen_new(seed, shape, points, GEN_ROWS, START_MS, 900000);
    if (g == NULL)
        abort();
    pw_gen_set_noise(g, gen_noise);
    char *text = NULL;
    size_t cap = 0, screen = 0;
    *len = 0;
    pw_sample_t s;
    pw_sample_init(&s);
    uint32_t boot;
    pw_sample_t view;
    pw_sample_init(&view);
    gen_console_seen = 0;
    while (pw_gen_next(g, &s, &boot) == 0) {
        const pw_sample_t *w = &s;
        if (gen_console_rows > 0) {
            if (pw_gen_view_top_bytes(&s, gen_console_rows, &view) != 0)
                abort();
            w = &view;
            for (size_t i = 0; i < view.n; i++)
                gen_console_seen += view.entries[i].tag_len == 4 &&
                                    memcmp(view.entries[i].tag, PW_GEN_EVENT_TAG, 4) == 0;
        }
        int r = layout < 0
                    ? pw_gen_poolmon_screen(w, (int)(seed % 2), &text, len, &cap)
                    : pw_gen_layout_screen(w, layout, screen++, (int)(seed / PW_GEN_LAYOUTS % 2),
                                           &text, len, &cap);
        if (r != 0)
            abort();
    }
    pw_sample_close(&view);
    pw_sample_close(&s);
    pw_gen_free(g);
    if (text == NULL || (layout >= 0 && pw_gen_layout_finish(layout, &text, len, &cap) != 0))
        abort();
    return text;
}

/* Parses a capture as the API's POST /import does: its screens as samples (free with
 * gen_parsed_free), or NULL when it does not parse (said on stdout; doc then empty). */
static pw_sample_t *gen_parse(const char *text, size_t len, pw_poolmon_doc_t *doc, const char *what)
{
    pw_diag_t d;
    pw_poolmon_opts_t o = {.start_ms = (uint64_t)START_MS, .interval_ms = 900000};
    if (pw_poolmon_parse(text, len, &o, doc, &d) != 0) {
        printf("bench_detect: %s does not parse: line %u: %s\n", what, d.line, d.msg);
        return NULL;
    }
    pw_sample_t *ss = pw_calloc(doc->n_screens ? doc->n_screens : 1, sizeof(*ss));
    for (size_t i = 0; ss != NULL && i < doc->n_screens; i++) {
        pw_sample_init(&ss[i]);
        if (pw_poolmon_screen_to_sample(&doc->screens[i], &ss[i]) != 0)
            abort();
    }
    if (ss == NULL)
        abort();
    return ss;
}

static void gen_parsed_free(pw_sample_t *ss, pw_poolmon_doc_t *doc)
{
    for (size_t i = 0; i < doc->n_screens; i++)
        pw_sample_close(&ss[i]);
    pw_free(ss);
    pw_poolmon_doc_close(doc);
}

/* `bench_detect layouts`: every labelled capture also written in one of the public layouts
 * (poolmon_layouts.h, by seed) and judged again: the product must list the same suspects as
 * for poolmon's XP screen, whatever the layout the capture came in. */
static int gen_layouts_on;
static double ratio(size_t a, size_t b);
static score_t layout_score[PW_GEN_LAYOUTS];
static size_t layout_cases[PW_GEN_LAYOUTS], layout_same[PW_GEN_LAYOUTS];

static void run_gen_layout(pw_gen_shape_t shape, size_t points, uint64_t seed, const char *xp)
{
    int layout = (int)(seed % PW_GEN_LAYOUTS);
    static char name[96];
    snprintf(name, sizeof(name), "gen %s%s x%zu seed %llu %s", gen_noise_prefix(0),
             pw_gen_shape_name(shape), points, (unsigned long long)seed,
             pw_gen_layout_name(layout));
    size_t len;
    char *text = gen_text(shape, points, seed, layout, &len);
    pw_poolmon_doc_t doc;
    pw_sample_t *ss = gen_parse(text, len, &doc, name);
    layout_cases[layout]++;
    if (ss == NULL) {
        free(text);
        return;
    }
    int leak = pw_gen_shape_leak(shape);
    case_t c;
    case_init(&c, name, 0, leak ? PW_GEN_EVENT_TAG : "none");
    extra = &layout_score[layout];
    import(&c, ss, doc.n_screens, capture_width(ss, doc.n_screens), text, len);
    if (leak)
        label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
    finish(&c);
    extra = NULL;
    if (strcmp(c.listed, xp) == 0)
        layout_same[layout]++;
    else
        printf("LAYOUT %s: %s lists \"%s\", its XP screens \"%s\"\n", pw_gen_layout_name(layout),
               name, c.listed, xp);
    case_free(&c);
    gen_parsed_free(ss, &doc);
    free(text);
}

/* `bench_detect console`: every labelled capture also as screens copied from a console of
 * poolmon sorted by bytes (`/b`) that shows its first CONSOLE_ROWS rows: rows drop out of view
 * and come back. The leak counts as one only when it was in view on 2 screens or more (one
 * screen is no evidence); every other row listed is a false suspect. */
#define CONSOLE_ROWS 25
static score_t console_score;
static size_t console_cases, console_leaks_hidden;

static void run_gen_console(pw_gen_shape_t shape, size_t points, uint64_t seed)
{
    static char name[96];
    snprintf(name, sizeof(name), "gen %s%s x%zu seed %llu console", gen_noise_prefix(0),
             pw_gen_shape_name(shape), points, (unsigned long long)seed);
    size_t len;
    gen_console_rows = CONSOLE_ROWS;
    char *text = gen_text(shape, points, seed, -1, &len);
    gen_console_rows = 0;
    pw_poolmon_doc_t doc;
    pw_sample_t *ss = gen_parse(text, len, &doc, name);
    if (ss == NULL)
        exit(1);
    int leak = pw_gen_shape_leak(shape) && gen_console_seen >= 2;
    console_cases++;
    console_leaks_hidden += pw_gen_shape_leak(shape) && !leak;
    case_t c;
    case_init(&c, name, 0, leak ? PW_GEN_EVENT_TAG : "none");
    extra = &console_score;
    import(&c, ss, doc.n_screens, capture_width(ss, doc.n_screens), text, len);
    if (leak)
        label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
    finish(&c);
    extra = NULL;
    case_free(&c);
    gen_parsed_free(ss, &doc);
    free(text);
}

static void print_gen_layouts(void)
{
    size_t cases = 0, same = 0;
    score_t all;
    memset(&all, 0, sizeof(all));
    for (int l = 0; l < PW_GEN_LAYOUTS; l++) {
        const score_t *t = &layout_score[l];
        printf("BENCH detect.layouts.%s.same_lists %zu of %zu\n", pw_gen_layout_name(l),
               layout_same[l], layout_cases[l]);
        printf("BENCH detect.layouts.%s.precision %.3f ratio\n", pw_gen_layout_name(l),
               ratio(t->tp, t->tp + t->fp));
        printf("BENCH detect.layouts.%s.recall %.3f ratio\n", pw_gen_layout_name(l),
               ratio(t->tp, t->tp + t->fn));
        cases += layout_cases[l], same += layout_same[l];
        all.tp += t->tp, all.fp += t->fp, all.fn += t->fn;
    }
    printf("BENCH detect.layouts.same_lists %zu of %zu\n", same, cases);
    printf("BENCH detect.layouts.precision %.3f ratio\n", ratio(all.tp, all.tp + all.fp));
    printf("BENCH detect.layouts.recall %.3f ratio\n", ratio(all.tp, all.tp + all.fn));
}

/* A capture of `points` 15-minute screens as poolmon text (LF or CRLF by seed), parsed and
 * imported as the API's POST /import does, judged by one pass at its last screen. */
static void run_gen_capture(pw_gen_shape_t shape, size_t li, uint64_t seed)
{
    size_t points = gen_lengths[li], len;
    char *text = gen_text(shape, points, seed, -1, &len);
    pw_poolmon_doc_t doc;
    pw_sample_t *ss = gen_parse(text, len, &doc, "a generated capture");
    if (ss == NULL)
        exit(1);
    static char name[96];
    snprintf(name, sizeof(name), "gen %s%s x%zu seed %llu", gen_noise_prefix(0),
             pw_gen_shape_name(shape), points, (unsigned long long)seed);
    case_t c;
    int leak = pw_gen_shape_leak(shape);
    if (leak && doc.n_screens >= 2) {
        gen_len_leaks[li]++;
        gen_len_standing[li] += leak_stands_out(&ss[0], &ss[doc.n_screens - 1]);
        gen_cost[0][shape][li][seed] = leak_cost(ss, doc.n_screens, BOUND_GROWTH);
        gen_cost[1][shape][li][seed] = leak_cost(ss, doc.n_screens, BOUND_MEASURES);
    }
    case_init(&c, name, 0, leak ? PW_GEN_EVENT_TAG : "none");
    score_t both;
    memset(&both, 0, sizeof(both));
    extra = &both;
    import(&c, ss, doc.n_screens, capture_width(ss, doc.n_screens), text, len);
    if (leak)
        label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
    finish(&c);
    extra = NULL;
    if (e2e_on) {
        char host[64];
        snprintf(host, sizeof(host), "gen-%s%s-x%zu-s%llu", gen_noise_prefix(1),
                 pw_gen_shape_name(shape), points, (unsigned long long)seed);
        e2e_capture(host, leak, c.listed, text, len);
    }
    if (gen_layouts_on == 1)
        run_gen_layout(shape, points, seed, c.listed);
    if (gen_layouts_on == 2)
        run_gen_console(shape, points, seed);
    score_t *to[3] = {&gen_shape[shape], &gen_len[li], &gen_sl[shape][li]};
    for (int k = 0; k < 3; k++) {
        to[k]->tp += both.tp, to[k]->fp += both.fp, to[k]->fn += both.fn;
        to[k]->real += both.real, to[k]->real_ok += both.real_ok;
    }
    case_free(&c);
    gen_parsed_free(ss, &doc);
    free(text);
}

/* A live agent: 10 s samples for `hours`, streamed as frames (a reboot is a new Hello with a
 * new boot id), a pass every 30 s of sample time. */
static void run_gen_live(pw_gen_shape_t shape, uint64_t seed, int hours)
{
    size_t points = (size_t)hours * 360 + 1;
    pw_gen_t *g = pw_gen_new(seed, shape, points, GEN_ROWS, START_MS, 10000);
    static char name[96];
    snprintf(name, sizeof(name), "gen %s live 10 s %d h seed %llu", pw_gen_shape_name(shape), hours,
             (unsigned long long)seed);
    int leak = pw_gen_shape_leak(shape);
    case_t c;
    case_init(&c, name, 0, leak ? PW_GEN_EVENT_TAG : "none");
    pw_source_info_t info;
    windows_info(&info, 64, "10.0", "x64");
    stream_hello(&c, &info);
    pw_sample_t s;
    pw_sample_init(&s);
    uint32_t boot, last_boot = 1;
    int labelled = 0;
    while (pw_gen_next(g, &s, &boot) == 0) {
        if (boot != last_boot) {
            char b[32];
            snprintf(b, sizeof(b), "boot:%u", boot);
            stream_hello_boot(&c, &info, b);
            c.seq = 0;
            last_boot = boot;
        }
        stream(&c, &s);
        if (!labelled && leak) {
            label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
            labelled = 1;
        }
    }
    stream_end(&c);
    score_t both;
    memset(&both, 0, sizeof(both));
    extra = &both;
    finish(&c);
    extra = NULL;
    score_t *t = &gen_live[shape];
    t->tp += both.tp, t->fp += both.fp, t->fn += both.fn, t->real += both.real;
    t->tp_any += both.tp_any, t->fp_any += both.fp_any;
    t->real_ok += both.real_ok;
    for (size_t i = 0; i < both.n_min && t->n_min < 256; i++)
        t->minutes[t->n_min++] = both.minutes[i];
    pw_sample_close(&s);
    pw_gen_free(g);
    case_free(&c);
}

/* Linux, files made in bursts for 12 h (no leak): each file adds a dentry (192 B), an
 * ext4_inode_cache object (1,080 B, in 1 KiB-aligned slabs here) and an lsm_inode_cache object
 * (32 B), and a kmalloc-256 buffer; 0-5 files each 10 s sample, among 40 churning caches. Judged
 * as one cause: the findings (heads) and PoolTagLeak alerts that fired are counted. */
static size_t alert_firing_n;
static void count_firing(const pw_alert_transition_t *t, void *arg)
{
    (void)arg;
    if (t->to == PW_ALERT_FIRING && t->key.tag[0] != '\0')
        alert_firing_n++;
}

static void run_linux_files(void)
{
    case_t c;
    case_init(&c, "linux file creation (12 h, no leak)", 0, "none");
    pw_source_info_t info;
    memset(&info, 0, sizeof(info));
    info.kind = PW_SOURCE_LINUX_SLAB;
    info.counter_width = 64;
    snprintf(info.os_family, sizeof(info.os_family), "linux");
    snprintf(info.os_version, sizeof(info.os_version), "6.1");
    snprintf(info.arch, sizeof(info.arch), "x86_64");
    stream_hello(&c, &info);
    pw_gen_t *g = pw_gen_new(77, PW_GEN_FLAT, 12 * 360 + 1, GEN_ROWS, START_MS, 10000);
    size_t fired0 = tag_alerts_fired;
    pw_sample_t s;
    pw_sample_init(&s);
    uint32_t boot;
    uint64_t files = 0, rng = 99, allocs = 0;
    size_t most_heads = 0;
    while (pw_gen_next(g, &s, &boot) == 0) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t made = (rng >> 33) % 6;
        files += made;
        allocs += made + 3;
        static const struct {
            const char *name;
            uint64_t size, base;
        } caches[] = {{"dentry", 192, 200000},
                      {"ext4_inode_cache", 1080, 90000},
                      {"lsm_inode_cache", 32, 150000},
                      {"kmalloc-256", 256, 40000}};
        for (size_t k = 0; k < 4; k++) {
            uint64_t n = caches[k].base + files;
            if (pw_sample_add(&s, caches[k].name, strlen(caches[k].name), PW_POOL_PAGED, n + allocs,
                              allocs, n, n * caches[k].size) != 0)
                abort();
        }
        stream(&c, &s);
        const pw_suspect_t *sp;
        size_t ns = pw_analysis_run_suspects(c.an, &sp), heads = 0;
        for (size_t i = 0; i < ns; i++)
            heads += sp[i].head;
        if (heads > most_heads)
            most_heads = heads;
    }
    stream_end(&c);
    alert_firing_n = 0;
    pw_alert_foreach(pw_analysis_run_alerts(c.an), count_firing, NULL);
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(c.an, &sp), heads = 0;
    for (size_t i = 0; i < ns; i++)
        heads += sp[i].head;
    for (size_t i = 0; i < ns; i++)
        printf("  linux files: %s %.*s (%s, finding of %u%s%s): %s\n", sp[i].head ? "head" : "with",
               (int)sp[i].tag_len, (const char *)sp[i].tag, pw_detect_verdict_name(sp[i].d.verdict),
               (unsigned)sp[i].group_n, sp[i].with[0] ? ", with " : "", sp[i].with,
               sp[i].d.evidence);
    printf("BENCH detect.linux_files_findings %zu findings (at most %zu at any pass; %zu tags "
           "listed)\n",
           heads, most_heads, ns);
    printf("BENCH detect.linux_files_alerts_firing %zu alerts (%zu fired over the 12 h)\n",
           alert_firing_n, tag_alerts_fired - fired0);
    pw_sample_close(&s);
    pw_gen_free(g);
    case_free(&c);
}

static double ratio(size_t a, size_t b);
static double median(double *v, size_t n);

/* The current regime's shape x length table (found/leaks +false suspects). */
static void print_gen_table(void)
{
    for (int sh = 0; sh < PW_GEN_SHAPES; sh++) {
        printf("  %-12s", pw_gen_shape_name((pw_gen_shape_t)sh));
        for (size_t li = 0; li < N_LENGTHS; li++) {
            const score_t *t = &gen_sl[sh][li];
            if (!gen_len_run(li))
                continue;
            if (t->real == 0)
                printf("  %3zu: -      ", gen_lengths[li]);
            else
                printf("  %3zu: %2zu/%-2zu +%-3zu", gen_lengths[li], t->tp, t->tp + t->fn, t->fp);
        }
        printf("   (found/leaks +false suspects, by screens; %s noise)\n",
               pw_gen_noise_name(gen_noise));
    }
}

static void print_gen(const char *what, const char *name, const score_t *t, int leak)
{
    printf("BENCH detect.%s.%s.precision %.3f ratio\n", what, name, ratio(t->tp, t->tp + t->fp));
    if (leak)
        printf("BENCH detect.%s.%s.recall %.3f ratio\n", what, name, ratio(t->tp, t->tp + t->fn));
    printf("  (%s %s: %zu hosts, top-1 right in %zu; tp %zu fp %zu fn %zu; rows ever flagged "
           "that are not leaks: %zu)\n",
           what, name, t->real, t->real_ok, t->tp, t->fp, t->fn, t->fp_any);
}

/* Every labelled capture (shape x length x seed) under the current noise regime. */
static void gen_captures(void)
{
    double t0 = now_s();
    for (int sh = 0; sh < PW_GEN_SHAPES; sh++)
        for (size_t li = 0; li < N_LENGTHS; li++) {
            if (!gen_len_run(li) || gen_lengths[li] < gen_min_points((pw_gen_shape_t)sh))
                continue;
            for (uint64_t seed = 0; seed < GEN_SEEDS; seed++)
                run_gen_capture((pw_gen_shape_t)sh, li, seed);
        }
    printf("  (labelled captures, %s noise: %.1f s)\n", pw_gen_noise_name(gen_noise), now_s() - t0);
}

/* The bound (leak_cost) of the captures judged by comparison (2 and 3 screens: from 4 on the
 * engine tests trends, which use more than any measure of the ends), per length and per shape
 * at each length, beside the engine's recall: detect.PREFIXshape.SHAPE.N_screens.recall,
 * .bound_recall (every measure) and .bound_recall_growth (the measures of growth only), and
 * detect.PREFIXlength.N_screens.bound_recall, .bound_recall_growth and .bound_leaks_alone. */
static void print_gen_bound(const char *prefix)
{
    static const char *const suffix[2] = {"_growth", ""};
    for (size_t li = 0; li < N_LENGTHS && gen_lengths[li] <= 3; li++) {
        size_t all[2][PW_GEN_SHAPES * GEN_SEEDS], na = 0, alone;
        for (int sh = 0; sh < PW_GEN_SHAPES; sh++) {
            if (!pw_gen_shape_leak((pw_gen_shape_t)sh) ||
                gen_lengths[li] < gen_min_points((pw_gen_shape_t)sh))
                continue;
            const score_t *t = &gen_sl[sh][li];
            const char *name = pw_gen_shape_name((pw_gen_shape_t)sh);
            printf("BENCH detect.%sshape.%s.%zu_screens.recall %.3f ratio\n", prefix, name,
                   gen_lengths[li], ratio(t->tp, t->tp + t->fn));
            for (int w = 0; w < 2; w++) {
                size_t c[GEN_SEEDS];
                memcpy(c, gen_cost[w][sh][li], sizeof(c));
                memcpy(all[w] + na, c, sizeof(c));
                double b = bound_recall(c, GEN_SEEDS, &alone);
                printf("BENCH detect.%sshape.%s.%zu_screens.bound_recall%s %.3f ratio (%zu of %zu "
                       "leaks matched or beaten in every measure by no other row)\n",
                       prefix, name, gen_lengths[li], suffix[w], b, alone, (size_t)GEN_SEEDS);
            }
            na += GEN_SEEDS;
        }
        for (int w = 0; w < 2; w++) {
            double b = bound_recall(all[w], na, &alone);
            printf("BENCH detect.%slength.%zu_screens.bound_recall%s %.3f ratio (best recall of "
                   "any ranking by the screens' %s at precision 0.95)\n",
                   prefix, gen_lengths[li], suffix[w], b, w ? "measures" : "measures of growth");
            if (w)
                printf("BENCH detect.%slength.%zu_screens.bound_leaks_alone %zu of %zu leaks "
                       "(some ranking by every measure names them with no other row)\n",
                       prefix, gen_lengths[li], alone, na);
        }
    }
}

/* The current regime's figures per shape and per length, named detect.PREFIXshape.* and
 * detect.PREFIXlength.*; the shapes' counts are added to *all. */
static void print_gen_captures(const char *prefix, score_t *all)
{
    char what[32];
    snprintf(what, sizeof(what), "%sshape", prefix);
    for (int sh = 0; sh < PW_GEN_SHAPES; sh++) {
        const score_t *t = &gen_shape[sh];
        print_gen(what, pw_gen_shape_name((pw_gen_shape_t)sh), t,
                  pw_gen_shape_leak((pw_gen_shape_t)sh));
        all->tp += t->tp, all->fp += t->fp, all->fn += t->fn;
    }
    print_gen_table();
    snprintf(what, sizeof(what), "%slength", prefix);
    for (size_t li = 0; li < N_LENGTHS; li++) {
        if (!gen_len_run(li))
            continue;
        char n[32];
        snprintf(n, sizeof(n), "%zu_screens", gen_lengths[li]);
        print_gen(what, n, &gen_len[li], 1);
        printf("BENCH detect.%s.%s.leaks_standing_out %zu of %zu leaks (ground truth: the "
               "leak grew most, in bytes or relative)\n",
               what, n, gen_len_standing[li], gen_len_leaks[li]);
    }
    print_gen_bound(prefix);
}

/* The labelled captures again under another noise regime (detect_gen.h), the same hosts, shapes,
 * lengths and seeds: "walk", the rows that do not leak moving as rows of real multi-screen
 * captures do; "still", every row holding still between screens but the host's movers (none,
 * or one or two rows moving a little or a lot) and the event row. Printed under
 * detect.walk.* / detect.still.*, beside the first regime's figures. */
static void run_gen_regime(pw_gen_noise_t n)
{
    int saved = verbose;
    verbose = getenv("PW_DETECT_TRACE") != NULL;
    gen_noise = n;
    gen_captures();
    verbose = saved;
    score_t all;
    memset(&all, 0, sizeof(all));
    char prefix[16];
    snprintf(prefix, sizeof(prefix), "%s.", pw_gen_noise_name(n));
    print_gen_captures(prefix, &all);
    printf("BENCH detect.%scaptures.precision %.3f ratio\n", prefix,
           ratio(all.tp, all.tp + all.fp));
    printf("BENCH detect.%scaptures.recall %.3f ratio\n", prefix, ratio(all.tp, all.tp + all.fn));
    gen_noise = PW_GEN_NOISE_REDRAW;
}

static void run_gen_suite(int live_hours)
{
    int saved = verbose;
    verbose = getenv("PW_DETECT_TRACE") != NULL;
    gen_captures();
    double t0 = now_s();
    for (int sh = 0; live_hours > 0 && sh < PW_GEN_SHAPES; sh++)
        for (uint64_t seed = 0; seed < 2; seed++)
            run_gen_live((pw_gen_shape_t)sh, seed, live_hours);
    printf("  (labelled live hosts: %.1f s)\n", now_s() - t0);
    verbose = saved;
    score_t all;
    memset(&all, 0, sizeof(all));
    print_gen_captures("", &all);
    for (int sh = 0; live_hours > 0 && sh < PW_GEN_SHAPES; sh++) {
        score_t *t = &gen_live[sh];
        print_gen("live", pw_gen_shape_name((pw_gen_shape_t)sh), t,
                  pw_gen_shape_leak((pw_gen_shape_t)sh));
        all.tp += t->tp, all.fp += t->fp, all.fn += t->fn;
        all.tp_any += t->tp_any, all.fp_any += t->fp_any;
        if (pw_gen_shape_leak((pw_gen_shape_t)sh))
            printf("  (live %s: median minutes to flag %.1f)\n",
                   pw_gen_shape_name((pw_gen_shape_t)sh), median(t->minutes, t->n_min));
    }
    printf("BENCH detect.labelled.precision %.3f ratio\n", ratio(all.tp, all.tp + all.fp));
    printf("BENCH detect.labelled.recall %.3f ratio\n", ratio(all.tp, all.tp + all.fn));
    printf("BENCH detect.live.rows_ever_flagged_not_leaks %zu rows\n", all.fp_any);
    run_gen_regime(PW_GEN_NOISE_WALK);
    run_gen_regime(PW_GEN_NOISE_STILL);
}

/* ---- the day suite: caches that levelled off against leaks that paused ------------------- */

static score_t day_score[PW_GEN_DAY_SHAPES][2]; /* [shape][0 live 60 s, 1 screens 15 min] */

/* One host of a day shape through the product: live (60 s samples streamed with a pass every
 * 5 min of sample time, PW_DETECT_PASS_S overrides: days of 30-s passes take hours) or as a
 * capture of 15-minute screens imported at once. */
static void run_day_case(pw_gen_day_t shape, double onset_h, double grow_h, double flat_h,
                         size_t points, int64_t start_ms, int screens, uint64_t seed,
                         const char *what)
{
    int64_t iv = screens ? 900000 : 60000;
    pw_gen_t *g = pw_gen_new_day(seed, shape, onset_h, grow_h, flat_h,
                                 shape == PW_GEN_DAY_OFFICE ? points : 0, GEN_ROWS, start_ms, iv);
    if (g == NULL)
        abort();
    static char name[128];
    snprintf(name, sizeof(name), "day %s %s %s seed %llu", pw_gen_day_name(shape),
             screens ? "screens 15 min" : "live 60 s", what, (unsigned long long)seed);
    int leak = pw_gen_day_leak(shape);
    case_t c;
    case_init(&c, name, 0, leak ? PW_GEN_EVENT_TAG : "none");
    if (getenv("PW_DETECT_PASS_S") == NULL)
        c.pass_ms = 300000;
    score_t one;
    memset(&one, 0, sizeof(one));
    extra = &one;
    pw_sample_t *ss = NULL;
    size_t n = 0, cap = 0;
    uint32_t boot;
    if (screens) {
        for (;;) {
            if (n == cap) {
                cap = cap ? 2 * cap : 128;
                ss = pw_realloc(ss, cap * sizeof(*ss));
                if (ss == NULL)
                    abort();
            }
            pw_sample_init(&ss[n]);
            if (pw_gen_next(g, &ss[n], &boot) != 0) {
                pw_sample_close(&ss[n]);
                break;
            }
            n++;
        }
        import(&c, ss, n, capture_width(ss, n), name, strlen(name));
        if (leak)
            label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
    } else {
        pw_source_info_t info;
        windows_info(&info, 64, "10.0", "x64");
        stream_hello(&c, &info);
        pw_sample_t s;
        pw_sample_init(&s);
        int labelled = 0;
        while (pw_gen_next(g, &s, &boot) == 0) {
            stream(&c, &s);
            if (!labelled && leak) {
                label(&c, PW_GEN_EVENT_TAG, PW_GEN_EVENT_POOL);
                labelled = 1;
            }
        }
        stream_end(&c);
        pw_sample_close(&s);
    }
    finish(&c);
    extra = NULL;
    score_t *t = &day_score[shape][screens];
    t->tp += one.tp, t->fp += one.fp, t->fn += one.fn, t->tp_any += one.tp_any;
    t->fp_any += one.fp_any, t->real += one.real, t->real_ok += one.real_ok;
    case_free(&c);
    for (size_t i = 0; i < n; i++)
        pw_sample_close(&ss[i]);
    pw_free(ss);
    pw_gen_free(g);
}

/* The day suite (`bench_detect day`): office-hours leaks with 1, 2 and 3 days of history ending
 * at HH:15 UTC for every hour; leaks that grew N h and paused M h <= 1.5 N; caches that filled
 * (rate falling to 0) over N h then stayed flat M h at any M; caches that grew at one rate for
 * N h then stayed flat M h >= 2.5 N; N of 4, 8, 16 h (caches that levelled: 2, 4, 8), onset
 * 1 h, 2 seeds; each live (60 s, a pass every 5 min) and as 15-minute screens
 * (PW_DETECT_DAY=screens: those alone). */
static void run_day_suite(void)
{
    int saved = verbose;
    verbose = getenv("PW_DETECT_TRACE") != NULL;
    memset(day_score, 0, sizeof(day_score));
    /* PW_DETECT_DAY=screens: the screens alone (seconds; the live half takes an hour or more) */
    const char *only_how = getenv("PW_DETECT_DAY");
    int from = only_how != NULL && strcmp(only_how, "screens") == 0;
    for (int screens = from; screens < 2; screens++) {
        int64_t iv = screens ? 900000 : 60000;
        for (int days = 1; days <= 3; days++)
            for (int h = 0; h < 24; h++) {
                int64_t end = START_MS + 4 * 86400000LL + (int64_t)h * 3600000 + 15 * 60000;
                size_t points = (size_t)((int64_t)days * 86400000LL / iv) + 1;
                char what[48];
                snprintf(what, sizeof(what), "%d day(s) to %02d:15", days, h);
                run_day_case(PW_GEN_DAY_OFFICE, 0, 0, 0, points, end - days * 86400000LL, screens,
                             (uint64_t)(days * 24 + h), what);
            }
        static const double grow[] = {4, 8, 16}, level_grow[] = {2, 4, 8};
        static const double pause[] = {0.25, 0.5, 1, 1.5}, fill_flat[] = {0.25, 0.5, 1, 2};
        static const double level_flat[] = {2.5, 4};
        for (uint64_t seed = 0; seed < 2; seed++)
            for (size_t i = 0; i < 3; i++) {
                char what[48];
                for (size_t j = 0; j < 4; j++) {
                    snprintf(what, sizeof(what), "grew %.0f h flat %.0f h", grow[i],
                             grow[i] * pause[j]);
                    run_day_case(PW_GEN_DAY_PLATEAU, 1, grow[i], grow[i] * pause[j], 0, START_MS,
                                 screens, seed, what);
                    snprintf(what, sizeof(what), "filled %.0f h flat %.0f h", grow[i],
                             grow[i] * fill_flat[j]);
                    run_day_case(PW_GEN_DAY_CACHE_FILL, 1, grow[i], grow[i] * fill_flat[j], 0,
                                 START_MS, screens, seed, what);
                }
                for (size_t j = 0; j < 2; j++) {
                    snprintf(what, sizeof(what), "grew %.0f h flat %.0f h", level_grow[i],
                             level_grow[i] * level_flat[j]);
                    run_day_case(PW_GEN_DAY_CACHE_LEVEL, 1, level_grow[i],
                                 level_grow[i] * level_flat[j], 0, START_MS, screens, seed, what);
                }
            }
        (void)iv;
    }
    verbose = saved;
    score_t all;
    memset(&all, 0, sizeof(all));
    for (int sh = 0; sh < PW_GEN_DAY_SHAPES; sh++)
        for (int sc = 0; sc < 2; sc++) {
            const score_t *t = &day_score[sh][sc];
            const char *how = sc ? "screens" : "live";
            if (pw_gen_day_leak((pw_gen_day_t)sh))
                printf("BENCH detect.day.%s.%s.recall %.3f ratio (%zu of %zu; false suspects "
                       "%zu)\n",
                       pw_gen_day_name((pw_gen_day_t)sh), how, ratio(t->tp, t->tp + t->fn), t->tp,
                       t->tp + t->fn, t->fp);
            else
                printf("BENCH detect.day.%s.%s.false_suspects %zu rows (ever: %zu)\n",
                       pw_gen_day_name((pw_gen_day_t)sh), how, t->fp, t->fp_any);
            all.tp += t->tp, all.fp += t->fp, all.fn += t->fn;
        }
    printf("BENCH detect.day.precision %.3f ratio\n", ratio(all.tp, all.tp + all.fp));
    printf("BENCH detect.day.recall %.3f ratio\n", ratio(all.tp, all.tp + all.fn));
}

/* ddk-2003 as the e2e restart test and a new user see it: one day of history at one sample a
 * minute (the agent's --sim.backfill=1d, landing before the first pass), then an hour streamed
 * live with a pass every 30 s; the day ending at HH:15 UTC for every hour of the day. Right:
 * `Ddk ` the only suspect (final: at the end; any: at any pass). */
static void run_ddk_day(void)
{
    score_t t;
    memset(&t, 0, sizeof(t));
    int saved = verbose;
    verbose = 1;
    size_t only_ddk_final = 0, only_ddk_any = 0;
    for (int h = 0; h < 24; h++) {
        int64_t end = START_MS + 2 * 86400000LL + (int64_t)h * 3600000 + 15 * 60000;
        char name[64];
        snprintf(name, sizeof(name), "ddk-2003 day to %02d:15", h);
        score_t one;
        memset(&one, 0, sizeof(one));
        extra = &one;
        run_sim_window("ddk-2003", 0, end - 86400000LL, 60000, 86400000LL, 86400000LL + 3600000,
                       name);
        extra = NULL;
        only_ddk_final += one.fp == 0 && one.fn == 0;
        only_ddk_any += one.fp_any == 0 && one.fn == 0;
        t.tp += one.tp, t.fp += one.fp, t.fn += one.fn, t.tp_any += one.tp_any;
        t.fp_any += one.fp_any, t.real += one.real, t.real_ok += one.real_ok;
    }
    verbose = saved;
    printf("BENCH detect.ddk_day.precision %.3f ratio\n", ratio(t.tp, t.tp + t.fp));
    printf("BENCH detect.ddk_day.recall %.3f ratio\n", ratio(t.tp, t.tp + t.fn));
    printf("BENCH detect.ddk_day.precision_any_time %.3f ratio\n",
           ratio(t.tp_any, t.tp_any + t.fp_any));
    printf("BENCH detect.ddk_day.top1 %.3f ratio\n", ratio(t.real_ok, t.real));
    printf("BENCH detect.ddk_day.only_ddk_final %zu of 24 hours\n", only_ddk_final);
    printf("BENCH detect.ddk_day.only_ddk_any_time %zu of 24 hours\n", only_ddk_any);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return -1;
    qsort(v, n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double ratio(size_t a, size_t b)
{
    return b ? (double)a / (double)b : 1.0;
}

/* ---- end to end: the real binaries (`bench_detect e2e`) ------------------------------------
 *
 * The labelled captures go twice: through the libraries above (in process, simulated clock) and
 * as a user sends them: `poolwatch import FILE --host gen-SHAPE-xN-sSEED` to a running
 * poolwatch-collector over HTTPS, the screens 15 minutes apart ending now. Then 12-screen
 * captures of every shape are replayed by poolwatch-agent processes over mutual TLS (one screen
 * per 100 ms of wall time, 15 minutes apart in sample time), and the seed story runs as its own
 * agent: sim:ddk-2003, 14 days of 60 s samples backfilled. After two analysis passes of the
 * collector that began once everything was in, `poolwatch leaks --json` gives the suspects and
 * `poolwatch hosts --json` the ddk-2003 host's pressure. Scored as above (every listed row of a
 * host is a flag); "agree" counts the captures whose API list (tags, pools and order) equals the
 * in-process list. */
#if defined(PW_BIN_COLLECTOR) && defined(PW_BIN_CLI) && defined(PW_BIN_AGENT)
#include "detect_e2e.h"

typedef struct {
    char host[64];
    int leak;
    int regime; /* a labelled capture's noise regime (pw_gen_noise_t); the first for the rest */
    char inproc[512];
} e2e_case_t;

static pw_e2e_t *e2e;
static e2e_case_t *e2e_cases;
static size_t e2e_n, e2e_cap;

static void e2e_add(const char *host, int leak, const char *inproc)
{
    if (e2e_n == e2e_cap) {
        e2e_cap = e2e_cap ? 2 * e2e_cap : 256;
        e2e_cases = realloc(e2e_cases, e2e_cap * sizeof(*e2e_cases));
        if (e2e_cases == NULL)
            abort();
    }
    e2e_case_t *k = &e2e_cases[e2e_n++];
    snprintf(k->host, sizeof(k->host), "%s", host);
    k->leak = leak;
    k->regime = inproc != NULL ? (int)gen_noise : PW_GEN_NOISE_REDRAW;
    snprintf(k->inproc, sizeof(k->inproc), "%s", inproc ? inproc : "-");
}

static void e2e_capture(const char *host, int leak, const char *listed, const char *text,
                        size_t len)
{
    if (pw_e2e_import(e2e, host, text, len) != 0) {
        pw_e2e_stop(e2e, 1);
        exit(1);
    }
    e2e_add(host, leak, listed);
}

/* The API's suspects of `host` as "tag/pool,..." in the listed order. */
static void api_listed(json_t *sus, const char *host, char *out, size_t cap)
{
    out[0] = '\0';
    size_t i;
    json_t *o;
    json_array_foreach(sus, i, o)
    {
        const char *h = json_string_value(json_object_get(o, "host"));
        const char *t = json_string_value(json_object_get(o, "tag"));
        const char *p = json_string_value(json_object_get(o, "type"));
        if (h == NULL || t == NULL || p == NULL || strcmp(h, host) != 0)
            continue;
        listed_add(out, cap, (const uint8_t *)t, strlen(t), p);
    }
}

static void wait_two_passes(void)
{
    long p0 = pw_e2e_passes(e2e), p = p0;
    for (int i = 0; i < 1200 && (p < 0 || p < p0 + 2); i++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
        p = pw_e2e_passes(e2e);
    }
    if (p < 0 || p < p0 + 2) {
        fprintf(stderr, "bench_detect e2e: no two analysis passes within 120 s (%ld -> %ld)\n", p0,
                p);
        pw_e2e_stop(e2e, 1);
        exit(1);
    }
}

static double e2e_t0;

/* Starts the collector; the labelled captures that run next are imported too. */
static void e2e_begin(void)
{
    e2e = pw_e2e_start(PW_SOURCE_DIR, PW_BIN_COLLECTOR, PW_BIN_CLI, PW_BIN_AGENT);
    if (e2e == NULL)
        exit(1);
    e2e_t0 = now_s();
    e2e_on = 1;
}

/* The agents, the API's answers and the scores. */
static void e2e_finish(void)
{
    double t0 = e2e_t0;
    e2e_on = 0;
    size_t n_imports = e2e_n;
    printf("  (e2e: %zu labelled captures through the libraries and through `poolwatch import`: "
           "%.1f s)\n",
           n_imports, now_s() - t0);
    /* replay agents: the 12-screen captures of seed 0, one agent per shape */
    t0 = now_s();
    char start[64], path[700], src[800], host[64];
    snprintf(start, sizeof(start), "--replay.start=%lldms",
             (long long)time(NULL) * 1000 - 12 * 900000LL);
    for (int sh = 0; sh < PW_GEN_SHAPES; sh++) {
        const char *name = pw_gen_shape_name((pw_gen_shape_t)sh);
        snprintf(path, sizeof(path), "%s/gen-%s-x12-s0.txt", pw_e2e_dir(e2e), name);
        snprintf(src, sizeof(src), "replay:%s", path);
        snprintf(host, sizeof(host), "replay-%s", name);
        if (pw_e2e_agent(e2e, host, src, start, "--replay.pace=100ms", "--replay.exit_when_done") !=
            0) {
            pw_e2e_stop(e2e, 1);
            exit(1);
        }
        e2e_add(host, pw_gen_shape_leak((pw_gen_shape_t)sh), NULL);
    }
    if (pw_e2e_agent(e2e, "ddk-2003", "sim:ddk-2003", "--agent.interval=60s", "--sim.backfill=14d",
                     NULL) != 0) {
        pw_e2e_stop(e2e, 1);
        exit(1);
    }
    size_t left = pw_e2e_wait_agents(e2e, 120);
    if (left) {
        fprintf(stderr, "bench_detect e2e: %zu replay agents still running after 120 s\n", left);
        pw_e2e_stop(e2e, 1);
        exit(1);
    }
    /* the 14 days of ddk-2003 are in when the host holds 14 x 1,440 samples */
    int ddk_in = 0;
    double wait0 = now_s();
    while (!ddk_in && now_s() - wait0 < 300) {
        json_t *h = pw_e2e_cli_json(e2e, "hosts");
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(h, "hosts"), k, o)
        {
            const char *n = json_string_value(json_object_get(o, "name"));
            json_t *ns = json_object_get(o, "samples");
            if (n && strcmp(n, "ddk-2003") == 0 && json_is_integer(ns) &&
                json_integer_value(ns) >= 14 * 1440)
                ddk_in = 1;
        }
        json_decref(h);
        if (!ddk_in) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    printf("  (e2e: replay agents done, ddk-2003 backfill %s: %.1f s)\n",
           ddk_in ? "in" : "NOT in after 300 s", now_s() - t0);
    wait_two_passes();

    json_t *lk = pw_e2e_cli_json(e2e, "leaks --limit 1000000");
    json_t *sus = json_object_get(lk, "suspects");
    if (!json_is_array(sus)) {
        fprintf(stderr, "bench_detect e2e: `poolwatch leaks --json` has no suspects array\n");
        pw_e2e_stop(e2e, 1);
        exit(1);
    }
    size_t tp = 0, fp = 0, fn = 0, agree = 0, rtp = 0, rfp = 0, rfn = 0;
    /* per regime of the labelled captures: tp, fp, fn, agree, captures (the first regime's in
     * tp .. agree above) */
    size_t rg[3][5];
    memset(rg, 0, sizeof(rg));
    char got[512], ev[32];
    snprintf(ev, sizeof(ev), "%s/%s", PW_GEN_EVENT_TAG, pw_pool_name(PW_GEN_EVENT_POOL));
    for (size_t i = 0; i < e2e_n; i++) {
        e2e_case_t *k = &e2e_cases[i];
        api_listed(sus, k->host, got, sizeof(got));
        int replay = i >= n_imports;
        size_t listed = 0, hit = 0;
        for (char *t = got, *save = NULL, *w; (w = strtok_r(t, ",", &save)) != NULL; t = NULL) {
            listed++;
            hit += strcmp(w, ev) == 0;
        }
        api_listed(sus, k->host, got, sizeof(got)); /* strtok_r cut it */
        size_t *ttp = replay ? &rtp : &tp, *tfp = replay ? &rfp : &fp, *tfn = replay ? &rfn : &fn;
        if (k->regime != PW_GEN_NOISE_REDRAW)
            ttp = &rg[k->regime][0], tfp = &rg[k->regime][1], tfn = &rg[k->regime][2];
        *ttp += k->leak && hit;
        *tfn += k->leak && !hit;
        *tfp += listed - (k->leak && hit);
        rg[k->regime][4]++;
        if (!replay)
            *(k->regime != PW_GEN_NOISE_REDRAW ? &rg[k->regime][3] : &agree) +=
                strcmp(got, k->inproc) == 0;
        if (!replay && strcmp(got, k->inproc) != 0)
            printf("  e2e differs: %s: API [%s], in process [%s]\n", k->host, got, k->inproc);
        if (replay)
            printf("  e2e replay agent %s (%s): listed [%s]\n", k->host,
                   k->leak ? "leak" : "no leak", got);
    }
    api_listed(sus, "ddk-2003", got, sizeof(got));
    int ddk_top = strncmp(got, "Ddk/nonpaged", 12) == 0;
    printf("  e2e ddk-2003: listed [%s]\n", got);
    json_t *hs = pw_e2e_cli_json(e2e, "hosts");
    size_t k;
    json_t *o;
    json_array_foreach(json_object_get(hs, "hosts"), k, o)
    {
        const char *n = json_string_value(json_object_get(o, "name"));
        if (n == NULL || strcmp(n, "ddk-2003") != 0)
            continue;
        json_t *eta = json_object_get(o, "nonpaged_eta_ms");
        const char *lv = json_string_value(json_object_get(o, "nonpaged_level"));
        const char *lsrc = json_string_value(json_object_get(o, "nonpaged_limit_source"));
        printf("  e2e ddk-2003 host: nonpaged %.1f MB of %.1f MB (limit source %s), level %s, "
               "ETA %s\n",
               (double)json_integer_value(json_object_get(o, "nonpaged_bytes")) / 1048576.0,
               (double)json_integer_value(json_object_get(o, "nonpaged_limit_bytes")) / 1048576.0,
               lsrc ? lsrc : "?", lv ? lv : "?", json_is_integer(eta) ? "set" : "none");
        if (json_is_integer(eta))
            printf("BENCH detect.e2e.ddk_eta_h %.1f h\n",
                   ((double)json_integer_value(eta) - (double)time(NULL) * 1000.0) / 3600000.0);
    }
    json_decref(hs);
    json_decref(lk);
    printf("BENCH detect.e2e.import_precision %.3f ratio\n", ratio(tp, tp + fp));
    printf("BENCH detect.e2e.import_recall %.3f ratio\n", ratio(tp, tp + fn));
    printf("BENCH detect.e2e.import_agree_with_libraries %zu of %zu captures\n", agree,
           n_imports - rg[PW_GEN_NOISE_WALK][4] - rg[PW_GEN_NOISE_STILL][4]);
    for (int r = PW_GEN_NOISE_WALK; r <= PW_GEN_NOISE_STILL; r++) {
        const char *rn = pw_gen_noise_name((pw_gen_noise_t)r);
        printf("BENCH detect.e2e.%s.import_precision %.3f ratio\n", rn,
               ratio(rg[r][0], rg[r][0] + rg[r][1]));
        printf("BENCH detect.e2e.%s.import_recall %.3f ratio\n", rn,
               ratio(rg[r][0], rg[r][0] + rg[r][2]));
        printf("BENCH detect.e2e.%s.import_agree_with_libraries %zu of %zu captures\n", rn,
               rg[r][3], rg[r][4]);
    }
    printf("BENCH detect.e2e.replay_precision %.3f ratio\n", ratio(rtp, rtp + rfp));
    printf("BENCH detect.e2e.replay_recall %.3f ratio\n", ratio(rtp, rtp + rfn));
    printf("BENCH detect.e2e.ddk_top1 %d ratio\n", ddk_top);
    pw_e2e_stop(e2e, getenv("PW_DETECT_KEEP") != NULL);
}
#else
static void e2e_capture(const char *host, int leak, const char *listed, const char *text,
                        size_t len)
{
    (void)host, (void)leak, (void)listed, (void)text, (void)len;
}

static void e2e_begin(void)
{
    fprintf(stderr, "bench_detect e2e: built without the collector, CLI and agent binaries\n");
    exit(1);
}

static void e2e_finish(void)
{
}
#endif

/* The regime named by argv[2] (walk when none or another name): still, redraw or walk. */
static pw_gen_noise_t regime_arg(int argc, char **argv)
{
    const char *rg = argc > 2 ? argv[2] : "walk";
    return strcmp(rg, "still") == 0    ? PW_GEN_NOISE_STILL
           : strcmp(rg, "redraw") == 0 ? PW_GEN_NOISE_REDRAW
                                       : PW_GEN_NOISE_WALK;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    only = argc > 1 ? argv[1] : NULL;
    trace_points =
        getenv("PW_DETECT_TRACE") != NULL && strcmp(getenv("PW_DETECT_TRACE"), "points") == 0;
    int captures = only == NULL || strcmp(only, "captures") == 0;
    int labelled = only == NULL || strcmp(only, "labelled") == 0;
    double t0 = now_s();
    /* the end-to-end part: alone (`e2e`), or with the whole run unless PW_DETECT_E2E=0 */
    int e2e_mode = only != NULL && strcmp(only, "e2e") == 0;
    const char *ee = getenv("PW_DETECT_E2E");
    int with_e2e = e2e_mode || (only == NULL && (ee == NULL || strcmp(ee, "0") != 0));
    if (only != NULL && (strcmp(only, "walk") == 0 || strcmp(only, "still") == 0)) {
        /* one regime of the labelled captures alone */
        run_gen_regime(strcmp(only, "walk") == 0 ? PW_GEN_NOISE_WALK : PW_GEN_NOISE_STILL);
        return 0;
    }
    if (only != NULL && strcmp(only, "layouts") == 0) {
        /* the labelled captures of a regime (argv[2]: walk (default), still, redraw) in the
         * public layouts, against the same captures as XP screens */
        gen_layouts_on = 1;
        run_gen_regime(regime_arg(argc, argv));
        print_gen_layouts();
        return 0;
    }
    if (only != NULL && strcmp(only, "console") == 0) {
        /* the labelled captures of a regime (argv[2], as for layouts) as console screens */
        gen_layouts_on = 2;
        run_gen_regime(regime_arg(argc, argv));
        const score_t *t = &console_score;
        printf("BENCH detect.console.precision %.3f ratio\n", ratio(t->tp, t->tp + t->fp));
        printf("BENCH detect.console.recall %.3f ratio\n", ratio(t->tp, t->tp + t->fn));
        printf("BENCH detect.console.false_suspects %zu rows\n", t->fp);
        printf("BENCH detect.console.leaks_out_of_view %zu of %zu captures\n", console_leaks_hidden,
               console_cases);
        return 0;
    }
    if (only != NULL && strcmp(only, "day") == 0) {
        run_day_suite();
        return 0;
    }
    if (only != NULL && strcmp(only, "ddk-day") == 0) {
        run_ddk_day();
        return 0;
    }
    if (labelled || e2e_mode) {
        const char *lh = getenv("PW_DETECT_LIVE_HOURS");
        if (getenv("PW_DETECT_TRACE") != NULL)
            verbose = 1;
        if (with_e2e)
            e2e_begin();
        run_gen_suite(e2e_mode ? 0 : lh != NULL ? atoi(lh) : 24);
        if (with_e2e) {
            double t1 = now_s();
            e2e_finish();
            printf("BENCH detect.e2e.agents_and_scoring_s %.1f s\n", now_s() - t1);
        }
        if (only != NULL)
            return 0;
    }
    for (size_t i = 0; captures && i < sizeof(poolmon_files) / sizeof(*poolmon_files); i++)
        run_poolmon(poolmon_files[i]);
    if (captures)
        run_case09_rebuilt();
    for (size_t i = 0; captures && i < sizeof(slab_files) / sizeof(*slab_files); i++)
        run_slab(slab_files[i]);
    if (only == NULL || strstr("linux-files", only) != NULL)
        run_linux_files();
    run_sim("leak-linear", 0);
    run_sim("leak-step", 0);
    run_sim("leak-bursty", 0);
    run_sim("leak-slow", 0);
    run_sim("cache-plateau", 0);
    run_sim("steady", 0);
    run_sim("steady", 1);
    for (uint32_t h = 0; h < 8; h++)
        run_sim("fleet-small", h);
    run_sim("ddk-2003", 0);

    printf("SUMMARY final: tp=%zu fp=%zu fn=%zu; any time: tp=%zu fp=%zu | baseline final: tp=%zu "
           "fp=%zu fn=%zu; any time: tp=%zu fp=%zu\n",
           S.tp, S.fp, S.fn, S.tp_any, S.fp_any, S.btp, S.bfp, S.bfn, S.btp_any, S.bfp_any);
    size_t leaks = S.tp + S.fn;
    printf("BENCH detect.precision %.3f ratio\n", ratio(S.tp, S.tp + S.fp));
    printf("BENCH detect.recall %.3f ratio\n", ratio(S.tp, leaks));
    printf("BENCH detect.precision_any_time %.3f ratio\n", ratio(S.tp_any, S.tp_any + S.fp_any));
    printf("BENCH detect.recall_any_time %.3f ratio\n", ratio(S.tp_any, leaks));
    printf("BENCH detect.median_minutes_to_flag %.1f min\n", median(S.minutes, S.n_min));
    printf("BENCH detect.minutes_to_flag_1mb_per_h %.1f min\n", linear_minutes);
    printf("BENCH detect.real_cases_top1 %.3f ratio\n", ratio(S.real_ok, S.real));
    printf("BENCH detect.ddk_warn_nonpaged_mb %.1f MB\n", ddk_warn_mb);
    printf("BENCH detect.ddk_critical_nonpaged_mb %.1f MB\n", ddk_crit_mb);
    printf("BENCH detect.baseline_precision %.3f ratio\n", ratio(S.btp, S.btp + S.bfp));
    printf("BENCH detect.baseline_recall %.3f ratio\n", ratio(S.btp, leaks));
    printf("BENCH detect.baseline_precision_any_time %.3f ratio\n",
           ratio(S.btp_any, S.btp_any + S.bfp_any));
    printf("BENCH detect.baseline_recall_any_time %.3f ratio\n", ratio(S.btp_any, leaks));
    printf("BENCH detect.baseline_median_minutes_to_flag %.1f min\n", median(S.bminutes, S.n_bmin));
    printf("BENCH detect.baseline_minutes_to_flag_1mb_per_h %.1f min\n", linear_bminutes);
    printf("BENCH detect.baseline_real_cases_top1 %.3f ratio\n", ratio(S.breal_ok, S.real));
    printf("BENCH detect.baseline_ddk_near_limit_nonpaged_mb %.1f MB\n", ddk_base_mb);
    printf("BENCH detect.run_s %.1f s\n", now_s() - t0);
    return 0;
}
