/* bench_detect.c: the detection evaluation: a labelled suite fed
 * through the same analysis the collector runs (collector/analysis_run.c), compared in the same
 * run with a plain Prometheus predict_linear-style threshold rule.
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
 *    snapshot. case09 (Drsd, two screens before/after one print job) is labelled "Drsd"; every
 *    other capture is a single snapshot (or no poolmon at all: cases 18, 32 are rejected) whose
 *    right answer is "no suspect". The slabinfo dumps are all single snapshots (the README gives
 *    no before/after numbers for any of them): the right answer is "no suspect" (case22 is the
 *    negative control "leak not in slab", case31 reclaimable dentries, case24 the `broken`
 *    cache, case20/25 inode/dentry growth, case23/26 buffer_head). Each cache is a row:
 *    bytes = num_slabs * pagesperslab * 4096 (active_objs * objsize when absent), diff =
 *    active_objs.
 *    Captures are imported hosts (no live stream): as in analysis_run.c, a row of the last
 *    screen with 2 .. 11 screens (fewer than pw_leak_eval's 12 points) is judged by
 *    pw_screen_compare (Diff and Bytes grew from the first to the last screen, never fell;
 *    method "compare", weaker evidence than a trend, printed as such); a row with a single
 *    screen never is.
 *  - case09 rebuilt: the printer-driver leak as a series, ASSUMING one print job every 10 min
 *    (the capture gives the per-job leak: allocs +177, frees +171, 6 blocks of 832 B), 10 s
 *    sampling, 4 h. Labelled Drsd.
 *
 * Analysis per case, as analysis_run.c does it: every pass (30 s, 5 min for presets longer than
 * 2 days) the rows that grew >= 64 KiB since the first sample, the 16 largest growths, get
 * pw_leak_eval with the collector's default options on the last hour of raw points (a short
 * pass) and on the last 24 h at 15-min steps with the long-window options (analysis_run.c's
 * second pass for slow and intermittent leaks). Pressure: the warn/critical alerts of
 * analysis_run.c (ratio >= 0.70 for 5 min, >= 0.85 for 1 min).
 *
 * Baseline ("predict_linear"): for every row, the least-squares slope of bytes over the last
 * hour (at least 30 min of points) times 24 h >= 1 MiB, held for 10 min (a `for: 10m` rule);
 * for the host: predict_linear(nonpaged[1h], 4h) >= limit.
 *
 * Scoring, per (case, host, tag, pool) row: "final" = suspect in the last pass of the case
 * (what an operator sees at the end; caches have levelled off by then); "any" = suspect in any
 * pass (every alert that went out). precision = TP / (TP + FP), recall = TP / leaks. Time to
 * flag = first pass that flags the leak row minus the first sample where it had grown.
 * real_cases_top1 = fraction of real cases (captures, case09 rebuilt, ddk-2003) whose
 * top-ranked final suspect is the labelled tag ("none" when the label is no suspect).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alert.h"
#include "alloc.h"
#include "analysis.h"
#include "poolmon_text.h"
#include "sample.h"
#include "slabinfo_text.h"
#include "source_sim.h"

#define MIN_GROWTH      (64u << 10) /* analysis_run.c's screen */
#define CANDIDATES      16
#define SHORT_MS        (3600000LL)            /* raw points read per candidate (1 h) */
#define LONG_MS         (24 * 3600000LL)       /* long pass window */
#define LONG_STEP_MS    (900000LL)             /* long pass points: 15-min steps */
#define HOST_HIST       1024                   /* PW_FLEET_HISTORY */
#define START_MS        INT64_C(1704067200000) /* 2024-01-01 00:00:00 UTC */
#define BASE_HORIZON_MS (24 * 3600000.0)
#define BASE_GROWTH     (1024.0 * 1024.0)
#define BASE_FOR_MS     (10 * 60000LL)

typedef struct {
    pw_row_point_t *p;
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

static void ring_push(ring_t *r, pw_row_point_t v)
{
    r->p[(r->head + r->n) % r->cap] = v;
    if (r->n < r->cap)
        r->n++;
    else
        r->head = (r->head + 1) % r->cap;
}

static pw_row_point_t *ring_at(ring_t *r, size_t i)
{
    return &r->p[(r->head + i) % r->cap];
}

/* copies the points with ts >= from into out, oldest first */
static size_t ring_copy(ring_t *r, int64_t from, pw_row_point_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        pw_row_point_t *q = ring_at(r, i);
        if (q->ts_ms >= from)
            out[k++] = *q;
    }
    return k;
}

typedef struct {
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len, pool;
    int leak;         /* label: 1 = leak */
    uint64_t base;    /* bytes at the first sample (analysis_run.c's baseline) */
    int64_t onset_ms; /* first sample where a leak row had grown; -1 */
    ring_t s, l;      /* raw last hour; 15-min steps for 24 h */
    int64_t flag_ms;  /* first pass that flagged it, -1 */
    int final_flag;   /* flagged in the last pass */
    double final_score;
    int64_t bflag_ms, bcond_since; /* baseline */
    int bfinal;
    pw_screen_row_t *scr; /* imported cases: every screen of the row */
    size_t n_scr, cap_scr;
    pw_compare_t cmp; /* the last comparison that flagged it */
    int cmp_flag;
    int64_t flag_last_ms;          /* last pass that flagged it */
    size_t flag_passes, flag_long; /* passes that flagged it; of which by the long pass only */
    double flag_rate;              /* growth rate (B/h) when first flagged */
} row_t;

typedef struct {
    const char *name;
    int real;           /* counts for real_cases_top1 */
    const char *expect; /* label shown: tag or "none" */
    int imported;       /* a capture (no live stream): short rows judged by comparison */
    row_t *rows;
    size_t n, cap;
    ring_t np, pg; /* host totals (v in bytes in .bytes) */
    uint64_t np_limit;
    int64_t last_ms;
    int64_t pass_ms, next_pass;
    pw_alert_set_t *alerts;
    double warn_mb, crit_mb, base_near_mb; /* nonpaged MB when first fired, -1 */
    int64_t warn_ms, crit_ms, base_near_ms;
    double warn_eta_h;
    /* scratch */
    pw_row_point_t *tmp;
    pw_point_t *htmp;
    size_t tmp_cap;
    double eval_s;
    size_t evals;
} case_t;

typedef struct {
    size_t tp, fp, fn, tp_any, fp_any;
    size_t btp, bfp, bfn, btp_any, bfp_any;
    double minutes[256], bminutes[256];
    size_t n_min, n_bmin;
    size_t real, real_ok, breal_ok;
} score_t;

static score_t S;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void case_init(case_t *c, const char *name, int real, const char *expect, int64_t interval,
                      int64_t pass_ms)
{
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->real = real;
    c->expect = expect;
    c->pass_ms = pass_ms;
    ring_init(&c->np, HOST_HIST);
    ring_init(&c->pg, HOST_HIST);
    c->tmp_cap = (size_t)(SHORT_MS / interval) + 4;
    if (c->tmp_cap < LONG_MS / LONG_STEP_MS + 4)
        c->tmp_cap = LONG_MS / LONG_STEP_MS + 4;
    c->tmp = pw_calloc(c->tmp_cap, sizeof(*c->tmp));
    c->htmp = pw_calloc(HOST_HIST, sizeof(*c->htmp));
    c->warn_mb = c->crit_mb = c->base_near_mb = -1;
    c->warn_ms = c->crit_ms = c->base_near_ms = -1;
    c->warn_eta_h = -1;
    if (c->tmp == NULL || c->htmp == NULL || pw_alert_set_new(&c->alerts) != 0)
        abort();
}

static row_t *row_get(case_t *c, size_t hint, const pw_entry_t *e)
{
    if (hint < c->n && c->rows[hint].tag_len == e->tag_len && c->rows[hint].pool == e->pool &&
        memcmp(c->rows[hint].tag, e->tag, e->tag_len) == 0)
        return &c->rows[hint];
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].tag_len == e->tag_len && c->rows[i].pool == e->pool &&
            memcmp(c->rows[i].tag, e->tag, e->tag_len) == 0)
            return &c->rows[i];
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
    ring_init(&r->s, c->tmp_cap);
    ring_init(&r->l, (size_t)(LONG_MS / LONG_STEP_MS) + 2);
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

/* ---- one analysis pass ------------------------------------------------------------------- */

typedef struct {
    size_t row;
    uint64_t growth;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    return x->growth > y->growth ? -1 : x->growth < y->growth;
}

static size_t host_series(case_t *c, int pool, int64_t from)
{
    ring_t *h = pool == PW_POOL_NONPAGED ? &c->np : &c->pg;
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++) {
        pw_row_point_t *q = ring_at(h, i);
        if (q->ts_ms >= from)
            c->htmp[k++] = (pw_point_t){q->ts_ms, (double)q->bytes};
    }
    return k;
}

/* analysis_run.c's change points (short pass only): a run of equal (bytes, diff) values carries one
 * piece of evidence, not one per sample (a piecewise-constant series makes Mann-Kendall's S large
 * while only a few changes happened); the first point of each run and the last point are kept. */
static size_t change_points(pw_row_point_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || p[i].bytes != p[k - 1].bytes || p[i].diff != p[k - 1].diff || i + 1 == n)
            p[k++] = p[i];
    return k;
}

/* analysis_run.c's long pass gets at most 128 host points (evenly thinned): its share only
 * needs the host's trend, and Theil-Sen is O(n^2). */
static size_t thin(pw_point_t *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = 0;
    for (size_t i = 0; i < max; i++)
        p[k++] = p[i * (n - 1) / (max - 1)];
    return k;
}

static void long_opts(pw_leak_opts_t *o)
{
    /* analysis_run.c's long pass: 24 h at 15-min steps, 3 parts of 8 h, 4 KiB/h. */
    pw_leak_opts_default(o);
    o->window_ms = LONG_MS;
    o->min_span_ms = 6 * 3600000LL;
    o->min_rate_bytes_per_h = 4096.0;
}

static void pass(case_t *c, int64_t now, int final)
{
    /* pressure alerts as analysis_run.c (only the ratio drives them) */
    if (c->np_limit > 0 && c->np.n > 0) {
        double used = (double)ring_at(&c->np, c->np.n - 1)->bytes;
        double ratio = used / (double)c->np_limit;
        static const struct {
            const char *sev;
            double th;
            int64_t for_ms;
        } lv[2] = {{"warning", 0.70, 300000}, {"critical", 0.85, 60000}};
        for (int k = 0; k < 2; k++) {
            pw_alert_key_t key;
            memset(&key, 0, sizeof(key));
            snprintf(key.host, sizeof(key.host), "%s", c->name);
            snprintf(key.pool, sizeof(key.pool), "nonpaged");
            snprintf(key.severity, sizeof(key.severity), "%s", lv[k].sev);
            pw_alert_rule_t rule = {lv[k].th, 0.02, lv[k].for_ms, 900000};
            pw_alert_transition_t tr;
            if (pw_alert_eval(c->alerts, &rule, &key, ratio, now, &tr) > 0 &&
                tr.to == PW_ALERT_FIRING) {
                if (k == 0 && c->warn_ms < 0) {
                    c->warn_ms = now;
                    c->warn_mb = used / 1048576.0;
                    size_t hn = host_series(c, PW_POOL_NONPAGED, 0);
                    pw_pressure_t pr;
                    if (pw_pressure_eval(c->htmp, hn, c->np_limit, NULL, &pr) == 0 &&
                        pr.eta_ms >= 0)
                        c->warn_eta_h = (double)pr.eta_ms / 3600000.0;
                }
                if (k == 1 && c->crit_ms < 0) {
                    c->crit_ms = now;
                    c->crit_mb = used / 1048576.0;
                }
            }
        }
        /* baseline: predict_linear(nonpaged[1h], 4h) >= limit */
        if (c->base_near_ms < 0) {
            double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
            for (size_t i = 0; i < c->np.n; i++) {
                pw_row_point_t *q = ring_at(&c->np, i);
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
                    c->base_near_mb = used / 1048576.0;
                }
            }
        }
    }

    /* imported capture: analysis_run.c's compare_pass (rows of the last screen with 2 .. 11
     * screens); rows with enough screens go to the trend passes below */
    pw_leak_opts_t so, lo;
    pw_leak_opts_default(&so);
    long_opts(&lo);
    if (c->imported) {
        for (size_t i = 0; i < c->n; i++) {
            row_t *r = &c->rows[i];
            r->final_flag = 0;
            r->final_score = 0;
            if (r->n_scr < 2 || r->n_scr >= so.min_points || r->scr[r->n_scr - 1].ts_ms != now)
                continue;
            pw_compare_t cmp;
            c->evals++;
            if (pw_screen_compare(r->scr, r->n_scr, &cmp) != 0 || !cmp.suspect)
                continue;
            if (r->flag_ms < 0)
                r->flag_ms = now;
            r->final_flag = 1;
            r->final_score = cmp.score;
            r->cmp = cmp;
            r->cmp_flag = 1;
        }
    }

    /* leak screen */
    cand_t cand[CANDIDATES];
    size_t nc = 0;
    for (size_t i = 0; i < c->n; i++) {
        row_t *r = &c->rows[i];
        if (c->imported && r->n_scr > 0 && r->n_scr < so.min_points)
            continue; /* judged by comparison above */
        r->final_flag = 0;
        r->final_score = 0;
        if (r->s.n == 0)
            continue;
        uint64_t b = ring_at(&r->s, r->s.n - 1)->bytes;
        if (b < r->base + MIN_GROWTH)
            continue;
        uint64_t g = b - r->base;
        if (nc < CANDIDATES) {
            cand[nc++] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        } else if (g > cand[nc - 1].growth) {
            cand[nc - 1] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        }
    }
    double t0 = now_s();
    for (size_t k = 0; k < nc; k++) {
        row_t *r = &c->rows[cand[k].row];
        int pool = r->pool == PW_POOL_NONPAGED ? PW_POOL_NONPAGED : PW_POOL_PAGED;
        double score = 0, rate = 0;
        int flagged = 0, by_short = 0;
        for (int pass_i = 0; pass_i < 2; pass_i++) {
            ring_t *ring = pass_i ? &r->l : &r->s;
            int64_t from = now - (pass_i ? LONG_MS : SHORT_MS);
            size_t n = ring_copy(ring, from, c->tmp);
            if (!pass_i) /* 15-min steps are coarse already: a step leak is flat in between */
                n = change_points(c->tmp, n);
            size_t hn = host_series(c, pool, from);
            if (pass_i)
                hn = thin(c->htmp, hn, 128);
            pw_leak_input_t in = {c->tmp, n, c->htmp, hn, r->base, 1};
            pw_leak_t lk;
            if (pw_leak_eval(&in, pass_i ? &lo : &so, &lk) != 0)
                continue;
            c->evals++;
            if (lk.suspect) {
                flagged = 1;
                by_short |= !pass_i;
                if (lk.score > score)
                    score = lk.score, rate = lk.rate_bytes_per_h;
            }
        }
        if (flagged) {
            if (r->flag_ms < 0) {
                r->flag_ms = now;
                r->flag_rate = rate;
            }
            r->flag_last_ms = now;
            r->flag_passes++;
            r->flag_long += !by_short;
            r->final_flag = 1;
            r->final_score = score;
        }
    }
    c->eval_s += now_s() - t0;

    /* baseline rule on every row */
    for (size_t i = 0; i < c->n; i++) {
        row_t *r = &c->rows[i];
        r->bfinal = 0;
        double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
        int64_t first = -1;
        for (size_t j = 0; j < r->s.n; j++) {
            pw_row_point_t *q = ring_at(&r->s, j);
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
    (void) final;
}

static void feed(case_t *c, const pw_sample_t *s)
{
    int64_t ts = (int64_t)s->timestamp_ms;
    for (size_t i = 0; i < s->n; i++) {
        const pw_entry_t *e = &s->entries[i];
        row_t *r = row_get(c, i, e);
        pw_row_point_t p = {ts, e->bytes, e->diff};
        ring_push(&r->s, p);
        /* 15-min steps: the last value of each step */
        if (r->l.n > 0 && ring_at(&r->l, r->l.n - 1)->ts_ms / LONG_STEP_MS == ts / LONG_STEP_MS)
            *ring_at(&r->l, r->l.n - 1) = p;
        else
            ring_push(&r->l, p);
        if (r->onset_ms < 0 && e->bytes > r->base)
            r->onset_ms = ts;
        if (c->imported) {
            if (r->n_scr == r->cap_scr) {
                r->cap_scr = r->cap_scr ? r->cap_scr * 2 : 4;
                r->scr = pw_realloc(r->scr, r->cap_scr * sizeof(*r->scr));
                if (r->scr == NULL)
                    abort();
            }
            r->scr[r->n_scr++] = (pw_screen_row_t){ts, e->allocs, e->frees, e->diff, e->bytes};
        }
    }
    ring_push(&c->np, (pw_row_point_t){ts, s->totals.nonpaged_bytes, 0});
    ring_push(&c->pg, (pw_row_point_t){ts, s->totals.paged_bytes, 0});
    c->last_ms = ts;
    if (c->next_pass == 0)
        c->next_pass = ts + c->pass_ms;
    if (ts >= c->next_pass) {
        pass(c, ts, 0);
        c->next_pass += c->pass_ms;
    }
}

/* The last pass, then scoring and the per-case line. */
static void finish(case_t *c)
{
    pass(c, c->last_ms, 1);
    const row_t *top = NULL, *btop = NULL;
    size_t leaks = 0, nflag = 0, nany = 0;
    for (size_t i = 0; i < c->n; i++) {
        const row_t *r = &c->rows[i];
        leaks += r->leak;
        if (r->final_flag && (top == NULL || r->final_score > top->final_score))
            top = r;
        if (r->bfinal && (btop == NULL || r->bflag_ms < btop->bflag_ms))
            btop = r;
        nflag += r->final_flag;
        nany += r->flag_ms >= 0;
        if (r->leak) {
            S.tp += r->final_flag;
            S.fn += !r->final_flag;
            S.tp_any += r->flag_ms >= 0;
            S.btp += r->bfinal;
            S.bfn += !r->bfinal;
            S.btp_any += r->bflag_ms >= 0;
            if (r->flag_ms >= 0 && r->onset_ms >= 0 && S.n_min < 256)
                S.minutes[S.n_min++] = (double)(r->flag_ms - r->onset_ms) / 60000.0;
            if (r->bflag_ms >= 0 && r->onset_ms >= 0 && S.n_bmin < 256)
                S.bminutes[S.n_bmin++] = (double)(r->bflag_ms - r->onset_ms) / 60000.0;
        } else {
            S.fp += r->final_flag;
            S.fp_any += r->flag_ms >= 0;
            S.bfp += r->bfinal;
            S.bfp_any += r->bflag_ms >= 0;
        }
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
     * out), with when and by which pass */
    for (size_t i = 0; i < c->n; i++) {
        row_t *r = &c->rows[i];
        if (r->leak || r->flag_ms < 0 || r->cmp_flag)
            continue;
        char t[PW_TAG_MAX * 4 + 1];
        pw_tag_format(r->tag, r->tag_len, t, sizeof(t));
        printf("  %s: not a leak, flagged %s: %s %s from %.2f h to %.2f h (%zu passes, %zu by the "
               "long pass only), %.0f B/h when first flagged, bytes %llu at the end\n",
               c->name, r->final_flag ? "at the end" : "transiently", t, pw_pool_name(r->pool),
               (double)(r->flag_ms - START_MS) / 3600000.0,
               (double)(r->flag_last_ms - START_MS) / 3600000.0, r->flag_passes, r->flag_long,
               r->flag_rate, (unsigned long long)(r->s.n ? ring_at(&r->s, r->s.n - 1)->bytes : 0));
    }
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
}

/* What the screen comparison found in a capture, with the numbers it rests on. */
static void print_compare(const case_t *c)
{
    pw_leak_opts_t o;
    pw_leak_opts_default(&o);
    for (size_t i = 0; i < c->n; i++) {
        const row_t *r = &c->rows[i];
        if (!r->final_flag || !r->cmp_flag)
            continue;
        char t[PW_TAG_MAX * 4 + 1];
        pw_tag_format(r->tag, r->tag_len, t, sizeof(t));
        printf("  %s: compare suspect %s %s: only %zu screens (a trend test needs %zu): allocs "
               "%+lld, frees %+lld, diff %+lld, bytes %+lld (%.0f B per allocation), score "
               "%.3f\n",
               c->name, t, pw_pool_name(r->pool), r->cmp.screens, o.min_points,
               (long long)r->cmp.d_allocs, (long long)r->cmp.d_frees, (long long)r->cmp.d_diff,
               (long long)r->cmp.d_bytes, r->cmp.per_alloc, r->cmp.score);
    }
}

static void case_free(case_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        pw_free(c->rows[i].s.p);
        pw_free(c->rows[i].l.p);
        pw_free(c->rows[i].scr);
    }
    pw_free(c->rows);
    pw_free(c->np.p);
    pw_free(c->pg.p);
    pw_free(c->tmp);
    pw_free(c->htmp);
    pw_alert_set_free(c->alerts);
}

/* ---- simulated presets -------------------------------------------------------------------- */

static const char *only; /* argv[1]: run only the presets whose name contains it */
static double ddk_warn_mb = -1, ddk_base_mb = -1, ddk_crit_mb = -1;
static double linear_minutes = -1, linear_bminutes = -1;

static void run_sim(const char *preset, uint32_t host)
{
    const pw_sim_preset_t *p = pw_sim_preset_find(preset);
    if (only != NULL && strstr(preset, only) == NULL)
        return;
    if (p == NULL) {
        printf("CASE %s: unknown preset\n", preset);
        return;
    }
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = (uint64_t)START_MS;
    cfg.sim_interval_ms = 10000;
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
    case_init(&c, name, real, e, 10000,
              getenv("PW_DETECT_PASS_S")         ? atoll(getenv("PW_DETECT_PASS_S")) * 1000
              : p->duration_ms > 2 * 86400000ull ? 300000
                                                 : 60000);
    c.np_limit = info.nonpaged_limit.bytes;
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t n_samples = p->duration_ms / 10000 + 1;
    double t0 = now_s();
    for (uint64_t k = 0; k < n_samples; k++) {
        s.n = 0;
        if (pw_sim_next(sim, &s) != 0)
            abort();
        feed(&c, &s);
        if (k == 0)
            for (size_t i = 0; i < ne && i < 16; i++)
                if (ev[i]->kind <= PW_SIM_LEAK_BURSTY)
                    label(&c, ev[i]->tag, ev[i]->pool);
    }
    finish(&c);
    printf("  (%s: %llu samples, %zu leak evals in %.1f s, total %.1f s)\n", name,
           (unsigned long long)n_samples, c.evals, c.eval_s, now_s() - t0);
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
        /* not poolmon (cases 18, 32): nothing to analyse, so no suspect */
        case_t c;
        case_init(&c, name, 1, expect, 900000, 30000);
        c.imported = 1;
        printf("  %s rejected by the parser: %s\n", file, data ? d.msg : "cannot read");
        finish(&c);
        case_free(&c);
        free(data);
        return;
    }
    /* System screens form the series; each session screen is its own snapshot. */
    case_t c;
    case_init(&c, name, 1, expect, 900000, 30000);
    c.imported = 1;
    pw_sample_t s;
    pw_sample_init(&s);
    size_t snaps = 0;
    for (size_t i = 0; i < doc.n_screens; i++) {
        const pw_poolmon_screen_t *sc = &doc.screens[i];
        if (sc->session != PW_POOLMON_SESSION_NONE)
            continue;
        pw_sample_reset(&s);
        if (pw_poolmon_screen_to_sample(sc, &s) != 0)
            abort();
        feed(&c, &s);
        snaps++;
    }
    if (strncmp(file, "case09", 6) == 0)
        label(&c, "Drsd", PW_POOL_PAGED);
    printf("  %s: %zu screens, %zu in the system series\n", file, doc.n_screens, snaps);
    finish(&c);
    print_compare(&c);
    case_free(&c);
    for (size_t i = 0; i < doc.n_screens; i++) {
        const pw_poolmon_screen_t *sc = &doc.screens[i];
        if (sc->session == PW_POOLMON_SESSION_NONE)
            continue;
        case_t cs;
        char *sn = names[nn++ % 32];
        snprintf(sn, 64, "%.6s session screen %zu", file, i + 1);
        case_init(&cs, sn, 1, "none", 900000, 30000);
        cs.imported = 1;
        pw_sample_reset(&s);
        if (pw_poolmon_screen_to_sample(sc, &s) != 0)
            abort();
        feed(&cs, &s);
        finish(&cs);
        case_free(&cs);
    }
    pw_sample_close(&s);
    pw_poolmon_doc_close(&doc);
    free(data);
}

/* case09 rebuilt: one print job every 10 min (assumed), each leaking 6 x 832 B in Drsd. */
static void run_case09_rebuilt(void)
{
    case_t c;
    case_init(&c, "case09 rebuilt (1 job/10 min, 8 h)", 1, "Drsd", 10000, 30000);
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
        feed(&c, &s);
    }
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
    case_init(&c, name, 1, "none", 900000, 30000);
    c.imported = 1;
    if (data == NULL || pw_slabinfo_parse(data, len, NULL, &doc, &d) != 0) {
        printf("  %s rejected: %s\n", file, data ? d.msg : "cannot read");
    } else {
        /* one sample per block (all single dumps here) */
        pw_sample_t s;
        pw_sample_init(&s);
        const pw_slab_cache_t *biggest = NULL;
        uint64_t big = 0;
        for (size_t b = 0; b < doc.n_blocks; b++) {
            pw_sample_reset(&s);
            s.timestamp_ms = (uint64_t)(START_MS + (int64_t)b * 900000);
            for (size_t i = 0; i < doc.blocks[b].n_caches; i++) {
                const pw_slab_cache_t *sc = &doc.caches[doc.blocks[b].first_cache + i];
                uint64_t bytes;
                if (pw_slabinfo_cache_slab_bytes(sc, 4096, &bytes) != 0)
                    bytes = sc->active_objs * sc->objsize;
                size_t tl = sc->name_len < PW_TAG_MAX ? sc->name_len : PW_TAG_MAX;
                pw_sample_add(&s, sc->name, tl, PW_POOL_PAGED, sc->active_objs, 0, sc->active_objs,
                              bytes);
                s.totals.paged_bytes += bytes;
                if (bytes > big)
                    big = bytes, biggest = sc;
            }
            feed(&c, &s);
        }
        printf("  %s: %zu block(s), %zu caches, largest %s %.0f KiB (informative only)\n", file,
               doc.n_blocks, doc.n_caches, biggest ? biggest->name : "-", (double)big / 1024.0);
        pw_sample_close(&s);
    }
    finish(&c);
    case_free(&c);
    pw_slabinfo_doc_close(&doc);
    free(data);
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

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    only = argc > 1 ? argv[1] : NULL;
    double t0 = now_s();
    for (size_t i = 0; only == NULL && i < sizeof(poolmon_files) / sizeof(*poolmon_files); i++)
        run_poolmon(poolmon_files[i]);
    if (only == NULL)
        run_case09_rebuilt();
    for (size_t i = 0; only == NULL && i < sizeof(slab_files) / sizeof(*slab_files); i++)
        run_slab(slab_files[i]);
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
