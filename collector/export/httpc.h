/* httpc.h: a small asynchronous HTTP/1.1 client on a libuv loop: POST a body with headers to
 * one URL, over plain TCP (http://) or TLS (https://, common/tls.h: the server's certificate is
 * verified against a CA file and the URL's host name; an optional client certificate), one
 * request at a time, one connection per request (`Connection: close`), a timeout from the
 * start of the attempt (name lookup, connect, handshake) to the end of the response. The
 * response's status line and headers are read with http-parser; its body is read and dropped,
 * or kept up to max_body bytes (pw_httpc_body). Used by remote_write.c (Prometheus remote
 * write) and fleetq.c (PromQL queries of the global fleet view). */
#ifndef PW_HTTPC_H
#define PW_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "error.h"
#include "net.h"
#include "url.h"

/* Parses `url` with common/url.h's pw_url_parse_request, for an option named `opt`
 * ("remote_write.url"). Returns 0 or PW_ECONFIG with d->field = opt and d->msg
 * "<opt>: <url>: <reason>". */
int pw_httpc_parse_url(const char *url, const char *opt, pw_url_t *out, pw_diag_t *d);

typedef struct pw_httpc_opts_s {
    const char *url;       /* required */
    const char *opt_name;  /* option name for messages, e.g. "remote_write.url" */
    const char *ca_file;   /* https: trusted CAs; NULL/"" = /etc/ssl/certs/ca-certificates.crt */
    const char *cert_file; /* https: optional client certificate (PEM) */
    const char *key_file;  /* its key; required with cert_file */
    uint64_t timeout_ms;   /* one request; 0 = 10000 */
    size_t max_body;       /* response body bytes kept for pw_httpc_body; 0 = none kept. A
                              longer body ends the request with PW_ETOOBIG */
} pw_httpc_opts_t;

typedef struct pw_httpc_s pw_httpc_t;

/* The end of a request: `result` is the HTTP status (100..999) of a complete response, or a
 * negative code: a libuv code when the name lookup or the connect fails (UV_EAI_NONAME,
 * UV_ECONNREFUSED, ...: pw_strerror names them), PW_ETIMEDOUT, PW_ECLOSED (the connection
 * failed or closed before a complete response), PW_EAUTH / PW_ETLS (TLS: certificate or
 * protocol), PW_EPROTO (a response http-parser refuses), PW_ENOMEM. Called once per accepted
 * pw_httpc_post, from the loop, never inside pw_httpc_post; it may call pw_httpc_post. */
typedef void (*pw_httpc_done_cb)(void *arg, int result);

/* Creates a client for opts->url on `loop` (borrowed; it must outlive the client). For https
 * the TLS context is loaded here. Returns 0 and *out, PW_ECONFIG (URL; d->field is
 * opts->opt_name), PW_ETLS (CA, certificate or key file: tls.h's message), PW_EINVAL or
 * PW_ENOMEM. */
int pw_httpc_new(uv_loop_t *loop, const pw_httpc_opts_t *opts, pw_httpc_t **out, pw_diag_t *d);

/* Sends POST <path> with `headers` (borrowed: zero or more complete "Name: value\r\n" lines;
 * Host, Content-Length and Connection are added here) and body[0..len) (copied).
 * Returns 0 (cb will be called), PW_EAGAIN (a request is in flight), PW_ECLOSED (closing) or
 * PW_ENOMEM. */
int pw_httpc_post(pw_httpc_t *c, const char *headers, const void *body, size_t len,
                  pw_httpc_done_cb cb, void *arg);

/* The body of the last completed response (max_body > 0), valid until the next pw_httpc_post
 * or pw_httpc_close; *len its length. NOT NUL-terminated. Empty before the first response. */
const uint8_t *pw_httpc_body(const pw_httpc_t *c, size_t *len);

/* 1 while a request is in flight. */
int pw_httpc_busy(const pw_httpc_t *c);

/* Stops: a request in flight is abandoned without its callback; the client is freed once
 * libuv has closed its handles (run the loop to finish). Accepts NULL. */
void pw_httpc_close(pw_httpc_t *c);

#endif /* PW_HTTPC_H */
