/* api_agents.c: POST /api/v1/hosts/{host}/commands (to the host's agent) and the JSON of its
 * answer. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

json_t *pw__api_bigpool_json(const pw_bigpool_snap_t *bp)
{
    char tt[PW_API_TAG_TEXT_MAX];
    json_t *hist = json_array();
    for (size_t i = 0; hist && i < bp->n_hist; i++)
        json_array_append_new(hist, pw__api_ju64(bp->size_hist[i]));
    return json_pack(
        "{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tag", pw__api_tag_text(bp->tag, 4, tt),
        "taken_ms", pw__api_ju64(bp->taken_ms), "scanned", pw__api_ju64(bp->scanned), "count",
        pw__api_ju64(bp->count), "bytes", pw__api_ju64(bp->bytes), "nonpaged_count",
        pw__api_ju64(bp->nonpaged_count), "nonpaged_bytes", pw__api_ju64(bp->nonpaged_bytes),
        "largest_bytes", pw__api_ju64(bp->largest_bytes), "smallest_bytes",
        pw__api_ju64(bp->smallest_bytes), "size_hist", hist);
}

void pw_api_command_result(pw_api_resp_t *resp, const Poolwatch__V1__CommandResult *res)
{
    json_t *m = json_array();
    for (size_t i = 0; m && i < res->n_matches; i++) {
        const Poolwatch__V1__DriverMatch *d = res->matches[i];
        /* where the tag stands in the file (agent/pe.h), best first as the agent ranked them */
        static const char *const kinds[] = {"unknown", "code", "data", "file"};
        const char *kind = (unsigned)d->match < 4 ? kinds[d->match] : "unknown";
        json_array_append_new(
            m, json_pack("{s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o}", "file", pw__api_jstr(d->file),
                         "size_bytes", pw__api_ju64(d->size_bytes), "file_version",
                         pw__api_jstr(d->file_version), "match", kind, "offset",
                         pw__api_ju64(d->offset), "product", pw__api_jstr(d->product), "company",
                         pw__api_jstr(d->company), "description", pw__api_jstr(d->description)));
    }
    json_t *o = json_pack("{s:i,s:o,s:o}", "status", (int)res->status, "message",
                          pw__api_jstr(res->message), "matches", m);
    const Poolwatch__V1__BigPoolSnapshot *bp = res->big_pool;
    if (o != NULL && bp != NULL) {
        pw_bigpool_snap_t snap;
        pw_ingest_big_pool_snap(bp, &snap);
        json_object_set_new(o, "big_pool", pw__api_bigpool_json(&snap));
    }
    pw__api_send_json(resp, 200, o);
}

int pw__api_command(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    pw_host_t *h;
    json_t *b = pw__api_host_body(api, req, params[0], &h, resp);
    if (b == NULL)
        return resp->status;
    Poolwatch__V1__Command cmd = POOLWATCH__V1__COMMAND__INIT;
    const char *kind = json_string_value(json_object_get(b, "kind"));
    json_t *dur = json_object_get(b, "duration_ms"), *iv = json_object_get(b, "interval_ms");
    uint8_t tag[PW_TAG_MAX];
    int r = 0;
    if (kind == NULL) {
        r = pw_api_error(resp, 400, "EINVAL", "'kind' is required");
    } else if (strcmp(kind, "live") == 0) {
        json_int_t d = dur ? json_integer_value(dur) : 600000;
        if ((dur && !json_is_integer(dur)) || d < 1000 || d > 600000)
            r = pw_api_error(resp, 400, "EINVAL", "duration_ms must be 1000..600000");
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_LIVE_MODE;
        cmd.duration_ms = (uint32_t)d;
    } else if (strcmp(kind, "keyframe") == 0) {
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_KEYFRAME;
    } else if (strcmp(kind, "interval") == 0) {
        json_int_t i = json_integer_value(iv);
        if (!json_is_integer(iv) || i < 1000 || i > 86400000)
            r = pw_api_error(resp, 400, "EINVAL", "interval_ms must be 1000..86400000");
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_SET_INTERVAL;
        cmd.interval_ms = (uint32_t)i;
    } else if (strcmp(kind, "find_tag") == 0) {
        const char *t = json_string_value(json_object_get(b, "tag"));
        int tl = t ? pw__api_tag_parse(t, tag) : -1;
        if (tl < 0)
            r = pw_api_error(resp, 400, "EINVAL", "tag must be 1..64 bytes in printable form");
        else if (pw_host_imported(h)) {
            /* no agent to search its driver files: said (pooltag.txt still answers), not "not
             * connected", as big_pool says it */
            json_decref(b);
            return pw__api_send_json(
                resp, 200,
                json_pack("{s:i,s:s,s:b,s:[]}", "status", PW_ENOTSUP, "message",
                          "an imported host has no agent to ask: which of its driver files hold "
                          "the tag is not in a poolmon capture (hosts with an agent only)",
                          "imported", 1, "matches"));
        }
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_FIND_TAG;
        cmd.tag.data = tag;
        cmd.tag.len = tl > 0 ? (size_t)tl : 0;
    } else if (strcmp(kind, "big_pool") == 0) {
        /* A pool tag of 4 bytes; a shorter one is padded as poolmon shows it ("Io  "). */
        const char *t = json_string_value(json_object_get(b, "tag"));
        int tl = t ? pw__api_tag_parse(t, tag) : -1;
        char tt[PW_API_TAG_TEXT_MAX];
        /* Only a Windows kernel has a big-pool table: a Linux host (a slab cache name is no
         * 4-byte tag) or an imported capture (no agent to ask) answers so, as a Linux agent
         * does, instead of "tag must be 1..4 bytes" or "not connected". */
        const char *none = strcmp(h->os_family, "linux") == 0
                               ? "a Linux host has no big-pool table (Windows hosts only)"
                           : pw_host_imported(h)
                               ? "an imported host has no agent to ask: its big-pool table is "
                                 "not in a poolmon capture (Windows hosts with an agent only)"
                               : NULL;
        if (none != NULL && tl >= 1) {
            json_decref(b);
            json_t *o =
                json_pack("{s:i,s:s,s:[]}", "status", PW_ENOTSUP, "message", none, "matches");
            if (o != NULL && strcmp(h->os_family, "linux") != 0)
                json_object_set_new(o, "imported", json_true());
            return pw__api_send_json(resp, 200, o);
        }
        if (tl < 1 || tl > 4)
            r = pw_api_error(resp, 400, "EINVAL", "tag must be a pool tag of 1..4 bytes");
        else if (!pw__api_tag_known(api, h, tag, (size_t)tl, req->now_ms))
            /* a typo is not "no block of a page or more": 404, as series answers it */
            r = pw_api_error(resp, 404, "ENOENT",
                             "host '%s' has no tag '%s' in any pool, now or in its history (tags "
                             "are case-sensitive)",
                             h->name, pw__api_tag_text(tag, (size_t)tl, tt));
        else
            memset(tag + tl, ' ', (size_t)(4 - tl));
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_BIG_POOL;
        cmd.tag.data = tag;
        cmd.tag.len = 4;
    } else if (strcmp(kind, "status") == 0) {
        cmd.kind = POOLWATCH__V1__COMMAND_KIND__COMMAND_STATUS;
    } else {
        r = pw_api_error(resp, 400, "EINVAL",
                         "kind must be live, keyframe, interval, find_tag, big_pool or status");
    }
    json_decref(b);
    if (r)
        return r;
    cmd.id = ++api->next_cmd_id;
    if (!pw_host_connected(h) || api->agents.send_command == NULL ||
        api->agents.send_command(api->agents.arg, h, &cmd) != 0)
        return pw_api_error(resp, 503, "ECLOSED", "host '%s' is not connected", h->name);
    resp->pending = 1;
    resp->cmd_id = cmd.id;
    snprintf(resp->cmd_host, sizeof(resp->cmd_host), "%s", h->name);
    resp->status = 200;
    return 200;
}
