/* delta.h: keyframe / delta encoding of pool tables (docs/protocol.md).
 *
 * A table is a set of rows keyed by (tag id, pool type): key = id * 4 + pool. A keyframe
 * carries every row's absolute counters; a delta carries, for rows that changed since the
 * base sample, the differences (zigzag varints), plus the keys of rows that vanished, plus
 * rows that are new or whose counters were reset (absolute). allocs and diff travel on the
 * wire; frees are rebuilt as allocs - diff (mod 2^counter_width), so a keyframe row costs
 * about 10 bytes instead of 14. Held bytes (pw_entry_t.held_bytes) travel in a column of their
 * own that is left out when every value in it is 0 (Windows rows, old agents), so that column
 * costs nothing to the sources that do not report it and older readers skip it.
 *
 * Counters: allocs and frees are cumulative and wrap at 2^counter_width (32 on Windows:
 * SYSTEM_POOLTAG uses ULONG, phnt ntexapi.h). A forward move of at most 2^(width-1) is a
 * wrap; a larger backward move is a reset (pw_counter_delta). The encoder sends a reset row
 * absolutely and the decoder reports it (pw_delta_result_t.resets): never a huge delta.
 *
 * Encoder and decoder keep caller-owned state (collectd value_to_rate):
 * one per agent instance and one per connection respectively. Decoding a delta whose base the
 * decoder does not hold fails with PW_ENOBASE and changes nothing: decoding never guesses.
 */
#ifndef PW_DELTA_H
#define PW_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"
#include "tagdict.h"
#include "buf.h"
#include "poolwatch.pb-c.h"

typedef struct pw_row_s {
    uint32_t key; /* PW_ROW_KEY(tag id, pool) */
    uint32_t reserved;
    uint64_t allocs; /* < 2^counter_width */
    uint64_t frees;  /* < 2^counter_width */
    uint64_t diff;   /* < 2^counter_width */
    uint64_t bytes;
    uint64_t held_bytes; /* sample.h: a slab cache's slabs; 0 = not reported */
} pw_row_t;

#define PW_ROW_KEY(id, pool) ((uint32_t)(id)*4u + (uint32_t)(pool))
#define PW_ROW_ID(key)       ((uint32_t)(key) >> 2)
#define PW_ROW_POOL(key)     ((uint32_t)(key)&3u)

/* Rows per table at most: PW_TAGDICT_MAX_DEFAULT tags in three pools. */
#define PW_DELTA_MAX_ROWS (3u * PW_TAGDICT_MAX_DEFAULT)

/* Forward difference of a cumulative counter that wraps at 2^width_bits (32 or 64).
 * Returns 0 with *out = cur - prev (mod 2^width) when the counter moved forward by at most
 * 2^(width-1) (a wrap included); PW_ERESET when it went backwards (a counter reset), with
 * *out untouched; PW_EINVAL for another width. */
int pw_counter_delta(uint64_t prev, uint64_t cur, unsigned width_bits, uint64_t *out);

/* ---- encoder ------------------------------------------------------------------------------- */

#define PW_DELTA_KEYFRAME  0x1u /* send a keyframe even when a delta is possible */
#define PW_DELTA_WITH_DICT 0x2u /* repeat every tag definition (new connection, on request) */

typedef struct pw_delta_enc_s {
    pw_tagdict_t dict;
    unsigned width;     /* counter width in bits: 32 or 64 */
    uint32_t dict_sent; /* ids below this were carried by an earlier sample */
    int have_prev;
    uint64_t prev_seq;
    uint32_t prev_flags;
    pw_row_t *prev, *cur; /* double-buffered tables, sorted by key */
    size_t nprev, ncur, rows_cap;
    /* Sources list rows in a stable order: per entry index, the key it had in the previous
     * sample (to skip hashing) and its index in the sorted table (to skip sorting). */
    uint32_t *pos_key, *pos_rank;
    size_t pos_cap, rank_cap;
    size_t npos;    /* entries of the previous sample (0: no cache) */
    int rank_valid; /* pos_rank holds the previous sample's order */
    /* Scratch for the message: reused across samples, so steady state allocates nothing. */
    uint32_t *c_key_gap, *r_key_gap, *v_gap;
    int64_t *c_allocs, *c_diff, *c_bytes, *c_held;
    uint64_t *r_allocs, *r_diff, *r_bytes, *r_held;
    size_t r_cap, c_cap, v_cap; /* of the r_*, c_* columns and v_gap */
    Poolwatch__V1__TagDef *defs;
    Poolwatch__V1__TagDef **defp;
    size_t defs_cap;
    Poolwatch__V1__Sample msg;
    Poolwatch__V1__HostTotals totals;
    Poolwatch__V1__Rows rows;
    Poolwatch__V1__Changes changes;
} pw_delta_enc_t;

/* Initialises an encoder for counters of `width_bits` (32 or 64). Returns 0 or PW_EINVAL. */
int pw_delta_enc_init(pw_delta_enc_t *e, unsigned width_bits);

/* Frees everything the encoder holds. Accepts NULL. */
void pw_delta_enc_close(pw_delta_enc_t *e);

/* Encodes sample `s` (seq must grow) against the previous one, or as a keyframe when there
 * is none (that first keyframe carries the whole dictionary with dict_reset set, so a decoder
 * that knew an earlier encoder of the same agent starts over), when `flags` has PW_DELTA_KEYFRAME,
 * or when the sample's PW_SAMPLE_NO_ALLOCS flag changed. On success *out points to a message owned
 * by the encoder, valid until the next call on it, and the encoder's base becomes `s`. Returns 0;
 * PW_EINVAL when a row is invalid (pool type, a counter >= 2^width, diff != allocs - frees, the
 * same (tag, pool) twice, allocs/frees set on a PW_SAMPLE_NO_ALLOCS sample: `d` names the row);
 * PW_ESEQ when seq does not grow; PW_ETOOBIG / PW_ENOMEM. On failure the base is unchanged (tags
 * met in the sample may stay in the dictionary: harmless, they are sent with the next sample). */
int pw_delta_encode(pw_delta_enc_t *e, const pw_sample_t *s, unsigned flags,
                    const Poolwatch__V1__Sample **out, pw_diag_t *d);

/* ---- decoder ------------------------------------------------------------------------------- */

typedef struct pw_delta_result_s {
    uint32_t added;      /* rows that appeared */
    uint32_t changed;    /* rows updated by a difference */
    uint32_t resets;     /* rows whose counters went backwards (sent absolutely) */
    uint32_t vanished;   /* rows that disappeared */
    uint64_t gap_before; /* samples the agent dropped before this one (spool full) */
} pw_delta_result_t;

typedef struct pw_delta_dec_s {
    pw_tagdict_t dict;
    unsigned width;
    int have_base;
    uint64_t seq;          /* of the current table */
    uint64_t timestamp_ms; /* of the current table */
    uint32_t flags;        /* PW_SAMPLE_NO_ALLOCS of the current table */
    pw_totals_t totals;
    pw_row_t *rows; /* current table, sorted by key */
    size_t n;
    pw_row_t *scratch;
    size_t cap;    /* of both arrays */
    uint32_t *idx; /* fast path: row index of each change */
    size_t idx_cap;
    size_t n_idx; /* after an apply: the rows it changed are rows[idx[0 .. n_idx)] (a delta of
                     changes only, the common case), or SIZE_MAX when the table was rebuilt
                     (keyframe, rows added, reset or vanished): every row may have changed */
    size_t max_rows;
} pw_delta_dec_t;

/* Initialises a decoder for counters of `width_bits` (32 or 64) holding at most `max_rows`
 * rows (0 = PW_DELTA_MAX_ROWS). Returns 0 or PW_EINVAL. */
int pw_delta_dec_init(pw_delta_dec_t *dd, unsigned width_bits, size_t max_rows);

/* Frees everything. Accepts NULL. */
void pw_delta_dec_close(pw_delta_dec_t *dd);

/* Forgets the base (the dictionary stays): the next sample must be a keyframe. */
void pw_delta_dec_drop_base(pw_delta_dec_t *dd);

/* Applies `msg` (borrowed) to the decoder's table, all or nothing. Returns 0 and fills `res`
 * (may be NULL); on failure nothing changes (dictionary included) and `d` says what and
 * where: PW_ENOBASE (delta without the base it names: ask for a keyframe), PW_ESEQ (seq does
 * not follow the base), PW_EBADTAG (unknown tag id, or a definition that contradicts the
 * dictionary), PW_EBADFRAME (columns of unequal length, keys not increasing, a change for a
 * row not held, ...), PW_ETOOBIG (row or tag limit), PW_ENOMEM. */
int pw_delta_apply(pw_delta_dec_t *dd, const Poolwatch__V1__Sample *msg, pw_delta_result_t *res,
                   pw_diag_t *d);

/* The index of the first of rows[0..n) (sorted by key) whose key is >= `key`; n when none. */
size_t pw_rows_lower_bound(const pw_row_t *rows, size_t n, uint32_t key);

/* Looks up the row of (tag, pool) in the decoder's table; NULL when absent. Borrowed until
 * the next apply. */
const pw_row_t *pw_delta_dec_find(const pw_delta_dec_t *dd, const uint8_t *tag, size_t len,
                                  pw_pool_t pool);

/* Appends to `out` one frame holding a keyframe Sample of the decoder's table as it is (seq,
 * timestamp, totals, every row) with dict_reset and the whole dictionary, so that a fresh
 * decoder reading it ends in exactly this state and can take the deltas that followed it in
 * the original stream. `gap_before` is copied into the message. Returns 0, PW_EINVAL (no
 * base), PW_EFRAMETOOBIG (over max_payload), PW_ENOMEM. */
int pw_delta_dec_pack_keyframe(const pw_delta_dec_t *dd, uint64_t gap_before, size_t max_payload,
                               pw_buf_t *out);

/* Writes the decoder's table into `out` (entries with tag bytes; seq, timestamp, flags and
 * totals copied). Returns 0 or PW_ENOMEM. */
int pw_delta_dec_to_sample(const pw_delta_dec_t *dd, pw_sample_t *out);

#endif /* PW_DELTA_H */
