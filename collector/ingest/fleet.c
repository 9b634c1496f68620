#include "fleet.h"
#include "fleet_internal.h"
#include "alloc.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

void pw_fleet_init(pw_fleet_t *f)
{
    memset(f, 0, sizeof(*f));
}

static void host_free(pw_host_t *h)
{
    pw_host_table_t *t = h->priv;
    pw_delta_dec_close(&t->dec);
    pw_free(t->prev_rows);
    pw_sample_close(&t->snapshot);
    pw_free(t->snap_ch);
    pw_free(t->hist);
    pw_free(t->bigpool);
    pw_free(t);
    pw_free(h);
}

void pw_fleet_close(pw_fleet_t *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n; i++)
        host_free(f->hosts[i]);
    pw_free(f->hosts);
    pw_free(f->by_name);
    memset(f, 0, sizeof(*f));
}

/* FNV-1a of the name in ASCII lower case (names compare without case). */
static uint64_t name_hash(const char *s)
{
    uint64_t x = 14695981039346656037ull;
    for (; *s; s++)
        x = (x ^ (uint8_t)tolower((unsigned char)*s)) * 1099511628211ull;
    return x;
}

static void name_put(uint32_t *v, size_t slots, const pw_host_t *h)
{
    size_t j = (size_t)name_hash(h->name) & (slots - 1);
    while (v[j] != 0)
        j = (j + 1) & (slots - 1);
    v[j] = h->index + 1;
}

int pw__fleet_reindex(pw_fleet_t *f)
{
    size_t slots = 64;
    while (slots < 2 * (f->n + 1))
        slots *= 2;
    uint32_t *v = pw_calloc(slots, sizeof(*v));
    if (v == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < f->n; i++)
        name_put(v, slots, f->hosts[i]);
    pw_free(f->by_name);
    f->by_name = v;
    f->name_slots = slots;
    return 0;
}

pw_host_t *pw_fleet_find(const pw_fleet_t *f, const char *name)
{
    if (f->name_slots == 0)
        return NULL;
    /* Host names compare without case, as DNS names do: "HOST01" is the agent host "host01"
     * (the spelling of its certificate) for the API, imports and commands; the exact
     * spelling wins when both exist. Retired hosts stay in the index and are passed over. */
    pw_host_t *folded = NULL;
    for (size_t j = (size_t)name_hash(name) & (f->name_slots - 1); f->by_name[j] != 0;
         j = (j + 1) & (f->name_slots - 1)) {
        pw_host_t *h = f->hosts[f->by_name[j] - 1];
        if (h->retired)
            continue;
        if (strcmp(h->name, name) == 0)
            return h;
        if (folded == NULL && strcasecmp(h->name, name) == 0)
            folded = h;
    }
    return folded;
}

pw_host_t *pw__fleet_get(pw_fleet_t *f, const char *name, unsigned counter_width)
{
    pw_host_t *h = pw_fleet_find(f, name);
    if (h != NULL)
        return h;
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 64;
        pw_host_t **p = pw_realloc(f->hosts, nc * sizeof(*p));
        if (p == NULL)
            return NULL;
        f->hosts = p;
        f->cap = nc;
    }
    h = pw_calloc(1, sizeof(*h));
    pw_host_table_t *t = h ? pw_calloc(1, sizeof(*t)) : NULL;
    pw_fleet_point_t *hist = t ? pw_calloc(PW_FLEET_HISTORY, sizeof(*hist)) : NULL;
    if (hist == NULL) {
        pw_free(t);
        pw_free(h);
        return NULL;
    }
    h->priv = t;
    t->hist = hist;
    snprintf(h->name, sizeof(h->name), "%s", name);
    h->counter_width = counter_width == 32 ? 32 : 64;
    pw_delta_dec_init(&t->dec, h->counter_width, 0);
    pw_sample_init(&t->snapshot);
    h->index = (uint32_t)f->n;
    f->hosts[f->n++] = h;
    if (2 * f->n > f->name_slots) {
        if (pw__fleet_reindex(f) != 0) { /* the host stays out: undo */
            f->n--;
            host_free(h);
            return NULL;
        }
    } else {
        name_put(f->by_name, f->name_slots, h);
    }
    return h;
}

static pw_fleet_point_t *hist_slot(pw_host_t *h, size_t i)
{
    return &h->priv->hist[(h->priv->hist_head + i) % PW_FLEET_HISTORY];
}

void pw__fleet_note_totals(pw_host_t *h, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged)
{
    /* The ring stays in time order, which the trend tests need (pw_pressure_eval refuses
     * unsorted points, and a host then showed "exhausted now"): a sample older than the newest
     * (a resend under a new boot, a second agent on one certificate, a clock stepped back)
     * goes to its place; one at a time already held replaces it; one older than a full ring's
     * oldest is dropped. */
    pw_host_table_t *t = h->priv;
    size_t n = t->hist_n, pos = n;
    if (n > 0 && ts_ms <= hist_slot(h, n - 1)->ts_ms) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hist_slot(h, mid)->ts_ms < ts_ms)
                lo = mid + 1;
            else
                hi = mid;
        }
        pos = lo;
        if (hist_slot(h, pos)->ts_ms == ts_ms) {
            *hist_slot(h, pos) = (pw_fleet_point_t){ts_ms, nonpaged, paged};
            return;
        }
    }
    if (n == PW_FLEET_HISTORY) { /* full: the oldest goes */
        if (pos == 0)
            return;
        t->hist_head = (t->hist_head + 1) % PW_FLEET_HISTORY;
        t->hist_n = --n;
        pos--;
    }
    for (size_t i = n; i > pos; i--)
        *hist_slot(h, i) = *hist_slot(h, i - 1);
    *hist_slot(h, pos) = (pw_fleet_point_t){ts_ms, nonpaged, paged};
    t->hist_n = n + 1;
}

const pw_fleet_point_t *pw_fleet_hist_at(const pw_host_t *h, size_t i)
{
    return &h->priv->hist[(h->priv->hist_head + i) % PW_FLEET_HISTORY];
}

size_t pw_host_hist_n(const pw_host_t *h)
{
    return h->priv->hist_n;
}

/* Walks a gap-coded key column (each key is the previous plus its gap: docs/protocol.md). */
typedef struct {
    const uint32_t *gap;
    size_t n, i;
    uint32_t key;
} keywalk_t;

static void kw_init(keywalk_t *w, const uint32_t *gap, size_t n)
{
    *w = (keywalk_t){gap, n, 0, n ? gap[0] : 0};
}

static void kw_next(keywalk_t *w)
{
    if (++w->i < w->n)
        w->key += w->gap[w->i];
}

static const pw_row_t *find_row(const pw_delta_dec_t *dec, uint32_t key)
{
    size_t lo = pw_rows_lower_bound(dec->rows, dec->n, key);
    return lo < dec->n && dec->rows[lo].key == key ? &dec->rows[lo] : NULL;
}

int pw__fleet_save_prev(pw_host_t *h, const Poolwatch__V1__Sample *s)
{
    pw_host_table_t *t = h->priv;
    t->prev_n = 0;
    t->prev_valid = 0;
    const pw_delta_dec_t *dec = &t->dec;
    if (!dec->have_base || s == NULL || s->dict_reset)
        return 0;
    size_t nr = s->rows ? s->rows->n_key_gap : 0, nc = s->changes ? s->changes->n_key_gap : 0;
    if (nr + nc > dec->max_rows)
        return 0; /* the decoder refuses it */
    /* A buffer a keyframe made large is given back once the steps are small again. */
    if (t->prev_cap > 1024 && nr + nc < t->prev_cap / 8) {
        pw_free(t->prev_rows);
        t->prev_rows = NULL;
        t->prev_cap = 0;
    }
    if (nr + nc > t->prev_cap) {
        pw_row_t *p = pw_realloc(t->prev_rows, (nr + nc) * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        t->prev_rows = p;
        t->prev_cap = nr + nc;
    }
    /* Both key columns are increasing (or the message is refused): merge them. */
    keywalk_t r, c;
    kw_init(&r, nr ? s->rows->key_gap : NULL, nr);
    kw_init(&c, nc ? s->changes->key_gap : NULL, nc);
    size_t n = 0;
    while (r.i < r.n || c.i < c.n) {
        uint32_t key;
        if (c.i >= c.n || (r.i < r.n && r.key <= c.key)) {
            key = r.key;
            if (c.i < c.n && c.key == key)
                kw_next(&c);
            kw_next(&r);
        } else {
            key = c.key;
            kw_next(&c);
        }
        if (n > 0 && key <= t->prev_rows[n - 1].key)
            continue; /* not increasing: apply will refuse the message */
        const pw_row_t *row = find_row(dec, key);
        if (row != NULL) {
            t->prev_rows[n] = *row;
            t->prev_rows[n].reserved = 0;
        } else {
            t->prev_rows[n] = (pw_row_t){.key = key, .reserved = PW_PREV_ABSENT};
        }
        n++;
    }
    t->prev_n = n;
    t->prev_valid = 1;
    t->prev_ts_ms = dec->timestamp_ms;
    t->prev_seq = dec->seq;
    return 0;
}

/* The row `cur` of the decoder's table as it was before the last sample: the recorded row,
 * `cur` itself when the sample left it unchanged, NULL when the row is new. */
static const pw_row_t *prev_row(const pw_host_table_t *t, const pw_row_t *cur)
{
    size_t lo = pw_rows_lower_bound(t->prev_rows, t->prev_n, cur->key);
    if (lo < t->prev_n && t->prev_rows[lo].key == cur->key)
        return t->prev_rows[lo].reserved == PW_PREV_ABSENT ? NULL : &t->prev_rows[lo];
    return cur; /* untouched by the last sample */
}

static uint64_t counter_mask(const pw_host_t *h);
static int64_t wrap_change(uint64_t cur, uint64_t prev, uint64_t mask);

static const pw_entry_t *g_prev_entries; /* cmp_entry_idx's table (qsort has no context) */

static int cmp_entry(const pw_entry_t *x, const pw_entry_t *y)
{
    int c = memcmp(x->tag, y->tag, x->tag_len < y->tag_len ? x->tag_len : y->tag_len);
    if (c == 0)
        c = (int)x->tag_len - (int)y->tag_len;
    return c != 0 ? c : (int)x->pool - (int)y->pool;
}

static int cmp_entry_idx(const void *a, const void *b)
{
    return cmp_entry(&g_prev_entries[*(const uint32_t *)a], &g_prev_entries[*(const uint32_t *)b]);
}

int pw__fleet_snapshot_changes(pw_host_t *h, const pw_sample_t *prev)
{
    pw_host_table_t *t = h->priv;
    const pw_sample_t *cur = &t->snapshot;
    pw_free(t->snap_ch);
    t->snap_ch = NULL;
    t->snap_ch_n = 0;
    t->snap_prev_ts_ms = 0;
    if (prev == NULL || prev->timestamp_ms >= cur->timestamp_ms || cur->n == 0)
        return 0;
    int64_t(*ch)[5] = pw_calloc(cur->n, sizeof(*ch));
    uint32_t *idx = prev->n ? pw_malloc(prev->n * sizeof(*idx)) : NULL;
    if (ch == NULL || (prev->n && idx == NULL)) {
        pw_free(ch);
        pw_free(idx);
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < prev->n; i++)
        idx[i] = (uint32_t)i;
    g_prev_entries = prev->entries;
    if (prev->n > 1)
        qsort(idx, prev->n, sizeof(*idx), cmp_entry_idx);
    uint64_t mask = counter_mask(h);
    for (size_t i = 0; i < cur->n; i++) {
        const pw_entry_t *e = &cur->entries[i], *p = NULL;
        size_t lo = 0, hi = prev->n;
        while (lo < hi) { /* the entry of the same tag and pool, or none (a new row) */
            size_t mid = lo + (hi - lo) / 2;
            int c = cmp_entry(&prev->entries[idx[mid]], e);
            if (c == 0) {
                p = &prev->entries[idx[mid]];
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        ch[i][0] = wrap_change(e->allocs, p ? p->allocs : 0, mask);
        ch[i][1] = wrap_change(e->frees, p ? p->frees : 0, mask);
        ch[i][2] = (int64_t)(e->diff - (p ? p->diff : 0));
        ch[i][3] = (int64_t)(e->bytes - (p ? p->bytes : 0));
        ch[i][4] = (int64_t)(e->held_bytes - (p ? p->held_bytes : 0));
    }
    pw_free(idx);
    t->snap_ch = ch;
    t->snap_ch_n = cur->n;
    t->snap_prev_ts_ms = prev->timestamp_ms;
    return 0;
}

void pw__fleet_reset_stream(pw_host_t *h, unsigned counter_width)
{
    pw_host_table_t *t = h->priv;
    pw_delta_dec_close(&t->dec);
    h->counter_width = counter_width;
    pw_delta_dec_init(&t->dec, counter_width, 0);
    t->dict_epoch++;
    t->prev_n = 0;
    t->prev_valid = 0;
    t->dec_stored = 0;
}

/* ---- the view --------------------------------------------------------------------------- */

size_t pw_host_nrows(const pw_host_t *h)
{
    return h->priv->dec.have_base ? h->priv->dec.n : h->priv->snapshot.n;
}

static uint64_t counter_mask(const pw_host_t *h)
{
    return h->counter_width >= 64 ? UINT64_MAX : ((1ull << h->counter_width) - 1);
}

/* cur - prev of a counter that wraps at mask + 1. A move of more than half the range is a
 * backwards step (reset): signed. */
static int64_t wrap_change(uint64_t cur, uint64_t prev, uint64_t mask)
{
    uint64_t d = (cur - prev) & mask;
    return d > mask / 2 ? -(int64_t)((prev - cur) & mask) : (int64_t)d;
}

static void row_at(const pw_host_t *h, size_t i, int with_change, pw_host_row_t *v)
{
    const pw_host_table_t *t = h->priv;
    memset(v, 0, sizeof(*v));
    if (t->dec.have_base) {
        const pw_row_t *r = &t->dec.rows[i];
        size_t len = 0;
        v->tag = pw_tagdict_get(&t->dec.dict, PW_ROW_ID(r->key), &len);
        v->tag_len = (uint8_t)len;
        v->pool = (uint8_t)PW_ROW_POOL(r->key);
        v->allocs = r->allocs;
        v->frees = r->frees;
        v->diff = r->diff;
        v->bytes = r->bytes;
        v->held_bytes = r->held_bytes;
        if (with_change && t->prev_valid) {
            const pw_row_t *p = prev_row(t, r);
            uint64_t mask = counter_mask(h);
            v->ch_allocs = wrap_change(r->allocs, p ? p->allocs : 0, mask);
            v->ch_frees = wrap_change(r->frees, p ? p->frees : 0, mask);
            v->ch_diff = (int64_t)(r->diff - (p ? p->diff : 0));
            v->ch_bytes = (int64_t)(r->bytes - (p ? p->bytes : 0));
            v->ch_held_bytes = (int64_t)(r->held_bytes - (p ? p->held_bytes : 0));
            v->has_change = 1;
        }
    } else {
        const pw_entry_t *e = &t->snapshot.entries[i];
        v->tag = e->tag;
        v->tag_len = e->tag_len;
        v->pool = e->pool;
        v->allocs = e->allocs;
        v->frees = e->frees;
        v->diff = e->diff;
        v->bytes = e->bytes;
        v->held_bytes = e->held_bytes;
        if (with_change && t->snap_ch != NULL && i < t->snap_ch_n) {
            v->ch_allocs = t->snap_ch[i][0];
            v->ch_frees = t->snap_ch[i][1];
            v->ch_diff = t->snap_ch[i][2];
            v->ch_bytes = t->snap_ch[i][3];
            v->ch_held_bytes = t->snap_ch[i][4];
            v->has_change = 1;
        }
    }
    v->per_alloc = pw_per_alloc(v->bytes, v->diff);
}

int pw_host_has_held(const pw_host_t *h)
{
    if (strcmp(h->os_family, "linux") != 0)
        return 0;
    size_t n = pw_host_nrows(h);
    for (size_t i = 0; i < n; i++) {
        pw_host_row_t r;
        row_at(h, i, 0, &r);
        if (r.held_bytes != 0)
            return 1;
    }
    return 0;
}

void pw_host_row(const pw_host_t *h, size_t i, pw_host_row_t *out)
{
    row_at(h, i, 1, out);
}

size_t pw_host_changed_rows(const pw_host_t *h, const uint32_t **idx)
{
    const pw_host_table_t *t = h->priv;
    *idx = NULL;
    if (!t->dec.have_base || t->dec.n_idx == SIZE_MAX)
        return SIZE_MAX;
    *idx = t->dec.idx;
    return t->dec.n_idx;
}

void pw_host_row_plain(const pw_host_t *h, size_t i, pw_host_row_t *out)
{
    row_at(h, i, 0, out);
}

const pw_totals_t *pw_host_totals(const pw_host_t *h)
{
    return h->priv->dec.have_base ? &h->priv->dec.totals : &h->priv->snapshot.totals;
}

uint64_t pw_host_ts(const pw_host_t *h)
{
    return h->priv->dec.have_base ? h->priv->dec.timestamp_ms : h->priv->snapshot.timestamp_ms;
}

int pw_host_table_copy(const pw_host_t *h, pw_sample_t *out)
{
    const pw_host_table_t *t = h->priv;
    if (!t->dec.have_base)
        return pw_sample_copy(out, &t->snapshot);
    int r = pw_delta_dec_to_sample(&t->dec, out);
    if (r == 0)
        out->seq = t->dec.seq;
    return r;
}

uint64_t pw_host_seq(const pw_host_t *h)
{
    return h->priv->dec.have_base ? h->priv->dec.seq : h->priv->snapshot.seq;
}

int pw_host_streaming(const pw_host_t *h)
{
    return h->priv->dec.have_base;
}

int pw_host_connected(const pw_host_t *h)
{
    return h->priv->session != NULL;
}

uint64_t pw_host_prev_ts(const pw_host_t *h)
{
    const pw_host_table_t *t = h->priv;
    if (!t->dec.have_base)
        return t->snap_ch != NULL ? t->snap_prev_ts_ms : 0; /* an import's screen before */
    return t->prev_valid ? t->prev_ts_ms : 0;
}

uint64_t pw_host_limit(const pw_host_t *h, int pool)
{
    uint64_t l = pool == PW_POOL_PAGED ? h->paged_limit_bytes : h->nonpaged_limit_bytes;
    if (l == 0) {
        const pw_totals_t *t = pw_host_totals(h);
        l = pool == PW_POOL_PAGED ? t->paged_limit_bytes : t->nonpaged_limit_bytes;
    }
    return l;
}

uint64_t pw_host_committed_seq(const pw_host_t *h)
{
    return h->priv->committed_seq;
}

int pw_host_retired(const pw_host_t *h)
{
    return h->retired;
}

int pw_host_imported(const pw_host_t *h)
{
    return h->agent_id_len >= 7 && memcmp(h->agent_id, "import:", 7) == 0;
}

const pw_bigpool_snap_t *pw_host_big_pool(const pw_host_t *h, const uint8_t *tag, size_t len)
{
    const pw_host_table_t *t = h->priv;
    uint8_t key[4] = {' ', ' ', ' ', ' '};
    if (len == 0 || len > 4)
        return NULL;
    memcpy(key, tag, len);
    for (size_t i = 0; i < t->n_bigpool; i++)
        if (memcmp(t->bigpool[i].tag, key, 4) == 0)
            return &t->bigpool[i];
    return NULL;
}
