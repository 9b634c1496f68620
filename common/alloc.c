#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static unsigned long fail_at;  /* 0 = never */
static unsigned long n_allocs; /* since the last pw_alloc_fail_after() */

static int should_fail(void)
{
    n_allocs++;
    return fail_at != 0 && n_allocs >= fail_at;
}

void pw_alloc_release(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

unsigned long pw_alloc_fail_after(unsigned long n)
{
    unsigned long made = n_allocs;
    fail_at = n;
    n_allocs = 0;
    return made;
}

void *pw_malloc(size_t size)
{
    if (should_fail())
        return NULL;
    return malloc(size ? size : 1);
}

void *pw_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    if (should_fail())
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *pw_realloc(void *p, size_t size)
{
    if (should_fail())
        return NULL;
    return realloc(p, size ? size : 1);
}

void pw_free(void *p)
{
    free(p);
}

char *pw_strndup(const char *s, size_t n)
{
    char *r = pw_malloc(n + 1);
    if (r == NULL)
        return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

char *pw_strdup(const char *s)
{
    return pw_strndup(s, strlen(s));
}
