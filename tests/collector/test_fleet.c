/* test_fleet.c: a host's history ring (fleet.h) stays in time order, whatever order samples
 * arrive in: the trend tests refuse unsorted points, and a host whose ring was out of order
 * read as "exhausted now" (second new-user trial: resends under a new boot id, two agents on
 * one certificate, a replay whose times go back). */
#include "test_util.h"

#include "fleet.h"
#include "fleet_internal.h"

static void check_sorted(const pw_host_t *h)
{
    for (size_t i = 1; i < pw_host_hist_n(h); i++)
        if (pw_fleet_hist_at(h, i - 1)->ts_ms >= pw_fleet_hist_at(h, i)->ts_ms)
            fail_msg("points %zu and %zu: %llu then %llu", i - 1, i,
                     (unsigned long long)pw_fleet_hist_at(h, i - 1)->ts_ms,
                     (unsigned long long)pw_fleet_hist_at(h, i)->ts_ms);
}

static void test_fleet_history_in_time_order(void **state)
{
    (void)state;
    pw_fleet_t f;
    pw_fleet_init(&f);
    pw_host_t *h = pw__fleet_get(&f, "HOST01", 32);
    assert_non_null(h);
    /* Two agents on one certificate interleave: 1000, 3000, 5000 and 2000, 4000 late. */
    const uint64_t ts[] = {1000, 3000, 5000, 2000, 4000};
    for (size_t i = 0; i < 5; i++)
        pw__fleet_note_totals(h, ts[i], ts[i] / 10, ts[i] / 100);
    assert_int_equal(pw_host_hist_n(h), 5);
    check_sorted(h);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(pw_fleet_hist_at(h, i)->ts_ms, 1000 * (i + 1));
        assert_int_equal(pw_fleet_hist_at(h, i)->nonpaged_bytes, 100 * (i + 1));
        assert_int_equal(pw_fleet_hist_at(h, i)->paged_bytes, 10 * (i + 1));
    }
    /* A resend of a time already held replaces it (no duplicate point). */
    pw__fleet_note_totals(h, 3000, 7, 8);
    assert_int_equal(pw_host_hist_n(h), 5);
    assert_int_equal(pw_fleet_hist_at(h, 2)->nonpaged_bytes, 7);
    assert_int_equal(pw_fleet_hist_at(h, 2)->paged_bytes, 8);
    /* Older than everything: goes first while there is room. */
    pw__fleet_note_totals(h, 500, 1, 1);
    assert_int_equal(pw_host_hist_n(h), 6);
    assert_int_equal(pw_fleet_hist_at(h, 0)->ts_ms, 500);
    check_sorted(h);
    pw_fleet_close(&f);
}

static void test_fleet_history_full_ring(void **state)
{
    (void)state;
    pw_fleet_t f;
    pw_fleet_init(&f);
    pw_host_t *h = pw__fleet_get(&f, "HOST02", 64);
    assert_non_null(h);
    /* 10 s apart, one ring and a half: the ring keeps the newest PW_FLEET_HISTORY. */
    const size_t total = PW_FLEET_HISTORY + PW_FLEET_HISTORY / 2;
    for (size_t i = 0; i < total; i++)
        pw__fleet_note_totals(h, 10000 * (i + 1), i, i);
    assert_int_equal(pw_host_hist_n(h), PW_FLEET_HISTORY);
    uint64_t oldest = 10000 * (total - PW_FLEET_HISTORY + 1);
    assert_int_equal(pw_fleet_hist_at(h, 0)->ts_ms, oldest);
    assert_int_equal(pw_fleet_hist_at(h, PW_FLEET_HISTORY - 1)->ts_ms, 10000 * total);
    /* Older than the oldest of a full ring: dropped. */
    pw__fleet_note_totals(h, oldest - 5000, 1, 1);
    assert_int_equal(pw_host_hist_n(h), PW_FLEET_HISTORY);
    assert_int_equal(pw_fleet_hist_at(h, 0)->ts_ms, oldest);
    /* Between two held points (a clock stepped back by 35 s): it takes its place and the
     * oldest goes. */
    uint64_t mid = 10000 * total - 35000;
    pw__fleet_note_totals(h, mid, 42, 43);
    assert_int_equal(pw_host_hist_n(h), PW_FLEET_HISTORY);
    assert_int_equal(pw_fleet_hist_at(h, 0)->ts_ms, oldest + 10000);
    check_sorted(h);
    assert_int_equal(pw_fleet_hist_at(h, PW_FLEET_HISTORY - 5)->ts_ms, mid);
    assert_int_equal(pw_fleet_hist_at(h, PW_FLEET_HISTORY - 5)->nonpaged_bytes, 42);
    assert_int_equal(pw_fleet_hist_at(h, PW_FLEET_HISTORY - 1)->ts_ms, 10000 * total);
    pw_fleet_close(&f);
}

static void test_fleet_names_ignore_case(void **state)
{
    (void)state;
    pw_fleet_t f;
    pw_fleet_init(&f);
    pw_host_t *h = pw__fleet_get(&f, "host01", 32);
    assert_non_null(h);
    assert_ptr_equal(pw_fleet_find(&f, "HOST01"), h);
    assert_ptr_equal(pw__fleet_get(&f, "Host01", 32), h); /* no second host */
    assert_int_equal(f.n, 1);
    assert_null(pw_fleet_find(&f, "host02"));
    pw_fleet_close(&f);
}

/* The name index: 5,000 hosts found by their exact and their upper-case spelling (the index
 * grew 8 times on the way), the exact spelling first when two differ only in case, a retired
 * host passed over for the new host of its name, and a rename found under its new name only. */
static void test_fleet_name_index(void **state)
{
    (void)state;
    pw_fleet_t f;
    pw_fleet_init(&f);
    char name[32], up[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "host-%04d.example", i);
        assert_non_null(pw__fleet_get(&f, name, 64));
    }
    assert_int_equal(f.n, 5000);
    for (int i = 0; i < 5000; i += 7) {
        snprintf(name, sizeof(name), "host-%04d.example", i);
        snprintf(up, sizeof(up), "HOST-%04d.EXAMPLE", i);
        pw_host_t *h = pw_fleet_find(&f, name);
        assert_non_null(h);
        assert_int_equal(h->index, i);
        assert_ptr_equal(pw_fleet_find(&f, up), h);
    }
    assert_null(pw_fleet_find(&f, "host-5000.example"));
    /* exact spelling first: "Mixed" and "mixed" both exist only when made apart (a retired
     * "mixed" and a new "Mixed" here) */
    pw_host_t *old = pw__fleet_get(&f, "mixed", 64);
    old->retired = 1;
    pw_host_t *neu = pw__fleet_get(&f, "Mixed", 64);
    assert_ptr_not_equal(old, neu);
    assert_ptr_equal(pw_fleet_find(&f, "mixed"), neu);
    assert_ptr_equal(pw_fleet_find(&f, "MIXED"), neu);
    /* rename: the index is rebuilt */
    snprintf(neu->name, sizeof(neu->name), "renamed");
    assert_int_equal(pw__fleet_reindex(&f), 0);
    assert_ptr_equal(pw_fleet_find(&f, "renamed"), neu);
    assert_null(pw_fleet_find(&f, "Mixed"));
    pw_fleet_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet_history_in_time_order),
        cmocka_unit_test(test_fleet_history_full_ring),
        cmocka_unit_test(test_fleet_names_ignore_case),
        cmocka_unit_test(test_fleet_name_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
