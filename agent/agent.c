#include "agent.h"
#include "alloc.h"
#include "codec.h"
#include "daemon.h"
#include "delta.h"
#include "bigpool.h"
#include "evsub.h"
#include "findtag.h"
#include "selfstat.h"
#include "frame.h"
#include "log.h"
#include "net.h"
#include "pw_version.h"
#include "tls.h"
#include "source.h"
#include "spool.h"
#include "uplink.h"

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
#define W_OK   2
#endif

#define MOD               "agent"
#define PW_AGENT_VERSION  PW_VERSION
#define RESEND_HIGH_WATER (1u << 20) /* bytes queued before the resend pauses */
#define MAX_ENDPOINTS     16

typedef enum { SESS_DOWN, SESS_HELLO_SENT, SESS_STREAMING } sess_state_t;

struct pw_agent_s {
    const pw_agent_cfg_t *cfg;
    uv_loop_t loop;
    uv_timer_t sample_timer;
    uv_timer_t pump_timer;   /* resend batches while the backlog drains */
    uv_timer_t sync_timer;   /* spool.fsync = ack: syncs samples unacked after the deadline */
    uv_timer_t poll_timer;   /* pw_agent_poll: ends its turn of the loop */
    uint64_t synced_seq;     /* highest seq known durable (synced here, or acked) */
    uint64_t syncs;          /* fdatasync calls for samples (status): one per sample with
                                spool.fsync = always, fewer with ack */
    uint64_t events_spooled; /* pool events spooled with a sample since the start (status) */
    uv_signal_t sigint, sigterm, sighup;
    uv_async_t stop_async; /* pw_agent_stop from another thread (Windows service control) */
    pw_source_t *src;
    pw_spool_t *spool;
    pw_uplink_t *up;
    pw_delta_enc_t enc; /* the spool's chain */
    pw_sample_t sample;
    pw_buf_t frame;
    char host_name[256];
    uint8_t agent_id[16], boot_id[16];
    uint64_t seq;       /* last seq taken: appended, or lost to a spool write that failed */
    uint64_t start_seq; /* the spool's last seq when this process started */
    uint64_t lost;      /* samples lost to failed spool writes since the last appended one: the
                           next one carries them as a gap (SPOOL_WRITE), so no seq is reused */
    uint64_t since_keyframe;
    int force_keyframe;
    uint64_t last_ts_ms; /* timestamp of the last sample taken */
    uint64_t *kf_seqs;   /* seqs of spooled keyframes, ascending (rebase points) */
    size_t n_kf, kf_cap;
    /* session */
    sess_state_t sess;
    uint64_t sent_seq;  /* highest seq sent in this session */
    uint64_t acked_seq; /* highest seq the collector stored */
    pw_spool_iter_t *it;
    int source_done;
    uint64_t interval_ms; /* current (live mode changes it) */
    uint64_t live_until_ms;
    pw_complaint_t c_source, c_spool, c_send, c_refused;
    char *endpoints_buf;
    const char *endpoints[MAX_ENDPOINTS];
    size_t n_endpoints;
    int stopping;
    char stop_reason[32]; /* why the loop was stopped (a signal, a service stop, the source's
                             end): set, the close says Goodbye; empty, it closes as a crash */
    /* System-log pool events (evsub.h): queued by the subscription, carried by the next sample */
    pw_evsub_t *evsub;
    uv_async_t events_async; /* the subscription's thread wakes the loop */
    pw_winevent_t ev_out[PW_EVSUB_PER_SAMPLE];
    pw_codec_event_t ev_wire[PW_EVSUB_PER_SAMPLE];
    Poolwatch__V1__PoolEvent *ev_ptrs[PW_EVSUB_PER_SAMPLE];
};

static uint64_t now_ms(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* ============================================================================================
 * Identity
 * ========================================================================================== */

static void fnv_bytes(uint8_t out[16], const char *a, const char *b)
{
    uint64_t h1 = 1469598103934665603ull, h2 = 0x84222325cbf29ce4ull;
    for (const char *s = a; *s; s++)
        h1 = (h1 ^ (uint8_t)*s) * 1099511628211ull;
    for (const char *s = b; *s; s++)
        h2 = (h2 ^ (uint8_t)*s) * 1099511628211ull;
    h2 ^= h1;
    memcpy(out, &h1, 8);
    memcpy(out + 8, &h2, 8);
}

/* The agent id is random once per installation and kept beside the spool. */
static int load_agent_id(pw_agent_t *a, pw_diag_t *d)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/agent_id", a->cfg->spool_dir);
    FILE *f = fopen(path, "rb");
    if (f != NULL) {
        size_t n = fread(a->agent_id, 1, 16, f);
        fclose(f);
        if (n == 16)
            return 0;
    }
    uv_random(NULL, NULL, a->agent_id, 16, 0, NULL);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(a->agent_id, 1, 16, f) != 16) {
        if (f)
            fclose(f);
        return pw_diag_set(d, PW_EIO, 0, 0, "spool_dir", "cannot write %s", path);
    }
    fclose(f);
    return 0;
}

/* One agent instance per host boot: the kernel's boot id where there is one, else the
 * source's identity (replay files and simulated hosts are their own "boots"). */
static void load_boot_id(pw_agent_t *a)
{
    char buf[64] = "";
    if (a->src->info.kind == PW_SOURCE_LINUX_SLAB) {
        char path[512];
        const char *root = a->cfg->proc_root && *a->cfg->proc_root ? a->cfg->proc_root : "";
        snprintf(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id", root);
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            if (fgets(buf, sizeof(buf), f) == NULL)
                buf[0] = '\0';
            fclose(f);
        }
    }
    if (buf[0] == '\0')
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)a->src->info.boot_time_ms);
    fnv_bytes(a->boot_id, a->cfg->source, buf);
}

/* ============================================================================================
 * Sending
 * ========================================================================================== */

static void send_hello(pw_agent_t *a)
{
    const pw_source_info_t *in = &a->src->info;
    Poolwatch__V1__Hello h = POOLWATCH__V1__HELLO__INIT;
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT,
                             pp = POOLWATCH__V1__POOL_LIMIT__INIT;
    h.protocol_major = PW_PROTOCOL_MAJOR;
    h.protocol_minor = PW_PROTOCOL_MINOR;
    h.agent_id.data = a->agent_id;
    h.agent_id.len = 16;
    h.boot_id.data = a->boot_id;
    h.boot_id.len = 16;
    h.host_name = a->host_name;
    h.os_family = (char *)(uintptr_t)in->os_family;
    h.os_version = (char *)(uintptr_t)in->os_version;
    h.os_build = in->os_build;
    h.arch = (char *)(uintptr_t)in->arch;
    h.agent_version = PW_AGENT_VERSION;
    h.source_kind = (Poolwatch__V1__SourceKind)in->kind;
    h.counter_width = in->counter_width ? in->counter_width : 64;
    h.physical_memory_bytes = in->physical_memory_bytes;
    np.bytes = in->nonpaged_limit.bytes;
    np.source = (Poolwatch__V1__LimitSource)in->nonpaged_limit.source;
    np.detail = (char *)(uintptr_t)in->nonpaged_limit.detail;
    pp.bytes = in->paged_limit.bytes;
    pp.source = (Poolwatch__V1__LimitSource)in->paged_limit.source;
    pp.detail = (char *)(uintptr_t)in->paged_limit.detail;
    h.nonpaged_limit = &np;
    h.paged_limit = &pp;
    h.resume_seq = pw_spool_stored_seq(a->spool);
    h.boot_time_ms = in->boot_time_ms;
    h.interval_ms = (uint32_t)a->interval_ms;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_HELLO;
    env.hello = &h;
    int r = pw_uplink_send(a->up, &env);
    if (r != 0) {
        PW_LOG_WARN(MOD, "cannot send hello: %s", pw_strerror(r));
        return;
    }
    a->sess = SESS_HELLO_SENT;
}

/* The wire's cause of a spool gap (PW_SPOOL_GAP_*). */
static Poolwatch__V1__GapCause wire_cause(uint32_t spool_cause)
{
    return spool_cause == PW_SPOOL_GAP_CORRUPT ? POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_CORRUPT
           : spool_cause == PW_SPOOL_GAP_FULL  ? POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_FULL
                                               : POOLWATCH__V1__GAP_CAUSE__GAP_UNKNOWN;
}

/* Rewrites the one Sample frame `data`/`len` into `frame` (reset first) naming instance `boot`
 * (Sample.boot_id; kept when boot_len is 0), when `gap` is not 0 the gap before it and its
 * cause, and with its seq (and a delta's base_seq) moved up by `shift`. Returns 0 or a codec
 * error. */
static int frame_patch(pw_buf_t *frame, const uint8_t *data, size_t len, const uint8_t *boot,
                       size_t boot_len, uint64_t gap, Poolwatch__V1__GapCause cause, uint64_t shift)
{
    const uint8_t *p;
    size_t plen;
    Poolwatch__V1__Envelope *env;
    pw_diag_t d;
    int64_t n = pw_frame_parse(data, len, PW_FRAME_MAX_DEFAULT, &p, &plen, &d);
    if (n <= 0)
        return n < 0 ? (int)n : PW_EBADFRAME;
    int r = pw_codec_unpack(p, plen, &env, &d);
    if (r != 0)
        return r;
    pw_buf_t out;
    pw_buf_init(&out, PW_FRAME_MAX_DEFAULT + 16);
    if (env->msg_case != POOLWATCH__V1__ENVELOPE__MSG_SAMPLE) {
        r = PW_EBADFRAME;
    } else {
        ProtobufCBinaryData keep = env->sample->boot_id;
        if (boot_len) {
            env->sample->boot_id.data = (uint8_t *)(uintptr_t)boot;
            env->sample->boot_id.len = boot_len;
        }
        if (gap) {
            env->sample->gap_before = gap;
            env->sample->gap_cause = cause;
        }
        env->sample->seq += shift;
        if (!env->sample->keyframe)
            env->sample->base_seq += shift;
        r = pw_codec_pack_frame(env, PW_FRAME_MAX_DEFAULT, &out);
        env->sample->boot_id = keep; /* freed with the message */
    }
    pw_codec_free(env);
    if (r == 0) {
        pw_buf_reset(frame);
        r = pw_buf_append(frame, out.data, out.len);
    }
    pw_buf_close(&out);
    return r;
}

/* Copies the pool events of the Sample frame `from`/`len` into the Sample frame in `frame`
 * (rewritten): a rebase keyframe rebuilt at a sample the collector never had carries that
 * sample's events. Returns 0 or a codec error (frame unchanged). */
static int frame_take_events(pw_buf_t *frame, const uint8_t *from, size_t len)
{
    const uint8_t *p, *q;
    size_t plen, qlen;
    pw_diag_t d;
    Poolwatch__V1__Envelope *src = NULL, *dst = NULL;
    int r = pw_frame_parse(from, len, PW_FRAME_MAX_DEFAULT, &p, &plen, &d) > 0 &&
                    pw_frame_parse(frame->data, frame->len, PW_FRAME_MAX_DEFAULT, &q, &qlen, &d) > 0
                ? 0
                : PW_EBADFRAME;
    if (r == 0)
        r = pw_codec_unpack(p, plen, &src, &d);
    if (r == 0)
        r = pw_codec_unpack(q, qlen, &dst, &d);
    if (r == 0 && (src->msg_case != POOLWATCH__V1__ENVELOPE__MSG_SAMPLE ||
                   dst->msg_case != POOLWATCH__V1__ENVELOPE__MSG_SAMPLE))
        r = PW_EBADFRAME;
    pw_buf_t out;
    pw_buf_init(&out, PW_FRAME_MAX_DEFAULT + 16);
    if (r == 0) {
        size_t keep_n = dst->sample->n_events;
        Poolwatch__V1__PoolEvent **keep = dst->sample->events;
        dst->sample->n_events = src->sample->n_events;
        dst->sample->events = src->sample->events;
        r = pw_codec_pack_frame(dst, PW_FRAME_MAX_DEFAULT, &out);
        dst->sample->n_events = keep_n; /* each message frees its own */
        dst->sample->events = keep;
    }
    if (r == 0) {
        pw_buf_reset(frame);
        r = pw_buf_append(frame, out.data, out.len);
    }
    pw_buf_close(&out);
    pw_codec_free(src);
    pw_codec_free(dst);
    return r;
}

static void on_pump_timer(uv_timer_t *t);

/* Keeps the pump timer running (a backlog remains, or a failure is to be retried). */
static void pump_later(pw_agent_t *a)
{
    if (!uv_is_active((uv_handle_t *)&a->pump_timer))
        uv_timer_start(&a->pump_timer, on_pump_timer, 50, 50);
}

/* Sends spooled frames after sent_seq while the TLS queue is short. The pump timer runs only
 * while a backlog remains and stops once the spool is drained, so a streaming agent wakes up
 * only for its samples (a 50 ms timer left running cost more CPU than the sampling itself). */
static void pump(pw_agent_t *a)
{
    if (a->sess != SESS_STREAMING || a->it == NULL)
        return;
    pw_spool_rec_t rec;
    pw_diag_t d;
    for (;;) {
        if (pw_uplink_queued_bytes(a->up) >= RESEND_HIGH_WATER) {
            pump_later(a);
            return;
        }
        int r = pw_spool_iter_next(a->it, &rec, &d);
        if (r == 0)
            break;
        if (r < 0) {
            pw_complain(&a->c_spool, uv_now(&a->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                        "spool read: %s (%s)", pw_strerror(r), d.msg);
            if (r == PW_ECORRUPT)
                continue;
            pump_later(a);
            return;
        }
        if (rec.seq <= a->sent_seq)
            continue;
        if (rec.seq != a->sent_seq + 1 && !(rec.flags & PW_SPOOL_KEYFRAME)) {
            /* A hole in the spool (corrupt segment): the collector cannot follow; start a
             * new session that rebases after it. */
            pw_uplink_drop(a->up, "spool hole: rebasing");
            return;
        }
        if (rec.gap_before) {
            /* Records the spool lost before this one (full, corrupt): the collector hears of
             * them with this sample, whose spooled bytes do not say so. */
            r = frame_patch(&a->frame, rec.payload, rec.len, NULL, 0, rec.gap_before,
                            wire_cause(rec.gap_cause), 0);
            if (r == 0)
                r = pw_uplink_send_frame(a->up, a->frame.data, a->frame.len);
        } else {
            r = pw_uplink_send_frame(a->up, rec.payload, rec.len);
        }
        if (r != 0) {
            pw_complain(&a->c_send, uv_now(&a->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                        "send: %s", pw_strerror(r));
            pump_later(a);
            return;
        }
        a->sent_seq = rec.seq;
    }
    uv_timer_stop(&a->pump_timer); /* drained: the next sample calls pump() again */
}

static void on_pump_timer(uv_timer_t *t)
{
    pump(t->data);
}

/* Makes every spooled sample durable here (one fdatasync covers them all). */
static void sync_spool(pw_agent_t *a)
{
    uv_timer_stop(&a->sync_timer);
    if (a->synced_seq >= a->seq)
        return;
    pw_diag_t d;
    int r = pw_spool_sync(a->spool, &d);
    if (r != 0) {
        pw_complain(&a->c_spool, uv_now(&a->loop), 10000, 3600000, PW_LOG_LVL_ERROR, MOD,
                    "spool sync: %s (%s)", pw_strerror(r), d.msg);
        return;
    }
    a->synced_seq = a->seq;
    a->syncs++;
}

/* spool.fsync = ack: what the collector has not acked by now gets synced here. */
static void on_sync_timer(uv_timer_t *t)
{
    pw_agent_t *a = t->data;
    if (a->acked_seq < a->seq)
        sync_spool(a);
}

/* After a sample is spooled and handed to the session: decides when it becomes durable. */
static void after_append(pw_agent_t *a)
{
    if (a->cfg->spool_fsync == PW_AGENT_FSYNC_ALWAYS)
        a->syncs++; /* done by pw_spool_append */
    if (a->cfg->spool_fsync != PW_AGENT_FSYNC_ACK)
        return;
    if (a->sess != SESS_STREAMING)
        sync_spool(a); /* collector away: no ack will come */
    else if (!uv_is_active((uv_handle_t *)&a->sync_timer))
        uv_timer_start(&a->sync_timer, on_sync_timer, PW_AGENT_ACK_SYNC_MS, 0);
}

static void end_session(pw_agent_t *a)
{
    a->sess = SESS_DOWN;
    pw_spool_iter_close(a->it);
    a->it = NULL;
    uv_timer_stop(&a->pump_timer);
}

/* The largest spooled keyframe seq <= s, or 0. */
static uint64_t keyframe_at_or_before(const pw_agent_t *a, uint64_t s)
{
    uint64_t best = 0;
    for (size_t i = 0; i < a->n_kf && a->kf_seqs[i] <= s; i++)
        best = a->kf_seqs[i];
    return best;
}

/* Rebuilds the table at the rebase point from the spool and sends it as a keyframe, then
 * streams the spooled frames after it. `stored` is the collector's last stored seq. */
static int start_stream(pw_agent_t *a, uint64_t stored)
{
    uint64_t first_kf = a->n_kf ? a->kf_seqs[0] : 0;
    if (first_kf == 0) { /* nothing spooled yet: the next sample starts the stream */
        a->sess = SESS_STREAMING;
        a->sent_seq = a->seq;
        return pw_spool_iter_open(a->spool, a->seq + 1, &a->it);
    }
    /* Rebase at the collector's last stored seq when the spool still holds it, else at the
     * oldest spooled keyframe (the collector then learns of the gap). */
    uint64_t target = stored >= first_kf ? stored : first_kf;
    if (target > a->seq)
        target = a->seq;
    uint64_t from = keyframe_at_or_before(a, target);
    pw_spool_iter_t *it;
    int r = pw_spool_iter_open(a->spool, from, &it);
    if (r != 0)
        return r;
    pw_delta_dec_t dec;
    pw_delta_dec_init(&dec, a->src->info.counter_width ? a->src->info.counter_width : 64, 0);
    pw_spool_rec_t rec;
    pw_diag_t d;
    uint64_t gap = 0;
    uint8_t boot[64]; /* the instance that took the rebase point's sample */
    size_t boot_len = 0;
    uint32_t cause = 0;
    pw_buf_t tgt_frame; /* the collector never had the rebase point: its events go along */
    pw_buf_init(&tgt_frame, PW_FRAME_MAX_DEFAULT + 16);
    while ((r = pw_spool_iter_next(it, &rec, &d)) == 1 && rec.seq <= target) {
        const uint8_t *p;
        size_t plen;
        Poolwatch__V1__Envelope *env = NULL;
        if (pw_frame_parse(rec.payload, rec.len, PW_FRAME_MAX_DEFAULT, &p, &plen, &d) <= 0 ||
            pw_codec_unpack(p, plen, &env, &d) != 0 ||
            env->msg_case != POOLWATCH__V1__ENVELOPE__MSG_SAMPLE ||
            pw_delta_apply(&dec, env->sample, NULL, &d) != 0) {
            PW_LOG_WARN(MOD, "spool record %llu unreadable: %s", (unsigned long long)rec.seq,
                        d.msg);
            pw_codec_free(env);
            continue;
        }
        boot_len = env->sample->boot_id.len <= sizeof(boot) ? env->sample->boot_id.len : 0;
        if (boot_len)
            memcpy(boot, env->sample->boot_id.data, boot_len);
        pw_buf_reset(&tgt_frame); /* the rebase point's own frame, for its pool events */
        if (rec.seq == target && target > stored && env->sample->n_events > 0 &&
            pw_buf_append(&tgt_frame, rec.payload, rec.len) != 0)
            pw_buf_reset(&tgt_frame);
        pw_codec_free(env);
        gap += rec.gap_before;
        if (rec.gap_before)
            cause = rec.gap_cause;
    }
    pw_spool_iter_close(it);
    if ((r < 0 && r != PW_ECORRUPT) || !dec.have_base) {
        pw_delta_dec_close(&dec);
        pw_buf_close(&tgt_frame);
        return r < 0 && r != PW_ECORRUPT ? r : PW_ENOBASE;
    }
    if (stored < first_kf && stored > 0)
        gap += first_kf - stored - 1;
    pw_buf_reset(&a->frame);
    r = pw_delta_dec_pack_keyframe(&dec, gap, PW_FRAME_MAX_DEFAULT, &a->frame);
    uint64_t base_seq = dec.seq;
    pw_delta_dec_close(&dec);
    if (r == 0 && (boot_len || gap)) {
        pw_buf_t kf;
        pw_buf_init(&kf, PW_FRAME_MAX_DEFAULT + 16);
        r = pw_buf_append(&kf, a->frame.data, a->frame.len);
        if (r == 0)
            r = frame_patch(&a->frame, kf.data, kf.len, boot, boot_len, gap, wire_cause(cause), 0);
        pw_buf_close(&kf);
    }
    if (r == 0 && tgt_frame.len > 0)
        r = frame_take_events(&a->frame, tgt_frame.data, tgt_frame.len);
    pw_buf_close(&tgt_frame);
    if (r != 0)
        return r;
    if ((r = pw_uplink_send_frame(a->up, a->frame.data, a->frame.len)) != 0)
        return r;
    a->sent_seq = base_seq;
    a->sess = SESS_STREAMING;
    PW_LOG_INFO(MOD, "streaming to %s from seq %llu (collector has %llu, %llu spooled after)",
                pw_uplink_endpoint(a->up), (unsigned long long)base_seq, (unsigned long long)stored,
                (unsigned long long)(a->seq - base_seq));
    if ((r = pw_spool_iter_open(a->spool, base_seq + 1, &a->it)) != 0)
        return r;
    pump(a); /* starts the pump timer when a backlog remains */
    return 0;
}

/* ============================================================================================
 * Collector messages
 * ========================================================================================== */

static int note_keyframe(pw_agent_t *a, uint64_t seq);

/* A spooled sample this process took, held while the spool skips ahead (skip_to_collector). */
typedef struct {
    uint64_t seq;
    uint32_t flags;
    pw_buf_t frame;
} held_t;

#define HELD_MAX 4096 /* samples kept across a skip (7 minutes at 100 ms, 11 hours at 10 s) */

/* The samples this process took (seq > start_seq) that no collector acked, a chain from a
 * keyframe (the fresh encoder at start made one), copied out of the spool into `h` (at most
 * HELD_MAX; the oldest go first). Returns how many. */
static size_t hold_own_samples(pw_agent_t *a, held_t *h)
{
    size_t n = 0;
    pw_spool_iter_t *it;
    uint64_t from = (a->start_seq > a->acked_seq ? a->start_seq : a->acked_seq) + 1;
    if (a->seq < from || pw_spool_iter_open(a->spool, from, &it) != 0)
        return 0;
    pw_spool_rec_t rec;
    pw_diag_t d;
    while (pw_spool_iter_next(it, &rec, &d) == 1) {
        if (n == 0 && !(rec.flags & PW_SPOOL_KEYFRAME))
            continue; /* not decodable on its own */
        if (n == HELD_MAX) {
            pw_buf_close(&h[0].frame);
            memmove(h, h + 1, (HELD_MAX - 1) * sizeof(*h));
            n--;
        }
        pw_buf_init(&h[n].frame, PW_FRAME_MAX_DEFAULT + 16);
        if (pw_buf_append(&h[n].frame, rec.payload, rec.len) != 0) {
            pw_buf_close(&h[n].frame);
            break;
        }
        h[n].seq = rec.seq;
        h[n++].flags = rec.flags;
    }
    pw_spool_iter_close(it);
    return n;
}

/* The collector already holds seqs after the last one this agent wrote (its answer to the
 * Hello names seq n > a->seq): the spool was repaired after corruption, lost, or restored from
 * a backup or a VM snapshot. Reusing those seqs would make the collector take new samples for
 * resends of ones it holds and ignore them, so numbering continues at n + 1: the spool counts
 * everything up to n as acked, and a fresh encoder makes the next sample a keyframe with
 * dict_reset, on which the collector's decoder starts over. The samples this process took
 * before the answer (after its restart, the collector away) are not thrown away with the rest
 * (issue 15, item 4): they are spooled again after n, renumbered. Returns 0 or the spool's
 * error. */
static int skip_to_collector(pw_agent_t *a, uint64_t n)
{
    PW_LOG_WARN(MOD,
                "collector %s already holds seq %llu of this agent instance but the spool ends "
                "at %llu (spool repaired, lost or restored from a backup): samples continue at "
                "seq %llu",
                pw_uplink_endpoint(a->up), (unsigned long long)n, (unsigned long long)a->seq,
                (unsigned long long)(n + 1));
    held_t *held = pw_calloc(HELD_MAX, sizeof(*held));
    size_t nheld = held ? hold_own_samples(a, held) : 0;
    pw_diag_t d;
    int r = pw_spool_skip_to(a->spool, n, &d);
    if (r != 0) {
        PW_LOG_ERROR(MOD, "spool: cannot continue after seq %llu: %s (%s)", (unsigned long long)n,
                     pw_strerror(r), d.msg);
        nheld = 0;
    }
    if (r == 0) {
        a->seq = a->acked_seq = a->synced_seq = a->start_seq = n;
        a->n_kf = 0; /* nothing older is left to rebase on */
    }
    uint64_t shift = nheld ? n + 1 - held[0].seq : 0, kept = 0;
    uint64_t last_held = nheld ? held[nheld - 1].seq : 0;
    for (size_t i = 0; i < nheld; i++) {
        if (r == 0)
            r = frame_patch(&a->frame, held[i].frame.data, held[i].frame.len, NULL, 0, 0,
                            POOLWATCH__V1__GAP_CAUSE__GAP_UNKNOWN, shift);
        if (r == 0)
            r = pw_spool_append(a->spool, held[i].seq + shift, held[i].flags, a->frame.data,
                                a->frame.len, &d);
        if (r == 0) {
            a->seq = held[i].seq + shift;
            if (held[i].flags & PW_SPOOL_KEYFRAME)
                note_keyframe(a, a->seq);
            kept++;
        }
        pw_buf_close(&held[i].frame);
    }
    pw_free(held);
    if (kept)
        PW_LOG_WARN(MOD, "kept the %llu samples taken since the start as seqs %llu..%llu",
                    (unsigned long long)kept, (unsigned long long)(n + 1),
                    (unsigned long long)a->seq);
    if (r != 0)
        PW_LOG_ERROR(MOD, "spool: samples taken since the start not kept after %llu: %s",
                     (unsigned long long)kept, pw_strerror(r));
    uv_timer_stop(&a->sync_timer);
    if (kept && kept == nheld && a->enc.have_prev && a->enc.prev_seq == last_held) {
        /* The chain goes on: the encoder's previous sample is the last one kept, renumbered. */
        a->enc.prev_seq += shift;
        return 0;
    }
    pw_delta_enc_close(&a->enc);
    int e =
        pw_delta_enc_init(&a->enc, a->src->info.counter_width ? a->src->info.counter_width : 64);
    a->since_keyframe = 0;
    a->force_keyframe = 0;
    return a->seq >= n ? e : r;
}

static void handle_ack(pw_agent_t *a, const Poolwatch__V1__Ack *ack)
{
    if (ack->seq > a->seq) {
        if (a->sess != SESS_HELLO_SENT) {
            /* Within a session the collector acks only what it got from us: this one claims
             * more. Ask again with a new Hello, whose answer the branch below follows. */
            PW_LOG_WARN(MOD,
                        "collector %s acked seq %llu but this agent's last seq is %llu: "
                        "reconnecting to ask where to resume",
                        pw_uplink_endpoint(a->up), (unsigned long long)ack->seq,
                        (unsigned long long)a->seq);
            pw_uplink_drop(a->up, "collector acked a seq this agent never wrote");
            return;
        }
        if (skip_to_collector(a, ack->seq) != 0) {
            pw_uplink_drop(a->up, "cannot continue after the collector's seq");
            return;
        }
    }
    if (ack->seq > a->acked_seq) {
        a->acked_seq = ack->seq;
        pw_spool_note_stored(a->spool, a->acked_seq); /* a restart will not resend it */
    }
    if (a->acked_seq > a->synced_seq)
        a->synced_seq = a->acked_seq; /* on the collector's disk */
    if (a->synced_seq >= a->seq)
        uv_timer_stop(&a->sync_timer);
    pw_uplink_mark_healthy(a->up); /* the backoff starts over after 30 s of acks */
    if (a->sess == SESS_HELLO_SENT) {
        /* From what the collector says it holds, or what it acked before (this agent's spool
         * keeps it across restarts) when that is more: an acked sample is not sent again. */
        int r = start_stream(a, a->acked_seq);
        if (r != 0) {
            PW_LOG_ERROR(MOD, "cannot resend from the spool: %s", pw_strerror(r));
            pw_uplink_drop(a->up, "resend failed");
        }
        /* The handshake and the rebase decoder have come and gone: their freed pages
         * would otherwise stay resident between live blocks for the whole session. */
        pw_alloc_release();
    } else if (ack->need_keyframe) {
        pw_uplink_drop(a->up, "collector lost the base: rebasing");
    }
    /* Keep the spool from the last keyframe at or before the ack: the next session may
     * have to rebuild the table there. */
    uint64_t kf = keyframe_at_or_before(a, a->acked_seq);
    if (kf > 1) {
        pw_diag_t d;
        int r = pw_spool_ack(a->spool, kf - 1, &d);
        if (r != 0)
            PW_LOG_WARN(MOD, "spool ack: %s (%s)", pw_strerror(r), d.msg);
        size_t k = 0;
        while (k < a->n_kf && a->kf_seqs[k] < kf)
            k++;
        memmove(a->kf_seqs, a->kf_seqs + k, (a->n_kf - k) * sizeof(*a->kf_seqs));
        a->n_kf -= k;
    }
    if (a->cfg->exit_when_done && a->source_done && a->acked_seq >= a->seq) {
        PW_LOG_INFO(MOD, "source exhausted and every sample acked: exiting");
        snprintf(a->stop_reason, sizeof(a->stop_reason), "source done");
        uv_stop(&a->loop);
    }
}

static void set_interval(pw_agent_t *a, uint64_t ms)
{
    if (ms < 100)
        ms = 100;
    a->interval_ms = ms;
    if (!a->source_done)
        uv_timer_start(&a->sample_timer, a->sample_timer.timer_cb, ms, ms);
}

typedef struct {
    Poolwatch__V1__DriverMatch *m;
    Poolwatch__V1__DriverMatch **mp;
    size_t n, cap;
} matches_t;

static void on_match(const pw_findtag_match_t *m, void *arg)
{
    matches_t *ms = arg;
    if (ms->n == ms->cap) {
        size_t nc = ms->cap ? ms->cap * 2 : 8;
        void *p1 = pw_realloc(ms->m, nc * sizeof(*ms->m));
        if (p1 == NULL)
            return;
        ms->m = p1;
        void *p2 = pw_realloc(ms->mp, nc * sizeof(*ms->mp));
        if (p2 == NULL)
            return;
        ms->mp = p2;
        ms->cap = nc;
    }
    Poolwatch__V1__DriverMatch *dm = &ms->m[ms->n++];
    poolwatch__v1__driver_match__init(dm);
    /* one allocation holds the strings: freed with `file` */
    size_t n1 = strlen(m->name) + 1, n2 = strlen(m->ver.file_version) + 1,
           n3 = strlen(m->ver.product) + 1, n4 = strlen(m->ver.company) + 1,
           n5 = strlen(m->ver.description) + 1;
    char *s = pw_malloc(n1 + n2 + n3 + n4 + n5);
    if (s == NULL) {
        ms->n--;
        return;
    }
    dm->file = memcpy(s, m->name, n1);
    dm->file_version = memcpy(s + n1, m->ver.file_version, n2);
    dm->product = memcpy(s + n1 + n2, m->ver.product, n3);
    dm->company = memcpy(s + n1 + n2 + n3, m->ver.company, n4);
    dm->description = memcpy(s + n1 + n2 + n3 + n4, m->ver.description, n5);
    dm->size_bytes = m->size_bytes;
    dm->match = (Poolwatch__V1__TagMatch)m->kind; /* the same numbers */
    dm->offset = m->offset;
}

static const char *default_drivers_dir(char *buf, size_t n)
{
#ifdef _WIN32
    const char *root = getenv("SystemRoot");
    snprintf(buf, n, "%s\\System32\\drivers", root ? root : "C:\\Windows");
#else
    uv_utsname_t u;
    if (uv_os_uname(&u) == 0)
        snprintf(buf, n, "/lib/modules/%s/kernel", u.release);
    else
        snprintf(buf, n, "/lib/modules");
#endif
    return buf;
}

/* The wire form of a big-pool summary; `hist` (PW_BIGPOOL_BUCKETS) backs its histogram. */
static void big_pool_message(const pw_bigpool_summary_t *s, uint64_t now_ms,
                             Poolwatch__V1__BigPoolSnapshot *m, uint64_t *hist)
{
    poolwatch__v1__big_pool_snapshot__init(m);
    m->tag.data = (uint8_t *)(uintptr_t)s->tag;
    m->tag.len = 4;
    m->taken_ms = now_ms;
    m->scanned = s->scanned;
    m->count = s->count;
    m->bytes = s->bytes;
    m->nonpaged_count = s->nonpaged_count;
    m->nonpaged_bytes = s->nonpaged_bytes;
    m->largest_bytes = s->largest_bytes;
    m->smallest_bytes = s->smallest_bytes;
    memcpy(hist, s->hist, sizeof(s->hist));
    m->n_size_hist = PW_BIGPOOL_BUCKETS;
    m->size_hist = hist;
}

static void handle_command(pw_agent_t *a, const Poolwatch__V1__Command *c)
{
    Poolwatch__V1__CommandResult res = POOLWATCH__V1__COMMAND_RESULT__INIT;
    char msg[512] = "ok";
    matches_t ms = {0};
    pw_bigpool_summary_t bps;
    Poolwatch__V1__BigPoolSnapshot bpm;
    uint64_t bph[PW_BIGPOOL_BUCKETS];
    res.id = c->id;
    switch (c->kind) {
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_SET_INTERVAL:
        set_interval(a, c->interval_ms);
        a->live_until_ms = 0;
        snprintf(msg, sizeof(msg), "interval %u ms", c->interval_ms);
        break;
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_LIVE_MODE: {
        uint64_t dur = c->duration_ms ? c->duration_ms : a->cfg->live_max_ms;
        if (dur > a->cfg->live_max_ms)
            dur = a->cfg->live_max_ms; /* expires by itself, at most 10 minutes */
        a->live_until_ms = uv_now(&a->loop) + dur;
        set_interval(a, 1000);
        snprintf(msg, sizeof(msg), "live mode for %llu ms", (unsigned long long)dur);
        break;
    }
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_KEYFRAME:
        a->force_keyframe = 1;
        break;
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_FIND_TAG: {
        /* A simulated or replayed host has no drivers of its own here: searching this machine's
         * files would answer about another system (a "Windows" sim host on Linux) */
        if ((a->src->info.kind == PW_SOURCE_SIMULATED ||
             a->src->info.kind == PW_SOURCE_POOLMON_REPLAY) &&
            !(a->cfg->drivers_dir && *a->cfg->drivers_dir)) {
            res.status = PW_ENOTSUP;
            snprintf(msg, sizeof(msg),
                     "this host's source is %s: it has no driver files to search (give the "
                     "agent [commands] drivers_dir to search a copy)",
                     pw_source_name(a->src));
            break;
        }
        char dir[1024], store[1024];
        const char *d = a->cfg->drivers_dir && *a->cfg->drivers_dir
                            ? a->cfg->drivers_dir
                            : default_drivers_dir(dir, sizeof(dir));
        int r;
#ifdef _WIN32
        if (!(a->cfg->drivers_dir && *a->cfg->drivers_dir)) {
            /* the loaded drivers, then the driver store's packages (one level of package
             * directories, their .sys files: bounded by PW_FINDTAG_MAX_FILES) */
            const char *root = getenv("SystemRoot");
            snprintf(store, sizeof(store), "%s\\System32\\DriverStore\\FileRepository",
                     root ? root : "C:\\Windows");
            pw_findtag_root_t roots[2] = {{d, "drivers", 0, 0},
                                          {store, "DriverStore\\FileRepository", 2, 1}};
            r = pw_findtag_scan_roots(roots, 2, c->tag.data, c->tag.len, on_match, &ms);
        } else
#endif
        {
            (void)store;
            r = pw_findtag_scan(d, c->tag.data, c->tag.len, on_match, &ms);
        }
        if (r < 0) {
            res.status = r;
            snprintf(msg, sizeof(msg), "cannot read %.180s: %.60s", d, pw_strerror(r));
        } else {
            snprintf(msg, sizeof(msg), "%d file(s) in %.200s contain the tag", r, d);
        }
        /* The pointer array is filled last: m may have moved while growing. */
        for (size_t i = 0; i < ms.n; i++)
            ms.mp[i] = &ms.m[i];
        res.n_matches = ms.n;
        res.matches = ms.mp;
        break;
    }
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_BIG_POOL: {
        pw_diag_t bd;
        pw_diag_clear(&bd);
        if (c->tag.len != 4) {
            res.status = PW_EINVAL;
            snprintf(msg, sizeof(msg), "a big-pool snapshot takes a 4-byte tag, not %zu bytes",
                     c->tag.len);
            break;
        }
        int r = pw_source_big_pool(a->src, c->tag.data, &bps, &bd);
        if (r != 0) {
            res.status = r;
            snprintf(msg, sizeof(msg), "%.250s", bd.msg[0] ? bd.msg : pw_strerror(r));
            break;
        }
        big_pool_message(&bps, now_ms(), &bpm, bph);
        res.big_pool = &bpm;
        snprintf(msg, sizeof(msg),
                 "%llu big-pool block(s) of the tag, %llu bytes (%llu entries "
                 "in the table)",
                 (unsigned long long)bps.count, (unsigned long long)bps.bytes,
                 (unsigned long long)bps.scanned);
        break;
    }
    case POOLWATCH__V1__COMMAND_KIND__COMMAND_STATUS: {
        /* pool events (evsub.h): spooled with samples, waiting, skipped (other kinds), dropped
         * (queue full), unreadable XML; "events off" without a subscription */
        char ev[160] = "events off";
        if (a->evsub != NULL) {
            pw_evsub_stats_t es;
            pw_evsub_stats(a->evsub, &es);
            snprintf(ev, sizeof(ev),
                     "events %llu spooled, %llu waiting, %llu skipped, %llu dropped, %llu bad",
                     (unsigned long long)a->events_spooled, (unsigned long long)es.waiting,
                     (unsigned long long)es.skipped, (unsigned long long)es.dropped,
                     (unsigned long long)es.bad_xml);
        }
        snprintf(msg, sizeof(msg),
                 "source %s, seq %llu, acked %llu, spool %llu bytes, interval %llu ms%s, "
                 "fsync %s, syncs %llu, %s, %s",
                 pw_source_name(a->src), (unsigned long long)a->seq,
                 (unsigned long long)a->acked_seq, (unsigned long long)pw_spool_bytes(a->spool),
                 (unsigned long long)a->interval_ms, a->live_until_ms ? ", live" : "",
                 a->cfg->spool_fsync == PW_AGENT_FSYNC_ACK      ? "ack"
                 : a->cfg->spool_fsync == PW_AGENT_FSYNC_ALWAYS ? "always"
                                                                : "never",
                 (unsigned long long)a->syncs, ev, pw_tls_library());
        break;
    }
    default:
        res.status = PW_ENOTSUP;
        snprintf(msg, sizeof(msg), "unknown command %d", (int)c->kind);
    }
    res.message = msg;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_COMMAND_RESULT;
    env.command_result = &res;
    pw_uplink_send(a->up, &env);
    for (size_t i = 0; i < ms.n; i++)
        pw_free(ms.m[i].file);
    pw_free(ms.m);
    pw_free(ms.mp);
}

static void on_envelope(pw_uplink_t *up, const Poolwatch__V1__Envelope *env, void *arg)
{
    pw_agent_t *a = arg;
    (void)up;
    switch (env->msg_case) {
    case POOLWATCH__V1__ENVELOPE__MSG_ACK:
        handle_ack(a, env->ack);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_COMMAND:
        handle_command(a, env->command);
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_ERROR:
        /* The code is one of ours (error.h): its name, not the number. Rate-limited: an
         * agent replaced every second by a twin hears it every second. */
        pw_complain(&a->c_refused, uv_now(&a->loop), 1000, 600000, PW_LOG_LVL_ERROR, MOD,
                    "collector refused us: %s (%s%s)", env->error->message,
                    pw_err_name(env->error->code),
                    env->error->supported_major ? "; it speaks another protocol major" : "");
        break;
    case POOLWATCH__V1__ENVELOPE__MSG_HEARTBEAT:
        break;
    default:
        pw_uplink_drop(a->up, "unexpected message from the collector");
    }
}

static void on_connected(pw_uplink_t *up, void *arg)
{
    pw_agent_t *a = arg;
    PW_LOG_INFO(MOD, "connected to %s", pw_uplink_endpoint(up));
    end_session(a);
    send_hello(a);
}

static void on_disconnected(pw_uplink_t *up, int status, const char *msg, uint64_t retry_ms,
                            void *arg)
{
    pw_agent_t *a = arg;
    end_session(a);
    if (a->cfg->spool_fsync == PW_AGENT_FSYNC_ACK)
        sync_spool(a); /* what was sent may never be acked */
    PW_LOG_DEBUG(MOD, "next connection attempt in %llu ms", (unsigned long long)retry_ms);
    pw_complain(&a->c_send, uv_now(&a->loop), 1000, 600000, PW_LOG_LVL_WARN, MOD,
                "collector %s: %s%s%s%s; retrying in %llu ms", pw_uplink_endpoint(up),
                status ? pw_strerror(status) : "closed", msg && *msg ? " (" : "", msg ? msg : "",
                msg && *msg ? ")" : "", (unsigned long long)retry_ms);
}

/* ============================================================================================
 * Sampling
 * ========================================================================================== */

static int note_keyframe(pw_agent_t *a, uint64_t seq)
{
    if (a->n_kf == a->kf_cap) {
        size_t nc = a->kf_cap ? a->kf_cap * 2 : 64;
        uint64_t *p = pw_realloc(a->kf_seqs, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        a->kf_seqs = p;
        a->kf_cap = nc;
    }
    a->kf_seqs[a->n_kf++] = seq;
    return 0;
}

int64_t pw_agent_sim_wait_ms(uint64_t last_ts_ms, uint64_t step_ms, uint64_t wall_ms, int catch_up,
                             uint64_t max_ms)
{
    uint64_t due = last_ts_ms + step_ms;
    if (due < wall_ms)
        return catch_up ? 1 : -1;
    return (int64_t)(due - wall_ms < max_ms ? due - wall_ms : max_ms);
}

static uint64_t sim_step_ms(const pw_agent_t *a)
{
    return a->cfg->sim_interval_ms ? a->cfg->sim_interval_ms : a->cfg->interval_ms;
}

static void on_sample_timer(uv_timer_t *t);

/* The sample timer of a simulated source, after its sample stamped a->last_ts_ms (or a tick
 * too early for the next): due when the next stamp is, not an interval after this tick. */
static void sim_rearm(pw_agent_t *a, uint64_t now)
{
    /* A host started now (or a backfill) follows the wall clock: it catches up after a stall
     * (else its samples stay behind, stamped too old to carry the agent's footprint); one
     * given a start in the past (sim.start) goes on at the interval's pace. */
    int catch_up = a->cfg->sim_backfill_ms != 0 || a->cfg->sim_start_ms == 0;
    int64_t w = pw_agent_sim_wait_ms(a->last_ts_ms, sim_step_ms(a), now, catch_up, a->interval_ms);
    if (w >= 0 && !a->source_done)
        uv_timer_start(&a->sample_timer, on_sample_timer, (uint64_t)w, a->interval_ms);
}

static void on_sample_timer(uv_timer_t *t)
{
    pw_agent_t *a = t->data;
    pw_diag_t d;
    if (a->live_until_ms && uv_now(&a->loop) >= a->live_until_ms) {
        a->live_until_ms = 0;
        PW_LOG_INFO(MOD, "live mode expired");
        set_interval(a, a->cfg->interval_ms);
    }
    /* A simulated host follows the wall clock once caught up: live mode samples faster, but
     * the simulated clock must not run ahead of real time; the timer waits for the next stamp. */
    if (a->src->info.kind == PW_SOURCE_SIMULATED && a->last_ts_ms) {
        uint64_t now = now_ms();
        if (a->last_ts_ms + sim_step_ms(a) > now + 500) {
            sim_rearm(a, now);
            return;
        }
    }
    int r = pw_source_sample(a->src, &a->sample, &d);
    if (r == PW_EAGAIN)
        return;
    if (r == PW_EOF) {
        a->source_done = 1;
        uv_timer_stop(&a->sample_timer);
        PW_LOG_INFO(MOD, "source %s exhausted after seq %llu", pw_source_name(a->src),
                    (unsigned long long)a->seq);
        if (a->cfg->exit_when_done && a->acked_seq >= a->seq) {
            snprintf(a->stop_reason, sizeof(a->stop_reason), "source done");
            uv_stop(&a->loop);
        }
        return;
    }
    if (r != 0) {
        pw_complain(&a->c_source, uv_now(&a->loop), 10000, 3600000, PW_LOG_LVL_ERROR, MOD,
                    "source %s: %s (%s)", pw_source_name(a->src), pw_strerror(r), d.msg);
        return;
    }
    pw_complain_release(&a->c_source, MOD, "source");
    a->sample.seq = a->seq + 1;
    uint64_t taken = now_ms();
    /* a sample stamped in the past (a replay's screen, a simulation's backfill) is not sent
     * with the agent's footprint of now: AgentFootprint would see hours of growth in seconds */
    int now_sample =
        a->sample.timestamp_ms == 0 || a->sample.timestamp_ms + a->interval_ms >= taken;
    if (a->sample.timestamp_ms == 0)
        a->sample.timestamp_ms = taken;
    /* what this agent itself holds, sent with what it watches */
    pw_selfstat_t self;
    a->sample.totals.agent_rss_bytes = 0;
    a->sample.totals.agent_cpu_ms = 0;
    a->sample.totals.agent_handles = 0;
    if (now_sample && pw_selfstat_read(&self) == 0) {
        a->sample.totals.agent_rss_bytes = self.rss_bytes;
        a->sample.totals.agent_cpu_ms = self.cpu_ms;
        a->sample.totals.agent_handles = self.handles;
    }
    unsigned flags = 0;
    if (a->force_keyframe || a->since_keyframe + 1 >= (uint64_t)a->cfg->keyframe_every)
        flags |= PW_DELTA_KEYFRAME | PW_DELTA_WITH_DICT;
    const Poolwatch__V1__Sample *msg;
    r = pw_delta_encode(&a->enc, &a->sample, flags, &msg, &d);
    if (r != 0) {
        pw_complain(&a->c_source, uv_now(&a->loop), 10000, 3600000, PW_LOG_LVL_ERROR, MOD,
                    "sample rejected: %s (%s)", pw_strerror(r), d.msg);
        return;
    }
    /* The sample names the instance that took it: spooled with it, a resend after a restart
     * or a reboot is stored under this instance, not the next one (docs/protocol.md). */
    Poolwatch__V1__Sample *m = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    m->boot_id.data = a->boot_id;
    m->boot_id.len = sizeof(a->boot_id);
    if (a->lost) {
        m->gap_before = a->lost;
        m->gap_cause = POOLWATCH__V1__GAP_CAUSE__GAP_SPOOL_WRITE;
    }
    /* pool events since the last spooled sample ride with this one: spooled, resent, acked */
    size_t n_sub = a->evsub ? pw_evsub_peek(a->evsub, a->ev_out, PW_EVSUB_PER_SAMPLE) : 0;
    /* and those the source made with the sample itself (a simulated pool that ran out) */
    size_t n_ev = n_sub;
    if (a->cfg->events != PW_AGENT_EVENTS_OFF)
        n_ev += pw_source_events(a->src, a->ev_out + n_sub, PW_EVSUB_PER_SAMPLE - n_sub);
    for (size_t i = 0; i < n_ev; i++) {
        pw_codec_event_fill(&a->ev_wire[i], &a->ev_out[i]);
        a->ev_ptrs[i] = &a->ev_wire[i].msg;
    }
    m->n_events = n_ev;
    m->events = n_ev ? a->ev_ptrs : NULL;
    pw_buf_reset(&a->frame);
    r = pw_codec_pack_sample(msg, PW_FRAME_MAX_DEFAULT, &a->frame);
    m->boot_id.data = NULL;
    m->boot_id.len = 0;
    m->gap_before = 0;
    m->gap_cause = POOLWATCH__V1__GAP_CAUSE__GAP_UNKNOWN;
    m->n_events = 0;
    m->events = NULL;
    if (r != 0) {
        PW_LOG_ERROR(MOD, "sample too large to send: %s", pw_strerror(r));
        return;
    }
    uint32_t sflags = msg->keyframe ? PW_SPOOL_KEYFRAME : 0;
    r = pw_spool_append(a->spool, a->sample.seq, sflags, a->frame.data, a->frame.len, &d);
    if (r != 0) {
        /* The sample is lost, its seq with it (never reused: the collector would take another
         * sample for it), and the next sample that is spooled says so (gap_before, cause
         * SPOOL_WRITE). The encoder has moved on past a sample the spool does not hold: a
         * fresh chain (a keyframe with dict_reset) starts with the next sample. */
        a->seq = a->sample.seq;
        a->lost++;
        pw_delta_enc_close(&a->enc);
        pw_delta_enc_init(&a->enc, a->src->info.counter_width ? a->src->info.counter_width : 64);
        pw_complain(&a->c_spool, uv_now(&a->loop), 10000, 3600000, PW_LOG_LVL_ERROR, MOD,
                    "spool append: %s (%s): sample %llu lost (%llu since the last one spooled)",
                    pw_strerror(r), d.msg, (unsigned long long)a->seq, (unsigned long long)a->lost);
        return;
    }
    a->lost = 0;
    pw_complain_release(&a->c_spool, MOD, "spool");
    if (n_ev) {
        if (n_sub) /* spooled with the sample: the spool keeps them now */
            pw_evsub_drop(a->evsub, n_sub);
        a->events_spooled += n_ev;
        PW_LOG_INFO(MOD, "%zu pool event%s sent with sample %llu", n_ev, n_ev == 1 ? "" : "s",
                    (unsigned long long)a->sample.seq);
    }
    a->seq = a->sample.seq;
    a->last_ts_ms = a->sample.timestamp_ms;
    /* A simulated source whose clock is behind (a backfill) catches up at once, then takes
     * each sample when its stamp comes */
    if (a->src->info.kind == PW_SOURCE_SIMULATED)
        sim_rearm(a, now_ms());
    if (msg->keyframe) {
        note_keyframe(a, a->seq);
        a->since_keyframe = 0;
        a->force_keyframe = 0;
    } else {
        a->since_keyframe++;
    }
    pump(a);
    after_append(a);
}

/* ============================================================================================
 * Pool events
 * ========================================================================================== */

/* The subscription's thread queued events: wake the loop (uv_async_send is thread-safe). */
static void events_notify(void *arg)
{
    pw_agent_t *a = arg;
    uv_async_send(&a->events_async);
}

/* Events waiting: a Windows host's sample is taken at once, so that the collector hears of a
 * pool that ran out now (and sees the pool table of that moment), not an interval later.
 * Other sources' samples are stamped by their own clock: the next one carries them. */
static void on_events_async(uv_async_t *h)
{
    pw_agent_t *a = h->data;
    if (a->src->info.kind == PW_SOURCE_WINDOWS && !a->source_done)
        on_sample_timer(&a->sample_timer);
}

static void open_events(pw_agent_t *a)
{
    int want = a->cfg->events == PW_AGENT_EVENTS_ON ||
               (a->cfg->events == PW_AGENT_EVENTS_AUTO && a->src->info.kind == PW_SOURCE_WINDOWS);
    if (!want)
        return;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_evsub_open(events_notify, a, &a->evsub, &d);
    if (r == 0)
        PW_LOG_INFO(MOD, "subscribed to the System log's pool events (srv 2019/2020, "
                         "Resource-Exhaustion-Detector 2004)");
    else /* sampling goes on without them */
        PW_LOG_WARN(MOD, "no pool events from the System log: %s (%s)", pw_strerror(r), d.msg);
}

/* ============================================================================================
 * Start and stop
 * ========================================================================================== */

static void on_signal(uv_signal_t *s, int signum)
{
    pw_agent_t *a = s->data;
    PW_LOG_INFO(MOD, "%s: stopping", pw_daemon_signal_name(signum));
    snprintf(a->stop_reason, sizeof(a->stop_reason), "%s", pw_daemon_signal_name(signum));
    uv_stop(&a->loop);
}

#ifndef _WIN32 /* no SIGHUP to handle: unused there (-Werror) */
/* SIGHUP: a closed terminal or a `systemctl reload` must not end sampling (the default action
 * kills the process silently). The certificate, key and CA files are read again for the next
 * connection (a renewed certificate without a restart; a reconnect does it too when they
 * changed); the configuration is not: the source,
 * spool and endpoints live for the whole run. */
static void on_sighup(uv_signal_t *s, int signum)
{
    pw_agent_t *a = s->data;
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_uplink_reload_tls(a->up, &d) == 0)
        PW_LOG_INFO(MOD,
                    "%s: certificate, key and CA files read again (used from the next "
                    "connection); the configuration is read at start only",
                    pw_daemon_signal_name(signum));
    else
        PW_LOG_WARN(MOD, "%s: TLS files not read again, the previous ones stay in use: %s",
                    pw_daemon_signal_name(signum), d.msg);
}
#endif

static void on_stop_async(uv_async_t *h)
{
    pw_agent_t *a = h->data;
    PW_LOG_INFO(MOD, "stop requested: stopping");
    snprintf(a->stop_reason, sizeof(a->stop_reason), "service stop");
    uv_stop(&a->loop);
}

/* A stop from another thread goes through the published handle (net.h). */
void pw_agent_stop(void)
{
    pw_net_stop_request();
}

static int split_endpoints(pw_agent_t *a, pw_diag_t *d)
{
    a->endpoints_buf = pw_strdup(a->cfg->collectors ? a->cfg->collectors : "");
    if (a->endpoints_buf == NULL)
        return PW_ENOMEM;
    char *save = NULL;
    for (char *tok = strtok_r(a->endpoints_buf, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        if (a->n_endpoints == MAX_ENDPOINTS)
            return pw_diag_set(d, PW_ECONFIG, 0, 0, "collectors", "more than %d endpoints",
                               MAX_ENDPOINTS);
        a->endpoints[a->n_endpoints++] = tok;
    }
    if (a->n_endpoints == 0)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, "collectors", "no collector endpoint configured");
    return 0;
}

/* Seqs of the keyframes still in the spool, for rebase points after a restart. */
static int scan_spool(pw_agent_t *a)
{
    pw_spool_iter_t *it;
    int r = pw_spool_iter_open(a->spool, 0, &it);
    if (r != 0)
        return r;
    pw_spool_rec_t rec;
    pw_diag_t d;
    while ((r = pw_spool_iter_next(it, &rec, &d)) != 0) {
        if (r < 0) {
            if (r == PW_ECORRUPT)
                continue;
            break;
        }
        if (rec.flags & PW_SPOOL_KEYFRAME)
            note_keyframe(a, rec.seq);
    }
    pw_spool_iter_close(it);
    return r < 0 ? r : 0;
}

/* The source's configuration from the agent's, for pw_agent_run and pw_agent_check alike (the
 * check opens the source the run would: same replay and simulation start times). */
static void source_config(const pw_agent_cfg_t *cfg, pw_source_config_t *scfg)
{
    memset(scfg, 0, sizeof(*scfg));
    scfg->proc_root = cfg->proc_root;
    scfg->nonpaged_limit_bytes = cfg->nonpaged_limit_bytes;
    scfg->paged_limit_bytes = cfg->paged_limit_bytes;
    scfg->replay_interval_ms = cfg->replay_interval_ms;
    scfg->replay_start_ms = cfg->replay_start_ms;
    scfg->sim_interval_ms = cfg->sim_interval_ms ? cfg->sim_interval_ms : cfg->interval_ms;
    /* the agent's clock to the ms (the source's own default is whole seconds: every sample
     * stamped up to a second before it is taken) */
    scfg->sim_start_ms = cfg->sim_start_ms;
    if (scfg->sim_start_ms == 0)
        scfg->sim_start_ms = now_ms() - cfg->sim_backfill_ms;
}

static void agent_free(pw_agent_t *a);

int pw_agent_open(const pw_agent_cfg_t *cfg, pw_agent_t **out, pw_diag_t *d)
{
    pw_agent_t *a = pw_calloc(1, sizeof(*a));
    if (a == NULL)
        return PW_ENOMEM;
    a->cfg = cfg;
    int r = uv_loop_init(&a->loop);
    if (r != 0) {
        pw_free(a);
        return r;
    }
    pw_sample_init(&a->sample);
    pw_buf_init(&a->frame, PW_FRAME_MAX_DEFAULT + 16);
    pw_source_config_t scfg;
    source_config(cfg, &scfg);
    if ((r = pw_source_open(cfg->source, &scfg, &a->src, d)) != 0)
        goto fail;
    snprintf(a->host_name, sizeof(a->host_name), "%s",
             cfg->host_name && *cfg->host_name ? cfg->host_name : a->src->info.host_name);
    if (a->host_name[0] == '\0') {
        size_t n = sizeof(a->host_name);
        if (uv_os_gethostname(a->host_name, &n) != 0)
            snprintf(a->host_name, sizeof(a->host_name), "unknown");
    }
    if ((r = pw_delta_enc_init(&a->enc,
                               a->src->info.counter_width ? a->src->info.counter_width : 64)) != 0)
        goto fail;
    pw_spool_opts_t so;
    memset(&so, 0, sizeof(so));
    so.max_bytes = cfg->spool_max_bytes;
    so.fsync = cfg->spool_fsync == PW_AGENT_FSYNC_ALWAYS  ? PW_SPOOL_FSYNC_ALWAYS
               : cfg->spool_fsync == PW_AGENT_FSYNC_NEVER ? PW_SPOOL_FSYNC_NEVER
                                                          : PW_SPOOL_FSYNC_MANUAL;
    pw_spool_report_t rep;
    if ((r = pw_spool_open(cfg->spool_dir, &so, &a->spool, &rep, d)) != 0)
        goto fail;
    if (rep.torn_bytes_cut || rep.corrupt_segments || rep.quarantined)
        PW_LOG_WARN(MOD, "spool repaired: %llu torn bytes cut, %u corrupt segments, %u quarantined",
                    (unsigned long long)rep.torn_bytes_cut, rep.corrupt_segments, rep.quarantined);
    if ((r = load_agent_id(a, d)) != 0 || (r = scan_spool(a)) != 0)
        goto fail;
    load_boot_id(a);
    a->seq = a->start_seq = pw_spool_last_seq(a->spool);
    a->acked_seq = pw_spool_stored_seq(a->spool); /* the collector's last ack, kept */
    a->synced_seq = a->seq;                       /* found on disk */
    if ((r = split_endpoints(a, d)) != 0)
        goto fail;
    pw_uplink_opts_t uo;
    memset(&uo, 0, sizeof(uo));
    uo.endpoints = a->endpoints;
    uo.n_endpoints = a->n_endpoints;
    uo.server_name = cfg->server_name && *cfg->server_name ? cfg->server_name : NULL;
    uo.ca_file = cfg->ca_file;
    uo.cert_file = cfg->cert_file;
    uo.key_file = cfg->key_file;
    uo.crl_file = cfg->crl_file;
    uo.backoff_min_ms = cfg->backoff_min_ms;
    uo.backoff_max_ms = cfg->backoff_max_ms;
    pw_uplink_cbs_t cbs = {on_connected, on_envelope, on_disconnected};
    if ((r = pw_uplink_new(&a->loop, &uo, &cbs, a, &a->up, d)) != 0)
        goto fail;
    a->interval_ms = cfg->interval_ms;
    uv_timer_init(&a->loop, &a->sample_timer);
    a->sample_timer.data = a;
    uv_timer_init(&a->loop, &a->pump_timer);
    a->pump_timer.data = a;
    uv_timer_init(&a->loop, &a->sync_timer);
    a->sync_timer.data = a;
    uv_timer_init(&a->loop, &a->poll_timer);
    uv_signal_init(&a->loop, &a->sigint);
    uv_signal_init(&a->loop, &a->sigterm);
    a->sigint.data = a->sigterm.data = a;
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
#ifndef _WIN32
    uv_signal_init(&a->loop, &a->sighup);
    a->sighup.data = a;
    uv_signal_start(&a->sighup, on_sighup, SIGHUP);
#endif
    uv_async_init(&a->loop, &a->stop_async, on_stop_async);
    a->stop_async.data = a;
    uv_unref((uv_handle_t *)&a->stop_async);
    pw_net_stop_publish(&a->stop_async);
    uv_async_init(&a->loop, &a->events_async, on_events_async);
    a->events_async.data = a;
    uv_unref((uv_handle_t *)&a->events_async);
    open_events(a);
    uint64_t pace = a->src->info.kind == PW_SOURCE_POOLMON_REPLAY && cfg->replay_pace_ms
                        ? cfg->replay_pace_ms
                        : cfg->interval_ms;
    uv_timer_start(&a->sample_timer, on_sample_timer, 0, pace);
    a->interval_ms = pace;
    pw_uplink_start(a->up);
    PW_LOG_INFO(MOD, "host %s, source %s, spool %s (seq %llu, acked %llu), collector %s, %s",
                a->host_name, pw_source_name(a->src), cfg->spool_dir, (unsigned long long)a->seq,
                (unsigned long long)a->acked_seq, cfg->collectors, pw_tls_library());
    *out = a;
    return 0;
fail:
    agent_free(a);
    return r;
}

static void on_poll_timer(uv_timer_t *t)
{
    uv_stop(t->loop);
}

int pw_agent_poll(pw_agent_t *a, uint64_t ms)
{
    uv_timer_start(&a->poll_timer, on_poll_timer, ms, 0);
    uv_run(&a->loop, UV_RUN_DEFAULT);
    uv_timer_stop(&a->poll_timer);
    return a->sess == SESS_STREAMING;
}

uint64_t pw_agent_sample_step(pw_agent_t *a)
{
    on_sample_timer(&a->sample_timer);
    return a->seq;
}

/* A clean stop's last word (docs/protocol.md): the collector shows the host "stopped" and
 * raises no HostSilent for it. Queued behind the samples already sent; the TLS close that
 * follows flushes it. */
static void say_goodbye(pw_agent_t *a)
{
    if (a->sess != SESS_STREAMING || !a->stop_reason[0] || !pw_uplink_is_up(a->up))
        return;
    Poolwatch__V1__Goodbye g = POOLWATCH__V1__GOODBYE__INIT;
    g.timestamp_ms = now_ms();
    g.reason = a->stop_reason;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_GOODBYE;
    env.goodbye = &g;
    int r = pw_uplink_send(a->up, &env);
    if (r == 0)
        PW_LOG_INFO(MOD, "goodbye sent to %s (%s)", pw_uplink_endpoint(a->up), a->stop_reason);
    else
        PW_LOG_WARN(MOD, "cannot send goodbye: %s", pw_strerror(r));
}

void pw_agent_close(pw_agent_t *a)
{
    if (a == NULL)
        return;
    pw_net_stop_publish(NULL);
    say_goodbye(a);
    end_session(a);
    agent_free(a);
}

int pw_agent_run(const pw_agent_cfg_t *cfg, pw_diag_t *d)
{
    pw_agent_t *a;
    int r = pw_agent_open(cfg, &a, d);
    if (r != 0)
        return r;
    uv_run(&a->loop, UV_RUN_DEFAULT);
    pw_agent_close(a);
    PW_LOG_INFO(MOD, "stopped"); /* the last line of a run: spool closed, connection gone */
    return 0;
}

/* Frees what pw_agent_open made, as far as it got. */
static void agent_free(pw_agent_t *a)
{
    /* The uplink closes its own handles (its TLS session may still flush); we close ours and
     * let the loop run until everything is closed. */
    if (a->up)
        pw_uplink_close(a->up);
    pw_net_close_if_open((uv_handle_t *)&a->sample_timer, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->pump_timer, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->sync_timer, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->poll_timer, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->sigint, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->sigterm, &a->loop);
#ifndef _WIN32
    pw_net_close_if_open((uv_handle_t *)&a->sighup, &a->loop);
#endif
    pw_evsub_close(a->evsub); /* no delivery after it: the async may close */
    a->evsub = NULL;
    pw_net_close_if_open((uv_handle_t *)&a->stop_async, &a->loop);
    pw_net_close_if_open((uv_handle_t *)&a->events_async, &a->loop);
    pw_net_loop_drain_close(&a->loop);
    pw_spool_close(a->spool);
    pw_source_close(a->src);
    pw_delta_enc_close(&a->enc);
    pw_sample_close(&a->sample);
    pw_buf_close(&a->frame);
    pw_free(a->kf_seqs);
    pw_free(a->endpoints_buf);
    pw_free(a);
}

/* ============================================================================================
 * --check-config
 * ========================================================================================== */

static int dir_writable(const char *dir, pw_diag_t *d, const char *field)
{
    char parent[1024];
    snprintf(parent, sizeof(parent), "%s", dir);
    /* The spool creates its own directory (one level): then the parent must be writable. */
    if (access(parent, F_OK) != 0) {
        char *slash = strrchr(parent, '/');
        if (slash == NULL)
            snprintf(parent, sizeof(parent), ".");
        else if (slash == parent)
            parent[1] = '\0';
        else
            *slash = '\0';
    }
    if (access(parent, W_OK) != 0)
        return pw_diag_set(d, PW_EACCES, 0, 0, field, "%s: '%s' is missing or not writable", field,
                           parent);
    return 0;
}

int pw_agent_check(const pw_agent_cfg_t *cfg, pw_diag_t *d)
{
    pw_source_config_t scfg;
    source_config(cfg, &scfg);
    pw_source_t *src;
    int r = pw_source_open(cfg->source, &scfg, &src, d);
    if (r != 0)
        return r;
    /* The name the Hello will carry (pw_agent_run), which the collector checks against the
     * certificate: a mismatch is refused there, with retries for ever; say it here. */
    char name[256];
    snprintf(name, sizeof(name), "%s",
             cfg->host_name && *cfg->host_name ? cfg->host_name : src->info.host_name);
    pw_source_close(src);
    if (name[0] == '\0') {
        size_t n = sizeof(name);
        if (uv_os_gethostname(name, &n) != 0)
            name[0] = '\0';
    }
    if (name[0] != '\0' && cfg->cert_file != NULL && cfg->cert_file[0] != '\0') {
        char names[512];
        int m = pw_tls_cert_names_host(cfg->cert_file, name, names, sizeof(names));
        if (m == 0)
            return pw_diag_set(d, PW_ECONFIG, 0, 0, "collector.cert_file",
                               "collector.cert_file: the certificate is for %s, but this agent "
                               "names itself '%s' (set agent.host_name, or make its certificate "
                               "for '%s'): the collector would refuse it",
                               names[0] ? names : "no host name", name, name);
    }
    char *eps = pw_strdup(cfg->collectors ? cfg->collectors : "");
    if (eps == NULL)
        return PW_ENOMEM;
    char *save = NULL;
    for (char *tok = strtok_r(eps, ", ", &save); tok && r == 0; tok = strtok_r(NULL, ", ", &save)) {
        char host[256];
        uint16_t port;
        if (pw_net_split_host_port(tok, 7070, host, sizeof(host), &port, NULL) != 0 || port == 0)
            r = pw_diag_set(d, PW_ECONFIG, 0, 0, "collector.endpoints",
                            "collector.endpoints: '%s' is not host:port (port 1..65535)", tok);
    }
    pw_free(eps);
    if (r != 0)
        return r;
    pw_tls_ctx_t *ctx;
    pw_tls_ctx_opts_t to = {.role = PW_TLS_CLIENT,
                            .ca_file = cfg->ca_file,
                            .cert_file = cfg->cert_file,
                            .key_file = cfg->key_file,
                            .crl_file = cfg->crl_file};
    if ((r = pw_tls_ctx_new(&ctx, &to, d)) != 0)
        return r;
    pw_tls_ctx_free(ctx);
    return dir_writable(cfg->spool_dir, d, "spool.dir");
}
