/* collector.h: the collector's wiring: a libuv loop with the mutual-TLS listener for agents,
 * per-connection sessions (Hello -> Ack -> samples), ingest into the in-memory fleet state and
 * the SQLite store with group commit (acks only after commit: "acks mean on disk"), and the
 * timers for retention and analysis.
 */
#ifndef PW_COLLECTOR_H
#define PW_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "commit.h"
#include "config.h"
#include "error.h"

/* Configuration, filled by the option table in collector_config.c. Times in ms, sizes in
 * bytes; strings owned by the config layer. */
typedef struct pw_collector_cfg_s {
    char *listen;    /* agents: "host:port", e.g. "0.0.0.0:7070" */
    char *ca_file;   /* CA that signs agent (and CLI) certificates */
    char *cert_file; /* the collector's server certificate */
    char *key_file;
    char *crl_file;                 /* the CA's CRL(s), PEM; "" = no revocation check */
    char *db_path;                  /* SQLite file (":memory:" for tests) */
    uint64_t commit_interval_ms;    /* a stored sample's longest wait for its group commit
                                       (commit.h max_wait_ms), default 600 ms */
    int64_t commit_max_samples;     /* pending samples committed at once, default 256 */
    uint64_t commit_max_bytes;      /* pending frame bytes committed at once, default 4 MiB */
    uint64_t handshake_timeout_ms;  /* TLS + Hello, default 10 s */
    uint64_t idle_timeout_ms;       /* no frame for this long: close, default 5 min */
    int64_t max_connections;        /* overall, default 20,000 */
    int64_t max_connections_per_ip; /* default 64 */
    uint64_t max_frame_bytes;       /* after Hello, default 4 MiB */
    uint64_t hello_max_frame_bytes; /* before Hello is verified, default 64 KiB */
    uint64_t raw_retention_ms;      /* 48 h */
    uint64_t m1_retention_ms;       /* 30 d */
    uint64_t m15_retention_ms;      /* 400 d */
    uint64_t store_max_size;        /* bytes, 0 = none (store.h max_size_bytes) */
    uint64_t store_wal_max;         /* bytes, default 64 MiB (store.h wal_max_bytes) */
    uint64_t store_live_series_max; /* bytes, default 256 MiB (store.h live_series_max_bytes) */
    char *http_listen;              /* query API and dashboard, "host:port" ("" = off) */
    char *tokens_file;              /* bearer tokens (hashes) with roles */
    char *pooltag_file;             /* pooltag.txt-format tag descriptions ("" = none) */
    uint64_t kept_every_ms;         /* suspects.json in the background at most this often; 0 off */
    char *webhook_url;              /* alerts: JSON POST per transition ("" = off), notify.h */
    char *alertmanager_url;         /* alerts: Alertmanager base URL ("" = off), notify.h */
    uint64_t silent_after_ms;       /* HostSilent after this silence; 0 = 3 intervals, >= 60 s */
    /* Prometheus remote write (remote_write.h); url "" = off */
    char *rw_url;
    uint64_t rw_interval_ms;
    int64_t rw_tags_per_host;
    char *rw_bearer_token_file;
    char *rw_ca_file, *rw_cert_file, *rw_key_file;
    pw_config_list_t rw_headers;
    uint64_t rw_timeout_ms;
    int64_t rw_max_queue;
    int64_t rw_max_series_per_request;
    bool rw_movers; /* export policy (remote_write.h) */
    uint64_t rw_mover_hold_ms;
    int64_t rw_max_tags_per_host;
    char *rw_pinned_tags;
    bool rw_leak_series;
    char *rw_queue_dir; /* disk queue (rwqueue.h); "" = memory only */
    uint64_t rw_queue_max_bytes;
    /* the global fleet view (fleetq.h) */
    char *fleet_query_url; /* "" = off */
    char *fleet_self_url;  /* this collector's API URL, exported as poolwatch_host_owner */
    uint64_t fleet_refresh_ms;
    char *fleet_ca_file;
    char *log_level;
} pw_collector_cfg_t;

/* The collector's option table (collector_config.c), for pw_config_* (common/config.h). */
extern const pw_config_opt_t pw_collector_options[];

/* The group-commit policy of `cfg`'s [store] commit_interval, commit_max_samples and
 * commit_max_bytes (commit.h): what the listener runs, and what bench_store follows from the
 * defaults (pw_config_defaults). */
pw_commit_policy_t pw_collector_commit_policy(const pw_collector_cfg_t *cfg);

/* What --check-config verifies beyond the syntax: the agent and HTTP listen addresses are
 * IP:port, the server certificate, key (matching) and CA load, the tokens and pooltag files
 * parse, the store's directory is writable. Returns 0 or the first problem's code with `d`
 * naming it. */
int pw_collector_check(const pw_collector_cfg_t *cfg, pw_diag_t *d);

/* Runs the collector until SIGINT/SIGTERM (on Windows: Ctrl+C, Ctrl+Break, the console
 * closing) or pw_collector_stop. Returns 0, or a negative error when start-up fails (`d` says
 * what: certificates, listen address, database). */
int pw_collector_run(const pw_collector_cfg_t *cfg, pw_diag_t *d);

/* Stops the running pw_collector_run as SIGTERM does, from any thread (the Windows service's
 * control handler); a stop before it runs is remembered. */
void pw_collector_stop(void);

#endif /* PW_COLLECTOR_H */
