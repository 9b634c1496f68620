/* bench_dashboard.c: the web dashboard's first paint with 1,000 hosts.
 *
 *   dashboard.first_paint_ms  median of 5 cold loads of the fleet page in headless Chromium
 *                             (Debian's /usr/bin/chromium driven by playwright-core:
 *                             tests/web/first_paint.js). Measured by the page itself: from the
 *                             start of the navigation (TLS connection, HTML, CSS, app.js and
 *                             uPlot, GET /api/v1/hosts of 1,000 hosts, render of 1,000 rows)
 *                             to two animation frames after the rows are in the DOM. Each load
 *                             is a new browser context (no cache, new connection); the browser
 *                             start is not counted. Also dashboard.first_paint_max_ms and
 *                             Chromium's first-contentful-paint (the header, before the data).
 *
 * The server is the real query API listener (collector/api/http.c, web.c, api_v1.c) on
 * loopback with a throw-away PKI (deploy/pki.sh), over a fleet built in memory through the
 * collector's ingest (tests/collector/double.h: each agent's Hello, then its samples as
 * frames): 1,000 hosts of 40 tags with 360 samples of nonpaged history each (an hour of 10 s
 * samples) and limits that spread them over ok / warn / critical, and the pressure that the
 * analysis pass (every 30 s) leaves for each host, as in a running collector. Needs node and
 * chromium (deploy/install-deps.sh --browser).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "api.h"
#include "codec.h"
#include "../collector/double.h" /* the collector test double */

#define HOSTS 1000
#define RUNS  5

static pw_double_t g_d; /* store, ingest, analysis results: the API's deps */
static uv_loop_t g_loop;
static pw_http_t *g_http;
static uv_async_t g_stop;

static uint64_t rng = 11;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Host `name`'s agent says Hello (Windows 10.0 build 17763 x64, a computed nonpaged limit of
 * `limit` bytes) and leaves: the host is filed as the collector files it. */
static pw_host_t *hello(const char *name, uint64_t limit)
{
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, name, 32, aid);
    Poolwatch__V1__PoolLimit lim = POOLWATCH__V1__POOL_LIMIT__INIT;
    lim.bytes = limit;
    lim.source = (Poolwatch__V1__LimitSource)PW_LIMIT_COMPUTED;
    lim.detail = "";
    hm.os_family = "windows";
    hm.os_version = "10.0";
    hm.os_build = 17763;
    hm.arch = "x64";
    hm.nonpaged_limit = &lim;
    pw_host_t *h = pw_double_hello(&g_d, &hm, 0);
    if (h == NULL)
        abort();
    return h;
}

static void build_fleet(uint64_t now_ms)
{
    pw_sample_t s;
    pw_sample_init(&s);
    for (int i = 0; i < HOSTS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "SRV%04d.corp.example", i);
        uint64_t limit = (uint64_t)(256 + rnd() % 768) << 20;
        pw_host_t *h = hello(name, limit);
        pw_sample_reset(&s);
        uint64_t np = 0, pg = 0;
        for (int t = 0; t < 40; t++) {
            char tag[5];
            snprintf(tag, sizeof(tag), "T%03d", t);
            uint64_t a = 1000 + rnd() % 100000, f = a - rnd() % 1000, b = (a - f) * 256;
            pw_sample_add(&s, tag, 4, t % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED, a, f, a - f, b);
            *(t % 2 ? &pg : &np) += b;
        }
        /* Used between 5 % and 95 % of the limit: every level appears. */
        uint64_t used = limit / 20 + rnd() % (limit * 9 / 10);
        s.totals.paged_bytes = pg;
        s.totals.nonpaged_limit_bytes = limit;
        s.totals.physical_memory_bytes = 16ull << 30;
        /* An hour of 10 s samples from the agent, the last one at now_ms with `used`: the
         * same table, the nonpaged total moving (the host's history ring). */
        static pw_point_t pts[360];
        pw_delta_enc_t e;
        pw_delta_enc_init(&e, 32);
        for (int k = 359; k >= 0; k--) {
            uint64_t ts = now_ms - (uint64_t)k * 10000, v = used - (uint64_t)k * (rnd() % 4096);
            s.seq = (uint64_t)(360 - k);
            s.timestamp_ms = ts;
            s.totals.nonpaged_bytes = v;
            if (pw_double_send(&g_d, &e, h, &s) != 0)
                abort();
            pts[359 - k].ts_ms = (int64_t)ts;
            pts[359 - k].v = (double)v;
        }
        pw_delta_enc_close(&e);
        if (pw_ingest_commit(g_d.ing, NULL) < 0) /* the group commit */
            abort();
        /* What the collector's analysis pass leaves for each host (analysis_run.h), which
         * GET /api/v1/hosts serves: the nonpaged pressure; paged has no limit here. */
        pw_analysis_host_t res;
        memset(&res, 0, sizeof(res));
        if (pw_pressure_eval(pts, 360, limit, NULL, &res.np) != 0)
            abort();
        res.pg.level = PW_LEVEL_UNKNOWN;
        res.pg.eta_ms = -1;
        res.have_pressure = 1;
        if (pw_analysis_run_set_host(g_d.an, h, &res) != 0)
            abort();
    }
    pw_sample_close(&s);
}

static void on_stop(uv_async_t *a)
{
    pw_http_stop(g_http);
    uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg)
{
    (void)arg;
    uv_run(&g_loop, UV_RUN_DEFAULT);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    char dir[] = "/tmp/pw_bench_dashboard.XXXXXX", cmd[4096], path[512], spki[128] = "";
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(cmd, sizeof(cmd), "bash '%s/deploy/pki.sh' '%s' >/dev/null 2>&1", PW_SOURCE_DIR, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_dashboard: deploy/pki.sh failed\n");
        return 1;
    }
    snprintf(cmd, sizeof(cmd),
             "openssl x509 -in '%s/collector.pem' -pubkey -noout | openssl pkey -pubin -outform "
             "der | openssl dgst -sha256 -binary | base64",
             dir);
    FILE *p = popen(cmd, "r");
    if (p == NULL || fgets(spki, sizeof(spki), p) == NULL)
        return 1;
    pclose(p);
    spki[strcspn(spki, "\n")] = '\0';
    const char *token = "bench-read-token";
    char hx[65];
    pw_tokens_hash(token, hx);
    snprintf(path, sizeof(path), "%s/tokens", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return 1;
    fprintf(f, "%s read bench\n", hx);
    fclose(f);
    static char ca[512], cert[512], key[512], tokens[512], listen[] = "127.0.0.1:0";
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    snprintf(cert, sizeof(cert), "%s/collector.pem", dir);
    snprintf(key, sizeof(key), "%s/collector.key", dir);
    snprintf(tokens, sizeof(tokens), "%s", path);
    pw_http_opts_t ho = {
        .listen = listen, .ca_file = ca, .cert_file = cert, .key_file = key, .tokens_file = tokens};
    if (pw_double_open(&g_d) != 0)
        return 1;
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    build_fleet((uint64_t)tv.tv_sec * 1000);
    pw_diag_t d;
    if (uv_loop_init(&g_loop) != 0 || pw_http_start(&g_loop, &ho, &g_d.api, &g_http, &d) != 0) {
        fprintf(stderr, "bench_dashboard: http start: %s\n", d.msg);
        return 1;
    }
    uv_async_init(&g_loop, &g_stop, on_stop);
    pthread_t th;
    if (pthread_create(&th, NULL, loop_main, NULL) != 0)
        return 1;

    snprintf(cmd, sizeof(cmd),
             "'%s/deploy/web-deps.sh' && node '%s/tests/web/first_paint.js' "
             "https://127.0.0.1:%d '%s' '%s' %d",
             PW_SOURCE_DIR, PW_SOURCE_DIR, pw_http_port(g_http), token, spki, RUNS);
    double fp[RUNS], fcp[RUNS];
    int n = 0, rows = 0, status = 0;
    p = popen(cmd, "r");
    char line[256];
    while (p && fgets(line, sizeof(line), p))
        if (n < RUNS && sscanf(line, "%lf %lf %d", &fp[n], &fcp[n], &rows) == 3)
            n++;
    if (p == NULL || pclose(p) != 0 || n != RUNS || rows != HOSTS) {
        fprintf(stderr, "bench_dashboard: browser run failed (%d loads, %d rows)\n", n, rows);
        status = 1;
    } else {
        qsort(fp, RUNS, sizeof(fp[0]), cmp_d);
        qsort(fcp, RUNS, sizeof(fcp[0]), cmp_d);
        printf("BENCH dashboard.first_paint_ms %.0f ms\n", fp[RUNS / 2]);
        printf("BENCH dashboard.first_paint_max_ms %.0f ms\n", fp[RUNS - 1]);
        printf("BENCH dashboard.first_contentful_paint_ms %.0f ms\n", fcp[RUNS / 2]);
        fprintf(stderr, "# %d hosts, %d cold loads, target first_paint <= 1000 ms\n", HOSTS, RUNS);
    }
    uv_async_send(&g_stop);
    pthread_join(th, NULL);
    uv_run(&g_loop, UV_RUN_DEFAULT);
    uv_loop_close(&g_loop);
    pw_double_close(&g_d);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        status = 1;
    return status;
}
