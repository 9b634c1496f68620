/* test_e2e_wine.c: the Windows agent end to end. poolwatch-agent.exe (cross-built with
 * mingw-w64, deploy/windows/build.sh) runs under Wine and streams over mutual TLS to the native
 * poolwatch-collector, whose store is then read back value for value:
 *   (a) poolwatch-agent-testhooks.exe, source "win", with recorded SYSTEM_POOLTAG_INFORMATION and
 *       SYSTEM_PERFORMANCE_INFORMATION buffers (x64 layout, written here) in place of
 *       NtQuerySystemInformation: the real source_win.c, spool, codec and TLS on Windows; and
 *       recorded System-log event XML in place of EvtSubscribe (a srv 2019 of a minute ago,
 *       tests/fixtures/winevent/wevtutil-system.xml, the first again): the real evsub.c, the
 *       expat parser cross-built, the events in the samples; the collector stores each once
 *       and raises PoolEmpty for the recent one;
 *   (b) poolwatch-agent.exe replaying the saved capture case09 (as test_e2e.c does natively);
 *   (c) poolwatch-agent.exe with the plain "win" source: Wine has no pool-tag information, so
 *       it must exit non-zero with the clear message in its log.
 * Native process, Windows children: the .exe paths come from the environment
 * (PW_WIN_AGENT_EXE, PW_WIN_AGENT_TESTHOOKS_EXE; PW_WINE, default "wine"), set by
 * deploy/windows/test.sh (ctest -L wine). Without them the test exits 77 (skipped; a failure
 * with CI=true); deploy/test.sh's native run leaves it out (label "wine"). */
#include "test_util.h"
#include "proc.h"
#include "store.h"
#include "wine.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_MS 1764400000000ull

static char dir[256];
static const char *wine, *agent_exe, *hooks_exe;
static char coll_port[16];

/* The collector's query API, only to watch the WINHOST session (GET /api/v1/hosts/WINHOST). */
#define ADMIN_TOKEN "e2e-wine-admin-token-0123456789"
static int http_port;

static void stop(pid_t pid)
{
    pw_proc_stop(pid, SIGTERM, 5000);
}

static int file_contains(const char *path, const char *needle)
{
    return pw_test_file_contains(path, needle);
}

static pid_t start_collector(void)
{
    pw_proc_daemon_t native = {NULL, PW_COLLECTOR_BIN, dir};
    return pw_proc_start_collector(&native, "collector", "pw.db", atoi(coll_port), http_port, NULL,
                                   0);
}

/* Starts `exe` under Wine (wine.h) against this test's collector. */
static pid_t start_agent(const char *exe, const char *name, const char *source, const char *host,
                         const char *extra1, const char *extra2)
{
    return pw_wine_start_agent(wine, exe, dir, atoi(coll_port), name, source, host, extra1, extra2);
}

static void expect_point(const pw_store_point_t *p, uint64_t allocs, uint64_t frees, uint64_t diff,
                         uint64_t bytes)
{
    if (p->allocs != allocs || p->frees != frees || p->diff != diff || p->bytes != bytes)
        fail_msg("stored %llu/%llu/%llu/%llu, want %llu/%llu/%llu/%llu",
                 (unsigned long long)p->allocs, (unsigned long long)p->frees,
                 (unsigned long long)p->diff, (unsigned long long)p->bytes,
                 (unsigned long long)allocs, (unsigned long long)frees, (unsigned long long)diff,
                 (unsigned long long)bytes);
}

/* (e): poolwatch-agent.exe as a service of Wine's SCM: install, start (it samples into its
 * spool), stop (exit code 0), uninstall. */
static void check_service(void)
{
    static const char name[] = "pw-e2e-svc";
    char conf[300], wconf[300], spool[300], wspool[300], ca[300], wca[300], crt[300], wcrt[300],
        key[300], wkey[300], args[1600], seg[400];
    snprintf(conf, sizeof(conf), "%s/svc.conf", dir);
    snprintf(spool, sizeof(spool), "%s/spool-svc", dir);
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    snprintf(crt, sizeof(crt), "%s/pki/agent-WINHOST.pem", dir);
    snprintf(key, sizeof(key), "%s/pki/agent-WINHOST.key", dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    /* Nothing listens on port 9: the service samples into its spool and retries. */
    fprintf(f,
            "[agent]\nsource = sim:steady/0\nhost_name = WINHOST\ninterval = 500ms\n"
            "[spool]\ndir = %s\n[collector]\nendpoints = 127.0.0.1:9\nca_file = %s\n"
            "cert_file = %s\nkey_file = %s\n",
            pw_wine_path(spool, wspool, sizeof(wspool)), pw_wine_path(ca, wca, sizeof(wca)),
            pw_wine_path(crt, wcrt, sizeof(wcrt)), pw_wine_path(key, wkey, sizeof(wkey)));
    fclose(f);
    snprintf(args, sizeof(args), "%s uninstall --name %s", agent_exe, name);
    char slog[300];
    snprintf(slog, sizeof(slog), "%s/service.log", dir);
    pw_wine_run(wine, args, slog); /* left over by an interrupted run: ignore the outcome */
    snprintf(args, sizeof(args), "%s install --name %s --config '%s'", agent_exe, name,
             pw_wine_path(conf, wconf, sizeof(wconf)));
    assert_int_equal(pw_wine_run(wine, args, slog), 0);
    assert_int_equal(pw_wine_sc_state(wine, name), 1);
    pw_wine_sc_start(wine, name, slog, "agent.log");
    snprintf(seg, sizeof(seg), "%s/spool-00000000000000000001.seg", spool);
    int seen = 0;
    for (int i = 0; i < 50 && !seen; i++) {
        seen = access(seg, F_OK) == 0;
        pw_proc_sleep_ms(200);
    }
    if (!seen)
        fail_msg("the service wrote no spool segment %s within 10 s", seg);
    snprintf(args, sizeof(args), "sc stop %s", name);
    pw_wine_run(wine, args, slog);
    assert_int_equal(pw_wine_sc_wait(wine, name, 1), 1);
    snprintf(args, sizeof(args), "%s uninstall --name %s", agent_exe, name);
    assert_int_equal(pw_wine_run(wine, args, slog), 0);
    assert_int_equal(pw_wine_sc_state(wine, name), -1);
}

/* GET /api/v1/hosts/WINHOST: the number of its samples the collector applied, and whether an
 * agent session is open. */
static uint64_t win_host(int *connected)
{
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *j = pw_proc_https(ca, http_port, ADMIN_TOKEN, "/api/v1/hosts/WINHOST", NULL);
    uint64_t n = pw_proc_json_u64(j, "samples", 0);
    *connected = strstr(j, "\"connected\":true") != NULL;
    free(j);
    return n;
}

static uint64_t win_samples(void)
{
    int c;
    return win_host(&c);
}

typedef struct {
    uint64_t min_samples;
    int connected;
} win_wait_t;

static int win_in_state(void *arg)
{
    const win_wait_t *w = arg;
    int c;
    return win_host(&c) >= w->min_samples && c == w->connected;
}

/* Waits up to 60 s (Wine is slow) until WINHOST has min_samples applied samples and its
 * session is open (connected = 1) or closed (0). */
static void wait_win(uint64_t min_samples, int connected)
{
    win_wait_t w = {min_samples, connected};
    char what[200], log[300];
    snprintf(what, sizeof(what), "GET /api/v1/hosts/WINHOST: samples >= %llu, %s",
             (unsigned long long)min_samples, connected ? "connected" : "not connected");
    snprintf(log, sizeof(log), "%s/collector.log", dir);
    pw_proc_wait(win_in_state, &w, 60000, what, log);
}

/* Writes a srv 2019 event (as tests/fixtures/winevent/srv2019.xml, record 50001) stamped a
 * minute ago, whole seconds, to `path`; its time in ms in *ms. */
static void fresh_2019(const char *path, uint64_t *ms)
{
    time_t t = time(NULL) - 60;
    struct tm tm;
    gmtime_r(&t, &tm);
    char when[40];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S.0000000Z", &tm);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fprintf(f,
            "<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System>"
            "<Provider Name='Srv'/><EventID Qualifiers='49152'>2019</EventID><Level>2</Level>"
            "<TimeCreated SystemTime='%s'/><EventRecordID>50001</EventRecordID>"
            "<Channel>System</Channel><Computer>WINHOST</Computer></System><EventData>"
            "<Data>\\Device\\LanmanServer</Data></EventData></Event>",
            when);
    fclose(f);
    *ms = (uint64_t)t * 1000;
}

static uint64_t fresh_ms;

static void test_e2e_wine_agent(void **state)
{
    (void)state;
    agent_exe = getenv("PW_WIN_AGENT_EXE");
    hooks_exe = getenv("PW_WIN_AGENT_TESTHOOKS_EXE");
    wine = getenv("PW_WINE") ? getenv("PW_WINE") : "wine";
    if (agent_exe == NULL || hooks_exe == NULL)
        pw_test_skip("PW_WIN_AGENT_EXE / PW_WIN_AGENT_TESTHOOKS_EXE not set: run "
                     "deploy/windows/test.sh");
    setenv("WINEDEBUG", "-all", 0);
    snprintf(dir, sizeof(dir), "/tmp/pw-e2e-wine-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, cmd, "--agent WINHOST --agent HOST01 --agent WINPLAIN");
    snprintf(cmd, sizeof(cmd), "%s/tokens", dir);
    pw_proc_tokens_file(cmd, ADMIN_TOKEN, "admin e2e-wine");
    snprintf(coll_port, sizeof(coll_port), "%d", pw_proc_free_port());
    http_port = pw_proc_free_port();
    pid_t coll = start_collector();

    /* (a) recordings: open -> A, sample 1 -> A, sample 2 -> B, then C for every later sample. */
    char pa[300], pb[300], pc[300], pp[300], wa[300], wb[300], wc[300], wp[300], list[1300];
    snprintf(pa, sizeof(pa), "%s/pooltag-a.bin", dir);
    snprintf(pb, sizeof(pb), "%s/pooltag-b.bin", dir);
    snprintf(pc, sizeof(pc), "%s/pooltag-c.bin", dir);
    snprintf(pp, sizeof(pp), "%s/perfinfo.bin", dir);
    pw_wine_write_pooltag(pa, 100, 40);  /* Leak: diff 60, 3840 bytes */
    pw_wine_write_pooltag(pb, 150, 50);  /* diff 100, 6400 bytes */
    pw_wine_write_pooltag(pc, 400, 100); /* diff 300, 19200 bytes */
    pw_wine_write_perfinfo(pp);
    snprintf(list, sizeof(list), "%s;%s;%s;%s", pw_wine_path(pa, wa, sizeof(wa)),
             pw_wine_path(pa, wa, sizeof(wa)), pw_wine_path(pb, wb, sizeof(wb)),
             pw_wine_path(pc, wc, sizeof(wc)));
    setenv("POOLWATCH_TEST_POOLTAG_BUFFER", list, 1);
    setenv("POOLWATCH_TEST_PERFINFO_BUFFER", pw_wine_path(pp, wp, sizeof(wp)), 1);
    /* the System log: a srv 2019 stamped a minute ago (record 50001), the wevtutil export
     * (2020, 7036, 2019, 2004), the first file again (a resend: kept once) */
    char pe[300], we[300], wx[600], evlist[1300];
    snprintf(pe, sizeof(pe), "%s/srv2019-now.xml", dir);
    fresh_2019(pe, &fresh_ms);
    snprintf(evlist, sizeof(evlist), "%s;%s;%s", pw_wine_path(pe, we, sizeof(we)),
             pw_wine_path(pw_test_fixture("winevent/wevtutil-system.xml"), wx, sizeof(wx)), we);
    setenv("POOLWATCH_TEST_EVENT_XML", evlist, 1);
    pid_t hooked = start_agent(hooks_exe, "hooks", "win", "WINHOST", NULL, NULL);
    unsetenv("POOLWATCH_TEST_POOLTAG_BUFFER");
    unsetenv("POOLWATCH_TEST_PERFINFO_BUFFER");
    unsetenv("POOLWATCH_TEST_EVENT_XML");

    /* (b) replay of case09 (both screens), exits by itself once acked. */
    char fx[600], replay_src[700];
    snprintf(replay_src, sizeof(replay_src), "replay:%s",
             pw_wine_path(
                 pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"),
                 fx, sizeof(fx)));
    pid_t rep = start_agent(agent_exe, "replay", replay_src, "HOST01", "--replay.exit_when_done",
                            "--replay.start=1764400000000ms");

    /* (c) the plain win source: Wine answers STATUS_INVALID_INFO_CLASS. */
    pid_t plain = start_agent(agent_exe, "plain", "win", "WINPLAIN", NULL, NULL);
    int st = pw_proc_wait_exit(plain, 60000);
    assert_true(st != -1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    char log[300];
    snprintf(log, sizeof(log), "%s/agent-plain.log", dir);
    assert_true(file_contains(log, "pool tag information is not available on this system"));
    assert_true(file_contains(log, "0xC0000003"));

    st = pw_proc_wait_exit(rep, 60000);
    assert_true(st != -1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* (d) a second agent on the running hooked agent's spool: refused by the lock. Once the
     * hooked agent holds it (its start-up line names the spool): a loaded machine can start
     * it under Wine after the replay is done, and the second agent then took the free spool
     * and streamed, never exiting (and the hooked agent was the one refused). */
    char tmp[600], dup_spool[700], hooks_log[300];
    snprintf(hooks_log, sizeof(hooks_log), "%s/agent-hooks.log", dir);
    pw_proc_wait_log(hooks_log, "host WINHOST, source win, spool ", 1, 60000);
    snprintf(tmp, sizeof(tmp), "%s/spool-hooks", dir);
    snprintf(dup_spool, sizeof(dup_spool), "--spool.dir=%s", pw_wine_path(tmp, tmp, sizeof(tmp)));
    pid_t dup = start_agent(agent_exe, "dup", "sim:steady/0", "WINHOST", dup_spool, NULL);
    st = pw_proc_wait_exit(dup, 60000);
    snprintf(log, sizeof(log), "%s/agent-dup.log", dir);
    if (st == -1) {
        pw_proc_dump_log(log, 20);
        pw_proc_dump_log(hooks_log, 20);
        fail_msg("the second agent on spool-hooks did not exit within 60 s");
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    assert_true(file_contains(log, "is in use by another process"));

    check_service();

    /* Let the hooked agent deliver a few more samples (5 more than now, at least 3 in all),
     * then stop it and wait until the collector has seen its session end: whatever the
     * collector acknowledged is in the store once it stopped. */
    uint64_t now_samples = win_samples();
    wait_win(now_samples + 5 > 3 ? now_samples + 5 : 3, 1);
    /* PoolEmpty for the recent 2019, raised when it arrived */
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", dir);
    char *alerts = pw_proc_https(ca, http_port, ADMIN_TOKEN, "/api/v1/alerts", NULL);
    assert_non_null(alerts);
    assert_non_null(strstr(alerts, "\"PoolEmpty\""));
    assert_non_null(strstr(alerts, "\"nonpaged-empty\""));
    assert_non_null(strstr(alerts, "WINHOST"));
    free(alerts);
    stop(hooked);
    wait_win(0, 0);
    pw_proc_stop(coll, SIGTERM, 30000);
    snprintf(log, sizeof(log), "%s/agent-hooks.log", dir);
    assert_true(file_contains(log, "testhook: recorded buffers replace NtQuerySystemInformation"));
    assert_true(file_contains(log, "testhook: 3 recorded event files replace EvtSubscribe"));
    assert_true(file_contains(log, "subscribed to the System log's pool events"));

    pw_store_t *stp;
    char db[300];
    snprintf(db, sizeof(db), "%s/pw.db", dir);
    assert_int_equal(pw_store_open(db, NULL, &stp, NULL), 0);
    pw_store_host_info_t *hosts;
    size_t nh;
    assert_int_equal(pw_store_hosts(stp, &hosts, &nh, NULL), 0);
    assert_int_equal(nh, 2); /* WINHOST and HOST01; WINPLAIN never connected */
    uint64_t win_last = 0;
    for (size_t i = 0; i < nh; i++) {
        if (strcmp(hosts[i].name, "WINHOST") == 0) {
            win_last = hosts[i].last_seq;
            assert_int_equal(hosts[i].counter_width, 32); /* the Windows source's width */
            assert_non_null(strstr(hosts[i].os, "windows"));
        } else {
            assert_string_equal(hosts[i].name, "HOST01");
            assert_int_equal(hosts[i].last_seq, 2);
        }
    }
    pw_store_hosts_free(hosts, nh);
    assert_true(win_last >= 3);

    /* (a): sample 1 is A, sample 2 B, every later one C, from the recorded buffers through
     * source_win.c. The series has one point per sample time: a pool event's sample, taken at
     * once, and the interval's can fall in the same millisecond (seen: seqs 6 and 7), one point
     * then holding both (`samples` 2) with the later one's values. So the points' samples add
     * up to every sample, and each point holds the values of its last one. */
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    int64_t n = pw_store_series(stp, "WINHOST", (const uint8_t *)"Leak", 4, PW_POOL_PAGED, 0,
                                UINT64_MAX / 2, 0, &ser, NULL);
    assert_true(n >= 3);
    uint64_t upto = 0; /* the samples up to this point's */
    for (int64_t i = 0; i < n; i++) {
        upto += ser.points[i].samples;
        if (upto == 1)
            expect_point(&ser.points[i], 100, 40, 60, 3840);
        else if (upto == 2)
            expect_point(&ser.points[i], 150, 50, 100, 6400);
        else
            expect_point(&ser.points[i], 400, 100, 300, 19200);
    }
    assert_int_equal(upto, win_last);
    n = pw_store_series(stp, "WINHOST", (const uint8_t *)"Ddk ", 4, PW_POOL_NONPAGED, 0,
                        UINT64_MAX / 2, 0, &ser, NULL);
    upto = 0;
    for (int64_t i = 0; i < n; i++) {
        upto += ser.points[i].samples;
        expect_point(&ser.points[i], 4660, 4096, 564, 614400);
    }
    assert_int_equal(upto, win_last);
    /* No paged row for "Ddk " (all its paged counters are 0), none for "Leak" nonpaged. */
    assert_int_equal(pw_store_series(stp, "WINHOST", (const uint8_t *)"Ddk ", 4, PW_POOL_PAGED, 0,
                                     UINT64_MAX / 2, 0, &ser, NULL),
                     0);

    /* (a) events: each once, in time order: the export's 2020, 2019 and 2004, then the fresh
     * 2019; the 7036 was not sent */
    pw_store_event_t *ev = NULL;
    assert_int_equal(pw_store_events(stp, "WINHOST", 0, INT64_MAX, 100, &ev, NULL), 4);
    assert_int_equal(ev[0].ev.event_id, 2020);
    assert_int_equal(ev[0].ev.ts_ms, UINT64_C(1796047120000));
    assert_int_equal(ev[1].ev.event_id, 2019);
    assert_int_equal(ev[1].ev.record_id, 48213);
    assert_int_equal(ev[2].ev.event_id, 2004);
    assert_int_equal(ev[2].ev.n_tags, 6);
    assert_memory_equal(ev[2].ev.tags[0].tag, "Ddk ", 4);
    assert_int_equal(ev[2].ev.tags[0].bytes, 98566144);
    assert_int_equal(ev[3].ev.event_id, 2019);
    assert_int_equal(ev[3].ev.record_id, 50001);
    assert_int_equal(ev[3].ev.ts_ms, fresh_ms);
    free(ev);

    /* (b): case09's two screens, Drsd paged: 560/539/21/17472 then 737/710/27/22464, 15 min
     * apart from the configured start (the same values test_e2e.c checks natively). */
    assert_int_equal(pw_store_series(stp, "HOST01", (const uint8_t *)"Drsd", 4, PW_POOL_PAGED, 0,
                                     UINT64_MAX / 2, 0, &ser, NULL),
                     2);
    assert_int_equal(ser.points[0].ts_ms, START_MS);
    assert_int_equal(ser.points[1].ts_ms, START_MS + 900000);
    expect_point(&ser.points[0], 560, 539, 21, 17472);
    expect_point(&ser.points[1], 737, 710, 27, 22464);
    pw_store_series_free(&ser);
    pw_store_close(stp);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (getenv("PW_KEEP_E2E") == NULL)
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2e_wine_agent),
    };
    return pw_proc_run_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
