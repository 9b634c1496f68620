/* httpc.c: asynchronous HTTP/1.1 POST over TCP or TLS on a libuv loop (see httpc.h).
 *
 * Each request is an attempt object that owns its lookup, socket or TLS connection, request
 * bytes and parser. When the request ends (response, error, timeout) the client detaches it
 * and calls back at once; the attempt closes its handles and frees itself later, so the
 * callback may start the next request while the previous socket is still closing. */
#include "httpc.h"

#include <http_parser.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "buf.h"
#include "tls.h"

#define DEFAULT_CA "/etc/ssl/certs/ca-certificates.crt"

typedef struct attempt_s attempt_t;

struct pw_httpc_s {
    uv_loop_t *loop;
    pw_url_t u;
    pw_tls_ctx_t *tls;
    uint64_t timeout_ms;
    size_t max_body; /* response bytes kept; 0 = read and dropped */
    pw_buf_t body;   /* the last response's body (max_body > 0) */
    uv_timer_t timer;
    int closing;
    attempt_t *cur; /* in flight, NULL when idle */
    pw_httpc_done_cb cb;
    void *arg;
};

struct attempt_s {
    pw_httpc_t *c; /* NULL once detached */
    uv_getaddrinfo_t gai;
    int gai_busy;
    uv_tcp_t tcp; /* plain http */
    int tcp_open;
    uv_connect_t creq;
    uv_write_t wreq;
    pw_tls_conn_t *tlsc; /* https */
    char *req;
    size_t req_len;
    http_parser parser;
    pw_buf_t body;
    int status, complete, too_big;
    int early; /* a failure found inside pw_httpc_post, reported from the loop */
};

static http_parser_settings rsp_settings;

/* ---- URL --------------------------------------------------------------------------------- */

int pw_httpc_parse_url(const char *url, const char *opt, pw_url_t *out, pw_diag_t *d)
{
    pw_diag_t ud;
    pw_diag_clear(&ud);
    if (pw_url_parse_request(url, out, &ud) == 0)
        return 0;
    return pw_diag_set(d, PW_ECONFIG, 0, ud.offset, opt, "%s: %s: %s%s", opt, url ? url : "",
                       ud.msg, strcmp(ud.field, "userinfo") == 0 ? " (use bearer_token_file)" : "");
}

/* ---- client ------------------------------------------------------------------------------ */

int pw_httpc_new(uv_loop_t *loop, const pw_httpc_opts_t *opts, pw_httpc_t **out, pw_diag_t *d)
{
    if (loop == NULL || opts == NULL || out == NULL)
        return PW_EINVAL;
    pw_httpc_t *c = pw_calloc(1, sizeof(*c));
    if (c == NULL)
        return PW_ENOMEM;
    int r = pw_httpc_parse_url(opts->url, opts->opt_name ? opts->opt_name : "url", &c->u, d);
    if (r == 0 && c->u.tls) {
        pw_tls_ctx_opts_t to = {
            .role = PW_TLS_CLIENT,
            .ca_file = opts->ca_file && opts->ca_file[0] ? opts->ca_file : DEFAULT_CA,
            .cert_file = opts->cert_file && opts->cert_file[0] ? opts->cert_file : NULL,
            .key_file = opts->key_file && opts->key_file[0] ? opts->key_file : NULL};
        r = pw_tls_ctx_new(&c->tls, &to, d);
    }
    if (r != 0) {
        pw_free(c);
        return r;
    }
    c->loop = loop;
    c->timeout_ms = opts->timeout_ms ? opts->timeout_ms : 10000;
    c->max_body = opts->max_body;
    pw_buf_init(&c->body, opts->max_body ? opts->max_body : 1);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    *out = c;
    return 0;
}

int pw_httpc_busy(const pw_httpc_t *c)
{
    return c != NULL && c->cur != NULL;
}

const uint8_t *pw_httpc_body(const pw_httpc_t *c, size_t *len)
{
    *len = c->body.len;
    return c->body.data ? c->body.data : (const uint8_t *)"";
}

static void attempt_maybe_free(attempt_t *a)
{
    if (a->c != NULL || a->gai_busy || a->tcp_open || a->tlsc != NULL)
        return;
    pw_free(a->req);
    pw_buf_close(&a->body);
    pw_free(a);
}

static void on_tcp_closed(uv_handle_t *h)
{
    attempt_t *a = h->data;
    a->tcp_open = 0;
    attempt_maybe_free(a);
}

/* Cuts the attempt from its client and starts closing what it holds; it frees itself once
 * its lookup and handles are done. */
static void detach(attempt_t *a)
{
    a->c = NULL;
    if (a->gai_busy)
        uv_cancel((uv_req_t *)&a->gai);
    if (a->tlsc != NULL)
        pw_tls_close(a->tlsc); /* on_close clears a->tlsc */
    if (a->tcp_open == 1) {
        a->tcp_open = 2; /* closing */
        uv_close((uv_handle_t *)&a->tcp, on_tcp_closed);
    }
    attempt_maybe_free(a);
}

/* Ends the attempt in flight and reports `result` (a status or a negative code). */
static void finish(attempt_t *a, int result)
{
    pw_httpc_t *c = a->c;
    if (c == NULL)
        return;
    c->cur = NULL;
    uv_timer_stop(&c->timer);
    if (c->max_body > 0) { /* hand the body over: the client keeps the last one */
        pw_buf_close(&c->body);
        c->body = a->body;
        pw_buf_init(&a->body, 0);
        if (a->too_big && result > 0)
            result = PW_ETOOBIG;
    }
    detach(a);
    c->cb(c->arg, result);
}

static int on_headers(http_parser *p)
{
    attempt_t *a = p->data;
    a->status = (int)p->status_code;
    return 0;
}

static int on_done(http_parser *p)
{
    attempt_t *a = p->data;
    a->status = (int)p->status_code;
    a->complete = 1;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    attempt_t *a = p->data;
    if (a->c == NULL || a->c->max_body == 0 || a->too_big)
        return 0;
    if (a->body.len + len > a->c->max_body || pw_buf_append(&a->body, at, len) != 0)
        a->too_big = 1; /* read on to the end; reported as PW_ETOOBIG */
    return 0;
}

static http_parser_settings rsp_settings = {
    .on_headers_complete = on_headers, .on_body = on_body, .on_message_complete = on_done};

/* Response bytes (NULL, 0 at the end of the stream). */
static void feed(attempt_t *a, const char *p, size_t n)
{
    if (a->c == NULL)
        return;
    size_t k = http_parser_execute(&a->parser, &rsp_settings, p, n);
    if (a->complete)
        finish(a, a->status);
    else if (n == 0)
        finish(a, PW_ECLOSED);
    else if (k != n || HTTP_PARSER_ERRNO(&a->parser) != HPE_OK)
        finish(a, PW_EPROTO);
}

/* ---- plain TCP --------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)h;
    (void)sz;
    static char buf[16384]; /* one read at a time on the loop thread */
    *b = uv_buf_init(buf, sizeof(buf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    attempt_t *a = s->data;
    if (nread > 0)
        feed(a, b->base, (size_t)nread);
    else if (nread == UV_EOF)
        feed(a, NULL, 0);
    else if (nread < 0 && a->c != NULL)
        finish(a, PW_ECLOSED);
}

static void on_written(uv_write_t *w, int status)
{
    attempt_t *a = w->data;
    if (status < 0 && a->c != NULL)
        finish(a, PW_ECLOSED);
}

static void on_connect(uv_connect_t *req, int status)
{
    attempt_t *a = req->data;
    if (a->c == NULL)
        return;
    if (status < 0) {
        finish(a, status); /* libuv's code: "connection refused" says more than "closed" */
        return;
    }
    uv_buf_t b = uv_buf_init(a->req, (unsigned)a->req_len);
    a->wreq.data = a;
    if (uv_write(&a->wreq, (uv_stream_t *)&a->tcp, &b, 1, on_written) != 0 ||
        uv_read_start((uv_stream_t *)&a->tcp, on_alloc, on_read) != 0)
        finish(a, PW_ECLOSED);
}

/* ---- TLS --------------------------------------------------------------------------------- */

static void on_tls_established(pw_tls_conn_t *t)
{
    attempt_t *a = pw_tls_data(t);
    if (a->c != NULL && pw_tls_write(t, a->req, a->req_len) != 0)
        finish(a, PW_ECLOSED);
}

static void on_tls_data(pw_tls_conn_t *t, const uint8_t *data, size_t len)
{
    feed(pw_tls_data(t), (const char *)data, len);
}

static void on_tls_close(pw_tls_conn_t *t, int status, const char *msg)
{
    (void)msg;
    attempt_t *a = pw_tls_data(t);
    a->tlsc = NULL;
    if (a->c == NULL) /* already finished: this was the last thing it waited for */
        attempt_maybe_free(a);
    else if (status == 0 || status == PW_ECLOSED)
        feed(a, NULL, 0); /* the end of a response without Content-Length; frees a */
    else
        finish(a, status == PW_EAUTH || status == PW_ETLS ? status : PW_ECLOSED); /* frees a */
}

static const pw_tls_cbs_t tls_cbs = {on_tls_established, on_tls_data, on_tls_close};

/* ---- one request ------------------------------------------------------------------------- */

static void on_resolved(uv_getaddrinfo_t *g, int status, struct addrinfo *ai)
{
    attempt_t *a = g->data;
    a->gai_busy = 0;
    pw_httpc_t *c = a->c;
    if (c == NULL || status < 0 || ai == NULL) {
        uv_freeaddrinfo(ai);
        if (c != NULL)
            finish(a, status < 0 ? status : PW_ECLOSED); /* UV_EAI_*: why; frees a */
        else
            attempt_maybe_free(a);
        return;
    }
    http_parser_init(&a->parser, HTTP_RESPONSE);
    a->parser.data = a;
    int r;
    if (c->u.tls) {
        r = pw_tls_connect(&a->tlsc, c->loop, c->tls, ai->ai_addr, c->u.host, &tls_cbs, a, NULL);
        if (r != 0)
            a->tlsc = NULL;
    } else {
        uv_tcp_init(c->loop, &a->tcp);
        a->tcp.data = a;
        a->tcp_open = 1;
        a->creq.data = a;
        r = uv_tcp_connect(&a->creq, &a->tcp, ai->ai_addr, on_connect);
    }
    uv_freeaddrinfo(ai);
    if (r != 0)
        finish(a, r == PW_ENOMEM ? PW_ENOMEM : PW_ECLOSED);
}

static void on_timeout(uv_timer_t *t)
{
    pw_httpc_t *c = t->data;
    if (c->cur != NULL)
        finish(c->cur, c->cur->early ? c->cur->early : PW_ETIMEDOUT);
}

int pw_httpc_post(pw_httpc_t *c, const char *headers, const void *body, size_t len,
                  pw_httpc_done_cb cb, void *arg)
{
    if (c == NULL || cb == NULL)
        return PW_EINVAL;
    if (c->closing)
        return PW_ECLOSED;
    if (c->cur != NULL)
        return PW_EAGAIN;
    attempt_t *a = pw_calloc(1, sizeof(*a));
    if (a == NULL)
        return PW_ENOMEM;
    const char *hdr = headers ? headers : "";
    int v6 = strchr(c->u.host, ':') != NULL;
    size_t cap = strlen(c->u.path) + strlen(c->u.host) + strlen(hdr) + 128 + len;
    pw_buf_init(&a->body, c->max_body ? c->max_body : 1);
    a->req = pw_malloc(cap);
    if (a->req == NULL) {
        pw_free(a);
        return PW_ENOMEM;
    }
    int n = snprintf(a->req, cap,
                     "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n%sContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     c->u.path, v6 ? "[" : "", c->u.host, v6 ? "]" : "", c->u.port, hdr, len);
    if (n < 0 || (size_t)n + len >= cap) {
        pw_free(a->req);
        pw_free(a);
        return PW_EINVAL;
    }
    if (len)
        memcpy(a->req + n, body, len);
    a->req_len = (size_t)n + len;
    a->c = c;
    c->cur = a;
    c->cb = cb;
    c->arg = arg;
    uv_timer_start(&c->timer, on_timeout, c->timeout_ms, 0);
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    a->gai.data = a;
    a->gai_busy = 1;
    if (uv_getaddrinfo(c->loop, &a->gai, on_resolved, c->u.host, c->u.port, &hints) != 0) {
        /* report from the loop, not inside this call: the timer fires at once */
        a->gai_busy = 0;
        a->early = PW_ECLOSED;
        uv_timer_start(&c->timer, on_timeout, 0, 0);
    }
    return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    pw_httpc_t *c = h->data;
    pw_tls_ctx_free(c->tls);
    pw_buf_close(&c->body);
    pw_free(c);
}

void pw_httpc_close(pw_httpc_t *c)
{
    if (c == NULL || c->closing)
        return;
    c->closing = 1;
    if (c->cur != NULL) {
        attempt_t *a = c->cur;
        c->cur = NULL;
        detach(a);
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}
