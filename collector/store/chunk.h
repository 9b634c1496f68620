/* chunk.h: the layouts of a chunk's samples in the history store (docs/internals/store.md).
 *
 * A chunk is one host's samples over one time window: a keyframe first, then deltas that
 * each continue the previous sample (common/delta.h). Two layouts:
 *
 *  - PW_CHUNK_RECORDS (1): what ingest writes while a chunk is open, and what closed chunks
 *    held before schema 3: per sample "varint seq, 4-byte big-endian length, Envelope frame"
 *    (the agent's own frame when it continued the chain).
 *  - PW_CHUNK_COLUMNS (2): what a chunk becomes when it closes. The Changes of every delta
 *    are moved out of the frames into six chunk-wide columns (counts, key gaps, d_allocs,
 *    d_diff, d_bytes, d_held_bytes), and d_bytes is kept as its departure from d_diff times the
 * row's per-alloc size (bytes / diff before the change, integer division): for a tag whose
 *    allocations have one size, as most pool tags and every slab cache, that departure is 0.
 *    The rest of each frame (seq, timestamp, totals, new rows, vanished keys, dictionary) stays
 *    a protobuf Envelope. Homogeneous columns are what zstd compresses well; frames of
 *    interleaved fields are not (measured: docs/internals/store.md).
 *
 * Layout 2, all integers LEB128 varints, signed ones zigzag:
 *   u8 3, nrec, len[7] (bytes of each section below), then the sections in order:
 *   0 records:  per sample zz(seq - previous seq), frame length, frame (Envelope, Sample
 *               without `changes`; its new rows keep their held_bytes column)
 *   1 counts:   per sample n << 3 | has_held << 2 | has_allocs << 1 | has_changes
 *   2 key_gap:  n per sample, as in Changes
 *   3 d_allocs: zz, n per sample that has_allocs
 *   4 d_diff:   zz, n per sample
 *   5 d_bytes:  zz(d_bytes - predicted), n per sample
 *   6 d_held_bytes: zz, n per sample that has_held (Changes.d_held_bytes: Linux slab caches)
 * Chunks closed before held bytes (version byte 2) have len[6], no section 6 and counts
 * n << 2 | has_allocs << 1 | has_changes; they are read as they are (held bytes 0).
 */
#ifndef PW_CHUNK_H
#define PW_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "delta.h"
#include "error.h"

#define PW_CHUNK_RECORDS 1
#define PW_CHUNK_COLUMNS 2

/* pw_buf_put_varint, written in place when `b` has room for the longest varint (nearly always):
 * the columns of chunks and series pages are millions of varints an hour, and the call was a
 * fifth of their cost. Returns as pw_buf_put_varint. */
static inline int pw_chunk_put_varint(pw_buf_t *b, uint64_t v)
{
    if (b->cap - b->len < 10 || b->max - b->len < 10)
        return pw_buf_put_varint(b, v);
    uint8_t *p = b->data + b->len;
    while (v > 0x7f) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    b->len = (size_t)(p - b->data);
    return 0;
}

/* Called after each sample is applied: `dd` holds the table as of that sample (borrowed, valid
 * during the call), `seq` is the sample's seq. A negative return stops the replay and is
 * returned; a positive one stops it quietly (replay returns 0). */
typedef int (*pw_chunk_cb)(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d);

/* Appends one record of layout 1 (seq, then `frame`: a 4-byte big-endian length and the
 * payload, as pw_codec_pack_frame writes it) to `out`. Returns 0 or PW_ENOMEM / PW_ETOOBIG
 * from the buffer. */
int pw_chunk_put_record(pw_buf_t *out, uint64_t seq, const uint8_t *frame, size_t frame_len);

/* Converts the `len` bytes of layout-1 records at `recs` (counters of `width_bits`, 32 or 64)
 * into layout 2, written to `out` (reset first). The records must form one chain (a keyframe,
 * then deltas on it), as a chunk does; every record is decoded to compute the predictions (a
 * delta of changes only is applied first, its predictions taken from the rows it changed).
 * Returns 0; PW_ECORRUPT with `d` naming the record's offset when a record is truncated, does
 * not decode or does not apply; PW_ENOMEM. */
int pw_chunk_pack(const uint8_t *recs, size_t len, unsigned width_bits, pw_buf_t *out,
                  pw_diag_t *d);

/* Replays the samples of a chunk in layout `fmt` (PW_CHUNK_*) from `p` (`len` bytes) into `dd`
 * (initialised by the caller for the chunk's counter width, normally fresh; it keeps the
 * last table afterwards), calling `cb` (may be NULL) after each sample. Returns 0; PW_ECORRUPT
 * with `d` saying what and where (byte offset in `p`) when the data is truncated, malformed
 * or does not decode (hostile input included: every count and length is checked before use);
 * PW_EINVAL for an unknown `fmt`; or what `cb` returned. */
int pw_chunk_replay(int fmt, const uint8_t *p, size_t len, pw_delta_dec_t *dd, pw_chunk_cb cb,
                    void *arg, pw_diag_t *d);

#endif /* PW_CHUNK_H */
