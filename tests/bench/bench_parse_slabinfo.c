/* bench_parse_slabinfo.c: pw_slabinfo_parse (lenient) throughput on a >= 50 MB concatenation of
 * the slabinfo captures of tests/fixtures/slabinfo (all ten cases, LF endings), built in
 * memory: each capture starts its own block, so the whole buffer is one parse.
 * Prints `BENCH parse.slabinfo_mb_per_s <value> MB/s` (MB = 10^6 bytes, best of 5 runs). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slabinfo_text.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    const size_t target = 50u * 1000 * 1000;
    static char one[1 << 20];
    size_t one_len = 0;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/slabinfo", PW_FIXTURES);
    DIR *dp = opendir(dir);
    if (dp == NULL) {
        fprintf(stderr, "bench_parse_slabinfo: cannot open %s\n", dir);
        return 1;
    }
    struct dirent *de;
    int files = 0;
    while ((de = readdir(dp)) != NULL) {
        if (strncmp(de->d_name, "case", 4) != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        one_len += fread(one + one_len, 1, sizeof(one) - one_len - 1, f);
        fclose(f);
        if (one_len > 0 && one[one_len - 1] != '\n')
            one[one_len++] = '\n';
        files++;
    }
    closedir(dp);
    if (files == 0)
        return 1;
    size_t reps = target / one_len + 1;
    size_t len = reps * one_len;
    char *data = malloc(len);
    if (data == NULL)
        return 1;
    for (size_t i = 0; i < reps; i++)
        memcpy(data + i * one_len, one, one_len);

    pw_slabinfo_opts_t opts = {.max_caches = (size_t)1 << 24};
    double best = 1e30;
    size_t caches = 0;
    for (int run = 0; run < 5; run++) {
        pw_slabinfo_doc_t doc;
        pw_diag_t d;
        double t0 = now_s();
        int r = pw_slabinfo_parse(data, len, &opts, &doc, &d);
        double t = now_s() - t0;
        if (r != 0) {
            fprintf(stderr, "bench_parse_slabinfo: line %u: %s\n", d.line, d.msg);
            return 1;
        }
        caches = doc.n_caches;
        pw_slabinfo_doc_close(&doc);
        if (t < best)
            best = t;
    }
    fprintf(stderr, "# %zu bytes (%d captures x %zu), %zu caches, best %.3f s\n", len, files, reps,
            caches, best);
    printf("BENCH parse.slabinfo_mb_per_s %.1f MB/s\n", (double)len / 1e6 / best);
    free(data);
    return 0;
}
