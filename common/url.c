/* url.c: URL parsing and escaping (see url.h). */
#include "url.h"

#include <stdio.h>
#include <string.h>

#define BAD(field, off, ...) pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(off), field, __VA_ARGS__)

static int lower_eq(const char *a, size_t n, const char *lit)
{
    if (strlen(lit) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = a[i] >= 'A' && a[i] <= 'Z' ? (char)(a[i] - 'A' + 'a') : a[i];
        if (c != lit[i])
            return 0;
    }
    return 1;
}

static int is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 3986 reg-name and IPv4 bytes; inside brackets the IPv6 bytes and a zone ("%eth0"). */
static int host_byte_ok(char c, int v6)
{
    if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '%')
        return 1;
    return v6 ? c == ':' : strchr("!$&'()*+,;=", c) != NULL && c != '\0';
}

static int parse(const char *url, int base_only, pw_url_t *out, pw_diag_t *d)
{
    memset(out, 0, sizeof(*out));
    if (url == NULL || *url == '\0')
        return BAD("url", 0, "no URL");
    const char *sep = strstr(url, "://");
    size_t schl = sep ? (size_t)(sep - url) : 0;
    for (size_t i = 0; sep && i < schl; i++)
        if (!is_alnum(url[i]) && url[i] != '+' && url[i] != '-' && url[i] != '.')
            sep = NULL; /* "host:port/a://b": no scheme at all */
    if (sep == NULL || schl == 0)
        return BAD("url", 0, "not an http[s]://host[:port][/path] URL");
    if (lower_eq(url, schl, "https"))
        out->tls = 1;
    else if (!lower_eq(url, schl, "http"))
        return BAD("scheme", 0, "the scheme must be http:// or https://");
    const char *p = sep + 3;
    size_t auth_len = strcspn(p, "/?#");
    const char *end = p + auth_len;
    if (memchr(p, '@', auth_len) != NULL)
        return BAD("userinfo", p - url, "user info (user@) in the URL is not supported");
    const char *host = p, *host_end, *port = NULL;
    int v6 = *host == '[';
    if (v6) {
        host++;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (host_end == NULL)
            return BAD("host", p - url, "IPv6 address without ']'");
        if (host_end + 1 < end) {
            if (host_end[1] != ':')
                return BAD("host", host_end + 1 - url, "junk after the IPv6 address");
            port = host_end + 2;
        }
    } else {
        host_end = memchr(host, ':', (size_t)(end - host));
        if (host_end != NULL)
            port = host_end + 1;
        else
            host_end = end;
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof(out->host))
        return BAD("host", host - url, "empty host, or longer than %zu bytes",
                   sizeof(out->host) - 1);
    for (const char *c = host; c < host_end; c++)
        if (!host_byte_ok(*c, v6))
            return BAD("host", c - url, "byte 0x%02x not allowed in a host",
                       (unsigned)(unsigned char)*c);
    memcpy(out->host, host, hlen);
    unsigned long v = out->tls ? 443 : 80;
    if (port != NULL) {
        size_t plen = (size_t)(end - port);
        v = 0;
        for (size_t i = 0; i < plen && v <= 65535; i++) {
            if (port[i] < '0' || port[i] > '9')
                return BAD("port", port - url, "port is not a number in 1..65535");
            v = v * 10 + (unsigned long)(port[i] - '0');
        }
        if (plen == 0 || v == 0 || v > 65535)
            return BAD("port", port - url, "port is not a number in 1..65535");
    }
    snprintf(out->port, sizeof(out->port), "%lu", v);
    const char *path = end;
    size_t pl = strcspn(path, "#");
    if (base_only && (path[pl] == '#' || memchr(path, '?', pl) != NULL))
        return BAD("url", path - url, "query or fragment in a base URL");
    if (pl >= sizeof(out->path))
        return BAD("path", path - url, "path longer than %zu bytes", sizeof(out->path) - 1);
    for (size_t i = 0; i < pl; i++)
        if ((unsigned char)path[i] <= ' ' || path[i] == 0x7f)
            return BAD("path", path + i - url, "control byte or space in path");
    if (pl == 0)
        memcpy(out->path, "/", 2);
    else
        memcpy(out->path, path, pl);
    size_t bl = strcspn(path, "?#");
    while (bl > 0 && path[bl - 1] == '/')
        bl--;
    memcpy(out->base, path, bl);
    return 0;
}

int pw_url_parse_request(const char *url, pw_url_t *out, pw_diag_t *d)
{
    return parse(url, 0, out, d);
}

int pw_url_parse(const char *url, pw_url_t *out, pw_diag_t *d)
{
    return parse(url, 1, out, d);
}

int pw_url_escape(char *out, size_t out_size, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        size_t need = plain ? 1 : 3;
        if (n + need >= out_size) {
            out[n] = '\0';
            return PW_ETOOBIG;
        }
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
    return (int)n;
}
