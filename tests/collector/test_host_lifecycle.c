/* test_host_lifecycle.c: retiring and renaming hosts (DELETE /api/v1/hosts/{host}, POST
 * /api/v1/hosts/{host}/rename, pw_ingest_retire / pw_ingest_rename) through the collector's
 * own ingest, store and API (the test double, double.h). A retired host keeps its fleet entry
 * and index, is skipped by every reader, and an agent that says Hello under its name again
 * gets a new entry. */
#include "test_util.h"

#include <jansson.h>

#include "alloc.h"
#include "api.h"
#include "delta.h"
#include "double.h"
#include "remote_write.h"

static pw_double_t g_d;

static int setup(void **state)
{
    (void)state;
    return pw_double_open_with_token(&g_d, "adm", "admin") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pw_double_close(&g_d);
    return 0;
}

/* One request: the status, and the body into `body` (NUL-terminated, truncated). */
static int call(int method, const char *path, const char *query, const char *req_body, char *body,
                size_t size)
{
    pw_api_req_t req = {method,
                        path,
                        query,
                        "Bearer adm",
                        (const uint8_t *)req_body,
                        req_body ? strlen(req_body) : 0,
                        1700000000000ull};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&g_d.api, &req, &resp);
    snprintf(body, size, "%.*s", (int)resp.body.len, resp.body.data ? (char *)resp.body.data : "");
    pw_api_resp_close(&resp);
    return st;
}

/* A host streaming one sample with two rows (Leak nonpaged 4096 B, Cach paged 512 B). */
static pw_host_t *streaming(const char *name, int connected)
{
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = 1700000000000ull;
    assert_int_equal(pw_sample_add(&s, "Leak", 4, PW_POOL_NONPAGED, 10, 2, 8, 4096), 0);
    assert_int_equal(pw_sample_add(&s, "Cach", 4, PW_POOL_PAGED, 5, 1, 4, 512), 0);
    pw_host_t *h = pw_double_stream(&g_d, name, 32, connected);
    assert_non_null(h);
    assert_int_equal(pw_double_send_first(&g_d, h, &s), 0);
    pw_sample_close(&s);
    return h;
}

/* case09's two screens (tests/fixtures) imported as host `name`. */
static void import_case09(const char *name)
{
    char body[4096], query[300];
    size_t len;
    char *cap = pw_test_read_file(
        pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"), &len);
    assert_non_null(cap);
    cap[len] = '\0';
    snprintf(query, sizeof(query), "host=%s", name);
    assert_int_equal(call(PW_API_POST, "/api/v1/import", query, cap, body, sizeof(body)), 200);
    free(cap);
}

static int drop_body(void *arg, uint8_t *body, size_t len, size_t series)
{
    (void)arg;
    (void)len;
    (void)series;
    pw_free(body);
    return 0;
}

/* Series remote write would send now for the whole fleet (a fresh cursor: nothing sent yet). */
static int64_t rw_series(void)
{
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    int64_t n =
        pw_remote_write_encode(pw_ingest_fleet(g_d.ing), g_d.an, 20, 0, &cur, drop_body, NULL);
    pw_remote_write_cursor_free(&cur);
    return n;
}

static void test_retire_then_the_name_starts_a_new_host(void **state)
{
    (void)state;
    char body[8192];
    pw_host_t *h = streaming("agent01", 1);
    const pw_fleet_t *f = pw_ingest_fleet(g_d.ing);
    assert_int_equal(f->n, 1);
    assert_int_equal(h->index, 0);
    /* pool bytes x2, connected, stopped, loading history, suspects (no limits) + 2 rows x
     * (bytes, allocations) = 10 */
    assert_int_equal(rw_series(), 10);

    /* connected: refused, the host stays */
    assert_int_equal(call(PW_API_DELETE, "/api/v1/hosts/agent01", "", NULL, body, sizeof(body)),
                     409);
    assert_non_null(strstr(body, "\"ECONNECTED\""));
    assert_non_null(strstr(body, "host 'agent01' has an agent connected: stop the agent first"));
    assert_false(pw_host_retired(h));

    pw_ingest_detach(g_d.ing, h, &g_d.session);
    assert_int_equal(
        call(PW_API_DELETE, "/api/v1/hosts/AGENT01", "keep_history=2", NULL, body, sizeof(body)),
        400); /* keep_history is 0 or 1 */
    assert_int_equal(call(PW_API_DELETE, "/api/v1/hosts/AGENT01", "", NULL, body, sizeof(body)),
                     200);
    assert_string_equal(body, "{\"host\":\"agent01\",\"retired\":true,\"history_kept\":false}");
    assert_true(pw_host_retired(h));
    assert_int_equal(pw_host_nrows(h), 0);
    assert_null(pw_fleet_find(f, "agent01"));
    assert_int_equal(f->n, 1); /* the entry and its index stay */

    /* every reader skips it */
    assert_int_equal(call(PW_API_GET, "/api/v1/hosts", "", NULL, body, sizeof(body)), 200);
    assert_string_equal(body, "{\"hosts\":[]}");
    assert_int_equal(call(PW_API_GET, "/api/v1/hosts/agent01", "", NULL, body, sizeof(body)), 404);
    assert_int_equal(call(PW_API_GET, "/api/v1/tags", "", NULL, body, sizeof(body)), 200);
    assert_null(strstr(body, "Leak"));
    assert_int_equal(call(PW_API_GET, "/metrics", "", NULL, body, sizeof(body)), 200);
    assert_null(strstr(body, "agent01"));
    assert_non_null(strstr(body, "\npoolwatch_collector_hosts 0\n"));
    /* passes only when asked here (no loop): no first pass is due */
    assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "", NULL, body, sizeof(body)), 200);
    assert_string_equal(body, "{\"suspects\":[],\"total\":0,\"first_pass_ms\":null}");
    assert_int_equal(rw_series(), 0);
    pw_analysis_run_pass(g_d.an); /* skips it (nothing to judge, no state touched) */
    pw_store_t *st = pw_ingest_store(g_d.ing);
    pw_sample_t got;
    pw_sample_init(&got);
    pw_diag_t d;
    assert_int_equal(pw_store_latest(st, "agent01", &got, &d), PW_ENOENT); /* history deleted */

    /* the agent comes back: a new host at a new index, with only its new sample */
    pw_host_t *h2 = streaming("agent01", 0);
    assert_ptr_not_equal(h2, h);
    assert_int_equal(h2->index, 1);
    assert_int_equal(f->n, 2);
    assert_ptr_equal(pw_fleet_find(f, "agent01"), h2);
    assert_int_equal(pw_host_nrows(h2), 2);
    assert_int_equal(call(PW_API_GET, "/api/v1/tags", "", NULL, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"Leak\""));
    assert_int_equal(call(PW_API_GET, "/metrics", "", NULL, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\npoolwatch_collector_hosts 1\n"));

    /* retired keeping the history: the store keeps it under another name */
    assert_int_equal(
        call(PW_API_DELETE, "/api/v1/hosts/agent01", "keep_history=1", NULL, body, sizeof(body)),
        200);
    assert_string_equal(body, "{\"host\":\"agent01\",\"retired\":true,\"history_kept\":true}");
    assert_int_equal(pw_store_latest(st, "agent01", &got, &d), PW_ENOENT);
    assert_int_equal(pw_store_latest(st, "agent01#retired-1700000000000", &got, &d), 0);
    assert_int_equal(got.n, 2);
    pw_sample_close(&got);
    assert_int_equal(call(PW_API_DELETE, "/api/v1/hosts/agent01", "", NULL, body, sizeof(body)),
                     404);
}

static void test_rename_only_imports(void **state)
{
    (void)state;
    char body[4096];
    streaming("agent02", 0);
    assert_int_equal(call(PW_API_POST, "/api/v1/hosts/agent02/rename", "", "{\"name\":\"x\"}", body,
                          sizeof(body)),
                     400);
    assert_non_null(strstr(body, "host 'agent02' streams from an agent: its name is its "
                                 "certificate's"));
    assert_int_equal(call(PW_API_POST, "/api/v1/hosts/agent02/rename", "", "{\"name\":\"a/b\"}",
                          body, sizeof(body)),
                     400);
    assert_non_null(strstr(body, "name must be a host name"));
    assert_int_equal(
        call(PW_API_POST, "/api/v1/hosts/agent02/rename", "", "[1]", body, sizeof(body)), 400);
    assert_non_null(strstr(body, "body is not a JSON object: not an object"));
    assert_int_equal(
        call(PW_API_POST, "/api/v1/hosts/agent02/rename", "", "{\"nom\":1}", body, sizeof(body)),
        400);
    assert_non_null(strstr(body, "body must be {\\\"name\\\": \\\"NEW\\\"}"));
}

/* An imported host renamed keeps its suspects: case09's two screens (Drsd +6 allocations of
 * 832 B between them, tests/fixtures) are judged at import; after the rename the very next
 * request lists Drsd under the new name, in the fleet's list and the host's, and none under the
 * old one (the old name is 404); a later pass keeps it there. */
static void test_rename_keeps_suspects(void **state)
{
    (void)state;
    char body[16384];
    import_case09("cap09");
    pw_analysis_run_pass(g_d.an);
    assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "host=cap09", NULL, body, sizeof(body)),
                     200);
    assert_non_null(strstr(body, "\"tag\":\"Drsd\""));
    assert_int_equal(call(PW_API_POST, "/api/v1/hosts/cap09/rename", "", "{\"name\":\"print-srv\"}",
                          body, sizeof(body)),
                     200);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "", NULL, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"host\":\"print-srv\""));
        assert_non_null(strstr(body, "\"tag\":\"Drsd\""));
        assert_null(strstr(body, "cap09"));
        assert_int_equal(
            call(PW_API_GET, "/api/v1/leaks", "host=print-srv", NULL, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"tag\":\"Drsd\""));
        assert_non_null(strstr(body, "\"total\":1"));
        assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "host=cap09", NULL, body, sizeof(body)),
                         404);
        pw_analysis_run_pass(g_d.an);
    }
}

/* A retired host's suspects leave the list at once, before the next pass drops them: case09's
 * capture imported under two names gives each a Drsd suspect; one retired, /api/v1/leaks counts
 * and lists only the other (and the renamed host of the test before, sharing this collector),
 * in the fleet's list and under the retired name (404). */
static void test_retire_drops_its_suspects(void **state)
{
    (void)state;
    char body[16384];
    import_case09("cap-a");
    import_case09("cap-b");
    pw_analysis_run_pass(g_d.an);
    assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "", NULL, body, sizeof(body)), 200);
    assert_non_null(strstr(body, "\"total\":3"));
    assert_non_null(strstr(body, "\"host\":\"cap-a\""));
    assert_int_equal(call(PW_API_DELETE, "/api/v1/hosts/cap-a", "", NULL, body, sizeof(body)), 200);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "", NULL, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "\"total\":2"));
        assert_null(strstr(body, "cap-a"));
        assert_non_null(strstr(body, "\"host\":\"cap-b\""));
        assert_non_null(strstr(body, "\"host\":\"print-srv\""));
        assert_int_equal(call(PW_API_GET, "/api/v1/leaks", "host=cap-a", NULL, body, sizeof(body)),
                         404);
        pw_analysis_run_pass(g_d.an);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retire_then_the_name_starts_a_new_host),
        cmocka_unit_test(test_rename_only_imports),
        cmocka_unit_test(test_rename_keeps_suspects),
        cmocka_unit_test(test_retire_drops_its_suspects),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
