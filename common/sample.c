#include "sample.h"
#include "alloc.h"
#include "error.h"

#include <stdio.h>
#include <string.h>

void pw_sample_init(pw_sample_t *s)
{
    memset(s, 0, sizeof(*s));
}

void pw_sample_close(pw_sample_t *s)
{
    if (s == NULL)
        return;
    pw_free(s->entries);
    memset(s, 0, sizeof(*s));
}

void pw_sample_reset(pw_sample_t *s)
{
    s->n = 0;
    s->seq = s->timestamp_ms = 0;
    s->flags = 0;
    memset(&s->totals, 0, sizeof(s->totals));
}

static int grow(pw_sample_t *s, size_t need)
{
    if (need <= s->cap)
        return 0;
    size_t ncap = s->cap ? s->cap * 2 : 256;
    while (ncap < need)
        ncap *= 2;
    pw_entry_t *e = pw_realloc(s->entries, ncap * sizeof(*e));
    if (e == NULL)
        return PW_ENOMEM;
    s->entries = e;
    s->cap = ncap;
    return 0;
}

int pw_sample_add(pw_sample_t *s, const void *tag, size_t tag_len, pw_pool_t pool, uint64_t allocs,
                  uint64_t frees, uint64_t diff, uint64_t bytes)
{
    if (tag_len == 0 || tag_len > PW_TAG_MAX || (unsigned)pool >= PW_POOL__COUNT)
        return PW_EINVAL;
    int r = grow(s, s->n + 1);
    if (r != 0)
        return r;
    pw_entry_t *e = &s->entries[s->n++];
    memset(e->tag, 0, sizeof(e->tag));
    memcpy(e->tag, tag, tag_len);
    e->tag_len = (uint8_t)tag_len;
    e->pool = (uint8_t)pool;
    e->allocs = allocs;
    e->frees = frees;
    e->diff = diff;
    e->bytes = bytes;
    e->held_bytes = 0;
    return 0;
}

int pw_sample_copy(pw_sample_t *dst, const pw_sample_t *src)
{
    int r = grow(dst, src->n);
    if (r != 0)
        return r;
    if (src->n)
        memcpy(dst->entries, src->entries, src->n * sizeof(*src->entries));
    dst->n = src->n;
    dst->seq = src->seq;
    dst->timestamp_ms = src->timestamp_ms;
    dst->flags = src->flags;
    dst->totals = src->totals;
    return 0;
}

uint64_t pw_per_alloc(uint64_t bytes, uint64_t diff)
{
    return diff == 0 ? 0 : bytes / diff;
}

static int printable(const uint8_t *tag, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (tag[i] < 0x20 || tag[i] >= 0x7f)
            return 0;
    return 1;
}

size_t pw_tag_format(const uint8_t *tag, size_t tag_len, char *out, size_t out_size)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (out_size == 0)
        return 0;
    if (!printable(tag, tag_len)) {
        /* a binary tag: "0x" and its bytes in hex, in memory order, whole or not at all */
        if (2 + 2 * tag_len >= out_size) {
            out[0] = '\0';
            return 0;
        }
        out[o++] = '0';
        out[o++] = 'x';
        for (size_t i = 0; i < tag_len; i++) {
            out[o++] = hex[tag[i] >> 4];
            out[o++] = hex[tag[i] & 15];
        }
        out[o] = '\0';
        return o;
    }
    for (size_t i = 0; i < tag_len; i++) {
        char tmp[4];
        size_t k = 0;
        uint8_t c = tag[i];
        if (c == '\\') {
            tmp[k++] = '\\';
            tmp[k++] = '\\';
        } else if (c >= 0x20 && c < 0x7f) {
            tmp[k++] = (char)c;
        } else {
            tmp[0] = '\\';
            tmp[1] = 'x';
            tmp[2] = hex[c >> 4];
            tmp[3] = hex[c & 15];
            k = 4;
        }
        if (o + k >= out_size)
            break;
        memcpy(out + o, tmp, k);
        o += k;
    }
    out[o] = '\0';
    return o;
}

size_t pw_row_session_key(const uint8_t *tag, uint32_t session, uint8_t out[PW_SESSION_KEY_LEN])
{
    memcpy(out, tag, PW_SESSION_TAG_LEN);
    if (session == PW_SESSION_ALL)
        return PW_SESSION_TAG_LEN;
    out[4] = (uint8_t)session;
    out[5] = (uint8_t)(session >> 8);
    out[6] = (uint8_t)(session >> 16);
    out[7] = (uint8_t)(session >> 24);
    return PW_SESSION_KEY_LEN;
}

int pw_sample_add_session(pw_sample_t *s, const void *tag, uint32_t session, uint64_t allocs,
                          uint64_t frees, uint64_t diff, uint64_t bytes)
{
    uint8_t key[PW_SESSION_KEY_LEN];
    size_t n = pw_row_session_key(tag, session, key);
    return pw_sample_add(s, key, n, PW_POOL_SESSION, allocs, frees, diff, bytes);
}

size_t pw_row_split(const uint8_t *tag, size_t tag_len, int pool, uint32_t *session)
{
    if (pool != PW_POOL_SESSION || tag_len != PW_SESSION_KEY_LEN) {
        if (session)
            *session = PW_SESSION_ALL;
        return tag_len;
    }
    if (session)
        *session = (uint32_t)tag[4] | (uint32_t)tag[5] << 8 | (uint32_t)tag[6] << 16 |
                   (uint32_t)tag[7] << 24;
    return PW_SESSION_TAG_LEN;
}

size_t pw_row_format(const uint8_t *tag, size_t tag_len, int pool, char *out, size_t out_size)
{
    uint32_t session;
    size_t tl = pw_row_split(tag, tag_len, pool, &session);
    size_t n = pw_tag_format(tag, tl, out, out_size);
    if (session != PW_SESSION_ALL && n + 1 < out_size) {
        int w = snprintf(out + n, out_size - n, " (session %u)", (unsigned)session);
        n = w < 0 ? n : (size_t)w >= out_size - n ? out_size - 1 : n + (size_t)w;
    }
    return n;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int pw_tag_parse(const char *s, uint8_t out[PW_TAG_MAX])
{
    size_t sl = strlen(s);
    /* "0x" + hex: the bytes, when they are not all printable (a printable tag is never
     * written that way, so "0x41" is the four characters, not "A") */
    if (sl > 2 && sl % 2 == 0 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
        (sl - 2) / 2 <= PW_TAG_MAX) {
        size_t n = 0;
        int ok = 1;
        for (size_t i = 2; i < sl && ok; i += 2) {
            int h = hexval((unsigned char)s[i]), l = hexval((unsigned char)s[i + 1]);
            ok = h >= 0 && l >= 0;
            if (ok)
                out[n++] = (uint8_t)(h << 4 | l);
        }
        if (ok && !printable(out, n))
            return (int)n;
    }
    size_t n = 0;
    for (size_t i = 0; s[i] != '\0'; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '\\') {
            if (s[i + 1] == '\\') {
                i++;
            } else if (s[i + 1] == 'x' && hexval((unsigned char)s[i + 2]) >= 0 &&
                       hexval((unsigned char)s[i + 3]) >= 0) {
                ch = hexval((unsigned char)s[i + 2]) << 4 | hexval((unsigned char)s[i + 3]);
                i += 3;
            } else {
                return -1;
            }
        }
        if (n == PW_TAG_MAX)
            return -1;
        out[n++] = (uint8_t)ch;
    }
    return n == 0 ? -1 : (int)n;
}

const char *pw_pool_name(int pool)
{
    switch (pool) {
    case PW_POOL_PAGED:
        return "paged";
    case PW_POOL_NONPAGED:
        return "nonpaged";
    case PW_POOL_SESSION:
        return "session";
    default:
        return "?";
    }
}
