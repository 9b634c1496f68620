/* bench_agent.c: what the agent costs on a host, with the sim source preset
 * "steady" (3,000 rows, 5 % of them changing per sample; agent/source_sim.h).
 *
 *   agent.sample_cpu_us          per sample, median: the agent's own work after the source
 *                                read, done by the same functions on_sample_timer uses
 *                                (agent/agent.c): pw_delta_encode, pw_codec_pack_sample,
 *                                pw_spool_append as the default spool.fsync = ack does it
 *                                while the collector acks within 1 s (the spool's MANUAL
 *                                policy: the record overwrites the zeros of a preallocated
 *                                segment, no fdatasync: the collector's ack makes it durable),
 *                                then TLS encryption of the frame (OpenSSL SSL_write into a
 *                                memory BIO, drained into a buffer as common/tls.c does).
 *                                Measured as thread CPU time (CLOCK_THREAD_CPUTIME_ID): time
 *                                spent waiting for the disk is not CPU. Target <= 50 us.
 *   agent.sample_cpu_us_fsync_each  the same with one fdatasync per record: spool.fsync =
 *                                always, and the ack policy while the collector is away
 *   agent.sample_cpu_us_nofsync  the same with the spool's fsync policy NEVER (no
 *                                preallocation either)
 *   agent.sample_wall_us, _fsync_each  wall time of those two (fdatasync waits)
 *   agent.sample_{encode,pack,spool,encrypt}_us  the median of each step alone (default
 *                                policy); agent.sample_spool_us_fsync_each with fdatasync
 *   agent.spool_segment_create_us  CPU of the append that starts a segment (creates it, writes
 *                                and syncs its 8 MiB of zeros): not in the medians above
 *   agent.spool_segment_create_per_sample_us  that cost spread over the records a segment
 *                                holds at the measured mean frame size
 *   agent.rss_kb                 VmRSS of the real poolwatch-agent (--agent.source=sim:steady/0,
 *                                10 s interval) streaming to a real poolwatch-collector on
 *                                loopback, read after PW_BENCH_AGENT_SECONDS (default 60) of
 *                                steady state. Target <= 8,192 kB.
 *                                The agent links OpenSSL in (PW_AGENT_STATIC_OPENSSL).
 *   agent.rss_anon_kb, agent.rss_file_kb  the two parts of that RSS (own memory; mapped
 *                                files: the binary with OpenSSL, libc and the other shared
 *                                libraries)
 *   agent.pss_kb                 proportional set size of the same process (smaps_rollup): a
 *                                shared library page counts 1/N for N processes mapping it,
 *                                so this is the agent's share of the host's memory
 *   agent.rss_kb_shared_openssl, _file_kb_, pss_kb_  the same agent linked with the shared
 *                                libssl.so.3/libcrypto.so.3 (PW_AGENT_STATIC_OPENSSL=OFF), run
 *                                after it for half the window. Its PSS is lower here because
 *                                the collector of this bench maps the same libcrypto pages;
 *                                on a host where no other process does, PSS = RSS.
 *   agent.cpu_percent_10s        CPU time of that agent process over the same window, as a
 *                                percentage of one core. Target <= 0.1 %.
 *   agent.cpu_percent_1s         the same at --agent.interval=1s (a third of the window), to
 *                                show how it scales with the interval
 * Measured on the 2-core build VM (ext4 on virtio): sample_cpu_us 29.7-31.3 with the default
 * spool.fsync = ack (encode 23, pack 4, spool 1.2, encrypt 1); fsync_each 72-84 (the
 * fdatasync 31-40 of it: the virtio doorbell and the context switches around the wait; 98
 * before segments were preallocated); segment creation 2.9-3.4 ms = 0.33-0.38 us per sample;
 * rss_kb 7,648 (anon 2,012, file 5,636: the binary 4.0 MB of it), pss_kb 6,088; with the
 * shared OpenSSL rss 8,500 (libcrypto.so.3 alone 4.1 MB); cpu_percent_10s 0.004, _1s 0.047.
 * PW_BENCH_AGENT_SECONDS=0 runs the in-process figures only (for perf record).
 * Binaries: PW_BENCH_BIN_DIR (the build tree). Work files under $TMPDIR (default /var/tmp, a
 * disk), removed at the end; the PKI is cached in the build tree (bench-pki/).
 */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_proc.h"
#include "codec.h"
#include "delta.h"
#include "frame.h"
#include "source_sim.h"
#include "spool.h"

#define SAMPLES 600 /* timed samples per configuration */
#define WARMUP  20

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n ? v[n / 2] : 0;
}

static void die_ssl(const char *what)
{
    fprintf(stderr, "bench_agent: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

/* ---- an established TLS client/server pair over memory BIOs ------------------------------- */

typedef struct {
    SSL_CTX *cctx, *sctx;
    SSL *c, *s;
    BIO *c_in, *c_out, *s_in, *s_out;
    uint8_t *drain;
    size_t drain_cap;
} tls_pair_t;

static void shuttle(BIO *from, BIO *to)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(from, buf, sizeof(buf))) > 0)
        BIO_write(to, buf, n);
}

static void tls_pair_open(tls_pair_t *p, const char *pki)
{
    char ca[1024], ccert[1024], ckey[1024], scert[1024], skey[1024];
    snprintf(ca, sizeof(ca), "%s/ca.pem", pki);
    snprintf(ccert, sizeof(ccert), "%s/agent-sim-steady-0.pem", pki);
    snprintf(ckey, sizeof(ckey), "%s/agent-sim-steady-0.key", pki);
    snprintf(scert, sizeof(scert), "%s/collector.pem", pki);
    snprintf(skey, sizeof(skey), "%s/collector.key", pki);
    /* The policy of common/tls.c: TLS 1.2 minimum, 1.3 preferred, both sides verified. */
    p->cctx = SSL_CTX_new(TLS_client_method());
    p->sctx = SSL_CTX_new(TLS_server_method());
    if (!p->cctx || !p->sctx)
        die_ssl("SSL_CTX_new");
    SSL_CTX_set_min_proto_version(p->cctx, TLS1_2_VERSION);
    SSL_CTX_set_min_proto_version(p->sctx, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(p->cctx, ca, NULL) != 1 ||
        SSL_CTX_load_verify_locations(p->sctx, ca, NULL) != 1 ||
        SSL_CTX_use_certificate_chain_file(p->cctx, ccert) != 1 ||
        SSL_CTX_use_PrivateKey_file(p->cctx, ckey, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_certificate_chain_file(p->sctx, scert) != 1 ||
        SSL_CTX_use_PrivateKey_file(p->sctx, skey, SSL_FILETYPE_PEM) != 1)
        die_ssl("loading the bench PKI");
    SSL_CTX_set_verify(p->cctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_verify(p->sctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    p->c = SSL_new(p->cctx);
    p->s = SSL_new(p->sctx);
    p->c_in = BIO_new(BIO_s_mem());
    p->c_out = BIO_new(BIO_s_mem());
    p->s_in = BIO_new(BIO_s_mem());
    p->s_out = BIO_new(BIO_s_mem());
    SSL_set_bio(p->c, p->c_in, p->c_out);
    SSL_set_bio(p->s, p->s_in, p->s_out);
    SSL_set_connect_state(p->c);
    SSL_set_accept_state(p->s);
    SSL_set1_host(p->c, "localhost");
    for (int i = 0; i < 20 && !(SSL_is_init_finished(p->c) && SSL_is_init_finished(p->s)); i++) {
        SSL_do_handshake(p->c);
        shuttle(p->c_out, p->s_in);
        SSL_do_handshake(p->s);
        shuttle(p->s_out, p->c_in);
    }
    if (!SSL_is_init_finished(p->c) || !SSL_is_init_finished(p->s))
        die_ssl("TLS handshake over memory BIOs");
}

/* What common/tls.c does per pw_tls_write: encrypt, then copy the ciphertext out of the write
 * BIO into a buffer that a uv_write request owns. */
static void tls_pair_encrypt(tls_pair_t *p, const void *data, size_t len)
{
    if (SSL_write(p->c, data, (int)len) != (int)len)
        die_ssl("SSL_write");
    size_t pending = BIO_ctrl_pending(p->c_out);
    if (pending > p->drain_cap) {
        p->drain = realloc(p->drain, pending);
        p->drain_cap = pending;
    }
    if (p->drain == NULL || BIO_read(p->c_out, p->drain, (int)pending) != (int)pending)
        die_ssl("draining ciphertext");
}

static void tls_pair_close(tls_pair_t *p)
{
    SSL_free(p->c);
    SSL_free(p->s);
    SSL_CTX_free(p->cctx);
    SSL_CTX_free(p->sctx);
    free(p->drain);
}

/* ---- agent.sample_cpu_us ------------------------------------------------------------------ */

typedef struct {
    double cpu_us, wall_us;
    double phase_us[4];    /* encode, pack, spool append, encrypt: median thread CPU of each */
    double first_spool_us; /* the first append: it creates (and preallocates) the segment */
    double frame_bytes;    /* mean frame size of the timed samples */
} cost_t;

static const char *const phase_names[4] = {"encode", "pack", "spool", "encrypt"};

/* Like the agent, one sample buffer is refilled by the source before each sample (so its
 * rows are as warm in the cache as the agent's); only the steps after the read are timed. */
static cost_t per_sample(size_t n, const char *spool_dir, pw_spool_fsync_t policy, tls_pair_t *tls)
{
    pw_sim_t *sim;
    pw_sample_t sample;
    pw_sample_init(&sample);
    if (pw_sim_new("steady", 0, NULL, &sim, NULL) != 0)
        exit(1);
    pw_delta_enc_t enc;
    pw_spool_t *sp;
    pw_spool_opts_t so = {.fsync = policy};
    pw_diag_t d;
    pw_buf_t frame;
    bp_system("rm -rf %s && mkdir -p %s", spool_dir, spool_dir);
    if (pw_delta_enc_init(&enc, 32) != 0 || pw_spool_open(spool_dir, &so, &sp, NULL, &d) != 0) {
        fprintf(stderr, "bench_agent: spool %s: %s\n", spool_dir, d.msg);
        exit(1);
    }
    pw_buf_init(&frame, PW_FRAME_MAX_DEFAULT + 16);
    double *cpu = calloc(n, sizeof(double)), *wall = calloc(n, sizeof(double));
    double *ph[4];
    for (int p = 0; p < 4; p++)
        ph[p] = calloc(n, sizeof(double));
    size_t k = 0;
    double first_spool_us = 0, frame_sum = 0;
    for (size_t i = 0; i < n; i++) {
        pw_sample_t *s = &sample;
        pw_sample_reset(s);
        if (pw_sim_next(sim, s) != 0)
            exit(1);
        s->seq = i + 1;
        double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
        double t[5];
        t[0] = c0;
        const Poolwatch__V1__Sample *msg;
        if (pw_delta_encode(&enc, s, 0, &msg, &d) != 0) {
            fprintf(stderr, "bench_agent: encode: %s\n", d.msg);
            exit(1);
        }
        t[1] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        pw_buf_reset(&frame);
        if (pw_codec_pack_sample(msg, PW_FRAME_MAX_DEFAULT, &frame) != 0) {
            fprintf(stderr, "bench_agent: pack failed\n");
            exit(1);
        }
        t[2] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        if (pw_spool_append(sp, s->seq, msg->keyframe ? PW_SPOOL_KEYFRAME : 0, frame.data,
                            frame.len, &d) != 0) {
            fprintf(stderr, "bench_agent: append: %s\n", d.msg);
            exit(1);
        }
        t[3] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        tls_pair_encrypt(tls, frame.data, frame.len);
        double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID), w1 = clock_us(CLOCK_MONOTONIC);
        t[4] = c1;
        if (i == 0)
            first_spool_us = t[3] - t[2];
        if (i >= WARMUP) { /* the first is the keyframe; let caches settle */
            frame_sum += (double)frame.len;
            for (int p = 0; p < 4; p++)
                ph[p][k] = t[p + 1] - t[p];
            cpu[k] = c1 - c0;
            wall[k++] = w1 - w0;
        }
    }
    printf("CHECK agent.rows_per_sample %zu rows (%s)\n", sample.n,
           policy == PW_SPOOL_FSYNC_NEVER    ? "fsync never"
           : policy == PW_SPOOL_FSYNC_MANUAL ? "fsync ack, acked in time"
                                             : "fsync always");
    cost_t r = {median(cpu, k), median(wall, k), {0}, first_spool_us, k ? frame_sum / k : 0};
    for (int p = 0; p < 4; p++) {
        r.phase_us[p] = median(ph[p], k);
        free(ph[p]);
    }
    free(cpu);
    free(wall);
    pw_buf_close(&frame);
    pw_spool_close(sp);
    pw_delta_enc_close(&enc);
    pw_sample_close(&sample);
    pw_sim_free(sim);
    bp_system("rm -rf %s", spool_dir);
    return r;
}

/* ---- agent.rss_kb, agent.cpu_percent -------------------------------------------------------- */

typedef struct {
    double cpu_percent;
    long rss_kb, hwm_kb, anon_kb, file_kb, pss_kb;
    int ok;
} proc_cost_t;

/* Proportional set size: each shared page divided by the number of processes mapping it
 * (Linux 4.14+ smaps_rollup); -1 when unknown. */
static long pss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "Pss:", 4) == 0) {
            v = strtol(line + 4, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static proc_cost_t run_agent(const char *exe, const char *work, const char *pki, int port,
                             const char *interval, unsigned settle_s, unsigned window_s)
{
    char bin[1024], src[64], ival[64], ep[64], spool[1024], ca[1024], cert[1024], key[1024],
        log[1024];
    snprintf(bin, sizeof(bin), "%s/agent/%s", PW_BENCH_BIN_DIR, exe);
    snprintf(src, sizeof(src), "--agent.source=sim:steady/0");
    snprintf(ival, sizeof(ival), "--agent.interval=%s", interval);
    snprintf(ep, sizeof(ep), "--collector.endpoints=127.0.0.1:%d", port);
    snprintf(spool, sizeof(spool), "--spool.dir=%s/spool-%s-%s", work, exe, interval);
    snprintf(ca, sizeof(ca), "--collector.ca_file=%s/ca.pem", pki);
    snprintf(cert, sizeof(cert), "--collector.cert_file=%s/agent-sim-steady-0.pem", pki);
    snprintf(key, sizeof(key), "--collector.key_file=%s/agent-sim-steady-0.key", pki);
    snprintf(log, sizeof(log), "%s/agent.log", work);
    char *argv[] = {bin, src, ival, ep, spool, ca, cert, key, "--agent.log_level=warn", NULL};
    proc_cost_t pc = {0};
    pid_t pid = bp_spawn(argv, log);
    bp_sleep_ms(settle_s * 1000);
    double c0 = bp_cpu_s(pid), t0 = bp_now_s();
    bp_sleep_ms(window_s * 1000);
    double c1 = bp_cpu_s(pid), t1 = bp_now_s();
    pc.rss_kb = bp_status_kb(pid, "VmRSS");
    pc.hwm_kb = bp_status_kb(pid, "VmHWM");
    pc.anon_kb = bp_status_kb(pid, "RssAnon");
    pc.file_kb = bp_status_kb(pid, "RssFile");
    pc.pss_kb = pss_kb(pid);
    pc.ok = bp_alive(pid) && c0 >= 0 && c1 >= 0;
    pc.cpu_percent = pc.ok ? 100.0 * (c1 - c0) / (t1 - t0) : -1;
    bp_stop(pid, 5000);
    if (!pc.ok)
        fprintf(stderr, "bench_agent: the agent died; see %s\n", log);
    return pc;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    char work[512], pki[512], spool_dir[600];
    snprintf(work, sizeof(work), "%s/pw-bench-agent-%d", tmp, (int)getpid());
    snprintf(pki, sizeof(pki), "%s/bench-pki", PW_BENCH_BIN_DIR);
    snprintf(spool_dir, sizeof(spool_dir), "%s/spool-inproc", work);
    bp_system("mkdir -p %s", work);
    const char *names[] = {"sim-steady-0"};
    bp_pki(pki, names, 1);

    size_t n = SAMPLES + WARMUP;
    tls_pair_t tls;
    memset(&tls, 0, sizeof(tls));
    tls_pair_open(&tls, pki);
    cost_t nosync = per_sample(n, spool_dir, PW_SPOOL_FSYNC_NEVER, &tls);
    cost_t acked = per_sample(n, spool_dir, PW_SPOOL_FSYNC_MANUAL, &tls);
    cost_t dflt = per_sample(n, spool_dir, PW_SPOOL_FSYNC_ALWAYS, &tls);
    tls_pair_close(&tls);
    printf("BENCH agent.sample_cpu_us %.1f us\n", acked.cpu_us);
    printf("BENCH agent.sample_cpu_us_fsync_each %.1f us\n", dflt.cpu_us);
    printf("BENCH agent.sample_cpu_us_nofsync %.1f us\n", nosync.cpu_us);
    printf("BENCH agent.sample_wall_us %.1f us\n", acked.wall_us);
    printf("BENCH agent.sample_wall_us_fsync_each %.1f us\n", dflt.wall_us);
    for (int p = 0; p < 4; p++)
        printf("BENCH agent.sample_%s_us %.1f us\n", phase_names[p], acked.phase_us[p]);
    printf("BENCH agent.sample_spool_us_fsync_each %.1f us\n", dflt.phase_us[2]);
    /* Not in the median: the append that starts a segment also preallocates it (spool.h),
     * once per PW_SPOOL_SEGMENT_BYTES_DEFAULT of frames. */
    double per_seg =
        dflt.frame_bytes > 0 ? (double)PW_SPOOL_SEGMENT_BYTES_DEFAULT / (dflt.frame_bytes + 20) : 0;
    printf("BENCH agent.spool_segment_create_us %.1f us\n", dflt.first_spool_us);
    printf("BENCH agent.spool_segment_create_per_sample_us %.2f us\n",
           per_seg > 0 ? dflt.first_spool_us / per_seg : 0);
    fflush(stdout);

    /* The real processes. */
    const char *secs = getenv("PW_BENCH_AGENT_SECONDS");
    unsigned window = secs ? (unsigned)atoi(secs) : 60;
    if (window == 0) { /* in-process figures only (profiling) */
        bp_system("rm -rf %s", work);
        return 0;
    }
    if (window < 10)
        window = 10;
    int port = bp_free_port();
    char bin[1024], listen[64], store[1024], ca[1024], cert[1024], key[1024], log[1024];
    snprintf(bin, sizeof(bin), "%s/collector/poolwatch-collector", PW_BENCH_BIN_DIR);
    snprintf(listen, sizeof(listen), "--agents.listen=127.0.0.1:%d", port);
    snprintf(store, sizeof(store), "--store.path=%s/collector.db", work);
    snprintf(ca, sizeof(ca), "--agents.ca_file=%s/ca.pem", pki);
    snprintf(cert, sizeof(cert), "--agents.cert_file=%s/collector.pem", pki);
    snprintf(key, sizeof(key), "--agents.key_file=%s/collector.key", pki);
    snprintf(log, sizeof(log), "%s/collector.log", work);
    char *cargv[] = {
        bin, listen, store, ca, cert, key, "--http.listen=", "--collector.log_level=warn", NULL};
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "bench_agent: %s not built: process figures skipped\n", bin);
        bp_system("rm -rf %s", work);
        return 0;
    }
    pid_t cpid = bp_spawn(cargv, log);
    for (int i = 0; i < 100 && !bp_port_open(port); i++)
        bp_sleep_ms(100);
    proc_cost_t p10 = run_agent("poolwatch-agent", work, pki, port, "10s", 15, window);
    proc_cost_t p1 = run_agent("poolwatch-agent", work, pki, port, "1s", 5, window / 3);
    /* The same agent linked with the shared OpenSSL (PW_AGENT_STATIC_OPENSSL=OFF), when this
     * build made one: the other side of that choice. */
    char shared_bin[1024];
    snprintf(shared_bin, sizeof(shared_bin), "%s/agent/poolwatch-agent-shared-openssl",
             PW_BENCH_BIN_DIR);
    proc_cost_t psh = {0};
    if (access(shared_bin, X_OK) == 0)
        psh = run_agent("poolwatch-agent-shared-openssl", work, pki, port, "10s", 15, window / 2);
    bp_stop(cpid, 10000);
    if (p10.ok) {
        printf("BENCH agent.rss_kb %ld kB\n", p10.rss_kb);
        printf("BENCH agent.rss_peak_kb %ld kB\n", p10.hwm_kb);
        /* RssFile is mostly shared libraries (libcrypto alone is about 4 MB here), shared
         * with every other process that maps them; RssAnon is the agent's own memory. */
        printf("BENCH agent.rss_anon_kb %ld kB\n", p10.anon_kb);
        printf("BENCH agent.rss_file_kb %ld kB\n", p10.file_kb);
        printf("BENCH agent.pss_kb %ld kB\n", p10.pss_kb);
        printf("BENCH agent.cpu_percent_10s %.3f %%\n", p10.cpu_percent);
    }
    if (p1.ok)
        printf("BENCH agent.cpu_percent_1s %.3f %%\n", p1.cpu_percent);
    if (psh.ok) {
        printf("BENCH agent.rss_kb_shared_openssl %ld kB\n", psh.rss_kb);
        printf("BENCH agent.rss_file_kb_shared_openssl %ld kB\n", psh.file_kb);
        printf("BENCH agent.pss_kb_shared_openssl %ld kB\n", psh.pss_kb);
    }
    bp_system("rm -rf %s", work);
    return p10.ok && p1.ok ? 0 : 1;
}
