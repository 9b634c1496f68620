/* store_series.c: per-row series pages of compacted chunks (docs/internals/store.md).
 *
 * A chunk is laid out by time (a keyframe, then each sample's changes), which is what a host's
 * table at a time needs; one (host, tag, pool) over days would replay every 3,000-row chunk to
 * pick one row. So compaction also writes the chunk's rows by row: groups of 32 tags (grp =
 * global key >> 7), each group one zstd page holding the chunk's sample times and, per row, the
 * samples where it appeared, changed or vanished. A series query reads one small page per
 * chunk and fills the samples in between; the answer is the raw one, value for value.
 *
 * Page (then zstd), integers LEB128 varints, zz = zigzag:
 *   u8 1, nts, ts[0], ts[i] - ts[i-1] (i >= 1), nrows, per row its global key's gap from the
 *   previous row's (the first from grp << 8), per row its number of events, the byte length
 *   of each of the 5 columns, then the columns, each holding the rows' events in row order
 *   (homogeneous columns are what zstd compresses well, as in chunk.h):
 *   0: per event `idx_gap << 1 | vanished` (idx: the sample's index in the chunk); per value
 *   event 1: zz(allocs delta), 2: zz(diff delta), 3: zz(bytes - predicted) with predicted =
 *   bytes + diff delta * (bytes / diff) of the row before (0 for a tag whose allocations have
 *   one size), 4: zz(frees delta - (allocs delta - diff delta)) (0 unless a counter wrapped or
 *   reset). Deltas are from the row's previous values (0 at the chunk start), across a vanish
 *   too. A reader sums the earlier rows' counts and skips that many varints per column.
 *
 * Day pages (series_days, schema 9): a host's chunk pages of one UTC day (by their first
 * sample) merged into one page per group of 32 tags (grp = global key >> 7, stored as -1 - grp),
 * so that a week reads ~8 pages, not 168 (each zstd frame costs ~47 k instructions to start,
 * issue 17). Merged in the background (pw__store_series_merge_one) once the day is over for
 * the host. Page: u8 2, nseg, then per segment its byte length and a body as above: each chunk
 * page's body as it is, in time order. Day pages merged before 2026-12-02 are one per group of
 * 4 tags (grp = key >> 4, stored as it is; key gaps from grp << 4) whose segments span several
 * chunks (version byte 3: times as nts, nruns, ts[0], then runs of equal gaps (gap, count); a
 * row's events across the chunks, no event where a chunk starts with the values the previous
 * one ended with): read as they are.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "store_internal.h"

#define SERIES_VER      1 /* a chunk's page: one body, times as gaps */
#define SERIES_VER_DAY  2 /* a day page: segments, each a body */
#define SERIES_VER_RUNS 3 /* a body of a day page merged before 2026-12-02: times as runs */
#define GRP_SHIFT       7 /* a chunk's page: 32 tags x 4 pools */
#define DAY_SHIFT       4 /* a day page: 4 tags x 4 pools */
/* Samples in one day-page segment at most (a hostile page must not claim 2^64 of them). */
#define SEG_TS_MAX (1u << 22)
/* Pages are a few KB: zstd -9 gains ~1 % over -3 on them for twice the compaction time. */
#define SERIES_ZSTD_MAX 3

typedef struct {
    uint32_t row, idx;
    uint32_t vanish;
    uint64_t a, f, df, b;
} ev_t;

typedef struct {
    uint32_t lkey; /* the chunk's local key */
    uint32_t gkey;
    int present;
    uint32_t seen; /* index of the last sample holding the row, + 1 */
    uint64_t a, f, df, b;
    uint8_t tag[PW_TAG_MAX];
    uint8_t tlen;
} srow_t;

typedef struct {
    uint64_t *ts;
    size_t nts, tscap;
    srow_t *rows;
    size_t nrows, rcap;
    pw__store_rowmap_t map; /* rows by (tag, pool): row i of `map` is rows[i] */
    ev_t *ev;
    size_t nev, evcap;
    size_t npresent; /* rows present after the previous sample */
} sbuild_t;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    void *np = pw_realloc(*p, nc * elem);
    if (np == NULL)
        return PW_ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

/* ---- rows by (tag, pool) over a replay (store_internal.h) ---------------------------------- */

void pw__store_rowmap_init(pw__store_rowmap_t *m)
{
    memset(m, 0, sizeof(*m));
    pw_tagdict_init(&m->names, 0);
}

void pw__store_rowmap_close(pw__store_rowmap_t *m)
{
    pw_free(m->map);
    pw_free(m->byname);
    pw_free(m->rname);
    pw_tagdict_close(&m->names);
    memset(m, 0, sizeof(*m));
}

/* Grows a zero-filled array of uint32_t to hold index `i`. */
static int grow_zero(uint32_t **p, size_t *cap, size_t i)
{
    size_t old = *cap;
    if (grow((void **)p, cap, i + 1, sizeof(uint32_t)) != 0)
        return PW_ENOMEM;
    memset(*p + old, 0, (*cap - old) * sizeof(uint32_t));
    return 0;
}

void pw__store_rowmap_sync(pw__store_rowmap_t *m, const pw_delta_dec_t *dd)
{
    if (dd->n_idx != SIZE_MAX) /* changes in place: the same rows and dictionary */
        return;
    for (size_t i = 0; i < dd->n; i++) {
        uint32_t key = dd->rows[i].key;
        if (key >= m->mapcap || m->map[key] == 0)
            continue;
        size_t la, lb;
        const uint8_t *a = pw_tagdict_get(&dd->dict, PW_ROW_ID(key), &la);
        const uint8_t *b = pw_tagdict_get(&m->names, PW_ROW_ID(m->rname[m->map[key] - 1]), &lb);
        if (a == NULL || b == NULL || la != lb || memcmp(a, b, la) != 0) {
            memset(m->map, 0, m->mapcap * sizeof(uint32_t)); /* renumbered: look up by name */
            return;
        }
    }
}

int pw__store_rowmap_slow(pw__store_rowmap_t *m, const pw_delta_dec_t *dd, uint32_t key,
                          uint32_t *row, int *added)
{
    size_t tl;
    const uint8_t *t = pw_tagdict_get(&dd->dict, PW_ROW_ID(key), &tl);
    if (t == NULL)
        return PW_ECORRUPT;
    int64_t id = pw_tagdict_intern(&m->names, t, tl, NULL);
    if (id < 0)
        return id == PW_ENOMEM ? PW_ENOMEM : PW_ECORRUPT;
    uint32_t nk = PW_ROW_KEY(id, PW_ROW_POOL(key));
    if (grow_zero(&m->byname, &m->bncap, nk) != 0 || grow_zero(&m->map, &m->mapcap, key) != 0)
        return PW_ENOMEM;
    *added = m->byname[nk] == 0;
    if (*added) {
        if (grow((void **)&m->rname, &m->rcap, (size_t)m->nrows + 1, sizeof(uint32_t)) != 0)
            return PW_ENOMEM;
        m->rname[m->nrows] = nk;
        m->byname[nk] = ++m->nrows;
    }
    *row = m->byname[nk] - 1;
    m->map[key] = *row + 1;
    return 0;
}

const uint8_t *pw__store_rowmap_tag(const pw__store_rowmap_t *m, uint32_t row, size_t *len)
{
    return pw_tagdict_get(&m->names, PW_ROW_ID(m->rname[row]), len);
}

static int push_ev(sbuild_t *b, uint32_t row, uint32_t idx, int vanish, const srow_t *r)
{
    if (grow((void **)&b->ev, &b->evcap, b->nev + 1, sizeof(ev_t)) != 0)
        return PW_ENOMEM;
    b->ev[b->nev++] = (ev_t){row, idx, (uint32_t)vanish, r->a, r->f, r->df, r->b};
    return 0;
}

static int build_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)seq, (void)d;
    sbuild_t *b = arg;
    if (grow((void **)&b->ts, &b->tscap, b->nts + 1, sizeof(uint64_t)) != 0)
        return PW_ENOMEM;
    uint32_t idx = (uint32_t)b->nts;
    b->ts[b->nts++] = dd->timestamp_ms;
    pw__store_rowmap_sync(&b->map, dd);
    for (size_t i = 0; i < dd->n; i++) {
        const pw_row_t *row = &dd->rows[i];
        uint32_t ri;
        int added, rc = pw__store_rowmap_get(&b->map, dd, row->key, &ri, &added);
        if (rc != 0)
            return rc == PW_ENOMEM
                       ? rc
                       : pw_diag_set(d, rc, 0, 0, "series", "row key %u outside the dictionary",
                                     (unsigned)row->key);
        ri++;
        if (added) {
            if (grow((void **)&b->rows, &b->rcap, b->nrows + 1, sizeof(srow_t)) != 0)
                return PW_ENOMEM;
            srow_t *r = &b->rows[b->nrows];
            memset(r, 0, sizeof(*r));
            r->lkey = row->key;
            size_t tl;
            const uint8_t *t = pw__store_rowmap_tag(&b->map, ri - 1, &tl);
            if (t == NULL || tl > PW_TAG_MAX)
                return PW_ECORRUPT;
            memcpy(r->tag, t, tl);
            r->tlen = (uint8_t)tl;
            b->nrows++;
        }
        srow_t *r = &b->rows[ri - 1];
        b->npresent += !r->present;
        if (!r->present || r->a != row->allocs || r->f != row->frees || r->df != row->diff ||
            r->b != row->bytes) {
            r->a = row->allocs, r->f = row->frees, r->df = row->diff, r->b = row->bytes;
            r->present = 1;
            if (push_ev(b, ri - 1, idx, 0, r) != 0)
                return PW_ENOMEM;
        }
        r->seen = idx + 1;
    }
    /* Every present row was in this table: none vanished (the common case, no scan). */
    if (b->npresent == dd->n)
        return 0;
    b->npresent = dd->n;
    for (size_t i = 0; i < b->nrows; i++) {
        srow_t *r = &b->rows[i];
        if (r->present && r->seen != idx + 1) {
            r->present = 0;
            if (push_ev(b, (uint32_t)i, idx, 1, r) != 0)
                return PW_ENOMEM;
        }
    }
    return 0;
}

typedef struct {
    uint32_t gkey, row;
} gk_t;

static int gk_cmp(const void *x, const void *y)
{
    uint32_t a = ((const gk_t *)x)->gkey, b = ((const gk_t *)y)->gkey;
    return a < b ? -1 : a > b;
}

#define NCOL  5    /* event flags and index gaps, allocs, diff, bytes, frees */
#define TIMES NCOL /* the scratch buffer after the columns: a chunk's times (times_put) */

/* Appends one row's events ev[0..n) to the page's columns. */
static int put_events(pw_buf_t col[NCOL], const ev_t *ev, size_t n)
{
    uint64_t pa = 0, pf = 0, pd = 0, pb = 0;
    uint32_t pidx = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const ev_t *e = &ev[i];
        rc = pw_buf_put_varint(&col[0], ((uint64_t)(e->idx - pidx) << 1) | e->vanish);
        pidx = e->idx;
        if (rc != 0 || e->vanish)
            continue;
        uint64_t da = e->a - pa, dd = e->df - pd;
        uint64_t pred = pb + (pd ? dd * (pb / pd) : 0);
        rc = pw_buf_put_varint(&col[1], pw_zigzag(da));
        rc = rc ? rc : pw_buf_put_varint(&col[2], pw_zigzag(dd));
        rc = rc ? rc : pw_buf_put_varint(&col[3], pw_zigzag(e->b - pred));
        rc = rc ? rc : pw_buf_put_varint(&col[4], pw_zigzag((e->f - pf) - (da - dd)));
        pa = e->a, pf = e->f, pd = e->df, pb = e->b;
    }
    return rc;
}

/* Puts the times ts[0..nts) as a body holds them into `t` (reset first): every page of a
 * chunk holds the same, encoded once. */
static int times_put(pw_buf_t *t, const uint64_t *ts, size_t nts)
{
    pw_buf_reset(t);
    int rc = pw_buf_put_varint(t, nts);
    for (size_t k = 0; rc == 0 && k < nts; k++)
        rc = pw_buf_put_varint(t, k ? ts[k] - ts[k - 1] : ts[0]);
    return rc;
}

/* Appends a body's head to `out` (format above, version SERIES_VER): the times as times_put
 * wrote them, rows keys[0..nrows) (ascending, gaps from `base`). */
static int body_head(pw_buf_t *out, const pw_buf_t *times, uint32_t base, const uint32_t *keys,
                     size_t nrows)
{
    uint8_t v = SERIES_VER;
    int rc = pw_buf_append(out, &v, 1);
    rc = rc ? rc : pw_buf_append(out, times->data, times->len);
    rc = rc ? rc : pw_buf_put_varint(out, nrows);
    uint32_t prev = base;
    for (size_t k = 0; rc == 0 && k < nrows; k++) {
        rc = pw_buf_put_varint(out, keys[k] - prev);
        prev = keys[k];
    }
    return rc;
}

/* Appends the columns' lengths and the columns to `out`: a body's tail. */
static int body_tail(pw_buf_t *out, const pw_buf_t col[NCOL])
{
    int rc = 0;
    for (int c = 0; rc == 0 && c < NCOL; c++)
        rc = pw_buf_put_varint(out, col[c].len);
    for (int c = 0; rc == 0 && c < NCOL; c++)
        rc = pw_buf_append(out, col[c].data, col[c].len);
    return rc;
}

/* Appends one body to `out` (format above, version SERIES_VER): `times` (times_put), rows
 * keys[0..nrows) (ascending, gaps from `base`), row k's events rev[k][0..rnev[k]). `col`:
 * scratch columns. */
static int body_put(pw_buf_t *out, const pw_buf_t *times, uint32_t base, const uint32_t *keys,
                    const ev_t *const *rev, const uint32_t *rnev, size_t nrows, pw_buf_t col[NCOL])
{
    for (int c = 0; c < NCOL; c++)
        pw_buf_reset(&col[c]);
    int rc = body_head(out, times, base, keys, nrows);
    for (size_t k = 0; rc == 0 && k < nrows; k++) {
        rc = put_events(col, rev[k], rnev[k]);
        rc = rc ? rc : pw_buf_put_varint(out, rnev[k]);
    }
    return rc ? rc : body_tail(out, col);
}

/* Compresses the page body in `out` and inserts it as chunk `chunk_id`'s page of group `grp`. */
static int page_insert(pw_store_sql_t *q, const pw_buf_t *out, int64_t chunk_id, int64_t host_id,
                       uint32_t grp, uint64_t t0, uint64_t t1, int m15, pw_diag_t *d)
{
    int level = q->opts.zstd_level < SERIES_ZSTD_MAX ? q->opts.zstd_level : SERIES_ZSTD_MAX;
    int rc = pw__store_zcompress_at(q, out->data, out->len, level, d);
    if (rc != 0)
        return rc;
    sqlite3_stmt *s = pw__store_stmt(q, S_SERIES_INS);
    sqlite3_bind_int64(s, 1, chunk_id);
    sqlite3_bind_int64(s, 2, host_id);
    sqlite3_bind_int64(s, 3, grp);
    sqlite3_bind_int64(s, 4, (int64_t)t0);
    sqlite3_bind_int64(s, 5, (int64_t)t1);
    sqlite3_bind_int64(s, 6, (int64_t)out->len);
    sqlite3_bind_blob(s, 7, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
    sqlite3_bind_int(s, 8, m15);
    return pw__store_run(q, s, d, "insert series page");
}

/* Marks chunk `chunk_id` paged once its pages are written (rc 0), and notes its host for a
 * merge of its days. Returns rc or the update's error. */
static int pages_done(pw_store_sql_t *q, int rc, int64_t chunk_id, int64_t host_id, int m15,
                      pw_diag_t *d)
{
    if (rc == 0) {
        sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_PAGED);
        sqlite3_bind_int64(s, 1, chunk_id);
        sqlite3_bind_int(s, 2, 1);
        rc = pw__store_run(q, s, d, "mark chunk paged");
    }
    if (rc == 0 && !m15)
        pw__store_series_merge_note(q, host_id);
    return rc;
}

static void sbuild_free(sbuild_t *b)
{
    pw_free(b->ts);
    pw_free(b->rows);
    pw__store_rowmap_close(&b->map);
    pw_free(b->ev);
}

/* Writes the pages of chunk `chunk_id` from the rows and events in `b` (freed here) and marks
 * the chunk paged. `m15`: 1 when a 15-min rollup holds the chunk's samples already (a chunk
 * compacted before schema 5). */
static int write_pages(pw_store_sql_t *q, sbuild_t *pb, int64_t chunk_id, int64_t host_id, int m15,
                       pw_diag_t *d)
{
    sbuild_t b = *pb;
    gk_t *order = NULL;
    uint32_t *start = NULL, *keys = NULL, *rnev = NULL;
    ev_t *byrow = NULL;
    const ev_t **rev = NULL;
    pw_buf_t col[NCOL + 1]; /* the columns, then the times (col[TIMES]) */
    for (int c = 0; c <= NCOL; c++)
        pw_buf_init(&col[c], BLOB_MAX);
    int rc = 0;
    if (rc == 0 && b.nrows > 0) {
        order = pw_malloc(b.nrows * sizeof(*order));
        start = pw_calloc(b.nrows + 1, sizeof(*start));
        byrow = pw_malloc((b.nev ? b.nev : 1) * sizeof(*byrow));
        keys = pw_malloc(b.nrows * sizeof(*keys));
        rnev = pw_malloc(b.nrows * sizeof(*rnev));
        rev = pw_malloc(b.nrows * sizeof(*rev));
        if (order == NULL || start == NULL || byrow == NULL || keys == NULL || rnev == NULL ||
            rev == NULL)
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < b.nrows; i++) {
        uint32_t g = 0;
        rc = pw__store_intern_tag(q, b.rows[i].tag, b.rows[i].tlen, &g, d);
        b.rows[i].gkey = PW_ROW_KEY(g, PW_ROW_POOL(b.rows[i].lkey));
        order[i] = (gk_t){b.rows[i].gkey, (uint32_t)i};
    }
    if (rc == 0 && b.nrows > 0) {
        /* events by row, each row's in time order (a counting sort keeps their order) */
        for (size_t i = 0; i < b.nev; i++)
            start[b.ev[i].row + 1]++;
        for (size_t i = 0; i < b.nrows; i++)
            start[i + 1] += start[i];
        for (size_t i = 0; i < b.nev; i++) {
            uint32_t r = b.ev[i].row;
            byrow[start[r]++] = b.ev[i];
        }
        for (size_t i = b.nrows; i > 0; i--)
            start[i] = start[i - 1];
        start[0] = 0;
        qsort(order, b.nrows, sizeof(*order), gk_cmp);
    }
    uint64_t t0 = b.nts ? b.ts[0] : 0, t1 = b.nts ? b.ts[b.nts - 1] : 0;
    if (rc == 0 && (rc = times_put(&col[TIMES], b.ts, b.nts)) != 0)
        rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
    for (size_t i = 0; rc == 0 && i < b.nrows;) {
        uint32_t grp = order[i].gkey >> GRP_SHIFT;
        size_t j = i;
        while (j < b.nrows && order[j].gkey >> GRP_SHIFT == grp)
            j++;
        pw_buf_t *out = &q->tmp;
        pw_buf_reset(out);
        for (size_t k = i; k < j; k++) {
            uint32_t r = order[k].row;
            keys[k - i] = order[k].gkey;
            rev[k - i] = byrow + start[r];
            rnev[k - i] = start[r + 1] - start[r];
        }
        rc = body_put(out, &col[TIMES], grp << GRP_SHIFT, keys, rev, rnev, j - i, col);
        if (rc != 0) {
            rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
            break;
        }
        rc = page_insert(q, out, chunk_id, host_id, grp, t0, t1, m15, d);
        i = j;
    }
    rc = pages_done(q, rc, chunk_id, host_id, m15, d);
    for (int c = 0; c <= NCOL; c++)
        pw_buf_close(&col[c]);
    pw_free(order);
    pw_free(start);
    pw_free(byrow);
    pw_free(keys);
    pw_free(rnev);
    pw_free(rev);
    sbuild_free(&b);
    return rc;
}

int pw__store_series_write(pw_store_sql_t *q, int64_t chunk_id, int64_t host_id, unsigned width,
                           int fmt, const pw_buf_t *recs, int m15, pw_diag_t *d)
{
    sbuild_t b;
    memset(&b, 0, sizeof(b));
    pw__store_rowmap_init(&b.map);
    int rc = pw__store_replay(fmt, recs->data, recs->len, width, build_cb, &b, d);
    if (rc == PW_ENOMEM)
        rc = pw_diag_set(d, rc, 0, 0, "series", "out of memory");
    if (rc != 0) {
        sbuild_free(&b);
        return rc;
    }
    return write_pages(q, &b, chunk_id, host_id, m15, d);
}

/* Emits the samples ts[k0..k1) that lie inside [from, to] (times do not decrease in a chunk)
 * as one run holding the values given. */
static int emit_run(const uint64_t *ts, uint64_t k0, uint64_t k1, uint64_t from, uint64_t to,
                    uint64_t b, uint64_t df, uint64_t a, uint64_t f, pw__store_run_fn fn, void *sr,
                    pw_diag_t *d)
{
    while (k0 < k1 && ts[k0] < from)
        k0++;
    while (k1 > k0 && ts[k1 - 1] > to)
        k1--;
    if (k1 == k0)
        return 0;
    int rc = fn(sr, ts + k0, (size_t)(k1 - k0), b, df, a, f);
    return rc ? pw_diag_set(d, rc, 0, 0, "series", "%s", pw_strerror(rc)) : 0;
}

/* pw_varint_get with the one- and two-byte cases inline: a page read decodes thousands of them
 * (sample time gaps of 10 s take two). */
static inline int vget(const uint8_t *p, size_t len, size_t *off, uint64_t *v)
{
    size_t o = *off;
    if (o < len && p[o] < 0x80) {
        *v = p[o];
        *off = o + 1;
        return 0;
    }
    if (o + 1 < len && p[o + 1] < 0x80) {
        *v = (uint64_t)(p[o] & 0x7f) | (uint64_t)p[o + 1] << 7;
        *off = o + 2;
        return 0;
    }
    return pw_varint_get(p, len, off, v);
}

/* Steps over `n` varints (each ends at a byte below 0x80). Returns 0 or -1 when truncated. */
static int vskip(const uint8_t *p, size_t len, size_t *off, uint64_t n)
{
    size_t o = *off;
    /* Eight bytes at a time while they end fewer varints than are left (a varint cut at the
     * word's end is one of those left): a page read skips the earlier rows' values. */
    while (n > 8 && len - o >= 8) {
        uint64_t w;
        memcpy(&w, p + o, 8);
        uint64_t ends = (((~w & 0x8080808080808080ull) >> 7) * 0x0101010101010101ull) >> 56;
        if (ends >= n)
            break;
        n -= ends;
        o += 8;
    }
    while (n > 0 && o < len)
        n -= p[o++] < 0x80;
    *off = o;
    return n == 0 ? 0 : -1;
}

/* Reads a body's times at *off (version `ver`) into *ts (grown as needed), their count into
 * *nts. Returns 0 or -1 when they are invalid. */
static int ts_get(const uint8_t *p, size_t len, size_t *off, int ver, uint64_t **ts, size_t *tscap,
                  uint64_t *nts)
{
    uint64_t n, v, t = 0;
    if (vget(p, len, off, &n) || n > (ver == SERIES_VER ? len : SEG_TS_MAX))
        return -1;
    if (grow((void **)ts, tscap, n ? n : 1, sizeof(uint64_t)) != 0)
        return PW_ENOMEM;
    uint64_t *o = *ts;
    if (ver == SERIES_VER) {
        for (uint64_t k = 0; k < n; k++) {
            if (vget(p, len, off, &v))
                return -1;
            t += v;
            o[k] = t;
        }
    } else {
        uint64_t nruns, k = 1;
        if (vget(p, len, off, &nruns) || nruns > len || (n == 0 && nruns > 0) ||
            vget(p, len, off, &t))
            return -1;
        if (n > 0)
            o[0] = t;
        for (uint64_t r = 0; r < nruns; r++) {
            uint64_t gap, cnt;
            if (vget(p, len, off, &gap) || vget(p, len, off, &cnt) || cnt > n - k)
                return -1;
            for (uint64_t e = k + cnt; k < e; k++)
                o[k] = t += gap;
        }
        if (n > 0 && k != n)
            return -1;
    }
    *nts = n;
    return 0;
}

/* The parsed head of a body: times, where its rows' keys and counts start, the columns. */
typedef struct {
    uint64_t nts, nrows;
    size_t keys_off; /* the rows' key gaps, then their event counts */
    const uint8_t *cp[NCOL];
    size_t cl[NCOL];
} head_t;

/* Parses a body's head (times into *ts). Returns 0 or a negative code (`d` set). */
static int head_get(const uint8_t *p, size_t len, head_t *h, uint64_t **ts, size_t *tscap,
                    pw_diag_t *d)
{
    size_t off = 1;
    uint64_t v;
    if (len < 1 || (p[0] != SERIES_VER && p[0] != SERIES_VER_RUNS))
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "series", "series page header invalid");
    int rc = ts_get(p, len, &off, p[0], ts, tscap, &h->nts);
    if (rc == PW_ENOMEM)
        return pw_diag_set(d, rc, 0, 0, "series", "out of memory");
    if (rc != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series times invalid");
    if (vget(p, len, &off, &h->nrows) || h->nrows > len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series rows invalid");
    h->keys_off = off;
    /* keys and counts: 2 * nrows varints */
    if (vskip(p, len, &off, 2 * h->nrows))
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series keys truncated");
    size_t at = 0;
    for (int c = 0; c < NCOL; c++)
        if (vget(p, len, &off, &v) || v > len)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series columns invalid");
        else
            h->cl[c] = (size_t)v;
    for (int c = 0; c < NCOL; c++) {
        if (h->cl[c] > len - off - at)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series column outside the page");
        h->cp[c] = p + off + at;
        at += h->cl[c];
    }
    return 0;
}

/* Reads the four value columns of an event at co[1..4] and applies them to the row's values
 * (the format above). Returns 0, or -1 when a column is truncated. */
static inline int ev_values(const uint8_t *const cp[NCOL], const size_t cl[NCOL], size_t co[NCOL],
                            uint64_t *pa, uint64_t *pf, uint64_t *pd, uint64_t *pb)
{
    uint64_t x[NCOL];
    for (int c = 1; c < NCOL; c++)
        if (vget(cp[c], cl[c], &co[c], &x[c]))
            return -1;
    uint64_t da = pw_unzigzag(x[1]), dd = pw_unzigzag(x[2]);
    uint64_t pred = *pb + (*pd ? dd * (*pb / *pd) : 0);
    *pb = pred + pw_unzigzag(x[3]);
    *pf += pw_unzigzag(x[4]) + (da - dd);
    *pa += da, *pd += dd;
    return 0;
}

/* Adds key gap `v` of a body's row `i` to *key: rows are ascending 32-bit keys, so every gap
 * after the first is at least 1. Returns 0, or -1 when the gap breaks that. */
static inline int key_next(uint64_t *key, uint64_t v, uint64_t i)
{
    if ((i > 0 && v == 0) || v > UINT32_MAX - *key)
        return -1;
    *key += v;
    return 0;
}

/* Emits the points of row `gkey` held by one body (key gaps from `base`). */
static int body_read(const uint8_t *p, size_t len, uint32_t base, uint32_t gkey, uint64_t from,
                     uint64_t to, pw__store_run_fn fn, void *sr, uint64_t **ts, size_t *tscap,
                     pw_diag_t *d)
{
    head_t h;
    int rc = head_get(p, len, &h, ts, tscap, d);
    if (rc != 0)
        return rc;
    if (h.nts == 0 || (*ts)[0] > to || (*ts)[h.nts - 1] < from)
        return 0;
    size_t off = h.keys_off;
    uint64_t key = base, row = UINT64_MAX, v;
    for (uint64_t i = 0; i < h.nrows; i++) {
        if (vget(p, len, &off, &v) || key_next(&key, v, i))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series keys invalid");
        if (key == gkey)
            row = i;
    }
    if (row == UINT64_MAX)
        return 0;
    uint64_t skip = 0, nev = 0; /* events of the rows before `row`, and of `row` */
    for (uint64_t i = 0; i <= row; i++) {
        if (vget(p, len, &off, &v) || v > len)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series counts invalid");
        if (i < row)
            skip += v;
        else
            nev = v;
    }
    const uint8_t *const *cp = h.cp;
    const size_t *cl = h.cl;
    size_t co[NCOL] = {0};
    /* skip the earlier rows' events: their flags say how many carry values */
    uint64_t skipv = 0;
    for (uint64_t i = 0; i < skip; i++) {
        if (vget(cp[0], cl[0], &co[0], &v))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series events truncated");
        skipv += !(v & 1);
    }
    for (int c = 1; c < NCOL; c++)
        if (vskip(cp[c], cl[c], &co[c], skipv))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series values truncated");
    uint64_t pa = 0, pf = 0, pd = 0, pb = 0, idx = 0, nts = h.nts;
    int present = 0;
    for (uint64_t n = 0;; n++) {
        int end = n >= nev; /* after the last event: the row holds until the body's end */
        uint64_t e = 0;
        if (!end && vget(cp[0], cl[0], &co[0], &e))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row truncated");
        uint64_t next = end ? nts : idx + (e >> 1);
        if (next > nts || next < idx)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row index invalid");
        /* the samples from the previous event up to this one hold the previous values */
        if (present) {
            rc = emit_run(*ts, idx, next, from, to, pb, pd, pa, pf, fn, sr, d);
            if (rc != 0)
                return rc;
        }
        if (end)
            return 0;
        idx = next;
        if (e & 1) {
            present = 0;
            continue;
        }
        if (ev_values(cp, cl, co, &pa, &pf, &pd, &pb) != 0)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row truncated");
        present = 1;
        if (idx >= nts)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row index invalid");
    }
}

/* The first key of group `grp` of a page of kind `kind` (PW__STORE_PAGE_*): its rows' key gaps
 * start there. */
static inline uint32_t page_base(uint32_t grp, int kind)
{
    return grp << (kind == PW__STORE_PAGE_DAY4 ? DAY_SHIFT : GRP_SHIFT);
}

/* Calls body(arg, p, len) for each body of a page: a chunk's page is one, a day page holds one
 * per segment. `day`: the page is a day page (either kind). */
typedef int (*body_fn)(void *arg, const uint8_t *p, size_t len, pw_diag_t *d);

static int page_bodies(const uint8_t *p, size_t len, int day, body_fn body, void *arg, pw_diag_t *d)
{
    if (!day)
        return body(arg, p, len, d);
    size_t off = 1;
    uint64_t nseg, sl;
    if (len < 1 || p[0] != SERIES_VER_DAY || vget(p, len, &off, &nseg) || nseg > len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "day page header invalid");
    for (uint64_t i = 0; i < nseg; i++) {
        if (vget(p, len, &off, &sl) || sl > len - off)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "day page segment invalid");
        int rc = body(arg, p + off, (size_t)sl, d);
        if (rc != 0)
            return rc;
        off += (size_t)sl;
    }
    return 0;
}

typedef struct {
    uint32_t base, gkey;
    uint64_t from, to;
    pw__store_run_fn fn;
    void *sr;
    uint64_t **ts;
    size_t *tscap;
} read_t;

static int read_body(void *arg, const uint8_t *p, size_t len, pw_diag_t *d)
{
    read_t *r = arg;
    return body_read(p, len, r->base, r->gkey, r->from, r->to, r->fn, r->sr, r->ts, r->tscap, d);
}

int pw__store_series_page_read(const uint8_t *p, size_t len, uint32_t grp, int day, uint32_t gkey,
                               uint64_t from, uint64_t to, pw__store_run_fn fn, void *arg,
                               pw_diag_t *d)
{
    uint64_t *ts = NULL;
    size_t tscap = 0;
    read_t rd = {page_base(grp, day), gkey, from, to, fn, arg, &ts, &tscap};
    int rc = page_bodies(p, len, day != PW__STORE_PAGE_CHUNK, read_body, &rd, d);
    pw_free(ts);
    return rc;
}

/* Reads the pages statement `s` returns (raw_size, data) for row `gkey`. */
static int read_pages(pw_store_sql_t *q, sqlite3_stmt *s, int day, read_t *rd, pw_diag_t *d)
{
    int rc = 0, r;
    while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
        rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                                   (uint64_t)sqlite3_column_int64(s, 0), &q->tmp, d);
        if (rc == 0)
            rc = page_bodies(q->tmp.data, q->tmp.len, day, read_body, rd, d);
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = pw__store_sqlfail(q, r, d, "read series pages");
    sqlite3_reset(s);
    return rc;
}

int pw__store_series_read(pw_store_sql_t *q, int64_t hid, uint32_t gkey, uint64_t from, uint64_t to,
                          int m15_only, pw__store_run_fn fn, void *sr, pw_diag_t *d)
{
    uint64_t *ts = NULL;
    size_t tscap = 0;
    /* day pages first: they hold older samples than the chunk pages not merged yet; those of 4
     * tags (merged before 2026-12-02), then those of 32 (grp stored as -1 - group) */
    read_t rd = {0, gkey, from, to, fn, sr, &ts, &tscap};
    int rc = 0;
    for (int kind = PW__STORE_PAGE_DAY4; rc == 0 && kind <= PW__STORE_PAGE_DAY; kind++) {
        uint32_t g = gkey >> (kind == PW__STORE_PAGE_DAY4 ? DAY_SHIFT : GRP_SHIFT);
        rd.base = page_base(g, kind);
        sqlite3_stmt *s = pw__store_stmt(q, S_DAYS_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int64(s, 2, kind == PW__STORE_PAGE_DAY4 ? (int64_t)g : -1 - (int64_t)g);
        sqlite3_bind_int64(
            s, 3, (int64_t)pw__store_cutoff(from, PW__STORE_DAY_MS + q->opts.chunk_window_ms));
        sqlite3_bind_int64(s, 4, (int64_t)to);
        sqlite3_bind_int64(s, 5, (int64_t)from);
        rc = read_pages(q, s, 1, &rd, d);
    }
    if (rc == 0) {
        rd.base = (gkey >> GRP_SHIFT) << GRP_SHIFT;
        sqlite3_stmt *s = pw__store_stmt(q, m15_only ? S_SERIES_RANGE15 : S_SERIES_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int64(s, 2, gkey >> GRP_SHIFT);
        sqlite3_bind_int64(s, 3, (int64_t)pw__store_cutoff(from, q->opts.chunk_window_ms));
        sqlite3_bind_int64(s, 4, (int64_t)to);
        sqlite3_bind_int64(s, 5, (int64_t)from);
        rc = read_pages(q, s, 0, &rd, d);
    }
    pw_free(ts);
    return rc;
}

/* ---- a page's rows, all of them: merges and rollups ------------------------------------- */

/* A body decoded: its times, rows and every row's events with the values after each. */
typedef struct {
    uint64_t *ts;
    size_t nts, tscap;
    uint32_t *keys; /* ascending */
    uint32_t *evs;  /* nrows + 1: row i's events are ev[evs[i] .. evs[i + 1]) */
    ev_t *ev;
    size_t nrows;
    size_t order; /* position in the merge's input, for a stable sort */
} part_t;

static void part_free(part_t *pt)
{
    pw_free(pt->ts);
    pw_free(pt->keys);
    pw_free(pt->evs);
    pw_free(pt->ev);
    memset(pt, 0, sizeof(*pt));
}

/* Decodes one body (key gaps from `base`) into *pt (freed by part_free, also on error). */
static int body_decode(const uint8_t *p, size_t len, uint32_t base, part_t *pt, pw_diag_t *d)
{
    head_t h;
    int rc = head_get(p, len, &h, &pt->ts, &pt->tscap, d);
    if (rc != 0)
        return rc;
    pt->nts = (size_t)h.nts;
    size_t off = h.keys_off;
    uint64_t key = base, v, total = 0;
    pt->keys = pw_malloc((h.nrows ? h.nrows : 1) * sizeof(uint32_t));
    pt->evs = pw_malloc((h.nrows + 1) * sizeof(uint32_t));
    if (pt->keys == NULL || pt->evs == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    for (uint64_t i = 0; i < h.nrows; i++) {
        if (vget(p, len, &off, &v) || key_next(&key, v, i))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series keys invalid");
        pt->keys[i] = (uint32_t)key;
    }
    pt->evs[0] = 0;
    for (uint64_t i = 0; i < h.nrows; i++) {
        /* every event takes at least a byte of column 0 */
        if (vget(p, len, &off, &v) || v > h.cl[0] - total)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series counts invalid");
        total += v;
        pt->evs[i + 1] = (uint32_t)total;
    }
    pt->nrows = (size_t)h.nrows;
    pt->ev = pw_malloc((total ? total : 1) * sizeof(ev_t));
    if (pt->ev == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    size_t co[NCOL] = {0};
    for (size_t i = 0; i < pt->nrows; i++) {
        uint64_t pa = 0, pf = 0, pd = 0, pb = 0, idx = 0, e;
        for (uint32_t n = pt->evs[i]; n < pt->evs[i + 1]; n++) {
            if (vget(h.cp[0], h.cl[0], &co[0], &e) || (idx += e >> 1) >= pt->nts)
                return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row index invalid");
            if (!(e & 1) && ev_values(h.cp, h.cl, co, &pa, &pf, &pd, &pb) != 0)
                return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row truncated");
            pt->ev[n] = (ev_t){(uint32_t)i, (uint32_t)idx, (uint32_t)(e & 1), pa, pf, pd, pb};
        }
    }
    return 0;
}

typedef struct {
    uint32_t base;
    part_t *parts;
    size_t n, cap;
} parts_t;

static void parts_free(parts_t *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        part_free(&ps->parts[i]);
    pw_free(ps->parts);
    memset(ps, 0, sizeof(*ps));
}

static int parts_body(void *arg, const uint8_t *p, size_t len, pw_diag_t *d)
{
    parts_t *ps = arg;
    if (grow((void **)&ps->parts, &ps->cap, ps->n + 1, sizeof(part_t)) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    part_t *pt = &ps->parts[ps->n++];
    memset(pt, 0, sizeof(*pt));
    pt->order = ps->n;
    return body_decode(p, len, ps->base, pt, d);
}

int pw__store_series_page_rows(const uint8_t *p, size_t len, uint32_t grp, int day,
                               int (*row)(void *arg, uint32_t gkey), pw__store_run_fn fn, void *arg,
                               pw_diag_t *d)
{
    parts_t ps = {page_base(grp, day), NULL, 0, 0};
    int rc = page_bodies(p, len, day != PW__STORE_PAGE_CHUNK, parts_body, &ps, d);
    for (size_t k = 0; rc == 0 && k < ps.n; k++) {
        const part_t *pt = &ps.parts[k];
        for (size_t i = 0; rc == 0 && i < pt->nrows; i++) {
            if ((rc = row(arg, pt->keys[i])) != 0) {
                rc = pw_diag_set(d, rc, 0, 0, "series", "%s", pw_strerror(rc));
                break;
            }
            for (uint32_t n = pt->evs[i]; rc == 0 && n < pt->evs[i + 1]; n++) {
                const ev_t *e = &pt->ev[n];
                uint64_t next = n + 1 < pt->evs[i + 1] ? pt->ev[n + 1].idx : pt->nts;
                if (!e->vanish && next > e->idx)
                    rc = emit_run(pt->ts, e->idx, next, 0, UINT64_MAX, e->b, e->df, e->a, e->f, fn,
                                  arg, d);
            }
        }
    }
    parts_free(&ps);
    return rc;
}

/* ---- day pages: a day's chunk pages appended as segments --------------------------------- */

/* A day page's segment while a merge builds it: its body's place in the merge's bytes. */
typedef struct {
    uint64_t t0, t1;
    size_t off, len;
    size_t order; /* a day page's older segments before the new ones of the same time */
} seg_t;

typedef struct {
    pw_buf_t bytes;
    seg_t *seg;
    size_t nseg, cap, order;
} dsegs_t;

static int seg_add(dsegs_t *s, uint64_t t0, uint64_t t1, const uint8_t *b, size_t n)
{
    if (grow((void **)&s->seg, &s->cap, s->nseg + 1, sizeof(seg_t)) != 0)
        return PW_ENOMEM;
    s->seg[s->nseg++] = (seg_t){t0, t1, s->bytes.len, n, s->order++};
    return pw_buf_append(&s->bytes, b, n);
}

/* A body of the page being merged (a day page's segment, a chunk's page): kept as it is, its
 * head (times, rows, columns) checked. */
static int seg_body_cb(void *arg, const uint8_t *p, size_t len, pw_diag_t *d)
{
    dsegs_t *g = arg;
    head_t h;
    uint64_t *ts = NULL;
    size_t tscap = 0;
    int rc = head_get(p, len, &h, &ts, &tscap, d);
    if (rc == 0 && h.nts > 0 && seg_add(g, ts[0], ts[h.nts - 1], p, len) != 0)
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    pw_free(ts);
    return rc;
}

static int seg_cmp(const void *x, const void *y)
{
    const seg_t *a = x, *b = y;
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

typedef struct {
    int64_t *v;
    size_t n, cap;
} ids_t;

/* A page of a merge that did not decode: recorded as a gap and dropped (merge_unit). */
typedef struct {
    int64_t id, chunk; /* chunk: its chunk's id, -1 for a day page */
    uint64_t t0, t1;
    char why[PW_DIAG_MSG_MAX + 32]; /* what failed, at which byte */
} lost_t;

typedef struct {
    lost_t *v;
    size_t n, cap;
} losts_t;

/* Reads the pages statement `stmt` returns (id, raw_size, data, t0_ms, t1_ms, chunk id or -1:
 * S_MERGE_PAGES, the chunk pages of host `hid`, group `grp`, first times in [d0, d1];
 * S_DAYS_OF, the day page of the same) into `g`, each body a segment; their ids into `ids`. A
 * page that does not decode (PW_ECORRUPT: its zstd frame, a day page's segments, a body's head)
 * adds no segment and goes to `lost` instead. */
static int load_day(pw_store_sql_t *q, int stmt, int64_t hid, int64_t grp, uint64_t d0, uint64_t d1,
                    dsegs_t *g, ids_t *ids, losts_t *lost, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, stmt);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, grp);
    sqlite3_bind_int64(s, 3, (int64_t)d0);
    sqlite3_bind_int64(s, 4, (int64_t)d1);
    int rc = 0, r;
    while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        size_t nseg = g->nseg, nbytes = g->bytes.len;
        rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2),
                                   (uint64_t)sqlite3_column_int64(s, 1), &q->tmp, d);
        rc = rc ? rc : page_bodies(q->tmp.data, q->tmp.len, stmt == S_DAYS_OF, seg_body_cb, g, d);
        if (rc == PW_ECORRUPT) {
            g->nseg = nseg; /* the segments of the page read before the damage */
            g->bytes.len = nbytes;
            if (grow((void **)&lost->v, &lost->cap, lost->n + 1, sizeof(lost_t)) != 0) {
                rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
            } else {
                lost_t *l = &lost->v[lost->n++];
                l->id = id;
                l->t0 = (uint64_t)sqlite3_column_int64(s, 3);
                l->t1 = (uint64_t)sqlite3_column_int64(s, 4);
                l->chunk = sqlite3_column_int64(s, 5);
                if (d != NULL && d->offset > 0)
                    snprintf(l->why, sizeof(l->why), "%s at byte %llu", d->msg,
                             (unsigned long long)d->offset);
                else
                    snprintf(l->why, sizeof(l->why), "%s", d ? d->msg : "does not decode");
                rc = 0;
            }
        } else if (rc == 0) {
            if (grow((void **)&ids->v, &ids->cap, ids->n + 1, sizeof(int64_t)) != 0)
                rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
            else
                ids->v[ids->n++] = id;
        }
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = pw__store_sqlfail(q, r, d, "read pages to merge");
    sqlite3_reset(s);
    return rc;
}

static int del_ids(pw_store_sql_t *q, int stmt, const ids_t *ids, pw_diag_t *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ids->n; i++) {
        sqlite3_stmt *s = pw__store_stmt(q, stmt);
        sqlite3_bind_int64(s, 1, ids->v[i]);
        rc = pw__store_run(q, s, d, "delete merged series page");
    }
    return rc;
}

/* Records the pages of host `hid`, group `grp` (32 tags) in `lost` as gaps (their rows: the
 * group's 128 keys; their times; their chunks' samples, 0 for a day page or a chunk gone) and
 * drops them: the bytes hold nothing a reader can use, and kept they would fail every query of
 * their times (the chunk they were made from stays for the raw retention, as every chunk). */
static int drop_lost(pw_store_sql_t *q, int64_t hid, uint32_t grp, const losts_t *lost,
                     pw_diag_t *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < lost->n; i++) {
        const lost_t *l = &lost->v[i];
        uint64_t missed = 0;
        if (l->chunk >= 0) {
            sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_NSAMPLES);
            sqlite3_bind_int64(s, 1, l->chunk);
            int r = sqlite3_step(s);
            if (r == SQLITE_ROW)
                missed = (uint64_t)sqlite3_column_int64(s, 0);
            else if (r != SQLITE_DONE)
                rc = pw__store_sqlfail(q, r, d, "samples of a damaged page's chunk");
            sqlite3_reset(s);
        }
        char why[sizeof(l->why) + 64];
        if (l->chunk >= 0)
            snprintf(why, sizeof(why), "chunk page %lld (chunk %lld): %s", (long long)l->id,
                     (long long)l->chunk, l->why);
        else
            snprintf(why, sizeof(why), "day page %lld: %s", (long long)l->id, l->why);
        uint32_t k0 = grp << GRP_SHIFT, k1 = k0 | ((1u << GRP_SHIFT) - 1);
        rc = rc ? rc : pw__store_gap_lost(q, hid, l->t0, l->t1, missed, k0, k1, why, d);
        if (rc == 0) {
            sqlite3_stmt *s = pw__store_stmt(q, l->chunk >= 0 ? S_SERIES_DEL : S_DAYS_DEL);
            sqlite3_bind_int64(s, 1, l->id);
            rc = pw__store_run(q, s, d, "drop damaged series page");
        }
    }
    return rc;
}

/* Merges the chunk pages of host `hid`, group `grp` (32 tags), UTC day `day` into its day page:
 * each chunk page's body becomes a segment as it is, after the segments of the day page
 * already made of that day (a chunk that came late), all in time order, in one zstd frame.
 * Deletes what was merged. A page that does not decode (chunk page or day page) is recorded as
 * a gap of its rows and times and dropped; the rest of the day is merged without it. Merging
 * decoded every event and encoded it again into one segment per group of 4 tags until
 * 2026-12-02 (~2/3 of a merge's instructions; the 8 small frames a group then took cost zstd
 * ~60 k instructions each whatever their size). */
static int merge_unit(pw_store_sql_t *q, int64_t hid, uint32_t grp, uint64_t day, pw_diag_t *d)
{
    uint64_t d0 = day * PW__STORE_DAY_MS, d1 = d0 + PW__STORE_DAY_MS - 1;
    dsegs_t g;
    memset(&g, 0, sizeof(g));
    pw_buf_init(&g.bytes, BLOB_MAX);
    ids_t hourly = {0}, days = {0};
    losts_t lost = {0};
    int64_t dgrp = -1 - (int64_t)grp; /* a day page of 32 tags */
    int rc = load_day(q, S_DAYS_OF, hid, dgrp, d0, d1, &g, &days, &lost, d);
    rc = rc ? rc : load_day(q, S_MERGE_PAGES, hid, grp, d0, d1, &g, &hourly, &lost, d);
    rc = rc ? rc : drop_lost(q, hid, grp, &lost, d);
    if (rc == 0 && g.nseg > 0) {
        qsort(g.seg, g.nseg, sizeof(seg_t), seg_cmp);
        pw_buf_t *out = &q->tmp;
        pw_buf_reset(out);
        uint8_t v = SERIES_VER_DAY;
        uint64_t t0 = UINT64_MAX, t1 = 0;
        rc = pw_buf_append(out, &v, 1);
        rc = rc ? rc : pw_buf_put_varint(out, g.nseg);
        for (size_t i = 0; rc == 0 && i < g.nseg; i++) {
            const seg_t *sg = &g.seg[i];
            t0 = sg->t0 < t0 ? sg->t0 : t0;
            t1 = sg->t1 > t1 ? sg->t1 : t1;
            rc = pw_buf_put_varint(out, sg->len);
            rc = rc ? rc : pw_buf_append(out, g.bytes.data + sg->off, sg->len);
        }
        if (rc != 0)
            rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
        int level = q->opts.zstd_level < SERIES_ZSTD_MAX ? q->opts.zstd_level : SERIES_ZSTD_MAX;
        rc = rc ? rc : pw__store_zcompress_at(q, out->data, out->len, level, d);
        rc = rc ? rc : del_ids(q, S_DAYS_DEL, &days, d);
        if (rc == 0) {
            sqlite3_stmt *s = pw__store_stmt(q, S_DAYS_INS);
            sqlite3_bind_int64(s, 1, hid);
            sqlite3_bind_int64(s, 2, dgrp);
            sqlite3_bind_int64(s, 3, (int64_t)t0);
            sqlite3_bind_int64(s, 4, (int64_t)t1);
            sqlite3_bind_int64(s, 5, (int64_t)out->len);
            sqlite3_bind_blob(s, 6, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
            rc = pw__store_run(q, s, d, "insert day page");
        }
    }
    rc = rc ? rc : del_ids(q, S_SERIES_DEL, &hourly, d);
    pw_buf_close(&g.bytes);
    pw_free(g.seg);
    pw_free(hourly.v);
    pw_free(days.v);
    pw_free(lost.v);
    return rc;
}

void pw__store_series_merge_note(pw_store_sql_t *q, int64_t host_id)
{
    for (size_t i = 0; i < q->nmerge; i++)
        if (q->merge[i].host == host_id) {
            q->merge[i].grp = 0; /* new pages: any group may be due again */
            return;
        }
    /* a hint: without memory the host waits for the next note or the next open's scan */
    if (grow((void **)&q->merge, &q->merge_cap, q->nmerge + 1, sizeof(*q->merge)) == 0)
        q->merge[q->nmerge++] = (struct pw__store_merge_s){host_id, 0};
}

int pw__store_series_merge_one(pw_store_sql_t *q, pw_diag_t *d)
{
    if (q->nmerge == 0 && q->merge_scan >= 0) {
        /* after an open, every host with chunk pages not merged once (a day may have been left
         * unmerged by a stop): the next one is an index seek (series_unmerged), hosts without
         * such pages cost nothing (the scan of every host took a compaction step per host:
         * 10,000 of them at bench_detect_scale's start) */
        sqlite3_stmt *s = pw__store_stmt(q, S_HOST_NEXT);
        sqlite3_bind_int64(s, 1, q->merge_scan);
        int r = sqlite3_step(s);
        int64_t hid = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
        sqlite3_reset(s);
        if (r == SQLITE_DONE) {
            q->merge_scan = -1;
            return 0;
        }
        if (r != SQLITE_ROW)
            return pw__store_sqlfail(q, r, d, "next host to merge");
        q->merge_scan = hid;
        pw__store_series_merge_note(q, hid);
        return 1;
    }
    if (q->nmerge == 0)
        return 0;
    struct pw__store_merge_s *m = &q->merge[q->nmerge - 1];
    int64_t hid = m->host;
    /* the first group from the host's cursor on whose oldest unmerged day is over (an index
     * seek per group: grouping the host's unmerged pages by group at each call walked them all,
     * 94 groups x 24 pages at the end of a 3,000-row host's day, at each of its 94 merges) */
    sqlite3_stmt *s = pw__store_stmt(q, S_MERGE_FIND);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, m->grp);
    sqlite3_bind_int64(s, 3, (int64_t)PW__STORE_DAY_MS);
    int r = sqlite3_step(s);
    int64_t grp = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    int64_t day = r == SQLITE_ROW ? sqlite3_column_int64(s, 1) : 0;
    sqlite3_reset(s);
    if (r == SQLITE_DONE) {
        q->nmerge--; /* nothing (left) to merge for this host */
        return 1;
    }
    if (r != SQLITE_ROW)
        return pw__store_sqlfail(q, r, d, "find chunk pages to merge");
    if (grp < 0 || grp > (int64_t)(UINT32_MAX >> GRP_SHIFT) || day < 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "series", "series page group %lld invalid",
                           (long long)grp);
    m->grp = grp;
    /* A page that does not decode is recorded as lost and dropped by the merge (merge_unit),
     * which goes on with the rest of the day; were anything else to find damage, the merge is
     * undone and the host dropped from the candidates until its next pages or the next open. */
    uint64_t t = pw_clock_mono_us();
    int rc = pw__store_run(q, pw__store_stmt(q, S_MERGE_SAVE), d, "merge savepoint");
    rc = rc ? rc : merge_unit(q, hid, (uint32_t)grp, (uint64_t)day, d);
    if (rc == PW_ECORRUPT) {
        rc = pw__store_run(q, pw__store_stmt(q, S_MERGE_UNDO), d, "merge rollback");
        q->nmerge--;
    }
    rc = rc ? rc : pw__store_run(q, pw__store_stmt(q, S_MERGE_RELEASE), d, "merge release");
    q->merges++;
    q->merge_us_total += pw_clock_mono_us() - t;
    return rc != 0 ? rc : 1;
}

int pw__store_series_backfill_one(pw_store_sql_t *q, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_UNPAGED_NEXT);
    sqlite3_bind_int64(s, 1, q->unpaged_from);
    int r = sqlite3_step(s);
    if (r == SQLITE_DONE) {
        sqlite3_reset(s);
        q->unpaged_from = INT64_MAX;
        return 0;
    }
    if (r != SQLITE_ROW) {
        r = pw__store_sqlfail(q, r, d, "find chunks without series pages");
        sqlite3_reset(s);
        return r;
    }
    int64_t id = sqlite3_column_int64(s, 0), hid = sqlite3_column_int64(s, 1);
    unsigned width = (unsigned)sqlite3_column_int(s, 2);
    int fmt = sqlite3_column_int(s, 5), m15 = sqlite3_column_int(s, 6) != 0;
    q->unpaged_from = id + 1;
    int rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4),
                                   (uint64_t)sqlite3_column_int64(s, 3), &q->recs, d);
    sqlite3_reset(s);
    if (rc == 0)
        rc = pw__store_series_write(q, id, hid, width, fmt, &q->recs, m15, d);
    if (rc == PW_ECORRUPT) {
        /* A chunk that does not decode stays read raw (and fails there, as before): marked so
         * that it is not tried again at every compaction. */
        s = pw__store_stmt(q, S_CHUNK_PAGED);
        sqlite3_bind_int64(s, 1, id);
        sqlite3_bind_int(s, 2, 2);
        rc = pw__store_run(q, s, d, "mark chunk unpageable");
    }
    return rc != 0 ? rc : 1;
}

/* ---- the live form: a chunk's rows by row in memory while it is open or sealed ------------
 *
 * Per row, its events as one varint stream: `idx_gap << 1 | vanished`, then for a value event
 * zz(allocs), zz(diff), zz(bytes), zz(frees) as differences from the row's previous event (0
 * before the first). About 7 bytes per change: an hour of a 3,000-row host at 5 % churn is
 * ~0.4 MB at its end, plus ~60 bytes per row. The budget (live_series_max_bytes) bounds the
 * whole fleet's: past it a chunk's live form is dropped and that chunk is replayed instead. */

typedef struct {
    uint64_t a, f, df, b; /* values of the row's last event */
    uint32_t lkey;
    uint32_t seen;     /* index of the last sample holding the row, + 1 */
    uint32_t last_idx; /* sample index of the row's last event */
    uint32_t tag_off;  /* in tags */
    uint8_t tlen, present;
    uint8_t *ev; /* the events */
    uint32_t len, cap;
} lrow_t;

struct pw__store_live_s {
    int64_t chunk_id, host_id;
    size_t *acct; /* the store's live_bytes */
    size_t bytes; /* counted in *acct */
    uint64_t *ts;
    size_t nts, tscap;
    lrow_t *rows;
    size_t nrows, rcap;
    uint32_t *map; /* local key -> row + 1 */
    size_t mapcap;
    uint8_t *tags;
    size_t tlen, tcap;
    size_t npresent;
};

static void live_free(pw__store_live_t *lv)
{
    if (lv == NULL)
        return;
    for (size_t i = 0; i < lv->nrows; i++)
        pw_free(lv->rows[i].ev);
    *lv->acct -= lv->bytes;
    pw_free(lv->ts);
    pw_free(lv->rows);
    pw_free(lv->map);
    pw_free(lv->tags);
    pw_free(lv);
}

void pw__store_live_drop(pw_store_hstate_t *hs)
{
    live_free(hs->live);
    hs->live = NULL;
}

/* grow() counting the growth in the live form's bytes */
static int live_grow(pw__store_live_t *lv, void **p, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (grow(p, cap, need, elem) != 0)
        return PW_ENOMEM;
    lv->bytes += (*cap - old) * elem;
    *lv->acct += (*cap - old) * elem;
    return 0;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v > 0x7f) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Appends to row `r` its event at sample `idx`: new values `v`, or NULL when it vanished. */
static int row_event(pw__store_live_t *lv, lrow_t *r, uint32_t idx, const pw_row_t *v)
{
    uint8_t buf[5 * 10], *p = put_varint(buf, (uint64_t)(idx - r->last_idx) << 1 | (v == NULL));
    r->last_idx = idx;
    if (v != NULL) {
        p = put_varint(p, pw_zigzag(v->allocs - r->a));
        p = put_varint(p, pw_zigzag(v->diff - r->df));
        p = put_varint(p, pw_zigzag(v->bytes - r->b));
        p = put_varint(p, pw_zigzag(v->frees - r->f));
        r->a = v->allocs, r->f = v->frees, r->df = v->diff, r->b = v->bytes;
    }
    uint32_t n = (uint32_t)(p - buf);
    if (r->cap - r->len < n) {
        uint32_t nc = r->cap ? r->cap * 2 : 32;
        while (nc - r->len < n)
            nc *= 2;
        uint8_t *np = pw_realloc(r->ev, nc);
        if (np == NULL)
            return PW_ENOMEM;
        lv->bytes += nc - r->cap;
        *lv->acct += nc - r->cap;
        r->ev = np;
        r->cap = nc;
    }
    memcpy(r->ev + r->len, buf, n);
    r->len += n;
    return 0;
}

static int live_sample(pw__store_live_t *lv, uint64_t ts, const pw_row_t *rows, size_t n,
                       const pw_tagdict_t *dict, const uint32_t *chg, size_t nchg)
{
    if (live_grow(lv, (void **)&lv->ts, &lv->tscap, lv->nts + 1, sizeof(uint64_t)) != 0)
        return PW_ENOMEM;
    uint32_t idx = (uint32_t)lv->nts;
    lv->ts[lv->nts++] = ts;
    if (chg != NULL && idx > 0) {
        /* only these rows changed, the set of rows did not: no new row, none vanished */
        for (size_t k = 0; k < nchg; k++) {
            if (chg[k] >= n)
                return PW_ECORRUPT;
            const pw_row_t *row = &rows[chg[k]];
            uint32_t ri = row->key < lv->mapcap ? lv->map[row->key] : 0;
            if (ri == 0 || !lv->rows[ri - 1].present)
                return PW_ECORRUPT;
            lrow_t *r = &lv->rows[ri - 1];
            if ((r->a != row->allocs || r->f != row->frees || r->df != row->diff ||
                 r->b != row->bytes) &&
                row_event(lv, r, idx, row) != 0)
                return PW_ENOMEM;
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const pw_row_t *row = &rows[i];
        if (row->key >= lv->mapcap) {
            size_t old = lv->mapcap;
            if (live_grow(lv, (void **)&lv->map, &lv->mapcap, (size_t)row->key + 1,
                          sizeof(uint32_t)) != 0)
                return PW_ENOMEM;
            memset(lv->map + old, 0, (lv->mapcap - old) * sizeof(uint32_t));
        }
        uint32_t ri = lv->map[row->key];
        if (ri == 0) {
            size_t tl;
            const uint8_t *t = pw_tagdict_get(dict, PW_ROW_ID(row->key), &tl);
            if (t == NULL || tl == 0 || tl > PW_TAG_MAX)
                return PW_ECORRUPT;
            if (live_grow(lv, (void **)&lv->rows, &lv->rcap, lv->nrows + 1, sizeof(lrow_t)) != 0 ||
                live_grow(lv, (void **)&lv->tags, &lv->tcap, lv->tlen + tl, 1) != 0)
                return PW_ENOMEM;
            lrow_t *r = &lv->rows[lv->nrows];
            memset(r, 0, sizeof(*r));
            r->lkey = row->key;
            r->tag_off = (uint32_t)lv->tlen;
            r->tlen = (uint8_t)tl;
            memcpy(lv->tags + lv->tlen, t, tl);
            lv->tlen += tl;
            ri = (uint32_t)++lv->nrows;
            lv->map[row->key] = ri;
        }
        lrow_t *r = &lv->rows[ri - 1];
        if (!r->present || r->a != row->allocs || r->f != row->frees || r->df != row->diff ||
            r->b != row->bytes) {
            lv->npresent += !r->present;
            r->present = 1;
            if (row_event(lv, r, idx, row) != 0)
                return PW_ENOMEM;
        }
        r->seen = idx + 1;
    }
    /* Every present row was in this table: none vanished (the common case, no scan). */
    if (lv->npresent == n)
        return 0;
    for (size_t i = 0; i < lv->nrows; i++) {
        lrow_t *r = &lv->rows[i];
        if (r->present && r->seen != idx + 1) {
            r->present = 0;
            if (row_event(lv, r, idx, NULL) != 0)
                return PW_ENOMEM;
        }
    }
    lv->npresent = n;
    return 0;
}

void pw__store_live_add(pw_store_sql_t *q, pw_store_hstate_t *hs, uint64_t ts, const pw_row_t *rows,
                        size_t n, const pw_tagdict_t *dict, const uint32_t *chg, size_t nchg)
{
    if (hs->nsamples == 1) { /* the chunk's first sample */
        pw__store_live_drop(hs);
        if (q->live_bytes >= q->opts.live_series_max_bytes ||
            (hs->live = pw_calloc(1, sizeof(*hs->live))) == NULL)
            return;
        hs->live->chunk_id = hs->chunk_id;
        hs->live->host_id = hs->id;
        hs->live->acct = &q->live_bytes;
    }
    pw__store_live_t *lv = hs->live;
    if (lv == NULL)
        return;
    if (lv->chunk_id != hs->chunk_id || lv->nts + 1 != hs->nsamples ||
        live_sample(lv, ts, rows, n, dict, chg, nchg) != 0 ||
        q->live_bytes > q->opts.live_series_max_bytes)
        pw__store_live_drop(hs);
}

void pw__store_live_seal(pw_store_sql_t *q, pw_store_hstate_t *hs)
{
    pw__store_live_t *lv = hs->live;
    hs->live = NULL;
    if (lv == NULL)
        return;
    if (lv->chunk_id != hs->chunk_id || lv->nts != hs->nsamples ||
        grow((void **)&q->sealed, &q->sealed_cap, q->nsealed + 1, sizeof(*q->sealed)) != 0) {
        live_free(lv);
        return;
    }
    q->sealed[q->nsealed++] = lv;
}

void pw__store_live_forget_host(pw_store_sql_t *q, int64_t host_id)
{
    for (size_t i = 0; i < q->nsealed;)
        if (q->sealed[i]->host_id == host_id) {
            live_free(q->sealed[i]);
            q->sealed[i] = q->sealed[--q->nsealed];
        } else {
            i++;
        }
}

void pw__store_live_forget_sealed(pw_store_sql_t *q)
{
    for (size_t i = 0; i < q->nsealed; i++)
        live_free(q->sealed[i]);
    q->nsealed = 0;
}

const pw__store_live_t *pw__store_live_find(pw_store_sql_t *q, const pw_store_hstate_t *hs,
                                            int64_t id)
{
    if (hs != NULL && hs->live != NULL && hs->live->chunk_id == id)
        return hs->live;
    for (size_t i = 0; i < q->nsealed; i++)
        if (q->sealed[i]->chunk_id == id)
            return q->sealed[i];
    return NULL;
}

/* Reads the next event of row `r` at *off: its sample index into *idx, and unless it is a
 * vanish (returns 1) its values into v[] (a, df, b, f). Returns 0, 1, or -1 at the end. */
static int row_next(const lrow_t *r, size_t *off, uint32_t *idx, uint64_t v[4])
{
    uint64_t e, x;
    if (*off >= r->len || vget(r->ev, r->len, off, &e) != 0)
        return -1;
    *idx += (uint32_t)(e >> 1);
    if (e & 1)
        return 1;
    for (int c = 0; c < 4; c++) {
        if (vget(r->ev, r->len, off, &x) != 0)
            return -1;
        v[c] += pw_unzigzag(x);
    }
    return 0;
}

int pw__store_live_read(const pw__store_live_t *lv, const uint8_t *tag, size_t tag_len,
                        pw_pool_t pool, uint64_t from, uint64_t to, pw__store_run_fn fn, void *sr,
                        pw_diag_t *d)
{
    const lrow_t *r = NULL;
    for (size_t i = 0; i < lv->nrows && r == NULL; i++)
        if (PW_ROW_POOL(lv->rows[i].lkey) == (uint32_t)pool && lv->rows[i].tlen == tag_len &&
            memcmp(lv->tags + lv->rows[i].tag_off, tag, tag_len) == 0)
            r = &lv->rows[i];
    if (r == NULL || lv->nts == 0 || lv->ts[0] > to || lv->ts[lv->nts - 1] < from)
        return 0;
    size_t off = 0;
    uint32_t idx = 0, prev = 0;
    uint64_t v[4] = {0}, pv[4] = {0};
    int present = 0;
    for (;;) {
        int k = row_next(r, &off, &idx, v);
        uint32_t next = k < 0 ? (uint32_t)lv->nts : idx;
        if (present && next > prev) {
            int rc = emit_run(lv->ts, prev, next, from, to, pv[2], pv[1], pv[0], pv[3], fn, sr, d);
            if (rc != 0)
                return rc;
        }
        if (k < 0)
            return 0;
        present = k == 0;
        prev = idx;
        memcpy(pv, v, sizeof(pv));
    }
}

/* Appends row `r`'s events to a page's columns and its number of events to `out`: the live
 * events hold the index gaps and the allocs and diff deltas of the page's columns 0..2 as they
 * are; bytes and frees become their departures from the predictions (put_events). */
static int live_events(pw_buf_t *out, pw_buf_t col[NCOL], const lrow_t *r)
{
    uint64_t pf = 0, pd = 0, pb = 0, e, x[4];
    size_t off = 0;
    uint32_t n = 0;
    int rc = 0;
    while (rc == 0 && off < r->len && vget(r->ev, r->len, &off, &e) == 0) {
        int c = 0;
        while (!(e & 1) && c < 4 && vget(r->ev, r->len, &off, &x[c]) == 0)
            c++;
        if (!(e & 1) && c < 4)
            break; /* truncated: cannot happen (row_next stops there too) */
        n++;
        rc = pw_chunk_put_varint(&col[0], e);
        if (rc != 0 || (e & 1))
            continue;
        uint64_t da = pw_unzigzag(x[0]), dd = pw_unzigzag(x[1]);
        uint64_t b = pb + pw_unzigzag(x[2]), f = pf + pw_unzigzag(x[3]);
        uint64_t pred = pb + (pd ? dd * (pb / pd) : 0);
        rc = pw_chunk_put_varint(&col[1], x[0]);
        rc = rc ? rc : pw_chunk_put_varint(&col[2], x[1]);
        rc = rc ? rc : pw_chunk_put_varint(&col[3], pw_zigzag(b - pred));
        rc = rc ? rc : pw_chunk_put_varint(&col[4], pw_zigzag((f - pf) - (da - dd)));
        pd += dd, pb = b, pf = f;
    }
    return rc ? rc : pw_buf_put_varint(out, n);
}

/* Writes the pages of chunk `chunk_id` from its live form `lv`: byte for byte what write_pages
 * writes from the same events (test_live_series), without first laying every event out with
 * absolute values and sorting them by row (most of a compaction's instructions, bench_store). */
static int live_pages(pw_store_sql_t *q, const pw__store_live_t *lv, int64_t chunk_id,
                      int64_t host_id, pw_diag_t *d)
{
    gk_t *order = NULL;
    uint32_t *keys = NULL;
    pw_buf_t col[NCOL + 1]; /* the columns, then the times (col[TIMES]) */
    for (int c = 0; c <= NCOL; c++)
        pw_buf_init(&col[c], BLOB_MAX);
    int rc = 0;
    if (lv->nrows > 0 && ((order = pw_malloc(lv->nrows * sizeof(*order))) == NULL ||
                          (keys = pw_malloc(lv->nrows * sizeof(*keys))) == NULL))
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    /* tags interned in row order, as write_pages does: new tags get the same ids */
    for (size_t i = 0; rc == 0 && i < lv->nrows; i++) {
        const lrow_t *r = &lv->rows[i];
        uint32_t g = 0;
        rc = pw__store_intern_tag(q, lv->tags + r->tag_off, r->tlen, &g, d);
        order[i] = (gk_t){PW_ROW_KEY(g, PW_ROW_POOL(r->lkey)), (uint32_t)i};
    }
    if (rc == 0 && lv->nrows > 0)
        qsort(order, lv->nrows, sizeof(*order), gk_cmp);
    uint64_t t0 = lv->nts ? lv->ts[0] : 0, t1 = lv->nts ? lv->ts[lv->nts - 1] : 0;
    if (rc == 0 && (rc = times_put(&col[TIMES], lv->ts, lv->nts)) != 0)
        rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
    for (size_t i = 0; rc == 0 && i < lv->nrows;) {
        uint32_t grp = order[i].gkey >> GRP_SHIFT;
        size_t j = i;
        while (j < lv->nrows && order[j].gkey >> GRP_SHIFT == grp) {
            keys[j - i] = order[j].gkey;
            j++;
        }
        pw_buf_t *out = &q->tmp;
        pw_buf_reset(out);
        for (int c = 0; c < NCOL; c++)
            pw_buf_reset(&col[c]);
        rc = body_head(out, &col[TIMES], grp << GRP_SHIFT, keys, j - i);
        for (size_t k = i; rc == 0 && k < j; k++)
            rc = live_events(out, col, &lv->rows[order[k].row]);
        rc = rc ? rc : body_tail(out, col);
        if (rc != 0) {
            rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
            break;
        }
        rc = page_insert(q, out, chunk_id, host_id, grp, t0, t1, 0, d);
        i = j;
    }
    rc = pages_done(q, rc, chunk_id, host_id, 0, d);
    for (int c = 0; c <= NCOL; c++)
        pw_buf_close(&col[c]);
    pw_free(order);
    pw_free(keys);
    return rc;
}

int pw__store_live_write(pw_store_sql_t *q, int64_t chunk_id, int64_t host_id, int write,
                         pw_diag_t *d)
{
    pw__store_live_t *lv = NULL;
    for (size_t i = 0; i < q->nsealed; i++)
        if (q->sealed[i]->chunk_id == chunk_id) {
            lv = q->sealed[i];
            q->sealed[i] = q->sealed[--q->nsealed];
            break;
        }
    if (lv == NULL || !write) {
        live_free(lv);
        return 0;
    }
    int rc = live_pages(q, lv, chunk_id, host_id, d);
    live_free(lv);
    return rc != 0 ? rc : 1;
}
