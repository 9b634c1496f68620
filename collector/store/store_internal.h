/* store_internal.h: between the store's thin API (store.c: arguments, timing, counters) and
 * its SQLite backend (the store_*.c files), and between those files. Not for other modules.
 *
 * Tables: hosts, instances (last seq per agent_id/boot_id), tags (global tag bytes -> id),
 * chunks (per host and aligned window; data NULL while open or sealed, then one zstd blob in
 * columns, chunk.h), chunk_rows (one record per sample of an open or sealed chunk: what makes a
 * sample durable before its chunk is compacted), rollups (per host, level and chunk: zstd pages
 * of up to 256 rows of 1-min or 15-min buckets), gaps, migrations.
 *
 * In memory, per host: the open chunk's encoder (common/delta.h, a fresh one per chunk, so
 * the chunk starts with a keyframe carrying its dictionary) and its records. Any failure
 * inside a transaction rolls it back and forgets every host's in-memory state: the next put
 * of a host reloads it from the database (closing the open chunk it finds there), the same
 * path as after a restart, so memory never disagrees with what is stored.
 *
 * Files: store_open.c (open, pragmas, schema migrations, statements, close), store_txn.c
 * (transactions, group commit), store_put.c (hosts' state, duplicates, put), store_chunks.c
 * (chunk blobs, sealing, compaction, flush), store_rollup.c (1-min and 15-min rollups,
 * retention), store_query.c (series, totals, tables, hosts, stats), store_checkpoint.c (the WAL
 * checkpointer thread).
 */
#ifndef PW_STORE_INTERNAL_H
#define PW_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "buf.h"
#include "chunk.h"
#include "delta.h"
#include "store.h"
#include "tagdict.h"

#define BLOB_MAX         (1024u * 1024u * 1024u) /* ceiling of any in-memory blob */
#define FRAME_MAX        (64u * 1024u * 1024u)
#define M1_MS            60000ull
#define M15_MS           900000ull
#define ROLLUP_VER       1
#define PW__STORE_DAY_MS 86400000ull /* day pages: UTC days */

/* Prepared statements: indexes into pw_store_sql_t.st (texts in store_open.c). */
enum {
    S_BEGIN,
    S_COMMIT,
    S_SYNC_NORMAL,
    S_SYNC_FULL,
    S_ROLLBACK,
    S_HOST_GET,
    S_HOST_INS,
    S_HOST_UPD,
    S_HOST_LIMITS,
    S_INST_GET,
    S_AGENT_LAST,
    S_INST_LAST_TS,
    S_INST_UPSERT,
    S_INST_AWAY,
    S_INST_SEAL,
    S_HOST_SEAL,
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
    S_CHUNK_RANGE_NP,
    S_CHUNK_RANGE_M15,
    S_RET_EXPIRING,
    S_CHUNK_LAST,
    S_GAP_INS,
    S_GAP_LOST,
    S_GAPS_RANGE,
    S_CHUNK_NSAMPLES,
    S_RET_EVENTS,
    S_RET_CHUNKS,
    S_RET_ROLLUPS,
    S_RET_GAPS,
    S_RET_SERIES,
    S_HOSTS_ALL,
    S_OPEN_HOSTS,
    S_STATS,
    S_PAGES,
    S_PAGESIZE,
    S_FREEPAGES,
    S_SERIES_INS,
    S_SERIES_RANGE,
    S_SERIES_RANGE15,
    S_CHUNK_PAGED,
    S_UNPAGED_NEXT,
    S_OLDEST,
    S_EVICT_CHUNKS,
    S_EVICT_ROLLUPS,
    S_DAYS_INS,
    S_DAYS_RANGE,
    S_DAYS_OF,
    S_MERGE_SAVE,
    S_MERGE_RELEASE,
    S_MERGE_UNDO,
    S_DAYS_DEL,
    S_RET_DAYS,
    S_MERGE_FIND,
    S_MERGE_PAGES,
    S_SERIES_DEL,
    S_HOST_NEXT,
    S_SERIES_EXPIRING,
    S_DAYS_EXPIRING,
    S__COUNT
};

typedef struct pw__store_live_s pw__store_live_t;
typedef struct pw__store_tot_s pw__store_tot_t; /* store_totals.c's statements */
typedef struct pw__store_hot_s pw__store_hot_t; /* an open chunk's totals buckets */

typedef struct pw_store_hstate_s {
    int64_t id;
    char *name;
    /* agent instance of the newest sample and its last seq and time. Its instances row is
     * written when the instance comes (inst_here: the row names this host) and when a chunk is
     * sealed, not at every put: inst_dirty says puts came since (their seq is read from the
     * open chunk meanwhile: S_INST_GET). */
    uint8_t agent[64], boot[64];
    size_t agent_len, boot_len;
    int inst_known, inst_has_seq, inst_here, inst_dirty;
    uint64_t inst_seq, inst_ts;
    /* What the host's row names: written when a put's instance, OS, width, source kind or
     * interval differs (row_known 0: unknown, written at the next put). */
    uint8_t row_agent[64], row_boot[64];
    size_t row_agent_len, row_boot_len;
    unsigned row_width;
    int row_source_kind;
    uint32_t row_interval_ms;
    char *row_os;
    uint32_t row_os_build;
    char row_arch[16], row_agent_version[32];
    int row_known;
    pw_pool_limit_t row_limit[2]; /* the row's nonpaged and paged limits (S_HOST_GET) */
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
    /* The open chunk's rows by row, kept as it grows (store_series.c): NULL when the chunk
     * started before this process, when the keys changed meaning inside it, or when the
     * memory budget (live_series_max_bytes) was reached. */
    pw__store_live_t *live;
    /* The open chunk's totals per 1-min bucket (store_totals.c), written when it is sealed. */
    pw__store_hot_t *hot;
} pw_store_hstate_t;

typedef struct pw_store_ckpt_s pw_store_ckpt_t;

typedef struct pw_store_sql_s pw_store_sql_t;

struct pw_store_sql_s {
    sqlite3 *db;
    sqlite3_stmt *st[S__COUNT];
    pw_store_opts_t opts;
    char *path;
    int memory;
    pw_store_ckpt_t *ckpt; /* the background checkpointer, NULL for :memory: or when it failed */
    int in_txn;
    pw_store_hstate_t **slots; /* open addressing by name */
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
    /* WAL and file size (store_checkpoint.c, store_rollup.c) */
    int wal_pages;            /* pages in the WAL after the last commit (sqlite3_wal_hook) */
    uint64_t wal_max_seen;    /* largest WAL file seen after a commit, bytes */
    uint64_t wal_checkpoints; /* checkpoints run after a commit */
    /* the writer's busy handler (store_checkpoint.c): ms waited for the checkpointer's hold and
     * for anything else, in the current wait */
    uint64_t busy_ckpt_ms, busy_other_ms, busy_last_ms;
    int busy_was_ckpt;
    uint64_t busy_gave_up;   /* the checkpointer's hold (its hold_gen) a wait gave up on */
    uint64_t evicted;        /* items dropped for max_size_bytes */
    uint64_t vacuumed_bytes; /* bytes given back by incremental_vacuum */
    int64_t page_size;
    /* Sealed chunks' rows in memory until compaction writes their pages (store_series.c) */
    pw__store_live_t **sealed;
    size_t nsealed, sealed_cap;
    size_t live_bytes; /* held by every live form, open and sealed */
    uint32_t *chg;     /* scratch: a put's changed rows (store_put.c) */
    size_t chg_cap;
    pw__store_tot_t *tot; /* host totals (store_totals.c) */
    /* Compaction's work (store_chunks.c), one fact each, all set at open and after a rollback
     * (what was done may be back): no chunk below sealed_from is sealed and waiting, none below
     * unpaged_from lacks its series pages (INT64_MAX: none at all; 0 at open); totals_todo:
     * sealed chunks may still lack their totals buckets (stored before schema 8, or left open
     * by a previous run); merge[0..nmerge): hosts that got chunk pages, whose days may be due
     * for merging into day pages (store_series.c), and merge_scan the scan of every host after
     * an open or a rollback (the last host id looked at, -1 when done). When none holds, a group
     * commit with nothing to compact runs no query and no transaction. */
    int64_t sealed_from, unpaged_from;
    int totals_todo;
    struct pw__store_merge_s {
        int64_t host, grp; /* a host to look at, from this group of 32 tags on */
    } * merge;
    size_t nmerge, merge_cap;
    int64_t merge_scan;
    uint64_t pages_lost;             /* series pages that did not decode: gaps, dropped */
    uint64_t merges, merge_us_total; /* day merges run (host, 32-tag group, day), wall us */
};

/* Whether compaction may find work besides max_size (the fields above). */
static inline int pw__store_compact_pending(const pw_store_sql_t *q)
{
    return q->sealed_from != INT64_MAX || q->unpaged_from != INT64_MAX || q->totals_todo ||
           q->nmerge > 0 || q->merge_scan >= 0;
}

struct pw_store_s {
    pw_store_sql_t *sql;
    pw_store_opts_t opts; /* defaults filled in */
    uint64_t puts, duplicates, commits, failed_commits, updates;
    uint64_t commit_us_total, commit_us_max;
};

/* ---- the backend's entry points, called by store.c (what they do: store.h) --------------- */

int pw__store_sql_open(const char *path, const pw_store_opts_t *opts, pw_store_sql_t **out,
                       pw_diag_t *d);
void pw__store_sql_close(pw_store_sql_t *q);
int pw__store_sql_put(pw_store_sql_t *q, const pw_store_host_t *host, const pw_sample_t *s,
                      uint64_t gap_before, pw_diag_t *d);
int pw__store_sql_put_frame(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d);
int pw__store_sql_commit(pw_store_sql_t *q, pw_diag_t *d);
int64_t pw__store_sql_retention(pw_store_sql_t *q, uint64_t now_ms, pw_diag_t *d);
int64_t pw__store_sql_series(pw_store_sql_t *q, const char *host, const uint8_t *tag,
                             size_t tag_len, pw_pool_t pool, uint64_t from_ms, uint64_t to_ms,
                             uint64_t step_ms, pw_store_series_t *out, pw_diag_t *d);
int pw__store_sql_latest(pw_store_sql_t *q, const char *host, pw_sample_t *out, pw_diag_t *d);
int pw__store_sql_totals(pw_store_sql_t *q, const char *host, uint64_t from_ms, uint64_t to_ms,
                         pw_store_totals_cb cb, void *arg, pw_diag_t *d);
int pw__store_sql_table_at(pw_store_sql_t *q, const char *host, uint64_t from_ms, pw_sample_t *out,
                           pw_diag_t *d);
int pw__store_sql_hosts(pw_store_sql_t *q, pw_store_host_info_t **out, size_t *n, pw_diag_t *d);
int pw__store_sql_gaps(pw_store_sql_t *q, const char *host, uint64_t from, uint64_t to,
                       pw_store_gap_t **out, size_t *n, pw_diag_t *d);
/* Records series page rows keys [k0, k1] of host `hid` over [t0, t1] as lost (`missed` samples,
 * 0 when not known) with `detail` (a damaged page: PW_STORE_GAP_DAMAGED) in the open
 * transaction, and counts it (pages_lost). */
int pw__store_gap_lost(pw_store_sql_t *q, int64_t hid, uint64_t t0, uint64_t t1, uint64_t missed,
                       uint32_t k0, uint32_t k1, const char *detail, pw_diag_t *d);
/* The same for what `d` says of a damage just met: detail "<what>: <d's message>[ at byte N]". */
int pw__store_gap_damaged(pw_store_sql_t *q, int64_t hid, uint64_t t0, uint64_t t1, uint64_t missed,
                          uint32_t k0, uint32_t k1, const char *what, pw_diag_t *d);
int pw__store_sql_host_limits(pw_store_sql_t *q, const char *host, const pw_pool_limit_t *nonpaged,
                              const pw_pool_limit_t *paged, pw_diag_t *d);
int pw__store_sql_host_os(pw_store_sql_t *q, const char *host, const char *os, pw_diag_t *d);
int pw__store_sql_host_retire(pw_store_sql_t *q, const char *host, int keep_history,
                              uint64_t now_ms, pw_diag_t *d);
int pw__store_sql_host_rename(pw_store_sql_t *q, const char *from, const char *to, pw_diag_t *d);
/* Columns i, i+1, i+2 of a row (bytes, source, detail) into *out (store_hosts.c). */
void pw__store_col_limit(sqlite3_stmt *s, int i, pw_pool_limit_t *out);
/* Forgets the in-memory state of one host (its open chunk is closed at its next put, as after
 * a restart); nothing when it has none (store_put.c). */
void pw__store_forget_host(pw_store_sql_t *q, const char *name);
/* At close: writes the instance and host rows that puts left behind the open chunks (store_put.c).
 */
void pw__store_sync_rows(pw_store_sql_t *q);
int pw__store_sql_last_seq(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                           const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq);
int pw__store_sql_agent_last_seq(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                                 uint64_t *seq);
int pw__store_sql_last_seq_ts(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                              const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq,
                              uint64_t *ts_ms);
int pw__store_sql_stats(pw_store_sql_t *q, pw_store_stats_t *out, pw_diag_t *d);
int pw__store_sql_flush(pw_store_sql_t *q, pw_diag_t *d);
int64_t pw__store_sql_compact(pw_store_sql_t *q, uint64_t budget_us, pw_diag_t *d);
int pw__store_sql_checkpoint(pw_store_sql_t *q, pw_diag_t *d);
/* 1 when no group commit came for 5 s (the checkpointer's idle: it then truncates a small WAL).
 * pw__store_wal_trim truncates a larger one (a burst's, which the checkpointer leaves) on the
 * writer's own connection: the retention pass calls it when the store was idle before it, on
 * the writer's thread (store_checkpoint.c). */
int pw__store_wal_idle(pw_store_sql_t *q);
/* 1 while the checkpointer holds the write lock (its idle truncation). */
int pw__store_ckpt_holding(pw_store_sql_t *q);
void pw__store_wal_trim(pw_store_sql_t *q);
int pw__store_sql_set_max_bytes(pw_store_sql_t *q, uint64_t max_db_bytes, pw_diag_t *d);

/* ---- shared by the backend's files ------------------------------------------------------- */

/* store_open.c */
/* Runs constant SQL (no parameters) with sqlite3_exec. Returns 0, PW_ENOSPC, PW_ENOMEM or
 * PW_ESTORE (`d` has SQLite's message). */
int pw__store_exec(pw_store_sql_t *q, const char *sql, pw_diag_t *d, const char *what);
/* Reads the integer a PRAGMA statement (S_PAGES, S_PAGESIZE, S_FREEPAGES) returns into *v. */
int pw__store_pragma_int(pw_store_sql_t *q, int which, int64_t *v, pw_diag_t *d);
/* Size in bytes of the file `path` + `suffix` ("" or "-wal"), 0 when absent. */
uint64_t pw__store_file_size(const char *path, const char *suffix);

/* store_txn.c */
/* Translates SQLite result `rc` (SQLITE_FULL -> PW_ENOSPC, SQLITE_NOMEM -> PW_ENOMEM, else
 * PW_ESTORE) into `d` with sqlite3_errmsg, and returns the code. */
int pw__store_sqlfail(pw_store_sql_t *q, int rc, pw_diag_t *d, const char *what);
/* Prepared statement `i` (S_*), reset and unbound, ready to bind. */
sqlite3_stmt *pw__store_stmt(pw_store_sql_t *q, int i);
int pw__store_run(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d, const char *what);
int pw__store_begin(pw_store_sql_t *q, pw_diag_t *d);
/* COMMIT as pw__store_sql_commit; `background` 1 (compaction's own transaction, on the
 * collector's loop after a group commit): a WAL past half its limit is left to the checkpointer
 * thread (woken at once) unless it is past the whole limit. */
int pw__store_commit_as(pw_store_sql_t *q, int background, pw_diag_t *d);
void pw__store_abort_txn(pw_store_sql_t *q);

/* store_put.c */
void pw__store_forget_hosts(pw_store_sql_t *q);
pw_store_hstate_t *pw__store_host_find(pw_store_sql_t *q, const char *name);
int pw__store_host_get(pw_store_sql_t *q, const pw_store_host_t *h, pw_store_hstate_t **out,
                       pw_diag_t *d);

/* store_chunks.c */
/* Compresses src[0..n) into q->zbuf at the store's zstd level. */
int pw__store_zcompress(pw_store_sql_t *q, const uint8_t *src, size_t n, pw_diag_t *d);
/* The same at zstd `level`. */
int pw__store_zcompress_at(pw_store_sql_t *q, const uint8_t *src, size_t n, int level,
                           pw_diag_t *d);
int pw__store_zdecompress(pw_store_sql_t *q, const void *src, size_t n, uint64_t raw_size,
                          pw_buf_t *out, pw_diag_t *d);
int pw__store_replay(int fmt, const uint8_t *p, size_t len, unsigned width, pw_chunk_cb cb,
                     void *arg, pw_diag_t *d);
int pw__store_load_chunk(pw_store_sql_t *q, int64_t id, const void *data, size_t dlen,
                         uint64_t raw_size, pw_buf_t *out, pw_diag_t *d);
/* Forgets the host's open chunk in memory (its encoder, id, count, chain). */
void pw__store_chunk_reset(pw_store_hstate_t *hs);
int pw__store_close_chunk(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d);
int pw__store_close_stale_chunks(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d);

/* store_rollup.c */
#define ROLL_M1  1 /* pw__store_rollup_chunk: write the 1-min level */
#define ROLL_M15 2 /* and/or the 15-min level */
int pw__store_rollup_chunk(pw_store_sql_t *q, int64_t host_id, unsigned width, int fmt,
                           const pw_buf_t *recs, uint64_t t0, uint64_t t1, int levels,
                           pw_diag_t *d);

/* store_query.c */
/* The row id of host `host` into *id. Returns 0, PW_ENOENT ("host X unknown" in `d`) or the
 * SQLite error. */
int pw__store_host_id(pw_store_sql_t *q, const char *host, int64_t *id, pw_diag_t *d);
/* Column `i` of the current row as a new string ("" for NULL); NULL when out of memory. */
char *pw__store_col_strdup(sqlite3_stmt *s, int i);

/* store_checkpoint.c */
/* Starts the checkpointer thread and installs the writer connection's busy handler (the busy
 * timeout, but a hold of the checkpointer's is waited for: it never fails a put). */
void pw__store_ckpt_start(pw_store_sql_t *q);
void pw__store_ckpt_stop(pw_store_ckpt_t *k);
/* After each successful COMMIT: notes the WAL's size and, when the commit left more than half
 * of wal_max_bytes in it, checkpoints at once on this connection (PASSIVE: it never waits; the
 * next commit then starts the WAL from its beginning, and journal_size_limit trims the file),
 * so a backfill cannot outrun the 1-second checkpointer. Errors are left to the next commit.
 * `background` (compaction's commit): up to the whole limit the checkpointer thread is woken
 * instead, and the collector's loop goes on. */
void pw__store_wal_after_commit(pw_store_sql_t *q, int background);
/* Wakes the checkpointer thread for a round now (none: nothing). */
void pw__store_ckpt_poke(pw_store_sql_t *q);

/* store_rollup.c */
/* The global id of tag bytes t[0..len) into *id, adding it to `tags` (in the transaction) when
 * new. Returns 0 or the error (in `d`). */
int pw__store_intern_tag(pw_store_sql_t *q, const uint8_t *t, size_t len, uint32_t *id,
                         pw_diag_t *d);
/* Gives free pages back to the file system (PRAGMA incremental_vacuum), counting the bytes. */
int pw__store_vacuum(pw_store_sql_t *q, pw_diag_t *d);
/* When max_size_bytes is set and the file's pages in use exceed it, deletes the oldest closed
 * items of every level (raw chunks with their series pages, rollup pages) whose newest sample
 * is older than the oldest one's + 1 h, 2 h, 4 h ... (at most 7 days a step) until they fit or
 * only open chunks are left. In the caller's transaction. Returns the items deleted (>= 0) or a
 * negative code. */
int64_t pw__store_enforce_max_size(pw_store_sql_t *q, pw_diag_t *d);

/* store_series.c: per-row series pages (docs/internals/store.md) */
/* Writes the series pages of a compacted chunk `chunk_id` of host `host_id` from its records
 * (`fmt` layout) and marks the chunk paged. In the caller's transaction. */
int pw__store_series_write(pw_store_sql_t *q, int64_t chunk_id, int64_t host_id, unsigned width,
                           int fmt, const pw_buf_t *recs, int m15, pw_diag_t *d);
/* Adds to `sr` (a series_t of store_query.c, opaque here) the points of global row key `gkey`
 * from the series pages of host `hid` overlapping [from, to] (`m15_only`: only of chunks
 * whose 15-min rollup is not written yet). Points come as runs: `n` samples at ts[0..n)
 * (inside [from, to]) holding the same values. */
typedef int (*pw__store_run_fn)(void *sr, const uint64_t *ts, size_t n, uint64_t b, uint64_t df,
                                uint64_t a, uint64_t f);
int pw__store_series_read(pw_store_sql_t *q, int64_t hid, uint32_t gkey, uint64_t from, uint64_t to,
                          int m15_only, pw__store_run_fn fn, void *sr, pw_diag_t *d);
/* Writes the series pages of up to one legacy compacted chunk (closed before schema 5, not
 * paged yet). Returns 1 when it did, 0 when none is left, or a negative code. */
int pw__store_series_backfill_one(pw_store_sql_t *q, pw_diag_t *d);
/* Host `host_id` got chunk pages: some of its days may be due for merging into day pages. */
void pw__store_series_merge_note(pw_store_sql_t *q, int64_t host_id);
/* Merges one (host, group of 32 tags, UTC day) of chunk pages into day pages when one is due
 * (its day is over for the host: it has a chunk starting on a later day), or looks at one more
 * host.
 * In the caller's transaction. Returns 1 (something done), 0 (nothing left) or a negative
 * code. */
int pw__store_series_merge_one(pw_store_sql_t *q, pw_diag_t *d);
/* Kinds of series pages (`day` below): a chunk's page (one body, rows of a group of 32 tags,
 * grp = global key >> 7), a day page of 4 tags (merged before 2026-12-02, grp = key >> 4) or
 * of 32 tags (grp = key >> 7, stored in series_days as -1 - grp). */
#define PW__STORE_PAGE_CHUNK 0
#define PW__STORE_PAGE_DAY4  1
#define PW__STORE_PAGE_DAY   2
/* For every row of page p[0..len) (decompressed; `day`: its kind, PW__STORE_PAGE_*) of group
 * `grp`: row(arg, global key), then fn(arg, ...) for each run of the row's samples holding the
 * same values, in the page's order. Returns 0, what row returned (`d` set) or a code. */
int pw__store_series_page_rows(const uint8_t *p, size_t len, uint32_t grp, int day,
                               int (*row)(void *arg, uint32_t gkey), pw__store_run_fn fn, void *arg,
                               pw_diag_t *d);
/* What a series query reads of page p[0..len) (decompressed; `day`: its kind) of group `grp`:
 * fn(arg, ...) for each run of row `gkey`'s samples inside [from, to] (`gkey` in the group).
 * Returns 0 or a negative code (`d` set). */
int pw__store_series_page_read(const uint8_t *p, size_t len, uint32_t grp, int day, uint32_t gkey,
                               uint64_t from, uint64_t to, pw__store_run_fn fn, void *arg,
                               pw_diag_t *d);

/* A chunk's rows by (tag, pool) while its samples are replayed. Rows come keyed by the chunk's
 * local tag numbers, which a keyframe with dict_reset inside the chunk (pw_store_put_frame
 * after a broken chain, pw_store_put after frames) gives other meanings: keying rows by them
 * alone put one tag's values under another. */
typedef struct {
    uint32_t *map; /* local key -> row + 1, under the decoder's current dictionary */
    size_t mapcap;
    pw_tagdict_t names; /* the rows' tags, numbered in order of first sight */
    uint32_t *byname;   /* name id * 4 + pool -> row + 1 */
    size_t bncap;
    uint32_t *rname; /* row -> name id * 4 + pool */
    size_t rcap;
    uint32_t nrows;
} pw__store_rowmap_t;

void pw__store_rowmap_init(pw__store_rowmap_t *m);
void pw__store_rowmap_close(pw__store_rowmap_t *m);
/* Call before the rows of each replayed table `dd`: after a table was rebuilt (a keyframe,
 * rows added or gone), checks that its local keys still name the tags they named, and forgets
 * the local numbering when one does not. */
void pw__store_rowmap_sync(pw__store_rowmap_t *m, const pw_delta_dec_t *dd);
/* The row (0, 1, ... in order of first sight) of local key `key` of `dd` into *row; *added 1
 * when the (tag, pool) is new. Returns 0, PW_ENOMEM, or PW_ECORRUPT (a key outside the
 * dictionary). */
int pw__store_rowmap_slow(pw__store_rowmap_t *m, const pw_delta_dec_t *dd, uint32_t key,
                          uint32_t *row, int *added);
static inline int pw__store_rowmap_get(pw__store_rowmap_t *m, const pw_delta_dec_t *dd,
                                       uint32_t key, uint32_t *row, int *added)
{
    if (key < m->mapcap && m->map[key] != 0) {
        *row = m->map[key] - 1;
        *added = 0;
        return 0;
    }
    return pw__store_rowmap_slow(m, dd, key, row, added);
}
/* The tag bytes of `row` (borrowed until the next call) and their length. */
const uint8_t *pw__store_rowmap_tag(const pw__store_rowmap_t *m, uint32_t row, size_t *len);

/* The live form of a chunk: its rows by row, in memory, kept as samples are put (the open
 * chunk) and until compaction (a sealed one), so that a series query does not replay up to an
 * hour of records and compaction writes the pages without a second replay. */
/* After a sample was written to the open chunk of `hs` (hs->nsamples counts it): adds the
 * table `rows[0..n)` (sorted by key, keys of `dict`) at `ts` to the chunk's live form; the
 * chunk's first sample starts one. `chg`: the indexes in `rows` of the only rows that may
 * differ from the previous sample (same set of rows), or NULL: every row is compared. Never
 * fails the put: when memory or the budget runs out the chunk's live form is dropped (queries
 * and compaction then replay its records). */
void pw__store_live_add(pw_store_sql_t *q, pw_store_hstate_t *hs, uint64_t ts, const pw_row_t *rows,
                        size_t n, const pw_tagdict_t *dict, const uint32_t *chg, size_t nchg);
/* Drops the live form of the open chunk of `hs` (its keys stop being the chunk's). */
void pw__store_live_drop(pw_store_hstate_t *hs);
/* The open chunk of `hs` was sealed: its live form waits for compaction. */
void pw__store_live_seal(pw_store_sql_t *q, pw_store_hstate_t *hs);
/* Frees the sealed live forms of host `host_id` (deleted, retired or renamed: its chunks go, or
 * their ids may be given to new chunks). */
void pw__store_live_forget_host(pw_store_sql_t *q, int64_t host_id);
/* Frees every sealed live form (the transaction that sealed them rolled back, or close). */
void pw__store_live_forget_sealed(pw_store_sql_t *q);
/* The live form of chunk `id` (the open chunk of `hs`, which may be NULL, or a sealed one);
 * NULL when none. */
const pw__store_live_t *pw__store_live_find(pw_store_sql_t *q, const pw_store_hstate_t *hs,
                                            int64_t id);
/* Emits the runs of (tag, pool) inside [from, to] from a live form. Returns 0 or what fn
 * returned (`d` set). */
int pw__store_live_read(const pw__store_live_t *lv, const uint8_t *tag, size_t tag_len,
                        pw_pool_t pool, uint64_t from, uint64_t to, pw__store_run_fn fn, void *sr,
                        pw_diag_t *d);
/* Writes (`write` != 0) the series pages of compacted chunk `chunk_id` from its sealed live
 * form, and frees the form. Returns 1 when it wrote them, 0 when the chunk has no live form
 * (the caller replays) or `write` is 0, or a negative code. In the caller's transaction. */
int pw__store_live_write(pw_store_sql_t *q, int64_t chunk_id, int64_t host_id, int write,
                         pw_diag_t *d);

/* store_totals.c: a host's pool totals per 1-min and 15-min bucket (schema 8) */
/* Prepares the file's statements (at open, after the migrations) / finalizes them (at close;
 * accepts a store that has none). */
int pw__store_totals_open(pw_store_sql_t *q, pw_diag_t *d);
void pw__store_totals_close(pw_store_sql_t *q);
/* A new open chunk (hs->chunk_id, just inserted): lists it in totals_todo (its buckets are
 * written when it is sealed; until then, after a crash, it is replayed) and starts its buckets
 * in memory. In the caller's transaction. Returns 0 or the SQLite error (`d`). */
int pw__store_totals_chunk_new(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d);
/* Adds sample totals `t` at `ts` (ms) to the open chunk's 1-min buckets in memory. Cannot fail:
 * out of memory, the chunk is left to be replayed. */
void pw__store_totals_put(pw_store_hstate_t *hs, uint64_t ts, const pw_totals_t *t);
/* Writes the open chunk's 1-min and 15-min buckets and takes it off totals_todo (at its seal,
 * or at a clean close while it stays open); for a chunk whose buckets this process does not
 * hold, has compaction replay it. In the caller's transaction. Returns 0 or the SQLite error. */
int pw__store_totals_seal(pw_store_sql_t *q, pw_store_hstate_t *hs, pw_diag_t *d);
/* Frees the host's buckets in memory (its state is forgotten). */
void pw__store_totals_drop(pw_store_hstate_t *hs);
/* Writes the buckets of one listed chunk (stored before schema 8 or left open by a previous
 * run; oldest first; not one still open).
 * Returns 1 when it did, 0 when none is left, or a negative code. In the caller's transaction. */
int pw__store_totals_backfill_one(pw_store_sql_t *q, pw_diag_t *d);
/* Retention: writes the buckets of the chunks stored before schema 8 that expire at `raw_cut`
 * (deleted next), then deletes the buckets whose whole span is older than `m1_cut` / `m15_cut`.
 * In the caller's transaction. Returns 0 or a negative code. */
int pw__store_totals_retention(pw_store_sql_t *q, uint64_t raw_cut, uint64_t m1_cut,
                               uint64_t m15_cut, pw_diag_t *d);
/* max_size: deletes the buckets (both levels) starting before `before_ms`. Returns how many, or
 * a negative code. */
int64_t pw__store_totals_evict(pw_store_sql_t *q, uint64_t before_ms, pw_diag_t *d);
/* replay 0: the written buckets only (pw_store_totals_buckets) */
int64_t pw__store_sql_totals_series(pw_store_sql_t *q, const char *host, uint64_t from_ms,
                                    uint64_t to_ms, uint64_t step_ms, int replay,
                                    pw_store_tseries_t *out, pw_diag_t *d);
int pw__store_sql_host_stopped(pw_store_sql_t *q, const char *host, uint64_t stopped_ms,
                               const char *reason, pw_diag_t *d);

/* The start of a retention or query range: `now - keep`, 0 when that would be negative. */
static inline uint64_t pw__store_cutoff(uint64_t now, uint64_t keep)
{
    return now > keep ? now - keep : 0;
}

#endif /* PW_STORE_INTERNAL_H */
