/* agent_config.c: the agent's options, one row each (a table-driven config, as Redis config.c
 * does). The example file deploy/config/agent.conf.example is generated from these rows
 * (`--print-example`) and a test checks that it parses back to the defaults. */
#include "agent.h"
#include "config.h"

#define T pw_agent_cfg_t

/* Platform defaults: the Windows service keeps its state under %ProgramData% (service_win.h). */
#ifdef _WIN32
#define PW_AGENT_DEFAULT_SOURCE "win"
#define PW_AGENT_DEFAULT_SPOOL  "C:\\ProgramData\\poolwatch\\spool"
#else
#define PW_AGENT_DEFAULT_SOURCE "linux"
#define PW_AGENT_DEFAULT_SPOOL  "/var/lib/poolwatch-agent/spool"
#endif

static const char *const fsync_words[] = {"ack", "always", "never", NULL}; /* PW_AGENT_FSYNC_* */
static const char *const events_words[] = {"auto", "on", "off", NULL};     /* PW_AGENT_EVENTS_* */

const pw_config_opt_t pw_agent_options[] = {
    PW_CONFIG_OPT_STRING(
        "agent", "source", PW_AGENT_DEFAULT_SOURCE, T, source, 0,
        "where samples come from: win, linux (slabinfo, and allocinfo and vmallocinfo when "
        "there; linux:slab[,allocinfo][,vmallocinfo] to choose), "
        "replay:FILE[,FILE...], sim:PRESET[/N]"),
    PW_CONFIG_OPT_STRING("agent", "host_name", "", T, host_name, 0,
                         "host name sent in the Hello; must match the client certificate "
                         "(empty: the source's or the OS's name)"),
    PW_CONFIG_OPT_DURATION("agent", "interval", "10s", 100, 86400000, T, interval_ms,
                           "sampling interval"),
    PW_CONFIG_OPT_INT("agent", "keyframe_every", "360", 1, 100000, T, keyframe_every,
                      "samples between keyframes in the spool (bounds the replay on reconnect)"),
    PW_CONFIG_OPT_DURATION("agent", "live_max", "10m", 1000, 600000, T, live_max_ms,
                           "longest live mode (1 s sampling) a collector may ask for"),
    PW_CONFIG_OPT_ENUM("agent", "events", "auto", events_words, T, events,
                       "System-log pool events (srv 2019/2020 pool empty, Resource-Exhaustion-"
                       "Detector 2004) sent with the samples: auto = with the win source, on, "
                       "off"),
    PW_CONFIG_OPT_STRING("agent", "log_level", "info", T, log_level, 0,
                         "error, warn, info or debug"),
    PW_CONFIG_OPT_STRING("spool", "dir", PW_AGENT_DEFAULT_SPOOL, T, spool_dir, PW_CONFIG_PATH,
                         "durable spool directory (samples not yet acked)"),
    PW_CONFIG_OPT_SIZE("spool", "max_size", "256MiB", 65536, INT64_C(1) << 40, T, spool_max_bytes,
                       "spool size limit; past it the oldest samples are dropped and the gap "
                       "is reported"),
    PW_CONFIG_OPT_ENUM("spool", "fsync", "ack", fsync_words, T, spool_fsync,
                       "when a sample is forced to disk: ack = once the collector has not "
                       "acked it within 1 s, or at once while it is away; always = every "
                       "sample; never = the OS decides"),
    PW_CONFIG_OPT_STRING("collector", "endpoints", NULL, T, collectors, PW_CONFIG_REQUIRED,
                         "collector host:port list, tried in turn"),
    PW_CONFIG_OPT_STRING("collector", "server_name", "", T, server_name, 0,
                         "name the collector certificate must carry (empty: the endpoint's "
                         "host)"),
    PW_CONFIG_OPT_STRING("collector", "ca_file", NULL, T, ca_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH,
                         "CA certificate that signed the collector's certificate"),
    PW_CONFIG_OPT_STRING("collector", "cert_file", NULL, T, cert_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH,
                         "this agent's client certificate (CN/SAN = host name)"),
    PW_CONFIG_OPT_STRING("collector", "key_file", NULL, T, key_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH, "private key of cert_file"),
    PW_CONFIG_OPT_STRING("collector", "crl_file", "", T, crl_file, PW_CONFIG_PATH,
                         "the CA's revocation list (PEM): a revoked collector certificate is "
                         "refused; empty = none. The TLS files are read again at a reconnect "
                         "when they changed, and on SIGHUP"),
    PW_CONFIG_OPT_DURATION("collector", "backoff_min", "1s", 100, 3600000, T, backoff_min_ms,
                           "first reconnect delay (doubles, with jitter)"),
    PW_CONFIG_OPT_DURATION("collector", "backoff_max", "5m", 1000, 86400000, T, backoff_max_ms,
                           "longest reconnect delay"),
    PW_CONFIG_OPT_STRING("linux", "proc_root", "", T, proc_root, 0,
                         "prefix of /proc (tests, containers); empty = /"),
    PW_CONFIG_OPT_POOL_SIZE("limits", "nonpaged", "0", 0, 0, T, nonpaged_limit_bytes,
                            "nonpaged pool limit, as Windows writes it (128MB = 128MiB, as "
                            "poolwatch import --nonpaged-limit); 0 = estimate (Windows rule "
                            "table) or MemTotal"),
    PW_CONFIG_OPT_POOL_SIZE("limits", "paged", "0", 0, 0, T, paged_limit_bytes,
                            "paged pool limit (128MB = 128MiB); 0 = estimate"),
    PW_CONFIG_OPT_DURATION("replay", "interval", "15m", 1000, 86400000, T, replay_interval_ms,
                           "time between saved screens that carry no time stamp"),
    PW_CONFIG_OPT_DURATION("replay", "start", "0", 0, 0, T, replay_start_ms,
                           "time of the first screen, ms since the epoch (0 = now)"),
    PW_CONFIG_OPT_DURATION("replay", "pace", "0", 0, 86400000, T, replay_pace_ms,
                           "wall time between replayed screens (0 = the sampling interval)"),
    PW_CONFIG_OPT_BOOL("replay", "exit_when_done", "false", T, exit_when_done,
                       "exit once every screen is replayed and acked"),
    PW_CONFIG_OPT_DURATION("sim", "interval", "0", 0, 86400000, T, sim_interval_ms,
                           "simulated time between samples (0 = the sampling interval)"),
    PW_CONFIG_OPT_DURATION("sim", "start", "0", 0, 0, T, sim_start_ms,
                           "simulated time of the first sample, ms since the epoch (0 = now)"),
    PW_CONFIG_OPT_DURATION("sim", "backfill", "0", 0, INT64_C(31536000000), T, sim_backfill_ms,
                           "start the simulated clock this long before now and sample as fast "
                           "as possible until it catches up (history for demos)"),
    PW_CONFIG_OPT_STRING("commands", "drivers_dir", "", T, drivers_dir, PW_CONFIG_PATH,
                         "where find-tag looks for driver files (empty: "
                         "%SystemRoot%\\System32\\drivers and the driver store's packages, "
                         "or /lib/modules/RELEASE/kernel)"),
    PW_CONFIG_END,
};
