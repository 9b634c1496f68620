#include "test_util.h"
#include "error.h"
#include "buf.h"
#include "sample.h"

#include <stdio.h>
#include <string.h>

static void test_error_names_and_messages(void **state)
{
    (void)state;
    assert_string_equal(pw_err_name(PW_ENOBASE), "ENOBASE");
    assert_string_equal(pw_strerror(PW_ENOBASE),
                        "delta refers to a base sample the decoder does not hold");
    assert_string_equal(pw_err_name(PW_ENOMEM), "ENOMEM");
    assert_string_equal(pw_strerror(0), "success");
    assert_string_equal(pw_strerror(-7000), "unknown error");
    /* libuv's UV_EAI_NONAME (-3008) and UV_EAI_AGAIN (-3001): uv_strerror's words, not
     * "Unknown error 3008" */
    assert_string_equal(pw_strerror(-3008), "unknown node or service");
    assert_string_equal(pw_strerror(-3001), "temporary failure");
    char want[64]; /* no EAI code at -3012: strerror's text (its buffer is reused: copy) */
    snprintf(want, sizeof(want), "%s", strerror(3012));
    char got[64];
    snprintf(got, sizeof(got), "%s", pw_strerror(-3012));
    assert_string_equal(got, want);
    assert_int_equal(PW_EFRAMETOOBIG, -6999);
    assert_true(PW__ERR_END < 0 && PW__ERR_END > -8000);
}

static void test_error_diag_fills_what_and_where(void **state)
{
    (void)state;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_diag_set(&d, PW_EPARSE, 12, 345, "allocs", "expected a number, got '%s'", "x1");
    assert_int_equal(r, PW_EPARSE);
    assert_int_equal(d.line, 12);
    assert_int_equal(d.offset, 345);
    assert_string_equal(d.field, "allocs");
    assert_string_equal(d.msg, "expected a number, got 'x1'");
    assert_int_equal(pw_diag_set(NULL, PW_EIO, 0, 0, NULL, "ignored"), PW_EIO);
}

static void test_buf_ceiling_leaves_contents(void **state)
{
    (void)state;
    pw_buf_t b;
    pw_buf_init(&b, 10);
    assert_int_equal(pw_buf_append(&b, "0123456", 7), 0);
    assert_int_equal(pw_buf_append(&b, "7890", 4), PW_ETOOBIG);
    assert_int_equal(b.len, 7);
    assert_memory_equal(b.data, "0123456", 7);
    pw_buf_consume(&b, 3);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "3456", 4);
    pw_buf_close(&b);
}

static void test_tag_format_escapes(void **state)
{
    (void)state;
    char out[64];
    const uint8_t t1[4] = {'I', 'o', ' ', ' '};
    assert_int_equal(pw_tag_format(t1, 4, out, sizeof(out)), 4);
    assert_string_equal(out, "Io  ");
    /* a binary tag: 0x and its bytes in memory order (A = 0x41, \\ = 0x5c) */
    const uint8_t t2[4] = {'A', 0, 0xff, '\\'};
    assert_int_equal(pw_tag_format(t2, 4, out, sizeof(out)), 10);
    assert_string_equal(out, "0x4100ff5c");
    assert_int_equal(pw_tag_format(t2, 4, out, 10), 0); /* 10 + NUL does not fit: nothing */
    assert_string_equal(out, "");
    const uint8_t t3[4] = {'a', '\\', 'b', ' '};
    pw_tag_format(t3, 4, out, sizeof(out));
    assert_string_equal(out, "a\\\\b ");
    /* and back */
    uint8_t b[PW_TAG_MAX];
    assert_int_equal(pw_tag_parse("0x4100ff5c", b), 4);
    assert_memory_equal(b, t2, 4);
    assert_int_equal(pw_tag_parse("0X4100FF5C", b), 4);
    assert_memory_equal(b, t2, 4);
    assert_int_equal(pw_tag_parse("a\\\\b ", b), 4);
    assert_memory_equal(b, t3, 4);
    /* "0x41" is the four characters: its bytes ("A") are printable, so never written so */
    assert_int_equal(pw_tag_parse("0x41", b), 4);
    assert_memory_equal(b, "0x41", 4);
    assert_int_equal(pw_tag_parse("0x4", b), 3);    /* odd: text */
    assert_int_equal(pw_tag_parse("A\\x00", b), 2); /* the older escape still reads */
    assert_memory_equal(b, "A\0", 2);
    assert_int_equal(pw_tag_parse("", b), -1);
    assert_int_equal(pw_tag_parse("a\\q", b), -1);
    assert_int_equal(pw_per_alloc(53272, 1027), 51); /* case08 IpSI: floor, not round */
    assert_int_equal(pw_per_alloc(10, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_names_and_messages),
        cmocka_unit_test(test_error_diag_fills_what_and_where),
        cmocka_unit_test(test_buf_ceiling_leaves_contents),
        cmocka_unit_test(test_tag_format_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
