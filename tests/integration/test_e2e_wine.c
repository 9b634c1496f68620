/* test_e2e_wine.c: the Windows agent end to end. poolwatch-agent.exe (cross-built with
 * mingw-w64, deploy/windows/build.sh) runs under Wine and streams over mutual TLS to the native
 * poolwatch-collector, whose store is then read back value for value:
 *   (a) poolwatch-agent-testhooks.exe, source "win", with recorded SYSTEM_POOLTAG_INFORMATION and
 *       SYSTEM_PERFORMANCE_INFORMATION buffers (x64 layout, written here) in place of
 *       NtQuerySystemInformation: the real source_win.c, spool, codec and TLS on Windows;
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

#include <signal.h>
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

/* The Windows spelling of a path of this machine: Wine maps drive Z: to "/". */
static const char *winpath(const char *unix_path, char *out, size_t n)
{
    char in[600];
    if (snprintf(in, sizeof(in), "%s", unix_path) >= (int)sizeof(in) || /* out may be unix_path */
        snprintf(out, n, "Z:%s", in) >= (int)n)
        abort(); /* a test path over 600 bytes: make the buffers larger */
    for (char *p = out; *p; p++)
        if (*p == '/')
            *p = '\\';
    return out;
}

static pid_t start_collector(void)
{
    char log[300], listen_arg[64], db[300], ca[300], cert[300], key[300], http[64], tokens[300];
    snprintf(log, sizeof(log), "%s/collector.log", dir);
    snprintf(listen_arg, sizeof(listen_arg), "--agents.listen=127.0.0.1:%s", coll_port);
    snprintf(db, sizeof(db), "--store.path=%s/pw.db", dir);
    snprintf(ca, sizeof(ca), "--agents.ca_file=%s/pki/ca.pem", dir);
    snprintf(cert, sizeof(cert), "--agents.cert_file=%s/pki/collector.pem", dir);
    snprintf(key, sizeof(key), "--agents.key_file=%s/pki/collector.key", dir);
    snprintf(http, sizeof(http), "--http.listen=127.0.0.1:%d", http_port);
    snprintf(tokens, sizeof(tokens), "--http.tokens_file=%s/tokens", dir);
    char *argv[] = {PW_COLLECTOR_BIN,
                    listen_arg,
                    db,
                    ca,
                    cert,
                    key,
                    http,
                    tokens,
                    "--collector.log_level=debug",
                    NULL};
    return pw_proc_spawn(argv, log);
}

/* Starts `exe` under Wine with Windows paths for the spool and certificates. */
static pid_t start_agent(const char *exe, const char *name, const char *source, const char *host,
                         const char *extra1, const char *extra2)
{
    char log[300], tmp[600], a_src[700], a_host[300], a_spool[700], a_ep[64], a_ca[700],
        a_cert[700], a_key[700];
    snprintf(log, sizeof(log), "%s/agent-%s.log", dir, name);
    snprintf(a_src, sizeof(a_src), "--agent.source=%s", source);
    snprintf(a_host, sizeof(a_host), "--agent.host_name=%s", host);
    snprintf(tmp, sizeof(tmp), "%s/spool-%s", dir, name);
    snprintf(a_spool, sizeof(a_spool), "--spool.dir=%s", winpath(tmp, tmp, sizeof(tmp)));
    snprintf(a_ep, sizeof(a_ep), "--collector.endpoints=127.0.0.1:%s", coll_port);
    snprintf(tmp, sizeof(tmp), "%s/pki/ca.pem", dir);
    snprintf(a_ca, sizeof(a_ca), "--collector.ca_file=%s", winpath(tmp, tmp, sizeof(tmp)));
    snprintf(tmp, sizeof(tmp), "%s/pki/agent-%s.pem", dir, host);
    snprintf(a_cert, sizeof(a_cert), "--collector.cert_file=%s", winpath(tmp, tmp, sizeof(tmp)));
    snprintf(tmp, sizeof(tmp), "%s/pki/agent-%s.key", dir, host);
    snprintf(a_key, sizeof(a_key), "--collector.key_file=%s", winpath(tmp, tmp, sizeof(tmp)));
    char *argv[] = {(char *)(uintptr_t)wine,
                    (char *)(uintptr_t)exe,
                    a_src,
                    a_host,
                    a_spool,
                    a_ep,
                    a_ca,
                    a_cert,
                    a_key,
                    "--collector.server_name=localhost",
                    "--collector.backoff_min=200ms",
                    "--collector.backoff_max=1s",
                    "--agent.interval=200ms",
                    "--agent.log_level=info",
                    (char *)(uintptr_t)extra1,
                    (char *)(uintptr_t)extra2,
                    NULL};
    return pw_proc_spawn(argv, log);
}

/* ---- recorded buffers for (a) --------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* One recording: "Leak" paged (allocs a, frees f, bytes 64 * (a - f)) and "Ddk " nonpaged
 * (fixed 4660/4096/614400). x64 SYSTEM_POOLTAG_INFORMATION: Count, pad, 40-byte entries with
 * PagedAllocs 4, PagedFrees 8, PagedUsed 16, NonPagedAllocs 24, NonPagedFrees 28,
 * NonPagedUsed 32 (agent/source_win.h). */
static void write_pooltag(const char *path, uint32_t a, uint32_t f)
{
    uint8_t b[8 + 2 * 40];
    memset(b, 0, sizeof(b));
    put32(b, 2);
    memcpy(b + 8, "Leak", 4);
    put32(b + 8 + 4, a);
    put32(b + 8 + 8, f);
    put64(b + 8 + 16, 64ull * (a - f));
    memcpy(b + 48, "Ddk ", 4);
    put32(b + 48 + 24, 4660);
    put32(b + 48 + 28, 4096);
    put64(b + 48 + 32, 614400);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, sizeof(b), fp), sizeof(b));
    fclose(fp);
}

static void write_perfinfo(const char *path)
{
    uint8_t b[120]; /* PW_WIN_PERFINFO_MIN_LEN: up to NonPagedPoolPages */
    memset(b, 0, sizeof(b));
    put32(b + 44, 300);  /* AvailablePages */
    put32(b + 48, 1000); /* CommittedPages */
    put32(b + 52, 5000); /* CommitLimit */
    put32(b + 112, 25);  /* PagedPoolPages */
    put32(b + 116, 10);  /* NonPagedPoolPages */
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, sizeof(b), fp), sizeof(b));
    fclose(fp);
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

/* The STATE of service `name` in `wine sc query` (1 stopped, 2 start pending, 3 stop pending,
 * 4 running), -1 when the SCM does not know it. */
static int sc_state(const char *name)
{
    char cmd[512], line[256];
    snprintf(cmd, sizeof(cmd), "%s sc query %s </dev/null 2>/dev/null", wine, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int state = -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        const char *k = strstr(line, "STATE");
        const char *c = k ? strchr(k, ':') : NULL;
        if (c != NULL)
            state = atoi(c + 1);
    }
    pclose(p);
    return state;
}

/* Polls until service `name` is in `state` (10 s at most); returns the last state seen. */
static int sc_wait(const char *name, int state)
{
    int st = -1;
    for (int i = 0; i < 50 && (st = sc_state(name)) != state; i++)
        pw_proc_sleep_ms(200);
    return st;
}

static int run_wine(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s %s </dev/null >>%s/service.log 2>&1", wine, args, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
            winpath(spool, wspool, sizeof(wspool)), winpath(ca, wca, sizeof(wca)),
            winpath(crt, wcrt, sizeof(wcrt)), winpath(key, wkey, sizeof(wkey)));
    fclose(f);
    snprintf(args, sizeof(args), "%s uninstall --name %s", agent_exe, name);
    run_wine(args); /* left over by an interrupted run: ignore the outcome */
    snprintf(args, sizeof(args), "%s install --name %s --config '%s'", agent_exe, name,
             winpath(conf, wconf, sizeof(wconf)));
    assert_int_equal(run_wine(args), 0);
    assert_int_equal(sc_state(name), 1);
    snprintf(args, sizeof(args), "sc start %s", name);
    run_wine(args);
    assert_int_equal(sc_wait(name, 4), 4);
    snprintf(seg, sizeof(seg), "%s/spool-00000000000000000001.seg", spool);
    int seen = 0;
    for (int i = 0; i < 50 && !seen; i++) {
        seen = access(seg, F_OK) == 0;
        pw_proc_sleep_ms(200);
    }
    if (!seen)
        fail_msg("the service wrote no spool segment %s within 10 s", seg);
    snprintf(args, sizeof(args), "sc stop %s", name);
    run_wine(args);
    assert_int_equal(sc_wait(name, 1), 1);
    snprintf(args, sizeof(args), "%s uninstall --name %s", agent_exe, name);
    assert_int_equal(run_wine(args), 0);
    assert_int_equal(sc_state(name), -1);
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
    write_pooltag(pa, 100, 40);  /* Leak: diff 60, 3840 bytes */
    write_pooltag(pb, 150, 50);  /* diff 100, 6400 bytes */
    write_pooltag(pc, 400, 100); /* diff 300, 19200 bytes */
    write_perfinfo(pp);
    snprintf(list, sizeof(list), "%s;%s;%s;%s", winpath(pa, wa, sizeof(wa)),
             winpath(pa, wa, sizeof(wa)), winpath(pb, wb, sizeof(wb)), winpath(pc, wc, sizeof(wc)));
    setenv("POOLWATCH_TEST_POOLTAG_BUFFER", list, 1);
    setenv("POOLWATCH_TEST_PERFINFO_BUFFER", winpath(pp, wp, sizeof(wp)), 1);
    pid_t hooked = start_agent(hooks_exe, "hooks", "win", "WINHOST", NULL, NULL);
    unsetenv("POOLWATCH_TEST_POOLTAG_BUFFER");
    unsetenv("POOLWATCH_TEST_PERFINFO_BUFFER");

    /* (b) replay of case09 (both screens), exits by itself once acked. */
    char fx[600], replay_src[700];
    snprintf(
        replay_src, sizeof(replay_src), "replay:%s",
        winpath(pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"),
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

    /* (d) a second agent on the running hooked agent's spool: refused by the lock. */
    char tmp[600], dup_spool[700];
    snprintf(tmp, sizeof(tmp), "%s/spool-hooks", dir);
    snprintf(dup_spool, sizeof(dup_spool), "--spool.dir=%s", winpath(tmp, tmp, sizeof(tmp)));
    pid_t dup = start_agent(agent_exe, "dup", "sim:steady/0", "WINHOST", dup_spool, NULL);
    st = pw_proc_wait_exit(dup, 60000);
    assert_true(st != -1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    snprintf(log, sizeof(log), "%s/agent-dup.log", dir);
    assert_true(file_contains(log, "is in use by another process"));

    check_service();

    /* Let the hooked agent deliver a few more samples (5 more than now, at least 3 in all),
     * then stop it and wait until the collector has seen its session end: whatever the
     * collector acknowledged is in the store once it stopped. */
    uint64_t now_samples = win_samples();
    wait_win(now_samples + 5 > 3 ? now_samples + 5 : 3, 1);
    stop(hooked);
    wait_win(0, 0);
    pw_proc_stop(coll, SIGTERM, 30000);
    snprintf(log, sizeof(log), "%s/agent-hooks.log", dir);
    assert_true(file_contains(log, "testhook: recorded buffers replace NtQuerySystemInformation"));

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

    /* (a): one point per sample: A, B, then C, from the recorded buffers through source_win.c. */
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    int64_t n = pw_store_series(stp, "WINHOST", (const uint8_t *)"Leak", 4, PW_POOL_PAGED, 0,
                                UINT64_MAX / 2, 0, &ser, NULL);
    assert_int_equal(n, (int64_t)win_last);
    expect_point(&ser.points[0], 100, 40, 60, 3840);
    expect_point(&ser.points[1], 150, 50, 100, 6400);
    for (int64_t i = 2; i < n; i++)
        expect_point(&ser.points[i], 400, 100, 300, 19200);
    n = pw_store_series(stp, "WINHOST", (const uint8_t *)"Ddk ", 4, PW_POOL_NONPAGED, 0,
                        UINT64_MAX / 2, 0, &ser, NULL);
    assert_int_equal(n, (int64_t)win_last);
    for (int64_t i = 0; i < n; i++)
        expect_point(&ser.points[i], 4660, 4096, 564, 614400);
    /* No paged row for "Ddk " (all its paged counters are 0), none for "Leak" nonpaged. */
    assert_int_equal(pw_store_series(stp, "WINHOST", (const uint8_t *)"Ddk ", 4, PW_POOL_PAGED, 0,
                                     UINT64_MAX / 2, 0, &ser, NULL),
                     0);

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
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2e_wine_agent),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    pw_proc_kill_all();
    return pw_test_exit(r);
}
