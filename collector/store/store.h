/* store.h: the collector's history store on embedded SQLite (docs/internals/store.md).
 *
 * The collector puts every accepted sample (the host's full table after the sample was
 * applied) and then, when its group-commit policy says (collector/ingest/commit.h: at most
 * 600 ms after the oldest pending sample by default), calls pw_store_commit(): when it returns 0,
 * every sample put before is on disk (WAL, synchronous=FULL: the WAL is fsync'ed at each
 * commit, https://sqlite.org/pragma.html#pragma_synchronous) and may be acked. History is
 * kept as chunks per host and time window (a keyframe then deltas of the project's codec,
 * common/delta.h; closed chunks compressed with zstd), each compacted chunk also by row
 * (series pages: one (host, tag, pool) over days reads one small page per chunk, and a host's
 * pages of one day are merged into day pages in the background: a week reads ~8 pages), 15-min
 * rollups per (host, tag, pool) written when the series pages expire (until then they are the
 * 1-min and 15-min levels), and retention per level.
 *
 * A store is used from one thread (the collector's loop); a file-backed store also runs its own
 * WAL checkpointer thread on a second connection. Every function returns 0 (or a
 * non-negative value where said) or a negative poolwatch code (common/error.h), PW_EINVAL for
 * a NULL store or other required argument; `d` (may be NULL) says what and where. Pointer
 * arguments are borrowed for the call unless said otherwise. A failed put or commit rolls back
 * every sample put since the last successful commit: none of them is stored, the last seq per agent
 * instance is the committed one again, so resent samples are accepted; a later put + commit works
 * once space is back.
 */
#ifndef PW_STORE_H
#define PW_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "delta.h"
#include "error.h"
#include "sample.h"
#include "winevent.h"

/* Returned (positive) by pw_store_put for a sample whose seq is already stored for the same
 * (agent_id, boot_id): nothing was written; the collector may ack it. */
#define PW_STORE_DUPLICATE 1

/* Rollup levels, and the level of a series answer. */
typedef enum {
    PW_STORE_RAW = 0, /* every sample */
    PW_STORE_1MIN = 1,
    PW_STORE_15MIN = 2
} pw_store_level_t;

#define PW_STORE_DEFAULT_RAW_RETENTION_MS   (48ull * 3600 * 1000)
#define PW_STORE_DEFAULT_1MIN_RETENTION_MS  (30ull * 86400 * 1000)
#define PW_STORE_DEFAULT_15MIN_RETENTION_MS (400ull * 86400 * 1000)
#define PW_STORE_DEFAULT_CHUNK_WINDOW_MS    (3600ull * 1000)
#define PW_STORE_DEFAULT_CHUNK_MAX_SAMPLES  4096u
/* Closed chunks (compressed by compaction, inside the collector's ingest CPU) and rollups: -3
 * against -9 on bench_store's fleet, raw chunks 0.159 -> 0.162 B per (host, tag, interval), du
 * 0.346 -> 0.348 B, 10 % fewer instructions in ingest's counted calls (docs/internals/store.md) */
#define PW_STORE_DEFAULT_ZSTD_LEVEL            3
#define PW_STORE_DEFAULT_BUSY_TIMEOUT_MS       5000
#define PW_STORE_DEFAULT_WAL_MAX_BYTES         (64ull << 20)
#define PW_STORE_DEFAULT_LIVE_SERIES_MAX_BYTES (256ull << 20)

/* Options; zero fields take the defaults above. */
typedef struct pw_store_opts_s {
    uint64_t raw_retention_ms;      /* raw chunks kept this long after their last sample */
    uint64_t m1_retention_ms;       /* 1-min rollups */
    uint64_t m15_retention_ms;      /* 15-min rollups */
    uint64_t chunk_window_ms;       /* chunks cover windows of this length (>= 60000, a multiple
                                       of 900000 or a divisor of it; default 1 h); windows longer
                                       than 15 min are offset per host by whole 15-min steps */
    uint32_t chunk_max_samples;     /* a chunk also closes when it holds this many samples */
    int zstd_level;                 /* 1..19 for closed chunks and rollups */
    int busy_timeout_ms;            /* sqlite3_busy_timeout */
    uint64_t max_db_bytes;          /* 0 = no ceiling; else PRAGMA max_page_count: writes past it
                                       fail with PW_ENOSPC exactly as on a full disk */
    uint64_t wal_max_bytes;         /* the WAL's limit (default 64 MiB, at least 1 MiB): a group
                                       commit that leaves the WAL above half of it checkpoints at
                                       once, so the WAL stays under it plus one commit */
    uint64_t max_size_bytes;        /* 0 = none; else the store's budget (file + WAL): when the
                                       data exceeds it, retention drops the oldest closed items
                                       (raw chunks, then 1-min, then 15-min rollups) an hour at a
                                       time until it fits, logs it and counts it (`evicted`);
                                       writes never fail for it (max_db_bytes does that) */
    uint64_t live_series_max_bytes; /* memory for open and sealed chunks' rows kept by row,
                                       so that series queries and compaction need not replay
                                       them (default 256 MiB, ~0.6 MB per 3,000-row host at the
                                       end of a 1-hour chunk at 5 % churn); past it a chunk
                                       is replayed instead */
} pw_store_opts_t;

/* Who sent a sample (from the agent's Hello), borrowed for the call. */
typedef struct pw_store_host_s {
    const char *name;        /* host name, 1..255 bytes, NUL-terminated */
    const uint8_t *agent_id; /* 1..64 bytes */
    size_t agent_id_len;
    const uint8_t *boot_id; /* 1..64 bytes */
    size_t boot_id_len;
    const char *os;         /* e.g. "windows 10.0.19045"; may be NULL */
    unsigned counter_width; /* bits of allocs/frees: 32 (Windows) or 64 */
    int source_kind;        /* the Hello's Poolwatch__V1__SourceKind; 0 unknown (an import) */
    uint32_t interval_ms;   /* the Hello's sampling interval, ms; 0 unknown */
    /* The pool limits the Hello said with their source and detail, written to the host's row
     * when they differ from it and read back by pw_store_hosts, so a restart knows where a
     * limit comes from before the agent is back. NULL or bytes 0: none said (an import: the
     * row keeps what pw_store_host_limits wrote). */
    const pw_pool_limit_t *nonpaged_limit, *paged_limit;
    /* What else the Hello said of the machine, written to the host's row when it differs and read
     * back by pw_store_hosts, so a restart shows a stopped host's build, architecture and agent
     * version: os_build 0 and NULL texts for none (an import). */
    uint32_t os_build;
    const char *arch;          /* "x64", at most 15 bytes kept */
    const char *agent_version; /* "0.1.0", at most 31 bytes kept */
} pw_store_host_t;

/* One point of a series. For raw points min == max == the value. For a rollup or a step
 * wider than one sample: ts_ms is the start of the step (ts - ts % step), bytes/diff/allocs/
 * frees the last values in the step, the min and max fields over the samples in it, `samples` how
 * many samples it covers. */
typedef struct pw_store_point_s {
    uint64_t ts_ms;
    uint64_t bytes, diff, allocs, frees;
    uint64_t bytes_min, bytes_max, diff_min, diff_max;
    uint32_t samples;
} pw_store_point_t;

typedef struct pw_store_series_s {
    pw_store_point_t *points; /* owned, sorted by ts_ms, `n` used */
    size_t n, cap;
    pw_store_level_t level; /* the level that answered */
} pw_store_series_t;

typedef struct pw_store_host_info_s {
    char *name;                        /* owned */
    char *os;                          /* owned, "" when unknown */
    uint8_t agent_id[64], boot_id[64]; /* of the last sample */
    size_t agent_id_len, boot_id_len;
    unsigned counter_width;
    uint64_t last_seen_ms; /* timestamp of the newest sample */
    uint64_t last_seq;     /* seq of the newest sample (of agent_id/boot_id) */
    /* Limits an operator gave the host (pw_store_host_limits), or its agent's Hello said
     * (pw_store_host_t); bytes 0 = none */
    pw_pool_limit_t nonpaged_limit, paged_limit;
    /* What the last sample's agent said in its Hello (pw_store_host_t): 0 when unknown */
    int source_kind;
    uint32_t interval_ms;
    /* Its agent's clean stop (pw_store_host_stopped): time in ms since the epoch, 0 = none */
    uint64_t stopped_ms;
    char stop_reason[32];      /* the agent's reason, NUL-terminated ("" when none) */
    uint64_t imported_samples; /* screens its imports stored (instances "import:...": each
                                  capture's seqs are 1..its screens), 0 for an agent's host */
    uint64_t stored_samples;   /* samples its raw chunks hold (sealed and open; raw retention
                                  drops older ones) */
    uint64_t samples_expired;  /* samples its raw chunks held that retention (or the max_size
                                  budget) dropped since schema 11: stored_samples +
                                  samples_expired is every sample the store stored of it */
    uint32_t os_build;         /* the last Hello's (pw_store_host_t), 0 when unknown */
    char arch[16], agent_version[32];
} pw_store_host_info_t;

typedef struct pw_store_stats_s {
    uint64_t bytes_on_disk;  /* database file + WAL (page_count * page_size for :memory:) */
    uint64_t db_bytes;       /* database file (page_count * page_size for :memory:) */
    uint64_t wal_bytes;      /* WAL file (0 for :memory: or when absent) */
    uint64_t free_bytes;     /* pages of the file on its free list (freelist_count) */
    uint64_t series_pages;   /* per-row series pages (compacted chunks, schema 5) */
    uint64_t series_bytes;   /* their compressed bytes */
    uint64_t samples;        /* samples stored in chunks (closed and open) */
    uint64_t chunks;         /* chunks (closed and open) */
    uint64_t closed_chunks;  /* chunks compressed into one blob */
    uint64_t rollup_windows; /* rollup blobs, both levels */
    uint64_t raw_bytes;      /* compressed chunk blobs + open rows */
    uint64_t rollup_bytes;   /* compressed rollup blobs */
    uint64_t tags;           /* distinct tags */
    uint64_t hosts;
    /* Counters of this process (pw_store_t), not of the file. */
    uint64_t puts, duplicates, commits, failed_commits, updates;
    uint64_t commit_us_total, commit_us_max;       /* wall time in pw_store_commit, microseconds */
    uint64_t closes, close_us_total, close_us_max; /* chunk compactions, wall us */
    uint64_t merges, merge_us_total; /* day merges (a host's chunk pages of one group of 32 tags
                                        and one UTC day into day pages), wall us */
    uint64_t compact_fallbacks; /* compacted chunks kept as records (rows that do not decode) */
    uint64_t pages_lost;        /* series pages that did not decode, recorded as gaps and dropped
                                   (day merges, retention; pw_store_gaps) */
    uint64_t wal_max_bytes;     /* largest WAL seen after a group commit, bytes */
    uint64_t wal_checkpoints;   /* checkpoints run after a commit because the WAL was large */
    uint64_t evicted;           /* chunks and rollup pages dropped because of max_size_bytes */
    uint64_t vacuumed_bytes;    /* bytes given back to the file system by incremental vacuum */
    uint64_t live_bytes;        /* memory held by open and sealed chunks' rows kept by row (at most
                                   live_series_max_bytes plus one sample's) */
} pw_store_stats_t;

typedef struct pw_store_s pw_store_t;

/* Opens (creating when missing) the store at `path` ("file.db", or ":memory:" for tests;
 * copied), applies pending schema migrations, sets WAL, synchronous=FULL, foreign keys and the
 * busy timeout, and starts the checkpointer thread (not for ":memory:"). `opts` may be NULL
 * (defaults). On success *out is owned by the caller (close with pw_store_close).
 * Returns 0; PW_EINVAL (no path, bad option); PW_ESTORE (cannot open, not a
 * database, no WAL, schema newer than this build: `d` has sqlite3_errmsg); PW_ENOSPC;
 * PW_ENOMEM. */
int pw_store_open(const char *path, const pw_store_opts_t *opts, pw_store_t **out, pw_diag_t *d);

/* Rolls back anything not committed, stops the checkpointer, closes the database and frees
 * `st`. Open chunks stay open on disk and are closed when the host's next sample arrives.
 * Accepts NULL. */
void pw_store_close(pw_store_t *st);

/* Adds sample `s` (borrowed: the host's full table after the sample, seq and timestamp_ms
 * set, PW_SAMPLE_NO_ALLOCS when it has no allocs/frees) of `host`, with `gap_before` samples
 * the agent reported lost just before it (0 = none; recorded in the gap table). Durable only
 * after pw_store_commit. Samples of a host must come in increasing timestamp order (an
 * older one than the host's newest is stored but may close the open chunk).
 * Returns 0; PW_STORE_DUPLICATE when seq <= the stored last seq of (agent_id, boot_id);
 * PW_EINVAL (bad host fields, width, or a row the codec refuses: diff != allocs - frees mod
 * 2^width, a counter >= 2^width, a repeated (tag, pool)); PW_ENOSPC (disk or db ceiling
 * full); PW_ESTORE (other SQLite error); PW_ENOMEM. On a negative return the whole
 * uncommitted transaction was rolled back (see the header comment). */
int pw_store_put(pw_store_t *st, const pw_store_host_t *host, const pw_sample_t *s,
                 uint64_t gap_before, pw_diag_t *d);

/* Adds the sample an agent's frame just made of the host's stream, as pw_store_put does for
 * the full table but without re-encoding it: `dec` (borrowed) is the host's decoder after it
 * applied the frame (seq, timestamp_ms and table of the sample; dec->width must equal
 * host->counter_width); `payload`/`len` the frame's payload as received (an Envelope holding
 * that Sample, without the 4-byte frame header; may be NULL), `base_seq` the Sample's
 * base_seq. `follows` is 1 when the frame is a delta (not a keyframe, no dict_reset) and
 * `dec`, just before applying it, held the table of the previous sample stored for this host
 * through this function (no sample applied and left unstored in between); else 0.
 * When `follows` is 1, the payload is given and the host's open chunk ends with that previous
 * sample (same agent instance, codec seq == base_seq), the payload is stored as is: a chunk
 * row costs what the agent sent. Otherwise (a chunk's first sample, a keyframe, a chain that
 * broke) the record is a keyframe packed from `dec` (pw_delta_dec_pack_keyframe), so every
 * chunk still decodes on its own and reads back the same values as pw_store_put would.
 * Returns as pw_store_put (PW_STORE_DUPLICATE on dec->seq <= the stored last seq of the
 * instance; PW_EINVAL also for a decoder without a table); any negative return rolls back
 * the uncommitted transaction. */
int pw_store_put_frame(pw_store_t *st, const pw_store_host_t *host, const pw_delta_dec_t *dec,
                       const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                       uint64_t gap_before, pw_diag_t *d);

/* Makes every sample put since the last commit durable (COMMIT with the WAL fsync'ed).
 * Returns 0 (also when there was nothing to commit); PW_EINVAL (NULL store); PW_ENOSPC /
 * PW_ESTORE / PW_ENOMEM with everything since the last commit rolled back. */
int pw_store_commit(pw_store_t *st, pw_diag_t *d);

/* Deletes, per level, what is entirely older than the level's retention at `now_ms` (ms
 * since the epoch, injected): closed raw chunks whose newest sample is < now - raw
 * retention (writing their 1-min and 15-min rollups first when they have no series pages),
 * series pages (chunk and day pages) older than the 1-min retention (at least the raw one)
 * after writing their 15-min rollup (unless one holds their samples already), 1-min
 * and 15-min rollup windows whose newest bucket starts before now - their retention, and gap
 * records older than the 15-min retention; then, with max_size_bytes set and exceeded, the
 * oldest items of every level (see pw_store_opts_t); then gives the freed pages back to the
 * file system (incremental vacuum). Commits its own transaction when none is open (else joins
 * the open one). Then, when no commit came for 5 s and the WAL file is above the 4 MiB that the
 * background checkpointer truncates when idle (a burst's), it is truncated here (a TRUNCATE
 * checkpoint on the caller's thread; a failure is left to the next pass). Returns the number
 * of items deleted (>= 0) or a negative code as pw_store_commit. */
int64_t pw_store_retention(pw_store_t *st, uint64_t now_ms, pw_diag_t *d);

/* Series of (host, tag, pool) for samples with from_ms <= ts <= to_ms. step_ms picks the
 * level: < 60000 raw (0 = one point per sample), < 900000 1 min, else 15 min; points are
 * merged into steps of step_ms (aligned on the epoch). Compacted chunks answer from their
 * series pages (chunk or day pages: the raw samples, by row) at any step until the pages
 * expire and rollups replace them; the
 * host's open and sealed chunks are replayed and merged the same way.
 * `out` must be zeroed or a previous answer (it is emptied first; free with
 * pw_store_series_free). Returns the number of points (>= 0; 0 for an unknown host or tag);
 * PW_EINVAL (from > to, bad tag length or pool); PW_ECORRUPT (a stored blob fails to
 * decode); PW_ESTORE; PW_ENOMEM. */
int64_t pw_store_series(pw_store_t *st, const char *host, const uint8_t *tag, size_t tag_len,
                        pw_pool_t pool, uint64_t from_ms, uint64_t to_ms, uint64_t step_ms,
                        pw_store_series_t *out, pw_diag_t *d);

/* Frees the points of `s` and zeroes it. Accepts NULL. */
void pw_store_series_free(pw_store_series_t *s);

/* Rebuilds the newest stored table of `host` into `out` (the caller's, initialised with
 * pw_sample_init; reset first) from its newest chunk: entries, seq, timestamp_ms, flags and
 * totals as put. Entries are sorted by (tag, pool) in the chunk's first-use order, not the put
 * order. Returns 0; PW_EINVAL; PW_ENOENT (host unknown or nothing stored); PW_ECORRUPT;
 * PW_ESTORE; PW_ENOMEM. */
int pw_store_latest(pw_store_t *st, const char *host, pw_sample_t *out, pw_diag_t *d);

/* Lists every host that is not retired, sorted by name, into *out (an array of *n entries owned by
 * the caller; free with pw_store_hosts_free; NULL and 0 on failure). Returns 0, PW_EINVAL,
 * PW_ESTORE or PW_ENOMEM. */
int pw_store_hosts(pw_store_t *st, pw_store_host_info_t **out, size_t *n, pw_diag_t *d);

/* Frees a list of `n` hosts from pw_store_hosts. Accepts NULL. */
void pw_store_hosts_free(pw_store_host_info_t *hosts, size_t n);

/* Why samples of a host are missing from its history (pw_store_gap_t.cause). */
enum {
    PW_STORE_GAP_AGENT = 0,   /* its agent reported them lost (the gap_before of a put) */
    PW_STORE_GAP_DAMAGED = 1, /* a series page that did not decode (its zstd frame, its head, a
                                 truncated blob), met by the day merge or by retention and
                                 dropped: its rows over its times */
};

#define PW_STORE_GAP_TAGS 32 /* a series page holds a group of 32 tags */

/* A gap of a host's history (schema 12; the agents' gaps of older stores read as such). */
typedef struct pw_store_gap_s {
    uint64_t t0_ms;  /* first sample time lost, ms since the epoch; 0 when not known (an agent's
                        gap: its samples came before t1_ms) */
    uint64_t t1_ms;  /* last sample time lost (an agent's gap: the sample that reported it) */
    uint64_t seq;    /* an agent's gap: the seq of the sample that reported it; else 0 */
    uint64_t missed; /* samples lost; 0 when not known (a damaged day page) */
    int cause;       /* PW_STORE_GAP_* */
    int all_rows;    /* 1: every row of the host; 0: the rows of tags[0..ntags), every pool */
    size_t ntags;
    struct {
        uint8_t tag[PW_TAG_MAX];
        uint8_t len;
    } tags[PW_STORE_GAP_TAGS];
    char detail[128]; /* what failed, for a damaged page ("zstd: ..."); "" for an agent's gap */
} pw_store_gap_t;

/* Lists the gaps of `host` that overlap [from_ms, to_ms] (ms since the epoch, inclusive), oldest
 * (by t1_ms) first, into *out (an array of *n entries owned by the caller, free with
 * pw_store_gaps_free; NULL and 0 when there is none or on failure). Gaps are kept for the
 * 15-min retention. Returns 0; PW_EINVAL (NULL argument, host not 1..255 bytes, from_ms >
 * to_ms); PW_ESTORE; PW_ENOMEM. An unknown host has no gaps. */
int pw_store_gaps(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                  pw_store_gap_t **out, size_t *n, pw_diag_t *d);

/* Frees a list from pw_store_gaps. Accepts NULL. */
void pw_store_gaps_free(pw_store_gap_t *gaps);

/* ---- what an operator does to a host (the API's host lifecycle and import options) -------
 * Each runs in its own transaction and commits it: call pw_store_commit first, or samples put
 * since the last commit become durable with it. The host's in-memory chunk state is dropped
 * (its open chunk is closed at its next put, as after a restart). */

/* Records the pool limits an operator gave `host` (an import's options; bytes 0 = none given):
 * read back by pw_store_hosts. Returns 0; PW_ENOENT (no such host); PW_EINVAL; PW_ESTORE. */
int pw_store_host_limits(pw_store_t *st, const char *host, const pw_pool_limit_t *nonpaged,
                         const pw_pool_limit_t *paged, pw_diag_t *d);

/* Sets the OS text of `host` ("windows Windows Server 2003 x86 /3GB": family, space, version;
 * read back by pw_store_hosts). Returns 0; PW_ENOENT; PW_EINVAL; PW_ESTORE. */
int pw_store_host_os(pw_store_t *st, const char *host, const char *os, pw_diag_t *d);

/* Retires `host`: with keep_history 0 its history is deleted (chunks, rollups, gaps, agent
 * instances); with 1 it is kept under the name "<host>#retired-<now_ms>" and left out of
 * pw_store_hosts. Either way the name is free: a later put under it starts a new host.
 * Returns 0; PW_ENOENT (no such host); PW_EINVAL; PW_ESTORE. */
int pw_store_host_retire(pw_store_t *st, const char *host, int keep_history, uint64_t now_ms,
                         pw_diag_t *d);

/* Records that the agent of `host` stopped cleanly at `stopped_ms` (ms since the epoch; 0: it
 * streams again) for `reason` (at most 31 bytes are kept; NULL = ""): read back by
 * pw_store_hosts, so a collector restart still knows the host stopped rather than went silent.
 * Returns 0; PW_ENOENT (no such host); PW_EINVAL; PW_ESTORE. */
int pw_store_host_stopped(pw_store_t *st, const char *host, uint64_t stopped_ms, const char *reason,
                          pw_diag_t *d);

/* Renames `from` to `to` (1..255 bytes) with its history. Returns 0; PW_ENOENT (no host
 * `from`); PW_EEXIST (a host `to` exists, retired ones included); PW_EINVAL; PW_ESTORE. */
int pw_store_host_rename(pw_store_t *st, const char *from, const char *to, pw_diag_t *d);

/* The highest seq stored for the agent instance (agent_id, boot_id), including samples put
 * but not yet committed. Returns 0 with *seq set, PW_ENOENT (never seen), PW_EINVAL,
 * PW_ESTORE. */
int pw_store_last_seq(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                      const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq);

/* pw_store_last_seq with the time of that sample (*ts_ms, ms since the epoch): where an
 * instance's stored samples end (an import places the new screens of a capture it has seen
 * after them). Returns 0 with both set, PW_ENOENT (never seen), PW_EINVAL, PW_ESTORE. */
int pw_store_last_seq_ts(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                         const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq,
                         uint64_t *ts_ms);

/* The highest seq stored for any instance of agent `agent_id` (put but not committed
 * included): an agent numbers its samples across its instances (boots, restarts) from one
 * spool, so every seq of that agent at or below it is stored, or was reported lost. Returns 0
 * with *seq set, PW_ENOENT (agent never seen), PW_EINVAL, PW_ESTORE. */
int pw_store_agent_last_seq(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                            uint64_t *seq);

/* Called by pw_store_totals for each stored sample in the range, oldest first: its time (ms
 * since the epoch) and host totals (bytes; borrowed for the call). A negative return stops the
 * walk and is returned; a positive one stops it quietly. */
typedef int (*pw_store_totals_cb)(void *arg, uint64_t ts_ms, const pw_totals_t *totals);

/* Walks the samples of `host` with from_ms <= timestamp <= to_ms, oldest first, calling `cb`
 * with each sample's totals (pool used and limits: what the collector keeps per host for
 * pressure and sparklines, rebuilt this way after a restart). Reads raw chunks (one replay per
 * chunk, closed, sealed or open). Returns 0; PW_ENOENT (host unknown); PW_EINVAL (NULL
 * argument, bad range); PW_ECORRUPT (a chunk does not decode); PW_ESTORE; or what `cb`
 * returned. */
int pw_store_totals(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                    pw_store_totals_cb cb, void *arg, pw_diag_t *d);

/* One point of a host's pool totals over time (pw_store_totals_series), bytes. ts_ms is the start
 * of its step (epoch-aligned; the sample's time at step 0), last_ms the time of the step's last
 * sample; nonpaged/paged are that sample's, the min/max fields over the step's samples, and the
 * limits those the last sample carried (0 = unknown: the sample said none; the host's current
 * limits, from its agent's Hello or an operator, are the fleet's). */
typedef struct pw_store_tpoint_s {
    uint64_t ts_ms, last_ms;
    uint64_t nonpaged, nonpaged_min, nonpaged_max;
    uint64_t paged, paged_min, paged_max;
    uint64_t nonpaged_limit, paged_limit;
    uint32_t samples;
} pw_store_tpoint_t;

typedef struct pw_store_tseries_s {
    pw_store_tpoint_t *points; /* owned, sorted by ts_ms, `n` used */
    size_t n, cap;
    pw_store_level_t level; /* the level that answered */
    uint64_t step_ms;       /* the step the points were merged into (0: every sample) */
} pw_store_tseries_t;

/* The pool totals of `host` over [from_ms, to_ms] (ms since the epoch), merged into steps of
 * step_ms (epoch-aligned), which pick the level as pw_store_series does: < 60000 raw (every sample
 * of the raw chunks, which are kept for the raw retention; 0 = one point per sample), < 900000
 * the 1-min buckets, else the 15-min ones (kept for those levels' retentions: 30 and 400 days by
 * default). At the bucket levels the step is rounded up to whole buckets and the answer covers
 * the buckets that overlap the range (the first may start before from_ms). Buckets are written
 * with each sample; those of chunks stored before schema 8 are read from the chunks until
 * compaction has written them. `out` must be zeroed or a previous answer (emptied first; free
 * with pw_store_tseries_free). Returns the number of points (>= 0); PW_EINVAL (NULL argument,
 * from > to); PW_ENOENT (host unknown); PW_ECORRUPT (a chunk that had to be read does not
 * decode); PW_ESTORE; PW_ENOMEM. */
int64_t pw_store_totals_series(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                               uint64_t step_ms, pw_store_tseries_t *out, pw_diag_t *d);

/* pw_store_totals_series at a 1-min step from what is written only: the 1-min buckets and an open
 * chunk's held in memory, no chunk replayed (after a crash, the chunks whose buckets are not
 * written yet are left out until compaction writes them). One indexed read: for every host at
 * start. Returns as pw_store_totals_series. */
int64_t pw_store_totals_buckets(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                                pw_store_tseries_t *out, pw_diag_t *d);

/* Frees the points of `s` and zeroes it. Accepts NULL. */
void pw_store_tseries_free(pw_store_tseries_t *s);

/* The host's first stored table with timestamp >= from_ms (0: the oldest raw sample kept)
 * into `out` (initialised; reset first; entries with their tags, seq, timestamp and totals).
 * Replays one chunk. Returns 0; PW_ENOENT (host unknown, or nothing stored after from_ms);
 * PW_EINVAL; PW_ECORRUPT; PW_ESTORE; PW_ENOMEM. */
int pw_store_table_at(pw_store_t *st, const char *host, uint64_t from_ms, pw_sample_t *out,
                      pw_diag_t *d);

/* Fills *out (the caller's; zeroed first) with sizes and counters (see pw_store_stats_t).
 * Returns 0; PW_EINVAL; PW_ESTORE (the counters of this process are filled in anyway). */
int pw_store_stats(pw_store_t *st, pw_store_stats_t *out, pw_diag_t *d);

/* Closes every open chunk and compacts every sealed one (see pw_store_compact) inside the
 * current or a new transaction, committing when it opened one, and gives free pages back to
 * the file system: for shutdown tools and benchmarks. Returns 0 or as pw_store_commit (a failure
 * rolls the transaction back). */
int pw_store_flush(pw_store_t *st, pw_diag_t *d);

/* Compacts chunks whose window is over: a put that starts a host's new window only seals the
 * old chunk (its samples stay stored as they came, readable and durable); compaction turns
 * it into one compressed blob in columns (chunk.h) and writes its series pages (then, with
 * budget left, those of chunks compacted before schema 5, then merges a host's chunk pages of
 * a day into day pages, one (host, group of 32 tags, day) at a time; and drops the oldest items
 * when max_size_bytes is exceeded),
 * ~30 ms of work per 3,000-row hour (bench_store: collector.chunk_close_ms_mean). Oldest
 * first, until none is left or `budget_ms` (ms of wall time) has passed, always at least one
 * when any is waiting. Inside the current transaction, or a new one that it commits. The
 * collector calls it after each group commit. Returns how many chunks it compacted (>= 0),
 * or a negative code as pw_store_commit (the transaction was rolled back). */
int64_t pw_store_compact(pw_store_t *st, uint64_t budget_ms, pw_diag_t *d);

/* Checkpoints the WAL into the database file and truncates it (PRAGMA
 * wal_checkpoint(TRUNCATE)); outside a transaction only. Returns 0, PW_EINVAL, PW_EAGAIN
 * (readers prevented a full checkpoint, or a transaction is open) or PW_ESTORE. */
int pw_store_checkpoint(pw_store_t *st, pw_diag_t *d);

/* Changes the database ceiling at run time to `max_db_bytes` (bytes, rounded down to whole
 * pages, at least one; 0 = none), as the option max_db_bytes. Returns 0, PW_EINVAL or
 * PW_ESTORE. */
int pw_store_set_max_bytes(pw_store_t *st, uint64_t max_db_bytes, pw_diag_t *d);

/* ---- pool events (Windows System-log events, winevent.h) ---------------------------------
 * A host's srv 2019/2020 and Resource-Exhaustion-Detector 2004 events, from its agent's samples
 * or an imported export, kept as long as the 15-min rollups (retention). */

/* Adds events ev[0..n) of host `host` (a host the store holds, not retired) into the open
 * transaction (durable at the next pw_store_commit, rolled back with it), each received at
 * `received_ms`. An event already stored for the host (same time, provider, event id and
 * record id) is kept once. When `is_new` is not NULL, is_new[i] says whether ev[i] was stored
 * now. Returns the number stored now (>= 0); PW_EINVAL; PW_ENOENT (no such host); PW_ENOSPC /
 * PW_ESTORE / PW_ENOMEM with the transaction rolled back (as pw_store_put). */
int pw_store_put_events(pw_store_t *st, const char *host, const pw_winevent_t *ev, size_t n,
                        uint64_t received_ms, uint8_t *is_new, pw_diag_t *d);

/* A stored event and when the collector received it. */
typedef struct pw_store_event_s {
    pw_winevent_t ev;
    uint64_t received_ms;
} pw_store_event_t;

/* Events of `host` with from_ms <= time <= to_ms, oldest first (time, then record id), at most
 * `max` of the newest of them, into *out (owned by the caller: pw_free; NULL when none).
 * Returns the count (>= 0; 0 for an unknown host), PW_EINVAL, PW_ESTORE or PW_ENOMEM. */
int64_t pw_store_events(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                        size_t max, pw_store_event_t **out, pw_diag_t *d);

#endif /* PW_STORE_H */
