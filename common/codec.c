#include "codec.h"
#include "alloc.h"
#include "frame.h"

#include <string.h>

typedef struct {
    size_t used, limit;
    int over;
} alloc_budget_t;

static void *budget_alloc(void *data, size_t size)
{
    alloc_budget_t *b = data;
    if (size > b->limit - b->used) {
        b->over = 1;
        return NULL;
    }
    b->used += size;
    return pw_malloc(size);
}

static void plain_free(void *data, void *p)
{
    (void)data;
    pw_free(p);
}

static void *plain_alloc(void *data, size_t size)
{
    (void)data;
    return pw_malloc(size);
}

static ProtobufCAllocator free_allocator = {plain_alloc, plain_free, NULL};

int pw_codec_pack_frame(const Poolwatch__V1__Envelope *env, size_t max_payload, pw_buf_t *out)
{
    size_t n = poolwatch__v1__envelope__get_packed_size(env);
    if (n > max_payload || n > UINT32_MAX)
        return PW_EFRAMETOOBIG;
    int r = pw_buf_reserve(out, PW_FRAME_HEADER + n);
    if (r != 0)
        return r;
    pw_frame_put_header(out->data + out->len, (uint32_t)n);
    size_t w = poolwatch__v1__envelope__pack(env, out->data + out->len + PW_FRAME_HEADER);
    if (w != n)
        return PW_EBADFRAME; /* cannot happen with a consistent message */
    out->len += PW_FRAME_HEADER + n;
    return 0;
}

int pw_codec_pack_sample(const Poolwatch__V1__Sample *s, size_t max_payload, pw_buf_t *out)
{
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_SAMPLE;
    env.sample = (Poolwatch__V1__Sample *)(uintptr_t)s;
    return pw_codec_pack_frame(&env, max_payload, out);
}

int pw_codec_unpack(const uint8_t *payload, size_t len, Poolwatch__V1__Envelope **env, pw_diag_t *d)
{
    alloc_budget_t budget = {0, len * PW_CODEC_ALLOC_FACTOR + 65536, 0};
    if (len > (SIZE_MAX - 65536) / PW_CODEC_ALLOC_FACTOR)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "payload", "payload of %zu bytes is too large",
                           len);
    ProtobufCAllocator a = {budget_alloc, plain_free, &budget};
    Poolwatch__V1__Envelope *e = poolwatch__v1__envelope__unpack(&a, len, payload);
    if (e == NULL) {
        if (budget.over)
            return pw_diag_set(d, PW_ETOOBIG, 0, 0, "payload",
                               "decoding %zu bytes would allocate more than %zu bytes", len,
                               budget.limit);
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "envelope",
                           "%zu bytes are not a valid poolwatch.v1.Envelope", len);
    }
    if (e->msg_case == POOLWATCH__V1__ENVELOPE__MSG__NOT_SET) {
        pw_codec_free(e);
        return pw_diag_set(d, PW_EBADFRAME, 0, 0, "envelope", "envelope carries no message");
    }
    *env = e;
    return 0;
}

void pw_codec_free(Poolwatch__V1__Envelope *env)
{
    if (env != NULL)
        poolwatch__v1__envelope__free_unpacked(env, &free_allocator);
}

const char *pw_codec_msg_name(const Poolwatch__V1__Envelope *env)
{
    switch (env->msg_case) {
    case POOLWATCH__V1__ENVELOPE__MSG_HELLO:
        return "hello";
    case POOLWATCH__V1__ENVELOPE__MSG_SAMPLE:
        return "sample";
    case POOLWATCH__V1__ENVELOPE__MSG_ACK:
        return "ack";
    case POOLWATCH__V1__ENVELOPE__MSG_COMMAND:
        return "command";
    case POOLWATCH__V1__ENVELOPE__MSG_COMMAND_RESULT:
        return "command_result";
    case POOLWATCH__V1__ENVELOPE__MSG_HEARTBEAT:
        return "heartbeat";
    case POOLWATCH__V1__ENVELOPE__MSG_ERROR:
        return "error";
    case POOLWATCH__V1__ENVELOPE__MSG_GOODBYE:
        return "goodbye";
    default:
        return "none";
    }
}

void pw_codec_event_fill(pw_codec_event_t *w, const pw_winevent_t *ev)
{
    Poolwatch__V1__PoolEvent init = POOLWATCH__V1__POOL_EVENT__INIT;
    w->msg = init;
    w->msg.timestamp_ms = ev->ts_ms;
    w->msg.provider = (char *)(uintptr_t)ev->provider;
    w->msg.event_id = ev->event_id;
    w->msg.record_id = ev->record_id;
    w->msg.pool = (Poolwatch__V1__EventPool)ev->pool;
    size_t n = ev->n_tags < PW_WINEVENT_TAGS_MAX ? ev->n_tags : PW_WINEVENT_TAGS_MAX;
    for (size_t i = 0; i < n; i++) {
        Poolwatch__V1__EventTag t = POOLWATCH__V1__EVENT_TAG__INIT;
        t.tag.data = (uint8_t *)(uintptr_t)ev->tags[i].tag;
        t.tag.len = 4;
        t.pool = (Poolwatch__V1__EventPool)ev->tags[i].pool;
        t.bytes = ev->tags[i].bytes;
        w->tags[i] = t;
        w->tag_ptrs[i] = &w->tags[i];
    }
    w->msg.n_tags = n;
    w->msg.tags = n ? w->tag_ptrs : NULL;
}

int pw_codec_event_read(const Poolwatch__V1__PoolEvent *w, pw_winevent_t *ev, pw_diag_t *d)
{
    memset(ev, 0, sizeof(*ev));
    const char *prov = w->provider ? w->provider : "";
    size_t plen = strlen(prov);
    if (plen >= sizeof(ev->provider))
        return pw_diag_set(d, PW_EPROTO, 0, 0, "events.provider",
                           "provider name of %zu bytes (at most %zu)", plen,
                           sizeof(ev->provider) - 1);
    if (w->n_tags > PW_WINEVENT_TAGS_MAX)
        return pw_diag_set(d, PW_EPROTO, 0, 0, "events.tags", "%zu tags (at most %d)", w->n_tags,
                           PW_WINEVENT_TAGS_MAX);
    if ((unsigned)w->pool > PW_WINEVENT_POOL_NONPAGED)
        return pw_diag_set(d, PW_EPROTO, 0, 0, "events.pool", "pool %d", (int)w->pool);
    memcpy(ev->provider, prov, plen + 1);
    ev->ts_ms = w->timestamp_ms;
    ev->event_id = w->event_id;
    ev->record_id = w->record_id;
    ev->pool = (uint8_t)w->pool;
    for (size_t i = 0; i < w->n_tags; i++) {
        const Poolwatch__V1__EventTag *t = w->tags[i];
        if (t->tag.len != 4)
            return pw_diag_set(d, PW_EPROTO, 0, 0, "events.tags.tag", "tag of %zu bytes (4)",
                               t->tag.len);
        if (t->pool != POOLWATCH__V1__EVENT_POOL__EVENT_POOL_PAGED &&
            t->pool != POOLWATCH__V1__EVENT_POOL__EVENT_POOL_NONPAGED)
            return pw_diag_set(d, PW_EPROTO, 0, 0, "events.tags.pool", "tag pool %d", (int)t->pool);
        memcpy(ev->tags[i].tag, t->tag.data, 4);
        ev->tags[i].pool = (uint8_t)t->pool;
        ev->tags[i].bytes = t->bytes;
    }
    ev->n_tags = w->n_tags;
    return 0;
}
