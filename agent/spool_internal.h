/* spool_internal.h: between spool.c (portable) and its OS layer (spool_posix.c, spool_win.c).
 * Not for other modules. File descriptors are C runtime descriptors on both systems. Functions
 * that return an int return 0 or a negative code (common/error.h) unless said otherwise; the
 * raw ones (open, close, pread, pwrite) return -1 with errno set, as their C library
 * counterparts do, and pw__spool_os_err turns errno into a code. */
#ifndef PW_SPOOL_INTERNAL_H
#define PW_SPOOL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define PW__SPOOL_PATH_MAX 4096u /* bytes of any path the spool builds, NUL included */

typedef int (*pw__spool_dir_cb)(const char *name, void *arg);

/* The code for the current errno: -errno, or PW_EIO when errno is 0. */
int pw__spool_os_err(void);
/* Opens `path` read-only or read-write (`write`), creating it (exclusively) if `create_excl`;
 * not inherited by children; returns the descriptor or -1 with errno set. */
int pw__spool_os_open(const char *path, int write, int create_excl);
/* Creates or truncates `path` for writing (mode 0600 on POSIX); descriptor or -1 with errno. */
int pw__spool_os_open_trunc(const char *path);
/* Closes `fd`; 0 or -1 with errno set. */
int pw__spool_os_close(int fd);
/* Reads up to `n` bytes at `off`; returns the count (0 at end of file) or -1 with errno set. */
long long pw__spool_os_pread(int fd, void *buf, size_t n, uint64_t off);
/* Writes up to `n` bytes at `off`; returns the count or -1 with errno set. */
long long pw__spool_os_pwrite(int fd, const void *buf, size_t n, uint64_t off);
/* Makes the file's data durable (fdatasync, fsync on macOS, _commit on Windows). */
int pw__spool_os_datasync(int fd);
/* Makes the entries of directory `dir` (created, renamed files) durable; a no-op on NTFS. */
int pw__spool_os_dirsync(const char *dir);
/* Sets the file's size to `size` bytes. */
int pw__spool_os_truncate(int fd, uint64_t size);
/* Stores the file's size in *size; PW_EINVAL if it is not a regular file (POSIX). */
int pw__spool_os_filesize(int fd, uint64_t *size);
/* Renames `from` to `to`, replacing `to` if it exists. */
int pw__spool_os_rename(const char *from, const char *to);
/* Deletes the file `path`. */
int pw__spool_os_unlink(const char *path);
/* Creates directory `dir` (0700 on POSIX); 0 if it already exists. */
int pw__spool_os_mkdir(const char *dir);
/* Takes an exclusive lock on `fd`, held until it closes; PW_EAGAIN if another holder has it. */
int pw__spool_os_lock(int fd);
/* Calls `cb` with the name of each non-directory entry of `dir` ("." and ".." skipped) until
 * it returns non-zero, which is returned; 0 after the last entry. */
int pw__spool_os_list_dir(const char *dir, pw__spool_dir_cb cb, void *arg);
/* Milliseconds of a monotonic clock (arbitrary origin). */
uint64_t pw__spool_os_now_ms(void);
/* Writes hdr[0..hdr_len) then payload[0..len) at `off`, in one system call where the OS has
 * vectored writes, the rest through pw__spool_write_all; 0 or a code. */
int pw__spool_os_write_record(int fd, const uint8_t *hdr, size_t hdr_len, const void *payload,
                              size_t len, uint64_t off);
/* Writes zero bytes over [off, end), 64 KiB per system call where the OS has vectored writes. */
int pw__spool_os_write_zeros(int fd, uint64_t off, uint64_t end);

#ifdef _WIN32
#include <wchar.h>
/* Attempts of a Win32 open, rename or delete that another process's handle refuses (sharing
 * violation), with 10, 20, 40, 80, 160 ms between them. */
#define PW__SPOOL_WIN_TRIES 6
/* spool_win.c: `path` (UTF-8, or the ANSI code page when not valid UTF-8; relative or absolute)
 * as the absolute "\\?\" wide path the Win32 calls get ("\\?\UNC\..." for a UNC path), in
 * out[0..out_len) wide characters. 0, or PW_ETOOBIG when it does not fit or convert. */
int pw__spool_win_path(const char *path, wchar_t *out, size_t out_len);
/* spool_win.c: the errno value a Win32 error maps to (ENOENT, EACCES, EEXIST, ENOSPC, ENOMEM,
 * ENAMETOOLONG; EIO for the rest). */
int pw__spool_win_errno(unsigned long win32_error);
#endif

/* Test seam (spool.c): while positive, pw_spool_append fails with PW_ENOSPC without writing
 * and decrements it; a disk that fills for a while. 0 in the product. */
extern int pw__spool_test_fail_appends;

/* In spool.c, portable: writes all of buf at `off` with pw__spool_os_pwrite, retrying EINTR;
 * 0, a code, or PW_EIO on a zero-length write. */
int pw__spool_write_all(int fd, const void *buf, size_t n, uint64_t off);

#endif /* PW_SPOOL_INTERNAL_H */
