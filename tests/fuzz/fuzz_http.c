/* fuzz_http.c: the query API on raw request bytes. The input goes through http-parser with
 * the same limits as collector/http.c (16 KiB of request line and headers, 1 MiB of body),
 * and every complete message through pw_api_handle, against the collector test double
 * (tests/collector/double.h: a store on ":memory:", ingest, the analysis pass): one streaming
 * host (two samples from its agent), one host with a table restored from the store and its
 * agent connected (commands are accepted: pending), one published suspect, an admin token "t"
 * (so seeds reach the handlers with `Authorization: Bearer t`), a read token "r". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <http_parser.h>

#include "alloc.h"
#include "api.h"
#include "double.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pw_double_t g_d;

static void init_once(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    if (pw_double_open(&g_d) != 0)
        __builtin_trap();
    pw_host_t *h1 = pw_double_stream(&g_d, "H1", 32, 0);
    pw_delta_enc_t e;
    pw_delta_enc_init(&e, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 1; k <= 2; k++) {
        pw_sample_reset(&s);
        s.seq = (uint64_t)k;
        s.timestamp_ms = 1000u * (unsigned)k;
        pw_sample_add(&s, "Ddk ", 4, PW_POOL_NONPAGED, 10u * k, 1, 10u * k - 1, 100u * k);
        pw_sample_add(&s, "Io  ", 4, PW_POOL_PAGED, 5, 5, 0, 0);
        pw_sample_add(&s, "a\\b\x01", 4, PW_POOL_SESSION, 7, 2, 5, 70);
        s.totals.nonpaged_bytes = 100u * k;
        pw_double_send(&g_d, &e, h1, &s);
    }
    h1->nonpaged_limit_bytes = 1000;
    pw_double_restore(&g_d, "H2", 64, &s);
    pw_double_stream(&g_d, "H2", 64, 1); /* "connected": commands are accepted (pending) */
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    char a[65], r[65], file[200];
    pw_tokens_hash("t", a);
    pw_tokens_hash("r", r);
    snprintf(file, sizeof(file), "%s admin fuzz\n%s read fuzz\n", a, r);
    pw_tokens_parse(file, strlen(file), &g_d.api.tokens, NULL);
    static const char pt[] = "Ddk  - <unknown> - Default\nIo?? - nt!io - io\n";
    pw_pooltag_parse(pt, sizeof(pt) - 1, NULL, &g_d.api.pooltag, NULL);
    static const pw_suspect_t sus[1] = {
        {.host = "H1",
         .tag = "Ddk ",
         .tag_len = 4,
         .pool = 1,
         .share = -1,
         .d = {.score = 1.0, .first_bytes = 1, .last_bytes = UINT64_MAX}}};
    pw_analysis_run_publish(g_d.an, sus, 1);
}

typedef struct req_s {
    pw_buf_t url, auth, body;
    char field[32];
    size_t field_len, hdr;
    int in_value, is_auth, done;
} req_t;

static int m_begin(http_parser *p)
{
    req_t *q = p->data;
    pw_buf_reset(&q->url);
    pw_buf_reset(&q->auth);
    pw_buf_reset(&q->body);
    q->field_len = q->hdr = 0;
    q->in_value = q->is_auth = 0;
    return 0;
}

static int m_url(http_parser *p, const char *at, size_t n)
{
    req_t *q = p->data;
    q->hdr += n;
    return q->hdr > PW_API_MAX_HEADER_BYTES || pw_buf_append(&q->url, at, n) != 0;
}

static int m_field(http_parser *p, const char *at, size_t n)
{
    req_t *q = p->data;
    q->hdr += n;
    if (q->in_value)
        q->field_len = 0, q->in_value = 0;
    for (size_t i = 0; i < n; i++, q->field_len++)
        if (q->field_len < sizeof(q->field))
            q->field[q->field_len] = at[i];
    q->is_auth = q->field_len == 13 && strncasecmp(q->field, "authorization", 13) == 0;
    return q->hdr > PW_API_MAX_HEADER_BYTES;
}

static int m_value(http_parser *p, const char *at, size_t n)
{
    req_t *q = p->data;
    q->hdr += n;
    q->in_value = 1;
    if (q->is_auth && pw_buf_append(&q->auth, at, n) != 0)
        return 1;
    return q->hdr > PW_API_MAX_HEADER_BYTES;
}

static int m_body(http_parser *p, const char *at, size_t n)
{
    req_t *q = p->data;
    return pw_buf_append(&q->body, at, n) != 0;
}

static int m_complete(http_parser *p)
{
    req_t *q = p->data;
    q->done = 1;
    http_parser_pause(p, 1);
    return 0;
}

static void run(req_t *q, int method)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    char *url = pw_strndup(q->url.data ? (const char *)q->url.data : "", q->url.len);
    char *auth = pw_strndup(q->auth.data ? (const char *)q->auth.data : "", q->auth.len);
    if (url && auth && q->url.len && http_parser_parse_url(url, q->url.len, 0, &u) == 0 &&
        (u.field_set & (1 << UF_PATH))) {
        char *path = url + u.field_data[UF_PATH].off;
        path[u.field_data[UF_PATH].len] = '\0';
        const char *query = "";
        if (u.field_set & (1 << UF_QUERY)) {
            url[u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len] = '\0';
            query = url + u.field_data[UF_QUERY].off;
        }
        pw_api_req_t req = {method,       path,        query, q->auth.len ? auth : NULL,
                            q->body.data, q->body.len, 5000};
        pw_api_resp_t resp;
        pw_api_resp_init(&resp);
        int st = pw_api_handle(&g_d.api, &req, &resp);
        if (st < 200 || st > 599 || (resp.body.len == 0 && !resp.pending))
            __builtin_trap(); /* every answer has a status and a body */
        pw_api_resp_close(&resp);
    }
    pw_free(url);
    pw_free(auth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    static http_parser_settings st = {.on_message_begin = m_begin,
                                      .on_url = m_url,
                                      .on_header_field = m_field,
                                      .on_header_value = m_value,
                                      .on_body = m_body,
                                      .on_message_complete = m_complete};
    req_t q;
    memset(&q, 0, sizeof(q));
    pw_buf_init(&q.url, PW_API_MAX_HEADER_BYTES);
    pw_buf_init(&q.auth, PW_API_MAX_HEADER_BYTES);
    pw_buf_init(&q.body, PW_API_MAX_BODY_BYTES);
    http_parser p;
    http_parser_init(&p, HTTP_REQUEST);
    p.data = &q;
    const char *in = (const char *)data;
    size_t left = size;
    for (int guard = 0; guard < 64 && left > 0; guard++) {
        size_t n = http_parser_execute(&p, &st, in, left);
        in += n;
        left -= n;
        if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED) {
            http_parser_pause(&p, 0);
            run(&q, (int)p.method);
            continue;
        }
        break; /* a parse error (the server answers 400 and closes) or all consumed */
    }
    pw_buf_close(&q.url);
    pw_buf_close(&q.auth);
    pw_buf_close(&q.body);
    return 0;
}
