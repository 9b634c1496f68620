/* test_frame.c: 4-byte big-endian framing, incremental reader, limits. */
#include "test_util.h"
#include "frame.h"

/* Builds `n` frames with payload sizes 1..n*37 and known bytes. */
static size_t build_stream(uint8_t *out, int n, size_t *sizes)
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t len = 1 + (size_t)(i * 37) % 301;
        sizes[i] = len;
        pw_frame_put_header(out + o, (uint32_t)len);
        o += PW_FRAME_HEADER;
        for (size_t k = 0; k < len; k++)
            out[o++] = (uint8_t)(i * 7 + k);
    }
    return o;
}

static void check_frame(int i, const uint8_t *p, size_t len, const size_t *sizes)
{
    assert_int_equal(len, sizes[i]);
    for (size_t k = 0; k < len; k++)
        assert_int_equal(p[k], (uint8_t)(i * 7 + k));
}

static void test_frame_header_is_big_endian(void **state)
{
    (void)state;
    uint8_t h[4];
    pw_frame_put_header(h, 0x01020304);
    assert_int_equal(h[0], 1);
    assert_int_equal(h[3], 4);
    const uint8_t *p;
    size_t len;
    uint8_t f[] = {0, 0, 0, 2, 'h', 'i', 'X'};
    assert_int_equal(pw_frame_parse(f, sizeof(f), 100, &p, &len, NULL), 6);
    assert_int_equal(len, 2);
    assert_memory_equal(p, "hi", 2);
    /* half a header, and a header without its whole payload: need more */
    assert_int_equal(pw_frame_parse(f, 3, 100, &p, &len, NULL), 0);
    assert_int_equal(pw_frame_parse(f, 5, 100, &p, &len, NULL), 0);
}

static void test_frame_every_split_point_yields_same_frames(void **state)
{
    (void)state;
    enum { N = 40 };
    static uint8_t stream[N * (PW_FRAME_HEADER + 301)];
    size_t sizes[N];
    size_t total = build_stream(stream, N, sizes);
    for (size_t split = 0; split <= total; split++) {
        pw_frame_reader_t r;
        pw_frame_reader_init(&r, 1024);
        int got = 0;
        const uint8_t *p;
        size_t len;
        assert_int_equal(pw_frame_reader_feed(&r, stream, split, NULL), 0);
        while (pw_frame_reader_next(&r, &p, &len, NULL) == 1)
            check_frame(got++, p, len, sizes);
        assert_int_equal(pw_frame_reader_feed(&r, stream + split, total - split, NULL), 0);
        while (pw_frame_reader_next(&r, &p, &len, NULL) == 1)
            check_frame(got++, p, len, sizes);
        assert_int_equal(got, N);
        assert_int_equal(pw_frame_reader_pending(&r), 0);
        pw_frame_reader_close(&r);
    }
    /* And byte by byte. */
    pw_frame_reader_t r;
    pw_frame_reader_init(&r, 1024);
    int got = 0;
    for (size_t i = 0; i < total; i++) {
        const uint8_t *p;
        size_t len;
        assert_int_equal(pw_frame_reader_feed(&r, stream + i, 1, NULL), 0);
        while (pw_frame_reader_next(&r, &p, &len, NULL) == 1)
            check_frame(got++, p, len, sizes);
    }
    assert_int_equal(got, N);
    pw_frame_reader_close(&r);
}

static void test_frame_oversized_rejected_before_buffering(void **state)
{
    (void)state;
    pw_frame_reader_t r;
    pw_frame_reader_init(&r, 1000);
    uint8_t ok[] = {0, 0, 0, 1, 'a'};
    uint8_t big[] = {0, 0, 0x03, 0xE9}; /* 1001 > 1000 */
    pw_diag_t d;
    assert_int_equal(pw_frame_reader_feed(&r, ok, sizeof(ok), &d), 0);
    /* Half of the oversized header: not known yet. */
    assert_int_equal(pw_frame_reader_feed(&r, big, 2, &d), 0);
    assert_int_equal(pw_frame_reader_feed(&r, big + 2, 2, &d), PW_EFRAMETOOBIG);
    assert_int_equal(d.offset, 5); /* the header starts after the first frame */
    assert_string_equal(d.field, "length");
    /* Sticky: the frame before it is still buffered, nothing more is accepted. */
    const uint8_t *p;
    size_t len;
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), PW_EFRAMETOOBIG);
    assert_int_equal(pw_frame_reader_feed(&r, ok, sizeof(ok), NULL), PW_EFRAMETOOBIG);
    pw_frame_reader_close(&r);

    /* A 4 GiB announcement is refused without allocating it. */
    pw_frame_reader_init(&r, 0);
    uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3};
    assert_int_equal(pw_frame_reader_feed(&r, huge, sizeof(huge), &d), PW_EFRAMETOOBIG);
    assert_true(r.buf.cap == 0);
    pw_frame_reader_close(&r);
}

static void test_frame_zero_length_and_truncation(void **state)
{
    (void)state;
    pw_frame_reader_t r;
    pw_frame_reader_init(&r, 100);
    uint8_t zero[] = {0, 0, 0, 0};
    assert_int_equal(pw_frame_reader_feed(&r, zero, 4, NULL), PW_EBADFRAME);
    pw_frame_reader_close(&r);
    /* A truncated frame stays pending: no frame, no error, until the stream closes. */
    pw_frame_reader_init(&r, 100);
    uint8_t part[] = {0, 0, 0, 10, 1, 2, 3};
    const uint8_t *p;
    size_t len;
    assert_int_equal(pw_frame_reader_feed(&r, part, sizeof(part), NULL), 0);
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 0);
    assert_int_equal(pw_frame_reader_pending(&r), 7);
    pw_frame_reader_close(&r);
}

static void test_frame_lowered_ceiling_before_auth(void **state)
{
    (void)state;
    pw_frame_reader_t r;
    pw_frame_reader_init(&r, 0);
    pw_frame_reader_set_max(&r, 64); /* before the Hello is verified */
    uint8_t hdr[4];
    pw_frame_put_header(hdr, 65);
    assert_int_equal(pw_frame_reader_feed(&r, hdr, 4, NULL), PW_EFRAMETOOBIG);
    pw_frame_reader_close(&r);
}

static void test_frame_reader_gives_back_a_big_empty_buffer(void **state)
{
    (void)state;
    pw_frame_reader_t r;
    pw_frame_reader_init(&r, 0);
    /* A 60,000-byte frame (a keyframe) arrives in 16 KB reads, as TLS hands them out. */
    enum { BIG = 60000 };
    static uint8_t big[PW_FRAME_HEADER + BIG];
    pw_frame_put_header(big, BIG);
    for (size_t k = 0; k < BIG; k++)
        big[PW_FRAME_HEADER + k] = (uint8_t)(k * 13);
    for (size_t off = 0; off < sizeof(big); off += 16384) {
        size_t n = sizeof(big) - off < 16384 ? sizeof(big) - off : 16384;
        assert_int_equal(pw_frame_reader_feed(&r, big + off, n, NULL), 0);
    }
    const uint8_t *p;
    size_t len;
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 1);
    assert_int_equal(len, BIG);
    assert_int_equal(p[BIG - 1], (uint8_t)((BIG - 1) * 13));
    assert_true(r.buf.cap >= sizeof(big));
    /* The next delta (300 bytes) finds the buffer empty: the big one is freed first. */
    uint8_t small[PW_FRAME_HEADER + 300];
    pw_frame_put_header(small, 300);
    for (size_t k = 0; k < 300; k++)
        small[PW_FRAME_HEADER + k] = (uint8_t)(k + 1);
    assert_int_equal(pw_frame_reader_feed(&r, small, sizeof(small), NULL), 0);
    assert_true(r.buf.cap <= PW_FRAME_READER_KEEP);
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 1);
    assert_int_equal(len, 300);
    assert_int_equal(p[0], 1);
    assert_int_equal(p[299], (uint8_t)300);
    /* Half a frame stays buffered across feeds whatever the size. */
    assert_int_equal(pw_frame_reader_feed(&r, big, 20000, NULL), 0);
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 0);
    assert_int_equal(pw_frame_reader_feed(&r, big + 20000, sizeof(big) - 20000, NULL), 0);
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 1);
    assert_int_equal(len, BIG);
    assert_int_equal(p[12345], (uint8_t)(12345 * 13));
    assert_int_equal(pw_frame_reader_next(&r, &p, &len, NULL), 0);
    pw_frame_reader_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_header_is_big_endian),
        cmocka_unit_test(test_frame_every_split_point_yields_same_frames),
        cmocka_unit_test(test_frame_oversized_rejected_before_buffering),
        cmocka_unit_test(test_frame_zero_length_and_truncation),
        cmocka_unit_test(test_frame_lowered_ceiling_before_auth),
        cmocka_unit_test(test_frame_reader_gives_back_a_big_empty_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
