/* Fuzz target for the endpoint parser of net.h (config values such as "collector:7443",
 * "[::1]:7443"): never crashes, and a success always gives a non-empty host that fits and a
 * port in 1..65535; numeric hosts round-trip through pw_net_addr_format. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = pw_strndup((const char *)data, size); /* stops at an embedded NUL */
    if (s == NULL)
        return 0;
    char host[PW_NET_HOST_MAX];
    uint16_t port = 0;
    pw_diag_t d;
    int r = pw_net_split_host_port(s, 7443, host, sizeof(host), &port, &d);
    if (r == 0) {
        size_t n = strlen(host);
        if (n == 0 || n >= sizeof(host) || port == 0)
            __builtin_trap();
        struct sockaddr_storage ss;
        char out[128];
        if (pw_net_addr_from_literal(host, port, &ss) == 0 &&
            pw_net_addr_format((const struct sockaddr *)&ss, out, sizeof(out)) <= 0)
            __builtin_trap();
    } else if (r != PW_EINVAL && r != PW_ETOOBIG) {
        __builtin_trap();
    }
    pw_free(s);
    return 0;
}
