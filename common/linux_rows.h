/* linux_rows.h: the rows of a Linux host's sample, built from parsed /proc files: one row per
 * slab cache, per allocation site of /proc/allocinfo and per caller of /proc/vmallocinfo. The
 * live "linux" source and the import of saved series build their samples here, so both name
 * the same memory the same way.
 *
 * Every row is in pool PW_POOL_NONPAGED (kernel memory that is never paged out) with allocs =
 * frees = 0 (sample flag PW_SAMPLE_NO_ALLOCS):
 *   slab cache       tag = cache name; diff = active_objs; bytes = active_objs * objsize;
 *                    held_bytes = num_slabs * pagesperslab * page_size (what the cache holds;
 *                    0 when the input lacks num_slabs or pagesperslab: 1.1 rows cut short)
 *   allocation site  tag = "FILE:LINE" (e.g. "mm/slub.c:2259"); diff = calls; bytes = size
 *                    (a size printed negative counts as 0); sites with size and calls 0 are
 *                    left out (most of the file: sites that allocate nothing now)
 *   vmalloc caller   tag = "vm:" + caller key ("vm:alloc_large_system_hash+0x204"); diff =
 *                    areas; bytes = sum of the areas' sizes
 * A tag is at most PW_LINUX_KEY_MAX bytes: a longer allocation site drops leading directories
 * ("mlx5/core/steering/dr_ste_v1.c:1234"), anything still longer keeps its first 39 bytes,
 * '~' and 8 hex digits of the FNV-1a hash of the whole name. A tag already in the sample (two
 * slab caches of one name, as mlx5 creates per device, node_exporter#3506; two sites whose
 * shortened paths meet) gets "#2", "#3", ... in input order, so every row is kept apart.
 */
#ifndef PW_LINUX_ROWS_H
#define PW_LINUX_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "allocinfo_text.h"
#include "error.h"
#include "sample.h"
#include "slabinfo_text.h"
#include "vmallocinfo_text.h"

/* Longest tag of a Linux row: the collector's per-tag limit (PW_INGEST_MAX_TAG_LEN, 48). */
#define PW_LINUX_KEY_MAX 48

/* What building the rows did, summed over the calls since pw_linux_rows_begin. */
typedef struct pw_linux_rows_stats_s {
    size_t slab_rows;        /* rows of slab caches */
    size_t site_rows;        /* rows of allocation sites */
    size_t vmalloc_rows;     /* rows of vmalloc callers */
    size_t sites_idle;       /* allocation sites left out: size and calls 0 */
    size_t sites_inaccurate; /* sites the kernel marks inaccurate (kept) */
    size_t renamed;          /* rows given "#N": their name was taken */
    size_t shortened;        /* rows whose name was shortened to PW_LINUX_KEY_MAX */
} pw_linux_rows_stats_t;

/* The set of tags of the sample being built (to keep duplicates apart). */
typedef struct pw_linux_rows_s {
    uint32_t *slots; /* entry index + 1, 0 = empty */
    size_t n_slots;
    pw_sample_t *s;
    pw_linux_rows_stats_t st;
    uint64_t page_size; /* bytes of a page for held_bytes: 4096 after init, set it when known */
} pw_linux_rows_t;

/* Initialises an empty builder (allocates nothing) with page_size 4096 (x86; most arm64). */
void pw_linux_rows_init(pw_linux_rows_t *lr);

/* Frees the builder's table. Accepts NULL. */
void pw_linux_rows_close(pw_linux_rows_t *lr);

/* Starts the rows of sample `s` (borrowed until the next begin or close; its rows already
 * there are taken as used tags). Sets PW_SAMPLE_NO_ALLOCS on `s` and zeroes the stats.
 * Returns 0 or PW_ENOMEM. */
int pw_linux_rows_begin(pw_linux_rows_t *lr, pw_sample_t *s);

/* Adds one row per cache of caches[0..n). Caches without active_objs or objsize in the input
 * give bytes 0, without num_slabs or pagesperslab held_bytes 0. Returns 0, PW_ERANGE
 * (active_objs * objsize or num_slabs * pagesperslab * page_size overflows: `d` names the
 * cache), PW_ENOMEM. */
int pw_linux_rows_add_slab(pw_linux_rows_t *lr, const pw_slab_cache_t *caches, size_t n,
                           pw_diag_t *d);

/* Adds the allocation sites of `doc` (see top). Returns 0 or PW_ENOMEM. */
int pw_linux_rows_add_alloc(pw_linux_rows_t *lr, const pw_allocinfo_doc_t *doc, pw_diag_t *d);

/* Adds the vmalloc callers of `doc`. Returns 0 or PW_ENOMEM. */
int pw_linux_rows_add_vmalloc(pw_linux_rows_t *lr, const pw_vmallocinfo_doc_t *doc, pw_diag_t *d);

/* Writes the tag of an allocation site FILE:LINE into out (PW_LINUX_KEY_MAX + 1 bytes, NUL-
 * terminated), shortened as described at the top but not yet made unique. Returns its length. */
size_t pw_linux_rows_site_key(const char *file, uint32_t src_line, char *out);

#endif /* PW_LINUX_ROWS_H */
