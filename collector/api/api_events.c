/* api_events.c: GET /api/v1/hosts/{host}/events: the host's Windows pool events (srv
 * 2019/2020 "the pool was empty", Resource-Exhaustion-Detector 2004) from the store. */
#include "api_internal.h"

#include <string.h>

#include "alloc.h"

#define EVENTS_DEFAULT 1000u
#define EVENTS_MAX     10000u

static const char *kind_word(pw_winevent_kind_t k)
{
    switch (k) {
    case PW_WINEVENT_NONPAGED_EMPTY:
        return "nonpaged_pool_empty";
    case PW_WINEVENT_PAGED_EMPTY:
        return "paged_pool_empty";
    case PW_WINEVENT_DIAGNOSIS:
        return "low_virtual_memory";
    default:
        return "other";
    }
}

static const char *pool_word(int pool)
{
    return pool == PW_WINEVENT_POOL_NONPAGED ? "nonpaged"
           : pool == PW_WINEVENT_POOL_PAGED  ? "paged"
                                             : NULL;
}

json_t *pw__api_event_json(const pw_winevent_t *ev, uint64_t received_ms)
{
    json_t *tags = json_array();
    for (size_t i = 0; tags && i < ev->n_tags; i++) {
        char tt[PW_API_TAG_TEXT_MAX];
        json_array_append_new(tags, json_pack("{s:s,s:s,s:o}", "tag",
                                              pw__api_tag_text(ev->tags[i].tag, 4, tt), "pool",
                                              pool_word(ev->tags[i].pool), "bytes",
                                              pw__api_ju64(ev->tags[i].bytes)));
    }
    pw_winevent_kind_t k = pw_winevent_kind(ev);
    json_t *o = json_pack("{s:o,s:o,s:i,s:o,s:s,s:o,s:s,s:o}", "ts_ms", pw__api_ju64(ev->ts_ms),
                          "provider", pw__api_jstr(ev->provider), "event_id", (int)ev->event_id,
                          "record_id", pw__api_ju64(ev->record_id), "kind", kind_word(k), "pool",
                          pw__api_jstr_or_null(pool_word(ev->pool)), "message",
                          pw_winevent_kind_text(k), "tags", tags ? tags : json_array());
    if (o != NULL && received_ms)
        json_object_set_new_nocheck(o, "received_ms", pw__api_ju64(received_ms));
    return o;
}

int pw__api_events(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h = pw__api_find_host(api, params[0], resp);
    if (h == NULL)
        return resp->status;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    uint64_t from = 0, to = INT64_MAX, limit = EVENTS_DEFAULT;
    int r = 0;
    if (pw__api_query_u64(&q, "from", INT64_MAX, &from, resp) < 0 ||
        pw__api_query_u64(&q, "to", INT64_MAX, &to, resp) < 0 ||
        pw__api_query_u64(&q, "limit", EVENTS_MAX, &limit, resp) < 0)
        r = resp->status;
    else if (from > to)
        r = pw_api_error(resp, 400, "EINVAL", "from is after to");
    pw__api_query_free(&q);
    if (r)
        return r;
    pw_store_event_t *ev = NULL;
    pw_diag_t d;
    pw_diag_clear(&d);
    int64_t n =
        pw_store_events(pw_ingest_store(api->ing), h->name, from, to, (size_t)limit, &ev, &d);
    if (n < 0)
        return pw_api_error(resp, 500, pw_err_name((int)n), "events: %s",
                            d.msg[0] ? d.msg : pw_strerror((int)n));
    json_t *arr = json_array();
    for (int64_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, pw__api_event_json(&ev[i].ev, ev[i].received_ms));
    pw_free(ev);
    json_t *o =
        json_pack("{s:o,s:o}", "host", pw__api_jstr(h->name), "events", arr ? arr : json_array());
    return pw__api_send_json(resp, 200, o);
}
