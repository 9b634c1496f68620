/* fuzz_wire.c: frame reader -> Envelope unpack -> delta apply, as the collector runs them.
 * The first byte picks the chunk size the stream is fed in, so split points are fuzzed too.
 * Allocation failures are injected on some inputs (second byte). */
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "codec.h"
#include "delta.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > (1u << 20))
        return 0;
    size_t chunk = 1 + data[0] % 64;
    unsigned fail = data[1] >= 0xF0 ? (unsigned)(data[1] - 0xEF) * 3 : 0;
    data += 2;
    size -= 2;
    pw_frame_reader_t r;
    pw_delta_dec_t dec;
    pw_frame_reader_init(&r, 1u << 20);
    pw_delta_dec_init(&dec, 32, 100000);
    if (fail)
        pw_alloc_fail_after(fail);
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (pw_frame_reader_feed(&r, data + off, n, NULL) != 0)
            break;
        const uint8_t *p;
        size_t len;
        int rc;
        while ((rc = pw_frame_reader_next(&r, &p, &len, NULL)) == 1) {
            Poolwatch__V1__Envelope *env;
            if (pw_codec_unpack(p, len, &env, NULL) != 0)
                continue;
            if (env->msg_case == POOLWATCH__V1__ENVELOPE__MSG_SAMPLE) {
                pw_delta_result_t res;
                size_t before = dec.n;
                uint64_t seq = dec.seq;
                if (pw_delta_apply(&dec, env->sample, &res, NULL) != 0) {
                    /* All or nothing: a failed apply leaves the table as it was. */
                    if (dec.n != before || dec.seq != seq)
                        __builtin_trap();
                }
            }
            pw_codec_free(env);
        }
        if (rc < 0)
            break;
    }
    pw_alloc_fail_after(0);
    pw_delta_dec_close(&dec);
    pw_frame_reader_close(&r);
    return 0;
}
