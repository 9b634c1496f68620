/* api_series.c: GET /api/v1/hosts/{host}/series: one (tag, pool) over time from the store. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* One (tag, pool) series of host h into *s; a tag shorter than 4 bytes that finds nothing is
 * tried padded ("Io" -> "Io  ", as poolmon pads it), *tl then 4. Returns the points, 0 or < 0. */
static int64_t series_query(pw_api_t *api, pw_host_t *h, uint8_t *tag, int *tl, int pool,
                            uint64_t session, uint64_t from, uint64_t to, uint64_t step,
                            pw_store_series_t *s, pw_diag_t *d)
{
    int64_t n = pw_store_series(pw_ingest_store(api->ing), h->name, tag, (size_t)*tl,
                                (pw_pool_t)pool, from, to, step, s, d);
    /* poolmon pads tags to 4 characters ("Io  "): a shorter one that finds nothing is tried
     * padded, as `top`'s patterns match it. */
    if (n == 0 && *tl < 4 && session == PW_SESSION_ALL) {
        memset(tag + *tl, ' ', (size_t)(4 - *tl));
        pw_store_series_free(s);
        memset(s, 0, sizeof(*s));
        int64_t n4 = pw_store_series(pw_ingest_store(api->ing), h->name, tag, 4, (pw_pool_t)pool,
                                     from, to, step, s, d);
        if (n4 > 0)
            n = n4, *tl = 4;
        else
            n = n4;
    }
    return n;
}

int pw__api_series(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint8_t tag[PW_TAG_MAX];
    const char *ts = pw__api_query_get(&q, "tag"), *ps = pw__api_query_get(&q, "pool");
    int tl = ts ? pw__api_tag_parse(ts, tag) : -1;
    int pool = ps ? pw__api_pool_word(ps) : PW_POOL_NONPAGED;
    uint64_t from = 0, to = req->now_ms, step = 0;
    int r = 0;
    if (tl < 0)
        r = pw_api_error(resp, 400, "EINVAL", "tag is required: 1..64 bytes in printable form");
    else if (pool < 0 || pool > 2)
        r = pw_api_error(resp, 400, "EINVAL", "pool must be paged, nonpaged or session");
    else if (pw__api_query_u64(&q, "from", INT64_MAX, &from, resp) < 0 ||
             pw__api_query_u64(&q, "to", INT64_MAX, &to, resp) < 0 ||
             pw__api_query_u64(&q, "step", INT64_MAX, &step, resp) < 0)
        r = resp->status;
    else if (from > to)
        r = pw_api_error(resp, 400, "EINVAL", "from is after to");
    /* session=N: session N's row of a session-pool tag (its key is the tag, padded to 4 as
     * poolmon shows it, then N: sample.h). */
    uint64_t session = PW_SESSION_ALL;
    if (r == 0 && pw__api_query_get(&q, "session") != NULL) {
        if (pw__api_query_u64(&q, "session", PW_SESSION_ALL - 1, &session, resp) < 0)
            r = resp->status;
        else if (pool != PW_POOL_SESSION && ps != NULL)
            r = pw_api_error(resp, 400, "EINVAL", "session is for pool=session");
        else if (tl > 4)
            r = pw_api_error(resp, 400, "EINVAL", "a session-pool tag has at most 4 bytes");
    }
    if (r == 0 && session != PW_SESSION_ALL) {
        pool = PW_POOL_SESSION;
        memset(tag + tl, ' ', (size_t)(4 - tl));
        tl = (int)pw_row_session_key(tag, (uint32_t)session, tag);
    }
    if (r) {
        pw__api_query_free(&q);
        return r;
    }
    pw_store_series_t s;
    memset(&s, 0, sizeof(s));
    pw_diag_t d;
    pw_diag_clear(&d);
    int64_t n = series_query(api, h, tag, &tl, pool, session, from, to, step, &s, &d);
    /* No pool asked: the pool the tag has. Nonpaged first (where leaks that exhaust a host
     * grow), then paged and session, so that a paged-only tag is not "nothing in nonpaged". */
    static const int others[] = {PW_POOL_PAGED, PW_POOL_SESSION};
    for (size_t k = 0; n == 0 && ps == NULL && session == PW_SESSION_ALL && k < 2; k++) {
        pw_store_series_free(&s);
        memset(&s, 0, sizeof(s));
        int64_t nk = series_query(api, h, tag, &tl, others[k], session, from, to, step, &s, &d);
        if (nk != 0)
            n = nk, pool = others[k];
    }
    if (n < 0) {
        pw__api_query_free(&q);
        pw_store_series_free(&s);
        return pw_api_error(resp, n == PW_EINVAL ? 400 : 500, pw_err_name((int)n), "series: %s",
                            d.msg[0] ? d.msg : pw_strerror((int)n));
    }
    if (n == 0 && session == PW_SESSION_ALL &&
        !pw__api_tag_known(api, h, tag, (size_t)tl, req->now_ms)) {
        char tt[PW_API_TAG_TEXT_MAX];
        pw__api_query_free(&q);
        pw_store_series_free(&s);
        return pw_api_error(resp, 404, "ENOENT",
                            "host '%s' has no tag '%s' in any pool, now or in its history (tags "
                            "are case-sensitive)",
                            h->name, pw__api_tag_text(tag, (size_t)tl, tt));
    }
    json_t *pts = json_array();
    for (int64_t i = 0; pts && i < n; i++) {
        const pw_store_point_t *p = &s.points[i];
        json_array_append_new(
            pts, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i}", "ts_ms", pw__api_ju64(p->ts_ms),
                           "bytes", pw__api_ju64(p->bytes), "diff", pw__api_ju64(p->diff), "allocs",
                           pw__api_ju64(p->allocs), "frees", pw__api_ju64(p->frees), "bytes_min",
                           pw__api_ju64(p->bytes_min), "bytes_max", pw__api_ju64(p->bytes_max),
                           "samples", (int)p->samples));
    }
    static const char *const lv[] = {"raw", "1m", "15m"};
    char tt[PW_API_TAG_TEXT_MAX];
    size_t shown = pw_row_split(tag, (size_t)tl, pool, NULL);
    json_t *o = json_pack("{s:o,s:s,s:s,s:s,s:o}", "host", pw__api_jstr(h->name), "tag",
                          pw__api_tag_text(tag, shown, tt), "pool", pw_pool_name(pool), "level",
                          lv[s.level <= PW_STORE_15MIN ? s.level : 0], "points", pts);
    if (o != NULL && session != PW_SESSION_ALL)
        json_object_set_new_nocheck(o, "session", json_integer((json_int_t)session));
    pw_store_series_free(&s);
    pw__api_query_free(&q);
    return pw__api_send_json(resp, 200, o);
}
