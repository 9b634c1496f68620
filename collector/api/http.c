/* http.c: the collector's HTTP listener for the query API.
 *
 * TLS with the collector's certificate through pw_tls (server context with no_client_cert:
 * browsers and scripts authenticate with bearer tokens, api_v1.c), HTTP/1.1 parsed by
 * http-parser (Debian libhttp-parser-dev), keep-alive and pipelining (one request at a time:
 * the parser is paused after each message until its response is written), and limits:
 * request line + headers 16 KiB (431), body 1 MiB or 256 MiB for /api/v1/import (413), one
 * Authorization header (two: 400).
 *
 * Nobody without a token can hold the API (issue 15): a request head must be complete 10 s
 * after its first byte, and a new connection's first head 10 s after the accept, TLS
 * handshake included (408); the body and the answer then have 30 s (an import with a valid token
 * one more second per MiB of its Content-Length). A connection is pre-auth
 * until a request carries a valid bearer token; pre-auth connections get the head deadline
 * between requests too (authenticated keep-alive connections idle for 60 s), at most
 * PW_API_MAX_PREAUTH_PER_IP of them per address and PW_API_MAX_CONNS - PW_API_RESERVED_CONNS in
 * all: at a cap the oldest pre-auth connection (of the address, else anywhere) older than 1 s
 * is closed for the new one, else the new one is refused. Authenticated connections are never
 * closed for another one and keep PW_API_RESERVED_CONNS slots of PW_API_MAX_CONNS.
 */
#include "api.h"
#include "api_internal.h"

#include <stdio.h>
#include <string.h>

#include <http_parser.h>

#include "alloc.h"
#include "log.h"
#include "net.h"
#include "tls.h"
#include "web.h"

#define MOD          "http"
#define DEFAULT_PORT 8443

enum { T_IDLE, T_HEAD, T_REQUEST, T_COMMAND, T_DRAIN };

typedef struct hconn_s {
    struct pw_http_s *srv;
    pw_tls_conn_t *tls;
    uv_timer_t timer;
    int timer_mode;
    uint64_t drain_started;
    uint64_t request_ms; /* the body and the answer's deadline after the head (T_REQUEST) */
    http_parser parser;
    pw_buf_t in;   /* received and not parsed yet (the parser is paused between requests) */
    pw_buf_t url;  /* request target */
    pw_buf_t auth; /* Authorization value */
    pw_buf_t inm;  /* If-None-Match value (the dashboard's static files) */
    pw_buf_t body;
    char field[32];
    size_t field_len;  /* real length of the current header name (may exceed the buffer) */
    int field_is_auth; /* the current header is Authorization */
    int field_is_inm;  /* the current header is If-None-Match */
    int auth_seen;     /* Authorization headers in this request */
    int in_value;      /* the last header callback was a value */
    size_t header_bytes;
    int error_status; /* set by a callback that refuses the request (413, 431) */
    int linger;       /* refused mid-request: input is discarded until the close (below) */
    int keep_alive;
    int waiting; /* a command was sent; the answer or the timeout resumes the connection */
    uint64_t cmd_id;
    char cmd_host[256];
    int closing;
    int authed;                  /* a request carried a valid token: no longer pre-auth */
    int refused;                 /* refused at accept (pre-auth limits): closing, not listed */
    uint64_t accepted_ms;        /* uv_now() at accept */
    char ip[64];                 /* peer address, for the pre-auth limits */
    struct hconn_s *next, *prev; /* newest first */
} hconn_t;

struct pw_http_s {
    uv_loop_t *loop;
    char *tokens_file; /* for pw_http_reload_tokens; NULL = none */
    uv_tcp_t server;
    int port;
    pw_tls_ctx_t *tls;
    pw_api_t api;
    hconn_t *conns;
    size_t n_conns; /* closing ones included */
    uint64_t head_timeout_ms;
};

static http_parser_settings settings;

static uint64_t wall_ms(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static void on_timer(uv_timer_t *t);

static void arm(hconn_t *k, int mode, uint64_t ms, uint64_t repeat)
{
    k->timer_mode = mode;
    uv_timer_start(&k->timer, on_timer, ms, repeat);
}

static void conn_close(hconn_t *k)
{
    if (k->closing)
        return;
    k->closing = 1;
    uv_timer_stop(&k->timer);
    if (k->tls)
        pw_tls_close(k->tls);
}

/* Closes once libuv has handed every queued byte to the kernel (pw_tls_close would cancel
 * writes still queued), or after the request time limit. */
static void close_after_flush(hconn_t *k)
{
    if (k->tls == NULL || (pw_tls_write_queue_bytes(k->tls) == 0 && !k->linger)) {
        conn_close(k);
        return;
    }
    k->drain_started = uv_now(k->srv->loop);
    arm(k, T_DRAIN, 10, 10);
}

/* Writes resp as one HTTP/1.1 response. */
static void send_resp(hconn_t *k, pw_api_resp_t *resp)
{
    pw_http_t *s = k->srv;
    s->api.stats.requests++;
    int cls = resp->status / 100;
    if (cls >= 1 && cls <= 5)
        s->api.stats.by_class[cls]++;
    if (k->tls == NULL || k->closing)
        return;
    char head[1024], etag[40] = "";
    if (resp->etag[0])
        snprintf(etag, sizeof(etag), "ETag: %s\r\n", resp->etag);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: %s\r\n%s%s%sConnection: %s\r\n\r\n",
                     resp->status, pw_api_reason(resp->status), resp->content_type, resp->body.len,
                     resp->cache_control ? resp->cache_control : "no-store", etag,
                     resp->extra_headers ? resp->extra_headers : "",
                     resp->status == 401 ? "WWW-Authenticate: Bearer realm=\"poolwatch\"\r\n" : "",
                     k->keep_alive ? "keep-alive" : "close");
    if (n < 0 || (size_t)n >= sizeof(head)) {
        conn_close(k);
        return;
    }
    pw_buf_t out;
    pw_buf_init(&out, SIZE_MAX);
    if (pw_buf_append(&out, head, (size_t)n) != 0 ||
        pw_buf_append(&out, resp->body.data ? resp->body.data : (const uint8_t *)"",
                      resp->body.len) != 0 ||
        pw_tls_write(k->tls, out.data, out.len) != 0) {
        pw_buf_close(&out);
        conn_close(k);
        return;
    }
    pw_buf_close(&out);
    if (!k->keep_alive)
        close_after_flush(k);
    else if (k->authed)
        arm(k, T_IDLE, PW_API_IDLE_TIMEOUT_MS, 0);
    else
        arm(k, T_HEAD, s->head_timeout_ms, 0); /* pre-auth: no idling on a slot */
}

/* An error response from the transport (parse errors, limits); closes the connection. The
 * client may still be sending the rest of the request: closing a socket with unread input
 * resets the connection, and the reset can destroy the answer before the client reads it.
 * So the connection lingers: what arrives is discarded, and it closes when the client does or
 * LINGER_MS after the answer left (the "lingering close" of RFC 9112 section 9.6). */
#define LINGER_MS 2000

static void send_error(hconn_t *k, int status, const char *code, const char *msg)
{
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    pw_api_error(&resp, status, code, "%s", msg);
    k->keep_alive = 0;
    k->linger = 1;
    send_resp(k, &resp);
    pw_api_resp_close(&resp);
}

static void process(hconn_t *k);

/* ---- http-parser callbacks ---------------------------------------------------------------- */

static int on_message_begin(http_parser *p)
{
    hconn_t *k = p->data;
    pw_buf_reset(&k->url);
    pw_buf_reset(&k->auth);
    pw_buf_reset(&k->inm);
    pw_buf_close(&k->body);
    pw_buf_init(&k->body, PW_API_MAX_BODY_BYTES);
    k->field_len = 0;
    k->field_is_auth = 0;
    k->field_is_inm = 0;
    k->in_value = 0;
    k->header_bytes = 0;
    k->error_status = 0;
    k->auth_seen = 0;
    /* The head's deadline runs from its first byte; a new connection's and a pre-auth one's
     * already runs (from the accept, from the previous answer) and is not pushed back. */
    if (k->timer_mode == T_IDLE)
        arm(k, T_HEAD, k->srv->head_timeout_ms, 0);
    return 0;
}

static int count_header(hconn_t *k, size_t len)
{
    k->header_bytes += len;
    if (k->header_bytes > PW_API_MAX_HEADER_BYTES) {
        k->error_status = 431;
        return 1;
    }
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    hconn_t *k = p->data;
    if (count_header(k, len) || pw_buf_append(&k->url, at, len) != 0)
        return k->error_status = 431, 1;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    hconn_t *k = p->data;
    if (count_header(k, len + 4)) /* ": " and CRLF */
        return 1;
    if (k->in_value || k->field_len == 0) {
        k->field_len = 0;
        k->in_value = 0;
    }
    for (size_t i = 0; i < len; i++, k->field_len++)
        if (k->field_len < sizeof(k->field))
            k->field[k->field_len] = at[i];
    k->field_is_auth = k->field_len == 13 && strncasecmp(k->field, "authorization", 13) == 0;
    k->field_is_inm = k->field_len == 13 && strncasecmp(k->field, "if-none-match", 13) == 0;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    hconn_t *k = p->data;
    if (count_header(k, len))
        return 1;
    if (!k->in_value && k->field_is_auth && ++k->auth_seen > 1) {
        k->error_status = 400; /* which one would count is ambiguous: refused */
        return 1;
    }
    if (!k->in_value && k->field_is_inm)
        pw_buf_reset(&k->inm);
    k->in_value = 1;
    if (k->field_is_auth && pw_buf_append(&k->auth, at, len) != 0)
        return k->error_status = 431, 1;
    if (k->field_is_inm && pw_buf_append(&k->inm, at, len) != 0)
        return k->error_status = 431, 1;
    return 0;
}

/* 1 when `auth` (an Authorization value) is "Bearer <a token of the tokens file>": the
 * connection then leaves the pre-auth limits. The role is the handlers' business. */
static int has_valid_token(const pw_http_t *s, const char *auth)
{
    if (strncasecmp(auth, "Bearer ", 7) != 0)
        return 0;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    return pw_tokens_check(s->api.tokens, t, strlen(t), NULL) != PW_ROLE_NONE;
}

static int is_import(const hconn_t *k)
{
    static const char pfx[] = "/api/v1/import";
    size_t n = sizeof(pfx) - 1;
    return k->url.len >= n && memcmp(k->url.data, pfx, n) == 0 &&
           (k->url.len == n || k->url.data[n] == '?');
}

static int on_headers_complete(http_parser *p)
{
    hconn_t *k = p->data;
    /* the body and the answer; an import's body of up to 256 MiB, from a client with a token,
     * also gets a second per PW_API_IMPORT_BYTES_PER_S of it (14 days of 15-minute screens of
     * an 800-tag server are 92 MB: over a 10 Mbit/s link that is 74 s) */
    k->request_ms = PW_API_REQUEST_TIMEOUT_MS;
    if (is_import(k) && (p->flags & F_CONTENTLENGTH) && k->auth.len > 0 &&
        p->content_length <= PW_API_MAX_IMPORT_BYTES) {
        char *auth = pw_strndup((const char *)k->auth.data, k->auth.len);
        if (auth != NULL && has_valid_token(k->srv, auth))
            k->request_ms += p->content_length * 1000 / PW_API_IMPORT_BYTES_PER_S;
        pw_free(auth);
    }
    arm(k, T_REQUEST, k->request_ms, 0);
    size_t max = is_import(k) ? PW_API_MAX_IMPORT_BYTES : PW_API_MAX_BODY_BYTES;
    k->body.max = max;
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > max) {
        k->error_status = 413;
        return 3; /* anything but 0, 1, 2 is an error for http-parser */
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    hconn_t *k = p->data;
    if (pw_buf_append(&k->body, at, len) != 0) {
        k->error_status = 413;
        return 1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    hconn_t *k = p->data;
    k->keep_alive = http_should_keep_alive(p);
    http_parser_pause(p, 1); /* one request at a time: resumed after the response */
    return 0;
}

/* ---- requests --------------------------------------------------------------------------- */

static void dispatch(hconn_t *k)
{
    pw_http_t *s = k->srv;
    struct http_parser_url u;
    http_parser_url_init(&u);
    char *url = pw_strndup(k->url.data ? (const char *)k->url.data : "", k->url.len);
    if (url == NULL) {
        send_error(k, 500, "ENOMEM", "out of memory");
        return;
    }
    if (k->url.len == 0 || http_parser_parse_url(url, k->url.len, 0, &u) != 0 ||
        !(u.field_set & (1 << UF_PATH))) {
        pw_free(url);
        send_error(k, 400, "EINVAL", "bad request target");
        return;
    }
    char *path = url + u.field_data[UF_PATH].off;
    path[u.field_data[UF_PATH].len] = '\0';
    const char *query = "";
    if (u.field_set & (1 << UF_QUERY)) {
        char *q = url + u.field_data[UF_QUERY].off;
        q[u.field_data[UF_QUERY].len] = '\0';
        query = q;
    }
    char *auth = k->auth.len ? pw_strndup((const char *)k->auth.data, k->auth.len) : NULL;
    if (!k->authed && auth != NULL)
        k->authed = has_valid_token(s, auth);
    pw_api_req_t req = {(int)k->parser.method, path,        query,    auth,
                        k->body.data,          k->body.len, wall_ms()};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    uint64_t t0 = uv_hrtime();
    char *inm = k->inm.len ? pw_strndup((const char *)k->inm.data, k->inm.len) : NULL;
    if (pw_web_handle(req.method, path, inm, &resp) == 0) /* the dashboard, else the API */
        pw_api_handle(&s->api, &req, &resp);
    s->api.stats.handler_us_total += (uv_hrtime() - t0) / 1000;
    pw_free(inm);
    pw_free(auth);
    pw_free(url);
    pw_buf_close(&k->body);
    pw_buf_init(&k->body, PW_API_MAX_BODY_BYTES);
    if (resp.pending) {
        k->waiting = 1;
        k->cmd_id = resp.cmd_id;
        snprintf(k->cmd_host, sizeof(k->cmd_host), "%s", resp.cmd_host);
        arm(k, T_COMMAND, PW_API_COMMAND_TIMEOUT_MS, 0);
    } else {
        send_resp(k, &resp);
    }
    pw_api_resp_close(&resp);
}

/* Parses what is buffered, one request at a time. */
static void process(hconn_t *k)
{
    while (!k->waiting && !k->closing && k->tls != NULL && k->in.len > 0) {
        size_t n = http_parser_execute(&k->parser, &settings, (const char *)k->in.data, k->in.len);
        enum http_errno e = HTTP_PARSER_ERRNO(&k->parser);
        pw_buf_consume(&k->in, n);
        if (e == HPE_PAUSED) {
            http_parser_pause(&k->parser, 0);
            dispatch(k);
            continue;
        }
        if (e != HPE_OK) {
            if (k->error_status == 431)
                send_error(k, 431, "ETOOBIG", "request line and headers over 16 KiB");
            else if (k->error_status == 413)
                send_error(k, 413, "ETOOBIG", "request body too large");
            else if (k->error_status == 400)
                send_error(k, 400, "EINVAL", "more than one Authorization header");
            else {
                char msg[160];
                snprintf(msg, sizeof(msg), "malformed HTTP request: %s", http_errno_description(e));
                send_error(k, 400, "EPARSE", msg);
            }
            return;
        }
        if (n == 0)
            break;
    }
}

/* ---- connections ------------------------------------------------------------------------ */

static void on_timer(uv_timer_t *t)
{
    hconn_t *k = t->data;
    switch (k->timer_mode) {
    case T_IDLE:
        conn_close(k);
        break;
    case T_HEAD:
        k->srv->api.stats.head_timeouts++;
        send_error(k, 408, "ETIMEDOUT", "request head not received in time");
        break;
    case T_REQUEST: {
        char msg[96];
        snprintf(msg, sizeof(msg), "request not received within %llu s",
                 (unsigned long long)(k->request_ms / 1000));
        send_error(k, 408, "ETIMEDOUT", msg);
        break;
    }
    case T_COMMAND: {
        k->waiting = 0;
        pw_api_resp_t resp;
        pw_api_resp_init(&resp);
        pw_api_error(&resp, 504, "ETIMEDOUT", "host '%s' did not answer within 10 s", k->cmd_host);
        send_resp(k, &resp);
        pw_api_resp_close(&resp);
        process(k);
        break;
    }
    case T_DRAIN: {
        uint64_t waited = uv_now(k->srv->loop) - k->drain_started;
        if (k->tls == NULL || waited > PW_API_REQUEST_TIMEOUT_MS ||
            (pw_tls_write_queue_bytes(k->tls) == 0 && (!k->linger || waited > LINGER_MS)))
            conn_close(k);
        break;
    }
    }
}

static void on_data(pw_tls_conn_t *tls, const uint8_t *data, size_t len)
{
    hconn_t *k = pw_tls_data(tls);
    if (k->closing || k->linger)
        return; /* the rest of a refused request */
    if (pw_buf_append(&k->in, data, len) != 0) {
        /* Only a client that pipelines megabytes behind a waiting command gets here. */
        conn_close(k);
        return;
    }
    process(k);
}

static void on_timer_closed(uv_handle_t *h)
{
    hconn_t *k = h->data;
    pw_buf_close(&k->in);
    pw_buf_close(&k->url);
    pw_buf_close(&k->auth);
    pw_buf_close(&k->inm);
    pw_buf_close(&k->body);
    pw_free(k);
}

static void on_close(pw_tls_conn_t *tls, int status, const char *msg)
{
    hconn_t *k = pw_tls_data(tls);
    pw_http_t *s = k->srv;
    if (k->refused) { /* refused at accept: never listed, no timer */
        pw_free(k);
        return;
    }
    if (status != 0 && status != PW_ECLOSED)
        PW_LOG_DEBUG(MOD, "connection closed: %s: %s", pw_strerror(status), msg ? msg : "");
    k->tls = NULL;
    k->closing = 1;
    if (s != NULL) { /* NULL once the listener stopped (pw_http_stop) */
        if (k->prev)
            k->prev->next = k->next;
        else
            s->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        s->n_conns--;
        s->api.stats.open_connections = s->n_conns;
    }
    uv_timer_stop(&k->timer);
    uv_close((uv_handle_t *)&k->timer, on_timer_closed);
}

static const pw_tls_cbs_t cbs = {NULL, on_data, on_close};

/* The oldest open pre-auth connection older than PW_API_EVICT_MIN_AGE_MS, of address `ip`
 * (NULL: of any), or NULL; counts in *n the open pre-auth ones (of that address). */
static hconn_t *oldest_preauth(pw_http_t *s, const char *ip, uint64_t now, size_t *n)
{
    hconn_t *old = NULL;
    *n = 0;
    for (hconn_t *k = s->conns; k != NULL; k = k->next) {
        if (k->authed || k->closing || (ip && strcmp(k->ip, ip) != 0))
            continue;
        (*n)++;
        if (now - k->accepted_ms >= PW_API_EVICT_MIN_AGE_MS)
            old = k; /* the list is newest first: the last match is the oldest */
    }
    return old;
}

/* Makes room for a new pre-auth connection from `ip` under the limits (above): 1 when it may
 * be accepted (a victim may have been closed for it), 0 when it must be refused. */
static int preauth_admit(pw_http_t *s, const char *ip)
{
    uint64_t now = uv_now(s->loop);
    size_t open = 0;
    for (hconn_t *k = s->conns; k != NULL; k = k->next)
        open += !k->closing;
    /* Closing connections linger briefly; bound them too (memory), at twice the slots. */
    if (open >= PW_API_MAX_CONNS || s->n_conns >= 2 * PW_API_MAX_CONNS)
        return 0;
    size_t n, n_ip;
    hconn_t *victim = oldest_preauth(s, ip, now, &n_ip);
    if (n_ip < PW_API_MAX_PREAUTH_PER_IP) {
        victim = oldest_preauth(s, NULL, now, &n);
        if (n < PW_API_MAX_CONNS - PW_API_RESERVED_CONNS) {
            if (n_ip + 1 > s->api.stats.preauth_max_ip)
                s->api.stats.preauth_max_ip = n_ip + 1;
            return 1;
        }
    }
    if (victim == NULL)
        return 0;
    size_t after = n_ip < PW_API_MAX_PREAUTH_PER_IP ? n_ip + 1 : n_ip; /* one out, one in */
    if (after > s->api.stats.preauth_max_ip)
        s->api.stats.preauth_max_ip = after;
    s->api.stats.preauth_evicted++;
    conn_close(victim);
    return 1;
}

static void on_connection(uv_stream_t *server, int status)
{
    pw_http_t *s = server->data;
    if (status != 0)
        return;
    hconn_t *k = pw_calloc(1, sizeof(*k));
    if (k == NULL) {
        pw_net_reject(server);
        return;
    }
    k->srv = s;
    pw_diag_t d;
    if (pw_tls_accept(&k->tls, server, s->tls, &cbs, k, &d) != 0) {
        pw_free(k);
        pw_net_reject(server);
        return;
    }
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    if (uv_tcp_getpeername(pw_tls_tcp(k->tls), (struct sockaddr *)&ss, &sl) == 0)
        pw_net_addr_format((struct sockaddr *)&ss, k->ip, sizeof(k->ip));
    char *colon = strrchr(k->ip, ':'); /* "a.b.c.d:port" or "[v6]:port": the address alone */
    if (colon)
        *colon = '\0';
    if (!preauth_admit(s, k->ip)) {
        s->api.stats.refused++;
        k->refused = 1;
        pw_tls_close(k->tls); /* on_close frees k */
        return;
    }
    http_parser_init(&k->parser, HTTP_REQUEST);
    k->parser.data = k;
    pw_buf_init(&k->in, PW_API_MAX_HEADER_BYTES + PW_API_MAX_BODY_BYTES);
    pw_buf_init(&k->url, PW_API_MAX_HEADER_BYTES);
    pw_buf_init(&k->auth, PW_API_MAX_HEADER_BYTES);
    pw_buf_init(&k->inm, PW_API_MAX_HEADER_BYTES);
    pw_buf_init(&k->body, PW_API_MAX_BODY_BYTES);
    uv_timer_init(s->loop, &k->timer);
    k->timer.data = k;
    /* The TLS handshake and the first request head share the head deadline. */
    k->accepted_ms = uv_now(s->loop);
    arm(k, T_HEAD, s->head_timeout_ms, 0);
    k->next = s->conns;
    if (s->conns)
        s->conns->prev = k;
    s->conns = k;
    s->n_conns++;
    s->api.stats.connections++;
    s->api.stats.open_connections = s->n_conns;
}

/* ---- the listener ------------------------------------------------------------------------ */

void pw_http_command_result(pw_http_t *s, const pw_host_t *h,
                            const Poolwatch__V1__CommandResult *res)
{
    if (s == NULL || h == NULL || res == NULL)
        return;
    for (hconn_t *k = s->conns; k != NULL; k = k->next) {
        if (!k->waiting || k->cmd_id != res->id || strcmp(k->cmd_host, h->name) != 0)
            continue;
        k->waiting = 0;
        uv_timer_stop(&k->timer);
        pw_api_resp_t resp;
        pw_api_resp_init(&resp);
        pw_api_command_result(&resp, res);
        send_resp(k, &resp);
        pw_api_resp_close(&resp);
        process(k);
        return;
    }
    /* The request timed out or its client left: nothing waits for this answer. */
}

static void http_free(pw_http_t *s)
{
    pw_tls_ctx_free(s->tls);
    pw_tokens_free(s->api.tokens);
    pw_pooltag_free(s->api.pooltag);
    pw__api_gcache_free(&s->api);
    pw_free(s->tokens_file);
    pw_free(s);
}

static void on_server_closed(uv_handle_t *h)
{
    http_free(h->data);
}

int pw_http_start(uv_loop_t *loop, const pw_http_opts_t *opts, const pw_api_t *deps,
                  pw_http_t **out, pw_diag_t *d)
{
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
    pw_http_t *s = pw_calloc(1, sizeof(*s));
    if (s == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    s->loop = loop;
    s->head_timeout_ms = opts->head_timeout_ms ? opts->head_timeout_ms : PW_API_HEAD_TIMEOUT_MS;
    s->api.ing = deps->ing;
    s->api.an = deps->an;
    s->api.rw = deps->rw;
    s->api.fleetq = deps->fleetq;
    s->api.agents = deps->agents;
    int r = 0;
    if (opts->tokens_file && opts->tokens_file[0]) {
        size_t n = strlen(opts->tokens_file) + 1;
        if ((s->tokens_file = pw_malloc(n)) == NULL) {
            r = pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
            goto fail;
        }
        memcpy(s->tokens_file, opts->tokens_file, n);
        if ((r = pw_tokens_load(opts->tokens_file, &s->api.tokens, d)) != 0)
            goto fail;
    } else {
        PW_LOG_WARN(MOD, "no tokens_file: every API request will get 401");
    }
    if (opts->pooltag_file && opts->pooltag_file[0] &&
        (r = pw_pooltag_load(opts->pooltag_file, NULL, &s->api.pooltag, d)) != 0)
        goto fail;
    if ((r = pw_http_reload_tls(s, opts->ca_file, opts->cert_file, opts->key_file, d)) != 0)
        goto fail;
    char host[PW_NET_HOST_MAX];
    uint16_t port;
    struct sockaddr_storage ss;
    /* "IP:0" asks for any free port (tests); pw_net_split_host_port wants 1..65535. */
    char ep[PW_NET_HOST_MAX + 8];
    snprintf(ep, sizeof(ep), "%s", opts->listen);
    size_t el = strlen(ep);
    int any_port = el > 2 && strcmp(ep + el - 2, ":0") == 0;
    if (any_port)
        ep[el - 2] = '\0';
    if (pw_net_split_host_port(ep, DEFAULT_PORT, host, sizeof(host), &port, NULL) != 0 ||
        pw_net_addr_from_literal(host, any_port ? 0 : port, &ss) != 0) {
        r = pw_diag_set(d, PW_ECONFIG, 0, 0, "http_listen", "http_listen '%s' is not IP:port",
                        opts->listen);
        goto fail;
    }
    uv_tcp_init(loop, &s->server);
    s->server.data = s;
    if ((r = uv_tcp_bind(&s->server, (struct sockaddr *)&ss, 0)) != 0 ||
        (r = uv_listen((uv_stream_t *)&s->server, 128, on_connection)) != 0) {
        pw_diag_set(d, r, 0, 0, "http_listen", "cannot listen on %s: %s", opts->listen,
                    uv_strerror(r));
        uv_close((uv_handle_t *)&s->server, on_server_closed); /* frees s */
        return r;
    }
    s->port = pw_net_bound_port(&s->server);
    *out = s;
    PW_LOG_INFO(MOD, "query API on https://%s (port %d), %zu tokens", opts->listen, s->port,
                pw_tokens_count(s->api.tokens));
    return 0;
fail:
    http_free(s);
    return r;
}

int pw_http_reload_tls(pw_http_t *s, const char *ca_file, const char *cert_file,
                       const char *key_file, pw_diag_t *d)
{
    pw_tls_ctx_opts_t to = {.role = PW_TLS_SERVER,
                            .ca_file = ca_file,
                            .cert_file = cert_file,
                            .key_file = key_file,
                            .no_client_cert = 1};
    pw_tls_ctx_t *ctx;
    int r = pw_tls_ctx_new(&ctx, &to, d);
    if (r != 0)
        return r;
    pw_tls_ctx_free(s->tls); /* connections hold their own reference */
    s->tls = ctx;
    pw_tls_ctx_not_after(ctx, &s->api.cert_not_after_s, &s->api.ca_not_after_s);
    return 0;
}

int64_t pw_http_reload_tokens(pw_http_t *s, pw_diag_t *d)
{
    if (s == NULL || s->tokens_file == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "http.tokens_file",
                           "no HTTP listener or no tokens file to reload");
    pw_tokens_t *t;
    int r = pw_tokens_load(s->tokens_file, &t, d);
    if (r != 0)
        return r;
    pw_tokens_free(s->api.tokens); /* requests check tokens on the loop thread, as this runs */
    s->api.tokens = t;
    return (int64_t)pw_tokens_count(t);
}

void pw_http_stop(pw_http_t *s)
{
    if (s == NULL)
        return;
    for (hconn_t *k = s->conns; k != NULL; k = k->next)
        conn_close(k);
    /* Connections hold their own TLS context reference; the state goes with the listener.
     * Their close callbacks still use s: detach them first. */
    while (s->conns) {
        hconn_t *k = s->conns;
        s->conns = k->next;
        k->prev = k->next = NULL;
        k->srv = NULL;
    }
    uv_close((uv_handle_t *)&s->server, on_server_closed);
}

int pw_http_port(const pw_http_t *s)
{
    return s ? s->port : 0;
}

pw_api_t *pw_http_api(pw_http_t *s)
{
    return s ? &s->api : NULL;
}
