/* bench_source_linux.c: one sample of the "linux" source on this machine's /proc (read and
 * parse /proc/meminfo and /proc/slabinfo, fill the sample). Median of 200 samples after 5
 * warm-up ones. Prints `BENCH source.linux_sample_us <value> us`; when /proc/slabinfo is not
 * readable (not root) it says so on stderr and prints nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "sample.h"
#include "source.h"
#include "source_internal.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    enum { WARM = 5, RUNS = 200 };
    static const pw_source_config_t cfg;
    pw_source_t src;
    memset(&src, 0, sizeof(src));
    src.ops = &pw__source_linux_ops;
    src.cfg = cfg;
    src.priv = pw_calloc(1, pw__source_linux_ops.priv_size);
    if (src.priv == NULL)
        return 1;
    pw_diag_t d;
    int r = src.ops->open(&src, "", &src.cfg, &d);
    if (r != 0) {
        fprintf(stderr, "bench_source_linux: skipped: %s\n", d.msg);
        src.ops->close(&src);
        pw_free(src.priv);
        return 0;
    }
    pw_sample_t s;
    pw_sample_init(&s);
    static double t[RUNS];
    for (int i = 0; i < WARM + RUNS; i++) {
        pw_sample_reset(&s);
        double t0 = now_us();
        r = src.ops->sample(&src, &s, &d);
        double dt = now_us() - t0;
        if (r != 0) {
            fprintf(stderr, "bench_source_linux: %s\n", d.msg);
            return 1;
        }
        if (i >= WARM)
            t[i - WARM] = dt;
    }
    qsort(t, RUNS, sizeof(t[0]), cmp_double);
    fprintf(stderr, "# %zu caches per sample, min %.1f us, p90 %.1f us\n", s.n, t[0],
            t[RUNS * 9 / 10]);
    printf("BENCH source.linux_sample_us %.1f us\n", t[RUNS / 2]);
    pw_sample_close(&s);
    src.ops->close(&src);
    pw_free(src.priv);
    return 0;
}
