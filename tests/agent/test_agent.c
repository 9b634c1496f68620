/* test_agent.c: the agent's pure pieces: reconnect backoff (with injected random numbers) and
 * find-tag over a directory of fixture driver files. The session itself is tested end to end
 * in tests/integration/test_e2e.c. */
#include "test_util.h"
#include "agent.h"
#include "uplink.h"

static void test_backoff_doubles_with_equal_jitter_and_caps(void **state)
{
    (void)state;
    pw_backoff_t b;
    pw_backoff_init(&b, 1000, 300000);
    /* rnd = 0 gives the lower edge (half the base), rnd = UINT32_MAX mod (base/2+1) the
     * upper side; base = 1000 * 2^attempt, capped at 300,000. */
    static const uint64_t base[] = {1000,  2000,   4000,   8000,   16000,  32000,
                                    64000, 128000, 256000, 300000, 300000, 300000};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
        pw_backoff_t lo = b, hi = b;
        uint64_t d_lo = pw_backoff_next(&lo, 0);
        uint64_t d_hi = pw_backoff_next(&hi, UINT32_MAX);
        assert_int_equal(d_lo, base[i] / 2);
        uint64_t half = base[i] / 2;
        assert_int_equal(d_hi, half + (uint64_t)UINT32_MAX % (base[i] - half + 1));
        assert_true(d_hi <= base[i]);
        pw_backoff_next(&b, 12345);
    }
    /* After a healthy session the next delay starts over. */
    pw_backoff_reset(&b);
    assert_int_equal(pw_backoff_next(&b, 0), 500);
    /* Defaults: 1 s .. 5 min. */
    pw_backoff_init(&b, 0, 0);
    assert_int_equal(b.min_ms, 1000);
    assert_int_equal(b.max_ms, 300000);
    /* A delay never exceeds the cap, whatever the random number. */
    for (int i = 0; i < 100; i++)
        assert_true(pw_backoff_next(&b, (uint32_t)(i * 2654435761u)) <= 300000);
}

typedef struct {
    char names[8][64];
    uint64_t sizes[8];
    int n;
} found_t;

static void on_found(const char *name, uint64_t size, void *arg)
{
    found_t *f = arg;
    if (f->n < 8) {
        snprintf(f->names[f->n], sizeof(f->names[0]), "%s", name);
        f->sizes[f->n++] = size;
    }
}

static int has(const found_t *f, const char *name, uint64_t size)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0 && f->sizes[i] == size)
            return 1;
    return 0;
}

static void test_find_tag_reports_the_files_that_contain_it(void **state)
{
    (void)state;
    found_t f;
    memset(&f, 0, sizeof(f));
    /* ddk.sys has "Ddk " inside (63 bytes); boundary.sys has it across the 64 KiB read
     * boundary at offset 65534 (70,000 bytes); other.sys and short.sys do not have the four
     * bytes (short.sys is "Ddk" without the space). */
    int n = pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"Ddk ", 4, on_found, &f);
    assert_int_equal(n, 2);
    assert_int_equal(f.n, 2);
    assert_true(has(&f, "ddk.sys", 63));
    assert_true(has(&f, "boundary.sys", 70000));
    memset(&f, 0, sizeof(f));
    assert_int_equal(
        pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"Dd", 2, on_found, &f), 4);
    assert_int_equal(
        pw_agent_find_tag("/nonexistent/poolwatch", (const uint8_t *)"Ddk ", 4, on_found, &f),
        PW_ENOENT);
    assert_int_equal(
        pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"", 0, on_found, &f),
        PW_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_doubles_with_equal_jitter_and_caps),
        cmocka_unit_test(test_find_tag_reports_the_files_that_contain_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
