/* listener.h: the agents' side of the collector: the mutual-TLS listener with its connection
 * limits (overall and per address), one session per connection (session.c: Hello, then
 * Sample frames, CommandResults and heartbeats) and the group commit that turns stored
 * samples into acks ("an ack means on disk").
 *
 * The listener decodes frames and hands them to ingest (ingest.h), which alone changes the
 * fleet and writes the store; after each commit it acknowledges what became durable. Runs on
 * the collector's loop.
 */
#ifndef PW_LISTENER_H
#define PW_LISTENER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "commit.h"
#include "error.h"
#include "fleet.h"
#include "ingest.h"
#include "poolwatch.pb-c.h"
#include "tls.h"

/* The role an agent's client certificate carries: its subject's OU (deploy/pki.sh). The
 * collector refuses a Hello over any other certificate of the CA (the CLI's, a server's). */
#define PW_AGENT_CERT_OU "poolwatch-agent"

/* Called with an agent's answer to a command (pw_listener_send_command). */
typedef void (*pw_listener_result_cb)(void *arg, const pw_host_t *h,
                                      const Poolwatch__V1__CommandResult *res);

typedef struct pw_listener_opts_s {
    const char *listen;             /* "IP:port" (port 0: any free one) */
    pw_tls_ctx_t *tls_ctx;          /* server context (borrowed) */
    uint64_t handshake_timeout_ms;  /* TLS + verified Hello */
    uint64_t idle_timeout_ms;       /* no frame for this long: close */
    int64_t max_connections;        /* overall */
    int64_t max_connections_per_ip; /* from one address */
    uint64_t max_frame_bytes;       /* after Hello */
    uint64_t hello_max_frame_bytes; /* before Hello is verified */
    pw_commit_policy_t commit;      /* when the group commit runs (commit.h) */
    int remote_write_on;            /* for the clock warning: remote write holds back samples
                                       from the future */
    pw_listener_result_cb on_result;
    void *on_result_arg;
} pw_listener_opts_t;

typedef struct pw_listener_s pw_listener_t;

/* Compaction of chunks whose window ended (pw_store_compact) runs after each group commit and,
 * while no sample is pending, once per tick: at most this long a call (ms), so that a fleet's
 * chunks ending at the same hour do not hold the loop (~10 % of it at one call a tick). */
#define PW_LISTENER_COMPACT_BUDGET_MS 20
#define PW_LISTENER_COMPACT_TICK_MS   200

/* Binds and listens on opts->listen with ingest `ing` (borrowed, outlives the listener) and
 * starts the compaction tick; each stored sample arms the group commit (opts->commit). Returns 0;
 * PW_ECONFIG when listen is not IP:port; a libuv error when it cannot listen; PW_ENOMEM. `d` says
 * what. */
int pw_listener_start(uv_loop_t *loop, const pw_listener_opts_t *opts, pw_ingest_t *ing,
                      pw_listener_t **out, pw_diag_t *d);

/* Commits what arrived last (its acks are lost with the sessions, which is safe: agents
 * resend), then closes every session, the listening socket and the timers; they finish
 * closing on the loop. Accepts NULL. */
void pw_listener_stop(pw_listener_t *l);

/* Frees a stopped listener once its loop has run its handles' close callbacks
 * (pw_net_loop_drain_close). Accepts NULL. */
void pw_listener_free(pw_listener_t *l);

/* The bound port (how tests that listen on port 0 learn it). */
int pw_listener_port(const pw_listener_t *l);

/* The TLS context for connections accepted from now on (SIGHUP: new certificate, key, CA or
 * CRL); sessions already open keep theirs. `ctx` is borrowed like opts->tls_ctx: the caller
 * keeps it alive while the listener may accept with it. */
void pw_listener_set_tls_ctx(pw_listener_t *l, pw_tls_ctx_t *ctx);

/* Open agent connections (verified or not). */
size_t pw_listener_connections(const pw_listener_t *l);

/* Sends a command to the agent of host `h`. Returns 0, PW_ECLOSED (no session), or a
 * TLS/codec error. */
int pw_listener_send_command(pw_listener_t *l, const pw_host_t *h,
                             const Poolwatch__V1__Command *cmd);

/* The group commit now (what the commit timer runs when opts->commit says it is due):
 * commits, acks what became durable, then compacts closed chunks within
 * PW_LISTENER_COMPACT_BUDGET_MS. */
void pw_listener_commit(pw_listener_t *l);

#endif /* PW_LISTENER_H */
