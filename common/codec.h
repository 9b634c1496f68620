/* codec.h: Envelope <-> bytes over protobuf-c, with size caps (docs/protocol.md).
 *
 * Unpacking hostile bytes cannot make protobuf-c allocate without bound: every unpack runs
 * with an allocator capped at PW_CODEC_ALLOC_FACTOR times the payload size (plus a constant),
 * and a message without a oneof case is rejected. Pointers into a decoded message must not
 * survive its pw_codec_free.
 */
#ifndef PW_CODEC_H
#define PW_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "poolwatch.pb-c.h"
#include "winevent.h"

#define PW_PROTOCOL_MAJOR 1
#define PW_PROTOCOL_MINOR 0

/* Decoded structures may take at most this many bytes per payload byte (+ 64 KiB). */
#define PW_CODEC_ALLOC_FACTOR 32

/* Appends one frame (4-byte big-endian length + packed `env`) to `out`. Returns 0,
 * PW_EFRAMETOOBIG when the packed size exceeds `max_payload` bytes, PW_ETOOBIG / PW_ENOMEM
 * from the buffer (out unchanged on failure). */
int pw_codec_pack_frame(const Poolwatch__V1__Envelope *env, size_t max_payload, pw_buf_t *out);

/* Shorthand: wraps `s` in an Envelope and appends it as a frame. Same returns. */
int pw_codec_pack_sample(const Poolwatch__V1__Sample *s, size_t max_payload, pw_buf_t *out);

/* Unpacks one Envelope from a frame payload. On success *env is owned by the caller (free
 * with pw_codec_free). Returns 0; PW_EBADFRAME (not a valid Envelope, or no message set);
 * PW_ETOOBIG (decoding would allocate more than the cap). `d` says what. */
int pw_codec_unpack(const uint8_t *payload, size_t len, Poolwatch__V1__Envelope **env,
                    pw_diag_t *d);

/* Frees an Envelope from pw_codec_unpack. Accepts NULL. */
void pw_codec_free(Poolwatch__V1__Envelope *env);

/* Name of the Envelope's message ("hello", "sample", ...), "none" when unset. */
const char *pw_codec_msg_name(const Poolwatch__V1__Envelope *env);

/* ---- pool events (Sample.events, winevent.h) ---------------------------------------------- */

/* A wire event's storage: the message, its tags and their pointers (no allocation). */
typedef struct pw_codec_event_s {
    Poolwatch__V1__PoolEvent msg;
    Poolwatch__V1__EventTag tags[PW_WINEVENT_TAGS_MAX];
    Poolwatch__V1__EventTag *tag_ptrs[PW_WINEVENT_TAGS_MAX];
} pw_codec_event_t;

/* Fills `w` from `ev`; the message points into `ev` (provider, tag bytes) and into `w`: both
 * must outlive its use. */
void pw_codec_event_fill(pw_codec_event_t *w, const pw_winevent_t *ev);

/* Reads a received event into `ev`. Returns 0 or PW_EPROTO (a provider of
 * PW_WINEVENT_PROVIDER_MAX bytes or more, more than PW_WINEVENT_TAGS_MAX tags, a tag not of 4
 * bytes, a pool out of range) with `d` saying which. */
int pw_codec_event_read(const Poolwatch__V1__PoolEvent *w, pw_winevent_t *ev, pw_diag_t *d);

#endif /* PW_CODEC_H */
