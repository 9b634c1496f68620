/* url.h: the one parser of http:// and https:// URLs: the CLI's server URL (cli/client.c),
 * the collector's remote-write, webhook and Alertmanager URLs (collector/httpc.c, notify.c),
 * and the percent-encoding of path segments.
 *
 * Accepted: "http[s]://host[:port][/path][?query][#fragment]", the scheme in any case; host a
 * DNS name, an IPv4 address or a bracketed IPv6 address ("[::1]", zone allowed); the port
 * decimal 1..65535 (80 / 443 when absent). Refused: user info ("user@host"), control bytes
 * and spaces in the path. Pure (no I/O, no name resolution).
 */
#ifndef PW_URL_H
#define PW_URL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_URL_HOST_MAX 256  /* host buffer incl. NUL (DNS names are <= 253 bytes) */
#define PW_URL_PATH_MAX 1024 /* path buffers incl. NUL */

typedef struct pw_url_s {
    int tls;                    /* 1 for https, 0 for http */
    char host[PW_URL_HOST_MAX]; /* name or IP literal, without the [] of IPv6 */
    char port[8];               /* decimal; 443 / 80 by default */
    char path[PW_URL_PATH_MAX]; /* path and query as written, "/" when none (no fragment) */
    char base[PW_URL_PATH_MAX]; /* the path without query and trailing '/': "" for the root,
                                   the prefix a client puts before its own paths */
} pw_url_t;

/* Parses a request URL: any path and query (the fragment is dropped). Returns 0, or PW_EINVAL
 * with `d` set (may be NULL): d->offset where in `url`; d->field says what is wrong, for
 * callers that word it their own way: "url" (not scheme://host...), "scheme" (not http or
 * https), "userinfo", "host", "port", "path"; d->msg is the reason alone, without the URL
 * ("the scheme must be http:// or https://"). `out` is zeroed first. */
int pw_url_parse_request(const char *url, pw_url_t *out, pw_diag_t *d);

/* Parses a base URL ("https://collector.example:8443", "http://127.0.0.1:8080/pw/"): as
 * pw_url_parse_request, and a query or fragment is refused too (field "url"). */
int pw_url_parse(const char *url, pw_url_t *out, pw_diag_t *d);

/* Appends `s` percent-encoded (RFC 3986: everything but ALPHA DIGIT - . _ ~) to `out`
 * (NUL-terminated, size out_size). Returns the new length, or PW_ETOOBIG when it does not fit
 * (out is then truncated but terminated). Tags keep their spaces as %20 ("Io%20%20"). */
int pw_url_escape(char *out, size_t out_size, const char *s);

#endif /* PW_URL_H */
