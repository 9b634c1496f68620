/* fleetq.h: the global fleet view: what several collectors remote-wrote into one
 * Prometheus-compatible store (VictoriaMetrics, Prometheus, Mimir, Thanos), read back with
 * PromQL instant queries (POST <query_url>/api/v1/query, the Prometheus HTTP API:
 * https://prometheus.io/docs/prometheus/latest/querying/api/) every `refresh_ms`, parsed with
 * jansson into a snapshot that the API serves (api_global.c): hosts, their owning collector,
 * pools, tag rows and leak suspects of every collector.
 *
 * A refresh is four queries, one after the other, over the series of remote_write.h:
 *   1. {__name__=~"poolwatch_pool_bytes|poolwatch_pool_limit_bytes|
 *       poolwatch_pool_exhaustion_seconds|poolwatch_host_connected|poolwatch_host_suspects|
 *       poolwatch_host_loading_history|poolwatch_host_owner"}
 *                                                       the hosts (a host = a host label)
 *   2. timestamp(poolwatch_pool_bytes{pool="nonpaged"}) each host's last sample time
 *   3. poolwatch_tag_bytes                              the (host, tag, pool) rows exported
 *   4. {__name__=~"poolwatch_leak_growth_bytes_per_hour|poolwatch_leak_score"}
 * An instant query sees a series for the store's lookback (Prometheus: 5 minutes), so a host
 * whose collector sent nothing for longer leaves the global view (its owner's own view keeps
 * it). The snapshot is replaced only when all four succeed; a failure keeps the previous one
 * (stats: failures, the last error), logged as a WARN for the first of a run of failures.
 * The queries run on the collector's loop; each answer (tens of MB for a fleet of thousands)
 * is parsed, the snapshot sorted and the readers' prepare hook run on a libuv worker thread,
 * one job at a time, so the loop never waits for them: the new snapshot is published (swapped
 * in on the loop) once all of it is made.
 */
#ifndef PW_FLEETQ_H
#define PW_FLEETQ_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "error.h"
#include "sample.h"

#define PW_FLEETQ_TAG_TEXT 64 /* a tag label value (pw_tag_format's form) with its NUL */

typedef struct pw_fleetq_host_s {
    char name[256];
    char collector[256]; /* poolwatch_host_owner's collector label; "" = unknown */
    int connected;       /* poolwatch_host_connected */
    uint64_t last_seen_ms;
    uint64_t used[2];         /* poolwatch_pool_bytes: [0] nonpaged, [1] paged */
    uint64_t limit[2];        /* poolwatch_pool_limit_bytes; 0 = absent (unknown) */
    char limit_source[2][16]; /* its source label ("computed", ...); "" = absent (unknown) */
    int loading;              /* poolwatch_host_loading_history: 1 while its history loads */
    double eta_s[2];          /* poolwatch_pool_exhaustion_seconds; < 0 = absent */
    uint32_t suspects;        /* poolwatch_host_suspects */
} pw_fleetq_host_t;

typedef struct pw_fleetq_row_s {
    uint32_t host; /* index in hosts */
    uint8_t pool;  /* pw_pool_t */
    char tag[PW_FLEETQ_TAG_TEXT];
    uint64_t bytes;
} pw_fleetq_row_t;

typedef struct pw_fleetq_leak_s {
    uint32_t host;
    uint8_t pool;
    char tag[PW_FLEETQ_TAG_TEXT];
    double growth_bytes_per_hour, score; /* NaN when the store had only the other series */
} pw_fleetq_leak_t;

/* One complete refresh. Hosts sorted by name; rows by tag, pool, bytes (most first) and host;
 * leaks by host, tag, pool. */
typedef struct pw_fleetq_snap_s {
    pw_fleetq_host_t *hosts;
    size_t n_hosts;
    pw_fleetq_row_t *rows;
    size_t n_rows;
    pw_fleetq_leak_t *leaks;
    size_t n_leaks;
    uint64_t as_of_ms;   /* wall clock when the refresh started */
    uint64_t took_ms;    /* the four queries, parsing included */
    uint64_t body_bytes; /* response bytes of the four queries */
    void *prepared;      /* the prepare hook's value for this snapshot (owned), or NULL */
    void (*prepared_free)(void *prepared);
} pw_fleetq_snap_t;

typedef struct pw_fleetq_opts_s {
    const char *query_url;      /* http[s]://host:port[/prefix]: <prefix>/api/v1/query is asked */
    uint64_t refresh_ms;        /* 0 = 10000 */
    uint64_t timeout_ms;        /* one query; 0 = 30000 */
    size_t max_response_bytes;  /* one query's body; 0 = 256 MiB */
    const char *ca_file;        /* https; NULL/"" = the system bundle */
    const char *const *headers; /* "Name: value" items (X-Scope-OrgID for Mimir), n_headers */
    size_t n_headers;
    /* Made once per snapshot for its readers (the API's answers: api.h pw_api_global_prepare),
     * on the worker thread after the snapshot is built and before it is published: reads s
     * only; returns a value kept as s->prepared and freed with prepared_free (on the loop
     * thread, with the snapshot), or NULL. NULL hook = none. */
    void *(*prepare)(const struct pw_fleetq_snap_s *s);
    void (*prepared_free)(void *prepared);
} pw_fleetq_opts_t;

typedef struct pw_fleetq_stats_s {
    uint64_t refreshes; /* complete */
    uint64_t failures;  /* refreshes abandoned */
    int last_error;     /* negative code, or an HTTP status of a failed query; 0 = none */
} pw_fleetq_stats_t;

typedef struct pw_fleetq_s pw_fleetq_t;

/* Starts the refresh timer on `loop` (borrowed); the first refresh starts at once. Strings are
 * copied. Returns 0, PW_ECONFIG (query_url: d->field "query_url"), PW_ETLS, PW_EINVAL or
 * PW_ENOMEM. */
int pw_fleetq_new(uv_loop_t *loop, const pw_fleetq_opts_t *opts, pw_fleetq_t **out, pw_diag_t *d);

/* The last complete snapshot (borrowed until the next refresh completes: use it within one
 * turn of the loop), or NULL before the first. Loop thread only. */
const pw_fleetq_snap_t *pw_fleetq_snapshot(const pw_fleetq_t *q);

/* Starts a refresh now unless one runs (tests, after the writers flushed). */
void pw_fleetq_refresh(pw_fleetq_t *q);

void pw_fleetq_get_stats(const pw_fleetq_t *q, pw_fleetq_stats_t *out);

/* Stops and frees once libuv closed the handles. Accepts NULL. */
void pw_fleetq_close(pw_fleetq_t *q);

/* ---- parsing (no I/O; the refresh and the tests use it) ---------------------------------- */

typedef struct pw_fleetq_build_s pw_fleetq_build_t;

pw_fleetq_build_t *pw_fleetq_build_new(void);

/* Adds the answer `json` (len bytes) of query number `which` (0..3, the order above) to the
 * snapshot being built. Returns 0; PW_EPARSE with d saying what (not JSON: jansson's text and
 * position; "status" not "success"; not a vector; a sample without its labels or value);
 * PW_ENOMEM. Results of queries 1-3 naming a host that query 0 did not list are ignored. */
int pw_fleetq_build_add(pw_fleetq_build_t *b, int which, const char *json, size_t len,
                        pw_diag_t *d);

/* Ends the build: the snapshot (caller frees it with pw_fleetq_snap_free) or NULL (ENOMEM).
 * Frees b. */
pw_fleetq_snap_t *pw_fleetq_build_end(pw_fleetq_build_t *b);
void pw_fleetq_build_free(pw_fleetq_build_t *b);

void pw_fleetq_snap_free(pw_fleetq_snap_t *s);

/* The host named `name` in s (exact), or NULL. */
const pw_fleetq_host_t *pw_fleetq_find(const pw_fleetq_snap_t *s, const char *name);

#endif /* PW_FLEETQ_H */
