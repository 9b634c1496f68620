/* fuzz_cli_response.c: what the CLI decodes from a server. The input is a raw HTTP response:
 * parsed with the client's http-parser reader; its body (or, when the response does not parse,
 * the input itself) is loaded as JSON and handed to the pool-table decoder and every listing
 * formatter; the first line is also tried as a server URL. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_json(const char *text, size_t len)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    if (j == NULL)
        return;
    char where[64];
    double bad;
    (void)pw_cli_json_check_numbers(j, where, sizeof(where), &bad);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull != NULL) {
        pw_fmt_hosts(j, devnull);
        pw_fmt_tags(j, 0, devnull);
        pw_fmt_tags(j, 1, devnull);
        pw_fmt_tag(j, devnull);
        pw_fmt_leaks(j, devnull);
        pw_fmt_alerts(j, devnull);
        pw_fmt_series(j, devnull);
        pw_fmt_lookup(j, j, devnull);
        fclose(devnull);
    }
    pw_top_table_t t;
    pw_diag_t d;
    if (pw_top_table_from_json(j, &t, &d) == 0) {
        pw_top_view_t v;
        pw_top_view_init(&v);
        v.totals = 1;
        v.highlight = 1;
        for (int k = 0; k < 3; k++) {
            pw_top_lines_t l;
            if (pw_top_render(&t, &v, k == 0 ? 0 : 80, k == 2 ? 10 : 0, &l) == 0)
                pw_top_lines_close(&l);
            pw_top_key(&v, "PSB"[k]);
        }
        pw_top_table_close(&t);
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_client_resp_t r;
    pw_diag_t d;
    if (pw_client_response_parse((const char *)data, size, &r, &d) == 0) {
        use_json(r.body, r.body_len);
        pw_client_resp_close(&r);
    } else {
        use_json((const char *)data, size);
    }
    char url[600];
    const uint8_t *nl = memchr(data, '\n', size); /* data is not NUL-terminated */
    size_t n = nl ? (size_t)(nl - data) : size;
    if (n >= sizeof(url))
        n = sizeof(url) - 1;
    memcpy(url, data, n);
    url[n] = '\0';
    pw_url_t u;
    pw_url_parse(url, &u, &d);
    return 0;
}
