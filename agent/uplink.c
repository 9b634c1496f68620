#include "uplink.h"
#include "alloc.h"
#include "codec.h"
#include "frame.h"
#include "log.h"
#include "net.h"
#include "tls.h"

#include <stdio.h>
#include <string.h>

/* ============================================================================================
 * Uplink
 * ========================================================================================== */

typedef enum { UP_IDLE, UP_RESOLVING, UP_CONNECTING, UP_UP, UP_WAITING, UP_CLOSING } up_state_t;

struct pw_uplink_s {
    uv_loop_t *loop;
    pw_uplink_opts_t opts;
    pw_uplink_cbs_t cbs;
    void *arg;
    pw_tls_ctx_t *ctx;
    pw_tls_conn_t *conn; /* current session, NULL when none */
    uv_timer_t timer;    /* connect timeout, or the wait before the next attempt */
    uv_getaddrinfo_t gai;
    int gai_active;
    up_state_t state;
    size_t next_ep; /* endpoint of the next attempt */
    char endpoint[300];
    char host[256];
    pw_backoff_t backoff;
    pw_frame_reader_t reader;
    pw_buf_t out;
    uint64_t rng;
    int timer_closed;
    uint64_t session_start_ms; /* uv_now() when the session came up */
    int healthy;               /* this session reset the backoff already */
    uint8_t tls_digest[32];    /* the TLS files' contents when last read (pw_tls_files_digest) */
    int64_t expiry_warned_s;   /* wall time of the last expiry warning */
};

static void connect_next(pw_uplink_t *up);

static uint32_t next_rand(pw_uplink_t *up)
{
    up->rng ^= up->rng << 13;
    up->rng ^= up->rng >> 7;
    up->rng ^= up->rng << 17;
    return (uint32_t)(up->rng >> 16);
}

static void maybe_free(pw_uplink_t *up)
{
    if (up->state != UP_CLOSING || up->conn != NULL || up->gai_active || !up->timer_closed)
        return;
    pw_tls_ctx_free(up->ctx);
    pw_frame_reader_close(&up->reader);
    pw_buf_close(&up->out);
    pw_free(up);
}

static void on_timer_closed(uv_handle_t *h)
{
    pw_uplink_t *up = h->data;
    up->timer_closed = 1;
    maybe_free(up);
}

static void on_retry_timer(uv_timer_t *t)
{
    pw_uplink_t *up = t->data;
    if (up->state == UP_WAITING)
        connect_next(up);
}

static void schedule_retry(pw_uplink_t *up, int status, const char *msg)
{
    uint64_t delay = pw_backoff_next(&up->backoff, next_rand(up));
    up->state = UP_WAITING;
    uv_timer_stop(&up->timer);
    uv_timer_start(&up->timer, on_retry_timer, delay, 0);
    if (up->cbs.on_disconnected)
        up->cbs.on_disconnected(up, status, msg, delay, up->arg);
}

static void on_connect_timeout(uv_timer_t *t)
{
    pw_uplink_t *up = t->data;
    if (up->state == UP_CONNECTING && up->conn != NULL)
        pw_tls_close(up->conn); /* on_close schedules the retry */
}

static void on_established(pw_tls_conn_t *conn)
{
    pw_uplink_t *up = pw_tls_data(conn);
    uv_timer_stop(&up->timer);
    up->state = UP_UP;
    up->session_start_ms = uv_now(up->loop);
    up->healthy = 0;
    pw_frame_reader_close(&up->reader);
    pw_frame_reader_init(&up->reader, up->opts.max_frame);
    if (up->cbs.on_connected)
        up->cbs.on_connected(up, up->arg);
}

static void on_data(pw_tls_conn_t *conn, const uint8_t *data, size_t len)
{
    pw_uplink_t *up = pw_tls_data(conn);
    pw_diag_t d;
    int r = pw_frame_reader_feed(&up->reader, data, len, &d);
    const uint8_t *p;
    size_t plen;
    while (r == 0 && up->conn == conn && !pw_tls_is_closing(conn) &&
           (r = pw_frame_reader_next(&up->reader, &p, &plen, &d)) == 1) {
        Poolwatch__V1__Envelope *env;
        r = pw_codec_unpack(p, plen, &env, &d);
        if (r != 0)
            break;
        if (up->cbs.on_envelope)
            up->cbs.on_envelope(up, env, up->arg);
        pw_codec_free(env);
        r = 0;
    }
    if (r < 0) {
        PW_LOG_WARN("uplink", "%s: bad data from the collector: %s (%s)", up->endpoint,
                    pw_strerror(r), d.msg);
        pw_tls_close(conn);
    }
}

static void on_close(pw_tls_conn_t *conn, int status, const char *msg)
{
    pw_uplink_t *up = pw_tls_data(conn);
    if (up->conn == conn)
        up->conn = NULL;
    if (up->state == UP_CLOSING) {
        maybe_free(up);
        return;
    }
    schedule_retry(up, status, msg);
}

static const pw_tls_cbs_t tls_cbs = {on_established, on_data, on_close};

static void start_tls(pw_uplink_t *up, const struct sockaddr *sa)
{
    pw_diag_t d;
    const char *name = up->opts.server_name ? up->opts.server_name : up->host;
    int r = pw_tls_connect(&up->conn, up->loop, up->ctx, sa, name, &tls_cbs, up, &d);
    if (r != 0) {
        up->conn = NULL;
        schedule_retry(up, r, d.msg);
        return;
    }
    up->state = UP_CONNECTING;
    uint64_t to = up->opts.connect_timeout_ms ? up->opts.connect_timeout_ms : 10000;
    uv_timer_start(&up->timer, on_connect_timeout, to, 0);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    pw_uplink_t *up = req->data;
    up->gai_active = 0;
    if (up->state == UP_CLOSING) {
        uv_freeaddrinfo(res);
        maybe_free(up);
        return;
    }
    if (status != 0 || res == NULL) {
        char msg[400];
        snprintf(msg, sizeof(msg), "cannot resolve %s", up->host); /* status says why */
        uv_freeaddrinfo(res);
        schedule_retry(up, status ? status : PW_ENOENT, msg);
        return;
    }
    start_tls(up, res->ai_addr);
    uv_freeaddrinfo(res);
}

static void refresh_tls(pw_uplink_t *up);

static void connect_next(pw_uplink_t *up)
{
    refresh_tls(up);
    const char *ep = up->opts.endpoints[up->next_ep];
    up->next_ep = (up->next_ep + 1) % up->opts.n_endpoints;
    snprintf(up->endpoint, sizeof(up->endpoint), "%s", ep);
    uint16_t port;
    if (pw_net_split_host_port(ep, 7070, up->host, sizeof(up->host), &port, NULL) != 0) {
        schedule_retry(up, PW_EINVAL, "bad endpoint");
        return;
    }
    struct sockaddr_storage ss;
    if (pw_net_addr_from_literal(up->host, port, &ss) == 0) {
        start_tls(up, (const struct sockaddr *)&ss);
        return;
    }
    char port_s[8];
    snprintf(port_s, sizeof(port_s), "%u", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    up->gai.data = up;
    up->state = UP_RESOLVING;
    int r = uv_getaddrinfo(up->loop, &up->gai, on_resolved, up->host, port_s, &hints);
    if (r != 0) {
        schedule_retry(up, r, uv_strerror(r));
        return;
    }
    up->gai_active = 1;
}

static pw_tls_ctx_opts_t tls_opts(const pw_uplink_opts_t *o)
{
    pw_tls_ctx_opts_t to = {.role = PW_TLS_CLIENT,
                            .ca_file = o->ca_file,
                            .cert_file = o->cert_file,
                            .key_file = o->key_file,
                            .crl_file = o->crl_file};
    return to;
}

int pw_uplink_reload_tls(pw_uplink_t *up, pw_diag_t *d)
{
    pw_tls_ctx_opts_t to = tls_opts(&up->opts);
    pw_tls_ctx_t *ctx;
    pw_tls_files_digest(&to, up->tls_digest); /* before: a change meanwhile is seen next time */
    int r = pw_tls_ctx_new(&ctx, &to, d);
    if (r != 0)
        return r;
    /* Contexts are reference counted: a live connection holds its own reference. */
    pw_tls_ctx_free(up->ctx);
    up->ctx = ctx;
    return 0;
}

/* Before a connection attempt: a new context when the TLS files changed (a renewed
 * certificate or CRL), and the daily expiry warning. */
static void refresh_tls(pw_uplink_t *up)
{
    pw_tls_ctx_opts_t to = tls_opts(&up->opts);
    uint8_t now_digest[32];
    pw_diag_t d;
    if (pw_tls_files_digest(&to, now_digest) == 0 &&
        memcmp(now_digest, up->tls_digest, sizeof(now_digest)) != 0) {
        if (pw_uplink_reload_tls(up, &d) == 0)
            PW_LOG_INFO("uplink", "TLS files changed: %s, %s, %s read again for this connection",
                        up->opts.cert_file, up->opts.key_file, up->opts.ca_file);
        else
            PW_LOG_WARN("uplink", "TLS files changed but not usable, the previous ones stay: %s",
                        d.msg);
    }
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    char msg[160];
    if (tv.tv_sec - up->expiry_warned_s >= 86400 &&
        pw_tls_ctx_expiry_check(up->ctx, tv.tv_sec, PW_TLS_EXPIRY_WARN_S, msg, sizeof(msg)) == 1) {
        PW_LOG_WARN("uplink", "%s (%s, %s): renew it; it is read again at the next connection", msg,
                    up->opts.cert_file, up->opts.ca_file);
        up->expiry_warned_s = tv.tv_sec;
    }
}

int pw_uplink_new(uv_loop_t *loop, const pw_uplink_opts_t *opts, const pw_uplink_cbs_t *cbs,
                  void *arg, pw_uplink_t **out, pw_diag_t *d)
{
    if (opts->n_endpoints == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "collector", "no collector endpoint configured");
    for (size_t i = 0; i < opts->n_endpoints; i++) {
        char host[256];
        uint16_t port;
        if (pw_net_split_host_port(opts->endpoints[i], 7070, host, sizeof(host), &port, NULL) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "collector", "endpoint '%s' is not host:port",
                               opts->endpoints[i]);
    }
    pw_uplink_t *up = pw_calloc(1, sizeof(*up));
    if (up == NULL)
        return PW_ENOMEM;
    pw_tls_ctx_opts_t to = tls_opts(opts);
    pw_tls_files_digest(&to, up->tls_digest);
    int r = pw_tls_ctx_new(&up->ctx, &to, d);
    if (r != 0) {
        pw_free(up);
        return r;
    }
    up->loop = loop;
    up->opts = *opts;
    up->cbs = *cbs;
    up->arg = arg;
    pw_backoff_init(&up->backoff, opts->backoff_min_ms, opts->backoff_max_ms);
    pw_frame_reader_init(&up->reader, opts->max_frame);
    pw_buf_init(&up->out, (opts->max_frame ? opts->max_frame : PW_FRAME_MAX_DEFAULT) + 16);
    up->rng = uv_hrtime() | 1;
    uv_timer_init(loop, &up->timer);
    up->timer.data = up;
    *out = up;
    return 0;
}

int pw_uplink_start(pw_uplink_t *up)
{
    if (up->state == UP_IDLE)
        connect_next(up);
    return 0;
}

int pw_uplink_send_frame(pw_uplink_t *up, const void *frame, size_t len)
{
    if (up->state != UP_UP || up->conn == NULL)
        return PW_ECLOSED;
    return pw_tls_write(up->conn, frame, len);
}

int pw_uplink_send(pw_uplink_t *up, const Poolwatch__V1__Envelope *env)
{
    pw_buf_reset(&up->out);
    int r = pw_codec_pack_frame(env, up->out.max - 16, &up->out);
    if (r != 0)
        return r;
    return pw_uplink_send_frame(up, up->out.data, up->out.len);
}

int pw_uplink_is_up(const pw_uplink_t *up)
{
    return up->state == UP_UP && up->conn != NULL;
}

size_t pw_uplink_queued_bytes(const pw_uplink_t *up)
{
    return up->conn ? pw_tls_write_queue_bytes(up->conn) : 0;
}

void pw_uplink_mark_healthy(pw_uplink_t *up)
{
    uint64_t need = up->opts.healthy_ms ? up->opts.healthy_ms : 30000;
    if (up->healthy || up->state != UP_UP || uv_now(up->loop) - up->session_start_ms < need)
        return;
    up->healthy = 1;
    pw_backoff_reset(&up->backoff);
}

void pw_uplink_drop(pw_uplink_t *up, const char *why)
{
    if (up->conn != NULL && !pw_tls_is_closing(up->conn)) {
        PW_LOG_WARN("uplink", "%s: closing session: %s", up->endpoint, why);
        pw_tls_close(up->conn);
    }
}

const char *pw_uplink_endpoint(const pw_uplink_t *up)
{
    return up->endpoint;
}

void pw_uplink_close(pw_uplink_t *up)
{
    if (up == NULL || up->state == UP_CLOSING)
        return;
    up->state = UP_CLOSING;
    uv_timer_stop(&up->timer);
    uv_close((uv_handle_t *)&up->timer, on_timer_closed);
    if (up->gai_active)
        uv_cancel((uv_req_t *)&up->gai);
    if (up->conn != NULL)
        pw_tls_close(up->conn);
}
