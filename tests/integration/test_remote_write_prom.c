/* test_remote_write_prom.c: remote write into a REAL Prometheus (Debian's prometheus 2.42,
 * installed by deploy/install-deps.sh --prometheus): Prometheus started here on a free loopback
 * port with --web.enable-remote-write-receiver, a throw-away TSDB and a config without scrape
 * jobs; a real poolwatch-collector writing to it every second; a real poolwatch-agent on the
 * simulator. Once the agent has stopped and its last sample went out, Prometheus' HTTP API
 * (/api/v1/query) must hold, for the host, poolwatch_pool_bytes equal to what the collector's
 * own API reports (GET /api/v1/hosts/{host}), stamped with the host's last sample time
 * (timestamp() of the series = last_seen_ms), and the collector's /metrics must count the
 * samples as accepted (2xx) with none failed or dropped.
 * Skipped (exit 77, a failure with CI=true) only when prometheus is not installed and cannot be.
 */
#include "test_util.h"
#include "proc.h"

#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOST  "rwhost"
#define TOKEN "rw-admin-token-0123456789"

static char dir[256];
/* Runs `cmd` (curl ... > dir/out.json) and parses the file; NULL when it is not JSON. */
static json_t *curl_json(const char *cmd)
{
    char out[300];
    snprintf(out, sizeof(out), "%s/out.json", dir);
    unlink(out);
    if (system(cmd) != 0)
        return NULL;
    json_error_t je;
    return json_load_file(out, 0, &je);
}

static int prom_port, api_port;

/* The collector's view of the host: GET /api/v1/hosts/{host} (the object, or its "host"). */
static json_t *collector_host(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' "
             "https://localhost:%d/api/v1/hosts/" HOST " > %s/out.json",
             dir, TOKEN, api_port, dir);
    json_t *j = curl_json(cmd);
    if (j != NULL && json_object_get(j, "last_seen_ms") == NULL && json_object_get(j, "host"))
        json_object_set(j, "_h", json_object_get(j, "host"));
    return j;
}

static uint64_t jint(json_t *host, const char *key)
{
    json_t *h = json_object_get(host, "_h") ? json_object_get(host, "_h") : host;
    json_t *v = json_object_get(h, key);
    assert_true(json_is_integer(v));
    return (uint64_t)json_integer_value(v);
}

/* One instant query; the single result's value (as text) into val, its time into *t.
 * Returns the number of results, or -1 when Prometheus did not answer. */
static int prom_query(const char *q, double *t, char *val, size_t size)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "curl -s -G --data-urlencode 'query=%s' http://127.0.0.1:%d/api/v1/query > "
             "%s/out.json",
             q, prom_port, dir);
    json_t *j = curl_json(cmd);
    if (j == NULL)
        return -1;
    json_t *res = json_object_get(json_object_get(j, "data"), "result");
    int n = (int)json_array_size(res);
    if (n >= 1) {
        json_t *v = json_object_get(json_array_get(res, 0), "value");
        *t = json_real_value(json_array_get(v, 0)) +
             (double)json_integer_value(json_array_get(v, 0));
        snprintf(val, size, "%s", json_string_value(json_array_get(v, 1)));
    }
    json_decref(j);
    return n;
}

static const char *prometheus_bin(void)
{
    static const char *c[] = {"/usr/bin/prometheus", "/usr/local/bin/prometheus"};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++)
            if (access(c[i], X_OK) == 0)
                return c[i];
        /* not installed: install it as deploy/test.sh would (a machine without network or
         * root fails here and the test skips) */
        if (pass == 0 &&
            system(PW_SOURCE_DIR "/deploy/install-deps.sh --prometheus >/dev/null 2>&1") != 0)
            break;
    }
    return NULL;
}

static int prom_ready(void *arg)
{
    (void)arg;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%d/-/ready >/dev/null 2>&1", prom_port);
    return system(cmd) == 0;
}

static int prom_has_3_samples(void *arg)
{
    (void)arg;
    double t;
    char val[64];
    return prom_query("count_over_time(poolwatch_pool_bytes{host=\"" HOST
                      "\",pool=\"nonpaged\"}[10m])",
                      &t, val, sizeof(val)) == 1 &&
           atoi(val) >= 3;
}

/* The collector's API says no agent session is open for the host. */
static int host_gone(void *arg)
{
    (void)arg;
    json_t *h = collector_host();
    if (h == NULL)
        return 0;
    json_t *o = json_object_get(h, "_h") ? json_object_get(h, "_h") : h;
    int gone = json_is_false(json_object_get(o, "connected"));
    json_decref(h);
    return gone;
}

typedef struct {
    int64_t want_ms, got_ms;
} ts_wait_t;

static int prom_has_last(void *arg)
{
    ts_wait_t *w = arg;
    double t;
    char val[64];
    if (prom_query("timestamp(poolwatch_pool_bytes{host=\"" HOST "\",pool=\"nonpaged\"})", &t, val,
                   sizeof(val)) != 1)
        return 0;
    w->got_ms = (int64_t)(strtod(val, NULL) * 1000.0 + 0.5);
    return w->got_ms == w->want_ms;
}

static void test_remote_write_prometheus(void **state)
{
    (void)state;
    const char *bin = prometheus_bin();
    if (bin == NULL)
        pw_test_skip("prometheus is not installed and deploy/install-deps.sh --prometheus "
                     "could not install it: remote write NOT checked against Prometheus");
    snprintf(dir, sizeof(dir), "/tmp/pw-rw-prom-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, cmd, "--agent " HOST);
    snprintf(cmd, sizeof(cmd), "%s/tokens", dir);
    pw_proc_tokens_file(cmd, TOKEN, "admin rw");
    snprintf(cmd, sizeof(cmd), "printf 'global:\\n  scrape_interval: 1m\\n' > %s/prometheus.yml",
             dir);
    assert_int_equal(system(cmd), 0);

    /* Prometheus */
    prom_port = pw_proc_free_port();
    char p0[300], p1[300], p2[300], p3[64], plog[300];
    snprintf(p0, sizeof(p0), "%s", bin);
    snprintf(p1, sizeof(p1), "--config.file=%s/prometheus.yml", dir);
    snprintf(p2, sizeof(p2), "--storage.tsdb.path=%s/tsdb", dir);
    snprintf(p3, sizeof(p3), "--web.listen-address=127.0.0.1:%d", prom_port);
    snprintf(plog, sizeof(plog), "%s/prometheus.log", dir);
    char *pargv[] = {p0, p1, p2, p3, "--web.enable-remote-write-receiver", NULL};
    pw_proc_spawn(pargv, plog);
    pw_proc_wait(prom_ready, NULL, 15000, "Prometheus ready (GET /-/ready)", plog);

    /* the collector, writing every second; the agent on the simulator, a sample every 300 ms */
    int agent_port = pw_proc_free_port();
    api_port = pw_proc_free_port();
    char c1[64], c2[300], c3[300], c4[300], c5[300], c6[64], c7[300], c8[300], clog[300];
    snprintf(c1, sizeof(c1), "--agents.listen=127.0.0.1:%d", agent_port);
    snprintf(c2, sizeof(c2), "--store.path=%s/pw.db", dir);
    snprintf(c3, sizeof(c3), "--agents.ca_file=%s/pki/ca.pem", dir);
    snprintf(c4, sizeof(c4), "--agents.cert_file=%s/pki/collector.pem", dir);
    snprintf(c5, sizeof(c5), "--agents.key_file=%s/pki/collector.key", dir);
    snprintf(c6, sizeof(c6), "--http.listen=127.0.0.1:%d", api_port);
    snprintf(c7, sizeof(c7), "--http.tokens_file=%s/tokens", dir);
    snprintf(c8, sizeof(c8), "--remote_write.url=http://127.0.0.1:%d/api/v1/write", prom_port);
    snprintf(clog, sizeof(clog), "%s/collector.log", dir);
    char *cargv[] = {PW_COLLECTOR_BIN, c1, c2, c3, c4, c5, c6, c7, c8, "--remote_write.interval=1s",
                     /* the top rows alone (the movers are test_remote_write's and
                      * test_remote_write_vm's) */
                     "--remote_write.movers=false", "--collector.log_level=debug", NULL};
    pw_proc_spawn(cargv, clog);
    char a1[64], a2[300], a3[300], a4[300], a5[300], alog[300];
    snprintf(a1, sizeof(a1), "--collector.endpoints=127.0.0.1:%d", agent_port);
    snprintf(a2, sizeof(a2), "--spool.dir=%s/spool", dir);
    snprintf(a3, sizeof(a3), "--collector.ca_file=%s/pki/ca.pem", dir);
    snprintf(a4, sizeof(a4), "--collector.cert_file=%s/pki/agent-" HOST ".pem", dir);
    snprintf(a5, sizeof(a5), "--collector.key_file=%s/pki/agent-" HOST ".key", dir);
    snprintf(alog, sizeof(alog), "%s/agent.log", dir);
    char *aargv[] = {PW_AGENT_BIN,
                     "--agent.source=sim:leak-linear/0",
                     "--agent.host_name=" HOST,
                     a1,
                     a2,
                     a3,
                     a4,
                     a5,
                     "--collector.server_name=localhost",
                     "--collector.backoff_min=200ms",
                     "--agent.interval=300ms",
                     NULL};
    pid_t agent = pw_proc_spawn(aargv, alog);

    /* samples flow: wait until Prometheus holds 3 samples of the host's series (3 remote
     * writes, each with the newest sample of the host) */
    double t;
    char val[64];
    pw_proc_wait(prom_has_3_samples, NULL, 20000,
                 "3 samples of poolwatch_pool_bytes{host=" HOST ",pool=nonpaged} in Prometheus",
                 clog);
    /* stop the agent and wait until the collector has seen its session end: the collector's
     * last sample of the host is final */
    pw_proc_stop(agent, SIGTERM, 30000);
    pw_proc_wait(host_gone, NULL, 20000, "GET /api/v1/hosts/" HOST ": not connected", clog);
    json_t *h = collector_host();
    assert_non_null(h);
    uint64_t last = jint(h, "last_seen_ms");
    uint64_t np = jint(h, "nonpaged_bytes");
    uint64_t pg = jint(h, "paged_bytes");
    json_decref(h);
    assert_true(last > 0);
    /* Prometheus gets it at the next interval: timestamp() of the series is the sample's */
    ts_wait_t tw = {(int64_t)last, 0};
    pw_proc_wait(prom_has_last, &tw, 10000,
                 "timestamp(poolwatch_pool_bytes{host=" HOST ",pool=nonpaged}) in Prometheus = "
                 "the host's last_seen_ms",
                 clog);
    assert_int_equal(tw.got_ms, (int64_t)last);
    char q[256];
    snprintf(q, sizeof(q), "poolwatch_pool_bytes{host=\"" HOST "\",pool=\"nonpaged\"}");
    assert_int_equal(prom_query(q, &t, val, sizeof(val)), 1);
    assert_int_equal(strtoull(val, NULL, 10), np);
    snprintf(q, sizeof(q), "poolwatch_pool_bytes{host=\"" HOST "\",pool=\"paged\"}");
    assert_int_equal(prom_query(q, &t, val, sizeof(val)), 1);
    assert_int_equal(strtoull(val, NULL, 10), pg);
    /* the rows: 20 per host (the simulator has more), 2 gauges each */
    assert_int_equal(
        prom_query("count(poolwatch_tag_bytes{host=\"" HOST "\"})", &t, val, sizeof(val)), 1);
    assert_string_equal(val, "20");
    assert_int_equal(
        prom_query("count(poolwatch_tag_allocations{host=\"" HOST "\"})", &t, val, sizeof(val)), 1);
    assert_string_equal(val, "20");
    /* the collector's own counters */
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' "
             "https://localhost:%d/metrics > %s/metrics.txt",
             dir, TOKEN, api_port, dir);
    assert_int_equal(system(cmd), 0);
    char mpath[300];
    snprintf(mpath, sizeof(mpath), "%s/metrics.txt", dir);
    size_t len;
    char *m = pw_test_read_file(mpath, &len);
    assert_non_null(strstr(m, "\npoolwatch_remote_write_failed_samples_total 0\n"));
    assert_non_null(strstr(m, "\npoolwatch_remote_write_dropped_samples_total 0\n"));
    assert_non_null(strstr(m, "\npoolwatch_remote_write_last_status 204\n"));
    assert_null(strstr(m, "\npoolwatch_remote_write_samples_total 0\n"));
    free(m);
    pw_proc_kill_all();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (getenv("PW_KEEP_E2E") == NULL)
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_write_prometheus),
    };
    return pw_proc_run_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
