#include "frame.h"
#include "alloc.h"

#include <string.h>

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void pw_frame_put_header(uint8_t hdr[PW_FRAME_HEADER], uint32_t payload_len)
{
    hdr[0] = (uint8_t)(payload_len >> 24);
    hdr[1] = (uint8_t)(payload_len >> 16);
    hdr[2] = (uint8_t)(payload_len >> 8);
    hdr[3] = (uint8_t)payload_len;
}

int64_t pw_frame_parse(const uint8_t *data, size_t len, size_t max_payload, const uint8_t **payload,
                       size_t *payload_len, pw_diag_t *d)
{
    if (len < PW_FRAME_HEADER)
        return 0;
    uint32_t n = get_be32(data);
    if (n == 0)
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "length", "frame of length 0");
    if (n > max_payload)
        return pw_diag_set(d, PW_EFRAMETOOBIG, 0, 0, "length",
                           "frame announces %u bytes, the maximum is %zu", n, max_payload);
    if (len - PW_FRAME_HEADER < n)
        return 0;
    *payload = data + PW_FRAME_HEADER;
    *payload_len = n;
    return (int64_t)n + PW_FRAME_HEADER;
}

/* One partial frame plus one read's worth of whole frames (PW_FRAME_READ_MAX). */
static size_t ceiling(size_t max_payload)
{
    return 2 * (max_payload + PW_FRAME_HEADER) + PW_FRAME_READ_MAX;
}

void pw_frame_reader_init(pw_frame_reader_t *r, size_t max_payload)
{
    memset(r, 0, sizeof(*r));
    r->max_payload = max_payload ? max_payload : PW_FRAME_MAX_DEFAULT;
    pw_buf_init(&r->buf, ceiling(r->max_payload));
}

void pw_frame_reader_close(pw_frame_reader_t *r)
{
    if (r != NULL)
        pw_buf_close(&r->buf);
}

void pw_frame_reader_set_max(pw_frame_reader_t *r, size_t max_payload)
{
    r->max_payload = max_payload ? max_payload : PW_FRAME_MAX_DEFAULT;
    r->buf.max = ceiling(r->max_payload);
}

size_t pw_frame_reader_pending(const pw_frame_reader_t *r)
{
    return r->buf.len - r->consumed;
}

/* Drops bytes already handed out, so the buffer never holds more than one partial frame
 * plus what the last read brought. */
static void compact(pw_frame_reader_t *r)
{
    if (r->consumed) {
        pw_buf_consume(&r->buf, r->consumed);
        r->stream_off += r->consumed;
        r->scan -= r->consumed;
        r->consumed = 0;
    }
    /* An empty buffer that a keyframe made large is given back: a collector holds one reader
     * per agent, mostly idle between deltas of a few hundred bytes (64 KB each otherwise). */
    if (r->buf.len == 0 && r->buf.cap > PW_FRAME_READER_KEEP) {
        pw_free(r->buf.data);
        r->buf.data = NULL;
        r->buf.cap = 0;
    }
}

/* Byte `pos` of the logical stream "buffered bytes, then `data`". */
static uint8_t byte_at(const pw_frame_reader_t *r, const uint8_t *data, size_t pos)
{
    return pos < r->buf.len ? r->buf.data[pos] : data[pos - r->buf.len];
}

int pw_frame_reader_feed(pw_frame_reader_t *r, const void *data, size_t len, pw_diag_t *d)
{
    if (r->failed)
        return r->failed;
    compact(r);
    /* Validate every header that this read completes before buffering a byte of it, so an
     * announced length is checked before any allocation it could cause. */
    size_t total = r->buf.len + len;
    size_t scan = r->scan;
    while (scan + PW_FRAME_HEADER <= total) {
        uint32_t n = (uint32_t)byte_at(r, data, scan) << 24 |
                     (uint32_t)byte_at(r, data, scan + 1) << 16 |
                     (uint32_t)byte_at(r, data, scan + 2) << 8 | byte_at(r, data, scan + 3);
        unsigned long long at = (unsigned long long)(r->stream_off + scan);
        if (n == 0) {
            r->failed = PW_EBADFRAME;
            return pw_diag_set(d, PW_EBADFRAME, 0, at, "length",
                               "frame of length 0 at stream offset %llu", at);
        }
        if (n > r->max_payload) {
            r->failed = PW_EFRAMETOOBIG;
            return pw_diag_set(d, PW_EFRAMETOOBIG, 0, at, "length",
                               "frame at stream offset %llu announces %u bytes, the maximum "
                               "is %zu",
                               at, n, r->max_payload);
        }
        scan += PW_FRAME_HEADER + (size_t)n;
    }
    int rc = pw_buf_append(&r->buf, data, len);
    if (rc != 0)
        return pw_diag_set(d, rc, 0, r->stream_off + r->buf.len, "buffer",
                           "cannot buffer %zu more bytes: %s (drain frames between reads)", len,
                           pw_strerror(rc));
    r->scan = scan;
    return 0;
}

int pw_frame_reader_next(pw_frame_reader_t *r, const uint8_t **payload, size_t *len, pw_diag_t *d)
{
    if (r->failed)
        return r->failed;
    const uint8_t *base = r->buf.data ? r->buf.data + r->consumed : NULL;
    size_t avail = r->buf.len - r->consumed;
    if (base == NULL || avail == 0)
        return 0;
    int64_t n = pw_frame_parse(base, avail, r->max_payload, payload, len, d);
    if (n < 0) {
        r->failed = (int)n;
        return (int)n;
    }
    if (n == 0)
        return 0;
    r->consumed += (size_t)n;
    return 1;
}
