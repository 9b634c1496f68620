/* api_util.c: what the API's handlers share: responses and JSON, percent-decoding, tags,
 * query strings, names of enums, tag descriptions, host lookup and pressure. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "series.h"
#include <openssl/crypto.h>

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
json_t *pw__api_jstr(const char *s)
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
json_t *pw__api_jstr_or_null(const char *s)
{
    return (s == NULL || s[0] == '\0') ? json_null() : pw__api_jstr(s);
}

json_t *pw__api_ju64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* A finite real, or null (NaN, infinities). */
json_t *pw__api_jreal(double v)
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

int pw__api_append_json(pw_buf_t *b, json_t *j)
{
    if (j == NULL)
        return PW_ENOMEM;
    int r = json_dump_callback(j, dump_to_buf, b, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(j);
    return r == 0 ? 0 : PW_ENOMEM;
}

/* Serialises j (stolen) into resp with status. */
int pw__api_send_json(pw_api_resp_t *resp, int status, json_t *j)
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
    json_t *e = json_pack("{s:{s:s,s:o}}", "error", "code", code, "message", pw__api_jstr(msg));
    pw_buf_reset(&resp->body);
    resp->status = status;
    resp->content_type = "application/json";
    if (e == NULL) {
        /* with its NUL, not counted (as below) */
        static const char oom[] = "{\"error\":{\"code\":\"ENOMEM\",\"message\":\"out of memory\"}}";
        if (pw_buf_append(&resp->body, oom, sizeof(oom)) == 0)
            resp->body.len--;
        return status;
    }
    size_t n = json_dumpb(e, NULL, 0, JSON_COMPACT);
    if (pw_buf_reserve(&resp->body, n + 1) == 0) {
        json_dumpb(e, (char *)resp->body.data, n, JSON_COMPACT);
        resp->body.data[n] = '\0'; /* a C string to its readers (api.h), not sent */
        resp->body.len = n;
    }
    json_decref(e);
    return status;
}

int pw__api_hexval(int ch)
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
ssize_t pw__api_pct_decode(const char *s, size_t n, int plus, char *out, size_t out_size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = pw__api_hexval((unsigned char)s[i + 1]),
                lo = pw__api_hexval((unsigned char)s[i + 2]);
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
const char *pw__api_tag_text(const uint8_t *tag, size_t len, char out[PW_API_TAG_TEXT_MAX])
{
    pw_tag_format(tag, len, out, PW_API_TAG_TEXT_MAX);
    return out;
}

/* The printable form back into bytes (pw_tag_parse: "0x..." for binary tags, "\\" and
 * "\xNN" escapes). Returns the length (1..PW_TAG_MAX) or -1. */
int pw__api_tag_parse(const char *s, uint8_t out[PW_TAG_MAX])
{
    return pw_tag_parse(s, out);
}

void pw__api_query_free(pw__api_query_t *q)
{
    pw_free(q->mem);
    memset(q, 0, sizeof(*q));
}

/* Splits and decodes `s`. Returns 0, or -1 for a bad percent-encoding (resp filled). */
int pw__api_query_parse(const char *s, pw__api_query_t *q, pw_api_resp_t *resp)
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
        if (e > p && q->n < PW_API_MAX_QUERY) {
            const char *eq = memchr(p, '=', (size_t)(e - p));
            const char *ne = eq ? eq : e;
            ssize_t a = pw__api_pct_decode(p, (size_t)(ne - p), 1, o, (size_t)(ne - p) + 1);
            if (a < 0)
                goto bad;
            q->name[q->n] = o;
            o += a + 1;
            const char *vs = eq ? eq + 1 : e;
            ssize_t b = pw__api_pct_decode(vs, (size_t)(e - vs), 1, o, (size_t)(e - vs) + 1);
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
    pw__api_query_free(q);
    return -1;
}

const char *pw__api_query_get(const pw__api_query_t *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->name[i], name) == 0)
            return q->value[i];
    return NULL;
}

/* Unsigned decimal parameter: 1 when present and valid, 0 when absent, -1 when bad (resp
 * filled). */
int pw__api_query_u64(const pw__api_query_t *q, const char *name, uint64_t max, uint64_t *out,
                      pw_api_resp_t *resp)
{
    const char *v = pw__api_query_get(q, name);
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
int pw__api_pool_word(const char *s)
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

const char *pw__api_limit_source_name(int s)
{
    return pw_series_limit_source_name(s); /* the same words as /metrics' source label */
}

const char *pw__api_level_name(pw_level_t l)
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
void pw__api_describe(const pw_api_t *api, const uint8_t *tag, size_t len, const char **drv,
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

json_t *pw__api_body_object(const pw_api_req_t *req, pw_api_resp_t *resp)
{
    json_error_t je;
    json_t *b = json_loadb((const char *)req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    if (b != NULL && json_is_object(b))
        return b;
    json_decref(b);
    /* jansson names its own flag for a \u0000 in a string: say it in the API's words. */
    const char *why = b                                           ? "not an object"
                      : strstr(je.text, "JSON_ALLOW_NUL") != NULL ? "\\u0000 in a string"
                                                                  : je.text;
    pw_api_error(resp, 400, "EINVAL", "body is not a JSON object: %s (line %d)", why, je.line);
    return NULL;
}

json_t *pw__api_host_body(pw_api_t *api, const pw_api_req_t *req, const char *name, pw_host_t **h,
                          pw_api_resp_t *resp)
{
    *h = pw__api_find_host(api, name, resp);
    return *h ? pw__api_body_object(req, resp) : NULL;
}

int pw__api_check_host_name(const char *name, const char *field, pw_api_resp_t *resp)
{
    size_t n = strlen(name);
    if (n == 0 || n > 255)
        return pw_api_error(resp, 400, "EINVAL", "%s is required (1..255 bytes)", field);
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
              (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '-' ||
              name[i] == '_') ||
            (i == 0 && (name[i] == '.' || name[i] == '-')))
            return pw_api_error(resp, 400, "EINVAL",
                                "%s must be a host name (letters, digits, '.', '-', '_'; not "
                                "starting with '.' or '-'): byte %zu of '%.64s'",
                                field, i + 1, name);
    return 0;
}

int pw__api_host_known(const pw_api_t *api, const char *name)
{
    return pw_fleet_find(pw_ingest_fleet(api->ing), name) != NULL;
}

pw_host_t *pw__api_find_host(pw_api_t *api, const char *name, pw_api_resp_t *resp)
{
    pw_host_t *h = pw_fleet_find(pw_ingest_fleet(api->ing), name);
    if (h == NULL)
        pw_api_error(resp, 404, "ENOENT", "unknown host '%s'", name);
    return h;
}

/* 1 when t[0..tl) names a tag as `tag` (tl bytes) does, or as its padded form: poolmon pads
 * tags to 4 with spaces ("Io" is "Io  "). */
static int same_tag(const uint8_t *t, size_t tl, const uint8_t *tag, size_t len)
{
    if (tl == len)
        return memcmp(t, tag, len) == 0;
    if (len >= 4 || tl != 4 || memcmp(t, tag, len) != 0)
        return 0;
    for (size_t i = len; i < 4; i++)
        if (t[i] != ' ')
            return 0;
    return 1;
}

/* Whether host h ever had the tag in any pool: a row of its current table, or a point of its
 * stored history (nonpaged or paged, all time). Asked only when a series came back empty, to
 * tell an unknown tag (404, a typo) from a known one with nothing in that time or pool. */
int pw__api_tag_known(pw_api_t *api, const pw_host_t *h, const uint8_t *tag, size_t len,
                      uint64_t now_ms)
{
    for (size_t i = 0, n = pw_host_nrows(h); i < n; i++) {
        pw_host_row_t row;
        pw_host_row_plain(h, i, &row);
        size_t shown = pw_row_split(row.tag, row.tag_len, row.pool, NULL);
        if (same_tag(row.tag, shown, tag, len))
            return 1;
    }
    uint8_t padded[4];
    size_t forms = len < 4 ? 2 : 1;
    if (len < 4) {
        memcpy(padded, tag, len);
        memset(padded + len, ' ', 4 - len);
    }
    for (int pool = PW_POOL_PAGED; pool <= PW_POOL_NONPAGED; pool++)
        for (size_t f = 0; f < forms; f++) {
            pw_store_series_t s;
            memset(&s, 0, sizeof(s));
            /* one point a day over all time: the cheapest level that sees every sample */
            int64_t n =
                pw_store_series(pw_ingest_store(api->ing), h->name, f ? padded : tag, f ? 4 : len,
                                (pw_pool_t)pool, 0, now_ms + 86400000ull, 86400000ull, &s, NULL);
            pw_store_series_free(&s);
            if (n != 0) /* an error is not "unknown": the empty answer stands */
                return 1;
        }
    return 0;
}
