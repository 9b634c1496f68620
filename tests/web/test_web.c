/* test_web.c: the dashboard's static files (collector/web.c) without sockets. Expected bytes
 * and ETags are computed here from the files in web/ (SHA-256 with OpenSSL), not taken from
 * the generated table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <http_parser.h>
#include <openssl/sha.h>

#include "alloc.h"
#include "web.h"

static char *read_all(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", PW_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = pw_malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* "\"<first 16 hex digits of sha256>\"" of a file. */
static void etag_of(const char *data, size_t len, char out[19])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)data, len, md);
    out[0] = '"';
    for (int i = 0; i < 8; i++)
        snprintf(out + 1 + 2 * i, 3, "%02x", md[i]);
    out[17] = '"';
    out[18] = '\0';
}

static int serve(int method, const char *path, const char *inm, pw_api_resp_t *resp)
{
    pw_api_resp_init(resp);
    return pw_web_handle(method, path, inm, resp);
}

static void check_file(const char *url, const char *rel, const char *ctype)
{
    size_t len;
    char *want = read_all(rel, &len), etag[19];
    etag_of(want, len, etag);
    pw_api_resp_t r;
    assert_int_equal(serve(HTTP_GET, url, NULL, &r), 200);
    assert_string_equal(r.content_type, ctype);
    assert_int_equal(r.body.len, len);
    assert_memory_equal(r.body.data, want, len);
    assert_string_equal(r.etag, etag);
    assert_string_equal(r.cache_control, "no-cache");
    assert_non_null(strstr(r.extra_headers, "X-Content-Type-Options: nosniff\r\n"));
    pw_api_resp_close(&r);
    /* The same ETag back: 304 with no body; another one: the file again. */
    char list[64];
    snprintf(list, sizeof(list), "\"0000000000000000\", W/%s", etag);
    assert_int_equal(serve(HTTP_GET, url, list, &r), 304);
    assert_int_equal(r.body.len, 0);
    assert_string_equal(r.etag, etag);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, url, "\"0000000000000000\"", &r), 200);
    assert_int_equal(r.body.len, len);
    pw_api_resp_close(&r);
    pw_free(want);
}

static void test_files(void **state)
{
    (void)state;
    check_file("/", "web/index.html", "text/html; charset=utf-8");
    check_file("/index.html", "web/index.html", "text/html; charset=utf-8");
    check_file("/assets/app.js", "web/app.js", "text/javascript; charset=utf-8");
    check_file("/assets/app.css", "web/app.css", "text/css; charset=utf-8");
    check_file("/assets/favicon.svg", "web/favicon.svg", "image/svg+xml");
    check_file("/assets/uPlot.iife.min.js", "web/node_modules/uplot/dist/uPlot.iife.min.js",
               "text/javascript; charset=utf-8");
    check_file("/assets/uPlot.min.css", "web/node_modules/uplot/dist/uPlot.min.css",
               "text/css; charset=utf-8");
}

static void test_page_headers(void **state)
{
    (void)state;
    pw_api_resp_t r;
    assert_int_equal(serve(HTTP_GET, "/", NULL, &r), 200);
    assert_non_null(strstr(r.extra_headers, "Content-Security-Policy: default-src 'self'; "
                                            "script-src 'self';"));
    assert_non_null(strstr(r.extra_headers, "Referrer-Policy: no-referrer\r\n"));
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/assets/app.js", NULL, &r), 200);
    assert_null(strstr(r.extra_headers, "Content-Security-Policy"));
    pw_api_resp_close(&r);
}

static void test_not_mine_and_errors(void **state)
{
    (void)state;
    pw_api_resp_t r;
    /* The API's paths are not the dashboard's: 0, resp untouched. */
    assert_int_equal(serve(HTTP_GET, "/api/v1/hosts", NULL, &r), 0);
    assert_int_equal(r.status, 500);
    assert_int_equal(r.body.len, 0);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/metrics", NULL, &r), 0);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/assetsx", NULL, &r), 0);
    pw_api_resp_close(&r);
    /* a missing asset: the small HTML page, the path escaped */
    assert_int_equal(serve(HTTP_GET, "/assets/nope<b>.js", NULL, &r), 404);
    assert_string_equal(r.content_type, "text/html; charset=utf-8");
    assert_non_null(strstr((const char *)r.body.data, "<h1>Not found</h1>"));
    assert_non_null(strstr((const char *)r.body.data, "<code>/assets/nope&lt;b&gt;.js</code>"));
    assert_null(strstr((const char *)r.body.data, "<b>"));
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/assets/../index.html", NULL, &r), 404);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/assets/", NULL, &r), 404);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_POST, "/", NULL, &r), 405);
    pw_api_resp_close(&r);
    assert_int_equal(serve(HTTP_GET, "/", "*", &r), 304);
    pw_api_resp_close(&r);
    /* A prefix of the ETag is not the ETag. */
    const pw_web_asset_t *a = pw_web_find("/");
    assert_non_null(a);
    char part[32];
    snprintf(part, sizeof(part), "%.10s", a->etag);
    assert_int_equal(serve(HTTP_GET, "/", part, &r), 200);
    pw_api_resp_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_page_headers),
        cmocka_unit_test(test_not_mine_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
