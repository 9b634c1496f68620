/* test_remote_write.c: Prometheus remote write 1.0 (collector/export/remote_write.h).
 *  - encoding: a fleet built here (through ingest: double.h) -> request bodies ->
 *    snappy_uncompress -> unpacked with the generated prompb code -> exact names, labels
 *    (sorted), values and timestamps, worked out by hand from the fleet below; a host without
 *    a new sample is not sent again;
 *  - the sender against an HTTP server in this test on loopback (libuv + http-parser) that
 *    checks the headers: 500 then 204 (one retry, accepted once), 400 (dropped, counted, not
 *    retried), a new token after a reload, a full queue dropping the oldest requests;
 *  - https (httpc.h over tls.h) against a TLS server in this test that requires a client
 *    certificate (deploy/pki.sh makes the CA and certificates): accepted with the right CA
 *    and client certificate; refused (PW_EAUTH, retried, never accepted) with the system CA
 *    bundle, which does not hold the test CA;
 *  - option errors: the message names the option and the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "alloc.h"
#include "codec.h"
#include "delta.h"
#include "double.h"
#include "fleet.h"
#include "log.h"
#include "prom_remote.pb-c.h"
#include "remote_write.h"
#include "tls.h"
#include "winevent.h"

#define T_ALPHA 1764400000005ull /* 2025-11-29T07:06:40.005Z */
#define T_BETA  1764400010000ull

/* ---- the fleet ---------------------------------------------------------------------------- */

/* The fleet is made through the product's paths (double.h): alpha and gamma are hosts restored
 * from the store with a last table (alpha's agent said Hello first, with a nonpaged limit, and
 * left); beta's agent is connected (its Hello alone does not start a stream, so the restored
 * table stays). The pass's results (alpha's pressure, the suspects) go through the analysis
 * test seams. */
static pw_double_t dbl;
static const pw_fleet_t *fleet;
static pw_suspect_t suspects[3];

/* An agent's Hello for `name` giving a nonpaged limit of `np_limit` bytes; the agent leaves. */
static pw_host_t *hello_with_limit(const char *name, uint64_t np_limit)
{
    char aid[300];
    Poolwatch__V1__Hello hello;
    pw_double_hello_init(&hello, name, 32, aid);
    Poolwatch__V1__PoolLimit lim = POOLWATCH__V1__POOL_LIMIT__INIT;
    lim.bytes = np_limit;
    lim.source = POOLWATCH__V1__LIMIT_SOURCE__LIMIT_REPORTED;
    lim.detail = "";
    hello.nonpaged_limit = &lim;
    pw_host_t *h = pw_double_hello(&dbl, &hello, 0);
    assert_non_null(h);
    return h;
}

/* beta's table, its nonpaged total `np` */
static void restore_beta(uint64_t np)
{
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_sample_add(&s, "Proc", 4, PW_POOL_NONPAGED, 5, 2, 3, 777), 0);
    s.totals.nonpaged_bytes = np;
    s.totals.paged_bytes = 2000;
    assert_non_null(pw_double_restore(&dbl, "beta", 32, &s));
    pw_sample_close(&s);
}

static void build_fleet(void)
{
    assert_int_equal(pw_double_open(&dbl), 0);
    fleet = pw_ingest_fleet(dbl.ing);
    static const uint8_t odd[4] = {'A', 'b', 0x01, 'z'};
    /* alpha: 4 rows; by bytes: odd/paged 9000, then the two 5000s in table order, then 100 */
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_sample_add(&s, "Ddk ", 4, PW_POOL_NONPAGED, 20, 10, 10, 5000), 0);
    assert_int_equal(pw_sample_add(&s, odd, 4, PW_POOL_PAGED, 9, 2, 7, 9000), 0);
    assert_int_equal(pw_sample_add(&s, "Tiny", 4, PW_POOL_NONPAGED, 1, 0, 1, 100), 0);
    assert_int_equal(pw_sample_add(&s, "Ddk ", 4, PW_POOL_PAGED, 4, 2, 2, 5000), 0);
    s.totals.nonpaged_bytes = 123456;
    s.totals.paged_bytes = 654321;
    s.totals.nonpaged_limit_bytes = 5;                    /* the Hello's limit wins */
    s.totals.paged_limit_bytes = 2147483648u;             /* only in the sample */
    pw_host_t *a = hello_with_limit("alpha", 1073741824); /* from the Hello */
    assert_ptr_equal(pw_double_restore(&dbl, "alpha", 32, &s), a);
    pw_sample_close(&s);
    a->last_seen_ms = T_ALPHA; /* as the store gives it back */
    pw_analysis_host_t res = {.have_pressure = 1};
    res.np.eta_ms = 3600500; /* 3600.5 s */
    res.pg.eta_ms = -1;      /* no ETA: no series */
    assert_int_equal(pw_analysis_run_set_host(dbl.an, a, &res), 0);
    /* beta: one row, connected */
    pw_host_t *b = pw_double_stream(&dbl, "beta", 32, 1);
    assert_non_null(b);
    restore_beta(1000);
    b->last_seen_ms = T_BETA;
    /* gamma: never sent a sample: no series */
    pw_sample_init(&s);
    assert_int_equal(pw_sample_add(&s, "Gone", 4, PW_POOL_PAGED, 1, 0, 1, 1), 0);
    pw_host_t *g = pw_double_restore(&dbl, "gamma", 32, &s);
    pw_sample_close(&s);
    assert_non_null(g);
    assert_int_equal(fleet->n, 3);
    assert_ptr_equal(fleet->hosts[0], a);
    assert_ptr_equal(fleet->hosts[1], b);
    assert_ptr_equal(fleet->hosts[2], g);
    assert_int_equal(pw_host_nrows(a), 4);
    assert_true(pw_host_connected(b));
    assert_int_equal(pw_host_nrows(b), 1);
    memset(suspects, 0, sizeof(suspects));
    snprintf(suspects[0].host, sizeof(suspects[0].host), "beta");
    snprintf(suspects[1].host, sizeof(suspects[1].host), "alpha");
    snprintf(suspects[2].host, sizeof(suspects[2].host), "beta");
    assert_int_equal(pw_analysis_run_publish(dbl.an, suspects, 3), 0);
}

static void drop_fleet(void)
{
    pw_double_close(&dbl);
    fleet = NULL;
}

/* Series as text "name{k=v,...} value @ts", in the order they were sent. */
#define GOT_LINES 512
typedef struct got_s {
    char line[GOT_LINES][200];
    size_t n;
    size_t bodies;
    size_t body_series[16];
} got_t;

static void decode_body(got_t *g, const uint8_t *body, size_t len)
{
    size_t ulen;
    assert_int_equal(snappy_uncompressed_length((const char *)body, len, &ulen), SNAPPY_OK);
    char *raw = malloc(ulen ? ulen : 1);
    assert_int_equal(snappy_uncompress((const char *)body, len, raw, &ulen), SNAPPY_OK);
    Prometheus__WriteRequest *wr =
        prometheus__write_request__unpack(NULL, ulen, (const uint8_t *)raw);
    free(raw);
    assert_non_null(wr);
    if (g->bodies < 16)
        g->body_series[g->bodies] = wr->n_timeseries;
    g->bodies++;
    for (size_t i = 0; i < wr->n_timeseries; i++) {
        const Prometheus__TimeSeries *ts = wr->timeseries[i];
        assert_true(ts->n_labels >= 2);
        assert_string_equal(ts->labels[0]->name, "__name__");
        for (size_t k = 1; k < ts->n_labels; k++) /* sorted by name, no duplicates */
            assert_true(strcmp(ts->labels[k - 1]->name, ts->labels[k]->name) < 0);
        assert_int_equal(ts->n_samples, 1);
        assert_true(g->n < GOT_LINES);
        char *o = g->line[g->n++];
        int p = snprintf(o, 200, "%s{", ts->labels[0]->value);
        for (size_t k = 1; k < ts->n_labels; k++)
            p += snprintf(o + p, (size_t)(200 - p), "%s%s=%s", k > 1 ? "," : "",
                          ts->labels[k]->name, ts->labels[k]->value);
        snprintf(o + p, (size_t)(200 - p), "} %.17g @%lld", ts->samples[0]->value,
                 (long long)ts->samples[0]->timestamp);
    }
    prometheus__write_request__free_unpacked(wr, NULL);
}

static int collect_emit(void *arg, uint8_t *body, size_t len, size_t series)
{
    got_t *g = arg;
    size_t before = g->n;
    decode_body(g, body, len);
    assert_int_equal(g->n - before, series);
    pw_free(body);
    return 0;
}

static const char *const want_alpha[] = {
    "poolwatch_pool_bytes{host=alpha,pool=nonpaged} 123456 @1764400000005",
    "poolwatch_pool_bytes{host=alpha,pool=paged} 654321 @1764400000005",
    "poolwatch_pool_limit_bytes{host=alpha,pool=nonpaged,source=reported} 1073741824 "
    "@1764400000005",
    "poolwatch_pool_limit_bytes{host=alpha,pool=paged,source=unknown} 2147483648 @1764400000005",
    "poolwatch_pool_exhaustion_seconds{host=alpha,pool=nonpaged} 3600.5 @1764400000005",
    "poolwatch_host_connected{host=alpha} 0 @1764400000005",
    "poolwatch_host_stopped{host=alpha} 0 @1764400000005",
    "poolwatch_host_loading_history{host=alpha} 0 @1764400000005",
    "poolwatch_host_suspects{host=alpha} 1 @1764400000005",
    "poolwatch_tag_bytes{host=alpha,pool=paged,tag=0x4162017a} 9000 @1764400000005",
    "poolwatch_tag_allocations{host=alpha,pool=paged,tag=0x4162017a} 7 @1764400000005",
    "poolwatch_tag_bytes{host=alpha,pool=nonpaged,tag=Ddk } 5000 @1764400000005",
    "poolwatch_tag_allocations{host=alpha,pool=nonpaged,tag=Ddk } 10 @1764400000005",
    "poolwatch_tag_bytes{host=alpha,pool=paged,tag=Ddk } 5000 @1764400000005",
    "poolwatch_tag_allocations{host=alpha,pool=paged,tag=Ddk } 2 @1764400000005",
};

static const char *const want_beta[] = {
    "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1000 @1764400010000",
    "poolwatch_pool_bytes{host=beta,pool=paged} 2000 @1764400010000",
    /* no poolwatch_pool_limit_bytes: beta's limits are unknown (absent, not 0) */
    "poolwatch_host_connected{host=beta} 1 @1764400010000",
    "poolwatch_host_stopped{host=beta} 0 @1764400010000",
    "poolwatch_host_loading_history{host=beta} 0 @1764400010000",
    "poolwatch_host_suspects{host=beta} 2 @1764400010000",
    "poolwatch_tag_bytes{host=beta,pool=nonpaged,tag=Proc} 777 @1764400010000",
    "poolwatch_tag_allocations{host=beta,pool=nonpaged,tag=Proc} 3 @1764400010000",
};

#define N_ALPHA (sizeof(want_alpha) / sizeof(*want_alpha))
#define N_BETA  (sizeof(want_beta) / sizeof(*want_beta))

/* The exhaustion series carries the host's one ETA, as /hosts gives it, and so the global view
 * does: a pool with too few points for its own trend (an import of 2-3 screens) gets its
 * suspect's (the new-user trial: the global view's hosts had none), one that ran out 0 s.
 * alpha's paged pool: 2 points, limit 2,147,483,648 B, used 654,321 B: 2,146,829,327 B of room;
 * its suspect grows 2,146,829,327 B/h over 3 points in 30 min: 1 h = 3600 s exactly (within
 * 24 x 30 min). */
static void test_encode_host_eta(void **state)
{
    (void)state;
    build_fleet();
    pw_analysis_host_t res = {.have_pressure = 1};
    res.np.eta_ms = 3600500;
    res.pg.eta_ms = res.pg.eta_soon_ms = res.pg.eta_late_ms = -1;
    res.pg.limit_bytes = 2147483648u;
    res.pg.used_bytes = 654321;
    res.pg.n_window = 2;
    res.pg.level = PW_LEVEL_OK;
    assert_int_equal(pw_analysis_run_set_host(dbl.an, fleet->hosts[0], &res), 0);
    suspects[1].pool = PW_POOL_PAGED;
    suspects[1].d.rate_bytes_per_h = 2146829327.0;
    suspects[1].d.rate_low_bytes_per_h = suspects[1].d.rate_high_bytes_per_h = 2146829327.0;
    suspects[1].d.steps = 2;
    suspects[1].d.span_ms = 1800000;
    assert_int_equal(pw_analysis_run_publish(dbl.an, suspects, 3), 0);
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    got_t *g = calloc(1, sizeof(*g));
    assert_true(pw_remote_write_encode(fleet, dbl.an, 0, 0, &cur, collect_emit, g) > 0);
    int found = 0;
    for (size_t i = 0; i < g->n; i++)
        found += strcmp(g->line[i], "poolwatch_pool_exhaustion_seconds{host=alpha,pool=paged} "
                                    "3600 @1764400000005") == 0;
    assert_int_equal(found, 1);
    /* at its limit: ran out, 0 s left */
    res.pg.used_bytes = res.pg.limit_bytes;
    assert_int_equal(pw_analysis_run_set_host(dbl.an, fleet->hosts[0], &res), 0);
    fleet->hosts[0]->last_seen_ms = T_ALPHA + 1; /* sent again */
    memset(g, 0, sizeof(*g));
    pw_remote_write_cursor_free(&cur);
    memset(&cur, 0, sizeof(cur));
    assert_true(pw_remote_write_encode(fleet, dbl.an, 0, 0, &cur, collect_emit, g) > 0);
    found = 0;
    for (size_t i = 0; i < g->n; i++)
        found += strncmp(g->line[i], "poolwatch_pool_exhaustion_seconds{host=alpha,pool=paged} 0 ",
                         58) == 0;
    assert_int_equal(found, 1);
    pw_remote_write_cursor_free(&cur);
    free(g);
    drop_fleet();
}

static void test_encode(void **state)
{
    (void)state;
    build_fleet();
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    got_t *g = calloc(1, sizeof(*g));
    /* 3 rows per host: alpha 8 + 1 ETA + 2 x 3 = 15, beta 6 (no limit series: both limits
     * unknown) + 2 x min(1, 3) = 8, gamma none: 23 */
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 5, &cur, collect_emit, g), 23);
    assert_int_equal(g->n, 23);
    assert_int_equal(g->bodies, 5); /* 5 + 5 + 5 + 5 + 3 */
    assert_int_equal(g->body_series[0], 5);
    assert_int_equal(g->body_series[3], 5);
    assert_int_equal(g->body_series[4], 3);
    for (size_t i = 0; i < g->n; i++) /* beta has no limit series at all */
        assert_null(strstr(g->line[i], "poolwatch_pool_limit_bytes{host=beta"));
    for (size_t i = 0; i < N_ALPHA; i++)
        assert_string_equal(g->line[i], want_alpha[i]);
    for (size_t i = 0; i < N_BETA; i++)
        assert_string_equal(g->line[N_ALPHA + i], want_beta[i]);

    /* nothing new: nothing sent */
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 5, &cur, collect_emit, g), 0);
    assert_int_equal(g->bodies, 0);

    /* beta's next sample: only beta, stamped with its time */
    fleet->hosts[1]->last_seen_ms = T_BETA + 10000;
    restore_beta(1500);
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 8);
    assert_int_equal(g->bodies, 1);
    assert_string_equal(g->line[0],
                        "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1500 @1764400020000");
    assert_string_equal(g->line[7], "poolwatch_tag_allocations{host=beta,pool=nonpaged,tag=Proc} 3 "
                                    "@1764400020000");

    /* tags_per_host 0: host-level series only; 2: the two largest rows (formula: host series
     * (8 for alpha, whose limits are known; 6 for beta, whose are not) + hosts x 2 x min(rows,
     * tags_per_host), plus alpha's one ETA) */
    pw_remote_write_cursor_free(&cur);
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 0, 0, &cur, collect_emit, g),
                     PW_REMOTE_WRITE_HOST_SERIES + 6 + 1);
    pw_remote_write_cursor_free(&cur);
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 2, 0, &cur, collect_emit, g),
                     PW_REMOTE_WRITE_HOST_SERIES + 6 + 1 + 2 * 2 + 2 * 1);
    assert_string_equal(g->line[10], want_alpha[10]);
    assert_string_equal(g->line[13],
                        "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1500 @1764400020000");
    pw_remote_write_cursor_free(&cur);
    /* a large tags_per_host (the sorting path) selects the same rows in the same order */
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 10000, 0, &cur, collect_emit, g),
                     15 + 2 + 8);
    for (size_t i = 0; i < N_ALPHA; i++)
        assert_string_equal(g->line[i], want_alpha[i]);
    assert_string_equal(
        g->line[N_ALPHA],
        "poolwatch_tag_bytes{host=alpha,pool=nonpaged,tag=Tiny} 100 @1764400000005");
    pw_remote_write_cursor_free(&cur);
    /* Samples older than the cursor's limit are skipped as if sent: alpha (T_ALPHA) is, beta
     * (T_BETA + 10000 by now) is not. */
    memset(g, 0, sizeof(*g));
    cur.min_ts_ms = T_ALPHA + 1;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 8);
    assert_string_equal(g->line[0],
                        "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1500 @1764400020000");
    memset(g, 0, sizeof(*g));
    cur.min_ts_ms = 0;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 0);
    assert_int_equal(cur.ahead, 0);
    pw_remote_write_cursor_free(&cur);

    /* Samples newer than the cursor's max_ts_ms (a clock in the future) are skipped, counted,
     * and the cursor stays: beta (T_BETA + 10000) is ahead of T_BETA, alpha is not. */
    memset(g, 0, sizeof(*g));
    cur.max_ts_ms = T_BETA;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 15);
    assert_int_equal(cur.ahead, 1);
    assert_string_equal(g->line[0], want_alpha[0]);
    /* still ahead at the next interval: counted again, nothing sent */
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 0);
    assert_int_equal(cur.ahead, 1);
    /* the clock moves on: beta's sample goes out, stamped with its own time */
    cur.max_ts_ms = T_BETA + 10000;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 8);
    assert_int_equal(cur.ahead, 0);
    assert_string_equal(g->line[0],
                        "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1500 @1764400020000");
    /* beta's agent jumps to 2099 (4102444800000 = 2100-01-01T00:00:00Z) then its clock is
     * fixed: the 2099 sample is never sent, the next right one is */
    memset(g, 0, sizeof(*g));
    fleet->hosts[1]->last_seen_ms = 4102444800000ull - 1000;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 0);
    assert_int_equal(cur.ahead, 1);
    fleet->hosts[1]->last_seen_ms = T_BETA + 20000;
    cur.max_ts_ms = T_BETA + 30000;
    assert_int_equal(pw_remote_write_encode(fleet, dbl.an, 3, 0, &cur, collect_emit, g), 8);
    assert_int_equal(cur.ahead, 0);
    assert_string_equal(g->line[0],
                        "poolwatch_pool_bytes{host=beta,pool=nonpaged} 1500 @1764400030000");
    pw_remote_write_cursor_free(&cur);
    free(g);
    drop_fleet();
}

/* ---- log capture -------------------------------------------------------------------------- */

typedef struct logcap_s {
    char line[32][400];
    int level[32];
    size_t n;
} logcap_t;

/* The writer's timer encodes in slices (pw_remote_write_encode_slice) so that a fleet's encode
 * does not hold the loop: slices send exactly what one encode sends, in the same order. 40
 * restored hosts of one row each, limits unknown: 6 host series + 2 of the one row = 8 each, 320
 * in all; with a budget of 1 ns a slice stops at its first clock check (16 hosts), so the fleet's
 * end comes at the third slice, each slice ending its own body. */
static void test_encode_slices(void **state)
{
    (void)state;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    const pw_fleet_t *f = pw_ingest_fleet(d.ing);
    for (int i = 0; i < 40; i++) {
        pw_sample_t s;
        pw_sample_init(&s);
        char tag[5], name[16];
        snprintf(tag, sizeof(tag), "T%03d", i);
        snprintf(name, sizeof(name), "host%02d", i);
        assert_int_equal(pw_sample_add(&s, tag, 4, PW_POOL_NONPAGED, 9, 2, 7, 100 + (uint64_t)i),
                         0);
        pw_host_t *h = pw_double_restore(&d, name, 32, &s);
        assert_non_null(h);
        h->last_seen_ms = T_ALPHA + (uint64_t)i;
        pw_sample_close(&s);
    }
    pw_remote_write_policy_t pol = {.tags_per_host = 1, .max_tags_per_host = 1};
    pw_remote_write_cursor_t c1 = {.sent_ms = NULL}, c2 = {.sent_ms = NULL};
    got_t *g1 = calloc(1, sizeof(*g1)), *g2 = calloc(1, sizeof(*g2));
    assert_int_equal(pw_remote_write_encode_policy(f, d.an, &pol, 0, &c1, collect_emit, g1), 320);
    assert_int_equal(g1->bodies, 1);
    int done = 0, slices = 0;
    int64_t n = 0;
    while (!done) {
        int64_t r = pw_remote_write_encode_slice(f, d.an, &pol, 0, &c2, collect_emit, g2, 1, &done);
        assert_true(r >= 0);
        n += r;
        slices++;
        assert_int_equal(c2.pos, done ? 0 : 16 * (size_t)slices);
    }
    assert_int_equal(slices, 3);
    assert_int_equal(n, 320);
    assert_int_equal(g2->n, 320);
    assert_int_equal(g2->bodies, 3);
    assert_int_equal(g2->body_series[0], 16 * 8);
    assert_int_equal(g2->body_series[2], 8 * 8);
    for (size_t i = 0; i < g1->n; i++)
        assert_string_equal(g2->line[i], g1->line[i]);
    /* nothing new: a sliced encode finds nothing and is done at once */
    memset(g2, 0, sizeof(*g2));
    slices = 0;
    for (done = 0; !done; slices++)
        assert_int_equal(
            pw_remote_write_encode_slice(f, d.an, &pol, 0, &c2, collect_emit, g2, 1, &done), 0);
    assert_int_equal(g2->bodies, 0);
    free(g1);
    free(g2);
    pw_remote_write_cursor_free(&c1);
    pw_remote_write_cursor_free(&c2);
    pw_double_close(&d);
}

static logcap_t logs;

static void log_sink(int level, const char *module, const char *line, void *arg)
{
    (void)arg;
    if (strcmp(module, "remote_write") != 0 || level > PW_LOG_LVL_INFO || logs.n >= 32)
        return;
    logs.level[logs.n] = level;
    snprintf(logs.line[logs.n++], sizeof(logs.line[0]), "%s", line);
}

/* How many captured lines at `level` contain `needle`. */
static size_t logged(int level, const char *needle)
{
    size_t k = 0;
    for (size_t i = 0; i < logs.n; i++)
        if (logs.level[i] == level && strstr(logs.line[i], needle) != NULL)
            k++;
    return k;
}

/* ---- options ------------------------------------------------------------------------------ */

static void test_options(void **state)
{
    (void)state;
    pw_diag_t d;
    pw_remote_write_opts_t o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(pw_remote_write_check(&o, &d), 0); /* off */
    o.url = "ftp://prom:9090/api/v1/write";
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.field, "url");
    assert_string_equal(d.msg, "remote_write.url: ftp://prom:9090/api/v1/write: the scheme must "
                               "be http:// or https://");
    o.url = "prom:9090/api/v1/write";
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.msg, "remote_write.url: prom:9090/api/v1/write: not an "
                               "http[s]://host[:port][/path] URL");
    o.url = "http://127.0.0.1:9090/api/v1/write";
    assert_int_equal(pw_remote_write_check(&o, &d), 0);
    o.bearer_token_file = "/nonexistent/pw-token";
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.field, "bearer_token_file");
    assert_string_equal(d.msg, "remote_write.bearer_token_file: /nonexistent/pw-token: No such "
                               "file or directory");
    char tok[] = "/tmp/pw-rw-tok-XXXXXX";
    int fd = mkstemp(tok);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, " \n", 2), 2);
    close(fd);
    o.bearer_token_file = tok;
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    char want[300];
    snprintf(want, sizeof(want), "remote_write.bearer_token_file: %s: empty", tok);
    assert_string_equal(d.msg, want);
    o.bearer_token_file = NULL;
    const char *h1[] = {"X-Scope-OrgID team1"};
    o.headers = h1;
    o.n_headers = 1;
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.field, "headers");
    assert_string_equal(d.msg, "remote_write.headers: 'X-Scope-OrgID team1': not 'Name: value'");
    const char *h2[] = {"X-Scope-OrgID: team1", "Content-Type: text/plain"};
    o.headers = h2;
    o.n_headers = 2;
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.msg, "remote_write.headers: 'Content-Type' is set by the collector "
                               "itself");
    const char *h3[] = {"X Org: 1"};
    o.headers = h3;
    o.n_headers = 1;
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.msg, "remote_write.headers: 'X Org: 1': the name has a byte a header "
                               "name may not have (0x20)");
    o.headers = h2;
    assert_int_equal(pw_remote_write_check(&o, &d), 0);
    o.n_headers = 0;
    /* https: the CA file is loaded by the check */
    o.url = "https://prom.example:443/api/v1/write";
    o.ca_file = "/nonexistent/ca.pem";
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ETLS);
    assert_string_equal(d.field, "ca_file");
    assert_non_null(strstr(d.msg, "/nonexistent/ca.pem"));
    o.url = "http://127.0.0.1:9090/api/v1/write";
    assert_int_equal(pw_remote_write_check(&o, &d), PW_ECONFIG);
    assert_string_equal(d.field, "ca_file");
    unlink(tok);
}

/* ---- in-test HTTP server ------------------------------------------------------------------ */

#define HDR_N 6
static const char *const hdr_names[HDR_N] = {
    "Content-Encoding", "Content-Type",  "X-Prometheus-Remote-Write-Version",
    "User-Agent",       "Authorization", "X-Scope-OrgID"};

typedef struct srv_s {
    uv_tcp_t listener;
    pw_tls_ctx_t *ctx; /* the https server's */
    int port;
    int requests;
    int script[8]; /* status for request i; after the script: 204 */
    char url[256];
    char hdr[HDR_N][128];
    uint8_t *body;
    size_t body_len;
} srv_t;

typedef struct sconn_s {
    uv_tcp_t tcp;
    pw_tls_conn_t *tls; /* https: the answer goes here */
    srv_t *srv;
    http_parser p;
    int field; /* index in hdr_names of the header being read, -1 = other */
    uv_write_t w;
    char resp[128];
    int done;
} sconn_t;

static int s_url(http_parser *p, const char *at, size_t len)
{
    sconn_t *c = p->data;
    size_t have = strlen(c->srv->url);
    if (have + len < sizeof(c->srv->url)) {
        memcpy(c->srv->url + have, at, len);
        c->srv->url[have + len] = 0;
    }
    return 0;
}

static int s_field(http_parser *p, const char *at, size_t len)
{
    sconn_t *c = p->data;
    c->field = -1;
    for (int i = 0; i < HDR_N; i++)
        if (strlen(hdr_names[i]) == len && strncasecmp(at, hdr_names[i], len) == 0)
            c->field = i;
    return 0;
}

static int s_value(http_parser *p, const char *at, size_t len)
{
    sconn_t *c = p->data;
    if (c->field >= 0 && len < sizeof(c->srv->hdr[0]))
        snprintf(c->srv->hdr[c->field], sizeof(c->srv->hdr[0]), "%.*s", (int)len, at);
    return 0;
}

static int s_body(http_parser *p, const char *at, size_t len)
{
    sconn_t *c = p->data;
    srv_t *s = c->srv;
    s->body = realloc(s->body, s->body_len + len);
    memcpy(s->body + s->body_len, at, len);
    s->body_len += len;
    return 0;
}

static void s_closed(uv_handle_t *h)
{
    free(h->data);
}

static void s_written(uv_write_t *w, int status)
{
    (void)status;
    sconn_t *c = w->data;
    uv_close((uv_handle_t *)&c->tcp, s_closed);
}

static int s_complete(http_parser *p)
{
    sconn_t *c = p->data;
    srv_t *s = c->srv;
    int st = s->requests < 8 && s->script[s->requests] ? s->script[s->requests] : 204;
    s->requests++;
    int n = snprintf(c->resp, sizeof(c->resp),
                     "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", st);
    c->done = 1;
    if (c->tls != NULL) { /* the client closes once it has the answer */
        pw_tls_write(c->tls, c->resp, (size_t)n);
        return 0;
    }
    uv_buf_t b = uv_buf_init(c->resp, (unsigned)n);
    c->w.data = c;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, s_written);
    return 0;
}

static http_parser_settings s_settings = {.on_url = s_url,
                                          .on_header_field = s_field,
                                          .on_header_value = s_value,
                                          .on_body = s_body,
                                          .on_message_complete = s_complete};

static void s_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)h;
    b->base = malloc(sz);
    b->len = sz;
}

static void s_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    sconn_t *c = st->data;
    if (nread > 0 && !c->done)
        http_parser_execute(&c->p, &s_settings, b->base, (size_t)nread);
    else if (nread < 0 && !c->done)
        uv_close((uv_handle_t *)&c->tcp, s_closed);
    free(b->base);
}

/* Each connection carries one request: its record starts afresh. */
static void srv_new_request(srv_t *s, sconn_t *c)
{
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
    s->url[0] = 0;
    memset(s->hdr, 0, sizeof(s->hdr));
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
}

static void s_conn(uv_stream_t *l, int status)
{
    assert_int_equal(status, 0);
    srv_t *s = l->data;
    sconn_t *c = calloc(1, sizeof(*c));
    c->srv = s;
    uv_tcp_init(l->loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&c->tcp), 0);
    srv_new_request(s, c);
    uv_read_start((uv_stream_t *)&c->tcp, s_alloc, s_read);
}

/* Listens on 127.0.0.1 (a free port) with `cb`; returns the port. */
static int listen_loopback(uv_loop_t *loop, uv_tcp_t *l, void *data, uv_connection_cb cb)
{
    uv_tcp_init(loop, l);
    l->data = data;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(l, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)l, 8, cb), 0);
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    uv_tcp_getsockname(l, (struct sockaddr *)&ss, &sl);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void srv_start(uv_loop_t *loop, srv_t *srv)
{
    srv->port = listen_loopback(loop, &srv->listener, srv, s_conn);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the loop until accepted + refused samples reach `n` (or 5 s), then `extra_ms` more. */
static void run_until(uv_loop_t *loop, pw_remote_write_t *w, uint64_t n, uint64_t extra_ms)
{
    uint64_t end = now_ms() + 5000;
    pw_remote_write_stats_t st;
    for (;;) {
        pw_remote_write_get_stats(w, &st);
        if (st.samples + st.failed_samples >= n || now_ms() > end)
            break;
        uv_run(loop, UV_RUN_ONCE);
    }
    end = now_ms() + extra_ms;
    while (now_ms() < end)
        uv_run(loop, UV_RUN_NOWAIT);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_sender(void **state)
{
    (void)state;
    build_fleet();
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv_t srv;
    memset(&srv, 0, sizeof(srv));
    srv.script[0] = 500; /* then 204 */
    srv.script[2] = 400;
    srv_start(&loop, &srv);
    char url[128], tok[] = "/tmp/pw-rw-tok-XXXXXX";
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write?x=1", srv.port);
    int fd = mkstemp(tok);
    assert_true(fd >= 0);
    close(fd);
    write_file(tok, "s3cret-1\n");
    const char *hdrs[] = {"X-Scope-OrgID: team1"};
    pw_remote_write_opts_t o;
    memset(&o, 0, sizeof(o));
    o.url = url;
    o.tags_per_host = 3;
    o.bearer_token_file = tok;
    o.headers = hdrs;
    o.n_headers = 1;
    o.backoff_initial_ms = 50;
    o.max_sample_age_ms = UINT64_MAX; /* the fleet's samples are from 2025 */
    pw_remote_write_t *w;
    pw_diag_t d;
    assert_int_equal(pw_remote_write_new(&loop, &o, &w, &d), 0);
    memset(&logs, 0, sizeof(logs));
    pw_log_set_sink(log_sink, NULL);

    /* 500 then 204: one request of 23 series, retried once, counted once */
    uint64_t t0 = now_ms();
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 23);
    run_until(&loop, w, 23, 0);
    pw_remote_write_stats_t st;
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(srv.requests, 2);
    assert_true(now_ms() - t0 >= 50); /* the backoff was waited */
    assert_int_equal(st.samples, 23);
    assert_int_equal(st.requests, 1);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.failed_samples, 0);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.last_status, 204);
    assert_int_equal(st.bytes, srv.body_len);
    assert_string_equal(srv.url, "/api/v1/write?x=1");
    assert_string_equal(srv.hdr[0], "snappy");
    assert_string_equal(srv.hdr[1], "application/x-protobuf");
    assert_string_equal(srv.hdr[2], "0.1.0");
    assert_string_equal(srv.hdr[3], "poolwatch-collector/" PW_TEST_VERSION);
    assert_string_equal(srv.hdr[4], "Bearer s3cret-1");
    assert_string_equal(srv.hdr[5], "team1");
    got_t *g = calloc(1, sizeof(*g));
    decode_body(g, srv.body, srv.body_len);
    assert_int_equal(g->n, 23);
    assert_string_equal(g->line[0], want_alpha[0]);
    assert_string_equal(g->line[22], want_beta[7]);
    /* the log: one WARN naming the URL and the status, one INFO when it works again */
    char want[300];
    snprintf(want, sizeof(want), "%s: status 500: retrying with back-off (1 request queued)", url);
    assert_int_equal(logs.n, 2);
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    snprintf(want, sizeof(want),
             "%s: sending works again (status 204); 0 samples refused and 0 dropped so far", url);
    assert_int_equal(logged(PW_LOG_LVL_INFO, want), 1);
    memset(&logs, 0, sizeof(logs));

    /* 400: dropped, counted, not retried; the token read again (SIGHUP) is used */
    write_file(tok, "s3cret-2");
    assert_int_equal(pw_remote_write_reload_token(w, &d), 0);
    fleet->hosts[1]->last_seen_ms = T_BETA + 10000;
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 8);
    run_until(&loop, w, 23 + 8, 300);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(srv.requests, 3);
    assert_int_equal(st.samples, 23);
    assert_int_equal(st.failed_samples, 8);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.last_status, 400);
    assert_int_equal(st.queued, 0);
    assert_string_equal(srv.hdr[4], "Bearer s3cret-2");
    snprintf(want, sizeof(want),
             "%s: status 400: refused: 8 samples dropped (not retried) (1 request queued)", url);
    assert_int_equal(logs.n, 1);
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    memset(&logs, 0, sizeof(logs));
    /* a token file that went bad keeps the old token */
    write_file(tok, "");
    assert_int_equal(pw_remote_write_reload_token(w, &d), PW_ECONFIG);
    pw_remote_write_close(w);

    /* a full queue: max_queue 1, 5 series per request, nothing answers (closed port): the
     * 23 series make 5 requests queued before the first is sent; 4 are dropped, oldest first */
    uv_close((uv_handle_t *)&srv.listener, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    pw_remote_write_opts_t o2;
    memset(&o2, 0, sizeof(o2));
    o2.url = url;
    o2.tags_per_host = 3;
    o2.max_queue = 1;
    o2.max_series_per_request = 5;
    o2.backoff_initial_ms = 20;
    o2.max_sample_age_ms = UINT64_MAX;
    assert_int_equal(pw_remote_write_new(&loop, &o2, &w, &d), 0);
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 23);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.dropped_samples, 20); /* 5 + 5 + 5 + 5; the last request (3) stays */
    assert_int_equal(st.queued, 1);
    run_until(&loop, w, 0, 300); /* connection refused: retried, never accepted */
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.samples, 0);
    assert_true(st.retries >= 1);
    assert_int_equal(st.last_status, 0);
    assert_int_equal(st.last_error, UV_ECONNREFUSED);
    /* one WARN for the drops (4 requests, rate-limited), one for the failure while it keeps
     * failing (retried every 20 ms; the next WARN is due after a minute) */
    snprintf(want, sizeof(want),
             "%s: queue full (max_queue 1): dropped the oldest request, 5 samples (5 dropped so "
             "far)",
             url);
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    snprintf(want, sizeof(want), "%s: %s: retrying with back-off", url,
             pw_strerror(UV_ECONNREFUSED)); /* "Connection refused", not "connection closed" */
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    assert_int_equal(logs.n, 2);
    /* Closing with the last request unsent says so (it was silent). */
    pw_remote_write_close(w);
    snprintf(want, sizeof(want), "%s: 1 request (3 samples) not sent at shutdown", url);
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    pw_log_set_sink(NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    free(srv.body);
    free(g);
    unlink(tok);
    drop_fleet();
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A host whose sample time is ahead of the collector's clock by more than the skew (default
 * 5 minutes) is not sent, counted, named in one WARN; once its clock is right it is sent. */
static void test_sender_clock(void **state)
{
    (void)state;
    build_fleet();
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv_t srv;
    memset(&srv, 0, sizeof(srv));
    srv_start(&loop, &srv);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/w", srv.port);
    pw_remote_write_opts_t o;
    memset(&o, 0, sizeof(o));
    o.url = url;
    o.tags_per_host = 3;
    pw_remote_write_t *w;
    pw_diag_t d;
    assert_int_equal(pw_remote_write_new(&loop, &o, &w, &d), 0);
    memset(&logs, 0, sizeof(logs));
    pw_log_set_sink(log_sink, NULL);
    uint64_t now = wall_ms();
    fleet->hosts[0]->last_seen_ms = now + 3600000; /* alpha: an hour ahead */
    fleet->hosts[1]->last_seen_ms = now - 1000;    /* beta: right */
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 8);
    run_until(&loop, w, 8, 0);
    pw_remote_write_stats_t st;
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.samples, 8);
    assert_int_equal(st.hosts_ahead, 1);
    assert_int_equal(st.ahead_skips, 1);
    char want[300];
    snprintf(want, sizeof(want),
             "%s: 1 host not sent (alpha: newest sample 3600 s ahead of this collector's clock)",
             url);
    assert_int_equal(logged(PW_LOG_LVL_WARN, want), 1);
    assert_int_equal(logs.n, 1);
    /* the next interval: still ahead, counted again, not logged again */
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 0);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.hosts_ahead, 1);
    assert_int_equal(st.ahead_skips, 2);
    assert_int_equal(logs.n, 1);
    /* alpha's clock fixed: its new sample goes out */
    fleet->hosts[0]->last_seen_ms = now - 500;
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 15);
    run_until(&loop, w, 8 + 15, 0);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.samples, 23);
    assert_int_equal(st.hosts_ahead, 0);
    assert_int_equal(st.ahead_skips, 2);
    assert_int_equal(srv.requests, 2);
    pw_remote_write_close(w);
    /* max_clock_skew_ms UINT64_MAX: no limit */
    o.max_clock_skew_ms = UINT64_MAX;
    assert_int_equal(pw_remote_write_new(&loop, &o, &w, &d), 0);
    fleet->hosts[0]->last_seen_ms = now + 3600000;
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 23);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.hosts_ahead, 0);
    pw_log_set_sink(NULL, NULL);
    pw_remote_write_close(w);
    uv_close((uv_handle_t *)&srv.listener, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    free(srv.body);
    drop_fleet();
}

/* ---- https ------------------------------------------------------------------------------- */

static void t_data(pw_tls_conn_t *t, const uint8_t *data, size_t len)
{
    sconn_t *c = pw_tls_data(t);
    if (!c->done)
        http_parser_execute(&c->p, &s_settings, (const char *)data, len);
}

static void t_close(pw_tls_conn_t *t, int status, const char *msg)
{
    (void)status;
    (void)msg;
    free(pw_tls_data(t));
}

static const pw_tls_cbs_t t_cbs = {NULL, t_data, t_close};

static void t_conn(uv_stream_t *l, int status)
{
    assert_int_equal(status, 0);
    srv_t *s = l->data;
    sconn_t *c = calloc(1, sizeof(*c));
    c->srv = s;
    srv_new_request(s, c);
    assert_int_equal(pw_tls_accept(&c->tls, l, s->ctx, &t_cbs, c, NULL), 0);
}

static void test_sender_https(void **state)
{
    (void)state;
    char dir[] = "/tmp/pw-rw-pki-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[600], ca[300], cert[300], key[300], ccert[300], ckey[300];
    snprintf(cmd, sizeof(cmd), "%s/deploy/pki.sh %s --agent rw >/dev/null 2>&1", PW_SOURCE_DIR,
             dir);
    assert_int_equal(system(cmd), 0);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    snprintf(cert, sizeof(cert), "%s/collector.pem", dir); /* names localhost and 127.0.0.1 */
    snprintf(key, sizeof(key), "%s/collector.key", dir);
    snprintf(ccert, sizeof(ccert), "%s/agent-rw.pem", dir);
    snprintf(ckey, sizeof(ckey), "%s/agent-rw.key", dir);
    build_fleet();
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv_t srv;
    memset(&srv, 0, sizeof(srv));
    pw_tls_ctx_opts_t so = {
        .role = PW_TLS_SERVER, .ca_file = ca, .cert_file = cert, .key_file = key};
    assert_int_equal(pw_tls_ctx_new(&srv.ctx, &so, NULL), 0);
    srv.port = listen_loopback(&loop, &srv.listener, &srv, t_conn);
    char url[128];
    snprintf(url, sizeof(url), "https://localhost:%d/api/v1/write", srv.port);

    pw_remote_write_opts_t o;
    memset(&o, 0, sizeof(o));
    o.url = url;
    o.ca_file = ca;
    o.cert_file = ccert;
    o.key_file = ckey;
    o.tags_per_host = 1;
    o.max_sample_age_ms = UINT64_MAX;
    pw_remote_write_t *w;
    pw_diag_t d;
    assert_int_equal(pw_remote_write_new(&loop, &o, &w, &d), 0);
    /* alpha 8 + 1 + 2, beta 6 (its limits unknown: no limit series) + 2 */
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 19);
    run_until(&loop, w, 19, 0);
    pw_remote_write_stats_t st;
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.samples, 19);
    assert_int_equal(st.last_status, 204);
    assert_int_equal(st.retries, 0);
    assert_int_equal(srv.requests, 1);
    assert_string_equal(srv.url, "/api/v1/write");
    assert_string_equal(srv.hdr[0], "snappy");
    assert_string_equal(srv.hdr[2], "0.1.0");
    assert_string_equal(srv.hdr[4], ""); /* no token configured: no header */
    got_t *g = calloc(1, sizeof(*g));
    decode_body(g, srv.body, srv.body_len);
    assert_int_equal(g->n, 19);
    assert_string_equal(g->line[9], want_alpha[9]); /* alpha's largest row */
    free(g);
    pw_remote_write_close(w);

    /* the system bundle does not hold the test CA: the server is not trusted */
    o.ca_file = NULL;
    o.backoff_initial_ms = 20;
    assert_int_equal(pw_remote_write_new(&loop, &o, &w, &d), 0);
    fleet->hosts[0]->last_seen_ms++;
    assert_int_equal(pw_remote_write_collect(w, fleet, dbl.an), 19);
    run_until(&loop, w, 0, 300);
    pw_remote_write_get_stats(w, &st);
    assert_int_equal(st.samples, 0);
    assert_int_equal(st.last_status, 0);
    assert_int_equal(st.last_error, PW_EAUTH);
    assert_true(st.retries >= 1);
    assert_int_equal(st.queued, 1);
    assert_int_equal(srv.requests, 1);
    pw_remote_write_close(w);
    uv_close((uv_handle_t *)&srv.listener, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    pw_tls_ctx_free(srv.ctx);
    free(srv.body);
    assert_int_equal(uv_loop_close(&loop), 0);
    drop_fleet();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- the export policy ---------------------------------------------------------------------- */

#define TS0 1764400100000ull

/* Host delta's table at one sample: six nonpaged rows, bytes given, diff = bytes / 10. */
static void send_delta(pw_delta_enc_t *e, pw_host_t *h, uint64_t seq, uint64_t ts,
                       const uint64_t bytes[6])
{
    static const char *const tags[6] = {"Big ", "Pin1", "MovA", "MovB", "MovC", "Stay"};
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = seq;
    s.timestamp_ms = ts;
    s.totals.nonpaged_bytes = 20000;
    s.totals.paged_bytes = 30000;
    for (int i = 0; i < 6; i++)
        assert_int_equal(pw_sample_add(&s, tags[i], 4, PW_POOL_NONPAGED, bytes[i] / 10, 0,
                                       bytes[i] / 10, bytes[i]),
                         0);
    assert_int_equal(pw_double_send(&dbl, e, h, &s), 0);
    pw_sample_close(&s);
}

/* The tags of the poolwatch_tag_bytes lines of g, in order, as "Big ,Pin1,...". */
static void tag_list(const got_t *g, char *out, size_t size)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < g->n; i++) {
        const char *t = strstr(g->line[i], "poolwatch_tag_bytes{");
        const char *tag = t ? strstr(t, "tag=") : NULL;
        if (tag == NULL)
            continue;
        o += (size_t)snprintf(out + o, size - o, "%s%.4s", o ? "," : "", tag + 4);
    }
}

/* Movers, pinned rows, the cap, hysteresis, leak and owner series, worked out by hand: top 1
 * (Big), pinned Pin*, cap 3 rows, hold 30 s. */
static void test_policy(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&dbl), 0);
    fleet = pw_ingest_fleet(dbl.ing);
    pw_host_t *h = pw_double_stream(&dbl, "delta", 64, 1);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    memset(suspects, 0, sizeof(suspects));
    snprintf(suspects[0].host, sizeof(suspects[0].host), "delta");
    memcpy(suspects[0].tag, "MovA", 4);
    suspects[0].tag_len = 4;
    suspects[0].pool = PW_POOL_NONPAGED;
    suspects[0].d.rate_bytes_per_h = 3600;
    suspects[0].d.score = 1.5;
    assert_int_equal(pw_analysis_run_publish(dbl.an, suspects, 1), 0);
    pw_remote_write_policy_t pol = {.tags_per_host = 1,
                                    .movers = 1,
                                    .hold_ms = 30000,
                                    .max_tags_per_host = 3,
                                    .pinned_tags = "Pin*",
                                    .leak_series = 1,
                                    .owner_url = "https://c1:7443"};
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    got_t *g = calloc(1, sizeof(*g));
    char tags[200];

    /* 1: the first encode of a host has no movers: Big (top) and Pin1 (pinned) */
    uint64_t b[6] = {10000, 50, 100, 200, 300, 400};
    send_delta(&e, h, 1, TS0, b);
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     13);
    static const char *const want1[] = {
        "poolwatch_pool_bytes{host=delta,pool=nonpaged} 20000 @1764400100000",
        "poolwatch_pool_bytes{host=delta,pool=paged} 30000 @1764400100000",
        "poolwatch_host_connected{host=delta} 1 @1764400100000",
        "poolwatch_host_stopped{host=delta} 0 @1764400100000",
        "poolwatch_host_loading_history{host=delta} 0 @1764400100000",
        "poolwatch_host_suspects{host=delta} 1 @1764400100000",
        "poolwatch_host_owner{collector=https://c1:7443,host=delta} 1 @1764400100000",
        "poolwatch_tag_bytes{host=delta,pool=nonpaged,tag=Big } 10000 @1764400100000",
        "poolwatch_tag_allocations{host=delta,pool=nonpaged,tag=Big } 1000 @1764400100000",
        "poolwatch_tag_bytes{host=delta,pool=nonpaged,tag=Pin1} 50 @1764400100000",
        "poolwatch_tag_allocations{host=delta,pool=nonpaged,tag=Pin1} 5 @1764400100000",
        "poolwatch_leak_growth_bytes_per_hour{host=delta,pool=nonpaged,tag=MovA} 3600 "
        "@1764400100000",
        "poolwatch_leak_score{host=delta,pool=nonpaged,tag=MovA} 1.5 @1764400100000",
    };
    for (size_t i = 0; i < sizeof(want1) / sizeof(*want1); i++)
        assert_string_equal(g->line[i], want1[i]);

    /* 2 (+10 s): MovA, MovB, MovC change; one place left under the cap: MovC (most bytes);
     * MovA and MovB capped */
    b[2] = 150, b[3] = 260, b[4] = 390;
    send_delta(&e, h, 2, TS0 + 10000, b);
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     7 + 6 + 2);
    tag_list(g, tags, sizeof(tags));
    assert_string_equal(tags, "Big ,Pin1,MovC");
    assert_int_equal(cur.rows_capped, 2);
    assert_int_equal(cur.rows_exported, 3);

    /* 3 (+20 s): MovA changes again, MovC does not: MovC is held (hysteresis), MovA capped */
    b[2] = 200;
    send_delta(&e, h, 3, TS0 + 20000, b);
    memset(g, 0, sizeof(*g));
    pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g);
    tag_list(g, tags, sizeof(tags));
    assert_string_equal(tags, "Big ,Pin1,MovC");
    assert_string_equal(
        g->line[11], "poolwatch_tag_bytes{host=delta,pool=nonpaged,tag=MovC} 390 @1764400120000");
    assert_int_equal(cur.rows_capped, 3);

    /* 4 (+50 s): nothing changed for 40 s > hold: MovC leaves */
    send_delta(&e, h, 4, TS0 + 50000, b);
    memset(g, 0, sizeof(*g));
    pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g);
    tag_list(g, tags, sizeof(tags));
    assert_string_equal(tags, "Big ,Pin1");

    /* 5 (+60 s): MovB changes: the free place is its */
    b[3] = 270;
    send_delta(&e, h, 5, TS0 + 60000, b);
    memset(g, 0, sizeof(*g));
    pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g);
    tag_list(g, tags, sizeof(tags));
    assert_string_equal(tags, "Big ,Pin1,MovB");

    /* the agent leaves without a new sample: poolwatch_host_connected alone, stamped now */
    pw_ingest_detach(dbl.ing, h, &dbl.session);
    cur.now_ms = TS0 + 70000;
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     1);
    assert_string_equal(g->line[0], "poolwatch_host_connected{host=delta} 0 @1764400170000");
    memset(g, 0, sizeof(*g)); /* said once */
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     0);

    /* the analysis drops the suspect without a new sample: the host's suspects, stamped now */
    assert_int_equal(pw_analysis_run_publish(dbl.an, suspects, 0), 0);
    cur.now_ms = TS0 + 80000;
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     1);
    assert_string_equal(g->line[0], "poolwatch_host_suspects{host=delta} 0 @1764400180000");

    /* without movers, pinned, leak and owner series: the former selection (top 1) */
    pw_remote_write_policy_t plain = {.tags_per_host = 1};
    pw_remote_write_cursor_t cur2 = {.sent_ms = NULL};
    memset(g, 0, sizeof(*g));
    assert_int_equal(
        pw_remote_write_encode_policy(fleet, dbl.an, &plain, 0, &cur2, collect_emit, g), 6 + 2);
    tag_list(g, tags, sizeof(tags));
    assert_string_equal(tags, "Big ");

    free(g);
    pw_remote_write_cursor_free(&cur);
    pw_remote_write_cursor_free(&cur2);
    pw_delta_enc_close(&e);
    drop_fleet();
}

/* poolwatch_host_stopped: "calm" says Goodbye and leaves, "crash" leaves without a word (a
 * killed agent, a host whose pool ran out). Without a new sample, the next encode sends each
 * host's change alone, stamped now: calm connected 0 and stopped 1, crash connected 0 only
 * (stopped stays 0: the rules' HostSilent fires for it, not for calm). Said once. calm's agent
 * comes back (Hello, sample): stopped 0 with the sample's series. */
static void test_stopped(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&dbl), 0);
    fleet = pw_ingest_fleet(dbl.ing);
    pw_host_t *calm = pw_double_stream(&dbl, "calm", 64, 1);
    pw_host_t *crash = pw_double_stream(&dbl, "crash", 64, 1);
    assert_non_null(calm);
    assert_non_null(crash);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = TS0;
    s.totals.nonpaged_bytes = 1000;
    s.totals.paged_bytes = 2000;
    assert_int_equal(pw_sample_add(&s, "Ddk ", 4, PW_POOL_NONPAGED, 2, 0, 2, 512), 0);
    assert_int_equal(pw_double_send_first(&dbl, calm, &s), 0);
    assert_int_equal(pw_double_send_first(&dbl, crash, &s), 0);
    pw_remote_write_policy_t pol = {.tags_per_host = 0};
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    got_t *g = calloc(1, sizeof(*g));
    cur.now_ms = TS0 + 1000;
    /* 2 pool bytes, connected, stopped, loading history, suspects per host (no limits, no rows) */
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     2 * 6);
    assert_string_equal(g->line[3], "poolwatch_host_stopped{host=calm} 0 @1764400100000");
    assert_string_equal(g->line[9], "poolwatch_host_stopped{host=crash} 0 @1764400100000");

    Poolwatch__V1__Goodbye bye = POOLWATCH__V1__GOODBYE__INIT;
    bye.timestamp_ms = TS0;
    bye.reason = "SIGTERM";
    pw_ingest_goodbye(dbl.ing, calm, &bye);
    pw_ingest_detach(dbl.ing, calm, &dbl.session);
    pw_ingest_detach(dbl.ing, crash, &dbl.session);
    cur.now_ms = TS0 + 60000;
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     3);
    assert_string_equal(g->line[0], "poolwatch_host_connected{host=calm} 0 @1764400160000");
    assert_string_equal(g->line[1], "poolwatch_host_stopped{host=calm} 1 @1764400160000");
    assert_string_equal(g->line[2], "poolwatch_host_connected{host=crash} 0 @1764400160000");
    cur.now_ms = TS0 + 120000;
    memset(g, 0, sizeof(*g)); /* said once */
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     0);

    /* calm's agent is back: a Hello clears the stop, its next sample carries stopped 0 */
    assert_ptr_equal(pw_double_stream(&dbl, "calm", 64, 1), calm);
    s.seq = 2;
    s.timestamp_ms = TS0 + 180000;
    assert_int_equal(pw_double_send_first(&dbl, calm, &s), 0);
    cur.now_ms = TS0 + 181000;
    memset(g, 0, sizeof(*g));
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     6);
    assert_string_equal(g->line[2], "poolwatch_host_connected{host=calm} 1 @1764400280000");
    assert_string_equal(g->line[3], "poolwatch_host_stopped{host=calm} 0 @1764400280000");
    pw_sample_close(&s);
    free(g);
    pw_remote_write_cursor_free(&cur);
    drop_fleet();
}

/* A Linux host's rows carry poolwatch_tag_held_bytes (the slab cache's slabs) after their two
 * series, as /metrics; a Windows host whose agent sent a srv 2019 has
 * poolwatch_pool_empty_event_timestamp_seconds{pool="nonpaged"} (the event's time in seconds:
 * 1796047392486 ms), stamped with the sample that carried it. */
static void test_held_and_empty(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&dbl), 0);
    fleet = pw_ingest_fleet(dbl.ing);
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, "lnx", 64, aid);
    hm.os_family = "linux";
    pw_host_t *l = pw_double_hello(&dbl, &hm, 1);
    pw_host_t *w = pw_double_stream(&dbl, "win", 32, 1);
    assert_non_null(l);
    assert_non_null(w);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = TS0;
    s.flags = PW_SAMPLE_NO_ALLOCS;
    /* case25's dentry_cache: 1061172 objects of 140 B in 37899 one-page slabs */
    assert_int_equal(
        pw_sample_add(&s, "dentry_cache", 12, PW_POOL_NONPAGED, 0, 0, 1061172, 148564080), 0);
    s.entries[0].held_bytes = 155234304;
    assert_int_equal(pw_double_send_first(&dbl, l, &s), 0);
    pw_sample_reset(&s);
    s.seq = 1;
    s.timestamp_ms = TS0;
    assert_int_equal(pw_sample_add(&s, "Ddk ", 4, PW_POOL_NONPAGED, 2, 0, 2, 512), 0);
    pw_winevent_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.ts_ms = 1796047392486ull;
    ev.event_id = 2019;
    ev.record_id = 48213;
    ev.pool = PW_WINEVENT_POOL_NONPAGED;
    snprintf(ev.provider, sizeof(ev.provider), "Srv");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(pw_double_send_events(&dbl, &e, w, &s, &ev, 1), 0);
    pw_delta_enc_close(&e);
    pw_remote_write_policy_t pol = {.tags_per_host = 1};
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    got_t *g = calloc(1, sizeof(*g));
    cur.now_ms = TS0 + 1000;
    /* lnx: 6 host series + 3 of its row; win: 6 + 1 pool-empty time + 2 of its row */
    assert_int_equal(pw_remote_write_encode_policy(fleet, dbl.an, &pol, 0, &cur, collect_emit, g),
                     9 + 9);
    assert_string_equal(g->line[6], "poolwatch_tag_bytes{host=lnx,pool=nonpaged,tag=dentry_cache} "
                                    "148564080 @1764400100000");
    assert_string_equal(g->line[8], "poolwatch_tag_held_bytes{host=lnx,pool=nonpaged,"
                                    "tag=dentry_cache} 155234304 @1764400100000");
    /* 1796047392.486 as the nearest double, printed with 17 digits */
    assert_string_equal(g->line[15], "poolwatch_pool_empty_event_timestamp_seconds{host=win,"
                                     "pool=nonpaged} 1796047392.4860001 @1764400100000");
    for (size_t i = 9; i < g->n; i++) /* the Windows host's row has no held series */
        assert_null(strstr(g->line[i], "held"));
    pw_sample_close(&s);
    free(g);
    pw_remote_write_cursor_free(&cur);
    drop_fleet();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),        cmocka_unit_test(test_encode_host_eta),
        cmocka_unit_test(test_encode_slices), cmocka_unit_test(test_options),
        cmocka_unit_test(test_sender),        cmocka_unit_test(test_sender_clock),
        cmocka_unit_test(test_sender_https),  cmocka_unit_test(test_policy),
        cmocka_unit_test(test_stopped),       cmocka_unit_test(test_held_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
