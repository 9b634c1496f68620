/* poolmon_text.c: saved poolmon screens -> screens of rows (see poolmon_text.h for the formats).
 *
 * The input is decoded once into a private NUL-terminated copy (UTF-16 -> UTF-8); lines are then
 * cut in place, so titles and mapped-driver strings point into that copy and cost no
 * allocation. Each line is classified (row, header, title, column header, time stamp,
 * separator, noise); a screen's parts come in a fixed order, so a part that does not come
 * after the previous one starts the next screen (that is how concatenated screens split). */
#include "poolmon_text.h"
#include "clock.h"
#include "alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { R_NONE = 0, R_MEM = 1, R_COMMIT = 2, R_TITLE = 3, R_COLHDR = 4, R_ROW = 5 };

typedef struct parser_s {
    pw_poolmon_doc_t *doc;
    pw_diag_t *diag;
    const char *text;
    size_t max_line;
    uint64_t start_ms;
    uint64_t interval_ms;
    int open;        /* a screen is open: parts may still be added to the last one */
    int last_rank;   /* R_* of the last part added to the open screen */
    size_t rows_cap; /* capacity of the open screen's rows */
    int pending_ts;  /* a time-stamp line was seen for the next screen */
    uint64_t pending_ms;
    uint32_t first_nonblank; /* for the "not poolmon" diagnostic */
    /* the line being handled */
    uint32_t line;
    uint64_t offset;
    int terminated; /* the line ended with a newline (else: the input's last, maybe cut) */
    /* skip_bad_rows */
    int skip;
    uint64_t *hkeys;  /* the open screen's rows by tag and pool (open addressing, 0 = empty) */
    uint32_t *hlines; /* line of each key's row */
    size_t hcap, hn;  /* slots (a power of two), keys in use */
    size_t tent_from; /* problems[tent_from..]: lines that are no row after the open screen's
                         rows, tentative until a row of the same screen follows */
    size_t tent_n;    /* of them (kept or not) */
    uint32_t tent_first;
} parser_t;

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static const char *skip_blanks(const char *p, const char *e)
{
    while (p < e && is_blank(*p))
        p++;
    return p;
}

static const char *token_end(const char *p, const char *e)
{
    while (p < e && !is_blank(*p))
        p++;
    return p;
}

/* Case-insensitive: does [p, e) start with the NUL-terminated `w`? */
static int starts_with_ci(const char *p, const char *e, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(e - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(p[i]) != lower(w[i]))
            return 0;
    return 1;
}

static int token_eq_ci(const char *p, const char *e, const char *w)
{
    return (size_t)(e - p) == strlen(w) && starts_with_ci(p, e, w);
}

/* Compares a header key with `w`, any run of blanks in the key matching one space in `w`. */
static int key_eq(const char *p, const char *e, const char *w)
{
    while (p < e && *w) {
        if (is_blank(*p)) {
            if (*w != ' ')
                return 0;
            p = skip_blanks(p, e);
            w++;
            continue;
        }
        if (*p++ != *w++)
            return 0;
    }
    return p == e && *w == '\0';
}

/* Fills the diag for the current line; `at` (in the line, may be NULL) gives the offset. */
static int fail(parser_t *P, int code, const char *at, const char *field, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 5, 6)));

static int fail(parser_t *P, int code, const char *at, const char *field, const char *fmt, ...)
{
    char msg[PW_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    uint64_t off = P->offset + (uint64_t)(at ? (size_t)(at - (P->text + P->offset)) : 0);
    return pw_diag_set(P->diag, code, P->line, off, field, "%s", msg);
}

/* Makes room for one more element in the array *arr of n elements of `elem` bytes and capacity
 * *cap (doubling; `first` elements at first). Returns 0 or PW_ENOMEM (diag set; *arr kept). */
static int grow(parser_t *P, void **arr, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : first;
    void *a = pw_realloc(*arr, ncap * elem);
    if (a == NULL)
        return pw_diag_set(P->diag, PW_ENOMEM, P->line, P->offset, "", "out of memory");
    *arr = a;
    *cap = ncap;
    return 0;
}

/* ---- problems (skip_bad_rows) ------------------------------------------------------------ */

/* Records a problem of the current line for screen `screen`; `tag` may be NULL. Returns 0 or
 * PW_ENOMEM. A problem beyond PW_POOLMON_PROBLEMS_KEPT is counted only. */
static int add_problem(parser_t *P, pw_poolmon_problem_kind_t kind, size_t screen,
                       const uint8_t *tag, int pool, uint32_t first_line, const char *msg)
{
    pw_poolmon_doc_t *doc = P->doc;
    doc->n_problems_total++;
    if (doc->n_problems >= PW_POOLMON_PROBLEMS_KEPT)
        return 0;
    void *a = doc->problems;
    int r = grow(P, &a, &doc->problems_cap_, doc->n_problems, sizeof(*doc->problems), 8);
    doc->problems = a;
    if (r != 0)
        return r;
    pw_poolmon_problem_t *pr = &doc->problems[doc->n_problems++];
    memset(pr, 0, sizeof(*pr));
    pr->kind = kind;
    pr->line = P->line;
    pr->screen = (uint32_t)screen;
    pr->first_line = first_line;
    pr->pool = (int8_t)pool;
    if (tag != NULL) {
        pr->has_tag = 1;
        memcpy(pr->tag, tag, 4);
    }
    snprintf(pr->msg, sizeof(pr->msg), "%s", msg);
    return 0;
}

static void mark_incomplete(parser_t *P, size_t screen)
{
    pw_poolmon_screen_t *sc = &P->doc->screens[screen];
    if (sc->incomplete++ == 0)
        P->doc->screens_incomplete++;
}

/* Lines that were no row after the open screen's rows, and no row of that screen followed:
 * noise between screens after all (a prompt, a message), counted as ignored. */
static void tentative_drop(parser_t *P)
{
    if (P->tent_n == 0)
        return;
    pw_poolmon_doc_t *doc = P->doc;
    doc->n_problems_total -= P->tent_n;
    doc->n_problems = P->tent_from;
    doc->ignored_lines += (uint32_t)P->tent_n;
    if (doc->first_ignored_line == 0)
        doc->first_ignored_line = P->tent_first;
    P->tent_n = 0;
}

/* A row of the same screen follows them: they were rows that could not be read. */
static void tentative_keep(parser_t *P)
{
    if (P->tent_n == 0)
        return;
    mark_incomplete(P, P->doc->n_screens - 1);
    P->doc->screens[P->doc->n_screens - 1].incomplete += (uint32_t)P->tent_n - 1;
    P->tent_n = 0;
}

static uint64_t row_key(const uint8_t tag[4], int pool)
{
    return ((uint64_t)tag[0] | (uint64_t)tag[1] << 8 | (uint64_t)tag[2] << 16 |
            (uint64_t)tag[3] << 24 | (uint64_t)(pool & 0xff) << 32 | (uint64_t)1 << 40);
}

static size_t row_slot(const parser_t *P, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (P->hcap - 1);
    while (P->hkeys[i] != 0 && P->hkeys[i] != key)
        i = (i + 1) & (P->hcap - 1);
    return i;
}

/* Looks the open screen's row of `key` up: its line, or 0 when the screen has none. */
static uint32_t row_seen(const parser_t *P, uint64_t key)
{
    if (P->hn == 0)
        return 0;
    size_t i = row_slot(P, key);
    return P->hkeys[i] == key ? P->hlines[i] : 0;
}

static int row_remember(parser_t *P, uint64_t key, uint32_t line)
{
    if ((P->hn + 1) * 2 > P->hcap) {
        size_t ncap = P->hcap ? P->hcap * 2 : 64;
        uint64_t *ok = P->hkeys;
        uint32_t *ol = P->hlines;
        size_t ocap = P->hcap;
        P->hkeys = pw_calloc(ncap, sizeof(*P->hkeys));
        P->hlines = pw_calloc(ncap, sizeof(*P->hlines));
        if (P->hkeys == NULL || P->hlines == NULL) {
            pw_free(P->hkeys);
            pw_free(P->hlines);
            P->hkeys = ok, P->hlines = ol; /* freed by the caller's close */
            return pw_diag_set(P->diag, PW_ENOMEM, P->line, P->offset, "", "out of memory");
        }
        P->hcap = ncap;
        for (size_t k = 0; k < ocap; k++)
            if (ok[k] != 0) {
                size_t j = row_slot(P, ok[k]);
                P->hkeys[j] = ok[k];
                P->hlines[j] = ol[k];
            }
        pw_free(ok);
        pw_free(ol);
    }
    size_t i = row_slot(P, key);
    if (P->hkeys[i] == 0)
        P->hn++;
    P->hkeys[i] = key;
    P->hlines[i] = line;
    return 0;
}

/* ---- screens ----------------------------------------------------------------------------- */

static pw_poolmon_screen_t *cur(parser_t *P)
{
    return &P->doc->screens[P->doc->n_screens - 1];
}

static int new_screen(parser_t *P)
{
    pw_poolmon_doc_t *doc = P->doc;
    void *a = doc->screens;
    int r = grow(P, &a, &doc->screens_cap_, doc->n_screens, sizeof(*doc->screens), 8);
    doc->screens = a;
    if (r != 0)
        return r;
    tentative_drop(P);
    if (P->hn > 0) {
        memset(P->hkeys, 0, P->hcap * sizeof(*P->hkeys));
        P->hn = 0;
    }
    pw_poolmon_screen_t *s = &doc->screens[doc->n_screens++];
    memset(s, 0, sizeof(*s));
    s->session = PW_POOLMON_SESSION_NONE;
    s->line = P->line;
    if (P->pending_ts) {
        s->timestamp_ms = P->pending_ms;
        s->has_file_time = 1;
        P->pending_ts = 0;
    } else if (doc->n_screens > 1) {
        s->timestamp_ms = doc->screens[doc->n_screens - 2].timestamp_ms + P->interval_ms;
    } else {
        s->timestamp_ms = P->start_ms;
    }
    P->open = 1;
    P->last_rank = R_NONE;
    P->rows_cap = 0;
    return 0;
}

/* Makes sure the part of rank `rank` goes to a screen, starting a new one when the part cannot
 * follow what the open screen already has. */
static int screen_for(parser_t *P, int rank)
{
    if (!P->open || rank < P->last_rank || (rank == P->last_rank && rank != R_ROW)) {
        int r = new_screen(P);
        if (r != 0)
            return r;
    }
    P->last_rank = rank;
    return 0;
}

/* ---- rows -------------------------------------------------------------------------------- */

static int parse_u64(parser_t *P, const char **pp, const char *e, const char *field, uint64_t *out)
{
    const char *p = skip_blanks(*pp, e);
    if (p >= e || !is_digit(*p))
        return fail(P, (p >= e && !P->terminated) ? PW_ETRUNCATED : PW_EPARSE, p, field,
                    "expected a number in column %s", field);
    uint64_t v = 0;
    while (p < e && is_digit(*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return fail(P, PW_ERANGE, p, field, "number in column %s exceeds 2^64-1", field);
        v = v * 10 + d;
        p++;
    }
    if (p < e && !is_blank(*p) && *p != '(')
        return fail(P, PW_EPARSE, p, field, "unexpected character after the number in column %s",
                    field);
    *pp = p;
    *out = v;
    return 0;
}

/* Optional `( n)` delta column after a number. Returns 1 when present, 0 when not, < 0. */
static int parse_delta(parser_t *P, const char **pp, const char *e, const char *field, int64_t *out)
{
    const char *p = skip_blanks(*pp, e);
    if (p >= e || *p != '(')
        return 0;
    p = skip_blanks(p + 1, e);
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-')) {
        neg = *p == '-';
        p = skip_blanks(p + 1, e);
    }
    if (p >= e || !is_digit(*p))
        return fail(P, p >= e && !P->terminated ? PW_ETRUNCATED : PW_EPARSE, p, field,
                    "expected a number in the delta of column %s", field);
    uint64_t v = 0;
    while (p < e && is_digit(*p)) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > (uint64_t)INT64_MAX)
            return fail(P, PW_ERANGE, p, field, "delta of column %s is out of range", field);
        p++;
    }
    p = skip_blanks(p, e);
    if (p >= e || *p != ')')
        return fail(P, p >= e && !P->terminated ? PW_ETRUNCATED : PW_EPARSE, p, field,
                    "missing ')' after the delta of column %s", field);
    *pp = p + 1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

static int pool_of(const char *p, const char *e)
{
    if (token_eq_ci(p, e, "Paged"))
        return PW_POOL_PAGED;
    if (token_eq_ci(p, e, "Nonp") || token_eq_ci(p, e, "Nonpaged"))
        return PW_POOL_NONPAGED;
    return -1;
}

/* Reads a row's numbers from *pp into `row` (its deltas flag too). Returns 0; < 0 on a
 * malformed row (diag set); with skip_bad_rows a row whose numbers do not parse (PW_EPARSE,
 * PW_ERANGE) is recorded as a problem of its screen instead, and 1 returned. */
static int row_numbers(parser_t *P, const char **pp, const char *e, pw_poolmon_row_t *row)
{
    pw_diag_t local, *saved = P->diag;
    pw_diag_clear(&local);
    if (P->skip)
        P->diag = &local;
    int r, deltas = 0;
    const char *p = *pp;
    if ((r = parse_u64(P, &p, e, "allocs", &row->allocs)) < 0 ||
        (r = parse_delta(P, &p, e, "allocs", &row->allocs_delta)) < 0)
        goto out;
    deltas |= r;
    if ((r = parse_u64(P, &p, e, "frees", &row->frees)) < 0 ||
        (r = parse_delta(P, &p, e, "frees", &row->frees_delta)) < 0)
        goto out;
    deltas |= r;
    if ((r = parse_u64(P, &p, e, "diff", &row->diff)) < 0 ||
        (r = parse_u64(P, &p, e, "bytes", &row->bytes)) < 0 ||
        (r = parse_delta(P, &p, e, "bytes", &row->bytes_delta)) < 0)
        goto out;
    deltas |= r;
    if ((r = parse_u64(P, &p, e, "per_alloc", &row->file_per_alloc)) < 0)
        goto out;
    if (deltas)
        row->flags |= PW_POOLMON_ROW_HAS_DELTAS;
    *pp = p;
    r = 0;
out:
    P->diag = saved;
    if (r >= 0 || !P->skip)
        return r < 0 ? r : 0;
    if (r != PW_EPARSE && r != PW_ERANGE) { /* a cut last line, out of memory: as before */
        if (saved != NULL)
            *saved = local;
        return r;
    }
    if ((r = screen_for(P, R_ROW)) != 0 ||
        (r = add_problem(P, PW_POOLMON_BAD_NUMBER, P->doc->n_screens - 1, row->tag, row->pool, 0,
                         local.msg)) != 0)
        return r;
    mark_incomplete(P, P->doc->n_screens - 1);
    return 1;
}

/* A line that reads as a row but for its type word: `TAG WORD` and four numbers or more, in
 * a screen that has a column header or rows (the leak's row with its type garbled). Sets the
 * tag and the word. */
static int bad_type_row(const char *s, const char *e, uint8_t tag[4], const char **ws,
                        const char **we)
{
    const char *p = token_end(s, e), *prev_s = NULL, *prev_e = NULL;
    while (p < e) {
        const char *ts = skip_blanks(p, e), *te = token_end(ts, e);
        if (ts >= e)
            return 0;
        if (is_digit(*ts))
            break;
        if (ts - s > 8)
            return 0;
        prev_s = ts, prev_e = te;
        p = te;
    }
    if (prev_s == NULL || p >= e || prev_e - prev_s > 16)
        return 0;
    const char *tag_end = prev_s;
    while (tag_end > s && is_blank(tag_end[-1]))
        tag_end--;
    size_t tag_len = (size_t)(tag_end - s);
    if (tag_len == 0 || tag_len > 4)
        return 0;
    int numbers = 0;
    for (const char *q = p; q < e;) {
        const char *ts = skip_blanks(q, e), *te = token_end(ts, e);
        if (ts < e && is_digit(*ts))
            numbers++;
        q = te;
    }
    if (numbers < 4)
        return 0;
    memset(tag, ' ', 4);
    for (size_t i = 0; i < tag_len; i++)
        tag[i] = is_blank(s[i]) ? ' ' : (uint8_t)s[i];
    *ws = prev_s;
    *we = prev_e;
    return 1;
}

/* Returns 1 when [s, e) (trimmed, NUL at e) is a row and was added, 0 when it is not a row,
 * < 0 on a malformed row. */
static int try_row(parser_t *P, const char *s, char *e)
{
    /* The type is the first Paged/Nonp token after the first token (a tag may be "Nonp"). */
    const char *ts = NULL, *te = NULL;
    int pool = -1;
    const char *p = token_end(s, e);
    while (p < e) {
        ts = skip_blanks(p, e);
        te = token_end(ts, e);
        if ((pool = pool_of(ts, te)) >= 0)
            break;
        if (ts - s > 8)
            return 0; /* past any 4-byte tag and its padding */
        p = te;
    }
    if (pool < 0)
        return 0;
    const char *tag_end = ts;
    while (tag_end > s && is_blank(tag_end[-1]))
        tag_end--;
    size_t tag_len = (size_t)(tag_end - s);
    const char *n = skip_blanks(te, e);
    if (tag_len == 0 || tag_len > 4 || n >= e || !is_digit(*n))
        return 0;

    pw_poolmon_row_t row;
    memset(&row, 0, sizeof(row));
    memset(row.tag, ' ', 4);
    for (size_t i = 0; i < tag_len; i++)
        row.tag[i] = is_blank(s[i]) ? ' ' : (uint8_t)s[i];
    row.pool = (uint8_t)pool;
    row.line = P->line;
    p = te;
    int r = row_numbers(P, &p, e, &row);
    if (r < 0)
        return r;
    if (r == 1)
        return 1; /* left out and recorded (skip_bad_rows) */
    p = skip_blanks(p, e);
    if (p < e) {
        row.mapped_driver = p; /* e is already NUL: the string ends at the trimmed line end */
        if (*p == '[' && e[-1] != ']')
            row.flags |= PW_POOLMON_ROW_DRIVER_CUT;
    }
    row.per_alloc = pw_per_alloc(row.bytes, row.diff);

    if ((r = screen_for(P, R_ROW)) != 0)
        return r;
    if (P->skip) {
        /* poolmon lists a tag once per pool in a screen: a tag again is the next screen, whose
         * header (and time stamp) was lost */
        uint64_t key = row_key(row.tag, row.pool);
        uint32_t first = row_seen(P, key);
        if (first != 0) {
            if ((r = new_screen(P)) != 0)
                return r;
            P->last_rank = R_ROW;
            char tagtxt[17], msg[200];
            pw_tag_format(row.tag, 4, tagtxt, sizeof(tagtxt));
            snprintf(msg, sizeof(msg),
                     "tag '%s' %s again in one screen (first at line %" PRIu32
                     "): a screen's header was lost; a new screen starts here",
                     tagtxt, row.pool == PW_POOL_NONPAGED ? "Nonp" : "Paged", first);
            if ((r = add_problem(P, PW_POOLMON_DUPLICATE_TAG, P->doc->n_screens - 1, row.tag,
                                 row.pool, first, msg)) != 0)
                return r;
            mark_incomplete(P, P->doc->n_screens - 1);
        }
        tentative_keep(P);
        if ((r = row_remember(P, key, P->line)) != 0)
            return r;
    }
    pw_poolmon_screen_t *sc = cur(P);
    if (row.per_alloc != row.file_per_alloc) {
        row.flags |= PW_POOLMON_ROW_PER_ALLOC_MISMATCH;
        sc->per_alloc_mismatches++;
    }
    uint64_t d = row.allocs - row.frees;
    int wrap32 =
        row.allocs <= UINT32_MAX && row.frees <= UINT32_MAX && (d & 0xffffffffu) == row.diff;
    if (d != row.diff && !wrap32) {
        row.flags |= PW_POOLMON_ROW_DIFF_MISMATCH;
        sc->diff_mismatches++;
    }
    void *a = sc->rows;
    r = grow(P, &a, &P->rows_cap, sc->n_rows, sizeof(*sc->rows), 16);
    sc->rows = a;
    if (r != 0)
        return r;
    sc->rows[sc->n_rows++] = row;
    return 1;
}

/* ---- header, title, column header --------------------------------------------------------- */

static int parse_header(parser_t *P, const char *s, const char *e, int rank)
{
    int r = screen_for(P, rank);
    if (r != 0)
        return r;
    pw_poolmon_header_t *h = &cur(P)->header;
    const char *p = s;
    for (;;) {
        p = skip_blanks(p, e);
        if (p >= e)
            break;
        const char *colon = memchr(p, ':', (size_t)(e - p));
        if (colon == NULL)
            return fail(P, P->terminated ? PW_EPARSE : PW_ETRUNCATED, p, "header",
                        "expected 'Name: value' in the header line");
        const char *ke = colon;
        while (ke > p && is_blank(ke[-1]))
            ke--;
        if (ke == p || ke - p > 24)
            return fail(P, PW_EPARSE, p, "header", "bad field name in the header line");
        const char *v = skip_blanks(colon + 1, e);
        if (v >= e || !is_digit(*v))
            return fail(P, P->terminated ? PW_EPARSE : PW_ETRUNCATED, v, "header",
                        "expected a number after a header field");
        uint64_t val = 0;
        while (v < e && is_digit(*v)) {
            unsigned d = (unsigned)(*v - '0');
            if (val > (UINT64_MAX - d) / 10)
                return fail(P, PW_ERANGE, v, "header", "header value exceeds 2^64-1");
            val = val * 10 + d;
            v++;
        }
        if (v < e && (*v == 'K' || *v == 'k'))
            v++;
        if (v < e && !is_blank(*v))
            return fail(P, PW_EPARSE, v, "header", "unexpected character after a header value");
        uint64_t *dst = NULL;
        uint32_t bit = 0;
        if (rank == R_MEM) {
            if (key_eq(p, ke, "Memory"))
                dst = &h->memory_kb, bit = PW_POOLMON_HAS_MEMORY;
            else if (key_eq(p, ke, "Avail"))
                dst = &h->avail_kb, bit = PW_POOLMON_HAS_AVAIL;
            else if (key_eq(p, ke, "PageFlts"))
                dst = &h->page_faults, bit = PW_POOLMON_HAS_PAGE_FAULTS;
            else if (key_eq(p, ke, "InRam Krnl"))
                dst = &h->inram_krnl_kb, bit = PW_POOLMON_HAS_INRAM_KRNL;
            else if (key_eq(p, ke, "P"))
                dst = &h->inram_paged_kb, bit = PW_POOLMON_HAS_INRAM_PAGED;
        } else {
            if (key_eq(p, ke, "Commit"))
                dst = &h->commit_kb, bit = PW_POOLMON_HAS_COMMIT;
            else if (key_eq(p, ke, "Limit"))
                dst = &h->commit_limit_kb, bit = PW_POOLMON_HAS_COMMIT_LIMIT;
            else if (key_eq(p, ke, "Peak"))
                dst = &h->commit_peak_kb, bit = PW_POOLMON_HAS_COMMIT_PEAK;
            else if (key_eq(p, ke, "Pool N"))
                dst = &h->pool_nonpaged_kb, bit = PW_POOLMON_HAS_POOL_NONPAGED;
            else if (key_eq(p, ke, "P"))
                dst = &h->pool_paged_kb, bit = PW_POOLMON_HAS_POOL_PAGED;
        }
        if (dst != NULL) { /* unknown fields of other poolmon versions are skipped */
            *dst = val;
            h->has |= bit;
        }
        p = v;
    }
    return 0;
}

static int parse_title(parser_t *P, const char *s, const char *e)
{
    int r = screen_for(P, R_TITLE);
    if (r != 0)
        return r;
    pw_poolmon_screen_t *sc = cur(P);
    sc->title = s;
    if (starts_with_ci(s, e, "All sessions")) {
        sc->session = PW_POOLMON_SESSION_ALL;
    } else if (starts_with_ci(s, e, "Session ")) {
        const char *p = skip_blanks(s + 8, e);
        int64_t id = 0;
        int any = 0;
        while (p < e && is_digit(*p) && id <= INT32_MAX) {
            id = id * 10 + (*p++ - '0');
            any = 1;
        }
        if (any && id <= INT32_MAX)
            sc->session = (int32_t)id;
        else
            sc->session = PW_POOLMON_SESSION_ALL; /* a session screen whose number is unreadable */
    }
    return 0;
}

/* `s` starts with the token "Tag": poolmon's column header or another tool's table. */
static int parse_column_header(parser_t *P, const char *s, const char *e)
{
    const char *t2 = skip_blanks(token_end(s, e), e);
    const char *t2e = token_end(t2, e);
    const char *t3 = skip_blanks(t2e, e);
    const char *t3e = token_end(t3, e);
    if (!token_eq_ci(t2, t2e, "Type") || !token_eq_ci(t3, t3e, "Allocs"))
        return fail(P, PW_ENOTPOOLMON, s, "columns",
                    "table header is not poolmon's 'Tag Type Allocs Frees Diff Bytes Per "
                    "Alloc'");
    int r = screen_for(P, R_COLHDR);
    if (r != 0)
        return r;
    pw_poolmon_screen_t *sc = cur(P);
    sc->has_column_header = 1;
    for (const char *p = t3e; p + 13 <= e; p++)
        if (starts_with_ci(p, e, "Mapped_Driver")) {
            sc->has_mapped_driver = 1;
            break;
        }
    return 0;
}

/* ---- time stamps ------------------------------------------------------------------------- */

/* Reads exactly 1..`max` digits. */
static int digits(const char **pp, const char *e, unsigned max, unsigned *out)
{
    const char *p = *pp;
    unsigned v = 0, n = 0;
    while (p < e && is_digit(*p) && n < max) {
        v = v * 10 + (unsigned)(*p++ - '0');
        n++;
    }
    if (n == 0 || (p < e && is_digit(*p)))
        return -1;
    *pp = p;
    *out = v;
    return 0;
}

/* hh:mm[:ss[.frac]] [AM|PM] [Z|UTC|+hh:mm|-hh:mm] up to e: *out = ms of day minus the UTC
 * offset (may be negative). Returns 0, or -1 when [p, e) is not a clock time. */
static int parse_clock(const char *p, const char *e, int64_t *out)
{
    unsigned hh, mm, ss = 0, ms = 0;
    if (digits(&p, e, 2, &hh) || p >= e || *p != ':')
        return -1;
    p++;
    if (digits(&p, e, 2, &mm))
        return -1;
    if (p < e && *p == ':') {
        p++;
        if (digits(&p, e, 2, &ss))
            return -1;
        if (p < e && (*p == '.' || *p == ',')) {
            p++;
            unsigned scale = 100, n = 0;
            while (p < e && is_digit(*p)) {
                if (n++ < 3) {
                    ms += (unsigned)(*p - '0') * scale;
                    scale /= 10;
                }
                p++;
            }
            if (n == 0)
                return -1;
        }
    }
    p = skip_blanks(p, e);
    if (e - p >= 2 && (starts_with_ci(p, e, "AM") || starts_with_ci(p, e, "PM"))) {
        if (hh < 1 || hh > 12)
            return -1;
        hh = (hh % 12) + (lower(*p) == 'p' ? 12 : 0);
        p = skip_blanks(p + 2, e);
    }
    int64_t off_ms = 0;
    if (p < e && (*p == 'Z' || *p == 'z')) {
        p++;
    } else if (starts_with_ci(p, e, "UTC")) {
        p += 3;
    } else if (p < e && (*p == '+' || *p == '-')) {
        int neg = *p == '-';
        unsigned oh, om = 0;
        p++;
        if (digits(&p, e, 2, &oh))
            return -1;
        if (p < e && *p == ':')
            p++;
        if (p < e && digits(&p, e, 2, &om))
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        off_ms = ((int64_t)oh * 60 + om) * 60000;
        if (neg)
            off_ms = -off_ms;
    }
    if (skip_blanks(p, e) != e || hh > 23 || mm > 59 || ss > 60)
        return -1;
    /* the offset is subtracted: 10:00+02:00 is 08:00Z */
    *out = (((int64_t)hh * 60 + mm) * 60 + ss) * 1000 + ms - off_ms;
    return 0;
}

/* date(1)'s default output in the C locale, "Tue Dec  1 16:59:17 UTC 2026" (coreutils and
 * busybox: "%a %b %e %H:%M:%S %Z %Y"). Returns 1 with *out set, 0 when not that shape, -1 when
 * it is but the zone is a name other than UTC/GMT (its offset is not in the line). */
static int parse_date1(const char *p, const char *e, uint64_t *out)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const char *we = token_end(p, e);
    if (we - p != 3 || is_digit(*p))
        return 0;
    p = skip_blanks(we, e);
    we = token_end(p, e);
    if (we - p != 3)
        return 0;
    unsigned mo = 0;
    for (unsigned i = 0; i < 12 && mo == 0; i++)
        if (starts_with_ci(p, we, (char[]){months[3 * i], months[3 * i + 1], months[3 * i + 2], 0}))
            mo = i + 1;
    if (mo == 0)
        return 0;
    p = skip_blanks(we, e);
    unsigned d, y;
    if (digits(&p, e, 2, &d) || p >= e || !is_blank(*p))
        return 0;
    p = skip_blanks(p, e);
    const char *clock = p;
    const char *ce = token_end(p, e);
    p = skip_blanks(ce, e);
    const char *zone = p, *ze = token_end(p, e);
    p = skip_blanks(ze, e);
    if (digits(&p, e, 4, &y) || skip_blanks(p, e) != e || y < 1970 || d < 1 || d > 31)
        return 0;
    int64_t tod;
    if (parse_clock(clock, ce, &tod) != 0)
        return 0;
    int64_t off = 0;
    if (token_eq_ci(zone, ze, "UTC") || token_eq_ci(zone, ze, "GMT") ||
        token_eq_ci(zone, ze, "Z")) {
        off = 0;
    } else if (ze - zone == 5 && (*zone == '+' || *zone == '-')) {
        unsigned hm;
        const char *z = zone + 1;
        if (digits(&z, ze, 4, &hm) || hm / 100 > 23 || hm % 100 > 59)
            return 0;
        off = ((int64_t)(hm / 100) * 60 + hm % 100) * 60000;
        if (*zone == '-')
            off = -off;
    } else {
        return -1;
    }
    int64_t t = pw_clock_days_from_civil((int64_t)y, mo, d) * 86400000 + tod - off;
    if (t < 0)
        return 0;
    *out = (uint64_t)t;
    return 1;
}

/* A line that is only a date-time (see poolmon_text.h). Returns 1 with *out set, 0 when not
 * a time, -1 for date(1) output with a zone name it cannot place. */
static int parse_timestamp(const char *s, const char *e, uint64_t *out)
{
    const char *p = s;
    unsigned y, mo, d;
    if (e - p < 10)
        return 0;
    int r1 = parse_date1(p, e, out);
    if (r1 != 0)
        return r1;
    if (is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && p[4] == '-') {
        if (digits(&p, e, 4, &y) || *p++ != '-' || digits(&p, e, 2, &mo) || p >= e || *p++ != '-' ||
            digits(&p, e, 2, &d))
            return 0;
        if (p >= e || (*p != 'T' && *p != 't' && !is_blank(*p)))
            return 0;
        p = skip_blanks(p + 1, e);
    } else {
        /* cmd's en-US %date%: [Ddd ]MM/DD/YYYY */
        if (!is_digit(*p)) {
            const char *we = token_end(p, e);
            if (we - p != 3)
                return 0;
            p = skip_blanks(we, e);
        }
        if (digits(&p, e, 2, &mo) || p >= e || *p++ != '/' || digits(&p, e, 2, &d) || p >= e ||
            *p++ != '/' || digits(&p, e, 4, &y) || p >= e || !is_blank(*p))
            return 0;
        p = skip_blanks(p, e);
    }
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    int64_t tod;
    if (parse_clock(p, e, &tod) != 0)
        return 0;
    int64_t t = pw_clock_days_from_civil((int64_t)y, mo, d) * 86400000 + tod;
    if (t < 0)
        return 0;
    *out = (uint64_t)t;
    return 1;
}

/* ---- lines ------------------------------------------------------------------------------- */

static int only_chars(const char *p, const char *e, char c, int min)
{
    int n = 0;
    for (; p < e; p++) {
        if (*p == c)
            n++;
        else if (!is_blank(*p))
            return 0;
    }
    return n >= min;
}

/* A row's start and nothing more: its tag (up to 4 bytes), maybe the start of its type word
 * ("N", "Nonp", "Pag"), no number: what the last line of a file cut inside a row name holds. */
static int row_start(const char *s, const char *e)
{
    const char *t = token_end(s, e);
    if (t - s > 4)
        return 0;
    const char *u = skip_blanks(t, e);
    if (u >= e)
        return 1;
    const char *ue = token_end(u, e);
    if (ue != e)
        return 0;
    static const char *const words[] = {"Nonpaged", "Paged"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = (size_t)(ue - u), k = 0;
        while (k < n && words[i][k] != '\0' && lower(u[k]) == lower(words[i][k]))
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

static int handle_line(parser_t *P, char *line, size_t len)
{
    char *e = line + len;
    while (e > line && is_blank(e[-1]))
        e--;
    *e = '\0';
    const char *s = skip_blanks(line, e);
    if (s == e)
        return 0;
    if (P->first_nonblank == 0)
        P->first_nonblank = P->line;

    int r = try_row(P, s, e);
    if (r != 0)
        return r < 0 ? r : 0;
    uint8_t btag[4];
    const char *ws, *we;
    if (P->skip && P->open && (cur(P)->n_rows > 0 || cur(P)->has_column_header) &&
        bad_type_row(s, e, btag, &ws, &we)) {
        char msg[120];
        snprintf(msg, sizeof(msg), "pool type '%.*s' is not Paged, Nonp or Nonpaged",
                 (int)(we - ws > 16 ? 16 : we - ws), ws);
        if ((r = screen_for(P, R_ROW)) != 0 ||
            (r = add_problem(P, PW_POOLMON_BAD_TYPE, P->doc->n_screens - 1, btag, -1, 0, msg)) != 0)
            return r;
        mark_incomplete(P, P->doc->n_screens - 1);
        return 0;
    }

    /* markdown artefacts: "## Tag Type ...", "| Tag | ..." */
    const char *s2 = s;
    while (s2 < e && *s2 == '#')
        s2++;
    s2 = (s2 > s && s2 < e && is_blank(*s2)) ? skip_blanks(s2, e) : s;

    if (starts_with_ci(s2, e, "Memory:"))
        return parse_header(P, s2, e, R_MEM);
    if (starts_with_ci(s2, e, "Commit:"))
        return parse_header(P, s2, e, R_COMMIT);
    if (e - s2 >= 16 && starts_with_ci(e - 16, e, "pool information") && e - s2 <= 80)
        return parse_title(P, s2, e);
    const char *t = s2;
    if (t < e && *t == '|')
        t = skip_blanks(t + 1, e);
    const char *te = t;
    while (te < e && !is_blank(*te) && *te != '|')
        te++;
    if (te - t == 3 && starts_with_ci(t, te, "Tag"))
        return parse_column_header(P, t, e);
    uint64_t ts;
    if (parse_timestamp(s2, e, &ts) == 1) {
        P->pending_ts = 1;
        P->pending_ms = ts;
        P->open = 0; /* whatever follows belongs to the next screen */
        tentative_drop(P);
        return 0;
    }
    if (only_chars(s, e, '.', 3)) {
        if (P->open)
            cur(P)->elided = 1;
        return 0;
    }
    if (only_chars(s, e, '-', 3) || only_chars(s, e, '=', 3))
        return 0;
    /* the file ends inside a row's name, as it may inside its numbers: cut, not noise (an
     * import leaves it out and says so; parse stays strict) */
    if (!P->terminated && P->open && P->doc->n_screens > 0 && cur(P)->n_rows > 0 && row_start(s, e))
        return fail(P, PW_ETRUNCATED, e, "tag", "the file ends inside a row, after its tag");
    if (P->skip && P->open && P->last_rank == R_ROW && cur(P)->n_rows > 0) {
        /* after the screen's rows: a row that cannot be read if another row of this screen
         * follows, else noise between screens (tentative_keep / tentative_drop) */
        if (P->tent_n == 0) {
            P->tent_from = P->doc->n_problems;
            P->tent_first = P->line;
        }
        P->tent_n++;
        return add_problem(P, PW_POOLMON_NOT_A_ROW, P->doc->n_screens - 1, NULL, -1, 0,
                           "not a pool tag row (between the rows of one screen)");
    }
    P->doc->ignored_lines++;
    if (P->doc->first_ignored_line == 0)
        P->doc->first_ignored_line = P->line;
    return 0;
}

/* ---- decoding ---------------------------------------------------------------------------- */

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes into a new NUL-terminated buffer (*out, *out_len). Unpaired surrogates become
 * U+FFFD. */
static int decode(const unsigned char *d, size_t len, pw_poolmon_doc_t *doc, char **out,
                  size_t *out_len, pw_diag_t *diag)
{
    int be = 0;
    if (len >= 2 && ((d[0] == 0xFF && d[1] == 0xFE) || (d[0] == 0xFE && d[1] == 0xFF))) {
        be = d[0] == 0xFE;
        doc->encoding = be ? PW_POOLMON_ENC_UTF16BE : PW_POOLMON_ENC_UTF16LE;
        if (len % 2)
            return pw_diag_set(diag, PW_ETRUNCATED, 0, len - 1, "encoding",
                               "UTF-16 input has an odd number of bytes (cut in a character)");
        size_t units = (len - 2) / 2;
        char *o = pw_malloc(units * 3 + 1);
        if (o == NULL)
            return pw_diag_set(diag, PW_ENOMEM, 0, 0, "", "out of memory");
        size_t n = 0;
        const unsigned char *p = d + 2;
        for (size_t i = 0; i < units; i++) {
            uint32_t u = be ? ((uint32_t)p[2 * i] << 8 | p[2 * i + 1])
                            : ((uint32_t)p[2 * i + 1] << 8 | p[2 * i]);
            if (u >= 0xD800 && u <= 0xDBFF && i + 1 < units) {
                uint32_t u2 = be ? ((uint32_t)p[2 * i + 2] << 8 | p[2 * i + 3])
                                 : ((uint32_t)p[2 * i + 3] << 8 | p[2 * i + 2]);
                if (u2 >= 0xDC00 && u2 <= 0xDFFF) {
                    n += put_utf8(o + n, 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00));
                    i++;
                    continue;
                }
            }
            if (u >= 0xD800 && u <= 0xDFFF)
                u = 0xFFFD;
            n += put_utf8(o + n, u);
        }
        o[n] = '\0';
        *out = o;
        *out_len = n;
        return 0;
    }
    size_t skip = 0;
    if (len >= 3 && d[0] == 0xEF && d[1] == 0xBB && d[2] == 0xBF) {
        skip = 3;
        doc->encoding = PW_POOLMON_ENC_UTF8_BOM;
    }
    char *o = pw_malloc(len - skip + 1);
    if (o == NULL)
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "", "out of memory");
    if (len > skip)
        memcpy(o, d + skip, len - skip);
    o[len - skip] = '\0';
    *out = o;
    *out_len = len - skip;
    return 0;
}

/* ---- public ------------------------------------------------------------------------------ */

int pw_poolmon_parse(const char *data, size_t len, const pw_poolmon_opts_t *opts,
                     pw_poolmon_doc_t *out, pw_diag_t *diag)
{
    if (out == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no output document");
    memset(out, 0, sizeof(*out));
    if (data == NULL && len > 0)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no input");
    static const pw_poolmon_opts_t defaults;
    if (opts == NULL)
        opts = &defaults;
    size_t max_in = opts->max_input_bytes ? opts->max_input_bytes : PW_POOLMON_MAX_INPUT_DEFAULT;
    if (len > max_in)
        return pw_diag_set(diag, PW_ETOOBIG, 0, max_in, "input",
                           "input of %zu bytes exceeds the limit of %zu bytes", len, max_in);

    char *text = NULL;
    size_t tlen = 0;
    int r = decode((const unsigned char *)data, len, out, &text, &tlen, diag);
    if (r != 0)
        return r;
    out->text_ = text;

    parser_t P;
    memset(&P, 0, sizeof(P));
    P.doc = out;
    P.diag = diag;
    P.text = text;
    P.max_line = opts->max_line_bytes ? opts->max_line_bytes : PW_POOLMON_MAX_LINE_DEFAULT;
    P.start_ms = opts->start_ms;
    P.interval_ms = opts->interval_ms ? opts->interval_ms : PW_POOLMON_INTERVAL_DEFAULT_MS;
    P.skip = opts->skip_bad_rows != 0;

    size_t pos = 0;
    while (pos < tlen) {
        char *line = text + pos;
        char *nl = memchr(line, '\n', tlen - pos);
        size_t n = nl ? (size_t)(nl - line) : tlen - pos;
        P.line = ++out->lines;
        P.offset = pos;
        P.terminated = nl != NULL;
        if (n > P.max_line) {
            r = pw_diag_set(diag, PW_ETOOBIG, P.line, pos, "line",
                            "line longer than the limit of %zu bytes", P.max_line);
            goto fail;
        }
        if (n > 0 && line[n - 1] == '\r') {
            out->crlf = 1;
            n--;
        }
        if (memchr(line, '\0', n) != NULL) {
            r = pw_diag_set(diag, PW_EPARSE, P.line, pos, "encoding",
                            "NUL byte in the text (UTF-16 without a byte-order mark?)");
            goto fail;
        }
        line[n] = '\0';
        if ((r = handle_line(&P, line, n)) < 0) {
            if (r == PW_ETRUNCATED && !P.terminated && opts->allow_cut_last_line) {
                out->cut_line = P.line; /* rows are appended whole: nothing of it is kept */
                pw_diag_clear(diag);
                break;
            }
            goto fail;
        }
        pos += (nl ? (size_t)(nl - line) + 1 : tlen - pos);
    }
    tentative_drop(&P);
    pw_free(P.hkeys);
    pw_free(P.hlines);
    P.hkeys = NULL, P.hlines = NULL;
    if (out->n_screens == 0) {
        uint32_t at = P.first_nonblank ? P.first_nonblank : 1;
        r = pw_diag_set(diag, PW_ENOTPOOLMON, at, 0, "",
                        "no poolmon screen (header, column header or row) found");
        goto fail;
    }
    return 0;
fail:
    pw_free(P.hkeys);
    pw_free(P.hlines);
    pw_poolmon_doc_close(out);
    return r;
}

int pw_poolmon_last_screen_partial(const pw_poolmon_doc_t *doc, size_t *rows, size_t *rows_before)
{
    if (doc == NULL || doc->n_screens < 2)
        return 0;
    const pw_poolmon_screen_t *last = &doc->screens[doc->n_screens - 1];
    if (last->n_rows == 0 || last->elided)
        return 0;
    for (size_t i = doc->n_screens - 1; i-- > 0;) {
        const pw_poolmon_screen_t *b = &doc->screens[i];
        int same = (b->title == NULL && last->title == NULL) ||
                   (b->title != NULL && last->title != NULL && strcmp(b->title, last->title) == 0);
        if (!same)
            continue;
        if (b->n_rows <= last->n_rows)
            return 0;
        if (rows != NULL)
            *rows = last->n_rows;
        if (rows_before != NULL)
            *rows_before = b->n_rows;
        return 1;
    }
    return 0;
}

void pw_poolmon_doc_close(pw_poolmon_doc_t *doc)
{
    if (doc == NULL)
        return;
    for (size_t i = 0; i < doc->n_screens; i++)
        pw_free(doc->screens[i].rows);
    pw_free(doc->screens);
    pw_free(doc->problems);
    pw_free(doc->text_);
    memset(doc, 0, sizeof(*doc));
}

/* KiB -> bytes, saturating (a hostile header must not wrap to a small total). */
static uint64_t kib(uint64_t kb)
{
    return kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
}

int pw_poolmon_screen_to_sample(const pw_poolmon_screen_t *screen, pw_sample_t *out)
{
    for (size_t i = 0; i < screen->n_rows; i++) {
        const pw_poolmon_row_t *row = &screen->rows[i];
        pw_pool_t pool = row->pool == PW_POOL_NONPAGED ? PW_POOL_NONPAGED : PW_POOL_PAGED;
        int r;
        if (pool == PW_POOL_PAGED && screen->session != PW_POOLMON_SESSION_NONE)
            /* "Session N pool information": that session's rows; "All sessions": the sum. */
            r = pw_sample_add_session(
                out, row->tag, screen->session >= 0 ? (uint32_t)screen->session : PW_SESSION_ALL,
                row->allocs, row->frees, row->diff, row->bytes);
        else
            r = pw_sample_add(out, row->tag, 4, pool, row->allocs, row->frees, row->diff,
                              row->bytes);
        if (r != 0)
            return r;
    }
    const pw_poolmon_header_t *h = &screen->header;
    pw_totals_t *t = &out->totals;
    /* A screen saved without its header (or with only some lines of it) still shows pool in
     * use: the rows' sum, a lower bound when the screen was filtered (/i, /x). */
    uint64_t sum[2] = {0, 0};
    for (size_t i = 0; i < screen->n_rows; i++) {
        const pw_poolmon_row_t *row = &screen->rows[i];
        int np = row->pool == PW_POOL_NONPAGED;
        sum[np] = sum[np] + row->bytes < sum[np] ? UINT64_MAX : sum[np] + row->bytes;
    }
    if (h->has & PW_POOLMON_HAS_POOL_PAGED)
        t->paged_bytes = kib(h->pool_paged_kb);
    else if (screen->session == PW_POOLMON_SESSION_NONE)
        t->paged_bytes = sum[0];
    if (h->has & PW_POOLMON_HAS_POOL_NONPAGED)
        t->nonpaged_bytes = kib(h->pool_nonpaged_kb);
    else if (screen->session == PW_POOLMON_SESSION_NONE)
        t->nonpaged_bytes = sum[1];
    if (h->has & PW_POOLMON_HAS_MEMORY)
        t->physical_memory_bytes = kib(h->memory_kb);
    if (h->has & PW_POOLMON_HAS_AVAIL)
        t->available_bytes = kib(h->avail_kb);
    if (h->has & PW_POOLMON_HAS_COMMIT)
        t->commit_bytes = kib(h->commit_kb);
    if (h->has & PW_POOLMON_HAS_COMMIT_LIMIT)
        t->commit_limit_bytes = kib(h->commit_limit_kb);
    if (h->has & PW_POOLMON_HAS_COMMIT_PEAK)
        t->commit_peak_bytes = kib(h->commit_peak_kb);
    out->timestamp_ms = screen->timestamp_ms;
    return 0;
}

const char *pw_poolmon_type_name(int pool)
{
    return pool == PW_POOL_NONPAGED ? "nonpaged" : pool == PW_POOL_PAGED ? "paged" : "?";
}

int pw_poolmon_parse_time(const char *line, size_t len, uint64_t *out_ms)
{
    const char *e = line + len;
    while (e > line && (is_blank(e[-1]) || e[-1] == '\r'))
        e--;
    return parse_timestamp(skip_blanks(line, e), e, out_ms);
}
