/* test_remote_write_vm.c: remote write with its disk queue into a REAL VictoriaMetrics (Debian's
 * victoria-metrics, installed by deploy/install-deps.sh --victoria-metrics), the receiver
 * stopped and started again mid-stream, and the collector's writer itself closed and opened
 * again (a collector restart) while the receiver is away: afterwards VictoriaMetrics must
 * hold every sample the writer produced, compared exactly (labels, timestamp, value) through
 * its export API (/api/v1/export), and the writer must count none dropped or failed.
 *
 * The fleet: 8 hosts streaming through ingest (the collector test double), 24 rows each, a
 * quarter of the rows changing at each round, one leak suspect; 60 rounds, each a sample per
 * host followed by pw_remote_write_collect, the export policy on (top 4, movers, pinned
 * "Pin*", cap 12, leak series). What was produced is recorded by a second encode of the same
 * fleet with the same policy and its own cursor, at the same moments (the encoder is
 * deterministic; its output is checked by hand in test_remote_write; the record's state starts
 * afresh with the new writer at the restart). The memory queue holds 2
 * requests of at most 150 series, so the outage goes to the disk queue.
 * VictoriaMetrics runs with -dedup.minScrapeInterval=1ms: a request it stored but whose answer
 * was lost when it stopped is sent again, and the copy must not count as a second sample.
 * Skipped (exit 77, a failure with CI=true) only when victoria-metrics is not installed.
 */
#include "test_util.h"
#include "proc.h"

#include <jansson.h>
#include <signal.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "../collector/double.h"
#include "alloc.h"
#include "delta.h"
#include "fleet.h"
#include "prom_remote.pb-c.h"
#include "remote_write.h"

#define VM     "/usr/bin/victoria-metrics"
#define HOSTS  8
#define ROWS   24
#define ROUNDS 60

static char dir[256], vmdir[300], qdir[300], vmlog[300];
static int vm_port;
static uv_loop_t loop;

/* ---- what was produced: "name{labels} value @ts" lines ------------------------------------- */

typedef struct lines_s {
    char **v;
    size_t n, cap;
} lines_t;

static void lines_add(lines_t *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        assert_non_null(l->v);
    }
    l->v[l->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int record(void *arg, uint8_t *body, size_t len, size_t series)
{
    lines_t *l = arg;
    size_t ulen;
    assert_int_equal(snappy_uncompressed_length((const char *)body, len, &ulen), SNAPPY_OK);
    char *raw = malloc(ulen ? ulen : 1);
    assert_int_equal(snappy_uncompress((const char *)body, len, raw, &ulen), SNAPPY_OK);
    Prometheus__WriteRequest *wr =
        prometheus__write_request__unpack(NULL, ulen, (const uint8_t *)raw);
    free(raw);
    assert_non_null(wr);
    assert_int_equal(wr->n_timeseries, series);
    for (size_t i = 0; i < wr->n_timeseries; i++) {
        const Prometheus__TimeSeries *ts = wr->timeseries[i];
        char o[512];
        int p = snprintf(o, sizeof(o), "%s{", ts->labels[0]->value);
        for (size_t k = 1; k < ts->n_labels; k++)
            p += snprintf(o + p, sizeof(o) - (size_t)p, "%s%s=%s", k > 1 ? "," : "",
                          ts->labels[k]->name, ts->labels[k]->value);
        snprintf(o + p, sizeof(o) - (size_t)p, "} %.17g @%lld", ts->samples[0]->value,
                 (long long)ts->samples[0]->timestamp);
        lines_add(l, o);
    }
    prometheus__write_request__free_unpacked(wr, NULL);
    pw_free(body);
    return 0;
}

/* ---- the loop ------------------------------------------------------------------------------- */

static void on_wake(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop for ms milliseconds (the writer's requests and retries). */
static void spin(uint64_t ms)
{
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    uv_update_time(&loop);
    uint64_t end = uv_now(&loop) + ms;
    while (uv_now(&loop) < end) {
        uv_timer_start(&t, on_wake, end - uv_now(&loop), 0);
        uv_run(&loop, UV_RUN_ONCE);
        uv_update_time(&loop);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

static pw_remote_write_t *writer_new(const pw_remote_write_opts_t *o)
{
    pw_remote_write_t *w;
    pw_diag_t d;
    memset(&d, 0, sizeof(d));
    int r = pw_remote_write_new(&loop, o, &w, &d);
    if (r != 0)
        fail_msg("pw_remote_write_new: %s: %s", pw_strerror(r), d.msg);
    return w;
}

/* ---- the test ------------------------------------------------------------------------------- */

static void test_outage(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof(dir), "%s/pw-rwvm-XXXXXX", tmp);
    assert_non_null(mkdtemp(dir));
    snprintf(vmdir, sizeof(vmdir), "%s/vm", dir);
    snprintf(qdir, sizeof(qdir), "%s/queue", dir);
    snprintf(vmlog, sizeof(vmlog), "%s/vm.log", dir);
    vm_port = pw_proc_free_port();
    assert_int_equal(uv_loop_init(&loop), 0);
    pid_t vm = pw_proc_vm_start(vmdir, vm_port, vmlog);

    pw_double_t dbl;
    assert_int_equal(pw_double_open(&dbl), 0);
    const pw_fleet_t *f = pw_ingest_fleet(dbl.ing);
    pw_host_t *h[HOSTS];
    pw_delta_enc_t enc[HOSTS];
    for (int i = 0; i < HOSTS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "vmhost-%02d", i);
        assert_non_null(h[i] = pw_double_stream(&dbl, name, 64, 1));
        assert_int_equal(pw_delta_enc_init(&enc[i], 64), 0);
    }
    pw_suspect_t sp;
    memset(&sp, 0, sizeof(sp));
    snprintf(sp.host, sizeof(sp.host), "vmhost-03");
    memcpy(sp.tag, "T005", 4);
    sp.tag_len = 4;
    sp.pool = PW_POOL_NONPAGED;
    sp.d.rate_bytes_per_h = 4096;
    sp.d.score = 1.25;
    assert_int_equal(pw_analysis_run_publish(dbl.an, &sp, 1), 0);

    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", vm_port);
    pw_remote_write_opts_t o = {.url = url,
                                .interval_ms = 1000,
                                .tags_per_host = 4,
                                .policy = {.movers = 1,
                                           .hold_ms = 20000,
                                           .max_tags_per_host = 12,
                                           .pinned_tags = "Pin*",
                                           .leak_series = 1},
                                .queue_dir = qdir,
                                .timeout_ms = 2000,
                                .max_queue = 2,
                                .max_series_per_request = 150,
                                .backoff_initial_ms = 100,
                                .backoff_max_ms = 400,
                                .max_sample_age_ms = UINT64_MAX,
                                .max_clock_skew_ms = UINT64_MAX};
    pw_remote_write_t *w = writer_new(&o);
    pw_remote_write_policy_t pol = o.policy;
    pol.tags_per_host = o.tags_per_host;
    pw_remote_write_cursor_t mirror = {.sent_ms = NULL};
    lines_t want = {0};

    uint64_t t0 = pw_proc_now_ms() - 10 * 60 * 1000; /* inside VM's retention, in the past */
    uint32_t x = 2463534242u;
    uint64_t bytes[HOSTS][ROWS];
    pw_remote_write_stats_t st;
    size_t max_disk = 0;
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < HOSTS; i++) {
            pw_sample_t s;
            pw_sample_init(&s);
            s.seq = (uint64_t)k + 1;
            s.timestamp_ms = t0 + (uint64_t)k * 5000 + (uint64_t)i;
            for (int r = 0; r < ROWS; r++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                if (k == 0)
                    bytes[i][r] = 1000 + (uint64_t)r * 4096 + (x % 512) * 16;
                else if (x % 4 == 0)
                    bytes[i][r] += (x >> 8) % 4096 + 16;
                char tag[5];
                snprintf(tag, sizeof(tag), r < 2 ? "Pin%d" : "T%03d", r);
                assert_int_equal(pw_sample_add(&s, tag, 4, r % 3 ? PW_POOL_NONPAGED : PW_POOL_PAGED,
                                               bytes[i][r] / 16 + 5, 5, bytes[i][r] / 16,
                                               bytes[i][r]),
                                 0);
            }
            s.totals.nonpaged_bytes = 50000000 + (uint64_t)k * 1000 + (uint64_t)i;
            s.totals.paged_bytes = 90000000 + (uint64_t)k * 3000;
            assert_int_equal(pw_double_send(&dbl, &enc[i], h[i], &s), 0);
            pw_sample_close(&s);
        }
        assert_true(pw_remote_write_encode_policy(f, dbl.an, &pol, 150, &mirror, record, &want) >
                    0);
        assert_true(pw_remote_write_collect(w, f, dbl.an) > 0);
        spin(k >= 20 && k < 40 ? 150 : 60);
        pw_remote_write_get_stats(w, &st);
        if (st.disk_queued > max_disk)
            max_disk = st.disk_queued;
        if (k == 19) { /* the receiver goes away */
            assert_int_equal(pw_proc_stop(vm, SIGTERM, 30000) >= 0, 1);
        }
        if (k == 30) { /* the collector restarts meanwhile: its memory queue goes to disk */
            pw_remote_write_close(w);
            spin(50);
            w = writer_new(&o);
            /* a new writer starts its export state afresh (no movers at a host's first
             * encode): so does the record of what it produces */
            pw_remote_write_cursor_free(&mirror);
        }
        if (k == 39) /* the receiver is back, on the same data */
            vm = pw_proc_vm_start(vmdir, vm_port, vmlog);
    }
    /* everything goes out */
    for (int i = 0; i < 600; i++) {
        pw_remote_write_get_stats(w, &st);
        if (st.queued == 0 && st.disk_queued == 0)
            break;
        spin(100);
    }
    pw_remote_write_get_stats(w, &st);
    fprintf(stderr,
            "# produced %zu samples; after the restart: sent %llu, dropped %llu, failed "
            "%llu, retries %llu; disk queue at most %zu requests\n",
            want.n, (unsigned long long)st.samples, (unsigned long long)st.dropped_samples,
            (unsigned long long)st.failed_samples, (unsigned long long)st.retries, max_disk);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.disk_queued, 0);
    assert_int_equal(st.dropped_samples, 0);
    assert_int_equal(st.failed_samples, 0);
    assert_true(max_disk >= 10); /* the outage went through the disk queue */

    /* what VictoriaMetrics holds */
    char cmd[1024], out[400];
    snprintf(out, sizeof(out), "%s/export.jsonl", dir);
    snprintf(cmd, sizeof(cmd),
             "curl -sf http://127.0.0.1:%d/internal/force_flush >/dev/null && "
             "curl -sf http://127.0.0.1:%d/api/v1/export -d 'match[]={__name__=~\"poolwatch_.*\"}' "
             "-d start=%llu > %s",
             vm_port, vm_port, (unsigned long long)(t0 / 1000 - 60), out);
    lines_t got = {0};
    for (int attempt = 0; attempt < 20; attempt++) {
        for (size_t i = 0; i < got.n; i++)
            free(got.v[i]);
        got.n = 0;
        assert_int_equal(system(cmd), 0);
        FILE *fp = fopen(out, "r");
        assert_non_null(fp);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, fp) > 0) {
            json_error_t je;
            json_t *j = json_loads(line, 0, &je);
            if (j == NULL)
                fail_msg("export: not JSON: %s (%s)", je.text, line);
            json_t *m = json_object_get(j, "metric"), *vals = json_object_get(j, "values"),
                   *tss = json_object_get(j, "timestamps");
            /* labels in name order, as the writer sends them */
            const char *keys[8];
            size_t nk = 0;
            const char *key;
            json_t *v;
            json_object_foreach(m, key, v)
            {
                if (strcmp(key, "__name__") != 0 && nk < 8)
                    keys[nk++] = key;
            }
            qsort(keys, nk, sizeof(*keys), cmp_str);
            char lab[400];
            int p = snprintf(lab, sizeof(lab), "%s{",
                             json_string_value(json_object_get(m, "__name__")));
            for (size_t k = 0; k < nk; k++)
                p += snprintf(lab + p, sizeof(lab) - (size_t)p, "%s%s=%s", k ? "," : "", keys[k],
                              json_string_value(json_object_get(m, keys[k])));
            assert_int_equal(json_array_size(vals), json_array_size(tss));
            for (size_t k = 0; k < json_array_size(vals); k++) {
                json_t *jv = json_array_get(vals, k);
                double dv =
                    json_is_integer(jv) ? (double)json_integer_value(jv) : json_real_value(jv);
                char o2[512];
                snprintf(o2, sizeof(o2), "%s} %.17g @%lld", lab, dv,
                         (long long)json_integer_value(json_array_get(tss, k)));
                lines_add(&got, o2);
            }
            json_decref(j);
        }
        free(line);
        fclose(fp);
        if (got.n >= want.n)
            break;
        pw_proc_sleep_ms(500); /* VictoriaMetrics makes new data searchable within a second */
    }
    qsort(want.v, want.n, sizeof(*want.v), cmp_str);
    qsort(got.v, got.n, sizeof(*got.v), cmp_str);
    size_t missing = 0, extra = 0, i = 0, j = 0;
    while (i < want.n || j < got.n) {
        int c = i == want.n ? 1 : j == got.n ? -1 : strcmp(want.v[i], got.v[j]);
        if (c < 0) {
            if (missing++ < 5)
                fprintf(stderr, "missing in VictoriaMetrics: %s\n", want.v[i]);
            i++;
        } else if (c > 0) {
            if (extra++ < 5)
                fprintf(stderr, "not produced: %s\n", got.v[j]);
            j++;
        } else {
            i++, j++;
        }
    }
    fprintf(stderr, "# VictoriaMetrics holds %zu samples: %zu missing, %zu not produced\n", got.n,
            missing, extra);
    assert_int_equal(missing, 0);
    assert_int_equal(extra, 0);
    assert_int_equal(got.n, want.n);

    for (size_t k = 0; k < want.n; k++)
        free(want.v[k]);
    for (size_t k = 0; k < got.n; k++)
        free(got.v[k]);
    free(want.v);
    free(got.v);
    pw_remote_write_cursor_free(&mirror);
    pw_remote_write_close(w);
    spin(50);
    for (int k = 0; k < HOSTS; k++)
        pw_delta_enc_close(&enc[k]);
    pw_double_close(&dbl);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    pw_proc_stop(vm, SIGTERM, 30000);
    pw_proc_remove_dir(dir, "PW_TEST_KEEP");
}

int main(void)
{
    if (access(VM, X_OK) != 0)
        pw_test_skip_all(VM " is not installed (deploy/install-deps.sh --victoria-metrics)");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_outage)};
    return pw_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
