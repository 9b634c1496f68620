/* store_lock.c: the portable part of the store's lock (store_lock.h): the message both platform
 * files give when another collector holds the store. */
#include "store_lock.h"

int pw__store_lock_busy(pw_diag_t *d, const char *db_path, const char *lock_path, long pid)
{
    if (pid > 0)
        return pw_diag_set(d, PW_ELOCKED, 0, 0, "store.path",
                           "store %s is in use by another collector (PID %ld, lock file %s): "
                           "stop it, or give this one another store.path",
                           db_path, pid, lock_path);
    return pw_diag_set(d, PW_ELOCKED, 0, 0, "store.path",
                       "store %s is in use by another collector (lock file %s): stop it, or give "
                       "this one another store.path",
                       db_path, lock_path);
}
