/* alert_file.h: the firing and pending alerts of an alert set, and when each leak suspect was
 * found, kept in a file across restarts. */
#ifndef PW_ALERT_FILE_H
#define PW_ALERT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "alert.h"

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

#endif /* PW_ALERT_FILE_H */
