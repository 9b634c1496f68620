/* test_backoff.c: the one exponential backoff (common/backoff.h). Expected delays are written
 * out by hand from the rule "min doubled n times, capped", not computed with the code. */
#include "test_util.h"
#include "backoff.h"

static void test_delay_doubles_and_caps(void **state)
{
    (void)state;
    /* The collector's senders: notify 500 ms -> 30 s, remote write 1 s -> 30 s. */
    const uint64_t notify[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (uint32_t n = 0; n < 8; n++)
        assert_int_equal(pw_backoff_delay_ms(500, 30000, n), notify[n]);
    const uint64_t rw[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (uint32_t n = 0; n < 7; n++)
        assert_int_equal(pw_backoff_delay_ms(1000, 30000, n), rw[n]);
    /* A cap below the start wins; huge n neither overflows nor loops long. */
    assert_int_equal(pw_backoff_delay_ms(5000, 3000, 0), 3000);
    assert_int_equal(pw_backoff_delay_ms(1, UINT64_MAX, 63), 9223372036854775808ull);
    assert_int_equal(pw_backoff_delay_ms(1000, 300000, UINT32_MAX), 300000);
}

static void test_jitter_bounds(void **state)
{
    (void)state;
    /* The agent's defaults (0 = 1 s .. 5 min): bases 1000, 2000, 4000, ..., 256000, 300000. */
    const uint64_t base[] = {1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000};
    pw_backoff_t b;
    pw_backoff_init(&b, 0, 0);
    assert_int_equal(b.min_ms, 1000);
    assert_int_equal(b.max_ms, 300000);
    for (size_t i = 0; i < 10; i++) {
        pw_backoff_t lo = b, hi = b;
        /* rnd 0: exactly half the base; rnd = base - base/2: exactly the base */
        assert_int_equal(pw_backoff_next(&lo, 0), base[i] / 2);
        assert_int_equal(pw_backoff_next(&hi, (uint32_t)(base[i] - base[i] / 2)), base[i]);
        pw_backoff_next(&b, 7);
    }
    /* 3 s .. 5 s, odd base: 3000 -> [1500, 3000]; rnd 1501 wraps to 1500 + 0 */
    pw_backoff_init(&b, 3000, 5000);
    assert_int_equal(pw_backoff_next(&b, 1501), 1500);
    assert_int_equal(pw_backoff_next(&b, 1000), 2500 + 1000); /* base 5000 (6000 capped) */
    pw_backoff_reset(&b);
    assert_int_equal(pw_backoff_next(&b, 0), 1500);
    /* max below min: raised to min */
    pw_backoff_init(&b, 2000, 1000);
    assert_int_equal(b.max_ms, 2000);
    assert_int_equal(pw_backoff_next(&b, 5), 1005);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_doubles_and_caps),
        cmocka_unit_test(test_jitter_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
