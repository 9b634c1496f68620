/* bench_agent.c: what the agent costs on a host, with the sim source preset
 * "steady" (3,000 rows, 5 % of them changing per sample; agent/source_sim.h).
 *
 *   agent.sample_cpu_us          per sample, median: the agent's own per-sample path, run by the
 *                                agent's code itself: pw_agent_sample_step (agent/agent.h) runs
 *                                on_sample_timer of agent/agent.c once in an agent opened with
 *                                pw_agent_open, streaming over mutual TLS to a real
 *                                poolwatch-collector on loopback (which acks after its group
 *                                commit, within its commit_interval of 600 ms),
 *                                with the default spool.fsync = ack: the sim source's read of
 *                                the next sample, pw_delta_encode, pw_codec_pack_sample,
 *                                pw_spool_append (no fdatasync: the collector's ack makes it
 *                                durable), pump() reading the frame back from the spool and
 *                                sending it (TLS encryption, the socket write), after_append().
 *                                Between steps the bench runs the agent's loop for 5 ms (write
 *                                completions, acks, the sync timer: not timed). Measured as
 *                                thread CPU time (CLOCK_THREAD_CPUTIME_ID): time spent waiting
 *                                for the disk is not CPU. Target <= 50 us.
 *   agent.sample_cpu_us_fsync_each  the same step with spool.fsync = always (one fdatasync
 *                                per sample: also the ack policy while the collector is away)
 *   agent.sample_cpu_us_nofsync  the same step with spool.fsync = never
 *   agent.sample_wall_us, _fsync_each  wall time of the step (default policy, always)
 *   agent.sample_{source,encode,pack,spool}_us  the parts, each timed alone by calling the
 *                                same functions in a loop of this bench (source: pw_sim_next;
 *                                spool: the default policy's append), for where the time goes;
 *                                agent.sample_spool_us_fsync_each with fdatasync. Their sum is
 *                                not the step: the step also sends (TLS, socket write).
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
 * Measured on the 2-core build VM (ext4 on virtio): see the README's Benchmarks table.
 * PW_BENCH_AGENT_SECONDS=0 runs the in-process figures only (for perf record).
 * Binaries: PW_BENCH_BIN_DIR (the build tree). Work files under $TMPDIR (default /var/tmp, a
 * disk), removed at the end; the PKI is cached in the build tree (bench-pki/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "bench_proc.h"
#include "codec.h"
#include "delta.h"
#include "frame.h"
#include "log.h"
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

/* ---- agent.sample_cpu_us: the agent's own step ---------------------------------------------- */

typedef struct {
    double cpu_us, wall_us; /* medians of the timed steps */
    size_t steps;
} step_cost_t;

static void cfg_set(pw_agent_cfg_t *cfg, const char *key, const char *value)
{
    pw_diag_t d;
    if (pw_config_set(pw_agent_options, cfg, key, value, &d) != 0) {
        fprintf(stderr, "bench_agent: %s=%s: %s\n", key, value, d.msg);
        exit(1);
    }
}

/* Opens an agent (sim:steady/0, spool.fsync = `fsync`) streaming to the collector on `port`,
 * waits until its session streams, then times n calls of pw_agent_sample_step (the first
 * WARMUP not counted), running the agent's loop for 5 ms after each. */
static step_cost_t agent_steps(size_t n, const char *fsync, const char *work, const char *pki,
                               int port)
{
    pw_agent_cfg_t cfg;
    pw_diag_t d;
    char buf[1024];
    if (pw_config_defaults(pw_agent_options, &cfg, &d) < 0) {
        fprintf(stderr, "bench_agent: defaults: %s\n", d.msg);
        exit(1);
    }
    cfg_set(&cfg, "agent.source", "sim:steady/0");
    cfg_set(&cfg, "agent.log_level", "warn");
    cfg_set(&cfg, "spool.fsync", fsync);
    snprintf(buf, sizeof(buf), "%s/spool-step-%s", work, fsync);
    bp_system("rm -rf %s && mkdir -p %s", buf, buf);
    cfg_set(&cfg, "spool.dir", buf);
    snprintf(buf, sizeof(buf), "127.0.0.1:%d", port);
    cfg_set(&cfg, "collector.endpoints", buf);
    snprintf(buf, sizeof(buf), "%s/ca.pem", pki);
    cfg_set(&cfg, "collector.ca_file", buf);
    snprintf(buf, sizeof(buf), "%s/agent-sim-steady-0.pem", pki);
    cfg_set(&cfg, "collector.cert_file", buf);
    snprintf(buf, sizeof(buf), "%s/agent-sim-steady-0.key", pki);
    cfg_set(&cfg, "collector.key_file", buf);
    /* The timer's own ticks: the first at once (sample 1, the keyframe), the next in an hour;
     * the steps take the samples in between. The simulated clock starts two days back at
     * 10 s per sample, so the source is never ahead of the wall clock. */
    cfg.interval_ms = 3600000;
    cfg.sim_interval_ms = 10000;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cfg.sim_start_ms = (uint64_t)now.tv_sec * 1000 - 2 * 86400000ull;
    pw_log_level = PW_LOG_LVL_WARN;
    pw_agent_t *a;
    if (pw_agent_open(&cfg, &a, &d) != 0) {
        fprintf(stderr, "bench_agent: pw_agent_open: %s\n", d.msg);
        exit(1);
    }
    int streaming = 0;
    for (int i = 0; i < 200 && !streaming; i++)
        streaming = pw_agent_poll(a, 50);
    if (!streaming) {
        fprintf(stderr, "bench_agent: the agent did not stream to 127.0.0.1:%d in 10 s\n", port);
        exit(1);
    }
    double *cpu = calloc(n, sizeof(double)), *wall = calloc(n, sizeof(double));
    size_t k = 0;
    uint64_t seq0 = 0, seq = 0;
    for (size_t i = 0; i < n; i++) {
        double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
        seq = pw_agent_sample_step(a);
        double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID), w1 = clock_us(CLOCK_MONOTONIC);
        if (i == 0)
            seq0 = seq;
        if (i >= WARMUP) {
            cpu[k] = c1 - c0;
            wall[k++] = w1 - w0;
        }
        streaming = pw_agent_poll(a, 5);
    }
    if (seq - seq0 != n - 1 || !streaming) {
        fprintf(stderr, "bench_agent: %zu steps appended %llu samples, session %s\n", n,
                (unsigned long long)(seq - seq0 + 1), streaming ? "up" : "down");
        exit(1);
    }
    step_cost_t r = {median(cpu, k), median(wall, k), k};
    free(cpu);
    free(wall);
    pw_agent_close(a);
    pw_config_free(pw_agent_options, &cfg);
    return r;
}

/* ---- the parts, each timed alone ------------------------------------------------------------ */

typedef struct {
    double phase_us[4];    /* source read, encode, pack, spool append: median thread CPU */
    double first_spool_us; /* the first append: it creates (and preallocates) the segment */
    double frame_bytes;    /* mean frame size of the timed samples */
} cost_t;

static const char *const phase_names[4] = {"source", "encode", "pack", "spool"};

/* The functions on_sample_timer calls, one after the other as there, each timed. */
static cost_t parts(size_t n, const char *spool_dir, pw_spool_fsync_t policy)
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
    double *ph[4];
    for (int p = 0; p < 4; p++)
        ph[p] = calloc(n, sizeof(double));
    size_t k = 0;
    double first_spool_us = 0, frame_sum = 0;
    for (size_t i = 0; i < n; i++) {
        pw_sample_t *s = &sample;
        double t[5];
        t[0] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        pw_sample_reset(s);
        if (pw_sim_next(sim, s) != 0)
            exit(1);
        s->seq = i + 1;
        t[1] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        const Poolwatch__V1__Sample *msg;
        if (pw_delta_encode(&enc, s, 0, &msg, &d) != 0) {
            fprintf(stderr, "bench_agent: encode: %s\n", d.msg);
            exit(1);
        }
        t[2] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        pw_buf_reset(&frame);
        if (pw_codec_pack_sample(msg, PW_FRAME_MAX_DEFAULT, &frame) != 0) {
            fprintf(stderr, "bench_agent: pack failed\n");
            exit(1);
        }
        t[3] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        if (pw_spool_append(sp, s->seq, msg->keyframe ? PW_SPOOL_KEYFRAME : 0, frame.data,
                            frame.len, &d) != 0) {
            fprintf(stderr, "bench_agent: append: %s\n", d.msg);
            exit(1);
        }
        t[4] = clock_us(CLOCK_THREAD_CPUTIME_ID);
        if (i == 0)
            first_spool_us = t[4] - t[3];
        if (i >= WARMUP) { /* the first is the keyframe; let caches settle */
            frame_sum += (double)frame.len;
            for (int p = 0; p < 4; p++)
                ph[p][k] = t[p + 1] - t[p];
            k++;
        }
    }
    printf("CHECK agent.rows_per_sample %zu rows\n", sample.n);
    cost_t r = {{0}, first_spool_us, k ? frame_sum / k : 0};
    for (int p = 0; p < 4; p++) {
        r.phase_us[p] = median(ph[p], k);
        free(ph[p]);
    }
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

    /* The collector every agent of this bench streams to. */
    int port = bp_free_port();
    pid_t cpid = bp_collector_spawn(PW_BENCH_BIN_DIR, work, pki, port, NULL);
    if (cpid < 0) {
        bp_system("rm -rf %s", work);
        return 1;
    }

    size_t n = SAMPLES + WARMUP;
    step_cost_t acked = agent_steps(n, "ack", work, pki, port);
    step_cost_t each = agent_steps(n, "always", work, pki, port);
    step_cost_t never = agent_steps(n, "never", work, pki, port);
    printf("CHECK agent.steps_timed %zu steps per policy\n", acked.steps);
    printf("BENCH agent.sample_cpu_us %.1f us\n", acked.cpu_us);
    printf("BENCH agent.sample_cpu_us_fsync_each %.1f us\n", each.cpu_us);
    printf("BENCH agent.sample_cpu_us_nofsync %.1f us\n", never.cpu_us);
    printf("BENCH agent.sample_wall_us %.1f us\n", acked.wall_us);
    printf("BENCH agent.sample_wall_us_fsync_each %.1f us\n", each.wall_us);
    fflush(stdout);
    cost_t part = parts(n, spool_dir, PW_SPOOL_FSYNC_MANUAL);
    cost_t part_each = parts(n, spool_dir, PW_SPOOL_FSYNC_ALWAYS);
    for (int p = 0; p < 4; p++)
        printf("BENCH agent.sample_%s_us %.1f us\n", phase_names[p], part.phase_us[p]);
    printf("BENCH agent.sample_spool_us_fsync_each %.1f us\n", part_each.phase_us[3]);
    /* Not in the median: the append that starts a segment also preallocates it (spool.h),
     * once per PW_SPOOL_SEGMENT_BYTES_DEFAULT of frames. */
    double per_seg = part_each.frame_bytes > 0
                         ? (double)PW_SPOOL_SEGMENT_BYTES_DEFAULT / (part_each.frame_bytes + 20)
                         : 0;
    printf("BENCH agent.spool_segment_create_us %.1f us\n", part_each.first_spool_us);
    printf("BENCH agent.spool_segment_create_per_sample_us %.2f us\n",
           per_seg > 0 ? part_each.first_spool_us / per_seg : 0);
    fflush(stdout);

    /* The real processes. */
    const char *secs = getenv("PW_BENCH_AGENT_SECONDS");
    unsigned window = secs ? (unsigned)atoi(secs) : 60;
    if (window == 0) { /* in-process figures only (profiling) */
        bp_stop(cpid, 10000);
        bp_system("rm -rf %s", work);
        return 0;
    }
    if (window < 10)
        window = 10;
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
