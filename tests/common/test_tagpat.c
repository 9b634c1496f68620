/* test_tagpat.c: the one tag-pattern rule (common/tagpat.h). Expected answers are worked out
 * by hand from the rule as the header states it. */
#include "test_util.h"
#include "tagpat.h"

static int m(const char *p, const char *s)
{
    return pw_tagpat_match(p, strlen(p), s, strlen(s));
}

static void test_wildcards(void **state)
{
    (void)state;
    assert_true(m("Io", "Io"));
    assert_true(m("*", "Ntfs"));
    assert_true(m("*", ""));
    assert_true(m("N?fs", "Ntfs"));
    assert_true(m("N*s", "Ntfs"));
    assert_true(m("*f*", "Ntfs"));
    assert_false(m("N?s", "Ntfs"));  /* ? is exactly one byte */
    assert_false(m("ntfs", "Ntfs")); /* case-sensitive */
    assert_false(m("Nt", "Ntfs"));   /* the whole text */
    assert_false(m("", "Ntfs"));     /* an empty pattern matches nothing */
    assert_false(m("", ""));
    assert_true(m("[ab]", "[ab]")); /* no bracket expressions: literal */
    assert_false(m("[ab]", "a"));
    assert_true(m("a\\*", "a\\xyz"));   /* backslash literal, no escaping */
    assert_true(m("a*b*c", "aXbYbZc")); /* backtracking over the first b */
    assert_false(m("a*b*c", "aXbYcZ"));
}

static void test_padding(void **state)
{
    (void)state;
    /* poolmon's padded short tags: the trailing spaces are optional */
    assert_true(m("Io", "Io  "));
    assert_true(m("Io*", "Io  "));
    assert_true(m("Io??", "Io  "));
    assert_true(m("Io  ", "Io  "));
    assert_true(m("????", "Io  "));
    assert_false(m("????", "Io")); /* an unpadded 2-byte name stays 2 bytes */
    assert_false(m("Io?", "Io"));
    assert_true(m("Dh ?", "Dh 1")); /* an inner space is part of the tag */
    assert_false(m("Dh", "Dh 1"));
    assert_false(m("io*", "Io  "));
    assert_true(m("*", "    ")); /* all spaces: no empty text to match against */
    assert_false(m("x", "    "));
}

static void test_lists(void **state)
{
    (void)state;
    assert_true(pw_tagpat_list_match_str("Nt*,Dh ?", "Dh 1", 4));
    assert_true(pw_tagpat_list_match_str("Nt*,Dh ?", "Ntfx", 4));
    assert_false(pw_tagpat_list_match_str("Nt*,Dh ?", "Io  ", 4));
    assert_false(pw_tagpat_list_match_str("", "Io  ", 4));
    assert_false(pw_tagpat_list_match_str(",,", "Io  ", 4));
    assert_true(pw_tagpat_list_match_str(",Io,", "Io  ", 4));

    pw_tagpat_list_t l;
    assert_int_equal(pw_tagpat_list_init(&l, NULL), 0);
    assert_false(l.present);
    assert_false(pw_tagpat_list_match(&l, "Io  ", 4));
    pw_tagpat_list_free(&l);
    assert_int_equal(pw_tagpat_list_init(&l, "S*,W?ap,,Io"), 0);
    assert_true(l.present);
    assert_int_equal(l.n, 3);
    assert_true(pw_tagpat_list_match(&l, "Same", 4));
    assert_true(pw_tagpat_list_match(&l, "Wrap", 4));
    assert_true(pw_tagpat_list_match(&l, "Io  ", 4));
    assert_false(pw_tagpat_list_match(&l, "Rset", 4));
    assert_false(pw_tagpat_list_match(&l, "", 0));
    pw_tagpat_list_free(&l);
    assert_int_equal(pw_tagpat_list_init(&l, "?set"), 0);
    assert_true(pw_tagpat_list_match(&l, "Rset", 4));
    assert_false(pw_tagpat_list_match(&l, "Same", 4));
    pw_tagpat_list_free(&l);
    assert_int_equal(pw_tagpat_list_init(&l, ","), 0);
    assert_true(l.present);
    assert_int_equal(l.n, 0);
    assert_false(pw_tagpat_list_match(&l, "Io  ", 4));
    pw_tagpat_list_free(&l);
    pw_tagpat_list_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wildcards),
        cmocka_unit_test(test_padding),
        cmocka_unit_test(test_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
