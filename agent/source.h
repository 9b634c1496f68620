/* source.h: where the agent's samples come from (an ops table and a static
 * registry). A source is opened from a spec string:
 *
 *   "win"               NtQuerySystemInformation(SystemPoolTagInformation)   (Windows only)
 *   "linux[:FILES]"     /proc/slabinfo + /proc/meminfo, + /proc/allocinfo and /proc/vmallocinfo
 *                       when there (root under cfg->proc_root; FILES: source_linux.h)
 *   "replay:F1[,F2...]" saved poolmon screens, one sample per screen, in file order
 *   "sim:PRESET[/N]"    host N (default 0) of a named, seeded simulated fleet preset
 *
 * Each call to pw_source_sample() fills one sample: entries and totals; the source sets
 * timestamp_ms only when it knows it (replay), else leaves 0 for the caller to stamp.
 */
#ifndef PW_SOURCE_H
#define PW_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"

typedef struct pw_source_s pw_source_t;
struct pw_bigpool_summary_s; /* bigpool.h */
struct pw_winevent_s;        /* winevent.h */

/* Source kinds, the numbers of the wire enum SourceKind. */
typedef enum {
    PW_SOURCE_UNKNOWN = 0,
    PW_SOURCE_WINDOWS = 1,
    PW_SOURCE_LINUX_SLAB = 2,
    PW_SOURCE_POOLMON_REPLAY = 3,
    PW_SOURCE_SIMULATED = 4
} pw_source_kind_t;

/* What a source knows about its host; filled by open, may be refreshed by sample. */
typedef struct pw_source_info_s {
    pw_source_kind_t kind;
    uint32_t counter_width;         /* bits of allocs/frees: 32 (Windows ULONG) or 64 */
    char host_name[256];            /* "" = let the agent use its configured/OS name */
    char os_family[16];             /* "windows", "linux" */
    char os_version[64];            /* "10.0", "5.2", "6.1.0-amd64" */
    uint32_t os_build;              /* Windows build number, 0 elsewhere */
    char arch[16];                  /* "x64", "x86", "arm64" */
    uint64_t physical_memory_bytes; /* 0 = unknown */
    uint64_t boot_time_ms;          /* ms since the Unix epoch, 0 = unknown */
    pw_pool_limit_t nonpaged_limit;
    pw_pool_limit_t paged_limit;
} pw_source_info_t;

/* Options for every source; zero-initialise and set what you need. Borrowed during open. */
typedef struct pw_source_config_s {
    const char *proc_root;         /* linux: prefix of /proc ("" or NULL = "/") */
    uint64_t nonpaged_limit_bytes; /* > 0: configured limit, overrides the estimate */
    uint64_t paged_limit_bytes;    /* > 0: configured limit */
    uint64_t replay_interval_ms;   /* replay: spacing of screens without a time stamp
                                      (0 = 15 min, the documented poolmon procedure) */
    uint64_t replay_start_ms;      /* replay: time of the first screen (0 = now) */
    uint64_t sim_seed;             /* sim: seed (0 = the preset's own) */
    uint64_t sim_interval_ms;      /* sim: simulated time between samples (0 = 10 s) */
    uint64_t sim_start_ms;         /* sim: simulated time of the first sample (0 = now) */
} pw_source_config_t;

/* The ops every source implements (fluent-bit flb_input_plugin, curl vtls backends). */
typedef struct pw_source_ops_s {
    const char *name;        /* the spec prefix: "win", "linux", "replay", "sim" */
    const char *description; /* one line for --help */
    size_t priv_size;        /* bytes of private state, allocated zeroed by pw_source_open */
    /* Called once; `arg` is the part of the spec after ':' ("" when none). Fills src->info.
     * Returns 0 or a negative code with `d` filled. On failure close is still called. */
    int (*open)(pw_source_t *src, const char *arg, const pw_source_config_t *cfg, pw_diag_t *d);
    /* Fills `out` (already reset by the caller). Returns 0, PW_EAGAIN (no sample this tick),
     * PW_EOF (a finite source is exhausted) or a negative error with `d` filled. */
    int (*sample)(pw_source_t *src, pw_sample_t *out, pw_diag_t *d);
    /* Releases what open acquired; priv itself is freed by pw_source_close. May be NULL. */
    void (*close)(pw_source_t *src);
    /* Summarises the big-pool blocks of `tag` (bigpool.h) into *out. May be NULL: the source
     * has no big-pool table. Returns 0 or a negative code with `d` filled. */
    int (*big_pool)(pw_source_t *src, const uint8_t tag[4], struct pw_bigpool_summary_s *out,
                    pw_diag_t *d);
    /* The pool events (winevent.h) the last sample produced into out[0..max): the simulated
     * source's srv 2019 when its nonpaged pool reached its limit. May be NULL: none (the
     * Windows source's come from the System log, evsub.h). Returns how many. */
    size_t (*events)(pw_source_t *src, struct pw_winevent_s *out, size_t max);
} pw_source_ops_t;

struct pw_source_s {
    const pw_source_ops_t *ops;
    void *priv; /* priv_size zeroed bytes owned by the framework */
    pw_source_info_t info;
    pw_source_config_t cfg; /* copy; strings inside stay borrowed from the caller */
};

/* Opens the source named by `spec` (see top of file). On success *out is a new handle to
 * close with pw_source_close. Returns 0, PW_EINVAL (unknown spec: `d` lists the sources),
 * PW_ENOTSUP (source not built on this OS), PW_ENOMEM or the source's own error. */
int pw_source_open(const char *spec, const pw_source_config_t *cfg, pw_source_t **out,
                   pw_diag_t *d);

/* Takes one sample into `out` (reset first). Returns as the ops' sample. */
int pw_source_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d);

/* Closes and frees the handle. Accepts NULL. */
void pw_source_close(pw_source_t *src);

/* A bounded snapshot of the big-pool blocks of `tag` (4 bytes) into *out (bigpool.h: counts,
 * bytes, a size histogram; no addresses). Returns 0, PW_ENOTSUP (the source has no big-pool
 * table: Linux, replay; `d` says so) or the source's error. The simulated source summarises
 * a table made from its rows (pw_sim_big_pool). */
int pw_source_big_pool(pw_source_t *src, const uint8_t tag[4], struct pw_bigpool_summary_s *out,
                       pw_diag_t *d);

/* The pool events the last sample produced (the ops' events) into out[0..max): how many; 0 for
 * a source without any. */
size_t pw_source_events(pw_source_t *src, struct pw_winevent_s *out, size_t max);

/* The source's name ("linux", ...); never NULL. */
const char *pw_source_name(const pw_source_t *src);

/* NULL-terminated list of the sources built into this binary. */
const pw_source_ops_t *const *pw_source_registry(void);

#endif /* PW_SOURCE_H */
