#include "fleet.h"
#include "alloc.h"
#include "error.h"
#include "fleet_agg.h"

#include <stdio.h>
#include <string.h>

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

void pw_fleet_note_totals(pw_host_t *h, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged)
{
    size_t at = (h->hist_head + h->hist_n) % PW_FLEET_HISTORY;
    if (h->hist_n == PW_FLEET_HISTORY) {
        at = h->hist_head;
        h->hist_head = (h->hist_head + 1) % PW_FLEET_HISTORY;
    } else {
        h->hist_n++;
    }
    h->hist[at].ts_ms = ts_ms;
    h->hist[at].nonpaged_bytes = nonpaged;
    h->hist[at].paged_bytes = paged;
}

const pw_fleet_point_t *pw_fleet_hist_at(const pw_host_t *h, size_t i)
{
    return &h->hist[(h->hist_head + i) % PW_FLEET_HISTORY];
}

int pw_fleet_save_prev(pw_host_t *h)
{
    size_t n = h->dec.have_base ? h->dec.n : 0;
    if (n > h->prev_cap) {
        pw_row_t *p = pw_realloc(h->prev_rows, n * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        h->prev_rows = p;
        h->prev_cap = n;
    }
    if (n)
        memcpy(h->prev_rows, h->dec.rows, n * sizeof(*h->prev_rows));
    h->prev_n = n;
    h->prev_ts_ms = h->dec.timestamp_ms;
    return 0;
}
