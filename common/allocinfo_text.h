/* allocinfo_text.h: parser for Linux /proc/allocinfo (memory allocation profiling, kernels
 * 6.10 and later built with CONFIG_MEM_ALLOC_PROFILING): bytes and live allocations per
 * allocation site. Shared by agent/source_linux.c (strict, the live file) and the import of
 * saved series (lenient, common/linux_series).
 *
 * Format (kernel lib/alloc_tag.c, Documentation/filesystems/proc.rst "allocinfo"):
 *   allocinfo - version: 1.0                 (2.0 adds "accurate:no" after a row's tag)
 *   #     <size>  <calls> <tag info>         (header; also printed without the '#')
 *      127664128    31168 mm/page_ext.c:270 func:alloc_page_ext
 *        4136960     1010 drivers/staging/ctagmod/ctagmod.c:20 [ctagmod] func:ctagmod_start
 * A row is "%12lli %8llu " then the code tag: FILE:LINE, "[MODULE]" when the site is in a
 * loadable module, "func:FUNCTION", then optional "key:value" words (2.0: "accurate:no"; a
 * '*' after a number marks the same in a proposed variant). size is the bytes allocated and
 * not yet freed at the site, calls the allocations live (both summed over CPUs without a lock,
 * so size can be briefly negative: kept signed here).
 *
 * Strict mode (the live file) accepts only the kernel's output: version line, header, rows;
 * anything else is an error naming the line. Lenient mode (pasted or saved text) skips lines
 * that are not rows (prompts, "...", `numfmt` output such as "2.8M") and counts them.
 * Input must not hold control bytes other than tab and CR. Limits bound input, line length
 * and the number of sites.
 */
#ifndef PW_ALLOCINFO_TEXT_H
#define PW_ALLOCINFO_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_ALLOCINFO_MAX_INPUT_DEFAULT ((size_t)64 << 20) /* bytes (a 6.12 kernel: ~700 KB) */
#define PW_ALLOCINFO_MAX_LINE          4096               /* bytes per line */
#define PW_ALLOCINFO_MAX_SITES_DEFAULT ((size_t)1 << 20)  /* rows in one document */

typedef struct pw_alloc_site_s {
    const char *file;   /* source file as printed ("mm/slub.c"), NUL-terminated, owned by doc */
    const char *module; /* loadable module without brackets, "" when built in */
    const char *func;   /* function after "func:", "" when the row has none */
    uint32_t src_line;  /* line of the allocation in `file` */
    uint32_t line;      /* 1-based line of the input */
    int64_t bytes;      /* bytes live at the site (may be briefly negative, see top) */
    uint64_t calls;     /* allocations live at the site */
    bool inaccurate;    /* "accurate:no" or a '*' marker: the kernel says the counters are off */
} pw_alloc_site_t;

typedef struct pw_allocinfo_doc_s {
    char version[32];       /* after "allocinfo - version: ", "" when absent */
    pw_alloc_site_t *sites; /* in input order */
    size_t n_sites;
    size_t n_skipped;       /* lenient: non-blank lines that were not rows */
    uint32_t first_skipped; /* 1-based line of the first of them, 0 when none */
    /* private */
    char *text_;
} pw_allocinfo_doc_t;

typedef struct pw_allocinfo_opts_s {
    size_t max_input_bytes; /* 0 = PW_ALLOCINFO_MAX_INPUT_DEFAULT */
    size_t max_sites;       /* 0 = PW_ALLOCINFO_MAX_SITES_DEFAULT */
    bool strict;            /* kernel output only (see top) */
} pw_allocinfo_opts_t;

/* Parses `len` bytes of `data` (need not be NUL-terminated) into `out` (caller-provided; close
 * it with pw_allocinfo_doc_close whatever the result). `opts` and `diag` may be NULL (lenient,
 * default limits). Returns 0 (possibly with no sites), or
 *   PW_ETOOBIG  input, a line or the number of sites over its limit
 *   PW_EPARSE   a control byte; strict: a line that is not the version, header or a row
 *   PW_ERANGE   a number out of range (size beyond int64, calls beyond 2^64-1, line beyond 2^32-1)
 *   PW_EFORMAT  lenient: neither a version line nor a single row (not allocinfo)
 *   PW_EINVAL   NULL data with len > 0, or NULL out
 *   PW_ENOMEM
 * `diag` names line, byte offset and field. On error `out` holds no sites. */
int pw_allocinfo_parse(const char *data, size_t len, const pw_allocinfo_opts_t *opts,
                       pw_allocinfo_doc_t *out, pw_diag_t *diag);

/* Frees what the document owns and empties it. Accepts NULL and closed documents. */
void pw_allocinfo_doc_close(pw_allocinfo_doc_t *doc);

#endif /* PW_ALLOCINFO_TEXT_H */
