/* cmd_top.c: `poolwatch top HOST`, poolmon's screen for a remote host.
 *
 * The model (decoding, filtering, sorting, keys, rendering to lines) is plain functions over
 * pw_top_table_t / pw_top_view_t, tested without a terminal; only top_loop() touches the
 * terminal, through term.h (ncurses on POSIX, the console's virtual terminal on Windows).
 * Keys follow poolmon.exe (Windows Driver Kit "PoolMon Display"/"PoolMon Commands"): P cycles
 * the pool types, B M T A F D pick the sort column, S sorts by the column's change, E shows
 * totals, L highlights changed rows, I/X ask for include/exclude tag patterns, Q quits.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "sample.h"
#include "tagpat.h"
#include "term.h"

#define LIVE_DURATION_MS 600000u /* asked for on open; renewed every LIVE_RENEW_MS */
#define LIVE_RENEW_MS    300000u
#define REFRESH_MS       1000
#define BIGPOOL_MS                                                                                 \
    10000 /* the suspects' big-pool snapshots and the limits: asked again this often */

void pw_top_view_init(pw_top_view_t *v)
{
    memset(v, 0, sizeof(*v));
    v->sort = PW_TOP_SORT_BYTES;
    v->pools = PW_TOP_POOL_BOTH;
    v->session = PW_TOP_SESSION_EVERY;
}

/* ---- decoding ------------------------------------------------------------------------------ */

static int get_u64(const json_t *o, const char *key, uint64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_i64(const json_t *o, const char *key, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (!json_is_integer(v))
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int pw_top_table_from_json(const json_t *root, pw_top_table_t *t, pw_diag_t *diag)
{
    memset(t, 0, sizeof(*t));
    const json_t *rows = json_object_get(root, "rows");
    if (!json_is_object(root) || !json_is_array(rows))
        return pw_diag_set(diag, PW_EPARSE, 0, 0, "rows", "no rows array in the pool table");
    const char *host = json_string_value(json_object_get(root, "host"));
    snprintf(t->host, sizeof(t->host), "%s", host ? host : "?");
    const json_t *prev = json_object_get(root, "prev_timestamp_ms");
    t->has_prev = json_is_integer(prev);
    uint64_t total_rows;
    if (get_u64(root, "timestamp_ms", &t->timestamp_ms) < 0 ||
        get_u64(root, "total_rows", &total_rows) < 0)
        return pw_diag_set(diag, PW_EPARSE, 0, 0, "timestamp_ms", "bad number");
    const json_t *tot = json_object_get(root, "totals");
    if (json_is_object(tot)) {
        static const char *keys[] = {"physical_memory_bytes", "available_bytes",   "commit_bytes",
                                     "commit_limit_bytes",    "commit_peak_bytes", "paged_bytes",
                                     "nonpaged_bytes"};
        uint64_t *dst[] = {&t->physical_memory, &t->available, &t->commit,  &t->commit_limit,
                           &t->commit_peak,     &t->paged,     &t->nonpaged};
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            if (get_u64(tot, keys[k], dst[k]) < 0)
                return pw_diag_set(diag, PW_EPARSE, 0, 0, "totals", "bad totals.%s", keys[k]);
        const json_t *ag = json_object_get(tot, "agent");
        if (json_is_object(ag)) {
            t->has_agent = 1;
            if (get_u64(ag, "rss_bytes", &t->agent_rss) < 0 ||
                get_u64(ag, "cpu_ms", &t->agent_cpu_ms) < 0 ||
                get_u64(ag, "handles", &t->agent_handles) < 0)
                return pw_diag_set(diag, PW_EPARSE, 0, 0, "totals", "bad totals.agent");
        }
    }
    size_t n = json_array_size(rows);
    t->rows = n ? pw_calloc(n, sizeof(*t->rows)) : NULL;
    if (n && t->rows == NULL)
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "rows", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(rows, i);
        pw_top_row_t *o = &t->rows[i];
        const char *tag = json_string_value(json_object_get(r, "tag"));
        const char *type = json_string_value(json_object_get(r, "type"));
        if (tag == NULL || type == NULL || strlen(tag) >= sizeof(o->tag)) {
            pw_top_table_close(t);
            return pw_diag_set(diag, PW_EPARSE, 0, i, "rows", "row %zu: bad tag or type", i);
        }
        memcpy(o->tag, tag, strlen(tag) + 1);
        const json_t *js = json_object_get(r, "session");
        o->session = json_is_integer(js) && json_integer_value(js) >= 0 &&
                             json_integer_value(js) < (json_int_t)PW_SESSION_ALL
                         ? (int64_t)json_integer_value(js)
                         : -1;
        if (strcmp(type, "nonpaged") == 0)
            o->pool = PW_POOL_NONPAGED;
        else if (strcmp(type, "paged") == 0)
            o->pool = PW_POOL_PAGED;
        else if (strcmp(type, "session") == 0)
            o->pool = PW_POOL_SESSION;
        else {
            pw_top_table_close(t);
            return pw_diag_set(diag, PW_EPARSE, 0, i, "type", "row %zu: unknown type %s", i, type);
        }
        if (get_u64(r, "allocs", &o->allocs) < 0 || get_u64(r, "frees", &o->frees) < 0 ||
            get_u64(r, "diff", &o->diff) < 0 || get_u64(r, "bytes", &o->bytes) < 0 ||
            get_u64(r, "per_alloc", &o->per_alloc) < 0 ||
            get_i64(r, "allocs_change", &o->allocs_change) < 0 ||
            get_i64(r, "frees_change", &o->frees_change) < 0 ||
            get_i64(r, "diff_change", &o->diff_change) < 0 ||
            get_i64(r, "bytes_change", &o->bytes_change) < 0 ||
            get_u64(r, "held_bytes", &o->held_bytes) < 0 ||
            get_i64(r, "held_bytes_change", &o->held_bytes_change) < 0) {
            pw_top_table_close(t);
            return pw_diag_set(diag, PW_EPARSE, 0, i, "rows", "row %zu: bad number", i);
        }
        o->has_held = json_is_integer(json_object_get(r, "held_bytes"));
        t->has_held |= o->has_held;
        const char *drv = json_string_value(json_object_get(r, "driver"));
        if (drv != NULL)
            snprintf(o->driver, sizeof(o->driver), "%s", drv);
        t->n_rows++;
    }
    t->total_rows = total_rows ? (size_t)total_rows : n;
    return 0;
}

int pw_top_bigpool_from_json(const json_t *leaks, pw_top_table_t *t, pw_diag_t *diag)
{
    t->n_big = 0;
    const json_t *s = json_object_get(leaks, "suspects");
    if (!json_is_array(s))
        return pw_diag_set(diag, PW_EPARSE, 0, 0, "suspects", "no suspects array in the leaks");
    for (size_t i = 0; i < json_array_size(s) && t->n_big < PW_TOP_BIGPOOL_MAX; i++) {
        const json_t *l = json_array_get(s, i);
        const json_t *bp = json_object_get(l, "big_pool");
        if (!json_is_object(bp))
            continue; /* no answer yet, or a session pool's suspect */
        pw_top_bigpool_t *b = &t->big[t->n_big];
        const char *tag = json_string_value(json_object_get(l, "tag"));
        const char *type = json_string_value(json_object_get(l, "type"));
        if (tag == NULL || strlen(tag) >= sizeof(b->tag) || type == NULL ||
            get_u64(bp, "taken_ms", &b->taken_ms) < 0 || get_u64(bp, "count", &b->count) < 0 ||
            get_u64(bp, "bytes", &b->bytes) < 0 ||
            get_u64(bp, "largest_bytes", &b->largest_bytes) < 0 ||
            get_u64(bp, "smallest_bytes", &b->smallest_bytes) < 0) {
            t->n_big = 0;
            return pw_diag_set(diag, PW_EPARSE, 0, i, "big_pool", "suspect %zu: bad big_pool", i);
        }
        memcpy(b->tag, tag, strlen(tag) + 1);
        b->pool = strcmp(type, "paged") == 0 ? PW_POOL_PAGED : PW_POOL_NONPAGED;
        t->n_big++;
    }
    return 0;
}

int pw_top_limits_from_json(const json_t *host, pw_top_table_t *t, pw_diag_t *diag)
{
    pw_top_limits_t *l = &t->limits;
    memset(l, 0, sizeof(*l));
    if (!json_is_object(host))
        return pw_diag_set(diag, PW_EPARSE, 0, 0, "host", "the host is not an object");
    static const char *const pools[2] = {"nonpaged", "paged"};
    for (int p = 0; p < 2; p++) {
        char k[4][40];
        snprintf(k[0], sizeof(k[0]), "%s_bytes", pools[p]);
        snprintf(k[1], sizeof(k[1]), "%s_limit_bytes", pools[p]);
        snprintf(k[2], sizeof(k[2]), "%s_eta_ms", pools[p]);
        if (get_u64(host, k[0], &l->used[p]) < 0 || get_u64(host, k[1], &l->limit[p]) < 0 ||
            get_u64(host, k[2], &l->eta_ms[p]) < 0) {
            memset(l, 0, sizeof(*l));
            return pw_diag_set(diag, PW_EPARSE, 0, 0, "host", "bad %s_* number", pools[p]);
        }
        snprintf(k[3], sizeof(k[3]), "%s_limit_source", pools[p]);
        const char *src = json_string_value(json_object_get(host, k[3]));
        /* a limit the API does not know has no source, whatever the field says */
        snprintf(l->source[p], sizeof(l->source[p]), "%s",
                 src && l->limit[p] && strcmp(src, "unknown") ? src : "");
        snprintf(k[3], sizeof(k[3]), "%s_level", pools[p]);
        const char *lv = json_string_value(json_object_get(host, k[3]));
        snprintf(l->level[p], sizeof(l->level[p]), "%s", lv ? lv : "unknown");
        /* how the ETA is known (the pool's trend, a leak's growth, ran out) and the rule of a
         * computed limit: absent from an older collector */
        snprintf(k[3], sizeof(k[3]), "%s_ran_out_ms", pools[p]);
        const json_t *ro = json_object_get(host, k[3]);
        l->ran_out_ms[p] = json_is_integer(ro) && json_integer_value(ro) > 0
                               ? (uint64_t)json_integer_value(ro)
                               : 0;
        snprintf(k[3], sizeof(k[3]), "%s_eta_basis", pools[p]);
        const char *bs = json_string_value(json_object_get(host, k[3]));
        snprintf(l->basis[p], sizeof(l->basis[p]), "%s", bs ? bs : "");
        snprintf(k[3], sizeof(k[3]), "%s_eta_note", pools[p]);
        const char *nt = json_string_value(json_object_get(host, k[3]));
        snprintf(l->note[p], sizeof(l->note[p]), "%s", nt ? nt : "");
        snprintf(k[3], sizeof(k[3]), "%s_eta_range_ms", pools[p]);
        const json_t *rg = json_object_get(host, k[3]);
        for (int e = 0; e < 2; e++) {
            const json_t *v = json_array_get(rg, (size_t)e);
            l->range_ms[p][e] = json_is_integer(v) && json_integer_value(v) > 0
                                    ? (uint64_t)json_integer_value(v)
                                    : 0;
        }
        snprintf(k[3], sizeof(k[3]), "%s_limit_detail", pools[p]);
        const char *dt = json_string_value(json_object_get(host, k[3]));
        snprintf(l->detail[p], sizeof(l->detail[p]), "%s", dt && l->limit[p] ? dt : "");
    }
    l->loading = json_is_true(json_object_get(host, "loading_history"));
    l->have = 1;
    return 0;
}

void pw_top_table_close(pw_top_table_t *t)
{
    if (t == NULL)
        return;
    pw_free(t->rows);
    t->rows = NULL;
    t->n_rows = 0;
}

/* ---- view ---------------------------------------------------------------------------------- */

static const char *sort_names[] = {"tag",   "allocs",    "frees",     "diff",
                                   "bytes", "per_alloc", "held_bytes"};
static const char *sort_titles[] = {"Tag", "Allocs", "Frees", "Diff", "Bytes", "Per Alloc", "Held"};
static const char *pool_names[] = {"both", "nonpaged", "paged"};

/* Tags sort ascending by default, numbers descending (largest first), as in poolmon. */
static int view_ascending(const pw_top_view_t *v)
{
    int asc = v->sort == PW_TOP_SORT_TAG;
    return v->reverse ? !asc : asc;
}

static int has_change(pw_top_sort_t s)
{
    return s != PW_TOP_SORT_TAG && s != PW_TOP_SORT_PER_ALLOC;
}

int pw_top_query(const pw_top_view_t *v, const char *host, char *out, size_t size)
{
    if (size == 0)
        return PW_ETOOBIG;
    out[0] = '\0';
    if (snprintf(out, size, "/api/v1/hosts/") >= (int)size || pw_url_escape(out, size, host) < 0)
        return PW_ETOOBIG;
    size_t n = strlen(out);
    int w = snprintf(out + n, size - n, "/pool?sort=%s&by_change=%d&order=%s&pool=%s",
                     sort_names[v->sort], v->by_change && has_change(v->sort),
                     view_ascending(v) ? "asc" : "desc", pool_names[v->pools]);
    if (w < 0 || (size_t)w >= size - n)
        return PW_ETOOBIG;
    if (v->session != PW_TOP_SESSION_EVERY) {
        n = strlen(out);
        if (v->session >= 0)
            w = snprintf(out + n, size - n, "&session=%lld", (long long)v->session);
        else
            w = snprintf(out + n, size - n, "&session=all");
        if (w < 0 || (size_t)w >= size - n)
            return PW_ETOOBIG;
    }
    const char *pats[2] = {v->include, v->exclude};
    const char *names[2] = {"include", "exclude"};
    for (int k = 0; k < 2; k++) {
        if (pats[k][0] == '\0')
            continue;
        n = strlen(out);
        w = snprintf(out + n, size - n, "&%s=", names[k]);
        if (w < 0 || (size_t)w >= size - n || pw_url_escape(out, size, pats[k]) < 0)
            return PW_ETOOBIG;
    }
    return 0;
}

int pw_top_key(pw_top_view_t *v, int key)
{
    pw_top_sort_t s;
    switch (key) {
    case '?':
        v->help = !v->help;
        return PW_TOP_KEY_CHANGED;
    case 'q':
    case 'Q':
        return PW_TOP_KEY_QUIT;
    case 'p':
    case 'P':
        v->pools = (pw_top_pools_t)((v->pools + 1) % 3);
        return PW_TOP_KEY_CHANGED;
    case 'b':
    case 'B':
        s = PW_TOP_SORT_BYTES;
        break;
    case 'm':
    case 'M':
        s = PW_TOP_SORT_PER_ALLOC;
        break;
    case 't':
    case 'T':
        s = PW_TOP_SORT_TAG;
        break;
    case 'a':
    case 'A':
        s = PW_TOP_SORT_ALLOCS;
        break;
    case 'f':
    case 'F':
        s = PW_TOP_SORT_FREES;
        break;
    case 'd':
    case 'D':
        s = PW_TOP_SORT_DIFF;
        break;
    case 's':
    case 'S':
        v->by_change = !v->by_change;
        return PW_TOP_KEY_CHANGED;
    case 'e':
    case 'E':
        v->totals = !v->totals;
        return PW_TOP_KEY_CHANGED;
    case 'l':
    case 'L':
        v->highlight = !v->highlight;
        return PW_TOP_KEY_CHANGED;
    case 'i':
    case 'I':
        return PW_TOP_KEY_INCLUDE;
    case 'x':
    case 'X':
        return PW_TOP_KEY_EXCLUDE;
    case 'n':
    case 'N':
        return PW_TOP_KEY_SESSION;
    case 'c':
    case 'C':
        s = PW_TOP_SORT_HELD;
        break;
    default:
        return PW_TOP_KEY_NONE;
    }
    if (v->sort == s) {
        v->reverse = !v->reverse;
    } else {
        v->sort = s;
        v->reverse = 0;
    }
    return PW_TOP_KEY_CHANGED;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void pw_top_next_session(pw_top_view_t *v, const pw_top_table_t *t)
{
    if (v->session < 0 && t != NULL) { /* a table of every session: learn them */
        v->n_sessions = 0;
        for (size_t i = 0; i < t->n_rows; i++) {
            int64_t s = t->rows[i].session;
            if (s < 0)
                continue;
            size_t k = 0;
            while (k < v->n_sessions && v->sessions[k] != (uint32_t)s)
                k++;
            if (k == v->n_sessions && v->n_sessions < sizeof(v->sessions) / sizeof(v->sessions[0]))
                v->sessions[v->n_sessions++] = (uint32_t)s;
        }
        qsort(v->sessions, v->n_sessions, sizeof(v->sessions[0]), cmp_u32);
    }
    if (v->session == PW_TOP_SESSION_EVERY) {
        v->session = PW_TOP_SESSION_ALL;
        return;
    }
    size_t k = 0;
    if (v->session >= 0)
        while (k < v->n_sessions && v->sessions[k] <= (uint32_t)v->session)
            k++;
    v->session = k < v->n_sessions ? (int64_t)v->sessions[k] : PW_TOP_SESSION_EVERY;
}

int pw_top_match(const char *patterns, const char *tag)
{
    return pw_tagpat_list_match_str(patterns, tag, strlen(tag));
}

static int row_visible(const pw_top_view_t *v, const pw_top_row_t *r)
{
    if (v->pools == PW_TOP_POOL_NONPAGED && r->pool != PW_POOL_NONPAGED)
        return 0;
    if (v->pools == PW_TOP_POOL_PAGED && r->pool == PW_POOL_NONPAGED)
        return 0;
    if (v->session != PW_TOP_SESSION_EVERY &&
        (r->pool != PW_POOL_SESSION || (v->session >= 0 && r->session != v->session)))
        return 0;
    if (v->include[0] && !pw_top_match(v->include, r->tag))
        return 0;
    if (v->exclude[0] && pw_top_match(v->exclude, r->tag))
        return 0;
    return 1;
}

static int64_t sort_key(const pw_top_view_t *v, const pw_top_row_t *r, uint64_t *ukey)
{
    int ch = v->by_change;
    switch (v->sort) {
    case PW_TOP_SORT_ALLOCS:
        if (ch)
            return r->allocs_change;
        *ukey = r->allocs;
        break;
    case PW_TOP_SORT_FREES:
        if (ch)
            return r->frees_change;
        *ukey = r->frees;
        break;
    case PW_TOP_SORT_DIFF:
        if (ch)
            return r->diff_change;
        *ukey = r->diff;
        break;
    case PW_TOP_SORT_BYTES:
        if (ch)
            return r->bytes_change;
        *ukey = r->bytes;
        break;
    case PW_TOP_SORT_PER_ALLOC:
        *ukey = r->per_alloc;
        break;
    case PW_TOP_SORT_HELD:
        if (ch)
            return r->held_bytes_change;
        *ukey = r->held_bytes;
        break;
    case PW_TOP_SORT_TAG:
        *ukey = 0;
        break;
    }
    return INT64_MIN; /* use ukey */
}

static const pw_top_view_t *cmp_view; /* qsort has no context argument in C11 */

static int cmp_rows(const void *a, const void *b)
{
    const pw_top_row_t *x = *(const pw_top_row_t *const *)a;
    const pw_top_row_t *y = *(const pw_top_row_t *const *)b;
    const pw_top_view_t *v = cmp_view;
    int c = 0;
    if (v->sort != PW_TOP_SORT_TAG) {
        uint64_t ux = 0, uy = 0;
        int64_t sx = sort_key(v, x, &ux), sy = sort_key(v, y, &uy);
        if (sx != INT64_MIN || sy != INT64_MIN)
            c = sx < sy ? -1 : sx > sy;
        else
            c = ux < uy ? -1 : ux > uy;
        if (!view_ascending(v))
            c = -c;
        if (c != 0)
            return c;
        c = strcmp(x->tag, y->tag); /* ties: by tag, then nonpaged first */
    } else {
        c = strcmp(x->tag, y->tag);
        if (!view_ascending(v))
            c = -c;
    }
    if (c != 0)
        return c;
    if (x->pool != y->pool)
        return y->pool - x->pool;
    return x->session < y->session ? -1 : x->session > y->session; /* sessions ascending */
}

/* ---- rendering ----------------------------------------------------------------------------- */

static int add_line(pw_top_lines_t *l, int width, unsigned char attr, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 4, 5)));

static int add_line(pw_top_lines_t *l, int width, unsigned char attr, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (width > 0 && (size_t)width < sizeof(buf))
        buf[width] = '\0';
    char **nt = pw_realloc(l->text, (l->n + 1) * sizeof(char *));
    if (nt == NULL)
        return PW_ENOMEM;
    l->text = nt;
    unsigned char *na = pw_realloc(l->attr, l->n + 1);
    if (na == NULL)
        return PW_ENOMEM;
    l->attr = na;
    l->text[l->n] = pw_strdup(buf);
    if (l->text[l->n] == NULL)
        return PW_ENOMEM;
    l->attr[l->n++] = attr;
    return 0;
}

void pw_top_lines_close(pw_top_lines_t *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        pw_free(l->text[i]);
    pw_free(l->text);
    pw_free(l->attr);
    memset(l, 0, sizeof(*l));
}

static int level_rank(const char *level)
{
    return strcmp(level, "critical") == 0 ? 3
           : strcmp(level, "warn") == 0   ? 2
           : strcmp(level, "ok") == 0     ? 1
                                          : 0;
}

/* One pool of the Limit line: "118.5 MiB of 128.0 MiB (92.6%, computed, critical)", or
 * "40.0 MiB, limit unknown". */
static void limit_cell(const pw_top_limits_t *l, int p, uint64_t used, char *out, size_t size)
{
    char u[24], lim[24];
    pw_cli_format_bytes(used, u, sizeof(u));
    if (l->limit[p] == 0) {
        snprintf(out, size, "%s, limit unknown", u);
        return;
    }
    pw_cli_format_bytes(l->limit[p], lim, sizeof(lim));
    snprintf(out, size, "%s of %s (%.1f%%, %s, %s)", u, lim,
             (double)used * 100.0 / (double)l->limit[p], l->source[p][0] ? l->source[p] : "-",
             l->level[p]);
}

/* The Limit line: each pool used vs its limit, the limit's source and level, and when the
 * most urgent pool (highest level, then nearest) runs out, or when it ran out: the question
 * poolwatch answers. Under it, the rule of a computed limit and how that ETA is known (the
 * pool's trend, a leak's growth alone with its range), or why there is none. */
static int limit_line(pw_top_lines_t *out, int width, const pw_top_table_t *t)
{
    const pw_top_limits_t *l = &t->limits;
    uint64_t used[2] = {t->nonpaged ? t->nonpaged : l->used[0], t->paged ? t->paged : l->used[1]};
    char n[96], p[96], eta[64] = "ETA: - (no pool grows towards a known limit)";
    /* a backlog streaming in (a backfill, a resent spool): the table, level and ETA are of an
     * old sample (the Host line's time), so neither is given as if it were now */
    if (l->loading)
        return add_line(out, width, 0, " Limit: loading history (the table is of %s)",
                        t->timestamp_ms ? "the newest sample so far" : "no sample yet");
    limit_cell(l, 0, used[0], n, sizeof(n));
    limit_cell(l, 1, used[1], p, sizeof(p));
    int w = -1;
    for (int k = 0; k < 2; k++) {
        if (l->eta_ms[k] == 0)
            continue;
        int c = w < 0 ? 1 : level_rank(l->level[k]) - level_rank(l->level[w]);
        if (c > 0 || (c == 0 && l->eta_ms[k] < l->eta_ms[w]))
            w = k;
    }
    const char *pn[2] = {"N", "P"};
    if (w >= 0) {
        char ts[32];
        pw_cli_format_time(l->ran_out_ms[w] ? l->ran_out_ms[w] : l->eta_ms[w], ts, sizeof(ts));
        snprintf(eta, sizeof(eta), "ETA: %s %s%s", pn[w], l->ran_out_ms[w] ? "ran out " : "", ts);
    } else if ((l->limit[0] && l->note[0][0] != '\0') || (l->limit[1] && l->note[1][0] != '\0')) {
        snprintf(eta, sizeof(eta), "ETA: -"); /* the line under it says why */
    }
    int rc = add_line(out, width, 0, " Limit N: %s  P: %s  %s", n, p, eta);
    /* the line under it: the limits' rules, then the shown ETA's basis (or the reason of the
     * first pool with a known limit) */
    char why[512];
    size_t len = 0;
    why[0] = '\0';
    for (int k = 0; k < 2; k++)
        if (l->detail[k][0] != '\0' && len < sizeof(why))
            len +=
                (size_t)snprintf(why + len, sizeof(why) - len, "%s%s limit %s: %s", len ? "  " : "",
                                 pn[k], l->source[k][0] ? l->source[k] : "-", l->detail[k]);
    int e = w >= 0 ? w : l->limit[0] ? 0 : l->limit[1] ? 1 : -1;
    if (e >= 0 && l->note[e][0] != '\0' && strcmp(l->basis[e], "ran_out") != 0 &&
        len < sizeof(why)) {
        char rg[96] = "";
        if (strcmp(l->basis[e], "leak") == 0 && l->range_ms[e][0] &&
            l->range_ms[e][0] != l->range_ms[e][1]) {
            char a[32], b[32] = "never";
            pw_cli_format_time(l->range_ms[e][0], a, sizeof(a));
            if (l->range_ms[e][1])
                pw_cli_format_time(l->range_ms[e][1], b, sizeof(b));
            snprintf(rg, sizeof(rg), " (between %s and %s)", a, b);
        }
        len += (size_t)snprintf(why + len, sizeof(why) - len, "%sETA %s%s: %s", len ? "  " : "",
                                pn[e], rg, l->note[e]);
    } else if (e >= 0 && l->ran_out_ms[e] && l->note[e][0] != '\0' && len < sizeof(why)) {
        len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s pool %s", len ? "  " : "",
                                pn[e], l->note[e]);
    }
    if (rc == 0 && why[0] != '\0')
        rc = add_line(out, width, 0, " %s", why);
    return rc;
}

/* KiB as poolmon prints them, or "-" when the API did not give the value. */
static void kb(char *out, size_t size, uint64_t bytes)
{
    if (bytes == 0)
        snprintf(out, size, "-");
    else
        snprintf(out, size, "%" PRIu64 "K", bytes / 1024);
}

static const char *type_word(int pool)
{
    return pool == PW_POOL_NONPAGED ? "Nonp" : pool == PW_POOL_SESSION ? "Sess" : "Paged";
}

/* The Type column of a row: a session's session-pool row is "S:N" (session N). */
static const char *row_type(const pw_top_row_t *r, char *buf, size_t size)
{
    if (r->pool != PW_POOL_SESSION || r->session < 0)
        return type_word(r->pool);
    snprintf(buf, size, "S:%lld", (long long)r->session);
    return buf;
}

/* The Tag column's text in `tw` columns: a longer tag (a Linux allocation site of up to 48
 * bytes, "mlx5/core/steering/dr_ste_v1.c:1234") keeps its end, where the file and line are,
 * after "…", so the columns after it stay aligned. */
static const char *fit_tag(const char *tag, int tw, char *out, size_t size)
{
    size_t n = strlen(tag);
    if (n <= (size_t)tw || tw < 2)
        snprintf(out, size, "%s", tag);
    else
        snprintf(out, size, "\xe2\x80\xa6%s", tag + n - (size_t)(tw - 1));
    return out;
}

/* The Held cell (leading space included) of a table that has the column, else "". */
static void held_cell(const pw_top_table_t *t, uint64_t held, int64_t change, char *out,
                      size_t size)
{
    if (!t->has_held)
        out[0] = '\0';
    else
        snprintf(out, size, " %11" PRIu64 " (%7" PRId64 ")", held, change);
}

int pw_top_render(const pw_top_table_t *t, const pw_top_view_t *v, int width, int height,
                  pw_top_lines_t *out)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    char a[24], b[24], c[24], d[24], e[24], ts[32];
    kb(a, sizeof(a), t->physical_memory);
    kb(b, sizeof(b), t->available);
    pw_cli_format_time(t->timestamp_ms, ts, sizeof(ts));
    rc |= add_line(out, width, 0, " Memory: %9s Avail: %9s   Host: %s  %s", a, b, t->host, ts);
    kb(a, sizeof(a), t->commit);
    kb(b, sizeof(b), t->commit_limit);
    kb(c, sizeof(c), t->commit_peak);
    kb(d, sizeof(d), t->nonpaged);
    kb(e, sizeof(e), t->paged);
    rc |= add_line(out, width, 0, " Commit: %9s Limit: %9s Peak: %9s  Pool N: %9s P: %9s", a, b, c,
                   d, e);
    if (t->limits.have)
        rc |= limit_line(out, width, t);
    if (t->has_agent) { /* the agent's own footprint (AgentFootprint alerts when it grows) */
        kb(a, sizeof(a), t->agent_rss);
        snprintf(b, sizeof(b), "%" PRIu64 ".%01" PRIu64 "s", t->agent_cpu_ms / 1000,
                 t->agent_cpu_ms % 1000 / 100);
        if (t->agent_handles > 0)
            snprintf(c, sizeof(c), "%" PRIu64, t->agent_handles);
        else
            snprintf(c, sizeof(c), "-");
        rc |= add_line(out, width, 0,
                       " Agent:  %9s CPU: %9s Handles: %6s  (poolwatch-agent itself)", a, b, c);
    }
    /* The suspects' big-pool snapshots: a few large blocks, or many small allocations */
    for (size_t i = 0; i < t->n_big; i++) {
        const pw_top_bigpool_t *bp = &t->big[i];
        char tb[32];
        pw_cli_format_time(bp->taken_ms, tb, sizeof(tb));
        if (bp->count == 0) {
            rc |= add_line(out, width, 0,
                           " Big pool %s %s: no block of a page or more (small allocations)  %s",
                           bp->tag, type_word(bp->pool), tb);
            continue;
        }
        pw_cli_format_bytes(bp->bytes, a, sizeof(a));
        pw_cli_format_bytes(bp->largest_bytes, b, sizeof(b));
        pw_cli_format_bytes(bp->smallest_bytes, c, sizeof(c));
        rc |= add_line(out, width, 0,
                       " Big pool %s %s: %" PRIu64 " block(s) of a page or more, %s (largest %s, "
                       "smallest %s)  %s",
                       bp->tag, type_word(bp->pool), bp->count, a, b, c, tb);
    }

    size_t cap = t->n_rows;
    const pw_top_row_t **vis = cap ? pw_calloc(cap, sizeof(*vis)) : NULL;
    if (cap && vis == NULL)
        return PW_ENOMEM;
    size_t nv = 0;
    int tw = 4;
    for (size_t i = 0; i < t->n_rows; i++) {
        if (!row_visible(v, &t->rows[i]))
            continue;
        vis[nv++] = &t->rows[i];
        int l = (int)strlen(t->rows[i].tag);
        if (l > tw)
            tw = l > 32 ? 32 : l;
    }
    cmp_view = v;
    if (nv > 1)
        qsort(vis, nv, sizeof(*vis), cmp_rows);
    char sess_word[40] = "";
    if (v->session == PW_TOP_SESSION_ALL)
        snprintf(sess_word, sizeof(sess_word), "  Session: all");
    else if (v->session >= 0)
        snprintf(sess_word, sizeof(sess_word), "  Session: %lld", (long long)v->session);
    rc |= add_line(out, width, 0,
                   " Sort: %s%s (%s)  Pool: %s%s  Include: %s  Exclude: %s  Rows: %zu/%zu%s%s",
                   sort_titles[v->sort], v->by_change && has_change(v->sort) ? " change" : "",
                   view_ascending(v) ? "asc" : "desc", pool_names[v->pools], sess_word,
                   v->include[0] ? v->include : "*", v->exclude[0] ? v->exclude : "-", nv,
                   t->total_rows, v->note[0] ? "  " : "", v->note);
    rc |= add_line(out, width, 0, "%s", "");
    if (v->help) {
        /* The keys, as docs/cli.md lists them, in place of the table until ? again. */
        static const char *const keys[] = {
            " Keys (either case; ? again to close):",
            "  P       pools shown: both -> nonpaged -> paged (paged includes session)",
            "  B M T   sort by Bytes, Per Alloc, Tag; the same key again reverses the order",
            "  A F D   sort by Allocs, Frees, Diff",
            "  C       sort by Held (Linux: the bytes a slab cache holds, slabtop's cache size)",
            "  S       sort by the change of the current column",
            "  E       Sum lines per pool type",
            "  L       highlight rows that changed",
            "  I / X   include / exclude tag patterns (Nt*,Io??; empty clears)",
            "  N       session pools: every row -> all sessions -> session 0, 1, ... (S:N rows)",
            "  Q       quit",
        };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            rc |= add_line(out, width, i == 0 ? PW_TOP_ATTR_HEADER : 0, "%s", keys[i]);
        pw_free(vis);
        if (rc != 0) {
            pw_top_lines_close(out);
            return PW_ENOMEM;
        }
        return 0;
    }
    /* poolmon /g's column: the driver pooltag.txt maps the tag to (the collector's
     * [analysis] pooltag_file), when the table maps any */
    int drv = 0;
    for (size_t i = 0; i < t->n_rows && !drv; i++)
        drv = t->rows[i].driver[0] != '\0';
    /* Linux hosts: the Held column (the slabs a cache holds) after Bytes (what its objects
     * use), as slabtop shows CACHE SIZE beside OBJ SIZE */
    char hd[64] = "";
    if (t->has_held)
        snprintf(hd, sizeof(hd), " %11s (%7s)", "Held", "");
    rc |= add_line(out, width, PW_TOP_ATTR_HEADER,
                   " %-*s %-5s %10s (%5s) %10s (%5s) %9s (%5s) %11s (%7s)%s %9s%s", tw, "Tag",
                   "Type", "Allocs", "", "Frees", "", "Diff", "", "Bytes", "", hd, "Per Alloc",
                   drv ? "  Mapped_Driver" : "");
    if (v->totals) {
        /* Sums of the visible rows per pool type, changes included. */
        static const int pools[] = {PW_POOL_NONPAGED, PW_POOL_PAGED, PW_POOL_SESSION};
        for (size_t k = 0; k < 3; k++) {
            pw_top_row_t s;
            memset(&s, 0, sizeof(s));
            size_t cnt = 0;
            for (size_t i = 0; i < nv; i++) {
                if (vis[i]->pool != pools[k])
                    continue;
                cnt++;
                s.allocs += vis[i]->allocs;
                s.frees += vis[i]->frees;
                s.diff += vis[i]->diff;
                s.bytes += vis[i]->bytes;
                s.allocs_change += vis[i]->allocs_change;
                s.frees_change += vis[i]->frees_change;
                s.diff_change += vis[i]->diff_change;
                s.bytes_change += vis[i]->bytes_change;
                s.held_bytes += vis[i]->held_bytes;
                s.held_bytes_change += vis[i]->held_bytes_change;
            }
            /* Empty sums only for the types the view shows (poolmon prints both). */
            if (cnt == 0 && (pools[k] == PW_POOL_SESSION || v->pools != PW_TOP_POOL_BOTH))
                continue;
            held_cell(t, s.held_bytes, s.held_bytes_change, hd, sizeof(hd));
            rc |= add_line(out, width, 0,
                           " %-*s %-5s %10" PRIu64 " (%5" PRId64 ") %10" PRIu64 " (%5" PRId64
                           ") %9" PRIu64 " (%5" PRId64 ") %11" PRIu64 " (%7" PRId64 ")%s %9" PRIu64,
                           tw, "Sum", type_word(pools[k]), s.allocs, s.allocs_change, s.frees,
                           s.frees_change, s.diff, s.diff_change, s.bytes, s.bytes_change, hd,
                           pw_per_alloc(s.bytes, s.diff));
        }
    }
    for (size_t i = 0; i < nv && rc == 0; i++) {
        if (height > 0 && out->n >= (size_t)height)
            break;
        const pw_top_row_t *r = vis[i];
        int changed = r->allocs_change || r->frees_change || r->diff_change || r->bytes_change ||
                      r->held_bytes_change;
        char ty[24], tg[sizeof(r->tag) + 4];
        held_cell(t, r->held_bytes, r->held_bytes_change, hd, sizeof(hd));
        rc |= add_line(
            out, width, v->highlight && changed ? PW_TOP_ATTR_HIGHLIGHT : PW_TOP_ATTR_NONE,
            " %-*s %-5s %10" PRIu64 " (%5" PRId64 ") %10" PRIu64 " (%5" PRId64 ") %9" PRIu64
            " (%5" PRId64 ") %11" PRIu64 " (%7" PRId64 ")%s %9" PRIu64 "%s%s",
            tw, fit_tag(r->tag, tw, tg, sizeof(tg)), row_type(r, ty, sizeof(ty)), r->allocs,
            r->allocs_change, r->frees, r->frees_change, r->diff, r->diff_change, r->bytes,
            r->bytes_change, hd, r->per_alloc, r->driver[0] ? "  " : "", r->driver);
    }
    pw_free(vis);
    if (rc != 0) {
        pw_top_lines_close(out);
        return PW_ENOMEM;
    }
    return 0;
}

/* ---- the terminal loop --------------------------------------------------------------------- */

/* Fetches the table for the view. With `raw`, *raw gets the server's document too (the
 * caller's reference; NULL on failure). Returns 0, or an exit code with a message in `msg`. */
static int fetch(const pw_client_t *cl, const char *host, const pw_top_view_t *v, pw_top_table_t *t,
                 json_t **raw, char *msg, size_t msg_size)
{
    if (raw != NULL)
        *raw = NULL;
    char path[2048];
    if (pw_top_query(v, host, path, sizeof(path)) < 0) {
        snprintf(msg, msg_size, "patterns too long");
        return PW_EXIT_USAGE;
    }
    pw_client_resp_t resp;
    pw_diag_t d;
    pw_diag_clear(&d);
    int rc = pw_client_request(cl, "GET", path, NULL, NULL, 0, NULL, NULL, &resp, &d);
    if (rc < 0) {
        snprintf(msg, msg_size, "%.190s", d.msg[0] ? d.msg : pw_strerror(rc));
        return PW_EXIT_SERVER;
    }
    json_t *j = json_loadb(resp.body, resp.body_len, 0, NULL);
    int ex = pw_cli_exit_for_status(resp.status);
    if (ex != 0) {
        /* as every command says it: method, path, status, the API's code and message */
        const json_t *e = json_object_get(j, "error");
        const char *m = json_string_value(json_object_get(e, "message"));
        const char *code = json_string_value(json_object_get(e, "code"));
        snprintf(msg, msg_size, "GET %.300s: HTTP %d%s%s%s%.150s", path, resp.status,
                 code ? " " : "", code ? code : "", m ? ": " : "", m ? m : "");
    } else if (j == NULL || pw_top_table_from_json(j, t, &d) < 0) {
        snprintf(msg, msg_size, "bad pool table from the server%s%.150s", j ? ": " : "",
                 j ? d.msg : "");
        ex = PW_EXIT_SERVER;
    }
    if (ex == 0 && raw != NULL)
        *raw = json_incref(j);
    json_decref(j);
    pw_client_resp_close(&resp);
    return ex;
}

typedef int (*top_extra_fn)(const json_t *doc, pw_top_table_t *t, pw_diag_t *diag);

/* GET `prefix` + the escaped host, its 200 answer handed to `take`. The lines it feeds only add
 * to the screen: when the request fails they are left out. */
static void fetch_extra(const pw_client_t *cl, const char *prefix, const char *host,
                        top_extra_fn take, pw_top_table_t *t)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s", prefix);
    if (pw_url_escape(path, sizeof(path), host) < 0)
        return;
    pw_client_resp_t resp;
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_client_request(cl, "GET", path, NULL, NULL, 0, NULL, NULL, &resp, &d) < 0)
        return;
    if (resp.status == 200) {
        json_t *j = json_loadb(resp.body, resp.body_len, 0, NULL);
        if (j != NULL)
            (void)take(j, t, &d);
        json_decref(j);
    }
    pw_client_resp_close(&resp);
}

/* The host's suspects' big-pool snapshots (GET /api/v1/leaks?host=HOST) into t->big. */
static void fetch_big_pool(const pw_client_t *cl, const char *host, pw_top_table_t *t)
{
    t->n_big = 0;
    fetch_extra(cl, "/api/v1/leaks?host=", host, pw_top_bigpool_from_json, t);
}

/* The pools' limits, sources, levels and ETAs (GET /api/v1/hosts/HOST) into t->limits. */
static void fetch_limits(const pw_client_t *cl, const char *host, pw_top_table_t *t)
{
    memset(&t->limits, 0, sizeof(t->limits));
    fetch_extra(cl, "/api/v1/hosts/", host, pw_top_limits_from_json, t);
}

/* Asks the agent for live mode; on refusal the note says why and top goes on without it. */
static void ask_live(const pw_client_t *cl, const char *host, pw_top_view_t *v)
{
    char path[1024] = "/api/v1/hosts/";
    if (pw_url_escape(path, sizeof(path), host) < 0 || strlen(path) + 10 >= sizeof(path))
        return;
    strcat(path, "/commands");
    char body[64];
    int n =
        snprintf(body, sizeof(body), "{\"kind\":\"live\",\"duration_ms\":%u}", LIVE_DURATION_MS);
    pw_client_resp_t resp;
    pw_diag_t d;
    pw_diag_clear(&d);
    int rc = pw_client_request(cl, "POST", path, "application/json", body, (size_t)n, NULL, NULL,
                               &resp, &d);
    if (rc < 0)
        snprintf(v->note, sizeof(v->note), "live mode not set: %.200s", d.msg);
    else if (resp.status == 401 || resp.status == 403)
        snprintf(v->note, sizeof(v->note),
                 "live mode refused (admin token needed): refreshing at the agent's interval");
    else if (resp.status == 503)
        snprintf(v->note, sizeof(v->note), "agent not connected: showing its last sample");
    else if (resp.status >= 300)
        snprintf(v->note, sizeof(v->note), "live mode not set: HTTP %d", resp.status);
    else
        snprintf(v->note, sizeof(v->note), "[live]");
    pw_client_resp_close(&resp);
}

static int top_loop(const pw_client_t *cl, const char *host, pw_top_view_t *v, pw_top_table_t *t)
{
    if (pw_term_open() != 0) {
        fprintf(stderr, "poolwatch top: this console cannot show the screen (no virtual "
                        "terminal support): use --once\n");
        return PW_EXIT_USAGE;
    }
    uint64_t last_fetch = pw_clock_mono_us() / 1000u, last_live = last_fetch, last_big = last_fetch;
    char live_note[sizeof(v->note)];
    snprintf(live_note, sizeof(live_note), "%s", v->note);
    for (;;) {
        pw_top_lines_t lines;
        int cols, rows;
        pw_term_size(&cols, &rows);
        if (pw_top_render(t, v, cols, rows, &lines) == 0) {
            pw_term_draw(&lines);
            pw_top_lines_close(&lines);
        }
        int ch = pw_term_key(REFRESH_MS);
        int action = ch == PW_TERM_KEY_NONE ? PW_TOP_KEY_NONE : pw_top_key(v, ch);
        if (action == PW_TOP_KEY_QUIT)
            break;
        if (action == PW_TOP_KEY_INCLUDE)
            pw_term_prompt("Include tags (e.g. Nt*,Io??; empty = all): ", v->include,
                           sizeof(v->include));
        if (action == PW_TOP_KEY_EXCLUDE)
            pw_term_prompt("Exclude tags (e.g. Ntf?; empty = none): ", v->exclude,
                           sizeof(v->exclude));
        if (action == PW_TOP_KEY_SESSION)
            pw_top_next_session(v, t);
        uint64_t now = pw_clock_mono_us() / 1000u;
        if (now - last_live >= LIVE_RENEW_MS && strcmp(live_note, "[live]") == 0) {
            ask_live(cl, host, v);
            snprintf(live_note, sizeof(live_note), "%s", v->note);
            last_live = now;
        }
        if (action != PW_TOP_KEY_NONE || now - last_fetch >= REFRESH_MS) {
            pw_top_table_t nt;
            char msg[512];
            if (fetch(cl, host, v, &nt, NULL, msg, sizeof(msg)) == 0) {
                if (now - last_big >= BIGPOOL_MS) {
                    fetch_big_pool(cl, host, &nt);
                    fetch_limits(cl, host, &nt);
                    last_big = now;
                } else {
                    memcpy(nt.big, t->big, sizeof(nt.big));
                    nt.n_big = t->n_big;
                    nt.limits = t->limits;
                }
                pw_top_table_close(t);
                *t = nt;
                snprintf(v->note, sizeof(v->note), "%s", live_note);
            } else {
                /* Keep the last table on screen and say what went wrong. */
                snprintf(v->note, sizeof(v->note), "%.*s", (int)sizeof(v->note) - 1, msg);
            }
            last_fetch = now;
        }
    }
    pw_term_close();
    return PW_EXIT_OK;
}

int pw_cmd_top(pw_cli_t *cli)
{
    const char *host = NULL;
    int once = 0, no_live = 0;
    for (int i = 1; i < cli->argc; i++) {
        if (strcmp(cli->argv[i], "--once") == 0) {
            once = 1;
        } else if (strcmp(cli->argv[i], "--no-live") == 0) {
            no_live = 1;
        } else if (host == NULL && cli->argv[i][0] != '-') {
            host = cli->argv[i];
        } else {
            static const char *const opts[] = {"--once", "--no-live", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts,
                                   "poolwatch top HOST [--once] [--no-live]");
        }
    }
    if (host == NULL)
        return pw_cli_bad_args(cli, NULL, "HOST", NULL, "poolwatch top HOST [--once] [--no-live]");
    pw_client_t cl;
    int ex = pw_cli_client(cli, &cl);
    if (ex != 0)
        return ex;
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_table_t t;
    char msg[512];
    /* The first fetch happens before the screen is taken, so a wrong host or token is a plain
     * error message with its exit code. */
    json_t *raw = NULL;
    ex = fetch(&cl, host, &v, &t, cli->json ? &raw : NULL, msg, sizeof(msg));
    if (ex != 0) {
        fprintf(cli->err, "poolwatch top: %s\n", msg);
        return ex;
    }
    if (cli->json) {
        /* One snapshot for scripts: the server's pool table (GET /api/v1/hosts/{host}/pool, the
         * document `top` draws), whether or not --once is given. */
        pw_cli_print_json(cli, raw);
        json_decref(raw);
        pw_top_table_close(&t);
        return PW_EXIT_OK;
    }
    fetch_big_pool(&cl, host, &t);
    fetch_limits(&cl, host, &t);
    if (once || !pw_term_is_tty() || cli->out != stdout) {
        /* Not a terminal: one screen as text (like top -b -n 1). */
        pw_top_lines_t lines;
        if (pw_top_render(&t, &v, 0, 0, &lines) == 0) {
            for (size_t i = 0; i < lines.n; i++)
                fprintf(cli->out, "%s\n", lines.text[i]);
            pw_top_lines_close(&lines);
        }
        pw_top_table_close(&t);
        return PW_EXIT_OK;
    }
    if (!no_live)
        ask_live(&cl, host, &v);
    ex = top_loop(&cl, host, &v, &t);
    pw_top_table_close(&t);
    return ex;
}
