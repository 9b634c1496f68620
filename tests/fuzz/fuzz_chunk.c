/* fuzz_chunk.c: the store's reader of chunk blobs (collector/chunk.h), as found in a database
 * file that may be damaged or hostile. Control byte: bit 0 picks the layout (0 columns,
 * 1 records), bit 1 the counter width (0: 32, 1: 64). The rest is replayed into a fresh
 * decoder; when it is a valid records chunk, it is also packed into columns and the columns
 * must replay to the same last table. Must never crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_cb(void *arg, const pw_delta_dec_t *dd, uint64_t seq, pw_diag_t *d)
{
    (void)dd, (void)seq, (void)d;
    (*(unsigned *)arg)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int fmt = (data[0] & 1) ? PW_CHUNK_RECORDS : PW_CHUNK_COLUMNS;
    unsigned width = (data[0] & 2) ? 64 : 32;
    pw_delta_dec_t dd;
    if (pw_delta_dec_init(&dd, width, 0) != 0)
        abort();
    pw_diag_t d;
    unsigned n = 0;
    int rc = pw_chunk_replay(fmt, data + 1, size - 1, &dd, count_cb, &n, &d);
    if (rc != 0 && rc != PW_ECORRUPT && rc != PW_ENOMEM)
        abort();
    if (rc == 0 && fmt == PW_CHUNK_RECORDS && n > 0 && dd.have_base) {
        pw_buf_t cols;
        pw_buf_init(&cols, 1u << 26);
        if (pw_chunk_pack(data + 1, size - 1, width, &cols, &d) == 0) {
            pw_delta_dec_t d2;
            unsigned n2 = 0;
            if (pw_delta_dec_init(&d2, width, 0) != 0)
                abort();
            if (pw_chunk_replay(PW_CHUNK_COLUMNS, cols.data, cols.len, &d2, count_cb, &n2, &d) !=
                    0 ||
                n2 != n || d2.n != dd.n || d2.seq != dd.seq ||
                (dd.n > 0 && memcmp(d2.rows, dd.rows, dd.n * sizeof(*dd.rows)) != 0))
                abort();
            pw_delta_dec_close(&d2);
        }
        pw_buf_close(&cols);
    }
    pw_delta_dec_close(&dd);
    return 0;
}
