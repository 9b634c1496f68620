/* alert_file.h: the firing alerts of an alert set kept in a file across restarts. */
#ifndef PW_ALERT_FILE_H
#define PW_ALERT_FILE_H

#include <stddef.h>

#include "alert.h"

/* Writes the firing alerts of `set` to `path` as a JSON array of {host, tag, pool, severity,
 * since_ms, value}, replacing the file atomically (a temporary file, fsync, rename, fsync of
 * the directory), so a crash leaves the old or the new file. Returns 0 or a negative libuv
 * code (also logged). */
int pw_alert_save(const pw_alert_set_t *set, const char *path);

/* Restores the firing alerts in `path` into `set` without a transition (pw_alert_restore).
 * A missing file restores nothing; a malformed file or entry is logged and skipped. Returns
 * the number of alerts restored. */
size_t pw_alert_load(pw_alert_set_t *set, const char *path);

#endif /* PW_ALERT_FILE_H */
