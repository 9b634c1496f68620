/* api_totals.c: GET /api/v1/hosts/{host}/totals: a host's pool totals (nonpaged and paged bytes
 * in use, the limits its samples carried) over time from the store, for the host page's chart
 * over 6 h ... 30 d (the host's own document holds only the ~3 h ring). */
#include "api_internal.h"

#include <stdint.h>
#include <string.h>

#include "alloc.h"

#define DAY_MS     86400000ull
#define MAX_POINTS 20000u /* an answer's bound at the bucket levels: a month at 3-min steps */

static json_t *limit_json(uint64_t v)
{
    return v ? pw__api_ju64(v) : json_null();
}

int pw__api_totals(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t to = req->now_ms, from = 0, step = 60000;
    int r = 0;
    if (pw__api_query_u64(&q, "to", INT64_MAX, &to, resp) < 0 ||
        pw__api_query_u64(&q, "step", INT64_MAX, &step, resp) < 0)
        r = resp->status;
    from = to > DAY_MS ? to - DAY_MS : 0; /* the last 24 h by default */
    if (r == 0 && pw__api_query_u64(&q, "from", INT64_MAX, &from, resp) < 0)
        r = resp->status;
    pw__api_query_free(&q);
    if (r == 0 && from > to)
        r = pw_api_error(resp, 400, "EINVAL", "from is after to");
    /* The bucket levels' steps are whole minutes or quarter hours (pw_store_totals_series). */
    uint64_t eff = step < 60000    ? step
                   : step < 900000 ? (step + 59999) / 60000 * 60000
                                   : (step + 899999) / 900000 * 900000;
    if (r == 0 && eff > 0 && (to - from) / eff >= MAX_POINTS)
        r = pw_api_error(resp, 400, "EINVAL",
                         "from..to at step %llu ms is more than %u points: ask for a larger step",
                         (unsigned long long)eff, MAX_POINTS);
    if (r != 0)
        return r;
    pw_store_tseries_t s;
    memset(&s, 0, sizeof(s));
    pw_diag_t d;
    pw_diag_clear(&d);
    int64_t n = pw_store_totals_series(pw_ingest_store(api->ing), h->name, from, to, step, &s, &d);
    if (n == PW_ENOENT) { /* in the fleet, nothing stored yet */
        n = 0;
        s.level = step < 60000 ? PW_STORE_RAW : step < 900000 ? PW_STORE_1MIN : PW_STORE_15MIN;
        s.step_ms = eff;
    }
    if (n < 0) {
        pw_store_tseries_free(&s);
        return pw_api_error(resp, n == PW_EINVAL ? 400 : 500, pw_err_name((int)n), "totals: %s",
                            d.msg[0] ? d.msg : pw_strerror((int)n));
    }
    json_t *pts = json_array();
    for (int64_t i = 0; pts && i < n; i++) {
        const pw_store_tpoint_t *p = &s.points[i];
        json_t *o = json_object();
        if (o == NULL)
            break;
        json_object_set_new(o, "ts_ms", pw__api_ju64(p->ts_ms));
        json_object_set_new(o, "last_ms", pw__api_ju64(p->last_ms));
        json_object_set_new(o, "samples", json_integer(p->samples));
        json_object_set_new(o, "nonpaged_bytes", pw__api_ju64(p->nonpaged));
        json_object_set_new(o, "nonpaged_bytes_min", pw__api_ju64(p->nonpaged_min));
        json_object_set_new(o, "nonpaged_bytes_max", pw__api_ju64(p->nonpaged_max));
        json_object_set_new(o, "paged_bytes", pw__api_ju64(p->paged));
        json_object_set_new(o, "paged_bytes_min", pw__api_ju64(p->paged_min));
        json_object_set_new(o, "paged_bytes_max", pw__api_ju64(p->paged_max));
        json_object_set_new(o, "nonpaged_limit_bytes", limit_json(p->nonpaged_limit));
        json_object_set_new(o, "paged_limit_bytes", limit_json(p->paged_limit));
        json_array_append_new(pts, o);
    }
    static const char *const lv[] = {"raw", "1m", "15m"};
    json_t *o = pts == NULL ? NULL
                            : json_pack("{s:o,s:s,s:o,s:o,s:o,s:o}", "host", pw__api_jstr(h->name),
                                        "level", lv[s.level <= PW_STORE_15MIN ? s.level : 0],
                                        "step_ms", pw__api_ju64(s.step_ms), "from",
                                        pw__api_ju64(from), "to", pw__api_ju64(to), "points", pts);
    pw_store_tseries_free(&s);
    return pw__api_send_json(resp, 200, o);
}
