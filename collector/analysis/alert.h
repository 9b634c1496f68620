/* alert.h: alert state machine: inactive -> pending ->
 * firing -> resolved, keyed by labels (host, tag, pool, severity), with a `for` duration and
 * hysteresis, driven by an injected clock. Pure: no I/O, no clock reads; every call takes
 * now_ms and may emit one transition that the notifier (webhook, Alertmanager) turns into a
 * message.
 *
 * Semantics (Prometheus alerting rules for pending/for/firing; hysteresis is ours):
 *   - the condition starts to hold when value >= threshold;
 *   - INACTIVE or RESOLVED and the condition holds -> PENDING (active_since = now), or
 *     straight to FIRING when for_ms == 0;
 *   - PENDING and value < threshold -> INACTIVE (a pending alert has no hysteresis: the
 *     condition must hold continuously for for_ms, as in Prometheus);
 *   - PENDING and now - active_since >= for_ms (and the condition holds) -> FIRING;
 *   - FIRING stays firing while value >= threshold - hysteresis; below it -> RESOLVED;
 *   - RESOLVED entries are kept resolved_keep_ms (so the notifier can repeat "resolved", as
 *     Prometheus keeps resolved alerts 15 min) and then dropped by pw_alert_expire.
 * Keys are compared byte by byte on all four labels.
 */
#ifndef PW_ALERT_H
#define PW_ALERT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    PW_ALERT_INACTIVE = 0,
    PW_ALERT_PENDING = 1,
    PW_ALERT_FIRING = 2,
    PW_ALERT_RESOLVED = 3
} pw_alert_state_t;

#define PW_ALERT_LABEL_MAX 128 /* bytes of a label value including the NUL */

/* Labels of one alert instance. Strings are NUL-terminated, copied into the set. */
typedef struct pw_alert_key_s {
    char host[PW_ALERT_LABEL_MAX];
    char tag[PW_ALERT_LABEL_MAX]; /* "" for host-level alerts (pool pressure) */
    char pool[16];                /* "nonpaged", "paged", ... */
    char severity[16];            /* "warning", "critical" */
} pw_alert_key_t;

typedef struct pw_alert_rule_s {
    double threshold;         /* the condition is value >= threshold */
    double hysteresis;        /* firing resolves only when value < threshold - hysteresis
                                 (>= 0, same unit as value) */
    int64_t for_ms;           /* condition must hold continuously this long before firing */
    int64_t resolved_keep_ms; /* how long a resolved alert is kept; default 15 min */
} pw_alert_rule_t;

/* One state change, for the notifier. */
typedef struct pw_alert_transition_s {
    pw_alert_key_t key;
    pw_alert_state_t from, to;
    int64_t at_ms;           /* now_ms of the call */
    int64_t active_since_ms; /* when the condition started to hold (episode start) */
    double value;            /* the value that caused the change */
} pw_alert_transition_t;

typedef struct pw_alert_set_s pw_alert_set_t;

/* Creates an empty set into *out. Returns 0 or PW_ENOMEM. Free with pw_alert_set_free. */
int pw_alert_set_new(pw_alert_set_t **out);

/* Frees the set (accepts NULL). */
void pw_alert_set_free(pw_alert_set_t *set);

/* Feeds one evaluation of `rule` for `key` at now_ms. Returns 1 when a transition was written
 * to *tr (tr may be NULL), 0 when the state did not change, PW_EINVAL (NULL set/rule/key,
 * negative for/hysteresis, NaN value, key label not NUL-terminated) or PW_ENOMEM (new key
 * could not be stored; the set is unchanged). A key in INACTIVE state is not stored. */
int pw_alert_eval(pw_alert_set_t *set, const pw_alert_rule_t *rule, const pw_alert_key_t *key,
                  double value, int64_t now_ms, pw_alert_transition_t *tr);

/* Puts `key` in FIRING state since `since_ms` with `value`, without a transition: for alerts
 * that were firing when the process stopped (the receivers already know them; the next
 * evaluations resolve them as usual). Returns 0, PW_EINVAL (NULL set/key, label not
 * NUL-terminated, NaN value) or PW_ENOMEM. */
int pw_alert_restore(pw_alert_set_t *set, const pw_alert_key_t *key, int64_t since_ms,
                     double value);

/* pw_alert_restore for a PENDING or FIRING alert (`state`): a pending alert keeps the start of
 * its `for` duration across a restart, so it fires when it would have without the restart, not
 * a whole `for` later. Returns 0, PW_EINVAL (as pw_alert_restore, or another state) or
 * PW_ENOMEM. */
int pw_alert_restore_state(pw_alert_set_t *set, const pw_alert_key_t *key, pw_alert_state_t state,
                           int64_t since_ms, double value);

/* State of `key` (INACTIVE when unknown); *since_ms (may be NULL) gets the episode start. */
pw_alert_state_t pw_alert_state(const pw_alert_set_t *set, const pw_alert_key_t *key,
                                int64_t *since_ms);

/* Drops resolved entries older than their rule's resolved_keep_ms at now_ms. Returns the
 * number dropped. */
size_t pw_alert_expire(pw_alert_set_t *set, int64_t now_ms);

/* Removes every entry of `host` (its key's host label, compared without case, as host names
 * are). For each one pending or firing, cb (may be NULL) is first given its transition to
 * RESOLVED at now_ms, for the receivers; the entry is then gone (not kept as resolved).
 * Returns the number removed. */
size_t pw_alert_drop_host(pw_alert_set_t *set, const char *host, int64_t now_ms,
                          void (*cb)(const pw_alert_transition_t *tr, void *arg), void *arg);

/* Number of stored entries (pending, firing or resolved). */
size_t pw_alert_count(const pw_alert_set_t *set);

/* Calls cb for every stored entry in unspecified order (e.g. to resend firing alerts to
 * Alertmanager, which expects repeats). The transition's from == to == current state. */
void pw_alert_foreach(const pw_alert_set_t *set,
                      void (*cb)(const pw_alert_transition_t *cur, void *arg), void *arg);

/* Lower-case name of a state ("inactive", "pending", "firing", "resolved"); static. */
const char *pw_alert_state_name(pw_alert_state_t s);

#endif /* PW_ALERT_H */
