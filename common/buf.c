#include "buf.h"
#include "alloc.h"
#include "error.h"

#include <string.h>

void pw_buf_init(pw_buf_t *b, size_t max_bytes)
{
    memset(b, 0, sizeof(*b));
    b->max = max_bytes;
}

void pw_buf_close(pw_buf_t *b)
{
    if (b == NULL)
        return;
    pw_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int pw_buf_reserve(pw_buf_t *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return PW_ETOOBIG;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    if (ncap > b->max)
        ncap = b->max;
    uint8_t *p = pw_realloc(b->data, ncap);
    if (p == NULL)
        return PW_ENOMEM;
    b->data = p;
    b->cap = ncap;
    return 0;
}

int pw_buf_append(pw_buf_t *b, const void *p, size_t n)
{
    int r = pw_buf_reserve(b, n);
    if (r != 0)
        return r;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void pw_buf_consume(pw_buf_t *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void pw_buf_reset(pw_buf_t *b)
{
    b->len = 0;
}

int pw_buf_put_varint(pw_buf_t *b, uint64_t v)
{
    /* Room for the longest varint (nearly always): written in place, no reserve or copy (the
     * store's compaction writes tens of millions of them an hour). */
    if (b->cap - b->len >= 10 && b->max - b->len >= 10) {
        uint8_t *p = b->data + b->len;
        size_t n = 0;
        while (v >= 0x80) {
            p[n++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        p[n++] = (uint8_t)v;
        b->len += n;
        return 0;
    }
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    return pw_buf_append(b, t, n);
}

int pw_varint_get(const uint8_t *p, size_t len, size_t *off, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned sh = 0; sh < 64 && *off < len; sh += 7) {
        uint8_t c = p[(*off)++];
        r |= (uint64_t)(c & 0x7f) << sh;
        if ((c & 0x80) == 0) {
            *v = r;
            return 0;
        }
    }
    return -1;
}
