/* test_fault.c: fault runs with real processes on loopback (issue 15): simulated agents (8;
 * PW_FAULT_AGENTS=50 for the run) stream to a collector that is killed with SIGKILL 20
 * times at pseudo-random moments (a fixed seed: the same run every time) and restarted; then
 * through a TCP proxy that cuts or stalls every connection 20 times. After each run the collector
 * stops, the agents stop, and every (agent, seq) each agent produced is accounted for: in the store
 * exactly once, still in the agent's spool for the next session, or reported lost as a gap with its
 * cause. Prints produced / stored / pending / lost / duplicated / gaps and asserts 0 lost and 0
 * duplicated. Bounded (PW_FAULT_AGENTS=N, PW_FAULT_KILLS=N, PW_FAULT_CUTS=N for a longer soak). */
#include "test_util.h"

#include "proc.h"
#include "spool.h"
#include "store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#define AGENTS_MAX 200
#define START_MS   1764400000000ull /* the simulated hosts' first sample */
#define STEP_MS    10000ull         /* simulated time between samples */
#define WAIT_MS    20000

static char g_dir[256], g_port[16], g_agent_port[16]; /* collector's port, agents' endpoint */
static int g_agents;                                  /* simulated agents of a run */
static char g_clog[300];                              /* the collector's log */
static int g_http_port;                               /* the collector's API */
static const char *g_db_rel = "/pw.db";               /* the store, under g_dir */
static const char *g_spool_rel = "";                  /* the agents' spools' parent, under g_dir */

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
    g_http_port = pw_proc_free_port();
    snprintf(a[6], 320, "--http.listen=127.0.0.1:%d", g_http_port);
    char *argv[] = {PW_COLLECTOR_BIN,
                    in_dir(a[0], "--store.path=", g_db_rel),
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
    snprintf(a[2], 320, "--collector.endpoints=127.0.0.1:%s", g_agent_port);
    snprintf(a[3], 320, "--sim.start=%llums", (unsigned long long)START_MS);
    snprintf(f, sizeof(f), "%s/spool-%d", g_spool_rel, i);
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
    uint64_t produced;       /* its spool's last seq */
    uint8_t *where;          /* per seq 1..produced: bit 1 stored, 2 pending in the spool, 4 gap */
    uint64_t stored;         /* distinct seqs in the store */
    uint64_t pending;        /* seqs not stored, still spooled (sent in the next session) */
    uint64_t gaps;           /* seqs reported lost */
    uint64_t lost;           /* none of the above */
    uint64_t stored_all;     /* points the store returned (a duplicate would show twice) */
    uint64_t store_gap_rows; /* gaps the collector recorded (lost before the spool) */
} account_t;

/* Reads agent i's spool (the agent has stopped): its last seq, its unacked records, its gaps. */
static void read_spool(int i, account_t *a)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s%s/spool-%d", g_dir, g_spool_rel, i);
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
    /* Samples the agent lost before spooling them (a failed spool write): the next sample it
     * spooled said how many (gap_before), and the store keeps that as a gap row. */
    sqlite3 *db;
    char path[300];
    snprintf(path, sizeof(path), "%s%s", g_dir, g_db_rel);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT g.seq, g.missed FROM gaps g JOIN hosts h ON "
                                        "h.id = g.host_id WHERE h.name = ?1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
    while (sqlite3_step(q) == SQLITE_ROW) {
        uint64_t seq = (uint64_t)sqlite3_column_int64(q, 0),
                 missed = (uint64_t)sqlite3_column_int64(q, 1);
        assert_true(missed < seq && seq <= a->produced + 1);
        for (uint64_t s = seq - missed; s < seq; s++)
            a->where[s] |= 4;
        a->store_gap_rows++;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
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
    for (int i = 0; all && i < g_agents; i++) {
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

static int env_int(const char *name, int dflt);

static void tmpfs_umount(void);

/* A fresh directory with a PKI for `n` agents and the collector's port. */
static void fault_setup_n(int n)
{
    g_agents = n;
    tmpfs_umount(); /* a failed test's mount, and its paths, do not carry over */
    g_db_rel = "/pw.db";
    g_spool_rel = "";
    if (g_agents < 1 || g_agents > AGENTS_MAX)
        fail_msg("PW_FAULT_AGENTS=%d: 1 .. %d", g_agents, AGENTS_MAX);
    snprintf(g_dir, sizeof(g_dir), "/tmp/pw-fault-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    char pki[300], args[AGENTS_MAX * 24] = "";
    snprintf(pki, sizeof(pki), "%s/pki", g_dir);
    for (int i = 0; i < g_agents; i++) {
        size_t l = strlen(args);
        snprintf(args + l, sizeof(args) - l, "--agent fault-%d ", i);
    }
    pw_proc_pki(PW_SOURCE_DIR, pki, args);
    snprintf(g_port, sizeof(g_port), "%d", pw_proc_free_port());
    snprintf(g_agent_port, sizeof(g_agent_port), "%s", g_port);
    snprintf(g_clog, sizeof(g_clog), "%s/collector.log", g_dir);
}

/* The fault runs' agents: 8, or PW_FAULT_AGENTS (50: the run; on a shared 2-core
 * machine 50 ASan agents do not all connect within the waits, so the test command runs 8). */
static void fault_setup(void)
{
    fault_setup_n(env_int("PW_FAULT_AGENTS", 8));
}

static account_t g_last; /* the totals of the last stop_and_account */

/* Every agent in a session with the collector since byte w->off of its log, a second more of
 * streaming, then a clean stop of the collector and of the agents; then the accounting of every
 * (agent, seq) produced, printed as `what`, with 0 lost and 0 duplicated required. */
static void stop_and_account(hellos_t *w, pid_t coll, const pid_t *agents, const char *what)
{
    pw_proc_wait(all_said_hello, w, WAIT_MS + 1000L * g_agents,
                 "a Hello from every agent after the last fault", w->log);
    pw_proc_sleep_ms(1000);
    int st = pw_proc_stop(coll, SIGTERM, WAIT_MS);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < g_agents; i++) {
        st = pw_proc_stop(agents[i], SIGTERM, WAIT_MS);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    char db[300];
    snprintf(db, sizeof(db), "%s%s", g_dir, g_db_rel);
    pw_store_t *stp;
    assert_int_equal(pw_store_open(db, NULL, &stp, NULL), 0);
    pw_store_stats_t sst;
    assert_int_equal(pw_store_stats(stp, &sst, NULL), 0);
    account_t tot = {0};
    for (int i = 0; i < g_agents; i++) {
        account_t a = {0};
        read_spool(i, &a);
        read_store(stp, i, &a);
        tot.produced += a.produced;
        tot.stored += a.stored;
        tot.stored_all += a.stored_all;
        tot.pending += a.pending;
        tot.gaps += a.gaps;
        tot.lost += a.lost;
        tot.store_gap_rows += a.store_gap_rows;
        free(a.where);
    }
    pw_store_close(stp);
    uint64_t dup = sst.samples - tot.stored; /* samples the store holds beyond one per seq */
    print_message("fault run: %d agents, %s: produced %llu, stored %llu, pending in spools %llu, "
                  "lost %llu, duplicated %llu, gaps %llu\n",
                  g_agents, what, (unsigned long long)tot.produced, (unsigned long long)tot.stored,
                  (unsigned long long)tot.pending, (unsigned long long)tot.lost,
                  (unsigned long long)dup, (unsigned long long)tot.gaps);
    assert_int_equal(tot.lost, 0);
    assert_int_equal(dup, 0);
    assert_int_equal(tot.stored_all, tot.stored);
    assert_int_equal(tot.stored + tot.pending + tot.gaps, tot.produced);
    assert_true(tot.stored > 0);
    g_last = tot;
    /* A sample lost before the spool is reported with its cause, by the collector. */
    if (tot.store_gap_rows > 0)
        assert_true(pw_test_file_contains(g_clog, "(spool write failed: disk full or I/O error)"));
    tmpfs_umount();
    pw_proc_remove_dir(g_dir, "PW_KEEP_FAULT");
}

/* Starts the collector and the agents and waits for every agent's Hello (*w: the collector's
 * log from its start). Returns the collector. */
static pid_t start_all(pid_t agents[AGENTS_MAX], hellos_t *w)
{
    pid_t coll = collector();
    for (int i = 0; i < g_agents; i++)
        agents[i] = agent(i);
    *w = (hellos_t){g_clog, 0};
    pw_proc_wait(all_said_hello, w, WAIT_MS + 1000L * g_agents, "a Hello from every agent", g_clog);
    return coll;
}

/* The integer in environment variable `name`, or `dflt`. */
static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* The next of a fixed sequence of pseudo-random numbers (the scenario's moments). */
static uint32_t next_rand(uint32_t *rng)
{
    *rng = *rng * 1103515245u + 12345u;
    return *rng >> 16;
}

/* The run: agents stream, the collector dies `kills` times, then everything stops cleanly. */
static void test_fault_collector_sigkill(void **state)
{
    (void)state;
    fault_setup();
    pid_t agents[AGENTS_MAX];
    hellos_t w;
    pid_t coll = start_all(agents, &w);
    int kills = env_int("PW_FAULT_KILLS", 20);
    char what[64];
    /* The moments are the scenario, not waits: a fixed sequence of pseudo-random delays. */
    uint32_t rng = 0x5eed1234u;
    for (int k = 0; k < kills; k++) {
        pw_proc_sleep_ms(700 + (long)(next_rand(&rng) % 1800)); /* streaming 0.7 .. 2.5 s */
        pw_proc_stop(coll, SIGKILL, WAIT_MS);
        pw_proc_sleep_ms(100 + (long)(next_rand(&rng) % 600)); /* down for 0.1 .. 0.7 s */
        w.off = file_size(g_clog);
        coll = collector();
    }
    snprintf(what, sizeof(what), "collector SIGKILLed %d times", kills);
    stop_and_account(&w, coll, agents, what);
}

/* ---- a TCP proxy that cuts and stalls the agents' connections ------------------------- */

#define PROXY_PAIRS (2 * AGENTS_MAX)

static struct {
    int lfd, upstream_port;
    int c[PROXY_PAIRS], u[PROXY_PAIRS]; /* agent side, collector side */
    int n;
    volatile int cut, stall, stop;
} g_px;

static void px_drop(int i)
{
    close(g_px.c[i]);
    close(g_px.u[i]);
    g_px.n--;
    g_px.c[i] = g_px.c[g_px.n];
    g_px.u[i] = g_px.u[g_px.n];
}

/* Copies what `from` has to `to`; 0 when `from` ended or `to` failed. */
static int px_copy(int from, int to)
{
    char buf[65536];
    ssize_t n = read(from, buf, sizeof(buf));
    for (ssize_t off = 0; n > 0 && off < n;) {
        ssize_t k = write(to, buf + off, (size_t)(n - off));
        if (k <= 0)
            return 0;
        off += k;
    }
    return n > 0;
}

static void *px_main(void *arg)
{
    (void)arg;
    while (!g_px.stop) {
        if (g_px.cut) { /* every connection ends at once, both ways */
            while (g_px.n > 0)
                px_drop(0);
            g_px.cut = 0;
        }
        struct pollfd pf[1 + 2 * PROXY_PAIRS];
        int stall = g_px.stall, np = 1;
        pf[0] = (struct pollfd){g_px.lfd, POLLIN, 0};
        for (int i = 0; i < g_px.n && !stall; i++) {
            pf[np++] = (struct pollfd){g_px.c[i], POLLIN, 0};
            pf[np++] = (struct pollfd){g_px.u[i], POLLIN, 0};
        }
        if (poll(pf, (nfds_t)np, 20) <= 0)
            continue;
        for (int i = g_px.n - 1; i >= 0 && !stall; i--) {
            short rc = pf[1 + 2 * i].revents, ru = pf[2 + 2 * i].revents;
            if ((rc && !px_copy(g_px.c[i], g_px.u[i])) || (ru && !px_copy(g_px.u[i], g_px.c[i])))
                px_drop(i);
        }
        if (pf[0].revents & POLLIN) {
            int c = accept(g_px.lfd, NULL, NULL);
            int u = c >= 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
            struct sockaddr_in to = {0};
            to.sin_family = AF_INET;
            to.sin_port = htons((uint16_t)g_px.upstream_port);
            inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
            if (u >= 0 && g_px.n < PROXY_PAIRS &&
                connect(u, (struct sockaddr *)&to, sizeof(to)) == 0) {
                g_px.c[g_px.n] = c;
                g_px.u[g_px.n++] = u;
            } else {
                if (c >= 0)
                    close(c);
                if (u >= 0)
                    close(u);
            }
        }
    }
    while (g_px.n > 0)
        px_drop(0);
    close(g_px.lfd);
    return NULL;
}

/* The proxy listens on a free port (the agents' endpoint) and forwards to the collector. */
static void px_start(pthread_t *th)
{
    memset(&g_px, 0, sizeof(g_px));
    g_px.upstream_port = atoi(g_port);
    g_px.lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(g_px.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(bind(g_px.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(g_px.lfd, 64), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(g_px.lfd, (struct sockaddr *)&a, &al), 0);
    snprintf(g_agent_port, sizeof(g_agent_port), "%d", ntohs(a.sin_port));
    assert_int_equal(pthread_create(th, NULL, px_main, NULL), 0);
}

/* Issue 15: the network between agents and collector fails: a proxy cuts every connection or
 * stalls them for 0.3 .. 1.5 s, 20 times at seeded moments (PW_FAULT_CUTS=N: more); nothing
 * is lost or doubled. */
static void test_fault_proxy_cuts_and_stalls(void **state)
{
    (void)state;
    char what[64];
    pthread_t th;
    pid_t agents[AGENTS_MAX];
    hellos_t w;
    fault_setup();
    px_start(&th); /* the agents' endpoint */
    pid_t coll = start_all(agents, &w);
    int events = env_int("PW_FAULT_CUTS", 20);
    uint32_t rng = 0xc0ffee11u;
    int cuts = 0, stalls = 0;
    for (int k = 0; k < events; k++) {
        pw_proc_sleep_ms(300 + (long)(next_rand(&rng) % 900)); /* streaming 0.3 .. 1.2 s */
        if (next_rand(&rng) % 2) {
            w.off = file_size(g_clog); /* the agents say Hello again after it */
            g_px.cut = 1;
            cuts++;
        } else {
            g_px.stall = 1;
            pw_proc_sleep_ms(300 + (long)(next_rand(&rng) % 1200));
            g_px.stall = 0;
            stalls++;
        }
    }
    snprintf(what, sizeof(what), "%d connection cuts and %d stalls", cuts, stalls);
    stop_and_account(&w, coll, agents, what);
    g_px.stop = 1;
    pthread_join(th, NULL);
}

/* ---- full disks: a tmpfs that fills, then grows -------------------------------------------- */

static char g_mnt[320]; /* mounted by the test (unmounted at exit) */

static void tmpfs_umount(void)
{
    if (g_mnt[0] != '\0') {
        char cmd[800];
        snprintf(cmd, sizeof(cmd), "umount '%s' 2>/dev/null || umount -l '%s'", g_mnt, g_mnt);
        if (system(cmd) != 0)
            fprintf(stderr, "test_fault: cannot unmount %s\n", g_mnt);
        g_mnt[0] = '\0';
    }
}

/* A tmpfs of `size` at g_dir/rel (mkdir'd). Root only: skips the test otherwise. */
static int tmpfs_mount(const char *rel, const char *size)
{
    if (geteuid() != 0)
        return 0;
    char cmd[800];
    in_dir(g_mnt, "", rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && mount -t tmpfs -o size=%s,mode=0755 tmpfs '%s'",
             g_mnt, size, g_mnt);
    if (system(cmd) != 0) {
        g_mnt[0] = '\0';
        fail_msg("cannot mount a tmpfs at %s (as root)", g_mnt);
    }
    static int registered;
    if (!registered++)
        atexit(tmpfs_umount);
    return 1;
}

static void tmpfs_grow(const char *size)
{
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "mount -o remount,size=%s '%s'", size, g_mnt);
    assert_int_equal(system(cmd), 0);
}

/* Issue 15: the store's disk fills while agents stream (a 640 KiB tmpfs under the database), the
 * collector refuses to ack and the sessions restart and back off; then the disk grows (a
 * remount) and every sample arrives: stored once, nothing lost. */
static void test_fault_store_disk_fills_and_frees(void **state)
{
    (void)state;
    fault_setup_n(4);
    if (!tmpfs_mount("/storefs", "640k")) {
        pw_proc_remove_dir(g_dir, NULL);
        skip(); /* mount needs root (CI runs as root: a skip there is a failure) */
    }
    g_db_rel = "/storefs/pw.db";
    pid_t agents[AGENTS_MAX];
    hellos_t w;
    pid_t coll = start_all(agents, &w);
    pw_proc_wait_log(g_clog, "not acking; sessions will resend", 1, 60000);
    pw_proc_sleep_ms(2000); /* full for a while: agents back off and keep spooling */
    tmpfs_grow("64m");
    pw_proc_wait_log(g_clog, "store recovered", 1, WAIT_MS);
    /* A session the failure did not close says no new Hello: any Hello counts; what has not
     * arrived by the stop is counted as pending in its spool. */
    w.off = 0;
    pw_proc_sleep_ms(2000);
    stop_and_account(&w, coll, agents, "store disk full, then grown");
    g_db_rel = "/pw.db";
}

/* Issue 15: the agents' spool disk fills while the collector is away (a 192 KiB tmpfs under four
 * spools): each failed spool write loses its sample, and the next spooled sample carries the
 * count (cause: spool write), which the collector records as a gap; then the disk grows, the
 * collector comes up, and every seq is stored once or in a recorded gap. */
static void test_fault_spool_disk_fills_and_frees(void **state)
{
    (void)state;
    fault_setup_n(4);
    if (!tmpfs_mount("/spoolfs", "192k")) {
        pw_proc_remove_dir(g_dir, NULL);
        skip();
    }
    g_spool_rel = "/spoolfs";
    pid_t agents[AGENTS_MAX];
    for (int i = 0; i < g_agents; i++)
        agents[i] = agent(i);
    for (int i = 0; i < g_agents; i++) {
        char alog[320], f[64];
        snprintf(f, sizeof(f), "/agent-%d.log", i);
        pw_proc_wait_log(in_dir(alog, "", f), "spool append: ", 1, 60000);
    }
    pw_proc_sleep_ms(1000);
    tmpfs_grow("64m");
    pid_t coll = collector();
    hellos_t w = {g_clog, 0};
    pw_proc_sleep_ms(1000); /* samples after the disk grew: they carry the gaps */
    stop_and_account(&w, coll, agents, "spool disk full, then grown");
    assert_true(g_last.gaps > 0);
    assert_true(g_last.store_gap_rows > 0);
    print_message("spool disk: %llu samples lost to failed spool writes, in %llu recorded gaps\n",
                  (unsigned long long)g_last.gaps, (unsigned long long)g_last.store_gap_rows);
    g_spool_rel = "";
}

/* ---- LeakSanitizer at shutdown with sessions open -------------------------------------- */

/* 1 when the file holds a sanitizer report. */
static int sanitizer_report(const char *log)
{
    return pw_test_file_contains(log, "LeakSanitizer") ||
           pw_test_file_contains(log, "ERROR: AddressSanitizer");
}

/* Issue 15: both daemons stop on SIGTERM with everything open and LeakSanitizer finds nothing:
 * the collector with agent sessions streaming and API clients connected (keep-alive after an
 * answer, a request head half sent, a TCP connection that never starts TLS); then each agent
 * with its session up. A canary first shows that a leak in a child of this test is reported
 * (LSan works here: the check can fail). */
static void test_fault_shutdown_leak_free(void **state)
{
    (void)state;
#if !defined(__SANITIZE_ADDRESS__)
    skip(); /* a build without ASan: no LeakSanitizer to ask */
#else
    setenv("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1", 1);
    fault_setup_n(5);
    char canary[320];
    in_dir(canary, "", "/canary.log");
    fflush(NULL);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        if (freopen(canary, "w", stderr) == NULL)
            _exit(3);
        void *volatile leak = malloc(77);
        leak = NULL;
        exit(leak != NULL);
    }
    int st;
    waitpid(c, &st, 0);
    assert_true(pw_test_file_contains(canary, "detected memory leaks"));
    assert_true(pw_test_file_contains(canary, "77 byte(s)"));

    pid_t agents[AGENTS_MAX];
    hellos_t w;
    pid_t coll = start_all(agents, &w);
    /* API clients: 3 keep-alive connections after a (401) answer, 2 with half a request head,
     * 1 plain TCP connection; "ready" in its log once all are open. */
    char script[2000], plog[320];
    snprintf(script, sizeof(script),
             "import socket, ssl, sys, time\n"
             "ctx = ssl.create_default_context(cafile='%s/pki/ca.pem')\n"
             "keep = []\n"
             "for i in range(5):\n"
             "    s = ctx.wrap_socket(socket.create_connection(('127.0.0.1', %d)),"
             " server_hostname='localhost')\n"
             "    if i < 3:\n"
             "        s.sendall(b'GET /api/v1/hosts HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
             "        s.recv(65536)\n"
             "    else:\n"
             "        s.sendall(b'GET /api/v1/hosts HTTP/1.1\\r\\nHost: ')\n"
             "    keep.append(s)\n"
             "keep.append(socket.create_connection(('127.0.0.1', %d)))\n"
             "print('ready', flush=True)\n"
             "time.sleep(600)\n",
             g_dir, g_http_port, g_http_port);
    char *argv[] = {"python3", "-c", script, NULL};
    pid_t py = pw_proc_spawn(argv, in_dir(plog, "", "/api-clients.log"));
    pw_proc_wait_log(plog, "ready", 1, WAIT_MS);
    pw_proc_sleep_ms(500); /* samples in flight */
    st = pw_proc_stop(coll, SIGTERM, WAIT_MS);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) || sanitizer_report(g_clog)) {
        pw_proc_dump_log(g_clog, 60);
        fail_msg("the collector did not stop cleanly with sessions open (status 0x%x)", st);
    }
    pw_proc_stop(py, SIGKILL, WAIT_MS);
    /* The agents, each with its session up to a new collector. */
    w.off = file_size(g_clog);
    coll = collector();
    pw_proc_wait(all_said_hello, &w, WAIT_MS, "a Hello from every agent", g_clog);
    for (int i = 0; i < g_agents; i++) {
        char alog[320], f[64];
        snprintf(f, sizeof(f), "/agent-%d.log", i);
        st = pw_proc_stop(agents[i], SIGTERM, WAIT_MS);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) || sanitizer_report(in_dir(alog, "", f))) {
            pw_proc_dump_log(alog, 60);
            fail_msg("agent %d did not stop cleanly with its session open (status 0x%x)", i, st);
        }
    }
    st = pw_proc_stop(coll, SIGTERM, WAIT_MS);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_false(sanitizer_report(g_clog));
    print_message("shutdown: collector with %d agent sessions and 6 API connections open, then "
                  "%d agents with sessions open: exit 0, LeakSanitizer silent\n",
                  g_agents, g_agents);
    pw_proc_remove_dir(g_dir, "PW_KEEP_FAULT");
#endif
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_collector_sigkill),
        cmocka_unit_test(test_fault_proxy_cuts_and_stalls),
        cmocka_unit_test(test_fault_store_disk_fills_and_frees),
        cmocka_unit_test(test_fault_spool_disk_fills_and_frees),
        cmocka_unit_test(test_fault_shutdown_leak_free),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    pw_proc_kill_all();
    return pw_test_exit(r);
}
