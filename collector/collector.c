#include "collector.h"
#include "collector_internal.h"
#include "alloc.h"
#include "codec.h"
#include "fleet_agg.h"
#include "frame.h"
#include "log.h"
#include "net.h"
#include "notify.h"
#include "pooltag.h"
#include "remote_write.h"
#include "tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#define MOD "collector"

/* ============================================================================================
 * Per-address connection counts (an open-addressing table; entries are reused, not removed)
 * ========================================================================================== */

#define IPTAB_SIZE 65536
#define COMPACT_BUDGET_MS                                                                          \
    20 /* per commit tick (200 ms): compaction takes at most ~10 % of the loop */

typedef struct {
    char ip[64];
    uint32_t count;
} ipslot_t;

static ipslot_t *ip_slot(pw_collector_t *c, const char *ip)
{
    uint32_t h = 2166136261u;
    for (const char *s = ip; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    for (uint32_t i = 0; i < IPTAB_SIZE; i++) {
        ipslot_t *tab = c->iptab;
        ipslot_t *sl = &tab[(h + i) % IPTAB_SIZE];
        if (sl->ip[0] == '\0') {
            snprintf(sl->ip, sizeof(sl->ip), "%s", ip);
            return sl;
        }
        if (strcmp(sl->ip, ip) == 0)
            return sl;
        if (sl->count == 0 && i > 64) { /* reuse a stale slot far along the probe chain */
            snprintf(sl->ip, sizeof(sl->ip), "%s", ip);
            return sl;
        }
    }
    return NULL;
}

/* ============================================================================================
 * Connections
 * ========================================================================================== */

typedef enum { CONN_HANDSHAKE, CONN_STREAMING } conn_state_t;

typedef struct conn_s {
    pw_collector_t *c;
    pw_tls_conn_t *tls;
    uv_timer_t timer; /* handshake timeout, then idle timeout */
    int timer_closed;
    conn_state_t state;
    pw_frame_reader_t reader;
    pw_host_t *host;
    char peer[64];
    ipslot_t *ip;
    uint64_t pending_seq; /* highest seq put into the store, not yet acked */
    uint64_t acked_seq;
    int clock_warned;         /* the sample times are far from this collector's clock: */
    uint64_t clock_warned_ms; /* said at this uv_now() */
    struct conn_s *next, *prev;
} conn_t;

static void conn_list_remove(pw_collector_t *c, conn_t *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        c->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    k->next = k->prev = NULL;
}

static void conn_maybe_free(conn_t *k)
{
    if (k->tls != NULL || !k->timer_closed)
        return;
    pw_frame_reader_close(&k->reader);
    pw_free(k);
}

static void on_conn_timer_closed(uv_handle_t *h)
{
    conn_t *k = h->data;
    k->timer_closed = 1;
    conn_maybe_free(k);
}

static void conn_close(conn_t *k, const char *why)
{
    if (k->tls != NULL && !pw_tls_is_closing(k->tls)) {
        if (why && k->host)
            PW_LOG_INFO(MOD, "%s (%s): closing: %s", k->host->name, k->peer, why);
        else if (why)
            PW_LOG_INFO(MOD, "%s: closing: %s", k->peer, why);
        pw_tls_close(k->tls);
    }
}

static int conn_send(conn_t *k, const Poolwatch__V1__Envelope *env)
{
    pw_buf_reset(&k->c->out);
    int r = pw_codec_pack_frame(env, PW_FRAME_MAX_DEFAULT, &k->c->out);
    if (r == 0)
        r = pw_tls_write(k->tls, k->c->out.data, k->c->out.len);
    return r;
}

static void send_error(conn_t *k, int code, const char *msg, uint32_t supported_major)
{
    Poolwatch__V1__Error e = POOLWATCH__V1__ERROR__INIT;
    e.code = code;
    e.message = (char *)(uintptr_t)msg;
    e.supported_major = supported_major;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_ERROR;
    env.error = &e;
    conn_send(k, &env);
}

static void send_ack(conn_t *k, uint64_t seq, int need_keyframe)
{
    Poolwatch__V1__Ack a = POOLWATCH__V1__ACK__INIT;
    a.seq = seq;
    a.need_keyframe = need_keyframe;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_ACK;
    env.ack = &a;
    if (conn_send(k, &env) == 0)
        k->acked_seq = seq;
}

static void on_conn_timer(uv_timer_t *t)
{
    conn_t *k = t->data;
    conn_close(k, k->state == CONN_HANDSHAKE ? "no verified Hello in time" : "idle timeout");
}

static int same_instance(const pw_host_t *h, const Poolwatch__V1__Hello *hello)
{
    return h->agent_id_len == hello->agent_id.len && h->boot_id_len == hello->boot_id.len &&
           memcmp(h->agent_id, hello->agent_id.data, h->agent_id_len) == 0 &&
           memcmp(h->boot_id, hello->boot_id.data, h->boot_id_len) == 0;
}

/* An agent id for the log: hex, at most 16 bytes of it. */
static void id_hex(const uint8_t *id, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && i < 16 && o + 3 <= cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%02x", id[i]);
    if (len > 16 && o + 4 <= cap)
        snprintf(out + o, cap - o, "...");
    else if (o == 0 && cap > 0)
        out[0] = '\0';
}

static void handle_hello(conn_t *k, const Poolwatch__V1__Hello *hello)
{
    pw_collector_t *c = k->c;
    char msg[512];
    if (k->state != CONN_HANDSHAKE) {
        send_error(k, PW_EPROTO, "Hello sent twice", 0);
        conn_close(k, "second Hello");
        return;
    }
    if (hello->protocol_major != PW_PROTOCOL_MAJOR) {
        snprintf(msg, sizeof(msg), "protocol major %u not supported; this collector speaks %u",
                 hello->protocol_major, PW_PROTOCOL_MAJOR);
        send_error(k, PW_EVERSION, msg, PW_PROTOCOL_MAJOR);
        conn_close(k, msg);
        return;
    }
    const char *name = hello->host_name;
    char canon[256];
    if (name == NULL || name[0] == '\0' || strlen(name) >= 256 ||
        !pw_tls_peer_match_name(k->tls, name, canon, sizeof(canon))) {
        snprintf(msg, sizeof(msg),
                 "Hello names host '%.255s' but the client certificate is for CN '%s'%s%s",
                 name ? name : "", pw_tls_peer_cn(k->tls) ? pw_tls_peer_cn(k->tls) : "",
                 pw_tls_peer_dns_count(k->tls) ? ", SAN " : "",
                 pw_tls_peer_dns_count(k->tls) ? pw_tls_peer_dns(k->tls, 0) : "");
        send_error(k, PW_EAUTH, msg, 0);
        PW_LOG_WARN(MOD, "refused %s: %s", k->peer, msg);
        conn_close(k, NULL);
        return;
    }
    /* Names compare case-insensitively (DNS): one certificate is one host, spelt as the
     * certificate spells it ("HOST01" from a Windows agent, "host01" in its certificate). */
    if (strcmp(canon, name) != 0) {
        PW_LOG_INFO(MOD, "%s: Hello names host '%s': kept as '%s', its certificate's spelling",
                    k->peer, name, canon);
        name = canon;
    }
    if ((hello->counter_width != 32 && hello->counter_width != 64) || hello->agent_id.len == 0 ||
        hello->agent_id.len > 64 || hello->boot_id.len == 0 || hello->boot_id.len > 64) {
        send_error(k, PW_EPROTO, "Hello: counter_width must be 32 or 64, ids 1..64 bytes", 0);
        conn_close(k, "malformed Hello");
        return;
    }
    pw_host_t *h = pw_fleet_get(&c->fleet, name, hello->counter_width);
    if (h == NULL) {
        conn_close(k, "out of memory");
        return;
    }
    if (h->conn != NULL && h->conn != k) {
        /* The agent came back before its old session timed out, or another agent claims the
         * same host (a cloned machine with the same certificate): say the latter loudly, its
         * samples would interleave with the other's in one host. */
        conn_t *old = h->conn;
        int twin = h->agent_id_len != hello->agent_id.len ||
                   memcmp(h->agent_id, hello->agent_id.data, h->agent_id_len) != 0;
        if (twin) {
            char id_new[40], id_old[40];
            id_hex(hello->agent_id.data, hello->agent_id.len, id_new, sizeof(id_new));
            id_hex(h->agent_id, h->agent_id_len, id_old, sizeof(id_old));
            pw_complain(&c->c_twins, uv_now(&c->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                        "host %s: agent %s from %s replaced agent %s from %s: two agents use "
                        "one certificate (a cloned machine, or host_name set on two hosts)? "
                        "They keep replacing each other's session and their samples mix in "
                        "one host; give each its own host name and certificate (%s vs %s)",
                        name, id_new, k->peer, id_old, old->peer, hello->os_family, h->os_family);
        }
        /* The replaced agent is told why (it logs the collector's refusal). */
        char why[400];
        snprintf(why, sizeof(why), "replaced by a new session of host %s from %s%s", name, k->peer,
                 twin ? " (another agent with this certificate?)" : "");
        send_error(old, PW_ECLOSED, why, 0);
        old->host = NULL;
        /* Twins flap every second: the rate-limited WARN above speaks for them. */
        if (twin)
            PW_LOG_DEBUG(MOD, "%s: closing: %s", old->peer, why);
        conn_close(old, twin ? NULL : why);
    }
    int new_instance = !same_instance(h, hello);
    if (new_instance) {
        uint64_t s = 0;
        pw_store_last_seq(c->store, hello->agent_id.data, hello->agent_id.len, hello->boot_id.data,
                          hello->boot_id.len, &s);
        h->stored_seq = h->committed_seq = s;
        memcpy(h->agent_id, hello->agent_id.data, hello->agent_id.len);
        h->agent_id_len = hello->agent_id.len;
        memcpy(h->boot_id, hello->boot_id.data, hello->boot_id.len);
        h->boot_id_len = hello->boot_id.len;
    }
    if (h->counter_width != hello->counter_width || new_instance) {
        pw_delta_dec_close(&h->dec);
        h->counter_width = hello->counter_width;
        pw_delta_dec_init(&h->dec, h->counter_width, 0);
        h->prev_n = 0;
        h->prev_valid = 0;
        h->dec_stored = 0;
    }
    snprintf(h->os_family, sizeof(h->os_family), "%s", hello->os_family);
    snprintf(h->os_version, sizeof(h->os_version), "%s", hello->os_version);
    snprintf(h->arch, sizeof(h->arch), "%s", hello->arch);
    snprintf(h->agent_version, sizeof(h->agent_version), "%s", hello->agent_version);
    h->os_build = hello->os_build;
    h->source_kind = hello->source_kind;
    h->physical_memory_bytes = hello->physical_memory_bytes;
    h->boot_time_ms = hello->boot_time_ms;
    h->interval_ms = hello->interval_ms;
    if (hello->nonpaged_limit) {
        h->nonpaged_limit_bytes = hello->nonpaged_limit->bytes;
        h->nonpaged_limit_source = hello->nonpaged_limit->source;
        snprintf(h->nonpaged_limit_detail, sizeof(h->nonpaged_limit_detail), "%s",
                 hello->nonpaged_limit->detail);
    }
    if (hello->paged_limit) {
        h->paged_limit_bytes = hello->paged_limit->bytes;
        h->paged_limit_source = hello->paged_limit->source;
        snprintf(h->paged_limit_detail, sizeof(h->paged_limit_detail), "%s",
                 hello->paged_limit->detail);
    }
    h->conn = k;
    k->host = h;
    k->state = CONN_STREAMING;
    /* Everything committed is safe; what is put but not committed yet will be committed by
     * the next tick, so the agent may start after stored_seq (resends are idempotent). */
    pw_frame_reader_set_max(&k->reader, c->cfg->max_frame_bytes);
    uv_timer_start(&k->timer, on_conn_timer, c->cfg->idle_timeout_ms, 0);
    PW_LOG_INFO(MOD, "%s (%s): hello: %s %s %s, agent %s, counters %u-bit, resume after %llu",
                h->name, k->peer, h->os_family, h->os_version, h->arch, h->agent_version,
                h->counter_width, (unsigned long long)h->committed_seq);
    send_ack(k, h->committed_seq, 1);
}

static void store_failed(pw_collector_t *c, int r, const char *msg)
{
    /* The store rolled back everything since the last commit: those samples are no longer
     * stored. Sessions that sent them restart, and their agents resend from the last ack. */
    pw_complain(&c->c_store, uv_now(&c->loop), 1000, 600000, PW_LOG_LVL_ERROR, MOD,
                "store: %s (%s): not acking; sessions will resend", pw_strerror(r), msg);
    for (size_t i = 0; i < c->fleet.n; i++) {
        pw_host_t *h = c->fleet.hosts[i];
        if (h->stored_seq > h->committed_seq) {
            h->stored_seq = h->committed_seq;
            if (h->conn)
                conn_close(h->conn, "store failure: resend needed");
        }
    }
    c->uncommitted = 0;
}

#define CLOCK_SKEW_MS (5 * 60 * 1000)

/* "74 years", "3 days", "5 hours", "12 minutes": how far, roughly, for the log. */
static void span_text(uint64_t ms, char *out, size_t cap)
{
    static const struct {
        uint64_t ms;
        const char *unit;
    } u[] = {
        {31557600000ull, "year"}, {86400000ull, "day"}, {3600000ull, "hour"}, {60000ull, "minute"}};
    size_t i = 0;
    while (i + 1 < sizeof(u) / sizeof(u[0]) && ms < u[i].ms)
        i++;
    uint64_t n = ms / u[i].ms;
    snprintf(out, cap, "%llu %s%s", (unsigned long long)n, u[i].unit, n == 1 ? "" : "s");
}

/* An agent whose sample times are far from this collector's clock at their arrival: say so
 * (its series land at the wrong time; remote write holds back samples from the future), once
 * per session and hour, and once per 10 minutes for one host whose sessions keep replacing
 * each other. Samples are kept either way. Replays and simulations stamp samples from their
 * configured start: only the future is odd there. */
static void check_clock(conn_t *k, const pw_host_t *h, uint64_t ts_ms)
{
    pw_collector_t *c = k->c;
    uint64_t t = uv_now(&c->loop);
    if (k->clock_warned && t - k->clock_warned_ms < 3600000)
        return;
    uv_timeval64_t tv;
    if (uv_gettimeofday(&tv) != 0)
        return;
    uint64_t now = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
    int replay = h->source_kind == POOLWATCH__V1__SOURCE_KIND__SOURCE_POOLMON_REPLAY ||
                 h->source_kind == POOLWATCH__V1__SOURCE_KIND__SOURCE_SIMULATED;
    int ahead = ts_ms > now;
    uint64_t off = ahead ? ts_ms - now : now - ts_ms;
    if (off <= CLOCK_SKEW_MS || (!ahead && replay))
        return;
    k->clock_warned = 1;
    k->clock_warned_ms = t;
    if (c->clock_ms != 0 && t - c->clock_ms < 600000 && strcmp(c->clock_host, h->name) == 0)
        return;
    c->clock_ms = t ? t : 1;
    snprintf(c->clock_host, sizeof(c->clock_host), "%s", h->name);
    char span[48];
    span_text(off, span, sizeof(span));
    PW_LOG_WARN(MOD,
                "host %s (%s): sample time is %s %s of this collector's clock (%s); samples are "
                "kept at the agent's time%s",
                h->name, k->peer, span, ahead ? "ahead" : "behind",
                replay ? "a replay or simulation started in the future?" : "agent clock wrong?",
                ahead && c->rw != NULL ? ", remote write does not send them" : "");
}

static void handle_sample(conn_t *k, const Poolwatch__V1__Sample *s, const uint8_t *payload,
                          size_t len)
{
    pw_collector_t *c = k->c;
    pw_host_t *h = k->host;
    pw_diag_t d;
    if (k->state != CONN_STREAMING || h == NULL) {
        conn_close(k, "sample before Hello");
        return;
    }
    pw_fleet_save_prev(h, s); /* the step's previous rows, for the change columns */
    pw_delta_result_t res;
    int r = pw_delta_apply(&h->dec, s, &res, &d);
    if (r != 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "sample %llu refused: %s: %s", (unsigned long long)s->seq,
                 pw_strerror(r), d.msg);
        send_error(k, r, msg, 0);
        conn_close(k, msg);
        return;
    }
    /* Keep the fleet's per-tag index current (GET /tags reads it); on ENOMEM it is dropped
     * and rebuilt at the next query. */
    pw_fleet_agg_note(&c->fleet, h);
    h->samples++;
    h->last_seen_ms = s->timestamp_ms;
    check_clock(k, h, s->timestamp_ms);
    h->resets += res.resets;
    pw_fleet_note_totals(h, s->timestamp_ms, h->dec.totals.nonpaged_bytes,
                         h->dec.totals.paged_bytes);
    if (res.gap_before) {
        h->gaps += res.gap_before;
        PW_LOG_WARN(MOD, "%s: the agent dropped %llu samples before seq %llu (spool full)", h->name,
                    (unsigned long long)res.gap_before, (unsigned long long)s->seq);
    }
    /* The store can keep the agent's own frame when the decoder's state before it is what the
     * store holds last: the previous applied sample was stored. */
    int follows = h->dec_stored && !s->keyframe && !s->dict_reset;
    h->dec_stored = 0;
    if (s->seq <= h->stored_seq)
        return; /* already stored: a resend after a reconnect */
    char os[96];
    snprintf(os, sizeof(os), "%s %s", h->os_family, h->os_version);
    pw_store_host_t sh = {h->name,        h->agent_id, h->agent_id_len, h->boot_id,
                          h->boot_id_len, os,          h->counter_width};
    r = pw_store_put_frame(c->store, &sh, &h->dec, payload, len, s->base_seq, follows,
                           res.gap_before, &d);
    if (r < 0) {
        store_failed(c, r, d.msg);
        return;
    }
    h->dec_stored = r == 0;
    h->stored_seq = s->seq;
    k->pending_seq = s->seq;
    c->uncommitted++;
    pw_collector_analysis_on_sample(c, h);
}

static void handle_frame(conn_t *k, const uint8_t *p, size_t len)
{
    Poolwatch__V1__Envelope *env;
    pw_diag_t d;
    int r = pw_codec_unpack(p, len, &env, &d);
    if (r != 0) {
        conn_close(k, d.msg);
        return;
    }
    switch (env->msg_case) {
    case POOLWATCH__V1__ENVELOPE__MSG_HELLO:
        handle_hello(k, env->hello);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_SAMPLE:
        handle_sample(k, env->sample, p, len);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_COMMAND_RESULT:
        pw_collector_command_result(k->c, k->host, env->command_result);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_HEARTBEAT:
        break;
    default:
        conn_close(k, "unexpected message");
    }
    pw_codec_free(env);
}

static void on_conn_data(pw_tls_conn_t *tls, const uint8_t *data, size_t len)
{
    conn_t *k = pw_tls_data(tls);
    pw_diag_t d;
    if (k->state == CONN_STREAMING) {
        uv_timer_start(&k->timer, on_conn_timer, k->c->cfg->idle_timeout_ms, 0);
        if (k->host)
            k->host->last_contact_ms = uv_now(&k->c->loop);
    }
    int r = pw_frame_reader_feed(&k->reader, data, len, &d);
    const uint8_t *p;
    size_t plen;
    while (r == 0 && k->tls != NULL && !pw_tls_is_closing(tls) &&
           (r = pw_frame_reader_next(&k->reader, &p, &plen, &d)) == 1) {
        handle_frame(k, p, plen);
        r = 0;
    }
    if (r < 0)
        conn_close(k, d.msg);
}

static void on_conn_close(pw_tls_conn_t *tls, int status, const char *msg)
{
    conn_t *k = pw_tls_data(tls);
    pw_collector_t *c = k->c;
    if (status != 0 && status != PW_ECLOSED)
        PW_LOG_INFO(MOD, "%s (%s): %s: %s", k->host ? k->host->name : "?", k->peer,
                    pw_strerror(status), msg ? msg : "");
    if (k->host && k->host->conn == k)
        k->host->conn = NULL;
    if (k->ip && k->ip->count)
        k->ip->count--;
    c->n_conns--;
    conn_list_remove(c, k);
    k->tls = NULL;
    uv_close((uv_handle_t *)&k->timer, on_conn_timer_closed);
}

static void on_conn_established(pw_tls_conn_t *tls)
{
    (void)tls; /* the handshake timer keeps running until a verified Hello */
}

static const pw_tls_cbs_t conn_cbs = {on_conn_established, on_conn_data, on_conn_close};

static void on_connection(uv_stream_t *server, int status)
{
    pw_collector_t *c = server->data;
    if (status != 0) {
        PW_LOG_WARN(MOD, "accept: %s", uv_strerror(status));
        return;
    }
    if (c->n_conns >= (size_t)c->cfg->max_connections) {
        pw_complain(&c->c_conns, uv_now(&c->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "connection limit %lld reached: refusing", (long long)c->cfg->max_connections);
        pw_net_reject(server);
        return;
    }
    conn_t *k = pw_calloc(1, sizeof(*k));
    if (k == NULL) {
        pw_net_reject(server);
        return;
    }
    k->c = c;
    pw_diag_t d;
    if (pw_tls_accept(&k->tls, server, c->tls_ctx, &conn_cbs, k, &d) != 0) {
        pw_free(k);
        pw_net_reject(server);
        return;
    }
    pw_frame_reader_init(&k->reader, c->cfg->hello_max_frame_bytes);
    uv_timer_init(&c->loop, &k->timer);
    k->timer.data = k;
    k->next = c->conns;
    if (c->conns)
        c->conns->prev = k;
    c->conns = k;
    c->n_conns++;
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    if (uv_tcp_getpeername(pw_tls_tcp(k->tls), (struct sockaddr *)&ss, &sl) == 0)
        pw_net_addr_format((struct sockaddr *)&ss, k->peer, sizeof(k->peer));
    char ip[sizeof(k->peer)];
    memcpy(ip, k->peer, sizeof(ip));
    char *colon = strrchr(ip, ':');
    if (colon && ip[0] != '[')
        *colon = '\0';
    k->ip = ip_slot(c, ip);
    if (k->ip && ++k->ip->count > (uint32_t)c->cfg->max_connections_per_ip) {
        pw_complain(&c->c_conns, uv_now(&c->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "%s: more than %lld connections from one address: refusing", ip,
                    (long long)c->cfg->max_connections_per_ip);
        conn_close(k, NULL);
    }
    uv_timer_start(&k->timer, on_conn_timer, c->cfg->handshake_timeout_ms, 0);
}

/* ============================================================================================
 * Group commit, retention
 * ========================================================================================== */

/* Compacts chunks whose window ended (pw_store_compact), after the acks went out and
 * within a small budget, so that a fleet's chunks ending at the same hour do not hold the loop. */
static void compact_some(pw_collector_t *c)
{
    pw_diag_t d;
    int64_t n = pw_store_compact(c->store, COMPACT_BUDGET_MS, &d);
    if (n < 0)
        pw_complain(&c->c_store, uv_now(&c->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                    "store: compacting closed chunks: %s (%s)", pw_strerror((int)n), d.msg);
}

static void on_commit_timer(uv_timer_t *t)
{
    pw_collector_t *c = t->data;
    if (c->uncommitted == 0) {
        compact_some(c);
        return;
    }
    pw_diag_t d;
    int r = pw_store_commit(c->store, &d);
    if (r != 0) {
        store_failed(c, r, d.msg);
        return;
    }
    pw_complain_release(&c->c_store, MOD, "store");
    c->uncommitted = 0;
    for (size_t i = 0; i < c->fleet.n; i++)
        c->fleet.hosts[i]->committed_seq = c->fleet.hosts[i]->stored_seq;
    for (conn_t *k = c->conns; k != NULL; k = k->next)
        if (k->host && k->pending_seq > k->acked_seq && !pw_tls_is_closing(k->tls))
            send_ack(k, k->pending_seq, 0);
    compact_some(c);
}

static void on_retention_timer(uv_timer_t *t)
{
    pw_collector_t *c = t->data;
    pw_diag_t d;
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    int64_t r = pw_store_retention(c->store, (uint64_t)tv.tv_sec * 1000, &d);
    if (r < 0)
        PW_LOG_WARN(MOD, "retention: %s (%s)", pw_strerror((int)r), d.msg);
}

/* SIGHUP: the tokens file again (a token added or revoked without a restart). */
static void on_sighup(uv_signal_t *s, int signum)
{
    (void)signum;
    pw_collector_t *c = s->data;
    pw_diag_t d;
    int64_t n = pw_collector_http_reload_tokens(c, &d);
    if (n >= 0)
        PW_LOG_INFO(MOD, "SIGHUP: %s reloaded, %lld tokens", c->cfg->tokens_file, (long long)n);
    else
        PW_LOG_WARN(MOD, "SIGHUP: tokens not reloaded (the previous ones stay): %s", d.msg);
    if (c->rw != NULL && pw_remote_write_reload_token(c->rw, &d) != 0)
        PW_LOG_WARN(MOD, "SIGHUP: remote write token not reloaded (the previous one stays): %s",
                    d.msg);
}

/* The remote writer's view of the fleet, read at each of its intervals. */
static void rw_source(void *arg, const pw_fleet_t **f, const pw_suspect_t **sp, size_t *ns)
{
    pw_collector_t *c = arg;
    *f = &c->fleet;
    *ns = pw_collector_suspects(c, sp);
}

/* remote_write.* of the configuration as the writer's options. */
static void rw_opts(const pw_collector_cfg_t *cfg, pw_remote_write_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->url = cfg->rw_url;
    o->interval_ms = cfg->rw_interval_ms;
    o->tags_per_host = (size_t)cfg->rw_tags_per_host;
    o->bearer_token_file = cfg->rw_bearer_token_file;
    o->ca_file = cfg->rw_ca_file;
    o->cert_file = cfg->rw_cert_file;
    o->key_file = cfg->rw_key_file;
    o->headers = (const char *const *)cfg->rw_headers.items;
    o->n_headers = cfg->rw_headers.n;
    o->timeout_ms = cfg->rw_timeout_ms;
    o->max_queue = (size_t)cfg->rw_max_queue;
    o->max_series_per_request = (size_t)cfg->rw_max_series_per_request;
}

static void on_signal(uv_signal_t *s, int signum)
{
    pw_collector_t *c = s->data;
    PW_LOG_INFO(MOD, "signal %d: stopping", signum);
    uv_stop(&c->loop);
}

/* Rebuilds what the fleet view needs from the store: hosts and their last tables. */
static int load_fleet(pw_collector_t *c, pw_diag_t *d)
{
    pw_store_host_info_t *hosts;
    size_t n;
    int r = pw_store_hosts(c->store, &hosts, &n, d);
    if (r != 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        pw_host_t *h = pw_fleet_get(&c->fleet, hosts[i].name, hosts[i].counter_width);
        if (h == NULL) {
            r = PW_ENOMEM;
            break;
        }
        memcpy(h->agent_id, hosts[i].agent_id, hosts[i].agent_id_len);
        h->agent_id_len = hosts[i].agent_id_len;
        memcpy(h->boot_id, hosts[i].boot_id, hosts[i].boot_id_len);
        h->boot_id_len = hosts[i].boot_id_len;
        h->stored_seq = h->committed_seq = hosts[i].last_seq;
        h->last_seen_ms = hosts[i].last_seen_ms;
        /* "family version" as handle_hello stores it; an import stores the family alone. */
        char *sp = strchr(hosts[i].os, ' ');
        if (sp) {
            snprintf(h->os_family, sizeof(h->os_family), "%.*s", (int)(sp - hosts[i].os),
                     hosts[i].os);
            snprintf(h->os_version, sizeof(h->os_version), "%s", sp + 1);
        } else {
            snprintf(h->os_family, sizeof(h->os_family), "%s", hosts[i].os);
        }
        pw_store_latest(c->store, h->name, &h->snapshot, NULL);
        h->hist_from_store = 1; /* read by the first analysis pass, under its time slices */
    }
    pw_store_hosts_free(hosts, n);
    PW_LOG_INFO(MOD, "rebuilt %zu hosts from the store", c->fleet.n);
    return r;
}

int pw_collector_run(const pw_collector_cfg_t *cfg, pw_diag_t *d)
{
    pw_collector_t *c = pw_calloc(1, sizeof(*c));
    if (c == NULL)
        return PW_ENOMEM;
    c->cfg = cfg;
    c->iptab = pw_calloc(IPTAB_SIZE, sizeof(ipslot_t));
    int r = c->iptab ? uv_loop_init(&c->loop) : PW_ENOMEM;
    if (r != 0) {
        pw_free(c->iptab);
        pw_free(c);
        return r;
    }
    pw_fleet_init(&c->fleet);
    pw_sample_init(&c->scratch);
    pw_buf_init(&c->out, PW_FRAME_MAX_DEFAULT + 16);
    pw_store_opts_t so;
    memset(&so, 0, sizeof(so));
    so.raw_retention_ms = cfg->raw_retention_ms;
    so.m1_retention_ms = cfg->m1_retention_ms;
    so.m15_retention_ms = cfg->m15_retention_ms;
    pw_tls_ctx_opts_t to = {.role = PW_TLS_SERVER,
                            .ca_file = cfg->ca_file,
                            .cert_file = cfg->cert_file,
                            .key_file = cfg->key_file};
    char host[256];
    uint16_t port;
    struct sockaddr_storage ss;
    if ((r = pw_store_open(cfg->db_path, &so, &c->store, d)) != 0 || (r = load_fleet(c, d)) != 0 ||
        (r = pw_tls_ctx_new(&c->tls_ctx, &to, d)) != 0)
        goto out;
    if (pw_net_split_host_port(cfg->listen, 7070, host, sizeof(host), &port, NULL) != 0 ||
        pw_net_addr_from_literal(host, port, &ss) != 0) {
        r = pw_diag_set(d, PW_ECONFIG, 0, 0, "listen", "listen address '%s' is not IP:port",
                        cfg->listen);
        goto out;
    }
    uv_tcp_init(&c->loop, &c->server);
    c->server.data = c;
    if ((r = uv_tcp_bind(&c->server, (struct sockaddr *)&ss, 0)) != 0 ||
        (r = uv_listen((uv_stream_t *)&c->server, 1024, on_connection)) != 0) {
        pw_diag_set(d, r, 0, 0, "listen", "cannot listen on %s: %s", cfg->listen, uv_strerror(r));
        goto out;
    }
    c->agent_port = pw_net_bound_port(&c->server);
    if ((r = pw_collector_http_start(c, d)) != 0)
        goto out;
    pw_collector_analysis_start(c);
    if (cfg->rw_url && cfg->rw_url[0]) {
        pw_remote_write_opts_t ro;
        rw_opts(cfg, &ro);
        ro.source = rw_source;
        ro.source_arg = c;
        if ((r = pw_remote_write_new(&c->loop, &ro, &c->rw, d)) != 0)
            goto out;
        PW_LOG_INFO(MOD, "remote write to %s every %llu ms, %lld tags per host", cfg->rw_url,
                    (unsigned long long)cfg->rw_interval_ms, (long long)cfg->rw_tags_per_host);
    }
    uv_timer_init(&c->loop, &c->commit_timer);
    c->commit_timer.data = c;
    uv_timer_start(&c->commit_timer, on_commit_timer, cfg->commit_interval_ms,
                   cfg->commit_interval_ms);
    uv_timer_init(&c->loop, &c->retention_timer);
    c->retention_timer.data = c;
    uv_timer_start(&c->retention_timer, on_retention_timer, 60000, 600000);
    uv_signal_init(&c->loop, &c->sigint);
    uv_signal_init(&c->loop, &c->sigterm);
    c->sigint.data = c->sigterm.data = c;
    uv_signal_start(&c->sigint, on_signal, SIGINT);
    uv_signal_start(&c->sigterm, on_signal, SIGTERM);
    uv_signal_init(&c->loop, &c->sighup);
    c->sighup.data = c;
    uv_signal_start(&c->sighup, on_sighup, SIGHUP);
    PW_LOG_INFO(MOD, "agents: %s (port %d), store %s", cfg->listen, c->agent_port, cfg->db_path);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    /* Commit what arrived last; acks for it are lost with the sessions, which is safe. */
    on_commit_timer(&c->commit_timer);
    r = 0;
out:
    /* Sessions, the API and the analysis close their own handles (a TLS session may still
     * flush its close_notify); we close ours, then let the loop run until all are closed. */
    for (conn_t *k = c->conns; k != NULL; k = k->next)
        conn_close(k, NULL);
    pw_collector_http_stop(c);
    pw_collector_analysis_stop(c);
    pw_remote_write_close(c->rw);
    c->rw = NULL;
    pw_net_close_if_open((uv_handle_t *)&c->server, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->commit_timer, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->retention_timer, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sigint, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sigterm, &c->loop);
    pw_net_close_if_open((uv_handle_t *)&c->sighup, &c->loop);
    pw_net_loop_drain_close(&c->loop);
    pw_store_close(c->store);
    pw_tls_ctx_free(c->tls_ctx);
    pw_fleet_close(&c->fleet);
    pw_sample_close(&c->scratch);
    pw_buf_close(&c->out);
    pw_free(c->iptab);
    pw_free(c);
    return r;
}

/* ============================================================================================
 * Commands to agents (used by the API)
 * ========================================================================================== */

int pw_collector_send_command(pw_collector_t *c, pw_host_t *h, const Poolwatch__V1__Command *cmd)
{
    (void)c;
    conn_t *k = h->conn;
    if (k == NULL || k->tls == NULL || pw_tls_is_closing(k->tls))
        return PW_ECLOSED;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_COMMAND;
    env.command = (Poolwatch__V1__Command *)(uintptr_t)cmd;
    return conn_send(k, &env);
}

/* ============================================================================================
 * --check-config
 * ========================================================================================== */

static int check_listen(const char *what, const char *v, pw_diag_t *d)
{
    char host[256];
    uint16_t port;
    struct sockaddr_storage ss;
    if (pw_net_split_host_port(v, 7070, host, sizeof(host), &port, NULL) != 0 ||
        pw_net_addr_from_literal(host, port, &ss) != 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, what, "%s: '%s' is not IP:port", what, v);
    return 0;
}

int pw_collector_check(const pw_collector_cfg_t *cfg, pw_diag_t *d)
{
    int r = check_listen("agents.listen", cfg->listen, d);
    if (r == 0 && cfg->http_listen && cfg->http_listen[0])
        r = check_listen("http.listen", cfg->http_listen, d);
    if (r != 0)
        return r;
    pw_tls_ctx_t *ctx;
    pw_tls_ctx_opts_t to = {.role = PW_TLS_SERVER,
                            .ca_file = cfg->ca_file,
                            .cert_file = cfg->cert_file,
                            .key_file = cfg->key_file};
    if ((r = pw_tls_ctx_new(&ctx, &to, d)) != 0)
        return r;
    pw_tls_ctx_free(ctx);
    pw_notify_opts_t no = {.webhook_url = cfg->webhook_url,
                           .alertmanager_url = cfg->alertmanager_url};
    if ((r = pw_notify_check(&no, d)) != 0)
        return r;
    pw_remote_write_opts_t ro;
    rw_opts(cfg, &ro);
    if ((r = pw_remote_write_check(&ro, d)) != 0)
        return r;
    if (cfg->tokens_file && cfg->tokens_file[0]) {
        pw_tokens_t *t;
        if ((r = pw_tokens_load(cfg->tokens_file, &t, d)) != 0)
            return r;
        pw_tokens_free(t);
    }
    if (cfg->pooltag_file && cfg->pooltag_file[0]) {
        pw_pooltag_t *pt;
        if ((r = pw_pooltag_load(cfg->pooltag_file, NULL, &pt, d)) != 0)
            return r;
        pw_pooltag_free(pt);
    }
#ifndef _WIN32
    if (cfg->db_path && strcmp(cfg->db_path, ":memory:") != 0) {
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s", cfg->db_path);
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        if (access(dir, W_OK) != 0)
            return pw_diag_set(d, PW_EACCES, 0, 0, "store.path",
                               "store.path: directory '%s' is missing or not writable", dir);
    }
#endif
    return 0;
}
