/* fleet_agg.c: per-(tag, pool) index of the fleet's current tables (fleet_agg.h). */
#include "fleet_agg.h"
#include "fleet_internal.h"

#include <string.h>

#include "alloc.h"
#include "error.h"

/* One indexed row of a host: its local key (decoder) or pool (snapshot), where its entry
 * sits (aggregate, slot in the aggregate's vector) and the bytes it holds there (a copy, so
 * that re-indexing a sample touches only the aggregates of rows whose bytes moved: the
 * aggregates are scattered over the fleet's memory, one cache miss each). */
typedef struct {
    uint32_t key;
    uint32_t agg;
    uint32_t slot;
    uint64_t bytes;
} contrib_t;

struct pw_agg_host_s {
    const pw_host_t *h; /* NULL: never indexed */
    /* what the indexed table was: re-index when any of these moved */
    int base;
    uint32_t dict_epoch; /* the stream dictionary's epoch when indexed */
    uint64_t seq, ts;
    size_t nrows;
    const void *rows;
    contrib_t *c;
    uint32_t n, cap;
};

static size_t host_rows(const pw_host_t *h)
{
    return h->priv->dec.have_base ? h->priv->dec.n : h->priv->snapshot.n;
}

static int same_version(const pw_agg_host_t *hs, const pw_host_t *h)
{
    if (hs->h != h || hs->base != h->priv->dec.have_base)
        return 0;
    if (h->priv->dec.have_base)
        return hs->seq == h->priv->dec.seq && hs->ts == h->priv->dec.timestamp_ms &&
               hs->nrows == h->priv->dec.n && hs->rows == h->priv->dec.rows;
    return hs->seq == h->priv->snapshot.seq && hs->ts == h->priv->snapshot.timestamp_ms &&
           hs->nrows == h->priv->snapshot.n && hs->rows == h->priv->snapshot.entries;
}

static void set_version(pw_agg_host_t *hs, const pw_host_t *h)
{
    hs->h = h;
    hs->base = h->priv->dec.have_base;
    hs->dict_epoch = h->priv->dict_epoch;
    hs->seq = h->priv->dec.have_base ? h->priv->dec.seq : h->priv->snapshot.seq;
    hs->ts = h->priv->dec.have_base ? h->priv->dec.timestamp_ms : h->priv->snapshot.timestamp_ms;
    hs->nrows = host_rows(h);
    hs->rows = h->priv->dec.have_base ? (const void *)h->priv->dec.rows
                                      : (const void *)h->priv->snapshot.entries;
}

/* Row i of h: tag bytes, pool, bytes, and the local key used to recognise it next time. */
static void row_at(const pw_host_t *h, size_t i, const uint8_t **tag, size_t *tl, uint32_t *pool,
                   uint64_t *bytes, uint32_t *key)
{
    if (h->priv->dec.have_base) {
        const pw_row_t *r = &h->priv->dec.rows[i];
        *tag = pw_tagdict_get(&h->priv->dec.dict, PW_ROW_ID(r->key), tl);
        *pool = PW_ROW_POOL(r->key);
        *bytes = r->bytes;
        *key = r->key;
    } else {
        const pw_entry_t *e = &h->priv->snapshot.entries[i];
        *tag = e->tag;
        *tl = e->tag_len;
        *pool = e->pool;
        *bytes = e->bytes;
        *key = UINT32_MAX; /* snapshots are always re-indexed whole */
    }
}

static void remove_all(pw_fleet_agg_t *a, pw_agg_host_t *hs)
{
    for (uint32_t i = 0; i < hs->n; i++) {
        pw_agg_t *g = &a->aggs[hs->c[i].agg];
        uint32_t slot = hs->c[i].slot;
        g->total -= g->v[slot].bytes;
        g->v[slot] = g->v[--g->n];
        if (slot < g->n) { /* the moved entry's host must learn its new slot */
            const pw_agg_entry_t *m = &g->v[slot];
            a->hosts[m->host].c[m->row].slot = slot;
        }
    }
    hs->n = 0;
}

static int grow_aggs(pw_fleet_agg_t *a, size_t need)
{
    if (need <= a->naggs)
        return 0;
    size_t nc = a->naggs ? a->naggs : 1024;
    while (nc < need)
        nc *= 2;
    pw_agg_t *v = pw_realloc(a->aggs, nc * sizeof(*v));
    if (v == NULL)
        return PW_ENOMEM;
    memset(v + a->naggs, 0, (nc - a->naggs) * sizeof(*v));
    a->aggs = v;
    a->naggs = nc;
    return 0;
}

static int add_all(pw_fleet_agg_t *a, pw_agg_host_t *hs, const pw_host_t *h)
{
    size_t n = host_rows(h);
    if (n > hs->cap) {
        contrib_t *c = pw_realloc(hs->c, n * sizeof(*c));
        if (c == NULL)
            return PW_ENOMEM;
        hs->c = c;
        hs->cap = (uint32_t)n;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *tag;
        size_t tl;
        uint32_t pool, key;
        uint64_t bytes;
        row_at(h, i, &tag, &tl, &pool, &bytes, &key);
        int64_t gid = pw_tagdict_intern(&a->tags, tag, tl, NULL);
        if (gid < 0)
            return (int)gid == PW_ENOMEM ? PW_ENOMEM : 0 /* cannot be: tags came from a dict */;
        uint32_t k = PW_ROW_KEY(gid, pool);
        if (grow_aggs(a, (size_t)k + 1) != 0)
            return PW_ENOMEM;
        pw_agg_t *g = &a->aggs[k];
        if (g->n == g->cap) {
            /* Every (tag, pool) of a fleet fills at the same pace, one entry per host: with the
             * same first size they would all double at the same host count (10,000 hosts
             * reconnecting: ~2,000 vectors of 8,192 entries copied while one keyframe is
             * applied). First sizes of 8..15 by key spread the doublings over 8 host counts. */
            uint32_t nc = g->cap ? g->cap * 2 : 8 + (k & 7);
            pw_agg_entry_t *v = pw_realloc(g->v, nc * sizeof(*v));
            if (v == NULL)
                return PW_ENOMEM;
            g->v = v;
            g->cap = nc;
        }
        g->v[g->n] = (pw_agg_entry_t){h->index, hs->n, bytes};
        g->total += bytes;
        hs->c[hs->n++] = (contrib_t){key, k, g->n++, bytes};
    }
    return 0;
}

/* A row indexed as `c` now holds `bytes`: its entry and its aggregate's total follow. */
static void move_bytes(pw_fleet_agg_t *a, contrib_t *c, uint64_t bytes)
{
    if (bytes == c->bytes)
        return;
    pw_agg_t *g = &a->aggs[c->agg];
    pw_agg_entry_t *e = &g->v[c->slot];
    g->total += bytes - e->bytes;
    e->bytes = bytes;
    c->bytes = bytes;
}

/* Brings host h's entries up to date. */
static int note(pw_fleet_agg_t *a, const pw_host_t *h)
{
    if (h->index >= a->nhosts) {
        size_t nc = a->nhosts ? a->nhosts : 64;
        while (nc <= h->index)
            nc *= 2;
        pw_agg_host_t *v = pw_realloc(a->hosts, nc * sizeof(*v));
        if (v == NULL)
            return PW_ENOMEM;
        memset(v + a->nhosts, 0, (nc - a->nhosts) * sizeof(*v));
        a->hosts = v;
        a->nhosts = nc;
    }
    pw_agg_host_t *hs = &a->hosts[h->index];
    size_t n = host_rows(h);
    /* Faster path: indexed at the table this step of the stream started from, with the same
     * rows: only the rows the step changed are visited (5 % of a 2,000-row host's rows, where
     * the walk below visits all of them at every sample). */
    const pw_host_table_t *t = h->priv;
    const uint32_t *idx;
    size_t k;
    if (hs->h == h && hs->base && t->dec.have_base && t->prev_valid && hs->seq == t->prev_seq &&
        hs->ts == t->prev_ts_ms && hs->dict_epoch == t->dict_epoch && hs->n == n &&
        hs->nrows == n && (k = pw_host_changed_rows(h, &idx)) != SIZE_MAX) {
        size_t j = 0;
        for (; j < k; j++) {
            if (idx[j] >= n || t->dec.rows[idx[j]].key != hs->c[idx[j]].key)
                break; /* not the rows indexed: the walk below re-checks every row */
            const pw_row_t *r = &t->dec.rows[idx[j]];
            contrib_t *c = &hs->c[idx[j]];
            move_bytes(a, c, r->bytes);
        }
        if (j == k) {
            set_version(hs, h);
            return 0;
        }
    }
    /* Fast path: the same rows (keys and tags) as indexed: only bytes move. */
    int same = h->priv->dec.have_base && hs->h == h && hs->base && hs->n == n;
    /* Within one dictionary an id names one tag: the tag bytes are compared only after the
     * dictionary started over (a keyframe with dict_reset may reuse ids for other tags). */
    int check_tags = hs->dict_epoch != h->priv->dict_epoch;
    for (size_t i = 0; same && i < n; i++) {
        const pw_row_t *r = &h->priv->dec.rows[i];
        contrib_t *c = &hs->c[i];
        if (r->key != c->key || PW_ROW_POOL(c->agg) != PW_ROW_POOL(r->key)) {
            same = 0;
            break;
        }
        if (check_tags) {
            size_t l1, l2;
            const uint8_t *t1 = pw_tagdict_get(&h->priv->dec.dict, PW_ROW_ID(r->key), &l1);
            const uint8_t *t2 = pw_tagdict_get(&a->tags, PW_ROW_ID(c->agg), &l2);
            if (l1 != l2 || memcmp(t1, t2, l1) != 0) {
                same = 0;
                break;
            }
        }
        move_bytes(a, c, r->bytes);
    }
    if (!same) {
        remove_all(a, hs);
        if (add_all(a, hs, h) != 0)
            return PW_ENOMEM;
    }
    set_version(hs, h);
    return 0;
}

static pw_fleet_agg_t *index_of(pw_fleet_t *f)
{
    if (f->agg == NULL) {
        f->agg = pw_calloc(1, sizeof(*f->agg));
        if (f->agg != NULL)
            pw_tagdict_init(&f->agg->tags, 0);
    }
    return f->agg;
}

static int dropped(pw_fleet_t *f)
{
    pw_fleet_agg_free(f->agg);
    f->agg = NULL;
    return PW_ENOMEM;
}

int pw_fleet_agg_note(pw_fleet_t *f, const pw_host_t *h)
{
    pw_fleet_agg_t *a = index_of(f);
    if (a == NULL)
        return PW_ENOMEM;
    return note(a, h) == 0 ? 0 : dropped(f);
}

int pw_fleet_agg_sync(const pw_fleet_t *fleet, const pw_fleet_agg_t **out)
{
    /* The index is a cache of the fleet's tables: building it does not change the fleet. */
    pw_fleet_t *f = (pw_fleet_t *)(uintptr_t)fleet;
    pw_fleet_agg_t *a = index_of(f);
    if (a == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < f->n; i++) {
        const pw_host_t *h = f->hosts[i];
        /* A retired host's table was emptied and noted when it was retired: nothing to add. */
        if (pw_host_retired(h) || (i < a->nhosts && same_version(&a->hosts[i], h)))
            continue;
        if (note(a, h) != 0)
            return dropped(f);
    }
    *out = a;
    return 0;
}

void pw_fleet_agg_free(pw_fleet_agg_t *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->naggs; i++)
        pw_free(a->aggs[i].v);
    for (size_t i = 0; i < a->nhosts; i++)
        pw_free(a->hosts[i].c);
    pw_free(a->aggs);
    pw_free(a->hosts);
    pw_tagdict_close(&a->tags);
    pw_free(a);
}
