/* slabinfo_text.c: /proc/slabinfo text parser (see slabinfo_text.h for the formats).
 *
 * One pass over physical lines. Each line is validated (UTF-8, no control bytes), unquoted
 * and stripped of syslog prefixes (lenient mode), then classified: version line, header
 * (or its continuation), record start (name words then numbers), record continuation, or
 * noise. A record stays "pending" until the next record, version line, header or the end, so
 * that continuation lines of a wrapped record can still join it. */
#include "slabinfo_text.h"
#include "alloc.h"
#include "buf.h"

#include <string.h>

#define MAX_BASE     8  /* numbers before the first ':' */
#define MAX_SECTIONS 6  /* ':' sections per record */
#define MAX_NAME_W   4  /* words of a cache name ("file lock cache" has 3) */
#define MAX_TOKENS   96 /* tokens of one physical line that a row may have */

enum {
    F_IGNORE = -1,
    F_ACTIVE_OBJS,
    F_NUM_OBJS,
    F_OBJSIZE,
    F_OBJPERSLAB,
    F_PAGESPERSLAB,
    F_ACTIVE_SLABS,
    F_NUM_SLABS,
    F__COUNT
};

static const char *const field_names[F__COUNT] = {
    "active_objs", "num_objs", "objsize", "objperslab", "pagesperslab", "active_slabs", "num_slabs",
};

static const uint32_t field_bits[F__COUNT] = {
    PW_SLAB_HAS_ACTIVE_OBJS, PW_SLAB_HAS_NUM_OBJS,     PW_SLAB_HAS_OBJSIZE,
    PW_SLAB_HAS_OBJPERSLAB,  PW_SLAB_HAS_PAGESPERSLAB, PW_SLAB_HAS_ACTIVE_SLABS,
    PW_SLAB_HAS_NUM_SLABS,
};

/* Section kinds: labeled in 2.x, positional in 1.1. */
enum { S_UNLABELED = 0, S_TUNABLES, S_SLABDATA, S_GLOBALSTAT, S_CPUSTAT, S_STATS11, S_OTHER };

static const char *const section_names[] = {"section", "tunables", "slabdata", "globalstat",
                                            "cpustat", "stats",    "section"};

enum { T_NUM, T_COLON, T_WORD };

typedef struct {
    const char *p;
    size_t n;
    int kind;
    int overflow; /* T_NUM above 2^64-1 */
    uint64_t val;
} tok_t;

typedef struct {
    int kind;
    int n;
    uint64_t v[PW_SLABINFO_MAX_SECTION];
} sect_t;

typedef struct {
    int active;
    uint32_t line;
    uint64_t off;
    const char *name;
    size_t name_len;
    uint64_t base[MAX_BASE];
    int n_base;
    sect_t sec[MAX_SECTIONS];
    int n_sec;
    int label_next; /* the previous token was ':' */
    int wrapped;
} rec_t;

typedef struct {
    int kind;
    int count;
} hsect_t;

typedef struct {
    const pw_slabinfo_opts_t *opts;
    pw_diag_t *diag;
    pw_slabinfo_doc_t *doc;
    size_t max_caches;
    size_t cap_caches, cap_blocks;
    pw_buf_t names;
    /* current block */
    int in_block;
    int block_has_rows;
    int layout;
    uint32_t bflags;
    int base_map[MAX_BASE];
    int n_base_hdr; /* columns the header named, 0 = default map */
    hsect_t hsec[MAX_SECTIONS];
    int n_hsec;
    int header_open;
    int header_label_next;
    int saw_anything;
    rec_t rec;
    uint32_t line;
    uint64_t line_off;
} parser_t;

/* ---- small helpers ------------------------------------------------------------------------ */

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Validates one line: UTF-8, no control bytes but tab. Returns the offset of the first bad
 * byte or (size_t)-1 when valid. The ASCII fast path keeps the whole parse near memchr speed. */
static size_t validate_text(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return i;
        i += len;
    }
    return (size_t)-1;
}

static const char *skip_space(const char *s, const char *e)
{
    while (s < e && is_space(*s))
        s++;
    return s;
}

static const char *skip_token(const char *s, const char *e)
{
    while (s < e && !is_space(*s))
        s++;
    return s;
}

/* Mail quoting: any run of '>' with blanks around them ("> ", ">> ", "> >   "). */
static const char *strip_quotes(const char *s, const char *e)
{
    for (;;) {
        s = skip_space(s, e);
        if (s < e && *s == '>')
            s++;
        else
            return s;
    }
}

static int is_month(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int i = 0; i < 12; i++)
        if (memcmp(s, months + 3 * i, 3) == 0)
            return 1;
    return 0;
}

/* After a syslog time stamp: "HOST: ", or "HOST TAG: " where TAG ends with ':' (kernel:,
 * kernel[1]:). A host that ends with ':' ends the prefix (case29 "HOST01: "). */
static const char *skip_host_tag(const char *s, const char *e)
{
    s = skip_space(s, e);
    const char *h = skip_token(s, e);
    if (h == s)
        return s;
    if (h[-1] == ':')
        return skip_space(h, e);
    const char *t0 = skip_space(h, e);
    const char *t = skip_token(t0, e);
    if (t > t0 && t[-1] == ':')
        return skip_space(t, e);
    return skip_space(h, e);
}

/* Syslog ("Dec  8 22:44:18 host kernel: "), ISO ("2024-01-02T03:04:05+00:00 host kernel: ")
 * and dmesg ("[  12.345678] ") prefixes. */
static const char *strip_syslog(const char *s, const char *e)
{
    if (e - s >= 15 && is_month(s) && s[3] == ' ') {
        const char *p = skip_space(s + 3, e);
        int d = 0;
        while (p < e && is_digit(*p) && d < 3)
            p++, d++;
        if (d >= 1 && d <= 2 && e - p >= 9 && p[0] == ' ' && is_digit(p[1]) && is_digit(p[2]) &&
            p[3] == ':' && is_digit(p[4]) && is_digit(p[5]) && p[6] == ':' && is_digit(p[7]) &&
            is_digit(p[8])) {
            p = skip_token(p + 1, e); /* time, with any fraction */
            s = skip_host_tag(p, e);
        }
    } else if (e - s >= 20 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) &&
               is_digit(s[3]) && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':') {
        s = skip_host_tag(skip_token(s, e), e);
    }
    if (s < e && *s == '[') {
        const char *p = skip_space(s + 1, e);
        const char *q = p;
        while (q < e && (is_digit(*q) || *q == '.'))
            q++;
        if (q > p && q < e && *q == ']')
            s = skip_space(q + 1, e);
    }
    return s;
}

/* Splits [s, e) into tokens. Returns the count, or -1 when there are more than `max`. */
static int tokenize(const char *s, const char *e, tok_t *toks, int max)
{
    int n = 0;
    for (;;) {
        s = skip_space(s, e);
        if (s >= e)
            return n;
        if (n == max)
            return -1;
        const char *t = skip_token(s, e);
        tok_t *k = &toks[n++];
        k->p = s;
        k->n = (size_t)(t - s);
        k->overflow = 0;
        k->val = 0;
        if (k->n == 1 && *s == ':') {
            k->kind = T_COLON;
        } else if (is_digit(*s)) {
            k->kind = T_NUM;
            for (const char *q = s; q < t; q++) {
                if (!is_digit(*q)) {
                    k->kind = T_WORD;
                    break;
                }
                uint64_t d = (uint64_t)(*q - '0');
                if (k->val > (UINT64_MAX - d) / 10)
                    k->overflow = 1;
                else
                    k->val = k->val * 10 + d;
            }
        } else {
            k->kind = T_WORD;
        }
        s = t;
    }
}

static int tok_is(const tok_t *t, const char *word)
{
    size_t n = strlen(word);
    return t->n == n && memcmp(t->p, word, n) == 0;
}

static int section_kind(const char *p, size_t n)
{
    static const struct {
        const char *name;
        int kind;
    } labels[] = {{"tunables", S_TUNABLES},
                  {"slabdata", S_SLABDATA},
                  {"globalstat", S_GLOBALSTAT},
                  {"cpustat", S_CPUSTAT}};
    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
        if (strlen(labels[i].name) == n && memcmp(labels[i].name, p, n) == 0)
            return labels[i].kind;
    return S_OTHER;
}

static uint64_t off_of(const parser_t *ps, const char *p, const char *line_start)
{
    return ps->line_off + (uint64_t)(p - line_start);
}

/* ---- blocks and layout -------------------------------------------------------------------- */

static void default_map(parser_t *ps, int layout)
{
    static const int v1[] = {F_ACTIVE_OBJS,  F_NUM_OBJS,  F_OBJSIZE,
                             F_ACTIVE_SLABS, F_NUM_SLABS, F_PAGESPERSLAB};
    static const int v2[] = {F_ACTIVE_OBJS, F_NUM_OBJS, F_OBJSIZE, F_OBJPERSLAB, F_PAGESPERSLAB};
    for (int i = 0; i < MAX_BASE; i++)
        ps->base_map[i] = F_IGNORE;
    if (layout == PW_SLABINFO_LAYOUT_V1)
        memcpy(ps->base_map, v1, sizeof(v1));
    else
        memcpy(ps->base_map, v2, sizeof(v2));
}

/* Numbers a row of the current layout has before its first ':'. */
static int base_count(const parser_t *ps)
{
    if (ps->layout == PW_SLABINFO_LAYOUT_V1)
        return 6;
    return ps->n_base_hdr > 5 ? ps->n_base_hdr : 5;
}

static int set_layout(parser_t *ps, int layout)
{
    ps->layout = layout;
    if (ps->n_base_hdr == 0)
        default_map(ps, layout);
    if (ps->doc->n_blocks > 0)
        ps->doc->blocks[ps->doc->n_blocks - 1].layout = (pw_slabinfo_layout_t)layout;
    return 0;
}

static int new_block(parser_t *ps, const char *version, size_t vlen, uint32_t flags)
{
    pw_slabinfo_doc_t *doc = ps->doc;
    if (doc->n_blocks == ps->cap_blocks) {
        /* Blocks without caches are allowed, but no more of them than of caches. */
        if (doc->n_blocks > ps->max_caches)
            return pw_diag_set(ps->diag, PW_ETOOBIG, ps->line, ps->line_off, "version",
                               "more than %zu slabinfo dumps", ps->max_caches);
        size_t ncap = ps->cap_blocks ? ps->cap_blocks * 2 : 4;
        if (ncap > ps->max_caches + 1)
            ncap = ps->max_caches + 1;
        pw_slabinfo_block_t *nb = pw_realloc(doc->blocks, ncap * sizeof(*nb));
        if (nb == NULL)
            return PW_ENOMEM;
        doc->blocks = nb;
        ps->cap_blocks = ncap;
    }
    pw_slabinfo_block_t *b = &doc->blocks[doc->n_blocks++];
    memset(b, 0, sizeof(*b));
    if (vlen >= sizeof(b->version))
        vlen = sizeof(b->version) - 1;
    memcpy(b->version, version, vlen);
    b->flags = flags;
    b->line = ps->line;
    b->first_cache = doc->n_caches;
    ps->in_block = 1;
    ps->block_has_rows = 0;
    ps->bflags = flags;
    ps->n_base_hdr = 0;
    ps->n_hsec = 0;
    ps->header_open = 0;
    ps->layout = PW_SLABINFO_LAYOUT_UNKNOWN;
    default_map(ps, PW_SLABINFO_LAYOUT_V2);
    /* The version number is the weakest evidence: a header or the rows override it. */
    if (vlen > 0 && version[0] == '1')
        set_layout(ps, PW_SLABINFO_LAYOUT_V1);
    else if (vlen > 0 && version[0] == '2')
        set_layout(ps, PW_SLABINFO_LAYOUT_V2);
    return 0;
}

/* ---- records ------------------------------------------------------------------------------ */

/* Expected sections of a complete record in the current block: kinds and minimum counts. */
static int expected_sections(const parser_t *ps, hsect_t *out)
{
    int n = 0;
    if (ps->layout == PW_SLABINFO_LAYOUT_V1) {
        if (ps->bflags & PW_SLABINFO_STATISTICS)
            out[n++] = (hsect_t){S_STATS11, 5};
        if (ps->bflags & PW_SLABINFO_SMP)
            out[n++] = (hsect_t){S_TUNABLES, 2};
        if ((ps->bflags & PW_SLABINFO_STATISTICS) && (ps->bflags & PW_SLABINFO_SMP))
            out[n++] = (hsect_t){S_CPUSTAT, 4};
        return n;
    }
    if (ps->n_hsec > 0) {
        for (int i = 0; i < ps->n_hsec; i++)
            if (ps->hsec[i].kind != S_OTHER && ps->hsec[i].count > 0)
                out[n++] = ps->hsec[i];
        return n;
    }
    out[n++] = (hsect_t){S_TUNABLES, 3};
    out[n++] = (hsect_t){S_SLABDATA, 3};
    return n;
}

/* Kind of the i-th section of a record: its label in 2.x, its position in 1.1 (by the
 * version flags, or by its count when the version line said nothing). */
static int record_section_kind(const parser_t *ps, const rec_t *r, int i)
{
    const sect_t *s = &r->sec[i];
    if (s->kind != S_UNLABELED)
        return s->kind;
    if (ps->layout != PW_SLABINFO_LAYOUT_V1)
        return S_OTHER;
    hsect_t exp[MAX_SECTIONS];
    int n = expected_sections(ps, exp);
    if (n > 0)
        return i < n ? exp[i].kind : S_OTHER;
    switch (s->n) {
    case 5:
        return S_STATS11;
    case 2:
        return S_TUNABLES;
    case 4:
        return S_CPUSTAT;
    default:
        return S_OTHER;
    }
}

static int record_complete(const parser_t *ps, const rec_t *r)
{
    if (r->n_base < base_count(ps))
        return 0;
    hsect_t exp[MAX_SECTIONS];
    int n = expected_sections(ps, exp);
    for (int k = 0; k < n; k++) {
        int found = 0;
        for (int i = 0; i < r->n_sec; i++)
            if (record_section_kind(ps, r, i) == exp[k].kind) {
                found = 1;
                if (r->sec[i].n < exp[k].count)
                    return 0;
            }
        if (!found)
            return 0;
    }
    return 1;
}

enum { FEED_OK = 0, FEED_NOT_ROW = 1 };

/* Feeds tokens into a record. Returns FEED_OK, FEED_NOT_ROW (a word where numbers belong, too
 * many numbers or sections: the line is noise in lenient mode) or a negative error. */
static int rec_feed(parser_t *ps, rec_t *r, const tok_t *t, int n, const char *line_start)
{
    int nb = ps->layout == PW_SLABINFO_LAYOUT_UNKNOWN ? 6 : base_count(ps);
    for (int i = 0; i < n; i++) {
        if (t[i].kind == T_COLON) {
            if (r->n_sec == MAX_SECTIONS || r->label_next)
                return FEED_NOT_ROW;
            memset(&r->sec[r->n_sec++], 0, sizeof(sect_t));
            r->label_next = 1;
            continue;
        }
        if (t[i].kind == T_WORD) {
            if (!r->label_next)
                return FEED_NOT_ROW;
            r->sec[r->n_sec - 1].kind = section_kind(t[i].p, t[i].n);
            r->label_next = 0;
            continue;
        }
        r->label_next = 0;
        const char *fname = "number";
        if (r->n_sec == 0) {
            if (r->n_base >= nb)
                return FEED_NOT_ROW;
            int f = ps->base_map[r->n_base];
            fname = f >= 0 ? field_names[f] : "column";
        } else {
            sect_t *s = &r->sec[r->n_sec - 1];
            fname = section_names[s->kind];
            if (s->n == PW_SLABINFO_MAX_SECTION)
                return pw_diag_set(ps->diag, PW_EPARSE, ps->line, off_of(ps, t[i].p, line_start),
                                   fname, "more than %d values in one ':' section",
                                   PW_SLABINFO_MAX_SECTION);
        }
        if (t[i].overflow)
            return pw_diag_set(ps->diag, PW_ERANGE, ps->line, off_of(ps, t[i].p, line_start), fname,
                               "number %.*s is above 2^64-1", (int)(t[i].n > 40 ? 40 : t[i].n),
                               t[i].p);
        if (r->n_sec == 0)
            r->base[r->n_base++] = t[i].val;
        else
            r->sec[r->n_sec - 1].v[r->sec[r->n_sec - 1].n++] = t[i].val;
    }
    return FEED_OK;
}

static int push_cache(parser_t *ps, const pw_slab_cache_t *c, const char *name, size_t name_len)
{
    pw_slabinfo_doc_t *doc = ps->doc;
    if (doc->n_caches == ps->max_caches)
        return pw_diag_set(ps->diag, PW_ETOOBIG, c->line, ps->line_off, "name",
                           "more than %zu caches", ps->max_caches);
    if (doc->n_caches == ps->cap_caches) {
        size_t ncap = ps->cap_caches ? ps->cap_caches * 2 : 128;
        if (ncap > ps->max_caches)
            ncap = ps->max_caches;
        pw_slab_cache_t *nc = pw_realloc(doc->caches, ncap * sizeof(*nc));
        if (nc == NULL)
            return PW_ENOMEM;
        doc->caches = nc;
        ps->cap_caches = ncap;
    }
    /* The name's offset rides in `name` until the end, when the storage stops moving. */
    size_t off = ps->names.len;
    int r = pw_buf_append(&ps->names, name, name_len);
    if (r == 0)
        r = pw_buf_append(&ps->names, "", 1);
    if (r != 0)
        return r == PW_ENOMEM ? r
                              : pw_diag_set(ps->diag, PW_ETOOBIG, c->line, 0, "name",
                                            "cache names exceed the size limit");
    pw_slab_cache_t *dst = &doc->caches[doc->n_caches++];
    *dst = *c;
    dst->name = (const char *)(uintptr_t)off;
    doc->blocks[doc->n_blocks - 1].n_caches++;
    if (dst->partial)
        doc->n_partial++;
    return 0;
}

static void skip_line(parser_t *ps, uint32_t line)
{
    if (ps->doc->first_skipped == 0)
        ps->doc->first_skipped = line;
    ps->doc->n_skipped_lines++;
}

/* Turns the pending record into a cache. */
static int rec_finish(parser_t *ps)
{
    rec_t *r = &ps->rec;
    if (!r->active)
        return 0;
    r->active = 0;
    int complete = record_complete(ps, r);
    if (r->n_base < 3) {
        /* Not even name, active, num and size: not a cache, whatever it looked like. */
        if (ps->opts->strict)
            return pw_diag_set(ps->diag, PW_EPARSE, r->line, r->off, field_names[r->n_base],
                               "row '%.*s' has only %d number(s)", (int)r->name_len, r->name,
                               r->n_base);
        skip_line(ps, r->line);
        return 0;
    }
    if (ps->opts->strict && !complete)
        return pw_diag_set(ps->diag, PW_EPARSE, r->line, r->off, "row",
                           "row '%.*s' is incomplete for slabinfo %s", (int)r->name_len, r->name,
                           pw_slabinfo_layout_name((pw_slabinfo_layout_t)ps->layout));
    if (r->name_len > PW_SLABINFO_MAX_NAME)
        return pw_diag_set(ps->diag, PW_ETOOBIG, r->line, r->off, "name",
                           "cache name of %zu bytes (limit %d)", r->name_len, PW_SLABINFO_MAX_NAME);
    pw_slab_cache_t c;
    memset(&c, 0, sizeof(c));
    c.name_len = (uint32_t)r->name_len;
    c.line = r->line;
    c.block = (uint32_t)(ps->doc->n_blocks - 1);
    c.partial = !complete;
    if (r->wrapped)
        c.flags |= PW_SLAB_WRAPPED;
    uint64_t *fields[F__COUNT] = {&c.active_objs,  &c.num_objs,     &c.objsize,  &c.objperslab,
                                  &c.pagesperslab, &c.active_slabs, &c.num_slabs};
    for (int i = 0; i < r->n_base; i++) {
        int f = ps->base_map[i];
        if (f < 0)
            continue;
        *fields[f] = r->base[i];
        c.present |= field_bits[f];
    }
    hsect_t exp[MAX_SECTIONS];
    int n_exp = expected_sections(ps, exp);
    for (int i = 0; i < r->n_sec; i++) {
        const sect_t *s = &r->sec[i];
        int kind = record_section_kind(ps, r, i);
        for (int k = 0; k < n_exp; k++)
            if (exp[k].kind == kind && s->n > exp[k].count)
                c.flags |= PW_SLAB_ODD_SECTION;
        switch (kind) {
        case S_TUNABLES:
            if (s->n >= 2) {
                c.limit = s->v[0];
                c.batchcount = s->v[1];
                c.present |= PW_SLAB_HAS_TUNABLES;
            }
            if (s->n >= 3)
                c.sharedfactor = s->v[2];
            c.n_tunables = (uint8_t)s->n;
            break;
        case S_SLABDATA:
            if (s->n >= 1) {
                c.active_slabs = s->v[0];
                c.present |= PW_SLAB_HAS_ACTIVE_SLABS;
            }
            if (s->n >= 2) {
                c.num_slabs = s->v[1];
                c.present |= PW_SLAB_HAS_NUM_SLABS;
            }
            if (s->n >= 3) {
                c.sharedavail = s->v[2];
                c.present |= PW_SLAB_HAS_SHAREDAVAIL;
            }
            break;
        case S_GLOBALSTAT:
        case S_STATS11:
            memcpy(c.stats, s->v, sizeof(c.stats));
            c.n_stats = (uint8_t)s->n;
            if (s->n > 0)
                c.present |= PW_SLAB_HAS_STATS;
            break;
        case S_CPUSTAT:
            memcpy(c.cpustat, s->v, sizeof(c.cpustat));
            c.n_cpustat = (uint8_t)s->n;
            if (s->n > 0)
                c.present |= PW_SLAB_HAS_CPUSTAT;
            break;
        default:
            c.flags |= PW_SLAB_ODD_SECTION;
            break;
        }
    }
    /* 1.1 has no objperslab; 2.4 prints num_objs = num_slabs * objs-per-slab, so it is exact
     * when it divides. */
    if (!(c.present & PW_SLAB_HAS_OBJPERSLAB) && (c.present & PW_SLAB_HAS_NUM_OBJS) &&
        (c.present & PW_SLAB_HAS_NUM_SLABS) && c.num_slabs > 0 && c.num_objs % c.num_slabs == 0) {
        c.objperslab = c.num_objs / c.num_slabs;
        c.present |= PW_SLAB_HAS_OBJPERSLAB;
        c.derived |= PW_SLAB_HAS_OBJPERSLAB;
    }
    ps->block_has_rows = 1;
    return push_cache(ps, &c, r->name, r->name_len);
}

/* ---- line kinds --------------------------------------------------------------------------- */

static int header_feed(parser_t *ps, const tok_t *t, int n)
{
    static const char *const hdr_fields[F__COUNT] = {"active_objs", "num_objs",     "objsize",
                                                     "objperslab",  "pagesperslab", "active_slabs",
                                                     "num_slabs"};
    for (int i = 0; i < n; i++) {
        const tok_t *k = &t[i];
        if (k->kind == T_COLON) {
            if (ps->n_hsec < MAX_SECTIONS) {
                ps->hsec[ps->n_hsec++] = (hsect_t){S_OTHER, 0};
                ps->header_label_next = 1;
            }
            continue;
        }
        if (ps->header_label_next && ps->n_hsec > 0 && k->n > 0 && k->p[0] != '<') {
            ps->hsec[ps->n_hsec - 1].kind = section_kind(k->p, k->n);
            ps->header_label_next = 0;
            continue;
        }
        ps->header_label_next = 0;
        if (k->n == 0 || k->p[0] != '<')
            continue; /* "#", "name" */
        if (ps->n_hsec > 0) {
            ps->hsec[ps->n_hsec - 1].count++;
            continue;
        }
        if (ps->n_base_hdr == MAX_BASE)
            continue;
        /* Column name without '<' and '>' (the 2.0-test headers miss some '>'). */
        const char *p = k->p + 1;
        size_t len = k->n - 1;
        if (len > 0 && p[len - 1] == '>')
            len--;
        int f = F_IGNORE;
        for (int j = 0; j < F__COUNT; j++)
            if (strlen(hdr_fields[j]) == len && memcmp(hdr_fields[j], p, len) == 0)
                f = j;
        if (ps->n_base_hdr == 0)
            for (int j = 0; j < MAX_BASE; j++)
                ps->base_map[j] = F_IGNORE;
        ps->base_map[ps->n_base_hdr++] = f;
    }
    /* Positions the header did not name keep the kernel's order (a truncated header). */
    static const int v2[] = {F_ACTIVE_OBJS, F_NUM_OBJS, F_OBJSIZE, F_OBJPERSLAB, F_PAGESPERSLAB};
    for (int j = ps->n_base_hdr; j < 5; j++)
        ps->base_map[j] = v2[j];
    return 0;
}

static int handle_version(parser_t *ps, const char *s, const char *e)
{
    int r = rec_finish(ps);
    if (r != 0)
        return r;
    s = skip_space(s, e);
    while (e > s && is_space(e[-1]))
        e--;
    uint32_t flags = 0;
    size_t vlen = (size_t)(e - s);
    for (const char *p = s; p < e; p++) {
        if ((size_t)(e - p) >= 12 && memcmp(p, "(statistics)", 12) == 0)
            flags |= PW_SLABINFO_STATISTICS;
        if ((size_t)(e - p) >= 5 && memcmp(p, "(SMP)", 5) == 0)
            flags |= PW_SLABINFO_SMP;
    }
    ps->saw_anything = 1;
    return new_block(ps, s, vlen, flags);
}

static int handle_header(parser_t *ps, const tok_t *t, int n)
{
    int r = rec_finish(ps);
    if (r != 0)
        return r;
    if (!ps->in_block || ps->block_has_rows || (ps->bflags & PW_SLABINFO_HEADER)) {
        r = new_block(ps, "", 0, PW_SLABINFO_HEADERLESS);
        if (r != 0)
            return r;
    }
    ps->saw_anything = 1;
    ps->bflags |= PW_SLABINFO_HEADER;
    ps->doc->blocks[ps->doc->n_blocks - 1].flags |= PW_SLABINFO_HEADER;
    ps->header_open = 1;
    ps->header_label_next = 0;
    ps->n_base_hdr = 0;
    default_map(ps, PW_SLABINFO_LAYOUT_V2);
    set_layout(ps, PW_SLABINFO_LAYOUT_V2);
    return header_feed(ps, t, n);
}

/* Does a row found outside any block look unmistakably like slabinfo? One-word name, then
 * either 2.x's labeled slabdata or 1.1's six numbers. */
static int strong_row(const rec_t *r, int name_words)
{
    if (name_words != 1)
        return 0;
    for (int i = 0; i < r->n_sec; i++)
        if (r->sec[i].kind == S_SLABDATA && r->sec[i].n == 3)
            return r->n_base == 5 ? PW_SLABINFO_LAYOUT_V2 : 0;
    if (r->n_base != 6)
        return 0;
    for (int i = 0; i < r->n_sec; i++)
        if (r->sec[i].kind != S_UNLABELED)
            return 0;
    return PW_SLABINFO_LAYOUT_V1;
}

static int not_row(parser_t *ps, const char *what, const char *s, const char *e)
{
    if (ps->opts->strict)
        return pw_diag_set(ps->diag, PW_EPARSE, ps->line, ps->line_off, "row", "%s: '%.*s'", what,
                           (int)(e - s > 60 ? 60 : e - s), s);
    skip_line(ps, ps->line);
    return 0;
}

static int handle_line(parser_t *ps, const char *ls, const char *le)
{
    const char *s = ls;
    const char *e = le;
    while (e > s && (is_space(e[-1]) || e[-1] == '\r'))
        e--;
    if (!ps->opts->strict) {
        s = strip_quotes(s, e);
        s = strip_syslog(s, e);
        s = strip_quotes(s, e);
    }
    if (s == e) {
        /* A blank line ends a record and a header; wrapped records never contain one. */
        int r = rec_finish(ps);
        ps->header_open = 0;
        if (r == 0 && ps->opts->strict)
            return pw_diag_set(ps->diag, PW_EPARSE, ps->line, ps->line_off, "row",
                               "blank line in slabinfo");
        return r;
    }
    static const char vprefix[] = "slabinfo - version:";
    size_t vn = sizeof(vprefix) - 1;
    if ((size_t)(e - s) >= vn && memcmp(s, vprefix, vn) == 0) {
        ps->header_open = 0;
        return handle_version(ps, s + vn, e);
    }
    if (ps->opts->strict && ps->doc->n_blocks == 0)
        return pw_diag_set(ps->diag, PW_EPARSE, ps->line, ps->line_off, "version",
                           "first line is not 'slabinfo - version: ...'");

    tok_t toks[MAX_TOKENS];
    int n = tokenize(s, e, toks, MAX_TOKENS);
    if (n < 0)
        return not_row(ps, "too many fields for a slabinfo row", s, e);

    if (toks[0].kind == T_WORD && toks[0].p[0] == '#' &&
        ((toks[0].n == 1 && n > 1 && tok_is(&toks[1], "name")) || tok_is(&toks[0], "#name")))
        return handle_header(ps, toks, n);
    if (ps->header_open && !ps->opts->strict && (toks[0].kind == T_COLON || toks[0].p[0] == '<'))
        return header_feed(ps, toks, n);
    ps->header_open = 0;

    rec_t *r = &ps->rec;
    if (toks[0].kind == T_COLON || toks[0].kind == T_NUM ||
        (r->active && r->label_next && toks[0].kind == T_WORD)) {
        /* Continuation of a wrapped record: ':' always may add a section, a number only
         * while the record still misses fields. */
        if (ps->opts->strict || !r->active || (toks[0].kind == T_NUM && record_complete(ps, r)))
            return not_row(ps, "line is not a slabinfo row", s, e);
        rec_t saved = *r;
        int fr = rec_feed(ps, r, toks, n, ls);
        if (fr < 0)
            return fr;
        if (fr == FEED_NOT_ROW) {
            *r = saved;
            return not_row(ps, "line is not a slabinfo row", s, e);
        }
        r->wrapped = 1;
        return 0;
    }

    /* Record start: name words, then numbers and sections. */
    int w = 0;
    while (w < n && toks[w].kind == T_WORD)
        w++;
    if (w == n || toks[w].kind != T_NUM || w > MAX_NAME_W)
        return not_row(ps, "line is not a slabinfo row", s, e);
    rec_t nr;
    memset(&nr, 0, sizeof(nr));
    nr.line = ps->line;
    nr.off = off_of(ps, s, ls);
    nr.name = toks[0].p;
    nr.name_len = (size_t)(toks[w - 1].p + toks[w - 1].n - toks[0].p);
    int saved_layout = ps->layout;
    if (!ps->in_block)
        ps->layout = PW_SLABINFO_LAYOUT_UNKNOWN;
    int fr = rec_feed(ps, &nr, toks + w, n - w, ls);
    ps->layout = saved_layout;
    if (fr < 0)
        return fr;
    if (fr == FEED_NOT_ROW)
        return not_row(ps, "line is not a slabinfo row", s, e);
    if (!ps->in_block) {
        int lay = strong_row(&nr, w);
        if (lay == 0)
            return not_row(ps, "line is not a slabinfo row", s, e);
        int rr = new_block(ps, "", 0, PW_SLABINFO_HEADERLESS);
        if (rr != 0)
            return rr;
        set_layout(ps, lay);
    } else if (ps->layout == PW_SLABINFO_LAYOUT_UNKNOWN) {
        int labeled = 0;
        for (int i = 0; i < nr.n_sec; i++)
            labeled |= nr.sec[i].kind != S_UNLABELED;
        set_layout(ps, labeled || nr.n_base == 5 ? PW_SLABINFO_LAYOUT_V2 : PW_SLABINFO_LAYOUT_V1);
    }
    if (nr.n_base > base_count(ps))
        return not_row(ps, "more numbers than the slabinfo layout has", s, e);
    int rr = rec_finish(ps);
    if (rr != 0)
        return rr;
    ps->saw_anything = 1;
    *r = nr;
    r->active = 1;
    return 0;
}

/* ---- public ------------------------------------------------------------------------------- */

int pw_slabinfo_parse(const char *data, size_t len, const pw_slabinfo_opts_t *opts,
                      pw_slabinfo_doc_t *out, pw_diag_t *diag)
{
    static const pw_slabinfo_opts_t defaults;
    pw_diag_clear(diag);
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
        out->version = "";
    }
    if (out == NULL || (data == NULL && len > 0))
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no input or no output document");
    parser_t ps;
    memset(&ps, 0, sizeof(ps));
    ps.opts = opts ? opts : &defaults;
    ps.diag = diag;
    ps.doc = out;
    size_t max_input =
        ps.opts->max_input_bytes ? ps.opts->max_input_bytes : PW_SLABINFO_MAX_INPUT_DEFAULT;
    size_t max_line =
        ps.opts->max_line_bytes ? ps.opts->max_line_bytes : PW_SLABINFO_MAX_LINE_DEFAULT;
    ps.max_caches = ps.opts->max_caches ? ps.opts->max_caches : PW_SLABINFO_MAX_CACHES_DEFAULT;
    if (len > max_input)
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "input",
                           "input of %zu bytes is over the limit of %zu bytes", len, max_input);
    /* Names are substrings of the input, each with a NUL. */
    pw_buf_init(&ps.names, len + ps.max_caches + 1);

    size_t pos = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    int r = 0;
    while (pos < len) {
        const char *ls = data + pos;
        const char *nl = memchr(ls, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - ls) : len - pos;
        ps.line++;
        ps.line_off = pos;
        if (n > max_line) {
            r = pw_diag_set(diag, PW_ETOOBIG, ps.line, pos, "line",
                            "line of %zu bytes is over the limit of %zu bytes", n, max_line);
            break;
        }
        /* A CR is only allowed as the line's end (CRLF files). */
        size_t vn = (n > 0 && ls[n - 1] == '\r') ? n - 1 : n;
        size_t bad = validate_text((const unsigned char *)ls, vn);
        if (bad != (size_t)-1) {
            r = pw_diag_set(diag, PW_EPARSE, ps.line, pos + bad, "text",
                            "byte 0x%02x at column %zu: not UTF-8 text (binary input?)",
                            (unsigned)(unsigned char)ls[bad], bad + 1);
            break;
        }
        r = handle_line(&ps, ls, ls + vn);
        if (r != 0)
            break;
        pos += n + (nl ? 1 : 0);
    }
    out->n_lines = ps.line;
    if (r == 0)
        r = rec_finish(&ps);
    if (r == 0 && !ps.saw_anything)
        r = pw_diag_set(diag, PW_EFORMAT, ps.line, len, "",
                        ps.opts->strict ? "empty input: no slabinfo version line"
                                        : "no slabinfo version line, header or row found");
    out->names_ = (char *)ps.names.data;
    if (r != 0) {
        if (diag && r == PW_ENOMEM && diag->code == 0)
            pw_diag_set(diag, r, ps.line, ps.line_off, "", "out of memory");
        pw_slabinfo_doc_close(out);
        return r;
    }
    for (size_t i = 0; i < out->n_caches; i++)
        out->caches[i].name = out->names_ + (uintptr_t)out->caches[i].name;
    if (out->n_blocks > 0)
        out->version = out->blocks[0].version;
    return 0;
}

void pw_slabinfo_doc_close(pw_slabinfo_doc_t *doc)
{
    if (doc == NULL)
        return;
    pw_free(doc->caches);
    pw_free(doc->blocks);
    pw_free(doc->names_);
    memset(doc, 0, sizeof(*doc));
    doc->version = "";
}

int pw_slabinfo_cache_slab_bytes(const pw_slab_cache_t *c, uint64_t page_size, uint64_t *out)
{
    uint32_t need = PW_SLAB_HAS_NUM_SLABS | PW_SLAB_HAS_PAGESPERSLAB;
    if ((c->present & need) != need)
        return PW_ENOENT;
    uint64_t pages, bytes;
    if (__builtin_mul_overflow(c->num_slabs, c->pagesperslab, &pages) ||
        __builtin_mul_overflow(pages, page_size, &bytes))
        return PW_ERANGE;
    *out = bytes;
    return 0;
}

uint64_t pw_slabinfo_doc_slab_bytes(const pw_slabinfo_doc_t *doc, uint64_t page_size,
                                    size_t *n_missing)
{
    uint64_t sum = 0;
    size_t missing = 0;
    for (size_t i = 0; i < doc->n_caches; i++) {
        uint64_t b;
        int r = pw_slabinfo_cache_slab_bytes(&doc->caches[i], page_size, &b);
        if (r == PW_ENOENT) {
            missing++;
            continue;
        }
        if (r != 0 || __builtin_add_overflow(sum, b, &sum))
            sum = UINT64_MAX;
    }
    if (n_missing)
        *n_missing = missing;
    return sum;
}

const char *pw_slabinfo_layout_name(pw_slabinfo_layout_t layout)
{
    switch (layout) {
    case PW_SLABINFO_LAYOUT_V1:
        return "1.x";
    case PW_SLABINFO_LAYOUT_V2:
        return "2.x";
    default:
        return "unknown";
    }
}
