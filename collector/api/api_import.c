/* api_import.c: POST /api/v1/import: a saved poolmon capture, parsed into samples here and
 * stored through ingest. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "poolmon_text.h"
#include "winlimit.h"

/* Largest limit an import takes: 16 TiB, the largest the rule table gives (nonpaged pool of
 * Windows 8.1 and later x64) is far below any value that would overflow a ratio. */
#define MAX_LIMIT_BYTES (1ull << 50)

/* The import's limit options: what was given and the OS, parsed before anything is stored. */
typedef struct limits_opt_s {
    uint64_t np, pg; /* given directly, 0 = not given */
    const char *os;  /* NULL = not given */
    pw_win_os_t win;
} limits_opt_t;

static int limits_parse(const pw__api_query_t *q, limits_opt_t *lo, pw_api_resp_t *resp)
{
    memset(lo, 0, sizeof(*lo));
    if (pw__api_query_u64(q, "nonpaged_limit_bytes", MAX_LIMIT_BYTES, &lo->np, resp) < 0 ||
        pw__api_query_u64(q, "paged_limit_bytes", MAX_LIMIT_BYTES, &lo->pg, resp) < 0)
        return resp->status;
    if (pw__api_query_get(q, "nonpaged_limit_bytes") && lo->np == 0)
        return pw_api_error(resp, 400, "EINVAL",
                            "parameter 'nonpaged_limit_bytes' must be above 0 (leave it out "
                            "when the limit is unknown)");
    if (pw__api_query_get(q, "paged_limit_bytes") && lo->pg == 0)
        return pw_api_error(resp, 400, "EINVAL",
                            "parameter 'paged_limit_bytes' must be above 0 (leave it out when "
                            "the limit is unknown)");
    lo->os = pw__api_query_get(q, "os");
    if (lo->os != NULL) {
        pw_diag_t d;
        if (pw_win_os_parse(lo->os, &lo->win, &d) != 0)
            return pw_api_error(resp, 400, "EINVAL", "parameter %s", d.msg);
    }
    return 0;
}

/* The limits of the imported host: those given, the others from the OS through the Windows
 * source's rule table (RAM and commit limit from the capture's last screen, when it has them).
 * An OS whose rule needs what the capture does not give is refused: 400 in resp. */
static int limits_resolve(const limits_opt_t *lo, const pw_sample_t *last, pw_pool_limit_t *np,
                          pw_pool_limit_t *pg, pw_api_resp_t *resp)
{
    memset(np, 0, sizeof(*np));
    memset(pg, 0, sizeof(*pg));
    if (lo->os == NULL) {
        /* Given directly (or not at all): configured by the operator. */
        if (lo->np) {
            *np = (pw_pool_limit_t){lo->np, PW_LIMIT_CONFIGURED, "given at import"};
        }
        if (lo->pg) {
            *pg = (pw_pool_limit_t){lo->pg, PW_LIMIT_CONFIGURED, "given at import"};
        }
        return 0;
    }
    pw_win_limit_overrides_t ovr = {.cfg_nonpaged_bytes = lo->np, .cfg_paged_bytes = lo->pg};
    uint64_t ram = last ? last->totals.physical_memory_bytes : 0;
    uint64_t commit = last ? last->totals.commit_limit_bytes : 0;
    pw_win_pool_limits(&lo->win, ram, commit, &ovr, np, pg);
    if (np->bytes == 0)
        return pw_api_error(resp, 400, "EINVAL",
                            "parameter os '%.80s': no nonpaged limit (%s%s): give "
                            "nonpaged_limit_bytes",
                            lo->os, np->detail,
                            ram ? "" : "; the rule needs the RAM, which the capture does not give");
    return 0;
}

int pw__api_import(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp)
{
    (void)params;
    pw__api_query_t q;
    if (pw__api_query_parse(req->query, &q, resp) != 0)
        return resp->status;
    const char *host = pw__api_query_get(&q, "host");
    uint64_t interval = PW_POOLMON_INTERVAL_DEFAULT_MS, start = req->now_ms;
    int r = 0;
    size_t hl = host ? strlen(host) : 0;
    if (hl == 0 || hl > 255)
        r = pw_api_error(resp, 400, "EINVAL", "host is required (1..255 bytes)");
    else if (pw__api_query_u64(&q, "interval_ms", 366ull * 86400000, &interval, resp) < 0 ||
             pw__api_query_u64(&q, "start_ms", INT64_MAX, &start, resp) < 0)
        r = resp->status;
    if (r == 0)
        r = pw__api_check_host_name(host, "host", resp);
    limits_opt_t lo;
    if (r == 0)
        r = limits_parse(&q, &lo, resp);
    if (r) {
        pw__api_query_free(&q);
        return r;
    }
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_ingest_import_check(api->ing, host, &d) != 0) {
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    pw_poolmon_opts_t po;
    memset(&po, 0, sizeof(po));
    po.max_input_bytes = PW_API_MAX_IMPORT_BYTES;
    po.allow_cut_last_line = 1; /* said in the answer (cut_line), not a reason to lose the rest */
    po.start_ms = start;
    po.interval_ms = interval ? interval : PW_POOLMON_INTERVAL_DEFAULT_MS;
    pw_poolmon_doc_t doc;
    r = pw_poolmon_parse((const char *)req->body, req->body_len, &po, &doc, &d);
    if (r != 0) {
        pw__api_query_free(&q);
        return pw_api_error(resp,
                            r == PW_ENOMEM    ? 500
                            : r == PW_ETOOBIG ? 413
                                              : 400,
                            pw_err_name(r), "not a poolmon capture: line %u: %s", d.line, d.msg);
    }
    /* Screens stamped in the future (a --start or file time stamps off by years) would sit
     * ahead of every live host and poison what reads the fleet by time (remote write, the
     * store's windows): a day of slack covers time zones. */
    uint64_t end = doc.n_screens ? doc.screens[doc.n_screens - 1].timestamp_ms : 0;
    if (end > req->now_ms + 86400000ull) {
        pw_poolmon_doc_close(&doc);
        pw__api_query_free(&q);
        return pw_api_error(resp, 400, "EINVAL",
                            "the capture's last screen would be stored at %llu ms since the epoch, "
                            "more than a day ahead of this collector's clock: check start_ms "
                            "(CLI --start) or the file's time stamps",
                            (unsigned long long)end);
    }
    /* Counters are 32-bit unless a value says otherwise (a 64-bit build's capture). */
    unsigned width = 32;
    for (size_t i = 0; i < doc.n_screens; i++)
        for (size_t j = 0; j < doc.screens[i].n_rows; j++)
            if (doc.screens[i].rows[j].allocs > UINT32_MAX ||
                doc.screens[i].rows[j].frees > UINT32_MAX ||
                doc.screens[i].rows[j].diff > UINT32_MAX)
                width = 64;
    uint64_t first = doc.n_screens ? doc.screens[0].timestamp_ms : 0;
    /* The instance is the capture's content: importing the same file again stores nothing
     * twice (same agent, boot and seqs), whatever times the screens were given. */
    char boot_id[40];
    uint64_t fnv = 1469598103934665603ull;
    for (size_t i = 0; i < req->body_len; i++)
        fnv = (fnv ^ req->body[i]) * 1099511628211ull;
    snprintf(boot_id, sizeof(boot_id), "import:%016" PRIx64, fnv);
    pw_sample_t *ss = pw_calloc(doc.n_screens ? doc.n_screens : 1, sizeof(*ss));
    if (ss == NULL)
        r = PW_ENOMEM;
    for (size_t i = 0; ss && i < doc.n_screens; i++)
        pw_sample_init(&ss[i]);
    for (size_t i = 0; ss && r == 0 && i < doc.n_screens; i++)
        r = pw_poolmon_screen_to_sample(&doc.screens[i], &ss[i]);
    pw_ingest_import_res_t ir;
    memset(&ir, 0, sizeof(ir));
    ir.last_ts = first;
    pw_pool_limit_t np, pg;
    int lr =
        r == 0 ? limits_resolve(&lo, doc.n_screens ? &ss[doc.n_screens - 1] : NULL, &np, &pg, resp)
               : 0;
    if (lr != 0) {
        for (size_t i = 0; i < doc.n_screens; i++)
            pw_sample_close(&ss[i]);
        pw_free(ss);
        pw_poolmon_doc_close(&doc);
        pw__api_query_free(&q);
        return lr;
    }
    if (r == 0)
        r = pw_ingest_import(api->ing, host, width, boot_id, ss, doc.n_screens, &ir, &d);
    else
        pw_diag_set(&d, r, 0, 0, "import", "%s", pw_strerror(r));
    /* What the operator said about the host, kept with it (a restart keeps it too). */
    if (r == 0 && (lo.os != NULL || np.bytes || pg.bytes))
        r = pw_ingest_import_meta(api->ing, host, lo.os, &np, &pg, &d);
    for (size_t i = 0; ss && i < doc.n_screens; i++)
        pw_sample_close(&ss[i]);
    pw_free(ss);
    if (r == PW_EEXIST) {
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        pw_poolmon_doc_close(&doc);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    if (r < 0) {
        pw_poolmon_doc_close(&doc);
        pw__api_query_free(&q);
        return pw_api_error(resp, r == PW_EINVAL ? 400 : 500, pw_err_name(r), "import: %s",
                            d.msg[0] ? d.msg : pw_strerror(r));
    }
    uint64_t rows = ir.rows, last = ir.screens ? ir.last_ts : first;
    json_t *o = json_pack("{s:o,s:i,s:o,s:o,s:o,s:o}", "host", pw__api_jstr(host), "screens",
                          (int)doc.n_screens, "rows", pw__api_ju64(rows), "first_ts_ms",
                          pw__api_ju64(first), "last_ts_ms", pw__api_ju64(last), "cut_line",
                          doc.cut_line ? json_integer(doc.cut_line) : json_null());
    /* The limits the host has now (given here or earlier; null: unknown). */
    const pw_host_t *ih = pw_fleet_find(pw_ingest_fleet(api->ing), host);
    uint64_t hl_np = ih ? pw_host_limit(ih, PW_POOL_NONPAGED) : 0;
    uint64_t hl_pg = ih ? pw_host_limit(ih, PW_POOL_PAGED) : 0;
    /* screens this content's import had stored before: a capture is its content, so the same
     * file again (whatever its start time) stores nothing new; say so instead of "stored" */
    json_object_set_new(o, "screens_stored", json_integer((json_int_t)ir.screens));
    json_object_set_new(o, "screens_already_stored", json_integer((json_int_t)ir.already));
    json_object_set_new(o, "nonpaged_limit_bytes", hl_np ? pw__api_ju64(hl_np) : json_null());
    json_object_set_new(o, "paged_limit_bytes", hl_pg ? pw__api_ju64(hl_pg) : json_null());
    json_object_set_new(o, "nonpaged_limit_detail",
                        pw__api_jstr(ih ? ih->nonpaged_limit_detail : ""));
    pw_poolmon_doc_close(&doc);
    pw__api_query_free(&q);
    return pw__api_send_json(resp, 200, o);
}
