/* test_chunk.c: the store's chunk layouts (collector/store/chunk.h): records -> columns is lossless
 * (checked against an independent model of the tables), d_bytes departures are 0 for
 * one-size tags and exactly the non-proportional part otherwise, held bytes have their own
 * column holding exactly the model's steps, a chunk of the layout before held bytes (version 2)
 * still reads, and hostile blobs fail with PW_ECORRUPT, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc.h"
#include "chunk.h"
#include "codec.h"
#include "delta.h"

#define NROWS    6
#define NSAMPLES 30

/* The model: row i has allocs a[i], frees f[i], size per allocation; row 5 mixes sizes. */
typedef struct {
    uint64_t a[NROWS], f[NROWS], bytes[NROWS], held[NROWS];
    int no_held; /* a table without held bytes (chunks of version 2) */
} model_t;

static const char *tags[NROWS] = {"Ddk ", "Thre", "MmSt", "Proc", "File", "Mixd"};
static const uint64_t size[NROWS] = {64, 1024, 4096, 1376, 256, 0};

/* Sample k: rows change on a fixed pattern; row 5's bytes are not diff * a constant. */
static void model_step(model_t *m, unsigned k)
{
    for (int i = 0; i < NROWS; i++) {
        if (k == 0) {
            m->a[i] = 1000u * (unsigned)(i + 1);
            m->f[i] = 900u * (unsigned)(i + 1);
        } else if ((k + (unsigned)i) % 3 == 0) {
            m->a[i] += 7 + (unsigned)i;
            m->f[i] += (k % 2) ? 3 : 9 + (unsigned)i;
        }
        uint64_t diff = m->a[i] - m->f[i];
        m->bytes[i] = i == 5 ? diff * 100 + (k % 5) * 8 : diff * size[i];
        /* row 4 holds whole pages of its 256-byte objects, as a slab cache: 16 per page */
        m->held[i] = i == 4 && !m->no_held ? (diff + 15) / 16 * 4096 : 0;
    }
}

static void to_sample(const model_t *m, unsigned k, pw_sample_t *s)
{
    pw_sample_reset(s);
    s->seq = 100 + k;
    s->timestamp_ms = 1764400000000ull + 10000ull * k;
    s->totals.nonpaged_bytes = 50u << 20;
    for (int i = 0; i < NROWS; i++) {
        pw_sample_add(s, tags[i], 4, (pw_pool_t)(i % 2), m->a[i], m->f[i], m->a[i] - m->f[i],
                      m->bytes[i]);
        s->entries[s->n - 1].held_bytes = m->held[i];
    }
}

/* Layout-1 records of NSAMPLES samples (a keyframe, then deltas). */
static void build_records_held(pw_buf_t *recs, int no_held)
{
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    model_t m;
    memset(&m, 0, sizeof(m));
    m.no_held = no_held;
    pw_buf_t fr;
    pw_buf_init(&fr, 1u << 20);
    for (unsigned k = 0; k < NSAMPLES; k++) {
        model_step(&m, k);
        to_sample(&m, k, &s);
        const Poolwatch__V1__Sample *msg;
        pw_diag_t d;
        assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), 0);
        pw_buf_reset(&fr);
        assert_int_equal(pw_codec_pack_sample(msg, 1u << 20, &fr), 0);
        assert_int_equal(pw_chunk_put_record(recs, msg->seq, fr.data, fr.len), 0);
    }
    pw_buf_close(&fr);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
}

static void build_records(pw_buf_t *recs)
{
    build_records_held(recs, 0);
}

typedef struct {
    model_t m;
    unsigned k;
} check_t;

/* After each replayed sample, the decoder's table equals the model's sample k. */
static int check_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)d;
    check_t *c = arg;
    model_step(&c->m, c->k);
    assert_int_equal(seq, 100 + c->k);
    assert_int_equal(dd->timestamp_ms, 1764400000000ull + 10000ull * c->k);
    assert_int_equal(dd->totals.nonpaged_bytes, 50u << 20);
    assert_int_equal(dd->n, NROWS);
    for (int i = 0; i < NROWS; i++) {
        const pw_row_t *r = pw_delta_dec_find(dd, (const uint8_t *)tags[i], 4, (pw_pool_t)(i % 2));
        assert_non_null(r);
        assert_int_equal(r->allocs, c->m.a[i]);
        assert_int_equal(r->frees, c->m.f[i]);
        assert_int_equal(r->diff, c->m.a[i] - c->m.f[i]);
        assert_int_equal(r->bytes, c->m.bytes[i]);
        assert_int_equal(r->held_bytes, c->m.held[i]);
    }
    c->k++;
    return 0;
}

static void replay_check_held(int fmt, const pw_buf_t *b, int no_held)
{
    pw_delta_dec_t dd;
    assert_int_equal(pw_delta_dec_init(&dd, 32, 0), 0);
    check_t c;
    memset(&c, 0, sizeof(c));
    c.m.no_held = no_held;
    pw_diag_t d;
    int rc = pw_chunk_replay(fmt, b->data, b->len, &dd, check_cb, &c, &d);
    if (rc != 0)
        fail_msg("replay: %s", d.msg);
    assert_int_equal(c.k, NSAMPLES);
    pw_delta_dec_close(&dd);
}

static void replay_check(int fmt, const pw_buf_t *b)
{
    replay_check_held(fmt, b, 0);
}

static uint64_t rd_varint(const uint8_t *p, size_t *off)
{
    uint64_t v = 0;
    for (unsigned sh = 0;; sh += 7) {
        uint8_t c = p[(*off)++];
        v |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80))
            return v;
    }
}

static void test_roundtrip(void **state)
{
    (void)state;
    pw_buf_t recs, cols;
    pw_buf_init(&recs, 1u << 24);
    pw_buf_init(&cols, 1u << 24);
    build_records(&recs);
    replay_check(PW_CHUNK_RECORDS, &recs);
    pw_diag_t d;
    assert_int_equal(pw_chunk_pack(recs.data, recs.len, 32, &cols, &d), 0);
    replay_check(PW_CHUNK_COLUMNS, &cols);

    /* Header: version 3, 30 samples, then seven section lengths that add up to the rest. */
    size_t off = 1;
    assert_int_equal(cols.data[0], 3);
    assert_int_equal(rd_varint(cols.data, &off), NSAMPLES);
    uint64_t len[7], sum = 0;
    for (int i = 0; i < 7; i++)
        sum += len[i] = rd_varint(cols.data, &off);
    assert_int_equal(off + sum, cols.len);
    /* Changes, by the model: row i changes in sample k >= 1 when (k + i) % 3 == 0 and row 5's
     * bytes also change when k % 5 changes (every sample). Count them independently. */
    uint64_t nchg = 0;
    for (unsigned k = 1; k < NSAMPLES; k++)
        for (int i = 0; i < NROWS; i++)
            nchg += (k + (unsigned)i) % 3 == 0 || i == 5;
    /* Every value in the key_gap, d_allocs, d_diff and d_bytes columns fits one byte here. */
    assert_int_equal(len[2], nchg);
    assert_int_equal(len[3], nchg);
    assert_int_equal(len[4], nchg);
    assert_int_equal(len[5], nchg);
    /* d_bytes departures: 0 for one-size rows; for row 5, bytes - 100 * diff moves by 8 per
     * sample (k % 5), so its departure is the change of (k % 5) * 8, zigzagged. */
    const uint8_t *db = cols.data + off + len[0] + len[1] + len[2] + len[3] + len[4];
    size_t j = 0;
    for (unsigned k = 1; k < NSAMPLES; k++)
        for (int i = 0; i < NROWS; i++) {
            if (!((k + (unsigned)i) % 3 == 0 || i == 5))
                continue;
            int64_t want = 0;
            if (i == 5) {
                /* row 5 in sample k-1 had per-alloc exactly 100 plus (k-1)%5*8/diff < 1 when
                 * diff > 40, so the prediction is d_diff * 100 and the departure is the step
                 * of the extra term. */
                want = (int64_t)((k % 5) * 8) - (int64_t)(((k - 1) % 5) * 8);
            }
            uint64_t z = want >= 0 ? (uint64_t)want * 2 : (uint64_t)(-want) * 2 - 1;
            assert_int_equal(db[j], z);
            j++;
        }
    /* d_held_bytes: a sample's changed rows carry the column when row 4's held bytes moved
     * (in a sample where row 4 changes: k % 3 == 2, and its diff crossed a multiple of 16),
     * one value per changed row in key order (row index order here), 0 for the others. */
    const uint8_t *dh = db + len[5];
    size_t hoff = 0;
    model_t mm;
    memset(&mm, 0, sizeof(mm));
    model_step(&mm, 0);
    for (unsigned k = 1; k < NSAMPLES; k++) {
        uint64_t before = mm.held[4];
        model_step(&mm, k);
        if (mm.held[4] == before)
            continue;
        for (int i = 0; i < NROWS; i++) {
            if (!((k + (unsigned)i) % 3 == 0 || i == 5))
                continue;
            int64_t want = i == 4 ? (int64_t)(mm.held[4] - before) : 0;
            uint64_t z = want >= 0 ? (uint64_t)want * 2 : (uint64_t)(-want) * 2 - 1;
            assert_int_equal(rd_varint(dh, &hoff), z);
        }
    }
    assert_true(hoff > 0); /* the model moves row 4 across pages */
    assert_int_equal(hoff, len[6]);
    pw_buf_close(&recs);
    pw_buf_close(&cols);
}

static void put_varint(pw_buf_t *b, uint64_t v)
{
    assert_int_equal(pw_buf_put_varint(b, v), 0);
}

/* A chunk closed before held bytes (version 2: six sections, counts n << 2 | has_allocs << 1 |
 * has_changes) still reads. Built from a version-3 chunk of a table without held bytes, whose
 * d_held_bytes section is empty: the same sections, the counts rewritten. */
static void test_reads_version_2(void **state)
{
    (void)state;
    pw_buf_t recs, cols, v2;
    pw_buf_init(&recs, 1u << 24);
    pw_buf_init(&cols, 1u << 24);
    pw_buf_init(&v2, 1u << 24);
    build_records_held(&recs, 1);
    pw_diag_t d;
    assert_int_equal(pw_chunk_pack(recs.data, recs.len, 32, &cols, &d), 0);
    size_t off = 1;
    assert_int_equal(cols.data[0], 3);
    uint64_t nrec = rd_varint(cols.data, &off), len[7];
    for (int i = 0; i < 7; i++)
        len[i] = rd_varint(cols.data, &off);
    assert_int_equal(len[6], 0);
    const uint8_t *sec = cols.data + off;
    pw_buf_t cnt;
    pw_buf_init(&cnt, 1u << 20);
    size_t co = 0;
    const uint8_t *counts = sec + len[0];
    for (uint64_t r = 0; r < nrec; r++) {
        uint64_t c = rd_varint(counts, &co);
        assert_int_equal(c >> 2 & 1, 0); /* no held bytes */
        put_varint(&cnt, (c >> 3) << 2 | (c & 3));
    }
    assert_int_equal(co, len[1]);
    uint8_t ver = 2;
    assert_int_equal(pw_buf_append(&v2, &ver, 1), 0);
    put_varint(&v2, nrec);
    put_varint(&v2, len[0]);
    put_varint(&v2, cnt.len);
    for (int i = 2; i < 6; i++)
        put_varint(&v2, len[i]);
    assert_int_equal(pw_buf_append(&v2, sec, len[0]), 0);
    assert_int_equal(pw_buf_append(&v2, cnt.data, cnt.len), 0);
    assert_int_equal(pw_buf_append(&v2, counts + len[1], len[2] + len[3] + len[4] + len[5]), 0);
    replay_check_held(PW_CHUNK_COLUMNS, &v2, 1);
    /* A version-2 chunk has no seventh section: one more byte at the end is refused. */
    uint8_t z = 0;
    assert_int_equal(pw_buf_append(&v2, &z, 1), 0);
    pw_delta_dec_t dd;
    assert_int_equal(pw_delta_dec_init(&dd, 32, 0), 0);
    assert_int_equal(pw_chunk_replay(PW_CHUNK_COLUMNS, v2.data, v2.len, &dd, NULL, NULL, &d),
                     PW_ECORRUPT);
    pw_delta_dec_close(&dd);
    pw_buf_close(&cnt);
    pw_buf_close(&v2);
    pw_buf_close(&recs);
    pw_buf_close(&cols);
}

/* Every truncation and every single-byte change of a packed chunk: an error or a clean
 * replay, never a crash (ASan/UBSan watch). Truncations must all be errors. */
static int count_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)dd, (void)seq, (void)d;
    (*(unsigned *)arg)++;
    return 0;
}

static void test_hostile(void **state)
{
    (void)state;
    pw_buf_t recs, cols;
    pw_buf_init(&recs, 1u << 24);
    pw_buf_init(&cols, 1u << 24);
    build_records(&recs);
    pw_diag_t d;
    assert_int_equal(pw_chunk_pack(recs.data, recs.len, 32, &cols, &d), 0);
    uint8_t *copy = pw_malloc(cols.len);
    for (size_t n = 0; n < cols.len; n++) {
        pw_delta_dec_t dd;
        assert_int_equal(pw_delta_dec_init(&dd, 32, 0), 0);
        unsigned got = 0;
        assert_int_equal(pw_chunk_replay(PW_CHUNK_COLUMNS, cols.data, n, &dd, count_cb, &got, &d),
                         PW_ECORRUPT);
        pw_delta_dec_close(&dd);
    }
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < cols.len; i++)
        for (size_t f = 0; f < sizeof(flips); f++) {
            memcpy(copy, cols.data, cols.len);
            copy[i] ^= flips[f];
            pw_delta_dec_t dd;
            assert_int_equal(pw_delta_dec_init(&dd, 32, 0), 0);
            unsigned got = 0;
            int rc = pw_chunk_replay(PW_CHUNK_COLUMNS, copy, cols.len, &dd, count_cb, &got, &d);
            assert_true(rc == 0 || rc == PW_ECORRUPT);
            pw_delta_dec_close(&dd);
        }
    /* Records: a truncated one is named with its offset. */
    pw_delta_dec_t dd;
    assert_int_equal(pw_delta_dec_init(&dd, 32, 0), 0);
    assert_int_equal(
        pw_chunk_replay(PW_CHUNK_RECORDS, recs.data, recs.len - 1, &dd, NULL, NULL, &d),
        PW_ECORRUPT);
    assert_non_null(strstr(d.msg, "truncated"));
    pw_delta_dec_close(&dd);
    assert_int_equal(pw_chunk_replay(7, recs.data, recs.len, &dd, NULL, NULL, &d), PW_EINVAL);
    /* Packing refuses records that do not form a chain: the deltas without their keyframe. */
    size_t off = 0;
    uint64_t seq = rd_varint(recs.data, &off);
    (void)seq;
    uint32_t fl = (uint32_t)recs.data[off] << 24 | (uint32_t)recs.data[off + 1] << 16 |
                  (uint32_t)recs.data[off + 2] << 8 | recs.data[off + 3];
    off += 4 + fl;
    assert_int_equal(pw_chunk_pack(recs.data + off, recs.len - off, 32, &cols, &d), PW_ECORRUPT);
    pw_free(copy);
    pw_buf_close(&recs);
    pw_buf_close(&cols);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_reads_version_2),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
