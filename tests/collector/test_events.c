/* test_events.c: Windows pool events in the collector: an agent's Sample carries the events of
 * tests/fixtures/winevent/wevtutil-system.xml (read by the product's parser), ingest stores them
 * with the sample (once, whatever resends them), PoolEmpty fires at once and resolves after an
 * hour without another event of its pool, and GET /api/v1/hosts/{host}/events lists them
 * exactly. Times as in test_winevent.c: 2019 at 1796047392486 ms, 2020 at 1796047120000 ms,
 * 2004 at 1796047507500 ms (`date -u -d 2026-11-30T14:03:12Z +%s` and the fractions). */
#include "test_util.h"

#include <jansson.h>
#include <math.h>

#include "alloc.h"
#include "codec.h"
#include "double.h"
#include "winevent.h"

#define T_2020 INT64_C(1796047120000)
#define T_2019 INT64_C(1796047392486)
#define T_2004 INT64_C(1796047507500)
#define HOUR   INT64_C(3600000)

typedef struct {
    int64_t now;
} clk_t;

static int64_t clk_now(void *arg)
{
    return ((clk_t *)arg)->now;
}

/* What the receivers were told. */
static int fired, resolved;
static char last_name[64], last_summary[400];

static void on_alert(void *arg, const pw_alert_transition_t *tr, const char *name,
                     const char *summary, const char *description, int resend)
{
    (void)arg, (void)description;
    if (resend || strcmp(name, "PoolEmpty") != 0)
        return; /* (old samples also make the host silent: not counted here) */
    fired += tr->to == PW_ALERT_FIRING;
    resolved += tr->to == PW_ALERT_RESOLVED;
    snprintf(last_name, sizeof(last_name), "%s", name);
    snprintf(last_summary, sizeof(last_summary), "%s", summary);
}

typedef struct {
    pw_winevent_t ev[8];
    size_t n;
} evs_t;

static int keep_pool_events(void *arg, const pw_winevent_t *ev)
{
    evs_t *e = arg;
    if (pw_winevent_kind(ev) != PW_WINEVENT_OTHER && e->n < 8)
        e->ev[e->n++] = *ev; /* what the agent's subscription queue keeps */
    return 0;
}

static void load_events(evs_t *e)
{
    size_t len;
    char *xml = pw_test_read_file(pw_test_fixture("winevent/wevtutil-system.xml"), &len);
    assert_non_null(xml);
    memset(e, 0, sizeof(*e));
    pw_diag_t d;
    assert_int_equal(pw_winevent_parse(xml, len, keep_pool_events, e, &d), 4);
    free(xml);
    assert_int_equal(e->n, 3); /* 2020, 2019, 2004 (the 7036 is skipped) */
}

static pw_alert_state_t empty_state(const pw_analysis_run_t *an, const char *host, const char *pl)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.pool, sizeof(k.pool), "%s", pl);
    snprintf(k.severity, sizeof(k.severity), "critical");
    assert_string_equal(pw_analysis_alert_name(&k), "PoolEmpty");
    return pw_alert_state(pw_analysis_run_alerts(an), &k, NULL);
}

static json_t *get(pw_double_t *d, const char *path, const char *query, int want)
{
    pw_api_req_t req = {PW_API_GET, path, query, "Bearer tok", NULL, 0, 0};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&d->api, &req, &resp);
    if (st != want)
        fail_msg("%s?%s: %d %.*s", path, query, st, (int)resp.body.len, resp.body.data);
    json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
    pw_api_resp_close(&resp);
    assert_non_null(j);
    return j;
}

static void sample_at(pw_sample_t *s, int64_t ts, uint64_t seq, uint64_t ddk_bytes)
{
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = (uint64_t)ts;
    assert_int_equal(pw_sample_add(s, "Ddk ", 4, PW_POOL_NONPAGED, 100, 10, 90, ddk_bytes), 0);
}

static void test_events_flow(void **state)
{
    (void)state;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "tok", "read"), 0);
    clk_t clk = {T_2019 + 60000};
    pw_analysis_run_close(d.an);
    pw_analysis_opts_t o;
    memset(&o, 0, sizeof(o));
    o.now_ms = clk_now;
    o.now_arg = &clk;
    o.on_alert = on_alert;
    assert_int_equal(pw_analysis_run_new(NULL, d.ing, &o, &d.an), 0);
    d.api.an = d.an;
    fired = resolved = 0;

    pw_host_t *h = pw_double_stream(&d, "ddk-2003", 32, 1);
    assert_non_null(h);
    evs_t e;
    load_events(&e);
    pw_delta_enc_t enc;
    assert_int_equal(pw_delta_enc_init(&enc, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    sample_at(&s, T_2019 - 60000, 1, 1000);
    assert_int_equal(pw_double_send(&d, &enc, h, &s), 0);
    assert_int_equal(fired, 0);
    /* the sample that carries the three events: both PoolEmpty fire at once, before any pass */
    sample_at(&s, T_2019 + 1000, 2, 2000);
    assert_int_equal(pw_double_send_events(&d, &enc, h, &s, e.ev, e.n), 0);
    assert_int_equal(fired, 2);
    assert_string_equal(last_name, "PoolEmpty");
    assert_string_equal(last_summary, /* the paged one is told second */
                        "ddk-2003: the paged pool ran out (srv 2020: the pool was empty)");
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_NP_EMPTY), PW_ALERT_FIRING);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_PG_EMPTY), PW_ALERT_FIRING);
    { /* /metrics counts them with the other alerts */
        pw_api_req_t req = {PW_API_GET, "/metrics", "", "Bearer tok", NULL, 0, 0};
        pw_api_resp_t resp;
        pw_api_resp_init(&resp);
        assert_int_equal(pw_api_handle(&d.api, &req, &resp), 200);
        assert_true(pw_buf_append(&resp.body, "", 1) == 0);
        assert_non_null(strstr((const char *)resp.body.data,
                               "poolwatch_alerts_firing{severity=\"critical\"} 2\n"));
        /* and the events' times, per host and pool, for the rules' PoolEmpty (seconds) */
        assert_non_null(strstr((const char *)resp.body.data,
                               "poolwatch_pool_empty_event_timestamp_seconds{host=\"ddk-2003\","
                               "pool=\"nonpaged\"} 1796047392.486\n"));
        assert_non_null(strstr((const char *)resp.body.data,
                               "poolwatch_pool_empty_event_timestamp_seconds{host=\"ddk-2003\","
                               "pool=\"paged\"} 1796047120.000\n"));
        pw_api_resp_close(&resp);
    }
    pw_diag_t dg;
    assert_int_equal(pw_ingest_commit(d.ing, &dg), 2);

    /* stored once: the same events again (an agent that restarted resends its day) are kept
     * once and fire nothing new */
    sample_at(&s, T_2019 + 2000, 3, 3000);
    assert_int_equal(pw_double_send_events(&d, &enc, h, &s, e.ev, e.n), 0);
    assert_int_equal(fired, 2);
    pw_store_event_t *got = NULL;
    assert_int_equal(pw_store_events(d.store, "ddk-2003", 0, INT64_MAX, 100, &got, &dg), 3);
    assert_int_equal(got[0].ev.ts_ms, T_2020);
    assert_int_equal(got[0].ev.event_id, 2020);
    assert_int_equal(got[1].ev.ts_ms, T_2019);
    assert_int_equal(got[1].ev.event_id, 2019);
    assert_int_equal(got[1].ev.record_id, 48213);
    assert_int_equal(got[2].ev.ts_ms, T_2004);
    assert_int_equal(got[2].ev.n_tags, 6);
    assert_memory_equal(got[2].ev.tags[0].tag, "Ddk ", 4);
    assert_int_equal(got[2].ev.tags[0].bytes, 98566144);
    assert_int_equal(got[2].ev.tags[5].pool, PW_WINEVENT_POOL_PAGED);
    assert_memory_equal(got[2].ev.tags[5].tag, "Ntff", 4);
    assert_int_equal(got[2].ev.tags[5].bytes, 8388608);
    pw_free(got);

    /* the API lists them exactly, oldest first; from/to/limit cut the list */
    json_t *j = get(&d, "/api/v1/hosts/ddk-2003/events", "", 200);
    json_t *arr = json_object_get(j, "events");
    assert_int_equal(json_array_size(arr), 3);
    json_t *x = json_array_get(arr, 1);
    assert_int_equal(json_integer_value(json_object_get(x, "ts_ms")), T_2019);
    assert_string_equal(json_string_value(json_object_get(x, "provider")), "Srv");
    assert_int_equal(json_integer_value(json_object_get(x, "event_id")), 2019);
    assert_int_equal(json_integer_value(json_object_get(x, "record_id")), 48213);
    assert_string_equal(json_string_value(json_object_get(x, "kind")), "nonpaged_pool_empty");
    assert_string_equal(json_string_value(json_object_get(x, "pool")), "nonpaged");
    assert_int_equal(json_array_size(json_object_get(x, "tags")), 0);
    x = json_array_get(arr, 2);
    assert_string_equal(json_string_value(json_object_get(x, "kind")), "low_virtual_memory");
    assert_true(json_is_null(json_object_get(x, "pool")));
    json_t *t0 = json_array_get(json_object_get(x, "tags"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "tag")), "Ddk ");
    assert_string_equal(json_string_value(json_object_get(t0, "pool")), "nonpaged");
    assert_int_equal(json_integer_value(json_object_get(t0, "bytes")), 98566144);
    json_decref(j);
    j = get(&d, "/api/v1/hosts/ddk-2003/events", "from=1796047120001&to=1796047507500", 200);
    assert_int_equal(json_array_size(json_object_get(j, "events")), 2);
    json_decref(j);
    j = get(&d, "/api/v1/hosts/ddk-2003/events", "limit=1", 200); /* the newest one */
    arr = json_object_get(j, "events");
    assert_int_equal(json_array_size(arr), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 0), "event_id")), 2004);
    json_decref(j);
    json_decref(get(&d, "/api/v1/hosts/nohost/events", "", 404));
    json_decref(get(&d, "/api/v1/hosts/ddk-2003/events", "from=5&to=4", 400));

    /* quiet: the paged one (13:58:40) resolves an hour after its event, the nonpaged one
     * (14:03:12.486) an hour after its own, not before */
    clk.now = T_2020 + HOUR - 1;
    pw_analysis_run_pass(d.an);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_PG_EMPTY), PW_ALERT_FIRING);
    clk.now = T_2020 + HOUR;
    pw_analysis_run_pass(d.an);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_PG_EMPTY), PW_ALERT_RESOLVED);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_NP_EMPTY), PW_ALERT_FIRING);
    clk.now = T_2019 + HOUR;
    pw_analysis_run_pass(d.an);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_NP_EMPTY), PW_ALERT_RESOLVED);
    assert_int_equal(resolved, 2);

    /* a new 2019 later fires again at once */
    pw_winevent_t again = e.ev[1];
    again.ts_ms = (uint64_t)(T_2019 + 2 * HOUR);
    again.record_id = 49000;
    clk.now = T_2019 + 2 * HOUR + 5000;
    sample_at(&s, T_2019 + 2 * HOUR + 1000, 4, 4000);
    assert_int_equal(pw_double_send_events(&d, &enc, h, &s, &again, 1), 0);
    assert_int_equal(empty_state(d.an, "ddk-2003", PW_ALERT_POOL_NP_EMPTY), PW_ALERT_FIRING);
    assert_int_equal(fired, 3);

    /* a malformed event refuses the sample before anything changes */
    pw_winevent_t bad = e.ev[2];
    bad.n_tags = 1;
    sample_at(&s, T_2019 + 2 * HOUR + 2000, 5, 5000);
    bad.pool = 3; /* not a pool */
    assert_int_equal(pw_double_send_events(&d, &enc, h, &s, &bad, 1), PW_EPROTO);
    pw_sample_close(&s);
    pw_delta_enc_close(&enc);
    pw_double_close(&d);
}

/* The store keeps an event once per (host, time, provider, id, record id), reports which of a
 * batch were new, refuses an unknown host and ages events out with the 15-min rollups. */
static void test_store_events(void **state)
{
    (void)state;
    pw_store_t *st;
    pw_diag_t d;
    assert_int_equal(pw_store_open(":memory:", NULL, &st, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    sample_at(&s, T_2019, 1, 1);
    pw_store_host_t host = {
        "h1", (const uint8_t *)"a", 1, (const uint8_t *)"b", 1, "", 32, 0, 0, NULL, NULL, 0, NULL,
        NULL};
    assert_int_equal(pw_store_put(st, &host, &s, 0, &d), 0);
    evs_t e;
    load_events(&e);
    uint8_t is_new[8];
    assert_int_equal(pw_store_put_events(st, "h1", e.ev, e.n, 5, is_new, &d), 3);
    assert_int_equal(is_new[0] + is_new[1] + is_new[2], 3);
    e.ev[1].record_id++; /* another event at the same time */
    assert_int_equal(pw_store_put_events(st, "h1", e.ev, e.n, 6, is_new, &d), 1);
    assert_int_equal(is_new[0], 0);
    assert_int_equal(is_new[1], 1);
    assert_int_equal(is_new[2], 0);
    assert_int_equal(pw_store_put_events(st, "nohost", e.ev, 1, 6, NULL, &d), PW_ENOENT);
    assert_int_equal(pw_store_commit(st, &d), 0);
    pw_store_event_t *got = NULL;
    assert_int_equal(pw_store_events(st, "h1", 0, INT64_MAX, 100, &got, &d), 4);
    assert_int_equal(got[1].ev.record_id, 48213);
    assert_int_equal(got[1].received_ms, 5);
    assert_int_equal(got[2].ev.record_id, 48214);
    assert_int_equal(got[2].received_ms, 6);
    pw_free(got);
    /* retention: the 15-min level's 400 days after the 2004, everything older goes */
    uint64_t now = (uint64_t)T_2019 + PW_STORE_DEFAULT_15MIN_RETENTION_MS + 1;
    assert_true(pw_store_retention(st, now, &d) >= 2);
    assert_int_equal(pw_store_events(st, "h1", 0, INT64_MAX, 100, &got, &d), 1);
    assert_int_equal(got[0].ev.event_id, 2004);
    pw_free(got);
    pw_sample_close(&s);
    pw_store_close(st);
}

static void add_row(pw_sample_t *s, const char *tag, uint64_t bytes, uint64_t diff)
{
    assert_int_equal(pw_sample_add(s, tag, 4, PW_POOL_NONPAGED, 1000 + diff, 1000, diff, bytes), 0);
}

static const pw_suspect_t *suspect(const pw_analysis_run_t *an, const char *host, const char *tag)
{
    const pw_suspect_t *sp;
    size_t n = pw_analysis_run_suspects(an, &sp);
    for (size_t i = 0; i < n; i++)
        if (strcmp(sp[i].host, host) == 0 && sp[i].tag_len == 4 && memcmp(sp[i].tag, tag, 4) == 0)
            return &sp[i];
    return NULL;
}

/* 12 screens 15 min apart from 2024-01-01T00:00Z (T0 = 1704067200000) where "Ddk " and "Thre"
 * grow alike (1 to 3 allocations of 2 KiB a screen, the same in both: one finding, equal
 * scores) and "File" stays at 1 MiB, imported as host `name`. */
static void import_alike(pw_double_t *d, const char *name)
{
    const int64_t t0 = INT64_C(1704067200000);
    pw_sample_t ss[12];
    uint64_t grown = 0, n = 0;
    for (int k = 0; k < 12; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = (uint64_t)(t0 + k * 900000);
        add_row(&ss[k], "Ddk ", 81920 + grown, 40 + n);
        add_row(&ss[k], "File", 1u << 20, 512);
        add_row(&ss[k], "Thre", 81920 + grown, 40 + n);
        uint64_t step = 1 + (uint64_t)(k * 7 % 3); /* not a straight line */
        grown += step * 2048;
        n += step;
    }
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d->ing, name, 32, name, ss, 12, &ir, NULL), 0);
    for (int k = 0; k < 12; k++)
        pw_sample_close(&ss[k]);
}

/* A 2004 naming a tag is evidence, not a verdict. Host capa (import_alike) is judged alone:
 * one finding of two tags with equal scores, the head by slot order. Host capb, the same
 * screens, gets an export with a 2004 at 02:46:00Z naming capa's member (nonpaged, 1 MiB) and
 * "File" before it is judged: that tag heads capb's finding, its evidence says so and its score
 * is 1.1 x the other's; "File" is no suspect. A finding's head stays once chosen (no flicker):
 * a 2004 naming capa's member later adds the evidence and the boost, not a new head. */
static void test_named_tags_evidence(void **state)
{
    (void)state;
    pw_double_t d;
    assert_int_equal(pw_double_open(&d), 0);
    import_alike(&d, "capa");
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *a = suspect(d.an, "capa", "Ddk "), *b = suspect(d.an, "capa", "Thre");
    assert_non_null(a);
    assert_non_null(b);
    assert_null(suspect(d.an, "capa", "File"));
    assert_int_equal(a->group_n, 2);
    assert_true(a->d.score == b->d.score); /* alike: the tie is the slot order's */
    char member[5], head[5];
    snprintf(member, sizeof(member), "%s", a->head ? "Thre" : "Ddk ");
    snprintf(head, sizeof(head), "%s", a->head ? "Ddk " : "Thre");
    double score = a->d.score;
    assert_null(strstr(a->d.evidence, "Resource-Exhaustion-Detector"));

    pw_winevent_t ev;
    memset(&ev, 0, sizeof(ev));
    snprintf(ev.provider, sizeof(ev.provider), "%s", PW_WINEVENT_PROVIDER_RED);
    ev.event_id = 2004;
    ev.record_id = 77;
    ev.ts_ms = (uint64_t)(INT64_C(1704067200000) + 11 * 900000 + 60000); /* 02:46:00Z */
    ev.n_tags = 2;
    memcpy(ev.tags[0].tag, member, 4);
    ev.tags[0].pool = PW_WINEVENT_POOL_NONPAGED;
    ev.tags[0].bytes = 1u << 20;
    memcpy(ev.tags[1].tag, "File", 4);
    ev.tags[1].pool = PW_WINEVENT_POOL_NONPAGED;
    pw_diag_t dg;
    import_alike(&d, "capb");
    assert_int_equal(pw_ingest_events(d.ing, "capb", &ev, 1, 5, &dg), 1);
    pw_analysis_run_pass(d.an);
    const pw_suspect_t *m = suspect(d.an, "capb", member), *o = suspect(d.an, "capb", head);
    assert_non_null(m);
    assert_non_null(o);
    assert_true(m->head);
    assert_false(o->head);
    assert_non_null(strstr(m->d.evidence,
                           "; named by Resource-Exhaustion-Detector at 2024-01-01 02:46:00Z "
                           "(1.0 MiB)"));
    assert_null(strstr(o->d.evidence, "Resource-Exhaustion-Detector"));
    assert_true(fabs(m->d.score - 1.1 * score) < 1e-9 * score);
    assert_true(o->d.score == score);
    assert_null(suspect(d.an, "capb", "File")); /* named, flat: no suspect */
    /* the same export again stores nothing and changes nothing */
    assert_int_equal(pw_ingest_events(d.ing, "capb", &ev, 1, 6, &dg), 0);
    pw_analysis_run_pass(d.an);
    assert_true(fabs(suspect(d.an, "capb", member)->d.score - 1.1 * score) < 1e-9 * score);
    /* capa: the 2004 later gives its member the evidence and the boost; the head stays */
    assert_int_equal(pw_ingest_events(d.ing, "capa", &ev, 1, 7, &dg), 1);
    pw_analysis_run_pass(d.an);
    m = suspect(d.an, "capa", member);
    assert_non_null(m);
    assert_false(m->head);
    assert_non_null(strstr(m->d.evidence, "named by Resource-Exhaustion-Detector"));
    assert_true(fabs(m->d.score - 1.1 * score) < 1e-9 * score);
    assert_true(suspect(d.an, "capa", head)->head);
    pw_double_close(&d);
}

static json_t *post_import(pw_double_t *d, const char *host, const char *body, size_t len, int want)
{
    char q[300];
    snprintf(q, sizeof(q), "host=%s", host);
    pw_api_req_t req = {
        PW_API_POST, "/api/v1/import",          q, "Bearer adm", (const uint8_t *)body,
        len,         (uint64_t)T_2019 + 3600000};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&d->api, &req, &resp);
    if (st != want)
        fail_msg("import %s: %d %.*s", host, st, (int)resp.body.len, resp.body.data);
    json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
    pw_api_resp_close(&resp);
    assert_non_null(j);
    return j;
}

static json_int_t geti(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        fail_msg("'%s' is not an integer", k);
    return json_integer_value(v);
}

/* POST /api/v1/import of Event Viewer's "Save as XML" in UTF-16 (PowerShell's `>`): refused for
 * a host the collector does not have (404, nothing stored), attached to an imported host (2
 * pool events: the 2019 and the 2004 with 3 named tags), kept once when imported again; a
 * broken export is refused with its line. Old events (2026-11-30, the request's clock an hour
 * after the 2019) raise no PoolEmpty once a pass looked: they are an hour old. */
static void test_import_events(void **state)
{
    (void)state;
    pw_double_t d;
    assert_int_equal(pw_double_open_with_token(&d, "adm", "admin"), 0);
    size_t len;
    char *xml = pw_test_read_file(pw_test_fixture("winevent/eventviewer-saved-utf16.xml"), &len);
    assert_non_null(xml);
    json_t *j = post_import(&d, "ddk-2003", xml, len, 404);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
               "no host 'ddk-2003': import its poolmon captures first"));
    json_decref(j);
    pw_sample_t s;
    pw_sample_init(&s);
    sample_at(&s, T_2019 - 60000, 1, 1000);
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(d.ing, "ddk-2003", 32, "import:x", &s, 1, &ir, NULL), 0);
    j = post_import(&d, "ddk-2003", xml, len, 200);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "events");
    assert_int_equal(geti(j, "events"), 2);
    assert_int_equal(geti(j, "events_stored"), 2);
    assert_int_equal(geti(j, "events_already_stored"), 0);
    assert_int_equal(geti(j, "other_events"), 0);
    assert_int_equal(geti(j, "first_ts_ms"), T_2019);
    assert_int_equal(geti(j, "last_ts_ms"), T_2004);
    json_decref(j);
    j = post_import(&d, "ddk-2003", xml, len, 200);
    assert_int_equal(geti(j, "events_stored"), 0);
    assert_int_equal(geti(j, "events_already_stored"), 2);
    json_decref(j);
    pw_store_event_t *got = NULL;
    pw_diag_t dg;
    assert_int_equal(pw_store_events(d.store, "ddk-2003", 0, INT64_MAX, 100, &got, &dg), 2);
    assert_int_equal(got[1].ev.n_tags, 3);
    assert_memory_equal(got[1].ev.tags[1].tag, "Thre", 4);
    assert_int_equal(got[1].ev.tags[1].bytes, 0);
    pw_free(got);
    free(xml);
    const char bad[] = "<Event><System><EventID>2019</EventID></System>\n<Event>";
    j = post_import(&d, "ddk-2003", bad, sizeof(bad) - 1, 400);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
               "not a System-log event export: line 2"));
    json_decref(j);
    pw_sample_close(&s);
    pw_double_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_events),
        cmocka_unit_test(test_events_flow),
        cmocka_unit_test(test_named_tags_evidence),
        cmocka_unit_test(test_import_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
