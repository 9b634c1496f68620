/* frame.h: the stream framing of docs/protocol.md: a 4-byte big-endian length, then that many bytes
 * of one protobuf Envelope.
 *
 * The parser never trusts a length (Redis proto_max_bulk_len, picohttpparser's -2/-1/n
 * contract): the length is checked against the reader's ceiling before any buffer grows, and
 * the ceiling can be lowered before the peer is authenticated. Frames of length 0 are
 * malformed (an Envelope always carries one message).
 */
#ifndef PW_FRAME_H
#define PW_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

#define PW_FRAME_HEADER      4
#define PW_FRAME_MAX_DEFAULT (4u * 1024 * 1024) /* bytes of payload */
#define PW_FRAME_READ_MAX    (1u * 1024 * 1024) /* bytes fed at once, beyond one frame */

/* Parses one frame from `data` (len bytes that arrived so far). Returns the bytes consumed
 * (> 0, header included) with *payload / *payload_len pointing into `data`; 0 when more bytes
 * are needed (nothing consumed); PW_EFRAMETOOBIG when the announced length exceeds
 * `max_payload`; PW_EBADFRAME for a zero length. `d` (may be NULL) names the offset. */
int64_t pw_frame_parse(const uint8_t *data, size_t len, size_t max_payload, const uint8_t **payload,
                       size_t *payload_len, pw_diag_t *d);

/* Writes the 4-byte header for a payload of `payload_len` bytes into hdr. */
void pw_frame_put_header(uint8_t hdr[PW_FRAME_HEADER], uint32_t payload_len);

/* An incremental reader: feed it whatever bytes arrived (half a header, ten frames at
 * once), then take complete frames out. Its buffer holds at most one partial frame plus the
 * last read; once emptied, a buffer larger than PW_FRAME_READER_KEEP bytes is freed at the
 * next feed. */
#define PW_FRAME_READER_KEEP (16u * 1024)
typedef struct pw_frame_reader_s {
    pw_buf_t buf;        /* unconsumed bytes */
    size_t max_payload;  /* current ceiling in bytes */
    size_t consumed;     /* bytes of buf already returned as frames */
    size_t scan;         /* offset in buf of the next header not yet validated */
    uint64_t stream_off; /* stream offset of buf.data[0], for diagnostics */
    int failed;          /* sticky error code once the stream is known bad */
} pw_frame_reader_t;

/* Initialises a reader with a payload ceiling of `max_payload` bytes (0 = default 4 MiB). */
void pw_frame_reader_init(pw_frame_reader_t *r, size_t max_payload);

/* Frees the reader's buffer. Accepts NULL. */
void pw_frame_reader_close(pw_frame_reader_t *r);

/* Changes the ceiling (e.g. raise it once the peer's Hello is verified). */
void pw_frame_reader_set_max(pw_frame_reader_t *r, size_t max_payload);

/* Appends `len` received bytes, after checking every frame header they complete against the
 * ceiling. Returns 0; PW_EFRAMETOOBIG (a header announces a frame over the ceiling) or
 * PW_EBADFRAME (length 0): the stream must be closed, the error is sticky; PW_ETOOBIG when
 * more than one partial frame plus PW_FRAME_READ_MAX bytes would be buffered (drain frames
 * with pw_frame_reader_next between feeds); PW_ENOMEM. On error nothing is appended. */
int pw_frame_reader_feed(pw_frame_reader_t *r, const void *data, size_t len, pw_diag_t *d);

/* Takes the next complete frame. Returns 1 with *payload / *len valid until the next call
 * on the reader; 0 when no complete frame is buffered; a negative error (sticky) when the
 * stream is malformed. */
int pw_frame_reader_next(pw_frame_reader_t *r, const uint8_t **payload, size_t *len, pw_diag_t *d);

/* Bytes buffered and not yet returned as frames. */
size_t pw_frame_reader_pending(const pw_frame_reader_t *r);

#endif /* PW_FRAME_H */
