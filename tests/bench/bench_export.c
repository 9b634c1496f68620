/* bench_export.c: what remote write costs one collector core, and its bytes on the wire, with
 * the export policy of issue 18 (remote_write.h): 1,000 hosts x 2,000 (tag, pool) rows (a
 * vocabulary of 3,000 four-character tags), 5 % of each host's rows changing per sample,
 * fed through ingest (the collector test double); at each round every host sends one sample
 * and the writer (pw_remote_write_collect: selection, encoding, snappy, queue) sends what it
 * picked over HTTP to a sink process on loopback that answers 204 and counts every byte it
 * receives (request lines, headers and bodies: the wire). Defaults of the policy: top 20,
 * movers, hold 15 min, cap 100 rows, leak series; 2,000 series per request.
 *   BENCH export.remote_write_samples_per_s  samples accepted by the sink per second of this
 *        process's CPU time (one thread: the loop) over the rounds after the first (the first
 *        encode of a host has no movers), from collect to the last answer
 *   BENCH export.bytes_per_sample            bytes the sink received / samples
 *   CHECK export.series_per_host              samples per host and round (rows sent x 2 + host)
 * The ingest of the samples is not timed. PW_BENCH_EXPORT_HOSTS, _ROUNDS change the size.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "../collector/double.h"
#include "bench_proc.h"
#include "alloc.h"
#include "delta.h"
#include "fleet.h"
#include "remote_write.h"

#define ROWS  2000
#define VOCAB 3000

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the sink: HTTP/1.1, one request per connection, 204, counts bytes ---------------------- */

static volatile sig_atomic_t sink_stop;
static void on_term(int sig)
{
    (void)sig;
    sink_stop = 1;
}

static void sink_run(int lfd, int report)
{
    signal(SIGTERM, on_term);
    unsigned long long total = 0;
    static char buf[1 << 16];
    while (!sink_stop) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            continue;
        size_t have = 0, head = 0, need = SIZE_MAX;
        char hdr[4096];
        for (;;) {
            ssize_t n = read(c, buf, sizeof(buf));
            if (n <= 0)
                break;
            total += (unsigned long long)n;
            if (head == 0) {
                size_t k = have + (size_t)n < sizeof(hdr) ? (size_t)n : sizeof(hdr) - 1 - have;
                memcpy(hdr + have, buf, k);
                hdr[have + k] = '\0';
                char *e = strstr(hdr, "\r\n\r\n");
                char *cl = strstr(hdr, "Content-Length:");
                if (e != NULL && cl != NULL) {
                    head = (size_t)(e + 4 - hdr);
                    need = head + strtoull(cl + 15, NULL, 10);
                }
            }
            have += (size_t)n;
            if (have >= need)
                break;
        }
        static const char ok[] = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: "
                                 "close\r\n\r\n";
        if (write(c, ok, sizeof(ok) - 1) < 0)
            perror("sink");
        close(c);
    }
    if (write(report, &total, sizeof(total)) != sizeof(total))
        _exit(1);
    _exit(0);
}

static pid_t sink_start(int *port, int *report)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int p[2];
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0 || pipe(p) != 0) {
        perror("bench_export: sink");
        exit(1);
    }
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        sink_run(lfd, p[1]);
    }
    close(lfd);
    close(p[1]);
    *report = p[0];
    return pid;
}

/* ---- the fleet ------------------------------------------------------------------------------ */

typedef struct host_s {
    pw_host_t *h;
    pw_delta_enc_t e;
    uint64_t bytes[ROWS];
} host_t;

static uint32_t rnd(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void on_wake(uv_timer_t *t)
{
    (void)t;
}

int main(void)
{
    const char *e = getenv("PW_BENCH_EXPORT_HOSTS");
    int hosts = e ? atoi(e) : 1000;
    e = getenv("PW_BENCH_EXPORT_ROUNDS");
    int rounds = e ? atoi(e) : 6;
    static char vocab[VOCAB][5];
    for (int i = 0; i < VOCAB; i++)
        snprintf(vocab[i], sizeof(vocab[i]), "%c%c%02d", 'A' + i % 26, 'a' + (i / 26) % 26,
                 (i / 676) % 100);
    int port, report;
    pid_t sink = sink_start(&port, &report);

    pw_double_t d;
    if (pw_double_open(&d) != 0)
        return 1;
    host_t *hs = calloc((size_t)hosts, sizeof(*hs));
    uint32_t x = 88172645u;
    for (int i = 0; i < hosts; i++) {
        char name[40];
        snprintf(name, sizeof(name), "srv-%05d.corp.example", i);
        hs[i].h = pw_double_stream(&d, name, 64, 1);
        if (hs[i].h == NULL || pw_delta_enc_init(&hs[i].e, 64) != 0)
            return 1;
        for (int r = 0; r < ROWS; r++)
            hs[i].bytes[r] = 4096 + (uint64_t)(rnd(&x) % 2000000) * 16;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", port);
    pw_remote_write_opts_t o = {.url = url,
                                .tags_per_host = 20,
                                .policy = {.movers = 1, .max_tags_per_host = 100, .leak_series = 1},
                                .max_queue = 100000,
                                .max_series_per_request = 2000,
                                .max_sample_age_ms = UINT64_MAX,
                                .max_clock_skew_ms = UINT64_MAX};
    pw_remote_write_t *w;
    pw_diag_t dg;
    if (pw_remote_write_new(&loop, &o, &w, &dg) != 0) {
        fprintf(stderr, "bench_export: %s\n", dg.msg);
        return 1;
    }
    const pw_fleet_t *f = pw_ingest_fleet(d.ing);
    uint64_t t0 = wall_ms() - (uint64_t)rounds * 15000;
    double cpu = 0;
    uint64_t samples0 = 0, first_round = 0;
    pw_sample_t s;
    pw_sample_init(&s);
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < hosts; i++) {
            pw_sample_reset(&s);
            s.seq = (uint64_t)k + 1;
            s.timestamp_ms = t0 + (uint64_t)k * 15000 + (uint64_t)i;
            uint64_t np = 0;
            for (int r = 0; r < ROWS; r++) {
                if (k > 0 && rnd(&x) % 20 == 0) /* 5 % of the rows change */
                    hs[i].bytes[r] += (rnd(&x) % 64) * 16 + 16;
                np += hs[i].bytes[r];
                uint64_t diff = hs[i].bytes[r] / 64;
                pw_sample_add(&s, vocab[(r * 7 + i) % VOCAB], 4,
                              r % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED, diff + 10, 10, diff,
                              hs[i].bytes[r]);
            }
            s.totals.nonpaged_bytes = np / 2;
            s.totals.paged_bytes = np / 2;
            if (pw_double_send(&d, &hs[i].e, hs[i].h, &s) != 0)
                return 1;
        }
        pw_remote_write_stats_t st;
        pw_remote_write_get_stats(w, &st);
        uint64_t before = st.samples;
        double c0 = cpu_s();
        if (pw_remote_write_collect(w, f, d.an) < 0)
            return 1;
        for (;;) {
            pw_remote_write_get_stats(w, &st);
            if (st.queued == 0)
                break;
            uv_timer_start(&tick, on_wake, 1000, 0);
            uv_run(&loop, UV_RUN_ONCE);
        }
        double c1 = cpu_s();
        if (k == 0) {
            first_round = st.samples - before;
            samples0 = st.samples;
        } else {
            cpu += c1 - c0;
        }
        fprintf(stderr, "# round %d: %llu samples, %.3f s CPU, rows %llu, capped %llu\n", k,
                (unsigned long long)(st.samples - before), c1 - c0,
                (unsigned long long)st.rows_exported, (unsigned long long)st.rows_capped);
    }
    pw_remote_write_stats_t st;
    pw_remote_write_get_stats(w, &st);
    uint64_t measured = st.samples - samples0;
    kill(sink, SIGTERM);
    bp_port_open(port); /* wakes the sink's accept */
    unsigned long long wire = 0;
    if (read(report, &wire, sizeof(wire)) != sizeof(wire))
        wire = 0;
    waitpid(sink, NULL, 0);
    printf("CHECK export.series_per_host %.1f (first round, no movers yet: %.1f)\n",
           (double)measured / (double)(rounds - 1) / hosts, (double)first_round / hosts);
    printf("CHECK export.failed_or_dropped %llu\n",
           (unsigned long long)(st.failed_samples + st.dropped_samples));
    printf("BENCH export.remote_write_samples_per_s %.0f samples/s\n", (double)measured / cpu);
    printf("BENCH export.bytes_per_sample %.2f bytes\n", (double)wire / (double)st.samples);
    pw_remote_write_close(w);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    pw_sample_close(&s);
    for (int i = 0; i < hosts; i++)
        pw_delta_enc_close(&hs[i].e);
    free(hs);
    pw_double_close(&d);
    return 0;
}
