/* store_lock.h: one collector per store. SQLite lets two processes open one database, and two
 * collectors on one store would each believe they own its chunks and seqs: the second one must
 * refuse to start. A lock file beside the database ("<path>.lock") holds an advisory write lock
 * for as long as the collector runs and the holder's PID as text; the lock goes with the
 * process, so a collector that crashed leaves nothing to clean up.
 *
 * Platform code: store_lock_posix.c (fcntl F_SETLK; F_GETLK names the holder) and
 * store_lock_win.c (LockFileEx on a byte past the text; the holder's PID is read from the
 * text). */
#ifndef PW_STORE_LOCK_H
#define PW_STORE_LOCK_H

#include "error.h"

typedef struct pw_store_lock_s pw_store_lock_t;

/* Takes the lock of the store at `db_path` (the store.path option; ":memory:" needs none:
 * *out is set to NULL and 0 returned). On success *out is the caller's, released with
 * pw_store_lock_release; it is NULL (and 0 returned) also when the store's directory does not
 * exist, which pw_store_open then reports. Returns 0; PW_ELOCKED when another process holds it,
 * with `d` naming its PID and the lock file; a negated errno (PW_EACCES) when the lock file
 * cannot be opened or locked, with `d` saying which file; PW_ENOMEM. *out is left untouched on
 * failure. */
int pw_store_lock_acquire(const char *db_path, pw_store_lock_t **out, pw_diag_t *d);

/* For the platform files: sets `d` to the "in use by another collector" message for the store at
 * db_path, its lock file lock_path and the holder's PID (0: unknown, not named) and returns
 * PW_ELOCKED. */
int pw__store_lock_busy(pw_diag_t *d, const char *db_path, const char *lock_path, long pid);

/* Releases the lock (the lock file stays, with the last holder's PID) and frees `l`. Accepts
 * NULL. */
void pw_store_lock_release(pw_store_lock_t *l);

#endif /* PW_STORE_LOCK_H */
