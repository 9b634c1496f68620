/* vmallocinfo_text.c: /proc/vmallocinfo parser, aggregated by caller (see vmallocinfo_text.h).
 * Callers are found through a small open-addressing table of FNV-1a hashes of their keys, so
 * a file of thousands of areas is one pass. */
#include "vmallocinfo_text.h"
#include "alloc.h"
#include "proc_text.h"

#include <stdio.h>
#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* "0x...-0x..." with hex digits or "(ptrval)" on each side. */
static int is_range(const char *p, const char *e)
{
    const char *dash = memchr(p, '-', (size_t)(e - p));
    if (dash == NULL || e - p < 7 || p[0] != '0' || p[1] != 'x' || dash[1] != '0' || dash[2] != 'x')
        return 0;
    for (int side = 0; side < 2; side++) {
        const char *a = side ? dash + 3 : p + 2;
        const char *b = side ? e : dash;
        if (b - a == 8 && memcmp(a, "(ptrval)", 8) == 0)
            continue;
        if (a == b)
            return 0;
        for (; a < b; a++)
            if (!((*a >= '0' && *a <= '9') || (*a >= 'a' && *a <= 'f') || (*a >= 'A' && *a <= 'F')))
                return 0;
    }
    return 1;
}

static int grow_slots(pw_vmallocinfo_doc_t *doc)
{
    size_t ns = doc->n_slots_ ? doc->n_slots_ * 2 : 256;
    uint32_t *s = pw_calloc(ns, sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < doc->n_callers; i++) {
        const pw_vmalloc_caller_t *c = &doc->callers[i];
        size_t j = pw_proc_text_hash(doc->keys_ + c->key_off_, c->key_len) & (ns - 1);
        while (s[j] != 0)
            j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)(i + 1);
    }
    pw_free(doc->slots_);
    doc->slots_ = s;
    doc->n_slots_ = ns;
    return 0;
}

/* The caller entry of `key`, added when new. NULL on ENOMEM. */
static pw_vmalloc_caller_t *find_or_add(pw_vmallocinfo_doc_t *doc, const char *key, size_t n,
                                        uint32_t line)
{
    if ((doc->n_callers + 1) * 2 > doc->n_slots_ && grow_slots(doc) != 0)
        return NULL;
    size_t mask = doc->n_slots_ - 1;
    size_t j = pw_proc_text_hash(key, n) & mask;
    while (doc->slots_[j] != 0) {
        pw_vmalloc_caller_t *c = &doc->callers[doc->slots_[j] - 1];
        if (c->key_len == n && memcmp(doc->keys_ + c->key_off_, key, n) == 0)
            return c;
        j = (j + 1) & mask;
    }
    if (doc->keys_len_ + n + 1 > doc->keys_cap_) {
        size_t nc = doc->keys_cap_ ? doc->keys_cap_ * 2 : 4096;
        while (nc < doc->keys_len_ + n + 1)
            nc *= 2;
        char *nk = pw_realloc(doc->keys_, nc);
        if (nk == NULL)
            return NULL;
        doc->keys_ = nk;
        doc->keys_cap_ = nc;
    }
    if (doc->n_callers == doc->callers_cap_) {
        size_t nc = doc->callers_cap_ ? doc->callers_cap_ * 2 : 64;
        pw_vmalloc_caller_t *ncs = pw_realloc(doc->callers, nc * sizeof(*ncs));
        if (ncs == NULL)
            return NULL;
        doc->callers = ncs;
        doc->callers_cap_ = nc;
    }
    pw_vmalloc_caller_t *c = &doc->callers[doc->n_callers];
    memset(c, 0, sizeof(*c));
    c->key_off_ = doc->keys_len_;
    c->key_len = (uint32_t)n;
    c->line = line;
    memcpy(doc->keys_ + doc->keys_len_, key, n);
    doc->keys_[doc->keys_len_ + n] = '\0';
    doc->keys_len_ += n + 1;
    doc->slots_[j] = (uint32_t)(++doc->n_callers);
    return c;
}

static int add_u64(uint64_t *a, uint64_t b)
{
    return __builtin_add_overflow(*a, b, a) ? PW_ERANGE : 0;
}

/* One area line [s, e). Returns 0, -1 (not an area), or a negative code with diag filled. */
static int area(pw_vmallocinfo_doc_t *doc, const char *s, const char *e, uint32_t line,
                uint64_t off, pw_diag_t *diag)
{
    const char *w[24];
    size_t wl[24];
    int n = 0;
    for (const char *p = s; p < e && n < 24;) {
        while (p < e && is_blank(*p))
            p++;
        if (p == e)
            break;
        const char *q = p;
        while (q < e && !is_blank(*q))
            q++;
        w[n] = p;
        wl[n++] = (size_t)(q - p);
        p = q;
    }
    if (n < 2 || !is_range(w[0], w[0] + wl[0]))
        return -1;
    uint64_t size;
    int r = pw_proc_text_u64(w[1], w[1] + wl[1], &size);
    if (r == PW_ERANGE)
        return pw_diag_set(diag, PW_ERANGE, line, off, "size", "line %u: size out of range", line);
    if (r != 0)
        return -1;
    char key[PW_VMALLOCINFO_MAX_KEY + 1];
    size_t kl = 0;
    int i = 2;
    if (i < n && wl[i] == 10 && memcmp(w[i], "vm_map_ram", 10) == 0) {
        memcpy(key, "vm_map_ram", kl = 10);
        i++;
    } else if (i + 1 < n && wl[i] == 8 && memcmp(w[i], "unpurged", 8) == 0 && wl[i + 1] == 7 &&
               memcmp(w[i + 1], "vm_area", 7) == 0) {
        memcpy(key, "unpurged vm_area", kl = 16);
        i += 2;
    } else if (i < n && memchr(w[i], '=', wl[i]) == NULL) {
        /* "%pS": symbol+0xoff/0xsize; keep up to the '/' */
        const char *slash = memchr(w[i], '/', wl[i]);
        size_t sl = slash ? (size_t)(slash - w[i]) : wl[i];
        if (sl == 0)
            return -1;
        if (sl > PW_VMALLOCINFO_MAX_KEY)
            return pw_diag_set(diag, PW_ETOOBIG, line, off, "caller",
                               "line %u: caller longer than %d bytes", line,
                               PW_VMALLOCINFO_MAX_KEY);
        memcpy(key, w[i], kl = sl);
        i++;
        if (i < n && w[i][0] == '[' && wl[i] >= 3 && w[i][wl[i] - 1] == ']') {
            if (kl + 1 + wl[i] > PW_VMALLOCINFO_MAX_KEY)
                return pw_diag_set(diag, PW_ETOOBIG, line, off, "caller",
                                   "line %u: caller longer than %d bytes", line,
                                   PW_VMALLOCINFO_MAX_KEY);
            key[kl++] = ' ';
            memcpy(key + kl, w[i], wl[i]);
            kl += wl[i];
            i++;
        }
    } else {
        memcpy(key, "(no caller)", kl = 11);
    }
    uint64_t pages = 0;
    for (; i < n; i++)
        if (wl[i] > 6 && memcmp(w[i], "pages=", 6) == 0) {
            r = pw_proc_text_u64(w[i] + 6, w[i] + wl[i], &pages);
            if (r == PW_ERANGE)
                return pw_diag_set(diag, PW_ERANGE, line, off, "pages",
                                   "line %u: pages= out of range", line);
            if (r != 0)
                return -1;
        }
    pw_vmalloc_caller_t *c = find_or_add(doc, key, kl, line);
    if (c == NULL)
        return pw_diag_set(diag, PW_ENOMEM, line, off, "", "out of memory");
    if (add_u64(&c->bytes, size) || add_u64(&c->pages, pages) || add_u64(&doc->total_bytes, size))
        return pw_diag_set(diag, PW_ERANGE, line, off, "size", "line %u: sum of sizes overflows",
                           line);
    c->areas++;
    doc->n_areas++;
    return 0;
}

int pw_vmallocinfo_parse(const char *data, size_t len, const pw_vmallocinfo_opts_t *opts,
                         pw_vmallocinfo_doc_t *out, pw_diag_t *diag)
{
    if (out == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no output document");
    memset(out, 0, sizeof(*out));
    if (data == NULL && len > 0)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "no input");
    pw_vmallocinfo_opts_t o = opts ? *opts : (pw_vmallocinfo_opts_t){0};
    if (o.max_input_bytes == 0)
        o.max_input_bytes = PW_VMALLOCINFO_MAX_INPUT_DEFAULT;
    if (len > o.max_input_bytes)
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "",
                           "input of %zu bytes is over the limit of %zu", len, o.max_input_bytes);
    int r = 0;
    pw_proc_lines_t it;
    pw_proc_lines_init(&it, data, len, PW_VMALLOCINFO_MAX_LINE, "vmallocinfo");
    const char *s, *le;
    uint64_t off;
    while (r == 0 && (r = pw_proc_lines_next(&it, &s, &le, &off, diag)) == 1) {
        r = 0;
        uint32_t line = it.line;
        int a = area(out, s, le, line, off, diag);
        if (a < -1) {
            r = a;
            break;
        }
        if (a == -1) {
            if (o.strict) {
                r = pw_diag_set(diag, PW_EPARSE, line, off, "area",
                                "line %u: not a vmallocinfo area (0xSTART-0xEND SIZE CALLER ...)",
                                line);
                break;
            }
            out->n_skipped++;
            if (out->first_skipped == 0)
                out->first_skipped = line;
        }
    }
    if (r == 0 && !o.strict && out->n_areas == 0 && len > 0)
        r = pw_diag_set(diag, PW_EFORMAT, 0, 0, "",
                        "no vmallocinfo area line: not /proc/vmallocinfo");
    if (r != 0) {
        pw_vmallocinfo_doc_close(out);
        return r;
    }
    for (size_t i = 0; i < out->n_callers; i++)
        out->callers[i].key = out->keys_ + out->callers[i].key_off_;
    return 0;
}

void pw_vmallocinfo_doc_close(pw_vmallocinfo_doc_t *doc)
{
    if (doc == NULL)
        return;
    pw_free(doc->callers);
    pw_free(doc->keys_);
    pw_free(doc->slots_);
    memset(doc, 0, sizeof(*doc));
}
