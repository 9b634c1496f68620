/* bench_spool.c: cost of the agent's durable spool.
 *
 *   spool.append_us        one 1 KiB record appended, with the fsync policy of
 *                          PW_BENCH_SPOOL_FSYNC (always | interval | never; default always,
 *                          the agent's default: one fdatasync per record)
 *   spool.append_nosync_us the same with fsync never: the CPU and page-cache part alone
 *   spool.replay_mb_per_s  reading back 64 MiB of 1 KiB records with CRC checks through the
 *                          iterator; the files were just written, so this is the page-cache
 *                          speed (a cold read after a reboot is bounded by the disk)
 * The spool lives in a fresh directory under $TMPDIR (default /var/tmp: a disk, not tmpfs),
 * removed at the end. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spool.h"

#define REC_BYTES 1024

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void clean(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    char p[1024];
    while (dp && (de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (dp)
        closedir(dp);
}

static pw_spool_t *open_or_die(const char *dir, pw_spool_fsync_t policy)
{
    pw_spool_opts_t o = {.fsync = policy};
    pw_spool_t *sp;
    pw_diag_t d;
    if (pw_spool_open(dir, &o, &sp, NULL, &d) != 0) {
        fprintf(stderr, "bench_spool: %s\n", d.msg);
        exit(1);
    }
    return sp;
}

/* Appends n records after the spool's last seq; returns microseconds per append. */
static double append_n(pw_spool_t *sp, int n, const uint8_t *payload)
{
    uint64_t seq = pw_spool_last_seq(sp);
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        pw_diag_t d;
        if (pw_spool_append(sp, ++seq, i % 60 == 0 ? PW_SPOOL_KEYFRAME : 0, payload, REC_BYTES,
                            &d) != 0) {
            fprintf(stderr, "bench_spool: %s\n", d.msg);
            exit(1);
        }
    }
    return (now_us() - t0) / n;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/pw_bench_spool_XXXXXX", tmp);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    const char *pol = getenv("PW_BENCH_SPOOL_FSYNC") ? getenv("PW_BENCH_SPOOL_FSYNC") : "always";
    pw_spool_fsync_t policy = strcmp(pol, "never") == 0      ? PW_SPOOL_FSYNC_NEVER
                              : strcmp(pol, "interval") == 0 ? PW_SPOOL_FSYNC_INTERVAL
                                                             : PW_SPOOL_FSYNC_ALWAYS;
    uint8_t payload[REC_BYTES];
    for (int i = 0; i < REC_BYTES; i++)
        payload[i] = (uint8_t)(i * 7);

    pw_spool_t *sp = open_or_die(dir, policy);
    double us = append_n(sp, policy == PW_SPOOL_FSYNC_ALWAYS ? 2000 : 20000, payload);
    pw_spool_close(sp);
    fprintf(stderr, "# spool.append_us measured with fsync policy %s\n", pol);
    printf("BENCH spool.append_us %.2f us\n", us);

    sp = open_or_die(dir, PW_SPOOL_FSYNC_NEVER);
    pw_spool_ack(sp, pw_spool_last_seq(sp), NULL);
    int n = 64 * 1024; /* 64 MiB of records */
    us = append_n(sp, n, payload);
    printf("BENCH spool.append_nosync_us %.2f us\n", us);

    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    if (pw_spool_iter_open(sp, 0, &it) != 0)
        return 1;
    double t0 = now_us();
    size_t bytes = 0, recs = 0;
    int rc;
    while ((rc = pw_spool_iter_next(it, &r, NULL)) == 1) {
        bytes += r.len;
        recs++;
    }
    double el = now_us() - t0;
    pw_spool_iter_close(it);
    if (rc != 0 || recs != (size_t)n) {
        fprintf(stderr, "bench_spool: replay returned %zu records (rc %d)\n", recs, rc);
        return 1;
    }
    printf("BENCH spool.replay_mb_per_s %.0f MB/s\n", (double)bytes / el);
    pw_spool_close(sp);
    clean(dir);
    rmdir(dir);
    return 0;
}
