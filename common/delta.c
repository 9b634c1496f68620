#include "delta.h"
#include "alloc.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>

static uint64_t width_mask(unsigned w)
{
    return w >= 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
}

int pw_counter_delta(uint64_t prev, uint64_t cur, unsigned width_bits, uint64_t *out)
{
    if (width_bits != 32 && width_bits != 64)
        return PW_EINVAL;
    uint64_t m = width_mask(width_bits);
    uint64_t d = (cur - prev) & m;
    if (width_bits == 64) {
        /* A 64-bit counter does not wrap in practice: any step back is a reset. */
        if (cur < prev)
            return PW_ERESET;
    } else if (d > ((uint64_t)1 << (width_bits - 1))) {
        return PW_ERESET;
    }
    *out = d;
    return 0;
}

/* Signed difference of two values modulo 2^w, sign-extended from bit w-1. */
static int64_t signed_step(uint64_t prev, uint64_t cur, unsigned w)
{
    uint64_t d = (cur - prev) & width_mask(w);
    if (w < 64 && (d >> (w - 1)) & 1)
        d |= ~width_mask(w);
    return (int64_t)d;
}

/* Host totals between the sample struct and the wire message, field by field. */
static void totals_to_proto(const pw_totals_t *t, Poolwatch__V1__HostTotals *m)
{
    m->paged_bytes = t->paged_bytes;
    m->nonpaged_bytes = t->nonpaged_bytes;
    m->paged_limit_bytes = t->paged_limit_bytes;
    m->nonpaged_limit_bytes = t->nonpaged_limit_bytes;
    m->physical_memory_bytes = t->physical_memory_bytes;
    m->available_bytes = t->available_bytes;
    m->commit_bytes = t->commit_bytes;
    m->commit_limit_bytes = t->commit_limit_bytes;
    m->commit_peak_bytes = t->commit_peak_bytes;
    m->slab_reclaimable_bytes = t->slab_reclaimable_bytes;
    m->slab_unreclaimable_bytes = t->slab_unreclaimable_bytes;
    m->agent_rss_bytes = t->agent_rss_bytes;
    m->agent_cpu_ms = t->agent_cpu_ms;
    m->agent_handles = t->agent_handles > UINT32_MAX ? UINT32_MAX : (uint32_t)t->agent_handles;
}

static void totals_from_proto(const Poolwatch__V1__HostTotals *m, pw_totals_t *t)
{
    t->paged_bytes = m->paged_bytes;
    t->nonpaged_bytes = m->nonpaged_bytes;
    t->paged_limit_bytes = m->paged_limit_bytes;
    t->nonpaged_limit_bytes = m->nonpaged_limit_bytes;
    t->physical_memory_bytes = m->physical_memory_bytes;
    t->available_bytes = m->available_bytes;
    t->commit_bytes = m->commit_bytes;
    t->commit_limit_bytes = m->commit_limit_bytes;
    t->commit_peak_bytes = m->commit_peak_bytes;
    t->slab_reclaimable_bytes = m->slab_reclaimable_bytes;
    t->slab_unreclaimable_bytes = m->slab_unreclaimable_bytes;
    t->agent_rss_bytes = m->agent_rss_bytes;
    t->agent_cpu_ms = m->agent_cpu_ms;
    t->agent_handles = m->agent_handles;
}

static int cmp_row(const void *a, const void *b)
{
    uint32_t ka = ((const pw_row_t *)a)->key, kb = ((const pw_row_t *)b)->key;
    return ka < kb ? -1 : ka > kb;
}

static int grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *np = pw_realloc(*p, ncap * elem);
    if (np == NULL)
        return PW_ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}

/* ============================================================================================
 * Encoder
 * ========================================================================================== */

int pw_delta_enc_init(pw_delta_enc_t *e, unsigned width_bits)
{
    memset(e, 0, sizeof(*e));
    if (width_bits != 32 && width_bits != 64)
        return PW_EINVAL;
    e->width = width_bits;
    pw_tagdict_init(&e->dict, 0);
    return 0;
}

void pw_delta_enc_close(pw_delta_enc_t *e)
{
    if (e == NULL)
        return;
    pw_tagdict_close(&e->dict);
    pw_free(e->prev);
    pw_free(e->cur);
    pw_free(e->pos_key);
    pw_free(e->pos_rank);
    pw_free(e->c_key_gap);
    pw_free(e->r_key_gap);
    pw_free(e->v_gap);
    pw_free(e->c_allocs);
    pw_free(e->c_diff);
    pw_free(e->c_bytes);
    pw_free(e->r_allocs);
    pw_free(e->r_diff);
    pw_free(e->r_bytes);
    pw_free(e->c_held);
    pw_free(e->r_held);
    pw_free(e->defs);
    pw_free(e->defp);
    memset(e, 0, sizeof(*e));
}

/* Grows both row buffers (they are swapped) to hold `n` rows. */
static int enc_reserve_rows(pw_delta_enc_t *e, size_t n)
{
    if (n <= e->rows_cap)
        return 0;
    size_t ncap = e->rows_cap ? e->rows_cap : 256;
    while (ncap < n)
        ncap *= 2;
    pw_row_t *a = pw_realloc(e->prev, ncap * sizeof(*a));
    if (a == NULL)
        return PW_ENOMEM;
    e->prev = a;
    pw_row_t *b = pw_realloc(e->cur, ncap * sizeof(*b));
    if (b == NULL)
        return PW_ENOMEM;
    e->cur = b;
    e->rows_cap = ncap;
    return 0;
}

/* Column arrays grow while a message is built and are freed at the next call when they
 * outgrew ENC_COLS_KEEP entries: a keyframe needs a column entry per row (3,000 rows: 84 KB)
 * once an hour, a delta a few hundred, and the agent should not hold a keyframe's worth of
 * memory in between. */
#define ENC_COLS_KEEP 1024

static int grow_group(void **cols[], const size_t elem[], size_t ncols, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 256;
    while (ncap < need)
        ncap *= 2;
    for (size_t k = 0; k < ncols; k++) {
        size_t c = *cap;
        if (grow_array(cols[k], &c, ncap, elem[k]) != 0)
            return PW_ENOMEM; /* the arrays grown so far are larger than *cap: harmless */
    }
    *cap = ncap;
    return 0;
}

static int enc_reserve_r(pw_delta_enc_t *e, size_t need)
{
    void **cols[] = {(void **)&e->r_key_gap, (void **)&e->r_allocs, (void **)&e->r_diff,
                     (void **)&e->r_bytes, (void **)&e->r_held};
    const size_t elem[] = {sizeof(*e->r_key_gap), sizeof(*e->r_allocs), sizeof(*e->r_diff),
                           sizeof(*e->r_bytes), sizeof(*e->r_held)};
    return grow_group(cols, elem, 5, &e->r_cap, need);
}

static int enc_reserve_c(pw_delta_enc_t *e, size_t need)
{
    void **cols[] = {(void **)&e->c_key_gap, (void **)&e->c_allocs, (void **)&e->c_diff,
                     (void **)&e->c_bytes, (void **)&e->c_held};
    const size_t elem[] = {sizeof(*e->c_key_gap), sizeof(*e->c_allocs), sizeof(*e->c_diff),
                           sizeof(*e->c_bytes), sizeof(*e->c_held)};
    return grow_group(cols, elem, 5, &e->c_cap, need);
}

static int enc_reserve_v(pw_delta_enc_t *e, size_t need)
{
    void **cols[] = {(void **)&e->v_gap};
    const size_t elem[] = {sizeof(*e->v_gap)};
    return grow_group(cols, elem, 1, &e->v_cap, need);
}

/* Frees the column groups and tag definitions that the previous message made large. */
static void enc_trim(pw_delta_enc_t *e)
{
    if (e->r_cap > ENC_COLS_KEEP) {
        pw_free(e->r_key_gap), pw_free(e->r_allocs), pw_free(e->r_diff), pw_free(e->r_bytes);
        pw_free(e->r_held);
        e->r_key_gap = NULL, e->r_allocs = NULL, e->r_diff = NULL, e->r_bytes = NULL;
        e->r_held = NULL;
        e->r_cap = 0;
    }
    if (e->c_cap > ENC_COLS_KEEP) {
        pw_free(e->c_key_gap), pw_free(e->c_allocs), pw_free(e->c_diff), pw_free(e->c_bytes);
        pw_free(e->c_held);
        e->c_key_gap = NULL, e->c_allocs = NULL, e->c_diff = NULL, e->c_bytes = NULL;
        e->c_held = NULL;
        e->c_cap = 0;
    }
    if (e->v_cap > ENC_COLS_KEEP) {
        pw_free(e->v_gap);
        e->v_gap = NULL;
        e->v_cap = 0;
    }
    if (e->defs_cap > ENC_COLS_KEEP) {
        pw_free(e->defs), pw_free(e->defp);
        e->defs = NULL, e->defp = NULL;
        e->defs_cap = 0;
    }
}

/* Checks entry i of `s` and finds its tag id: the previous sample's id at this position when
 * the tag bytes still match, else by hashing. Returns the key, or a negative error. */
static int64_t enc_entry_key(pw_delta_enc_t *e, const pw_sample_t *s, size_t i, uint64_t m,
                             int no_allocs, pw_diag_t *d)
{
    const pw_entry_t *en = &s->entries[i];
    if (en->pool >= PW_POOL__COUNT || en->tag_len == 0 || en->tag_len > PW_TAG_MAX)
        return pw_diag_set(d, PW_EINVAL, 0, i, "pool", "entry %zu: bad pool type or tag", i);
    if (no_allocs ? (en->allocs | en->frees) != 0
                  : (en->allocs > m || en->frees > m || en->diff != ((en->allocs - en->frees) & m)))
        return pw_diag_set(d, PW_EINVAL, 0, i, "diff",
                           "entry %zu: counters do not fit the %u-bit counter model", i, e->width);
    if (en->diff > m)
        return pw_diag_set(d, PW_EINVAL, 0, i, "diff", "entry %zu: diff too large", i);
    int64_t id = -1;
    if (i < e->npos) {
        size_t len;
        uint32_t pid = PW_ROW_ID(e->pos_key[i]);
        const uint8_t *t = pw_tagdict_get(&e->dict, pid, &len);
        if (t != NULL && len == en->tag_len && memcmp(t, en->tag, len) == 0)
            id = pid;
    }
    if (id < 0) {
        id = pw_tagdict_intern(&e->dict, en->tag, en->tag_len, NULL);
        if (id < 0)
            return pw_diag_set(d, (int)id, 0, i, "tag", "entry %zu: %s", i, pw_strerror((int)id));
    }
    return (int64_t)PW_ROW_KEY(id, en->pool);
}

static void enc_put_row(pw_row_t *row, uint32_t key, const pw_entry_t *en)
{
    row->key = key;
    row->reserved = 0;
    row->allocs = en->allocs;
    row->frees = en->frees;
    row->diff = en->diff;
    row->bytes = en->bytes;
    row->held_bytes = en->held_bytes;
}

/* Maps the sample's entries to keyed rows in e->cur, sorted. Fast path: when every entry has
 * the key it had at the same index in the previous sample (a source's stable order), each row
 * goes straight to its sorted place (pos_rank), with no hashing and no sort. */
static int enc_build_rows(pw_delta_enc_t *e, const pw_sample_t *s, pw_diag_t *d)
{
    uint64_t m = width_mask(e->width);
    int no_allocs = (s->flags & PW_SAMPLE_NO_ALLOCS) != 0;
    int r = enc_reserve_rows(e, s->n);
    if (r == 0)
        r = grow_array((void **)&e->pos_key, &e->pos_cap, s->n, sizeof(*e->pos_key));
    if (r == 0)
        r = grow_array((void **)&e->pos_rank, &e->rank_cap, s->n, sizeof(*e->pos_rank));
    if (r != 0)
        return r;
    if (e->rank_valid && s->n == e->npos) {
        size_t i;
        for (i = 0; i < s->n; i++) {
            int64_t key = enc_entry_key(e, s, i, m, no_allocs, d);
            if (key < 0)
                return (int)key; /* the cache stays valid: nothing in it changed */
            if ((uint32_t)key != e->pos_key[i])
                break;
            enc_put_row(&e->cur[e->pos_rank[i]], (uint32_t)key, &s->entries[i]);
        }
        if (i == s->n) {
            e->ncur = s->n;
            return 0; /* same keys as the previous sample: sorted, and no duplicates */
        }
    }
    /* Slow path: keys in entry order, then a sort that records each entry's rank. */
    e->rank_valid = 0;
    int sorted = 1;
    for (size_t i = 0; i < s->n; i++) {
        int64_t key = enc_entry_key(e, s, i, m, no_allocs, d);
        if (key < 0) {
            e->npos = 0;
            return (int)key;
        }
        pw_row_t *row = &e->cur[i];
        enc_put_row(row, (uint32_t)key, &s->entries[i]);
        row->reserved = (uint32_t)i; /* entry index, while sorting */
        if (i > 0 && row->key <= e->cur[i - 1].key)
            sorted = 0;
    }
    e->ncur = s->n;
    if (!sorted)
        qsort(e->cur, e->ncur, sizeof(*e->cur), cmp_row);
    for (size_t i = 0; i < e->ncur; i++) {
        pw_row_t *row = &e->cur[i];
        if (i > 0 && row->key == e->cur[i - 1].key) {
            size_t len;
            const uint8_t *t = pw_tagdict_get(&e->dict, PW_ROW_ID(row->key), &len);
            char shown[PW_TAG_MAX * 4 + 1];
            pw_tag_format(t, len, shown, sizeof(shown));
            e->npos = 0;
            for (size_t j = 0; j < e->ncur; j++)
                e->cur[j].reserved = 0;
            return pw_diag_set(d, PW_EINVAL, 0, i, "tag", "tag '%s' (%s) appears twice", shown,
                               pw_pool_name((int)PW_ROW_POOL(row->key)));
        }
        e->pos_key[row->reserved] = row->key;
        e->pos_rank[row->reserved] = (uint32_t)i;
        row->reserved = 0;
    }
    e->npos = s->n;
    e->rank_valid = 1;
    return 0;
}

static int enc_dict(pw_delta_enc_t *e, unsigned flags)
{
    uint32_t from = (flags & PW_DELTA_WITH_DICT) ? 0 : e->dict_sent;
    uint32_t n = pw_tagdict_count(&e->dict) - from;
    if (n > e->defs_cap) {
        size_t cap = e->defs_cap, cap2 = e->defs_cap;
        if (grow_array((void **)&e->defs, &cap, n, sizeof(*e->defs)) != 0 ||
            grow_array((void **)&e->defp, &cap2, n, sizeof(*e->defp)) != 0)
            return PW_ENOMEM;
        e->defs_cap = cap < cap2 ? cap : cap2;
    }
    for (uint32_t i = 0; i < n; i++) {
        Poolwatch__V1__TagDef *td = &e->defs[i];
        poolwatch__v1__tag_def__init(td);
        size_t len;
        const uint8_t *t = pw_tagdict_get(&e->dict, from + i, &len);
        td->id = from + i;
        td->tag.data = (uint8_t *)(uintptr_t)t;
        td->tag.len = len;
        e->defp[i] = td;
    }
    e->msg.n_dict = n;
    e->msg.dict = n ? e->defp : NULL;
    return 0;
}

static int put_abs(pw_delta_enc_t *e, size_t *n, uint32_t *last_key, const pw_row_t *row,
                   int with_allocs, int *any_held)
{
    if (*n >= e->r_cap && enc_reserve_r(e, *n + 1) != 0)
        return PW_ENOMEM;
    size_t i = (*n)++;
    e->r_key_gap[i] = row->key - *last_key;
    *last_key = row->key;
    if (with_allocs)
        e->r_allocs[i] = row->allocs;
    e->r_diff[i] = row->diff;
    e->r_bytes[i] = row->bytes;
    e->r_held[i] = row->held_bytes;
    *any_held |= row->held_bytes != 0;
    return 0;
}

int pw_delta_encode(pw_delta_enc_t *e, const pw_sample_t *s, unsigned flags,
                    const Poolwatch__V1__Sample **out, pw_diag_t *d)
{
    if (e->have_prev && s->seq <= e->prev_seq)
        return pw_diag_set(d, PW_ESEQ, 0, 0, "seq", "seq %llu does not follow %llu",
                           (unsigned long long)s->seq, (unsigned long long)e->prev_seq);
    enc_trim(e); /* the previous message is no longer needed */
    int r = enc_build_rows(e, s, d);
    if (r != 0)
        return r;

    int with_allocs = (s->flags & PW_SAMPLE_NO_ALLOCS) == 0;
    int keyframe = !e->have_prev || (flags & PW_DELTA_KEYFRAME) ||
                   (e->prev_flags & PW_SAMPLE_NO_ALLOCS) != (s->flags & PW_SAMPLE_NO_ALLOCS);

    Poolwatch__V1__Sample *msg = &e->msg;
    poolwatch__v1__sample__init(msg);
    poolwatch__v1__rows__init(&e->rows);
    poolwatch__v1__changes__init(&e->changes);
    poolwatch__v1__host_totals__init(&e->totals);
    msg->seq = s->seq;
    msg->timestamp_ms = s->timestamp_ms;
    msg->keyframe = keyframe;
    msg->base_seq = keyframe ? 0 : e->prev_seq;
    if (!e->have_prev) {
        /* A fresh encoder's ids mean nothing to a decoder of an earlier encoder. */
        msg->dict_reset = 1;
        flags |= PW_DELTA_WITH_DICT;
    }
    const pw_totals_t *t = &s->totals;
    totals_to_proto(t, &e->totals);
    msg->totals = &e->totals;
    if ((r = enc_dict(e, flags)) != 0)
        return r;

    size_t nr = 0, nc = 0, nv = 0;
    uint32_t last_r = 0, last_c = 0, last_v = 0;
    int r_held = 0, c_held = 0; /* a held_bytes column is sent when a value in it is not 0 */
    if (keyframe) {
        if ((r = enc_reserve_r(e, e->ncur)) != 0)
            return r;
        for (size_t i = 0; i < e->ncur; i++)
            put_abs(e, &nr, &last_r, &e->cur[i], with_allocs, &r_held); /* reserved */
    } else {
        /* Merge the two sorted tables. */
        size_t i = 0, j = 0;
        while (i < e->nprev || j < e->ncur) {
            if (j >= e->ncur || (i < e->nprev && e->prev[i].key < e->cur[j].key)) {
                if (nv >= e->v_cap && (r = enc_reserve_v(e, nv + 1)) != 0)
                    return r;
                e->v_gap[nv++] = e->prev[i].key - last_v;
                last_v = e->prev[i].key;
                i++;
                continue;
            }
            if (i >= e->nprev || e->cur[j].key < e->prev[i].key) {
                if ((r = put_abs(e, &nr, &last_r, &e->cur[j], with_allocs, &r_held)) != 0)
                    return r;
                j++;
                continue;
            }
            const pw_row_t *p = &e->prev[i++], *c = &e->cur[j++];
            if (p->allocs == c->allocs && p->frees == c->frees && p->diff == c->diff &&
                p->bytes == c->bytes && p->held_bytes == c->held_bytes)
                continue;
            uint64_t da, df;
            if (with_allocs && (pw_counter_delta(p->allocs, c->allocs, e->width, &da) != 0 ||
                                pw_counter_delta(p->frees, c->frees, e->width, &df) != 0)) {
                if ((r = put_abs(e, &nr, &last_r, c, with_allocs, &r_held)) != 0)
                    return r; /* a reset travels absolutely */
                continue;
            }
            if (nc >= e->c_cap && (r = enc_reserve_c(e, nc + 1)) != 0)
                return r;
            e->c_key_gap[nc] = c->key - last_c;
            last_c = c->key;
            if (with_allocs)
                e->c_allocs[nc] = signed_step(p->allocs, c->allocs, e->width);
            e->c_diff[nc] = signed_step(p->diff, c->diff, e->width);
            e->c_bytes[nc] = signed_step(p->bytes, c->bytes, 64);
            e->c_held[nc] = signed_step(p->held_bytes, c->held_bytes, 64);
            c_held |= e->c_held[nc] != 0;
            nc++;
        }
    }
    e->rows.n_key_gap = e->rows.n_diff = e->rows.n_bytes = nr;
    e->rows.key_gap = e->r_key_gap;
    e->rows.diff = e->r_diff;
    e->rows.bytes = e->r_bytes;
    e->rows.n_allocs = with_allocs ? nr : 0;
    e->rows.allocs = e->r_allocs;
    e->rows.n_held_bytes = r_held ? nr : 0;
    e->rows.held_bytes = e->r_held;
    if (nr > 0)
        msg->rows = &e->rows;
    e->changes.n_key_gap = e->changes.n_d_diff = e->changes.n_d_bytes = nc;
    e->changes.key_gap = e->c_key_gap;
    e->changes.d_diff = e->c_diff;
    e->changes.d_bytes = e->c_bytes;
    e->changes.n_d_allocs = with_allocs ? nc : 0;
    e->changes.d_allocs = e->c_allocs;
    e->changes.n_d_held_bytes = c_held ? nc : 0;
    e->changes.d_held_bytes = e->c_held;
    if (nc > 0)
        msg->changes = &e->changes;
    msg->n_vanished_gap = nv;
    msg->vanished_gap = e->v_gap;

    /* Commit: the sample becomes the base. */
    pw_row_t *tmp = e->prev;
    e->prev = e->cur;
    e->cur = tmp;
    e->nprev = e->ncur;
    e->ncur = 0;
    e->have_prev = 1;
    e->prev_seq = s->seq;
    e->prev_flags = s->flags & PW_SAMPLE_NO_ALLOCS;
    e->dict_sent = pw_tagdict_count(&e->dict);
    *out = msg;
    return 0;
}

/* ============================================================================================
 * Decoder
 * ========================================================================================== */

int pw_delta_dec_init(pw_delta_dec_t *dd, unsigned width_bits, size_t max_rows)
{
    memset(dd, 0, sizeof(*dd));
    if (width_bits != 32 && width_bits != 64)
        return PW_EINVAL;
    dd->width = width_bits;
    dd->max_rows = max_rows ? max_rows : PW_DELTA_MAX_ROWS;
    dd->n_idx = SIZE_MAX;
    pw_tagdict_init(&dd->dict, 0);
    return 0;
}

void pw_delta_dec_close(pw_delta_dec_t *dd)
{
    if (dd == NULL)
        return;
    pw_tagdict_close(&dd->dict);
    pw_free(dd->rows);
    pw_free(dd->scratch);
    pw_free(dd->idx);
    memset(dd, 0, sizeof(*dd));
}

void pw_delta_dec_drop_base(pw_delta_dec_t *dd)
{
    dd->have_base = 0;
    dd->n = 0;
    dd->n_idx = SIZE_MAX;
}

static int dec_reserve(pw_delta_dec_t *dd, size_t n, pw_diag_t *d)
{
    if (n > dd->max_rows)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "rows", "%zu rows exceed the limit of %zu", n,
                           dd->max_rows);
    if (n > dd->cap) {
        size_t ncap = dd->cap ? dd->cap : 256;
        while (ncap < n)
            ncap *= 2;
        pw_row_t *a = pw_realloc(dd->rows, ncap * sizeof(*a));
        if (a == NULL)
            return PW_ENOMEM;
        dd->rows = a;
        pw_free(dd->scratch);
        dd->scratch = NULL;
        dd->cap = ncap;
    }
    /* The scratch table only lives through a merge (see pw_delta_apply). */
    if (dd->scratch == NULL && dd->cap > 0 &&
        (dd->scratch = pw_malloc(dd->cap * sizeof(*dd->scratch))) == NULL)
        return PW_ENOMEM;
    return 0;
}

/* A gap-coded list of keys being walked. */
typedef struct {
    const uint32_t *gap;
    size_t n, i;
    uint32_t key; /* current key (valid while i < n) */
} keywalk_t;

static int kw_load(keywalk_t *w, pw_diag_t *d, const char *field)
{
    if (w->i >= w->n)
        return 0;
    uint32_t g = w->gap[w->i];
    if (w->i > 0 && g == 0)
        return pw_diag_set(d, PW_EBADFRAME, 0, w->i, field, "%s[%zu]: keys not increasing", field,
                           w->i);
    uint64_t k = (uint64_t)(w->i ? w->key : 0) + g;
    if (k > UINT32_MAX)
        return pw_diag_set(d, PW_EBADFRAME, 0, w->i, field, "%s[%zu]: key overflows", field, w->i);
    w->key = (uint32_t)k;
    return 0;
}

static int kw_init(keywalk_t *w, const uint32_t *gap, size_t n, pw_diag_t *d, const char *field)
{
    w->gap = gap;
    w->n = n;
    w->i = 0;
    w->key = 0;
    return kw_load(w, d, field);
}

static int kw_next(keywalk_t *w, pw_diag_t *d, const char *field)
{
    w->i++;
    return kw_load(w, d, field);
}

static int check_key(const pw_delta_dec_t *dd, uint32_t key, size_t i, const char *field,
                     pw_diag_t *d)
{
    if (PW_ROW_POOL(key) >= PW_POOL__COUNT)
        return pw_diag_set(d, PW_EBADFRAME, 0, i, field, "%s[%zu]: pool type %u unknown", field, i,
                           PW_ROW_POOL(key));
    if (PW_ROW_ID(key) >= pw_tagdict_count(&dd->dict))
        return pw_diag_set(d, PW_EBADTAG, 0, i, field, "%s[%zu]: tag id %u was never defined",
                           field, i, PW_ROW_ID(key));
    return 0;
}

static int set_abs(const pw_delta_dec_t *dd, pw_row_t *row, uint32_t key,
                   const Poolwatch__V1__Rows *r, size_t i, int with_allocs, pw_diag_t *d)
{
    uint64_t m = width_mask(dd->width);
    uint64_t a = with_allocs ? r->allocs[i] : 0;
    if (a > m || r->diff[i] > m)
        return pw_diag_set(d, PW_EBADFRAME, 0, i, "rows", "rows[%zu]: counter wider than %u bits",
                           i, dd->width);
    row->key = key;
    row->reserved = 0;
    row->allocs = a;
    row->diff = r->diff[i];
    row->frees = with_allocs ? (a - row->diff) & m : 0;
    row->bytes = r->bytes[i];
    row->held_bytes = r->n_held_bytes ? r->held_bytes[i] : 0;
    return 0;
}

static int apply_defs(pw_delta_dec_t *dd, const Poolwatch__V1__Sample *msg, pw_diag_t *d)
{
    for (size_t i = 0; i < msg->n_dict; i++) {
        const Poolwatch__V1__TagDef *td = msg->dict[i];
        int r = pw_tagdict_define(&dd->dict, td->id, td->tag.data, td->tag.len);
        if (r != 0)
            return pw_diag_set(d, r, 0, i, "dict", "dict[%zu]: id %u: %s", i, td->id,
                               r == PW_EBADTAG ? "id out of sequence or tag redefined"
                                               : pw_strerror(r));
    }
    return 0;
}

/* The common delta: only changes, no row added, reset or vanished. Finds every change's row
 * first (so a bad key changes nothing), then updates the rows in place: O(changes log n)
 * instead of a walk over the whole table. Returns 0 or a negative error. */
static int dec_changes_in_place(pw_delta_dec_t *dd, const Poolwatch__V1__Changes *ch,
                                int with_allocs, pw_delta_result_t *res, pw_diag_t *d)
{
    uint64_t m = width_mask(dd->width);
    size_t nch = ch->n_key_gap;
    if (grow_array((void **)&dd->idx, &dd->idx_cap, nch, sizeof(*dd->idx)) != 0)
        return PW_ENOMEM;
    keywalk_t w;
    int r = kw_init(&w, ch->key_gap, nch, d, "changes");
    size_t lo = 0;
    for (; r == 0 && w.i < w.n; r = kw_next(&w, d, "changes")) {
        if (lo < dd->n) /* keys increase: the search starts at the previous change's row */
            lo += pw_rows_lower_bound(dd->rows + lo, dd->n - lo, w.key);
        if (lo >= dd->n || dd->rows[lo].key != w.key)
            return pw_diag_set(d, PW_EBADFRAME, 0, w.i, "changes",
                               "changes[%zu]: key %u is not in the base", w.i, w.key);
        dd->idx[w.i] = (uint32_t)lo;
    }
    if (r != 0)
        return r;
    for (size_t k = 0; k < nch; k++) {
        pw_row_t *row = &dd->rows[dd->idx[k]];
        if (with_allocs)
            row->allocs = (row->allocs + (uint64_t)ch->d_allocs[k]) & m;
        row->diff = (row->diff + (uint64_t)ch->d_diff[k]) & m;
        row->frees = with_allocs ? (row->allocs - row->diff) & m : 0;
        row->bytes += (uint64_t)ch->d_bytes[k];
        if (ch->n_d_held_bytes)
            row->held_bytes += (uint64_t)ch->d_held_bytes[k];
    }
    res->changed = (uint32_t)nch;
    return 0;
}

/* Builds the new table into dd->scratch; returns the row count or a negative error. */
static int64_t dec_merge(pw_delta_dec_t *dd, const Poolwatch__V1__Sample *msg, int with_allocs,
                         pw_delta_result_t *res, pw_diag_t *d)
{
    static const Poolwatch__V1__Rows no_rows = POOLWATCH__V1__ROWS__INIT;
    static const Poolwatch__V1__Changes no_changes = POOLWATCH__V1__CHANGES__INIT;
    const Poolwatch__V1__Rows *rows = msg->rows ? msg->rows : &no_rows;
    const Poolwatch__V1__Changes *ch = msg->changes ? msg->changes : &no_changes;
    uint64_t m = width_mask(dd->width);
    keywalk_t wr, wc, wv;
    int r;
    if ((r = kw_init(&wr, rows->key_gap, rows->n_key_gap, d, "rows")) != 0 ||
        (r = kw_init(&wc, ch->key_gap, ch->n_key_gap, d, "changes")) != 0 ||
        (r = kw_init(&wv, msg->vanished_gap, msg->n_vanished_gap, d, "vanished")) != 0)
        return r;
    size_t base_n = msg->keyframe ? 0 : dd->n;
    size_t out_max = base_n + rows->n_key_gap;
    if ((r = dec_reserve(dd, out_max, d)) != 0)
        return r;
    size_t i = 0, o = 0;
    for (;;) {
        uint32_t kb = i < base_n ? dd->rows[i].key : UINT32_MAX;
        int have_b = i < base_n;
        /* Changes and vanished keys must name rows of the base. */
        if (wc.i < wc.n && (!have_b || wc.key < kb))
            return pw_diag_set(d, PW_EBADFRAME, 0, wc.i, "changes",
                               "changes[%zu]: key %u is not in the base", wc.i, wc.key);
        if (wv.i < wv.n && (!have_b || wv.key < kb))
            return pw_diag_set(d, PW_EBADFRAME, 0, wv.i, "vanished",
                               "vanished[%zu]: key %u is not in the base", wv.i, wv.key);
        int have_r = wr.i < wr.n;
        if (!have_b && !have_r)
            break;
        if (have_r && (!have_b || wr.key < kb)) {
            /* A new row. */
            if ((r = check_key(dd, wr.key, wr.i, "rows", d)) != 0 ||
                (r = set_abs(dd, &dd->scratch[o], wr.key, rows, wr.i, with_allocs, d)) != 0)
                return r;
            o++;
            res->added++;
            if ((r = kw_next(&wr, d, "rows")) != 0)
                return r;
            continue;
        }
        /* A base row: kept, changed, reset or vanished. */
        const pw_row_t *b = &dd->rows[i++];
        int in_r = have_r && wr.key == kb, in_c = wc.i < wc.n && wc.key == kb,
            in_v = wv.i < wv.n && wv.key == kb;
        if (in_r + in_c + in_v > 1)
            return pw_diag_set(d, PW_EBADFRAME, 0, i - 1, "rows",
                               "key %u is in more than one of rows/changes/vanished", kb);
        if (in_v) {
            res->vanished++;
            if ((r = kw_next(&wv, d, "vanished")) != 0)
                return r;
            continue;
        }
        pw_row_t *nr = &dd->scratch[o++];
        if (in_r) {
            if ((r = set_abs(dd, nr, kb, rows, wr.i, with_allocs, d)) != 0)
                return r;
            res->resets++;
            if ((r = kw_next(&wr, d, "rows")) != 0)
                return r;
            continue;
        }
        *nr = *b;
        if (in_c) {
            size_t k = wc.i;
            if (with_allocs)
                nr->allocs = (b->allocs + (uint64_t)ch->d_allocs[k]) & m;
            nr->diff = (b->diff + (uint64_t)ch->d_diff[k]) & m;
            nr->frees = with_allocs ? (nr->allocs - nr->diff) & m : 0;
            nr->bytes = b->bytes + (uint64_t)ch->d_bytes[k];
            if (ch->n_d_held_bytes)
                nr->held_bytes = b->held_bytes + (uint64_t)ch->d_held_bytes[k];
            res->changed++;
            if ((r = kw_next(&wc, d, "changes")) != 0)
                return r;
        }
    }
    return (int64_t)o;
}

int pw_delta_apply(pw_delta_dec_t *dd, const Poolwatch__V1__Sample *msg, pw_delta_result_t *res,
                   pw_diag_t *d)
{
    pw_delta_result_t local;
    memset(&local, 0, sizeof(local));
    const Poolwatch__V1__Rows *rows = msg->rows;
    const Poolwatch__V1__Changes *ch = msg->changes;

    /* Shape checks first: nothing is touched until the message is known to be coherent. */
    if (!msg->keyframe) {
        if (!dd->have_base || msg->base_seq != dd->seq)
            return pw_diag_set(
                d, PW_ENOBASE, 0, 0, "base_seq", "delta on seq %llu, decoder holds %s%llu",
                (unsigned long long)msg->base_seq, dd->have_base ? "seq " : "no base, last ",
                (unsigned long long)dd->seq);
        if (msg->seq <= msg->base_seq)
            return pw_diag_set(d, PW_ESEQ, 0, 0, "seq", "seq %llu does not follow base %llu",
                               (unsigned long long)msg->seq, (unsigned long long)msg->base_seq);
    } else if ((ch && ch->n_key_gap) || msg->n_vanished_gap) {
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "keyframe",
                           "keyframe carries changes or vanished keys");
    }
    int with_allocs;
    size_t nrows = rows ? rows->n_key_gap : 0, nch = ch ? ch->n_key_gap : 0;
    if (rows && (rows->n_diff != nrows || rows->n_bytes != nrows ||
                 (rows->n_allocs != 0 && rows->n_allocs != nrows) ||
                 (rows->n_held_bytes != 0 && rows->n_held_bytes != nrows)))
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "rows", "rows: columns of unequal length");
    if (ch && (ch->n_d_diff != nch || ch->n_d_bytes != nch ||
               (ch->n_d_allocs != 0 && ch->n_d_allocs != nch) ||
               (ch->n_d_held_bytes != 0 && ch->n_d_held_bytes != nch)))
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "changes", "changes: columns of unequal length");
    if (msg->keyframe) {
        with_allocs = nrows == 0 || rows->n_allocs == nrows;
    } else {
        with_allocs = (dd->flags & PW_SAMPLE_NO_ALLOCS) == 0;
        if ((nrows && (rows->n_allocs == nrows) != with_allocs) ||
            (nch && (ch->n_d_allocs == nch) != with_allocs))
            return pw_diag_set(d, PW_EBADFRAME, 0, 0, "allocs",
                               "delta changes the counter model of its base");
    }

    if (msg->dict_reset && !msg->keyframe)
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "dict_reset", "dict_reset on a delta");
    /* dict_reset: the ids start over. Build the new dictionary aside so a failure below
     * leaves the old one in place. */
    pw_tagdict_t saved = {0};
    if (msg->dict_reset) {
        saved = dd->dict;
        pw_tagdict_init(&dd->dict, 0);
    }
    uint32_t dict_n0 = pw_tagdict_count(&dd->dict);
    int r = apply_defs(dd, msg, d);
    int in_place = !msg->keyframe && nrows == 0 && msg->n_vanished_gap == 0;
    int64_t n = r;
    if (r == 0 && in_place)
        n = nch ? dec_changes_in_place(dd, ch, with_allocs, &local, d) : 0;
    else if (r == 0)
        n = dec_merge(dd, msg, with_allocs, &local, d);
    if (n < 0) {
        if (msg->dict_reset) {
            pw_tagdict_close(&dd->dict);
            dd->dict = saved;
        } else {
            pw_tagdict_truncate(&dd->dict, dict_n0);
        }
        return (int)n;
    }
    if (msg->dict_reset)
        pw_tagdict_close(&saved);
    dd->n_idx = in_place ? nch : SIZE_MAX;
    if (!in_place) {
        pw_row_t *tmp = dd->rows;
        dd->rows = dd->scratch;
        /* Most samples change rows in place and need no second table: a collector holding
         * thousands of decoders keeps one table each (~100 KB at 2,000 rows), not two. */
        pw_free(tmp);
        dd->scratch = NULL;
        dd->n = (size_t)n;
    }
    dd->have_base = 1;
    dd->seq = msg->seq;
    dd->timestamp_ms = msg->timestamp_ms;
    dd->flags = with_allocs ? 0 : PW_SAMPLE_NO_ALLOCS;
    memset(&dd->totals, 0, sizeof(dd->totals));
    if (msg->totals) {
        const Poolwatch__V1__HostTotals *t = msg->totals;
        totals_from_proto(t, &dd->totals);
    }
    local.gap_before = msg->gap_before;
    if (res)
        *res = local;
    return 0;
}

const pw_row_t *pw_delta_dec_find(const pw_delta_dec_t *dd, const uint8_t *tag, size_t len,
                                  pw_pool_t pool)
{
    int64_t id = pw_tagdict_find(&dd->dict, tag, len);
    if (id < 0)
        return NULL;
    uint32_t key = PW_ROW_KEY(id, pool);
    size_t lo = pw_rows_lower_bound(dd->rows, dd->n, key);
    return lo < dd->n && dd->rows[lo].key == key ? &dd->rows[lo] : NULL;
}

/* Keys are tag id x 4 + pool with ids handed out densely, so a key's place is close to where
 * interpolation puts it: one guess, a gallop of a few steps from it and a bisection of what the
 * gallop bracketed cost a handful of probes where a bisection of the whole table costs
 * log2(n) (12 at 3,000 rows, for each of a delta's changes). Skewed keys only make the gallop
 * longer: at most 2 log2(n) probes. */
size_t pw_rows_lower_bound(const pw_row_t *rows, size_t n, uint32_t key)
{
    if (n == 0 || rows[0].key >= key)
        return 0;
    if (rows[n - 1].key < key)
        return n;
    /* here rows[0].key < key <= rows[n - 1].key: kept as rows[lo].key < key <= rows[hi].key */
    size_t g = (size_t)((uint64_t)(key - rows[0].key) * (n - 1) / (rows[n - 1].key - rows[0].key));
    size_t lo, hi, step = 1;
    if (rows[g].key < key) {
        for (lo = g;; step *= 2) {
            if (step >= n - 1 - lo) {
                hi = n - 1;
                break;
            }
            if (rows[lo + step].key >= key) {
                hi = lo + step;
                break;
            }
            lo += step;
        }
    } else {
        for (hi = g;; step *= 2) {
            if (step >= hi) {
                lo = 0;
                break;
            }
            if (rows[hi - step].key < key) {
                lo = hi - step;
                break;
            }
            hi -= step;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].key < key)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

int pw_delta_dec_to_sample(const pw_delta_dec_t *dd, pw_sample_t *out)
{
    pw_sample_reset(out);
    out->seq = dd->seq;
    out->timestamp_ms = dd->timestamp_ms;
    out->flags = dd->flags;
    out->totals = dd->totals;
    for (size_t i = 0; i < dd->n; i++) {
        const pw_row_t *row = &dd->rows[i];
        size_t len;
        const uint8_t *t = pw_tagdict_get(&dd->dict, PW_ROW_ID(row->key), &len);
        int r = pw_sample_add(out, t, len, (pw_pool_t)PW_ROW_POOL(row->key), row->allocs,
                              row->frees, row->diff, row->bytes);
        if (r != 0)
            return r;
        out->entries[out->n - 1].held_bytes = row->held_bytes;
    }
    return 0;
}

int pw_delta_dec_pack_keyframe(const pw_delta_dec_t *dd, uint64_t gap_before, size_t max_payload,
                               pw_buf_t *out)
{
    if (!dd->have_base)
        return PW_EINVAL;
    int with_allocs = (dd->flags & PW_SAMPLE_NO_ALLOCS) == 0;
    uint32_t nd = pw_tagdict_count(&dd->dict);
    size_t n = dd->n;
    /* One allocation for every column; freed before returning. */
    size_t bytes = n * (sizeof(uint32_t) + 4 * sizeof(uint64_t)) +
                   nd * (sizeof(Poolwatch__V1__TagDef) + sizeof(Poolwatch__V1__TagDef *));
    uint8_t *mem = pw_malloc(bytes ? bytes : 1);
    if (mem == NULL)
        return PW_ENOMEM;
    uint64_t *allocs = (uint64_t *)(void *)mem, *diff = allocs + n, *bts = diff + n;
    uint64_t *held = bts + n;
    int any_held = 0;
    Poolwatch__V1__TagDef *defs = (Poolwatch__V1__TagDef *)(void *)(held + n);
    Poolwatch__V1__TagDef **defp = (Poolwatch__V1__TagDef **)(void *)(defs + nd);
    uint32_t *gaps = (uint32_t *)(void *)(defp + nd);
    uint32_t last = 0;
    for (size_t i = 0; i < n; i++) {
        gaps[i] = dd->rows[i].key - last;
        last = dd->rows[i].key;
        allocs[i] = dd->rows[i].allocs;
        diff[i] = dd->rows[i].diff;
        bts[i] = dd->rows[i].bytes;
        held[i] = dd->rows[i].held_bytes;
        any_held |= held[i] != 0;
    }
    for (uint32_t i = 0; i < nd; i++) {
        poolwatch__v1__tag_def__init(&defs[i]);
        size_t len;
        const uint8_t *t = pw_tagdict_get(&dd->dict, i, &len);
        defs[i].id = i;
        defs[i].tag.data = (uint8_t *)(uintptr_t)t;
        defs[i].tag.len = len;
        defp[i] = &defs[i];
    }
    Poolwatch__V1__Rows rows = POOLWATCH__V1__ROWS__INIT;
    rows.n_key_gap = rows.n_diff = rows.n_bytes = n;
    rows.key_gap = gaps;
    rows.diff = diff;
    rows.bytes = bts;
    rows.n_allocs = with_allocs ? n : 0;
    rows.allocs = allocs;
    rows.n_held_bytes = any_held ? n : 0;
    rows.held_bytes = held;
    Poolwatch__V1__HostTotals tot = POOLWATCH__V1__HOST_TOTALS__INIT;
    const pw_totals_t *t = &dd->totals;
    totals_to_proto(t, &tot);
    Poolwatch__V1__Sample msg = POOLWATCH__V1__SAMPLE__INIT;
    msg.seq = dd->seq;
    msg.timestamp_ms = dd->timestamp_ms;
    msg.keyframe = 1;
    msg.dict_reset = 1;
    msg.totals = &tot;
    msg.n_dict = nd;
    msg.dict = nd ? defp : NULL;
    msg.rows = n ? &rows : NULL;
    msg.gap_before = gap_before;
    int r = pw_codec_pack_sample(&msg, max_payload, out);
    pw_free(mem);
    return r;
}
