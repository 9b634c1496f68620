/* listener.c: accepts agent connections within the limits, runs the group commit when its
 * policy says (commit.h) and sends the acks of what became durable (listener.h). Sessions:
 * session.c. */
#include "alloc.h"
#include "listener_internal.h"
#include "net.h"

#include <stdio.h>
#include <string.h>

#define MOD "collector"

#define IPTAB_SIZE 65536
#define PRE_AUTH_MIN_AGE_MS                                                                        \
    1000 /* an unverified session younger than this is not closed for a newer one */

/* Per-address connection counts: an open-addressing table whose entries are reused, not
 * removed. */
static pw_ipslot_t *ip_slot(pw_listener_t *l, const char *ip)
{
    uint32_t h = 2166136261u;
    for (const char *s = ip; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    for (uint32_t i = 0; i < IPTAB_SIZE; i++) {
        pw_ipslot_t *sl = &l->iptab[(h + i) % IPTAB_SIZE];
        if (sl->ip[0] == '\0') {
            snprintf(sl->ip, sizeof(sl->ip), "%s", ip);
            return sl;
        }
        if (strcmp(sl->ip, ip) == 0)
            return sl;
        if (sl->count == 0 && i > 64) { /* reuse a stale slot far along the probe chain */
            snprintf(sl->ip, sizeof(sl->ip), "%s", ip);
            return sl;
        }
    }
    return NULL;
}

static void on_connection(uv_stream_t *server, int status)
{
    pw_listener_t *l = server->data;
    if (status != 0) {
        PW_LOG_WARN(MOD, "accept: %s", uv_strerror(status));
        return;
    }
    if (l->n_sessions >= (size_t)l->o.max_connections) {
        pw_complain(&l->c_conns, uv_now(l->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "connection limit %lld reached: refusing", (long long)l->o.max_connections);
        pw_net_reject(server);
        return;
    }
    pw_session_t *k = pw_calloc(1, sizeof(*k));
    if (k == NULL) {
        pw_net_reject(server);
        return;
    }
    k->l = l;
    pw_diag_t d;
    if (pw_tls_accept(&k->tls, server, l->o.tls_ctx, &pw__session_cbs, k, &d) != 0) {
        pw_free(k);
        pw_net_reject(server);
        return;
    }
    pw_frame_reader_init(&k->reader, l->o.hello_max_frame_bytes);
    uv_timer_init(l->loop, &k->timer);
    k->timer.data = k;
    k->next = l->sessions;
    if (l->sessions)
        l->sessions->prev = k;
    l->sessions = k;
    l->n_sessions++;
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    if (uv_tcp_getpeername(pw_tls_tcp(k->tls), (struct sockaddr *)&ss, &sl) == 0)
        pw_net_addr_format((struct sockaddr *)&ss, k->peer, sizeof(k->peer));
    char ip[sizeof(k->peer)];
    memcpy(ip, k->peer, sizeof(ip));
    char *colon = strrchr(ip, ':');
    if (colon && ip[0] != '[')
        *colon = '\0';
    k->ip = ip_slot(l, ip);
    k->accepted_ms = uv_now(l->loop);
    if (k->ip && k->ip->count >= (uint32_t)l->o.max_connections_per_ip) {
        /* The limit is on sessions that have not proved anything (issue 15, item 6): agents
         * behind one address (NAT) stream past it, and a new connection takes the place of the
         * oldest unverified one of its address when that one is older than a second, so that
         * raw connections cannot keep a real agent out; else the new one is refused. */
        pw_session_t *old = NULL;
        for (pw_session_t *o = l->sessions; o != NULL; o = o->next)
            if (o != k && o->ip == k->ip && o->ip_counted && !pw_tls_is_closing(o->tls) &&
                k->accepted_ms - o->accepted_ms >= PRE_AUTH_MIN_AGE_MS)
                old = o; /* newest first: the last match is the oldest */
        pw_complain(&l->c_conns, k->accepted_ms, 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "%s: %lld connections from one address without a verified Hello: %s", ip,
                    (long long)l->o.max_connections_per_ip,
                    old ? "closing the oldest for a new one" : "refusing new ones");
        if (old == NULL) {
            pw__session_close(k, NULL);
            pw__session_start_timer(k, l->o.handshake_timeout_ms);
            return;
        }
        pw__session_uncount_ip(old);
        pw__session_close(old, NULL);
    }
    if (k->ip) {
        k->ip->count++;
        k->ip_counted = 1;
    }
    pw__session_start_timer(k, l->o.handshake_timeout_ms);
}

void pw__listener_store_failed(pw_listener_t *l, int r, const char *msg)
{
    /* The store rolled back everything since the last commit (ingest put every host's stored
     * seq back): sessions that sent those samples restart, and their agents resend from the
     * last ack. */
    pw_complain(&l->c_store, uv_now(l->loop), 1000, 600000, PW_LOG_LVL_ERROR, MOD,
                "store: %s (%s): not acking; sessions will resend", pw_strerror(r), msg);
    pw_commit_done(&l->commit); /* nothing is pending any more */
    for (pw_session_t *k = l->sessions; k != NULL; k = k->next)
        if (k->host && k->pending_seq > pw_host_committed_seq(k->host)) {
            k->pending_seq = 0;
            pw__session_close(k, "store failure: resend needed");
        }
}

/* Compacts chunks whose window ended (pw_store_compact), after the acks went out and
 * within a small budget, so that a fleet's chunks ending at the same hour do not hold the loop. */
static void compact_some(pw_listener_t *l)
{
    pw_diag_t d;
    l->compacted_ms = uv_now(l->loop);
    int64_t n = pw_store_compact(pw_ingest_store(l->ing), PW_LISTENER_COMPACT_BUDGET_MS, &d);
    if (n < 0)
        pw_complain(&l->c_store, uv_now(l->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "store: compacting closed chunks: %s (%s)", pw_strerror((int)n), d.msg);
}

void pw_listener_set_tls_ctx(pw_listener_t *l, pw_tls_ctx_t *ctx)
{
    if (l != NULL && ctx != NULL)
        l->o.tls_ctx = ctx;
}

void pw_listener_commit(pw_listener_t *l)
{
    pw_diag_t d;
    pw_commit_done(&l->commit);
    uv_timer_stop(&l->commit_timer);
    int64_t n = pw_ingest_commit(l->ing, &d);
    if (n < 0) {
        pw__listener_store_failed(l, (int)n, d.msg);
        return;
    }
    if (n > 0)
        pw_complain_release(&l->c_store, MOD, "store");
    /* An import commits outside this timer: what it made durable is acked here too. */
    for (pw_session_t *k = l->sessions; k != NULL; k = k->next)
        if (k->host && k->pending_seq > k->acked_seq &&
            pw_host_committed_seq(k->host) >= k->pending_seq && !pw_tls_is_closing(k->tls))
            pw__session_send_ack(k, k->pending_seq, 0);
    compact_some(l);
}

static void on_commit_timer(uv_timer_t *t)
{
    pw_listener_commit(t->data);
}

void pw__listener_stored(pw_listener_t *l, uint64_t bytes)
{
    /* A bound reached: the commit runs at the loop's next turn, after the frames already read
     * (their acks then wait for no timer). */
    int64_t delay = pw_commit_arm(&l->commit, uv_now(l->loop), bytes);
    if (delay >= 0)
        uv_timer_start(&l->commit_timer, on_commit_timer, (uint64_t)delay, 0);
}

/* Compaction goes on while no sample arrives (an idle collector, imports only: sealed chunks,
 * older chunks' series pages and totals); while samples flow it runs after each commit. */
static void on_compact_timer(uv_timer_t *t)
{
    pw_listener_t *l = t->data;
    if (pw_commit_pending(&l->commit) == 0 && pw_ingest_uncommitted(l->ing) == 0 &&
        uv_now(l->loop) - l->compacted_ms >= PW_LISTENER_COMPACT_TICK_MS)
        compact_some(l);
}

int pw_listener_start(uv_loop_t *loop, const pw_listener_opts_t *opts, pw_ingest_t *ing,
                      pw_listener_t **out, pw_diag_t *d)
{
    char host[256];
    uint16_t port;
    struct sockaddr_storage ss;
    if (pw_net_split_host_port(opts->listen, 7070, host, sizeof(host), &port, NULL) != 0 ||
        pw_net_addr_from_literal(host, port, &ss) != 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "listen", "listen address '%s' is not IP:port",
                           opts->listen);
    pw_listener_t *l = pw_calloc(1, sizeof(*l));
    pw_ipslot_t *iptab = l ? pw_calloc(IPTAB_SIZE, sizeof(*iptab)) : NULL;
    if (iptab == NULL) {
        pw_free(l);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "listen", "out of memory");
    }
    l->loop = loop;
    l->o = *opts;
    l->ing = ing;
    l->iptab = iptab;
    pw_buf_init(&l->out, PW_FRAME_MAX_DEFAULT + 16);
    uv_tcp_init(loop, &l->server);
    l->server.data = l;
    uv_timer_init(loop, &l->commit_timer);
    l->commit_timer.data = l;
    uv_timer_init(loop, &l->compact_timer);
    l->compact_timer.data = l;
    pw_commit_init(&l->commit, &opts->commit);
    int r;
    if ((r = uv_tcp_bind(&l->server, (struct sockaddr *)&ss, 0)) != 0 ||
        (r = uv_listen((uv_stream_t *)&l->server, 1024, on_connection)) != 0) {
        pw_diag_set(d, r, 0, 0, "listen", "cannot listen on %s: %s", opts->listen, uv_strerror(r));
        *out = l; /* the caller stops and frees it like a started one */
        return r;
    }
    l->port = pw_net_bound_port(&l->server);
    uv_timer_start(&l->compact_timer, on_compact_timer, PW_LISTENER_COMPACT_TICK_MS,
                   PW_LISTENER_COMPACT_TICK_MS);
    l->started = 1;
    *out = l;
    return 0;
}

void pw_listener_stop(pw_listener_t *l)
{
    if (l == NULL)
        return;
    /* Commit what arrived last; acks for it are lost with the sessions, which is safe. */
    if (l->started) {
        l->started = 0;
        pw_listener_commit(l);
    }
    for (pw_session_t *k = l->sessions; k != NULL; k = k->next)
        pw__session_close(k, NULL);
    pw_net_close_if_open((uv_handle_t *)&l->server, l->loop);
    pw_net_close_if_open((uv_handle_t *)&l->commit_timer, l->loop);
    pw_net_close_if_open((uv_handle_t *)&l->compact_timer, l->loop);
}

void pw_listener_free(pw_listener_t *l)
{
    if (l == NULL)
        return;
    pw_buf_close(&l->out);
    pw_free(l->iptab);
    pw_free(l);
}

int pw_listener_port(const pw_listener_t *l)
{
    return l->port;
}

size_t pw_listener_connections(const pw_listener_t *l)
{
    return l->n_sessions;
}

int pw_listener_send_command(pw_listener_t *l, const pw_host_t *h,
                             const Poolwatch__V1__Command *cmd)
{
    (void)l;
    pw_session_t *k = pw_ingest_session(h);
    if (k == NULL || k->tls == NULL || pw_tls_is_closing(k->tls))
        return PW_ECLOSED;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_COMMAND;
    env.command = (Poolwatch__V1__Command *)(uintptr_t)cmd;
    return pw__session_send(k, &env);
}
