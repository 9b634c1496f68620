/* client.h: the CLI's small blocking HTTP(S) client for the query API (docs/openapi.json).
 *
 * One request per connection ("Connection: close"): connect (non-blocking connect bounded by
 * the timeout), TLS with OpenSSL verifying the server's chain against a CA file and its name
 * against the URL's host (DNS name or IP address), an HTTP/1.1 request with Content-Length,
 * and the response read with Debian's http-parser (libhttp-parser-dev), never by hand.
 * Plain http:// URLs are accepted too (local tests, a reverse proxy on loopback).
 */
#ifndef PW_CLI_CLIENT_H
#define PW_CLI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "url.h" /* pw_url_t, pw_url_parse, pw_url_escape */

#define PW_CLIENT_MAX_BODY   ((size_t)256 << 20) /* response body ceiling, bytes */
#define PW_CLIENT_TIMEOUT_MS 30000               /* default connect / read / write timeout */
#define PW_CLIENT_HOST_MAX   PW_URL_HOST_MAX

typedef struct pw_client_s {
    pw_url_t url;
    const char *token;   /* bearer token, borrowed; NULL or "" = no Authorization header */
    const char *ca_file; /* PEM CA bundle to verify the server, borrowed; NULL = system store */
    int timeout_ms;      /* 0 = PW_CLIENT_TIMEOUT_MS */
} pw_client_t;

typedef struct pw_client_resp_s {
    int status;             /* HTTP status code */
    char content_type[128]; /* "" when absent, truncated when longer */
    char *body;             /* NUL-terminated, pw_malloc'd (pw_client_resp_close frees) */
    size_t body_len;        /* bytes, excluding the NUL */
} pw_client_resp_t;

/* Called while a request body is sent: bytes sent so far and the total, in bytes. */
typedef void (*pw_client_progress_cb)(uint64_t sent, uint64_t total, void *arg);

/* Sends `method` `path` (starting with '/', with its query, already escaped; the URL's base is
 * prepended) with an optional body (`body_len` bytes, with Content-Type `content_type`) and
 * reads the whole response into `resp` (initialised by the call). Returns 0 whatever the
 * HTTP status (check resp->status), or a negative code with diag set: PW_EIO (resolve,
 * connect, send, receive), PW_ETIMEDOUT, PW_ETLS (handshake), PW_EAUTH (server certificate or
 * name not accepted), PW_EPROTO (malformed HTTP response), PW_ETOOBIG (body over
 * PW_CLIENT_MAX_BODY), PW_ENOMEM. `progress` may be NULL. */
int pw_client_request(const pw_client_t *c, const char *method, const char *path,
                      const char *content_type, const void *body, size_t body_len,
                      pw_client_progress_cb progress, void *arg, pw_client_resp_t *resp,
                      pw_diag_t *diag);

/* Parses a complete raw HTTP/1.x response (`len` bytes, the connection closed after it) into
 * `resp` with http-parser, as pw_client_request does. For tests and canned responses.
 * Returns 0, PW_EPROTO (malformed or incomplete), PW_ETOOBIG or PW_ENOMEM. */
int pw_client_response_parse(const char *data, size_t len, pw_client_resp_t *resp, pw_diag_t *diag);

/* Frees the body; accepts NULL and closed responses. */
void pw_client_resp_close(pw_client_resp_t *resp);

#endif /* PW_CLI_CLIENT_H */
