/* fleet_agg.h: fleet-wide per-(tag, pool) index of the current tables, kept up to date per
 * host (GET /api/v1/tags and /tags/{tag} read it instead of walking every host's rows).
 *
 * For each (tag, pool) the index holds the sum of bytes and one entry (host, bytes) per host
 * that has the row, so a query sorts ~thousands of aggregates by total and computes order
 * statistics (min, max, quantiles, top hosts) only for the aggregates it returns. A host is
 * re-indexed when its table changed: ingest calls pw_fleet_agg_note() after applying
 * a sample; pw_fleet_agg_sync() catches up every host whose table differs from what was
 * indexed (its seq, timestamp or row count moved), so hand-built fleets (tests) need no
 * call. Re-indexing a host indexed at the table its last step started from visits only the
 * rows that step changed (pw_host_changed_rows); one whose rows keep their keys otherwise
 * compares every row and rewrites the changed byte values; a changed row set removes and
 * re-adds the host's rows. Single-threaded, like the
 * fleet.
 */
#ifndef PW_FLEET_AGG_H
#define PW_FLEET_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "fleet.h"
#include "tagdict.h"

typedef struct pw_agg_entry_s {
    uint32_t host; /* index in pw_fleet_t.hosts */
    uint32_t row;  /* index of the row in the host's indexed table */
    uint64_t bytes;
} pw_agg_entry_t;

typedef struct pw_agg_s {
    uint64_t total;    /* sum of bytes over v */
    pw_agg_entry_t *v; /* one per host with the row, in no order */
    uint32_t n, cap;
} pw_agg_t;

typedef struct pw_agg_host_s pw_agg_host_t; /* per host: what was indexed (fleet_agg.c) */

typedef struct pw_fleet_agg_s {
    pw_tagdict_t tags; /* global tag bytes -> id (grow-only) */
    pw_agg_t *aggs;    /* by PW_ROW_KEY(global id, pool); naggs allocated */
    size_t naggs;
    pw_agg_host_t *hosts; /* by fleet host index */
    size_t nhosts;
} pw_fleet_agg_t;

/* Re-indexes host `h` of fleet `f` (its current table: the decoder's rows when it has a
 * base, else the snapshot), creating the index on first use (f->agg, owned by the fleet).
 * Returns 0 or PW_ENOMEM (the index is then dropped and rebuilt by the next call). */
int pw_fleet_agg_note(pw_fleet_t *f, const pw_host_t *h);

/* Re-indexes every host whose table changed since it was indexed and returns the index in
 * *out (owned by f, valid until the fleet changes). Returns 0 or PW_ENOMEM. */
int pw_fleet_agg_sync(const pw_fleet_t *f, const pw_fleet_agg_t **out);

/* Frees the index. Accepts NULL. */
void pw_fleet_agg_free(pw_fleet_agg_t *a);

#endif /* PW_FLEET_AGG_H */
