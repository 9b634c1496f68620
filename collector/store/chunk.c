/* chunk.c: a chunk's samples as records (layout 1) or columns (layout 2); see chunk.h. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "chunk.h"
#include "codec.h"

#define NSECT        7 /* sections of version 3; version 2 has the first 6 */
#define CHUNK_VER    3
#define CHUNK_VER_V2 2 /* before held bytes: still read */

enum { SEC_REC, SEC_CNT, SEC_KEY, SEC_ALLOCS, SEC_DIFF, SEC_BYTES, SEC_HELD };

/* The row of `key` in the table (sorted by key), searching from *lo; NULL when absent. Keys of
 * one Changes increase, so *lo only moves forward. */
static const pw_row_t *find_row(const pw_delta_dec_t *dd, uint32_t key, size_t *lo)
{
    if (dd->rows == NULL) /* an empty table: NULL + 0 is undefined (clang's UBSan) */
        return NULL;
    size_t a = *lo + pw_rows_lower_bound(dd->rows + *lo, dd->n - *lo, key);
    *lo = a;
    return a < dd->n && dd->rows[a].key == key ? &dd->rows[a] : NULL;
}

/* d_diff times the per-alloc size `bytes` / `diff` of the row before the change (0 when
 * unknown or on overflow): what d_bytes is when every allocation of the tag has one size. */
static uint64_t predict_of(uint64_t bytes, uint64_t diff, int64_t d_diff)
{
    if (diff == 0)
        return 0;
    uint64_t per = bytes / diff;
    int64_t p;
    if (per > (uint64_t)INT64_MAX || __builtin_mul_overflow(d_diff, (int64_t)per, &p))
        return 0;
    return (uint64_t)p;
}

static uint64_t predict(const pw_row_t *row, int64_t d_diff)
{
    return row == NULL ? 0 : predict_of(row->bytes, row->diff, d_diff);
}

int pw_chunk_put_record(pw_buf_t *out, uint64_t seq, const uint8_t *frame, size_t frame_len)
{
    size_t mark = out->len;
    int rc = pw_buf_put_varint(out, seq);
    rc = rc ? rc : pw_buf_append(out, frame, frame_len);
    if (rc != 0)
        out->len = mark;
    return rc;
}

/* Reads the layout-1 record at *off: seq and the frame payload. */
static int next_record(const uint8_t *p, size_t len, size_t *off, uint64_t *seq,
                       const uint8_t **payload, size_t *plen, pw_diag_t *d)
{
    size_t at = *off;
    if (pw_varint_get(p, len, off, seq) != 0 || len - *off < 4)
        return pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record truncated");
    uint32_t fl = (uint32_t)p[*off] << 24 | (uint32_t)p[*off + 1] << 16 |
                  (uint32_t)p[*off + 2] << 8 | p[*off + 3];
    *off += 4;
    if (fl > len - *off)
        return pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record truncated");
    *payload = p + *off;
    *plen = fl;
    *off += fl;
    return 0;
}

/* Unpacks a payload that must hold a Sample. */
static int unpack_sample(const uint8_t *p, size_t n, Poolwatch__V1__Envelope **env, size_t at,
                         pw_diag_t *d)
{
    int rc = pw_codec_unpack(p, n, env, d);
    if (rc == 0 && (*env)->msg_case != POOLWATCH__V1__ENVELOPE__MSG_SAMPLE) {
        pw_codec_free(*env);
        *env = NULL;
        rc = PW_EBADFRAME;
    }
    if (rc != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record does not decode: %s",
                           pw_strerror(rc));
    return 0;
}

/* Reads the layout-1 record at *off and unpacks its Sample. */
static int read_sample(const uint8_t *p, size_t len, size_t *off, uint64_t *seq,
                       Poolwatch__V1__Envelope **env, pw_diag_t *d)
{
    size_t at = *off;
    const uint8_t *pl = NULL;
    size_t pn = 0;
    int rc = next_record(p, len, off, seq, &pl, &pn, d);
    return rc ? rc : unpack_sample(pl, pn, env, at, d);
}

static int replay_records(const uint8_t *p, size_t len, pw_delta_dec_t *dd, pw_chunk_cb cb,
                          void *arg, pw_diag_t *d)
{
    size_t off = 0;
    int rc = 0;
    while (rc == 0 && off < len) {
        size_t at = off;
        uint64_t seq;
        Poolwatch__V1__Envelope *env = NULL;
        if ((rc = read_sample(p, len, &off, &seq, &env, d)) != 0)
            break;
        rc = pw_delta_apply(dd, env->sample, NULL, d);
        pw_codec_free(env);
        if (rc != 0)
            return pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record does not apply: %s",
                               pw_strerror(rc));
        if (cb != NULL)
            rc = cb(arg, dd, seq, d);
    }
    return rc > 0 ? 0 : rc;
}

/* Packs `env` into `out` (reset first) without the unknown fields protobuf-c kept: the
 * decoder ignores them, and protobuf-c does not re-encode every tag it accepted (a tag number
 * past 2^29 comes back as field 0, which no reader accepts: found by fuzz_chunk). */
static int pack_known(Poolwatch__V1__Envelope *env, pw_buf_t *out)
{
    Poolwatch__V1__Sample *s = env->sample;
    ProtobufCMessage *m[4] = {&env->base, &s->base, s->totals ? &s->totals->base : NULL,
                              s->rows ? &s->rows->base : NULL};
    size_t keep[4];
    for (int i = 0; i < 4; i++)
        if (m[i] != NULL) {
            keep[i] = m[i]->n_unknown_fields;
            m[i]->n_unknown_fields = 0;
        }
    size_t *kd = pw_malloc((s->n_dict + 1) * sizeof(*kd));
    if (kd == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < s->n_dict; i++) {
        kd[i] = s->dict[i]->base.n_unknown_fields;
        s->dict[i]->base.n_unknown_fields = 0;
    }
    pw_buf_reset(out);
    int rc = pw_codec_pack_frame(env, UINT32_MAX, out);
    for (size_t i = 0; i < s->n_dict; i++)
        s->dict[i]->base.n_unknown_fields = kd[i];
    for (int i = 0; i < 4; i++)
        if (m[i] != NULL)
            m[i]->n_unknown_fields = keep[i];
    pw_free(kd);
    return rc;
}

int pw_chunk_pack(const uint8_t *recs, size_t len, unsigned width_bits, pw_buf_t *out, pw_diag_t *d)
{
    pw_delta_dec_t dd;
    if (pw_delta_dec_init(&dd, width_bits, 0) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "counter_width", "chunk counter width %u",
                           width_bits);
    pw_buf_t sec[NSECT];
    for (int i = 0; i < NSECT; i++)
        pw_buf_init(&sec[i], out->max);
    pw_buf_t frame;
    pw_buf_init(&frame, out->max);
    uint64_t nrec = 0, prev_seq = 0;
    size_t off = 0;
    int rc = 0;
    while (rc == 0 && off < len) {
        size_t at = off;
        uint64_t seq;
        Poolwatch__V1__Envelope *env = NULL;
        if ((rc = read_sample(recs, len, &off, &seq, &env, d)) != 0)
            break;
        Poolwatch__V1__Sample *s = env->sample;
        Poolwatch__V1__Changes *ch = s->changes;
        size_t n = ch ? ch->n_key_gap : 0;
        int has_allocs = ch != NULL && ch->n_d_allocs > 0;
        int has_held = ch != NULL && ch->n_d_held_bytes > 0;
        if (ch != NULL && (ch->n_d_diff != n || ch->n_d_bytes != n ||
                           (ch->n_d_allocs != 0 && ch->n_d_allocs != n) ||
                           (ch->n_d_held_bytes != 0 && ch->n_d_held_bytes != n)))
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "changes", "columns of unequal length");
        /* Predictions use the table before this sample. A delta of changes only is applied
         * first: its changed rows are then rows[idx[i]] (no search), their values before it
         * the new ones less the changes. Any other sample: predictions, then the apply. */
        int after = rc == 0 && n > 0 && !s->keyframe && s->n_vanished_gap == 0 &&
                    (s->rows == NULL || s->rows->n_key_gap == 0);
        if (after && (rc = pw_delta_apply(&dd, s, NULL, d)) != 0)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record does not apply: %s",
                             pw_strerror(rc));
        if (rc == 0 && after && dd.n_idx != n)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record: %zu changes, %zu rows",
                             n, dd.n_idx);
        uint64_t m = dd.width >= 64 ? UINT64_MAX : (1ull << dd.width) - 1;
        uint32_t key = 0;
        size_t lo = 0;
        rc = rc ? rc
                : pw_chunk_put_varint(&sec[SEC_CNT], (uint64_t)n << 3 | (uint64_t)has_held << 2 |
                                                         (uint64_t)has_allocs << 1 | (ch != NULL));
        for (size_t i = 0; rc == 0 && i < n; i++) {
            uint64_t pred;
            if (after) {
                const pw_row_t *row = &dd.rows[dd.idx[i]];
                pred = predict_of(row->bytes - (uint64_t)ch->d_bytes[i],
                                  (row->diff - (uint64_t)ch->d_diff[i]) & m, ch->d_diff[i]);
            } else {
                key = i == 0 ? ch->key_gap[0] : key + ch->key_gap[i];
                pred = predict(find_row(&dd, key, &lo), ch->d_diff[i]);
            }
            rc = pw_chunk_put_varint(&sec[SEC_KEY], ch->key_gap[i]);
            if (rc == 0 && has_allocs)
                rc = pw_chunk_put_varint(&sec[SEC_ALLOCS], pw_zigzag((uint64_t)ch->d_allocs[i]));
            rc = rc ? rc : pw_chunk_put_varint(&sec[SEC_DIFF], pw_zigzag((uint64_t)ch->d_diff[i]));
            rc = rc ? rc
                    : pw_chunk_put_varint(&sec[SEC_BYTES],
                                          pw_zigzag((uint64_t)ch->d_bytes[i] - pred));
            if (rc == 0 && has_held)
                rc = pw_chunk_put_varint(&sec[SEC_HELD], pw_zigzag((uint64_t)ch->d_held_bytes[i]));
        }
        if (rc == 0 && !after && (rc = pw_delta_apply(&dd, s, NULL, d)) != 0)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "record", "chunk record does not apply: %s",
                             pw_strerror(rc));
        if (rc == 0) {
            s->changes = NULL;
            rc = pack_known(env, &frame);
            s->changes = ch;
        }
        pw_codec_free(env);
        rc = rc ? rc : pw_buf_put_varint(&sec[SEC_REC], pw_zigzag(seq - prev_seq));
        rc = rc ? rc : pw_buf_put_varint(&sec[SEC_REC], frame.len - 4);
        rc = rc ? rc : pw_buf_append(&sec[SEC_REC], frame.data + 4, frame.len - 4);
        prev_seq = seq;
        nrec++;
    }
    pw_buf_reset(out);
    uint8_t ver = CHUNK_VER;
    rc = rc ? rc : pw_buf_append(out, &ver, 1);
    rc = rc ? rc : pw_buf_put_varint(out, nrec);
    for (int i = 0; rc == 0 && i < NSECT; i++)
        rc = pw_buf_put_varint(out, sec[i].len);
    for (int i = 0; rc == 0 && i < NSECT; i++)
        rc = pw_buf_append(out, sec[i].data, sec[i].len);
    if (rc == PW_ENOMEM || rc == PW_ETOOBIG || rc == PW_EFRAMETOOBIG)
        rc = pw_diag_set(d, rc, 0, off, "chunk", "cannot hold the packed chunk: %s",
                         pw_strerror(rc));
    for (int i = 0; i < NSECT; i++)
        pw_buf_close(&sec[i]);
    pw_buf_close(&frame);
    pw_delta_dec_close(&dd);
    return rc;
}

typedef struct {
    const uint8_t *p;
    size_t len, off, base; /* base: offset of the section in the blob, for messages */
} sec_t;

static int sec_varint(sec_t *s, uint64_t *v, const char *name, pw_diag_t *d)
{
    size_t at = s->off;
    if (pw_varint_get(s->p, s->len, &s->off, v) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, s->base + at, name, "%s column truncated", name);
    return 0;
}

/* Scratch columns of one sample's Changes. */
typedef struct {
    uint32_t *key_gap;
    int64_t *d_allocs, *d_diff, *d_bytes, *d_held;
    size_t cap;
} cols_t;

static int cols_reserve(cols_t *c, size_t n)
{
    if (n <= c->cap)
        return 0;
    size_t nc = c->cap ? c->cap : 256;
    while (nc < n)
        nc *= 2;
    uint32_t *k = pw_realloc(c->key_gap, nc * sizeof(*k));
    if (k == NULL)
        return PW_ENOMEM;
    c->key_gap = k;
    int64_t **cols[4] = {&c->d_allocs, &c->d_diff, &c->d_bytes, &c->d_held};
    for (int i = 0; i < 4; i++) {
        int64_t *x = pw_realloc(*cols[i], nc * sizeof(int64_t));
        if (x == NULL)
            return PW_ENOMEM;
        *cols[i] = x;
    }
    c->cap = nc;
    return 0;
}

static int replay_columns(const uint8_t *p, size_t len, pw_delta_dec_t *dd, pw_chunk_cb cb,
                          void *arg, pw_diag_t *d)
{
    static const char *names[NSECT] = {"records", "counts",  "key_gap",     "d_allocs",
                                       "d_diff",  "d_bytes", "d_held_bytes"};
    size_t off = 1;
    uint64_t nrec, sl[NSECT] = {0};
    if (len < 1 || (p[0] != CHUNK_VER && p[0] != CHUNK_VER_V2))
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "chunk",
                           "chunk layout version %d, expected %d or %d", len ? p[0] : -1,
                           CHUNK_VER_V2, CHUNK_VER);
    /* Version 2 (before held bytes): six sections, counts n << 2 | has_allocs | has_changes. */
    int nsect = p[0] == CHUNK_VER_V2 ? NSECT - 1 : NSECT;
    unsigned cnt_shift = p[0] == CHUNK_VER_V2 ? 2 : 3;
    if (pw_varint_get(p, len, &off, &nrec) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "chunk", "chunk header truncated");
    for (int i = 0; i < nsect; i++)
        if (pw_varint_get(p, len, &off, &sl[i]) != 0)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "chunk", "chunk header truncated");
    sec_t s[NSECT];
    for (int i = 0; i < NSECT; i++) {
        if (sl[i] > len - off)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, names[i],
                               "%s section of %llu bytes past the end of the chunk", names[i],
                               (unsigned long long)sl[i]);
        s[i] = (sec_t){p + off, (size_t)sl[i], 0, off};
        off += (size_t)sl[i];
    }
    if (off != len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "chunk", "%zu bytes after the last section",
                           len - off);
    cols_t c = {0};
    uint64_t seq = 0;
    int rc = 0;
    for (uint64_t r = 0; rc == 0 && r < nrec; r++) {
        sec_t *rs = &s[SEC_REC];
        size_t at = rs->base + rs->off;
        uint64_t dseq, fl, cw;
        rc = sec_varint(rs, &dseq, "records", d);
        rc = rc ? rc : sec_varint(rs, &fl, "records", d);
        if (rc == 0 && fl > rs->len - rs->off)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "records", "sample %llu truncated",
                             (unsigned long long)r);
        if (rc != 0)
            break;
        const uint8_t *frame = rs->p + rs->off;
        rs->off += (size_t)fl;
        seq += pw_unzigzag(dseq);
        rc = sec_varint(&s[SEC_CNT], &cw, "counts", d);
        if (rc != 0)
            break;
        uint64_t n = cw >> cnt_shift;
        int has_allocs = (int)(cw >> 1 & 1), has_changes = (int)(cw & 1);
        int has_held = cnt_shift == 3 && (cw >> 2 & 1);
        if (n > PW_DELTA_MAX_ROWS || (!has_changes && (n != 0 || has_allocs || has_held))) {
            rc = pw_diag_set(d, PW_ECORRUPT, 0, s[SEC_CNT].base + s[SEC_CNT].off, "counts",
                             "sample %llu: invalid change count %llu", (unsigned long long)r,
                             (unsigned long long)n);
            break;
        }
        if ((rc = cols_reserve(&c, (size_t)n)) != 0) {
            rc = pw_diag_set(d, rc, 0, at, "chunk", "out of memory");
            break;
        }
        Poolwatch__V1__Envelope *env = NULL;
        if ((rc = unpack_sample(frame, (size_t)fl, &env, at, d)) != 0)
            break;
        Poolwatch__V1__Sample *smp = env->sample;
        if (smp->changes != NULL)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "records",
                             "sample %llu carries its changes inline", (unsigned long long)r);
        uint64_t key = 0;
        size_t lo = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            uint64_t g, a = 0, df, b, hb = 0;
            rc = sec_varint(&s[SEC_KEY], &g, "key_gap", d);
            if (rc == 0 && has_allocs)
                rc = sec_varint(&s[SEC_ALLOCS], &a, "d_allocs", d);
            rc = rc ? rc : sec_varint(&s[SEC_DIFF], &df, "d_diff", d);
            rc = rc ? rc : sec_varint(&s[SEC_BYTES], &b, "d_bytes", d);
            if (rc == 0 && has_held)
                rc = sec_varint(&s[SEC_HELD], &hb, "d_held_bytes", d);
            if (rc != 0)
                break;
            key = i == 0 ? g : key + g;
            if (g > UINT32_MAX || key > UINT32_MAX) {
                rc = pw_diag_set(d, PW_ECORRUPT, 0, s[SEC_KEY].base + s[SEC_KEY].off, "key_gap",
                                 "sample %llu: row key out of range", (unsigned long long)r);
                break;
            }
            c.key_gap[i] = (uint32_t)g;
            c.d_allocs[i] = (int64_t)pw_unzigzag(a);
            c.d_held[i] = (int64_t)pw_unzigzag(hb);
            c.d_diff[i] = (int64_t)pw_unzigzag(df);
            c.d_bytes[i] =
                (int64_t)(pw_unzigzag(b) + predict(find_row(dd, (uint32_t)key, &lo), c.d_diff[i]));
        }
        Poolwatch__V1__Changes ch = POOLWATCH__V1__CHANGES__INIT;
        if (rc == 0 && has_changes) {
            ch.n_key_gap = ch.n_d_diff = ch.n_d_bytes = (size_t)n;
            ch.n_d_allocs = has_allocs ? (size_t)n : 0;
            ch.key_gap = c.key_gap;
            ch.d_allocs = c.d_allocs;
            ch.d_diff = c.d_diff;
            ch.d_bytes = c.d_bytes;
            ch.n_d_held_bytes = has_held ? (size_t)n : 0;
            ch.d_held_bytes = c.d_held;
            smp->changes = &ch;
        }
        if (rc == 0 && (rc = pw_delta_apply(dd, smp, NULL, d)) != 0)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, at, "records", "sample %llu does not apply: %s",
                             (unsigned long long)r, pw_strerror(rc));
        if (smp->changes == &ch)
            smp->changes = NULL; /* ours, not protobuf-c's to free */
        pw_codec_free(env);
        if (rc == 0 && cb != NULL)
            rc = cb(arg, dd, seq, d);
    }
    for (int i = 0; rc == 0 && i < NSECT; i++)
        if (s[i].off != s[i].len)
            rc = pw_diag_set(d, PW_ECORRUPT, 0, s[i].base + s[i].off, names[i],
                             "%zu bytes left in the %s section", s[i].len - s[i].off, names[i]);
    pw_free(c.key_gap);
    pw_free(c.d_allocs);
    pw_free(c.d_diff);
    pw_free(c.d_bytes);
    pw_free(c.d_held);
    return rc > 0 ? 0 : rc;
}

int pw_chunk_replay(int fmt, const uint8_t *p, size_t len, pw_delta_dec_t *dd, pw_chunk_cb cb,
                    void *arg, pw_diag_t *d)
{
    if (fmt == PW_CHUNK_RECORDS)
        return replay_records(p, len, dd, cb, arg, d);
    if (fmt == PW_CHUNK_COLUMNS)
        return replay_columns(p, len, dd, cb, arg, d);
    return pw_diag_set(d, PW_EINVAL, 0, 0, "chunk", "unknown chunk layout %d", fmt);
}
