/* test_fleetq.c: the global fleet view's decoding of the store's PromQL answers
 * (collector/export/fleetq.h), by hand: hosts merged from their series (a host = a host label;
 * limits absent = unknown; the owner from poolwatch_host_owner), last sample times from
 * timestamp() in seconds, rows in the order of the per-tag aggregates, a suspect's two series
 * as one leak; results naming
 * a host query 0 did not list are ignored; errors say which query and what. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "fleetq.h"

#define V(metric, ts, val) "{\"metric\":{" metric "},\"value\":[" ts ",\"" val "\"]}"
#define OK(results)                                                                                \
    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" results "]}}"

static void add(pw_fleetq_build_t *b, int q, const char *json)
{
    pw_diag_t d;
    memset(&d, 0, sizeof(d));
    int r = pw_fleetq_build_add(b, q, json, strlen(json), &d);
    if (r != 0)
        fail_msg("query %d: %s", q, d.msg);
}

static void test_build(void **state)
{
    (void)state;
    pw_fleetq_build_t *b = pw_fleetq_build_new();
    assert_non_null(b);
    add(b, 0,
        OK(V("\"__name__\":\"poolwatch_pool_bytes\",\"host\":\"zeta\",\"pool\":\"nonpaged\"", "1.5", "1000") "," V(
            "\"__name__\":\"poolwatch_pool_bytes\",\"host\":\"zeta\",\"pool\":\"paged\"", "1.5",
            "2000") "," V("\"__name__\":\"poolwatch_pool_limit_bytes\",\"host\":\"zeta\",\"pool\":"
                          "\"nonpaged\"",
                          "1.5",
                          "134217728") "," V("\"__name__\":\"poolwatch_pool_exhaustion_seconds\","
                                             "\"host\":\"zeta\",\"pool\":"
                                             "\"nonpaged\"",
                                             "1.5",
                                             "3600.5") "," V("\"__name__\":\"poolwatch_host_"
                                                             "connected\",\"host\":\"zeta\"",
                                                             "1.5",
                                                             "1") "," V("\"__name__\":\"poolwatch_"
                                                                        "host_suspects\",\"host\":"
                                                                        "\"zeta\"",
                                                                        "1.5",
                                                                        "2") "," V("\"__name__\":"
                                                                                   "\"poolwatch_"
                                                                                   "host_owner\","
                                                                                   "\"collector\":"
                                                                                   "\"https://"
                                                                                   "c2:7443\","
                                                                                   "\"host\":"
                                                                                   "\"zeta\"",
                                                                                   "1.5",
                                                                                   "1") "," V("\"__"
                                                                                              "name"
                                                                                              "__"
                                                                                              "\":"
                                                                                              "\"po"
                                                                                              "olwa"
                                                                                              "tch_"
                                                                                              "pool"
                                                                                              "_byt"
                                                                                              "es\""
                                                                                              ",\"h"
                                                                                              "ost"
                                                                                              "\":"
                                                                                              "\"al"
                                                                                              "pha"
                                                                                              "\","
                                                                                              "\"po"
                                                                                              "ol\""
                                                                                              ":\"n"
                                                                                              "onpa"
                                                                                              "ged"
                                                                                              "\"",
                                                                                              "1.5",
                                                                                              "5")));
    add(b, 1,
        OK(V("\"host\":\"zeta\",\"pool\":\"nonpaged\"", "1.5", "1764400000.005") "," V(
            "\"host\":\"alpha\",\"pool\":\"nonpaged\"", "1.5",
            "1764400001") "," V("\"host\":\"ghost\",\"pool\":\"nonpaged\"", "1.5", "1")));
    add(b, 2,
        OK(V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"zeta\",\"pool\":\"paged\",\"tag\":"
             "\"Thre\"",
             "1.5", "300") "," V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":\"alpha\",\"pool\":"
                                 "\"nonpaged\","
                                 "\"tag\":\"Ddk \"",
                                 "1.5",
                                 "100") "," V("\"__name__\":\"poolwatch_tag_bytes\",\"host\":"
                                              "\"zeta\",\"pool\":\"nonpaged\",\"tag\":"
                                              "\"Ddk \"",
                                              "1.5", "200")));
    add(b, 3,
        OK(V("\"__name__\":\"poolwatch_leak_score\",\"host\":\"zeta\",\"pool\":\"nonpaged\","
             "\"tag\":\"Ddk \"",
             "1.5", "2.5") "," V("\"__name__\":\"poolwatch_leak_growth_bytes_per_hour\",\"host\":"
                                 "\"zeta\",\"pool\":"
                                 "\"nonpaged\",\"tag\":\"Ddk \"",
                                 "1.5", "4096")));
    pw_fleetq_snap_t *s = pw_fleetq_build_end(b);
    assert_non_null(s);
    assert_int_equal(s->n_hosts, 2);
    const pw_fleetq_host_t *a = &s->hosts[0], *z = &s->hosts[1];
    assert_string_equal(a->name, "alpha");
    assert_string_equal(z->name, "zeta");
    assert_int_equal(a->used[0], 5);
    assert_int_equal(a->limit[0], 0);
    assert_string_equal(a->collector, "");
    assert_int_equal(a->last_seen_ms, 1764400001000ull);
    assert_true(a->eta_s[0] < 0 && a->eta_s[1] < 0);
    assert_int_equal(z->used[0], 1000);
    assert_int_equal(z->used[1], 2000);
    assert_int_equal(z->limit[0], 134217728);
    assert_int_equal(z->limit[1], 0);
    assert_true(z->eta_s[0] == 3600.5);
    assert_int_equal(z->connected, 1);
    assert_int_equal(z->suspects, 2);
    assert_string_equal(z->collector, "https://c2:7443");
    assert_int_equal(z->last_seen_ms, 1764400000005ull);
    /* rows by tag, pool, bytes (most first), host */
    assert_int_equal(s->n_rows, 3);
    assert_int_equal(s->rows[0].host, 1);
    assert_string_equal(s->rows[0].tag, "Ddk ");
    assert_int_equal(s->rows[0].pool, PW_POOL_NONPAGED);
    assert_int_equal(s->rows[0].bytes, 200);
    assert_int_equal(s->rows[1].host, 0);
    assert_string_equal(s->rows[1].tag, "Ddk ");
    assert_int_equal(s->rows[1].bytes, 100);
    assert_int_equal(s->rows[2].host, 1);
    assert_string_equal(s->rows[2].tag, "Thre");
    assert_int_equal(s->rows[2].pool, PW_POOL_PAGED);
    assert_int_equal(s->rows[2].bytes, 300);
    /* one leak from its two series */
    assert_int_equal(s->n_leaks, 1);
    assert_int_equal(s->leaks[0].host, 1);
    assert_true(s->leaks[0].score == 2.5);
    assert_true(s->leaks[0].growth_bytes_per_hour == 4096);
    assert_ptr_equal(pw_fleetq_find(s, "zeta"), z);
    assert_null(pw_fleetq_find(s, "ghost"));
    pw_fleetq_snap_free(s);
}

static void test_errors(void **state)
{
    (void)state;
    pw_fleetq_build_t *b = pw_fleetq_build_new();
    pw_diag_t d;
    const char *e1 = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}";
    assert_int_equal(pw_fleetq_build_add(b, 2, e1, strlen(e1), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 2: status 'error': parse error");
    const char *e2 = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}";
    assert_int_equal(pw_fleetq_build_add(b, 0, e2, strlen(e2), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 0: resultType 'matrix', expected a vector");
    const char *e3 = OK(V("\"host\":\"h\"", "1", "12x"));
    assert_int_equal(pw_fleetq_build_add(b, 0, e3, strlen(e3), &d), PW_EPARSE);
    assert_string_equal(d.msg, "query 0: result 0: value '12x'");
    const char *e4 = "{\"status\":";
    assert_int_equal(pw_fleetq_build_add(b, 1, e4, strlen(e4), &d), PW_EPARSE);
    assert_non_null(strstr(d.msg, "query 1: not JSON"));
    pw_fleetq_build_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_build), cmocka_unit_test(test_errors)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
