/* web.c: serves the embedded dashboard (web.h). */
#include "web.h"

#include <stdio.h>
#include <string.h>

#include <http_parser.h>

#define HDR_ASSET "X-Content-Type-Options: nosniff\r\n"
/* Inline style attributes are allowed (bar widths in generated rows); scripts are not. */
#define HDR_PAGE                                                                                   \
    HDR_ASSET                                                                                      \
    "Content-Security-Policy: default-src 'self'; script-src 'self'; "                             \
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "                 \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"                              \
    "Referrer-Policy: no-referrer\r\n"

const pw_web_asset_t *pw_web_find(const char *path)
{
    if (strcmp(path, "/index.html") == 0)
        path = "/";
    for (size_t i = 0; i < pw_web_assets_n; i++)
        if (strcmp(pw_web_assets[i].path, path) == 0)
            return &pw_web_assets[i];
    return NULL;
}

/* Whether an If-None-Match value (a list of ETags, maybe weak W/"..", or "*") names etag. */
static int etag_listed(const char *inm, const char *etag)
{
    size_t el = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, el) == 0 && (p[el] == '\0' || p[el] == ',' || p[el] == ' '))
            return 1;
        while (*p && *p != ',')
            p++;
    }
    return 0;
}

int pw_web_handle(int method, const char *path, const char *if_none_match, pw_api_resp_t *resp)
{
    if (strcmp(path, "/") != 0 && strcmp(path, "/index.html") != 0 &&
        strncmp(path, "/assets/", 8) != 0)
        return 0;
    if (method != HTTP_GET)
        return pw_api_error(resp, 405, "EINVAL", "method %s not allowed here",
                            http_method_str((enum http_method)method));
    const pw_web_asset_t *a = pw_web_find(path);
    if (a == NULL)
        return pw_api_error(resp, 404, "ENOENT", "no such asset");
    snprintf(resp->etag, sizeof(resp->etag), "%s", a->etag);
    resp->cache_control = "no-cache";
    resp->extra_headers = strcmp(a->path, "/") == 0 ? HDR_PAGE : HDR_ASSET;
    resp->content_type = a->content_type;
    pw_buf_reset(&resp->body);
    if (if_none_match && etag_listed(if_none_match, a->etag))
        return resp->status = 304;
    if (pw_buf_append(&resp->body, a->data, a->len) != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    return resp->status = 200;
}
