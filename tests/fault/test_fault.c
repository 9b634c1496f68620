/* test_fault.c: a fault run with real processes on loopback (issue 15): simulated agents
 * stream to a collector that is killed with SIGKILL several times at pseudo-random moments
 * (a fixed seed: the same run every time) and restarted. Then the collector stops, the agents
 * stop, and every (agent, seq) each agent produced is accounted for: in the store exactly once,
 * still in the agent's spool for the next session, or reported lost as a gap with its cause.
 * Prints produced / stored / pending / lost / duplicated / gaps and asserts 0 lost and 0
 * duplicated. Bounded: about 25 s under ASan (PW_FAULT_KILLS=N, default 10, for a longer soak). */
#include "test_util.h"

#include "proc.h"
#include "spool.h"
#include "store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define AGENTS   8
#define START_MS 1764400000000ull /* the simulated hosts' first sample */
#define STEP_MS  10000ull         /* simulated time between samples */
#define WAIT_MS  20000

static char g_dir[256], g_port[16];

/* "<opt><test dir><path>" into buf (320 bytes); returns buf. */
static char *in_dir(char *buf, const char *opt, const char *path)
{
    snprintf(buf, 320, "%s%s%s", opt, g_dir, path);
    return buf;
}

static pid_t collector(void)
{
    char a[7][320];
    snprintf(a[5], 320, "--agents.listen=127.0.0.1:%s", g_port);
    snprintf(a[6], 320, "--http.listen=127.0.0.1:%d", pw_proc_free_port());
    char *argv[] = {PW_COLLECTOR_BIN,
                    in_dir(a[0], "--store.path=", "/pw.db"),
                    in_dir(a[1], "--agents.ca_file=", "/pki/ca.pem"),
                    in_dir(a[2], "--agents.cert_file=", "/pki/collector.pem"),
                    in_dir(a[3], "--agents.key_file=", "/pki/collector.key"),
                    a[5],
                    a[6],
                    NULL};
    return pw_proc_spawn(argv, in_dir(a[4], "", "/collector.log"));
}

static pid_t agent(int i)
{
    char a[9][320], f[64];
    snprintf(a[0], 320, "--agent.source=sim:fleet-small/%d", i);
    snprintf(a[1], 320, "--agent.host_name=fault-%d", i);
    snprintf(a[2], 320, "--collector.endpoints=127.0.0.1:%s", g_port);
    snprintf(a[3], 320, "--sim.start=%llums", (unsigned long long)START_MS);
    snprintf(f, sizeof(f), "/spool-%d", i);
    in_dir(a[4], "--spool.dir=", f);
    snprintf(f, sizeof(f), "/pki/agent-fault-%d.pem", i);
    in_dir(a[5], "--collector.cert_file=", f);
    snprintf(f, sizeof(f), "/pki/agent-fault-%d.key", i);
    in_dir(a[6], "--collector.key_file=", f);
    snprintf(f, sizeof(f), "/agent-%d.log", i);
    char *argv[] = {PW_AGENT_BIN,
                    a[0],
                    a[1],
                    a[2],
                    a[3],
                    a[4],
                    a[5],
                    a[6],
                    in_dir(a[7], "--collector.ca_file=", "/pki/ca.pem"),
                    "--sim.interval=10s",
                    "--agent.interval=100ms",
                    "--collector.server_name=localhost",
                    "--collector.backoff_min=100ms",
                    "--collector.backoff_max=1s",
                    NULL};
    return pw_proc_spawn(argv, in_dir(a[8], "", f));
}

/* What one agent produced and where each of its seqs is. */
typedef struct {
    uint64_t produced;   /* its spool's last seq */
    uint8_t *where;      /* per seq 1..produced: bit 1 stored, 2 pending in the spool, 4 gap */
    uint64_t stored;     /* distinct seqs in the store */
    uint64_t pending;    /* seqs not stored, still spooled (sent in the next session) */
    uint64_t gaps;       /* seqs reported lost */
    uint64_t lost;       /* none of the above */
    uint64_t stored_all; /* points the store returned (a duplicate would show twice) */
} account_t;

/* Reads agent i's spool (the agent has stopped): its last seq, its unacked records, its gaps. */
static void read_spool(int i, account_t *a)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/spool-%d", g_dir, i);
    pw_spool_opts_t o = {.fsync = PW_SPOOL_FSYNC_NEVER};
    pw_spool_t *sp;
    assert_int_equal(pw_spool_open(dir, &o, &sp, NULL, NULL), 0);
    a->produced = pw_spool_last_seq(sp);
    a->where = calloc(a->produced + 1, 1);
    assert_non_null(a->where);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    while (pw_spool_iter_next(it, &r, NULL) == 1)
        if (r.seq <= a->produced)
            a->where[r.seq] |= 2;
    pw_spool_iter_close(it);
    pw_spool_gap_t g[PW_SPOOL_MAX_GAPS];
    size_t ng = pw_spool_gaps(sp, g, PW_SPOOL_MAX_GAPS);
    for (size_t k = 0; k < ng && k < PW_SPOOL_MAX_GAPS; k++)
        for (uint64_t s = g[k].first_seq; s <= g[k].last_seq && s <= a->produced; s++)
            a->where[s] |= 4;
    pw_spool_close(sp);
}

/* Marks the seqs the store holds for agent i: one series point per stored sample (the
 * simulated clock makes seq = (ts - START_MS) / STEP_MS + 1). */
static void read_store(pw_store_t *st, int i, account_t *a)
{
    char host[64];
    snprintf(host, sizeof(host), "fault-%d", i);
    pw_sample_t last;
    pw_sample_init(&last);
    assert_int_equal(pw_store_latest(st, host, &last, NULL), 0);
    assert_true(last.n > 0);
    pw_store_series_t ser;
    memset(&ser, 0, sizeof(ser));
    int64_t n = pw_store_series(st, host, last.entries[0].tag, last.entries[0].tag_len,
                                (pw_pool_t)last.entries[0].pool, 0, UINT64_MAX / 2, 0, &ser, NULL);
    pw_sample_close(&last);
    assert_true(n > 0);
    a->stored_all = (uint64_t)n;
    for (int64_t k = 0; k < n; k++) {
        uint64_t seq = (ser.points[k].ts_ms - START_MS) / STEP_MS + 1;
        assert_true(seq >= 1 && seq <= a->produced); /* nothing stored that was not made */
        a->where[seq] |= 1;
    }
    pw_store_series_free(&ser);
    for (uint64_t s = 1; s <= a->produced; s++) {
        uint8_t w = a->where[s];
        a->stored += (w & 1) != 0;
        a->pending += !(w & 1) && (w & 2);
        a->gaps += !(w & 3) && (w & 4);
        a->lost += w == 0;
    }
}

/* Since byte `off` of the collector's log, every agent said Hello (its session is up). */
typedef struct {
    const char *log;
    size_t off;
} hellos_t;

static int all_said_hello(void *arg)
{
    const hellos_t *w = arg;
    size_t n;
    char *t = pw_test_read_file(w->log, &n);
    int all = t != NULL && n >= w->off;
    for (int i = 0; all && i < AGENTS; i++) {
        char want[64];
        snprintf(want, sizeof(want), "] fault-%d (", i);
        all = 0;
        for (const char *p = strstr(t + w->off, want); p && !all; p = strstr(p + 1, want)) {
            const char *eol = strchr(p, '\n');
            const char *h = strstr(p, "): hello: ");
            all = h != NULL && (eol == NULL || h < eol);
        }
    }
    free(t);
    return all;
}

static size_t file_size(const char *path)
{
    size_t n = 0;
    free(pw_test_read_file(path, &n)); /* a log of some KiB */
    return n;
}

/* The run: agents stream, the collector dies `kills` times, then everything stops cleanly. */
static void test_fault_collector_sigkill(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/pw-fault-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    char pki[300], args[1024] = "";
    snprintf(pki, sizeof(pki), "%s/pki", g_dir);
    for (int i = 0; i < AGENTS; i++) {
        size_t l = strlen(args);
        snprintf(args + l, sizeof(args) - l, "--agent fault-%d ", i);
    }
    pw_proc_pki(PW_SOURCE_DIR, pki, args);
    snprintf(g_port, sizeof(g_port), "%d", pw_proc_free_port());
    int kills = getenv("PW_FAULT_KILLS") ? atoi(getenv("PW_FAULT_KILLS")) : 10;
    char clog[300];
    snprintf(clog, sizeof(clog), "%s/collector.log", g_dir);

    pid_t coll = collector();
    pid_t agents[AGENTS];
    for (int i = 0; i < AGENTS; i++)
        agents[i] = agent(i);
    hellos_t w = {clog, 0};
    pw_proc_wait(all_said_hello, &w, WAIT_MS, "a Hello from every agent", clog);
    /* The moments are the scenario, not waits: a fixed sequence of pseudo-random delays. */
    uint32_t rng = 0x5eed1234u;
    for (int k = 0; k < kills; k++) {
        rng = rng * 1103515245u + 12345u;
        pw_proc_sleep_ms(700 + (long)(rng >> 16) % 1800); /* streaming for 0.7 .. 2.5 s */
        pw_proc_stop(coll, SIGKILL, WAIT_MS);
        rng = rng * 1103515245u + 12345u;
        pw_proc_sleep_ms(100 + (long)(rng >> 16) % 600); /* down for 0.1 .. 0.7 s */
        w.off = file_size(clog);
        coll = collector();
    }
    /* Every agent back in a session with the last collector, then a clean stop of both. */
    pw_proc_wait(all_said_hello, &w, WAIT_MS, "a Hello from every agent after the last restart",
                 clog);
    pw_proc_sleep_ms(1000);
    int st = pw_proc_stop(coll, SIGTERM, WAIT_MS);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < AGENTS; i++) {
        st = pw_proc_stop(agents[i], SIGTERM, WAIT_MS);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    char db[300];
    snprintf(db, sizeof(db), "%s/pw.db", g_dir);
    pw_store_t *stp;
    assert_int_equal(pw_store_open(db, NULL, &stp, NULL), 0);
    pw_store_stats_t sst;
    assert_int_equal(pw_store_stats(stp, &sst, NULL), 0);
    account_t tot = {0};
    for (int i = 0; i < AGENTS; i++) {
        account_t a = {0};
        read_spool(i, &a);
        read_store(stp, i, &a);
        tot.produced += a.produced;
        tot.stored += a.stored;
        tot.stored_all += a.stored_all;
        tot.pending += a.pending;
        tot.gaps += a.gaps;
        tot.lost += a.lost;
        free(a.where);
    }
    pw_store_close(stp);
    uint64_t dup = sst.samples - tot.stored; /* samples the store holds beyond one per seq */
    print_message("fault run: %d agents, collector SIGKILLed %d times: produced %llu, stored "
                  "%llu, pending in spools %llu, lost %llu, duplicated %llu, gaps %llu\n",
                  AGENTS, kills, (unsigned long long)tot.produced, (unsigned long long)tot.stored,
                  (unsigned long long)tot.pending, (unsigned long long)tot.lost,
                  (unsigned long long)dup, (unsigned long long)tot.gaps);
    assert_int_equal(tot.lost, 0);
    assert_int_equal(dup, 0);
    assert_int_equal(tot.stored_all, tot.stored);
    assert_int_equal(tot.stored + tot.pending + tot.gaps, tot.produced);
    assert_true(tot.stored > 0);
    pw_proc_remove_dir(g_dir, "PW_KEEP_FAULT");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_collector_sigkill),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    pw_proc_kill_all();
    return pw_test_exit(r);
}
