/* remote_write.h: Prometheus remote write 1.0 from the collector
 * (spec: https://prometheus.io/docs/concepts/remote_write_spec/), so that the fleet's series
 * reach an existing Prometheus-compatible store (Prometheus with
 * --web.enable-remote-write-receiver, Mimir, Cortex, Thanos Receive, VictoriaMetrics).
 *
 * What is sent: every `interval`, for each host with a sample newer than the last one sent,
 * the latest value of the series of series.h (the names and labels of /metrics):
 *   poolwatch_pool_bytes{host,pool}, poolwatch_pool_limit_bytes{host,pool,source} (only where the
 *   pool's limit is known: an unknown limit is absent, not 0),
 *   poolwatch_pool_exhaustion_seconds{host,pool} (only where the analysis gives an ETA),
 *   poolwatch_host_connected{host}, poolwatch_host_stopped{host} (its agent said goodbye),
 *   poolwatch_host_suspects{host}, poolwatch_pool_empty_event_timestamp_seconds{host,pool} (the
 *   newest srv 2019 / 2020 "the pool was empty", where the host logged one), and for the host's
 *   `tags_per_host` (tag, pool) rows with the most bytes poolwatch_tag_bytes{host,pool,tag}
 *   and poolwatch_tag_allocations{host,pool,tag} (on a Linux host also
 *   poolwatch_tag_held_bytes{host,pool,tag}: the slab cache's slabs).
 * Each sample is stamped with the time of the host's sample it comes from (not the send
 * time); a host without a new sample is not sent again, except poolwatch_host_connected and
 * poolwatch_host_stopped when its agent connected or left since (stamped with the collector's
 * clock then).
 *
 * The export policy (pw_remote_write_policy_t) picks the (tag, pool) rows beyond the top
 * `tags_per_host`: the rows whose bytes changed since the host's previous interval (movers)
 * and the rows matching `pinned_tags`. A mover stays exported until it has not moved for
 * `hold_ms` of sample time (hysteresis: its series does not appear and vanish with each
 * change; Prometheus marks a series stale after 5 minutes without a sample), and at most
 * `max_tags_per_host` rows are exported per host (top first, then pinned, then movers already
 * exported, then new movers by the size of their change; a new mover that finds no room is
 * counted in rows_capped and tried again at the next interval). Per current leak suspect of
 * the host, poolwatch_leak_growth_bytes_per_hour and poolwatch_leak_score{host,tag,pool} (the
 * names, labels and values of /metrics), and with `owner_url` poolwatch_host_owner{collector,
 * host} = 1 (which collector holds the host: the global fleet view links to it).
 * Cardinality per host: 5 + one limit series per pool whose limit is known (+ up to 2 ETAs,
 * + up to 2 pool-empty times)
 * + 2 x the rows exported (3 x on a Linux host) + 2 per suspect (+ 1 owner).
 *
 * Encoding (the spec): WriteRequest of proto/prom_remote.proto (prompb's field numbers), labels
 * sorted by name with __name__ first, one sample per series, packed with protobuf-c and
 * compressed with snappy's block format; at most `max_series_per_request` series per request.
 * POST with Content-Encoding: snappy, Content-Type: application/x-protobuf,
 * X-Prometheus-Remote-Write-Version: 0.1.0, User-Agent: poolwatch-collector/<version>, the
 * optional Authorization: Bearer <token> and the configured extra headers (httpc.h: http or
 * https). A 2xx answer is success; 5xx and 429 (and connection failures, timeouts) are retried
 * with exponential backoff; any other status drops the request, counted as failed samples.
 * Requests wait in a bounded memory queue, sent in order, one at a time. Without a
 * `queue_dir` the oldest request is dropped (counted) when it is full; with one, requests past
 * max_queue wait on disk (rwqueue.h) and come back in order, so a receiver's outage loses
 * nothing until the directory reaches queue_max_bytes (then its oldest files are dropped,
 * counted in dropped_samples); at shutdown the memory queue is written there too and sent
 * after the next start.
 * Logging: the first failure of a run of failures is a WARN naming the URL and the reason
 * (status or error), repeated with back-off while it keeps failing; one INFO when a request
 * is accepted again; a rate-limited WARN when the full queue drops requests and when hosts
 * are skipped for samples stamped in the future (max_clock_skew_ms).
 */
#ifndef PW_REMOTE_WRITE_H
#define PW_REMOTE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "analysis_run.h"
#include "error.h"
#include "fleet.h"

/* Per host, without the exhaustion ETAs, when both pool limits are known (2 fewer when
 * neither is: an unknown limit has no series). */
#define PW_REMOTE_WRITE_HOST_SERIES 8

/* Which series go out beyond the host series (see the top). */
typedef struct pw_remote_write_policy_s {
    size_t tags_per_host;     /* rows with the most bytes, always (x2 series); 0 = none */
    int movers;               /* 1: rows whose bytes changed since the previous interval */
    uint64_t hold_ms;         /* a mover stays exported this long after its last change; 0 =
                                 15 minutes */
    size_t max_tags_per_host; /* hard cap on the rows exported per host; 0 = 100 (never below
                                 tags_per_host) */
    const char *pinned_tags;  /* tag patterns (tagpat.h), comma-separated; NULL/"" = none */
    int leak_series;          /* 1: poolwatch_leak_growth_bytes_per_hour, poolwatch_leak_score */
    const char *owner_url;    /* this collector's URL for poolwatch_host_owner; NULL/"" = none */
} pw_remote_write_policy_t;

typedef struct pw_remote_write_opts_s {
    const char *url;      /* http[s]://host[:port]/path; NULL or "" = off */
    uint64_t interval_ms; /* 0 = 15000 */
    size_t tags_per_host; /* rows per host (x2 series); 0 = host-level series only */
    /* the policy beyond tags_per_host (its tags_per_host field is ignored: the one above) */
    pw_remote_write_policy_t policy;
    const char *queue_dir;            /* disk queue directory (rwqueue.h); NULL/"" = memory only */
    uint64_t queue_max_bytes;         /* its budget; 0 = 1 GiB */
    const char *bearer_token_file;    /* NULL or "" = no Authorization header */
    const char *ca_file;              /* https; NULL/"" = the system bundle */
    const char *cert_file, *key_file; /* https client certificate; optional */
    const char *const *headers;       /* "Name: value" items, n_headers of them */
    size_t n_headers;
    uint64_t timeout_ms;           /* one request; 0 = 10000 */
    size_t max_queue;              /* requests waiting; 0 = 256 */
    size_t max_series_per_request; /* 0 = 2000 */
    uint64_t backoff_initial_ms;   /* 0 = 1000, doubled per retry */
    uint64_t backoff_max_ms;       /* 0 = 30000 */
    /* A host whose newest sample is older than this when the interval comes is not sent: a
     * receiver refuses samples that old (Prometheus: "out of bounds" before its head block),
     * and the 400 would drop the fresh samples of the same request with them. Happens to
     * hosts read back from the store after a restart and to agents long gone. 0 = 10 minutes;
     * UINT64_MAX = no limit. */
    uint64_t max_sample_age_ms;
    /* A host whose newest sample is stamped more than this ahead of the collector's wall clock
     * is not sent (an agent with a wrong clock, an import started in the future): Prometheus
     * accepts such a sample, moves its head block there and from then on refuses every older
     * sample, of every host, as "out of bounds" until its storage is wiped. The host's cursor
     * is not advanced, so its samples go out again once its clock is right. 0 = 5 minutes;
     * UINT64_MAX = no limit. */
    uint64_t max_clock_skew_ms;
    /* Where the interval timer reads the fleet (the collector); NULL = no timer (tests call
     * pw_remote_write_collect). */
    void (*source)(void *arg, const pw_fleet_t **fleet, const pw_analysis_run_t **an);
    void *source_arg;
} pw_remote_write_opts_t;

typedef struct pw_remote_write_stats_s {
    uint64_t samples;         /* samples in requests answered 2xx */
    uint64_t failed_samples;  /* samples in requests refused (4xx other than 429, 3xx) */
    uint64_t dropped_samples; /* samples in requests dropped because the queue was full */
    uint64_t retries;         /* attempts after the first */
    uint64_t requests;        /* requests answered 2xx */
    uint64_t bytes;           /* compressed body bytes answered 2xx */
    size_t queued;            /* requests waiting or in flight */
    int last_status;          /* HTTP status of the last response, 0 = none yet */
    int last_error;           /* negative code of the last failed attempt without a status */
    uint64_t ahead_skips;     /* hosts not sent at an interval because their newest sample was
                                 stamped more than max_clock_skew_ms ahead of the collector's
                                 clock; once per host and interval */
    size_t hosts_ahead;       /* such hosts at the last interval */
    size_t disk_queued;       /* requests waiting in queue_dir */
    uint64_t disk_bytes;      /* their bytes on disk */
    uint64_t rows_capped;     /* new movers left out for max_tags_per_host, per interval */
    uint64_t rows_exported;   /* (tag, pool) rows at the last interval, all hosts */
} pw_remote_write_stats_t;

typedef struct pw_remote_write_s pw_remote_write_t;

/* Checks the options without sending (--check-config and pw_remote_write_new): the URL,
 * the bearer token file (readable, one non-empty token), each header ("Name: value", a token
 * name, no control bytes, not one the client sets itself), and for https the CA, certificate
 * and key files. Returns 0, PW_ECONFIG / PW_ETLS with d->field the option ("url",
 * "bearer_token_file", "headers", "ca_file") and d->msg "remote_write.<option>: ...", or
 * PW_EINVAL. */
int pw_remote_write_check(const pw_remote_write_opts_t *o, pw_diag_t *d);

/* Creates the writer on `loop` (borrowed) and, with opts->source, starts its interval timer
 * (each interval's encode runs in slices of at most 5 ms of the loop: a fleet's encode would
 * otherwise hold every ack and API request behind it; an interval whose encode is still under
 * way when the next comes goes on instead of starting over).
 * Strings are copied; the token file is read now. Returns 0, an error of
 * pw_remote_write_check, PW_EINVAL or PW_ENOMEM. */
int pw_remote_write_new(uv_loop_t *loop, const pw_remote_write_opts_t *opts,
                        pw_remote_write_t **out, pw_diag_t *d);

/* Reads the bearer token file again (SIGHUP). On an error the token in use stays. Returns 0
 * (also without a token file), PW_ECONFIG with d naming the file. */
int pw_remote_write_reload_token(pw_remote_write_t *w, pw_diag_t *d);

/* Encodes the new series of `f` (see the top) into requests and queues them. Returns the
 * number of series queued, or PW_ENOMEM. */
int64_t pw_remote_write_collect(pw_remote_write_t *w, const pw_fleet_t *f,
                                const pw_analysis_run_t *an);

void pw_remote_write_get_stats(const pw_remote_write_t *w, pw_remote_write_stats_t *out);

/* Stops: drops the queue, abandons a request in flight, frees once libuv has closed the
 * handles. Accepts NULL. */
void pw_remote_write_close(pw_remote_write_t *w);

/* ---- encoding (no I/O; the writer and the tests use it) ---------------------------------- */

/* What the policy remembers of one host between intervals (remote_write.c). */
typedef struct pw_remote_write_hoststate_s pw_remote_write_hoststate_t;

/* Time of the last sample sent, per host (indexed by pw_host_t.index), the oldest sample
 * time worth sending (ms since the epoch; 0 = any): older hosts are skipped as if sent, and
 * the newest (ms since the epoch; 0 = any): newer hosts are skipped and counted in `ahead`,
 * their entry left as it was. */
typedef struct pw_remote_write_cursor_s {
    uint64_t *sent_ms;
    size_t n;
    uint64_t min_ts_ms;
    uint64_t max_ts_ms;
    size_t ahead; /* out: hosts the last pw_remote_write_encode skipped for max_ts_ms */
    pw_remote_write_hoststate_t *hs; /* per host (by index), n of them; the policy's */
    uint64_t rows_capped;            /* out: summed over encodes */
    uint64_t rows_exported;          /* out: rows of the last encode */
    uint64_t now_ms; /* the collector's clock (ms since the epoch; 0 = never): a host without a
                        new sample whose agent connected or left since its last send gets
                        poolwatch_host_connected and poolwatch_host_stopped alone (each when
                        it changed), stamped now_ms */
    size_t pos;      /* the fleet index a sliced encode goes on from (0: none under way) */
    /* The analysis' suspects sorted by host, kept across slices while the published list stays
     * (pw_analysis_run_suspects_gen): sorting 30,000 suspects took ~8 ms, more than a 5-ms slice.
     */
    const pw_suspect_t **sp_sorted;
    size_t sp_n;
    const pw_suspect_t *sp_base;
    const void *sp_an;
    uint64_t sp_gen;
} pw_remote_write_cursor_t;

void pw_remote_write_cursor_free(pw_remote_write_cursor_t *cur);

/* Receives one request body (snappy-compressed WriteRequest, pw_malloc'ed: the callee owns it
 * and frees it with pw_free, also on failure) holding `series` series. Returns 0 or a negative
 * code, which stops the encoding. */
typedef int (*pw_remote_write_emit_fn)(void *arg, uint8_t *body, size_t len, size_t series);

/* Encodes the series of every host of `f` whose last_seen_ms is newer than cur's entry (and
 * not 0, not older than cur->min_ts_ms, not newer than cur->max_ts_ms), at most max_series
 * (0 = 2000) per body, hosts in fleet order, and advances cur (not for hosts skipped as newer
 * than cur->max_ts_ms: cur->ahead counts those). `sp`: the current suspects (for
 * poolwatch_host_suspects). Returns the number of series emitted, PW_ENOMEM, or the emitter's
 * error. */
int64_t pw_remote_write_encode(const pw_fleet_t *f, const pw_analysis_run_t *an,
                               size_t tags_per_host, size_t max_series,
                               pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                               void *arg);

/* The same with the whole export policy `pol` (see the top): movers (against what cur
 * remembers of the host from the previous encode; a host's first encode has no movers),
 * pinned rows, the cap, leak and owner series. Series of a host in this order: host series,
 * owner, rows (top by bytes, pinned, movers; bytes then allocations for each), leak series.
 * Returns as pw_remote_write_encode; PW_ENOMEM also when the pinned list cannot be split. */
int64_t pw_remote_write_encode_policy(const pw_fleet_t *f, const pw_analysis_run_t *an,
                                      const pw_remote_write_policy_t *pol, size_t max_series,
                                      pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                                      void *arg);

/* pw_remote_write_encode_policy a slice at a time, so that a fleet's encode does not hold the
 * caller's loop (10,000 hosts of 2,000 rows take ~2 s): goes on from cur->pos (0 starts an
 * encode: cur->ahead and cur->rows_exported are reset) for about budget_ns of wall time
 * (checked every 16 hosts; 0 = no limit), emits what it encoded (bodies end at each slice)
 * and sets *done to 1 when the fleet's end was reached (cur->pos back to 0), else 0. Between
 * slices hosts may join the fleet (they are reached in order) and the suspects may change (read
 * again at each slice). Returns the series emitted by this slice, or as
 * pw_remote_write_encode_policy. */
int64_t pw_remote_write_encode_slice(const pw_fleet_t *f, const pw_analysis_run_t *an,
                                     const pw_remote_write_policy_t *pol, size_t max_series,
                                     pw_remote_write_cursor_t *cur, pw_remote_write_emit_fn emit,
                                     void *arg, uint64_t budget_ns, int *done);

#endif /* PW_REMOTE_WRITE_H */
