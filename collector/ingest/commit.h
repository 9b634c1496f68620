/* commit.h: the group-commit policy: when the samples put into the store since the last commit
 * are made durable (pw_ingest_commit) and acknowledged.
 *
 * A commit costs one fdatasync of the WAL and the pages it appends, whatever it carries: at
 * low rates (20 hosts at 10 s: a sample every 0.5 s) a fixed 200-ms timer gave every sample
 * its own commit, about half of the store's CPU per sample (docs/internals/store.md). The
 * policy lets the oldest pending sample wait up to `max_wait_ms` so that low rates share a
 * commit, and commits as soon as `max_samples` samples or `max_bytes` frame bytes are pending
 * so that high rates (10,000 agents: 1,000 samples a second) keep short acks and bounded
 * commits. An ack still means "on disk": the policy only decides when the commit runs.
 *
 * The state is the caller's and clock-free: every call takes the caller's time in ms (the
 * listener's uv_now(), a benchmark's simulated arrival time, a test's fake clock), so the
 * same code decides in the collector, in bench_store and in test_commit. Single-threaded.
 */
#ifndef PW_COMMIT_H
#define PW_COMMIT_H

#include <stdint.h>

/* The policy ([store] commit_interval, commit_max_samples, commit_max_bytes in
 * collector_config.c, which hold the defaults). */
typedef struct pw_commit_policy_s {
    uint64_t max_wait_ms; /* the oldest pending sample is committed at most this long after it
                             was put (>= 1) */
    uint64_t max_samples; /* this many pending samples are committed at once (0: no bound) */
    uint64_t max_bytes;   /* this many pending frame bytes are committed at once (0: no bound) */
} pw_commit_policy_t;

/* The pending samples since the last commit. */
typedef struct pw_commit_s {
    pw_commit_policy_t p;
    uint64_t samples;   /* put since the last commit */
    uint64_t bytes;     /* their frames' bytes */
    uint64_t oldest_ms; /* when the first of them was put */
} pw_commit_t;

/* Starts with nothing pending under policy `p` (copied; max_wait_ms 0 counts as 1). */
void pw_commit_init(pw_commit_t *c, const pw_commit_policy_t *p);

/* A sample of `bytes` frame bytes was put at `now_ms`. Returns 1 when a bound is reached: the
 * commit is due now (before the next sample is taken); 0: it is due at pw_commit_deadline_ms. */
int pw_commit_add(pw_commit_t *c, uint64_t now_ms, uint64_t bytes);

/* pw_commit_add for a caller that commits from a one-shot timer (the listener's loop): returns
 * the delay in ms from `now_ms` to (re)start the timer with (0: commit at the loop's next turn,
 * a bound was reached), or -1 when a timer started earlier is already due at the right time.
 * The caller's commit calls pw_commit_done. */
int64_t pw_commit_arm(pw_commit_t *c, uint64_t now_ms, uint64_t bytes);

/* When the pending samples must be committed (ms, the callers' clock): the oldest one's time
 * plus max_wait_ms, or its time when a bound was reached; UINT64_MAX when nothing is pending. */
uint64_t pw_commit_deadline_ms(const pw_commit_t *c);

/* 1 when something is pending and its commit is due at `now_ms` (deadline <= now_ms), else 0. */
int pw_commit_due(const pw_commit_t *c, uint64_t now_ms);

/* The group commit ran (or the store rolled back): nothing is pending. */
void pw_commit_done(pw_commit_t *c);

/* Samples pending since the last commit. */
uint64_t pw_commit_pending(const pw_commit_t *c);

#endif /* PW_COMMIT_H */
