/* analysis_run.h: the analysis pass over the fleet: pressure per host (used / limit, trend,
 * time to exhaustion), leak suspects per (host, tag, pool), and the alerts they raise.
 *
 * The pass keeps a bounded state per host, fed by ingest's observer on every sample (the store
 * is read only to rebuild it after a restart), evaluates hosts with new data every 30 s on the
 * libuv thread pool, and answers the API and the exporters from its results. Alert transitions
 * go to a callback on the loop (the wiring hands them to the notifier). Details and the state's
 * layout: analysis_run.c.
 */
#ifndef PW_ANALYSIS_RUN_H
#define PW_ANALYSIS_RUN_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "alert.h"
#include "analysis.h"
#include "detect.h"
#include "fleet.h"
#include "ingest.h"
#include "suspect.h"

/* The pool label of a HostSilent alert (its tag is empty). */
#define PW_ALERT_POOL_SILENT "silent"
/* The pool label of an AgentFootprint alert: the host's agent itself grows (its tag is empty). */
#define PW_ALERT_POOL_AGENT "agent"
/* The pool labels of a PoolEmpty alert: srv 2019 said the nonpaged pool was empty, srv 2020 the
 * paged pool (its tag is empty; critical; fires at once, resolves after an hour without one). */
#define PW_ALERT_POOL_NP_EMPTY "nonpaged-empty"
#define PW_ALERT_POOL_PG_EMPTY "paged-empty"

/* An alert's name from its key: "PoolTagLeak" (a tag), "HostSilent" (pool "silent"),
 * "AgentFootprint" (pool "agent"), "PoolEmpty" (pool "nonpaged-empty" / "paged-empty"),
 * "NonpagedPoolPressure" or "PagedPoolPressure". Static string. */
const char *pw_analysis_alert_name(const pw_alert_key_t *k);

/* The alert's one-line summary and description for receivers and the API, from its key and
 * value (a pool's used / limit; seconds of silence), into the caller's buffers (truncated). */
void pw_analysis_alert_text(const pw_alert_key_t *k, double value, char *summary, size_t scap,
                            char *description, size_t dcap);

/* An alert transition, with the alert's name (pw_analysis_alert_name) and a one-line summary and
 * description for receivers. `resend`: the
 * alert is still firing and is sent again (Alertmanager forgets alerts not resent). */
typedef void (*pw_analysis_alert_cb)(void *arg, const pw_alert_transition_t *tr, const char *name,
                                     const char *summary, const char *description, int resend);

typedef struct pw_analysis_opts_s {
    const char *alerts_path; /* firing alerts kept across restarts; NULL = not kept */
    /* the suspects' rings and big-pool snapshots, written at a clean stop (pw_analysis_run_close)
     * and put back as their hosts' state is rebuilt, so that their evidence is the same after a
     * restart (alert_file.h, pw_alert_kept_t); NULL = not kept */
    const char *kept_path;
    /* ... and also written in the background while they change, at most once per kept_every_ms
     * (a worker thread writes a copy taken on the loop after a pass; a temporary file renamed
     * over the old one), so a crash (SIGKILL, power) keeps the evidence of the last save: 0 =
     * only at a clean stop ([analysis] kept_every) */
    uint64_t kept_every_ms;
    pw_analysis_alert_cb on_alert; /* NULL: transitions are only logged */
    void *on_alert_arg;
    /* The clock of the alerts (when a condition began, how long it held, when a resolved alert
     * expires), in ms since the Unix epoch; called once per pass with `now_arg`. NULL: the wall
     * clock (the collector). A replay of recorded or simulated time (bench_detect) passes the
     * time of the sample it has reached, so a `for` duration is counted in that time. */
    int64_t (*now_ms)(void *arg);
    void *now_arg;
    /* [alerts] silent_after: a streaming host that sends nothing this long (ms) fires
     * HostSilent; 0 = 3 of the host's intervals, at least 60 s. */
    int64_t silent_after_ms;
    /* A suspect episode began: (host, tag, pool) is listed as a suspect of a live host (it
     * streams from an agent) and was not since its verdict last stopped being a leak. Called on
     * the loop while the pass is published, at most once per episode, and for a tag at most
     * once per SUSPECT_SNAPSHOT_EVERY_MS (1 h) per host and PW_ANALYSIS_SUSPECT_CALLS (8) times
     * per pass (the others wait for a later pass). The wiring asks the host's agent for the
     * tag's big-pool snapshot. Returns 1 when it asked, 0 when the host cannot answer (a Linux
     * host: not called again in this episode), negative to be called again at a later pass
     * (the agent is not connected now). NULL: none. */
    int (*on_suspect)(void *arg, const pw_host_t *h, const pw_suspect_t *s);
    void *on_suspect_arg;
} pw_analysis_opts_t;

/* Calls of pw_analysis_opts_t.on_suspect that asked (returned 1) per pass, at most. */
#define PW_ANALYSIS_SUSPECT_CALLS 8

typedef struct pw_analysis_run_s pw_analysis_run_t;

/* A host's connection, apart from its pool pressure (API `connection`, the dashboard):
 * "streaming" (an agent session is attached and samples come), "stopped" (its agent said
 * Goodbye: a clean stop, never HostSilent), "silent" (it streamed since this collector started
 * and has sent nothing for its silence time, pw_analysis_silent_after_ms: HostSilent's
 * condition), "imported" (a poolmon capture imported by the CLI), "disconnected" (any other
 * host without a session: gone for less than its silence time, or not back since the collector
 * started). now_ms: ms since the epoch, the alerts' clock. rn may be NULL (no analysis: the
 * default silence time). Returns a static string. */
const char *pw_analysis_connection(const pw_analysis_run_t *rn, const pw_host_t *h, int64_t now_ms);

/* Whether host `h`'s history is still loading at now_ms (ms since the epoch, the alerts'
 * clock): its agent streams samples older than its silence time faster than real time (a
 * simulated backfill, a spool resent after an outage; heard within its silence time), or it
 * caught up and no pass has judged its samples since. Meanwhile its level, ETA and suspects
 * are of its samples so far (`last_seen_ms`, days old in a backfill), not of now: the API's
 * `loading_history`, the dashboard's and the CLI's "loading history". Replays of saved screens
 * and imports never load (their screens are their history). 0 when rn is NULL. Loop thread. */
int pw_analysis_loading(const pw_analysis_run_t *rn, const pw_host_t *h, int64_t now_ms);

/* The host's silence time in ms: [alerts] silent_after when set, else 3 of its sampling
 * intervals (Hello.interval_ms), at least 60,000. rn may be NULL. */
int64_t pw_analysis_silent_after_ms(const pw_analysis_run_t *rn, const pw_host_t *h);

/* Creates the pass over ingest's fleet and store (borrowed; they outlive it), restores the
 * firing alerts from opts->alerts_path and, with a loop, starts the pass timer (the first
 * pass 30 s after start). Without a loop, passes run only through pw_analysis_run_pass.
 * Returns 0 or PW_ENOMEM. */
int pw_analysis_run_new(uv_loop_t *loop, pw_ingest_t *ing, const pw_analysis_opts_t *opts,
                        pw_analysis_run_t **out);

/* Saves the firing alerts, stops the timer and frees the pass (in the timer's close callback
 * when it has a loop: run the loop to finish). Accepts NULL. */
void pw_analysis_run_close(pw_analysis_run_t *rn);

/* Runs one whole pass now (the timer's work; tests and the API's ?refresh use it). */
void pw_analysis_run_pass(pw_analysis_run_t *rn);

/* Current suspects by urgency: findings whose pool is critical first, then warn, then the
 * others (ok, unknown limit); within a level the nearest time to exhaustion first (none last),
 * then the head's score descending; each head followed by the other tags of its finding.
 * Borrowed until the next pass. */
size_t pw_analysis_run_suspects(const pw_analysis_run_t *rn, const pw_suspect_t **out);

/* A number that changes whenever the list pw_analysis_run_suspects returns is replaced (a pass
 * published, pw_analysis_run_publish) or a host in it is renamed (its suspects' host names
 * change in place: the pointers stay valid, an order by host does not); while it stays, that
 * list and its pointers stay valid and unchanged.
 * For a reader that keeps something derived from the list across loop turns (remote write's
 * sliced encode keeps it sorted by host). 0 for NULL. */
uint64_t pw_analysis_run_suspects_gen(const pw_analysis_run_t *rn);

/* Before the first pass (the results are empty because nothing was judged yet, not because
 * nothing leaks): ms until it is due (>= 0) on the pass timer; -1 once a pass ran, or without a
 * loop (passes only through pw_analysis_run_pass). */
int64_t pw_analysis_run_first_pass_in_ms(const pw_analysis_run_t *rn);

/* Background saves of the kept file (pw_analysis_opts_t.kept_every_ms) written so far. */
uint64_t pw_analysis_run_kept_saves(const pw_analysis_run_t *rn);

/* Current alerts (pending, firing, recently resolved). */
const pw_alert_set_t *pw_analysis_run_alerts(const pw_analysis_run_t *rn);

/* The pass's result for host `h`, or NULL before the host was judged. */
const pw_analysis_host_t *pw_analysis_run_host(const pw_analysis_run_t *rn, const pw_host_t *h);

/* The time of the newest pool-empty event of host `h`'s `pool` (0: srv 2019, the nonpaged pool
 * was empty; 1: srv 2020, the paged pool) that the analysis holds, ms since the epoch: received
 * since this process started, or read back from the store's last hour after a start (what
 * PoolEmpty fires on). 0 when none. Loop thread (poolwatch_pool_empty_event_timestamp_seconds
 * on /metrics and in remote write). */
int64_t pw_analysis_run_empty_last(const pw_analysis_run_t *rn, const pw_host_t *h, int pool);

/* Bytes of the analysis state of host `h` (rows, hash slots, tag bytes, candidates with their
 * rings, totals): what the scale benchmark reports per host. 0 for a host never seen. */
size_t pw_analysis_run_state_bytes(const pw_analysis_run_t *rn, const pw_host_t *h);

/* What the passes cost, for /metrics and the scale benchmark. */
typedef struct pw_analysis_stats_s {
    uint64_t passes;       /* published passes */
    uint64_t hosts_judged; /* host evaluations (hosts with new data), all passes */
    uint64_t cands_judged; /* candidate evaluations (pw_detect_eval calls), all passes */
    uint64_t work_ns;      /* time the thread pool spent evaluating, all passes (ns) */
    uint64_t last_work_ns; /* ... in the last pass */
    uint64_t last_pass_ns; /* the last pass from its start on the loop to its publication */
    uint64_t max_loop_ns;  /* the longest the loop spent in one of the pass's steps (collecting
                              the hosts, publishing): what acks and requests may wait */
} pw_analysis_stats_t;

/* Copies the counters into *out. */
void pw_analysis_run_stats(const pw_analysis_run_t *rn, pw_analysis_stats_t *out);

/* Feeds host `h`'s analysis state with table `t` (its time, rows and totals) of boot instance
 * `boot` (boot_len bytes) as ingest's observer feeds a streamed sample, without the store or the
 * fleet's table: for a benchmark that builds days of history at the resolution the state keeps
 * (the same update path as samples and the restart's rebuild). Tables older than the state's
 * newest are skipped. Returns 0 or PW_ENOMEM. */
int pw_analysis_run_feed(pw_analysis_run_t *rn, const pw_host_t *h, const pw_sample_t *t,
                         const uint8_t *boot, size_t boot_len);

/* Test seams: publish suspects judged elsewhere (copied; they replace the last pass's), set a
 * host's result as a pass would leave it, and the alert set for a caller to evaluate rules
 * into. Return 0 or PW_ENOMEM. */
int pw_analysis_run_publish(pw_analysis_run_t *rn, const pw_suspect_t *s, size_t n);
int pw_analysis_run_set_host(pw_analysis_run_t *rn, const pw_host_t *h,
                             const pw_analysis_host_t *res);
pw_alert_set_t *pw_analysis_run_alert_set(pw_analysis_run_t *rn);

/* One host pool's time to exhaustion, the same in every view (the API's hosts, leaks and alerts,
 * /metrics, remote write and so the global view, the CLI): the pool's own trend when it has
 * one; when the pool has too few points for a trend (an import of 2 or 3 screens), the soonest
 * ETA of the host's leak suspects in that pool from their own growth (pw_pressure_leak_eta, as
 * /api/v1/leaks shows each); a pool at or over its limit already ran out (ran_out_ms). */
typedef struct pw_host_eta_s {
    pw_leak_eta_t e;    /* basis, ETA and range from the host's newest point (-1: none), note */
    int ran_out;        /* 1: the pool is at or over its limit */
    int pending;        /* 1: no analysis pass judged the host yet (since the collector started,
                           or since it joined), and no verdict was kept across a restart: no
                           ETA, the note says when the first pass is due; not the caller's
                           points' trend, which may not be the analysis' */
    int64_t ran_out_ms; /* the pool is at or over its limit: the first point of its newest run
                           of points at or over it in the host's history ring (ms since the
                           epoch; the ring's oldest when the whole ring is over); 0 when not */
} pw_host_eta_t;

/* Writes into *e how the pass reckoned a pool's ETA (`how`, from pw_analysis_host_t) for
 * people and the API: its method, the rate it rests on and the window it came from, and the
 * note, e.g. "from +550.0 KiB/h, the pool's pace in the 10.0 h it grew of the last 23.8 h
 * (+5.4 MiB a day), that day repeated (rising, p 1e-10)"; a window cut at a boot says so, and
 * when that boot is too recent for the day's method. pr: the pool's pressure (points, p).
 * Leaves e's basis and ETAs alone. Pure. */
void pw_analysis_eta_note(const pw_pool_how_t *how, const pw_pressure_t *pr, pw_leak_eta_t *e);

/* Fills *out for pool `pool` (PW_POOL_NONPAGED or PW_POOL_PAGED) of host `h` from its pressure
 * `pr` (the pass's, or computed by the caller when no pass judged it) and the last pass's
 * suspects of `h` in that pool (a session pool's count as paged). When rn has not judged `h`
 * (pw_analysis_run_host NULL) and its limit is known, there is no ETA yet (`pending`), whatever
 * `pr` says: a pool at or over its limit still ran out. rn may be NULL (no suspects; `pr` is
 * taken as the verdict).
 * Loop thread (the suspects are the published ones). Returns 0 or PW_EINVAL (NULL h, pr or
 * out). */
int pw_analysis_host_eta(const pw_analysis_run_t *rn, const pw_host_t *h, int pool,
                         const pw_pressure_t *pr, pw_host_eta_t *out);

#endif /* PW_ANALYSIS_RUN_H */
