/* api_v1.c: the routing table and authentication of /api/v1 (handlers: api_*.c), the OpenAPI
 * document and /metrics. The shapes are the contract described in docs/openapi.json. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "web.h"

#define MAX_PARAMS 4 /* {name} segments in a route */

static int h_openapi(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)api;
    (void)req;
    (void)params;
    pw_buf_reset(&resp->body);
    if (pw_buf_append(&resp->body, pw_openapi_json, pw_openapi_json_len) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "application/json";
    return 200;
}

static int h_metrics(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    pw_buf_reset(&resp->body);
    if (pw_api_metrics(api, &resp->body) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    return 200;
}

/* ============================================================================================
 * Router
 * ========================================================================================== */

static const pw_api_route_t routes[] = {
    {HTTP_GET, "/api/v1/hosts", PW_ROLE_READ, pw__api_hosts},
    {HTTP_GET, "/api/v1/hosts/{host}", PW_ROLE_READ, pw__api_host},
    {HTTP_GET, "/api/v1/hosts/{host}/pool", PW_ROLE_READ, pw__api_pool},
    {HTTP_GET, "/api/v1/hosts/{host}/series", PW_ROLE_READ, pw__api_series},
    {HTTP_GET, "/api/v1/hosts/{host}/totals", PW_ROLE_READ, pw__api_totals},
    {HTTP_GET, "/api/v1/hosts/{host}/events", PW_ROLE_READ, pw__api_events},
    {HTTP_POST, "/api/v1/hosts/{host}/commands", PW_ROLE_ADMIN, pw__api_command},
    {HTTP_DELETE, "/api/v1/hosts/{host}", PW_ROLE_ADMIN, pw__api_host_delete},
    {HTTP_POST, "/api/v1/hosts/{host}/rename", PW_ROLE_ADMIN, pw__api_host_rename},
    {HTTP_GET, "/api/v1/tags", PW_ROLE_READ, pw__api_tags},
    {HTTP_GET, "/api/v1/tags/{tag}", PW_ROLE_READ, pw__api_tag},
    {HTTP_GET, "/api/v1/leaks", PW_ROLE_READ, pw__api_leaks},
    {HTTP_GET, "/api/v1/alerts", PW_ROLE_READ, pw__api_alerts},
    {HTTP_GET, "/api/v1/pooltag/{tag}", PW_ROLE_READ, pw__api_pooltag},
    {HTTP_POST, "/api/v1/import", PW_ROLE_ADMIN, pw__api_import},
    {HTTP_GET, "/api/v1/openapi.json", PW_ROLE_READ, h_openapi},
    {HTTP_GET, "/metrics", PW_ROLE_READ, h_metrics},
};

const pw_api_route_t *pw_api_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

/* Matches `path` against `pattern`; on a match the {name} segments are percent-decoded into
 * params (owned by the caller, one allocation in params[0]'s block). Returns 1 match, 0 no
 * match, -1 bad percent-encoding. */
static int route_match(const char *pattern, const char *path, char **params, char *mem,
                       size_t mem_size)
{
    const char *p = pattern, *s = path;
    size_t np = 0, used = 0;
    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return 0;
        p++;
        s++;
        const char *pe = strchr(p, '/'), *se = strchr(s, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p), sl = se ? (size_t)(se - s) : strlen(s);
        if (pl >= 2 && p[0] == '{') {
            if (sl == 0 || np == MAX_PARAMS)
                return 0;
            ssize_t n = pw__api_pct_decode(s, sl, 0, mem + used, mem_size - used);
            if (n < 0)
                return -1;
            if (n == 0)
                return 0;
            params[np++] = mem + used;
            used += (size_t)n + 1;
        } else if (pl != sl || memcmp(p, s, pl) != 0) {
            return 0;
        }
        p += pl;
        s += sl;
    }
    return *p == '\0' && *s == '\0';
}

/* The bearer token of an Authorization header value, or NULL. */
static const char *bearer(const char *auth, size_t *len)
{
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        n--;
    *len = n;
    return n ? t : NULL;
}

int pw_api_handle(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp)
{
    char *params[MAX_PARAMS] = {0};
    size_t plen = strlen(req->path);
    char *mem = pw_malloc(plen + MAX_PARAMS + 1);
    if (mem == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    const pw_api_route_t *hit = NULL;
    int path_known = 0, r;
    for (size_t i = 0; i < plen; i++)
        if (req->path[i] == '%' &&
            (i + 2 >= plen || pw__api_hexval((unsigned char)req->path[i + 1]) < 0 ||
             pw__api_hexval((unsigned char)req->path[i + 2]) < 0)) {
            pw_free(mem);
            return pw_api_error(resp, 400, "EINVAL", "bad percent-encoding in the path");
        }
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        int m = route_match(routes[i].pattern, req->path, params, mem, plen + MAX_PARAMS + 1);
        if (m < 0) {
            pw_free(mem);
            return pw_api_error(resp, 400, "EINVAL", "bad percent-encoding in the path");
        }
        if (m == 0)
            continue;
        path_known = 1;
        if (routes[i].method == req->method) {
            hit = &routes[i];
            break;
        }
    }
    if (hit == NULL) {
        pw_free(mem);
        if (path_known)
            return pw_api_error(resp, 405, "EINVAL", "method %s not allowed here",
                                http_method_str((enum http_method)req->method));
        /* The API's paths answer in JSON; any other is a browser's: a small HTML page. */
        if (strncmp(req->path, "/api/", 5) == 0 || strcmp(req->path, "/api") == 0 ||
            strcmp(req->path, "/metrics") == 0)
            return pw_api_error(resp, 404, "ENOENT", "no such endpoint");
        return pw_web_not_found(req->path, resp);
    }
    size_t tl = 0;
    const char *tok = bearer(req->auth, &tl);
    pw_role_t role = tok ? pw_tokens_check(api->tokens, tok, tl, NULL) : PW_ROLE_NONE;
    if (role == PW_ROLE_NONE) {
        pw_free(mem);
        api->stats.unauthorized++;
        return pw_api_error(resp, 401, "EACCES", "a valid bearer token is required");
    }
    if (role < hit->role) {
        pw_free(mem);
        api->stats.forbidden++;
        return pw_api_error(resp, 403, "EACCES", "this endpoint needs the %s role",
                            pw_role_name(hit->role));
    }
    r = hit->handler(api, req, params, resp);
    pw_free(mem);
    return r;
}
