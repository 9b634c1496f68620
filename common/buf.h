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

#endif /* PW_BUF_H */
