/* api_pool.c: GET /api/v1/hosts/{host}/pool: the remote poolmon table, sorted, filtered
 * and cut to a top-k. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "tagpat.h"

/* Sort of the pool table. The order is total: the column (or the tag), then the tag bytes,
 * then the pool type, then the position in the host's table. Each row that passes the
 * filters becomes an item whose two integer keys decide almost every comparison, so sorting
 * and top-k selection rarely look at the rows themselves. */
enum { SORT_TAG, SORT_ALLOCS, SORT_FREES, SORT_DIFF, SORT_BYTES, SORT_PER_ALLOC, SORT_HELD };

typedef struct pitem_s {
    uint64_t k1; /* the column, order applied (or the tag's first 8 bytes for sort=tag) */
    uint64_t k2; /* the tag's first 8 bytes (0 for sort=tag) */
    uint32_t i;  /* row in the host's table */
} pitem_t;

/* qsort's context and the item scratch, kept between requests so that a stream of top
 * screens does not allocate and fault in a table-sized array each time: the API runs on the
 * loop thread only. */
static const pw_host_t *g_host;
static int g_tag_desc;
static pitem_t *g_items;
static size_t g_items_cap;
#define POOL_ITEMS_KEEP 65536 /* items kept between requests at most (1.5 MB) */

/* Tag bytes and pool of row i of the host's table. */
static const uint8_t *row_tag(const pw_host_t *h, size_t i, size_t *len, int *pool)
{
    pw_host_row_t r;
    pw_host_row_plain(h, i, &r);
    *pool = r.pool;
    *len = r.tag_len;
    return r.tag;
}

/* The tag's first 8 bytes, big-endian, zero padded: ordered as the tags are (memcmp, then
 * the shorter first) whenever they differ. */
static uint64_t tag_prefix(const uint8_t *tag, size_t len)
{
    uint64_t k = 0;
    for (size_t j = 0; j < 8; j++)
        k = k << 8 | (j < len ? tag[j] : 0);
    return k;
}

static int cmp_tag(const uint8_t *xt, size_t xl, int xp, const uint8_t *yt, size_t yl, int yp)
{
    int c = memcmp(xt, yt, xl < yl ? xl : yl);
    if (c == 0)
        c = (int)xl - (int)yl;
    if (c == 0)
        c = xp - yp;
    return c;
}

static int cmp_item(const void *a, const void *b)
{
    const pitem_t *x = a, *y = b;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2 ? -1 : 1;
    size_t xl, yl;
    int xp, yp;
    const uint8_t *xt = row_tag(g_host, x->i, &xl, &xp), *yt = row_tag(g_host, y->i, &yl, &yp);
    int c = cmp_tag(xt, xl, xp, yt, yl, yp);
    if (c != 0)
        return g_tag_desc ? -c : c;
    return x->i < y->i ? -1 : x->i > y->i; /* a repeated (tag, pool) row: table order */
}

/* The sort column of a row as an unsigned key (by_change: the change columns, signed). */
static uint64_t vrow_column(const pw_host_row_t *v, int sort, int by_change)
{
    if (by_change && sort != SORT_PER_ALLOC) {
        int64_t c = sort == SORT_ALLOCS  ? v->ch_allocs
                    : sort == SORT_FREES ? v->ch_frees
                    : sort == SORT_DIFF  ? v->ch_diff
                    : sort == SORT_HELD  ? v->ch_held_bytes
                                         : v->ch_bytes;
        return (uint64_t)c ^ (1ull << 63); /* signed order as unsigned */
    }
    return sort == SORT_ALLOCS  ? v->allocs
           : sort == SORT_FREES ? v->frees
           : sort == SORT_DIFF  ? v->diff
           : sort == SORT_BYTES ? v->bytes
           : sort == SORT_HELD  ? v->held_bytes
                                : v->per_alloc;
}

static void make_item(const uint8_t *tag, size_t len, uint64_t col, uint32_t i, int sort, int desc,
                      pitem_t *it)
{
    uint64_t pre = tag_prefix(tag, len);
    it->i = i;
    if (sort == SORT_TAG) {
        it->k1 = desc ? ~pre : pre;
        it->k2 = 0;
    } else {
        it->k1 = desc ? ~col : col;
        it->k2 = pre; /* ties: by tag, ascending, whatever the order */
    }
}

/* Whether a tag passes the include and exclude lists, matched on its printable form
 * (pw_tag_format), which is the bytes themselves for most tags. */
static int tag_passes(const uint8_t *tag, size_t len, const pw_tagpat_list_t *inc,
                      const pw_tagpat_list_t *exc)
{
    char tt[PW_API_TAG_TEXT_MAX];
    const char *s = (const char *)tag;
    size_t sn = len;
    for (size_t j = 0; j < len; j++)
        if (tag[j] < 0x20 || tag[j] >= 0x7f || tag[j] == '\\') {
            sn = pw_tag_format(tag, len, tt, sizeof(tt));
            s = tt;
            break;
        }
    return !(inc->present && !pw_tagpat_list_match(inc, s, sn)) &&
           !(exc->present && pw_tagpat_list_match(exc, s, sn));
}

/* Moves item `at` of the max-heap h (n items, cmp_item order) down to its place. */
static void heap_down(pitem_t *h, size_t n, size_t at)
{
    for (;;) {
        size_t l = 2 * at + 1, big = at;
        if (l < n && cmp_item(&h[l], &h[big]) > 0)
            big = l;
        if (l + 1 < n && cmp_item(&h[l + 1], &h[big]) > 0)
            big = l + 1;
        if (big == at)
            return;
        pitem_t t = h[at];
        h[at] = h[big];
        h[big] = t;
        at = big;
    }
}

/* Leaves the k first items of v (n items) in v[0..k), sorted; k <= n. With a limit well
 * below the table (a top screen) only a k-item heap is kept: O(n log k), not a full sort. */
static void select_sorted(pitem_t *v, size_t n, size_t k)
{
    if (k == 0)
        return;
    if (k < n) {
        for (size_t j = k / 2; j-- > 0;)
            heap_down(v, k, j);
        for (size_t j = k; j < n; j++)
            if (cmp_item(&v[j], &v[0]) < 0) {
                v[0] = v[j];
                heap_down(v, k, 0);
            }
        n = k;
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_item);
}

/* The JSON object of one pool-table row; `held`: the host reports held bytes (else they are
 * null: not reported, which 0 would not say). */
static json_t *pool_row_json(const pw_api_t *api, const pw_host_row_t *r, int held)
{
    char tt[PW_API_TAG_TEXT_MAX];
    const char *drv, *desc_s;
    uint32_t sess;
    size_t tl = pw_row_split(r->tag, r->tag_len, r->pool, &sess);
    pw__api_describe(api, r->tag, tl, &drv, &desc_s);
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new_nocheck(o, "tag", json_string_nocheck(pw__api_tag_text(r->tag, tl, tt)));
    json_object_set_new_nocheck(o, "type", json_string_nocheck(pw_pool_name(r->pool)));
    /* Session pool rows: the session they belong to; null for the sum over sessions. */
    if (r->pool == PW_POOL_SESSION)
        json_object_set_new_nocheck(o, "session",
                                    sess == PW_SESSION_ALL ? json_null() : json_integer(sess));
    json_object_set_new_nocheck(o, "allocs", pw__api_ju64(r->allocs));
    json_object_set_new_nocheck(o, "frees", pw__api_ju64(r->frees));
    json_object_set_new_nocheck(o, "diff", pw__api_ju64(r->diff));
    json_object_set_new_nocheck(o, "bytes", pw__api_ju64(r->bytes));
    json_object_set_new_nocheck(o, "per_alloc", pw__api_ju64(r->per_alloc));
    json_object_set_new_nocheck(o, "allocs_change", json_integer(r->ch_allocs));
    json_object_set_new_nocheck(o, "frees_change", json_integer(r->ch_frees));
    json_object_set_new_nocheck(o, "diff_change", json_integer(r->ch_diff));
    json_object_set_new_nocheck(o, "bytes_change", json_integer(r->ch_bytes));
    /* A Linux slab cache's slabs: what it holds, where bytes is what its objects use. */
    json_object_set_new_nocheck(o, "held_bytes", held ? pw__api_ju64(r->held_bytes) : json_null());
    json_object_set_new_nocheck(o, "held_bytes_change",
                                held ? json_integer(r->ch_held_bytes) : json_null());
    json_object_set_new_nocheck(o, "driver", pw__api_jstr_or_null(drv));
    json_object_set_new_nocheck(o, "description", pw__api_jstr_or_null(desc_s));
    return o;
}

int pw__api_pool(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    int sort = SORT_BYTES, desc = -1, pool = 3;
    uint64_t by_change = 0, limit = UINT64_MAX;
    const char *v;
    static const char *const sorts[] = {"tag",   "allocs",    "frees",     "diff",
                                        "bytes", "per_alloc", "held_bytes"};
    if ((v = pw__api_query_get(&q, "sort")) != NULL) {
        sort = -1;
        for (int i = 0; i < 7; i++)
            if (strcmp(v, sorts[i]) == 0)
                sort = i;
        if (sort < 0) {
            pw__api_query_free(&q);
            return pw_api_error(resp, 400, "EINVAL",
                                "sort must be tag, allocs, frees, diff, bytes, per_alloc or "
                                "held_bytes");
        }
    }
    if ((v = pw__api_query_get(&q, "order")) != NULL) {
        if (strcmp(v, "desc") == 0)
            desc = 1;
        else if (strcmp(v, "asc") == 0)
            desc = 0;
        else {
            pw__api_query_free(&q);
            return pw_api_error(resp, 400, "EINVAL", "order must be asc or desc");
        }
    }
    if ((v = pw__api_query_get(&q, "pool")) != NULL && (pool = pw__api_pool_word(v)) < 0) {
        pw__api_query_free(&q);
        return pw_api_error(resp, 400, "EINVAL", "pool must be paged, nonpaged, session or both");
    }
    /* session=N: only session N's session-pool rows (poolmon /sN); session=all: every
     * session-pool row. */
    int64_t session = -1; /* -1: no filter; -2: all sessions */
    if ((v = pw__api_query_get(&q, "session")) != NULL) {
        if (strcmp(v, "all") == 0) {
            session = -2;
        } else {
            uint64_t sv = 0;
            if (pw__api_query_u64(&q, "session", PW_SESSION_ALL - 1, &sv, resp) < 0) {
                pw__api_query_free(&q);
                return resp->status;
            }
            session = (int64_t)sv;
        }
    }
    if (pw__api_query_u64(&q, "by_change", 1, &by_change, resp) < 0 ||
        pw__api_query_u64(&q, "limit", UINT32_MAX, &limit, resp) < 0) {
        pw__api_query_free(&q);
        return resp->status;
    }
    if (desc < 0)
        desc = sort != SORT_TAG; /* poolmon: tags ascending, numbers largest first */
    pw_tagpat_list_t inc, exc;
    int r = pw_tagpat_list_init(&inc, pw__api_query_get(&q, "include"));
    if (r == 0)
        r = pw_tagpat_list_init(&exc, pw__api_query_get(&q, "exclude"));
    else
        memset(&exc, 0, sizeof(exc));
    size_t n = pw_host_nrows(h), m = 0;
    if (r == 0 && n > g_items_cap) {
        pitem_t *t = pw_realloc(g_items, n * sizeof(*t));
        if (t == NULL) {
            r = PW_ENOMEM;
        } else {
            g_items = t;
            g_items_cap = n;
        }
    }
    if (r != 0) {
        pw_tagpat_list_free(&inc);
        pw_tagpat_list_free(&exc);
        pw__api_query_free(&q);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    int filter = inc.present || exc.present;
    /* Rows of one tag are adjacent (and a stream's rows share its tag bytes), so a tag's
     * patterns are matched once for all its pools. Change columns are read only when sorted
     * by them. */
    const uint8_t *last_tag = NULL;
    int last_ok = 0;
    int need_change = by_change && sort != SORT_PER_ALLOC && sort != SORT_TAG;
    for (size_t i = 0; i < n; i++) {
        pw_host_row_t row;
        if (need_change)
            pw_host_row(h, i, &row);
        else
            pw_host_row_plain(h, i, &row);
        if (pool != 3 && row.pool != pool)
            continue;
        uint32_t sess;
        size_t tl = pw_row_split(row.tag, row.tag_len, row.pool, &sess);
        if (session != -1 &&
            (row.pool != PW_POOL_SESSION || (session >= 0 && sess != (uint32_t)session)))
            continue;
        if (filter) {
            if (row.tag != last_tag) {
                last_tag = row.tag;
                last_ok = tag_passes(row.tag, tl, &inc, &exc);
            }
            if (!last_ok)
                continue;
        }
        uint64_t col = sort == SORT_TAG ? 0 : vrow_column(&row, sort, (int)by_change);
        make_item(row.tag, row.tag_len, col, (uint32_t)i, sort, desc, &g_items[m++]);
    }
    pw_tagpat_list_free(&inc);
    pw_tagpat_list_free(&exc);
    size_t out_n = m < limit ? m : (size_t)limit;
    g_host = h;
    g_tag_desc = sort == SORT_TAG && desc;
    select_sorted(g_items, m, out_n);
    json_t *arr = json_array();
    int held = out_n > 0 && pw_host_has_held(h);
    for (size_t i = 0; arr && i < out_n; i++) {
        pw_host_row_t row;
        pw_host_row(h, g_items[i].i, &row);
        json_t *o = pool_row_json(api, &row, held);
        if (o == NULL)
            break;
        json_array_append_new(arr, o);
    }
    pw__api_query_free(&q);
    if (g_items_cap > POOL_ITEMS_KEEP) { /* an unusually large table: do not hold on to it */
        pw_free(g_items);
        g_items = NULL;
        g_items_cap = 0;
    }
    json_t *prev_ts = pw_host_prev_ts(h) ? pw__api_ju64(pw_host_prev_ts(h)) : json_null();
    json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host", pw__api_jstr(h->name),
                          "timestamp_ms", pw__api_ju64(pw_host_ts(h)), "prev_timestamp_ms", prev_ts,
                          "totals", pw__api_totals_json(pw_host_totals(h)), "rows", arr, "count",
                          json_integer((json_int_t)out_n), "total_rows",
                          json_integer((json_int_t)m), "table_rows", json_integer((json_int_t)n));
    /* A row is about 220 bytes of JSON: one allocation instead of a doubling series (a hint;
     * pw__api_send_json grows the body as needed). */
    (void)pw_buf_reserve(&resp->body, 512 + (out_n < 4096 ? out_n : 4096) * 256);
    return pw__api_send_json(resp, 200, o);
}
