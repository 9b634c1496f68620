/* Fuzz target for the Windows buffer parsers (source_win_parse.c, bigpool.c). The first input
 * byte picks the pointer size (bit 0: 4 or 8) and the session filter (bit 1: all sessions or
 * session 0); the rest is fed to the pool-tag, session pool-tag, performance-information and
 * big-pool parsers (the big-pool summary for the tag of its first entry). */
#include <stddef.h>
#include <stdint.h>

#include "bigpool.h"
#include "sample.h"
#include "source_win.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    unsigned ptr_size = (data[0] & 1) ? 8 : 4;
    long session = (data[0] & 2) ? 0 : -1;
    const uint8_t *buf = data + 1;
    size_t len = size - 1;
    pw_sample_t s;
    pw_diag_t d;
    pw_sample_init(&s);
    int r = pw_win_parse_pooltags(buf, len, ptr_size, &s, &d);
    if (r >= 0 && (size_t)r != s.n)
        __builtin_trap();
    for (size_t i = 0; i < s.n; i++)
        if (s.entries[i].tag_len != 4 || s.entries[i].diff > UINT32_MAX)
            __builtin_trap();
    pw_sample_reset(&s);
    r = pw_win_parse_session_pooltags(buf, len, ptr_size, session, &s, &d);
    if (r >= 0 && (size_t)r != s.n)
        __builtin_trap();
    /* session rows are keyed per session: tag + id (4 bytes: id 0xFFFFFFFF, "all") */
    for (size_t i = 0; i < s.n; i++)
        if (s.entries[i].pool != PW_POOL_SESSION ||
            (s.entries[i].tag_len != 8 && s.entries[i].tag_len != 4))
            __builtin_trap();
    pw_totals_t t = {0};
    (void)pw_win_parse_perfinfo(buf, len, 4096, &t, &d);
    uint8_t tag[4] = {0, 0, 0, 0};
    if (len >= ptr_size + 2 * ptr_size + 4)
        for (int k = 0; k < 4; k++)
            tag[k] = buf[ptr_size + 2 * ptr_size + (size_t)k];
    pw_bigpool_summary_t bs;
    if (pw_bigpool_summarize(buf, len, ptr_size, tag, &bs, &d) == 0) {
        uint64_t sum = 0;
        for (int k = 0; k < PW_BIGPOOL_BUCKETS; k++)
            sum += bs.hist[k];
        if (bs.count > bs.scanned || bs.nonpaged_count > bs.count || sum != bs.count ||
            bs.smallest_bytes > bs.largest_bytes)
            __builtin_trap();
    }
    pw_sample_close(&s);
    return 0;
}
