/* source_win.c: the "win" source: NtQuerySystemInformation(SystemPoolTagInformation) and the
 * host totals and limits poolmon's header shows. Windows only; the buffer parsing and the limit
 * rule table are the pure functions of source_win_parse.c (layouts and sources: source_win.h).
 */
#ifndef _WIN32
#error "source_win.c is for Windows builds only"
#endif

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "bigpool.h"
#include "source_internal.h"
#include "source_win.h"

/* Buffer sizes for the grow-the-buffer loop: start, ceiling, and retries (tags can appear
 * between the call that reports the size and the next one, so each retry adds slack). */
#define POOLTAG_BUF_START  (64u * 1024u)
#define POOLTAG_BUF_MAX    (64u * 1024u * 1024u)
#define POOLTAG_BUF_SLACK  (16u * 1024u)
#define POOLTAG_MAX_TRIES  8
#define PERFINFO_BUF_BYTES 4096u

typedef LONG(NTAPI *nt_query_fn)(ULONG cls, PVOID buf, ULONG len, PULONG ret_len);
typedef LONG(NTAPI *rtl_get_version_fn)(OSVERSIONINFOEXW *vi);
typedef BOOL(WINAPI *is_wow64_process2_fn)(HANDLE process, USHORT *process_machine,
                                           USHORT *native_machine);

/* PERFORMANCE_INFORMATION (psapi.h), declared here so we need neither psapi.h nor psapi.lib:
 * the function is looked up at run time (kernel32 K32GetPerformanceInfo from Windows 7 on,
 * psapi.dll GetPerformanceInfo before). */
typedef struct {
    DWORD cb;
    SIZE_T CommitTotal, CommitLimit, CommitPeak, PhysicalTotal, PhysicalAvailable, SystemCache,
        KernelTotal, KernelPaged, KernelNonpaged, PageSize;
    DWORD HandleCount, ProcessCount, ThreadCount;
} perf_information_t;
typedef BOOL(WINAPI *get_perf_info_fn)(perf_information_t *pi, DWORD cb);

typedef struct {
    uint8_t *buf; /* pool-tag buffer kept between samples */
    size_t buf_size;
    uint8_t *session_buf;
    size_t session_buf_size;
    int sessions_unavailable; /* the session class failed once: do not ask again */
    uint32_t page_size;
    pw_win_os_t os;
    pw_win_limit_overrides_t ovr;
} win_priv_t;

/* ---- the seam ----------------------------------------------------------------------------- */

static pw_win_query_fn query_override;

void pw_win_set_query_fn(pw_win_query_fn fn)
{
    query_override = fn;
}

/* Calls ntdll's NtQuerySystemInformation, found once with GetProcAddress. */
static uint32_t ntdll_query(uint32_t cls, void *buf, uint32_t len, uint32_t *ret_len)
{
    static nt_query_fn fn;
    if (fn == NULL) {
        HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
        if (ntdll != NULL)
            fn = (nt_query_fn)(void (*)(void))GetProcAddress(ntdll, "NtQuerySystemInformation");
        if (fn == NULL)
            return PW_WIN_STATUS_NOT_IMPLEMENTED;
    }
    ULONG rl = 0;
    LONG st = fn((ULONG)cls, buf, (ULONG)len, &rl);
    if (ret_len)
        *ret_len = (uint32_t)rl;
    return (uint32_t)st;
}

static uint32_t query(uint32_t cls, void *buf, uint32_t len, uint32_t *ret_len)
{
    return query_override ? query_override(cls, buf, len, ret_len)
                          : ntdll_query(cls, buf, len, ret_len);
}

/* Queries `cls` into buf[0..len). The session class takes its output buffer through an input
 * record (source_win.h, pw_win_session_query_t); every other class takes it directly. */
static uint32_t query_into(uint32_t cls, uint8_t *buf, size_t len, uint32_t *ret_len)
{
    if (cls != PW_WIN_CLASS_SESSION_POOLTAG)
        return query(cls, buf, (uint32_t)len, ret_len);
    pw_win_session_query_t rec;
    memset(&rec, 0, sizeof(rec));
    rec.session_id = PW_WIN_ALL_SESSIONS;
    rec.buf_size = (uint32_t)len;
    rec.buf = buf; /* pw_malloc memory: aligned for any type, so 8-aligned as the kernel wants */
    return query(cls, &rec, (uint32_t)sizeof(rec), ret_len);
}

static int status_failed(uint32_t st)
{
    return (st & 0x80000000u) != 0; /* NT_SUCCESS is st >= 0 as a LONG */
}

static int status_unavailable(uint32_t st)
{
    return st == PW_WIN_STATUS_INVALID_INFO_CLASS || st == PW_WIN_STATUS_NOT_IMPLEMENTED;
}

/* Queries class `cls` into *buf (grown as the kernel asks). On success *out_len is the length
 * the kernel filled. Returns 0, PW_ENOPOOLINFO (class not available), PW_ETOOBIG, PW_ENOMEM or
 * PW_EIO, with `d` naming the class and the NTSTATUS. */
static int query_grow(uint32_t cls, const char *cls_name, uint8_t **buf, size_t *size,
                      size_t *out_len, pw_diag_t *d)
{
    for (int tries = 0; tries < POOLTAG_MAX_TRIES; tries++) {
        if (*buf == NULL) {
            size_t n = *size ? *size : POOLTAG_BUF_START;
            *buf = pw_malloc(n);
            if (*buf == NULL)
                return PW_ENOMEM;
            *size = n;
        }
        uint32_t ret_len = 0;
        uint32_t st = query_into(cls, *buf, *size, &ret_len);
        if (st == PW_WIN_STATUS_INFO_LENGTH_MISMATCH) {
            size_t want = ret_len > *size ? ret_len : *size * 2;
            want += POOLTAG_BUF_SLACK;
            if (want > POOLTAG_BUF_MAX)
                return pw_diag_set(d, PW_ETOOBIG, 0, 0, cls_name,
                                   "%s needs %llu bytes, more than the %u-byte ceiling", cls_name,
                                   (unsigned long long)want, POOLTAG_BUF_MAX);
            pw_free(*buf);
            *buf = NULL;
            *size = want;
            continue;
        }
        if (status_unavailable(st))
            return pw_diag_set(d, PW_ENOPOOLINFO, 0, 0, cls_name,
                               "pool tag information is not available on this system "
                               "(NtQuerySystemInformation(%s) returned NTSTATUS 0x%08X)",
                               cls_name, (unsigned)st);
        if (status_failed(st))
            return pw_diag_set(d, PW_EIO, 0, 0, cls_name,
                               "NtQuerySystemInformation(%s) failed with NTSTATUS 0x%08X", cls_name,
                               (unsigned)st);
        *out_len = ret_len < *size ? ret_len : *size;
        return 0;
    }
    return pw_diag_set(d, PW_EAGAIN, 0, 0, cls_name,
                       "%s kept growing over %d attempts; will retry next sample", cls_name,
                       POOLTAG_MAX_TRIES);
}

/* ---- host facts --------------------------------------------------------------------------- */

static void read_os(pw_win_os_t *os)
{
    OSVERSIONINFOEXW vi;
    memset(&vi, 0, sizeof(vi));
    vi.dwOSVersionInfoSize = sizeof(vi);
    /* RtlGetVersion, unlike GetVersionEx, is not subject to the manifest-based version lie. */
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    rtl_get_version_fn rgv = NULL;
    if (ntdll != NULL)
        rgv = (rtl_get_version_fn)(void (*)(void))GetProcAddress(ntdll, "RtlGetVersion");
    if (rgv != NULL && rgv(&vi) == 0) {
        os->major = vi.dwMajorVersion;
        os->minor = vi.dwMinorVersion;
        os->build = vi.dwBuildNumber;
        os->server = vi.wProductType != VER_NT_WORKSTATION;
    }
    /* An x64 process emulated on ARM64 is told AMD64 by GetNativeSystemInfo; IsWow64Process2
     * (Windows 10 1709 on) names the machine itself. */
    HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
    is_wow64_process2_fn iwp2 = NULL;
    if (k32 != NULL)
        iwp2 = (is_wow64_process2_fn)(void (*)(void))GetProcAddress(k32, "IsWow64Process2");
    USHORT proc_machine = 0, native_machine = 0;
    if (iwp2 != NULL && iwp2(GetCurrentProcess(), &proc_machine, &native_machine)) {
        os->arch = pw_win_arch_from_machine(native_machine);
        return;
    }
    SYSTEM_INFO si;
    GetNativeSystemInfo(&si);
    os->arch = pw_win_arch_from_processor(si.wProcessorArchitecture);
}

/* Reads a REG_DWORD under HKLM; 0 when absent or of another type. */
static uint32_t reg_dword(const wchar_t *key, const wchar_t *name)
{
    HKEY k;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, key, 0, KEY_QUERY_VALUE, &k) != ERROR_SUCCESS)
        return 0;
    DWORD type = 0, v = 0, n = sizeof(v);
    LONG r = RegQueryValueExW(k, name, NULL, &type, (LPBYTE)&v, &n);
    RegCloseKey(k);
    return r == ERROR_SUCCESS && type == REG_DWORD && n == sizeof(v) ? v : 0;
}

/* /3GB: the boot options the loader recorded (" FASTDETECT 3GB" from boot.ini on XP/2003;
 * "INCREASEUSERVA=3072" from the BCD on Vista and later). Only meaningful on x86. Fills
 * os->increase_user_va and os->user_va_mb (pw_win_parse_boot_options). */
static void read_increase_user_va(pw_win_os_t *os)
{
    HKEY k;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, L"SYSTEM\\CurrentControlSet\\Control", 0, KEY_QUERY_VALUE,
                      &k) != ERROR_SUCCESS)
        return;
    wchar_t opts[1024];
    DWORD type = 0, n = sizeof(opts) - sizeof(wchar_t);
    LONG r = RegQueryValueExW(k, L"SystemStartOptions", NULL, &type, (LPBYTE)opts, &n);
    RegCloseKey(k);
    if (r != ERROR_SUCCESS || (type != REG_SZ && type != REG_EXPAND_SZ))
        return;
    opts[n / sizeof(wchar_t)] = 0;
    char narrow[1024];
    int m = WideCharToMultiByte(CP_UTF8, 0, opts, -1, narrow, (int)sizeof(narrow), NULL, NULL);
    if (m <= 0)
        return;
    narrow[sizeof(narrow) - 1] = 0;
    pw_win_parse_boot_options(narrow, os);
}

static int get_perf_fallback(pw_win_perf_fallback_t *out)
{
    static get_perf_info_fn fn;
    if (fn == NULL) {
        HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
        if (k32 != NULL)
            fn = (get_perf_info_fn)(void (*)(void))GetProcAddress(k32, "K32GetPerformanceInfo");
        if (fn == NULL) {
            HMODULE psapi = LoadLibraryW(L"psapi.dll");
            if (psapi != NULL)
                fn = (get_perf_info_fn)(void (*)(void))GetProcAddress(psapi, "GetPerformanceInfo");
        }
        if (fn == NULL)
            return -1;
    }
    perf_information_t pi;
    memset(&pi, 0, sizeof(pi));
    pi.cb = sizeof(pi);
    if (!fn(&pi, sizeof(pi)))
        return -1;
    out->commit_total = pi.CommitTotal;
    out->commit_limit = pi.CommitLimit;
    out->commit_peak = pi.CommitPeak;
    out->physical_total = pi.PhysicalTotal;
    out->physical_available = pi.PhysicalAvailable;
    out->kernel_paged = pi.KernelPaged;
    out->kernel_nonpaged = pi.KernelNonpaged;
    out->page_size = pi.PageSize;
    return 0;
}

/* Totals: SystemPerformanceInformation as poolmon's header, GetPerformanceInfo for whatever
 * that left at 0 (Wine reports 0 pool pages), RAM from GlobalMemoryStatusEx. */
static void read_totals(win_priv_t *priv, pw_totals_t *t)
{
    uint8_t buf[PERFINFO_BUF_BYTES];
    uint32_t ret_len = 0;
    uint32_t st = query(PW_WIN_CLASS_PERFORMANCE, buf, sizeof(buf), &ret_len);
    if (!status_failed(st))
        (void)pw_win_parse_perfinfo(buf, ret_len < sizeof(buf) ? ret_len : sizeof(buf),
                                    priv->page_size, t, NULL);
    MEMORYSTATUSEX ms;
    memset(&ms, 0, sizeof(ms));
    ms.dwLength = sizeof(ms);
    if (GlobalMemoryStatusEx(&ms))
        t->physical_memory_bytes = ms.ullTotalPhys;
    if (t->paged_bytes == 0 || t->nonpaged_bytes == 0 || t->commit_bytes == 0 ||
        t->available_bytes == 0) {
        pw_win_perf_fallback_t pf;
        if (get_perf_fallback(&pf) == 0)
            pw_win_totals_fallback(&pf, t);
    }
}

static void utf16_to_utf8(const wchar_t *w, char *out, size_t out_size)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)out_size, NULL, NULL);
    if (n <= 0)
        out[0] = 0;
    out[out_size - 1] = 0;
}

/* ---- ops ---------------------------------------------------------------------------------- */

static int win_open(pw_source_t *src, const char *arg, const pw_source_config_t *cfg, pw_diag_t *d)
{
    win_priv_t *priv = src->priv;
    pw_source_info_t *info = &src->info;
    if (arg != NULL && arg[0] != 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "source", "source 'win' takes no argument ('%s')",
                           arg);
    /* Fail early, with the clear message, where the class is missing (Wine, stripped kernels). */
    size_t len = 0;
    int r = query_grow(PW_WIN_CLASS_POOLTAG, "SystemPoolTagInformation", &priv->buf,
                       &priv->buf_size, &len, d);
    if (r != 0)
        return r;

    SYSTEM_INFO si;
    GetSystemInfo(&si);
    priv->page_size = si.dwPageSize ? si.dwPageSize : 4096;
    read_os(&priv->os);
    if (priv->os.arch == PW_WIN_ARCH_X86)
        read_increase_user_va(&priv->os);

    static const wchar_t mm_key[] =
        L"SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Memory Management";
    priv->ovr.cfg_nonpaged_bytes = cfg->nonpaged_limit_bytes;
    priv->ovr.cfg_paged_bytes = cfg->paged_limit_bytes;
    /* MB; the rule table decides where the kernel reads them (winlimit.h). */
    priv->ovr.reg_nonpaged_mb = reg_dword(mm_key, L"NonPagedPoolLimit");
    priv->ovr.reg_paged_mb = reg_dword(mm_key, L"PagedPoolLimit");

    pw_totals_t t;
    memset(&t, 0, sizeof(t));
    read_totals(priv, &t);

    info->kind = PW_SOURCE_WINDOWS;
    info->counter_width = 32;
    /* The DNS host name (what `hostname` prints; docs/windows.md says to certify it); the
     * NetBIOS name ($env:COMPUTERNAME) only when the system has no DNS host name. */
    wchar_t host[256];
    DWORD hn = 256;
    if (GetComputerNameExW(ComputerNameDnsHostname, host, &hn) && host[0] != 0)
        utf16_to_utf8(host, info->host_name, sizeof(info->host_name));
    else if ((hn = 256, GetComputerNameExW(ComputerNameNetBIOS, host, &hn)))
        utf16_to_utf8(host, info->host_name, sizeof(info->host_name));
    snprintf(info->os_family, sizeof(info->os_family), "windows");
    snprintf(info->os_version, sizeof(info->os_version), "%u.%u", (unsigned)priv->os.major,
             (unsigned)priv->os.minor);
    info->os_build = priv->os.build;
    snprintf(info->arch, sizeof(info->arch), "%s", pw_win_arch_name(priv->os.arch));
    info->physical_memory_bytes = t.physical_memory_bytes;
    /* Boot time: now minus the milliseconds since boot. FILETIME counts 100 ns from 1601. */
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    uint64_t now_ms =
        ((((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime) / 10000u) - 11644473600000ull;
    info->boot_time_ms = now_ms - GetTickCount64();
    pw_win_pool_limits(&priv->os, t.physical_memory_bytes, t.commit_limit_bytes, &priv->ovr,
                       &info->nonpaged_limit, &info->paged_limit);
    return 0;
}

static int win_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d)
{
    win_priv_t *priv = src->priv;
    size_t len = 0;
    int r = query_grow(PW_WIN_CLASS_POOLTAG, "SystemPoolTagInformation", &priv->buf,
                       &priv->buf_size, &len, d);
    if (r != 0)
        return r;
    r = pw_win_parse_pooltags(priv->buf, len, (unsigned)sizeof(void *), out, d);
    if (r < 0)
        return r;
    /* Session pools exist on Remote Desktop hosts; elsewhere the class fails or is empty. */
    if (!priv->sessions_unavailable) {
        pw_diag_t sd;
        pw_diag_clear(&sd);
        size_t before = out->n;
        r = query_grow(PW_WIN_CLASS_SESSION_POOLTAG, "SystemSessionPoolTagInformation",
                       &priv->session_buf, &priv->session_buf_size, &len, &sd);
        if (r == 0)
            r = pw_win_parse_session_pooltags(priv->session_buf, len, (unsigned)sizeof(void *), -1,
                                              out, &sd);
        /* Missing or refused (e.g. access denied): session rows are secondary, so stop asking
         * rather than lose the system-wide table. A malformed buffer is still an error. */
        if (r == PW_ENOPOOLINFO || r == PW_EIO) {
            priv->sessions_unavailable = 1;
        } else if (r < 0) {
            out->n = before;
            if (sd.msg[0] == '\0')
                return pw_diag_set(d, r, 0, 0, "SystemSessionPoolTagInformation", "%s",
                                   pw_strerror(r));
            return pw_diag_set(d, r, sd.line, sd.offset, sd.field, "%s", sd.msg);
        }
    }
    read_totals(priv, &out->totals);
    /* The limit can change with the commit limit (x64 paged pool from Windows 8 on). */
    pw_win_pool_limits(&priv->os, out->totals.physical_memory_bytes, out->totals.commit_limit_bytes,
                       &priv->ovr, &src->info.nonpaged_limit, &src->info.paged_limit);
    out->totals.nonpaged_limit_bytes = src->info.nonpaged_limit.bytes;
    out->totals.paged_limit_bytes = src->info.paged_limit.bytes;
    return 0;
}

/* The big-pool table is queried on demand only (a command), into a buffer freed right after:
 * it can be megabytes on a busy server, and is not needed between snapshots. */
static int win_big_pool(pw_source_t *src, const uint8_t tag[4], pw_bigpool_summary_t *out,
                        pw_diag_t *d)
{
    (void)src;
    uint8_t *buf = NULL;
    size_t size = 0, len = 0;
    int r = query_grow(PW_BIGPOOL_CLASS, "SystemBigPoolInformation", &buf, &size, &len, d);
    if (r == 0)
        r = pw_bigpool_summarize(buf, len, (unsigned)sizeof(void *), tag, out, d);
    pw_free(buf);
    return r;
}

static void win_close(pw_source_t *src)
{
    win_priv_t *priv = src->priv;
    if (priv == NULL)
        return;
    pw_free(priv->buf);
    pw_free(priv->session_buf);
}

const pw_source_ops_t pw__source_win_ops = {
    .name = "win",
    .description = "Windows kernel pool tags (NtQuerySystemInformation SystemPoolTagInformation)",
    .priv_size = sizeof(win_priv_t),
    .open = win_open,
    .sample = win_sample,
    .close = win_close,
    .big_pool = win_big_pool,
};
