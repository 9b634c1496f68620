/* test_pooltag.c: pooltag.txt loader on the hand-written fixture
 * tests/fixtures/pooltag/pooltag_small.txt (39 lines, every quirk of the real file) and on
 * small in-memory inputs. Expected values come from reading the fixture line by line:
 *   comments: 1-3 (`//`), 4-6 (`rem`, `rem ...`, `REM ...`)            -> 6
 *   blank: 7 (empty), 12 (three spaces)                                 -> 2
 *   entries: 8-11, 13-28, 34-38                                         -> 4 + 16 + 5 = 25
 *   skipped: 29 `PX1 -` and 30 `I4e -` (short tag), 31 `Tun4  -`
 *            (separator), 32 free text, 33 `       <unknown>` (text)    -> 5
 *   line 39 is the DOS end-of-file byte 0x1A                            -> 39 lines in all
 *   duplicates: `Dupe` (27, 34) -> 24 unique, 1 duplicated
 *   wildcards: Afd? Af?? Aml* Bu* CM??                                  -> 5
 *   two-field: ATmp, ATon, `Nul  -` (nothing after the dash)           -> 3
 */
#include "test_util.h"

#include "alloc.h"
#include "pooltag.h"

static pw_pooltag_t *load_fixture(unsigned flags)
{
    pw_pooltag_opts_t o = {.flags = flags};
    pw_pooltag_t *t = NULL;
    pw_diag_t d;
    int rc = pw_pooltag_load(pw_test_fixture("pooltag/pooltag_small.txt"), &o, &t, &d);
    assert_int_equal(rc, 0);
    assert_non_null(t);
    return t;
}

static const pw_pooltag_entry_t *look(const pw_pooltag_t *t, const char *tag, size_t *n)
{
    return pw_pooltag_lookup(t, tag, strlen(tag), n);
}

static void test_counts(void **state)
{
    (void)state;
    pw_pooltag_t *t = load_fixture(0);
    const pw_pooltag_stats_t *s = pw_pooltag_stats(t);
    assert_int_equal(s->lines, 39);
    assert_int_equal(s->entries, 25);
    assert_int_equal(s->unique, 24);
    assert_int_equal(s->duplicated, 1);
    assert_int_equal(s->wildcards, 5);
    assert_int_equal(s->two_field, 3);
    assert_int_equal(s->comments, 6);
    assert_int_equal(s->blank, 2);
    assert_int_equal(s->skipped, 5);
    assert_int_equal(s->lenient, 0);

    size_t n;
    const pw_pooltag_skip_t *sk = pw_pooltag_skipped(t, &n);
    assert_int_equal(n, 5);
    const uint32_t lines[] = {29, 30, 31, 32, 33};
    const uint32_t why[] = {PW_POOLTAG_SKIP_SHORT_TAG, PW_POOLTAG_SKIP_SHORT_TAG,
                            PW_POOLTAG_SKIP_SEPARATOR, PW_POOLTAG_SKIP_TEXT, PW_POOLTAG_SKIP_TEXT};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(sk[i].line, lines[i]);
        assert_int_equal(sk[i].reason, why[i]);
    }

    const pw_pooltag_entry_t *e0 = pw_pooltag_entry(t, 0);
    assert_string_equal(e0->tag, "@GFX");
    assert_int_equal(e0->line, 8);
    assert_null(pw_pooltag_entry(t, 25));
    pw_pooltag_free(t);
}

static void test_lookup_exact(void **state)
{
    (void)state;
    pw_pooltag_t *t = load_fixture(0);
    size_t n;
    const pw_pooltag_entry_t *e;

    e = look(t, "AfdC", &n); /* exact beats the Afd? wildcard; indentation trimmed */
    assert_int_equal(e->line, 14);
    assert_string_equal(e->binary, "afd.sys");
    assert_string_equal(e->desc, "AFD connection (indented sub-entry)");
    assert_int_equal(n, 1);

    e = look(t, "aFDC", &n); /* case-sensitive */
    assert_int_equal(e->line, 15);
    assert_null(look(t, "AFDC", &n));
    assert_int_equal(n, 0);

    e = look(t, "Io", &n); /* padded to `Io  ` */
    assert_int_equal(e->line, 28);
    assert_string_equal(e->tag, "Io  ");
    assert_string_equal(e->binary, "nt!io");
    e = look(t, "Io  ", NULL);
    assert_int_equal(e->line, 28);
    assert_int_equal(look(t, "Dh 1", NULL)->line, 25);
    assert_int_equal(look(t, "Dh 0", NULL)->line, 24);
    assert_int_equal(look(t, "Ddk", NULL)->line, 26);
    assert_int_equal(look(t, "@MP", NULL)->line, 9);
    assert_int_equal(look(t, "_XYZ", NULL)->line, 10);
    assert_int_equal(look(t, "8042", NULL)->line, 11);
    assert_int_equal(look(t, "BIG", NULL)->line, 20);

    e = look(t, "Dupe", &n); /* first definition, and how many */
    assert_int_equal(e->line, 27);
    assert_string_equal(e->binary, "first.sys");
    assert_int_equal(n, 2);

    e = look(t, "ReMo", NULL); /* starts like `rem` but is a tag */
    assert_int_equal(e->line, 35);
    assert_string_equal(e->binary, "refs.sys");

    e = look(t, "CMAl", NULL); /* `-internal`: no space after the dash */
    assert_int_equal(e->line, 23);
    assert_string_equal(e->binary, "nt!cm");
    assert_string_equal(e->desc, "internal allocator without a space");

    e = look(t, "ATmp", NULL); /* two fields */
    assert_string_equal(e->binary, "");
    assert_string_equal(e->desc, "AppTag mount point");

    e = look(t, "Rdy1", NULL);
    assert_string_equal(e->binary, "nt!store or rdyboost.sys");
    assert_string_equal(e->desc, "binary with spaces");

    e = look(t, "Thre", NULL); /* split at the first ` -` only */
    assert_string_equal(e->binary, "nt!ps");
    assert_string_equal(e->desc, "thread objects - with a dash in the text");

    e = look(t, "Nul", NULL);
    assert_int_equal(e->line, 38);
    assert_string_equal(e->binary, "");
    assert_string_equal(e->desc, "");

    /* absent, malformed in strict mode, bad lengths */
    assert_null(look(t, "ConT", &n));
    assert_int_equal(n, 0);
    assert_null(look(t, "PX1", NULL));
    assert_null(look(t, "Tun4", NULL));
    assert_null(look(t, "QTAG", NULL));
    assert_null(pw_pooltag_lookup(t, "Io", 0, NULL));
    assert_null(pw_pooltag_lookup(t, "AfdCX", 5, NULL));
    pw_pooltag_free(t);
}

static void test_lookup_wildcards(void **state)
{
    (void)state;
    pw_pooltag_t *t = load_fixture(0);
    size_t n;
    /* AfdX matches Afd? (3 literal bytes) and Af?? (2): the more specific wins */
    const pw_pooltag_entry_t *e = look(t, "AfdX", &n);
    assert_string_equal(e->tag, "Afd?");
    assert_int_equal(e->line, 13);
    assert_int_equal(n, 1);
    assert_string_equal(look(t, "AfXY", NULL)->tag, "Af??");
    assert_string_equal(look(t, "Aml7", NULL)->tag, "Aml*");
    assert_null(look(t, "Am", NULL)); /* `Am  `: Aml* needs the l */
    assert_string_equal(look(t, "Bu", NULL)->tag, "Bu* ");
    assert_string_equal(look(t, "BuXY", NULL)->tag, "Bu* ");
    assert_string_equal(look(t, "CM12", NULL)->tag, "CM??");
    assert_null(look(t, "Cm12", NULL));
    pw_pooltag_free(t);
}

static void test_lenient(void **state)
{
    (void)state;
    pw_pooltag_t *t = load_fixture(PW_POOLTAG_LENIENT);
    const pw_pooltag_stats_t *s = pw_pooltag_stats(t);
    assert_int_equal(s->entries, 28); /* + PX1, I4e, Tun4 */
    assert_int_equal(s->unique, 27);
    assert_int_equal(s->lenient, 3);
    assert_int_equal(s->skipped, 2); /* free text, `<unknown>` */
    const pw_pooltag_entry_t *e = look(t, "PX1", NULL);
    assert_non_null(e);
    assert_string_equal(e->tag, "PX1 ");
    assert_int_equal(e->line, 29);
    assert_int_equal(e->lenient, 1);
    assert_string_equal(e->binary, "ndproxy.sys");
    assert_string_equal(e->desc, "short tag event");
    e = look(t, "I4e", NULL);
    assert_string_equal(e->binary, "tcpip.sys");
    e = look(t, "Tun4", NULL);
    assert_int_equal(e->line, 31);
    assert_string_equal(e->binary, "<unknown>");
    assert_string_equal(e->desc, "tunnel cache, two spaces before the dash");
    pw_pooltag_free(t);
}

static pw_pooltag_t *parse_str(const char *s, const pw_pooltag_opts_t *o, int want_rc, pw_diag_t *d)
{
    pw_pooltag_t *t = NULL;
    int rc = pw_pooltag_parse(s, strlen(s), o, &t, d);
    assert_int_equal(rc, want_rc);
    if (want_rc)
        assert_null(t);
    return t;
}

static void test_memory_quirks(void **state)
{
    (void)state;
    pw_diag_t d;
    /* BOM, CRLF, no final newline, control byte line, rem followed by a tab */
    pw_pooltag_t *t = parse_str("\xef\xbb\xbf"
                                "Abcd - a.sys - one\r\n"
                                "rem\tcomment\r\n"
                                "Bad\x01 - b.sys - control\r\n"
                                "Efgh - e.sys - last",
                                NULL, 0, &d);
    const pw_pooltag_stats_t *s = pw_pooltag_stats(t);
    assert_int_equal(s->entries, 2);
    assert_int_equal(s->comments, 1);
    assert_int_equal(s->skipped, 1);
    size_t n;
    const pw_pooltag_skip_t *sk = pw_pooltag_skipped(t, &n);
    assert_int_equal(sk[0].line, 3);
    assert_int_equal(sk[0].reason, PW_POOLTAG_SKIP_CONTROL);
    assert_string_equal(look(t, "Abcd", NULL)->desc, "one"); /* no \r kept */
    assert_string_equal(look(t, "Efgh", NULL)->desc, "last");
    pw_pooltag_free(t);

    /* a line longer than max_line is skipped, not an error */
    pw_pooltag_opts_t o = {.max_line = 20};
    t = parse_str("Abcd - a.sys - one\nLong - l.sys - this line is too long\n", &o, 0, &d);
    sk = pw_pooltag_skipped(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(sk[0].line, 2);
    assert_int_equal(sk[0].reason, PW_POOLTAG_SKIP_TOO_LONG);
    pw_pooltag_free(t);

    /* empty input */
    t = parse_str("", NULL, 0, &d);
    assert_int_equal(pw_pooltag_stats(t)->entries, 0);
    assert_null(look(t, "Abcd", NULL));
    pw_pooltag_free(t);
}

static void test_hostile(void **state)
{
    (void)state;
    pw_diag_t d;
    pw_pooltag_t *t = NULL;
    /* NUL on line 2, byte offset 5 + 4 = 9 */
    static const char nul[] = "Abcd\nEfg\0h - x - y\n";
    assert_int_equal(pw_pooltag_parse(nul, sizeof(nul) - 1, NULL, &t, &d), PW_EPARSE);
    assert_null(t);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.offset, 8);

    static const char u16[] = "\xff\xfe"
                              "A\0b\0";
    assert_int_equal(pw_pooltag_parse(u16, sizeof(u16) - 1, NULL, &t, &d), PW_EPARSE);
    assert_string_equal(d.field, "encoding");

    pw_pooltag_opts_t o = {.max_input = 10};
    parse_str("Abcd - a.sys - one\n", &o, PW_ETOOBIG, &d);
    assert_string_equal(d.field, "input");

    pw_pooltag_opts_t o2 = {.max_entries = 2};
    parse_str("Aaaa - a - 1\nBbbb - b - 2\nrem\nCccc - c - 3\n", &o2, PW_ETOOBIG, &d);
    assert_int_equal(d.line, 4);
    assert_string_equal(d.field, "entries");

    assert_int_equal(pw_pooltag_load("/nonexistent/pooltag.txt", NULL, &t, &d), PW_ENOENT);
    assert_int_equal(pw_pooltag_parse(NULL, 1, NULL, &t, &d), PW_EINVAL);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    size_t len;
    char *buf = pw_test_read_file(pw_test_fixture("pooltag/pooltag_small.txt"), &len);
    int ok = 0;
    for (unsigned long k = 1; k < 40 && !ok; k++) {
        pw_pooltag_t *t = NULL;
        pw_alloc_fail_after(k);
        int rc = pw_pooltag_parse(buf, len, NULL, &t, NULL);
        pw_alloc_fail_after(0);
        if (rc == 0) {
            assert_int_equal(pw_pooltag_stats(t)->entries, 25);
            ok = 1;
        } else {
            assert_int_equal(rc, PW_ENOMEM);
            assert_null(t);
        }
        pw_pooltag_free(t);
    }
    assert_true(ok);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),           cmocka_unit_test(test_lookup_exact),
        cmocka_unit_test(test_lookup_wildcards), cmocka_unit_test(test_lenient),
        cmocka_unit_test(test_memory_quirks),    cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
