/* source_win.h: the portable half of the Windows source: parsing of the raw buffers that
 * NtQuerySystemInformation fills (the pool-limit rule table is common/winlimit.h). Pure functions,
 * no Windows headers, so they are unit-tested and fuzzed on Linux; agent/source_win.c makes the
 * calls.
 *
 * Buffer layouts (phnt ntexapi.h, SYSTEM_POOLTAG / SYSTEM_POOLTAG_INFORMATION /
 * SYSTEM_SESSION_POOLTAG_INFORMATION / SYSTEM_PERFORMANCE_INFORMATION; the information class
 * numbers are the positions in phnt's SYSTEM_INFORMATION_CLASS):
 *
 *   SYSTEM_POOLTAG  { UCHAR Tag[4]; ULONG PagedAllocs; ULONG PagedFrees; SIZE_T PagedUsed;
 *                     ULONG NonPagedAllocs; ULONG NonPagedFrees; SIZE_T NonPagedUsed; }
 *       x64 (SIZE_T = 8, 8-aligned): Tag 0, PagedAllocs 4, PagedFrees 8, (pad 12), PagedUsed 16,
 *           NonPagedAllocs 24, NonPagedFrees 28, NonPagedUsed 32; 40 bytes.
 *       x86 (SIZE_T = 4): Tag 0, 4, 8, PagedUsed 12, 16, 20, NonPagedUsed 24; 28 bytes.
 *   SYSTEM_POOLTAG_INFORMATION { ULONG Count; SYSTEM_POOLTAG TagInfo[Count]; }
 *       TagInfo starts at 8 on x64 (alignment of SIZE_T), at 4 on x86.
 *   SYSTEM_SESSION_POOLTAG_INFORMATION { SIZE_T NextEntryOffset; ULONG SessionId; ULONG Count;
 *                                        SYSTEM_POOLTAG TagInfo[Count]; }
 *       a chain of records; TagInfo at 16 on x64, 12 on x86; NextEntryOffset is relative to the
 *       record's start, 0 for the last record.
 *   SYSTEM_PERFORMANCE_INFORMATION: 4 LARGE_INTEGERs (32 bytes) then ULONGs, the same on x86
 *       and x64: AvailablePages 44, CommittedPages 48, CommitLimit 52, PeakCommitment 56,
 *       PagedPoolPages 112, NonPagedPoolPages 116 (byte offsets; all in pages).
 *
 * All multi-byte fields are little-endian (every Windows architecture is). Tags are kept as
 * their 4 raw bytes: spaces, NUL and bytes >= 0x80 are not touched. Counters are 32-bit.
 */
#ifndef PW_SOURCE_WIN_H
#define PW_SOURCE_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"
#include "source.h"
#include "winlimit.h"

/* Information classes of NtQuerySystemInformation (phnt ntexapi.h SYSTEM_INFORMATION_CLASS). */
#define PW_WIN_CLASS_PERFORMANCE     2u  /* SystemPerformanceInformation */
#define PW_WIN_CLASS_POOLTAG         22u /* SystemPoolTagInformation */
#define PW_WIN_CLASS_SESSION_POOLTAG 67u /* SystemSessionPoolTagInformation (0x43) */

/* The input record of SystemSessionPoolTagInformation: unlike the other classes, the caller
 * passes this record (and its size) as the "buffer"; the kernel reads it, checks that Buffer is
 * 8-aligned (STATUS_DATATYPE_MISALIGNMENT otherwise), fills Buffer with up to SizeOfBuf bytes of
 * SYSTEM_SESSION_POOLTAG_INFORMATION records for SessionId (0xFFFFFFFF: every session, as
 * poolmon asks) and writes the length it needed or filled to ReturnLength
 * (STATUS_INFO_LENGTH_MISMATCH when SizeOfBuf is short). Layout: phnt ntexapi.h
 * SYSTEM_SESSION_PROCESS_INFORMATION { ULONG SessionId; ULONG SizeOfBuf; PVOID Buffer; };
 * behaviour: the Windows Research Kernel, base/ntos/ex/sysinfo.c, case
 * SystemSessionPoolTagInformation. x64: 16 bytes, Buffer at 8; x86: 12 bytes, Buffer at 8. */
typedef struct pw_win_session_query_s {
    uint32_t session_id; /* SessionId */
    uint32_t buf_size;   /* SizeOfBuf, bytes */
    void *buf;           /* Buffer */
} pw_win_session_query_t;

#define PW_WIN_ALL_SESSIONS 0xFFFFFFFFu

/* NTSTATUS values the source reacts to (ntstatus.h). */
#define PW_WIN_STATUS_NOT_IMPLEMENTED       0xC0000002u
#define PW_WIN_STATUS_INVALID_INFO_CLASS    0xC0000003u
#define PW_WIN_STATUS_INFO_LENGTH_MISMATCH  0xC0000004u
#define PW_WIN_STATUS_DATATYPE_MISALIGNMENT 0x80000002u

/* Largest tag count a pool-tag buffer may claim. Real hosts have a few thousand tags (4,526
 * distinct tags in pooltag.txt); a count above this is corruption, refused before anything is
 * allocated for it. */
#define PW_WIN_POOLTAG_MAX_COUNT (1u << 20)

/* Smallest SYSTEM_PERFORMANCE_INFORMATION we read: up to and including NonPagedPoolPages. */
#define PW_WIN_PERFINFO_MIN_LEN 120u

/* Size of one SYSTEM_POOLTAG for a pointer size of 4 (x86: 28) or 8 (x64: 40); 0 otherwise. */
size_t pw_win_pooltag_entry_size(unsigned ptr_size);

/* Parses a SYSTEM_POOLTAG_INFORMATION buffer of `len` bytes laid out for `ptr_size` (4 or 8,
 * the pointer size of the process that made the call) and appends to `out` one PW_POOL_PAGED
 * row per entry whose paged allocs, frees or bytes are nonzero and one PW_POOL_NONPAGED row per
 * entry whose nonpaged ones are; tag_len 4, diff = allocs - frees mod 2^32. Bytes past the
 * last entry are ignored (the kernel's buffer may be larger than its contents).
 * Returns the number of rows appended (>= 0), or PW_EINVAL (ptr_size not 4 or 8),
 * PW_ETRUNCATED (buffer shorter than its header or than Count entries; `d` names the field
 * and offset), PW_ETOOBIG (Count above PW_WIN_POOLTAG_MAX_COUNT), PW_ENOMEM. On error, rows
 * already appended stay in `out` (callers reset the sample). */
int pw_win_parse_pooltags(const uint8_t *buf, size_t len, unsigned ptr_size, pw_sample_t *out,
                          pw_diag_t *d);

/* Parses a SYSTEM_SESSION_POOLTAG_INFORMATION chain and appends one PW_POOL_SESSION row per
 * (session, tag), keyed per session (pw_sample_add_session, sample.h), for the sessions
 * selected (session_id < 0: every session, as poolmon /s lists them; else only that session,
 * as poolmon /s<N>). Each row sums the entry's paged and nonpaged counters (session pool is
 * paged pool; the nonpaged fields are 0 on the systems we know, and are kept rather than
 * dropped if not). Sums of allocs and frees wrap at 2^32. An entry whose counters are all 0 is
 * left out. An empty buffer (len 0) is a host without sessions: 0 rows. Returns the rows
 * appended, or PW_EINVAL, PW_ETRUNCATED (record or entries past the end), PW_EPARSE
 * (NextEntryOffset smaller than a record header: the chain would not advance), PW_ETOOBIG (a
 * Count above PW_WIN_POOLTAG_MAX_COUNT or more than PW_WIN_POOLTAG_MAX_COUNT entries in all),
 * PW_ENOMEM. */
int pw_win_parse_session_pooltags(const uint8_t *buf, size_t len, unsigned ptr_size,
                                  long session_id, pw_sample_t *out, pw_diag_t *d);

/* Parses a SYSTEM_PERFORMANCE_INFORMATION buffer (>= PW_WIN_PERFINFO_MIN_LEN bytes) and sets
 * in `t` (bytes = pages * page_size): paged_bytes, nonpaged_bytes (pool pages: poolmon's
 * "Pool N"/"Pool P"), commit_bytes, commit_limit_bytes, commit_peak_bytes, available_bytes.
 * Other fields of `t` are left alone. Returns 0, PW_EINVAL (page_size 0) or PW_ETRUNCATED. */
int pw_win_parse_perfinfo(const uint8_t *buf, size_t len, uint32_t page_size, pw_totals_t *t,
                          pw_diag_t *d);

/* The documented fallback: PERFORMANCE_INFORMATION of GetPerformanceInfo (psapi.h), counts in
 * pages of page_size bytes. */
typedef struct pw_win_perf_fallback_s {
    uint64_t commit_total;
    uint64_t commit_limit;
    uint64_t commit_peak;
    uint64_t physical_total;
    uint64_t physical_available;
    uint64_t kernel_paged;
    uint64_t kernel_nonpaged;
    uint64_t page_size; /* bytes */
} pw_win_perf_fallback_t;

/* Fills each of paged_bytes, nonpaged_bytes, commit_bytes, commit_limit_bytes,
 * commit_peak_bytes, physical_memory_bytes, available_bytes that is still 0 in `t` from `pi`
 * (SystemPerformanceInformation reports 0 pool pages under Wine and is undocumented; this is
 * the documented API). */
void pw_win_totals_fallback(const pw_win_perf_fallback_t *pi, pw_totals_t *t);

/* Reads the boot options the loader recorded (HKLM\SYSTEM\CurrentControlSet\Control
 * SystemStartOptions, UTF-8 here; tokens separated by spaces, any case, a leading '/' allowed):
 * "3GB" (boot.ini /3GB, XP/2003) or "INCREASEUSERVA[=MB]" (BCD, Vista on) set
 * os->increase_user_va; "USERVA=MB" (with /3GB) or the INCREASEUSERVA value set os->user_va_mb
 * (kept only within 2048-3072, the range the loader takes). Other tokens are ignored; nothing is
 * changed when no such token is found. */
void pw_win_parse_boot_options(const char *opts, pw_win_os_t *os);

/* The OS architecture from IsWow64Process2's native machine (IMAGE_FILE_MACHINE_I386 0x014C,
 * _AMD64 0x8664, _ARM64 0xAA64; winnt.h) or from GetNativeSystemInfo's wProcessorArchitecture
 * (PROCESSOR_ARCHITECTURE_INTEL 0, _AMD64 9, _ARM64 12). Anything else is reported as x86, the
 * 4-byte layouts. */
pw_win_arch_t pw_win_arch_from_machine(uint16_t machine);
pw_win_arch_t pw_win_arch_from_processor(uint16_t processor_architecture);

/* The pool-limit rule table (pw_win_pool_limits) is common/winlimit.h: the import API uses it
 * too. */

/* ---- the kernel call seam (Windows builds only) ------------------------------------------- */

/* NtQuerySystemInformation as source_win.c calls it: returns the NTSTATUS, writes the length
 * the kernel needed or wrote to *ret_len. */
typedef uint32_t (*pw_win_query_fn)(uint32_t info_class, void *buf, uint32_t len,
                                    uint32_t *ret_len);

#ifdef _WIN32
/* Replaces the call used by the "win" source (NULL restores ntdll's). A Windows test build
 * uses it to feed recorded buffers through the real code path. Not thread safe: set it before
 * opening sources. */
void pw_win_set_query_fn(pw_win_query_fn fn);
#endif

#endif /* PW_SOURCE_WIN_H */
