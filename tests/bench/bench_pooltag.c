/* bench_pooltag.c: pooltag.txt loader on a real copy (default: the shared Debugging Tools copy,
 * or argv[1]) and the collector's analysis functions on synthetic windows. Also a by-hand check
 * of the loader's counts on the real file (printed as CHECK lines, not asserted: benchmarks may
 * read /work/shared, tests may not).
 * Prints `BENCH pooltag.load_ms`, `BENCH pooltag.lookup_ns`, `BENCH analysis.detect_eval_us`
 * (one pw_detect_eval of a full 64-point ring), `BENCH analysis.pressure_eval_us` (2-h window at 10
 * s, 721 points), `BENCH analysis.theil_sen_2000_ms` (the O(n^2) cap), each the best of 5 runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "detect.h"
#include "pooltag.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/work/shared/data/pooltag/pooltag.txt";
    double best = 1e9;
    pw_pooltag_t *t = NULL;
    for (int r = 0; r < 5; r++) {
        pw_pooltag_free(t);
        pw_diag_t d;
        double t0 = now_s();
        if (pw_pooltag_load(path, NULL, &t, &d) != 0) {
            fprintf(stderr, "cannot load %s: %s\n", path, d.msg);
            return 1;
        }
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    const pw_pooltag_stats_t *s = pw_pooltag_stats(t);
    printf("CHECK pooltag lines=%zu entries=%zu unique=%zu duplicated=%zu wildcards=%zu "
           "two_field=%zu comments=%zu blank=%zu skipped=%zu\n",
           s->lines, s->entries, s->unique, s->duplicated, s->wildcards, s->two_field, s->comments,
           s->blank, s->skipped);
    printf("BENCH pooltag.load_ms %.3f ms\n", best * 1e3);

    static const char *q[] = {"Thre", "Ddk ", "ConT", "AfdX", "CM12", "Io  ", "Mmcm", "r100"};
    size_t iters = 2000000;
    volatile size_t hits = 0;
    double t0 = now_s();
    for (size_t i = 0; i < iters; i++)
        hits += pw_pooltag_lookup(t, q[i & 7], 4, NULL) != NULL;
    printf("BENCH pooltag.lookup_ns %.1f ns\n", (now_s() - t0) / (double)iters * 1e9);
    pw_pooltag_free(t);

    /* the detection engine on a full ring (64 points: 48 spread over 7 days, 16 at 10 s),
     * 1 MiB/h with churn: the cost of one candidate's evaluation in the collector */
    pw_detect_point_t row[PW_DETECT_RING];
    for (int i = 0; i < PW_DETECT_RING; i++) {
        int64_t tt = i < 48 ? i * (7 * 86400000LL / 48) : 7 * 86400000LL + (i - 48) * 10000LL;
        uint64_t b =
            (2u << 20) + (uint64_t)(tt / 3600000.0 * 1048576.0) + (uint64_t)((i * 7919) % 4096);
        row[i] = (pw_detect_point_t){
            tt, 1000000 + (uint64_t)i * 300, 990000 + (uint64_t)i * 200, b / 256, b, 1};
    }
    pw_detect_t out;
    best = 1e9;
    for (int r = 0; r < 5; r++) {
        double a = now_s();
        for (int k = 0; k < 100; k++)
            pw_detect_eval(row, PW_DETECT_RING, NULL, &out);
        double dt = (now_s() - a) / 100;
        best = dt < best ? dt : best;
    }
    printf("BENCH analysis.detect_eval_us %.1f us (verdict %s)\n", best * 1e6,
           pw_detect_verdict_name(out.verdict));

    pw_point_t *host = malloc(721 * sizeof(*host));
    for (int i = 0; i < 721; i++)
        host[i] = (pw_point_t){i * 10000LL, 80e6 + i * 500.0 + (i * 7919) % 20000};
    pw_pressure_t pr;
    best = 1e9;
    for (int r = 0; r < 5; r++) {
        double a = now_s();
        for (int k = 0; k < 10; k++)
            pw_pressure_eval(host, 721, 128u << 20, NULL, &pr);
        double dt = (now_s() - a) / 10;
        best = dt < best ? dt : best;
    }
    printf("BENCH analysis.pressure_eval_us %.1f us\n", best * 1e6);
    free(host);

    double *x = malloc(2000 * sizeof(*x)), *y = malloc(2000 * sizeof(*y));
    for (int i = 0; i < 2000; i++) {
        x[i] = i;
        y[i] = 3.0 * i + (i * 7919) % 100;
    }
    pw_theilsen_t ts;
    best = 1e9;
    for (int r = 0; r < 5; r++) {
        double a = now_s();
        pw_stats_theil_sen(x, y, 2000, 0.05, &ts);
        double dt = now_s() - a;
        best = dt < best ? dt : best;
    }
    printf("BENCH analysis.theil_sen_2000_ms %.1f ms\n", best * 1e3);
    free(x);
    free(y);
    return hits == 0;
}
