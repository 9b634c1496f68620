/* cmd_query.c: the listing commands (hosts, tags, leaks, alerts, series, lookup) and their
 * text formats. Each formatter reads the JSON of one endpoint of docs/openapi.json. */
#include "cli.h"
#include "clock.h"
#include "term.h"

#include <inttypes.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include <unistd.h>

/* ---- JSON helpers: missing or null values print as "-" ------------------------------------ */

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

/* The string at `key`, "" when absent (fields an older agent does not send). */
static const char *jstr0(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static int jhas_num(const json_t *o, const char *key)
{
    return json_is_number(json_object_get(o, key));
}

static double jdbl(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* 2^64: a double at or above it has no uint64 value (the conversion is undefined behaviour). */
#define U64_LIMIT 18446744073709551616.0

/* A double as uint64, clamped to [0, UINT64_MAX]. pw_cli_call refuses responses with such
 * numbers first (pw_cli_json_check_numbers); the clamp keeps the formatters defined on any
 * document they are handed. */
static uint64_t dbl_u64(double v)
{
    if (!(v > 0))
        return 0;
    return v >= U64_LIMIT ? UINT64_MAX : (uint64_t)v;
}

static uint64_t ju64(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return json_integer_value(v) < 0 ? 0 : (uint64_t)json_integer_value(v);
    if (json_is_real(v))
        return dbl_u64(json_real_value(v));
    return 0;
}

/* Appends ".key" or "[i]" to the path in where[0..*len), cut at the buffer's end. */
static void path_push(char *where, size_t size, size_t *len, const char *key, size_t index)
{
    if (*len >= size)
        return;
    int n = key ? snprintf(where + *len, size - *len, "%s%s", *len ? "." : "", key)
                : snprintf(where + *len, size - *len, "[%zu]", index);
    *len = n < 0 ? *len : (*len + (size_t)n < size ? *len + (size_t)n : size - 1);
}

static int check_numbers(json_t *j, char *where, size_t size, size_t len, double *bad)
{
    if (json_is_real(j)) {
        double v = json_real_value(j);
        if (v >= U64_LIMIT || v <= -U64_LIMIT) {
            *bad = v;
            return PW_EPARSE;
        }
        return 0;
    }
    size_t i;
    const char *key;
    json_t *child;
    if (json_is_object(j)) {
        json_object_foreach(j, key, child)
        {
            size_t l = len;
            path_push(where, size, &l, key, 0);
            if (check_numbers(child, where, size, l, bad) < 0)
                return PW_EPARSE;
            where[len] = '\0';
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, child)
        {
            size_t l = len;
            path_push(where, size, &l, NULL, i);
            if (check_numbers(child, where, size, l, bad) < 0)
                return PW_EPARSE;
            where[len] = '\0';
        }
    }
    return 0;
}

int pw_cli_json_check_numbers(json_t *root, char *where, size_t where_size, double *bad)
{
    char scratch[1];
    if (where == NULL || where_size == 0) {
        where = scratch;
        where_size = sizeof(scratch);
    }
    where[0] = '\0';
    double b = 0;
    int rc = check_numbers(root, where, where_size, 0, &b);
    if (bad != NULL)
        *bad = b;
    return rc;
}

static void fmt_bytes_or_dash(const json_t *o, const char *key, char *out, size_t size)
{
    if (jhas_num(o, key))
        pw_cli_format_bytes(ju64(o, key), out, size);
    else
        snprintf(out, size, "-");
}

static void fmt_time_or_dash(const json_t *o, const char *key, char *out, size_t size)
{
    if (jhas_num(o, key))
        pw_cli_format_time(ju64(o, key), out, size);
    else
        snprintf(out, size, "-");
}

static void fmt_pct_or_dash(const json_t *o, const char *key, char *out, size_t size)
{
    if (jhas_num(o, key))
        snprintf(out, size, "%.1f%%", jdbl(o, key) * 100.0);
    else
        snprintf(out, size, "-");
}

/* A pool limit and its ratio: "-" when the limit is unknown (null since the API says so; a 0
 * from an older collector means the same), never "0 B" / "0.0%", which read as healthy. */
static void fmt_limit(const json_t *o, const char *limit_key, const char *ratio_key, char *lim,
                      size_t lim_size, char *pct, size_t pct_size)
{
    if (!jhas_num(o, limit_key) || ju64(o, limit_key) == 0) {
        snprintf(lim, lim_size, "-");
        snprintf(pct, pct_size, "-");
        return;
    }
    pw_cli_format_bytes(ju64(o, limit_key), lim, lim_size);
    fmt_pct_or_dash(o, ratio_key, pct, pct_size);
}

/* A pool's ETA cell from PREFIX_eta_ms and PREFIX_ran_out_ms: the time it runs out, "ran out
 * MM-DD HH:MMZ" when it already did (the time it reached its limit), or "-". */
static void fmt_eta_cell(const json_t *o, const char *prefix, char *out, size_t size)
{
    char k[48], t[32];
    snprintf(k, sizeof(k), "%s_ran_out_ms", prefix);
    if (jhas_num(o, k)) {
        pw_cli_format_time(ju64(o, k), t, sizeof(t));
        /* "2026-12-02 01:26:03Z" -> "ran out 12-02 01:26Z": the column keeps its 21 */
        if (strlen(t) >= 20)
            snprintf(out, size, "ran out %.5s %.5sZ", t + 5, t + 11);
        else
            snprintf(out, size, "ran out %s", t);
        return;
    }
    snprintf(k, sizeof(k), "%s_eta_ms", prefix);
    fmt_time_or_dash(o, k, out, size);
}

/* The line under a row that says how its pool's ETA is known when it is not the pool's own
 * trend: the leak's growth alone with its range and how little it rests on, when the pool ran
 * out, or (owed: a host or leak whose limit is known and that has a suspect) why there is none.
 * label: "" or "nonpaged " (hosts). */
static void eta_note_line(const json_t *o, const char *prefix, const char *label, int owed,
                          FILE *out)
{
    char k[48], eta[32];
    snprintf(k, sizeof(k), "%s_eta_basis", prefix);
    const char *basis = jstr0(o, k);
    snprintf(k, sizeof(k), "%s_eta_note", prefix);
    const char *note = jstr0(o, k);
    if (strcmp(basis, "leak") == 0) {
        snprintf(k, sizeof(k), "%s_eta_ms", prefix);
        fmt_time_or_dash(o, k, eta, sizeof(eta));
        snprintf(k, sizeof(k), "%s_eta_range_ms", prefix);
        const json_t *rg = json_object_get(o, k);
        char soon[32] = "-", late[32] = "never";
        if (json_is_integer(json_array_get(rg, 0)))
            pw_cli_format_time((uint64_t)json_integer_value(json_array_get(rg, 0)), soon,
                               sizeof(soon));
        if (json_is_integer(json_array_get(rg, 1)))
            pw_cli_format_time((uint64_t)json_integer_value(json_array_get(rg, 1)), late,
                               sizeof(late));
        if (strcmp(soon, late) == 0) /* one step (2 screens): no range to give */
            fprintf(out, "  %sETA %s %s\n", label, eta, note);
        else
            fprintf(out, "  %sETA %s (between %s and %s) %s\n", label, eta, soon, late, note);
    } else if (strcmp(basis, "ran_out") == 0 && note[0] != '\0') {
        fprintf(out, "  %s%s%s\n", label, label[0] ? "pool " : "", note);
    } else if (strcmp(basis, "pool") != 0 && note[0] != '\0' && owed) {
        fprintf(out, "  %s%s%s\n", label, label[0] ? "pool: " : "", note);
    }
}

/* The array under `key`, or NULL when the document does not have one. */
static const json_t *jarr(const json_t *root, const char *key)
{
    const json_t *a = json_object_get(root, key);
    return json_is_array(a) ? a : NULL;
}

/* ---- formatters --------------------------------------------------------------------------- */

/* A host's connection (the API's `connection`, as the dashboard tells them apart): streaming,
 * stopped (its agent said goodbye), silent, imported, disconnected; an older collector's
 * `connected` as yes/no; "-" when neither. */
static const char *conn_word(const json_t *h)
{
    const char *c = json_string_value(json_object_get(h, "connection"));
    if (c != NULL)
        return c;
    const json_t *b = json_object_get(h, "connected");
    return json_is_boolean(b) ? (json_is_true(b) ? "yes" : "no") : "-";
}

/* A limit's rule without the source word the SOURCE column already says ("configured: 430
 * MB" of a configured limit reads "430 MB"). */
static const char *rule_text(const json_t *h)
{
    const char *det = jstr0(h, "nonpaged_limit_detail"), *src = jstr(h, "nonpaged_limit_source");
    size_t n = strlen(src);
    if (strncmp(det, src, n) == 0 && det[n] == ':' && det[n + 1] == ' ')
        det += n + 2;
    return det;
}

/* After the table, the rules the nonpaged limits come from ("Windows Server 2003 x86 with /3GB:
 * 128 MB", as the dashboard and the import say them; the API's nonpaged_limit_detail), each
 * once with the hosts it holds for (up to 4 named): SOURCE alone says only "computed". */
static void limit_rules(const json_t *hosts, FILE *out)
{
    size_t n = json_array_size(hosts), said = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(hosts, i);
        const char *det = rule_text(h), *src = jstr(h, "nonpaged_limit_source");
        if (det[0] == '\0' || !jhas_num(h, "nonpaged_limit_bytes") ||
            ju64(h, "nonpaged_limit_bytes") == 0)
            continue;
        size_t k = 0; /* said already, at its first host */
        for (; k < i; k++) {
            const json_t *o = json_array_get(hosts, k);
            if (jhas_num(o, "nonpaged_limit_bytes") && ju64(o, "nonpaged_limit_bytes") != 0 &&
                strcmp(rule_text(o), det) == 0 &&
                strcmp(jstr(o, "nonpaged_limit_source"), src) == 0)
                break;
        }
        if (k < i)
            continue;
        if (said++ == 0)
            fputs("nonpaged limits (SOURCE and its rule):\n", out);
        fprintf(out, "  %s: %s: ", src, det);
        size_t count = 0;
        for (size_t m = i; m < n; m++) {
            const json_t *o = json_array_get(hosts, m);
            if (!jhas_num(o, "nonpaged_limit_bytes") || ju64(o, "nonpaged_limit_bytes") == 0 ||
                strcmp(rule_text(o), det) != 0 ||
                strcmp(jstr(o, "nonpaged_limit_source"), src) != 0)
                continue;
            if (count < 4)
                fprintf(out, "%s%s", count ? ", " : "", jstr(o, "name"));
            count++;
        }
        if (count > 4)
            fprintf(out, " and %zu more", count - 4);
        fputc('\n', out);
    }
}

int pw_fmt_hosts(const json_t *root, FILE *out)
{
    const json_t *hosts = jarr(root, "hosts");
    if (hosts == NULL)
        return PW_EPARSE;
    /* Long names (Linux OS strings, FQDNs) are cut with "…": the columns stay aligned. */
    /* SOURCE: where the nonpaged limit comes from (the agent reported it, computed from the
     * Windows rule table or MemTotal, registry, configured or given at import); the rule
     * itself goes on a line under the host, as does how its ETA is known when that is not the
     * pool's own trend. */
    fprintf(out, "%-20s %-14s %-12s %11s %11s %-10s %6s %-8s %-21s %11s %8s %s\n", "HOST", "OS",
            "CONN", "NONPAGED", "NP LIMIT", "SOURCE", "NP%", "LEVEL", "NP ETA", "PAGED", "SUSPECTS",
            "LAST SEEN");
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        char np[24], lim[24], pct[16], eta[32], pg[24], seen[32], name[96], os[64], sus[40],
            num[24], src[48], conn[48];
        fmt_bytes_or_dash(h, "nonpaged_bytes", np, sizeof(np));
        fmt_limit(h, "nonpaged_limit_bytes", "nonpaged_ratio", lim, sizeof(lim), pct, sizeof(pct));
        pw_cli_fit(strcmp(lim, "-") == 0 ? "-" : jstr(h, "nonpaged_limit_source"), 10, 0, src,
                   sizeof(src));
        fmt_eta_cell(h, "nonpaged", eta, sizeof(eta));
        fmt_bytes_or_dash(h, "paged_bytes", pg, sizeof(pg));
        fmt_time_or_dash(h, "last_seen_ms", seen, sizeof(seen));
        const char *level = jstr(h, "nonpaged_level");
        /* a backlog streaming in (a backfill, a resent spool): its level and ETA are of its
         * newest sample so far (LAST SEEN), not of now */
        int loading = json_is_true(json_object_get(h, "loading_history"));
        /* said Hello, sent no sample yet: its zeros are not a pool of 0 B, nor 1970 */
        int nothing = jhas_num(h, "last_seen_ms") && ju64(h, "last_seen_ms") == 0;
        if (loading) {
            snprintf(eta, sizeof(eta), "loading history");
            level = "loading";
        } else if (nothing) {
            snprintf(np, sizeof(np), "-");
            snprintf(pg, sizeof(pg), "-");
            snprintf(pct, sizeof(pct), "-");
            snprintf(eta, sizeof(eta), "-");
            snprintf(seen, sizeof(seen), "no sample yet");
            level = "-";
        }
        snprintf(num, sizeof(num), "%" PRIu64, ju64(h, "suspects"));
        fprintf(out, "%s %s %s %11s %11s %s %6s %-8s %-21s %11s %s %s\n",
                pw_cli_fit(jstr(h, "name"), 20, 0, name, sizeof(name)),
                pw_cli_fit(jstr(h, "os"), 14, 0, os, sizeof(os)),
                pw_cli_fit(conn_word(h), 12, 0, conn, sizeof(conn)), np, lim, src, pct, level, eta,
                pg, pw_cli_fit(num, 8, 1, sus, sizeof(sus)), seen);
        if (!loading && !nothing)
            eta_note_line(h, "nonpaged", "nonpaged ", strcmp(lim, "-") != 0 && ju64(h, "suspects"),
                          out);
    }
    limit_rules(hosts, out);
    return 0;
}

int pw_fmt_tags(const json_t *root, int fleet, FILE *out)
{
    const json_t *tags = jarr(root, "tags");
    if (tags == NULL)
        return PW_EPARSE;
    if (fleet)
        fprintf(out, "%-8s %-8s %6s %11s %11s %11s %11s %11s  %s\n", "TAG", "TYPE", "HOSTS",
                "TOTAL", "MIN", "P50", "P90", "MAX", "TOP HOSTS");
    else
        fprintf(out, "%-8s %-8s %6s %11s  %-16s %s\n", "TAG", "TYPE", "HOSTS", "TOTAL", "DRIVER",
                "DESCRIPTION");
    size_t i;
    const json_t *t;
    json_array_foreach(tags, i, t)
    {
        char qt[80], tag[96], drv[64];
        /* Quote the tag so its padding spaces show ("Io  "); a slab cache name is cut. */
        snprintf(qt, sizeof(qt), "\"%s\"", jstr(t, "tag"));
        pw_cli_fit(qt, 8, 0, tag, sizeof(tag));
        char total[24];
        fmt_bytes_or_dash(t, "bytes_total", total, sizeof(total));
        if (!fleet) {
            fprintf(out, "%s %-8s %6" PRIu64 " %11s  %s %s\n", tag, jstr(t, "type"),
                    ju64(t, "hosts"), total, pw_cli_fit(jstr(t, "driver"), 16, 0, drv, sizeof(drv)),
                    jstr(t, "description"));
            continue;
        }
        char mn[24], p50[24], p90[24], mx[24];
        fmt_bytes_or_dash(t, "bytes_min", mn, sizeof(mn));
        fmt_bytes_or_dash(t, "bytes_p50", p50, sizeof(p50));
        fmt_bytes_or_dash(t, "bytes_p90", p90, sizeof(p90));
        fmt_bytes_or_dash(t, "bytes_max", mx, sizeof(mx));
        fprintf(out, "%s %-8s %6" PRIu64 " %11s %11s %11s %11s %11s ", tag, jstr(t, "type"),
                ju64(t, "hosts"), total, mn, p50, p90, mx);
        const json_t *top = jarr(t, "top_hosts");
        size_t k;
        const json_t *th;
        int first = 1;
        if (top != NULL) {
            json_array_foreach(top, k, th)
            {
                char b[24];
                fmt_bytes_or_dash(th, "bytes", b, sizeof(b));
                fprintf(out, "%s%s (%s)", first ? " " : ", ", jstr(th, "host"), b);
                first = 0;
            }
        }
        fputs(first ? " -\n" : "\n", out);
    }
    return 0;
}

int pw_fmt_tag(const json_t *root, FILE *out)
{
    const json_t *hosts = jarr(root, "hosts");
    if (!json_is_object(root) || hosts == NULL)
        return PW_EPARSE;
    char total[24];
    fmt_bytes_or_dash(root, "bytes_total", total, sizeof(total));
    char nh[32];
    fprintf(out, "Tag \"%s\" %s: %s on %s; driver %s; %s\n", jstr(root, "tag"), jstr(root, "type"),
            total, pw_cli_count(json_array_size(hosts), "host", nh, sizeof(nh)),
            jstr(root, "driver"), jstr(root, "description"));
    fprintf(out, "%-20s %-8s %11s %10s %8s %-7s %s\n", "HOST", "TYPE", "BYTES", "DIFF", "ROBUST_Z",
            "OUTLIER", "OS BUILD");
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        char b[24], z[16], hn[96];
        fmt_bytes_or_dash(h, "bytes", b, sizeof(b));
        if (jhas_num(h, "robust_z"))
            snprintf(z, sizeof(z), "%.2f", jdbl(h, "robust_z"));
        else
            snprintf(z, sizeof(z), "-");
        fprintf(out, "%s %-8s %11s %10" PRIu64 " %8s %-7s %" PRIu64 "\n",
                pw_cli_fit(jstr(h, "host"), 20, 0, hn, sizeof(hn)), jstr(h, "type"), b,
                ju64(h, "diff"), z, json_is_true(json_object_get(h, "outlier")) ? "yes" : "no",
                ju64(h, "os_build"));
    }
    return 0;
}

/* A suspect's latest big-pool snapshot (the agent's answer, asked when it became a suspect or
 * by `poolwatch bigpool`): whether its bytes are a few large blocks or many small ones. */
static void leak_big_pool(const json_t *bp, FILE *out)
{
    if (!json_is_object(bp) || !json_is_integer(json_object_get(bp, "count")))
        return;
    char t[32], b[24], lg[24], sm[24];
    pw_cli_format_time(ju64(bp, "taken_ms"), t, sizeof(t));
    uint64_t n = ju64(bp, "count"), scanned = ju64(bp, "scanned");
    if (n == 0) {
        fprintf(out,
                "  big pool at %s: no block of a page or more (its bytes are small "
                "allocations); %" PRIu64 " blocks of every tag in the table\n",
                t, scanned);
        return;
    }
    pw_cli_format_bytes(ju64(bp, "bytes"), b, sizeof(b));
    pw_cli_format_bytes(ju64(bp, "largest_bytes"), lg, sizeof(lg));
    pw_cli_format_bytes(ju64(bp, "smallest_bytes"), sm, sizeof(sm));
    fprintf(out,
            "  big pool at %s: %" PRIu64 " block(s) of a page or more, %s (largest %s, "
            "smallest %s); %" PRIu64 " blocks of every tag in the table\n",
            t, n, b, lg, sm, scanned);
}

#define LEAK_TAG_MAX 34 /* a Linux tag of 32 characters in quotes, as top's Tag column */

int pw_fmt_leaks(const json_t *root, FILE *out)
{
    const json_t *s = jarr(root, "suspects");
    if (s == NULL)
        return PW_EPARSE;
    const json_t *fp = json_object_get(root, "first_pass_ms");
    if (json_array_size(s) == 0 && json_is_integer(fp)) {
        /* Empty because nothing was judged yet (a collector just started), not because nothing
         * leaks: say when the first pass is due (UTC, as every time the CLI prints). */
        char t[32];
        pw_cli_format_time((uint64_t)json_integer_value(fp), t, sizeof(t));
        fprintf(out, "analysis has not run yet (first pass at %.8s UTC)\n",
                strlen(t) >= 19 ? t + 11 : t);
        return 0;
    }
    const char *asked = json_string_value(json_object_get(root, "host_asked"));
    if (json_array_size(s) == 0 && asked != NULL) {
        /* `leaks --host H` with nothing listed: said, not a bare header */
        fprintf(out, "no suspects on %s\n", asked);
        return 0;
    }
    /* The list is by urgency (the server's order: critical pools first, then warn, nearest ETA
     * first): each leak shows its pool's limit, where the limit comes from, the pool's level
     * and when it runs out. */
    /* The TAG column: 8 for Windows' 4-byte tags in quotes; a Linux host's slab cache or
     * allocation site ("ext4_inode_cache") widens it to the longest shown, up to LEAK_TAG_MAX,
     * instead of cutting every name to its first 6 characters. */
    int tw = 8;
    size_t i;
    const json_t *l;
    json_array_foreach(s, i, l)
    {
        int n = (int)strlen(jstr(l, "tag")) + 2;
        if (n > tw)
            tw = n < LEAK_TAG_MAX ? n : LEAK_TAG_MAX;
    }
    fprintf(out, "%-20s %-*s %-8s %7s %13s %6s %11s %11s %11s %-10s %-8s %-21s  %s\n", "HOST", tw,
            "TAG", "TYPE", "SCORE", "GROWTH/H", "SHARE", "FIRST", "CURRENT", "LIMIT", "SOURCE",
            "LEVEL", "ETA", "DRIVER / DESCRIPTION");
    json_array_foreach(s, i, l)
    {
        char qt[80], tag[96], g[24], share[16], first[24], cur[24], hn[96], lim[24], eta[32];
        snprintf(qt, sizeof(qt), "\"%s\"", jstr(l, "tag"));
        pw_cli_fit(qt, tw, 0, tag, sizeof(tag));
        if (jhas_num(l, "growth_bytes_per_h")) {
            double v = jdbl(l, "growth_bytes_per_h");
            pw_cli_format_bytes(dbl_u64(v < 0 ? -v : v), g + 1, sizeof(g) - 1);
            g[0] = v < 0 ? '-' : '+';
        } else {
            snprintf(g, sizeof(g), "-");
        }
        fmt_pct_or_dash(l, "share_of_host_growth", share, sizeof(share));
        fmt_bytes_or_dash(l, "first_bytes", first, sizeof(first));
        fmt_bytes_or_dash(l, "current_bytes", cur, sizeof(cur));
        if (jhas_num(l, "pool_limit_bytes") && ju64(l, "pool_limit_bytes") != 0)
            pw_cli_format_bytes(ju64(l, "pool_limit_bytes"), lim, sizeof(lim));
        else
            snprintf(lim, sizeof(lim), "-");
        fmt_eta_cell(l, "pool", eta, sizeof(eta));
        fprintf(out, "%s %s %-8s %7.2f %13s %6s %11s %11s %11s %-10s %-8s %-21s  %s / %s\n",
                pw_cli_fit(jstr(l, "host"), 20, 0, hn, sizeof(hn)), tag, jstr(l, "type"),
                jdbl(l, "score"), g, share, first, cur, lim, jstr(l, "pool_limit_source"),
                jstr(l, "pool_level"), eta, jstr(l, "driver"), jstr(l, "description"));
        /* A comparison of a few screens is not a trend: say so, with the deltas it rests on. */
        const json_t *dl = json_object_get(l, "screen_delta");
        if (strcmp(jstr(l, "method"), "compare") == 0 && json_is_object(dl)) {
            const json_t *pa = json_object_get(dl, "per_alloc_bytes");
            fprintf(out,
                    "  only %" PRIu64 " screens, a trend test needs at least %" PRIu64
                    ": first to last screen allocs %+" PRId64 ", frees %+" PRId64 ", diff %+" PRId64
                    ", bytes %+" PRId64,
                    ju64(l, "points"), ju64(l, "trend_min_points"),
                    (int64_t)json_integer_value(json_object_get(dl, "allocs")),
                    (int64_t)json_integer_value(json_object_get(dl, "frees")),
                    (int64_t)json_integer_value(json_object_get(dl, "diff")),
                    (int64_t)json_integer_value(json_object_get(dl, "bytes")));
            if (json_is_number(pa) && json_number_value(pa) > 0)
                fprintf(out, " (%.0f B per allocation)", json_number_value(pa));
            fputc('\n', out);
        }
        /* An ETA that is not the pool's trend: the leak's growth alone (with its range), or
         * why there is none (a named leak on a host whose limit is known is owed one). */
        eta_note_line(l, "pool", "", 1, out);
        /* The pool's own ETA rests on the pool's growth over its window, not on GROWTH/H (the
         * tag's over all its history): say what it rests on, so that the two can be told
         * apart (a collector that gives the method). */
        if (strcmp(jstr0(l, "pool_eta_basis"), "pool") == 0 && jstr0(l, "pool_eta_method")[0] &&
            jstr0(l, "pool_eta_note")[0]) {
            char span[32] = "";
            double wh = jdbl(l, "window_ms") / 3600000.0; /* as the evidence words a span */
            if (jhas_num(l, "window_ms") && wh > 0)
                snprintf(span, sizeof(span), wh >= 48 ? "%.1f days" : "%.1f h",
                         wh >= 48 ? wh / 24.0 : wh);
            fprintf(out, "  ETA %s%s%s\n", jstr0(l, "pool_eta_note"),
                    span[0] ? "; GROWTH/H is this tag's own over " : "", span);
        }
        /* The engine's words, and the tags that grew with it (one finding, one alert). */
        if (jstr(l, "evidence")[0] != '\0')
            fprintf(out, "  %s (confidence %.2f)\n", jstr(l, "evidence"), jdbl(l, "confidence"));
        const json_t *f = json_object_get(l, "finding");
        if (json_is_object(f) && json_is_string(json_object_get(f, "with")))
            fprintf(out, "  %s %s\n",
                    json_is_true(json_object_get(f, "head")) ? "grew together with:"
                                                             : "part of the finding of",
                    json_string_value(json_object_get(f, "with")));
        leak_big_pool(json_object_get(l, "big_pool"), out);
    }
    /* the API gives the first 500 by default: say when there are more */
    const json_t *tot = json_object_get(root, "total");
    if (json_is_integer(tot) && (size_t)json_integer_value(tot) > json_array_size(s))
        fprintf(out, "(%zu of %lld suspects shown)\n", json_array_size(s),
                (long long)json_integer_value(tot));
    return 0;
}

int pw_fmt_alerts(const json_t *root, FILE *out)
{
    const json_t *a = jarr(root, "alerts");
    if (a == NULL)
        return PW_EPARSE;
    fprintf(out, "%-9s %-9s %-24s %-20s %-8s %-21s %s\n", "STATE", "SEVERITY", "NAME", "HOST",
            "TAG", "SINCE", "SUMMARY");
    size_t i;
    const json_t *al;
    json_array_foreach(a, i, al)
    {
        const json_t *labels = json_object_get(al, "labels");
        char qt[80], tag[96], since[32], nm[96], hn[96];
        const char *t = json_string_value(json_object_get(labels, "tag"));
        if (t != NULL && t[0] != '\0') /* a host's pool alert has no tag */
            snprintf(qt, sizeof(qt), "\"%s\"", t);
        else
            snprintf(qt, sizeof(qt), "-");
        pw_cli_fit(qt, 8, 0, tag, sizeof(tag));
        fmt_time_or_dash(al, "since_ms", since, sizeof(since));
        fprintf(out, "%-9s %-9s %s %s %s %-21s %s\n", jstr(al, "state"), jstr(al, "severity"),
                pw_cli_fit(jstr(al, "name"), 24, 0, nm, sizeof(nm)),
                pw_cli_fit(jstr(labels, "host"), 20, 0, hn, sizeof(hn)), tag, since,
                jstr(al, "summary"));
    }
    return 0;
}

int pw_fmt_series(const json_t *root, FILE *out)
{
    const json_t *p = jarr(root, "points");
    if (p == NULL)
        return PW_EPARSE;
    /* level names where the points come from (raw samples or a rollup); the step asked for
     * (--step, added by the CLI as "step") is how far apart the points are. */
    const char *level = jstr(root, "level");
    const char *step = json_string_value(json_object_get(root, "step"));
    char steps[48] = "", np[32];
    if (step != NULL)
        snprintf(steps, sizeof(steps), " in %s steps", step);
    fprintf(out, "%s \"%s\" %s (%s%s%s, %s)\n", jstr(root, "host"), jstr(root, "tag"),
            jstr(root, "pool"), level, strcmp(level, "raw") == 0 ? " samples" : " rollup", steps,
            pw_cli_count(json_array_size(p), "point", np, sizeof(np)));
    if (json_array_size(p) == 0) {
        const char *pool = jstr(root, "pool");
        fprintf(out,
                "(nothing in the %s pool in that time: a tag's paged and nonpaged rows are "
                "separate, try --pool %s; tags are 4 characters, poolmon pads them with "
                "spaces)\n",
                pool, strcmp(pool, "paged") == 0 ? "nonpaged" : "paged");
        return 0;
    }
    fprintf(out, "%-21s %14s %10s %12s %12s %14s %14s\n", "TIME", "BYTES", "DIFF", "ALLOCS",
            "FREES", "BYTES_MIN", "BYTES_MAX");
    size_t i;
    const json_t *pt;
    json_array_foreach(p, i, pt)
    {
        char ts[32];
        fmt_time_or_dash(pt, "ts_ms", ts, sizeof(ts));
        fprintf(out,
                "%-21s %14" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 " %14" PRIu64
                " %14" PRIu64 "\n",
                ts, ju64(pt, "bytes"), ju64(pt, "diff"), ju64(pt, "allocs"), ju64(pt, "frees"),
                ju64(pt, "bytes_min"), ju64(pt, "bytes_max"));
    }
    return 0;
}

int pw_fmt_lookup(const json_t *pooltag, const json_t *find, FILE *out)
{
    if (!json_is_object(pooltag))
        return PW_EPARSE;
    int known = json_is_true(json_object_get(pooltag, "known"));
    /* "not in pooltag.txt" only when the collector has one (an older collector does not say:
     * as before) */
    const json_t *loaded = json_object_get(pooltag, "pooltag_loaded");
    fprintf(out, "Tag \"%s\": %s\n", jstr(pooltag, "tag"),
            known                   ? "listed in pooltag.txt"
            : json_is_false(loaded) ? "no description: the collector has no pooltag.txt "
                                      "([analysis] pooltag_file)"
                                    : "not in pooltag.txt");
    if (known) {
        fprintf(out, "  driver:      %s\n", jstr(pooltag, "driver"));
        fprintf(out, "  description: %s\n", jstr(pooltag, "description"));
    }
    if (find == NULL)
        return 0;
    const json_t *m = jarr(find, "matches");
    if (json_is_true(json_object_get(find, "imported"))) {
        /* an imported host: pooltag.txt above is the answer; no live driver lookup */
        fprintf(out, "Host: imported (a saved capture, no agent): no live driver lookup; %s\n",
                known ? "the driver above is pooltag.txt's" : "nothing else to ask");
        return 0;
    }
    fprintf(out, "Agent: %s\n", jstr(find, "message"));
    /* A search that could not run says so (its message), not "no file contains it". */
    json_int_t st = json_integer_value(json_object_get(find, "status"));
    if (st < 0)
        return 1;
    if (m == NULL || json_array_size(m) == 0) {
        fputs("  no driver file contains the tag\n", out);
        return 0;
    }
    size_t i;
    const json_t *f;
    json_array_foreach(m, i, f)
    {
        /* best first: "code" (the immediate operand of the allocation call), "data", "file" */
        const char *ver = jstr0(f, "file_version"), *prod = jstr0(f, "product"),
                   *comp = jstr0(f, "company"), *kind = jstr0(f, "match");
        fprintf(out, "  %-4s  %s  %" PRIu64 " bytes%s%s%s%s%s%s%s\n", kind[0] ? kind : "?",
                jstr(f, "file"), ju64(f, "size_bytes"), ver[0] ? "  version " : "", ver,
                prod[0] ? "  " : "", prod, comp[0] ? "  (" : "", comp, comp[0] ? ")" : "");
    }
    return 0;
}

/* ---- commands ----------------------------------------------------------------------------- */

typedef int (*fmt_fn)(const json_t *root, FILE *out);

/* GET path, then --json or the formatter; `step` (may be NULL) is the series' --step, which
 * the formatter names (the server's answer says only the level). */
static int get_and_print(pw_cli_t *cli, const char *path, fmt_fn fmt, int fleet, const char *step)
{
    json_t *root;
    int ex = pw_cli_call(cli, "GET", path, NULL, NULL, 0, NULL, NULL, &root);
    if (ex != 0)
        return ex;
    int rc = 0;
    if (!cli->json && step != NULL)
        json_object_set_new(root, "step", json_string(step));
    if (cli->json)
        pw_cli_print_json(cli, root);
    else if (fmt != NULL)
        rc = fmt(root, cli->out);
    else
        rc = pw_fmt_tags(root, fleet, cli->out);
    json_decref(root);
    if (rc < 0) {
        fprintf(cli->err, "poolwatch: GET %s: unexpected response shape\n", path);
        return PW_EXIT_SERVER;
    }
    return PW_EXIT_OK;
}

#define SERIES_USAGE "poolwatch series HOST TAG [--pool P] [--from T] [--to T] [--step D]"
#define LOOKUP_USAGE "poolwatch lookup TAG [--host HOST] [--json]"

/* "-x", "--x": an option; "-" alone is a value (a tag may be "-"). */
static int is_option(const char *a)
{
    return a[0] == '-' && a[1] != '\0';
}

static int no_args(pw_cli_t *cli, const char *usage)
{
    if (cli->argc > 1)
        return pw_cli_bad_args(cli, cli->argv[1], NULL, NULL, usage);
    return 0;
}

int pw_cmd_hosts(pw_cli_t *cli)
{
    if (no_args(cli, "poolwatch hosts [--json]"))
        return PW_EXIT_USAGE;
    return get_and_print(cli, "/api/v1/hosts", pw_fmt_hosts, 0, NULL);
}

static int append_param(char *path, size_t size, const char *name, const char *value);

int pw_cmd_leaks(pw_cli_t *cli)
{
    const char *host = NULL, *limit = NULL;
    for (int i = 1; i < cli->argc; i++) {
        int r;
        if ((r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--host", &host)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--limit", &limit)) != 0) {
            if (r < 0)
                return PW_EXIT_USAGE;
        } else {
            static const char *const opts[] = {"--host", "--limit", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts,
                                   "poolwatch leaks [--host NAME] [--limit N] [--json]");
        }
    }
    /* The server checks both (a bad limit is its 400 with the reason). */
    char path[1024] = "/api/v1/leaks";
    if ((host && append_param(path, sizeof(path), "host", host) < 0) ||
        (limit && append_param(path, sizeof(path), "limit", limit) < 0))
        return PW_EXIT_USAGE;
    if (host == NULL || cli->json)
        return get_and_print(cli, path, pw_fmt_leaks, 0, NULL);
    json_t *root;
    int ex = pw_cli_call(cli, "GET", path, NULL, NULL, 0, NULL, NULL, &root);
    if (ex != 0)
        return ex;
    json_object_set_new(root, "host_asked", json_string(host)); /* "no suspects on H" */
    int rc = pw_fmt_leaks(root, cli->out);
    json_decref(root);
    if (rc < 0) {
        fprintf(cli->err, "poolwatch: GET %s: unexpected response shape\n", path);
        return PW_EXIT_SERVER;
    }
    return PW_EXIT_OK;
}

int pw_cmd_alerts(pw_cli_t *cli)
{
    if (no_args(cli, "poolwatch alerts [--json]"))
        return PW_EXIT_USAGE;
    return get_and_print(cli, "/api/v1/alerts", pw_fmt_alerts, 0, NULL);
}

static int append_param(char *path, size_t size, const char *name, const char *value)
{
    size_t n = strlen(path);
    int w = snprintf(path + n, size - n, "%s%s=", strchr(path, '?') ? "&" : "?", name);
    if (w < 0 || (size_t)w >= size - n)
        return PW_ETOOBIG;
    return pw_url_escape(path, size, value) < 0 ? PW_ETOOBIG : 0;
}

int pw_fmt_events(const json_t *root, FILE *out)
{
    const json_t *a = jarr(root, "events");
    if (a == NULL)
        return PW_EPARSE;
    size_t n = json_array_size(a);
    fprintf(out, "%s: %zu pool event%s from the System log\n", jstr(root, "host"), n,
            n == 1 ? "" : "s");
    if (n == 0)
        return 0;
    fprintf(out, "%-21s %-53s %-8s %s\n", "TIME", "EVENT", "POOL", "TAGS NAMED");
    size_t i;
    const json_t *e;
    json_array_foreach(a, i, e)
    {
        char when[32], what[128], tags[400] = "";
        pw_cli_format_time(ju64(e, "ts_ms"), when, sizeof(when));
        const char *prov = jstr(e, "provider");
        snprintf(what, sizeof(what), "%s %" PRIu64 ": %s",
                 strcmp(prov, "Microsoft-Windows-Resource-Exhaustion-Detector") == 0
                     ? "Resource-Exhaustion-Detector"
                     : prov,
                 ju64(e, "event_id"), jstr(e, "message"));
        const json_t *t = json_object_get(e, "tags");
        size_t k;
        const json_t *tg;
        json_array_foreach(t, k, tg)
        {
            char b[32], one[96];
            pw_cli_format_bytes(ju64(tg, "bytes"), b, sizeof(b));
            snprintf(one, sizeof(one), "%s\"%s\" %s %s", k ? ", " : "", jstr(tg, "tag"),
                     jstr(tg, "pool"), ju64(tg, "bytes") ? b : "-");
            size_t used = strlen(tags);
            snprintf(tags + used, sizeof(tags) - used, "%s", one);
        }
        const char *pool = json_string_value(json_object_get(e, "pool"));
        fprintf(out, "%-21s %-53s %-8s %s\n", when, what, pool ? pool : "-", tags[0] ? tags : "-");
    }
    return 0;
}

#define EVENTS_USAGE "poolwatch events HOST [--from T] [--to T] [--limit N] [--json]"

int pw_cmd_events(pw_cli_t *cli)
{
    const char *host = NULL, *from = NULL, *to = NULL, *limit = NULL;
    for (int i = 1; i < cli->argc; i++) {
        int r;
        if ((r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--from", &from)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--to", &to)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--limit", &limit)) != 0) {
            if (r < 0)
                return PW_EXIT_USAGE;
        } else if (host == NULL && cli->argv[i][0] != '-') {
            host = cli->argv[i];
        } else {
            static const char *const opts[] = {"--from", "--to", "--limit", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, EVENTS_USAGE);
        }
    }
    if (host == NULL)
        return pw_cli_bad_args(cli, NULL, "HOST", NULL, EVENTS_USAGE);
    uint64_t now_ms = pw_clock_wall_ms();
    char path[2048] = "/api/v1/hosts/";
    char num[32];
    if (pw_url_escape(path, sizeof(path), host) < 0 || strlen(path) + 8 >= sizeof(path))
        return PW_EXIT_USAGE;
    strcat(path, "/events");
    const char *names[2] = {"from", "to"};
    const char *vals[2] = {from, to};
    for (int k = 0; k < 2; k++) {
        uint64_t v;
        if (vals[k] == NULL)
            continue;
        if (pw_cli_parse_time(vals[k], now_ms, &v) < 0) {
            fprintf(cli->err, "poolwatch events: bad --%s '%s' (" PW_CLI_TIME_FORMS ")\n", names[k],
                    vals[k]);
            return PW_EXIT_USAGE;
        }
        snprintf(num, sizeof(num), "%" PRIu64, v);
        if (append_param(path, sizeof(path), names[k], num) < 0)
            return PW_EXIT_USAGE;
    }
    if (limit != NULL) {
        char *end;
        unsigned long long n = strtoull(limit, &end, 10);
        if (*limit == '\0' || *end != '\0' || n < 1 || n > 10000) {
            fprintf(cli->err, "poolwatch events: bad --limit '%s' (1 to 10000)\n", limit);
            return PW_EXIT_USAGE;
        }
        if (append_param(path, sizeof(path), "limit", limit) < 0)
            return PW_EXIT_USAGE;
    }
    return get_and_print(cli, path, pw_fmt_events, 0, NULL);
}

int pw_cmd_tags(pw_cli_t *cli)
{
    const char *tag = NULL, *type = NULL, *limit = NULL;
    int fleet = 0;
    for (int i = 1; i < cli->argc; i++) {
        int r;
        if ((r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--type", &type)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--limit", &limit)) != 0) {
            if (r < 0)
                return PW_EXIT_USAGE;
        } else if (strcmp(cli->argv[i], "--fleet") == 0) {
            fleet = 1;
        } else if (tag == NULL && (cli->argv[i][0] != '-' || strcmp(cli->argv[i], "-") == 0)) {
            tag = cli->argv[i];
        } else {
            static const char *const opts[] = {"--fleet", "--type", "--limit", NULL};
            return pw_cli_bad_args(
                cli, cli->argv[i], NULL, opts,
                "poolwatch tags [TAG] [--fleet] [--type T] [--limit N] [--json]");
        }
    }
    char path[1024] = "/api/v1/tags";
    if (tag != NULL) {
        strcat(path, "/");
        if (pw_url_escape(path, sizeof(path), tag) < 0)
            return PW_EXIT_USAGE;
    }
    /* The server filters by pool type, so rows, totals and robust z are of that pool only. */
    if ((type && append_param(path, sizeof(path), "type", type) < 0) ||
        (tag == NULL && limit && append_param(path, sizeof(path), "limit", limit) < 0))
        return PW_EXIT_USAGE;
    if (tag != NULL)
        return get_and_print(cli, path, pw_fmt_tag, 0, NULL);
    return get_and_print(cli, path, NULL, fleet, NULL);
}

/* `series` to a terminal without --step: every sample of a long range would scroll away, so
 * when there are more than fit on the screen (its rows less 4, at least 8) the series is asked
 * again in the shortest step of 1m, 5m, 15m, 30m, 1h, 3h, 6h, 12h, 1d that fits, each point the
 * last sample of its step (the server's rule), and a line says so. */
static int series_fit(pw_cli_t *cli, char *path, size_t path_size)
{
    json_t *root;
    int ex = pw_cli_call(cli, "GET", path, NULL, NULL, 0, NULL, NULL, &root);
    if (ex != 0)
        return ex;
    const json_t *p = json_object_get(root, "points");
    size_t n = json_array_size(p);
    int fit = pw_term_rows(fileno(cli->out)) - 4;
    if (fit < 8)
        fit = 8;
    if (n <= (size_t)fit) {
        int rc = pw_fmt_series(root, cli->out);
        json_decref(root);
        return rc < 0 ? PW_EXIT_SERVER : PW_EXIT_OK;
    }
    uint64_t t0 = ju64(json_array_get(p, 0), "ts_ms"), t1 = ju64(json_array_get(p, n - 1), "ts_ms");
    json_decref(root);
    static const struct {
        const char *text;
        uint64_t ms;
    } steps[] = {{"1m", 60000},    {"5m", 300000},    {"15m", 900000},
                 {"30m", 1800000}, {"1h", 3600000},   {"3h", 10800000},
                 {"6h", 21600000}, {"12h", 43200000}, {"1d", 86400000}};
    size_t k = 0;
    while (k + 1 < sizeof(steps) / sizeof(steps[0]) &&
           (t1 / steps[k].ms - t0 / steps[k].ms) + 1 > (uint64_t)fit)
        k++;
    char num[32];
    snprintf(num, sizeof(num), "%" PRIu64, steps[k].ms);
    if (append_param(path, path_size, "step", num) < 0)
        return PW_EXIT_USAGE;
    fprintf(cli->out,
            "(%zu samples in that time, more than this terminal shows: one point per %s, the "
            "last sample of each; --step 0 prints every sample)\n",
            n, steps[k].text);
    return get_and_print(cli, path, pw_fmt_series, 0, steps[k].text);
}

int pw_cmd_series(pw_cli_t *cli)
{
    const char *host = NULL, *tag = NULL, *pool = NULL, *from = NULL, *to = NULL, *step = NULL;
    for (int i = 1; i < cli->argc; i++) {
        int r;
        if ((r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--pool", &pool)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--from", &from)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--to", &to)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--step", &step)) != 0) {
            if (r < 0)
                return PW_EXIT_USAGE;
        } else if (host == NULL && !is_option(cli->argv[i])) {
            host = cli->argv[i];
        } else if (tag == NULL && (!is_option(cli->argv[i]) || strcmp(cli->argv[i], "-") == 0)) {
            tag = cli->argv[i];
        } else {
            static const char *const opts[] = {"--pool", "--from", "--to", "--step", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, SERIES_USAGE);
        }
    }
    if (host == NULL || tag == NULL)
        return pw_cli_bad_args(cli, NULL, host == NULL ? "HOST and TAG" : "TAG", NULL,
                               SERIES_USAGE);
    uint64_t now_ms = pw_clock_wall_ms();
    char path[2048] = "/api/v1/hosts/";
    char num[32];
    uint64_t v;
    if (pw_url_escape(path, sizeof(path), host) < 0 || strlen(path) + 8 >= sizeof(path))
        return PW_EXIT_USAGE;
    strcat(path, "/series");
    if (append_param(path, sizeof(path), "tag", tag) < 0 ||
        (pool && append_param(path, sizeof(path), "pool", pool) < 0))
        return PW_EXIT_USAGE;
    const char *names[3] = {"from", "to", "step"};
    const char *vals[3] = {from, to, step};
    for (int k = 0; k < 3; k++) {
        if (vals[k] == NULL)
            continue;
        int rc =
            k < 2 ? pw_cli_parse_time(vals[k], now_ms, &v) : pw_cli_parse_duration(vals[k], &v);
        if (rc < 0) {
            fprintf(cli->err, "poolwatch series: bad --%s '%s' (%s)\n", names[k], vals[k],
                    k < 2 ? PW_CLI_TIME_FORMS : "a duration: 30s, 15m, 1h");
            return PW_EXIT_USAGE;
        }
        snprintf(num, sizeof(num), "%" PRIu64, v);
        if (append_param(path, sizeof(path), names[k], num) < 0)
            return PW_EXIT_USAGE;
    }
    if (step != NULL || cli->json || !isatty(fileno(cli->out)))
        return get_and_print(cli, path, pw_fmt_series, 0, step);
    return series_fit(cli, path, sizeof(path));
}

/* POST /api/v1/hosts/HOST/commands {"kind":KIND,"tag":TAG}: the agent's answer in *out.
 * Returns 0 or an exit code (`who` names the command in messages). */
static int post_command(pw_cli_t *cli, const char *host, const char *kind, const char *tag,
                        const char *who, json_t **out)
{
    char path[1024] = "/api/v1/hosts/";
    if (pw_url_escape(path, sizeof(path), host) < 0 || strlen(path) + 10 >= sizeof(path))
        return PW_EXIT_USAGE;
    strcat(path, "/commands");
    json_t *body = json_pack("{s:s, s:s}", "kind", kind, "tag", tag);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        fprintf(cli->err, "poolwatch %s: out of memory\n", who);
        return PW_EXIT_SERVER;
    }
    int ex =
        pw_cli_call(cli, "POST", path, "application/json", text, strlen(text), NULL, NULL, out);
    free(text);
    return ex;
}

int pw_cmd_lookup(pw_cli_t *cli)
{
    const char *tag = NULL, *host = NULL;
    for (int i = 1; i < cli->argc; i++) {
        int r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--host", &host);
        if (r < 0)
            return PW_EXIT_USAGE;
        if (r == 0 && tag == NULL && (!is_option(cli->argv[i]) || strcmp(cli->argv[i], "-") == 0)) {
            tag = cli->argv[i];
        } else if (r == 0) {
            static const char *const opts[] = {"--host", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, LOOKUP_USAGE);
        }
    }
    if (tag == NULL)
        return pw_cli_bad_args(cli, NULL, "TAG", NULL, LOOKUP_USAGE);
    char path[1024] = "/api/v1/pooltag/";
    if (pw_url_escape(path, sizeof(path), tag) < 0)
        return PW_EXIT_USAGE;
    json_t *pt = NULL, *find = NULL;
    int ex = pw_cli_call(cli, "GET", path, NULL, NULL, 0, NULL, NULL, &pt);
    if (ex != 0)
        return ex;
    if (host != NULL) {
        ex = post_command(cli, host, "find_tag", tag, "lookup", &find);
        if (ex != 0) {
            json_decref(pt);
            return ex;
        }
    }
    if (cli->json) {
        /* One document: the pooltag answer, plus the agent's under "find_tag". */
        if (find != NULL)
            json_object_set(pt, "find_tag", find);
        pw_cli_print_json(cli, pt);
    } else {
        int fr = pw_fmt_lookup(pt, find, cli->out);
        if (fr < 0 || fr == 1) /* 1: the agent could not search */
            ex = PW_EXIT_SERVER;
    }
    json_decref(pt);
    json_decref(find);
    return ex;
}

/* ---- bigpool --------------------------------------------------------------------------------- */

/* "8K", "2M", ...: a bucket's lower bound as the table prints it. */
static void size_word(uint64_t b, char *out, size_t n)
{
    if (b >= 1048576 && b % 1048576 == 0)
        snprintf(out, n, "%lluM", (unsigned long long)(b / 1048576));
    else
        snprintf(out, n, "%lluK", (unsigned long long)(b / 1024));
}

int pw_fmt_bigpool(const char *host, const json_t *res, FILE *out)
{
    const json_t *bp = json_object_get(res, "big_pool");
    if (!json_is_object(bp)) {
        const char *m = json_string_value(json_object_get(res, "message"));
        fprintf(out, "%s: no big-pool snapshot: %s\n", host, m ? m : "no answer");
        return 1;
    }
    const char *tag = json_string_value(json_object_get(bp, "tag"));
    static const char *const keys[] = {"count",          "bytes",         "nonpaged_count",
                                       "nonpaged_bytes", "largest_bytes", "smallest_bytes",
                                       "scanned"};
    uint64_t v[7];
    for (size_t k = 0; k < 7; k++) {
        const json_t *j = json_object_get(bp, keys[k]);
        if (!json_is_integer(j) || json_integer_value(j) < 0)
            return PW_EPARSE;
        v[k] = (uint64_t)json_integer_value(j);
    }
    const json_t *hist = json_object_get(bp, "size_hist");
    if (tag == NULL || !json_is_array(hist))
        return PW_EPARSE;
    if (v[0] == 0) { /* as leaks and top say it */
        fprintf(out,
                "%s '%s': no block of a page or more (its bytes are small allocations); %llu "
                "entries in the table\n",
                host, tag, (unsigned long long)v[6]);
        return 0;
    }
    fprintf(out,
            "%s '%s': %llu big-pool block(s), %llu bytes (nonpaged: %llu, %llu bytes); largest "
            "%llu, smallest %llu; %llu entries in the table\n",
            host, tag, (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
            (unsigned long long)v[3], (unsigned long long)v[4], (unsigned long long)v[5],
            (unsigned long long)v[6]);
    if (v[0] == 0)
        return 0;
    size_t n = json_array_size(hist);
    if (n > 52) /* bucket i starts at 2^(12+i): 2^63 (i = 51) is the last a uint64_t holds */
        return PW_EPARSE;
    fprintf(out, "  %-16s %10s\n", "size", "blocks");
    for (size_t i = 0; i < n; i++) {
        json_int_t c = json_integer_value(json_array_get(hist, i));
        if (c <= 0)
            continue;
        char lo[24], hi[24], range[56]; /* up to 2^63: "9007199254740992K" */
        size_word(i == 0 ? 0 : (uint64_t)1 << (12 + i), lo, sizeof(lo));
        if (i + 1 < n) {
            size_word((uint64_t)1 << (13 + i), hi, sizeof(hi));
            snprintf(range, sizeof(range), "[%s, %s)", i == 0 ? "0" : lo, hi);
        } else {
            snprintf(range, sizeof(range), "[%s, ...)", lo);
        }
        fprintf(out, "  %-16s %10lld\n", range, (long long)c);
    }
    return 0;
}

#define BIGPOOL_USAGE "poolwatch bigpool HOST TAG [--json]"

int pw_cmd_bigpool(pw_cli_t *cli)
{
    const char *host = NULL, *tag = NULL;
    for (int i = 1; i < cli->argc; i++) {
        if (host == NULL && !is_option(cli->argv[i]))
            host = cli->argv[i];
        else if (tag == NULL && (!is_option(cli->argv[i]) || strcmp(cli->argv[i], "-") == 0))
            tag = cli->argv[i];
        else
            return pw_cli_bad_args(cli, cli->argv[i], NULL, NULL, BIGPOOL_USAGE);
    }
    if (host == NULL || tag == NULL)
        return pw_cli_bad_args(cli, NULL, host == NULL ? "HOST" : "TAG", NULL, BIGPOOL_USAGE);
    json_t *res = NULL;
    int ex = post_command(cli, host, "big_pool", tag, "bigpool", &res);
    if (ex != 0)
        return ex;
    if (cli->json) {
        pw_cli_print_json(cli, res);
    } else {
        int fr = pw_fmt_bigpool(host, res, cli->out);
        if (fr != 0)
            ex = PW_EXIT_SERVER;
    }
    json_decref(res);
    return ex;
}
