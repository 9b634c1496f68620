/* notify.c: webhook and Alertmanager v2 delivery on the libuv loop (see notify.h). */
#include "notify.h"
#include "clock.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "backoff.h"
#include "httpc.h"
#include "log.h"
#include "net.h"
#include "url.h"

#define MOD "notify"

enum { T_WEBHOOK = 0, T_AM = 1 };

typedef struct target_s {
    int on;
    char host[PW_NET_HOST_MAX];
    char port[8];
    char *path;       /* request path, "/..." */
    pw_httpc_t *http; /* the client for host:port + path (httpc.h) */
} target_t;

typedef struct msg_s {
    struct msg_s *next;
    int target;
    json_t *body; /* object (webhook) or array (Alertmanager) */
    uint32_t attempts;
    uint64_t not_before; /* uv_now() ms */
} msg_t;

struct pw_notify_s {
    uv_loop_t *loop;
    pw_notify_opts_t o;
    char *gen_url;
    target_t t[2];
    msg_t *head, *tail;
    size_t queued;
    pw_notify_stats_t st;
    uv_timer_t timer; /* backoff wait */
    int closing;
    msg_t *cur; /* the message in flight */
};

static void pump(pw_notify_t *n);

/* ---- JSON -------------------------------------------------------------------------------- */

char *pw_notify_rfc3339(int64_t ms, char *out, size_t size)
{
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)s * 1000);
    struct tm tm;
    pw_clock_gmtime((int64_t)s, &tm); /* zeroed when out of range: a 1900 date, not garbage */
    int n = snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
    if (n < 0 || (size_t)n >= size) /* callers pass 32 bytes: only a year past 9999 */
        out[0] = '\0';
    return out;
}

static json_t *str_or_empty(const char *s)
{
    return json_string(s ? s : "");
}

char *pw_notify_webhook_json(const pw_alert_transition_t *tr, const char *alertname,
                             const char *summary, const char *description)
{
    char a[40], b[40], c[40];
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "alertname", str_or_empty(alertname));
    json_object_set_new(o, "host", json_string(tr->key.host));
    json_object_set_new(o, "tag", json_string(tr->key.tag));
    json_object_set_new(o, "pool", json_string(tr->key.pool));
    json_object_set_new(o, "severity", json_string(tr->key.severity));
    json_object_set_new(o, "state", json_string(pw_alert_state_name(tr->to)));
    json_object_set_new(o, "previous_state", json_string(pw_alert_state_name(tr->from)));
    json_object_set_new(o, "value", json_real(tr->value));
    json_object_set_new(o, "summary", str_or_empty(summary));
    json_object_set_new(o, "description", str_or_empty(description));
    json_object_set_new(o, "startsAt",
                        json_string(pw_notify_rfc3339(tr->active_since_ms, a, sizeof(a))));
    json_object_set_new(o, "endsAt",
                        tr->to == PW_ALERT_RESOLVED || tr->to == PW_ALERT_INACTIVE
                            ? json_string(pw_notify_rfc3339(tr->at_ms, b, sizeof(b)))
                            : json_null());
    json_object_set_new(o, "at", json_string(pw_notify_rfc3339(tr->at_ms, c, sizeof(c))));
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (txt == NULL)
        return NULL;
    char *r = pw_strdup(txt);
    free(txt);
    return r;
}

static json_t *am_alert(const pw_alert_transition_t *tr, const char *alertname, const char *summary,
                        const char *description, const char *gen)
{
    char a[40], b[40];
    json_t *o = json_object(), *l = json_object(), *an = json_object();
    if (o == NULL || l == NULL || an == NULL) {
        json_decref(o);
        json_decref(l);
        json_decref(an);
        return NULL;
    }
    json_object_set_new(l, "alertname", str_or_empty(alertname));
    json_object_set_new(l, "host", json_string(tr->key.host));
    if (tr->key.tag[0] != '\0')
        json_object_set_new(l, "tag", json_string(tr->key.tag));
    json_object_set_new(l, "pool", json_string(tr->key.pool));
    json_object_set_new(l, "severity", json_string(tr->key.severity));
    json_object_set_new(an, "summary", str_or_empty(summary));
    json_object_set_new(an, "description", str_or_empty(description));
    json_object_set_new(o, "labels", l);
    json_object_set_new(o, "annotations", an);
    json_object_set_new(o, "startsAt",
                        json_string(pw_notify_rfc3339(tr->active_since_ms, a, sizeof(a))));
    if (tr->to == PW_ALERT_RESOLVED || tr->to == PW_ALERT_INACTIVE)
        json_object_set_new(o, "endsAt", json_string(pw_notify_rfc3339(tr->at_ms, b, sizeof(b))));
    if (gen != NULL && gen[0] != '\0')
        json_object_set_new(o, "generatorURL", json_string(gen));
    return o;
}

char *pw_notify_alertmanager_json(const pw_alert_transition_t *const *trs, size_t n,
                                  const char *const *alertnames, const char *const *summaries,
                                  const char *const *descriptions, const char *generator_url)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *a = am_alert(trs[i], alertnames[i], summaries ? summaries[i] : NULL,
                             descriptions ? descriptions[i] : NULL, generator_url);
        if (a == NULL || json_array_append_new(arr, a) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    char *txt = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (txt == NULL)
        return NULL;
    char *r = pw_strdup(txt);
    free(txt);
    return r;
}

/* ---- configuration ----------------------------------------------------------------------- */

static int parse_url(const char *url, const char *opt, int am, target_t *t, pw_diag_t *d)
{
    memset(t, 0, sizeof(*t));
    if (url == NULL || url[0] == '\0')
        return 0;
    pw_url_t u;
    pw_diag_t ud;
    pw_diag_clear(&ud);
    int r = pw_url_parse_request(url, &u, &ud);
    if (r != 0 || u.tls) {
        const char *why = ud.msg;
        if (r != 0 && strcmp(ud.field, "url") == 0)
            why = "not an http://host[:port][/path] URL";
        else if (r == 0 || strcmp(ud.field, "scheme") == 0)
            why = "only http:// is supported (put a TLS proxy on loopback for https)";
        return pw_diag_set(d, PW_ECONFIG, 0, ud.offset, opt, "alerts.%s: %s: %s", opt, url, why);
    }
    memcpy(t->host, u.host, sizeof(t->host));
    memcpy(t->port, u.port, sizeof(t->port));
    size_t pl = strlen(u.path);
    if (am) {
        while (pl > 0 && u.path[pl - 1] == '/')
            pl--;
        t->path = pw_malloc(pl + sizeof("/api/v2/alerts"));
        if (t->path == NULL)
            return PW_ENOMEM;
        memcpy(t->path, u.path, pl);
        memcpy(t->path + pl, "/api/v2/alerts", sizeof("/api/v2/alerts"));
    } else if ((t->path = pw_strdup(u.path)) == NULL) {
        return PW_ENOMEM;
    }
    t->on = 1;
    return 0;
}

/* Both targets of opts, as pw_notify_new and pw_notify_check read them. */
static int parse_targets(const pw_notify_opts_t *opts, target_t t[2], pw_diag_t *d)
{
    int r = parse_url(opts->webhook_url, "webhook_url", 0, &t[T_WEBHOOK], d);
    if (r == 0)
        r = parse_url(opts->alertmanager_url, "alertmanager_url", 1, &t[T_AM], d);
    return r;
}

int pw_notify_check(const pw_notify_opts_t *opts, pw_diag_t *d)
{
    if (opts == NULL)
        return PW_EINVAL;
    target_t t[2];
    memset(t, 0, sizeof(t));
    int r = parse_targets(opts, t, d);
    pw_free(t[0].path);
    pw_free(t[1].path);
    return r;
}

/* Frees the notifier; its HTTP clients are closed (they free themselves). */
static void free_notify(pw_notify_t *n)
{
    for (int i = 0; i < 2; i++) {
        pw_httpc_close(n->t[i].http);
        pw_free(n->t[i].path);
    }
    pw_free(n->gen_url);
    pw_free(n);
}

int pw_notify_new(uv_loop_t *loop, const pw_notify_opts_t *opts, pw_notify_t **out, pw_diag_t *d)
{
    if (loop == NULL || opts == NULL || out == NULL)
        return PW_EINVAL;
    pw_notify_t *n = pw_calloc(1, sizeof(*n));
    if (n == NULL)
        return PW_ENOMEM;
    n->loop = loop;
    n->o = *opts;
    n->o.webhook_url = n->o.alertmanager_url = n->o.generator_url = NULL;
    if (n->o.timeout_ms == 0)
        n->o.timeout_ms = 5000;
    if (n->o.max_attempts == 0)
        n->o.max_attempts = 5;
    if (n->o.backoff_initial_ms == 0)
        n->o.backoff_initial_ms = 500;
    if (n->o.backoff_max_ms == 0)
        n->o.backoff_max_ms = 30000;
    if (n->o.max_queue == 0)
        n->o.max_queue = 1024;
    if (n->o.batch == 0)
        n->o.batch = 64;
    int r = parse_targets(opts, n->t, d);
    if (r == 0 && opts->generator_url && (n->gen_url = pw_strdup(opts->generator_url)) == NULL)
        r = PW_ENOMEM;
    for (int i = 0; i < 2 && r == 0; i++) {
        if (!n->t[i].on)
            continue;
        /* the parsed target as the URL the HTTP client sends to (brackets for IPv6) */
        const target_t *t = &n->t[i];
        size_t ul = strlen(t->host) + strlen(t->path) + 32;
        char *url = pw_malloc(ul);
        if (url == NULL) {
            r = PW_ENOMEM;
            break;
        }
        int v6 = strchr(t->host, ':') != NULL;
        snprintf(url, ul, "http://%s%s%s:%s%s", v6 ? "[" : "", t->host, v6 ? "]" : "", t->port,
                 t->path);
        pw_httpc_opts_t ho = {.url = url,
                              .opt_name =
                                  i == T_AM ? "alerts.alertmanager_url" : "alerts.webhook_url",
                              .timeout_ms = n->o.timeout_ms};
        r = pw_httpc_new(loop, &ho, &n->t[i].http, d);
        pw_free(url);
    }
    if (r != 0) {
        free_notify(n);
        return r;
    }
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    *out = n;
    return 0;
}

void pw_notify_get_stats(const pw_notify_t *n, pw_notify_stats_t *out)
{
    *out = n->st;
    out->queued = n->queued;
}

/* ---- queue ------------------------------------------------------------------------------- */

static void msg_free(msg_t *m)
{
    if (m == NULL)
        return;
    json_decref(m->body);
    pw_free(m);
}

static void unlink_msg(pw_notify_t *n, msg_t *m)
{
    msg_t **pp = &n->head, *prev = NULL;
    while (*pp && *pp != m) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == NULL)
        return;
    *pp = m->next;
    if (n->tail == m)
        n->tail = prev;
    n->queued--;
}

static int enqueue(pw_notify_t *n, int target, json_t *alert)
{
    /* Alertmanager alerts join the last waiting batch that is not in flight. */
    if (target == T_AM) {
        msg_t *m = n->tail;
        if (m != NULL && m->target == T_AM && m != n->cur && m->attempts == 0 &&
            json_array_size(m->body) < n->o.batch)
            return json_array_append_new(m->body, alert) == 0 ? 0 : PW_ENOMEM;
    }
    if (n->queued >= n->o.max_queue) {
        msg_t *old = n->head;
        if (old == n->cur)
            old = old->next;
        if (old == NULL) {
            json_decref(alert);
            n->st.dropped++;
            return 0;
        }
        unlink_msg(n, old);
        msg_free(old);
        n->st.dropped++;
    }
    msg_t *m = pw_calloc(1, sizeof(*m));
    json_t *body = alert;
    if (m != NULL && target == T_AM) {
        body = json_array();
        if (body == NULL || json_array_append_new(body, alert) != 0) {
            json_decref(body);
            pw_free(m);
            return PW_ENOMEM;
        }
    }
    if (m == NULL) {
        json_decref(alert);
        return PW_ENOMEM;
    }
    m->target = target;
    m->body = body;
    if (n->tail)
        n->tail->next = m;
    else
        n->head = m;
    n->tail = m;
    n->queued++;
    return 0;
}

int pw_notify_alert(pw_notify_t *n, const pw_alert_transition_t *tr, const char *alertname,
                    const char *summary, const char *description, int only_alertmanager)
{
    if (n == NULL || tr == NULL || alertname == NULL)
        return PW_EINVAL;
    if (n->closing)
        return 0;
    int queued = 0;
    if (n->t[T_WEBHOOK].on && !only_alertmanager) {
        char *txt = pw_notify_webhook_json(tr, alertname, summary, description);
        json_t *o = txt ? json_loads(txt, 0, NULL) : NULL;
        pw_free(txt);
        if (o == NULL || enqueue(n, T_WEBHOOK, o) != 0)
            return PW_ENOMEM;
        queued++;
    }
    if (n->t[T_AM].on && tr->to != PW_ALERT_PENDING) {
        json_t *a = am_alert(tr, alertname, summary, description, n->gen_url);
        if (a == NULL || enqueue(n, T_AM, a) != 0)
            return PW_ENOMEM;
        queued++;
    }
    if (queued)
        pump(n);
    return queued;
}

/* ---- one attempt (httpc.h) --------------------------------------------------------------- */

static int verdict(int status)
{
    if (status >= 200 && status < 300)
        return 0;
    if (status >= 400 && status < 500 && status != 408 && status != 429)
        return 1;
    return PW_EPROTO;
}

/* The end of the attempt in flight: an HTTP status, or a negative code (connect, timeout,
 * malformed response). */
static void on_done(void *arg, int result)
{
    pw_notify_t *n = arg;
    msg_t *m = n->cur;
    n->cur = NULL;
    int status = result > 0 ? result : 0;
    int r = result;
    if (result > 0) {
        n->st.last_status = status;
        r = verdict(status);
    }
    if (m == NULL)
        return;
    const char *tn = m->target == T_AM ? "alertmanager" : "webhook";
    if (r == 0) {
        n->st.sent++;
        unlink_msg(n, m);
        msg_free(m);
    } else {
        n->st.last_error = r < 0 ? r : 0;
        if (r > 0 || m->attempts >= n->o.max_attempts) {
            PW_LOG_WARN(MOD, "%s: giving up after %u attempt(s) (status %d, %s)", tn, m->attempts,
                        status, r < 0 ? pw_strerror(r) : "refused");
            n->st.failed++;
            unlink_msg(n, m);
            msg_free(m);
        } else {
            /* attempts >= 1: counted when sent */
            uint64_t delay =
                pw_backoff_delay_ms(n->o.backoff_initial_ms, n->o.backoff_max_ms, m->attempts - 1);
            m->not_before = uv_now(n->loop) + delay;
            PW_LOG_DEBUG(MOD, "%s: attempt %u failed (%s), retry in %llu ms", tn, m->attempts,
                         r < 0 ? pw_strerror(r) : "status", (unsigned long long)delay);
        }
    }
    pump(n);
}

static void on_timer(uv_timer_t *t)
{
    pump(t->data); /* a backoff wait is over */
}

/* Starts the head message when it is due, else arms the timer for it. Strictly in order, so
 * a "resolved" never overtakes the "firing" of the same alert that waits for a retry. */
static void pump(pw_notify_t *n)
{
    if (n->closing || n->cur != NULL || n->head == NULL)
        return;
    uv_update_time(n->loop);
    uint64_t now = uv_now(n->loop);
    msg_t *m = n->head;
    if (m->not_before > now) {
        uv_timer_start(&n->timer, on_timer, m->not_before - now, 0);
        return;
    }
    if (m->attempts++ > 0)
        n->st.retries++;
    char *body = json_dumps(m->body, JSON_COMPACT);
    int r = body ? 0 : PW_ENOMEM;
    if (r == 0) {
        n->cur = m;
        r = pw_httpc_post(n->t[m->target].http,
                          "User-Agent: poolwatch-collector\r\nContent-Type: application/json\r\n",
                          body, strlen(body), on_done, n);
        free(body);
    }
    if (r != 0) {
        n->cur = m;
        on_done(n, r);
    }
}

static void on_timer_closed(uv_handle_t *h)
{
    free_notify(h->data);
}

void pw_notify_close(pw_notify_t *n)
{
    if (n == NULL || n->closing)
        return;
    n->closing = 1;
    while (n->head) {
        msg_t *m = n->head;
        n->head = m->next;
        msg_free(m);
    }
    n->tail = n->cur = NULL;
    n->queued = 0;
    for (int i = 0; i < 2; i++) { /* a request in flight is abandoned, without its callback */
        pw_httpc_close(n->t[i].http);
        n->t[i].http = NULL;
    }
    uv_timer_stop(&n->timer);
    uv_close((uv_handle_t *)&n->timer, on_timer_closed);
}
