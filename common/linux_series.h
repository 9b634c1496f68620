/* linux_series.h: a Linux host's saved series: /proc/slabinfo dumps (and /proc/allocinfo
 * dumps) as admins keep them, turned into one sample per point in time. Shared by the CLI (a
 * local check before upload, sosreport directories) and the collector's import.
 *
 * Accepted text: dumps concatenated or one per file, each starting with its version line
 * ("slabinfo - version: 2.1", "allocinfo - version: 1.0"), optionally preceded by a time line as
 * a shell loop writes it:
 *     while :; do date; cat /proc/slabinfo; sleep 900; done >> slab.log
 * (`date` in the C locale with zone UTC/GMT/+hhmm, `date -u`, `date -Is`, ISO 8601: the forms
 * of pw_poolmon_parse_time). A point is a slabinfo dump and/or an allocinfo dump: a time line,
 * or a second dump of a kind the point already has, starts the next point. Lines between
 * (prompts, `sleep`, separators) are skipped and counted by the dumps' lenient parsers. A
 * point without a time line gets the previous point's time + interval_ms (the first:
 * start_ms). /proc/vmallocinfo has no version line to find its start by, so it is not read
 * from a series.
 *
 * Each point's sample is built by linux_rows (same tags as the live "linux" source) with
 * totals: nonpaged_bytes = sum over its caches of num_slabs * pagesperslab * page_size (the
 * memory slab holds; page_size 4 KiB unless given: x86 and most arm64 kernels) and
 * slab_unreclaimable/reclaimable 0 (not in slabinfo); each slab row's held_bytes is its share
 * of that sum (linux_rows.h).
 */
#ifndef PW_LINUX_SERIES_H
#define PW_LINUX_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "linux_rows.h"
#include "sample.h"

typedef struct pw_linux_point_s {
    uint64_t timestamp_ms; /* ms since the Unix epoch (see top) */
    bool has_file_time;    /* timestamp_ms comes from a time line of the text */
    uint32_t line;         /* 1-based line where the point's first dump starts */
    size_t n_caches;       /* slab caches read (0: the point has no slabinfo) */
    size_t n_sites;        /* allocinfo rows read (0: none, or no allocinfo) */
    bool has_allocinfo;
    pw_sample_t sample; /* the point's rows and totals, timestamp_ms set */
} pw_linux_point_t;

typedef struct pw_linux_series_s {
    pw_linux_point_t *points;
    size_t n_points;
    size_t n_skipped;         /* lines of the dumps that were not rows (prompts, noise) */
    uint32_t first_skipped;   /* 1-based line of the first of them, 0 when none */
    pw_linux_rows_stats_t st; /* summed over the points */
} pw_linux_series_t;

typedef struct pw_linux_series_opts_s {
    size_t max_input_bytes; /* 0 = 256 MiB */
    uint64_t start_ms;      /* time of the first point when the text has no time line */
    uint64_t interval_ms;   /* spacing of points without a time line, 0 = 15 min */
    uint64_t page_size;     /* bytes of a page, 0 = 4096 */
} pw_linux_series_opts_t;

/* 1 when `data` holds a line starting with "slabinfo - version:" or "allocinfo - version:"
 * (after blanks): a Linux series rather than poolmon screens. */
int pw_linux_series_sniff(const char *data, size_t len);

/* Parses the series into `out` (caller-provided; close with pw_linux_series_close whatever
 * the result). Returns 0, or a negative code with `d` naming the line (of the whole text):
 *   PW_EFORMAT  no slabinfo or allocinfo dump at all
 *   PW_EPARSE   a dump that does not parse; a date(1) line whose zone is a name (CET...)
 *   PW_ETOOBIG  input over the limit, or a dump's limit
 *   PW_ERANGE   a number out of range
 *   PW_EINVAL   NULL data with len > 0, or NULL out
 *   PW_ENOMEM */
int pw_linux_series_parse(const char *data, size_t len, const pw_linux_series_opts_t *opts,
                          pw_linux_series_t *out, pw_diag_t *d);

/* Frees the points and their samples. Accepts NULL. */
void pw_linux_series_close(pw_linux_series_t *s);

#endif /* PW_LINUX_SERIES_H */
