/* test_analysis_run.c: the analysis pass (analysis_run.h) on a caller's clock: a replay of
 * simulated time (bench_detect) counts an alert's `for` duration in that time, not on the wall
 * clock. The host streams through ingest (an agent's Hello with a nonpaged limit, Sample frames
 * through the test double) and the passes run when the test says. */
#include "test_util.h"

#include "codec.h"
#include "double.h"

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

static pw_host_t *hello(pw_double_t *d, const char *name)
{
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.host_name = (char *)(uintptr_t)name;
    h.counter_width = 64;
    h.agent_id.data = (uint8_t *)"agent:clock";
    h.agent_id.len = 11;
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

static pw_alert_state_t state(const pw_analysis_run_t *an, const char *sev, int64_t *since)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "clock01");
    snprintf(k.pool, sizeof(k.pool), "nonpaged");
    snprintf(k.severity, sizeof(k.severity), "%s", sev);
    return pw_alert_state(pw_analysis_run_alerts(an), &k, since);
}

/* Samples every 10 s from T0 with the nonpaged pool at 0.90 of its limit, a pass every 30 s of
 * sample time at the clock of that sample: the critical alert (for 1 min) fires at the pass of
 * T0 + 60 s and not before, the warning (for 5 min) at T0 + 300 s, both pending since T0. On
 * the wall clock the passes run milliseconds apart and neither would fire. */
static void test_analysis_run_clock_counts_for_in_simulated_time(void **state_)
{
    (void)state_;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    pw_analysis_run_close(d.an);
    sim_clock_t clk = {T0_MS, 0};
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = sim_now;
    o.now_arg = &clk;
    assert_int_equal(pw_analysis_run_new(NULL, d.ing, &o, &d.an), 0);
    d.api.an = d.an;

    pw_host_t *h = hello(&d, "clock01");
    assert_non_null(h);
    assert_int_equal(h->nonpaged_limit_bytes, LIMIT);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int64_t crit_at = -1, warn_at = -1;
    for (int k = 0; k <= 40; k++) { /* 400 s */
        int64_t ts = T0_MS + (int64_t)k * STEP_MS;
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = (uint64_t)ts;
        s.totals.nonpaged_bytes = USED;
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
        if (warn_at < 0 && state(d.an, "warning", NULL) == PW_ALERT_FIRING)
            warn_at = ts;
    }
    assert_true(clk.calls > 0);
    const pw_analysis_host_t *res = pw_analysis_run_host(d.an, h);
    assert_non_null(res);
    assert_true(res->have_pressure);
    assert_int_equal(crit_at, T0_MS + CRIT_FOR);
    assert_int_equal(warn_at, T0_MS + WARN_FOR);
    int64_t since = 0;
    assert_int_equal(state(d.an, "critical", &since), PW_ALERT_FIRING);
    assert_int_equal(since, T0_MS);
    assert_int_equal(state(d.an, "warning", &since), PW_ALERT_FIRING);
    assert_int_equal(since, T0_MS);

    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_double_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_run_clock_counts_for_in_simulated_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
