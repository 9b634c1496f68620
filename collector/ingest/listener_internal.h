/* listener_internal.h: the listener's state and its sessions, shared by listener.c (accept,
 * limits, group commit) and session.c (the per-connection state machine). */
#ifndef PW_LISTENER_INTERNAL_H
#define PW_LISTENER_INTERNAL_H

#include "buf.h"
#include "frame.h"
#include "listener.h"
#include "log.h"

typedef struct {
    char ip[64];
    uint32_t count; /* sessions from this address without a verified Hello yet */
} pw_ipslot_t;

typedef enum { PW_SESSION_HANDSHAKE, PW_SESSION_STREAMING } pw_session_state_t;

typedef struct pw_session_s {
    pw_listener_t *l;
    pw_tls_conn_t *tls;
    uv_timer_t timer; /* handshake timeout, then idle timeout */
    int timer_closed;
    pw_session_state_t state;
    pw_frame_reader_t reader;
    pw_host_t *host;
    uint8_t agent_id[64]; /* of its Hello, for the twin warning of a session replacing it */
    size_t agent_id_len;
    char peer[64];
    pw_ipslot_t *ip; /* counted there until its Hello is verified (ip_counted) */
    int ip_counted;
    uint64_t accepted_ms; /* uv_now() at accept */
    uint64_t pending_seq; /* highest seq put into the store, not yet acked */
    uint64_t acked_seq;
    int clock_warned;         /* the sample times are far from this collector's clock: */
    uint64_t clock_warned_ms; /* said at this uv_now() */
    struct pw_session_s *next, *prev;
} pw_session_t;

struct pw_listener_s {
    uv_loop_t *loop;
    pw_listener_opts_t o;
    pw_ingest_t *ing;
    uv_tcp_t server;
    int port;
    uv_timer_t commit_timer;  /* one-shot, at the pending samples' commit deadline */
    uv_timer_t compact_timer; /* every PW_LISTENER_COMPACT_TICK_MS: compaction while idle */
    pw_commit_t commit;       /* samples put since the last group commit (commit.h) */
    uint64_t compacted_ms;    /* uv_now() of the last compaction */
    int started;              /* listening: stop commits what is pending */
    pw_session_t *sessions;
    size_t n_sessions;
    pw_ipslot_t *iptab;
    pw_buf_t out;
    pw_complaint_t c_store, c_conns, c_twins, c_handshake;
    /* The last clock warning (session.c): its host and uv_now() ms, so that sessions of one
     * host replacing each other do not repeat it. */
    char clock_host[256];
    uint64_t clock_ms;
    int handles; /* libuv handles still open; the listener is freed when it reaches 0 */
};

/* session.c */
extern const pw_tls_cbs_t pw__session_cbs;
void pw__session_close(pw_session_t *k, const char *why);
int pw__session_send(pw_session_t *k, const Poolwatch__V1__Envelope *env);
void pw__session_send_ack(pw_session_t *k, uint64_t seq, int need_keyframe);
void pw__session_start_timer(pw_session_t *k, uint64_t ms);
/* The session's Hello was verified: it no longer counts against its address's limit. */
void pw__session_uncount_ip(pw_session_t *k);

/* listener.c: a session put a sample of `bytes` frame bytes into the store: arms the group
 * commit (now when a bound of the policy is reached, else at its deadline). */
void pw__listener_stored(pw_listener_t *l, uint64_t bytes);

/* listener.c: the store rolled back: sessions whose samples were lost restart. */
void pw__listener_store_failed(pw_listener_t *l, int r, const char *msg);

#endif /* PW_LISTENER_INTERNAL_H */
