#include "tagdict.h"
#include "alloc.h"
#include "error.h"

#include <string.h>

void pw_tagdict_init(pw_tagdict_t *d, uint32_t max_tags)
{
    memset(d, 0, sizeof(*d));
    d->max = max_tags ? max_tags : PW_TAGDICT_MAX_DEFAULT;
}

void pw_tagdict_close(pw_tagdict_t *d)
{
    if (d == NULL)
        return;
    pw_free(d->bytes);
    pw_free(d->off);
    pw_free(d->lens);
    pw_free(d->slots);
    memset(d, 0, sizeof(*d));
}

/* FNV-1a: tags are short (4 bytes on Windows), so a simple byte hash is fast enough. */
static uint32_t hash_tag(const uint8_t *tag, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ tag[i]) * 16777619u;
    return h ^ (uint32_t)len;
}

static uint32_t *find_slot(const pw_tagdict_t *d, const uint8_t *tag, size_t len)
{
    uint32_t mask = d->nslots - 1;
    for (uint32_t i = hash_tag(tag, len) & mask;; i = (i + 1) & mask) {
        uint32_t v = d->slots[i];
        if (v == 0)
            return &d->slots[i];
        uint32_t id = v - 1;
        if (d->lens[id] == len && memcmp(d->bytes + d->off[id], tag, len) == 0)
            return &d->slots[i];
    }
}

int64_t pw_tagdict_find(const pw_tagdict_t *d, const uint8_t *tag, size_t len)
{
    if (d->nslots == 0 || len == 0 || len > PW_TAG_MAX)
        return PW_ENOENT;
    uint32_t v = *find_slot(d, tag, len);
    return v ? (int64_t)(v - 1) : PW_ENOENT;
}

static int rehash(pw_tagdict_t *d, uint32_t nslots)
{
    uint32_t *slots = pw_calloc(nslots, sizeof(*slots));
    if (slots == NULL)
        return PW_ENOMEM;
    pw_free(d->slots);
    d->slots = slots;
    d->nslots = nslots;
    for (uint32_t id = 0; id < d->n; id++)
        *find_slot(d, d->bytes + d->off[id], d->lens[id]) = id + 1;
    return 0;
}

/* Makes room for one more id of `len` bytes; all-or-nothing. May move d->bytes. */
static int reserve_one(pw_tagdict_t *d, size_t len)
{
    if (d->n >= d->max)
        return PW_ETOOBIG;
    if (d->n == d->cap) {
        uint32_t ncap = d->cap ? d->cap * 2 : 256;
        if (ncap > d->max)
            ncap = d->max;
        uint32_t *off = pw_realloc(d->off, (size_t)ncap * sizeof(*off));
        if (off == NULL)
            return PW_ENOMEM;
        d->off = off;
        uint8_t *lens = pw_realloc(d->lens, ncap);
        if (lens == NULL)
            return PW_ENOMEM;
        d->lens = lens;
        d->cap = ncap;
    }
    if (d->used + len > d->bytes_cap) {
        size_t ncap = d->bytes_cap ? d->bytes_cap * 2 : 1024;
        while (ncap < d->used + len)
            ncap *= 2;
        uint8_t *bytes = pw_realloc(d->bytes, ncap);
        if (bytes == NULL)
            return PW_ENOMEM;
        d->bytes = bytes;
        d->bytes_cap = ncap;
    }
    /* Keep the load factor under 1/2. */
    if ((uint64_t)(d->n + 1) * 2 > d->nslots) {
        uint32_t ns = d->nslots ? d->nslots * 2 : 512;
        int r = rehash(d, ns);
        if (r != 0)
            return r;
    }
    return 0;
}

static void append(pw_tagdict_t *d, const uint8_t *tag, size_t len, uint32_t *slot)
{
    uint32_t id = d->n++;
    d->off[id] = (uint32_t)d->used;
    memcpy(d->bytes + d->used, tag, len);
    d->used += len;
    d->lens[id] = (uint8_t)len;
    *slot = id + 1;
}

int64_t pw_tagdict_intern(pw_tagdict_t *d, const uint8_t *tag, size_t len, int *added)
{
    if (len == 0 || len > PW_TAG_MAX)
        return PW_EINVAL;
    if (d->nslots) {
        uint32_t v = *find_slot(d, tag, len);
        if (v) {
            if (added)
                *added = 0;
            return v - 1;
        }
    }
    uint8_t copy[PW_TAG_MAX];
    memcpy(copy, tag, len); /* `tag` may lie in d->bytes, which reserve_one can move */
    int r = reserve_one(d, len);
    if (r != 0)
        return r;
    uint32_t *slot = find_slot(d, copy, len);
    append(d, copy, len, slot);
    if (added)
        *added = 1;
    return d->n - 1;
}

int pw_tagdict_define(pw_tagdict_t *d, uint32_t id, const uint8_t *tag, size_t len)
{
    if (len == 0 || len > PW_TAG_MAX)
        return PW_EINVAL;
    if (id < d->n)
        return d->lens[id] == len && memcmp(d->bytes + d->off[id], tag, len) == 0 ? 0 : PW_EBADTAG;
    if (id != d->n)
        return PW_EBADTAG;
    /* The same bytes under a second id would make keys ambiguous. */
    if (pw_tagdict_find(d, tag, len) >= 0)
        return PW_EBADTAG;
    uint8_t copy[PW_TAG_MAX];
    memcpy(copy, tag, len);
    int r = reserve_one(d, len);
    if (r != 0)
        return r;
    append(d, copy, len, find_slot(d, copy, len));
    return 0;
}

const uint8_t *pw_tagdict_get(const pw_tagdict_t *d, uint32_t id, size_t *len)
{
    if (id >= d->n)
        return NULL;
    if (len)
        *len = d->lens[id];
    return d->bytes + d->off[id];
}

void pw_tagdict_truncate(pw_tagdict_t *d, uint32_t n)
{
    if (n >= d->n)
        return;
    d->n = n;
    d->used = n ? d->off[n - 1] + d->lens[n - 1] : 0;
    if (d->nslots == 0)
        return;
    memset(d->slots, 0, (size_t)d->nslots * sizeof(*d->slots));
    for (uint32_t id = 0; id < d->n; id++)
        *find_slot(d, d->bytes + d->off[id], d->lens[id]) = id + 1;
}
