/* source_win_parse.c: pure parsing of NtQuerySystemInformation buffers and the pool-limit rule
 * table (see source_win.h for layouts and sources). Compiled on every platform. */
#include "source_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024ull * 1024ull)
#define GB (1024ull * MB)
#define TB (1024ull * GB)

/* Sizes go through %llu: mingw's printf checking does not know %zu. */
#define ULL(x) ((unsigned long long)(x))

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_size_t(const uint8_t *p, unsigned ptr_size)
{
    if (ptr_size == 4)
        return rd32(p);
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

size_t pw_win_pooltag_entry_size(unsigned ptr_size)
{
    return ptr_size == 8 ? 40 : ptr_size == 4 ? 28 : 0;
}

/* One SYSTEM_POOLTAG, decoded. */
typedef struct {
    uint8_t tag[4];
    uint32_t paged_allocs, paged_frees, nonpaged_allocs, nonpaged_frees;
    uint64_t paged_used, nonpaged_used;
} pooltag_t;

static void decode_entry(const uint8_t *p, unsigned ptr_size, pooltag_t *e)
{
    memcpy(e->tag, p, 4);
    e->paged_allocs = rd32(p + 4);
    e->paged_frees = rd32(p + 8);
    if (ptr_size == 8) {
        e->paged_used = rd_size_t(p + 16, 8);
        e->nonpaged_allocs = rd32(p + 24);
        e->nonpaged_frees = rd32(p + 28);
        e->nonpaged_used = rd_size_t(p + 32, 8);
    } else {
        e->paged_used = rd32(p + 12);
        e->nonpaged_allocs = rd32(p + 16);
        e->nonpaged_frees = rd32(p + 20);
        e->nonpaged_used = rd32(p + 24);
    }
}

/* Checks that `count` entries of `esize` fit in [off, len). */
static int check_entries(size_t off, size_t len, uint64_t count, size_t esize, pw_diag_t *d)
{
    if (count > PW_WIN_POOLTAG_MAX_COUNT)
        return pw_diag_set(d, PW_ETOOBIG, 0, off, "Count",
                           "pool tag count %llu exceeds the limit of %u", (unsigned long long)count,
                           PW_WIN_POOLTAG_MAX_COUNT);
    uint64_t need = (uint64_t)off + count * esize;
    if (need > len)
        return pw_diag_set(d, PW_ETRUNCATED, 0, len, "TagInfo",
                           "buffer of %llu bytes ends inside entry %llu of %llu (%u-byte "
                           "entries from offset %llu need %llu bytes)",
                           ULL(len), ULL((len - off) / esize), ULL(count), (unsigned)esize,
                           ULL(off), ULL(need));
    return 0;
}

int pw_win_parse_pooltags(const uint8_t *buf, size_t len, unsigned ptr_size, pw_sample_t *out,
                          pw_diag_t *d)
{
    size_t esize = pw_win_pooltag_entry_size(ptr_size);
    if (esize == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "ptr_size", "pointer size %u is not 4 or 8",
                           ptr_size);
    /* The header is ULONG Count, padded to the alignment of SIZE_T. */
    size_t header = ptr_size;
    if (buf == NULL || len < header)
        return pw_diag_set(d, PW_ETRUNCATED, 0, len, "Count",
                           "buffer of %llu bytes is shorter than the %u-byte header", ULL(len),
                           (unsigned)header);
    uint32_t count = rd32(buf);
    int r = check_entries(header, len, count, esize, d);
    if (r != 0)
        return r;
    int rows = 0;
    for (uint32_t i = 0; i < count; i++) {
        pooltag_t e;
        decode_entry(buf + header + (size_t)i * esize, ptr_size, &e);
        if (e.paged_allocs || e.paged_frees || e.paged_used) {
            r = pw_sample_add(out, e.tag, 4, PW_POOL_PAGED, e.paged_allocs, e.paged_frees,
                              (uint32_t)(e.paged_allocs - e.paged_frees), e.paged_used);
            if (r != 0)
                return r;
            rows++;
        }
        if (e.nonpaged_allocs || e.nonpaged_frees || e.nonpaged_used) {
            r = pw_sample_add(out, e.tag, 4, PW_POOL_NONPAGED, e.nonpaged_allocs, e.nonpaged_frees,
                              (uint32_t)(e.nonpaged_allocs - e.nonpaged_frees), e.nonpaged_used);
            if (r != 0)
                return r;
            rows++;
        }
    }
    return rows;
}

static int cmp_entry_tag(const void *a, const void *b)
{
    const pw_entry_t *x = a, *y = b;
    return memcmp(x->tag, y->tag, 4);
}

int pw_win_parse_session_pooltags(const uint8_t *buf, size_t len, unsigned ptr_size,
                                  long session_id, pw_sample_t *out, pw_diag_t *d)
{
    size_t esize = pw_win_pooltag_entry_size(ptr_size);
    if (esize == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "ptr_size", "pointer size %u is not 4 or 8",
                           ptr_size);
    if (len == 0)
        return 0;
    if (buf == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "buffer", "NULL buffer of %llu bytes", ULL(len));
    /* SIZE_T NextEntryOffset; ULONG SessionId; ULONG Count; then SYSTEM_POOLTAG[] aligned. */
    size_t header = ptr_size + 8;
    size_t first = out->n;
    uint64_t total = 0;
    size_t off = 0;
    for (;;) {
        if (len - off < header)
            return pw_diag_set(d, PW_ETRUNCATED, 0, off, "NextEntryOffset",
                               "session record at offset %llu: %llu bytes left, header needs %u",
                               ULL(off), ULL(len - off), (unsigned)header);
        const uint8_t *rec = buf + off;
        uint64_t next = rd_size_t(rec, ptr_size);
        uint32_t sid = rd32(rec + ptr_size);
        uint32_t count = rd32(rec + ptr_size + 4);
        int r = check_entries(off + header, len, count, esize, d);
        if (r != 0)
            return r;
        total += count;
        if (total > PW_WIN_POOLTAG_MAX_COUNT)
            return pw_diag_set(d, PW_ETOOBIG, 0, off, "Count",
                               "session records hold more than %u entries in all",
                               PW_WIN_POOLTAG_MAX_COUNT);
        if (session_id < 0 || (unsigned long)session_id == sid) {
            for (uint32_t i = 0; i < count; i++) {
                pooltag_t e;
                decode_entry(rec + header + (size_t)i * esize, ptr_size, &e);
                uint32_t allocs = e.paged_allocs + e.nonpaged_allocs;
                uint32_t frees = e.paged_frees + e.nonpaged_frees;
                uint64_t used = e.paged_used + e.nonpaged_used;
                if (!e.paged_allocs && !e.paged_frees && !e.paged_used && !e.nonpaged_allocs &&
                    !e.nonpaged_frees && !e.nonpaged_used)
                    continue;
                r = pw_sample_add(out, e.tag, 4, PW_POOL_SESSION, allocs, frees,
                                  (uint32_t)(allocs - frees), used);
                if (r != 0)
                    return r;
            }
        }
        if (next == 0)
            break;
        if (next < header)
            return pw_diag_set(d, PW_EPARSE, 0, off, "NextEntryOffset",
                               "session record at offset %llu: NextEntryOffset %llu is smaller "
                               "than its %u-byte header",
                               ULL(off), ULL(next), (unsigned)header);
        if (next >= len - off)
            return pw_diag_set(d, PW_ETRUNCATED, 0, off, "NextEntryOffset",
                               "session record at offset %llu: next record at +%llu is past the "
                               "end of the %llu-byte buffer",
                               ULL(off), ULL(next), ULL(len));
        off += (size_t)next;
    }
    /* Several sessions report the same tag: merge them into one row per tag. */
    size_t n = out->n - first;
    if (n > 1) {
        pw_entry_t *e = out->entries + first;
        qsort(e, n, sizeof(*e), cmp_entry_tag);
        size_t w = 0;
        for (size_t i = 1; i < n; i++) {
            if (memcmp(e[w].tag, e[i].tag, 4) == 0) {
                e[w].allocs = (uint32_t)(e[w].allocs + e[i].allocs);
                e[w].frees = (uint32_t)(e[w].frees + e[i].frees);
                e[w].diff = (uint32_t)(e[w].allocs - e[w].frees);
                e[w].bytes += e[i].bytes;
            } else {
                e[++w] = e[i];
            }
        }
        out->n = first + w + 1;
    }
    return (int)(out->n - first);
}

int pw_win_parse_perfinfo(const uint8_t *buf, size_t len, uint32_t page_size, pw_totals_t *t,
                          pw_diag_t *d)
{
    if (page_size == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "page_size", "page size is 0");
    if (buf == NULL || len < PW_WIN_PERFINFO_MIN_LEN)
        return pw_diag_set(d, PW_ETRUNCATED, 0, len, "NonPagedPoolPages",
                           "SYSTEM_PERFORMANCE_INFORMATION of %llu bytes is shorter than the "
                           "%u bytes up to NonPagedPoolPages",
                           ULL(len), PW_WIN_PERFINFO_MIN_LEN);
    uint64_t ps = page_size;
    t->available_bytes = rd32(buf + 44) * ps;
    t->commit_bytes = rd32(buf + 48) * ps;
    t->commit_limit_bytes = rd32(buf + 52) * ps;
    t->commit_peak_bytes = rd32(buf + 56) * ps;
    t->paged_bytes = rd32(buf + 112) * ps;
    t->nonpaged_bytes = rd32(buf + 116) * ps;
    return 0;
}

void pw_win_totals_fallback(const pw_win_perf_fallback_t *pi, pw_totals_t *t)
{
    uint64_t ps = pi->page_size;
#define FILL(field, pages)                                                                         \
    if (t->field == 0)                                                                             \
    t->field = (pages)*ps
    FILL(paged_bytes, pi->kernel_paged);
    FILL(nonpaged_bytes, pi->kernel_nonpaged);
    FILL(commit_bytes, pi->commit_total);
    FILL(commit_limit_bytes, pi->commit_limit);
    FILL(commit_peak_bytes, pi->commit_peak);
    FILL(physical_memory_bytes, pi->physical_total);
    FILL(available_bytes, pi->physical_available);
#undef FILL
}

/* ---- pool limits -------------------------------------------------------------------------- */

static const char *arch_name(pw_win_arch_t a)
{
    return a == PW_WIN_ARCH_X64 ? "x64" : a == PW_WIN_ARCH_ARM64 ? "arm64" : "x86";
}

const char *pw_win_os_name(const pw_win_os_t *os, char *out, size_t out_size)
{
    unsigned v = os->major * 100 + os->minor;
    const char *name;
    switch (v) {
    case 400:
        name = os->server ? "Windows NT 4.0 Server" : "Windows NT 4.0 Workstation";
        break;
    case 500:
        name = os->server ? "Windows 2000 Server" : "Windows 2000 Professional";
        break;
    case 501:
        name = "Windows XP";
        break;
    case 502:
        name = os->server ? "Windows Server 2003" : "Windows XP x64";
        break;
    case 600:
        name = os->server ? "Windows Server 2008" : "Windows Vista";
        break;
    case 601:
        name = os->server ? "Windows Server 2008 R2" : "Windows 7";
        break;
    case 602:
        name = os->server ? "Windows Server 2012" : "Windows 8";
        break;
    case 603:
        name = os->server ? "Windows Server 2012 R2" : "Windows 8.1";
        break;
    default:
        name = NULL;
        break;
    }
    if (name != NULL)
        snprintf(out, out_size, "%s", name);
    else if (os->major >= 10)
        snprintf(out, out_size, "Windows %s %u.%u", os->server ? "Server" : "client", os->major,
                 os->minor);
    else
        snprintf(out, out_size, "Windows %u.%u", os->major, os->minor);
    return out;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Prints a byte count as the table states it: whole TB, GB or MB, else KB. */
static void fmt_size(uint64_t b, char *out, size_t n)
{
    if (b >= TB && b % TB == 0)
        snprintf(out, n, "%llu TB", (unsigned long long)(b / TB));
    else if (b >= GB && b % GB == 0)
        snprintf(out, n, "%llu GB", (unsigned long long)(b / GB));
    else if (b >= MB && b % MB == 0)
        snprintf(out, n, "%llu MB", (unsigned long long)(b / MB));
    else
        snprintf(out, n, "%llu KB", (unsigned long long)(b / 1024));
}

static void set_limit(pw_pool_limit_t *l, uint64_t bytes, pw_limit_source_t src, const char *os,
                      const char *rule)
{
    char sz[32], text[192];
    fmt_size(bytes, sz, sizeof(sz));
    l->bytes = bytes;
    l->source = bytes ? src : PW_LIMIT_UNKNOWN;
    if (bytes == 0)
        snprintf(text, sizeof(text), "%s: %s", os, rule);
    else
        snprintf(text, sizeof(text), "%s: %s%s%s", os, rule, rule[0] ? " = " : "", sz);
    /* Bounded copy: the detail field is shorter than the longest text we could build. */
    snprintf(l->detail, sizeof(l->detail), "%.*s", (int)sizeof(l->detail) - 1, text);
}

static void computed_nonpaged(const pw_win_os_t *os, uint64_t ram, const char *osn,
                              pw_pool_limit_t *l)
{
    unsigned v = os->major * 100 + os->minor;
    int x86 = os->arch == PW_WIN_ARCH_X86;
    if (v < 400) {
        set_limit(l, 0, PW_LIMIT_UNKNOWN, osn, "no rule for this version");
    } else if (v < 500) {
        set_limit(l, x86 ? 128 * MB : 0, PW_LIMIT_COMPUTED, osn,
                  x86 ? "" : "no rule for this architecture");
    } else if (v == 500) {
        if (!x86) {
            set_limit(l, 0, PW_LIMIT_UNKNOWN, osn, "no rule for this architecture");
        } else if (ram >= 3 * GB / 2) {
            set_limit(l, 256 * MB, PW_LIMIT_COMPUTED, osn, "RAM >= 1.5 GB");
        } else {
            /* Linear below 1.5 GB: our approximation of the RAM-dependent sizing. */
            uint64_t b = 256 * MB * (ram / MB) / 1536;
            set_limit(l, b, PW_LIMIT_COMPUTED, osn, "256 MB * RAM / 1.5 GB (approx.)");
        }
    } else if (v < 600) {
        if (x86)
            set_limit(l, os->increase_user_va ? 128 * MB : 256 * MB, PW_LIMIT_COMPUTED, osn, "");
        else
            set_limit(l, min_u64(ram / 4 * 3, 128 * GB), PW_LIMIT_COMPUTED, osn,
                      "75% of RAM <= 128 GB");
    } else if (x86) {
        set_limit(l, min_u64(ram / 4 * 3, 2 * GB), PW_LIMIT_COMPUTED, osn, "min(75% of RAM, 2 GB)");
    } else if (v == 600 && !os->server) {
        set_limit(l, min_u64(ram / 5 * 2, 128 * GB), PW_LIMIT_COMPUTED, osn,
                  "40% of RAM <= 128 GB");
    } else if (v <= 601) {
        set_limit(l, min_u64(ram / 4 * 3, 128 * GB), PW_LIMIT_COMPUTED, osn,
                  "75% of RAM <= 128 GB");
    } else if (v == 602) {
        set_limit(l, min_u64(ram, 128 * GB), PW_LIMIT_COMPUTED, osn, "min(RAM, 128 GB)");
    } else {
        set_limit(l, min_u64(ram, 16 * TB), PW_LIMIT_COMPUTED, osn, "min(RAM, 16 TB)");
    }
}

static void computed_paged(const pw_win_os_t *os, uint64_t commit_limit, const char *osn,
                           pw_pool_limit_t *l)
{
    unsigned v = os->major * 100 + os->minor;
    int x86 = os->arch == PW_WIN_ARCH_X86;
    if (v < 500) {
        set_limit(l, 0, PW_LIMIT_UNKNOWN, osn, "paged pool limit not in the table");
    } else if (v == 500) {
        set_limit(l, x86 ? 350 * MB : 0, PW_LIMIT_COMPUTED, osn,
                  x86 ? "" : "no rule for this architecture");
    } else if (v < 600 && x86) {
        set_limit(l, v == 501 ? 490 * MB : 530 * MB, PW_LIMIT_COMPUTED, osn, "");
    } else if (x86) {
        set_limit(l, 2 * GB, PW_LIMIT_COMPUTED, osn, "kernel address space");
    } else if (v <= 601) {
        set_limit(l, 128 * GB, PW_LIMIT_COMPUTED, osn, "");
    } else {
        uint64_t cap = v == 602 ? 384 * GB : 15 * TB + TB / 2;
        int capped = commit_limit != 0 && commit_limit < cap;
        set_limit(l, capped ? commit_limit : cap, PW_LIMIT_COMPUTED, osn,
                  capped     ? "commit limit"
                  : v == 602 ? ""
                             : "15.5 TB");
    }
}

void pw_win_pool_limits(const pw_win_os_t *os, uint64_t ram_bytes, uint64_t commit_limit_bytes,
                        const pw_win_limit_overrides_t *ovr, pw_pool_limit_t *nonpaged,
                        pw_pool_limit_t *paged)
{
    char name[48], osn[72];
    pw_win_os_name(os, name, sizeof(name));
    snprintf(osn, sizeof(osn), "%s %s%s", name, arch_name(os->arch),
             os->arch == PW_WIN_ARCH_X86 && os->increase_user_va ? " with /3GB" : "");
    static const pw_win_limit_overrides_t none;
    if (ovr == NULL)
        ovr = &none;

    if (ovr->cfg_nonpaged_bytes)
        set_limit(nonpaged, ovr->cfg_nonpaged_bytes, PW_LIMIT_CONFIGURED, "configured", "");
    else if (ovr->reg_nonpaged_bytes)
        set_limit(nonpaged, ovr->reg_nonpaged_bytes, PW_LIMIT_REGISTRY, "registry",
                  "NonPagedPoolLimit");
    else
        computed_nonpaged(os, ram_bytes, osn, nonpaged);

    if (ovr->cfg_paged_bytes)
        set_limit(paged, ovr->cfg_paged_bytes, PW_LIMIT_CONFIGURED, "configured", "");
    else if (ovr->reg_paged_bytes)
        set_limit(paged, ovr->reg_paged_bytes, PW_LIMIT_REGISTRY, "registry", "PagedPoolLimit");
    else
        computed_paged(os, commit_limit_bytes, osn, paged);
}
