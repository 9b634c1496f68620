/* alert_file.c: the firing and pending alerts and the suspects' found times kept across
 * restarts (alert_file.h).
 *
 * A JSON array beside the store, written when an alert changes state or a suspect comes or
 * goes, and restored at start without a transition: receivers do not see the alerts fire a
 * second time, a pending alert fires when its `for` is over (not a whole `for` after the
 * restart), a suspect keeps the time it was found, and alerts resolve as usual when the
 * analysis no longer finds their condition. */
#include "alert_file.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#ifndef _WIN32
#include <unistd.h>
#else
#include <io.h>
#define access _access
#define F_OK   0
#endif

#define MOD             "analysis"
#define PATH_MAX_ALERTS 4096

static void save_alert_cb(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to != PW_ALERT_FIRING && cur->to != PW_ALERT_PENDING)
        return;
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:f}", "host", cur->key.host, "tag", cur->key.tag,
                          "pool", cur->key.pool, "severity", cur->key.severity, "since_ms",
                          (json_int_t)cur->active_since_ms, "value", cur->value);
    if (o != NULL && cur->to == PW_ALERT_PENDING)
        json_object_set_new(o, "state", json_string("pending"));
    json_array_append_new(arg, o);
}

/* Replaces `path` by `text` so that a crash leaves the old or the new file, and the new one
 * survives a power cut once this returns: write a temporary file, fsync it, rename it over
 * the old one, fsync the directory (libuv's synchronous fs calls, so this works on Windows
 * too, where the directory step is skipped). Returns 0 or a negative libuv code. */
static int replace_file(const char *path, const char *tmp, char *text)
{
    uv_fs_t req;
    int fd =
        uv_fs_open(NULL, &req, tmp, UV_FS_O_WRONLY | UV_FS_O_CREAT | UV_FS_O_TRUNC, 0600, NULL);
    uv_fs_req_cleanup(&req);
    if (fd < 0)
        return fd;
    size_t len = strlen(text), off = 0;
    int r = 0;
    while (r == 0 && off < len) {
        uv_buf_t b = uv_buf_init(text + off, (unsigned)(len - off));
        int n = uv_fs_write(NULL, &req, fd, &b, 1, -1, NULL);
        uv_fs_req_cleanup(&req);
        if (n < 0)
            r = n;
        else
            off += (size_t)n;
    }
    if (r == 0)
        r = uv_fs_fsync(NULL, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    uv_fs_close(NULL, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    if (r == 0)
        r = uv_fs_rename(NULL, &req, tmp, path, NULL);
    uv_fs_req_cleanup(&req);
    if (r != 0)
        return r;
#ifndef _WIN32
    char dir[PATH_MAX_ALERTS + 8];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    int dfd = uv_fs_open(NULL, &req, dir, UV_FS_O_RDONLY, 0, NULL);
    uv_fs_req_cleanup(&req);
    if (dfd >= 0) {
        uv_fs_fsync(NULL, &req, dfd, NULL); /* best effort: the rename is done */
        uv_fs_req_cleanup(&req);
        uv_fs_close(NULL, &req, dfd, NULL);
        uv_fs_req_cleanup(&req);
    }
#endif
    return 0;
}

/* Writes the JSON value `a` to `path` (replace_file); logs a failure. Returns 0 or a negative
 * libuv code. */
static int save_json(const char *path, json_t *a)
{
    size_t n = strlen(path) + 8;
    char *tmp = pw_malloc(n);
    char *text = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;
    int r = UV_ENOMEM;
    if (tmp != NULL && text != NULL) {
        snprintf(tmp, n, "%s.tmp", path);
        r = replace_file(path, tmp, text);
    }
    if (r != 0)
        PW_LOG_WARN(MOD, "cannot write %s: %s", path, uv_strerror(r));
    free(text); /* jansson's allocator is malloc */
    pw_free(tmp);
    return r;
}

int pw_alert_save_found(const pw_alert_set_t *set, const pw_alert_found_t *f, size_t nf,
                        const char *path)
{
    json_t *a = json_array();
    if (a == NULL)
        return UV_ENOMEM;
    pw_alert_foreach(set, save_alert_cb, a);
    for (size_t i = 0; i < nf; i++)
        json_array_append_new(a,
                              json_pack("{s:s,s:s,s:s,s:I}", "host", f[i].host, "tag", f[i].tag,
                                        "pool", f[i].pool, "found_ms", (json_int_t)f[i].found_ms));
    int r = save_json(path, a);
    json_decref(a);
    return r;
}

/* ---- kept suspects ------------------------------------------------------------------------ */

static int label(const char *v, char *out, size_t cap)
{
    if (strlen(v) >= cap)
        return -1;
    snprintf(out, cap, "%s", v);
    return 0;
}

/* Counters are uint64 and JSON integers int64: stored as their two's complement. */
#define JU(v) json_integer((json_int_t)(v))

static json_t *hex_json(const uint8_t *b, size_t n)
{
    char h[2 * PW_TAG_MAX + 1];
    for (size_t i = 0; i < n && i < PW_TAG_MAX; i++)
        snprintf(h + 2 * i, 3, "%02x", b[i]);
    h[2 * (n < PW_TAG_MAX ? n : PW_TAG_MAX)] = '\0';
    return json_string(h);
}

static int unhex(const char *s, uint8_t *out, size_t cap, size_t *n)
{
    size_t len = strlen(s);
    if (len % 2 != 0 || len / 2 > cap)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    *n = len / 2;
    return 0;
}

static json_t *ring_json(const pw_detect_ring_t *r)
{
    json_t *pts = json_array();
    for (size_t i = 0; pts != NULL && i < r->n; i++) {
        const pw_detect_point_t *p = &r->p[i];
        json_array_append_new(pts, json_pack("[o,o,o,o,o,o]", JU(p->ts_ms), JU(p->allocs),
                                             JU(p->frees), JU(p->diff), JU(p->bytes), JU(p->boot)));
    }
    return json_pack("{s:I,s:I,s:I,s:o}", "n_spread", (json_int_t)r->n_spread, "stride_ms",
                     (json_int_t)r->stride_ms, "dirty", (json_int_t)r->dirty, "points", pts);
}

static json_t *big_pool_json(const pw_bigpool_snap_t *b)
{
    json_t *hist = json_array();
    for (size_t i = 0; hist != NULL && i < b->n_hist; i++)
        json_array_append_new(hist, JU(b->size_hist[i]));
    return json_pack(
        "{s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "tag", hex_json(b->tag, 4), "taken_ms",
        JU(b->taken_ms), "received_ms", JU(b->received_ms), "automatic", b->automatic, "scanned",
        JU(b->scanned), "count", JU(b->count), "bytes", JU(b->bytes), "nonpaged_count",
        JU(b->nonpaged_count), "nonpaged_bytes", JU(b->nonpaged_bytes), "largest_bytes",
        JU(b->largest_bytes), "smallest_bytes", JU(b->smallest_bytes), "size_hist", hist);
}

/* A double as JSON: a number, or "inf", "-inf", "nan" (a verdict's snr is +inf when the
 * scatter is 0; JSON has no such number). */
static json_t *jd(double v)
{
    if (isfinite(v))
        return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static int jd_get(const json_t *o, const char *key, double *out)
{
    const json_t *v = json_object_get(o, key);
    const char *s = json_string_value(v);
    if (json_is_number(v))
        *out = json_number_value(v);
    else if (s != NULL && strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (s != NULL && strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else if (s != NULL && strcmp(s, "nan") == 0)
        *out = NAN;
    else
        return -1;
    return 0;
}

/* A named field `k` (a double, an integer) of object `o` out (PUT) and back (GET: a function
 * returning -1 for a missing or mistyped one), for the field lists below. */
#define PUT_D(k, v) json_object_set_new(o, #k, jd(v));
#define PUT_I(k, v) json_object_set_new(o, #k, JU(v));
#define GET_D(k, v)                                                                                \
    if (jd_get(o, #k, &(v)) != 0)                                                                  \
        return -1;
#define GET_I(k, v)                                                                                \
    {                                                                                              \
        const json_t *j = json_object_get(o, #k);                                                  \
        if (!json_is_integer(j))                                                                   \
            return -1;                                                                             \
        (v) = (__typeof__(v))json_integer_value(j);                                                \
    }

/* The published suspect's own fields (host, tag and pool are the entry's). */
#define SUSPECT_DOUBLES(X)                                                                         \
    X(finding_score, s->finding_score)                                                             \
    X(share, s->share)                                                                             \
    X(confidence, s->d.confidence)                                                                 \
    X(score, s->d.score)                                                                           \
    X(rate_bytes_per_h, s->d.rate_bytes_per_h)                                                     \
    X(rate_low_bytes_per_h, s->d.rate_low_bytes_per_h)                                             \
    X(rate_high_bytes_per_h, s->d.rate_high_bytes_per_h)                                           \
    X(diff_rate_per_h, s->d.diff_rate_per_h)                                                       \
    X(mk_p, s->d.mk_p)                                                                             \
    X(snr, s->d.snr)                                                                               \
    X(saturation, s->d.saturation)                                                                 \
    X(fall, s->d.fall)                                                                             \
    X(drift_t, s->d.drift_t)                                                                       \
    X(per_alloc_bytes, s->d.per_alloc_bytes)
#define SUSPECT_INTS(X)                                                                            \
    X(head, s->head)                                                                               \
    X(group_n, s->group_n)                                                                         \
    X(group, s->group)                                                                             \
    X(found_ms, s->found_ms)                                                                       \
    X(level, s->level)                                                                             \
    X(eta_ms, s->eta_ms)                                                                           \
    X(verdict, s->d.verdict)                                                                       \
    X(flat_ms, s->d.flat_ms)                                                                       \
    X(since_ms, s->d.since_ms)                                                                     \
    X(span_ms, s->d.span_ms)                                                                       \
    X(points, s->d.points)                                                                         \
    X(segments, s->d.segments)                                                                     \
    X(steps, s->d.steps)                                                                           \
    X(steps_up, s->d.steps_up)                                                                     \
    X(steps_moved, s->d.steps_moved)                                                               \
    X(rise_ms, s->d.rise_ms)                                                                       \
    X(growth_bytes, s->d.growth_bytes)                                                             \
    X(growth_diff, s->d.growth_diff)                                                               \
    X(growth_allocs, s->d.growth_allocs)                                                           \
    X(growth_frees, s->d.growth_frees)                                                             \
    X(first_bytes, s->d.first_bytes)                                                               \
    X(last_bytes, s->d.last_bytes)

static json_t *suspect_json(const pw_suspect_t *s)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    SUSPECT_DOUBLES(PUT_D)
    SUSPECT_INTS(PUT_I)
    json_object_set_new(o, "with", json_string(s->with));
    json_object_set_new(o, "evidence", json_string(s->d.evidence));
    return o;
}

/* The entry's suspect into *s (host, tag and pool from k). Returns 0 or -1 when malformed. */
static int load_suspect(const json_t *o, const pw_alert_kept_t *k, pw_suspect_t *s)
{
    memset(s, 0, sizeof(*s));
    const char *with = json_string_value(json_object_get(o, "with"));
    const char *ev = json_string_value(json_object_get(o, "evidence"));
    if (!json_is_object(o) || with == NULL || ev == NULL || strlen(with) >= sizeof(s->with) ||
        strlen(ev) >= sizeof(s->d.evidence))
        return -1;
    SUSPECT_DOUBLES(GET_D)
    SUSPECT_INTS(GET_I)
    if ((unsigned)s->d.verdict > PW_DETECT_LEAK)
        return -1;
    snprintf(s->with, sizeof(s->with), "%s", with);
    snprintf(s->d.evidence, sizeof(s->d.evidence), "%s", ev);
    snprintf(s->host, sizeof(s->host), "%s", k->host);
    memcpy(s->tag, k->tag, k->tag_len);
    s->tag_len = k->tag_len;
    s->pool = k->pool;
    return 0;
}

#define PRESSURE_DOUBLES(X)                                                                        \
    X(ratio, p->ratio)                                                                             \
    X(slope_bytes_per_h, p->slope_bytes_per_h)                                                     \
    X(slope_low_bytes_per_h, p->slope_low_bytes_per_h)                                             \
    X(slope_high_bytes_per_h, p->slope_high_bytes_per_h)                                           \
    X(mk_p, p->mk_p)
#define PRESSURE_INTS(X)                                                                           \
    X(used_bytes, p->used_bytes)                                                                   \
    X(limit_bytes, p->limit_bytes)                                                                 \
    X(level, p->level)                                                                             \
    X(n_window, p->n_window)                                                                       \
    X(trend_up, p->trend_up)                                                                       \
    X(eta_ms, p->eta_ms)                                                                           \
    X(eta_soon_ms, p->eta_soon_ms)                                                                 \
    X(eta_late_ms, p->eta_late_ms)                                                                 \
    X(eta_beyond, p->eta_beyond)

static json_t *pressure_json(const pw_pressure_t *p)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    PRESSURE_DOUBLES(PUT_D)
    PRESSURE_INTS(PUT_I)
    return o;
}

static int load_pressure(const json_t *o, pw_pressure_t *p)
{
    memset(p, 0, sizeof(*p));
    if (!json_is_object(o))
        return -1;
    PRESSURE_DOUBLES(GET_D)
    PRESSURE_INTS(GET_I)
    return (unsigned)p->level > PW_LEVEL_UNKNOWN ? -1 : 0;
}

/* How a pool's ETA was reckoned (pw_pool_how_t); optional in the file (older files: none). */
static json_t *how_json(const pw_pool_how_t *h)
{
    return json_pack("{s:i,s:f,s:I,s:I,s:f,s:I}", "method", (int)h->method, "rate",
                     h->rate_bytes_per_h, "window_ms", (json_int_t)h->window_ms, "grew_ms",
                     (json_int_t)h->grew_ms, "day_bytes", h->day_bytes, "since_boot_ms",
                     (json_int_t)h->since_boot_ms);
}

static void load_how(json_t *o, pw_pool_how_t *h)
{
    int m = 0;
    json_int_t w = 0, g = 0, b = 0;
    memset(h, 0, sizeof(*h));
    if (!json_is_object(o) ||
        json_unpack(o, "{s:i,s:F,s:I,s:I,s:F,s:I}", "method", &m, "rate", &h->rate_bytes_per_h,
                    "window_ms", &w, "grew_ms", &g, "day_bytes", &h->day_bytes, "since_boot_ms",
                    &b) != 0 ||
        m < 0 || m > PW_ETA_METHOD_DAY) {
        memset(h, 0, sizeof(*h));
        return;
    }
    h->method = (pw_eta_method_t)m;
    h->window_ms = (int64_t)w;
    h->grew_ms = (int64_t)g;
    h->since_boot_ms = (int64_t)b;
}

static json_t *kept_host_json(const pw_alert_kept_host_t *k)
{
    const pw_analysis_host_t *a = &k->pub;
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "host", k->host, "judged_ts",
                     JU(a->judged_ts), "rows_judged", JU(a->rows_judged), "np_trend_ms",
                     JU(a->np_trend_ms), "pg_trend_ms", JU(a->pg_trend_ms), "np",
                     pressure_json(&a->np), "pg", pressure_json(&a->pg), "np_how",
                     how_json(&a->np_how), "pg_how", how_json(&a->pg_how));
}

static int load_kept_host(json_t *o, pw_alert_kept_host_t *k)
{
    memset(k, 0, sizeof(*k));
    const char *host;
    json_int_t judged, rows, npw, pgw;
    json_t *np, *pg;
    if (json_unpack(o, "{s:s,s:I,s:I,s:I,s:I,s:o,s:o}", "host", &host, "judged_ts", &judged,
                    "rows_judged", &rows, "np_trend_ms", &npw, "pg_trend_ms", &pgw, "np", &np, "pg",
                    &pg) != 0 ||
        label(host, k->host, sizeof(k->host)) || load_pressure(np, &k->pub.np) != 0 ||
        load_pressure(pg, &k->pub.pg) != 0 || rows < 0 || rows > UINT32_MAX)
        return -1;
    k->pub.have_pressure = 1;
    k->pub.judged_ts = (int64_t)judged;
    k->pub.rows_judged = (uint32_t)rows;
    k->pub.np_trend_ms = (int64_t)npw;
    k->pub.pg_trend_ms = (int64_t)pgw;
    load_how(json_object_get(o, "np_how"), &k->pub.np_how);
    load_how(json_object_get(o, "pg_how"), &k->pub.pg_how);
    return 0;
}

/* Each entry of array `a` of `path` read by `one` into a new array of `size`-byte elements
 * (*out, owned by the caller; NULL when none); an entry `one` refuses is logged as not `what`
 * and skipped. Returns the count. */
static size_t load_entries(const char *path, const json_t *a, size_t size,
                           int (*one)(json_t *, void *), const char *what, void **out)
{
    size_t m = json_is_array(a) ? json_array_size(a) : 0, n = 0;
    char *v = m ? pw_malloc(m * size) : NULL;
    *out = NULL;
    if (m > 0 && v == NULL)
        PW_LOG_WARN(MOD, "%s: out of memory: %ss not restored", path, what);
    for (size_t i = 0; v != NULL && i < m; i++) {
        if (one(json_array_get(a, i), v + n * size) != 0) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a %s: skipped", path, i, what);
            continue;
        }
        n++;
    }
    if (n == 0)
        pw_free(v);
    else
        *out = v;
    return n;
}

static int load_kept_host_v(json_t *o, void *k)
{
    return load_kept_host(o, k);
}

size_t pw_alert_load_kept_hosts(const char *path, pw_alert_kept_host_t **v)
{
    *v = NULL;
    json_t *doc = json_load_file(path, 0, NULL);
    if (doc == NULL) /* (a file that does not parse is said by pw_alert_load_kept) */
        return 0;
    void *out;
    size_t n = load_entries(path, json_object_get(doc, "hosts"), sizeof(**v), load_kept_host_v,
                            "kept host pressure", &out);
    json_decref(doc);
    *v = out;
    return n;
}

int pw_alert_save_kept(const char *path, const pw_alert_kept_t *v, size_t n,
                       const pw_alert_kept_host_t *hv, size_t nh)
{
    json_t *ha = json_array();
    for (size_t i = 0; ha != NULL && i < nh; i++)
        json_array_append_new(ha, kept_host_json(&hv[i]));
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++) {
        json_t *o = json_pack("{s:s,s:o,s:s,s:o}", "host", v[i].host, "tag",
                              hex_json(v[i].tag, v[i].tag_len), "pool", pw_pool_name(v[i].pool),
                              "ring", ring_json(&v[i].ring));
        if (o != NULL && v[i].has_big_pool)
            json_object_set_new(o, "big_pool", big_pool_json(&v[i].big_pool));
        if (o != NULL && v[i].has_suspect) {
            json_object_set_new(o, "rank", json_integer(v[i].rank));
            json_object_set_new(o, "suspect", suspect_json(&v[i].suspect));
        }
        json_array_append_new(a, o);
    }
    json_t *doc =
        a != NULL && ha != NULL ? json_pack("{s:o,s:o}", "hosts", ha, "suspects", a) : NULL;
    int r = save_json(path, doc);
    json_decref(doc);
    return r;
}

static uint64_t ju(const json_t *v)
{
    return (uint64_t)json_integer_value(v);
}

/* One kept ring: points non-decreasing in time, at most PW_DETECT_RING, n_spread within. */
static int load_ring(json_t *o, pw_detect_ring_t *r)
{
    json_int_t n_spread, stride, dirty;
    json_t *pts;
    if (json_unpack(o, "{s:I,s:I,s:I,s:o}", "n_spread", &n_spread, "stride_ms", &stride, "dirty",
                    &dirty, "points", &pts) != 0 ||
        !json_is_array(pts) || json_array_size(pts) > PW_DETECT_RING || n_spread < 0 ||
        (size_t)n_spread > json_array_size(pts) || stride < 0 || dirty < 0 || dirty > UINT16_MAX)
        return -1;
    pw_detect_ring_init(r);
    size_t i;
    json_t *p;
    json_array_foreach(pts, i, p)
    {
        if (!json_is_array(p) || json_array_size(p) != 6)
            return -1;
        for (size_t k = 0; k < 6; k++)
            if (!json_is_integer(json_array_get(p, k)))
                return -1;
        pw_detect_point_t *x = &r->p[i];
        x->ts_ms = (int64_t)ju(json_array_get(p, 0));
        x->allocs = ju(json_array_get(p, 1));
        x->frees = ju(json_array_get(p, 2));
        x->diff = ju(json_array_get(p, 3));
        x->bytes = ju(json_array_get(p, 4));
        x->boot = (uint32_t)ju(json_array_get(p, 5));
        if (i > 0 && x->ts_ms < r->p[i - 1].ts_ms)
            return -1;
    }
    r->n = (uint16_t)json_array_size(pts);
    r->n_spread = (uint16_t)n_spread;
    r->stride_ms = stride;
    r->dirty = (uint16_t)dirty;
    return 0;
}

static int load_big_pool(json_t *o, pw_bigpool_snap_t *b)
{
    memset(b, 0, sizeof(*b));
    const char *tag;
    json_t *hist;
    int automatic;
    json_int_t f[10];
    size_t tl;
    if (json_unpack(o, "{s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "tag", &tag, "taken_ms",
                    &f[0], "received_ms", &f[1], "automatic", &automatic, "scanned", &f[2], "count",
                    &f[3], "bytes", &f[4], "nonpaged_count", &f[5], "nonpaged_bytes", &f[6],
                    "largest_bytes", &f[7], "smallest_bytes", &f[8], "size_hist", &hist) != 0 ||
        unhex(tag, b->tag, sizeof(b->tag), &tl) != 0 || tl != 4 || !json_is_array(hist) ||
        json_array_size(hist) > PW_BIGPOOL_SIZE_HIST)
        return -1;
    b->taken_ms = (uint64_t)f[0];
    b->received_ms = (uint64_t)f[1];
    b->automatic = automatic != 0;
    b->scanned = (uint64_t)f[2];
    b->count = (uint64_t)f[3];
    b->bytes = (uint64_t)f[4];
    b->nonpaged_count = (uint64_t)f[5];
    b->nonpaged_bytes = (uint64_t)f[6];
    b->largest_bytes = (uint64_t)f[7];
    b->smallest_bytes = (uint64_t)f[8];
    b->n_hist = json_array_size(hist);
    for (size_t i = 0; i < b->n_hist; i++)
        b->size_hist[i] = ju(json_array_get(hist, i));
    return 0;
}

static int load_kept(json_t *o, pw_alert_kept_t *k)
{
    memset(k, 0, sizeof(*k));
    const char *host, *tag, *pool;
    json_t *ring, *bp = NULL, *sus = NULL;
    json_int_t rank = 0;
    size_t tl;
    if (json_unpack(o, "{s:s,s:s,s:s,s:o,s?o,s?o,s?I}", "host", &host, "tag", &tag, "pool", &pool,
                    "ring", &ring, "big_pool", &bp, "suspect", &sus, "rank", &rank) != 0 ||
        rank < 0 || rank > UINT32_MAX || label(host, k->host, sizeof(k->host)) ||
        unhex(tag, k->tag, sizeof(k->tag), &tl) != 0 || tl == 0 || load_ring(ring, &k->ring) != 0)
        return -1;
    k->tag_len = (uint8_t)tl;
    int p = 0;
    while (p < PW_POOL__COUNT && strcmp(pw_pool_name(p), pool) != 0)
        p++;
    if (p == PW_POOL__COUNT)
        return -1;
    k->pool = (uint8_t)p;
    if (bp != NULL) {
        if (load_big_pool(bp, &k->big_pool) != 0)
            return -1;
        k->has_big_pool = 1;
    }
    if (sus != NULL) {
        if (load_suspect(sus, k, &k->suspect) != 0)
            return -1;
        k->has_suspect = 1;
        k->rank = (uint32_t)rank;
    }
    return 0;
}

int pw_alert_kept_cmp(const void *a, const void *b)
{
    const pw_alert_kept_t *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c != 0)
        return c;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    size_t n = x->tag_len < y->tag_len ? x->tag_len : y->tag_len;
    c = memcmp(x->tag, y->tag, n);
    if (c != 0)
        return c;
    return x->tag_len == y->tag_len ? 0 : x->tag_len < y->tag_len ? -1 : 1;
}

static int load_kept_v(json_t *o, void *k)
{
    return load_kept(o, k);
}

size_t pw_alert_load_kept(const char *path, pw_alert_kept_t **v)
{
    *v = NULL;
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    if (doc == NULL) {
        if (errno != ENOENT && access(path, F_OK) == 0)
            PW_LOG_WARN(MOD, "%s:%d: suspects' rings not restored: %s", path, err.line, err.text);
        return 0;
    }
    json_t *a = json_object_get(doc, "suspects");
    if (!json_is_array(a))
        PW_LOG_WARN(MOD, "%s: no \"suspects\" array: nothing restored", path);
    void *outv;
    size_t n = load_entries(path, a, sizeof(pw_alert_kept_t), load_kept_v, "kept suspect", &outv);
    pw_alert_kept_t *out = outv;
    json_decref(doc);
    if (n == 0)
        return 0;
    qsort(out, n, sizeof(*out), pw_alert_kept_cmp);
    PW_LOG_INFO(MOD, "%zu suspects' rings restored from %s", n, path);
    *v = out;
    return n;
}

int pw_alert_save(const pw_alert_set_t *set, const char *path)
{
    return pw_alert_save_found(set, NULL, 0, path);
}

/* One found-time entry into f[*n] (grown). Returns 0, -1 when malformed, PW_ENOMEM. */
static int load_found(json_t *o, pw_alert_found_t **f, size_t *n, size_t *cap)
{
    const char *host, *tag, *pool;
    json_int_t ms;
    pw_alert_found_t x;
    memset(&x, 0, sizeof(x));
    if (json_unpack(o, "{s:s,s:s,s:s,s:I}", "host", &host, "tag", &tag, "pool", &pool, "found_ms",
                    &ms) != 0 ||
        label(host, x.host, sizeof(x.host)) || label(tag, x.tag, sizeof(x.tag)) ||
        label(pool, x.pool, sizeof(x.pool)) || ms <= 0)
        return -1;
    x.found_ms = (int64_t)ms;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        pw_alert_found_t *p = pw_realloc(*f, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        *f = p;
        *cap = nc;
    }
    (*f)[(*n)++] = x;
    return 0;
}

size_t pw_alert_load_found(pw_alert_set_t *set, const char *path, pw_alert_found_t **f, size_t *nf)
{
    size_t fcap = 0;
    if (f != NULL) {
        *f = NULL;
        *nf = 0;
    }
    json_error_t err;
    json_t *a = json_load_file(path, 0, &err);
    if (a == NULL) {
        if (errno != ENOENT && access(path, F_OK) == 0)
            PW_LOG_WARN(MOD, "%s:%d: alerts not restored: %s", path, err.line, err.text);
        return 0;
    }
    size_t i, n = 0, pending = 0;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        if (json_object_get(o, "found_ms") != NULL) {
            if (f != NULL && load_found(o, f, nf, &fcap) == -1)
                PW_LOG_WARN(MOD, "%s: entry %zu is not a suspect's found time: skipped", path, i);
            continue;
        }
        pw_alert_key_t k;
        memset(&k, 0, sizeof(k));
        const char *host, *tag, *pool, *sev, *st = "firing";
        json_int_t since;
        double value;
        if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:I,s:F,s?s}", "host", &host, "tag", &tag, "pool",
                        &pool, "severity", &sev, "since_ms", &since, "value", &value, "state",
                        &st) != 0 ||
            label(host, k.host, sizeof(k.host)) || label(tag, k.tag, sizeof(k.tag)) ||
            label(pool, k.pool, sizeof(k.pool)) || label(sev, k.severity, sizeof(k.severity)) ||
            (strcmp(st, "firing") != 0 && strcmp(st, "pending") != 0)) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a firing or pending alert: skipped", path, i);
            continue;
        }
        int pend = strcmp(st, "pending") == 0;
        if (pw_alert_restore_state(set, &k, pend ? PW_ALERT_PENDING : PW_ALERT_FIRING,
                                   (int64_t)since, value) == 0) {
            n++;
            pending += pend;
        }
    }
    json_decref(a);
    if (n > 0)
        PW_LOG_INFO(MOD, "%zu alerts restored from %s (%zu firing, %zu pending)", n, path,
                    n - pending, pending);
    return n;
}

size_t pw_alert_load(pw_alert_set_t *set, const char *path)
{
    return pw_alert_load_found(set, path, NULL, NULL);
}
