/* fleetq.c: the global fleet view read back from the shared store (fleetq.h). */
#include "fleetq.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "httpc.h"
#include "log.h"

#define MOD "fleetq"

static const char *const QUERIES[4] = {
    "{__name__=~\"poolwatch_pool_bytes|poolwatch_pool_limit_bytes|"
    "poolwatch_pool_exhaustion_seconds|poolwatch_host_connected|poolwatch_host_suspects|"
    "poolwatch_host_loading_history|"
    "poolwatch_host_owner\"}",
    "timestamp(poolwatch_pool_bytes{pool=\"nonpaged\"})",
    "poolwatch_tag_bytes",
    "{__name__=~\"poolwatch_leak_growth_bytes_per_hour|poolwatch_leak_score\"}",
};

/* ============================================================================================
 * Building a snapshot
 * ========================================================================================== */

struct pw_fleetq_build_s {
    pw_fleetq_snap_t s;
    size_t cap_hosts, cap_rows, cap_leaks;
    uint32_t *slot; /* open addressing on the host name: index + 1, 0 empty */
    size_t nslot;
};

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int64_t find_host(const pw_fleetq_build_t *b, const char *name)
{
    if (b->nslot == 0)
        return -1;
    for (size_t i = name_hash(name) & (b->nslot - 1);; i = (i + 1) & (b->nslot - 1)) {
        uint32_t v = b->slot[i];
        if (v == 0)
            return -1;
        if (strcmp(b->s.hosts[v - 1].name, name) == 0)
            return v - 1;
    }
}

static int rehash(pw_fleetq_build_t *b, size_t nslot)
{
    uint32_t *sl = pw_calloc(nslot, sizeof(*sl));
    if (sl == NULL)
        return PW_ENOMEM;
    for (size_t k = 0; k < b->s.n_hosts; k++) {
        size_t i = name_hash(b->s.hosts[k].name) & (nslot - 1);
        while (sl[i] != 0)
            i = (i + 1) & (nslot - 1);
        sl[i] = (uint32_t)k + 1;
    }
    pw_free(b->slot);
    b->slot = sl;
    b->nslot = nslot;
    return 0;
}

/* The host named `name`, added when new. Returns its index or PW_ENOMEM. */
static int64_t host_of(pw_fleetq_build_t *b, const char *name)
{
    int64_t k = find_host(b, name);
    if (k >= 0)
        return k;
    if (b->s.n_hosts == b->cap_hosts) {
        size_t cap = b->cap_hosts ? b->cap_hosts * 2 : 256;
        pw_fleetq_host_t *h = pw_realloc(b->s.hosts, cap * sizeof(*h));
        if (h == NULL)
            return PW_ENOMEM;
        b->s.hosts = h;
        b->cap_hosts = cap;
    }
    if ((b->s.n_hosts + 1) * 2 > b->nslot && rehash(b, b->nslot ? b->nslot * 2 : 512) != 0)
        return PW_ENOMEM;
    pw_fleetq_host_t *h = &b->s.hosts[b->s.n_hosts];
    memset(h, 0, sizeof(*h));
    snprintf(h->name, sizeof(h->name), "%s", name);
    h->eta_s[0] = h->eta_s[1] = -1;
    size_t i = name_hash(h->name) & (b->nslot - 1);
    while (b->slot[i] != 0)
        i = (i + 1) & (b->nslot - 1);
    b->slot[i] = (uint32_t)b->s.n_hosts + 1;
    return (int64_t)b->s.n_hosts++;
}

pw_fleetq_build_t *pw_fleetq_build_new(void)
{
    return pw_calloc(1, sizeof(pw_fleetq_build_t));
}

void pw_fleetq_snap_free(pw_fleetq_snap_t *s)
{
    if (s == NULL)
        return;
    if (s->prepared_free != NULL)
        s->prepared_free(s->prepared);
    pw_free(s->hosts);
    pw_free(s->rows);
    pw_free(s->leaks);
    pw_free(s);
}

void pw_fleetq_build_free(pw_fleetq_build_t *b)
{
    if (b == NULL)
        return;
    pw_free(b->s.hosts);
    pw_free(b->s.rows);
    pw_free(b->s.leaks);
    pw_free(b->slot);
    pw_free(b);
}

/* A pool label: the index of the host series (0 nonpaged, 1 paged; -1 other) */
static int pool_of(const char *p)
{
    if (p == NULL)
        return -1;
    return strcmp(p, "nonpaged") == 0 ? 0 : strcmp(p, "paged") == 0 ? 1 : -1;
}

/* ... and as a pw_pool_t (rows and leaks), -1 when unknown */
static int pool_type(const char *p)
{
    for (int k = 0; p != NULL && k < PW_POOL__COUNT; k++)
        if (strcmp(p, pw_pool_name(k)) == 0)
            return k;
    return -1;
}

static const char *label(json_t *m, const char *k)
{
    return json_string_value(json_object_get(m, k));
}

int pw_fleetq_build_add(pw_fleetq_build_t *b, int which, const char *json, size_t len, pw_diag_t *d)
{
    if (b == NULL || json == NULL || which < 0 || which > 3)
        return PW_EINVAL;
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (root == NULL)
        return pw_diag_set(d, PW_EPARSE, (uint32_t)je.line, (uint64_t)je.position, "body",
                           "query %d: not JSON: %s (line %d, byte %d)", which, je.text, je.line,
                           je.position);
    int r = 0;
    json_t *data = json_object_get(root, "data"), *res = json_object_get(data, "result");
    const char *st = json_string_value(json_object_get(root, "status"));
    const char *rt = json_string_value(json_object_get(data, "resultType"));
    if (st == NULL || strcmp(st, "success") != 0)
        r = pw_diag_set(d, PW_EPARSE, 0, 0, "status", "query %d: status '%s': %s", which,
                        st ? st : "(none)",
                        json_string_value(json_object_get(root, "error"))
                            ? json_string_value(json_object_get(root, "error"))
                            : "no error text");
    else if (rt == NULL || strcmp(rt, "vector") != 0 || !json_is_array(res))
        r = pw_diag_set(d, PW_EPARSE, 0, 0, "resultType",
                        "query %d: resultType '%s', expected a vector", which, rt ? rt : "(none)");
    size_t i;
    json_t *e;
    json_array_foreach(res, i, e)
    {
        if (r != 0)
            break;
        json_t *m = json_object_get(e, "metric"), *v = json_object_get(e, "value");
        const char *host = label(m, "host"), *vs = json_string_value(json_array_get(v, 1));
        if (!json_is_object(m) || host == NULL || vs == NULL) {
            r = pw_diag_set(d, PW_EPARSE, 0, i, "result",
                            "query %d: result %zu has no host label or no value", which, i);
            break;
        }
        char *end;
        double val = strtod(vs, &end);
        if (end == vs || *end != '\0') {
            r = pw_diag_set(d, PW_EPARSE, 0, i, "value", "query %d: result %zu: value '%s'", which,
                            i, vs);
            break;
        }
        const char *name = label(m, "__name__");
        int pool = pool_of(label(m, "pool"));
        if (which == 0) {
            int64_t k = host_of(b, host);
            if (k < 0) {
                r = PW_ENOMEM;
                break;
            }
            pw_fleetq_host_t *h = &b->s.hosts[k];
            uint64_t u = val > 0 && isfinite(val) ? (uint64_t)llround(val) : 0;
            if (name == NULL)
                continue;
            if (strcmp(name, "poolwatch_pool_bytes") == 0 && pool >= 0)
                h->used[pool] = u;
            else if (strcmp(name, "poolwatch_pool_limit_bytes") == 0 && pool >= 0) {
                h->limit[pool] = u;
                const char *src = label(m, "source"); /* (absent from older collectors) */
                snprintf(h->limit_source[pool], sizeof(h->limit_source[pool]), "%s",
                         src != NULL ? src : "");
            } else if (strcmp(name, "poolwatch_host_loading_history") == 0)
                h->loading = val != 0;
            else if (strcmp(name, "poolwatch_pool_exhaustion_seconds") == 0 && pool >= 0)
                h->eta_s[pool] = val;
            else if (strcmp(name, "poolwatch_host_connected") == 0)
                h->connected = val != 0;
            else if (strcmp(name, "poolwatch_host_suspects") == 0)
                h->suspects = (uint32_t)u;
            else if (strcmp(name, "poolwatch_host_owner") == 0 && label(m, "collector"))
                snprintf(h->collector, sizeof(h->collector), "%s", label(m, "collector"));
            continue;
        }
        int64_t k = find_host(b, host);
        if (k < 0)
            continue; /* not listed by query 0 (it went stale in between) */
        if (which == 1) {
            b->s.hosts[k].last_seen_ms = val > 0 ? (uint64_t)llround(val * 1000.0) : 0;
            continue;
        }
        const char *tag = label(m, "tag");
        int pt = pool_type(label(m, "pool"));
        if (tag == NULL || pt < 0 || strlen(tag) >= PW_FLEETQ_TAG_TEXT)
            continue;
        if (which == 2) {
            if (b->s.n_rows == b->cap_rows) {
                size_t cap = b->cap_rows ? b->cap_rows * 2 : 1024;
                pw_fleetq_row_t *rw = pw_realloc(b->s.rows, cap * sizeof(*rw));
                if (rw == NULL) {
                    r = PW_ENOMEM;
                    break;
                }
                b->s.rows = rw;
                b->cap_rows = cap;
            }
            pw_fleetq_row_t *rw = &b->s.rows[b->s.n_rows++];
            rw->host = (uint32_t)k;
            rw->pool = (uint8_t)pt;
            snprintf(rw->tag, sizeof(rw->tag), "%s", tag);
            rw->bytes = val > 0 ? (uint64_t)llround(val) : 0;
        } else {
            if (b->s.n_leaks == b->cap_leaks) {
                size_t cap = b->cap_leaks ? b->cap_leaks * 2 : 64;
                pw_fleetq_leak_t *lk = pw_realloc(b->s.leaks, cap * sizeof(*lk));
                if (lk == NULL) {
                    r = PW_ENOMEM;
                    break;
                }
                b->s.leaks = lk;
                b->cap_leaks = cap;
            }
            pw_fleetq_leak_t *lk = &b->s.leaks[b->s.n_leaks++];
            lk->host = (uint32_t)k;
            lk->pool = (uint8_t)pt;
            snprintf(lk->tag, sizeof(lk->tag), "%s", tag);
            int score = name != NULL && strcmp(name, "poolwatch_leak_score") == 0;
            lk->growth_bytes_per_hour = score ? NAN : val;
            lk->score = score ? val : NAN;
        }
    }
    json_decref(root);
    return r;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const pw_fleetq_host_t *)a)->name, ((const pw_fleetq_host_t *)b)->name);
}

/* Rows by tag, pool, bytes (most first), then host (names are sorted: indexes compare as
 * names): the order of the per-tag aggregates, made once per refresh, not per request. */
static int by_row(const void *a, const void *b)
{
    const pw_fleetq_row_t *x = a, *y = b;
    int c = strcmp(x->tag, y->tag);
    if (c)
        return c;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->host < y->host ? -1 : x->host > y->host;
}

static int by_leak(const void *a, const void *b)
{
    const pw_fleetq_leak_t *x = a, *y = b;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (int)x->pool - (int)y->pool;
}

pw_fleetq_snap_t *pw_fleetq_build_end(pw_fleetq_build_t *b)
{
    if (b == NULL)
        return NULL;
    pw_fleetq_snap_t *s = pw_calloc(1, sizeof(*s));
    size_t n = b->s.n_hosts;
    uint32_t *perm = pw_malloc((n ? n : 1) * sizeof(*perm));
    if (s == NULL || perm == NULL) {
        pw_free(s);
        pw_free(perm);
        pw_fleetq_build_free(b);
        return NULL;
    }
    /* hosts by name; rows and leaks follow their hosts' new places */
    pw_fleetq_host_t *old = pw_malloc((n ? n : 1) * sizeof(*old));
    if (old == NULL) {
        pw_free(s);
        pw_free(perm);
        pw_fleetq_build_free(b);
        return NULL;
    }
    if (n > 0) {
        memcpy(old, b->s.hosts, n * sizeof(*old));
        qsort(b->s.hosts, n, sizeof(*b->s.hosts), by_name);
    }
    for (size_t i = 0; i < n; i++) {
        /* the old index of the host now at i: find its name among the old ones */
        int64_t k = find_host(&(pw_fleetq_build_t){.s = {.hosts = old, .n_hosts = n},
                                                   .slot = b->slot,
                                                   .nslot = b->nslot},
                              b->s.hosts[i].name);
        if (k >= 0)
            perm[k] = (uint32_t)i;
    }
    pw_free(old);
    for (size_t i = 0; i < b->s.n_rows; i++)
        b->s.rows[i].host = perm[b->s.rows[i].host];
    for (size_t i = 0; i < b->s.n_leaks; i++)
        b->s.leaks[i].host = perm[b->s.leaks[i].host];
    pw_free(perm);
    if (b->s.n_rows > 1)
        qsort(b->s.rows, b->s.n_rows, sizeof(*b->s.rows), by_row);
    if (b->s.n_leaks > 1)
        qsort(b->s.leaks, b->s.n_leaks, sizeof(*b->s.leaks), by_leak);
    /* a suspect's two series are one leak */
    size_t k = 0;
    for (size_t i = 0; i < b->s.n_leaks; i++) {
        if (k > 0 && by_leak(&b->s.leaks[k - 1], &b->s.leaks[i]) == 0) {
            pw_fleetq_leak_t *p = &b->s.leaks[k - 1];
            if (isnan(p->score))
                p->score = b->s.leaks[i].score;
            if (isnan(p->growth_bytes_per_hour))
                p->growth_bytes_per_hour = b->s.leaks[i].growth_bytes_per_hour;
            continue;
        }
        b->s.leaks[k++] = b->s.leaks[i];
    }
    b->s.n_leaks = k;
    *s = b->s;
    memset(&b->s, 0, sizeof(b->s));
    pw_fleetq_build_free(b);
    return s;
}

const pw_fleetq_host_t *pw_fleetq_find(const pw_fleetq_snap_t *s, const char *name)
{
    if (s == NULL || name == NULL)
        return NULL;
    pw_fleetq_host_t key;
    snprintf(key.name, sizeof(key.name), "%s", name);
    return bsearch(&key, s->hosts, s->n_hosts, sizeof(*s->hosts), by_name);
}

/* ============================================================================================
 * The refresh
 * ========================================================================================== */

struct pw_fleetq_s {
    uv_loop_t *loop;
    pw_httpc_t *http;
    char *url;
    char *headers;
    uint64_t refresh_ms;
    uv_timer_t timer;
    pw_fleetq_snap_t *snap;
    pw_fleetq_build_t *build; /* the refresh running, NULL when idle */
    int step;
    uint64_t started_ms, started_loop_ms, body_bytes;
    pw_fleetq_stats_t st;
    pw_complaint_t c_fail;
    void *(*prepare)(const pw_fleetq_snap_t *s);
    void (*prepared_free)(void *prepared);
    /* The job on the worker thread: while `working`, the loop touches none of these nor
     * `build`. */
    uv_work_t work;
    int working;
    uint8_t *w_body; /* the answer of query `step` (a copy: the client reuses its buffer) */
    size_t w_len;
    int w_result;
    pw_diag_t w_diag;
    pw_fleetq_snap_t *w_snap; /* made by the job of the last query */
    int w_ended;              /* that job ended (and freed) the build */
    int closing, closed;      /* closed: the timer's close callback ran */
};

static uint64_t wall_ms(void)
{
    uv_timeval64_t tv;
    return uv_gettimeofday(&tv) == 0 ? (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000 : 0;
}

/* application/x-www-form-urlencoded of `s` after "query=". */
static char *form_query(const char *s)
{
    size_t n = strlen(s);
    char *o = pw_malloc(6 + 3 * n + 1);
    if (o == NULL)
        return NULL;
    size_t k = (size_t)sprintf(o, "query=");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~", c))
            o[k++] = (char)c;
        else
            k += (size_t)sprintf(o + k, "%%%02X", c);
    }
    o[k] = '\0';
    return o;
}

static void fail(pw_fleetq_t *q, int result, const char *what)
{
    q->st.failures++;
    q->st.last_error = result;
    char why[96];
    if (result > 0)
        snprintf(why, sizeof(why), "status %d", result);
    else
        snprintf(why, sizeof(why), "%s", pw_strerror(result));
    pw_complain(&q->c_fail, uv_now(q->loop), 60000, 600000, PW_LOG_LVL_WARN, MOD,
                "%s: query %d (%s): %s%s%s; the global view keeps its previous snapshot", q->url,
                q->step + 1, QUERIES[q->step], why, what ? ": " : "", what ? what : "");
    pw_fleetq_build_free(q->build);
    q->build = NULL;
}

static void send_step(pw_fleetq_t *q);
static void free_q(pw_fleetq_t *q);

/* Worker thread: parses the answer into the build; after the last, ends the build and runs
 * the prepare hook. Touches only the job's fields and the build. */
static void work_cb(uv_work_t *w)
{
    pw_fleetq_t *q = w->data;
    pw_diag_clear(&q->w_diag);
    q->w_result =
        pw_fleetq_build_add(q->build, q->step, (const char *)q->w_body, q->w_len, &q->w_diag);
    pw_free(q->w_body);
    q->w_body = NULL;
    if (q->w_result != 0 || q->step < 3)
        return;
    pw_fleetq_snap_t *s = pw_fleetq_build_end(q->build); /* frees the build */
    q->w_ended = 1;
    q->w_snap = s;
    if (s == NULL) {
        q->w_result = PW_ENOMEM;
        return;
    }
    s->as_of_ms = q->started_ms; /* before the hook: the answers carry it */
    s->body_bytes = q->body_bytes;
    if (q->prepare != NULL) {
        s->prepared = q->prepare(s);
        s->prepared_free = s->prepared ? q->prepared_free : NULL;
    }
}

static void publish(pw_fleetq_t *q, pw_fleetq_snap_t *s);

static void after_work_cb(uv_work_t *w, int status)
{
    pw_fleetq_t *q = w->data;
    q->working = 0;
    pw_free(q->w_body); /* a job cancelled before it ran */
    q->w_body = NULL;
    pw_fleetq_snap_t *s = q->w_snap;
    q->w_snap = NULL;
    if (q->w_ended)
        q->build = NULL; /* pw_fleetq_build_end freed it */
    if (q->closing) {
        pw_fleetq_snap_free(s);
        pw_fleetq_build_free(q->build);
        q->build = NULL;
        if (q->closed)
            free_q(q);
        return;
    }
    if (status != 0) {
        fail(q, PW_EINVAL, "the parsing job did not run"); /* cancelled: only when closing */
        return;
    }
    if (q->w_result != 0) {
        fail(q, q->w_result, q->w_result == PW_EPARSE ? q->w_diag.msg : NULL);
        return;
    }
    if (++q->step < 4) {
        send_step(q);
        return;
    }
    publish(q, s);
}

static void on_answer(void *arg, int result)
{
    pw_fleetq_t *q = arg;
    PW_LOG_DEBUG(MOD, "query %d: %d", q->step + 1, result);
    if (q->build == NULL || q->working)
        return;
    if (result != 200) {
        fail(q, result, NULL);
        return;
    }
    size_t len;
    const uint8_t *body = pw_httpc_body(q->http, &len);
    q->body_bytes += len;
    if ((q->w_body = pw_malloc(len ? len : 1)) == NULL) {
        fail(q, PW_ENOMEM, NULL);
        return;
    }
    if (len > 0)
        memcpy(q->w_body, body, len);
    q->w_len = len;
    q->w_snap = NULL;
    q->w_ended = 0;
    q->work.data = q;
    if (uv_queue_work(q->loop, &q->work, work_cb, after_work_cb) != 0) {
        pw_free(q->w_body);
        q->w_body = NULL;
        fail(q, PW_ENOMEM, "the parsing job could not be queued");
        return;
    }
    q->working = 1;
}

/* Loop thread: the new snapshot replaces the old one. */
static void publish(pw_fleetq_t *q, pw_fleetq_snap_t *s)
{
    uv_update_time(q->loop);
    s->took_ms = uv_now(q->loop) - q->started_loop_ms;
    pw_fleetq_snap_free(q->snap);
    q->snap = s;
    q->st.refreshes++;
    if (q->c_fail.interval_ms != 0) {
        PW_LOG_INFO(MOD, "%s: the global view is refreshed again (%zu hosts)", q->url, s->n_hosts);
        memset(&q->c_fail, 0, sizeof(q->c_fail));
    }
}

static void send_step(pw_fleetq_t *q)
{
    char *body = form_query(QUERIES[q->step]);
    int r = body ? pw_httpc_post(q->http, q->headers, body, strlen(body), on_answer, q) : PW_ENOMEM;
    pw_free(body);
    if (r != 0)
        fail(q, r, NULL);
}

void pw_fleetq_refresh(pw_fleetq_t *q)
{
    if (q == NULL || q->closing || q->build != NULL || q->working || pw_httpc_busy(q->http))
        return;
    if ((q->build = pw_fleetq_build_new()) == NULL)
        return;
    q->step = 0;
    q->body_bytes = 0;
    q->started_ms = wall_ms();
    uv_update_time(q->loop);
    q->started_loop_ms = uv_now(q->loop);
    send_step(q);
}

static void on_tick(uv_timer_t *t)
{
    pw_fleetq_refresh(t->data);
}

int pw_fleetq_new(uv_loop_t *loop, const pw_fleetq_opts_t *o, pw_fleetq_t **out, pw_diag_t *d)
{
    if (loop == NULL || o == NULL || out == NULL || o->query_url == NULL || o->query_url[0] == 0)
        return PW_EINVAL;
    pw_fleetq_t *q = pw_calloc(1, sizeof(*q));
    if (q == NULL)
        return PW_ENOMEM;
    q->loop = loop;
    q->refresh_ms = o->refresh_ms ? o->refresh_ms : 10000;
    q->prepare = o->prepare;
    q->prepared_free = o->prepared_free;
    size_t ul = strlen(o->query_url);
    while (ul > 0 && o->query_url[ul - 1] == '/')
        ul--;
    size_t hl = 64;
    for (size_t i = 0; i < o->n_headers; i++)
        hl += strlen(o->headers[i]) + 2;
    q->url = pw_malloc(ul + 16);
    q->headers = pw_malloc(hl);
    if (q->url == NULL || q->headers == NULL) {
        pw_free(q->url);
        pw_free(q->headers);
        pw_free(q);
        return PW_ENOMEM;
    }
    snprintf(q->url, ul + 16, "%.*s/api/v1/query", (int)ul, o->query_url);
    size_t k =
        (size_t)snprintf(q->headers, hl, "Content-Type: application/x-www-form-urlencoded\r\n");
    for (size_t i = 0; i < o->n_headers; i++)
        k += (size_t)snprintf(q->headers + k, hl - k, "%s\r\n", o->headers[i]);
    pw_httpc_opts_t ho = {.url = q->url,
                          .opt_name = "fleet.query_url",
                          .ca_file = o->ca_file,
                          .timeout_ms = o->timeout_ms ? o->timeout_ms : 30000,
                          .max_body =
                              o->max_response_bytes ? o->max_response_bytes : (size_t)256 << 20};
    int r = pw_httpc_new(loop, &ho, &q->http, d);
    if (r != 0) {
        if (d)
            snprintf(d->field, sizeof(d->field), "query_url");
        pw_free(q->url);
        pw_free(q->headers);
        pw_free(q);
        return r;
    }
    uv_timer_init(loop, &q->timer);
    q->timer.data = q;
    uv_timer_start(&q->timer, on_tick, 0, q->refresh_ms);
    *out = q;
    return 0;
}

const pw_fleetq_snap_t *pw_fleetq_snapshot(const pw_fleetq_t *q)
{
    return q ? q->snap : NULL;
}

void pw_fleetq_get_stats(const pw_fleetq_t *q, pw_fleetq_stats_t *out)
{
    *out = q->st;
}

static void free_q(pw_fleetq_t *q)
{
    pw_fleetq_snap_free(q->snap);
    pw_free(q->url);
    pw_free(q->headers);
    pw_free(q);
}

static void on_closed(uv_handle_t *h)
{
    pw_fleetq_t *q = h->data;
    q->closed = 1;
    if (!q->working) /* else the job's end frees q */
        free_q(q);
}

void pw_fleetq_close(pw_fleetq_t *q)
{
    if (q == NULL || q->closing)
        return;
    q->closing = 1;
    if (q->working) {
        uv_cancel((uv_req_t *)&q->work); /* runs after_work_cb with UV_ECANCELED, or fails */
    } else {
        pw_fleetq_build_free(q->build);
        q->build = NULL;
    }
    pw_httpc_close(q->http);
    uv_close((uv_handle_t *)&q->timer, on_closed);
}
