/* bigpool.h: what one pool tag's large allocations look like, from the kernel's big-pool table
 * (NtQuerySystemInformation class 66, SystemBigPoolInformation): how many blocks, how many
 * bytes, in which pool, and a histogram of their sizes — whether a suspect tag's bytes are a
 * few huge blocks or many small ones. Pure functions over the raw buffer (no Windows headers):
 * unit-tested on every platform; agent/source_win.c makes the call.
 *
 * Layout (phnt ntexapi.h SYSTEM_BIGPOOL_ENTRY / SYSTEM_BIGPOOL_INFORMATION; Geoff Chappell,
 * "SYSTEM_BIGPOOL_INFORMATION", geoffchappell.com/studies/windows/km/ntoskrnl/api/ex/sysinfo/
 * bigpool.htm):
 *   SYSTEM_BIGPOOL_ENTRY { union { PVOID VirtualAddress; ULONG_PTR NonPaged : 1; };
 *                          SIZE_T SizeInBytes; UCHAR Tag[4]; }
 *       x64: VirtualAddress 0, SizeInBytes 8, Tag 16, 4 bytes of padding: 24 bytes.
 *       x86: VirtualAddress 0, SizeInBytes 4, Tag 8: 12 bytes.
 *       The low bit of VirtualAddress is set when the block is nonpaged pool.
 *   SYSTEM_BIGPOOL_INFORMATION { ULONG Count; SYSTEM_BIGPOOL_ENTRY AllocatedInfo[Count]; }
 *       AllocatedInfo at 8 on x64 (alignment of a pointer), at 4 on x86.
 * Little-endian throughout. The addresses are read for their NonPaged bit only: a summary holds
 * none, so none ever leaves the host. */
#ifndef PW_BIGPOOL_H
#define PW_BIGPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_BIGPOOL_CLASS 66u /* SystemBigPoolInformation (0x42) */

/* Size buckets of the histogram: [0, 8 KiB), [8, 16 KiB), [16, 32 KiB), ... doubling ...,
 * [4, 8 MiB), [8 MiB, inf): 12 buckets. Big-pool blocks are at least a page. */
#define PW_BIGPOOL_BUCKETS 12

/* Largest entry count a buffer may claim (corruption beyond it). A busy server has tens of
 * thousands of big allocations. */
#define PW_BIGPOOL_MAX_COUNT (1u << 24)

typedef struct pw_bigpool_summary_s {
    uint8_t tag[4];
    uint64_t scanned;        /* entries in the buffer, every tag */
    uint64_t count;          /* entries of `tag` */
    uint64_t bytes;          /* their SizeInBytes summed */
    uint64_t nonpaged_count; /* of them, nonpaged (low address bit set) */
    uint64_t nonpaged_bytes;
    uint64_t largest_bytes;            /* 0 when count is 0 */
    uint64_t smallest_bytes;           /* 0 when count is 0 */
    uint64_t hist[PW_BIGPOOL_BUCKETS]; /* entries per size bucket (PW_BIGPOOL_BUCKETS above) */
} pw_bigpool_summary_t;

/* Bytes of one SYSTEM_BIGPOOL_ENTRY for pointer size 8 (24) or 4 (12); 0 otherwise. */
size_t pw_bigpool_entry_size(unsigned ptr_size);

/* The bucket of a block of `bytes`: 0 below 8 KiB, then one per doubling, 11 from 8 MiB. */
unsigned pw_bigpool_bucket(uint64_t bytes);

/* The lower bound of bucket `b` in bytes (0, 8192, 16384, ..., 8 MiB). */
uint64_t pw_bigpool_bucket_floor(unsigned b);

/* Summarises the entries of `tag` (4 raw bytes) in a SYSTEM_BIGPOOL_INFORMATION buffer of `len`
 * bytes laid out for `ptr_size` (4 or 8) into *out (zeroed first; out->tag = tag). Bytes past
 * the last entry are ignored. Returns 0, or PW_EINVAL (ptr_size), PW_ETRUNCATED (shorter than
 * the header or than Count entries; `d` names the field and offset), PW_ETOOBIG (Count above
 * PW_BIGPOOL_MAX_COUNT). */
int pw_bigpool_summarize(const uint8_t *buf, size_t len, unsigned ptr_size, const uint8_t tag[4],
                         pw_bigpool_summary_t *out, pw_diag_t *d);

#endif /* PW_BIGPOOL_H */
