/* spool_win.c: the spool's OS layer on Windows, over the C runtime's descriptors (contracts in
 * spool_internal.h). */
#include "spool_internal.h"

#include <windows.h>
#include <direct.h>
#include <io.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "error.h"

/* Paths arrive in UTF-8 (the configuration file's encoding; the ANSI code page when the text
 * is not valid UTF-8) and go to the wide Win32 calls as absolute "\\?\" paths, so that neither
 * non-ASCII directory names nor paths past MAX_PATH fail. Files are opened with
 * FILE_SHARE_DELETE, so our own open handles never stop a rename or delete; handles of other
 * processes (antivirus, backup, indexing) that lack it make a rename or delete fail with a
 * sharing violation for a moment, which is retried a bounded number of times
 * (PW__SPOOL_WIN_TRIES, about 0.3 s in all) before the mapped error is returned. */

int pw__spool_os_err(void)
{
    return errno ? -errno : PW_EIO;
}

/* Win32 error -> errno (what pw__spool_os_err turns into a code). */
static int errno_of(DWORD e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME:
    case ERROR_BAD_NETPATH:
        return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
        return EACCES;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
        return EEXIST;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
        return ENOSPC;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
        return ENOMEM;
    case ERROR_FILENAME_EXCED_RANGE:
        return ENAMETOOLONG;
    default:
        return EIO;
    }
}

static int fail_win(DWORD e)
{
    errno = errno_of(e);
    return -1;
}

int pw__spool_win_errno(unsigned long win32_error)
{
    return errno_of((DWORD)win32_error);
}

/* Another process holds the file without FILE_SHARE_DELETE (or it is being deleted): worth
 * another try in a moment. */
static int transient(DWORD e)
{
    return e == ERROR_SHARING_VIOLATION || e == ERROR_LOCK_VIOLATION || e == ERROR_ACCESS_DENIED;
}

static void backoff(int attempt)
{
    Sleep(10u << attempt); /* 10, 20, 40, 80, 160 ms */
}

int pw__spool_win_path(const char *path, wchar_t *out, size_t out_len)
{
    wchar_t w[PW__SPOOL_PATH_MAX];
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, (int)PW__SPOOL_PATH_MAX) <=
            0 &&
        MultiByteToWideChar(CP_ACP, 0, path, -1, w, (int)PW__SPOOL_PATH_MAX) <= 0)
        return PW_ETOOBIG;
    if (wcsncmp(w, L"\\\\?\\", 4) == 0) {
        if (wcslen(w) + 1 > out_len)
            return PW_ETOOBIG;
        wcscpy(out, w);
        return 0;
    }
    wchar_t full[PW__SPOOL_PATH_MAX];
    DWORD n = GetFullPathNameW(w, PW__SPOOL_PATH_MAX, full, NULL);
    if (n == 0 || n >= PW__SPOOL_PATH_MAX)
        return PW_ETOOBIG;
    /* "\\server\share\x" -> "\\?\UNC\server\share\x"; "C:\x" -> "\\?\C:\x". */
    int unc = full[0] == L'\\' && full[1] == L'\\';
    const wchar_t *prefix = unc ? L"\\\\?\\UNC\\" : L"\\\\?\\";
    const wchar_t *rest = unc ? full + 2 : full;
    if (wcslen(prefix) + wcslen(rest) + 1 > out_len)
        return PW_ETOOBIG;
    wcscpy(out, prefix);
    wcscat(out, rest);
    return 0;
}

static int open_w(const char *path, int write, DWORD disposition)
{
    wchar_t wp[PW__SPOOL_PATH_MAX];
    if (pw__spool_win_path(path, wp, PW__SPOOL_PATH_MAX) != 0)
        return fail_win(ERROR_FILENAME_EXCED_RANGE);
    HANDLE h = INVALID_HANDLE_VALUE;
    DWORD e = 0;
    for (int i = 0; i < PW__SPOOL_WIN_TRIES; i++) {
        if (i > 0)
            backoff(i - 1);
        h = CreateFileW(wp, GENERIC_READ | (write ? GENERIC_WRITE : 0),
                        FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, disposition,
                        FILE_ATTRIBUTE_NORMAL, NULL);
        if (h != INVALID_HANDLE_VALUE)
            break;
        e = GetLastError();
        if (!transient(e))
            break;
    }
    if (h == INVALID_HANDLE_VALUE)
        return fail_win(e);
    /* Not inherited (no SECURITY_ATTRIBUTES); a C runtime descriptor over the handle, which
     * _close closes. */
    int fd = _open_osfhandle((intptr_t)h, _O_BINARY | (write ? 0 : _O_RDONLY));
    if (fd < 0) {
        CloseHandle(h);
        errno = EMFILE;
        return -1;
    }
    return fd;
}

int pw__spool_os_open(const char *path, int write, int create_excl)
{
    return open_w(path, write, create_excl ? CREATE_NEW : OPEN_EXISTING);
}

int pw__spool_os_open_trunc(const char *path)
{
    return open_w(path, 1, CREATE_ALWAYS);
}

int pw__spool_os_close(int fd)
{
    return _close(fd);
}

long long pw__spool_os_pread(int fd, void *buf, size_t n, uint64_t off)
{
    if (_lseeki64(fd, (long long)off, SEEK_SET) < 0)
        return -1;
    return _read(fd, buf, (unsigned)n);
}

long long pw__spool_os_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
    if (_lseeki64(fd, (long long)off, SEEK_SET) < 0)
        return -1;
    return _write(fd, buf, (unsigned)n);
}

int pw__spool_os_datasync(int fd)
{
    return _commit(fd) == 0 ? 0 : pw__spool_os_err();
}

/* NTFS makes directory entries durable with the file's metadata; nothing to do. */
int pw__spool_os_dirsync(const char *dir)
{
    (void)dir;
    return 0;
}

int pw__spool_os_truncate(int fd, uint64_t size)
{
    return _chsize_s(fd, (long long)size) == 0 ? 0 : pw__spool_os_err();
}

int pw__spool_os_filesize(int fd, uint64_t *size)
{
    long long n = _filelengthi64(fd);
    if (n < 0)
        return pw__spool_os_err();
    *size = (uint64_t)n;
    return 0;
}

int pw__spool_os_rename(const char *from, const char *to)
{
    wchar_t wf[PW__SPOOL_PATH_MAX], wt[PW__SPOOL_PATH_MAX];
    if (pw__spool_win_path(from, wf, PW__SPOOL_PATH_MAX) != 0 ||
        pw__spool_win_path(to, wt, PW__SPOOL_PATH_MAX) != 0)
        return PW_ETOOBIG;
    DWORD e = 0;
    for (int i = 0; i < PW__SPOOL_WIN_TRIES; i++) {
        if (i > 0)
            backoff(i - 1);
        if (MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
            return 0;
        e = GetLastError();
        if (!transient(e))
            break;
    }
    return -errno_of(e);
}

int pw__spool_os_unlink(const char *path)
{
    wchar_t wp[PW__SPOOL_PATH_MAX];
    if (pw__spool_win_path(path, wp, PW__SPOOL_PATH_MAX) != 0)
        return PW_ETOOBIG;
    DWORD e = 0;
    for (int i = 0; i < PW__SPOOL_WIN_TRIES; i++) {
        if (i > 0)
            backoff(i - 1);
        if (DeleteFileW(wp))
            return 0;
        e = GetLastError();
        if (!transient(e))
            break;
    }
    return -errno_of(e);
}

int pw__spool_os_mkdir(const char *dir)
{
    wchar_t wp[PW__SPOOL_PATH_MAX];
    if (pw__spool_win_path(dir, wp, PW__SPOOL_PATH_MAX) != 0)
        return PW_ETOOBIG;
    if (CreateDirectoryW(wp, NULL))
        return 0;
    DWORD e = GetLastError();
    return e == ERROR_ALREADY_EXISTS ? 0 : -errno_of(e);
}

/* An exclusive byte-range lock on the lock file (LockFileEx, fileapi.h), held until the handle
 * closes: two agents appending to one spool would interleave records. */
int pw__spool_os_lock(int fd)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h == INVALID_HANDLE_VALUE)
        return PW_EIO;
    OVERLAPPED ov;
    memset(&ov, 0, sizeof(ov));
    if (LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov))
        return 0;
    DWORD e = GetLastError();
    return e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING ? PW_EAGAIN : PW_EIO;
}

int pw__spool_os_list_dir(const char *dir, pw__spool_dir_cb cb, void *arg)
{
    char pat[PW__SPOOL_PATH_MAX];
    wchar_t wp[PW__SPOOL_PATH_MAX];
    if ((size_t)snprintf(pat, sizeof(pat), "%s\\*", dir) >= sizeof(pat) ||
        pw__spool_win_path(pat, wp, PW__SPOOL_PATH_MAX) != 0)
        return PW_ETOOBIG;
    WIN32_FIND_DATAW fd;
    HANDLE h = FindFirstFileW(wp, &fd);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        return e == ERROR_FILE_NOT_FOUND ? 0 : -errno_of(e);
    }
    int rc = 0;
    do {
        char name[MAX_PATH * 4];
        if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
            continue;
        if (WideCharToMultiByte(CP_UTF8, 0, fd.cFileName, -1, name, (int)sizeof(name), NULL,
                                NULL) <= 0)
            continue; /* not a name the spool writes */
        rc = cb(name, arg);
    } while (rc == 0 && FindNextFileW(h, &fd));
    FindClose(h);
    return rc;
}

uint64_t pw__spool_os_now_ms(void)
{
    return (uint64_t)GetTickCount64();
}

/* The C runtime has no vectored write: header, then payload. */
int pw__spool_os_write_record(int fd, const uint8_t *hdr, size_t hdr_len, const void *payload,
                              size_t len, uint64_t off)
{
    int rc = pw__spool_write_all(fd, hdr, hdr_len, off);
    return rc != 0 || len == 0 ? rc : pw__spool_write_all(fd, payload, len, off + hdr_len);
}

/* 4 KiB per write from one stack page (a static zero buffer would stay mapped in the agent's
 * memory). */
int pw__spool_os_write_zeros(int fd, uint64_t off, uint64_t end)
{
    uint8_t z[4096];
    memset(z, 0, sizeof(z));
    while (off < end) {
        size_t k = end - off > sizeof(z) ? sizeof(z) : (size_t)(end - off);
        int rc = pw__spool_write_all(fd, z, k, off);
        if (rc != 0)
            return rc;
        off += k;
    }
    return 0;
}
