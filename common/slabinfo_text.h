/* slabinfo_text.h: parser for Linux /proc/slabinfo text, as the kernel prints it (live source)
 * and as people paste it (mail, bug trackers, syslog): shared by agent/source_linux.c and the
 * CLI import (`poolwatch parse --format slabinfo`).
 *
 * Formats (kernel mm/slab.c, mm/slab_common.c; shared/data/README.md "Format reference"):
 *   1.1  `name active_objs num_objs objsize active_slabs num_slabs pagesperslab`; unlabeled
 *        `:` sections follow when the version line says so, in this order (2.4 mm/slab.c
 *        s_show): "(statistics)" `: high allocs grown reaped errors`, "(SMP)" `: limit
 *        batchcount`, both `: allochit allocmiss freehit freemiss`. 2.4-era names may contain
 *        spaces ("file lock cache"). There is no objperslab column: we derive it as
 *        num_objs / num_slabs when num_slabs > 0 and the division is exact (2.4 computes
 *        num_objs = num_slabs * objs-per-slab), flagged in `derived`; otherwise it is absent.
 *   2.x  a `# name <active_objs> ...` header line decides the base columns (normally
 *        active_objs num_objs objsize objperslab pagesperslab), then labeled sections
 *        `: tunables limit batchcount sharedfactor : slabdata active_slabs num_slabs
 *        sharedavail` and, in "(statistics)", `: globalstat` (7 values in 2.0, 8 in 2.1) and
 *        `: cpustat` (4). The 2.0 header names the tunables `<batchcount> <limit>` but the
 *        kernel prints limit first (values `54 27`, `120 60`), so tunables are always read
 *        limit, batchcount, sharedfactor, whatever the header says.
 * The layout comes from the `# name` header when there is one, else from the shape of the
 * rows (labeled sections = 2.x, six numbers = 1.1), else from the version number; input
 * without any version or header line (`grep ^dentry /proc/slabinfo`) is accepted when its
 * rows have an unmistakable shape.
 *
 * Lenient mode (default, for pasted text) also undoes: mail quoting (`> `, nested `> >`, with
 * indentation), syslog/dmesg prefixes (`Dec  8 22:44:18 HOST01: `, `host kernel: `,
 * `[ 12.345678] `), records wrapped by mail clients (continuation lines that start with a
 * number or with `:`, joined while the record is incomplete), header lines wrapped the same
 * way (continuations start with `<` or `:`), and skips noise: ellipses, shell prompts, prose,
 * numeric lines that belong to no record (`/proc/sys/fs/dentry-state`). A record that ends
 * before its layout's fields (e.g. only the first five numbers) is kept with `partial` set.
 * Strict mode (the live source) accepts only the kernel's own output: a version line, the
 * header for 2.x, then one complete row per line; anything else is an error.
 *
 * Input must be UTF-8 text (an initial BOM is skipped): NUL, other control bytes than tab
 * and CR, or invalid UTF-8 are rejected as binary. Limits bound input, line length, name
 * length and the number of caches; every error fills pw_diag_t with line, byte offset and
 * field.
 */
#ifndef PW_SLABINFO_TEXT_H
#define PW_SLABINFO_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_SLABINFO_MAX_INPUT_DEFAULT  ((size_t)256 << 20) /* bytes */
#define PW_SLABINFO_MAX_LINE_DEFAULT   ((size_t)4096)      /* bytes per physical line */
#define PW_SLABINFO_MAX_CACHES_DEFAULT ((size_t)1 << 21)   /* records in one document */
#define PW_SLABINFO_MAX_NAME           128                 /* bytes of a cache name */
#define PW_SLABINFO_MAX_SECTION        12                  /* values kept per `:` section */
#define PW_SLABINFO_VERSION_MAX        32                  /* bytes of a version string + NUL */

/* Bits of pw_slab_cache_t.present / .derived: which fields hold a value. */
#define PW_SLAB_HAS_ACTIVE_OBJS  0x0001u
#define PW_SLAB_HAS_NUM_OBJS     0x0002u
#define PW_SLAB_HAS_OBJSIZE      0x0004u
#define PW_SLAB_HAS_OBJPERSLAB   0x0008u
#define PW_SLAB_HAS_PAGESPERSLAB 0x0010u
#define PW_SLAB_HAS_ACTIVE_SLABS 0x0020u
#define PW_SLAB_HAS_NUM_SLABS    0x0040u
#define PW_SLAB_HAS_TUNABLES     0x0080u /* limit and batchcount (sharedfactor when n >= 3) */
#define PW_SLAB_HAS_SHAREDAVAIL  0x0100u
#define PW_SLAB_HAS_STATS        0x0200u /* stats[]: globalstat (2.x) or 1.1 statistics */
#define PW_SLAB_HAS_CPUSTAT      0x0400u

/* Bits of pw_slab_cache_t.flags. */
#define PW_SLAB_WRAPPED 0x1u /* the record was joined from several lines */
#define PW_SLAB_ODD_SECTION                                                                        \
    0x2u /* a section had more values than its header names (case24's                              \
            cpustat with 5 numbers) or an unknown label: kept raw */

typedef struct pw_slab_cache_s {
    const char *name;  /* NUL-terminated, owned by the document; inner spaces kept */
    uint32_t name_len; /* bytes, 1 ... PW_SLABINFO_MAX_NAME */
    uint32_t line;     /* 1-based line of the input where the record starts */
    uint32_t block;    /* index into doc->blocks */
    uint32_t present;  /* PW_SLAB_HAS_* read from the input or derived */
    uint32_t derived;  /* PW_SLAB_HAS_* computed rather than read (1.1 objperslab) */
    uint32_t flags;    /* PW_SLAB_WRAPPED, PW_SLAB_ODD_SECTION */
    bool partial;      /* shorter than its layout: a printed field or section is missing */
    /* Counts are objects or slabs, objsize is bytes, pagesperslab is pages (of the host's page
     * size). A field whose bit is not in `present` is 0. */
    uint64_t active_objs;
    uint64_t num_objs;
    uint64_t objsize;
    uint64_t objperslab;
    uint64_t pagesperslab;
    uint64_t active_slabs;
    uint64_t num_slabs;
    uint64_t limit;        /* tunables (2.x) or 1.1 (SMP) */
    uint64_t batchcount;   /* tunables (2.x) or 1.1 (SMP) */
    uint64_t sharedfactor; /* tunables (2.x) */
    uint64_t sharedavail;  /* slabdata (2.x) */
    /* As printed, in the order the block's header names them: 2.x globalstat (listallocs
     * maxobjs grown reaped error maxfreeable freelimit in 2.0; 2.1 adds nodeallocs and later
     * kernels more), 1.1 statistics (high allocs grown reaped errors). */
    uint64_t stats[PW_SLABINFO_MAX_SECTION];
    uint64_t cpustat[PW_SLABINFO_MAX_SECTION]; /* allochit allocmiss freehit freemiss */
    uint8_t n_stats;
    uint8_t n_cpustat;
    uint8_t n_tunables;
} pw_slab_cache_t;

typedef enum {
    PW_SLABINFO_LAYOUT_UNKNOWN = 0,
    PW_SLABINFO_LAYOUT_V1 = 1, /* 1.x: six numbers, unlabeled sections */
    PW_SLABINFO_LAYOUT_V2 = 2  /* 2.x: header, five numbers, labeled sections */
} pw_slabinfo_layout_t;

/* Bits of pw_slabinfo_block_t.flags. */
#define PW_SLABINFO_STATISTICS 0x1u /* version line says "(statistics)" */
#define PW_SLABINFO_SMP        0x2u /* version line says "(SMP)" */
#define PW_SLABINFO_HEADER     0x4u /* a `# name` header line was read */
#define PW_SLABINFO_HEADERLESS 0x8u /* no version line: recognised by the rows' shape */

/* One dump: from a version line (or a header, or the first recognised row) to the next. */
typedef struct pw_slabinfo_block_s {
    char version[PW_SLABINFO_VERSION_MAX]; /* after "slabinfo - version: ", "" when absent */
    pw_slabinfo_layout_t layout;
    uint32_t flags;     /* PW_SLABINFO_* */
    uint32_t line;      /* 1-based line where the block starts */
    size_t first_cache; /* index into doc->caches */
    size_t n_caches;
} pw_slabinfo_block_t;

typedef struct pw_slabinfo_doc_s {
    const char *version;     /* blocks[0].version, "" when none; owned by the document */
    pw_slab_cache_t *caches; /* in input order, across all blocks */
    size_t n_caches;
    pw_slabinfo_block_t *blocks; /* several when dumps are concatenated (a time series) */
    size_t n_blocks;
    size_t n_partial;       /* caches with partial set */
    size_t n_skipped_lines; /* non-blank lines ignored as noise (lenient mode) */
    uint32_t first_skipped; /* 1-based line of the first of them, 0 when none */
    uint32_t n_lines;       /* physical lines read */
    /* private */
    char *names_;
} pw_slabinfo_doc_t;

typedef struct pw_slabinfo_opts_s {
    size_t max_input_bytes; /* 0 = PW_SLABINFO_MAX_INPUT_DEFAULT */
    size_t max_line_bytes;  /* 0 = PW_SLABINFO_MAX_LINE_DEFAULT; counted before unquoting */
    size_t max_caches;      /* 0 = PW_SLABINFO_MAX_CACHES_DEFAULT */
    bool strict;            /* kernel output only (see top of file) */
} pw_slabinfo_opts_t;

/* Parses `len` bytes of `data` (need not be NUL-terminated) into `out`, which the caller
 * provides (its previous contents are ignored; close it with pw_slabinfo_doc_close whatever
 * the result). `opts` may be NULL (lenient, default limits). `diag` may be NULL.
 * Returns 0 on success (possibly with zero caches when only a version/header was seen), or:
 *   PW_ETOOBIG   input, a line, a name or the number of caches over its limit
 *   PW_EPARSE    binary or non-UTF-8 data; in strict mode any line that is not a complete row;
 *                a row with more numbers than its layout or a section with more than
 *                PW_SLABINFO_MAX_SECTION values
 *   PW_ERANGE    a number above 2^64-1
 *   PW_EFORMAT   no version line, header or slabinfo row anywhere (not slabinfo)
 *   PW_EINVAL    NULL data with len > 0, or NULL out
 *   PW_ENOMEM
 * On error `out` holds no caches. */
int pw_slabinfo_parse(const char *data, size_t len, const pw_slabinfo_opts_t *opts,
                      pw_slabinfo_doc_t *out, pw_diag_t *diag);

/* Frees what the document owns and empties it. Accepts NULL and closed documents. */
void pw_slabinfo_doc_close(pw_slabinfo_doc_t *doc);

/* Slab memory of one cache in bytes: num_slabs * pagesperslab * page_size (page_size in
 * bytes, e.g. 4096 on x86). Returns 0 and sets *out, or PW_ENOENT when num_slabs or
 * pagesperslab is absent, PW_ERANGE on overflow. */
int pw_slabinfo_cache_slab_bytes(const pw_slab_cache_t *c, uint64_t page_size, uint64_t *out);

/* Sum of pw_slabinfo_cache_slab_bytes over the caches of `doc` that have both fields (the
 * others are skipped and counted in *n_missing when not NULL). Saturates at UINT64_MAX. */
uint64_t pw_slabinfo_doc_slab_bytes(const pw_slabinfo_doc_t *doc, uint64_t page_size,
                                    size_t *n_missing);

/* Name of a layout: "1.x", "2.x" or "unknown". */
const char *pw_slabinfo_layout_name(pw_slabinfo_layout_t layout);

#endif /* PW_SLABINFO_TEXT_H */
