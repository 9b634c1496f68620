/* store_lock_posix.c: the store's lock file with a POSIX record lock (store_lock.h). fcntl locks
 * belong to the process and vanish with it, and F_GETLK reports the holder's PID even when the
 * file's text is stale. Such a lock is dropped when the process closes ANY descriptor of the
 * file, so the file is opened here only, once. */
#include "store_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

struct pw_store_lock_s {
    int fd;
};

int pw_store_lock_acquire(const char *db_path, pw_store_lock_t **out, pw_diag_t *d)
{
    if (db_path == NULL || strcmp(db_path, ":memory:") == 0) {
        *out = NULL;
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s.lock", db_path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600); /* the store's own mode */
    if (fd < 0 && errno == ENOENT) {
        /* The store's directory is missing: pw_store_open says so, with the hint to create it
         * or set store.path; without a directory there is no store to share either. */
        *out = NULL;
        return 0;
    }
    if (fd < 0) {
        int e = errno;
        return pw_diag_set(d, -e, 0, 0, "store.path", "lock file %s: %s", path, strerror(e));
    }
    struct flock fl;
    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) != 0) {
        int e = errno;
        if (e != EACCES && e != EAGAIN) {
            close(fd);
            return pw_diag_set(d, -e, 0, 0, "store.path", "lock file %s: %s", path, strerror(e));
        }
        /* Held: F_GETLK names the process (l_pid); the file's text is what it wrote. */
        struct flock who;
        memset(&who, 0, sizeof(who));
        who.l_type = F_WRLCK;
        who.l_whence = SEEK_SET;
        long pid = 0;
        if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
            pid = (long)who.l_pid;
        close(fd);
        return pw__store_lock_busy(d, db_path, path, pid);
    }
    pw_store_lock_t *l = pw_calloc(1, sizeof(*l));
    if (l == NULL) {
        close(fd);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "store.path", "out of memory");
    }
    /* The PID as text too, for a human looking at the directory. */
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        /* Only informative: the lock itself is held. */
    }
    l->fd = fd;
    *out = l;
    return 0;
}

void pw_store_lock_release(pw_store_lock_t *l)
{
    if (l == NULL)
        return;
    close(l->fd); /* drops the lock */
    pw_free(l);
}
