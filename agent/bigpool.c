/* bigpool.c: the big-pool table summarised for one tag (layout and sources: bigpool.h). */
#include "bigpool.h"

#include <string.h>

static uint64_t rd(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

size_t pw_bigpool_entry_size(unsigned ptr_size)
{
    return ptr_size == 8 ? 24 : ptr_size == 4 ? 12 : 0;
}

unsigned pw_bigpool_bucket(uint64_t bytes)
{
    if (bytes < 8192)
        return 0;
    unsigned log2 = 0;
    while (log2 < 63 && (bytes >> (log2 + 1)) != 0)
        log2++;
    unsigned b = log2 - 12; /* 8 KiB = 2^13 -> 1 */
    return b < PW_BIGPOOL_BUCKETS ? b : PW_BIGPOOL_BUCKETS - 1;
}

uint64_t pw_bigpool_bucket_floor(unsigned b)
{
    return b == 0 ? 0 : (uint64_t)1 << (12 + (b < PW_BIGPOOL_BUCKETS ? b : PW_BIGPOOL_BUCKETS - 1));
}

int pw_bigpool_summarize(const uint8_t *buf, size_t len, unsigned ptr_size, const uint8_t tag[4],
                         pw_bigpool_summary_t *out, pw_diag_t *d)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->tag, tag, 4);
    size_t esize = pw_bigpool_entry_size(ptr_size);
    if (esize == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "ptr_size", "pointer size %u is not 4 or 8",
                           ptr_size);
    size_t header = ptr_size; /* ULONG Count, padded to the entries' pointer alignment */
    if (buf == NULL || len < header)
        return pw_diag_set(d, PW_ETRUNCATED, 0, len, "Count",
                           "big-pool buffer of %llu bytes is shorter than its %u-byte header",
                           (unsigned long long)len, (unsigned)header);
    uint64_t count = rd(buf, 4);
    if (count > PW_BIGPOOL_MAX_COUNT)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "Count",
                           "big-pool entry count %llu exceeds the limit of %u",
                           (unsigned long long)count, PW_BIGPOOL_MAX_COUNT);
    if ((uint64_t)header + count * esize > (uint64_t)len)
        return pw_diag_set(d, PW_ETRUNCATED, 0, len, "AllocatedInfo",
                           "big-pool buffer of %llu bytes ends inside entry %llu of %llu "
                           "(%u-byte entries from offset %u)",
                           (unsigned long long)len, (unsigned long long)((len - header) / esize),
                           (unsigned long long)count, (unsigned)esize, (unsigned)header);
    out->scanned = count;
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *e = buf + header + i * esize;
        if (memcmp(e + 2 * ptr_size, tag, 4) != 0)
            continue;
        uint64_t size = rd(e + ptr_size, ptr_size);
        int nonpaged = (e[0] & 1u) != 0; /* the low bit of VirtualAddress */
        out->count++;
        out->bytes += size;
        if (nonpaged) {
            out->nonpaged_count++;
            out->nonpaged_bytes += size;
        }
        if (size > out->largest_bytes)
            out->largest_bytes = size;
        if (out->count == 1 || size < out->smallest_bytes)
            out->smallest_bytes = size;
        out->hist[pw_bigpool_bucket(size)]++;
    }
    return 0;
}
