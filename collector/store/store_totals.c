/* store_totals.c: a host's pool totals over time (schema 8): nonpaged and paged bytes in use and
 * the limits as each sample had them, kept per 1-min and 15-min bucket in table `totals`, so a
 * host's pool chart reads a few hundred small rows for 6 h ... 30 d instead of replaying every raw
 * chunk (which hold them only for the raw retention, 48 h by default).
 *
 * A host's open chunk keeps its samples' buckets in memory (pw__store_hot_t) and writes them
 * when it is sealed (and at a clean close), in that transaction: a group commit of one sample then
 * writes its record's pages and no totals page (two UPSERTs per put rewrote ~one 16-KB page of the
 * WAL per commit). Every chunk is listed in `totals_todo` from its first sample until its buckets
 * are written, so that after a crash (or a rollback that forgot the memory) its samples, durable
 * in the chunk, are replayed by queries and written by compaction once the chunk is sealed, as
 * for the chunks stored before schema 8: a query replays the listed chunks in its range except
 * the open ones it has in memory, compaction writes the sealed ones in the background (oldest
 * first), and retention those about to expire. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_internal.h"

enum {
    T_UPSERT,
    T_RANGE,
    T_TODO_RANGE,
    T_TODO_NEXT,
    T_TODO_DEL,
    T_TODO_ADD,
    T_TODO_EXPIRING,
    T_RETAIN,
    T_EVICT,
    T__COUNT
};

struct pw__store_tot_s {
    sqlite3_stmt *st[T__COUNT];
    pw_buf_t buf; /* a legacy chunk's records */
};

/* A bucket's or a sample's totals, merged into the buckets and the steps of an answer: the last
 * values are the sample with the greatest time (last_ms), whatever order they come in. */
typedef struct {
    uint64_t t, last_ms, n;
    uint64_t np, np_min, np_max, pg, pg_min, pg_max, np_limit, pg_limit;
} tacc_t;

static const char *const tot_sql[T__COUNT] = {
    /* One sample (n = 1, min = max = the value) or a bucket's aggregate into (host, level, t). */
    [T_UPSERT] =
        "INSERT INTO totals(host_id, level, t_ms, n, last_ms, np, np_min, np_max, pg, pg_min,"
        " pg_max, np_limit, pg_limit) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
        "?13)"
        " ON CONFLICT(host_id, level, t_ms) DO UPDATE SET n = n + excluded.n,"
        " np_min = min(np_min, excluded.np_min), np_max = max(np_max, excluded.np_max),"
        " pg_min = min(pg_min, excluded.pg_min), pg_max = max(pg_max, excluded.pg_max),"
        " np = CASE WHEN excluded.last_ms >= last_ms THEN excluded.np ELSE np END,"
        " pg = CASE WHEN excluded.last_ms >= last_ms THEN excluded.pg ELSE pg END,"
        " np_limit = CASE WHEN excluded.last_ms >= last_ms THEN excluded.np_limit ELSE np_limit "
        "END,"
        " pg_limit = CASE WHEN excluded.last_ms >= last_ms THEN excluded.pg_limit ELSE pg_limit "
        "END,"
        " last_ms = max(last_ms, excluded.last_ms)",
    [T_RANGE] =
        "SELECT t_ms, n, last_ms, np, np_min, np_max, pg, pg_min, pg_max, np_limit, pg_limit"
        " FROM totals WHERE host_id=?1 AND level=?2 AND t_ms BETWEEN ?3 AND ?4"
        " ORDER BY t_ms",
    /* Chunks reach at most one window before their first sample: as store_query.c reads them */
    [T_TODO_RANGE] = "SELECT c.id, c.counter_width, c.raw_size, c.data, c.fmt FROM totals_todo t"
                     " JOIN chunks c ON c.id=t.chunk_id WHERE c.host_id=?1"
                     " AND c.t0_ms BETWEEN ?2 AND ?3 AND (c.data IS NULL OR c.t1_ms >= ?4)"
                     " ORDER BY c.t0_ms, c.id",
    /* oldest first: they expire first; a chunk still open (left open by the release before
     * schema 8, sealed at its host's next put) waits until it is sealed */
    [T_TODO_NEXT] = "SELECT c.id, c.host_id, c.counter_width, c.raw_size, c.data, c.fmt"
                    " FROM totals_todo t JOIN chunks c ON c.id=t.chunk_id"
                    " WHERE c.data IS NOT NULL OR c.sealed=1 ORDER BY c.t1_ms, c.id LIMIT 1",
    [T_TODO_DEL] = "DELETE FROM totals_todo WHERE chunk_id=?1",
    [T_TODO_ADD] = "INSERT INTO totals_todo(chunk_id) VALUES(?1)",
    [T_TODO_EXPIRING] = "SELECT c.id, c.host_id, c.counter_width, c.raw_size, c.data, c.fmt"
                        " FROM totals_todo t JOIN chunks c ON c.id=t.chunk_id"
                        " WHERE c.data IS NOT NULL AND c.t1_ms < ?1 ORDER BY c.id LIMIT 1",
    /* per host: the primary key (host_id, level, t_ms) finds each host's old buckets */
    [T_RETAIN] = "DELETE FROM totals WHERE host_id IN (SELECT id FROM hosts) AND level=?1"
                 " AND t_ms <= ?2",
    [T_EVICT] = "DELETE FROM totals WHERE host_id IN (SELECT id FROM hosts) AND level IN (1, 2)"
                " AND t_ms < ?1",
};

int pw__store_totals_open(pw_store_sql_t *q, pw_diag_t *d)
{
    q->tot = pw_calloc(1, sizeof(*q->tot));
    if (q->tot == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "totals", "out of memory");
    pw_buf_init(&q->tot->buf, BLOB_MAX);
    for (int i = 0; i < T__COUNT; i++) {
        int r = sqlite3_prepare_v3(q->db, tot_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &q->tot->st[i],
                                   NULL);
        if (r != SQLITE_OK)
            return pw__store_sqlfail(q, r, d, tot_sql[i]);
    }
    return 0;
}

void pw__store_totals_close(pw_store_sql_t *q)
{
    if (q->tot == NULL)
        return;
    for (int i = 0; i < T__COUNT; i++)
        sqlite3_finalize(q->tot->st[i]);
    pw_buf_close(&q->tot->buf);
    pw_free(q->tot);
    q->tot = NULL;
}

static sqlite3_stmt *tstmt(pw_store_sql_t *q, int i)
{
    sqlite3_stmt *s = q->tot->st[i];
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

static void acc_sample(tacc_t *a, uint64_t t, uint64_t ts, const pw_totals_t *tot)
{
    *a = (tacc_t){t,
                  ts,
                  1,
                  tot->nonpaged_bytes,
                  tot->nonpaged_bytes,
                  tot->nonpaged_bytes,
                  tot->paged_bytes,
                  tot->paged_bytes,
                  tot->paged_bytes,
                  tot->nonpaged_limit_bytes,
                  tot->paged_limit_bytes};
}

/* Merges `b` into `a` (same bucket or step). */
static void acc_merge(tacc_t *a, const tacc_t *b)
{
    if (b->last_ms >= a->last_ms) {
        a->np = b->np, a->pg = b->pg;
        a->np_limit = b->np_limit, a->pg_limit = b->pg_limit;
        a->last_ms = b->last_ms;
    }
    a->np_min = b->np_min < a->np_min ? b->np_min : a->np_min;
    a->np_max = b->np_max > a->np_max ? b->np_max : a->np_max;
    a->pg_min = b->pg_min < a->pg_min ? b->pg_min : a->pg_min;
    a->pg_max = b->pg_max > a->pg_max ? b->pg_max : a->pg_max;
    a->n += b->n;
}

static int upsert(pw_store_sql_t *q, int64_t host_id, int level, const tacc_t *a, pw_diag_t *d)
{
    sqlite3_stmt *s = tstmt(q, T_UPSERT);
    const uint64_t v[] = {a->t,  a->n,      a->last_ms, a->np,       a->np_min,  a->np_max,
                          a->pg, a->pg_min, a->pg_max,  a->np_limit, a->pg_limit};
    sqlite3_bind_int64(s, 1, host_id);
    sqlite3_bind_int(s, 2, level);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        sqlite3_bind_int64(s, (int)i + 3, (int64_t)v[i]);
    return pw__store_run(q, s, d, "write host totals");
}

/* ---- the open chunk's buckets, in memory until it is sealed ----------------------------- */

/* The 1-min buckets of chunk `chunk_id`'s samples, in time order (a chunk's samples are: a put
 * older than the chunk's newest sample starts another chunk). broken: a bucket could not be
 * kept (out of memory): the chunk stays listed and is replayed like one left by a crash. */
struct pw__store_hot_s {
    int64_t chunk_id;
    int broken;
    tacc_t *v;
    size_t n, cap;
};

void pw__store_totals_drop(pw_store_hstate_t *hs)
{
    if (hs->hot != NULL)
        pw_free(hs->hot->v);
    pw_free(hs->hot);
    hs->hot = NULL;
}

int pw__store_totals_chunk_new(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d)
{
    sqlite3_stmt *s = tstmt(q, T_TODO_ADD);
    sqlite3_bind_int64(s, 1, hs->chunk_id);
    int rc = pw__store_run(q, s, d, "list a chunk's totals");
    if (rc != 0)
        return rc;
    if (hs->hot == NULL && (hs->hot = pw_calloc(1, sizeof(*hs->hot))) == NULL)
        return 0; /* listed: replayed as after a crash */
    hs->hot->chunk_id = hs->chunk_id;
    hs->hot->broken = 0;
    hs->hot->n = 0;
    return 0;
}

/* The open chunk's buckets when this process holds all of them, else NULL. */
static const pw__store_hot_t *hot_of(const pw_store_hstate_t *hs)
{
    const pw__store_hot_t *h = hs->hot;
    return h != NULL && hs->chunk_id != 0 && h->chunk_id == hs->chunk_id && !h->broken ? h : NULL;
}

void pw__store_totals_put(pw_store_hstate_t *hs, uint64_t ts, const pw_totals_t *t)
{
    pw__store_hot_t *h = hs->hot;
    if (h == NULL || h->chunk_id != hs->chunk_id || h->broken)
        return;
    tacc_t a;
    acc_sample(&a, ts - ts % M1_MS, ts, t);
    if (h->n > 0 && h->v[h->n - 1].t == a.t) {
        acc_merge(&h->v[h->n - 1], &a);
        return;
    }
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        tacc_t *nv = pw_realloc(h->v, nc * sizeof(*nv));
        if (nv == NULL) {
            h->broken = 1;
            return;
        }
        h->v = nv;
        h->cap = nc;
    }
    h->v[h->n++] = a;
}

int pw__store_totals_seal(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d)
{
    const pw__store_hot_t *h = hot_of(hs);
    if (h == NULL) {
        /* a chunk of a previous run, or its buckets lost: compaction replays it */
        if (hs->chunk_id != 0)
            q->totals_todo = 1;
        return 0;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < h->n; i++)
        rc = upsert(q, hs->id, PW_STORE_1MIN, &h->v[i], d);
    /* the 15-min buckets from the 1-min ones, as a replay writes them (backfill_row) */
    for (size_t i = 0; rc == 0 && i < h->n;) {
        tacc_t a = h->v[i];
        a.t -= a.t % M15_MS;
        for (i++; i < h->n && h->v[i].t - h->v[i].t % M15_MS == a.t; i++)
            acc_merge(&a, &h->v[i]);
        rc = upsert(q, hs->id, PW_STORE_15MIN, &a, d);
    }
    if (rc == 0) {
        sqlite3_stmt *del = tstmt(q, T_TODO_DEL);
        sqlite3_bind_int64(del, 1, hs->chunk_id);
        rc = pw__store_run(q, del, d, "totals of a chunk written");
    }
    if (rc == 0)
        hs->hot->chunk_id = 0; /* written: a later seal of this chunk (after a reopen) adds none */
    return rc;
}

/* ---- chunks stored before schema 8 ------------------------------------------------------ */

/* Samples as (bucket or step) partials, in any order; sorted and merged at the end. */
typedef struct {
    tacc_t *v;
    size_t n, cap;
    uint64_t step, from, to; /* samples outside [from, to] are skipped; step 0: one per sample */
} tvec_t;

static int tvec_push(tvec_t *tv, const tacc_t *a)
{
    if (tv->n == tv->cap) {
        size_t nc = tv->cap ? tv->cap * 2 : 256;
        tacc_t *nv = pw_realloc(tv->v, nc * sizeof(*nv));
        if (nv == NULL)
            return PW_ENOMEM;
        tv->v = nv;
        tv->cap = nc;
    }
    tv->v[tv->n++] = *a;
    return 0;
}

static int tvec_sample_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)seq;
    tvec_t *tv = arg;
    uint64_t ts = dd->timestamp_ms;
    if (ts < tv->from || ts > tv->to)
        return 0;
    tacc_t a;
    acc_sample(&a, tv->step ? ts - ts % tv->step : ts, ts, &dd->totals);
    int rc = tvec_push(tv, &a);
    return rc ? pw_diag_set(d, rc, 0, 0, "totals", "out of memory") : 0;
}

static int tacc_cmp(const void *x, const void *y)
{
    const tacc_t *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->last_ms < b->last_ms ? -1 : a->last_ms > b->last_ms;
}

/* Sorts the partials by time and merges those of one step (or bucket). */
static void tvec_merge(tvec_t *tv)
{
    if (tv->n < 2)
        return;
    qsort(tv->v, tv->n, sizeof(*tv->v), tacc_cmp);
    size_t o = 0;
    for (size_t i = 1; i < tv->n; i++) {
        if (tv->v[i].t == tv->v[o].t)
            acc_merge(&tv->v[o], &tv->v[i]);
        else
            tv->v[++o] = tv->v[i];
    }
    tv->n = o + 1;
}

/* Replays chunk `id` (its blob, or its rows when `data` is NULL) into tv. */
static int replay_chunk(pw_store_sql_t *q, int64_t id, unsigned width, const void *data,
                        size_t dlen, uint64_t raw, int fmt, tvec_t *tv, pw_diag_t *d)
{
    int rc = pw__store_load_chunk(q, id, data, dlen, raw, &q->tot->buf, d);
    if (rc == 0)
        rc = pw__store_replay(data != NULL ? fmt : PW_CHUNK_RECORDS, q->tot->buf.data,
                              q->tot->buf.len, width, tvec_sample_cb, tv, d);
    return rc;
}

/* Writes the buckets of a legacy chunk (the cursor's row of T_TODO_NEXT / T_TODO_EXPIRING,
 * reset here) and takes it off the list. A chunk that does not decode is taken off as well
 * (read raw, it fails there as before): its totals are lost with its samples. */
static int backfill_row(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d)
{
    int64_t id = sqlite3_column_int64(s, 0), hid = sqlite3_column_int64(s, 1);
    unsigned width = (unsigned)sqlite3_column_int(s, 2);
    tvec_t tv = {NULL, 0, 0, M1_MS, 0, UINT64_MAX};
    int rc =
        replay_chunk(q, id, width, sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4),
                     (uint64_t)sqlite3_column_int64(s, 3), sqlite3_column_int(s, 5), &tv, d);
    sqlite3_reset(s);
    if (rc == PW_ECORRUPT)
        tv.n = 0, rc = 0;
    tvec_merge(&tv);
    for (size_t i = 0; rc == 0 && i < tv.n; i++)
        rc = upsert(q, hid, PW_STORE_1MIN, &tv.v[i], d);
    /* the 15-min buckets from the 1-min ones */
    for (size_t i = 0; i < tv.n; i++)
        tv.v[i].t -= tv.v[i].t % M15_MS;
    tvec_merge(&tv);
    for (size_t i = 0; rc == 0 && i < tv.n; i++)
        rc = upsert(q, hid, PW_STORE_15MIN, &tv.v[i], d);
    pw_free(tv.v);
    if (rc == 0) {
        sqlite3_stmt *del = tstmt(q, T_TODO_DEL);
        sqlite3_bind_int64(del, 1, id);
        rc = pw__store_run(q, del, d, "totals of a chunk written");
    }
    return rc;
}

static int backfill_next(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d)
{
    int r = sqlite3_step(s);
    if (r == SQLITE_DONE) {
        sqlite3_reset(s);
        return 0;
    }
    if (r != SQLITE_ROW) {
        r = pw__store_sqlfail(q, r, d, "find chunks without totals");
        sqlite3_reset(s);
        return r;
    }
    r = backfill_row(q, s, d);
    return r != 0 ? r : 1;
}

int pw__store_totals_backfill_one(pw_store_sql_t *q, pw_diag_t *d)
{
    return backfill_next(q, tstmt(q, T_TODO_NEXT), d);
}

int pw__store_totals_retention(pw_store_sql_t *q, uint64_t raw_cut, uint64_t m1_cut,
                               uint64_t m15_cut, pw_diag_t *d)
{
    /* legacy chunks about to be deleted give their totals first */
    int r;
    do {
        sqlite3_stmt *s = tstmt(q, T_TODO_EXPIRING);
        sqlite3_bind_int64(s, 1, (int64_t)raw_cut);
        r = backfill_next(q, s, d);
    } while (r > 0);
    /* a bucket goes when its whole span is older than the level's retention */
    static const struct {
        int level;
        uint64_t bucket;
    } lv[] = {{PW_STORE_1MIN, M1_MS}, {PW_STORE_15MIN, M15_MS}};
    for (size_t i = 0; r == 0 && i < 2; i++) {
        uint64_t cut = i == 0 ? m1_cut : m15_cut;
        if (cut < lv[i].bucket)
            continue;
        sqlite3_stmt *s = tstmt(q, T_RETAIN);
        sqlite3_bind_int(s, 1, lv[i].level);
        sqlite3_bind_int64(s, 2, (int64_t)(cut - lv[i].bucket));
        r = pw__store_run(q, s, d, "retention of host totals");
    }
    return r;
}

int64_t pw__store_totals_evict(pw_store_sql_t *q, uint64_t before_ms, pw_diag_t *d)
{
    sqlite3_stmt *s = tstmt(q, T_EVICT);
    sqlite3_bind_int64(s, 1, (int64_t)before_ms);
    int rc = pw__store_run(q, s, d, "evict host totals");
    return rc != 0 ? rc : (int64_t)sqlite3_changes(q->db);
}

/* ---- queries ----------------------------------------------------------------------------- */

static int raw_cb(void *arg, uint64_t ts_ms, const pw_totals_t *t)
{
    tvec_t *tv = arg;
    tacc_t a;
    acc_sample(&a, tv->step ? ts_ms - ts_ms % tv->step : ts_ms, ts_ms, t);
    return tvec_push(tv, &a);
}

int64_t pw__store_sql_totals_series(pw_store_sql_t *q, const char *host, uint64_t from_ms,
                                    uint64_t to_ms, uint64_t step_ms, int replay,
                                    pw_store_tseries_t *out, pw_diag_t *d)
{
    int64_t hid = 0;
    int rc = pw__store_host_id(q, host, &hid, d);
    if (rc != 0)
        return rc;
    int level = step_ms < M1_MS ? PW_STORE_RAW : step_ms < M15_MS ? PW_STORE_1MIN : PW_STORE_15MIN;
    uint64_t bucket = level == PW_STORE_1MIN ? M1_MS : level == PW_STORE_15MIN ? M15_MS : 1;
    /* a step holds whole buckets; the answer covers the buckets that overlap the range */
    uint64_t step = level == PW_STORE_RAW ? step_ms : (step_ms + bucket - 1) / bucket * bucket;
    uint64_t from = from_ms - from_ms % bucket;
    tvec_t tv = {NULL, 0, 0, step, from, to_ms};
    if (level == PW_STORE_RAW) {
        rc = pw__store_sql_totals(q, host, from, to_ms, raw_cb, &tv, d);
        if (rc == PW_ENOMEM)
            rc = pw_diag_set(d, rc, 0, 0, "totals", "out of memory");
    } else {
        sqlite3_stmt *s = tstmt(q, T_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int(s, 2, level);
        sqlite3_bind_int64(s, 3, (int64_t)from);
        sqlite3_bind_int64(s, 4, (int64_t)to_ms);
        int r;
        while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
            uint64_t v[11];
            for (int i = 0; i < 11; i++)
                v[i] = (uint64_t)sqlite3_column_int64(s, i);
            tacc_t a = {
                v[0] - v[0] % step, v[2], v[1], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]};
            if (tvec_push(&tv, &a) != 0)
                rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "totals", "out of memory");
        }
        if (rc == 0 && r != SQLITE_DONE)
            rc = pw__store_sqlfail(q, r, d, "read host totals");
        sqlite3_reset(s);
        /* the open chunk's buckets, held in memory until it is sealed, as if they were rows */
        const pw_store_hstate_t *hs = pw__store_host_find(q, host);
        const pw__store_hot_t *h = hs != NULL ? hot_of(hs) : NULL;
        int64_t in_memory = h != NULL ? hs->chunk_id : 0;
        for (size_t i = 0; rc == 0 && h != NULL && i < h->n; i++) {
            tacc_t a = h->v[i];
            a.t -= a.t % bucket;
            if (a.t < from || a.t > to_ms)
                continue;
            a.t -= a.t % step;
            if (tvec_push(&tv, &a) != 0)
                rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "totals", "out of memory");
        }
        /* chunks whose buckets are not written yet (stored before schema 8, or left open by a
         * previous run): replayed */
        s = tstmt(q, T_TODO_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int64(s, 2, (int64_t)pw__store_cutoff(from, q->opts.chunk_window_ms));
        sqlite3_bind_int64(s, 3, (int64_t)to_ms);
        sqlite3_bind_int64(s, 4, (int64_t)from);
        while (rc == 0 && replay && (r = sqlite3_step(s)) == SQLITE_ROW)
            if (sqlite3_column_int64(s, 0) != in_memory)
                rc = replay_chunk(q, sqlite3_column_int64(s, 0), (unsigned)sqlite3_column_int(s, 1),
                                  sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3),
                                  (uint64_t)sqlite3_column_int64(s, 2), sqlite3_column_int(s, 4),
                                  &tv, d);
        if (rc == 0 && replay && r != SQLITE_DONE)
            rc = pw__store_sqlfail(q, r, d, "read chunks without totals");
        sqlite3_reset(s);
    }
    if (rc != 0) {
        pw_free(tv.v);
        return rc;
    }
    if (step > 0)
        tvec_merge(&tv);
    else if (tv.n > 1)
        qsort(tv.v, tv.n, sizeof(*tv.v), tacc_cmp);
    pw_store_tseries_free(out);
    out->level = (pw_store_level_t)level;
    out->step_ms = step;
    if (tv.n > 0 && (out->points = pw_malloc(tv.n * sizeof(*out->points))) == NULL) {
        pw_free(tv.v);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "totals", "out of memory");
    }
    for (size_t i = 0; i < tv.n; i++) {
        const tacc_t *a = &tv.v[i];
        out->points[i] = (pw_store_tpoint_t){a->t,        a->last_ms,  a->np,         a->np_min,
                                             a->np_max,   a->pg,       a->pg_min,     a->pg_max,
                                             a->np_limit, a->pg_limit, (uint32_t)a->n};
    }
    out->n = out->cap = tv.n;
    pw_free(tv.v);
    return (int64_t)out->n;
}
