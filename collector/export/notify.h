/* notify.h: alerts out: turns alert transitions (alert.h) into
 *   - a webhook: POST of one JSON object per transition to a configured URL, and
 *   - the Alertmanager v2 API: POST <base>/api/v2/alerts with a JSON array of alerts
 *     (labels alertname, host, tag, pool, severity; annotations summary, description;
 *     startsAt, endsAt in RFC 3339 UTC; generatorURL when configured).
 * Sources: Alertmanager OpenAPI spec (api/v2/openapi.yaml, "postableAlerts"); Prometheus
 * sends firing alerts again every resend delay (1 min) so that Alertmanager does not resolve
 * them after its resolve_timeout: pw_notify_alert with only_alertmanager = 1 does that.
 *
 * Delivery is asynchronous on the caller's libuv loop and never blocks it: messages are queued
 * (bounded: the oldest is dropped, and counted, when full) and sent one at a time over plain
 * HTTP/1.1 by httpc.h (uv_getaddrinfo when the host is a name, uv_tcp, `Connection: close`,
 * response read with http-parser). A 2xx response is success; 4xx other than 408/429 is permanent
 * (dropped, counted as failed, not retried); anything else (connect error, timeout, 5xx) is retried
 * with exponential backoff (initial, doubling, capped) up to max_attempts. HTTPS is not supported
 * (the URLs are expected on loopback or a trusted network; PW_ECONFIG says so).
 *
 * Webhook body (one object per transition):
 *   {"alertname":..., "host":..., "tag":..., "pool":..., "severity":..., "state":"firing",
 *    "previous_state":"pending", "value":0.72, "summary":..., "description":...,
 *    "startsAt":"2024-01-01T08:00:00.000Z", "endsAt":null | "...", "at":"..."}
 * Alertmanager alert: the tag label is omitted for host-level alerts (tag ""), because a label
 * with an empty value is the same as no label in Prometheus' data model. endsAt is set for
 * resolved alerts (the transition time) and omitted while firing (Alertmanager then applies
 * its resolve_timeout, so firing alerts must be resent: see above). Pending transitions are
 * not sent to Alertmanager (Prometheus does not send pending alerts either); the webhook gets
 * every transition.
 */
#ifndef PW_NOTIFY_H
#define PW_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "alert.h"
#include "error.h"

typedef struct pw_notify_opts_s {
    const char *webhook_url;      /* "http://host[:port][/path]"; NULL or "" = off */
    const char *alertmanager_url; /* "http://host[:port][/prefix]": POSTs go to
                                     <prefix>/api/v2/alerts; NULL or "" = off */
    const char *generator_url;    /* Alertmanager generatorURL; NULL = omitted */
    uint64_t timeout_ms;          /* one attempt (connect to response); 0 = 5000 */
    uint32_t max_attempts;        /* per message; 0 = 5 */
    uint64_t backoff_initial_ms;  /* delay before the 2nd attempt, doubled each time; 0 = 500 */
    uint64_t backoff_max_ms;      /* cap of the delay; 0 = 30000 */
    size_t max_queue;             /* messages waiting; 0 = 1024 */
    size_t batch;                 /* Alertmanager alerts per POST; 0 = 64 */
} pw_notify_opts_t;

typedef struct pw_notify_stats_s {
    uint64_t sent;    /* messages answered 2xx */
    uint64_t failed;  /* dropped after a permanent error or the last attempt */
    uint64_t dropped; /* dropped because the queue was full */
    uint64_t retries; /* attempts after the first */
    uint64_t queued;  /* messages waiting or in flight now */
    int last_status;  /* HTTP status of the last response, 0 = none */
    int last_error;   /* last negative code of a failed attempt, 0 = none */
} pw_notify_stats_t;

typedef struct pw_notify_s pw_notify_t;

/* Creates a notifier on `loop` (borrowed; must outlive the notifier). URLs are copied. With
 * both URLs off it is valid and sends nothing. Returns 0 and *out, PW_ECONFIG (a URL that is
 * not http://host[:port][/path], or https; `d` names the option "webhook_url" or
 * "alertmanager_url"), PW_EINVAL (NULL loop/opts/out) or PW_ENOMEM. */
int pw_notify_new(uv_loop_t *loop, const pw_notify_opts_t *opts, pw_notify_t **out, pw_diag_t *d);

/* Checks opts' two URLs with the parser pw_notify_new uses, sending nothing (--check-config).
 * Returns 0, PW_ECONFIG (d->field "webhook_url" or "alertmanager_url"; d->msg
 * "alerts.<option>: <url>: <reason>"), PW_EINVAL (NULL opts) or PW_ENOMEM. */
int pw_notify_check(const pw_notify_opts_t *opts, pw_diag_t *d);

/* Queues the messages for one transition (see the top for which targets get which states).
 * alertname: e.g. "PoolTagLeak", "NonpagedPoolPressure" (NUL-terminated, borrowed).
 * summary, description: free text (may be NULL = ""), borrowed. only_alertmanager: 1 to
 * queue the Alertmanager alert alone (resending a firing alert). Returns the number of
 * messages queued (0, 1 or 2), PW_EINVAL (NULL n/tr/alertname) or PW_ENOMEM. Never blocks. */
int pw_notify_alert(pw_notify_t *n, const pw_alert_transition_t *tr, const char *alertname,
                    const char *summary, const char *description, int only_alertmanager);

/* Current counters. */
void pw_notify_get_stats(const pw_notify_t *n, pw_notify_stats_t *out);

/* Stops sending: closes the timer and any connection, drops what is queued, frees the
 * notifier once libuv has closed its handles (run the loop to finish). Accepts NULL. */
void pw_notify_close(pw_notify_t *n);

/* The bodies, for tests and the API. Each returns a NUL-terminated JSON text allocated with
 * pw_malloc (free with pw_free), or NULL when out of memory. */
char *pw_notify_webhook_json(const pw_alert_transition_t *tr, const char *alertname,
                             const char *summary, const char *description);
char *pw_notify_alertmanager_json(const pw_alert_transition_t *const *trs, size_t n,
                                  const char *const *alertnames, const char *const *summaries,
                                  const char *const *descriptions, const char *generator_url);

/* Formats ms since the Unix epoch as RFC 3339 UTC with milliseconds
 * ("2024-01-01T08:00:00.000Z") into out (at least 25 bytes). Returns out. */
char *pw_notify_rfc3339(int64_t ms, char *out, size_t size);

#endif /* PW_NOTIFY_H */
