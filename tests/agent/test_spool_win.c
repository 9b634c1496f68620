/* Tests of the spool's Windows file layer (spool_win.c), Windows build only, run under Wine:
 * wide "\\?\" paths from UTF-8, a spool in a directory whose name is not ASCII, and renames and
 * deletes that another process's handle (opened without FILE_SHARE_DELETE, as antivirus and
 * backup software do) refuses for a moment: retried, then the mapped error. */
#include "test_util.h"

#include <windows.h>

#include "spool.h"
#include "spool_internal.h"

/* A scratch directory under %TEMP% whose name is UTF-8 "pw-spöol-<pid>" (o with diaeresis:
 * U+00F6, C3 B6 in UTF-8). */
static char dir[PW__SPOOL_PATH_MAX];

static int setup(void **state)
{
    (void)state;
    wchar_t tmp[MAX_PATH];
    char tmp8[MAX_PATH * 4];
    DWORD n = GetTempPathW(MAX_PATH, tmp);
    assert_true(n > 0 && n < MAX_PATH);
    assert_true(WideCharToMultiByte(CP_UTF8, 0, tmp, -1, tmp8, (int)sizeof(tmp8), NULL, NULL) > 0);
    snprintf(dir, sizeof(dir), "%spw-sp\xc3\xb6ol-%lu", tmp8, (unsigned long)GetCurrentProcessId());
    assert_int_equal(pw__spool_os_mkdir(dir), 0);
    assert_int_equal(pw__spool_os_mkdir(dir), 0); /* exists: fine */
    return 0;
}

static int rm_cb(const char *name, void *arg)
{
    (void)arg;
    char p[PW__SPOOL_PATH_MAX];
    snprintf(p, sizeof(p), "%s\\%s", dir, name);
    (void)pw__spool_os_unlink(p);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    (void)pw__spool_os_list_dir(dir, rm_cb, NULL);
    wchar_t w[PW__SPOOL_PATH_MAX];
    if (pw__spool_win_path(dir, w, PW__SPOOL_PATH_MAX) == 0)
        RemoveDirectoryW(w);
    return 0;
}

static void test_spool_win_paths(void **state)
{
    (void)state;
    wchar_t w[PW__SPOOL_PATH_MAX];
    assert_int_equal(pw__spool_win_path("C:\\a\\b.seg", w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcscmp(w, L"\\\\?\\C:\\a\\b.seg") == 0);
    assert_int_equal(pw__spool_win_path("C:/a/b", w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcscmp(w, L"\\\\?\\C:\\a\\b") == 0);
    assert_int_equal(pw__spool_win_path("\\\\srv\\share\\spool", w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcscmp(w, L"\\\\?\\UNC\\srv\\share\\spool") == 0);
    assert_int_equal(pw__spool_win_path("\\\\?\\D:\\x", w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcscmp(w, L"\\\\?\\D:\\x") == 0);
    /* UTF-8 "C:\spööl" -> the two U+00F6 characters. */
    assert_int_equal(pw__spool_win_path("C:\\sp\xc3\xb6\xc3\xb6l", w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcscmp(w, L"\\\\?\\C:\\sp\x00f6\x00f6l") == 0);
    /* Relative: made absolute against the current directory. */
    wchar_t cwd[MAX_PATH];
    GetCurrentDirectoryW(MAX_PATH, cwd);
    assert_int_equal(pw__spool_win_path("rel\\x", w, PW__SPOOL_PATH_MAX), 0);
    wchar_t want[PW__SPOOL_PATH_MAX];
    swprintf(want, PW__SPOOL_PATH_MAX, L"\\\\?\\%ls%lsrel\\x", cwd,
             cwd[wcslen(cwd) - 1] == L'\\' ? L"" : L"\\");
    assert_true(wcscmp(w, want) == 0);
    /* A path longer than MAX_PATH (260) is fine with the prefix. */
    char longp[600];
    int k = snprintf(longp, sizeof(longp), "C:\\");
    while (k < 500)
        k += snprintf(longp + k, sizeof(longp) - (size_t)k, "abcdefghij\\");
    assert_int_equal(pw__spool_win_path(longp, w, PW__SPOOL_PATH_MAX), 0);
    assert_true(wcslen(w) == 4 + strlen(longp));
    assert_int_equal(pw__spool_win_path(longp, w, 100), PW_ETOOBIG);

    assert_int_equal(pw__spool_win_errno(ERROR_SHARING_VIOLATION), EACCES);
    assert_int_equal(pw__spool_win_errno(ERROR_FILE_NOT_FOUND), ENOENT);
    assert_int_equal(pw__spool_win_errno(ERROR_PATH_NOT_FOUND), ENOENT);
    assert_int_equal(pw__spool_win_errno(ERROR_FILE_EXISTS), EEXIST);
    assert_int_equal(pw__spool_win_errno(ERROR_DISK_FULL), ENOSPC);
    assert_int_equal(pw__spool_win_errno(ERROR_CRC), EIO);
}

static HANDLE foreign_open(const char *path)
{
    wchar_t w[PW__SPOOL_PATH_MAX];
    assert_int_equal(pw__spool_win_path(path, w, PW__SPOOL_PATH_MAX), 0);
    /* What a scanner does: read access, sharing read and write but not delete. */
    HANDLE h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING,
                           FILE_ATTRIBUTE_NORMAL, NULL);
    assert_true(h != INVALID_HANDLE_VALUE);
    return h;
}

static DWORD WINAPI close_later(LPVOID h)
{
    Sleep(40);
    CloseHandle((HANDLE)h);
    return 0;
}

static void test_spool_win_sharing(void **state)
{
    (void)state;
    char a[PW__SPOOL_PATH_MAX], b[PW__SPOOL_PATH_MAX];
    snprintf(a, sizeof(a), "%s\\a.tmp", dir);
    snprintf(b, sizeof(b), "%s\\b", dir);
    int fd = pw__spool_os_open(a, 1, 1);
    assert_true(fd >= 0);
    assert_int_equal(pw__spool_os_pwrite(fd, "hello", 5, 0), 5);
    assert_true(pw__spool_os_open(a, 1, 1) < 0); /* exclusive create of an existing file */
    assert_int_equal(errno, EEXIST);
    /* Our own open handle shares delete: the rename goes through while it is open. */
    assert_int_equal(pw__spool_os_rename(a, b), 0);
    char got[8] = "";
    assert_int_equal(pw__spool_os_pread(fd, got, 5, 0), 5);
    assert_memory_equal(got, "hello", 5);
    assert_int_equal(pw__spool_os_close(fd), 0);

    /* A foreign handle without FILE_SHARE_DELETE that stays: the retries end with EACCES. */
    HANDLE h = foreign_open(b);
    assert_int_equal(pw__spool_os_rename(b, a), PW_EACCES);
    assert_int_equal(pw__spool_os_unlink(b), PW_EACCES);
    /* One that closes after 40 ms: a later attempt (10 + 20 + 40 ms...) succeeds. */
    HANDLE t = CreateThread(NULL, 0, close_later, h, 0, NULL);
    assert_non_null(t);
    assert_int_equal(pw__spool_os_rename(b, a), 0);
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
    h = foreign_open(a);
    t = CreateThread(NULL, 0, close_later, h, 0, NULL);
    assert_int_equal(pw__spool_os_unlink(a), 0);
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
    assert_int_equal(pw__spool_os_unlink(a), PW_ENOENT);
    assert_true(pw__spool_os_open(a, 0, 0) < 0);
    assert_int_equal(errno, ENOENT);
}

/* The whole spool in the non-ASCII directory: append, close, reopen, read back. */
static void test_spool_win_unicode_dir(void **state)
{
    (void)state;
    pw_spool_opts_t o;
    memset(&o, 0, sizeof(o));
    o.fsync = PW_SPOOL_FSYNC_NEVER;
    o.segment_bytes = 4096;
    pw_spool_t *sp = NULL;
    pw_diag_t d;
    assert_int_equal(pw_spool_open(dir, &o, &sp, NULL, &d), 0);
    char payload[100];
    for (uint64_t seq = 1; seq <= 100; seq++) {
        memset(payload, (int)seq, sizeof(payload));
        assert_int_equal(pw_spool_append(sp, seq, 0, payload, sizeof(payload), &d), 0);
    }
    pw_spool_close(sp);
    pw_spool_report_t rep;
    assert_int_equal(pw_spool_open(dir, &o, &sp, &rep, &d), 0);
    assert_int_equal(rep.records, 100);
    assert_true(rep.segments >= 3); /* 100 records of ~120 bytes in 4 KiB segments */
    pw_spool_iter_t *it = NULL;
    assert_int_equal(pw_spool_iter_open(sp, 1, &it), 0);
    pw_spool_rec_t r;
    uint64_t want = 1;
    while (pw_spool_iter_next(it, &r, &d) == 1) {
        assert_int_equal(r.seq, want);
        assert_int_equal(r.len, 100);
        assert_int_equal(r.payload[0], (uint8_t)want);
        want++;
    }
    assert_int_equal(want, 101);
    pw_spool_iter_close(it);
    pw_spool_close(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spool_win_paths),
        cmocka_unit_test_setup_teardown(test_spool_win_sharing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_win_unicode_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
