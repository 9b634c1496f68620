/* vmallocinfo_text.h: parser for Linux /proc/vmallocinfo, aggregated by caller: one entry per
 * function that created vmalloc/vmap/ioremap areas, with their bytes, count and pages. Used by
 * agent/source_linux.c; kernel addresses are read past and never kept.
 *
 * Format (kernel mm/vmalloc.c s_show, Documentation/filesystems/proc.rst "vmallocinfo"), one
 * area per line:
 *   0xffffc20000000000-0xffffc20000201000 2101248 alloc_large_system_hash+0x204/0x2c0
 *       pages=512 vmalloc N0=128 N1=128
 *   0xc28e0000-0xc2901000  135168 _create_jpg_chan+0xa0/0x2c4 [jpeg] phys=a6e1b000 ioremap
 *   0xffffb3eb00000000-0xffffb3eb00002000    8192 vm_map_ram
 *   0xffffb3eb00002000-0xffffb3eb00004000    8192 unpurged vm_area
 * (addresses may print as "0x(ptrval)" or zeros when hashed). The caller is "%pS": a symbol,
 * "+0xOFF/0xSIZE", and " [module]" when it is in a module; areas without a caller are
 * vm_map_ram or unpurged. Size is the area's virtual size as printed (it includes the guard
 * page on kernels before 5.2, as the kernel printed it); pages= is what is mapped.
 *
 * The key of a caller is the symbol with its offset ("alloc_large_system_hash+0x204"), the
 * "/0xSIZE" dropped (the function's length says nothing new), plus " [module]" when there is
 * one; areas without a caller are keyed "vm_map_ram" and "unpurged vm_area". Lines that are not
 * areas: strict mode fails on them, lenient mode skips and counts them.
 */
#ifndef PW_VMALLOCINFO_TEXT_H
#define PW_VMALLOCINFO_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_VMALLOCINFO_MAX_INPUT_DEFAULT ((size_t)64 << 20) /* bytes */
#define PW_VMALLOCINFO_MAX_LINE          4096               /* bytes per line */
#define PW_VMALLOCINFO_MAX_KEY           160                /* bytes of a caller key */

typedef struct pw_vmalloc_caller_s {
    const char *key; /* see top; NUL-terminated, owned by the document */
    uint32_t key_len;
    uint32_t line;   /* 1-based input line of the caller's first area */
    uint64_t bytes;  /* sum of the areas' printed sizes */
    uint64_t areas;  /* number of areas */
    uint64_t pages;  /* sum of pages= (0 for ioremap areas, which have none) */
    size_t key_off_; /* private */
} pw_vmalloc_caller_t;

typedef struct pw_vmallocinfo_doc_s {
    pw_vmalloc_caller_t *callers; /* in order of first appearance */
    size_t n_callers;
    size_t n_areas;       /* area lines read */
    uint64_t total_bytes; /* sum over all areas */
    size_t n_skipped;     /* lenient: non-blank lines that were not areas */
    uint32_t first_skipped;
    /* private */
    char *keys_;
    size_t keys_len_, keys_cap_, callers_cap_;
    uint32_t *slots_; /* open addressing over callers: index + 1, 0 = empty */
    size_t n_slots_;
} pw_vmallocinfo_doc_t;

typedef struct pw_vmallocinfo_opts_s {
    size_t max_input_bytes; /* 0 = PW_VMALLOCINFO_MAX_INPUT_DEFAULT */
    bool strict;            /* kernel output only */
} pw_vmallocinfo_opts_t;

/* Parses `len` bytes of `data` into `out` (caller-provided; close it with
 * pw_vmallocinfo_doc_close whatever the result). `opts`, `diag` may be NULL. Returns 0, or
 *   PW_ETOOBIG  input or a line over its limit, a caller key over PW_VMALLOCINFO_MAX_KEY
 *   PW_EPARSE   a control byte; strict: a line that is not an area
 *   PW_ERANGE   a size or pages= beyond 2^64-1, or their sum
 *   PW_EFORMAT  lenient: no area line at all (not vmallocinfo)
 *   PW_EINVAL   NULL data with len > 0, or NULL out
 *   PW_ENOMEM
 * An empty input is 0 callers (a kernel with nothing mapped prints nothing). */
int pw_vmallocinfo_parse(const char *data, size_t len, const pw_vmallocinfo_opts_t *opts,
                         pw_vmallocinfo_doc_t *out, pw_diag_t *diag);

/* Frees what the document owns and empties it. Accepts NULL and closed documents. */
void pw_vmallocinfo_doc_close(pw_vmallocinfo_doc_t *doc);

#endif /* PW_VMALLOCINFO_TEXT_H */
