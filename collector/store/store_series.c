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
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_internal.h"

#define SERIES_VER 1
#define GRP_SHIFT  7 /* 32 tags x 4 pools per page */
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

#define NCOL 5 /* event flags and index gaps, allocs, diff, bytes, frees */

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

static void sbuild_free(sbuild_t *b)
{
    pw_free(b->ts);
    pw_free(b->rows);
    pw__store_rowmap_close(&b->map);
    pw_free(b->ev);
}

/* Writes the pages of chunk `chunk_id` from the rows and events in `b` (freed here) and marks
 * the chunk paged. */
static int write_pages(pw_store_sql_t *q, sbuild_t *pb, int64_t chunk_id, int64_t host_id,
                       pw_diag_t *d)
{
    sbuild_t b = *pb;
    gk_t *order = NULL;
    uint32_t *start = NULL;
    ev_t *byrow = NULL;
    pw_buf_t col[NCOL];
    for (int c = 0; c < NCOL; c++)
        pw_buf_init(&col[c], BLOB_MAX);
    int rc = 0;
    if (rc == 0 && b.nrows > 0) {
        order = pw_malloc(b.nrows * sizeof(*order));
        start = pw_calloc(b.nrows + 1, sizeof(*start));
        byrow = pw_malloc((b.nev ? b.nev : 1) * sizeof(*byrow));
        if (order == NULL || start == NULL || byrow == NULL)
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
    for (size_t i = 0; rc == 0 && i < b.nrows;) {
        uint32_t grp = order[i].gkey >> GRP_SHIFT;
        size_t j = i;
        while (j < b.nrows && order[j].gkey >> GRP_SHIFT == grp)
            j++;
        pw_buf_t *out = &q->tmp;
        pw_buf_reset(out);
        for (int c = 0; c < NCOL; c++)
            pw_buf_reset(&col[c]);
        uint8_t ver = SERIES_VER;
        rc = pw_buf_append(out, &ver, 1);
        rc = rc ? rc : pw_buf_put_varint(out, b.nts);
        for (size_t k = 0; rc == 0 && k < b.nts; k++)
            rc = pw_buf_put_varint(out, k ? b.ts[k] - b.ts[k - 1] : b.ts[0]);
        rc = rc ? rc : pw_buf_put_varint(out, j - i);
        uint32_t prev = grp << GRP_SHIFT;
        for (size_t k = i; rc == 0 && k < j; k++) {
            rc = pw_buf_put_varint(out, order[k].gkey - prev);
            prev = order[k].gkey;
        }
        for (size_t k = i; rc == 0 && k < j; k++) {
            uint32_t r = order[k].row;
            rc = put_events(col, byrow + start[r], start[r + 1] - start[r]);
            rc = rc ? rc : pw_buf_put_varint(out, start[r + 1] - start[r]);
        }
        for (int c = 0; rc == 0 && c < NCOL; c++)
            rc = pw_buf_put_varint(out, col[c].len);
        for (int c = 0; rc == 0 && c < NCOL; c++)
            rc = pw_buf_append(out, col[c].data, col[c].len);
        if (rc != 0) {
            rc = pw_diag_set(d, rc, 0, 0, "series", "encoding: %s", pw_strerror(rc));
            break;
        }
        int level = q->opts.zstd_level < SERIES_ZSTD_MAX ? q->opts.zstd_level : SERIES_ZSTD_MAX;
        rc = pw__store_zcompress_at(q, out->data, out->len, level, d);
        if (rc != 0)
            break;
        sqlite3_stmt *s = pw__store_stmt(q, S_SERIES_INS);
        sqlite3_bind_int64(s, 1, chunk_id);
        sqlite3_bind_int64(s, 2, host_id);
        sqlite3_bind_int64(s, 3, grp);
        sqlite3_bind_int64(s, 4, (int64_t)t0);
        sqlite3_bind_int64(s, 5, (int64_t)t1);
        sqlite3_bind_int64(s, 6, (int64_t)out->len);
        sqlite3_bind_blob(s, 7, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
        rc = pw__store_run(q, s, d, "insert series page");
        i = j;
    }
    if (rc == 0) {
        sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_PAGED);
        sqlite3_bind_int64(s, 1, chunk_id);
        sqlite3_bind_int(s, 2, 1);
        rc = pw__store_run(q, s, d, "mark chunk paged");
    }
    for (int c = 0; c < NCOL; c++)
        pw_buf_close(&col[c]);
    pw_free(order);
    pw_free(start);
    pw_free(byrow);
    sbuild_free(&b);
    return rc;
}

int pw__store_series_write(pw_store_sql_t *q, int64_t chunk_id, int64_t host_id, unsigned width,
                           int fmt, const pw_buf_t *recs, pw_diag_t *d)
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
    return write_pages(q, &b, chunk_id, host_id, d);
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
    return rc ? pw_diag_set(d, rc, 0, 0, "series", "out of memory") : 0;
}

/* Emits the points of row `gkey` held by one decompressed page. */
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

static int page_read(const uint8_t *p, size_t len, uint32_t gkey, uint64_t from, uint64_t to,
                     pw__store_run_fn fn, void *sr, uint64_t **ts, size_t *tscap, pw_diag_t *d)
{
    size_t off = 1;
    uint64_t nts, nrows, v;
    if (len < 1 || p[0] != SERIES_VER || vget(p, len, &off, &nts) || nts > len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series page header invalid");
    if (grow((void **)ts, tscap, nts ? nts : 1, sizeof(uint64_t)) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    uint64_t t = 0;
    for (uint64_t k = 0; k < nts; k++) {
        if (vget(p, len, &off, &v))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series times truncated");
        t += v;
        (*ts)[k] = t;
    }
    if (vget(p, len, &off, &nrows) || nrows > len)
        return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series rows invalid");
    uint64_t key = (uint64_t)(gkey >> GRP_SHIFT) << GRP_SHIFT, row = UINT64_MAX;
    for (uint64_t i = 0; i < nrows; i++) {
        if (vget(p, len, &off, &v))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series keys truncated");
        key += v;
        if (key == gkey)
            row = i;
    }
    uint64_t skip = 0, nev = 0; /* events of the rows before `row`, and of `row` */
    for (uint64_t i = 0; i < nrows; i++) {
        if (vget(p, len, &off, &v) || v > len)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series counts invalid");
        if (i < row)
            skip += v;
        else if (i == row)
            nev = v;
    }
    /* the columns: where each starts, checked against the page */
    const uint8_t *cp[NCOL];
    size_t cl[NCOL], co[NCOL] = {0}, at = 0;
    for (int c = 0; c < NCOL; c++)
        if (vget(p, len, &off, &v) || v > len) {
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series columns invalid");
        } else {
            cl[c] = (size_t)v;
        }
    for (int c = 0; c < NCOL; c++) {
        if (cl[c] > len - off - at)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "series column outside the page");
        cp[c] = p + off + at;
        at += cl[c];
    }
    if (row == UINT64_MAX)
        return 0;
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
    uint64_t pa = 0, pf = 0, pd = 0, pb = 0, idx = 0;
    int present = 0;
    for (uint64_t n = 0;; n++) {
        int end = n >= nev; /* after the last event: the row holds until the chunk's end */
        uint64_t e = 0, x[NCOL];
        if (!end && vget(cp[0], cl[0], &co[0], &e))
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row truncated");
        uint64_t next = end ? nts : idx + (e >> 1);
        if (next > nts || next < idx)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row index invalid");
        /* the samples from the previous event up to this one hold the previous values */
        if (present) {
            int rc = emit_run(*ts, idx, next, from, to, pb, pd, pa, pf, fn, sr, d);
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
        for (int c = 1; c < NCOL; c++)
            if (vget(cp[c], cl[c], &co[c], &x[c]))
                return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row truncated");
        uint64_t da = pw_unzigzag(x[1]), dd = pw_unzigzag(x[2]);
        uint64_t pred = pb + (pd ? dd * (pb / pd) : 0);
        pb = pred + pw_unzigzag(x[3]);
        pf += pw_unzigzag(x[4]) + (da - dd);
        pa += da, pd += dd;
        present = 1;
        if (idx >= nts)
            return pw_diag_set(d, PW_ECORRUPT, 0, off, "series", "row index invalid");
    }
}

int pw__store_series_read(pw_store_sql_t *q, int64_t hid, uint32_t gkey, uint64_t from, uint64_t to,
                          int m15_only, pw__store_run_fn fn, void *sr, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, m15_only ? S_SERIES_RANGE15 : S_SERIES_RANGE);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, gkey >> GRP_SHIFT);
    sqlite3_bind_int64(s, 3, (int64_t)pw__store_cutoff(from, q->opts.chunk_window_ms));
    sqlite3_bind_int64(s, 4, (int64_t)to);
    sqlite3_bind_int64(s, 5, (int64_t)from);
    uint64_t *ts = NULL;
    size_t tscap = 0;
    int rc = 0, r;
    while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
        rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                                   (uint64_t)sqlite3_column_int64(s, 0), &q->tmp, d);
        if (rc == 0)
            rc = page_read(q->tmp.data, q->tmp.len, gkey, from, to, fn, sr, &ts, &tscap, d);
    }
    if (rc == 0 && r != SQLITE_DONE)
        rc = pw__store_sqlfail(q, r, d, "read series pages");
    sqlite3_reset(s);
    pw_free(ts);
    return rc;
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
    int fmt = sqlite3_column_int(s, 5);
    q->unpaged_from = id + 1;
    int rc = pw__store_zdecompress(q, sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4),
                                   (uint64_t)sqlite3_column_int64(s, 3), &q->recs, d);
    sqlite3_reset(s);
    if (rc == 0)
        rc = pw__store_series_write(q, id, hid, width, fmt, &q->recs, d);
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
    /* the page writer's form: rows with their tags, events with absolute values */
    sbuild_t b;
    memset(&b, 0, sizeof(b));
    size_t nev = 0;
    for (size_t i = 0; i < lv->nrows; i++) {
        size_t off = 0;
        uint32_t idx = 0;
        uint64_t v[4] = {0};
        while (row_next(&lv->rows[i], &off, &idx, v) >= 0)
            nev++;
    }
    int rc = 0;
    b.ts = lv->ts, b.nts = lv->nts, b.tscap = lv->tscap;
    lv->ts = NULL, lv->tscap = 0;
    if ((b.rows = pw_calloc(lv->nrows ? lv->nrows : 1, sizeof(*b.rows))) == NULL ||
        (b.ev = pw_malloc((nev ? nev : 1) * sizeof(*b.ev))) == NULL)
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "series", "out of memory");
    for (size_t i = 0; rc == 0 && i < lv->nrows; i++) {
        const lrow_t *r = &lv->rows[i];
        srow_t *o = &b.rows[b.nrows++];
        o->lkey = r->lkey;
        memcpy(o->tag, lv->tags + r->tag_off, r->tlen);
        o->tlen = r->tlen;
        size_t off = 0;
        uint32_t idx = 0;
        uint64_t v[4] = {0};
        int k;
        while ((k = row_next(r, &off, &idx, v)) >= 0)
            b.ev[b.nev++] = (ev_t){(uint32_t)i, idx, (uint32_t)k, v[0], v[3], v[1], v[2]};
    }
    live_free(lv);
    if (rc != 0) {
        sbuild_free(&b);
        return rc;
    }
    rc = write_pages(q, &b, chunk_id, host_id, d);
    return rc != 0 ? rc : 1;
}
