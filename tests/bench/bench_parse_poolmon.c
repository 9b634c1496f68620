/* bench_parse_poolmon.c: pw_poolmon_parse throughput on a >= 50 MB concatenation of the poolmon
 * captures of tests/fixtures/poolmon (all parseable cases, LF endings), built in memory.
 * Prints `BENCH parse.poolmon_mb_per_s <value> MB/s` (MB = 10^6 bytes, best of 5 runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "poolmon_text.h"

static const char *files[] = {
    "case01_poolmon_nt_serverfault_ntfs_collapsed_ws.txt",
    "case02_poolmon_xp_msdocs_display_sort_alloc.txt",
    "case03_poolmon_msdocs_findleak_markdown_hash_header.txt",
    "case04_poolmon_2000_msdocs_gflags_example9_dashed.txt",
    "case05_poolmon_xp_msdocs_ntf_mapped_driver.txt",
    "case06_poolmon_xp_msdocs_mem_unknown_driver_noheader.txt",
    "case07_poolmon_xp_msdocs_localtag_console_noise.txt",
    "case08_poolmon_xp_msdocs_ip_double_mapped.txt",
    "case09_poolmon_xp_msdocs_drsd_before_after_replay.txt",
    "case10_poolmon_2003_msdocs_session_pools_dh_space.txt",
    "case11_poolmon_2003_msdocs_session0_mapped_noleadspace.txt",
    "case12_poolmon_xp_msdocs_session_empty_header_only.txt",
    "case15_poolmon_win10_wide_nlog_mapped_cont_thre.txt",
    "case16_poolmon_win11_fak_semisynthetic_dup_file_tag.txt",
    "case17_poolmon_win10_header_only_korean_notes.txt",
    "case19_poolmon_win10_msdocs_hid_mapped_truncated_col.txt",
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    const size_t target = 50u * 1000 * 1000;
    char one[65536];
    size_t one_len = 0;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/poolmon/%s", PW_FIXTURES, files[i]);
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
            fprintf(stderr, "bench_parse_poolmon: cannot open %s\n", path);
            return 1;
        }
        one_len += fread(one + one_len, 1, sizeof(one) - one_len - 1, f);
        fclose(f);
        if (one_len > 0 && one[one_len - 1] != '\n')
            one[one_len++] = '\n';
    }
    size_t reps = target / one_len + 1;
    size_t len = reps * one_len;
    char *data = malloc(len);
    if (data == NULL)
        return 1;
    for (size_t i = 0; i < reps; i++)
        memcpy(data + i * one_len, one, one_len);

    double best = 1e30;
    size_t screens = 0, rows = 0;
    for (int run = 0; run < 5; run++) {
        pw_poolmon_doc_t doc;
        pw_diag_t d;
        double t0 = now_s();
        int r = pw_poolmon_parse(data, len, NULL, &doc, &d);
        double t = now_s() - t0;
        if (r != 0) {
            fprintf(stderr, "bench_parse_poolmon: parse failed at line %u: %s\n", d.line, d.msg);
            return 1;
        }
        screens = doc.n_screens;
        rows = 0;
        for (size_t i = 0; i < doc.n_screens; i++)
            rows += doc.screens[i].n_rows;
        pw_poolmon_doc_close(&doc);
        if (t < best)
            best = t;
    }
    fprintf(stderr, "# %zu bytes, %zu screens, %zu rows, best %.3f s\n", len, screens, rows, best);
    printf("BENCH parse.poolmon_mb_per_s %.1f MB/s\n", (double)len / 1e6 / best);
    free(data);
    return 0;
}
