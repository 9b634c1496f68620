/* api_hosts.c: GET /api/v1/hosts and /api/v1/hosts/{host}. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "series.h"

/* ============================================================================================
 * Host views
 * ========================================================================================== */

/* Pressure of one pool: the analysis pass's result when it ran, else computed now from the
 * host's ring (or the current totals when the ring is empty). */
void pw__api_host_pressure(const pw_api_t *api, const pw_host_t *h, int pool, pw_pressure_t *out)
{
    const pw_analysis_host_t *ah = pw_analysis_run_host(api->an, h);
    if (ah != NULL && ah->have_pressure) {
        *out = pool == PW_POOL_PAGED ? ah->pg : ah->np;
        return;
    }
    const pw_totals_t *t = pw_host_totals(h);
    uint64_t limit = pw_host_limit(h, pool);
    size_t hist_n = pw_host_hist_n(h);
    size_t n = hist_n ? hist_n : 1;
    pw_point_t one, *pts = n > 1 ? pw_malloc(n * sizeof(*pts)) : &one;
    memset(out, 0, sizeof(*out));
    out->level = PW_LEVEL_UNKNOWN;
    out->eta_ms = -1;
    if (pts == NULL)
        return;
    if (hist_n == 0) {
        one.ts_ms = (int64_t)pw_host_ts(h);
        one.v = (double)(pool == PW_POOL_PAGED ? t->paged_bytes : t->nonpaged_bytes);
    } else {
        for (size_t i = 0; i < n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            pts[i].ts_ms = (int64_t)p->ts_ms;
            pts[i].v = (double)(pool == PW_POOL_PAGED ? p->paged_bytes : p->nonpaged_bytes);
        }
    }
    if (pw_pressure_eval(pts, n, limit, NULL, out) != 0) {
        memset(out, 0, sizeof(*out));
        out->level = PW_LEVEL_UNKNOWN;
        out->eta_ms = -1;
    }
    if (pts != &one)
        pw_free(pts);
}

json_t *pw__api_totals_json(const pw_totals_t *t)
{
    json_t *o =
        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "paged_bytes", pw__api_ju64(t->paged_bytes),
                  "nonpaged_bytes", pw__api_ju64(t->nonpaged_bytes), "physical_memory_bytes",
                  pw__api_ju64(t->physical_memory_bytes), "available_bytes",
                  pw__api_ju64(t->available_bytes), "commit_bytes", pw__api_ju64(t->commit_bytes),
                  "commit_limit_bytes", pw__api_ju64(t->commit_limit_bytes), "commit_peak_bytes",
                  pw__api_ju64(t->commit_peak_bytes));
    /* the agent's own footprint; null when its agent does not report it (older, imports) */
    if (o != NULL)
        json_object_set_new(
            o, "agent",
            t->agent_rss_bytes == 0 && t->agent_cpu_ms == 0
                ? json_null()
                : json_pack("{s:o,s:o,s:o}", "rss_bytes", pw__api_ju64(t->agent_rss_bytes),
                            "cpu_ms", pw__api_ju64(t->agent_cpu_ms), "handles",
                            /* counted on Windows only: null elsewhere, the
                             * "-" top shows, not 0 handles */
                            t->agent_handles ? pw__api_ju64(t->agent_handles) : json_null()));
    return o;
}

uint64_t pw__api_eta_base_ms(const pw_host_t *h)
{
    size_t hist_n = pw_host_hist_n(h);
    return hist_n ? pw_fleet_hist_at(h, hist_n - 1)->ts_ms : pw_host_ts(h);
}

json_t *pw__api_eta_json(const pw_host_t *h, int64_t eta_ms)
{
    if (eta_ms < 0)
        return json_null();
    return pw__api_ju64(pw__api_eta_base_ms(h) + (uint64_t)eta_ms);
}

void pw__api_host_eta(const pw_api_t *api, const pw_host_t *h, int pool, pw_pressure_t *pr,
                      pw_host_eta_t *out)
{
    pw__api_host_pressure(api, h, pool, pr);
    if (pw_analysis_host_eta(api->an, h, pool, pr, out) != 0) {
        memset(out, 0, sizeof(*out));
        out->e.eta_ms = out->e.eta_soon_ms = out->e.eta_late_ms = -1;
    }
}

void pw__api_set_eta(json_t *o, const char *prefix, const pw_host_t *h, const pw_host_eta_t *he)
{
    char k[48];
    const pw_leak_eta_t *e = &he->e;
    int ran_out = he->ran_out, has = !ran_out && e->basis != PW_ETA_NONE;
    snprintf(k, sizeof(k), "%s_eta_ms", prefix);
    json_object_set_new(o, k,
                        ran_out ? pw__api_ju64((uint64_t)he->ran_out_ms)
                        : has   ? pw__api_eta_json(h, e->eta_ms)
                                : json_null());
    snprintf(k, sizeof(k), "%s_eta_basis", prefix);
    json_object_set_new(o, k,
                        ran_out ? json_string("ran_out")
                        : has   ? json_string(e->basis == PW_ETA_POOL ? "pool" : "leak")
                                : json_null());
    snprintf(k, sizeof(k), "%s_eta_range_ms", prefix);
    json_object_set_new(o, k,
                        has ? json_pack("[o,o]", pw__api_eta_json(h, e->eta_soon_ms),
                                        pw__api_eta_json(h, e->eta_late_ms))
                            : json_null());
    snprintf(k, sizeof(k), "%s_eta_note", prefix);
    json_object_set_new(o, k, pw__api_jstr(e->note));
    snprintf(k, sizeof(k), "%s_ran_out_ms", prefix);
    json_object_set_new(o, k, ran_out ? pw__api_ju64((uint64_t)he->ran_out_ms) : json_null());
    /* what the ETA rests on, so that a reader can tie it to a growth shown beside it: how it
     * was reckoned, its rate and the window that rate came from; the hours of the day the pool
     * grew (the day repeated), and the boot the window was cut at */
    const char *m = has ? pw_eta_method_name(e->method) : NULL;
    snprintf(k, sizeof(k), "%s_eta_method", prefix);
    json_object_set_new(o, k, m ? json_string(m) : json_null());
    snprintf(k, sizeof(k), "%s_eta_rate_bytes_per_h", prefix);
    json_object_set_new(o, k, m ? pw__api_jreal(e->rate_bytes_per_h) : json_null());
    snprintf(k, sizeof(k), "%s_eta_window_ms", prefix);
    json_object_set_new(o, k, m && e->window_ms > 0 ? json_integer(e->window_ms) : json_null());
    snprintf(k, sizeof(k), "%s_eta_grew_ms", prefix);
    json_object_set_new(o, k, m && e->grew_ms > 0 ? json_integer(e->grew_ms) : json_null());
    snprintf(k, sizeof(k), "%s_eta_since_boot_ms", prefix);
    json_object_set_new(
        o, k, e->since_boot_ms > 0 ? pw__api_ju64((uint64_t)e->since_boot_ms) : json_null());
}

typedef struct hostsum_s {
    const pw_host_t *h;
    pw_pressure_t np, pg;
    pw_host_eta_t np_eta, pg_eta; /* the one ETA of each pool, as every view gives it */
} hostsum_t;

/* The host's suspects in the last pass. */
static size_t host_suspects(const pw_api_t *api, const pw_host_t *h)
{
    const pw_suspect_t *s;
    size_t n = pw_analysis_run_suspects(api->an, &s);
    return pw_series_suspects(s, n, h->name);
}

static json_t *host_json(const pw_api_t *api, const hostsum_t *hs, uint64_t now_ms)
{
    const pw_host_t *h = hs->h;
    const pw_totals_t *t = pw_host_totals(h);
    char os[96];
    /* an operator's --os text names the family itself ("Windows Server 2003 x86 /3GB") */
    size_t fl = strlen(h->os_family);
    if (fl > 0 && strncasecmp(h->os_version, h->os_family, fl) == 0)
        snprintf(os, sizeof(os), "%s", h->os_version);
    else
        snprintf(os, sizeof(os), "%s%s%s", h->os_family, h->os_version[0] ? " " : "",
                 h->os_version);
    uint64_t np_limit = pw_host_limit(h, PW_POOL_NONPAGED);
    uint64_t pg_limit = pw_host_limit(h, PW_POOL_PAGED);
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "name", pw__api_jstr(h->name));
    json_object_set_new(o, "os", pw__api_jstr(os));
    json_object_set_new(o, "os_build", json_integer(h->os_build));
    json_object_set_new(o, "arch", pw__api_jstr(h->arch));
    json_object_set_new(o, "agent_version", pw__api_jstr(h->agent_version));
    json_object_set_new(o, "connected", json_boolean(pw_host_connected(h)));
    json_object_set_new(o, "connection",
                        json_string(pw_analysis_connection(api->an, h, (int64_t)now_ms)));
    json_object_set_new(o, "stopped_ms", h->stopped_ms ? pw__api_ju64(h->stopped_ms) : json_null());
    json_object_set_new(o, "stop_reason",
                        h->stopped_ms ? pw__api_jstr(h->stop_reason) : json_null());
    json_object_set_new(o, "last_seen_ms", pw__api_ju64(h->last_seen_ms));
    /* a backlog streams in (a backfill, a resent spool): level, ETA and suspects are of
     * last_seen_ms, not of now, until it caught up and a pass judged it */
    json_object_set_new(o, "loading_history",
                        json_boolean(pw_analysis_loading(api->an, h, (int64_t)now_ms)));
    json_object_set_new(o, "nonpaged_bytes", pw__api_ju64(t->nonpaged_bytes));
    /* An unknown limit (0: imported captures, Linux, replay) is null, and so is its ratio:
     * never 0 %, which would read as healthy. */
    json_object_set_new(o, "nonpaged_limit_bytes", np_limit ? pw__api_ju64(np_limit) : json_null());
    json_object_set_new(o, "nonpaged_limit_source",
                        pw__api_jstr(pw__api_limit_source_name(h->nonpaged_limit_source)));
    json_object_set_new(o, "nonpaged_limit_detail", pw__api_jstr(h->nonpaged_limit_detail));
    json_object_set_new(o, "nonpaged_ratio",
                        np_limit ? json_real((double)t->nonpaged_bytes / (double)np_limit)
                                 : json_null());
    json_object_set_new(o, "nonpaged_level", pw__api_jstr(pw__api_level_name(hs->np.level)));
    /* the pool's trend, or with too few points for one its suspects' growth, or when it ran
     * out: as /leaks, /alerts and /metrics give it (pw_analysis_host_eta) */
    pw__api_set_eta(o, "nonpaged", h, &hs->np_eta);
    json_object_set_new(o, "paged_bytes", pw__api_ju64(t->paged_bytes));
    json_object_set_new(o, "paged_limit_bytes", pg_limit ? pw__api_ju64(pg_limit) : json_null());
    json_object_set_new(o, "paged_limit_source",
                        pw__api_jstr(pw__api_limit_source_name(h->paged_limit_source)));
    json_object_set_new(o, "paged_limit_detail", pw__api_jstr(h->paged_limit_detail));
    json_object_set_new(o, "paged_ratio",
                        pg_limit ? json_real((double)t->paged_bytes / (double)pg_limit)
                                 : json_null());
    json_object_set_new(o, "paged_level", pw__api_jstr(pw__api_level_name(hs->pg.level)));
    pw__api_set_eta(o, "paged", h, &hs->pg_eta);
    /* what the collector holds of the host, across its restarts: the store's raw samples at
     * the start and those received since (/metrics counts the received ones only: a counter) */
    json_object_set_new(o, "samples", pw__api_ju64(h->samples_stored));
    json_object_set_new(o, "suspects", json_integer((json_int_t)host_suspects(api, h)));
    return o;
}

static void host_sum(const pw_api_t *api, const pw_host_t *h, hostsum_t *hs)
{
    hs->h = h;
    pw__api_host_eta(api, h, PW_POOL_NONPAGED, &hs->np, &hs->np_eta);
    pw__api_host_eta(api, h, PW_POOL_PAGED, &hs->pg, &hs->pg_eta);
}

static double np_ratio(const pw_host_t *h)
{
    const pw_totals_t *t = pw_host_totals(h);
    uint64_t l = pw_host_limit(h, PW_POOL_NONPAGED);
    return l ? (double)t->nonpaged_bytes / (double)l : 0.0;
}

static int cmp_hostsum(const void *a, const void *b)
{
    const hostsum_t *x = a, *y = b;
    double rx = np_ratio(x->h), ry = np_ratio(y->h);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return strcmp(x->h->name, y->h->name);
}

/* ============================================================================================
 * Handlers
 * ========================================================================================== */

int pw__api_hosts(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    int global = pw__api_scope_global(api, req, resp);
    if (global != 0)
        return global < 0 ? resp->status : pw__api_global_hosts(api, req, resp);
    (void)params;
    const pw_fleet_t *f = pw_ingest_fleet(api->ing);
    hostsum_t *hs = pw_calloc(f->n ? f->n : 1, sizeof(*hs));
    if (hs == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!pw_host_retired(f->hosts[i]))
            host_sum(api, f->hosts[i], &hs[n++]);
    if (n > 1)
        qsort(hs, n, sizeof(*hs), cmp_hostsum);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, host_json(api, &hs[i], req->now_ms));
    pw_free(hs);
    return pw__api_send_json(resp, 200, arr ? json_pack("{s:o}", "hosts", arr) : NULL);
}

int pw__api_host(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    hostsum_t hs;
    host_sum(api, h, &hs);
    json_t *o = host_json(api, &hs, req->now_ms);
    if (o == NULL)
        return pw_api_error(resp, 500, "ENOMEM", "out of memory");
    json_object_set_new(o, "totals", pw__api_totals_json(pw_host_totals(h)));
    json_t *hist = json_array();
    for (size_t i = 0; hist && i < pw_host_hist_n(h); i++) {
        const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
        json_array_append_new(hist, json_pack("{s:o,s:o,s:o}", "ts_ms", pw__api_ju64(p->ts_ms),
                                              "nonpaged_bytes", pw__api_ju64(p->nonpaged_bytes),
                                              "paged_bytes", pw__api_ju64(p->paged_bytes)));
    }
    json_object_set_new(o, "history", hist);
    return pw__api_send_json(resp, 200, o);
}

/* The HTTP answer to an ingest error of a host operation. */
static int host_op_error(pw_api_resp_t *resp, int r, const pw_diag_t *d)
{
    int status = r == PW_ENOENT   ? 404
                 : r == PW_EEXIST ? 409
                 : r == PW_EAGAIN ? 409
                 : r == PW_EINVAL ? 400
                                  : 500;
    return pw_api_error(resp, status, r == PW_EAGAIN ? "ECONNECTED" : pw_err_name(r), "%s",
                        d->msg[0] ? d->msg : pw_strerror(r));
}

int pw__api_host_delete(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t keep = 0;
    if (pw__api_query_u64(&q, "keep_history", 1, &keep, resp) < 0) {
        pw__api_query_free(&q);
        return resp->status;
    }
    pw__api_query_free(&q);
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    char name[sizeof(h->name)];
    snprintf(name, sizeof(name), "%s", h->name);
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_ingest_retire(api->ing, name, (int)keep, req->now_ms, &d);
    if (r != 0)
        return host_op_error(resp, r, &d);
    return pw__api_send_json(resp, 200,
                             json_pack("{s:o,s:b,s:b}", "host", pw__api_jstr(name), "retired", 1,
                                       "history_kept", keep != 0));
}

int pw__api_host_rename(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h;
    json_t *b = pw__api_host_body(api, req, params[0], &h, resp);
    if (b == NULL)
        return resp->status;
    const char *to = json_string_value(json_object_get(b, "name"));
    int r = to == NULL ? pw_api_error(resp, 400, "EINVAL", "body must be {\"name\": \"NEW\"}")
                       : pw__api_check_host_name(to, "name", resp);
    if (r != 0) {
        json_decref(b);
        return r;
    }
    char from[sizeof(h->name)];
    snprintf(from, sizeof(from), "%s", h->name);
    pw_diag_t d;
    pw_diag_clear(&d);
    r = pw_ingest_rename(api->ing, from, to, &d);
    if (r != 0) {
        json_decref(b);
        return host_op_error(resp, r, &d);
    }
    r = pw__api_send_json(
        resp, 200, json_pack("{s:o,s:o}", "host", pw__api_jstr(to), "from", pw__api_jstr(from)));
    json_decref(b);
    return r;
}
