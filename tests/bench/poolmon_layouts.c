/* poolmon_layouts.c: see poolmon_layouts.h. Each layout copies the spacing of a real capture
 * of tests/fixtures/poolmon (named beside it); the numbers are the sample's. */
#include "poolmon_layouts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"

enum {
    L_XP,       /* case02: XP/2003 console, leading space, `( n)` deltas */
    L_W2K,      /* case04: Windows 2000, dashed line under the column header, tags right-aligned */
    L_MD,       /* case03: a markdown paste: `## Tag`, no leading spaces, narrow deltas */
    L_WIDE,     /* case16: x64 `poolmon -n` log, fused header fields, wide columns, no deltas */
    L_MAPPED,   /* case19: `/g`, fused header, title, Mapped_Driver (one cut by the console) */
    L_NOLEAD,   /* case11: echoed prompt, no leading space, cmd's %date% %time% before screens */
    L_COLLAPSE, /* case01: a web copy, single spaces, no header lines, no deltas */
    L_TABS,     /* columns separated by tabs (a spreadsheet's copy) */
    L_UTF16,    /* Notepad "Unicode": UTF-16LE with BOM, CRLF */
    L_STAMPED   /* a capture script: date(1) output before each XP screen */
};

static const char *names[PW_GEN_LAYOUTS] = {"xp",       "w2k-dashed", "markdown",  "wide-n",
                                            "mapped-g", "no-lead",    "collapsed", "tabs",
                                            "utf16le",  "stamped"};

const char *pw_gen_layout_name(int layout)
{
    return layout >= 0 && layout < PW_GEN_LAYOUTS ? names[layout] : "?";
}

int pw_gen_layout_has_totals(int layout)
{
    return layout != L_COLLAPSE && layout != L_TABS;
}

int pw_gen_layout_has_time(int layout)
{
    return layout == L_NOLEAD || layout == L_STAMPED;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
putf(char **out, size_t *len, size_t *cap, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line))
        return PW_EINVAL;
    if (*len + (size_t)n + 1 > *cap) {
        size_t nc = (*cap ? *cap * 2 : 65536) + (size_t)n;
        char *p = realloc(*out, nc);
        if (p == NULL)
            return PW_ENOMEM;
        *out = p;
        *cap = nc;
    }
    memcpy(*out + *len, line, (size_t)n + 1);
    *len += (size_t)n;
    return 0;
}

/* Appends or returns putf's error. */
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int r_ = putf(out, len, cap, __VA_ARGS__);                                                 \
        if (r_ != 0)                                                                               \
            return r_;                                                                             \
    } while (0)

static unsigned long long kib(uint64_t b)
{
    return (unsigned long long)(b / 1024);
}

/* The tag as poolmon prints it: its bytes without the padding spaces (`Io  ` -> "Io"). */
static int tag_text(const pw_entry_t *e, char *buf)
{
    size_t n = e->tag_len;
    while (n > 0 && e->tag[n - 1] == ' ')
        n--;
    memcpy(buf, e->tag, n);
    buf[n] = '\0';
    return (int)n;
}

static const char *type_name(const pw_entry_t *e)
{
    return e->pool == PW_POOL_PAGED ? "Paged" : "Nonp";
}

static unsigned long long per_alloc(const pw_entry_t *e)
{
    return e->diff ? (unsigned long long)(e->bytes / e->diff) : 0;
}

/* The `( n)` columns: changes since poolmon's last refresh, which no analysis reads; small
 * numbers that follow from the row. */
static int d_allocs(const pw_entry_t *e)
{
    return (int)(e->allocs % 13);
}

static int d_frees(const pw_entry_t *e)
{
    return (int)(e->frees % 11);
}

static int d_bytes(const pw_entry_t *e)
{
    return (int)(e->bytes % 997) - 400;
}

/* A driver name for the Mapped_Driver column, the third of each screen cut by the console. */
static const char *driver(size_t i)
{
    switch (i % 3) {
    case 0:
        return "Unknown Driver";
    case 1:
        return "[drv.sys - Generated driver]";
    default:
        return "[hidclass.sys - HID Class d ";
    }
}

/* One row of `layout`: the entry's numbers in the columns and spacing of its capture. */
static int put_row(const pw_entry_t *e, size_t i, int last, int layout, const char *nl, char **out,
                   size_t *len, size_t *cap)
{
    char tag[8];
    tag_text(e, tag);
    const char *ty = type_name(e);
    unsigned long long a = e->allocs, f = e->frees, d = e->diff, b = e->bytes, pa = per_alloc(e);
    int da = d_allocs(e), df = d_frees(e), db = d_bytes(e);
    switch (layout) {
    case L_W2K:
        PUT("%4s  %-5s %9llu (%4d) %9llu (%4d) %8llu %9llu (%6d) %5llu%s", tag, ty, a, da, f, df, d,
            b, db, pa, nl);
        break;
    case L_MD: /* the last row of the paste ends in a space */
        PUT("%-5s %-6s %6llu ( %d)  %6llu ( %d) %6llu %8llu ( %d) %5llu%s%s", tag, ty, a, da, f, df,
            d, b, db, pa, last ? " " : "", nl);
        break;
    case L_WIDE:
        PUT(" %-4s %-5s %18llu %18llu %17llu %14llu %16llu%s", tag, ty, a, f, d, b, pa, nl);
        break;
    case L_MAPPED:
        PUT("%-4s   %-5s %8llu (%3d) %8llu (%3d) %7llu %10llu (%6d) %5llu %s%s", tag, ty, a, da, f,
            df, d, b, db, pa, driver(i), nl);
        break;
    case L_NOLEAD:
        PUT("%-4s %-5s %9llu (%4d) %9llu (%4d) %8llu %9llu (%6d) %6llu %s%s", tag, ty, a, da, f, df,
            d, b, db, pa, i % 2 ? "Unknown Driver" : "[Gdi Objects]", nl);
        break;
    case L_COLLAPSE:
        PUT("%s %s %llu %llu %llu %llu %llu%s", tag, ty, a, f, d, b, pa, nl);
        break;
    case L_TABS:
        PUT("%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu%s", tag, ty, a, f, d, b, pa, nl);
        break;
    default: /* XP, UTF-16, stamped */
        PUT(" %-4s %-5s %10llu (%4d) %10llu (%4d) %8llu %10llu (%6d) %6llu%s", tag, ty, a, da, f,
            df, d, b, db, pa, nl);
        break;
    }
    return 0;
}

int pw_gen_layout_screen(const pw_sample_t *s, int layout, size_t index, int crlf, char **out,
                         size_t *len, size_t *cap)
{
    if (layout < 0 || layout >= PW_GEN_LAYOUTS)
        return PW_EINVAL;
    const char *nl = crlf || layout == L_UTF16 ? "\r\n" : "\n";
    const pw_totals_t *t = &s->totals;
    unsigned long long mem = kib(t->physical_memory_bytes), avail = kib(t->available_bytes);
    unsigned long long commit = kib(t->commit_bytes), limit = kib(t->commit_limit_bytes);
    unsigned long long peak = kib(t->commit_peak_bytes);
    unsigned long long np = kib(t->nonpaged_bytes), pg = kib(t->paged_bytes);
    time_t secs = (time_t)(s->timestamp_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char when[64];

    switch (layout) {
    case L_XP:
    case L_UTF16:
    case L_STAMPED:
        if (layout == L_STAMPED) {
            strftime(when, sizeof(when), "%a %b %e %H:%M:%S UTC %Y", &tm);
            PUT("%s%s", when, nl);
        }
        PUT(" Memory:%8lluK Avail:%8lluK  PageFlts:  1220   InRam Krnl: 2484K P: 7988K%s"
            " Commit:%8lluK Limit:%8lluK Peak:%8lluK            Pool N:%6lluK P:%6lluK%s"
            " Tag  Type     Allocs            Frees            Diff   Bytes       Per "
            "Alloc%s%s",
            mem, avail, nl, commit, limit, peak, np, pg, nl, nl, nl);
        break;
    case L_W2K:
        PUT("Memory:%8lluK Avail:%8lluK PageFlts:    31 InRam Krnl:  684K P:  680K%s"
            " Commit:%8lluK Limit:%8lluK Peak:%8lluK  Pool N:%6lluK P:%6lluK%s%s"
            " Tag  Type    Allocs          Frees         Diff   Bytes      Per Alloc%s"
            "-----------------------------------------------------------------------%s%s",
            mem, avail, nl, commit, limit, peak, np, pg, nl, nl, nl, nl, nl);
        break;
    case L_MD:
        PUT("Memory: %lluK Avail: %lluK PageFlts: 31 InRam Krnl: 684K P: 680K%s"
            "Commit: %lluK Limit: %lluK Peak: %lluK Pool N: %lluK P: %lluK%s%s"
            "## Tag   Type  Allocs       Frees        Diff    Bytes       Per Alloc%s%s%s",
            mem, avail, nl, commit, limit, peak, np, pg, nl, nl, nl, nl, nl);
        break;
    case L_WIDE:
        PUT(" Memory:%lluK Avail:%lluK  PageFlts:901597864   InRam Krnl:76500K P:4130272K%s"
            " Commit:%lluK Limit:%lluK Peak:%lluK            Pool N:%lluK P:%lluK%s%s"
            " Tag  Type     Allocs            Frees               Diff            Bytes  "
            "               Per Alloc%s%s",
            mem, avail, nl, commit, limit, peak, np, pg, nl, nl, nl, nl);
        break;
    case L_MAPPED:
        PUT("Memory:%lluK Avail:%lluK  PageFlts:     5   InRam Krnl:10444K P:1843072K%s"
            "Commit:%lluK Limit:%lluK Peak:%lluK            Pool N:%lluK P:%lluK%s"
            "System pool information%s%s"
            "Tag    Type    Allocs         Frees        Diff   Bytes            Per Alloc "
            "Mapped_Driver%s%s",
            mem, avail, nl, commit, limit, peak, np, pg, nl, nl, nl, nl, nl);
        break;
    case L_NOLEAD:
        if (index == 0)
            PUT("C:\\tools>poolmon /g%s%s", nl, nl);
        strftime(when, sizeof(when), "%a %m/%d/%Y %H:%M:%S", &tm);
        PUT("%s.%02u%s"
            "Memory:%8lluK Avail:%8lluK  PageFlts:    43   InRam Krnl: 1900K P:18860K%s"
            "Commit:%7lluK Limit:%7lluK Peak:%7lluK            Pool N:%5lluK P:%5lluK%s"
            "System pool information%s"
            "Tag  Type     Allocs            Frees            Diff   Bytes      Per Alloc  "
            "Mapped_Driver%s%s",
            when, (unsigned)(s->timestamp_ms % 1000 / 10), nl, mem, avail, nl, commit, limit, peak,
            np, pg, nl, nl, nl, nl);
        break;
    case L_COLLAPSE:
        PUT("Tag Type Allocs Frees Diff Bytes Per Alloc%s", nl);
        break;
    case L_TABS:
        PUT("Tag\tType\tAllocs\tFrees\tDiff\tBytes\tPer Alloc%s", nl);
        break;
    }
    for (size_t i = 0; i < s->n; i++) {
        int r = put_row(&s->entries[i], i, i + 1 == s->n, layout, nl, out, len, cap);
        if (r != 0)
            return r;
    }
    return 0;
}

int pw_gen_layout_finish(int layout, char **out, size_t *len, size_t *cap)
{
    if (layout != L_UTF16 || *out == NULL)
        return 0;
    size_t n = *len, nc = 2 * n + 4;
    char *w = malloc(nc);
    if (w == NULL)
        return PW_ENOMEM;
    w[0] = (char)0xFF, w[1] = (char)0xFE;
    for (size_t i = 0; i < n; i++) {
        w[2 + 2 * i] = (*out)[i]; /* the text is ASCII */
        w[3 + 2 * i] = 0;
    }
    w[2 + 2 * n] = w[3 + 2 * n] = 0;
    free(*out);
    *out = w;
    *len = 2 * n + 2;
    *cap = nc;
    return 0;
}

static const pw_entry_t *by_bytes_base;

static int cmp_bytes_desc(const void *a, const void *b)
{
    const pw_entry_t *x = &by_bytes_base[*(const size_t *)a];
    const pw_entry_t *y = &by_bytes_base[*(const size_t *)b];
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    int c = memcmp(x->tag, y->tag, x->tag_len < y->tag_len ? x->tag_len : y->tag_len);
    return c != 0 ? c : (int)x->pool - (int)y->pool;
}

int pw_gen_view_top_bytes(const pw_sample_t *s, size_t k, pw_sample_t *out)
{
    size_t *idx = malloc((s->n ? s->n : 1) * sizeof(*idx));
    if (idx == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        idx[i] = i;
    by_bytes_base = s->entries; /* qsort has no argument: one caller at a time */
    qsort(idx, s->n, sizeof(*idx), cmp_bytes_desc);
    pw_sample_reset(out);
    out->timestamp_ms = s->timestamp_ms;
    out->totals = s->totals;
    int r = 0;
    for (size_t i = 0; r == 0 && i < s->n && i < k; i++) {
        const pw_entry_t *e = &s->entries[idx[i]];
        r = pw_sample_add(out, e->tag, e->tag_len, (pw_pool_t)e->pool, e->allocs, e->frees, e->diff,
                          e->bytes);
    }
    free(idx);
    return r;
}
