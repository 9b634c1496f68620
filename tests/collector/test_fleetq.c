/* test_fleetq.c: the global fleet view's decoding of the store's PromQL answers
 * (collector/export/fleetq.h), by hand: hosts merged from their series (a host = a host label;
 * limits absent = unknown; the owner from poolwatch_host_owner), last sample times from
 * timestamp() in seconds, rows in the order of the per-tag aggregates, a suspect's two series
 * as one leak; results naming
 * a host query 0 did not list are ignored; errors say which query and what. Then the refresh
 * through an in-test PromQL server: the answers parsed and the API's answers made on the
 * worker thread (the prepare hook, as the collector wires it), served by pw_api_handle with
 * values computed by hand; a second refresh with new values is what the API serves next; a
 * view without the hook gives the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "double.h"
#include "fleetq.h"

#define V(metric, ts, val) "{\"metric\":{" metric "},\"value\":[" ts ",\"" val "\"]}"
#define OK(results)                                                                                \
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" results "]}}"

static void add(pw_fleetq_build_t *b, int q, const char *json)
{
    pw_diag_t d;
    memset(&d, 0, sizeof(d));
    int r = pw_fleetq_build_add(b, q, json, strlen(json), &d);
    if (r != 0)
        fail_msg("query %d: %s", q, d.msg);
}

static void test_build(void **state)
{
    (void)state;
    pw_fleetq_build_t *b = pw_fleetq_build_new();
    assert_non_null(b);
    add(b, 0,
        OK(V("\"__name__\":\"poolwatch_pool_bytes\",\"host\":\"zeta\",\"pool\":\"nonpaged\"", "1.5", "1000") "," V(
            "\"__name__\":\"poolwatch_pool_bytes\",\"host\":\"zeta\",\"pool\":\"paged\"", "1.5",
            "2000") "," V("\"__name__\":\"poolwatch_pool_limit_bytes\",\"host\":\"zeta\",\"pool\":"
                          "\"nonpaged\"",
                          "1.5",
                          "134217728") "," V("\"__name__\":\"poolwatch_pool_exhaustion_seconds\","
                                             "\"host\":\"zeta\",\"pool\":"
                                             "\"nonpaged\"",
                                             "1.5",
                                             "3600.5") "," V("\"__name__\":\"poolwatch_host_"
                                                             "connected\",\"host\":\"zeta\"",
                                                             "1.5",
                                                             "1") "," V("\"__name__\":\"poolwatch_"
                                                                        "host_suspects\",\"host\":"
                                                                        "\"zeta\"",
                                                                        "1.5",
                                                                        "2") "," V("\"__name__\":"
                                                                                   "\"poolwatch_"
                                                                                   "host_owner\","
                                                                                   "\"collector\":"
                                                                                   "\"https://"
                                                                                   "c2:7443\","
                                                                                   "\"host\":"
                                                                                   "\"zeta\"",
                                                                                   "1.5",
                                                                                   "1") "," V("\"__"
                                                                                              "name"
                                                                                              "__"
                                                                                              "\":"
                                                                                              "\"po"
                                                                                              "olwa"
                                                                                              "tch_"
                                                                                              "pool"
                                                                                              "_byt"
                                                                                              "es\""
                                                                                              ",\"h"
                                                                                              "ost"
                                                                                              "\":"
                                                                                              "\"al"
                                                                                              "pha"
                                                                                              "\","
                                                                                              "\"po"
                                                                                              "ol\""
                                                                                              ":\"n"
                                                                                              "onpa"
                                                                                              "ged"
                                                                                              "\"",
                                                                                              "1.5",
                                                                                              "5")));
    add(b, 1,
        OK(V("\"host\":\"zeta\",\"pool\":\"nonpaged\"", "1.5", "1764400000.005") "," V(
            "\"host\":\"alpha\",\"pool\":\"nonpaged\"", "1.5",
            "1764400001") "," V("\"host\":\"ghost\",\"pool\":\"nonpaged\"", "1.5", "1")));
    add(b, 2,
        OK(V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"zeta\",\"pool\":\"paged\",\"tag\":"
             "\"Thre\"",
             "1.5", "300") "," V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"alpha\",\"pool\":"
                                 "\"nonpaged\","
                                 "\"tag\":\"Ddk \"",
                                 "1.5",
                                 "100") "," V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":"
                                              "\"zeta\",\"pool\":\"nonpaged\",\"tag\":"
                                              "\"Ddk \"",
                                              "1.5", "200")));
    add(b, 3,
        OK(V("\"__name__\":\"poolwatch_leak_score\",\"host\":\"zeta\",\"pool\":\"nonpaged\","
             "\"tag\":\"Ddk \"",
             "1.5", "2.5") "," V("\"__name__\":\"poolwatch_leak_growth_bytes_per_hour\",\"host\":"
                                 "\"zeta\",\"pool\":"
                                 "\"nonpaged\",\"tag\":\"Ddk \"",
                                 "1.5", "4096")));
    pw_fleetq_snap_t *s = pw_fleetq_build_end(b);
    assert_non_null(s);
    assert_int_equal(s->n_hosts, 2);
    const pw_fleetq_host_t *a = &s->hosts[0], *z = &s->hosts[1];
    assert_string_equal(a->name, "alpha");
    assert_string_equal(z->name, "zeta");
    assert_int_equal(a->used[0], 5);
    assert_int_equal(a->limit[0], 0);
    assert_string_equal(a->collector, "");
    assert_int_equal(a->last_seen_ms, 1764400001000ull);
    assert_true(a->eta_s[0] < 0 && a->eta_s[1] < 0);
    assert_int_equal(z->used[0], 1000);
    assert_int_equal(z->used[1], 2000);
    assert_int_equal(z->limit[0], 134217728);
    assert_int_equal(z->limit[1], 0);
    assert_true(z->eta_s[0] == 3600.5);
    assert_int_equal(z->connected, 1);
    assert_int_equal(z->suspects, 2);
    assert_string_equal(z->collector, "https://c2:7443");
    assert_int_equal(z->last_seen_ms, 1764400000005ull);
    /* rows by tag, pool, bytes (most first), host */
    assert_int_equal(s->n_rows, 3);
    assert_int_equal(s->rows[0].host, 1);
    assert_string_equal(s->rows[0].tag, "Ddk ");
    assert_int_equal(s->rows[0].pool, PW_POOL_NONPAGED);
    assert_int_equal(s->rows[0].bytes, 200);
    assert_int_equal(s->rows[1].host, 0);
    assert_string_equal(s->rows[1].tag, "Ddk ");
    assert_int_equal(s->rows[1].bytes, 100);
    assert_int_equal(s->rows[2].host, 1);
    assert_string_equal(s->rows[2].tag, "Thre");
    assert_int_equal(s->rows[2].pool, PW_POOL_PAGED);
    assert_int_equal(s->rows[2].bytes, 300);
    /* one leak from its two series */
    assert_int_equal(s->n_leaks, 1);
    assert_int_equal(s->leaks[0].host, 1);
    assert_true(s->leaks[0].score == 2.5);
    assert_true(s->leaks[0].growth_bytes_per_hour == 4096);
    assert_ptr_equal(pw_fleetq_find(s, "zeta"), z);
    assert_null(pw_fleetq_find(s, "ghost"));
    pw_fleetq_snap_free(s);
}

static void test_errors(void **state)
{
    (void)state;
    pw_fleetq_build_t *b = pw_fleetq_build_new();
    pw_diag_t d;
    const char *e1 = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}";
    assert_int_equal(pw_fleetq_build_add(b, 2, e1, strlen(e1), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 2: status 'error': parse error");
    const char *e2 = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}";
    assert_int_equal(pw_fleetq_build_add(b, 0, e2, strlen(e2), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 0: resultType 'matrix', expected a vector");
    const char *e3 = OK(V("\"host\":\"h\"", "1", "12x"));
    assert_int_equal(pw_fleetq_build_add(b, 0, e3, strlen(e3), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 0: result 0: value '12x'");
    const char *e4 = "{\"status\":";
    assert_int_equal(pw_fleetq_build_add(b, 1, e4, strlen(e4), &d), PW_EPARSE);
    assert_non_null(strstr(d.msg, "query 1: not JSON"));
    pw_fleetq_build_free(b);
}

/* ---- the refresh through an in-test PromQL server ------------------------------------------ */

/* The fleet the server's store holds: 5 hosts, c1 owning h1-h3 and c2 h4-h5. Nonpaged pool
 * used of a 100-byte limit: h1 90, h2 `h2_np`, h3 75, h4 no limit, h5 10. Rows: "Ddk "
 * nonpaged on every host (100, 110, 120, 130, 10000 bytes), "Thre" paged on h1 (300) and h2
 * (500). Suspects: h5's "Ddk " (score 3, 1000 B/h) and h1's "Thre" (score 1, 50 B/h). */
static int h2_np = 50;

#define M(x) "{\"metric\":{" x "},\"value\":[1764400000,\"%s\"]}"

static size_t answer(const char *form, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "%s",
                                "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                "\"result\":[");
    const char *sep = "";
#define ADD(fmt, ...)                                                                              \
    do {                                                                                           \
        k += (size_t)snprintf(out + k, cap - k, "%s", sep);                                        \
        k += (size_t)snprintf(out + k, cap - k, fmt, __VA_ARGS__);                                 \
        sep = ",";                                                                                 \
    } while (0)
    static const int np[5] = {90, 0, 75, 40, 10}, ddk[5] = {100, 110, 120, 130, 10000};
    char v[32];
    if (strstr(form, "timestamp") != NULL) { /* query 1 */
        for (int h = 1; h <= 5; h++)
            ADD(M("\"host\":\"h%d\",\"pool\":\"nonpaged\""), h, "1764400000.5");
    } else if (strstr(form, "leak") != NULL) { /* query 3 */
        ADD(M("\"__name__\":\"poolwatch_leak_score\",\"host\":\"h5\",\"pool\":\"nonpaged\","
              "\"tag\":\"Ddk \""),
            "3");
        ADD(M("\"__name__\":\"poolwatch_leak_growth_bytes_per_hour\",\"host\":\"h5\",\"pool\":"
              "\"nonpaged\",\"tag\":\"Ddk \""),
            "1000");
        ADD(M("\"__name__\":\"poolwatch_leak_score\",\"host\":\"h1\",\"pool\":\"paged\","
              "\"tag\":\"Thre\""),
            "1");
        ADD(M("\"__name__\":\"poolwatch_leak_growth_bytes_per_hour\",\"host\":\"h1\",\"pool\":"
              "\"paged\",\"tag\":\"Thre\""),
            "50");
    } else if (strstr(form, "query=poolwatch_tag_bytes") != NULL) { /* query 2 */
        for (int h = 1; h <= 5; h++) {
            snprintf(v, sizeof(v), "%d", ddk[h - 1]);
            ADD(M("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"h%d\",\"pool\":\"nonpaged\","
                  "\"tag\":\"Ddk \""),
                h, v);
        }
        ADD(M("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"h1\",\"pool\":\"paged\","
              "\"tag\":\"Thre\""),
            "300");
        ADD(M("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"h2\",\"pool\":\"paged\","
              "\"tag\":\"Thre\""),
            "500");
    } else { /* query 0 */
        for (int h = 1; h <= 5; h++) {
            snprintf(v, sizeof(v), "%d", h == 2 ? h2_np : np[h - 1]);
            ADD(M("\"__name__\":\"poolwatch_pool_bytes\",\"host\":\"h%d\",\"pool\":\"nonpaged\""),
                h, v);
            /* the limit's source label (h5's collector does not send one), h4 none */
            static const char *const src[5] = {",\"source\":\"computed\"",
                                               ",\"source\":\"reported\"",
                                               ",\"source\":\"configured\"", "", ""};
            if (h != 4)
                ADD(M("\"__name__\":\"poolwatch_pool_limit_bytes\",\"host\":\"h%d\",\"pool\":"
                      "\"nonpaged\"%s"),
                    h, src[h - 1], "100");
            if (h <= 3) /* h3's history still streams in; h4 and h5 send no such series */
                ADD(M("\"__name__\":\"poolwatch_host_loading_history\",\"host\":\"h%d\""), h,
                    h == 3 ? "1" : "0");
            ADD(M("\"__name__\":\"poolwatch_host_connected\",\"host\":\"h%d\""), h, "1");
            ADD(M("\"__name__\":\"poolwatch_host_suspects\",\"host\":\"h%d\""), h,
                h == 1 || h == 5 ? "1" : "0");
            ADD(M("\"__name__\":\"poolwatch_host_owner\",\"host\":\"h%d\",\"collector\":"
                  "\"https://c%d:7443\""),
                h, h <= 3 ? 1 : 2, "1");
        }
    }
#undef ADD
    k += (size_t)snprintf(out + k, cap - k, "]}}");
    return k;
}

typedef struct pconn_s {
    uv_tcp_t tcp;
    http_parser p;
    char form[512];
    size_t form_len;
    char head[128];
    char body[8192];
    uv_write_t w;
    int done;
    int *queries;
} pconn_t;

static void p_closed(uv_handle_t *h)
{
    free(h->data);
}

static void p_written(uv_write_t *w, int status)
{
    (void)status;
    pconn_t *c = w->data;
    uv_close((uv_handle_t *)&c->tcp, p_closed);
}

static int p_body(http_parser *p, const char *at, size_t len)
{
    pconn_t *c = p->data;
    if (c->form_len + len < sizeof(c->form)) {
        memcpy(c->form + c->form_len, at, len);
        c->form_len += len;
        c->form[c->form_len] = 0;
    }
    return 0;
}

static int p_complete(http_parser *p)
{
    pconn_t *c = p->data;
    size_t n = answer(c->form, c->body, sizeof(c->body));
    assert_true(n < sizeof(c->body));
    int hn = snprintf(c->head, sizeof(c->head),
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                      "%zu\r\nConnection: close\r\n\r\n",
                      n);
    uv_buf_t b[2] = {uv_buf_init(c->head, (unsigned)hn), uv_buf_init(c->body, (unsigned)n)};
    c->done = 1;
    (*c->queries)++;
    c->w.data = c;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, b, 2, p_written);
    return 0;
}

static http_parser_settings p_settings = {.on_body = p_body, .on_message_complete = p_complete};

static void p_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)h;
    b->base = malloc(sz);
    b->len = sz;
}

static void p_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    pconn_t *c = st->data;
    if (nread > 0 && !c->done)
        http_parser_execute(&c->p, &p_settings, b->base, (size_t)nread);
    else if (nread < 0 && !c->done)
        uv_close((uv_handle_t *)&c->tcp, p_closed);
    free(b->base);
}

static void p_conn(uv_stream_t *l, int status)
{
    assert_int_equal(status, 0);
    pconn_t *c = calloc(1, sizeof(*c));
    c->queries = l->data;
    uv_tcp_init(l->loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&c->tcp), 0);
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    uv_read_start((uv_stream_t *)&c->tcp, p_alloc, p_read);
}

/* The loop and the PromQL server of a test: on 127.0.0.1 (a free port), at srv.url; queries
 * counts its answers. */
static struct {
    uv_loop_t loop;
    uv_tcp_t l;
    int queries;
    char url[64];
} srv;

static void srv_open(void)
{
    memset(&srv, 0, sizeof(srv));
    uv_loop_init(&srv.loop);
    uv_tcp_init(&srv.loop, &srv.l);
    srv.l.data = &srv.queries;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&srv.l, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv.l, 8, p_conn), 0);
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    uv_tcp_getsockname(&srv.l, (struct sockaddr *)&ss, &sl);
    snprintf(srv.url, sizeof(srv.url), "http://127.0.0.1:%d",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
}

/* A global view of srv (refreshed once at once, then on request), with the prepare hook
 * `prepare` (NULL = none) and the API's free. */
static pw_fleetq_t *view_open(void *(*prepare)(const pw_fleetq_snap_t *))
{
    pw_fleetq_opts_t fo = {.query_url = srv.url,
                           .refresh_ms = 3600000,
                           .prepare = prepare,
                           .prepared_free = prepare ? pw_api_global_prepared_free : NULL};
    pw_fleetq_t *q;
    pw_diag_t dg;
    assert_int_equal(pw_fleetq_new(&srv.loop, &fo, &q, &dg), 0);
    return q;
}

static void srv_close(void)
{
    uv_close((uv_handle_t *)&srv.l, NULL);
    uv_run(&srv.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&srv.loop), 0);
}

static void wake(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop until q has made `n` snapshots in all (or 10 s). */
static void refreshed(uv_loop_t *loop, pw_fleetq_t *q, uint64_t n)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    for (int i = 0; i < 1000; i++) {
        pw_fleetq_stats_t st;
        pw_fleetq_get_stats(q, &st);
        if (st.refreshes >= n)
            break;
        assert_int_equal(st.failures, 0);
        uv_timer_start(&t, wake, 10, 0);
        uv_run(loop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    pw_fleetq_stats_t st;
    pw_fleetq_get_stats(q, &st);
    assert_int_equal(st.refreshes, n);
}

/* GET path?query from the API as a JSON document (asserting status 200); the body's bytes in
 * `raw` when not NULL (caller frees). */
static json_t *get(pw_api_t *api, const char *path, const char *query, char **raw)
{
    char auth[] = "Bearer t";
    pw_api_req_t req = {PW_API_GET, path, query, auth, NULL, 0, 0};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(api, &req, &resp);
    if (st != 200)
        fail_msg("%s?%s: %d %.*s", path, query, st, (int)resp.body.len, resp.body.data);
    json_error_t je;
    json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, &je);
    assert_non_null(j);
    if (raw != NULL)
        *raw = strndup((const char *)resp.body.data, resp.body.len);
    pw_api_resp_close(&resp);
    return j;
}

/* Removes the digits of "as_of_ms":N from s. */
static void strip_as_of(char *s)
{
    char *p = strstr(s, "\"as_of_ms\":");
    assert_non_null(p);
    p += strlen("\"as_of_ms\":");
    char *e = p;
    while (*e >= '0' && *e <= '9')
        e++;
    memmove(p, e, strlen(e) + 1);
}

static const char *str_at(json_t *arr, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(arr, i), key));
}

static double num_at(json_t *arr, size_t i, const char *key)
{
    return json_number_value(json_object_get(json_array_get(arr, i), key));
}

static void test_refresh_prepared(void **state)
{
    (void)state;
    srv_open();

    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "t", "read"), 0);
    h2_np = 50;
    pw_fleetq_t *q = view_open(pw_api_global_prepare);
    refreshed(&srv.loop, q, 1);
    assert_int_equal(srv.queries, 4);
    const pw_fleetq_snap_t *s = pw_fleetq_snapshot(q);
    assert_non_null(s->prepared); /* made on the worker with the snapshot */
    assert_ptr_equal(s->prepared_free, pw_api_global_prepared_free);
    d.api.fleetq = q;

    /* hosts: the fullest nonpaged pool first (90, 75, 50, 10 of 100; h4 without a limit last),
     * levels from 70 % and 85 % */
    json_t *j = get(&d.api, "/api/v1/hosts", "", NULL), *h = json_object_get(j, "hosts");
    assert_string_equal(json_string_value(json_object_get(j, "scope")), "global");
    /* when the refresh started (the prepared answer was made before the snapshot was out) */
    assert_true(s->as_of_ms > 1764400000000);
    assert_int_equal(json_integer_value(json_object_get(j, "as_of_ms")), s->as_of_ms);
    assert_int_equal(json_array_size(h), 5);
    static const char *const order[5] = {"h1", "h3", "h2", "h5", "h4"};
    static const char *const level[5] = {"critical", "warn", "ok", "ok", "unknown"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(str_at(h, i, "name"), order[i]);
        assert_string_equal(str_at(h, i, "nonpaged_level"), level[i]);
    }
    assert_string_equal(str_at(h, 0, "collector"), "https://c1:7443");
    assert_string_equal(str_at(h, 3, "collector"), "https://c2:7443");
    assert_true(num_at(h, 0, "nonpaged_ratio") == 0.9);
    assert_true(json_is_null(json_object_get(json_array_get(h, 4), "nonpaged_limit_bytes")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 0), "last_seen_ms")),
                     1764400000500);
    /* the limit's source as each collector labelled it ("unknown": no limit, or no label), and
     * whether its history is still loading (order: h1, h3, h2, h5, h4) */
    static const char *const source[5] = {"computed", "configured", "reported", "unknown",
                                          "unknown"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(str_at(h, i, "nonpaged_limit_source"), source[i]);
        assert_string_equal(str_at(h, i, "paged_limit_source"), "unknown");
        assert_true(json_is_boolean(json_object_get(json_array_get(h, i), "loading_history")));
        assert_int_equal(json_is_true(json_object_get(json_array_get(h, i), "loading_history")),
                         i == 1);
    }
    json_decref(j);

    /* tags by bytes: "Ddk " nonpaged 10,460 B on 5 hosts (p50 120; p90, type 7: 130 + 0.6 *
     * (10000 - 130) = 6052), then "Thre" paged 800 B on 2 (p50 400, p90 480) */
    j = get(&d.api, "/api/v1/tags", "", NULL);
    json_t *t = json_object_get(j, "tags");
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2);
    assert_string_equal(str_at(t, 0, "tag"), "Ddk ");
    assert_string_equal(str_at(t, 0, "type"), "nonpaged");
    assert_int_equal((int)num_at(t, 0, "hosts"), 5);
    assert_true(num_at(t, 0, "bytes_total") == 10460);
    assert_true(num_at(t, 0, "bytes_min") == 100 && num_at(t, 0, "bytes_max") == 10000);
    assert_true(num_at(t, 0, "bytes_p50") == 120);
    assert_true(fabs(num_at(t, 0, "bytes_p90") - 6052) < 1e-9);
    json_t *top = json_object_get(json_array_get(t, 0), "top_hosts");
    assert_int_equal(json_array_size(top), 5);
    assert_string_equal(str_at(top, 0, "host"), "h5");
    assert_string_equal(str_at(top, 4, "host"), "h1");
    assert_string_equal(str_at(t, 1, "tag"), "Thre");
    assert_true(num_at(t, 1, "bytes_p50") == 400 && num_at(t, 1, "bytes_p90") == 480);
    json_decref(j);
    /* other parameters, made from the prepared parts: by host count, paged only */
    j = get(&d.api, "/api/v1/tags", "sort=hosts&limit=1", NULL);
    t = json_object_get(j, "tags");
    assert_int_equal(json_array_size(t), 1);
    assert_string_equal(str_at(t, 0, "tag"), "Ddk ");
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2);
    json_decref(j);
    j = get(&d.api, "/api/v1/tags", "type=paged", NULL);
    t = json_object_get(j, "tags");
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 1);
    assert_string_equal(str_at(t, 0, "tag"), "Thre");
    json_decref(j);

    /* a tag's page: h5 the one outlier, robust z = 0.6745 * (10000 - 120) / MAD 10 = 666.4 */
    j = get(&d.api, "/api/v1/tags/Ddk", "", NULL); /* poolmon's padding: "Ddk " */
    h = json_object_get(j, "hosts");
    assert_int_equal(json_array_size(h), 5);
    assert_string_equal(str_at(h, 0, "host"), "h5");
    assert_true(fabs(num_at(h, 0, "robust_z") - 0.6745 * 9880 / 10) < 1e-6);
    assert_true(json_is_true(json_object_get(json_array_get(h, 0), "outlier")));
    assert_string_equal(str_at(h, 4, "host"), "h1");
    assert_true(fabs(num_at(h, 4, "robust_z") - 0.6745 * -20 / 10) < 1e-9);
    assert_true(json_is_false(json_object_get(json_array_get(h, 4), "outlier")));
    assert_string_equal(str_at(h, 0, "collector"), "https://c2:7443");
    json_decref(j);

    /* leaks: the higher score first; one host's, its name in any case */
    j = get(&d.api, "/api/v1/leaks", "", NULL);
    t = json_object_get(j, "suspects");
    assert_int_equal(json_array_size(t), 2);
    assert_string_equal(str_at(t, 0, "host"), "h5");
    assert_true(num_at(t, 0, "score") == 3 && num_at(t, 0, "growth_bytes_per_h") == 1000);
    assert_string_equal(str_at(t, 1, "host"), "h1");
    assert_string_equal(str_at(t, 1, "type"), "paged");
    /* h5's nonpaged limit carries no source label; h1's paged pool has no limit; and the time
     * the ETA counts from is the host's newest sample */
    assert_string_equal(str_at(t, 0, "pool_limit_source"), "unknown");
    assert_string_equal(str_at(t, 1, "pool_limit_source"), "unknown");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(t, 1), "last_sample_ms")),
                     1764400000500);
    json_decref(j);
    j = get(&d.api, "/api/v1/leaks", "host=H1", NULL);
    t = json_object_get(j, "suspects");
    assert_int_equal(json_array_size(t), 1);
    assert_string_equal(str_at(t, 0, "tag"), "Thre");
    json_decref(j);

    /* a view without the hook makes the same answers at its first request */
    pw_fleetq_t *q2 = view_open(NULL);
    refreshed(&srv.loop, q2, 1);
    assert_null(pw_fleetq_snapshot(q2)->prepared);
    pw_double_t d2;
    assert_int_equal(pw_double_open_with_token(&d2, "t", "read"), 0);
    d2.api.fleetq = q2;
    static const char *const asked[][2] = {{"/api/v1/hosts", ""},
                                           {"/api/v1/tags", ""},
                                           {"/api/v1/tags", "sort=tag&type=both"},
                                           {"/api/v1/tags/Ddk ", "type=nonpaged"},
                                           {"/api/v1/leaks", ""},
                                           {"/api/v1/leaks", "host=h5"}};
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        char *r1, *r2;
        json_decref(get(&d.api, asked[i][0], asked[i][1], &r1));
        json_decref(get(&d2.api, asked[i][0], asked[i][1], &r2));
        strip_as_of(r1); /* the two views' snapshots were taken at different times */
        strip_as_of(r2);
        assert_string_equal(r1, r2);
        free(r1);
        free(r2);
    }

    /* the next snapshot: h2 at 95 % is first, from the new prepared answer */
    h2_np = 95;
    pw_fleetq_refresh(q);
    refreshed(&srv.loop, q, 2);
    assert_int_equal(srv.queries, 12);
    j = get(&d.api, "/api/v1/hosts", "", NULL);
    h = json_object_get(j, "hosts");
    assert_string_equal(str_at(h, 0, "name"), "h2");
    assert_string_equal(str_at(h, 0, "nonpaged_level"), "critical");
    assert_string_equal(str_at(h, 1, "name"), "h1");
    assert_int_equal(json_integer_value(json_object_get(j, "as_of_ms")),
                     pw_fleetq_snapshot(q)->as_of_ms);
    json_decref(j);

    d.api.fleetq = NULL;
    d2.api.fleetq = NULL;
    pw_double_close(&d);
    pw_double_close(&d2);
    pw_fleetq_close(q);
    pw_fleetq_close(q2);
    srv_close();
}

/* Closed while its job runs on the worker (held in the prepare hook): the job ends, then the
 * view and its new snapshot are freed (LeakSanitizer). */
static uv_sem_t hook_in, hook_go;

static void *held_prepare(const pw_fleetq_snap_t *s)
{
    uv_sem_post(&hook_in);
    uv_sem_wait(&hook_go);
    return pw_api_global_prepare(s);
}

static void test_close_while_parsing(void **state)
{
    (void)state;
    srv_open();
    assert_int_equal(uv_sem_init(&hook_in, 0), 0);
    assert_int_equal(uv_sem_init(&hook_go, 0), 0);
    pw_fleetq_t *q = view_open(held_prepare);
    uv_timer_t t;
    uv_timer_init(&srv.loop, &t);
    int in = 0;
    for (int i = 0; i < 1000 && !(in = uv_sem_trywait(&hook_in) == 0); i++) {
        uv_timer_start(&t, wake, 10, 0);
        uv_run(&srv.loop, UV_RUN_ONCE);
    }
    assert_true(in);
    assert_int_equal(srv.queries, 4);
    pw_fleetq_close(q); /* the job runs: it cannot be cancelled */
    uv_sem_post(&hook_go);
    uv_close((uv_handle_t *)&t, NULL);
    srv_close();
    uv_sem_destroy(&hook_in);
    uv_sem_destroy(&hook_go);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_build), cmocka_unit_test(test_errors),
                                       cmocka_unit_test(test_refresh_prepared),
                                       cmocka_unit_test(test_close_while_parsing)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
