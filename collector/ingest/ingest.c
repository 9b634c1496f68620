/* ingest.c: the one writer of the fleet and of samples into the store (ingest.h). */
#include "ingest.h"
#include "clock.h"
#include "codec.h"
#include "alloc.h"
#include "fleet_agg.h"
#include "fleet_internal.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MOD "ingest"

struct pw_ingest_s {
    pw_store_t *store; /* borrowed */
    pw_fleet_t fleet;
    uint64_t uncommitted; /* samples put since the last commit */
    pw_ingest_sample_cb on_sample;
    void *on_sample_arg;
    pw_ingest_events_cb on_events;
    void *on_events_arg;
    pw_ingest_rename_cb on_rename;
    void *on_rename_arg;
    pw_ingest_limits_t lim;
    pw_winevent_t ev[PW_INGEST_MAX_EVENTS]; /* one frame's events, read */
    uint8_t ev_new[PW_INGEST_MAX_EVENTS];
};

void pw_ingest_limits_default(pw_ingest_limits_t *l)
{
    l->min_ts_ms = PW_INGEST_MIN_TS_MS;
    l->max_ahead_ms = PW_INGEST_MAX_AHEAD_MS;
    l->max_tags = PW_INGEST_MAX_TAGS;
    l->max_tag_len = PW_INGEST_MAX_TAG_LEN;
    l->max_rows = PW_INGEST_MAX_ROWS;
}

void pw_ingest_set_limits(pw_ingest_t *ing, const pw_ingest_limits_t *l)
{
    ing->lim = *l;
}

pw_host_t *pw_ingest_restore(pw_ingest_t *ing, const char *name, unsigned width,
                             const pw_sample_t *table)
{
    pw_host_t *h = pw__fleet_get(&ing->fleet, name, width);
    if (h == NULL)
        return NULL;
    pw_host_table_t *t = h->priv;
    if (!t->dec.have_base && table != NULL && pw_sample_copy(&t->snapshot, table) != 0)
        return NULL;
    (void)pw__fleet_snapshot_changes(h, NULL); /* the screen before is not known */
    t->hist_from_store = 1; /* read by the first analysis pass, under its time slices */
    return h;
}

/* Sets a limit an operator gave (bytes 0: none, the host's stays). */
static void set_limit(pw_host_t *h, int pool, const pw_pool_limit_t *l)
{
    if (l->bytes == 0)
        return;
    if (pool == PW_POOL_PAGED) {
        h->paged_limit_bytes = l->bytes;
        h->paged_limit_source = l->source;
        snprintf(h->paged_limit_detail, sizeof(h->paged_limit_detail), "%s", l->detail);
    } else {
        h->nonpaged_limit_bytes = l->bytes;
        h->nonpaged_limit_source = l->source;
        snprintf(h->nonpaged_limit_detail, sizeof(h->nonpaged_limit_detail), "%s", l->detail);
    }
}

/* The limits an agent's host has from its Hello (bytes 0: none said) into lim[0] (nonpaged) and
 * lim[1] (paged); 0 when it has neither (an import's host keeps what was given at import). */
static int hello_limits(const pw_host_t *h, pw_pool_limit_t lim[2])
{
    if (pw_host_imported(h) || (h->nonpaged_limit_bytes == 0 && h->paged_limit_bytes == 0))
        return 0;
    lim[0].bytes = h->nonpaged_limit_bytes;
    lim[0].source = (pw_limit_source_t)h->nonpaged_limit_source;
    memcpy(lim[0].detail, h->nonpaged_limit_detail, sizeof(lim[0].detail));
    lim[1].bytes = h->paged_limit_bytes;
    lim[1].source = (pw_limit_source_t)h->paged_limit_source;
    memcpy(lim[1].detail, h->paged_limit_detail, sizeof(lim[1].detail));
    return 1;
}

/* The time a full history ring spans at the host's interval (1 min when unknown or shorter:
 * the store's buckets), at least the 3 h the pressure trend reads back, at most 7 days. */
static uint64_t ring_span_ms(const pw_host_t *h)
{
    if (pw_host_imported(h)) /* its screens, as its imports put them in the ring */
        return 7 * 86400000ULL;
    uint64_t iv = h->interval_ms > 60000 ? h->interval_ms : 60000;
    uint64_t span = iv * PW_FLEET_HISTORY;
    return span < 3 * 3600000ULL ? 3 * 3600000ULL : span > 7 * 86400000ULL ? 7 * 86400000ULL : span;
}

/* At start, before any sample arrives: the history ring from the store's 1-min totals buckets
 * (one indexed read per host, no chunk replay: after a crash the newest chunk's minutes wait for
 * the first pass), each bucket's last sample at its own time, so
 * the sparkline, the pressure trend, the ETA and the alerts' "runs out" are there before the
 * first analysis pass. The pass then puts the raw samples in their place (a host sampling
 * faster than once a minute has more points than the buckets; pw_ingest_restore_history). */
static void prefill_history(pw_ingest_t *ing, pw_host_t *h)
{
    uint64_t to = h->last_seen_ms, span = ring_span_ms(h);
    if (to == 0)
        return;
    pw_store_tseries_t ts;
    memset(&ts, 0, sizeof(ts));
    pw_diag_t d;
    int64_t n =
        pw_store_totals_buckets(ing->store, h->name, to > span ? to - span : 0, to, &ts, &d);
    if (n < 0 && n != PW_ENOENT)
        PW_LOG_WARN(MOD, "%s: history from the store's buckets: %s (%s)", h->name,
                    pw_strerror((int)n), d.msg);
    for (int64_t i = 0; i < n; i++) {
        const pw_store_tpoint_t *p = &ts.points[i];
        if (p->samples == 0 || p->last_ms > to)
            continue;
        pw__fleet_note_totals(h, p->last_ms, p->nonpaged, p->paged);
        h->priv->hist_prefill_to = p->last_ms;
    }
    pw_store_tseries_free(&ts);
}

/* Rebuilds what the fleet view needs from the store: hosts and their last tables. */
static int load_fleet(pw_ingest_t *ing, pw_diag_t *d)
{
    pw_store_host_info_t *hosts;
    size_t n;
    int r = pw_store_hosts(ing->store, &hosts, &n, d);
    if (r != 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        pw_sample_t last;
        pw_sample_init(&last);
        pw_store_latest(ing->store, hosts[i].name, &last, NULL);
        pw_host_t *h = pw_ingest_restore(ing, hosts[i].name, hosts[i].counter_width, &last);
        pw_sample_close(&last);
        if (h == NULL) {
            r = PW_ENOMEM;
            break;
        }
        pw_host_table_t *t = h->priv;
        memcpy(h->agent_id, hosts[i].agent_id, hosts[i].agent_id_len);
        h->agent_id_len = hosts[i].agent_id_len;
        memcpy(h->boot_id, hosts[i].boot_id, hosts[i].boot_id_len);
        h->boot_id_len = hosts[i].boot_id_len;
        t->stored_seq = t->committed_seq = hosts[i].last_seq;
        h->last_seen_ms = hosts[i].last_seen_ms;
        /* "family version" as a Hello is stored; an import stores the family alone. */
        char *sp = strchr(hosts[i].os, ' ');
        if (sp) {
            snprintf(h->os_family, sizeof(h->os_family), "%.*s", (int)(sp - hosts[i].os),
                     hosts[i].os);
            snprintf(h->os_version, sizeof(h->os_version), "%s", sp + 1);
        } else {
            snprintf(h->os_family, sizeof(h->os_family), "%s", hosts[i].os);
        }
        set_limit(h, PW_POOL_NONPAGED, &hosts[i].nonpaged_limit);
        set_limit(h, PW_POOL_PAGED, &hosts[i].paged_limit);
        /* known before its agent's Hello (a replay that exited when done never says it again):
         * the analysis judges a replay's screens as an import's */
        h->source_kind = hosts[i].source_kind;
        h->interval_ms = hosts[i].interval_ms;
        /* an agent that said goodbye before the restart is still stopped, not silent */
        h->stopped_ms = hosts[i].stopped_ms;
        snprintf(h->stop_reason, sizeof(h->stop_reason), "%s", hosts[i].stop_reason);
        /* what its agent's last Hello said of the machine: a stopped host keeps it */
        h->os_build = hosts[i].os_build;
        snprintf(h->arch, sizeof(h->arch), "%s", hosts[i].arch);
        snprintf(h->agent_version, sizeof(h->agent_version), "%s", hosts[i].agent_version);
        /* an import's screens are its samples whenever they came; an agent's, what the store's
         * raw chunks hold of it and what retention dropped of them (h->samples counts the
         * samples received from this start on) */
        h->samples = hosts[i].imported_samples;
        h->samples_stored = hosts[i].imported_samples
                                ? hosts[i].imported_samples
                                : hosts[i].stored_samples + hosts[i].samples_expired;
        prefill_history(ing, h);
    }
    pw_store_hosts_free(hosts, n);
    return r;
}

int pw_ingest_new(pw_store_t *store, pw_ingest_t **out, pw_diag_t *d)
{
    pw_ingest_t *ing = pw_calloc(1, sizeof(*ing));
    if (ing == NULL)
        return PW_ENOMEM;
    ing->store = store;
    pw_ingest_limits_default(&ing->lim);
    pw_fleet_init(&ing->fleet);
    int r = load_fleet(ing, d);
    if (r != 0) {
        pw_ingest_free(ing);
        return r;
    }
    *out = ing;
    return 0;
}

void pw_ingest_free(pw_ingest_t *ing)
{
    if (ing == NULL)
        return;
    pw_fleet_agg_free(ing->fleet.agg);
    ing->fleet.agg = NULL;
    pw_fleet_close(&ing->fleet);
    pw_free(ing);
}

const pw_fleet_t *pw_ingest_fleet(const pw_ingest_t *ing)
{
    return &ing->fleet;
}

pw_store_t *pw_ingest_store(const pw_ingest_t *ing)
{
    return ing->store;
}

void pw_ingest_on_sample(pw_ingest_t *ing, pw_ingest_sample_cb cb, void *arg)
{
    ing->on_sample = cb;
    ing->on_sample_arg = arg;
}

static int same_instance(const pw_host_t *h, const Poolwatch__V1__Hello *hello)
{
    return h->agent_id_len == hello->agent_id.len && h->boot_id_len == hello->boot_id.len &&
           memcmp(h->agent_id, hello->agent_id.data, h->agent_id_len) == 0 &&
           memcmp(h->boot_id, hello->boot_id.data, h->boot_id_len) == 0;
}

/* Keeps the host's stop (or its end) in the store, so a restarted collector knows it stopped
 * rather than went silent. The store's row change commits on its own: the samples put before
 * go first. A host with nothing stored has no row to keep it (and is not restored either). */
static void note_stop(pw_ingest_t *ing, pw_host_t *h)
{
    pw_diag_t d;
    pw_diag_clear(&d);
    int64_t r = pw_ingest_commit(ing, &d);
    if (r >= 0)
        r = pw_store_host_stopped(ing->store, h->name, h->stopped_ms, h->stop_reason, &d);
    if (r < 0 && r != PW_ENOENT)
        PW_LOG_WARN(MOD, "%s: its %s is not kept across a restart: %s", h->name,
                    h->stopped_ms ? "stop" : "restart", d.msg[0] ? d.msg : pw_strerror((int)r));
}

int pw_ingest_hello(pw_ingest_t *ing, const Poolwatch__V1__Hello *hello, const char *name,
                    void *session, pw_ingest_hello_res_t *res, pw_diag_t *d)
{
    memset(res, 0, sizeof(*res));
    if ((hello->counter_width != 32 && hello->counter_width != 64) || hello->agent_id.len == 0 ||
        hello->agent_id.len > 64 || hello->boot_id.len == 0 || hello->boot_id.len > 64)
        return pw_diag_set(d, PW_EPROTO, 0, 0, "hello",
                           "Hello: counter_width must be 32 or 64, ids 1..64 bytes");
    pw_host_t *h = pw__fleet_get(&ing->fleet, name, hello->counter_width);
    if (h == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "hello", "out of memory");
    pw_host_table_t *t = h->priv;
    if (t->session != NULL && t->session != session) {
        /* The agent came back before its old session timed out, or another agent claims the
         * same host (a cloned machine with the same certificate). */
        res->replaced = t->session;
        res->twin = h->agent_id_len != hello->agent_id.len ||
                    memcmp(h->agent_id, hello->agent_id.data, h->agent_id_len) != 0;
        snprintf(res->old_os_family, sizeof(res->old_os_family), "%s", h->os_family);
    }
    int new_instance = !same_instance(h, hello);
    if (new_instance) {
        /* An agent numbers its samples across its instances from one spool: what the store
         * holds of any of them is not to be sent again (a restarted agent resends its unacked
         * samples, each under the instance that took it; dedup on (agent, instance, seq)). */
        uint64_t s = 0, any = 0;
        pw_store_last_seq(ing->store, hello->agent_id.data, hello->agent_id.len,
                          hello->boot_id.data, hello->boot_id.len, &s);
        if (pw_store_agent_last_seq(ing->store, hello->agent_id.data, hello->agent_id.len, &any) ==
                0 &&
            any > s)
            s = any;
        t->stored_seq = t->committed_seq = s;
        memcpy(h->agent_id, hello->agent_id.data, hello->agent_id.len);
        h->agent_id_len = hello->agent_id.len;
        memcpy(h->boot_id, hello->boot_id.data, hello->boot_id.len);
        h->boot_id_len = hello->boot_id.len;
    }
    if (h->counter_width != hello->counter_width || new_instance)
        pw__fleet_reset_stream(h, hello->counter_width);
    /* Peer text: control bytes would forge log lines and API strings (issue 15, item 9). */
    pw_log_clean(h->os_family, sizeof(h->os_family), hello->os_family);
    pw_log_clean(h->os_version, sizeof(h->os_version), hello->os_version);
    pw_log_clean(h->arch, sizeof(h->arch), hello->arch);
    pw_log_clean(h->agent_version, sizeof(h->agent_version), hello->agent_version);
    h->os_build = hello->os_build;
    h->source_kind = hello->source_kind;
    h->physical_memory_bytes = hello->physical_memory_bytes;
    h->boot_time_ms = hello->boot_time_ms;
    h->interval_ms = hello->interval_ms;
    if (hello->nonpaged_limit) {
        h->nonpaged_limit_bytes = hello->nonpaged_limit->bytes;
        h->nonpaged_limit_source = hello->nonpaged_limit->source;
        pw_log_clean(h->nonpaged_limit_detail, sizeof(h->nonpaged_limit_detail),
                     hello->nonpaged_limit->detail);
    }
    if (hello->paged_limit) {
        h->paged_limit_bytes = hello->paged_limit->bytes;
        h->paged_limit_source = hello->paged_limit->source;
        pw_log_clean(h->paged_limit_detail, sizeof(h->paged_limit_detail),
                     hello->paged_limit->detail);
    }
    t->session = session;
    int was_stopped = h->stopped_ms != 0;
    h->stopped_ms = 0; /* streaming again */
    h->stop_reason[0] = '\0';
    if (was_stopped)
        note_stop(ing, h);
    res->host = h;
    /* Everything committed is safe; what is put but not committed yet will be committed by
     * the next tick, so the agent may start after the committed seq (resends are idempotent). */
    res->resume_seq = t->committed_seq;
    return 0;
}

void pw_ingest_detach(pw_ingest_t *ing, pw_host_t *h, void *session)
{
    (void)ing;
    if (h != NULL && h->priv->session == session)
        h->priv->session = NULL;
}

void pw_ingest_goodbye(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__Goodbye *g)
{
    h->stopped_ms = g->timestamp_ms ? g->timestamp_ms : h->last_seen_ms ? h->last_seen_ms : 1;
    pw_log_clean(h->stop_reason, sizeof(h->stop_reason), g->reason ? g->reason : "");
    note_stop(ing, h);
}

void pw_ingest_contact(pw_ingest_t *ing, pw_host_t *h, uint64_t now_ms)
{
    (void)ing;
    h->last_contact_ms = now_ms;
}

void *pw_ingest_session(const pw_host_t *h)
{
    return h->priv->session;
}

/* The store rolled back everything since the last commit: those samples are no longer
 * stored, and their agents must resend them from the last ack. */
static void rolled_back(pw_ingest_t *ing)
{
    for (size_t i = 0; i < ing->fleet.n; i++) {
        pw_host_table_t *t = ing->fleet.hosts[i]->priv;
        if (t->stored_seq > t->committed_seq)
            t->stored_seq = t->committed_seq;
        ing->fleet.hosts[i]->samples_stored -= t->stored_pending; /* its agent resends them */
        t->stored_pending = 0;
    }
    ing->uncommitted = 0;
}

/* A commit made what was put durable: every host's stored seq and count are its committed ones. */
static void committed(pw_ingest_t *ing)
{
    for (size_t i = 0; i < ing->fleet.n; i++) {
        pw_host_table_t *t = ing->fleet.hosts[i]->priv;
        t->committed_seq = t->stored_seq;
        t->stored_pending = 0;
    }
    ing->uncommitted = 0;
}

static uint64_t wall_ms(void)
{
    return pw_clock_wall_ms();
}

/* What is refused of a sample before it touches the host (pw_ingest_frame). */
static int check_sample(pw_ingest_t *ing, const pw_host_table_t *t, const Poolwatch__V1__Sample *s,
                        pw_diag_t *d)
{
    const pw_ingest_limits_t *l = &ing->lim;
    if (s->seq == 0 || s->seq > (uint64_t)INT64_MAX)
        return pw_diag_set(d, PW_ESEQ, 0, 0, "seq", "seq %llu out of range (1 .. 2^63 - 1)",
                           (unsigned long long)s->seq);
    uint64_t now = wall_ms();
    if (s->timestamp_ms < l->min_ts_ms ||
        (now != 0 && l->max_ahead_ms < UINT64_MAX - now && s->timestamp_ms > now + l->max_ahead_ms))
        return pw_diag_set(d, PW_ESTAMP, 0, 0, "timestamp_ms",
                           "sample time %llu ms is before 2000 or more than a day ahead",
                           (unsigned long long)s->timestamp_ms);
    if (s->boot_id.len > 64)
        return pw_diag_set(d, PW_EPROTO, 0, 0, "boot_id", "boot_id of %zu bytes (at most 64)",
                           s->boot_id.len);
    if (s->n_events > PW_INGEST_MAX_EVENTS)
        return pw_diag_set(d, PW_ELIMIT, 0, 0, "events",
                           "%zu pool events in one sample (at most %d)", s->n_events,
                           PW_INGEST_MAX_EVENTS);
    for (size_t i = 0; i < s->n_events; i++) {
        int r = pw_codec_event_read(s->events[i], &ing->ev[i], d);
        if (r != 0)
            return r;
    }
    for (size_t i = 0; i < s->n_dict; i++)
        if (s->dict[i]->tag.len > l->max_tag_len)
            return pw_diag_set(d, PW_ELIMIT, 0, 0, "dict", "tag of %zu bytes (at most %u)",
                               s->dict[i]->tag.len, l->max_tag_len);
    uint64_t tags = (s->dict_reset ? 0 : t->dec.dict.n) + (uint64_t)s->n_dict;
    if (tags > l->max_tags)
        return pw_diag_set(d, PW_ELIMIT, 0, 0, "dict", "%llu tags (at most %u per host)",
                           (unsigned long long)tags, l->max_tags);
    uint64_t rows = (s->keyframe ? 0 : t->dec.n) + (s->rows ? s->rows->n_key_gap : 0);
    if (rows > l->max_rows)
        return pw_diag_set(d, PW_ELIMIT, 0, 0, "rows", "%llu rows (at most %u per host)",
                           (unsigned long long)rows, l->max_rows);
    return 0;
}

/* 64-bit counters do not wrap: a row with more objects outstanding than allocated is
 * nonsense (32-bit ones may: allocs wraps first). Sources without allocs are skipped. */
static int check_counters(const pw_delta_dec_t *dec, pw_diag_t *d)
{
    if (dec->width != 64 || (dec->flags & PW_SAMPLE_NO_ALLOCS))
        return 0;
    for (size_t i = 0; i < dec->n; i++)
        if (dec->rows[i].diff > dec->rows[i].allocs)
            return pw_diag_set(d, PW_ECOUNTERS, 0, 0, "diff",
                               "row %u: %llu objects outstanding of %llu allocated",
                               dec->rows[i].key, (unsigned long long)dec->rows[i].diff,
                               (unsigned long long)dec->rows[i].allocs);
    return 0;
}

static void notify_events(pw_ingest_t *ing, const pw_host_t *h, size_t n);

int pw_ingest_frame(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__Sample *s,
                    const uint8_t *payload, size_t len, pw_ingest_frame_res_t *res,
                    int *store_failed, pw_diag_t *d)
{
    pw_host_table_t *t = h->priv;
    memset(res, 0, sizeof(*res));
    *store_failed = 0;
    int r = check_sample(ing, t, s, d);
    if (r != 0)
        return r;
    pw__fleet_save_prev(h, s); /* the step's previous rows, for the change columns */
    pw_delta_result_t dr;
    r = pw_delta_apply(&t->dec, s, &dr, d);
    if (r != 0)
        return r;
    if ((r = check_counters(&t->dec, d)) != 0) {
        pw_delta_dec_drop_base(&t->dec); /* nothing builds on it: the next must be a keyframe */
        return r;
    }
    if (s->dict_reset)
        t->dict_epoch++;
    /* Keep the fleet's per-tag index current (GET /tags reads it); on ENOMEM it is dropped
     * and rebuilt at the next query. */
    pw_fleet_agg_note(&ing->fleet, h);
    h->samples++;
    h->last_seen_ms = s->timestamp_ms;
    h->resets += dr.resets;
    pw__fleet_note_totals(h, s->timestamp_ms, t->dec.totals.nonpaged_bytes,
                          t->dec.totals.paged_bytes);
    res->gap_before = dr.gap_before;
    h->gaps += dr.gap_before;
    /* The store can keep the agent's own frame when the decoder's state before it is what the
     * store holds last: the previous applied sample was stored. */
    int follows = t->dec_stored && !s->keyframe && !s->dict_reset;
    t->dec_stored = 0;
    if (s->seq <= t->stored_seq) {
        h->resent++; /* already stored: a resend after a reconnect */
        return 0;
    }
    /* Stored under the instance that took it (a resend from before an agent restart). */
    const uint8_t *boot = s->boot_id.len ? s->boot_id.data : h->boot_id;
    size_t boot_len = s->boot_id.len ? s->boot_id.len : h->boot_id_len;
    char os[96];
    snprintf(os, sizeof(os), "%s %s", h->os_family, h->os_version);
    /* the Hello's limits with their source: a restart knows them before the agent is back */
    pw_pool_limit_t lim[2];
    int said = hello_limits(h, lim);
    pw_store_host_t sh = {.name = h->name,
                          .agent_id = h->agent_id,
                          .agent_id_len = h->agent_id_len,
                          .boot_id = boot,
                          .boot_id_len = boot_len,
                          .os = os,
                          .counter_width = h->counter_width,
                          .source_kind = h->source_kind,
                          .interval_ms = h->interval_ms,
                          .nonpaged_limit = said ? &lim[0] : NULL,
                          .paged_limit = said ? &lim[1] : NULL,
                          .os_build = h->os_build,
                          .arch = h->arch,
                          .agent_version = h->agent_version};
    r = pw_store_put_frame(ing->store, &sh, &t->dec, payload, len, s->base_seq, follows,
                           dr.gap_before, d);
    if (r < 0) {
        rolled_back(ing);
        *store_failed = 1;
        return r;
    }
    /* PW_STORE_DUPLICATE: that instance's seq is in the store already; the ack may cover it
     * (after the next commit), nothing is written or fed to the analysis twice. */
    t->dec_stored = r == 0;
    t->stored_seq = s->seq;
    res->stored_seq = s->seq;
    ing->uncommitted++;
    if (r == PW_STORE_DUPLICATE) {
        h->resent++;
        return 0;
    }
    h->samples_stored++; /* a new one: the API's count of what the store holds and held */
    t->stored_pending++;
    if (s->n_events > 0) { /* read by check_sample; stored with the sample, kept once */
        r = pw_store_put_events(ing->store, h->name, ing->ev, s->n_events, wall_ms(), ing->ev_new,
                                d);
        if (r < 0) {
            rolled_back(ing);
            *store_failed = 1;
            return r;
        }
        res->events = (size_t)r;
        notify_events(ing, h, s->n_events);
    }
    if (ing->on_sample)
        ing->on_sample(ing->on_sample_arg, h, NULL);
    return 0;
}

void pw_ingest_on_rename(pw_ingest_t *ing, pw_ingest_rename_cb cb, void *arg)
{
    ing->on_rename = cb;
    ing->on_rename_arg = arg;
}

void pw_ingest_on_events(pw_ingest_t *ing, pw_ingest_events_cb cb, void *arg)
{
    ing->on_events = cb;
    ing->on_events_arg = arg;
}

int pw_ingest_events(pw_ingest_t *ing, const char *name, const pw_winevent_t *ev, size_t n,
                     uint64_t now_ms, pw_diag_t *d)
{
    const pw_host_t *h = pw_fleet_find(&ing->fleet, name);
    if (h == NULL)
        return pw_diag_set(d, PW_ENOENT, 0, 0, "host", "no host '%s'", name);
    int stored = 0;
    for (size_t off = 0; off < n; off += PW_INGEST_MAX_EVENTS) {
        size_t k = n - off < PW_INGEST_MAX_EVENTS ? n - off : PW_INGEST_MAX_EVENTS;
        memcpy(ing->ev, ev + off, k * sizeof(*ev));
        int r = pw_store_put_events(ing->store, name, ing->ev, k, now_ms, ing->ev_new, d);
        if (r < 0) {
            rolled_back(ing);
            return r;
        }
        ing->uncommitted++; /* the group commit's call, which commits pending samples too */
        int64_t c = pw_ingest_commit(ing, d);
        if (c < 0)
            return (int)c;
        stored += r;
        notify_events(ing, h, k);
    }
    return stored;
}

/* Gives the observer the events of ing->ev[0..n) that were stored now. */
static void notify_events(pw_ingest_t *ing, const pw_host_t *h, size_t n)
{
    if (ing->on_events == NULL)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ing->ev_new[i])
            ing->ev[m++] = ing->ev[i];
    if (m > 0)
        ing->on_events(ing->on_events_arg, h, ing->ev, m);
}

/* Makes a store-acceptable sample of an imported screen: frees rebuilt as allocs - diff
 * (poolmon's columns may disagree after a wrap), repeated (tag, pool) rows dropped. */
static void import_fix(pw_sample_t *s, unsigned width)
{
    uint64_t mask = width >= 64 ? UINT64_MAX : ((1ull << width) - 1);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        pw_entry_t *e = &s->entries[i];
        int dup = 0;
        for (size_t j = 0; j < m && !dup; j++)
            dup = s->entries[j].pool == e->pool && s->entries[j].tag_len == e->tag_len &&
                  memcmp(s->entries[j].tag, e->tag, e->tag_len) == 0;
        if (dup)
            continue;
        e->diff &= mask;
        if (!(s->flags & PW_SAMPLE_NO_ALLOCS)) {
            e->allocs &= mask;
            e->frees = (e->allocs - e->diff) & mask;
        }
        s->entries[m++] = *e;
    }
    s->n = m;
}

int pw_ingest_import_check(const pw_ingest_t *ing, const char *name, pw_diag_t *d)
{
    /* History of a host that streams from an agent is not mixed with imported screens. */
    const pw_host_t *live = pw_fleet_find(&ing->fleet, name);
    if (live != NULL && (live->priv->session != NULL || live->priv->dec.have_base ||
                         (live->agent_id_len > 0 && !pw_host_imported(live))))
        return pw_diag_set(d, PW_EEXIST, 0, 0, "host",
                           "host '%s' has samples from an agent; import under another name", name);
    return 0;
}

/* An import's agent id: "import:<name>", its first 64 bytes (the store's bound). Returns its
 * length. */
static size_t import_agent_id(const char *name, char out[300])
{
    snprintf(out, 300, "import:%s", name);
    return strlen(out) > 64 ? 64 : strlen(out);
}

int pw_ingest_import_known(pw_ingest_t *ing, const char *name, const char *boot_id, uint64_t *seq,
                           uint64_t *ts_ms)
{
    char agent_id[300];
    size_t aid = import_agent_id(name, agent_id);
    return pw_store_last_seq_ts(ing->store, (const uint8_t *)agent_id, aid,
                                (const uint8_t *)boot_id, strlen(boot_id), seq, ts_ms);
}

/* The stored samples of a time range: how many, the first and last time. */
typedef struct held_s {
    size_t n;
    uint64_t first, last;
} held_t;

static int count_held(void *arg, uint64_t ts_ms, const pw_totals_t *totals)
{
    (void)totals;
    held_t *h = arg;
    if (h->n++ == 0)
        h->first = ts_ms;
    h->last = ts_ms;
    return 0;
}

/* 0 when the screens of samples[0..n) that instance (agent_id, boot_id) has not stored yet (seq
 * above its last) share no time with what host `name` holds; PW_EEXIST with `d` and res->held*
 * and res->fresh* naming the times when they do (another capture of the host: interleaved, its
 * screens and these would read as one series going back and forth); a store error. */
static int import_overlap(pw_ingest_t *ing, const char *name, const pw_store_host_t *sh,
                          const pw_sample_t *samples, size_t n, pw_ingest_import_res_t *res,
                          pw_diag_t *d)
{
    uint64_t known = 0, lo = UINT64_MAX, hi = 0;
    int r = pw_store_last_seq(ing->store, sh->agent_id, sh->agent_id_len, sh->boot_id,
                              sh->boot_id_len, &known);
    if (r != 0 && r != PW_ENOENT)
        return pw_diag_set(d, r, 0, 0, "store", "%s: reading the import's instance: %s", name,
                           pw_strerror(r));
    size_t fresh = 0;
    for (size_t i = (size_t)(known < n ? known : n); i < n; i++, fresh++) {
        lo = samples[i].timestamp_ms < lo ? samples[i].timestamp_ms : lo;
        hi = samples[i].timestamp_ms > hi ? samples[i].timestamp_ms : hi;
    }
    if (fresh == 0 || pw_fleet_find(&ing->fleet, name) == NULL)
        return 0;
    held_t held = {0, 0, 0};
    r = pw_store_totals(ing->store, name, lo, hi, count_held, &held, d);
    if (r == PW_ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (held.n == 0)
        return 0;
    res->held = held.n;
    res->held_first = held.first;
    res->held_last = held.last;
    res->fresh = fresh;
    res->fresh_first = lo;
    res->fresh_last = hi;
    return pw_diag_set(d, PW_EEXIST, 0, 0, "host",
                       "host '%.80s' holds %zu screen%s of another capture within the new "
                       "screens' time: nothing stored",
                       name, held.n, held.n == 1 ? "" : "s");
}

int pw_ingest_import(pw_ingest_t *ing, const char *name, unsigned width, const char *boot_id,
                     pw_sample_t *samples, size_t n, pw_ingest_import_res_t *res, pw_diag_t *d)
{
    memset(res, 0, sizeof(*res));
    int c = pw_ingest_import_check(ing, name, d);
    if (c != 0)
        return c;
    char agent_id[300];
    size_t aid = import_agent_id(name, agent_id);
    /* The OS an operator gave an earlier import (pw_ingest_import_meta) stays. */
    const pw_host_t *known = pw_fleet_find(&ing->fleet, name);
    /* samples without allocs/frees are a Linux host's slab caches (an import of slabinfo) */
    const char *family = n > 0 && (samples[0].flags & PW_SAMPLE_NO_ALLOCS) ? "linux" : "windows";
    char os[96];
    snprintf(os, sizeof(os), "%s", family);
    if (known != NULL && known->os_version[0] != '\0')
        snprintf(os, sizeof(os), "%s %s", family, known->os_version);
    pw_store_host_t sh = {.name = name, /* an import: no agent's Hello, no source kind */
                          .agent_id = (const uint8_t *)agent_id,
                          .agent_id_len = aid,
                          .boot_id = (const uint8_t *)boot_id,
                          .boot_id_len = strlen(boot_id),
                          .os = os,
                          .counter_width = width};
    int r = import_overlap(ing, name, &sh, samples, n, res, d);
    if (r != 0)
        return r;
    const pw_sample_t *last = NULL;
    uint8_t *stored = pw_calloc(n ? n : 1, 1); /* NULL: the analysis is not fed (logged) */
    if (stored == NULL)
        PW_LOG_WARN(MOD, "%s: out of memory: the import is stored but not judged", name);
    /* Stored and committed outside the agents' group commit: that commit may hold samples of
     * streaming hosts, which become durable here a little earlier (their acks wait for the
     * commit timer, which then finds nothing new). */
    for (size_t i = 0; r >= 0 && i < n; i++) {
        import_fix(&samples[i], width);
        samples[i].seq = i + 1;
        r = pw_store_put(ing->store, &sh, &samples[i], 0, d);
        if (r == PW_STORE_DUPLICATE) {
            res->already++;
            r = 0;
            continue;
        }
        if (r >= 0) {
            if (stored != NULL)
                stored[i] = 1;
            res->rows += samples[i].n;
            res->screens++;
            res->last_ts = samples[i].timestamp_ms;
            last = &samples[i];
        }
    }
    if (r >= 0) {
        r = pw_store_commit(ing->store, d);
        if (r == 0)
            committed(ing);
    }
    if (r < 0) {
        rolled_back(ing);
        pw_free(stored);
        return r;
    }
    /* The fleet shows the host's last screen unless the host streams live. */
    pw_host_t *h = pw__fleet_get(&ing->fleet, name, width);
    if (h && last && !h->priv->dec.have_base &&
        last->timestamp_ms >= h->priv->snapshot.timestamp_ms) {
        /* the screen before the last: this import's, else the table shown until now */
        const pw_sample_t *before = NULL;
        for (const pw_sample_t *p = samples; p < last; p++)
            if (stored != NULL && stored[p - samples] && p->timestamp_ms < last->timestamp_ms &&
                (before == NULL || p->timestamp_ms > before->timestamp_ms))
                before = p;
        pw_sample_t shown;
        pw_sample_init(&shown);
        if (before == NULL && h->priv->snapshot.n > 0 &&
            pw_sample_copy(&shown, &h->priv->snapshot) == 0)
            before = &shown;
        pw_sample_copy(&h->priv->snapshot, last);
        if (pw__fleet_snapshot_changes(h, before) != 0)
            PW_LOG_WARN(MOD, "%s: out of memory: its table shows no changes", h->name);
        pw_sample_close(&shown);
        if (h->agent_id_len == 0) {
            /* as load_fleet reads it back: the host is an import (pw_host_imported) */
            memcpy(h->agent_id, agent_id, aid);
            h->agent_id_len = aid;
        }
        if (h->os_family[0] == '\0')
            snprintf(h->os_family, sizeof(h->os_family), "%s", family);
        if (last->timestamp_ms > h->last_seen_ms)
            h->last_seen_ms = last->timestamp_ms;
    }
    if (h != NULL) { /* as the store counts them back at start (load_fleet) */
        h->samples += res->screens;
        h->samples_stored += res->screens;
    }
    /* its history ring holds the screens stored, as a restart reads them back from the store's
     * buckets (prefill_history): the sparkline and "ran out since" are the same before and
     * after one */
    for (size_t i = 0; h != NULL && !h->priv->dec.have_base && stored != NULL && i < n; i++)
        if (stored[i])
            pw__fleet_note_totals(h, samples[i].timestamp_ms, samples[i].totals.nonpaged_bytes,
                                  samples[i].totals.paged_bytes);
    /* the analysis sees what was stored: a screen already stored by an earlier import of the
     * same capture is not a new point, whatever time it was given this time */
    for (size_t i = 0; h != NULL && ing->on_sample != NULL && i < n; i++)
        if (stored != NULL && stored[i])
            ing->on_sample(ing->on_sample_arg, h, &samples[i]);
    pw_free(stored);
    return 0;
}

/* ---- what an operator does to a host ------------------------------------------------------ */

static pw_host_t *find_or_say(pw_ingest_t *ing, const char *name, pw_diag_t *d)
{
    pw_host_t *h = pw_fleet_find(&ing->fleet, name);
    if (h == NULL)
        pw_diag_set(d, PW_ENOENT, 0, 0, "host", "no host '%s'", name);
    return h;
}

int pw_ingest_import_meta(pw_ingest_t *ing, const char *name, const char *os,
                          const pw_pool_limit_t *nonpaged, const pw_pool_limit_t *paged,
                          pw_diag_t *d)
{
    pw_host_t *h = find_or_say(ing, name, d);
    if (h == NULL)
        return PW_ENOENT;
    if (!pw_host_imported(h))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "host",
                           "host '%s' streams from an agent, which says its own OS and limits",
                           h->name);
    int64_t c = pw_ingest_commit(ing, d); /* the store's call commits; pending samples first */
    if (c < 0)
        return (int)c;
    int r = pw_store_host_limits(ing->store, h->name, nonpaged, paged, d);
    if (r == 0 && os != NULL && os[0] != '\0') {
        /* stored as "windows <os>", the way a Hello's OS is stored and read back at start */
        char text[96];
        snprintf(text, sizeof(text), "windows %s", os);
        r = pw_store_host_os(ing->store, h->name, text, d);
        if (r == 0)
            snprintf(h->os_version, sizeof(h->os_version), "%s", os);
    }
    if (r != 0)
        return r;
    set_limit(h, PW_POOL_NONPAGED, nonpaged);
    set_limit(h, PW_POOL_PAGED, paged);
    return 0;
}

int pw_ingest_retire(pw_ingest_t *ing, const char *name, int keep_history, uint64_t now_ms,
                     pw_diag_t *d)
{
    pw_host_t *h = find_or_say(ing, name, d);
    if (h == NULL)
        return PW_ENOENT;
    pw_host_table_t *t = h->priv;
    if (t->session != NULL)
        return pw_diag_set(d, PW_EAGAIN, 0, 0, "host",
                           "host '%s' has an agent connected: stop the agent first (it would "
                           "come back at once as a new host)",
                           h->name);
    int64_t c = pw_ingest_commit(ing, d);
    if (c < 0)
        return (int)c;
    int r = pw_store_host_retire(ing->store, h->name, keep_history, now_ms, d);
    if (r == PW_ENOENT)
        r = 0; /* a host with nothing stored yet: only the fleet knows it */
    if (r != 0)
        return r;
    /* The entry stays (indexes are stable); its table empties, so the per-tag index drops its
     * rows, and no name lookup finds it again. */
    h->retired = 1;
    ing->fleet.retired++;
    pw__fleet_reset_stream(h, h->counter_width);
    pw_sample_reset(&t->snapshot);
    (void)pw__fleet_snapshot_changes(h, NULL);
    t->hist_n = t->hist_head = 0;
    t->hist_from_store = 0;
    t->n_bigpool = 0;
    pw_fleet_agg_note(&ing->fleet, h);
    return 0;
}

void pw_ingest_big_pool_snap(const Poolwatch__V1__BigPoolSnapshot *bp, pw_bigpool_snap_t *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->tag, bp->tag.data, bp->tag.len < 4 ? bp->tag.len : 4);
    out->taken_ms = bp->taken_ms;
    out->scanned = bp->scanned;
    out->count = bp->count;
    out->bytes = bp->bytes;
    out->nonpaged_count = bp->nonpaged_count;
    out->nonpaged_bytes = bp->nonpaged_bytes;
    out->largest_bytes = bp->largest_bytes;
    out->smallest_bytes = bp->smallest_bytes;
    out->n_hist = bp->n_size_hist < PW_BIGPOOL_SIZE_HIST ? bp->n_size_hist : PW_BIGPOOL_SIZE_HIST;
    if (out->n_hist > 0)
        memcpy(out->size_hist, bp->size_hist, out->n_hist * sizeof(uint64_t));
}

/* The host's slot for tag's snapshot: its own, a free one, or the one received longest ago
 * when the host holds PW_HOST_BIGPOOL_MAX tags. NULL when out of memory. */
static pw_bigpool_snap_t *bigpool_slot(pw_host_table_t *t, const uint8_t *tag)
{
    for (size_t i = 0; i < t->n_bigpool; i++)
        if (memcmp(t->bigpool[i].tag, tag, 4) == 0)
            return &t->bigpool[i];
    if (t->n_bigpool < PW_HOST_BIGPOOL_MAX) {
        if (t->bigpool == NULL &&
            (t->bigpool = pw_calloc(PW_HOST_BIGPOOL_MAX, sizeof(*t->bigpool))) == NULL)
            return NULL;
        return &t->bigpool[t->n_bigpool++];
    }
    pw_bigpool_snap_t *x = &t->bigpool[0]; /* full: the one received longest ago gives way */
    for (size_t i = 1; i < t->n_bigpool; i++)
        if (t->bigpool[i].received_ms < x->received_ms)
            x = &t->bigpool[i];
    return x;
}

int pw_ingest_big_pool(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__BigPoolSnapshot *bp,
                       int automatic, uint64_t now_ms)
{
    (void)ing;
    if (bp->tag.len != 4 || bp->n_size_hist > PW_BIGPOOL_SIZE_HIST)
        return PW_EINVAL;
    pw_bigpool_snap_t *x = bigpool_slot(h->priv, bp->tag.data);
    if (x == NULL)
        return PW_ENOMEM;
    pw_ingest_big_pool_snap(bp, x);
    x->received_ms = now_ms;
    x->automatic = automatic != 0;
    return 0;
}

int pw_ingest_big_pool_restore(pw_ingest_t *ing, const pw_host_t *host,
                               const pw_bigpool_snap_t *snap)
{
    if (host->index >= ing->fleet.n || ing->fleet.hosts[host->index] != host)
        return PW_ENOENT;
    pw_host_t *h = ing->fleet.hosts[host->index]; /* the fleet's own: ingest writes it */
    if (snap->n_hist > PW_BIGPOOL_SIZE_HIST)
        return PW_EINVAL;
    const pw_bigpool_snap_t *have = pw_host_big_pool(h, snap->tag, 4);
    if (have != NULL && have->taken_ms >= snap->taken_ms)
        return 0; /* the agent answered again since */
    pw_bigpool_snap_t *x = bigpool_slot(h->priv, snap->tag);
    if (x == NULL)
        return PW_ENOMEM;
    *x = *snap;
    return 0;
}

int pw_ingest_rename(pw_ingest_t *ing, const char *from, const char *to, pw_diag_t *d)
{
    pw_host_t *h = find_or_say(ing, from, d);
    if (h == NULL)
        return PW_ENOENT;
    size_t n = to ? strlen(to) : 0;
    if (n == 0 || n >= sizeof(h->name))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "name", "name: 1..255 bytes");
    if (!pw_host_imported(h))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "host",
                           "host '%s' streams from an agent: its name is its certificate's",
                           h->name);
    const pw_host_t *other = pw_fleet_find(&ing->fleet, to);
    if (other != NULL && other != h)
        return pw_diag_set(d, PW_EEXIST, 0, 0, "name", "a host named '%s' exists", other->name);
    int64_t c = pw_ingest_commit(ing, d);
    if (c < 0)
        return (int)c;
    int r = pw_store_host_rename(ing->store, h->name, to, d);
    if (r == PW_ENOENT)
        r = 0;
    if (r != 0)
        return r;
    char from_name[sizeof(h->name)];
    snprintf(from_name, sizeof(from_name), "%s", h->name);
    snprintf(h->name, sizeof(h->name), "%s", to);
    if (pw__fleet_reindex(&ing->fleet) != 0) /* the old name's slot would hide the new one */
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "name", "out of memory re-indexing the fleet");
    if (ing->on_rename != NULL)
        ing->on_rename(ing->on_rename_arg, h, from_name);
    return 0;
}

uint64_t pw_ingest_uncommitted(const pw_ingest_t *ing)
{
    return ing->uncommitted;
}

int64_t pw_ingest_commit(pw_ingest_t *ing, pw_diag_t *d)
{
    if (ing->uncommitted == 0)
        return 0;
    int r = pw_store_commit(ing->store, d);
    if (r != 0) {
        rolled_back(ing);
        return r;
    }
    int64_t n = (int64_t)ing->uncommitted;
    committed(ing);
    return n;
}

/* After a restart: the ring's points from before it, read back from the store (what the
 * pressure trend and the sparklines need), ahead of any point that arrived since. */
typedef struct {
    pw_fleet_point_t *p;
    size_t n, cap;
} hist_load_t;

static int hist_push(hist_load_t *hl, uint64_t ts_ms, uint64_t nonpaged, uint64_t paged)
{
    if (hl->n == hl->cap) {
        size_t nc = hl->cap ? hl->cap * 2 : 512;
        pw_fleet_point_t *p = pw_realloc(hl->p, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        hl->p = p;
        hl->cap = nc;
    }
    hl->p[hl->n++] = (pw_fleet_point_t){ts_ms, nonpaged, paged};
    return 0;
}

static int hist_load_cb(void *arg, uint64_t ts_ms, const pw_totals_t *t)
{
    return hist_push(arg, ts_ms, t->nonpaged_bytes, t->paged_bytes);
}

int pw_ingest_restore_history(pw_ingest_t *ing, const pw_host_t *host, uint64_t window_ms)
{
    if (host->index >= ing->fleet.n || ing->fleet.hosts[host->index] != host)
        return 0;
    pw_host_t *h = ing->fleet.hosts[host->index];
    pw_host_table_t *t = h->priv;
    if (!t->hist_from_store)
        return 0;
    t->hist_from_store = 0;
    /* A ring filled from the buckets at start (prefill_history) reads the raw samples up to its
     * last bucket's sample over the span the ring covers at the host's interval: its points
     * (each the last of its minute) give way to them, the ones that arrived since stay. */
    uint64_t pre = t->hist_prefill_to;
    t->hist_prefill_to = 0;
    if (pre != 0 && ring_span_ms(h) > window_ms)
        window_ms = ring_span_ms(h);
    size_t keep_from = 0; /* the ring's points from here on arrived since the start */
    while (pre != 0 && keep_from < t->hist_n && pw_fleet_hist_at(h, keep_from)->ts_ms <= pre)
        keep_from++;
    /* Stored points older than the ring's oldest (the ring holds what arrived since). */
    uint64_t before = pre != 0    ? pre + 1
                      : t->hist_n ? pw_fleet_hist_at(h, 0)->ts_ms
                                  : h->last_seen_ms + 1;
    if (before == 0)
        return 1;
    hist_load_t hl = {0};
    uint64_t from = before > window_ms ? before - window_ms : 0;
    pw_diag_t d;
    int r = pw_store_totals(ing->store, h->name, from, before - 1, hist_load_cb, &hl, &d);
    if (r != 0 && r != PW_ENOENT)
        PW_LOG_WARN(MOD, "%s: history from the store: %s (%s)", h->name, pw_strerror(r), d.msg);
    hist_load_t old = {0};    /* the buckets' points older than the raw samples kept (raw
                                 retention is shorter than the buckets'): they stay */
    if (r == 0 && hl.n > 0) { /* (none read: the buckets' points stay) */
        for (size_t i = 0; r == 0 && i < keep_from; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            if (p->ts_ms < hl.p[0].ts_ms)
                r = hist_push(&old, p->ts_ms, p->nonpaged_bytes, p->paged_bytes);
        }
        for (size_t i = keep_from; r == 0 && i < t->hist_n; i++) {
            const pw_fleet_point_t *p = pw_fleet_hist_at(h, i);
            r = hist_push(&hl, p->ts_ms, p->nonpaged_bytes, p->paged_bytes);
        }
        if (r == 0) { /* oldest first; the ring keeps the newest PW_FLEET_HISTORY */
            t->hist_n = t->hist_head = 0;
            for (size_t i = 0; i < old.n; i++)
                pw__fleet_note_totals(h, old.p[i].ts_ms, old.p[i].nonpaged_bytes,
                                      old.p[i].paged_bytes);
            for (size_t i = 0; i < hl.n; i++)
                pw__fleet_note_totals(h, hl.p[i].ts_ms, hl.p[i].nonpaged_bytes,
                                      hl.p[i].paged_bytes);
        }
    }
    pw_free(old.p);
    pw_free(hl.p);
    return 1;
}
