/* test_store.c: the collector's history store (collector/store/store.h).
 *
 * Every expected value comes from the tables the test builds itself (formulas below, or
 * numbers written by hand), never from the store's own output.
 */
#include "test_util.h"

#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef _WIN32
#include <signal.h>
#include <sys/wait.h>
#endif

#include <sqlite3.h>
#include <uv.h>
#include <zstd.h>

#include "codec.h"
#include "delta.h"
#include "frame.h"
#include "store.h"
#include "store_internal.h"
#include "store_lock.h"

#define T0         1700001000000ull /* a multiple of 15 min (900000 ms) */
#define SCHEMA_NOW 12               /* the schema version this build writes */

static const uint8_t AGENT[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t BOOT1[16] = {0xb0, 1};
static const uint8_t BOOT2[16] = {0xb0, 2};

typedef struct {
    char dir[256];
    char path[300];
} tmp_t;

/* A fresh directory under the system's temporary directory (libuv's calls: the same test runs
 * on Windows under Wine). */
static void tmp_make(tmp_t *t)
{
    char base[200], tpl[256];
    size_t n = sizeof(base);
    assert_int_equal(uv_os_tmpdir(base, &n), 0);
    snprintf(tpl, sizeof(tpl), "%s/pw_store_XXXXXX", base);
    uv_fs_t req;
    assert_int_equal(uv_fs_mkdtemp(NULL, &req, tpl, NULL), 0);
    snprintf(t->dir, sizeof(t->dir), "%s", req.path);
    uv_fs_req_cleanup(&req);
    snprintf(t->path, sizeof(t->path), "%s/store.db", t->dir);
}

static void tmp_remove(tmp_t *t)
{
    char p[320];
    const char *suffix[] = {"", "-wal", "-shm", "-journal", ".lock"};
    uv_fs_t req;
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof(p), "%s%s", t->path, suffix[i]);
        uv_fs_unlink(NULL, &req, p, NULL);
        uv_fs_req_cleanup(&req);
    }
    uv_fs_rmdir(NULL, &req, t->dir, NULL);
    uv_fs_req_cleanup(&req);
}

static pw_store_host_t host_of(const char *name, const uint8_t *boot, unsigned width)
{
    pw_store_host_t h = {name, AGENT, sizeof(AGENT), boot, 16, "windows 10.0", width,
                         0,    0,     NULL,          NULL, 0,  NULL,           NULL};
    return h;
}

/* Tags with a space, NUL bytes and bytes >= 0x80, as they come from pool tags. */
static const struct {
    const char *b;
    uint8_t len;
    pw_pool_t pool;
} TAGS[] = {
    {"Ntfx", 4, PW_POOL_PAGED},
    {"Ntfx", 4, PW_POOL_NONPAGED},
    {"Ab c", 4, PW_POOL_NONPAGED},
    {"\0x\0y", 4, PW_POOL_PAGED},
    {"\x80\xff\x81z", 4, PW_POOL_SESSION},
    {"kmalloc-64", 10, PW_POOL_NONPAGED},
};
#define NTAGS (sizeof(TAGS) / sizeof(TAGS[0]))

/* Row i of sample k, or 0 when the row is absent (tag 2 vanishes in samples 5 and 6). */
static int row_of(size_t i, unsigned k, uint64_t *allocs, uint64_t *frees, uint64_t *diff,
                  uint64_t *bytes)
{
    if (i == 2 && (k == 5 || k == 6))
        return 0;
    uint64_t a = 1000 * (i + 1) + 7 * k * (i + 1) + (k * k) % 5;
    uint64_t df = 10 + (k * (i + 3)) % 7;
    if (i == 0 && k >= 8)
        a = 100 + k; /* a counter reset (host reboot of the counters) */
    *allocs = a;
    *frees = a - df;
    *diff = df;
    *bytes = df * 64 * (i + 1) + (k % 3) * 16;
    return 1;
}

static void build(pw_sample_t *s, unsigned k)
{
    pw_sample_reset(s);
    s->seq = 100 + k;
    s->timestamp_ms = T0 + 10000ull * k;
    s->totals.nonpaged_bytes = 5000000 + k;
    s->totals.nonpaged_limit_bytes = 128ull << 20;
    for (size_t i = 0; i < NTAGS; i++) {
        uint64_t a, f, df, b;
        if (row_of(i, k, &a, &f, &df, &b))
            assert_int_equal(pw_sample_add(s, TAGS[i].b, TAGS[i].len, TAGS[i].pool, a, f, df, b),
                             0);
    }
}

static const pw_entry_t *find_entry(const pw_sample_t *s, size_t i)
{
    for (size_t j = 0; j < s->n; j++)
        if (s->entries[j].tag_len == TAGS[i].len && s->entries[j].pool == TAGS[i].pool &&
            memcmp(s->entries[j].tag, TAGS[i].b, TAGS[i].len) == 0)
            return &s->entries[j];
    return NULL;
}

/* `got` holds exactly the rows of sample k. */
static void check_table(const pw_sample_t *got, unsigned k)
{
    size_t want = 0;
    for (size_t i = 0; i < NTAGS; i++) {
        uint64_t a, f, df, b;
        if (!row_of(i, k, &a, &f, &df, &b)) {
            assert_null(find_entry(got, i));
            continue;
        }
        want++;
        const pw_entry_t *e = find_entry(got, i);
        assert_non_null(e);
        assert_int_equal(e->allocs, a);
        assert_int_equal(e->frees, f);
        assert_int_equal(e->diff, df);
        assert_int_equal(e->bytes, b);
    }
    assert_int_equal(got->n, want);
    assert_int_equal(got->seq, 100 + k);
    assert_int_equal(got->timestamp_ms, T0 + 10000ull * k);
    assert_int_equal(got->totals.nonpaged_bytes, 5000000 + k);
    assert_int_equal(got->totals.nonpaged_limit_bytes, 128ull << 20);
}

#define NSAMPLES 10u

/* Every (tag, pool) read back raw equals samples 0 .. nsamples - 1, value for value. */
static void check_series_n(pw_store_t *st, const char *host, unsigned nsamples)
{
    for (size_t i = 0; i < NTAGS; i++) {
        pw_store_series_t sr = {0};
        pw_diag_t d;
        int64_t n = pw_store_series(st, host, (const uint8_t *)TAGS[i].b, TAGS[i].len, TAGS[i].pool,
                                    T0, T0 + 10000ull * nsamples, 0, &sr, &d);
        size_t p = 0;
        for (unsigned k = 0; k < nsamples; k++) {
            uint64_t a, f, df, b;
            if (!row_of(i, k, &a, &f, &df, &b))
                continue;
            assert_true(p < sr.n);
            assert_int_equal(sr.points[p].ts_ms, T0 + 10000ull * k);
            assert_int_equal(sr.points[p].allocs, a);
            assert_int_equal(sr.points[p].frees, f);
            assert_int_equal(sr.points[p].diff, df);
            assert_int_equal(sr.points[p].bytes, b);
            assert_int_equal(sr.points[p].samples, 1);
            p++;
        }
        assert_int_equal(n, (int64_t)p);
        assert_int_equal(sr.n, p);
        assert_int_equal(sr.level, PW_STORE_RAW);
        pw_store_series_free(&sr);
    }
}

static void check_series_raw(pw_store_t *st, const char *host)
{
    check_series_n(st, host, NSAMPLES);
}

static void put_all(pw_store_t *st, const char *host, const uint8_t *boot, unsigned from,
                    unsigned to)
{
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of(host, boot, 64);
    pw_diag_t d;
    for (unsigned k = from; k < to; k++) {
        build(&s, k);
        int rc = pw_store_put(st, &h, &s, k == 3 ? 2 : 0, &d);
        if (rc != 0)
            fail_msg("put %u: %d %s", k, rc, d.msg);
        if (k % 3 == 2)
            assert_int_equal(pw_store_commit(st, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_sample_close(&s);
}

/* Chunks of at most 4 samples: 10 samples make 3 chunks. */
static const pw_store_opts_t CHUNKS4 = {.chunk_max_samples = 4};

/* Opens a store at `path` (a file, or ":memory:") with CHUNKS4 and puts samples 0 ..
 * NSAMPLES - 1 of host "win-01" (put_all): two sealed chunks (samples 0..3, 4..7), one open
 * (8, 9). */
static pw_store_t *sealed_store(const char *path)
{
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(path, &CHUNKS4, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, NSAMPLES);
    return st;
}

/* Chunk windows of different hosts are offset by whole 15-minute steps (host id 1: 15 min,
 * id 2: 30 min, with 1-hour windows), so a fleet's chunks do not all close at the same minute.
 * One hour of 1-minute samples aligned on the hour therefore spans two chunks per host (split
 * at :15 and at :30), where aligned windows would give one; the series stays exact. */
static void test_staggered_windows(void **state)
{
    (void)state;
    const uint64_t hour = 1764399600000ull; /* 490111 * 3600000: on the hour */
    pw_store_opts_t o = {.chunk_window_ms = 3600000, .chunk_max_samples = 1000};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    const char *names[2] = {"host-a", "host-b"};
    for (int hn = 0; hn < 2; hn++) {
        pw_store_host_t h = host_of(names[hn], hn ? BOOT2 : BOOT1, 64);
        for (unsigned k = 0; k < 60; k++) {
            build(&s, k % 4); /* rows of sample k % 4: all six present */
            s.seq = 1 + k;
            s.timestamp_ms = hour + 60000ull * k;
            assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
        }
        assert_int_equal(pw_store_commit(st, &d), 0);
    }
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 4);
    /* Windows that ended are sealed by the puts, compacted later. */
    assert_int_equal(ss.closed_chunks, 0);
    assert_int_equal(pw_store_compact(st, 1000, &d), 2);
    assert_int_equal(pw_store_compact(st, 1000, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 4);
    assert_int_equal(ss.closed_chunks, 2);
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    for (int hn = 0; hn < 2; hn++) {
        assert_int_equal(pw_store_series(st, names[hn], (const uint8_t *)"Ntfx", 4,
                                         PW_POOL_NONPAGED, hour, hour + 3600000, 0, &ser, &d),
                         60);
        for (unsigned k = 0; k < 60; k++) {
            uint64_t a, f, df, b;
            assert_true(row_of(1, k % 4, &a, &f, &df, &b));
            assert_int_equal(ser.points[k].ts_ms, hour + 60000ull * k);
            assert_int_equal(ser.points[k].bytes, b);
            assert_int_equal(ser.points[k].allocs, a);
        }
    }
    pw_store_series_free(&ser);
    pw_sample_close(&s);
    pw_store_close(st);
}

typedef struct {
    uint64_t ts[16], np[16], lim[16];
    size_t n, stop_after;
} totals_seen_t;

static int totals_cb(void *arg, uint64_t ts_ms, const pw_totals_t *t)
{
    totals_seen_t *v = arg;
    assert_true(v->n < 16);
    v->ts[v->n] = ts_ms;
    v->np[v->n] = t->nonpaged_bytes;
    v->lim[v->n++] = t->nonpaged_limit_bytes;
    return v->stop_after && v->n == v->stop_after ? 1 : 0;
}

/* pw_store_totals walks closed (columns), sealed and open chunks in time order. */
static void check_totals(pw_store_t *st)
{
    totals_seen_t v;
    memset(&v, 0, sizeof(v));
    pw_diag_t d;
    assert_int_equal(pw_store_totals(st, "win-01", T0 + 20000, T0 + 70000, totals_cb, &v, &d), 0);
    assert_int_equal(v.n, 6); /* samples 2..7, as build() made them */
    for (unsigned k = 2; k <= 7; k++) {
        assert_int_equal(v.ts[k - 2], T0 + 10000ull * k);
        assert_int_equal(v.np[k - 2], 5000000 + k);
        assert_int_equal(v.lim[k - 2], 128ull << 20);
    }
    memset(&v, 0, sizeof(v));
    v.stop_after = 2; /* a positive return stops quietly */
    assert_int_equal(pw_store_totals(st, "win-01", 0, UINT64_MAX / 2, totals_cb, &v, &d), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.ts[1], T0 + 10000);
    assert_int_equal(pw_store_totals(st, "nope", 0, 1, totals_cb, &v, &d), PW_ENOENT);
    assert_int_equal(pw_store_totals(st, "win-01", 5, 1, totals_cb, &v, &d), PW_EINVAL);
}

/* Two agent instances writing as one host with interleaved times (a cloned machine, a
 * simulated history sent twice): the series comes back in time order, one point per time, the
 * later stored values kept at an equal time. */
static void test_interleaved_instances(void **state)
{
    (void)state;
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    /* Instance 1: samples k = 0..5 at T0 + 10 s k. Instance 2: k = 0..5 at T0 + 5 s + 10 s k,
     * except that its last one lands on instance 1's T0 + 50 s (k = 5). */
    pw_store_host_t h1 = host_of("dup", BOOT1, 64), h2 = host_of("dup", BOOT2, 64);
    for (unsigned k = 0; k < 6; k++) {
        build(&s, k);
        assert_int_equal(pw_store_put(st, &h1, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    for (unsigned k = 0; k < 6; k++) {
        build(&s, k + 20); /* other values */
        s.timestamp_ms = k < 5 ? T0 + 5000 + 10000ull * k : T0 + 50000;
        assert_int_equal(pw_store_put(st, &h2, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_store_series_t sr = {0};
    assert_int_equal(pw_store_series(st, "dup", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                     TAGS[1].pool, T0, T0 + 100000, 0, &sr, &d),
                     11); /* 6 + 6 samples, one time shared */
    for (size_t p = 0; p < sr.n; p++) {
        assert_int_equal(sr.points[p].ts_ms, T0 + 5000ull * p);
        uint64_t a, f, df, b;
        unsigned k = p % 2 == 0 ? (unsigned)(p / 2) : (unsigned)(p / 2) + 20;
        if (p == 10)
            k = 25; /* instance 2's, stored later */
        assert_true(row_of(1, k, &a, &f, &df, &b));
        assert_int_equal(sr.points[p].bytes, b);
        assert_int_equal(sr.points[p].allocs, a);
    }
    /* 1-min steps: one bucket, both instances' samples counted. */
    assert_int_equal(pw_store_series(st, "dup", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                     TAGS[1].pool, T0, T0 + 100000, 60000, &sr, &d),
                     1);
    assert_int_equal(sr.points[0].samples, 12);
    pw_store_series_free(&sr);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* Chunks of at most 4 samples: 10 samples make 3 chunks, the last one open. */
static void test_roundtrip(void **state)
{
    (void)state;
    pw_store_t *st = sealed_store(":memory:");
    pw_diag_t d;
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 3);
    assert_int_equal(ss.closed_chunks, 0); /* two sealed, one open */
    assert_int_equal(ss.samples, NSAMPLES);
    assert_int_equal(ss.hosts, 1);
    check_series_raw(st, "win-01"); /* read from the sealed chunks' rows */
    check_totals(st);
    /* Compacting, one chunk per call with a zero budget, changes nothing that can be read. */
    assert_int_equal(pw_store_compact(st, 0, &d), 1);
    check_series_raw(st, "win-01"); /* one in columns, one sealed, one open */
    assert_int_equal(pw_store_compact(st, 0, &d), 1);
    assert_int_equal(pw_store_compact(st, 0, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 2);
    assert_int_equal(ss.samples, NSAMPLES);
    check_series_raw(st, "win-01");
    check_totals(st);

    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    /* Closing every chunk changes nothing that can be read back. */
    assert_int_equal(pw_store_flush(st, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 3);
    check_series_raw(st, "win-01");
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);

    assert_int_equal(pw_store_latest(st, "nobody", &got, &d), PW_ENOENT);
    pw_store_series_t sr = {0};
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)"Nope", 4, PW_POOL_PAGED, T0,
                                     T0 + 100000, 0, &sr, &d),
                     0);
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)"Nope", 4, PW_POOL_PAGED,
                                     T0 + 1, T0, 0, &sr, &d),
                     PW_EINVAL);
    pw_store_series_free(&sr);
    pw_sample_close(&got);
    pw_store_close(st);
}

/* An agent's encoder, the collector's decoder of its frames, and the frame between them. */
typedef struct {
    pw_delta_enc_t enc;
    pw_delta_dec_t dec;
    pw_buf_t frame;
} agent_t;

static void agent_init(agent_t *a)
{
    assert_int_equal(pw_delta_enc_init(&a->enc, 64), 0);
    assert_int_equal(pw_delta_dec_init(&a->dec, 64, 0), 0);
    pw_buf_init(&a->frame, 1 << 20);
}

static void agent_close(agent_t *a)
{
    pw_delta_enc_close(&a->enc);
    pw_delta_dec_close(&a->dec);
    pw_buf_close(&a->frame);
}

/* What an agent sends and the collector applies: `s` encoded with `flags`, packed into
 * a->frame (the payload follows its PW_FRAME_HEADER bytes), unpacked and applied to a->dec.
 * Returns the unpacked envelope (the caller frees it with pw_codec_free). */
static Poolwatch__V1__Envelope *agent_frame(agent_t *a, const pw_sample_t *s, unsigned flags)
{
    pw_diag_t d;
    const Poolwatch__V1__Sample *msg;
    assert_int_equal(pw_delta_encode(&a->enc, s, flags, &msg, &d), 0);
    pw_buf_reset(&a->frame);
    assert_int_equal(pw_codec_pack_sample(msg, 1 << 20, &a->frame), 0);
    Poolwatch__V1__Envelope *env;
    assert_int_equal(
        pw_codec_unpack(a->frame.data + PW_FRAME_HEADER, a->frame.len - PW_FRAME_HEADER, &env, &d),
        0);
    assert_int_equal(pw_delta_apply(&a->dec, env->sample, NULL, &d), 0);
    return env;
}

/* pw_store_put_frame: an agent's encoder makes frames, a decoder (the collector's) applies
 * them and the store keeps them. Chunks of at most 4 samples; a keyframe from the agent at
 * sample 6, a pw_store_put of sample 7 in the middle, and callers that claim `follows` where
 * the store's chunk cannot continue (a new chunk at sample 4, after the pw_store_put at 8):
 * whatever the store decides to keep (the frame or a keyframe of the decoder), every sample
 * reads back value for value, and every chunk decodes on its own (flush, then read again). */
static void test_put_frame(void **state)
{
    (void)state;
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), 0);
    agent_t ag;
    agent_init(&ag);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("win-01", BOOT1, 64);
    int stored_last = 0;
    for (unsigned k = 0; k < NSAMPLES; k++) {
        build(&s, k);
        Poolwatch__V1__Envelope *env = agent_frame(&ag, &s, k == 6 ? PW_DELTA_KEYFRAME : 0);
        const uint8_t *payload = ag.frame.data + PW_FRAME_HEADER;
        size_t len = ag.frame.len - PW_FRAME_HEADER;
        const Poolwatch__V1__Sample *in = env->sample;
        assert_int_equal(in->keyframe, k == 0 || k == 6);
        int follows = stored_last && !in->keyframe && !in->dict_reset;
        if (k == 4 || k == 8)
            follows = 1; /* a new chunk (4), a chunk last written by pw_store_put (8) */
        int rc;
        if (k == 7) {
            rc = pw_store_put(st, &h, &s, 0, &d);
            stored_last = 0;
        } else {
            rc = pw_store_put_frame(st, &h, &ag.dec, payload, len, in->base_seq, follows,
                                    k == 3 ? 2 : 0, &d);
            stored_last = rc == 0;
        }
        if (rc != 0)
            fail_msg("put %u: %d %s", k, rc, d.msg);
        pw_codec_free(env);
        if (k % 3 == 2)
            assert_int_equal(pw_store_commit(st, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    /* The same seq again is a duplicate: nothing written. */
    assert_int_equal(pw_store_put_frame(st, &h, &ag.dec, NULL, 0, 0, 0, 0, &d), PW_STORE_DUPLICATE);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.samples, NSAMPLES);
    assert_int_equal(ss.chunks, 3);
    check_series_raw(st, "win-01");
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    assert_int_equal(pw_store_flush(st, &d), 0);
    check_series_raw(st, "win-01");
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    /* A decoder of another width than the host's, or without a table, is refused. */
    pw_store_host_t h32 = host_of("win-01", BOOT1, 32);
    assert_int_equal(pw_store_put_frame(st, &h32, &ag.dec, NULL, 0, 0, 0, 0, &d), PW_EINVAL);
    pw_delta_dec_t empty;
    assert_int_equal(pw_delta_dec_init(&empty, 64, 0), 0);
    assert_int_equal(pw_store_put_frame(st, &h, &empty, NULL, 0, 0, 0, 0, &d), PW_EINVAL);
    pw_delta_dec_close(&empty);
    pw_sample_close(&got);
    pw_sample_close(&s);
    agent_close(&ag);
    pw_store_close(st);
}

static void test_duplicates(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 4);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("win-01", BOOT1, 64);
    build(&s, 2); /* seq 102: stored already */
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_STORE_DUPLICATE);
    build(&s, 3);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_STORE_DUPLICATE);
    assert_int_equal(pw_store_commit(st, &d), 0);
    uint64_t seq = 0;
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT1, 16, &seq), 0);
    assert_int_equal(seq, 103);
    /* A new boot starts its seq again: not a duplicate. */
    pw_store_host_t h2 = host_of("win-01", BOOT2, 64);
    build(&s, 4);
    s.seq = 1;
    assert_int_equal(pw_store_put(st, &h2, &s, 0, &d), 0);
    assert_int_equal(pw_store_put(st, &h2, &s, 0, &d), PW_STORE_DUPLICATE);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), 0);
    assert_int_equal(seq, 1);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT1, 16, &seq), 0);
    assert_int_equal(seq, 103);
    assert_int_equal(pw_store_last_seq(st, BOOT1, 16, BOOT1, 16, &seq), PW_ENOENT);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.samples, 5);
    assert_int_equal(ss.duplicates, 3);
    /* A row the codec refuses (diff != allocs - frees) is refused, the rest stays. */
    build(&s, 5);
    s.entries[0].diff += 1;
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_EINVAL);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT1, 16, &seq), 0);
    assert_int_equal(seq, 103);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* A database written before schema 3 holds closed chunks as zstd-compressed records (layout
 * 1 of chunk.h). Such chunks are made here by hand from the sealed chunks' rows, exactly as
 * that version's close did, and must read back value for value; compacting afterwards leaves
 * them alone. */
static void test_layout1_chunks(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st = sealed_store(t.path);
    pw_diag_t d;
    pw_store_close(st); /* two sealed chunks, one open */

    sqlite3 *db;
    assert_int_equal(sqlite3_open(t.path, &db), SQLITE_OK);
    sqlite3_stmt *ids, *rows, *upd;
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT id FROM chunks WHERE sealed=1 ORDER BY id", -1, &ids, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT seq, data FROM chunk_rows WHERE chunk_id=?1"
                                        " ORDER BY idx",
                                        -1, &rows, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "UPDATE chunks SET raw_size=?2, data=?3, fmt=1"
                                        " WHERE id=?1",
                                        -1, &upd, NULL),
                     SQLITE_OK);
    int n = 0;
    while (sqlite3_step(ids) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(ids, 0);
        uint8_t recs[1 << 16];
        size_t len = 0;
        sqlite3_bind_int64(rows, 1, id);
        while (sqlite3_step(rows) == SQLITE_ROW) {
            uint64_t seq = (uint64_t)sqlite3_column_int64(rows, 0);
            while (seq >= 0x80) {
                recs[len++] = (uint8_t)(seq | 0x80);
                seq >>= 7;
            }
            recs[len++] = (uint8_t)seq;
            size_t fl = (size_t)sqlite3_column_bytes(rows, 1);
            assert_true(len + fl < sizeof(recs));
            memcpy(recs + len, sqlite3_column_blob(rows, 1), fl);
            len += fl;
        }
        sqlite3_reset(rows);
        uint8_t z[1 << 16];
        size_t zn = ZSTD_compress(z, sizeof(z), recs, len, 3);
        assert_false(ZSTD_isError(zn));
        sqlite3_bind_int64(upd, 1, id);
        sqlite3_bind_int64(upd, 2, (int64_t)len);
        sqlite3_bind_blob(upd, 3, z, (int)zn, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(upd), SQLITE_DONE);
        sqlite3_reset(upd);
        n++;
    }
    assert_int_equal(n, 2);
    sqlite3_finalize(ids);
    sqlite3_finalize(rows);
    sqlite3_finalize(upd);
    assert_int_equal(sqlite3_exec(db,
                                  "DELETE FROM chunk_rows WHERE chunk_id IN"
                                  " (SELECT id FROM chunks WHERE data IS NOT NULL)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    assert_int_equal(pw_store_open(t.path, &CHUNKS4, &st, &d), 0);
    check_series_raw(st, "win-01");
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 2);
    assert_int_equal(pw_store_compact(st, 1000, &d), 0);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    pw_sample_close(&got);
    pw_store_close(st);
    tmp_remove(&t);
}

/* A sealed chunk whose rows were damaged on disk: compaction keeps it as records (no
 * rollups) and goes on with the others instead of failing on it for ever. */
/* A compaction's own transaction carries no ack: its commit is not synced (synchronous=NORMAL
 * for it), and the connection is back at FULL for the group commits that carry acks. The
 * store's statements traced in order: NORMAL, COMMIT, FULL around the compaction, then FULL read
 * back on the store's own connection. */
static char sync_trace[4096];

static int trace_sync(unsigned type, void *ctx, void *p, void *x)
{
    (void)type, (void)ctx, (void)x;
    const char *sql = sqlite3_sql((sqlite3_stmt *)p);
    if (sql != NULL && (strstr(sql, "synchronous") != NULL || strcmp(sql, "COMMIT") == 0)) {
        size_t n = strlen(sync_trace);
        snprintf(sync_trace + n, sizeof(sync_trace) - n, "%s;", sql);
    }
    return 0;
}

static void test_compact_commit_not_synced(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st = sealed_store(t.path);
    pw_diag_t d;
    pw_store_close(st); /* two sealed chunks, one open */
    assert_int_equal(pw_store_open(t.path, &CHUNKS4, &st, &d), 0);
    sqlite3 *db = st->sql->db;
    sync_trace[0] = '\0';
    assert_int_equal(sqlite3_trace_v2(db, SQLITE_TRACE_STMT, trace_sync, NULL), SQLITE_OK);
    assert_int_equal(pw_store_compact(st, 1000, &d), 2);
    assert_string_equal(sync_trace, "PRAGMA synchronous=NORMAL;COMMIT;PRAGMA synchronous=FULL;");
    sqlite3_trace_v2(db, 0, NULL, NULL);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 2); /* FULL */
    sqlite3_finalize(q);
    pw_store_close(st);
    tmp_remove(&t);
}

static void test_compact_damaged(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st = sealed_store(t.path);
    pw_diag_t d;
    pw_store_close(st); /* two sealed chunks, one open */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(t.path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE chunk_rows SET data=x'0000000312345678' WHERE idx=2"
                                  " AND chunk_id=(SELECT min(id) FROM chunks)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);

    assert_int_equal(pw_store_open(t.path, &CHUNKS4, &st, &d), 0);
    assert_int_equal(pw_store_compact(st, 1000, &d), 2);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 2);
    assert_int_equal(ss.compact_fallbacks, 1);
    assert_int_equal(ss.rollup_windows, 0); /* rollups wait until the chunks expire */
    assert_int_equal(ss.series_pages, 1);   /* the good chunk's only */
    /* The damaged chunk says so when read; the newest one is intact. */
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)"Ntfx", 4, PW_POOL_NONPAGED, T0,
                                     T0 + 3600000, 0, &ser, &d),
                     PW_ECORRUPT);
    pw_store_series_free(&ser);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    pw_sample_close(&got);
    /* The damaged chunk (samples 0..3) expires: retention records it as lost, every row, and
     * goes on (it failed the whole pass, at every pass); the good one leaves its rollups. */
    assert_true(pw_store_retention(st, T0 + 70000 + PW_STORE_DEFAULT_RAW_RETENTION_MS + 1, &d) > 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 1); /* the open one */
    assert_int_equal(ss.pages_lost, 1);
    pw_store_gap_t *g;
    size_t n;
    assert_int_equal(pw_store_gaps(st, "win-01", T0, T0 + 100000, &g, &n, &d), 0);
    assert_int_equal(n, 2); /* the agent's gap before sample 3 (put_all), the chunk */
    assert_int_equal(g[0].cause, PW_STORE_GAP_AGENT);
    assert_int_equal(g[1].cause, PW_STORE_GAP_DAMAGED);
    assert_int_equal(g[1].t0_ms, T0);
    assert_int_equal(g[1].t1_ms, T0 + 30000);
    assert_int_equal(g[1].missed, 4);
    assert_int_equal(g[1].all_rows, 1);
    static const char why[] = "chunk 1 at expiry: chunk record does not decode: malformed frame"
                              " or protobuf message at byte "; /* then the offset of the record */
    if (strncmp(g[1].detail, why, sizeof(why) - 1) != 0)
        fail_msg("detail \"%s\"", g[1].detail);
    pw_store_gaps_free(g);
    pw_store_close(st);
    tmp_remove(&t);
}

/* The background checkpointer copies the WAL back into the database while the store is open
 * (a new connection's checkpoint was a silent no-op: the WAL grew without end and the database
 * file stayed at its first page until a clean close). */
/* A store whose directory is missing says so (SQLite alone: "unable to open database file"). */
static void test_open_missing_directory(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    char path[320];
    snprintf(path, sizeof(path), "%s/missing/poolwatch.db", t.dir);
    pw_store_t *st = NULL;
    pw_diag_t d;
    assert_int_equal(pw_store_open(path, NULL, &st, &d), PW_ESTORE);
    assert_null(st);
    char want[400];
    snprintf(want, sizeof(want),
             "(directory %s/missing: No such file or directory; create it or set store.path)",
             t.dir);
    if (strstr(d.msg, want) == NULL)
        fail_msg("message: %s", d.msg);
    tmp_remove(&t);
}

static void test_checkpoint_while_open(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, NSAMPLES);
    struct stat db;
    int grew = 0;
    for (int i = 0; i < 100 && !grew; i++) { /* checkpoints run every second */
        usleep(100000);
        assert_int_equal(stat(t.path, &db), 0);
        grew = db.st_size > 4096; /* the first page is all SQLite writes before one */
    }
    if (!grew)
        fail_msg("%s is still %lld bytes after 10 s: no checkpoint", t.path, (long long)db.st_size);
    pw_store_close(st);
    tmp_remove(&t);
}

static void test_restart(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 6);
    put_all(st, "lnx-02", BOOT2, 0, 3);
    /* a replay agent's host: its Hello's source kind and interval come back with the host */
    static const uint8_t boot3[16] = {0xb0, 3};
    pw_store_host_t rh = host_of("rpl-03", boot3, 64);
    rh.source_kind = 3;
    rh.interval_ms = 1000;
    pw_sample_t one;
    pw_sample_init(&one);
    build(&one, 0);
    assert_int_equal(pw_store_put(st, &rh, &one, 0, &d), 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_sample_close(&one);
    pw_store_close(st); /* leaves open chunks on disk */

    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, 5);
    assert_int_equal(pw_store_latest(st, "lnx-02", &got, &d), 0);
    check_table(&got, 2);
    uint64_t seq = 0;
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT1, 16, &seq), 0);
    assert_int_equal(seq, 105);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), 0);
    assert_int_equal(seq, 102);
    pw_store_host_info_t *hosts;
    size_t nh;
    assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
    assert_int_equal(nh, 3);
    assert_string_equal(hosts[0].name, "lnx-02");
    assert_string_equal(hosts[1].name, "rpl-03");
    assert_int_equal(hosts[1].source_kind, 3);
    assert_int_equal(hosts[1].interval_ms, 1000);
    assert_int_equal(hosts[0].source_kind, 0); /* an agent that said none */
    assert_int_equal(hosts[0].interval_ms, 0);
    assert_string_equal(hosts[2].name, "win-01");
    assert_int_equal(hosts[2].last_seq, 105);
    assert_int_equal(hosts[2].last_seen_ms, T0 + 50000);
    assert_int_equal(hosts[2].boot_id_len, 16);
    assert_memory_equal(hosts[2].boot_id, BOOT1, 16);
    assert_string_equal(hosts[2].os, "windows 10.0");
    pw_store_hosts_free(hosts, nh);

    /* Continue after the restart: the reloaded open chunk is closed, a new one starts. */
    put_all(st, "win-01", BOOT1, 6, NSAMPLES);
    check_series_raw(st, "win-01");
    pw_store_close(st);
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    check_series_raw(st, "win-01");
    pw_sample_close(&got);
    pw_store_close(st);
    tmp_remove(&t);
}

/* ---- a VFS whose WAL truncation to zero is slow (a TRUNCATE checkpoint under heavy I/O) ---- */

typedef struct {
    sqlite3_file base;
    sqlite3_file *real; /* follows this struct in the same allocation */
    int wal;
} slow_file_t;

static sqlite3_vfs *slow_real;
static atomic_int slow_trunc_ms;   /* sleep this long before truncating a WAL to 0 bytes */
static atomic_int slow_truncating; /* 1 while such a truncation sleeps */
static atomic_int slow_truncations;

#define REAL(f) (((slow_file_t *)(f))->real)
static int sl_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    return rc;
}
static int sl_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int sl_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int sl_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int ms = atomic_load(&slow_trunc_ms);
    if (((slow_file_t *)f)->wal && size == 0 && ms > 0) {
        atomic_store(&slow_truncating, 1);
        uv_sleep((unsigned)ms);
        atomic_fetch_add(&slow_truncations, 1);
        int rc = REAL(f)->pMethods->xTruncate(REAL(f), size);
        atomic_store(&slow_truncating, 0);
        return rc;
    }
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int sl_sync(sqlite3_file *f, int fl)
{
    return REAL(f)->pMethods->xSync(REAL(f), fl);
}
static int sl_size(sqlite3_file *f, sqlite3_int64 *sz)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), sz);
}
static int sl_lock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int sl_unlock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int sl_check(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int sl_fctl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int sl_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int sl_dev(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int sl_shmmap(sqlite3_file *f, int i, int sz, int ext, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, p);
}
static int sl_shmlock(sqlite3_file *f, int off, int n, int fl)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, fl);
}
static void sl_shmbarrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int sl_shmunmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int sl_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
    return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int sl_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}
#undef REAL

static const sqlite3_io_methods slow_io = {
    3,          sl_close,      sl_read,     sl_write, sl_truncate, sl_sync, sl_size,
    sl_lock,    sl_unlock,     sl_check,    sl_fctl,  sl_sector,   sl_dev,  sl_shmmap,
    sl_shmlock, sl_shmbarrier, sl_shmunmap, sl_fetch, sl_unfetch};

static int sl_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)v;
    slow_file_t *sf = (slow_file_t *)f;
    sf->real = (sqlite3_file *)(sf + 1);
    sf->wal = (flags & SQLITE_OPEN_WAL) != 0;
    f->pMethods = NULL;
    int rc = slow_real->xOpen(slow_real, name, sf->real, flags, out);
    if (sf->real->pMethods != NULL)
        f->pMethods = &slow_io;
    return rc;
}

static sqlite3_vfs slow_vfs;

/* Registers the slow VFS as the default (it forwards everything to the one it replaces). */
static void slow_vfs_on(void)
{
    /* still on after a failed test (cmocka goes on without its clean-up): wrapping the slow
     * VFS in itself would open files with the wrong size */
    if (sqlite3_vfs_find(NULL) == &slow_vfs)
        return;
    slow_real = sqlite3_vfs_find(NULL);
    assert_non_null(slow_real);
    slow_vfs = *slow_real;
    slow_vfs.zName = "pw-slow-truncate";
    slow_vfs.szOsFile = (int)sizeof(slow_file_t) + slow_real->szOsFile;
    slow_vfs.xOpen = sl_open;
    slow_vfs.pNext = NULL;
    assert_int_equal(sqlite3_vfs_register(&slow_vfs, 1), SQLITE_OK);
}

static void slow_vfs_off(void)
{
    sqlite3_vfs_unregister(&slow_vfs);
    sqlite3_vfs_register(slow_real, 1);
}

/* Turns the slow VFS on, opens a store in `t` (busy timeout 200 ms) with 5 samples of win-01,
 * makes WAL truncations take `ms` and waits until the checkpointer's idle TRUNCATE (5 s after
 * the last commit, in its round of every second) is under way. */
static pw_store_t *open_while_truncating(tmp_t *t, unsigned ms)
{
    slow_vfs_on();
    tmp_make(t);
    pw_store_opts_t o = {.busy_timeout_ms = 200};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t->path, &o, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 5);
    atomic_store(&slow_trunc_ms, (int)ms);
    int seen = 0;
    for (int i = 0; i < 1500 && !seen; i++) {
        uv_sleep(10);
        seen = atomic_load(&slow_truncating);
    }
    if (!seen)
        fail_msg("no TRUNCATE checkpoint within 15 s of the last commit");
    return st;
}

/* The checkpointer's idle TRUNCATE holds the write lock while the WAL file is truncated; under
 * heavy I/O that outlasted the writer's busy timeout and a put failed with "database is locked"
 * (bench_detect_scale). Here the truncation takes 1.5 s against a 200 ms busy timeout: the put
 * that comes meanwhile waits for it and succeeds. */
static void test_put_during_truncate(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_while_truncating(&t, 1500);
    assert_int_equal(atomic_load(&slow_truncating), 1);
    put_all(st, "win-01", BOOT1, 5, NSAMPLES); /* asserts every put and commit succeeded */
    /* the first put waited for the truncation to end */
    assert_int_equal(atomic_load(&slow_truncating), 0);
    assert_int_equal(atomic_load(&slow_truncations), 1);
    atomic_store(&slow_trunc_ms, 0);
    check_series_raw(st, "win-01");
    pw_store_close(st);
    slow_vfs_off();
    tmp_remove(&t);
}

/* A checkpointer truncation that outlasts the writer's 5-s wait for it (8 s here, a file system
 * under heavy I/O): the put gives up with "database is locked" instead of holding the collector's
 * loop (and its SIGTERM) as long (the agents resend what was not acked), the calls after it fail
 * at once while the same hold lasts, and closing the store does not wait for the truncation
 * either. Before: the put waited up to 60 s, the close joined the checkpointer after it. */
static void test_stop_during_truncate(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_while_truncating(&t, 8000);
    pw_store_opts_t o = {.busy_timeout_ms = 200};
    pw_diag_t d;
    pw_sample_t s;
    pw_sample_init(&s);
    build(&s, 5);
    pw_store_host_t h = host_of("win-01", BOOT1, 64);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_ESTORE);
    assert_non_null(strstr(d.msg, "database is locked"));
    assert_int_equal(atomic_load(&slow_truncating), 1); /* gave up before the hold ended */
    /* The same hold outlasted a whole wait: the next calls fail at once while it lasts (two
     * more 5-s waits would end after it; a SIGTERM waited behind such waits). */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_ESTORE);
        assert_true(pw_store_compact(st, 20, &d) < 0); /* after a rollback it looks again */
    }
    assert_int_equal(atomic_load(&slow_truncating), 1);
    pw_store_close(st);
    assert_int_equal(atomic_load(&slow_truncating), 1); /* and the close did not wait */
    for (int i = 0; i < 1500 && atomic_load(&slow_truncating); i++)
        uv_sleep(10);
    uv_sleep(200); /* the checkpointer frees itself after its truncation */
    atomic_store(&slow_trunc_ms, 0);
    /* nothing acknowledged was lost: the five samples are there */
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_series_n(st, "win-01", 5);
    pw_store_close(st);
    pw_sample_close(&s);
    slow_vfs_off();
    tmp_remove(&t);
}

/* 2,000 rows that all change, `n` samples in one transaction: a WAL of ~25 KB a sample. */
static void put_wide(pw_store_t *st, const pw_store_host_t *h, pw_sample_t *s, unsigned k,
                     uint64_t ts, unsigned nrows, char prefix);

/* A burst (one transaction of ~6 MiB) leaves the WAL above the 4 MiB that the checkpointer
 * truncates when the store is idle: truncating it would hold the write lock while the file
 * system frees it, and the writer waited for that on the collector's loop. The checkpointer
 * leaves it (no truncation at all, with the store idle for longer than its 5 s); the retention
 * pass truncates it on the writer's own connection. */
static void test_idle_large_wal(void **state)
{
    (void)state;
    slow_vfs_on();
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    char walp[320];
    snprintf(walp, sizeof(walp), "%s-wal", t.path);
    pw_store_host_t h = host_of("burst", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < 250; k++)
        put_wide(st, &h, &s, k, T0 + 10000ull * k, 2000, 'B');
    assert_int_equal(pw_store_commit(st, &d), 0);
    /* Counted from here: puts slower than the idle time (ASan on a loaded machine) let the
     * checkpointer truncate the still small WAL before the commit, which is right. */
    atomic_store(&slow_truncations, 0);
    atomic_store(&slow_trunc_ms, 1); /* counts every truncation of the WAL to 0 bytes */
    struct stat sb;
    assert_int_equal(stat(walp, &sb), 0);
    uint64_t wal = (uint64_t)sb.st_size;
    if (wal <= (4u << 20))
        fail_msg("the burst left a WAL of %llu bytes: not above 4 MiB", (unsigned long long)wal);
    uv_sleep(7500); /* idle for 5 s, then more than one round of the checkpointer */
    assert_int_equal(atomic_load(&slow_truncations), 0);
    assert_int_equal(stat(walp, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, wal);
    /* nothing to delete yet: the pass only truncates the idle WAL */
    assert_int_equal(pw_store_retention(st, T0 + 3600000, &d), 0);
    assert_int_equal(atomic_load(&slow_truncations), 1);
    assert_int_equal(stat(walp, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    atomic_store(&slow_trunc_ms, 0);
    atomic_store(&slow_truncations, 0);
    pw_sample_close(&s);
    pw_store_close(st);
    slow_vfs_off();
    tmp_remove(&t);
}

/* The host's last seq and time and every agent instance's last seq, as the puts gave them:
 * puts write the instance and host rows only when they change (another instance, OS or width)
 * and when a chunk is sealed, the newest samples' seq and time are read from the open chunk.
 * Here across seals (4 samples a chunk), instance switches (boot 1, boot 2, back to boot 1),
 * uncommitted puts, a close without flush (the open chunk stays open; the close writes the rows)
 * and a retire that keeps the history while the same agent instance goes on under the name.
 * After a crash the rows are behind: test_crash_after_ack. */
static void check_last(pw_store_t *st, const char *host, uint64_t seq1, uint64_t seq2,
                       uint64_t host_seq, uint64_t host_ts)
{
    uint64_t seq = 0;
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT1, 16, &seq), 0);
    assert_int_equal(seq, seq1);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), 0);
    assert_int_equal(seq, seq2);
    assert_int_equal(pw_store_agent_last_seq(st, AGENT, 16, &seq), 0);
    assert_int_equal(seq, seq1 > seq2 ? seq1 : seq2);
    pw_store_host_info_t *hosts;
    size_t nh;
    pw_diag_t d;
    assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
    assert_int_equal(nh, 1);
    assert_string_equal(hosts[0].name, host);
    assert_int_equal(hosts[0].last_seq, host_seq);
    assert_int_equal(hosts[0].last_seen_ms, host_ts);
    pw_store_hosts_free(hosts, nh);
}

static void put_k(pw_store_t *st, const char *host, const uint8_t *boot, unsigned k, uint64_t seq,
                  int want)
{
    pw_sample_t s;
    pw_sample_init(&s);
    build(&s, k);
    s.seq = seq;
    pw_store_host_t h = host_of(host, boot, 64);
    pw_diag_t d;
    int rc = pw_store_put(st, &h, &s, 0, &d);
    if (rc != want)
        fail_msg("put %u (seq %llu): %d, not %d (%s)", k, (unsigned long long)seq, rc, want, d.msg);
    pw_sample_close(&s);
}

static void test_instance_last_seq(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    for (unsigned k = 0; k < 6; k++) /* a chunk of 4 sealed, 2 in the open one */
        put_k(st, "h", BOOT1, k, 100 + k, 0);
    put_k(st, "h", BOOT2, 6, 1, 0); /* the agent restarted: seqs from 1 */
    put_k(st, "h", BOOT2, 7, 2, 0);
    check_last(st, "h", 105, 2, 2, T0 + 70000); /* uncommitted puts count */
    assert_int_equal(pw_store_commit(st, &d), 0);
    put_k(st, "h", BOOT1, 8, 106, 0); /* boot 1's spool resent after boot 2's */
    assert_int_equal(pw_store_commit(st, &d), 0);
    check_last(st, "h", 106, 2, 106, T0 + 80000);
    pw_store_close(st); /* no flush: the open chunk stays open, as after a crash */

    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_last(st, "h", 106, 2, 106, T0 + 80000);
    put_k(st, "h", BOOT1, 8, 106, PW_STORE_DUPLICATE);
    put_k(st, "h", BOOT2, 7, 2, PW_STORE_DUPLICATE);
    put_k(st, "h", BOOT2, 9, 3, 0);
    put_k(st, "h", BOOT1, 10, 107, 0);
    put_k(st, "h", BOOT1, 11, 108, 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    check_last(st, "h", 108, 3, 108, T0 + 110000);
    /* kept under another name; the same instance goes on under "h", a new host */
    assert_int_equal(pw_store_host_retire(st, "h", 1, T0 + 200000, &d), 0);
    put_k(st, "h", BOOT1, 11, 108, PW_STORE_DUPLICATE);
    put_k(st, "h", BOOT1, 12, 109, 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    check_last(st, "h", 109, 3, 109, T0 + 120000);
    pw_store_close(st);
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_last(st, "h", 109, 3, 109, T0 + 120000);
    put_k(st, "h", BOOT1, 12, 109, PW_STORE_DUPLICATE);
    pw_store_close(st);
    tmp_remove(&t);
}

/* pw_store_totals_series of samples 0..n-1 of build() (every 10 s from T0, nonpaged 5,000,000 +
 * k, limit 128 MiB) at 1-min and 15-min steps, computed here from those formulas: each sample
 * counted once, whichever chunk (sealed, open, left by a crash) holds it. */
static void check_built_totals(pw_store_t *st, const char *host, unsigned n)
{
    pw_store_tseries_t ts = {0};
    pw_diag_t d;
    for (int lv = 0; lv < 2; lv++) {
        const uint64_t step = lv ? 900000 : 60000, last = T0 + 10000ull * (n - 1);
        int64_t got = pw_store_totals_series(st, host, T0, last, step, &ts, &d);
        assert_int_equal(got, (last - T0) / step + 1); /* T0 is a multiple of 15 min */
        unsigned k = 0;
        for (size_t i = 0; i < ts.n; i++) {
            const pw_store_tpoint_t *p = &ts.points[i];
            unsigned k0 = k;
            while (k < n && T0 + 10000ull * k < T0 + step * (i + 1))
                k++;
            assert_int_equal(p->ts_ms, T0 + step * i);
            assert_int_equal(p->samples, k - k0);
            assert_int_equal(p->last_ms, T0 + 10000ull * (k - 1));
            assert_int_equal(p->nonpaged, 5000000 + k - 1);
            assert_int_equal(p->nonpaged_min, 5000000 + k0);
            assert_int_equal(p->nonpaged_max, 5000000 + k - 1);
            assert_int_equal(p->nonpaged_limit, 128ull << 20);
        }
        assert_int_equal(k, n);
    }
    pw_store_tseries_free(&ts);
}

#ifndef _WIN32
/* A collector killed with SIGKILL between group commits: every sample acknowledged (its commit
 * returned) is there after a reopen, and the last seqs and times read from the open chunk are
 * those of the newest sample stored (the acknowledged one, or the one whose commit had returned
 * when the kill came before its ack). Three kills at different points, instance switches every
 * 7 samples and chunks of 4. */
static void test_crash_after_ack(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    unsigned next = 0;
    for (unsigned round = 0; round < 3; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            pw_store_t *st;
            pw_diag_t d;
            if (pw_store_open(t.path, &o, &st, &d) != 0)
                _exit(2);
            pw_sample_t s;
            pw_sample_init(&s);
            for (unsigned k = next;; k++) {
                build(&s, k);
                pw_store_host_t h = host_of("crash", (k / 7) % 2 ? BOOT2 : BOOT1, 64);
                if (pw_store_put(st, &h, &s, 0, &d) != 0 || pw_store_commit(st, &d) != 0 ||
                    pw_store_compact(st, 20, &d) < 0)
                    _exit(3);
                uint32_t ack = k;
                if (write(fds[1], &ack, sizeof(ack)) != (ssize_t)sizeof(ack))
                    _exit(4);
            }
        }
        close(fds[1]);
        uint32_t ack = 0, last = UINT32_MAX;
        while (read(fds[0], &ack, sizeof(ack)) == (ssize_t)sizeof(ack)) {
            last = ack;
            if (ack >= next + 9 + 5 * round)
                break;
        }
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        while (read(fds[0], &ack, sizeof(ack)) == (ssize_t)sizeof(ack))
            last = ack;
        close(fds[0]);
        if (last == UINT32_MAX)
            fail_msg("round %u: the child acknowledged nothing (status %d)", round, status);

        pw_store_t *st;
        pw_diag_t d;
        assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
        pw_sample_t got;
        pw_sample_init(&got);
        assert_int_equal(pw_store_latest(st, "crash", &got, &d), 0);
        unsigned stored = (unsigned)(got.seq - 100); /* the newest sample stored */
        assert_true(stored == last || stored == last + 1);
        check_table(&got, stored);
        check_series_n(st, "crash", stored + 1);
        uint64_t seq = 0;
        const uint8_t *boot = (stored / 7) % 2 ? BOOT2 : BOOT1;
        assert_int_equal(pw_store_last_seq(st, AGENT, 16, boot, 16, &seq), 0);
        assert_int_equal(seq, 100 + stored);
        pw_store_host_info_t *hosts;
        size_t nh;
        assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
        assert_int_equal(nh, 1);
        assert_int_equal(hosts[0].last_seq, 100 + stored);
        assert_int_equal(hosts[0].last_seen_ms, T0 + 10000ull * stored);
        assert_memory_equal(hosts[0].boot_id, boot, 16);
        pw_store_hosts_free(hosts, nh);
        /* the host's totals: the open chunk's buckets were in memory only, its samples are
         * replayed; the chunks a previous kill left open were sealed and their buckets written
         * by compaction, once */
        check_built_totals(st, "crash", stored + 1);
        /* what came after is not a duplicate, what was stored is */
        pw_store_host_t h = host_of("crash", boot, 64);
        build(&got, stored);
        assert_int_equal(pw_store_put(st, &h, &got, 0, &d), PW_STORE_DUPLICATE);
        pw_sample_close(&got);
        pw_store_close(st);
        next = stored + 1;
    }
    tmp_remove(&t);
}
#endif

/* A small series written by hand: bytes per sample and where the 1-min / 15-min buckets
 * cut it. diff = bytes / 10, allocs = 1000 + 10 * k, frees = allocs - diff. */
static const uint64_t HB_TS[] = {0, 20000, 40000, 60000, 80000, 100000, 900000, 920000};
static const uint64_t HB_BYTES[] = {100, 300, 50, 400, 10, 250, 700, 600};
#define HB_N 8

static void check_point(const pw_store_point_t *p, uint64_t ts, uint64_t last, uint64_t min,
                        uint64_t max, uint32_t n, unsigned last_k)
{
    assert_int_equal(p->ts_ms, ts);
    assert_int_equal(p->bytes, last);
    assert_int_equal(p->bytes_min, min);
    assert_int_equal(p->bytes_max, max);
    assert_int_equal(p->diff, last / 10);
    assert_int_equal(p->diff_min, min / 10);
    assert_int_equal(p->diff_max, max / 10);
    assert_int_equal(p->allocs, 1000 + 10 * last_k);
    assert_int_equal(p->frees, 1000 + 10 * last_k - last / 10);
    assert_int_equal(p->samples, n);
}

static void check_rollups(pw_store_t *st)
{
    pw_store_series_t sr = {0};
    pw_diag_t d;
    /* 1 min: [100 300 50] [400 10 250] [700 600] */
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Leak", 4, PW_POOL_NONPAGED, T0,
                                     T0 + 3600000, 60000, &sr, &d),
                     3);
    assert_int_equal(sr.level, PW_STORE_1MIN);
    check_point(&sr.points[0], T0, 50, 50, 300, 3, 2);
    check_point(&sr.points[1], T0 + 60000, 250, 10, 400, 3, 5);
    check_point(&sr.points[2], T0 + 900000, 600, 600, 700, 2, 7);
    /* 15 min: [100 300 50 400 10 250] [700 600] */
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Leak", 4, PW_POOL_NONPAGED, T0,
                                     T0 + 3600000, 900000, &sr, &d),
                     2);
    assert_int_equal(sr.level, PW_STORE_15MIN);
    check_point(&sr.points[0], T0, 250, 10, 400, 6, 5);
    check_point(&sr.points[1], T0 + 900000, 600, 600, 700, 2, 7);
    /* 5-min steps over 1-min buckets: the same groups as 15 min here except the cut. */
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Leak", 4, PW_POOL_NONPAGED,
                                     T0 + 60000, T0 + 3600000, 300000, &sr, &d),
                     2);
    check_point(&sr.points[0], T0, 250, 10, 400, 3, 5);
    pw_store_series_free(&sr);
}

static void test_rollups(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_store_host_t h = host_of("h", BOOT1, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < HB_N; k++) {
        pw_sample_reset(&s);
        s.seq = k + 1;
        s.timestamp_ms = T0 + HB_TS[k];
        uint64_t a = 1000 + 10 * k, df = HB_BYTES[k] / 10;
        assert_int_equal(pw_sample_add(&s, "Leak", 4, PW_POOL_NONPAGED, a, a - df, df, HB_BYTES[k]),
                         0);
        assert_int_equal(pw_sample_add(&s, "Othr", 4, PW_POOL_PAGED, 5, 1, 4, 4096), 0);
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    check_rollups(st); /* from the open chunk, read raw */
    assert_int_equal(pw_store_flush(st, &d), 0);
    check_rollups(st); /* from the series pages */
    /* Raw chunks gone after 48 h: the 15-min rollups and the series pages (the 1-min level,
     * kept for its retention) answer, raw steps included. */
    assert_int_equal(
        pw_store_retention(st, T0 + 920000 + PW_STORE_DEFAULT_RAW_RETENTION_MS + 1, &d), 1);
    check_rollups(st);
    pw_store_series_t sr = {0};
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Leak", 4, PW_POOL_NONPAGED, T0,
                                     T0 + 3600000, 0, &sr, &d),
                     HB_N);
    pw_store_series_free(&sr);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* 600 rows (series pages hold 32 tags): row r of sample k (k = 0..3, at T0 + 15 s * k) has
 * bytes 1000 * r + 7 * k, diff = r + k, allocs = 10 * r + k + 100 (one minute). The 1-min and
 * 15-min answers come from the series pages while they live (the chunk's too), then the
 * 15-min one from the rollup each page leaves when it expires, all equal to the values above. */
static void check_paged(pw_store_t *st, int level, uint64_t step)
{
    static const unsigned rows[] = {0, 255, 256, 511, 599};
    pw_store_series_t sr = {0};
    pw_diag_t d;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        unsigned r = rows[i];
        char tag[5];
        snprintf(tag, sizeof(tag), "P%03u", r);
        assert_int_equal(pw_store_series(st, "pg", (const uint8_t *)tag, 4, PW_POOL_NONPAGED, T0,
                                         T0 + 3600000, step, &sr, &d),
                         1);
        assert_int_equal(sr.level, level);
        const pw_store_point_t *p = &sr.points[0];
        assert_int_equal(p->ts_ms, T0);
        assert_int_equal(p->samples, 4);
        assert_int_equal(p->bytes, 1000ull * r + 21);
        assert_int_equal(p->bytes_min, 1000ull * r);
        assert_int_equal(p->bytes_max, 1000ull * r + 21);
        assert_int_equal(p->diff, r + 3);
        assert_int_equal(p->diff_min, r);
        assert_int_equal(p->allocs, 10ull * r + 103);
        assert_int_equal(p->frees, 10ull * r + 103 - (r + 3));
    }
    pw_store_series_free(&sr);
}

static void test_paged_lazy_rollups(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_store_host_t h = host_of("pg", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < 4; k++) {
        pw_sample_reset(&s);
        s.seq = k + 1;
        s.timestamp_ms = T0 + 15000ull * k;
        for (unsigned r = 0; r < 600; r++) {
            char tag[5];
            snprintf(tag, sizeof(tag), "P%03u", r);
            uint64_t a = 10ull * r + k + 100, df = r + k;
            assert_int_equal(
                pw_sample_add(&s, tag, 4, PW_POOL_NONPAGED, a, a - df, df, 1000ull * r + 7 * k), 0);
        }
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.rollup_windows, 0); /* written when the chunk expires */
    assert_int_equal(ss.series_pages, 19);  /* 600 tags in groups of 32 */
    check_paged(st, PW_STORE_1MIN, 60000);  /* from the series pages */
    check_paged(st, PW_STORE_15MIN, 900000);
    /* The chunk expires: its series pages stay as the 1-min and 15-min levels. */
    assert_int_equal(pw_store_retention(st, T0 + 60000 + PW_STORE_DEFAULT_RAW_RETENTION_MS + 1, &d),
                     1);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 0);
    assert_int_equal(ss.rollup_windows, 0);
    assert_int_equal(ss.series_pages, 19);
    check_paged(st, PW_STORE_1MIN, 60000);
    check_paged(st, PW_STORE_15MIN, 900000);
    /* The pages expire: each leaves its 15-min rollup (a page of its 32 rows). */
    assert_int_equal(
        pw_store_retention(st, T0 + 60000 + PW_STORE_DEFAULT_1MIN_RETENTION_MS + 1, &d), 19);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.rollup_windows, 19);
    assert_int_equal(ss.series_pages, 0);
    check_paged(st, PW_STORE_15MIN, 900000);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* Three chunks of two samples each, one hour apart; each level deletes exactly what is
 * older than its limit (a chunk's, page's or window's newest sample < now - limit). */
static void test_retention(void **state)
{
    (void)state;
    /* 19:30 UTC: the three chunks lie in one day, as chunk pages (no day page) */
    const uint64_t R0 = T0 - 3 * 3600000ull;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_store_host_t h = host_of("h", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < 6; k++) {
        pw_sample_reset(&s);
        s.seq = k + 1;
        s.timestamp_ms = R0 + 3600000ull * (k / 2) + 10000ull * (k % 2);
        assert_int_equal(pw_sample_add(&s, "Tag1", 4, PW_POOL_PAGED, 10 + k, 5, 5 + k, 100), 0);
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 3);
    /* A chunk's rollups are written when its raw data expires; its series pages answer. */
    assert_int_equal(ss.rollup_windows, 0);
    assert_int_equal(ss.series_pages, 3);
    const uint64_t H = 3600000, newest_a = R0 + 10000, newest_b = R0 + H + 10000;
    const uint64_t RAW = PW_STORE_DEFAULT_RAW_RETENTION_MS, M1 = PW_STORE_DEFAULT_1MIN_RETENTION_MS,
                   M15 = PW_STORE_DEFAULT_15MIN_RETENTION_MS;
    /* Exactly at the limit nothing goes; one ms later chunk a goes, then b. */
    assert_int_equal(pw_store_retention(st, newest_a + RAW, &d), 0);
    assert_int_equal(pw_store_retention(st, newest_a + RAW + 1, &d), 1);
    assert_int_equal(pw_store_retention(st, newest_b + RAW, &d), 0);
    assert_int_equal(pw_store_retention(st, newest_b + RAW + 1, &d), 1);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 1);
    assert_int_equal(ss.samples, 2);
    assert_int_equal(ss.rollup_windows, 0); /* a's and b's pages: their 1-min and 15-min levels */
    pw_store_series_t sr = {0};
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Tag1", 4, PW_POOL_PAGED, R0,
                                     R0 + 3 * H, 0, &sr, &d),
                     6); /* every sample: a's and b's from their series pages */
    assert_int_equal(sr.points[0].ts_ms, R0);
    assert_int_equal(sr.points[4].ts_ms, R0 + 2 * H);
    /* 1-min level of window a: its series page, which leaves its 15-min rollup. */
    assert_int_equal(pw_store_retention(st, newest_a + M1, &d), 1); /* raw chunk c */
    assert_int_equal(pw_store_retention(st, newest_a + M1 + 1, &d), 1);
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Tag1", 4, PW_POOL_PAGED, R0,
                                     R0 + 3 * H, 60000, &sr, &d),
                     2); /* windows b and c: one bucket each */
    assert_int_equal(sr.points[0].ts_ms, R0 + H);
    assert_int_equal(pw_store_series(st, "h", (const uint8_t *)"Tag1", 4, PW_POOL_PAGED, R0,
                                     R0 + 3 * H, 900000, &sr, &d),
                     3);
    assert_int_equal(sr.points[0].ts_ms, R0);
    assert_int_equal(sr.points[0].allocs, 11);
    /* Everything else. */
    assert_int_equal(pw_store_retention(st, newest_b + 2 * H + M1 + 1, &d), 2);
    assert_int_equal(pw_store_retention(st, newest_a + M15 + 1, &d), 1);
    assert_int_equal(pw_store_retention(st, newest_b + 2 * H + M15 + 1, &d), 2);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.rollup_windows, 0);
    assert_int_equal(ss.chunks, 0);
    pw_store_series_free(&sr);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* A database ceiling (PRAGMA max_page_count) fails writes with SQLITE_FULL exactly as a
 * full disk does: PW_ENOSPC, the committed data intact, and writes work again once the
 * ceiling is raised. */
static void test_disk_full(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 6);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(pw_store_set_max_bytes(st, 1, &d), 0); /* the current size, no more */

    /* Big tables of new tags until the database is full. */
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("big", BOOT2, 64);
    int rc = 0;
    unsigned k, last_ok = 0;
    for (k = 0; k < 200 && rc >= 0; k++) {
        pw_sample_reset(&s);
        s.seq = k + 1;
        s.timestamp_ms = T0 + 10000ull * k;
        for (unsigned i = 0; i < 500; i++) {
            char tag[16];
            int n = snprintf(tag, sizeof(tag), "T%u.%u", k, i);
            assert_int_equal(pw_sample_add(&s, tag, (size_t)n, PW_POOL_PAGED, 10, 1, 9, 99), 0);
        }
        rc = pw_store_put(st, &h, &s, 0, &d);
        if (rc == 0)
            rc = pw_store_commit(st, &d);
        if (rc == 0)
            last_ok = k + 1;
    }
    assert_int_equal(rc, PW_ENOSPC);
    assert_int_equal(d.code, PW_ENOSPC);
    assert_non_null(strstr(d.msg, "full"));
    uint64_t seq = 0;
    if (last_ok == 0) {
        assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), PW_ENOENT);
    } else {
        assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), 0);
        assert_int_equal(seq, last_ok);
    }

    /* What was committed before is intact, also after a reopen. */
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, 5);
    assert_int_equal(pw_store_set_max_bytes(st, 0, &d), 0);
    put_all(st, "win-01", BOOT1, 6, NSAMPLES);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), 0);
    assert_int_equal(seq, k);
    pw_store_close(st);
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, NSAMPLES - 1);
    check_series_raw(st, "win-01");
    assert_int_equal(pw_store_latest(st, "big", &got, &d), 0);
    assert_int_equal(got.n, 500);
    assert_int_equal(got.seq, k);
    pw_sample_close(&got);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* What an operator does to a host: limits given to an import survive a restart; a rename keeps
 * the history under the new name; retiring deletes the history, or keeps it under
 * "<name>#retired-<ms>" out of the host list; either way the name is free for a new host. */
static void test_host_lifecycle(void **state)
{
    (void)state;
    static const uint8_t BOOT3[16] = {0xb0, 3};
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 4); /* seqs 100..103 */
    put_all(st, "lnx-02", BOOT2, 0, 3); /* seqs 100..102 */
    pw_pool_limit_t np = {134217728, PW_LIMIT_COMPUTED,
                          "Windows Server 2003 x86 with /3GB: 128 MB"};
    pw_pool_limit_t p = {555745280, PW_LIMIT_COMPUTED, "Windows Server 2003 x86 with /3GB: 530 MB"};
    assert_int_equal(pw_store_host_limits(st, "win-01", &np, &p, &d), 0);
    assert_int_equal(pw_store_host_limits(st, "nope", &np, &p, &d), PW_ENOENT);
    assert_string_equal(d.msg, "no host 'nope' in the store");
    pw_store_close(st);

    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    pw_store_host_info_t *hosts;
    size_t nh;
    assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
    assert_int_equal(nh, 2);
    assert_string_equal(hosts[1].name, "win-01");
    assert_int_equal(hosts[1].nonpaged_limit.bytes, 134217728);
    assert_int_equal(hosts[1].nonpaged_limit.source, PW_LIMIT_COMPUTED);
    assert_string_equal(hosts[1].nonpaged_limit.detail,
                        "Windows Server 2003 x86 with /3GB: 128 MB");
    assert_int_equal(hosts[1].paged_limit.bytes, 555745280);
    assert_int_equal(hosts[0].nonpaged_limit.bytes, 0); /* lnx-02: none given */
    assert_int_equal(hosts[0].nonpaged_limit.source, PW_LIMIT_UNKNOWN);
    assert_string_equal(hosts[0].nonpaged_limit.detail, "");
    pw_store_hosts_free(hosts, nh);

    /* rename: the history follows; a taken name is refused */
    assert_int_equal(pw_store_host_rename(st, "lnx-02", "lnx-03", &d), 0);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_latest(st, "lnx-03", &got, &d), 0);
    check_table(&got, 2);
    assert_int_equal(pw_store_latest(st, "lnx-02", &got, &d), PW_ENOENT);
    assert_int_equal(pw_store_host_rename(st, "win-01", "lnx-03", &d), PW_EEXIST);
    assert_string_equal(d.msg, "a host named 'lnx-03' exists in the store");
    assert_int_equal(pw_store_host_rename(st, "nope", "x", &d), PW_ENOENT);

    /* retire keeping the history: out of the list, readable under its new name */
    assert_int_equal(pw_store_host_retire(st, "win-01", 1, T0 + 1, &d), 0);
    assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
    assert_int_equal(nh, 1);
    assert_string_equal(hosts[0].name, "lnx-03");
    pw_store_hosts_free(hosts, nh);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), PW_ENOENT);
    assert_int_equal(pw_store_latest(st, "win-01#retired-1700001000001", &got, &d), 0);
    check_table(&got, 3);
    /* the name is free: a new agent instance under it is a new host with only its samples */
    put_all(st, "win-01", BOOT3, 5, 6);
    assert_int_equal(pw_store_latest(st, "win-01", &got, &d), 0);
    check_table(&got, 5);
    assert_int_equal(got.seq, 105);

    /* retire deleting the history: gone with its agent instances */
    assert_int_equal(pw_store_host_retire(st, "lnx-03", 0, T0 + 2, &d), 0);
    assert_int_equal(pw_store_latest(st, "lnx-03", &got, &d), PW_ENOENT);
    uint64_t seq = 0;
    assert_int_equal(pw_store_last_seq(st, AGENT, 16, BOOT2, 16, &seq), PW_ENOENT);
    assert_int_equal(pw_store_host_retire(st, "lnx-03", 0, T0 + 3, &d), PW_ENOENT);
    assert_int_equal(pw_store_hosts(st, &hosts, &nh, &d), 0);
    assert_int_equal(nh, 1);
    assert_string_equal(hosts[0].name, "win-01");
    pw_store_hosts_free(hosts, nh);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.hosts, 2); /* win-01 and the retired row */
    pw_sample_close(&got);
    pw_store_close(st);
    tmp_remove(&t);
}

/* A host's series pages follow its row: retired with its history kept they answer under the
 * new name; deleted, they go with it (no page of a host that no longer exists). */
static void test_retire_series_pages(void **state)
{
    (void)state;
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), 0);
    put_all(st, "kept", BOOT1, 0, NSAMPLES);
    put_all(st, "gone", BOOT2, 0, NSAMPLES);
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.series_pages, 6); /* 3 chunks x 1 group per host */
    assert_int_equal(pw_store_host_retire(st, "kept", 1, T0 + 1, &d), 0);
    check_series_raw(st, "kept#retired-1700001000001");
    assert_int_equal(pw_store_host_retire(st, "gone", 0, T0 + 2, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.series_pages, 3);
    pw_store_close(st);
}

static void test_bad_args(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    pw_store_opts_t o = {.chunk_window_ms = 70000};
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), PW_EINVAL);
    assert_int_equal(pw_store_open("/nonexistent-dir/x/y.db", NULL, &st, &d), PW_ESTORE);
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("h", BOOT1, 48);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_EINVAL);
    h = host_of("", BOOT1, 64);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_EINVAL);
    h = host_of("h", BOOT1, 64);
    h.agent_id_len = 0;
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_EINVAL);
    pw_store_close(st);
}

/* Runs `sql` on the store's file with a connection of its own (the test's hand on the file). */
static void sql_on(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

/* A compacted chunk's rows are also kept by row (series pages): a series reads them alone.
 * Proof: the chunks' blobs are wiped behind the store's back; every series still answers
 * value for value (the vanishing row, the counter reset), while a table, which needs the
 * blobs, reports the damage. */
static void test_series_pages(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st = sealed_store(t.path);
    pw_diag_t d;
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 3);
    assert_int_equal(ss.series_pages, 3); /* 5 tags: one group of 32 tags per chunk */
    pw_store_close(st);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    assert_int_equal(pw_store_open(t.path, &CHUNKS4, &st, &d), 0);
    check_series_raw(st, "win-01");
    /* 1-min steps: samples 0..5 in the first minute, 6..9 in the second */
    pw_store_series_t sr = {0};
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                     TAGS[1].pool, T0, T0 + 100000, 60000, &sr, &d),
                     2);
    uint64_t a, f, df, b;
    row_of(1, 5, &a, &f, &df, &b);
    assert_int_equal(sr.points[0].samples, 6);
    assert_int_equal(sr.points[0].bytes, b);
    assert_int_equal(sr.points[0].allocs, a);
    assert_int_equal(sr.points[1].samples, 4);
    pw_store_series_free(&sr);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_table_at(st, "win-01", T0, &got, &d), PW_ECORRUPT);
    pw_sample_close(&got);
    pw_store_close(st);
    tmp_remove(&t);
}

/* ---- day pages ----------------------------------------------------------------------------- */

#define DAY_MS  86400000ull
#define DP_GAP  5400000ull /* 1.5 h: every sample its own chunk */
#define DP_LATE 20u        /* the sample of a second instance among the others' times */

/* Time of sample k in the day-page tests: T0 is 22:30 UTC, so sample 0 is alone in its day,
 * 1..16 share the next one and 17 is in the day after. The late sample sits 30 min after 4. */
static uint64_t dp_ts(unsigned k)
{
    return k == DP_LATE ? T0 + DP_GAP * 4 + 1800000 : T0 + DP_GAP * k;
}

/* Every (tag, pool) over samples want[0..n) (ascending times), at `step` (0: raw), each point
 * one sample: exactly the values of row_of. */
static void check_dp(pw_store_t *st, const char *host, const unsigned *want, size_t n,
                     uint64_t step, int level)
{
    for (size_t i = 0; i < NTAGS; i++) {
        pw_store_series_t sr = {0};
        pw_diag_t d;
        int64_t got = pw_store_series(st, host, (const uint8_t *)TAGS[i].b, TAGS[i].len,
                                      TAGS[i].pool, T0, T0 + 4 * DAY_MS, step, &sr, &d);
        size_t p = 0;
        for (size_t j = 0; j < n; j++) {
            uint64_t a, f, df, b;
            if (!row_of(i, want[j], &a, &f, &df, &b))
                continue;
            assert_true(p < sr.n);
            const pw_store_point_t *pt = &sr.points[p++];
            uint64_t ts = dp_ts(want[j]);
            assert_int_equal(pt->ts_ms, step ? ts - ts % step : ts);
            assert_int_equal(pt->allocs, a);
            assert_int_equal(pt->frees, f);
            assert_int_equal(pt->diff, df);
            assert_int_equal(pt->bytes, b);
            assert_int_equal(pt->bytes_min, b);
            assert_int_equal(pt->bytes_max, b);
            assert_int_equal(pt->diff_min, df);
            assert_int_equal(pt->diff_max, df);
            assert_int_equal(pt->samples, 1);
        }
        assert_int_equal(got, (int64_t)p);
        assert_int_equal(sr.level, level);
        pw_store_series_free(&sr);
    }
}

static void dp_put(pw_store_t *st, const uint8_t *boot, unsigned from, unsigned to)
{
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("dp", boot, 64);
    pw_diag_t d;
    for (unsigned k = from; k < to; k++) {
        build(&s, k);
        s.timestamp_ms = dp_ts(k);
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_sample_close(&s);
}

/* A day's chunk pages are merged into one day page per group of 4 tags once the day is over
 * for the host (not before: 16 chunk pages of the day wait), each chunk page a segment; a late
 * chunk among its times (a second agent instance) becomes one more segment. The series stays exact
 * at every step throughout (the vanishing row, the counter reset), from the day pages alone once
 * the chunks' blobs are wiped, and when the pages expire their 15-min rollup holds the same values.
 */
static void test_day_pages(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    static const unsigned all[] = {0, 1,  2,  3,  4,  DP_LATE, 5,  6,  7, 8,
                                   9, 10, 11, 12, 13, 14,      15, 16, 17};
    static const unsigned in_order[] = {0, 1,  2,  3,  4,  5,  6,  7,  8,
                                        9, 10, 11, 12, 13, 14, 15, 16, 17};
    /* samples 0..12: day 0 is over, merged; day 1's 12 chunk pages wait (merged once, at the
     * day's end). The 5 tags are one group of 32: one day page a day */
    dp_put(st, BOOT1, 0, 13);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 12);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 1);
    check_dp(st, "dp", in_order, 13, 0, PW_STORE_RAW);
    /* 13..16: sixteen chunk pages of day 1 wait */
    dp_put(st, BOOT1, 13, 17);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 16);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 1);
    check_dp(st, "dp", in_order, 17, 0, PW_STORE_RAW);
    check_dp(st, "dp", in_order, 17, 60000, PW_STORE_1MIN);
    check_dp(st, "dp", in_order, 17, 900000, PW_STORE_15MIN);
    /* 17 (day 2): day 1 is over, its 16 chunk pages are merged, one segment each */
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    uint64_t merges = ss.merges;
    dp_put(st, BOOT1, 17, 18);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 1);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 2);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.merges - merges, 1); /* one (host, group of 32 tags, day) */
    check_dp(st, "dp", in_order, 18, 0, PW_STORE_RAW);
    /* a second instance's sample among day 1's times, after its merge: its chunk page joins
     * the day's pages as one more segment, in time order */
    dp_put(st, BOOT2, DP_LATE, DP_LATE + 1);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 1);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 2);
    size_t nall = sizeof(all) / sizeof(all[0]);
    check_dp(st, "dp", all, nall, 0, PW_STORE_RAW);
    check_dp(st, "dp", all, nall, 60000, PW_STORE_1MIN);
    check_dp(st, "dp", all, nall, 900000, PW_STORE_15MIN);
    pw_store_close(st);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    check_dp(st, "dp", all, nall, 0, PW_STORE_RAW);
    check_dp(st, "dp", all, nall, 900000, PW_STORE_15MIN);
    /* everything expires but the 15-min level: written from the pages (chunk and day pages) */
    uint64_t now = dp_ts(17) + PW_STORE_DEFAULT_1MIN_RETENTION_MS + 1;
    assert_true(pw_store_retention(st, now, &d) > 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 0);
    assert_int_equal(ss.series_pages, 0);
    assert_int_equal(ss.rollup_windows, 3); /* one per page: 2 day pages, day 2's chunk page */
    check_dp(st, "dp", all, nall, 900000, PW_STORE_15MIN);
    pw_store_close(st);
    tmp_remove(&t);
}

/* Flips byte `off` of the blob of row `id` of `table` (column data) in the file at `path`: the
 * damage a bad sector or a stray write leaves, behind the store's back. */
static void flip_blob(const char *path, const char *table, int64_t id, int off)
{
    sqlite3 *db;
    sqlite3_blob *b;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_blob_open(db, "main", table, "data", id, 1, &b), SQLITE_OK);
    uint8_t v;
    assert_int_equal(sqlite3_blob_read(b, &v, 1, off), SQLITE_OK);
    v ^= 0xff;
    assert_int_equal(sqlite3_blob_write(b, &v, 1, off), SQLITE_OK);
    sqlite3_blob_close(b);
    sqlite3_close(db);
}

/* The gaps of host "dp" over every test day. */
static size_t dp_gaps(pw_store_t *st, pw_store_gap_t **g)
{
    size_t n;
    pw_diag_t d;
    assert_int_equal(pw_store_gaps(st, "dp", T0, T0 + 4 * DAY_MS, g, &n, &d), 0);
    return n;
}

/* Gap `g` is series page damage of the test's five tags (ids 0..4, one group of 32: keys
 * 0..127) between t0 and t1, `missed` samples, its detail starting with `why`. */
static void check_damage_gap(const pw_store_gap_t *g, uint64_t t0, uint64_t t1, uint64_t missed,
                             const char *why)
{
    static const char *const tags[] = {"Ntfx", "Ab c", "\0x\0y", "\x80\xff\x81z", "kmalloc-64"};
    static const uint8_t lens[] = {4, 4, 4, 4, 10};
    assert_int_equal(g->cause, PW_STORE_GAP_DAMAGED);
    assert_int_equal(g->t0_ms, t0);
    assert_int_equal(g->t1_ms, t1);
    assert_int_equal(g->seq, 0);
    assert_int_equal(g->missed, missed);
    assert_int_equal(g->all_rows, 0);
    assert_int_equal(g->ntags, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(g->tags[i].len, lens[i]);
        assert_memory_equal(g->tags[i].tag, tags[i], lens[i]);
    }
    if (strncmp(g->detail, why, strlen(why)) != 0)
        fail_msg("detail \"%s\", want \"%s...\"", g->detail, why);
}

/* Every raw point of every (tag, pool) of host "dp" over the test's days, tag after tag. */
static size_t dp_points(pw_store_t *st, pw_store_point_t *out, size_t max, uint8_t *tag_of)
{
    size_t n = 0;
    for (size_t i = 0; i < NTAGS; i++) {
        pw_store_series_t sr = {0};
        pw_diag_t d;
        assert_true(pw_store_series(st, "dp", (const uint8_t *)TAGS[i].b, TAGS[i].len, TAGS[i].pool,
                                    T0, T0 + 4 * DAY_MS, 0, &sr, &d) >= 0);
        assert_true(n + sr.n <= max);
        memcpy(out + n, sr.points, sr.n * sizeof(*out));
        memset(tag_of + n, (int)i, sr.n);
        n += sr.n;
        pw_store_series_free(&sr);
    }
    return n;
}

/* One chunk page of a day waiting for its merge is damaged in the file (a byte of its zstd
 * frame's header flipped through SQLite). The merge records it as a gap (series page damage,
 * its rows: the group's five tags; its times: its one sample; its chunk's one sample), drops
 * it, and merges the day's other 15 pages; the next day is merged too at its end (before: the
 * failed merge was undone, found first again by every later search, and nothing after it was
 * merged while chunk pages piled up). Every other point reads back as before the damage, and
 * as row_of says, raw and at 15 min. */
static void test_day_merge_damaged_page(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    dp_put(st, BOOT1, 0, 17); /* day 0 (sample 0) merged, day 1's 16 chunk pages wait */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 16);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 1);
    enum { MAXP = 6 * 40 };
    pw_store_point_t before[MAXP], after[MAXP];
    uint8_t tb[MAXP], ta[MAXP];
    size_t nb = dp_points(st, before, MAXP, tb);
    pw_store_close(st);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT id FROM series WHERE t0_ms = %llu",
             (unsigned long long)dp_ts(5));
    flip_blob(t.path, "series", sql_int(t.path, sql), 4); /* the frame header's descriptor */
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    pw_store_gap_t *g;
    assert_int_equal(dp_gaps(st, &g), 0);
    /* samples 17..32 are day 2 (but DP_LATE, among day 1's times: left out), 33 ends it: days 1
     * and 2 are merged */
    dp_put(st, BOOT1, 17, DP_LATE);
    dp_put(st, BOOT1, DP_LATE + 1, 34);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 1); /* day 3's */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 3);
    assert_int_equal(dp_gaps(st, &g), 1);
    check_damage_gap(&g[0], dp_ts(5), dp_ts(5), 1, "chunk page ");
    assert_non_null(strstr(g[0].detail, "not a zstd frame"));
    pw_store_gaps_free(g);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM gaps WHERE cause = 1 AND k0 = 0"
                                     " AND k1 = 127 AND missed = 1"),
                     1);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.pages_lost, 1);
    /* the points before the damage, but sample 5's, then days 2 and 3 (checked below) */
    size_t na = dp_points(st, after, MAXP, ta), ne = 0, nk = 0;
    for (size_t i = 0; i < nb; i++)
        if (before[i].ts_ms != dp_ts(5)) {
            before[ne] = before[i];
            tb[ne++] = tb[i];
        }
    for (size_t i = 0; i < na; i++)
        if (after[i].ts_ms <= dp_ts(16)) {
            after[nk] = after[i];
            ta[nk++] = ta[i];
        }
    assert_int_equal(nb, 17 * NTAGS - 2); /* tag 2 vanishes in samples 5 and 6 */
    assert_int_equal(ne, 16 * NTAGS - 1);
    assert_int_equal(nk, ne);
    assert_memory_equal(ta, tb, ne);
    for (size_t i = 0; i < ne; i++) { /* field by field: the struct's tail padding is no value */
        const pw_store_point_t *x = &after[i], *y = &before[i];
        assert_int_equal(x->ts_ms, y->ts_ms);
        assert_int_equal(x->bytes, y->bytes);
        assert_int_equal(x->diff, y->diff);
        assert_int_equal(x->allocs, y->allocs);
        assert_int_equal(x->frees, y->frees);
        assert_int_equal(x->bytes_min, y->bytes_min);
        assert_int_equal(x->bytes_max, y->bytes_max);
        assert_int_equal(x->diff_min, y->diff_min);
        assert_int_equal(x->diff_max, y->diff_max);
        assert_int_equal(x->samples, y->samples);
    }
    unsigned want[32];
    size_t nw = 0;
    for (unsigned k = 0; k < 34; k++)
        if (k != 5 && k != DP_LATE)
            want[nw++] = k;
    check_dp(st, "dp", want, nw, 0, PW_STORE_RAW);
    check_dp(st, "dp", want, nw, 900000, PW_STORE_15MIN);
    pw_store_close(st);
    tmp_remove(&t);
}

/* Replaces the blob of chunk page `id` with a zstd frame that decompresses to `len` bytes `p`. */
static void page_set(const char *path, int64_t id, const void *p, size_t len)
{
    uint8_t z[256];
    size_t zn = ZSTD_compress(z, sizeof(z), p, len, 1);
    assert_false(ZSTD_isError(zn));
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "UPDATE series SET data=?1, raw_size=?2 WHERE id=?3", -1, &s, NULL),
        SQLITE_OK);
    sqlite3_bind_blob(s, 1, z, (int)zn, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (int64_t)len);
    sqlite3_bind_int64(s, 3, id);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* Two of a day's three chunk pages are damaged otherwise: one truncated (half its zstd frame),
 * one a whole zstd frame whose page head is not one (version byte 9). The merge records both
 * (their causes in their details) and merges the third alone; the series reads it. Then a day
 * page is damaged and expires: retention records it (the 15-min rollup it would leave is lost)
 * and goes on (before: the whole retention failed, at every pass). */
static void test_damaged_pages_truncated_head_expiry(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    dp_put(st, BOOT1, 0, 4); /* day 0 (sample 0) merged, day 1's 3 chunk pages wait */
    pw_store_close(st);
    char sql[160];
    snprintf(sql, sizeof(sql),
             "UPDATE series SET data = substr(data, 1, length(data) / 2) WHERE t0_ms = %llu",
             (unsigned long long)dp_ts(1));
    sql_on(t.path, sql);
    snprintf(sql, sizeof(sql), "SELECT id FROM series WHERE t0_ms = %llu",
             (unsigned long long)dp_ts(3));
    int64_t bad_head = sql_int(t.path, sql);
    static const uint8_t nine[] = {9, 1, 2, 3};
    page_set(t.path, bad_head, nine, sizeof(nine));
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    dp_put(st, BOOT1, 17, 18); /* day 1 is over: merged without its two damaged pages */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 1); /* sample 17's */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 2);
    pw_store_gap_t *g;
    assert_int_equal(dp_gaps(st, &g), 2);
    check_damage_gap(&g[0], dp_ts(1), dp_ts(1), 1, "chunk page ");
    assert_non_null(strstr(g[0].detail, "zstd: "));
    check_damage_gap(&g[1], dp_ts(3), dp_ts(3), 1, "chunk page ");
    char want[96];
    snprintf(want, sizeof(want), "chunk page %lld (chunk 4): series page header invalid",
             (long long)bad_head);
    assert_string_equal(g[1].detail, want);
    pw_store_gaps_free(g);
    /* a range that holds neither: none */
    size_t n;
    assert_int_equal(pw_store_gaps(st, "dp", dp_ts(2), dp_ts(2), &g, &n, &d), 0);
    assert_int_equal(n, 0);
    assert_null(g);
    static const unsigned left[] = {0, 2, 17};
    check_dp(st, "dp", left, 3, 0, PW_STORE_RAW);
    /* day 0's day page damaged, then everything expires but the 15-min level */
    pw_store_close(st);
    int64_t day0 = sql_int(t.path, "SELECT min(id) FROM series_days");
    flip_blob(t.path, "series_days", day0, 4);
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    assert_true(pw_store_retention(st, dp_ts(17) + PW_STORE_DEFAULT_1MIN_RETENTION_MS + 1, &d) > 0);
    assert_int_equal(dp_gaps(st, &g), 3);
    check_damage_gap(&g[0], dp_ts(0), dp_ts(0), 0, "day page at expiry: ");
    pw_store_gaps_free(g);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.pages_lost, 1); /* this process's */
    assert_int_equal(ss.series_pages, 0);
    assert_int_equal(ss.rollup_windows, 2); /* day 1's day page, sample 17's chunk page */
    static const unsigned kept[] = {2, 17};
    check_dp(st, "dp", kept, 2, 900000, PW_STORE_15MIN);
    pw_store_close(st);
    tmp_remove(&t);
}

/* Copies the store `fixture` (schema `version`) to a new temporary file t->path. */
static void copy_fixture(tmp_t *t, const char *fixture, int64_t version)
{
    tmp_make(t);
    uv_fs_t req; /* libuv's copy: the test runs under Wine too */
    assert_int_equal(uv_fs_copyfile(NULL, &req, pw_test_fixture(fixture), t->path, 0, NULL), 0);
    uv_fs_req_cleanup(&req);
    assert_int_equal(sql_int(t->path, "SELECT max(version) FROM migrations"), version);
}

/* Copies the store `fixture` (schema `version`, PRAGMA auto_vacuum `av`) to a new temporary
 * file and opens it with chunks of 4: 3 chunks, `pages` series pages, every sample exact. */
static pw_store_t *open_fixture(tmp_t *t, const char *fixture, int64_t version, int64_t av,
                                uint64_t pages)
{
    copy_fixture(t, fixture, version);
    assert_int_equal(sql_int(t->path, "PRAGMA auto_vacuum"), av);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t->path, &o, &st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 3);
    assert_int_equal(ss.series_pages, pages);
    check_series_raw(st, "legacy");
    return st;
}

/* Samples 10..11 of a fixture's host continue its agent instance (seq 110, 111); 9 is stored
 * already. */
static void continue_legacy(pw_store_t *st)
{
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("legacy", BOOT1, 64);
    pw_diag_t d;
    build(&s, 9);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_STORE_DUPLICATE);
    for (unsigned k = 10; k < 12; k++) {
        build(&s, k);
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_sample_close(&s);
}

/* tests/fixtures/store/v3.db and v4.db were written by past releases (schema 3 and 4, the last
 * before series pages; gen_store.c beside them: the samples of build(), chunks of 4, two
 * compacted and one open). Opening one migrates it: schema 5, incremental auto-vacuum (one
 * VACUUM), every sample readable as before; compaction then writes the old chunks' series
 * pages, and new samples go on where the old ones stopped. */
static void check_migrate(const char *fixture, int64_t version)
{
    tmp_t t;
    pw_store_t *st = open_fixture(&t, fixture, version, 0, 0); /* read raw: no pages yet */
    pw_diag_t d;
    pw_store_stats_t ss;
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_table_at(st, "legacy", T0 + 30000, &got, &d), 0);
    check_table(&got, 3);
    /* compaction has no sealed chunk: it writes the two compacted chunks' pages */
    assert_int_equal(pw_store_compact(st, 1000, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.series_pages, 2);
    check_series_raw(st, "legacy");
    continue_legacy(st);
    assert_int_equal(pw_store_latest(st, "legacy", &got, &d), 0);
    assert_int_equal(got.seq, 111);
    pw_sample_close(&got);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    assert_int_equal(sql_int(t.path, "PRAGMA auto_vacuum"), 2);
    tmp_remove(&t);
}

static void test_migrate_v3(void **state)
{
    (void)state;
    check_migrate("store/v3.db", 3);
}

static void test_migrate_v4(void **state)
{
    (void)state;
    check_migrate("store/v4.db", 4);
}

/* tests/fixtures/store/v5.db was written by the release before live forms (schema 5, commit
 * 2e73db5; gen_store.c): two chunks compacted with their series pages, one open (samples 8
 * and 9). It opens, migrated to schema 10 (a pool event goes in), reads back exact with its open
 * chunk replayed (begun by another process: no live form); samples 10 and 11 start a new chunk read
 * from memory; a flush compacts both (the old one by replay, the new one from its live form) and
 * every sample still reads back exact, from pages alone once the blobs are wiped. */
static void test_migrate_v5(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_fixture(&t, "store/v5.db", 5, 2, 2);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_diag_t d;
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.live_bytes, 0);
    pw_sample_t got;
    pw_sample_init(&got);
    assert_int_equal(pw_store_table_at(st, "legacy", T0 + 30000, &got, &d), 0);
    check_table(&got, 3);
    continue_legacy(st);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_true(ss.live_bytes > 0); /* the new chunk, begun here */
    check_series_n(st, "legacy", 12);
    assert_int_equal(pw_store_flush(st, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.live_bytes, 0);
    assert_int_equal(ss.series_pages, 4);
    check_series_n(st, "legacy", 12);
    assert_int_equal(pw_store_latest(st, "legacy", &got, &d), 0);
    assert_int_equal(got.seq, 111);
    pw_sample_close(&got);
    /* schema 6 came with the open: the host's pool events go in and read back */
    pw_winevent_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.ts_ms = T0 + 35000;
    ev.event_id = 2019;
    ev.record_id = 7;
    ev.pool = PW_WINEVENT_POOL_NONPAGED;
    snprintf(ev.provider, sizeof(ev.provider), "Srv");
    assert_int_equal(pw_store_put_events(st, "legacy", &ev, 1, T0 + 40000, NULL, &d), 1);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM events WHERE event_id = 2019"), 1);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_series_n(st, "legacy", 12);
    pw_store_close(st);
    tmp_remove(&t);
}

/* A keyframe with dict_reset inside a chunk numbers the same tags otherwise: frames of an agent
 * whose encoder met the tags in reverse order (samples 0..4), then pw_store_put of samples 5..9
 * in the same chunk (a fresh encoder: the tags in their usual order). The chunk's live form is
 * dropped at the reset, so compaction writes its series pages by replay (and retention its
 * 15-min rollup from those pages): both keep every value under its own (tag, pool). */
static void test_dict_reset_mid_chunk(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    agent_t ag;
    agent_init(&ag);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("win-01", BOOT1, 64);
    for (unsigned k = 0; k < NSAMPLES; k++) {
        build(&s, k);
        if (k >= 5) {
            assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
            continue;
        }
        for (size_t i = 0; i < s.n / 2; i++) {
            pw_entry_t e = s.entries[i];
            s.entries[i] = s.entries[s.n - 1 - i];
            s.entries[s.n - 1 - i] = e;
        }
        Poolwatch__V1__Envelope *env = agent_frame(&ag, &s, 0);
        assert_int_equal(pw_store_put_frame(st, &h, &ag.dec, ag.frame.data + PW_FRAME_HEADER,
                                            ag.frame.len - PW_FRAME_HEADER, env->sample->base_seq,
                                            k > 0, 0, &d),
                         0);
        pw_codec_free(env);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    check_series_raw(st, "win-01"); /* the open chunk, replayed */
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 1);
    assert_true(ss.series_pages > 0);
    check_series_raw(st, "win-01"); /* its series pages */
    /* the raw chunk expires: the pages outlive it (1-min and 15-min levels) */
    uint64_t last = T0 + 10000ull * (NSAMPLES - 1);
    assert_true(pw_store_retention(st, last + PW_STORE_DEFAULT_RAW_RETENTION_MS + 1, &d) > 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 0);
    check_series_raw(st, "win-01");
    /* the pages expire: their 15-min rollup is written, and answers 15-min steps */
    assert_true(pw_store_retention(st, last + PW_STORE_DEFAULT_1MIN_RETENTION_MS + 1, &d) > 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.series_pages, 0);
    assert_true(ss.rollup_windows > 0);
    for (size_t i = 0; i < NTAGS; i++) {
        pw_store_series_t sr = {0};
        assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)TAGS[i].b, TAGS[i].len,
                                         TAGS[i].pool, T0, last, 900000, &sr, &d),
                         1);
        assert_int_equal(sr.level, PW_STORE_15MIN);
        uint64_t a, f, df, b, bmin = UINT64_MAX, bmax = 0, dmin = UINT64_MAX, dmax = 0;
        uint32_t n = 0;
        for (unsigned k = 0; k < NSAMPLES; k++) {
            if (!row_of(i, k, &a, &f, &df, &b))
                continue;
            n++;
            bmin = b < bmin ? b : bmin, bmax = b > bmax ? b : bmax;
            dmin = df < dmin ? df : dmin, dmax = df > dmax ? df : dmax;
        }
        row_of(i, NSAMPLES - 1, &a, &f, &df, &b);
        const pw_store_point_t *p = &sr.points[0];
        assert_int_equal(p->ts_ms, T0);
        assert_int_equal(p->samples, n);
        assert_int_equal(p->allocs, a);
        assert_int_equal(p->frees, f);
        assert_int_equal(p->diff, df);
        assert_int_equal(p->bytes, b);
        assert_int_equal(p->bytes_min, bmin);
        assert_int_equal(p->bytes_max, bmax);
        assert_int_equal(p->diff_min, dmin);
        assert_int_equal(p->diff_max, dmax);
        pw_store_series_free(&sr);
    }
    agent_close(&ag);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* The series pages of store file `b` * 1000 + those of file `a` identical to one of them
 * (group, times, size and bytes): 1000 n + n when both hold the same n pages. */
static int64_t same_pages(const char *a, const char *b)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    char att[600];
    assert_int_equal(sqlite3_open(a, &db), SQLITE_OK);
    snprintf(att, sizeof(att), "ATTACH '%s' AS u", b);
    assert_int_equal(sqlite3_exec(db, att, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT count(*) FROM u.series) * 1000 + count(*)"
                                        " FROM series x JOIN u.series y ON x.grp = y.grp AND"
                                        " x.t0_ms = y.t0_ms AND x.t1_ms = y.t1_ms AND"
                                        " x.raw_size = y.raw_size AND x.data = y.data",
                                        -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

/* Open and sealed chunks are read from their live form (rows kept by row as samples are put),
 * not replayed: every series is exact before compaction (the vanishing row, the counter
 * reset), at 1-min steps too, and the pages compaction writes from the live forms are byte
 * for byte those a replay writes (a second store whose budget admits no live form). */
static void test_live_series(void **state)
{
    (void)state;
    tmp_t t, u;
    tmp_make(&t);
    tmp_make(&u);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_opts_t none = {.chunk_max_samples = 4, .live_series_max_bytes = 1};
    pw_store_t *st, *su;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    assert_int_equal(pw_store_open(u.path, &none, &su, &d), 0);
    put_all(st, "win-01", BOOT1, 0, NSAMPLES);
    put_all(su, "win-01", BOOT1, 0, NSAMPLES);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.closed_chunks, 0); /* two sealed, one open: none compacted */
    assert_true(ss.live_bytes > 0);
    assert_int_equal(pw_store_stats(su, &ss, &d), 0);
    assert_int_equal(ss.live_bytes, 0);
    check_series_raw(st, "win-01");
    check_series_raw(su, "win-01");
    /* 1-min steps: samples 0..5 in the first minute (row 2 vanished at 5), 6..9 in the next */
    pw_store_series_t sr = {0};
    uint64_t a, f, df, b;
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                     TAGS[1].pool, T0, T0 + 100000, 60000, &sr, &d),
                     2);
    row_of(1, 5, &a, &f, &df, &b);
    assert_int_equal(sr.points[0].samples, 6);
    assert_int_equal(sr.points[0].bytes, b);
    assert_int_equal(sr.points[0].allocs, a);
    row_of(1, 9, &a, &f, &df, &b);
    assert_int_equal(sr.points[1].samples, 4);
    assert_int_equal(sr.points[1].frees, f);
    assert_int_equal(sr.points[1].diff, df);
    assert_int_equal(pw_store_series(st, "win-01", (const uint8_t *)TAGS[2].b, TAGS[2].len,
                                     TAGS[2].pool, T0, T0 + 100000, 60000, &sr, &d),
                     2);
    assert_int_equal(sr.points[0].samples, 5); /* 0..4: gone at 5 */
    assert_int_equal(sr.points[1].samples, 3); /* back at 7 */
    pw_store_series_free(&sr);
    assert_int_equal(pw_store_flush(st, &d), 0);
    assert_int_equal(pw_store_flush(su, &d), 0);
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.live_bytes, 0);
    assert_int_equal(ss.series_pages, 3);
    check_series_raw(st, "win-01");
    pw_store_close(st);
    pw_store_close(su);
    /* pages written from live forms (st) against pages written by replay (su) */
    assert_int_equal(same_pages(t.path, u.path), 3003); /* 3 pages, all 3 identical */
    tmp_remove(&t);
    tmp_remove(&u);
}

/* A fleet-like table through the collector's path (agent frames, pw_store_put_frame): 300
 * tags in 10 groups of 32 (a page each), random changes of ~10 % of the rows a sample, large
 * counter jumps, bytes off their per-allocation size, a counter reset and rows that vanish and
 * come back. Compaction writes each chunk's pages straight from its live form and packs its
 * records applying a delta of changes first (its predictions from the rows after it): the pages
 * are byte for byte those a replay writes (a second store without live forms), and every
 * value reads back as generated, from the pages (series) and from the chunks (tables). */
#define LP_TAGS    300
#define LP_SAMPLES 50u /* two chunks of 25 */

typedef struct {
    uint64_t a[LP_TAGS], f[LP_TAGS], df[LP_TAGS], b[LP_TAGS][LP_SAMPLES];
    uint8_t gone[LP_TAGS][LP_SAMPLES];
    uint64_t av[LP_TAGS][LP_SAMPLES], fv[LP_TAGS][LP_SAMPLES], dv[LP_TAGS][LP_SAMPLES];
} lp_truth_t;

static uint64_t lp_rnd(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void lp_tag(size_t i, char t[4])
{
    t[0] = 'L', t[1] = (char)('a' + i / 100), t[2] = (char)('0' + i / 10 % 10),
    t[3] = (char)('0' + i % 10);
}

/* Generates sample k of the truth into `s` (rows in tag order). */
static void lp_build(lp_truth_t *tr, uint64_t *rng, pw_sample_t *s, unsigned k)
{
    pw_sample_reset(s);
    s->seq = 1 + k;
    s->timestamp_ms = T0 + 10000ull * k;
    s->totals.nonpaged_bytes = 7000000 + k;
    for (size_t i = 0; i < LP_TAGS; i++) {
        if (k == 0) {
            tr->df[i] = 1 + lp_rnd(rng) % 5000;
            tr->a[i] = tr->df[i] + lp_rnd(rng) % 1000000;
            tr->f[i] = tr->a[i] - tr->df[i];
            tr->b[i][0] = tr->df[i] * (16 + 16 * (i % 64));
        } else {
            tr->b[i][k] = tr->b[i][k - 1];
            if (lp_rnd(rng) % 10 == 0) {
                uint64_t add = lp_rnd(rng) % 4 == 0 ? lp_rnd(rng) % (1ull << 40) : lp_rnd(rng) % 50;
                uint64_t dd = lp_rnd(rng) % 11;
                if (dd > add)
                    dd = add;
                int64_t sd = (int64_t)dd - (int64_t)(lp_rnd(rng) % 2 ? dd : 0) * 2;
                if ((int64_t)tr->df[i] + sd < 0)
                    sd = 0;
                tr->a[i] += add;
                tr->df[i] = (uint64_t)((int64_t)tr->df[i] + sd);
                tr->f[i] = tr->a[i] - tr->df[i];
                /* one size a tag, but every 7th tag's bytes drift off it */
                tr->b[i][k] =
                    tr->df[i] * (16 + 16 * (i % 64)) + (i % 7 == 0 ? lp_rnd(rng) % 999 : 0);
            }
            if (i == 5 && k == 30) { /* a counter reset */
                tr->a[i] = 40, tr->df[i] = 4, tr->f[i] = 36, tr->b[i][k] = 4 * 96;
            }
        }
        tr->gone[i][k] = (i % 50 == 3 && k % 10 >= 6) || (i == 299 && k >= 45);
        tr->av[i][k] = tr->a[i], tr->fv[i][k] = tr->f[i], tr->dv[i][k] = tr->df[i];
        if (tr->gone[i][k])
            continue;
        char t[4];
        lp_tag(i, t);
        assert_int_equal(
            pw_sample_add(s, t, 4, (pw_pool_t)(i % 3), tr->a[i], tr->f[i], tr->df[i], tr->b[i][k]),
            0);
    }
}

static void test_live_pages_fleet_like(void **state)
{
    (void)state;
    lp_truth_t *tr = calloc(1, sizeof(*tr));
    assert_non_null(tr);
    tmp_t t, u;
    tmp_make(&t);
    tmp_make(&u);
    pw_store_opts_t o = {.chunk_max_samples = LP_SAMPLES / 2};
    pw_store_opts_t none = {.chunk_max_samples = LP_SAMPLES / 2, .live_series_max_bytes = 1};
    pw_store_t *st[2];
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st[0], &d), 0);
    assert_int_equal(pw_store_open(u.path, &none, &st[1], &d), 0);
    agent_t ag;
    agent_init(&ag);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("win-01", BOOT1, 64);
    uint64_t rng = 17;
    for (unsigned k = 0; k < LP_SAMPLES; k++) {
        lp_build(tr, &rng, &s, k);
        Poolwatch__V1__Envelope *env = agent_frame(&ag, &s, 0);
        for (int w = 0; w < 2; w++)
            assert_int_equal(pw_store_put_frame(st[w], &h, &ag.dec, ag.frame.data + PW_FRAME_HEADER,
                                                ag.frame.len - PW_FRAME_HEADER,
                                                env->sample->base_seq, k > 0, 0, &d),
                             0);
        pw_codec_free(env);
        for (int w = 0; w < 2; w++)
            assert_int_equal(pw_store_commit(st[w], &d), 0);
    }
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st[0], &ss, &d), 0);
    assert_true(ss.live_bytes > 0);
    for (int w = 0; w < 2; w++) {
        assert_int_equal(pw_store_flush(st[w], &d), 0);
        assert_int_equal(pw_store_stats(st[w], &ss, &d), 0);
        assert_int_equal(ss.live_bytes, 0);
        assert_int_equal(ss.closed_chunks, 2);
        assert_int_equal(ss.series_pages, 20); /* 10 groups x 2 chunks */
        /* every row's series from the pages, and the tables of both chunks from the chunks */
        for (size_t i = 0; i < LP_TAGS; i++) {
            char tg[4];
            lp_tag(i, tg);
            pw_store_series_t sr = {0};
            int64_t n = pw_store_series(st[w], "win-01", (const uint8_t *)tg, 4, (pw_pool_t)(i % 3),
                                        T0, T0 + 10000ull * LP_SAMPLES, 0, &sr, &d);
            size_t p = 0;
            for (unsigned k = 0; k < LP_SAMPLES; k++) {
                if (tr->gone[i][k])
                    continue;
                assert_true(p < sr.n);
                assert_int_equal(sr.points[p].ts_ms, T0 + 10000ull * k);
                assert_int_equal(sr.points[p].allocs, tr->av[i][k]);
                assert_int_equal(sr.points[p].frees, tr->fv[i][k]);
                assert_int_equal(sr.points[p].diff, tr->dv[i][k]);
                assert_int_equal(sr.points[p].bytes, tr->b[i][k]);
                p++;
            }
            assert_int_equal(n, (int64_t)p);
            pw_store_series_free(&sr);
        }
        for (unsigned k = 0; k < LP_SAMPLES; k += LP_SAMPLES / 2 - 1) {
            pw_sample_t got;
            pw_sample_init(&got);
            assert_int_equal(pw_store_table_at(st[w], "win-01", T0 + 10000ull * k, &got, &d), 0);
            assert_int_equal(got.timestamp_ms, T0 + 10000ull * k);
            size_t want = 0;
            for (size_t i = 0; i < LP_TAGS; i++)
                want += !tr->gone[i][k];
            assert_int_equal(got.n, want);
            for (size_t j = 0; j < got.n; j++) {
                const pw_entry_t *e = &got.entries[j];
                size_t i = (size_t)(e->tag[1] - 'a') * 100 + (size_t)(e->tag[2] - '0') * 10 +
                           (size_t)(e->tag[3] - '0');
                assert_true(i < LP_TAGS);
                assert_int_equal(e->pool, i % 3);
                assert_int_equal(e->allocs, tr->av[i][k]);
                assert_int_equal(e->frees, tr->fv[i][k]);
                assert_int_equal(e->diff, tr->dv[i][k]);
                assert_int_equal(e->bytes, tr->b[i][k]);
            }
            pw_sample_close(&got);
        }
        pw_store_close(st[w]);
    }
    /* pages written from live forms (t) against pages written by replay (u) */
    assert_int_equal(same_pages(t.path, u.path), 20020); /* 20 pages, all 20 identical */
    agent_close(&ag);
    pw_sample_close(&s);
    free(tr);
    tmp_remove(&t);
    tmp_remove(&u);
}

/* A host deleted with two sealed chunks waiting for compaction takes their live forms with
 * it: the next host's chunks get the same ids (SQLite gives an emptied table's rowids again)
 * and must be read from their own rows, not the deleted host's. */
static void test_live_forget_host(void **state)
{
    (void)state;
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", &o, &st, &d), 0);
    put_all(st, "old", BOOT1, 0, 8); /* two sealed chunks: ids 1, 2 */
    assert_int_equal(pw_store_host_retire(st, "old", 0, T0, &d), 0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 0);
    assert_int_equal(ss.live_bytes, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("new", BOOT2, 64);
    for (unsigned k = 0; k < NSAMPLES; k++) { /* the same rows, other values: allocs + 1 */
        build(&s, k);
        for (size_t i = 0; i < s.n; i++) {
            s.entries[i].allocs++;
            s.entries[i].frees++;
        }
        assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    }
    assert_int_equal(pw_store_commit(st, &d), 0);
    for (int flushed = 0; flushed < 2; flushed++) {
        pw_store_series_t sr = {0};
        assert_int_equal(pw_store_series(st, "new", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                         TAGS[1].pool, T0, T0 + 100000, 0, &sr, &d),
                         NSAMPLES);
        for (unsigned k = 0; k < NSAMPLES; k++) {
            uint64_t a, f, df, b;
            row_of(1, k, &a, &f, &df, &b);
            assert_int_equal(sr.points[k].allocs, a + 1);
            assert_int_equal(sr.points[k].frees, f + 1);
        }
        pw_store_series_free(&sr);
        assert_int_equal(pw_store_flush(st, &d), 0);
    }
    pw_sample_close(&s);
    pw_store_close(st);
}

/* Puts sample k of a wide host at ts: `nrows` rows "<prefix>NNN" (paged below 1,000, nonpaged
 * above), every row's allocs moving at each sample. */
static void put_wide(pw_store_t *st, const pw_store_host_t *h, pw_sample_t *s, unsigned k,
                     uint64_t ts, unsigned nrows, char prefix)
{
    pw_diag_t d;
    pw_sample_reset(s);
    s->seq = k + 1;
    s->timestamp_ms = ts;
    for (unsigned r = 0; r < nrows; r++) {
        char tag[5];
        snprintf(tag, sizeof(tag), "%c%03u", prefix, r % 1000);
        uint64_t a = 1000ull * r + 7919ull * k * (r + 1), df = r + (k * r) % 97;
        assert_int_equal(pw_sample_add(s, tag, 4, r < 1000 ? PW_POOL_PAGED : PW_POOL_NONPAGED, a,
                                       a - df, df, 64 * df),
                         0);
    }
    assert_int_equal(pw_store_put(st, h, s, 0, &d), 0);
}

/* 2,000 rows that all change at every sample, committed every two samples, as fast as the
 * store takes them (a backfill): the WAL file never exceeds its 1 MiB limit plus one commit
 * (measured here: ~0.2 MiB a commit), and the store's own figure agrees. */
static void test_wal_bounded(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.wal_max_bytes = 1u << 20};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    char walp[320];
    snprintf(walp, sizeof(walp), "%s-wal", t.path);
    pw_store_host_t h = host_of("bf", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    uint64_t maxwal = 0, maxcommit = 0, prev = 0;
    for (unsigned k = 0; k < 200; k++) {
        put_wide(st, &h, &s, k, T0 + 10000ull * k, 2000, 'W');
        if (k % 2 == 1) {
            assert_int_equal(pw_store_commit(st, &d), 0);
            assert_true(pw_store_compact(st, 20, &d) >= 0);
            struct stat sb;
            uint64_t w = stat(walp, &sb) == 0 ? (uint64_t)sb.st_size : 0;
            if (w > prev && w - prev > maxcommit)
                maxcommit = w - prev;
            prev = w;
            maxwal = w > maxwal ? w : maxwal;
        }
    }
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    if (maxwal > (1u << 20) + maxcommit)
        fail_msg("WAL reached %llu bytes (limit 1 MiB, a commit up to %llu)",
                 (unsigned long long)maxwal, (unsigned long long)maxcommit);
    assert_true(ss.wal_max_bytes >= maxwal);
    assert_true(ss.wal_max_bytes <= (1u << 20) + maxcommit);
    assert_true(ss.wal_checkpoints > 0);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* 24 one-hour chunks of 500 rows; retention removes all but the newest: the freed pages go
 * back to the file system (incremental auto-vacuum), the file shrinks, none stays free. */
static void test_vacuum_after_retention(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    pw_store_host_t h = host_of("vac", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < 24 * 6; k++) { /* every 10 minutes for 24 hours */
        put_wide(st, &h, &s, k, T0 + 600000ull * k, 500, 'V');
        assert_int_equal(pw_store_commit(st, &d), 0);
    }
    assert_int_equal(pw_store_flush(st, &d), 0);
    assert_int_equal(pw_store_checkpoint(st, &d), 0);
    pw_store_stats_t before, after;
    assert_int_equal(pw_store_stats(st, &before, &d), 0);
    uint64_t newest = T0 + 600000ull * (24 * 6 - 1);
    /* every raw chunk, no 1-min rollup, the 15-min rollups of the last hour only */
    int64_t n = pw_store_retention(st, newest + PW_STORE_DEFAULT_15MIN_RETENTION_MS - 3600000, &d);
    assert_true(n > 20);
    assert_int_equal(pw_store_checkpoint(st, &d), 0);
    assert_int_equal(pw_store_stats(st, &after, &d), 0);
    assert_int_equal(after.free_bytes, 0);
    assert_true(after.vacuumed_bytes > 0);
    if (after.db_bytes >= before.db_bytes * 3 / 4)
        fail_msg("file %llu -> %llu bytes after retention", (unsigned long long)before.db_bytes,
                 (unsigned long long)after.db_bytes);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* max_size_bytes: 48 hours of 500 rows do not fit in 1 MiB. The oldest closed items go
 * (counted in `evicted`), the file's used pages end under the budget, the newest hours still
 * answer, the oldest do not, and no write ever failed. */
static void test_max_size(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.max_size_bytes = 1u << 20};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    pw_store_host_t h = host_of("big", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    const unsigned N = 48 * 12; /* every 5 minutes */
    for (unsigned k = 0; k < N; k++) {
        put_wide(st, &h, &s, k, T0 + 300000ull * k, 500, 'M');
        assert_int_equal(pw_store_commit(st, &d), 0);
        assert_true(pw_store_compact(st, 20, &d) >= 0);
    }
    uint64_t last = T0 + 300000ull * (N - 1);
    assert_true(pw_store_retention(st, last, &d) >= 0);
    assert_int_equal(pw_store_checkpoint(st, &d), 0); /* the file as the WAL left it */
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_true(ss.evicted > 0);
    if (ss.db_bytes - ss.free_bytes > o.max_size_bytes)
        fail_msg("used %llu bytes (file %llu, free %llu), evicted %llu, chunks %llu, rollups %llu",
                 (unsigned long long)(ss.db_bytes - ss.free_bytes), (unsigned long long)ss.db_bytes,
                 (unsigned long long)ss.free_bytes, (unsigned long long)ss.evicted,
                 (unsigned long long)ss.chunks, (unsigned long long)ss.rollup_windows);
    pw_store_series_t sr = {0};
    assert_true(pw_store_series(st, "big", (const uint8_t *)"M007", 4, PW_POOL_PAGED,
                                last - 3600000, last, 0, &sr, &d) >= 12);
    assert_int_equal(pw_store_series(st, "big", (const uint8_t *)"M007", 4, PW_POOL_PAGED, T0,
                                     T0 + 3600000, 0, &sr, &d),
                     0);
    pw_store_series_free(&sr);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* A new store's files are the owner's only whatever the umask (022 here, the usual one):
 * the database, its -wal and -shm (SQLite gives them the database file's mode) and the lock
 * file, 0600. An existing database keeps the mode its operator gave it (0640 here). */
#ifndef _WIN32 /* Windows: ACLs, no mode bits */
static void test_file_modes(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    mode_t old = umask(022);
    pw_store_lock_t *lk = NULL;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_lock_acquire(t.path, &lk, &d), 0);
    assert_non_null(lk);
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    put_all(st, "win-01", BOOT1, 0, 3);
    const char *suffix[] = {"", "-wal", "-shm", ".lock"};
    char p[320];
    struct stat sb;
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s%s", t.path, suffix[i]);
        assert_int_equal(stat(p, &sb), 0);
        if ((sb.st_mode & 0777) != 0600)
            fail_msg("%s: mode %03o, not 600", p, (unsigned)(sb.st_mode & 0777));
    }
    pw_store_close(st);
    pw_store_lock_release(lk);
    assert_int_equal(chmod(t.path, 0640), 0);
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    assert_int_equal(stat(t.path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    pw_store_close(st);
    umask(old);
    tmp_remove(&t);
}
#endif

/* ---- host totals per bucket (schema 8) ----------------------------------------------------- */

/* Sample k of the totals tests, every 20 s from T0: nonpaged goes up and down (min and max are
 * not the first or last of a bucket), paged only up; the nonpaged limit changes at k = 200. */
#define TOT_STEP 20000ull
static uint64_t tot_np(unsigned k)
{
    return 1000000 + (uint64_t)((k * 37u) % 101u) * 1000 + k;
}
static uint64_t tot_pg(unsigned k)
{
    return 2000000 + (uint64_t)k * 16;
}
static uint64_t tot_lim(unsigned k)
{
    return k < 200 ? 128ull << 20 : 256ull << 20;
}

static void put_tot(pw_store_t *st, const pw_store_host_t *h, pw_sample_t *s, unsigned k,
                    uint64_t seq, uint64_t ts)
{
    pw_diag_t d;
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = ts;
    s->totals.nonpaged_bytes = tot_np(k);
    s->totals.paged_bytes = tot_pg(k);
    s->totals.nonpaged_limit_bytes = tot_lim(k);
    assert_int_equal(pw_sample_add(s, "Tot1", 4, PW_POOL_NONPAGED, 10 + k, 5, 5 + k, 64), 0);
    assert_int_equal(pw_store_put(st, h, s, 0, &d), 0);
}

/* The answer of pw_store_totals_series over samples k0..k1 (every 20 s from T0) at `step`
 * (a multiple of 20 s), computed here from the formulas: a point per step, its last sample's
 * values, min, max and count. */
static void check_tot(const pw_store_tseries_t *got, unsigned k0, unsigned k1, uint64_t step)
{
    size_t i = 0;
    for (unsigned k = k0; k <= k1; i++) {
        uint64_t ts = T0 + TOT_STEP * k, g = ts - ts % step;
        uint64_t mn = UINT64_MAX, mx = 0, n = 0, last = k;
        for (; k <= k1 && T0 + TOT_STEP * k < g + step; k++, n++) {
            mn = tot_np(k) < mn ? tot_np(k) : mn;
            mx = tot_np(k) > mx ? tot_np(k) : mx;
            last = k;
        }
        if (i >= got->n)
            fail_msg("point %zu (step %llu) missing: %zu points", i, (unsigned long long)g, got->n);
        const pw_store_tpoint_t *p = &got->points[i];
        assert_int_equal(p->ts_ms, g);
        assert_int_equal(p->last_ms, T0 + TOT_STEP * last);
        assert_int_equal(p->samples, n);
        assert_int_equal(p->nonpaged, tot_np(last));
        assert_int_equal(p->nonpaged_min, mn);
        assert_int_equal(p->nonpaged_max, mx);
        assert_int_equal(p->paged, tot_pg(last));
        assert_int_equal(p->paged_max, tot_pg(last)); /* paged only grows */
        assert_int_equal(p->nonpaged_limit, tot_lim(last));
        assert_int_equal(p->paged_limit, 0);
    }
    assert_int_equal(got->n, i);
}

/* Two hours of samples every 20 s: the 1-min and 15-min buckets are written with each put and
 * answer every step from them, exactly as computed from the samples (also with the chunk still
 * open, and for a range whose start is not on a bucket); the raw level replays the chunks.
 * After the raw chunks expire the buckets still answer; then each level goes with its own
 * retention. A host deleted by an operator takes its buckets with it. */
static void test_totals(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_store_host_t h = host_of("tot", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    const unsigned N = 360; /* k = 0 .. 359: T0 .. T0 + 2 h - 20 s */
    for (unsigned k = 0; k < N; k++)
        put_tot(st, &h, &s, k, k + 1, T0 + TOT_STEP * k);
    assert_int_equal(pw_store_commit(st, &d), 0);
    const uint64_t H = 3600000, last = T0 + TOT_STEP * (N - 1);
    pw_store_tseries_t ts = {0};
    /* 1-min buckets (3 samples each), merged into 5-min steps, 15-min buckets and 30-min steps */
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 60000, &ts, &d), 120);
    assert_int_equal(ts.level, PW_STORE_1MIN);
    assert_int_equal(ts.step_ms, 60000);
    check_tot(&ts, 0, N - 1, 60000);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 300000, &ts, &d), 24);
    check_tot(&ts, 0, N - 1, 300000);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 900000, &ts, &d), 8);
    assert_int_equal(ts.level, PW_STORE_15MIN);
    check_tot(&ts, 0, N - 1, 900000);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 1800000, &ts, &d), 4);
    check_tot(&ts, 0, N - 1, 1800000);
    /* a step of 90 s is two buckets; a start inside a bucket takes the whole bucket */
    assert_int_equal(pw_store_totals_series(st, "tot", T0 + 61000, T0 + H - 1, 90000, &ts, &d), 30);
    assert_int_equal(ts.step_ms, 120000);
    check_tot(&ts, 3, 179, 120000);
    /* raw: every sample from the chunks (one open, one sealed and compacted by the flush) */
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 0, &ts, &d), N);
    assert_int_equal(ts.level, PW_STORE_RAW);
    check_tot(&ts, 0, N - 1, 1);
    assert_int_equal(pw_store_flush(st, &d), 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0 + 61000, last, 0, &ts, &d), N - 4);
    check_tot(&ts, 4, N - 1, 1);
    /* the raw chunks expire: the buckets answer as before, the raw level has nothing */
    const uint64_t RAW = PW_STORE_DEFAULT_RAW_RETENTION_MS, M1 = PW_STORE_DEFAULT_1MIN_RETENTION_MS,
                   M15 = PW_STORE_DEFAULT_15MIN_RETENTION_MS;
    assert_true(pw_store_retention(st, last + RAW + 1, &d) >= 3); /* 3 windows of 1 h */
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.chunks, 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 0, &ts, &d), 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 300000, &ts, &d), 24);
    check_tot(&ts, 0, N - 1, 300000);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 3600000, &ts, &d), 3);
    check_tot(&ts, 0, N - 1, 3600000); /* T0 is half past an hour */
    /* 1-min retention: a bucket goes once its whole minute is older; the 15-min ones stay */
    assert_true(pw_store_retention(st, T0 + 60000 + M1, &d) >= 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 60000, &ts, &d), 119);
    check_tot(&ts, 3, N - 1, 60000);
    assert_true(pw_store_retention(st, last + M1 + 60000, &d) >= 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 60000, &ts, &d), 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 900000, &ts, &d), 8);
    check_tot(&ts, 0, N - 1, 900000);
    assert_true(pw_store_retention(st, T0 + 900000 + M15, &d) >= 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 900000, &ts, &d), 7);
    check_tot(&ts, 45, N - 1, 900000);
    /* retired without its history: the buckets go with the host; a new host of that name
     * starts empty */
    assert_int_equal(pw_store_host_retire(st, "tot", 0, last, &d), 0);
    put_tot(st, &h, &s, 7, 1000, T0 + TOT_STEP * 7);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_totals_series(st, "tot", T0, last, 900000, &ts, &d), 1);
    check_tot(&ts, 7, 7, 900000);
    assert_int_equal(pw_store_totals_series(st, "nobody", T0, last, 60000, &ts, &d), PW_ENOENT);
    assert_int_equal(pw_store_totals_series(st, "tot", last, T0, 60000, &ts, &d), PW_EINVAL);
    pw_store_tseries_free(&ts);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* A bucket's last values are its newest sample's, whatever order samples arrive in (an older
 * sample is stored, in a chunk of its own); min, max and count take both. */
static void test_totals_order(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_store_host_t h = host_of("late", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    put_tot(st, &h, &s, 1, 2, T0 + TOT_STEP); /* k = 1 first, then k = 0 (20 s older) */
    put_tot(st, &h, &s, 0, 3, T0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_store_tseries_t ts = {0};
    for (int pass = 0; pass < 2; pass++) { /* the buckets, then the raw chunks */
        uint64_t step = pass ? 40000 : 60000;
        assert_int_equal(pw_store_totals_series(st, "late", T0, T0 + 59999, step, &ts, &d), 1);
        assert_int_equal(ts.level, pass ? PW_STORE_RAW : PW_STORE_1MIN);
        check_tot(&ts, 0, 1, step);
    }
    pw_store_tseries_free(&ts);
    pw_sample_close(&s);
    pw_store_close(st);
}

/* A group commit writes no totals bucket: the open chunk's are in memory (answered from there)
 * and written when it is sealed, or at a clean close while it stays open; after a reopen the
 * chunk is sealed by the host's next sample without counting its samples twice. */
static void test_totals_at_seal(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_opts_t o = {.chunk_max_samples = 8};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    for (unsigned k = 0; k < 5; k++)
        put_k(st, "seal", BOOT1, k, 100 + k, 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals"), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 1);
    check_built_totals(st, "seal", 5);
    for (unsigned k = 5; k < 11; k++) /* 0..7 sealed: 2 minutes, 1 quarter; 8..10 open */
        put_k(st, "seal", BOOT1, k, 100 + k, 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals"), 3);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 1);
    check_built_totals(st, "seal", 11);
    pw_store_close(st); /* the open chunk's bucket (minute 1 again) and quarter: merged in */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals"), 3);
    assert_int_equal(sql_int(t.path, "SELECT sum(n) FROM totals WHERE level=1"), 11);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 0);
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_built_totals(st, "seal", 11);
    for (unsigned k = 11; k < 14; k++) /* seals the chunk left open, a new one */
        put_k(st, "seal", BOOT1, k, 100 + k, 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_true(pw_store_compact(st, 1000, &d) >= 0);
    check_built_totals(st, "seal", 14);
    assert_int_equal(pw_store_flush(st, &d), 0);
    check_built_totals(st, "seal", 14);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT sum(n) FROM totals WHERE level=2"), 14);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 0);
    tmp_remove(&t);
}

/* An agent's clean stop stays in the store across a reopen (what a restarted collector reads to
 * know the host stopped, not went silent) until its next start clears it. */
static void test_host_stopped(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    pw_store_host_t h = host_of("stops", BOOT1, 64);
    pw_sample_t s;
    pw_sample_init(&s);
    put_tot(st, &h, &s, 0, 1, T0);
    /* the stop commits the put before it */
    assert_int_equal(pw_store_host_stopped(st, "stops", T0 + 5, "SIGTERM", &d), 0);
    assert_int_equal(pw_store_host_stopped(st, "nobody", T0 + 5, "SIGTERM", &d), PW_ENOENT);
    pw_store_close(st);
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    pw_store_host_info_t *hi;
    size_t n;
    assert_int_equal(pw_store_hosts(st, &hi, &n, &d), 0);
    assert_int_equal(n, 1);
    assert_int_equal(hi[0].stopped_ms, T0 + 5);
    assert_string_equal(hi[0].stop_reason, "SIGTERM");
    assert_int_equal(hi[0].last_seen_ms, T0);
    pw_store_hosts_free(hi, n);
    /* a reason longer than the field is cut at 31 bytes; 0 clears both */
    assert_int_equal(
        pw_store_host_stopped(st, "stops", T0 + 6, "service stop by a very long reason", &d), 0);
    assert_int_equal(pw_store_hosts(st, &hi, &n, &d), 0);
    assert_string_equal(hi[0].stop_reason, "service stop by a very long rea");
    pw_store_hosts_free(hi, n);
    assert_int_equal(pw_store_host_stopped(st, "stops", 0, "ignored", &d), 0);
    pw_store_close(st);
    assert_int_equal(pw_store_open(t.path, NULL, &st, &d), 0);
    assert_int_equal(pw_store_hosts(st, &hi, &n, &d), 0);
    assert_int_equal(hi[0].stopped_ms, 0);
    assert_string_equal(hi[0].stop_reason, "");
    pw_store_hosts_free(hi, n);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* What a host's row keeps across a restart beside its samples (schema 10): its agent's OS build,
 * architecture and agent version from the Hello (written when they change), and the samples its
 * raw chunks hold (the sealed chunks' counts and the open chunk's rows). Chunks of 4 samples
 * here: 6 samples are a sealed chunk of 4 and an open one of 2. */
static void test_host_hello_and_samples(void **state)
{
    (void)state;
    tmp_t t;
    tmp_make(&t);
    pw_store_t *st;
    pw_diag_t d;
    pw_store_opts_t o = {.chunk_max_samples = 4};
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    pw_store_host_t h = host_of("w2003", BOOT1, 32);
    h.os_build = 3790;
    h.arch = "x86";
    h.agent_version = "0.1.0-with-a-version-longer-than-31-bytes";
    pw_sample_t s;
    pw_sample_init(&s);
    for (unsigned k = 0; k < 6; k++)
        put_tot(st, &h, &s, k, k + 1, T0 + k * 20000);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_store_close(st);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
        pw_store_host_info_t *hi;
        size_t n;
        assert_int_equal(pw_store_hosts(st, &hi, &n, &d), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hi[0].os_build, 3790);
        assert_string_equal(hi[0].arch, "x86");
        /* cut at 31 bytes; after a restart, the version of the newest sample's Hello */
        assert_string_equal(hi[0].agent_version,
                            pass == 0 ? "0.1.0-with-a-version-longer-tha" : "0.2.0");
        assert_int_equal(hi[0].stored_samples, pass == 0 ? 6 : 7);
        assert_int_equal(hi[0].imported_samples, 0);
        pw_store_hosts_free(hi, n);
        /* a new agent version on the next sample is written with it */
        h.agent_version = "0.2.0";
        put_tot(st, &h, &s, 6 + (unsigned)pass, 7 + (uint64_t)pass, T0 + (6 + pass) * 20000);
        assert_int_equal(pw_store_commit(st, &d), 0);
        assert_int_equal(pw_store_hosts(st, &hi, &n, &d), 0);
        assert_string_equal(hi[0].agent_version, "0.2.0");
        pw_store_hosts_free(hi, n);
        h.agent_version = "0.1.0-with-a-version-longer-than-31-bytes";
        pw_store_close(st);
    }
    pw_sample_close(&s);
    tmp_remove(&t);
}

/* tests/fixtures/store/v6.db was written by the release with schema 6 (gen_store.c: samples
 * 0..9 every 10 s from T0, nonpaged 5,000,000 + k, limit 128 MiB; chunks of 4, two compacted,
 * one open). Opening it migrates to schema 10 (through 7, 8 and 9): its chunks have no totals
 * buckets yet, so a query replays them (1-min: samples 0..5 and 6..9; 15-min: all ten); compaction
 * then writes their buckets (the open chunk's once it is sealed, by the next sample) and the
 * answers come from the buckets alone (the chunks' blobs wiped); samples 10 and 11 join the second
 * minute.
 */
static void check_legacy_tot(pw_store_t *st, unsigned k1)
{
    pw_store_tseries_t ts = {0};
    pw_diag_t d;
    for (int lv = 0; lv < 2; lv++) {
        uint64_t step = lv ? 900000 : 60000;
        assert_int_equal(pw_store_totals_series(st, "legacy", T0, T0 + 600000, step, &ts, &d),
                         lv ? 1 : 2);
        for (size_t i = 0; i < ts.n; i++) {
            unsigned a = lv || i == 0 ? 0 : 6, b = lv || i == 1 ? k1 : 5;
            const pw_store_tpoint_t *p = &ts.points[i];
            assert_int_equal(p->ts_ms, T0 + 60000ull * a / 6);
            assert_int_equal(p->samples, b - a + 1);
            assert_int_equal(p->last_ms, T0 + 10000ull * b);
            assert_int_equal(p->nonpaged, 5000000 + b);
            assert_int_equal(p->nonpaged_min, 5000000 + a);
            assert_int_equal(p->nonpaged_max, 5000000 + b);
            assert_int_equal(p->nonpaged_limit, 128ull << 20);
            assert_int_equal(p->paged + p->paged_max + p->paged_limit, 0);
        }
    }
    pw_store_tseries_free(&ts);
}

static void test_migrate_v6(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_fixture(&t, "store/v6.db", 6, 2, 2);
    pw_diag_t d;
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 3);
    check_legacy_tot(st, 9);
    /* the two compacted chunks get their buckets; the open one waits until it is sealed */
    assert_int_equal(pw_store_compact(st, 1000, &d), 0);
    check_legacy_tot(st, 9);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 1);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals"), 3);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    continue_legacy(st); /* seals the open chunk, samples 10 and 11 in a new one */
    assert_int_equal(pw_store_flush(st, &d), 0);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM totals_todo"), 0);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    sql_on(t.path, "DELETE FROM chunk_rows");
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_legacy_tot(st, 11);
    pw_store_close(st);
    tmp_remove(&t);
}

/* Sample k of the fixtures' host "legacy" a day after T0, committed: it seals the fixture's open
 * chunk, which compaction then compacts (and the fixture's day is over for the host). */
static void legacy_next_day(pw_store_t *st, unsigned k)
{
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("legacy", BOOT1, 64);
    pw_diag_t d;
    build(&s, k);
    s.timestamp_ms = T0 + DAY_MS;
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    assert_int_equal(pw_store_compact(st, 1000, &d), 1); /* the fixture's open chunk */
    pw_sample_close(&s);
}

/* Samples 0..n-1 of every (tag, pool) at `step`: one point per epoch-aligned step holding the
 * last sample's values, min and max of bytes and diff and the sample count, computed here from
 * row_of. */
static void check_legacy_step(pw_store_t *st, unsigned n, uint64_t step)
{
    for (size_t i = 0; i < NTAGS; i++) {
        pw_store_series_t sr = {0};
        pw_diag_t d;
        int64_t got = pw_store_series(st, "legacy", (const uint8_t *)TAGS[i].b, TAGS[i].len,
                                      TAGS[i].pool, T0, T0 + 10000ull * (n - 1), step, &sr, &d);
        size_t p = 0;
        for (unsigned k = 0; k < n;) {
            uint64_t g = (T0 + 10000ull * k) / step * step, a, f, df, b;
            uint64_t bmin = UINT64_MAX, bmax = 0, dmin = UINT64_MAX, dmax = 0, cnt = 0, la = 0,
                     lf = 0, ld = 0, lb = 0;
            for (; k < n && (T0 + 10000ull * k) / step * step == g; k++)
                if (row_of(i, k, &a, &f, &df, &b)) {
                    cnt++, la = a, lf = f, ld = df, lb = b;
                    bmin = b < bmin ? b : bmin, bmax = b > bmax ? b : bmax;
                    dmin = df < dmin ? df : dmin, dmax = df > dmax ? df : dmax;
                }
            if (cnt == 0)
                continue;
            assert_true(p < sr.n);
            const pw_store_point_t *pt = &sr.points[p++];
            assert_int_equal(pt->ts_ms, g);
            assert_int_equal(pt->allocs, la);
            assert_int_equal(pt->frees, lf);
            assert_int_equal(pt->diff, ld);
            assert_int_equal(pt->bytes, lb);
            assert_int_equal(pt->bytes_min, bmin);
            assert_int_equal(pt->bytes_max, bmax);
            assert_int_equal(pt->diff_min, dmin);
            assert_int_equal(pt->diff_max, dmax);
            assert_int_equal(pt->samples, cnt);
        }
        assert_int_equal(got, (int64_t)p);
        pw_store_series_free(&sr);
    }
}

/* tests/fixtures/store/v10.db was written by the release that merged day pages early (schema 10,
 * main e42dd4b; `gen_store v10.db 64`): 64 samples in chunks of 4, the first 12 chunks' pages
 * merged at 12 pages into day pages (one segment spanning the 12 chunks, re-encoded), 3 more
 * chunk pages of the same day waiting, the last chunk open. A sample the next day ends the
 * fixture's day: this build merges the 4 chunk pages left (the open chunk's once sealed) into
 * the release's day pages, as segments after its own, and every sample reads back exact at
 * every step, from the pages alone once the chunks' blobs are wiped. */
static void test_day_pages_of_v10(void **state)
{
    (void)state;
    tmp_t t;
    copy_fixture(&t, "store/v10.db", 10);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 3);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 2);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    assert_int_equal(pw_store_compact(st, 1000, &d), 0); /* the day is not over: no merge */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 3);
    check_series_n(st, "legacy", 64);
    legacy_next_day(st, 64);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.merges, 1); /* one (host, group of 32 tags, day) */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"),
                     3); /* the release's 2 pages of 4 tags, this build's of 32 */
    check_series_n(st, "legacy", 64);
    check_legacy_step(st, 64, 60000);
    check_legacy_step(st, 64, 900000);
    pw_store_close(st);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_series_n(st, "legacy", 64);
    check_legacy_step(st, 64, 60000);
    check_legacy_step(st, 64, 900000);
    pw_store_close(st);
    tmp_remove(&t);
}

/* The samples of host "legacy" as pw_store_hosts counts them: in its chunks, and dropped from
 * them by retention. */
static void legacy_counts(pw_store_t *st, uint64_t in_chunks, uint64_t expired)
{
    pw_store_host_info_t *hv;
    size_t n;
    pw_diag_t d;
    assert_int_equal(pw_store_hosts(st, &hv, &n, &d), 0);
    assert_int_equal(n, 1);
    assert_string_equal(hv[0].name, "legacy");
    assert_int_equal(hv[0].imported_samples, 0);
    assert_int_equal(hv[0].stored_samples, in_chunks);
    assert_int_equal(hv[0].samples_expired, expired);
    pw_store_hosts_free(hv, n);
}

/* tests/fixtures/store/v10b.db was written by the release before hosts.samples_expired (schema
 * 10, main 7352058; `gen_store v10b.db 22`): 22 samples (seq 100..121, 10 s apart) in chunks of
 * 4, five compacted (20 samples), the last open with 2. Opened, it migrates to schema 11 and
 * counts 22, none expired. A resend of seq 121 is not a sample more; seq 122 is (23: it seals
 * the fixture's open chunk, which a reopened store does not add to, and opens a 7th). Raw
 * retention at T0 + 100 s + its 48 h drops the chunks whose last sample is older than T0 + 100
 * s: the first two (last samples at T0 + 30 s and 70 s; the third's is at 110 s), 8 samples,
 * which the host keeps counting: 15 in chunks + 8 = 23, and after a close and reopen. Deleting
 * the host (the trigger's cascade) still works. */
static void test_samples_counted_across_retention(void **state)
{
    (void)state;
    tmp_t t;
    copy_fixture(&t, "store/v10b.db", 10);
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    legacy_counts(st, 22, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("legacy", BOOT1, 64);
    build(&s, 21); /* seq 121: stored already */
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_STORE_DUPLICATE);
    build(&s, 22);
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    legacy_counts(st, 23, 0);
    assert_true(pw_store_retention(st, T0 + 100000 + PW_STORE_DEFAULT_RAW_RETENTION_MS, &d) >= 2);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM chunks"), 5);
    assert_int_equal(sql_int(t.path, "SELECT min(first_seq) FROM chunks"), 108);
    legacy_counts(st, 15, 8);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT samples_expired FROM hosts"), 8);
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    legacy_counts(st, 15, 8);
    build(&s, 22); /* after the restart too: a resend is no sample more */
    assert_int_equal(pw_store_put(st, &h, &s, 0, &d), PW_STORE_DUPLICATE);
    assert_int_equal(pw_store_commit(st, &d), 0);
    legacy_counts(st, 15, 8);
    assert_int_equal(pw_store_host_retire(st, "legacy", 0, T0 + DAY_MS, &d), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM hosts"), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM chunks"), 0);
    pw_sample_close(&s);
    pw_store_close(st);
    tmp_remove(&t);
}

/* tests/fixtures/store/v8.db was written by the release before day pages (schema 8, main
 * 7304d40; gen_store.c): two chunks compacted with their chunk pages and totals buckets, one open
 * (its buckets written at the clean close). It opens migrated to schema 10 (both pages hold the
 * 15-min level: no rollup has their samples), its totals and samples read back exact; a sample
 * the next day seals the old chunk and ends the fixture's day, so compaction merges the day's
 * three chunk pages into a day page (the 5 tags are one group of 32), and every sample reads back
 * exact at every step from them, from them alone once the blobs are wiped, and from the 15-min
 * rollups they leave when they expire. */
static void test_migrate_v8_day_pages(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_fixture(&t, "store/v8.db", 8, 2, 2);
    pw_diag_t d;
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    check_legacy_tot(st, 9); /* the release's totals buckets, read as they are */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series WHERE m15 = 0"), 2);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 0);
    legacy_next_day(st, 10);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 0);
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series_days"), 1); /* 1 group */
    check_series_raw(st, "legacy");
    for (size_t i = 0; i < NTAGS; i++) {
        /* samples 0..9 in one 15-min step: the last one's values, min and max over the ten */
        pw_store_series_t sr = {0};
        assert_int_equal(pw_store_series(st, "legacy", (const uint8_t *)TAGS[i].b, TAGS[i].len,
                                         TAGS[i].pool, T0, T0 + 100000, 900000, &sr, &d),
                         1);
        uint64_t a, f, df, b, bmin = UINT64_MAX, bmax = 0;
        uint32_t n = 0;
        for (unsigned k = 0; k < NSAMPLES; k++)
            if (row_of(i, k, &a, &f, &df, &b)) {
                n++;
                bmin = b < bmin ? b : bmin, bmax = b > bmax ? b : bmax;
            }
        row_of(i, NSAMPLES - 1, &a, &f, &df, &b);
        assert_int_equal(sr.points[0].samples, n);
        assert_int_equal(sr.points[0].bytes, b);
        assert_int_equal(sr.points[0].allocs, a);
        assert_int_equal(sr.points[0].bytes_min, bmin);
        assert_int_equal(sr.points[0].bytes_max, bmax);
        pw_store_series_free(&sr);
    }
    assert_int_equal(pw_store_flush(st, &d), 0); /* the new sample's chunk: day 2 waits */
    assert_int_equal(sql_int(t.path, "SELECT count(*) FROM series"), 1);
    pw_store_close(st);
    sql_on(t.path, "UPDATE chunks SET data = x'00'");
    pw_store_opts_t o = {.chunk_max_samples = 4};
    assert_int_equal(pw_store_open(t.path, &o, &st, &d), 0);
    check_series_raw(st, "legacy");
    /* the pages expire (the day's and the new sample's): 15-min rollups hold the same point */
    assert_true(pw_store_retention(st, T0 + DAY_MS + PW_STORE_DEFAULT_1MIN_RETENTION_MS + 1, &d) >
                0);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, &d), 0);
    assert_int_equal(ss.series_pages, 0);
    assert_int_equal(ss.rollup_windows, 2); /* the day page, the new sample's chunk page */
    pw_store_series_t sr = {0};
    uint64_t a, f, df, b;
    row_of(1, NSAMPLES - 1, &a, &f, &df, &b);
    assert_int_equal(pw_store_series(st, "legacy", (const uint8_t *)TAGS[1].b, TAGS[1].len,
                                     TAGS[1].pool, T0, T0 + 100000, 900000, &sr, &d),
                     1);
    assert_int_equal(sr.points[0].samples, NSAMPLES);
    assert_int_equal(sr.points[0].bytes, b);
    pw_store_series_free(&sr);
    pw_store_close(st);
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    tmp_remove(&t);
}

/* `g` (freed here) is one gap its agent reported: `missed` samples lost before seq `seq` at
 * `t1`, every row, no detail. */
static void check_agent_gap(pw_store_gap_t *g, uint64_t t1, uint64_t seq, uint64_t missed)
{
    assert_int_equal(g[0].cause, PW_STORE_GAP_AGENT);
    assert_int_equal(g[0].t0_ms, 0);
    assert_int_equal(g[0].t1_ms, t1);
    assert_int_equal(g[0].seq, seq);
    assert_int_equal(g[0].missed, missed);
    assert_int_equal(g[0].all_rows, 1);
    assert_int_equal(g[0].ntags, 0);
    assert_string_equal(g[0].detail, "");
    pw_store_gaps_free(g);
}

/* tests/fixtures/store/v11.db was written by the release before gaps had a cause (schema 11,
 * main 565de6b; `gen_store v11.db 10 3`): sample 5 (seq 105, T0 + 50 s) said its agent lost 3
 * samples before it. Opened, it migrates to schema 12: that gap reads as an agent's (every row,
 * its first time not known), its samples read back exact, and a put that reports a gap after the
 * migration records one of the same cause. Bad arguments are refused. */
static void test_migrate_v11_gaps(void **state)
{
    (void)state;
    tmp_t t;
    pw_store_t *st = open_fixture(&t, "store/v11.db", 11, 2, 2);
    pw_diag_t d;
    assert_int_equal(sql_int(t.path, "SELECT max(version) FROM migrations"), SCHEMA_NOW);
    pw_store_gap_t *g;
    size_t n;
    assert_int_equal(pw_store_gaps(st, "legacy", T0, T0 + 100000, &g, &n, &d), 0);
    assert_int_equal(n, 1);
    check_agent_gap(g, T0 + 50000, 105, 3);
    /* a range after it, or before it: none */
    assert_int_equal(pw_store_gaps(st, "legacy", T0 + 50001, T0 + 100000, &g, &n, &d), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pw_store_gaps(st, "legacy", T0, T0 + 49999, &g, &n, &d), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pw_store_gaps(st, "nobody", 0, UINT64_MAX, &g, &n, &d), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pw_store_gaps(st, "legacy", 2, 1, &g, &n, &d), PW_EINVAL);
    assert_string_equal(d.field, "from");
    assert_int_equal(pw_store_gaps(st, "", 0, 1, &g, &n, &d), PW_EINVAL);
    assert_int_equal(pw_store_gaps(st, NULL, 0, 1, &g, &n, &d), PW_EINVAL);
    assert_int_equal(pw_store_gaps(NULL, "legacy", 0, 1, &g, &n, &d), PW_EINVAL);
    /* seq 110 reports 2 lost before it */
    pw_sample_t s;
    pw_sample_init(&s);
    pw_store_host_t h = host_of("legacy", BOOT1, 64);
    build(&s, 10);
    assert_int_equal(pw_store_put(st, &h, &s, 2, &d), 0);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_sample_close(&s);
    assert_int_equal(pw_store_gaps(st, "legacy", T0 + 50001, T0 + 100000, &g, &n, &d), 0);
    assert_int_equal(n, 1);
    check_agent_gap(g, T0 + 100000, 110, 2);
    check_series_n(st, "legacy", 11);
    pw_store_close(st);
    tmp_remove(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_interleaved_instances),
        cmocka_unit_test(test_layout1_chunks),
        cmocka_unit_test(test_compact_damaged),
        cmocka_unit_test(test_compact_commit_not_synced),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_checkpoint_while_open),
        cmocka_unit_test(test_put_during_truncate),
        cmocka_unit_test(test_idle_large_wal),
        cmocka_unit_test(test_stop_during_truncate),
        cmocka_unit_test(test_instance_last_seq),
#ifndef _WIN32
        cmocka_unit_test(test_crash_after_ack),
#endif
        cmocka_unit_test(test_open_missing_directory),
        cmocka_unit_test(test_rollups),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_paged_lazy_rollups),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_host_lifecycle),
        cmocka_unit_test(test_put_frame),
        cmocka_unit_test(test_staggered_windows),
        cmocka_unit_test(test_series_pages),
        cmocka_unit_test(test_day_pages),
        cmocka_unit_test(test_migrate_v3),
        cmocka_unit_test(test_migrate_v4),
        cmocka_unit_test(test_migrate_v5),
        cmocka_unit_test(test_live_series),
        cmocka_unit_test(test_live_pages_fleet_like),
        cmocka_unit_test(test_live_forget_host),
        cmocka_unit_test(test_dict_reset_mid_chunk),
        cmocka_unit_test(test_retire_series_pages),
        cmocka_unit_test(test_wal_bounded),
        cmocka_unit_test(test_vacuum_after_retention),
        cmocka_unit_test(test_max_size),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_totals_order),
        cmocka_unit_test(test_totals_at_seal),
        cmocka_unit_test(test_host_stopped),
        cmocka_unit_test(test_host_hello_and_samples),
        cmocka_unit_test(test_migrate_v6),
        cmocka_unit_test(test_migrate_v8_day_pages),
        cmocka_unit_test(test_day_pages_of_v10),
        cmocka_unit_test(test_samples_counted_across_retention),
        cmocka_unit_test(test_day_merge_damaged_page),
        cmocka_unit_test(test_damaged_pages_truncated_head_expiry),
        cmocka_unit_test(test_migrate_v11_gaps),
#ifndef _WIN32
        cmocka_unit_test(test_file_modes),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
