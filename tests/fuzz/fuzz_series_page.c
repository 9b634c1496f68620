/* fuzz_series_page.c: the store's readers of series pages (collector/store/store_series.c: a
 * chunk's page or a day page), as found in a database file that may be damaged or hostile.
 * Control byte: its low 2 bits pick the kind (0 a chunk's page, 1 a day page of 4 tags, 2 one of
 * 32 tags; 3 is not read); the rest is the decompressed page. It is read twice:
 * row by row and run by run, as a merge or a rollup reads it, and one row at a time, as a
 * series query reads it. Every run must hold at least one sample, times not decreasing; when
 * the whole page decodes, the query's reader must read it too and give each row the same
 * samples and values (a second method: it skips the other rows instead of decoding them).
 * Must never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "store_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GRP   3
#define NKEYS 8 /* rows compared at most */

typedef struct {
    uint32_t keys[NKEYS];
    uint64_t sum[NKEYS]; /* per row: a digest of its runs */
    size_t nkeys, cur;   /* cur: the row being read, NKEYS when not compared */
} digest_t;

static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 0x100000001b3ull;
}

static uint64_t run_digest(const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                           uint64_t f)
{
    if (n == 0 || ts[n - 1] < ts[0])
        abort(); /* a run is one or more samples, times not decreasing */
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = mix(h, ts[i]);
    return mix(mix(mix(mix(h, b), df), a), f);
}

static int row_cb(void *arg, uint32_t gkey)
{
    digest_t *g = arg;
    g->cur = NKEYS;
    for (size_t i = 0; i < g->nkeys; i++)
        if (g->keys[i] == gkey) /* a day page's later segment */
            g->cur = i;
    if (g->cur == NKEYS && g->nkeys < NKEYS) {
        g->keys[g->nkeys] = gkey;
        g->sum[g->nkeys] = 0;
        g->cur = g->nkeys++;
    }
    return 0;
}

static int run_cb(void *arg, const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                  uint64_t f)
{
    digest_t *g = arg;
    uint64_t h = run_digest(ts, n, b, df, a, f);
    if (g->cur < NKEYS)
        g->sum[g->cur] += h; /* a sum: segments may come in another order than the reader's */
    return 0;
}

static int read_cb(void *arg, const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                   uint64_t f)
{
    *(uint64_t *)arg += run_digest(ts, n, b, df, a, f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int day = data[0] & 3;
    if (day == 3)
        return 0;
    digest_t g = {.nkeys = 0, .cur = NKEYS};
    pw_diag_t d;
    int rc = pw__store_series_page_rows(data + 1, size - 1, GRP, day, row_cb, run_cb, &g, &d);
    if (rc != 0 && rc != PW_ECORRUPT && rc != PW_ENOMEM)
        abort();
    for (size_t i = 0; i < g.nkeys; i++) {
        uint64_t sum = 0;
        int r = pw__store_series_page_read(data + 1, size - 1, GRP, day, g.keys[i], 0, UINT64_MAX,
                                           read_cb, &sum, &d);
        if (r != 0 && r != PW_ECORRUPT && r != PW_ENOMEM)
            abort();
        if (rc == 0 && (r != 0 || sum != g.sum[i]))
            abort(); /* the two readers disagree on a page that decodes */
    }
    return 0;
}
