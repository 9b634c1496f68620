/* Tests of the Windows buffer parsers and the pool-limit rule table (source_win_parse.c).
 * Buffers are written out byte by byte from the phnt ntexapi.h layouts (see source_win.h);
 * expected values are worked out by hand in the comments. */
#include "test_util.h"

#include "sample.h"
#include "source_win.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define TiB (1024ull * GiB)

/* Little-endian writers used only for the larger buffers; the first two tests spell every
 * byte out. */
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static void assert_row(const pw_entry_t *e, const char tag[4], int pool, uint64_t allocs,
                       uint64_t frees, uint64_t diff, uint64_t bytes)
{
    assert_int_equal(e->tag_len, 4);
    assert_memory_equal(e->tag, tag, 4);
    assert_int_equal(e->pool, pool);
    assert_int_equal(e->allocs, allocs);
    assert_int_equal(e->frees, frees);
    assert_int_equal(e->diff, diff);
    assert_int_equal(e->bytes, bytes);
}

/* A session row of `session`: key = tag + session id little-endian (sample.h), written out
 * byte by byte here. */
static void assert_session_row(const pw_entry_t *e, const char tag[4], uint32_t session,
                               uint64_t allocs, uint64_t frees, uint64_t diff, uint64_t bytes)
{
    uint8_t key[8];
    memcpy(key, tag, 4);
    key[4] = (uint8_t)session;
    key[5] = (uint8_t)(session >> 8);
    key[6] = (uint8_t)(session >> 16);
    key[7] = (uint8_t)(session >> 24);
    assert_int_equal(e->tag_len, 8);
    assert_memory_equal(e->tag, key, 8);
    assert_int_equal(e->pool, PW_POOL_SESSION);
    assert_int_equal(e->allocs, allocs);
    assert_int_equal(e->frees, frees);
    assert_int_equal(e->diff, diff);
    assert_int_equal(e->bytes, bytes);
}

/* x64: ULONG Count + 4 bytes padding, then 40-byte entries. */
static void test_win_parse_x64_two_entries(void **state)
{
    (void)state;
    static const uint8_t buf[8 + 2 * 40] = {
        0x02, 0x00, 0x00, 0x00, 0xEE, 0xEE, 0xEE, 0xEE, /* Count 2, padding (ignored) */
        /* entry 0: "Ddk " nonpaged only */
        'D', 'd', 'k', ' ',                             /* Tag */
        0x00, 0x00, 0x00, 0x00,                         /* PagedAllocs 0 */
        0x00, 0x00, 0x00, 0x00,                         /* PagedFrees 0 */
        0xEE, 0xEE, 0xEE, 0xEE,                         /* padding before SIZE_T */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* PagedUsed 0 */
        0x34, 0x12, 0x00, 0x00,                         /* NonPagedAllocs 0x1234 = 4660 */
        0x00, 0x10, 0x00, 0x00,                         /* NonPagedFrees 0x1000 = 4096 */
        0x00, 0x60, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, /* NonPagedUsed 0x96000 = 614400 */
        /* entry 1: tag with NUL and 0xFF, paged only, frees > allocs, used > 2^32 */
        'A', 0x00, 0xFF, ' ',                           /* Tag, raw */
        0x05, 0x00, 0x00, 0x00,                         /* PagedAllocs 5 */
        0x07, 0x00, 0x00, 0x00,                         /* PagedFrees 7 */
        0xEE, 0xEE, 0xEE, 0xEE,                         /* padding */
        0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* PagedUsed 0x100000010 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* NonPagedAllocs 0, Frees 0 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* NonPagedUsed 0 */
    };
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 8, &s, NULL), 2);
    assert_int_equal(s.n, 2);
    assert_row(&s.entries[0], "Ddk ", PW_POOL_NONPAGED, 4660, 4096, 564, 614400);
    /* diff = 5 - 7 mod 2^32 = 4294967294 */
    assert_row(&s.entries[1], "A\0\xff ", PW_POOL_PAGED, 5, 7, 4294967294u, 4294967312ull);
    pw_sample_close(&s);
}

/* x86: ULONG Count, then 28-byte entries; values of case15 Thre and case16 File. */
static void test_win_parse_x86_both_pools(void **state)
{
    (void)state;
    static const uint8_t buf[4 + 2 * 28] = {
        0x02, 0x00, 0x00, 0x00,                         /* Count 2 */
        'T',  'h',  'r',  'e',                          /* Tag */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* PagedAllocs, PagedFrees 0 */
        0x00, 0x00, 0x00, 0x00,                         /* PagedUsed 0 */
        0x7F, 0xC0, 0x02, 0x00,                         /* NonPagedAllocs 0x2C07F = 180351 */
        0xDA, 0xB1, 0x02, 0x00,                         /* NonPagedFrees 0x2B1DA = 176602 */
        0x00, 0x1B, 0xC9, 0x00,                         /* NonPagedUsed 0xC91B00 = 13179648 */
        'F',  'i',  'l',  'e',                          /* Tag */
        0x64, 0x00, 0x00, 0x00,                         /* PagedAllocs 100 */
        0x28, 0x00, 0x00, 0x00,                         /* PagedFrees 40 */
        0xA0, 0x0F, 0x00, 0x00,                         /* PagedUsed 4000 */
        0x50, 0xCA, 0xA3, 0x02,                         /* NonPagedAllocs 0x2A3CA50 = 44288592 */
        0xE0, 0x12, 0x9A, 0x02,                         /* NonPagedFrees 0x29A12E0 = 43651808 */
        0x20, 0x2A, 0x2E, 0x0F,                         /* NonPagedUsed 0xF2E2A20 = 254683680 */
    };
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 4, &s, NULL), 3);
    assert_row(&s.entries[0], "Thre", PW_POOL_NONPAGED, 180351, 176602, 3749, 13179648);
    assert_row(&s.entries[1], "File", PW_POOL_PAGED, 100, 40, 60, 4000);
    assert_row(&s.entries[2], "File", PW_POOL_NONPAGED, 44288592, 43651808, 636784, 254683680);
    /* The same bytes read as x64 claim 2 entries of 40 bytes in 60 bytes: truncated. */
    pw_diag_t d;
    pw_sample_reset(&s);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 8, &s, &d), PW_ETRUNCATED);
    pw_sample_close(&s);
}

static void test_win_parse_zero_entries_and_bad_headers(void **state)
{
    (void)state;
    uint8_t buf[16] = {0};
    pw_sample_t s;
    pw_sample_init(&s);
    pw_diag_t d;
    assert_int_equal(pw_win_parse_pooltags(buf, 8, 8, &s, &d), 0);
    assert_int_equal(pw_win_parse_pooltags(buf, 4, 4, &s, &d), 0);
    assert_int_equal(s.n, 0);
    /* x64 header is 8 bytes: 4 are not enough even for Count 0. */
    assert_int_equal(pw_win_parse_pooltags(buf, 4, 8, &s, &d), PW_ETRUNCATED);
    assert_string_equal(d.field, "Count");
    assert_int_equal(pw_win_parse_pooltags(buf, 3, 4, &s, &d), PW_ETRUNCATED);
    assert_int_equal(pw_win_parse_pooltags(NULL, 0, 4, &s, &d), PW_ETRUNCATED);
    assert_int_equal(pw_win_parse_pooltags(buf, 8, 5, &s, &d), PW_EINVAL);
    assert_string_equal(d.field, "ptr_size");
    /* Count 0xFFFFFFFF: refused as absurd, before any size arithmetic or allocation. */
    put32(buf, 0xFFFFFFFFu);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 8, &s, &d), PW_ETOOBIG);
    assert_string_equal(d.field, "Count");
    assert_int_equal(s.n, 0);
    pw_sample_close(&s);
}

static void test_win_parse_shorter_than_count_is_truncated(void **state)
{
    (void)state;
    /* Count 3 on x64 needs 8 + 120 = 128 bytes; give 8 + 40 + 39 = 87 (one byte short of
     * two entries). */
    uint8_t buf[87];
    memset(buf, 0, sizeof(buf));
    put32(buf, 3);
    memcpy(buf + 8, "Irp ", 4);
    put32(buf + 8 + 24, 9); /* NonPagedAllocs */
    pw_sample_t s;
    pw_sample_init(&s);
    pw_diag_t d;
    pw_diag_clear(&d);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 8, &s, &d), PW_ETRUNCATED);
    assert_int_equal(d.code, PW_ETRUNCATED);
    assert_string_equal(d.field, "TagInfo");
    assert_int_equal(d.offset, 87);
    assert_non_null(strstr(d.msg, "entry 1 of 3"));
    assert_int_equal(s.n, 0); /* checked before anything is appended */
    pw_sample_close(&s);
}

/* Tags are 4 raw bytes: spaces, NUL and high bytes survive; all-zero counters give no row. */
static void test_win_parse_raw_tags_and_empty_entries(void **state)
{
    (void)state;
    static const uint8_t tags[4][4] = {{'I', 'o', ' ', ' '},
                                       {'D', 'h', ' ', '1'},
                                       {0x00, 0x00, 0x00, 0x00},
                                       {0x80, 0xFE, 'x', 0xFF}};
    uint8_t buf[4 + 5 * 28];
    memset(buf, 0, sizeof(buf));
    put32(buf, 5);
    for (int i = 0; i < 4; i++) {
        uint8_t *e = buf + 4 + i * 28;
        memcpy(e, tags[i], 4);
        put32(e + 16, (uint32_t)(10 + i)); /* NonPagedAllocs */
        put32(e + 20, 1);                  /* NonPagedFrees */
        put32(e + 24, (uint32_t)(100 * (i + 1)));
    }
    memcpy(buf + 4 + 4 * 28, "Zero", 4); /* entry 4: every counter 0 */
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_win_parse_pooltags(buf, sizeof(buf), 4, &s, NULL), 4);
    for (int i = 0; i < 4; i++)
        assert_row(&s.entries[i], (const char *)tags[i], PW_POOL_NONPAGED, 10 + i, 1, 9 + i,
                   100 * (i + 1));
    pw_sample_close(&s);
}

/* SYSTEM_SESSION_POOLTAG_INFORMATION, x64: SIZE_T NextEntryOffset, ULONG SessionId, ULONG
 * Count, entries from 16. Session 0: Gcac 4722/4666/305400 (case11); session 1: Gcac
 * 10/4/1000, "Dh 1" 37/35/224. */
static size_t build_session_x64(uint8_t *buf)
{
    memset(buf, 0, 16 + 40 + 16 + 80);
    put64(buf, 56); /* next record at 16 + 40 */
    put32(buf + 8, 0);
    put32(buf + 12, 1);
    memcpy(buf + 16, "Gcac", 4);
    put32(buf + 16 + 4, 4722);
    put32(buf + 16 + 8, 4666);
    put64(buf + 16 + 16, 305400);
    uint8_t *r = buf + 56;
    put64(r, 0);
    put32(r + 8, 1);
    put32(r + 12, 2);
    memcpy(r + 16, "Gcac", 4);
    put32(r + 16 + 4, 10);
    put32(r + 16 + 8, 4);
    put64(r + 16 + 16, 1000);
    memcpy(r + 56, "Dh 1", 4);
    put32(r + 56 + 4, 37);
    put32(r + 56 + 8, 35);
    put64(r + 56 + 16, 224);
    return 56 + 16 + 80;
}

static void test_win_parse_session_pools(void **state)
{
    (void)state;
    uint8_t buf[256];
    size_t len = build_session_x64(buf);
    pw_sample_t s;
    pw_sample_init(&s);
    /* All sessions, one row per (session, tag), in buffer order. */
    assert_int_equal(pw_win_parse_session_pooltags(buf, len, 8, -1, &s, NULL), 3);
    assert_session_row(&s.entries[0], "Gcac", 0, 4722, 4666, 56, 305400);
    assert_session_row(&s.entries[1], "Gcac", 1, 10, 4, 6, 1000);
    assert_session_row(&s.entries[2], "Dh 1", 1, 37, 35, 2, 224);
    uint32_t sid = 7;
    assert_int_equal(pw_row_split(s.entries[2].tag, 8, PW_POOL_SESSION, &sid), 4);
    assert_int_equal(sid, 1);
    pw_sample_reset(&s);
    assert_int_equal(pw_win_parse_session_pooltags(buf, len, 8, 0, &s, NULL), 1);
    assert_session_row(&s.entries[0], "Gcac", 0, 4722, 4666, 56, 305400);
    pw_sample_reset(&s);
    assert_int_equal(pw_win_parse_session_pooltags(buf, len, 8, 1, &s, NULL), 2);
    assert_session_row(&s.entries[0], "Gcac", 1, 10, 4, 6, 1000);
    pw_sample_reset(&s);
    assert_int_equal(pw_win_parse_session_pooltags(buf, 0, 8, -1, &s, NULL), 0);

    pw_diag_t d;
    assert_int_equal(pw_win_parse_session_pooltags(buf, len - 1, 8, -1, &s, &d), PW_ETRUNCATED);
    put64(buf, 8); /* NextEntryOffset inside its own header: the chain cannot advance */
    assert_int_equal(pw_win_parse_session_pooltags(buf, len, 8, -1, &s, &d), PW_EPARSE);
    assert_string_equal(d.field, "NextEntryOffset");
    assert_int_equal(d.offset, 0);
    put64(buf, 4096); /* past the end */
    assert_int_equal(pw_win_parse_session_pooltags(buf, len, 8, -1, &s, &d), PW_ETRUNCATED);
    pw_sample_close(&s);
}

/* x86 session record: ULONG NextEntryOffset, SessionId, Count, entries from 12. */
static void test_win_parse_session_x86(void **state)
{
    (void)state;
    static const uint8_t buf[12 + 28] = {
        0x00, 0x00, 0x00, 0x00, /* NextEntryOffset 0: last */
        0x03, 0x00, 0x00, 0x00, /* SessionId 3 */
        0x01, 0x00, 0x00, 0x00, /* Count 1 */
        'G',  'T',  'm',  'p',  /* Tag (case10) */
        0x52, 0x5C, 0x01, 0x00, /* PagedAllocs 0x15C52 = 89170 */
        0x52, 0x5C, 0x01, 0x00, /* PagedFrees 89170 */
        0x00, 0x00, 0x00, 0x00, /* PagedUsed 0 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_win_parse_session_pooltags(buf, sizeof(buf), 4, -1, &s, NULL), 1);
    assert_session_row(&s.entries[0], "GTmp", 3, 89170, 89170, 0, 0);
    pw_sample_reset(&s);
    assert_int_equal(pw_win_parse_session_pooltags(buf, sizeof(buf), 4, 0, &s, NULL), 0);
    pw_sample_close(&s);
}

/* SYSTEM_PERFORMANCE_INFORMATION with case02's header in 4 KB pages: Avail 96364K = 24091
 * pages, Commit 203500K = 50875, Limit 640916K = 160229, Peak 260632K = 65158, Pool N 8332K =
 * 2083, Pool P 27220K = 6805. */
static void test_win_parse_perfinfo(void **state)
{
    (void)state;
    uint8_t buf[312];
    memset(buf, 0xAB, sizeof(buf)); /* fields we do not read hold junk */
    put32(buf + 44, 24091);
    put32(buf + 48, 50875);
    put32(buf + 52, 160229);
    put32(buf + 56, 65158);
    put32(buf + 112, 6805);
    put32(buf + 116, 2083);
    pw_totals_t t;
    memset(&t, 0, sizeof(t));
    t.physical_memory_bytes = 7;
    assert_int_equal(pw_win_parse_perfinfo(buf, sizeof(buf), 4096, &t, NULL), 0);
    assert_int_equal(t.available_bytes, 96364ull * 1024);
    assert_int_equal(t.commit_bytes, 203500ull * 1024);
    assert_int_equal(t.commit_limit_bytes, 640916ull * 1024);
    assert_int_equal(t.commit_peak_bytes, 260632ull * 1024);
    assert_int_equal(t.nonpaged_bytes, 8332ull * 1024);
    assert_int_equal(t.paged_bytes, 27220ull * 1024);
    assert_int_equal(t.physical_memory_bytes, 7); /* untouched */

    pw_diag_t d;
    assert_int_equal(pw_win_parse_perfinfo(buf, 119, 4096, &t, &d), PW_ETRUNCATED);
    assert_string_equal(d.field, "NonPagedPoolPages");
    assert_int_equal(pw_win_parse_perfinfo(buf, 120, 0, &t, &d), PW_EINVAL);
}

static void test_win_totals_fallback_fills_zeros_only(void **state)
{
    (void)state;
    pw_totals_t t;
    memset(&t, 0, sizeof(t));
    t.commit_bytes = 5; /* known already: kept */
    pw_win_perf_fallback_t pi = {.commit_total = 10,
                                 .commit_limit = 20,
                                 .commit_peak = 30,
                                 .physical_total = 1000,
                                 .physical_available = 400,
                                 .kernel_paged = 100,
                                 .kernel_nonpaged = 50,
                                 .page_size = 4096};
    pw_win_totals_fallback(&pi, &t);
    assert_int_equal(t.commit_bytes, 5);
    assert_int_equal(t.paged_bytes, 409600);
    assert_int_equal(t.nonpaged_bytes, 204800);
    assert_int_equal(t.commit_limit_bytes, 81920);
    assert_int_equal(t.commit_peak_bytes, 122880);
    assert_int_equal(t.physical_memory_bytes, 4096000);
    assert_int_equal(t.available_bytes, 1638400);
}

typedef struct {
    unsigned major, minor;
    int server;
    pw_win_arch_t arch;
    int gt4;
    uint64_t ram, commit;
    uint64_t np;
    int np_src;
    uint64_t p;
    int p_src;
} limit_row_t;

static void test_win_pool_limit_table(void **state)
{
    (void)state;
    static limit_row_t rows[] = {
        /* NT4 x86: 128 MB; paged not in the table */
        {4, 0, 1, PW_WIN_ARCH_X86, 0, 512 * MiB, 0, 128 * MiB, PW_LIMIT_COMPUTED, 0,
         PW_LIMIT_UNKNOWN},
        /* 2000 x86: 256 MB whatever the RAM ("256 MB, or 128 MB with 4GT"), 128 MB with 4GT */
        {5, 0, 1, PW_WIN_ARCH_X86, 0, 2 * GiB, 0, 256 * MiB, PW_LIMIT_COMPUTED, 350 * MiB,
         PW_LIMIT_COMPUTED},
        {5, 0, 1, PW_WIN_ARCH_X86, 0, 1 * GiB, 0, 256 * MiB, PW_LIMIT_COMPUTED, 350 * MiB,
         PW_LIMIT_COMPUTED},
        {5, 0, 1, PW_WIN_ARCH_X86, 1, 4 * GiB, 0, 128 * MiB, PW_LIMIT_COMPUTED, 350 * MiB,
         PW_LIMIT_COMPUTED},
        /* XP x86: 256 MB / 490 MB */
        {5, 1, 0, PW_WIN_ARCH_X86, 0, 1 * GiB, 0, 256 * MiB, PW_LIMIT_COMPUTED, 490 * MiB,
         PW_LIMIT_COMPUTED},
        /* 2003 x86: 256 MB, 128 MB with /3GB (the Ddk story); paged 530 MB */
        {5, 2, 1, PW_WIN_ARCH_X86, 0, 4 * GiB, 0, 256 * MiB, PW_LIMIT_COMPUTED, 530 * MiB,
         PW_LIMIT_COMPUTED},
        {5, 2, 1, PW_WIN_ARCH_X86, 1, 4 * GiB, 0, 128 * MiB, PW_LIMIT_COMPUTED, 530 * MiB,
         PW_LIMIT_COMPUTED},
        /* 2003 x64 with 16 GB: "up to 128 GB depending on configuration and RAM" = 16 GB; with
         * 256 GB: 128 GB; paged 128 GB */
        {5, 2, 1, PW_WIN_ARCH_X64, 0, 16 * GiB, 0, 16 * GiB, PW_LIMIT_COMPUTED, 128 * GiB,
         PW_LIMIT_COMPUTED},
        {5, 2, 1, PW_WIN_ARCH_X64, 0, 256 * GiB, 0, 128 * GiB, PW_LIMIT_COMPUTED, 128 * GiB,
         PW_LIMIT_COMPUTED},
        /* Vista x86 with increaseuserva (3 GB user, taken when the value is not known): the
         * kernel has 4 - 3 = 1 GB of address space; RAM 4 GB: min(3 GB, 2 GB, 1 GB) = 1 GB;
         * paged 1 GB */
        {6, 0, 0, PW_WIN_ARCH_X86, 1, 4 * GiB, 0, 1 * GiB, PW_LIMIT_COMPUTED, 1 * GiB,
         PW_LIMIT_COMPUTED},
        /* 7 x64 paged: min(128 GB, commit limit 24 GB) = 24 GB */
        {6, 1, 0, PW_WIN_ARCH_X64, 0, 16 * GiB, 24 * GiB, 12 * GiB, PW_LIMIT_COMPUTED, 24 * GiB,
         PW_LIMIT_COMPUTED},
        /* Vista x86: min(75% RAM, 2 GB): 2 GB RAM -> 1.5 GB; 4 GB -> 2 GB; paged 2 GB */
        {6, 0, 0, PW_WIN_ARCH_X86, 0, 2 * GiB, 0, 1536 * MiB, PW_LIMIT_COMPUTED, 2 * GiB,
         PW_LIMIT_COMPUTED},
        {6, 1, 0, PW_WIN_ARCH_X86, 0, 4 * GiB, 0, 2 * GiB, PW_LIMIT_COMPUTED, 2 * GiB,
         PW_LIMIT_COMPUTED},
        /* Vista x64 8 GB: 40% = floor(8 GiB * 0.4) = 3435973836 */
        {6, 0, 0, PW_WIN_ARCH_X64, 0, 8 * GiB, 0, 3435973836ull, PW_LIMIT_COMPUTED, 128 * GiB,
         PW_LIMIT_COMPUTED},
        /* 2008 (6.0 server) x64 16 GB: 75% = 12 GB */
        {6, 0, 1, PW_WIN_ARCH_X64, 0, 16 * GiB, 0, 12 * GiB, PW_LIMIT_COMPUTED, 128 * GiB,
         PW_LIMIT_COMPUTED},
        /* 7 x64 with 256 GB: 75% = 192 GB, capped at 128 GB */
        {6, 1, 0, PW_WIN_ARCH_X64, 0, 256 * GiB, 0, 128 * GiB, PW_LIMIT_COMPUTED, 128 * GiB,
         PW_LIMIT_COMPUTED},
        /* 2012 x64: min(RAM, 128 GB); paged min(384 GB, commit limit) */
        {6, 2, 1, PW_WIN_ARCH_X64, 0, 64 * GiB, 80 * GiB, 64 * GiB, PW_LIMIT_COMPUTED, 80 * GiB,
         PW_LIMIT_COMPUTED},
        {6, 2, 1, PW_WIN_ARCH_X64, 0, 256 * GiB, 0, 128 * GiB, PW_LIMIT_COMPUTED, 384 * GiB,
         PW_LIMIT_COMPUTED},
        /* 2012 R2 / 10: min(RAM, 16 TB); paged 15.5 TB = 15872 GiB without a commit limit */
        {6, 3, 1, PW_WIN_ARCH_X64, 0, 32 * GiB, 0, 32 * GiB, PW_LIMIT_COMPUTED, 15872 * GiB,
         PW_LIMIT_COMPUTED},
        {10, 0, 1, PW_WIN_ARCH_X64, 0, 32 * TiB, 48 * GiB, 16 * TiB, PW_LIMIT_COMPUTED, 48 * GiB,
         PW_LIMIT_COMPUTED},
        {10, 0, 0, PW_WIN_ARCH_ARM64, 0, 16 * GiB, 0, 16 * GiB, PW_LIMIT_COMPUTED, 15872 * GiB,
         PW_LIMIT_COMPUTED},
        /* unknown versions: no rule */
        {3, 51, 1, PW_WIN_ARCH_X86, 0, 64 * MiB, 0, 0, PW_LIMIT_UNKNOWN, 0, PW_LIMIT_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const limit_row_t *r = &rows[i];
        pw_win_os_t os = {.major = r->major,
                          .minor = r->minor,
                          .server = r->server,
                          .arch = r->arch,
                          .increase_user_va = r->gt4};
        pw_pool_limit_t np, p;
        memset(&np, 0x5A, sizeof(np));
        memset(&p, 0x5A, sizeof(p));
        pw_win_pool_limits(&os, r->ram, r->commit, NULL, &np, &p);
        if (np.bytes != r->np || (int)np.source != r->np_src || p.bytes != r->p ||
            (int)p.source != r->p_src)
            fail_msg("row %zu (%u.%u): nonpaged %llu/%d (want %llu/%d), paged %llu/%d (want "
                     "%llu/%d); %s | %s",
                     i, r->major, r->minor, (unsigned long long)np.bytes, np.source,
                     (unsigned long long)r->np, r->np_src, (unsigned long long)p.bytes, p.source,
                     (unsigned long long)r->p, r->p_src, np.detail, p.detail);
        assert_non_null(memchr(np.detail, 0, sizeof(np.detail)));
        assert_non_null(memchr(p.detail, 0, sizeof(p.detail)));
    }
}

/* The Ddk story: Windows Server 2003 R2 x86 booted with /3GB has a 128 MB nonpaged pool. */
static void test_win_pool_limit_ddk_story_detail(void **state)
{
    (void)state;
    pw_win_os_t os = {.major = 5,
                      .minor = 2,
                      .build = 3790,
                      .server = 1,
                      .arch = PW_WIN_ARCH_X86,
                      .increase_user_va = 1};
    pw_pool_limit_t np, p;
    pw_win_pool_limits(&os, 4 * GiB, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 134217728);
    assert_int_equal(np.source, PW_LIMIT_COMPUTED);
    assert_string_equal(np.detail, "Windows Server 2003 x86 with /3GB: 128 MB");
    assert_string_equal(p.detail, "Windows Server 2003 x86 with /3GB: 530 MB");
}

/* Registry values are MB, 1-2048, read by the kernel on x86 from Vista SP1 (6.0.6001) on. */
static void test_win_pool_limit_overrides(void **state)
{
    (void)state;
    pw_win_os_t os = {.major = 6, .minor = 0, .build = 6001, .server = 1, .arch = PW_WIN_ARCH_X86};
    pw_pool_limit_t np, p;
    pw_win_limit_overrides_t o = {.reg_nonpaged_mb = 200, .reg_paged_mb = 300};
    pw_win_pool_limits(&os, 4 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 200 * MiB);
    assert_int_equal(np.source, PW_LIMIT_REGISTRY);
    assert_string_equal(np.detail, "registry: NonPagedPoolLimit = 200 MB");
    assert_int_equal(p.bytes, 300 * MiB);
    assert_int_equal(p.source, PW_LIMIT_REGISTRY);
    assert_string_equal(p.detail, "registry: PagedPoolLimit = 300 MB");
    /* Configuration beats the registry. */
    o.cfg_nonpaged_bytes = 1 * GiB;
    pw_win_pool_limits(&os, 4 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 1 * GiB);
    assert_int_equal(np.source, PW_LIMIT_CONFIGURED);
    assert_int_equal(p.source, PW_LIMIT_REGISTRY);
    o.cfg_nonpaged_bytes = 0;
    /* Vista RTM (6000): the kernel does not read them; the table's 75% of 2 GB = 1.5 GB. */
    os.build = 6000;
    pw_win_pool_limits(&os, 2 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 1536 * MiB);
    assert_int_equal(np.source, PW_LIMIT_COMPUTED);
    assert_int_equal(p.bytes, 2 * GiB);
    assert_int_equal(p.source, PW_LIMIT_COMPUTED);
    /* 2048 MB is the largest value taken; 2049 is ignored. */
    os.build = 7601;
    o.reg_nonpaged_mb = 2048;
    o.reg_paged_mb = 2049;
    pw_win_pool_limits(&os, 2 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 2 * GiB);
    assert_int_equal(np.source, PW_LIMIT_REGISTRY);
    assert_int_equal(p.source, PW_LIMIT_COMPUTED);
    /* x64: the values are ignored (the table's 64-bit column has no registry limit). */
    pw_win_os_t x64 = {.major = 6, .minor = 1, .build = 7601, .server = 1, .arch = PW_WIN_ARCH_X64};
    o.reg_nonpaged_mb = 200;
    o.reg_paged_mb = 300;
    pw_win_pool_limits(&x64, 16 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 12 * GiB);
    assert_int_equal(np.source, PW_LIMIT_COMPUTED);
    assert_int_equal(p.bytes, 128 * GiB);
    /* 2003 x86 (before Vista SP1): ignored too. */
    pw_win_os_t w2003 = {
        .major = 5, .minor = 2, .build = 3790, .server = 1, .arch = PW_WIN_ARCH_X86};
    pw_win_pool_limits(&w2003, 4 * GiB, 0, &o, &np, &p);
    assert_int_equal(np.bytes, 256 * MiB);
    assert_int_equal(np.source, PW_LIMIT_COMPUTED);
}

/* Kernel address space with IncreaseUserVa given: 2560 MB user leaves 1536 MB. */
static void test_win_pool_limit_user_va(void **state)
{
    (void)state;
    pw_win_os_t os;
    memset(&os, 0, sizeof(os));
    os.major = 6;
    os.minor = 1;
    os.build = 7601;
    os.arch = PW_WIN_ARCH_X86;
    pw_win_parse_boot_options(" NOEXECUTE=OPTIN  INCREASEUSERVA=2560", &os);
    assert_int_equal(os.increase_user_va, 1);
    assert_int_equal(os.user_va_mb, 2560);
    pw_pool_limit_t np, p;
    pw_win_pool_limits(&os, 4 * GiB, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 1536 * MiB); /* min(3 GB, 2 GB, 1.5 GB) */
    assert_string_equal(np.detail, "Windows 7 x86 with /3GB: kernel address space = 1536 MB");
    assert_int_equal(p.bytes, 1536 * MiB);
    /* With less RAM the 75% rule is lower: 1 GB RAM -> 768 MB. */
    pw_win_pool_limits(&os, 1 * GiB, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 768 * MiB);
    assert_string_equal(np.detail, "Windows 7 x86 with /3GB: min(75% of RAM, 2 GB) = 768 MB");
}

static void test_win_boot_options_and_arch(void **state)
{
    (void)state;
    pw_win_os_t os;
    memset(&os, 0, sizeof(os));
    pw_win_parse_boot_options(" FASTDETECT NOEXECUTE=OPTOUT", &os);
    assert_int_equal(os.increase_user_va, 0);
    pw_win_parse_boot_options(" fastdetect /3gb /userva=2900", &os); /* boot.ini, any case */
    assert_int_equal(os.increase_user_va, 1);
    assert_int_equal(os.user_va_mb, 2900);
    memset(&os, 0, sizeof(os));
    pw_win_parse_boot_options(" 3GB USERVA=5000", &os); /* out of range: not kept */
    assert_int_equal(os.increase_user_va, 1);
    assert_int_equal(os.user_va_mb, 0);
    memset(&os, 0, sizeof(os));
    pw_win_parse_boot_options("INCREASEUSERVA", &os);
    assert_int_equal(os.increase_user_va, 1);
    memset(&os, 0, sizeof(os));
    pw_win_parse_boot_options("MY3GBX NOT3GB", &os); /* whole tokens only */
    assert_int_equal(os.increase_user_va, 0);
    pw_win_parse_boot_options(NULL, &os);
    assert_int_equal(os.increase_user_va, 0);

    /* winnt.h IMAGE_FILE_MACHINE_* and PROCESSOR_ARCHITECTURE_* values. */
    assert_int_equal(pw_win_arch_from_machine(0xAA64), PW_WIN_ARCH_ARM64);
    assert_int_equal(pw_win_arch_from_machine(0x8664), PW_WIN_ARCH_X64);
    assert_int_equal(pw_win_arch_from_machine(0x014C), PW_WIN_ARCH_X86);
    assert_int_equal(pw_win_arch_from_processor(12), PW_WIN_ARCH_ARM64);
    assert_int_equal(pw_win_arch_from_processor(9), PW_WIN_ARCH_X64);
    assert_int_equal(pw_win_arch_from_processor(0), PW_WIN_ARCH_X86);
    assert_string_equal(pw_win_arch_name(PW_WIN_ARCH_ARM64), "arm64");
}

static void test_win_entry_sizes_and_names(void **state)
{
    (void)state;
    assert_int_equal(pw_win_pooltag_entry_size(8), 40);
    assert_int_equal(pw_win_pooltag_entry_size(4), 28);
    assert_int_equal(pw_win_pooltag_entry_size(2), 0);
    char n[48];
    pw_win_os_t os = {.major = 6, .minor = 1, .server = 1};
    assert_string_equal(pw_win_os_name(&os, n, sizeof(n)), "Windows Server 2008 R2");
    os.server = 0;
    assert_string_equal(pw_win_os_name(&os, n, sizeof(n)), "Windows 7");
    /* 10.0 by build number. */
    static const struct {
        int server;
        uint32_t build;
        const char *name;
    } b[] = {
        {0, 19045, "Windows 10"},
        {0, 22000, "Windows 11"},
        {0, 26100, "Windows 11"},
        {0, 0, "Windows 10/11"},
        {1, 14393, "Windows Server 2016"},
        {1, 17763, "Windows Server 2019"},
        {1, 20348, "Windows Server 2022"},
        {1, 26100, "Windows Server 2025"},
        {1, 19041, "Windows Server (build 19041)"},
        {1, 0, "Windows Server 2016+"},
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        pw_win_os_t o = {.major = 10, .minor = 0, .build = b[i].build, .server = b[i].server};
        assert_string_equal(pw_win_os_name(&o, n, sizeof(n)), b[i].name);
    }
    /* The source text says when the rule is assumed (10.0 is not in Microsoft's table). */
    pw_win_os_t w19 = {
        .major = 10, .minor = 0, .build = 17763, .server = 1, .arch = PW_WIN_ARCH_X64};
    pw_pool_limit_t np, p;
    pw_win_pool_limits(&w19, 64 * GiB, 0, NULL, &np, &p);
    assert_string_equal(np.detail, "Windows Server 2019 x64: min(RAM, 16 TB) (assumed) = 64 GB");
    assert_string_equal(p.detail, "Windows Server 2019 x64: 15.5 TB (assumed) = 15872 GB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_win_parse_x64_two_entries),
        cmocka_unit_test(test_win_parse_x86_both_pools),
        cmocka_unit_test(test_win_parse_zero_entries_and_bad_headers),
        cmocka_unit_test(test_win_parse_shorter_than_count_is_truncated),
        cmocka_unit_test(test_win_parse_raw_tags_and_empty_entries),
        cmocka_unit_test(test_win_parse_session_pools),
        cmocka_unit_test(test_win_parse_session_x86),
        cmocka_unit_test(test_win_parse_perfinfo),
        cmocka_unit_test(test_win_totals_fallback_fills_zeros_only),
        cmocka_unit_test(test_win_pool_limit_table),
        cmocka_unit_test(test_win_pool_limit_ddk_story_detail),
        cmocka_unit_test(test_win_pool_limit_overrides),
        cmocka_unit_test(test_win_pool_limit_user_va),
        cmocka_unit_test(test_win_boot_options_and_arch),
        cmocka_unit_test(test_win_entry_sizes_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
