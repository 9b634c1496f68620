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
        return pw_web_not_found(path, resp);
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

int pw_web_not_found(const char *path, pw_api_resp_t *resp)
{
    static const char head[] =
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>Not found - poolwatch</title></head>\n<body><h1>Not found</h1>\n"
        "<p>This poolwatch collector has no page at <code>";
    static const char tail[] = "</code>.</p>\n<p>The dashboard is at <a href=\"/\">/</a>; the "
                               "API is under <code>/api/v1/</code> (<a "
                               "href=\"/api/v1/openapi.json\">OpenAPI document</a>).</p>\n"
                               "</body></html>\n";
    pw_buf_reset(&resp->body);
    int r = pw_buf_append(&resp->body, head, sizeof(head) - 1);
    for (size_t i = 0; r == 0 && path[i] != '\0' && i < 200; i++) {
        const char *e = path[i] == '&'    ? "&amp;"
                        : path[i] == '<'  ? "&lt;"
                        : path[i] == '>'  ? "&gt;"
                        : path[i] == '"'  ? "&quot;"
                        : path[i] == '\'' ? "&#39;"
                                          : NULL;
        r = e ? pw_buf_append(&resp->body, e, strlen(e)) : pw_buf_append(&resp->body, &path[i], 1);
    }
    if (r == 0 && strlen(path) > 200)
        r = pw_buf_append(&resp->body, "...", 3);
    if (r == 0) /* with its NUL, not sent: the page is a C string to its readers too */
        r = pw_buf_append(&resp->body, tail, sizeof(tail));
    if (r == 0)
        resp->body.len--;
    if (r != 0)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    resp->content_type = "text/html; charset=utf-8";
    resp->extra_headers = HDR_PAGE;
    resp->cache_control = "no-cache";
    return resp->status = 404;
}
