/* spool_posix.c: the spool's OS layer on POSIX systems (contracts in spool_internal.h);
 * pwritev on Linux. */
#include "spool_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

int pw__spool_os_err(void)
{
    return errno ? -errno : PW_EIO;
}

int pw__spool_os_open(const char *path, int write, int create_excl)
{
    int fl = O_CLOEXEC | (write ? O_RDWR : O_RDONLY);
    if (create_excl)
        fl |= O_CREAT | O_EXCL;
    return open(path, fl, 0600);
}

int pw__spool_os_open_trunc(const char *path)
{
    return open(path, O_CLOEXEC | O_WRONLY | O_CREAT | O_TRUNC, 0600);
}

int pw__spool_os_close(int fd)
{
    return close(fd);
}

long long pw__spool_os_pread(int fd, void *buf, size_t n, uint64_t off)
{
    return pread(fd, buf, n, (off_t)off);
}

long long pw__spool_os_pwrite(int fd, const void *buf, size_t n, uint64_t off)
{
    return pwrite(fd, buf, n, (off_t)off);
}

int pw__spool_os_datasync(int fd)
{
#if defined(__APPLE__)
    return fsync(fd) == 0 ? 0 : pw__spool_os_err();
#else
    return fdatasync(fd) == 0 ? 0 : pw__spool_os_err();
#endif
}

/* A new or renamed file is durable only once its directory entry is (fsync(2) on Linux). */
int pw__spool_os_dirsync(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (fd < 0)
        return pw__spool_os_err();
    int rc = fsync(fd) == 0 ? 0 : pw__spool_os_err();
    close(fd);
    return rc;
}

int pw__spool_os_truncate(int fd, uint64_t size)
{
    return ftruncate(fd, (off_t)size) == 0 ? 0 : pw__spool_os_err();
}

int pw__spool_os_filesize(int fd, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return pw__spool_os_err();
    if (!S_ISREG(st.st_mode))
        return PW_EINVAL;
    *size = (uint64_t)st.st_size;
    return 0;
}

int pw__spool_os_rename(const char *from, const char *to)
{
    return rename(from, to) == 0 ? 0 : pw__spool_os_err();
}

int pw__spool_os_unlink(const char *path)
{
    return unlink(path) == 0 ? 0 : pw__spool_os_err();
}

int pw__spool_os_mkdir(const char *dir)
{
    return mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : pw__spool_os_err();
}

/* A POSIX record lock: two agents appending to one spool would interleave records. */
int pw__spool_os_lock(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &fl) == 0)
        return 0;
    return errno == EACCES || errno == EAGAIN ? PW_EAGAIN : pw__spool_os_err();
}

int pw__spool_os_list_dir(const char *dir, pw__spool_dir_cb cb, void *arg)
{
    DIR *dp = opendir(dir);
    if (dp == NULL)
        return pw__spool_os_err();
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        rc = cb(de->d_name, arg);
    }
    closedir(dp);
    return rc;
}

uint64_t pw__spool_os_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Header and payload in one system call where we can (one write per sample matters for the
 * agent's CPU budget); a short vectored write falls back to pw__spool_write_all for the rest. */
int pw__spool_os_write_record(int fd, const uint8_t *hdr, size_t hdr_len, const void *payload,
                              size_t len, uint64_t off)
{
#if defined(__linux__)
    /* iovec is not const-correct; pwritev only reads. */
    struct iovec iov[2] = {{(void *)(uintptr_t)hdr, hdr_len}, {(void *)(uintptr_t)payload, len}};
    ssize_t w;
    do {
        w = pwritev(fd, iov, len ? 2 : 1, (off_t)off);
    } while (w < 0 && errno == EINTR);
    if (w < 0)
        return pw__spool_os_err();
    size_t done = (size_t)w;
    if (done < hdr_len) {
        int rc = pw__spool_write_all(fd, hdr + done, hdr_len - done, off + done);
        if (rc != 0)
            return rc;
        done = hdr_len;
    }
    size_t pdone = done - hdr_len;
    return pdone < len ? pw__spool_write_all(fd, (const uint8_t *)payload + pdone, len - pdone,
                                             off + hdr_len + pdone)
                       : 0;
#else
    int rc = pw__spool_write_all(fd, hdr, hdr_len, off);
    return rc != 0 || len == 0 ? rc : pw__spool_write_all(fd, payload, len, off + hdr_len);
#endif
}

/* Writes zero bytes over [off, end): the preallocation of a new segment, and the erasing of a
 * torn record inside one. 64 KiB per system call from one 4 KiB stack page (a static zero
 * buffer of that size would stay mapped in the agent's memory). */
int pw__spool_os_write_zeros(int fd, uint64_t off, uint64_t end)
{
    uint8_t z[4096];
    memset(z, 0, sizeof(z));
#if defined(__linux__)
    struct iovec iov[16];
    while (off < end) {
        int n = 0;
        uint64_t left = end - off;
        for (; n < 16 && left > 0; n++) {
            size_t k = left > sizeof(z) ? sizeof(z) : (size_t)left;
            iov[n].iov_base = z;
            iov[n].iov_len = k;
            left -= k;
        }
        ssize_t w = pwritev(fd, iov, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? pw__spool_os_err() : PW_EIO;
        off += (uint64_t)w;
    }
    return 0;
#else
    while (off < end) {
        size_t k = end - off > sizeof(z) ? sizeof(z) : (size_t)(end - off);
        int rc = pw__spool_write_all(fd, z, k, off);
        if (rc != 0)
            return rc;
        off += k;
    }
    return 0;
#endif
}
