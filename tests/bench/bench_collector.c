/* bench_collector.c: what the collector sustains.
 *
 *   collector.apply_updates_per_s_core  what the collector does per update, in process: pre-encoded
 *                                delta frames (2,000 rows, 5 % changing per sample) of 1,000
 *                                hosts, round after round, each frame taken as a session takes
 *                                it (pw_frame_parse, pw_codec_unpack, pw_ingest_contact) and
 *                                handed to pw_ingest_frame (collector/ingest/ingest.h: delta
 *                                apply, change columns, fleet index, history ring, store put)
 *                                over a store on a file under $TMPDIR (WAL, synchronous=FULL,
 *                                its checkpointer thread), with pw_ingest_commit when the
 *                                collector's group-commit policy says (commit.h with the
 *                                collector's defaults, on the sample times: 1,000 hosts at
 *                                10 s put 100 frames a second, so the 600-ms wait commits
 *                                every 60 frames). An update is a row changed (or
 *                                added, or reset) by a delta; per second of the process's CPU
 *                                time (every thread: the checkpointer's too; time waiting for
 *                                fsync is not CPU). Target >= 1,000,000.
 *   collector.apply_us_per_delta  the same, per delta frame
 *   CHECK collector.decode_apply_updates_per_s_core  the former figure: frame parse, unpack
 *                                and pw_delta_apply on a bare decoder only (thread CPU)
 *   collector.fleet_10k_ack_p50_ms / _p99_ms  a real poolwatch-collector on loopback and one
 *                                libuv load generator in this process: 10,000 simulated agents
 *                                x 2,000 rows at a 10 s interval, each over its own mutual-TLS
 *                                connection (common/tls.h) speaking the real protocol (Hello,
 *                                wait for the Ack, keyframe with dict_reset, then a delta every
 *                                10 s at a random phase). Latency is from the write of a
 *                                sample's frame to the Ack that covers its seq ("acks mean on
 *                                disk": after the collector's group commit). Measured over
 *                                PW_BENCH_FLEET_SECONDS (default 240) of steady state after
 *                                every agent is connected and 30 s of warm-up. Target p99 <
 *                                1,000 ms.
 *   collector.fleet_10k_ack_p99_worst_10s_ms  the p99 of the worst 10 s of the window (stderr
 *                                lists every 10 s, with the wall-clock start: hosts' chunk
 *                                windows end at :00/:15/:30/:45 in four groups).
 *   collector.fleet_10k_rss_kb, collector.fleet_10k_cpu_percent  the collector process at the
 *                                end of that window (VmRSS) and over it (CPU time of all its
 *                                threads, percent of one core; 200 = both cores).
 *   collector.fleet_10k_samples_per_s, collector.fleet_10k_loadgen_cpu_percent  throughput
 *                                acked, and what the load generator itself used (it shares
 *                                the 2 cores with the collector).
 *   export.fleet_10k_ack_p99_ms  the same p99 with PW_BENCH_FLEET_EXPORT=1: remote write on
 *                                (the export policy's defaults, a disk queue) into Debian's
 *                                VictoriaMetrics on loopback, sharing the 2 cores.
 * PW_BENCH_FLEET_AGENTS changes the fleet size (default 10000; 0 skips the fleet run).
 *
 * Certificates: the collector requires the Hello's host name to be named by the client
 * certificate. Making 10,000 certificates with the openssl CLI takes minutes, so agents share
 * certificates in groups of 100, each listing its 100 host names as DNS SANs (cached under
 * the build tree in bench-pki/fleet/). A handshake thus carries a ~2.5 kB certificate instead
 * of ~0.6 kB; the collector's checks are the same. All connections come from 127.0.0.1, so
 * the collector runs with --agents.max_connections_per_ip=20000.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <uv.h>

#include "bench_proc.h"
#include "codec.h"
#include "collector.h"
#include "commit.h"
#include "delta.h"
#include "frame.h"
#include "ingest.h"
#include "net.h"
#include "source_sim.h"
#include "tls.h"

#define ROWS         2000
#define GROUP        100 /* host names per client certificate */
#define INTERVAL     10000u
#define APPLY_HOST   1000
#define APPLY_ROUNDS 20

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- sample streams ------------------------------------------------------------------------- */

/* Frames (4-byte length + Envelope) of `n` samples of sim "steady" host `host`, cut to its
 * first ROWS rows: about 5 % of them change per sample. Frame 0 is the keyframe. */
static void make_stream(uint32_t host, size_t n, pw_buf_t *frames, size_t *offs)
{
    pw_sim_t *sim;
    pw_sample_t s;
    pw_delta_enc_t enc;
    pw_diag_t d;
    if (pw_sim_new("steady", host, NULL, &sim, &d) != 0 || pw_delta_enc_init(&enc, 32) != 0) {
        fprintf(stderr, "bench_collector: %s\n", d.msg);
        exit(1);
    }
    pw_sample_init(&s);
    for (size_t i = 0; i < n; i++) {
        pw_sample_reset(&s);
        if (pw_sim_next(sim, &s) != 0)
            exit(1);
        if (s.n > ROWS)
            s.n = ROWS;
        s.seq = i + 1;
        const Poolwatch__V1__Sample *msg;
        offs[i] = frames->len;
        if (pw_delta_encode(&enc, &s, 0, &msg, &d) != 0 ||
            pw_codec_pack_sample(msg, PW_FRAME_MAX_DEFAULT, frames) != 0) {
            fprintf(stderr, "bench_collector: encode: %s\n", d.msg);
            exit(1);
        }
    }
    offs[n] = frames->len;
    pw_sample_close(&s);
    pw_delta_enc_close(&enc);
    pw_sim_free(sim);
}

/* ---- collector.apply_updates_per_s_core ---------------------------------------------------- */

typedef struct {
    pw_buf_t *frames;
    size_t *offs; /* per host: n + 1 offsets into its frames */
    size_t n;     /* samples per host: the keyframe and APPLY_ROUNDS deltas */
} streams_t;

/* The parsed envelope of host h's frame k (free with pw_codec_free). */
static Poolwatch__V1__Envelope *unpack_frame(const streams_t *st, size_t h, size_t k,
                                             const uint8_t **payload, size_t *len)
{
    const size_t *o = &st->offs[h * (st->n + 1)];
    Poolwatch__V1__Envelope *env;
    pw_diag_t d;
    if (pw_frame_parse(st->frames[h].data + o[k], o[k + 1] - o[k], PW_FRAME_MAX_DEFAULT, payload,
                       len, &d) <= 0 ||
        pw_codec_unpack(*payload, *len, &env, &d) != 0) {
        fprintf(stderr, "bench_collector: frame: %s\n", d.msg);
        exit(1);
    }
    return env;
}

/* The former figure, for comparison: decode and delta apply on a bare decoder. Returns the
 * updates in the deltas (rows changed, added or reset), the same for every pass. */
static uint64_t bench_decode_apply(const streams_t *st)
{
    pw_delta_dec_t *dec = calloc(APPLY_HOST, sizeof(*dec));
    pw_diag_t d;
    uint64_t updates = 0;
    double t0 = 0;
    for (size_t h = 0; h < APPLY_HOST; h++)
        pw_delta_dec_init(&dec[h], 32, 0);
    for (size_t k = 0; k < st->n; k++) {
        if (k == 1) /* the keyframes are not timed: only deltas */
            t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (size_t h = 0; h < APPLY_HOST; h++) {
            const uint8_t *p;
            size_t plen;
            Poolwatch__V1__Envelope *env = unpack_frame(st, h, k, &p, &plen);
            pw_delta_result_t res;
            if (pw_delta_apply(&dec[h], env->sample, &res, &d) != 0) {
                fprintf(stderr, "bench_collector: apply: %s\n", d.msg);
                exit(1);
            }
            pw_codec_free(env);
            if (k > 0)
                updates += res.changed + res.added + res.resets;
        }
    }
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    printf("CHECK collector.decode_apply_updates_per_s_core %.0f updates/s\n",
           (double)updates / cpu);
    for (size_t h = 0; h < APPLY_HOST; h++)
        pw_delta_dec_close(&dec[h]);
    free(dec);
    return updates;
}

static void agent_name(uint32_t i, char *out, size_t n);

static pw_host_t *hello(pw_ingest_t *ing, size_t h, void *session)
{
    char name[64], aid[80];
    agent_name((uint32_t)h, name, sizeof(name));
    snprintf(aid, sizeof(aid), "agent:%s", name);
    Poolwatch__V1__Hello m = POOLWATCH__V1__HELLO__INIT;
    m.protocol_major = PW_PROTOCOL_MAJOR;
    m.host_name = name;
    m.counter_width = 32;
    m.agent_id.data = (uint8_t *)aid;
    m.agent_id.len = strlen(aid);
    m.boot_id.data = (uint8_t *)"boot:1";
    m.boot_id.len = 6;
    m.os_family = m.os_version = m.arch = m.agent_version = "";
    pw_ingest_hello_res_t res;
    pw_diag_t d;
    if (pw_ingest_hello(ing, &m, name, session, &res, &d) != 0) {
        fprintf(stderr, "bench_collector: hello: %s\n", d.msg);
        exit(1);
    }
    return res.host;
}

static void bench_apply(void)
{
    streams_t st = {calloc(APPLY_HOST, sizeof(pw_buf_t)), NULL, APPLY_ROUNDS + 1};
    st.offs = calloc((size_t)APPLY_HOST * (st.n + 1), sizeof(*st.offs));
    for (size_t h = 0; h < APPLY_HOST; h++) {
        pw_buf_init(&st.frames[h], (size_t)1 << 30);
        make_stream((uint32_t)h, st.n, &st.frames[h], &st.offs[h * (st.n + 1)]);
    }
    uint64_t updates = bench_decode_apply(&st);

    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    char work[512], path[600];
    snprintf(work, sizeof(work), "%s/pw-bench-apply-%d", tmp, (int)getpid());
    snprintf(path, sizeof(path), "%s/collector.db", work);
    bp_system("rm -rf %s && mkdir -p %s", work, work);
    pw_store_t *store;
    pw_ingest_t *ing;
    pw_diag_t d;
    if (pw_store_open(path, NULL, &store, &d) != 0 || pw_ingest_new(store, &ing, &d) != 0) {
        fprintf(stderr, "bench_collector: store %s: %s\n", path, d.msg);
        exit(1);
    }
    int session; /* its address stands for the sessions */
    pw_host_t **hosts = calloc(APPLY_HOST, sizeof(*hosts));
    for (size_t h = 0; h < APPLY_HOST; h++)
        hosts[h] = hello(ing, h, &session);
    uint64_t now_ms = 0;
    double t0 = 0;
    /* the collector's group-commit policy (its option table's defaults) */
    pw_collector_cfg_t ccfg;
    memset(&ccfg, 0, sizeof(ccfg));
    if (pw_config_defaults(pw_collector_options, &ccfg, &d) != 0) {
        fprintf(stderr, "bench_collector: collector defaults: %s\n", d.msg);
        exit(1);
    }
    pw_commit_policy_t pp = pw_collector_commit_policy(&ccfg);
    pw_config_free(pw_collector_options, &ccfg);
    pw_commit_t pol;
    pw_commit_init(&pol, &pp);
    for (size_t k = 0; k < st.n; k++) {
        if (k == 1) /* the keyframes are not timed: only deltas */
            t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (size_t h = 0; h < APPLY_HOST; h++) {
            const uint8_t *p;
            size_t plen;
            Poolwatch__V1__Envelope *env = unpack_frame(&st, h, k, &p, &plen);
            now_ms += INTERVAL / APPLY_HOST;
            if (pw_commit_due(&pol, now_ms)) { /* the commit timer fired before this frame */
                pw_commit_done(&pol);
                if (pw_ingest_commit(ing, &d) < 0) {
                    fprintf(stderr, "bench_collector: commit: %s\n", d.msg);
                    exit(1);
                }
            }
            pw_ingest_contact(ing, hosts[h], now_ms);
            pw_ingest_frame_res_t res;
            int store_failed = 0;
            if (pw_ingest_frame(ing, hosts[h], env->sample, p, plen, &res, &store_failed, &d) !=
                0) {
                fprintf(stderr, "bench_collector: ingest: %s\n", d.msg);
                exit(1);
            }
            pw_codec_free(env);
            if (res.stored_seq && pw_commit_add(&pol, now_ms, plen)) {
                pw_commit_done(&pol);
                if (pw_ingest_commit(ing, &d) < 0) {
                    fprintf(stderr, "bench_collector: commit: %s\n", d.msg);
                    exit(1);
                }
            }
        }
    }
    if (pw_ingest_commit(ing, &d) < 0) {
        fprintf(stderr, "bench_collector: commit: %s\n", d.msg);
        exit(1);
    }
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
    printf("CHECK collector.apply_updates_per_delta %.1f rows\n",
           (double)updates / (double)(APPLY_HOST * APPLY_ROUNDS));
    printf("BENCH collector.apply_updates_per_s_core %.0f updates/s\n", (double)updates / cpu);
    printf("BENCH collector.apply_us_per_delta %.2f us\n",
           cpu * 1e6 / (double)(APPLY_HOST * APPLY_ROUNDS));
    fflush(stdout);
    pw_ingest_free(ing);
    pw_store_close(store);
    bp_system("rm -rf %s", work);
    for (size_t h = 0; h < APPLY_HOST; h++)
        pw_buf_close(&st.frames[h]);
    free(st.frames);
    free(st.offs);
    free(hosts);
}

/* ---- the fleet load generator --------------------------------------------------------------- */

#define OUTSTANDING 16

typedef struct agent_s {
    struct fleet_s *f;
    uint32_t idx;
    pw_tls_conn_t *tls;
    uv_timer_t timer;
    pw_frame_reader_t reader;
    int state;    /* 0 connecting, 1 hello sent, 2 streaming, 3 closed */
    uint64_t seq; /* last seq sent */
    size_t k;     /* next template sample (0 = keyframe) */
    uint64_t phase_ms;
    uint64_t sent_seq[OUTSTANDING];
    double sent_at[OUTSTANDING];
    uint8_t agent_id[16], boot_id[16];
} agent_t;

typedef struct fleet_s {
    uv_loop_t *loop;
    pw_tls_ctx_t **ctx; /* one per certificate group */
    struct sockaddr_storage addr;
    agent_t *agents;
    size_t n, connected, streaming, closed, next_connect;
    Poolwatch__V1__Envelope **tmpl; /* unpacked template samples */
    size_t ntmpl;
    pw_buf_t out;
    uv_timer_t ramp, phase;
    int measuring, done;
    double *lat;   /* ms, while measuring */
    double *lat_t; /* when each was acked, s since the window started */
    double t_measure;
    size_t nlat, lat_cap;
    uint64_t acked_samples, refused, keyframe_requests;
} fleet_t;

static double mono_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void agent_send_sample(agent_t *a);

static void on_agent_timer(uv_timer_t *t)
{
    agent_t *a = t->data;
    if (a->state == 2)
        agent_send_sample(a);
}

static int send_env(agent_t *a, const Poolwatch__V1__Envelope *env)
{
    fleet_t *f = a->f;
    pw_buf_reset(&f->out);
    int r = pw_codec_pack_frame(env, PW_FRAME_MAX_DEFAULT, &f->out);
    return r ? r : pw_tls_write(a->tls, f->out.data, f->out.len);
}

static void agent_send_sample(agent_t *a)
{
    fleet_t *f = a->f;
    if (a->k >= f->ntmpl) /* out of template samples: the run is longer than planned */
        return;
    Poolwatch__V1__Sample *s = f->tmpl[a->k]->sample;
    s->seq = a->seq + 1;
    s->base_seq = s->keyframe ? 0 : a->seq;
    s->dict_reset = a->k == 0;
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    s->timestamp_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
    if (send_env(a, f->tmpl[a->k]) != 0)
        return;
    a->seq++;
    a->k++;
    a->sent_seq[a->seq % OUTSTANDING] = a->seq;
    a->sent_at[a->seq % OUTSTANDING] = mono_s();
}

static void on_ack(agent_t *a, const Poolwatch__V1__Ack *ack)
{
    fleet_t *f = a->f;
    if (a->state == 1) { /* the Hello's Ack: start with a keyframe, then every 10 s */
        a->state = 2;
        f->streaming++;
        a->k = 0;
        agent_send_sample(a);
        uv_timer_start(&a->timer, on_agent_timer, a->phase_ms, INTERVAL);
        return;
    }
    if (ack->need_keyframe) {
        f->keyframe_requests++;
        a->k = 0;
    }
    double now = mono_s();
    for (int i = 0; i < OUTSTANDING; i++)
        if (a->sent_seq[i] != 0 && a->sent_seq[i] <= ack->seq) {
            f->acked_samples += f->measuring;
            if (f->measuring) {
                if (f->nlat == f->lat_cap) {
                    f->lat_cap = f->lat_cap ? f->lat_cap * 2 : 65536;
                    f->lat = realloc(f->lat, f->lat_cap * sizeof(*f->lat));
                    f->lat_t = realloc(f->lat_t, f->lat_cap * sizeof(*f->lat_t));
                    if (f->lat == NULL || f->lat_t == NULL)
                        abort();
                }
                f->lat_t[f->nlat] = now - f->t_measure;
                f->lat[f->nlat++] = (now - a->sent_at[i]) * 1000.0;
            }
            a->sent_seq[i] = 0;
        }
}

static void on_agent_data(pw_tls_conn_t *c, const uint8_t *data, size_t len)
{
    agent_t *a = pw_tls_data(c);
    pw_diag_t d;
    const uint8_t *p;
    size_t plen;
    if (pw_frame_reader_feed(&a->reader, data, len, &d) != 0) {
        pw_tls_close(c);
        return;
    }
    while (pw_frame_reader_next(&a->reader, &p, &plen, &d) == 1) {
        Poolwatch__V1__Envelope *env;
        if (pw_codec_unpack(p, plen, &env, &d) != 0)
            continue;
        if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_ACK)
            on_ack(a, env->ack);
        else if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_ERROR) {
            a->f->refused++;
            if (a->f->refused <= 3)
                fprintf(stderr, "bench_collector: agent %u refused: %s\n", a->idx,
                        env->error->message);
        }
        pw_codec_free(env);
    }
}

static void agent_name(uint32_t i, char *out, size_t n)
{
    snprintf(out, n, "fleet-%05u", i);
}

static void on_agent_established(pw_tls_conn_t *c)
{
    agent_t *a = pw_tls_data(c);
    char name[32];
    agent_name(a->idx, name, sizeof(name));
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.protocol_minor = PW_PROTOCOL_MINOR;
    h.agent_id.data = a->agent_id;
    h.agent_id.len = 16;
    h.boot_id.data = a->boot_id;
    h.boot_id.len = 16;
    h.host_name = name;
    h.os_family = "windows";
    h.os_version = "10.0";
    h.os_build = 17763;
    h.arch = "x64";
    h.agent_version = "bench";
    h.source_kind = POOLWATCH__V1__SOURCE_KIND__SOURCE_SIMULATED;
    h.counter_width = 32;
    h.interval_ms = INTERVAL;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_HELLO;
    env.hello = &h;
    if (send_env(a, &env) == 0) {
        a->state = 1;
        a->f->connected++;
    }
}

static void on_agent_close(pw_tls_conn_t *c, int status, const char *msg)
{
    agent_t *a = pw_tls_data(c);
    fleet_t *f = a->f;
    if (!f->done && f->closed < 3)
        fprintf(stderr, "bench_collector: agent %u closed: %s %s\n", a->idx,
                status ? pw_strerror(status) : "", msg ? msg : "");
    f->closed++;
    if (a->state == 2)
        f->streaming--;
    a->state = 3;
    a->tls = NULL;
    uv_timer_stop(&a->timer);
}

static const pw_tls_cbs_t agent_cbs = {on_agent_established, on_agent_data, on_agent_close};

static void on_ramp(uv_timer_t *t)
{
    fleet_t *f = t->data;
    /* Bounded handshakes in flight: both processes share 2 cores. */
    for (int i = 0;
         i < 25 && f->next_connect < f->n && f->next_connect - f->connected - f->closed < 200;
         i++) {
        agent_t *a = &f->agents[f->next_connect++];
        pw_diag_t d;
        char name[32];
        snprintf(name, sizeof(name), "localhost");
        if (pw_tls_connect(&a->tls, f->loop, f->ctx[a->idx / GROUP],
                           (const struct sockaddr *)&f->addr, name, &agent_cbs, a, &d) != 0) {
            fprintf(stderr, "bench_collector: connect: %s\n", d.msg);
            f->closed++;
        }
    }
    if (f->next_connect == f->n)
        uv_timer_stop(t);
}

static void on_phase(uv_timer_t *t)
{
    (void)t;
    uv_stop(t->loop);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs the loop for `ms` (or until stopped). */
static void run_for(fleet_t *f, uint64_t ms)
{
    uv_timer_start(&f->phase, on_phase, ms, 0);
    uv_run(f->loop, UV_RUN_DEFAULT);
}

static void make_fleet_pki(const char *pki, size_t n)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/fleet", pki);
    bp_system("mkdir -p %s", dir);
    size_t groups = (n + GROUP - 1) / GROUP;
    char last[700];
    snprintf(last, sizeof(last), "%s/fleet-%zu.pem", dir, groups - 1);
    /* kept while the last one is an agent's (OU poolwatch-agent, the role the collector
     * requires) and the PKI's CA signed it (pki.sh may have made a new CA) */
    char check[2200];
    snprintf(check, sizeof(check),
             "openssl x509 -in %s -noout -subject 2>/dev/null | grep -q 'OU *= *poolwatch-agent'"
             " && openssl verify -CAfile %s/ca.pem %s >/dev/null 2>&1",
             last, pki, last);
    if (access(last, R_OK) == 0 && system(check) == 0)
        return;
    fprintf(stderr, "bench_collector: making %zu client certificates (once)...\n", groups);
    bp_system("[ -f %s/fleet.key ] || openssl genpkey -algorithm EC -pkeyopt "
              "ec_paramgen_curve:P-256 -out %s/fleet.key 2>/dev/null",
              dir, dir);
    for (size_t g = 0; g < groups; g++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/fleet-%zu.ext", dir, g);
        FILE *e = fopen(path, "w");
        if (e == NULL)
            exit(1);
        fprintf(e, "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=clientAuth\nsubjectAltName=");
        for (size_t i = g * GROUP; i < (g + 1) * GROUP; i++) {
            char name[32];
            agent_name((uint32_t)i, name, sizeof(name));
            fprintf(e, "%sDNS:%s", i == g * GROUP ? "" : ",", name);
        }
        fprintf(e, "\n");
        fclose(e);
        bp_system(
            "cd %s && openssl req -new -key fleet.key -subj /OU=poolwatch-agent/CN=fleet-group-%zu"
            " 2>/dev/null"
            " | openssl x509 -req -CA ../ca.pem -CAkey ../ca.key -set_serial %zu -days 30"
            " -sha256 -extfile fleet-%zu.ext -out fleet-%zu.pem 2>/dev/null",
            dir, g, 1000 + g, g, g);
    }
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void bench_fleet(size_t n)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    const char *secs = getenv("PW_BENCH_FLEET_SECONDS");
    unsigned window_s = secs ? (unsigned)atoi(secs) : 240;
    char work[512], pki[512];
    snprintf(work, sizeof(work), "%s/pw-bench-collector-%d", tmp, (int)getpid());
    snprintf(pki, sizeof(pki), "%s/bench-pki", PW_BENCH_BIN_DIR);
    bp_system("mkdir -p %s", work);
    bp_pki(pki, NULL, 0);
    make_fleet_pki(pki, n);

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl); /* the collector inherits it */
        if (rl.rlim_cur < n + 256)
            fprintf(stderr, "bench_collector: only %llu file descriptors\n",
                    (unsigned long long)rl.rlim_cur);
    }

    /* PW_BENCH_FLEET_EXPORT=1: remote write on (defaults of the export policy, a disk queue)
     * into Debian's VictoriaMetrics, for export.fleet_10k_ack_p99_ms */
    int export = getenv("PW_BENCH_FLEET_EXPORT") && atoi(getenv("PW_BENCH_FLEET_EXPORT")) != 0;
    pid_t vm = -1;
    int vm_port = 0;
    char rw_url[128], rw_q[600], vm_dir[600], vm_addr[64], vm_log[600];
    if (export) {
        vm_port = bp_free_port();
        snprintf(vm_dir, sizeof(vm_dir), "-storageDataPath=%s/vm", work);
        snprintf(vm_addr, sizeof(vm_addr), "-httpListenAddr=127.0.0.1:%d", vm_port);
        snprintf(vm_log, sizeof(vm_log), "%s/vm.log", work);
        /* the CHECK below counts every exported series: ~1 M, past VM's default 300,000 */
        char *vargv[] = {
            "/usr/bin/victoria-metrics",           vm_dir, vm_addr, "-loggerLevel=ERROR",
            "-search.maxUniqueTimeseries=5000000", NULL};
        vm = bp_spawn(vargv, vm_log);
        for (int i = 0; i < 300 && !bp_port_open(vm_port); i++)
            bp_sleep_ms(100);
        snprintf(rw_url, sizeof(rw_url), "--remote_write.url=http://127.0.0.1:%d/api/v1/write",
                 vm_port);
        snprintf(rw_q, sizeof(rw_q), "--remote_write.queue_dir=%s/rw-queue", work);
    }
    const char *const extras[] = {"--agents.max_connections_per_ip=20000", export ? rw_url : NULL,
                                  rw_q, NULL};
    int port = bp_free_port();
    pid_t cpid = bp_collector_spawn_argv(PW_BENCH_BIN_DIR, work, pki, port, extras);
    if (cpid < 0) {
        fprintf(stderr, "bench_collector: fleet figures skipped\n");
        return;
    }

    /* Template samples for the whole run, shared by every agent (each agent applies them to
     * its own table on the collector, as its own stream). */
    fleet_t f;
    memset(&f, 0, sizeof(f));
    uv_loop_t loop;
    uv_loop_init(&loop);
    f.loop = &loop;
    f.n = n;
    f.ntmpl = (size_t)((n / 100 + 30 + window_s + 30) * 1000 / INTERVAL) + 4;
    size_t *offs = calloc(f.ntmpl + 1, sizeof(*offs));
    pw_buf_t frames;
    pw_buf_init(&frames, (size_t)1 << 30);
    make_stream(0, f.ntmpl, &frames, offs);
    f.tmpl = calloc(f.ntmpl, sizeof(*f.tmpl));
    pw_diag_t d;
    for (size_t i = 0; i < f.ntmpl; i++)
        if (pw_codec_unpack(frames.data + offs[i] + PW_FRAME_HEADER,
                            offs[i + 1] - offs[i] - PW_FRAME_HEADER, &f.tmpl[i], &d) != 0) {
            fprintf(stderr, "bench_collector: template: %s\n", d.msg);
            exit(1);
        }
    pw_buf_close(&frames);
    free(offs);
    pw_buf_init(&f.out, PW_FRAME_MAX_DEFAULT + 16);
    size_t groups = (n + GROUP - 1) / GROUP;
    f.ctx = calloc(groups, sizeof(*f.ctx));
    for (size_t g = 0; g < groups; g++) {
        char c[700], k[700], a[700];
        snprintf(a, sizeof(a), "%s/ca.pem", pki);
        snprintf(c, sizeof(c), "%s/fleet/fleet-%zu.pem", pki, g);
        snprintf(k, sizeof(k), "%s/fleet/fleet.key", pki);
        pw_tls_ctx_opts_t o = {.role = PW_TLS_CLIENT, .ca_file = a, .cert_file = c, .key_file = k};
        if (pw_tls_ctx_new(&f.ctx[g], &o, &d) != 0) {
            fprintf(stderr, "bench_collector: %s\n", d.msg);
            exit(1);
        }
    }
    pw_net_addr_from_literal("127.0.0.1", (uint16_t)port, &f.addr);
    f.agents = calloc(n, sizeof(*f.agents));
    srand(12345);
    for (size_t i = 0; i < n; i++) {
        agent_t *a = &f.agents[i];
        a->f = &f;
        a->idx = (uint32_t)i;
        a->phase_ms = (uint64_t)rand() % INTERVAL;
        for (int j = 0; j < 16; j++) {
            a->agent_id[j] = (uint8_t)rand();
            a->boot_id[j] = (uint8_t)rand();
        }
        pw_frame_reader_init(&a->reader, 0);
        uv_timer_init(&loop, &a->timer);
        a->timer.data = a;
    }
    uv_timer_init(&loop, &f.ramp);
    uv_timer_init(&loop, &f.phase);
    f.ramp.data = &f;
    double t_start = mono_s();
    uv_timer_start(&f.ramp, on_ramp, 0, 10);
    /* Ramp: until every agent streams (or 10 minutes). */
    while (f.streaming + f.closed < n && mono_s() - t_start < 600 && bp_alive(cpid))
        run_for(&f, 1000);
    double ramp_s = mono_s() - t_start;
    fprintf(stderr, "bench_collector: %zu agents streaming after %.0f s (%zu closed)\n",
            f.streaming, ramp_s, f.closed);
    run_for(&f, 30000); /* warm-up: every agent past its keyframe */
    f.measuring = 1;
    f.t_measure = mono_s();
    struct timeval tv0;
    gettimeofday(&tv0, NULL);
    double c0 = bp_cpu_s(cpid), s0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = mono_s();
    run_for(&f, (uint64_t)window_s * 1000);
    double c1 = bp_cpu_s(cpid), s1 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w1 = mono_s();
    long rss = bp_status_kb(cpid, "VmRSS"), hwm = bp_status_kb(cpid, "VmHWM");
    f.measuring = 0;
    f.done = 1;
    int alive = bp_alive(cpid);
    /* p99 of each 10 s of the window, to see whether a chunk-window boundary (every 15 min of
     * wall time: hosts' 1-h windows are staggered in four groups) shows. */
    size_t nb = window_s / 10 + 1;
    double worst = 0, *bt = malloc((f.nlat + 1) * sizeof(double));
    size_t worst_b = 0;
    fprintf(stderr,
            "bench_collector: p99 per 10 s from %02d:%02d:%02d UTC:", (int)(tv0.tv_sec / 3600 % 24),
            (int)(tv0.tv_sec / 60 % 60), (int)(tv0.tv_sec % 60));
    for (size_t b = 0; bt != NULL && b < nb; b++) {
        size_t m = 0;
        for (size_t i = 0; i < f.nlat; i++)
            if ((size_t)(f.lat_t[i] / 10.0) == b)
                bt[m++] = f.lat[i];
        if (m == 0)
            continue;
        qsort(bt, m, sizeof(*bt), cmp_double);
        double p = bt[(size_t)floor((double)m * 0.99)];
        fprintf(stderr, " %.0f", p);
        if (p > worst)
            worst = p, worst_b = b;
    }
    fprintf(stderr, " ms\n");
    free(bt);
    qsort(f.lat, f.nlat, sizeof(*f.lat), cmp_double);
    /* Samples sent in the window and never acked count as over any latency. */
    if (f.nlat > 0 && alive) {
        printf("CHECK collector.fleet_10k_agents_streaming %zu of %zu (ramp %.0f s, %llu "
               "refused, %llu keyframe requests)\n",
               f.streaming, n, ramp_s, (unsigned long long)f.refused,
               (unsigned long long)f.keyframe_requests);
        printf("BENCH collector.fleet_10k_ack_p50_ms %.1f ms\n", f.lat[f.nlat / 2]);
        printf("BENCH collector.fleet_10k_ack_p99_ms %.1f ms\n",
               f.lat[(size_t)floor((double)f.nlat * 0.99)]);
        printf("BENCH collector.fleet_10k_ack_max_ms %.1f ms\n", f.lat[f.nlat - 1]);
        printf("BENCH collector.fleet_10k_ack_p99_worst_10s_ms %.1f ms (at +%zu s)\n", worst,
               worst_b * 10);
        printf("BENCH collector.fleet_10k_samples_per_s %.0f samples/s\n",
               (double)f.nlat / (w1 - w0));
        printf("BENCH collector.fleet_10k_rss_kb %ld kB\n", rss);
        printf("BENCH collector.fleet_10k_rss_peak_kb %ld kB\n", hwm);
        printf("BENCH collector.fleet_10k_cpu_percent %.1f %%\n", 100.0 * (c1 - c0) / (w1 - w0));
        printf("BENCH collector.fleet_10k_loadgen_cpu_percent %.1f %%\n",
               100.0 * (s1 - s0) / (w1 - w0));
        if (export) {
            printf("BENCH export.fleet_10k_ack_p99_ms %.1f ms\n",
                   f.lat[(size_t)floor((double)f.nlat * 0.99)]);
            bp_system("curl -s 'http://127.0.0.1:%d/api/v1/query' --data-urlencode "
                      "'query=count({__name__=~\"poolwatch_.*\"})' | sed 's/^/CHECK "
                      "export.vm_series /'; echo",
                      vm_port);
        }
    } else {
        fprintf(stderr, "bench_collector: no acked sample (collector %s); see %s/collector.log\n",
                alive ? "running" : "died", work);
    }
    fflush(stdout);
    bp_stop(cpid, 30000);
    if (vm > 0)
        bp_stop(vm, 30000);
    for (size_t i = 0; i < n; i++)
        if (f.agents[i].tls)
            pw_tls_close(f.agents[i].tls);
    uv_walk(&loop, close_walk, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (size_t i = 0; i < n; i++)
        pw_frame_reader_close(&f.agents[i].reader);
    for (size_t g = 0; g < groups; g++)
        pw_tls_ctx_free(f.ctx[g]);
    for (size_t i = 0; i < f.ntmpl; i++)
        pw_codec_free(f.tmpl[i]);
    free(f.tmpl);
    free(f.ctx);
    free(f.agents);
    free(f.lat);
    free(f.lat_t);
    pw_buf_close(&f.out);
    bp_system("rm -rf %s", work);
}

int main(void)
{
    bench_apply();
    const char *na = getenv("PW_BENCH_FLEET_AGENTS");
    size_t n = na ? (size_t)atol(na) : 10000;
    if (n > 0)
        bench_fleet(n);
    return 0;
}
