/* bench_detect_scale.c: the analysis at fleet scale, in one process through the collector's own
 * libraries (ingest, a store file under $TMPDIR, the analysis with its timer on a libuv loop
 * and its passes on the thread pool, the API handler).
 *
 *   1. Fleet: PW_SCALE_HOSTS (10,000) hosts, each an agent's Hello (128 MiB nonpaged limit).
 *      Rows come from 16 templates of PW_SCALE_ROWS (2,000) rows: 5 % of the background rows
 *      change each sample (within +-10 % of their base), three rows leak (1 MiB/h, 100 KiB/h,
 *      10 MiB/day), two caches warm up for 6 h then level off. Hosts of one template get the
 *      same frames (the cost of a pass does not depend on the values).
 *   2. Seven days of history, at the resolution the state keeps: 33 tables 5.25 h apart fed
 *      through pw_analysis_run_feed, the update path of the observer and of the restart's
 *      rebuild (streaming 7 days of 10 s samples for 10,000 hosts would take hours).
 *   3. Live for PW_SCALE_MINUTES (5): every host sends a delta every 10 s (a keyframe first) at
 *      its own phase, handed to pw_ingest_frame as a session does; the group commit when the
 *      collector's policy says (collector/ingest/commit.h, the collector's default [store]
 *      commit_interval, commit_max_samples and commit_max_bytes, armed as the listener arms
 *      it), then compaction of chunks whose window ended (PW_LISTENER_COMPACT_BUDGET_MS at
 *      most, as the listener does);
 *      the analysis timer runs its passes every 30 s on the thread pool; every 100 ms an API
 *      request (GET /api/v1/leaks, then a host's pool table, alternately) through pw_api_handle.
 *
 * Prints
 *   detect.scale_analysis_cpu_percent  time the thread pool spent judging / live time (the
 *                                      worker is CPU-bound: no I/O), percent of one core;
 *   detect.scale_pass_wall_s           the longest pass, from its start on the loop to its
 *                                      publication;
 *   detect.scale_ack_p99_ms            a frame's arrival to the group commit that made it
 *                                      durable (what an agent's Ack waits for, without the
 *                                      network): loop delays from the analysis show here; from
 *                                      the second round on (the first is every host's
 *                                      keyframe: its worst is a CHECK line);
 *   detect.scale_api_p99_ms            a request's due time (its timer) to its answer: the wait
 *                                      for the loop plus the handler (second round on, as acks);
 *   detect.scale_state_bytes_per_host  pw_analysis_run_state_bytes, mean over hosts.
 * and CHECK lines (not figures of the issue), among them the handlers' own p99 (leaks, a pool
 * table) without the wait for the loop: what is left of the API p99 is the loop's other work.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "alloc.h"
#include "analysis_run.h"
#include "api.h"
#include "codec.h"
#include "collector.h"
#include "commit.h"
#include "delta.h"
#include "frame.h"
#include "ingest.h"
#include "listener.h"
#include "store.h"
#include "tokens.h"

#define TEMPLATES 16
#define HIST      33
#define DAY_MS    86400000ULL
#define STEP_MS   10000ULL
#define TOKEN     "scale-read-token"

typedef struct {
    uint64_t base; /* outstanding allocations at t = 0 */
    uint32_t per;  /* bytes per allocation */
    uint32_t kind; /* 0 churn, 1.. leaks, 4.. caches */
    uint64_t allocs;
    uint64_t cur; /* outstanding allocations now */
} trow_t;

typedef struct {
    trow_t *rows;
    uint64_t rng;
    pw_delta_enc_t enc;
    const Poolwatch__V1__Sample *msg;
    pw_buf_t frame;
    pw_sample_t s;
    uint64_t seq;
} tmpl_t;

static size_t n_hosts = 10000, n_rows = 2000;
static tmpl_t tp[TEMPLATES];
static pw_host_t **hosts;
static int session;
static pw_store_t *store;
static pw_ingest_t *ing;
static pw_analysis_run_t *an;
static pw_api_t api;
static uv_loop_t *loop;
static uint64_t t_start, t_end, live_ms, round_no;
static uint64_t *pending;  /* hrtime of frames not yet committed */
static pw_commit_t policy; /* the collector's group-commit policy */
static uv_timer_t commit_timer;
static size_t n_pending, cap_pending;
static double *ack_ms, *api_ms, *leaks_ms, *pool_ms; /* leaks, pool: the handler alone */
static size_t n_ack, cap_ack, n_api, cap_api, n_leaks, cap_leaks, n_pool, cap_pool;
static uint64_t max_pass_ns, api_due;
static uint64_t max_commit_ns, max_compact_ns, max_tick_ns; /* longest steps on the loop */
/* The first round is every host's keyframe (what a collector sees when a fleet reconnects):
 * its acks and the requests meanwhile are kept apart from the steady state's percentiles. */
static uint64_t steady_ns; /* hrtime the second round began (0: not yet) */
static double first_round_ack_max_ms, first_round_api_max_ms;
static int api_turn;

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void push(double **v, size_t *n, size_t *cap, double x)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1 << 16;
        *v = realloc(*v, *cap * sizeof(**v));
        if (*v == NULL)
            abort();
    }
    (*v)[(*n)++] = x;
}

/* Template t's table at `t_ms` after its start (all rows when `all`, else 5 % churn). */
static void tmpl_table(tmpl_t *t, uint64_t t_ms, uint64_t ts, int all)
{
    pw_sample_reset(&t->s);
    t->s.timestamp_ms = ts;
    uint64_t np = 0;
    double h = (double)t_ms / 3600000.0;
    for (size_t i = 0; i < n_rows; i++) {
        trow_t *r = &t->rows[i];
        uint64_t diff = r->cur;
        if (r->kind == 0) {
            if (all || rnd(&t->rng) % 20 == 0)
                diff = r->base * (90 + rnd(&t->rng) % 21) / 100;
        } else if (r->kind == 1) {
            diff = r->base + (uint64_t)(h * 1048576.0 / r->per);
        } else if (r->kind == 2) {
            diff = r->base + (uint64_t)(h * 102400.0 / r->per);
        } else if (r->kind == 3) {
            diff = r->base + (uint64_t)(h * 10485760.0 / 24 / r->per);
        } else {
            double w = h < 6 ? h : 6;
            diff = r->base + (uint64_t)(w * 2097152.0 / r->per);
        }
        if (diff != r->cur || all) /* a row that changed made calls */
            r->allocs += 1 + rnd(&t->rng) % 50 + (diff > r->cur ? diff - r->cur : 0);
        r->cur = diff;
        if (r->allocs < diff)
            r->allocs = diff;
        char tag[5];
        snprintf(tag, sizeof(tag), "%c%03zx", 'A' + (int)(i / 4096), i % 4096);
        if (pw_sample_add(&t->s, tag, 4, PW_POOL_NONPAGED, r->allocs, r->allocs - diff, diff,
                          diff * r->per) != 0)
            abort();
        np += diff * r->per;
    }
    t->s.totals.nonpaged_bytes = np;
    t->s.totals.paged_bytes = 200u << 20;
}

static void tmpl_init(tmpl_t *t, size_t k)
{
    memset(t, 0, sizeof(*t));
    t->rng = 0x5ca1e + k;
    t->rows = calloc(n_rows, sizeof(*t->rows));
    if (t->rows == NULL)
        abort();
    for (size_t i = 0; i < n_rows; i++) {
        trow_t *r = &t->rows[i];
        r->per = 16u << (rnd(&t->rng) % 8);
        r->base = 10 + rnd(&t->rng) % 20000;
        r->kind = i < 3 ? (uint32_t)(i + 1) : i < 5 ? 4 : 0;
        r->allocs = r->base + 1000;
        r->cur = r->base;
    }
    pw_sample_init(&t->s);
    pw_buf_init(&t->frame, PW_FRAME_MAX_DEFAULT + 16);
    if (pw_delta_enc_init(&t->enc, 64) != 0)
        abort();
}

/* The next live sample of every template, encoded and framed once for all its hosts. */
static void next_round(void)
{
    for (size_t k = 0; k < TEMPLATES; k++) {
        tmpl_t *t = &tp[k];
        tmpl_table(t, 7 * DAY_MS + round_no * STEP_MS, t_start + 7 * DAY_MS + round_no * STEP_MS,
                   round_no == 0);
        t->s.seq = ++t->seq;
        pw_diag_t d;
        if (pw_delta_encode(&t->enc, &t->s, 0, &t->msg, &d) != 0) {
            fprintf(stderr, "encode: %s\n", d.msg);
            exit(1);
        }
        Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
        env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_SAMPLE;
        env.sample = (Poolwatch__V1__Sample *)(uintptr_t)t->msg;
        pw_buf_reset(&t->frame);
        if (pw_codec_pack_frame(&env, PW_FRAME_MAX_DEFAULT, &t->frame) != 0)
            abort();
    }
}

static size_t sent_in_round;
static void on_commit(uv_timer_t *tm);

static void on_tick(uv_timer_t *tm)
{
    uint64_t el = uv_now(loop) - t_end + live_ms; /* ms since the live part began */
    (void)tm;
    if (el >= live_ms) {
        uv_stop(loop);
        return;
    }
    uint64_t r = el / STEP_MS;
    size_t due;
    if (r > round_no) {
        due = n_hosts; /* the hosts of the round that passed are sent first */
    } else {
        due = (size_t)((double)(el % STEP_MS) / (double)STEP_MS * (double)n_hosts) + 1;
        if (due > n_hosts)
            due = n_hosts;
    }
    uint64_t t_tick0 = uv_hrtime(), slowest = 0;
    size_t first = sent_in_round, slow_i = 0;
    for (; sent_in_round < due; sent_in_round++) {
        tmpl_t *t = &tp[sent_in_round % TEMPLATES];
        uint64_t tf = uv_hrtime();
        pw_ingest_frame_res_t res;
        int failed;
        pw_diag_t d;
        int rc = pw_ingest_frame(ing, hosts[sent_in_round], t->msg, t->frame.data + 4,
                                 t->frame.len - 4, &res, &failed, &d);
        if (rc != 0) {
            fprintf(stderr, "frame: %s\n", d.msg);
            exit(1);
        }
        if (n_pending == cap_pending) {
            cap_pending = cap_pending ? cap_pending * 2 : 4096;
            pending = realloc(pending, cap_pending * sizeof(*pending));
        }
        pending[n_pending++] = uv_hrtime();
        int64_t delay = pw_commit_arm(&policy, uv_now(loop), t->frame.len - 4);
        if (delay >= 0)
            uv_timer_start(&commit_timer, on_commit, (uint64_t)delay, 0);
        if (pending[n_pending - 1] - tf > slowest) {
            slowest = pending[n_pending - 1] - tf;
            slow_i = sent_in_round;
        }
    }
    uint64_t spent = uv_hrtime() - t_tick0;
    if (spent > max_tick_ns)
        max_tick_ns = spent;
    if (spent > 300000000ull) /* a stall: say where */
        fprintf(stderr,
                "bench_detect_scale: %.0f ms for %zu frames at +%.1f s (slowest %.1f ms: host "
                "%zu)\n",
                (double)spent / 1e6, sent_in_round - first, (double)el / 1e3, (double)slowest / 1e6,
                slow_i);
    if (r > round_no) {
        round_no = r;
        sent_in_round = 0;
        next_round();
        if (steady_ns == 0)
            steady_ns = uv_hrtime();
    }
    pw_analysis_stats_t st;
    pw_analysis_run_stats(an, &st);
    if (st.last_pass_ns > max_pass_ns)
        max_pass_ns = st.last_pass_ns;
}

static void on_commit(uv_timer_t *tm)
{
    (void)tm;
    pw_diag_t d;
    pw_commit_done(&policy);
    uint64_t t_commit0 = uv_hrtime();
    if (pw_ingest_commit(ing, &d) < 0) {
        fprintf(stderr, "commit: %s\n", d.msg);
        exit(1);
    }
    uint64_t now = uv_hrtime();
    for (size_t i = 0; i < n_pending; i++) {
        double ms = (double)(now - pending[i]) / 1e6;
        if (steady_ns != 0 && pending[i] >= steady_ns)
            push(&ack_ms, &n_ack, &cap_ack, ms);
        else if (ms > first_round_ack_max_ms)
            first_round_ack_max_ms = ms;
    }
    n_pending = 0;
    if (now - t_commit0 > max_commit_ns)
        max_commit_ns = now - t_commit0;
    /* after the acks, as the listener does: chunks whose window ended, 20 ms at most */
    if (pw_store_compact(store, PW_LISTENER_COMPACT_BUDGET_MS, &d) < 0) {
        fprintf(stderr, "compact: %s\n", d.msg);
        exit(1);
    }
    uint64_t end = uv_hrtime();
    if (end - now > max_compact_ns)
        max_compact_ns = end - now;
}

static void on_api(uv_timer_t *tm)
{
    (void)tm;
    uint64_t now = uv_hrtime();
    char path[300];
    int leaks = api_turn++ % 2 == 0;
    if (leaks)
        snprintf(path, sizeof(path), "/api/v1/leaks");
    else
        snprintf(path, sizeof(path), "/api/v1/hosts/%s/pool",
                 hosts[(size_t)api_turn % n_hosts]->name);
    pw_api_req_t req = {PW_API_GET, path, "limit=50", "Bearer " TOKEN, NULL, 0, uv_now(loop)};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&api, &req, &resp);
    uint64_t handled = uv_hrtime();
    pw_api_resp_close(&resp);
    if (st != 200) {
        fprintf(stderr, "API %s: %d\n", path, st);
        exit(1);
    }
    uint64_t late = api_due && now > api_due ? now - api_due : 0;
    double ms = (double)(late + (uv_hrtime() - now)) / 1e6;
    if (steady_ns != 0 && api_due >= steady_ns) {
        push(&api_ms, &n_api, &cap_api, ms);
        if (leaks)
            push(&leaks_ms, &n_leaks, &cap_leaks, (double)(handled - now) / 1e6);
        else
            push(&pool_ms, &n_pool, &cap_pool, (double)(handled - now) / 1e6);
    } else if (ms > first_round_api_max_ms)
        first_round_api_max_ms = ms;
    api_due = uv_hrtime() + 100 * 1000000ull;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    if (n == 0)
        return -1;
    qsort(v, n, sizeof(*v), cmp_d);
    return v[(size_t)(p * (double)(n - 1))];
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *e;
    if ((e = getenv("PW_SCALE_HOSTS")) != NULL && atoi(e) > 0)
        n_hosts = (size_t)atoi(e);
    if ((e = getenv("PW_SCALE_ROWS")) != NULL && atoi(e) > 0)
        n_rows = (size_t)atoi(e);
    int minutes = (e = getenv("PW_SCALE_MINUTES")) != NULL && atoi(e) > 0 ? atoi(e) : 5;
    live_ms = (uint64_t)minutes * 60000;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    snprintf(path, sizeof(path), "%s/bench_detect_scale.%d.db", tmp, (int)uv_os_getpid());
    pw_diag_t d;
    if (pw_store_open(path, NULL, &store, &d) != 0 || pw_ingest_new(store, &ing, &d) != 0) {
        fprintf(stderr, "store: %s\n", d.msg);
        return 1;
    }
    pw_collector_cfg_t ccfg;
    memset(&ccfg, 0, sizeof(ccfg));
    if (pw_config_defaults(pw_collector_options, &ccfg, &d) != 0) {
        fprintf(stderr, "collector defaults: %s\n", d.msg);
        return 1;
    }
    pw_commit_policy_t pp = pw_collector_commit_policy(&ccfg);
    pw_commit_init(&policy, &pp);
    pw_config_free(pw_collector_options, &ccfg);
    loop = uv_default_loop();
    if (pw_analysis_run_new(loop, ing, NULL, &an) != 0)
        return 1;
    memset(&api, 0, sizeof(api));
    api.ing = ing;
    api.an = an;
    char line[200], hex[80];
    if (pw_tokens_hash(TOKEN, hex) != 0)
        return 1;
    snprintf(line, sizeof(line), "%s read scale\n", hex);
    if (pw_tokens_parse(line, strlen(line), &api.tokens, &d) != 0)
        return 1;

    uint64_t t0 = uv_hrtime();
    hosts = calloc(n_hosts, sizeof(*hosts));
    for (size_t k = 0; k < TEMPLATES; k++)
        tmpl_init(&tp[k], k);
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    uint64_t now_ms = (uint64_t)tv.tv_sec * 1000;
    t_start = now_ms - 7 * DAY_MS;
    for (size_t i = 0; i < n_hosts; i++) {
        char name[32], aid[40];
        snprintf(name, sizeof(name), "scale-%05zu", i);
        snprintf(aid, sizeof(aid), "agent:%s", name);
        Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
        Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT;
        h.protocol_major = PW_PROTOCOL_MAJOR;
        h.host_name = name;
        h.counter_width = 64;
        h.agent_id.data = (uint8_t *)aid;
        h.agent_id.len = strlen(aid);
        h.boot_id.data = (uint8_t *)"boot:1";
        h.boot_id.len = 6;
        h.os_family = "windows";
        h.os_version = "10.0";
        h.arch = "x64";
        h.agent_version = "bench";
        h.interval_ms = 10000;
        np.bytes = 128u << 20;
        np.detail = "bench";
        h.nonpaged_limit = &np;
        pw_ingest_hello_res_t res;
        if (pw_ingest_hello(ing, &h, name, &session, &res, &d) != 0) {
            fprintf(stderr, "hello: %s\n", d.msg);
            return 1;
        }
        hosts[i] = res.host;
    }
    /* seven days of history at the state's resolution */
    for (size_t j = 0; j < HIST; j++) {
        uint64_t at = j * (7 * DAY_MS / (HIST - 1));
        for (size_t k = 0; k < TEMPLATES; k++)
            tmpl_table(&tp[k], at, t_start + at, 1);
        for (size_t i = 0; i < n_hosts; i++)
            if (pw_analysis_run_feed(an, hosts[i], &tp[i % TEMPLATES].s, (const uint8_t *)"boot:1",
                                     6) != 0)
                return 1;
    }
    double setup_s = (double)(uv_hrtime() - t0) / 1e9;
    size_t state = 0;
    for (size_t i = 0; i < n_hosts; i++)
        state += pw_analysis_run_state_bytes(an, hosts[i]);
    printf("CHECK detect.scale_setup_s %.1f s (%zu hosts x %zu rows, %d tables of history)\n",
           setup_s, n_hosts, n_rows, HIST);

    /* live */
    round_no = 0;
    sent_in_round = 0;
    next_round();
    uv_timer_t tick, apit;
    uv_timer_init(loop, &tick);
    uv_timer_init(loop, &commit_timer);
    uv_timer_init(loop, &apit);
    uv_update_time(loop);
    t_end = uv_now(loop) + live_ms;
    pw_analysis_stats_t s0;
    pw_analysis_run_stats(an, &s0);
    uint64_t w0 = uv_hrtime();
    uv_timer_start(&tick, on_tick, 10, 10);
    api_due = uv_hrtime() + 100 * 1000000ull;
    uv_timer_start(&apit, on_api, 100, 100);
    uv_run(loop, UV_RUN_DEFAULT);
    double wall_s = (double)(uv_hrtime() - w0) / 1e9;
    pw_analysis_stats_t s1;
    pw_analysis_run_stats(an, &s1);
    uint64_t passes = s1.passes - s0.passes;
    printf("CHECK detect.scale_passes %" PRIu64 " in %.0f s live (%" PRIu64 " host and %" PRIu64
           " candidate evaluations)\n",
           passes, wall_s, s1.hosts_judged - s0.hosts_judged, s1.cands_judged - s0.cands_judged);
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(an, &sp);
    printf("CHECK detect.scale_suspects %zu (3 leaks x %zu hosts planted)\n", ns, n_hosts);
    printf("BENCH detect.scale_analysis_cpu_percent %.1f %%\n",
           100.0 * (double)(s1.work_ns - s0.work_ns) / 1e9 / wall_s);
    printf("BENCH detect.scale_pass_wall_s %.2f s\n", (double)max_pass_ns / 1e9);
    printf("BENCH detect.scale_ack_p99_ms %.1f ms\n", pct(ack_ms, n_ack, 0.99));
    printf("BENCH detect.scale_api_p99_ms %.1f ms\n", pct(api_ms, n_api, 0.99));
    printf("BENCH detect.scale_state_bytes_per_host %.0f B\n", (double)state / (double)n_hosts);
    printf("CHECK detect.scale_loop_step_max_ms %.1f ms (the longest collect or publish on the "
           "loop)\n",
           (double)s1.max_loop_ns / 1e6);
    printf("CHECK detect.scale_loop_commit_max_ms %.1f ms, compact_max_ms %.1f ms, "
           "frames_tick_max_ms %.1f ms (the longest group commit, compaction after it, and "
           "batch of frames on the loop)\n",
           (double)max_commit_ns / 1e6, (double)max_compact_ns / 1e6, (double)max_tick_ns / 1e6);
    printf("CHECK detect.scale_first_round_max_ms ack %.1f ms, api %.1f ms (every host's keyframe "
           "in the first 10 s; not in the percentiles)\n",
           first_round_ack_max_ms, first_round_api_max_ms);
    printf("CHECK detect.scale_ack_p50_ms %.1f ms, api_p50_ms %.1f ms (%zu acks, %zu requests)\n",
           pct(ack_ms, n_ack, 0.5), pct(api_ms, n_api, 0.5), n_ack, n_api);
    printf("CHECK detect.scale_api_handler_p99_ms leaks %.1f ms, pool %.1f ms (the handler "
           "alone, without the wait for the loop)\n",
           pct(leaks_ms, n_leaks, 0.99), pct(pool_ms, n_pool, 0.99));
    uv_close((uv_handle_t *)&tick, NULL);
    uv_close((uv_handle_t *)&commit_timer, NULL);
    uv_close((uv_handle_t *)&apit, NULL);
    pw_analysis_run_close(an);
    uv_run(loop, UV_RUN_DEFAULT);
    pw_tokens_free(api.tokens);
    pw_ingest_free(ing);
    pw_store_close(store);
    char p2[600];
    remove(path);
    snprintf(p2, sizeof(p2), "%s-wal", path);
    remove(p2);
    snprintf(p2, sizeof(p2), "%s-shm", path);
    remove(p2);
    return 0;
}
