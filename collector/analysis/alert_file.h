/* alert_file.h: the firing and pending alerts of an alert set, and when each leak suspect was
 * found, kept in a file across restarts. */
#ifndef PW_ALERT_FILE_H
#define PW_ALERT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "alert.h"
#include "detect.h"
#include "fleet.h"
#include "sample.h"
#include "suspect.h"

/* When a suspect (host, tag, pool) was first judged a leak (pw_suspect_t.found_ms), kept so
 * that a restart does not restart it. Labels as alert keys spell them. */
typedef struct pw_alert_found_s {
    char host[PW_ALERT_LABEL_MAX];
    char tag[PW_ALERT_LABEL_MAX];
    char pool[16];
    int64_t found_ms; /* ms since the epoch */
} pw_alert_found_t;

/* Writes the firing and pending alerts of `set` and the found times f[0..n) (f may be NULL when
 * n is 0) to `path` as one JSON array: an alert is {host, tag, pool, severity, since_ms, value},
 * with "state": "pending" when it is pending (a firing one has no state, as files of earlier
 * versions); a found time is {host, tag, pool, found_ms}. The file is replaced atomically (a
 * temporary file, fsync, rename, fsync of the directory), so a crash leaves the old or the new
 * file. Returns 0 or a negative libuv code (also logged). */
int pw_alert_save_found(const pw_alert_set_t *set, const pw_alert_found_t *f, size_t n,
                        const char *path);

/* pw_alert_save_found without found times. */
int pw_alert_save(const pw_alert_set_t *set, const char *path);

/* Restores the alerts in `path` into `set` in their state and since their start, without a
 * transition (pw_alert_restore_state), and, when f is not NULL, returns its found times in *f
 * (owned by the caller: pw_free; NULL when none) and their count in *n. A missing file restores
 * nothing; a malformed file or entry is logged and skipped. Returns the number of alerts
 * restored. */
size_t pw_alert_load_found(pw_alert_set_t *set, const char *path, pw_alert_found_t **f, size_t *n);

/* pw_alert_load_found without found times. */
size_t pw_alert_load(pw_alert_set_t *set, const char *path);

/* A leak suspect's state that the store's tables cannot give back after a restart: the ring its
 * verdict was judged on (a bounded series thinned as it grew, so the tables and rollups the
 * store keeps rebuild another one: "rose in 43 of 44 steps" came back "39 of 42"), the host's
 * latest big-pool snapshot of its tag, and the suspect as it was published (its verdict with
 * its numbers and evidence, its finding, urgency and place in the list), which a restarted
 * collector lists until its first analysis pass. Kept in `<store.path>.suspects.json` at a
 * clean stop and in the background (analysis_run.h, kept_every_ms). */
typedef struct pw_alert_kept_s {
    char host[256];
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len, pool; /* pool: pw_pool_t */
    pw_detect_ring_t ring;
    int has_big_pool;
    pw_bigpool_snap_t big_pool;
    int has_suspect;      /* 0: a file of an older version (ring and big pool only) */
    uint32_t rank;        /* its place in the published list, most urgent first */
    pw_suspect_t suspect; /* host, tag, pool as above */
} pw_alert_kept_t;

/* A host's pressure as the last pass published it (both pools, their levels, trends and ETAs),
 * kept beside the suspects: until its first pass a restarted collector answers with it, the
 * same ETA as before the stop, when the store holds nothing newer (judged_ts). */
typedef struct pw_alert_kept_host_s {
    char host[256];
    pw_analysis_host_t pub; /* n_suspects 0 (the suspects are kept on their own) */
} pw_alert_kept_host_t;

/* Writes v[0..n) and the hosts' pressure hv[0..nh) (hv may be NULL when nh is 0) to `path` as
 * {"hosts": [{host, judged_ts, rows_judged, np_trend_ms, pg_trend_ms, np: {the pw_pressure_t
 * fields by name}, pg: {...}, np_how, pg_how: {method, rate, window_ms, grew_ms, day_bytes,
 * since_boot_ms} (how each ETA was reckoned; optional when read)}, ...], "suspects": [{host, tag (hex of its bytes), pool, ring:
 * {n_spread, stride_ms, dirty, points: [[ts_ms, allocs, frees, diff, bytes, boot], ...]},
 * big_pool: {...} or absent, rank, suspect: {the pw_suspect_t and pw_detect_t fields by name;
 * a double that is not finite as "inf", "-inf" or "nan"} or absent}, ...]}, replacing it
 * atomically (as pw_alert_save_found). Returns 0 or a negative libuv code (also logged). */
int pw_alert_save_kept(const char *path, const pw_alert_kept_t *v, size_t n,
                       const pw_alert_kept_host_t *hv, size_t nh);

/* Reads `path` (written by pw_alert_save_kept) into *v (owned by the caller: pw_free; NULL when
 * none), sorted by pw_alert_kept_cmp. A missing file gives nothing; a malformed file or entry is
 * logged and skipped. Returns the count. */
size_t pw_alert_load_kept(const char *path, pw_alert_kept_t **v);

/* Reads the hosts' pressure of `path` (pw_alert_save_kept) into *v (owned by the caller: pw_free;
 * NULL when none), in the file's order. A missing file or "hosts" gives nothing; a malformed entry
 * is logged and skipped. Returns the count. */
size_t pw_alert_load_kept_hosts(const char *path, pw_alert_kept_host_t **v);

/* Orders kept suspects by host, pool, tag bytes (bsearch over pw_alert_load_kept's array). */
int pw_alert_kept_cmp(const void *a, const void *b);

#endif /* PW_ALERT_FILE_H */
