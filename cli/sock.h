/* sock.h: the CLI's blocking TCP sockets, the one platform-specific part of its HTTP client
 * (client.c). sock_posix.c: BSD sockets; sock_win.c: Winsock (WSAStartup on first use). */
#ifndef PW_CLI_SOCK_H
#define PW_CLI_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* A connected socket: an fd on POSIX, a SOCKET on Windows. */
typedef intptr_t pw_sock_t;
#define PW_SOCK_INVALID ((pw_sock_t)-1)

/* Connects to host:port (any address getaddrinfo gives, in order), waiting at most timeout_ms
 * for each; reads and writes on the socket then block for at most timeout_ms too. Returns 0
 * with *out set (the caller's, closed with pw_sock_close), PW_ETIMEDOUT (every address timed
 * out) or PW_EIO (unresolved, refused: `d` says which and why). */
int pw_sock_connect(const char *host, const char *port, int timeout_ms, pw_sock_t *out,
                    pw_diag_t *d);

/* Sends up to n bytes (n <= 1 MiB); returns the count sent (> 0), PW_ETIMEDOUT or PW_EIO with
 * `d` set. A peer that hung up gives PW_EIO, never a signal. */
long pw_sock_send(pw_sock_t s, const void *p, size_t n, pw_diag_t *d);

/* Receives up to n bytes (n <= 1 MiB); returns the count (0 at end of stream), PW_ETIMEDOUT or
 * PW_EIO with `d` set. */
long pw_sock_recv(pw_sock_t s, void *p, size_t n, pw_diag_t *d);

/* Closes s; accepts PW_SOCK_INVALID. */
void pw_sock_close(pw_sock_t s);

/* For a TLS library's own reads on the socket (OpenSSL's SSL_ERROR_SYSCALL): pw_sock_err_clear
 * before the call, then pw_sock_err_state: 0 no socket error (the peer closed), 1 the read or
 * write timed out, 2 another error. */
void pw_sock_err_clear(void);
int pw_sock_err_state(void);

/* 1 when host is an IPv4 or IPv6 literal, else 0. */
int pw_sock_is_ip_literal(const char *host);

#endif /* PW_CLI_SOCK_H */
