/* test_alert.c: the alert state machine on an injected clock (pending, for-duration, firing,
 * hysteresis, resolved, expiry), keys, errors and allocation failure. Thresholds are whole
 * percentages so that threshold - hysteresis is exact. */
#include "test_util.h"

#include <math.h>

#include "alert.h"
#include "alloc.h"

#define S 1000LL

static pw_alert_key_t key(const char *host, const char *tag, const char *sev)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.tag, sizeof(k.tag), "%s", tag);
    snprintf(k.pool, sizeof(k.pool), "nonpaged");
    snprintf(k.severity, sizeof(k.severity), "%s", sev);
    return k;
}

static void test_lifecycle(void **state)
{
    (void)state;
    pw_alert_set_t *set;
    assert_int_equal(pw_alert_set_new(&set), 0);
    const pw_alert_rule_t r = {
        .threshold = 85, .hysteresis = 5, .for_ms = 300 * S, .resolved_keep_ms = 600 * S};
    pw_alert_key_t k = key("HOST01", "", "critical");
    pw_alert_transition_t tr;
    int64_t since;

    /* below: nothing stored */
    assert_int_equal(pw_alert_eval(set, &r, &k, 80, 0, &tr), 0);
    assert_int_equal(pw_alert_count(set), 0);
    assert_int_equal(pw_alert_state(set, &k, NULL), PW_ALERT_INACTIVE);

    /* 60 s: crosses -> pending */
    assert_int_equal(pw_alert_eval(set, &r, &k, 86, 60 * S, &tr), 1);
    assert_int_equal(tr.from, PW_ALERT_INACTIVE);
    assert_int_equal(tr.to, PW_ALERT_PENDING);
    assert_int_equal(tr.at_ms, 60 * S);
    assert_int_equal(tr.active_since_ms, 60 * S);
    assert_string_equal(tr.key.host, "HOST01");
    assert_string_equal(tr.key.severity, "critical");
    assert_true(tr.value == 86);
    assert_int_equal(pw_alert_eval(set, &r, &k, 90, 120 * S, &tr), 0);

    /* 200 s: drops below before `for` -> inactive (no hysteresis while pending) */
    assert_int_equal(pw_alert_eval(set, &r, &k, 84, 200 * S, &tr), 1);
    assert_int_equal(tr.from, PW_ALERT_PENDING);
    assert_int_equal(tr.to, PW_ALERT_INACTIVE);
    assert_int_equal(pw_alert_count(set), 0);

    /* 300 s: again pending; the `for` of 300 s counts from here */
    assert_int_equal(pw_alert_eval(set, &r, &k, 86, 300 * S, &tr), 1);
    assert_int_equal(tr.to, PW_ALERT_PENDING);
    assert_int_equal(pw_alert_eval(set, &r, &k, 90, 600 * S - 1, &tr), 0); /* 299.999 s */
    assert_int_equal(pw_alert_state(set, &k, &since), PW_ALERT_PENDING);
    assert_int_equal(since, 300 * S);
    assert_int_equal(pw_alert_eval(set, &r, &k, 90, 600 * S, &tr), 1); /* exactly 300 s */
    assert_int_equal(tr.from, PW_ALERT_PENDING);
    assert_int_equal(tr.to, PW_ALERT_FIRING);
    assert_int_equal(tr.active_since_ms, 300 * S);

    /* hysteresis: fires at 85, resolves only below 80 */
    assert_int_equal(pw_alert_eval(set, &r, &k, 82, 660 * S, &tr), 0);
    assert_int_equal(pw_alert_eval(set, &r, &k, 80, 720 * S, &tr), 0); /* 80 is not < 80 */
    assert_int_equal(pw_alert_state(set, &k, NULL), PW_ALERT_FIRING);
    assert_int_equal(pw_alert_eval(set, &r, &k, 79, 780 * S, &tr), 1);
    assert_int_equal(tr.from, PW_ALERT_FIRING);
    assert_int_equal(tr.to, PW_ALERT_RESOLVED);
    assert_int_equal(tr.at_ms, 780 * S);

    /* resolved stays resolved below the threshold; kept for 600 s */
    assert_int_equal(pw_alert_eval(set, &r, &k, 82, 840 * S, &tr), 0);
    assert_int_equal(pw_alert_expire(set, 780 * S + 600 * S - 1), 0);
    assert_int_equal(pw_alert_count(set), 1);

    /* a new episode from resolved: pending again, then gone when it drops */
    assert_int_equal(pw_alert_eval(set, &r, &k, 86, 900 * S, &tr), 1);
    assert_int_equal(tr.from, PW_ALERT_RESOLVED);
    assert_int_equal(tr.to, PW_ALERT_PENDING);
    assert_int_equal(tr.active_since_ms, 900 * S);
    assert_int_equal(pw_alert_eval(set, &r, &k, 70, 900 * S + 1, &tr), 1);
    assert_int_equal(tr.to, PW_ALERT_INACTIVE);
    assert_int_equal(pw_alert_count(set), 0);
    pw_alert_set_free(set);
}

static void test_expire_and_for_zero(void **state)
{
    (void)state;
    pw_alert_set_t *set;
    assert_int_equal(pw_alert_set_new(&set), 0);
    const pw_alert_rule_t r0 = {.threshold = 70,
                                .hysteresis = 0,
                                .for_ms = 0,
                                .resolved_keep_ms = 0}; /* keep 0 -> default 15 min */
    pw_alert_key_t k = key("HOST02", "Ddk ", "warning");
    pw_alert_transition_t tr;
    assert_int_equal(pw_alert_eval(set, &r0, &k, 70, 1000, &tr), 1); /* >= threshold fires */
    assert_int_equal(tr.from, PW_ALERT_INACTIVE);
    assert_int_equal(tr.to, PW_ALERT_FIRING);
    assert_int_equal(pw_alert_eval(set, &r0, &k, 69.5, 2000, &tr), 1);
    assert_int_equal(tr.to, PW_ALERT_RESOLVED);
    assert_int_equal(pw_alert_expire(set, 2000 + 15 * 60 * S - 1), 0);
    assert_int_equal(pw_alert_expire(set, 2000 + 15 * 60 * S), 1);
    assert_int_equal(pw_alert_count(set), 0);
    assert_int_equal(pw_alert_state(set, &k, NULL), PW_ALERT_INACTIVE);
    pw_alert_set_free(set);
}

static void count_cb(const pw_alert_transition_t *cur, void *arg)
{
    size_t *c = arg;
    if (cur->to == PW_ALERT_PENDING && cur->from == cur->to)
        c[0]++;
    else
        c[1]++;
}

static void test_many_keys(void **state)
{
    (void)state;
    pw_alert_set_t *set;
    assert_int_equal(pw_alert_set_new(&set), 0);
    const pw_alert_rule_t r = {.threshold = 1, .hysteresis = 0, .for_ms = 10 * S};
    char host[32];
    /* 1000 hosts x 2 severities pending: distinct keys, table grows */
    for (int i = 0; i < 1000; i++) {
        snprintf(host, sizeof(host), "HOST%04d", i);
        pw_alert_key_t kw = key(host, "Ddk ", "warning"), kc = key(host, "Ddk ", "critical");
        assert_int_equal(pw_alert_eval(set, &r, &kw, 2, 0, NULL), 1);
        assert_int_equal(pw_alert_eval(set, &r, &kc, 2, 0, NULL), 1);
    }
    assert_int_equal(pw_alert_count(set), 2000);
    size_t c[2] = {0, 0};
    pw_alert_foreach(set, count_cb, c);
    assert_int_equal(c[0], 2000);
    assert_int_equal(c[1], 0);
    /* labels that differ only in where the bytes fall ("ab"+"c" vs "a"+"bc") are distinct */
    pw_alert_key_t a = key("ab", "c", "warning"), b = key("a", "bc", "warning");
    assert_int_equal(pw_alert_eval(set, &r, &a, 2, 0, NULL), 1);
    assert_int_equal(pw_alert_eval(set, &r, &b, 2, 0, NULL), 1);
    /* one host fires after 10 s, the others stay pending */
    pw_alert_key_t k7 = key("HOST0007", "Ddk ", "critical");
    pw_alert_transition_t tr;
    assert_int_equal(pw_alert_eval(set, &r, &k7, 2, 10 * S, &tr), 1);
    assert_int_equal(tr.to, PW_ALERT_FIRING);
    pw_alert_key_t k8 = key("HOST0008", "Ddk ", "critical");
    assert_int_equal(pw_alert_state(set, &k8, NULL), PW_ALERT_PENDING);
    pw_alert_set_free(set);
}

/* An alert restored after a restart is firing without a transition, keeps its episode start,
 * and resolves through hysteresis as any firing alert. */
static void test_restore(void **state)
{
    (void)state;
    pw_alert_set_t *set;
    assert_int_equal(pw_alert_set_new(&set), 0);
    const pw_alert_rule_t r = {
        .threshold = 85, .hysteresis = 5, .for_ms = 300 * S, .resolved_keep_ms = 600 * S};
    pw_alert_key_t k = key("HOST01", "", "critical");
    assert_int_equal(pw_alert_restore(set, &k, 1000 * S, 90), 0);
    assert_int_equal(pw_alert_count(set), 1);
    int64_t since = 0;
    assert_int_equal(pw_alert_state(set, &k, &since), PW_ALERT_FIRING);
    assert_int_equal(since, 1000 * S);
    pw_alert_transition_t tr;
    /* still above, and inside the hysteresis band (82 >= 85 - 5): no transition */
    assert_int_equal(pw_alert_eval(set, &r, &k, 91, 2000 * S, &tr), 0);
    assert_int_equal(pw_alert_eval(set, &r, &k, 82, 2010 * S, &tr), 0);
    /* below the band: resolved, with the restored episode start */
    assert_int_equal(pw_alert_eval(set, &r, &k, 79, 2020 * S, &tr), 1);
    assert_int_equal(tr.from, PW_ALERT_FIRING);
    assert_int_equal(tr.to, PW_ALERT_RESOLVED);
    assert_int_equal(tr.active_since_ms, 1000 * S);
    /* bad input */
    assert_int_equal(pw_alert_restore(NULL, &k, 0, 1), PW_EINVAL);
    assert_int_equal(pw_alert_restore(set, &k, 0, NAN), PW_EINVAL);
    pw_alert_set_free(set);
}

static void test_errors(void **state)
{
    (void)state;
    pw_alert_set_t *set;
    assert_int_equal(pw_alert_set_new(&set), 0);
    const pw_alert_rule_t r = {.threshold = 85, .hysteresis = 5, .for_ms = 0};
    pw_alert_key_t k = key("HOST01", "", "critical");
    assert_int_equal(pw_alert_eval(set, &r, &k, NAN, 0, NULL), PW_EINVAL);
    pw_alert_rule_t bad = r;
    bad.for_ms = -1;
    assert_int_equal(pw_alert_eval(set, &bad, &k, 90, 0, NULL), PW_EINVAL);
    bad = r;
    bad.hysteresis = -1;
    assert_int_equal(pw_alert_eval(set, &bad, &k, 90, 0, NULL), PW_EINVAL);
    pw_alert_key_t unterminated = k;
    memset(unterminated.pool, 'x', sizeof(unterminated.pool));
    assert_int_equal(pw_alert_eval(set, &r, &unterminated, 90, 0, NULL), PW_EINVAL);
    assert_int_equal(pw_alert_eval(NULL, &r, &k, 90, 0, NULL), PW_EINVAL);

    /* allocation failure for a new key: ENOMEM and nothing stored */
    pw_alloc_fail_after(1);
    int rc = pw_alert_eval(set, &r, &k, 90, 0, NULL);
    pw_alloc_fail_after(0);
    assert_int_equal(rc, PW_ENOMEM);
    assert_int_equal(pw_alert_count(set), 0);
    assert_int_equal(pw_alert_eval(set, &r, &k, 90, 0, NULL), 1);
    assert_string_equal(pw_alert_state_name(PW_ALERT_FIRING), "firing");
    pw_alert_set_free(set);
    pw_alert_set_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle), cmocka_unit_test(test_expire_and_for_zero),
        cmocka_unit_test(test_many_keys), cmocka_unit_test(test_restore),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
