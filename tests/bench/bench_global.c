/* bench_global.c: the global fleet view over 3 collectors x 3,000 hosts (issue 18 item 5),
 * through the product's code: three collectors' fleets (the collector test double: ingest and
 * the analysis' published suspects), each host restored with a 300-row table (a vocabulary of
 * 600 tags) and pool limits, 20 leak suspects per collector; each collector's remote write
 * (pw_remote_write_t, the export policy's defaults, its own [fleet] self_url) sends into
 * Debian's VictoriaMetrics on loopback; then the global view (pw_fleetq_t, [fleet] query_url)
 * reads it back, and the API answers from it (pw_api_handle, server side, no TLS).
 *   BENCH global.fleet_api_p99_ms  p99 over GET /api/v1/hosts, /api/v1/tags (100 aggregates),
 *                                  /api/v1/leaks, /api/v1/tags/{tag} (outliers), interleaved
 *                                  (the dashboard's fleet page and tag page), one every 100 ms
 *                                  (PW_BENCH_GLOBAL_INTERVAL_MS), each timed from when it was
 *                                  due, through 5 refreshes (PW_BENCH_GLOBAL_REFRESHES) of the
 *                                  snapshot every 10 s: the requests made while a refresh runs
 *                                  and the first of each endpoint after each refresh included
 *   BENCH global.fleet_api_p50_ms
 *   BENCH global.fleet_api_first_p99_ms  p99 of those first requests after a refresh alone
 *   BENCH global.fleet_api_cold_max_ms  the slowest of them
 *   BENCH global.fleet_api_max_ms  the slowest request
 *   BENCH global.refresh_ms        one refresh of the snapshot: the four PromQL queries
 *                                  (VictoriaMetrics' work included), their parsing and the
 *                                  answers' parts (on a worker thread), the measured phase's
 *   BENCH global.refresh_body_bytes  the four answers' bytes
 * PW_BENCH_GLOBAL_HOSTS changes the hosts per collector (default 3000). PW_BENCH_GLOBAL_PREPARE=0
 * leaves out the prepare hook (the answers' parts are then made at the first request of each
 * snapshot, on the loop, as before the hook), for comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "../collector/double.h"
#include "alloc.h"
#include "bench_proc.h"
#include "fleetq.h"
#include "remote_write.h"

#define NC    3
#define ROWS  300
#define VOCAB 600

static uv_loop_t loop;

static void on_wake(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop until done(arg) or timeout_ms. */
static int spin_until(int (*done)(void *), void *arg, uint64_t timeout_ms)
{
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_update_time(&loop);
    uint64_t end = uv_now(&loop) + timeout_ms;
    int ok = 0;
    while (!(ok = done(arg)) && uv_now(&loop) < end) {
        uv_timer_start(&t, on_wake, 100, 0);
        uv_run(&loop, UV_RUN_ONCE);
        uv_update_time(&loop);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return ok;
}

static int sent(void *arg)
{
    pw_remote_write_stats_t st;
    pw_remote_write_get_stats(arg, &st);
    return st.queued == 0;
}

static uint64_t refreshes_wanted;
static int refreshed(void *arg)
{
    pw_fleetq_stats_t st;
    pw_fleetq_get_stats(arg, &st);
    return st.refreshes >= refreshes_wanted;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the measured phase ------------------------------------------------------------------ */

#define MAX_REQ 100000

static const char *const paths[4][2] = {{"/api/v1/hosts", ""},
                                        {"/api/v1/tags", "limit=100"},
                                        {"/api/v1/leaks", ""},
                                        {"/api/v1/tags/Ab00", ""}};

static struct {
    pw_api_t *api;
    pw_fleetq_t *q;
    uv_timer_t tick, refresh;
    uint64_t t0, interval_ns, next; /* request k arrives at t0 + k * interval_ns */
    uint64_t nref, took_sum, ref0, ref_last, after_last; /* requests since the last refresh */
    const pw_fleetq_snap_t *seen[4]; /* the snapshot each endpoint last answered from */
    uint64_t seen_as_of[4], seen_took[4];
    double ms[MAX_REQ], first_ms[MAX_REQ], worst[4], first_worst[4];
    size_t n, n_first, bytes[4];
    char load[2][64];
    int failed, stopping;
} rq;

static void load_avg(char out[64])
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (f == NULL || fgets(out, 64, f) == NULL)
        snprintf(out, 64, "?");
    if (f)
        fclose(f);
    char *sp = out;
    for (int k = 0; k < 3 && sp; k++) /* the three averages only */
        sp = strchr(sp + (k > 0), ' ');
    if (sp)
        *sp = '\0';
}

static void on_refresh_tick(uv_timer_t *t)
{
    (void)t;
    pw_fleetq_refresh(rq.q);
}

static void on_tick(uv_timer_t *t)
{
    char auth[] = "Bearer t";
    uint64_t now = uv_hrtime();
    while (!rq.stopping && rq.t0 + rq.next * rq.interval_ns <= now && rq.n < MAX_REQ) {
        uint64_t arrival = rq.t0 + rq.next * rq.interval_ns;
        int k = (int)(rq.next++ % 4);
        pw_api_req_t req = {PW_API_GET, paths[k][0], paths[k][1], auth, NULL, 0, 0};
        pw_api_resp_t resp;
        pw_api_resp_init(&resp);
        const pw_fleetq_snap_t *sn = pw_fleetq_snapshot(rq.q);
        int first =
            sn != rq.seen[k] || sn->as_of_ms != rq.seen_as_of[k] || sn->took_ms != rq.seen_took[k];
        int st = pw_api_handle(rq.api, &req, &resp);
        now = uv_hrtime();
        if (st != 200) {
            fprintf(stderr, "%s: %d %.*s\n", paths[k][0], st, (int)resp.body.len, resp.body.data);
            rq.failed = 1;
        }
        rq.seen[k] = sn;
        rq.seen_as_of[k] = sn->as_of_ms;
        rq.seen_took[k] = sn->took_ms;
        rq.bytes[k] = resp.body.len;
        pw_api_resp_close(&resp);
        double ms = (double)(now - arrival) / 1e6;
        rq.ms[rq.n++] = ms;
        rq.after_last++;
        if (ms > rq.worst[k])
            rq.worst[k] = ms;
        if (first) {
            rq.first_ms[rq.n_first++] = ms;
            if (ms > rq.first_worst[k])
                rq.first_worst[k] = ms;
        }
    }
    pw_fleetq_stats_t st;
    pw_fleetq_get_stats(rq.q, &st);
    if (st.refreshes > rq.ref_last) { /* a new snapshot: its refresh's time */
        rq.took_sum += pw_fleetq_snapshot(rq.q)->took_ms;
        rq.ref_last = st.refreshes;
        rq.after_last = 0;
    }
    /* done after `nref` refreshes and one round of the 4 endpoints on the last one */
    if (rq.failed || rq.n >= MAX_REQ || (st.refreshes - rq.ref0 >= rq.nref && rq.after_last >= 4)) {
        rq.stopping = 1;
        uv_close((uv_handle_t *)&rq.tick, NULL);
        uv_close((uv_handle_t *)&rq.refresh, NULL);
        uv_stop(t->loop); /* the view's own timer stays */
    }
}

int main(void)
{
    if (access("/usr/bin/victoria-metrics", X_OK) != 0) {
        fprintf(stderr, "bench_global: victoria-metrics is not installed (deploy/install-deps.sh "
                        "--victoria-metrics)\n");
        return 0;
    }
    const char *e = getenv("PW_BENCH_GLOBAL_HOSTS");
    int hosts = e ? atoi(e) : 3000;
    char dir[] = "/tmp/pw-bench-global-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    int vm_port = bp_free_port();
    char a_dir[300], a_addr[64], vlog[300];
    snprintf(a_dir, sizeof(a_dir), "-storageDataPath=%s/vm", dir);
    snprintf(a_addr, sizeof(a_addr), "-httpListenAddr=127.0.0.1:%d", vm_port);
    snprintf(vlog, sizeof(vlog), "%s/vm.log", dir);
    char *vargv[] = {"/usr/bin/victoria-metrics",
                     a_dir,
                     a_addr,
                     "-retentionPeriod=100y",
                     "-search.disableCache",
                     "-search.latencyOffset=0s",
                     "-loggerLevel=ERROR",
                     "-search.maxUniqueTimeseries=10000000",
                     NULL};
    pid_t vm = bp_spawn(vargv, vlog);
    for (int i = 0; i < 300 && !bp_port_open(vm_port); i++)
        bp_sleep_ms(100);
    uv_loop_init(&loop);

    static char vocab[VOCAB][5];
    for (int i = 0; i < VOCAB; i++)
        snprintf(vocab[i], sizeof(vocab[i]), "%c%c%02d", 'A' + i % 26, 'a' + (i / 26) % 26,
                 (i / 676) % 100);
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    uint64_t now = (uint64_t)tv.tv_sec * 1000;
    pw_double_t d[NC];
    pw_suspect_t *sp = calloc(20, sizeof(*sp));
    uint32_t x = 2463534242u;
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", vm_port);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int c = 0; c < NC; c++) {
        if (pw_double_open_with_token(&d[c], "t", "read") != 0)
            return 1;
        for (int h = 0; h < hosts; h++) {
            char name[48];
            snprintf(name, sizeof(name), "c%d-srv-%05d.corp.example", c, h);
            pw_sample_reset(&s);
            for (int r = 0; r < ROWS; r++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                uint64_t bytes = 4096 + (uint64_t)(x % 500000) * 16, diff = bytes / 64 + 1;
                pw_sample_add(&s, vocab[(r * 7 + h) % VOCAB], 4,
                              r % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED, diff + 5, 5, diff, bytes);
            }
            s.totals.nonpaged_bytes = 60000000 + (uint64_t)(x % 60000000);
            s.totals.paged_bytes = 200000000 + (uint64_t)h * 1000;
            s.totals.nonpaged_limit_bytes = 134217728;
            s.totals.paged_limit_bytes = 536870912;
            pw_host_t *ph = pw_double_restore(&d[c], name, 32, &s);
            if (ph == NULL)
                return 1;
            ph->last_seen_ms = now - 60000 + (uint64_t)h;
            if (h < 20) {
                snprintf(sp[h].host, sizeof(sp[h].host), "%s", name);
                memcpy(sp[h].tag, vocab[(3 * 7 + h) % VOCAB], 4);
                sp[h].tag_len = 4;
                sp[h].pool = PW_POOL_PAGED;
                sp[h].d.score = 1.0 + h / 10.0;
                sp[h].d.rate_bytes_per_h = 1024.0 * (h + 1);
            }
        }
        pw_analysis_run_publish(d[c].an, sp, 20);
        char owner[64];
        snprintf(owner, sizeof(owner), "https://c%d.example:7443", c);
        pw_remote_write_opts_t o = {
            .url = url,
            .tags_per_host = 20,
            .policy = {.movers = 1, .max_tags_per_host = 100, .leak_series = 1, .owner_url = owner},
            .max_queue = 100000,
            .max_sample_age_ms = UINT64_MAX,
            .max_clock_skew_ms = UINT64_MAX};
        pw_remote_write_t *w;
        pw_diag_t dg;
        if (pw_remote_write_new(&loop, &o, &w, &dg) != 0) {
            fprintf(stderr, "bench_global: %s\n", dg.msg);
            return 1;
        }
        pw_remote_write_collect(w, pw_ingest_fleet(d[c].ing), d[c].an);
        if (!spin_until(sent, w, 600000))
            fprintf(stderr, "bench_global: collector %d: remote write did not finish\n", c);
        pw_remote_write_stats_t st;
        pw_remote_write_get_stats(w, &st);
        fprintf(stderr, "# collector %d: %llu samples sent, %llu failed\n", c,
                (unsigned long long)st.samples, (unsigned long long)st.failed_samples);
        pw_remote_write_close(w);
    }
    pw_sample_close(&s);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%d/internal/force_flush >/dev/null",
             vm_port);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_global: force_flush failed\n");

    char qurl[64];
    snprintf(qurl, sizeof(qurl), "http://127.0.0.1:%d", vm_port);
    const char *pe = getenv("PW_BENCH_GLOBAL_PREPARE");
    int prep = pe == NULL || strcmp(pe, "0") != 0;
    /* as the collector's wiring (collector.c) */
    pw_fleetq_opts_t fo = {.query_url = qurl,
                           .refresh_ms = 3600000,
                           .timeout_ms = 120000,
                           .prepare = prep ? pw_api_global_prepare : NULL,
                           .prepared_free = prep ? pw_api_global_prepared_free : NULL};
    pw_fleetq_t *q;
    pw_diag_t dg;
    if (pw_fleetq_new(&loop, &fo, &q, &dg) != 0)
        return 1;
    refreshes_wanted = 1;
    spin_until(refreshed, q, 300000);
    double took[3];
    for (int k = 0; k < 3; k++) { /* the first and two more, VictoriaMetrics warm */
        if (k > 0) {
            refreshes_wanted = (uint64_t)k + 1;
            pw_fleetq_refresh(q);
            spin_until(refreshed, q, 300000);
        }
        const pw_fleetq_snap_t *sn = pw_fleetq_snapshot(q);
        took[k] = sn ? (double)sn->took_ms : -1;
    }
    /* VictoriaMetrics makes new series searchable within seconds: refresh until all are seen */
    for (int k = 0; k < 30; k++) {
        const pw_fleetq_snap_t *t = pw_fleetq_snapshot(q);
        if (t != NULL && t->n_hosts == (size_t)(NC * hosts))
            break;
        bp_sleep_ms(2000);
        refreshes_wanted++;
        pw_fleetq_refresh(q);
        spin_until(refreshed, q, 300000);
    }
    const pw_fleetq_snap_t *sn = pw_fleetq_snapshot(q);
    if (sn == NULL || sn->n_hosts == 0) {
        fprintf(stderr, "bench_global: no snapshot\n");
        return 1;
    }
    for (int k = 1; k < 3; k++) { /* two refreshes of the whole fleet, VictoriaMetrics warm */
        refreshes_wanted++;
        pw_fleetq_refresh(q);
        spin_until(refreshed, q, 300000);
        took[k] = (double)pw_fleetq_snapshot(q)->took_ms;
    }
    sn = pw_fleetq_snapshot(q);
    printf("CHECK global.snapshot hosts %zu rows %zu leaks %zu (want %d hosts, %d leaks)\n",
           sn->n_hosts, sn->n_rows, sn->n_leaks, NC * hosts, NC * 20);
    d[0].api.fleetq = q;
    /* The measured phase: the fleet page's requests arrive on a fixed schedule (open loop: a
     * request that arrives while the loop is busy waits, and that wait counts) while a timer
     * asks for a refresh every 10 s ([fleet] refresh_ms' default) until `nref` new snapshots
     * came; each request is served by
     * pw_api_handle on the loop, as http.c serves it, and timed from its arrival. The first
     * request of each endpoint after each refresh is among them (at 100 ms, 4 of about 100
     * per 10 s refresh). */
    const char *ev = getenv("PW_BENCH_GLOBAL_REFRESHES");
    rq.nref = ev ? (uint64_t)atoi(ev) : 5;
    ev = getenv("PW_BENCH_GLOBAL_INTERVAL_MS");
    rq.interval_ns = (ev ? (uint64_t)atoi(ev) : 100) * 1000000u;
    rq.api = &d[0].api;
    rq.q = q;
    pw_fleetq_stats_t st0;
    pw_fleetq_get_stats(q, &st0);
    rq.ref0 = rq.ref_last = st0.refreshes;
    load_avg(rq.load[0]);
    uv_timer_init(&loop, &rq.tick);
    uv_timer_init(&loop, &rq.refresh);
    rq.tick.data = rq.refresh.data = &rq;
    rq.t0 = uv_hrtime();
    uv_timer_start(&rq.tick, on_tick, 1, 1);
    uv_timer_start(&rq.refresh, on_refresh_tick, 0, 10000); /* [fleet] refresh_ms' default */
    uv_run(&loop, UV_RUN_DEFAULT);
    load_avg(rq.load[1]);
    if (rq.failed)
        return 1;
    size_t nms = rq.n;
    double *ms = rq.ms;
    qsort(ms, nms, sizeof(*ms), cmp_d);
    qsort(rq.first_ms, rq.n_first, sizeof(*rq.first_ms), cmp_d);
    fprintf(stderr,
            "# %zu requests over %llu refreshes (one every %.0f ms), %zu of them the first of "
            "their endpoint after a refresh; slowest: hosts %.1f ms, tags %.1f ms, leaks %.1f "
            "ms, tag %.1f ms; load average %s at the start, %s at the end\n",
            nms, (unsigned long long)rq.nref, (double)rq.interval_ns / 1e6, rq.n_first, rq.worst[0],
            rq.worst[1], rq.worst[2], rq.worst[3], rq.load[0], rq.load[1]);
    printf("CHECK global.answer_bytes hosts %zu tags %zu leaks %zu tag %zu\n", rq.bytes[0],
           rq.bytes[1], rq.bytes[2], rq.bytes[3]);
    printf("BENCH global.fleet_api_p99_ms %.3f ms (every request, the %zu first after a refresh "
           "included; %zu requests, load %s)\n",
           ms[(size_t)(0.99 * (double)(nms - 1))], rq.n_first, nms, rq.load[0]);
    printf("BENCH global.fleet_api_p50_ms %.3f ms\n", ms[nms / 2]);
    printf("BENCH global.fleet_api_first_p99_ms %.3f ms (the first request of each endpoint "
           "after each refresh, %zu of them)\n",
           rq.first_ms[(size_t)(0.99 * (double)(rq.n_first - 1))], rq.n_first);
    double cold = rq.n_first ? rq.first_ms[rq.n_first - 1] : 0;
    printf("BENCH global.fleet_api_cold_max_ms %.1f ms (the slowest first request of an endpoint "
           "after a refresh: hosts %.1f, tags %.1f, leaks %.1f, tag %.1f)\n",
           cold, rq.first_worst[0], rq.first_worst[1], rq.first_worst[2], rq.first_worst[3]);
    printf("BENCH global.fleet_api_max_ms %.1f ms\n", ms[nms - 1]);
    sn = pw_fleetq_snapshot(q);
    if (rq.ref_last > rq.ref0) /* the refreshes of the measured phase */
        took[1] = took[2] = (double)rq.took_sum / (double)(rq.ref_last - rq.ref0);
    printf("BENCH global.refresh_ms %.0f ms (first %.0f ms)\n", (took[1] + took[2]) / 2, took[0]);
    printf("BENCH global.refresh_body_bytes %llu bytes\n", (unsigned long long)sn->body_bytes);
    d[0].api.fleetq = NULL;
    pw_fleetq_close(q);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (int c = 0; c < NC; c++)
        pw_double_close(&d[c]);
    free(sp);
    bp_stop(vm, 10000);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
