/* Tests of the simulated fleet (source_sim.c). Expected growth figures are worked out by hand
 * from the presets' stated rates in the comments, not taken from the generator. */
#include "test_util.h"

#include "sample.h"
#include "source.h"
#include "source_sim.h"

#define KiB     1024ull
#define MiB     (1024ull * KiB)
#define HOUR_MS 3600000ull
/* 2026-01-05 00:00:00 UTC, a Monday: a fixed start makes bursty leaks reproducible. */
#define START_MS 1767571200000ull

static pw_sim_t *open_sim(const char *preset, uint32_t host, uint64_t interval_ms, uint64_t seed)
{
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = START_MS;
    cfg.sim_interval_ms = interval_ms;
    cfg.sim_seed = seed;
    pw_sim_t *sim = NULL;
    pw_diag_t d;
    int r = pw_sim_new(preset, host, &cfg, &sim, &d);
    if (r != 0)
        fail_msg("pw_sim_new(%s/%u): %s", preset, host, d.msg);
    return sim;
}

static const pw_entry_t *find_row(const pw_sample_t *s, const char tag[4], int pool)
{
    for (size_t i = 0; i < s->n; i++)
        if (memcmp(s->entries[i].tag, tag, 4) == 0 && s->entries[i].pool == pool)
            return &s->entries[i];
    fail_msg("row %.4s/%d not found", tag, pool);
    return NULL;
}

static int samples_equal(const pw_sample_t *a, const pw_sample_t *b)
{
    return a->n == b->n && a->timestamp_ms == b->timestamp_ms &&
           memcmp(&a->totals, &b->totals, sizeof(a->totals)) == 0 &&
           memcmp(a->entries, b->entries, a->n * sizeof(*a->entries)) == 0;
}

static void test_sim_same_seed_same_samples(void **state)
{
    (void)state;
    pw_sim_t *a = open_sim("fleet-small", 3, 0, 0), *b = open_sim("fleet-small", 3, 0, 0);
    pw_sim_t *c = open_sim("fleet-small", 4, 0, 0), *e = open_sim("fleet-small", 3, 0, 42);
    pw_sample_t sa, sb, sc, se;
    pw_sample_init(&sa);
    pw_sample_init(&sb);
    pw_sample_init(&sc);
    pw_sample_init(&se);
    int differ_host = 0, differ_seed = 0;
    for (int k = 0; k < 50; k++) {
        assert_int_equal(pw_sim_next(a, &sa), 0);
        assert_int_equal(pw_sim_next(b, &sb), 0);
        assert_int_equal(pw_sim_next(c, &sc), 0);
        assert_int_equal(pw_sim_next(e, &se), 0);
        assert_true(samples_equal(&sa, &sb));
        assert_int_equal(sa.timestamp_ms, START_MS + (uint64_t)k * 10000); /* default 10 s */
        differ_host += !samples_equal(&sa, &sc);
        differ_seed += !samples_equal(&sa, &se);
    }
    assert_int_equal(differ_host, 50);
    assert_int_equal(differ_seed, 50);
    pw_source_info_t ia, ic;
    pw_sim_info(a, &ia);
    pw_sim_info(c, &ic);
    assert_string_equal(ia.host_name, "sim-fleet-small-3");
    assert_string_equal(ic.host_name, "sim-fleet-small-4");
    assert_int_equal(ia.counter_width, 32);
    assert_int_equal(ia.kind, PW_SOURCE_SIMULATED);
    pw_sample_close(&sa);
    pw_sample_close(&sb);
    pw_sample_close(&sc);
    pw_sample_close(&se);
    pw_sim_free(a);
    pw_sim_free(b);
    pw_sim_free(c);
    pw_sim_free(e);
}

/* steady: 3000 rows, no events, 50 per mille: exactly 3000 * 50 / 1000 = 150 rows change per
 * sample; every row is unique per (tag, pool) and keeps its place. */
static void test_sim_steady_churn_is_five_percent(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("steady", 7, 0, 0);
    pw_sample_t prev, cur;
    pw_sample_init(&prev);
    pw_sample_init(&cur);
    assert_int_equal(pw_sim_next(sim, &prev), 0);
    assert_int_equal(prev.n, 3000);
    for (size_t i = 0; i < prev.n; i++)
        for (size_t j = i + 1; j < prev.n; j++)
            if (memcmp(prev.entries[i].tag, prev.entries[j].tag, 4) == 0 &&
                prev.entries[i].pool == prev.entries[j].pool)
                fail_msg("duplicate row %zu/%zu", i, j);
    for (int k = 1; k <= 20; k++) {
        assert_int_equal(pw_sim_next(sim, &cur), 0);
        assert_int_equal(cur.n, 3000);
        size_t changed = 0;
        for (size_t i = 0; i < cur.n; i++) {
            const pw_entry_t *p = &prev.entries[i], *c = &cur.entries[i];
            assert_memory_equal(p->tag, c->tag, 4);
            if (memcmp(p, c, sizeof(*p)) == 0)
                continue;
            changed++;
            /* churn: allocs and frees both rise (mod 2^32) */
            assert_true((uint32_t)(c->allocs - p->allocs) >= 1);
            assert_true((uint32_t)(c->frees - p->frees) >= 1);
        }
        assert_int_equal(changed, 150);
        assert_int_equal(pw_sample_copy(&prev, &cur), 0);
    }
    pw_sample_close(&prev);
    pw_sample_close(&cur);
    pw_sim_free(sim);
}

/* leak-linear: NtFC nonpaged, 1 MiB/h from 1 h on, 256-byte blocks, 64 KiB at start. With a
 * 225 s interval each sample is 1 MiB * 225 / 3600 = 65536 bytes = 256 blocks later; onset is
 * sample 16 (3600 s / 225 s), so bytes(k) = 65536 + (k - 16) * 65536 for k >= 16. */
static void test_sim_linear_leak_exact_rate(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("leak-linear", 0, 225000, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (uint64_t k = 0; k <= 40; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        const pw_entry_t *e = find_row(&s, "NtFC", PW_POOL_NONPAGED);
        uint64_t want = 65536 + (k > 16 ? (k - 16) * 65536 : 0);
        if (e->bytes != want)
            fail_msg("sample %llu: NtFC %llu bytes, want %llu", (unsigned long long)k,
                     (unsigned long long)e->bytes, (unsigned long long)want);
        assert_int_equal(e->diff, want / 256);
        assert_int_equal(e->diff, (uint32_t)(e->allocs - e->frees));
    }
    pw_sample_close(&s);
    pw_sim_free(sim);
}

/* cache-plateau: FMfn paged fills from 30 min at 20 MiB/h, its rate falling to 0 at +60 MiB,
 * reached 2 x 60 / 20 = 6 h after onset (6.5 h), base 4 MiB, blocks of 512 B: the growth at t h
 * after onset is 60 MiB x (1 - (1 - t / 6)^2) in whole blocks. With 1-minute samples, sample 60
 * (t = 0.5 h) holds 4 MiB + 60 MiB x 23 / 144 = 4 MiB + 10,048,853 B, 10,048,512 B in blocks;
 * sample 180 (t = 2.5 h) 4 MiB + 60 MiB x 95 / 144 = 4 MiB + 41,505,792 B in blocks (more than
 * half the rise in 40 % of the time: it slows down); from sample 390 on 64 MiB, unchanged. */
static void test_sim_cache_plateaus(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("cache-plateau", 0, 60000, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k <= 500; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        const pw_entry_t *e = find_row(&s, "FMfn", PW_POOL_PAGED);
        if (k == 0)
            assert_int_equal(e->bytes, 4 * MiB);
        if (k == 60)
            assert_int_equal(e->bytes, 4 * MiB + 10048512);
        if (k == 180)
            assert_int_equal(e->bytes, 4 * MiB + 41505792);
        if (k == 389)
            assert_true(e->bytes < 64 * MiB);
        if (k >= 390)
            assert_int_equal(e->bytes, 64 * MiB);
    }
    const pw_sim_event_t *truth[4];
    assert_int_equal(pw_sim_ground_truth(pw_sim_preset(sim), 0, truth, 4), 1);
    assert_int_equal(truth[0]->kind, PW_SIM_CACHE);
    pw_sample_close(&s);
    pw_sim_free(sim);
}

/* leak-step: Proc, 512 KiB/h landing as 2 MiB every 4 h from 2 h on, base 1 MiB. */
static void test_sim_step_leak(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("leak-step", 0, HOUR_MS, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    static const uint64_t want_mib[] = {1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7};
    for (size_t k = 0; k < sizeof(want_mib) / sizeof(want_mib[0]); k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        assert_int_equal(find_row(&s, "Proc", PW_POOL_NONPAGED)->bytes, want_mib[k] * MiB);
    }
    pw_sample_close(&s);
    pw_sim_free(sim);
}

/* ddk-2003: 128 MB nonpaged limit from the rule table; Ddk 600 KiB at boot, growing 563200
 * bytes/h (550 KiB) during 08-18 UTC only: from Monday 00:00 UTC, after 14 days that is
 * 140 h * 563200 = 78848000 bytes (154000 blocks of 512); at 08:00 on day 1 nothing has grown,
 * at 13:00 five hours have (2816000 bytes, 5500 blocks). Mmcm and r100 stay flat. The climb of
 * the pool is Ddk's: it grows by more than the rest of the table together. */
static void test_sim_ddk_2003_story(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("ddk-2003", 0, HOUR_MS, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t np0 = 0;
    for (int k = 0; k <= 14 * 24; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        const pw_entry_t *ddk = find_row(&s, "Ddk ", PW_POOL_NONPAGED);
        assert_int_equal(find_row(&s, "Mmcm", PW_POOL_NONPAGED)->bytes, 8 * MiB);
        assert_int_equal(find_row(&s, "r100", PW_POOL_NONPAGED)->bytes, 5 * MiB);
        assert_int_equal(s.totals.nonpaged_limit_bytes, 128 * MiB);
        if (k == 0) {
            assert_int_equal(ddk->bytes, 614400);
            np0 = s.totals.nonpaged_bytes;
        }
        if (k == 8)
            assert_int_equal(ddk->bytes, 614400);
        if (k == 13)
            assert_int_equal(ddk->bytes, 614400 + 2816000);
        if (k == 14 * 24)
            assert_int_equal(ddk->bytes, 614400 + 78848000);
        pw_winevent_t ev;
        assert_int_equal(pw_sim_events(sim, &ev, 1), 0); /* below its limit: no srv 2019 */
    }
    /* About 30 MB after boot, about 120 MB at the end, below the 128 MB limit; Ddk's growth is
     * more than 85 % of the pool's. */
    assert_true(np0 > 28 * MiB && np0 < 36 * MiB);
    assert_true(s.totals.nonpaged_bytes > 105 * MiB && s.totals.nonpaged_bytes < 128 * MiB);
    assert_true(78848000.0 > 0.85 * (double)(s.totals.nonpaged_bytes - np0));
    pw_source_info_t info;
    pw_sim_info(sim, &info);
    assert_string_equal(info.os_version, "5.2");
    assert_string_equal(info.arch, "x86");
    assert_string_equal(info.nonpaged_limit.detail, "Windows Server 2003 x86 with /3GB: 128 MB");
    pw_sample_close(&s);
    pw_sim_free(sim);
}

/* A nonpaged pool at its limit logs srv 2019: leak-linear's NtFC grows 64 KiB a sample (225 s)
 * from sample 16; with a configured limit equal to sample 30's nonpaged total (read from the
 * same host without a limit: the limit changes no row), the event comes with the first sample
 * at or above the limit, then with the first one at or above it an hour (16 samples) or more
 * after the last; each stamped with its sample's time, record id its index + 1. */
static void test_sim_pool_empty_event(void **state)
{
    (void)state;
    enum { N = 200 };
    uint64_t np[N];
    pw_sim_t *sim = open_sim("leak-linear", 0, 225000, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_winevent_t ev;
    for (int k = 0; k < N; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        np[k] = s.totals.nonpaged_bytes;
        assert_int_equal(pw_sim_events(sim, &ev, 1), 0); /* 2019 x64's limit: far away */
    }
    pw_sim_free(sim);
    uint64_t lim = np[30];
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = START_MS;
    cfg.sim_interval_ms = 225000;
    cfg.nonpaged_limit_bytes = lim;
    pw_diag_t d;
    assert_int_equal(pw_sim_new("leak-linear", 0, &cfg, &sim, &d), 0);
    int n_events = 0, first = -1;
    uint64_t last = 0;
    for (int k = 0; k < N; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        assert_int_equal(s.totals.nonpaged_bytes, np[k]);
        uint64_t ts = START_MS + (uint64_t)k * 225000;
        int want = np[k] >= lim && (first < 0 || ts >= last + HOUR_MS);
        size_t n = pw_sim_events(sim, &ev, 1);
        if ((int)n != want)
            fail_msg("sample %d: %zu events, want %d", k, n, want);
        if (!want)
            continue;
        last = ts;
        n_events++;
        if (first < 0)
            first = k;
        assert_int_equal(ev.ts_ms, ts);
        assert_int_equal(ev.event_id, 2019);
        assert_int_equal(ev.record_id, (uint64_t)k + 1);
        assert_int_equal(ev.pool, PW_WINEVENT_POOL_NONPAGED);
        assert_string_equal(ev.provider, "Srv");
        assert_int_equal(pw_winevent_kind(&ev), PW_WINEVENT_NONPAGED_EMPTY);
    }
    /* reached by sample 30, then at most once an hour: three or more in 200 samples (12.5 h) */
    assert_true(first >= 0 && first <= 30);
    assert_true(n_events >= 3);
    assert_int_equal(pw_sim_events(sim, &ev, 0), 0);
    pw_sample_close(&s);
    pw_sim_free(sim);
}

/* Totals are the sum of rows plus the preset's untagged remainder; counters stay 32-bit. */
static void test_sim_totals_and_32bit_counters(void **state)
{
    (void)state;
    pw_sim_t *sim = open_sim("leak-bursty", 0, 60000, 0);
    const pw_sim_preset_t *p = pw_sim_preset(sim);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 0; k < 200; k++) {
        assert_int_equal(pw_sim_next(sim, &s), 0);
        uint64_t np = 0, pg = 0;
        for (size_t i = 0; i < s.n; i++) {
            const pw_entry_t *e = &s.entries[i];
            assert_true(e->allocs <= UINT32_MAX && e->frees <= UINT32_MAX);
            assert_int_equal(e->diff, (uint32_t)(e->allocs - e->frees));
            assert_int_equal(e->tag_len, 4);
            if (e->pool == PW_POOL_NONPAGED)
                np += e->bytes;
            else
                pg += e->bytes;
        }
        assert_int_equal(s.totals.nonpaged_bytes, np + p->untagged_nonpaged_bytes);
        assert_int_equal(s.totals.paged_bytes, pg + p->untagged_paged_bytes);
        /* Windows Server 2019 x64 with 16 GiB: min(RAM, 16 TB) = 16 GiB */
        assert_int_equal(s.totals.nonpaged_limit_bytes, 16ull * 1024 * MiB);
    }
    pw_sample_close(&s);
    pw_sim_free(sim);
}

static void test_sim_presets_and_ground_truth(void **state)
{
    (void)state;
    static const char *names[] = {"steady",    "leak-linear",   "leak-step", "leak-bursty",
                                  "leak-slow", "cache-plateau", "ddk-2003",  "fleet-small"};
    assert_int_equal(pw_sim_preset_count(), 8);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(pw_sim_preset_at(i)->name, names[i]);
    assert_null(pw_sim_preset_at(8));
    assert_null(pw_sim_preset_find("nope"));
    const pw_sim_preset_t *fs = pw_sim_preset_find("fleet-small");
    assert_int_equal(fs->hosts, 8);
    const pw_sim_event_t *t[4];
    assert_int_equal(pw_sim_ground_truth(fs, 0, t, 4), 0);
    assert_int_equal(pw_sim_ground_truth(fs, 3, t, 4), 1);
    assert_memory_equal(t[0]->tag, "NtFC", 4);
    assert_int_equal(t[0]->pool, PW_POOL_NONPAGED);
    assert_int_equal(t[0]->onset_ms, 2 * HOUR_MS);
    assert_true(pw_sim_event_rate_bytes_per_h(t[0]) == 4.0 * MiB);
    const pw_sim_preset_t *slow = pw_sim_preset_find("leak-slow");
    assert_int_equal(pw_sim_ground_truth(slow, 0, t, 4), 1);
    /* 1 MiB per day = 43690.67 bytes per hour */
    assert_true(pw_sim_event_rate_bytes_per_h(t[0]) > 43690.6 &&
                pw_sim_event_rate_bytes_per_h(t[0]) < 43690.7);
    /* growth after one day: 1 MiB exactly (64-byte blocks) */
    assert_int_equal(pw_sim_event_growth_bytes(t[0], START_MS, 24 * HOUR_MS), MiB);
}

/* The "sim:" spec through the registry (pw_source_open), as the agent opens it. */
static void test_sim_source_ops_spec(void **state)
{
    (void)state;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = START_MS;
    const char *bad[] = {"sim:",         "sim",           "sim:nope/0",
                         "sim:steady/x", "sim:steady/1x", "sim:fleet-small/8",
                         "sim:steady/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pw_source_t *src = NULL;
        pw_diag_t d;
        pw_diag_clear(&d);
        assert_int_equal(pw_source_open(bad[i], &cfg, &src, &d), PW_EINVAL);
        assert_null(src);
        assert_true(d.msg[0] != 0);
    }
    pw_source_t *src = NULL;
    assert_int_equal(pw_source_open("sim:fleet-small/5", &cfg, &src, NULL), 0);
    assert_string_equal(pw_source_name(src), "sim");
    assert_string_equal(src->info.host_name, "sim-fleet-small-5");
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_source_sample(src, &s, NULL), 0);
    assert_int_equal(s.n, 1500);
    assert_int_equal(s.timestamp_ms, START_MS);
    pw_sample_close(&s);
    pw_source_close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_same_seed_same_samples),
        cmocka_unit_test(test_sim_steady_churn_is_five_percent),
        cmocka_unit_test(test_sim_linear_leak_exact_rate),
        cmocka_unit_test(test_sim_cache_plateaus),
        cmocka_unit_test(test_sim_step_leak),
        cmocka_unit_test(test_sim_ddk_2003_story),
        cmocka_unit_test(test_sim_pool_empty_event),
        cmocka_unit_test(test_sim_totals_and_32bit_counters),
        cmocka_unit_test(test_sim_presets_and_ground_truth),
        cmocka_unit_test(test_sim_source_ops_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
