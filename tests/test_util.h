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

#endif /* PW_TEST_UTIL_H */
