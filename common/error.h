/* error.h: poolwatch's one error space.
 *
 * Every function that can fail returns 0 (or a non-negative count) on success and a negative
 * code on failure. Codes for OS conditions are negated errno values (the same numbers libuv
 * uses on Unix, so a libuv status passes through unchanged); poolwatch's own codes live in
 * -7000 ... -7999, generated from the PW_ERRNO_MAP table below (libuv UV_ERRNO_MAP pattern).
 */
#ifndef PW_ERROR_H
#define PW_ERROR_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* printf format checking: on mingw-w64, GCC's "printf" means Microsoft's msvcrt dialect (no %zu);
 * poolwatch's Windows build uses mingw's C99 printf (__USE_MINGW_ANSI_STDIO, CMakeLists.txt),
 * which is "gnu_printf". */
#ifndef PW_PRINTF_FORMAT
#ifdef __MINGW32__
#define PW_PRINTF_FORMAT gnu_printf
#else
#define PW_PRINTF_FORMAT printf
#endif
#endif

/* OS conditions: negated errno (libuv's values on Unix). */
#define PW_ENOMEM  (-ENOMEM)
#define PW_EINVAL  (-EINVAL)
#define PW_EIO     (-EIO)
#define PW_ENOENT  (-ENOENT)
#define PW_EACCES  (-EACCES)
#define PW_EAGAIN  (-EAGAIN)
#define PW_ENOSPC  (-ENOSPC)
#define PW_ERANGE  (-ERANGE)
#define PW_ENOTSUP (-ENOTSUP)
#define PW_EEXIST  (-EEXIST)

/* poolwatch codes: XX(NAME, message). Adding an error is one line here. */
#define PW_ERRNO_MAP(XX)                                                                           \
    XX(EFRAMETOOBIG, "frame larger than the configured maximum")                                   \
    XX(EBADFRAME, "malformed frame or protobuf message")                                           \
    XX(ETRUNCATED, "input ends in the middle of a record")                                         \
    XX(ENOBASE, "delta refers to a base sample the decoder does not hold")                         \
    XX(EBADTAG, "tag id unknown or tag bytes invalid")                                             \
    XX(ESEQ, "sequence number out of order")                                                       \
    XX(ERESET, "counter went backwards: counter reset")                                            \
    XX(EPROTO, "protocol violation")                                                               \
    XX(EVERSION, "unsupported protocol version")                                                   \
    XX(EAUTH, "peer certificate or host name not accepted")                                        \
    XX(ETLS, "TLS error")                                                                          \
    XX(ESTORE, "storage error")                                                                    \
    XX(ECONFIG, "invalid configuration")                                                           \
    XX(EPARSE, "parse error")                                                                      \
    XX(ENOTPOOLMON, "input is not a poolmon screen")                                               \
    XX(EFORMAT, "unknown input format")                                                            \
    XX(ETOOBIG, "input exceeds a size limit")                                                      \
    XX(ESPOOLFULL, "spool is full")                                                                \
    XX(ECORRUPT, "stored data failed its checksum")                                                \
    XX(ENOPOOLINFO, "pool tag information is not available on this system")                        \
    XX(ETIMEDOUT, "operation timed out")                                                           \
    XX(ECLOSED, "connection closed")                                                               \
    XX(EOF, "end of input")                                                                        \
    XX(ELOCKED, "in use by another collector")                                                     \
    XX(ESTAMP, "sample time before 2000 or more than a day ahead")                                 \
    XX(ECOUNTERS, "objects outstanding above allocations")                                         \
    XX(ELIMIT, "over a per-host limit (tags, tag length or rows)")

typedef enum {
    PW__ERR_BASE = -7000,
#define XX(name, msg) PW_##name,
    PW_ERRNO_MAP(XX)
#undef XX
        PW__ERR_END
} pw_errno_t;

/* A parser's "what and where": filled on failure when the caller passes one (may be NULL).
 * line is 1-based (0 = not line oriented), offset is in bytes from the start of the input. */
#define PW_DIAG_MSG_MAX 256
typedef struct pw_diag_s {
    int code;                  /* the negative code also returned */
    uint64_t offset;           /* byte offset of the problem */
    uint32_t line;             /* 1-based line, 0 when not applicable */
    char field[48];            /* name of the field or element, "" when none */
    char msg[PW_DIAG_MSG_MAX]; /* human-readable message, NUL-terminated */
} pw_diag_t;

/* Returns a static, NUL-terminated message for `err` (any code: ours, or a negated errno).
 * Never returns NULL; unknown codes give "unknown error". */
const char *pw_strerror(int err);

/* Returns the code's name without the PW_ prefix ("ENOBASE", "ENOMEM"), static, never NULL. */
const char *pw_err_name(int err);

/* Fills `d` (when not NULL) with code, location and a printf-formatted message; returns `code`
 * so that callers can write `return pw_diag_set(d, PW_EPARSE, line, off, "allocs", "...")`. */
int pw_diag_set(pw_diag_t *d, int code, uint32_t line, uint64_t offset, const char *field,
                const char *fmt, ...) __attribute__((format(PW_PRINTF_FORMAT, 6, 7)));

/* Clears `d` (when not NULL). */
void pw_diag_clear(pw_diag_t *d);

#endif /* PW_ERROR_H */
