/* bench_remote_write.c: remote write request size and encoding time for a 1,000-host fleet
 * (remote_write.h): every host with a new sample, 300 (tag, pool) rows each drawn from a
 * shared vocabulary of 600 four-character tags (a fleet of one OS shares most tag names), the
 * default 20 tags per host and 2,000 series per request.
 *   BENCH collector.remote_write_bytes_per_series   snappy-compressed request bytes / series
 *   BENCH collector.remote_write_raw_bytes_per_series  protobuf bytes / series (before snappy)
 *   BENCH collector.remote_write_encode_us_per_host  CPU time to select, encode and compress
 */
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "../collector/double.h" /* the collector test double */
#include "fleet.h"
#include "remote_write.h"

#define HOSTS 1000
#define ROWS  300
#define VOCAB 600

typedef struct {
    size_t bytes, raw, series, requests;
} acc_t;

static int count(void *arg, uint8_t *body, size_t len, size_t series)
{
    acc_t *a = arg;
    size_t raw = 0;
    snappy_uncompressed_length((const char *)body, len, &raw);
    a->bytes += len;
    a->raw += raw;
    a->series += series;
    a->requests++;
    pw_free(body);
    return 0;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    static char vocab[VOCAB][4];
    uint32_t x = 12345;
    for (int i = 0; i < VOCAB; i++)
        for (int k = 0; k < 4; k++) {
            x = x * 1103515245u + 12345u;
            vocab[i][k] = (char)('A' + (x >> 16) % 58); /* letters and a few punctuation */
        }
    /* Hosts restored from the store with their last table (double.h: the product's path),
     * stamped as the store gives them back. */
    pw_double_t d;
    if (pw_double_open(&d) != 0)
        return 1;
    pw_sample_t s;
    pw_sample_init(&s);
    for (int h = 0; h < HOSTS; h++) {
        char name[32];
        snprintf(name, sizeof(name), "srv-%05d.corp.example", h);
        pw_sample_reset(&s);
        for (int r = 0; r < ROWS; r++) {
            x = x * 1103515245u + 12345u;
            uint64_t bytes = (x >> 8) % 5000000, diff = bytes / 64 + 1;
            pw_sample_add(&s, vocab[(r * 7 + h) % VOCAB], 4,
                          r % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED, diff * 2, diff, diff, bytes);
        }
        s.totals.nonpaged_bytes = 200000000 + (uint64_t)h * 1000;
        s.totals.paged_bytes = 400000000 + (uint64_t)h * 3000;
        pw_host_t *host = pw_double_restore(&d, name, 32, &s);
        if (host == NULL)
            return 1;
        host->last_seen_ms = 1764400000000ull + (uint64_t)h;
    }
    pw_sample_close(&s);
    const pw_fleet_t *f = pw_ingest_fleet(d.ing);
    pw_remote_write_cursor_t cur = {.sent_ms = NULL};
    acc_t a;
    memset(&a, 0, sizeof(a));
    double t0 = cpu_s();
    int64_t n = pw_remote_write_encode(f, d.an, 20, 2000, &cur, count, &a);
    double t1 = cpu_s();
    if (n <= 0 || (size_t)n != a.series)
        return 1;
    printf("CHECK remote_write series %zu requests %zu (hosts %d x (6 + 2 x 20))\n", a.series,
           a.requests, HOSTS);
    printf("BENCH collector.remote_write_bytes_per_series %.1f bytes\n",
           (double)a.bytes / (double)a.series);
    printf("BENCH collector.remote_write_raw_bytes_per_series %.1f bytes\n",
           (double)a.raw / (double)a.series);
    printf("BENCH collector.remote_write_encode_us_per_host %.1f us\n", (t1 - t0) * 1e6 / HOSTS);
    pw_remote_write_cursor_free(&cur);
    pw_double_close(&d);
    return 0;
}
