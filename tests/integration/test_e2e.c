/* test_e2e.c: real processes on loopback: poolwatch-collector and several poolwatch-agents
 * (simulated Windows host, replay of a saved poolmon capture, Linux on a fake /proc), mutual
 * TLS with a CA made by deploy/pki.sh, a kill -9 of the collector in the middle, refusals.
 * The stored series are checked value for value against what the sources produce, computed
 * independently here: the simulator is run again with the same seed and clock, the capture's
 * values are read from the fixture, the slab values from the fake slabinfo.
 */
#include "test_util.h"
#include "source.h"
#include "source_sim.h"
#include "store.h"

#include "proc.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIM_START_MS 1764400000000ull
#define SIM_STEP_MS  10000ull

static char dir[256];

/* A process still running this long after SIGTERM (SIGKILL: at once) counts as hung. */
#define STOP_MS 30000

static int stop(pid_t pid, int sig)
{
    return pw_proc_stop(pid, sig, STOP_MS);
}

static int file_contains(const char *path, const char *needle)
{
    return pw_test_file_contains(path, needle);
}

static char coll_port[16], http_port[16];

/* The admin token of the test; the tokens file holds its SHA-256. */
#define ADMIN_TOKEN "e2e-admin-token-0123456789"

/* The native daemons of this test (proc.h), their files in `dir`. */
static pw_proc_daemon_t collector_bin = {NULL, PW_COLLECTOR_BIN, dir};
static pw_proc_daemon_t agent_bin = {NULL, PW_AGENT_BIN, dir};

/* The collector with one more option `extra` (NULL: none). */
static pid_t start_collector_with(const char *extra)
{
    return pw_proc_start_collector(&collector_bin, "collector", "pw.db", atoi(coll_port),
                                   atoi(http_port), &extra, 1);
}

static pid_t start_collector(void)
{
    return start_collector_with(NULL);
}

/* An agent sampling every 100 ms, its certificate <dir>/<cert>.pem. */
static pid_t start_agent(const char *name, const char *source, const char *host, const char *cert,
                         const char *extra1, const char *extra2)
{
    const char *extra[] = {extra1, extra2};
    return pw_proc_start_agent(&agent_bin, atoi(coll_port), name, source, host, cert, "100ms",
                               extra, 2);
}

static void run_pki(void)
{
    char pki[300], other[300];
    snprintf(pki, sizeof(pki), "%s/pki", dir);
    snprintf(other, sizeof(other), "%s/otherca", dir);
    pw_proc_pki(PW_SOURCE_DIR, pki,
                "--agent sim-leak-linear-0 --agent HOST01 --agent linuxhost --agent imposter-cert");
    pw_proc_pki(PW_SOURCE_DIR, other, "--agent sim-leak-linear-0");
}

/* Checks every stored sample of the simulated host against a second run of the simulator. */
static uint64_t check_sim_host(pw_store_t *st, uint64_t last_seq)
{
    pw_source_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.sim_start_ms = SIM_START_MS;
    cfg.sim_interval_ms = SIM_STEP_MS;
    pw_sim_t *sim;
    assert_int_equal(pw_sim_new("leak-linear", 0, &cfg, &sim, NULL), 0);
    pw_sample_t *samples = calloc(last_seq, sizeof(*samples));
    assert_non_null(samples);
    for (uint64_t k = 0; k < last_seq; k++) {
        pw_sample_init(&samples[k]);
        assert_int_equal(pw_sim_next(sim, &samples[k]), 0);
        assert_int_equal(samples[k].timestamp_ms, SIM_START_MS + k * SIM_STEP_MS);
    }
    /* Every row of the table: its stored series has one point per seq 1..last_seq (no gap,
     * no duplicate) with exactly the generated values. */
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    uint64_t checked = 0;
    const pw_sample_t *first = &samples[0];
    for (size_t i = 0; i < first->n; i++) {
        const pw_entry_t *e = &first->entries[i];
        int64_t n =
            pw_store_series(st, "sim-leak-linear-0", e->tag, e->tag_len, (pw_pool_t)e->pool,
                            SIM_START_MS, SIM_START_MS + last_seq * SIM_STEP_MS, 0, &ser, NULL);
        if (n != (int64_t)last_seq)
            fail_msg("row %zu: %lld points stored, want %llu", i, (long long)n,
                     (unsigned long long)last_seq);
        for (uint64_t k = 0; k < last_seq; k++) {
            const pw_entry_t *g = &samples[k].entries[i];
            assert_memory_equal(g->tag, e->tag, e->tag_len);
            const pw_store_point_t *pt = &ser.points[k];
            if (pt->ts_ms != samples[k].timestamp_ms || pt->bytes != g->bytes ||
                pt->diff != g->diff || pt->allocs != g->allocs || pt->frees != g->frees)
                fail_msg("row %zu seq %llu: stored %llu/%llu/%llu/%llu at %llu, generated "
                         "%llu/%llu/%llu/%llu",
                         i, (unsigned long long)k + 1, (unsigned long long)pt->allocs,
                         (unsigned long long)pt->frees, (unsigned long long)pt->diff,
                         (unsigned long long)pt->bytes, (unsigned long long)pt->ts_ms,
                         (unsigned long long)g->allocs, (unsigned long long)g->frees,
                         (unsigned long long)g->diff, (unsigned long long)g->bytes);
            checked++;
        }
    }
    pw_store_series_free(&ser);
    for (uint64_t k = 0; k < last_seq; k++)
        pw_sample_close(&samples[k]);
    free(samples);
    pw_sim_free(sim);
    return checked;
}

/* The "status" command's seq and syncs of `host`'s agent, through the API. */
static void agent_status(const char *host, unsigned long long *seq, unsigned long long *syncs)
{
    char out[400], cmd[1400];
    snprintf(out, sizeof(out), "%s/status.json", dir);
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' -d "
             "'{\"kind\":\"status\"}' https://localhost:%s/api/v1/hosts/%s/commands > %s",
             dir, ADMIN_TOKEN, http_port, host, out);
    assert_int_equal(system(cmd), 0);
    size_t n;
    char *j = pw_test_read_file(out, &n);
    const char *a = strstr(j, ", seq "), *b = strstr(j, ", syncs ");
    if (a == NULL || b == NULL)
        fail_msg("status answer without seq/syncs: %s", j);
    *seq = strtoull(a + 6, NULL, 10);
    *syncs = strtoull(b + 8, NULL, 10);
    /* The agent names the OpenSSL it runs and whether it is inside the binary (an OpenSSL
     * update then needs a rebuild): PW_AGENT_STATIC_OPENSSL. */
    const char *want = PW_AGENT_OPENSSL_LINKED_IN ? ", linked in" : ", shared /";
    if (strstr(j, ", OpenSSL ") == NULL || strstr(j, want) == NULL)
        fail_msg("status answer does not say '%s': %s", want, j);
    free(j);
}

/* A fresh directory with the PKI, the tokens file, a drivers directory and the collector's
 * arguments. */
static void e2e_setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pw-e2e-XXXXXX");
    assert_non_null(mkdtemp(dir));
    run_pki();
    snprintf(coll_port, sizeof(coll_port), "%d", pw_proc_free_port());
    snprintf(http_port, sizeof(http_port), "%d", pw_proc_free_port());
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/tokens", dir);
    pw_proc_tokens_file(cmd, ADMIN_TOKEN, "admin e2e");
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/drivers && printf 'MZ..Ddk ..' > %s/drivers/ddk.sys && "
             "printf 'MZ....' > %s/drivers/other.sys",
             dir, dir, dir);
    assert_int_equal(system(cmd), 0);
}

/* Waits: bounded, and a timeout names what was awaited (proc.h). */
#define WAIT_MS 20000

static void path_in_dir(char *out, size_t size, const char *name)
{
    assert_true(snprintf(out, size, "%s/%s", dir, name) < (int)size);
}

/* GET /api/v1/hosts/HOST with the admin token: the body (malloc'd; "" when no answer). */
static char *api_host(const char *host)
{
    char ca[300], path[300];
    path_in_dir(ca, sizeof(ca), "pki/ca.pem");
    snprintf(path, sizeof(path), "/api/v1/hosts/%s", host);
    return pw_proc_https(ca, atoi(http_port), ADMIN_TOKEN, path, NULL);
}

static uint64_t api_samples(const char *host)
{
    char *j = api_host(host);
    uint64_t n = pw_proc_json_u64(j, "samples", 0);
    free(j);
    return n;
}

typedef struct {
    const char *host;
    uint64_t min_samples; /* the collector applied at least this many of the host's samples */
    int connected;        /* 1: an agent session is open, 0: none, -1: either */
} host_state_t;

static int host_in_state(void *arg)
{
    const host_state_t *w = arg;
    char *j = api_host(w->host);
    int ok = pw_proc_json_u64(j, "samples", 0) >= w->min_samples &&
             (w->connected < 0 ||
              strstr(j, w->connected ? "\"connected\":true" : "\"connected\":false") != NULL);
    free(j);
    return ok;
}

/* Waits until the API shows `host` in the state asked for (the collector's log on timeout). */
static void wait_host(const char *host, uint64_t min_samples, int connected)
{
    host_state_t w = {host, min_samples, connected};
    char what[300], log[300];
    snprintf(what, sizeof(what), "GET /api/v1/hosts/%s: samples >= %llu%s", host,
             (unsigned long long)min_samples,
             connected < 0 ? ""
             : connected   ? ", connected"
                           : ", not connected");
    path_in_dir(log, sizeof(log), "collector.log");
    pw_proc_wait(host_in_state, &w, WAIT_MS, what, log);
}

typedef struct {
    const char *host;
    uint64_t before_ms; /* a point of the history older than this */
    uint64_t oldest_ms;
} history_wait_t;

/* The host's history (GET /api/v1/hosts/HOST, "history") starts before `before_ms`. */
static int history_before(void *arg)
{
    history_wait_t *w = arg;
    char *j = api_host(w->host);
    const char *h = strstr(j, "\"history\"");
    const char *t = h ? strstr(h, "\"ts_ms\":") : NULL;
    w->oldest_ms = t ? strtoull(t + 8, NULL, 10) : UINT64_MAX;
    free(j);
    return w->oldest_ms < w->before_ms;
}

static void test_e2e_agents_collector_store(void **state)
{
    (void)state;
    char cmd[2048];
    e2e_setup();
    pid_t coll = start_collector();
    char replay_src[600], proc_arg[600], sim_start[64];
    snprintf(sim_start, sizeof(sim_start), "--sim.start=%llums", (unsigned long long)SIM_START_MS);
    pid_t sim = start_agent("sim", "sim:leak-linear/0", "sim-leak-linear-0",
                            "pki/agent-sim-leak-linear-0", sim_start, "--sim.interval=10s");
    assert_true(
        snprintf(replay_src, sizeof(replay_src), "replay:%s",
                 pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt")) <
        (int)sizeof(replay_src));
    pid_t rep = start_agent("replay", replay_src, "HOST01", "pki/agent-HOST01",
                            "--replay.exit_when_done", "--replay.start=1764400000000ms");
    assert_true(snprintf(proc_arg, sizeof(proc_arg), "--linux.proc_root=%s",
                         pw_test_fixture("proc/case25_2.6.8")) < (int)sizeof(proc_arg));
    char drivers_arg[300];
    snprintf(drivers_arg, sizeof(drivers_arg), "--commands.drivers_dir=%s/drivers", dir);
    pid_t lin =
        start_agent("linux", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, drivers_arg);
    /* Refusals: a certificate from another CA; a certificate for another host name. */
    pid_t bad_ca = start_agent("otherca", "sim:leak-linear/0", "sim-leak-linear-0",
                               "otherca/agent-sim-leak-linear-0", "--agent.log_level=info", NULL);
    pid_t bad_name = start_agent("imposter", "sim:leak-linear/0", "sim-leak-linear-0",
                                 "pki/agent-imposter-cert", "--agent.log_level=info", NULL);
    /* The CLI's certificate (same CA, its own name) is not an agent's (issue 15, item 10). */
    pid_t bad_role = start_agent("clicert", "sim:leak-linear/0", "poolwatch-cli", "pki/cli",
                                 "--agent.log_level=info", NULL);

    /* The linux and simulated hosts stream: 10 samples (1 s at 100 ms) each are applied. */
    wait_host("linuxhost", 10, 1);
    wait_host("sim-leak-linear-0", 10, 1);
    /* kill -9 of an agent: its spool holds what was not acked; the restarted agent (a new
     * process, same spool) sends exactly that, then goes on. */
    uint64_t lin_before = api_samples("linuxhost");
    stop(lin, SIGKILL);
    wait_host("linuxhost", 0, 0); /* the collector saw the session end */
    lin = start_agent("linux", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, drivers_arg);
    wait_host("linuxhost", lin_before + 10, 1);
    /* kill -9 of the collector in the middle: acked samples must be on disk, the rest resent.
     * The outage itself is what is tested here (the agents keep sampling into their spools
     * and resend after it), so it lasts a set 0.7 s: nothing is awaited. */
    stop(coll, SIGKILL);
    pw_proc_sleep_ms(700);
    uint64_t restart_ms = pw_proc_now_ms();
    coll = start_collector();
    /* Both agents back, and the host's history (pressure trend, sparklines) holds points from
     * before the restart, more than 1 s before it: read back from the store. */
    wait_host("linuxhost", 1, 1);
    wait_host("sim-leak-linear-0", 1, 1);
    {
        history_wait_t w = {"linuxhost", restart_ms - 1000, 0};
        char log[300];
        path_in_dir(log, sizeof(log), "collector.log");
        pw_proc_wait(history_before, &w, WAIT_MS,
                     "GET /api/v1/hosts/linuxhost: a history point older than 1 s before the "
                     "collector's restart",
                     log);
        assert_true(w.oldest_ms + 1000 < restart_ms);
    }
    char out[400];
    /* Refusal: a client without a certificate (openssl s_client) is refused by the TLS layer.
     * The `sleep 1 |` is not a wait for the collector: s_client ends at the end of its stdin,
     * and with TLS 1.3 the server's alert comes after the client's Finished, so stdin stays
     * open for 1 s for s_client to read (and print) the alert. */
    snprintf(out, sizeof(out), "%s/nocert.txt", dir);
    snprintf(cmd, sizeof(cmd),
             "sleep 1 | timeout 10 openssl s_client -connect 127.0.0.1:%s -servername localhost "
             "-CAfile %s/pki/ca.pem > %s 2>&1; true",
             coll_port, dir, out);
    assert_int_equal(system(cmd), 0);
    assert_true(file_contains(out, "alert certificate required"));
    /* Commands through the API: find-tag on the agent's drivers directory, and live mode,
     * which must expire by itself. */
    snprintf(out, sizeof(out), "%s/cmd.json", dir);
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' -d "
             "'{\"kind\":\"find_tag\",\"tag\":\"Ddk \"}' "
             "https://localhost:%s/api/v1/hosts/linuxhost/commands > %s",
             dir, ADMIN_TOKEN, http_port, out);
    assert_int_equal(system(cmd), 0);
    assert_true(file_contains(out, "\"file\":\"ddk.sys\""));
    /* 'MZ..Ddk ..' is not a PE file: the bytes are there, not in code or data */
    assert_true(file_contains(out, "\"match\":\"file\""));
    assert_false(file_contains(out, "other.sys"));
    /* a simulated host has no driver files: the agent says so instead of searching this
     * machine's (a "Windows" sim host on Linux) */
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' -d "
             "'{\"kind\":\"find_tag\",\"tag\":\"Ddk \"}' "
             "https://localhost:%s/api/v1/hosts/sim-leak-linear-0/commands > %s",
             dir, ADMIN_TOKEN, http_port, out);
    assert_int_equal(system(cmd), 0);
    assert_true(file_contains(out, "it has no driver files to search"));
    /* and names the option that gives it some, where the option is (the linux agent above
     * takes it as --commands.drivers_dir) */
    assert_true(file_contains(out, "give the agent [commands] drivers_dir to search a copy"));
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert %s/pki/ca.pem -H 'Authorization: Bearer %s' -d "
             "'{\"kind\":\"live\",\"duration_ms\":1500}' "
             "https://localhost:%s/api/v1/hosts/linuxhost/commands > %s",
             dir, ADMIN_TOKEN, http_port, out);
    assert_int_equal(system(cmd), 0);
    assert_true(file_contains(out, "live mode for 1500 ms"));
    /* Expired by itself within 2.5 s of the command (1.5 s of live mode and 1 s of slack): the
     * bound is part of the check. */
    snprintf(out, sizeof(out), "%s/agent-linux.log", dir);
    pw_proc_wait_log(out, "live mode expired", 1, 2500);
    /* spool.fsync = ack (the default): while the collector acks promptly, samples are not
     * fdatasync'ed one by one. Two status answers 2 s apart (~20 samples at 100 ms): at most
     * 2 syncs in between (an ack later than 1 s on a loaded machine), where "always" makes one
     * per sample. */
    /* A token added to the tokens file works after SIGHUP, without a restart. */
    {
        char tcmd[1400], tout[400], terr[400];
        snprintf(terr, sizeof(terr), "%s/newtok.txt", dir);
        snprintf(tcmd, sizeof(tcmd), "%s --new-token read e2e-new >> %s/tokens 2> %s",
                 PW_COLLECTOR_BIN, dir, terr);
        assert_int_equal(system(tcmd), 0);
        size_t n;
        char *t = pw_test_read_file(terr, &n);
        const char *colon = strrchr(t, ':');
        assert_non_null(colon);
        char tok[128];
        assert_int_equal(sscanf(colon + 1, " %127s", tok), 1);
        free(t);
        snprintf(tout, sizeof(tout), "%s/newtok.json", dir);
        snprintf(tcmd, sizeof(tcmd),
                 "curl -s -o %s -w '%%{http_code}' --cacert %s/pki/ca.pem -H 'Authorization: "
                 "Bearer %s' https://localhost:%s/api/v1/hosts > %s.code",
                 tout, dir, tok, http_port, tout);
        assert_int_equal(system(tcmd), 0);
        char codef[450];
        snprintf(codef, sizeof(codef), "%s.code", tout);
        assert_true(file_contains(codef, "401"));
        kill(coll, SIGHUP);
        char clog[300];
        path_in_dir(clog, sizeof(clog), "collector.log");
        pw_proc_wait_log(clog, "tokens reloaded", 1, WAIT_MS);
        assert_int_equal(system(tcmd), 0);
        assert_true(file_contains(codef, "200"));
    }
    unsigned long long seq1, syncs1, seq2, syncs2;
    agent_status("linuxhost", &seq1, &syncs1);
    /* The 2 s between the two answers is the interval measured (not a wait for something). */
    pw_proc_sleep_ms(2000);
    agent_status("linuxhost", &seq2, &syncs2);
    assert_true(seq2 >= seq1 + 5);
    assert_true(syncs2 <= syncs1 + 2);
    /* The replay agent exits by itself once both screens are acked. */
    int st = pw_proc_wait_exit(rep, 5000);
    if (st == -1)
        fail_msg("the replay agent (HOST01) did not exit by itself within 5 s");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* An orderly stop of the collector while agents are connected: it commits what it has
     * and exits 0; then the agents stop cleanly too, with the collector gone. */
    st = stop(coll, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = stop(sim, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    stop(bad_ca, SIGTERM);
    stop(bad_name, SIGTERM);
    stop(bad_role, SIGTERM);

    char log[300];
    snprintf(log, sizeof(log), "%s/collector.log", dir);
    assert_true(file_contains(log, "Hello names host 'sim-leak-linear-0' but the client "
                                   "certificate is for CN 'imposter-cert'"));
    assert_true(file_contains(log, "peer presented no certificate"));
    assert_true(file_contains(log, "the client certificate (CN 'poolwatch-cli') is not an "
                                   "agent's: its subject has no OU 'poolwatch-agent'"));
    snprintf(log, sizeof(log), "%s/agent-otherca.log", dir);
    assert_true(file_contains(log, "certificate"));

    pw_store_t *stp;
    char db[300];
    snprintf(db, sizeof(db), "%s/pw.db", dir);
    assert_int_equal(pw_store_open(db, NULL, &stp, NULL), 0);
    pw_store_host_info_t *hosts;
    size_t nh;
    assert_int_equal(pw_store_hosts(stp, &hosts, &nh, NULL), 0);
    assert_int_equal(nh, 3); /* the refused agents stored nothing */
    uint64_t sim_last = 0, lin_last = 0;
    for (size_t i = 0; i < nh; i++) {
        if (strcmp(hosts[i].name, "sim-leak-linear-0") == 0)
            sim_last = hosts[i].last_seq;
        if (strcmp(hosts[i].name, "linuxhost") == 0)
            lin_last = hosts[i].last_seq;
        if (strcmp(hosts[i].name, "HOST01") == 0)
            assert_int_equal(hosts[i].last_seq, 2);
    }
    pw_store_hosts_free(hosts, nh);
    assert_true(sim_last >= 20); /* 100 ms sampling for > 5 s, minus the outage */
    assert_true(lin_last >= 5);
    uint64_t checked = check_sim_host(stp, sim_last);
    assert_true(checked >= 1000 * 20);

    /* Replay: case09's two screens, Drsd paged: 560/539/21/17472 then 737/710/27/22464,
     * stamped 15 min apart from the configured start. */
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    assert_int_equal(pw_store_series(stp, "HOST01", (const uint8_t *)"Drsd", 4, PW_POOL_PAGED, 0,
                                     UINT64_MAX / 2, 0, &ser, NULL),
                     2);
    assert_int_equal(ser.points[0].ts_ms, 1764400000000ull);
    assert_int_equal(ser.points[1].ts_ms, 1764400000000ull + 900000);
    assert_int_equal(ser.points[0].allocs, 560);
    assert_int_equal(ser.points[0].frees, 539);
    assert_int_equal(ser.points[0].diff, 21);
    assert_int_equal(ser.points[0].bytes, 17472);
    assert_int_equal(ser.points[1].allocs, 737);
    assert_int_equal(ser.points[1].diff, 27);
    assert_int_equal(ser.points[1].bytes, 22464);
    /* Linux on the case25 fake /proc: ext3_inode_cache 1,328,526 objects x 416 B in every
     * sample; all nonpaged; no allocs/frees. */
    int64_t n = pw_store_series(stp, "linuxhost", (const uint8_t *)"ext3_inode_cache", 16,
                                PW_POOL_NONPAGED, 0, UINT64_MAX / 2, 0, &ser, NULL);
    assert_int_equal(n, (int64_t)lin_last);
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(ser.points[i].diff, 1328526);
        assert_int_equal(ser.points[i].bytes, 1328526ull * 416);
        assert_int_equal(ser.points[i].allocs, 0);
    }
    pw_store_series_free(&ser);
    pw_store_close(stp);
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

/* The 16-byte agent id an agent keeps in its spool directory, in hex. */
static void spool_agent_id(const char *name, char *hex)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/spool-%s/agent_id", dir, name);
    size_t n;
    char *id = pw_test_read_file(path, &n);
    assert_int_equal(n, 16);
    for (size_t i = 0; i < 16; i++)
        sprintf(hex + 2 * i, "%02x", (uint8_t)id[i]);
    free(id);
}

#define TOLD "collector refused us: replaced by a new session of host linuxhost from 127.0.0.1:"

/* Whether a twin's log says why its session was replaced. */
static int twin_told(void *arg)
{
    (void)arg;
    int told = 0;
    for (int k = 1; k <= 2; k++) {
        char log[300];
        snprintf(log, sizeof(log), "%s/agent-twin%d.log", dir, k);
        told += access(log, R_OK) == 0 && file_contains(log, TOLD);
    }
    return told;
}

/* Two agents (two spools: two agent ids) with one certificate and host name: the collector
 * says so in a WARN naming both ids and addresses. One of them stamps its samples 6.5 hours
 * ahead (a simulation started then): a WARN naming the host and how far ahead; samples kept
 * (within a day ahead; later ones are refused, ESTAMP: test_ingest). */
static void test_e2e_clock_and_twins(void **state)
{
    (void)state;
    e2e_setup();
    pid_t coll = start_collector();
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    char ahead[64];
    snprintf(ahead, sizeof(ahead), "--sim.start=%llums",
             (unsigned long long)t0.tv_sec * 1000 + 6 * 3600000ull + 1800000ull);
    pid_t a =
        start_agent("twin1", "sim:leak-linear/0", "linuxhost", "pki/agent-linuxhost", ahead, NULL);
    char clog[300];
    path_in_dir(clog, sizeof(clog), "collector.log");
    pw_proc_wait_log(clog, "): hello: ", 1, WAIT_MS); /* twin1 holds the session first */
    pid_t b =
        start_agent("twin2", "sim:leak-linear/0", "linuxhost", "pki/agent-linuxhost", NULL, NULL);
    /* The twins replace each other's session over and over (5 more Hellos), the collector has
     * warned, and a replaced twin was told why. */
    pw_proc_wait_log(clog, "): hello: ", 6, WAIT_MS);
    pw_proc_wait_log(clog, "two agents use one certificate", 1, WAIT_MS);
    pw_proc_wait_log(clog, "sample time is", 1, WAIT_MS);
    pw_proc_wait(twin_told, NULL, WAIT_MS,
                 "'collector refused us: replaced by a new session' in agent-twin1.log or "
                 "agent-twin2.log",
                 clog);
    stop(a, SIGTERM);
    stop(b, SIGTERM);
    int st = stop(coll, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char log[300], id1[40], id2[40], want[400];
    snprintf(log, sizeof(log), "%s/collector.log", dir);
    spool_agent_id("twin1", id1);
    spool_agent_id("twin2", id2);
    assert_true(strcmp(id1, id2) != 0);
    /* which of the two replaced the other first depends on the connection order */
    int pair = 0;
    for (int k = 0; k < 2; k++) {
        const char *x = k ? id1 : id2, *y = k ? id2 : id1;
        char want2[200];
        snprintf(want, sizeof(want),
                 "WARN  [collector] host linuxhost: agent %s from 127.0.0.1:", x);
        snprintf(want2, sizeof(want2), " replaced agent %s from 127.0.0.1:", y);
        pair |= file_contains(log, want) && file_contains(log, want2);
    }
    assert_true(pair);
    assert_true(file_contains(log, ": two agents use one certificate (a cloned machine, or "
                                   "host_name set on two hosts)? "));
    snprintf(want, sizeof(want),
             "): sample time is 6 hours ahead of this collector's clock (a replay or "
             "simulation started in the future?); samples are kept at the agent's time");
    assert_true(file_contains(log, want));
    assert_true(file_contains(log, "WARN  [collector] host linuxhost (127.0.0.1:"));
    /* once, though the sessions keep replacing each other (more than once, as the INFO lines
     * say) */
    assert_int_equal(pw_test_count_in_file(log, "sample time is"), 1);
    /* The replaced agent is told why (the collector's INFO line is DEBUG for twins: its WARN
     * speaks for them). */
    char alog[2][400];
    int told = 0;
    for (int k = 0; k < 2; k++) {
        snprintf(alog[k], sizeof(alog[k]), "%s/agent-twin%d.log", dir, k + 1);
        told += file_contains(alog[k], TOLD);
    }
    assert_true(told >= 1);
    /* the samples of now are not flagged */
    assert_false(file_contains(log, "behind of this collector's clock"));
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

/* The spool's last seq an agent named at its n-th start (1-based) in its log: "(seq N, ". */
static uint64_t logged_start_seq(const char *log, int nth)
{
    pw_proc_wait_log(log, ", spool ", (size_t)nth, WAIT_MS);
    size_t n;
    char *t = pw_test_read_file(log, &n);
    const char *p = t;
    for (int k = 0; k < nth && p != NULL; k++) {
        p = strstr(p, ", spool ");
        if (p != NULL && k + 1 < nth)
            p++;
    }
    const char *q = p ? strstr(p, " (seq ") : NULL;
    if (q == NULL)
        fail_msg("start %d of the agent not in %s", nth, log);
    uint64_t seq = strtoull(q + 6, NULL, 10);
    free(t);
    return seq;
}

/* 1 when the file at `path` holds `needle` (binary files: NUL bytes are not its end). */
static int bin_contains(const char *path, const char *needle)
{
    size_t n;
    char *t = pw_test_read_file(path, &n);
    size_t k = strlen(needle);
    int found = 0;
    for (size_t i = 0; t != NULL && !found && i + k <= n; i++)
        found = memcmp(t + i, needle, k) == 0;
    free(t);
    return found;
}

/* Sends `len` bytes to the collector over mutual TLS with linuxhost's (agent) certificate
 * (openssl s_client, 1 s for the answer); returns the path of the answer's bytes (malloc'd). */
static char *raw_agent_session(const char *name, const uint8_t *bytes, size_t len)
{
    char in[300], cmd[1800];
    char *out = malloc(300);
    assert_non_null(out);
    snprintf(in, sizeof(in), "%s/%s.bin", dir, name);
    snprintf(out, 300, "%s/%s.out", dir, name);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "(cat %s; sleep 1) | timeout 10 openssl s_client -quiet -connect 127.0.0.1:%s "
             "-servername localhost -CAfile %s/pki/ca.pem -cert %s/pki/agent-linuxhost.pem -key "
             "%s/pki/agent-linuxhost.key > %s 2>/dev/null; true",
             in, coll_port, dir, dir, dir, out);
    assert_int_equal(system(cmd), 0);
    return out;
}

/* Issue 15, item 9: a Hello whose host name is "linuxhost\0evil" (the certificate's name, a
 * NUL, more) over mutual TLS with linuxhost's certificate: refused, not truncated to the
 * certificate's name. The frame is written by hand (protobuf-c packs no NUL in a string). */
static void hello_with_nul_refused(void)
{
    static const uint8_t frame[] = {0,    0,  0,   34,            /* frame length */
                                    0x0a, 32,                     /* Envelope.hello */
                                    0x08, 1,                      /* protocol_major 1 */
                                    0x1a, 4,  'n', 'u', 'l', '1', /* agent_id */
                                    0x22, 4,  'n', 'u', 'l', '1', /* boot_id */
                                    0x2a, 14, 'l', 'i', 'n', 'u', 'x',  'h', 'o', 's',
                                    't',  0,  'e', 'v', 'i', 'l', 0x60, 64}; /* counter_width 64 */
    char log[300];
    free(raw_agent_session("hello-nul", frame, sizeof(frame)));
    path_in_dir(log, sizeof(log), "collector.log");
    pw_proc_wait_log(log, "Hello names host 'linuxhost' with a NUL byte after it", 1, WAIT_MS);
}

/* Issue 15, item 12: a frame announcing 2 GiB (64 KiB at most before the Hello) and an
 * Envelope that does not decode get an Error frame naming why before the close (before: a
 * bare close). The answer's bytes hold the Error's message as text. */
static void bad_frames_get_an_error(void)
{
    static const uint8_t big[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3};
    static const uint8_t garbage[] = {0, 0, 0, 3, 0xff, 0xff, 0xff};
    char *out = raw_agent_session("frame-big", big, sizeof(big));
    assert_true(bin_contains(out, "announces 2147483647 bytes, the maximum is 65536"));
    free(out);
    out = raw_agent_session("frame-garbage", garbage, sizeof(garbage));
    assert_true(bin_contains(out, "3 bytes are not a valid poolwatch.v1.Envelope"));
    free(out);
}

/* Sets the boot id of the fake /proc under `root` (a "reboot" of the host). */
static void set_boot_id(const char *root, const char *id)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/proc/sys/kernel/random && echo %s > %s/proc/sys/kernel/random/boot_id",
             root, id, root);
    assert_int_equal(system(cmd), 0);
}

/* Issue 15, item 2: a host "reboots" (new boot id) twice. First while the collector is away,
 * so the agent's spool holds unacked samples of the old instance: they are resent, each stored
 * once under the instance that took it. Then with every sample acked: the restarted agent's
 * spool still holds the samples since its last keyframe, which it resends when the collector
 * does not know them; nothing is stored twice (before: resent under the new boot id and stored
 * again). Counted from the store: produced = stored, 0 duplicated, 0 lost, 3 instances. */
static void test_e2e_reboot_resend(void **state)
{
    (void)state;
    e2e_setup();
    char root[400], cmd[1400], proc_arg[600], alog[300];
    snprintf(root, sizeof(root), "%s/fakeproc", dir);
    snprintf(cmd, sizeof(cmd), "cp -r %s %s", pw_test_fixture("proc/case25_2.6.8"), root);
    assert_int_equal(system(cmd), 0);
    snprintf(proc_arg, sizeof(proc_arg), "--linux.proc_root=%s", root);
    path_in_dir(alog, sizeof(alog), "agent-lin.log");
    /* Boot A samples with no collector: 1.5 s at 100 ms (a set outage, nothing awaited). */
    set_boot_id(root, "boot-a");
    pid_t lin = start_agent("lin", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, NULL);
    /* its start line comes once its SIGTERM handler is in (a loaded machine takes seconds to
     * get there: a SIGTERM before it would kill it, not stop it) */
    pw_proc_wait_log(alog, "host linuxhost, source", 1, WAIT_MS);
    pw_proc_sleep_ms(1500);
    int st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Boot B, the collector up: A's samples are sent (as A's), then B's. */
    set_boot_id(root, "boot-b");
    pid_t coll = start_collector();
    lin = start_agent("lin", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, NULL);
    uint64_t a_seq = logged_start_seq(alog, 2);
    assert_true(a_seq >= 1);
    wait_host("linuxhost", a_seq + 10, 1);
    hello_with_nul_refused();
    bad_frames_get_an_error();
    st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Boot C, every sample acked: the spool's samples since its last keyframe are not stored
     * again. */
    set_boot_id(root, "boot-c");
    uint64_t applied = api_samples("linuxhost");
    lin = start_agent("lin", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, NULL);
    uint64_t b_seq = logged_start_seq(alog, 3);
    wait_host("linuxhost", applied + 1, 1);
    /* 10 samples of boot C (the applied count also has the resends: the agent says) */
    unsigned long long c_seq = 0, syncs;
    for (int i = 0; i < 200 && c_seq < b_seq + 10; i++) {
        agent_status("linuxhost", &c_seq, &syncs);
        if (c_seq < b_seq + 10)
            pw_proc_sleep_ms(100);
    }
    assert_true(c_seq >= b_seq + 10);
    st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = stop(coll, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    char db[300];
    path_in_dir(db, sizeof(db), "pw.db");
    pw_store_t *stp;
    assert_int_equal(pw_store_open(db, NULL, &stp, NULL), 0);
    pw_store_host_info_t *hosts;
    size_t nh;
    assert_int_equal(pw_store_hosts(stp, &hosts, &nh, NULL), 0);
    assert_int_equal(nh, 1);
    uint64_t last = hosts[0].last_seq;
    pw_store_hosts_free(hosts, nh);
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    int64_t n = pw_store_series(stp, "linuxhost", (const uint8_t *)"ext3_inode_cache", 16,
                                PW_POOL_NONPAGED, 0, UINT64_MAX / 2, 0, &ser, NULL);
    uint64_t dups = 0;
    for (int64_t i = 1; i < n; i++)
        dups += ser.points[i].ts_ms <= ser.points[i - 1].ts_ms;
    pw_store_series_free(&ser);
    pw_store_stats_t sst;
    assert_int_equal(pw_store_stats(stp, &sst, NULL), 0);
    pw_store_close(stp);
    /* Per instance: the highest seq each holds (A: what it spooled before the collector came). */
    char out[400];
    path_in_dir(out, sizeof(out), "instances.txt");
    snprintf(cmd, sizeof(cmd), "sqlite3 %s 'SELECT last_seq FROM instances ORDER BY last_seq' > %s",
             db, out);
    assert_int_equal(system(cmd), 0);
    size_t len;
    char *inst = pw_test_read_file(out, &len);
    unsigned long long i1 = 0, i2 = 0, i3 = 0;
    int ni = sscanf(inst, "%llu %llu %llu", &i1, &i2, &i3);
    free(inst);
    print_message("reboot resend: produced %llu (boot A 1..%llu, B ..%llu, C ..%llu), stored %llu "
                  "(%lld points), duplicated %llu, lost %lld; instances %d: last seqs %llu %llu "
                  "%llu\n",
                  (unsigned long long)last, (unsigned long long)a_seq, (unsigned long long)b_seq,
                  (unsigned long long)last, (unsigned long long)sst.samples, (long long)n,
                  (unsigned long long)(sst.samples - last + dups),
                  (long long)last - (long long)(n - dups), ni, i1, i2, i3);
    assert_int_equal(sst.samples, last);
    assert_int_equal(n, (int64_t)last);
    assert_int_equal(dups, 0);
    assert_int_equal(ni, 3);
    assert_int_equal(i1, a_seq);
    assert_int_equal(i2, b_seq);
    assert_int_equal(i3, last);
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

/* Issue 15, item 6: 40 raw TCP connections from an agent's own address (a NAT) that never say
 * anything do not keep that agent out: the per-address limit (8 here) is on connections without
 * a verified Hello, and a new connection takes the place of the oldest such one older than 1 s
 * (before: the raw ones held the limit for the 10 s handshake timeout, in waves). */
static void test_e2e_raw_connections_do_not_lock_out_agents(void **state)
{
    (void)state;
    e2e_setup();
    pid_t coll = start_collector_with("--agents.max_connections_per_ip=8");
    char script[600], log[300];
    snprintf(script, sizeof(script),
             "import socket, time\n"
             "socks = [socket.create_connection(('127.0.0.1', %s)) for i in range(40)]\n"
             "time.sleep(3600)\n",
             coll_port);
    path_in_dir(log, sizeof(log), "raw.log");
    char *argv[] = {"python3", "-c", script, NULL};
    pid_t raw = pw_proc_spawn(argv, log);
    char clog[300];
    path_in_dir(clog, sizeof(clog), "collector.log");
    pw_proc_wait_log(clog, "connections from one address", 1, WAIT_MS); /* the limit is reached */
    pw_proc_sleep_ms(1200); /* the raw connections hold their places a while (the scenario) */
    char root[400], cmd[1000], proc_arg[600];
    snprintf(root, sizeof(root), "%s/fakeproc", dir);
    snprintf(cmd, sizeof(cmd), "cp -r %s %s", pw_test_fixture("proc/case25_2.6.8"), root);
    assert_int_equal(system(cmd), 0);
    snprintf(proc_arg, sizeof(proc_arg), "--linux.proc_root=%s", root);
    pid_t lin = start_agent("lin", "linux", "linuxhost", "pki/agent-linuxhost", proc_arg, NULL);
    wait_host("linuxhost", 10, 1); /* in, and streaming, while the raw connections hold on */
    stop(raw, SIGKILL);
    /* In at its first attempt: it took the place of the oldest raw connection (before: refused
     * until the raw ones timed out, 10 s later). */
    char alog[300];
    path_in_dir(alog, sizeof(alog), "agent-lin.log");
    assert_false(file_contains(alog, "retrying in"));
    int st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = stop(coll, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

/* The serial of the certificate the server at 127.0.0.1:port presents (openssl s_client). */
static void served_serial(int port, char *out, size_t size)
{
    char cmd[1000];
    snprintf(cmd, sizeof(cmd),
             "echo | openssl s_client -connect 127.0.0.1:%d -servername localhost -CAfile "
             "%s/pki/ca.pem -cert %s/pki/agent-HOST01.pem -key %s/pki/agent-HOST01.key "
             "2>/dev/null | openssl x509 -noout -serial",
             port, dir, dir, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    out[0] = '\0';
    if (fgets(out, (int)size, p) == NULL)
        out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
    if (strncmp(out, "serial=", 7) != 0)
        fail_msg("no certificate served on port %d: '%s'", port, out);
}

/* The file's serial as "serial=HEX" and its notAfter as Unix seconds, by the openssl CLI. */
static int64_t file_cert(const char *pem, char *serial, size_t size)
{
    char cmd[1000];
    snprintf(cmd, sizeof(cmd),
             "openssl x509 -in '%s' -noout -serial && date -u -d \"$(openssl x509 -in '%s' "
             "-noout -enddate | sed 's/^notAfter=//')\" +%%s",
             pem, pem);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    long long t = 0;
    assert_non_null(fgets(serial, (int)size, p));
    serial[strcspn(serial, "\n")] = '\0';
    assert_int_equal(fscanf(p, "%lld", &t), 1);
    pclose(p);
    return t;
}

/* poolwatch_cert_expiry_seconds{cert="server"} from /metrics. */
static int64_t metric_cert_expiry(void)
{
    char ca[300];
    path_in_dir(ca, sizeof(ca), "pki/ca.pem");
    char *m = pw_proc_https(ca, atoi(http_port), ADMIN_TOKEN, "/metrics", NULL);
    const char *k = strstr(m, "\npoolwatch_cert_expiry_seconds{cert=\"server\"} ");
    if (k == NULL)
        fail_msg("/metrics has no poolwatch_cert_expiry_seconds{cert=\"server\"}");
    int64_t v = strtoll(k + strlen("\npoolwatch_cert_expiry_seconds{cert=\"server\"} "), NULL, 10);
    assert_non_null(strstr(m, "\npoolwatch_cert_expiry_seconds{cert=\"ca\"} "));
    free(m);
    return v;
}

/* Issue 15, item 13: certificate rotation and revocation, without restarting the agent.
 * - /metrics says how long the collector's certificate has left (checked against the openssl
 *   CLI's reading of the file);
 * - the collector's certificate is replaced (a 10-day one) and SIGHUP makes both listeners
 *   serve it at once, with the 14-day warning in the log and the metric following;
 * - an agent's certificate is revoked (deploy/pki.sh --revoke) and replaced on disk; after the
 *   collector's SIGHUP an agent with the revoked certificate is refused, and the running agent,
 *   reconnecting, reads its new files and is let in: had it kept the old certificate, it would
 *   have been refused as well. */
static void test_e2e_cert_rotation_and_revocation(void **state)
{
    (void)state;
    e2e_setup();
    char cmd[4096], crl_arg[400], serial0[128], serial1[128], fserial[128], clog[300], alog[300];
    snprintf(crl_arg, sizeof(crl_arg), "--agents.crl_file=%s/pki/crl.pem", dir);
    /* the running agent's certificate lives where we can replace it */
    snprintf(cmd, sizeof(cmd),
             "cp %s/pki/agent-linuxhost.pem %s/lin.pem && cp %s/pki/agent-linuxhost.key "
             "%s/lin.key && cp -r %s %s/fakeproc",
             dir, dir, dir, dir, pw_test_fixture("proc/case25_2.6.8"), dir);
    assert_int_equal(system(cmd), 0);
    path_in_dir(clog, sizeof(clog), "collector.log");
    path_in_dir(alog, sizeof(alog), "agent-lin.log");
    pid_t coll = start_collector_with(crl_arg);
    char proc_arg[600];
    snprintf(proc_arg, sizeof(proc_arg), "--linux.proc_root=%s/fakeproc", dir);
    pid_t lin = start_agent("lin", "linux", "linuxhost", "lin", proc_arg, NULL);
    wait_host("linuxhost", 3, 1);

    char pem[400];
    snprintf(pem, sizeof(pem), "%s/pki/collector.pem", dir);
    int64_t not_after = file_cert(pem, fserial, sizeof(fserial));
    int64_t left = not_after - (int64_t)(pw_proc_now_ms() / 1000);
    int64_t m = metric_cert_expiry();
    assert_true(m <= left + 2 && m >= left - 60);
    assert_true(m > 800 * 86400); /* pki.sh's 825 days */
    served_serial(atoi(http_port), serial0, sizeof(serial0));
    assert_string_equal(serial0, fserial);

    /* 1. The collector's certificate: a new one for 10 days, then SIGHUP. */
    char pki[300];
    snprintf(pki, sizeof(pki), "%s/pki", dir);
    pw_proc_pki(PW_SOURCE_DIR, pki, "--revoke collector --days 10");
    not_after = file_cert(pem, fserial, sizeof(fserial));
    assert_string_not_equal(fserial, serial0);
    kill(coll, SIGHUP);
    pw_proc_wait_log(clog, "SIGHUP: ", 1, WAIT_MS);
    pw_proc_wait_log(clog, "reloaded for new connections", 1, WAIT_MS);
    served_serial(atoi(http_port), serial1, sizeof(serial1));
    assert_string_equal(serial1, fserial);
    served_serial(atoi(coll_port), serial1, sizeof(serial1));
    assert_string_equal(serial1, fserial);
    left = not_after - (int64_t)(pw_proc_now_ms() / 1000);
    m = metric_cert_expiry();
    assert_true(m <= left + 2 && m >= left - 60);
    /* signed for 10 days: exactly 10 days when read within the second it was signed */
    assert_true(m <= 10 * 86400 && m > 9 * 86400);
    pw_proc_wait_log(clog, "the certificate expires on ", 1, WAIT_MS);
    /* 10 days less the time since pki.sh signed it (whole days: 9, or 10 within its second) */
    assert_true(file_contains(clog, ", in 9 days (") || file_contains(clog, ", in 10 days ("));
    wait_host("linuxhost", 3, 1); /* the open session kept its context */

    /* 2. The agent's certificate: revoked, a new one issued and copied over the agent's files
     * while it runs; SIGHUP reads the CRL. */
    snprintf(cmd, sizeof(cmd), "cp %s/lin.pem %s/old.pem && cp %s/lin.key %s/old.key", dir, dir,
             dir, dir);
    assert_int_equal(system(cmd), 0);
    pw_proc_pki(PW_SOURCE_DIR, pki, "--revoke agent-linuxhost --agent linuxhost");
    snprintf(cmd, sizeof(cmd),
             "cp %s/pki/agent-linuxhost.pem %s/lin.pem.new && cp %s/pki/agent-linuxhost.key "
             "%s/lin.key.new && mv %s/lin.key.new %s/lin.key && mv %s/lin.pem.new %s/lin.pem",
             dir, dir, dir, dir, dir, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    kill(coll, SIGHUP);
    pw_proc_wait_log(clog, "reloaded for new connections", 2, WAIT_MS);
    /* An agent with the revoked certificate is refused at the handshake. */
    snprintf(cmd, sizeof(cmd), "cp -r %s/fakeproc %s/fakeproc2", dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(proc_arg, sizeof(proc_arg), "--linux.proc_root=%s/fakeproc2", dir);
    pid_t rev = start_agent("rev", "linux", "linuxhost", "old", proc_arg, NULL);
    char rlog[300];
    path_in_dir(rlog, sizeof(rlog), "agent-rev.log");
    pw_proc_wait_log(clog, "peer certificate not accepted: certificate revoked", 1, WAIT_MS);
    pw_proc_wait_log(rlog, "certificate revoked", 1, WAIT_MS);
    stop(rev, SIGKILL);
    /* The running agent reconnects (the collector restarts: nothing else ends its session) and
     * is let in with its new files, read because they changed. */
    uint64_t before = api_samples("linuxhost");
    assert_true(WIFEXITED(stop(coll, SIGTERM)));
    coll = start_collector_with(crl_arg);
    pw_proc_wait_log(alog, "TLS files changed: ", 1, WAIT_MS);
    wait_host("linuxhost", before + 3, 1);
    assert_int_equal(pw_test_count_in_file(clog, "certificate revoked"), 1);
    int st = stop(lin, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = stop(coll, SIGTERM);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pw_proc_remove_dir(dir, "PW_KEEP_E2E");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2e_agents_collector_store),
        cmocka_unit_test(test_e2e_clock_and_twins),
        cmocka_unit_test(test_e2e_reboot_resend),
        cmocka_unit_test(test_e2e_raw_connections_do_not_lock_out_agents),
        cmocka_unit_test(test_e2e_cert_rotation_and_revocation),
    };
    return pw_proc_run_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
