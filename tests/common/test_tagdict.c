/* test_tagdict.c: the tag dictionary keeps each tag's bytes exactly, ids dense in order of
 * first use, across growth of its byte arena, truncation and hostile definitions. */
#include "test_util.h"
#include "error.h"
#include "tagdict.h"

#include <stdio.h>
#include <string.h>

/* Tag i: length 2 + i % (PW_TAG_MAX - 1), i in its first two bytes (so all differ), the rest
 * derived from i (NUL and 0xff included): every length from 2 to PW_TAG_MAX occurs. */
#define TAG_LEN(i) (2 + (i) % (PW_TAG_MAX - 1))
static size_t make_tag(uint32_t i, uint8_t *out)
{
    size_t len = TAG_LEN(i);
    out[0] = (uint8_t)i;
    out[1] = (uint8_t)(i >> 8);
    for (size_t k = 2; k < len; k++)
        out[k] = (uint8_t)(i * 31u + k * 7u);
    return len;
}

static void test_tagdict_ids_and_bytes_survive_growth(void **state)
{
    (void)state;
    pw_tagdict_t d;
    pw_tagdict_init(&d, 0);
    enum { N = 5000 };
    uint8_t t[PW_TAG_MAX];
    for (uint32_t i = 0; i < N; i++) {
        size_t len = make_tag(i, t);
        int added = -1;
        assert_int_equal(pw_tagdict_intern(&d, t, len, &added), i);
        assert_int_equal(added, 1);
    }
    assert_int_equal(pw_tagdict_count(&d), N);
    /* The arena holds sum(len) bytes, not N * PW_TAG_MAX. */
    size_t want = 0;
    for (uint32_t i = 0; i < N; i++)
        want += TAG_LEN(i);
    assert_int_equal(d.used, want);
    for (uint32_t i = 0; i < N; i++) {
        size_t len = make_tag(i, t), got_len = 0;
        const uint8_t *g = pw_tagdict_get(&d, i, &got_len);
        assert_non_null(g);
        assert_int_equal(got_len, len);
        assert_memory_equal(g, t, len);
        int added = -1;
        assert_int_equal(pw_tagdict_intern(&d, t, len, &added), i);
        assert_int_equal(added, 0);
        assert_int_equal(pw_tagdict_find(&d, t, len), i);
    }
    assert_null(pw_tagdict_get(&d, N, NULL));
    /* A prefix of a known tag is another tag. */
    make_tag(70, t); /* length 9 */
    assert_int_equal(pw_tagdict_find(&d, t, 8), PW_ENOENT);
    pw_tagdict_close(&d);
}

static void test_tagdict_reintern_own_bytes(void **state)
{
    (void)state;
    pw_tagdict_t d;
    pw_tagdict_init(&d, 0);
    /* Fill the arena to just below a doubling, then intern a new tag taken from the arena
     * itself (a suffix of the last tag): the arena moves while the caller's pointer points
     * into it. */
    uint8_t t[PW_TAG_MAX];
    memset(t, 'A', sizeof(t));
    uint32_t i = 0;
    while (d.used + PW_TAG_MAX <= 1024) {
        t[0] = (uint8_t)i;
        t[1] = (uint8_t)(i >> 8);
        assert_int_equal(pw_tagdict_intern(&d, t, PW_TAG_MAX, NULL), i);
        i++;
    }
    size_t cap0 = d.bytes_cap, len;
    const uint8_t *own = pw_tagdict_get(&d, i - 1, &len);
    uint8_t expect[PW_TAG_MAX];
    memcpy(expect, own + 1, PW_TAG_MAX - 1);
    d.bytes_cap = d.used; /* force the next add to move the arena */
    int added = 0;
    assert_int_equal(pw_tagdict_intern(&d, own + 1, PW_TAG_MAX - 1, &added), i);
    assert_int_equal(added, 1);
    assert_true(d.bytes_cap > cap0 || d.bytes_cap >= d.used);
    const uint8_t *g = pw_tagdict_get(&d, i, &len);
    assert_int_equal(len, PW_TAG_MAX - 1);
    assert_memory_equal(g, expect, PW_TAG_MAX - 1);
    pw_tagdict_close(&d);
}

static void test_tagdict_define_and_truncate(void **state)
{
    (void)state;
    pw_tagdict_t d;
    pw_tagdict_init(&d, 3);
    assert_int_equal(pw_tagdict_define(&d, 0, (const uint8_t *)"Ddk ", 4), 0);
    assert_int_equal(pw_tagdict_define(&d, 1, (const uint8_t *)"Thre", 4), 0);
    /* A repeat with the same bytes is accepted, other bytes or a gap are not. */
    assert_int_equal(pw_tagdict_define(&d, 1, (const uint8_t *)"Thre", 4), 0);
    assert_int_equal(pw_tagdict_define(&d, 1, (const uint8_t *)"MmSt", 4), PW_EBADTAG);
    assert_int_equal(pw_tagdict_define(&d, 3, (const uint8_t *)"MmSt", 4), PW_EBADTAG);
    /* The same bytes under a second id. */
    assert_int_equal(pw_tagdict_define(&d, 2, (const uint8_t *)"Ddk ", 4), PW_EBADTAG);
    assert_int_equal(pw_tagdict_define(&d, 2, (const uint8_t *)"", 0), PW_EINVAL);
    assert_int_equal(pw_tagdict_define(&d, 2, (const uint8_t *)"M", 1), 0);
    /* Ceiling of 3 tags. */
    assert_int_equal(pw_tagdict_intern(&d, (const uint8_t *)"File", 4, NULL), PW_ETOOBIG);
    assert_int_equal(d.used, 9);
    /* Roll back the last two: their bytes are given back and can be defined anew. */
    pw_tagdict_truncate(&d, 1);
    assert_int_equal(pw_tagdict_count(&d), 1);
    assert_int_equal(d.used, 4);
    assert_int_equal(pw_tagdict_find(&d, (const uint8_t *)"Thre", 4), PW_ENOENT);
    assert_int_equal(pw_tagdict_find(&d, (const uint8_t *)"Ddk ", 4), 0);
    assert_int_equal(pw_tagdict_intern(&d, (const uint8_t *)"Io", 2, NULL), 1);
    size_t len;
    const uint8_t *g = pw_tagdict_get(&d, 1, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(g, "Io", 2);
    pw_tagdict_truncate(&d, 0);
    assert_int_equal(d.used, 0);
    assert_int_equal(pw_tagdict_find(&d, (const uint8_t *)"Ddk ", 4), PW_ENOENT);
    pw_tagdict_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tagdict_ids_and_bytes_survive_growth),
        cmocka_unit_test(test_tagdict_reintern_own_bytes),
        cmocka_unit_test(test_tagdict_define_and_truncate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
