/* series.h: what the collector exports as Prometheus series, shared by /metrics
 * (metrics_prom.c, the text exposition) and remote write (remote_write.c, protobuf), so that
 * both carry the same values under the same names and labels:
 *   per host   poolwatch_pool_bytes{host,pool}, poolwatch_pool_limit_bytes{host,pool,source}
 *              (where the pool's limit is known: absent = unknown, never 0; source is where it
 *              comes from, pw_series_limit_source_name: part of the series' identity, so
 *              divide with `ignoring(source)`),
 *              poolwatch_pool_exhaustion_seconds{host,pool} (where the analysis gives an ETA),
 *              poolwatch_host_connected{host}, poolwatch_host_stopped{host} (1 when its agent
 *              said Goodbye, a clean stop, and has not connected since: pw_series_stopped),
 *              poolwatch_host_loading_history{host} (1 while its history streams in:
 *              pw_analysis_loading, the API's loading_history), poolwatch_host_suspects{host};
 *              poolwatch_pool_empty_event_timestamp_seconds{host,pool} (the newest srv 2019 /
 *              2020 "the pool was empty" the analysis holds: pw_analysis_run_empty_last; only
 *              where there is one: the rules' PoolEmpty);
 *   per host whose agent reports its own footprint (pw_series_agent)
 *              poolwatch_agent_resident_bytes{host}, poolwatch_agent_cpu_seconds_total{host},
 *              poolwatch_agent_handles{host} (Windows agents: handles);
 *   per row    poolwatch_tag_bytes{host,tag,pool}, poolwatch_tag_allocations{host,tag,pool}
 *              for the host's (tag, pool) rows with the most bytes (pw_series_top); on a Linux
 *              host also poolwatch_tag_held_bytes{host,tag,pool} (the cache's slabs:
 *              num_slabs x pagesperslab x page size; fleet.h pw_host_has_held).
 * Pool label values are "nonpaged" and "paged"; tag values are pw_tag_format's printable form.
 */
#ifndef PW_SERIES_H
#define PW_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis_run.h"
#include "fleet.h"

/* One selected row: the tag bytes are borrowed from the host's table (valid until its next
 * sample). */
typedef struct pw_series_row_s {
    const uint8_t *tag;
    size_t len;
    int pool; /* pw_pool_t */
    uint64_t bytes, diff;
    uint64_t held_bytes; /* a Linux slab cache's slabs (sample.h), 0 elsewhere */
} pw_series_row_t;

/* The host's `cap` rows with the most bytes into top[0..cap), largest first, ties in table
 * order (the current table when a stream runs, else the last stored snapshot). Returns the
 * number written (min(rows, cap)); 0 when cap is 0. Allocates only when cap > 64 and the table
 * has more rows than cap (a sort instead of the insertion used for small caps); on ENOMEM it
 * falls back to the insertion. */
size_t pw_series_top(const pw_host_t *h, pw_series_row_t *top, size_t cap);

/* The host's pool totals and limits: used[0]/limit[0] nonpaged, used[1]/limit[1] paged, bytes
 * (0 = unknown). A limit from the Hello wins over one in the sample totals. */
void pw_series_pools(const pw_host_t *h, uint64_t used[2], uint64_t limit[2]);

/* Pool label values in the order of pw_series_pools: "nonpaged", "paged". */
extern const char *const pw_series_pool_names[2];

/* The `source` label of poolwatch_pool_limit_bytes and the API's *_limit_source: a
 * pw_limit_source_t (common/sample.h) as "reported", "computed", "registry", "configured", or
 * "unknown" (any other value: a limit only the sample totals carry). Static string. */
const char *pw_series_limit_source_name(int source);

/* The sources of the host's limits, in the order of pw_series_pools (static strings). */
void pw_series_limit_sources(const pw_host_t *h, const char *source[2]);

/* poolwatch_host_stopped: 1 when the host's agent said Goodbye (a clean stop: signal, service
 * stop, a replay's end) and no session is attached since, else 0 (streaming, or gone without a
 * word: the rules' HostSilent fires for a host that was connected and is neither connected nor
 * stopped). */
int pw_series_stopped(const pw_host_t *h);
/* The host's agent footprint series (the agent's own resident set in bytes, CPU seconds since
 * it started, open handles: the totals of its newest sample), in the order of
 * pw_series_agent_names, into v[]; have[k] is 1 where series k is present: none when the agent
 * does not report its footprint (an older agent, an import, a replay's past), no handles where
 * it has none (Linux). Returns how many are present. */
size_t pw_series_agent(const pw_host_t *h, double v[3], int have[3]);

/* "poolwatch_agent_resident_bytes", "poolwatch_agent_cpu_seconds_total",
 * "poolwatch_agent_handles". */
extern const char *const pw_series_agent_names[3];

/* How many of the suspects sp[0..ns) are on `host` (poolwatch_host_suspects). */
size_t pw_series_suspects(const pw_suspect_t *sp, size_t ns, const char *host);

#endif /* PW_SERIES_H */
