/* collector_internal.h: the collector's state, shared by collector.c (ingest), http.c (query
 * API and dashboard) and analysis_run.c (analysis on ingest and on a timer). Only the loop's
 * thread touches it. */
#ifndef PW_COLLECTOR_INTERNAL_H
#define PW_COLLECTOR_INTERNAL_H

#include <uv.h>

#include "alert.h"
#include "analysis.h"
#include "buf.h"
#include "collector.h"
#include "fleet.h"
#include "log.h"
#include "poolwatch.pb-c.h"
#include "store.h"
#include "tls.h"

struct conn_s;
struct pw_http_s;
struct pw_analysis_run_s;
struct pw_remote_write_s;

typedef struct pw_collector_s {
    const pw_collector_cfg_t *cfg;
    uv_loop_t loop;
    uv_tcp_t server;
    int agent_port;
    pw_tls_ctx_t *tls_ctx;
    pw_store_t *store;
    pw_fleet_t fleet;
    struct conn_s *conns;
    size_t n_conns;
    void *iptab;
    uint64_t uncommitted; /* samples put since the last commit */
    pw_sample_t scratch;
    pw_buf_t out;
    uv_timer_t commit_timer, retention_timer;
    uv_signal_t sigint, sigterm, sighup;
    pw_complaint_t c_store, c_conns, c_twins;
    /* The last clock warning (collector.c check_clock): its host and uv_now() ms, so that
     * sessions of one host replacing each other do not repeat it. */
    char clock_host[256];
    uint64_t clock_ms;
    struct pw_http_s *http;
    struct pw_analysis_run_s *analysis;
    struct pw_remote_write_s *rw; /* remote write (remote_write.h), NULL when off */
} pw_collector_t;

/* Sends a command to the host's agent. Returns 0 or PW_ECLOSED (not connected). */
int pw_collector_send_command(pw_collector_t *c, pw_host_t *h, const Poolwatch__V1__Command *cmd);

/* http.c: the query API and dashboard listener (cfg->http_listen). */
int pw_collector_http_start(pw_collector_t *c, pw_diag_t *d);
void pw_collector_http_stop(pw_collector_t *c);
/* Reads cfg->tokens_file again (SIGHUP) and, when it parses, uses it for the next requests; on
 * an error the tokens in use stay and `d` says what and where. Returns the number of tokens
 * loaded (>= 0), or a negative code (no HTTP listener, no tokens file: PW_EINVAL). */
int64_t pw_collector_http_reload_tokens(pw_collector_t *c, pw_diag_t *d);
/* A CommandResult from an agent, handed to the API request waiting for it. */
void pw_collector_command_result(pw_collector_t *c, pw_host_t *h,
                                 const Poolwatch__V1__CommandResult *res);

/* analysis_run.c: pressure per host and leak suspects, on a timer over the fleet and the
 * store; alerts through the state machine of alert.h. */
/* A leak-screen baseline row: 24 bytes, the tag bytes in the host's baseline_tags (a full
 * PW_TAG_MAX copy per row made the baseline 160 KB of a 2,000-row host). Rows are sorted by
 * hash, equal hashes next to each other. */
typedef struct pw_base_row_s {
    uint64_t hash;  /* of (pool, tag bytes): base_hash in analysis_run.c */
    uint64_t bytes; /* bytes outstanding at the baseline */
    uint32_t off;   /* tag bytes: h->baseline_tags + off */
    uint8_t tag_len;
    uint8_t pool;
} pw_base_row_t;

typedef struct pw_suspect_s {
    char host[256];
    uint8_t tag[PW_TAG_MAX];
    uint8_t tag_len;
    uint8_t pool;
    uint64_t found_ms;       /* sample time when first flagged */
    pw_leak_t leak;          /* the numbers that justify it (for COMPARE: the comparison's numbers
                                in the same fields: score, rate, first/last bytes, span, ratio) */
    pw_leak_method_t method; /* TREND (pw_leak_eval) or COMPARE (a few screens) */
    pw_compare_t cmp;        /* COMPARE: the screen comparison (deltas, screens) */
} pw_suspect_t;

void pw_collector_analysis_start(pw_collector_t *c);
void pw_collector_analysis_stop(pw_collector_t *c);
void pw_collector_analysis_on_sample(pw_collector_t *c, pw_host_t *h);
/* Runs one analysis pass now (the timer's work; tests and the API's ?refresh use it). */
void pw_collector_analysis_run(pw_collector_t *c);
/* Current suspects, sorted by score descending; borrowed until the next pass. */
size_t pw_collector_suspects(const pw_collector_t *c, const pw_suspect_t **out);
/* Current alerts (pending, firing, recently resolved). */
const pw_alert_set_t *pw_collector_alerts(const pw_collector_t *c);

#endif /* PW_COLLECTOR_INTERNAL_H */
