/* sample.h: one sample of a host's pool table (docs/protocol.md), as sources produce it and as the
 * codec and the collector consume it.
 *
 * A row is one (pool tag, pool type) pair, as poolmon shows it: the same tag's paged and
 * nonpaged rows are separate rows. Counters follow SYSTEM_POOLTAG (phnt ntexapi.h):
 * allocs/frees are cumulative counts of allocation and free calls, `diff` the allocations
 * outstanding, `bytes` the bytes outstanding. On Linux, slab caches have no allocs/frees:
 * `diff` is the objects in use and `bytes` active_objs * objsize (sample flag
 * PW_SAMPLE_NO_ALLOCS), what the objects use; `held_bytes` is what the cache holds from the
 * page allocator, num_slabs * pagesperslab * page size (slabtop's CACHE SIZE; the caches' sum is
 * /proc/meminfo's Slab:). Rows of other sources have no held bytes (0).
 */
#ifndef PW_SAMPLE_H
#define PW_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Longest tag in bytes: 4 on Windows; Linux slab cache names are at most 32 (kmem_cache),
 * we allow 64 for names with suffixes ("size-32(DMA)"). */
#define PW_TAG_MAX 64

typedef enum {
    PW_POOL_PAGED = 0,
    PW_POOL_NONPAGED = 1,
    PW_POOL_SESSION = 2, /* session paged pool (Remote Desktop hosts) */
    PW_POOL__COUNT = 3
} pw_pool_t;

typedef struct pw_entry_s {
    uint8_t tag[PW_TAG_MAX]; /* raw bytes: spaces, NUL and bytes >= 0x80 are kept as they are */
    uint8_t tag_len;         /* 1 ... PW_TAG_MAX */
    uint8_t pool;            /* pw_pool_t */
    uint64_t allocs;         /* cumulative allocation calls (wraps at 2^counter_width) */
    uint64_t frees;          /* cumulative free calls (wraps at 2^counter_width) */
    uint64_t diff;           /* allocations outstanding: allocs - frees (mod 2^width) */
    uint64_t bytes;          /* bytes outstanding */
    uint64_t held_bytes;     /* bytes the row holds (a slab cache's slabs); 0 = not reported */
} pw_entry_t;

/* Host totals in bytes; 0 = not known. Limit sources are pw_limit_source_t values. */
typedef struct pw_totals_s {
    uint64_t paged_bytes;
    uint64_t nonpaged_bytes;
    uint64_t paged_limit_bytes;
    uint64_t nonpaged_limit_bytes;
    uint64_t physical_memory_bytes;
    uint64_t available_bytes;
    uint64_t commit_bytes;
    uint64_t commit_limit_bytes;
    uint64_t commit_peak_bytes;
    uint64_t slab_reclaimable_bytes;
    uint64_t slab_unreclaimable_bytes;
    /* the agent's own footprint (agent/selfstat.h): bytes, ms of CPU, handles; 0 = none */
    uint64_t agent_rss_bytes;
    uint64_t agent_cpu_ms;
    uint64_t agent_handles;
} pw_totals_t;

/* How a pool limit was found; the numbers are the wire enum LimitSource. */
typedef enum {
    PW_LIMIT_UNKNOWN = 0,
    PW_LIMIT_REPORTED = 1,
    PW_LIMIT_COMPUTED = 2,
    PW_LIMIT_REGISTRY = 3,
    PW_LIMIT_CONFIGURED = 4
} pw_limit_source_t;

/* A pool limit and how it was found (an agent's Hello, an import's options). */
typedef struct pw_pool_limit_s {
    uint64_t bytes;           /* 0 = unknown */
    pw_limit_source_t source; /* how it was found */
    char detail[96];          /* e.g. "Windows Server 2003 x86 with /3GB: 128 MB" */
} pw_pool_limit_t;

#define PW_SAMPLE_NO_ALLOCS 0x1u /* the source has no allocs/frees counters (Linux slab) */

typedef struct pw_sample_s {
    uint64_t seq;          /* monotonic per agent instance */
    uint64_t timestamp_ms; /* ms since the Unix epoch */
    uint32_t flags;        /* PW_SAMPLE_* */
    pw_totals_t totals;
    pw_entry_t *entries; /* owned, `n` used of `cap` */
    size_t n;
    size_t cap;
} pw_sample_t;

/* Initialises an empty sample (allocates nothing). */
void pw_sample_init(pw_sample_t *s);

/* Frees the entries; the sample is empty and reusable afterwards. Accepts NULL. */
void pw_sample_close(pw_sample_t *s);

/* Removes all entries and zeroes totals, keeping storage. */
void pw_sample_reset(pw_sample_t *s);

/* Appends an entry for `tag` (tag_len bytes, 1..PW_TAG_MAX) in `pool` with its counters and
 * held_bytes 0 (set it on the new last entry when the source knows it). diff is taken as given.
 * Returns 0, PW_EINVAL (bad length or pool) or PW_ENOMEM. */
int pw_sample_add(pw_sample_t *s, const void *tag, size_t tag_len, pw_pool_t pool, uint64_t allocs,
                  uint64_t frees, uint64_t diff, uint64_t bytes);

/* ---- session pools, one row per session ---------------------------------------------------
 * Session pool (PW_POOL_SESSION) rows are kept apart per session, as poolmon /s<N> shows them:
 * such a row's key is the pool tag's 4 bytes followed by the session id, 4 bytes little-endian
 * (tag_len 8). Everything that keys rows by (tag bytes, pool) — the tag dictionary, the delta
 * encoding on the wire, the fleet's tables and the store — keeps sessions apart without knowing
 * them; what shows a row (API, CLI, metrics, alerts) splits the key with pw_row_split. A
 * session row of 4 tag bytes (an agent before this change, a capture of "All sessions") is the
 * sum over sessions: its session is PW_SESSION_ALL. */
#define PW_SESSION_TAG_LEN 4u          /* the pool tag inside a session row's key */
#define PW_SESSION_KEY_LEN 8u          /* tag + session id */
#define PW_SESSION_ALL     0xFFFFFFFFu /* not one session: the sum over all (Windows' own value) */

/* Appends a PW_POOL_SESSION row for `tag` (PW_SESSION_TAG_LEN bytes) in session `session`
 * (PW_SESSION_ALL: the sum over sessions, a 4-byte key). Returns as pw_sample_add. */
int pw_sample_add_session(pw_sample_t *s, const void *tag, uint32_t session, uint64_t allocs,
                          uint64_t frees, uint64_t diff, uint64_t bytes);

/* Splits a row key (tag bytes `tag`, `tag_len`, pool `pool`): returns the length of the pool
 * tag itself (PW_SESSION_TAG_LEN for a per-session key, else tag_len) and sets *session (may be
 * NULL) to the session id, or PW_SESSION_ALL when the row is not one session's. */
size_t pw_row_split(const uint8_t *tag, size_t tag_len, int pool, uint32_t *session);

/* Writes a row key printably into `out` as pw_tag_format does, a session row's key as its tag
 * and " (session N)". Returns the length written. */
size_t pw_row_format(const uint8_t *tag, size_t tag_len, int pool, char *out, size_t out_size);

/* Writes the key of `tag` (PW_SESSION_TAG_LEN bytes) in `session` into out (PW_SESSION_KEY_LEN
 * bytes; PW_SESSION_TAG_LEN for PW_SESSION_ALL). Returns the key's length. */
size_t pw_row_session_key(const uint8_t *tag, uint32_t session, uint8_t out[PW_SESSION_KEY_LEN]);

/* Deep copy of `src` into `dst` (initialised). Returns 0 or PW_ENOMEM (dst unchanged). */
int pw_sample_copy(pw_sample_t *dst, const pw_sample_t *src);

/* Per-alloc bytes as poolmon shows it: floor(bytes / diff), 0 when diff is 0. */
uint64_t pw_per_alloc(uint64_t bytes, uint64_t diff);

/* Writes `tag` printably into `out` (size `out_size`, NUL-terminated): a tag of printable ASCII
 * as is (spaces kept, a backslash as "\\", truncated if short); a binary tag (any byte below
 * 0x20 or above 0x7e) as "0x" and its bytes in hex, in memory order ("0x016162": 01 'a' 'b'),
 * or "" when that does not fit. Returns the length written, excluding the NUL. */
size_t pw_tag_format(const uint8_t *tag, size_t tag_len, char *out, size_t out_size);

/* Reads a tag as pw_tag_format writes it: "0x" and an even number of hex digits is those bytes
 * when they are not all printable (else the text itself, as a printable tag is never written
 * that way); otherwise the text with the escapes "\\" and "\xNN". Returns the length
 * (1..PW_TAG_MAX) or -1 (empty, too long, a bad escape). */
int pw_tag_parse(const char *s, uint8_t out[PW_TAG_MAX]);

/* Short name of a pool type: "paged", "nonpaged", "session"; "?" otherwise. */
const char *pw_pool_name(int pool);

#endif /* PW_SAMPLE_H */
