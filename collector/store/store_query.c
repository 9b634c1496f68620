/* store_query.c: reads: series (raw chunks and rollup pages), totals, a host's table at a
 * time and its newest one, hosts, an instance's last seq, sizes and counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "store_internal.h"

/* ---- series ------------------------------------------------------------------------------ */

typedef struct {
    pw_store_series_t *out;
    uint64_t step, from, to;
    const uint8_t *tag;
    size_t tag_len;
    pw_pool_t pool;
    pw_store_sql_t *q;
    const pw_store_hstate_t *hs; /* the host's state in memory, NULL when none */
} series_t;

static int series_add(series_t *sr, uint64_t ts, uint64_t b, uint64_t df, uint64_t a, uint64_t f,
                      uint32_t cnt, uint64_t bmin, uint64_t bmax, uint64_t dmin, uint64_t dmax)
{
    pw_store_series_t *o = sr->out;
    uint64_t g = sr->step ? ts - ts % sr->step : ts;
    if (o->n > 0 && o->points[o->n - 1].ts_ms == g) {
        pw_store_point_t *p = &o->points[o->n - 1];
        p->bytes = b, p->diff = df, p->allocs = a, p->frees = f;
        p->bytes_min = bmin < p->bytes_min ? bmin : p->bytes_min;
        p->bytes_max = bmax > p->bytes_max ? bmax : p->bytes_max;
        p->diff_min = dmin < p->diff_min ? dmin : p->diff_min;
        p->diff_max = dmax > p->diff_max ? dmax : p->diff_max;
        p->samples += cnt;
        return 0;
    }
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 256;
        pw_store_point_t *np = pw_realloc(o->points, nc * sizeof(*np));
        if (np == NULL)
            return PW_ENOMEM;
        o->points = np;
        o->cap = nc;
    }
    o->points[o->n++] = (pw_store_point_t){g, b, df, a, f, bmin, bmax, dmin, dmax, cnt};
    return 0;
}

/* The index of the first sample of ts[i + 1 .. n) at or after `end` (n when none), ts[i] being
 * before it and times not decreasing. Agents sample at a steady interval: the guess from the
 * first gap is checked; else galloping, then binary search (a 15-min step holds 90 samples at
 * 10 s). */
static size_t step_end(const uint64_t *ts, size_t i, size_t n, uint64_t end)
{
    uint64_t gap = ts[i + 1] - ts[i];
    if (gap > 0) {
        uint64_t m = (end - ts[i] + gap - 1) / gap; /* >= 1 */
        size_t j = m < n - i ? i + (size_t)m : n;
        if (ts[j - 1] < end && (j == n || ts[j] >= end))
            return j;
    }
    size_t lo = i, w = 1;
    while (lo + w < n && ts[lo + w] < end) {
        lo += w;
        w *= 2;
    }
    size_t hi = lo + w < n ? lo + w : n; /* ts[lo] < end, ts[hi] >= end or hi == n */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < end)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* `n` samples at ts[0..n) holding the same values: one point per step they fall in. */
static int series_run(void *arg, const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                      uint64_t f)
{
    series_t *sr = arg;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        if (sr->step > 0 && j < n)
            j = step_end(ts, i, n, ts[i] - ts[i] % sr->step + sr->step);
        int rc = series_add(sr, ts[i], b, df, a, f, (uint32_t)(j - i), b, b, df, df);
        if (rc != 0)
            return rc;
        i = j;
    }
    return 0;
}

static int series_live(void *arg, int64_t chunk_id, int *served, pw_diag_t *d)
{
    series_t *sr = arg;
    const pw__store_live_t *lv = pw__store_live_find(sr->q, sr->hs, chunk_id);
    if (lv == NULL)
        return 0;
    *served = 1;
    return pw__store_live_read(lv, sr->tag, sr->tag_len, sr->pool, sr->from, sr->to, series_run, sr,
                               d);
}

static int series_raw_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)seq;
    series_t *sr = arg;
    if (dd->timestamp_ms < sr->from || dd->timestamp_ms > sr->to)
        return 0;
    const pw_row_t *r = pw_delta_dec_find(dd, sr->tag, sr->tag_len, sr->pool);
    if (r == NULL)
        return 0;
    int rc = series_add(sr, dd->timestamp_ms, r->bytes, r->diff, r->allocs, r->frees, 1, r->bytes,
                        r->bytes, r->diff, r->diff);
    return rc ? pw_diag_set(d, rc, 0, 0, "series", "out of memory") : 0;
}

/* Adds the buckets of row `gkey` from one decompressed rollup blob. */
static int series_rollup(series_t *sr, const uint8_t *p, size_t len, uint32_t gkey, pw_diag_t *d)
{
    size_t off = 1;
    uint64_t bucket_ms, b0, nb, nrows;
    if (len < 1 || p[0] != ROLLUP_VER || pw_varint_get(p, len, &off, &bucket_ms) ||
        pw_varint_get(p, len, &off, &b0) || pw_varint_get(p, len, &off, &nb) ||
        pw_varint_get(p, len, &off, &nrows) || bucket_ms == 0 || nrows > len || nb > len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "rollup", "rollup header invalid");
    uint64_t key = 0, row = UINT64_MAX;
    for (uint64_t i = 0; i < nrows; i++) {
        uint64_t g;
        if (pw_varint_get(p, len, &off, &g))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "rollup", "rollup keys truncated");
        key += g;
        if (key == gkey)
            row = i;
    }
    uint64_t skip = 0, rlen = 0;
    for (uint64_t i = 0; i < nrows; i++) {
        uint64_t l;
        if (pw_varint_get(p, len, &off, &l) || l > len)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "rollup", "rollup lengths invalid");
        if (i < row)
            skip += l;
        else if (i == row)
            rlen = l;
    }
    if (row == UINT64_MAX)
        return 0;
    if (skip > len - off || rlen > len - off - skip)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "rollup", "rollup row outside the blob");
    const uint8_t *rp = p + off + skip;
    size_t ro = 0;
    uint64_t pb = 0, pd = 0, pa = 0, pf = 0;
    for (uint64_t k = 0; k < nb; k++) {
        uint64_t cnt, v[8];
        if (pw_varint_get(rp, rlen, &ro, &cnt))
            return pw_diag_set(d, PW_ECORRUPT, 0, off + skip + ro, "rollup", "row truncated");
        if (cnt == 0)
            continue;
        for (int j = 0; j < 8; j++)
            if (pw_varint_get(rp, rlen, &ro, &v[j]))
                return pw_diag_set(d, PW_ECORRUPT, 0, off + skip + ro, "rollup", "row truncated");
        pb += pw_unzigzag(v[0]), pd += pw_unzigzag(v[1]), pa += pw_unzigzag(v[2]);
        pf += pw_unzigzag(v[3]) + (pw_unzigzag(v[2]) - pw_unzigzag(v[1]));
        uint64_t ts = (b0 + k) * bucket_ms;
        if (ts > sr->to || ts + bucket_ms <= sr->from)
            continue;
        int rc = series_add(sr, ts, pb, pd, pa, pf, (uint32_t)cnt, pb - v[4], pb + v[5], pd - v[6],
                            pd + v[7]);
        if (rc != 0)
            return pw_diag_set(d, rc, 0, 0, "series", "out of memory");
    }
    return 0;
}

static int host_id_of(pw_store_sql_t *q, const char *name, int64_t *id, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_HOST_GET);
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = 0;
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else if (rc == SQLITE_DONE)
        r = PW_ENOENT;
    else
        r = pw__store_sqlfail(q, rc, d, "find host");
    sqlite3_reset(s);
    return r;
}

enum { CH_ALL, CH_NOT_PAGED, CH_NOT_M1, CH_NOT_M15 };

/* For an open or sealed chunk: sets *served when it answered from the chunk's live form
 * instead of a replay. */
typedef int (*live_fn)(void *arg, int64_t chunk_id, int *served, pw_diag_t *d);

/* Reads raw chunks of host `hid` overlapping [from, to]. */
static int each_chunk(pw_store_sql_t *q, int64_t hid, uint64_t from, uint64_t to, int which,
                      pw_chunk_cb cb, live_fn live, void *arg, const int *stop, pw_diag_t *d)
{
    /* Chunks hold one aligned window, so one that reaches `from` starts at most a window
     * before it. Closed chunks come first (compaction goes in id order); the rows of sealed and
     * open ones (data NULL) are read by another statement, so their ids are collected first.
     * `which`: CH_ALL, CH_NOT_PAGED (chunks without series pages), CH_NOT_M1 / CH_NOT_M15 (and
     * without a 1-min / 15-min rollup). */
    static const int stmt[] = {[CH_ALL] = S_CHUNK_RANGE,
                               [CH_NOT_PAGED] = S_CHUNK_RANGE_NP,
                               [CH_NOT_M1] = S_CHUNK_RANGE_M1,
                               [CH_NOT_M15] = S_CHUNK_RANGE_M15};
    sqlite3_stmt *s = pw__store_stmt(q, stmt[which]);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, (int64_t)pw__store_cutoff(from, q->opts.chunk_window_ms));
    sqlite3_bind_int64(s, 3, (int64_t)to);
    sqlite3_bind_int64(s, 4, (int64_t)from);
    int rc, r = 0;
    struct {
        int64_t id;
        unsigned width;
    } *pend = NULL;
    size_t np = 0, pcap = 0;
    while (r == 0 && !(stop && *stop) && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        unsigned width = (unsigned)sqlite3_column_int(s, 1);
        uint64_t raw = (uint64_t)sqlite3_column_int64(s, 2);
        const void *data = sqlite3_column_blob(s, 3);
        size_t dlen = (size_t)sqlite3_column_bytes(s, 3);
        if (data == NULL) {
            if (np == pcap) {
                size_t nc = pcap ? pcap * 2 : 4;
                void *p = pw_realloc(pend, nc * sizeof(*pend));
                if (p == NULL) {
                    r = pw_diag_set(d, PW_ENOMEM, 0, 0, "chunks", "out of memory");
                    break;
                }
                pend = p;
                pcap = nc;
            }
            pend[np].id = id;
            pend[np++].width = width;
            continue;
        }
        int fmt = sqlite3_column_int(s, 4);
        r = pw__store_load_chunk(q, id, data, dlen, raw, &q->tmp, d);
        if (r == 0)
            r = pw__store_replay(fmt, q->tmp.data, q->tmp.len, width, cb, arg, d);
    }
    if (r == 0 && !(stop && *stop) && rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = pw__store_sqlfail(q, rc, d, "read chunks");
    sqlite3_reset(s);
    for (size_t i = 0; r == 0 && !(stop && *stop) && i < np; i++) {
        int served = 0;
        if (live != NULL && ((r = live(arg, pend[i].id, &served, d)) != 0 || served))
            continue;
        r = pw__store_load_chunk(q, pend[i].id, NULL, 0, 0, &q->tmp, d);
        if (r == 0)
            r = pw__store_replay(PW_CHUNK_RECORDS, q->tmp.data, q->tmp.len, pend[i].width, cb, arg,
                                 d);
    }
    pw_free(pend);
    return r;
}

typedef struct {
    uint64_t ts;
    size_t i;
} ts_idx_t;

static int ts_idx_cmp(const void *a, const void *b)
{
    const ts_idx_t *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Points in time order, one per time step. Samples arrive in order from one agent, but two
 * agents writing as one host (a cloned machine, a simulated history sent twice) interleave:
 * their points are sorted (stable) and those of one step merged, the later stored one's values
 * kept, min/max and counts combined. */
static int series_normalize(pw_store_series_t *o)
{
    size_t k = 1;
    while (k < o->n && o->points[k - 1].ts_ms < o->points[k].ts_ms)
        k++;
    if (k >= o->n)
        return 0;
    ts_idx_t *ix = pw_malloc(o->n * sizeof(*ix));
    pw_store_point_t *np = pw_malloc(o->n * sizeof(*np));
    if (ix == NULL || np == NULL) {
        pw_free(ix);
        pw_free(np);
        return PW_ENOMEM;
    }
    for (size_t i = 0; i < o->n; i++)
        ix[i] = (ts_idx_t){o->points[i].ts_ms, i};
    qsort(ix, o->n, sizeof(*ix), ts_idx_cmp);
    size_t m = 0;
    for (size_t i = 0; i < o->n; i++) {
        const pw_store_point_t *p = &o->points[ix[i].i];
        if (m > 0 && np[m - 1].ts_ms == p->ts_ms) {
            pw_store_point_t *q = &np[m - 1];
            q->bytes = p->bytes, q->diff = p->diff, q->allocs = p->allocs, q->frees = p->frees;
            q->bytes_min = p->bytes_min < q->bytes_min ? p->bytes_min : q->bytes_min;
            q->bytes_max = p->bytes_max > q->bytes_max ? p->bytes_max : q->bytes_max;
            q->diff_min = p->diff_min < q->diff_min ? p->diff_min : q->diff_min;
            q->diff_max = p->diff_max > q->diff_max ? p->diff_max : q->diff_max;
            q->samples += p->samples;
        } else {
            np[m++] = *p;
        }
    }
    memcpy(o->points, np, m * sizeof(*np));
    o->n = m;
    pw_free(ix);
    pw_free(np);
    return 0;
}

int64_t pw__store_sql_series(pw_store_sql_t *q, const char *host, const uint8_t *tag,
                             size_t tag_len, pw_pool_t pool, uint64_t from_ms, uint64_t to_ms,
                             uint64_t step_ms, pw_store_series_t *out, pw_diag_t *d)
{
    if (from_ms > (uint64_t)INT64_MAX || to_ms > (uint64_t)INT64_MAX)
        to_ms = (uint64_t)INT64_MAX;
    series_t sr = {out, step_ms, from_ms, to_ms, tag, tag_len, pool, q, NULL};
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc == PW_ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    int level = step_ms < M1_MS ? PW_STORE_RAW : step_ms < M15_MS ? PW_STORE_1MIN : PW_STORE_15MIN;
    out->level = (pw_store_level_t)level;
    int64_t gid = pw_tagdict_find(&q->tags, tag, tag_len);
    uint32_t gkey = gid >= 0 ? PW_ROW_KEY(gid, pool) : 0;
    if (gid >= 0 && level != PW_STORE_RAW) {
        sqlite3_stmt *s = pw__store_stmt(q, S_ROLLUP_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int(s, 2, level);
        /* 15-min rollups of day pages span up to a day and a chunk window */
        uint64_t span = q->opts.chunk_window_ms + (level == PW_STORE_15MIN ? PW__STORE_DAY_MS : 0);
        sqlite3_bind_int64(s, 3, (int64_t)pw__store_cutoff(from_ms, span));
        sqlite3_bind_int64(s, 4, (int64_t)to_ms);
        sqlite3_bind_int64(
            s, 5, (int64_t)pw__store_cutoff(from_ms, level == PW_STORE_1MIN ? M1_MS : M15_MS));
        sqlite3_bind_int64(s, 6, gkey);
        int r;
        while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
            rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 1),
                                       (size_t)sqlite3_column_bytes(s, 1),
                                       (uint64_t)sqlite3_column_int64(s, 0), &q->tmp, d);
            if (rc == 0)
                rc = series_rollup(&sr, q->tmp.data, q->tmp.len, gkey, d);
        }
        if (rc == 0 && r != SQLITE_DONE)
            rc = pw__store_sqlfail(q, r, d, "read rollups");
        sqlite3_reset(s);
    }
    /* Compacted chunks answer from their series pages (one small page per chunk) at every
     * step until their rollups are written (when they expire; at 15 min, chunks compacted
     * before schema 5 have theirs already); the others (open, sealed, not paged) are
     * replayed. */
    if (rc == 0 && gid >= 0)
        rc = pw__store_series_read(q, hid, gkey, sr.from, sr.to, level == PW_STORE_15MIN,
                                   series_run, &sr, d);
    int which = level == PW_STORE_1MIN    ? CH_NOT_M1
                : level == PW_STORE_15MIN ? CH_NOT_M15
                                          : CH_NOT_PAGED;
    if (rc == 0) {
        sr.hs = pw__store_host_find(q, host);
        if (sr.hs != NULL && sr.hs->id != hid)
            sr.hs = NULL;
        rc = each_chunk(q, hid, sr.from, sr.to, which, series_raw_cb, series_live, &sr, NULL, d);
    }
    if (rc == 0 && (rc = series_normalize(out)) != 0)
        rc = pw_diag_set(d, rc, 0, 0, "series", "out of memory");
    return rc != 0 ? rc : (int64_t)out->n;
}

/* ---- latest, hosts, last seq, stats ------------------------------------------------------ */

typedef struct {
    uint64_t from, to;
    pw_store_totals_cb cb;
    void *arg;
    int stopped; /* cb asked to stop: later chunks stop at their first sample */
} totals_t;

static int totals_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)seq, (void)d;
    totals_t *t = arg;
    if (t->stopped)
        return 1;
    if (dd->timestamp_ms < t->from || dd->timestamp_ms > t->to)
        return 0;
    int r = t->cb(t->arg, dd->timestamp_ms, &dd->totals);
    t->stopped = r > 0;
    return r;
}

int pw__store_host_id(pw_store_sql_t *q, const char *host, int64_t *id, pw_diag_t *d)
{
    int rc = host_id_of(q, host, id, d);
    return rc == PW_ENOENT ? pw_diag_set(d, rc, 0, 0, "host", "host %s unknown", host) : rc;
}

int pw__store_sql_totals(pw_store_sql_t *q, const char *host, uint64_t from_ms, uint64_t to_ms,
                         pw_store_totals_cb cb, void *arg, pw_diag_t *d)
{
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc != 0)
        return rc == PW_ENOENT ? pw_diag_set(d, rc, 0, 0, "host", "host %s unknown", host) : rc;
    totals_t t = {from_ms, to_ms, cb, arg, 0};
    return each_chunk(q, hid, from_ms, to_ms, CH_ALL, totals_cb, NULL, &t, &t.stopped, d);
}

typedef struct {
    uint64_t from;
    pw_sample_t *out;
    int found, rc;
} table_at_t;

static int table_at_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)d;
    table_at_t *t = arg;
    if (t->found || dd->timestamp_ms < t->from)
        return t->found;
    t->found = 1;
    t->rc = pw_delta_dec_to_sample(dd, t->out);
    t->out->seq = seq;
    return 1;
}

int pw__store_sql_table_at(pw_store_sql_t *q, const char *host, uint64_t from_ms, pw_sample_t *out,
                           pw_diag_t *d)
{
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc != 0)
        return rc == PW_ENOENT ? pw_diag_set(d, rc, 0, 0, "host", "host %s unknown", host) : rc;
    table_at_t t = {from_ms, out, 0, 0};
    pw_sample_reset(out);
    rc = each_chunk(q, hid, from_ms, UINT64_MAX >> 1, CH_ALL, table_at_cb, NULL, &t, &t.found, d);
    if (rc == 0 && t.rc != 0)
        rc = pw_diag_set(d, t.rc, 0, 0, "sample", "out of memory");
    if (rc == 0 && !t.found)
        rc = pw_diag_set(d, PW_ENOENT, 0, 0, "host", "nothing stored for %s after %llu ms", host,
                         (unsigned long long)from_ms);
    return rc;
}

static int last_seq_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)dd, (void)d;
    *(uint64_t *)arg = seq;
    return 0;
}

int pw__store_sql_latest(pw_store_sql_t *q, const char *host, pw_sample_t *out, pw_diag_t *d)
{
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc != 0)
        return rc == PW_ENOENT ? pw_diag_set(d, rc, 0, 0, "host", "host %s unknown", host) : rc;
    sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_LAST);
    sqlite3_bind_int64(s, 1, hid);
    int r = sqlite3_step(s);
    if (r == SQLITE_DONE) {
        sqlite3_reset(s);
        return pw_diag_set(d, PW_ENOENT, 0, 0, "host", "nothing stored for %s", host);
    }
    if (r != SQLITE_ROW) {
        rc = pw__store_sqlfail(q, r, d, "find newest chunk");
        sqlite3_reset(s);
        return rc;
    }
    int64_t id = sqlite3_column_int64(s, 0);
    unsigned width = (unsigned)sqlite3_column_int(s, 1);
    uint64_t raw = (uint64_t)sqlite3_column_int64(s, 2);
    const void *data = sqlite3_column_blob(s, 3);
    int fmt = data != NULL ? sqlite3_column_int(s, 4) : PW_CHUNK_RECORDS;
    if (data != NULL) {
        rc = pw__store_zdecompress(q, data, (size_t)sqlite3_column_bytes(s, 3), raw, &q->tmp, d);
        sqlite3_reset(s);
    } else {
        sqlite3_reset(s);
        rc = pw__store_load_chunk(q, id, NULL, 0, 0, &q->tmp, d);
    }
    if (rc != 0)
        return rc;
    /* Replayed into our own decoder to keep the final table. */
    pw_delta_dec_t dd;
    if (pw_delta_dec_init(&dd, width, 0) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "counter_width", "chunk counter width %u", width);
    uint64_t last_seq = 0;
    rc = pw_chunk_replay(fmt, q->tmp.data, q->tmp.len, &dd, last_seq_cb, &last_seq, d);
    if (rc == 0 && !dd.have_base)
        rc = pw_diag_set(d, PW_ECORRUPT, 0, 0, "chunk", "newest chunk of %s is empty", host);
    if (rc == 0 && (rc = pw_delta_dec_to_sample(&dd, out)) != 0)
        rc = pw_diag_set(d, rc, 0, 0, "sample", "out of memory");
    if (rc == 0)
        out->seq = last_seq;
    pw_delta_dec_close(&dd);
    return rc;
}

char *pw__store_col_strdup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return pw_strdup(t ? (const char *)t : "");
}

static size_t col_blob(sqlite3_stmt *s, int i, uint8_t *dst, size_t cap)
{
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    const void *p = sqlite3_column_blob(s, i);
    if (p == NULL || n > cap)
        return 0;
    memcpy(dst, p, n);
    return n;
}

int pw__store_sql_hosts(pw_store_sql_t *q, pw_store_host_info_t **out, size_t *n, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_HOSTS_ALL);
    pw_store_host_info_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 16;
            pw_store_host_info_t *nv = pw_realloc(v, nc * sizeof(*nv));
            if (nv == NULL) {
                r = PW_ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        pw_store_host_info_t *h = &v[cnt];
        memset(h, 0, sizeof(*h));
        cnt++;
        h->name = pw__store_col_strdup(s, 0);
        h->os = pw__store_col_strdup(s, 1);
        if (h->name == NULL || h->os == NULL)
            r = PW_ENOMEM;
        h->counter_width = (unsigned)sqlite3_column_int(s, 2);
        h->agent_id_len = col_blob(s, 3, h->agent_id, sizeof(h->agent_id));
        h->boot_id_len = col_blob(s, 4, h->boot_id, sizeof(h->boot_id));
        h->last_seen_ms = (uint64_t)sqlite3_column_int64(s, 5);
        h->last_seq = (uint64_t)sqlite3_column_int64(s, 6);
        pw__store_col_limit(s, 7, &h->nonpaged_limit);
        pw__store_col_limit(s, 10, &h->paged_limit);
        h->source_kind = sqlite3_column_int(s, 13);
        h->interval_ms = (uint32_t)sqlite3_column_int64(s, 14);
        h->stopped_ms = (uint64_t)sqlite3_column_int64(s, 15);
        const unsigned char *why = sqlite3_column_text(s, 16);
        snprintf(h->stop_reason, sizeof(h->stop_reason), "%s", why ? (const char *)why : "");
        h->imported_samples = (uint64_t)sqlite3_column_int64(s, 17);
        h->stored_samples = (uint64_t)sqlite3_column_int64(s, 18);
        h->os_build = (uint32_t)sqlite3_column_int64(s, 19);
        const unsigned char *arch = sqlite3_column_text(s, 20), *av = sqlite3_column_text(s, 21);
        snprintf(h->arch, sizeof(h->arch), "%s", arch ? (const char *)arch : "");
        snprintf(h->agent_version, sizeof(h->agent_version), "%s", av ? (const char *)av : "");
        h->samples_expired = (uint64_t)sqlite3_column_int64(s, 22);
    }
    if (r == PW_ENOMEM)
        r = pw_diag_set(d, r, 0, 0, "hosts", "out of memory");
    else if (rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "list hosts");
    sqlite3_reset(s);
    if (r != 0) {
        pw_store_hosts_free(v, cnt);
        return r;
    }
    *out = v;
    *n = cnt;
    return 0;
}

int pw__store_sql_last_seq(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                           const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_INST_GET);
    sqlite3_bind_blob(s, 1, agent_id, (int)agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, boot_id, (int)boot_id_len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? PW_ENOENT : PW_ESTORE;
    if (rc == SQLITE_ROW)
        *seq = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return r;
}

int pw__store_sql_last_seq_ts(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                              const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq,
                              uint64_t *ts_ms)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_INST_LAST_TS);
    sqlite3_bind_blob(s, 1, agent_id, (int)agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, boot_id, (int)boot_id_len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? PW_ENOENT : PW_ESTORE;
    if (rc == SQLITE_ROW) {
        *seq = (uint64_t)sqlite3_column_int64(s, 0);
        *ts_ms = (uint64_t)sqlite3_column_int64(s, 1);
    }
    sqlite3_reset(s);
    return r;
}

int pw__store_sql_agent_last_seq(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                                 uint64_t *seq)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_AGENT_LAST);
    sqlite3_bind_blob(s, 1, agent_id, (int)agent_id_len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = rc != SQLITE_ROW ? PW_ESTORE : sqlite3_column_type(s, 0) == SQLITE_NULL ? PW_ENOENT : 0;
    if (r == 0)
        *seq = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return r;
}

int pw__store_sql_stats(pw_store_sql_t *q, pw_store_stats_t *o, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_STATS);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        rc = pw__store_sqlfail(q, rc, d, "stats");
        sqlite3_reset(s);
        return rc;
    }
    o->closes = q->closes;
    o->close_us_total = q->close_us_total;
    o->close_us_max = q->close_us_max;
    o->merges = q->merges;
    o->merge_us_total = q->merge_us_total;
    o->compact_fallbacks = q->compact_fallbacks;
    o->pages_lost = q->pages_lost;
    o->chunks = (uint64_t)sqlite3_column_int64(s, 0);
    o->closed_chunks = (uint64_t)sqlite3_column_int64(s, 1);
    o->samples = (uint64_t)sqlite3_column_int64(s, 2) + (uint64_t)sqlite3_column_int64(s, 3);
    o->raw_bytes = (uint64_t)sqlite3_column_int64(s, 4) + (uint64_t)sqlite3_column_int64(s, 5);
    o->rollup_windows = (uint64_t)sqlite3_column_int64(s, 6);
    o->rollup_bytes = (uint64_t)sqlite3_column_int64(s, 7);
    o->tags = (uint64_t)sqlite3_column_int64(s, 8);
    o->hosts = (uint64_t)sqlite3_column_int64(s, 9);
    o->series_pages = (uint64_t)sqlite3_column_int64(s, 10);
    o->series_bytes = (uint64_t)sqlite3_column_int64(s, 11);
    sqlite3_reset(s);
    o->wal_max_bytes = q->wal_max_seen;
    o->wal_checkpoints = q->wal_checkpoints;
    o->evicted = q->evicted;
    o->vacuumed_bytes = q->vacuumed_bytes;
    o->live_bytes = q->live_bytes;
    int64_t pages = 0, freep = 0;
    rc = pw__store_pragma_int(q, S_PAGES, &pages, d);
    rc = rc ? rc : pw__store_pragma_int(q, S_FREEPAGES, &freep, d);
    o->free_bytes = (uint64_t)(freep * q->page_size);
    if (q->memory) {
        o->db_bytes = (uint64_t)(pages * q->page_size);
    } else {
        o->db_bytes = pw__store_file_size(q->path, "");
        o->wal_bytes = pw__store_file_size(q->path, "-wal");
    }
    o->bytes_on_disk = o->db_bytes + o->wal_bytes;
    return rc;
}

/* ---- gaps -------------------------------------------------------------------------------- */

int pw__store_gap_damaged(pw_store_sql_t *q, int64_t hid, uint64_t t0, uint64_t t1, uint64_t missed,
                          uint32_t k0, uint32_t k1, const char *what, pw_diag_t *d)
{
    char why[PW_DIAG_MSG_MAX + 128];
    if (d != NULL && d->offset > 0)
        snprintf(why, sizeof(why), "%s: %s at byte %llu", what, d->msg,
                 (unsigned long long)d->offset);
    else
        snprintf(why, sizeof(why), "%s: %s", what, d ? d->msg : "does not decode");
    return pw__store_gap_lost(q, hid, t0, t1, missed, k0, k1, why, d);
}

int pw__store_gap_lost(pw_store_sql_t *q, int64_t hid, uint64_t t0, uint64_t t1, uint64_t missed,
                       uint32_t k0, uint32_t k1, const char *detail, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_GAP_LOST);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, (int64_t)t1);
    sqlite3_bind_int64(s, 3, (int64_t)missed);
    sqlite3_bind_int(s, 4, PW_STORE_GAP_DAMAGED);
    sqlite3_bind_int64(s, 5, (int64_t)t0);
    sqlite3_bind_int64(s, 6, k0);
    sqlite3_bind_int64(s, 7, k1);
    sqlite3_bind_text(s, 8, detail, -1, SQLITE_TRANSIENT);
    int rc = pw__store_run(q, s, d, "record lost series page");
    if (rc == 0)
        q->pages_lost++;
    return rc;
}

/* Fills gap `g`'s tags from its rows' keys [k0, k1] (tag id * 4 + pool): the tags of the ids
 * k0 / 4 .. k1 / 4 the store knows, or every row when they are more than a gap holds. */
static void gap_tags(const pw_store_sql_t *q, pw_store_gap_t *g, uint64_t k0, uint64_t k1)
{
    uint64_t id0 = k0 >> 2, id1 = k1 >> 2;
    if (k1 < k0 || id1 - id0 >= PW_STORE_GAP_TAGS) {
        g->all_rows = 1;
        return;
    }
    for (uint64_t id = id0; id <= id1 && id < q->tags.n; id++) {
        size_t len;
        const uint8_t *t = pw_tagdict_get(&q->tags, (uint32_t)id, &len);
        if (t == NULL || len == 0 || len > PW_TAG_MAX)
            continue;
        memcpy(g->tags[g->ntags].tag, t, len);
        g->tags[g->ntags++].len = (uint8_t)len;
    }
}

int pw__store_sql_gaps(pw_store_sql_t *q, const char *host, uint64_t from, uint64_t to,
                       pw_store_gap_t **out, size_t *n, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_GAPS_RANGE);
    sqlite3_bind_text(s, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, from > INT64_MAX ? INT64_MAX : (int64_t)from);
    sqlite3_bind_int64(s, 3, to > INT64_MAX ? INT64_MAX : (int64_t)to);
    pw_store_gap_t *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 4;
            pw_store_gap_t *nv = pw_realloc(v, nc * sizeof(*nv));
            if (nv == NULL) {
                r = pw_diag_set(d, PW_ENOMEM, 0, 0, "gaps", "out of memory");
                break;
            }
            v = nv;
            cap = nc;
        }
        pw_store_gap_t *g = &v[cnt++];
        memset(g, 0, sizeof(*g));
        g->t1_ms = (uint64_t)sqlite3_column_int64(s, 0);
        g->t0_ms = (uint64_t)sqlite3_column_int64(s, 1);
        g->seq = (uint64_t)sqlite3_column_int64(s, 2);
        g->missed = (uint64_t)sqlite3_column_int64(s, 3);
        g->cause = sqlite3_column_int(s, 4);
        gap_tags(q, g, (uint64_t)sqlite3_column_int64(s, 5), (uint64_t)sqlite3_column_int64(s, 6));
        const unsigned char *why = sqlite3_column_text(s, 7);
        snprintf(g->detail, sizeof(g->detail), "%s", why ? (const char *)why : "");
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "read gaps");
    sqlite3_reset(s);
    if (r != 0) {
        pw_free(v);
        return r;
    }
    *out = v;
    *n = cnt;
    return 0;
}
