/* store_sqlite.c: the history store on SQLite (docs/internals/store.md).
 *
 * Tables: hosts, instances (last seq per agent_id/boot_id), tags (global tag bytes -> id),
 * chunks (per host and aligned window; data NULL while open, then one zstd blob of records
 * "varint seq, frame"), chunk_rows (one record per sample of an open chunk: what makes a
 * sample durable before its chunk closes), rollups (per host, level and closed chunk: one
 * zstd blob of every row's 1-min or 15-min buckets), gaps, migrations.
 *
 * In memory, per host: the open chunk's encoder (common/delta.h, a fresh one per chunk, so
 * the chunk starts with a keyframe carrying its dictionary) and its records. Any failure
 * inside a transaction rolls it back and forgets every host's in-memory state: the next put
 * of a host reloads it from the database (closing the open chunk it finds there), the same
 * path as after a restart, so memory never disagrees with what is stored.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "alloc.h"
#include "buf.h"
#include "chunk.h"
#include "codec.h"
#include "delta.h"
#include "frame.h"
#include "store_internal.h"
#include "tagdict.h"

#define BLOB_MAX    (1024u * 1024u * 1024u) /* ceiling of any in-memory blob */
#define FRAME_MAX   (64u * 1024u * 1024u)
#define SCHEMA_LAST 3
#define M1_MS       60000ull
#define M15_MS      900000ull
#define ROLLUP_VER  1
/* Rows per rollup page: a series query decompresses one page of a window, not the whole
 * host (~10 KB raw at 4 buckets per row, vs ~120 KB for 3,000 rows). */
#define PAGE_ROWS 256

/* ---- schema ------------------------------------------------------------------------------ */

typedef struct {
    int version;
    const char *name;
    const char *sql;
} migration_t;

static const migration_t migrations[] = {
    {1, "initial schema",
     "CREATE TABLE hosts(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
     " os TEXT NOT NULL DEFAULT '', counter_width INTEGER NOT NULL, agent_id BLOB, boot_id BLOB,"
     " last_seen_ms INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0);"
     "CREATE TABLE instances(agent_id BLOB NOT NULL, boot_id BLOB NOT NULL,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " last_seq INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL,"
     " PRIMARY KEY(agent_id, boot_id)) WITHOUT ROWID;"
     "CREATE TABLE tags(id INTEGER PRIMARY KEY, tag BLOB NOT NULL UNIQUE);"
     "CREATE TABLE chunks(id INTEGER PRIMARY KEY,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " window_ms INTEGER NOT NULL, t0_ms INTEGER NOT NULL, t1_ms INTEGER NOT NULL,"
     " nsamples INTEGER NOT NULL, counter_width INTEGER NOT NULL, first_seq INTEGER NOT NULL,"
     " last_seq INTEGER NOT NULL, raw_size INTEGER NOT NULL DEFAULT 0, data BLOB);"
     "CREATE INDEX chunks_host_t0 ON chunks(host_id, t0_ms);"
     "CREATE INDEX chunks_t1 ON chunks(t1_ms);"
     "CREATE TABLE chunk_rows(chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,"
     " idx INTEGER NOT NULL, seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL, data BLOB NOT NULL,"
     " PRIMARY KEY(chunk_id, idx));"
     "CREATE TABLE rollups(id INTEGER PRIMARY KEY,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " level INTEGER NOT NULL, t0_ms INTEGER NOT NULL, t1_ms INTEGER NOT NULL,"
     " raw_size INTEGER NOT NULL, data BLOB NOT NULL);"
     "CREATE INDEX rollups_key ON rollups(host_id, level, t0_ms);"
     "CREATE INDEX rollups_t1 ON rollups(level, t1_ms);"
     "CREATE TABLE gaps(host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " ts_ms INTEGER NOT NULL, seq INTEGER NOT NULL, missed INTEGER NOT NULL);"
     "CREATE INDEX gaps_host_ts ON gaps(host_id, ts_ms);"},
    /* Rollup blobs become pages of rows with their key range [k0, k1] (older blobs hold
     * every row: 0 .. 2^32-1). 1-min rollups are written when a raw chunk expires, not
     * when it closes: chunks.m1 says whether a chunk's 1-min rollup exists (1 for chunks
     * closed before this step, which were rolled up eagerly). */
    {2, "rollup pages, lazy 1-min rollups",
     "ALTER TABLE rollups ADD COLUMN k0 INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE rollups ADD COLUMN k1 INTEGER NOT NULL DEFAULT 4294967295;"
     "DROP INDEX rollups_key;"
     "CREATE INDEX rollups_page ON rollups(host_id, level, t0_ms, k0, k1);"
     "ALTER TABLE chunks ADD COLUMN m1 INTEGER NOT NULL DEFAULT 1;"},
    /* Closed chunks in columns (chunk.h layout 2): chunks.fmt says which layout a closed
     * chunk's blob has (1 for those closed before this step). A chunk whose window is over is
     * sealed (sealed=1, data still NULL, rows in chunk_rows) and compacted later. */
    {3, "columnar closed chunks, sealed chunks compacted later",
     "ALTER TABLE chunks ADD COLUMN fmt INTEGER NOT NULL DEFAULT 1;"
     "ALTER TABLE chunks ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;"},
};

enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_HOST_GET,
    S_HOST_INS,
    S_HOST_UPD,
    S_INST_GET,
    S_INST_UPSERT,
    S_TAG_INS,
    S_TAG_ALL,
    S_CHUNK_INS,
    S_CHUNK_OPEN,
    S_CHUNK_SEAL,
    S_CHUNK_CLOSE,
    S_SEALED_NEXT,
    S_CHUNK_DEL,
    S_ROWS_INS,
    S_ROWS_GET,
    S_ROWS_DEL,
    S_ROLLUP_INS,
    S_ROLLUP_RANGE,
    S_CHUNK_RANGE,
    S_CHUNK_RANGE_M1,
    S_RET_EXPIRING,
    S_CHUNK_LAST,
    S_GAP_INS,
    S_RET_CHUNKS,
    S_RET_ROLLUPS,
    S_RET_GAPS,
    S_HOSTS_ALL,
    S_OPEN_HOSTS,
    S_STATS,
    S_PAGES,
    S_PAGESIZE,
    S__COUNT
};

static const char *const sql_text[S__COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_HOST_GET] = "SELECT id, counter_width, agent_id, boot_id FROM hosts WHERE name=?1",
    [S_HOST_INS] = "INSERT INTO hosts(name, os, counter_width) VALUES(?1, ?2, ?3)",
    [S_HOST_UPD] = "UPDATE hosts SET os=?2, counter_width=?3, agent_id=?4, boot_id=?5,"
                   " last_seen_ms=?6, last_seq=?7 WHERE id=?1",
    [S_INST_GET] = "SELECT last_seq FROM instances WHERE agent_id=?1 AND boot_id=?2",
    [S_INST_UPSERT] = "INSERT INTO instances(agent_id, boot_id, host_id, last_seq, last_seen_ms)"
                      " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(agent_id, boot_id) DO UPDATE SET"
                      " host_id=excluded.host_id, last_seq=excluded.last_seq,"
                      " last_seen_ms=excluded.last_seen_ms",
    [S_TAG_INS] = "INSERT INTO tags(id, tag) VALUES(?1, ?2)",
    [S_TAG_ALL] = "SELECT id, tag FROM tags ORDER BY id",
    [S_CHUNK_INS] = "INSERT INTO chunks(host_id, window_ms, t0_ms, t1_ms, nsamples, counter_width,"
                    " first_seq, last_seq, m1) VALUES(?1, ?2, ?3, ?3, 0, ?4, ?5, ?5, 0)",
    [S_CHUNK_OPEN] = "SELECT id, counter_width, window_ms FROM chunks"
                     " WHERE host_id=?1 AND data IS NULL AND sealed=0 ORDER BY id",
    [S_CHUNK_SEAL] = "UPDATE chunks SET t0_ms=?2, t1_ms=?3, nsamples=?4, first_seq=?5,"
                     " last_seq=?6, sealed=1 WHERE id=?1",
    [S_CHUNK_CLOSE] = "UPDATE chunks SET raw_size=?2, data=?3, fmt=?4 WHERE id=?1",
    [S_SEALED_NEXT] = "SELECT id, host_id, counter_width, t0_ms, t1_ms FROM chunks"
                      " WHERE data IS NULL AND sealed=1 ORDER BY id LIMIT 1",
    [S_CHUNK_DEL] = "DELETE FROM chunks WHERE id=?1",
    [S_ROWS_INS] = "INSERT INTO chunk_rows(chunk_id, idx, seq, ts_ms, data) VALUES(?1,?2,?3,?4,?5)",
    [S_ROWS_GET] = "SELECT seq, ts_ms, data FROM chunk_rows WHERE chunk_id=?1 ORDER BY idx",
    [S_ROWS_DEL] = "DELETE FROM chunk_rows WHERE chunk_id=?1",
    [S_ROLLUP_INS] = "INSERT INTO rollups(host_id, level, t0_ms, t1_ms, raw_size, data, k0, k1)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_ROLLUP_RANGE] = "SELECT raw_size, data FROM rollups WHERE host_id=?1 AND level=?2"
                       " AND t0_ms BETWEEN ?3 AND ?4 AND k0 <= ?6 AND k1 >= ?6 AND t1_ms >= ?5"
                       " ORDER BY t0_ms, id",
    [S_CHUNK_RANGE] = "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
                      " AND t0_ms BETWEEN ?2 AND ?3 AND (data IS NULL OR t1_ms >= ?4)"
                      " ORDER BY t0_ms, id",
    [S_CHUNK_RANGE_M1] =
        "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
        " AND t0_ms BETWEEN ?2 AND ?3 AND (data IS NULL OR t1_ms >= ?4)"
        " AND m1=0 ORDER BY t0_ms, id",
    [S_RET_EXPIRING] = "SELECT host_id, counter_width, t0_ms, t1_ms, raw_size, data, fmt"
                       " FROM chunks"
                       " WHERE data IS NOT NULL AND m1=0 AND t1_ms < ?1 AND t1_ms >= ?2"
                       " ORDER BY id",
    [S_CHUNK_LAST] = "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
                     " ORDER BY id DESC LIMIT 1",
    [S_GAP_INS] = "INSERT INTO gaps(host_id, ts_ms, seq, missed) VALUES(?1, ?2, ?3, ?4)",
    [S_RET_CHUNKS] = "DELETE FROM chunks WHERE data IS NOT NULL AND t1_ms < ?1",
    [S_RET_ROLLUPS] = "DELETE FROM rollups WHERE level=?1 AND t1_ms < ?2",
    [S_RET_GAPS] = "DELETE FROM gaps WHERE ts_ms < ?1",
    [S_HOSTS_ALL] = "SELECT name, os, counter_width, agent_id, boot_id, last_seen_ms, last_seq"
                    " FROM hosts ORDER BY name",
    [S_OPEN_HOSTS] = "SELECT name FROM hosts WHERE id IN"
                     " (SELECT host_id FROM chunks WHERE data IS NULL AND sealed=0)",
    [S_STATS] = "SELECT (SELECT count(*) FROM chunks),"
                " (SELECT count(*) FROM chunks WHERE data IS NOT NULL),"
                " (SELECT coalesce(sum(nsamples), 0) FROM chunks WHERE data IS NOT NULL),"
                " (SELECT count(*) FROM chunk_rows),"
                " (SELECT coalesce(sum(length(data)), 0) FROM chunks),"
                " (SELECT coalesce(sum(length(data)), 0) FROM chunk_rows),"
                " (SELECT count(*) FROM rollups),"
                " (SELECT coalesce(sum(length(data)), 0) FROM rollups),"
                " (SELECT count(*) FROM tags), (SELECT count(*) FROM hosts)",
    [S_PAGES] = "PRAGMA page_count",
    [S_PAGESIZE] = "PRAGMA page_size",
};

/* ---- state ------------------------------------------------------------------------------- */

typedef struct hstate_s {
    int64_t id;
    char *name;
    /* agent instance of the newest sample and its last seq */
    uint8_t agent[64], boot[64];
    size_t agent_len, boot_len;
    int inst_known, inst_has_seq;
    uint64_t inst_seq;
    /* open chunk */
    int64_t chunk_id; /* 0: no row yet */
    int enc_live;
    pw_delta_enc_t enc;
    unsigned width;
    uint64_t window_start, t0, t1, first_seq, last_seq;
    uint32_t nsamples;
    /* The open chunk's last record is a frame of the agent's own chain (pw_store_put_frame),
     * holding the decoder state at codec seq chain_seq: the next delta of that chain on it
     * can be stored as received. */
    int chain;
    uint64_t chain_seq;
} hstate_t;

struct pw_store_sql_s {
    sqlite3 *db;
    sqlite3_stmt *st[S__COUNT];
    pw_store_opts_t opts;
    char *path;
    int memory;
    struct ckpt_s *ckpt; /* the background checkpointer, NULL for :memory: or when it failed */
    int in_txn;
    hstate_t **slots; /* open addressing by name */
    size_t nslots, nhosts;
    pw_tagdict_t tags; /* mirror of table tags: id = tags.id */
    uint32_t tags_committed;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    pw_buf_t frame, zbuf, tmp;
    pw_buf_t recs; /* a closing chunk's records, read back from chunk_rows */
    pw_buf_t cols; /* the same in columns (chunk.h layout 2), before compression */
    uint64_t closes, close_us_total, close_us_max; /* chunk compactions of this process */
    uint64_t compact_fallbacks; /* chunks kept as records: their rows did not decode */
};

/* Start of the chunk window holding `ts` for host `hs`. Hosts' windows are offset by whole
 * 15-minute steps (by host id), so that the chunks of a whole fleet do not all close in the same
 * minute after each hour; 15-min rollup buckets still fall inside one chunk. */
static uint64_t window_of(const pw_store_sql_t *q, const hstate_t *hs, uint64_t ts)
{
    uint64_t w = q->opts.chunk_window_ms;
    uint64_t off = 0;
    if (w > 900000 && w % 900000 == 0)
        off = ((uint64_t)hs->id % (w / 900000)) * 900000;
    if (ts < off)
        return 0;
    return ts - (ts - off) % w;
}

/* ---- small helpers ----------------------------------------------------------------------- */

static int sqlfail(pw_store_sql_t *q, int rc, pw_diag_t *d, const char *what)
{
    int prim = rc & 0xff;
    int code = prim == SQLITE_FULL ? PW_ENOSPC : prim == SQLITE_NOMEM ? PW_ENOMEM : PW_ESTORE;
    return pw_diag_set(d, code, 0, 0, what, "sqlite: %s: %s (code %d)", what, sqlite3_errmsg(q->db),
                       rc);
}

static sqlite3_stmt *stmt(pw_store_sql_t *q, int i)
{
    sqlite3_stmt *s = q->st[i];
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

/* Runs a statement that returns no row. */
static int run(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d, const char *what)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE;
    int r = rc == SQLITE_DONE ? 0 : sqlfail(q, rc, d, what);
    sqlite3_reset(s);
    return r;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void hstate_free(hstate_t *hs)
{
    if (hs == NULL)
        return;
    if (hs->enc_live)
        pw_delta_enc_close(&hs->enc);
    pw_free(hs->name);
    pw_free(hs);
}

static void forget_hosts(pw_store_sql_t *q)
{
    for (size_t i = 0; i < q->nslots; i++) {
        hstate_free(q->slots[i]);
        q->slots[i] = NULL;
    }
    q->nhosts = 0;
}

static hstate_t *host_find(pw_store_sql_t *q, const char *name)
{
    if (q->nslots == 0)
        return NULL;
    size_t m = q->nslots - 1;
    for (size_t i = hash_name(name) & m;; i = (i + 1) & m) {
        if (q->slots[i] == NULL)
            return NULL;
        if (strcmp(q->slots[i]->name, name) == 0)
            return q->slots[i];
    }
}

static int host_insert(pw_store_sql_t *q, hstate_t *hs)
{
    if ((q->nhosts + 1) * 2 > q->nslots) {
        size_t ns = q->nslots ? q->nslots * 2 : 64;
        hstate_t **slots = pw_calloc(ns, sizeof(*slots));
        if (slots == NULL)
            return PW_ENOMEM;
        for (size_t i = 0; i < q->nslots; i++) {
            hstate_t *h = q->slots[i];
            if (h == NULL)
                continue;
            size_t j = hash_name(h->name) & (ns - 1);
            while (slots[j] != NULL)
                j = (j + 1) & (ns - 1);
            slots[j] = h;
        }
        pw_free(q->slots);
        q->slots = slots;
        q->nslots = ns;
    }
    size_t j = hash_name(hs->name) & (q->nslots - 1);
    while (q->slots[j] != NULL)
        j = (j + 1) & (q->nslots - 1);
    q->slots[j] = hs;
    q->nhosts++;
    return 0;
}

/* Rolls back the open transaction (if any) and forgets what memory held about it. */
static void abort_txn(pw_store_sql_t *q)
{
    if (!sqlite3_get_autocommit(q->db)) {
        sqlite3_stmt *s = stmt(q, S_ROLLBACK);
        sqlite3_step(s);
        sqlite3_reset(s);
    }
    q->in_txn = 0;
    forget_hosts(q);
    pw_tagdict_truncate(&q->tags, q->tags_committed);
}

static int begin(pw_store_sql_t *q, pw_diag_t *d)
{
    if (q->in_txn)
        return 0;
    int rc = run(q, stmt(q, S_BEGIN), d, "begin");
    if (rc == 0)
        q->in_txn = 1;
    return rc;
}

static int zcompress(pw_store_sql_t *q, const uint8_t *src, size_t n, pw_diag_t *d)
{
    size_t bound = ZSTD_compressBound(n);
    pw_buf_reset(&q->zbuf);
    if (pw_buf_reserve(&q->zbuf, bound) != 0)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "zstd", "no memory for %zu bytes", bound);
    size_t z = ZSTD_compressCCtx(q->cctx, q->zbuf.data, bound, src, n, q->opts.zstd_level);
    if (ZSTD_isError(z))
        return pw_diag_set(d, PW_ESTORE, 0, 0, "zstd", "zstd: %s", ZSTD_getErrorName(z));
    q->zbuf.len = z;
    return 0;
}

/* Decompresses a stored blob of `raw_size` bytes into `out` (reset first). */
static int zdecompress(pw_store_sql_t *q, const void *src, size_t n, uint64_t raw_size,
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
static int replay(int fmt, const uint8_t *p, size_t len, unsigned width, pw_chunk_cb cb, void *arg,
                  pw_diag_t *d)
{
    pw_delta_dec_t dd;
    if (pw_delta_dec_init(&dd, width, 0) != 0)
        return pw_diag_set(d, PW_ECORRUPT, 0, 0, "counter_width", "chunk counter width %u", width);
    int rc = pw_chunk_replay(fmt, p, len, &dd, cb, arg, d);
    pw_delta_dec_close(&dd);
    return rc;
}

/* Puts the records of chunk `id` into `out`: its blob decompressed, or its open rows. */
static int load_chunk(pw_store_sql_t *q, int64_t id, const void *data, size_t dlen,
                      uint64_t raw_size, pw_buf_t *out, pw_diag_t *d)
{
    if (data != NULL)
        return zdecompress(q, data, dlen, raw_size, out, d);
    pw_buf_reset(out);
    sqlite3_stmt *s = stmt(q, S_ROWS_GET);
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
        r = sqlfail(q, rc, d, "read chunk rows");
    sqlite3_reset(s);
    return r;
}

/* ---- rollups ----------------------------------------------------------------------------- */

typedef struct {
    uint32_t cnt;
    uint64_t b, df, a, f; /* last */
    uint64_t bmin, bmax, dmin, dmax;
} acc_t;

typedef struct {
    uint64_t b0, nb; /* first 1-min bucket index, buckets */
    acc_t *acc;      /* rows x nb */
    uint32_t *rkey;  /* row -> local key */
    size_t nrows, rcap;
    uint32_t *map; /* local key -> row + 1 */
    size_t mapcap;
    pw_tagdict_t *dict; /* of the decoder, for the tag bytes (valid during replay) */
    uint8_t (*tagb)[PW_TAG_MAX];
    uint8_t *tagl;
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
    for (size_t i = 0; i < dd->n; i++) {
        const pw_row_t *row = &dd->rows[i];
        if (row->key >= r->mapcap) {
            size_t nc = r->mapcap ? r->mapcap : 1024;
            while (nc <= row->key)
                nc *= 2;
            uint32_t *m = pw_realloc(r->map, nc * sizeof(*m));
            if (m == NULL)
                return PW_ENOMEM;
            memset(m + r->mapcap, 0, (nc - r->mapcap) * sizeof(*m));
            r->map = m;
            r->mapcap = nc;
        }
        uint32_t ri = r->map[row->key];
        if (ri == 0) {
            if (r->nrows == r->rcap) {
                size_t nc = r->rcap ? r->rcap * 2 : 256;
                acc_t *acc = pw_realloc(r->acc, nc * r->nb * sizeof(*acc));
                if (acc == NULL)
                    return PW_ENOMEM;
                r->acc = acc;
                uint32_t *rk = pw_realloc(r->rkey, nc * sizeof(*rk));
                if (rk == NULL)
                    return PW_ENOMEM;
                r->rkey = rk;
                uint8_t(*tb)[PW_TAG_MAX] = pw_realloc(r->tagb, nc * PW_TAG_MAX);
                if (tb == NULL)
                    return PW_ENOMEM;
                r->tagb = tb;
                uint8_t *tl = pw_realloc(r->tagl, nc);
                if (tl == NULL)
                    return PW_ENOMEM;
                r->tagl = tl;
                r->rcap = nc;
            }
            ri = (uint32_t)++r->nrows;
            r->map[row->key] = ri;
            r->rkey[ri - 1] = row->key;
            memset(&r->acc[(size_t)(ri - 1) * r->nb], 0, r->nb * sizeof(acc_t));
            size_t tl;
            const uint8_t *t = pw_tagdict_get(&dd->dict, PW_ROW_ID(row->key), &tl);
            memcpy(r->tagb[ri - 1], t, tl);
            r->tagl[ri - 1] = (uint8_t)tl;
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

static int intern_tag(pw_store_sql_t *q, const uint8_t *t, size_t len, uint32_t *id, pw_diag_t *d)
{
    int added = 0;
    int64_t g = pw_tagdict_intern(&q->tags, t, len, &added);
    if (g < 0)
        return pw_diag_set(d, (int)g, 0, 0, "tags", "global tag table: %s", pw_strerror((int)g));
    if (added) {
        sqlite3_stmt *s = stmt(q, S_TAG_INS);
        sqlite3_bind_int64(s, 1, g);
        sqlite3_bind_blob(s, 2, t, (int)len, SQLITE_STATIC);
        int rc = run(q, s, d, "insert tag");
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
        rc = zcompress(q, q->tmp.data, q->tmp.len, d);
        if (rc != 0)
            return rc;
        sqlite3_stmt *s = stmt(q, S_ROLLUP_INS);
        sqlite3_bind_int64(s, 1, host_id);
        sqlite3_bind_int(s, 2, level);
        sqlite3_bind_int64(s, 3, (int64_t)t0);
        sqlite3_bind_int64(s, 4, (int64_t)t1);
        sqlite3_bind_int64(s, 5, (int64_t)q->tmp.len);
        sqlite3_bind_blob(s, 6, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 7, gk[i].gkey);
        sqlite3_bind_int64(s, 8, gk[i + n - 1].gkey);
        rc = run(q, s, d, "insert rollup");
    }
    return rc;
}

#define ROLL_M1  1 /* rollup_chunk: write the 1-min level */
#define ROLL_M15 2 /* and/or the 15-min level */

/* Computes and writes the `levels` (ROLL_*) rollups of a chunk's records. */
static int rollup_chunk(pw_store_sql_t *q, int64_t host_id, unsigned width, int fmt,
                        const pw_buf_t *recs, uint64_t t0, uint64_t t1, int levels, pw_diag_t *d)
{
    rollup_t r;
    memset(&r, 0, sizeof(r));
    r.b0 = t0 / M1_MS;
    r.nb = t1 / M1_MS - r.b0 + 1;
    gk_t *gk = NULL;
    acc_t *acc15 = NULL;
    pw_buf_t rowbuf;
    pw_buf_init(&rowbuf, BLOB_MAX);
    int rc = replay(fmt, recs->data, recs->len, width, rollup_cb, &r, d);
    if (rc == PW_ENOMEM)
        rc = pw_diag_set(d, rc, 0, 0, "rollups", "out of memory");
    if (rc == 0 && r.nrows > 0) {
        gk = pw_malloc(r.nrows * sizeof(*gk));
        if (gk == NULL)
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "rollups", "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < r.nrows; i++) {
        uint32_t gid = 0;
        rc = intern_tag(q, r.tagb[i], r.tagl[i], &gid, d);
        gk[i].gkey = PW_ROW_KEY(gid, PW_ROW_POOL(r.rkey[i]));
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
    pw_free(r.rkey);
    pw_free(r.map);
    pw_free(r.tagb);
    pw_free(r.tagl);
    pw_buf_close(&rowbuf);
    return rc;
}

/* ---- chunks ------------------------------------------------------------------------------ */

static void chunk_reset(hstate_t *hs)
{
    if (hs->enc_live)
        pw_delta_enc_close(&hs->enc);
    hs->enc_live = 0;
    hs->chunk_id = 0;
    hs->nsamples = 0;
    hs->chain = 0;
}

/* Seals the open chunk of `hs`: its window is over; its rows stay in chunk_rows until
 * compact_chunk turns them into one blob. Sealing is one UPDATE, so the put that starts a new
 * window costs what any put costs; the expensive part runs later, in pw_store_compact, under a
 * time budget (10,000 hosts would otherwise close ~2,500 chunks within the same 10 s). */
static int close_chunk(pw_store_sql_t *q, hstate_t *hs, pw_diag_t *d)
{
    int rc = 0;
    sqlite3_stmt *s;
    if (hs->nsamples == 0) {
        if (hs->chunk_id != 0) {
            s = stmt(q, S_CHUNK_DEL);
            sqlite3_bind_int64(s, 1, hs->chunk_id);
            rc = run(q, s, d, "delete empty chunk");
        }
        chunk_reset(hs);
        return rc;
    }
    s = stmt(q, S_CHUNK_SEAL);
    sqlite3_bind_int64(s, 1, hs->chunk_id);
    sqlite3_bind_int64(s, 2, (int64_t)hs->t0);
    sqlite3_bind_int64(s, 3, (int64_t)hs->t1);
    sqlite3_bind_int64(s, 4, hs->nsamples);
    sqlite3_bind_int64(s, 5, (int64_t)hs->first_seq);
    sqlite3_bind_int64(s, 6, (int64_t)hs->last_seq);
    rc = run(q, s, d, "seal chunk");
    if (rc == 0)
        chunk_reset(hs);
    return rc;
}

/* Compresses sealed chunk `id` of host `hid` into its blob (layout 2, chunk.h), drops its
 * rows and writes its 15-min rollups (the 1-min ones wait until the chunk expires: until then
 * 1-min queries read it raw). The records are read back from chunk_rows rather than kept in
 * memory: an hour of deltas is ~0.4 MB per host, 4 GB for 10,000 hosts. */
static int compact_chunk(pw_store_sql_t *q, int64_t id, int64_t hid, unsigned width, uint64_t t0,
                         uint64_t t1, pw_diag_t *d)
{
    int rc = load_chunk(q, id, NULL, 0, 0, &q->recs, d);
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
    } else if (rc != 0) {
        return rc;
    }
    rc = zcompress(q, blob->data, blob->len, d);
    if (rc != 0)
        return rc;
    sqlite3_stmt *s = stmt(q, S_CHUNK_CLOSE);
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, (int64_t)blob->len);
    sqlite3_bind_blob(s, 3, q->zbuf.data, (int)q->zbuf.len, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, fmt);
    rc = run(q, s, d, "close chunk");
    if (rc == 0) {
        s = stmt(q, S_ROWS_DEL);
        sqlite3_bind_int64(s, 1, id);
        rc = run(q, s, d, "delete chunk rows");
    }
    if (rc == 0 && fmt == PW_CHUNK_COLUMNS)
        rc = rollup_chunk(q, hid, width, PW_CHUNK_RECORDS, &q->recs, t0, t1, ROLL_M15, d);
    return rc;
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Compacts sealed chunks, oldest first, until none is left or `budget_us` has passed (at
 * least one when any is waiting). Returns how many, or a negative code. In the caller's
 * transaction. */
static int64_t compact_some(pw_store_sql_t *q, uint64_t budget_us, pw_diag_t *d)
{
    uint64_t start = mono_us();
    int64_t n = 0;
    for (;;) {
        sqlite3_stmt *s = stmt(q, S_SEALED_NEXT);
        int r = sqlite3_step(s);
        if (r == SQLITE_DONE) {
            sqlite3_reset(s);
            return n;
        }
        if (r != SQLITE_ROW) {
            r = sqlfail(q, r, d, "find sealed chunks");
            sqlite3_reset(s);
            return r;
        }
        int64_t id = sqlite3_column_int64(s, 0), hid = sqlite3_column_int64(s, 1);
        unsigned width = (unsigned)sqlite3_column_int(s, 2);
        uint64_t t0 = (uint64_t)sqlite3_column_int64(s, 3);
        uint64_t t1 = (uint64_t)sqlite3_column_int64(s, 4);
        sqlite3_reset(s);
        uint64_t a = mono_us();
        int rc = compact_chunk(q, id, hid, width, t0, t1, d);
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
    int own = !q->in_txn;
    int rc = begin(q, d);
    if (rc != 0)
        return rc;
    int64_t n = compact_some(q, budget_us, d);
    if (n < 0) {
        abort_txn(q);
        return n;
    }
    if (own && (rc = pw__store_sql_commit(q, d)) != 0)
        return rc;
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
static int close_stale_chunks(pw_store_sql_t *q, hstate_t *hs, pw_diag_t *d)
{
    for (;;) {
        sqlite3_stmt *s = stmt(q, S_CHUNK_OPEN);
        sqlite3_bind_int64(s, 1, hs->id);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) {
            sqlite3_reset(s);
            return 0;
        }
        if (rc != SQLITE_ROW) {
            rc = sqlfail(q, rc, d, "find open chunks");
            sqlite3_reset(s);
            return rc;
        }
        int64_t id = sqlite3_column_int64(s, 0);
        unsigned width = (unsigned)sqlite3_column_int(s, 1);
        uint64_t ws = (uint64_t)sqlite3_column_int64(s, 2);
        sqlite3_reset(s);
        rc = load_chunk(q, id, NULL, 0, 0, &q->recs, d);
        scan_t sc = {0};
        if (rc == 0)
            rc = replay(PW_CHUNK_RECORDS, q->recs.data, q->recs.len, width, scan_cb, &sc, d);
        if (rc != 0)
            return rc;
        hs->chunk_id = id;
        hs->width = width;
        hs->window_start = ws;
        hs->nsamples = sc.n;
        hs->t0 = sc.t0, hs->t1 = sc.t1, hs->first_seq = sc.first, hs->last_seq = sc.last;
        rc = close_chunk(q, hs, d);
        if (rc != 0)
            return rc;
    }
}

/* The in-memory state of host `name`, loaded or created (inside the transaction). */
static int host_get(pw_store_sql_t *q, const pw_store_host_t *h, hstate_t **out, pw_diag_t *d)
{
    hstate_t *hs = host_find(q, h->name);
    if (hs != NULL) {
        *out = hs;
        return 0;
    }
    hs = pw_calloc(1, sizeof(*hs));
    if (hs == NULL || (hs->name = pw_strdup(h->name)) == NULL) {
        pw_free(hs);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
    }
    sqlite3_stmt *s = stmt(q, S_HOST_GET);
    sqlite3_bind_text(s, 1, h->name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        hs->id = sqlite3_column_int64(s, 0);
        rc = 0;
    } else if (rc == SQLITE_DONE) {
        sqlite3_reset(s);
        s = stmt(q, S_HOST_INS);
        sqlite3_bind_text(s, 1, h->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, h->os ? h->os : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 3, (int)h->counter_width);
        rc = run(q, s, d, "insert host");
        hs->id = sqlite3_last_insert_rowid(q->db);
    } else {
        rc = sqlfail(q, rc, d, "find host");
    }
    sqlite3_reset(s);
    if (rc == 0)
        rc = close_stale_chunks(q, hs, d);
    if (rc == 0 && host_insert(q, hs) != 0)
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
    if (rc != 0) {
        hstate_free(hs);
        return rc;
    }
    *out = hs;
    return 0;
}

static int inst_load(pw_store_sql_t *q, hstate_t *hs, const pw_store_host_t *h, pw_diag_t *d)
{
    sqlite3_stmt *s = stmt(q, S_INST_GET);
    sqlite3_bind_blob(s, 1, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    hs->inst_has_seq = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW)
        hs->inst_seq = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sqlfail(q, rc, d, "find agent instance");
    memcpy(hs->agent, h->agent_id, h->agent_id_len);
    memcpy(hs->boot, h->boot_id, h->boot_id_len);
    hs->agent_len = h->agent_id_len;
    hs->boot_len = h->boot_id_len;
    hs->inst_known = 1;
    return 0;
}

/* The first steps of a put: the host's state, its agent instance, the duplicate check, and
 * closing the open chunk when the sample cannot join it (another window, full, older than its
 * newest sample, another counter width). Returns 0, PW_STORE_DUPLICATE or a negative code. */
static int put_prepare(pw_store_sql_t *q, const pw_store_host_t *h, uint64_t seq, uint64_t ts,
                       hstate_t **out, pw_diag_t *d)
{
    hstate_t *hs;
    int rc = host_get(q, h, &hs, d);
    if (rc != 0)
        return rc;
    if (!hs->inst_known || hs->agent_len != h->agent_id_len || hs->boot_len != h->boot_id_len ||
        memcmp(hs->agent, h->agent_id, hs->agent_len) != 0 ||
        memcmp(hs->boot, h->boot_id, hs->boot_len) != 0) {
        rc = inst_load(q, hs, h, d);
        if (rc != 0)
            return rc;
        hs->chain = 0; /* another agent instance: another codec chain */
    }
    if (hs->inst_has_seq && seq <= hs->inst_seq)
        return PW_STORE_DUPLICATE;
    uint64_t ws = window_of(q, hs, ts);
    if (hs->nsamples > 0 && (ws != hs->window_start || hs->nsamples >= q->opts.chunk_max_samples ||
                             ts < hs->t1 || h->counter_width != hs->width)) {
        rc = close_chunk(q, hs, d);
        if (rc != 0)
            return rc;
    }
    *out = hs;
    return 0;
}

/* Writes the record in q->frame (one codec frame) for sample `seq` at `ts` into the host's
 * open chunk (creating the chunk row first), then the instance, host and gap rows. */
static int put_record(pw_store_sql_t *q, const pw_store_host_t *h, hstate_t *hs, uint64_t seq,
                      uint64_t ts, uint64_t gap_before, pw_diag_t *d)
{
    int rc;
    sqlite3_stmt *st;
    if (hs->chunk_id == 0) {
        st = stmt(q, S_CHUNK_INS);
        sqlite3_bind_int64(st, 1, hs->id);
        sqlite3_bind_int64(st, 2, (int64_t)hs->window_start);
        sqlite3_bind_int64(st, 3, (int64_t)ts);
        sqlite3_bind_int(st, 4, (int)hs->width);
        sqlite3_bind_int64(st, 5, (int64_t)seq);
        if ((rc = run(q, st, d, "insert chunk")) != 0)
            return rc;
        hs->chunk_id = sqlite3_last_insert_rowid(q->db);
    }
    st = stmt(q, S_ROWS_INS);
    sqlite3_bind_int64(st, 1, hs->chunk_id);
    sqlite3_bind_int64(st, 2, hs->nsamples);
    sqlite3_bind_int64(st, 3, (int64_t)seq);
    sqlite3_bind_int64(st, 4, (int64_t)ts);
    sqlite3_bind_blob(st, 5, q->frame.data, (int)q->frame.len, SQLITE_STATIC);
    if ((rc = run(q, st, d, "insert chunk row")) != 0)
        return rc;
    if (hs->nsamples == 0) {
        hs->t0 = ts;
        hs->first_seq = seq;
    }
    hs->t1 = ts;
    hs->last_seq = seq;
    hs->nsamples++;

    st = stmt(q, S_INST_UPSERT);
    sqlite3_bind_blob(st, 1, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, hs->id);
    sqlite3_bind_int64(st, 4, (int64_t)seq);
    sqlite3_bind_int64(st, 5, (int64_t)ts);
    if ((rc = run(q, st, d, "update agent instance")) != 0)
        return rc;
    st = stmt(q, S_HOST_UPD);
    sqlite3_bind_int64(st, 1, hs->id);
    sqlite3_bind_text(st, 2, h->os ? h->os : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int)h->counter_width);
    sqlite3_bind_blob(st, 4, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)ts);
    sqlite3_bind_int64(st, 7, (int64_t)seq);
    if ((rc = run(q, st, d, "update host")) != 0)
        return rc;
    if (gap_before > 0) {
        st = stmt(q, S_GAP_INS);
        sqlite3_bind_int64(st, 1, hs->id);
        sqlite3_bind_int64(st, 2, (int64_t)ts);
        sqlite3_bind_int64(st, 3, (int64_t)seq);
        sqlite3_bind_int64(st, 4, (int64_t)gap_before);
        if ((rc = run(q, st, d, "insert gap")) != 0)
            return rc;
    }
    hs->inst_seq = seq;
    hs->inst_has_seq = 1;
    return 0;
}

static int put_locked(pw_store_sql_t *q, const pw_store_host_t *h, const pw_sample_t *s,
                      uint64_t gap_before, int *wrote, pw_diag_t *d)
{
    hstate_t *hs;
    uint64_t ts = s->timestamp_ms;
    int rc = put_prepare(q, h, s->seq, ts, &hs, d);
    if (rc != 0)
        return rc;
    if (!hs->enc_live) {
        if (pw_delta_enc_init(&hs->enc, h->counter_width) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "counter_width", "bad counter width");
        hs->enc_live = 1;
        hs->width = h->counter_width;
        hs->window_start = window_of(q, hs, ts);
    }
    /* The chunk's own numbering: agent seqs restart with every boot, the codec wants growth.
     * A fresh encoder starts with a dict_reset keyframe, also after frames of an agent's chain
     * (pw_store_put_frame) in the same chunk. */
    pw_sample_t tmp = *s;
    tmp.seq = (uint64_t)hs->nsamples + 1;
    const Poolwatch__V1__Sample *msg;
    rc = pw_delta_encode(&hs->enc, &tmp, 0, &msg, d);
    if (rc != 0) {
        if (hs->nsamples == 0)
            chunk_reset(hs);
        return rc; /* nothing written for this sample: the transaction stays good */
    }
    *wrote = 1; /* the encoder moved on: from here a failure must roll back */
    hs->chain = 0;
    pw_buf_reset(&q->frame);
    rc = pw_codec_pack_sample(msg, FRAME_MAX, &q->frame);
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "sample", "packing: %s", pw_strerror(rc));
    return put_record(q, h, hs, s->seq, ts, gap_before, d);
}

static int put_frame_locked(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d)
{
    hstate_t *hs;
    uint64_t ts = dec->timestamp_ms;
    int rc = put_prepare(q, h, dec->seq, ts, &hs, d);
    if (rc != 0)
        return rc;
    if (hs->enc_live) {
        /* Records of pw_store_put in this chunk: their encoder's base is not what the frames
         * below leave in a reader's decoder, so a later pw_store_put starts over. */
        pw_delta_enc_close(&hs->enc);
        hs->enc_live = 0;
    }
    if (hs->nsamples == 0) {
        hs->width = dec->width;
        hs->window_start = window_of(q, hs, ts);
        hs->chain = 0;
    }
    pw_buf_reset(&q->frame);
    if (follows && hs->chain && base_seq == hs->chain_seq && payload != NULL) {
        /* The chunk's reader holds exactly the agent's base: the frame as received. */
        uint8_t hdr[PW_FRAME_HEADER];
        pw_frame_put_header(hdr, (uint32_t)len);
        rc = pw_buf_append(&q->frame, hdr, sizeof(hdr));
        rc = rc ? rc : pw_buf_append(&q->frame, payload, len);
    } else {
        /* A chunk start, or the chain broke (keyframe, dict_reset, a sample not stored, a
         * gap): a keyframe of the decoder's table, with its whole dictionary. */
        rc = pw_delta_dec_pack_keyframe(dec, gap_before, FRAME_MAX, &q->frame);
    }
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "sample", "packing: %s", pw_strerror(rc));
    rc = put_record(q, h, hs, dec->seq, ts, gap_before, d);
    if (rc == 0) {
        hs->chain = 1;
        hs->chain_seq = dec->seq;
    }
    return rc;
}

/* ---- entry points ------------------------------------------------------------------------ */

int pw__store_sql_put(pw_store_sql_t *q, const pw_store_host_t *h, const pw_sample_t *s,
                      uint64_t gap_before, pw_diag_t *d)
{
    int rc = begin(q, d);
    if (rc != 0) {
        abort_txn(q);
        return rc;
    }
    int wrote = 0;
    rc = put_locked(q, h, s, gap_before, &wrote, d);
    /* Codec refusals before anything was written leave the transaction as it was. */
    if (rc < 0 && (wrote || (rc != PW_EINVAL && rc != PW_ETOOBIG && rc != PW_ESEQ)))
        abort_txn(q);
    return rc;
}

int pw__store_sql_put_frame(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d)
{
    int rc = begin(q, d);
    if (rc == 0)
        rc = put_frame_locked(q, h, dec, payload, len, base_seq, follows, gap_before, d);
    /* Any failure may have closed a chunk or written a row: roll everything back. */
    if (rc < 0)
        abort_txn(q);
    return rc;
}

int pw__store_sql_commit(pw_store_sql_t *q, pw_diag_t *d)
{
    if (!q->in_txn)
        return 0;
    int rc = run(q, stmt(q, S_COMMIT), d, "commit");
    if (rc != 0) {
        abort_txn(q);
        return rc;
    }
    q->in_txn = 0;
    q->tags_committed = pw_tagdict_count(&q->tags);
    return 0;
}

static int64_t del_count(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d, const char *what)
{
    int rc = run(q, s, d, what);
    return rc != 0 ? rc : (int64_t)sqlite3_changes(q->db);
}

static uint64_t cutoff(uint64_t now, uint64_t keep)
{
    return now > keep ? now - keep : 0;
}

/* Writes the 1-min rollups of the closed chunks that expire at `raw_cut` (deleted next, in the
 * same transaction), unless the 1-min level would already be gone (t1 < m1_cut). */
static int rollup_expiring(pw_store_sql_t *q, uint64_t raw_cut, uint64_t m1_cut, pw_diag_t *d)
{
    sqlite3_stmt *s = stmt(q, S_RET_EXPIRING);
    sqlite3_bind_int64(s, 1, (int64_t)raw_cut);
    sqlite3_bind_int64(s, 2, (int64_t)m1_cut);
    pw_buf_t recs;
    pw_buf_init(&recs, BLOB_MAX);
    int r = 0, rc;
    /* The cursor stays on chunks while rollups and tags are inserted (other tables). */
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t hid = sqlite3_column_int64(s, 0);
        unsigned width = (unsigned)sqlite3_column_int(s, 1);
        uint64_t t0 = (uint64_t)sqlite3_column_int64(s, 2),
                 t1 = (uint64_t)sqlite3_column_int64(s, 3);
        r = zdecompress(q, sqlite3_column_blob(s, 5), (size_t)sqlite3_column_bytes(s, 5),
                        (uint64_t)sqlite3_column_int64(s, 4), &recs, d);
        if (r == 0)
            r = rollup_chunk(q, hid, width, sqlite3_column_int(s, 6), &recs, t0, t1, ROLL_M1, d);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sqlfail(q, rc, d, "read expiring chunks");
    sqlite3_reset(s);
    pw_buf_close(&recs);
    return r;
}

int64_t pw__store_sql_retention(pw_store_sql_t *q, uint64_t now_ms, pw_diag_t *d)
{
    int own = !q->in_txn;
    int rc = begin(q, d);
    int64_t total = 0, n = 0;
    if (rc == 0)
        rc = rollup_expiring(q, cutoff(now_ms, q->opts.raw_retention_ms),
                             cutoff(now_ms, q->opts.m1_retention_ms), d);
    if (rc == 0) {
        sqlite3_stmt *s = stmt(q, S_RET_CHUNKS);
        sqlite3_bind_int64(s, 1, (int64_t)cutoff(now_ms, q->opts.raw_retention_ms));
        n = del_count(q, s, d, "retention of raw chunks");
    }
    for (int level = PW_STORE_1MIN; rc == 0 && n >= 0 && level <= PW_STORE_15MIN; level++) {
        total += n;
        uint64_t keep = level == PW_STORE_1MIN ? q->opts.m1_retention_ms : q->opts.m15_retention_ms;
        sqlite3_stmt *s = stmt(q, S_RET_ROLLUPS);
        sqlite3_bind_int(s, 1, level);
        sqlite3_bind_int64(s, 2, (int64_t)cutoff(now_ms, keep));
        n = del_count(q, s, d, "retention of rollups");
    }
    if (rc == 0 && n >= 0) {
        total += n;
        sqlite3_stmt *s = stmt(q, S_RET_GAPS);
        sqlite3_bind_int64(s, 1, (int64_t)cutoff(now_ms, q->opts.m15_retention_ms));
        n = del_count(q, s, d, "retention of gaps");
        total += n > 0 ? n : 0;
    }
    if (rc == 0 && n < 0)
        rc = (int)n;
    if (rc != 0) {
        abort_txn(q);
        return rc;
    }
    if (own && (rc = pw__store_sql_commit(q, d)) != 0)
        return rc;
    return total;
}

/* ---- series ------------------------------------------------------------------------------ */

typedef struct {
    pw_store_series_t *out;
    uint64_t step, from, to;
    const uint8_t *tag;
    size_t tag_len;
    pw_pool_t pool;
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
    sqlite3_stmt *s = stmt(q, S_HOST_GET);
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = 0;
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else if (rc == SQLITE_DONE)
        r = PW_ENOENT;
    else
        r = sqlfail(q, rc, d, "find host");
    sqlite3_reset(s);
    return r;
}

/* Reads raw chunks of host `hid` overlapping [from, to]; open ones only when `open_only`. */
static int each_chunk(pw_store_sql_t *q, int64_t hid, uint64_t from, uint64_t to, int open_only,
                      int not_m1, pw_chunk_cb cb, void *arg, const int *stop, pw_diag_t *d)
{
    /* Chunks hold one aligned window, so one that reaches `from` starts at most a window
     * before it. Closed chunks come first (compaction goes in id order); the rows of sealed and
     * open ones (data NULL) are read by another statement, so their ids are collected first.
     * `not_m1`: only chunks whose 1-min rollup is not written yet. */
    sqlite3_stmt *s = stmt(q, not_m1 ? S_CHUNK_RANGE_M1 : S_CHUNK_RANGE);
    sqlite3_bind_int64(s, 1, hid);
    sqlite3_bind_int64(s, 2, (int64_t)cutoff(from, q->opts.chunk_window_ms));
    sqlite3_bind_int64(s, 3, (int64_t)to);
    sqlite3_bind_int64(s, 4, (int64_t)(open_only ? UINT64_MAX >> 1 : from));
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
        r = load_chunk(q, id, data, dlen, raw, &q->tmp, d);
        if (r == 0)
            r = replay(fmt, q->tmp.data, q->tmp.len, width, cb, arg, d);
    }
    if (r == 0 && !(stop && *stop) && rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = sqlfail(q, rc, d, "read chunks");
    sqlite3_reset(s);
    for (size_t i = 0; r == 0 && !(stop && *stop) && i < np; i++) {
        r = load_chunk(q, pend[i].id, NULL, 0, 0, &q->tmp, d);
        if (r == 0)
            r = replay(PW_CHUNK_RECORDS, q->tmp.data, q->tmp.len, pend[i].width, cb, arg, d);
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
    series_t sr = {out, step_ms, from_ms, to_ms, tag, tag_len, pool};
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc == PW_ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    if (step_ms < M1_MS) {
        out->level = PW_STORE_RAW;
        rc = each_chunk(q, hid, sr.from, sr.to, 0, 0, series_raw_cb, &sr, NULL, d);
        if (rc == 0 && (rc = series_normalize(out)) != 0)
            rc = pw_diag_set(d, rc, 0, 0, "series", "out of memory");
        return rc != 0 ? rc : (int64_t)out->n;
    }
    int level = step_ms < M15_MS ? PW_STORE_1MIN : PW_STORE_15MIN;
    out->level = (pw_store_level_t)level;
    int64_t gid = pw_tagdict_find(&q->tags, tag, tag_len);
    if (gid >= 0) {
        uint32_t gkey = PW_ROW_KEY(gid, pool);
        sqlite3_stmt *s = stmt(q, S_ROLLUP_RANGE);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int(s, 2, level);
        sqlite3_bind_int64(s, 3, (int64_t)cutoff(from_ms, q->opts.chunk_window_ms));
        sqlite3_bind_int64(s, 4, (int64_t)to_ms);
        sqlite3_bind_int64(s, 5, (int64_t)cutoff(from_ms, level == PW_STORE_1MIN ? M1_MS : M15_MS));
        sqlite3_bind_int64(s, 6, gkey);
        int r;
        while (rc == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
            rc = zdecompress(q, sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                             (uint64_t)sqlite3_column_int64(s, 0), &q->tmp, d);
            if (rc == 0)
                rc = series_rollup(&sr, q->tmp.data, q->tmp.len, gkey, d);
        }
        if (rc == 0 && r != SQLITE_DONE)
            rc = sqlfail(q, r, d, "read rollups");
        sqlite3_reset(s);
    }
    /* The open chunk is not rolled up yet: read it raw (its tag may be new to `tags`); at the
     * 1-min level so are the closed chunks that have not expired yet. */
    if (rc == 0)
        rc = each_chunk(q, hid, sr.from, sr.to, level == PW_STORE_15MIN, level == PW_STORE_1MIN,
                        series_raw_cb, &sr, NULL, d);
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

int pw__store_sql_totals(pw_store_sql_t *q, const char *host, uint64_t from_ms, uint64_t to_ms,
                         pw_store_totals_cb cb, void *arg, pw_diag_t *d)
{
    int64_t hid = 0;
    int rc = host_id_of(q, host, &hid, d);
    if (rc != 0)
        return rc == PW_ENOENT ? pw_diag_set(d, rc, 0, 0, "host", "host %s unknown", host) : rc;
    totals_t t = {from_ms, to_ms, cb, arg, 0};
    return each_chunk(q, hid, from_ms, to_ms, 0, 0, totals_cb, &t, &t.stopped, d);
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
    rc = each_chunk(q, hid, from_ms, UINT64_MAX >> 1, 0, 0, table_at_cb, &t, &t.found, d);
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
    sqlite3_stmt *s = stmt(q, S_CHUNK_LAST);
    sqlite3_bind_int64(s, 1, hid);
    int r = sqlite3_step(s);
    if (r == SQLITE_DONE) {
        sqlite3_reset(s);
        return pw_diag_set(d, PW_ENOENT, 0, 0, "host", "nothing stored for %s", host);
    }
    if (r != SQLITE_ROW) {
        rc = sqlfail(q, r, d, "find newest chunk");
        sqlite3_reset(s);
        return rc;
    }
    int64_t id = sqlite3_column_int64(s, 0);
    unsigned width = (unsigned)sqlite3_column_int(s, 1);
    uint64_t raw = (uint64_t)sqlite3_column_int64(s, 2);
    const void *data = sqlite3_column_blob(s, 3);
    int fmt = data != NULL ? sqlite3_column_int(s, 4) : PW_CHUNK_RECORDS;
    if (data != NULL) {
        rc = zdecompress(q, data, (size_t)sqlite3_column_bytes(s, 3), raw, &q->tmp, d);
        sqlite3_reset(s);
    } else {
        sqlite3_reset(s);
        rc = load_chunk(q, id, NULL, 0, 0, &q->tmp, d);
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

static char *col_strdup(sqlite3_stmt *s, int i)
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
    sqlite3_stmt *s = stmt(q, S_HOSTS_ALL);
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
        h->name = col_strdup(s, 0);
        h->os = col_strdup(s, 1);
        if (h->name == NULL || h->os == NULL)
            r = PW_ENOMEM;
        h->counter_width = (unsigned)sqlite3_column_int(s, 2);
        h->agent_id_len = col_blob(s, 3, h->agent_id, sizeof(h->agent_id));
        h->boot_id_len = col_blob(s, 4, h->boot_id, sizeof(h->boot_id));
        h->last_seen_ms = (uint64_t)sqlite3_column_int64(s, 5);
        h->last_seq = (uint64_t)sqlite3_column_int64(s, 6);
    }
    if (r == PW_ENOMEM)
        r = pw_diag_set(d, r, 0, 0, "hosts", "out of memory");
    else if (rc != SQLITE_DONE)
        r = sqlfail(q, rc, d, "list hosts");
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
    sqlite3_stmt *s = stmt(q, S_INST_GET);
    sqlite3_bind_blob(s, 1, agent_id, (int)agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, boot_id, (int)boot_id_len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? PW_ENOENT : PW_ESTORE;
    if (rc == SQLITE_ROW)
        *seq = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return r;
}

static int pragma_int(pw_store_sql_t *q, int which, int64_t *v, pw_diag_t *d)
{
    sqlite3_stmt *s = stmt(q, which);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(s, 0);
    int r = rc == SQLITE_ROW ? 0 : sqlfail(q, rc, d, "pragma");
    sqlite3_reset(s);
    return r;
}

static uint64_t file_size(const char *path, const char *suffix)
{
    char p[4096];
    struct stat sb;
    if (snprintf(p, sizeof(p), "%s%s", path, suffix) >= (int)sizeof(p) || stat(p, &sb) != 0)
        return 0;
    return (uint64_t)sb.st_size;
}

int pw__store_sql_stats(pw_store_sql_t *q, pw_store_stats_t *o, pw_diag_t *d)
{
    sqlite3_stmt *s = stmt(q, S_STATS);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        rc = sqlfail(q, rc, d, "stats");
        sqlite3_reset(s);
        return rc;
    }
    o->closes = q->closes;
    o->close_us_total = q->close_us_total;
    o->close_us_max = q->close_us_max;
    o->compact_fallbacks = q->compact_fallbacks;
    o->chunks = (uint64_t)sqlite3_column_int64(s, 0);
    o->closed_chunks = (uint64_t)sqlite3_column_int64(s, 1);
    o->samples = (uint64_t)sqlite3_column_int64(s, 2) + (uint64_t)sqlite3_column_int64(s, 3);
    o->raw_bytes = (uint64_t)sqlite3_column_int64(s, 4) + (uint64_t)sqlite3_column_int64(s, 5);
    o->rollup_windows = (uint64_t)sqlite3_column_int64(s, 6);
    o->rollup_bytes = (uint64_t)sqlite3_column_int64(s, 7);
    o->tags = (uint64_t)sqlite3_column_int64(s, 8);
    o->hosts = (uint64_t)sqlite3_column_int64(s, 9);
    sqlite3_reset(s);
    if (q->memory) {
        int64_t pages = 0, psize = 0;
        rc = pragma_int(q, S_PAGES, &pages, d);
        rc = rc ? rc : pragma_int(q, S_PAGESIZE, &psize, d);
        o->bytes_on_disk = (uint64_t)(pages * psize);
        return rc;
    }
    o->bytes_on_disk = file_size(q->path, "") + file_size(q->path, "-wal");
    return 0;
}

int pw__store_sql_flush(pw_store_sql_t *q, pw_diag_t *d)
{
    int own = !q->in_txn;
    int rc = begin(q, d);
    for (size_t i = 0; rc == 0 && i < q->nslots; i++)
        if (q->slots[i] != NULL && q->slots[i]->nsamples > 0)
            rc = close_chunk(q, q->slots[i], d);
    /* Hosts not seen by this process may still have open chunks: loading closes them. */
    while (rc == 0) {
        sqlite3_stmt *s = stmt(q, S_OPEN_HOSTS);
        int r = sqlite3_step(s);
        if (r == SQLITE_DONE) {
            sqlite3_reset(s);
            break;
        }
        if (r != SQLITE_ROW) {
            rc = sqlfail(q, r, d, "find open chunks");
            sqlite3_reset(s);
            break;
        }
        char *name = col_strdup(s, 0);
        sqlite3_reset(s);
        if (name == NULL) {
            rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
            break;
        }
        hstate_t *hs = host_find(q, name);
        pw_store_host_t h = {.name = name, .counter_width = 64};
        if (hs != NULL)
            rc = close_chunk(q, hs, d); /* cannot be: cached hosts were closed above */
        else
            rc = host_get(q, &h, &hs, d);
        pw_free(name); /* host_get closed every open chunk of the host: progress */
    }
    if (rc == 0) {
        int64_t n = compact_some(q, UINT64_MAX, d);
        rc = n < 0 ? (int)n : 0;
    }
    if (rc != 0) {
        abort_txn(q);
        return rc;
    }
    return own ? pw__store_sql_commit(q, d) : 0;
}

int pw__store_sql_checkpoint(pw_store_sql_t *q, pw_diag_t *d)
{
    if (q->in_txn)
        return pw_diag_set(d, PW_EAGAIN, 0, 0, "checkpoint", "a transaction is open");
    int log = 0, done = 0;
    int rc = sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
    if (rc == SQLITE_BUSY)
        return pw_diag_set(d, PW_EAGAIN, 0, 0, "checkpoint", "readers hold the WAL");
    return rc == SQLITE_OK ? 0 : sqlfail(q, rc, d, "checkpoint");
}

int pw__store_sql_set_max_bytes(pw_store_sql_t *q, uint64_t max_db_bytes, pw_diag_t *d)
{
    int64_t psize = 0;
    int rc = pragma_int(q, S_PAGESIZE, &psize, d);
    if (rc != 0)
        return rc;
    uint64_t pages = max_db_bytes == 0 ? 4294967294ull : max_db_bytes / (uint64_t)psize;
    if (pages < 1)
        pages = 1;
    /* PRAGMA takes no bound parameters: the value is our own integer, never outside text. */
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA max_page_count=%llu", (unsigned long long)pages);
    sqlite3_stmt *s;
    rc = sqlite3_prepare_v2(q->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return sqlfail(q, rc, d, "max_page_count");
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : sqlfail(q, rc, d, "max_page_count");
}

/* ---- open / close ------------------------------------------------------------------------ */

static int exec_const(pw_store_sql_t *q, const char *sql, pw_diag_t *d, const char *what)
{
    char *err = NULL;
    int rc = sqlite3_exec(q->db, sql, NULL, NULL, &err);
    if (rc == SQLITE_OK)
        return 0;
    int prim = rc & 0xff;
    int code = prim == SQLITE_FULL ? PW_ENOSPC : prim == SQLITE_NOMEM ? PW_ENOMEM : PW_ESTORE;
    pw_diag_set(d, code, 0, 0, what, "sqlite: %s: %s (code %d)", what,
                err ? err : sqlite3_errmsg(q->db), rc);
    sqlite3_free(err);
    return code;
}

static int migrate(pw_store_sql_t *q, pw_diag_t *d)
{
    int rc = exec_const(q, "BEGIN IMMEDIATE", d, "begin migration");
    if (rc != 0)
        return rc;
    rc = exec_const(q,
                    "CREATE TABLE IF NOT EXISTS migrations(version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_ms INTEGER NOT NULL)",
                    d, "migrations table");
    int64_t have = 0;
    sqlite3_stmt *s = NULL;
    if (rc == 0) {
        int r = sqlite3_prepare_v2(q->db, "SELECT coalesce(max(version), 0) FROM migrations", -1,
                                   &s, NULL);
        if (r == SQLITE_OK && (r = sqlite3_step(s)) == SQLITE_ROW)
            have = sqlite3_column_int64(s, 0);
        else
            rc = sqlfail(q, r, d, "schema version");
        sqlite3_finalize(s);
        s = NULL;
    }
    if (rc == 0 && have > SCHEMA_LAST)
        rc = pw_diag_set(d, PW_ESTORE, 0, 0, "schema",
                         "database schema version %lld is newer than this build's %d",
                         (long long)have, SCHEMA_LAST);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (size_t i = 0; rc == 0 && i < sizeof(migrations) / sizeof(migrations[0]); i++) {
        const migration_t *m = &migrations[i];
        if (m->version <= have)
            continue;
        rc = exec_const(q, m->sql, d, m->name);
        if (rc != 0)
            break;
        int r = sqlite3_prepare_v2(
            q->db, "INSERT INTO migrations(version, name, applied_ms) VALUES(?1, ?2, ?3)", -1, &s,
            NULL);
        if (r == SQLITE_OK) {
            sqlite3_bind_int(s, 1, m->version);
            sqlite3_bind_text(s, 2, m->name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(s, 3, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
            r = sqlite3_step(s);
        }
        if (r != SQLITE_DONE)
            rc = sqlfail(q, r, d, "record migration");
        sqlite3_finalize(s);
        s = NULL;
    }
    if (rc == 0)
        return exec_const(q, "COMMIT", d, "commit migration");
    exec_const(q, "ROLLBACK", NULL, "rollback migration");
    return rc;
}

static int load_tags(pw_store_sql_t *q, pw_diag_t *d)
{
    sqlite3_stmt *s = stmt(q, S_TAG_ALL);
    int rc, r = 0;
    while (r == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        size_t n = (size_t)sqlite3_column_bytes(s, 1);
        const uint8_t *t = sqlite3_column_blob(s, 1);
        if (id < 0 || id > UINT32_MAX || t == NULL ||
            pw_tagdict_define(&q->tags, (uint32_t)id, t, n) != 0)
            r = pw_diag_set(d, PW_ECORRUPT, 0, 0, "tags", "tag id %lld invalid", (long long)id);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sqlfail(q, rc, d, "load tags");
    sqlite3_reset(s);
    q->tags_committed = pw_tagdict_count(&q->tags);
    return r;
}

/* ---- background checkpoints ------------------------------------------------------------ */

/* SQLite's automatic checkpoint runs inside the COMMIT that crosses wal_autocheckpoint pages:
 * on the collector's loop, it copies the WAL into the database and fsyncs it while no sample
 * is read and no ack is sent. A thread with its own connection does it instead, every
 * CKPT_MS: a PASSIVE checkpoint never blocks the writer, and readers and the writer never
 * wait for it (https://sqlite.org/wal.html#checkpointing, sqlite3_wal_checkpoint_v2). The WAL
 * restarts from its beginning at the first commit after a checkpoint that caught up. */
#define CKPT_MS 1000

typedef struct ckpt_s {
    sqlite3 *db;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
} ckpt_t;

/* One read on the checkpointer's connection: it then knows the database is in WAL mode and
 * maps the WAL. Returns an SQLite result code. */
static int ckpt_touch(sqlite3 *db)
{
    return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
}

static void *ckpt_main(void *arg)
{
    ckpt_t *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += CKPT_MS / 1000;
        ts.tv_nsec += (long)(CKPT_MS % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        if (k->stop)
            break;
        pthread_mutex_unlock(&k->mu);
        /* Errors (busy, disk full) leave the WAL as it is: the next round tries again. A
         * connection that has not read the database since it opened has not opened its WAL
         * either, and its checkpoint is a no-op that reports success with log = -1 (SQLite
         * 3.40): the WAL then grew without end. A read opens it (ckpt_touch). */
        int log = 0, done = 0;
        int r = sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (r == SQLITE_OK && log < 0 && ckpt_touch(k->db) == SQLITE_OK)
            sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

static void ckpt_stop(ckpt_t *k)
{
    if (k == NULL)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->th, NULL);
    sqlite3_close(k->db);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    pw_free(k);
}

/* Starts the checkpointer and turns the automatic checkpoint off; when it cannot start, the
 * automatic checkpoint stays on (slower, still correct). */
static void ckpt_start(pw_store_sql_t *q)
{
    ckpt_t *k = pw_calloc(1, sizeof(*k));
    if (k == NULL)
        return;
    if (sqlite3_open_v2(q->path, &k->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close(k->db);
        pw_free(k);
        return;
    }
    sqlite3_busy_timeout(k->db, q->opts.busy_timeout_ms);
    ckpt_touch(k->db); /* a failure is retried by the first round */
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    if (pthread_create(&k->th, NULL, ckpt_main, k) != 0) {
        sqlite3_close(k->db);
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cv);
        pw_free(k);
        return;
    }
    if (exec_const(q, "PRAGMA wal_autocheckpoint=0", NULL, "wal_autocheckpoint") != 0) {
        ckpt_stop(k);
        return;
    }
    q->ckpt = k;
}

int pw__store_sql_open(const char *path, const pw_store_opts_t *opts, pw_store_sql_t **out,
                       pw_diag_t *d)
{
    pw_store_sql_t *q = pw_calloc(1, sizeof(*q));
    if (q == NULL || (q->path = pw_strdup(path)) == NULL) {
        pw_free(q);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    }
    q->opts = *opts;
    q->memory = strcmp(path, ":memory:") == 0;
    pw_tagdict_init(&q->tags, 0);
    pw_buf_init(&q->frame, FRAME_MAX + 16);
    pw_buf_init(&q->zbuf, BLOB_MAX);
    pw_buf_init(&q->tmp, BLOB_MAX);
    pw_buf_init(&q->recs, BLOB_MAX);
    pw_buf_init(&q->cols, BLOB_MAX);
    q->cctx = ZSTD_createCCtx();
    q->dctx = ZSTD_createDCtx();
    int rc = 0;
    if (q->cctx == NULL || q->dctx == NULL)
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "zstd", "out of memory");
    int r = rc ? SQLITE_OK
               : sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == 0 && r != SQLITE_OK) {
        /* SQLite says only "unable to open database file": say which directory is missing or
         * not writable (the systemd unit creates /var/lib/poolwatch-collector; a hand-run
         * collector with the example config does not). */
        char dir[1024], why[1200] = "";
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash != NULL && slash != dir) {
            *slash = '\0';
            struct stat sb;
            if (stat(dir, &sb) != 0)
                snprintf(why, sizeof(why), " (directory %s: %s; create it or set store.path)", dir,
                         strerror(errno));
            else if (access(dir, W_OK) != 0)
                snprintf(why, sizeof(why), " (directory %s is not writable by this user)", dir);
        }
        rc = pw_diag_set(d, r == SQLITE_NOMEM ? PW_ENOMEM : PW_ESTORE, 0, 0, "path",
                         "sqlite: cannot open %s: %s%s", path,
                         q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(r), why);
    }
    if (rc == 0) {
        sqlite3_extended_result_codes(q->db, 1);
        sqlite3_busy_timeout(q->db, q->opts.busy_timeout_ms);
        /* WAL: commits append to the log, readers are not blocked. synchronous=FULL: the WAL
         * is fsync'ed at every commit, which is what "acked means on disk" needs; NORMAL
         * would only sync at checkpoints and can lose the newest commits on power loss
         * (https://sqlite.org/pragma.html#pragma_synchronous, https://sqlite.org/wal.html). */
        rc = exec_const(q, "PRAGMA journal_mode=WAL", d, "journal_mode");
        rc = rc ? rc : exec_const(q, "PRAGMA synchronous=FULL", d, "synchronous");
        rc = rc ? rc : exec_const(q, "PRAGMA foreign_keys=ON", d, "foreign_keys");
        /* A WAL restarted after a checkpoint is reused, not shrunk: one that grew (a burst, a
         * long reader) gives back what is above 64 MiB at the next restart. */
        rc = rc ? rc : exec_const(q, "PRAGMA journal_size_limit=67108864", d, "journal_size_limit");
    }
    if (rc == 0 && !q->memory) {
        sqlite3_stmt *s;
        const unsigned char *mode = NULL;
        if (sqlite3_prepare_v2(q->db, "PRAGMA journal_mode", -1, &s, NULL) == SQLITE_OK) {
            if (sqlite3_step(s) == SQLITE_ROW)
                mode = sqlite3_column_text(s, 0);
            if (mode == NULL || strcmp((const char *)mode, "wal") != 0)
                rc = pw_diag_set(d, PW_ESTORE, 0, 0, "journal_mode",
                                 "sqlite: %s cannot use WAL (journal mode %s)", path,
                                 mode ? (const char *)mode : "?");
            sqlite3_finalize(s);
        }
    }
    rc = rc ? rc : migrate(q, d);
    for (int i = 0; rc == 0 && i < S__COUNT; i++) {
        r = sqlite3_prepare_v3(q->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &q->st[i], NULL);
        if (r != SQLITE_OK)
            rc = sqlfail(q, r, d, sql_text[i]);
    }
    rc = rc ? rc : load_tags(q, d);
    if (rc == 0 && !q->memory)
        ckpt_start(q);
    if (rc == 0 && q->opts.max_db_bytes != 0)
        rc = pw__store_sql_set_max_bytes(q, q->opts.max_db_bytes, d);
    if (rc != 0) {
        pw__store_sql_close(q);
        return rc;
    }
    *out = q;
    return 0;
}

void pw__store_sql_close(pw_store_sql_t *q)
{
    if (q == NULL)
        return;
    ckpt_stop(q->ckpt);
    if (q->db != NULL)
        abort_txn(q);
    forget_hosts(q);
    pw_free(q->slots);
    for (int i = 0; i < S__COUNT; i++)
        sqlite3_finalize(q->st[i]);
    sqlite3_close(q->db);
    ZSTD_freeCCtx(q->cctx);
    ZSTD_freeDCtx(q->dctx);
    pw_tagdict_close(&q->tags);
    pw_buf_close(&q->frame);
    pw_buf_close(&q->zbuf);
    pw_buf_close(&q->tmp);
    pw_buf_close(&q->recs);
    pw_buf_close(&q->cols);
    pw_free(q->path);
    pw_free(q);
}
