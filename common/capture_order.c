/* capture_order.c: time order of saved screens (capture_order.h). */
#include "capture_order.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

size_t pw_capture_time_back(const pw_poolmon_doc_t *doc, size_t n)
{
    if (doc == NULL || n > doc->n_screens)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (doc->screens[i].has_file_time &&
            doc->screens[i].timestamp_ms <= doc->screens[i - 1].timestamp_ms)
            return i;
    return 0;
}

/* Orders entries by (pool, tag length, tag bytes). */
static int entry_cmp(const void *x, const void *y)
{
    const pw_entry_t *a = *(const pw_entry_t *const *)x, *b = *(const pw_entry_t *const *)y;
    if (a->pool != b->pool)
        return a->pool < b->pool ? -1 : 1;
    if (a->tag_len != b->tag_len)
        return a->tag_len < b->tag_len ? -1 : 1;
    return memcmp(a->tag, b->tag, a->tag_len);
}

int pw_capture_counters_fall(const pw_sample_t *a, const pw_sample_t *b, size_t *common,
                             size_t *fell)
{
    *common = *fell = 0;
    if ((a->flags & PW_SAMPLE_NO_ALLOCS) || (b->flags & PW_SAMPLE_NO_ALLOCS) || b->n == 0)
        return 0;
    const pw_entry_t **idx = pw_malloc(b->n * sizeof(*idx));
    if (idx == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        idx[i] = &b->entries[i];
    qsort(idx, b->n, sizeof(*idx), entry_cmp);
    for (size_t i = 0; i < a->n; i++) {
        const pw_entry_t *key = &a->entries[i];
        const pw_entry_t **hit = bsearch(&key, idx, b->n, sizeof(*idx), entry_cmp);
        if (hit == NULL)
            continue;
        (*common)++;
        *fell += (*hit)->allocs < key->allocs && (*hit)->frees < key->frees;
    }
    pw_free(idx);
    return 0;
}

int pw_capture_fell(size_t common, size_t fell)
{
    return fell >= 2 && fell * 2 > common;
}
