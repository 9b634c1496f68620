/* api_internal.h: what the files of the API share (api_util.c) and the handlers the router
 * (api_v1.c) dispatches to, one file per resource. Private to api/. */
#ifndef PW_API_INTERNAL_H
#define PW_API_INTERNAL_H

#include <sys/types.h>

#include <jansson.h>

#include "api.h"

#define PW_API_MAX_QUERY       32      /* query parameters looked at */
#define PW_API_LEAKS_LIMIT     500     /* suspects GET /leaks gives by default */
#define PW_API_LEAKS_LIMIT_MAX 1000000 /* ... at most */
#define PW_API_TAG_TEXT_MAX    (PW_TAG_MAX * 4 + 1)
#define PW_API_TOP_HOSTS       5 /* top_hosts of a fleet tag aggregate */

/* Decoded query parameters. */
typedef struct query_s {
    size_t n;
    char *name[PW_API_MAX_QUERY];
    char *value[PW_API_MAX_QUERY];
    char *mem;
} pw__api_query_t;

/* ---- api_util.c ---- */
/* JSON values: a string (invalid UTF-8 escaped), or null; an unsigned integer (clamped to
 * INT64_MAX); a real (null when not finite). New references. */
json_t *pw__api_jstr(const char *s);
json_t *pw__api_jstr_or_null(const char *s);
json_t *pw__api_ju64(uint64_t v);
json_t *pw__api_jreal(double v);
/* Fills resp with `j` (stolen) as JSON and `status`; 500 on ENOMEM or a NULL j. Returns the
 * status. */
int pw__api_send_json(pw_api_resp_t *resp, int status, json_t *j);
/* Appends j (stolen; NULL = out of memory) to b as compact JSON, for bodies written piece by
 * piece instead of as one document tree. Returns 0 or PW_ENOMEM. */
int pw__api_append_json(pw_buf_t *b, json_t *j);
/* A hex digit's value, or -1. */
int pw__api_hexval(int ch);
/* Percent-decodes s[0..n) into out (NUL-terminated, at most out_size - 1 bytes); `plus`:
 * '+' is a space. Returns the length or -1 (bad encoding, too long). */
ssize_t pw__api_pct_decode(const char *s, size_t n, int plus, char *out, size_t out_size);
/* A tag's printable form (pw_tag_format) in `out`; returns out. */
const char *pw__api_tag_text(const uint8_t *tag, size_t len, char out[PW_API_TAG_TEXT_MAX]);
/* A tag from its printable form; returns the length (1..PW_TAG_MAX) or -1. */
int pw__api_tag_parse(const char *s, uint8_t out[PW_TAG_MAX]);
/* The query string parsed into q (freed with pw__api_query_free); on failure resp holds the
 * error (400, 500) and -1 is returned. */
int pw__api_query_parse(const char *s, pw__api_query_t *q, pw_api_resp_t *resp);
void pw__api_query_free(pw__api_query_t *q);
/* A parameter's value, NULL when absent. */
const char *pw__api_query_get(const pw__api_query_t *q, const char *name);
/* An integer parameter 0..max into *out: 1 present, 0 absent, -1 bad (resp holds the 400). */
int pw__api_query_u64(const pw__api_query_t *q, const char *name, uint64_t max, uint64_t *out,
                      pw_api_resp_t *resp);
/* "paged" / "nonpaged" / "session" / "both" to a pool (3 = both), -1 otherwise. */
int pw__api_pool_word(const char *s);
const char *pw__api_limit_source_name(int s);
/* Whether host h ever had `tag` (len bytes; a short tag also as its 4-byte padded form) in
 * any pool: a row of its current table, else a point of its stored history. Returns 1 or 0
 * (a store error counts as known: the caller's empty answer stands). */
int pw__api_tag_known(pw_api_t *api, const pw_host_t *h, const uint8_t *tag, size_t len,
                      uint64_t now_ms);
const char *pw__api_level_name(pw_level_t l);
/* The tag's driver and description from the loaded pooltag.txt (NULL when unknown). */
void pw__api_describe(const pw_api_t *api, const uint8_t *tag, size_t len, const char **drv,
                      const char **desc);
/* The host named `name`, or NULL with resp holding the 404. */
pw_host_t *pw__api_find_host(pw_api_t *api, const char *name, pw_api_resp_t *resp);

/* The request's body parsed as a JSON object (a new reference), or NULL with the 400 written
 * into resp ("body is not a JSON object: why (line N)"). */
json_t *pw__api_body_object(const pw_api_req_t *req, pw_api_resp_t *resp);

/* For POST /hosts/{host}/...: the host named `name` into *h and the body as a JSON object (a
 * new reference); NULL with the 404 or 400 written into resp. */
json_t *pw__api_host_body(pw_api_t *api, const pw_api_req_t *req, const char *name, pw_host_t **h,
                          pw_api_resp_t *resp);

/* 0 when `name` is a host name as agents have them (DNS, NetBIOS: letters, digits, '.', '-',
 * '_', not starting with '.' or '-'), else the 400 written into resp naming `field` and the
 * byte (an import's host, a rename's new name: a path or a typo with odd bytes is refused). */
int pw__api_check_host_name(const char *name, const char *field, pw_api_resp_t *resp);

/* 1 when a host named `name` is in the fleet and not retired: suspects and alerts of a host
 * retired since the last analysis pass are left out of the answers. */
int pw__api_host_known(const pw_api_t *api, const char *name);

/* ---- shared views ---- */
/* A pool's pressure: the analysis pass's result when it ran, else computed now (api_hosts.c). */
void pw__api_host_pressure(const pw_api_t *api, const pw_host_t *h, int pool, pw_pressure_t *out);
json_t *pw__api_totals_json(const pw_totals_t *t);
/* A pool's time to exhaustion `eta_ms` (from the host's newest sample; < 0: none) as ms since
 * the epoch, or JSON null (api_hosts.c). */
json_t *pw__api_eta_json(const pw_host_t *h, int64_t eta_ms);
/* The host pool's one ETA (pw_analysis_host_eta over pw__api_host_pressure), into *pr and *out
 * (api_hosts.c). pool: PW_POOL_NONPAGED or PW_POOL_PAGED. */
void pw__api_host_eta(const pw_api_t *api, const pw_host_t *h, int pool, pw_pressure_t *pr,
                      pw_host_eta_t *out);
/* Sets PREFIX_eta_ms (when the pool runs out, or when it ran out; null: none), PREFIX_eta_basis
 * ("pool", "leak", "ran_out" or null), PREFIX_eta_range_ms ([soon, late], null members: none /
 * maybe never; null without an ETA), PREFIX_eta_note and PREFIX_ran_out_ms (null unless the
 * pool is at or over its limit) on `o` (api_hosts.c). */
void pw__api_set_eta(json_t *o, const char *prefix, const pw_host_t *h, const pw_host_eta_t *he);
/* The time (ms since the epoch) a host's ETAs count from: its newest sample (api_hosts.c). */
uint64_t pw__api_eta_base_ms(const pw_host_t *h);
/* One leak suspect as JSON (api_leaks.c). */
json_t *pw__api_suspect_json(pw_api_t *api, const pw_suspect_t *s);
/* A pool event as the API shows it (api_events.c); received_ms 0 leaves it out. */
json_t *pw__api_event_json(const pw_winevent_t *ev, uint64_t received_ms);

/* A big-pool snapshot as JSON (the command result's "big_pool": tag, taken_ms, scanned, count,
 * bytes, nonpaged_count, nonpaged_bytes, largest_bytes, smallest_bytes, size_hist). New
 * reference, NULL on ENOMEM. */
json_t *pw__api_bigpool_json(const pw_bigpool_snap_t *bp);

/* ---- handlers: (api, request, path parameters, response) -> HTTP status ---- */
#define PW__API_HANDLER(name)                                                                      \
    int pw__api_##name(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
PW__API_HANDLER(hosts);
PW__API_HANDLER(host);
PW__API_HANDLER(host_delete); /* DELETE /hosts/{host}[?keep_history=1]: retire (admin) */
PW__API_HANDLER(host_rename); /* POST /hosts/{host}/rename {"name"}: imported hosts (admin) */
PW__API_HANDLER(pool);
PW__API_HANDLER(series);
PW__API_HANDLER(totals); /* GET /hosts/{host}/totals: pool totals over time (api_totals.c) */
PW__API_HANDLER(events); /* GET /hosts/{host}/events: Windows pool events (api_events.c) */
PW__API_HANDLER(command);
PW__API_HANDLER(tags);
PW__API_HANDLER(tag);
PW__API_HANDLER(leaks);
PW__API_HANDLER(alerts);
PW__API_HANDLER(pooltag);
PW__API_HANDLER(import);

/* ---- api_global.c: the fleet API from the global view (fleetq.h) ---- */
/* 1 when the request is for the global view (api->fleetq set and no ?scope=local, or
 * ?scope=global), 0 for the local one, -1 with the 400 in resp (an unknown scope, or global
 * without [fleet] query_url). */
int pw__api_scope_global(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp);
int pw__api_global_hosts(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp);
int pw__api_global_tags(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp);
int pw__api_global_tag(pw_api_t *api, const pw_api_req_t *req, const char *tag,
                       pw_api_resp_t *resp);
int pw__api_global_leaks(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp);
/* Frees the answers cached per snapshot (api->gcache). */
void pw__api_gcache_free(pw_api_t *api);

#endif /* PW_API_INTERNAL_H */
