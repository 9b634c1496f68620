/* test_term_vt.c: the frames `poolwatch top` draws in a Windows console (cli/term_vt.c), byte
 * for byte. Expected bytes are written out by hand from Microsoft's "Console Virtual Terminal
 * Sequences": CUP ESC[<row>;<col>H, SGR ESC[7m (negative: the header, as ncurses' A_REVERSE),
 * ESC[1m (bold: a changed row, as A_BOLD), ESC[0m (default), EL ESC[K and ED ESC[J (erase to
 * the end of the line / screen). Runs natively and under Wine (tests/windows.cmake). */
#include "test_util.h"

#include "term.h"

static char *text[] = {"Memory: 1K", " Tag  Type", " Leak Paged 1 2"};
static unsigned char attr[] = {PW_TOP_ATTR_NONE, PW_TOP_ATTR_HEADER, PW_TOP_ATTR_HIGHLIGHT};

static void frame(int cols, int rows, const char *want)
{
    pw_top_lines_t l = {text, attr, 3};
    pw_buf_t b;
    pw_buf_init(&b, 1 << 16);
    assert_int_equal(pw_term_vt_frame(&l, cols, rows, &b), 0);
    assert_int_equal(pw_buf_append(&b, "", 1), 0);
    assert_string_equal((const char *)b.data, want);
    pw_buf_close(&b);
}

static void test_vt_frame_fills_and_erases(void **state)
{
    (void)state;
    /* 80x5: three rows, then the rest of the screen erased from row 4. */
    frame(80, 5,
          "\x1b[1;1HMemory: 1K\x1b[0m\x1b[K"
          "\x1b[2;1H\x1b[7m Tag  Type\x1b[0m\x1b[K"
          "\x1b[3;1H\x1b[1m Leak Paged 1 2\x1b[0m\x1b[K"
          "\x1b[4;1H\x1b[J");
}

static void test_vt_frame_cuts_to_the_screen(void **state)
{
    (void)state;
    /* 8 columns: each line cut at 8 bytes; 2 rows: the third line left out, nothing erased
     * below (the screen is full) and no line end, so the bottom row does not scroll. */
    frame(8, 2,
          "\x1b[1;1HMemory: \x1b[0m\x1b[K"
          "\x1b[2;1H\x1b[7m Tag  Ty\x1b[0m\x1b[K");
    /* 0 rows: nothing to draw. */
    frame(80, 0, "");
}

static void test_vt_frame_buffer_limit(void **state)
{
    (void)state;
    pw_top_lines_t l = {text, attr, 3};
    pw_buf_t b;
    pw_buf_init(&b, 16); /* less than one row */
    assert_int_equal(pw_term_vt_frame(&l, 80, 5, &b), PW_ETOOBIG);
    pw_buf_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_frame_fills_and_erases),
        cmocka_unit_test(test_vt_frame_cuts_to_the_screen),
        cmocka_unit_test(test_vt_frame_buffer_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
