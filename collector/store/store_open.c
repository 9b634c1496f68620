/* store_open.c: opening the store's database (pragmas, WAL, schema migrations, prepared
 * statements, the tag table in memory), its ceiling, and closing it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "store_internal.h"

#define SCHEMA_LAST 12

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
    /* What an operator says about a host: the pool limits an import was given (an agent says
     * its own in every Hello) and whether the host was retired with its history kept (its row
     * then carries a new name, so an agent under the old name starts a new host). */
    {4, "host limits given by an operator, retired hosts",
     "ALTER TABLE hosts ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN np_limit INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN np_limit_source INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN np_limit_detail TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE hosts ADD COLUMN p_limit INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN p_limit_source INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN p_limit_detail TEXT NOT NULL DEFAULT '';"},
    /* Per-row series pages: a compacted chunk's rows in groups of 32 tags (grp = global key
     * >> 7), each row's changes in time order (store_series.c), so that one (host, tag, pool)
     * over days reads one small page per chunk instead of replaying 3,000-row chunks.
     * chunks.pages is 1 once a chunk's pages are written; chunks compacted before this step
     * get theirs in the background (pw_store_compact), until then they are read raw. The
     * 15-min level, like the 1-min one, is written when the raw chunk expires (chunks.m15 0
     * until then; 1 for chunks compacted before this step, which have it already): while a
     * chunk lives its pages answer every step. A paged chunk gets no 1-min rollup: its pages
     * outlive it (they are the raw rows, smaller than 1-min buckets) and are the 1-min level,
     * kept for the 1-min retention (series.t1_ms). A host deleted by the operator takes its
     * pages with it (host_id cascades, as chunks and rollups do). */
    {5, "per-row series pages, lazy 15-min rollups",
     "ALTER TABLE chunks ADD COLUMN pages INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE chunks ADD COLUMN m15 INTEGER NOT NULL DEFAULT 1;"
     "UPDATE chunks SET m15=0 WHERE data IS NULL;"
     "CREATE TABLE series(id INTEGER PRIMARY KEY, chunk_id INTEGER NOT NULL,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE, grp INTEGER NOT NULL,"
     " t0_ms INTEGER NOT NULL,"
     " t1_ms INTEGER NOT NULL, raw_size INTEGER NOT NULL, data BLOB NOT NULL);"
     "CREATE INDEX series_key ON series(host_id, grp, t0_ms);"
     "CREATE INDEX series_t1 ON series(t1_ms);"},
    /* Windows System-log pool events of a host (store_events.c): srv 2019/2020, Resource-
     * Exhaustion-Detector 2004. One row per event, kept once whatever brings it again (an agent
     * that resends the day's events after a restart, an export imported twice): the key is the
     * host, time, provider, event id and record id. tags: the named tags, 13 bytes each (4 tag
     * bytes, pool, bytes as 8 bytes little-endian). Kept as long as the 15-min rollups. */
    {6, "pool events",
     "CREATE TABLE events(id INTEGER PRIMARY KEY,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " ts_ms INTEGER NOT NULL, provider TEXT NOT NULL, event_id INTEGER NOT NULL,"
     " record_id INTEGER NOT NULL, pool INTEGER NOT NULL, tags BLOB NOT NULL,"
     " received_ms INTEGER NOT NULL);"
     "CREATE UNIQUE INDEX events_key ON events(host_id, ts_ms, provider, event_id, record_id);"
     "CREATE INDEX events_ts ON events(ts_ms);"},
    /* What kind of source a host's agent said it samples (Hello.source_kind: a replay of saved
     * poolmon screens is judged screen by screen, as an import) and at what interval: after a
     * restart the host is known before its agent says Hello again, or when it never does (a
     * replay that exited when done). */
    {7, "host source kind and interval",
     "ALTER TABLE hosts ADD COLUMN source_kind INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN interval_ms INTEGER NOT NULL DEFAULT 0;"},
    /* A host's pool totals per 1-min and 15-min bucket (store_totals.c), written with each
     * sample: its nonpaged/paged chart over 30 days reads a few hundred rows instead of
     * replaying raw chunks, which keep them only 48 h. n samples; np/pg the last sample's
     * (last_ms), min and max over the bucket; the limits the last sample carried. The chunks
     * stored before this step are listed in totals_todo until compaction (or retention, before
     * it deletes them) has written their buckets; queries replay them meanwhile. And an agent's
     * clean stop, so that a restarted collector still knows the host stopped. */
    {8, "host totals per bucket, stopped hosts",
     "CREATE TABLE totals(host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,"
     " level INTEGER NOT NULL, t_ms INTEGER NOT NULL, n INTEGER NOT NULL,"
     " last_ms INTEGER NOT NULL, np INTEGER NOT NULL, np_min INTEGER NOT NULL,"
     " np_max INTEGER NOT NULL, pg INTEGER NOT NULL, pg_min INTEGER NOT NULL,"
     " pg_max INTEGER NOT NULL, np_limit INTEGER NOT NULL, pg_limit INTEGER NOT NULL,"
     " PRIMARY KEY(host_id, level, t_ms)) WITHOUT ROWID;"
     "CREATE TABLE totals_todo(chunk_id INTEGER PRIMARY KEY"
     " REFERENCES chunks(id) ON DELETE CASCADE);"
     "INSERT INTO totals_todo(chunk_id) SELECT id FROM chunks;"
     "ALTER TABLE hosts ADD COLUMN stopped_ms INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';"},
    /* Day series pages (store_series.c): a host's chunk pages of one UTC day, merged in the
     * background into one page per group of 4 tags (series_days), so that a week reads ~8
     * pages instead of 168. series.m15 says whether a 15-min rollup already holds a page's
     * samples (1: its chunk was rolled up when it expired, or before schema 5); from this step
     * on the pages (and day pages) are the 15-min level as well as the 1-min one, and the
     * 15-min rollup is written from them when they expire, not from the chunk. chunks_unpaged:
     * series queries replay only chunks without pages, and the chunk columns behind the blob
     * (pages, m1, m15) cost a walk of its overflow pages to read. series_unmerged: what the merge
     * looks for, without reading every page of a host (a 16-KB read each when not cached). */
    {9, "day series pages, 15-min level from series pages",
     "ALTER TABLE series ADD COLUMN m15 INTEGER NOT NULL DEFAULT 0;"
     "UPDATE series SET m15=1 WHERE chunk_id NOT IN (SELECT id FROM chunks WHERE m15=0);"
     "CREATE TABLE series_days(id INTEGER PRIMARY KEY,"
     " host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE, grp INTEGER NOT NULL,"
     " t0_ms INTEGER NOT NULL, t1_ms INTEGER NOT NULL, raw_size INTEGER NOT NULL,"
     " data BLOB NOT NULL);"
     "CREATE INDEX series_days_key ON series_days(host_id, grp, t0_ms);"
     "CREATE INDEX series_days_t1 ON series_days(t1_ms);"
     "CREATE INDEX chunks_unpaged ON chunks(host_id, t0_ms) WHERE pages<>1;"
     "CREATE INDEX series_unmerged ON series(host_id, m15, grp, t0_ms) WHERE m15=0;"},
    /* The rest of what an agent's Hello says of its machine (OS build, architecture, agent
     * version), written with a sample when it differs: a restarted collector shows them for a
     * host whose agent stopped (or does not come back), not blanks. */
    {10, "host os build, architecture and agent version",
     "ALTER TABLE hosts ADD COLUMN os_build INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE hosts ADD COLUMN arch TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE hosts ADD COLUMN agent_version TEXT NOT NULL DEFAULT '';"},
    /* The samples of a host that left the raw chunks (raw retention, the max_size budget): with
     * what its chunks hold, every sample the store ever stored of it, whatever retention dropped
     * since (the API's `samples` after a restart). A trigger on the chunk's deletion adds them in
     * the statement that deletes it, so the count and the chunks never disagree. An open chunk
     * counts its rows in chunk_rows (nsamples 0): only an empty one is deleted while open; a
     * host's own deletion takes the count with its row. Samples retention dropped before this
     * step are not known: a migrated store counts from what its chunks hold now. */
    {11, "samples dropped by retention per host",
     "ALTER TABLE hosts ADD COLUMN samples_expired INTEGER NOT NULL DEFAULT 0;"
     "CREATE TRIGGER chunks_expired AFTER DELETE ON chunks WHEN old.nsamples > 0 BEGIN"
     " UPDATE hosts SET samples_expired = samples_expired + old.nsamples"
     " WHERE id = old.host_id; END;"},
    /* Why samples are missing (pw_store_gaps): besides what an agent reported lost (cause 0,
     * the rows before this step), a series page that did not decode is recorded as lost when the
     * day merge or retention meets it, and dropped: its first and last sample times (t0_ms,
     * ts_ms), its chunk's samples (missed, 0 when not known), the rows it held as global keys
     * k0..k1 (its group of 32 tags; 0..2^32-1: every row) and what failed (detail). */
    {12, "gap causes",
     "ALTER TABLE gaps ADD COLUMN cause INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE gaps ADD COLUMN t0_ms INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE gaps ADD COLUMN k0 INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE gaps ADD COLUMN k1 INTEGER NOT NULL DEFAULT 4294967295;"
     "ALTER TABLE gaps ADD COLUMN detail TEXT NOT NULL DEFAULT '';"},
};

/* The last seq stored for instance `i`: its row's, or the newest sample of its host's newest
 * open chunk when the host's row names it. Puts do not write the instance's row (store_put.c: a
 * page of the WAL less per group commit); the open chunk's newest sample is always one of the
 * instance the host's row names, and every other instance's row is exact. */
#define INST_LAST_SEQ                                                                              \
    "max(i.last_seq, coalesce((SELECT r.seq FROM chunk_rows r WHERE r.chunk_id=(SELECT max(c.id)"  \
    " FROM chunks c WHERE c.host_id=i.host_id AND c.data IS NULL AND c.sealed=0)"                  \
    " AND EXISTS(SELECT 1 FROM hosts h WHERE h.id=i.host_id AND h.agent_id=i.agent_id"             \
    " AND h.boot_id=i.boot_id) ORDER BY r.idx DESC LIMIT 1), 0))"

static const char *const sql_text[S__COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    /* a compaction's own transaction commits unsynced (store_chunks.c), the others synced */
    [S_SYNC_NORMAL] = "PRAGMA synchronous=NORMAL",
    [S_SYNC_FULL] = "PRAGMA synchronous=FULL",
    [S_ROLLBACK] = "ROLLBACK",
    [S_HOST_GET] = "SELECT id, counter_width, agent_id, boot_id, os, source_kind, interval_ms,"
                   " np_limit, np_limit_source, np_limit_detail, p_limit, p_limit_source,"
                   " p_limit_detail, os_build, arch, agent_version FROM hosts WHERE name=?1",
    [S_HOST_INS] = "INSERT INTO hosts(name, os, counter_width) VALUES(?1, ?2, ?3)",
    [S_HOST_UPD] = "UPDATE hosts SET os=?2, counter_width=?3, agent_id=?4, boot_id=?5,"
                   " last_seen_ms=?6, last_seq=?7, source_kind=?8, interval_ms=?9, os_build=?10,"
                   " arch=?11, agent_version=?12 WHERE id=?1",
    [S_HOST_LIMITS] = "UPDATE hosts SET np_limit=?2, np_limit_source=?3, np_limit_detail=?4,"
                      " p_limit=?5, p_limit_source=?6, p_limit_detail=?7 WHERE id=?1",
    [S_INST_GET] = "SELECT " INST_LAST_SEQ ", i.host_id FROM instances i"
                   " WHERE i.agent_id=?1 AND i.boot_id=?2",
    [S_AGENT_LAST] = "SELECT max(" INST_LAST_SEQ ") FROM instances i WHERE i.agent_id=?1",
    /* the instance's last seq and that sample's time: the open chunk's last row when it is
     * the instance's and newer than the instances row (as INST_LAST_SEQ reads it) */
    [S_INST_LAST_TS] = "SELECT CASE WHEN r.seq > i.last_seq THEN r.seq ELSE i.last_seq END,"
                       " CASE WHEN r.seq > i.last_seq THEN r.ts_ms ELSE i.last_seen_ms END"
                       " FROM instances i LEFT JOIN chunk_rows r ON r.chunk_id=(SELECT max(c.id)"
                       " FROM chunks c WHERE c.host_id=i.host_id AND c.data IS NULL AND"
                       " c.sealed=0) AND EXISTS(SELECT 1 FROM hosts h WHERE h.id=i.host_id AND"
                       " h.agent_id=i.agent_id AND h.boot_id=i.boot_id)"
                       " WHERE i.agent_id=?1 AND i.boot_id=?2 ORDER BY r.idx DESC LIMIT 1",
    [S_INST_UPSERT] = "INSERT INTO instances(agent_id, boot_id, host_id, last_seq, last_seen_ms)"
                      " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(agent_id, boot_id) DO UPDATE SET"
                      " host_id=excluded.host_id, last_seq=excluded.last_seq,"
                      " last_seen_ms=excluded.last_seen_ms",
    [S_INST_AWAY] = "UPDATE instances SET last_seq=max(last_seq, ?3), last_seen_ms=?4"
                    " WHERE agent_id=?1 AND boot_id=?2",
    [S_INST_SEAL] = "UPDATE instances SET last_seq=max(last_seq, ?2), last_seen_ms=?3"
                    " WHERE host_id=?1 AND agent_id=(SELECT agent_id FROM hosts WHERE id=?1)"
                    " AND boot_id=(SELECT boot_id FROM hosts WHERE id=?1)",
    [S_HOST_SEAL] = "UPDATE hosts SET last_seq=?2, last_seen_ms=?3 WHERE id=?1",
    [S_TAG_INS] = "INSERT INTO tags(id, tag) VALUES(?1, ?2)",
    [S_TAG_ALL] = "SELECT id, tag FROM tags ORDER BY id",
    [S_CHUNK_INS] = "INSERT INTO chunks(host_id, window_ms, t0_ms, t1_ms, nsamples, counter_width,"
                    " first_seq, last_seq, m1, m15) VALUES(?1, ?2, ?3, ?3, 0, ?4, ?5, ?5, 0, 0)",
    [S_CHUNK_OPEN] = "SELECT id, counter_width, window_ms FROM chunks"
                     " WHERE host_id=?1 AND data IS NULL AND sealed=0 ORDER BY id",
    [S_CHUNK_SEAL] = "UPDATE chunks SET t0_ms=?2, t1_ms=?3, nsamples=?4, first_seq=?5,"
                     " last_seq=?6, sealed=1 WHERE id=?1",
    [S_CHUNK_CLOSE] = "UPDATE chunks SET raw_size=?2, data=?3, fmt=?4 WHERE id=?1",
    [S_SEALED_NEXT] = "SELECT id, host_id, counter_width, t0_ms, t1_ms FROM chunks"
                      " WHERE id>=?1 AND data IS NULL AND sealed=1 ORDER BY id LIMIT 1",
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
    /* pages<>1 first: the partial index chunks_unpaged (schema 9) skips paged chunks */
    [S_CHUNK_RANGE_M1] =
        "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
        " AND pages<>1 AND t0_ms BETWEEN ?2 AND ?3 AND (data IS NULL OR t1_ms >= ?4)"
        " AND m1=0 ORDER BY t0_ms, id",
    [S_CHUNK_RANGE_M15] =
        "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
        " AND pages<>1 AND t0_ms BETWEEN ?2 AND ?3 AND (data IS NULL OR (t1_ms >= ?4 AND m15=0))"
        " ORDER BY t0_ms, id",
    [S_CHUNK_RANGE_NP] =
        "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
        " AND pages<>1 AND t0_ms BETWEEN ?2 AND ?3 AND (data IS NULL OR t1_ms >= ?4)"
        " ORDER BY t0_ms, id",
    /* a paged chunk's rollups come from its pages when they expire (S_SERIES_EXPIRING) */
    [S_RET_EXPIRING] = "SELECT host_id, counter_width, t0_ms, t1_ms, raw_size, data, fmt,"
                       " m1=0 AND t1_ms >= ?2, m15=0 AND t1_ms >= ?3, id, nsamples FROM chunks"
                       " WHERE data IS NOT NULL AND t1_ms < ?1 AND pages<>1 AND"
                       " ((m1=0 AND t1_ms >= ?2) OR (m15=0 AND t1_ms >= ?3))"
                       " ORDER BY id",
    [S_RET_SERIES] = "DELETE FROM series WHERE t1_ms < ?1",
    [S_CHUNK_LAST] = "SELECT id, counter_width, raw_size, data, fmt FROM chunks WHERE host_id=?1"
                     " ORDER BY id DESC LIMIT 1",
    [S_GAP_INS] = "INSERT INTO gaps(host_id, ts_ms, seq, missed) VALUES(?1, ?2, ?3, ?4)",
    [S_GAP_LOST] = "INSERT INTO gaps(host_id, ts_ms, seq, missed, cause, t0_ms, k0, k1, detail)"
                   " VALUES(?1, ?2, 0, ?3, ?4, ?5, ?6, ?7, ?8)",
    /* a gap overlaps [?2, ?3]: its last time (ts_ms) from ?2 on, its first (t0_ms, or ts_ms
     * when not known) up to ?3 */
    [S_CHUNK_NSAMPLES] = "SELECT nsamples FROM chunks WHERE id=?1",
    [S_GAPS_RANGE] = "SELECT ts_ms, t0_ms, seq, missed, cause, k0, k1, detail FROM gaps"
                     " WHERE host_id=(SELECT id FROM hosts WHERE name=?1) AND ts_ms >= ?2"
                     " AND (CASE WHEN t0_ms > 0 THEN t0_ms ELSE ts_ms END) <= ?3"
                     " ORDER BY ts_ms, rowid",
    [S_RET_CHUNKS] = "DELETE FROM chunks WHERE data IS NOT NULL AND t1_ms < ?1",
    [S_RET_ROLLUPS] = "DELETE FROM rollups WHERE level=?1 AND t1_ms < ?2",
    [S_RET_GAPS] = "DELETE FROM gaps WHERE ts_ms < ?1",
    [S_RET_EVENTS] = "DELETE FROM events WHERE ts_ms < ?1",
    /* last seen and last seq: the newest sample of the newest open chunk, else the row's;
     * imp.n: the screens of a host's imports (agent ids "import:<name>"), in one pass over the
     * instances */
    [S_HOSTS_ALL] =
        "SELECT h.name, h.os, h.counter_width, h.agent_id, h.boot_id,"
        " coalesce(r.ts_ms, h.last_seen_ms), coalesce(r.seq, h.last_seq),"
        " h.np_limit, h.np_limit_source, h.np_limit_detail, h.p_limit,"
        " h.p_limit_source, h.p_limit_detail, h.source_kind, h.interval_ms, h.stopped_ms,"
        " h.stop_reason, coalesce(imp.n, 0),"
        " (SELECT coalesce(sum(CASE WHEN c.data IS NULL AND c.sealed=0 THEN (SELECT count(*)"
        " FROM chunk_rows cr WHERE cr.chunk_id=c.id) ELSE c.nsamples END), 0) FROM chunks c"
        " WHERE c.host_id=h.id), h.os_build, h.arch, h.agent_version, h.samples_expired"
        " FROM hosts h LEFT JOIN chunk_rows r"
        " ON r.rowid=(SELECT r2.rowid FROM chunk_rows r2 WHERE r2.chunk_id="
        "(SELECT max(c.id) FROM chunks c WHERE c.host_id=h.id AND c.data IS NULL"
        " AND c.sealed=0) ORDER BY r2.idx DESC LIMIT 1)"
        " LEFT JOIN (SELECT host_id, sum(last_seq) AS n FROM instances"
        " WHERE substr(agent_id, 1, 7) = X'696d706f72743a' GROUP BY host_id) imp"
        " ON imp.host_id = h.id WHERE h.retired=0 ORDER BY h.name",
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
                " (SELECT count(*) FROM tags), (SELECT count(*) FROM hosts),"
                " (SELECT count(*) FROM series) + (SELECT count(*) FROM series_days),"
                " (SELECT coalesce(sum(length(data)), 0) FROM series)"
                " + (SELECT coalesce(sum(length(data)), 0) FROM series_days)",
    [S_PAGES] = "PRAGMA page_count",
    [S_PAGESIZE] = "PRAGMA page_size",
    [S_FREEPAGES] = "PRAGMA freelist_count",
    [S_SERIES_INS] = "INSERT INTO series(chunk_id, host_id, grp, t0_ms, t1_ms, raw_size, data,"
                     " m15) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_SERIES_RANGE] = "SELECT raw_size, data FROM series WHERE host_id=?1 AND grp=?2"
                       " AND t0_ms BETWEEN ?3 AND ?4 AND t1_ms >= ?5 ORDER BY t0_ms, id",
    [S_SERIES_RANGE15] = "SELECT raw_size, data FROM series WHERE host_id=?1 AND grp=?2"
                         " AND t0_ms BETWEEN ?3 AND ?4 AND t1_ms >= ?5 AND m15=0"
                         " ORDER BY t0_ms, id",
    [S_CHUNK_PAGED] = "UPDATE chunks SET pages=?2 WHERE id=?1",
    [S_UNPAGED_NEXT] = "SELECT id, host_id, counter_width, raw_size, data, fmt, m15 FROM chunks"
                       " WHERE id>=?1 AND data IS NOT NULL AND pages=0 AND m1=0"
                       " ORDER BY id LIMIT 1",
    [S_OLDEST] = "SELECT min(t) FROM (SELECT min(t1_ms) AS t FROM chunks WHERE data IS NOT NULL"
                 " UNION ALL SELECT min(t1_ms) FROM rollups UNION ALL SELECT min(t1_ms) FROM series"
                 " UNION ALL SELECT min(t1_ms) FROM series_days)",
    [S_DAYS_INS] = "INSERT INTO series_days(host_id, grp, t0_ms, t1_ms, raw_size, data)"
                   " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_DAYS_RANGE] = "SELECT raw_size, data FROM series_days WHERE host_id=?1 AND grp=?2"
                     " AND t0_ms BETWEEN ?3 AND ?4 AND t1_ms >= ?5 ORDER BY t0_ms, id",
    [S_DAYS_OF] = "SELECT id, raw_size, data, t0_ms, t1_ms, -1 FROM series_days"
                  " WHERE host_id=?1 AND grp=?2"
                  " AND t0_ms BETWEEN ?3 AND ?4 ORDER BY t0_ms, id",
    [S_MERGE_SAVE] = "SAVEPOINT merge",
    [S_MERGE_RELEASE] = "RELEASE merge",
    [S_MERGE_UNDO] = "ROLLBACK TO merge",
    [S_DAYS_DEL] = "DELETE FROM series_days WHERE id=?1",
    [S_RET_DAYS] = "DELETE FROM series_days WHERE t1_ms < ?1",
    /* The first group from ?2 on whose oldest unmerged page starts on a day that is over for
     * the host (it has a chunk that starts on a later day): merged once, at the day's end
     * (merging early, at 12 pages, merged each sample 1.5 times). One seek per group in the
     * index series_unmerged, the group's pages in time order. */
    [S_MERGE_FIND] = "SELECT grp, t0_ms / ?3 FROM series WHERE host_id=?1 AND m15=0 AND grp >= ?2"
                     " AND t0_ms < (SELECT max(t0_ms) FROM chunks WHERE host_id=?1) / ?3 * ?3"
                     " ORDER BY grp, t0_ms LIMIT 1",
    [S_MERGE_PAGES] = "SELECT id, raw_size, data, t0_ms, t1_ms, chunk_id FROM series"
                      " WHERE host_id=?1 AND grp=?2"
                      " AND t0_ms BETWEEN ?3 AND ?4 AND m15=0 ORDER BY t0_ms, id",
    [S_SERIES_DEL] = "DELETE FROM series WHERE id=?1",
    [S_HOST_NEXT] = "SELECT host_id FROM series WHERE m15=0 AND host_id > ?1"
                    " ORDER BY host_id LIMIT 1",
    [S_SERIES_EXPIRING] = "SELECT host_id, grp, t0_ms, t1_ms, raw_size, data FROM series"
                          " WHERE t1_ms < ?1 AND t1_ms >= ?2 AND m15=0 ORDER BY id",
    [S_DAYS_EXPIRING] = "SELECT host_id, grp, t0_ms, t1_ms, raw_size, data FROM series_days"
                        " WHERE t1_ms < ?1 AND t1_ms >= ?2 ORDER BY id",
    [S_EVICT_CHUNKS] = "DELETE FROM chunks WHERE data IS NOT NULL AND t1_ms < ?1",
    [S_EVICT_ROLLUPS] = "DELETE FROM rollups WHERE t1_ms < ?1",
};

/* ---- open / close ------------------------------------------------------------------------ */

uint64_t pw__store_file_size(const char *path, const char *suffix)
{
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof(p), "%s%s", path, suffix);
    return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Records how many pages the last commit left in the WAL (pw__store_wal_after_commit reads it).
 * Replaces SQLite's automatic checkpoint hook, which the store never relies on. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)db, (void)name;
    ((pw_store_sql_t *)arg)->wal_pages = pages;
    return SQLITE_OK;
}

/* Stores written before auto_vacuum was set keep freed pages forever (a file that only
 * grows after retention): switching needs one VACUUM, which rewrites the file. Done once, at
 * open, before anything else uses the connection. */
static int ensure_auto_vacuum(pw_store_sql_t *q, pw_diag_t *d)
{
    sqlite3_stmt *s;
    int64_t mode = -1;
    if (sqlite3_prepare_v2(q->db, "PRAGMA auto_vacuum", -1, &s, NULL) == SQLITE_OK) {
        if (sqlite3_step(s) == SQLITE_ROW)
            mode = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    if (mode == 2)
        return 0;
    int rc = pw__store_exec(q, "PRAGMA auto_vacuum=INCREMENTAL", d, "auto_vacuum");
    return rc ? rc : pw__store_exec(q, "VACUUM", d, "vacuum to incremental auto_vacuum");
}

int pw__store_exec(pw_store_sql_t *q, const char *sql, pw_diag_t *d, const char *what)
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
    int rc = pw__store_exec(q, "BEGIN IMMEDIATE", d, "begin migration");
    if (rc != 0)
        return rc;
    rc = pw__store_exec(q,
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
            rc = pw__store_sqlfail(q, r, d, "schema version");
        sqlite3_finalize(s);
        s = NULL;
    }
    if (rc == 0 && have > SCHEMA_LAST)
        rc = pw_diag_set(d, PW_ESTORE, 0, 0, "schema",
                         "database schema version %lld is newer than this build's %d",
                         (long long)have, SCHEMA_LAST);
    int64_t now_ms = (int64_t)pw_clock_wall_ms();
    for (size_t i = 0; rc == 0 && i < sizeof(migrations) / sizeof(migrations[0]); i++) {
        const migration_t *m = &migrations[i];
        if (m->version <= have)
            continue;
        rc = pw__store_exec(q, m->sql, d, m->name);
        if (rc != 0)
            break;
        int r = sqlite3_prepare_v2(
            q->db, "INSERT INTO migrations(version, name, applied_ms) VALUES(?1, ?2, ?3)", -1, &s,
            NULL);
        if (r == SQLITE_OK) {
            sqlite3_bind_int(s, 1, m->version);
            sqlite3_bind_text(s, 2, m->name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(s, 3, now_ms);
            r = sqlite3_step(s);
        }
        if (r != SQLITE_DONE)
            rc = pw__store_sqlfail(q, r, d, "record migration");
        sqlite3_finalize(s);
        s = NULL;
    }
    if (rc == 0)
        return pw__store_exec(q, "COMMIT", d, "commit migration");
    pw__store_exec(q, "ROLLBACK", NULL, "rollback migration");
    return rc;
}

static int load_tags(pw_store_sql_t *q, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, S_TAG_ALL);
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
        r = pw__store_sqlfail(q, rc, d, "load tags");
    sqlite3_reset(s);
    q->tags_committed = pw_tagdict_count(&q->tags);
    return r;
}

int pw__store_pragma_int(pw_store_sql_t *q, int which, int64_t *v, pw_diag_t *d)
{
    sqlite3_stmt *s = pw__store_stmt(q, which);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(s, 0);
    int r = rc == SQLITE_ROW ? 0 : pw__store_sqlfail(q, rc, d, "pragma");
    sqlite3_reset(s);
    return r;
}

int pw__store_sql_set_max_bytes(pw_store_sql_t *q, uint64_t max_db_bytes, pw_diag_t *d)
{
    int64_t psize = 0;
    int rc = pw__store_pragma_int(q, S_PAGESIZE, &psize, d);
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
        return pw__store_sqlfail(q, rc, d, "max_page_count");
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : pw__store_sqlfail(q, rc, d, "max_page_count");
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
    q->totals_todo = 1; /* until compaction found none */
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
#ifndef _WIN32
    /* A new store is the owner's only (0600, whatever the umask): SQLite would create it 0644
     * less the umask, and its -wal and -shm files take the database file's mode. An existing
     * file keeps the mode its operator gave it. */
    if (rc == 0 && !q->memory) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
#endif
    int r = rc ? SQLITE_OK
               : sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == 0 && r != SQLITE_OK) {
        /* SQLite says only "unable to open database file": say which directory is missing or
         * not writable (the systemd unit creates /var/lib/poolwatch-collector; a hand-run
         * collector with the example config does not). */
        char dir[1024], why[1200] = "";
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
#ifdef _WIN32 /* C:\ProgramData\poolwatch\poolwatch.db: either separator */
        char *bs = strrchr(dir, '\\');
        if (bs != NULL && (slash == NULL || bs > slash))
            slash = bs;
#endif
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
        /* Page size and auto_vacuum before anything is written (a new file; an existing one
         * keeps its page size, and ensure_auto_vacuum switches it). 16 KB pages: series pages
         * are rows of a few KB, which 4 KB pages hold one each, the rest of the page unused.
         * auto_vacuum: freed pages are given back after retention (pw__store_vacuum). */
        rc = pw__store_exec(q, "PRAGMA page_size=16384", d, "page_size");
        rc = rc ? rc : pw__store_exec(q, "PRAGMA auto_vacuum=INCREMENTAL", d, "auto_vacuum");
        /* WAL: commits append to the log, readers are not blocked. synchronous=FULL: the WAL
         * is fsync'ed at every commit, which is what "acked means on disk" needs; NORMAL
         * would only sync at checkpoints and can lose the newest commits on power loss
         * (https://sqlite.org/pragma.html#pragma_synchronous, https://sqlite.org/wal.html). */
        rc = rc ? rc : pw__store_exec(q, "PRAGMA journal_mode=WAL", d, "journal_mode");
        rc = rc ? rc : pw__store_exec(q, "PRAGMA synchronous=FULL", d, "synchronous");
        rc = rc ? rc : pw__store_exec(q, "PRAGMA foreign_keys=ON", d, "foreign_keys");
    }
    if (rc == 0) {
        /* A WAL restarted after a checkpoint is reused, not shrunk: one that grew (a burst, a
         * long reader) gives back what is above half its limit at the next restart. */
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit=%llu",
                 (unsigned long long)(q->opts.wal_max_bytes / 2));
        rc = pw__store_exec(q, sql, d, "journal_size_limit");
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
    rc = rc ? rc : ensure_auto_vacuum(q, d);
    for (int i = 0; rc == 0 && i < S__COUNT; i++) {
        r = sqlite3_prepare_v3(q->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &q->st[i], NULL);
        if (r != SQLITE_OK)
            rc = pw__store_sqlfail(q, r, d, sql_text[i]);
    }
    rc = rc ? rc : pw__store_totals_open(q, d);
    rc = rc ? rc : load_tags(q, d);
    if (rc == 0 && !q->memory)
        pw__store_ckpt_start(q);
    if (rc == 0) {
        int64_t ps = 0;
        rc = pw__store_pragma_int(q, S_PAGESIZE, &ps, d);
        q->page_size = ps > 0 ? ps : 4096;
        /* after the checkpointer turned wal_autocheckpoint off, which clears any hook */
        sqlite3_wal_hook(q->db, wal_hook, q);
    }
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
    pw__store_sync_rows(q);
    pw__store_ckpt_stop(q->ckpt);
    if (q->db != NULL)
        pw__store_abort_txn(q);
    pw__store_forget_hosts(q);
    pw_free(q->slots);
    pw_free(q->sealed);
    pw_free(q->chg);
    pw_free(q->merge);
    for (int i = 0; i < S__COUNT; i++)
        sqlite3_finalize(q->st[i]);
    pw__store_totals_close(q);
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
