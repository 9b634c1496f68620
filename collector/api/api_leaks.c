/* api_leaks.c: the analysis' results: GET /api/v1/leaks and /api/v1/alerts. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"

json_t *pw__api_suspect_json(pw_api_t *api, const pw_suspect_t *s)
{
    char tt[PW_API_TAG_TEXT_MAX];
    const char *drv, *desc;
    uint32_t sess;
    size_t tl = pw_row_split(s->tag, s->tag_len, s->pool, &sess);
    pw__api_describe(api, s->tag, tl, &drv, &desc);
    const pw_detect_t *d = &s->d;
    double ratio = d->first_bytes > 0 ? (double)d->last_bytes / (double)d->first_bytes : INFINITY;
    json_t *o = json_pack(
        "{s:o,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host", pw__api_jstr(s->host),
        "tag", pw__api_tag_text(s->tag, tl, tt), "type", pw_pool_name(s->pool), "score",
        pw__api_jreal(d->score), "growth_bytes_per_h", pw__api_jreal(d->rate_bytes_per_h),
        "share_of_host_growth", s->share < 0 ? json_null() : pw__api_jreal(s->share), "first_bytes",
        pw__api_ju64(d->first_bytes), "current_bytes", pw__api_ju64(d->last_bytes), "growth_ratio",
        pw__api_jreal(ratio), "window_ms", json_integer(d->span_ms), "consistency",
        pw__api_jreal(d->steps ? (double)d->steps_up / (double)d->steps : 0.0), "driver",
        pw__api_jstr_or_null(drv), "description", pw__api_jstr_or_null(desc), "found_ms",
        pw__api_ju64(s->found_ms));
    if (o == NULL)
        return NULL;
    if (s->pool == PW_POOL_SESSION) /* the session of a session-pool row; null: all sessions */
        json_object_set_new(o, "session",
                            sess == PW_SESSION_ALL ? json_null() : json_integer(sess));
    /* The engine's verdict (detect.h): below 4 points it compares screens ("compare"), from 4 on
     * it tests a trend. */
    int cmp = d->points < 4;
    json_object_set_new(o, "verdict", json_string(pw_detect_verdict_name(d->verdict)));
    json_object_set_new(o, "confidence", pw__api_jreal(d->confidence));
    json_object_set_new(o, "evidence", pw__api_jstr(d->evidence));
    json_object_set_new(o, "since_ms", json_integer(d->since_ms));
    json_object_set_new(o, "segments", json_integer((json_int_t)d->segments));
    json_object_set_new(o, "growth_interval_bytes_per_h",
                        json_pack("[o,o]", pw__api_jreal(d->rate_low_bytes_per_h),
                                  pw__api_jreal(d->rate_high_bytes_per_h)));
    json_object_set_new(o, "method", json_string(cmp ? "compare" : "trend"));
    json_object_set_new(o, "points", json_integer((json_int_t)d->points));
    json_object_set_new(o, "trend_min_points", json_integer(4));
    json_object_set_new(
        o, "screen_delta",
        cmp ? json_pack("{s:I,s:I,s:I,s:I,s:o}", "allocs", (json_int_t)d->growth_allocs, "frees",
                        (json_int_t)d->growth_frees, "diff", (json_int_t)d->growth_diff, "bytes",
                        (json_int_t)d->growth_bytes, "per_alloc_bytes",
                        pw__api_jreal(d->per_alloc_bytes))
            : json_null());
    json_object_set_new(o, "finding",
                        json_pack("{s:b,s:i,s:o}", "head", s->head, "tags", (int)s->group_n, "with",
                                  s->with[0] ? pw__api_jstr(s->with) : json_null()));
    /* Beside the leak, what makes it urgent: its pool's limit (null: unknown) and where the
     * limit comes from, the pool's level and time to exhaustion (a session pool is paged). */
    const pw_host_t *h = pw_fleet_find(pw_ingest_fleet(api->ing), s->host);
    int lp = s->pool == PW_POOL_NONPAGED ? PW_POOL_NONPAGED : PW_POOL_PAGED;
    pw_pressure_t pr;
    memset(&pr, 0, sizeof(pr));
    pr.level = PW_LEVEL_UNKNOWN;
    pr.eta_ms = -1;
    uint64_t lim = 0;
    int src = PW_LIMIT_UNKNOWN;
    if (h != NULL) {
        pw__api_host_pressure(api, h, lp, &pr);
        lim = pw_host_limit(h, lp);
        src = lp == PW_POOL_NONPAGED ? h->nonpaged_limit_source : h->paged_limit_source;
    }
    json_object_set_new(o, "pool_limit_bytes", lim ? pw__api_ju64(lim) : json_null());
    json_object_set_new(o, "pool_limit_source",
                        json_string(pw__api_limit_source_name(lim ? src : PW_LIMIT_UNKNOWN)));
    json_object_set_new(o, "pool_level", json_string(pw__api_level_name(pr.level)));
    /* When the pool runs out: from its trend, or, when it has too few points for one (an import
     * of 2 or 3 screens), from this leak's growth alone; else null and the note says why. */
    /* A pool at or over its limit already ran out: when, as the host's views say it; a host no
     * pass judged yet has no ETA yet, as in its other views. */
    pw_host_eta_t he;
    memset(&he, 0, sizeof(he));
    /* the pool's own ETA as the host's views give it (its method, rate and window: the day
     * repeated, since a boot), else from this leak's growth */
    if (h == NULL || pw_analysis_host_eta(api->an, h, lp, &pr, &he) != 0 ||
        (!he.ran_out && !he.pending && he.e.basis != PW_ETA_POOL)) {
        he.ran_out = 0;
        he.ran_out_ms = 0;
        pw_pressure_leak_eta(&pr, d->rate_bytes_per_h, d->rate_low_bytes_per_h,
                             d->rate_high_bytes_per_h, d->steps + d->segments, d->span_ms, NULL,
                             &he.e);
    }
    if (h != NULL) {
        pw__api_set_eta(o, "pool", h, &he);
    } else {
        json_object_set_new(o, "pool_eta_ms", json_null());
        json_object_set_new(o, "pool_eta_basis", json_null());
        json_object_set_new(o, "pool_eta_range_ms", json_null());
        json_object_set_new(o, "pool_eta_note", json_string("unknown host"));
        json_object_set_new(o, "pool_ran_out_ms", json_null());
    }
    /* what the ETA counts from (the host's newest sample): a reader says "N h after its last
     * sample" for an old capture rather than a time already past by its own clock */
    json_object_set_new(o, "last_sample_ms",
                        h != NULL && pw__api_eta_base_ms(h) ? pw__api_ju64(pw__api_eta_base_ms(h))
                                                            : json_null());
    /* How the tag's large blocks are made up, when its agent answered (asked for at the
     * suspect's start, or by `poolwatch bigpool`): the latest snapshot, with when it came and
     * who asked; null before any. */
    const pw_bigpool_snap_t *bp =
        h != NULL && s->pool != PW_POOL_SESSION ? pw_host_big_pool(h, s->tag, s->tag_len) : NULL;
    json_t *bj = bp != NULL ? pw__api_bigpool_json(bp) : json_null();
    if (bp != NULL && bj != NULL) {
        json_object_set_new(bj, "received_ms", pw__api_ju64(bp->received_ms));
        json_object_set_new(bj, "asked_by", json_string(bp->automatic ? "collector" : "operator"));
    }
    json_object_set_new(o, "big_pool", bj);
    return o;
}

int pw__api_leaks(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    int global = pw__api_scope_global(api, req, resp);
    if (global != 0)
        return global < 0 ? resp->status : pw__api_global_leaks(api, req, resp);
    (void)params;
    pw__api_query_t q;
    int r = pw__api_query_parse(req->query, &q, resp);
    if (r)
        return r;
    /* A fleet of thousands of leaking hosts lists tens of thousands of suspects: the first
     * `limit` in the product's order, with the total; `host` keeps one host's. */
    uint64_t limit = PW_API_LEAKS_LIMIT;
    const char *host = pw__api_query_get(&q, "host");
    if (pw__api_query_u64(&q, "limit", PW_API_LEAKS_LIMIT_MAX, &limit, resp) < 0) {
        pw__api_query_free(&q);
        return resp->status;
    }
    /* A mistyped host is not "no leaks": 404, as /hosts/{host} and /series answer. */
    if (host != NULL && !pw__api_host_known(api, host)) {
        int st = pw_api_error(resp, 404, "ENOENT", "unknown host '%s'", host);
        pw__api_query_free(&q);
        return st;
    }
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp), total = 0;
    /* Tens of thousands of suspects are counted at each call: a host is looked up only when
     * some host was retired (since the last pass, its suspects are still listed), and once for
     * a run of its suspects (they come by host). */
    int check = pw_ingest_fleet(api->ing)->retired > 0, known = 0;
    const char *last = NULL;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ns; i++) {
        if (host != NULL && strcasecmp(sp[i].host, host) != 0)
            continue;
        if (check && (last == NULL || strcmp(last, sp[i].host) != 0)) {
            last = sp[i].host;
            known = pw__api_host_known(api, last);
        }
        if (check && !known) /* retired since the last pass */
            continue;
        if (total++ < limit)
            json_array_append_new(arr, pw__api_suspect_json(api, &sp[i]));
    }
    pw__api_query_free(&q);
    /* An empty list right after a start means "not judged yet", not "no leak": say when. */
    int64_t in_ms = pw_analysis_run_first_pass_in_ms(api->an);
    return pw__api_send_json(
        resp, 200,
        arr ? json_pack("{s:o,s:I,s:o}", "suspects", arr, "total", (json_int_t)total,
                        "first_pass_ms",
                        in_ms >= 0 ? pw__api_ju64(req->now_ms + (uint64_t)in_ms) : json_null())
            : NULL);
}

typedef struct alerts_ctx_s {
    pw_alert_transition_t *v;
    size_t n, cap;
    int oom;
} alerts_ctx_t;

static void collect_alert(const pw_alert_transition_t *cur, void *arg)
{
    alerts_ctx_t *a = arg;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 16;
        pw_alert_transition_t *v = pw_realloc(a->v, nc * sizeof(*v));
        if (v == NULL) {
            a->oom = 1;
            return;
        }
        a->v = v;
        a->cap = nc;
    }
    a->v[a->n++] = *cur;
}

static int state_rank(pw_alert_state_t s)
{
    return s == PW_ALERT_FIRING ? 0 : s == PW_ALERT_PENDING ? 1 : 2;
}

static int cmp_alert(const void *a, const void *b)
{
    const pw_alert_transition_t *x = a, *y = b;
    int c = state_rank(x->to) - state_rank(y->to);
    if (c)
        return c;
    if (x->active_since_ms != y->active_since_ms)
        return x->active_since_ms < y->active_since_ms ? -1 : 1;
    if ((c = strcmp(x->key.host, y->key.host)) != 0)
        return c;
    if ((c = strcmp(x->key.tag, y->key.tag)) != 0)
        return c;
    if ((c = strcmp(x->key.pool, y->key.pool)) != 0)
        return c;
    return strcmp(x->key.severity, y->key.severity);
}

/* The pool of a PoolTagLeak or pressure alert (a session pool is paged), or -1: the other
 * alerts (silent, agent, pool empty) have no time to exhaustion. */
static int alert_pool(const pw_alert_key_t *k)
{
    if (strcmp(k->pool, "nonpaged") == 0)
        return PW_POOL_NONPAGED;
    if (strcmp(k->pool, "paged") == 0 || (k->tag[0] != '\0' && strcmp(k->pool, "session") == 0))
        return PW_POOL_PAGED;
    return -1;
}

/* What makes a leak or pressure alert urgent, beside its summary: when its pool runs out
 * (*eta: the API's pool_eta_ms, as /hosts and /leaks give it, null when the pool does not grow
 * towards a known limit) and, for a pressure alert, the tag of the host's suspect in that pool
 * that grows fastest (*grow, null when none): both are appended to `summary` ("; runs out
 * 2026-12-03 20:42Z"; "; fastest-growing suspect 'Ddk ' +550.0 KiB/h"). */
static void alert_context(pw_api_t *api, const pw_alert_key_t *k, char *summary, size_t size,
                          json_t **eta, json_t **basis, json_t **ran_out, json_t **grow)
{
    *eta = json_null();
    *basis = json_null();
    *ran_out = json_null();
    *grow = json_null();
    int pool = alert_pool(k);
    const pw_host_t *h = pool < 0 ? NULL : pw_fleet_find(pw_ingest_fleet(api->ing), k->host);
    if (h == NULL)
        return;
    /* the host pool's one ETA (its trend, or its suspects' growth with too few points for
     * one), or when it ran out: as /hosts and /leaks give it */
    pw_pressure_t pr;
    pw_host_eta_t he;
    pw__api_host_eta(api, h, pool, &pr, &he);
    json_t *tmp = json_object();
    if (tmp != NULL) {
        pw__api_set_eta(tmp, "pool", h, &he);
        json_decref(*eta);
        *eta = json_incref(json_object_get(tmp, "pool_eta_ms"));
        *basis = json_incref(json_object_get(tmp, "pool_eta_basis"));
        *ran_out = json_incref(json_object_get(tmp, "pool_ran_out_ms"));
        json_decref(tmp);
    }
    size_t n = strlen(summary);
    if (json_is_integer(*eta) && n < size) {
        struct tm tm;
        char ts[32];
        if (pw_clock_gmtime((int64_t)(json_integer_value(*eta) / 1000), &tm) == 0 &&
            strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%SZ", &tm))
            n += (size_t)snprintf(summary + n, size - n, "; %s %s",
                                  he.ran_out ? "ran out" : "runs out", ts);
    }
    if (k->tag[0] != '\0' || n >= size)
        return;
    const pw_suspect_t *sp, *best = NULL;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    for (size_t i = 0; i < ns; i++) {
        int sp_pool = sp[i].pool == PW_POOL_NONPAGED ? PW_POOL_NONPAGED : PW_POOL_PAGED;
        if (sp_pool == pool && strcmp(sp[i].host, h->name) == 0 &&
            (best == NULL || sp[i].d.rate_bytes_per_h > best->d.rate_bytes_per_h))
            best = &sp[i];
    }
    if (best == NULL)
        return;
    char tt[PW_API_TAG_TEXT_MAX];
    uint32_t sess;
    size_t tl = pw_row_split(best->tag, best->tag_len, best->pool, &sess);
    const char *tag = pw__api_tag_text(best->tag, tl, tt);
    json_decref(*grow);
    *grow = json_string(tag);
    double r = best->d.rate_bytes_per_h;
    double a = r < 0 ? -r : r;
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    size_t u = 0;
    while (a >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        a /= 1024.0;
        u++;
    }
    snprintf(summary + n, size - n, "; fastest-growing suspect '%s' %c%.1f %s/h", tag,
             r < 0 ? '-' : '+', a, units[u]);
}

int pw__api_alerts(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    alerts_ctx_t a;
    memset(&a, 0, sizeof(a));
    const pw_alert_set_t *set = pw_analysis_run_alerts(api->an);
    if (set)
        pw_alert_foreach(set, collect_alert, &a);
    if (a.oom) {
        pw_free(a.v);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (a.n > 1)
        qsort(a.v, a.n, sizeof(*a.v), cmp_alert);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < a.n; i++) {
        const pw_alert_transition_t *t = &a.v[i];
        const pw_alert_key_t *k = &t->key;
        if (!pw__api_host_known(api, k->host))
            continue; /* retired */
        char name[32], summary[512], desc[256];
        snprintf(name, sizeof(name), "%s", pw_analysis_alert_name(k));
        pw_analysis_alert_text(k, t->value, summary, sizeof(summary), desc, sizeof(desc));
        json_t *eta = NULL, *basis = NULL, *ran_out = NULL, *grow = NULL;
        alert_context(api, k, summary, sizeof(summary), &eta, &basis, &ran_out, &grow);
        json_t *o =
            json_pack("{s:s,s:s,s:s,s:{s:o,s:o,s:s,s:s},s:o,s:o,s:o,s:o,s:o}", "name", name,
                      "state", pw_alert_state_name(t->to), "severity", k->severity, "labels",
                      "host", pw__api_jstr(k->host), "tag", pw__api_jstr(k->tag), "pool", k->pool,
                      "severity", k->severity, "since_ms", json_integer(t->active_since_ms),
                      "value", pw__api_jreal(t->value), "summary", pw__api_jstr(summary),
                      "pool_eta_ms", eta, "growing_tag", grow);
        if (o != NULL) { /* how the ETA is known ("pool", "leak", "ran_out"), and since when */
            json_object_set_new(o, "pool_eta_basis", basis);
            json_object_set_new(o, "pool_ran_out_ms", ran_out);
        } else {
            json_decref(basis);
            json_decref(ran_out);
        }
        json_array_append_new(arr, o);
    }
    pw_free(a.v);
    return pw__api_send_json(resp, 200, arr ? json_pack("{s:o}", "alerts", arr) : NULL);
}
