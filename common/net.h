/* net.h: small libuv helpers shared by the agent, the collector and their tests: endpoint
 * strings, numeric addresses, listener ports, and the "close then free" pattern. */
#ifndef PW_NET_H
#define PW_NET_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "error.h"

#define PW_NET_HOST_MAX 256 /* host name buffer size incl. NUL (DNS names are <= 253) */

/* Splits an endpoint string "host:port", "[v6addr]:port", "host" or "[v6addr]" into `host`
 * (NUL-terminated, brackets removed, at most host_size - 1 bytes) and *port; a missing port
 * gives `default_port`. The port must be 1..65535 in decimal. A bare IPv6 address without
 * brackets ("::1") is accepted as a host with the default port.
 * Returns 0, or PW_EINVAL (empty host, bad port, unbalanced bracket; what and where in
 * `diag`), or PW_ETOOBIG (host longer than host_size - 1). Outputs untouched on failure. */
int pw_net_split_host_port(const char *s, uint16_t default_port, char *host, size_t host_size,
                           uint16_t *port, pw_diag_t *diag);

/* 1 if `host` is a numeric IPv4 or IPv6 address, 0 otherwise (names, NULL). */
int pw_net_is_ip_literal(const char *host);

/* Fills `out` from a numeric IPv4/IPv6 address and a port (host order). No name resolution.
 * Returns 0 or PW_EINVAL (not a literal); `out` is untouched on failure. */
int pw_net_addr_from_literal(const char *host, uint16_t port, struct sockaddr_storage *out);

/* Formats an AF_INET/AF_INET6 address as "1.2.3.4:5" or "[::1]:5" into `out` (always
 * NUL-terminated when size > 0). Returns the length written, or PW_EINVAL (other family,
 * NULL), or PW_ETOOBIG (out too small; truncated). */
int pw_net_addr_format(const struct sockaddr *sa, char *out, size_t size);

/* The local port a TCP handle is bound to (host order): how a test that listens on port 0
 * learns its port. Returns 1..65535, or a negative libuv code. */
int pw_net_bound_port(const uv_tcp_t *tcp);

/* Accepts the pending connection on `server` into a temporary handle and closes it at once
 * (the peer sees the connection closed). For listeners that must refuse (connection caps,
 * or a failed pw_tls_accept): libuv stops accepting until the pending one is taken.
 * Returns 0 or a negative libuv/PW code; the temporary handle is freed in all cases. */
int pw_net_reject(uv_stream_t *server);

/* Closes a handle that was allocated with pw_malloc and frees it in the close callback
 * (close now, free later). The handle's `data` is not touched. Idempotent for a handle that
 * is already closing (then it does nothing: whoever closed it frees it). */
void pw_net_close_free(uv_handle_t *h);

/* Closes `h` (no close callback) if it was initialised on `loop` and is not closing yet: for
 * a caller's own handles in a zeroed struct at shutdown, whether or not start-up got as far
 * as initialising them. */
void pw_net_close_if_open(uv_handle_t *h, uv_loop_t *loop);

/* Shutdown of `loop` after its owners closed their handles: runs it until they are closed,
 * and if some handle is still open (a bug elsewhere), closes every handle and runs it again.
 * Returns uv_loop_close's result (0 when the loop is closed). */
int pw_net_loop_drain_close(uv_loop_t *loop);

/* A daemon's stop from another thread (the Windows service's control handler): one per process.
 * The running daemon publishes its uv_async_t (initialised on its loop; its callback stops the
 * loop) with pw_net_stop_publish(h), and withdraws it with pw_net_stop_publish(NULL) before
 * closing it. pw_net_stop_request, from any thread, sends it; a request that comes before a
 * handle is published is remembered and sent at publication. */
void pw_net_stop_publish(uv_async_t *h);
void pw_net_stop_request(void);

#endif /* PW_NET_H */
