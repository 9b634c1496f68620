/* store_chunks.c: chunks once written: their blobs (zstd), replaying them, sealing a host's
 * chunk when its window is over, compacting sealed chunks into one blob in columns (chunk.h),
 * and flushing every open chunk. */
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "store_internal.h"

int pw__store_zcompress(pw_store_sql_t *q, const uint8_t *src, size_t n, pw_diag_t *d)
{
    return pw__store_zcompress_at(q, src, n, q->opts.zstd_level, d);
}

int pw__store_zcompress_at(pw_store_sql_t *q, const uint8_t *src, size_t n, int level, pw_diag_t *d)
{
    size_t bound = ZSTD_compressBound(n);
    pw_buf_reset(&q->zbuf);
    if (pw_buf_reserve(&q->zbuf, bound) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "zstd", "no memory for %zu bytes", bound);
    size_t z = ZSTD_compressCCtx(q->cctx, q->zbuf.data, bound, src, n, level);
    if (ZSTD_isError(z))
        return pw_diag_set(d, PW_ESTORE, 0, 0, "zstd", "zstd: %s", ZSTD_getErrorName(z));
    q->zbuf.len = z;
    return 0;
}

/* Decompresses a stored blob of `raw_size` bytes into `out` (reset first). */
int pw__store_zdecompress(pw_store_sql_t *q, const void *src, size_t n, uint64_t raw_size,
                          pw_buf_t *out, pw_diag_t *d)
{
    pw_buf_reset(out);
    unsigned long long fs = ZSTD_getFrameContentSize(src, n);
    if (fs == ZSTD_CONTENTSIZE_ERROR || fs == ZSTD_CONTENTSIZE_UNKNOWN || fs != raw_size ||
        fs > BLOB_MAX)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "data",
                           "stored blob of %zu bytes is not a zstd frame of %llu bytes", n,
                           (unsigned long long)raw_size);
    if (pw_buf_reserve(out, (size_t)fs + 1) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "zstd", "no memory for %llu bytes", fs);
    size_t r = ZSTD_decompressDCtx(q->dctx, out->data, (size_t)fs + 1, src, n);
    if (ZSTD_isError(r) || r != fs)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "data", "zstd: %s",
                           ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short frame");
    out->len = r;
    return 0;
}

/* ---- chunk records ----------------------------------------------------------------------- */

/* Replays a chunk of layout `fmt` (chunk.h: records while open, columns once closed) into a
 * fresh decoder, calling `cb` after each sample. Bad data is PW_ECORRUPT. */
int pw__store_replay(int fmt, const uint8_t *p, size_t len, unsigned width, pw_chunk_cb cb,
                     void *arg, pw_diag_t *d)
{
    pw_delta_dec_t dd;
    if (pw_delta_dec_init(&dd, width, 0) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "counter_width", "chunk counter width %u", width);
    int rc = pw_chunk_replay(fmt, p, len, &dd, cb, arg, d);
    pw_delta_dec_close(&dd);
    return rc;
}

/* Puts the records of chunk `id` into `out`: its blob decompressed, or its open rows. */
int pw__store_load_chunk(pw_store_sql_t *q, int64_t id, const void *data, size_t dlen,
                         uint64_t raw_size, pw_buf_t *out, pw_diag_t *d)
{
    if (data != NULL)
        return pw__store_zdecompress(q, data, dlen, raw_size, out, d);
    pw_buf_reset(out);
    sqlite3_stmt *s = pw__store_stmt(q, S_ROWS_GET);
    sqlite3_bind_int64(s, 1, id);
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        r = pw_chunk_put_record(out, (uint64_t)sqlite3_column_int64(s, 0),
                                sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2));
        if (r != 0)
            r = pw_diag_set(d, r, 0, 0, "chunk_rows", "cannot hold the open chunk: %s",
                            pw_strerror(r));
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "read chunk rows");
    sqlite3_reset(s);
    return r;
}

/* ---- chunks ------------------------------------------------------------------------------ */

void pw__store_chunk_reset(pw_store_hstate_t *hs)
{
    if (hs->enc_live)
        pw_delta_enc_close(&hs->enc);
    hs->enc_live = 0;
    hs->chunk_id = 0;
    hs->nsamples = 0;
    hs->chain = 0;
    pw__store_live_drop(hs);
}

/* Seals the open chunk of `hs`: its window is over; its rows stay in chunk_rows until
 * compact_chunk turns them into one blob. Sealing is one UPDATE, so the put that starts a new
 * window costs what any put costs; the expensive part runs later, in pw_store_compact, under a
 * time budget (10,000 hosts would otherwise close ~2,500 chunks within the same 10 s). */
int pw__store_close_chunk(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d)
{
    int rc = 0;
    sqlite3_stmt *s;
    if (hs->nsamples == 0) {
        if (hs->chunk_id != 0) {
            s = pw__store_stmt(q, S_CHUNK_DEL);
            sqlite3_bind_int64(s, 1, hs->chunk_id);
            rc = pw__store_run(q, s, d, "delete empty chunk");
        }
        pw__store_chunk_reset(hs);
        return rc;
    }
    s = pw__store_stmt(q, S_CHUNK_SEAL);
    sqlite3_bind_int64(s, 1, hs->chunk_id);
    sqlite3_bind_int64(s, 2, (int64_t)hs->t0);
    sqlite3_bind_int64(s, 3, (int64_t)hs->t1);
    sqlite3_bind_int64(s, 4, hs->nsamples);
    sqlite3_bind_int64(s, 5, (int64_t)hs->first_seq);
    sqlite3_bind_int64(s, 6, (int64_t)hs->last_seq);
    rc = pw__store_run(q, s, d, "seal chunk");
    /* The chunk's newest sample is one of the instance the host's row names (store_put.c):
     * its seq and time go into both rows, which puts do not write. */
    for (int w = 0; rc == 0 && w < 2; w++) {
        s = pw__store_stmt(q, w == 0 ? S_INST_SEAL : S_HOST_SEAL);
        sqlite3_bind_int64(s, 1, hs->id);
        sqlite3_bind_int64(s, 2, (int64_t)hs->last_seq);
        sqlite3_bind_int64(s, 3, (int64_t)hs->t1);
        rc = pw__store_run(q, s, d, w == 0 ? "update agent instance" : "update host");
    }
    if (rc == 0)
        rc = pw__store_totals_seal(q, hs, d);
    if (rc == 0 && hs->inst_known && hs->row_known && hs->agent_len == hs->row_agent_len &&
        hs->boot_len == hs->row_boot_len && memcmp(hs->agent, hs->row_agent, hs->agent_len) == 0 &&
        memcmp(hs->boot, hs->row_boot, hs->boot_len) == 0)
        hs->inst_dirty = 0;
    if (rc == 0 && hs->chunk_id < q->sealed_from)
        q->sealed_from = hs->chunk_id;
    if (rc == 0) {
        pw__store_live_seal(q, hs);
        pw__store_chunk_reset(hs);
    }
    return rc;
}

/* Compresses sealed chunk `id` of host `hid` into its blob (layout 2, chunk.h), drops its
 * rows and writes its series pages (store_series.c); both rollup levels wait until the chunk
 * expires: until then its pages answer at every step. The records are read back from chunk_rows
 * rather than kept in memory: an hour of deltas is ~0.4 MB per host, 4 GB for 10,000 hosts. */
static int compact_chunk(pw_store_sql_t *q, int64_t id, int64_t hid, unsigned width, pw_diag_t *d)
{
    int rc = pw__store_load_chunk(q, id, NULL, 0, 0, &q->recs, d);
    if (rc != 0)
        return rc;
    /* Rows that do not decode (a damaged file) must not stop compaction for good: such a
     * chunk is kept as its records, as they are, without rollups (stats: compact_fallbacks). */
    int fmt = PW_CHUNK_COLUMNS;
    const pw_buf_t *blob = &q->cols;
    rc = pw_chunk_pack(q->recs.data, q->recs.len, width, &q->cols, d);
    if (rc == PW_ECORRUPT) {
        fmt = PW_CHUNK_RECORDS;
        blob = &q->recs;
        q->compact_fallbacks++;
        if (id < q->unpaged_from) /* no pages: the background pass marks it (pages = 2) */
            q->unpaged_from = id;
    } else if (rc != 0) {
        return rc;
    }
    rc = pw__store_zcompress(q, blob->data, blob->len, d);
    if (rc != 0)
        return rc;
    sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_CLOSE);
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, (int64_t)blob->len);
    sqlite3_bind_blob(s, 3, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, fmt);
    rc = pw__store_run(q, s, d, "close chunk");
    if (rc == 0) {
        s = pw__store_stmt(q, S_ROWS_DEL);
        sqlite3_bind_int64(s, 1, id);
        rc = pw__store_run(q, s, d, "delete chunk rows");
    }
    /* the pages from the chunk's live form when this process saw all of it, else replayed */
    int live = 0;
    if (rc == 0)
        live = rc = pw__store_live_write(q, id, hid, fmt == PW_CHUNK_COLUMNS, d);
    if (rc == 0 && fmt == PW_CHUNK_COLUMNS && !live)
        rc = pw__store_series_write(q, id, hid, width, PW_CHUNK_RECORDS, &q->recs, 0, d);
    return rc < 0 ? rc : 0;
}

static uint64_t mono_us(void)
{
    return pw_clock_mono_us();
}

/* Compacts sealed chunks, oldest first, until none is left or `budget_us` has passed (at
 * least one when any is waiting). Returns how many, or a negative code. In the caller's
 * transaction. */
static int64_t compact_some(pw_store_sql_t *q, uint64_t budget_us, pw_diag_t *d)
{
    uint64_t start = mono_us();
    int64_t n = 0;
    for (;;) {
        sqlite3_stmt *s = pw__store_stmt(q, S_SEALED_NEXT);
        sqlite3_bind_int64(s, 1, q->sealed_from);
        int r = q->sealed_from == INT64_MAX ? SQLITE_DONE : sqlite3_step(s);
        if (r == SQLITE_DONE) {
            sqlite3_reset(s);
            q->sealed_from = INT64_MAX;
            /* then, in the budget, chunks compacted before schema 5 get their series pages, those
             * stored before schema 8 their totals buckets, and days of chunk pages are merged into
             * day pages */
            while (pw__store_compact_pending(q) &&
                   (mono_us() - start < budget_us || budget_us == UINT64_MAX)) {
                int b = q->unpaged_from != INT64_MAX ? pw__store_series_backfill_one(q, d) : 0;
                if (b == 0 && q->totals_todo && (b = pw__store_totals_backfill_one(q, d)) == 0)
                    q->totals_todo = 0;
                if (b == 0)
                    b = pw__store_series_merge_one(q, d);
                if (b <= 0)
                    return b < 0 ? b : n;
            }
            return n;
        }
        if (r != SQLITE_ROW) {
            r = pw__store_sqlfail(q, r, d, "find sealed chunks");
            sqlite3_reset(s);
            return r;
        }
        int64_t id = sqlite3_column_int64(s, 0), hid = sqlite3_column_int64(s, 1);
        unsigned width = (unsigned)sqlite3_column_int(s, 2);
        sqlite3_reset(s);
        q->sealed_from = id + 1; /* none below id waits; id is compacted now */
        uint64_t a = mono_us();
        int rc = compact_chunk(q, id, hid, width, d);
        if (rc != 0)
            return rc;
        uint64_t us = mono_us() - a;
        q->closes++;
        q->close_us_total += us;
        if (us > q->close_us_max)
            q->close_us_max = us;
        n++;
        if (mono_us() - start >= budget_us)
            return n;
    }
}

int64_t pw__store_sql_compact(pw_store_sql_t *q, uint64_t budget_us, pw_diag_t *d)
{
    /* After most group commits there is nothing to do: no query, no transaction (a scan of
     * every chunk and a BEGIN/COMMIT per group commit before). */
    if (!pw__store_compact_pending(q) && q->opts.max_size_bytes == 0)
        return 0;
    int own = !q->in_txn;
    /* Its own transaction carries no ack (pages and merges of chunks that group commits made
     * durable, evictions): its commit is not synced to disk (synchronous=NORMAL for it, set
     * outside the transaction as SQLite asks; WAL mode stays consistent,
     * https://sqlite.org/pragma.html#pragma_synchronous), the next group commit's sync covers
     * it, and lost in a power cut it is done again from the chunks. A sixth of the syncs of an
     * ingesting collector were these (bench_store: 776 of 4,377 an hour at 20 hosts). */
    int rc = own ? pw__store_run(q, pw__store_stmt(q, S_SYNC_NORMAL), d, "synchronous") : 0;
    rc = rc ? rc : pw__store_begin(q, d);
    int64_t n = rc ? rc : compact_some(q, budget_us, d);
    /* The ceiling is checked here too (after each group commit), not only every 10 minutes. */
    int64_t ev = n < 0 ? 0 : pw__store_enforce_max_size(q, d);
    if (ev > 0 && (rc = pw__store_vacuum(q, d)) != 0)
        ev = rc;
    if (n < 0 || ev < 0) {
        pw__store_abort_txn(q);
        n = n < 0 ? n : ev;
    } else if (own && (rc = pw__store_commit_as(q, 1, d)) != 0) {
        /* its WAL pages are left to the checkpointer thread (below the hard limit): a checkpoint
         * here held the collector's loop up to ~300 ms after a compaction (bench_detect_scale) */
        n = rc;
    }
    /* back to a synced commit for the group commits, whatever happened */
    if (own && (rc = pw__store_run(q, pw__store_stmt(q, S_SYNC_FULL), d, "synchronous")) != 0 &&
        n >= 0)
        n = rc;
    return n;
}

typedef struct {
    uint64_t t0, t1, first, last;
    uint32_t n;
} scan_t;

static int scan_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)d;
    scan_t *sc = arg;
    if (sc->n == 0) {
        sc->t0 = dd->timestamp_ms;
        sc->first = seq;
    }
    sc->t1 = dd->timestamp_ms;
    sc->last = seq;
    sc->n++;
    return 0;
}

/* Closes the chunks a previous run (or a rolled back transaction) left open for `hs`. */
int pw__store_close_stale_chunks(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d)
{
    for (;;) {
        sqlite3_stmt *s = pw__store_stmt(q, S_CHUNK_OPEN);
        sqlite3_bind_int64(s, 1, hs->id);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) {
            sqlite3_reset(s);
            return 0;
        }
        if (rc != SQLITE_ROW) {
            rc = pw__store_sqlfail(q, rc, d, "find open chunks");
            sqlite3_reset(s);
            return rc;
        }
        int64_t id = sqlite3_column_int64(s, 0);
        unsigned width = (unsigned)sqlite3_column_int(s, 1);
        uint64_t ws = (uint64_t)sqlite3_column_int64(s, 2);
        sqlite3_reset(s);
        rc = pw__store_load_chunk(q, id, NULL, 0, 0, &q->recs, d);
        scan_t sc = {0};
        if (rc == 0)
            rc = pw__store_replay(PW_CHUNK_RECORDS, q->recs.data, q->recs.len, width, scan_cb, &sc,
                                  d);
        if (rc != 0)
            return rc;
        hs->chunk_id = id;
        hs->width = width;
        hs->window_start = ws;
        hs->nsamples = sc.n;
        hs->t0 = sc.t0, hs->t1 = sc.t1, hs->first_seq = sc.first, hs->last_seq = sc.last;
        rc = pw__store_close_chunk(q, hs, d);
        if (rc != 0)
            return rc;
    }
}

int pw__store_sql_flush(pw_store_sql_t *q, pw_diag_t *d)
{
    int own = !q->in_txn;
    int rc = pw__store_begin(q, d);
    for (size_t i = 0; rc == 0 && i < q->nslots; i++)
        if (q->slots[i] != NULL && q->slots[i]->nsamples > 0)
            rc = pw__store_close_chunk(q, q->slots[i], d);
    /* Hosts not seen by this process may still have open chunks: loading closes them. */
    while (rc == 0) {
        sqlite3_stmt *s = pw__store_stmt(q, S_OPEN_HOSTS);
        int r = sqlite3_step(s);
        if (r == SQLITE_DONE) {
            sqlite3_reset(s);
            break;
        }
        if (r != SQLITE_ROW) {
            rc = pw__store_sqlfail(q, r, d, "find open chunks");
            sqlite3_reset(s);
            break;
        }
        char *name = pw__store_col_strdup(s, 0);
        sqlite3_reset(s);
        if (name == NULL) {
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
            break;
        }
        pw_store_hstate_t *hs = pw__store_host_find(q, name);
        pw_store_host_t h = {.name = name, .counter_width = 64};
        if (hs != NULL)
            rc = pw__store_close_chunk(q, hs, d); /* cannot be: cached hosts were closed above */
        else
            rc = pw__store_host_get(q, &h, &hs, d);
        pw_free(name); /* pw__store_host_get closed every open chunk of the host: progress */
    }
    if (rc == 0) {
        int64_t n = compact_some(q, UINT64_MAX, d);
        rc = n < 0 ? (int)n : 0;
    }
    /* the rows compaction freed go back to the file system: a flushed store is what du sees */
    if (rc == 0)
        rc = pw__store_vacuum(q, d);
    if (rc != 0) {
        pw__store_abort_txn(q);
        return rc;
    }
    return own ? pw__store_sql_commit(q, d) : 0;
}
