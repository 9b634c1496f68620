/* test_e2e_wine_collector.c: the whole product on Windows, under Wine. poolwatch-collector.exe
 * runs under Wine with its store on this machine's disk; into it stream, over mutual TLS,
 *   (a) poolwatch-agent-testhooks.exe under Wine, source "win" with recorded
 *       SYSTEM_POOLTAG_INFORMATION buffers (wine.h) in place of NtQuerySystemInformation, and
 *   (b) the native Linux poolwatch-agent replaying the saved capture case09;
 * then poolwatch.exe under Wine reads the stored values back through the API (--json) and they
 * are checked value for value against the recordings (written by hand below) and the capture
 * (the Drsd numbers of the data README, as test_e2e.c checks natively). Also:
 *   (c) a second poolwatch-collector.exe on the same store is refused by the store's lock
 *       (LockFileEx), naming the first one's PID;
 *   (d) `poolwatch.exe top WINHOST --once` shows the recorded rows;
 *   (e) poolwatch-collector.exe as a service of Wine's SCM: install, start (its API answers),
 *       stop (through the SCM's control, logged in %ProgramData%\poolwatch\collector.log),
 *       uninstall.
 * The .exe paths come from the environment (PW_WIN_COLLECTOR_EXE, PW_WIN_CLI_EXE,
 * PW_WIN_AGENT_TESTHOOKS_EXE; PW_WINE, default "wine"), set by deploy/windows/test.sh (ctest -L
 * wine); without them the test exits 77 (skipped; a failure with CI=true). */
#include "test_util.h"
#include "proc.h"
#include "wine.h"

#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "e2e-wine-coll-admin-token-0123456789"

static char dir[256];
static const char *wine, *coll_exe, *cli_exe, *hooks_exe;
static int coll_port, http_port;

static const char *wpath(const char *rel, char *out, size_t n)
{
    char p[400];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    return pw_wine_path(p, out, n);
}

/* poolwatch-collector.exe under Wine; its log in <dir>/<name>.log. */
static pid_t start_collector(const char *name, const char *db, int agents, int http)
{
    pw_proc_daemon_t exe = {wine, coll_exe, dir};
    return pw_proc_start_collector(&exe, name, db, agents, http, NULL, 0);
}

/* The native Linux agent replaying case09 as LINUXHOST, its first screen at start_ms. */
static pid_t start_linux_agent(uint64_t start_ms)
{
    char src[700], start[64];
    snprintf(src, sizeof(src), "replay:%s",
             pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"));
    snprintf(start, sizeof(start), "--replay.start=%llums", (unsigned long long)start_ms);
    pw_proc_daemon_t native = {NULL, PW_AGENT_BIN, dir};
    const char *extra[] = {"--replay.exit_when_done", start};
    return pw_proc_start_agent(&native, coll_port, "linux", src, "LINUXHOST", "pki/agent-LINUXHOST",
                               "200ms", extra, 2);
}

/* Runs `poolwatch.exe --url ... --ca ... --token ... ARGS` under Wine; returns its stdout
 * (malloc'd, CRs removed: the Windows C runtime writes CRLF) and its exit code in *code. */
static char *cli(const char *args, int *code)
{
    char cmd[2048], w[400], out[300];
    snprintf(out, sizeof(out), "%s/cli.out", dir);
    snprintf(cmd, sizeof(cmd),
             "%s '%s' --url https://localhost:%d --ca '%s' --token %s %s </dev/null >'%s' "
             "2>>'%s/cli.err'",
             wine, cli_exe, http_port, wpath("pki/ca.pem", w, sizeof(w)), TOKEN, args, out, dir);
    int st = system(cmd);
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    size_t n = 0;
    char *text = pw_test_read_file(out, &n);
    assert_non_null(text);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (text[i] != '\r')
            text[k++] = text[i];
    text[k] = '\0';
    return text;
}

/* `poolwatch.exe --json ARGS`, parsed; the command must succeed. */
static json_t *cli_json(const char *args)
{
    char a[1024];
    snprintf(a, sizeof(a), "--json %s", args);
    int code;
    char *text = cli(a, &code);
    if (code != 0)
        fail_msg("poolwatch.exe %s: exit %d, output: %s", a, code, text);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (j == NULL)
        fail_msg("poolwatch.exe %s: not JSON (%s): %s", a, e.text, text);
    free(text);
    return j;
}

static uint64_t ju(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("no integer '%s' in %s", key, json_dumps(o, JSON_COMPACT));
    return (uint64_t)json_integer_value(v);
}

static void expect_point(const json_t *p, uint64_t allocs, uint64_t frees, uint64_t diff,
                         uint64_t bytes)
{
    if (ju(p, "allocs") != allocs || ju(p, "frees") != frees || ju(p, "diff") != diff ||
        ju(p, "bytes") != bytes)
        fail_msg("point %s, want allocs %llu frees %llu diff %llu bytes %llu",
                 json_dumps(p, JSON_COMPACT), (unsigned long long)allocs, (unsigned long long)frees,
                 (unsigned long long)diff, (unsigned long long)bytes);
}

/* GET /api/v1/hosts/WINHOST from this machine: applied samples and session state. */
typedef struct {
    uint64_t min_samples;
    int connected;
} win_wait_t;

static int win_in_state(void *arg)
{
    const win_wait_t *w = arg;
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *j = pw_proc_https(ca, http_port, TOKEN, "/api/v1/hosts/WINHOST", NULL);
    int ok = pw_proc_json_u64(j, "samples", 0) >= w->min_samples &&
             (strstr(j, "\"connected\":true") != NULL) == w->connected;
    free(j);
    return ok;
}

static void wait_win(uint64_t min_samples, int connected)
{
    win_wait_t w = {min_samples, connected};
    char what[200], log[300];
    snprintf(what, sizeof(what), "WINHOST: samples >= %llu, %s", (unsigned long long)min_samples,
             connected ? "connected" : "not connected");
    snprintf(log, sizeof(log), "%s/collector.log", dir);
    pw_proc_wait(win_in_state, &w, 60000, what, log);
}

typedef struct {
    int port;
} api_wait_t;

static int api_answers(void *arg)
{
    const api_wait_t *a = arg;
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *j = pw_proc_https(ca, a->port, TOKEN, "/api/v1/hosts", NULL);
    int ok = strstr(j, "\"hosts\"") != NULL;
    free(j);
    return ok;
}

/* "stop requested: stopping" lines in the service's log, %ProgramData%\poolwatch\collector.log
 * of the Wine prefix: Wine gives its services another %ProgramData% (C:\users\Public) than its
 * programs (C:\ProgramData), so both are read. */
static size_t service_stops(void)
{
    static const char *const pd[] = {"users/Public", "ProgramData"};
    const char *prefix = getenv("WINEPREFIX");
    size_t stops = 0;
    for (size_t k = 0; prefix != NULL && k < 2; k++) {
        char log[400];
        snprintf(log, sizeof(log), "%s/drive_c/%s/poolwatch/collector.log", prefix, pd[k]);
        FILE *lf = fopen(log, "r");
        if (lf != NULL) {
            fclose(lf);
            stops += pw_test_count_in_file(log, "stop requested: stopping");
        }
    }
    return stops;
}

/* (e) the collector as a service of Wine's SCM. */
static void check_service(void)
{
    size_t stops_before = service_stops();
    static const char name[] = "pw-e2e-coll-svc";
    char conf[300], args[1600], slog[300], w1[400], w2[400], w3[400], w4[400], w5[400];
    snprintf(conf, sizeof(conf), "%s/svc.conf", dir);
    snprintf(slog, sizeof(slog), "%s/service.log", dir);
    int svc_http = pw_proc_free_port();
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fprintf(f,
            "[agents]\nlisten = 127.0.0.1:%d\nca_file = %s\ncert_file = %s\nkey_file = %s\n"
            "[store]\npath = %s\n[http]\nlisten = 127.0.0.1:%d\ntokens_file = %s\n",
            pw_proc_free_port(), wpath("pki/ca.pem", w1, sizeof(w1)),
            wpath("pki/collector.pem", w2, sizeof(w2)), wpath("pki/collector.key", w3, sizeof(w3)),
            wpath("svc.db", w4, sizeof(w4)), svc_http, wpath("tokens", w5, sizeof(w5)));
    fclose(f);
    snprintf(args, sizeof(args), "'%s' uninstall --name %s", coll_exe, name);
    pw_wine_run(wine, args, slog); /* left over by an interrupted run: ignore the outcome */
    snprintf(args, sizeof(args), "'%s' install --name %s --config '%s'", coll_exe, name,
             pw_wine_path(conf, w1, sizeof(w1)));
    assert_int_equal(pw_wine_run(wine, args, slog), 0);
    assert_int_equal(pw_wine_sc_state(wine, name), 1);
    pw_wine_sc_start(wine, name, slog, "collector.log");
    api_wait_t a = {svc_http};
    pw_proc_wait(api_answers, &a, 60000, "the service's API (GET /api/v1/hosts)", slog);
    snprintf(args, sizeof(args), "sc stop %s", name);
    pw_wine_run(wine, args, slog);
    assert_int_equal(pw_wine_sc_wait(wine, name, 1), 1);
    snprintf(args, sizeof(args), "'%s' uninstall --name %s", coll_exe, name);
    assert_int_equal(pw_wine_run(wine, args, slog), 0);
    assert_int_equal(pw_wine_sc_state(wine, name), -1);
    /* The stop came through the SCM's control handler (pw_collector_stop): the service's log
     * says so once more than before (the file is appended to across runs). */
    if (getenv("WINEPREFIX") != NULL && service_stops() <= stops_before)
        fail_msg("no new 'stop requested: stopping' in the service's collector.log under %s",
                 getenv("WINEPREFIX"));
}

static void test_e2e_wine_collector(void **state)
{
    (void)state;
    coll_exe = getenv("PW_WIN_COLLECTOR_EXE");
    cli_exe = getenv("PW_WIN_CLI_EXE");
    hooks_exe = getenv("PW_WIN_AGENT_TESTHOOKS_EXE");
    wine = getenv("PW_WINE") ? getenv("PW_WINE") : "wine";
    if (coll_exe == NULL || cli_exe == NULL || hooks_exe == NULL)
        pw_test_skip("PW_WIN_COLLECTOR_EXE / PW_WIN_CLI_EXE / PW_WIN_AGENT_TESTHOOKS_EXE not set: "
                     "run deploy/windows/test.sh");
    setenv("WINEDEBUG", "-all", 0);
    snprintf(dir, sizeof(dir), "/tmp/pw-e2e-wcoll-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char p[400], w[400];
    snprintf(p, sizeof(p), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, p, "--agent WINHOST --agent LINUXHOST");
    snprintf(p, sizeof(p), "%s/tokens", dir);
    pw_proc_tokens_file(p, TOKEN, "admin e2e-wine");
    coll_port = pw_proc_free_port();
    http_port = pw_proc_free_port();
    pid_t coll = start_collector("collector", "pw.db", coll_port, http_port);
    char clog[300];
    snprintf(clog, sizeof(clog), "%s/collector.log", dir);
    pw_proc_wait_log(clog, "agents: 127.0.0.1:", 1, 60000);

    /* (c) the same store again: refused, naming the running collector's PID. */
    pid_t dup = start_collector("dup", "pw.db", pw_proc_free_port(), pw_proc_free_port());
    int st = pw_proc_wait_exit(dup, 60000);
    assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
    snprintf(p, sizeof(p), "%s/dup.log", dir);
    assert_true(pw_test_file_contains(p, "is in use by another collector (PID "));

    /* (a) recordings: open -> A, sample 1 -> A, sample 2 -> B, then C for every later one. */
    char pa[300], pb[300], pc[300], pp[300], wa[400], wb[400], wc[400], list[1300];
    snprintf(pa, sizeof(pa), "%s/pooltag-a.bin", dir);
    snprintf(pb, sizeof(pb), "%s/pooltag-b.bin", dir);
    snprintf(pc, sizeof(pc), "%s/pooltag-c.bin", dir);
    snprintf(pp, sizeof(pp), "%s/perfinfo.bin", dir);
    pw_wine_write_pooltag(pa, 100, 40);  /* Leak: diff 60, 64 * 60 = 3840 bytes */
    pw_wine_write_pooltag(pb, 150, 50);  /* diff 100, 6400 bytes */
    pw_wine_write_pooltag(pc, 400, 100); /* diff 300, 19200 bytes */
    pw_wine_write_perfinfo(pp);
    snprintf(list, sizeof(list), "%s;%s;%s;%s", pw_wine_path(pa, wa, sizeof(wa)), wa,
             pw_wine_path(pb, wb, sizeof(wb)), pw_wine_path(pc, wc, sizeof(wc)));
    setenv("POOLWATCH_TEST_POOLTAG_BUFFER", list, 1);
    setenv("POOLWATCH_TEST_PERFINFO_BUFFER", pw_wine_path(pp, w, sizeof(w)), 1);
    pid_t hooked =
        pw_wine_start_agent(wine, hooks_exe, dir, coll_port, "win", "win", "WINHOST", NULL, NULL);
    unsetenv("POOLWATCH_TEST_POOLTAG_BUFFER");
    unsetenv("POOLWATCH_TEST_PERFINFO_BUFFER");

    /* (b) the Linux agent: case09's two screens, 15 min apart, from a whole second 30 min ago
     * (inside the raw retention, so the API answers from raw samples). */
    uint64_t start_ms = (pw_proc_now_ms() - 1800000) / 1000 * 1000;
    pid_t lin = start_linux_agent(start_ms);
    st = pw_proc_wait_exit(lin, 60000);
    assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* At least 3 WINHOST samples (A, B, C), then the agent stopped and its session closed:
     * what the collector acknowledged is in its store. */
    wait_win(3, 1);
    pw_proc_stop(hooked, SIGTERM, 10000);
    wait_win(3, 0);

    /* Through poolwatch.exe: the host's sample count, then every stored point. */
    json_t *h = cli_json("hosts");
    json_t *hosts = json_object_get(h, "hosts");
    assert_int_equal(json_array_size(hosts), 2);
    uint64_t win_samples = 0;
    size_t i;
    json_t *o;
    json_array_foreach(hosts, i, o)
    {
        const char *nm = json_string_value(json_object_get(o, "name"));
        assert_non_null(nm);
        if (strcmp(nm, "WINHOST") == 0)
            win_samples = ju(o, "samples");
        else
            assert_string_equal(nm, "LINUXHOST");
    }
    json_decref(h);
    assert_true(win_samples >= 3);

    json_t *s = cli_json("series WINHOST Leak --pool paged");
    json_t *pts = json_object_get(s, "points");
    assert_int_equal(json_array_size(pts), win_samples);
    expect_point(json_array_get(pts, 0), 100, 40, 60, 3840);
    expect_point(json_array_get(pts, 1), 150, 50, 100, 6400);
    for (i = 2; i < json_array_size(pts); i++)
        expect_point(json_array_get(pts, i), 400, 100, 300, 19200);
    json_decref(s);
    s = cli_json("series WINHOST 'Ddk ' --pool nonpaged");
    pts = json_object_get(s, "points");
    assert_int_equal(json_array_size(pts), win_samples);
    json_array_foreach(pts, i, o)
    {
        expect_point(o, 4660, 4096, 564, 614400);
    }
    json_decref(s);
    /* No paged row for "Ddk " (its paged counters are all 0). */
    s = cli_json("series WINHOST 'Ddk ' --pool paged");
    assert_int_equal(json_array_size(json_object_get(s, "points")), 0);
    json_decref(s);

    /* case09, Drsd paged: 560/539/21/17472 then 737/710/27/22464, 15 min apart. */
    s = cli_json("series LINUXHOST Drsd --pool paged");
    pts = json_object_get(s, "points");
    assert_int_equal(json_array_size(pts), 2);
    assert_int_equal(ju(json_array_get(pts, 0), "ts_ms"), start_ms);
    assert_int_equal(ju(json_array_get(pts, 1), "ts_ms"), start_ms + 900000);
    expect_point(json_array_get(pts, 0), 560, 539, 21, 17472);
    expect_point(json_array_get(pts, 1), 737, 710, 27, 22464);
    json_decref(s);

    /* (d) top --once: poolmon's rows for WINHOST, in bytes order (Ddk 614400 first). */
    int code;
    char *top = cli("top WINHOST --once", &code);
    assert_int_equal(code, 0);
    const char *ddk = strstr(top, "\n Ddk  Nonp");
    const char *leak = strstr(top, "\n Leak Paged");
    if (ddk == NULL || leak == NULL || ddk > leak)
        fail_msg("top --once: want the Ddk row before the Leak row:\n%s", top);
    assert_non_null(strstr(ddk, "614400"));
    assert_non_null(strstr(leak, "19200"));
    free(top);

    check_service();

    pw_proc_stop(coll, SIGTERM, 30000);
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2e_wine_collector),
    };
    return pw_proc_run_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
