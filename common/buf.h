/* buf.h: a growable byte buffer with a ceiling set at init (curl dynbuf): every growable
 * buffer in poolwatch has one, so hostile input cannot make it grow without bound. */
#ifndef PW_BUF_H
#define PW_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct pw_buf_s {
    uint8_t *data; /* owned; NULL until the first append */
    size_t len;    /* bytes in use */
    size_t cap;    /* bytes allocated */
    size_t max;    /* ceiling in bytes: appends that would pass it fail with PW_ETOOBIG */
} pw_buf_t;

/* Initialises an empty buffer that may hold at most `max_bytes`. Allocates nothing. */
void pw_buf_init(pw_buf_t *b, size_t max_bytes);

/* Frees the storage; the buffer can be reused after pw_buf_init. Accepts NULL. */
void pw_buf_close(pw_buf_t *b);

/* Makes room for `extra` more bytes. Returns 0, PW_ETOOBIG (ceiling) or PW_ENOMEM; on
 * failure the contents are unchanged. */
int pw_buf_reserve(pw_buf_t *b, size_t extra);

/* Appends `n` bytes. Returns 0, PW_ETOOBIG or PW_ENOMEM (contents unchanged on failure). */
int pw_buf_append(pw_buf_t *b, const void *p, size_t n);

/* Drops the first `n` bytes (n <= len), moving the rest to the front. */
void pw_buf_consume(pw_buf_t *b, size_t n);

/* Empties the buffer, keeping its storage. */
void pw_buf_reset(pw_buf_t *b);

/* Appends `v` as a LEB128 varint (1..10 bytes). Returns 0, PW_ETOOBIG or PW_ENOMEM (buffer
 * unchanged on failure). */
int pw_buf_put_varint(pw_buf_t *b, uint64_t v);

/* Reads a LEB128 varint from p[*off .. len) into *v and advances *off. Returns 0, or -1 when
 * it is truncated or longer than 10 bytes (*off then undefined, *v untouched). */
int pw_varint_get(const uint8_t *p, size_t len, size_t *off, uint64_t *v);

/* Zigzag: a two's complement difference as an unsigned number that is small when the
 * difference is small in either direction (0, -1, 1, -2 -> 0, 1, 2, 3), as protobuf sint64. */
static inline uint64_t pw_zigzag(uint64_t v)
{
    return (v << 1) ^ (uint64_t) - (int64_t)(v >> 63);
}

static inline uint64_t pw_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (uint64_t)(-(int64_t)(z & 1));
}

#endif /* PW_BUF_H */
