/* fleet_internal.h: a host's table as ingest keeps it. Included by ingest/ only: other rooms
 * read hosts through fleet.h's functions. */
#ifndef PW_FLEET_INTERNAL_H
#define PW_FLEET_INTERNAL_H

#include "delta.h"
#include "fleet.h"
#include "poolwatch.pb-c.h"

#define PW_PREV_ABSENT 1u /* pw_row_t.reserved of a prev_rows entry: the row was new */

typedef struct pw_host_table_s {
    pw_delta_dec_t dec;  /* current table of a stream (valid when dec.have_base) */
    uint32_t dict_epoch; /* bumped when dec's dictionary starts over (ids may name other tags) */
    /* The rows the last sample changed or added, as they were before it, sorted by key
     * (reserved = PW_PREV_ABSENT: the row did not exist): with the current table this gives
     * every row's change since the previous sample for a few percent of a full copy of the
     * table (80 kB of a 2,000-row host). */
    pw_row_t *prev_rows;
    size_t prev_n, prev_cap;
    int prev_valid; /* prev_rows describes the step to the current table */
    uint64_t prev_ts_ms;
    uint64_t prev_seq;    /* the seq of the table the step started from (with prev_ts_ms) */
    pw_sample_t snapshot; /* last stored table, when no stream has started since start */
    /* An import's snapshot: each entry's change since the screen before it (allocs, frees,
     * diff, bytes, held bytes), snap_ch_n == snapshot.n; NULL when that screen is not known */
    int64_t (*snap_ch)[5];
    size_t snap_ch_n;
    uint64_t snap_prev_ts_ms; /* the screen before's time; 0 with snap_ch NULL */
    uint64_t stored_seq;      /* last seq put into the store for this agent instance */
    int dec_stored;           /* dec's table is the last sample put (pw_store_put_frame) */
    uint64_t committed_seq;   /* last seq made durable */
    uint64_t stored_pending;  /* samples counted in pw_host_t.samples_stored since the last
                                 commit: taken back when the store rolls back */
    void *session;            /* the attached session (ingest.h), NULL when disconnected */
    pw_fleet_point_t *hist;   /* ring of PW_FLEET_HISTORY points */
    size_t hist_n, hist_head;
    int hist_from_store;        /* the ring's older points are still to be read from the store */
    uint64_t hist_prefill_to;   /* the ring holds the store's 1-min buckets up to this sample
                                   time (load_fleet), until the raw samples replace them; 0 none */
    pw_bigpool_snap_t *bigpool; /* latest per tag, up to PW_HOST_BIGPOOL_MAX (pw_ingest_big_pool) */
    size_t n_bigpool;
} pw_host_table_t;

/* The host named `name`, created (zeroed, decoder for `counter_width`) when missing.
 * Returns NULL on allocation failure. */
pw_host_t *pw__fleet_get(pw_fleet_t *f, const char *name, unsigned counter_width);

/* Rebuilds the fleet's name index (after a host was renamed). Returns 0 or PW_ENOMEM. */
int pw__fleet_reindex(pw_fleet_t *f);

/* Records the totals of a sample into the host's history ring (kept in time order). */
void pw__fleet_note_totals(pw_host_t *h, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged);

/* Before `s` is applied to the decoder: records, as they are now, the rows whose keys `s`
 * names, and the current sample time. Nothing is recorded (prev_valid 0) without a current
 * table, when `s` resets the dictionary or names more keys than the decoder would accept,
 * and on PW_ENOMEM. Returns 0 or PW_ENOMEM. */
int pw__fleet_save_prev(pw_host_t *h, const Poolwatch__V1__Sample *s);

/* The change of every entry of the host's snapshot since `prev` (the screen before it, an
 * import's), or none when prev is NULL or not older: what `top` shows in parentheses.
 * Returns 0 or PW_ENOMEM (then no changes are kept). */
int pw__fleet_snapshot_changes(pw_host_t *h, const pw_sample_t *prev);

/* Resets the host's stream decoder (new agent instance or counter width). */
void pw__fleet_reset_stream(pw_host_t *h, unsigned counter_width);

#endif /* PW_FLEET_INTERNAL_H */
