/* bench_store.c: the collector's history store (collector/store/store.h) on a real file.
 *
 * Load: 3,000-row Windows-like tables (allocs 10^2..10^7, outstanding 1..10^4, 16..4096 bytes
 * per allocation, as bench_codec), 5 % of the rows changing per sample, seeded; each host
 * sends every 10 s, hosts spread evenly over the interval; the store commits whenever
 * 200 ms of simulated arrival time have passed (group commit), then compacts sealed chunks for
 * up to 20 ms (pw_store_compact), as the collector does.
 * Prints:
 *   collector.durable_updates_per_s         rows stored and committed (fsync'ed) per second
 *                                           of wall time, over a simulated day of HOSTS hosts
 *   collector.disk_bytes_per_tag_interval   file + WAL after a checkpoint / (rows x samples)
 *   collector.disk_raw_bytes_per_tag_interval, ..._rollup_...  the same split by content
 *   collector.commit_ms_max                 slowest commit
 *   collector.chunk_close_ms_{mean,max}     closing an hour's chunk of 3,000 rows (compress,
 *                                           columns, 15-min rollups): work inside a put
 *   api.series_7d_ms                        one (host, tag) over 7 days of 10 s data, 15-min
 *                                           steps (672 points), median of 5
 *   api.series_7d_1min_ms                   the same with 1-min steps (10,080 points)
 * Environment: PW_BENCH_HOSTS (default 4), PW_BENCH_HOURS (24), PW_BENCH_DIR (/tmp).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define TAGS      3000
#define CHURN_PCT 5
#define INTERVAL  10000ull
#define T0        1700001000000ull

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

static void rm_db(const char *path)
{
    char p[600];
    const char *suf[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s%s", path, suf[i]);
        unlink(p);
    }
}

/* Feeds `hosts` hosts for `samples` intervals; commits every 200 ms of arrival time, or
 * every `commit_every` samples when that is not 0. Returns wall seconds. */
static double feed(pw_store_t *st, int hosts, uint64_t samples, unsigned commit_every)
{
    gen_t *g = calloc((size_t)hosts, sizeof(*g));
    if (g == NULL)
        exit(1);
    char names[64][32];
    uint8_t agent[64][16], boot[16] = {0xb0};
    for (int h = 0; h < hosts; h++) {
        gen_init(&g[h], 1000 + (uint64_t)h);
        snprintf(names[h], sizeof(names[h]), "win-%02d", h);
        memset(agent[h], h + 1, 16);
    }
    pw_diag_t d;
    double t = now_s();
    uint64_t last_commit = T0;
    unsigned pending = 0;
    for (uint64_t k = 0; k < samples; k++)
        for (int h = 0; h < hosts; h++) {
            uint64_t ts = T0 + k * INTERVAL + (uint64_t)h * INTERVAL / (uint64_t)hosts;
            gen_next(&g[h], ts);
            pw_store_host_t hi = {names[h], agent[h], 16, boot, 16, "windows 10.0", 32};
            int rc = pw_store_put(st, &hi, &g[h].s, 0, &d);
            if (rc != 0)
                die("put", rc, &d);
            pending++;
            int due = commit_every ? pending >= commit_every : ts - last_commit >= 200;
            if (due) {
                if ((rc = pw_store_commit(st, &d)) != 0)
                    die("commit", rc, &d);
                /* as the collector does after each group commit */
                int64_t nc = pw_store_compact(st, 20, &d);
                if (nc < 0)
                    die("compact", (int)nc, &d);
                last_commit = ts;
                pending = 0;
            }
        }
    int rc = pw_store_commit(st, &d);
    int64_t nc = rc ? 0 : pw_store_compact(st, 1000000, &d);
    if (rc != 0 || nc < 0)
        die("commit", rc ? rc : (int)nc, &d);
    t = now_s() - t;
    for (int h = 0; h < hosts; h++)
        pw_sample_close(&g[h].s);
    free(g);
    return t;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double series_ms(pw_store_t *st, const char *tag, uint64_t step, int64_t *points)
{
    double v[5];
    pw_store_series_t sr = {0};
    pw_diag_t d;
    for (int i = 0; i < 5; i++) {
        double t = now_s();
        int64_t n = pw_store_series(st, "win-00", (const uint8_t *)tag, 4, PW_POOL_NONPAGED, T0,
                                    T0 + 7 * 86400000ull, step, &sr, &d);
        v[i] = (now_s() - t) * 1e3;
        if (n < 0)
            die("series", (int)n, &d);
        *points = n;
    }
    pw_store_series_free(&sr);
    qsort(v, 5, sizeof(v[0]), cmp_d);
    return v[2];
}

int main(void)
{
    int hosts = getenv("PW_BENCH_HOSTS") ? atoi(getenv("PW_BENCH_HOSTS")) : 4;
    int hours = getenv("PW_BENCH_HOURS") ? atoi(getenv("PW_BENCH_HOURS")) : 24;
    const char *dir = getenv("PW_BENCH_DIR") ? getenv("PW_BENCH_DIR") : "/tmp";
    if (hosts < 1 || hosts > 64 || hours < 1 || hours > 24 * 30)
        return 2;
    char path[512];
    snprintf(path, sizeof(path), "%s/pw_bench_store_%d.db", dir, (int)getpid());
    rm_db(path);
    pw_store_t *st;
    pw_diag_t d;
    int rc = pw_store_open(path, NULL, &st, &d);
    if (rc != 0)
        die("open", rc, &d);
    uint64_t samples = (uint64_t)hours * 3600000ull / INTERVAL;
    double secs = feed(st, hosts, samples, 0);
    pw_store_stats_t ss;
    if ((rc = pw_store_checkpoint(st, &d)) != 0 || (rc = pw_store_stats(st, &ss, &d)) != 0)
        die("stats", rc, &d);
    double cells = (double)TAGS * (double)samples * hosts;
    printf("BENCH collector.durable_updates_per_s %.0f updates/s\n", (double)ss.updates / secs);
    printf("BENCH collector.disk_bytes_per_tag_interval %.3f B\n",
           (double)ss.bytes_on_disk / cells);
    printf("BENCH collector.disk_raw_bytes_per_tag_interval %.3f B\n",
           (double)ss.raw_bytes / cells);
    printf("BENCH collector.disk_rollup_bytes_per_tag_interval %.3f B\n",
           (double)ss.rollup_bytes / cells);
    printf("BENCH collector.commit_ms_max %.1f ms\n", (double)ss.commit_us_max / 1e3);
    printf("BENCH collector.chunk_close_ms_mean %.1f ms\n",
           ss.closes ? (double)ss.close_us_total / 1e3 / (double)ss.closes : 0.0);
    printf("BENCH collector.chunk_close_ms_max %.1f ms\n", (double)ss.close_us_max / 1e3);
    fprintf(stderr,
            "# %d hosts x %" PRIu64 " samples x %d rows in %.1f s, %" PRIu64 " commits, %" PRIu64
            " chunks, file %.1f MB\n",
            hosts, samples, TAGS, secs, ss.commits, ss.chunks, (double)ss.bytes_on_disk / 1e6);
    pw_store_close(st);
    rm_db(path);

    /* 7 days of one host, committed in large groups (only the query is measured). */
    rc = pw_store_open(path, NULL, &st, &d);
    if (rc != 0)
        die("open", rc, &d);
    double gen = feed(st, 1, 7 * 86400000ull / INTERVAL, 1000);
    gen_t *g = calloc(1, sizeof(*g));
    gen_init(g, 1);
    char tag[5] = {0};
    memcpy(tag, g->tag[1], 4); /* row 1 is nonpaged */
    pw_sample_close(&g->s);
    free(g);
    int64_t n15 = 0, n1 = 0;
    double ms15 = series_ms(st, tag, 900000, &n15);
    double ms1 = series_ms(st, tag, 60000, &n1);
    printf("BENCH api.series_7d_ms %.2f ms\n", ms15);
    printf("BENCH api.series_7d_1min_ms %.2f ms\n", ms1);
    fprintf(stderr,
            "# 7 days written in %.1f s; %" PRId64 " points at 15 min, %" PRId64 " at 1 min\n", gen,
            n15, n1);
    pw_store_close(st);
    rm_db(path);
    return 0;
}
