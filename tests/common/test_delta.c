/* test_delta.c: keyframe/delta codec, counter wrap and reset, wrong bases. */
#include "test_util.h"
#include "alloc.h"
#include "codec.h"
#include "delta.h"
#include "frame.h"
#include "poolwatch_before_held.pb-c.h"

/* ---- counter wrap/reset table (collectd common_test.c style) -------------------------------- */

static void test_delta_counter_wrap_and_reset_table(void **state)
{
    (void)state;
    static const struct {
        uint64_t prev, cur;
        unsigned width;
        int rc;
        uint64_t want;
    } rows[] = {
        {0, 0, 32, 0, 0},                                     /* first sample: no move */
        {100, 150, 32, 0, 50},                                /* ordinary move */
        {0xFFFFFFFFull, 0, 32, 0, 1},                         /* wrap by 1 */
        {0xFFFFFFF0ull, 0x10, 32, 0, 0x20},                   /* small wrap */
        {0xC0000000ull, 0x40000000ull, 32, 0, 0x80000000ull}, /* wrap by 2^31: still a wrap */
        /* 2^31 + 1 forward is more than half the range: it reads as a step back of
         * 2^31 - 1, a reset. */
        {0xC0000000ull, 0x40000001ull, 32, PW_ERESET, 0},
        {1000000, 10, 32, PW_ERESET, 0},                  /* reset: backwards */
        {0x80000000ull, 0x7FFFFFFFull, 32, PW_ERESET, 0}, /* one step back */
        {5, 4, 64, PW_ERESET, 0},                         /* 64-bit never wraps */
        {UINT64_MAX - 1, UINT64_MAX, 64, 0, 1},
        {1, 2, 16, PW_EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint64_t out = 12345;
        int rc = pw_counter_delta(rows[i].prev, rows[i].cur, rows[i].width, &out);
        int want_rc = rows[i].rc;
        if (rc != want_rc)
            fail_msg("row %zu: rc %d, want %d", i, rc, want_rc);
        if (rc == 0 && out != rows[i].want)
            fail_msg("row %zu: delta %llu, want %llu", i, (unsigned long long)out,
                     (unsigned long long)rows[i].want);
        if (rc != 0)
            assert_int_equal(out, 12345); /* untouched on failure */
    }
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

typedef struct {
    pw_delta_enc_t enc;
    pw_delta_dec_t dec;
    pw_buf_t wire;
} pair_t;

static void pair_init(pair_t *p, unsigned width)
{
    assert_int_equal(pw_delta_enc_init(&p->enc, width), 0);
    assert_int_equal(pw_delta_dec_init(&p->dec, width, 0), 0);
    pw_buf_init(&p->wire, 64u << 20);
}

static void pair_close(pair_t *p)
{
    pw_delta_enc_close(&p->enc);
    pw_delta_dec_close(&p->dec);
    pw_buf_close(&p->wire);
}

/* Encodes, frames, unframes, unpacks and applies one sample: the full wire path. */
static int roundtrip(pair_t *p, const pw_sample_t *s, unsigned flags, pw_delta_result_t *res,
                     Poolwatch__V1__Sample **keep)
{
    const Poolwatch__V1__Sample *msg;
    pw_diag_t d;
    int r = pw_delta_encode(&p->enc, s, flags, &msg, &d);
    if (r != 0)
        fail_msg("encode: %s (%s)", pw_strerror(r), d.msg);
    pw_buf_reset(&p->wire);
    assert_int_equal(pw_codec_pack_sample(msg, 64u << 20, &p->wire), 0);
    const uint8_t *payload;
    size_t plen;
    int64_t used = pw_frame_parse(p->wire.data, p->wire.len, 64u << 20, &payload, &plen, NULL);
    assert_int_equal(used, (int64_t)p->wire.len);
    Poolwatch__V1__Envelope *env;
    assert_int_equal(pw_codec_unpack(payload, plen, &env, NULL), 0);
    assert_int_equal(env->msg_case, POOLWATCH__V1__ENVELOPE__MSG_SAMPLE);
    r = pw_delta_apply(&p->dec, env->sample, res, &d);
    if (keep != NULL && r == 0) {
        *keep = env->sample; /* caller frees via the envelope: detach it */
        env->sample = NULL;
        env->msg_case = POOLWATCH__V1__ENVELOPE__MSG__NOT_SET;
    }
    pw_codec_free(env);
    return r;
}

static void assert_table_equals(const pw_delta_dec_t *dec, const pw_sample_t *s)
{
    assert_int_equal(dec->n, s->n);
    assert_int_equal(dec->seq, s->seq);
    assert_int_equal(dec->timestamp_ms, s->timestamp_ms);
    assert_memory_equal(&dec->totals, &s->totals, sizeof(s->totals));
    for (size_t i = 0; i < s->n; i++) {
        const pw_entry_t *e = &s->entries[i];
        const pw_row_t *row = pw_delta_dec_find(dec, e->tag, e->tag_len, (pw_pool_t)e->pool);
        if (row == NULL)
            fail_msg("seq %llu: entry %zu missing", (unsigned long long)s->seq, i);
        if (row->held_bytes != e->held_bytes)
            fail_msg("seq %llu entry %zu: held_bytes %llu, want %llu", (unsigned long long)s->seq,
                     i, (unsigned long long)row->held_bytes, (unsigned long long)e->held_bytes);
        if (row->allocs != e->allocs || row->frees != e->frees || row->diff != e->diff ||
            row->bytes != e->bytes)
            fail_msg("seq %llu entry %zu: got %llu/%llu/%llu/%llu want %llu/%llu/%llu/%llu",
                     (unsigned long long)s->seq, i, (unsigned long long)row->allocs,
                     (unsigned long long)row->frees, (unsigned long long)row->diff,
                     (unsigned long long)row->bytes, (unsigned long long)e->allocs,
                     (unsigned long long)e->frees, (unsigned long long)e->diff,
                     (unsigned long long)e->bytes);
    }
}

/* ---- the seeded random walk --------------------------------------------------------------------
 */

#define WALK_TAGS    3600 /* tag universe; about 3,000 present at any time */
#define WALK_SAMPLES 10000

typedef struct {
    uint8_t tag[4];
    int present[2];
    uint64_t allocs[2], frees[2], bytes[2];
} walk_tag_t;

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64: a fixed seed makes every run the same walk. */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void test_delta_random_walk_roundtrips_exactly(void **state)
{
    (void)state;
    rng_state = 20261129;
    walk_tag_t *tags = calloc(WALK_TAGS, sizeof(*tags));
    assert_non_null(tags);
    for (int i = 0; i < WALK_TAGS; i++) {
        /* Raw bytes: spaces, NUL and bytes >= 0x80 must survive; uniqueness by index. */
        tags[i].tag[0] = (uint8_t)(i & 0xff);
        tags[i].tag[1] = (uint8_t)(i >> 8);
        tags[i].tag[2] = (uint8_t)(i % 3 == 0 ? ' ' : (i % 3 == 1 ? 0 : 0x80 + i % 100));
        tags[i].tag[3] = ' ';
        for (int p = 0; p < 2; p++) {
            tags[i].present[p] = (rnd() % 100) < (p ? 70 : 45);
            /* Start some counters just below 2^32 so they wrap during the walk. */
            uint64_t start = (i % 17 == 0) ? 0xFFFFFFFFull - rnd() % 5000 : rnd() % 5000000;
            tags[i].allocs[p] = start;
            uint64_t out = rnd() % 1000;
            tags[i].frees[p] = (start - out) & 0xFFFFFFFFull;
            tags[i].bytes[p] = out * (16 + rnd() % 4000);
        }
    }
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t resets_made = 0, resets_seen = 0, wraps = 0, vanishes = 0, appears = 0;
    size_t min_rows = SIZE_MAX;
    for (int k = 0; k < WALK_SAMPLES; k++) {
        pw_sample_reset(&s);
        s.seq = 1000 + (uint64_t)k;
        s.timestamp_ms = 1764400000000ull + (uint64_t)k * 10000;
        s.totals.nonpaged_bytes = rnd();
        s.totals.paged_bytes = (uint64_t)k * 4096;
        s.totals.nonpaged_limit_bytes = 128ull << 20;
        int reset_now = k > 0 && k % 997 == 0;
        for (int i = 0; i < WALK_TAGS; i++) {
            walk_tag_t *t = &tags[i];
            for (int pool = 0; pool < 2; pool++) {
                uint64_t r = rnd() % 1000;
                int was_present = t->present[pool];
                if (k > 0 && k % 3 != 0 && r < 3) { /* vanish or appear */
                    t->present[pool] = !t->present[pool];
                    if (t->present[pool])
                        appears++;
                    else
                        vanishes++;
                } else if (k > 0 && t->present[pool] && r < 55) { /* ~5 % change */
                    uint64_t a = rnd() % 200, f = rnd() % 200;
                    uint64_t na = (t->allocs[pool] + a) & 0xFFFFFFFFull;
                    if (na < t->allocs[pool])
                        wraps++;
                    t->allocs[pool] = na;
                    t->frees[pool] = (t->frees[pool] + f) & 0xFFFFFFFFull;
                    t->bytes[pool] = rnd() % 50000000;
                }
                if (reset_now && i % 101 == 0 && was_present && t->present[pool] &&
                    t->allocs[pool] > 1000 &&
                    t->allocs[pool] < 0x80000000ull) { /* a move back, not a wrap */
                    t->allocs[pool] = 7;
                    t->frees[pool] = 3;
                    resets_made++;
                }
                if (!t->present[pool])
                    continue;
                uint64_t diff = (t->allocs[pool] - t->frees[pool]) & 0xFFFFFFFFull;
                assert_int_equal(pw_sample_add(&s, t->tag, 4, (pw_pool_t)pool, t->allocs[pool],
                                               t->frees[pool], diff, t->bytes[pool]),
                                 0);
                /* a third of the tags hold whole pages (held bytes), the rest none */
                if (i % 3 == 0)
                    s.entries[s.n - 1].held_bytes = (t->bytes[pool] + 4095) / 4096 * 4096;
            }
        }
        /* Every 61st sample the source lists its tags in another order. */
        if (k % 61 == 60)
            for (size_t i = s.n - 1; i > 0; i--) {
                size_t j = (size_t)(rnd() % (i + 1));
                pw_entry_t tmp = s.entries[i];
                s.entries[i] = s.entries[j];
                s.entries[j] = tmp;
            }
        if (s.n < min_rows)
            min_rows = s.n;
        pw_delta_result_t res;
        unsigned flags = (k % 2500 == 2499) ? PW_DELTA_KEYFRAME : 0;
        assert_int_equal(roundtrip(&p, &s, flags, &res, NULL), 0);
        resets_seen += res.resets;
        assert_table_equals(&p.dec, &s);
    }
    /* The walk really covered what it claims. */
    assert_true(min_rows >= 3000);
    assert_true(wraps > 100);
    assert_true(vanishes > 1000 && appears > 1000);
    assert_true(resets_made > 0);
    assert_int_equal(resets_seen, resets_made);
    pw_sample_close(&s);
    pair_close(&p);
    free(tags);
}

/* ---- hand-checked small cases
 * -------------------------------------------------------------------- */

static void add(pw_sample_t *s, const char *tag, pw_pool_t pool, uint64_t a, uint64_t f,
                uint64_t bytes)
{
    assert_int_equal(pw_sample_add(s, tag, 4, pool, a, f, (a - f) & 0xFFFFFFFFull, bytes), 0);
}

static void test_delta_encodes_only_changes(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    add(&s, "Io  ", PW_POOL_NONPAGED, 100, 90, 91912);
    add(&s, "Thre", PW_POOL_NONPAGED, 180351, 176602, 13179648);
    add(&s, "CM  ", PW_POOL_PAGED, 1283, 1002, 1377312);
    pw_delta_result_t res;
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_true(msg->keyframe);
    assert_int_equal(msg->n_dict, 3);
    assert_int_equal(msg->rows->n_key_gap, 3);
    /* ids 0,1,2 in order of appearance; keys id*4+pool = 1, 5, 8 -> gaps 1, 4, 3 */
    assert_int_equal(msg->rows->key_gap[0], 1);
    assert_int_equal(msg->rows->key_gap[1], 4);
    assert_int_equal(msg->rows->key_gap[2], 3);
    assert_int_equal(msg->rows->diff[1], 3749);
    /* Decoder sees it. */
    pw_buf_reset(&p.wire);
    pw_delta_enc_close(&p.enc);
    pw_delta_enc_init(&p.enc, 32);
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_int_equal(res.added, 3);

    /* Second sample: Io gets +1 alloc +1 free (poolmon's "(1)" columns), Thre unchanged,
     * CM vanishes, Fat appears. */
    pw_sample_reset(&s);
    s.seq = 2;
    add(&s, "Io  ", PW_POOL_NONPAGED, 101, 91, 91912);
    add(&s, "Thre", PW_POOL_NONPAGED, 180351, 176602, 13179648);
    add(&s, "Fat ", PW_POOL_PAGED, 1691, 0, 174560);
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_false(msg->keyframe);
    assert_int_equal(msg->base_seq, 1);
    assert_int_equal(msg->n_dict, 1); /* only Fat is new */
    assert_int_equal(msg->changes->n_key_gap, 1);
    assert_int_equal(msg->changes->d_allocs[0], 1);
    assert_int_equal(msg->changes->d_diff[0], 0);
    assert_int_equal(msg->changes->d_bytes[0], 0);
    assert_int_equal(msg->n_vanished_gap, 1);
    assert_int_equal(msg->vanished_gap[0], 8); /* CM paged: key 2*4+0 */
    assert_int_equal(msg->rows->n_key_gap, 1);
    assert_int_equal(msg->rows->key_gap[0], 12); /* Fat: id 3, paged */
    /* Apply the same message in the decoder. */
    Poolwatch__V1__Sample copy = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &copy, &res, NULL), 0);
    assert_int_equal(res.changed, 1);
    assert_int_equal(res.vanished, 1);
    assert_int_equal(res.added, 1);
    assert_table_equals(&p.dec, &s);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_linux_rows_without_allocs(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 10;
    s.flags = PW_SAMPLE_NO_ALLOCS;
    /* case20: inode_cache 369522 objs x 512 B; dentry_cache 172781 x 128 B */
    assert_int_equal(
        pw_sample_add(&s, "inode_cache", 11, PW_POOL_NONPAGED, 0, 0, 369522, 369522ull * 512), 0);
    assert_int_equal(
        pw_sample_add(&s, "dentry_cache", 12, PW_POOL_NONPAGED, 0, 0, 172781, 172781ull * 128), 0);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_table_equals(&p.dec, &s);
    s.seq = 11;
    s.entries[0].diff = 369000; /* objects in use fall: a gauge, not a reset */
    s.entries[0].bytes = 369000ull * 512;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_int_equal(res.changed, 1);
    assert_int_equal(res.resets, 0);
    assert_table_equals(&p.dec, &s);
    /* allocs on a NO_ALLOCS sample are refused. */
    s.seq = 12;
    s.entries[1].allocs = 5;
    const Poolwatch__V1__Sample *msg;
    pw_diag_t d;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, &d), PW_EINVAL);
    assert_int_equal(d.offset, 1);
    pw_sample_close(&s);
    pair_close(&p);
}

/* ---- held bytes (a Linux slab cache's slabs) --------------------------------------------------
 * case25 (tests/fixtures/slabinfo, 2.6.8, one page per slab), by hand:
 *   ext3_inode_cache 1328526 objs x 416 B = 552,666,816 B; 147614 slabs x 4096 = 604,626,944 B
 *   dentry_cache     1061172 objs x 140 B = 148,564,080 B;  37899 slabs x 4096 = 155,234,304 B
 *   size-4096            184 objs x 4096 B =    753,664 B;    184 slabs x 4096 =     753,664 B */

static void add_cache(pw_sample_t *s, const char *name, uint64_t objs, uint64_t size, uint64_t held)
{
    assert_int_equal(
        pw_sample_add(s, name, strlen(name), PW_POOL_NONPAGED, 0, 0, objs, objs * size), 0);
    s->entries[s->n - 1].held_bytes = held;
}

static void case25_sample(pw_sample_t *s, uint64_t seq)
{
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = 1092355200000ull + seq * 60000;
    s->flags = PW_SAMPLE_NO_ALLOCS;
    add_cache(s, "ext3_inode_cache", 1328526, 416, 604626944);
    add_cache(s, "dentry_cache", 1061172, 140, 155234304);
    add_cache(s, "size-4096", 184, 4096, 753664);
}

static void test_delta_held_bytes_travel_in_their_own_column(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    case25_sample(&s, 1);
    const Poolwatch__V1__Sample *msg;
    pw_diag_t d;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, &d), 0);
    /* keys id * 4 + 1 (nonpaged) in order of appearance: the column follows them */
    assert_int_equal(msg->rows->n_held_bytes, 3);
    assert_int_equal(msg->rows->held_bytes[0], 604626944);
    assert_int_equal(msg->rows->held_bytes[1], 155234304);
    assert_int_equal(msg->rows->held_bytes[2], 753664);
    pw_delta_enc_close(&p.enc);
    assert_int_equal(pw_delta_enc_init(&p.enc, 64), 0);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_table_equals(&p.dec, &s);

    /* dentry_cache grows a slab with no object more in use (only held moves: still a change);
     * size-4096 one object and one slab more. */
    case25_sample(&s, 2);
    s.entries[1].held_bytes += 4096;
    s.entries[2].diff += 1;
    s.entries[2].bytes += 4096;
    s.entries[2].held_bytes += 4096;
    Poolwatch__V1__Sample *kept = NULL;
    assert_int_equal(roundtrip(&p, &s, 0, &res, &kept), 0);
    assert_int_equal(res.changed, 2);
    assert_false(kept->keyframe);
    assert_int_equal(kept->changes->n_key_gap, 2);
    assert_int_equal(kept->changes->n_d_held_bytes, 2);
    assert_int_equal(kept->changes->d_held_bytes[0], 4096);
    assert_int_equal(kept->changes->d_held_bytes[1], 4096);
    assert_int_equal(kept->changes->d_bytes[0], 0);
    assert_int_equal(kept->changes->d_bytes[1], 4096);
    poolwatch__v1__sample__free_unpacked(kept, NULL);
    assert_table_equals(&p.dec, &s);

    /* Objects freed inside their slabs: held does not move, so the delta has no held column. */
    s.seq = 3;
    s.entries[0].diff -= 9;
    s.entries[0].bytes -= 9 * 416;
    assert_int_equal(roundtrip(&p, &s, 0, &res, &kept), 0);
    assert_int_equal(kept->changes->n_key_gap, 1);
    assert_int_equal(kept->changes->n_d_held_bytes, 0);
    poolwatch__v1__sample__free_unpacked(kept, NULL);
    assert_table_equals(&p.dec, &s);

    /* The rebase keyframe carries them too. */
    pw_buf_t kf;
    pw_buf_init(&kf, 1u << 20);
    assert_int_equal(pw_delta_dec_pack_keyframe(&p.dec, 0, 1u << 20, &kf), 0);
    Poolwatch__V1__Envelope *env;
    assert_int_equal(pw_codec_unpack(kf.data + 4, kf.len - 4, &env, NULL), 0);
    pw_delta_dec_t fresh;
    assert_int_equal(pw_delta_dec_init(&fresh, 64, 0), 0);
    assert_int_equal(pw_delta_apply(&fresh, env->sample, NULL, &d), 0);
    assert_table_equals(&fresh, &s);
    pw_codec_free(env);
    pw_delta_dec_close(&fresh);
    pw_buf_close(&kf);

    /* A Windows table has none: no column at all, in keyframes and deltas. */
    pw_delta_enc_t w;
    assert_int_equal(pw_delta_enc_init(&w, 32), 0);
    pw_sample_reset(&s);
    s.seq = 1;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 100, 10, 90 * 1024);
    assert_int_equal(pw_delta_encode(&w, &s, 0, &msg, &d), 0);
    assert_int_equal(msg->rows->n_held_bytes, 0);
    s.seq = 2;
    s.entries[0].allocs += 5;
    s.entries[0].diff += 5;
    assert_int_equal(pw_delta_encode(&w, &s, 0, &msg, &d), 0);
    assert_int_equal(msg->changes->n_d_held_bytes, 0);
    pw_delta_enc_close(&w);

    /* A column of another length than its rows is refused, the table unchanged. */
    case25_sample(&s, 10);
    pw_delta_enc_close(&p.enc);
    assert_int_equal(pw_delta_enc_init(&p.enc, 64), 0);
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, &d), 0);
    Poolwatch__V1__Sample bad = *msg;
    Poolwatch__V1__Rows rows = *msg->rows;
    rows.n_held_bytes = 2;
    bad.rows = &rows;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, NULL, &d), PW_EBADFRAME);
    assert_int_equal(p.dec.seq, 3);
    pw_sample_close(&s);
    pair_close(&p);
}

/* A collector before held bytes reads a new agent's frames: the column is a field it does not
 * know (kept aside by protobuf-c, as every unknown field), every other column as before. And a
 * new collector reads an old agent's frames: held bytes 0 (not reported). Both with the
 * protocol as it was (tests/common/poolwatch_before_held.proto). */
static void test_delta_held_bytes_old_and_new_peers(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_buf_t fr;
    pw_buf_init(&fr, 1u << 20);
    pw_diag_t d;
    /* new agent -> old collector: a keyframe, then a delta whose changes carry held bytes */
    for (uint64_t seq = 1; seq <= 2; seq++) {
        case25_sample(&s, seq);
        if (seq == 2) {
            s.entries[2].diff += 1;
            s.entries[2].bytes += 4096;
            s.entries[2].held_bytes += 4096;
        }
        const Poolwatch__V1__Sample *msg;
        assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, &d), 0);
        pw_buf_reset(&fr);
        assert_int_equal(pw_codec_pack_sample(msg, 1u << 20, &fr), 0);
        Poolwatch__V1beforeHeld__Envelope *old =
            poolwatch__v1before_held__envelope__unpack(NULL, fr.len - 4, fr.data + 4);
        assert_non_null(old);
        assert_int_equal(old->msg_case, POOLWATCH__V1BEFORE_HELD__ENVELOPE__MSG_SAMPLE);
        Poolwatch__V1beforeHeld__Sample *os = old->sample;
        assert_int_equal(os->seq, seq);
        if (seq == 1) {
            assert_int_equal(os->rows->n_key_gap, 3);
            assert_int_equal(os->rows->n_allocs, 0);
            assert_int_equal(os->rows->diff[0], 1328526);
            assert_int_equal(os->rows->bytes[0], 552666816);
            assert_int_equal(os->rows->bytes[1], 148564080);
            assert_int_equal(os->rows->base.n_unknown_fields, 1); /* held_bytes */
        } else {
            assert_int_equal(os->changes->n_key_gap, 1);
            assert_int_equal(os->changes->d_diff[0], 1);
            assert_int_equal(os->changes->d_bytes[0], 4096);
            assert_int_equal(os->changes->base.n_unknown_fields, 1); /* d_held_bytes */
        }
        /* What the old collector's table holds: the same rows from the known fields only
         * (its decoder is this one without the held columns): pack the old message without
         * the field it does not know and apply it. */
        if (os->rows)
            os->rows->base.n_unknown_fields = 0;
        if (os->changes)
            os->changes->base.n_unknown_fields = 0;
        uint8_t buf[4096];
        size_t n = poolwatch__v1before_held__envelope__get_packed_size(old);
        assert_true(n <= sizeof(buf));
        poolwatch__v1before_held__envelope__pack(old, buf);
        if (os->rows)
            os->rows->base.n_unknown_fields = 1; /* protobuf-c frees what it unpacked */
        if (os->changes)
            os->changes->base.n_unknown_fields = 1;
        poolwatch__v1before_held__envelope__free_unpacked(old, NULL);
        Poolwatch__V1__Envelope *env;
        assert_int_equal(pw_codec_unpack(buf, n, &env, NULL), 0);
        assert_int_equal(pw_delta_apply(&p.dec, env->sample, NULL, &d), 0);
        pw_codec_free(env);
        for (size_t i = 0; i < s.n; i++)
            s.entries[i].held_bytes = 0;
        assert_table_equals(&p.dec, &s);
    }

    /* old agent -> new collector: rows and changes without the column */
    pw_delta_dec_t dec;
    assert_int_equal(pw_delta_dec_init(&dec, 64, 0), 0);
    Poolwatch__V1beforeHeld__TagDef def = POOLWATCH__V1BEFORE_HELD__TAG_DEF__INIT, *defp = &def;
    def.id = 0;
    def.tag.data = (uint8_t *)"dentry_cache";
    def.tag.len = 12;
    uint32_t gap[1] = {1};
    uint64_t diff[1] = {1061172}, bytes[1] = {148564080};
    Poolwatch__V1beforeHeld__Rows rows = POOLWATCH__V1BEFORE_HELD__ROWS__INIT;
    rows.n_key_gap = rows.n_diff = rows.n_bytes = 1;
    rows.key_gap = gap;
    rows.diff = diff;
    rows.bytes = bytes;
    Poolwatch__V1beforeHeld__Sample os = POOLWATCH__V1BEFORE_HELD__SAMPLE__INIT;
    os.seq = 7;
    os.keyframe = 1;
    os.dict_reset = 1;
    os.n_dict = 1;
    os.dict = &defp;
    os.rows = &rows;
    Poolwatch__V1beforeHeld__Envelope oe = POOLWATCH__V1BEFORE_HELD__ENVELOPE__INIT;
    oe.msg_case = POOLWATCH__V1BEFORE_HELD__ENVELOPE__MSG_SAMPLE;
    oe.sample = &os;
    uint8_t buf[512];
    size_t n = poolwatch__v1before_held__envelope__pack(&oe, buf);
    Poolwatch__V1__Envelope *env;
    assert_int_equal(pw_codec_unpack(buf, n, &env, NULL), 0);
    assert_int_equal(pw_delta_apply(&dec, env->sample, NULL, &d), 0);
    pw_codec_free(env);
    assert_int_equal(dec.n, 1);
    assert_int_equal(dec.rows[0].diff, 1061172);
    assert_int_equal(dec.rows[0].bytes, 148564080);
    assert_int_equal(dec.rows[0].held_bytes, 0);
    /* its delta */
    int64_t dd_diff[1] = {-28}, dd_bytes[1] = {-28 * 140};
    Poolwatch__V1beforeHeld__Changes ch = POOLWATCH__V1BEFORE_HELD__CHANGES__INIT;
    ch.n_key_gap = ch.n_d_diff = ch.n_d_bytes = 1;
    ch.key_gap = gap;
    ch.d_diff = dd_diff;
    ch.d_bytes = dd_bytes;
    Poolwatch__V1beforeHeld__Sample od = POOLWATCH__V1BEFORE_HELD__SAMPLE__INIT;
    od.seq = 8;
    od.base_seq = 7;
    od.changes = &ch;
    oe.sample = &od;
    n = poolwatch__v1before_held__envelope__pack(&oe, buf);
    assert_int_equal(pw_codec_unpack(buf, n, &env, NULL), 0);
    assert_int_equal(pw_delta_apply(&dec, env->sample, NULL, &d), 0);
    pw_codec_free(env);
    assert_int_equal(dec.rows[0].diff, 1061144);
    assert_int_equal(dec.rows[0].bytes, 1061144ull * 140);
    assert_int_equal(dec.rows[0].held_bytes, 0);
    pw_delta_dec_close(&dec);
    pw_buf_close(&fr);
    pw_sample_close(&s);
    pair_close(&p);
}

/* ---- errors leave the decoder unchanged -------------------------------------------------------
 */

static void snapshot(const pw_delta_dec_t *dec, pw_sample_t *out, uint32_t *dict_n)
{
    pw_sample_init(out);
    assert_int_equal(pw_delta_dec_to_sample(dec, out), 0);
    *dict_n = pw_tagdict_count(&dec->dict);
}

static void assert_unchanged(const pw_delta_dec_t *dec, const pw_sample_t *snap, uint32_t dict_n)
{
    assert_int_equal(pw_tagdict_count(&dec->dict), dict_n);
    assert_table_equals(dec, snap);
}

static void test_delta_wrong_base_and_malformed_leave_state(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s, snap;
    pw_sample_init(&s);
    s.seq = 1;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 5000, 4000, 600 * 1024);
    add(&s, "Mmcm", PW_POOL_NONPAGED, 70, 10, 9 << 20);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    uint32_t dict_n;
    snapshot(&p.dec, &snap, &dict_n);

    /* A delta on seq 2 while the decoder holds seq 1: wrong base. */
    pw_sample_t s2;
    pw_sample_init(&s2);
    s2.seq = 2;
    add(&s2, "Ddk ", PW_POOL_NONPAGED, 5100, 4000, 700 * 1024);
    add(&s2, "Mmcm", PW_POOL_NONPAGED, 70, 10, 9 << 20);
    add(&s2, "r100", PW_POOL_NONPAGED, 1, 0, 4096);
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s2, 0, &msg, NULL), 0);
    Poolwatch__V1__Sample bad = *msg;
    pw_diag_t d;
    bad.base_seq = 7;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_ENOBASE);
    assert_string_equal(d.field, "base_seq");
    assert_unchanged(&p.dec, &snap, dict_n);

    /* Missing base altogether (fresh decoder). */
    pw_delta_dec_t fresh;
    pw_delta_dec_init(&fresh, 32, 0);
    bad = *msg;
    assert_int_equal(pw_delta_apply(&fresh, &bad, &res, &d), PW_ENOBASE);
    assert_int_equal(pw_tagdict_count(&fresh.dict), 0);
    pw_delta_dec_close(&fresh);

    /* Columns of unequal length. */
    bad = *msg;
    Poolwatch__V1__Changes ch = *msg->changes;
    ch.n_d_bytes = 0;
    bad.changes = &ch;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADFRAME);
    assert_unchanged(&p.dec, &snap, dict_n);

    /* A change for a row the base does not hold (key of r100 = id 2 nonpaged = 9): the new
     * dictionary entry carried by the same message must be rolled back too. */
    bad = *msg;
    ch = *msg->changes;
    uint32_t gap = 9;
    ch.key_gap = &gap;
    bad.changes = &ch;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADFRAME);
    assert_string_equal(d.field, "changes");
    assert_unchanged(&p.dec, &snap, dict_n);

    /* A row referring to an undefined tag id. */
    bad = *msg;
    bad.n_dict = 0;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADTAG);
    assert_unchanged(&p.dec, &snap, dict_n);

    /* A redefinition of id 0 with other bytes. */
    bad = *msg;
    Poolwatch__V1__TagDef td = *msg->dict[0], *tdp = &td;
    td.id = 0;
    bad.dict = &tdp;
    bad.n_dict = 1;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADTAG);
    assert_unchanged(&p.dec, &snap, dict_n);

    /* seq not after base. */
    bad = *msg;
    bad.seq = 1;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_ESEQ);
    assert_unchanged(&p.dec, &snap, dict_n);

    /* Keys not increasing in a keyframe. */
    bad = *msg;
    bad.keyframe = 1;
    bad.changes = NULL;
    bad.n_vanished_gap = 0;
    Poolwatch__V1__Rows rows = *msg->rows;
    uint32_t gaps[2] = {4, 0};
    uint64_t vals[2] = {1, 1};
    rows.key_gap = gaps;
    rows.n_key_gap = rows.n_allocs = rows.n_diff = rows.n_bytes = 2;
    rows.allocs = rows.diff = rows.bytes = vals;
    bad.rows = &rows;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADFRAME);
    assert_unchanged(&p.dec, &snap, dict_n);

    /* And the real message still applies afterwards. */
    bad = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), 0);
    assert_table_equals(&p.dec, &s2);
    pw_sample_close(&snap);
    pw_sample_close(&s);
    pw_sample_close(&s2);
    pair_close(&p);
}

static void test_delta_changes_only_fast_path_is_all_or_nothing(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s, snap;
    pw_sample_init(&s);
    s.seq = 1;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 5000, 4000, 600 * 1024);
    add(&s, "Mmcm", PW_POOL_NONPAGED, 70, 10, 9 << 20);
    add(&s, "r100", PW_POOL_NONPAGED, 9, 1, 4096);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    uint32_t dict_n;
    snapshot(&p.dec, &snap, &dict_n);
    s.seq = 2;
    s.entries[0].allocs = 5100; /* Ddk grows: +100 allocs, +100 outstanding */
    s.entries[0].diff = 1100;
    s.entries[0].bytes = 700 * 1024;
    s.entries[2].frees = 2; /* r100: one free */
    s.entries[2].diff = 7;
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_null(msg->rows);
    assert_int_equal(msg->n_vanished_gap, 0);
    assert_int_equal(msg->changes->n_key_gap, 2);
    /* Second change names key 13 (id 3): not in the base. The first change must not have
     * been applied either. */
    Poolwatch__V1__Sample bad = *msg;
    Poolwatch__V1__Changes ch = *msg->changes;
    uint32_t gaps[2] = {ch.key_gap[0], 12};
    ch.key_gap = gaps;
    bad.changes = &ch;
    pw_diag_t d;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), PW_EBADFRAME);
    assert_string_equal(d.field, "changes");
    assert_unchanged(&p.dec, &snap, dict_n);
    bad = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &bad, &res, &d), 0);
    assert_int_equal(res.changed, 2);
    assert_table_equals(&p.dec, &s);
    pw_sample_close(&snap);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_new_encoder_resets_the_dictionary(void **state)
{
    (void)state;
    /* An agent restarts (or reconnects with a fresh encoder): its ids now mean other tags.
     * Its first keyframe carries dict_reset, so the decoder starts over instead of refusing
     * the redefinitions. */
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    add(&s, "Thre", PW_POOL_NONPAGED, 10, 5, 500);
    add(&s, "Proc", PW_POOL_NONPAGED, 20, 5, 1500);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    pw_delta_enc_close(&p.enc);
    pw_delta_enc_init(&p.enc, 32);
    pw_sample_reset(&s);
    s.seq = 2;
    add(&s, "Proc", PW_POOL_NONPAGED, 21, 5, 1600); /* now id 0 */
    add(&s, "Toke", PW_POOL_PAGED, 3, 0, 300);
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_true(msg->keyframe);
    assert_true(msg->dict_reset);
    Poolwatch__V1__Sample copy = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &copy, &res, NULL), 0);
    assert_int_equal(pw_tagdict_count(&p.dec.dict), 2);
    assert_table_equals(&p.dec, &s);
    assert_null(pw_delta_dec_find(&p.dec, (const uint8_t *)"Thre", 4, PW_POOL_NONPAGED));
    /* dict_reset on a delta is malformed. */
    s.seq = 3;
    s.entries[0].allocs = 22;
    s.entries[0].diff = 17;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    copy = *msg;
    copy.dict_reset = 1;
    assert_int_equal(pw_delta_apply(&p.dec, &copy, &res, NULL), PW_EBADFRAME);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_rebase_keyframe_lets_a_fresh_decoder_follow(void **state)
{
    (void)state;
    /* The agent's reconnect path: a decoder that replayed the spool packs its state as a
     * keyframe; a fresh collector-side decoder takes it and then the original deltas. */
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 41;
    s.timestamp_ms = 1764400000000ull;
    s.totals.nonpaged_bytes = 31u << 20;
    s.totals.agent_rss_bytes = 7u << 20; /* the agent's own footprint travels with the totals */
    s.totals.agent_cpu_ms = 12345;
    s.totals.agent_handles = 143;
    add(&s, "Ddk ", PW_POOL_NONPAGED, 5000, 4000, 600 * 1024);
    add(&s, "Dh 1", PW_POOL_SESSION, 7, 2, 912);
    add(&s, "Toke", PW_POOL_PAGED, 300, 100, 200 * 1024);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    pw_buf_t kf;
    pw_buf_init(&kf, 1 << 20);
    assert_int_equal(pw_delta_dec_pack_keyframe(&p.dec, 3, 1 << 20, &kf), 0);
    pw_delta_dec_t fresh;
    pw_delta_dec_init(&fresh, 32, 0);
    const uint8_t *pl;
    size_t plen;
    assert_int_equal(pw_frame_parse(kf.data, kf.len, 1 << 20, &pl, &plen, NULL), (int64_t)kf.len);
    Poolwatch__V1__Envelope *env;
    assert_int_equal(pw_codec_unpack(pl, plen, &env, NULL), 0);
    assert_int_equal(env->sample->gap_before, 3);
    assert_int_equal(pw_delta_apply(&fresh, env->sample, &res, NULL), 0);
    pw_codec_free(env);
    assert_table_equals(&fresh, &s);
    assert_int_equal(fresh.totals.agent_rss_bytes, 7u << 20);
    assert_int_equal(fresh.totals.agent_cpu_ms, 12345);
    assert_int_equal(fresh.totals.agent_handles, 143);
    /* The next original delta applies on the fresh decoder. */
    s.seq = 42;
    s.entries[0].allocs = 5100;
    s.entries[0].diff = 1100;
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    Poolwatch__V1__Sample copy = *msg;
    assert_int_equal(pw_delta_apply(&fresh, &copy, &res, NULL), 0);
    assert_table_equals(&fresh, &s);
    pw_delta_dec_t empty;
    pw_delta_dec_init(&empty, 32, 0);
    assert_int_equal(pw_delta_dec_pack_keyframe(&empty, 0, 1 << 20, &kf), PW_EINVAL);
    pw_delta_dec_close(&empty);
    pw_delta_dec_close(&fresh);
    pw_buf_close(&kf);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_reset_is_reported_not_a_huge_delta(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    add(&s, "Even", PW_POOL_NONPAGED, 51231806, 51231000, 806 * 64);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    s.seq = 2;
    s.entries[0].allocs = 12;
    s.entries[0].frees = 2;
    s.entries[0].diff = 10;
    s.entries[0].bytes = 640;
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_null(msg->changes);
    assert_int_equal(msg->rows->n_key_gap, 1);
    assert_int_equal(msg->rows->allocs[0], 12);
    Poolwatch__V1__Sample copy = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &copy, &res, NULL), 0);
    assert_int_equal(res.resets, 1);
    assert_int_equal(res.changed, 0);
    assert_table_equals(&p.dec, &s);

    /* A wrap by 1 is a change of +1, not a reset. */
    s.seq = 3;
    s.entries[0].allocs = 0xFFFFFFFFull;
    s.entries[0].frees = 0xFFFFFFF0ull;
    s.entries[0].diff = 15;
    assert_int_equal(roundtrip(&p, &s, PW_DELTA_KEYFRAME, &res, NULL), 0);
    s.seq = 4;
    s.entries[0].allocs = 0;
    s.entries[0].diff = 16;
    assert_int_equal(pw_delta_encode(&p.enc, &s, 0, &msg, NULL), 0);
    assert_int_equal(msg->changes->d_allocs[0], 1);
    assert_int_equal(msg->changes->d_diff[0], 1);
    copy = *msg;
    assert_int_equal(pw_delta_apply(&p.dec, &copy, &res, NULL), 0);
    assert_int_equal(res.resets, 0);
    assert_table_equals(&p.dec, &s);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_encoder_rejects_bad_samples(void **state)
{
    (void)state;
    pw_delta_enc_t e;
    pw_delta_enc_init(&e, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    const Poolwatch__V1__Sample *msg;
    pw_diag_t d;
    s.seq = 5;
    add(&s, "File", PW_POOL_NONPAGED, 10, 4, 100);
    add(&s, "File", PW_POOL_PAGED, 10, 4, 100); /* case16: same tag, other pool: fine */
    assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), 0);
    s.seq = 6;
    add(&s, "File", PW_POOL_PAGED, 11, 4, 100); /* the same (tag, pool) twice */
    assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), PW_EINVAL);
    assert_non_null(strstr(d.msg, "twice"));
    s.n = 2;
    s.seq = 5; /* seq must grow */
    assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), PW_ESEQ);
    s.seq = 7;
    s.entries[0].diff = 7; /* != allocs - frees */
    assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), PW_EINVAL);
    s.entries[0].diff = 6;
    s.entries[0].allocs = 1ull << 32; /* wider than 32 bits */
    assert_int_equal(pw_delta_encode(&e, &s, 0, &msg, &d), PW_EINVAL);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
}

/* 3,000 tags as "Tnnn"-like 4-byte tags, counters a function of (i, k). */
static void fill_big(pw_sample_t *s, uint64_t seq, size_t n, unsigned k, size_t changed)
{
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = 1000 * seq;
    for (size_t i = 0; i < n; i++) {
        char tag[4] = {(char)('A' + i % 26), (char)('A' + (i / 26) % 26), (char)('0' + i / 676),
                       ' '};
        uint64_t step = i < changed ? k : 0;
        add(s, tag, (pw_pool_t)(i & 1), 1000 + i + 7 * step, 500 + 3 * step, 64 * (i + 1));
    }
}

static void test_delta_keyframe_scratch_is_freed_after_use(void **state)
{
    (void)state;
    pair_t p;
    pair_init(&p, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    fill_big(&s, 1, 3000, 0, 0);
    assert_int_equal(roundtrip(&p, &s, 0, NULL, NULL), 0);
    /* The keyframe held a column entry and a tag definition per row... */
    assert_true(p.enc.r_cap >= 3000);
    assert_true(p.enc.defs_cap >= 3000);
    /* ...which the next delta (150 changes, one new row) gives back. */
    fill_big(&s, 2, 3000, 1, 150);
    assert_int_equal(pw_sample_add(&s, "New!", 4, PW_POOL_PAGED, 3, 1, 2, 128), 0);
    pw_delta_result_t res;
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_int_equal(res.changed, 150);
    assert_int_equal(res.added, 1);
    assert_table_equals(&p.dec, &s);
    assert_int_equal(p.enc.r_cap, 256);
    assert_int_equal(p.enc.c_cap, 256);
    assert_int_equal(p.enc.defs_cap, 64); /* one definition: grow_array's first size */
    /* A delta where 2,000 rows change grows the change columns, then the next drops them. */
    fill_big(&s, 3, 3000, 2, 2000);
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_int_equal(res.changed, 2000);
    assert_int_equal(res.vanished, 1);
    assert_true(p.enc.c_cap >= 2000);
    fill_big(&s, 4, 3000, 3, 10);
    assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
    assert_int_equal(res.changed, 10);
    assert_int_equal(p.enc.c_cap, 256); /* freed, then grown again for 10 changes */
    assert_table_equals(&p.dec, &s);
    pw_sample_close(&s);
    pair_close(&p);
}

static void test_delta_enomem_while_merging_keeps_the_base(void **state)
{
    (void)state;
    /* Fail the nth allocation of a delta whose columns must grow: the encoder says PW_ENOMEM
     * and keeps its base, so the same sample encodes next time against the decoder's table. */
    for (unsigned long n = 1; n < 12; n++) {
        pair_t p;
        pair_init(&p, 32);
        pw_sample_t s;
        pw_sample_init(&s);
        fill_big(&s, 1, 3000, 0, 0);
        assert_int_equal(roundtrip(&p, &s, 0, NULL, NULL), 0);
        fill_big(&s, 2, 3000, 1, 150);
        assert_int_equal(roundtrip(&p, &s, 0, NULL, NULL), 0); /* trims the keyframe's */
        fill_big(&s, 3, 3000, 2, 2500);
        const Poolwatch__V1__Sample *msg;
        pw_alloc_fail_after(n);
        int r = pw_delta_encode(&p.enc, &s, 0, &msg, NULL);
        pw_alloc_fail_after(0);
        if (r == 0) {
            Poolwatch__V1__Sample copy = *msg;
            assert_int_equal(pw_delta_apply(&p.dec, &copy, NULL, NULL), 0);
        } else {
            assert_int_equal(r, PW_ENOMEM);
            assert_int_equal(p.enc.prev_seq, 2);
            pw_delta_result_t res;
            assert_int_equal(roundtrip(&p, &s, 0, &res, NULL), 0);
            assert_int_equal(res.changed, 2500);
        }
        assert_table_equals(&p.dec, &s);
        pw_sample_close(&s);
        pair_close(&p);
    }
}

static void test_delta_alloc_failures_are_clean(void **state)
{
    (void)state;
    /* Fail each allocation in turn: every failure is PW_ENOMEM (or a clean success) and
     * nothing leaks (LeakSanitizer checks at exit). */
    for (unsigned long n = 1; n < 60; n++) {
        pw_delta_enc_t e;
        pw_delta_dec_t dec;
        pw_sample_t s;
        pw_sample_init(&s);
        pw_delta_enc_init(&e, 32);
        pw_delta_dec_init(&dec, 32, 0);
        for (int i = 0; i < 300; i++) {
            char tag[4] = {(char)('A' + i % 26), (char)('a' + i / 26), 'x', ' '};
            add(&s, tag, PW_POOL_NONPAGED, (uint64_t)i + 10, 5, 1000);
        }
        s.seq = 1;
        pw_alloc_fail_after(n);
        const Poolwatch__V1__Sample *msg;
        int r = pw_delta_encode(&e, &s, 0, &msg, NULL);
        if (r == 0) {
            Poolwatch__V1__Sample copy = *msg;
            r = pw_delta_apply(&dec, &copy, NULL, NULL);
            if (r == 0)
                assert_int_equal(dec.n, 300);
            else
                assert_false(dec.have_base);
        }
        pw_alloc_fail_after(0);
        assert_true(r == 0 || r == PW_ENOMEM);
        pw_delta_enc_close(&e);
        pw_delta_dec_close(&dec);
        pw_sample_close(&s);
    }
}

/* pw_rows_lower_bound (an interpolated guess, a gallop, a bisection) against a linear scan, for
 * every key around tables whose keys are even, clustered at both ends, or one outlier far
 * away (the guess lands far from the answer), of 1 to 300 rows. */
static void test_rows_lower_bound_matches_a_scan(void **state)
{
    (void)state;
    static pw_row_t rows[300];
    uint64_t rng = 99;
    for (int shape = 0; shape < 4; shape++)
        for (size_t n = 1; n <= 300; n += n < 20 ? 1 : 37) {
            uint32_t k = 3;
            for (size_t i = 0; i < n; i++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                uint32_t gap = shape == 0   ? 4
                               : shape == 1 ? (uint32_t)(rng >> 60) + 1
                               : shape == 2 ? (i < n / 2 ? 1 : 1000)
                                            : (i == n - 1 ? 4000000000u - k : 2);
                k += i ? gap : 0;
                rows[i].key = k;
            }
            size_t want = 0; /* keys grow: the scan goes on from the previous key's answer */
            for (uint32_t key = 0; key <= rows[n - 1].key + 2; key++) {
                while (want < n && rows[want].key < key)
                    want++;
                if (pw_rows_lower_bound(rows, n, key) != want)
                    fail_msg("shape %d, %zu rows, key %u: %zu, not %zu", shape, n, key,
                             pw_rows_lower_bound(rows, n, key), want);
                if (shape == 3 && key == 4 * n + 10)
                    key = rows[n - 1].key - 3; /* the outlier's neighbourhood, not 4e9 keys */
            }
        }
    assert_int_equal(pw_rows_lower_bound(NULL, 0, 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_counter_wrap_and_reset_table),
        cmocka_unit_test(test_delta_encodes_only_changes),
        cmocka_unit_test(test_delta_linux_rows_without_allocs),
        cmocka_unit_test(test_delta_held_bytes_travel_in_their_own_column),
        cmocka_unit_test(test_delta_held_bytes_old_and_new_peers),
        cmocka_unit_test(test_delta_wrong_base_and_malformed_leave_state),
        cmocka_unit_test(test_delta_changes_only_fast_path_is_all_or_nothing),
        cmocka_unit_test(test_delta_new_encoder_resets_the_dictionary),
        cmocka_unit_test(test_delta_rebase_keyframe_lets_a_fresh_decoder_follow),
        cmocka_unit_test(test_delta_reset_is_reported_not_a_huge_delta),
        cmocka_unit_test(test_delta_encoder_rejects_bad_samples),
        cmocka_unit_test(test_delta_alloc_failures_are_clean),
        cmocka_unit_test(test_delta_keyframe_scratch_is_freed_after_use),
        cmocka_unit_test(test_delta_enomem_while_merging_keeps_the_base),
        cmocka_unit_test(test_delta_random_walk_roundtrips_exactly),
        cmocka_unit_test(test_rows_lower_bound_matches_a_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
