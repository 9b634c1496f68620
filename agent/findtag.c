/* findtag.c: find-tag's portable part (see findtag.h): the tag check, the examination of one
 * file (pe.h) and the ranking; the directory walk is in findtag_posix.c / findtag_win.c. */
#include "findtag_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "sample.h" /* PW_TAG_MAX */

typedef struct {
    pw_findtag_match_t m;
    char *name;
} found_t;

typedef struct {
    const uint8_t *tag;
    size_t tag_len;
    const pw_findtag_root_t *root;
    found_t *found;
    size_t n, cap;
    size_t files;
    int matches; /* all, also those beyond the ones kept */
} scan_t;

/* A file too large to read whole: searched in blocks, keeping the last len-1 bytes so that a
 * match across blocks is found. 1 when it holds the tag. */
static int stream_contains(FILE *f, const uint8_t *tag, size_t len)
{
    uint8_t buf[65536 + PW_TAG_MAX];
    size_t keep = 0, n;
    while ((n = fread(buf + keep, 1, 65536, f)) > 0) {
        size_t total = keep + n;
        for (size_t i = 0; i + len <= total; i++)
            if (buf[i] == tag[0] && memcmp(buf + i, tag, len) == 0)
                return 1;
        keep = len - 1 < total ? len - 1 : total;
        memmove(buf, buf + total - keep, keep);
    }
    return 0;
}

/* Fills m (kind, offset, version) when the file holds the tag; 1 if it does. */
static int examine(const char *path, uint64_t size, const uint8_t *tag, size_t len,
                   pw_findtag_match_t *m)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    int found = 0;
    if (size > PW__FINDTAG_MAX_READ) {
        found = stream_contains(f, tag, len);
        m->kind = PW_PE_MATCH_FILE;
        fclose(f);
        return found;
    }
    uint8_t *buf = pw_malloc(size ? (size_t)size : 1);
    size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
    fclose(f);
    if (buf == NULL)
        return 0;
    pw_pe_t *pe = pw_malloc(sizeof(*pe));
    int is_pe = pe != NULL && pw_pe_parse(buf, got, pe, NULL) == 0;
    m->kind = pw_pe_find(is_pe ? pe : NULL, buf, got, tag, len, &m->offset);
    found = m->kind != PW_PE_MATCH_NONE;
    if (found && is_pe)
        (void)pw_pe_version(pe, buf, got, &m->ver); /* what it could read */
    pw_free(pe);
    pw_free(buf);
    return found;
}

static int on_file(const char *path, const char *rel, uint64_t size, void *ctx)
{
    scan_t *s = ctx;
    if (s->files >= PW_FINDTAG_MAX_FILES)
        return 1;
    s->files++;
    pw_findtag_match_t m;
    memset(&m, 0, sizeof(m));
    m.size_bytes = size;
    if (!examine(path, size, s->tag, s->tag_len, &m))
        return 0;
    s->matches++;
    if (s->n == PW_FINDTAG_MAX_MATCHES)
        return 0; /* counted, not kept */
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        found_t *nf = pw_realloc(s->found, nc * sizeof(*nf));
        if (nf == NULL)
            return 0;
        s->found = nf;
        s->cap = nc;
    }
    const char *label = s->root->label && s->root->label[0] ? s->root->label : NULL;
    size_t nl = (label ? strlen(label) + 1 : 0) + strlen(rel) + 1;
    char *name = pw_malloc(nl);
    if (name == NULL)
        return 0;
#ifdef _WIN32
    snprintf(name, nl, "%s%s%s", label ? label : "", label ? "\\" : "", rel);
#else
    snprintf(name, nl, "%s%s%s", label ? label : "", label ? "/" : "", rel);
#endif
    s->found[s->n].m = m;
    s->found[s->n].name = name;
    s->n++;
    return 0;
}

static int by_rank(const void *a, const void *b)
{
    const found_t *x = a, *y = b;
    if (x->m.kind != y->m.kind)
        return (int)x->m.kind - (int)y->m.kind;
    return strcmp(x->name, y->name);
}

int pw_findtag_scan_roots(const pw_findtag_root_t *roots, size_t n_roots, const uint8_t *tag,
                          size_t tag_len, pw_findtag_cb cb, void *arg)
{
    if (tag_len == 0 || tag_len > PW_TAG_MAX)
        return PW_EINVAL;
    scan_t s = {.tag = tag, .tag_len = tag_len};
    size_t readable = 0;
    for (size_t i = 0; i < n_roots; i++) {
        s.root = &roots[i];
        if (pw__findtag_walk(&roots[i], on_file, &s) == 0)
            readable++;
    }
    if (s.n > 1)
        qsort(s.found, s.n, sizeof(*s.found), by_rank);
    for (size_t i = 0; i < s.n; i++) {
        s.found[i].m.name = s.found[i].name;
        cb(&s.found[i].m, arg);
        pw_free(s.found[i].name);
    }
    pw_free(s.found);
    return readable == 0 ? PW_ENOENT : s.matches;
}

int pw_findtag_scan(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                    void *arg)
{
#ifdef _WIN32
    pw_findtag_root_t r = {dir, NULL, 0, 0};
#else
    pw_findtag_root_t r = {dir, NULL, 8, 0};
#endif
    return pw_findtag_scan_roots(&r, 1, tag, tag_len, cb, arg);
}
