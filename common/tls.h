/* tls.h: mutual TLS over libuv TCP streams, shared by the agent (client) and the collector
 * (server).
 *
 * OpenSSL runs over two memory BIOs: ciphertext read from the socket by libuv is written into
 * the read BIO, and whatever OpenSSL produces (handshake messages, records, alerts) is drained
 * from the write BIO into uv_write requests that own their buffers. No OpenSSL type or error
 * code crosses this header: failures are PW_ETLS (protocol/library errors) or PW_EAUTH
 * (certificate or host name not accepted, by us or by the peer), with OpenSSL's text in the
 * message.
 *
 * Policy (not configurable, on purpose): TLS 1.2 minimum, TLS 1.3 preferred; a server REQUIRES
 * a client certificate and verifies it against its CA file; a client verifies the server's
 * certificate against its CA file and the expected host name (DNS SAN, or IP SAN for an IP
 * literal). There is no switch that turns verification off. One exception, opted into per
 * context: a server context with `no_client_cert` set does not ask for a client certificate
 * (the collector's HTTP API, where bearer tokens authenticate browsers and scripts).
 *
 * Life cycle (libuv's rules): a pw_tls_conn_t embeds its uv_tcp_t and is freed only after the
 * handle's close callback, right after the user's on_close returns. on_close is called exactly
 * once per successfully created connection, and is the last callback. Connections are never
 * freed inside their own callback chain: pw_tls_close() from any callback only starts the
 * close.
 *
 * Threads: a context and all its connections must be used from one thread (they share read
 * buffers held by the context); use one context per thread/loop if you have several.
 */
#ifndef PW_TLS_H
#define PW_TLS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "error.h"

typedef struct pw_tls_ctx_s pw_tls_ctx_t;
typedef struct pw_tls_conn_s pw_tls_conn_t;

typedef enum {
    PW_TLS_CLIENT = 1, /* the agent, the CLI: connects, verifies the server and its name */
    PW_TLS_SERVER = 2  /* the collector: accepts, requires and verifies client certificates */
} pw_tls_role_t;

/* Files are PEM. All paths are borrowed for the duration of pw_tls_ctx_new(). */
typedef struct pw_tls_ctx_opts_s {
    pw_tls_role_t role;
    const char *ca_file;   /* trusted CA certificate(s); required */
    const char *cert_file; /* own certificate (chain, leaf first); required for a server */
    const char *key_file;  /* private key of cert_file; required when cert_file is set */
    int no_client_cert;    /* server only: 1 = do not request a client certificate (the HTTP
                              API authenticates with bearer tokens); 0 (default) = require and
                              verify one. PW_EINVAL on a client context. */
    const char *crl_file;  /* PEM file with the CA's certificate revocation list(s) (deploy/
                              pki.sh --revoke writes crl.pem); NULL or "" = no revocation
                              check. When set, a peer certificate is refused (PW_EAUTH,
                              "certificate revoked") when listed, and also when the file has no
                              CRL of its issuer or that CRL is past its nextUpdate (OpenSSL's
                              X509_V_FLAG_CRL_CHECK: a stale list is not trusted). */
} pw_tls_ctx_opts_t;

/* Callbacks of one connection. `conn` is valid during each call. Any callback may call
 * pw_tls_write() and pw_tls_close() on its own connection. */
typedef struct pw_tls_cbs_s {
    /* Handshake finished and the peer's certificate (and, on a client, the host name) was
     * verified. Optional (NULL). Note for clients: in TLS 1.3 the client finishes before the
     * server has checked the client certificate, so a refusal arrives afterwards as an
     * on_close with PW_EAUTH. */
    void (*on_established)(pw_tls_conn_t *conn);

    /* Decrypted application data: `len` bytes (1 .. 16384) borrowed for this call only.
     * Record boundaries mean nothing: frame the stream yourself. Required. */
    void (*on_data)(pw_tls_conn_t *conn, const uint8_t *data, size_t len);

    /* The connection is closed; called once, last. `status` is 0 for an orderly close (our
     * pw_tls_close(), or the peer's close_notify), otherwise a negative code:
     *   PW_EAUTH     certificate/host name refused by us, or the peer refused ours (alert);
     *   PW_ETLS      other TLS failure (bad record, version/cipher mismatch, OpenSSL error);
     *   PW_ECLOSED   the peer closed the TCP connection without close_notify (also during
     *                the handshake);
     *   a libuv code (UV_ECONNREFUSED, UV_ECONNRESET, UV_ETIMEDOUT ...) for socket errors.
     * `msg` is a NUL-terminated human-readable reason ("" when status is 0), with OpenSSL's
     * text for TLS failures (X509_verify_cert_error_string for verification failures);
     * borrowed for this call. After on_close returns, `conn` is freed: do not use it again.
     * Required. */
    void (*on_close)(pw_tls_conn_t *conn, int status, const char *msg);
} pw_tls_cbs_t;

/* ---- contexts ------------------------------------------------------------------------- */

/* The TLS library this process runs and where its code lives, for logs and the agent's status:
 * "OpenSSL 3.0.17 1 Jul 2025, linked in" when OpenSSL is part of the executable (the agent:
 * PW_AGENT_STATIC_OPENSSL; its security updates need a rebuild), "..., shared
 * /usr/lib/x86_64-linux-gnu/libcrypto.so.3" otherwise. The version is
 * OpenSSL_version(OPENSSL_VERSION), the code actually running, not the headers built against;
 * the place comes from dladdr(3) (GetModuleHandleExW on Windows). Static string, never NULL;
 * computed at the first call (not thread safe: call it from the loop thread). */
const char *pw_tls_library(void);

/* Whether the certificate in the PEM file `cert_file` names `host` as the collector will check
 * it (X509_check_host, no wildcards: DNS SANs, else the CN; case does not matter). Returns 1
 * (it does), 0 (it does not: `names` gets the names it has, "CN x, DNS y, ..."), or PW_ETLS
 * when the file cannot be read as a certificate. `names` (size bytes) may be NULL. */
int pw_tls_cert_names_host(const char *cert_file, const char *host, char *names, size_t size);

/* Creates a context: loads the CA file as the only trust anchor, the own certificate and key
 * (checked to match), and sets the policy above. Server contexts also disable session
 * resumption and tickets (every connection is fully verified).
 * On success stores a new context in *out (release with pw_tls_ctx_free) and returns 0.
 * Errors: PW_EINVAL (NULL/missing arguments, unknown role, key without cert), PW_ETLS (a file
 * cannot be read or parsed, key does not match certificate: OpenSSL's text and the file name
 * in `diag`), PW_ENOMEM. *out is untouched on failure. `diag` may be NULL. */
int pw_tls_ctx_new(pw_tls_ctx_t **out, const pw_tls_ctx_opts_t *opts, pw_diag_t *diag);

/* When the certificates of `ctx` expire, as Unix seconds (the notAfter field, RFC 5280
 * 4.1.2.5): *cert_s the context's own certificate (0 when it has none: a client without a
 * certificate), *ca_s the earliest of the trusted CA certificates. Either pointer may be NULL.
 * Returns 0, or PW_EINVAL for a NULL ctx. */
int pw_tls_ctx_not_after(const pw_tls_ctx_t *ctx, int64_t *cert_s, int64_t *ca_s);

/* PW_TLS_EXPIRY_WARN_S: how long before a certificate expires the daemons start to warn (14
 * days; the collector also exports the time left as poolwatch_cert_expiry_seconds). */
#define PW_TLS_EXPIRY_WARN_S (14 * 86400)

/* Whether a certificate of `ctx` (its own, or the earliest CA) expires within `within_s`
 * seconds of `now_s` (Unix seconds) or has expired. Returns 1 and writes into msg[0..size)
 * what and when ("the certificate expires on 2026-12-10 12:00:00 UTC, in 9 days"; the own
 * certificate first when both do), or 0 (msg = "") when neither does; PW_EINVAL for NULL. */
int pw_tls_ctx_expiry_check(const pw_tls_ctx_t *ctx, int64_t now_s, int64_t within_s, char *msg,
                            size_t size);

/* SHA-256 over the contents of the files a context is made from (ca_file, cert_file,
 * key_file, crl_file of `opts`, each preceded by its length; a missing or unreadable file
 * counts as empty), so that a caller can tell whether they changed since the context was made
 * (the agent makes a new context on reconnect when they did). Files above 16 MiB are hashed
 * by their first 16 MiB. Returns 0, or PW_EINVAL (NULL argument) / PW_ENOMEM. */
int pw_tls_files_digest(const pw_tls_ctx_opts_t *opts, uint8_t out[32]);

/* Drops the caller's reference. Connections hold their own reference, so a context may be
 * freed while its connections are still open; it goes away with the last of them. NULL is
 * accepted. */
void pw_tls_ctx_free(pw_tls_ctx_t *ctx);

/* ---- connections ---------------------------------------------------------------------- */

/* Client: opens a TCP connection on `loop` to `addr` (sockaddr_in or sockaddr_in6, borrowed)
 * and runs the handshake, verifying that the server's certificate names `expected_host` (a
 * DNS name, checked against DNS SANs, CN only when the certificate has no SAN; or an IPv4/IPv6
 * literal, checked against IP SANs). `expected_host` is copied and is also sent as SNI when it
 * is a name. `ctx` must be a PW_TLS_CLIENT context; the connection keeps a reference.
 * `cbs` is copied; `data` is the user pointer (pw_tls_data). TCP_NODELAY is set.
 * On success stores the connection in *out and returns 0: every later outcome, including a
 * failed TCP connect, is reported through the callbacks (on_close exactly once).
 * Errors (no callback will be called, *out untouched): PW_EINVAL (bad arguments, server
 * context, empty host name), PW_ENOMEM, PW_ETLS, or a libuv code from uv_tcp_connect. On
 * failure a half-made TCP handle may still be closing on `loop` (freed on its next turn). */
int pw_tls_connect(pw_tls_conn_t **out, uv_loop_t *loop, pw_tls_ctx_t *ctx,
                   const struct sockaddr *addr, const char *expected_host, const pw_tls_cbs_t *cbs,
                   void *data, pw_diag_t *diag);

/* Server: accepts one pending connection from `server` (call it from the listener's
 * uv_connection_cb) and waits for the client's handshake. `ctx` must be a PW_TLS_SERVER
 * context. `cbs` is copied, `data` is the user pointer. TCP_NODELAY is set.
 * Returns 0 and stores the connection in *out; outcomes come through the callbacks.
 * Errors (no callback, *out untouched): PW_EINVAL, PW_ENOMEM, PW_ETLS, or a libuv code from
 * uv_accept. If it fails, the pending connection may still be queued on `server` and libuv
 * stops accepting until it is taken: call pw_net_reject(server) (net.h) to drop it. */
int pw_tls_accept(pw_tls_conn_t **out, uv_stream_t *server, pw_tls_ctx_t *ctx,
                  const pw_tls_cbs_t *cbs, void *data, pw_diag_t *diag);

/* Encrypts `len` bytes of `data` (borrowed; copied as ciphertext before returning) and queues
 * them on the socket. Bytes are delivered in order; there is no size limit per call (a 1 MiB
 * call makes one ~1 MiB write request). Use pw_tls_write_queue_bytes() for back-pressure.
 * Returns 0 (also for len 0), or:
 *   PW_EAGAIN   the handshake has not finished (wait for on_established);
 *   PW_ECLOSED  the connection is closing or closed (pw_tls_close, or an error);
 *   PW_EINVAL   NULL arguments;
 *   PW_ETLS / PW_ENOMEM / a libuv code: the connection failed and is now closing (on_close
 *               will report the same code). */
int pw_tls_write(pw_tls_conn_t *conn, const void *data, size_t len);

/* Starts an orderly close: sends close_notify if the handshake finished, then closes the
 * socket without waiting (writes still queued in libuv may be cancelled). on_close follows
 * from the loop with status 0, unless an error was already being reported. Idempotent; safe
 * from any callback of this connection (the memory is freed later, never inside it). */
void pw_tls_close(pw_tls_conn_t *conn);

/* 1 after on_established (handshake done, peer verified) and before the close starts, else
 * 0. Handshake timeouts are the caller's job: start a timer at connect/accept and call
 * pw_tls_close() if this is still 0 when it fires. */
int pw_tls_is_established(const pw_tls_conn_t *conn);

/* 1 once pw_tls_close() was called or an error started the close; 0 otherwise. */
int pw_tls_is_closing(const pw_tls_conn_t *conn);

/* The user pointer given at connect/accept, and a setter. */
void *pw_tls_data(const pw_tls_conn_t *conn);
void pw_tls_set_data(pw_tls_conn_t *conn, void *data);

/* The connection's TCP handle, for uv_tcp_getpeername, keepalive, etc. Borrowed: do not close
 * it, stop its reads, or write to it directly. */
uv_tcp_t *pw_tls_tcp(pw_tls_conn_t *conn);

/* Bytes of ciphertext queued in libuv and not yet handed to the kernel (stream
 * write_queue_size): grows when the peer reads slower than we write. */
size_t pw_tls_write_queue_bytes(const pw_tls_conn_t *conn);

/* Negotiated protocol ("TLSv1.3", "TLSv1.2") and cipher suite name, for logs; static
 * strings, "" before the handshake finished. */
const char *pw_tls_version(const pw_tls_conn_t *conn);
const char *pw_tls_cipher(const pw_tls_conn_t *conn);

/* ---- peer names (after on_established) ------------------------------------------------ */

#define PW_TLS_PEER_MAX_DNS 16 /* DNS SANs kept for display; matching uses all of them */

/* The verified peer certificate's subject common name, or "" when it has none / before the
 * handshake. Borrowed, valid until on_close returns. */
const char *pw_tls_peer_cn(const pw_tls_conn_t *conn);

/* 1 when the verified peer certificate's subject has an organizational unit (OU) equal to
 * `ou` (NUL-terminated, compared exactly), 0 otherwise or before the handshake. The collector
 * requires the agents' role this way ("poolwatch-agent", deploy/pki.sh). */
int pw_tls_peer_has_ou(const pw_tls_conn_t *conn, const char *ou);

/* Number of DNS SANs kept (at most PW_TLS_PEER_MAX_DNS) and the i-th of them (NULL when i is
 * out of range). Borrowed, valid until on_close returns. */
size_t pw_tls_peer_dns_count(const pw_tls_conn_t *conn);
const char *pw_tls_peer_dns(const pw_tls_conn_t *conn, size_t i);

/* Does the verified peer certificate name `host`? This is the collector's check of a Hello's
 * host name. Rules (RFC 6125 section 6.4.4, as OpenSSL X509_check_host implements them): the
 * DNS SANs are compared case-insensitively; the subject CN is consulted only when the
 * certificate has no DNS SAN at all; wildcards are NOT honoured (a client certificate must
 * name its host exactly). Returns 1 on a match, 0 on no match, before the handshake, or for
 * an empty/NULL `host`. */
int pw_tls_peer_matches(const pw_tls_conn_t *conn, const char *host);

/* The same check, also copying into out[0..size) the certificate's own spelling of the name
 * that matched (DNS names compare case-insensitively: a Hello's "HOST01" matches a certificate
 * for "host01"), so that one certificate is one host whatever case an agent sends. Returns 1
 * on a match (out set; truncated to size - 1 bytes), 0 otherwise (out = ""). */
int pw_tls_peer_match_name(const pw_tls_conn_t *conn, const char *host, char *out, size_t size);

#endif /* PW_TLS_H */
