/* uplink.h: the agent's connection to a collector: mutual TLS (common/tls.h) to one of a
 * list of endpoints tried in turn, reconnect with jittered exponential backoff (1 s -> 5 min
 * by default), framing of Envelopes in both directions.
 *
 * The uplink knows nothing of samples: the agent sends Hello and samples with
 * pw_uplink_send_frame and reacts to the collector's messages in on_envelope.
 */
#ifndef PW_UPLINK_H
#define PW_UPLINK_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "backoff.h" /* pw_backoff_t: the reconnect delays */
#include "error.h"
#include "poolwatch.pb-c.h"

/* ---- uplink --------------------------------------------------------------------------------- */

typedef struct pw_uplink_s pw_uplink_t;

typedef struct pw_uplink_cbs_s {
    /* TLS is up and the collector's certificate and name were verified: send the Hello. */
    void (*on_connected)(pw_uplink_t *up, void *arg);
    /* One message from the collector, borrowed for the call. */
    void (*on_envelope)(pw_uplink_t *up, const Poolwatch__V1__Envelope *env, void *arg);
    /* The session ended (status 0 = orderly); a reconnect is scheduled after `retry_ms`. */
    void (*on_disconnected)(pw_uplink_t *up, int status, const char *msg, uint64_t retry_ms,
                            void *arg);
} pw_uplink_cbs_t;

typedef struct pw_uplink_opts_s {
    const char *const *endpoints; /* "host:port" strings, tried in turn; borrowed until close */
    size_t n_endpoints;
    const char *server_name; /* name the collector's certificate must carry; NULL = the
                                endpoint's host */
    const char *ca_file;     /* CA that signed the collector's certificate */
    const char *cert_file;   /* the agent's client certificate (names its host) */
    const char *key_file;
    const char *crl_file;        /* the CA's CRL(s) checked against the collector's
                                    certificate; NULL/"" = none */
    uint64_t backoff_min_ms;     /* 0 = 1,000 */
    uint64_t backoff_max_ms;     /* 0 = 300,000 */
    uint64_t connect_timeout_ms; /* TCP + TLS handshake; 0 = 10,000 */
    uint64_t healthy_ms;         /* a session acked this long after it started is healthy (the
                                    backoff starts over); 0 = 30,000 */
    size_t max_frame;            /* largest frame accepted from the collector; 0 = 4 MiB */
} pw_uplink_opts_t;

/* Creates an uplink on `loop` (not started). Returns 0, PW_EINVAL (no endpoint), PW_ETLS /
 * PW_EIO (certificate files: `d` says which), PW_ENOMEM. */
int pw_uplink_new(uv_loop_t *loop, const pw_uplink_opts_t *opts, const pw_uplink_cbs_t *cbs,
                  void *arg, pw_uplink_t **out, pw_diag_t *d);

/* Starts connecting (first endpoint now). Returns 0. */
int pw_uplink_start(pw_uplink_t *up);

/* Queues one frame (4-byte length + Envelope bytes, as pw_codec_pack_frame makes it) for the
 * collector. Returns 0, PW_ECLOSED when no session is up, or the TLS layer's error. */
int pw_uplink_send_frame(pw_uplink_t *up, const void *frame, size_t len);

/* Packs and sends an Envelope. Returns as pw_uplink_send_frame or PW_EFRAMETOOBIG. */
int pw_uplink_send(pw_uplink_t *up, const Poolwatch__V1__Envelope *env);

/* 1 while a verified session is up. */
int pw_uplink_is_up(const pw_uplink_t *up);

/* Bytes queued for the collector and not yet written to the socket. */
size_t pw_uplink_queued_bytes(const pw_uplink_t *up);

/* The collector acked (our Hello or samples). Once an ack arrives healthy_ms or more after
 * the session started, the session is healthy and the next reconnect starts again from the
 * shortest delay; an ack sooner changes nothing, so that a collector that acks the Hello and
 * then fails (its store's disk full) sees this agent back off, not reconnect at once. */
void pw_uplink_mark_healthy(pw_uplink_t *up);

/* Ends the current session (the collector misbehaved) and schedules a reconnect. */
void pw_uplink_drop(pw_uplink_t *up, const char *why);

/* Endpoint of the current or last attempt ("host:port"). */
const char *pw_uplink_endpoint(const pw_uplink_t *up);

/* Reads the CA, certificate, key and CRL files again (the paths of the options) into a new TLS
 * context used from the next connection on; the current connection, if any, keeps the one it
 * started with. Returns 0, or the error of pw_tls_ctx_new (PW_ETLS, PW_EIO, PW_ENOMEM) with `d`
 * saying which file: then the previous context stays in use. The uplink also does this by
 * itself before a connection attempt when the files' contents changed (a renewed certificate
 * is used at the next reconnect without a restart), logging what it did, and warns once a day
 * from PW_TLS_EXPIRY_WARN_S before its certificate or the CA expires. */
int pw_uplink_reload_tls(pw_uplink_t *up, pw_diag_t *d);

/* Stops everything; `up` is freed once its handles have closed (run the loop). */
void pw_uplink_close(pw_uplink_t *up);

#endif /* PW_UPLINK_H */
