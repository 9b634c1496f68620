/* test_util.h: helpers shared by the cmocka tests (header only). */
#ifndef PW_TEST_UTIL_H
#define PW_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* Path of a fixture under tests/fixtures (PW_FIXTURES is set by CMake). Static buffer. */
static inline const char *pw_test_fixture(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", PW_FIXTURES, rel);
    return path;
}

/* Reads a whole file into a malloc'd buffer (NUL-terminated); fails the test on error. */
static inline char *pw_test_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len_out)
        *len_out = (size_t)n;
    return buf;
}

/* Whether `path` holds `needle` (the whole file is read); fails the test if it cannot be read. */
static inline int pw_test_file_contains(const char *path, const char *needle)
{
    size_t n;
    char *s = pw_test_read_file(path, &n);
    int r = strstr(s, needle) != NULL;
    free(s);
    return r;
}

/* How many times `needle` occurs in the file at `path` (overlapping occurrences count). */
static inline size_t pw_test_count_in_file(const char *path, const char *needle)
{
    size_t n, k = 0;
    char *s = pw_test_read_file(path, &n);
    for (const char *p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle))
        k++;
    free(s);
    return k;
}

/* ---- skips --------------------------------------------------------------------------------
 * A skipped test is not a pass. A test that cannot run here calls pw_test_skip("why") (it
 * prints the reason and ends the cmocka test as skipped) and main returns
 * pw_test_exit(failed): 0 when everything ran and passed, PW_TEST_SKIP_EXIT (77) when nothing
 * failed but something was skipped, which ctest reports as "Skipped" (SKIP_RETURN_CODE in
 * tests/CMakeLists.txt). When the environment has CI=true a skip fails instead: CI must run
 * everything. pw_test_skip_all skips a whole executable before any test ran. */
#define PW_TEST_SKIP_EXIT 77

static inline int *pw__test_skips(void)
{
    static int skips;
    return &skips;
}

static inline int pw_test_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci != NULL && strcmp(ci, "true") == 0;
}

/* Prints why; returns 1 when the skip must fail (CI=true). */
static inline int pw__test_skip_say(const char *why)
{
    if (pw_test_in_ci()) {
        fprintf(stderr, "FAILED: skipped under CI=true (a skip is a failure in CI): %s\n", why);
        return 1;
    }
    fprintf(stderr, "SKIPPED: %s\n", why);
    (*pw__test_skips())++;
    return 0;
}

#define pw_test_skip(why)                                                                          \
    do {                                                                                           \
        if (pw__test_skip_say(why))                                                                \
            fail_msg("skipped under CI=true: %s", (why));                                          \
        skip();                                                                                    \
    } while (0)

static inline void pw_test_skip_all(const char *why)
{
    exit(pw__test_skip_say(why) ? 1 : PW_TEST_SKIP_EXIT);
}

static inline int pw_test_exit(int failed)
{
    if (failed != 0)
        return 1;
    return *pw__test_skips() ? PW_TEST_SKIP_EXIT : 0;
}

#endif /* PW_TEST_UTIL_H */
