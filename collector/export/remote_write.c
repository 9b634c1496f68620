/* remote_write.c: Prometheus remote write 1.0 (see remote_write.h;
 * https://prometheus.io/docs/concepts/remote_write_spec/). */
#include "remote_write.h"

#include <ctype.h>
#include <errno.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "backoff.h"
#include "httpc.h"
#include "log.h"
#include "prom_remote.pb-c.h"
#include "sample.h"
#include "rwqueue.h"
#include "series.h"
#include "tagpat.h"

#define MOD "remote_write"

#ifndef PW_COLLECTOR_VERSION
#define PW_COLLECTOR_VERSION "0"
#endif
#define MAX_TOKEN 4096
#define SLICE_NS  (5ull * 1000000) /* loop time an encode slice may take */

/* ============================================================================================
 * Encoding
 * ========================================================================================== */

/* One series with its storage: labels (sorted by name), one sample, the tag's text. */
typedef struct ser_s {
    Prometheus__TimeSeries ts;
    Prometheus__Label lab[4];
    Prometheus__Label *labp[4];
    Prometheus__Sample smp;
    Prometheus__Sample *smpp;
    char tag[PW_TAG_MAX * 4 + 1];
} ser_t;

typedef struct batch_s {
    ser_t *s;
    Prometheus__TimeSeries **tsp;
    size_t n, cap;
    pw_remote_write_emit_fn emit;
    void *arg;
    int64_t total;
} batch_t;

static void set_label(ser_t *s, size_t i, const char *name, const char *value)
{
    prometheus__label__init(&s->lab[i]);
    s->lab[i].name = (char *)(uintptr_t)name;
    s->lab[i].value = (char *)(uintptr_t)value;
    s->labp[i] = &s->lab[i];
}

static int flush(batch_t *b)
{
    if (b->n == 0)
        return 0;
    Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
    wr.n_timeseries = b->n;
    wr.timeseries = b->tsp;
    size_t plen = prometheus__write_request__get_packed_size(&wr);
    uint8_t *pb = pw_malloc(plen ? plen : 1);
    size_t clen = snappy_max_compressed_length(plen);
    uint8_t *z = pw_malloc(clen ? clen : 1);
    if (pb == NULL || z == NULL) {
        pw_free(pb);
        pw_free(z);
        return PW_ENOMEM;
    }
    prometheus__write_request__pack(&wr, pb);
    snappy_status st = snappy_compress((const char *)pb, plen, (char *)z, &clen);
    pw_free(pb);
    if (st != SNAPPY_OK) {
        pw_free(z);
        return PW_ENOMEM;
    }
    size_t n = b->n;
    b->n = 0;
    b->total += (int64_t)n;
    return b->emit(b->arg, z, clen, n);
}

/* The next free series (flushing a full batch first), labels and sample to be filled. Labels
 * in name order: __name__, collector (the owner series), host, pool, tag. */
static int add(batch_t *b, const char *name, const char *collector, const char *host,
               const char *pool, const char *tag, double v, uint64_t ts_ms, ser_t **out)
{
    int r = b->n == b->cap ? flush(b) : 0;
    if (r != 0)
        return r;
    ser_t *s = &b->s[b->n];
    prometheus__time_series__init(&s->ts);
    prometheus__sample__init(&s->smp);
    size_t k = 0;
    set_label(s, k++, "__name__", name);
    if (collector)
        set_label(s, k++, "collector", collector);
    set_label(s, k++, "host", host);
    if (pool)
        set_label(s, k++, "pool", pool);
    if (tag)
        set_label(s, k++, "tag", tag);
    s->ts.n_labels = k;
    s->ts.labels = s->labp;
    s->smp.value = v;
    s->smp.timestamp = (int64_t)ts_ms;
    s->smpp = &s->smp;
    s->ts.n_samples = 1;
    s->ts.samples = &s->smpp;
    b->tsp[b->n++] = &s->ts;
    if (out)
        *out = s;
    return 0;
}

/* A series with a tag label, the tag given as raw bytes (formatted into the series). */
static int add_tag(batch_t *b, const char *name, const char *host, int pool, const uint8_t *tag,
                   size_t len, double v, uint64_t ts_ms)
{
    ser_t *s;
    int r = add(b, name, NULL, host, pw_pool_name(pool), "", v, ts_ms, &s);
    if (r == 0) {
        /* a session's session-pool row: "Gh05 (session 1)", as /metrics names it */
        pw_row_format(tag, len, pool, s->tag, sizeof(s->tag));
        s->lab[3].value = s->tag;
    }
    return r;
}

/* ---- the export policy's memory of a host ---------------------------------------------- */

typedef struct held_s {
    uint32_t row;      /* index in the host's table */
    uint32_t key;      /* hash of (tag, pool): the row at that index is still this row */
    uint64_t moved_ms; /* sample time of its last change */
} held_t;

struct pw_remote_write_hoststate_s {
    uint32_t *vh; /* per row: a hash of its bytes at the previous encode */
    uint32_t nv;  /* rows in vh; 0 = the host was not encoded yet (no movers) */
    held_t *held; /* movers being exported */
    uint32_t nheld, capheld;
    int8_t connected; /* poolwatch_host_connected as last sent; -1 = not sent yet */
    int8_t stopped;   /* poolwatch_host_stopped as last sent */
    int8_t loading;   /* poolwatch_host_loading_history as last sent */
    uint32_t leaks;   /* hash of the suspects' series as last sent */
};

static uint32_t mix64(uint64_t v)
{
    v ^= v >> 33;
    v *= UINT64_C(0xff51afd7ed558ccd);
    v ^= v >> 33;
    v *= UINT64_C(0xc4ceb9fe1a85ec53);
    v ^= v >> 33;
    return (uint32_t)v;
}

static uint32_t row_key(const uint8_t *tag, size_t len, int pool)
{
    uint32_t h = 2166136261u ^ (uint32_t)pool;
    for (size_t i = 0; i < len; i++)
        h = (h ^ tag[i]) * 16777619u;
    return h;
}

void pw_remote_write_cursor_free(pw_remote_write_cursor_t *cur)
{
    if (cur == NULL)
        return;
    for (size_t i = 0; cur->hs != NULL && i < cur->n; i++) {
        pw_free(cur->hs[i].vh);
        pw_free(cur->hs[i].held);
    }
    pw_free(cur->hs);
    cur->hs = NULL;
    pw_free(cur->sp_sorted);
    cur->sp_sorted = NULL;
    cur->sp_n = 0;
    pw_free(cur->sent_ms);
    cur->sent_ms = NULL;
    cur->n = 0;
}

typedef struct mv_s {
    uint64_t bytes;
    uint32_t row;
} mv_t;

/* Scratch of one encode, sized for the largest table seen. */
typedef struct scratch_s {
    uint32_t epoch;
    uint32_t *moved, *sel; /* per row: == epoch when moved / selected at this encode */
    uint32_t *order;       /* rows to send, in order */
    uint32_t *cand;        /* pinned rows */
    uint32_t *hmark;       /* per row: == epoch when held (exported as a mover) */
    mv_t *mv;              /* new movers */
    uint32_t *top;         /* top rows by bytes */
    uint64_t *top_bytes;
    size_t rows_cap;
    const pw_suspect_t **sp; /* suspects sorted by host name */
    size_t ns;
    pw_tagpat_list_t pinned;
} scratch_t;

/* Grows *p from `old` to `cap` elements of `size` bytes, the new ones zeroed. */
static int regrow(void *pp, size_t size, size_t old, size_t cap)
{
    void **p = pp;
    uint8_t *n = pw_realloc(*p, cap * size);
    if (n == NULL)
        return PW_ENOMEM;
    memset(n + old * size, 0, (cap - old) * size);
    *p = n;
    return 0;
}

static int scratch_rows(scratch_t *x, size_t rows)
{
    if (rows <= x->rows_cap)
        return 0;
    size_t cap = rows + rows / 2 + 16, o = x->rows_cap;
    if (regrow(&x->moved, sizeof(*x->moved), o, cap) || regrow(&x->sel, sizeof(*x->sel), o, cap) ||
        regrow(&x->order, sizeof(*x->order), o, cap) ||
        regrow(&x->cand, sizeof(*x->cand), o, cap) ||
        regrow(&x->hmark, sizeof(*x->hmark), o, cap) || regrow(&x->mv, sizeof(*x->mv), o, cap))
        return PW_ENOMEM; /* those grown keep their size: rows_cap stays, all grow again */
    x->rows_cap = cap;
    return 0;
}

static int by_host(const void *a, const void *b)
{
    const pw_suspect_t *x = *(const pw_suspect_t *const *)a, *y = *(const pw_suspect_t *const *)b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x < y ? -1 : x > y);
}

/* cur->sp_sorted: the `ns` suspects `sp` of `an` by host name, sorted again only when the
 * analysis published another list. Returns 0 or PW_ENOMEM (the cache is dropped). */
static int sorted_suspects(pw_remote_write_cursor_t *cur, const pw_analysis_run_t *an,
                           const pw_suspect_t *sp, size_t ns)
{
    uint64_t gen = pw_analysis_run_suspects_gen(an);
    if (cur->sp_sorted != NULL && cur->sp_an == (const void *)an && cur->sp_gen == gen &&
        cur->sp_base == sp && cur->sp_n == ns)
        return 0;
    pw_free(cur->sp_sorted);
    cur->sp_sorted = pw_malloc((ns ? ns : 1) * sizeof(*cur->sp_sorted));
    if (cur->sp_sorted == NULL) {
        cur->sp_n = 0;
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < ns; i++)
        cur->sp_sorted[i] = &sp[i];
    qsort(cur->sp_sorted, ns, sizeof(*cur->sp_sorted), by_host);
    cur->sp_n = ns;
    cur->sp_base = sp;
    cur->sp_an = an;
    cur->sp_gen = gen;
    return 0;
}

/* The suspects of `host` in x->sp: the first and the count. */
static size_t host_suspects(const scratch_t *x, const char *host, size_t *first)
{
    size_t lo = 0, hi = x->ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(x->sp[mid]->host, host) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < x->ns && strcmp(x->sp[k]->host, host) == 0)
        k++;
    *first = lo;
    return k - lo;
}

/* New movers: most bytes first, ties in table order. */
static int by_bytes_desc(const void *a, const void *b)
{
    const mv_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Picks the rows of host h to send (x->order[0..*n)) and updates its state. */
static int pick_rows(const pw_host_t *h, pw_remote_write_hoststate_t *hs,
                     const pw_remote_write_policy_t *pol, size_t cap, scratch_t *x, size_t *n_out,
                     uint64_t *capped)
{
    size_t rows = pw_host_nrows(h), ntop = 0, tph = pol->tags_per_host, n = 0, nc = 0;
    uint64_t ts = h->last_seen_ms;
    *n_out = 0;
    if (rows > UINT32_MAX - 1)
        rows = UINT32_MAX - 1;
    int r = scratch_rows(x, rows);
    if (r != 0)
        return r;
    if (++x->epoch == 0) { /* wrapped: old marks could read as current */
        memset(x->moved, 0, x->rows_cap * sizeof(*x->moved));
        memset(x->sel, 0, x->rows_cap * sizeof(*x->sel));
        memset(x->hmark, 0, x->rows_cap * sizeof(*x->hmark));
        x->epoch = 1;
    }
    uint32_t ep = x->epoch;
    int track = pol->movers;
    int had = hs->nv > 0;
    if (track && hs->nv != rows) {
        uint32_t *vh = pw_realloc(hs->vh, (rows ? rows : 1) * sizeof(*vh));
        if (vh == NULL)
            return PW_ENOMEM;
        hs->vh = vh;
    }
    size_t old_nv = hs->nv;
    char txt[PW_TAG_MAX * 4 + 1];
    for (size_t i = 0; i < rows; i++) {
        pw_host_row_t rw;
        pw_host_row_plain(h, i, &rw);
        /* top by bytes, ties in table order (as pw_series_top) */
        if (tph > 0 && !(ntop == tph && rw.bytes <= x->top_bytes[ntop - 1])) {
            size_t j = ntop < tph ? ntop++ : tph - 1;
            while (j > 0 && x->top_bytes[j - 1] < rw.bytes) {
                x->top[j] = x->top[j - 1];
                x->top_bytes[j] = x->top_bytes[j - 1];
                j--;
            }
            x->top[j] = (uint32_t)i;
            x->top_bytes[j] = rw.bytes;
        }
        if (track) {
            uint32_t v = mix64(rw.bytes);
            if (had && (i >= old_nv || hs->vh[i] != v))
                x->moved[i] = ep;
            hs->vh[i] = v;
        }
        if (x->pinned.present && x->pinned.n > 0) {
            size_t tl = pw_tag_format(rw.tag, rw.tag_len, txt, sizeof(txt));
            if (pw_tagpat_list_match(&x->pinned, txt, tl < sizeof(txt) ? tl : sizeof(txt) - 1))
                x->cand[nc++] = (uint32_t)i; /* pinned rows, in table order */
        }
    }
    if (track)
        hs->nv = (uint32_t)rows;
    /* 1. the top rows */
    for (size_t j = 0; j < ntop; j++) {
        x->sel[x->top[j]] = ep;
        x->order[n++] = x->top[j];
    }
    /* 2. pinned rows */
    for (size_t j = 0; j < nc && n < cap; j++)
        if (x->sel[x->cand[j]] != ep) {
            x->sel[x->cand[j]] = ep;
            x->order[n++] = x->cand[j];
        }
    if (!track) {
        *n_out = n;
        return 0;
    }
    /* 3. movers already exported: refreshed by a change, dropped after hold_ms without one,
     * or when their row is gone */
    uint64_t hold = pol->hold_ms ? pol->hold_ms : 15 * 60 * 1000;
    uint32_t k = 0;
    for (uint32_t j = 0; j < hs->nheld; j++) {
        held_t e = hs->held[j];
        if (e.row >= rows)
            continue;
        pw_host_row_t rw;
        pw_host_row_plain(h, e.row, &rw);
        if (row_key(rw.tag, rw.tag_len, rw.pool) != e.key)
            continue;
        if (x->moved[e.row] == ep)
            e.moved_ms = ts;
        if (ts > e.moved_ms + hold)
            continue;
        if (x->sel[e.row] != ep) {
            if (n >= cap)
                continue; /* the cap shrank under it (more pinned rows) */
            x->sel[e.row] = ep;
            x->order[n++] = e.row;
        }
        x->hmark[e.row] = ep;
        hs->held[k++] = e;
    }
    hs->nheld = k;
    /* 4. new movers, most bytes first, while there is room */
    size_t nm = 0;
    for (size_t i = 0; i < rows; i++)
        if (x->moved[i] == ep && x->sel[i] != ep) {
            pw_host_row_t rw;
            pw_host_row_plain(h, i, &rw);
            x->mv[nm++] = (mv_t){rw.bytes, (uint32_t)i};
        }
    qsort(x->mv, nm, sizeof(*x->mv), by_bytes_desc);
    for (size_t j = 0; j < nm; j++) {
        if (n >= cap) {
            *capped += nm - j;
            break;
        }
        x->sel[x->mv[j].row] = ep;
        x->order[n++] = x->mv[j].row;
    }
    /* Every selected row that moved and is not held yet is held from now on (top and pinned
     * rows too: when they leave the top, they stay while they keep moving). */
    for (size_t j = 0; j < n; j++) {
        uint32_t row = x->order[j];
        if (x->moved[row] != ep || x->hmark[row] == ep)
            continue;
        if (hs->nheld == hs->capheld) {
            uint32_t c2 = hs->capheld ? hs->capheld * 2 : 16;
            held_t *nh = pw_realloc(hs->held, c2 * sizeof(*nh));
            if (nh == NULL)
                return PW_ENOMEM;
            hs->held = nh;
            hs->capheld = c2;
        }
        pw_host_row_t rw;
        pw_host_row_plain(h, row, &rw);
        hs->held[hs->nheld++] = (held_t){row, row_key(rw.tag, rw.tag_len, rw.pool), ts};
        x->hmark[row] = ep;
    }
    *n_out = n;
    return 0;
}

/* A hash of the host's suspects as their series carry them (tag, pool, growth, score). */
static uint32_t leaks_hash(const scratch_t *x, size_t first, size_t n)
{
    uint32_t hv = 2166136261u ^ (uint32_t)n;
    for (size_t j = 0; j < n; j++) {
        const pw_suspect_t *s = x->sp[first + j];
        uint64_t bits[2];
        memcpy(&bits[0], &s->d.rate_bytes_per_h, 8);
        memcpy(&bits[1], &s->d.score, 8);
        hv = (hv ^ row_key(s->tag, s->tag_len, s->pool)) * 16777619u;
        hv = (hv ^ mix64(bits[0] ^ (bits[1] << 1))) * 16777619u;
    }
    return hv;
}

/* The leak series of /metrics (metrics_prom.c): same names, labels and values. */
static int leak_series(batch_t *b, const pw_host_t *h, const pw_remote_write_policy_t *pol,
                       const scratch_t *x, size_t first, size_t n, uint64_t ts)
{
    int r = 0;
    for (size_t j = 0; pol->leak_series && j < n && r == 0; j++) {
        const pw_suspect_t *s = x->sp[first + j];
        r = add_tag(b, "poolwatch_leak_growth_bytes_per_hour", h->name, s->pool, s->tag, s->tag_len,
                    s->d.rate_bytes_per_h, ts);
        if (r == 0)
            r = add_tag(b, "poolwatch_leak_score", h->name, s->pool, s->tag, s->tag_len, s->d.score,
                        ts);
    }
    return r;
}

static int host_series(batch_t *b, const pw_host_t *h, const pw_analysis_run_t *an, int loading,
                       const pw_remote_write_policy_t *pol, pw_remote_write_hoststate_t *hs,
                       size_t cap, scratch_t *x, uint64_t *capped, uint64_t *nrows)
{
    const pw_analysis_host_t *ah = pw_analysis_run_host(an, h);
    uint64_t used[2], lim[2], ts = h->last_seen_ms;
    pw_series_pools(h, used, lim);
    const char *const *pn = pw_series_pool_names;
    size_t sfirst = 0, ns_host = host_suspects(x, h->name, &sfirst);
    int r = 0;
    for (int p = 0; p < 2 && r == 0; p++)
        r = add(b, "poolwatch_pool_bytes", NULL, h->name, pn[p], NULL, (double)used[p], ts, NULL);
    const char *src[2];
    pw_series_limit_sources(h, src);
    for (int p = 0; p < 2 && r == 0; p++) {
        if (lim[p] == 0) /* 0 = unknown: no series (absent = unknown), as in /metrics */
            continue;
        ser_t *ls;
        r = add(b, "poolwatch_pool_limit_bytes", NULL, h->name, pn[p], NULL, (double)lim[p], ts,
                &ls);
        if (r == 0) { /* where the limit comes from, after pool in name order */
            set_label(ls, ls->ts.n_labels, "source", src[p]);
            ls->ts.n_labels++;
        }
    }
    if (ah != NULL && ah->have_pressure) {
        const pw_pressure_t *pr[2] = {&ah->np, &ah->pg};
        for (int p = 0; p < 2 && r == 0; p++) {
            /* the host pool's one ETA, as /metrics and the API give it (0 once it ran out) */
            pw_host_eta_t he;
            if (pw_analysis_host_eta(an, h, p ? PW_POOL_PAGED : PW_POOL_NONPAGED, pr[p], &he) !=
                    0 ||
                (!he.ran_out && he.e.basis == PW_ETA_NONE))
                continue;
            r = add(b, "poolwatch_pool_exhaustion_seconds", NULL, h->name, pn[p], NULL,
                    he.ran_out ? 0.0 : (double)he.e.eta_ms / 1000.0, ts, NULL);
        }
    }
    if (r == 0)
        r = add(b, "poolwatch_host_connected", NULL, h->name, NULL, NULL, pw_host_connected(h), ts,
                NULL);
    if (r == 0)
        r = add(b, "poolwatch_host_stopped", NULL, h->name, NULL, NULL, pw_series_stopped(h), ts,
                NULL);
    if (r == 0)
        r = add(b, "poolwatch_host_loading_history", NULL, h->name, NULL, NULL, loading, ts, NULL);
    if (r == 0)
        r = add(b, "poolwatch_host_suspects", NULL, h->name, NULL, NULL, (double)ns_host, ts, NULL);
    double av[3];
    int have[3];
    pw_series_agent(h, av, have);
    for (int k = 0; k < 3 && r == 0; k++) /* the agent's own footprint, as /metrics */
        if (have[k])
            r = add(b, pw_series_agent_names[k], NULL, h->name, NULL, NULL, av[k], ts, NULL);
    for (int p = 0; p < 2 && r == 0; p++) { /* srv 2019 / 2020, as /metrics */
        int64_t em = pw_analysis_run_empty_last(an, h, p);
        if (em > 0)
            r = add(b, "poolwatch_pool_empty_event_timestamp_seconds", NULL, h->name, pn[p], NULL,
                    (double)em / 1000.0, ts, NULL);
    }
    if (r == 0 && pol->owner_url != NULL && pol->owner_url[0] != '\0')
        r = add(b, "poolwatch_host_owner", pol->owner_url, h->name, NULL, NULL, 1.0, ts, NULL);
    size_t n = 0;
    if (r == 0)
        r = pick_rows(h, hs, pol, cap, x, &n, capped);
    *nrows += n;
    int with_held = n > 0 && pw_host_has_held(h); /* Linux: the slab caches' slabs, as /metrics */
    for (size_t j = 0; j < n && r == 0; j++) {
        pw_host_row_t rw;
        pw_host_row_plain(h, x->order[j], &rw);
        r = add_tag(b, "poolwatch_tag_bytes", h->name, rw.pool, rw.tag, rw.tag_len,
                    (double)rw.bytes, ts);
        if (r == 0)
            r = add_tag(b, "poolwatch_tag_allocations", h->name, rw.pool, rw.tag, rw.tag_len,
                        (double)rw.diff, ts);
        if (r == 0 && with_held)
            r = add_tag(b, "poolwatch_tag_held_bytes", h->name, rw.pool, rw.tag, rw.tag_len,
                        (double)rw.held_bytes, ts);
    }
    if (r == 0)
        r = leak_series(b, h, pol, x, sfirst, ns_host, ts);
    hs->leaks = leaks_hash(x, sfirst, ns_host);
    return r;
}

int64_t pw_remote_write_encode(const pw_fleet_t *f, const pw_analysis_run_t *an,
                               size_t tags_per_host, size_t max_series,
                               pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                               void *arg)
{
    pw_remote_write_policy_t pol = {.tags_per_host = tags_per_host,
                                    .max_tags_per_host = tags_per_host};
    return pw_remote_write_encode_policy(f, an, &pol, max_series, cur, emit, arg);
}

int64_t pw_remote_write_encode_policy(const pw_fleet_t *f, const pw_analysis_run_t *an,
                                      const pw_remote_write_policy_t *pol, size_t max_series,
                                      pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                                      void *arg)
{
    if (cur == NULL)
        return PW_EINVAL;
    int done;
    cur->pos = 0;
    return pw_remote_write_encode_slice(f, an, pol, max_series, cur, emit, arg, 0, &done);
}

int64_t pw_remote_write_encode_slice(const pw_fleet_t *f, const pw_analysis_run_t *an,
                                     const pw_remote_write_policy_t *pol, size_t max_series,
                                     pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                                     void *arg, uint64_t budget_ns, int *done)
{
    if (f == NULL || cur == NULL || emit == NULL || pol == NULL || done == NULL)
        return PW_EINVAL;
    uint64_t t0 = uv_hrtime();
    *done = 0;
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(an, &sp);
    if (max_series == 0)
        max_series = 2000;
    size_t cap = pol->max_tags_per_host ? pol->max_tags_per_host : 100;
    if (cap < pol->tags_per_host)
        cap = pol->tags_per_host;
    if (cur->n < f->n) {
        uint64_t *p = pw_realloc(cur->sent_ms, f->n * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        memset(p + cur->n, 0, (f->n - cur->n) * sizeof(*p));
        cur->sent_ms = p;
        pw_remote_write_hoststate_t *hs = pw_realloc(cur->hs, f->n * sizeof(*hs));
        if (hs == NULL)
            return PW_ENOMEM; /* sent_ms grew alone: n stays, so it grows again next time */
        memset(hs + cur->n, 0, (f->n - cur->n) * sizeof(*hs));
        for (size_t i = cur->n; i < f->n; i++)
            hs[i].connected = -1;
        cur->hs = hs;
        cur->n = f->n;
    }
    batch_t b = {.cap = max_series, .emit = emit, .arg = arg};
    scratch_t x;
    memset(&x, 0, sizeof(x));
    b.s = pw_malloc(max_series * sizeof(*b.s));
    b.tsp = pw_malloc(max_series * sizeof(*b.tsp));
    size_t tph = pol->tags_per_host ? pol->tags_per_host : 1;
    x.top = pw_malloc(tph * sizeof(*x.top));
    x.top_bytes = pw_malloc(tph * sizeof(*x.top_bytes));
    int r = b.s && b.tsp && x.top && x.top_bytes ? 0 : PW_ENOMEM;
    if (r == 0 && pol->pinned_tags != NULL && pol->pinned_tags[0] != '\0')
        r = pw_tagpat_list_init(&x.pinned, pol->pinned_tags);
    if (r == 0)
        r = sorted_suspects(cur, an, sp, ns);
    x.sp = cur->sp_sorted;
    x.ns = r == 0 ? ns : 0;
    if (cur->pos == 0 || cur->pos > f->n) {
        cur->pos = 0;
        cur->ahead = 0;
        cur->rows_exported = 0;
    }
    size_t i = cur->pos;
    for (; i < f->n && r == 0; i++) {
        if (budget_ns != 0 && i > cur->pos && (i - cur->pos) % 16 == 0 &&
            uv_hrtime() - t0 >= budget_ns)
            break;
        const pw_host_t *h = f->hosts[i];
        pw_remote_write_hoststate_t *hs = &cur->hs[h->index];
        if (h->last_seen_ms != 0 && h->last_seen_ms <= cur->sent_ms[h->index] &&
            !pw_host_retired(h) && cur->now_ms > h->last_seen_ms && hs->connected >= 0) {
            /* No new sample, but its agent came or went (said goodbye or not), or the analysis
             * changed its suspects: the change, stamped now (the global view would show the
             * old state until the series go stale, and the rules' HostSilent needs to tell a
             * clean stop from silence). */
            if (hs->connected != pw_host_connected(h)) {
                r = add(&b, "poolwatch_host_connected", NULL, h->name, NULL, NULL,
                        pw_host_connected(h), cur->now_ms, NULL);
                hs->connected = (int8_t)pw_host_connected(h);
            }
            if (r == 0 && hs->stopped != pw_series_stopped(h)) {
                r = add(&b, "poolwatch_host_stopped", NULL, h->name, NULL, NULL,
                        pw_series_stopped(h), cur->now_ms, NULL);
                hs->stopped = (int8_t)pw_series_stopped(h);
            }
            /* a backlog that caught up and was judged: no longer loading, without a new sample */
            int ld = pw_analysis_loading(an, h, (int64_t)cur->now_ms);
            if (r == 0 && hs->loading != ld) {
                r = add(&b, "poolwatch_host_loading_history", NULL, h->name, NULL, NULL, ld,
                        cur->now_ms, NULL);
                hs->loading = (int8_t)ld;
            }
            size_t sf = 0, sn = host_suspects(&x, h->name, &sf);
            uint32_t lh = leaks_hash(&x, sf, sn);
            if (r == 0 && lh != hs->leaks) {
                r = add(&b, "poolwatch_host_suspects", NULL, h->name, NULL, NULL, (double)sn,
                        cur->now_ms, NULL);
                if (r == 0)
                    r = leak_series(&b, h, pol, &x, sf, sn, cur->now_ms);
                hs->leaks = lh;
            }
            continue;
        }
        if (h->last_seen_ms == 0 || h->last_seen_ms <= cur->sent_ms[h->index] || pw_host_retired(h))
            continue;
        if (cur->max_ts_ms != 0 && h->last_seen_ms > cur->max_ts_ms) {
            /* In the future: a receiver would take it and then refuse everything older. The
             * cursor stays, so the host's samples go out once its clock is right. */
            cur->ahead++;
            continue;
        }
        if (h->last_seen_ms < cur->min_ts_ms) {
            cur->sent_ms[h->index] = h->last_seen_ms; /* too old for a receiver: skipped */
            continue;
        }
        int ld = pw_analysis_loading(an, h, (int64_t)cur->now_ms);
        r = host_series(&b, h, an, ld, pol, hs, cap, &x, &cur->rows_capped, &cur->rows_exported);
        if (r == 0) {
            cur->sent_ms[h->index] = h->last_seen_ms;
            hs->connected = (int8_t)pw_host_connected(h);
            hs->stopped = (int8_t)pw_series_stopped(h);
            hs->loading = (int8_t)ld;
        }
    }
    if (r == 0)
        r = flush(&b);
    if (r == 0 && i >= f->n) {
        *done = 1;
        cur->pos = 0;
    } else if (r == 0) {
        cur->pos = i;
    } else {
        cur->pos = 0; /* out of memory or the emitter failed: the next interval starts over */
    }
    pw_free(b.s);
    pw_free(b.tsp);
    pw_free(x.moved);
    pw_free(x.sel);
    pw_free(x.order);
    pw_free(x.cand);
    pw_free(x.hmark);
    pw_free(x.mv);
    pw_free(x.top);
    pw_free(x.top_bytes);
    pw_tagpat_list_free(&x.pinned);
    return r == 0 ? b.total : r;
}

/* ============================================================================================
 * Options
 * ========================================================================================== */

/* Headers the client sets itself: a configured one would be sent twice or contradict it. */
static const char *const reserved[] = {
    "host",       "content-length",    "content-type", "content-encoding",
    "connection", "transfer-encoding", "user-agent",   "x-prometheus-remote-write-version",
    NULL};

static int check_header(const char *hd, int have_token, pw_diag_t *d)
{
    const char *colon = strchr(hd, ':');
    size_t nl = colon ? (size_t)(colon - hd) : 0;
    if (colon == NULL || nl == 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "headers",
                           "remote_write.headers: '%s': not 'Name: value'", hd);
    for (size_t i = 0; i < nl; i++)
        if (!isalnum((unsigned char)hd[i]) && !strchr("!#$%&'*+-.^_`|~", hd[i]))
            return pw_diag_set(d, PW_ECONFIG, 0, i, "headers",
                               "remote_write.headers: '%s': the name has a byte a header name "
                               "may not have (0x%02x)",
                               hd, (unsigned char)hd[i]);
    for (const char *p = colon + 1; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return pw_diag_set(d, PW_ECONFIG, 0, (uint64_t)(p - hd), "headers",
                               "remote_write.headers: '%.*s': control byte in the value", (int)nl,
                               hd);
    for (size_t i = 0; reserved[i]; i++)
        if (strlen(reserved[i]) == nl && strncasecmp(reserved[i], hd, nl) == 0)
            return pw_diag_set(d, PW_ECONFIG, 0, 0, "headers",
                               "remote_write.headers: '%.*s' is set by the collector itself",
                               (int)nl, hd);
    if (have_token && nl == 13 && strncasecmp(hd, "authorization", 13) == 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "headers",
                           "remote_write.headers: Authorization given with bearer_token_file");
    return 0;
}

/* Reads the token file: one token, surrounding white space removed. */
static int read_token(const char *path, char **out, pw_diag_t *d)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "bearer_token_file",
                           "remote_write.bearer_token_file: %s: %s", path, strerror(errno));
    char *buf = pw_malloc(MAX_TOKEN + 2);
    if (buf == NULL) {
        fclose(f);
        return PW_ENOMEM;
    }
    size_t n = fread(buf, 1, MAX_TOKEN + 1, f);
    fclose(f);
    buf[n] = '\0';
    if (n > MAX_TOKEN) {
        pw_free(buf);
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "bearer_token_file",
                           "remote_write.bearer_token_file: %s: longer than %d bytes", path,
                           MAX_TOKEN);
    }
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    char *s = buf;
    while (*s && isspace((unsigned char)*s))
        s++;
    int r = 0;
    if (*s == '\0')
        r = pw_diag_set(d, PW_ECONFIG, 0, 0, "bearer_token_file",
                        "remote_write.bearer_token_file: %s: empty", path);
    for (const char *p = s; *p && r == 0; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            r = pw_diag_set(d, PW_ECONFIG, 0, (uint64_t)(p - buf), "bearer_token_file",
                            "remote_write.bearer_token_file: %s: white space or a control byte "
                            "inside the token (one token expected)",
                            path);
    if (r == 0 && (*out = pw_strdup(s)) == NULL)
        r = PW_ENOMEM;
    pw_free(buf);
    return r;
}

static int has(const char *s)
{
    return s != NULL && s[0] != '\0';
}

int pw_remote_write_check(const pw_remote_write_opts_t *o, pw_diag_t *d)
{
    if (o == NULL)
        return PW_EINVAL;
    if (!has(o->url))
        return 0;
    pw_url_t u;
    int r = pw_httpc_parse_url(o->url, "remote_write.url", &u, d);
    if (r != 0) {
        if (d)
            snprintf(d->field, sizeof(d->field), "url");
        return r;
    }
    if (has(o->bearer_token_file)) {
        char *t;
        if ((r = read_token(o->bearer_token_file, &t, d)) != 0)
            return r;
        pw_free(t);
    }
    for (size_t i = 0; i < o->n_headers; i++)
        if ((r = check_header(o->headers[i], has(o->bearer_token_file), d)) != 0)
            return r;
    if (!u.tls && (has(o->ca_file) || has(o->cert_file)))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "ca_file",
                           "remote_write.ca_file/cert_file: given for an http:// URL (%s): use "
                           "https:// or remove them",
                           o->url);
    if (has(o->cert_file) != has(o->key_file))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "cert_file",
                           "remote_write.cert_file and key_file: give both or neither");
    if (u.tls) {
        uv_loop_t loop;
        pw_httpc_t *c;
        if (uv_loop_init(&loop) != 0)
            return PW_ENOMEM;
        pw_httpc_opts_t ho = {.url = o->url,
                              .opt_name = "remote_write.url",
                              .ca_file = o->ca_file,
                              .cert_file = o->cert_file,
                              .key_file = o->key_file};
        r = pw_httpc_new(&loop, &ho, &c, d);
        if (r == 0)
            pw_httpc_close(c);
        else if (d)
            snprintf(d->field, sizeof(d->field), "ca_file");
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        if (r != 0 && d) {
            char m[sizeof(d->msg) + 64];
            snprintf(m, sizeof(m), "remote_write (ca_file, cert_file, key_file): %s", d->msg);
            m[sizeof(d->msg) - 1] = '\0';
            memcpy(d->msg, m, sizeof(d->msg));
        }
    }
    return r;
}

/* ============================================================================================
 * Sender
 * ========================================================================================== */

typedef struct req_s {
    struct req_s *next;
    uint64_t seq; /* order of creation; a disk queue file's name */
    uint8_t *body;
    size_t len, series;
    uint32_t attempts;
    uint64_t not_before; /* uv_now() ms */
} req_t;

struct pw_remote_write_s {
    uv_loop_t *loop;
    pw_remote_write_opts_t o;
    char *token_file;
    char *extra;   /* configured headers as "Name: value\r\n" lines */
    char *headers; /* everything pw_httpc_post gets */
    pw_httpc_t *http;
    pw_remote_write_cursor_t cur;
    char *pinned, *owner; /* the policy's strings, owned */
    pw_rwqueue_t *dq;     /* NULL = memory only */
    uint64_t next_seq;
    req_t *head, *tail, *inflight;
    pw_remote_write_stats_t st;
    char *url; /* for the log */
    pw_complaint_t c_fail, c_drop, c_ahead, c_disk;
    uv_timer_t retry_timer, tick_timer;
    uv_idle_t slice_idle; /* runs the encode's next slice while one is under way */
    int closing, handles;
};

static void pump(pw_remote_write_t *w);
static void refill(pw_remote_write_t *w);

static int build_headers(pw_remote_write_t *w, const char *token)
{
    size_t cap = strlen(w->extra) + (token ? strlen(token) : 0) + 256;
    char *h = pw_malloc(cap);
    if (h == NULL)
        return PW_ENOMEM;
    snprintf(h, cap,
             "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n"
             "X-Prometheus-Remote-Write-Version: 0.1.0\r\n"
             "User-Agent: poolwatch-collector/" PW_COLLECTOR_VERSION "\r\n%s%s%s%s",
             w->extra, token ? "Authorization: Bearer " : "", token ? token : "",
             token ? "\r\n" : "");
    pw_free(w->headers);
    w->headers = h;
    return 0;
}

int pw_remote_write_reload_token(pw_remote_write_t *w, pw_diag_t *d)
{
    if (w == NULL || w->token_file == NULL)
        return 0;
    char *t;
    int r = read_token(w->token_file, &t, d);
    if (r != 0)
        return r;
    r = build_headers(w, t);
    pw_free(t);
    return r;
}

static void on_tick(uv_timer_t *t);

static void free_writer(pw_remote_write_t *w)
{
    pw_free(w->token_file);
    pw_free(w->extra);
    pw_free(w->headers);
    pw_free(w->url);
    pw_free(w->pinned);
    pw_free(w->owner);
    pw_rwqueue_close(w->dq);
    pw_remote_write_cursor_free(&w->cur);
    pw_free(w);
}

int pw_remote_write_new(uv_loop_t *loop, const pw_remote_write_opts_t *opts,
                        pw_remote_write_t **out, pw_diag_t *d)
{
    if (loop == NULL || opts == NULL || out == NULL || !has(opts->url))
        return PW_EINVAL;
    int r = pw_remote_write_check(opts, d);
    if (r != 0)
        return r;
    pw_remote_write_t *w = pw_calloc(1, sizeof(*w));
    if (w == NULL)
        return PW_ENOMEM;
    w->loop = loop;
    w->o = *opts;
    w->o.url = w->o.bearer_token_file = w->o.ca_file = w->o.cert_file = w->o.key_file = NULL;
    w->o.headers = NULL;
    w->o.queue_dir = NULL;
    w->o.policy.pinned_tags = w->o.policy.owner_url = NULL;
    w->o.policy.tags_per_host = opts->tags_per_host;
    w->next_seq = 1;
    if (w->o.interval_ms == 0)
        w->o.interval_ms = 15000;
    if (w->o.max_queue == 0)
        w->o.max_queue = 256;
    if (w->o.max_series_per_request == 0)
        w->o.max_series_per_request = 2000;
    if (w->o.backoff_initial_ms == 0)
        w->o.backoff_initial_ms = 1000;
    if (w->o.backoff_max_ms == 0)
        w->o.backoff_max_ms = 30000;
    size_t el = 1;
    for (size_t i = 0; i < opts->n_headers; i++)
        el += strlen(opts->headers[i]) + 2;
    w->extra = pw_malloc(el);
    r = w->extra ? 0 : PW_ENOMEM;
    if (r == 0) {
        size_t o = 0;
        w->extra[0] = '\0';
        for (size_t i = 0; i < opts->n_headers; i++)
            o += (size_t)snprintf(w->extra + o, el - o, "%s\r\n", opts->headers[i]);
    }
    if (r == 0 && (w->url = pw_strdup(opts->url)) == NULL)
        r = PW_ENOMEM;
    if (r == 0 && has(opts->policy.pinned_tags) &&
        (w->o.policy.pinned_tags = w->pinned = pw_strdup(opts->policy.pinned_tags)) == NULL)
        r = PW_ENOMEM;
    if (r == 0 && has(opts->policy.owner_url) &&
        (w->o.policy.owner_url = w->owner = pw_strdup(opts->policy.owner_url)) == NULL)
        r = PW_ENOMEM;
    if (r == 0 && has(opts->queue_dir)) {
        r = pw_rwqueue_open(opts->queue_dir, opts->queue_max_bytes, &w->dq, d);
        if (r == 0) {
            w->next_seq = pw_rwqueue_next_seq(w->dq);
            if (pw_rwqueue_count(w->dq) > 0)
                PW_LOG_INFO(MOD, "%s: %zu requests (%llu samples) left by the last run wait in %s",
                            opts->url, pw_rwqueue_count(w->dq),
                            (unsigned long long)pw_rwqueue_series(w->dq), opts->queue_dir);
        }
    }
    if (r == 0 && has(opts->bearer_token_file) &&
        (w->token_file = pw_strdup(opts->bearer_token_file)) == NULL)
        r = PW_ENOMEM;
    if (r == 0)
        r = w->token_file ? pw_remote_write_reload_token(w, d) : build_headers(w, NULL);
    pw_httpc_opts_t ho = {.url = opts->url,
                          .opt_name = "remote_write.url",
                          .ca_file = opts->ca_file,
                          .cert_file = opts->cert_file,
                          .key_file = opts->key_file,
                          .timeout_ms = opts->timeout_ms};
    if (r == 0)
        r = pw_httpc_new(loop, &ho, &w->http, d);
    if (r != 0) {
        free_writer(w);
        return r;
    }
    uv_timer_init(loop, &w->retry_timer);
    uv_timer_init(loop, &w->tick_timer);
    uv_idle_init(loop, &w->slice_idle);
    w->retry_timer.data = w->tick_timer.data = w->slice_idle.data = w;
    w->handles = 3;
    if (w->o.source)
        uv_timer_start(&w->tick_timer, on_tick, w->o.interval_ms, w->o.interval_ms);
    *out = w;
    refill(w);
    pump(w);
    return 0;
}

void pw_remote_write_get_stats(const pw_remote_write_t *w, pw_remote_write_stats_t *out)
{
    *out = w->st;
    out->disk_queued = pw_rwqueue_count(w->dq);
    out->disk_bytes = pw_rwqueue_bytes(w->dq);
    out->rows_capped = w->cur.rows_capped;
    out->rows_exported = w->cur.rows_exported;
}

static void req_free(req_t *q)
{
    if (q != NULL) {
        pw_free(q->body);
        pw_free(q);
    }
}

/* Removes the oldest request that is not in flight; returns it (NULL when none). */
static req_t *pop_oldest(pw_remote_write_t *w)
{
    req_t **pp = &w->head, *prev = NULL;
    while (*pp && *pp == w->inflight) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    req_t *q = *pp;
    if (q == NULL)
        return NULL;
    *pp = q->next;
    if (w->tail == q)
        w->tail = prev;
    w->st.queued--;
    return q;
}

/* Writes q to the disk queue and frees it. Returns 0, or the error (q is kept then: the
 * caller queues it in memory, where the full queue drops the oldest request). */
static int spill(pw_remote_write_t *w, req_t *q)
{
    uint64_t dropped = 0;
    int r = pw_rwqueue_push(w->dq, q->seq, q->body, q->len, q->series, &dropped);
    if (dropped > 0) {
        w->st.dropped_samples += dropped;
        pw_complain(&w->c_drop, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                    "%s: disk queue full (queue_max_size %llu bytes): dropped its oldest "
                    "requests, %llu samples (%llu dropped so far)",
                    w->url, (unsigned long long)w->o.queue_max_bytes, (unsigned long long)dropped,
                    (unsigned long long)w->st.dropped_samples);
    }
    if (r != 0) {
        pw_complain(&w->c_disk, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                    "%s: cannot write the disk queue: %s; the request waits in memory", w->url,
                    pw_strerror(r));
        return r;
    }
    req_free(q);
    return 0;
}

/* Brings requests back from the disk queue while memory has room, oldest first. */
static void refill(pw_remote_write_t *w)
{
    while (w->dq != NULL && !w->closing && pw_rwqueue_count(w->dq) > 0 &&
           w->st.queued < w->o.max_queue) {
        req_t *q = pw_calloc(1, sizeof(*q));
        if (q == NULL)
            return;
        int r = pw_rwqueue_pop(w->dq, &q->seq, &q->body, &q->len, &q->series);
        if (r == PW_ECORRUPT) {
            w->st.dropped_samples += q->series;
            pw_complain(&w->c_disk, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                        "%s: a disk queue file (seq %llu) did not check: %zu samples dropped",
                        w->url, (unsigned long long)q->seq, q->series);
            pw_free(q);
            continue;
        }
        if (r != 1) {
            if (r < 0)
                pw_complain(&w->c_disk, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                            "%s: cannot read the disk queue: %s", w->url, pw_strerror(r));
            pw_free(q);
            return;
        }
        if (w->tail)
            w->tail->next = q;
        else
            w->head = q;
        w->tail = q;
        w->st.queued++;
    }
}

static int enqueue(void *arg, uint8_t *body, size_t len, size_t series)
{
    pw_remote_write_t *w = arg;
    req_t *q = pw_calloc(1, sizeof(*q));
    if (q == NULL) {
        pw_free(body);
        return PW_ENOMEM;
    }
    q->body = body;
    q->len = len;
    q->series = series;
    q->seq = w->next_seq++;
    if (w->dq != NULL && (pw_rwqueue_count(w->dq) > 0 || w->st.queued >= w->o.max_queue)) {
        /* Behind what waits on disk, or memory is full: to disk, in order. */
        if (spill(w, q) == 0)
            return 0;
    }
    while (w->st.queued >= w->o.max_queue) {
        req_t *old = pop_oldest(w);
        if (old == NULL)
            break;
        w->st.dropped_samples += old->series;
        pw_complain(&w->c_drop, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                    "%s: queue full (max_queue %zu): dropped the oldest request, %zu samples "
                    "(%llu dropped so far); the receiver is unreachable or slower than the "
                    "collector",
                    w->url, w->o.max_queue, old->series, (unsigned long long)w->st.dropped_samples);
        req_free(old);
    }
    if (w->tail)
        w->tail->next = q;
    else
        w->head = q;
    w->tail = q;
    w->st.queued++;
    return 0;
}

/* Names one of the hosts skipped for a sample time in the future, with how far ahead. */
static void warn_ahead(pw_remote_write_t *w, const pw_fleet_t *f, uint64_t now)
{
    const pw_host_t *h = NULL;
    for (size_t i = 0; i < f->n && h == NULL; i++)
        if (!pw_host_retired(f->hosts[i]) && f->hosts[i]->last_seen_ms > w->cur.max_ts_ms &&
            f->hosts[i]->last_seen_ms > w->cur.sent_ms[f->hosts[i]->index])
            h = f->hosts[i];
    if (h == NULL)
        return;
    pw_complain(&w->c_ahead, uv_now(w->loop), 60000, 3600000, PW_LOG_LVL_WARN, MOD,
                "%s: %zu host%s not sent (%s: newest sample %.0f s ahead of this collector's "
                "clock): a receiver would move its head block there and then refuse every "
                "older sample; sent again once the sample times are right",
                w->url, w->cur.ahead, w->cur.ahead == 1 ? "" : "s", h->name,
                (double)(h->last_seen_ms - now) / 1000.0);
}

/* An interval's encode begins: the time window its samples must fall in. */
static void interval_begin(pw_remote_write_t *w)
{
    uint64_t age = w->o.max_sample_age_ms ? w->o.max_sample_age_ms : 10 * 60 * 1000;
    uv_timeval64_t tv;
    uint64_t now =
        uv_gettimeofday(&tv) == 0 ? (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000 : 0;
    w->cur.min_ts_ms = now > age ? now - age : 0;
    uint64_t skew = w->o.max_clock_skew_ms ? w->o.max_clock_skew_ms : 5 * 60 * 1000;
    w->cur.max_ts_ms = skew != UINT64_MAX && now != 0 ? now + skew : 0;
    w->cur.now_ms = now;
}

/* ... and ends: hosts skipped for sample times ahead of the clock are counted and named. */
static void interval_end(pw_remote_write_t *w, const pw_fleet_t *f)
{
    w->st.hosts_ahead = w->cur.ahead;
    w->st.ahead_skips += w->cur.ahead;
    if (w->cur.ahead > 0)
        warn_ahead(w, f, w->cur.now_ms);
    else
        memset(&w->c_ahead, 0, sizeof(w->c_ahead));
}

int64_t pw_remote_write_collect(pw_remote_write_t *w, const pw_fleet_t *f,
                                const pw_analysis_run_t *an)
{
    if (w == NULL || f == NULL)
        return PW_EINVAL;
    if (w->closing)
        return 0;
    interval_begin(w);
    int64_t n = pw_remote_write_encode_policy(f, an, &w->o.policy, w->o.max_series_per_request,
                                              &w->cur, enqueue, w);
    interval_end(w, f);
    pump(w);
    return n;
}

/* One slice of the interval's encode (SLICE_NS of the loop at most), whose requests go out at
 * once; the idle handle brings the next slice until the fleet's end. */
static void on_slice(uv_idle_t *t);

static void encode_step(pw_remote_write_t *w)
{
    const pw_fleet_t *f = NULL;
    const pw_analysis_run_t *an = NULL;
    int done = 1;
    w->o.source(w->o.source_arg, &f, &an);
    if (f != NULL && !w->closing) {
        int64_t n = pw_remote_write_encode_slice(f, an, &w->o.policy, w->o.max_series_per_request,
                                                 &w->cur, enqueue, w, SLICE_NS, &done);
        if (n < 0) {
            PW_LOG_WARN(MOD, "out of memory encoding the series: skipped this interval");
            done = 1;
        }
        if (done)
            interval_end(w, f);
        pump(w);
    }
    if (done) {
        w->cur.pos = 0;
        uv_idle_stop(&w->slice_idle);
    } else {
        uv_idle_start(&w->slice_idle, on_slice);
    }
}

static void on_slice(uv_idle_t *t)
{
    encode_step(t->data);
}

static void on_tick(uv_timer_t *t)
{
    pw_remote_write_t *w = t->data;
    if (w->cur.pos != 0)
        return; /* the last interval's encode is still under way: it goes on */
    interval_begin(w);
    encode_step(w);
}

static void on_retry_timer(uv_timer_t *t)
{
    pump(t->data);
}

/* A failed attempt: a WARN for the first of a run of failures, then with back-off while it
 * keeps failing. `result`: the HTTP status or a negative code. */
static void note_failure(pw_remote_write_t *w, int result, const char *then)
{
    char why[96];
    if (result > 0)
        snprintf(why, sizeof(why), "status %d", result);
    else
        snprintf(why, sizeof(why), "%s", pw_strerror(result));
    pw_complain(&w->c_fail, uv_now(w->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                "%s: %s: %s (%zu request%s queued)", w->url, why, then, w->st.queued,
                w->st.queued == 1 ? "" : "s");
}

/* The answer to the request in flight: a status or a negative code. */
static void on_done(void *arg, int result)
{
    pw_remote_write_t *w = arg;
    req_t *q = w->inflight;
    w->inflight = NULL;
    if (q == NULL)
        return;
    if (result > 0)
        w->st.last_status = result;
    else
        w->st.last_error = result;
    if (result >= 200 && result < 300) {
        w->st.samples += q->series;
        w->st.requests++;
        w->st.bytes += q->len;
        req_t *d = pop_oldest(w); /* q is the head, no longer in flight */
        req_free(d);
        refill(w);
        if (w->c_fail.interval_ms != 0) {
            PW_LOG_INFO(MOD,
                        "%s: sending works again (status %d); %llu samples refused and %llu "
                        "dropped so far",
                        w->url, result, (unsigned long long)w->st.failed_samples,
                        (unsigned long long)w->st.dropped_samples);
            memset(&w->c_fail, 0, sizeof(w->c_fail));
        }
    } else if (result < 0 || result == 429 || result >= 500) {
        /* attempts >= 1: counted when sent */
        uint64_t delay =
            pw_backoff_delay_ms(w->o.backoff_initial_ms, w->o.backoff_max_ms, q->attempts - 1);
        q->not_before = uv_now(w->loop) + delay;
        PW_LOG_DEBUG(MOD, "attempt %u: %s %d: retry in %llu ms", q->attempts,
                     result < 0 ? pw_strerror(result) : "status", result,
                     (unsigned long long)delay);
        note_failure(w, result, "retrying with back-off");
    } else {
        w->st.failed_samples += q->series;
        char then[96];
        snprintf(then, sizeof(then), "refused: %zu samples dropped (not retried)", q->series);
        note_failure(w, result, then);
        req_free(pop_oldest(w));
        refill(w);
    }
    pump(w);
}

/* Sends the head request when it is due; strictly in order (the spec: a series' samples must
 * arrive in time order). */
static void pump(pw_remote_write_t *w)
{
    if (w->closing || w->inflight != NULL || w->head == NULL || pw_httpc_busy(w->http))
        return;
    uv_update_time(w->loop);
    uint64_t now = uv_now(w->loop);
    req_t *q = w->head;
    if (q->not_before > now) {
        uv_timer_start(&w->retry_timer, on_retry_timer, q->not_before - now, 0);
        return;
    }
    if (q->attempts++ > 0)
        w->st.retries++;
    w->inflight = q;
    int r = pw_httpc_post(w->http, w->headers, q->body, q->len, on_done, w);
    if (r != 0) {
        w->inflight = NULL;
        note_failure(w, r, "retrying");
        q->not_before = now + w->o.backoff_initial_ms;
        uv_timer_start(&w->retry_timer, on_retry_timer, w->o.backoff_initial_ms, 0);
    }
}

static void on_closed(uv_handle_t *h)
{
    pw_remote_write_t *w = h->data;
    if (--w->handles == 0)
        free_writer(w);
}

void pw_remote_write_close(pw_remote_write_t *w)
{
    if (w == NULL || w->closing)
        return;
    w->closing = 1;
    w->inflight = NULL;
    size_t nreq = 0, nkept = 0;
    uint64_t nser = 0;
    while (w->head) {
        req_t *q = w->head;
        w->head = q->next;
        /* With a disk queue the requests wait there for the next start. */
        if (w->dq != NULL &&
            pw_rwqueue_push(w->dq, q->seq, q->body, q->len, q->series, NULL) == 0) {
            nkept++;
        } else {
            nreq++;
            nser += q->series;
        }
        req_free(q);
    }
    if (nkept > 0 || pw_rwqueue_count(w->dq) > 0)
        PW_LOG_INFO(MOD,
                    "%s: %zu requests (%llu samples) wait in the disk queue for the next start",
                    w->url, pw_rwqueue_count(w->dq), (unsigned long long)pw_rwqueue_series(w->dq));
    /* Said, not silent: these samples are in the store, not in the receiver. */
    if (nreq > 0)
        PW_LOG_WARN(MOD, "%s: %zu request%s (%llu samples) not sent at shutdown", w->url, nreq,
                    nreq == 1 ? "" : "s", (unsigned long long)nser);
    w->tail = NULL;
    w->st.queued = 0;
    pw_httpc_close(w->http);
    w->http = NULL;
    uv_close((uv_handle_t *)&w->retry_timer, on_closed);
    uv_close((uv_handle_t *)&w->tick_timer, on_closed);
    uv_close((uv_handle_t *)&w->slice_idle, on_closed);
}
