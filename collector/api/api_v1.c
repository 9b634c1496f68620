/* api_v1.c: the routing table, authentication and the /api/v1 handlers (JSON via jansson).
 * The shapes are the contract described in docs/openapi.json. */
#include "api.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "analysis.h"
#include "fleet_agg.h"
#include "poolmon_text.h"
#include "tagpat.h"

#define MAX_PARAMS   4  /* {name} segments in a route */
#define MAX_QUERY    32 /* query parameters looked at */
#define TAG_TEXT_MAX (PW_TAG_MAX * 4 + 1)
#define TOP_HOSTS    5 /* top_hosts of a fleet tag aggregate */

/* ============================================================================================
 * Small helpers: responses, strings, tags, query strings
 * ========================================================================================== */

void pw_api_resp_init(pw_api_resp_t *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->status = 500;
    resp->content_type = "application/json";
    pw_buf_init(&resp->body, SIZE_MAX);
}

void pw_api_resp_close(pw_api_resp_t *resp)
{
    pw_buf_close(&resp->body);
}

const char *pw_api_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

/* A JSON string of s; bytes that are not valid UTF-8 become '?', so that any host name or
 * driver text from the field still gives valid JSON. */
static json_t *jstr(const char *s)
{
    if (s == NULL)
        return json_null();
    json_t *j = json_string(s);
    if (j != NULL)
        return j;
    size_t n = strlen(s);
    char *t = pw_malloc(n + 1);
    if (t == NULL)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        t[i] = ((unsigned char)s[i] >= 0x80) ? '?' : s[i];
    j = json_string(t);
    pw_free(t);
    return j;
}

/* A string, or null when empty. */
static json_t *jstr_or_null(const char *s)
{
    return (s == NULL || s[0] == '\0') ? json_null() : jstr(s);
}

static json_t *ju64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* A finite real, or null (NaN, infinities). */
static json_t *jreal(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* json_dump_callback's sink: appends to the pw_buf_t `data`. jansson hands over a few bytes
 * at a time, so the common case (room left) is a plain copy. */
static int dump_to_buf(const char *buf, size_t size, void *data)
{
    pw_buf_t *b = data;
    if (b->data != NULL && size <= b->cap - b->len) {
        memcpy(b->data + b->len, buf, size);
        b->len += size;
        return 0;
    }
    return pw_buf_append(b, buf, size) == 0 ? 0 : -1;
}

/* Serialises j (stolen) into resp with status. */
static int send_json(pw_api_resp_t *resp, int status, json_t *j)
{
    if (j == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    pw_buf_reset(&resp->body);
    /* One pass straight into the body (json_dumpb would serialise twice: size, then text). */
    int r = json_dump_callback(j, dump_to_buf, &resp->body, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (r != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = status;
    resp->content_type = "application/json";
    return status;
}

int pw_api_error(pw_api_resp_t *resp, int status, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:{s:s,s:o}}", "error", "code", code, "message", jstr(msg));
    pw_buf_reset(&resp->body);
    resp->status = status;
    resp->content_type = "application/json";
    if (e == NULL) {
        static const char oom[] = "{\"error\":{\"code\":\"ENOMEM\",\"message\":\"out of memory\"}}";
        pw_buf_append(&resp->body, oom, sizeof(oom) - 1);
        return status;
    }
    size_t n = json_dumpb(e, NULL, 0, JSON_COMPACT);
    if (pw_buf_reserve(&resp->body, n + 1) == 0) {
        json_dumpb(e, (char *)resp->body.data, n, JSON_COMPACT);
        resp->body.len = n;
    }
    json_decref(e);
    return status;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (NUL-terminated, at most out_size - 1 bytes); `plus`
 * turns '+' into a space (query strings). Returns the length, or -1 for a bad escape, an
 * encoded NUL, or an output too long. */
static ssize_t pct_decode(const char *s, size_t n, int plus, char *out, size_t out_size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            ch = hi << 4 | lo;
            if (ch == 0)
                return -1;
            i += 2;
        } else if (ch == '+' && plus) {
            ch = ' ';
        }
        if (o + 1 >= out_size)
            return -1;
        out[o++] = (char)ch;
    }
    out[o] = '\0';
    return (ssize_t)o;
}

/* The printable form of a tag (pw_tag_format). */
static const char *tag_text(const uint8_t *tag, size_t len, char out[TAG_TEXT_MAX])
{
    pw_tag_format(tag, len, out, TAG_TEXT_MAX);
    return out;
}

/* Parses the printable form back into bytes: "\\" and "\xNN" escapes, anything else as is.
 * Returns the length (1..PW_TAG_MAX) or -1. */
static int tag_parse(const char *s, uint8_t out[PW_TAG_MAX])
{
    size_t n = 0;
    for (size_t i = 0; s[i] != '\0'; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '\\') {
            if (s[i + 1] == '\\') {
                i++;
            } else if (s[i + 1] == 'x' && hexval((unsigned char)s[i + 2]) >= 0 &&
                       hexval((unsigned char)s[i + 3]) >= 0) {
                ch = hexval((unsigned char)s[i + 2]) << 4 | hexval((unsigned char)s[i + 3]);
                i += 3;
            } else {
                return -1;
            }
        }
        if (n == PW_TAG_MAX)
            return -1;
        out[n++] = (uint8_t)ch;
    }
    return n == 0 ? -1 : (int)n;
}

/* Decoded query parameters. */
typedef struct query_s {
    size_t n;
    char *name[MAX_QUERY];
    char *value[MAX_QUERY];
    char *mem;
} query_t;

static void query_free(query_t *q)
{
    pw_free(q->mem);
    memset(q, 0, sizeof(*q));
}

/* Splits and decodes `s`. Returns 0, or -1 for a bad percent-encoding (resp filled). */
static int query_parse(const char *s, query_t *q, pw_api_resp_t *resp)
{
    memset(q, 0, sizeof(*q));
    size_t len = strlen(s);
    q->mem = pw_malloc(2 * len + 2);
    if (q->mem == NULL) {
        pw_api_error(resp, 500, "ENOMEM", "out of memory");
        return -1;
    }
    char *o = q->mem;
    const char *p = s, *end = s + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if (e > p && q->n < MAX_QUERY) {
            const char *eq = memchr(p, '=', (size_t)(e - p));
            const char *ne = eq ? eq : e;
            ssize_t a = pct_decode(p, (size_t)(ne - p), 1, o, (size_t)(ne - p) + 1);
            if (a < 0)
                goto bad;
            q->name[q->n] = o;
            o += a + 1;
            const char *vs = eq ? eq + 1 : e;
            ssize_t b = pct_decode(vs, (size_t)(e - vs), 1, o, (size_t)(e - vs) + 1);
            if (b < 0)
                goto bad;
            q->value[q->n++] = o;
            o += b + 1;
        }
        p = amp ? amp + 1 : end;
    }
    return 0;
bad:
    pw_api_error(resp, 400, "EINVAL", "bad percent-encoding in the query string");
    query_free(q);
    return -1;
}

static const char *query_get(const query_t *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->name[i], name) == 0)
            return q->value[i];
    return NULL;
}

/* Unsigned decimal parameter: 1 when present and valid, 0 when absent, -1 when bad (resp
 * filled). */
static int query_u64(const query_t *q, const char *name, uint64_t max, uint64_t *out,
                     pw_api_resp_t *resp)
{
    const char *v = query_get(q, name);
    if (v == NULL)
        return 0;
    uint64_t x = 0;
    if (v[0] == '\0')
        goto bad;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || x > (UINT64_MAX - 9) / 10)
            goto bad;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (x > max)
        goto bad;
    *out = x;
    return 1;
bad:
    pw_api_error(resp, 400, "EINVAL", "parameter '%s' must be an integer from 0 to %" PRIu64, name,
                 max);
    return -1;
}

/* Pool word: paged|nonpaged|session -> 0..2; "both"/"all" -> 3; -1 otherwise. */
static int pool_word(const char *s)
{
    if (strcmp(s, "paged") == 0)
        return PW_POOL_PAGED;
    if (strcmp(s, "nonpaged") == 0)
        return PW_POOL_NONPAGED;
    if (strcmp(s, "session") == 0)
        return PW_POOL_SESSION;
    if (strcmp(s, "both") == 0 || strcmp(s, "all") == 0)
        return 3;
    return -1;
}

static const char *limit_source_name(int s)
{
    switch (s) {
    case PW_LIMIT_REPORTED:
        return "reported";
    case PW_LIMIT_COMPUTED:
        return "computed";
    case PW_LIMIT_REGISTRY:
        return "registry";
    case PW_LIMIT_CONFIGURED:
        return "configured";
    default:
        return "unknown";
    }
}

static const char *level_name(pw_level_t l)
{
    switch (l) {
    case PW_LEVEL_OK:
        return "ok";
    case PW_LEVEL_WARN:
        return "warn";
    case PW_LEVEL_CRITICAL:
        return "critical";
    default:
        return "unknown";
    }
}

/* Driver and description of a tag from the pooltag table (NULLs when unknown). */
static void describe(const pw_api_t *api, const uint8_t *tag, size_t len, const char **drv,
                     const char **desc)
{
    *drv = *desc = NULL;
    if (api->pooltag == NULL || len == 0 || len > 4)
        return;
    const pw_pooltag_entry_t *e = pw_pooltag_lookup(api->pooltag, tag, len, NULL);
    if (e) {
        *drv = e->binary;
        *desc = e->desc;
    }
}

/* ============================================================================================
 * Host views
 * ========================================================================================== */

typedef pw_host_row_t vrow_t;

static const pw_totals_t *host_totals(const pw_host_t *h)
{
    return pw_host_totals(h);
}

static uint64_t host_ts(const pw_host_t *h)
{
    return pw_host_ts(h);
}

static size_t host_nrows(const pw_host_t *h)
{
    return pw_host_nrows(h);
}

/* Pressure of one pool: the analysis pass's result when it ran, else computed now from the
 * host's ring (or the current totals when the ring is empty). */
static void host_pressure(const pw_api_t *api, const pw_host_t *h, int pool, pw_pressure_t *out)
{
    const pw_analysis_host_t *ah = pw_analysis_run_host(api->an, h);
    if (ah != NULL && ah->have_pressure) {
        *out = pool == PW_POOL_PAGED ? ah->pg : ah->np;
        return;
    }
    const pw_totals_t *t = host_totals(h);
    uint64_t limit = pool == PW_POOL_PAGED ? h->paged_limit_bytes : h->nonpaged_limit_bytes;
    if (limit == 0)
        limit = pool == PW_POOL_PAGED ? t->paged_limit_bytes : t->nonpaged_limit_bytes;
    size_t hist_n = pw_host_hist_n(h);
    size_t n = hist_n ? hist_n : 1;
    pw_point_t one, *pts = n > 1 ? pw_malloc(n * sizeof(*pts)) : &one;
    memset(out, 0, sizeof(*out));
    out->level = PW_LEVEL_UNKNOWN;
    out->eta_ms = -1;
    if (pts == NULL)
        return;
    if (hist_n == 0) {
        one.ts_ms = (int64_t)host_ts(h);
        one.v = (double)(pool == PW_POOL_PAGED ? t->paged_bytes : t->nonpaged_bytes);
    } else {
        for (size_t i = 0; i < n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            pts[i].ts_ms = (int64_t)p->ts_ms;
            pts[i].v = (double)(pool == PW_POOL_PAGED ? p->paged_bytes : p->nonpaged_bytes);
        }
    }
    if (pw_pressure_eval(pts, n, limit, NULL, out) != 0) {
        memset(out, 0, sizeof(*out));
        out->level = PW_LEVEL_UNKNOWN;
        out->eta_ms = -1;
    }
    if (pts != &one)
        pw_free(pts);
}

static uint32_t host_suspects(const pw_api_t *api, const pw_host_t *h)
{
    const pw_suspect_t *s;
    size_t n = pw_analysis_run_suspects(api->an, &s);
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(s[i].host, h->name) == 0;
    return k;
}

static json_t *totals_json(const pw_totals_t *t)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "paged_bytes", ju64(t->paged_bytes),
                     "nonpaged_bytes", ju64(t->nonpaged_bytes), "physical_memory_bytes",
                     ju64(t->physical_memory_bytes), "available_bytes", ju64(t->available_bytes),
                     "commit_bytes", ju64(t->commit_bytes), "commit_limit_bytes",
                     ju64(t->commit_limit_bytes), "commit_peak_bytes", ju64(t->commit_peak_bytes));
}

typedef struct hostsum_s {
    const pw_host_t *h;
    pw_pressure_t np, pg;
} hostsum_t;

static json_t *host_json(const pw_api_t *api, const hostsum_t *hs)
{
    const pw_host_t *h = hs->h;
    const pw_totals_t *t = host_totals(h);
    char os[96];
    snprintf(os, sizeof(os), "%s%s%s", h->os_family, h->os_version[0] ? " " : "", h->os_version);
    uint64_t np_limit = h->nonpaged_limit_bytes ? h->nonpaged_limit_bytes : t->nonpaged_limit_bytes;
    uint64_t pg_limit = h->paged_limit_bytes ? h->paged_limit_bytes : t->paged_limit_bytes;
    size_t hist_n = pw_host_hist_n(h);
    uint64_t last = hist_n ? pw_fleet_hist_at(h, hist_n - 1)->ts_ms : host_ts(h);
    json_t *np_eta = hs->np.eta_ms >= 0 ? ju64(last + (uint64_t)hs->np.eta_ms) : json_null();
    json_t *pg_eta = hs->pg.eta_ms >= 0 ? ju64(last + (uint64_t)hs->pg.eta_ms) : json_null();
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "name", jstr(h->name));
    json_object_set_new(o, "os", jstr(os));
    json_object_set_new(o, "os_build", json_integer(h->os_build));
    json_object_set_new(o, "arch", jstr(h->arch));
    json_object_set_new(o, "agent_version", jstr(h->agent_version));
    json_object_set_new(o, "connected", json_boolean(pw_host_connected(h)));
    json_object_set_new(o, "last_seen_ms", ju64(h->last_seen_ms));
    json_object_set_new(o, "nonpaged_bytes", ju64(t->nonpaged_bytes));
    json_object_set_new(o, "nonpaged_limit_bytes", ju64(np_limit));
    json_object_set_new(o, "nonpaged_limit_source",
                        jstr(limit_source_name(h->nonpaged_limit_source)));
    json_object_set_new(o, "nonpaged_limit_detail", jstr(h->nonpaged_limit_detail));
    json_object_set_new(o, "nonpaged_ratio",
                        json_real(np_limit ? (double)t->nonpaged_bytes / (double)np_limit : 0.0));
    json_object_set_new(o, "nonpaged_level", jstr(level_name(hs->np.level)));
    json_object_set_new(o, "nonpaged_eta_ms", np_eta);
    json_object_set_new(o, "paged_bytes", ju64(t->paged_bytes));
    json_object_set_new(o, "paged_limit_bytes", ju64(pg_limit));
    json_object_set_new(o, "paged_limit_source", jstr(limit_source_name(h->paged_limit_source)));
    json_object_set_new(o, "paged_ratio",
                        json_real(pg_limit ? (double)t->paged_bytes / (double)pg_limit : 0.0));
    json_object_set_new(o, "paged_level", jstr(level_name(hs->pg.level)));
    json_object_set_new(o, "paged_eta_ms", pg_eta);
    json_object_set_new(o, "samples", ju64(h->samples));
    json_object_set_new(o, "suspects", json_integer(host_suspects(api, h)));
    return o;
}

static void host_sum(const pw_api_t *api, const pw_host_t *h, hostsum_t *hs)
{
    hs->h = h;
    host_pressure(api, h, PW_POOL_NONPAGED, &hs->np);
    host_pressure(api, h, PW_POOL_PAGED, &hs->pg);
}

static double np_ratio(const pw_host_t *h)
{
    const pw_totals_t *t = host_totals(h);
    uint64_t l = h->nonpaged_limit_bytes ? h->nonpaged_limit_bytes : t->nonpaged_limit_bytes;
    return l ? (double)t->nonpaged_bytes / (double)l : 0.0;
}

static int cmp_hostsum(const void *a, const void *b)
{
    const hostsum_t *x = a, *y = b;
    double rx = np_ratio(x->h), ry = np_ratio(y->h);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return strcmp(x->h->name, y->h->name);
}

static pw_host_t *find_host(pw_api_t *api, const char *name, pw_api_resp_t *resp)
{
    pw_host_t *h = pw_fleet_find(pw_ingest_fleet(api->ing), name);
    if (h == NULL)
        pw_api_error(resp, 404, "ENOENT", "unknown host '%s'", name);
    return h;
}

/* ============================================================================================
 * Handlers
 * ========================================================================================== */

static int h_hosts(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    const pw_fleet_t *f = pw_ingest_fleet(api->ing);
    hostsum_t *hs = pw_calloc(f->n ? f->n : 1, sizeof(*hs));
    if (hs == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    for (size_t i = 0; i < f->n; i++)
        host_sum(api, f->hosts[i], &hs[i]);
    if (f->n > 1)
        qsort(hs, f->n, sizeof(*hs), cmp_hostsum);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < f->n; i++)
        json_array_append_new(arr, host_json(api, &hs[i]));
    pw_free(hs);
    return send_json(resp, 200, arr ? json_pack("{s:o}", "hosts", arr) : NULL);
}

static int h_host(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    pw_host_t *h = find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    hostsum_t hs;
    host_sum(api, h, &hs);
    json_t *o = host_json(api, &hs);
    if (o == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    json_object_set_new(o, "totals", totals_json(host_totals(h)));
    json_t *hist = json_array();
    for (size_t i = 0; hist && i < pw_host_hist_n(h); i++) {
        const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
        json_array_append_new(hist, json_pack("{s:o,s:o,s:o}", "ts_ms", ju64(p->ts_ms),
                                              "nonpaged_bytes", ju64(p->nonpaged_bytes),
                                              "paged_bytes", ju64(p->paged_bytes)));
    }
    json_object_set_new(o, "history", hist);
    return send_json(resp, 200, o);
}

/* Sort of the pool table. The order is total: the column (or the tag), then the tag bytes,
 * then the pool type, then the position in the host's table. Each row that passes the
 * filters becomes an item whose two integer keys decide almost every comparison, so sorting
 * and top-k selection rarely look at the rows themselves. */
enum { SORT_TAG, SORT_ALLOCS, SORT_FREES, SORT_DIFF, SORT_BYTES, SORT_PER_ALLOC };

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
static uint64_t vrow_column(const vrow_t *v, int sort, int by_change)
{
    if (by_change && sort != SORT_PER_ALLOC) {
        int64_t c = sort == SORT_ALLOCS  ? v->ch_allocs
                    : sort == SORT_FREES ? v->ch_frees
                    : sort == SORT_DIFF  ? v->ch_diff
                                         : v->ch_bytes;
        return (uint64_t)c ^ (1ull << 63); /* signed order as unsigned */
    }
    return sort == SORT_ALLOCS  ? v->allocs
           : sort == SORT_FREES ? v->frees
           : sort == SORT_DIFF  ? v->diff
           : sort == SORT_BYTES ? v->bytes
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
    char tt[TAG_TEXT_MAX];
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

/* The JSON object of one pool-table row. */
static json_t *pool_row_json(const pw_api_t *api, const vrow_t *r)
{
    char tt[TAG_TEXT_MAX];
    const char *drv, *desc_s;
    describe(api, r->tag, r->tag_len, &drv, &desc_s);
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new_nocheck(o, "tag", json_string_nocheck(tag_text(r->tag, r->tag_len, tt)));
    json_object_set_new_nocheck(o, "type", json_string_nocheck(pw_pool_name(r->pool)));
    json_object_set_new_nocheck(o, "allocs", ju64(r->allocs));
    json_object_set_new_nocheck(o, "frees", ju64(r->frees));
    json_object_set_new_nocheck(o, "diff", ju64(r->diff));
    json_object_set_new_nocheck(o, "bytes", ju64(r->bytes));
    json_object_set_new_nocheck(o, "per_alloc", ju64(r->per_alloc));
    json_object_set_new_nocheck(o, "allocs_change", json_integer(r->ch_allocs));
    json_object_set_new_nocheck(o, "frees_change", json_integer(r->ch_frees));
    json_object_set_new_nocheck(o, "diff_change", json_integer(r->ch_diff));
    json_object_set_new_nocheck(o, "bytes_change", json_integer(r->ch_bytes));
    json_object_set_new_nocheck(o, "driver", jstr_or_null(drv));
    json_object_set_new_nocheck(o, "description", jstr_or_null(desc_s));
    return o;
}

static int h_pool(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    query_t q;
    if (query_parse(req->query, &q, resp) != 0)
        return resp->status;
    int sort = SORT_BYTES, desc = -1, pool = 3;
    uint64_t by_change = 0, limit = UINT64_MAX;
    const char *v;
    static const char *const sorts[] = {"tag", "allocs", "frees", "diff", "bytes", "per_alloc"};
    if ((v = query_get(&q, "sort")) != NULL) {
        sort = -1;
        for (int i = 0; i < 6; i++)
            if (strcmp(v, sorts[i]) == 0)
                sort = i;
        if (sort < 0) {
            query_free(&q);
            return pw_api_error(resp, 400, "EINVAL",
                                "sort must be tag, allocs, frees, diff, bytes or per_alloc");
        }
    }
    if ((v = query_get(&q, "order")) != NULL) {
        if (strcmp(v, "desc") == 0)
            desc = 1;
        else if (strcmp(v, "asc") == 0)
            desc = 0;
        else {
            query_free(&q);
            return pw_api_error(resp, 400, "EINVAL", "order must be asc or desc");
        }
    }
    if ((v = query_get(&q, "pool")) != NULL && (pool = pool_word(v)) < 0) {
        query_free(&q);
        return pw_api_error(resp, 400, "EINVAL", "pool must be paged, nonpaged, session or both");
    }
    if (query_u64(&q, "by_change", 1, &by_change, resp) < 0 ||
        query_u64(&q, "limit", UINT32_MAX, &limit, resp) < 0) {
        query_free(&q);
        return resp->status;
    }
    if (desc < 0)
        desc = sort != SORT_TAG; /* poolmon: tags ascending, numbers largest first */
    pw_tagpat_list_t inc, exc;
    int r = pw_tagpat_list_init(&inc, query_get(&q, "include"));
    if (r == 0)
        r = pw_tagpat_list_init(&exc, query_get(&q, "exclude"));
    else
        memset(&exc, 0, sizeof(exc));
    size_t n = host_nrows(h), m = 0;
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
        query_free(&q);
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
        vrow_t row;
        if (need_change)
            pw_host_row(h, i, &row);
        else
            pw_host_row_plain(h, i, &row);
        if (pool != 3 && row.pool != pool)
            continue;
        if (filter) {
            if (row.tag != last_tag) {
                last_tag = row.tag;
                last_ok = tag_passes(row.tag, row.tag_len, &inc, &exc);
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
    for (size_t i = 0; arr && i < out_n; i++) {
        vrow_t row;
        pw_host_row(h, g_items[i].i, &row);
        json_t *o = pool_row_json(api, &row);
        if (o == NULL)
            break;
        json_array_append_new(arr, o);
    }
    query_free(&q);
    if (g_items_cap > POOL_ITEMS_KEEP) { /* an unusually large table: do not hold on to it */
        pw_free(g_items);
        g_items = NULL;
        g_items_cap = 0;
    }
    json_t *prev_ts = pw_host_prev_ts(h) ? ju64(pw_host_prev_ts(h)) : json_null();
    json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host", jstr(h->name),
                          "timestamp_ms", ju64(host_ts(h)), "prev_timestamp_ms", prev_ts, "totals",
                          totals_json(host_totals(h)), "rows", arr, "count",
                          json_integer((json_int_t)out_n), "total_rows",
                          json_integer((json_int_t)m), "table_rows", json_integer((json_int_t)n));
    /* A row is about 220 bytes of JSON: one allocation instead of a doubling series (a hint;
     * send_json grows the body as needed). */
    (void)pw_buf_reserve(&resp->body, 512 + (out_n < 4096 ? out_n : 4096) * 256);
    return send_json(resp, 200, o);
}

static int h_series(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    query_t q;
    if (query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint8_t tag[PW_TAG_MAX];
    const char *ts = query_get(&q, "tag"), *ps = query_get(&q, "pool");
    int tl = ts ? tag_parse(ts, tag) : -1;
    int pool = ps ? pool_word(ps) : PW_POOL_NONPAGED;
    uint64_t from = 0, to = req->now_ms, step = 0;
    int r = 0;
    if (tl < 0)
        r = pw_api_error(resp, 400, "EINVAL", "tag is required: 1..64 bytes in printable form");
    else if (pool < 0 || pool > 2)
        r = pw_api_error(resp, 400, "EINVAL", "pool must be paged, nonpaged or session");
    else if (query_u64(&q, "from", INT64_MAX, &from, resp) < 0 ||
             query_u64(&q, "to", INT64_MAX, &to, resp) < 0 ||
             query_u64(&q, "step", INT64_MAX, &step, resp) < 0)
        r = resp->status;
    else if (from > to)
        r = pw_api_error(resp, 400, "EINVAL", "from is after to");
    if (r) {
        query_free(&q);
        return r;
    }
    pw_store_series_t s;
    memset(&s, 0, sizeof(s));
    pw_diag_t d;
    pw_diag_clear(&d);
    int64_t n = pw_store_series(pw_ingest_store(api->ing), h->name, tag, (size_t)tl,
                                (pw_pool_t)pool, from, to, step, &s, &d);
    /* poolmon pads tags to 4 characters ("Io  "): a shorter one that finds nothing is tried
     * padded, as `top`'s patterns match it. */
    if (n == 0 && tl < 4) {
        memset(tag + tl, ' ', (size_t)(4 - tl));
        pw_store_series_free(&s);
        memset(&s, 0, sizeof(s));
        int64_t n4 = pw_store_series(pw_ingest_store(api->ing), h->name, tag, 4, (pw_pool_t)pool,
                                     from, to, step, &s, &d);
        if (n4 > 0)
            n = n4, tl = 4;
        else if (n4 == 0)
            n = 0;
        else
            n = n4;
    }
    if (n < 0) {
        query_free(&q);
        pw_store_series_free(&s);
        return pw_api_error(resp, n == PW_EINVAL ? 400 : 500, pw_err_name((int)n), "series: %s",
                            d.msg[0] ? d.msg : pw_strerror((int)n));
    }
    json_t *pts = json_array();
    for (int64_t i = 0; pts && i < n; i++) {
        const pw_store_point_t *p = &s.points[i];
        json_array_append_new(
            pts, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i}", "ts_ms", ju64(p->ts_ms), "bytes",
                           ju64(p->bytes), "diff", ju64(p->diff), "allocs", ju64(p->allocs),
                           "frees", ju64(p->frees), "bytes_min", ju64(p->bytes_min), "bytes_max",
                           ju64(p->bytes_max), "samples", (int)p->samples));
    }
    static const char *const lv[] = {"raw", "1m", "15m"};
    char tt[TAG_TEXT_MAX];
    json_t *o = json_pack("{s:o,s:s,s:s,s:s,s:o}", "host", jstr(h->name), "tag",
                          tag_text(tag, (size_t)tl, tt), "pool", pw_pool_name(pool), "level",
                          lv[s.level <= PW_STORE_15MIN ? s.level : 0], "points", pts);
    pw_store_series_free(&s);
    query_free(&q);
    return send_json(resp, 200, o);
}

/* ---- fleet tag aggregates ---------------------------------------------------------------- */

typedef struct agg_s {
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len, pool;
    uint32_t hosts;
    uint64_t total, min, max;
    size_t off; /* the aggregate in the fleet index (PW_ROW_KEY(global tag id, pool)) */
    uint32_t top_n;
    uint32_t top_host[TOP_HOSTS];
    uint64_t top_bytes[TOP_HOSTS];
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

static int cmp_agg_total(const void *a, const void *b)
{
    const agg_t *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->hosts != y->hosts)
        return x->hosts > y->hosts ? -1 : 1;
    size_t n = x->tag_len < y->tag_len ? x->tag_len : y->tag_len;
    int c = memcmp(x->tag, y->tag, n);
    if (c == 0)
        c = (int)x->tag_len - (int)y->tag_len;
    return c ? c : (int)x->pool - (int)y->pool;
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
        if (n == TOP_HOSTS &&
            (b < a->top_bytes[n - 1] || (b == a->top_bytes[n - 1] && host > a->top_host[n - 1])))
            continue;
        uint32_t j = n < TOP_HOSTS ? n : TOP_HOSTS - 1;
        while (j > 0 && (a->top_bytes[j - 1] < b ||
                         (a->top_bytes[j - 1] == b && a->top_host[j - 1] > host))) {
            a->top_bytes[j] = a->top_bytes[j - 1];
            a->top_host[j] = a->top_host[j - 1];
            j--;
        }
        a->top_bytes[j] = b;
        a->top_host[j] = host;
        if (n < TOP_HOSTS)
            a->top_n++;
    }
    char tt[TAG_TEXT_MAX];
    const char *drv, *desc;
    describe(api, a->tag, a->tag_len, &drv, &desc);
    json_t *top = json_array();
    for (uint32_t i = 0; top && i < a->top_n; i++)
        json_array_append_new(top,
                              json_pack("{s:o,s:o}", "host", jstr(f->hosts[a->top_host[i]]->name),
                                        "bytes", ju64(a->top_bytes[i])));
    double p50 = pw_stats_quantile7(vals, a->hosts, 0.5);
    double p90 = pw_stats_quantile7(vals, a->hosts, 0.9);
    pw_free(vals);
    return json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tag",
                     tag_text(a->tag, a->tag_len, tt), "type", pw_pool_name(a->pool), "hosts",
                     (int)a->hosts, "bytes_total", ju64(a->total), "bytes_min", ju64(a->min),
                     "bytes_p50", json_real(p50), "bytes_p90", json_real(p90), "bytes_max",
                     ju64(a->max), "top_hosts", top, "driver", jstr_or_null(drv), "description",
                     jstr_or_null(desc));
}

static int h_tags(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)params;
    query_t q;
    if (query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t limit = UINT64_MAX;
    int pool = 3;
    const char *ty = query_get(&q, "type");
    if (ty && (pool = pool_word(ty)) < 0) {
        query_free(&q);
        return pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    }
    if (query_u64(&q, "limit", UINT32_MAX, &limit, resp) < 0) {
        query_free(&q);
        return resp->status;
    }
    query_free(&q);
    aggset_t s;
    memset(&s, 0, sizeof(s));
    const pw_fleet_agg_t *ix = NULL;
    if (fleet_aggregate(api, pool, NULL, 0, &s, &ix) != 0) {
        aggset_free(&s);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (s.n > 1)
        qsort(s.v, s.n, sizeof(*s.v), cmp_agg_total);
    size_t n = s.n < limit ? s.n : (size_t)limit;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, agg_json(api, &s.v[i], ix));
    aggset_free(&s);
    return send_json(resp, 200, arr ? json_pack("{s:o}", "tags", arr) : NULL);
}

static json_t *suspect_json(pw_api_t *api, const pw_suspect_t *s)
{
    char tt[TAG_TEXT_MAX];
    const char *drv, *desc;
    describe(api, s->tag, s->tag_len, &drv, &desc);
    const pw_leak_t *l = &s->leak;
    json_t *o = json_pack(
        "{s:o,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host", jstr(s->host),
        "tag", tag_text(s->tag, s->tag_len, tt), "type", pw_pool_name(s->pool), "score",
        jreal(l->score), "growth_bytes_per_h", jreal(l->rate_bytes_per_h), "share_of_host_growth",
        l->share < 0 ? json_null() : jreal(l->share), "first_bytes", ju64(l->first_bytes),
        "current_bytes", ju64(l->last_bytes), "growth_ratio", jreal(l->growth_ratio), "window_ms",
        json_integer(l->span_ms), "mk_z", jreal(l->mk_z), "consistency", jreal(l->consistency),
        "driver", jstr_or_null(drv), "description", jstr_or_null(desc), "found_ms",
        ju64(s->found_ms));
    /* How it was judged (added fields; the ones above keep their meaning): a trend test over
     * a window, or a comparison of a few screens with the deltas it rests on. */
    if (o == NULL)
        return NULL;
    int cmp = s->method == PW_LEAK_METHOD_COMPARE;
    json_object_set_new(o, "method", json_string(cmp ? "compare" : "trend"));
    pw_leak_opts_t lo;
    pw_leak_opts_default(&lo);
    json_object_set_new(o, "points",
                        json_integer((json_int_t)(cmp ? s->cmp.screens : l->n_window)));
    json_object_set_new(o, "trend_min_points", json_integer((json_int_t)lo.min_points));
    json_object_set_new(
        o, "screen_delta",
        cmp ? json_pack("{s:I,s:I,s:I,s:I,s:o}", "allocs", (json_int_t)s->cmp.d_allocs, "frees",
                        (json_int_t)s->cmp.d_frees, "diff", (json_int_t)s->cmp.d_diff, "bytes",
                        (json_int_t)s->cmp.d_bytes, "per_alloc_bytes", jreal(s->cmp.per_alloc))
            : json_null());
    return o;
}

static int h_tag(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    uint8_t tag[PW_TAG_MAX];
    int tl = tag_parse(params[0], tag);
    if (tl < 0)
        return pw_api_error(resp, 400, "EINVAL", "bad tag: 1..64 bytes in printable form");
    query_t q;
    if (query_parse(req->query, &q, resp) != 0)
        return resp->status;
    int pool = 3;
    const char *ty = query_get(&q, "type");
    if (ty && (pool = pool_word(ty)) < 0) {
        query_free(&q);
        return pw_api_error(resp, 400, "EINVAL", "type must be paged, nonpaged or session");
    }
    query_free(&q);
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
    vrow_t *rr = pw_malloc(cap * sizeof(*rr));
    if (!v || !z || !grp || !out || !hh || !rr) {
        pw_free(v), pw_free(z), pw_free(grp), pw_free(out), pw_free(hh), pw_free(rr);
        json_decref(o);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    for (size_t i = 0; i < f->n; i++) {
        const pw_host_t *h = f->hosts[i];
        size_t n = host_nrows(h);
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
        json_array_append_new(hosts, json_pack("{s:o,s:s,s:o,s:o,s:o,s:b,s:i}", "host",
                                               jstr(hh[i]->name), "type", pw_pool_name(rr[i].pool),
                                               "bytes", ju64(rr[i].bytes), "diff", ju64(rr[i].diff),
                                               "robust_z", jreal(z[i]), "outlier", (int)out[i],
                                               "os_build", (int)hh[i]->os_build));
    pw_free(v), pw_free(z), pw_free(grp), pw_free(out), pw_free(hh), pw_free(rr);
    json_object_set_new(o, "hosts", hosts);
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    json_t *sus = json_array();
    for (size_t i = 0; sus && i < ns; i++)
        if (sp[i].tag_len == tl && memcmp(sp[i].tag, tag, (size_t)tl) == 0 &&
            (pool == 3 || sp[i].pool == pool))
            json_array_append_new(sus, suspect_json(api, &sp[i]));
    json_object_set_new(o, "suspects", sus);
    return send_json(resp, 200, o);
}

static int h_leaks(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ns; i++)
        json_array_append_new(arr, suspect_json(api, &sp[i]));
    return send_json(resp, 200, arr ? json_pack("{s:o}", "suspects", arr) : NULL);
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

static int h_alerts(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
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
        char name[32], summary[512];
        if (k->tag[0] == '\0') {
            snprintf(name, sizeof(name), "%s",
                     strcmp(k->pool, "paged") == 0 ? "PagedPoolPressure" : "NonpagedPoolPressure");
            snprintf(summary, sizeof(summary), "%s: %s pool at %.1f%% of its limit", k->host,
                     k->pool, t->value * 100.0);
        } else {
            snprintf(name, sizeof(name), "PoolTagLeak");
            snprintf(summary, sizeof(summary), "%s: tag '%s' (%s) is growing steadily", k->host,
                     k->tag, k->pool);
        }
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:s,s:{s:o,s:o,s:s,s:s},s:o,s:o,s:o}", "name", name, "state",
                           pw_alert_state_name(t->to), "severity", k->severity, "labels", "host",
                           jstr(k->host), "tag", jstr(k->tag), "pool", k->pool, "severity",
                           k->severity, "since_ms", json_integer(t->active_since_ms), "value",
                           jreal(t->value), "summary", jstr(summary)));
    }
    pw_free(a.v);
    return send_json(resp, 200, arr ? json_pack("{s:o}", "alerts", arr) : NULL);
}

static int h_pooltag(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    uint8_t tag[PW_TAG_MAX];
    int tl = tag_parse(params[0], tag);
    if (tl < 0)
        return pw_api_error(resp, 400, "EINVAL", "bad tag: 1..64 bytes in printable form");
    const char *drv, *desc;
    describe(api, tag, (size_t)tl, &drv, &desc);
    char tt[TAG_TEXT_MAX];
    int known = drv != NULL || desc != NULL;
    return send_json(resp, 200,
                     json_pack("{s:s,s:o,s:o,s:b}", "tag", tag_text(tag, (size_t)tl, tt), "driver",
                               jstr_or_null(drv), "description", jstr_or_null(desc), "known",
                               known));
}

void pw_api_command_result(pw_api_resp_t *resp, const Poolwatch__V1__CommandResult *res)
{
    json_t *m = json_array();
    for (size_t i = 0; m && i < res->n_matches; i++) {
        const Poolwatch__V1__DriverMatch *d = res->matches[i];
        json_array_append_new(m, json_pack("{s:o,s:o,s:o}", "file", jstr(d->file), "size_bytes",
                                           ju64(d->size_bytes), "file_version",
                                           jstr(d->file_version)));
    }
    send_json(resp, 200,
              json_pack("{s:i,s:o,s:o}", "status", (int)res->status, "message", jstr(res->message),
                        "matches", m));
}

static int h_command(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    json_error_t je;
    json_t *b = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (b == NULL || !json_is_object(b)) {
        json_decref(b);
        /* jansson names its own flag for a \u0000 in a string: say it in the API's words. */
        const char *why = b                                           ? "not an object"
                          : strstr(je.text, "JSON_ALLOW_NUL") != NULL ? "\\u0000 in a string"
                                                                      : je.text;
        return pw_api_error(resp, 400, "EINVAL", "body is not a JSON object: %s (line %d)", why,
                            je.line);
    }
    Poolwatch__V1__Command cmd = POOLWATCH__V1__COMMAND__INIT;
    const char *kind = json_string_value(json_object_get(b, "kind"));
    json_t *dur = json_object_get(b, "duration_ms"), *iv = json_object_get(b, "interval_ms");
    uint8_t tag[PW_TAG_MAX];
    int r = 0;
    if (kind == NULL) {
        r = pw_api_error(resp, 400, "EINVAL", "'kind' is required");
    } else if (strcmp(kind, "live") == 0) {
        json_int_t d = dur ? json_integer_value(dur) : 600000;
        if ((dur && !json_is_integer(dur)) || d < 1000 || d > 600000)
            r = pw_api_error(resp, 400, "EINVAL", "duration_ms must be 1000..600000");
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_LIVE_MODE;
        cmd.duration_ms = (uint32_t)d;
    } else if (strcmp(kind, "keyframe") == 0) {
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_KEYFRAME;
    } else if (strcmp(kind, "interval") == 0) {
        json_int_t i = json_integer_value(iv);
        if (!json_is_integer(iv) || i < 1000 || i > 86400000)
            r = pw_api_error(resp, 400, "EINVAL", "interval_ms must be 1000..86400000");
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_SET_INTERVAL;
        cmd.interval_ms = (uint32_t)i;
    } else if (strcmp(kind, "find_tag") == 0) {
        const char *t = json_string_value(json_object_get(b, "tag"));
        int tl = t ? tag_parse(t, tag) : -1;
        if (tl < 0)
            r = pw_api_error(resp, 400, "EINVAL", "tag must be 1..64 bytes in printable form");
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_FIND_TAG;
        cmd.tag.data = tag;
        cmd.tag.len = tl > 0 ? (size_t)tl : 0;
    } else if (strcmp(kind, "status") == 0) {
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_STATUS;
    } else {
        r = pw_api_error(resp, 400, "EINVAL",
                         "kind must be live, keyframe, interval, find_tag or status");
    }
    json_decref(b);
    if (r)
        return r;
    cmd.id = ++api->next_cmd_id;
    if (!pw_host_connected(h) || api->agents.send_command == NULL ||
        api->agents.send_command(api->agents.arg, h, &cmd) != 0)
        return pw_api_error(resp, 503, "ECLOSED", "host '%s' is not connected", h->name);
    resp->pending = 1;
    resp->cmd_id = cmd.id;
    snprintf(resp->cmd_host, sizeof(resp->cmd_host), "%s", h->name);
    resp->status = 200;
    return 200;
}

static int h_import(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)params;
    query_t q;
    if (query_parse(req->query, &q, resp) != 0)
        return resp->status;
    const char *host = query_get(&q, "host");
    uint64_t interval = PW_POOLMON_INTERVAL_DEFAULT_MS, start = req->now_ms;
    int r = 0;
    size_t hl = host ? strlen(host) : 0;
    if (hl == 0 || hl > 255)
        r = pw_api_error(resp, 400, "EINVAL", "host is required (1..255 bytes)");
    else if (query_u64(&q, "interval_ms", 366ull * 86400000, &interval, resp) < 0 ||
             query_u64(&q, "start_ms", INT64_MAX, &start, resp) < 0)
        r = resp->status;
    /* A host name as agents have them (DNS, NetBIOS): an import cannot be renamed or deleted
     * afterwards, so a path or a typo with odd bytes is refused here. */
    for (size_t i = 0; r == 0 && i < hl; i++)
        if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
              (host[i] >= '0' && host[i] <= '9') || host[i] == '.' || host[i] == '-' ||
              host[i] == '_') ||
            (i == 0 && (host[i] == '.' || host[i] == '-')))
            r = pw_api_error(resp, 400, "EINVAL",
                             "host must be a host name (letters, digits, '.', '-', '_'; not "
                             "starting with '.' or '-'): byte %zu of '%.64s'",
                             i + 1, host);
    if (r) {
        query_free(&q);
        return r;
    }
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_ingest_import_check(api->ing, host, &d) != 0) {
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        query_free(&q); /* `host` points into q */
        return r;
    }
    pw_poolmon_opts_t po;
    memset(&po, 0, sizeof(po));
    po.max_input_bytes = PW_API_MAX_IMPORT_BYTES;
    po.allow_cut_last_line = 1; /* said in the answer (cut_line), not a reason to lose the rest */
    po.start_ms = start;
    po.interval_ms = interval ? interval : PW_POOLMON_INTERVAL_DEFAULT_MS;
    pw_poolmon_doc_t doc;
    r = pw_poolmon_parse((const char *)req->body, req->body_len, &po, &doc, &d);
    if (r != 0) {
        query_free(&q);
        return pw_api_error(resp,
                            r == PW_ENOMEM    ? 500
                            : r == PW_ETOOBIG ? 413
                                              : 400,
                            pw_err_name(r), "not a poolmon capture: line %u: %s", d.line, d.msg);
    }
    /* Screens stamped in the future (a --start or file time stamps off by years) would sit
     * ahead of every live host and poison what reads the fleet by time (remote write, the
     * store's windows): a day of slack covers time zones. */
    uint64_t end = doc.n_screens ? doc.screens[doc.n_screens - 1].timestamp_ms : 0;
    if (end > req->now_ms + 86400000ull) {
        pw_poolmon_doc_close(&doc);
        query_free(&q);
        return pw_api_error(resp, 400, "EINVAL",
                            "the capture's last screen would be stored at %llu ms since the epoch, "
                            "more than a day ahead of this collector's clock: check start_ms "
                            "(CLI --start) or the file's time stamps",
                            (unsigned long long)end);
    }
    /* Counters are 32-bit unless a value says otherwise (a 64-bit build's capture). */
    unsigned width = 32;
    for (size_t i = 0; i < doc.n_screens; i++)
        for (size_t j = 0; j < doc.screens[i].n_rows; j++)
            if (doc.screens[i].rows[j].allocs > UINT32_MAX ||
                doc.screens[i].rows[j].frees > UINT32_MAX ||
                doc.screens[i].rows[j].diff > UINT32_MAX)
                width = 64;
    uint64_t first = doc.n_screens ? doc.screens[0].timestamp_ms : 0;
    /* The instance is the capture's content: importing the same file again stores nothing
     * twice (same agent, boot and seqs), whatever times the screens were given. */
    char boot_id[40];
    uint64_t fnv = 1469598103934665603ull;
    for (size_t i = 0; i < req->body_len; i++)
        fnv = (fnv ^ req->body[i]) * 1099511628211ull;
    snprintf(boot_id, sizeof(boot_id), "import:%016" PRIx64, fnv);
    pw_sample_t *ss = pw_calloc(doc.n_screens ? doc.n_screens : 1, sizeof(*ss));
    if (ss == NULL)
        r = PW_ENOMEM;
    for (size_t i = 0; ss && i < doc.n_screens; i++)
        pw_sample_init(&ss[i]);
    for (size_t i = 0; ss && r == 0 && i < doc.n_screens; i++)
        r = pw_poolmon_screen_to_sample(&doc.screens[i], &ss[i]);
    pw_ingest_import_res_t ir;
    memset(&ir, 0, sizeof(ir));
    ir.last_ts = first;
    if (r == 0)
        r = pw_ingest_import(api->ing, host, width, boot_id, ss, doc.n_screens, &ir, &d);
    else
        pw_diag_set(&d, r, 0, 0, "import", "%s", pw_strerror(r));
    for (size_t i = 0; ss && i < doc.n_screens; i++)
        pw_sample_close(&ss[i]);
    pw_free(ss);
    if (r == PW_EEXIST) {
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        pw_poolmon_doc_close(&doc);
        query_free(&q); /* `host` points into q */
        return r;
    }
    if (r < 0) {
        pw_poolmon_doc_close(&doc);
        query_free(&q);
        return pw_api_error(resp, r == PW_EINVAL ? 400 : 500, pw_err_name(r), "import: %s",
                            d.msg[0] ? d.msg : pw_strerror(r));
    }
    uint64_t rows = ir.rows, last = ir.screens ? ir.last_ts : first;
    json_t *o =
        json_pack("{s:o,s:i,s:o,s:o,s:o,s:o}", "host", jstr(host), "screens", (int)doc.n_screens,
                  "rows", ju64(rows), "first_ts_ms", ju64(first), "last_ts_ms", ju64(last),
                  "cut_line", doc.cut_line ? json_integer(doc.cut_line) : json_null());
    pw_poolmon_doc_close(&doc);
    query_free(&q);
    return send_json(resp, 200, o);
}

static int h_openapi(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)api;
    (void)req;
    (void)params;
    pw_buf_reset(&resp->body);
    if (pw_buf_append(&resp->body, pw_openapi_json, pw_openapi_json_len) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "application/json";
    return 200;
}

static int h_metrics(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    pw_buf_reset(&resp->body);
    if (pw_api_metrics(api, &resp->body) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}

/* ============================================================================================
 * Router
 * ========================================================================================== */

static const pw_api_route_t routes[] = {
    {HTTP_GET, "/api/v1/hosts", PW_ROLE_READ, h_hosts},
    {HTTP_GET, "/api/v1/hosts/{host}", PW_ROLE_READ, h_host},
    {HTTP_GET, "/api/v1/hosts/{host}/pool", PW_ROLE_READ, h_pool},
    {HTTP_GET, "/api/v1/hosts/{host}/series", PW_ROLE_READ, h_series},
    {HTTP_POST, "/api/v1/hosts/{host}/commands", PW_ROLE_ADMIN, h_command},
    {HTTP_GET, "/api/v1/tags", PW_ROLE_READ, h_tags},
    {HTTP_GET, "/api/v1/tags/{tag}", PW_ROLE_READ, h_tag},
    {HTTP_GET, "/api/v1/leaks", PW_ROLE_READ, h_leaks},
    {HTTP_GET, "/api/v1/alerts", PW_ROLE_READ, h_alerts},
    {HTTP_GET, "/api/v1/pooltag/{tag}", PW_ROLE_READ, h_pooltag},
    {HTTP_POST, "/api/v1/import", PW_ROLE_ADMIN, h_import},
    {HTTP_GET, "/api/v1/openapi.json", PW_ROLE_READ, h_openapi},
    {HTTP_GET, "/metrics", PW_ROLE_READ, h_metrics},
};

const pw_api_route_t *pw_api_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

/* Matches `path` against `pattern`; on a match the {name} segments are percent-decoded into
 * params (owned by the caller, one allocation in params[0]'s block). Returns 1 match, 0 no
 * match, -1 bad percent-encoding. */
static int route_match(const char *pattern, const char *path, char **params, char *mem,
                       size_t mem_size)
{
    const char *p = pattern, *s = path;
    size_t np = 0, used = 0;
    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return 0;
        p++;
        s++;
        const char *pe = strchr(p, '/'), *se = strchr(s, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p), sl = se ? (size_t)(se - s) : strlen(s);
        if (pl >= 2 && p[0] == '{') {
            if (sl == 0 || np == MAX_PARAMS)
                return 0;
            ssize_t n = pct_decode(s, sl, 0, mem + used, mem_size - used);
            if (n < 0)
                return -1;
            if (n == 0)
                return 0;
            params[np++] = mem + used;
            used += (size_t)n + 1;
        } else if (pl != sl || memcmp(p, s, pl) != 0) {
            return 0;
        }
        p += pl;
        s += sl;
    }
    return *p == '\0' && *s == '\0';
}

/* The bearer token of an Authorization header value, or NULL. */
static const char *bearer(const char *auth, size_t *len)
{
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        n--;
    *len = n;
    return n ? t : NULL;
}

int pw_api_handle(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    char *params[MAX_PARAMS] = {0};
    size_t plen = strlen(req->path);
    char *mem = pw_malloc(plen + MAX_PARAMS + 1);
    if (mem == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    const pw_api_route_t *hit = NULL;
    int path_known = 0, r;
    for (size_t i = 0; i < plen; i++)
        if (req->path[i] == '%' && (i + 2 >= plen || hexval((unsigned char)req->path[i + 1]) < 0 ||
                                    hexval((unsigned char)req->path[i + 2]) < 0)) {
            pw_free(mem);
            return pw_api_error(resp, 400, "EINVAL", "bad percent-encoding in the path");
        }
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        int m = route_match(routes[i].pattern, req->path, params, mem, plen + MAX_PARAMS + 1);
        if (m < 0) {
            pw_free(mem);
            return pw_api_error(resp, 400, "EINVAL", "bad percent-encoding in the path");
        }
        if (m == 0)
            continue;
        path_known = 1;
        if (routes[i].method == req->method) {
            hit = &routes[i];
            break;
        }
    }
    if (hit == NULL) {
        pw_free(mem);
        if (path_known)
            return pw_api_error(resp, 405, "EINVAL", "method %s not allowed here",
                                http_method_str((enum http_method)req->method));
        return pw_api_error(resp, 404, "ENOENT", "no such endpoint");
    }
    size_t tl = 0;
    const char *tok = bearer(req->auth, &tl);
    pw_role_t role = tok ? pw_tokens_check(api->tokens, tok, tl, NULL) : PW_ROLE_NONE;
    if (role == PW_ROLE_NONE) {
        pw_free(mem);
        api->stats.unauthorized++;
        return pw_api_error(resp, 401, "EACCES", "a valid bearer token is required");
    }
    if (role < hit->role) {
        pw_free(mem);
        api->stats.forbidden++;
        return pw_api_error(resp, 403, "EACCES", "this endpoint needs the %s role",
                            pw_role_name(hit->role));
    }
    r = hit->handler(api, req, params, resp);
    pw_free(mem);
    return r;
}
