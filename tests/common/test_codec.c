/* test_codec.c: Envelope pack/unpack, garbage, allocation caps. */
#include "test_util.h"
#include "codec.h"
#include "frame.h"

static void test_codec_hello_roundtrip(void **state)
{
    (void)state;
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.host_name = "HOST01";
    h.os_family = "windows";
    h.os_version = "5.2";
    h.arch = "x86";
    h.counter_width = 32;
    h.physical_memory_bytes = 4ull << 30;
    Poolwatch__V1__PoolLimit lim = POOLWATCH__V1__POOL_LIMIT__INIT;
    lim.bytes = 128ull << 20;
    lim.source = POOLWATCH__V1__LIMIT_SOURCE__LIMIT_COMPUTED;
    lim.detail = "Windows Server 2003 x86 with /3GB";
    h.nonpaged_limit = &lim;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_HELLO;
    env.hello = &h;
    pw_buf_t b;
    pw_buf_init(&b, 1 << 20);
    assert_int_equal(pw_codec_pack_frame(&env, 1 << 20, &b), 0);
    const uint8_t *p;
    size_t len;
    assert_int_equal(pw_frame_parse(b.data, b.len, 1 << 20, &p, &len, NULL), (int64_t)b.len);
    Poolwatch__V1__Envelope *out;
    assert_int_equal(pw_codec_unpack(p, len, &out, NULL), 0);
    assert_string_equal(pw_codec_msg_name(out), "hello");
    assert_string_equal(out->hello->host_name, "HOST01");
    assert_int_equal(out->hello->nonpaged_limit->bytes, 128ull << 20);
    assert_string_equal(out->hello->nonpaged_limit->detail, "Windows Server 2003 x86 with /3GB");
    pw_codec_free(out);
    /* Too big for the ceiling: refused, buffer unchanged. */
    size_t before = b.len;
    assert_int_equal(pw_codec_pack_frame(&env, 10, &b), PW_EFRAMETOOBIG);
    assert_int_equal(b.len, before);
    pw_buf_close(&b);
}

static void test_codec_rejects_garbage_and_empty(void **state)
{
    (void)state;
    Poolwatch__V1__Envelope *out = NULL;
    pw_diag_t d;
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(pw_codec_unpack(garbage, sizeof(garbage), &out, &d), PW_EBADFRAME);
    assert_null(out);
    assert_string_equal(d.field, "envelope");
    /* A valid but empty Envelope: no message set. */
    const uint8_t empty_field[] = {0x78, 0x01}; /* unknown field 15, varint 1 */
    assert_int_equal(pw_codec_unpack(empty_field, sizeof(empty_field), &out, &d), PW_EBADFRAME);
    assert_non_null(strstr(d.msg, "no message"));
    /* Truncated sample: field 2 (sample) length 50 with 3 bytes. */
    const uint8_t trunc[] = {0x12, 50, 0x08, 0x01, 0x10};
    assert_int_equal(pw_codec_unpack(trunc, sizeof(trunc), &out, &d), PW_EBADFRAME);
}

/* An Envelope{sample{dict: n empty TagDefs}}: 2 bytes each on the wire. */
static size_t build_many_defs(uint8_t *buf, int n)
{
    size_t o = 0;
    size_t inner = 2 * (size_t)n;
    buf[o++] = 0x12; /* Envelope.sample, length-delimited */
    /* varint length of inner */
    size_t v = inner;
    while (v >= 0x80) {
        buf[o++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    buf[o++] = (uint8_t)v;
    for (int i = 0; i < n; i++) {
        buf[o++] = 0x32; /* Sample.dict (field 6), length 0 */
        buf[o++] = 0x00;
    }
    return o;
}

static void test_codec_allocation_is_capped(void **state)
{
    (void)state;
    /* Each 2-byte empty TagDef becomes a struct and a pointer in memory (> 32x its wire
     * size), so a message made of them is the cheapest way to ask for memory. A few hundred
     * fit under the 64 KiB constant; thousands pass the cap and are refused. */
    static uint8_t buf[8 + 2 * 20000];
    Poolwatch__V1__Envelope *out = NULL;
    pw_diag_t d;
    size_t o = build_many_defs(buf, 200);
    assert_int_equal(pw_codec_unpack(buf, o, &out, &d), 0);
    assert_int_equal(out->sample->n_dict, 200);
    pw_codec_free(out);
    out = NULL;
    o = build_many_defs(buf, 20000);
    assert_int_equal(pw_codec_unpack(buf, o, &out, &d), PW_ETOOBIG);
    assert_null(out);
    assert_non_null(strstr(d.msg, "would allocate more than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_hello_roundtrip),
        cmocka_unit_test(test_codec_rejects_garbage_and_empty),
        cmocka_unit_test(test_codec_allocation_is_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
