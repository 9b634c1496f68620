/* source_linux.h: what the "linux" source (source_linux.c) offers beyond the ops table.
 *
 * The source reads <proc_root>/proc/slabinfo (strict pw_slabinfo_parse) and
 * <proc_root>/proc/meminfo, and, when they exist and can be read, /proc/allocinfo (strict
 * pw_allocinfo_parse; Linux 6.10+ with memory allocation profiling) and /proc/vmallocinfo
 * (lenient pw_vmallocinfo_parse, aggregated by caller). Spec "linux" reads all four; "linux:"
 * with a comma list of slab, allocinfo, vmallocinfo reads slabinfo and the files named, each
 * of which must then exist ("linux:slab": slabinfo alone). Rows (common/linux_rows.h): one per
 * slab cache (tag = cache name, diff = active_objs, bytes = active_objs * objsize; a repeated
 * cache name gets "#2", ...), one per allocation site with bytes or calls ("FILE:LINE", diff =
 * calls, bytes = size), one per vmalloc caller ("vm:CALLER", diff = areas, bytes = size); all
 * in PW_POOL_NONPAGED with allocs = frees = 0, sample flag PW_SAMPLE_NO_ALLOCS. Totals (bytes):
 * nonpaged = meminfo Slab (or SReclaimable + SUnreclaim), slab_reclaimable/unreclaimable, physical
 * = MemTotal, available = MemAvailable (0 before Linux 3.14), commit = Committed_AS, commit_limit =
 * CommitLimit, nonpaged limit = MemTotal (PW_LIMIT_COMPUTED) unless configured
 * (PW_LIMIT_CONFIGURED). Host facts come from <proc_root>/proc/sys/kernel/{hostname,osrelease} with
 * uname(2) as the fallback, boot time from `btime` in <proc_root>/proc/stat, arch from uname(2)
 * machine ("x64" for x86_64, "x86" for i?86, "arm64" for aarch64, else as uname says). Names longer
 * than PW_LINUX_KEY_MAX are shortened (linux_rows.h; counted in rows.shortened).
 */
#ifndef PW_SOURCE_LINUX_H
#define PW_SOURCE_LINUX_H

#include <stddef.h>
#include <stdint.h>

#include "linux_rows.h"
#include "slabinfo_text.h"
#include "source.h"

/* Figures of the last successful sample of a "linux" source. */
typedef struct pw_source_linux_stats_s {
    uint64_t slab_bytes;        /* sum of num_slabs * pagesperslab * page_size over all caches */
    uint64_t page_size;         /* bytes, sysconf(_SC_PAGESIZE) */
    size_t n_caches;            /* rows of /proc/slabinfo */
    size_t n_sites;             /* rows of /proc/allocinfo (0 when not read) */
    size_t n_vmalloc_areas;     /* area lines of /proc/vmallocinfo (0 when not read) */
    size_t n_vmalloc_skipped;   /* lines of /proc/vmallocinfo that were not areas */
    uint64_t vmalloc_bytes;     /* sum of the areas' sizes */
    pw_linux_rows_stats_t rows; /* what the sample's rows are made of */
} pw_source_linux_stats_t;

/* Copies the figures of `src`'s last sample into *out. Returns 0, PW_EINVAL when `src` is
 * not a "linux" source, PW_EAGAIN before its first successful sample. */
int pw_source_linux_stats(const pw_source_t *src, pw_source_linux_stats_t *out);

/* The parsed /proc/slabinfo of `src`'s last successful sample (owned by the source, valid
 * until its next sample or close), or NULL when there is none or `src` is not "linux". */
const pw_slabinfo_doc_t *pw_source_linux_last_doc(const pw_source_t *src);

#endif /* PW_SOURCE_LINUX_H */
