/* test_agent.c: the agent's pure pieces: reconnect backoff (with injected random numbers) and
 * find-tag over a directory of fixture driver files; and the session against an in-process
 * collector double (TLS on loopback, certificates from deploy/pki.sh) whose answers the tests
 * script: a collector that already holds more seqs than the agent's spool. The whole system
 * is tested end to end in tests/integration/test_e2e.c. */
#include "test_util.h"
#include "agent.h"
#include "evsub.h"
#include "selfstat.h"
#include "codec.h"
#include "frame.h"
#include "log.h"
#include "net.h"
#include "spool.h"
#include "spool_internal.h"
#include "tls.h"
#include "uplink.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

static void test_backoff_doubles_with_equal_jitter_and_caps(void **state)
{
    (void)state;
    pw_backoff_t b;
    pw_backoff_init(&b, 1000, 300000);
    /* rnd = 0 gives the lower edge (half the base), rnd = UINT32_MAX mod (base/2+1) the
     * upper side; base = 1000 * 2^attempt, capped at 300,000. */
    static const uint64_t base[] = {1000,  2000,   4000,   8000,   16000,  32000,
                                    64000, 128000, 256000, 300000, 300000, 300000};
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
        pw_backoff_t lo = b, hi = b;
        uint64_t d_lo = pw_backoff_next(&lo, 0);
        uint64_t d_hi = pw_backoff_next(&hi, UINT32_MAX);
        assert_int_equal(d_lo, base[i] / 2);
        uint64_t half = base[i] / 2;
        assert_int_equal(d_hi, half + (uint64_t)UINT32_MAX % (base[i] - half + 1));
        assert_true(d_hi <= base[i]);
        pw_backoff_next(&b, 12345);
    }
    /* After a healthy session the next delay starts over. */
    pw_backoff_reset(&b);
    assert_int_equal(pw_backoff_next(&b, 0), 500);
    /* Defaults: 1 s .. 5 min. */
    pw_backoff_init(&b, 0, 0);
    assert_int_equal(b.min_ms, 1000);
    assert_int_equal(b.max_ms, 300000);
    /* A delay never exceeds the cap, whatever the random number. */
    for (int i = 0; i < 100; i++)
        assert_true(pw_backoff_next(&b, (uint32_t)(i * 2654435761u)) <= 300000);
}

typedef struct {
    char names[8][64];
    uint64_t sizes[8];
    int n;
} found_t;

static void on_found(const pw_findtag_match_t *m, void *arg)
{
    found_t *f = arg;
    if (f->n < 8) {
        snprintf(f->names[f->n], sizeof(f->names[0]), "%s", m->name);
        f->sizes[f->n++] = m->size_bytes;
    }
}

static int has(const found_t *f, const char *name, uint64_t size)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0 && f->sizes[i] == size)
            return 1;
    return 0;
}

/* A simulated host samples when its next stamp comes. Timed from the end of its catch-up
 * instead, a host (60-s samples, a backfill) that caught up 19 s after a stamp had every later
 * sample stamped 19 s before it was taken (ddk-2003 of the vmfleet fixture: ~58 s). */
static void test_sim_waits_for_its_next_stamp(void **state)
{
    (void)state;
    const uint64_t T = 1764633600000ull; /* 2025-12-02 00:00 UTC, a stamp */
    /* caught up 19 s after T: the next stamp, T + 60 s, is 41 s away */
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 19000, 1, 60000), 41000);
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 19000, 0, 60000), 41000);
    /* due now; due within the 500 ms a tick may come early */
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 60000, 1, 60000), 0);
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 59600, 1, 60000), 400);
    /* never longer than the interval (live mode: 1 s ticks, a 60-s step; a clock stepped back) */
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 19000, 1, 1000), 1000);
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T - 3600000, 1, 60000), 60000);
    /* the next stamp is past: a backfill catches up at once, a plain past start keeps its pace */
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 60001, 1, 60000), 1);
    assert_int_equal(pw_agent_sim_wait_ms(T, 60000, T + 60001, 0, 60000), -1);
    assert_int_equal(pw_agent_sim_wait_ms(T, 10000, T + 2 * 86400000ull, 0, 3600000), -1);
}

#ifndef _WIN32
/* The agent's own footprint (selfstat_posix.c) against a second reading of each figure:
 * VmRSS of /proc/self/status (kB) for the resident set, CLOCK_PROCESS_CPUTIME_ID for the CPU
 * time spent between two readings. */
static void test_selfstat_reads_its_own_footprint(void **state)
{
    (void)state;
    pw_selfstat_t a, b;
    assert_int_equal(pw_selfstat_read(&a), 0);
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    unsigned long long vmrss_kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %llu kB", &vmrss_kb) == 1)
            break;
    fclose(f);
    assert_true(vmrss_kb > 0);
    uint64_t v = (uint64_t)vmrss_kb * 1024;
    uint64_t d = a.rss_bytes > v ? a.rss_bytes - v : v - a.rss_bytes;
    assert_true(d <= (1u << 20)); /* the two reads are a moment apart */
    assert_int_equal(a.handles, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 200);
    assert_int_equal(pw_selfstat_read(&b), 0);
    assert_true(b.cpu_ms >= a.cpu_ms + 190); /* 200 ms spent, counted in whole ms */
}
#endif

static void test_find_tag_reports_the_files_that_contain_it(void **state)
{
    (void)state;
    found_t f;
    memset(&f, 0, sizeof(f));
    /* ddk.sys has "Ddk " inside (63 bytes); boundary.sys has it across the 64 KiB read
     * boundary at offset 65534 (70,000 bytes); other.sys and short.sys do not have the four
     * bytes (short.sys is "Ddk" without the space). */
    int n = pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"Ddk ", 4, on_found, &f);
    assert_int_equal(n, 2);
    assert_int_equal(f.n, 2);
    assert_true(has(&f, "ddk.sys", 63));
    assert_true(has(&f, "boundary.sys", 70000));
    memset(&f, 0, sizeof(f));
    assert_int_equal(
        pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"Dd", 2, on_found, &f), 4);
    assert_int_equal(
        pw_agent_find_tag("/nonexistent/poolwatch", (const uint8_t *)"Ddk ", 4, on_found, &f),
        PW_ENOENT);
    assert_int_equal(
        pw_agent_find_tag(pw_test_fixture("drivers"), (const uint8_t *)"", 0, on_found, &f),
        PW_EINVAL);
}

#ifndef _WIN32
static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* Linux keeps modules in a tree (/lib/modules/RELEASE/kernel/drivers/...): the search walks
 * it, names files by their path below the directory, and does not follow symbolic links. */
static void test_find_tag_walks_a_module_tree(void **state)
{
    (void)state;
    char root[] = "/tmp/pw_findtag_XXXXXX", p[512];
    assert_non_null(mkdtemp(root));
    const char *dirs[] = {"drivers",
                          "drivers/net",
                          "drivers/net/ethernet",
                          "fs",
                          "a",
                          "a/b",
                          "a/b/c",
                          "a/b/c/d",
                          "a/b/c/d/e",
                          "a/b/c/d/e/f",
                          "a/b/c/d/e/f/g",
                          "a/b/c/d/e/f/g/h",
                          "a/b/c/d/e/f/g/h/i"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(p, 0700), 0);
    }
    snprintf(p, sizeof(p), "%s/drivers/net/ethernet/e1000e.ko", root);
    write_text(p, "xx Ddk yy"); /* 9 bytes */
    snprintf(p, sizeof(p), "%s/fs/ext4.ko", root);
    write_text(p, "no tag here");
    snprintf(p, sizeof(p), "%s/top.ko", root);
    write_text(p, "Ddk "); /* 4 bytes */
    /* depth 8 below the root is searched, depth 9 is not */
    snprintf(p, sizeof(p), "%s/a/b/c/d/e/f/g/h/deep8.ko", root);
    write_text(p, "Ddk !");
    snprintf(p, sizeof(p), "%s/a/b/c/d/e/f/g/h/i/deep9.ko", root);
    write_text(p, "Ddk !");
    /* a link to a file that contains the tag, and one to a directory: neither followed */
    char target[512];
    snprintf(target, sizeof(target), "%s/top.ko", root);
    snprintf(p, sizeof(p), "%s/fs/link.ko", root);
    assert_int_equal(symlink(target, p), 0);
    snprintf(target, sizeof(target), "%s/drivers", root);
    snprintf(p, sizeof(p), "%s/fs/loop", root);
    assert_int_equal(symlink(target, p), 0);
    found_t f;
    memset(&f, 0, sizeof(f));
    assert_int_equal(pw_agent_find_tag(root, (const uint8_t *)"Ddk ", 4, on_found, &f), 3);
    assert_true(has(&f, "drivers/net/ethernet/e1000e.ko", 9));
    assert_true(has(&f, "top.ko", 4));
    assert_true(has(&f, "a/b/c/d/e/f/g/h/deep8.ko", 5));
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}
#endif

/* ============================================================================================
 * Collector double
 * ========================================================================================== */

#define MAX_GOT      512
#define MAX_SESSIONS 8

typedef struct {
    uint64_t seq;
    int keyframe, dict_reset, session;
    uint64_t gap_before;
    int gap_cause;
    size_t n_events;    /* pool events the sample carried */
    uint32_t ev_ids[4]; /* their event ids, in order */
    uint64_t ev_ts[4];  /* their times */
    char ev_tag0[5];    /* the first event's first named tag, "" when none */
} got_t;

typedef struct {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_timer_t tick;
    pw_tls_ctx_t *ctx;
    pw_tls_conn_t *conn;
    pw_frame_reader_t rd;
    int port;
    /* script */
    uint64_t hello_answer[MAX_SESSIONS]; /* the Ack answering the Hello of session i */
    int ack_samples;                     /* ack every sample with its seq */
    uint64_t bogus_after, bogus_ack;     /* after the sample bogus_after: Ack(bogus_ack) */
    int close_on_sample;                 /* close the session at its first sample */
    int hold_hello, hello_held;          /* do not answer a Hello yet / one waits */
    uint64_t status_after;               /* after acking the sample of this seq: a status command */
    char status[512];                    /* its answer's message, "" until it came */
    /* seen */
    int sessions;                            /* Hellos answered */
    uint64_t hello_resume[MAX_SESSIONS];     /* Hello.resume_seq */
    uint64_t hello_np_bytes, hello_pg_bytes; /* the first Hello's pool limits */
    int hello_np_source;
    char hello_np_detail[96];
    int closes; /* sessions ended */
    got_t got[MAX_GOT];
    size_t n_got;
} dbl_t;

static char g_dir[256];
static dbl_t *g_dbl;
static int g_events = PW_AGENT_EVENTS_AUTO; /* agent.events of the agents the tests start */

/* Log lines of the agent thread, counted by what they say. */
static uv_mutex_t log_mu;
static int log_ahead, log_never_wrote, log_reconnect;
#define MAX_DELAYS 16
static uint64_t log_delays[MAX_DELAYS]; /* "next connection attempt in N ms" (DEBUG) */
static int log_n_delays;
static uint64_t log_kept; /* "kept the N samples taken since the start" */

static void log_sink(int level, const char *module, const char *line, void *arg)
{
    (void)arg;
    uv_mutex_lock(&log_mu);
    if (level == PW_LOG_LVL_WARN && strstr(line, "already holds seq"))
        log_ahead++;
    if (strstr(line, "never wrote"))
        log_never_wrote++;
    if (strstr(line, "reconnecting to ask where to resume"))
        log_reconnect++;
    const char *kp = strstr(line, "kept the ");
    if (kp)
        log_kept = strtoull(kp + 9, NULL, 10);
    const char *nx = strstr(line, "next connection attempt in ");
    if (nx && log_n_delays < MAX_DELAYS)
        log_delays[log_n_delays++] = strtoull(nx + 27, NULL, 10);
    uv_mutex_unlock(&log_mu);
    fprintf(stderr, "  [%s] %s\n", module, line);
}

static void log_counts(int *ahead, int *never, int *reconnect)
{
    uv_mutex_lock(&log_mu);
    *ahead = log_ahead;
    *never = log_never_wrote;
    *reconnect = log_reconnect;
    log_ahead = log_never_wrote = log_reconnect = 0;
    uv_mutex_unlock(&log_mu);
}

static void dbl_send(dbl_t *db, const Poolwatch__V1__Envelope *env)
{
    pw_buf_t b;
    pw_buf_init(&b, 64);
    assert_int_equal(pw_codec_pack_frame(env, PW_FRAME_MAX_DEFAULT, &b), 0);
    assert_int_equal(pw_tls_write(db->conn, b.data, b.len), 0);
    pw_buf_close(&b);
}

static void dbl_send_ack(dbl_t *db, uint64_t seq, int need_keyframe)
{
    Poolwatch__V1__Ack a = POOLWATCH__V1__ACK__INIT;
    a.seq = seq;
    a.need_keyframe = need_keyframe;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_ACK;
    env.ack = &a;
    dbl_send(db, &env);
}

static void dbl_on_data(pw_tls_conn_t *c, const uint8_t *data, size_t len)
{
    dbl_t *db = pw_tls_data(c);
    assert_int_equal(pw_frame_reader_feed(&db->rd, data, len, NULL), 0);
    const uint8_t *p;
    size_t n;
    while (pw_frame_reader_next(&db->rd, &p, &n, NULL) == 1) {
        Poolwatch__V1__Envelope *env = NULL;
        assert_int_equal(pw_codec_unpack(p, n, &env, NULL), 0);
        if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_HELLO) {
            assert_true(db->sessions < MAX_SESSIONS);
            db->hello_resume[db->sessions] = env->hello->resume_seq;
            if (db->sessions == 0 && env->hello->nonpaged_limit && env->hello->paged_limit) {
                db->hello_np_bytes = env->hello->nonpaged_limit->bytes;
                db->hello_np_source = (int)env->hello->nonpaged_limit->source;
                snprintf(db->hello_np_detail, sizeof(db->hello_np_detail), "%s",
                         env->hello->nonpaged_limit->detail);
                db->hello_pg_bytes = env->hello->paged_limit->bytes;
            }
            if (db->hold_hello) {
                db->hello_held = 1; /* the test answers it */
            } else {
                dbl_send_ack(db, db->hello_answer[db->sessions], 1);
                db->sessions++;
            }
        } else if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_SAMPLE) {
            const Poolwatch__V1__Sample *s = env->sample;
            if (db->n_got < MAX_GOT) {
                got_t *g = &db->got[db->n_got++];
                memset(g, 0, sizeof(*g));
                g->seq = s->seq;
                g->keyframe = s->keyframe;
                g->dict_reset = s->dict_reset;
                g->session = db->sessions;
                g->gap_before = s->gap_before;
                g->gap_cause = s->gap_cause;
                g->n_events = s->n_events;
                for (size_t i = 0; i < s->n_events && i < 4; i++) {
                    g->ev_ids[i] = s->events[i]->event_id;
                    g->ev_ts[i] = s->events[i]->timestamp_ms;
                    if (g->ev_tag0[0] == '\0' && s->events[i]->n_tags > 0 &&
                        s->events[i]->tags[0]->tag.len == 4)
                        memcpy(g->ev_tag0, s->events[i]->tags[0]->tag.data, 4);
                }
            }
            if (db->close_on_sample) {
                pw_tls_close(db->conn); /* a collector that acks the Hello, then fails */
            } else if (db->bogus_after && s->seq == db->bogus_after) {
                dbl_send_ack(db, db->bogus_ack, 0);
                db->bogus_after = 0;
            } else if (db->ack_samples) {
                dbl_send_ack(db, s->seq, 0);
                if (db->status_after && s->seq >= db->status_after) {
                    db->status_after = 0;
                    Poolwatch__V1__Command cmd = POOLWATCH__V1__COMMAND__INIT;
                    cmd.id = 77;
                    cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_STATUS;
                    Poolwatch__V1__Envelope ce = POOLWATCH__V1__ENVELOPE__INIT;
                    ce.msg_case = POOLWATCH__V1__ENVELOPE__MSG_COMMAND;
                    ce.command = &cmd;
                    dbl_send(db, &ce);
                }
            }
        } else if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_COMMAND_RESULT &&
                   env->command_result->id == 77) {
            snprintf(db->status, sizeof(db->status), "%s", env->command_result->message);
        }
        pw_codec_free(env);
    }
}

static void dbl_on_close(pw_tls_conn_t *c, int status, const char *msg)
{
    dbl_t *db = pw_tls_data(c);
    (void)status;
    (void)msg;
    if (db->conn == c)
        db->conn = NULL;
    db->closes++;
    pw_frame_reader_close(&db->rd);
}

static void dbl_on_connection(uv_stream_t *server, int status)
{
    dbl_t *db = server->data;
    assert_int_equal(status, 0);
    pw_tls_cbs_t cbs = {NULL, dbl_on_data, dbl_on_close};
    pw_tls_conn_t *c;
    if (db->conn != NULL || pw_tls_accept(&c, server, db->ctx, &cbs, db, NULL) != 0) {
        pw_net_reject(server);
        return;
    }
    db->conn = c;
    pw_frame_reader_init(&db->rd, 0);
}

static void dbl_tick(uv_timer_t *t)
{
    (void)t; /* wakes uv_run up so the caller's condition is looked at */
}

static void dbl_start(dbl_t *db)
{
    memset(db, 0, sizeof(*db));
    assert_int_equal(uv_loop_init(&db->loop), 0);
    char ca[512], cert[512], key[512];
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", g_dir);
    snprintf(cert, sizeof(cert), "%s/pki/collector.pem", g_dir);
    snprintf(key, sizeof(key), "%s/pki/collector.key", g_dir);
    pw_tls_ctx_opts_t o = {
        .role = PW_TLS_SERVER, .ca_file = ca, .cert_file = cert, .key_file = key};
    assert_int_equal(pw_tls_ctx_new(&db->ctx, &o, NULL), 0);
    uv_tcp_init(&db->loop, &db->listener);
    db->listener.data = db;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&db->listener, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&db->listener, 8, dbl_on_connection), 0);
    db->port = pw_net_bound_port(&db->listener);
    uv_timer_init(&db->loop, &db->tick);
    uv_timer_start(&db->tick, dbl_tick, 10, 10);
}

static void dbl_stop(dbl_t *db)
{
    if (db->conn)
        pw_tls_close(db->conn);
    uv_close((uv_handle_t *)&db->listener, NULL);
    uv_close((uv_handle_t *)&db->tick, NULL);
    pw_net_loop_drain_close(&db->loop);
    pw_tls_ctx_free(db->ctx);
}

/* Runs the double's loop until cond(db) holds; fails after timeout_ms. */
static void dbl_run_until(dbl_t *db, int (*cond)(const dbl_t *), uint64_t timeout_ms)
{
    uint64_t end = uv_hrtime() / 1000000 + timeout_ms;
    while (!cond(db)) {
        if (uv_hrtime() / 1000000 > end)
            fail_msg("timed out: %d sessions, %d closes, %zu samples", db->sessions, db->closes,
                     db->n_got);
        uv_run(&db->loop, UV_RUN_ONCE);
    }
}

/* The agent under test runs pw_agent_run in its own thread; pw_agent_stop ends it. */
typedef struct {
    pw_agent_cfg_t cfg;
    char spool[300], ep[64], ca[300], cert[300], key[300];
    uv_thread_t th;
    int rc;
} agent_run_t;

static void agent_thread(void *arg)
{
    agent_run_t *ar = arg;
    pw_diag_t d;
    ar->rc = pw_agent_run(&ar->cfg, &d);
}

/* An agent on `source` (the certificate is sim-steady-0's, so the host is named that) with
 * [limits] nonpaged / paged (bytes, 0 = none). */
static void agent_start_with(agent_run_t *ar, int port, char *source, uint64_t np, uint64_t pg)
{
    memset(ar, 0, sizeof(*ar));
    snprintf(ar->spool, sizeof(ar->spool), "%s/spool", g_dir);
    snprintf(ar->ep, sizeof(ar->ep), "127.0.0.1:%d", port);
    snprintf(ar->ca, sizeof(ar->ca), "%s/pki/ca.pem", g_dir);
    snprintf(ar->cert, sizeof(ar->cert), "%s/pki/agent-sim-steady-0.pem", g_dir);
    snprintf(ar->key, sizeof(ar->key), "%s/pki/agent-sim-steady-0.key", g_dir);
    ar->cfg.source = source;
    ar->cfg.host_name = "sim-steady-0";
    ar->cfg.nonpaged_limit_bytes = np;
    ar->cfg.paged_limit_bytes = pg;
    ar->cfg.interval_ms = 100;
    ar->cfg.sim_interval_ms = 100;
    ar->cfg.keyframe_every = 360;
    ar->cfg.live_max_ms = 600000;
    ar->cfg.spool_dir = ar->spool;
    ar->cfg.spool_fsync = PW_AGENT_FSYNC_NEVER;
    ar->cfg.collectors = ar->ep;
    ar->cfg.server_name = "";
    ar->cfg.ca_file = ar->ca;
    ar->cfg.cert_file = ar->cert;
    ar->cfg.key_file = ar->key;
    ar->cfg.backoff_min_ms = 50;
    ar->cfg.backoff_max_ms = 200;
    ar->cfg.events = g_events;
    assert_int_equal(uv_thread_create(&ar->th, agent_thread, ar), 0);
}

static void agent_start(agent_run_t *ar, int port)
{
    static char sim[] = "sim:steady/0";
    agent_start_with(ar, port, sim, 0, 0);
}

static void agent_join(agent_run_t *ar, dbl_t *db)
{
    pw_agent_stop();
    assert_int_equal(uv_thread_join(&ar->th), 0);
    if (db->conn)
        pw_tls_close(db->conn);
    uv_run(&db->loop, UV_RUN_NOWAIT);
    assert_int_equal(ar->rc, 0);
}

static uint64_t max_got(const dbl_t *db)
{
    uint64_t m = 0;
    for (size_t i = 0; i < db->n_got; i++)
        if (db->got[i].seq > m)
            m = db->got[i].seq;
    return m;
}

static int got_3(const dbl_t *db)
{
    return db->n_got >= 3;
}

static uint64_t want_seq;
static int got_want(const dbl_t *db)
{
    return max_got(db) >= want_seq;
}

/* Starts the double, answering the Hello with `answer` and acking every sample, and an agent;
 * returns once a sample with seq `until` or above arrived. */
static void acking_session_until(dbl_t *db, agent_run_t *ar, uint64_t answer, uint64_t until)
{
    dbl_start(db);
    db->hello_answer[0] = answer;
    db->ack_samples = 1;
    agent_start(ar, db->port);
    want_seq = until;
    dbl_run_until(db, got_want, 20000);
}

/* Opens the spool the agent left and returns its last and acked seqs and the seqs it holds. */
static size_t spool_contents(uint64_t *last, uint64_t *acked, uint64_t *seqs, uint32_t *flags,
                             size_t max)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/spool", g_dir);
    pw_spool_opts_t o = {.fsync = PW_SPOOL_FSYNC_NEVER};
    pw_spool_t *sp;
    assert_int_equal(pw_spool_open(dir, &o, &sp, NULL, NULL), 0);
    *last = pw_spool_last_seq(sp);
    *acked = pw_spool_acked_seq(sp);
    assert_int_equal(pw_spool_gaps(sp, NULL, 0), 0);
    pw_spool_iter_t *it;
    assert_int_equal(pw_spool_iter_open(sp, 1, &it), 0);
    pw_spool_rec_t r;
    size_t n = 0;
    while (pw_spool_iter_next(it, &r, NULL) == 1 && n < max) {
        seqs[n] = r.seq;
        flags[n++] = r.flags;
    }
    pw_spool_iter_close(it);
    pw_spool_close(sp);
    return n;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/pw_test_agent.XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "bash '%s/deploy/pki.sh' '%s/pki' --agent sim-steady-0 >/dev/null 2>&1", PW_SOURCE_DIR,
             g_dir);
    if (system(cmd) != 0)
        return -1;
    uv_mutex_init(&log_mu);
    pw_log_set_sink(log_sink, NULL);
    g_dbl = malloc(sizeof(*g_dbl));
    return g_dbl ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    pw_log_set_sink(NULL, NULL);
    free(g_dbl);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int remove_spool(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/spool'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The tester's case: the spool ends at M (repaired, restored from a backup) while the
 * collector already holds N > M of this agent instance. The agent must continue at N + 1
 * with a keyframe that resets the collector's dictionary, once, without dropping the session,
 * and a restart must resume after that, not below it. */
static void test_collector_ahead_of_spool_continues_after_it(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    int ahead, never, reconnect;

    /* Session 1: the collector has nothing and acks nothing: the spool keeps seqs 1..M. */
    dbl_start(db);
    agent_start(&ar, db->port);
    dbl_run_until(db, got_3, 20000);
    agent_join(&ar, db);
    uint64_t m = max_got(db);
    assert_int_equal(db->got[0].seq, 1);
    assert_true(db->got[0].keyframe && db->got[0].dict_reset);
    dbl_stop(db);
    uint64_t last, acked, seqs[64];
    uint32_t flags[64];
    size_t n = spool_contents(&last, &acked, seqs, flags, 64);
    assert_true(last >= m); /* a sample may have been spooled after the last send */
    assert_int_equal(acked, 0);
    assert_int_equal(seqs[0], 1);
    assert_int_equal(n, last);
    log_counts(&ahead, &never, &reconnect);

    /* Session 2: the collector answers the Hello with N = M + 100. */
    uint64_t big = last + 100;
    acking_session_until(db, &ar, big, big + 3);
    /* The first frame after the answer: seq N + 1, a keyframe with dict_reset; then N + 2,
     * N + 3 in order; nothing at or below N was sent (the spool's records count as acked). */
    assert_int_equal(db->hello_resume[0], 0);
    assert_true(db->n_got >= 3);
    assert_int_equal(db->got[0].seq, big + 1);
    assert_true(db->got[0].keyframe);
    assert_true(db->got[0].dict_reset);
    for (size_t i = 1; i < db->n_got; i++) {
        assert_int_equal(db->got[i].seq, big + 1 + i);
        assert_false(db->got[i].dict_reset);
    }
    agent_join(&ar, db);
    /* One session, not dropped by the agent (the double closes it only after the stop). */
    assert_int_equal(db->sessions, 1);
    uint64_t sent = max_got(db);
    dbl_stop(db);
    log_counts(&ahead, &never, &reconnect);
    assert_int_equal(ahead, 1);
    assert_int_equal(never, 0);
    /* The spool holds nothing at or below N: its first record is the keyframe N + 1, and it
     * says N was acked (what a restart's Hello will carry). */
    n = spool_contents(&last, &acked, seqs, flags, 64);
    assert_true(n >= 3);
    assert_true(acked >= big);
    assert_int_equal(seqs[0], big + 1);
    assert_true(flags[0] & PW_SPOOL_KEYFRAME);
    assert_int_equal(last, seqs[n - 1]);
    assert_true(last >= sent);

    /* Session 3: a restart; the collector answers with what it stored (acked) last. */
    acking_session_until(db, &ar, sent, last + 2);
    assert_true(db->hello_resume[0] >= big);
    /* It resumes after N: every frame above N, new samples after the spool's last seq. */
    for (size_t i = 0; i < db->n_got; i++)
        assert_true(db->got[i].seq > big);
    assert_int_equal(max_got(db), db->got[db->n_got - 1].seq);
    agent_join(&ar, db);
    assert_int_equal(db->sessions, 1);
    dbl_stop(db);
    log_counts(&ahead, &never, &reconnect);
    assert_int_equal(ahead, 0);
    assert_int_equal(never, 0);
}

/* Within a session, an Ack above the agent's seq drops the session once; the new Hello's
 * answer (the collector's real position) is then followed as above: it converges. */
static void test_ack_above_seq_in_session_converges(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    int ahead, never, reconnect;
    log_counts(&ahead, &never, &reconnect);
    dbl_start(db);
    db->hello_answer[0] = 0;
    db->hello_answer[1] = 50;
    db->hello_answer[2] = 50;
    db->ack_samples = 1;
    db->bogus_after = 2;
    db->bogus_ack = 50;
    agent_start(&ar, db->port);
    want_seq = 53;
    dbl_run_until(db, got_want, 20000);
    agent_join(&ar, db);
    assert_int_equal(db->sessions, 2);
    /* Session 1: 1, 2 and what the agent sent before the Ack(50) reached it (on a loaded
     * machine more than one sample of 100 ms: seen up to 4), in order; session 2: 51
     * (keyframe, dict_reset), 52, 53 ... in order. */
    assert_int_equal(db->got[0].seq, 1);
    assert_int_equal(db->got[1].seq, 2);
    size_t i = 2;
    while (i < db->n_got && db->got[i].session == 1) {
        assert_int_equal(db->got[i].seq, db->got[i - 1].seq + 1);
        i++;
    }
    assert_true(i + 3 <= db->n_got);
    assert_int_equal(db->got[i].seq, 51);
    assert_true(db->got[i].keyframe && db->got[i].dict_reset);
    for (size_t j = i + 1; j < db->n_got; j++) {
        assert_int_equal(db->got[j].session, 2);
        assert_int_equal(db->got[j].seq, db->got[j - 1].seq + 1);
    }
    dbl_stop(db);
    log_counts(&ahead, &never, &reconnect);
    assert_int_equal(reconnect, 1);
    assert_int_equal(ahead, 1);
}

static int got_hello(const dbl_t *db)
{
    return db->sessions >= 1;
}

/* The replay source takes [limits] from the agent's configuration (a capture has none) and the
 * agent sends them in its Hello: "nonpaged = 128MB" and "paged = 530MB" read by the agent's
 * own option table as Windows writes pool limits (and as poolwatch import --nonpaged-limit
 * reads them), 128 x 2^20 = 134,217,728 and 530 x 2^20 = 555,745,280 bytes, source
 * CONFIGURED. */
static void test_replay_hello_carries_configured_limits(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    pw_agent_cfg_t conf;
    memset(&conf, 0, sizeof(conf));
    pw_diag_t d;
    assert_int_equal(pw_config_defaults(pw_agent_options, &conf, &d), 0);
    assert_int_equal(pw_config_load_string(pw_agent_options, &conf,
                                           "[limits]\nnonpaged = 128MB\npaged = 530 MB\n", &d),
                     0);
    assert_int_equal(conf.nonpaged_limit_bytes, 134217728);
    assert_int_equal(conf.paged_limit_bytes, 555745280);
    dbl_start(db);
    db->ack_samples = 1;
    char src[4200];
    snprintf(src, sizeof(src), "replay:%s",
             pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"));
    agent_start_with(&ar, db->port, src, conf.nonpaged_limit_bytes, conf.paged_limit_bytes);
    pw_config_free(pw_agent_options, &conf);
    dbl_run_until(db, got_hello, 20000);
    agent_join(&ar, db);
    assert_int_equal(db->hello_np_bytes, 134217728);
    assert_int_equal(db->hello_np_source, 4); /* LimitSource CONFIGURED (pw_limit_source_t) */
    assert_string_equal(db->hello_np_detail, "configured");
    assert_int_equal(db->hello_pg_bytes, 555745280);
    dbl_stop(db);
}

/* Issue 15, item 3: spool writes fail for a while (a full disk) while the collector is
 * connected. Each lost sample keeps its seq (none is reused for another sample), and the next
 * sample spooled tells the collector: a keyframe with dict_reset carrying gap_before = the
 * samples lost, cause SPOOL_WRITE (before: the seqs were reused and nothing was told). */
static void test_spool_write_failure_is_a_gap(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    acking_session_until(db, &ar, 0, 3);
    pw__spool_test_fail_appends = 3;
    want_seq = max_got(db) + 8;
    dbl_run_until(db, got_want, 20000);
    agent_join(&ar, db);
    dbl_stop(db);
    assert_int_equal(pw__spool_test_fail_appends, 0);
    assert_int_equal(db->sessions, 1);
    size_t hole = 0;
    for (size_t i = 1; i < db->n_got; i++) {
        const got_t *g = &db->got[i];
        if (g->seq == db->got[i - 1].seq + 1) {
            assert_int_equal(g->gap_before, 0);
            continue;
        }
        assert_int_equal(hole, 0); /* one hole, of 3 seqs, told by the sample after it */
        hole = i;
        assert_int_equal(g->seq, db->got[i - 1].seq + 4);
        assert_int_equal(g->gap_before, 3);
        assert_int_equal(g->gap_cause, POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_WRITE);
        assert_true(g->keyframe && g->dict_reset);
    }
    assert_true(hole > 0);
}

/* Issue 15, item 2: an agent restarts and meets a collector that says it holds nothing of
 * this instance (an older collector with a new boot id, one restored from a backup): it sends
 * nothing the collector acked before its restart, although its spool keeps those samples from
 * the last keyframe on (before: rebased at its oldest keyframe and sent them all again). */
static void test_restart_does_not_resend_acked(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    acking_session_until(db, &ar, 0, 5);
    agent_join(&ar, db);
    uint64_t acked = max_got(db); /* the double acked every sample it got */
    dbl_stop(db);
    acking_session_until(db, &ar, 0, acked + 3);
    agent_join(&ar, db);
    dbl_stop(db);
    assert_int_equal(db->hello_resume[0], acked);
    assert_true(db->n_got >= 3);
    /* the rebase keyframe of the last acked sample (the collector decodes from it), then on */
    assert_int_equal(db->got[0].seq, acked);
    assert_true(db->got[0].keyframe && db->got[0].dict_reset);
    for (size_t i = 1; i < db->n_got; i++)
        assert_int_equal(db->got[i].seq, acked + i);
}

static int hello_held(const dbl_t *db)
{
    return db->hello_held;
}

static uint64_t g_until_ms;
static int time_passed(const dbl_t *db)
{
    (void)db;
    return uv_hrtime() / 1000000 >= g_until_ms;
}

/* Issue 15, item 4: the agent restarts, samples for a while before the collector answers its
 * Hello, and the answer says the collector already holds seqs above the spool's (the spool was
 * repaired after corruption): the samples taken since the restart are kept, renumbered after
 * the collector's seq, and sent (before: deleted with the rest of the spool). */
static void test_samples_since_restart_kept_after_skip(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    dbl_start(db);
    agent_start(&ar, db->port);
    dbl_run_until(db, got_3, 20000);
    agent_join(&ar, db);
    uint64_t m = max_got(db);
    dbl_stop(db);
    uv_mutex_lock(&log_mu);
    log_kept = 0;
    uv_mutex_unlock(&log_mu);
    dbl_start(db);
    db->hold_hello = 1;
    db->ack_samples = 1;
    agent_start(&ar, db->port);
    dbl_run_until(db, hello_held, 20000);
    g_until_ms = uv_hrtime() / 1000000 + 700; /* the agent samples meanwhile (the scenario) */
    dbl_run_until(db, time_passed, 20000);
    uint64_t n = m + 100;
    db->hold_hello = 0;
    dbl_send_ack(db, n, 1);
    db->sessions++;
    want_seq = n + 10;
    dbl_run_until(db, got_want, 20000);
    agent_join(&ar, db);
    dbl_stop(db);
    uv_mutex_lock(&log_mu);
    uint64_t kept = log_kept;
    uv_mutex_unlock(&log_mu);
    print_message("samples taken before the answer, kept: %llu\n", (unsigned long long)kept);
    assert_true(kept >= 1); /* about 7 in 700 ms at 100 ms; any on a loaded machine */
    assert_int_equal(db->got[0].seq, n + 1);
    assert_true(db->got[0].keyframe && db->got[0].dict_reset);
    for (size_t i = 1; i < db->n_got; i++) {
        assert_int_equal(db->got[i].seq, n + 1 + i);
        assert_false(db->got[i].dict_reset);
    }
}

static int sessions_5(const dbl_t *db)
{
    return db->sessions >= 5;
}

/* Issue 15, item 7: a collector that acks the Hello and then ends the session at once (its
 * store's disk is full) does not get this agent back at the shortest delay each time: the
 * backoff starts over only after a session acked for 30 s. With backoff 50 ms .. 200 ms and
 * equal jitter, attempt k waits in [base_k / 2, base_k], base 50, 100, 200, 200: the fourth
 * wait is at least 100 ms (before: every Hello's ack reset it, each wait was 25..50 ms). */
static void test_backoff_resets_only_after_healthy_session(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    int saved = pw_log_level;
    pw_log_level = PW_LOG_LVL_DEBUG;
    uv_mutex_lock(&log_mu);
    log_n_delays = 0;
    uv_mutex_unlock(&log_mu);
    dbl_start(db);
    db->close_on_sample = 1;
    agent_start(&ar, db->port);
    dbl_run_until(db, sessions_5, 20000);
    agent_join(&ar, db);
    dbl_stop(db);
    pw_log_level = saved;
    uv_mutex_lock(&log_mu);
    int n = log_n_delays;
    uint64_t d[MAX_DELAYS];
    memcpy(d, log_delays, sizeof(d));
    uv_mutex_unlock(&log_mu);
    assert_true(n >= 4);
    print_message("waits between sessions: %llu %llu %llu %llu ms\n", (unsigned long long)d[0],
                  (unsigned long long)d[1], (unsigned long long)d[2], (unsigned long long)d[3]);
    assert_true(d[0] >= 25 && d[0] <= 50);
    assert_true(d[1] >= 50 && d[1] <= 100);
    assert_true(d[2] >= 100 && d[2] <= 200);
    assert_true(d[3] >= 100 && d[3] <= 200);
}

/* ============================================================================================
 * Pool events: a recorded System log instead of EvtSubscribe (evsub.h)
 * ========================================================================================== */

static int fake_started, fake_stopped;

/* The replaceable subscription: hands over the events of a wevtutil export at once, as
 * EvtSubscribe with EvtSubscribeStartAtOldestRecord hands over the day's events. */
static int fake_start(const char *query, pw_evsub_deliver_fn deliver, void *ctx, void **handle,
                      pw_diag_t *d)
{
    (void)d;
    assert_non_null(strstr(query, "EventID=2019"));
    size_t len;
    char *xml = pw_test_read_file(pw_test_fixture("winevent/wevtutil-system.xml"), &len);
    assert_non_null(xml);
    deliver(ctx, xml, len);
    free(xml);
    fake_started++;
    *handle = &fake_started;
    return 0;
}

static void fake_stop(void *handle)
{
    assert_ptr_equal(handle, &fake_started);
    fake_stopped++;
}

static int closed_once(const dbl_t *db)
{
    return db->closes >= 1;
}

static int session2_seq3(const dbl_t *db)
{
    for (size_t i = 0; i < db->n_got; i++)
        if (db->got[i].session == 2 && db->got[i].seq >= 3)
            return 1;
    return 0;
}

static int status_came(const dbl_t *db)
{
    return db->status[0] != '\0';
}

static void check_events(const got_t *g)
{
    /* the export's 2020, 2019 and 2004 in its order; the 7036 is not a pool event */
    assert_int_equal(g->n_events, 3);
    assert_int_equal(g->ev_ids[0], 2020);
    assert_int_equal(g->ev_ids[1], 2019);
    assert_int_equal(g->ev_ids[2], 2004);
    assert_int_equal(g->ev_ts[1], UINT64_C(1796047392486)); /* test_winevent.c */
    assert_string_equal(g->ev_tag0, "Ddk ");
}

/* The events ride with the first sample; the collector drops the session before acking it:
 * after the reconnect the rebase keyframe (the same seq, rebuilt from the spool) carries them
 * again, and no later sample does. Nothing lost, nothing sent twice once stored. */
static void test_pool_events_ride_with_samples(void **state)
{
    (void)state;
    dbl_t *db = g_dbl;
    agent_run_t ar;
    fake_started = fake_stopped = 0;
    pw_evsub_set_fns(fake_start, fake_stop);
    g_events = PW_AGENT_EVENTS_ON;
    dbl_start(db);
    db->close_on_sample = 1;
    agent_start(&ar, db->port);
    dbl_run_until(db, closed_once, 20000);
    db->close_on_sample = 0;
    db->ack_samples = 1;
    dbl_run_until(db, session2_seq3, 20000);
    /* the status command counts them: the export's three pool events spooled with seq 1 (the
     * 7036 skipped), none waiting */
    db->status_after = 3;
    db->status[0] = '\0';
    dbl_run_until(db, status_came, 20000);
    agent_join(&ar, db);
    if (strstr(db->status, ", events 3 spooled, 0 waiting, 1 skipped, 0 dropped, 0 bad, ") == NULL)
        fail_msg("status: %s", db->status);
    dbl_stop(db);
    g_events = PW_AGENT_EVENTS_AUTO;
    pw_evsub_set_fns(NULL, NULL);
    assert_int_equal(fake_started, 1);
    assert_int_equal(fake_stopped, 1);
    /* session 1: seq 1 with the events, then the close */
    assert_int_equal(db->got[0].session, 1);
    assert_int_equal(db->got[0].seq, 1);
    check_events(&db->got[0]);
    size_t k = 0, with = 0;
    for (size_t i = 0; i < db->n_got; i++) {
        if (db->got[i].n_events)
            with++;
        if (db->got[i].session == 2 && k == 0)
            k = i;
    }
    assert_true(k > 0);
    /* session 2: the rebase keyframe of seq 1 carries them again; nothing else does */
    assert_int_equal(db->got[k].seq, 1);
    assert_true(db->got[k].keyframe && db->got[k].dict_reset);
    check_events(&db->got[k]);
    assert_int_equal(with, 2);
}

int main(void)
{
#ifndef _WIN32
    signal(SIGPIPE, SIG_IGN); /* the double closes sessions under the agent's writes */
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_doubles_with_equal_jitter_and_caps),
        cmocka_unit_test(test_find_tag_reports_the_files_that_contain_it),
#ifndef _WIN32
        cmocka_unit_test(test_selfstat_reads_its_own_footprint),
#endif
        cmocka_unit_test(test_sim_waits_for_its_next_stamp),
#ifndef _WIN32
        cmocka_unit_test(test_find_tag_walks_a_module_tree),
#endif
        cmocka_unit_test_setup_teardown(test_collector_ahead_of_spool_continues_after_it,
                                        remove_spool, remove_spool),
        cmocka_unit_test_setup_teardown(test_ack_above_seq_in_session_converges, remove_spool,
                                        remove_spool),
        cmocka_unit_test_setup_teardown(test_replay_hello_carries_configured_limits, remove_spool,
                                        remove_spool),
        cmocka_unit_test_setup_teardown(test_spool_write_failure_is_a_gap, remove_spool,
                                        remove_spool),
        cmocka_unit_test_setup_teardown(test_backoff_resets_only_after_healthy_session,
                                        remove_spool, remove_spool),
        cmocka_unit_test_setup_teardown(test_restart_does_not_resend_acked, remove_spool,
                                        remove_spool),
        cmocka_unit_test_setup_teardown(test_samples_since_restart_kept_after_skip, remove_spool,
                                        remove_spool),
        cmocka_unit_test_setup_teardown(test_pool_events_ride_with_samples, remove_spool,
                                        remove_spool),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
