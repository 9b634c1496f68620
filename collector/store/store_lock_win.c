/* store_lock_win.c: the store's lock file on Windows (store_lock.h), with LockFileEx. Windows
 * has no F_GETLK to name the holder, and a locked range cannot be read by another process, so
 * the lock covers one byte far past the file's text (LOCK_OFFSET) and the text at offset 0, the
 * holder's PID, stays readable: the second collector reads it to say who holds the store.
 * Locks belong to the handle and the system releases them when the process ends, so a crashed
 * collector leaves nothing to clean up (the handle is not inherited by children either). */
#ifndef _WIN32
#error "store_lock_win.c is for Windows builds only"
#endif
#include "store_lock.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define LOCK_OFFSET_HIGH 1u /* the byte at 4 GiB: never part of the PID text */

struct pw_store_lock_s {
    HANDLE h;
};

/* The text of Windows error `e`, without its trailing line break. */
static void win_error_text(DWORD e, char *out, size_t size)
{
    out[0] = '\0';
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, out,
                   (DWORD)size, NULL);
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
    if (n == 0)
        snprintf(out, size, "error %lu", (unsigned long)e);
}

/* The PID the holder wrote at the start of the file, or 0. */
static long holder_pid(HANDLE h)
{
    char text[32];
    DWORD got = 0;
    OVERLAPPED ov;
    memset(&ov, 0, sizeof(ov));
    if (!ReadFile(h, text, sizeof(text) - 1, &got, &ov))
        return 0;
    text[got] = '\0';
    return strtol(text, NULL, 10);
}

int pw_store_lock_acquire(const char *db_path, pw_store_lock_t **out, pw_diag_t *d)
{
    if (db_path == NULL || strcmp(db_path, ":memory:") == 0) {
        *out = NULL;
        return 0;
    }
    char path[4096];
    wchar_t wpath[4096];
    snprintf(path, sizeof(path), "%s.lock", db_path);
    /* Paths are UTF-8, as SQLite takes them on Windows. */
    if (MultiByteToWideChar(CP_UTF8, 0, path, -1, wpath, (int)(sizeof(wpath) / sizeof(*wpath))) ==
        0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "store.path", "lock file %s: not valid UTF-8", path);
    HANDLE h = CreateFileW(wpath, GENERIC_READ | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_PATH_NOT_FOUND) {
            /* The store's directory is missing: pw_store_open says so (as on POSIX). */
            *out = NULL;
            return 0;
        }
        char msg[256];
        win_error_text(e, msg, sizeof(msg));
        return pw_diag_set(d, PW_EACCES, 0, 0, "store.path", "lock file %s: %s", path, msg);
    }
    OVERLAPPED ov;
    memset(&ov, 0, sizeof(ov));
    ov.OffsetHigh = LOCK_OFFSET_HIGH;
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)) {
        DWORD e = GetLastError();
        if (e != ERROR_LOCK_VIOLATION && e != ERROR_IO_PENDING) {
            char msg[256];
            win_error_text(e, msg, sizeof(msg));
            CloseHandle(h);
            return pw_diag_set(d, PW_EACCES, 0, 0, "store.path", "lock file %s: %s", path, msg);
        }
        long pid = holder_pid(h);
        CloseHandle(h);
        return pw__store_lock_busy(d, db_path, path, pid);
    }
    pw_store_lock_t *l = pw_calloc(1, sizeof(*l));
    if (l == NULL) {
        CloseHandle(h);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "store.path", "out of memory");
    }
    /* The PID as text, for the next collector's message and a human looking at the directory;
     * only informative: the lock itself is held. */
    char text[32];
    int n = snprintf(text, sizeof(text), "%lu\n", (unsigned long)GetCurrentProcessId());
    DWORD put = 0;
    memset(&ov, 0, sizeof(ov));
    if (SetFilePointer(h, 0, NULL, FILE_BEGIN) == 0 && SetEndOfFile(h))
        WriteFile(h, text, (DWORD)n, &put, &ov);
    l->h = h;
    *out = l;
    return 0;
}

void pw_store_lock_release(pw_store_lock_t *l)
{
    if (l == NULL)
        return;
    OVERLAPPED ov;
    memset(&ov, 0, sizeof(ov));
    ov.OffsetHigh = LOCK_OFFSET_HIGH;
    UnlockFileEx(l->h, 0, 1, 0, &ov);
    CloseHandle(l->h);
    pw_free(l);
}
