/* Tests of the "win" source (source_win.c) itself, Windows build only, run under Wine: recorded
 * SYSTEM_POOLTAG_INFORMATION / SYSTEM_PERFORMANCE_INFORMATION buffers (x64 layout, written here
 * from the phnt layouts in source_win.h) are fed through pw_win_set_query_fn, so the real open,
 * grow-the-buffer loop, parsing, session handling and totals run. Plus what the real
 * NtQuerySystemInformation does under Wine (the class is missing: the clear error). */
#include "test_util.h"

#include <windows.h>

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

/* The fake kernel: one pool-tag buffer, a perf buffer, a session status, and call counts. */
static struct {
    uint8_t *pool;
    size_t pool_len;
    uint8_t perf[PW_WIN_PERFINFO_MIN_LEN];
    uint32_t pool_status, session_status;
    int pool_calls, session_calls, mismatches;
} k;

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
    if (cls == PW_WIN_CLASS_SESSION_POOLTAG) {
        k.session_calls++;
        *ret_len = 0;
        return k.session_status;
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

/* A refused session class (access denied) costs the session rows only. */
static void test_win_source_session_refused(void **state)
{
    (void)state;
    k.pool_len = 8 + 40;
    k.pool = calloc(1, k.pool_len);
    put32(k.pool, 1);
    put_tag(k.pool + 8, "Proc", 9, 2, 900, 0, 0, 0);
    k.session_status = ST_ACCESS_DENIED;
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    pw_source_t *src = NULL;
    pw_diag_t d;
    assert_int_equal(pw_source_open("win", &cfg, &src, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.entries[0].diff, 7);
    assert_int_equal(pw_source_sample(src, &s, &d), 0);
    assert_int_equal(k.session_calls, 1);
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
        cmocka_unit_test_setup_teardown(test_win_source_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_win_source_real_ntdll, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
