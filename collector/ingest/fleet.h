/* fleet.h: the one view of the collector's in-memory fleet: one entry per host with what its
 * Hello (or the store, or an import) said about it, its current pool table, the change of
 * every row since the previous sample, its recent pool totals and whether an agent is
 * connected.
 *
 * Only ingest (ingest.h) changes a host: everything here that takes a `pw_host_t *` without
 * const is for ingest's files. Every other room reads through the const functions below;
 * the table's representation (a delta decoder for a streaming host, a sample for a host
 * restored from the store or imported) is private to ingest/. Single-threaded: only the
 * collector's loop touches the fleet.
 */
#ifndef PW_FLEET_H
#define PW_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

#define PW_FLEET_HISTORY 1024 /* (ts, nonpaged, paged) points kept per host */

typedef struct pw_fleet_point_s {
    uint64_t ts_ms;
    uint64_t nonpaged_bytes;
    uint64_t paged_bytes;
} pw_fleet_point_t;

struct pw_host_table_s; /* ingest/fleet_internal.h */

/* A host. The fields are written by ingest only and read by anyone. */
typedef struct pw_host_s {
    char name[256];
    uint8_t agent_id[64], boot_id[64];
    size_t agent_id_len, boot_id_len;
    char os_family[16], os_version[64], arch[16], agent_version[32];
    uint32_t os_build;
    unsigned counter_width; /* 32 or 64: allocs/frees wrap at 2^width */
    int source_kind;        /* Poolwatch__V1__SourceKind of the Hello */
    uint64_t physical_memory_bytes;
    /* Limits the agent's Hello gave (0 = none; a sample's totals may carry one too) */
    uint64_t nonpaged_limit_bytes, paged_limit_bytes;
    int nonpaged_limit_source, paged_limit_source; /* pw_limit_source_t */
    char nonpaged_limit_detail[96], paged_limit_detail[96];
    uint64_t boot_time_ms;
    uint32_t interval_ms;
    uint64_t last_seen_ms;    /* timestamp of the newest sample */
    uint64_t last_contact_ms; /* collector's loop clock at the last frame */
    uint64_t stopped_ms;      /* its agent said Goodbye (a clean stop) at this time of the
                                 agent's clock, ms since the epoch; 0 since its last Hello */
    char stop_reason[32];     /* the Goodbye's reason ("SIGTERM", "service stop", ...) */
    uint64_t samples;         /* samples received since this collector started; an imported
                                 host's: the screens its imports stored (kept across
                                 restarts) */
    uint64_t samples_stored;  /* the distinct samples the store ever stored of the host (the
                                 API's `samples`), kept across restarts and retention: an
                                 agent's host starts with what its chunks hold plus what
                                 retention dropped of them (hosts.samples_expired), then counts
                                 each sample stored (not a resend the store holds already; one a
                                 failed commit rolled back is taken back); an imported host's:
                                 the screens its imports stored */
    uint64_t gaps, resets;
    uint64_t resent;              /* samples its agent sent again that the store held already */
    uint32_t index;               /* position in the fleet (hosts are never removed) */
    int retired;                  /* retired by an operator (pw_ingest_retire): every reader
                                     skips it; its name belongs to no host any more */
    struct pw_host_table_s *priv; /* ingest's: the table, seqs, session, history ring */
} pw_host_t;

typedef struct pw_fleet_s {
    pw_host_t **hosts;
    size_t n, cap;
    struct pw_fleet_agg_s *agg; /* per-tag index (fleet_agg.h), NULL until first used */
    uint32_t *by_name;          /* open addressing on the case-folded name: host index + 1, 0
                                   empty; load <= 1/2 (pw_fleet_find in O(1): the API looks a
                                   host up for each of thousands of suspects) */
    size_t name_slots;
    size_t retired; /* hosts retired so far (they stay in `hosts`): while 0, a name the last
                       analysis pass saw still names a host, with no lookup */
} pw_fleet_t;

/* One row of a host's current table as the view gives it. `tag` points into the host's
 * table: valid until the host's next sample. Change columns (ch_*) are against the previous
 * sample when has_change (a row new since then changes by its whole value); allocs/frees
 * changes are taken modulo the counter width (they wrap) and a move of more than half the
 * range reads as a backwards step. Without a previous sample (a restored or imported host,
 * a keyframe after a dictionary reset) has_change is 0 and the changes are 0. */
typedef struct pw_host_row_s {
    const uint8_t *tag;
    uint8_t tag_len;
    uint8_t pool; /* pw_pool_t */
    uint8_t has_change;
    uint64_t allocs, frees, diff, bytes, per_alloc;
    uint64_t held_bytes; /* a Linux slab cache's slabs (sample.h); 0 = not reported */
    int64_t ch_allocs, ch_frees, ch_diff, ch_bytes, ch_held_bytes;
} pw_host_row_t;

/* How one pool tag's large blocks were made up when the host's agent last looked
 * (BigPoolSnapshot, docs/protocol.md; agent/bigpool.h): kept per (host, tag), the latest one. */
#define PW_BIGPOOL_SIZE_HIST 12 /* [0, 8 KiB), [8, 16 KiB), ... doubling ..., [8 MiB, inf) */
#define PW_HOST_BIGPOOL_MAX  16 /* snapshots kept per host: the oldest received gives way */

typedef struct pw_bigpool_snap_s {
    uint8_t tag[4];
    uint64_t taken_ms;    /* the agent's clock, ms since the epoch */
    uint64_t received_ms; /* the collector's clock when it came */
    int automatic;        /* 1: asked by the collector for a new suspect; 0: by an operator */
    uint64_t scanned;     /* entries of every tag in the kernel's big-pool table */
    uint64_t count, bytes, nonpaged_count, nonpaged_bytes, largest_bytes, smallest_bytes;
    uint64_t size_hist[PW_BIGPOOL_SIZE_HIST]; /* blocks per bucket */
    size_t n_hist;                            /* buckets the agent sent (<= 12) */
} pw_bigpool_snap_t;

/* Initialises an empty fleet. */
void pw_fleet_init(pw_fleet_t *f);

/* Frees every host (the per-tag index, f->agg, is freed by its owner first: ingest). Accepts
 * NULL. */
void pw_fleet_close(pw_fleet_t *f);

/* The host named `name`, or NULL: the exact spelling first, else one that differs only in
 * case (host names compare without case, as DNS names do). Retired hosts are never found.
 * Borrowed from the fleet. */
pw_host_t *pw_fleet_find(const pw_fleet_t *f, const char *name);

/* ---- the view: every room reads a host through these -------------------------------- */

/* Rows in the host's current table (0 when it has none yet). */
size_t pw_host_nrows(const pw_host_t *h);

/* Row i (< pw_host_nrows) of the current table, with its change since the previous sample. */
void pw_host_row(const pw_host_t *h, size_t i, pw_host_row_t *out);

/* The rows the last applied sample changed, as indexes for pw_host_row: returns their count
 * with *idx pointing at them (borrowed until the host's next sample), or SIZE_MAX when any row
 * may have changed (a keyframe, rows added, reset or vanished; a restored or imported table):
 * then scan them all. Lets a reader follow a stream in O(rows changed). */
size_t pw_host_changed_rows(const pw_host_t *h, const uint32_t **idx);

/* Row i without the change columns (has_change 0): cheaper, for whole-table scans. */
void pw_host_row_plain(const pw_host_t *h, size_t i, pw_host_row_t *out);

/* 1 when the host's rows carry held bytes (pw_host_row_t.held_bytes): a Linux host whose
 * agent (or import) reported them for at least one row of the current table; 0 otherwise
 * (Windows, a Linux agent before held bytes): then held_bytes is "not reported", not 0. Stops
 * at the first row that has them (the first, on a Linux host). */
int pw_host_has_held(const pw_host_t *h);

/* The current table's totals (zeroed before the first sample) and its sample time (ms since
 * the epoch, 0 before the first sample). */
const pw_totals_t *pw_host_totals(const pw_host_t *h);
uint64_t pw_host_ts(const pw_host_t *h);

/* Copies the current table (rows, totals, seq, time) into `out` (initialised by the caller,
 * reset here). Returns 0 or PW_ENOMEM. */
int pw_host_table_copy(const pw_host_t *h, pw_sample_t *out);

/* The current table's seq (the agent's sample seq, or the import's screen number). */
uint64_t pw_host_seq(const pw_host_t *h);

/* 1 when the current table came from an agent's stream since this collector started (it
 * has a previous sample and change columns), 0 for a table restored from the store or
 * imported. */
int pw_host_streaming(const pw_host_t *h);

/* 1 while an agent's session is attached to the host. */
int pw_host_connected(const pw_host_t *h);

/* The time of the previous sample (for "change since"): ms, 0 when there is none. */
uint64_t pw_host_prev_ts(const pw_host_t *h);

/* The history ring of (ts, nonpaged, paged) totals, oldest first: its length and point i. */
size_t pw_host_hist_n(const pw_host_t *h);
const pw_fleet_point_t *pw_fleet_hist_at(const pw_host_t *h, size_t i);

/* The host's effective limit of a pool (pw_pool_t): the Hello's when it gave one, else the
 * current sample's totals, else 0 (unknown). */
uint64_t pw_host_limit(const pw_host_t *h, int pool);

/* The last seq made durable in the store for the host's current agent instance. */
uint64_t pw_host_committed_seq(const pw_host_t *h);

/* 1 when the host's history came from an import (its agent id says "import:"). */
int pw_host_imported(const pw_host_t *h);

/* 1 when an operator retired the host (DELETE /api/v1/hosts/{host}). Its entry stays in the
 * fleet so that indexes stay stable (state kept by index elsewhere stays valid), with an empty
 * table; every reader that walks the fleet skips it. */
int pw_host_retired(const pw_host_t *h);

/* The latest big-pool snapshot of tag `tag` (`len` bytes; a pool tag shorter than 4 is padded
 * with spaces, as Windows shows it) on the host, or NULL when none came. Borrowed until the
 * host's next snapshot. */
const pw_bigpool_snap_t *pw_host_big_pool(const pw_host_t *h, const uint8_t *tag, size_t len);

#endif /* PW_FLEET_H */
