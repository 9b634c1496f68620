/* test_url.c: the one URL parser (common/url.h). Expected parts are read off the URLs by hand. */
#include "test_util.h"
#include "url.h"

static void test_request_urls(void **state)
{
    (void)state;
    pw_url_t u;
    pw_diag_t d;
    assert_int_equal(pw_url_parse_request("http://127.0.0.1:9090/api/v1/write?x=1#frag", &u, &d),
                     0);
    assert_int_equal(u.tls, 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "9090");
    assert_string_equal(u.path, "/api/v1/write?x=1");
    assert_string_equal(u.base, "/api/v1/write");
    assert_int_equal(pw_url_parse_request("HTTPS://Prom.Example", &u, &d), 0);
    assert_int_equal(u.tls, 1);
    assert_string_equal(u.host, "Prom.Example");
    assert_string_equal(u.port, "443");
    assert_string_equal(u.path, "/");
    assert_string_equal(u.base, "");
    assert_int_equal(pw_url_parse_request("http://[fe80::1%eth0]:65535/a/", &u, &d), 0);
    assert_string_equal(u.host, "fe80::1%eth0");
    assert_string_equal(u.port, "65535");
    assert_string_equal(u.base, "/a");
    assert_int_equal(pw_url_parse_request("http://h?q", &u, &d), 0);
    assert_string_equal(u.path, "?q");
    assert_string_equal(u.port, "80");

    struct {
        const char *url, *field;
        uint64_t offset;
    } bad[] = {
        {"", "url", 0},
        {"127.0.0.1:9093", "url", 0},
        {"prom:9090/api/v1/write", "url", 0},
        {"ftp://h/", "scheme", 0},
        {"http://u:p@h/", "userinfo", 7},
        {"http://:80/", "host", 7},
        {"http://[::1/", "host", 7},
        {"http://[::1]x/", "host", 12},
        {"http://a b/", "host", 8},
        {"http://h:0/", "port", 9},
        {"http://h:65536/", "port", 9},
        {"http://h:99999999999999999999/", "port", 9},
        {"http://h:/", "port", 9},
        {"http://h/a b", "path", 10},
        {"http://h/a\x01", "path", 10},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pw_diag_clear(&d);
        assert_int_equal(pw_url_parse_request(bad[i].url, &u, &d), PW_EINVAL);
        assert_string_equal(d.field, bad[i].field);
        assert_int_equal(d.offset, bad[i].offset);
    }
    assert_int_equal(pw_url_parse_request(NULL, &u, NULL), PW_EINVAL);
    assert_int_equal(pw_url_parse_request("ftp://h/", &u, &d), PW_EINVAL);
    assert_string_equal(d.msg, "the scheme must be http:// or https://");

    /* a host of 255 bytes fits, 256 do not */
    char big[300];
    memcpy(big, "http://", 7);
    memset(big + 7, 'a', 255);
    big[7 + 255] = '\0';
    assert_int_equal(pw_url_parse_request(big, &u, &d), 0);
    assert_int_equal(strlen(u.host), 255);
    big[7 + 255] = 'a';
    big[7 + 256] = '\0';
    assert_int_equal(pw_url_parse_request(big, &u, &d), PW_EINVAL);
}

static void test_base_urls(void **state)
{
    (void)state;
    pw_url_t u;
    pw_diag_t d;
    assert_int_equal(pw_url_parse("https://collector.example:8443/pw//", &u, &d), 0);
    assert_string_equal(u.base, "/pw");
    assert_int_equal(pw_url_parse("https://h/?q=1", &u, &d), PW_EINVAL);
    assert_string_equal(d.field, "url");
    assert_int_equal(d.offset, 9);
    assert_int_equal(pw_url_parse("https://h/#f", &u, &d), PW_EINVAL);
    assert_int_equal(pw_url_parse_request("https://h/#f", &u, &d), 0);
    assert_string_equal(u.path, "/");
}

static void test_escape(void **state)
{
    (void)state;
    char e[16] = "/t/";
    assert_int_equal(pw_url_escape(e, sizeof(e), "Dh 1"), 9);
    assert_string_equal(e, "/t/Dh%201");
    char small[4] = "";
    assert_int_equal(pw_url_escape(small, sizeof(small), "a/"), PW_ETOOBIG);
    assert_string_equal(small, "a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_urls),
        cmocka_unit_test(test_base_urls),
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
