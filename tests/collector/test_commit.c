/* test_commit.c: the group-commit policy (collector/ingest/commit.h) on a fake clock: which
 * sample each commit carries and when it runs, as the listener drives it (a commit due at the
 * oldest sample's deadline runs before a sample arriving at or after it; a bound reached
 * commits at once). Expected commits are worked out by hand from the arrival times. */
#include "test_util.h"

#include "collector.h"
#include "commit.h"

#define MAX_COMMITS 64

/* A commit: when it ran and which samples (indexes into the arrivals) it carried. */
typedef struct {
    uint64_t at_ms;
    size_t first, n;
} commit_t;

typedef struct {
    commit_t c[MAX_COMMITS];
    size_t n;
    size_t next_first; /* first sample not yet committed */
    size_t added;
} run_t;

static void record(run_t *r, pw_commit_t *c, uint64_t at_ms)
{
    assert_true(r->n < MAX_COMMITS);
    r->c[r->n].at_ms = at_ms;
    r->c[r->n].first = r->next_first;
    r->c[r->n].n = pw_commit_pending(c);
    r->next_first += pw_commit_pending(c);
    r->n++;
    pw_commit_done(c);
}

/* Drives the policy as the listener does: before each arrival, the timer's commit when its
 * deadline has come; after each put, an immediate commit when a bound is reached; at the end,
 * the timer's last commit. */
static void drive(run_t *r, const pw_commit_policy_t *p, const uint64_t *at_ms,
                  const uint64_t *bytes, size_t n)
{
    memset(r, 0, sizeof(*r));
    pw_commit_t c;
    pw_commit_init(&c, p);
    for (size_t i = 0; i < n; i++) {
        if (pw_commit_due(&c, at_ms[i]))
            record(r, &c, pw_commit_deadline_ms(&c));
        if (pw_commit_add(&c, at_ms[i], bytes[i]))
            record(r, &c, at_ms[i]);
        r->added++;
    }
    if (pw_commit_pending(&c) > 0)
        record(r, &c, pw_commit_deadline_ms(&c));
}

static void expect(const run_t *r, size_t i, uint64_t at_ms, size_t first, size_t n)
{
    assert_true(i < r->n);
    if (r->c[i].at_ms != at_ms || r->c[i].first != first || r->c[i].n != n)
        fail_msg("commit %zu: at %llu ms samples %zu..+%zu; expected at %llu ms samples %zu..+%zu",
                 i, (unsigned long long)r->c[i].at_ms, r->c[i].first, r->c[i].n,
                 (unsigned long long)at_ms, first, n);
}

/* 20 hosts at 10 s: a sample every 500 ms. With a 600-ms wait, the sample at t opens a
 * commit due at t + 600: the one at t + 500 joins it, the one at t + 1000 opens the next. */
static void test_low_rate_pairs(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 600, .max_samples = 256, .max_bytes = 4u << 20};
    uint64_t at[8], bytes[8];
    for (size_t i = 0; i < 8; i++) {
        at[i] = 10000 + 500 * i;
        bytes[i] = 1500;
    }
    run_t r;
    drive(&r, &p, at, bytes, 8);
    assert_int_equal(r.n, 4);
    expect(&r, 0, 10600, 0, 2);
    expect(&r, 1, 11600, 2, 2);
    expect(&r, 2, 12600, 4, 2);
    expect(&r, 3, 13600, 6, 2);
    /* The old fixed 200-ms period amounts to a 200-ms wait here: one sample a commit. */
    p.max_wait_ms = 200;
    drive(&r, &p, at, bytes, 8);
    assert_int_equal(r.n, 8);
    for (size_t i = 0; i < 8; i++)
        expect(&r, i, 10200 + 500 * i, i, 1);
}

/* A deadline falling exactly on an arrival commits first: the arrival opens the next one. */
static void test_deadline_before_arrival(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 500, .max_samples = 0, .max_bytes = 0};
    const uint64_t at[] = {0, 499, 500, 1000, 1001};
    const uint64_t bytes[] = {1, 1, 1, 1, 1};
    run_t r;
    drive(&r, &p, at, bytes, 5);
    assert_int_equal(r.n, 3);
    expect(&r, 0, 500, 0, 2);  /* 0 and 499; due at 500, before the sample at 500 */
    expect(&r, 1, 1000, 2, 1); /* 500 alone: due at 1000, before the one at 1000 */
    expect(&r, 2, 1500, 3, 2); /* 1000 and 1001, by the end's timer */
}

/* 10,000 agents at 10 s: a sample every millisecond. The count bound commits every 256
 * samples, 255 ms after the first of them: the wait never comes into play. */
static void test_high_rate_count_bound(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 600, .max_samples = 256, .max_bytes = 4u << 20};
    enum { N = 1000 };
    static uint64_t at[N], bytes[N];
    for (size_t i = 0; i < N; i++) {
        at[i] = i;
        bytes[i] = 800;
    }
    run_t r;
    drive(&r, &p, at, bytes, N);
    assert_int_equal(r.n, 4);
    expect(&r, 0, 255, 0, 256);
    expect(&r, 1, 511, 256, 256);
    expect(&r, 2, 767, 512, 256);
    /* the last 232 (768..999): the bound is not reached, the wait runs out at 768 + 600 */
    expect(&r, 3, 1368, 768, 232);
}

/* Keyframes of 1.5 MiB: the byte bound (4 MiB) is reached by the third, committed at once;
 * small deltas then wait for the deadline. */
static void test_byte_bound(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 600, .max_samples = 256, .max_bytes = 4u << 20};
    const uint64_t kf = 3u << 19; /* 1.5 MiB */
    const uint64_t at[] = {0, 10, 20, 30, 40, 50, 700};
    const uint64_t bytes[] = {kf, kf, kf, kf, 100, 100, 100};
    run_t r;
    drive(&r, &p, at, bytes, 7);
    assert_int_equal(r.n, 3);
    expect(&r, 0, 20, 0, 3);  /* 4.5 MiB >= 4 MiB at the third */
    expect(&r, 1, 630, 3, 3); /* 1.5 MiB + 200 B: the wait, 30 + 600 */
    expect(&r, 2, 1300, 6, 1);
}

static void test_state(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 0, .max_samples = 2, .max_bytes = 0};
    pw_commit_t c;
    pw_commit_init(&c, &p);
    assert_int_equal(pw_commit_pending(&c), 0);
    assert_true(pw_commit_deadline_ms(&c) == UINT64_MAX);
    assert_false(pw_commit_due(&c, UINT64_MAX));
    assert_int_equal(pw_commit_add(&c, 100, 0), 0);
    assert_int_equal(pw_commit_deadline_ms(&c), 101); /* a wait of 0 counts as 1 ms */
    assert_false(pw_commit_due(&c, 100));
    assert_true(pw_commit_due(&c, 101));
    assert_int_equal(pw_commit_add(&c, 100, 0), 1); /* the second: bound reached */
    assert_int_equal(pw_commit_deadline_ms(&c), 100);
    assert_true(pw_commit_due(&c, 100));
    pw_commit_done(&c);
    assert_int_equal(pw_commit_pending(&c), 0);
    assert_false(pw_commit_due(&c, 1000));
    /* a deadline past the clock's end stays at its end */
    p.max_wait_ms = 1000;
    p.max_samples = 0;
    pw_commit_init(&c, &p);
    pw_commit_add(&c, UINT64_MAX - 10, 1);
    assert_true(pw_commit_deadline_ms(&c) == UINT64_MAX);
    assert_true(pw_commit_due(&c, UINT64_MAX));
}

/* What the listener's one-shot timer is (re)started with. */
static void test_arm(void **state)
{
    (void)state;
    pw_commit_policy_t p = {.max_wait_ms = 600, .max_samples = 3, .max_bytes = 10000};
    pw_commit_t c;
    pw_commit_init(&c, &p);
    assert_int_equal(pw_commit_arm(&c, 1000, 10), 600); /* the first: its deadline */
    assert_int_equal(pw_commit_arm(&c, 1200, 10), -1);  /* joins it */
    assert_int_equal(pw_commit_arm(&c, 1300, 10), 0);   /* the third: at once */
    assert_int_equal(pw_commit_arm(&c, 1300, 10), 0);   /* still over: at once */
    pw_commit_done(&c);
    assert_int_equal(pw_commit_arm(&c, 2000, 9999), 600);
    assert_int_equal(pw_commit_arm(&c, 2100, 1), 0); /* 10,000 bytes */
    pw_commit_done(&c);
    /* a first sample handed in late (the loop's clock went on): never a negative delay */
    p.max_samples = 0;
    pw_commit_init(&c, &p);
    assert_int_equal(pw_commit_arm(&c, 5000, 1), 600);
    assert_int_equal(pw_commit_arm(&c, 5700, 1), -1); /* overdue: the timer fires anyway */
}

/* The collector's own policy (its option table's defaults, as poolwatch-collector and
 * bench_store take them): every sample is committed within [store] commit_interval of its
 * arrival; at 20 hosts at 10 s (a sample every 500 ms) two share a commit; at 10,000 agents
 * (one a millisecond) a commit comes at least every 600 ms and carries no more than
 * commit_max_samples. */
static void test_collector_defaults(void **state)
{
    (void)state;
    pw_collector_cfg_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_diag_t d;
    assert_int_equal(pw_config_defaults(pw_collector_options, &cfg, &d), 0);
    pw_commit_policy_t p = pw_collector_commit_policy(&cfg);
    assert_int_equal(p.max_wait_ms, cfg.commit_interval_ms);
    assert_int_equal(p.max_samples, (uint64_t)cfg.commit_max_samples);
    assert_int_equal(p.max_bytes, cfg.commit_max_bytes);
    enum { N = 2000, LOW = 100 };
    static uint64_t at[N], bytes[N];
    for (size_t i = 0; i < N; i++) {
        at[i] = 500 * i;
        bytes[i] = 1500;
    }
    run_t r;
    drive(&r, &p, at, bytes, LOW);
    assert_int_equal(r.n, LOW / 2);
    for (size_t i = 0; i < r.n; i++)
        expect(&r, i, 500 * 2 * i + p.max_wait_ms, 2 * i, 2);
    for (size_t i = 0; i < N; i++)
        at[i] = i;
    drive(&r, &p, at, bytes, N);
    assert_true(r.n >= N / p.max_samples);
    for (size_t i = 0; i < r.n; i++) {
        assert_true(r.c[i].n <= p.max_samples);
        assert_true(r.c[i].at_ms - at[r.c[i].first] <= p.max_wait_ms);
    }
    assert_int_equal(r.next_first, N);
    pw_config_free(pw_collector_options, &cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_low_rate_pairs),
        cmocka_unit_test(test_deadline_before_arrival),
        cmocka_unit_test(test_high_rate_count_bound),
        cmocka_unit_test(test_byte_bound),
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_arm),
        cmocka_unit_test(test_collector_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
