/* test_global_view.c: one fleet view across collectors (issue 18 item 5). Debian's
 * VictoriaMetrics on loopback; three real poolwatch-collectors each remote-writing into it
 * every second (every row of every host: tags_per_host above the simulator's rows) and each
 * naming itself ([fleet] self_url); two simulated agents per collector (leaking and steady
 * presets, hours of backfill); collector 0 also reads the store back ([fleet] query_url,
 * refresh 1 s). Once every collector's first analysis pass ran and the agents stopped (so the
 * values are final), collector 0's global answers must equal the union of the three
 * collectors' own (?scope=local) answers:
 *   /api/v1/hosts  the same host names; for each: collector (the owner's self_url), connected,
 *                  last_seen_ms, nonpaged/paged bytes, limits (null = unknown) and suspects
 *   /api/v1/tags   the same (tag, type) aggregates: hosts, bytes_total, bytes_min, bytes_max
 *   /api/v1/leaks  the same (host, tag, type) suspects, their score and growth to 1e-9
 *                  (floats through the store's text answers)
 * and /api/v1/tags/{tag} lists a tag's rows of every collector's hosts.
 */
#include "test_util.h"
#include "proc.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define TOKEN "global-view-token-0123456789"
#define NC    3
#define NA    2

static char dir[256];
static int api_port[NC];
static const char *const SRC[NC][NA] = {{"sim:leak-linear/0", "sim:steady/0"},
                                        {"sim:fleet-small/2", "sim:fleet-small/3"},
                                        {"sim:leak-step/0", "sim:cache-plateau/0"}};

static json_t *get(int c, const char *path)
{
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *body = pw_proc_https(ca, api_port[c], TOKEN, path, NULL);
    for (int i = 0; i < 3 && body[0] == '\0'; i++) { /* no answer: a loaded machine (curl -s) */
        free(body);
        pw_proc_sleep_ms(1000);
        body = pw_proc_https(ca, api_port[c], TOKEN, path, NULL);
    }
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    if (j == NULL) {
        char msg[700];
        snprintf(msg, sizeof(msg), "collector %d %s: not JSON (%s): %.300s", c, path, je.text,
                 body);
        free(body);
        fail_msg("%s", msg);
    }
    free(body);
    return j;
}

static int passes_done(void *arg)
{
    int c = *(int *)arg;
    json_t *j = get(c, "/api/v1/leaks?scope=local&limit=1");
    int done = json_is_null(json_object_get(j, "first_pass_ms"));
    json_decref(j);
    return done;
}

static int all_disconnected(void *arg)
{
    int c = *(int *)arg, any = 0;
    json_t *j = get(c, "/api/v1/hosts?scope=local");
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(j, "hosts"), i, h) any |=
        json_is_true(json_object_get(h, "connected"));
    json_decref(j);
    return !any;
}

static int queue_empty(void *arg)
{
    int c = *(int *)arg;
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *m = pw_proc_https(ca, api_port[c], TOKEN, "/metrics", NULL);
    const char *q = strstr(m, "\npoolwatch_remote_write_queue_requests ");
    int ok = q != NULL && strtoull(q + 39, NULL, 10) == 0;
    free(m);
    return ok;
}

/* the global snapshot is newer than `t` (as_of_ms) */
static int global_after(void *arg)
{
    uint64_t t = *(uint64_t *)arg;
    json_t *j = get(0, "/api/v1/hosts");
    json_int_t a = json_integer_value(json_object_get(j, "as_of_ms"));
    json_decref(j);
    return a > 0 && (uint64_t)a > t;
}

/* The number of suspects and hosts in a /leaks and /hosts answer of collector c (path suffix
 * "" for the global view, "?scope=local" or "&scope=local" for its own). */
static size_t count_of(int c, const char *path, const char *key)
{
    json_t *j = get(c, path);
    size_t n = json_array_size(json_object_get(j, key));
    json_decref(j);
    return n;
}

/* The store makes new series searchable a few seconds after they are written: a snapshot taken
 * after the writes may still miss some. Converged when the global view has as many hosts and
 * suspects as the three local views together (which are final: the agents stopped). */
static int global_converged(void *arg)
{
    const size_t *want = arg;
    return count_of(0, "/api/v1/hosts", "hosts") == want[0] &&
           count_of(0, "/api/v1/leaks?limit=1000000", "suspects") == want[1];
}

static json_t *by_key(json_t *arr, const char *k1, const char *k2, const char *k3)
{
    json_t *o = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        char key[512];
        snprintf(key, sizeof(key), "%s|%s|%s", json_string_value(json_object_get(e, k1)),
                 k2 ? json_string_value(json_object_get(e, k2)) : "",
                 k3 ? json_string_value(json_object_get(e, k3)) : "");
        assert_null(json_object_get(o, key)); /* once in the union */
        json_object_set(o, key, e);
    }
    return o;
}

static void same(json_t *a, json_t *b, const char *field, const char *what)
{
    json_t *x = json_object_get(a, field), *y = json_object_get(b, field);
    if (!json_equal(x, y)) {
        char *sx = json_dumps(x, JSON_ENCODE_ANY), *sy = json_dumps(y, JSON_ENCODE_ANY);
        fail_msg("%s: %s: local %s, global %s", what, field, sx ? sx : "(absent)",
                 sy ? sy : "(absent)");
    }
}

static void test_union(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof(dir), "%s/pw-global-XXXXXX", tmp);
    assert_non_null(mkdtemp(dir));
    char cmd[2048], p[NC * NA][64];
    int o = snprintf(cmd, sizeof(cmd), "--collector-name localhost");
    for (int c = 0; c < NC; c++)
        for (int a = 0; a < NA; a++) {
            snprintf(p[c * NA + a], sizeof(p[0]), "gv-c%d-%d", c, a);
            o += snprintf(cmd + o, sizeof(cmd) - (size_t)o, " --agent %s", p[c * NA + a]);
        }
    char pki[300];
    snprintf(pki, sizeof(pki), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, pki, cmd);
    snprintf(cmd, sizeof(cmd), "%s/tokens", dir);
    pw_proc_tokens_file(cmd, TOKEN, "admin gv");
    int vm_port = pw_proc_free_port();
    char vmdir[300], vmlog[300];
    snprintf(vmdir, sizeof(vmdir), "%s/vm", dir);
    snprintf(vmlog, sizeof(vmlog), "%s/vm.log", dir);
    pw_proc_vm_start(vmdir, vm_port, vmlog);

    pid_t agents[NC * NA];
    char clog[NC][300];
    for (int c = 0; c < NC; c++) {
        int agent_port = pw_proc_free_port();
        api_port[c] = pw_proc_free_port();
        char a[16][400];
        int n = 0;
        snprintf(a[n++], 400, "--agents.listen=127.0.0.1:%d", agent_port);
        snprintf(a[n++], 400, "--store.path=%s/c%d.db", dir, c);
        snprintf(a[n++], 400, "--agents.ca_file=%s/pki/ca.pem", dir);
        snprintf(a[n++], 400, "--agents.cert_file=%s/pki/collector.pem", dir);
        snprintf(a[n++], 400, "--agents.key_file=%s/pki/collector.key", dir);
        snprintf(a[n++], 400, "--http.listen=127.0.0.1:%d", api_port[c]);
        snprintf(a[n++], 400, "--http.tokens_file=%s/tokens", dir);
        snprintf(a[n++], 400, "--remote_write.url=http://127.0.0.1:%d/api/v1/write", vm_port);
        snprintf(a[n++], 400, "--fleet.self_url=https://localhost:%d", api_port[c]);
        if (c == 0)
            snprintf(a[n++], 400, "--fleet.query_url=http://127.0.0.1:%d", vm_port);
        snprintf(clog[c], sizeof(clog[c]), "%s/collector%d.log", dir, c);
        char *argv[32] = {PW_COLLECTOR_BIN};
        int k = 1;
        for (int i = 0; i < n; i++)
            argv[k++] = a[i];
        argv[k++] = "--remote_write.interval=1s";
        argv[k++] = "--remote_write.tags_per_host=10000";
        argv[k++] = "--remote_write.max_tags_per_host=100000";
        argv[k++] = "--fleet.refresh=1s";
        argv[k] = NULL;
        pw_proc_spawn(argv, clog[c]);
        pw_proc_wait_log(clog[c], "agents: ", 1, 20000);
        for (int j = 0; j < NA; j++) {
            const char *name = p[c * NA + j];
            char b[8][400], alog[400];
            snprintf(b[0], 400, "--agent.source=%s", SRC[c][j]);
            snprintf(b[1], 400, "--agent.host_name=%s", name);
            snprintf(b[2], 400, "--collector.endpoints=127.0.0.1:%d", agent_port);
            snprintf(b[3], 400, "--spool.dir=%s/spool-%s", dir, name);
            snprintf(b[4], 400, "--collector.ca_file=%s/pki/ca.pem", dir);
            snprintf(b[5], 400, "--collector.cert_file=%s/pki/agent-%s.pem", dir, name);
            snprintf(b[6], 400, "--collector.key_file=%s/pki/agent-%s.key", dir, name);
            snprintf(alog, sizeof(alog), "%.250s/agent-%.60s.log", dir, name);
            char *av[] = {PW_AGENT_BIN,
                          b[0],
                          b[1],
                          b[2],
                          b[3],
                          b[4],
                          b[5],
                          b[6],
                          "--collector.server_name=localhost",
                          "--agent.interval=10s",
                          "--sim.backfill=3h",
                          NULL};
            agents[c * NA + j] = pw_proc_spawn(av, alog);
        }
    }
    /* every collector judged its hosts once; then the agents stop and the values are final */
    for (int c = 0; c < NC; c++)
        pw_proc_wait(passes_done, &c, 90000, "the first analysis pass (/leaks first_pass_ms null)",
                     clog[c]);
    pw_proc_sleep_ms(3000);
    for (int i = 0; i < NC * NA; i++)
        pw_proc_stop(agents[i], SIGTERM, 30000);
    for (int c = 0; c < NC; c++)
        pw_proc_wait(all_disconnected, &c, 30000, "every host of the collector disconnected",
                     clog[c]);
    pw_proc_sleep_ms(2500); /* the last interval's series, the connected = 0 changes */
    for (int c = 0; c < NC; c++)
        pw_proc_wait(queue_empty, &c, 30000, "poolwatch_remote_write_queue_requests 0", clog[c]);
    uint64_t t = pw_proc_now_ms();
    pw_proc_wait(global_after, &t, 20000, "a global snapshot taken after the writes", clog[0]);
    size_t want[2] = {0, 0};
    for (int c = 0; c < NC; c++) {
        want[0] += count_of(c, "/api/v1/hosts?scope=local", "hosts");
        want[1] += count_of(c, "/api/v1/leaks?scope=local&limit=1000000", "suspects");
    }
    pw_proc_wait(global_converged, want, 60000,
                 "the global view holding every collector's hosts and suspects", clog[0]);

    /* hosts */
    json_t *lh = json_array(), *lt = json_array(), *ll = json_array();
    for (int c = 0; c < NC; c++) {
        json_t *h = get(c, "/api/v1/hosts?scope=local");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(h, "hosts"), i, e)
        {
            char url[64];
            snprintf(url, sizeof(url), "https://localhost:%d", api_port[c]);
            json_object_set_new(e, "collector", json_string(url));
            json_array_append(lh, e);
        }
        json_decref(h);
        /* every page (the local API gives at most 1,000 aggregates a page) */
        char path[512];
        snprintf(path, sizeof(path), "/api/v1/tags?scope=local&limit=1000");
        for (;;) {
            json_t *tg = get(c, path);
            json_array_extend(lt, json_object_get(tg, "tags"));
            const char *next = json_string_value(json_object_get(tg, "next_cursor"));
            if (next != NULL)
                snprintf(path, sizeof(path), "/api/v1/tags?scope=local&limit=1000&cursor=%s", next);
            json_decref(tg);
            if (next == NULL)
                break;
        }
        json_t *lk = get(c, "/api/v1/leaks?scope=local&limit=1000000");
        json_array_extend(ll, json_object_get(lk, "suspects"));
        json_decref(lk);
    }
    json_t *gh = get(0, "/api/v1/hosts");
    assert_string_equal(json_string_value(json_object_get(gh, "scope")), "global");
    json_t *G = by_key(json_object_get(gh, "hosts"), "name", NULL, NULL),
           *L = by_key(lh, "name", NULL, NULL);
    assert_int_equal(json_object_size(L), NC * NA);
    const char *key;
    json_t *le;
    json_object_foreach(L, key, le) if (json_object_get(G, key) == NULL)
        fprintf(stderr, "host %s: last_seen_ms %lld (now %llu): not in the global view\n", key,
                (long long)json_integer_value(json_object_get(le, "last_seen_ms")),
                (unsigned long long)pw_proc_now_ms());
    assert_int_equal(json_object_size(G), json_object_size(L));
    static const char *const HF[] = {"collector",         "connected",   "last_seen_ms",
                                     "nonpaged_bytes",    "paged_bytes", "nonpaged_limit_bytes",
                                     "paged_limit_bytes", "suspects"};
    json_object_foreach(L, key, le)
    {
        json_t *ge = json_object_get(G, key);
        if (ge == NULL)
            fail_msg("host %s: in a collector's view, not in the global one", key);
        for (size_t f = 0; f < sizeof(HF) / sizeof(*HF); f++)
            same(le, ge, HF[f], key);
    }
    fprintf(stderr, "# hosts: %zu in both views\n", json_object_size(L));
    json_decref(G), json_decref(L), json_decref(gh);

    /* tags: merge the local aggregates of one (tag, type) over the collectors */
    json_t *M = json_object();
    size_t i;
    json_array_foreach(lt, i, le)
    {
        char k[200];
        snprintf(k, sizeof(k), "%s|%s", json_string_value(json_object_get(le, "tag")),
                 json_string_value(json_object_get(le, "type")));
        json_t *m = json_object_get(M, k);
        json_int_t hosts = json_integer_value(json_object_get(le, "hosts"));
        json_int_t tot = json_integer_value(json_object_get(le, "bytes_total"));
        json_int_t mn = json_integer_value(json_object_get(le, "bytes_min"));
        json_int_t mx = json_integer_value(json_object_get(le, "bytes_max"));
        if (m == NULL) {
            json_object_set_new(M, k,
                                json_pack("{s:I,s:I,s:I,s:I}", "hosts", hosts, "bytes_total", tot,
                                          "bytes_min", mn, "bytes_max", mx));
            continue;
        }
        json_object_set_new(m, "hosts",
                            json_integer(json_integer_value(json_object_get(m, "hosts")) + hosts));
        json_object_set_new(
            m, "bytes_total",
            json_integer(json_integer_value(json_object_get(m, "bytes_total")) + tot));
        if (mn < json_integer_value(json_object_get(m, "bytes_min")))
            json_object_set_new(m, "bytes_min", json_integer(mn));
        if (mx > json_integer_value(json_object_get(m, "bytes_max")))
            json_object_set_new(m, "bytes_max", json_integer(mx));
    }
    json_t *gt = get(0, "/api/v1/tags?limit=1000000");
    json_t *GT = by_key(json_object_get(gt, "tags"), "tag", "type", NULL);
    assert_int_equal(json_object_size(GT), json_object_size(M));
    json_object_foreach(M, key, le)
    {
        char k2[220];
        snprintf(k2, sizeof(k2), "%s|", key);
        json_t *ge = json_object_get(GT, k2);
        if (ge == NULL)
            fail_msg("tag %s: in the collectors' views, not in the global one", key);
        same(le, ge, "hosts", key);
        same(le, ge, "bytes_total", key);
        same(le, ge, "bytes_min", key);
        same(le, ge, "bytes_max", key);
    }
    fprintf(stderr, "# tags: %zu (tag, type) aggregates in both views\n", json_object_size(M));
    /* one tag across the collectors: its rows, each with its owner */
    json_t *first = json_array_get(json_object_get(gt, "tags"), 0);
    snprintf(cmd, sizeof(cmd), "/api/v1/tags/%s?type=%s",
             json_string_value(json_object_get(first, "tag")),
             json_string_value(json_object_get(first, "type")));
    for (char *q = cmd; *q; q++)
        if (*q == ' ')
            *q = '_'; /* not expected: the busiest tags of the presets have no spaces */
    json_t *one = get(0, cmd);
    assert_int_equal(json_array_size(json_object_get(one, "hosts")),
                     json_integer_value(json_object_get(first, "hosts")));
    json_decref(one), json_decref(GT), json_decref(gt), json_decref(M);

    /* leaks */
    json_t *GL0 = get(0, "/api/v1/leaks?limit=1000000");
    json_t *GL = by_key(json_object_get(GL0, "suspects"), "host", "tag", "type");
    json_t *LL = by_key(ll, "host", "tag", "type");
    assert_true(json_object_size(LL) > 0); /* the leaking presets were found */
    assert_int_equal(json_object_size(GL), json_object_size(LL));
    json_object_foreach(LL, key, le)
    {
        json_t *ge = json_object_get(GL, key);
        if (ge == NULL)
            fail_msg("suspect %s: in a collector's view, not in the global one", key);
        for (int f = 0; f < 2; f++) {
            const char *fn = f ? "growth_bytes_per_h" : "score";
            double a = json_number_value(json_object_get(le, fn));
            double b = json_number_value(json_object_get(ge, fn));
            if (fabs(a - b) > 1e-9 * fmax(1.0, fabs(a)))
                fail_msg("suspect %s: %s local %.17g, global %.17g", key, fn, a, b);
        }
    }
    /* the global list by urgency as a collector's own: pool level (critical, warn, the rest),
     * then the nearest ETA (none last) */
    {
        const json_t *arr = json_object_get(GL0, "suspects");
        int prev_rank = -1;
        double prev_eta = -1;
        for (size_t k = 0; k < json_array_size(arr); k++) {
            const json_t *e = json_array_get(arr, k);
            const char *lv = json_string_value(json_object_get(e, "pool_level"));
            assert_non_null(lv);
            int rank = strcmp(lv, "critical") == 0 ? 0 : strcmp(lv, "warn") == 0 ? 1 : 2;
            const json_t *et = json_object_get(e, "pool_eta_ms");
            double eta = json_is_integer(et) ? (double)json_integer_value(et) : INFINITY;
            if (rank < prev_rank || (rank == prev_rank && eta < prev_eta))
                fail_msg("global leaks out of urgency order at %zu (%s)", k, lv);
            prev_rank = rank;
            prev_eta = eta;
        }
    }
    fprintf(stderr, "# leaks: %zu suspects in both views\n", json_object_size(LL));
    json_decref(GL), json_decref(LL), json_decref(GL0);
    json_decref(lh), json_decref(lt), json_decref(ll);
    pw_proc_kill_all();
    pw_proc_remove_dir(dir, "PW_TEST_KEEP");
}

int main(void)
{
    if (access("/usr/bin/victoria-metrics", X_OK) != 0)
        pw_test_skip_all("/usr/bin/victoria-metrics is not installed (deploy/install-deps.sh "
                         "--victoria-metrics)");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_union)};
    return pw_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
