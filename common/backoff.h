/* backoff.h: exponential backoff, the one rule of every retry loop (the agent's reconnects,
 * the collector's webhook, Alertmanager and remote-write senders).
 *
 * The base delay of retry n (n = 0 for the first retry) is min_ms doubled n times, capped at
 * max_ms. Senders that retry one request (collector/notify.c, collector/remote_write.c) wait
 * the base delay itself (pw_backoff_delay_ms); the agent, whose whole fleet reconnects at once
 * when a collector restarts, adds "equal jitter" (pw_backoff_next). Pure: no clock, no random
 * source, so tests drive it with their own numbers. */
#ifndef PW_BACKOFF_H
#define PW_BACKOFF_H

#include <stdint.h>

/* The base delay in ms of retry `n` (0-based): min_ms * 2^n, capped at max_ms (also when
 * max_ms < min_ms). No overflow: doubling stops at the cap. */
uint64_t pw_backoff_delay_ms(uint64_t min_ms, uint64_t max_ms, uint32_t n);

/* A jittered backoff's state. */
typedef struct pw_backoff_s {
    uint64_t min_ms;  /* first delay */
    uint64_t max_ms;  /* cap */
    uint32_t attempt; /* failures since the last success */
} pw_backoff_t;

/* Initialises a backoff between min_ms and max_ms (ms; 0 = defaults 1,000 and 300,000; a max
 * below min is raised to min). */
void pw_backoff_init(pw_backoff_t *b, uint64_t min_ms, uint64_t max_ms);

/* Delay before the next attempt, in ms, and counts the attempt. "Equal jitter": with
 * base = pw_backoff_delay_ms(min, max, attempt), the delay is base/2 + (rnd mod (base/2 + 1))
 * (base/2 rounded down; for an odd base the upper end is base/2 + base - base/2), so it is never
 * below half the base (no thundering herd of instant retries) and never above max.
 * `rnd` is any uniformly random 32-bit value. */
uint64_t pw_backoff_next(pw_backoff_t *b, uint32_t rnd);

/* Back to the first delay (after a session that got as far as an Ack). */
void pw_backoff_reset(pw_backoff_t *b);

#endif /* PW_BACKOFF_H */
