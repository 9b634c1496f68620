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

int pw_alert_save_kept(const char *path, const pw_alert_kept_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++) {
        json_t *o = json_pack("{s:s,s:o,s:s,s:o}", "host", v[i].host, "tag",
                              hex_json(v[i].tag, v[i].tag_len), "pool", pw_pool_name(v[i].pool),
                              "ring", ring_json(&v[i].ring));
        if (o != NULL && v[i].has_big_pool)
            json_object_set_new(o, "big_pool", big_pool_json(&v[i].big_pool));
        json_array_append_new(a, o);
    }
    json_t *doc = a != NULL ? json_pack("{s:o}", "suspects", a) : NULL;
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
    json_t *ring, *bp = NULL;
    size_t tl;
    if (json_unpack(o, "{s:s,s:s,s:s,s:o,s?o}", "host", &host, "tag", &tag, "pool", &pool, "ring",
                    &ring, "big_pool", &bp) != 0 ||
        label(host, k->host, sizeof(k->host)) || unhex(tag, k->tag, sizeof(k->tag), &tl) != 0 ||
        tl == 0 || load_ring(ring, &k->ring) != 0)
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
    size_t m = json_is_array(a) ? json_array_size(a) : 0, n = 0;
    if (!json_is_array(a))
        PW_LOG_WARN(MOD, "%s: no \"suspects\" array: nothing restored", path);
    pw_alert_kept_t *out = m ? pw_malloc(m * sizeof(*out)) : NULL;
    if (m > 0 && out == NULL)
        PW_LOG_WARN(MOD, "%s: out of memory: suspects' rings not restored", path);
    for (size_t i = 0; out != NULL && i < m; i++) {
        if (load_kept(json_array_get(a, i), &out[n]) != 0) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a kept suspect: skipped", path, i);
            continue;
        }
        n++;
    }
    json_decref(doc);
    if (n == 0) {
        pw_free(out);
        return 0;
    }
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
