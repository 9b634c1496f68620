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

#include "error.h"

/* The CRT's errno values match POSIX for the conditions we report. Paths are narrow (ANSI);
 * TODO: UTF-8 to UTF-16 with _wopen / MoveFileExW for non-ASCII spool directories. */
int pw__spool_os_err(void)
{
    return errno ? -errno : PW_EIO;
}

int pw__spool_os_open(const char *path, int write, int create_excl)
{
    int fl = _O_BINARY | _O_NOINHERIT | (write ? _O_RDWR : _O_RDONLY);
    if (create_excl)
        fl |= _O_CREAT | _O_EXCL;
    return _open(path, fl, _S_IREAD | _S_IWRITE);
}

int pw__spool_os_open_trunc(const char *path)
{
    return _open(path, _O_BINARY | _O_NOINHERIT | _O_WRONLY | _O_CREAT | _O_TRUNC,
                 _S_IREAD | _S_IWRITE);
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
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        return 0;
    return PW_EIO;
}

int pw__spool_os_unlink(const char *path)
{
    return _unlink(path) == 0 ? 0 : pw__spool_os_err();
}

int pw__spool_os_mkdir(const char *dir)
{
    return _mkdir(dir) == 0 || errno == EEXIST ? 0 : pw__spool_os_err();
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
    WIN32_FIND_DATAA fd;
    snprintf(pat, sizeof(pat), "%s\\*", dir);
    HANDLE h = FindFirstFileA(pat, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return GetLastError() == ERROR_FILE_NOT_FOUND ? 0 : PW_EIO;
    int rc = 0;
    do {
        if (!(fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
            rc = cb(fd.cFileName, arg);
    } while (rc == 0 && FindNextFileA(h, &fd));
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
