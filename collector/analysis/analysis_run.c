/* analysis_run.c: runs the statistics of analysis.c over the fleet.
 *
 * Every pass (a timer, 30 s):
 *  - pressure: nonpaged and paged used / limit per host with a Theil-Sen trend over the last
 *    2 h of the host's totals (ring in fleet.h) and a time to exhaustion; alerts
 *    "NonpagedPoolPressure"/"PagedPoolPressure" at the warn and critical ratios;
 *  - leak suspects: a cheap screen first (rows that grew by at least 64 KiB since the agent
 *    instance started, the 16 largest growths per host), then pw_leak_eval on each
 *    candidate's raw series of the last hour from the store; alert "PoolTagLeak". Only the
 *    change points of a series are judged (the first point of each run of equal values, and
 *    the last point; short pass only): rows that change every few samples are piecewise constant,
 * and Mann-Kendall on the repeated values finds "trends" in pure noise (bench_detect: 75 false
 *    suspects a day on one host without this, 0 with it). Every LONG_EVERY passes a long
 *    pass judges the last 24 h at 15-min steps (slow and intermittent leaks: 1 MB/day, a leak
 *    that grows only in office hours, steps every 4 h);
 *  - screen comparison: a host without a live stream (an imported or replayed poolmon
 *    capture) whose rows have fewer screens than pw_leak_eval's minimum (12) is judged by
 *    pw_screen_compare on each row of its last screen: every stored screen, first against last
 *    (Diff and Bytes grew, never fell). Such suspects say method COMPARE and the number of
 *    screens; they raise no alert (old screens, weaker evidence than a trend). A host's result
 *    is kept until its last screen changes (a new import), so the store is read once per import;
 *  - alerts out: transitions go to the alert callback (the wiring hands them to the notifier:
 *    webhook, Alertmanager) when set; firing alerts are resent every RESEND_PASSES passes.
 * Memory: the screen keeps one baseline row (24 bytes + the tag bytes) per row per host.
 */
#include "analysis_run.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD             "analysis"
#define PASS_MS         30000
#define CANDIDATES      16
#define MIN_GROWTH      (64u << 10)
#define LEAK_WINDOW_MS  (60ull * 60 * 1000)
#define LONG_WINDOW_MS  (24ull * 60 * 60 * 1000)
#define LONG_STEP_MS    (15ull * 60 * 1000)
#define LONG_EVERY      10  /* passes between long passes (5 min) */
#define LONG_HOST_MAX   128 /* host points given to the long pass (Theil-Sen is O(n^2)) */
#define RESEND_PASSES   2   /* Prometheus resends firing alerts every minute */
#define PATH_MAX_ALERTS 4096
#define HIST_LOAD_MS    (3ull * 60 * 60 * 1000) /* ring points read back after a restart */

/* Screen-comparison result of one host without a live stream, kept until its last screen
 * changes. */
typedef struct {
    char host[256];
    uint64_t seen_ms, snap_ts, snap_seq; /* the host's state when judged */
    size_t snap_n;
    int valid;
    pw_suspect_t *s; /* owned, n used */
    size_t n, cap;
} cmp_cache_t;

/* The leak screen's baseline of a host: rows sorted by hash, equal hashes next to each other;
 * 24 bytes a row, the tag bytes back to back in `tags` (a full PW_TAG_MAX copy per row made the
 * baseline 160 KB of a 2,000-row host). */
typedef struct {
    uint64_t hash;  /* of (pool, tag bytes): base_hash */
    uint64_t bytes; /* bytes outstanding at the baseline */
    uint32_t off;   /* tag bytes: tags + off */
    uint8_t tag_len;
    uint8_t pool;
} base_row_t;

/* The pass's state of one host, by the host's fleet index. */
typedef struct {
    pw_analysis_host_t pub;
    int judged;           /* pub is a pass's result */
    int restore_checked;  /* what a restart lost was read back (restore_host) */
    base_row_t *baseline; /* rows at the start of the agent instance, sorted */
    uint8_t *baseline_tags;
    size_t n_baseline;
} host_state_t;

typedef struct pw_analysis_run_s {
    uv_loop_t *loop; /* NULL: no timer */
    pw_ingest_t *ing;
    const pw_fleet_t *fleet;
    pw_store_t *store;
    pw_analysis_opts_t o;
    host_state_t *hs; /* by host index */
    size_t n_hs;
    uv_timer_t timer;
    pw_alert_set_t *alerts;
    pw_suspect_t *suspects; /* published: the last complete pass, sorted by score */
    size_t n_suspects, cap;
    pw_suspect_t *building; /* the pass in progress */
    size_t n_building, bcap;
    size_t cursor; /* next host of the pass in progress */
    int in_pass;
    uint64_t pass_start_ms; /* loop time when the pass began */
    pw_point_t *pts;
    pw_row_point_t *rpts;
    size_t pts_cap, rpts_cap;
    pw_store_series_t series;
    uint64_t passes;
    cmp_cache_t *cc; /* one per host judged by comparison */
    size_t n_cc, cc_cap;
    pw_screen_row_t *scr;
    size_t scr_cap;
    size_t restore_cursor; /* next host to restore from the store after a start */
    char *alerts_path;     /* firing alerts kept across restarts; NULL for a :memory: store */
    pw_sample_t table;     /* a live replay host's table, for compare_pass */
    int alerts_dirty;      /* an alert started or stopped firing since the last save */
} run_t;

/* The pass's state of host h, grown to the fleet's size as hosts appear; NULL on ENOMEM. */
static host_state_t *state_of(run_t *rn, const pw_host_t *h)
{
    if (h->index >= rn->n_hs) {
        size_t nn = rn->fleet->n > h->index ? rn->fleet->n : h->index + 1;
        host_state_t *p = pw_realloc(rn->hs, nn * sizeof(*p));
        if (p == NULL)
            return NULL;
        memset(p + rn->n_hs, 0, (nn - rn->n_hs) * sizeof(*p));
        rn->hs = p;
        rn->n_hs = nn;
    }
    return &rn->hs[h->index];
}

/* FNV-1a over the pool type and the tag bytes. */
static uint64_t base_hash(int pool, const uint8_t *tag, size_t len)
{
    uint64_t x = 14695981039346656037ull;
    x = (x ^ (uint8_t)pool) * 1099511628211ull;
    for (size_t i = 0; i < len; i++)
        x = (x ^ tag[i]) * 1099511628211ull;
    return x;
}

static int cmp_base(const void *a, const void *b)
{
    const base_row_t *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* Replaces h's baseline with `n` rows, row i being (tags[i], lens[i], pools[i], bytes[i]) as
 * `get` gives them. All or nothing: on ENOMEM the old baseline stays. */
typedef void (*base_get_fn)(const void *src, size_t i, const uint8_t **tag, size_t *len, int *pool,
                            uint64_t *bytes);

static int base_set(host_state_t *h, const void *src, size_t n, base_get_fn get)
{
    base_row_t *rows = pw_calloc(n ? n : 1, sizeof(*rows));
    size_t cap = 4 * n + 64, off = 0; /* Windows tags are 4 bytes; slab names grow it */
    uint8_t *tags = pw_malloc(cap);
    for (size_t i = 0; rows != NULL && tags != NULL && i < n; i++) {
        const uint8_t *t;
        size_t len;
        int pool;
        uint64_t bytes;
        get(src, i, &t, &len, &pool, &bytes);
        if (off + len > cap) {
            uint8_t *nt = pw_realloc(tags, cap * 2 + len);
            if (nt == NULL) {
                pw_free(tags);
                tags = NULL;
                break;
            }
            tags = nt;
            cap = cap * 2 + len;
        }
        memcpy(tags + off, t, len);
        rows[i] = (base_row_t){base_hash(pool, t, len), bytes, (uint32_t)off, (uint8_t)len,
                               (uint8_t)pool};
        off += len;
    }
    if (rows == NULL || tags == NULL) {
        pw_free(rows);
        pw_free(tags);
        return PW_ENOMEM;
    }
    qsort(rows, n, sizeof(*rows), cmp_base);
    pw_free(h->baseline);
    pw_free(h->baseline_tags);
    h->baseline = rows;
    h->baseline_tags = tags;
    h->n_baseline = n;
    return 0;
}

static void get_host_row(const void *src, size_t i, const uint8_t **tag, size_t *len, int *pool,
                         uint64_t *bytes)
{
    pw_host_row_t r;
    pw_host_row_plain(src, i, &r);
    *tag = r.tag;
    *len = r.tag_len;
    *pool = r.pool;
    *bytes = r.bytes;
}

static void get_entry(const void *src, size_t i, const uint8_t **tag, size_t *len, int *pool,
                      uint64_t *bytes)
{
    const pw_entry_t *en = &((const pw_sample_t *)src)->entries[i];
    *tag = en->tag;
    *len = en->tag_len;
    *pool = en->pool;
    *bytes = en->bytes;
}

/* ingest's observer: an applied sample. */
static void on_sample(void *arg, const pw_host_t *h)
{
    run_t *rn = arg;
    host_state_t *hs = state_of(rn, h);
    /* The baseline is the first table of an agent instance (or of the collector's run). */
    if (hs == NULL || hs->baseline != NULL || !pw_host_streaming(h))
        return;
    base_set(hs, h, pw_host_nrows(h), get_host_row); /* ENOMEM: tried again at the next sample */
}

static const base_row_t *base_find(const host_state_t *h, const uint8_t *tag, size_t len, int pool)
{
    if (h->baseline == NULL)
        return NULL;
    base_row_t key = {.hash = base_hash(pool, tag, len)};
    const base_row_t *hit = bsearch(&key, h->baseline, h->n_baseline, sizeof(key), cmp_base);
    if (hit == NULL)
        return NULL;
    /* Equal hashes are neighbours: walk back to the first, then forward. */
    while (hit > h->baseline && hit[-1].hash == key.hash)
        hit--;
    for (const base_row_t *end = h->baseline + h->n_baseline; hit < end && hit->hash == key.hash;
         hit++)
        if (hit->pool == pool && hit->tag_len == len &&
            memcmp(h->baseline_tags + hit->off, tag, len) == 0)
            return hit;
    return NULL;
}

static const char *alert_name(const pw_alert_key_t *k)
{
    if (k->tag[0] != '\0')
        return "PoolTagLeak";
    return strcmp(k->pool, "paged") == 0 ? "PagedPoolPressure" : "NonpagedPoolPressure";
}

static void notify(run_t *rn, const pw_alert_transition_t *tr, int resend)
{
    char sum[400], desc[160];
    if (tr->key.tag[0] != '\0') {
        snprintf(sum, sizeof(sum), "%s: pool tag %s (%s) keeps growing", tr->key.host, tr->key.tag,
                 tr->key.pool);
        snprintf(desc, sizeof(desc), "leak suspect (sustained growth of bytes and allocations)");
    } else {
        snprintf(sum, sizeof(sum), "%s: %s pool at %.1f %% of its limit", tr->key.host,
                 tr->key.pool, tr->value * 100.0);
        snprintf(desc, sizeof(desc), "used / limit = %.3f", tr->value);
    }
    rn->o.on_alert(rn->o.on_alert_arg, tr, alert_name(&tr->key), sum, desc, resend);
}

static void resend_firing(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to == PW_ALERT_FIRING)
        notify(arg, cur, 1);
}

static void alert(run_t *rn, const char *host, const char *tag, const char *pool,
                  const char *severity, double value, double threshold, double hyst, int64_t for_ms,
                  int64_t now_ms)
{
    pw_alert_key_t k;
    memset(&k, 0, sizeof(k));
    snprintf(k.host, sizeof(k.host), "%s", host);
    snprintf(k.tag, sizeof(k.tag), "%s", tag);
    snprintf(k.pool, sizeof(k.pool), "%s", pool);
    snprintf(k.severity, sizeof(k.severity), "%s", severity);
    pw_alert_rule_t rule = {threshold, hyst, for_ms, 15 * 60 * 1000};
    pw_alert_transition_t tr;
    int r = pw_alert_eval(rn->alerts, &rule, &k, value, now_ms, &tr);
    if (r > 0)
        PW_LOG_INFO(MOD, "alert %s%s%s %s %s: %s -> %s (value %.3f)", host, tag[0] ? " " : "", tag,
                    pool, severity, pw_alert_state_name(tr.from), pw_alert_state_name(tr.to),
                    value);
    if (r > 0 && rn->o.on_alert != NULL)
        notify(rn, &tr, 0);
    if (r > 0 && (tr.from == PW_ALERT_FIRING || tr.to == PW_ALERT_FIRING))
        rn->alerts_dirty = 1;
}

/* ---- firing alerts across restarts ----------------------------------------------------------
 * The firing alerts are kept in a JSON file beside the store (written when one starts or stops
 * firing, at the end of a pass; replaced atomically and fsync'ed), and restored at start without a
 * transition: receivers do not see them fire a second time, and they resolve as usual when the
 * analysis no longer finds their condition. */

static void save_firing_cb(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to != PW_ALERT_FIRING)
        return;
    json_array_append_new(arg, json_pack("{s:s,s:s,s:s,s:s,s:I,s:f}", "host", cur->key.host, "tag",
                                         cur->key.tag, "pool", cur->key.pool, "severity",
                                         cur->key.severity, "since_ms",
                                         (json_int_t)cur->active_since_ms, "value", cur->value));
}

/* Replaces `path` by `text` so that a crash leaves the old or the new file, and the new one
 * survives a power cut once this returns: write a temporary file, fsync it, rename it over
 * the old one, fsync the directory (libuv's synchronous fs calls, so this works on Windows
 * too, where the directory step is skipped). Returns 0 or a negative libuv code. */
static int replace_file(const char *path, const char *tmp, char *text)
{
    uv_fs_t req;
    int fd =
        uv_fs_open(NULL, &req, tmp, UV_FS_O_WRONLY | UV_FS_O_CREAT | UV_FS_O_TRUNC, 0644, NULL);
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

static void save_firing(run_t *rn)
{
    rn->alerts_dirty = 0;
    if (rn->alerts_path == NULL)
        return;
    json_t *a = json_array();
    if (a == NULL)
        return;
    pw_alert_foreach(rn->alerts, save_firing_cb, a);
    char tmp[PATH_MAX_ALERTS + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", rn->alerts_path);
    char *text = json_dumps(a, JSON_COMPACT);
    int r = text != NULL ? replace_file(rn->alerts_path, tmp, text) : UV_ENOMEM;
    if (r != 0)
        PW_LOG_WARN(MOD, "cannot write %s: %s", rn->alerts_path, uv_strerror(r));
    free(text); /* jansson's allocator is malloc */
    json_decref(a);
}

static void load_firing(run_t *rn)
{
    if (rn->alerts_path == NULL)
        return;
    json_error_t err;
    json_t *a = json_load_file(rn->alerts_path, 0, &err);
    if (a == NULL) {
        if (errno != ENOENT && access(rn->alerts_path, F_OK) == 0)
            PW_LOG_WARN(MOD, "%s:%d: firing alerts not restored: %s", rn->alerts_path, err.line,
                        err.text);
        return;
    }
    size_t i, n = 0;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        pw_alert_key_t k;
        memset(&k, 0, sizeof(k));
        const char *host, *tag, *pool, *sev;
        json_int_t since;
        double value;
        if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:I,s:F}", "host", &host, "tag", &tag, "pool", &pool,
                        "severity", &sev, "since_ms", &since, "value", &value) != 0 ||
            strlen(host) >= sizeof(k.host) || strlen(tag) >= sizeof(k.tag) ||
            strlen(pool) >= sizeof(k.pool) || strlen(sev) >= sizeof(k.severity)) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a firing alert: skipped", rn->alerts_path, i);
            continue;
        }
        snprintf(k.host, sizeof(k.host), "%s", host);
        snprintf(k.tag, sizeof(k.tag), "%s", tag);
        snprintf(k.pool, sizeof(k.pool), "%s", pool);
        snprintf(k.severity, sizeof(k.severity), "%s", sev);
        if (pw_alert_restore(rn->alerts, &k, (int64_t)since, value) == 0)
            n++;
    }
    json_decref(a);
    if (n > 0)
        PW_LOG_INFO(MOD, "%zu firing alerts restored from %s", n, rn->alerts_path);
}

static int grow_pts(run_t *rn, size_t n)
{
    if (n <= rn->pts_cap)
        return 0;
    pw_point_t *p = pw_realloc(rn->pts, n * sizeof(*p));
    if (p == NULL)
        return PW_ENOMEM;
    rn->pts = p;
    rn->pts_cap = n;
    return 0;
}

static void pressure_pass(run_t *rn, const pw_host_t *h, host_state_t *hs, int64_t now_ms)
{
    size_t hist_n = pw_host_hist_n(h);
    if (hist_n == 0 || grow_pts(rn, hist_n) != 0)
        return;
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    for (int pool = 0; pool < 2; pool++) {
        for (size_t i = 0; i < hist_n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            rn->pts[i].ts_ms = (int64_t)p->ts_ms;
            rn->pts[i].v = (double)(pool ? p->paged_bytes : p->nonpaged_bytes);
        }
        uint64_t limit = pool ? h->paged_limit_bytes : h->nonpaged_limit_bytes;
        pw_pressure_t *pr = pool ? &hs->pub.pg : &hs->pub.np;
        if (pw_pressure_eval(rn->pts, hist_n, limit, &o, pr) != 0) {
            /* No verdict is no ETA: a zeroed result read as "exhausted now" (eta 0). */
            memset(pr, 0, sizeof(*pr));
            pr->limit_bytes = limit;
            pr->level = PW_LEVEL_UNKNOWN;
            pr->eta_ms = pr->eta_soon_ms = pr->eta_late_ms = -1;
            PW_LOG_WARN(MOD, "%s: %s pressure not judged: its history is not usable", h->name,
                        pool ? "paged" : "nonpaged");
            continue;
        }
        const char *pn = pool ? "paged" : "nonpaged";
        if (limit == 0)
            continue;
        alert(rn, h->name, "", pn, "warning", pr->ratio, o.warn_ratio, 0.02, 5 * 60 * 1000, now_ms);
        alert(rn, h->name, "", pn, "critical", pr->ratio, o.critical_ratio, 0.02, 60 * 1000,
              now_ms);
    }
    hs->pub.have_pressure = 1;
}

typedef struct {
    size_t row;
    uint64_t growth;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    return x->growth > y->growth ? -1 : x->growth < y->growth;
}

/* Appends a zeroed suspect of (host, tag, pool) to *v (n used of cap). NULL when out of memory. */
static pw_suspect_t *suspect_new(pw_suspect_t **v, size_t *n, size_t *cap, const pw_host_t *h,
                                 const uint8_t *tag, size_t len, int pool)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        pw_suspect_t *p = pw_realloc(*v, nc * sizeof(*p));
        if (p == NULL)
            return NULL;
        *v = p;
        *cap = nc;
    }
    pw_suspect_t *s = &(*v)[(*n)++];
    memset(s, 0, sizeof(*s));
    snprintf(s->host, sizeof(s->host), "%s", h->name);
    memcpy(s->tag, tag, len);
    s->tag_len = (uint8_t)len;
    s->pool = (uint8_t)pool;
    return s;
}

static int add_suspect(run_t *rn, const pw_host_t *h, const uint8_t *tag, size_t len, int pool,
                       const pw_leak_t *lk)
{
    pw_suspect_t *s = suspect_new(&rn->building, &rn->n_building, &rn->bcap, h, tag, len, pool);
    if (s == NULL)
        return PW_ENOMEM;
    s->found_ms = h->last_seen_ms;
    s->leak = *lk;
    return 0;
}

/* Keeps the change points of p[0..n): the first point of each run of equal (bytes, diff)
 * and the last point (see the top of the file). Returns the new count. */
static size_t change_points(pw_row_point_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || p[i].bytes != p[k - 1].bytes || p[i].diff != p[k - 1].diff || i + 1 == n)
            p[k++] = p[i];
    return k;
}

/* pw_leak_eval of one row: the short pass on the raw last hour, or (lp) the long pass on 24 h
 * at 15-min steps. Returns 0 with *lk filled, or nonzero when there is nothing to judge. */
static int eval_row(run_t *rn, const pw_host_t *h, const host_state_t *hs, const uint8_t *t,
                    size_t len, int pool, int lp, const pw_leak_opts_t *o, pw_leak_t *lk)
{
    uint64_t win = lp ? LONG_WINDOW_MS : LEAK_WINDOW_MS;
    uint64_t to = h->last_seen_ms, from = to > win ? to - win : 0;
    int64_t n = pw_store_series(rn->store, h->name, t, len, (pw_pool_t)pool, from, to,
                                lp ? LONG_STEP_MS : 0, &rn->series, NULL);
    if (n <= 0)
        return -1;
    if ((size_t)n > rn->rpts_cap) {
        pw_row_point_t *p = pw_realloc(rn->rpts, (size_t)n * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        rn->rpts = p;
        rn->rpts_cap = (size_t)n;
    }
    for (int64_t i = 0; i < n; i++) {
        rn->rpts[i].ts_ms = (int64_t)rn->series.points[i].ts_ms;
        rn->rpts[i].bytes = rn->series.points[i].bytes;
        rn->rpts[i].diff = rn->series.points[i].diff;
    }
    /* Short pass only: at 15-min steps noise differs from step to step already, while a leak
     * that lands in steps (every 4 h) is flat in between and would lose its points. */
    size_t m = lp ? (size_t)n : change_points(rn->rpts, (size_t)n);
    /* The host's total of the same pool, from the ring (thinned for the long pass). */
    size_t hist_n = pw_host_hist_n(h);
    if (grow_pts(rn, hist_n) != 0)
        return PW_ENOMEM;
    size_t hn = 0, step = 1;
    if (lp && hist_n > LONG_HOST_MAX)
        step = (hist_n + LONG_HOST_MAX - 1) / LONG_HOST_MAX;
    for (size_t i = 0; i < hist_n; i += step) {
        const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
        rn->pts[hn].ts_ms = (int64_t)p->ts_ms;
        rn->pts[hn++].v = (double)(pool == PW_POOL_NONPAGED ? p->nonpaged_bytes : p->paged_bytes);
    }
    const base_row_t *b = base_find(hs, t, len, pool);
    pw_leak_input_t in = {rn->rpts, m, rn->pts, hn, b ? b->bytes : 0, 1};
    return pw_leak_eval(&in, o, lk);
}

static void compare_pass(run_t *rn, const pw_host_t *h, host_state_t *hs);

static void leak_pass(run_t *rn, const pw_host_t *h, host_state_t *hs, int64_t now_ms)
{
    hs->pub.n_suspects = 0;
    if (!pw_host_streaming(h)) {
        compare_pass(rn, h, hs);
        return;
    }
    /* An agent replaying saved poolmon screens (replay:FILE): while its history is too short
     * for a trend test, its screens are compared, as an import of the same file is. */
    if (h->source_kind == POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY) {
        pw_leak_opts_t so;
        pw_leak_opts_default(&so);
        if (pw_host_hist_n(h) < so.min_points) {
            compare_pass(rn, h, hs);
            return;
        }
    }
    if (hs->baseline == NULL)
        return;
    cand_t cand[CANDIDATES];
    size_t nc = 0, nrows = pw_host_nrows(h);
    for (size_t i = 0; i < nrows; i++) {
        pw_host_row_t r;
        pw_host_row_plain(h, i, &r);
        const base_row_t *b = base_find(hs, r.tag, r.tag_len, r.pool);
        uint64_t first = b ? b->bytes : 0;
        if (r.bytes < first + MIN_GROWTH)
            continue;
        uint64_t g = r.bytes - first;
        if (nc < CANDIDATES) {
            cand[nc++] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        } else if (g > cand[nc - 1].growth) {
            cand[nc - 1] = (cand_t){i, g};
            qsort(cand, nc, sizeof(*cand), cmp_cand);
        }
    }
    pw_leak_opts_t o, lo;
    pw_leak_opts_default(&o);
    /* the long pass: 24 h at 15-min steps, 3 parts of 8 h, at least 6 h of data, 4 KiB/h */
    pw_leak_opts_default(&lo);
    lo.window_ms = (int64_t)LONG_WINDOW_MS;
    lo.min_span_ms = 6 * 3600000LL;
    lo.min_rate_bytes_per_h = 4096.0;
    int long_pass = rn->passes % LONG_EVERY == 0;
    for (size_t k = 0; k < nc; k++) {
        pw_host_row_t r;
        pw_host_row_plain(h, cand[k].row, &r);
        const uint8_t *t = r.tag;
        size_t len = r.tag_len;
        int pool = r.pool;
        pw_leak_t lk, best;
        int have = 0;
        for (int lp = 0; lp <= long_pass; lp++) {
            if (eval_row(rn, h, hs, t, len, pool, lp, lp ? &lo : &o, &lk) != 0)
                continue;
            if (!have || (lk.suspect && (!best.suspect || lk.score > best.score)))
                best = lk;
            have = 1;
        }
        if (!have)
            continue;
        char shown[PW_TAG_MAX * 4 + 1];
        pw_tag_format(t, len, shown, sizeof(shown));
        /* Between long passes a firing alert is not resolved by the short pass alone (the
         * long pass may be what flagged it): the next long pass judges with both. */
        pw_alert_key_t key;
        memset(&key, 0, sizeof(key));
        snprintf(key.host, sizeof(key.host), "%.127s", h->name); /* as alert() truncates */
        snprintf(key.tag, sizeof(key.tag), "%.127s", shown);
        snprintf(key.pool, sizeof(key.pool), "%s", pw_pool_name(pool));
        snprintf(key.severity, sizeof(key.severity), "warning");
        if (long_pass || best.suspect || pw_alert_state(rn->alerts, &key, NULL) != PW_ALERT_FIRING)
            alert(rn, h->name, shown, pw_pool_name(pool), "warning", best.suspect ? 1.0 : 0.0, 1.0,
                  0.5, 0, now_ms);
        if (!best.suspect)
            continue;
        if (add_suspect(rn, h, t, len, pool, &best) == 0)
            hs->pub.n_suspects++;
    }
}

/* ---- screen comparison ---------------------------------------------------------------------- */

static cmp_cache_t *cache_get(run_t *rn, const char *host)
{
    for (size_t i = 0; i < rn->n_cc; i++)
        if (strcmp(rn->cc[i].host, host) == 0)
            return &rn->cc[i];
    if (rn->n_cc == rn->cc_cap) {
        size_t nc = rn->cc_cap ? rn->cc_cap * 2 : 16;
        cmp_cache_t *p = pw_realloc(rn->cc, nc * sizeof(*p));
        if (p == NULL)
            return NULL;
        rn->cc = p;
        rn->cc_cap = nc;
    }
    cmp_cache_t *e = &rn->cc[rn->n_cc++];
    memset(e, 0, sizeof(*e));
    snprintf(e->host, sizeof(e->host), "%s", host);
    return e;
}

/* Reads the stored screens of one row (raw, from the first) into rn->scr. Returns the count,
 * or a negative code. */
static int64_t row_screens(run_t *rn, const pw_host_t *h, const pw_entry_t *e, uint64_t to)
{
    int64_t n = pw_store_series(rn->store, h->name, e->tag, e->tag_len, (pw_pool_t)e->pool, 0, to,
                                0, &rn->series, NULL);
    if (n <= 0)
        return n;
    if ((size_t)n > rn->scr_cap) {
        pw_screen_row_t *p = pw_realloc(rn->scr, (size_t)n * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        rn->scr = p;
        rn->scr_cap = (size_t)n;
    }
    for (int64_t i = 0; i < n; i++) {
        const pw_store_point_t *q = &rn->series.points[i];
        rn->scr[i] = (pw_screen_row_t){(int64_t)q->ts_ms, q->allocs, q->frees, q->diff, q->bytes};
    }
    return n;
}

/* Judges every row of the host's last screen by comparison into e. Returns 0 or a negative
 * code (the host is judged again at the next pass). */
static int compare_host(run_t *rn, const pw_host_t *h, const pw_sample_t *snap, cmp_cache_t *e)
{
    pw_leak_opts_t o;
    pw_leak_opts_default(&o);
    uint64_t to = h->last_seen_ms > snap->timestamp_ms ? h->last_seen_ms : snap->timestamp_ms;
    e->n = 0;
    /* Cheap probe on the largest row: at 15-min steps, a host with enough history for a trend
     * test is not a short capture (no raw read of its whole history). */
    size_t big = 0;
    for (size_t i = 1; i < snap->n; i++)
        if (snap->entries[i].bytes > snap->entries[big].bytes)
            big = i;
    const pw_entry_t *be = &snap->entries[big];
    int64_t pn = pw_store_series(rn->store, h->name, be->tag, be->tag_len, (pw_pool_t)be->pool, 0,
                                 to, LONG_STEP_MS, &rn->series, NULL);
    if (pn < 0)
        return (int)pn;
    if ((size_t)pn >= o.min_points)
        return 0;
    for (size_t i = 0; i < snap->n; i++) {
        const pw_entry_t *en = &snap->entries[i];
        int64_t n = row_screens(rn, h, en, to);
        if (n < 0)
            return (int)n;
        /* one screen never raises a suspect; enough screens belong to the trend test */
        if (n < 2 || (size_t)n >= o.min_points)
            continue;
        pw_compare_t cmp;
        if (pw_screen_compare(rn->scr, (size_t)n, &cmp) != 0 || !cmp.suspect)
            continue;
        pw_suspect_t *s = suspect_new(&e->s, &e->n, &e->cap, h, en->tag, en->tag_len, en->pool);
        if (s == NULL)
            return PW_ENOMEM;
        s->found_ms = (uint64_t)rn->scr[n - 1].ts_ms;
        s->method = PW_LEAK_METHOD_COMPARE;
        s->cmp = cmp;
        /* the same numbers in the trend fields, for readers that know only those */
        pw_leak_t *l = &s->leak;
        l->suspect = true;
        l->score = cmp.score;
        l->n_window = cmp.screens;
        l->span_ms = cmp.span_ms;
        l->rate_bytes_per_h = cmp.rate_bytes_per_h;
        l->share = -1.0;
        l->first_bytes = cmp.first_bytes;
        l->last_bytes = cmp.last_bytes;
        l->growth_ratio =
            cmp.first_bytes > 0 ? (double)cmp.last_bytes / (double)cmp.first_bytes : INFINITY;
        l->consistency = (double)cmp.steps_up / (double)(cmp.screens - 1);
        l->last_part_p = 1.0;
    }
    return 0;
}

/* A host without a live stream (its last table from the store), or a replay of saved
 * screens too short for a trend: its rows judged by screen comparison (see the top of the
 * file), from the cache while its last screen is unchanged. */
static void compare_pass(run_t *rn, const pw_host_t *h, host_state_t *hs)
{
    size_t n = pw_host_nrows(h);
    uint64_t ts = pw_host_ts(h), seq = pw_host_seq(h);
    if (n == 0)
        return;
    cmp_cache_t *e = cache_get(rn, h->name);
    if (e == NULL)
        return;
    if (!e->valid || e->seen_ms != h->last_seen_ms || e->snap_ts != ts || e->snap_seq != seq ||
        e->snap_n != n) {
        e->valid = 0;
        if (pw_host_table_copy(h, &rn->table) != 0 || compare_host(rn, h, &rn->table, e) != 0) {
            e->n = 0;
            return;
        }
        e->valid = 1;
        e->seen_ms = h->last_seen_ms;
        e->snap_ts = ts;
        e->snap_seq = seq;
        e->snap_n = n;
    }
    for (size_t i = 0; i < e->n; i++) {
        const pw_suspect_t *c = &e->s[i];
        pw_suspect_t *s =
            suspect_new(&rn->building, &rn->n_building, &rn->bcap, h, c->tag, c->tag_len, c->pool);
        if (s == NULL)
            return;
        *s = *c;
        hs->pub.n_suspects++;
    }
}

static int cmp_suspect(const void *a, const void *b)
{
    const pw_suspect_t *x = a, *y = b;
    return x->leak.score > y->leak.score ? -1 : x->leak.score < y->leak.score;
}

static int64_t wall_ms(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The alerts' clock: the caller's (opts->now_ms) or the wall clock. */
static int64_t clock_ms(const run_t *rn)
{
    return rn->o.now_ms != NULL ? rn->o.now_ms(rn->o.now_arg) : wall_ms();
}

/* Publishes the pass in progress: its suspects replace the last pass's. */
static void finish_pass(run_t *rn, int64_t now_ms)
{
    pw_suspect_t *tmp = rn->suspects;
    size_t tcap = rn->cap;
    rn->suspects = rn->building;
    rn->n_suspects = rn->n_building;
    rn->cap = rn->bcap;
    rn->building = tmp;
    rn->bcap = tcap;
    rn->n_building = 0;
    if (rn->n_suspects > 1) /* a pass without suspects may have no list at all (NULL) */
        qsort(rn->suspects, rn->n_suspects, sizeof(*rn->suspects), cmp_suspect);
    pw_alert_expire(rn->alerts, now_ms);
    if (rn->alerts_dirty)
        save_firing(rn);
    if (rn->o.on_alert != NULL && rn->passes % RESEND_PASSES == RESEND_PASSES - 1)
        pw_alert_foreach(rn->alerts, resend_firing, rn);
    rn->passes++;
    rn->in_pass = 0;
}

/* After a restart the leak screen's baseline ("the value after the agent's start")
 * would otherwise be the first table after the restart, and a leak would have to grow again
 * by MIN_GROWTH before it is looked at: the table of 24 h before the newest sample (the long
 * pass's window) is read back from the store instead, or the oldest one stored. */
static void restore_baseline(run_t *rn, const pw_host_t *h, host_state_t *hs)
{
    uint64_t from = h->last_seen_ms > LONG_WINDOW_MS ? h->last_seen_ms - LONG_WINDOW_MS : 0;
    pw_sample_t s;
    pw_sample_init(&s);
    pw_diag_t d;
    int r = pw_store_table_at(rn->store, h->name, from, &s, &d);
    if (r == 0 && s.n > 0) {
        base_set(hs, &s, s.n, get_entry); /* ENOMEM: the first table after the restart */
    } else if (r != 0 && r != PW_ENOENT) {
        PW_LOG_WARN(MOD, "%s: baseline from the store: %s (%s)", h->name, pw_strerror(r), d.msg);
    }
    pw_sample_close(&s);
}

/* What a restart lost of a host that the store has: its history ring (ingest reads it back)
 * and its leak baseline. Once per host. */
static void restore_host(run_t *rn, const pw_host_t *h, host_state_t *hs)
{
    if (hs->restore_checked)
        return;
    hs->restore_checked = 1;
    if (pw_ingest_restore_history(rn->ing, h, HIST_LOAD_MS))
        restore_baseline(rn, h, hs);
}

/* Restores hosts rebuilt at start, a time slice at a time; returns 1 while some are left. */
static int restore_some(run_t *rn, uint64_t slice_ns)
{
    uint64_t t0 = uv_hrtime();
    while (rn->restore_cursor < rn->fleet->n && uv_hrtime() - t0 < slice_ns) {
        const pw_host_t *h = rn->fleet->hosts[rn->restore_cursor++];
        host_state_t *hs = state_of(rn, h);
        if (hs)
            restore_host(rn, h, hs);
    }
    return rn->restore_cursor < rn->fleet->n;
}

static void pass_host(run_t *rn, const pw_host_t *h, int64_t now_ms)
{
    host_state_t *hs = state_of(rn, h);
    if (hs == NULL)
        return;
    restore_host(rn, h, hs);
    pressure_pass(rn, h, hs, now_ms);
    leak_pass(rn, h, hs, now_ms);
    hs->judged = 1;
}

void pw_analysis_run_pass(pw_analysis_run_t *rn)
{
    if (rn == NULL)
        return;
    int64_t now_ms = clock_ms(rn);
    rn->n_building = 0;
    for (size_t i = 0; i < rn->fleet->n; i++)
        pass_host(rn, rn->fleet->hosts[i], now_ms);
    finish_pass(rn, now_ms);
}

/* A pass over thousands of hosts must not hold the loop (acks wait behind it): the timer
 * takes slices of at most SLICE_MS of work, and a pass starts every PASS_MS. */
#define TICK_MS  100
#define SLICE_MS 20

static void on_timer(uv_timer_t *t)
{
    run_t *rn = t->data;
    uint64_t now = uv_now(rn->loop);
    /* First what a restart lost (hosts rebuilt from the store), then the passes. */
    if (restore_some(rn, (uint64_t)SLICE_MS * 1000000))
        return;
    if (!rn->in_pass) {
        if (rn->pass_start_ms != 0 && now - rn->pass_start_ms < PASS_MS)
            return;
        rn->in_pass = 1;
        rn->cursor = 0;
        rn->n_building = 0;
        rn->pass_start_ms = now;
    }
    int64_t now_ms = clock_ms(rn);
    uint64_t t0 = uv_hrtime();
    while (rn->cursor < rn->fleet->n && uv_hrtime() - t0 < (uint64_t)SLICE_MS * 1000000)
        pass_host(rn, rn->fleet->hosts[rn->cursor++], now_ms);
    if (rn->cursor >= rn->fleet->n)
        finish_pass(rn, now_ms);
}

int pw_analysis_run_new(uv_loop_t *loop, pw_ingest_t *ing, const pw_analysis_opts_t *opts,
                        pw_analysis_run_t **out)
{
    run_t *rn = pw_calloc(1, sizeof(*rn));
    if (rn == NULL || pw_alert_set_new(&rn->alerts) != 0) {
        pw_free(rn);
        return PW_ENOMEM;
    }
    rn->loop = loop;
    rn->ing = ing;
    rn->fleet = pw_ingest_fleet(ing);
    rn->store = pw_ingest_store(ing);
    if (opts)
        rn->o = *opts;
    rn->o.alerts_path = NULL;
    pw_sample_init(&rn->table);
    if (opts && opts->alerts_path) {
        size_t n = strlen(opts->alerts_path) + 1;
        rn->alerts_path = pw_malloc(n);
        if (rn->alerts_path != NULL)
            memcpy(rn->alerts_path, opts->alerts_path, n);
    }
    load_firing(rn);
    pw_ingest_on_sample(ing, on_sample, rn);
    if (loop != NULL) {
        uv_timer_init(loop, &rn->timer);
        rn->timer.data = rn;
        /* The first pass starts PASS_MS after start-up, then every PASS_MS, in slices. */
        rn->pass_start_ms = uv_now(loop);
        uv_timer_start(&rn->timer, on_timer, TICK_MS, TICK_MS);
    }
    *out = rn;
    return 0;
}

static void run_free(run_t *rn)
{
    pw_alert_set_free(rn->alerts);
    pw_store_series_free(&rn->series);
    pw_free(rn->suspects);
    pw_free(rn->building);
    pw_free(rn->pts);
    pw_free(rn->rpts);
    for (size_t i = 0; i < rn->n_cc; i++)
        pw_free(rn->cc[i].s);
    pw_free(rn->cc);
    pw_free(rn->scr);
    pw_free(rn->alerts_path);
    for (size_t i = 0; i < rn->n_hs; i++) {
        pw_free(rn->hs[i].baseline);
        pw_free(rn->hs[i].baseline_tags);
    }
    pw_free(rn->hs);
    pw_sample_close(&rn->table);
    pw_free(rn);
}

static void on_timer_closed(uv_handle_t *h)
{
    run_free(h->data);
}

void pw_analysis_run_close(pw_analysis_run_t *rn)
{
    if (rn == NULL)
        return;
    if (rn->alerts_dirty)
        save_firing(rn);
    pw_ingest_on_sample(rn->ing, NULL, NULL);
    if (rn->loop == NULL) {
        run_free(rn);
        return;
    }
    uv_timer_stop(&rn->timer);
    uv_close((uv_handle_t *)&rn->timer, on_timer_closed);
}

size_t pw_analysis_run_suspects(const pw_analysis_run_t *rn, const pw_suspect_t **out)
{
    *out = rn ? rn->suspects : NULL;
    return rn ? rn->n_suspects : 0;
}

const pw_alert_set_t *pw_analysis_run_alerts(const pw_analysis_run_t *rn)
{
    return rn ? rn->alerts : NULL;
}

const pw_analysis_host_t *pw_analysis_run_host(const pw_analysis_run_t *rn, const pw_host_t *h)
{
    if (rn == NULL || h->index >= rn->n_hs || !rn->hs[h->index].judged)
        return NULL;
    return &rn->hs[h->index].pub;
}

int pw_analysis_run_publish(pw_analysis_run_t *rn, const pw_suspect_t *s, size_t n)
{
    pw_suspect_t *v = pw_malloc((n ? n : 1) * sizeof(*v));
    if (v == NULL)
        return PW_ENOMEM;
    if (n)
        memcpy(v, s, n * sizeof(*v));
    pw_free(rn->suspects);
    rn->suspects = v;
    rn->n_suspects = rn->cap = n;
    return 0;
}

pw_alert_set_t *pw_analysis_run_alert_set(pw_analysis_run_t *rn)
{
    return rn->alerts;
}

int pw_analysis_run_set_host(pw_analysis_run_t *rn, const pw_host_t *h,
                             const pw_analysis_host_t *res)
{
    host_state_t *hs = state_of(rn, h);
    if (hs == NULL)
        return PW_ENOMEM;
    hs->pub = *res;
    hs->judged = 1;
    return 0;
}
