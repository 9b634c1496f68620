#include "fleet.h"
#include "alloc.h"
#include "error.h"
#include "fleet_agg.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void pw_fleet_init(pw_fleet_t *f)
{
    memset(f, 0, sizeof(*f));
}

static void host_free(pw_host_t *h)
{
    pw_delta_dec_close(&h->dec);
    pw_free(h->prev_rows);
    pw_sample_close(&h->snapshot);
    pw_free(h->hist);
    pw_free(h->baseline);
    pw_free(h->baseline_tags);
    pw_free(h);
}

void pw_fleet_close(pw_fleet_t *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n; i++)
        host_free(f->hosts[i]);
    pw_free(f->hosts);
    pw_fleet_agg_free(f->agg);
    memset(f, 0, sizeof(*f));
}

pw_host_t *pw_fleet_find(const pw_fleet_t *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->hosts[i]->name, name) == 0)
            return f->hosts[i];
    /* Host names compare without case, as DNS names do: "HOST01" is the agent host "host01"
     * (the spelling of its certificate) for the API, imports and commands. */
    for (size_t i = 0; i < f->n; i++)
        if (strcasecmp(f->hosts[i]->name, name) == 0)
            return f->hosts[i];
    return NULL;
}

pw_host_t *pw_fleet_get(pw_fleet_t *f, const char *name, unsigned counter_width)
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
    if (h == NULL)
        return NULL;
    h->hist = pw_calloc(PW_FLEET_HISTORY, sizeof(*h->hist));
    if (h->hist == NULL) {
        pw_free(h);
        return NULL;
    }
    snprintf(h->name, sizeof(h->name), "%s", name);
    h->counter_width = counter_width == 32 ? 32 : 64;
    pw_delta_dec_init(&h->dec, h->counter_width, 0);
    pw_sample_init(&h->snapshot);
    h->index = (uint32_t)f->n;
    f->hosts[f->n++] = h;
    return h;
}

static pw_fleet_point_t *hist_slot(pw_host_t *h, size_t i)
{
    return &h->hist[(h->hist_head + i) % PW_FLEET_HISTORY];
}

void pw_fleet_note_totals(pw_host_t *h, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged)
{
    /* The ring stays in time order, which the trend tests need (pw_pressure_eval refuses
     * unsorted points, and a host then showed "exhausted now"): a sample older than the newest
     * (a resend under a new boot, a second agent on one certificate, a clock stepped back)
     * goes to its place; one at a time already held replaces it; one older than a full ring's
     * oldest is dropped. */
    size_t n = h->hist_n, pos = n;
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
        h->hist_head = (h->hist_head + 1) % PW_FLEET_HISTORY;
        h->hist_n = --n;
        pos--;
    }
    for (size_t i = n; i > pos; i--)
        *hist_slot(h, i) = *hist_slot(h, i - 1);
    *hist_slot(h, pos) = (pw_fleet_point_t){ts_ms, nonpaged, paged};
    h->hist_n = n + 1;
}

const pw_fleet_point_t *pw_fleet_hist_at(const pw_host_t *h, size_t i)
{
    return &h->hist[(h->hist_head + i) % PW_FLEET_HISTORY];
}

/* Walks a gap-coded key column (DESIGN §3: each key is the previous plus its gap). */
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

int pw_fleet_save_prev(pw_host_t *h, const Poolwatch__V1__Sample *s)
{
    h->prev_n = 0;
    h->prev_valid = 0;
    const pw_delta_dec_t *dec = &h->dec;
    if (!dec->have_base || s == NULL || s->dict_reset)
        return 0;
    size_t nr = s->rows ? s->rows->n_key_gap : 0, nc = s->changes ? s->changes->n_key_gap : 0;
    if (nr + nc > dec->max_rows)
        return 0; /* the decoder refuses it */
    /* A buffer a keyframe made large is given back once the steps are small again. */
    if (h->prev_cap > 1024 && nr + nc < h->prev_cap / 8) {
        pw_free(h->prev_rows);
        h->prev_rows = NULL;
        h->prev_cap = 0;
    }
    if (nr + nc > h->prev_cap) {
        pw_row_t *p = pw_realloc(h->prev_rows, (nr + nc) * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        h->prev_rows = p;
        h->prev_cap = nr + nc;
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
        if (n > 0 && key <= h->prev_rows[n - 1].key)
            continue; /* not increasing: apply will refuse the message */
        const pw_row_t *row = find_row(dec, key);
        if (row != NULL) {
            h->prev_rows[n] = *row;
            h->prev_rows[n].reserved = 0;
        } else {
            h->prev_rows[n] = (pw_row_t){.key = key, .reserved = PW_PREV_ABSENT};
        }
        n++;
    }
    h->prev_n = n;
    h->prev_valid = 1;
    h->prev_ts_ms = dec->timestamp_ms;
    return 0;
}

const pw_row_t *pw_fleet_prev_row(const pw_host_t *h, const pw_row_t *cur)
{
    size_t lo = pw_rows_lower_bound(h->prev_rows, h->prev_n, cur->key);
    if (lo < h->prev_n && h->prev_rows[lo].key == cur->key)
        return h->prev_rows[lo].reserved == PW_PREV_ABSENT ? NULL : &h->prev_rows[lo];
    return cur; /* untouched by the last sample */
}
