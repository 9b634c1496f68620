/* bench_codec.c: wire cost and speed of the keyframe/delta codec.
 *
 * A 3,000-tag Windows-like table (counters with the magnitudes seen in the captures of
 * tests/fixtures/poolmon: allocs 10^2..10^7, outstanding 1..10^4, 16..4096 bytes per
 * allocation), 5 % of the tags changing per sample, seeded. Prints:
 *   codec.keyframe_bytes_per_tag            periodic keyframe (dictionary already sent)
 *   codec.keyframe_with_dict_bytes_per_tag  first keyframe of a connection
 *   codec.delta_bytes_per_tag               delta size / tags in the table
 *   codec.encode_decode_us                  encode + frame + unpack + apply, per sample
 *   codec.prometheus_text_bytes_per_tag     the collector's whole GET /metrics body as
 *                                           pw_api_metrics (collector/api/metrics_prom.c)
 *                                           writes it for one host whose table is this
 *                                           sample (made through ingest: an agent's Hello and
 *                                           keyframe into pw_ingest_frame, as the collector
 *                                           test double does), divided by the 3,000 tags of
 *                                           the host's table. /metrics does not hold every
 *                                           tag: per host its 9 host series and the 20 (tag,
 *                                           pool) rows with the most bytes as
 *                                           poolwatch_tag_bytes and poolwatch_tag_allocations
 *                                           (40 series), plus the collector's self-metrics;
 *                                           the full table is in the API. So this is what a
 *                                           scrape costs per tag of the host, not a tag's
 *                                           series size.
 *   codec.prometheus_text_gzip_bytes_per_tag  the same body gzip'ed by zlib's deflate at the
 *                                           default level, as a client sending
 *                                           Accept-Encoding: gzip would get it
 *   codec.alt_submsg_*                      the same rows as repeated sub-messages, sized with
 *                                           protobuf's encoding rules: the layout not chosen
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "delta.h"
#include "frame.h"
#ifdef PW_BENCH_METRICS
#include <zlib.h>

#include "../collector/double.h" /* the collector test double */
#endif

#define TAGS      3000
#define SAMPLES   2000
#define CHURN_PCT 5

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Log-uniform integer in [lo, hi]. */
static uint64_t logu(double lo, double hi)
{
    double u = (double)(rnd() >> 11) / (double)(1ull << 53);
    return (uint64_t)exp(log(lo) + u * (log(hi) - log(lo)));
}

typedef struct {
    char tag[4];
    uint8_t pool;
    uint64_t allocs, frees, per_alloc;
} row_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint64_t zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Size of a message of rows as `repeated Row { uint32 key_gap=1; uint64 allocs=2;
 * uint64 diff=3; uint64 bytes=4; }`, each field with a 1-byte tag, zero fields omitted. */
static size_t submsg_rows_size(const Poolwatch__V1__Rows *r)
{
    size_t total = 0;
    for (size_t i = 0; r && i < r->n_key_gap; i++) {
        size_t in = 0;
        uint64_t f[4] = {r->key_gap[i], r->n_allocs ? r->allocs[i] : 0, r->diff[i], r->bytes[i]};
        for (int k = 0; k < 4; k++)
            if (f[k])
                in += 1 + varint_len(f[k]);
        total += 1 + varint_len(in) + in;
    }
    return total;
}

static size_t submsg_changes_size(const Poolwatch__V1__Changes *c)
{
    size_t total = 0;
    for (size_t i = 0; c && i < c->n_key_gap; i++) {
        size_t in = 1 + varint_len(c->key_gap[i]);
        int64_t f[3] = {c->n_d_allocs ? c->d_allocs[i] : 0, c->d_diff[i], c->d_bytes[i]};
        for (int k = 0; k < 3; k++)
            if (f[k])
                in += 1 + varint_len(zz(f[k]));
        total += 1 + varint_len(in) + in;
    }
    return total;
}

#ifdef PW_BENCH_METRICS
/* Bytes of the collector's /metrics body for one streaming host whose table is `s`, plain
 * and gzip'ed ([0], [1]). */
static void metrics_bytes(const pw_sample_t *s, double out[2])
{
    pw_double_t dbl;
    pw_delta_enc_t enc;
    pw_buf_t body;
    pw_buf_init(&body, 64u << 20);
    if (pw_double_open(&dbl) != 0 || pw_delta_enc_init(&enc, 32) != 0) {
        fprintf(stderr, "bench_codec: collector double\n");
        exit(1);
    }
    pw_host_t *h = pw_double_stream(&dbl, "HOST01", 32, 1);
    int r = h != NULL ? pw_double_send(&dbl, &enc, h, s) : PW_ENOMEM;
    if (r != 0 || pw_host_nrows(h) != s->n || pw_api_metrics(&dbl.api, &body) != 0) {
        fprintf(stderr, "bench_codec: /metrics of the host: %s\n", pw_strerror(r));
        exit(1);
    }
    z_stream z;
    memset(&z, 0, sizeof(z));
    uLong cap = compressBound((uLong)body.len) + 32;
    uint8_t *gz = malloc(cap);
    if (gz == NULL || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                                   Z_DEFAULT_STRATEGY) != Z_OK) {
        fprintf(stderr, "bench_codec: deflateInit2\n");
        exit(1);
    }
    z.next_in = body.data;
    z.avail_in = (uInt)body.len;
    z.next_out = gz;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
        fprintf(stderr, "bench_codec: deflate\n");
        exit(1);
    }
    out[0] = (double)body.len;
    out[1] = (double)z.total_out;
    printf("CHECK codec.metrics_body_bytes %zu B plain, %lu B gzip, for %zu rows\n", body.len,
           (unsigned long)z.total_out, pw_host_nrows(h));
    deflateEnd(&z);
    free(gz);
    pw_buf_close(&body);
    pw_delta_enc_close(&enc);
    pw_double_close(&dbl);
}
#endif

int main(void)
{
    static row_t rows[TAGS];
    for (int i = 0; i < TAGS; i++) {
        snprintf(rows[i].tag, sizeof(rows[i].tag), "%03X", i); /* 3 chars + pad */
        rows[i].tag[3] = (char)('A' + i % 26);
        rows[i].pool = (uint8_t)(rnd() % 100 < 60 ? PW_POOL_NONPAGED : PW_POOL_PAGED);
        rows[i].allocs = logu(100, 1e7);
        uint64_t out = logu(1, 1e4);
        if (out > rows[i].allocs)
            out = rows[i].allocs;
        rows[i].frees = rows[i].allocs - out;
        rows[i].per_alloc = logu(16, 4096);
    }
    pw_delta_enc_t enc;
    pw_delta_dec_t dec;
    pw_delta_enc_init(&enc, 32);
    pw_delta_dec_init(&dec, 32, 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_buf_t wire;
    pw_buf_init(&wire, 64u << 20);
    double t_total = 0, kf_bytes = 0, kf_dict_bytes = 0, delta_bytes = 0, prom_bytes[2] = {0, 0};
    double alt_kf = 0, alt_delta = 0;
    int n_delta = 0, n_kf = 0;
    for (int k = 0; k < SAMPLES; k++) {
        if (k > 0)
            for (int i = 0; i < TAGS; i++)
                if (rnd() % 100 < CHURN_PCT) {
                    uint64_t a = 1 + rnd() % 500, f = rnd() % (a + 20);
                    rows[i].allocs = (rows[i].allocs + a) & 0xFFFFFFFFull;
                    rows[i].frees = (rows[i].frees + f) & 0xFFFFFFFFull;
                }
        pw_sample_reset(&s);
        s.seq = (uint64_t)k + 1;
        s.timestamp_ms = 1764400000000ull + (uint64_t)k * 10000;
        s.totals.nonpaged_bytes = 30u << 20;
        for (int i = 0; i < TAGS; i++) {
            uint64_t diff = (rows[i].allocs - rows[i].frees) & 0xFFFFFFFFull;
            pw_sample_add(&s, rows[i].tag, 4, (pw_pool_t)rows[i].pool, rows[i].allocs,
                          rows[i].frees, diff, diff * rows[i].per_alloc);
        }
        /* Sample 0: connect keyframe with dictionary; 1000: periodic keyframe; else deltas. */
        unsigned flags = k == 1000 ? PW_DELTA_KEYFRAME : 0;
        double t0 = now_us();
        const Poolwatch__V1__Sample *msg;
        if (pw_delta_encode(&enc, &s, flags, &msg, NULL) != 0)
            return 1;
        pw_buf_reset(&wire);
        if (pw_codec_pack_sample(msg, 64u << 20, &wire) != 0)
            return 1;
        const uint8_t *p;
        size_t plen;
        pw_frame_parse(wire.data, wire.len, 64u << 20, &p, &plen, NULL);
        Poolwatch__V1__Envelope *env;
        if (pw_codec_unpack(p, plen, &env, NULL) != 0 ||
            pw_delta_apply(&dec, env->sample, NULL, NULL) != 0)
            return 1;
        pw_codec_free(env);
        double t1 = now_us();
        if (k == 0) {
            kf_dict_bytes = (double)wire.len;
        } else if (k == 1000) {
            kf_bytes = (double)wire.len;
            alt_kf = (double)(wire.len - poolwatch__v1__rows__get_packed_size(msg->rows) +
                              submsg_rows_size(msg->rows));
            n_kf++;
        } else {
            delta_bytes += (double)wire.len;
            size_t alt = wire.len;
            if (msg->changes)
                alt = alt - poolwatch__v1__changes__get_packed_size(msg->changes) +
                      submsg_changes_size(msg->changes);
            alt_delta += (double)alt;
            n_delta++;
            t_total += t1 - t0;
        }
#ifdef PW_BENCH_METRICS
        if (k == 1000)
            metrics_bytes(&s, prom_bytes);
#endif
    }
    printf("BENCH codec.keyframe_bytes_per_tag %.2f B\n", kf_bytes / TAGS);
    printf("BENCH codec.keyframe_with_dict_bytes_per_tag %.2f B\n", kf_dict_bytes / TAGS);
    printf("BENCH codec.delta_bytes_per_tag %.3f B\n", delta_bytes / n_delta / TAGS);
    printf("BENCH codec.encode_decode_us %.1f us\n", t_total / n_delta);
#ifdef PW_BENCH_METRICS
    printf("BENCH codec.prometheus_text_bytes_per_tag %.2f B\n", prom_bytes[0] / TAGS);
    printf("BENCH codec.prometheus_text_gzip_bytes_per_tag %.2f B\n", prom_bytes[1] / TAGS);
#endif
    printf("BENCH codec.alt_submsg_keyframe_bytes_per_tag %.2f B\n", alt_kf / TAGS);
    printf("BENCH codec.alt_submsg_delta_bytes_per_tag %.3f B\n", alt_delta / n_delta / TAGS);
    pw_buf_close(&wire);
    pw_sample_close(&s);
    pw_delta_enc_close(&enc);
    pw_delta_dec_close(&dec);
    return 0;
}
