/* test_ddk_day.c: the quickstart's demo host ddk-2003 (agent/source_sim.c: Windows Server 2003
 * /3GB, `Ddk ` leaking 550 KiB an office hour, 08-18 UTC, beside the caches Irp, File and Ntfr
 * that fill after boot) as the collector sees it with one day of history, the day ending at
 * HH:15 UTC for every hour of the day: its samples, one a minute, land before the first pass (an
 * agent's --sim.backfill=1d), then it streams on for 10 minutes with a pass after each sample.
 * At every pass `Ddk ` is the one suspect: no cache is listed at any hour (with the caches
 * growing at one pace until they stopped, File and Ntfr were listed at every hour; in the
 * quickstart they raised PoolTagLeak alerts). Through ingest (the test double) and the analysis
 * pass on the test's clock, as bench_detect runs it. */
#include "test_util.h"

#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "double.h"
#include "source_sim.h"

#define DAY_MS  INT64_C(86400000)
#define HOUR_MS INT64_C(3600000)
#define T0_MS   INT64_C(1704240000000) /* 2024-01-03 00:00:00 UTC */
#define STEP_MS 60000                  /* one sample a minute, as the e2e restart test */
#define LIVE    10                     /* samples streamed after the backfill */

typedef struct {
    int64_t now;
} clk_t;

static int64_t clk_now(void *arg)
{
    return ((clk_t *)arg)->now;
}

/* The host's suspects in the product's order, "tag,tag,..." */
static void listed(const pw_analysis_run_t *an, char *out, size_t cap)
{
    const pw_suspect_t *s;
    size_t n = pw_analysis_run_suspects(an, &s), len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len + 6 < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%.*s", i ? "," : "", (int)s[i].tag_len,
                                (const char *)s[i].tag);
}

static void day_to(int hour)
{
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    clk_t clk = {0};
    pw_analysis_run_close(d.an);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = clk_now;
    o.now_arg = &clk;
    assert_int_equal(pw_analysis_run_new(NULL, d.ing, &o, &d.an), 0);
    d.api.an = d.an;

    int64_t end = T0_MS + (int64_t)hour * HOUR_MS + 15 * 60000;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = (uint64_t)(end - DAY_MS);
    cfg.sim_interval_ms = STEP_MS;
    pw_sim_t *sim;
    pw_diag_t dg;
    assert_int_equal(pw_sim_new("ddk-2003", 0, &cfg, &sim, &dg), 0);
    pw_host_t *h = pw_double_stream(&d, "ddk-2003", 32, 1);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    int64_t n = DAY_MS / STEP_MS + 1;
    for (int64_t k = 0; k < n + LIVE; k++) {
        s.n = 0;
        assert_int_equal(pw_sim_next(sim, &s), 0);
        s.seq = (uint64_t)k + 1;
        assert_int_equal(pw_double_send(&d, &e, h, &s), 0);
        if (k + 1 < n)
            continue; /* the backfill: no pass before it has landed */
        clk.now = (int64_t)s.timestamp_ms;
        pw_analysis_run_pass(d.an);
        char got[256];
        listed(d.an, got, sizeof(got));
        if (strcmp(got, "Ddk ") != 0)
            fail_msg("ddk-2003, a day to %02d:15 UTC, sample %lld: suspects \"%s\", want \"Ddk \"",
                     hour, (long long)k, got);
    }
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
    pw_sim_free(sim);
    pw_double_close(&d);
}

static void test_ddk_day_every_hour(void **state)
{
    (void)state;
    for (int hour = 0; hour < 24; hour++)
        day_to(hour);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddk_day_every_hour),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
