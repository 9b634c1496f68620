/* evsub.h: the agent's subscription to the System log's pool events (common/winevent.h): srv
 * 2019/2020 ("the pool was empty") and Resource-Exhaustion-Detector 2004 (low virtual memory,
 * naming the top pool tags).
 *
 * The subscription itself is a replaceable function, as NtQuerySystemInformation is for the
 * pool source (source_win.h): on Windows EvtSubscribe on the System log with PW_EVSUB_QUERY,
 * each event rendered as XML (EvtRenderEventXml, evsub_win.c); elsewhere none (PW_ENOTSUP);
 * tests install one that feeds recorded event XML (pw_evsub_set_fns). Whatever the function
 * delivers is parsed here (pw_winevent_parse), events of other kinds are skipped, and the rest
 * wait in a bounded queue until the agent's next sample carries them (Sample.events): they are
 * spooled, resent and acked with it, so a collector that is away loses none.
 *
 * The queue is filled from the subscription's thread and emptied by the agent's loop: every
 * function here may be called from any thread except pw_evsub_open/close (the loop's).
 */
#ifndef PW_EVSUB_H
#define PW_EVSUB_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "winevent.h"

/* The subscription's XPath query (Microsoft's event query syntax): the three events of the
 * last 24 h and every one after. An agent that starts (after a reboot that a pool running out
 * forced) reports those of the day before too; the collector keeps each event once. */
#define PW_EVSUB_QUERY                                                                             \
    "*[System[((Provider[@Name='Srv'] and (EventID=2019 or EventID=2020)) or "                     \
    "(Provider[@Name='Microsoft-Windows-Resource-Exhaustion-Detector'] and EventID=2004)) and "    \
    "TimeCreated[timediff(@SystemTime) <= 86400000]]]"

#define PW_EVSUB_QUEUE_MAX  1024 /* events waiting for a sample; more are counted as dropped */
#define PW_EVSUB_PER_SAMPLE 64   /* events one sample carries (the rest go with the next) */

/* Hands the subscriber one event's XML (UTF-8 or UTF-16 with its BOM, `len` bytes, borrowed
 * for the call). Any thread. */
typedef void (*pw_evsub_deliver_fn)(void *ctx, const void *xml, size_t len);

/* Starts a subscription with query `query` that calls deliver(ctx, ...) for each event until
 * the stop function is called with *handle. Returns 0, PW_ENOTSUP (no event log here) or
 * another negative code with `d` saying what. */
typedef int (*pw_evsub_start_fn)(const char *query, pw_evsub_deliver_fn deliver, void *ctx,
                                 void **handle, pw_diag_t *d);
/* Ends a subscription: no deliver call runs or starts after it returns. */
typedef void (*pw_evsub_stop_fn)(void *handle);

/* Replaces the subscription functions (NULL, NULL: the platform's own). Before pw_evsub_open. */
void pw_evsub_set_fns(pw_evsub_start_fn start, pw_evsub_stop_fn stop);

typedef struct pw_evsub_s pw_evsub_t;

/* Called (any thread) when events were queued: the agent wakes its loop to take a sample. */
typedef void (*pw_evsub_notify_fn)(void *arg);

/* Starts the subscription; *out is the caller's (pw_evsub_close). Returns 0; PW_ENOTSUP (no
 * event log: the agent goes on without events); PW_ENOMEM; the start function's error. */
int pw_evsub_open(pw_evsub_notify_fn notify, void *arg, pw_evsub_t **out, pw_diag_t *d);

/* Stops the subscription and frees it. Accepts NULL. */
void pw_evsub_close(pw_evsub_t *es);

/* Copies up to `max` of the oldest queued events into out[] without removing them. Returns
 * how many. */
size_t pw_evsub_peek(pw_evsub_t *es, pw_winevent_t *out, size_t max);

/* Removes the `n` oldest queued events (those a spooled sample now carries). */
void pw_evsub_drop(pw_evsub_t *es, size_t n);

/* Counters: events queued since open, skipped (other kinds), dropped (queue full), and XML
 * that did not parse; `waiting`: events in the queue now (not yet carried by a sample). */
typedef struct pw_evsub_stats_s {
    uint64_t queued, skipped, dropped, bad_xml;
    uint64_t waiting;
} pw_evsub_stats_t;
void pw_evsub_stats(pw_evsub_t *es, pw_evsub_stats_t *out);

/* Feeds one event's XML as the subscription's thread would (what deliver does). For the
 * platform functions and tests. */
void pw_evsub_deliver(void *es, const void *xml, size_t len);

#ifdef _WIN32
/* The platform's subscription (evsub_win.c): EvtSubscribe on the System log. */
int pw__evsub_win_start(const char *query, pw_evsub_deliver_fn deliver, void *ctx, void **handle,
                        pw_diag_t *d);
void pw__evsub_win_stop(void *handle);
#endif

#endif /* PW_EVSUB_H */
