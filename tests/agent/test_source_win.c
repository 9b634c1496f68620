/* Tests of the "win" source (source_win.c) itself, Windows build only, run under Wine: recorded
 * SYSTEM_POOLTAG_INFORMATION / SYSTEM_PERFORMANCE_INFORMATION buffers (x64 layout, written here
 * from the phnt layouts in source_win.h) are fed through pw_win_set_query_fn, so the real open,
 * grow-the-buffer loop, parsing, session handling and totals run. Plus what the real
 * NtQuerySystemInformation does under Wine (the class is missing: the clear error). */
#include "test_util.h"

#include <windows.h>

#include "bigpool.h"
#include "sample.h"
#include "source.h"
#include "source_win.h"

#define ST_ACCESS_DENIED 0xC0000022u

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

/* One x64 SYSTEM_POOLTAG at p (offsets from source_win.h). */
static void put_tag(uint8_t *p, const char tag[4], uint32_t pa, uint32_t pf, uint64_t pu,
                    uint32_t na, uint32_t nf, uint64_t nu)
{
    memcpy(p, tag, 4);
    put32(p + 4, pa);
    put32(p + 8, pf);
    put64(p + 16, pu);
    put32(p + 24, na);
    put32(p + 28, nf);
    put64(p + 32, nu);
}

/* The fake kernel: one pool-tag buffer, a perf buffer, a session chain or status, and call
 * counts. */
static struct {
    uint8_t *pool;
    size_t pool_len;
    uint8_t perf[PW_WIN_PERFINFO_MIN_LEN];
    uint32_t pool_status, session_status;
    int pool_calls, session_calls, mismatches, session_mismatches;
    uint8_t *session; /* SYSTEM_SESSION_POOLTAG_INFORMATION chain served when status is 0 */
    uint8_t *bigpool; /* SYSTEM_BIGPOOL_INFORMATION served for class 66 */
    size_t bigpool_len;
    int bigpool_mismatches;
    size_t session_len;
} k;

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Class 67 as the kernel serves it (WRK base/ntos/ex/sysinfo.c): the "buffer" is the input
 * record SYSTEM_SESSION_PROCESS_INFORMATION, read here by its x64 byte offsets (phnt ntexapi.h:
 * SessionId 0, SizeOfBuf 4, Buffer 8; 16 bytes), not through the product's struct. The record
 * must be whole, ask for every session (0xFFFFFFFF, as poolmon does) and point at an 8-aligned
 * buffer; the chain goes into that buffer, up to SizeOfBuf bytes. */
static uint32_t fake_session_query(const void *in, uint32_t len, uint32_t *ret_len)
{
    k.session_calls++;
    *ret_len = 0;
    if (len < 16)
        return PW_WIN_STATUS_INFO_LENGTH_MISMATCH;
    assert_int_equal(len, 16);
    const uint8_t *rec = in;
    uint32_t session_id = get32(rec);
    uint32_t size_of_buf = get32(rec + 4);
    uint8_t *out;
    memcpy(&out, rec + 8, sizeof(out));
    assert_int_equal(session_id, 0xFFFFFFFFu);
    assert_non_null(out);
    if (((uintptr_t)out & 7u) != 0)
        return PW_WIN_STATUS_DATATYPE_MISALIGNMENT;
    if (k.session_status != 0)
        return k.session_status;
    *ret_len = (uint32_t)k.session_len;
    if (size_of_buf < k.session_len) {
        k.session_mismatches++;
        return PW_WIN_STATUS_INFO_LENGTH_MISMATCH;
    }
    memcpy(out, k.session, k.session_len);
    return 0;
}

static uint32_t fake_query(uint32_t cls, void *buf, uint32_t len, uint32_t *ret_len)
{
    if (cls == PW_WIN_CLASS_POOLTAG) {
        k.pool_calls++;
        if (k.pool_status != 0)
            return k.pool_status;
        *ret_len = (uint32_t)k.pool_len;
        if (len < k.pool_len) {
            k.mismatches++;
            return PW_WIN_STATUS_INFO_LENGTH_MISMATCH;
        }
        memcpy(buf, k.pool, k.pool_len);
        return 0;
    }
    if (cls == PW_WIN_CLASS_PERFORMANCE) {
        assert_true(len >= sizeof(k.perf));
        memcpy(buf, k.perf, sizeof(k.perf));
        *ret_len = sizeof(k.perf);
        return 0;
    }
    if (cls == PW_WIN_CLASS_SESSION_POOLTAG)
        return fake_session_query(buf, len, ret_len);
    if (cls == 66 && k.bigpool != NULL) { /* SystemBigPoolInformation */
        *ret_len = (uint32_t)k.bigpool_len;
        if (len < k.bigpool_len) {
            k.bigpool_mismatches++;
            return PW_WIN_STATUS_INFO_LENGTH_MISMATCH;
        }
        memcpy(buf, k.bigpool, k.bigpool_len);
        return 0;
    }
    fail_msg("unexpected class %u", cls);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    memset(&k, 0, sizeof(k));
    k.session_status = PW_WIN_STATUS_INVALID_INFO_CLASS;
    pw_win_set_query_fn(fake_query);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(k.pool);
    free(k.session);
    free(k.bigpool);
    pw_win_set_query_fn(NULL);
    return 0;
}

static const pw_entry_t *find(const pw_sample_t *s, const char tag[4], int pool)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].pool == pool && memcmp(s->entries[i].tag, tag, 4) == 0)
            return &s->entries[i];
    return NULL;
}

static void test_win_source_recorded_buffers(void **state)
{
    (void)state;
    k.pool_len = 8 + 2 * 40;
    k.pool = calloc(1, k.pool_len);
    put32(k.pool, 2);
    /* "Ddk ": nonpaged 4660 allocs, 4096 frees, 614400 bytes; "File": paged 100/40/8192 and
     * nonpaged 7/7/0. */
    put_tag(k.pool + 8, "Ddk ", 0, 0, 0, 4660, 4096, 614400);
    put_tag(k.pool + 48, "File", 100, 40, 8192, 7, 7, 0);
    /* Perf: CommittedPages 48 = 1000, CommitLimit 52 = 5000, PeakCommitment 56 = 1500,
     * AvailablePages 44 = 300, PagedPoolPages 112 = 25, NonPagedPoolPages 116 = 10. */
    put32(k.perf + 44, 300);
    put32(k.perf + 48, 1000);
    put32(k.perf + 52, 5000);
    put32(k.perf + 56, 1500);
    put32(k.perf + 112, 25);
    put32(k.perf + 116, 10);

    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.nonpaged_limit_bytes = 128ull << 20; /* configured: wins over registry and table */
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), 0);
    assert_int_equal(k.pool_calls, 1); /* open asks once, to fail early where it cannot */
    assert_int_equal(src->info.kind, PW_SOURCE_WINDOWS);
    assert_int_equal(src->info.counter_width, 32);
    assert_string_equal(src->info.os_family, "windows");

    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    /* Ddk nonpaged; File paged; File nonpaged (allocs and frees nonzero although bytes 0). */
    assert_int_equal(s.n, 3);
    const pw_entry_t *e = find(&s, "Ddk ", PW_POOL_NONPAGED);
    assert_non_null(e);
    assert_int_equal(e->allocs, 4660);
    assert_int_equal(e->frees, 4096);
    assert_int_equal(e->diff, 564);
    assert_int_equal(e->bytes, 614400);
    assert_null(find(&s, "Ddk ", PW_POOL_PAGED));
    e = find(&s, "File", PW_POOL_PAGED);
    assert_non_null(e);
    assert_int_equal(e->allocs, 100);
    assert_int_equal(e->diff, 60);
    assert_int_equal(e->bytes, 8192);
    e = find(&s, "File", PW_POOL_NONPAGED);
    assert_non_null(e);
    assert_int_equal(e->diff, 0);

    SYSTEM_INFO si;
    GetSystemInfo(&si);
    uint64_t page = si.dwPageSize;
    assert_int_equal(s.totals.paged_bytes, 25 * page);
    assert_int_equal(s.totals.nonpaged_bytes, 10 * page);
    assert_int_equal(s.totals.commit_bytes, 1000 * page);
    assert_int_equal(s.totals.commit_limit_bytes, 5000 * page);
    assert_int_equal(s.totals.commit_peak_bytes, 1500 * page);
    assert_int_equal(s.totals.available_bytes, 300 * page);
    assert_int_equal(s.totals.nonpaged_limit_bytes, 128ull << 20);
    assert_int_equal(src->info.nonpaged_limit.source, PW_LIMIT_CONFIGURED);
    /* The session class is missing: asked once, then never again. */
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_calls, 1);
    assert_int_equal(k.pool_calls, 3);
    pw_sample_close(&s);
    pw_source_close(src);
}

/* 2000 tags need 8 + 80000 bytes, more than the 64 KiB first buffer: the kernel answers
 * STATUS_INFO_LENGTH_MISMATCH once, the source grows the buffer and gets every row. */
static void test_win_source_grows_buffer(void **state)
{
    (void)state;
    enum { N = 2000 };
    k.pool_len = 8 + (size_t)N * 40;
    k.pool = calloc(1, k.pool_len);
    put32(k.pool, N);
    for (uint32_t i = 0; i < N; i++) {
        char tag[8];
        snprintf(tag, sizeof(tag), "%04u", i); /* "0000".."1999": 4 bytes used */
        put_tag(k.pool + 8 + (size_t)i * 40, tag, i + 1, i, 16ull * (i + 1), 0, 0, 0);
    }
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), 0);
    assert_int_equal(k.mismatches, 1);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.mismatches, 1); /* the grown buffer is kept */
    assert_int_equal(s.n, N);
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(s.entries[i].pool, PW_POOL_PAGED);
        assert_int_equal(s.entries[i].allocs, i + 1);
        assert_int_equal(s.entries[i].diff, 1);
        assert_int_equal(s.entries[i].bytes, 16ull * (i + 1));
    }
    pw_sample_close(&s);
    pw_source_close(src);
}

/* One system-wide row ("Proc" paged 9 allocs, 2 frees, 900 bytes) for the tests whose subject
 * is the session class. */
static void one_proc_row(void)
{
    k.pool_len = 8 + 40;
    k.pool = calloc(1, k.pool_len);
    put32(k.pool, 1);
    put_tag(k.pool + 8, "Proc", 9, 2, 900, 0, 0, 0);
}

/* Opens the "win" source with no configuration (asserting success) and initialises *s. */
static pw_source_t *open_win(pw_sample_t *s)
{
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), 0);
    pw_sample_init(s);
    return src;
}

/* A refused session class (access denied) costs the session rows only. */
static void test_win_source_session_refused(void **state)
{
    (void)state;
    one_proc_row();
    k.session_status = ST_ACCESS_DENIED;
    pw_sample_t s;
    pw_source_t *src = open_win(&s);
    pw_diag_t d;
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.entries[0].diff, 7);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_calls, 1);
    pw_sample_close(&s);
    pw_source_close(src);
}

/* A Remote Desktop host: the session class answers through its input record. Two sessions,
 * 1 ("Gh05" paged 30 allocs, 10 frees, 2048 bytes) and 2 ("Gh05" 5/1/512, "Usqm" 7/7/0); the
 * first buffer the source offers (64 KiB) is large enough. */
static void test_win_source_session_record(void **state)
{
    (void)state;
    one_proc_row();
    k.session_status = 0;
    k.session = calloc(1, 152);
    uint8_t *r = k.session;
    put64(r, 16 + 40); /* NextEntryOffset: the next record follows this one's one entry */
    put32(r + 8, 1);   /* SessionId */
    put32(r + 12, 1);  /* Count */
    put_tag(r + 16, "Gh05", 30, 10, 2048, 0, 0, 0);
    r += 56;
    put64(r, 0);
    put32(r + 8, 2);
    put32(r + 12, 2);
    put_tag(r + 16, "Gh05", 5, 1, 512, 0, 0, 0);
    put_tag(r + 56, "Usqm", 7, 7, 0, 0, 0, 0);
    k.session_len = 56 + 16 + 80;

    pw_sample_t s;
    pw_source_t *src = open_win(&s);
    pw_diag_t d;
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_calls, 1);
    assert_int_equal(k.session_mismatches, 0);
    const pw_entry_t *e = find(&s, "Proc", PW_POOL_PAGED);
    assert_non_null(e);
    assert_int_equal(e->diff, 7);
    /* One row per (session, tag): the key is the tag then the session id (sample.h). */
    uint32_t sid = 0;
    const pw_entry_t *g1 = NULL, *g2 = NULL, *u2 = NULL;
    for (size_t i = 0; i < s.n; i++) {
        const pw_entry_t *x = &s.entries[i];
        if (x->pool != PW_POOL_SESSION)
            continue;
        assert_int_equal(pw_row_split(x->tag, x->tag_len, x->pool, &sid), 4);
        if (memcmp(x->tag, "Gh05", 4) == 0 && sid == 1)
            g1 = x;
        else if (memcmp(x->tag, "Gh05", 4) == 0 && sid == 2)
            g2 = x;
        else if (memcmp(x->tag, "Usqm", 4) == 0 && sid == 2)
            u2 = x;
    }
    assert_non_null(g1);
    assert_int_equal(g1->allocs, 30);
    assert_int_equal(g1->frees, 10);
    assert_int_equal(g1->diff, 20);
    assert_int_equal(g1->bytes, 2048);
    assert_non_null(g2);
    assert_int_equal(g2->diff, 4);
    assert_int_equal(g2->bytes, 512);
    assert_non_null(u2);
    assert_int_equal(u2->diff, 0);
    assert_int_equal(s.n, 4);
    /* Asked again at the next sample (the class works). */
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_calls, 2);
    pw_sample_close(&s);
    pw_source_close(src);
}

/* A session chain larger than the source's first buffer (64 KiB): the kernel says how much it
 * needs, the source grows the buffer the record points at and gets every row. */
static void test_win_source_session_grows(void **state)
{
    (void)state;
    one_proc_row();
    k.session_status = 0;
    enum { N = 1700 }; /* 16 + 1700 * 40 = 68016 bytes > 65536 */
    k.session_len = 16 + (size_t)N * 40;
    k.session = calloc(1, k.session_len);
    put32(k.session + 8, 3);
    put32(k.session + 12, N);
    for (uint32_t i = 0; i < N; i++) {
        char tag[8];
        snprintf(tag, sizeof(tag), "%04u", i);
        put_tag(k.session + 16 + (size_t)i * 40, tag, 2, 1, 64, 0, 0, 0);
    }
    pw_sample_t s;
    pw_source_t *src = open_win(&s);
    pw_diag_t d;
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_mismatches, 1);
    assert_int_equal(s.n, 1 + N);
    const pw_entry_t *e = &s.entries[N]; /* the last session row: "1699" of session 3 */
    assert_int_equal(e->pool, PW_POOL_SESSION);
    assert_memory_equal(e->tag, "1699\x03\0\0\0", 8);
    assert_int_equal(e->diff, 1);
    assert_int_equal(e->bytes, 64);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_mismatches, 1); /* the grown buffer is kept */
    pw_sample_close(&s);
    pw_source_close(src);
}

/* The big-pool snapshot through the source (class 66, x64 layout of bigpool.h): 3000 entries
 * (72008 bytes, more than the first 64 KiB buffer), of which every third is "Ddk " of 12 KiB,
 * nonpaged when its index is even. By hand: 1000 Ddk blocks, 12,288,000 bytes; nonpaged are
 * the even multiples of 3 below 3000: 500 blocks, 6,144,000 bytes. */
static void test_win_source_big_pool(void **state)
{
    (void)state;
    one_proc_row();
    enum { N = 3000 };
    k.bigpool_len = 8 + (size_t)N * 24;
    k.bigpool = calloc(1, k.bigpool_len);
    put32(k.bigpool, N);
    for (uint32_t i = 0; i < N; i++) {
        uint8_t *e = k.bigpool + 8 + (size_t)i * 24;
        put64(e, 0xFFFFA00100000000ull + (uint64_t)i * 0x10000 + (i % 2 == 0 ? 1 : 0));
        put64(e + 8, i % 3 == 0 ? 12288 : 65536);
        memcpy(e + 16, i % 3 == 0 ? "Ddk " : "Other", 4);
    }
    pw_sample_t s;
    pw_source_t *src = open_win(&s);
    pw_diag_t d;
    pw_bigpool_summary_t bs;
    assert_int_equal(pw_source_big_pool(src, (const uint8_t *)"Ddk ", &bs, &d), 0);
    assert_int_equal(k.bigpool_mismatches, 1); /* grown once */
    assert_int_equal(bs.scanned, N);
    assert_int_equal(bs.count, 1000);
    assert_int_equal(bs.bytes, 12288000);
    assert_int_equal(bs.nonpaged_count, 500);
    assert_int_equal(bs.nonpaged_bytes, 6144000);
    assert_int_equal(bs.hist[1], 1000); /* 12 KiB: [8, 16 KiB) */
    pw_sample_close(&s);
    pw_source_close(src);
}

/* The class missing (what Wine answers): open fails with the clear message and the status. */
static void test_win_source_unavailable(void **state)
{
    (void)state;
    k.pool_status = PW_WIN_STATUS_INVALID_INFO_CLASS;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), PW_ENOPOOLINFO);
    assert_null(src);
    assert_non_null(strstr(d.msg, "pool tag information is not available on this system"));
    assert_non_null(strstr(d.msg, "0xC0000003"));
    /* Any other failure is an I/O error naming the status. */
    k.pool_status = ST_ACCESS_DENIED;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), PW_EIO);
    assert_non_null(strstr(d.msg, "0xC0000022"));
}

/* The real ntdll: under Wine the class is missing; on Windows it works.
 * Wine is recognised by ntdll's wine_get_version export. */
static void test_win_source_real_ntdll(void **state)
{
    (void)state;
    pw_win_set_query_fn(NULL);
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    int wine = ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    int r = pw_source_open("win", &cfg, &src, &d);
    if (wine) {
        assert_int_equal(r, PW_ENOPOOLINFO);
        assert_non_null(strstr(d.msg, "SystemPoolTagInformation"));
    } else {
        assert_int_equal(r, 0);
        pw_source_close(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_win_source_recorded_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_grows_buffer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_session_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_session_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_session_grows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_big_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_real_ntdll, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
