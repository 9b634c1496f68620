/* alloc.h: the allocator every poolwatch module uses, with a fault-injection hook so that
 * torture tests and fuzzers can fail the Nth allocation (curl "torture", fluent-bit
 * flb_malloc_mod). Returns NULL on failure like malloc; callers turn that into PW_ENOMEM. */
#ifndef PW_ALLOC_H
#define PW_ALLOC_H

#include <stddef.h>

/* malloc/calloc/realloc/free with the hook below. pw_free accepts NULL. pw_realloc with a
 * failure leaves `p` untouched. Sizes are in bytes; pw_calloc checks n * size for overflow. */
void *pw_malloc(size_t size);
void *pw_calloc(size_t n, size_t size);
void *pw_realloc(void *p, size_t size);
void pw_free(void *p);

/* Copies `n` bytes of `s` plus a NUL into a new buffer (free with pw_free); NULL on failure. */
char *pw_strndup(const char *s, size_t n);
char *pw_strdup(const char *s);

/* Gives free memory inside the heap back to the operating system: whole free pages between
 * live blocks that the allocator would otherwise keep resident (glibc malloc_trim(3), which
 * madvises them away; they are mapped again when reused). A no-op where the C library has
 * no such call. Costs a walk of the heap's free lists: call it after a burst of transient
 * allocations (the agent: a TLS handshake and a rebase), not per sample. */
void pw_alloc_release(void);

/* Test hook: the `n`th allocation from now (1-based) and every later one fail; 0 turns
 * failures off. Returns the number of allocations made since the last call. Not thread safe. */
unsigned long pw_alloc_fail_after(unsigned long n);

#endif /* PW_ALLOC_H */
