/* bench_store.c: the collector's history store (collector/store/store.h) on a real file, and
 * Debian's VictoriaMetrics beside it on the same generated samples (issue 17).
 *
 * Load: 3,000-row Windows-like tables (allocs 10^2..10^7, outstanding 1..10^4, 16..4096 bytes
 * per allocation, as bench_codec), 5 % of the rows changing per sample, seeded; each host
 * sends every 10 s, hosts spread evenly over the interval; the store commits as the
 * collector's group-commit policy says (collector/ingest/commit.h with the collector's default
 * [store] commit_interval, commit_max_samples and commit_max_bytes, on the simulated arrival
 * times), then compacts sealed chunks for up to PW_LISTENER_COMPACT_BUDGET_MS (20 ms), and
 * once a compaction tick while nothing is pending, as the listener does. VictoriaMetrics gets the
 * same rows as pw_allocs, pw_frees and pw_bytes{host,tag,pool} (JSON-line import, 10 minutes a
 * request).
 *
 * Two runs, both sides each:
 *  - fleet: HOSTS x 3,000 rows x HOURS through the collector's path: each host's agent encodes
 *    its table into a frame (the agent's CPU, not counted), the collector unpacks it, applies
 *    it to the host's decoder and hands both to pw_store_put_frame (ingest/ingest.c): ingest
 *    CPU (store.ingest_ns_per_update: unpack, apply, put, commits, compaction with the merge of
 *    each host's day into day pages; stderr: commits,
 *    samples a commit, each sample's wait for its commit, p50 and p99), disk with du
 *    after each side's flush
 *    (poolwatch: flush, TRUNCATE checkpoint, close: file + WAL + free pages; VictoriaMetrics:
 *    force_flush + force_merge, then du of its data directory), a host's table, one tag's fleet
 *    aggregate; the WAL's largest size after any commit.
 *  - history: one host x 3,000 rows x DAYS in a store that also holds the fleet run's hosts,
 *    through pw_store_put (the full table, re-encoded by the store, as an import does; a
 *    backfill committed every 1,000 puts: store.ingest_put_ns_per_update):
 *    one (host, tag, pool) over 7 days at 1-min and 15-min steps, p50 and p99 over 50 random
 *    rows. VictoriaMetrics holds pw_bytes only here unless PW_BENCH_VM_7D_METRICS=3 (text
 *    import of 3 x 181 million samples takes long on 2 cores).
 * A running collector merges each host's chunk pages of a UTC day into day pages once the day is
 * over for the host (its first chunk of the next day), in the compaction after a group commit:
 * over a day every sample is merged once. So the fleet's counted window (HOURS) holds exactly
 * as much merge work per update as a whole day does: it crosses the midnight of the history's
 * last day and ends 1 minute after the last host's day ended (hosts' chunk windows are
 * staggered by host id mod 4 quarter hours: win-01 .. win-20 are ids 1 .. 20, so their days end
 * 0, 15, 30 or 45 minutes after midnight), and an uncounted warm-up before it stores the rest
 * of the hosts' day, so that the samples merged inside the window (the day before midnight,
 * from the warm-up's start) are as many as the samples put inside it (HOURS of the fleet).
 * CHECK store.fleet_day_merges prints both (their ratio: 1 for a day) and the merges' share of
 * the counted CPU. A merge of 3 h of pages costs at least 1/8 of a merge of 24 h (its fixed
 * costs per page and per group are spread over fewer samples): the window does not
 * undercount. du and VictoriaMetrics count every stored sample, warm-up included.
 * poolwatch is timed in-process (the store API, no HTTP); VictoriaMetrics over loopback HTTP
 * including its JSON (what a client gets). CPU: poolwatch's process CPU inside the store calls
 * (the checkpointer thread included while they run); VictoriaMetrics' process CPU (utime +
 * stime) over its import and flush.
 * Environment: PW_BENCH_HOSTS (20), PW_BENCH_HOURS (3), PW_BENCH_DAYS (7), PW_BENCH_DIR (/tmp),
 * PW_BENCH_SMALL=1 (4 hosts, 1 h, 2 days), PW_BENCH_VM=0 (poolwatch only),
 * PW_BENCH_VM_PORT (18428), PW_BENCH_KEEP=1 (leave the files).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "collector.h"
#include "commit.h"
#include "delta.h"
#include "frame.h"
#include "listener.h"
#include "store.h"

/* Under callgrind (valgrind --tool=callgrind --toggle-collect=... of the counted calls) the
 * fleet's counters start with the counted window and are dumped at its end. */
#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s)
#endif

#define TAGS      3000
#define CHURN_PCT 5
#define INTERVAL  10000ull
#define T0        1700001000000ull
#define DAY       86400000ull
#define WINDOW    3600000ull /* the store's default chunk window */
#define QUARTER   900000ull  /* its stagger: host id mod 4 quarters (store.md) */
/* after the last host's day ended: its chunk sealed, paged and merged by the compactions after
 * the next group commits */
#define MERGE_SLACK 60000ull

typedef struct {
    uint64_t rng;
    uint64_t allocs[TAGS], diff[TAGS], size[TAGS];
    char tag[TAGS][4];
    pw_sample_t s;
    uint64_t seq;
} gen_t;

static uint64_t rnd(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t logu(uint64_t *st, double lo, double hi)
{
    double u = (double)(rnd(st) >> 11) / (double)(1ull << 53);
    return (uint64_t)exp(log(lo) + u * (log(hi) - log(lo)));
}

static void gen_init(gen_t *g, uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    g->rng = seed;
    uint64_t names = 7; /* the same tag names on every host */
    for (int i = 0; i < TAGS; i++) {
        static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
        g->tag[i][0] = (char)('A' + rnd(&names) % 26);
        g->tag[i][1] = digits[i / 1296];
        g->tag[i][2] = digits[i / 36 % 36];
        g->tag[i][3] = digits[i % 36]; /* distinct */
        g->diff[i] = logu(&g->rng, 1, 1e4);
        g->allocs[i] = g->diff[i] + logu(&g->rng, 1e2, 1e7);
        g->size[i] = logu(&g->rng, 16, 4096) & ~15ull;
        if (g->size[i] == 0)
            g->size[i] = 16;
    }
    pw_sample_init(&g->s);
}

/* The next table of this host at `ts`. */
static void gen_next(gen_t *g, uint64_t ts)
{
    if (g->seq > 0)
        for (int c = 0; c < TAGS * CHURN_PCT / 100; c++) {
            int i = (int)(rnd(&g->rng) % TAGS);
            uint64_t a = 1 + rnd(&g->rng) % 50;
            int64_t dd = (int64_t)(rnd(&g->rng) % 11) - 5;
            if ((int64_t)g->diff[i] + dd < 0)
                dd = 0;
            if (dd > (int64_t)a) /* frees is a cumulative counter: it never goes back */
                dd = (int64_t)a;
            g->allocs[i] += a;
            g->diff[i] = (uint64_t)((int64_t)g->diff[i] + dd);
        }
    pw_sample_reset(&g->s);
    g->s.seq = ++g->seq;
    g->s.timestamp_ms = ts;
    g->s.totals.nonpaged_bytes = 200u << 20;
    for (int i = 0; i < TAGS; i++)
        pw_sample_add(&g->s, g->tag[i], 4, (pw_pool_t)(i % 2), g->allocs[i],
                      g->allocs[i] - g->diff[i], g->diff[i], g->diff[i] * g->size[i]);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc, const pw_diag_t *d)
{
    fprintf(stderr, "bench_store: %s: %s (%s)\n", what, pw_strerror(rc), d->msg);
    exit(1);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double sys_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static uint64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Bytes `du -sB1 dir` reports (allocated blocks, what the disk holds). */
static uint64_t du_bytes(const char *dir)
{
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "du -sB1 '%s' 2>/dev/null", dir);
    FILE *f = popen(cmd, "r");
    unsigned long long v = 0;
    if (f == NULL || fscanf(f, "%llu", &v) != 1)
        v = 0;
    if (f != NULL)
        pclose(f);
    return v;
}

static void run(const char *cmd)
{
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_store: %s failed\n", cmd);
        exit(1);
    }
}

/* ---- the poolwatch side ------------------------------------------------------------------ */

typedef struct {
    int hosts;
    int first;        /* index of the first host (names win-NN) */
    uint64_t samples; /* per host */
    uint64_t t_start; /* time of sample 0 */
    unsigned every;   /* commit every N puts (0: the collector's group-commit policy, `policy`,
                         on the arrival times) */
    pw_commit_policy_t policy;
    const char *wal;     /* WAL path, measured after each commit */
    int frames;          /* 1: the collector's path (an agent's frame, decoded, pw_store_put_frame);
                            0: pw_store_put of the full table (imports, tools) */
    uint64_t count_from; /* samples stamped before this are a warm-up: stored, not counted */
    double cpu;          /* out: process CPU inside the store calls from count_from on, s */
    double sys;          /* out: the process's system CPU over the whole run (the store's calls
                            are its only system calls), s */
    double wall;         /* out: from count_from on */
    uint64_t wal_max;    /* out: largest WAL after a commit */
    uint64_t updates;    /* out: host x row x sample, all stored */
    uint64_t counted;    /* out: the same from count_from on */
    pw_store_stats_t at_count; /* out: the store's counters when counting began */
    uint64_t commits;          /* out: group commits */
    double *wait_ms;           /* out (policy runs): each sample's arrival to the end of its commit:
                                  the policy's wait (arrival time) + the commit's wall time */
    size_t n_wait;
} feed_t;

/* The group commit as the listener runs it (pw_listener_commit): commit, then compaction of
 * closed chunks within the listener's budget; the WAL's size after it. */
static void group_commit(pw_store_t *st, feed_t *f)
{
    pw_diag_t d;
    int rc;
    if ((rc = pw_store_commit(st, &d)) != 0)
        die("commit", rc, &d);
    int64_t nc = pw_store_compact(st, PW_LISTENER_COMPACT_BUDGET_MS, &d);
    if (nc < 0)
        die("compact", (int)nc, &d);
    uint64_t w = file_size(f->wal);
    f->wal_max = w > f->wal_max ? w : f->wal_max;
    f->commits++;
}

/* The policy's group commit at `at_ms` (arrival clock): each pending sample's wait (from
 * arrived[], indexed from f->n_wait) is its wait on that clock plus the commit's wall time. */
static void policy_commit(pw_store_t *st, feed_t *f, pw_commit_t *pol, const uint64_t *arrived,
                          uint64_t at_ms)
{
    double w0 = now_s();
    group_commit(st, f);
    double took = (now_s() - w0) * 1e3;
    for (size_t i = f->n_wait; i < f->n_wait + pw_commit_pending(pol); i++)
        f->wait_ms[i] = (double)(at_ms - arrived[i]) + took;
    f->n_wait += pw_commit_pending(pol);
    pw_commit_done(pol);
}

static void host_name(char *out, size_t n, int h)
{
    snprintf(out, n, "win-%02d", h);
}

/* Feeds f->hosts hosts (seeds 1000 + host index) into `st`. */
static void feed(pw_store_t *st, feed_t *f)
{
    gen_t *g = calloc((size_t)f->hosts, sizeof(*g));
    if (g == NULL)
        exit(1);
    char names[64][32];
    uint8_t agent[64][16], boot[16] = {0xb0};
    for (int h = 0; h < f->hosts; h++) {
        gen_init(&g[h], 1000 + (uint64_t)(f->first + h));
        host_name(names[h], sizeof(names[h]), f->first + h);
        memset(agent[h], f->first + h + 1, 16);
    }
    /* the collector's path: each host's agent encodes (its own CPU, not timed), the
     * collector unpacks the frame and applies it to the host's decoder, the store keeps it */
    pw_delta_enc_t *enc = calloc((size_t)f->hosts, sizeof(*enc));
    pw_delta_dec_t *dec = calloc((size_t)f->hosts, sizeof(*dec));
    int *stored = calloc((size_t)f->hosts, sizeof(*stored));
    pw_buf_t frame;
    pw_buf_init(&frame, 64u << 20);
    if (enc == NULL || dec == NULL || stored == NULL)
        exit(1);
    for (int h = 0; f->frames && h < f->hosts; h++)
        if (pw_delta_enc_init(&enc[h], 32) != 0 || pw_delta_dec_init(&dec[h], 32, 0) != 0)
            exit(1);
    pw_diag_t d;
    double t = now_s(), sys0 = sys_s();
    int counting = 0;
    /* the collector's loop (listener.c): a commit whose deadline came runs before the next
     * arrival; a bound reached commits at once; while nothing is pending the compaction tick
     * compacts, at most once a tick */
    pw_commit_t pol;
    pw_commit_init(&pol, &f->policy);
    uint64_t last_compact = f->t_start, *arrived = NULL;
    size_t cap_wait = 0;
    unsigned pending = 0;
    if (!f->every) {
        cap_wait = (size_t)(f->samples * (uint64_t)f->hosts);
        f->wait_ms = calloc(cap_wait, sizeof(*f->wait_ms));
        arrived = calloc(cap_wait, sizeof(*arrived));
        if (f->wait_ms == NULL || arrived == NULL)
            exit(1);
    }
    for (uint64_t k = 0; k < f->samples; k++)
        for (int h = 0; h < f->hosts; h++) {
            uint64_t ts = f->t_start + k * INTERVAL + (uint64_t)h * INTERVAL / (uint64_t)f->hosts;
            if (!counting && ts >= f->count_from) { /* the warm-up is over */
                counting = 1;
                CALLGRIND_ZERO_STATS;
                if (pw_store_stats(st, &f->at_count, &d) != 0)
                    die("stats", -1, &d);
                t = now_s(), sys0 = sys_s();
            }
            f->counted += counting ? TAGS : 0;
            double cpu0 = f->cpu;
            gen_next(&g[h], ts);
            pw_store_host_t hi = {names[h], agent[h], 16,   boot, 16, "windows 10.0", 32,
                                  0,        0,        NULL, NULL, 0,  NULL,           NULL};
            int rc;
            double c = cpu_s();
            if (!f->every && pw_commit_due(&pol, ts)) {
                last_compact = pw_commit_deadline_ms(&pol);
                policy_commit(st, f, &pol, arrived, last_compact);
            } else if (!f->every && pw_commit_pending(&pol) == 0 &&
                       ts - last_compact >= PW_LISTENER_COMPACT_TICK_MS) {
                int64_t nc = pw_store_compact(st, PW_LISTENER_COMPACT_BUDGET_MS, &d);
                if (nc < 0)
                    die("compact", (int)nc, &d);
                last_compact = ts;
            }
            f->cpu += cpu_s() - c;
            size_t put_bytes = 0;
            if (f->frames) {
                const Poolwatch__V1__Sample *msg;
                pw_buf_reset(&frame);
                if ((rc = pw_delta_encode(&enc[h], &g[h].s, 0, &msg, &d)) != 0 ||
                    (rc = pw_codec_pack_sample(msg, 64u << 20, &frame)) != 0)
                    die("encode", rc, &d);
                c = cpu_s();
                const uint8_t *payload = frame.data + PW_FRAME_HEADER;
                size_t len = frame.len - PW_FRAME_HEADER;
                put_bytes = len;
                Poolwatch__V1__Envelope *env;
                if ((rc = pw_codec_unpack(payload, len, &env, &d)) != 0 ||
                    (rc = pw_delta_apply(&dec[h], env->sample, NULL, &d)) != 0)
                    die("decode", rc, &d);
                const Poolwatch__V1__Sample *in = env->sample;
                int follows = stored[h] && !in->keyframe && !in->dict_reset;
                rc = pw_store_put_frame(st, &hi, &dec[h], payload, len, in->base_seq, follows, 0,
                                        &d);
                stored[h] = rc == 0;
                pw_codec_free(env);
            } else {
                c = cpu_s();
                rc = pw_store_put(st, &hi, &g[h].s, 0, &d);
            }
            if (rc != 0)
                die("put", rc, &d);
            if (f->every) {
                if (++pending >= f->every) {
                    group_commit(st, f);
                    pending = 0;
                }
            } else {
                arrived[f->n_wait + pw_commit_pending(&pol)] = ts;
                if (pw_commit_add(&pol, ts, put_bytes)) {
                    policy_commit(st, f, &pol, arrived, ts);
                    last_compact = ts;
                }
            }
            f->cpu += cpu_s() - c;
            if (!counting)
                f->cpu = cpu0;
        }
    for (int h = 0; f->frames && h < f->hosts; h++) {
        pw_delta_enc_close(&enc[h]);
        pw_delta_dec_close(&dec[h]);
    }
    free(enc);
    free(dec);
    free(stored);
    pw_buf_close(&frame);
    double c = cpu_s();
    int rc = pw_store_commit(st, &d);
    int64_t nc = rc ? 0 : pw_store_compact(st, 1000000, &d);
    if (rc != 0 || nc < 0)
        die("commit", rc ? rc : (int)nc, &d);
    f->cpu += cpu_s() - c;
    CALLGRIND_DUMP_STATS_AT("counted");
    /* the samples of the last commit waited for the end of the run: not counted */
    pw_commit_done(&pol);
    free(arrived);
    f->wall = now_s() - t;
    f->sys = sys_s() - sys0;
    f->updates = (uint64_t)f->hosts * f->samples * TAGS;
    for (int h = 0; h < f->hosts; h++)
        pw_sample_close(&g[h].s);
    free(g);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_d);
    int i = (int)ceil(p * n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* The tag of row `i` (the names gen_init gives every host). */
static void tag_of(int i, char tag[5])
{
    gen_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        exit(1);
    gen_init(g, 1);
    memcpy(tag, g->tag[i], 4);
    tag[4] = '\0';
    pw_sample_close(&g->s);
    free(g);
}

/* ---- the VictoriaMetrics side (loopback HTTP/1.1, Connection: close) ---------------------- */

static int vm_port = 18428;

/* Sends one request; reads the whole answer into `resp` (may be NULL: discarded). Returns the
 * HTTP status, or -1. */
static int http(const char *method, const char *path, const char *body, size_t blen, char **resp,
                size_t *rlen)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)vm_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char hdr[2300];
    int hn = snprintf(hdr, sizeof(hdr),
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, blen);
    const char *parts[2] = {hdr, body};
    size_t lens[2] = {(size_t)hn, blen};
    for (int p = 0; p < 2; p++)
        for (size_t off = 0; off < lens[p];) {
            ssize_t w = write(fd, parts[p] + off, lens[p] - off);
            if (w <= 0) {
                close(fd);
                return -1;
            }
            off += (size_t)w;
        }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 65536 > cap && (buf = realloc(buf, cap *= 2)) == NULL)
            exit(1);
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = -1;
    if (resp != NULL) {
        *resp = buf;
        *rlen = n;
    } else {
        free(buf);
    }
    return status;
}

static pid_t vm_start(const char *dir)
{
    char arg_dir[700], arg_addr[64];
    snprintf(arg_dir, sizeof(arg_dir), "-storageDataPath=%s", dir);
    snprintf(arg_addr, sizeof(arg_addr), "-httpListenAddr=127.0.0.1:%d", vm_port);
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        /* samples from 2023: retention must reach back; no dedup, no cache of answers */
        execl("/usr/bin/victoria-metrics", "victoria-metrics", arg_dir, arg_addr,
              "-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=ERROR", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        usleep(100000);
        if (http("GET", "/health", "", 0, NULL, NULL) == 200)
            return pid;
    }
    fprintf(stderr, "bench_store: victoria-metrics did not start\n");
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    exit(1);
}

static void vm_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static double proc_cpu_s(pid_t pid)
{
    char p[64], buf[1024];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *c = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (c == NULL ||
        sscanf(c + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct {
    char *p;
    size_t n, cap;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (w >= 0 && (size_t)w < b->cap - b->n) {
            b->n += (size_t)w;
            return;
        }
        b->cap = b->cap ? b->cap * 2 : 1 << 20;
        if ((b->p = realloc(b->p, b->cap)) == NULL)
            exit(1);
    }
}

#define VM_BATCH 60 /* samples per host and request: 10 minutes */

/* Imports the samples feed() would make for f's hosts into VictoriaMetrics (`metrics`: 1 =
 * pw_bytes only, 3 = pw_allocs, pw_frees, pw_bytes), one request per host and 10 minutes. */
static void vm_feed(const feed_t *f, int metrics)
{
    gen_t *g = calloc((size_t)f->hosts, sizeof(*g));
    uint64_t *val = malloc((size_t)VM_BATCH * TAGS * 3 * sizeof(uint64_t));
    if (g == NULL || val == NULL)
        exit(1);
    for (int h = 0; h < f->hosts; h++)
        gen_init(&g[h], 1000 + (uint64_t)(f->first + h));
    sbuf_t b = {0};
    static const char *const names[3] = {"pw_bytes", "pw_allocs", "pw_frees"};
    for (uint64_t k0 = 0; k0 < f->samples; k0 += VM_BATCH) {
        uint64_t nk = f->samples - k0 < VM_BATCH ? f->samples - k0 : VM_BATCH;
        for (int h = 0; h < f->hosts; h++) {
            uint64_t ts0 = f->t_start + (uint64_t)h * INTERVAL / (uint64_t)f->hosts;
            for (uint64_t k = 0; k < nk; k++) {
                gen_next(&g[h], ts0 + (k0 + k) * INTERVAL);
                for (size_t r = 0; r < g[h].s.n; r++) {
                    const pw_entry_t *e = &g[h].s.entries[r];
                    uint64_t *v = &val[((size_t)r * 3) * VM_BATCH + k];
                    v[0] = e->bytes;
                    v[VM_BATCH] = e->allocs;
                    v[2 * VM_BATCH] = e->frees;
                }
            }
            char host[32];
            host_name(host, sizeof(host), f->first + h);
            b.n = 0;
            for (size_t r = 0; r < g[h].s.n; r++) {
                const pw_entry_t *e = &g[h].s.entries[r];
                for (int m = 0; m < metrics; m++) {
                    sb_printf(&b,
                              "{\"metric\":{\"__name__\":\"%s\",\"host\":\"%s\",\"tag\":\"%.4s\","
                              "\"pool\":\"%d\"},\"values\":[",
                              names[m], host, e->tag, (int)e->pool);
                    for (uint64_t k = 0; k < nk; k++)
                        sb_printf(&b, "%s%" PRIu64, k ? "," : "",
                                  val[((size_t)r * 3 + (size_t)m) * VM_BATCH + k]);
                    sb_printf(&b, "],\"timestamps\":[");
                    for (uint64_t k = 0; k < nk; k++)
                        sb_printf(&b, "%s%" PRIu64, k ? "," : "",
                                  (uint64_t)(ts0 + (k0 + k) * INTERVAL));
                    sb_printf(&b, "]}\n");
                }
            }
            if (http("POST", "/api/v1/import", b.p, b.n, NULL, NULL) != 204) {
                fprintf(stderr, "bench_store: victoria-metrics refused an import\n");
                exit(1);
            }
        }
    }
    for (int h = 0; h < f->hosts; h++)
        pw_sample_close(&g[h].s);
    free(g);
    free(val);
    free(b.p);
}

/* VictoriaMetrics' own flush and merge; then waits for the directory to settle (merges go on in
 * the background: du unchanged for 10 s in a row, at most 5 minutes). */
static void vm_flush_merge(const char *dir)
{
    http("GET", "/internal/force_flush", "", 0, NULL, NULL);
    http("GET", "/internal/force_merge", "", 0, NULL, NULL);
    uint64_t prev = 0;
    for (int i = 0, same = 0; i < 300 && same < 10; i++) {
        sleep(1);
        uint64_t now = du_bytes(dir);
        same = now == prev ? same + 1 : 0;
        prev = now;
    }
}

/* One query: ms of wall time for the whole answer. */
static double vm_query_ms(const char *path)
{
    char *resp = NULL;
    size_t n = 0;
    double t = now_s();
    int st = http("GET", path, "", 0, &resp, &n);
    t = (now_s() - t) * 1e3;
    if (st != 200 || strstr(resp, "\"status\":\"success\"") == NULL) {
        fprintf(stderr, "bench_store: %s: HTTP %d %.200s\n", path, st, resp ? resp : "");
        exit(1);
    }
    free(resp);
    return t;
}

/* ---- main -------------------------------------------------------------------------------- */

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? atoi(v) : def;
}

#define QN 50 /* queries per figure */

int main(void)
{
    int small = env_int("PW_BENCH_SMALL", 0);
    int hosts = env_int("PW_BENCH_HOSTS", small ? 4 : 20);
    int hours = env_int("PW_BENCH_HOURS", small ? 1 : 3);
    int days = env_int("PW_BENCH_DAYS", small ? 2 : 7);
    int vm = env_int("PW_BENCH_VM", 1) && access("/usr/bin/victoria-metrics", X_OK) == 0;
    int vm7 = env_int("PW_BENCH_VM_7D_METRICS", 1) == 3 ? 3 : 1;
    vm_port = env_int("PW_BENCH_VM_PORT", 18428);
    const char *base = getenv("PW_BENCH_DIR") ? getenv("PW_BENCH_DIR") : "/tmp";
    if (hosts < 1 || hosts > 63 || hours < 1 || hours > 24 * 30 || days < 1 || days > 30)
        return 2;
    char dir[512], pwdir[600], vmdir[600], path[700], wal[710], cmd[2000];
    snprintf(dir, sizeof(dir), "%s/pw_bench_store_%d", base, (int)getpid());
    snprintf(pwdir, sizeof(pwdir), "%s/pw", dir);
    snprintf(vmdir, sizeof(vmdir), "%s/vm", dir);
    snprintf(path, sizeof(path), "%s/store.db", pwdir);
    snprintf(wal, sizeof(wal), "%s-wal", path);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' '%s'", dir, pwdir, vmdir);
    run(cmd);
    if (!vm)
        fprintf(stderr, "# victoria-metrics not run (PW_BENCH_VM=0 or not installed: apt-get "
                        "install victoria-metrics)\n");
    double load[1] = {0};
    if (getloadavg(load, 1) < 1)
        load[0] = -1;
    fprintf(stderr,
            "# fleet %d hosts x %d rows x %d h, history 1 host x %d rows x %d days, "
            "load %.2f, %ld cores\n",
            hosts, TAGS, hours, TAGS, days, load[0], sysconf(_SC_NPROCESSORS_ONLN));

    /* ---- fleet run ---- */
    pw_store_t *st;
    pw_diag_t d;
    int rc = pw_store_open(path, NULL, &st, &d);
    if (rc != 0)
        die("open", rc, &d);
    /* The fleet's counted window crosses the UTC midnight `mid` of the history's last day and
     * ends once every host's day before it is over (the header says why) */
    uint64_t mid = (T0 + (uint64_t)days * DAY) / DAY * DAY;
    uint64_t stag = 0; /* the mean offset of the fleet's chunk windows */
    for (int h = 1; h <= hosts; h++)
        stag += (uint64_t)(h % (int)(WINDOW / QUARTER)) * QUARTER;
    stag /= (uint64_t)hosts;
    uint64_t count_end = mid + WINDOW - QUARTER + MERGE_SLACK;
    uint64_t count_from = count_end - (uint64_t)hours * 3600000ull;
    uint64_t fleet_t0 = mid + stag - (uint64_t)hours * 3600000ull; /* the warm-up's start */
    fleet_t0 -= fleet_t0 % INTERVAL;
    /* the collector's group-commit policy: its option table's defaults ([store]
     * commit_interval, commit_max_samples, commit_max_bytes) */
    pw_collector_cfg_t ccfg;
    memset(&ccfg, 0, sizeof(ccfg));
    if ((rc = pw_config_defaults(pw_collector_options, &ccfg, &d)) != 0)
        die("collector defaults", rc, &d);
    feed_t ff = {.hosts = hosts,
                 .first = 1,
                 .t_start = fleet_t0,
                 .samples = (count_end - fleet_t0) / INTERVAL,
                 .count_from = count_from,
                 .wal = wal,
                 .frames = 1,
                 .policy = pw_collector_commit_policy(&ccfg)};
    pw_config_free(pw_collector_options, &ccfg);
    feed(st, &ff);
    pw_store_stats_t ss;
    if ((rc = pw_store_flush(st, &d)) != 0 || (rc = pw_store_checkpoint(st, &d)) != 0 ||
        (rc = pw_store_stats(st, &ss, &d)) != 0)
        die("flush", rc, &d);
    pw_store_close(st);
    double cells = (double)ff.updates;
    uint64_t pw_du = du_bytes(pwdir);
    printf("BENCH store.disk_du_bytes_per_tag_interval %.3f B\n", (double)pw_du / cells);
    printf("BENCH store.content_bytes_per_tag_interval %.3f B\n",
           (double)(ss.raw_bytes + ss.rollup_bytes + ss.series_bytes) / cells);
    printf("BENCH store.content_raw_bytes_per_tag_interval %.3f B\n", (double)ss.raw_bytes / cells);
    printf("BENCH store.content_rollup_bytes_per_tag_interval %.3f B\n",
           (double)ss.rollup_bytes / cells);
    printf("BENCH store.content_series_bytes_per_tag_interval %.3f B\n",
           (double)ss.series_bytes / cells);
    double counted = (double)ff.counted;
    printf("BENCH store.ingest_ns_per_update %.1f ns\n", ff.cpu * 1e9 / counted);
    printf("BENCH collector.durable_updates_per_s %.0f updates/s\n", counted / ff.wall);
    /* the day's merges inside the counted window, against a whole day's (header) */
    double merged = 0;
    for (int h = 0; h < hosts; h++) {
        uint64_t day_end = mid + (uint64_t)((h + 1) % (int)(WINDOW / QUARTER)) * QUARTER;
        uint64_t first = fleet_t0 + (uint64_t)h * INTERVAL / (uint64_t)hosts;
        merged += (double)((day_end - first + INTERVAL - 1) / INTERVAL) * TAGS;
    }
    double merge_s = (double)(ss.merge_us_total - ff.at_count.merge_us_total) / 1e6;
    printf("CHECK store.fleet_day_merges %" PRIu64 " merges (host, 32 tags, day), %.2f s of the "
           "counted %.2f s ingest CPU (%.1f %%, %.1f ns per counted update; wall time); "
           "tag-intervals merged / counted %.3f (a day: 1, each sample merged once)\n",
           ss.merges - ff.at_count.merges, merge_s, ff.cpu, 100.0 * merge_s / ff.cpu,
           merge_s * 1e9 / counted, merged / counted);
    printf("BENCH collector.commit_ms_max %.1f ms\n", (double)ss.commit_us_max / 1e3);
    printf("BENCH collector.chunk_close_ms_mean %.1f ms\n",
           ss.closes ? (double)ss.close_us_total / 1e3 / (double)ss.closes : 0.0);
    printf("BENCH collector.chunk_close_ms_max %.1f ms\n", (double)ss.close_us_max / 1e3);
    fprintf(stderr,
            "# fleet: %.1f s wall, %.2f s CPU in the store (%.2f s of it system), %" PRIu64
            " commits, %" PRIu64 " chunks, du %" PRIu64 " B (file %" PRIu64 ", free %" PRIu64 ")\n",
            ff.wall, ff.cpu, ff.sys, ss.commits, ss.chunks, pw_du, ss.db_bytes, ss.free_bytes);
    /* what the policy costs in ack latency: a sample's arrival to the end of its commit
     * (the wait on the arrival clock plus the commit's wall time; no network) */
    fprintf(stderr,
            "# fleet group commits: policy wait %" PRIu64 " ms / %" PRIu64 " samples / %" PRIu64
            " B; %" PRIu64 " commits, %.2f samples a commit; ack wait p50 %.1f ms, p99 %.1f ms\n",
            ff.policy.max_wait_ms, ff.policy.max_samples, ff.policy.max_bytes, ff.commits,
            ff.commits ? (double)ff.n_wait / (double)ff.commits : 0.0,
            pct(ff.wait_ms, (int)ff.n_wait, 0.5), pct(ff.wait_ms, (int)ff.n_wait, 0.99));
    free(ff.wait_ms);

    /* ---- history run: one host over `days`, in the same store ---- */
    if ((rc = pw_store_open(path, NULL, &st, &d)) != 0)
        die("open", rc, &d);
    feed_t fh = {.hosts = 1,
                 .first = 0,
                 .t_start = T0,
                 .samples = (uint64_t)days * 86400000ull / INTERVAL,
                 .every = 1000,
                 .wal = wal};
    feed(st, &fh);
    if ((rc = pw_store_stats(st, &ss, &d)) != 0)
        die("stats", rc, &d);
    /* the history host goes through pw_store_put (as an import does), a backfill */
    printf("BENCH store.ingest_put_ns_per_update %.1f ns\n", fh.cpu * 1e9 / (double)fh.updates);
    uint64_t wal_max = ff.wal_max > fh.wal_max ? ff.wal_max : fh.wal_max;
    printf("BENCH store.wal_max_bytes %" PRIu64 " B\n", wal_max);
    fprintf(stderr,
            "# history: %.1f s wall; WAL limit %llu B, largest after a commit: fleet %" PRIu64
            ", history %" PRIu64 "; %" PRIu64 " checkpoints after commits\n",
            fh.wall, (unsigned long long)PW_STORE_DEFAULT_WAL_MAX_BYTES, ff.wal_max, fh.wal_max,
            ss.wal_checkpoints);

    /* queries: the host's open chunk stays open, as in a running collector */
    uint64_t rng = 42, t_end = T0 + (uint64_t)days * 86400000ull;
    double v1[QN], v15[QN], vt[QN], va[QN];
    int64_t n1 = 0, n15 = 0;
    pw_store_series_t sr = {0};
    char tags[QN][5];
    for (int i = 0; i < QN; i++)
        tag_of((int)(rnd(&rng) % TAGS) | 1, tags[i]); /* odd rows: nonpaged */
    for (int i = 0; i < QN; i++) {
        double t = now_s();
        n1 = pw_store_series(st, "win-00", (const uint8_t *)tags[i], 4, PW_POOL_NONPAGED,
                             t_end - 7 * 86400000ull, t_end, 60000, &sr, &d);
        v1[i] = (now_s() - t) * 1e3;
        t = now_s();
        n15 = pw_store_series(st, "win-00", (const uint8_t *)tags[i], 4, PW_POOL_NONPAGED,
                              t_end - 7 * 86400000ull, t_end, 900000, &sr, &d);
        v15[i] = (now_s() - t) * 1e3;
        if (n1 < 0 || n15 < 0)
            die("series", (int)(n1 < 0 ? n1 : n15), &d);
    }
    pw_store_series_free(&sr);
    /* a host's table, one tag's fleet aggregate (its last value on every fleet host) */
    pw_sample_t tab;
    pw_sample_init(&tab);
    uint64_t t_mid = count_from + (uint64_t)hours * 1800000ull;
    for (int i = 0; i < QN; i++) {
        double t = now_s();
        if ((rc = pw_store_table_at(st, "win-01", t_mid, &tab, &d)) != 0)
            die("table_at", rc, &d);
        vt[i] = (now_s() - t) * 1e3;
        t = now_s();
        uint64_t sum = 0;
        for (int h = 1; h <= hosts; h++) {
            char hn[32];
            host_name(hn, sizeof(hn), h);
            int64_t n = pw_store_series(st, hn, (const uint8_t *)tags[i], 4, PW_POOL_NONPAGED,
                                        t_mid - 300000, t_mid, 0, &sr, &d);
            if (n < 0)
                die("aggregate", (int)n, &d);
            if (n > 0)
                sum += sr.points[n - 1].bytes;
        }
        va[i] = (now_s() - t) * 1e3;
        (void)sum;
    }
    pw_store_series_free(&sr);
    pw_sample_close(&tab);
    double p1_50 = pct(v1, QN, 0.5), p1_99 = pct(v1, QN, 0.99);
    double p15_50 = pct(v15, QN, 0.5), p15_99 = pct(v15, QN, 0.99);
    printf("BENCH store.series_7d_1m_p50_ms %.2f ms\n", p1_50);
    printf("BENCH store.series_7d_1m_p99_ms %.2f ms\n", p1_99);
    printf("BENCH store.series_7d_15m_p50_ms %.2f ms\n", p15_50);
    printf("BENCH store.series_7d_15m_p99_ms %.2f ms\n", p15_99);
    printf("BENCH store.host_table_p99_ms %.2f ms\n", pct(vt, QN, 0.99));
    printf("BENCH store.fleet_tag_aggregate_p99_ms %.2f ms\n", pct(va, QN, 0.99));
    fprintf(stderr, "# series: %" PRId64 " points at 1 min, %" PRId64 " at 15 min\n", n1, n15);
    /* The history host's pool chart (GET /totals, the dashboard's 24 h and 7 d ranges) from the
     * totals buckets, and the same 24 h the way it had to be read before them: a replay of
     * every raw chunk (3 runs: seconds each). */
    {
        pw_store_tseries_t tsr = {0};
        double vd[QN], vw[QN], vr[3];
        int64_t nd = 0, nw = 0;
        for (int i = 0; i < QN; i++) {
            double t = now_s();
            nd = pw_store_totals_series(st, "win-00", t_end - 86400000ull, t_end, 300000, &tsr, &d);
            vd[i] = (now_s() - t) * 1e3;
            t = now_s();
            nw = pw_store_totals_series(st, "win-00", t_end - 7 * 86400000ull, t_end, 1800000, &tsr,
                                        &d);
            vw[i] = (now_s() - t) * 1e3;
            if (nd < 0 || nw < 0)
                die("totals", (int)(nd < 0 ? nd : nw), &d);
        }
        int64_t nr = 0;
        for (int i = 0; i < 3; i++) {
            double t = now_s();
            nr = pw_store_totals_series(st, "win-00", t_end - 86400000ull, t_end, 0, &tsr, &d);
            vr[i] = (now_s() - t) * 1e3;
            if (nr < 0)
                die("totals raw", (int)nr, &d);
        }
        pw_store_tseries_free(&tsr);
        printf("BENCH store.host_totals_24h_p99_ms %.2f ms\n", pct(vd, QN, 0.99));
        printf("BENCH store.host_totals_7d_p99_ms %.2f ms\n", pct(vw, QN, 0.99));
        printf("BENCH store.host_totals_24h_raw_replay_ms %.1f ms\n", pct(vr, 3, 0.5));
        fprintf(stderr,
                "# totals: %" PRId64 " points for 24 h at 5 min, %" PRId64
                " for 7 d at 30 min, %" PRId64 " raw samples in 24 h\n",
                nd, nw, nr);
    }
    /* the same once the open chunk is compacted too: what its replay costs above */
    if ((rc = pw_store_flush(st, &d)) != 0)
        die("flush", rc, &d);
    for (int i = 0; i < QN; i++) {
        double t = now_s();
        int64_t n = pw_store_series(st, "win-00", (const uint8_t *)tags[i], 4, PW_POOL_NONPAGED,
                                    t_end - 7 * 86400000ull, t_end, 900000, &sr, &d);
        vt[i] = (now_s() - t) * 1e3;
        t = now_s();
        if (n < 0 ||
            (n = pw_store_series(st, "win-00", (const uint8_t *)tags[i], 4, PW_POOL_NONPAGED,
                                 t_end - 7 * 86400000ull, t_end, 60000, &sr, &d)) < 0)
            die("series", (int)n, &d);
        va[i] = (now_s() - t) * 1e3;
    }
    pw_store_series_free(&sr);
    printf("BENCH store.series_7d_1m_p99_ms_no_open_chunk %.2f ms\n", pct(va, QN, 0.99));
    printf("BENCH store.series_7d_15m_p99_ms_no_open_chunk %.2f ms\n", pct(vt, QN, 0.99));
    pw_store_close(st);
    uint64_t pw_du7 = du_bytes(pwdir);
    double cells7 = cells + (double)fh.updates;
    printf("BENCH store.disk_du_bytes_per_tag_interval_with_history %.3f B\n",
           (double)pw_du7 / cells7);

    if (vm) {
        pid_t pid = vm_start(vmdir);
        double c0 = proc_cpu_s(pid), w0 = now_s();
        vm_feed(&ff, 3);
        vm_flush_merge(vmdir);
        double vcpu = proc_cpu_s(pid) - c0;
        uint64_t vm_du = du_bytes(vmdir);
        printf("BENCH store.vm_disk_du_bytes_per_tag_interval %.3f B\n", (double)vm_du / cells);
        printf("BENCH store.vm_ingest_ns_per_update %.1f ns\n", vcpu * 1e9 / cells);
        printf("BENCH store.disk_ratio_vm_over_pw %.2f x\n", (double)vm_du / (double)pw_du);
        fprintf(stderr, "# vm fleet: %.1f s wall (text import), %.1f s CPU, du %" PRIu64 " B\n",
                now_s() - w0, vcpu, vm_du);
        w0 = now_s();
        vm_feed(&fh, vm7);
        vm_flush_merge(vmdir);
        fprintf(stderr, "# vm history (%d metric%s): %.1f s wall\n", vm7, vm7 > 1 ? "s" : "",
                now_s() - w0);
        char q[1024];
        for (int i = 0; i < QN; i++) {
            for (int k = 0; k < 2; k++) {
                snprintf(q, sizeof(q),
                         "/api/v1/query_range?query=pw_bytes%%7Bhost%%3D%%22win-00%%22,tag%%3D%%22"
                         "%s%%22,pool%%3D%%221%%22%%7D&start=%" PRIu64 "&end=%" PRIu64 "&step=%d",
                         tags[i], (uint64_t)((t_end - 7 * 86400000ull) / 1000), t_end / 1000,
                         k ? 900 : 60);
                (k ? v15 : v1)[i] = vm_query_ms(q);
            }
            snprintf(q, sizeof(q),
                     "/api/v1/query?query=%%7Bhost%%3D%%22win-01%%22%%7D&time=%" PRIu64,
                     t_mid / 1000);
            vt[i] = vm_query_ms(q);
            snprintf(q, sizeof(q),
                     "/api/v1/query?query=sum(pw_bytes%%7Btag%%3D%%22%s%%22,pool%%3D%%221%%22,"
                     "host!%%3D%%22win-00%%22%%7D)&time=%" PRIu64,
                     tags[i], t_mid / 1000);
            va[i] = vm_query_ms(q);
        }
        double q1 = pct(v1, QN, 0.99), q15 = pct(v15, QN, 0.99);
        printf("BENCH store.vm_series_7d_1m_p50_ms %.2f ms\n", pct(v1, QN, 0.5));
        printf("BENCH store.vm_series_7d_1m_p99_ms %.2f ms\n", q1);
        printf("BENCH store.vm_series_7d_15m_p50_ms %.2f ms\n", pct(v15, QN, 0.5));
        printf("BENCH store.vm_series_7d_15m_p99_ms %.2f ms\n", q15);
        printf("BENCH store.vm_host_table_p99_ms %.2f ms\n", pct(vt, QN, 0.99));
        printf("BENCH store.vm_fleet_tag_aggregate_p99_ms %.2f ms\n", pct(va, QN, 0.99));
        printf("BENCH store.series_7d_1m_p99_ratio_vm_over_pw %.2f x\n", q1 / p1_99);
        printf("BENCH store.series_7d_15m_p99_ratio_vm_over_pw %.2f x\n", q15 / p15_99);
        vm_stop(pid);
    }
    if (env_int("PW_BENCH_KEEP", 0)) { /* for a look at the files (sqlite3, du) */
        fprintf(stderr, "# kept %s\n", dir);
        return 0;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    run(cmd);
    return 0;
}
