/* series.c: the selection and values both /metrics and remote write export (series.h). */
#include "series.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

const char *const pw_series_pool_names[2] = {"nonpaged", "paged"};
const char *const pw_series_agent_names[3] = {"poolwatch_agent_resident_bytes",
                                              "poolwatch_agent_cpu_seconds_total",
                                              "poolwatch_agent_handles"};

size_t pw_series_agent(const pw_host_t *h, double v[3], int have[3])
{
    const pw_totals_t *t = pw_host_totals(h);
    int any = t->agent_rss_bytes != 0 || t->agent_cpu_ms != 0;
    v[0] = (double)t->agent_rss_bytes;
    v[1] = (double)t->agent_cpu_ms / 1000.0;
    v[2] = (double)t->agent_handles;
    have[0] = have[1] = any;
    have[2] = any && t->agent_handles != 0;
    return (size_t)(have[0] + have[1] + have[2]);
}

static size_t rows_of(const pw_host_t *h)
{
    return pw_host_nrows(h);
}

static void row_at(const pw_host_t *h, size_t i, pw_series_row_t *t)
{
    pw_host_row_t r;
    pw_host_row_plain(h, i, &r);
    t->tag = r.tag;
    t->len = r.tag_len;
    t->pool = r.pool;
    t->bytes = r.bytes;
    t->diff = r.diff;
    t->held_bytes = r.held_bytes;
}

typedef struct {
    pw_series_row_t r;
    size_t i;
} ranked_t;

static int by_bytes_then_order(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->r.bytes != y->r.bytes)
        return x->r.bytes < y->r.bytes ? 1 : -1;
    return x->i < y->i ? -1 : x->i > y->i;
}

size_t pw_series_top(const pw_host_t *h, pw_series_row_t *top, size_t cap)
{
    size_t n = 0, rows = rows_of(h);
    if (cap == 0)
        return 0;
    /* Large caps (remote write's tags_per_host): one sort, not rows x cap moves. */
    ranked_t *all = cap > 64 && rows > cap ? pw_malloc(rows * sizeof(*all)) : NULL;
    if (all != NULL) {
        for (size_t i = 0; i < rows; i++) {
            row_at(h, i, &all[i].r);
            all[i].i = i;
        }
        qsort(all, rows, sizeof(*all), by_bytes_then_order);
        for (; n < cap; n++)
            top[n] = all[n].r;
        pw_free(all);
        return n;
    }
    for (size_t i = 0; i < rows; i++) {
        pw_series_row_t t;
        row_at(h, i, &t);
        if (n == cap && t.bytes <= top[n - 1].bytes)
            continue;
        size_t j = n < cap ? n++ : cap - 1;
        while (j > 0 && top[j - 1].bytes < t.bytes) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = t;
    }
    return n;
}

const char *pw_series_limit_source_name(int source)
{
    switch (source) {
    case PW_LIMIT_REPORTED:
        return "reported";
    case PW_LIMIT_COMPUTED:
        return "computed";
    case PW_LIMIT_REGISTRY:
        return "registry";
    case PW_LIMIT_CONFIGURED:
        return "configured";
    default:
        return "unknown";
    }
}

void pw_series_limit_sources(const pw_host_t *h, const char *source[2])
{
    source[0] = pw_series_limit_source_name(h->nonpaged_limit_source);
    source[1] = pw_series_limit_source_name(h->paged_limit_source);
}

void pw_series_pools(const pw_host_t *h, uint64_t used[2], uint64_t limit[2])
{
    const pw_totals_t *t = pw_host_totals(h);
    used[0] = t->nonpaged_bytes;
    used[1] = t->paged_bytes;
    limit[0] = pw_host_limit(h, PW_POOL_NONPAGED);
    limit[1] = pw_host_limit(h, PW_POOL_PAGED);
}

int pw_series_stopped(const pw_host_t *h)
{
    return h->stopped_ms != 0 && !pw_host_connected(h);
}

size_t pw_series_suspects(const pw_suspect_t *sp, size_t ns, const char *host)
{
    size_t k = 0;
    for (size_t j = 0; j < ns; j++)
        k += strcmp(sp[j].host, host) == 0;
    return k;
}
