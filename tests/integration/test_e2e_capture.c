/* test_e2e_capture.c: the seed story from a 15-minute capture, through the real binaries.
 *
 * The story a user carries in their head: a Windows Server 2003 /3GB box (128 MB nonpaged
 * limit) whose nonpaged pool climbs from about 30 MB to about 120 MB because of tag `Ddk `.
 * The quickstart shows it from a live agent (the `ddk-2003` simulation); an admin who followed
 * Microsoft's procedure has it as poolmon screens saved every 15 minutes instead. This test
 * writes that capture from the same simulation (agent/source_sim.c, preset ddk-2003: the rows
 * poolmon would have shown, every 15 min, in poolmon's XP layout with its "Pool N:" total),
 * imports it with `poolwatch import --os "Windows Server 2003 x86 /3GB"` into a running
 * `poolwatch-collector`, and reads the answer through the API, as a user would:
 *   leaks   `Ddk ` (nonpaged) is the first suspect; no cache (Irp, File, Ntfr: they plateaued
 *           days before the end) and no flat decoy (Mmcm, r100) is listed
 *   limit   134,217,728 bytes, source "computed", "Windows Server 2003 x86 with /3GB: 128 MB"
 *           (Microsoft's "Pushing the Limits of Windows: Paged and Nonpaged Pool": 128 MB with
 *           /3GB on 2003 x86)
 *   pool    the last screen's "Pool N:" figure (K x 1024), and its ratio to the limit
 *   ETA     the time the pool reaches its limit, read off the simulation itself continued past
 *           the capture's end (the first 15-min screen at or over 128 MiB), lies within the
 *           ETA's range; the ETA is counted from the last screen
 * Two captures: the whole 14 days, ending at midnight UTC (outside the leak's office hours,
 * 08-18 UTC), and the last 3 days of them ending at 14:00 UTC (inside them).
 */
#include "test_util.h"
#include "proc.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "detect_gen.h"
#include "sample.h"
#include "source_sim.h"

#define TOKEN   "capture-token-0123456789abcdef"
#define QUARTER 900000ull
#define DAY_MS  86400000ull
#define T0      1761955200000ull /* 2025-11-01 00:00:00 UTC: sample 0 of the simulation */
#define LIMIT   134217728ull     /* 128 MiB */
#define HORIZON (30 * 96)        /* screens the simulation is continued by, at most */
#define WAIT_MS 120000

static char dir[256], log_path[400];
static int http_port;
static pw_proc_daemon_t collector_bin = {NULL, PW_COLLECTOR_BIN, dir};

static json_t *get(const char *path)
{
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *body = pw_proc_https(ca, http_port, TOKEN, path, NULL);
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    free(body);
    return j != NULL ? j : json_object();
}

typedef struct {
    uint64_t first_ms, last_ms; /* the capture's first and last screen */
    uint64_t np_last;           /* the last screen's "Pool N:", in bytes (K x 1024) */
    uint64_t full_ms;           /* the first screen after the capture at or over the limit */
} capture_t;

/* Writes screens [from, to) of the ddk-2003 simulation, 15 min apart from T0, as poolmon text
 * to `path`; then goes on with the simulation (unwritten) until its pool reaches the limit. */
static pw_sim_t *sim_at(uint64_t start_ms)
{
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = start_ms;
    cfg.sim_interval_ms = QUARTER;
    pw_sim_t *sim;
    pw_diag_t d;
    assert_int_equal(pw_sim_new("ddk-2003", 0, &cfg, &sim, &d), 0);
    return sim;
}

/* As write_capture, with the host rebooted before screen `reboot` (0: never): from there on the
 * screens are those of the simulation started again at that time (its counters and pool from
 * their start), as poolmon would have shown them after the reboot. */
static void write_capture_reboot(const char *path, size_t from, size_t to, size_t reboot,
                                 capture_t *c)
{
    pw_sim_t *sim = sim_at(T0);
    pw_sample_t s;
    pw_sample_init(&s);
    char *text = NULL;
    size_t len = 0, cap = 0;
    memset(c, 0, sizeof(*c));
    for (size_t k = 0; k < to + HORIZON && c->full_ms == 0; k++) {
        if (reboot > 0 && k == reboot) {
            pw_sim_free(sim);
            sim = sim_at(T0 + k * QUARTER);
        }
        pw_sample_reset(&s);
        assert_int_equal(pw_sim_next(sim, &s), 0);
        assert_int_equal(s.timestamp_ms, T0 + k * QUARTER);
        if (k >= from && k < to) {
            assert_int_equal(pw_gen_poolmon_screen(&s, 1, &text, &len, &cap), 0);
            if (k == from)
                c->first_ms = s.timestamp_ms;
            c->last_ms = s.timestamp_ms;
            c->np_last = s.totals.nonpaged_bytes / 1024 * 1024; /* as "Pool N: %lluK" says */
        } else if (k >= to && s.totals.nonpaged_bytes >= LIMIT) {
            c->full_ms = s.timestamp_ms;
        }
    }
    assert_true(c->full_ms > c->last_ms); /* the story runs out within the horizon */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(text);
    pw_sample_close(&s);
    pw_sim_free(sim);
}

static const char *judged_host;

static int judged(void *arg)
{
    (void)arg;
    const char *host = judged_host;
    char p[200];
    snprintf(p, sizeof(p), "/api/v1/hosts/%s", host);
    json_t *h = get(p);
    int ok = json_is_integer(json_object_get(h, "nonpaged_eta_ms"));
    json_decref(h);
    return ok;
}

static void iso(uint64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What the API said of a capture's nonpaged pool: its ETA, range and how it was reckoned. */
typedef struct {
    json_int_t eta, soon, late, since_boot;
    char method[16], note[300];
} eta_t;

/* `poolwatch import FILE --host HOST --interval 15m [--start START] --os ...` (start NULL: the
 * CLI's default, the screens end now); fails the test when it fails. */
static void import_file(const char *path, const char *host, const char *start)
{
    char cmd[2000], log[400];
    snprintf(cmd, sizeof(cmd),
             "POOLWATCH_URL=https://localhost:%d POOLWATCH_CA='%s/pki/ca.pem' "
             "POOLWATCH_TOKEN=" TOKEN " '%s' import '%s' --host %s --interval 15m %s%s "
             "--os 'Windows Server 2003 x86 /3GB' >>'%s/import.log' 2>&1",
             http_port, dir, PW_CLI_BIN, path, host, start ? "--start " : "", start ? start : "",
             dir);
    int st = system(cmd);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        snprintf(log, sizeof(log), "%s/import.log", dir);
        pw_proc_dump_log(log, 20);
        fail_msg("poolwatch import of %s failed", host);
    }
}

static void check_judged(const char *host, const capture_t *cp, size_t from, size_t to,
                         size_t reboot, eta_t *out);

/* Imports screens [from, to) as `host` (rebooted before screen `reboot`, 0: never) and checks
 * what the API says of it; its nonpaged ETA into *out (may be NULL). */
static void check_capture_at(const char *host, size_t from, size_t to, size_t reboot, eta_t *out)
{
    char path[400], start[32];
    snprintf(path, sizeof(path), "%s/%s.txt", dir, host);
    capture_t c;
    write_capture_reboot(path, from, to, reboot, &c);
    iso(c.first_ms, start, sizeof(start));
    import_file(path, host, start);
    check_judged(host, &c, from, to, reboot, out);
}

/* Waits for imported `host` (screens [from, to) of capture *cp, rebooted before screen
 * `reboot`, 0: never) to be judged and checks what the API says of it: Ddk first, its limit,
 * pool and ETA; its nonpaged ETA into *out (may be NULL). */
static void check_judged(const char *host, const capture_t *cp, size_t from, size_t to,
                         size_t reboot, eta_t *out)
{
    capture_t c = *cp;
    judged_host = host;
    pw_proc_wait(judged, NULL, WAIT_MS, "the imported host judged (its nonpaged ETA)", log_path);

    char q[200];
    snprintf(q, sizeof(q), "/api/v1/leaks?host=%s", host);
    json_t *l = get(q);
    json_t *sus = json_object_get(l, "suspects");
    assert_true(json_array_size(sus) >= 1);
    json_t *first = json_array_get(sus, 0);
    assert_string_equal(json_string_value(json_object_get(first, "tag")) ?: "", "Ddk ");
    assert_string_equal(json_string_value(json_object_get(first, "type")) ?: "", "nonpaged");
    /* the leak's pool ETA is the host's, said the same way (it was re-told as "the pool's
     * trend" beside a day repeated) */
    char leak_method[16], leak_note[300];
    json_int_t leak_eta = json_integer_value(json_object_get(first, "pool_eta_ms"));
    snprintf(leak_method, sizeof(leak_method), "%s",
             json_string_value(json_object_get(first, "pool_eta_method")) ?: "");
    snprintf(leak_note, sizeof(leak_note), "%s",
             json_string_value(json_object_get(first, "pool_eta_note")) ?: "");
    size_t i;
    json_t *x;
    json_array_foreach(sus, i, x)
    {
        const char *tag = json_string_value(json_object_get(x, "tag")) ?: "";
        static const char *not_leaks[] = {"Irp ", "File", "Ntfr", "Mmcm", "r100"};
        for (size_t k = 0; k < sizeof(not_leaks) / sizeof(not_leaks[0]); k++)
            if (strcmp(tag, not_leaks[k]) == 0 && reboot > 0 && i > 0)
                print_message("%s: '%s' listed after 'Ddk ' (%s)\n", host, tag,
                              json_string_value(json_object_get(x, "evidence")) ?: "");
            else if (strcmp(tag, not_leaks[k]) == 0)
                fail_msg("%s: '%s' listed as a suspect beside 'Ddk '", host, tag);
    }
    json_decref(l);

    snprintf(q, sizeof(q), "/api/v1/hosts/%s", host);
    json_t *h = get(q);
    assert_int_equal(json_integer_value(json_object_get(h, "nonpaged_limit_bytes")), LIMIT);
    assert_string_equal(json_string_value(json_object_get(h, "nonpaged_limit_source")), "computed");
    assert_string_equal(json_string_value(json_object_get(h, "nonpaged_limit_detail")),
                        "Windows Server 2003 x86 with /3GB: 128 MB");
    assert_int_equal(json_integer_value(json_object_get(h, "last_seen_ms")), c.last_ms);
    assert_int_equal(json_integer_value(json_object_get(h, "nonpaged_bytes")), c.np_last);
    assert_true(fabs(json_real_value(json_object_get(h, "nonpaged_ratio")) -
                     (double)c.np_last / (double)LIMIT) < 1e-9);
    json_int_t eta = json_integer_value(json_object_get(h, "nonpaged_eta_ms"));
    assert_int_equal(leak_eta, eta);
    assert_string_equal(leak_method,
                        json_string_value(json_object_get(h, "nonpaged_eta_method")) ?: "");
    assert_string_equal(leak_note,
                        json_string_value(json_object_get(h, "nonpaged_eta_note")) ?: "");
    json_t *rg = json_object_get(h, "nonpaged_eta_range_ms");
    json_int_t soon = json_integer_value(json_array_get(rg, 0));
    json_int_t late = json_integer_value(json_array_get(rg, 1));
    char a[32], b[32], e[32], t[32];
    iso((uint64_t)soon, a, sizeof(a));
    iso((uint64_t)late, b, sizeof(b));
    iso((uint64_t)eta, e, sizeof(e));
    iso(c.full_ms, t, sizeof(t));
    print_message("%s: %zu screens, Pool N %" PRIu64 " B, ETA %s (range %s .. %s, basis %s: %s); "
                  "the simulation reaches 128 MiB at %s\n",
                  host, to - from, c.np_last, e, a, b,
                  json_string_value(json_object_get(h, "nonpaged_eta_basis")),
                  json_string_value(json_object_get(h, "nonpaged_eta_note")), t);
    assert_true(soon <= eta && eta <= late);
    assert_true((uint64_t)eta > c.last_ms);
    /* after a reboot the ETA rests on the hours since it, when the caches fill again: it says
     * so (since its boot ...), and cannot know the simulation's 14 days from them */
    if (reboot == 0 && !((uint64_t)soon <= c.full_ms && c.full_ms <= (uint64_t)late))
        fail_msg("%s: the pool reaches its limit at %s, outside the ETA's range %s .. %s", host, t,
                 a, b);
    if (out != NULL) {
        out->eta = eta;
        out->soon = soon;
        out->late = late;
        out->since_boot = json_integer_value(json_object_get(h, "nonpaged_eta_since_boot_ms"));
        snprintf(out->method, sizeof(out->method), "%s",
                 json_string_value(json_object_get(h, "nonpaged_eta_method")) ?: "");
        snprintf(out->note, sizeof(out->note), "%s",
                 json_string_value(json_object_get(h, "nonpaged_eta_note")) ?: "");
    }
    json_decref(h);
}

static void check_capture(const char *host, size_t from, size_t to)
{
    check_capture_at(host, from, to, 0, NULL);
}

static int up(void *arg)
{
    (void)arg;
    json_t *h = get("/api/v1/hosts");
    int ok = json_object_get(h, "hosts") != NULL;
    json_decref(h);
    return ok;
}

/* A test directory with its PKI and an admin token, and a collector answering on it. */
static void start(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pw-capture-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[400];
    snprintf(path, sizeof(path), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, path, "");
    snprintf(path, sizeof(path), "%s/tokens", dir);
    pw_proc_tokens_file(path, TOKEN, "admin capture");
    snprintf(log_path, sizeof(log_path), "%s/collector.log", dir);
    http_port = pw_proc_free_port();
    pw_proc_start_collector(&collector_bin, "collector", "pw.db", pw_proc_free_port(), http_port,
                            NULL, 0);
    pw_proc_wait(up, NULL, WAIT_MS, "the collector's API", log_path);
}

static void stop(void)
{
    pw_proc_kill_all();
    pw_proc_remove_dir(dir, "PW_TEST_KEEP");
}

/* The whole story: 14 days, 1,345 screens, ending at midnight UTC. */
static void test_capture_14_days(void **state)
{
    (void)state;
    start();
    check_capture("ddk-capture-14d", 0, 14 * 96 + 1);
    stop();
}

/* Its last 3 days, ending at 14:00 UTC (the leak's office hours). */
static void test_capture_3_days_office_hours(void **state)
{
    (void)state;
    size_t end = 13 * 96 + 14 * 4 + 1;
    start();
    check_capture("ddk-capture-3d", end - 3 * 96, end);
    stop();
}

/* The story with a reboot in it: 2 days of the simulation, then the host reboots at midnight
 * UTC (its counters and pool start over) and the capture goes on until 14:00 UTC of the day
 * after (the leak's office hours). The ETA is the one of the capture of the screens since the
 * reboot alone (a second host: the history as if it began at the reboot), and says that it
 * rests on them; the pool's fall at the reboot is no part of it. Before, the day's window
 * took the 2 days before the reboot with the fall. */
static void test_capture_reboot(void **state)
{
    (void)state;
    size_t reboot = 2 * 96, end = reboot + 14 * 4 + 1;
    eta_t whole, after;
    start();
    check_capture_at("ddk-reboot", 0, end, reboot, &whole);
    check_capture_at("ddk-after-reboot", reboot, end, reboot, &after);
    print_message("across the reboot: %s (%s); since it only: %s (%s)\n", whole.note, whole.method,
                  after.note, after.method);
    assert_int_equal(whole.eta, after.eta);
    assert_int_equal(whole.soon, after.soon);
    assert_int_equal(whole.late, after.late);
    assert_string_equal(whole.method, after.method);
    assert_int_equal(whole.since_boot, T0 + reboot * QUARTER); /* the window was cut there */
    assert_int_equal(after.since_boot, 0);                     /* its history began there */
    char at[64];
    snprintf(at, sizeof(at), "since its boot at %s", "2025-11-03 00:00Z");
    assert_non_null(strstr(whole.note, at));
    stop();
}

/* Copies file `from` to `to` with CRLF line ends. */
static void to_crlf(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (int ch; (ch = fgetc(in)) != EOF;) {
        if (ch == '\n')
            fputc('\r', out);
        fputc(ch, out);
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* A capture poolmon grew (its log): the last day's 96 screens up to 14:00 UTC, imported at
 * "noon" with 48 of them (--start: the first screen's time), in the "evening" with all 96 and
 * then with CRLF line ends, those without --start (the CLI's default, the screens end now):
 * the capture is its first screen, so the host has 96 points, at the first import's times
 * (first screen + k x 15 min), and Ddk is named as from one import. */
static void test_capture_grown(void **state)
{
    (void)state;
    size_t end = 13 * 96 + 14 * 4 + 1, from = end - 96;
    const char *host = "ddk-grown";
    char p48[400], p96[400], pcr[400], first[32];
    start();
    snprintf(p48, sizeof(p48), "%s/grown48.txt", dir);
    snprintf(p96, sizeof(p96), "%s/grown96.txt", dir);
    snprintf(pcr, sizeof(pcr), "%s/grown96crlf.txt", dir);
    capture_t c48, c;
    write_capture_reboot(p48, from, from + 48, 0, &c48);
    write_capture_reboot(p96, from, end, 0, &c);
    to_crlf(p96, pcr);
    iso(c.first_ms, first, sizeof(first));
    import_file(p48, host, first);
    import_file(p96, host, NULL);
    import_file(pcr, host, NULL);
    char q[300];
    snprintf(q, sizeof(q), "/api/v1/hosts/%s/totals?from=%llu&to=%llu&step=0", host,
             (unsigned long long)(c.first_ms - DAY_MS), (unsigned long long)(c.last_ms + DAY_MS));
    json_t *t = get(q);
    json_t *pts = json_object_get(t, "points");
    assert_int_equal(json_array_size(pts), 96);
    for (size_t k = 0; k < 96; k++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(pts, k), "ts_ms")),
                         c.first_ms + k * QUARTER);
    json_decref(t);
    check_judged(host, &c, from, end, 0, NULL);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_14_days),
        cmocka_unit_test(test_capture_3_days_office_hours),
        cmocka_unit_test(test_capture_reboot),
        cmocka_unit_test(test_capture_grown),
    };
    return pw_proc_run_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
