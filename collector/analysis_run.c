/* analysis_run.c: runs the statistics of analysis.c over the fleet (issue 6).
 *
 * Every pass (a timer, 30 s):
 *  - pressure: nonpaged and paged used / limit per host with a Theil-Sen trend over the last
 *    2 h of the host's totals (ring in fleet.h) and a time to exhaustion; alerts
 *    "NonpagedPoolPressure"/"PagedPoolPressure" at the warn and critical ratios;
 *  - leak suspects: a cheap screen first (rows that grew by at least 64 KiB since the agent
 *    instance started, the 16 largest growths per host), then pw_leak_eval on each
 *    candidate's raw series of the last hour from the store; alert "PoolTagLeak".
 * Memory: the screen keeps one baseline row (tag, pool, bytes) per row per host.
 */
#include "collector_internal.h"
#include "alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MOD            "analysis"
#define PASS_MS        30000
#define CANDIDATES     16
#define MIN_GROWTH     (64u << 10)
#define LEAK_WINDOW_MS (60ull * 60 * 1000)

typedef struct pw_analysis_run_s {
    pw_collector_t *c;
    uv_timer_t timer;
    pw_alert_set_t *alerts;
    pw_suspect_t *suspects;
    size_t n_suspects, cap;
    pw_point_t *pts;
    pw_row_point_t *rpts;
    size_t pts_cap, rpts_cap;
    pw_store_series_t series;
} run_t;

static int cmp_base(const void *a, const void *b)
{
    const pw_base_row_t *x = a, *y = b;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    if (x->tag_len != y->tag_len)
        return x->tag_len < y->tag_len ? -1 : 1;
    return memcmp(x->tag, y->tag, x->tag_len);
}

void pw_collector_analysis_on_sample(pw_collector_t *c, pw_host_t *h)
{
    (void)c;
    /* The baseline is the first table of an agent instance (or of the collector's run). */
    if (h->baseline != NULL || !h->dec.have_base)
        return;
    size_t n = h->dec.n;
    h->baseline = pw_calloc(n ? n : 1, sizeof(*h->baseline));
    if (h->baseline == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        const pw_row_t *r = &h->dec.rows[i];
        size_t len;
        const uint8_t *t = pw_tagdict_get(&h->dec.dict, PW_ROW_ID(r->key), &len);
        memcpy(h->baseline[i].tag, t, len);
        h->baseline[i].tag_len = (uint8_t)len;
        h->baseline[i].pool = (uint8_t)PW_ROW_POOL(r->key);
        h->baseline[i].bytes = r->bytes;
    }
    qsort(h->baseline, n, sizeof(*h->baseline), cmp_base);
    h->n_baseline = n;
}

static const pw_base_row_t *base_find(const pw_host_t *h, const uint8_t *tag, size_t len, int pool)
{
    pw_base_row_t key;
    memset(&key, 0, sizeof(key));
    memcpy(key.tag, tag, len);
    key.tag_len = (uint8_t)len;
    key.pool = (uint8_t)pool;
    return bsearch(&key, h->baseline, h->n_baseline, sizeof(key), cmp_base);
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
    if (r > 0)
        PW_LOG_INFO(MOD, "alert %s%s%s %s %s: %s -> %s (value %.3f)", host, tag[0] ? " " : "", tag,
                    pool, severity, pw_alert_state_name(tr.from), pw_alert_state_name(tr.to),
                    value);
}

static int grow_pts(run_t *rn, size_t n)
{
    if (n <= rn->pts_cap)
        return 0;
    pw_point_t *p = pw_realloc(rn->pts, n * sizeof(*p));
    if (p == NULL)
        return PW_ENOMEM;
    rn->pts = p;
    rn->pts_cap = n;
    return 0;
}

static void pressure_pass(run_t *rn, pw_host_t *h, int64_t now_ms)
{
    if (h->hist_n == 0 || grow_pts(rn, h->hist_n) != 0)
        return;
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    for (int pool = 0; pool < 2; pool++) {
        for (size_t i = 0; i < h->hist_n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            rn->pts[i].ts_ms = (int64_t)p->ts_ms;
            rn->pts[i].v = (double)(pool ? p->paged_bytes : p->nonpaged_bytes);
        }
        uint64_t limit = pool ? h->paged_limit_bytes : h->nonpaged_limit_bytes;
        pw_pressure_t *pr = pool ? &h->pg_pressure : &h->np_pressure;
        if (pw_pressure_eval(rn->pts, h->hist_n, limit, &o, pr) != 0)
            continue;
        const char *pn = pool ? "paged" : "nonpaged";
        if (limit == 0)
            continue;
        alert(rn, h->name, "", pn, "warning", pr->ratio, o.warn_ratio, 0.02, 5 * 60 * 1000, now_ms);
        alert(rn, h->name, "", pn, "critical", pr->ratio, o.critical_ratio, 0.02, 60 * 1000,
              now_ms);
    }
    h->have_pressure = 1;
}

typedef struct {
    size_t row;
    uint64_t growth;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    return x->growth > y->growth ? -1 : x->growth < y->growth;
}

static int add_suspect(run_t *rn, const pw_host_t *h, const uint8_t *tag, size_t len, int pool,
                       const pw_leak_t *lk)
{
    if (rn->n_suspects == rn->cap) {
        size_t nc = rn->cap ? rn->cap * 2 : 64;
        pw_suspect_t *p = pw_realloc(rn->suspects, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        rn->suspects = p;
        rn->cap = nc;
    }
    pw_suspect_t *s = &rn->suspects[rn->n_suspects++];
    memset(s, 0, sizeof(*s));
    snprintf(s->host, sizeof(s->host), "%s", h->name);
    memcpy(s->tag, tag, len);
    s->tag_len = (uint8_t)len;
    s->pool = (uint8_t)pool;
    s->found_ms = h->last_seen_ms;
    s->leak = *lk;
    return 0;
}

static void leak_pass(run_t *rn, pw_host_t *h, int64_t now_ms)
{
    pw_collector_t *c = rn->c;
    h->n_suspects = 0;
    if (!h->dec.have_base || h->baseline == NULL)
        return;
    cand_t cand[CANDIDATES];
    size_t nc = 0;
    for (size_t i = 0; i < h->dec.n; i++) {
        const pw_row_t *r = &h->dec.rows[i];
        size_t len;
        const uint8_t *t = pw_tagdict_get(&h->dec.dict, PW_ROW_ID(r->key), &len);
        const pw_base_row_t *b = base_find(h, t, len, (int)PW_ROW_POOL(r->key));
        uint64_t first = b ? b->bytes : 0;
        if (r->bytes < first + MIN_GROWTH)
            continue;
        uint64_t g = r->bytes - first;
        if (nc < CANDIDATES) {
            cand[nc++] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        } else if (g > cand[nc - 1].growth) {
            cand[nc - 1] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        }
    }
    pw_leak_opts_t o;
    pw_leak_opts_default(&o);
    for (size_t k = 0; k < nc; k++) {
        const pw_row_t *r = &h->dec.rows[cand[k].row];
        size_t len;
        const uint8_t *t = pw_tagdict_get(&h->dec.dict, PW_ROW_ID(r->key), &len);
        int pool = (int)PW_ROW_POOL(r->key);
        uint64_t to = h->last_seen_ms, from = to > LEAK_WINDOW_MS ? to - LEAK_WINDOW_MS : 0;
        int64_t n = pw_store_series(c->store, h->name, t, len, (pw_pool_t)pool, from, to, 0,
                                    &rn->series, NULL);
        if (n <= 0)
            continue;
        if ((size_t)n > rn->rpts_cap) {
            pw_row_point_t *p = pw_realloc(rn->rpts, (size_t)n * sizeof(*p));
            if (p == NULL)
                return;
            rn->rpts = p;
            rn->rpts_cap = (size_t)n;
        }
        for (int64_t i = 0; i < n; i++) {
            rn->rpts[i].ts_ms = (int64_t)rn->series.points[i].ts_ms;
            rn->rpts[i].bytes = rn->series.points[i].bytes;
            rn->rpts[i].diff = rn->series.points[i].diff;
        }
        /* The host's total of the same pool, from the ring. */
        if (grow_pts(rn, h->hist_n) != 0)
            return;
        for (size_t i = 0; i < h->hist_n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            rn->pts[i].ts_ms = (int64_t)p->ts_ms;
            rn->pts[i].v = (double)(pool == PW_POOL_NONPAGED ? p->nonpaged_bytes : p->paged_bytes);
        }
        const pw_base_row_t *b = base_find(h, t, len, pool);
        pw_leak_input_t in = {rn->rpts, (size_t)n, rn->pts, h->hist_n, b ? b->bytes : 0, 1};
        pw_leak_t lk;
        if (pw_leak_eval(&in, &o, &lk) != 0)
            continue;
        char shown[PW_TAG_MAX * 4 + 1];
        pw_tag_format(t, len, shown, sizeof(shown));
        alert(rn, h->name, shown, pw_pool_name(pool), "warning", lk.suspect ? 1.0 : 0.0, 1.0, 0.5,
              0, now_ms);
        if (!lk.suspect)
            continue;
        if (add_suspect(rn, h, t, len, pool, &lk) == 0)
            h->n_suspects++;
    }
}

static int cmp_suspect(const void *a, const void *b)
{
    const pw_suspect_t *x = a, *y = b;
    return x->leak.score > y->leak.score ? -1 : x->leak.score < y->leak.score;
}

void pw_collector_analysis_run(pw_collector_t *c)
{
    run_t *rn = c->analysis;
    if (rn == NULL)
        return;
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    int64_t now_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    rn->n_suspects = 0;
    for (size_t i = 0; i < c->fleet.n; i++) {
        pw_host_t *h = c->fleet.hosts[i];
        pressure_pass(rn, h, now_ms);
        leak_pass(rn, h, now_ms);
    }
    qsort(rn->suspects, rn->n_suspects, sizeof(*rn->suspects), cmp_suspect);
    pw_alert_expire(rn->alerts, now_ms);
}

static void on_timer(uv_timer_t *t)
{
    pw_collector_analysis_run(t->data);
}

void pw_collector_analysis_start(pw_collector_t *c)
{
    run_t *rn = pw_calloc(1, sizeof(*rn));
    if (rn == NULL || pw_alert_set_new(&rn->alerts) != 0) {
        PW_LOG_ERROR(MOD, "out of memory: analysis disabled");
        pw_free(rn);
        return;
    }
    rn->c = c;
    c->analysis = rn;
    uv_timer_init(&c->loop, &rn->timer);
    rn->timer.data = c;
    uv_timer_start(&rn->timer, on_timer, PASS_MS, PASS_MS);
}

static void on_timer_closed(uv_handle_t *h)
{
    run_t *rn = h->data;
    pw_alert_set_free(rn->alerts);
    pw_store_series_free(&rn->series);
    pw_free(rn->suspects);
    pw_free(rn->pts);
    pw_free(rn->rpts);
    pw_free(rn);
}

void pw_collector_analysis_stop(pw_collector_t *c)
{
    run_t *rn = c->analysis;
    if (rn == NULL)
        return;
    c->analysis = NULL;
    uv_timer_stop(&rn->timer);
    rn->timer.data = rn;
    uv_close((uv_handle_t *)&rn->timer, on_timer_closed);
}

size_t pw_collector_suspects(const pw_collector_t *c, const pw_suspect_t **out)
{
    const run_t *rn = c->analysis;
    *out = rn ? rn->suspects : NULL;
    return rn ? rn->n_suspects : 0;
}

const pw_alert_set_t *pw_collector_alerts(const pw_collector_t *c)
{
    const run_t *rn = c->analysis;
    return rn ? rn->alerts : NULL;
}
