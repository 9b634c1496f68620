/* api_tags.c: fleet-wide tag aggregates (GET /api/v1/tags, /tags/{tag}) and tag
 * descriptions (GET /api/v1/pooltag/{tag}). */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fleet_agg.h"

/* ---- fleet tag aggregates ---------------------------------------------------------------- */

typedef struct agg_s {
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len, pool;
    uint32_t hosts;
    uint64_t total, min, max;
    size_t off; /* the aggregate in the fleet index (PW_ROW_KEY(global tag id, pool)) */
    uint32_t top_n;
    uint32_t top_host[PW_API_TOP_HOSTS];
    uint64_t top_bytes[PW_API_TOP_HOSTS];
} agg_t;

typedef struct aggset_s {
    agg_t *v;
    size_t n, cap;
    uint32_t *slots; /* index + 1 */
    size_t nslots;
} aggset_t;

static void aggset_free(aggset_t *s)
{
    pw_free(s->v);
    pw_free(s->slots);
    memset(s, 0, sizeof(*s));
}

static int cmp_tag_pool(const agg_t *x, const agg_t *y)
{
    size_t n = x->tag_len < y->tag_len ? x->tag_len : y->tag_len;
    int c = memcmp(x->tag, y->tag, n);
    if (c == 0)
        c = (int)x->tag_len - (int)y->tag_len;
    return c ? c : (int)x->pool - (int)y->pool;
}

static int cmp_agg_total(const void *a, const void *b)
{
    const agg_t *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->hosts != y->hosts)
        return x->hosts > y->hosts ? -1 : 1;
    return cmp_tag_pool(x, y);
}

/* sort=hosts: most hosts first, then bytes, then tag and pool. */
static int cmp_agg_hosts(const void *a, const void *b)
{
    const agg_t *x = a, *y = b;
    if (x->hosts != y->hosts)
        return x->hosts > y->hosts ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return cmp_tag_pool(x, y);
}

/* sort=tag: tag bytes, then pool. */
static int cmp_agg_tag(const void *a, const void *b)
{
    return cmp_tag_pool(a, b);
}

/* The fleet's per-(tag, pool) aggregates (rows of `pool`, 3 = all; `only` restricts to one
 * tag when not NULL) from the fleet's index (fleet_agg.h), with hosts and total only: the
 * order statistics are computed by agg_json for the aggregates returned. Fills s. */
static int fleet_aggregate(pw_api_t *api, int pool, const uint8_t *only, size_t only_len,
                           aggset_t *s, const pw_fleet_agg_t **ixp)
{
    const pw_fleet_agg_t *ix;
    if (pw_fleet_agg_sync(pw_ingest_fleet(api->ing), &ix) != 0)
        return PW_ENOMEM;
    *ixp = ix;
    size_t lo = 0, hi = ix->naggs;
    if (only != NULL) {
        int64_t gid = pw_tagdict_find(&ix->tags, only, only_len);
        if (gid < 0)
            return 0;
        lo = PW_ROW_KEY(gid, 0);
        hi = lo + 4 < ix->naggs ? lo + 4 : ix->naggs;
    }
    for (size_t k = lo; k < hi; k++) {
        const pw_agg_t *g = &ix->aggs[k];
        if (g->n == 0 || (pool != 3 && (int)PW_ROW_POOL(k) != pool))
            continue;
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 512;
            agg_t *v = pw_realloc(s->v, nc * sizeof(*v));
            if (v == NULL)
                return PW_ENOMEM;
            s->v = v;
            s->cap = nc;
        }
        agg_t *a = &s->v[s->n++];
        memset(a, 0, sizeof(*a));
        size_t tl = 0;
        const uint8_t *t = pw_tagdict_get(&ix->tags, PW_ROW_ID(k), &tl);
        memcpy(a->tag, t, tl);
        a->tag_len = (uint8_t)tl;
        a->pool = (uint8_t)PW_ROW_POOL(k);
        a->hosts = g->n;
        a->total = g->total;
        a->off = k; /* the index's aggregate */
    }
    return 0;
}

static json_t *agg_json(pw_api_t *api, agg_t *a, const pw_fleet_agg_t *ix)
{
    const pw_fleet_t *f = pw_ingest_fleet(api->ing);
    const pw_agg_t *g = &ix->aggs[a->off];
    /* min, max and the top hosts (largest first, ties: the earlier host) over the entries,
     * which are in no order; the quantiles over a copy of the values. */
    double *vals = pw_malloc((g->n ? g->n : 1) * sizeof(*vals));
    if (vals == NULL)
        return NULL;
    a->min = UINT64_MAX;
    a->max = 0;
    a->top_n = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        uint64_t b = g->v[i].bytes;
        uint32_t host = g->v[i].host;
        vals[i] = (double)b;
        a->min = b < a->min ? b : a->min;
        a->max = b > a->max ? b : a->max;
        uint32_t n = a->top_n;
        if (n == PW_API_TOP_HOSTS &&
            (b < a->top_bytes[n - 1] || (b == a->top_bytes[n - 1] && host > a->top_host[n - 1])))
            continue;
        uint32_t j = n < PW_API_TOP_HOSTS ? n : PW_API_TOP_HOSTS - 1;
        while (j > 0 && (a->top_bytes[j - 1] < b ||
                         (a->top_bytes[j - 1] == b && a->top_host[j - 1] > host))) {
            a->top_bytes[j] = a->top_bytes[j - 1];
            a->top_host[j] = a->top_host[j - 1];
            j--;
        }
        a->top_bytes[j] = b;
        a->top_host[j] = host;
        if (n < PW_API_TOP_HOSTS)
            a->top_n++;
    }
    char tt[PW_API_TAG_TEXT_MAX];
    const char *drv, *desc;
    uint32_t sess;
    size_t tl = pw_row_split(a->tag, a->tag_len, a->pool, &sess);
    pw__api_describe(api, a->tag, tl, &drv, &desc);
    json_t *top = json_array();
    for (uint32_t i = 0; top && i < a->top_n; i++)
        json_array_append_new(top, json_pack("{s:o,s:o}", "host",
                                             pw__api_jstr(f->hosts[a->top_host[i]]->name), "bytes",
                                             pw__api_ju64(a->top_bytes[i])));
    double p50 = pw_stats_quantile7(vals, a->hosts, 0.5);
    double p90 = pw_stats_quantile7(vals, a->hosts, 0.9);
    pw_free(vals);
    json_t *o = json_pack(
        "{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tag", pw__api_tag_text(a->tag, tl, tt),
        "type", pw_pool_name(a->pool), "hosts", (int)a->hosts, "bytes_total",
        pw__api_ju64(a->total), "bytes_min", pw__api_ju64(a->min), "bytes_p50", json_real(p50),
        "bytes_p90", json_real(p90), "bytes_max", pw__api_ju64(a->max), "top_hosts", top, "driver",
        pw__api_jstr_or_null(drv), "description", pw__api_jstr_or_null(desc));
    /* One session's rows (session N of each host that has it) are their own aggregate. */
    if (o != NULL && sess != PW_SESSION_ALL)
        json_object_set_new_nocheck(o, "session", json_integer(sess));
    return o;
}

/* Sort orders of /api/v1/tags: the query word, the cursor's first letter, the comparator. */
static const struct {
    const char *word;
    char letter;
    int (*cmp)(const void *, const void *);
} SORTS[] = {
    {"bytes", 'b', cmp_agg_total}, {"hosts", 'h', cmp_agg_hosts}, {"tag", 't', cmp_agg_tag}};

/* A cursor names the last aggregate of a page by its sort key, not by a position: the next
 * page starts after it even when aggregates came or went in between (none is repeated; one
 * that moved across the cut may be missed, as with any keyset cursor). Form:
 * <letter>.<bytes_total>.<hosts>.<pool>.<tag bytes in hex>. */
static void cursor_make(char *out, size_t n, char letter, const agg_t *a)
{
    int w = snprintf(out, n, "%c.%" PRIu64 ".%u.%u.", letter, a->total, a->hosts, a->pool);
    for (size_t i = 0; w > 0 && (size_t)w + 3 <= n && i < a->tag_len; i++)
        w += snprintf(out + w, n - (size_t)w, "%02x", a->tag[i]);
}

static int cursor_parse(const char *s, char letter, agg_t *a)
{
    memset(a, 0, sizeof(*a));
    unsigned long long total;
    unsigned hosts, pool;
    int used = 0;
    char l;
    if (sscanf(s, "%c.%llu.%u.%u.%n", &l, &total, &hosts, &pool, &used) != 4 || used == 0 ||
        l != letter || pool > 3)
        return -1;
    const char *h = s + used;
    size_t hl = strlen(h);
    if (hl == 0 || hl % 2 != 0 || hl / 2 > PW_TAG_MAX)
        return -1;
    for (size_t i = 0; i < hl / 2; i++) {
        int hi = pw__api_hexval(h[2 * i]), lo = pw__api_hexval(h[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        a->tag[i] = (uint8_t)(hi * 16 + lo);
    }
    a->tag_len = (uint8_t)(hl / 2);
    a->total = total;
    a->hosts = hosts;
    a->pool = (uint8_t)pool;
    return 0;
}

#define TAGS_LIMIT_DEFAULT 100
#define TAGS_LIMIT_MAX     1000

int pw__api_tags(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    int global = pw__api_scope_global(api, req, resp);
    if (global != 0)
        return global < 0 ? resp->status : pw__api_global_tags(api, req, resp);
    (void)params;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t limit = TAGS_LIMIT_DEFAULT;
    int pool = 3;
    size_t so = 0;
    agg_t after;
    const char *ty = pw__api_query_get(&q, "type");
    const char *sort = pw__api_query_get(&q, "sort");
    const char *cur = pw__api_query_get(&q, "cursor");
    int bad = 0;
    if (ty && (pool = pw__api_pool_word(ty)) < 0)
        bad = pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    while (!bad && sort && so < sizeof(SORTS) / sizeof(SORTS[0]) && strcmp(sort, SORTS[so].word))
        so++;
    if (!bad && so == sizeof(SORTS) / sizeof(SORTS[0]))
        bad = pw_api_error(resp, 400, "EINVAL", "sort must be bytes, hosts or tag");
    if (!bad && cur && cursor_parse(cur, SORTS[so].letter, &after) != 0)
        bad = pw_api_error(resp, 400, "EINVAL", "cursor is not one of this sort's next_cursor");
    if (!bad && pw__api_query_u64(&q, "limit", TAGS_LIMIT_MAX, &limit, resp) < 0)
        bad = resp->status;
    pw__api_query_free(&q);
    if (bad)
        return resp->status;
    aggset_t s;
    memset(&s, 0, sizeof(s));
    const pw_fleet_agg_t *ix = NULL;
    if (fleet_aggregate(api, pool, NULL, 0, &s, &ix) != 0) {
        aggset_free(&s);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (s.n > 1)
        qsort(s.v, s.n, sizeof(*s.v), SORTS[so].cmp);
    /* the first aggregate after the cursor's, by binary search in the same order */
    size_t lo = 0, hi = s.n;
    while (cur && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (SORTS[so].cmp(&s.v[mid], &after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = s.n - lo > limit ? lo + (size_t)limit : s.n;
    /* The body is written one aggregate at a time: no document tree of the whole page. */
    pw_buf_t *b = &resp->body;
    pw_buf_reset(b);
    int r = pw_buf_append(b, "{\"tags\":[", 9);
    for (size_t i = lo; r == 0 && i < end; i++) {
        if (i > lo)
            r = pw_buf_append(b, ",", 1);
        r = r ? r : pw__api_append_json(b, agg_json(api, &s.v[i], ix));
    }
    char tail[64 + 2 * PW_TAG_MAX + 64];
    int tn = snprintf(tail, sizeof(tail), "],\"total\":%zu,\"next_cursor\":", s.n);
    r = r ? r : pw_buf_append(b, tail, (size_t)tn);
    if (r == 0 && end < s.n && end > lo) {
        char c[16 + 3 * 24 + 2 * PW_TAG_MAX];
        cursor_make(c, sizeof(c), SORTS[so].letter, &s.v[end - 1]);
        tn = snprintf(tail, sizeof(tail), "\"%s\"}", c);
    } else {
        tn = snprintf(tail, sizeof(tail), "null}");
    }
    r = r ? r : pw_buf_append(b, tail, (size_t)tn);
    aggset_free(&s);
    if (r != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "application/json";
    return 200;
}

int pw__api_tag(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    int global = pw__api_scope_global(api, req, resp);
    if (global != 0)
        return global < 0 ? resp->status : pw__api_global_tag(api, req, params[0], resp);
    uint8_t tag[PW_TAG_MAX];
    int tl = pw__api_tag_parse(params[0], tag);
    if (tl < 0)
        return pw_api_error(resp, 400, "EINVAL", "bad tag: 1..64 bytes in printable form");
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    int pool = 3;
    const char *ty = pw__api_query_get(&q, "type");
    if (ty && (pool = pw__api_pool_word(ty)) < 0) {
        pw__api_query_free(&q);
        return pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    }
    pw__api_query_free(&q);
    aggset_t s;
    memset(&s, 0, sizeof(s));
    const pw_fleet_agg_t *ix = NULL;
    int r = fleet_aggregate(api, pool, tag, (size_t)tl, &s, &ix);
    if (r == 0 && s.n == 0 && tl < 4) { /* poolmon's padding: "Io" is "Io  " (as in series) */
        aggset_free(&s);
        memset(&s, 0, sizeof(s));
        memset(tag + tl, ' ', (size_t)(4 - tl));
        tl = 4;
        r = fleet_aggregate(api, pool, tag, (size_t)tl, &s, &ix);
    }
    if (r != 0) {
        aggset_free(&s);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (s.n == 0) {
        aggset_free(&s);
        return pw_api_error(resp, 404, "ENOENT", "no host has tag '%s'", params[0]);
    }
    if (s.n > 1)
        qsort(s.v, s.n, sizeof(*s.v), cmp_agg_total);
    json_t *o = agg_json(api, &s.v[0], ix); /* the pool type with the most bytes */
    json_t *aggs = json_array();
    for (size_t i = 0; aggs && i < s.n; i++)
        json_array_append_new(aggs, agg_json(api, &s.v[i], ix));
    aggset_free(&s);
    if (o == NULL) {
        json_decref(aggs);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    json_object_set_new(o, "aggregates", aggs);
    /* Every host's row(s), with a robust z among hosts of the same OS build and pool. */
    const pw_fleet_t *f = pw_ingest_fleet(api->ing);
    size_t cap = 3 * f->n + 1, m = 0;
    double *v = pw_malloc(cap * sizeof(*v)), *z = pw_malloc(cap * sizeof(*z));
    uint32_t *grp = pw_malloc(cap * sizeof(*grp));
    bool *out = pw_malloc(cap * sizeof(*out));
    const pw_host_t **hh = pw_malloc(cap * sizeof(*hh));
    pw_host_row_t *rr = pw_malloc(cap * sizeof(*rr));
    if (!v || !z || !grp || !out || !hh || !rr) {
        pw_free(v), pw_free(z), pw_free(grp), pw_free(out), pw_free(hh), pw_free(rr);
        json_decref(o);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    for (size_t i = 0; i < f->n; i++) {
        const pw_host_t *h = f->hosts[i];
        size_t n = pw_host_retired(h) ? 0 : pw_host_nrows(h);
        for (size_t j = 0; j < n && m < cap; j++) {
            pw_host_row(h, j, &rr[m]);
            if (rr[m].tag_len != tl || memcmp(rr[m].tag, tag, (size_t)tl) != 0 ||
                (pool != 3 && rr[m].pool != pool))
                continue;
            v[m] = (double)rr[m].bytes;
            grp[m] = h->os_build * 4u + rr[m].pool;
            hh[m++] = h;
        }
    }
    if (pw_fleet_outliers(v, grp, m, 3.5, z, out) < 0)
        for (size_t i = 0; i < m; i++)
            z[i] = 0, out[i] = false;
    json_t *hosts = json_array();
    for (size_t i = 0; hosts && i < m; i++)
        json_array_append_new(
            hosts, json_pack("{s:o,s:s,s:o,s:o,s:o,s:b,s:i}", "host", pw__api_jstr(hh[i]->name),
                             "type", pw_pool_name(rr[i].pool), "bytes", pw__api_ju64(rr[i].bytes),
                             "diff", pw__api_ju64(rr[i].diff), "robust_z", pw__api_jreal(z[i]),
                             "outlier", (int)out[i], "os_build", (int)hh[i]->os_build));
    pw_free(v), pw_free(z), pw_free(grp), pw_free(out), pw_free(hh), pw_free(rr);
    json_object_set_new(o, "hosts", hosts);
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    json_t *sus = json_array();
    for (size_t i = 0; sus && i < ns; i++)
        if (sp[i].tag_len == tl && memcmp(sp[i].tag, tag, (size_t)tl) == 0 &&
            (pool == 3 || sp[i].pool == pool))
            json_array_append_new(sus, pw__api_suspect_json(api, &sp[i]));
    json_object_set_new(o, "suspects", sus);
    return pw__api_send_json(resp, 200, o);
}

int pw__api_pooltag(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    uint8_t tag[PW_TAG_MAX];
    int tl = pw__api_tag_parse(params[0], tag);
    if (tl < 0)
        return pw_api_error(resp, 400, "EINVAL", "bad tag: 1..64 bytes in printable form");
    /* a pool tag is 4 bytes, a shorter one padded with spaces (as poolmon and pooltag.txt have
     * it): the answer names the tag looked up, 'Ddk ' for Ddk, as every other answer names it */
    for (; tl < 4; tl++)
        tag[tl] = ' ';
    const char *drv, *desc;
    pw__api_describe(api, tag, (size_t)tl, &drv, &desc);
    char tt[PW_API_TAG_TEXT_MAX];
    int known = drv != NULL || desc != NULL;
    /* pooltag_loaded: whether "not known" means "not in the file" or "no file configured" */
    return pw__api_send_json(
        resp, 200,
        json_pack("{s:s,s:o,s:o,s:b,s:b}", "tag", pw__api_tag_text(tag, (size_t)tl, tt), "driver",
                  pw__api_jstr_or_null(drv), "description", pw__api_jstr_or_null(desc), "known",
                  known, "pooltag_loaded", api->pooltag != NULL));
}
