/* store_rollup.c: 1-min and 15-min rollups of a chunk's samples (pages of rows, each
 * compressed with its key range: docs/internals/store.md) and retention per level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_internal.h"

/* Rows per rollup page: a series query decompresses one page of a window, not the whole
 * host (~10 KB raw at 4 buckets per row, vs ~120 KB for 3,000 rows). */
#define PAGE_ROWS 256

typedef struct {
    uint32_t cnt;
    uint64_t b, df, a, f; /* last */
    uint64_t bmin, bmax, dmin, dmax;
} acc_t;

typedef struct {
    uint64_t b0, nb; /* first 1-min bucket index, buckets */
    acc_t *acc;      /* rows x nb */
    size_t nrows, rcap;
    pw__store_rowmap_t map; /* rows by (tag, pool) */
} rollup_t;

static void acc_add(acc_t *x, uint64_t b, uint64_t df, uint64_t a, uint64_t f, uint32_t cnt,
                    uint64_t bmin, uint64_t bmax, uint64_t dmin, uint64_t dmax)
{
    if (x->cnt == 0) {
        x->bmin = bmin, x->bmax = bmax, x->dmin = dmin, x->dmax = dmax;
    } else {
        x->bmin = bmin < x->bmin ? bmin : x->bmin;
        x->bmax = bmax > x->bmax ? bmax : x->bmax;
        x->dmin = dmin < x->dmin ? dmin : x->dmin;
        x->dmax = dmax > x->dmax ? dmax : x->dmax;
    }
    x->b = b, x->df = df, x->a = a, x->f = f;
    x->cnt += cnt;
}

static int rollup_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)seq;
    rollup_t *r = arg;
    uint64_t b = dd->timestamp_ms / M1_MS;
    if (b < r->b0 || b >= r->b0 + r->nb)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "timestamp_ms",
                           "sample at %llu ms outside its chunk",
                           (unsigned long long)dd->timestamp_ms);
    b -= r->b0;
    pw__store_rowmap_sync(&r->map, dd);
    for (size_t i = 0; i < dd->n; i++) {
        const pw_row_t *row = &dd->rows[i];
        uint32_t ri;
        int added, rc = pw__store_rowmap_get(&r->map, dd, row->key, &ri, &added);
        if (rc != 0)
            return rc == PW_ENOMEM
                       ? rc
                       : pw_diag_set(d, rc, 0, 0, "rollups", "row key %u outside the dictionary",
                                     (unsigned)row->key);
        ri++;
        if (added) {
            if (r->nrows == r->rcap) {
                size_t nc = r->rcap ? r->rcap * 2 : 256;
                acc_t *acc = pw_realloc(r->acc, nc * r->nb * sizeof(*acc));
                if (acc == NULL)
                    return PW_ENOMEM;
                r->acc = acc;
                r->rcap = nc;
            }
            r->nrows++;
            memset(&r->acc[(size_t)(ri - 1) * r->nb], 0, r->nb * sizeof(acc_t));
        }
        acc_add(&r->acc[(size_t)(ri - 1) * r->nb + b], row->bytes, row->diff, row->allocs,
                row->frees, 1, row->bytes, row->bytes, row->diff, row->diff);
    }
    return 0;
}

typedef struct {
    uint32_t gkey;
    uint32_t row;
} gk_t;

static int gk_cmp(const void *a, const void *b)
{
    uint32_t x = ((const gk_t *)a)->gkey, y = ((const gk_t *)b)->gkey;
    return x < y ? -1 : x > y;
}

/* Encodes one level: rows (sorted by global key) x buckets of `bucket_ms` from index b0. */
static int rollup_encode(pw_buf_t *out, const gk_t *gk, size_t nrows, const acc_t *acc, uint64_t nb,
                         uint64_t bucket_ms, uint64_t b0, pw_buf_t *rowbuf)
{
    pw_buf_reset(out);
    uint8_t ver = ROLLUP_VER;
    int rc = pw_buf_append(out, &ver, 1);
    rc = rc ? rc : pw_buf_put_varint(out, bucket_ms);
    rc = rc ? rc : pw_buf_put_varint(out, b0);
    rc = rc ? rc : pw_buf_put_varint(out, nb);
    rc = rc ? rc : pw_buf_put_varint(out, nrows);
    uint32_t prev = 0;
    for (size_t i = 0; rc == 0 && i < nrows; i++) {
        rc = pw_buf_put_varint(out, gk[i].gkey - prev);
        prev = gk[i].gkey;
    }
    /* Row bodies go to rowbuf; their lengths come first so that a reader can jump. */
    pw_buf_reset(rowbuf);
    for (size_t i = 0; rc == 0 && i < nrows; i++) {
        size_t start = rowbuf->len;
        const acc_t *x = &acc[(size_t)gk[i].row * nb];
        uint64_t pb = 0, pd = 0, pa = 0, pf = 0;
        for (uint64_t k = 0; rc == 0 && k < nb; k++) {
            rc = pw_buf_put_varint(rowbuf, x[k].cnt);
            if (rc != 0 || x[k].cnt == 0)
                continue;
            rc = pw_buf_put_varint(rowbuf, pw_zigzag(x[k].b - pb));
            rc = rc ? rc : pw_buf_put_varint(rowbuf, pw_zigzag(x[k].df - pd));
            rc = rc ? rc : pw_buf_put_varint(rowbuf, pw_zigzag(x[k].a - pa));
            /* frees follow from allocs - diff: store only the departure from that */
            rc = rc ? rc
                    : pw_buf_put_varint(
                          rowbuf, pw_zigzag((x[k].f - pf) - ((x[k].a - pa) - (x[k].df - pd))));
            rc = rc ? rc : pw_buf_put_varint(rowbuf, x[k].b - x[k].bmin);
            rc = rc ? rc : pw_buf_put_varint(rowbuf, x[k].bmax - x[k].b);
            rc = rc ? rc : pw_buf_put_varint(rowbuf, x[k].df - x[k].dmin);
            rc = rc ? rc : pw_buf_put_varint(rowbuf, x[k].dmax - x[k].df);
            pb = x[k].b, pd = x[k].df, pa = x[k].a, pf = x[k].f;
        }
        rc = rc ? rc : pw_buf_put_varint(out, rowbuf->len - start);
    }
    return rc ? rc : pw_buf_append(out, rowbuf->data, rowbuf->len);
}

int pw__store_intern_tag(pw_store_sql_t *q, const uint8_t *t, size_t len, uint32_t *id,
                         pw_diag_t *d)
{
    int added = 0;
    int64_t g = pw_tagdict_intern(&q->tags, t, len, &added);
    if (g < 0)
        return pw_diag_set(d, (int)g, 0, 0, "tags", "global tag table: %s", pw_strerror((int)g));
    if (added) {
        sqlite3_stmt *s = pw__store_stmt(q, S_TAG_INS);
        sqlite3_bind_int64(s, 1, g);
        sqlite3_bind_blob(s, 2, t, (int)len, SQLITE_STATIC);
        int rc = pw__store_run(q, s, d, "insert tag");
        if (rc != 0)
            return rc;
    }
    *id = (uint32_t)g;
    return 0;
}

/* Encodes one level of rows gk[0..nrows) x nb buckets (acc, bucket_ms from index b0) as
 * pages of PAGE_ROWS rows, each compressed and inserted with its key range. */
static int rollup_write(pw_store_sql_t *q, int64_t host_id, int level, uint64_t t0, uint64_t t1,
                        const gk_t *gk, size_t nrows, const acc_t *acc, uint64_t nb,
                        uint64_t bucket_ms, uint64_t b0, pw_buf_t *rowbuf, pw_diag_t *d)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nrows; i += PAGE_ROWS) {
        size_t n = nrows - i < PAGE_ROWS ? nrows - i : PAGE_ROWS;
        rc = rollup_encode(&q->tmp, gk + i, n, acc, nb, bucket_ms, b0, rowbuf);
        if (rc != 0)
            return pw_diag_set(d, rc, 0, 0, "rollups", "encoding: %s", pw_strerror(rc));
        rc = pw__store_zcompress(q, q->tmp.data, q->tmp.len, d);
        if (rc != 0)
            return rc;
        sqlite3_stmt *s = pw__store_stmt(q, S_ROLLUP_INS);
        sqlite3_bind_int64(s, 1, host_id);
        sqlite3_bind_int(s, 2, level);
        sqlite3_bind_int64(s, 3, (int64_t)t0);
        sqlite3_bind_int64(s, 4, (int64_t)t1);
        sqlite3_bind_int64(s, 5, (int64_t)q->tmp.len);
        sqlite3_bind_blob(s, 6, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 7, gk[i].gkey);
        sqlite3_bind_int64(s, 8, gk[i + n - 1].gkey);
        rc = pw__store_run(q, s, d, "insert rollup");
    }
    return rc;
}

/* Computes and writes the `levels` (ROLL_*) rollups of a chunk's records. */
int pw__store_rollup_chunk(pw_store_sql_t *q, int64_t host_id, unsigned width, int fmt,
                           const pw_buf_t *recs, uint64_t t0, uint64_t t1, int levels, pw_diag_t *d)
{
    rollup_t r;
    memset(&r, 0, sizeof(r));
    pw__store_rowmap_init(&r.map);
    r.b0 = t0 / M1_MS;
    r.nb = t1 / M1_MS - r.b0 + 1;
    gk_t *gk = NULL;
    acc_t *acc15 = NULL;
    pw_buf_t rowbuf;
    pw_buf_init(&rowbuf, BLOB_MAX);
    int rc = pw__store_replay(fmt, recs->data, recs->len, width, rollup_cb, &r, d);
    if (rc == PW_ENOMEM)
        rc = pw_diag_set(d, rc, 0, 0, "rollups", "out of memory");
    if (rc == 0 && r.nrows > 0) {
        gk = pw_malloc(r.nrows * sizeof(*gk));
        if (gk == NULL)
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "rollups", "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < r.nrows; i++) {
        uint32_t gid = 0;
        size_t tl;
        const uint8_t *t = pw__store_rowmap_tag(&r.map, (uint32_t)i, &tl);
        rc = pw__store_intern_tag(q, t, tl, &gid, d);
        gk[i].gkey = PW_ROW_KEY(gid, PW_ROW_POOL(r.map.rname[i]));
        gk[i].row = (uint32_t)i;
    }
    if (rc == 0 && r.nrows > 0)
        qsort(gk, r.nrows, sizeof(*gk), gk_cmp);
    if (rc == 0 && r.nrows > 0 && (levels & ROLL_M1))
        rc = rollup_write(q, host_id, PW_STORE_1MIN, t0, t1, gk, r.nrows, r.acc, r.nb, M1_MS, r.b0,
                          &rowbuf, d);
    if (rc == 0 && r.nrows > 0 && (levels & ROLL_M15)) {
        uint64_t c0 = t0 / M15_MS, nc = t1 / M15_MS - c0 + 1;
        acc15 = pw_calloc(r.nrows * nc, sizeof(*acc15));
        if (acc15 == NULL)
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "rollups", "out of memory");
        for (size_t i = 0; rc == 0 && i < r.nrows; i++)
            for (uint64_t k = 0; k < r.nb; k++) {
                const acc_t *x = &r.acc[i * r.nb + k];
                if (x->cnt == 0)
                    continue;
                uint64_t c = (r.b0 + k) * M1_MS / M15_MS - c0;
                acc_add(&acc15[i * nc + c], x->b, x->df, x->a, x->f, x->cnt, x->bmin, x->bmax,
                        x->dmin, x->dmax);
            }
        if (rc == 0)
            rc = rollup_write(q, host_id, PW_STORE_15MIN, t0, t1, gk, r.nrows, acc15, nc, M15_MS,
                              c0, &rowbuf, d);
    }
    pw_free(acc15);
    pw_free(gk);
    pw_free(r.acc);
    pw__store_rowmap_close(&r.map);
    pw_buf_close(&rowbuf);
    return rc;
}

/* ---- 15-min rollups of series pages ------------------------------------------------------ */

/* A series page's rows in 15-min buckets c0 .. c0 + nc - 1. */
typedef struct {
    uint32_t *keys;
    acc_t *acc; /* rows x nc */
    size_t nrows, cap, cur;
    uint64_t c0, nc;
} prollup_t;

static int prow_cb(void *arg, uint32_t gkey)
{
    prollup_t *r = arg;
    for (size_t i = 0; i < r->nrows; i++)
        if (r->keys[i] == gkey) { /* a day page's later segment */
            r->cur = i;
            return 0;
        }
    if (r->nrows == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        uint32_t *k = pw_realloc(r->keys, nc * sizeof(*k));
        if (k == NULL)
            return PW_ENOMEM;
        r->keys = k;
        acc_t *a = pw_realloc(r->acc, nc * r->nc * sizeof(*a));
        if (a == NULL)
            return PW_ENOMEM;
        r->acc = a;
        r->cap = nc;
    }
    r->keys[r->nrows] = gkey;
    memset(&r->acc[r->nrows * r->nc], 0, r->nc * sizeof(acc_t));
    r->cur = r->nrows++;
    return 0;
}

static int prun_cb(void *arg, const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                   uint64_t f)
{
    prollup_t *r = arg;
    for (size_t i = 0; i < n;) {
        uint64_t c = ts[i] / M15_MS;
        size_t j = i + 1;
        while (j < n && ts[j] / M15_MS == c)
            j++;
        if (c < r->c0 || c - r->c0 >= r->nc)
            return PW_ECORRUPT; /* a sample outside the page's [t0, t1] */
        acc_add(&r->acc[r->cur * r->nc + (c - r->c0)], b, df, a, f, (uint32_t)(j - i), b, b, df,
                df);
        i = j;
    }
    return 0;
}

/* Writes the 15-min rollup of the series pages that expire at `cut` (deleted next, in the
 * same transaction) and whose samples no rollup holds yet, unless past the 15-min retention
 * (t1 < m15_cut): one rollup page per series page. `stmt`: S_SERIES_EXPIRING (chunk pages) or
 * S_DAYS_EXPIRING (day pages of either kind, `day` 1). */
static int rollup_series(pw_store_sql_t *q, int stmt, int day, uint64_t cut, uint64_t m15_cut,
                         pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, stmt);
    sqlite3_bind_int64(s, 1, (int64_t)cut);
    sqlite3_bind_int64(s, 2, (int64_t)m15_cut);
    pw_buf_t page, rowbuf;
    pw_buf_init(&page, BLOB_MAX);
    pw_buf_init(&rowbuf, BLOB_MAX);
    int r = 0, rc;
    /* The cursor stays on the pages while rollups (another table) are inserted. */
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t hid = sqlite3_column_int64(s, 0), grp = sqlite3_column_int64(s, 1);
        uint64_t t0 = (uint64_t)sqlite3_column_int64(s, 2),
                 t1 = (uint64_t)sqlite3_column_int64(s, 3);
        prollup_t pr = {.c0 = t0 / M15_MS, .nc = t1 / M15_MS - t0 / M15_MS + 1};
        gk_t *gk = NULL;
        /* a day page of 32 tags has its group stored as -1 - grp */
        int kind = day && grp < 0 ? PW__STORE_PAGE_DAY : day ? PW__STORE_PAGE_DAY4 : 0;
        grp = kind == PW__STORE_PAGE_DAY ? -1 - grp : grp;
        if (t1 < t0 || grp < 0 || grp > UINT32_MAX)
            r = pw_diag_set(d, PW_ECORRUPT, 0, 0, "series",
                            "series page range invalid (%llu..%llu, group %lld)",
                            (unsigned long long)t0, (unsigned long long)t1, (long long)grp);
        r = r ? r
              : pw__store_zdecompress(q, sqlite3_column_blob(s, 5),
                                      (size_t)sqlite3_column_bytes(s, 5),
                                      (uint64_t)sqlite3_column_int64(s, 4), &page, d);
        r = r ? r
              : pw__store_series_page_rows(page.data, page.len, (uint32_t)grp, kind, prow_cb,
                                           prun_cb, &pr, d);
        if (r == PW_ECORRUPT) {
            /* a page that does not decode leaves no rollup: its rows over its times are
             * recorded as lost (it is deleted next, as the others) */
            int shift = kind == PW__STORE_PAGE_DAY4 ? 4 : 7; /* 4 or 32 tags a page */
            int known = t1 >= t0 && grp >= 0 && grp <= (int64_t)(UINT32_MAX >> shift);
            uint32_t k0 = known ? (uint32_t)grp << shift : 0;
            uint32_t k1 = known ? k0 | ((1u << shift) - 1) : UINT32_MAX;
            r = pw__store_gap_damaged(q, hid, known ? t0 : 0, t1, 0, k0, k1,
                                      day ? "day page at expiry" : "chunk page at expiry", d);
            pr.nrows = 0;
        }
        if (r == 0 && pr.nrows > 0 && (gk = pw_malloc(pr.nrows * sizeof(*gk))) == NULL)
            r = pw_diag_set(d, PW_ENOMEM, 0, 0, "rollups", "out of memory");
        for (size_t i = 0; r == 0 && i < pr.nrows; i++)
            gk[i] = (gk_t){pr.keys[i], (uint32_t)i};
        if (r == 0 && pr.nrows > 0) {
            qsort(gk, pr.nrows, sizeof(*gk), gk_cmp);
            r = rollup_write(q, hid, PW_STORE_15MIN, t0, t1, gk, pr.nrows, pr.acc, pr.nc, M15_MS,
                             pr.c0, &rowbuf, d);
        }
        pw_free(gk);
        pw_free(pr.keys);
        pw_free(pr.acc);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "read expiring series pages");
    sqlite3_reset(s);
    pw_buf_close(&page);
    pw_buf_close(&rowbuf);
    return r;
}

/* ---- retention --------------------------------------------------------------------------- */

static int64_t del_count(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d, const char *what)
{
    int rc = pw__store_run(q, s, d, what);
    return rc != 0 ? rc : (int64_t)sqlite3_changes(q->db);
}

/* Writes the 1-min and 15-min rollups of the closed chunks that expire at `raw_cut` (deleted
 * next, in the same transaction), each unless written already or its level would already be
 * gone (t1 < m1_cut, m15_cut). */
static int rollup_expiring(pw_store_sql_t *q, uint64_t raw_cut, uint64_t m1_cut, uint64_t m15_cut,
                           pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_RET_EXPIRING);
    sqlite3_bind_int64(s, 1, (int64_t)raw_cut);
    sqlite3_bind_int64(s, 2, (int64_t)m1_cut);
    sqlite3_bind_int64(s, 3, (int64_t)m15_cut);
    pw_buf_t recs;
    pw_buf_init(&recs, BLOB_MAX);
    int r = 0, rc;
    /* The cursor stays on chunks while rollups and tags are inserted (other tables). */
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t hid = sqlite3_column_int64(s, 0);
        unsigned width = (unsigned)sqlite3_column_int(s, 1);
        uint64_t t0 = (uint64_t)sqlite3_column_int64(s, 2),
                 t1 = (uint64_t)sqlite3_column_int64(s, 3);
        r = pw__store_zdecompress(q, sqlite3_column_blob(s, 5), (size_t)sqlite3_column_bytes(s, 5),
                                  (uint64_t)sqlite3_column_int64(s, 4), &recs, d);
        if (r == 0)
            r = pw__store_rollup_chunk(q, hid, width, sqlite3_column_int(s, 6), &recs, t0, t1,
                                       (sqlite3_column_int(s, 7) ? ROLL_M1 : 0) |
                                           (sqlite3_column_int(s, 8) ? ROLL_M15 : 0),
                                       d);
        if (r == PW_ECORRUPT) {
            /* a chunk that does not decode (one compaction kept as records, pages 2) leaves no
             * rollup: its samples, every row, are recorded as lost (it is deleted next) */
            char what[64];
            snprintf(what, sizeof(what), "chunk %lld at expiry",
                     (long long)sqlite3_column_int64(s, 9));
            r = pw__store_gap_damaged(q, hid, t0, t1, (uint64_t)sqlite3_column_int64(s, 10), 0,
                                      UINT32_MAX, what, d);
        }
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "read expiring chunks");
    sqlite3_reset(s);
    pw_buf_close(&recs);
    return r;
}

int pw__store_vacuum(pw_store_sql_t *q, pw_diag_t *d)
{
    int64_t before = 0, after = 0;
    int rc = pw__store_pragma_int(q, S_FREEPAGES, &before, d);
    if (rc != 0 || before == 0)
        return rc;
    rc = pw__store_exec(q, "PRAGMA incremental_vacuum", d, "incremental_vacuum");
    rc = rc ? rc : pw__store_pragma_int(q, S_FREEPAGES, &after, d);
    if (rc == 0 && after < before)
        q->vacuumed_bytes += (uint64_t)(before - after) * (uint64_t)q->page_size;
    return rc;
}

static int used_bytes(pw_store_sql_t *q, uint64_t *used, pw_diag_t *d)
{
    int64_t pages = 0, freep = 0;
    int rc = pw__store_pragma_int(q, S_PAGES, &pages, d);
    rc = rc ? rc : pw__store_pragma_int(q, S_FREEPAGES, &freep, d);
    *used = (uint64_t)(pages - freep) * (uint64_t)q->page_size;
    return rc;
}

int64_t pw__store_enforce_max_size(pw_store_sql_t *q, pw_diag_t *d)
{
    uint64_t max = q->opts.max_size_bytes, used = 0, step = 3600000;
    int64_t total = 0;
    if (max == 0)
        return 0;
    int rc = used_bytes(q, &used, d);
    while (rc == 0 && used > max) {
        sqlite3_stmt *s = pw__store_stmt(q, S_OLDEST);
        int r = sqlite3_step(s);
        int none = r != SQLITE_ROW || sqlite3_column_type(s, 0) == SQLITE_NULL;
        uint64_t oldest = none ? 0 : (uint64_t)sqlite3_column_int64(s, 0);
        sqlite3_reset(s);
        if (r != SQLITE_ROW)
            return pw__store_sqlfail(q, r, d, "oldest item");
        if (none)
            break; /* only open chunks are left: nothing this policy may drop */
        /* every level at once: raw chunks, rollup pages, series pages */
        static const int evict[] = {S_EVICT_CHUNKS, S_EVICT_ROLLUPS, S_RET_SERIES, S_RET_DAYS};
        int64_t n = 0;
        for (size_t e = 0; e < sizeof(evict) / sizeof(evict[0]); e++) {
            s = pw__store_stmt(q, evict[e]);
            sqlite3_bind_int64(s, 1, (int64_t)(oldest + step));
            int64_t c = del_count(q, s, d, "evict oldest");
            if (c < 0)
                return c;
            n += c;
        }
        /* the host totals' buckets of that time go with them (not counted: rows, not items) */
        int64_t tc = pw__store_totals_evict(q, oldest + step, d);
        if (tc < 0)
            return tc;
        total += n;
        q->evicted += (uint64_t)n;
        step = step < 7 * 86400000ull ? step * 2 : step;
        rc = used_bytes(q, &used, d);
    }
    return rc != 0 ? rc : total;
}

int64_t pw__store_sql_retention(pw_store_sql_t *q, uint64_t now_ms, pw_diag_t *d)
{
    int own = !q->in_txn;
    int rc = pw__store_begin(q, d);
    int64_t total = 0, n = 0;
    if (rc == 0)
        rc = rollup_expiring(q, pw__store_cutoff(now_ms, q->opts.raw_retention_ms),
                             pw__store_cutoff(now_ms, q->opts.m1_retention_ms),
                             pw__store_cutoff(now_ms, q->opts.m15_retention_ms), d);
    if (rc == 0)
        rc = pw__store_totals_retention(q, pw__store_cutoff(now_ms, q->opts.raw_retention_ms),
                                        pw__store_cutoff(now_ms, q->opts.m1_retention_ms),
                                        pw__store_cutoff(now_ms, q->opts.m15_retention_ms), d);
    if (rc == 0) {
        sqlite3_stmt *s = pw__store_stmt(q, S_RET_CHUNKS);
        sqlite3_bind_int64(s, 1, (int64_t)pw__store_cutoff(now_ms, q->opts.raw_retention_ms));
        n = del_count(q, s, d, "retention of raw chunks");
    }
    for (int level = PW_STORE_1MIN; rc == 0 && n >= 0 && level <= PW_STORE_15MIN; level++) {
        total += n;
        uint64_t keep = level == PW_STORE_1MIN ? q->opts.m1_retention_ms : q->opts.m15_retention_ms;
        sqlite3_stmt *s = pw__store_stmt(q, S_RET_ROLLUPS);
        sqlite3_bind_int(s, 1, level);
        sqlite3_bind_int64(s, 2, (int64_t)pw__store_cutoff(now_ms, keep));
        n = del_count(q, s, d, "retention of rollups");
    }
    if (rc == 0 && n >= 0) {
        /* series pages (chunk and day pages) are the 1-min and 15-min levels of paged chunks;
         * they live as long as the chunk, and leave a 15-min rollup when they go */
        total += n;
        uint64_t keep = q->opts.m1_retention_ms > q->opts.raw_retention_ms
                            ? q->opts.m1_retention_ms
                            : q->opts.raw_retention_ms;
        uint64_t cut = pw__store_cutoff(now_ms, keep);
        uint64_t m15_cut = pw__store_cutoff(now_ms, q->opts.m15_retention_ms);
        rc = rollup_series(q, S_SERIES_EXPIRING, 0, cut, m15_cut, d);
        rc = rc ? rc : rollup_series(q, S_DAYS_EXPIRING, 1, cut, m15_cut, d);
        for (int st = 0; rc == 0 && n >= 0 && st < 2; st++) {
            sqlite3_stmt *s = pw__store_stmt(q, st ? S_RET_DAYS : S_RET_SERIES);
            sqlite3_bind_int64(s, 1, (int64_t)cut);
            int64_t c = del_count(q, s, d, "retention of series pages");
            n = c < 0 ? c : st ? n + c : c;
        }
    }
    if (rc == 0 && n >= 0) {
        total += n;
        sqlite3_stmt *s = pw__store_stmt(q, S_RET_GAPS);
        sqlite3_bind_int64(s, 1, (int64_t)pw__store_cutoff(now_ms, q->opts.m15_retention_ms));
        n = del_count(q, s, d, "retention of gaps");
        total += n > 0 ? n : 0;
    }
    if (rc == 0 && n >= 0) {
        sqlite3_stmt *s = pw__store_stmt(q, S_RET_EVENTS);
        sqlite3_bind_int64(s, 1, (int64_t)pw__store_cutoff(now_ms, q->opts.m15_retention_ms));
        n = del_count(q, s, d, "retention of pool events");
        total += n > 0 ? n : 0;
    }
    if (rc == 0 && n < 0)
        rc = (int)n;
    if (rc == 0 && (n = pw__store_enforce_max_size(q, d)) < 0)
        rc = (int)n;
    else if (rc == 0)
        total += n;
    /* Retention's freed pages go back to the file system now, not at the next VACUUM. */
    if (rc == 0)
        rc = pw__store_vacuum(q, d);
    if (rc != 0) {
        pw__store_abort_txn(q);
        return rc;
    }
    if (own && (rc = pw__store_sql_commit(q, d)) != 0)
        return rc;
    return total;
}
