/* api_import.c: POST /api/v1/import: a saved poolmon capture, or a Linux host's saved
 * slabinfo/allocinfo dumps (common/linux_series.h), parsed into samples here and stored through
 * ingest; or a Windows host's System-log events exported as XML (common/winevent.h: wevtutil
 * qe System /f:xml, Event Viewer's "Save as XML"), attached to a host the collector has. */
#include "api_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "capture_order.h"
#include "clock.h"
#include "linux_series.h"
#include "poolmon_json.h"
#include "poolmon_text.h"
#include "winevent.h"
#include "winlimit.h"

/* Largest limit an import takes (PW_WIN_IMPORT_MAX_LIMIT_BYTES, 1 PiB, which the CLI checks
 * too): the largest the rule table gives (16 TiB, nonpaged pool of Windows 8.1 and later x64)
 * is far below it, and it is far below any value that would overflow a ratio. */
#define MAX_LIMIT_BYTES PW_WIN_IMPORT_MAX_LIMIT_BYTES

/* `ms` since the epoch as "2026-12-02 15:58:36Z" in out (UTC). Returns out. */
static const char *utc_text(uint64_t ms, char *out, size_t n)
{
    struct tm tm;
    if (ms / 1000 > (uint64_t)INT64_MAX || pw_clock_gmtime((int64_t)(ms / 1000), &tm) != 0 ||
        strftime(out, n, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
        snprintf(out, n, "%llu ms since the epoch", (unsigned long long)ms);
    return out;
}

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

/* A parsed import: samples in time order (owned), counter width, what the text told. */
typedef struct parsed_s {
    pw_sample_t *ss;
    size_t n;
    unsigned width;
    const char *format; /* "poolmon" or "linux" */
    uint32_t cut_line;  /* poolmon: the last line cut inside a row, 0 when none */
    /* poolmon: the last screen was cut short (pw_poolmon_last_screen_partial) and left out:
     * its line, its rows and the screen's before it; partial_line 0 when not */
    uint32_t partial_line;
    size_t partial_rows, partial_rows_before;
    size_t skipped; /* linux: lines of the dumps that were not rows */
    uint32_t first_skipped;
    /* poolmon: rows that could not be read and screens merged by a lost header (skip_bad_rows),
     * and the screens they made incomplete, left out (a gap, not a tag read as freed); JSON
     * arrays, owned; NULL for a Linux series */
    json_t *unreadable_rows, *screens_left_out;
    size_t unreadable_total;
    size_t lead_unstamped; /* the first screens without a time stamp of the file: placed from
                              start_ms (or an earlier import of the capture) */
    json_t *falls; /* poolmon: neighbouring screens whose counters fall (owned; NULL: none) */
} parsed_t;

static void parsed_close(parsed_t *p)
{
    for (size_t i = 0; p->ss && i < p->n; i++)
        pw_sample_close(&p->ss[i]);
    pw_free(p->ss);
    json_decref(p->unreadable_rows);
    json_decref(p->screens_left_out);
    json_decref(p->falls);
    memset(p, 0, sizeof(*p));
}

/* The answer's account of what skip_bad_rows left out: unreadable_rows (each row with its line,
 * screen, tag, kind and message) and screens_left_out (each incomplete screen with its line
 * and its first cause). Returns 0 or PW_ENOMEM. */
static int poolmon_problems(const pw_poolmon_doc_t *doc, parsed_t *p)
{
    p->unreadable_rows = pw_poolmon_problems_json(doc);
    p->screens_left_out = json_array();
    p->unreadable_total = doc->n_problems_total;
    if (p->unreadable_rows == NULL || p->screens_left_out == NULL)
        return PW_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < doc->n_screens; i++) {
        if (doc->screens[i].incomplete == 0)
            continue;
        while (k < doc->n_problems && doc->problems[k].screen < i)
            k++;
        const pw_poolmon_problem_t *pr =
            k < doc->n_problems && doc->problems[k].screen == i ? &doc->problems[k] : NULL;
        char cause[200] = "a row that cannot be read";
        if (pr != NULL)
            snprintf(cause, sizeof(cause), "line %u: %s", (unsigned)pr->line, pr->msg);
        json_t *o = json_pack("{s:I,s:I,s:I,s:s}", "screen", (json_int_t)i + 1, "line",
                              (json_int_t)doc->screens[i].line, "problems",
                              (json_int_t)doc->screens[i].incomplete, "cause", cause);
        if (o == NULL || json_array_append_new(p->screens_left_out, o) != 0)
            return PW_ENOMEM;
    }
    return 0;
}

/* The capture's identity (its instance's boot id, "import:" and 16 hex digits into out[40]): an
 * FNV-1a hash of its first screen's parsed rows (tag, type, allocs, frees, diff, bytes), so
 * the bytes around them (line ends, encoding, screens appended later) do not change it. */
static void capture_identity(const parsed_t *p, char out[40])
{
    uint64_t h = 1469598103934665603ull;
    const pw_sample_t *s = p->n ? &p->ss[0] : NULL;
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        const pw_entry_t *e = &s->entries[i];
        uint8_t b[1 + PW_TAG_MAX + 1 + 32];
        size_t k = 0;
        b[k++] = e->tag_len;
        memcpy(b + k, e->tag, e->tag_len);
        k += e->tag_len;
        b[k++] = e->pool;
        const uint64_t v[4] = {e->allocs, e->frees, e->diff, e->bytes};
        for (size_t j = 0; j < 4; j++)
            for (int sh = 0; sh < 64; sh += 8)
                b[k++] = (uint8_t)(v[j] >> sh);
        for (size_t j = 0; j < k; j++)
            h = (h ^ b[j]) * 1099511628211ull;
    }
    snprintf(out, 40, "import:%016" PRIx64, h);
}

/* Neighbouring screens of one kind (same session) whose allocs and frees fall for most tags
 * (capture_order.h): out of order, or a reboot between them. Said in the answer (p->falls:
 * the two screens' lines and the tags), stored as they come. Returns 0 or PW_ENOMEM. */
static int screens_falls(const pw_poolmon_doc_t *doc, const size_t *at, parsed_t *p)
{
    for (size_t i = 1; i < p->n; i++) {
        size_t prev = i;
        while (prev-- > 0 && doc->screens[at[prev]].session != doc->screens[at[i]].session)
            ;
        if (prev >= i) /* wrapped: no earlier screen of this kind */
            continue;
        size_t common, fell;
        if (pw_capture_counters_fall(&p->ss[prev], &p->ss[i], &common, &fell) != 0)
            return PW_ENOMEM;
        if (!pw_capture_fell(common, fell))
            continue;
        if (p->falls == NULL && (p->falls = json_array()) == NULL)
            return PW_ENOMEM;
        json_array_append_new(p->falls, json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "screen",
                                                  (json_int_t)at[prev] + 1, "line",
                                                  (json_int_t)doc->screens[at[prev]].line,
                                                  "next_screen", (json_int_t)at[i] + 1, "next_line",
                                                  (json_int_t)doc->screens[at[i]].line, "tags_fell",
                                                  (json_int_t)fell, "tags", (json_int_t)common));
    }
    return 0;
}

/* 400 for a capture none of whose screens can be read whole (closes the doc). */
static int no_whole_screen(pw_poolmon_doc_t *doc, pw_api_resp_t *resp)
{
    unsigned line = doc->n_problems ? doc->problems[0].line : doc->screens[0].line;
    pw_poolmon_doc_close(doc);
    return pw_api_error(resp, 400, "EPARSE",
                        "no screen of the capture can be read whole: line %u: a row that cannot "
                        "be read, nothing to import",
                        line);
}

/* Saved poolmon screens: counters are 32-bit unless a value says otherwise (a 64-bit build's
 * capture). */
static int parse_poolmon(const pw_api_req_t *req, uint64_t start, uint64_t interval, parsed_t *p,
                         pw_api_resp_t *resp)
{
    pw_poolmon_opts_t po;
    memset(&po, 0, sizeof(po));
    po.max_input_bytes = PW_API_MAX_IMPORT_BYTES;
    po.allow_cut_last_line = 1; /* said in the answer (cut_line), not a reason to lose the rest */
    po.skip_bad_rows = 1;       /* a row that cannot be read costs its screen, not the file */
    po.start_ms = start;
    po.interval_ms = interval ? interval : PW_POOLMON_INTERVAL_DEFAULT_MS;
    pw_poolmon_doc_t doc;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_poolmon_parse((const char *)req->body, req->body_len, &po, &doc, &d);
    if (r != 0)
        return pw_api_error(resp,
                            r == PW_ENOMEM    ? 500
                            : r == PW_ETOOBIG ? 413
                                              : 400,
                            pw_err_name(r), "not a poolmon capture: line %u: %s", d.line, d.msg);
    /* Headers without a row (screens saved before poolmon drew its table) are no host. */
    size_t rows = 0;
    for (size_t i = 0; i < doc.n_screens; i++)
        rows += doc.screens[i].n_rows;
    if (rows == 0 && doc.n_problems_total > 0) {
        return no_whole_screen(&doc, resp);
    }
    if (rows == 0) {
        unsigned line = doc.n_screens ? doc.screens[0].line : 1;
        pw_poolmon_doc_close(&doc);
        return pw_api_error(resp, 400, "EINVAL",
                            "no pool tag rows: line %u: the capture's screens have a header only, "
                            "nothing to import",
                            line);
    }
    p->format = "poolmon";
    p->width = 32;
    p->cut_line = doc.cut_line;
    r = poolmon_problems(&doc, p);
    if (r != 0) {
        pw_poolmon_doc_close(&doc);
        return pw_api_error(resp, 500, "ENOMEM", "import: out of memory");
    }
    /* A last screen cut short is left out (its missing tags would read as freed, and it would
     * become the host's table): said in the answer, as the CLI says it. */
    size_t keep = doc.n_screens;
    if (pw_poolmon_last_screen_partial(&doc, &p->partial_rows, &p->partial_rows_before)) {
        keep--;
        p->partial_line = doc.screens[keep].line;
    }
    /* Time stamps that go back or repeat (a DST change in zone-less stamps, a clock set back)
     * would store screens out of order, or two at one time: refused with both lines, nothing
     * stored (the file's order and times cannot both be kept). */
    size_t back = pw_capture_time_back(&doc, keep);
    if (back > 0) {
        char a[32], b[32];
        const pw_poolmon_screen_t *s0 = &doc.screens[back - 1], *s1 = &doc.screens[back];
        pw_api_error(resp, 400, "EINVAL",
                     "line %u: screen %zu is stamped %s, %s screen %zu's %s (line %u%s): time "
                     "stamps that go back or repeat (a DST change, a clock set back) would store "
                     "the screens out of order; nothing stored: give the stamps their UTC "
                     "offset (+01:00), or import the screens before and after as two hosts",
                     (unsigned)s1->line, back + 1, utc_text(s1->timestamp_ms, a, sizeof(a)),
                     s1->timestamp_ms == s0->timestamp_ms ? "the same as" : "before", back,
                     utc_text(s0->timestamp_ms, b, sizeof(b)), (unsigned)s0->line,
                     s0->has_file_time ? "" : ", not stamped: its time follows the screens before");
        pw_poolmon_doc_close(&doc);
        parsed_close(p);
        return resp->status;
    }
    for (size_t i = 0; i < doc.n_screens; i++)
        for (size_t j = 0; j < doc.screens[i].n_rows; j++)
            if (doc.screens[i].rows[j].allocs > UINT32_MAX ||
                doc.screens[i].rows[j].frees > UINT32_MAX ||
                doc.screens[i].rows[j].diff > UINT32_MAX)
                p->width = 64;
    size_t whole = 0;
    for (size_t i = 0; i < keep; i++)
        whole += doc.screens[i].incomplete == 0;
    if (whole == 0) {
        parsed_close(p);
        return no_whole_screen(&doc, resp);
    }
    /* Screens made incomplete are left out: a tag missing from one would read as freed. They
     * keep their time slots, so the screens after them keep theirs. */
    p->ss = pw_calloc(whole, sizeof(*p->ss));
    size_t *at = pw_calloc(whole, sizeof(*at)); /* the doc's index of each screen kept */
    r = p->ss && at ? 0 : PW_ENOMEM;
    int stamped = 0;
    for (size_t i = 0; r == 0 && i < keep; i++) {
        if (doc.screens[i].incomplete)
            continue;
        at[p->n] = i;
        pw_sample_init(&p->ss[p->n]);
        p->n++;
        r = pw_poolmon_screen_to_sample(&doc.screens[i], &p->ss[p->n - 1]);
        /* the screens kept before the first stamped one: placed from start_ms */
        stamped |= doc.screens[i].has_file_time;
        if (!stamped)
            p->lead_unstamped++;
    }
    if (r == 0)
        r = screens_falls(&doc, at, p);
    pw_free(at);
    pw_poolmon_doc_close(&doc);
    if (r != 0) {
        parsed_close(p);
        return pw_api_error(resp, 500, pw_err_name(r), "import: %s", pw_strerror(r));
    }
    return 0;
}

/* A Linux host's saved slabinfo/allocinfo dumps (common/linux_series.h): 64-bit counters. */
static int parse_linux(const pw_api_req_t *req, uint64_t start, uint64_t interval, parsed_t *p,
                       pw_api_resp_t *resp)
{
    pw_linux_series_opts_t lo = {.max_input_bytes = PW_API_MAX_IMPORT_BYTES,
                                 .start_ms = start,
                                 .interval_ms =
                                     interval ? interval : PW_POOLMON_INTERVAL_DEFAULT_MS};
    pw_linux_series_t ser;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_linux_series_parse((const char *)req->body, req->body_len, &lo, &ser, &d);
    if (r != 0)
        return pw_api_error(resp,
                            r == PW_ENOMEM    ? 500
                            : r == PW_ETOOBIG ? 413
                                              : 400,
                            pw_err_name(r), "not a saved slabinfo/allocinfo series: line %u: %s",
                            d.line, d.msg);
    p->format = "linux";
    p->width = 64;
    p->skipped = ser.n_skipped;
    p->first_skipped = ser.first_skipped;
    p->ss = pw_calloc(ser.n_points ? ser.n_points : 1, sizeof(*p->ss));
    if (p->ss == NULL) {
        pw_linux_series_close(&ser);
        return pw_api_error(resp, 500, "ENOMEM", "import: out of memory");
    }
    while (p->lead_unstamped < ser.n_points && !ser.points[p->lead_unstamped].has_file_time)
        p->lead_unstamped++;
    for (size_t i = 0; i < ser.n_points; i++) {
        p->ss[i] = ser.points[i].sample; /* moved: the series no longer owns it */
        pw_sample_init(&ser.points[i].sample);
    }
    p->n = ser.n_points;
    pw_linux_series_close(&ser);
    return 0;
}

/* The pool events of an export (srv 2019/2020, 2004; others counted, not kept). */
typedef struct {
    pw_winevent_t *ev;
    size_t n, cap, other;
} ev_list_t;

static int keep_event(void *arg, const pw_winevent_t *ev)
{
    ev_list_t *l = arg;
    if (pw_winevent_kind(ev) == PW_WINEVENT_OTHER) {
        l->other++;
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        pw_winevent_t *p = pw_realloc(l->ev, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        l->ev = p;
        l->cap = nc;
    }
    l->ev[l->n++] = *ev;
    return 0;
}

/* An export of the host's System log: its pool events go with the host (imported or live:
 * events mix with no history), each kept once. */
static int import_events(pw_api_t *api, const pw_api_req_t *req, const char *host,
                         pw_api_resp_t *resp)
{
    if (pw_fleet_find(pw_ingest_fleet(api->ing), host) == NULL)
        return pw_api_error(resp, 404, "ENOENT",
                            "no host '%s': import its poolmon captures first (or let its agent "
                            "connect), then its events",
                            host);
    ev_list_t l;
    memset(&l, 0, sizeof(l));
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_winevent_parse(req->body, req->body_len, keep_event, &l, &d);
    if (r < 0) {
        pw_free(l.ev);
        return pw_api_error(resp,
                            r == PW_ENOMEM    ? 500
                            : r == PW_ETOOBIG ? 413
                                              : 400,
                            pw_err_name(r), "not a System-log event export: %s", d.msg);
    }
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (first == 0 || l.ev[i].ts_ms < first)
            first = l.ev[i].ts_ms;
        if (l.ev[i].ts_ms > last)
            last = l.ev[i].ts_ms;
    }
    int stored = l.n ? pw_ingest_events(api->ing, host, l.ev, l.n, req->now_ms, &d) : 0;
    pw_free(l.ev);
    if (stored < 0)
        return pw_api_error(resp, 500, pw_err_name(stored), "import: %s",
                            d.msg[0] ? d.msg : pw_strerror(stored));
    json_t *o = json_pack("{s:o,s:s,s:i,s:i,s:i,s:i,s:o,s:o}", "host", pw__api_jstr(host), "format",
                          "events", "events", (int)l.n, "events_stored", stored,
                          "events_already_stored", (int)l.n - stored, "other_events", (int)l.other,
                          "first_ts_ms", l.n ? pw__api_ju64(first) : json_null(), "last_ts_ms",
                          l.n ? pw__api_ju64(last) : json_null());
    return pw__api_send_json(resp, 200, o);
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
    if (pw_winevent_sniff(req->body, req->body_len)) {
        r = import_events(api, req, host, resp);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_ingest_import_check(api->ing, host, &d) != 0) {
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    parsed_t pa;
    memset(&pa, 0, sizeof(pa));
    int linux_series = pw_linux_series_sniff((const char *)req->body, req->body_len);
    if (linux_series && lo.os != NULL)
        r = pw_api_error(resp, 400, "EINVAL",
                         "parameter os names a Windows version; a Linux series takes "
                         "nonpaged_limit_bytes (the limit of its slab memory) instead");
    else
        r = linux_series ? parse_linux(req, start, interval, &pa, resp)
                         : parse_poolmon(req, start, interval, &pa, resp);
    if (r != 0) {
        pw__api_query_free(&q);
        return r;
    }
    /* The instance is the capture's first screen: the same capture again, or grown since by
     * screens poolmon appended (its log), or saved with other line ends or in UTF-16, is the
     * same instance; its screens are seqs 1..n, so those stored before are resends. */
    char boot_id[40];
    capture_identity(&pa, boot_id);
    /* Screens without time stamps of a capture this host has: placed as its earlier import
     * placed them (the first screen's time, the spacing), not from start_ms (now, for the
     * CLI), so a grown capture goes on where it ended. */
    int placed_before = 0;
    uint64_t kseq = 0, kts = 0;
    uint64_t step = interval ? interval : PW_POOLMON_INTERVAL_DEFAULT_MS;
    if (pa.lead_unstamped > 0 &&
        pw_ingest_import_known(api->ing, host, boot_id, &kseq, &kts) == 0 && kseq >= 1 &&
        (kseq <= pa.lead_unstamped || pa.lead_unstamped == pa.n)) {
        /* the stored screen's time less its time here (screens left out keep their slots:
         * the known screen's own time here, not its index, says where the rest go) */
        uint64_t here = kseq <= pa.n ? pa.ss[kseq - 1].timestamp_ms
                                     : pa.ss[pa.n - 1].timestamp_ms + (kseq - pa.n) * step;
        if (kts >= here || here - kts <= pa.ss[0].timestamp_ms) {
            for (size_t i = 0; i < pa.lead_unstamped; i++)
                pa.ss[i].timestamp_ms = pa.ss[i].timestamp_ms - here + kts;
            placed_before = 1;
        }
    }
    /* Screens stamped in the future (a --start or file time stamps off by years) would sit
     * ahead of every live host and poison what reads the fleet by time (remote write, the
     * store's windows): a day of slack covers time zones. */
    uint64_t end = pa.n ? pa.ss[pa.n - 1].timestamp_ms : 0;
    if (end > req->now_ms + 86400000ull) {
        parsed_close(&pa);
        pw__api_query_free(&q);
        char at[32], now[32];
        return pw_api_error(resp, 400, "EINVAL",
                            "the capture's last screen would be stored at %s, more than a day "
                            "ahead of this collector's clock (%s): check start_ms (CLI --start) "
                            "or the file's time stamps",
                            utc_text(end, at, sizeof(at)), utc_text(req->now_ms, now, sizeof(now)));
    }
    uint64_t first = pa.n ? pa.ss[0].timestamp_ms : 0;
    pw_ingest_import_res_t ir;
    memset(&ir, 0, sizeof(ir));
    ir.last_ts = first;
    pw_pool_limit_t np, pg;
    int lr = limits_resolve(&lo, pa.n ? &pa.ss[pa.n - 1] : NULL, &np, &pg, resp);
    if (lr != 0) {
        parsed_close(&pa);
        pw__api_query_free(&q);
        return lr;
    }
    /* The limits before: what this import changes is said, also when it stores no screen
     * (the same capture again with another --os) */
    const pw_host_t *before = pw_fleet_find(pw_ingest_fleet(api->ing), host);
    uint64_t was_np = before ? pw_host_limit(before, PW_POOL_NONPAGED) : 0;
    uint64_t was_pg = before ? pw_host_limit(before, PW_POOL_PAGED) : 0;
    r = pw_ingest_import(api->ing, host, pa.width, boot_id, pa.ss, pa.n, &ir, &d);
    /* What the operator said about the host, kept with it (a restart keeps it too). */
    if (r == 0 && (lo.os != NULL || np.bytes || pg.bytes))
        r = pw_ingest_import_meta(api->ing, host, lo.os, &np, &pg, &d);
    size_t n_screens = pa.n, pa_n = pa.n;
    if (r == PW_EEXIST && ir.held > 0) {
        /* another capture of the host in this one's time: said with both, nothing stored */
        char a[32], b[32], c[32], e[32];
        parsed_close(&pa);
        r = pw_api_error(
            resp, 409, "EEXIST",
            "host '%.80s' holds %zu screen%s of another capture from %s to %s; this "
            "one's %zu new screen%s run %s to %s and would interleave with them: "
            "nothing stored (give a start after %s, or another host name)",
            host, ir.held, ir.held == 1 ? "" : "s", utc_text(ir.held_first, a, sizeof(a)),
            utc_text(ir.held_last, b, sizeof(b)), ir.fresh, ir.fresh == 1 ? "" : "s",
            utc_text(ir.fresh_first, c, sizeof(c)), utc_text(ir.fresh_last, e, sizeof(e)), b);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    if (r == PW_EEXIST) {
        parsed_close(&pa);
        r = pw_api_error(resp, 409, "EEXIST", "%s", d.msg);
        pw__api_query_free(&q); /* `host` points into q */
        return r;
    }
    if (r < 0) {
        parsed_close(&pa);
        pw__api_query_free(&q);
        return pw_api_error(resp, r == PW_EINVAL ? 400 : 500, pw_err_name(r), "import: %s",
                            d.msg[0] ? d.msg : pw_strerror(r));
    }
    /* nothing new: the capture's last screen, where the screens of a next file follow */
    uint64_t rows = ir.rows, last = ir.screens ? ir.last_ts : end;
    /* the pools of the capture's last stored screen, beside the limits (a CLI hint when a pool
     * is far above its limit: the rule may not fit the host) */
    uint64_t last_np = pa.n ? pa.ss[pa.n - 1].totals.nonpaged_bytes : 0;
    uint64_t last_pg = pa.n ? pa.ss[pa.n - 1].totals.paged_bytes : 0;
    json_t *o = json_pack("{s:o,s:s,s:i,s:o,s:o,s:o,s:o}", "host", pw__api_jstr(host), "format",
                          pa.format, "screens", (int)n_screens, "rows", pw__api_ju64(rows),
                          "first_ts_ms", pw__api_ju64(first), "last_ts_ms", pw__api_ju64(last),
                          "cut_line", pa.cut_line ? json_integer(pa.cut_line) : json_null());
    if (!linux_series) /* a last screen cut short, left out (null: none) */
        json_object_set_new(
            o, "partial_last_screen",
            pa.partial_line ? json_pack("{s:I,s:I,s:I,s:b}", "line", (json_int_t)pa.partial_line,
                                        "rows", (json_int_t)pa.partial_rows, "rows_before",
                                        (json_int_t)pa.partial_rows_before, "dropped", 1)
                            : json_null());
    if (!linux_series) {
        /* rows that could not be read, and the screens they made incomplete, left out: said,
         * never a silent hole */
        json_object_set(o, "unreadable_rows", pa.unreadable_rows);
        json_object_set_new(o, "unreadable_rows_total",
                            json_integer((json_int_t)pa.unreadable_total));
        json_object_set(o, "screens_left_out", pa.screens_left_out);
    }
    if (linux_series) {
        /* lines of the dumps that were not rows (prompts, noise): said, not hidden */
        json_object_set_new(o, "skipped_lines", json_integer((json_int_t)pa.skipped));
        json_object_set_new(o, "first_skipped_line",
                            pa.first_skipped ? json_integer(pa.first_skipped) : json_null());
    }
    /* poolmon: neighbouring screens whose allocs and frees fall for most tags */
    if (!linux_series)
        json_object_set_new(o, "counters_fall", pa.falls ? json_incref(pa.falls) : json_array());
    parsed_close(&pa);
    /* The limits the host has now (given here or earlier; null: unknown). */
    const pw_host_t *ih = pw_fleet_find(pw_ingest_fleet(api->ing), host);
    uint64_t hl_np = ih ? pw_host_limit(ih, PW_POOL_NONPAGED) : 0;
    uint64_t hl_pg = ih ? pw_host_limit(ih, PW_POOL_PAGED) : 0;
    /* screens this content's import had stored before: a capture is its content, so the same
     * file again (whatever its start time) stores nothing new; say so instead of "stored" */
    json_object_set_new(o, "screens_stored", json_integer((json_int_t)ir.screens));
    json_object_set_new(o, "screens_already_stored", json_integer((json_int_t)ir.already));
    /* screens without time stamps placed after those an earlier import of this capture stored
     * (its times, not start_ms) */
    json_object_set_new(o, "placed_after_earlier_import", json_boolean(placed_before));
    json_object_set_new(o, "nonpaged_limit_bytes", hl_np ? pw__api_ju64(hl_np) : json_null());
    json_object_set_new(o, "paged_limit_bytes", hl_pg ? pw__api_ju64(hl_pg) : json_null());
    json_object_set_new(o, "nonpaged_limit_detail",
                        pw__api_jstr(ih ? ih->nonpaged_limit_detail : ""));
    json_object_set_new(o, "paged_limit_detail", pw__api_jstr(ih ? ih->paged_limit_detail : ""));
    json_object_set_new(o, "last_nonpaged_bytes", pa_n ? pw__api_ju64(last_np) : json_null());
    json_object_set_new(o, "last_paged_bytes", pa_n ? pw__api_ju64(last_pg) : json_null());
    /* a host that existed before: its limits then (null: unknown), and whether they moved */
    json_object_set_new(o, "previous_nonpaged_limit_bytes",
                        was_np ? pw__api_ju64(was_np) : json_null());
    json_object_set_new(o, "previous_paged_limit_bytes",
                        was_pg ? pw__api_ju64(was_pg) : json_null());
    json_object_set_new(o, "limits_changed",
                        json_boolean(before != NULL && (was_np != hl_np || was_pg != hl_pg)));
    pw__api_query_free(&q);
    return pw__api_send_json(resp, 200, o);
}
