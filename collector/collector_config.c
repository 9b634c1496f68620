/* collector_config.c: the collector's options, one row each;
 * deploy/config/collector.conf.example is generated from them (`--print-example`). */
#include "collector.h"
#include "config.h"

#define T pw_collector_cfg_t

/* Platform defaults: on Windows the collector's data lives under %ProgramData%\poolwatch, as
 * the agent's does (service_win.h). */
#ifdef _WIN32
#define PW_COLLECTOR_DEFAULT_DB "C:\\ProgramData\\poolwatch\\poolwatch.db"
#else
#define PW_COLLECTOR_DEFAULT_DB "/var/lib/poolwatch-collector/poolwatch.db"
#endif

const pw_config_opt_t pw_collector_options[] = {
    PW_CONFIG_OPT_STRING("agents", "listen", "0.0.0.0:7070", T, listen, 0,
                         "address:port for agent connections (mutual TLS)"),
    PW_CONFIG_OPT_STRING("agents", "ca_file", NULL, T, ca_file, PW_CONFIG_REQUIRED | PW_CONFIG_PATH,
                         "CA that signs agent and CLI client certificates"),
    PW_CONFIG_OPT_STRING("agents", "cert_file", NULL, T, cert_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH, "the collector's certificate"),
    PW_CONFIG_OPT_STRING("agents", "key_file", NULL, T, key_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH, "private key of cert_file"),
    PW_CONFIG_OPT_STRING("agents", "crl_file", "", T, crl_file, PW_CONFIG_PATH,
                         "the CA's revocation list (PEM, deploy/pki.sh --revoke): listed agent "
                         "certificates are refused; with it set, a missing or expired CRL refuses "
                         "every agent; empty = none. Certificate, key, CA and CRL files are "
                         "read again on SIGHUP"),
    PW_CONFIG_OPT_DURATION("agents", "handshake_timeout", "10s", 100, 600000, T,
                           handshake_timeout_ms, "TLS handshake plus a verified Hello"),
    PW_CONFIG_OPT_DURATION("agents", "idle_timeout", "5m", 1000, 86400000, T, idle_timeout_ms,
                           "a session that sends nothing for this long is closed"),
    PW_CONFIG_OPT_INT("agents", "max_connections", "20000", 1, 1000000, T, max_connections,
                      "agent sessions at once"),
    PW_CONFIG_OPT_INT("agents", "max_connections_per_ip", "64", 1, 1000000, T,
                      max_connections_per_ip,
                      "agent connections from one address without a verified Hello yet"),
    PW_CONFIG_OPT_SIZE("agents", "max_frame", "4MiB", 1024, 64 << 20, T, max_frame_bytes,
                       "largest frame after the Hello is verified"),
    PW_CONFIG_OPT_SIZE("agents", "hello_max_frame", "64KiB", 256, 4 << 20, T, hello_max_frame_bytes,
                       "largest frame before the Hello is verified"),
    PW_CONFIG_OPT_STRING("store", "path", PW_COLLECTOR_DEFAULT_DB, T, db_path, PW_CONFIG_PATH,
                         "SQLite database (history)"),
    PW_CONFIG_OPT_DURATION("store", "commit_interval", "600ms", 10, 10000, T, commit_interval_ms,
                           "the longest a stored sample waits for its group commit (one fsync "
                           "for every sample pending; acks follow commits): low sample rates "
                           "share a commit; keep it under the agents' 1 s spool sync"),
    PW_CONFIG_OPT_INT("store", "commit_max_samples", "256", 1, 1000000, T, commit_max_samples,
                      "this many pending samples are committed at once (high rates keep short "
                      "acks)"),
    PW_CONFIG_OPT_SIZE("store", "commit_max_bytes", "4MiB", 4096, INT64_C(1) << 30, T,
                       commit_max_bytes,
                       "this many pending frame bytes are committed at once (a burst of "
                       "keyframes makes several bounded commits)"),
    PW_CONFIG_OPT_DURATION("store", "raw_retention", "48h", 3600000, INT64_C(3153600000000), T,
                           raw_retention_ms, "keep raw samples this long"),
    PW_CONFIG_OPT_DURATION("store", "rollup_1m_retention", "30d", 3600000, INT64_C(3153600000000),
                           T, m1_retention_ms, "keep 1-minute rollups this long"),
    PW_CONFIG_OPT_DURATION("store", "rollup_15m_retention", "400d", 3600000, INT64_C(3153600000000),
                           T, m15_retention_ms, "keep 15-minute rollups this long"),
    PW_CONFIG_OPT_SIZE("store", "max_size", "0", 0, INT64_C(1) << 50, T, store_max_size,
                       "0 = no limit; else the database file's budget: past it, the oldest "
                       "history (every level, an hour or more at a time) is dropped, logged and "
                       "counted (poolwatch_store_evicted_total); writes never fail for it"),
    PW_CONFIG_OPT_SIZE("store", "wal_max", "64MiB", 1 << 20, INT64_C(1) << 40, T, store_wal_max,
                       "the WAL's limit: a commit that leaves more than half of it checkpoints "
                       "at once; an idle store's WAL is truncated to 0"),
    PW_CONFIG_OPT_SIZE("store", "live_series_max", "256MiB", 1 << 20, INT64_C(1) << 40, T,
                       store_live_series_max,
                       "memory for open chunks' rows kept by row (series queries and "
                       "compaction then replay nothing); past it a chunk is replayed instead"),
    PW_CONFIG_OPT_STRING("http", "listen", "127.0.0.1:7443", T, http_listen, 0,
                         "address:port of the query API and dashboard (HTTPS); empty = off"),
    PW_CONFIG_OPT_STRING("http", "tokens_file", "", T, tokens_file, PW_CONFIG_PATH,
                         "bearer tokens: lines '<sha256 hex> <read|admin> <name>'"),
    PW_CONFIG_OPT_STRING("analysis", "pooltag_file", "", T, pooltag_file, PW_CONFIG_PATH,
                         "pooltag.txt-format tag descriptions (Debugging Tools for Windows)"),
    PW_CONFIG_OPT_DURATION("analysis", "kept_every", "5m", 0, INT64_C(86400000), T, kept_every_ms,
                           "how often, at most, the leak suspects' evidence and the hosts' "
                           "pressure are written to <store.path>.suspects.json in the background "
                           "while they change (a crash keeps the last one; a clean stop always "
                           "writes it); 0 = at a clean stop only"),
    PW_CONFIG_OPT_STRING("alerts", "webhook_url", "", T, webhook_url, 0,
                         "http://host:port/path: one JSON POST per alert transition; empty = off"),
    PW_CONFIG_OPT_STRING("alerts", "alertmanager_url", "", T, alertmanager_url, 0,
                         "http://host:port of Alertmanager (POST /api/v2/alerts); empty = off"),
    PW_CONFIG_OPT_DURATION("alerts", "silent_after", "0", 0, INT64_C(604800000), T, silent_after_ms,
                           "a streaming host that sends nothing this long fires HostSilent (a "
                           "clean stop, said by its agent, never does); 0 = 3 of the host's "
                           "sampling intervals, at least 60 s"),
    PW_CONFIG_OPT_STRING("remote_write", "url", "", T, rw_url, 0,
                         "http[s]://host:port/path of a Prometheus remote write 1.0 receiver "
                         "(Prometheus /api/v1/write, Mimir /api/v1/push, VictoriaMetrics "
                         "/api/v1/write); empty = off"),
    PW_CONFIG_OPT_DURATION("remote_write", "interval", "15s", 1000, 3600000, T, rw_interval_ms,
                           "send the latest value of each series with a new sample this often"),
    PW_CONFIG_OPT_INT("remote_write", "tags_per_host", "20", 0, 10000, T, rw_tags_per_host,
                      "(tag, pool) rows with the most bytes sent per host (2 series each, as "
                      "/metrics); 0 = host-level series only"),
    PW_CONFIG_OPT_STRING("remote_write", "bearer_token_file", "", T, rw_bearer_token_file,
                         PW_CONFIG_PATH,
                         "file holding a bearer token (Authorization header); read at start "
                         "and on SIGHUP; empty = none"),
    PW_CONFIG_OPT_STRING("remote_write", "ca_file", "", T, rw_ca_file, PW_CONFIG_PATH,
                         "https: CA certificates to verify the receiver; empty = "
                         "/etc/ssl/certs/ca-certificates.crt"),
    PW_CONFIG_OPT_STRING("remote_write", "cert_file", "", T, rw_cert_file, PW_CONFIG_PATH,
                         "https: client certificate (PEM); empty = none"),
    PW_CONFIG_OPT_STRING("remote_write", "key_file", "", T, rw_key_file, PW_CONFIG_PATH,
                         "https: private key of cert_file"),
    PW_CONFIG_OPT_LIST("remote_write", "headers", "", 0, 32, T, rw_headers, 0,
                       "extra request headers, comma-separated 'Name: value' items (e.g. "
                       "X-Scope-OrgID: team1); values cannot hold commas"),
    PW_CONFIG_OPT_DURATION("remote_write", "timeout", "10s", 100, 600000, T, rw_timeout_ms,
                           "one request, from connecting to the response"),
    PW_CONFIG_OPT_INT("remote_write", "max_queue", "256", 1, 100000, T, rw_max_queue,
                      "requests waiting (bounded memory); the oldest is dropped when full"),
    PW_CONFIG_OPT_INT("remote_write", "max_series_per_request", "2000", 1, 100000, T,
                      rw_max_series_per_request, "series in one request"),
    PW_CONFIG_OPT_BOOL("remote_write", "movers", "true", T, rw_movers,
                       "also send the rows whose bytes changed since the previous interval"),
    PW_CONFIG_OPT_DURATION("remote_write", "mover_hold", "15m", 1000, 86400000, T, rw_mover_hold_ms,
                           "a changed row stays sent this long after its last change (its "
                           "series neither vanishes nor reappears in between)"),
    PW_CONFIG_OPT_INT("remote_write", "max_tags_per_host", "100", 1, 100000, T,
                      rw_max_tags_per_host,
                      "hard cap on the rows sent per host (top, pinned, then changed rows)"),
    PW_CONFIG_OPT_STRING("remote_write", "pinned_tags", "", T, rw_pinned_tags, 0,
                         "tag patterns always sent (comma-separated, as `poolwatch top "
                         "--tags`), e.g. Ddk,Thre,MmSt"),
    PW_CONFIG_OPT_BOOL("remote_write", "leak_series", "true", T, rw_leak_series,
                       "send poolwatch_leak_growth_bytes_per_hour and poolwatch_leak_score per "
                       "leak suspect (as /metrics)"),
    PW_CONFIG_OPT_STRING("remote_write", "queue_dir", "", T, rw_queue_dir, PW_CONFIG_PATH,
                         "directory where requests wait while the receiver is away (a receiver "
                         "outage loses nothing up to queue_max_size); empty = memory only"),
    PW_CONFIG_OPT_SIZE("remote_write", "queue_max_size", "1GiB", 1 << 20, INT64_C(1) << 44, T,
                       rw_queue_max_bytes,
                       "budget of queue_dir; past it the oldest requests are dropped (counted "
                       "in poolwatch_remote_write_dropped_samples_total)"),
    PW_CONFIG_OPT_STRING("fleet", "query_url", "", T, fleet_query_url, 0,
                         "http[s]://host:port of the Prometheus-compatible store the collectors "
                         "remote-write into (VictoriaMetrics :8428, Prometheus :9090, Mimir "
                         "/prometheus): /api/v1/hosts, /tags, /tags/{tag} and /leaks answer for "
                         "the whole fleet from it (?scope=local: this collector's own); empty = "
                         "off"),
    PW_CONFIG_OPT_STRING("fleet", "self_url", "", T, fleet_self_url, 0,
                         "this collector's API/dashboard URL as users reach it (e.g. "
                         "https://pw-eu1.example.com:7443), sent with remote write as "
                         "poolwatch_host_owner{collector,host}: the global view links each host "
                         "to it; empty = not sent"),
    PW_CONFIG_OPT_DURATION("fleet", "refresh", "10s", 1000, 3600000, T, fleet_refresh_ms,
                           "how often the global view queries the store"),
    PW_CONFIG_OPT_STRING("fleet", "ca_file", "", T, fleet_ca_file, PW_CONFIG_PATH,
                         "https query_url: CA certificates; empty = the system bundle "
                         "(remote_write.headers are sent too, e.g. X-Scope-OrgID)"),
    PW_CONFIG_OPT_STRING("collector", "log_level", "info", T, log_level, 0,
                         "error, warn, info or debug"),
    PW_CONFIG_END,
};

pw_commit_policy_t pw_collector_commit_policy(const pw_collector_cfg_t *cfg)
{
    pw_commit_policy_t p = {.max_wait_ms = cfg->commit_interval_ms,
                            .max_samples = (uint64_t)cfg->commit_max_samples,
                            .max_bytes = cfg->commit_max_bytes};
    return p;
}
