/* source_win_parse.c: pure parsing of NtQuerySystemInformation buffers (see source_win.h for
 * layouts and sources). Compiled on every platform. */
#include "source_win.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                r = pw_sample_add_session(out, e.tag, sid, allocs, frees,
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

void pw_win_parse_boot_options(const char *opts, pw_win_os_t *os)
{
    int found = 0;
    uint32_t mb = 0;
    const char *p = opts ? opts : "";
    char tok[64];
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        size_t n = strcspn(p, " \t");
        size_t k = n < sizeof(tok) - 1 ? n : sizeof(tok) - 1;
        for (size_t i = 0; i < k; i++)
            tok[i] = (char)toupper((unsigned char)p[i]);
        tok[k] = '\0';
        p += n;
        const char *t = tok[0] == '/' ? tok + 1 : tok;
        const char *eq = strchr(t, '=');
        size_t name_len = eq ? (size_t)(eq - t) : strlen(t);
        unsigned long v = eq ? strtoul(eq + 1, NULL, 10) : 0;
        if (strcmp(t, "3GB") == 0) {
            found = 1;
        } else if (name_len == 14 && strncmp(t, "INCREASEUSERVA", 14) == 0) {
            found = 1;
            if (eq)
                mb = (uint32_t)v;
        } else if (name_len == 6 && strncmp(t, "USERVA", 6) == 0 && eq) {
            mb = (uint32_t)v;
        }
    }
    if (!found)
        return;
    os->increase_user_va = 1;
    if (mb >= 2048 && mb <= 3072)
        os->user_va_mb = mb;
}

pw_win_arch_t pw_win_arch_from_machine(uint16_t machine)
{
    return machine == 0x8664   ? PW_WIN_ARCH_X64
           : machine == 0xAA64 ? PW_WIN_ARCH_ARM64
                               : PW_WIN_ARCH_X86;
}

pw_win_arch_t pw_win_arch_from_processor(uint16_t processor_architecture)
{
    return processor_architecture == 9    ? PW_WIN_ARCH_X64
           : processor_architecture == 12 ? PW_WIN_ARCH_ARM64
                                          : PW_WIN_ARCH_X86;
}
