/* test_analysis_run.c: the analysis pass (analysis_run.h) on a caller's clock: a replay of
 * simulated time (bench_detect) counts an alert's `for` duration in that time, not on the wall
 * clock. The host streams through ingest (an agent's Hello with a nonpaged limit, Sample frames
 * through the test double) and the passes run when the test says. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "codec.h"
#include "double.h"
#include "linux_series.h"

#define T0_MS    INT64_C(1704067200000) /* 2024-01-01 00:00:00 UTC */
#define LIMIT    (100u << 20)           /* nonpaged limit: 100 MiB */
#define USED     (90u << 20)            /* 0.90 of it: above warn (0.70) and critical (0.85) */
#define STEP_MS  10000                  /* a sample every 10 s */
#define PASS_MS  30000                  /* the collector's pass cadence */
#define WARN_FOR 300000                 /* the warning's `for`: 5 min */
#define CRIT_FOR 60000                  /* the critical's `for`: 1 min */

typedef struct {
    int64_t now;
    int calls;
} sim_clock_t;

static int64_t sim_now(void *arg)
{
    sim_clock_t *c = arg;
    c->calls++;
    return c->now;
}

/* Replaces the double's analysis by one on the test's clock `clk`. */
/* Transitions to resolved the analysis told its receivers. */
static int told_resolved;

static void on_told(void *arg, const pw_alert_transition_t *tr, const char *name,
                    const char *summary, const char *description, int resend)
{
    (void)arg, (void)name, (void)summary, (void)description, (void)resend;
    told_resolved += tr->to == PW_ALERT_RESOLVED;
}

/* The suspect episodes told to on_suspect by the analyses of on_clock_with (a new suspect: the
 * wiring logs "new suspect" and asks the agent for a big-pool snapshot), per tag "Ddk ". */
static int told_ddk;

static int count_told(void *arg, const pw_host_t *h, const pw_suspect_t *x)
{
    (void)arg, (void)h;
    told_ddk += x->tag_len == 4 && memcmp(x->tag, "Ddk ", 4) == 0;
    return 1;
}

/* The double's analysis on clk, with [alerts] silent_after = silent_after_ms (0: default),
 * keeping its alerts in `alerts_path` (NULL: not kept). */
static void on_clock_with(pw_double_t *d, sim_clock_t *clk, int64_t silent_after_ms,
                          const char *alerts_path)
{
    pw_analysis_run_close(d->an);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = sim_now;
    o.now_arg = clk;
    o.silent_after_ms = silent_after_ms;
    o.on_alert = on_told;
    o.alerts_path = alerts_path;
    o.on_suspect = count_told;
    assert_int_equal(pw_analysis_run_new(NULL, d->ing, &o, &d->an), 0);
    d->api.an = d->an;
}

static void on_clock_silent(pw_double_t *d, sim_clock_t *clk, int64_t silent_after_ms)
{
    on_clock_with(d, clk, silent_after_ms, NULL);
}

static void on_clock(pw_double_t *d, sim_clock_t *clk)
{
    on_clock_silent(d, clk, 0);
}

/* An agent's Hello for `name` with agent id `aid` and the nonpaged limit LIMIT. */
static pw_host_t *hello_aid(pw_double_t *d, const char *name, const char *aid)
{
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.host_name = (char *)(uintptr_t)name;
    h.counter_width = 64;
    h.agent_id.data = (uint8_t *)(uintptr_t)aid;
    h.agent_id.len = strlen(aid);
    h.boot_id.data = (uint8_t *)"boot:1";
    h.boot_id.len = 6;
    h.os_family = "windows";
    h.os_version = "";
    h.arch = "";
    h.agent_version = "";
    np.bytes = LIMIT;
    np.detail = "";
    h.nonpaged_limit = &np;
    pw_ingest_hello_res_t res;
    if (pw_ingest_hello(d->ing, &h, name, &d->session, &res, NULL) != 0)
        return NULL;
    return res.host;
}

/* A Hello of agent `aid` on host `name` in boot instance `boot` (a reboot: another boot id). */
static pw_host_t *hello_boot(pw_double_t *d, const char *name, const char *boot)
{
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.host_name = (char *)(uintptr_t)name;
    h.counter_width = 64;
    h.agent_id.data = (uint8_t *)"agent:clock";
    h.agent_id.len = 11;
    h.boot_id.data = (uint8_t *)(uintptr_t)boot;
    h.boot_id.len = strlen(boot);
    h.os_family = "windows";
    h.os_version = "";
    h.arch = "";
    h.agent_version = "";
    np.bytes = LIMIT;
    np.detail = "";
    h.nonpaged_limit = &np;
    pw_ingest_hello_res_t res;
    if (pw_ingest_hello(d->ing, &h, name, &d->session, &res, NULL) != 0)
        return NULL;
    return res.host;
}

static pw_host_t *hello(pw_double_t *d, const char *name)
{
    return hello_aid(d, name, "agent:clock");
}

static pw_alert_state_t state(const pw_analysis_run_t *an, const char *sev, int64_t *since)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "clock01");
    snprintf(k.pool, sizeof(k.pool), "nonpaged");
    snprintf(k.severity, sizeof(k.severity), "%s", sev);
    return pw_alert_state(pw_analysis_run_alerts(an), &k, since);
}

/* Samples every 10 s from T0 with the nonpaged pool at 0.90 of its limit for 400 s, then at 0.80,
 * a pass every 30 s of sample time at the clock of that sample: the critical alert (for 1 min)
 * fires at the pass of T0 + 60 s and not before, pending since T0; while it holds the warning
 * gives way (one alert per pool). From T0 + 400 s (0.80 < 0.85 - 0.02) the critical resolves
 * and the warning (for 5 min) is pending, firing at T0 + 700 s. On the wall clock the passes
 * run milliseconds apart and neither would fire. */
static void test_analysis_run_clock_counts_for_in_simulated_time(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);

    pw_host_t *h = hello(&d, "clock01");
    assert_non_null(h);
    assert_int_equal(h->nonpaged_limit_bytes, LIMIT);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int64_t crit_at = -1, warn_at = -1, crit_off = -1;
    for (int k = 0; k <= 80; k++) { /* 800 s */
        int64_t ts = T0_MS + (int64_t)k * STEP_MS;
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)ts;
        s.totals.nonpaged_bytes = k < 40 ? USED : (80u << 20);
        s.totals.paged_bytes = 50u << 20;
        assert_int_equal(pw_sample_add(&s, "Ddk ", 4, PW_POOL_NONPAGED, 100, 0, 100, 4096), 0);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        if ((ts - T0_MS) % PASS_MS != 0)
            continue;
        clk.now = ts;
        pw_analysis_run_pass(d.an);
        if (crit_at < 0 && state(d.an, "critical", NULL) == PW_ALERT_FIRING)
            crit_at = ts;
        if (crit_at >= 0 && crit_off < 0 && state(d.an, "critical", NULL) == PW_ALERT_RESOLVED)
            crit_off = ts;
        if (warn_at < 0 && state(d.an, "warning", NULL) == PW_ALERT_FIRING)
            warn_at = ts;
        if (k < 40)
            assert_int_equal(state(d.an, "warning", NULL), PW_ALERT_INACTIVE);
    }
    assert_true(clk.calls > 0);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, h);
    assert_non_null(res);
    assert_true(res->have_pressure);
    assert_int_equal(crit_at, T0_MS + CRIT_FOR);
    assert_int_equal(crit_off, T0_MS + 420000); /* the first pass at 0.80: 420 s */
    assert_int_equal(warn_at, T0_MS + 420000 + WARN_FOR);
    int64_t since = 0;
    assert_int_equal(state(d.an, "warning", &since), PW_ALERT_FIRING);
    assert_int_equal(since, T0_MS + 420000);

    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* One row of a streamed sample: (tag, bytes, diff), allocs = frees + diff with frees rising. */
static void add(pw_sample_t *s, const char *tag, int pool, uint64_t bytes, uint64_t diff, int k)
{
    uint64_t frees = 1000 + 10 * (uint64_t)k;
    assert_int_equal(pw_sample_add(s, tag, 4, pool, frees + diff, frees, diff, bytes), 0);
}

static const pw_suspect_t *find(const pw_analysis_run_t *an, const char *tag)
{
    const pw_suspect_t *sp;
    size_t n = pw_analysis_run_suspects(an, &sp);
    for (size_t i = 0; i < n; i++)
        if (sp[i].tag_len == 4 && memcmp(sp[i].tag, tag, 4) == 0)
            return &sp[i];
    return NULL;
}

/* The PoolTagLeak of (host, tag, pool) and its start in *since (may be NULL). */
static pw_alert_state_t tag_alert(const pw_analysis_run_t *an, const char *host, const char *tag,
                                  const char *pool, int64_t *since)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.tag, sizeof(k.tag), "%s", tag);
    snprintf(k.pool, sizeof(k.pool), "%s", pool);
    snprintf(k.severity, sizeof(k.severity), "warning");
    return pw_alert_state(pw_analysis_run_alerts(an), &k, since);
}

static pw_alert_state_t leak_state(const pw_analysis_run_t *an, const char *host, const char *tag)
{
    return tag_alert(an, host, tag, "nonpaged", NULL);
}

/* A live host, 2 h at 10 s, passes every 30 s: "Ddk " leaks 1,024 B a sample (368,640 B/h,
 * exactly linear), "dent" and "inod" grow together by n x 4 KiB and n x 8 KiB, n = 0 .. 3
 * files made in that sample (one cause: one finding, its head the faster "inod"), "Mmcm" churns
 * +-10 % around 12 MiB. Found: Ddk alone, and the pair as one finding; one alert each (the head's);
 * once listed, listed in every later pass (no flicker); the churning row never. */
static void test_stream_findings_and_no_flicker(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    pw_host_t *h = hello(&d, "live01");
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    uint32_t rng = 7;
    uint64_t files = 0;
    int listed_at = -1;
    for (int k = 0; k <= 720; k++) {
        int64_t ts = T0_MS + (int64_t)k * STEP_MS;
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)ts;
        s.totals.nonpaged_bytes = (40u << 20) + (uint64_t)k * 1024;
        s.totals.paged_bytes = 50u << 20;
        add(&s, "Ddk ", PW_POOL_NONPAGED, 600000 + (uint64_t)k * 1024, 600 + (uint64_t)k, k);
        rng = rng * 1103515245u + 12345u;
        files += k > 0 ? (rng >> 12) % 4 : 0;
        add(&s, "dent", PW_POOL_NONPAGED, (1u << 20) + files * 4096, 4096 + files * 16, k);
        add(&s, "inod", PW_POOL_NONPAGED, (2u << 20) + files * 8192, 2048 + files * 8, k);
        rng = rng * 1103515245u + 12345u;
        uint64_t churn = (12u << 20) + ((rng >> 8) % (2u << 20)) - (1u << 20);
        add(&s, "Mmcm", PW_POOL_NONPAGED, churn, churn / 512, k);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        if ((ts - T0_MS) % PASS_MS != 0)
            continue;
        clk.now = ts;
        pw_analysis_run_pass(d.an);
        assert_null(find(d.an, "Mmcm"));
        const pw_suspect_t *x = find(d.an, "Ddk ");
        if (x != NULL && listed_at < 0)
            listed_at = k;
        if (listed_at >= 0)
            assert_non_null(x); /* no flicker */
    }
    assert_true(listed_at > 0 && listed_at <= 180); /* within 30 min */
    const pw_suspect_t *ddk = find(d.an, "Ddk "), *ino = find(d.an, "inod"),
                       *den = find(d.an, "dent");
    assert_non_null(ddk);
    assert_non_null(ino);
    assert_non_null(den);
    assert_int_equal(ddk->d.verdict, PW_DETECT_LEAK);
    assert_true(ddk->head);
    assert_int_equal(ddk->group_n, 1);
    assert_true(fabs(ddk->d.rate_bytes_per_h - 368640.0) < 1e-6);
    /* the host's nonpaged grows by exactly Ddk's 1,024 B a sample: all of it */
    assert_true(ddk->share == 1.0);
    assert_true(ino->head);
    assert_false(den->head);
    assert_int_equal(ino->group_n, 2);
    assert_int_equal(den->group_n, 2);
    assert_string_equal(ino->with, "dent");
    assert_string_equal(den->with, "inod");
    /* a head is followed by its finding's other tags */
    assert_true(den == ino + 1);
    assert_int_equal(leak_state(d.an, "live01", "Ddk "), PW_ALERT_FIRING);
    assert_int_equal(leak_state(d.an, "live01", "inod"), PW_ALERT_FIRING);
    assert_int_equal(leak_state(d.an, "live01", "dent"), PW_ALERT_INACTIVE);
    /* the state of a 4-row host is small and counted */
    assert_true(pw_analysis_run_state_bytes(d.an, h) > 0);
    assert_true(pw_analysis_run_state_bytes(d.an, h) < 200000);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* GET /api/v1/alerts of `d` as a read client. */
/* GET `path` through the double's API (token "tok") at `now`: the answer, 200 asserted. */
static json_t *api_get(pw_double_t *d, const char *path, int64_t now)
{
    pw_api_req_t req = {PW_API_GET, path, "", "Bearer tok", NULL, 0, (uint64_t)now};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    assert_int_equal(pw_api_handle(&d->api, &req, &resp), 200);
    json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
    pw_api_resp_close(&resp);
    assert_non_null(j);
    return j;
}

static json_t *get_alerts(pw_double_t *d, int64_t now)
{
    return api_get(d, "/api/v1/alerts", now);
}

static const json_t *alert_named(const json_t *alerts, const char *name)
{
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(alerts, "alerts"), i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0)
            return a;
    }
    return NULL;
}

/* The alerts say when the pool runs out, and a pressure alert which suspect grows fastest
 * (the new-user trial: `poolwatch alerts` had neither). The nonpaged pool grows 4,096 B a
 * sample (10 s) from 80 MiB, all of it "Ddk " (1,474,560 B/h = 1.4 MiB/h), for 2 h; limit
 * 100 MiB. Last sample: k = 720 at T0 + 7,200 s, used 83,886,080 + 2,949,120 = 86,835,200 B
 * (82.8 %: warn). Left: 104,857,600 - 86,835,200 = 18,022,400 B = 4,400 samples of 10 s =
 * 44,000 s, so it runs out at T0 + 51,200 s = 1704118400000 ms, 2024-01-01 14:13:20Z
 * (date -u -d @1704118400). */
static void test_alerts_say_eta_and_tag(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    pw_host_t *h = hello(&d, "eta01");
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int64_t ts = T0_MS;
    for (int k = 0; k <= 720; k++) {
        ts = T0_MS + (int64_t)k * STEP_MS;
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)ts;
        s.totals.nonpaged_bytes = (80u << 20) + (uint64_t)k * 4096;
        s.totals.paged_bytes = 50u << 20;
        add(&s, "Ddk ", PW_POOL_NONPAGED, 600000 + (uint64_t)k * 4096, 600 + (uint64_t)k, k);
        add(&s, "Mmcm", PW_POOL_NONPAGED, 12u << 20, 3000, k);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        if ((ts - T0_MS) % PASS_MS != 0)
            continue;
        clk.now = ts;
        pw_analysis_run_pass(d.an);
    }
    assert_int_equal(pw_analysis_run_host(d.an, h)->np.eta_ms, 44000000LL);
    json_t *j = get_alerts(&d, ts);
    const json_t *pr = alert_named(j, "NonpagedPoolPressure"), *lk = alert_named(j, "PoolTagLeak");
    assert_non_null(pr);
    assert_non_null(lk);
    assert_string_equal(json_string_value(json_object_get(pr, "state")), "firing");
    assert_int_equal(json_integer_value(json_object_get(pr, "pool_eta_ms")), 1704118400000LL);
    assert_string_equal(json_string_value(json_object_get(pr, "growing_tag")), "Ddk ");
    assert_string_equal(json_string_value(json_object_get(pr, "summary")),
                        "eta01: nonpaged pool at 82.8 % of its limit; runs out 2024-01-01 "
                        "14:13:20Z; fastest-growing suspect 'Ddk ' +1.4 MiB/h");
    assert_int_equal(json_integer_value(json_object_get(lk, "pool_eta_ms")), 1704118400000LL);
    assert_true(json_is_null(json_object_get(lk, "growing_tag")));
    assert_string_equal(json_string_value(json_object_get(lk, "summary")),
                        "eta01: pool tag 'Ddk ' (nonpaged) keeps growing; runs out 2024-01-01 "
                        "14:13:20Z");
    json_decref(j);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* The suspect episodes told to on_suspect (the wiring asks the agent for a big-pool snapshot). */
typedef struct {
    char tags[32][5];
    int64_t at[32];
    int n;
    int refuse_first; /* the first call for "Lk00" answers -1 (not connected): asked again */
    int refused;
    int64_t now;
} told_t;

static int on_suspect_cb(void *arg, const pw_host_t *h, const pw_suspect_t *x)
{
    told_t *t = arg;
    assert_string_equal(h->name, "bp01");
    assert_int_equal(x->tag_len, 4);
    if (t->refuse_first && !t->refused && memcmp(x->tag, "Lk00", 4) == 0) {
        t->refused = 1;
        return -1;
    }
    if (memcmp(x->tag, "Lk09", 4) == 0)
        return 0; /* "this host cannot answer": never again in the episode, and not counted */
    assert_true(t->n < 32);
    memcpy(t->tags[t->n], x->tag, 4);
    t->tags[t->n][4] = '\0';
    t->at[t->n++] = t->now;
    return 1;
}

/* A live host, 2 h at 10 s, passes every 30 s: ten tags Lk00..Lk09 leak 4 KiB a sample each,
 * exactly linear and alike (so judged alike), Mmcm is flat. All ten are listed at
 * the same pass. There on_suspect is called for Lk00, which answers "not connected" (-1: asked
 * again later), then for Lk01..Lk08, which ask: 8 asks, the most a pass makes
 * (PW_ANALYSIS_SUSPECT_CALLS); Lk09 waits. At the next pass Lk00 asks, and Lk09 answers 0 (no
 * big-pool table: not an ask, and never again); never after, although all stay listed in
 * every later pass: one ask per episode, 9 in all. */
static void test_suspect_episode_told_once(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    told_t told;
    memset(&told, 0, sizeof(told));
    told.refuse_first = 1;
    pw_analysis_run_close(d.an);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = sim_now;
    o.now_arg = &clk;
    o.on_suspect = on_suspect_cb;
    o.on_suspect_arg = &told;
    assert_int_equal(pw_analysis_run_new(NULL, d.ing, &o, &d.an), 0);
    d.api.an = d.an;
    pw_host_t *h = hello(&d, "bp01");
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int64_t listed_at = -1;
    for (int k = 0; k <= 720; k++) {
        int64_t ts = T0_MS + (int64_t)k * STEP_MS;
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)ts;
        s.totals.nonpaged_bytes = (40u << 20) + (uint64_t)k * 40 * 1024;
        for (int i = 0; i < 10; i++) {
            char tag[5];
            snprintf(tag, sizeof(tag), "Lk%02d", i);
            add(&s, tag, PW_POOL_NONPAGED, 600000 + (uint64_t)k * 4096, 600 + 4 * (uint64_t)k, k);
        }
        add(&s, "Mmcm", PW_POOL_NONPAGED, 12u << 20, 3072, k);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        if ((ts - T0_MS) % PASS_MS != 0)
            continue;
        clk.now = told.now = ts;
        int before = told.n;
        pw_analysis_run_pass(d.an);
        const pw_suspect_t *sp;
        size_t n = pw_analysis_run_suspects(d.an, &sp);
        if (n > 0 && listed_at < 0) {
            listed_at = ts;
            assert_int_equal(n, 10); /* all at once */
            assert_int_equal(told.n, 8);
            assert_int_equal(told.refused, 1);
        } else if (listed_at >= 0 && ts == listed_at + PASS_MS) {
            assert_int_equal(n, 10);
            assert_int_equal(told.n, 9);
            assert_int_equal(told.n - before, 1);
            assert_string_equal(told.tags[8], "Lk00");
        } else if (listed_at >= 0) {
            assert_int_equal(n, 10);          /* still listed ... */
            assert_int_equal(told.n, before); /* ... and not told again */
        }
    }
    assert_true(listed_at > 0);
    /* each tag once, Lk09 never counted */
    for (int i = 0; i < 9; i++) {
        char tag[5];
        snprintf(tag, sizeof(tag), "Lk%02d", i);
        int seen = 0;
        for (int j = 0; j < told.n; j++)
            seen += strcmp(told.tags[j], tag) == 0;
        assert_int_equal(seen, 1);
    }
    for (int j = 0; j < told.n; j++)
        assert_true(told.at[j] == listed_at || told.at[j] == listed_at + PASS_MS);
    assert_null(find(d.an, "Mmcm"));
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* An import of 12 screens (Microsoft's 15-minute procedure): a paged "Toke" leak of +2,048 B a
 * screen among 10 rows of churn is judged by the first pass after the import (no trend window
 * to fill), with 12 points; a second import of 2 screens of one tag (Microsoft's /iDrsd
 * example: Diff 21 -> 27, Bytes 17,472 -> 22,464) is judged alone, by comparison. */
static void test_import_judged_at_once(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    pw_sample_t ss[12];
    uint32_t rng = 3;
    for (int k = 0; k < 12; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        add(&ss[k], "Toke", PW_POOL_PAGED, 81920 + (uint64_t)k * 2048, 40 + 2 * (uint64_t)k, k);
        for (int r = 0; r < 10; r++) {
            char tag[5];
            snprintf(tag, sizeof(tag), "Bg%02d", r);
            rng = rng * 1103515245u + 12345u;
            uint64_t diff = 1000 + (rng >> 8) % 200;
            add(&ss[k], tag, PW_POOL_PAGED, diff * 64, diff, k);
        }
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "cap12", 32, "import:a", ss, 12, &ir, NULL), 0);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *t = find(d.an, "Toke");
    assert_non_null(t);
    assert_string_equal(t->host, "cap12");
    assert_int_equal(t->d.verdict, PW_DETECT_LEAK);
    assert_int_equal(t->d.points, 12);
    assert_int_equal(t->d.growth_bytes, 11 * 2048);
    assert_true(fabs(t->d.rate_bytes_per_h - 8192.0) < 1e-9); /* 2,048 B per 15 min */
    /* its PoolTagLeak alert, as its pool's pressure alert would be: pending (nothing new comes
     * to hold it for its 5 min) */
    assert_int_equal(tag_alert(d.an, "cap12", "Toke", "paged", NULL), PW_ALERT_PENDING);
    for (int k = 0; k < 12; k++)
        pw_sample_close(&ss[k]);
    const pw_suspect_t *sp;
    assert_int_equal(pw_analysis_run_suspects(d.an, &sp), 1); /* no churn row */
    pw_sample_t two[2];
    for (int k = 0; k < 2; k++) {
        pw_sample_init(&two[k]);
        two[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
    }
    assert_int_equal(pw_sample_add(&two[0], "Drsd", 4, PW_POOL_PAGED, 560, 539, 21, 17472), 0);
    assert_int_equal(pw_sample_add(&two[1], "Drsd", 4, PW_POOL_PAGED, 737, 710, 27, 22464), 0);
    /* the capture's paged pool and its limit: too few points for the pool's trend */
    two[0].totals.paged_bytes = 1000000;
    two[1].totals.paged_bytes = 1004992;
    two[0].totals.paged_limit_bytes = two[1].totals.paged_limit_bytes = 1100000;
    assert_int_equal(pw_ingest_import(d.ing, "case09", 32, "import:b", two, 2, &ir, NULL), 0);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *dr = find(d.an, "Drsd");
    assert_non_null(dr);
    assert_int_equal(dr->d.points, 2);
    assert_int_equal(dr->d.growth_allocs, 177);
    assert_int_equal(dr->d.growth_frees, 171);
    assert_int_equal(dr->d.growth_bytes, 4992);
    /* its urgency's ETA from its own growth, as the API shows it: 95,008 B of room at 4,992 B
     * per 15 min (19,968 B/h) = 4.758 h = 17,128,846.15 ms (ceil) */
    assert_int_equal(dr->eta_ms, 17128847);
    /* ... and so is the host's one ETA of that pool (hosts, top, alerts, /metrics), with its
     * basis: the pool's 2 points give no trend of their own */
    const pw_host_t *hc = pw_fleet_find(pw_ingest_fleet(d.ing), "case09");
    assert_non_null(hc);
    pw_host_eta_t he;
    assert_int_equal(
        pw_analysis_host_eta(d.an, hc, PW_POOL_PAGED, &pw_analysis_run_host(d.an, hc)->pg, &he), 0);
    assert_int_equal(he.e.basis, PW_ETA_LEAK);
    assert_int_equal(he.e.eta_ms, 17128847);
    assert_int_equal(he.ran_out_ms, 0);
    /* the pool's pressure alert (1,004,992 of 1,100,000 B: critical, pending) says when it runs
     * out: T0 + 900,000 + 17,128,847 ms = 1704085228.847 s, 2024-01-01 05:00:28Z (date -u -d
     * @1704085228) */
    json_t *aj = get_alerts(&d, T0_MS + 900000);
    const json_t *pa = alert_named(aj, "PagedPoolPressure");
    assert_non_null(pa);
    assert_int_equal(json_integer_value(json_object_get(pa, "pool_eta_ms")), 1704085228847LL);
    assert_string_equal(json_string_value(json_object_get(pa, "pool_eta_basis")), "leak");
    assert_non_null(strstr(json_string_value(json_object_get(pa, "summary")),
                           "; runs out 2024-01-01 05:00:28Z; fastest-growing suspect 'Drsd' "));
    json_decref(aj);
    /* a comparison of 2 screens is listed, not alerted (its pool: paged) */
    assert_int_equal(tag_alert(d.an, "case09", "Drsd", "paged", NULL), PW_ALERT_INACTIVE);
    /* the same capture again, 4 h later: the same content (instance), nothing new is stored,
     * the import says so, and the analysis is not fed points that are not in the store */
    for (int k = 0; k < 2; k++)
        two[k].timestamp_ms += 4 * 3600000ULL;
    assert_int_equal(pw_ingest_import(d.ing, "case09", 32, "import:b", two, 2, &ir, NULL), 0);
    assert_int_equal(ir.screens, 0);
    assert_int_equal(ir.already, 2);
    pw_analysis_run_pass(d.an);
    dr = find(d.an, "Drsd");
    assert_non_null(dr);
    assert_int_equal(dr->d.points, 2);
    assert_int_equal(dr->d.span_ms, 900000);
    for (int k = 0; k < 2; k++)
        pw_sample_close(&two[k]);
    pw_double_close(&d);
}

/* Samples every 10 min of a pool that grows 1 MiB/h in office hours (08:00-18:00 UTC) from
 * 40 MiB, for two days (boot 1: 40 -> 60 MiB); the host reboots at 00:00 of the third day (boot
 * 2: the pool falls back to 40 MiB) and grows as before; one pass at 16:00 (48 MiB). Judged as if
 * its history began at the reboot (by hand): the last 2 h rise at 1 MiB/h, but the 52 MiB left
 * take 52 h, beyond 24 times their 2 h; the points since the boot span 16 h, less than the 23 h
 * the day's method needs, so the ETA comes from their net growth, 8 MiB / 16 h = 0.5 MiB/h:
 * 104 h = 374,400,000 ms (within 24 x 16 h). The 24-h window across the reboot (16:00 of the
 * second day at 60 MiB, the fall to 40 MiB, the rise since) did not rise as a whole: no ETA
 * through the office day after a reboot. */
static void test_eta_since_reboot(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = hello_boot(&d, "reboot01", "boot:1");
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const int reboot = 2 * 144, last = reboot + 96; /* 10-min steps: 00:00 day 3, 16:00 */
    for (int k = 0; k <= last; k++) {
        if (k == reboot) { /* the agent comes back in a new boot: a new session */
            h = hello_boot(&d, "reboot01", "boot:2");
            assert_non_null(h);
            pw_delta_enc_close(&e);
            assert_int_equal(pw_delta_enc_init(&e, 64), 0);
        }
        int64_t min = (int64_t)(k % 144) * 10;
        int64_t office = min < 8 * 60 ? 0 : min < 18 * 60 ? min - 8 * 60 : 10 * 60;
        uint64_t days = k < reboot ? (uint64_t)(k / 144) : 0; /* whole office days of this boot */
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 600000);
        s.totals.nonpaged_bytes =
            (40u << 20) + days * (10u << 20) + (uint64_t)office * (1u << 20) / 60;
        add(&s, "Flat", PW_POOL_NONPAGED, 4096, 4, 0);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
    }
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_analysis_run_pass(d.an);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, h);
    assert_non_null(res);
    assert_int_equal(res->np.used_bytes, 48u << 20);
    assert_true(res->np.trend_up);
    assert_int_equal(res->np_how.method, PW_ETA_METHOD_NET);
    assert_int_equal(res->np_how.since_boot_ms, T0_MS + (int64_t)reboot * 600000);
    assert_int_equal(res->np_how.window_ms, 16 * 3600000LL);
    assert_true(fabs(res->np_how.rate_bytes_per_h - 524288.0) < 1e-6);
    assert_int_equal(res->np.eta_ms, 374400000LL);
    /* the note says what the ETA rests on, and why not the day's method */
    pw_host_eta_t he;
    assert_int_equal(pw_analysis_host_eta(d.an, h, PW_POOL_NONPAGED, &res->np, &he), 0);
    assert_int_equal(he.e.basis, PW_ETA_POOL);
    assert_int_equal(he.e.eta_ms, 374400000LL);
    char want[256];
    snprintf(want, sizeof(want),
             "from +512.0 KiB/h, the pool's net growth over the last 16.0 h since its boot at "
             "2024-01-03 00:00Z: too short a boot to repeat its day (23 h) (rising, p %.2g)",
             res->np.mk_p);
    assert_string_equal(he.e.note, want);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

static json_t *get_host(pw_double_t *d, const char *name);
static void restart(pw_double_t *d);

/* The new-user trial: an import's "ran out since" changed across a restart (its last screen
 * before, its first after): the history ring held no screen of an import, so the time came from
 * its newest table; after a restart the ring came from the store's buckets. 4 screens 15 min
 * apart, the nonpaged limit 100 MiB in the capture, the pool at 95, 99, 100 and 101 MiB: it ran
 * out at the third screen (T0 + 30 min), before a restart, before the new collector's first pass
 * and after it. */
static void test_import_ran_out_across_restart(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    pw_sample_t ss[4];
    static const unsigned mib[4] = {95, 99, 100, 101};
    for (int k = 0; k < 4; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        ss[k].totals.nonpaged_bytes = (uint64_t)mib[k] << 20;
        ss[k].totals.nonpaged_limit_bytes = 100u << 20;
        add(&ss[k], "Full", PW_POOL_NONPAGED, (uint64_t)mib[k] << 20, 1000 + (uint64_t)k, k);
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "full01", 32, "import:a", ss, 4, &ir, NULL), 0);
    for (int k = 0; k < 4; k++)
        pw_sample_close(&ss[k]);
    for (int step = 0; step < 3; step++) {
        if (step == 0)
            pw_analysis_run_pass(d.an);
        json_t *h = get_host(&d, "full01");
        assert_string_equal(json_string_value(json_object_get(h, "nonpaged_eta_basis")), "ran_out");
        assert_int_equal(json_integer_value(json_object_get(h, "nonpaged_ran_out_ms")),
                         T0_MS + 1800000);
        json_decref(h);
        if (step == 0)
            restart(&d); /* step 1: before its first pass */
        else if (step == 1)
            pw_analysis_run_pass(d.an);
    }
    pw_double_close(&d);
}

static const pw_suspect_t *find_tag(const pw_analysis_run_t *an, const char *tag)
{
    const pw_suspect_t *sp;
    size_t n = pw_analysis_run_suspects(an, &sp), tl = strlen(tag);
    for (size_t i = 0; i < n; i++)
        if (sp[i].tag_len == tl && memcmp(sp[i].tag, tag, tl) == 0)
            return &sp[i];
    return NULL;
}

/* A Linux host's saved series (a shell loop's `date; cat /proc/slabinfo; cat /proc/allocinfo`
 * every 15 min, 12 times: tests/fixtures/linux_series, generator in SOURCES.md) is judged by
 * the same engine as poolmon screens: dentry grows 210 objects of 192 B a point (40,320 B per
 * 15 min), the allocation site fs/dcache.c:1700 4,096 B a point; the six churn caches and the
 * steady rows are not suspects. */
static void test_import_linux_series_judged(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    size_t len;
    char *text =
        pw_test_read_file(pw_test_fixture("linux_series/slab_loop_12x15min_dentry_leak.txt"), &len);
    pw_linux_series_t ser;
    pw_diag_t dg;
    assert_int_equal(pw_linux_series_parse(text, len, NULL, &ser, &dg), 0);
    assert_int_equal(ser.n_points, 12);
    assert_int_equal(ser.n_skipped, 12); /* the "$ sleep 900" lines */
    pw_sample_t ss[12];
    for (size_t i = 0; i < 12; i++) {
        ss[i] = ser.points[i].sample;
        pw_sample_init(&ser.points[i].sample);
    }
    pw_linux_series_close(&ser);
    /* 2026-11-30 22:00:00 UTC (date -u -d ... +%s: 1796076000) */
    assert_int_equal(ss[0].timestamp_ms, 1796076000000ull);
    assert_int_equal(ss[11].timestamp_ms, 1796076000000ull + 11 * 900000ull);
    pw_ingest_limits_t lim;
    pw_ingest_limits_default(&lim);
    lim.max_ahead_ms = 1000ull * 86400000; /* the fixture's 2026 is ahead of this machine */
    pw_ingest_set_limits(d.ing, &lim);
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "linux01", 64, "import:l", ss, 12, &ir, &dg), 0);
    assert_int_equal(ir.screens, 12);
    /* 8 caches + 2 sites with live allocations a point */
    assert_int_equal(ir.rows, 12 * 10);
    const pw_host_t *h = pw_fleet_find(pw_ingest_fleet(d.ing), "linux01");
    assert_non_null(h);
    assert_string_equal(h->os_family, "linux");
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *t = find_tag(d.an, "dentry");
    assert_non_null(t);
    assert_int_equal(t->pool, PW_POOL_NONPAGED);
    assert_int_equal(t->d.verdict, PW_DETECT_LEAK);
    assert_int_equal(t->d.points, 12);
    assert_int_equal(t->d.growth_bytes, 11 * 40320);
    assert_true(fabs(t->d.rate_bytes_per_h - 4 * 40320.0) < 1e-6);
    const pw_suspect_t *site = find_tag(d.an, "fs/dcache.c:1700");
    assert_non_null(site);
    assert_int_equal(site->d.verdict, PW_DETECT_LEAK);
    assert_int_equal(site->d.growth_bytes, 11 * 4096);
    for (int r = 0; r < 6; r++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "churn-%d", r);
        assert_null(find_tag(d.an, tag));
    }
    assert_null(find_tag(d.an, "kmalloc-8k"));
    assert_null(find_tag(d.an, "mm/slub.c:2259"));
    for (int k = 0; k < 12; k++)
        pw_sample_close(&ss[k]);
    free(text);
    pw_double_close(&d);
}

/* Sample k of a host whose `Ddk ` leaks `per` bytes (and per / 1,024 allocations) every
 * `step_ms` beside a flat tag, sent through the double. */
static void send_ddk(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, pw_sample_t *s, int k,
                     int64_t step_ms, uint64_t per)
{
    pw_sample_reset(s);
    s->seq = (uint64_t)k + 1;
    s->timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * step_ms);
    s->totals.nonpaged_bytes = (40u << 20) + (uint64_t)k * per;
    add(s, "Ddk ", PW_POOL_NONPAGED, 600000 + (uint64_t)k * per, 600 + per / 1024 * (uint64_t)k, k);
    add(s, "Flat", PW_POOL_NONPAGED, 1u << 20, 256, k);
    assert_int_equal(pw_double_send(d, e, h, s), 0);
}

/* The collector stops; a new one opens the same store. */
static void restart(pw_double_t *d)
{
    pw_analysis_run_close(d->an);
    pw_ingest_free(d->ing);
    assert_int_equal(pw_ingest_new(d->store, &d->ing, NULL), 0);
    assert_int_equal(pw_analysis_run_new(NULL, d->ing, NULL, &d->an), 0);
    d->api.an = d->an;
    d->api.ing = d->ing;
}

/* After a restart the state is rebuilt from the store: a host that leaked for 6 h (+4 KiB a
 * minute) is listed by the first pass of the new collector, not after a new window fills, also
 * when its agent is back and has sent a sample before that pass. */
static void test_restart_rebuilds_state(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = hello(&d, "boot01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 360; k++)
        send_ddk(&d, &e, h, &s, k, 60000, 4096);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    restart(&d);
    /* the agent is back before the first pass: its new sample must not hide the history */
    h = hello(&d, "boot01");
    assert_non_null(h);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    send_ddk(&d, &e, h, &s, 361, 60000, 4096);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *x = find(d.an, "Ddk ");
    assert_non_null(x);
    assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
    assert_true(x->d.span_ms >= 5 * 3600000LL); /* the 6 h before the restart */
    assert_null(find(d.an, "Flat"));
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* A suspect keeps its evidence across a restart when the raw chunks behind it have expired: 6
 * days of a leak (+40 KiB every 10 min, 240 KiB/h) whose first 4 days are rollups by then. The
 * rebuild reads the raw 48 h; the first pass lists the leak over those, the next reaches back
 * into the store's 1-minute level and judges the 6 days again: the same growth and span as
 * before the restart. */
static void test_restart_keeps_evidence_beyond_raw(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = hello(&d, "boot01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const int last = 6 * 144; /* 6 days of 10-min samples: k = 0 .. 864 */
    for (int k = 0; k <= last; k++) {
        send_ddk(&d, &e, h, &s, k, 600000, 40960);
        if (k % 36 == 35)
            assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    }
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *x = find(d.an, "Ddk ");
    assert_non_null(x);
    /* before the restart: every sample of the 6 days (hand: 864 steps of 40,960 B) */
    assert_int_equal(x->d.growth_bytes, 864 * 40960);
    assert_int_equal(x->d.span_ms, 864 * 600000LL);
    /* raw chunks older than 48 h become rollups */
    uint64_t now = (uint64_t)(T0_MS + (int64_t)last * 600000 + 60000);
    assert_int_equal(pw_store_flush(d.store, NULL), 0); /* every chunk compacted */
    assert_true(pw_store_retention(d.store, now, NULL) > 0);
    restart(&d);
    pw_analysis_run_pass(d.an);
    x = find(d.an, "Ddk ");
    assert_non_null(x);
    assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
    assert_true(x->d.span_ms <= 49 * 3600000LL); /* the raw 48 h only */
    pw_analysis_run_pass(d.an);
    x = find(d.an, "Ddk ");
    assert_non_null(x);
    assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
    /* back to the first sample (k = 0): the same evidence as before the restart */
    assert_int_equal(x->d.span_ms, 864 * 600000LL);
    assert_int_equal(x->d.growth_bytes, 864 * 40960);
    assert_int_equal(x->d.growth_diff, 864 * 40);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* The collector stops; a new one opens the same store, keeping the suspects in `kept` (the
 * collector's <store.path>.suspects.json; NULL: not kept). */
static void restart_kept(pw_double_t *d, const char *kept)
{
    pw_analysis_run_close(d->an);
    pw_ingest_free(d->ing);
    assert_int_equal(pw_ingest_new(d->store, &d->ing, NULL), 0);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.kept_path = kept;
    assert_int_equal(pw_analysis_run_new(NULL, d->ing, &o, &d->an), 0);
    d->api.an = d->an;
    d->api.ing = d->ing;
}

/* A leak of office hours, as the quickstart's ddk-2003: "Ddk " grows 6 allocations of 512 B each
 * 10-min sample from 08:00 to 18:00 UTC and stands still at night, for 6 days. */
static void send_office(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, pw_sample_t *s, int k)
{
    int64_t ts = T0_MS + (int64_t)k * 600000; /* T0 is 00:00 UTC */
    uint64_t grown = 0;                       /* office samples before this one */
    for (int j = 1; j <= k; j++) {
        int hour = (int)(((int64_t)j * 600000 / 3600000) % 24);
        grown += hour >= 8 && hour < 18;
    }
    pw_sample_reset(s);
    s->seq = (uint64_t)k + 1;
    s->timestamp_ms = (uint64_t)ts;
    s->totals.nonpaged_bytes = (40u << 20) + grown * 3072;
    add(s, "Ddk ", PW_POOL_NONPAGED, 600 * 512 + grown * 3072, 600 + grown * 6, k);
    add(s, "Flat", PW_POOL_NONPAGED, 1u << 20, 256, k);
    assert_int_equal(pw_double_send(d, e, h, s), 0);
}

/* A suspect's evidence, rate and big-pool snapshot are the same after a clean restart (the
 * trial: "rose in 43 of 44 steps" came back "39 of 42", +238.6 KiB/h +230.5, and the big-pool
 * line was gone). Its ring was thinned as 6 days of samples came; the store's tables and rollups
 * rebuild another one (shown here: without the kept file the evidence differs), so the stop
 * keeps the ring with the snapshot and the restart puts them back. */
static void test_restart_keeps_ring_and_big_pool(void **state_)
{
    (void)state_;
    char dir[] = "/tmp/pw_kept_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/suspects.json", dir);
    char ev[3][256];
    double rate[3];
    for (int run = 0; run < 2; run++) { /* 0: kept across the restart, 1: not kept */
        pw_double_t d;
        assert_int_equal(pw_double_open(&d), 0);
        restart_kept(&d, run == 0 ? path : NULL);
        pw_host_t *h = hello(&d, "ring01");
        pw_delta_enc_t e;
        assert_int_equal(pw_delta_enc_init(&e, 64), 0);
        pw_sample_t s;
        pw_sample_init(&s);
        const int last = 6 * 144;
        for (int k = 0; k <= last; k++) {
            send_office(&d, &e, h, &s, k);
            if (k % 36 == 35) {
                assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
                pw_analysis_run_pass(d.an); /* the ring is fed and judged as it goes */
            }
        }
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        pw_analysis_run_pass(d.an);
        const pw_suspect_t *x = find(d.an, "Ddk ");
        assert_non_null(x);
        assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
        snprintf(ev[0], sizeof(ev[0]), "%s", x->d.evidence);
        rate[0] = x->d.rate_bytes_per_h;
        /* the agent's big-pool answer for the suspect */
        Poolwatch__V1__BigPoolSnapshot bp = POOLWATCH__V1__BIG_POOL_SNAPSHOT__INIT;
        uint64_t hist[3] = {0, 2, 1};
        bp.tag.data = (uint8_t *)"Ddk ";
        bp.tag.len = 4;
        bp.taken_ms = (uint64_t)T0_MS + 123456;
        bp.scanned = 900;
        bp.count = 3;
        bp.bytes = 3 * 12288;
        bp.nonpaged_count = 3;
        bp.nonpaged_bytes = 3 * 12288;
        bp.largest_bytes = 16384;
        bp.smallest_bytes = 8192;
        bp.size_hist = hist;
        bp.n_size_hist = 3;
        assert_int_equal(pw_ingest_big_pool(d.ing, h, &bp, 1, (uint64_t)T0_MS + 200000), 0);
        restart_kept(&d, run == 0 ? path : NULL); /* the agent stays away */
        pw_analysis_run_pass(d.an);
        pw_analysis_run_pass(d.an); /* a rebuilt suspect reaches back at its second pass */
        x = find(d.an, "Ddk ");
        assert_non_null(x);
        assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
        snprintf(ev[1 + run], sizeof(ev[1]), "%s", x->d.evidence);
        rate[1 + run] = x->d.rate_bytes_per_h;
        const pw_host_t *rh = pw_fleet_find(pw_ingest_fleet(d.ing), "ring01");
        const pw_bigpool_snap_t *b = pw_host_big_pool(rh, (const uint8_t *)"Ddk ", 4);
        if (run == 0) {
            assert_string_equal(ev[1], ev[0]);
            assert_true(rate[1] == rate[0]);
            assert_non_null(b);
            assert_int_equal(b->taken_ms, (uint64_t)T0_MS + 123456);
            assert_int_equal(b->received_ms, (uint64_t)T0_MS + 200000);
            assert_int_equal(b->automatic, 1);
            assert_int_equal(b->scanned, 900);
            assert_int_equal(b->count, 3);
            assert_int_equal(b->bytes, 3 * 12288);
            assert_int_equal(b->nonpaged_count, 3);
            assert_int_equal(b->nonpaged_bytes, 3 * 12288);
            assert_int_equal(b->largest_bytes, 16384);
            assert_int_equal(b->smallest_bytes, 8192);
            assert_int_equal(b->n_hist, 3);
            assert_int_equal(b->size_hist[1], 2);
            assert_int_equal(b->size_hist[2], 1);
        } else {
            assert_null(b);
        }
        pw_sample_close(&s);
        pw_delta_enc_close(&e);
        pw_double_close(&d);
    }
    /* without the kept ring, the rebuilt one says something else */
    print_message("before: %s, %.1f B/h; rebuilt: %s, %.1f B/h\n", ev[0], rate[0], ev[2], rate[2]);
    assert_true(strcmp(ev[2], ev[0]) != 0 || rate[2] != rate[0]);
    remove(path);
    assert_int_equal(rmdir(dir), 0);
}

/* The view's changed rows (what the analysis feeds on): a keyframe may change any row
 * (SIZE_MAX), a delta that changes one row names exactly that row, a delta that adds a row
 * makes the whole table suspect again. */
static void test_changed_rows_view(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = hello(&d, "rows01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const uint32_t *idx;
    for (int k = 0; k < 3; k++) {
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)(T0_MS + k * STEP_MS);
        add(&s, "Aaaa", PW_POOL_NONPAGED, 4096, 4, 0);
        add(&s, "Bbbb", PW_POOL_NONPAGED, 8192 + (uint64_t)k * 512, 8 + (uint64_t)k, 0);
        add(&s, "Cccc", PW_POOL_PAGED, 100, 1, 0);
        if (k == 2)
            add(&s, "Dddd", PW_POOL_PAGED, 64, 1, 0);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        size_t n = pw_host_changed_rows(h, &idx);
        if (k != 1) {
            assert_true(n == SIZE_MAX); /* a keyframe; then a row added */
            continue;
        }
        assert_int_equal(n, 1);
        pw_host_row_t r;
        pw_host_row(h, idx[0], &r);
        assert_memory_equal(r.tag, "Bbbb", 4);
        assert_int_equal(r.bytes, 8704);
    }
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* An office day on host `name`: every 10 min from 00:00 to 27:00 the nonpaged pool grows 1 MiB/h
 * from 08:00 to 18:00 UTC (from 40 MiB), plus `creep` bytes every 10 min from 18:00; then one
 * pass. Returns the host's results (the double stays open in *d). */
/* Sample k (at T0 + k x 10 min) of office_day's host. */
static void office_sample(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, pw_sample_t *s, int k,
                          uint64_t creep)
{
    int64_t min = (int64_t)k * 10;
    int64_t office = min < 8 * 60 ? 0 : min < 18 * 60 ? min - 8 * 60 : 10 * 60;
    uint64_t night = min < 18 * 60 ? 0 : (uint64_t)(min - 18 * 60) / 10 * creep;
    pw_sample_reset(s);
    s->seq = (uint64_t)k + 1;
    s->timestamp_ms = (uint64_t)(T0_MS + min * 60000);
    s->totals.nonpaged_bytes = (40u << 20) + (uint64_t)office * (1u << 20) / 60 + night;
    add(s, "Flat", PW_POOL_NONPAGED, 4096, 4, 0);
    assert_int_equal(pw_double_send(d, e, h, s), 0);
}

static const pw_analysis_host_t *office_day(pw_double_t *d, const char *name, uint64_t creep)
{
    assert_int_equal(pw_double_open(d), 0);
    pw_host_t *h = hello(d, name);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 162; k++)
        office_sample(d, &e, h, &s, k, creep);
    assert_true(pw_ingest_commit(d->ing, NULL) >= 0);
    pw_analysis_run_pass(d->an);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    const pw_analysis_host_t *res = pw_analysis_run_host(d->an, h);
    assert_non_null(res);
    return res;
}

/* A pool that grows only in office hours (1 MiB/h from 08:00 to 18:00 UTC, from 40 MiB; limit
 * 100 MiB), judged at 03:00 the next day: the last 2 h are flat, so the ETA comes from the last
 * 24 h. The long ring keeps 144 points 10 min apart: 03:10 .. 03:00, span 23 h 50 min, grown by
 * the 10 MiB of one office day (slope 10 MiB / 23.8333 h); used 50 MiB. The day repeated: 10 MiB
 * more at 18:00 of each of the next days, 100 MiB at 18:00 of the 5th: 4 days + 15 h = 111 h
 * = 399,600,000 ms (a line through the day's net growth said 119.17 h: at 02:10, in the night
 * after the pool ran out). */
static void test_eta_at_night_from_the_day(void **state_)
{
    (void)state_;
    pw_double_t d;
    const pw_analysis_host_t *res = office_day(&d, "night01", 0);
    assert_int_equal(res->np.used_bytes, 50u << 20);
    assert_int_equal(res->np_trend_ms, 24 * 3600000LL);
    assert_true(res->np.trend_up);
    assert_int_equal(res->np.eta_ms, 399600000LL);
    assert_true(fabs(res->np.slope_bytes_per_h - 10.0 * 1048576 / (143.0 / 6.0)) < 1e-6);
    pw_double_close(&d);
}

/* Office days (1 MiB/h from 08:00 to 18:00 UTC every day, from 40 MiB; limit 100 MiB), every 10
 * min from 00:00 of day 0 to 17:20 of day 1 (41:20), then one pass. At 17:20 the pool rose over
 * the last 2 h as over the same 2 h yesterday (15:20-17:20): the day repeats. It was compared
 * with the 2 h after this hour yesterday (17:20-19:20: 40 min of growth), so from 16:00 to 18:00
 * the 2-h trend gave the ETA, a day or two early (the quickstart's ddk-2003 at 17:15: 44 h).
 * By hand, the day method: used 50 MiB + 560 min x 1 MiB / 60 = 52,428,800 + 9,786,709; the
 * day's window 17:30 (day 0) .. 17:20, its first point 9,961,472 B into day 0's office hours:
 * G = 10,310,997 B; room 42,642,091 B = 4 G + 1,398,103. The profile from 17:30 gives 524,288
 * by 18:00, the other 873,815 B at 08:50 (873,813 B) + 2 / 174,763 of 10 min (6.87 ms): 15 h
 * 20 min after 17:30. ETA = 600,000 (to 17:30 + 24 h) + 4 x 86,400,000 + 55,200,006.87 ms. */
static void test_eta_office_day_late_afternoon(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = hello(&d, "office02");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 248; k++) {
        int64_t min = (int64_t)k * 10, day = min / 1440, m = min % 1440;
        int64_t office = day * 600 + (m < 8 * 60 ? 0 : m < 18 * 60 ? m - 8 * 60 : 10 * 60);
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)(T0_MS + min * 60000);
        s.totals.nonpaged_bytes = (40u << 20) + (uint64_t)office * (1u << 20) / 60;
        s.totals.nonpaged_limit_bytes = 100u << 20;
        add(&s, "Flat", PW_POOL_NONPAGED, 4096, 4, 0);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
    }
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_analysis_run_pass(d.an);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, h);
    assert_non_null(res);
    assert_int_equal(res->np.used_bytes, (50u << 20) + 9786709u);
    assert_int_equal(res->np_how.method, PW_ETA_METHOD_DAY);
    assert_true(res->np.eta_ms >= 401400006LL && res->np.eta_ms <= 401400007LL);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* The same day, and at night the pool creeps up by 1 KiB every 10 min (other tags): the last
 * 2 h rise (12 steps up) but too slowly for an ETA within 24 spans of 2 h (~8,500 h). The ETA
 * then comes from the last 24 h, as on a flat night (the quickstart's ddk-2003 host in the
 * evening showed none). At 27:00 the pool holds 50 MiB + 54 KiB (54 creep steps since 18:00);
 * the ring 03:10 (40 MiB) .. 27:00 grew G = 10 MiB + 54 KiB; room 50 MiB - 54 KiB = 4 G +
 * (10 MiB - 270 KiB). The day repeated from 03:10 + 24 h (10 min from now): 4 whole days, then
 * office hours until they add 10 MiB - 270 KiB = 10,209,280 B: between the samples of 17:40
 * (580 min x 1 MiB / 60, 10,136,234 B as an integer) and 17:50 (10,310,997 B), 73,046 / 174,763
 * of the 10 min after 17:40 (250,783 ms), 52,450,783 ms after 03:10. ETA = 600,000 + 4 x
 * 86,400,000 + 52,450,783 = 398,650,783 ms. */
static void test_eta_at_night_with_a_creep(void **state_)
{
    (void)state_;
    pw_double_t d;
    const pw_analysis_host_t *res = office_day(&d, "night02", 1024);
    /* 27:00: 50 MiB and 54 creep steps */
    uint64_t used = (50u << 20) + 54 * 1024;
    assert_int_equal(res->np.used_bytes, used);
    assert_int_equal(res->np_trend_ms, 24 * 3600000LL);
    assert_true(res->np.trend_up);
    /* the 24 h ring's first point is 03:10 (40 MiB), its last 27:00: 143 steps of 10 min */
    double rate = (double)(used - (40u << 20)) / (143.0 / 6.0); /* B/h */
    assert_true(fabs(res->np.slope_bytes_per_h - rate) < 1e-6);
    assert_int_equal(res->np.eta_ms, 398650783LL);
    pw_double_close(&d);
}

/* An imported capture carries no boot id: a reboot shows as the rows' counters going down.
 * 14 screens 15 min apart (limit 100 MiB): 8 of boot 1 with the nonpaged pool at 40 .. 47 MiB,
 * then 6 after a reboot at 30 .. 35 MiB, the two rows' Allocs and Frees starting again from a
 * few. By hand, the points since the reboot alone: +1 MiB a screen, 4 MiB/h over 1.25 h (6
 * points: the trend's least), 65 MiB left: 16.25 h = 58,500,000 ms (within 24 x 1.25 h). Across
 * the reboot the 2-h window (47, the fall, 30 .. 35) said otherwise. */
static void test_import_eta_since_reboot(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_sample_t ss[14];
    for (int k = 0; k < 14; k++) {
        int after = k >= 8;
        uint64_t c = after ? 5 + 3 * (uint64_t)(k - 8) : 100000 + 500 * (uint64_t)k;
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        ss[k].totals.nonpaged_bytes = (uint64_t)(after ? 30 + (k - 8) : 40 + k) << 20;
        ss[k].totals.nonpaged_limit_bytes = 100u << 20;
        assert_int_equal(pw_sample_add(&ss[k], "Aaaa", 4, PW_POOL_NONPAGED, c + 10, c, 10, 4096),
                         0);
        assert_int_equal(
            pw_sample_add(&ss[k], "Bbbb", 4, PW_POOL_NONPAGED, 2 * c + 7, 2 * c, 7, 7168), 0);
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "boot02", 32, "import:a", ss, 14, &ir, NULL), 0);
    for (int k = 0; k < 14; k++)
        pw_sample_close(&ss[k]);
    pw_analysis_run_pass(d.an);
    const pw_host_t *h = pw_fleet_find(pw_ingest_fleet(d.ing), "boot02");
    assert_non_null(h);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, h);
    assert_non_null(res);
    assert_int_equal(res->np.used_bytes, 35u << 20);
    assert_int_equal(res->np.n_window, 6);
    assert_int_equal(res->np_how.method, PW_ETA_METHOD_TREND);
    assert_int_equal(res->np_how.since_boot_ms, T0_MS + 8 * 900000LL);
    assert_true(fabs(res->np.slope_bytes_per_h - 4.0 * 1048576) < 1e-6);
    assert_int_equal(res->np.eta_ms, 58500000LL);
    pw_double_close(&d);
}

static json_t *get_host(pw_double_t *d, const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/hosts/%s", name);
    return api_get(d, path, T0_MS);
}

static void restart_kept(pw_double_t *d, const char *kept);

/* What the ETA rests on, as the API gives it beside the ETA: office_day's pool judged at 03:00
 * (test_eta_at_night_from_the_day) by the day repeated. Its window 03:10 .. 03:00 spans 143
 * steps of 10 min (85,800,000 ms) and grew 10 MiB; the 60 steps of 08:00 .. 18:00 rose by
 * 174,762 or 174,763 B each (1 MiB/h), above half the window's mean step (10 MiB / 143 / 2 =
 * 36,663 B), the others not at all: it grew during 10 h (36,000,000 ms) at 10 MiB / 10 h =
 * 1 MiB/h. A reader sets that 1 MiB/h, not the day's average (10 MiB / 23.8 h = 430 KiB/h), against
 * the room left. */
static void test_eta_basis_in_api(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    pw_host_t *hh = hello(&d, "night03");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 162; k++)
        office_sample(&d, &e, hh, &s, k, 0);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_analysis_run_pass(d.an);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, hh);
    assert_non_null(res);
    assert_int_equal(res->np.eta_ms, 399600000LL); /* test_eta_at_night_from_the_day */
    assert_int_equal(res->np_how.method, PW_ETA_METHOD_DAY);
    assert_int_equal(res->np_how.window_ms, 85800000LL);
    assert_int_equal(res->np_how.grew_ms, 36000000LL);
    assert_true(fabs(res->np_how.day_bytes - 10485760.0) < 1e-6);
    assert_true(fabs(res->np_how.rate_bytes_per_h - 1048576.0) < 1e-6);
    assert_int_equal(res->np_how.since_boot_ms, 0);
    json_t *h = get_host(&d, "night03");
    assert_string_equal(json_string_value(json_object_get(h, "nonpaged_eta_basis")), "pool");
    assert_string_equal(json_string_value(json_object_get(h, "nonpaged_eta_method")), "day");
    assert_true(fabs(json_number_value(json_object_get(h, "nonpaged_eta_rate_bytes_per_h")) -
                     1048576.0) < 1e-6);
    assert_int_equal(json_integer_value(json_object_get(h, "nonpaged_eta_window_ms")), 85800000);
    assert_int_equal(json_integer_value(json_object_get(h, "nonpaged_eta_grew_ms")), 36000000);
    assert_true(json_is_null(json_object_get(h, "nonpaged_eta_since_boot_ms")));
    char want[256];
    snprintf(want, sizeof(want),
             "from +1.0 MiB/h, the pool's pace in the 10.0 h it grew of the last 23.8 h "
             "(+10.0 MiB a day), that day repeated (rising, p %.2g)",
             res->np.mk_p);
    assert_string_equal(json_string_value(json_object_get(h, "nonpaged_eta_note")), want);
    json_decref(h);
    pw_double_close(&d);
}

/* The new-user trial: after a restart the quickstart's ddk-2003 (a leak of office hours) said "no
 * ETA: the pool as a whole does not rise (trend p 0.011 over 121 points)" until the first pass,
 * and its alerts had no "runs out": its agent streams, so the store held a sample newer than the
 * last pass's verdict, the kept verdict was skipped and the API judged the history ring rebuilt
 * from 1-min buckets (flat for the last 2 h at night) meanwhile.
 * office_day's host judged at 27:00 (ETA 399,600,000 ms from the last 24 h, as
 * test_eta_at_night_from_the_day computes), then one more sample a minute later and a clean
 * stop: before the new collector's first pass the host shows exactly what it showed before the
 * stop (ETA 27:01 + 399,600,000 ms: the API counts from the newest sample). Then 2 h of samples
 * that no pass saw, and a restart: the kept verdict is older than the store by more than a save can
 * lag (4 passes + kept_every; as after a crash long after the last save): no ETA yet, and the note
 * says so instead of judging the rebuilt ring; the first pass gives the ETA of its last 24 h, read
 * back from the store: a point per 10 min from 05:00 (40 MiB) to 29:00 (50 MiB) but 27:10 (never
 * sent; 27:01 is within 10 min of 27:00): 144 points over 24 h, 10 MiB a day, 50 MiB left: the
 * day repeated from 05:00 on, 10 MiB more at 18:00 of each day, 100 MiB at 18:00 of the 5th:
 * 4 days + 13 h = 109 h = 392,400,000 ms. */
static void test_restart_keeps_pressure_of_streaming_host(void **state_)
{
    (void)state_;
    char dir[] = "/tmp/pw_keptp_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/suspects.json", dir);
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    restart_kept(&d, path);
    pw_host_t *h = hello(&d, "night03");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 162; k++)
        office_sample(&d, &e, h, &s, k, 0);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_analysis_run_pass(d.an);
    assert_int_equal(pw_analysis_run_host(d.an, h)->np.eta_ms, 399600000LL);
    /* a sample after the last pass, as the pool stood at 27:00 */
    s.seq++;
    s.timestamp_ms += 60000;
    assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    json_t *before = get_host(&d, "night03");
    const int64_t eta = T0_MS + 162 * 600000LL + 60000 + 399600000LL;
    assert_int_equal(json_integer_value(json_object_get(before, "nonpaged_eta_ms")), eta);
    restart_kept(&d, path);
    json_t *now = get_host(&d, "night03");
    static const char *const keys[] = {"nonpaged_eta_ms", "nonpaged_eta_basis",
                                       "nonpaged_eta_range_ms", "nonpaged_eta_note",
                                       "nonpaged_level"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!json_equal(json_object_get(before, keys[i]), json_object_get(now, keys[i])))
            fail_msg("%s: %s before the restart, %s after", keys[i],
                     json_dumps(json_object_get(before, keys[i]), JSON_ENCODE_ANY),
                     json_dumps(json_object_get(now, keys[i]), JSON_ENCODE_ANY));
    assert_string_equal(json_string_value(json_object_get(now, "nonpaged_eta_basis")), "pool");
    json_decref(now);
    json_decref(before);

    /* 2 h more that no pass saw */
    h = hello(&d, "night03");
    pw_delta_enc_close(&e);
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    for (int k = 164; k <= 174; k++)
        office_sample(&d, &e, h, &s, k, 0);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    restart_kept(&d, path); /* the verdict kept is still the one of 27:00 */
    now = get_host(&d, "night03");
    assert_true(json_is_null(json_object_get(now, "nonpaged_eta_ms")));
    assert_true(json_is_null(json_object_get(now, "nonpaged_eta_basis")));
    assert_string_equal(json_string_value(json_object_get(now, "nonpaged_eta_note")),
                        "no ETA yet: its samples wait for the analysis' next pass (every 30 s)");
    json_decref(now);
    pw_analysis_run_pass(d.an);
    h = (pw_host_t *)pw_fleet_find(pw_ingest_fleet(d.ing), "night03");
    assert_int_equal(pw_analysis_run_host(d.an, h)->np.eta_ms, 392400000LL);
    now = get_host(&d, "night03");
    assert_int_equal(json_integer_value(json_object_get(now, "nonpaged_eta_ms")),
                     T0_MS + 174 * 600000LL + 392400000LL);
    json_decref(now);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
    remove(path);
    assert_int_equal(rmdir(dir), 0);
}

static pw_alert_state_t silent_state(const pw_analysis_run_t *an, const char *sev)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "clock01");
    snprintf(k.pool, sizeof(k.pool), PW_ALERT_POOL_SILENT);
    snprintf(k.severity, sizeof(k.severity), "%s", sev);
    assert_string_equal(pw_analysis_alert_name(&k), "HostSilent");
    return pw_alert_state(pw_analysis_run_alerts(an), &k, NULL);
}

/* Samples of h every STEP_MS from T0 to T0 + 120 s, the pool at USED (0.90 of its limit), a pass
 * every 3 samples on clk. Returns the next seq - 1 (13). */
static int stream_120s(pw_double_t *d, pw_delta_enc_t *e, pw_sample_t *s, pw_host_t *h,
                       sim_clock_t *clk)
{
    int k = 0;
    for (; k <= 12; k++) {
        pw_sample_reset(s);
        s->seq = (uint64_t)k + 1;
        s->timestamp_ms = (uint64_t)(T0_MS + k * STEP_MS);
        s->totals.nonpaged_bytes = USED;
        add(s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
        assert_int_equal(pw_double_send(d, e, h, s), 0);
        if (k % 3 == 0) {
            clk->now = T0_MS + k * STEP_MS;
            pw_analysis_run_pass(d->an);
        }
    }
    return k;
}

/* HostSilent: a host streaming every 10 s (no interval in its Hello: the 60 s floor) at 0.90 of
 * its nonpaged limit stops at T0 + 120 s. Passes every 30 s of the clock: silent for 30 s, not
 * yet; for 60 s, critical (its pool was at critical), not warning; its next sample resolves it. */
static void test_host_silent(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    pw_host_t *h = hello(&d, "clock01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int k = stream_120s(&d, &e, &s, h, &clk);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_INACTIVE);
    clk.now = T0_MS + 120000 + 30000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_INACTIVE);
    clk.now = T0_MS + 120000 + 60000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_FIRING);
    assert_int_equal(silent_state(d.an, "warning"), PW_ALERT_INACTIVE);
    char sum[200], desc[200];
    pw_alert_key_t key;
    memset(&key, 0, sizeof(key));
    snprintf(key.host, sizeof(key.host), "clock01");
    snprintf(key.pool, sizeof(key.pool), PW_ALERT_POOL_SILENT);
    pw_analysis_alert_text(&key, 60.0, sum, sizeof(sum), desc, sizeof(desc));
    assert_string_equal(sum, "clock01: no sample for 60 s");
    /* it speaks again */
    pw_sample_reset(&s);
    s.seq = (uint64_t)k + 1;
    s.timestamp_ms = (uint64_t)(T0_MS + 190000);
    s.totals.nonpaged_bytes = USED;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
    assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
    clk.now = T0_MS + 190000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_RESOLVED);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* One sample of "Ddk " at ts, at USED, sent to h. */
static void send_at(pw_double_t *d, pw_delta_enc_t *e, pw_sample_t *s, pw_host_t *h, uint64_t seq,
                    int64_t ts)
{
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = (uint64_t)ts;
    s->totals.nonpaged_bytes = USED;
    add(s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
    assert_int_equal(pw_double_send(d, e, h, s), 0);
}

/* A host "clock01" that said Hello on a clock 10 h after T0, for a backfill from T0. */
typedef struct {
    pw_double_t d;
    sim_clock_t clk;
    pw_host_t *h;
    pw_delta_enc_t e;
    pw_sample_t s;
} backfill_t;

static void backfill_open(backfill_t *b)
{
    assert_int_equal(pw_double_open(&b->d), 0);
    b->clk.now = T0_MS + 10 * 3600000LL;
    b->clk.calls = 0;
    on_clock(&b->d, &b->clk);
    b->h = hello(&b->d, "clock01");
    assert_int_equal(pw_delta_enc_init(&b->e, 64), 0);
    pw_sample_init(&b->s);
}

static void backfill_close(backfill_t *b)
{
    pw_sample_close(&b->s);
    pw_delta_enc_close(&b->e);
    pw_double_close(&b->d);
}

/* An agent sending a backfill (samples hours old, arriving now) is not silent: the silence is
 * counted from when its last sample came, not from that sample's time (the quickstart's
 * ddk-2003, 14 days backfilled, fired a critical HostSilent of 8 h at its first pass). */
static void test_host_backfill_not_silent(void **state_)
{
    (void)state_;
    backfill_t b;
    backfill_open(&b);
    for (int k = 0; k <= 12; k++) /* T0 .. T0 + 120 s, 10 h ago */
        send_at(&b.d, &b.e, &b.s, b.h, (uint64_t)k + 1, T0_MS + k * STEP_MS);
    pw_analysis_run_pass(b.d.an);
    assert_int_equal(silent_state(b.d.an, "critical"), PW_ALERT_INACTIVE);
    assert_int_equal(silent_state(b.d.an, "warning"), PW_ALERT_INACTIVE);
    /* and once it stops sending, its silence counts from the last arrival: 60 s later it fires */
    b.clk.now += 60000;
    pw_analysis_run_pass(b.d.an);
    assert_int_equal(silent_state(b.d.an, "critical"), PW_ALERT_FIRING);
    backfill_close(&b);
}

/* A backfill streaming in (the quickstart's ddk-2003: 14 days sent in seconds; its level and ETA
 * at its first pass were of 12 days ago) loads its history: samples 10 h old arriving at once
 * are "loading" through a pass, until it caught up and a pass judged its newest sample. An agent
 * whose clock is an hour behind, its samples at the clock's pace, never loads; a backfill that
 * stops stops loading after its silence time (it is silent then). */
static void test_host_backfill_loading(void **state_)
{
    (void)state_;
    backfill_t b;
    backfill_open(&b);
    pw_double_t *d = &b.d;
    sim_clock_t *clk = &b.clk;
    pw_host_t *h = b.h;
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 0); /* nothing yet */
    send_at(d, &b.e, &b.s, h, 1, T0_MS);
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 0); /* one old sample: no pace */
    for (int k = 1; k <= 12; k++) { /* T0 + 10 s .. T0 + 120 s, 10 h ago, 1 ms apart */
        clk->now++;
        send_at(d, &b.e, &b.s, h, (uint64_t)k + 1, T0_MS + k * STEP_MS);
    }
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 1);
    pw_analysis_run_pass(d->an);
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 1); /* judged, still behind */
    /* caught up: a sample of now; loading until a pass judged it */
    clk->now += 5000;
    send_at(d, &b.e, &b.s, h, 14, clk->now);
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 1);
    clk->now += 1000;
    pw_analysis_run_pass(d->an);
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 0);
    assert_int_equal(pw_analysis_run_host(d->an, h)->judged_ts, clk->now - 1000);
    send_at(d, &b.e, &b.s, h, 15, clk->now + 9000);
    clk->now += 10000;
    assert_int_equal(pw_analysis_loading(d->an, h, clk->now), 0);

    /* an agent whose clock is an hour behind, sampling at the clock's pace: not a backlog */
    pw_host_t *h2 = hello_aid(d, "clock02", "agent:two");
    pw_delta_enc_t e2;
    assert_int_equal(pw_delta_enc_init(&e2, 64), 0);
    for (int k = 0; k < 12; k++) {
        send_at(d, &e2, &b.s, h2, (uint64_t)k + 1, clk->now - 3600000);
        assert_int_equal(pw_analysis_loading(d->an, h2, clk->now), 0);
        clk->now += STEP_MS;
    }

    /* a backlog that stops half way: loading while heard within its silence time (60 s) */
    pw_host_t *h3 = hello_aid(d, "clock03", "agent:three");
    pw_delta_enc_t e3;
    assert_int_equal(pw_delta_enc_init(&e3, 64), 0);
    for (int k = 0; k < 5; k++)
        send_at(d, &e3, &b.s, h3, (uint64_t)k + 1, clk->now - 3600000 + k * STEP_MS);
    assert_int_equal(pw_analysis_loading(d->an, h3, clk->now + 59999), 1);
    assert_int_equal(pw_analysis_loading(d->an, h3, clk->now + 60000), 0);
    assert_int_equal(pw_analysis_loading(NULL, h3, clk->now), 0);
    pw_delta_enc_close(&e3);
    pw_delta_enc_close(&e2);
    backfill_close(&b);
}

/* [alerts] silent_after = 5 min: 60 s without a sample is not HostSilent, 300 s is (critical:
 * the pool at 0.90). Then the agent says Goodbye (a clean stop) and its session closes: the host
 * is "stopped", the HostSilent resolves and none fires in the hour after; its next Hello
 * streams again. */
static void test_host_goodbye(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock_silent(&d, &clk, 300000);
    pw_host_t *h = hello(&d, "clock01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    stream_120s(&d, &e, &s, h, &clk);
    assert_int_equal(pw_analysis_silent_after_ms(d.an, h), 300000);
    assert_int_equal(pw_analysis_silent_after_ms(NULL, h), 60000); /* the default's floor */
    assert_string_equal(pw_analysis_connection(d.an, h, T0_MS + 120000), "streaming");
    clk.now = T0_MS + 120000 + 60000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_INACTIVE);
    assert_string_equal(pw_analysis_connection(d.an, h, clk.now), "streaming");
    clk.now = T0_MS + 120000 + 300000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_FIRING);
    assert_string_equal(pw_analysis_connection(d.an, h, clk.now), "silent");
    /* the agent comes back only to stop cleanly */
    Poolwatch__V1__Goodbye g = POOLWATCH__V1__GOODBYE__INIT;
    g.timestamp_ms = (uint64_t)clk.now;
    g.reason = "SIGTERM\n"; /* a control byte is cleaned */
    pw_ingest_goodbye(d.ing, h, &g);
    pw_ingest_detach(d.ing, h, pw_ingest_session(h));
    assert_int_equal(h->stopped_ms, (uint64_t)clk.now);
    assert_string_equal(h->stop_reason, "SIGTERM?");
    clk.now += 30000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_RESOLVED);
    assert_string_equal(pw_analysis_connection(d.an, h, clk.now), "stopped");
    for (int i = 0; i < 120; i++) {
        clk.now += 30000;
        pw_analysis_run_pass(d.an);
        assert_int_not_equal(silent_state(d.an, "critical"), PW_ALERT_FIRING);
        assert_int_not_equal(silent_state(d.an, "warning"), PW_ALERT_FIRING);
    }
    /* started again: streaming, watched again */
    assert_ptr_equal(hello(&d, "clock01"), h);
    assert_int_equal(h->stopped_ms, 0);
    assert_string_equal(pw_analysis_connection(d.an, h, (int64_t)h->last_seen_ms), "streaming");
    /* silent again, then retired by an operator: its alerts leave the set, the receivers are
     * told the firing ones resolved (HostSilent, NonpagedPoolPressure at 0.90) */
    pw_ingest_detach(d.ing, h, pw_ingest_session(h));
    clk.now = (int64_t)h->last_seen_ms + 300000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_FIRING);
    assert_true(pw_alert_count(pw_analysis_run_alerts(d.an)) >= 1);
    pw_diag_t dg;
    pw_diag_clear(&dg);
    assert_int_equal(pw_ingest_retire(d.ing, "clock01", 0, (uint64_t)clk.now, &dg), 0);
    told_resolved = 0;
    clk.now += 30000;
    pw_analysis_run_pass(d.an);
    assert_int_equal(silent_state(d.an, "critical"), PW_ALERT_INACTIVE);
    assert_int_equal(pw_alert_count(pw_analysis_run_alerts(d.an)), 0);
    assert_int_equal(told_resolved, 2); /* HostSilent and its firing pressure alert */
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

static pw_alert_state_t agent_state(const pw_analysis_run_t *an, const char *host)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.pool, sizeof(k.pool), PW_ALERT_POOL_AGENT);
    snprintf(k.severity, sizeof(k.severity), "warning");
    assert_string_equal(pw_analysis_alert_name(&k), "AgentFootprint");
    return pw_alert_state(pw_analysis_run_alerts(an), &k, NULL);
}

/* AgentFootprint: two agents report their own resident set every 5 min; grow01's grows 1 MiB a
 * sample from 8 MiB, calm01's stays at 8 MiB. By hand: at sample k the last three minimum is
 * 8 + (k - 2) MiB against the first six's 8 MiB: the 16 MiB growth is reached at k = 18
 * (ratio 3.0; at k = 17 it is 15 MiB), so the alert is pending from the pass after sample 18
 * and fires 15 min later, at the pass after sample 21, not before; calm01 never. grow01's agent
 * restarted (8 MiB again) resolves it. */
static void test_agent_footprint(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    pw_host_t *hg = hello(&d, "grow01"), *hc = hello(&d, "calm01");
    pw_delta_enc_t eg, ec;
    assert_int_equal(pw_delta_enc_init(&eg, 64), 0);
    assert_int_equal(pw_delta_enc_init(&ec, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const int64_t step = 300000;
    for (int k = 0; k <= 22; k++) {
        for (int g = 0; g < 2; g++) {
            pw_sample_reset(&s);
            s.seq = (uint64_t)k + 1;
            s.timestamp_ms = (uint64_t)(T0_MS + k * step);
            s.totals.nonpaged_bytes = 1u << 20;
            s.totals.agent_rss_bytes = (uint64_t)(8 + (g == 0 ? k : 0)) << 20;
            s.totals.agent_cpu_ms = 1000 + (uint64_t)k;
            add(&s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
            assert_int_equal(pw_double_send(&d, g == 0 ? &eg : &ec, g == 0 ? hg : hc, &s), 0);
        }
        clk.now = T0_MS + k * step;
        pw_analysis_run_pass(d.an);
        if (k < 18)
            assert_int_equal(agent_state(d.an, "grow01"), PW_ALERT_INACTIVE);
        else if (k < 21)
            assert_int_equal(agent_state(d.an, "grow01"), PW_ALERT_PENDING);
        else
            assert_int_equal(agent_state(d.an, "grow01"), PW_ALERT_FIRING);
        assert_int_equal(agent_state(d.an, "calm01"), PW_ALERT_INACTIVE);
    }
    char sum[200], desc[300];
    pw_alert_key_t key;
    memset(&key, 0, sizeof(key));
    snprintf(key.host, sizeof(key.host), "grow01");
    snprintf(key.pool, sizeof(key.pool), PW_ALERT_POOL_AGENT);
    pw_analysis_alert_text(&key, 3.0, sum, sizeof(sum), desc, sizeof(desc));
    assert_string_equal(sum, "grow01: the poolwatch agent grew to 3.0 x its size");
    /* the agent restarts: 8 MiB again */
    pw_sample_reset(&s);
    s.seq = 24;
    s.timestamp_ms = (uint64_t)(T0_MS + 23 * step);
    s.totals.nonpaged_bytes = 1u << 20;
    s.totals.agent_rss_bytes = 8u << 20;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
    assert_int_equal(pw_double_send(&d, &eg, hg, &s), 0);
    clk.now = T0_MS + 23 * step;
    pw_analysis_run_pass(d.an);
    assert_int_equal(agent_state(d.an, "grow01"), PW_ALERT_RESOLVED);
    pw_sample_close(&s);
    pw_delta_enc_close(&eg);
    pw_delta_enc_close(&ec);
    pw_double_close(&d);
}

/* The agent footprint's history is rebuilt from the store after a collector restart, like the
 * rest of the analysis state: grow01's agent grew 1 MiB every 5 min from 8 MiB for samples
 * 0..18, then the collector restarted. Its next sample (k = 19, 27 MiB) makes AgentFootprint
 * pending at the first pass of the new collector: by hand, the 20 points' last three (k = 17
 * .. 19) have their minimum at 25 MiB, the first six at 8 MiB: 17 MiB of growth (>= 16), ratio
 * 3.1; it fires 15 min later (k = 22). Without the history the ring would hold one point and
 * nothing would be judged for an hour. */
static void test_agent_footprint_rebuilt(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    pw_host_t *h = hello(&d, "grow01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const int64_t step = 300000;
    for (int k = 0; k <= 22; k++) {
        if (k == 19) { /* the collector stops; a new one opens the same store */
            assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
            pw_analysis_run_close(d.an);
            pw_ingest_free(d.ing);
            assert_int_equal(pw_ingest_new(d.store, &d.ing, NULL), 0);
            d.an = NULL;
            on_clock(&d, &clk);
            h = hello(&d, "grow01");
            assert_non_null(h);
            pw_delta_enc_close(&e);
            assert_int_equal(pw_delta_enc_init(&e, 64), 0);
        }
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)(T0_MS + k * step);
        s.totals.nonpaged_bytes = 1u << 20;
        s.totals.agent_rss_bytes = (uint64_t)(8 + k) << 20;
        s.totals.agent_cpu_ms = 1000 + (uint64_t)k;
        add(&s, "Ddk ", PW_POOL_NONPAGED, 4096, 4, 0);
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        if (k < 19)
            continue; /* the old collector's passes do not matter here */
        clk.now = T0_MS + k * step;
        pw_analysis_run_pass(d.an);
        assert_int_equal(agent_state(d.an, "grow01"), k < 22 ? PW_ALERT_PENDING : PW_ALERT_FIRING);
    }
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

/* A replay agent `name` (Hello interval `interval_ms`) sends case09's two screens (Drsd, 15 min
 * apart) and stays connected. Returns the host. */
static pw_host_t *replay_case09(pw_double_t *d, const char *name, uint32_t interval_ms)
{
    Poolwatch__V1__Hello hm = POOLWATCH__V1__HELLO__INIT;
    char aid[300];
    pw_double_hello_init(&hm, name, 32, aid);
    hm.interval_ms = interval_ms;
    hm.source_kind = POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY;
    pw_host_t *h = pw_double_hello(d, &hm, 1);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const uint64_t al[2] = {560, 737}, fr[2] = {539, 710}, by[2] = {17472, 22464};
    for (int k = 0; k < 2; k++) {
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)(T0_MS + k * 900000LL);
        assert_int_equal(
            pw_sample_add(&s, "Drsd", 4, PW_POOL_PAGED, al[k], fr[k], al[k] - fr[k], by[k]), 0);
        assert_int_equal(pw_double_send(d, &e, h, &s), 0);
    }
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    return h;
}

/* A replay agent streaming a 2-screen capture (15-min interval, so every row is judged): Drsd is
 * listed from the comparison of its two screens, and no PoolTagLeak is raised for it (a
 * comparison is not a trend). */
static void test_replay_two_screens_listed_not_alerted(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    replay_case09(&d, "replay09", 900000);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *x = find(d.an, "Drsd");
    assert_non_null(x);
    assert_int_equal(x->d.points, 2);
    assert_int_equal(tag_alert(d.an, "replay09", "Drsd", "paged", NULL), PW_ALERT_INACTIVE);
    pw_double_close(&d);
}

/* The quickstart's capture-case09: a replay agent (interval 1 s, so only its source kind says
 * "screens") sends case09's two screens and exits. After a collector restart the host is known
 * from the store before any Hello, and still judged screen by screen: Drsd is listed again
 * from the same comparison (+4,992 B, +6 allocations; an import's rule, not the live rule of 12
 * samples that would never judge it). */
static void test_replay_capture_kept_after_restart(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_host_t *h = replay_case09(&d, "capture-case09", 1000);
    assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
    pw_ingest_detach(d.ing, h, &d.session); /* --replay.exit_when_done */
    pw_analysis_run_pass(d.an);
    assert_non_null(find(d.an, "Drsd"));
    for (int round = 0; round < 2; round++) {
        restart(&d);
        h = pw_fleet_find(pw_ingest_fleet(d.ing), "capture-case09");
        assert_non_null(h);
        assert_int_equal(h->source_kind, POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY);
        assert_int_equal(h->interval_ms, 1000);
        pw_analysis_run_pass(d.an);
        const pw_suspect_t *x = find(d.an, "Drsd");
        assert_non_null(x);
        assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
        assert_int_equal(x->d.points, 2);
        assert_int_equal(x->d.growth_bytes, 22464 - 17472);
        assert_int_equal(x->d.growth_diff, 27 - 21);
        assert_int_equal(x->found_ms, (uint64_t)(T0_MS + 900000LL));
    }
    pw_double_close(&d);
}

/* A restart keeps when a suspect was found and how long its PoolTagLeak has been pending: Ddk
 * leaks 4 KiB a minute, a pass after every sample on the sample's clock. It is listed at the pass
 * of sample L (found_ms = its time), its alert pending since then (for 5 min). Two samples on,
 * the collector restarts (the alerts file beside the store); the agent comes back and goes on.
 * Afterwards found_ms is still sample L's time, and the alert, still pending since L, fires at
 * the pass of sample L + 5, as it does in a run without the restart (checked first). The suspect
 * is new once (on_suspect: "new suspect", the big-pool ask), not again after the restart. */
static void test_restart_keeps_found_and_pending(void **state_)
{
    (void)state_;
    char dir[] = "/tmp/pw_found_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/alerts.json", dir);
    int64_t listed_ts[2] = {0, 0}, fired_ts[2] = {0, 0};
    uint64_t found[2] = {0, 0};
    for (int run = 0; run < 2; run++) { /* 0: no restart, 1: a restart two samples after L */
        remove(path);
        told_ddk = 0;
        pw_double_t d;
        assert_int_equal(pw_double_open(&d), 0);
        sim_clock_t clk = {T0_MS, 0};
        on_clock_with(&d, &clk, 0, path);
        pw_host_t *h = hello(&d, "keep01");
        pw_delta_enc_t e;
        assert_int_equal(pw_delta_enc_init(&e, 64), 0);
        pw_sample_t s;
        pw_sample_init(&s);
        int listed = -1;
        for (int k = 0; k <= 120 && fired_ts[run] == 0; k++) {
            if (run == 1 && listed >= 0 && k == listed + 3) {
                assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
                pw_analysis_run_close(d.an);
                d.an = NULL;
                pw_ingest_free(d.ing);
                assert_int_equal(pw_ingest_new(d.store, &d.ing, NULL), 0);
                on_clock_with(&d, &clk, 0, path);
                h = hello(&d, "keep01");
                assert_non_null(h);
                pw_delta_enc_close(&e);
                assert_int_equal(pw_delta_enc_init(&e, 64), 0);
            }
            send_ddk(&d, &e, h, &s, k, 60000, 4096);
            assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
            clk.now = T0_MS + (int64_t)k * 60000;
            pw_analysis_run_pass(d.an);
            const pw_suspect_t *x = find(d.an, "Ddk ");
            int64_t since = 0;
            pw_alert_state_t st = tag_alert(d.an, "keep01", "Ddk ", "nonpaged", &since);
            if (x != NULL && listed < 0) {
                listed = k;
                listed_ts[run] = clk.now;
                found[run] = x->found_ms;
                assert_int_equal(x->found_ms, (uint64_t)clk.now);
                assert_int_equal(st, PW_ALERT_PENDING);
            }
            if (listed >= 0) {
                assert_non_null(x); /* also right after the restart */
                assert_int_equal(x->found_ms, found[run]);
                assert_int_equal(since, listed_ts[run]);
            }
            if (st == PW_ALERT_FIRING)
                fired_ts[run] = clk.now;
        }
        assert_true(listed > 0);
        assert_int_equal(told_ddk, 1);
        pw_sample_close(&s);
        pw_delta_enc_close(&e);
        pw_double_close(&d);
    }
    assert_int_equal(listed_ts[1], listed_ts[0]);
    assert_int_equal(found[1], found[0]);
    assert_int_equal(fired_ts[0], listed_ts[0] + 5 * 60000);
    assert_int_equal(fired_ts[1], fired_ts[0]);
    remove(path);
    assert_int_equal(rmdir(dir), 0);
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/* With a loop (the collector): an import is judged at the next tick of the pass timer (100 ms),
 * not at the next 30-s pass: after 1 s of the loop the 2-screen Drsd capture is listed; no
 * pass had run before (the first is due 30 s after start). */
static void test_import_judged_on_the_loop(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_analysis_run_close(d.an);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(pw_analysis_run_new(&loop, d.ing, NULL, &d.an), 0);
    uv_timer_t stop;
    uv_timer_init(&loop, &stop);
    uv_timer_start(&stop, stop_loop, 1000, 0);
    uv_run(&loop, UV_RUN_DEFAULT); /* 1 s: no pass yet, nothing to judge */
    assert_null(find(d.an, "Drsd"));
    pw_sample_t two[2];
    for (int k = 0; k < 2; k++) {
        pw_sample_init(&two[k]);
        two[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
    }
    assert_int_equal(pw_sample_add(&two[0], "Drsd", 4, PW_POOL_PAGED, 560, 539, 21, 17472), 0);
    assert_int_equal(pw_sample_add(&two[1], "Drsd", 4, PW_POOL_PAGED, 737, 710, 27, 22464), 0);
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "case09", 32, "import:b", two, 2, &ir, NULL), 0);
    uv_timer_start(&stop, stop_loop, 1000, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_non_null(find(d.an, "Drsd"));
    for (int k = 0; k < 2; k++)
        pw_sample_close(&two[k]);
    pw_analysis_run_close(d.an);
    d.an = NULL;
    uv_close((uv_handle_t *)&stop, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    pw_double_close(&d);
}

/* Screens copied from a console of poolmon sorted by bytes show the rows that fit: a tag whose
 * bytes fell drops out of the window. 8 screens 15 min apart: "Leak" and "Bulk" both +64 KiB
 * (+16 allocations of 4 KiB) a screen for the first 7; then Bulk frees in bulk and is left out
 * of screen 8 (a console of 5 rows), Leak goes on; 4 flat rows. Bulk's last values seen rose 6
 * times in a row: read as "unchanged since" (as a live host's unchanged row is) it is listed.
 * Left out of the newest screen it has no verdict; Leak is listed; the same after a restart. */
static void test_import_row_out_of_view(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_sample_t ss[8];
    for (int k = 0; k < 8; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        uint64_t up = 16u * (uint64_t)k;
        add(&ss[k], "Leak", PW_POOL_NONPAGED, (1000 + 16u * (uint64_t)k) * 4096,
            1000 + 16u * (uint64_t)k, k);
        if (k < 7)
            add(&ss[k], "Bulk", PW_POOL_NONPAGED, (900 + up) * 4096, 900 + up, k);
        add(&ss[k], "Fla1", PW_POOL_NONPAGED, 500 * 4096, 500, k);
        add(&ss[k], "Fla2", PW_POOL_NONPAGED, 400 * 4096, 400, k);
        add(&ss[k], "Fla3", PW_POOL_PAGED, 300 * 4096, 300, k);
        add(&ss[k], "Fla4", PW_POOL_NONPAGED, 200 * 4096, 200, k);
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "console01", 32, "import:c", ss, 8, &ir, NULL), 0);
    for (int k = 0; k < 8; k++)
        pw_sample_close(&ss[k]);
    for (int step = 0; step < 2; step++) {
        pw_analysis_run_pass(d.an);
        const pw_suspect_t *x = find(d.an, "Leak");
        assert_non_null(x);
        assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
        assert_null(find(d.an, "Bulk"));
        if (step == 0)
            restart(&d);
    }
    pw_double_close(&d);
}

/* A restart rebuilds an import of more than 256 screens from all of them (it read the first 256
 * and judged those): 400 screens 15 min apart (4.2 days). "Cach" fills for 100 screens (+16
 * allocations of 4 KiB each) and holds its level for 300: no suspect. "Leak" rises 4 KiB every
 * screen: a suspect over the whole capture, 399 x 15 min = 359,100,000 ms. From the first 256
 * screens alone Cach grew 100 and held 156 ("over 2.7 days, rose in 58 of 59 steps": listed)
 * and Leak's span ended at screen 256. */
static void test_long_import_rebuilt_whole(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    enum { N = 400 };
    pw_sample_t *ss = calloc(N, sizeof(*ss));
    assert_non_null(ss);
    for (int k = 0; k < N; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        uint64_t up = 16u * (uint64_t)(k < 100 ? k : 100);
        add(&ss[k], "Cach", PW_POOL_NONPAGED, (900 + up) * 4096, 900 + up, k);
        add(&ss[k], "Leak", PW_POOL_NONPAGED, (700 + (uint64_t)k) * 4096, 700 + (uint64_t)k, k);
        add(&ss[k], "Fla1", PW_POOL_NONPAGED, 500 * 4096, 500, k);
        add(&ss[k], "Fla2", PW_POOL_NONPAGED, 400 * 4096, 400, k);
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "long01", 32, "import:l", ss, N, &ir, NULL), 0);
    for (int k = 0; k < N; k++)
        pw_sample_close(&ss[k]);
    free(ss);
    for (int step = 0; step < 2; step++) {
        pw_analysis_run_pass(d.an);
        assert_null(find(d.an, "Cach"));
        const pw_suspect_t *x = find(d.an, "Leak");
        assert_non_null(x);
        assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
        assert_int_equal(x->d.span_ms, 399LL * 900000);
        if (step == 0)
            restart(&d);
    }
    pw_double_close(&d);
}

/* One-screen files imported one by one (`poolwatch import` of a glob: a request a file), a pass
 * between them: "Leak" +4 KiB a screen, 15 min apart. A verdict that stayed the same was checked
 * again only after 2, 4 ... new points, so the last screens were never judged (a new user saw
 * "rose in 9 of 9 steps" for 12 screens, and the full 11 after a restart). Every new screen of
 * an import is judged: after the 10th, the leak's span is 9 x 15 min. */
static void test_import_files_judged_each(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    for (int k = 0; k < 10; k++) {
        pw_sample_t s;
        pw_sample_init(&s);
        s.timestamp_ms = (uint64_t)(T0_MS + (int64_t)k * 900000);
        add(&s, "Leak", PW_POOL_NONPAGED, (700 + (uint64_t)k) * 4096, 700 + (uint64_t)k, k);
        add(&s, "Fla1", PW_POOL_NONPAGED, 500 * 4096, 500, k);
        add(&s, "Fla2", PW_POOL_NONPAGED, 400 * 4096, 400, k);
        char boot[32];
        snprintf(boot, sizeof(boot), "import:f%d", k);
        pw_ingest_import_res_t ir;
        assert_int_equal(pw_ingest_import(d.ing, "files01", 32, boot, &s, 1, &ir, NULL), 0);
        pw_sample_close(&s);
        if (k >= 5)
            pw_analysis_run_pass(d.an);
    }
    const pw_suspect_t *x = find(d.an, "Leak");
    assert_non_null(x);
    assert_int_equal(x->d.verdict, PW_DETECT_LEAK);
    assert_int_equal(x->d.span_ms, 9LL * 900000);
    pw_double_close(&d);
}

/* The fleet's list by urgency, not score (the quickstart's critical ddk-2003 was listed below a
 * host at 2.6 % with a faster leak). Four hosts, 2 h at 10 s (limit 100 MiB each), one leaking
 * tag "Leak" each (from 1 MiB, +N B a sample), their nonpaged totals set apart from the tag:
 *   calm01  Leak +8,192 (the fastest, the highest score); pool 2.6 MiB + 8,192 a sample: ok
 *   warm01  Leak +2,048; pool 75 MiB + 2,048: 76.4 % at the end, warn
 *   hot01   Leak +4,096; pool 90 MiB + 1,024: critical, ETA (100 MiB - 95,109,120 B) /
 *           368,640 B/h = 26.44 h
 *   hot02   Leak +1,024 (the slowest); pool 88 MiB + 8,192: critical, ETA (100 MiB -
 *           98,172,928 B) / 2,949,120 B/h = 2.27 h
 * Expected: hot02, hot01 (both critical, the nearer ETA first), warm01, calm01; by score alone
 * calm01 would be first. */
static void test_fleet_order_by_urgency(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock(&d, &clk);
    static const struct {
        const char *name;
        uint64_t leak_step, pool0, pool_step;
    } hs[] = {
        {"calm01", 8192, 2726297, 8192},
        {"warm01", 2048, 75u << 20, 2048},
        {"hot01", 4096, 90u << 20, 1024},
        {"hot02", 1024, 88u << 20, 8192},
    };
    pw_host_t *h[4];
    pw_delta_enc_t e[4];
    for (int i = 0; i < 4; i++) {
        char aid[32];
        snprintf(aid, sizeof(aid), "agent:%s", hs[i].name);
        h[i] = hello_aid(&d, hs[i].name, aid);
        assert_non_null(h[i]);
        assert_int_equal(pw_delta_enc_init(&e[i], 64), 0);
    }
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 720; k++) {
        int64_t ts = T0_MS + (int64_t)k * STEP_MS;
        for (int i = 0; i < 4; i++) {
            pw_sample_reset(&s);
            s.seq = (uint64_t)k + 1;
            s.timestamp_ms = (uint64_t)ts;
            s.totals.nonpaged_bytes = hs[i].pool0 + (uint64_t)k * hs[i].pool_step;
            s.totals.paged_bytes = 50u << 20;
            add(&s, "Leak", PW_POOL_NONPAGED, (1u << 20) + (uint64_t)k * hs[i].leak_step,
                1024 + (uint64_t)k * hs[i].leak_step / 128, k);
            add(&s, "Flat", PW_POOL_NONPAGED, 4u << 20, 4096, k);
            assert_int_equal(pw_double_send(&d, &e[i], h[i], &s), 0);
        }
        assert_true(pw_ingest_commit(d.ing, NULL) >= 0);
        if ((ts - T0_MS) % PASS_MS == 0) {
            clk.now = ts;
            pw_analysis_run_pass(d.an);
        }
    }
    const pw_suspect_t *sp;
    size_t n = pw_analysis_run_suspects(d.an, &sp);
    char order[128] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "",
                 sp[i].host);
    assert_string_equal(order, "hot02 hot01 warm01 calm01");
    /* the scores alone would put calm01 first and hot02 last */
    assert_true(sp[3].finding_score > sp[1].finding_score);
    assert_true(sp[1].finding_score > sp[0].finding_score);
    assert_int_equal(sp[0].level, PW_LEVEL_CRITICAL);
    assert_int_equal(sp[1].level, PW_LEVEL_CRITICAL);
    assert_int_equal(sp[2].level, PW_LEVEL_WARN);
    assert_int_equal(sp[3].level, PW_LEVEL_OK);
    /* the ETAs by hand (exactly linear pools: the trend's slope is the step's) */
    double eta02 = (104857600.0 - 98172928.0) / 2949120.0 * 3600000.0;
    double eta01 = (104857600.0 - 95109120.0) / 368640.0 * 3600000.0;
    assert_true(fabs((double)sp[0].eta_ms - eta02) < 0.001 * eta02);
    assert_true(fabs((double)sp[1].eta_ms - eta01) < 0.001 * eta01);
    pw_sample_close(&s);
    for (int i = 0; i < 4; i++)
        pw_delta_enc_close(&e[i]);
    pw_double_close(&d);
}

/* 1 when /metrics says poolwatch_host_stopped{host="clock01"} is `v`. */
static int metrics_stopped(pw_double_t *d, int v)
{
    pw_buf_t b;
    pw_buf_init(&b, SIZE_MAX);
    assert_int_equal(pw_api_metrics(&d->api, &b), 0);
    assert_int_equal(pw_buf_append(&b, "", 1), 0);
    char want[80];
    snprintf(want, sizeof(want), "poolwatch_host_stopped{host=\"clock01\"} %d\n", v);
    int found = strstr((const char *)b.data, want) != NULL;
    pw_buf_close(&b);
    return found;
}

/* An agent's clean stop survives a collector restart (it is kept in the store): the restarted
 * collector still says "stopped" with the reason, /metrics poolwatch_host_stopped 1 (which keeps
 * the Prometheus HostSilent rule quiet), rather than a host that just went away
 * ("disconnected", stopped 0). Its next Hello clears it, also in the store: after another
 * restart it is not stopped. */
static void test_goodbye_across_restart(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    sim_clock_t clk = {T0_MS, 0};
    on_clock_silent(&d, &clk, 300000);
    pw_host_t *h = hello(&d, "clock01");
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    stream_120s(&d, &e, &s, h, &clk);
    Poolwatch__V1__Goodbye g = POOLWATCH__V1__GOODBYE__INIT;
    g.timestamp_ms = (uint64_t)T0_MS + 120000;
    g.reason = "service stop";
    pw_ingest_goodbye(d.ing, h, &g);
    pw_ingest_detach(d.ing, h, pw_ingest_session(h));
    assert_true(metrics_stopped(&d, 1));
    restart(&d);
    on_clock_silent(&d, &clk, 300000);
    h = pw_fleet_find(pw_ingest_fleet(d.ing), "clock01");
    assert_non_null(h);
    assert_int_equal(h->stopped_ms, (uint64_t)T0_MS + 120000);
    assert_string_equal(h->stop_reason, "service stop");
    clk.now = T0_MS + 3600000;
    pw_analysis_run_pass(d.an);
    assert_string_equal(pw_analysis_connection(d.an, h, clk.now), "stopped");
    assert_true(metrics_stopped(&d, 1));
    assert_int_not_equal(silent_state(d.an, "critical"), PW_ALERT_FIRING);
    /* started again: streaming, and the store forgets the stop */
    assert_ptr_equal(hello(&d, "clock01"), h);
    assert_int_equal(h->stopped_ms, 0);
    assert_true(metrics_stopped(&d, 0));
    pw_ingest_detach(d.ing, h, pw_ingest_session(h));
    restart(&d);
    h = pw_fleet_find(pw_ingest_fleet(d.ing), "clock01");
    assert_non_null(h);
    assert_int_equal(h->stopped_ms, 0);
    assert_string_equal(h->stop_reason, "");
    assert_string_equal(pw_analysis_connection(d.an, h, clk.now), "disconnected");
    assert_true(metrics_stopped(&d, 0));
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_run_clock_counts_for_in_simulated_time),
        cmocka_unit_test(test_stream_findings_and_no_flicker),
        cmocka_unit_test(test_alerts_say_eta_and_tag),
        cmocka_unit_test(test_suspect_episode_told_once),
        cmocka_unit_test(test_import_judged_at_once),
        cmocka_unit_test(test_import_linux_series_judged),
        cmocka_unit_test(test_import_ran_out_across_restart),
        cmocka_unit_test(test_agent_footprint),
        cmocka_unit_test(test_agent_footprint_rebuilt),
        cmocka_unit_test(test_restart_rebuilds_state),
        cmocka_unit_test(test_restart_keeps_evidence_beyond_raw),
        cmocka_unit_test(test_import_judged_on_the_loop),
        cmocka_unit_test(test_import_row_out_of_view),
        cmocka_unit_test(test_import_files_judged_each),
        cmocka_unit_test(test_long_import_rebuilt_whole),
        cmocka_unit_test(test_changed_rows_view),
        cmocka_unit_test(test_eta_at_night_from_the_day),
        cmocka_unit_test(test_eta_at_night_with_a_creep),
        cmocka_unit_test(test_eta_office_day_late_afternoon),
        cmocka_unit_test(test_eta_since_reboot),
        cmocka_unit_test(test_eta_basis_in_api),
        cmocka_unit_test(test_import_eta_since_reboot),
        cmocka_unit_test(test_host_silent),
        cmocka_unit_test(test_host_backfill_not_silent),
        cmocka_unit_test(test_host_backfill_loading),
        cmocka_unit_test(test_host_goodbye),
        cmocka_unit_test(test_goodbye_across_restart),
        cmocka_unit_test(test_replay_two_screens_listed_not_alerted),
        cmocka_unit_test(test_replay_capture_kept_after_restart),
        cmocka_unit_test(test_restart_keeps_found_and_pending),
        cmocka_unit_test(test_restart_keeps_ring_and_big_pool),
        cmocka_unit_test(test_restart_keeps_pressure_of_streaming_host),
        cmocka_unit_test(test_fleet_order_by_urgency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
