/* api_leaks.c: the analysis' results: GET /api/v1/leaks and /api/v1/alerts. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

json_t *pw__api_suspect_json(pw_api_t *api, const pw_suspect_t *s)
{
    char tt[PW_API_TAG_TEXT_MAX];
    const char *drv, *desc;
    pw__api_describe(api, s->tag, s->tag_len, &drv, &desc);
    const pw_leak_t *l = &s->leak;
    json_t *o =
        json_pack("{s:o,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host",
                  pw__api_jstr(s->host), "tag", pw__api_tag_text(s->tag, s->tag_len, tt), "type",
                  pw_pool_name(s->pool), "score", pw__api_jreal(l->score), "growth_bytes_per_h",
                  pw__api_jreal(l->rate_bytes_per_h), "share_of_host_growth",
                  l->share < 0 ? json_null() : pw__api_jreal(l->share), "first_bytes",
                  pw__api_ju64(l->first_bytes), "current_bytes", pw__api_ju64(l->last_bytes),
                  "growth_ratio", pw__api_jreal(l->growth_ratio), "window_ms",
                  json_integer(l->span_ms), "mk_z", pw__api_jreal(l->mk_z), "consistency",
                  pw__api_jreal(l->consistency), "driver", pw__api_jstr_or_null(drv), "description",
                  pw__api_jstr_or_null(desc), "found_ms", pw__api_ju64(s->found_ms));
    /* How it was judged (added fields; the ones above keep their meaning): a trend test over
     * a window, or a comparison of a few screens with the deltas it rests on. */
    if (o == NULL)
        return NULL;
    int cmp = s->method == PW_LEAK_METHOD_COMPARE;
    json_object_set_new(o, "method", json_string(cmp ? "compare" : "trend"));
    pw_leak_opts_t lo;
    pw_leak_opts_default(&lo);
    json_object_set_new(o, "points",
                        json_integer((json_int_t)(cmp ? s->cmp.screens : l->n_window)));
    json_object_set_new(o, "trend_min_points", json_integer((json_int_t)lo.min_points));
    json_object_set_new(
        o, "screen_delta",
        cmp ? json_pack("{s:I,s:I,s:I,s:I,s:o}", "allocs", (json_int_t)s->cmp.d_allocs, "frees",
                        (json_int_t)s->cmp.d_frees, "diff", (json_int_t)s->cmp.d_diff, "bytes",
                        (json_int_t)s->cmp.d_bytes, "per_alloc_bytes",
                        pw__api_jreal(s->cmp.per_alloc))
            : json_null());
    return o;
}

int pw__api_leaks(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    const pw_suspect_t *sp;
    size_t ns = pw_analysis_run_suspects(api->an, &sp);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ns; i++)
        json_array_append_new(arr, pw__api_suspect_json(api, &sp[i]));
    return pw__api_send_json(resp, 200, arr ? json_pack("{s:o}", "suspects", arr) : NULL);
}

typedef struct alerts_ctx_s {
    pw_alert_transition_t *v;
    size_t n, cap;
    int oom;
} alerts_ctx_t;

static void collect_alert(const pw_alert_transition_t *cur, void *arg)
{
    alerts_ctx_t *a = arg;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 16;
        pw_alert_transition_t *v = pw_realloc(a->v, nc * sizeof(*v));
        if (v == NULL) {
            a->oom = 1;
            return;
        }
        a->v = v;
        a->cap = nc;
    }
    a->v[a->n++] = *cur;
}

static int state_rank(pw_alert_state_t s)
{
    return s == PW_ALERT_FIRING ? 0 : s == PW_ALERT_PENDING ? 1 : 2;
}

static int cmp_alert(const void *a, const void *b)
{
    const pw_alert_transition_t *x = a, *y = b;
    int c = state_rank(x->to) - state_rank(y->to);
    if (c)
        return c;
    if (x->active_since_ms != y->active_since_ms)
        return x->active_since_ms < y->active_since_ms ? -1 : 1;
    if ((c = strcmp(x->key.host, y->key.host)) != 0)
        return c;
    if ((c = strcmp(x->key.tag, y->key.tag)) != 0)
        return c;
    if ((c = strcmp(x->key.pool, y->key.pool)) != 0)
        return c;
    return strcmp(x->key.severity, y->key.severity);
}

int pw__api_alerts(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)req;
    (void)params;
    alerts_ctx_t a;
    memset(&a, 0, sizeof(a));
    const pw_alert_set_t *set = pw_analysis_run_alerts(api->an);
    if (set)
        pw_alert_foreach(set, collect_alert, &a);
    if (a.oom) {
        pw_free(a.v);
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    }
    if (a.n > 1)
        qsort(a.v, a.n, sizeof(*a.v), cmp_alert);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < a.n; i++) {
        const pw_alert_transition_t *t = &a.v[i];
        const pw_alert_key_t *k = &t->key;
        char name[32], summary[512];
        if (k->tag[0] == '\0') {
            snprintf(name, sizeof(name), "%s",
                     strcmp(k->pool, "paged") == 0 ? "PagedPoolPressure" : "NonpagedPoolPressure");
            snprintf(summary, sizeof(summary), "%s: %s pool at %.1f%% of its limit", k->host,
                     k->pool, t->value * 100.0);
        } else {
            snprintf(name, sizeof(name), "PoolTagLeak");
            snprintf(summary, sizeof(summary), "%s: tag '%s' (%s) is growing steadily", k->host,
                     k->tag, k->pool);
        }
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:s,s:{s:o,s:o,s:s,s:s},s:o,s:o,s:o}", "name", name, "state",
                           pw_alert_state_name(t->to), "severity", k->severity, "labels", "host",
                           pw__api_jstr(k->host), "tag", pw__api_jstr(k->tag), "pool", k->pool,
                           "severity", k->severity, "since_ms", json_integer(t->active_since_ms),
                           "value", pw__api_jreal(t->value), "summary", pw__api_jstr(summary)));
    }
    pw_free(a.v);
    return pw__api_send_json(resp, 200, arr ? json_pack("{s:o}", "alerts", arr) : NULL);
}
