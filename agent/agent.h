/* agent.h: the agent's wiring: a libuv loop with a sampling timer that reads
 * the configured source, delta-encodes against the previous sample, appends the frame to the
 * durable spool and streams it to the collector over mutual TLS; acks trim the spool; after a
 * reconnect everything after the collector's last stored seq is sent again.
 *
 * Stream rules (docs/protocol.md): every session starts with Hello; the collector answers
 * with an Ack naming the last seq it stored for this agent instance; the agent then sends a
 * keyframe rebuilt from its spool at that point (dict_reset, whole dictionary) followed by
 * the spooled frames after it, byte for byte, then live samples. When that seq is above the
 * spool's last (a repaired, lost or restored spool), the agent continues at the collector's
 * seq + 1 with a fresh chain (docs/internals/spool.md).
 */
#ifndef PW_AGENT_H
#define PW_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "findtag.h"

/* Configuration: the agent's option table (agent_config.c) fills it. Strings are owned by
 * the config layer. Times in ms, sizes in bytes. */
/* spool.fsync: when a spooled sample is forced to disk (fdatasync; _commit on Windows).
 * ACK (default): a sample is durable once the collector acks it (its ack means "on the
 *   collector's disk") or once the agent syncs it; the agent syncs at once while no session
 *   streams (collector away: every sample, as ALWAYS) and otherwise when a sample is still
 *   unacked PW_AGENT_ACK_SYNC_MS after it was written. A crash of the host in that window can
 *   lose a sample that the collector did not store; an agent crash loses nothing (the page
 *   cache survives it).
 * ALWAYS: every sample before it is sent. NEVER: the OS decides (tests, tmpfs). */
enum { PW_AGENT_FSYNC_ACK = 0, PW_AGENT_FSYNC_ALWAYS = 1, PW_AGENT_FSYNC_NEVER = 2 };
#define PW_AGENT_ACK_SYNC_MS 1000u

/* agent.events: whether the agent subscribes to the System log's pool events (evsub.h). AUTO:
 * with the Windows source; ON: whatever the source (a test's recorded events); OFF: never. */
enum { PW_AGENT_EVENTS_AUTO = 0, PW_AGENT_EVENTS_ON = 1, PW_AGENT_EVENTS_OFF = 2 };

typedef struct pw_agent_cfg_s {
    char *source;             /* "linux", "win", "replay:FILE,...", "sim:PRESET/N" */
    char *host_name;          /* "" = the source's or the OS's name */
    uint64_t interval_ms;     /* sampling interval, default 10 s */
    int64_t keyframe_every;   /* samples between keyframes in the spool, default 360 */
    uint64_t live_max_ms;     /* live mode cap, 10 min */
    char *spool_dir;          /* durable spool directory */
    uint64_t spool_max_bytes; /* default 256 MiB */
    int spool_fsync;          /* PW_AGENT_FSYNC_*: when spooled samples are fdatasync'ed */
    char *collectors;         /* "host:port[,host:port...]" tried in turn */
    char *server_name;        /* name in the collector's certificate ("" = endpoint host) */
    char *ca_file;
    char *cert_file;
    char *key_file;
    char *crl_file;                /* the CA's CRL(s) for the collector's certificate; "" = none */
    uint64_t backoff_min_ms;       /* 1 s */
    uint64_t backoff_max_ms;       /* 5 min */
    char *proc_root;               /* linux source: prefix of /proc */
    uint64_t nonpaged_limit_bytes; /* > 0 overrides the estimate */
    uint64_t paged_limit_bytes;
    uint64_t replay_interval_ms; /* replay: spacing of unstamped screens (15 min) */
    uint64_t replay_start_ms;    /* replay: time of the first screen (0 = now) */
    uint64_t replay_pace_ms;     /* replay: wall time between samples (0 = interval_ms) */
    uint64_t sim_interval_ms;    /* sim: simulated time between samples (0 = interval) */
    uint64_t sim_start_ms;       /* sim: simulated time of the first sample (0 = now) */
    uint64_t sim_backfill_ms;    /* sim: start this long before now, then catch up at once */
    char *drivers_dir;           /* find-tag: where driver files are ("" = OS default) */
    char *log_level;             /* error, warn, info, debug */
    int events;                  /* PW_AGENT_EVENTS_* */
    bool exit_when_done;         /* finite source (replay): exit once all is acked */
} pw_agent_cfg_t;

/* The agent's option table (agent_config.c), for pw_config_* (common/config.h). */
extern const pw_config_opt_t pw_agent_options[];

/* What --check-config verifies beyond the syntax: the source opens (its spec, replay files,
 * sim preset, /proc access), every collector endpoint is host:port, the certificate files load
 * and the key matches, the spool's directory (or its parent) is writable. Returns 0 or the
 * first problem's code with `d` naming it. */
int pw_agent_check(const pw_agent_cfg_t *cfg, pw_diag_t *d);

/* Runs the agent until SIGINT/SIGTERM (or, with exit_when_done, until a finite source is
 * exhausted and acked). Returns 0, or a negative error when start-up fails (`d` says what:
 * source, spool, certificates, endpoints). */
int pw_agent_run(const pw_agent_cfg_t *cfg, pw_diag_t *d);

/* pw_agent_close after a stop (SIGINT, SIGTERM, pw_agent_stop, a replay's end with
 * exit_when_done) first sends a streaming collector Goodbye (docs/protocol.md): the host shows
 * "stopped", not silent. A close without such a stop sends none.
 *
 * pw_agent_run in parts, for a program that drives the agent by hand (the benchmark of its
 * per-sample cost, tests/bench/bench_agent.c): pw_agent_run is pw_agent_open, the loop until
 * a stop, pw_agent_close.
 * pw_agent_open does all of pw_agent_run's start-up (source, spool, uplink, timers; the
 * uplink starts connecting, the sample timer's first tick is due at once) and returns the
 * agent in *out; 0 or the error pw_agent_run would return. `cfg` must outlive it.
 * pw_agent_poll runs the agent's loop for `ms` (connecting, Hello and its Ack, writes, acks,
 * the sample and sync timers); returns 1 when a session streams to a collector, else 0.
 * pw_agent_sample_step runs what the sample timer runs, once: source read, delta encode, pack,
 * spool append under spool.fsync, the send to a streaming session and the fsync policy's
 * bookkeeping (a simulated source that is ahead of the wall clock takes no sample). Returns
 * the last seq appended.
 * pw_agent_close stops and frees the agent (accepts NULL). */
typedef struct pw_agent_s pw_agent_t;
int pw_agent_open(const pw_agent_cfg_t *cfg, pw_agent_t **out, pw_diag_t *d);
int pw_agent_poll(pw_agent_t *a, uint64_t ms);
uint64_t pw_agent_sample_step(pw_agent_t *a);
void pw_agent_close(pw_agent_t *a);

/* How long the sample timer of a simulated source waits after a sample (or a tick that came
 * too early for the next one). Its samples are stamped by the simulated clock (sim.start +
 * k * sim.interval, agent/source_sim.h), so the next one is due when its stamp comes, not an
 * interval after this tick: timed from the tick, a host whose catch-up (sim.backfill) ended
 * between two stamps had every later sample stamped up to an interval in the past, and a
 * host without a backfill drifted behind by each tick's lateness.
 * last_ts_ms: the stamp of the last sample (ms since the epoch); step_ms: the simulated time
 * between samples; wall_ms: the wall clock (ms since the epoch); catch_up: 1 when the agent
 * catches up at once (sim.backfill, or no sim.start: the host follows the wall clock); max_ms:
 * the sampling interval, the longest wait.
 * Returns the ms until the next stamp (0 .. max_ms); when that stamp is already past, 1 with
 * catch_up (the next sample at once) or -1 without (the timer keeps the interval's pace). */
int64_t pw_agent_sim_wait_ms(uint64_t last_ts_ms, uint64_t step_ms, uint64_t wall_ms, int catch_up,
                             uint64_t max_ms);

/* Asks the running pw_agent_run to stop as SIGTERM does (it then returns 0). Callable from any
 * thread: the Windows service's control handler (service_win.c) calls it on SERVICE_CONTROL_STOP,
 * where no signal exists. A call made before the agent runs stops it as soon as it starts. */
void pw_agent_stop(void);

/* find-tag is its own module (findtag.h); the agent's tests know it by this name. */
static inline int pw_agent_find_tag(const char *dir, const uint8_t *tag, size_t tag_len,
                                    pw_findtag_cb cb, void *arg)
{
    return pw_findtag_scan(dir, tag, tag_len, cb, arg);
}

#endif /* PW_AGENT_H */
