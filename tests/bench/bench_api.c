/* bench_api.c: the query API's handlers, server side (pw_api_handle, no network).
 *
 *   api.pool_table_p99_ms       GET /api/v1/hosts/H/pool on a host with 3,000 tags (6,000
 *                               rows: each tag paged and nonpaged, with a previous table for
 *                               the change columns), sorted by bytes change, filtered by
 *                               include/exclude patterns and pool, limit 100 (a top screen):
 *                               p99 of 1,000 calls after 20 warm-up calls (wall clock). Also
 *                               api.pool_table_full_p99_ms: the same without limit (every
 *                               matching row as JSON), 100 calls. On stderr: the median, how
 *                               many calls were descheduled (context switches: other load on
 *                               the machine), the p99 of the calls that were not, the p99 of
 *                               CPU time, and the load average.
 *   api.fleet_tag_aggregate_ms  GET /api/v1/tags?limit=100 over 10,000 streaming hosts of 300
 *                               rows each (3 M rows; tags drawn from 1,000): mean of 5 calls.
 *
 * Hosts get their samples the way the collector does (tests/collector/double.h): an agent's
 * Hello, then Sample frames through pw_ingest_frame (store: ":memory:").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <time.h>

#include <uv.h>

#include "api.h"
#include "../collector/double.h" /* the collector test double */

static uint64_t rng = 7;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A sample from host h's agent, through the collector's own path: delta-encoded, framed and
 * handed to ingest (pw_ingest_frame: the table, change columns, history ring, per-tag index
 * and the store). */
static void feed(pw_double_t *d, pw_host_t *h, pw_delta_enc_t *e, const pw_sample_t *s)
{
    if (pw_double_send(d, e, h, s) != 0)
        abort();
}

/* Opens the double with one read token "t". */
static void open_double(pw_double_t *d)
{
    if (pw_double_open(d) != 0)
        abort();
    char hx[65], line[100];
    pw_tokens_hash("t", hx);
    snprintf(line, sizeof(line), "%s read bench\n", hx);
    if (pw_tokens_parse(line, strlen(line), &d->api.tokens, NULL) < 0)
        abort();
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One call's figures: wall and CPU milliseconds, and whether the process was descheduled. */
typedef struct call_s {
    double wall_ms, cpu_ms;
    int switched;
} call_t;

static double cpu_ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double time_call(pw_api_t *api, const char *path, const char *query, size_t *bytes,
                        call_t *ct)
{
    char auth[] = "Bearer t";
    pw_api_req_t req = {PW_API_GET, path, query, auth, NULL, 0, 0};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double c0 = cpu_ms_now();
    uint64_t t0 = uv_hrtime();
    int st = pw_api_handle(api, &req, &resp);
    uint64_t t1 = uv_hrtime();
    double c1 = cpu_ms_now();
    getrusage(RUSAGE_SELF, &r1);
    if (st != 200) {
        fprintf(stderr, "%s?%s: %d %.*s\n", path, query, st, (int)resp.body.len, resp.body.data);
        abort();
    }
    *bytes = resp.body.len;
    pw_api_resp_close(&resp);
    double ms = (double)(t1 - t0) / 1e6;
    if (ct) {
        ct->wall_ms = ms;
        ct->cpu_ms = c1 - c0;
        ct->switched = r1.ru_nivcsw != r0.ru_nivcsw || r1.ru_nvcsw != r0.ru_nvcsw;
    }
    return ms;
}

/* p-quantile (0..1) of v[0..n) (sorted in place), nearest rank; 0 when n is 0. */
static double quantile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_d);
    size_t k = (size_t)(p * (double)n + 0.999999);
    return v[(k ? k : 1) - 1];
}

/* Runs `calls` timed calls after `warm` untimed ones; prints BENCH <name> (wall p99) and the
 * diagnostics on stderr. */
static void bench_pool(pw_api_t *api, const char *name, const char *query, int warm, int calls)
{
    size_t bytes = 0;
    for (int i = 0; i < warm; i++)
        time_call(api, "/api/v1/hosts/BIG/pool", query, &bytes, NULL);
    call_t *ct = malloc((size_t)calls * sizeof(*ct));
    double *wall = malloc((size_t)calls * sizeof(*wall)),
           *cpu = malloc((size_t)calls * sizeof(*cpu)),
           *quiet = malloc((size_t)calls * sizeof(*quiet));
    if (!ct || !wall || !cpu || !quiet)
        abort();
    size_t nq = 0;
    for (int i = 0; i < calls; i++)
        time_call(api, "/api/v1/hosts/BIG/pool", query, &bytes, &ct[i]);
    for (int i = 0; i < calls; i++) {
        wall[i] = ct[i].wall_ms;
        cpu[i] = ct[i].cpu_ms;
        if (!ct[i].switched)
            quiet[nq++] = ct[i].wall_ms;
    }
    double p99 = quantile(wall, (size_t)calls, 0.99), med = quantile(wall, (size_t)calls, 0.5);
    printf("BENCH %s %.3f ms\n", name, p99);
    double la[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
            la[0] = la[1] = la[2] = 0;
        fclose(f);
    }
    fprintf(stderr,
            "# %s: %d calls: median %.3f ms, p99 %.3f ms; %zu descheduled, p99 of the others "
            "%.3f ms; CPU time p99 %.3f ms; %zu bytes of JSON; load average %.2f %.2f %.2f\n",
            name, calls, med, p99, (size_t)calls - nq, quantile(quiet, nq, 0.99),
            quantile(cpu, (size_t)calls, 0.99), bytes, la[0], la[1], la[2]);
    free(ct), free(wall), free(cpu), free(quiet);
}

int main(void)
{
    pw_double_t d;
    open_double(&d);

    /* One big host: 3,000 tags in both pools, two samples (its agent not connected). */
    pw_host_t *big = pw_double_stream(&d, "BIG", 32, 0);
    if (big == NULL)
        abort();
    pw_delta_enc_t e;
    pw_delta_enc_init(&e, 32);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 1; k <= 2; k++) {
        pw_sample_reset(&s);
        s.seq = (uint64_t)k;
        s.timestamp_ms = 1000u * (unsigned)k;
        for (int i = 0; i < 3000; i++) {
            char tag[5];
            snprintf(tag, sizeof(tag), "%c%03d", "ABCDEFGHIJ"[i % 10], i / 10 % 1000);
            for (int p = 0; p < 2; p++) {
                uint64_t a = 1000 + rnd() % 100000, f = a - rnd() % 1000;
                pw_sample_add(&s, tag, 4, (pw_pool_t)p, a, f, a - f, (a - f) * (16 + rnd() % 512));
            }
        }
        feed(&d, big, &e, &s);
    }
    pw_delta_enc_close(&e);
    if (pw_ingest_commit(d.ing, NULL) < 0)
        abort();
    bench_pool(&d.api, "api.pool_table_p99_ms",
               "sort=bytes&by_change=1&include=A*,B*,C*,D*,E*,F*&exclude=*7&pool=both&limit=100",
               20, 1000);
    bench_pool(&d.api, "api.pool_table_full_p99_ms",
               "sort=bytes&by_change=1&include=A*,B*,C*,D*,E*,F*&exclude=*7&pool=both", 3, 100);

    /* 10,000 hosts of 300 rows (a new fleet: BIG is not in it). */
    pw_double_close(&d);
    open_double(&d);
    for (int h = 0; h < 10000; h++) {
        char name[32];
        snprintf(name, sizeof(name), "HOST%05d", h);
        pw_host_t *host = pw_double_stream(&d, name, 32, 0);
        if (host == NULL)
            abort();
        pw_delta_enc_init(&e, 32);
        pw_sample_reset(&s);
        s.seq = 1;
        s.timestamp_ms = 1000;
        for (int k = 0; k < 300; k++) {
            int id = (h * 7 + k * 3) % 1000; /* 300 distinct tags of 1,000 */
            char tag[5];
            snprintf(tag, sizeof(tag), "T%03d", id);
            uint64_t a = 100 + rnd() % 10000, f = a - rnd() % 100;
            pw_sample_add(&s, tag, 4, (pw_pool_t)(id & 1), a, f, a - f, (a - f) * 64);
        }
        feed(&d, host, &e, &s);
        pw_delta_enc_close(&e);
        if (h % 1000 == 999 && pw_ingest_commit(d.ing, NULL) < 0) /* the group commit */
            abort();
    }
    double sum = 0;
    size_t bytes = 0;
    for (int i = 0; i < 5; i++)
        sum += time_call(&d.api, "/api/v1/tags", "limit=100", &bytes, NULL);
    printf("BENCH api.fleet_tag_aggregate_ms %.3f ms\n", sum / 5);
    fprintf(stderr, "# tags: %zu bytes of JSON\n", bytes);
    pw_sample_close(&s);
    pw_double_close(&d);
    return 0;
}
