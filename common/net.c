#include "net.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

int pw_net_split_host_port(const char *s, uint16_t default_port, char *host, size_t host_size,
                           uint16_t *port, pw_diag_t *diag)
{
    if (s == NULL || host == NULL || host_size == 0 || port == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "endpoint", "NULL argument");

    const char *h = s, *h_end, *p = NULL;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (rb == NULL)
            return pw_diag_set(diag, PW_EINVAL, 0, 0, "endpoint", "'%s': missing ']'", s);
        h = s + 1;
        h_end = rb;
        if (rb[1] == ':')
            p = rb + 2;
        else if (rb[1] != '\0')
            return pw_diag_set(diag, PW_EINVAL, 0, (uint64_t)(rb + 1 - s), "endpoint",
                               "'%s': expected ':port' after ']'", s);
    } else {
        const char *colon = strchr(s, ':');
        /* Two or more colons without brackets can only be a bare IPv6 address. */
        if (colon != NULL && strchr(colon + 1, ':') == NULL) {
            h_end = colon;
            p = colon + 1;
        } else {
            h_end = s + strlen(s);
        }
    }
    size_t hlen = (size_t)(h_end - h);
    if (hlen == 0)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "endpoint", "'%s': empty host", s);
    if (hlen >= host_size)
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "endpoint", "'%s': host longer than %zu", s,
                           host_size - 1);

    uint32_t pv = default_port;
    if (p != NULL) {
        if (*p == '\0')
            return pw_diag_set(diag, PW_EINVAL, 0, (uint64_t)(p - s), "port", "'%s': empty port",
                               s);
        pv = 0;
        for (const char *c = p; *c; c++) {
            if (*c < '0' || *c > '9' || pv > 65535)
                return pw_diag_set(diag, PW_EINVAL, 0, (uint64_t)(c - s), "port",
                                   "'%s': port is not a number in 1..65535", s);
            pv = pv * 10 + (uint32_t)(*c - '0');
        }
    }
    if (pv == 0 || pv > 65535)
        return pw_diag_set(diag, PW_EINVAL, 0, p ? (uint64_t)(p - s) : 0, "port",
                           "'%s': port is not a number in 1..65535", s);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)pv;
    return 0;
}

int pw_net_is_ip_literal(const char *host)
{
    struct sockaddr_storage ss;
    return host != NULL && pw_net_addr_from_literal(host, 1, &ss) == 0;
}

int pw_net_addr_from_literal(const char *host, uint16_t port, struct sockaddr_storage *out)
{
    if (host == NULL || out == NULL)
        return PW_EINVAL;
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    if (strchr(host, ':') == NULL) {
        if (uv_ip4_addr(host, port, &a4) != 0)
            return PW_EINVAL;
        memset(out, 0, sizeof(*out));
        memcpy(out, &a4, sizeof(a4));
        return 0;
    }
    if (uv_ip6_addr(host, port, &a6) != 0)
        return PW_EINVAL;
    memset(out, 0, sizeof(*out));
    memcpy(out, &a6, sizeof(a6));
    return 0;
}

int pw_net_addr_format(const struct sockaddr *sa, char *out, size_t size)
{
    if (sa == NULL || out == NULL)
        return PW_EINVAL;
    char ip[64];
    int n;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        if (uv_ip4_name(a, ip, sizeof(ip)) != 0)
            return PW_EINVAL;
        n = snprintf(out, size, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
        if (uv_ip6_name(a, ip, sizeof(ip)) != 0)
            return PW_EINVAL;
        n = snprintf(out, size, "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
    } else {
        return PW_EINVAL;
    }
    if (n < 0)
        return PW_EINVAL;
    if ((size_t)n >= size)
        return PW_ETOOBIG;
    return n;
}

int pw_net_bound_port(const uv_tcp_t *tcp)
{
    struct sockaddr_storage ss;
    int len = (int)sizeof(ss);
    int r = uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len);
    if (r != 0)
        return r;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return PW_EINVAL;
}

static void on_close_free(uv_handle_t *h)
{
    pw_free(h);
}

void pw_net_close_free(uv_handle_t *h)
{
    if (h != NULL && !uv_is_closing(h))
        uv_close(h, on_close_free);
}

int pw_net_reject(uv_stream_t *server)
{
    if (server == NULL)
        return PW_EINVAL;
    uv_tcp_t *t = pw_malloc(sizeof(*t));
    if (t == NULL)
        return PW_ENOMEM;
    int r = uv_tcp_init(server->loop, t);
    if (r != 0) {
        pw_free(t);
        return r;
    }
    r = uv_accept(server, (uv_stream_t *)t);
    pw_net_close_free((uv_handle_t *)t);
    return r;
}

void pw_net_close_if_open(uv_handle_t *h, uv_loop_t *loop)
{
    if (h->loop == loop && !uv_is_closing(h))
        uv_close(h, NULL);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int pw_net_loop_drain_close(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    int r = uv_loop_close(loop);
    if (r == UV_EBUSY) {
        uv_walk(loop, close_walk, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        r = uv_loop_close(loop);
    }
    return r;
}

/* The published handle under a mutex, so that a request from another thread never touches a
 * handle being closed. */
static uv_once_t stop_once = UV_ONCE_INIT;
static uv_mutex_t stop_mu;
static uv_async_t *stop_handle;
static int stop_pending;

static void stop_init(void)
{
    if (uv_mutex_init(&stop_mu) != 0)
        abort(); /* no mutex at start-up: nothing sensible to go on with */
}

void pw_net_stop_publish(uv_async_t *h)
{
    uv_once(&stop_once, stop_init);
    uv_mutex_lock(&stop_mu);
    stop_handle = h;
    if (h != NULL && stop_pending)
        uv_async_send(h);
    stop_pending = 0;
    uv_mutex_unlock(&stop_mu);
}

void pw_net_stop_request(void)
{
    uv_once(&stop_once, stop_init);
    uv_mutex_lock(&stop_mu);
    if (stop_handle != NULL)
        uv_async_send(stop_handle);
    else
        stop_pending = 1;
    uv_mutex_unlock(&stop_mu);
}
