/* metrics_prom.c: GET /metrics in the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Series and cardinality: per host up to 10 series (pool used/limit for nonpaged and paged,
 * samples, connected, stopped, last seen, suspects, and the table size; a pool's limit series only
 * when its limit is known: absent = unknown, as Prometheus expects; its `source` label is the
 * API's limit source, part of the series' identity: rules divide with ignoring(source)), plus, per
 * host, the PW_API_METRICS_TOP_N (20) (tag, pool) rows with the most bytes as two gauges
 * (poolwatch_tag_bytes, poolwatch_tag_allocations; a third, poolwatch_tag_held_bytes, on Linux
 * hosts: the slab cache's slabs): at most 10 + 60 series per host, so a 10,000-host fleet
 * exposes about 500,000 to 700,000 series. The full table stays in the API
 * (/api/v1/hosts/{host}/pool); scrape the API, not /metrics, for every tag.
 * The selection and values are series.c's, shared with remote write (remote_write.h).
 * Per leak suspect (a few per host at most) poolwatch_leak_growth_bytes_per_hour and
 * poolwatch_leak_score{host,tag,pool}.
 * Collector self-metrics: hosts, HTTP requests by status class, 401/403 counts, handler time,
 * HTTP connections, store counters (pw_store_stats), and with [remote_write] url set
 * poolwatch_remote_write_{samples,failed_samples,dropped_samples,retries,sent_bytes}_total,
 * _queue_requests, _last_status, _hosts_ahead_skipped_total, _hosts_ahead, the disk queue
 * (_disk_queue_requests, _disk_queue_bytes) and the export policy (_rows, _rows_capped_total). */
#include "api.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "remote_write.h"
#include "series.h"

static int out(pw_buf_t *b, const char *fmt, ...) __attribute__((format(PW_PRINTF_FORMAT, 2, 3)));

static int out(pw_buf_t *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return PW_EINVAL;
    return pw_buf_append(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A label value escaped as the format says: backslash, double quote and line feed. Other
 * bytes pass (label values are UTF-8; tags are printable ASCII after pw_tag_format). */
static const char *esc(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    for (; *s && o + 3 < size; s++) {
        if (*s == '\\' || *s == '"') {
            buf[o++] = '\\';
            buf[o++] = *s;
        } else if (*s == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else {
            buf[o++] = *s;
        }
    }
    buf[o] = '\0';
    return buf;
}

static int help(pw_buf_t *b, const char *name, const char *type, const char *text)
{
    return out(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void count_firing(const pw_alert_transition_t *cur, void *arg)
{
    size_t *n = arg;
    if (cur->to == PW_ALERT_FIRING)
        n[strcmp(cur->key.severity, "critical") == 0]++;
}

int pw_api_metrics(pw_api_t *api, pw_buf_t *b)
{
    const pw_fleet_t *f = pw_ingest_fleet(api->ing);
    char hn[600], tn[PW_TAG_MAX * 4 + 1], te[2 * sizeof(tn)];
    int r = 0;
    static const struct {
        const char *name, *type, *help;
    } hm[] = {
        {"poolwatch_pool_bytes", "gauge", "Pool bytes in use (host totals)."},
        {"poolwatch_pool_limit_bytes", "gauge",
         "Pool limit in bytes (present only when the limit is known); source: where it comes "
         "from (reported, computed, registry, configured; unknown for a limit only the samples "
         "carry)."},
        {"poolwatch_host_samples_total", "counter",
         "Samples received from the host's agent since the collector started; an imported host's: "
         "the screens its imports stored."},
        {"poolwatch_host_connected", "gauge", "1 when the host's agent is connected."},
        {"poolwatch_host_stopped", "gauge",
         "1 when the host's agent said goodbye (a clean stop) and has not connected since."},
        {"poolwatch_host_last_seen_seconds", "gauge", "Time of the newest sample, Unix seconds."},
        {"poolwatch_host_suspects", "gauge", "Leak suspects of the host."},
        {"poolwatch_host_table_rows", "gauge", "Rows (tag, pool type) in the host's table."},
        {"poolwatch_host_loading_history", "gauge",
         "1 while the host's history streams in (a backfill, a spool resent after an outage): its "
         "level, ETA and suspects are of its newest sample so far, not of now."},
    };
    int64_t now_ms = (int64_t)pw_clock_wall_ms(); /* the analysis' clock (loading history) */
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    for (size_t m = 0; m < sizeof(hm) / sizeof(hm[0]) && r == 0; m++) {
        r = help(b, hm[m].name, hm[m].type, hm[m].help);
        for (size_t i = 0; i < f->n && r == 0; i++) {
            const pw_host_t *h = f->hosts[i];
            if (pw_host_retired(h))
                continue;
            uint64_t used[2], lim[2];
            const char *src[2];
            pw_series_pools(h, used, lim);
            pw_series_limit_sources(h, src);
            esc(h->name, hn, sizeof(hn));
            switch (m) {
            case 0:
                for (int p = 0; p < 2 && r == 0; p++)
                    r = out(b, "%s{host=\"%s\",pool=\"%s\"} %" PRIu64 "\n", hm[m].name, hn,
                            pw_series_pool_names[p], used[p]);
                break;
            case 1:
                /* A limit of 0 is unknown: no series (absent = unknown), not a 0. Its source
                 * is a label, as the API's *_limit_source names it: part of the series'
                 * identity, so a host whose limit comes from elsewhere starts a new series. */
                for (int p = 0; p < 2 && r == 0; p++)
                    if (lim[p] != 0)
                        r = out(b, "%s{host=\"%s\",pool=\"%s\",source=\"%s\"} %" PRIu64 "\n",
                                hm[m].name, hn, pw_series_pool_names[p], src[p], lim[p]);
                break;
            case 2:
                r = out(b, "%s{host=\"%s\"} %" PRIu64 "\n", hm[m].name, hn, h->samples);
                break;
            case 3:
                r = out(b, "%s{host=\"%s\"} %d\n", hm[m].name, hn, pw_host_connected(h));
                break;
            case 4:
                r = out(b, "%s{host=\"%s\"} %d\n", hm[m].name, hn, pw_series_stopped(h));
                break;
            case 5:
                r = out(b, "%s{host=\"%s\"} %" PRIu64 ".%03u\n", hm[m].name, hn,
                        h->last_seen_ms / 1000, (unsigned)(h->last_seen_ms % 1000));
                break;
            case 6:
                r = out(b, "%s{host=\"%s\"} %zu\n", hm[m].name, hn,
                        pw_series_suspects(sp, ns, h->name));
                break;
            case 7:
                r = out(b, "%s{host=\"%s\"} %zu\n", hm[m].name, hn, pw_host_nrows(h));
                break;
            default:
                r = out(b, "%s{host=\"%s\"} %d\n", hm[m].name, hn,
                        pw_analysis_loading(api->an, h, now_ms));
            }
        }
    }
    /* The agent's own footprint, where its agent reports it (series.h): what AgentFootprint
     * judges, for a Prometheus rule of the same name (deploy/prometheus). */
    static const char *const agent_help[3] = {
        "Resident set (Windows: working set) of the host's poolwatch agent itself, bytes "
        "(present when its agent reports it).",
        "CPU time (user + kernel) of the host's poolwatch agent since it started, seconds.",
        "Open handles of the host's poolwatch agent (Windows agents only)."};
    static const char *const agent_type[3] = {"gauge", "counter", "gauge"};
    for (int k = 0; k < 3 && r == 0; k++) {
        r = help(b, pw_series_agent_names[k], agent_type[k], agent_help[k]);
        for (size_t i = 0; i < f->n && r == 0; i++) {
            const pw_host_t *h = f->hosts[i];
            double av[3];
            int have[3];
            if (pw_host_retired(h) || pw_series_agent(h, av, have) == 0 || !have[k])
                continue;
            r = out(b, "%s{host=\"%s\"} %.10g\n", pw_series_agent_names[k],
                    esc(h->name, hn, sizeof(hn)), av[k]);
        }
    }
    /* Time to exhaustion where the analysis gives one (no series otherwise, as Prometheus
     * expects for "unknown"): what to alert on from Prometheus itself. */
    if (r == 0)
        r = help(b, "poolwatch_pool_exhaustion_seconds", "gauge",
                 "Seconds from the newest sample until the pool reaches its limit at the current "
                 "trend (present only when the analysis gives an ETA).");
    for (size_t i = 0; i < f->n && r == 0; i++) {
        const pw_host_t *h = f->hosts[i];
        const pw_analysis_host_t *ah = pw_analysis_run_host(api->an, h);
        if (ah == NULL || !ah->have_pressure || pw_host_retired(h))
            continue;
        esc(h->name, hn, sizeof(hn));
        const pw_pressure_t *pr[2] = {&ah->np, &ah->pg};
        for (int p = 0; p < 2 && r == 0; p++) {
            /* the host pool's one ETA, as the API gives it: its trend, or with too few points
             * for one its suspects' growth; 0 once it ran out */
            pw_host_eta_t he;
            if (pw_analysis_host_eta(api->an, h, p ? PW_POOL_PAGED : PW_POOL_NONPAGED, pr[p],
                                     &he) != 0 ||
                (!he.ran_out && he.e.basis == PW_ETA_NONE))
                continue;
            int64_t eta = he.ran_out ? 0 : he.e.eta_ms;
            r = out(b, "poolwatch_pool_exhaustion_seconds{host=\"%s\",pool=\"%s\"} %lld.%03d\n", hn,
                    pw_series_pool_names[p], (long long)(eta / 1000), (int)(eta % 1000));
        }
    }
    /* Windows' own word that a pool ran out (srv 2019 / 2020): the newest event's time, so that
     * a rule fires PoolEmpty as the collector does, for an hour after it (present only for a
     * host that logged one). */
    if (r == 0)
        r = help(b, "poolwatch_pool_empty_event_timestamp_seconds", "gauge",
                 "Time of the host's newest 'the pool was empty' event (srv 2019: nonpaged, 2020: "
                 "paged), seconds since the epoch (present only when there is one).");
    for (size_t i = 0; i < f->n && r == 0; i++) {
        const pw_host_t *h = f->hosts[i];
        if (pw_host_retired(h))
            continue;
        for (int p = 0; p < 2 && r == 0; p++) {
            int64_t ms = pw_analysis_run_empty_last(api->an, h, p);
            if (ms <= 0)
                continue;
            esc(h->name, hn, sizeof(hn));
            r = out(b,
                    "poolwatch_pool_empty_event_timestamp_seconds{host=\"%s\",pool=\"%s\"} "
                    "%lld.%03d\n",
                    hn, pw_series_pool_names[p], (long long)(ms / 1000), (int)(ms % 1000));
        }
    }
    /* Leak suspects, one series each (a few per host at most): a Prometheus rule can alert on
     * a tag's growth itself. Remote write sends the same names, labels and values
     * (remote_write.c, [remote_write] leak_series). */
    static const struct {
        const char *name, *help;
        int score; /* 0: growth per hour, 1: score */
    } lm[] = {
        {"poolwatch_leak_growth_bytes_per_hour",
         "Growth of a leak suspect's bytes per hour (trend: Theil-Sen slope over the analysis "
         "window; few screens: first to last screen). Present while suspect.",
         0},
        {"poolwatch_leak_score",
         "Ranking score of a leak suspect (dimensionless, higher = more suspect; GET "
         "/api/v1/leaks gives its parts). Present while suspect.",
         1},
    };
    for (size_t m = 0; m < sizeof(lm) / sizeof(lm[0]) && r == 0; m++) {
        r = help(b, lm[m].name, "gauge", lm[m].help);
        for (size_t i = 0; i < ns && r == 0; i++) {
            if (pw_fleet_find(f, sp[i].host) == NULL) /* retired since the last pass */
                continue;
            pw_row_format(sp[i].tag, sp[i].tag_len, sp[i].pool, tn, sizeof(tn));
            r = out(b, "%s{host=\"%s\",tag=\"%s\",pool=\"%s\"} %.10g\n", lm[m].name,
                    esc(sp[i].host, hn, sizeof(hn)), esc(tn, te, sizeof(te)),
                    pw_pool_name(sp[i].pool),
                    lm[m].score ? sp[i].d.score : sp[i].d.rate_bytes_per_h);
        }
    }
    /* Alerts firing, by severity (the alerts themselves go to Alertmanager / the webhook). */
    if (r == 0)
        r = help(b, "poolwatch_alerts_firing", "gauge", "Alerts firing, by severity.");
    if (r == 0) {
        size_t n[2] = {0, 0};
        const pw_alert_set_t *as = pw_analysis_run_alerts(api->an);
        if (as != NULL)
            pw_alert_foreach(as, count_firing, n);
        r = out(b,
                "poolwatch_alerts_firing{severity=\"warning\"} %zu\n"
                "poolwatch_alerts_firing{severity=\"critical\"} %zu\n",
                n[0], n[1]);
    }
    /* What the analysis costs (docs/internals/detection.md). */
    if (r == 0 && api->an != NULL) {
        pw_analysis_stats_t st;
        pw_analysis_run_stats(api->an, &st);
        r = help(b, "poolwatch_analysis_passes_total", "counter", "Analysis passes published.");
        if (r == 0)
            r = out(b, "poolwatch_analysis_passes_total %" PRIu64 "\n", st.passes);
        if (r == 0)
            r = help(b, "poolwatch_analysis_work_seconds_total", "counter",
                     "Time the thread pool spent judging hosts, all passes.");
        if (r == 0)
            r = out(b, "poolwatch_analysis_work_seconds_total %.6f\n", (double)st.work_ns / 1e9);
        if (r == 0)
            r = help(b, "poolwatch_analysis_last_pass_seconds", "gauge",
                     "The last pass from its start to its publication.");
        if (r == 0)
            r = out(b, "poolwatch_analysis_last_pass_seconds %.6f\n",
                    (double)st.last_pass_ns / 1e9);
    }
    /* Top rows per host: both gauges from one selection. */
    pw_series_row_t top[PW_API_METRICS_TOP_N];
    pw_buf_t second, third;
    pw_buf_init(&second, SIZE_MAX);
    pw_buf_init(&third, SIZE_MAX);
    if (r == 0)
        r = help(b, "poolwatch_tag_bytes", "gauge",
                 "Bytes outstanding of a (host, tag, pool) row; the 20 largest rows per host.");
    if (r == 0)
        r = help(&second, "poolwatch_tag_allocations", "gauge",
                 "Allocations outstanding (diff) of the same rows as poolwatch_tag_bytes.");
    if (r == 0)
        r = help(&third, "poolwatch_tag_held_bytes", "gauge",
                 "Bytes a Linux slab cache holds (num_slabs x pagesperslab x page size) of the "
                 "same rows as poolwatch_tag_bytes; Linux hosts only.");
    size_t n_held = 0;
    for (size_t i = 0; i < f->n && r == 0; i++) {
        const pw_host_t *h = f->hosts[i];
        if (pw_host_retired(h))
            continue;
        esc(h->name, hn, sizeof(hn));
        size_t n = pw_series_top(h, top, PW_API_METRICS_TOP_N);
        int held = n > 0 && pw_host_has_held(h);
        for (size_t j = 0; j < n && r == 0; j++) {
            pw_row_format(top[j].tag, top[j].len, top[j].pool, tn, sizeof(tn));
            esc(tn, te, sizeof(te));
            r = out(b, "poolwatch_tag_bytes{host=\"%s\",tag=\"%s\",pool=\"%s\"} %" PRIu64 "\n", hn,
                    te, pw_pool_name(top[j].pool), top[j].bytes);
            if (r == 0)
                r = out(&second,
                        "poolwatch_tag_allocations{host=\"%s\",tag=\"%s\",pool=\"%s\"} %" PRIu64
                        "\n",
                        hn, te, pw_pool_name(top[j].pool), top[j].diff);
            if (r == 0 && held) {
                n_held++;
                r = out(&third,
                        "poolwatch_tag_held_bytes{host=\"%s\",tag=\"%s\",pool=\"%s\"} %" PRIu64
                        "\n",
                        hn, te, pw_pool_name(top[j].pool), top[j].held_bytes);
            }
        }
    }
    if (r == 0)
        r = pw_buf_append(b, second.data ? second.data : (const uint8_t *)"", second.len);
    if (r == 0 && n_held > 0) /* no Linux host: no HELP for a series that is not there */
        r = pw_buf_append(b, third.data, third.len);
    pw_buf_close(&second);
    pw_buf_close(&third);
    /* Self-metrics. */
    const pw_api_stats_t *st = &api->stats;
    if (r == 0)
        r = help(b, "poolwatch_collector_hosts", "gauge", "Hosts known to the collector.");
    size_t live = 0;
    for (size_t i = 0; i < f->n; i++)
        live += !pw_host_retired(f->hosts[i]);
    if (r == 0)
        r = out(b, "poolwatch_collector_hosts %zu\n", live);
    if (r == 0)
        r = help(b, "poolwatch_collector_agent_connections", "gauge", "Agent sessions open.");
    if (r == 0)
        r = out(b, "poolwatch_collector_agent_connections %zu\n",
                api->agents.connections ? api->agents.connections(api->agents.arg) : 0);
    if (r == 0)
        r = help(b, "poolwatch_http_requests_total", "counter",
                 "HTTP requests answered, by status class.");
    for (int k = 2; k <= 5 && r == 0; k++)
        r = out(b, "poolwatch_http_requests_total{code=\"%dxx\"} %" PRIu64 "\n", k,
                st->by_class[k]);
    if (r == 0)
        r = help(b, "poolwatch_http_auth_failures_total", "counter",
                 "Requests refused: 401 (no or unknown token), 403 (role too low).");
    if (r == 0)
        r = out(b,
                "poolwatch_http_auth_failures_total{code=\"401\"} %" PRIu64 "\n"
                "poolwatch_http_auth_failures_total{code=\"403\"} %" PRIu64 "\n",
                st->unauthorized, st->forbidden);
    if (r == 0)
        r = help(b, "poolwatch_http_handler_seconds_total", "counter",
                 "Time spent in API handlers.");
    if (r == 0)
        r = out(b, "poolwatch_http_handler_seconds_total %" PRIu64 ".%06u\n",
                st->handler_us_total / 1000000, (unsigned)(st->handler_us_total % 1000000));
    if (r == 0)
        r = help(b, "poolwatch_http_connections", "gauge", "HTTP connections open.");
    if (r == 0)
        r = out(b, "poolwatch_http_connections %" PRIu64 "\n", st->open_connections);
    if (r == 0)
        r = help(b, "poolwatch_http_connections_refused_total", "counter",
                 "HTTP connections refused at the connection cap.");
    if (r == 0)
        r = out(b, "poolwatch_http_connections_refused_total %" PRIu64 "\n", st->refused);
    /* Time left on the certificates the collector serves with (renewed files are used after a
     * SIGHUP; the collector also logs a warning from PW_TLS_EXPIRY_WARN_S before). */
    if (r == 0 && api->cert_not_after_s != 0) {
        uv_timeval64_t tv;
        uv_gettimeofday(&tv);
        r = help(b, "poolwatch_cert_expiry_seconds", "gauge",
                 "Seconds until a certificate in use expires (negative: expired): the "
                 "collector's own (server) and the earliest of its CA file (ca).");
        if (r == 0)
            r = out(b,
                    "poolwatch_cert_expiry_seconds{cert=\"server\"} %" PRId64 "\n"
                    "poolwatch_cert_expiry_seconds{cert=\"ca\"} %" PRId64 "\n",
                    api->cert_not_after_s - (int64_t)tv.tv_sec,
                    api->ca_not_after_s - (int64_t)tv.tv_sec);
    }
    pw_store_stats_t ss;
    if (r == 0 && pw_store_stats(pw_ingest_store(api->ing), &ss, NULL) == 0) {
        const struct {
            const char *name, *type, *help;
            uint64_t v;
        } sm[] = {
            {"poolwatch_store_bytes", "gauge", "Database file + WAL size.", ss.bytes_on_disk},
            {"poolwatch_store_samples", "gauge", "Samples stored in chunks.", ss.samples},
            {"poolwatch_store_chunks", "gauge", "Chunks stored.", ss.chunks},
            {"poolwatch_store_commits_total", "counter", "Commits.", ss.commits},
            {"poolwatch_store_failed_commits_total", "counter", "Failed commits.",
             ss.failed_commits},
            {"poolwatch_store_puts_total", "counter", "Samples put.", ss.puts},
            {"poolwatch_store_free_bytes", "gauge", "Free pages inside the database file.",
             ss.free_bytes},
            {"poolwatch_store_evicted_total", "counter",
             "Chunks and rollup pages dropped because the store reached [store] max_size.",
             ss.evicted},
        };
        for (size_t i = 0; i < sizeof(sm) / sizeof(sm[0]) && r == 0; i++) {
            r = help(b, sm[i].name, sm[i].type, sm[i].help);
            if (r == 0)
                r = out(b, "%s %" PRIu64 "\n", sm[i].name, sm[i].v);
        }
        /* What du sees, per file. */
        if (r == 0)
            r = help(b, "poolwatch_store_file_bytes", "gauge",
                     "Store files on disk: the database (db) and its WAL (wal).");
        if (r == 0)
            r = out(b,
                    "poolwatch_store_file_bytes{file=\"db\"} %" PRIu64 "\n"
                    "poolwatch_store_file_bytes{file=\"wal\"} %" PRIu64 "\n",
                    ss.db_bytes, ss.wal_bytes);
    }
    /* Remote write (remote_write.h), when configured. */
    if (r == 0 && api->rw != NULL) {
        pw_remote_write_stats_t rs;
        pw_remote_write_get_stats(api->rw, &rs);
        const struct {
            const char *name, *type, *help;
            uint64_t v;
        } rm[] = {
            {"poolwatch_remote_write_samples_total", "counter",
             "Samples sent by remote write and accepted (2xx).", rs.samples},
            {"poolwatch_remote_write_failed_samples_total", "counter",
             "Samples in requests the receiver refused (4xx other than 429): dropped.",
             rs.failed_samples},
            {"poolwatch_remote_write_dropped_samples_total", "counter",
             "Samples dropped because the remote write queue was full.", rs.dropped_samples},
            {"poolwatch_remote_write_retries_total", "counter",
             "Remote write attempts after the first (5xx, 429, network errors).", rs.retries},
            {"poolwatch_remote_write_sent_bytes_total", "counter",
             "Compressed request bytes accepted (2xx).", rs.bytes},
            {"poolwatch_remote_write_queue_requests", "gauge",
             "Remote write requests waiting or in flight.", rs.queued},
            {"poolwatch_remote_write_last_status", "gauge",
             "HTTP status of the last remote write response (0 = none yet).",
             (uint64_t)rs.last_status},
            {"poolwatch_remote_write_hosts_ahead_skipped_total", "counter",
             "Hosts not sent at an interval because their newest sample was stamped more than "
             "the allowed skew ahead of the collector's clock (once per host and interval).",
             rs.ahead_skips},
            {"poolwatch_remote_write_hosts_ahead", "gauge",
             "Hosts not sent at the last interval for a sample time in the future.",
             (uint64_t)rs.hosts_ahead},
            {"poolwatch_remote_write_disk_queue_requests", "gauge",
             "Remote write requests waiting in [remote_write] queue_dir.",
             (uint64_t)rs.disk_queued},
            {"poolwatch_remote_write_disk_queue_bytes", "gauge",
             "Bytes of the requests waiting in [remote_write] queue_dir.", rs.disk_bytes},
            {"poolwatch_remote_write_rows_capped_total", "counter",
             "Changed (tag, pool) rows not sent for [remote_write] max_tags_per_host (per "
             "interval).",
             rs.rows_capped},
            {"poolwatch_remote_write_rows", "gauge",
             "(tag, pool) rows sent at the last interval, all hosts.", rs.rows_exported},
        };
        for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]) && r == 0; i++) {
            r = help(b, rm[i].name, rm[i].type, rm[i].help);
            if (r == 0)
                r = out(b, "%s %" PRIu64 "\n", rm[i].name, rm[i].v);
        }
    }
    return r;
}
