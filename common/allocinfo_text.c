/* allocinfo_text.c: /proc/allocinfo parser (see allocinfo_text.h for the format).
 *
 * The input is copied once; rows are split into words in place, so the sites' strings point
 * into that copy (no allocation per row). */
#include "allocinfo_text.h"
#include "alloc.h"
#include "proc_text.h"

#include <stdio.h>
#include <string.h>

#define VERSION_PREFIX "allocinfo - version:"

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Reads an unsigned decimal [p, e) with an optional trailing '*' (the kernel's mark of an
 * inaccurate counter in a proposed variant of 2.0). */
static int read_u64(const char *p, const char *e, uint64_t *out, bool *star)
{
    if (e > p && e[-1] == '*') {
        *star = true;
        e--;
    }
    return pw_proc_text_u64(p, e, out);
}

typedef struct {
    char *w[16];
    int n;
} words_t;

/* Splits [s, e) into words, NUL-terminating each in place. */
static void split(char *s, char *e, words_t *ws)
{
    ws->n = 0;
    while (s < e) {
        while (s < e && is_blank(*s))
            s++;
        if (s == e)
            break;
        char *w = s;
        while (s < e && !is_blank(*s))
            s++;
        if (ws->n < (int)(sizeof(ws->w) / sizeof(ws->w[0])))
            ws->w[ws->n++] = w;
        else
            ws->n++; /* counted: a row has far fewer */
        if (s < e)
            *s++ = '\0';
    }
}

/* Fills `site` from the words of one line. Returns 0, -1 when the line is not a row, or
 * PW_ERANGE with *field set. */
static int parse_row(words_t *ws, pw_alloc_site_t *site, const char **field)
{
    if (ws->n < 3 || ws->n > 16)
        return -1;
    memset(site, 0, sizeof(*site));
    const char *b = ws->w[0];
    int neg = b[0] == '-';
    uint64_t mag, calls;
    *field = "size";
    int r = read_u64(b + neg, b + strlen(b), &mag, &site->inaccurate);
    if (r != 0)
        return r;
    if (mag > (uint64_t)INT64_MAX + (uint64_t)neg)
        return PW_ERANGE;
    site->bytes = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    *field = "calls";
    r = read_u64(ws->w[1], ws->w[1] + strlen(ws->w[1]), &calls, &site->inaccurate);
    if (r != 0)
        return r;
    site->calls = calls;
    /* FILE:LINE: the last ':' is followed by digits only */
    char *t = ws->w[2];
    char *colon = strrchr(t, ':');
    if (colon == NULL || colon == t || colon[1] == '\0')
        return -1;
    uint64_t ln;
    bool dummy = false;
    *field = "line";
    r = read_u64(colon + 1, colon + strlen(colon), &ln, &dummy);
    if (r != 0 || dummy)
        return r != 0 ? r : -1;
    if (ln > UINT32_MAX)
        return PW_ERANGE;
    *colon = '\0';
    site->file = t;
    site->src_line = (uint32_t)ln;
    site->module = "";
    site->func = "";
    int i = 3;
    if (i < ws->n && ws->w[i][0] == '[') {
        size_t ml = strlen(ws->w[i]);
        if (ml < 3 || ws->w[i][ml - 1] != ']')
            return -1;
        ws->w[i][ml - 1] = '\0';
        site->module = ws->w[i] + 1;
        i++;
    }
    for (; i < ws->n; i++) {
        if (strncmp(ws->w[i], "func:", 5) == 0)
            site->func = ws->w[i] + 5;
        else if (strcmp(ws->w[i], "accurate:no") == 0)
            site->inaccurate = true;
        else if (strchr(ws->w[i], ':') == NULL)
            return -1; /* later versions add key:value words; anything else is not ours */
    }
    return 0;
}

static int is_header(const words_t *ws)
{
    /* "#     <size>  <calls> <tag info>" or "<size> <calls> <tag info>" */
    int i = ws->n > 0 && strcmp(ws->w[0], "#") == 0 ? 1 : 0;
    return ws->n - i >= 2 && strcmp(ws->w[i], "<size>") == 0 &&
           strcmp(ws->w[i + 1], "<calls>") == 0;
}

int pw_allocinfo_parse(const char *data, size_t len, const pw_allocinfo_opts_t *opts,
                       pw_allocinfo_doc_t *out, pw_diag_t *diag)
{
    if (out == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no output document");
    memset(out, 0, sizeof(*out));
    if (data == NULL && len > 0)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no input");
    pw_allocinfo_opts_t o = opts ? *opts : (pw_allocinfo_opts_t){0};
    if (o.max_input_bytes == 0)
        o.max_input_bytes = PW_ALLOCINFO_MAX_INPUT_DEFAULT;
    if (o.max_sites == 0)
        o.max_sites = PW_ALLOCINFO_MAX_SITES_DEFAULT;
    if (len > o.max_input_bytes)
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "",
                           "input of %zu bytes is over the limit of %zu", len, o.max_input_bytes);
    char *text = pw_malloc(len + 1);
    if (text == NULL)
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "", "out of memory");
    if (len > 0)
        memcpy(text, data, len);
    text[len] = '\0';
    out->text_ = text;
    size_t cap = 0;
    int r = 0;
    int saw_version = 0;
    pw_proc_lines_t it;
    pw_proc_lines_init(&it, text, len, PW_ALLOCINFO_MAX_LINE, "allocinfo");
    const char *cs, *ce;
    uint64_t off;
    while (r == 0 && (r = pw_proc_lines_next(&it, &cs, &ce, &off, diag)) == 1) {
        r = 0;
        uint32_t line = it.line;
        char *s = text + (cs - text), *le = text + (ce - text); /* our own copy: writable */
        size_t vl = sizeof(VERSION_PREFIX) - 1;
        if ((size_t)(le - s) >= vl && memcmp(s, VERSION_PREFIX, vl) == 0) {
            char *v = s + vl;
            while (v < le && is_blank(*v))
                v++;
            char *ve = le;
            if (saw_version || (o.strict && out->n_sites > 0)) {
                r = pw_diag_set(diag, PW_EPARSE, line, off, "version",
                                "line %u: a second version line: one allocinfo per document", line);
                break;
            }
            snprintf(out->version, sizeof(out->version), "%.*s", (int)(ve - v), v);
            saw_version = 1;
            continue;
        }
        words_t ws;
        *le = '\0'; /* a blank, the newline or the copy's final NUL */
        split(s, le, &ws);
        if (is_header(&ws))
            continue;
        pw_alloc_site_t site;
        const char *field = "";
        int pr = parse_row(&ws, &site, &field);
        if (pr == PW_ERANGE) {
            r = pw_diag_set(diag, PW_ERANGE, line, off, field, "line %u: %s out of range", line,
                            field);
            break;
        }
        if (pr != 0) {
            if (o.strict) {
                r = pw_diag_set(diag, PW_EPARSE, line, off, "row",
                                "line %u: not an allocinfo row (size calls file:line "
                                "[module] func:name)",
                                line);
                break;
            }
            out->n_skipped++;
            if (out->first_skipped == 0)
                out->first_skipped = line;
            continue;
        }
        if (o.strict && !saw_version) {
            r = pw_diag_set(diag, PW_EPARSE, line, off, "version",
                            "line %u: a row before the 'allocinfo - version:' line", line);
            break;
        }
        if (out->n_sites >= o.max_sites) {
            r = pw_diag_set(diag, PW_ETOOBIG, line, off, "", "more than %zu allocation sites",
                            o.max_sites);
            break;
        }
        if (out->n_sites == cap) {
            size_t nc = cap ? cap * 2 : 256;
            if (nc > o.max_sites)
                nc = o.max_sites;
            pw_alloc_site_t *ns = pw_realloc(out->sites, nc * sizeof(*ns));
            if (ns == NULL) {
                r = pw_diag_set(diag, PW_ENOMEM, line, off, "", "out of memory");
                break;
            }
            out->sites = ns;
            cap = nc;
        }
        site.line = line;
        out->sites[out->n_sites++] = site;
    }
    if (r == 0 && !o.strict && !saw_version && out->n_sites == 0)
        r = pw_diag_set(diag, PW_EFORMAT, 0, 0, "",
                        "no 'allocinfo - version:' line and no allocinfo row: not /proc/allocinfo");
    if (r != 0)
        pw_allocinfo_doc_close(out);
    return r;
}

void pw_allocinfo_doc_close(pw_allocinfo_doc_t *doc)
{
    if (doc == NULL)
        return;
    pw_free(doc->sites);
    pw_free(doc->text_);
    memset(doc, 0, sizeof(*doc));
}
