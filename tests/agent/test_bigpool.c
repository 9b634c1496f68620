/* test_bigpool.c: SYSTEM_BIGPOOL_INFORMATION summarised for one tag (agent/bigpool.h), on
 * buffers written here byte by byte from the published layouts (phnt ntexapi.h; Geoff Chappell's
 * bigpool.htm): x64 entries of 24 bytes from offset 8, x86 entries of 12 bytes from offset 4.
 * Expected values are the sums of the sizes written, by hand. */
#include "test_util.h"

#include "bigpool.h"
#include "source.h"

/* x64: Count 4 (+4 padding); entries
 *   0: VA 0xFFFF_A001_2345_0001 (low bit: nonpaged), 0x3000 bytes (12 KiB), "Ddk "
 *   1: VA 0xFFFF_A001_2346_0000 (paged),             0x200000 (2 MiB),       "Ddk "
 *   2: VA 0xFFFF_A001_2347_0001,                     0x1000 (4 KiB),         "Ntfx"
 *   3: VA 0xFFFF_A001_2348_0001,                     0x1000000 (16 MiB),     "Ddk " */
/* clang-format off */
static const uint8_t x64_buf[8 + 4 * 24 + 5] = {
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* Count 4, padding */
    /* entry 0 */
    0x01, 0x00, 0x45, 0x23, 0x01, 0xA0, 0xFF, 0xFF, /* VirtualAddress | 1 */
    0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* SizeInBytes 0x3000 */
    'D',  'd',  'k',  ' ',  0x00, 0x00, 0x00, 0x00, /* Tag, padding */
    /* entry 1 */
    0x00, 0x00, 0x46, 0x23, 0x01, 0xA0, 0xFF, 0xFF, /* paged */
    0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0x200000 */
    'D',  'd',  'k',  ' ',  0x00, 0x00, 0x00, 0x00,
    /* entry 2 */
    0x01, 0x00, 0x47, 0x23, 0x01, 0xA0, 0xFF, 0xFF,
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0x1000 */
    'N',  't',  'f',  'x',  0x00, 0x00, 0x00, 0x00,
    /* entry 3 */
    0x01, 0x00, 0x48, 0x23, 0x01, 0xA0, 0xFF, 0xFF,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, /* 0x1000000 */
    'D',  'd',  'k',  ' ',  0x00, 0x00, 0x00, 0x00,
    /* 5 bytes of slack after the last entry: ignored */
    0xEE, 0xEE, 0xEE, 0xEE, 0xEE,
};
/* clang-format on */

static void test_bigpool_x64(void **state)
{
    (void)state;
    pw_bigpool_summary_t s;
    pw_diag_t d;
    assert_int_equal(
        pw_bigpool_summarize(x64_buf, sizeof(x64_buf), 8, (const uint8_t *)"Ddk ", &s, &d), 0);
    assert_memory_equal(s.tag, "Ddk ", 4);
    assert_int_equal(s.scanned, 4);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.bytes, 0x3000 + 0x200000 + 0x1000000); /* 18886656 */
    assert_int_equal(s.bytes, 18886656);
    assert_int_equal(s.nonpaged_count, 2);
    assert_int_equal(s.nonpaged_bytes, 0x3000 + 0x1000000);
    assert_int_equal(s.largest_bytes, 16777216);
    assert_int_equal(s.smallest_bytes, 12288);
    /* 12 KiB -> [8, 16 KiB) bucket 1; 2 MiB -> [2, 4 MiB) bucket 9; 16 MiB -> [8 MiB, inf) 11 */
    uint64_t want[PW_BIGPOOL_BUCKETS] = {0};
    want[1] = 1;
    want[9] = 1;
    want[11] = 1;
    assert_memory_equal(s.hist, want, sizeof(want));
    /* Another tag: the 4 KiB Ntfx block alone, bucket 0. */
    assert_int_equal(
        pw_bigpool_summarize(x64_buf, sizeof(x64_buf), 8, (const uint8_t *)"Ntfx", &s, &d), 0);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.bytes, 4096);
    assert_int_equal(s.hist[0], 1);
    /* A tag not in the table. */
    assert_int_equal(
        pw_bigpool_summarize(x64_buf, sizeof(x64_buf), 8, (const uint8_t *)"None", &s, &d), 0);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.smallest_bytes, 0);
    assert_int_equal(s.scanned, 4);
}

/* x86: Count 2, entries at 4: VA 0x8A001001 (nonpaged) 0x5000 "Ddk ", VA 0xE1002000 (paged)
 * 0x10000 "Ddk ". */
static void test_bigpool_x86(void **state)
{
    (void)state;
    static const uint8_t buf[4 + 2 * 12] = {
        0x02, 0x00, 0x00, 0x00,                         /* Count */
        0x01, 0x10, 0x00, 0x8A, 0x00, 0x50, 0x00, 0x00, /* VA | 1, SizeInBytes 0x5000 */
        'D',  'd',  'k',  ' ',                          /* Tag */
        0x00, 0x20, 0x00, 0xE1, 0x00, 0x00, 0x01, 0x00, /* VA, 0x10000 */
        'D',  'd',  'k',  ' ',
    };
    pw_bigpool_summary_t s;
    assert_int_equal(pw_bigpool_summarize(buf, sizeof(buf), 4, (const uint8_t *)"Ddk ", &s, NULL),
                     0);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.bytes, 20480 + 65536);
    assert_int_equal(s.nonpaged_count, 1);
    assert_int_equal(s.nonpaged_bytes, 20480);
    assert_int_equal(s.hist[2], 1); /* 20 KiB: [16, 32 KiB) */
    assert_int_equal(s.hist[4], 1); /* 64 KiB: [64, 128 KiB) */
    /* The x86 buffer read as x64 does not fit: Count 2 * 24 + 8 > 28. */
    pw_diag_t d;
    assert_int_equal(pw_bigpool_summarize(buf, sizeof(buf), 8, (const uint8_t *)"Ddk ", &s, &d),
                     PW_ETRUNCATED);
    assert_string_equal(d.field, "AllocatedInfo");
}

static void test_bigpool_bad_buffers(void **state)
{
    (void)state;
    pw_bigpool_summary_t s;
    pw_diag_t d;
    assert_int_equal(pw_bigpool_summarize(x64_buf, 7, 8, (const uint8_t *)"Ddk ", &s, &d),
                     PW_ETRUNCATED);
    assert_string_equal(d.field, "Count");
    /* One byte short of the 4th entry. */
    assert_int_equal(
        pw_bigpool_summarize(x64_buf, 8 + 4 * 24 - 1, 8, (const uint8_t *)"Ddk ", &s, &d),
        PW_ETRUNCATED);
    assert_non_null(strstr(d.msg, "ends inside entry 3 of 4"));
    uint8_t huge[8] = {0x01, 0x00, 0x00, 0x01}; /* Count 2^24 + 1 */
    assert_int_equal(pw_bigpool_summarize(huge, sizeof(huge), 8, (const uint8_t *)"Ddk ", &s, &d),
                     PW_ETOOBIG);
    assert_int_equal(pw_bigpool_summarize(huge, sizeof(huge), 2, (const uint8_t *)"Ddk ", &s, &d),
                     PW_EINVAL);
    uint8_t empty[8] = {0};
    assert_int_equal(pw_bigpool_summarize(empty, sizeof(empty), 8, (const uint8_t *)"Ddk ", &s, &d),
                     0);
    assert_int_equal(s.scanned, 0);
}

static void test_bigpool_buckets(void **state)
{
    (void)state;
    assert_int_equal(pw_bigpool_bucket(0), 0);
    assert_int_equal(pw_bigpool_bucket(8191), 0);
    assert_int_equal(pw_bigpool_bucket(8192), 1);
    assert_int_equal(pw_bigpool_bucket(16383), 1);
    assert_int_equal(pw_bigpool_bucket(16384), 2);
    assert_int_equal(pw_bigpool_bucket(8388607), 10); /* just under 8 MiB */
    assert_int_equal(pw_bigpool_bucket(8388608), 11);
    assert_int_equal(pw_bigpool_bucket(UINT64_MAX), 11);
    assert_int_equal(pw_bigpool_bucket_floor(0), 0);
    assert_int_equal(pw_bigpool_bucket_floor(1), 8192);
    assert_int_equal(pw_bigpool_bucket_floor(11), 8388608);
    for (unsigned b = 1; b < PW_BIGPOOL_BUCKETS; b++)
        assert_int_equal(pw_bigpool_bucket(pw_bigpool_bucket_floor(b)), b);
    assert_int_equal(pw_bigpool_entry_size(8), 24);
    assert_int_equal(pw_bigpool_entry_size(4), 12);
}

/* Sources without a big-pool table say so (the agent's answer to the command). */
static void test_bigpool_not_on_other_sources(void **state)
{
    (void)state;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    char spec[600];
    snprintf(spec, sizeof(spec), "replay:%s",
             pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"));
    assert_int_equal(pw_source_open(spec, &cfg, &src, &d), 0);
    pw_bigpool_summary_t s;
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"Ddk ", &s, &d), PW_ENOTSUP);
    assert_string_equal(d.msg, "source 'replay' has no big-pool table (Windows hosts only)");
    pw_source_close(src);
}

/* The simulated host's table (pw_sim_big_pool): ddk-2003 (x86, 12-byte entries) has Mmcm flat
 * at 8 MiB of 4096-byte nonpaged blocks (agent/source_sim.c's preset): 2048 blocks, every one in
 * [0, 8 KiB); Ddk's 512-byte blocks are not big-pool blocks. The table's size is checked
 * against the first sample by a second method: every outstanding allocation of a row whose
 * allocations (bytes / diff) are larger than 4088 bytes. */
static uint64_t big_entries(const pw_sample_t *t, uint64_t min_size)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const pw_entry_t *e = &t->entries[i];
        if (e->diff > 0 && e->bytes / e->diff > min_size)
            n += e->diff;
    }
    return n;
}

static void test_bigpool_sim(void **state)
{
    (void)state;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("sim:ddk-2003/0", &cfg, &src, &d), 0);
    pw_bigpool_summary_t s;
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"Mmcm", &s, &d), 0);
    assert_int_equal(s.count, 2048);
    assert_int_equal(s.bytes, 8388608);
    assert_int_equal(s.nonpaged_count, 2048);
    assert_int_equal(s.nonpaged_bytes, 8388608);
    assert_int_equal(s.largest_bytes, 4096);
    assert_int_equal(s.smallest_bytes, 4096);
    assert_int_equal(s.hist[0], 2048);
    uint64_t scanned = s.scanned;
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"Ddk ", &s, &d), 0);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.bytes, 0);
    assert_int_equal(s.scanned, scanned);
    pw_sample_t t;
    pw_sample_init(&t);
    assert_int_equal(pw_source_sample(src, &t, &d), 0);
    assert_int_equal(scanned, big_entries(&t, 4088));
    pw_source_close(src);

    /* fleet-small (x64, 24-byte entries): ConT's allocations of 62166 bytes (case15) are all in
     * [32, 64 KiB); NtFC's 256-byte blocks are none. Counted against the first sample's row. */
    assert_int_equal(pw_source_open("sim:fleet-small/3", &cfg, &src, &d), 0);
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"ConT", &s, &d), 0);
    pw_bigpool_summary_t ntfc;
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"NtFC", &ntfc, &d), 0);
    assert_int_equal(pw_source_sample(src, &t, &d), 0);
    const pw_entry_t *cont = NULL;
    for (size_t i = 0; i < t.n; i++)
        if (memcmp(t.entries[i].tag, "ConT", 4) == 0)
            cont = &t.entries[i];
    assert_non_null(cont);
    assert_true(cont->diff > 0);
    assert_int_equal(s.count, cont->diff);
    assert_int_equal(s.bytes, cont->diff * 62166);
    assert_int_equal(s.nonpaged_count, cont->diff);
    assert_int_equal(s.largest_bytes, 62166);
    assert_int_equal(s.smallest_bytes, 62166);
    assert_int_equal(s.hist[3], cont->diff);
    assert_int_equal(s.scanned, big_entries(&t, 4080));
    assert_int_equal(ntfc.count, 0);
    assert_int_equal(ntfc.scanned, s.scanned);
    pw_sample_close(&t);
    pw_source_close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bigpool_x64),
        cmocka_unit_test(test_bigpool_x86),
        cmocka_unit_test(test_bigpool_bad_buffers),
        cmocka_unit_test(test_bigpool_buckets),
        cmocka_unit_test(test_bigpool_not_on_other_sources),
        cmocka_unit_test(test_bigpool_sim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
