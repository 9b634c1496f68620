/* linux_rows.c: a Linux sample's rows from parsed /proc files (see linux_rows.h). */
#include "linux_rows.h"
#include "alloc.h"
#include "proc_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void pw_linux_rows_init(pw_linux_rows_t *lr)
{
    memset(lr, 0, sizeof(*lr));
    lr->page_size = 4096;
}

void pw_linux_rows_close(pw_linux_rows_t *lr)
{
    if (lr == NULL)
        return;
    pw_free(lr->slots);
    pw_linux_rows_init(lr);
}

static void slot_put(pw_linux_rows_t *lr, size_t idx)
{
    const pw_entry_t *e = &lr->s->entries[idx];
    size_t mask = lr->n_slots - 1;
    size_t j = pw_proc_text_hash(e->tag, e->tag_len) & mask;
    while (lr->slots[j] != 0)
        j = (j + 1) & mask;
    lr->slots[j] = (uint32_t)(idx + 1);
}

static int rehash(pw_linux_rows_t *lr, size_t want)
{
    size_t ns = 256;
    while (ns < want * 2)
        ns *= 2;
    if (ns <= lr->n_slots)
        return 0;
    uint32_t *s = pw_calloc(ns, sizeof(*s));
    if (s == NULL)
        return PW_ENOMEM;
    pw_free(lr->slots);
    lr->slots = s;
    lr->n_slots = ns;
    for (size_t i = 0; i < lr->s->n; i++)
        slot_put(lr, i);
    return 0;
}

int pw_linux_rows_begin(pw_linux_rows_t *lr, pw_sample_t *s)
{
    lr->s = s;
    memset(&lr->st, 0, sizeof(lr->st));
    s->flags |= PW_SAMPLE_NO_ALLOCS;
    if (lr->slots != NULL)
        memset(lr->slots, 0, lr->n_slots * sizeof(*lr->slots));
    size_t before = lr->n_slots;
    int r = rehash(lr, s->n + 1); /* a new table holds the rows already */
    if (r == 0 && lr->n_slots == before)
        for (size_t i = 0; i < s->n; i++)
            slot_put(lr, i);
    return r;
}

static int taken(const pw_linux_rows_t *lr, const char *tag, size_t n)
{
    size_t mask = lr->n_slots - 1;
    size_t j = pw_proc_text_hash(tag, n) & mask;
    while (lr->slots[j] != 0) {
        const pw_entry_t *e = &lr->s->entries[lr->slots[j] - 1];
        if (e->tag_len == n && memcmp(e->tag, tag, n) == 0)
            return 1;
        j = (j + 1) & mask;
    }
    return 0;
}

/* Fits `name` into PW_LINUX_KEY_MAX bytes: first 39 bytes, '~', 8 hex digits of its hash. */
static size_t fit(const char *name, size_t n, char *out)
{
    if (n <= PW_LINUX_KEY_MAX) {
        memcpy(out, name, n);
        out[n] = '\0';
        return n;
    }
    char h[16];
    snprintf(h, sizeof(h), "%08" PRIx32, (uint32_t)pw_proc_text_hash(name, n));
    memcpy(out, name, PW_LINUX_KEY_MAX - 9);
    out[PW_LINUX_KEY_MAX - 9] = '~';
    memcpy(out + PW_LINUX_KEY_MAX - 8, h, 8);
    out[PW_LINUX_KEY_MAX] = '\0';
    return PW_LINUX_KEY_MAX;
}

/* Adds a row under `key` (already fitted), made unique with "#N". */
static int add_row(pw_linux_rows_t *lr, const char *key, size_t n, uint64_t diff, uint64_t bytes,
                   uint64_t held, pw_diag_t *d)
{
    if ((lr->s->n + 1) * 2 > lr->n_slots && rehash(lr, lr->s->n + 1) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    char buf[PW_LINUX_KEY_MAX + 16];
    const char *tag = key;
    size_t tl = n;
    for (unsigned k = 2; taken(lr, tag, tl); k++) {
        char suf[16];
        int sl = snprintf(suf, sizeof(suf), "#%u", k);
        size_t keep = n + (size_t)sl > PW_LINUX_KEY_MAX ? PW_LINUX_KEY_MAX - (size_t)sl : n;
        memcpy(buf, key, keep);
        memcpy(buf + keep, suf, (size_t)sl);
        tag = buf;
        tl = keep + (size_t)sl;
        if (k == 2)
            lr->st.renamed++;
    }
    int r = pw_sample_add(lr->s, tag, tl, PW_POOL_NONPAGED, 0, 0, diff, bytes);
    if (r != 0)
        return pw_diag_set(d, r, 0, 0, "tag", "cannot add row %.*s: %s", (int)tl, tag,
                           pw_strerror(r));
    lr->s->entries[lr->s->n - 1].held_bytes = held;
    slot_put(lr, lr->s->n - 1);
    return 0;
}

int pw_linux_rows_add_slab(pw_linux_rows_t *lr, const pw_slab_cache_t *caches, size_t n,
                           pw_diag_t *d)
{
    for (size_t i = 0; i < n; i++) {
        const pw_slab_cache_t *c = &caches[i];
        uint64_t bytes;
        if (__builtin_mul_overflow(c->active_objs, c->objsize, &bytes))
            return pw_diag_set(d, PW_ERANGE, c->line, 0, "objsize",
                               "cache %s: active_objs * objsize overflows", c->name);
        uint64_t held = 0;
        int hr = pw_slabinfo_cache_slab_bytes(c, lr->page_size, &held);
        if (hr == PW_ERANGE)
            return pw_diag_set(d, PW_ERANGE, c->line, 0, "num_slabs",
                               "cache %s: num_slabs * pagesperslab * %llu overflows", c->name,
                               (unsigned long long)lr->page_size);
        if (hr != 0)
            held = 0; /* not in the input */
        char key[PW_LINUX_KEY_MAX + 1];
        size_t kl = fit(c->name, c->name_len, key);
        lr->st.shortened += kl != c->name_len;
        int r = add_row(lr, key, kl, c->active_objs, bytes, held, d);
        if (r != 0)
            return r;
        lr->st.slab_rows++;
    }
    return 0;
}

size_t pw_linux_rows_site_key(const char *file, uint32_t src_line, char *out)
{
    char ln[16];
    int ll = snprintf(ln, sizeof(ln), ":%" PRIu32, src_line);
    const char *f = file;
    size_t fl = strlen(file);
    /* drop leading directories until FILE:LINE fits */
    while (fl + (size_t)ll > PW_LINUX_KEY_MAX) {
        const char *sl = memchr(f, '/', fl);
        if (sl == NULL)
            break;
        fl -= (size_t)(sl + 1 - f);
        f = sl + 1;
    }
    char whole[4096 + 16];
    if (fl > 4096)
        fl = 4096;
    memcpy(whole, f, fl);
    memcpy(whole + fl, ln, (size_t)ll);
    return fit(whole, fl + (size_t)ll, out);
}

int pw_linux_rows_add_alloc(pw_linux_rows_t *lr, const pw_allocinfo_doc_t *doc, pw_diag_t *d)
{
    for (size_t i = 0; i < doc->n_sites; i++) {
        const pw_alloc_site_t *s = &doc->sites[i];
        uint64_t bytes = s->bytes > 0 ? (uint64_t)s->bytes : 0;
        if (bytes == 0 && s->calls == 0) {
            lr->st.sites_idle++;
            continue;
        }
        lr->st.sites_inaccurate += s->inaccurate;
        char key[PW_LINUX_KEY_MAX + 1];
        size_t kl = pw_linux_rows_site_key(s->file, s->src_line, key);
        lr->st.shortened +=
            kl != strlen(s->file) + (size_t)snprintf(NULL, 0, ":%" PRIu32, s->src_line);
        int r = add_row(lr, key, kl, s->calls, bytes, 0, d);
        if (r != 0)
            return r;
        lr->st.site_rows++;
    }
    return 0;
}

int pw_linux_rows_add_vmalloc(pw_linux_rows_t *lr, const pw_vmallocinfo_doc_t *doc, pw_diag_t *d)
{
    for (size_t i = 0; i < doc->n_callers; i++) {
        const pw_vmalloc_caller_t *c = &doc->callers[i];
        char name[PW_VMALLOCINFO_MAX_KEY + 4];
        int nl = snprintf(name, sizeof(name), "vm:%s", c->key);
        char key[PW_LINUX_KEY_MAX + 1];
        size_t kl = fit(name, (size_t)nl, key);
        lr->st.shortened += kl != (size_t)nl;
        int r = add_row(lr, key, kl, c->areas, c->bytes, 0, d);
        if (r != 0)
            return r;
        lr->st.vmalloc_rows++;
    }
    return 0;
}
