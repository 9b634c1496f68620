/* collector.c: the wiring. Opens the store, creates ingest (the one writer of the fleet), the
 * agents' listener, the analysis pass, the API's HTTPS listener, remote write and the alert
 * notifier, hands each its collaborators, and runs the loop until SIGINT/SIGTERM. Dependencies
 * run one way: this file -> api/, export/ -> analysis/ -> ingest/ -> store/
 * (docs/design.md). */
#include "collector.h"
#include "alloc.h"
#include "analysis_run.h"
#include "api.h"
#include "daemon.h"
#include "ingest.h"
#include "listener.h"
#include "log.h"
#include "net.h"
#include "notify.h"
#include "pooltag.h"
#include "fleetq.h"
#include "remote_write.h"
#include "store.h"
#include "store_lock.h"
#include "tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#ifndef _WIN32
#include <unistd.h> /* access */
#endif

#define MOD "collector"

typedef struct {
    const pw_collector_cfg_t *cfg;
    uv_loop_t loop;
    pw_tls_ctx_t *tls_ctx;
    pw_store_lock_t *store_lock; /* held while the collector runs: one collector per store */
    pw_store_t *store;
    pw_ingest_t *ing;
    pw_listener_t *agents;
    pw_analysis_run_t *an;
    pw_http_t *http;
    pw_remote_write_t *rw; /* NULL when off */
    pw_fleetq_t *fleetq;   /* the global fleet view; NULL when [fleet] query_url is off */
    pw_notify_t *notify;   /* NULL when no alert target is configured */
    uv_timer_t retention_timer;
    uint64_t evicted_logged; /* store evictions already logged */
    int64_t expiry_warned_s; /* wall time of the last certificate expiry warning */
    uv_signal_t sigint, sigterm, sighup, sigbreak; /* sigbreak: Windows only */
    uv_async_t stop_async;  /* pw_collector_stop from another thread (Windows service control) */
    uint64_t next_auto_cmd; /* the collector's own commands (AUTO_CMD | n): a new suspect's
                               big-pool snapshot */
} pw_collector_t;

/* Command ids the collector sends by itself carry this bit; the API's count from 1 and never
 * reach it, so an answer is routed by its id alone. */
#define AUTO_CMD (1ull << 63)

/* The agents' TLS files as a context's options. */
static pw_tls_ctx_opts_t agents_tls(const pw_collector_cfg_t *cfg)
{
    pw_tls_ctx_opts_t to = {.role = PW_TLS_SERVER,
                            .ca_file = cfg->ca_file,
                            .cert_file = cfg->cert_file,
                            .key_file = cfg->key_file,
                            .crl_file = cfg->crl_file};
    return to;
}

/* A warning once a day (and at start and SIGHUP: force) from PW_TLS_EXPIRY_WARN_S before the
 * certificate or the CA expires. */
static void warn_expiry(pw_collector_t *c, int force)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    char msg[160];
    if ((!force && tv.tv_sec - c->expiry_warned_s < 86400) ||
        pw_tls_ctx_expiry_check(c->tls_ctx, tv.tv_sec, PW_TLS_EXPIRY_WARN_S, msg, sizeof(msg)) != 1)
        return;
    PW_LOG_WARN(MOD, "%s (%s, %s): renew it, then send SIGHUP", msg, c->cfg->cert_file,
                c->cfg->ca_file);
    c->expiry_warned_s = tv.tv_sec;
}

static void on_retention_timer(uv_timer_t *t)
{
    pw_collector_t *c = t->data;
    pw_diag_t d;
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    pw_store_stats_t b;
    warn_expiry(c, 0);
    int64_t r = pw_store_retention(c->store, (uint64_t)tv.tv_sec * 1000, &d);
    if (r < 0)
        PW_LOG_WARN(MOD, "retention: %s (%s)", pw_strerror((int)r), d.msg);
    /* store.max_size: compaction may have dropped history since the last pass as well */
    if (pw_store_stats(c->store, &b, NULL) == 0 && b.evicted > c->evicted_logged) {
        PW_LOG_WARN(MOD,
                    "store: max_size %" PRIu64 " bytes reached: %" PRIu64
                    " oldest chunks and rollup pages dropped (file %" PRIu64 " bytes)",
                    c->cfg->store_max_size, b.evicted - c->evicted_logged, b.db_bytes);
        c->evicted_logged = b.evicted;
    }
}

#ifndef _WIN32 /* no reload signal on Windows (see the signals in pw_collector_run) */
/* SIGHUP: the certificate, key, CA and CRL files (a renewed certificate, a revoked agent) for
 * connections accepted from now on, and the tokens file (a token added or revoked) without a
 * restart. On an error the files in use stay. */
static void reload_tls(pw_collector_t *c)
{
    pw_tls_ctx_opts_t to = agents_tls(c->cfg);
    pw_tls_ctx_t *ctx;
    pw_diag_t d;
    if (pw_tls_ctx_new(&ctx, &to, &d) != 0) {
        PW_LOG_WARN(MOD, "SIGHUP: TLS files not reloaded (the previous ones stay): %s", d.msg);
        return;
    }
    pw_listener_set_tls_ctx(c->agents, ctx);
    pw_tls_ctx_free(c->tls_ctx); /* open sessions hold their own reference */
    c->tls_ctx = ctx;
    if (c->http != NULL &&
        pw_http_reload_tls(c->http, c->cfg->ca_file, c->cfg->cert_file, c->cfg->key_file, &d) != 0)
        PW_LOG_WARN(MOD, "SIGHUP: the API's TLS files not reloaded (the previous ones stay): %s",
                    d.msg);
    int64_t not_after;
    pw_tls_ctx_not_after(ctx, &not_after, NULL);
    time_t na = (time_t)not_after;
    struct tm tm;
    char until[40] = "?";
    if (gmtime_r(&na, &tm) != NULL)
        strftime(until, sizeof(until), "%Y-%m-%d %H:%M:%S UTC", &tm);
    PW_LOG_INFO(MOD,
                "SIGHUP: %s, %s, %s%s%s reloaded for new connections (certificate valid until %s)",
                c->cfg->cert_file, c->cfg->key_file, c->cfg->ca_file,
                c->cfg->crl_file && c->cfg->crl_file[0] ? ", " : "",
                c->cfg->crl_file ? c->cfg->crl_file : "", until);
    warn_expiry(c, 1);
}

static void on_sighup(uv_signal_t *s, int signum)
{
    pw_collector_t *c = s->data;
    pw_diag_t d;
    PW_LOG_INFO(MOD, "%s: reloading the TLS files, the tokens file and the remote write token",
                pw_daemon_signal_name(signum));
    reload_tls(c);
    int64_t n = pw_http_reload_tokens(c->http, &d);
    if (n >= 0)
        PW_LOG_INFO(MOD, "SIGHUP: %s reloaded, %lld tokens", c->cfg->tokens_file, (long long)n);
    else
        PW_LOG_WARN(MOD, "SIGHUP: tokens not reloaded (the previous ones stay): %s", d.msg);
    if (c->rw != NULL && pw_remote_write_reload_token(c->rw, &d) != 0)
        PW_LOG_WARN(MOD, "SIGHUP: remote write token not reloaded (the previous one stays): %s",
                    d.msg);
}
#endif

/* The remote writer's view of the fleet, read at each of its intervals. */
static void rw_source(void *arg, const pw_fleet_t **f, const pw_analysis_run_t **an)
{
    pw_collector_t *c = arg;
    *f = pw_ingest_fleet(c->ing);
    *an = c->an;
}

/* The API's way to the agents: the listener. */
static int send_command(void *arg, const pw_host_t *h, const Poolwatch__V1__Command *cmd)
{
    pw_collector_t *c = arg;
    return pw_listener_send_command(c->agents, h, cmd);
}

static size_t connections(void *arg)
{
    pw_collector_t *c = arg;
    return c->agents ? pw_listener_connections(c->agents) : 0;
}

/* An agent's answer to a command. A big-pool snapshot (asked by the collector for a new
 * suspect, or by an operator through the API) is kept as the host's latest for its tag, where
 * the API shows it with the suspect; an answer to the API goes to the request waiting for it
 * (answers to the collector's own commands have none). */
static void on_command_result(void *arg, const pw_host_t *h,
                              const Poolwatch__V1__CommandResult *res)
{
    pw_collector_t *c = arg;
    int automatic = (res->id & AUTO_CMD) != 0;
    if (res->big_pool != NULL && res->status == 0) {
        pw_host_t *wh = pw_fleet_find(pw_ingest_fleet(c->ing), h->name);
        uv_timeval64_t tv;
        uv_gettimeofday(&tv);
        int r = wh != NULL ? pw_ingest_big_pool(c->ing, wh, res->big_pool, automatic,
                                                (uint64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000)
                           : PW_ENOENT;
        if (r != 0)
            PW_LOG_WARN(MOD, "%s: big-pool snapshot not kept: %s", h->name, pw_strerror(r));
    } else if (automatic) {
        PW_LOG_INFO(MOD, "%s: no big-pool snapshot for the new suspect: %s (%s)", h->name,
                    res->message ? res->message : "", pw_strerror(res->status));
    }
    if (!automatic)
        pw_http_command_result(c->http, h, res);
}

/* A new suspect of a live host (pw_analysis_opts_t.on_suspect): the host's agent is asked for
 * the tag's big-pool blocks (COMMAND_BIG_POOL), a Windows pool tag only; the answer comes to
 * on_command_result. */
static int on_suspect(void *arg, const pw_host_t *h, const pw_suspect_t *s)
{
    pw_collector_t *c = arg;
    if (strcmp(h->os_family, "windows") != 0 || s->tag_len != 4 ||
        h->source_kind == POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY)
        return 0; /* no big-pool table: Linux, a replayed capture */
    if (!pw_host_connected(h))
        return -1;
    Poolwatch__V1__Command cmd = POOLWATCH__V1__COMMAND__INIT;
    cmd.id = AUTO_CMD | ++c->next_auto_cmd;
    cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_BIG_POOL;
    cmd.tag.data = (uint8_t *)(uintptr_t)s->tag;
    cmd.tag.len = 4;
    if (pw_listener_send_command(c->agents, h, &cmd) != 0)
        return -1;
    char t[PW_TAG_MAX * 4 + 1];
    pw_row_format(s->tag, s->tag_len, s->pool, t, sizeof(t));
    PW_LOG_INFO(MOD, "%s: new suspect %s: its agent is asked for the tag's big-pool blocks",
                h->name, t);
    return 1;
}

/* The analysis' alert transitions: to the notifier. */
static void on_alert(void *arg, const pw_alert_transition_t *tr, const char *name,
                     const char *summary, const char *description, int resend)
{
    pw_collector_t *c = arg;
    int r = pw_notify_alert(c->notify, tr, name, summary, description, resend);
    if (r < 0)
        PW_LOG_WARN(MOD, "alert for %s not queued: %s", tr->key.host, pw_strerror(r));
}

/* remote_write.* of the configuration as the writer's options. */
static void rw_opts(const pw_collector_cfg_t *cfg, pw_remote_write_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->url = cfg->rw_url;
    o->interval_ms = cfg->rw_interval_ms;
    o->tags_per_host = (size_t)cfg->rw_tags_per_host;
    o->bearer_token_file = cfg->rw_bearer_token_file;
    o->ca_file = cfg->rw_ca_file;
    o->cert_file = cfg->rw_cert_file;
    o->key_file = cfg->rw_key_file;
    o->headers = (const char *const *)cfg->rw_headers.items;
    o->n_headers = cfg->rw_headers.n;
    o->timeout_ms = cfg->rw_timeout_ms;
    o->max_queue = (size_t)cfg->rw_max_queue;
    o->max_series_per_request = (size_t)cfg->rw_max_series_per_request;
    o->policy.movers = cfg->rw_movers;
    o->policy.hold_ms = cfg->rw_mover_hold_ms;
    o->policy.max_tags_per_host = (size_t)cfg->rw_max_tags_per_host;
    o->policy.pinned_tags = cfg->rw_pinned_tags;
    o->policy.leak_series = cfg->rw_leak_series;
    o->queue_dir = cfg->rw_queue_dir;
    o->queue_max_bytes = cfg->rw_queue_max_bytes;
    o->policy.owner_url = cfg->fleet_self_url;
}

static void on_signal(uv_signal_t *s, int signum)
{
    pw_collector_t *c = s->data;
    PW_LOG_INFO(MOD, "%s: stopping", pw_daemon_signal_name(signum));
    uv_stop(&c->loop);
}

static void on_stop_async(uv_async_t *h)
{
    pw_collector_t *c = h->data;
    PW_LOG_INFO(MOD, "stop requested: stopping");
    uv_stop(&c->loop);
}

void pw_collector_stop(void)
{
    pw_net_stop_request();
}

int pw_collector_run(const pw_collector_cfg_t *cfg, pw_diag_t *d)
{
    pw_collector_t *c = pw_calloc(1, sizeof(*c));
    if (c == NULL)
        return PW_ENOMEM;
    c->cfg = cfg;
    int r = uv_loop_init(&c->loop);
    if (r != 0) {
        pw_free(c);
        return r;
    }
    pw_store_opts_t so;
    memset(&so, 0, sizeof(so));
    so.raw_retention_ms = cfg->raw_retention_ms;
    so.m1_retention_ms = cfg->m1_retention_ms;
    so.m15_retention_ms = cfg->m15_retention_ms;
    so.max_size_bytes = cfg->store_max_size;
    so.wal_max_bytes = cfg->store_wal_max;
    so.live_series_max_bytes = cfg->store_live_series_max;
    pw_tls_ctx_opts_t to = agents_tls(cfg);
    /* Before the database is touched: a second collector on the same store refuses to start. */
    if ((r = pw_store_lock_acquire(cfg->db_path, &c->store_lock, d)) != 0 ||
        (r = pw_store_open(cfg->db_path, &so, &c->store, d)) != 0 ||
        (r = pw_ingest_new(c->store, &c->ing, d)) != 0 ||
        (r = pw_tls_ctx_new(&c->tls_ctx, &to, d)) != 0)
        goto out;
    PW_LOG_INFO(MOD, "rebuilt %zu hosts from the store", pw_ingest_fleet(c->ing)->n);
    warn_expiry(c, 1);
    pw_listener_opts_t lo = {.listen = cfg->listen,
                             .tls_ctx = c->tls_ctx,
                             .handshake_timeout_ms = cfg->handshake_timeout_ms,
                             .idle_timeout_ms = cfg->idle_timeout_ms,
                             .max_connections = cfg->max_connections,
                             .max_connections_per_ip = cfg->max_connections_per_ip,
                             .max_frame_bytes = cfg->max_frame_bytes,
                             .hello_max_frame_bytes = cfg->hello_max_frame_bytes,
                             .commit = pw_collector_commit_policy(cfg),
                             .remote_write_on = cfg->rw_url && cfg->rw_url[0],
                             .on_result = on_command_result,
                             .on_result_arg = c};
    if ((r = pw_listener_start(&c->loop, &lo, c->ing, &c->agents, d)) != 0)
        goto out;
    if ((cfg->webhook_url && cfg->webhook_url[0]) ||
        (cfg->alertmanager_url && cfg->alertmanager_url[0])) {
        pw_notify_opts_t no;
        memset(&no, 0, sizeof(no));
        no.webhook_url = cfg->webhook_url;
        no.alertmanager_url = cfg->alertmanager_url;
        pw_diag_t nd;
        if (pw_notify_new(&c->loop, &no, &c->notify, &nd) != 0)
            PW_LOG_ERROR(MOD, "%s (alerts are not sent)", nd.msg);
    }
    char alerts_path[4096], kept_path[4096];
    int keep_alerts = cfg->db_path && cfg->db_path[0] && strcmp(cfg->db_path, ":memory:") != 0 &&
                      strlen(cfg->db_path) < sizeof(alerts_path) - 16;
    if (keep_alerts) {
        snprintf(alerts_path, sizeof(alerts_path), "%s.alerts.json", cfg->db_path);
        snprintf(kept_path, sizeof(kept_path), "%s.suspects.json", cfg->db_path);
    }
    pw_analysis_opts_t ao = {.alerts_path = keep_alerts ? alerts_path : NULL,
                             .kept_path = keep_alerts ? kept_path : NULL,
                             .kept_every_ms = cfg->kept_every_ms,
                             .on_alert = c->notify ? on_alert : NULL,
                             .on_alert_arg = c,
                             .silent_after_ms = (int64_t)cfg->silent_after_ms,
                             .on_suspect = on_suspect,
                             .on_suspect_arg = c};
    if (pw_analysis_run_new(&c->loop, c->ing, &ao, &c->an) != 0)
        PW_LOG_ERROR(MOD, "out of memory: analysis disabled");
    if (cfg->rw_url && cfg->rw_url[0]) {
        pw_remote_write_opts_t ro;
        rw_opts(cfg, &ro);
        ro.source = rw_source;
        ro.source_arg = c;
        if ((r = pw_remote_write_new(&c->loop, &ro, &c->rw, d)) != 0)
            goto out;
        PW_LOG_INFO(MOD, "remote write to %s every %llu ms, %lld tags per host", cfg->rw_url,
                    (unsigned long long)cfg->rw_interval_ms, (long long)cfg->rw_tags_per_host);
    }
    if (cfg->fleet_query_url && cfg->fleet_query_url[0]) {
        pw_fleetq_opts_t fo = {.query_url = cfg->fleet_query_url,
                               .refresh_ms = cfg->fleet_refresh_ms,
                               .ca_file = cfg->fleet_ca_file,
                               .headers = (const char *const *)cfg->rw_headers.items,
                               .n_headers = cfg->rw_headers.n,
                               /* the API's answers made on the worker with each snapshot */
                               .prepare = pw_api_global_prepare,
                               .prepared_free = pw_api_global_prepared_free};
        if ((r = pw_fleetq_new(&c->loop, &fo, &c->fleetq, d)) != 0)
            goto out;
        PW_LOG_INFO(MOD, "global fleet view from %s every %llu ms", cfg->fleet_query_url,
                    (unsigned long long)cfg->fleet_refresh_ms);
    }
    if (cfg->http_listen && cfg->http_listen[0]) {
        pw_http_opts_t ho = {.listen = cfg->http_listen,
                             .ca_file = cfg->ca_file,
                             .cert_file = cfg->cert_file,
                             .key_file = cfg->key_file,
                             .tokens_file = cfg->tokens_file,
                             .pooltag_file = cfg->pooltag_file};
        pw_api_t deps;
        memset(&deps, 0, sizeof(deps));
        deps.ing = c->ing;
        deps.an = c->an;
        deps.rw = c->rw;
        deps.fleetq = c->fleetq;
        deps.agents = (pw_api_agents_t){send_command, connections, c};
        if ((r = pw_http_start(&c->loop, &ho, &deps, &c->http, d)) != 0)
            goto out;
    }
    uv_timer_init(&c->loop, &c->retention_timer);
    c->retention_timer.data = c;
    uv_timer_start(&c->retention_timer, on_retention_timer, 60000, 600000);
    uv_signal_init(&c->loop, &c->sigint);
    uv_signal_init(&c->loop, &c->sigterm);
    c->sigint.data = c->sigterm.data = c;
    uv_signal_start(&c->sigint, on_signal, SIGINT);
    uv_signal_start(&c->sigterm, on_signal, SIGTERM);
    uv_signal_init(&c->loop, &c->sighup);
    c->sighup.data = c;
#ifdef _WIN32
    /* libuv's SIGHUP on Windows is the console closing (CTRL_CLOSE_EVENT, also logoff and
     * shutdown): stop as for Ctrl+C (SIGINT); Ctrl+Break (SIGBREAK) stops too. There is no
     * reload signal: the tokens file is read again at a restart of the service. */
    uv_signal_start(&c->sighup, on_signal, SIGHUP);
    uv_signal_init(&c->loop, &c->sigbreak);
    c->sigbreak.data = c;
    uv_signal_start(&c->sigbreak, on_signal, SIGBREAK);
#else
    uv_signal_start(&c->sighup, on_sighup, SIGHUP);
#endif
    uv_async_init(&c->loop, &c->stop_async, on_stop_async);
    c->stop_async.data = c;
    uv_unref((uv_handle_t *)&c->stop_async);
    pw_net_stop_publish(&c->stop_async);
    PW_LOG_INFO(MOD, "agents: %s (port %d), store %s", cfg->listen, pw_listener_port(c->agents),
                cfg->db_path);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    r = 0;
out:
    /* Each part closes its own handles (a TLS session may still flush its close_notify; the
     * listener commits what arrived last); then the loop runs until all are closed. */
    pw_listener_stop(c->agents);
    pw_http_stop(c->http);
    c->http = NULL;
    pw_analysis_run_close(c->an);
    c->an = NULL;
    pw_notify_close(c->notify);
    c->notify = NULL;
    pw_remote_write_close(c->rw);
    c->rw = NULL;
    pw_fleetq_close(c->fleetq);
    c->fleetq = NULL;
    pw_net_close_if_open((uv_handle_t *)&c->retention_timer, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sigint, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sigterm, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sighup, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sigbreak, &c->loop);
    pw_net_stop_publish(NULL);
    pw_net_close_if_open((uv_handle_t *)&c->stop_async, &c->loop);
    pw_net_loop_drain_close(&c->loop);
    pw_listener_free(c->agents);
    pw_ingest_free(c->ing);
    pw_store_close(c->store);
    pw_store_lock_release(c->store_lock);
    pw_tls_ctx_free(c->tls_ctx);
    pw_free(c);
    /* the last line of a run: every part closed, the store's WAL checkpointed, its lock free
     * (a stop said "stopping" at the signal; this says it got there) */
    if (r == 0)
        PW_LOG_INFO(MOD, "stopped: store %s closed", cfg->db_path);
    return r;
}

/* ============================================================================================
 * --check-config
 * ========================================================================================== */

static int check_listen(const char *what, const char *v, pw_diag_t *d)
{
    char host[256];
    uint16_t port;
    struct sockaddr_storage ss;
    if (pw_net_split_host_port(v, 7070, host, sizeof(host), &port, NULL) != 0 ||
        pw_net_addr_from_literal(host, port, &ss) != 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, what, "%s: '%s' is not IP:port", what, v);
    return 0;
}

int pw_collector_check(const pw_collector_cfg_t *cfg, pw_diag_t *d)
{
    int r = check_listen("agents.listen", cfg->listen, d);
    if (r == 0 && cfg->http_listen && cfg->http_listen[0])
        r = check_listen("http.listen", cfg->http_listen, d);
    if (r != 0)
        return r;
    pw_tls_ctx_t *ctx;
    pw_tls_ctx_opts_t to = agents_tls(cfg);
    if ((r = pw_tls_ctx_new(&ctx, &to, d)) != 0)
        return r;
    pw_tls_ctx_free(ctx);
    pw_notify_opts_t no = {.webhook_url = cfg->webhook_url,
                           .alertmanager_url = cfg->alertmanager_url};
    if ((r = pw_notify_check(&no, d)) != 0)
        return r;
    pw_remote_write_opts_t ro;
    rw_opts(cfg, &ro);
    if ((r = pw_remote_write_check(&ro, d)) != 0)
        return r;
    if (cfg->tokens_file && cfg->tokens_file[0]) {
        pw_tokens_t *t;
        if ((r = pw_tokens_load(cfg->tokens_file, &t, d)) != 0)
            return r;
        pw_tokens_free(t);
    }
    if (cfg->pooltag_file && cfg->pooltag_file[0]) {
        pw_pooltag_t *pt;
        if ((r = pw_pooltag_load(cfg->pooltag_file, NULL, &pt, d)) != 0)
            return r;
        pw_pooltag_free(pt);
    }
#ifndef _WIN32
    if (cfg->db_path && strcmp(cfg->db_path, ":memory:") != 0) {
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s", cfg->db_path);
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        if (access(dir, W_OK) != 0)
            return pw_diag_set(d, PW_EACCES, 0, 0, "store.path",
                               "store.path: directory '%s' is missing or not writable", dir);
    }
#endif
    return 0;
}
