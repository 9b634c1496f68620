/* linux_series.c: saved slabinfo/allocinfo series into samples (see linux_series.h).
 *
 * One pass over the lines finds the dumps (from a version line to the next version line, time
 * line or the end); each dump is handed to its own lenient parser, and a point's sample is
 * built as soon as the point ends, so at most one point's documents are held at a time. */
#include "linux_series.h"
#include "alloc.h"
#include "allocinfo_text.h"
#include "poolmon_text.h"
#include "slabinfo_text.h"

#include <stdio.h>
#include <string.h>

#define MAX_INPUT_DEFAULT ((size_t)256 << 20)
#define SLAB_PREFIX       "slabinfo - version:"
#define ALLOC_PREFIX      "allocinfo - version:"

enum { K_NONE = 0, K_SLAB, K_ALLOC };

typedef struct {
    const pw_linux_series_opts_t *o;
    pw_linux_series_t *out;
    size_t cap;
    pw_linux_rows_t rows;
    /* the open point */
    int open;
    int has_slab, has_alloc;
    uint32_t line;
    uint64_t ts;
    int has_ts;
    pw_slabinfo_doc_t slab;
    pw_allocinfo_doc_t alloc;
    /* the open dump */
    int kind;
    const char *sec;
    uint32_t sec_line;
    /* a time line waiting for the next point */
    int pending;
    uint64_t pending_ms;
} parser_t;

static int starts(const char *s, const char *e, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(e - s) >= n && memcmp(s, w, n) == 0;
}

int pw_linux_series_sniff(const char *data, size_t len)
{
    if (data == NULL || len == 0)
        return 0; /* nothing to sniff (and NULL + 0 is undefined) */
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        if (starts(p, le, SLAB_PREFIX) || starts(p, le, ALLOC_PREFIX))
            return 1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* Moves a sub-parser's diagnostic to the whole text's lines. */
static int rebase(pw_diag_t *d, int r, uint32_t first_line, const char *what)
{
    if (d == NULL)
        return r;
    uint32_t line = d->line ? d->line + first_line - 1 : first_line;
    char msg[PW_DIAG_MSG_MAX], field[sizeof(d->field)];
    snprintf(msg, sizeof(msg), "%s dump at line %u: %.200s", what, first_line, d->msg);
    memcpy(field, d->field, sizeof(field));
    return pw_diag_set(d, r, line, d->offset, field, "%s", msg);
}

/* Ends the open dump at `end` and parses it. */
static int close_dump(parser_t *P, const char *end, pw_diag_t *d)
{
    int kind = P->kind;
    P->kind = K_NONE;
    if (kind == K_SLAB) {
        pw_slabinfo_opts_t so = {.max_input_bytes = P->o->max_input_bytes};
        int r = pw_slabinfo_parse(P->sec, (size_t)(end - P->sec), &so, &P->slab, d);
        if (r != 0)
            return rebase(d, r, P->sec_line, "slabinfo");
        P->out->n_skipped += P->slab.n_skipped_lines;
        if (P->slab.first_skipped && P->out->first_skipped == 0)
            P->out->first_skipped = P->slab.first_skipped + P->sec_line - 1;
    } else if (kind == K_ALLOC) {
        pw_allocinfo_opts_t ao = {.max_input_bytes = P->o->max_input_bytes};
        int r = pw_allocinfo_parse(P->sec, (size_t)(end - P->sec), &ao, &P->alloc, d);
        if (r != 0)
            return rebase(d, r, P->sec_line, "allocinfo");
        P->out->n_skipped += P->alloc.n_skipped;
        if (P->alloc.first_skipped && P->out->first_skipped == 0)
            P->out->first_skipped = P->alloc.first_skipped + P->sec_line - 1;
    }
    return 0;
}

static void add_stats(pw_linux_rows_stats_t *a, const pw_linux_rows_stats_t *b)
{
    a->slab_rows += b->slab_rows;
    a->site_rows += b->site_rows;
    a->vmalloc_rows += b->vmalloc_rows;
    a->sites_idle += b->sites_idle;
    a->sites_inaccurate += b->sites_inaccurate;
    a->renamed += b->renamed;
    a->shortened += b->shortened;
}

/* Ends the open point: builds its sample. */
static int close_point(parser_t *P, pw_diag_t *d)
{
    if (!P->open)
        return 0;
    P->open = 0;
    pw_linux_series_t *out = P->out;
    if (out->n_points == P->cap) {
        size_t nc = P->cap ? P->cap * 2 : 16;
        pw_linux_point_t *np = pw_realloc(out->points, nc * sizeof(*np));
        if (np == NULL)
            return pw_diag_set(d, PW_ENOMEM, P->line, 0, "", "out of memory");
        out->points = np;
        P->cap = nc;
    }
    pw_linux_point_t *pt = &out->points[out->n_points++];
    memset(pt, 0, sizeof(*pt));
    pw_sample_init(&pt->sample);
    pt->line = P->line;
    pt->has_file_time = P->has_ts;
    if (P->has_ts)
        pt->timestamp_ms = P->ts;
    else if (out->n_points > 1)
        pt->timestamp_ms = out->points[out->n_points - 2].timestamp_ms +
                           (P->o->interval_ms ? P->o->interval_ms : 900000);
    else
        pt->timestamp_ms = P->o->start_ms;
    pt->sample.timestamp_ms = pt->timestamp_ms;
    int r = pw_linux_rows_begin(&P->rows, &pt->sample);
    if (r != 0)
        return pw_diag_set(d, r, P->line, 0, "", "out of memory");
    if (P->has_slab) {
        pt->n_caches = P->slab.n_caches;
        r = pw_linux_rows_add_slab(&P->rows, P->slab.caches, P->slab.n_caches, d);
        if (r != 0)
            return r;
        uint64_t ps = P->o->page_size ? P->o->page_size : 4096;
        pt->sample.totals.nonpaged_bytes = pw_slabinfo_doc_slab_bytes(&P->slab, ps, NULL);
    }
    if (P->has_alloc) {
        pt->has_allocinfo = true;
        pt->n_sites = P->alloc.n_sites;
        r = pw_linux_rows_add_alloc(&P->rows, &P->alloc, d);
        if (r != 0)
            return r;
    }
    add_stats(&out->st, &P->rows.st);
    pw_slabinfo_doc_close(&P->slab);
    pw_allocinfo_doc_close(&P->alloc);
    P->has_slab = P->has_alloc = 0;
    return 0;
}

int pw_linux_series_parse(const char *data, size_t len, const pw_linux_series_opts_t *opts,
                          pw_linux_series_t *out, pw_diag_t *d)
{
    if (out == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "no output");
    memset(out, 0, sizeof(*out));
    if (data == NULL && len > 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "no input");
    pw_linux_series_opts_t o = opts ? *opts : (pw_linux_series_opts_t){0};
    if (o.max_input_bytes == 0)
        o.max_input_bytes = MAX_INPUT_DEFAULT;
    if (len > o.max_input_bytes)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "", "input of %zu bytes is over the limit of %zu",
                           len, o.max_input_bytes);
    parser_t P;
    memset(&P, 0, sizeof(P));
    P.o = &o;
    P.out = out;
    pw_linux_rows_init(&P.rows);
    if (o.page_size)
        P.rows.page_size = o.page_size;
    int r = 0;
    uint32_t line = 0;
    const char *p = data, *end = data ? data + len : data; /* NULL + 0 is undefined */
    while (r == 0 && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *ls = p;
        line++;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t'))
            s++;
        p = nl ? nl + 1 : end;
        int kind = starts(s, le, SLAB_PREFIX) ? K_SLAB : starts(s, le, ALLOC_PREFIX) ? K_ALLOC : 0;
        if (kind != K_NONE) {
            r = close_dump(&P, ls, d);
            if (r == 0 && P.open && (P.pending || (kind == K_SLAB ? P.has_slab : P.has_alloc)))
                r = close_point(&P, d);
            if (r != 0)
                break;
            if (!P.open) {
                P.open = 1;
                P.line = line;
                P.has_ts = P.pending;
                P.ts = P.pending_ms;
                P.pending = 0;
            }
            P.kind = kind;
            P.sec = ls;
            P.sec_line = line;
            if (kind == K_SLAB)
                P.has_slab = 1;
            else
                P.has_alloc = 1;
            continue;
        }
        if (s == le)
            continue;
        uint64_t ts;
        int t = pw_poolmon_parse_time(s, (size_t)(le - s), &ts);
        if (t < 0) {
            r = pw_diag_set(d, PW_EPARSE, line, (uint64_t)(ls - data), "time",
                            "line %u: '%.*s' names its time zone, whose offset is not in the "
                            "line: save the times with `date -u` or `date -Is`",
                            line, (int)(le - s > 60 ? 60 : le - s), s);
            break;
        }
        if (t == 1) {
            r = close_dump(&P, ls, d);
            if (r == 0)
                r = close_point(&P, d);
            P.pending = 1;
            P.pending_ms = ts;
        }
    }
    if (r == 0)
        r = close_dump(&P, end, d);
    if (r == 0)
        r = close_point(&P, d);
    if (r == 0 && out->n_points == 0)
        r = pw_diag_set(d, PW_EFORMAT, 0, 0, "",
                        "no 'slabinfo - version:' or 'allocinfo - version:' line: not a saved "
                        "/proc/slabinfo or /proc/allocinfo");
    pw_slabinfo_doc_close(&P.slab);
    pw_allocinfo_doc_close(&P.alloc);
    pw_linux_rows_close(&P.rows);
    if (r != 0)
        pw_linux_series_close(out);
    return r;
}

void pw_linux_series_close(pw_linux_series_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_points; i++)
        pw_sample_close(&s->points[i].sample);
    pw_free(s->points);
    memset(s, 0, sizeof(*s));
}
