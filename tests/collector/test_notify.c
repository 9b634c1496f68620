/* test_notify.c: alerts out (collector/notify.h).
 *  - RFC 3339 formatting against hand-computed instants;
 *  - webhook round trip against an in-test HTTP server on loopback: the first attempt gets
 *    503 and is retried after the backoff, the second gets 200; the received body is checked
 *    field by field;
 *  - Alertmanager round trip against Debian's prometheus-alertmanager, started here on a
 *    loopback port with a temporary minimal config and storage (the test FAILS when it cannot
 *    start: deploy/test.sh installs it with install-deps.sh --alertmanager): a firing alert
 *    read back with GET /api/v2/alerts (labels exactly, startsAt, annotations), then the
 *    resolved transition (endsAt read back, then gone from the active list once it passed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "alloc.h"
#include "notify.h"

extern char **environ;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parses "YYYY-MM-DDTHH:MM:SS[.fff...]Z" into ms (the form both we and Alertmanager print). */
static int64_t parse_rfc3339(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int ms = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    const char *dot = strchr(s, '.');
    if (dot) {
        int digits = 0;
        for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        for (; digits < 3; digits++)
            ms *= 10;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

static void make_tr(pw_alert_transition_t *tr, const char *host, const char *tag,
                    pw_alert_state_t from, pw_alert_state_t to, int64_t since, int64_t at)
{
    memset(tr, 0, sizeof(*tr));
    snprintf(tr->key.host, sizeof(tr->key.host), "%s", host);
    snprintf(tr->key.tag, sizeof(tr->key.tag), "%s", tag);
    snprintf(tr->key.pool, sizeof(tr->key.pool), "nonpaged");
    snprintf(tr->key.severity, sizeof(tr->key.severity), "warning");
    tr->from = from;
    tr->to = to;
    tr->active_since_ms = since;
    tr->at_ms = at;
    tr->value = 1.0;
}

static void test_rfc3339(void **state)
{
    (void)state;
    char b[40];
    /* 2024-01-01T00:00:00Z is 1704067200 s (19723 days * 86400); + 8 h + 123 ms */
    assert_string_equal(pw_notify_rfc3339(INT64_C(1704096000123), b, sizeof(b)),
                        "2024-01-01T08:00:00.123Z");
    assert_string_equal(pw_notify_rfc3339(0, b, sizeof(b)), "1970-01-01T00:00:00.000Z");
    /* 2000-02-29T23:59:59.999Z = 951868799 s (11016 days * 86400 + 86399) */
    assert_string_equal(pw_notify_rfc3339(INT64_C(951868799999), b, sizeof(b)),
                        "2000-02-29T23:59:59.999Z");
}

static void test_bad_urls(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pw_notify_t *n = NULL;
    pw_diag_t d;
    pw_notify_opts_t o;
    memset(&o, 0, sizeof(o));
    o.webhook_url = "https://example.org/hook";
    assert_int_equal(pw_notify_new(&loop, &o, &n, &d), PW_ECONFIG);
    assert_string_equal(d.field, "webhook_url");
    assert_string_equal(d.msg, "alerts.webhook_url: https://example.org/hook: only http:// is "
                               "supported (put a TLS proxy on loopback for https)");
    o.webhook_url = NULL;
    o.alertmanager_url = "127.0.0.1:9093";
    assert_int_equal(pw_notify_new(&loop, &o, &n, &d), PW_ECONFIG);
    assert_string_equal(d.field, "alertmanager_url");
    assert_string_equal(d.msg, "alerts.alertmanager_url: 127.0.0.1:9093: not an "
                               "http://host[:port][/path] URL");
    assert_null(n);
    /* pw_notify_check (--check-config): the same parser, nothing created */
    o.alertmanager_url = NULL;
    o.webhook_url = "htp://x";
    assert_int_equal(pw_notify_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.msg, "alerts.webhook_url: htp://x: only http:// is supported (put a "
                               "TLS proxy on loopback for https)");
    o.webhook_url = "http://127.0.0.1:9/hook";
    o.alertmanager_url = "http://127.0.0.1:9093/";
    assert_int_equal(pw_notify_check(&o, &d), 0);
    o.alertmanager_url = "http://127.0.0.1:9093/a b";
    assert_int_equal(pw_notify_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.field, "alertmanager_url");
    uv_loop_close(&loop);
}

/* ---- in-test HTTP server ----------------------------------------------------------------- */

typedef struct srv_s {
    uv_tcp_t listener;
    int port;
    int requests;   /* complete requests seen */
    int fail_first; /* answer the first request 503 */
    char method[16];
    char url[256];
    char ctype[128];
    char *body; /* last request body */
    size_t body_len;
} srv_t;

typedef struct conn_s {
    uv_tcp_t tcp;
    srv_t *srv;
    http_parser p;
    char hfield[64];
    int in_ctype;
    uv_write_t w;
    int done;
} conn_t;

static int c_url(http_parser *p, const char *at, size_t len)
{
    conn_t *c = p->data;
    size_t have = strlen(c->srv->url);
    if (have + len < sizeof(c->srv->url)) {
        memcpy(c->srv->url + have, at, len);
        c->srv->url[have + len] = 0;
    }
    return 0;
}

static int c_field(http_parser *p, const char *at, size_t len)
{
    conn_t *c = p->data;
    c->in_ctype = len == 12 && strncasecmp(at, "Content-Type", 12) == 0;
    return 0;
}

static int c_value(http_parser *p, const char *at, size_t len)
{
    conn_t *c = p->data;
    if (c->in_ctype && len < sizeof(c->srv->ctype)) {
        memcpy(c->srv->ctype, at, len);
        c->srv->ctype[len] = 0;
    }
    return 0;
}

static int c_body(http_parser *p, const char *at, size_t len)
{
    conn_t *c = p->data;
    srv_t *s = c->srv;
    s->body = realloc(s->body, s->body_len + len + 1);
    memcpy(s->body + s->body_len, at, len);
    s->body_len += len;
    s->body[s->body_len] = 0;
    return 0;
}

static void c_closed(uv_handle_t *h)
{
    free(h->data);
}

static void c_written(uv_write_t *w, int status)
{
    (void)status;
    conn_t *c = w->data;
    uv_close((uv_handle_t *)&c->tcp, c_closed);
}

static int c_complete(http_parser *p)
{
    conn_t *c = p->data;
    srv_t *s = c->srv;
    snprintf(s->method, sizeof(s->method), "%s", http_method_str((enum http_method)p->method));
    int fail = s->fail_first && s->requests == 0;
    s->requests++;
    static char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    static char busy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    uv_buf_t b = fail ? uv_buf_init(busy, sizeof(busy) - 1) : uv_buf_init(ok, sizeof(ok) - 1);
    c->w.data = c;
    c->done = 1;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, c_written);
    return 0;
}

static http_parser_settings srv_settings = {.on_url = c_url,
                                            .on_header_field = c_field,
                                            .on_header_value = c_value,
                                            .on_body = c_body,
                                            .on_message_complete = c_complete};

static void c_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)h;
    b->base = malloc(sz);
    b->len = sz;
}

static void c_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    conn_t *c = st->data;
    if (nread > 0 && !c->done) {
        http_parser_execute(&c->p, &srv_settings, b->base, (size_t)nread);
    } else if (nread < 0 && !c->done) {
        uv_close((uv_handle_t *)&c->tcp, c_closed);
    }
    free(b->base);
}

static void on_conn(uv_stream_t *l, int status)
{
    assert_int_equal(status, 0);
    srv_t *s = l->data;
    conn_t *c = calloc(1, sizeof(*c));
    c->srv = s;
    uv_tcp_init(l->loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&c->tcp), 0);
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    /* each connection carries one request: start its record afresh */
    s->url[0] = 0;
    s->ctype[0] = 0;
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
    uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read);
}

static void run_until(uv_loop_t *loop, pw_notify_t *n, uint64_t sent_or_failed, int timeout_ms)
{
    int64_t end = wall_ms() + timeout_ms;
    pw_notify_stats_t st;
    for (;;) {
        pw_notify_get_stats(n, &st);
        if (st.sent + st.failed >= sent_or_failed || wall_ms() > end)
            break;
        uv_run(loop, UV_RUN_ONCE);
    }
}

static void test_webhook_roundtrip(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv_t srv;
    memset(&srv, 0, sizeof(srv));
    srv.fail_first = 1;
    uv_tcp_init(&loop, &srv.listener);
    srv.listener.data = &srv;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&srv.listener, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv.listener, 8, on_conn), 0);
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    uv_tcp_getsockname(&srv.listener, (struct sockaddr *)&ss, &sl);
    srv.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hooks/pw?x=1", srv.port);
    pw_notify_opts_t o;
    memset(&o, 0, sizeof(o));
    o.webhook_url = url;
    o.backoff_initial_ms = 50;
    pw_notify_t *n;
    pw_diag_t d;
    assert_int_equal(pw_notify_new(&loop, &o, &n, &d), 0);

    pw_alert_transition_t tr;
    /* 2024-01-01T08:00:00Z and 08:05:00.250Z */
    make_tr(&tr, "srv-01", "Ddk", PW_ALERT_PENDING, PW_ALERT_FIRING, INT64_C(1704096000000),
            INT64_C(1704096300250));
    tr.value = 0.75;
    int64_t t0 = wall_ms();
    assert_int_equal(pw_notify_alert(n, &tr, "PoolTagLeak", "Ddk grows", "68 KiB/h", 0), 1);
    run_until(&loop, n, 1, 5000);
    pw_notify_stats_t st;
    pw_notify_get_stats(n, &st);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.last_status, 200);
    assert_int_equal(srv.requests, 2);
    assert_true(wall_ms() - t0 >= 50); /* the backoff was waited */
    assert_string_equal(srv.method, "POST");
    assert_string_equal(srv.url, "/hooks/pw?x=1");
    assert_string_equal(srv.ctype, "application/json");

    json_error_t je;
    json_t *o2 = json_loads(srv.body, 0, &je);
    assert_non_null(o2);
    assert_string_equal(json_string_value(json_object_get(o2, "host")), "srv-01");
    assert_string_equal(json_string_value(json_object_get(o2, "tag")), "Ddk");
    assert_string_equal(json_string_value(json_object_get(o2, "pool")), "nonpaged");
    assert_string_equal(json_string_value(json_object_get(o2, "severity")), "warning");
    assert_string_equal(json_string_value(json_object_get(o2, "alertname")), "PoolTagLeak");
    assert_string_equal(json_string_value(json_object_get(o2, "state")), "firing");
    assert_string_equal(json_string_value(json_object_get(o2, "previous_state")), "pending");
    assert_true(json_real_value(json_object_get(o2, "value")) == 0.75);
    assert_string_equal(json_string_value(json_object_get(o2, "summary")), "Ddk grows");
    assert_string_equal(json_string_value(json_object_get(o2, "description")), "68 KiB/h");
    assert_string_equal(json_string_value(json_object_get(o2, "startsAt")),
                        "2024-01-01T08:00:00.000Z");
    assert_string_equal(json_string_value(json_object_get(o2, "at")), "2024-01-01T08:05:00.250Z");
    assert_true(json_is_null(json_object_get(o2, "endsAt")));
    json_decref(o2);

    /* resolved: endsAt is the transition time */
    make_tr(&tr, "srv-01", "Ddk", PW_ALERT_FIRING, PW_ALERT_RESOLVED, INT64_C(1704096000000),
            INT64_C(1704099600000));
    assert_int_equal(pw_notify_alert(n, &tr, "PoolTagLeak", NULL, NULL, 0), 1);
    run_until(&loop, n, 2, 5000);
    pw_notify_get_stats(n, &st);
    assert_int_equal(st.sent, 2);
    o2 = json_loads(srv.body, 0, &je);
    assert_non_null(o2);
    assert_string_equal(json_string_value(json_object_get(o2, "state")), "resolved");
    assert_string_equal(json_string_value(json_object_get(o2, "endsAt")),
                        "2024-01-01T09:00:00.000Z");
    assert_string_equal(json_string_value(json_object_get(o2, "summary")), "");
    json_decref(o2);

    /* a dead endpoint: every attempt fails, the message is dropped after max_attempts */
    pw_notify_close(n);
    pw_notify_opts_t o3;
    memset(&o3, 0, sizeof(o3));
    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d/", srv.port);
    o3.webhook_url = dead;
    o3.max_attempts = 3;
    o3.backoff_initial_ms = 10;
    uv_close((uv_handle_t *)&srv.listener, NULL); /* nothing listens any more */
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(pw_notify_new(&loop, &o3, &n, &d), 0);
    assert_int_equal(pw_notify_alert(n, &tr, "PoolTagLeak", NULL, NULL, 0), 1);
    run_until(&loop, n, 1, 5000);
    pw_notify_get_stats(n, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.retries, 2);
    pw_notify_close(n);
    uv_run(&loop, UV_RUN_DEFAULT);
    free(srv.body);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- Alertmanager ------------------------------------------------------------------------ */

/* Blocking GET on 127.0.0.1:port; returns the status and the body (malloc'ed) in *body. */
static int http_get(int port, const char *path, char **body)
{
    *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    char req[512];
    int rl =
        snprintf(req, sizeof(req),
                 "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n", path);
    if (write(fd, req, (size_t)rl) != rl) {
        close(fd);
        return -1;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    ssize_t k;
    while ((k = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)k;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    buf[len] = 0;
    int status = 0;
    if (sscanf(buf, "HTTP/%*s %d", &status) != 1) {
        free(buf);
        return -1;
    }
    char *b = strstr(buf, "\r\n\r\n");
    *body = strdup(b ? b + 4 : "");
    free(buf);
    return status;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof(a));
    socklen_t l = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

static const char *am_bin(void)
{
    static const char *c[] = {"/usr/bin/prometheus-alertmanager", "/usr/local/bin/alertmanager",
                              "/usr/bin/alertmanager"};
    for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++)
        if (access(c[i], X_OK) == 0)
            return c[i];
    return NULL;
}

/* The alert of `host` in GET /api/v2/alerts (a new reference), or NULL. */
static json_t *am_find(int port, const char *host)
{
    char *body;
    int st = http_get(port, "/api/v2/alerts", &body);
    assert_int_equal(st, 200);
    json_error_t je;
    json_t *arr = json_loads(body, 0, &je);
    free(body);
    assert_true(json_is_array(arr));
    json_t *found = NULL;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *a = json_array_get(arr, i);
        const char *h = json_string_value(json_object_get(json_object_get(a, "labels"), "host"));
        if (h && strcmp(h, host) == 0)
            found = json_incref(a);
    }
    json_decref(arr);
    return found;
}

static void test_alertmanager_roundtrip(void **state)
{
    (void)state;
    const char *bin = am_bin();
    if (bin == NULL)
        fail_msg("prometheus-alertmanager not installed (deploy/install-deps.sh --alertmanager)");
    char dir[] = "/tmp/pw-test-am-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cfg[300], data[300], logf[300];
    snprintf(cfg, sizeof(cfg), "%s/alertmanager.yml", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(logf, sizeof(logf), "%s/log", dir);
    mkdir(data, 0700);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n", f);
    fclose(f);

    int port = free_port();
    char a1[350], a2[80], a3[350];
    snprintf(a1, sizeof(a1), "--config.file=%s", cfg);
    snprintf(a2, sizeof(a2), "--web.listen-address=127.0.0.1:%d", port);
    snprintf(a3, sizeof(a3), "--storage.path=%s", data);
    char a0[300], a4[] = "--cluster.listen-address=";
    snprintf(a0, sizeof(a0), "%s", bin);
    char *argv[] = {a0, a1, a2, a3, a4, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);

    int ready = 0;
    for (int i = 0; i < 200 && !ready; i++) {
        char *b;
        if (http_get(port, "/-/ready", &b) == 200)
            ready = 1;
        free(b);
        if (!ready)
            usleep(50000);
    }
    if (!ready) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        fail_msg("alertmanager did not become ready on 127.0.0.1:%d (log: %s)", port, logf);
    }

    uv_loop_t loop;
    uv_loop_init(&loop);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    pw_notify_opts_t o;
    memset(&o, 0, sizeof(o));
    o.alertmanager_url = url;
    o.generator_url = "http://collector.example/alerts";
    pw_notify_t *n;
    pw_diag_t d;
    assert_int_equal(pw_notify_new(&loop, &o, &n, &d), 0);

    /* firing, started 10 minutes ago (whole seconds, so the comparison is exact) */
    int64_t now = wall_ms() / 1000 * 1000;
    int64_t since = now - 600000;
    pw_alert_transition_t tr;
    make_tr(&tr, "pw-test-host", "Ddk", PW_ALERT_PENDING, PW_ALERT_FIRING, since, now);
    /* pending is not sent to Alertmanager */
    pw_alert_transition_t pend = tr;
    pend.from = PW_ALERT_INACTIVE;
    pend.to = PW_ALERT_PENDING;
    assert_int_equal(pw_notify_alert(n, &pend, "PoolTagLeak", "x", "y", 0), 0);
    assert_int_equal(pw_notify_alert(n, &tr, "PoolTagLeak", "Ddk leaks", "68 KiB/h since boot", 0),
                     1);
    run_until(&loop, n, 1, 10000);
    pw_notify_stats_t st;
    pw_notify_get_stats(n, &st);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.last_status, 200);

    json_t *a = am_find(port, "pw-test-host");
    assert_non_null(a);
    json_t *l = json_object_get(a, "labels");
    assert_int_equal(json_object_size(l), 5);
    assert_string_equal(json_string_value(json_object_get(l, "alertname")), "PoolTagLeak");
    assert_string_equal(json_string_value(json_object_get(l, "host")), "pw-test-host");
    assert_string_equal(json_string_value(json_object_get(l, "tag")), "Ddk");
    assert_string_equal(json_string_value(json_object_get(l, "pool")), "nonpaged");
    assert_string_equal(json_string_value(json_object_get(l, "severity")), "warning");
    json_t *an = json_object_get(a, "annotations");
    assert_string_equal(json_string_value(json_object_get(an, "summary")), "Ddk leaks");
    assert_string_equal(json_string_value(json_object_get(an, "description")),
                        "68 KiB/h since boot");
    assert_string_equal(json_string_value(json_object_get(a, "generatorURL")),
                        "http://collector.example/alerts");
    assert_int_equal(parse_rfc3339(json_string_value(json_object_get(a, "startsAt"))), since);
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "status"), "state")),
                        "active");
    json_decref(a);

    /* resolved, with the transition stamped 3 s ahead (injected clock), so Alertmanager still
     * lists it and endsAt can be read back; once that time has passed it is no longer listed */
    int64_t end = now + 3000;
    make_tr(&tr, "pw-test-host", "Ddk", PW_ALERT_FIRING, PW_ALERT_RESOLVED, since, end);
    assert_int_equal(pw_notify_alert(n, &tr, "PoolTagLeak", "Ddk leaks", "resolved", 0), 1);
    run_until(&loop, n, 2, 10000);
    pw_notify_get_stats(n, &st);
    assert_int_equal(st.sent, 2);
    a = am_find(port, "pw-test-host");
    assert_non_null(a);
    assert_int_equal(parse_rfc3339(json_string_value(json_object_get(a, "endsAt"))), end);
    json_decref(a);
    while (wall_ms() < end + 500)
        usleep(100000);
    a = am_find(port, "pw-test-host");
    assert_null(a);

    pw_notify_close(n);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    kill(pid, SIGTERM);
    int ws;
    waitpid(pid, &ws, 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_webhook_roundtrip),
        cmocka_unit_test(test_alertmanager_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
