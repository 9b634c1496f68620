/* web.h: the web dashboard's static files (web/), built into the collector by
 * cmake/EmbedWeb.cmake, and the handler that serves them.
 *
 * Served without a token: the pages hold no data. The scripts ask for a bearer token (login
 * box, or #token=... in the URL) and call /api/v1 with it, where the usual auth applies.
 */
#ifndef PW_WEB_H
#define PW_WEB_H

#include <stddef.h>

#include "api.h"

/* One embedded file. */
typedef struct pw_web_asset_s {
    const char *path;         /* URL path: "/" or "/assets/<name>" */
    const char *content_type; /* Content-Type header value */
    const unsigned char *data;
    size_t len;       /* bytes of data (data has one NUL more) */
    const char *etag; /* quoted strong ETag: first 16 hex digits of the SHA-256 of data */
} pw_web_asset_t;

/* The generated table (web_assets.c) and its length. */
extern const pw_web_asset_t pw_web_assets[];
extern const size_t pw_web_assets_n;

/* The asset served at `path` ("/" and "/index.html" are the same page), or NULL. */
const pw_web_asset_t *pw_web_find(const char *path);

/* Serves the dashboard when `path` is "/", "/index.html" or under "/assets/".
 *   method         http-parser's enum http_method of the request
 *   path           raw request path, no query
 *   if_none_match  value of the If-None-Match header, or NULL
 *   resp           initialised by pw_api_resp_init; filled on a dashboard path: 200 with the
 *                  file, 304 (empty body) when if_none_match lists the asset's ETag or is "*",
 *                  404 for an unknown asset (the HTML page of pw_web_not_found), 405 for a method
 * other than GET. Sets cache_control ("no-cache": browsers revalidate with the ETag, so a new build
 * is picked up at once), etag and extra_headers (nosniff; on the page a Content-Security-Policy
 * allowing only this origin's scripts). Returns 0 when the path is not the dashboard's (the API
 * handles it), else resp->status. */
int pw_web_handle(int method, const char *path, const char *if_none_match, pw_api_resp_t *resp);

/* A small HTML "Not found" page for a path that is neither the API's nor the dashboard's (a
 * browser's mistyped URL, a missing asset): 404, Content-Type text/html, the path shown
 * HTML-escaped (its first 200 bytes), links to the dashboard and the OpenAPI document, the
 * page's security headers. API paths keep their JSON errors. Returns 404 (500 out of memory,
 * as a JSON error). */
int pw_web_not_found(const char *path, pw_api_resp_t *resp);

#endif /* PW_WEB_H */
