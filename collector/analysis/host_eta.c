/* host_eta.c: one time to exhaustion per host pool, from the pool's trend or, when the pool has
 * too few points for one, from its leak suspects' growth; or when the pool already ran out. */
#include "analysis_run.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "detect.h"

/* The first point of the newest run of the ring's points at or over `limit` (ms). */
static int64_t ran_out_since(const pw_host_t *h, int pool, uint64_t limit)
{
    size_t n = pw_host_hist_n(h), i = n;
    while (i > 0) { /* the newest point over it (the pass may be older than the ring's end) */
        const pw_fleet_point_t *p = pw_fleet_hist_at(h, i - 1);
        if ((pool == PW_POOL_PAGED ? p->paged_bytes : p->nonpaged_bytes) >= limit)
            break;
        i--;
    }
    if (i == 0) /* the pass saw it over; the ring (empty, or under it since): its newest time */
        return (int64_t)(pw_host_ts(h) ? pw_host_ts(h) : h->last_seen_ms);
    while (i > 1) {
        const pw_fleet_point_t *p = pw_fleet_hist_at(h, i - 2);
        if ((pool == PW_POOL_PAGED ? p->paged_bytes : p->nonpaged_bytes) < limit)
            break;
        i--;
    }
    return (int64_t)pw_fleet_hist_at(h, i - 1)->ts_ms;
}

/* "+550.0 KiB/h" */
static void fmt_rate(double r, char *out, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    double a = r < 0 ? -r : r;
    size_t u = 0;
    while (a >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        a /= 1024.0;
        u++;
    }
    snprintf(out, cap, "%c%.1f %s/h", r < 0 ? '-' : '+', a, units[u]);
}

void pw_analysis_eta_note(const pw_pool_how_t *how, const pw_pressure_t *pr, pw_leak_eta_t *e)
{
    char rate[32], win[32], grew[32], day[32], boot[64] = "";
    e->method = how->method;
    e->rate_bytes_per_h = how->rate_bytes_per_h;
    e->window_ms = how->window_ms;
    e->grew_ms = how->method == PW_ETA_METHOD_DAY ? how->grew_ms : 0;
    e->since_boot_ms = how->since_boot_ms;
    fmt_rate(how->rate_bytes_per_h, rate, sizeof(rate));
    pw_detect_fmt_span(how->window_ms, win, sizeof(win));
    if (how->since_boot_ms > 0) {
        char ts[32] = "?";
        struct tm tm;
        if (pw_clock_gmtime(how->since_boot_ms / 1000, &tm) == 0)
            strftime(ts, sizeof(ts), "%Y-%m-%d %H:%MZ", &tm);
        snprintf(boot, sizeof(boot), "since its boot at %s", ts);
    }
    size_t len = 0;
    switch (how->method) {
    case PW_ETA_METHOD_DAY:
        pw_detect_fmt_span(how->grew_ms, grew, sizeof(grew));
        fmt_rate(how->day_bytes, day, sizeof(day));
        day[strlen(day) - 2] = '\0'; /* a day's growth, not a rate */
        len = (size_t)snprintf(e->note, sizeof(e->note),
                               "from %s, the pool's pace in the %s it grew of the last %s%s%s "
                               "(%s a day), that day repeated",
                               rate, grew, win, boot[0] ? " " : "", boot, day);
        break;
    case PW_ETA_METHOD_NET:
        len = (size_t)snprintf(e->note, sizeof(e->note),
                               "from %s, the pool's net growth over the last %s%s%s", rate, win,
                               boot[0] ? " " : "", boot);
        break;
    default:
        len = (size_t)snprintf(e->note, sizeof(e->note),
                               "from %s, the pool's trend over the last %s (%zu points)%s%s", rate,
                               win, pr->n_window, boot[0] ? " " : "", boot);
        break;
    }
    if (len < sizeof(e->note) && how->since_boot_ms > 0 && how->method != PW_ETA_METHOD_DAY)
        len += (size_t)snprintf(e->note + len, sizeof(e->note) - len,
                                ": too short a boot to repeat its day (23 h)");
    if (len < sizeof(e->note))
        snprintf(e->note + len, sizeof(e->note) - len, " (rising, p %.2g)", pr->mk_p);
}

int pw_analysis_host_eta(const pw_analysis_run_t *rn, const pw_host_t *h, int pool,
                         const pw_pressure_t *pr, pw_host_eta_t *out)
{
    if (h == NULL || pr == NULL || out == NULL)
        return PW_EINVAL;
    memset(out, 0, sizeof(*out));
    /* the pool's trend, or why the pool gives none (limit unknown, beyond, flat) */
    pw_pressure_leak_eta(pr, 0, 0, 0, 0, 0, NULL, &out->e);
    if (pr->limit_bytes > 0 && pr->used_bytes >= pr->limit_bytes) {
        out->ran_out = 1;
        out->ran_out_ms = ran_out_since(h, pool, pr->limit_bytes);
        out->e.basis = PW_ETA_NONE;
        out->e.eta_ms = out->e.eta_soon_ms = out->e.eta_late_ms = 0;
        char ts[32] = "?";
        struct tm tm;
        if (pw_clock_gmtime(out->ran_out_ms / 1000, &tm) == 0)
            strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%SZ", &tm);
        snprintf(out->e.note, sizeof(out->e.note),
                 "ran out: at or over its limit since %s (%.1f%% of it)", ts,
                 100.0 * (double)pr->used_bytes / (double)pr->limit_bytes);
        return 0;
    }
    if (rn != NULL && pw_analysis_run_host(rn, h) == NULL && pr->limit_bytes > 0) {
        /* No pass has judged the host since the collector started (nor was its verdict kept
         * across the restart): a trend of the caller's points (a ring rebuilt from 1-min
         * buckets, the first samples of a new host) is not the analysis' and can say the
         * opposite ("does not rise" at night for a leak of office hours): no ETA yet, and when
         * one comes. */
        out->pending = 1;
        out->e.basis = PW_ETA_NONE;
        out->e.eta_ms = out->e.eta_soon_ms = out->e.eta_late_ms = -1;
        int64_t in = pw_analysis_run_first_pass_in_ms(rn);
        char ts[32] = "";
        struct tm tm;
        if (in >= 0 &&
            pw_clock_gmtime((int64_t)(pw_clock_wall_ms() + (uint64_t)in) / 1000, &tm) == 0)
            strftime(ts, sizeof(ts), "%H:%M:%SZ", &tm);
        if (ts[0] != '\0')
            snprintf(out->e.note, sizeof(out->e.note),
                     "no ETA yet: not judged since the collector started (the analysis' first "
                     "pass is due at %s)",
                     ts);
        else
            snprintf(out->e.note, sizeof(out->e.note),
                     "no ETA yet: its samples wait for the analysis' next pass (every 30 s)");
        return 0;
    }
    if (pr->eta_ms >= 0) { /* (a pressure with an ETA has its limit) */
        out->e.basis = PW_ETA_POOL;
        out->e.eta_ms = pr->eta_ms;
        out->e.eta_soon_ms = pr->eta_soon_ms;
        out->e.eta_late_ms = pr->eta_late_ms;
        const pw_analysis_host_t *ah = rn != NULL ? pw_analysis_run_host(rn, h) : NULL;
        const pw_pool_how_t *how = ah == NULL              ? NULL
                                   : pool == PW_POOL_PAGED ? &ah->pg_how
                                                           : &ah->np_how;
        if (how == NULL || how->method == PW_ETA_METHOD_NONE) { /* a caller's own trend */
            out->e.method = PW_ETA_METHOD_TREND;
            out->e.rate_bytes_per_h = pr->slope_bytes_per_h;
            snprintf(out->e.note, sizeof(out->e.note),
                     "from the pool's trend over %zu points (rising, p %.2g)", pr->n_window,
                     pr->mk_p);
            return 0;
        }
        pw_analysis_eta_note(how, pr, &out->e);
        return 0;
    }
    if (pr->limit_bytes == 0)
        return 0;
    pw_pressure_opts_t o;
    pw_pressure_opts_default(&o);
    if (pr->eta_beyond || (pr->n_window >= o.min_points && pr->n_window >= 3))
        return 0; /* the pool's trend says it: no ETA, and the note why */
    /* Too few points for the pool's trend: the soonest of its suspects' own ETAs, each as
     * /api/v1/leaks computes it; with none, the most urgent suspect's reason (the list is by
     * urgency), or that no suspect grows in the pool. */
    const pw_suspect_t *sp = NULL;
    size_t ns = rn != NULL ? pw_analysis_run_suspects(rn, &sp) : 0, seen = 0;
    pw_leak_eta_t best, first;
    best.basis = PW_ETA_NONE;
    first.note[0] = '\0';
    for (size_t i = 0; i < ns; i++) {
        const pw_suspect_t *s = &sp[i];
        int sp_pool = s->pool == PW_POOL_NONPAGED ? PW_POOL_NONPAGED : PW_POOL_PAGED;
        if (sp_pool != pool || strcmp(s->host, h->name) != 0)
            continue;
        const pw_detect_t *d = &s->d;
        pw_leak_eta_t le;
        if (pw_pressure_leak_eta(pr, d->rate_bytes_per_h, d->rate_low_bytes_per_h,
                                 d->rate_high_bytes_per_h, d->steps + d->segments, d->span_ms, NULL,
                                 &le) != 0)
            continue;
        if (seen++ == 0)
            first = le;
        if (le.basis != PW_ETA_NONE && (best.basis == PW_ETA_NONE || le.eta_ms < best.eta_ms))
            best = le;
    }
    if (best.basis != PW_ETA_NONE) {
        out->e = best;
        return 0;
    }
    if (seen > 0) {
        out->e = first;
        return 0;
    }
    snprintf(out->e.note, sizeof(out->e.note),
             "no ETA: %zu point%s in the pool's window (its trend needs %zu) and no leak suspect "
             "grows in it",
             pr->n_window, pr->n_window == 1 ? "" : "s", o.min_points);
    return 0;
}
