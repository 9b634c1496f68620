/* pooltag.c: see pooltag.h. The input is copied once into an arena; entries point into it. */
#include "pooltag.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct pw_pooltag_s {
    char *arena;             /* copy of the input, NULs written at field ends */
    pw_pooltag_entry_t *ent; /* file order */
    size_t n_ent, cap_ent;
    uint32_t *by_tag; /* entry indices sorted by (tag, file order) */
    uint32_t *wild;   /* wildcard entry indices in file order */
    size_t n_wild;
    pw_pooltag_skip_t *skip;
    size_t n_skip, cap_skip;
    pw_pooltag_stats_t st;
};

static const char empty_str[] = "";

static bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

static int add_skip(pw_pooltag_t *t, uint32_t line, uint32_t reason)
{
    if (t->n_skip == t->cap_skip) {
        size_t nc = t->cap_skip ? t->cap_skip * 2 : 32;
        pw_pooltag_skip_t *s = pw_realloc(t->skip, nc * sizeof(*s));
        if (s == NULL)
            return PW_ENOMEM;
        t->skip = s;
        t->cap_skip = nc;
    }
    t->skip[t->n_skip++] = (pw_pooltag_skip_t){line, reason};
    t->st.skipped++;
    return 0;
}

/* Trims [*b, *e) of spaces and tabs. */
static void trim(char **b, char **e)
{
    while (*b < *e && is_ws(**b))
        (*b)++;
    while (*e > *b && is_ws((*e)[-1]))
        (*e)--;
}

/* Splits `rest` (after the tag's ` -`, up to end) into binary and description in place. */
static void split_fields(char *rest, char *end, pw_pooltag_entry_t *e, size_t *two_field)
{
    char *dash = NULL;
    for (char *p = rest + 1; p < end; p++)
        if (*p == '-' && is_ws(p[-1])) {
            dash = p;
            break;
        }
    if (dash == NULL) {
        char *b = rest, *d = end;
        trim(&b, &d);
        *d = '\0';
        e->binary = empty_str;
        e->desc = b;
        (*two_field)++;
        return;
    }
    char *bb = rest, *be = dash, *db = dash + 1, *de = end;
    trim(&bb, &be);
    trim(&db, &de);
    *be = '\0';
    *de = '\0';
    e->binary = bb;
    e->desc = db;
}

static bool has_wild(const char *tag)
{
    for (int i = 0; i < 4; i++)
        if (tag[i] == '?' || tag[i] == '*')
            return true;
    return false;
}

/* Classifies and stores one line [p, p + n). Returns 0 or a negative error. */
static int parse_line(pw_pooltag_t *t, char *p, size_t n, uint32_t line, uint64_t off,
                      const pw_pooltag_opts_t *o, pw_diag_t *diag)
{
    size_t i;
    for (i = 0; i < n && is_ws(p[i]); i++)
        ;
    if (i == n) {
        t->st.blank++;
        return 0;
    }
    if (n > o->max_line)
        return add_skip(t, line, PW_POOLTAG_SKIP_TOO_LONG);
    if ((n >= 2 && p[0] == '/' && p[1] == '/') ||
        (n >= 3 && (p[0] | 0x20) == 'r' && (p[1] | 0x20) == 'e' && (p[2] | 0x20) == 'm' &&
         (n == 3 || is_ws(p[3])))) {
        t->st.comments++;
        return 0;
    }
    for (i = 0; i < n; i++)
        if (((unsigned char)p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
            return add_skip(t, line, PW_POOLTAG_SKIP_CONTROL);
    if (is_ws(p[0]))
        return add_skip(t, line, PW_POOLTAG_SKIP_TEXT);

    char tag[5];
    char *rest = NULL;
    bool lenient = false;
    bool tag_ok = n >= 4 && p[1] != '\t' && p[2] != '\t' && p[3] != '\t';
    if (tag_ok && n >= 6 && p[4] == ' ' && p[5] == '-' && (n == 6 || is_ws(p[6]))) {
        memcpy(tag, p, 4);
        rest = p + 6;
    } else if (n >= 5 && p[1] != ' ' && p[2] != ' ' && p[3] == ' ' && p[4] == '-' &&
               (n == 5 || is_ws(p[5]))) {
        if (!(o->flags & PW_POOLTAG_LENIENT))
            return add_skip(t, line, PW_POOLTAG_SKIP_SHORT_TAG);
        memcpy(tag, p, 3);
        tag[3] = ' ';
        rest = p + 5;
        lenient = true;
    } else if (tag_ok && n >= 6 && p[4] == ' ') {
        for (i = 5; i < n && is_ws(p[i]); i++)
            ;
        if (i == n || p[i] != '-' || (i + 1 < n && !is_ws(p[i + 1])))
            return add_skip(t, line, PW_POOLTAG_SKIP_TEXT);
        if (!(o->flags & PW_POOLTAG_LENIENT))
            return add_skip(t, line, PW_POOLTAG_SKIP_SEPARATOR);
        memcpy(tag, p, 4);
        rest = p + i + 1;
        lenient = true;
    } else {
        return add_skip(t, line, PW_POOLTAG_SKIP_TEXT);
    }
    tag[4] = '\0';

    if (t->n_ent >= o->max_entries)
        return pw_diag_set(diag, PW_ETOOBIG, line, off, "entries",
                           "more than %zu pool tag definitions", o->max_entries);
    if (t->n_ent == t->cap_ent) {
        size_t nc = t->cap_ent ? t->cap_ent * 2 : 256;
        pw_pooltag_entry_t *e = pw_realloc(t->ent, nc * sizeof(*e));
        if (e == NULL)
            return PW_ENOMEM;
        t->ent = e;
        t->cap_ent = nc;
    }
    pw_pooltag_entry_t *e = &t->ent[t->n_ent++];
    memcpy(e->tag, tag, 5);
    e->wildcard = has_wild(tag);
    e->lenient = lenient;
    e->line = line;
    split_fields(rest, p + n, e, &t->st.two_field);
    t->st.lenient += lenient;
    t->st.wildcards += e->wildcard;
    return 0;
}

/* qsort has no context pointer in C11: sort (tag, index) pairs instead. */
typedef struct {
    char tag[4];
    uint32_t idx;
} tag_ix_t;

static int cmp_tag_ix(const void *a, const void *b)
{
    const tag_ix_t *x = a, *y = b;
    int c = memcmp(x->tag, y->tag, 4);
    if (c)
        return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int build_index(pw_pooltag_t *t)
{
    size_t n = t->n_ent;
    if (n == 0)
        return 0;
    tag_ix_t *tmp = pw_malloc(n * sizeof(*tmp));
    t->by_tag = pw_malloc(n * sizeof(*t->by_tag));
    t->wild = pw_malloc(n * sizeof(*t->wild));
    if (tmp == NULL || t->by_tag == NULL || t->wild == NULL) {
        pw_free(tmp);
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(tmp[i].tag, t->ent[i].tag, 4);
        tmp[i].idx = (uint32_t)i;
        if (t->ent[i].wildcard)
            t->wild[t->n_wild++] = (uint32_t)i;
    }
    qsort(tmp, n, sizeof(*tmp), cmp_tag_ix);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && memcmp(tmp[j].tag, tmp[i].tag, 4) == 0)
            j++;
        t->st.unique++;
        if (j - i > 1)
            t->st.duplicated++;
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        t->by_tag[i] = tmp[i].idx;
    pw_free(tmp);
    return 0;
}

int pw_pooltag_parse(const char *buf, size_t len, const pw_pooltag_opts_t *opts, pw_pooltag_t **out,
                     pw_diag_t *diag)
{
    if (out == NULL || (buf == NULL && len > 0))
        return PW_EINVAL;
    *out = NULL;
    pw_pooltag_opts_t o = {0};
    if (opts)
        o = *opts;
    if (o.max_input == 0)
        o.max_input = PW_POOLTAG_MAX_INPUT_DEFAULT;
    if (o.max_line == 0)
        o.max_line = PW_POOLTAG_MAX_LINE_DEFAULT;
    if (o.max_entries == 0)
        o.max_entries = PW_POOLTAG_MAX_ENTRIES_DEFAULT;
    if (o.max_entries > UINT32_MAX)
        o.max_entries = UINT32_MAX;
    if (len > o.max_input)
        return pw_diag_set(diag, PW_ETOOBIG, 0, o.max_input, "input",
                           "pooltag file of %zu bytes exceeds the %zu-byte limit", len,
                           o.max_input);
    if (len >= 2 && (((unsigned char)buf[0] == 0xff && (unsigned char)buf[1] == 0xfe) ||
                     ((unsigned char)buf[0] == 0xfe && (unsigned char)buf[1] == 0xff)))
        return pw_diag_set(diag, PW_EPARSE, 1, 0, "encoding",
                           "UTF-16 text is not supported: convert the file to ASCII/UTF-8");
    const char *nul = len ? memchr(buf, '\0', len) : NULL;
    if (nul) {
        uint32_t line = 1;
        for (const char *q = buf; q < nul; q++)
            line += *q == '\n';
        return pw_diag_set(diag, PW_EPARSE, line, (uint64_t)(nul - buf), "input",
                           "NUL byte: not a text file");
    }

    pw_pooltag_t *t = pw_calloc(1, sizeof(*t));
    if (t == NULL)
        return PW_ENOMEM;
    t->arena = pw_malloc(len + 1);
    if (t->arena == NULL) {
        pw_free(t);
        return PW_ENOMEM;
    }
    if (len)
        memcpy(t->arena, buf, len);
    t->arena[len] = '\0';

    int rc = 0;
    size_t pos = 0;
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        pos = 3;
    uint32_t line = 0;
    while (pos < len && rc == 0) {
        char *p = t->arena + pos;
        char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        size_t next = pos + n + (nl != NULL);
        line++;
        t->st.lines++;
        if (n > 0 && p[0] == 0x1a) /* DOS end of file: the rest is not text */
            break;
        if (n > 0 && p[n - 1] == '\r')
            n--;
        p[n] = '\0';
        rc = parse_line(t, p, n, line, pos, &o, diag);
        pos = next;
        if (line == UINT32_MAX)
            break;
    }
    t->st.entries = t->n_ent;
    if (rc == 0)
        rc = build_index(t);
    if (rc < 0) {
        if (rc == PW_ENOMEM)
            pw_diag_set(diag, rc, line, pos, "", "out of memory");
        pw_pooltag_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int pw_pooltag_load(const char *path, const pw_pooltag_opts_t *opts, pw_pooltag_t **out,
                    pw_diag_t *diag)
{
    if (path == NULL || out == NULL)
        return PW_EINVAL;
    size_t max = opts && opts->max_input ? opts->max_input : PW_POOLTAG_MAX_INPUT_DEFAULT;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno ? -errno : PW_EIO;
        return pw_diag_set(diag, e, 0, 0, "path", "cannot open %s", path);
    }
    size_t cap = 64 * 1024, len = 0;
    char *buf = pw_malloc(cap);
    int rc = 0;
    while (buf != NULL) {
        if (len == cap) {
            if (cap > max) {
                rc = pw_diag_set(diag, PW_ETOOBIG, 0, max, "input", "%s exceeds the %zu-byte limit",
                                 path, max);
                break;
            }
            char *nb = pw_realloc(buf, cap * 2);
            if (nb == NULL) {
                rc = PW_ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = pw_diag_set(diag, PW_EIO, 0, len, "path", "read error on %s", path);
            break;
        }
    }
    fclose(f);
    if (buf == NULL)
        return PW_ENOMEM;
    if (rc == 0)
        rc = pw_pooltag_parse(buf, len, opts, out, diag);
    pw_free(buf);
    return rc;
}

void pw_pooltag_free(pw_pooltag_t *t)
{
    if (t == NULL)
        return;
    pw_free(t->arena);
    pw_free(t->ent);
    pw_free(t->by_tag);
    pw_free(t->wild);
    pw_free(t->skip);
    pw_free(t);
}

/* First position in by_tag whose tag is >= key. */
static size_t lower_bound(const pw_pooltag_t *t, const char *key)
{
    size_t lo = 0, hi = t->n_ent;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (memcmp(t->ent[t->by_tag[mid]].tag, key, 4) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t count_defs(const pw_pooltag_t *t, const char *key, size_t *first_pos)
{
    size_t lo = lower_bound(t, key), hi = lo;
    while (hi < t->n_ent && memcmp(t->ent[t->by_tag[hi]].tag, key, 4) == 0)
        hi++;
    if (first_pos)
        *first_pos = lo;
    return hi - lo;
}

/* Number of literal bytes when `pat` matches `tag`, -1 when it does not. */
static int wild_match(const char *pat, const char *tag)
{
    int lit = 0;
    for (int i = 0; i < 4; i++) {
        if (pat[i] == '*')
            return lit;
        if (pat[i] == '?')
            continue;
        if (pat[i] != tag[i])
            return -1;
        lit++;
    }
    return lit;
}

const pw_pooltag_entry_t *pw_pooltag_lookup(const pw_pooltag_t *t, const void *tag, size_t tag_len,
                                            size_t *n_defs)
{
    if (n_defs)
        *n_defs = 0;
    if (t == NULL || tag == NULL || tag_len == 0 || tag_len > 4 || t->n_ent == 0)
        return NULL;
    char key[4] = {' ', ' ', ' ', ' '};
    memcpy(key, tag, tag_len);
    size_t pos;
    size_t c = count_defs(t, key, &pos);
    if (c == 0) {
        int best = -1;
        const pw_pooltag_entry_t *hit = NULL;
        for (size_t i = 0; i < t->n_wild; i++) {
            const pw_pooltag_entry_t *e = &t->ent[t->wild[i]];
            int lit = wild_match(e->tag, key);
            if (lit > best) {
                best = lit;
                hit = e;
            }
        }
        if (hit == NULL)
            return NULL;
        c = count_defs(t, hit->tag, &pos);
    }
    if (n_defs)
        *n_defs = c;
    return &t->ent[t->by_tag[pos]];
}

const pw_pooltag_entry_t *pw_pooltag_entry(const pw_pooltag_t *t, size_t i)
{
    return t && i < t->n_ent ? &t->ent[i] : NULL;
}

const pw_pooltag_stats_t *pw_pooltag_stats(const pw_pooltag_t *t)
{
    return t ? &t->st : NULL;
}

const pw_pooltag_skip_t *pw_pooltag_skipped(const pw_pooltag_t *t, size_t *n)
{
    if (n)
        *n = t ? t->n_skip : 0;
    return t ? t->skip : NULL;
}
