/* session.c: one agent connection: TLS, then a verified Hello, then Sample frames (handed to
 * ingest), CommandResults and heartbeats; the handshake and idle timeouts. */
#include "alloc.h"
#include "codec.h"
#include "listener_internal.h"

#include <stdio.h>
#include <string.h>

#define MOD "collector"

static void conn_maybe_free(pw_session_t *k)
{
    if (k->tls != NULL || !k->timer_closed)
        return;
    pw_frame_reader_close(&k->reader);
    pw_free(k);
}

static void on_conn_timer_closed(uv_handle_t *h)
{
    pw_session_t *k = h->data;
    k->timer_closed = 1;
    conn_maybe_free(k);
}

void pw__session_close(pw_session_t *k, const char *why)
{
    if (k->tls != NULL && !pw_tls_is_closing(k->tls)) {
        if (why && k->host)
            PW_LOG_INFO(MOD, "%s (%s): closing: %s", k->host->name, k->peer, why);
        else if (why)
            PW_LOG_INFO(MOD, "%s: closing: %s", k->peer, why);
        pw_tls_close(k->tls);
    }
}

int pw__session_send(pw_session_t *k, const Poolwatch__V1__Envelope *env)
{
    pw_buf_reset(&k->l->out);
    int r = pw_codec_pack_frame(env, PW_FRAME_MAX_DEFAULT, &k->l->out);
    if (r == 0)
        r = pw_tls_write(k->tls, k->l->out.data, k->l->out.len);
    return r;
}

static void send_error(pw_session_t *k, int code, const char *msg, uint32_t supported_major)
{
    Poolwatch__V1__Error e = POOLWATCH__V1__ERROR__INIT;
    e.code = code;
    e.message = (char *)(uintptr_t)msg;
    e.supported_major = supported_major;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_ERROR;
    env.error = &e;
    pw__session_send(k, &env);
}

void pw__session_send_ack(pw_session_t *k, uint64_t seq, int need_keyframe)
{
    Poolwatch__V1__Ack a = POOLWATCH__V1__ACK__INIT;
    a.seq = seq;
    a.need_keyframe = need_keyframe;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_ACK;
    env.ack = &a;
    if (pw__session_send(k, &env) == 0)
        k->acked_seq = seq;
}

static void on_conn_timer(uv_timer_t *t)
{
    pw_session_t *k = t->data;
    if (k->state == PW_SESSION_HANDSHAKE) {
        /* Raw connections come by the hundred: one rate-limited line speaks for them. */
        pw_complain(&k->l->c_handshake, uv_now(k->l->loop), 1000, 600000, PW_LOG_LVL_INFO, MOD,
                    "%s: closing: no verified Hello in time", k->peer);
        pw__session_close(k, NULL);
        return;
    }
    pw__session_close(k, "idle timeout");
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

void pw__session_uncount_ip(pw_session_t *k)
{
    if (k->ip_counted && k->ip && k->ip->count)
        k->ip->count--;
    k->ip_counted = 0;
}

void pw__session_start_timer(pw_session_t *k, uint64_t ms)
{
    uv_timer_start(&k->timer, on_conn_timer, ms, 0);
}

/* Reads a protobuf varint at *p (< end); 0 when it does not end in time. */
static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 1;
    }
    return 0;
}

/* The bytes of the last length-delimited field `field` of the message in [p, end), or NULL.
 * protobuf-c hands a string over NUL-terminated: a NUL inside it is seen only here. */
static const uint8_t *wire_field(const uint8_t *p, const uint8_t *end, uint32_t field, size_t *len)
{
    const uint8_t *found = NULL;
    uint64_t key, v;
    while (p < end && wire_varint(&p, end, &key)) {
        switch (key & 7) {
        case 0:
            if (!wire_varint(&p, end, &v))
                return NULL;
            break;
        case 1:
        case 5:
            v = (key & 7) == 1 ? 8 : 4;
            if (v > (uint64_t)(end - p))
                return NULL;
            p += v;
            break;
        case 2:
            if (!wire_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return NULL;
            if ((key >> 3) == field) {
                found = p;
                *len = (size_t)v;
            }
            p += v;
            break;
        default:
            return NULL;
        }
    }
    return found;
}

/* 1 when the Envelope's Hello.host_name holds a NUL byte (truncated by the decoder). */
static int host_name_has_nul(const uint8_t *payload, size_t len)
{
    size_t hl, nl;
    const uint8_t *hello = wire_field(payload, payload + len, 1, &hl);
    const uint8_t *name = hello ? wire_field(hello, hello + hl, 5, &nl) : NULL;
    return name != NULL && memchr(name, 0, nl) != NULL;
}

static void handle_hello(pw_session_t *k, const Poolwatch__V1__Hello *hello, int nul_in_host_name)
{
    pw_listener_t *l = k->l;
    char msg[512];
    if (k->state != PW_SESSION_HANDSHAKE) {
        send_error(k, PW_EPROTO, "Hello sent twice", 0);
        pw__session_close(k, "second Hello");
        return;
    }
    if (hello->protocol_major != PW_PROTOCOL_MAJOR) {
        snprintf(msg, sizeof(msg), "protocol major %u not supported; this collector speaks %u",
                 hello->protocol_major, PW_PROTOCOL_MAJOR);
        send_error(k, PW_EVERSION, msg, PW_PROTOCOL_MAJOR);
        pw__session_close(k, msg);
        return;
    }
    const char *name = hello->host_name;
    char canon[256], clean[256];
    if (!pw_tls_peer_has_ou(k->tls, PW_AGENT_CERT_OU)) {
        /* Any certificate of the CA is not an agent: the CLI's may not send data. */
        snprintf(msg, sizeof(msg),
                 "the client certificate (CN '%s') is not an agent's: its subject has no OU "
                 "'" PW_AGENT_CERT_OU "' (deploy/pki.sh --agent issues such certificates)",
                 pw_tls_peer_cn(k->tls));
        send_error(k, PW_EAUTH, msg, 0);
        PW_LOG_WARN(MOD, "refused %s: %s", k->peer, msg);
        pw__session_close(k, NULL);
        return;
    }
    if (nul_in_host_name) {
        send_error(k, PW_EPROTO, "Hello: host name with a NUL byte", 0);
        PW_LOG_WARN(MOD, "refused %s: Hello names host '%s' with a NUL byte after it", k->peer,
                    pw_log_clean(clean, sizeof(clean), name));
        pw__session_close(k, NULL);
        return;
    }
    if (name == NULL || name[0] == '\0' || strlen(name) >= 256 ||
        !pw_tls_peer_match_name(k->tls, name, canon, sizeof(canon))) {
        snprintf(msg, sizeof(msg),
                 "Hello names host '%s' but the client certificate is for CN '%s'%s%s",
                 pw_log_clean(clean, sizeof(clean), name),
                 pw_tls_peer_cn(k->tls) ? pw_tls_peer_cn(k->tls) : "",
                 pw_tls_peer_dns_count(k->tls) ? ", SAN " : "",
                 pw_tls_peer_dns_count(k->tls) ? pw_tls_peer_dns(k->tls, 0) : "");
        send_error(k, PW_EAUTH, msg, 0);
        PW_LOG_WARN(MOD, "refused %s: %s", k->peer, msg);
        pw__session_close(k, NULL);
        return;
    }
    /* Names compare case-insensitively (DNS): one certificate is one host, spelt as the
     * certificate spells it ("HOST01" from a Windows agent, "host01" in its certificate). */
    if (strcmp(canon, name) != 0) {
        PW_LOG_INFO(MOD, "%s: Hello names host '%s': kept as '%s', its certificate's spelling",
                    k->peer, name, canon);
        name = canon;
    }
    pw_ingest_hello_res_t res;
    pw_diag_t d;
    int r = pw_ingest_hello(l->ing, hello, name, k, &res, &d);
    if (r == PW_EPROTO) {
        send_error(k, PW_EPROTO, d.msg, 0);
        pw__session_close(k, "malformed Hello");
        return;
    }
    if (r != 0) {
        pw__session_close(k, "out of memory");
        return;
    }
    pw_host_t *h = res.host;
    if (res.replaced != NULL) {
        /* The agent came back before its old session timed out, or another agent claims the
         * same host (a cloned machine with the same certificate): say the latter loudly, its
         * samples would interleave with the other's in one host. */
        pw_session_t *old = res.replaced;
        if (res.twin) {
            char id_new[40], id_old[40];
            id_hex(hello->agent_id.data, hello->agent_id.len, id_new, sizeof(id_new));
            id_hex(old->agent_id, old->agent_id_len, id_old, sizeof(id_old));
            pw_complain(&l->c_twins, uv_now(l->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                        "host %s: agent %s from %s replaced agent %s from %s: two agents use "
                        "one certificate (a cloned machine, or host_name set on two hosts)? "
                        "They keep replacing each other's session and their samples mix in "
                        "one host; give each its own host name and certificate (%s vs %s)",
                        name, id_new, k->peer, id_old, old->peer, h->os_family, res.old_os_family);
        }
        /* The replaced agent is told why (it logs the collector's refusal). */
        char why[400];
        snprintf(why, sizeof(why), "replaced by a new session of host %s from %s%s", name, k->peer,
                 res.twin ? " (another agent with this certificate?)" : "");
        send_error(old, PW_ECLOSED, why, 0);
        old->host = NULL;
        /* Twins flap every second: the rate-limited WARN above speaks for them. */
        if (res.twin)
            PW_LOG_DEBUG(MOD, "%s: closing: %s", old->peer, why);
        pw__session_close(old, res.twin ? NULL : why);
    }
    memcpy(k->agent_id, hello->agent_id.data, hello->agent_id.len);
    k->agent_id_len = hello->agent_id.len;
    k->host = h;
    k->state = PW_SESSION_STREAMING;
    pw__session_uncount_ip(k); /* verified: not held against its address's limit */
    pw_frame_reader_set_max(&k->reader, l->o.max_frame_bytes);
    uv_timer_start(&k->timer, on_conn_timer, l->o.idle_timeout_ms, 0);
    PW_LOG_INFO(MOD, "%s (%s): hello: %s %s %s, agent %s, counters %u-bit, resume after %llu",
                h->name, k->peer, h->os_family, h->os_version, h->arch, h->agent_version,
                h->counter_width, (unsigned long long)res.resume_seq);
    pw__session_send_ack(k, res.resume_seq, 1);
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
static void check_clock(pw_session_t *k, const pw_host_t *h, uint64_t ts_ms)
{
    pw_listener_t *c = k->l;
    uint64_t t = uv_now(c->loop);
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
                ahead && c->o.remote_write_on ? ", remote write does not send them" : "");
}

/* Why an agent lost samples (Sample.gap_cause), for the log. */
static const char *gap_cause_text(int cause)
{
    switch (cause) {
    case POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_FULL:
        return "spool full: the oldest unacked samples were dropped";
    case POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_CORRUPT:
        return "spool corrupt: spooled samples failed their checksum";
    case POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_WRITE:
        return "spool write failed: disk full or I/O error";
    default:
        return "cause not given";
    }
}

static void handle_sample(pw_session_t *k, const Poolwatch__V1__Sample *s, const uint8_t *payload,
                          size_t len)
{
    pw_listener_t *l = k->l;
    pw_host_t *h = k->host;
    pw_diag_t d;
    if (k->state != PW_SESSION_STREAMING || h == NULL) {
        pw__session_close(k, "sample before Hello");
        return;
    }
    pw_ingest_frame_res_t res;
    int store_failed;
    int r = pw_ingest_frame(l->ing, h, s, payload, len, &res, &store_failed, &d);
    if (r != 0 && store_failed) {
        pw__listener_store_failed(l, r, d.msg);
        return;
    }
    if (r != 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "sample %llu refused: %s: %s", (unsigned long long)s->seq,
                 pw_strerror(r), d.msg);
        send_error(k, r, msg, 0);
        pw__session_close(k, msg);
        return;
    }
    check_clock(k, h, s->timestamp_ms);
    if (res.gap_before)
        PW_LOG_WARN(MOD, "%s: the agent lost %llu samples before seq %llu (%s)", h->name,
                    (unsigned long long)res.gap_before, (unsigned long long)s->seq,
                    gap_cause_text(s->gap_cause));
    if (res.events)
        PW_LOG_WARN(MOD, "%s: %zu pool event%s from the System log (seq %llu)", h->name, res.events,
                    res.events == 1 ? "" : "s", (unsigned long long)s->seq);
    if (res.stored_seq) {
        k->pending_seq = res.stored_seq;
        pw__listener_stored(l, len);
    }
}

static void handle_frame(pw_session_t *k, const uint8_t *p, size_t len)
{
    Poolwatch__V1__Envelope *env;
    pw_diag_t d;
    int r = pw_codec_unpack(p, len, &env, &d);
    if (r != 0) {
        send_error(k, r, d.msg, 0); /* docs/protocol.md: every refusal is told */
        pw__session_close(k, d.msg);
        return;
    }
    switch (env->msg_case) {
    case POOLWATCH__V1__ENVELOPE__MSG_HELLO:
        handle_hello(k, env->hello, host_name_has_nul(p, len));
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_SAMPLE:
        handle_sample(k, env->sample, p, len);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_COMMAND_RESULT:
        if (k->host && k->l->o.on_result)
            k->l->o.on_result(k->l->o.on_result_arg, k->host, env->command_result);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_HEARTBEAT:
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_GOODBYE:
        if (k->host) {
            pw_ingest_goodbye(k->l->ing, k->host, env->goodbye);
            PW_LOG_INFO(MOD, "%s: agent stopped (%s): goodbye", k->host->name,
                        k->host->stop_reason[0] ? k->host->stop_reason : "no reason given");
        }
        break;
    default:
        send_error(k, PW_EPROTO, "unexpected message", 0);
        pw__session_close(k, "unexpected message");
    }
    pw_codec_free(env);
}

static void on_conn_data(pw_tls_conn_t *tls, const uint8_t *data, size_t len)
{
    pw_session_t *k = pw_tls_data(tls);
    pw_diag_t d;
    if (k->state == PW_SESSION_STREAMING) {
        uv_timer_start(&k->timer, on_conn_timer, k->l->o.idle_timeout_ms, 0);
        if (k->host)
            pw_ingest_contact(k->l->ing, k->host, uv_now(k->l->loop));
    }
    int r = pw_frame_reader_feed(&k->reader, data, len, &d);
    const uint8_t *p;
    size_t plen;
    while (r == 0 && k->tls != NULL && !pw_tls_is_closing(tls) &&
           (r = pw_frame_reader_next(&k->reader, &p, &plen, &d)) == 1) {
        handle_frame(k, p, plen);
        r = 0;
    }
    if (r < 0) {
        send_error(k, r, d.msg, 0); /* oversized or zero-length frame */
        pw__session_close(k, d.msg);
    }
}

static void on_conn_close(pw_tls_conn_t *tls, int status, const char *msg)
{
    pw_session_t *k = pw_tls_data(tls);
    pw_listener_t *c = k->l;
    if (status != 0 && status != PW_ECLOSED)
        PW_LOG_INFO(MOD, "%s (%s): %s: %s",
                    k->host                            ? k->host->name
                    : k->state == PW_SESSION_HANDSHAKE ? "session before a verified Hello"
                                                       : "session",
                    k->peer, pw_strerror(status), msg ? msg : "");
    pw_ingest_detach(c->ing, k->host, k);
    pw__session_uncount_ip(k);
    c->n_sessions--;
    if (k->prev)
        k->prev->next = k->next;
    else
        c->sessions = k->next;
    if (k->next)
        k->next->prev = k->prev;
    k->next = k->prev = NULL;
    k->tls = NULL;
    uv_close((uv_handle_t *)&k->timer, on_conn_timer_closed);
}

static void on_conn_established(pw_tls_conn_t *tls)
{
    (void)tls; /* the handshake timer keeps running until a verified Hello */
}

const pw_tls_cbs_t pw__session_cbs = {on_conn_established, on_conn_data, on_conn_close};
