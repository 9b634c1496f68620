/* fleet.h: the collector's in-memory fleet state: one entry per host with what its Hello said,
 * its current pool table (the delta decoder of its stream), the previous table (for
 * poolmon's change columns) and the seqs stored and committed. Single-threaded: only the
 * collector's loop touches it.
 */
#ifndef PW_FLEET_H
#define PW_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "delta.h"
#include "sample.h"

#define PW_FLEET_HISTORY 1024 /* (ts, nonpaged, paged) points kept per host for analysis */

typedef struct pw_fleet_point_s {
    uint64_t ts_ms;
    uint64_t nonpaged_bytes;
    uint64_t paged_bytes;
} pw_fleet_point_t;

typedef struct pw_host_s {
    char name[256];
    uint8_t agent_id[64], boot_id[64];
    size_t agent_id_len, boot_id_len;
    char os_family[16], os_version[64], arch[16], agent_version[32];
    uint32_t os_build;
    unsigned counter_width;
    int source_kind;
    uint64_t physical_memory_bytes;
    uint64_t nonpaged_limit_bytes, paged_limit_bytes;
    int nonpaged_limit_source, paged_limit_source; /* pw_limit_source_t */
    char nonpaged_limit_detail[96], paged_limit_detail[96];
    uint64_t boot_time_ms;
    uint32_t interval_ms;
    /* stream state */
    pw_delta_dec_t dec; /* current table (valid when dec.have_base) */
    /* The rows the last sample changed or added, as they were before it, sorted by key
     * (reserved = PW_PREV_ABSENT: the row did not exist): with the current table this gives
     * every row's change since the previous sample (pw_fleet_prev_row) for a few percent of a
     * full copy of the table (80 kB of a 2,000-row host). */
    pw_row_t *prev_rows;
    size_t prev_n, prev_cap;
    int prev_valid; /* prev_rows describes the step to the current table */
    uint64_t prev_ts_ms;
    pw_sample_t snapshot;     /* last stored table, when no stream has started since start */
    uint64_t stored_seq;      /* last seq put into the store for this agent instance */
    int dec_stored;           /* dec's table is the last sample put (pw_store_put_frame) */
    uint64_t committed_seq;   /* last seq made durable */
    uint64_t last_seen_ms;    /* timestamp of the newest sample */
    uint64_t last_contact_ms; /* wall clock of the last frame */
    uint64_t samples, gaps, resets;
    void *conn;             /* the current session, NULL when disconnected */
    pw_fleet_point_t *hist; /* ring of PW_FLEET_HISTORY points */
    size_t hist_n, hist_head;
    int hist_from_store; /* 1: the ring's older points are still to be read from the store
                            (hosts rebuilt at start; analysis_run.c reads them lazily) */
    /* analysis (analysis_run.c) */
    pw_pressure_t np_pressure, pg_pressure;
    int have_pressure;
    struct pw_base_row_s *baseline; /* rows at the start of the agent instance, sorted */
    uint8_t *baseline_tags;         /* their tag bytes, back to back */
    size_t n_baseline;
    uint32_t n_suspects;
    uint32_t index; /* position in pw_fleet_t.hosts (hosts are never removed) */
} pw_host_t;

typedef struct pw_fleet_s {
    pw_host_t **hosts;
    size_t n, cap;
    struct pw_fleet_agg_s *agg; /* per-tag index (fleet_agg.h), NULL until first used */
} pw_fleet_t;

/* Initialises an empty fleet. */
void pw_fleet_init(pw_fleet_t *f);

/* Frees every host. Accepts NULL. */
void pw_fleet_close(pw_fleet_t *f);

/* The host named `name`, or NULL: the exact spelling first, else one that differs only in
 * case (host names compare without case, as DNS names do). */
pw_host_t *pw_fleet_find(const pw_fleet_t *f, const char *name);

/* The host named `name`, created (zeroed, decoder for `counter_width`) when missing.
 * Returns NULL on allocation failure. */
pw_host_t *pw_fleet_get(pw_fleet_t *f, const char *name, unsigned counter_width);

/* Records the totals of the sample just applied into the host's history ring. */
void pw_fleet_note_totals(pw_host_t *h, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged);

#define PW_PREV_ABSENT 1u /* pw_row_t.reserved of a prev_rows entry: the row was new */

/* Before `s` is applied to h->dec: records, as they are now, the rows whose keys `s` names
 * (its absolute rows: new or reset; its changes), and the current sample time. Nothing is
 * recorded (prev_valid 0: change columns read 0) without a current table, when `s` resets the
 * dictionary (its ids mean other tags) or names more keys than the decoder would accept, and
 * on PW_ENOMEM. `s` is not validated here: pw_delta_apply does that next. Returns 0 or
 * PW_ENOMEM. */
int pw_fleet_save_prev(pw_host_t *h, const Poolwatch__V1__Sample *s);

/* The row `cur` of h->dec.rows as it was before the last sample: the recorded row, `cur` itself
 * when the sample left it unchanged, NULL when the row is new. Meaningful only when
 * h->prev_valid. */
const pw_row_t *pw_fleet_prev_row(const pw_host_t *h, const pw_row_t *cur);

/* History point i (0 = oldest) of the ring. */
const pw_fleet_point_t *pw_fleet_hist_at(const pw_host_t *h, size_t i);

#endif /* PW_FLEET_H */
