/* api_global.c: the fleet API from the global view (fleetq.h): with [fleet] query_url set,
 * GET /api/v1/hosts, /api/v1/tags, /api/v1/tags/{tag} (outliers) and /api/v1/leaks answer
 * for every collector that remote-writes into the shared store, each host naming the
 * collector that owns it ("collector": its [fleet] self_url) for drill-down; ?scope=local
 * answers from this collector's own fleet as before. The answers carry "scope": "global" and
 * "as_of_ms" (when the snapshot's queries started) and keep the local answers' field names;
 * fields the exported series do not carry (os, agent version, samples, the detection's
 * evidence) are left out. */
#include "api_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "analysis.h"
#include "fleetq.h"

int pw__api_scope_global(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return -1;
    const char *sc = pw__api_query_get(&q, "scope");
    int g = api->fleetq != NULL;
    if (sc != NULL && strcmp(sc, "local") == 0)
        g = 0;
    else if (sc != NULL && strcmp(sc, "global") == 0 && api->fleetq == NULL)
        g = -pw_api_error(resp, 400, "EINVAL",
                          "scope=global needs [fleet] query_url (the shared store)");
    else if (sc != NULL && strcmp(sc, "global") != 0)
        g = -pw_api_error(resp, 400, "EINVAL", "scope must be global or local");
    pw__api_query_free(&q);
    return g < 0 ? -1 : g;
}

/* The snapshot, or NULL with the 503 written. */
static const pw_fleetq_snap_t *snap_or_503(pw_api_t *api, pw_api_resp_t *resp)
{
    const pw_fleetq_snap_t *s = pw_fleetq_snapshot(api->fleetq);
    if (s == NULL)
        pw_api_error(resp, 503, "EAGAIN",
                     "the global view has no snapshot yet (first query of [fleet] query_url "
                     "pending or failing: see the collector's log)");
    return s;
}

static json_t *top_object(const pw_fleetq_snap_t *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "scope", json_string("global"));
    json_object_set_new(o, "as_of_ms", pw__api_ju64(s->as_of_ms));
    return o;
}

static double np_ratio(const pw_fleetq_host_t *h)
{
    return h->limit[0] ? (double)h->used[0] / (double)h->limit[0] : 0.0;
}

static int cmp_host(const void *a, const void *b)
{
    const pw_fleetq_host_t *x = *(const pw_fleetq_host_t *const *)a,
                           *y = *(const pw_fleetq_host_t *const *)b;
    double rx = np_ratio(x), ry = np_ratio(y);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return strcmp(x->name, y->name);
}

static json_t *host_json(const pw_fleetq_host_t *h)
{
    static const char *const pn[2] = {"nonpaged", "paged"};
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "name", pw__api_jstr(h->name));
    json_object_set_new(o, "collector",
                        pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL));
    json_object_set_new(o, "connected", json_boolean(h->connected));
    json_object_set_new(o, "last_seen_ms", pw__api_ju64(h->last_seen_ms));
    for (int p = 0; p < 2; p++) {
        char k[40];
        snprintf(k, sizeof(k), "%s_bytes", pn[p]);
        json_object_set_new(o, k, pw__api_ju64(h->used[p]));
        snprintf(k, sizeof(k), "%s_limit_bytes", pn[p]);
        json_object_set_new(o, k, h->limit[p] ? pw__api_ju64(h->limit[p]) : json_null());
        snprintf(k, sizeof(k), "%s_ratio", pn[p]);
        json_object_set_new(
            o, k, h->limit[p] ? json_real((double)h->used[p] / (double)h->limit[p]) : json_null());
        /* the level from the ratio and the analysis' default thresholds (70 %, 85 %) */
        pw_pressure_opts_t po;
        pw_pressure_opts_default(&po);
        double ratio = h->limit[p] ? (double)h->used[p] / (double)h->limit[p] : 0;
        pw_level_t lv = h->limit[p] == 0             ? PW_LEVEL_UNKNOWN
                        : ratio >= po.critical_ratio ? PW_LEVEL_CRITICAL
                        : ratio >= po.warn_ratio     ? PW_LEVEL_WARN
                                                     : PW_LEVEL_OK;
        snprintf(k, sizeof(k), "%s_level", pn[p]);
        json_object_set_new(o, k, pw__api_jstr(pw__api_level_name(lv)));
        snprintf(k, sizeof(k), "%s_eta_ms", pn[p]);
        json_object_set_new(
            o, k,
            h->eta_s[p] >= 0 ? pw__api_ju64(h->last_seen_ms + (uint64_t)llround(h->eta_s[p] * 1000))
                             : json_null());
    }
    json_object_set_new(o, "suspects", json_integer(h->suspects));
    return o;
}

static int render_hosts(pw_api_t *api, const pw_api_req_t *req, const char *tag,
                        pw_api_resp_t *resp)
{
    (void)req;
    (void)tag;
    const pw_fleetq_snap_t *s = snap_or_503(api, resp);
    if (s == NULL)
        return resp->status;
    const pw_fleetq_host_t **v = pw_malloc((s->n_hosts ? s->n_hosts : 1) * sizeof(*v));
    json_t *o = top_object(s), *arr = json_array();
    if (v == NULL || o == NULL || arr == NULL) {
        pw_free(v);
        json_decref(o);
        json_decref(arr);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    for (size_t i = 0; i < s->n_hosts; i++)
        v[i] = &s->hosts[i];
    if (s->n_hosts > 1)
        qsort(v, s->n_hosts, sizeof(*v), cmp_host);
    for (size_t i = 0; i < s->n_hosts; i++)
        json_array_append_new(arr, host_json(v[i]));
    pw_free(v);
    json_object_set_new(o, "hosts", arr);
    return pw__api_send_json(resp, 200, o);
}

/* ---- tags ------------------------------------------------------------------------------------ */

typedef struct gagg_s {
    const char *tag;
    uint8_t pool;
    uint32_t hosts;
    uint64_t total, min, max;
    size_t first; /* its rows: idx[first .. first + hosts) */
} gagg_t;

typedef struct gset_s {
    const pw_fleetq_snap_t *s;
    uint32_t *idx; /* rows in the snapshot's order: (tag, pool), bytes descending, host */
    gagg_t *v;
    size_t n;
} gset_t;

/* Aggregates per (tag, pool) over the rows of s, pool 3 = both; `tag` NULL = every tag. */
static int gset_build(const pw_fleetq_snap_t *s, int pool, const char *tag, gset_t *g)
{
    memset(g, 0, sizeof(*g));
    g->s = s;
    g->idx = pw_malloc((s->n_rows ? s->n_rows : 1) * sizeof(*g->idx));
    g->v = pw_malloc((s->n_rows ? s->n_rows : 1) * sizeof(*g->v));
    if (g->idx == NULL || g->v == NULL)
        return PW_ENOMEM;
    size_t m = 0;
    /* the snapshot's rows are in aggregate order already (fleetq.h) */
    for (size_t i = 0; i < s->n_rows; i++)
        if ((pool == 3 || s->rows[i].pool == pool) && (tag == NULL || !strcmp(s->rows[i].tag, tag)))
            g->idx[m++] = (uint32_t)i;
    for (size_t i = 0; i < m; i++) {
        const pw_fleetq_row_t *r = &s->rows[g->idx[i]];
        gagg_t *a = g->n ? &g->v[g->n - 1] : NULL;
        if (a == NULL || strcmp(a->tag, r->tag) != 0 || a->pool != r->pool) {
            a = &g->v[g->n++];
            *a = (gagg_t){
                .tag = r->tag, .pool = r->pool, .min = r->bytes, .max = r->bytes, .first = i};
        }
        a->hosts++;
        a->total += r->bytes;
        if (r->bytes < a->min)
            a->min = r->bytes;
        if (r->bytes > a->max)
            a->max = r->bytes;
    }
    return 0;
}

static void gset_free(gset_t *g)
{
    pw_free(g->idx);
    pw_free(g->v);
}

static json_t *gagg_json(const gset_t *g, const gagg_t *a)
{
    double *vals = pw_malloc((a->hosts ? a->hosts : 1) * sizeof(*vals));
    if (vals == NULL)
        return NULL;
    json_t *top = json_array();
    for (uint32_t i = 0; i < a->hosts; i++) {
        const pw_fleetq_row_t *r = &g->s->rows[g->idx[a->first + i]];
        vals[i] = (double)r->bytes;
        if (i < PW_API_TOP_HOSTS) {
            const pw_fleetq_host_t *h = &g->s->hosts[r->host];
            json_array_append_new(
                top, json_pack("{s:o,s:o,s:o}", "host", pw__api_jstr(h->name), "bytes",
                               pw__api_ju64(r->bytes), "collector",
                               pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL)));
        }
    }
    double p50 = pw_stats_quantile7(vals, a->hosts, 0.5);
    double p90 = pw_stats_quantile7(vals, a->hosts, 0.9);
    pw_free(vals);
    return json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "tag", a->tag, "type",
                     pw_pool_name(a->pool), "hosts", (int)a->hosts, "bytes_total",
                     pw__api_ju64(a->total), "bytes_min", pw__api_ju64(a->min), "bytes_p50",
                     json_real(p50), "bytes_p90", json_real(p90), "bytes_max", pw__api_ju64(a->max),
                     "top_hosts", top);
}

static int cmp_g_total(const void *a, const void *b)
{
    const gagg_t *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

static int cmp_g_hosts(const void *a, const void *b)
{
    const gagg_t *x = a, *y = b;
    if (x->hosts != y->hosts)
        return x->hosts > y->hosts ? -1 : 1;
    return cmp_g_total(a, b);
}

static int cmp_g_tag(const void *a, const void *b)
{
    const gagg_t *x = a, *y = b;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

static int render_tags(pw_api_t *api, const pw_api_req_t *req, const char *tag, pw_api_resp_t *resp)
{
    (void)tag;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t limit = 100;
    int pool = 3;
    const char *ty = pw__api_query_get(&q, "type"), *sort = pw__api_query_get(&q, "sort");
    int (*cmp)(const void *, const void *) = cmp_g_total;
    int bad = 0;
    if (ty && (pool = pw__api_pool_word(ty)) < 0)
        bad = pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    else if (sort && strcmp(sort, "hosts") == 0)
        cmp = cmp_g_hosts;
    else if (sort && strcmp(sort, "tag") == 0)
        cmp = cmp_g_tag;
    else if (sort && strcmp(sort, "bytes") != 0)
        bad = pw_api_error(resp, 400, "EINVAL", "sort must be bytes, hosts or tag");
    if (!bad && pw__api_query_get(&q, "cursor"))
        bad = pw_api_error(resp, 400, "EINVAL", "the global view has no cursor: use limit");
    if (!bad && pw__api_query_u64(&q, "limit", 1000000, &limit, resp) < 0)
        bad = resp->status;
    pw__api_query_free(&q);
    if (bad)
        return resp->status;
    const pw_fleetq_snap_t *s = snap_or_503(api, resp);
    if (s == NULL)
        return resp->status;
    gset_t g;
    if (gset_build(s, pool, NULL, &g) != 0) {
        gset_free(&g);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (g.n > 1)
        qsort(g.v, g.n, sizeof(*g.v), cmp);
    json_t *o = top_object(s), *arr = json_array();
    for (size_t i = 0; arr && i < g.n && i < limit; i++)
        json_array_append_new(arr, gagg_json(&g, &g.v[i]));
    json_object_set_new(o, "tags", arr);
    json_object_set_new(o, "total", json_integer((json_int_t)g.n));
    json_object_set_new(o, "next_cursor", json_null());
    gset_free(&g);
    return pw__api_send_json(resp, 200, o);
}

static int render_tag(pw_api_t *api, const pw_api_req_t *req, const char *tag, pw_api_resp_t *resp)
{
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    int pool = 3;
    const char *ty = pw__api_query_get(&q, "type");
    int bad = ty && (pool = pw__api_pool_word(ty)) < 0;
    pw__api_query_free(&q);
    if (bad)
        return pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    const pw_fleetq_snap_t *s = snap_or_503(api, resp);
    if (s == NULL)
        return resp->status;
    char padded[8];
    gset_t g;
    int r = gset_build(s, pool, tag, &g);
    if (r == 0 && g.n == 0 && strlen(tag) < 4) { /* poolmon's padding: "Io" is "Io  " */
        gset_free(&g);
        snprintf(padded, sizeof(padded), "%-4s", tag);
        tag = padded;
        r = gset_build(s, pool, tag, &g);
    }
    if (r != 0) {
        gset_free(&g);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (g.n == 0) {
        gset_free(&g);
        return pw_api_error(resp, 404, "ENOENT", "no host of the global view exports tag '%s'",
                            tag);
    }
    if (g.n > 1)
        qsort(g.v, g.n, sizeof(*g.v), cmp_g_total);
    json_t *o = gagg_json(&g, &g.v[0]), *aggs = json_array();
    for (size_t i = 0; aggs && i < g.n; i++)
        json_array_append_new(aggs, gagg_json(&g, &g.v[i]));
    json_object_set_new(o, "aggregates", aggs);
    json_object_set_new(o, "scope", json_string("global"));
    json_object_set_new(o, "as_of_ms", pw__api_ju64(s->as_of_ms));
    /* every host's row, with a robust z among the hosts of the same pool (the exported series
     * carry no OS build) */
    size_t m = 0;
    for (size_t i = 0; i < g.n; i++)
        m += g.v[i].hosts;
    double *v = pw_malloc((m ? m : 1) * sizeof(*v)), *z = pw_malloc((m ? m : 1) * sizeof(*z));
    uint32_t *grp = pw_malloc((m ? m : 1) * sizeof(*grp));
    bool *out = pw_malloc((m ? m : 1) * sizeof(*out));
    const pw_fleetq_row_t **rr = pw_malloc((m ? m : 1) * sizeof(*rr));
    json_t *hosts = json_array();
    if (v && z && grp && out && rr) {
        size_t k = 0;
        for (size_t i = 0; i < g.n; i++)
            for (uint32_t j = 0; j < g.v[i].hosts; j++) {
                rr[k] = &s->rows[g.idx[g.v[i].first + j]];
                v[k] = (double)rr[k]->bytes;
                grp[k] = rr[k]->pool;
                k++;
            }
        if (pw_fleet_outliers(v, grp, m, 3.5, z, out) < 0)
            for (size_t i = 0; i < m; i++)
                z[i] = 0, out[i] = false;
        for (size_t i = 0; hosts && i < m; i++) {
            const pw_fleetq_host_t *h = &s->hosts[rr[i]->host];
            json_array_append_new(
                hosts,
                json_pack("{s:o,s:s,s:o,s:o,s:b,s:o}", "host", pw__api_jstr(h->name), "type",
                          pw_pool_name(rr[i]->pool), "bytes", pw__api_ju64(rr[i]->bytes),
                          "robust_z", pw__api_jreal(z[i]), "outlier", (int)out[i], "collector",
                          pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL)));
        }
    }
    pw_free(v), pw_free(z), pw_free(grp), pw_free(out), pw_free(rr);
    gset_free(&g);
    json_object_set_new(o, "hosts", hosts);
    return pw__api_send_json(resp, 200, o);
}

/* ---- leaks ----------------------------------------------------------------------------------- */

static const pw_fleetq_snap_t *g_leak_snap;

/* The pool a leak grows in as the series give it: 0 nonpaged, 1 paged (a session pool). */
static int leak_pool(const pw_fleetq_leak_t *l)
{
    return l->pool == PW_POOL_NONPAGED ? 0 : 1;
}

/* That pool's level from used / limit at the analysis' default thresholds (the collectors'
 * own levels are not among the series); UNKNOWN without a limit. */
static pw_level_t leak_level(const pw_fleetq_host_t *h, int p)
{
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    if (h->limit[p] == 0)
        return PW_LEVEL_UNKNOWN;
    double r = (double)h->used[p] / (double)h->limit[p];
    return r >= o.critical_ratio ? PW_LEVEL_CRITICAL
           : r >= o.warn_ratio   ? PW_LEVEL_WARN
                                 : PW_LEVEL_OK;
}

/* As a collector's own list (analysis_run.h): critical pools first, then warn, then the rest;
 * the nearest time to exhaustion first (none last); then the score. */
static int cmp_leak(const void *a, const void *b)
{
    const pw_fleetq_leak_t *x = *(const pw_fleetq_leak_t *const *)a,
                           *y = *(const pw_fleetq_leak_t *const *)b;
    const pw_fleetq_host_t *hx = &g_leak_snap->hosts[x->host], *hy = &g_leak_snap->hosts[y->host];
    pw_level_t lx = leak_level(hx, leak_pool(x)), ly = leak_level(hy, leak_pool(y));
    int rx = lx == PW_LEVEL_CRITICAL ? 0 : lx == PW_LEVEL_WARN ? 1 : 2;
    int ry = ly == PW_LEVEL_CRITICAL ? 0 : ly == PW_LEVEL_WARN ? 1 : 2;
    if (rx != ry)
        return rx - ry;
    /* when it runs out (the answer's pool_eta_ms): each host's newest sample plus its ETA */
    double ex = hx->eta_s[leak_pool(x)], ey = hy->eta_s[leak_pool(y)];
    ex = ex < 0 ? -1 : (double)hx->last_seen_ms + ex * 1000.0;
    ey = ey < 0 ? -1 : (double)hy->last_seen_ms + ey * 1000.0;
    if (ex != ey) {
        if (ex < 0 || ey < 0)
            return ex < 0 ? 1 : -1;
        return ex < ey ? -1 : 1;
    }
    double sx = isnan(x->score) ? -1 : x->score, sy = isnan(y->score) ? -1 : y->score;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    int c = strcmp(g_leak_snap->hosts[x->host].name, g_leak_snap->hosts[y->host].name);
    if (c)
        return c;
    c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

static int render_leaks(pw_api_t *api, const pw_api_req_t *req, const char *tag,
                        pw_api_resp_t *resp)
{
    (void)tag;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t limit = PW_API_LEAKS_LIMIT;
    const char *host = pw__api_query_get(&q, "host");
    char hbuf[256];
    snprintf(hbuf, sizeof(hbuf), "%s", host ? host : "");
    if (pw__api_query_u64(&q, "limit", PW_API_LEAKS_LIMIT_MAX, &limit, resp) < 0) {
        pw__api_query_free(&q);
        return resp->status;
    }
    pw__api_query_free(&q);
    const pw_fleetq_snap_t *s = snap_or_503(api, resp);
    if (s == NULL)
        return resp->status;
    const pw_fleetq_leak_t **v = pw_malloc((s->n_leaks ? s->n_leaks : 1) * sizeof(*v));
    if (v == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < s->n_leaks; i++)
        if ((host == NULL || strcasecmp(s->hosts[s->leaks[i].host].name, hbuf) == 0) &&
            s->hosts[s->leaks[i].host].suspects > 0) /* a suspect gone: stale until the lookback
                                                         ends; its host says 0 at once */
            v[n++] = &s->leaks[i];
    g_leak_snap = s;
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_leak);
    json_t *o = top_object(s), *arr = json_array();
    for (size_t i = 0; arr && i < n && i < limit; i++) {
        const pw_fleetq_host_t *h = &s->hosts[v[i]->host];
        int p = leak_pool(v[i]);
        json_t *e =
            json_pack("{s:o,s:o,s:s,s:s,s:o,s:o}", "host", pw__api_jstr(h->name), "collector",
                      pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL), "tag", v[i]->tag,
                      "type", pw_pool_name(v[i]->pool), "score", pw__api_jreal(v[i]->score),
                      "growth_bytes_per_h", pw__api_jreal(v[i]->growth_bytes_per_hour));
        /* its pool's limit, level and ETA, as a collector's own list has them (no source: the
         * series do not carry it) */
        if (e != NULL) {
            json_object_set_new(e, "pool_limit_bytes",
                                h->limit[p] ? pw__api_ju64(h->limit[p]) : json_null());
            json_object_set_new(e, "pool_level", json_string(pw__api_level_name(leak_level(h, p))));
            json_object_set_new(
                e, "pool_eta_ms",
                h->eta_s[p] >= 0 && h->last_seen_ms
                    ? pw__api_ju64(h->last_seen_ms + (uint64_t)llround(h->eta_s[p] * 1000.0))
                    : json_null());
        }
        json_array_append_new(arr, e);
    }
    pw_free(v);
    json_object_set_new(o, "suspects", arr);
    json_object_set_new(o, "total", json_integer((json_int_t)n));
    return pw__api_send_json(resp, 200, o);
}

/* ---- answers cached per snapshot ------------------------------------------------------------ */

/* The snapshot changes once per [fleet] refresh; the fleet page asks the same few questions
 * many times in between: each answer is rendered once per snapshot and request (path and
 * query), then copied. */
#define GCACHE_N   8
#define GCACHE_KEY 256

struct pw__api_gcache_s {
    const pw_fleetq_snap_t *snap;
    uint64_t as_of_ms, took_ms; /* with the pointer: the snapshot's identity */
    struct {
        char key[GCACHE_KEY];
        pw_buf_t body;
        uint64_t used; /* tick of the last use; 0 = empty */
    } e[GCACHE_N];
    uint64_t tick;
};

void pw__api_gcache_free(pw_api_t *api)
{
    if (api == NULL || api->gcache == NULL)
        return;
    for (int i = 0; i < GCACHE_N; i++)
        pw_buf_close(&api->gcache->e[i].body);
    pw_free(api->gcache);
    api->gcache = NULL;
}

typedef int (*render_fn)(pw_api_t *, const pw_api_req_t *, const char *, pw_api_resp_t *);

static int cached(pw_api_t *api, const pw_api_req_t *req, const char *tag, pw_api_resp_t *resp,
                  render_fn render)
{
    const pw_fleetq_snap_t *s = pw_fleetq_snapshot(api->fleetq);
    char key[GCACHE_KEY];
    int n = snprintf(key, sizeof(key), "%s?%s", req->path, req->query ? req->query : "");
    if (s == NULL || n < 0 || (size_t)n >= sizeof(key))
        return render(api, req, tag, resp);
    if (api->gcache == NULL && (api->gcache = pw_calloc(1, sizeof(*api->gcache))) == NULL)
        return render(api, req, tag, resp);
    struct pw__api_gcache_s *c = api->gcache;
    if (c->snap != s || c->as_of_ms != s->as_of_ms || c->took_ms != s->took_ms) {
        for (int i = 0; i < GCACHE_N; i++) { /* a new snapshot: every answer is old */
            pw_buf_reset(&c->e[i].body);
            c->e[i].used = 0;
        }
        c->snap = s;
        c->as_of_ms = s->as_of_ms;
        c->took_ms = s->took_ms;
    }
    int lru = 0;
    for (int i = 0; i < GCACHE_N; i++) {
        if (c->e[i].used != 0 && strcmp(c->e[i].key, key) == 0) {
            pw_buf_reset(&resp->body);
            if (pw_buf_append(&resp->body, c->e[i].body.data, c->e[i].body.len) != 0)
                return pw_api_error(resp, 500, "ENOMEM", "out of memory");
            c->e[i].used = ++c->tick;
            resp->status = 200;
            resp->content_type = "application/json";
            return 200;
        }
        if (c->e[i].used < c->e[lru].used)
            lru = i;
    }
    int st = render(api, req, tag, resp);
    if (st == 200) {
        pw_buf_close(&c->e[lru].body);
        pw_buf_init(&c->e[lru].body, SIZE_MAX);
        if (pw_buf_append(&c->e[lru].body, resp->body.data, resp->body.len) == 0) {
            snprintf(c->e[lru].key, sizeof(c->e[lru].key), "%s", key);
            c->e[lru].used = ++c->tick;
        }
    }
    return st;
}

int pw__api_global_hosts(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    return cached(api, req, NULL, resp, render_hosts);
}

int pw__api_global_tags(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    return cached(api, req, NULL, resp, render_tags);
}

int pw__api_global_tag(pw_api_t *api, const pw_api_req_t *req, const char *tag, pw_api_resp_t *resp)
{
    return cached(api, req, tag, resp, render_tag);
}

int pw__api_global_leaks(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    return cached(api, req, NULL, resp, render_leaks);
}
