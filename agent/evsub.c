/* evsub.c: the pool-event queue between the subscription's thread and the agent's loop
 * (evsub.h). The platform's subscription is in evsub_win.c. */
#include "evsub.h"

#include <string.h>
#include <uv.h>

#include "alloc.h"

#ifdef _WIN32
#define DEFAULT_START pw__evsub_win_start
#define DEFAULT_STOP  pw__evsub_win_stop
#else
#define DEFAULT_START NULL
#define DEFAULT_STOP  NULL
#endif

static pw_evsub_start_fn start_fn = DEFAULT_START;
static pw_evsub_stop_fn stop_fn = DEFAULT_STOP;

void pw_evsub_set_fns(pw_evsub_start_fn start, pw_evsub_stop_fn stop)
{
    start_fn = start ? start : DEFAULT_START;
    stop_fn = start ? stop : DEFAULT_STOP;
}

struct pw_evsub_s {
    uv_mutex_t mu;
    pw_winevent_t q[PW_EVSUB_QUEUE_MAX]; /* ring */
    size_t head, n;
    pw_evsub_stats_t st;
    pw_evsub_notify_fn notify;
    void *arg;
    void *handle;
    int started;
};

typedef struct {
    pw_evsub_t *es;
    size_t added;
} feed_t;

static int queue_one(void *arg, const pw_winevent_t *ev)
{
    feed_t *f = arg;
    pw_evsub_t *es = f->es;
    uv_mutex_lock(&es->mu);
    if (pw_winevent_kind(ev) == PW_WINEVENT_OTHER) {
        es->st.skipped++;
    } else if (es->n == PW_EVSUB_QUEUE_MAX) {
        es->st.dropped++;
    } else {
        es->q[(es->head + es->n) % PW_EVSUB_QUEUE_MAX] = *ev;
        es->n++;
        es->st.queued++;
        f->added++;
    }
    uv_mutex_unlock(&es->mu);
    return 0;
}

void pw_evsub_deliver(void *ctx, const void *xml, size_t len)
{
    pw_evsub_t *es = ctx;
    feed_t f = {es, 0};
    pw_diag_t d;
    if (pw_winevent_parse(xml, len, queue_one, &f, &d) < 0) {
        uv_mutex_lock(&es->mu);
        es->st.bad_xml++;
        uv_mutex_unlock(&es->mu);
    }
    if (f.added && es->notify)
        es->notify(es->arg);
}

int pw_evsub_open(pw_evsub_notify_fn notify, void *arg, pw_evsub_t **out, pw_diag_t *d)
{
    *out = NULL;
    if (start_fn == NULL)
        return pw_diag_set(d, PW_ENOTSUP, 0, 0, "events", "no event log on this system");
    pw_evsub_t *es = pw_calloc(1, sizeof(*es));
    if (es == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "events", "out of memory");
    if (uv_mutex_init(&es->mu) != 0) {
        pw_free(es);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "events", "cannot create a mutex");
    }
    es->notify = notify;
    es->arg = arg;
    int r = start_fn(PW_EVSUB_QUERY, pw_evsub_deliver, es, &es->handle, d);
    if (r != 0) {
        uv_mutex_destroy(&es->mu);
        pw_free(es);
        return r;
    }
    es->started = 1;
    *out = es;
    return 0;
}

void pw_evsub_close(pw_evsub_t *es)
{
    if (es == NULL)
        return;
    if (es->started && stop_fn)
        stop_fn(es->handle);
    uv_mutex_destroy(&es->mu);
    pw_free(es);
}

size_t pw_evsub_peek(pw_evsub_t *es, pw_winevent_t *out, size_t max)
{
    uv_mutex_lock(&es->mu);
    size_t n = es->n < max ? es->n : max;
    for (size_t i = 0; i < n; i++)
        out[i] = es->q[(es->head + i) % PW_EVSUB_QUEUE_MAX];
    uv_mutex_unlock(&es->mu);
    return n;
}

void pw_evsub_drop(pw_evsub_t *es, size_t n)
{
    uv_mutex_lock(&es->mu);
    if (n > es->n)
        n = es->n;
    es->head = (es->head + n) % PW_EVSUB_QUEUE_MAX;
    es->n -= n;
    uv_mutex_unlock(&es->mu);
}

void pw_evsub_stats(pw_evsub_t *es, pw_evsub_stats_t *out)
{
    uv_mutex_lock(&es->mu);
    *out = es->st;
    out->waiting = es->n;
    uv_mutex_unlock(&es->mu);
}
