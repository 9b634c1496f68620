/* api_global.c: the fleet API from the global view (fleetq.h): with [fleet] query_url set,
 * GET /api/v1/hosts, /api/v1/tags, /api/v1/tags/{tag} (outliers) and /api/v1/leaks answer
 * for every collector that remote-writes into the shared store, each host naming the
 * collector that owns it ("collector": its [fleet] self_url) for drill-down; ?scope=local
 * answers from this collector's own fleet as before. The answers carry "scope": "global" and
 * "as_of_ms" (when the snapshot's queries started) and keep the local answers' field names;
 * fields the exported series do not carry (os, agent version, samples, the detection's
 * evidence) are left out.
 *
 * A snapshot holds up to a million rows: its answers' parts (the tag aggregates with their
 * quantiles, every row's robust z) and the answers the fleet page asks with the defaults
 * (/hosts, /tags, /leaks) are made once per snapshot by pw_api_global_prepare, on the worker
 * thread that parsed the snapshot (fleetq.c's prepare hook), so no request and no turn of the
 * loop pays for them: a request copies the prepared bytes, or makes its answer from the
 * prepared parts (another sort, a tag's page: at most that tag's rows), kept for the next. */
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

/* ---- what is made once per snapshot ---------------------------------------------------------- */

typedef struct gagg_s {
    const char *tag;
    uint8_t pool;
    uint32_t hosts;
    uint64_t total, min, max;
    size_t first;    /* its rows: the snapshot's rows[first .. first + hosts) */
    double p50, p90; /* type 7 quantiles of its rows' bytes */
} gagg_t;

/* The answers' parts, made from one snapshot by pw_api_global_prepare: on the worker thread
 * that parsed the snapshot (fleetq.c, when the wiring passes it as the prepare hook), else at
 * the snapshot's first request. Read-only once made. */
typedef struct gprep_s {
    const pw_fleetq_snap_t *s;
    gagg_t *aggs; /* per (tag, pool), in the rows' order (tag, pool): every tag aggregate */
    size_t n_aggs;
    double *z;      /* per row: robust z among the rows of its (tag, pool) (the outliers) */
    bool *out;      /* ... z >= 3.5 */
    pw_buf_t hosts; /* GET /hosts (it takes no parameter) */
    pw_buf_t tags;  /* GET /tags with the defaults: every type, by bytes, limit 100 */
    pw_buf_t leaks; /* GET /leaks with the defaults: every host, limit PW_API_LEAKS_LIMIT */
} gprep_t;

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
    /* as a collector's own list says it (its poolwatch_host_loading_history series) */
    json_object_set_new(o, "loading_history", json_boolean(h->loading));
    for (int p = 0; p < 2; p++) {
        char k[40];
        snprintf(k, sizeof(k), "%s_bytes", pn[p]);
        json_object_set_new(o, k, pw__api_ju64(h->used[p]));
        snprintf(k, sizeof(k), "%s_limit_bytes", pn[p]);
        json_object_set_new(o, k, h->limit[p] ? pw__api_ju64(h->limit[p]) : json_null());
        /* where the limit comes from: the series' source label ("unknown" without a limit, or
         * from a collector that does not send it) */
        snprintf(k, sizeof(k), "%s_limit_source", pn[p]);
        json_object_set_new(
            o, k,
            json_string(h->limit[p] && h->limit_source[p][0] ? h->limit_source[p] : "unknown"));
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

/* GET /hosts: every host, the fullest nonpaged pool first. */
static json_t *hosts_doc(const pw_fleetq_snap_t *s)
{
    const pw_fleetq_host_t **v = pw_malloc((s->n_hosts ? s->n_hosts : 1) * sizeof(*v));
    json_t *o = top_object(s), *arr = json_array();
    if (v == NULL || o == NULL || arr == NULL) {
        pw_free(v);
        json_decref(o);
        json_decref(arr);
        return NULL;
    }
    for (size_t i = 0; i < s->n_hosts; i++)
        v[i] = &s->hosts[i];
    if (s->n_hosts > 1)
        qsort(v, s->n_hosts, sizeof(*v), cmp_host);
    for (size_t i = 0; i < s->n_hosts; i++)
        json_array_append_new(arr, host_json(v[i]));
    pw_free(v);
    json_object_set_new(o, "hosts", arr);
    return o;
}

/* ---- tags ------------------------------------------------------------------------------------ */

static json_t *gagg_json(const pw_fleetq_snap_t *s, const gagg_t *a)
{
    json_t *top = json_array();
    for (uint32_t i = 0; i < a->hosts && i < PW_API_TOP_HOSTS; i++) {
        const pw_fleetq_row_t *r = &s->rows[a->first + i];
        const pw_fleetq_host_t *h = &s->hosts[r->host];
        json_array_append_new(
            top, json_pack("{s:o,s:o,s:o}", "host", pw__api_jstr(h->name), "bytes",
                           pw__api_ju64(r->bytes), "collector",
                           pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL)));
    }
    return json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "tag", a->tag, "type",
                     pw_pool_name(a->pool), "hosts", (int)a->hosts, "bytes_total",
                     pw__api_ju64(a->total), "bytes_min", pw__api_ju64(a->min), "bytes_p50",
                     json_real(a->p50), "bytes_p90", json_real(a->p90), "bytes_max",
                     pw__api_ju64(a->max), "top_hosts", top);
}

static int cmp_g_total(const void *a, const void *b)
{
    const gagg_t *x = *(const gagg_t *const *)a, *y = *(const gagg_t *const *)b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

static int cmp_g_hosts(const void *a, const void *b)
{
    const gagg_t *x = *(const gagg_t *const *)a, *y = *(const gagg_t *const *)b;
    if (x->hosts != y->hosts)
        return x->hosts > y->hosts ? -1 : 1;
    return cmp_g_total(a, b);
}

static int cmp_g_tag(const void *a, const void *b)
{
    const gagg_t *x = *(const gagg_t *const *)a, *y = *(const gagg_t *const *)b;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

typedef int (*cmp_fn)(const void *, const void *);

/* GET /tags: the aggregates of `pool` (3 = every type) in `cmp`'s order, `limit` of them. */
static json_t *tags_doc(const gprep_t *p, int pool, cmp_fn cmp, uint64_t limit)
{
    const gagg_t **v = pw_malloc((p->n_aggs ? p->n_aggs : 1) * sizeof(*v));
    if (v == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->n_aggs; i++)
        if (pool == 3 || p->aggs[i].pool == pool)
            v[n++] = &p->aggs[i];
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp);
    json_t *o = top_object(p->s), *arr = json_array();
    for (size_t i = 0; arr && i < n && i < limit; i++)
        json_array_append_new(arr, gagg_json(p->s, v[i]));
    pw_free(v);
    json_object_set_new(o, "tags", arr);
    json_object_set_new(o, "total", json_integer((json_int_t)n));
    json_object_set_new(o, "next_cursor", json_null());
    return o;
}

/* The aggregates of `tag` and `pool` (3 = every type) into v[0..3], by bytes; returns how many.
 * The aggregates are in the rows' order, tag first: a binary search. */
static size_t tag_aggs(const gprep_t *p, const char *tag, int pool, const gagg_t *v[PW_POOL__COUNT])
{
    size_t lo = 0, hi = p->n_aggs, n = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(p->aggs[mid].tag, tag) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < p->n_aggs && n < PW_POOL__COUNT && !strcmp(p->aggs[i].tag, tag); i++)
        if (pool == 3 || p->aggs[i].pool == pool)
            v[n++] = &p->aggs[i];
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_g_total);
    return n;
}

/* GET /tags/{tag}: the tag's biggest aggregate, all of them, and every host's row with its
 * robust z among the hosts of the same pool (the exported series carry no OS build). 404 when
 * no host exports it. */
static int tag_answer(const gprep_t *p, int pool, const char *tag, pw_api_resp_t *resp)
{
    const pw_fleetq_snap_t *s = p->s;
    const gagg_t *v[PW_POOL__COUNT];
    char padded[8];
    size_t n = tag_aggs(p, tag, pool, v);
    if (n == 0 && strlen(tag) < 4) { /* poolmon's padding: "Io" is "Io  " */
        snprintf(padded, sizeof(padded), "%-4s", tag);
        tag = padded;
        n = tag_aggs(p, tag, pool, v);
    }
    if (n == 0)
        return pw_api_error(resp, 404, "ENOENT", "no host of the global view exports tag '%s'",
                            tag);
    json_t *o = gagg_json(s, v[0]), *aggs = json_array(), *hosts = json_array();
    for (size_t i = 0; aggs && i < n; i++)
        json_array_append_new(aggs, gagg_json(s, v[i]));
    json_object_set_new(o, "aggregates", aggs);
    json_object_set_new(o, "scope", json_string("global"));
    json_object_set_new(o, "as_of_ms", pw__api_ju64(s->as_of_ms));
    for (size_t i = 0; hosts && i < n; i++)
        for (size_t k = v[i]->first; k < v[i]->first + v[i]->hosts; k++) {
            const pw_fleetq_row_t *r = &s->rows[k];
            const pw_fleetq_host_t *h = &s->hosts[r->host];
            json_array_append_new(
                hosts, json_pack("{s:o,s:s,s:o,s:o,s:b,s:o}", "host", pw__api_jstr(h->name), "type",
                                 pw_pool_name(r->pool), "bytes", pw__api_ju64(r->bytes), "robust_z",
                                 pw__api_jreal(p->z[k]), "outlier", (int)p->out[k], "collector",
                                 pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL)));
        }
    json_object_set_new(o, "hosts", hosts);
    return pw__api_send_json(resp, 200, o);
}

/* ---- leaks ----------------------------------------------------------------------------------- */

typedef struct leak_ref_s {
    const pw_fleetq_leak_t *l;
    const pw_fleetq_host_t *h; /* its host */
} leak_ref_t;

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
    const leak_ref_t *x = a, *y = b;
    const pw_fleetq_host_t *hx = x->h, *hy = y->h;
    pw_level_t lx = leak_level(hx, leak_pool(x->l)), ly = leak_level(hy, leak_pool(y->l));
    int rx = lx == PW_LEVEL_CRITICAL ? 0 : lx == PW_LEVEL_WARN ? 1 : 2;
    int ry = ly == PW_LEVEL_CRITICAL ? 0 : ly == PW_LEVEL_WARN ? 1 : 2;
    if (rx != ry)
        return rx - ry;
    /* when it runs out (the answer's pool_eta_ms): each host's newest sample plus its ETA */
    double ex = hx->eta_s[leak_pool(x->l)], ey = hy->eta_s[leak_pool(y->l)];
    ex = ex < 0 ? -1 : (double)hx->last_seen_ms + ex * 1000.0;
    ey = ey < 0 ? -1 : (double)hy->last_seen_ms + ey * 1000.0;
    if (ex != ey) {
        if (ex < 0 || ey < 0)
            return ex < 0 ? 1 : -1;
        return ex < ey ? -1 : 1;
    }
    double sx = isnan(x->l->score) ? -1 : x->l->score, sy = isnan(y->l->score) ? -1 : y->l->score;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    int c = strcmp(hx->name, hy->name);
    if (c)
        return c;
    c = strcmp(x->l->tag, y->l->tag);
    return c ? c : (int)x->l->pool - (int)y->l->pool;
}

/* GET /leaks: the suspects of host `host` (NULL = every host), highest score first. */
static json_t *leaks_doc(const pw_fleetq_snap_t *s, const char *host, uint64_t limit)
{
    leak_ref_t *v = pw_malloc((s->n_leaks ? s->n_leaks : 1) * sizeof(*v));
    if (v == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->n_leaks; i++) {
        const pw_fleetq_host_t *h = &s->hosts[s->leaks[i].host];
        if ((host == NULL || strcasecmp(h->name, host) == 0) &&
            h->suspects > 0) /* a suspect gone: stale until the lookback ends; its host says 0
                                at once */
            v[n++] = (leak_ref_t){&s->leaks[i], h};
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_leak);
    json_t *o = top_object(s), *arr = json_array();
    for (size_t i = 0; arr && i < n && i < limit; i++) {
        const pw_fleetq_host_t *h = v[i].h;
        int p = leak_pool(v[i].l);
        json_t *e = json_pack(
            "{s:o,s:o,s:s,s:s,s:o,s:o}", "host", pw__api_jstr(h->name), "collector",
            pw__api_jstr_or_null(h->collector[0] ? h->collector : NULL), "tag", v[i].l->tag, "type",
            pw_pool_name(v[i].l->pool), "score", pw__api_jreal(v[i].l->score), "growth_bytes_per_h",
            pw__api_jreal(v[i].l->growth_bytes_per_hour));
        /* its pool's limit with its source, level and ETA, as a collector's own list has them */
        if (e != NULL) {
            json_object_set_new(e, "pool_limit_bytes",
                                h->limit[p] ? pw__api_ju64(h->limit[p]) : json_null());
            json_object_set_new(
                e, "pool_limit_source",
                json_string(h->limit[p] && h->limit_source[p][0] ? h->limit_source[p] : "unknown"));
            json_object_set_new(e, "pool_level", json_string(pw__api_level_name(leak_level(h, p))));
            json_object_set_new(
                e, "pool_eta_ms",
                h->eta_s[p] >= 0 && h->last_seen_ms
                    ? pw__api_ju64(h->last_seen_ms + (uint64_t)llround(h->eta_s[p] * 1000.0))
                    : json_null());
            json_object_set_new(e, "last_sample_ms", /* what the ETA counts from */
                                h->last_seen_ms ? pw__api_ju64(h->last_seen_ms) : json_null());
        }
        json_array_append_new(arr, e);
    }
    pw_free(v);
    json_object_set_new(o, "suspects", arr);
    json_object_set_new(o, "total", json_integer((json_int_t)n));
    return o;
}

/* ---- the prepare hook --------------------------------------------------------------------------
 */

void pw_api_global_prepared_free(void *prepared)
{
    gprep_t *p = prepared;
    if (p == NULL)
        return;
    pw_free(p->aggs);
    pw_free(p->z);
    pw_free(p->out);
    pw_buf_close(&p->hosts);
    pw_buf_close(&p->tags);
    pw_buf_close(&p->leaks);
    pw_free(p);
}

/* The aggregates with their quantiles and their rows' robust z. 0 or PW_ENOMEM. */
static int prep_aggs(gprep_t *p)
{
    const pw_fleetq_snap_t *s = p->s;
    size_t n = s->n_rows ? s->n_rows : 1;
    p->aggs = pw_malloc(n * sizeof(*p->aggs));
    p->z = pw_malloc(n * sizeof(*p->z));
    p->out = pw_malloc(n * sizeof(*p->out));
    double *vals = pw_malloc(n * sizeof(*vals));
    uint32_t *grp = pw_calloc(n, sizeof(*grp));
    int r = 0;
    if (p->aggs == NULL || p->z == NULL || p->out == NULL || vals == NULL || grp == NULL)
        r = PW_ENOMEM;
    /* the snapshot's rows are in aggregate order already (fleetq.h) */
    for (size_t i = 0; r == 0 && i < s->n_rows; i++) {
        const pw_fleetq_row_t *w = &s->rows[i];
        gagg_t *a = p->n_aggs ? &p->aggs[p->n_aggs - 1] : NULL;
        if (a == NULL || strcmp(a->tag, w->tag) != 0 || a->pool != w->pool) {
            a = &p->aggs[p->n_aggs++];
            *a = (gagg_t){
                .tag = w->tag, .pool = w->pool, .min = w->bytes, .max = w->bytes, .first = i};
        }
        a->hosts++;
        a->total += w->bytes;
        if (w->bytes < a->min)
            a->min = w->bytes;
        if (w->bytes > a->max)
            a->max = w->bytes;
    }
    for (size_t i = 0; r == 0 && i < p->n_aggs; i++) {
        gagg_t *a = &p->aggs[i];
        for (uint32_t k = 0; k < a->hosts; k++)
            vals[k] = (double)s->rows[a->first + k].bytes;
        /* one group: the rows of one pool */
        if (pw_fleet_outliers(vals, grp, a->hosts, 3.5, p->z + a->first, p->out + a->first) < 0)
            for (uint32_t k = 0; k < a->hosts; k++)
                p->z[a->first + k] = 0, p->out[a->first + k] = false;
        a->p50 = pw_stats_quantile7(vals, a->hosts, 0.5); /* reorders vals: after the z */
        a->p90 = pw_stats_quantile7(vals, a->hosts, 0.9);
    }
    pw_free(vals);
    pw_free(grp);
    return r;
}

void *pw_api_global_prepare(const pw_fleetq_snap_t *s)
{
    gprep_t *p = pw_calloc(1, sizeof(*p));
    if (p == NULL || s == NULL) {
        pw_free(p);
        return NULL;
    }
    p->s = s;
    pw_buf_init(&p->hosts, SIZE_MAX);
    pw_buf_init(&p->tags, SIZE_MAX);
    pw_buf_init(&p->leaks, SIZE_MAX);
    if (prep_aggs(p) != 0 || pw__api_append_json(&p->hosts, hosts_doc(s)) != 0 ||
        pw__api_append_json(&p->tags, tags_doc(p, 3, cmp_g_total, 100)) != 0 ||
        pw__api_append_json(&p->leaks, leaks_doc(s, NULL, PW_API_LEAKS_LIMIT)) != 0) {
        pw_api_global_prepared_free(p);
        return NULL;
    }
    return p;
}

/* ---- the request side: prepared answers, the others cached per snapshot -------------------- */

/* Answers asked with other parameters (a tag's page, another sort) are made at their first
 * request of a snapshot from its prepared parts, then copied. */
#define GCACHE_N   8
#define GCACHE_KEY 256

struct pw__api_gcache_s {
    const pw_fleetq_snap_t *snap;
    uint64_t as_of_ms, took_ms; /* with the pointer: the snapshot's identity */
    gprep_t *own;               /* made here when the snapshot came without (no prepare hook) */
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
    pw_api_global_prepared_free(api->gcache->own);
    pw_free(api->gcache);
    api->gcache = NULL;
}

/* The current snapshot's prepared parts, or NULL with the 503 (no snapshot yet) or the 500
 * written. Resets the cache when the snapshot changed. */
static const gprep_t *prep_of(pw_api_t *api, pw_api_resp_t *resp)
{
    const pw_fleetq_snap_t *s = pw_fleetq_snapshot(api->fleetq);
    if (s == NULL) {
        pw_api_error(resp, 503, "EAGAIN",
                     "the global view has no snapshot yet (first query of [fleet] query_url "
                     "pending or failing: see the collector's log)");
        return NULL;
    }
    if (api->gcache == NULL && (api->gcache = pw_calloc(1, sizeof(*api->gcache))) == NULL) {
        pw_api_error(resp, 500, "ENOMEM", "out of memory");
        return NULL;
    }
    struct pw__api_gcache_s *c = api->gcache;
    if (c->snap != s || c->as_of_ms != s->as_of_ms || c->took_ms != s->took_ms) {
        for (int i = 0; i < GCACHE_N; i++) { /* a new snapshot: every answer is old */
            pw_buf_reset(&c->e[i].body);
            c->e[i].used = 0;
        }
        pw_api_global_prepared_free(c->own);
        c->own = NULL;
        c->snap = s;
        c->as_of_ms = s->as_of_ms;
        c->took_ms = s->took_ms;
    }
    if (s->prepared != NULL)
        return s->prepared;
    if (c->own == NULL && (c->own = pw_api_global_prepare(s)) == NULL)
        pw_api_error(resp, 500, "ENOMEM", "out of memory");
    return c->own;
}

static int send_bytes(pw_api_resp_t *resp, const pw_buf_t *b)
{
    pw_buf_reset(&resp->body);
    if (pw_buf_append(&resp->body, b->data, b->len) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "application/json";
    return 200;
}

static int key_of(const pw_api_req_t *req, char key[GCACHE_KEY])
{
    int n = snprintf(key, GCACHE_KEY, "%s?%s", req->path, req->query ? req->query : "");
    return n >= 0 && n < GCACHE_KEY ? 0 : -1;
}

/* Serves the answer cached for this request: 1, else 0. */
static int cache_get(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    struct pw__api_gcache_s *c = api->gcache;
    char key[GCACHE_KEY];
    if (c == NULL || key_of(req, key) != 0)
        return 0;
    for (int i = 0; i < GCACHE_N; i++)
        if (c->e[i].used != 0 && strcmp(c->e[i].key, key) == 0) {
            c->e[i].used = ++c->tick;
            return send_bytes(resp, &c->e[i].body) == 200;
        }
    return 0;
}

/* Keeps the answer in resp (status st) for this request; returns st. */
static int cache_put(pw_api_t *api, const pw_api_req_t *req, int st, const pw_api_resp_t *resp)
{
    struct pw__api_gcache_s *c = api->gcache;
    char key[GCACHE_KEY];
    if (st != 200 || c == NULL || key_of(req, key) != 0)
        return st;
    int lru = 0;
    for (int i = 1; i < GCACHE_N; i++)
        if (c->e[i].used < c->e[lru].used)
            lru = i;
    pw_buf_close(&c->e[lru].body);
    pw_buf_init(&c->e[lru].body, SIZE_MAX);
    if (pw_buf_append(&c->e[lru].body, resp->body.data, resp->body.len) == 0) {
        snprintf(c->e[lru].key, sizeof(c->e[lru].key), "%s", key);
        c->e[lru].used = ++c->tick;
    } else {
        c->e[lru].used = 0;
    }
    return st;
}

int pw__api_global_hosts(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    (void)req;
    const gprep_t *p = prep_of(api, resp);
    return p ? send_bytes(resp, &p->hosts) : resp->status;
}

int pw__api_global_tags(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t limit = 100;
    int pool = 3;
    const char *ty = pw__api_query_get(&q, "type"), *sort = pw__api_query_get(&q, "sort");
    cmp_fn cmp = cmp_g_total;
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
    const gprep_t *p = prep_of(api, resp);
    if (p == NULL)
        return resp->status;
    if (pool == 3 && cmp == cmp_g_total && limit == 100)
        return send_bytes(resp, &p->tags);
    if (cache_get(api, req, resp))
        return 200;
    return cache_put(api, req, pw__api_send_json(resp, 200, tags_doc(p, pool, cmp, limit)), resp);
}

int pw__api_global_tag(pw_api_t *api, const pw_api_req_t *req, const char *tag, pw_api_resp_t *resp)
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
    const gprep_t *p = prep_of(api, resp);
    if (p == NULL)
        return resp->status;
    if (cache_get(api, req, resp))
        return 200;
    return cache_put(api, req, tag_answer(p, pool, tag, resp), resp);
}

int pw__api_global_leaks(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
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
    const gprep_t *p = prep_of(api, resp);
    if (p == NULL)
        return resp->status;
    if (host == NULL && limit == PW_API_LEAKS_LIMIT)
        return send_bytes(resp, &p->leaks);
    if (cache_get(api, req, resp))
        return 200;
    return cache_put(
        api, req, pw__api_send_json(resp, 200, leaks_doc(p->s, host ? hbuf : NULL, limit)), resp);
}
