/* fuzz_series_page.c: the store's reader of series pages (collector/store/store_series.c: a
 * chunk's page or a day page), as found in a database file that may be damaged or hostile.
 * Control byte: bit 0 picks a day page; the rest is the decompressed page, read row by row
 * and run by run, as a merge or a rollup reads it. Every run must hold at least one sample.
 * Must never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "store_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int row_cb(void *arg, uint32_t gkey)
{
    (void)gkey;
    (*(unsigned *)arg)++;
    return 0;
}

static int run_cb(void *arg, const uint64_t *ts, size_t n, uint64_t b, uint64_t df, uint64_t a,
                  uint64_t f)
{
    (void)arg, (void)b, (void)df, (void)a, (void)f;
    if (n == 0 || ts[n - 1] < ts[0])
        abort(); /* a run is one or more samples, times not decreasing */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned rows = 0;
    pw_diag_t d;
    int rc =
        pw__store_series_page_rows(data + 1, size - 1, 3, data[0] & 1, row_cb, run_cb, &rows, &d);
    if (rc != 0 && rc != PW_ECORRUPT && rc != PW_ENOMEM)
        abort();
    return 0;
}
