/* double.c: the one collector test double (double.h). */
#include "double.h"
#include "api_internal.h" /* pw__api_gcache_free */
#include "codec.h"
#include "frame.h"

#include <stdio.h>
#include <string.h>

static int send_command(void *arg, const pw_host_t *h, const Poolwatch__V1__Command *cmd)
{
    pw_double_t *d = arg;
    if (!pw_host_connected(h))
        return PW_ECLOSED;
    return d->on_command ? d->on_command(d->on_command_arg, h, cmd) : 0;
}

static size_t connections(void *arg)
{
    (void)arg;
    return 0;
}

int pw_double_open(pw_double_t *d)
{
    memset(d, 0, sizeof(*d));
    pw_buf_init(&d->frame, PW_FRAME_MAX_DEFAULT + 16);
    int r = pw_store_open(":memory:", NULL, &d->store, NULL);
    if (r == 0)
        r = pw_ingest_new(d->store, &d->ing, NULL);
    if (r == 0) { /* tests stamp samples from 1970 on, and in the future */
        pw_ingest_limits_t lim;
        pw_ingest_limits_default(&lim);
        lim.min_ts_ms = 0;
        lim.max_ahead_ms = UINT64_MAX;
        pw_ingest_set_limits(d->ing, &lim);
    }
    if (r == 0)
        r = pw_analysis_run_new(NULL, d->ing, NULL, &d->an);
    if (r != 0)
        return r;
    d->api.ing = d->ing;
    d->api.an = d->an;
    d->api.agents = (pw_api_agents_t){send_command, connections, d};
    return 0;
}

int pw_double_open_with_token(pw_double_t *d, const char *token, const char *role)
{
    char hx[65], line[256];
    int r = pw_double_open(d);
    if (r != 0 || (r = pw_tokens_hash(token, hx)) != 0)
        return r;
    snprintf(line, sizeof(line), "%s %s tester\n", hx, role);
    return pw_tokens_parse(line, strlen(line), &d->api.tokens, NULL);
}

int pw_double_send_first(pw_double_t *d, pw_host_t *h, const pw_sample_t *s)
{
    pw_delta_enc_t e;
    int r = pw_delta_enc_init(&e, h->counter_width);
    if (r == 0)
        r = pw_double_send(d, &e, h, s);
    pw_delta_enc_close(&e);
    return r;
}

void pw_double_close(pw_double_t *d)
{
    pw__api_gcache_free(&d->api);
    pw_tokens_free(d->api.tokens);
    pw_pooltag_free(d->api.pooltag);
    pw_analysis_run_close(d->an);
    pw_ingest_free(d->ing);
    pw_store_close(d->store);
    pw_buf_close(&d->frame);
    memset(d, 0, sizeof(*d));
}

void pw_double_hello_init(Poolwatch__V1__Hello *hm, const char *name, unsigned width, char aid[300])
{
    snprintf(aid, 300, "agent:%s", name);
    Poolwatch__V1__Hello init = POOLWATCH__V1__HELLO__INIT;
    *hm = init;
    hm->protocol_major = PW_PROTOCOL_MAJOR;
    hm->host_name = (char *)(uintptr_t)name;
    hm->counter_width = width;
    hm->agent_id.data = (uint8_t *)aid;
    hm->agent_id.len = strlen(aid) > 64 ? 64 : strlen(aid);
    hm->boot_id.data = (uint8_t *)"boot:1";
    hm->boot_id.len = 6;
    hm->os_family = "";
    hm->os_version = "";
    hm->arch = "";
    hm->agent_version = "";
}

pw_host_t *pw_double_hello(pw_double_t *d, const Poolwatch__V1__Hello *hm, int connected)
{
    pw_ingest_hello_res_t res;
    if (pw_ingest_hello(d->ing, hm, hm->host_name, &d->session, &res, NULL) != 0)
        return NULL;
    if (!connected)
        pw_ingest_detach(d->ing, res.host, &d->session);
    return res.host;
}

pw_host_t *pw_double_stream(pw_double_t *d, const char *name, unsigned width, int connected)
{
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, name, width, aid);
    return pw_double_hello(d, &hm, connected);
}

int pw_double_send(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, const pw_sample_t *s)
{
    return pw_double_send_events(d, e, h, s, NULL, 0);
}

int pw_double_send_events(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, const pw_sample_t *s,
                          const pw_winevent_t *ev, size_t n)
{
    const Poolwatch__V1__Sample *msg;
    int r = pw_delta_encode(e, s, 0, &msg, NULL);
    if (r != 0)
        return r;
    pw_codec_event_t w[8];
    Poolwatch__V1__PoolEvent *wp[8];
    if (n > 8)
        return PW_EINVAL;
    for (size_t i = 0; i < n; i++) {
        pw_codec_event_fill(&w[i], &ev[i]);
        wp[i] = &w[i].msg;
    }
    Poolwatch__V1__Sample *m = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    m->n_events = n;
    m->events = n ? wp : NULL;
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_SAMPLE;
    env.sample = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    pw_buf_reset(&d->frame);
    if ((r = pw_codec_pack_frame(&env, PW_FRAME_MAX_DEFAULT, &d->frame)) != 0) {
        m->n_events = 0;
        m->events = NULL;
        return r;
    }
    pw_ingest_frame_res_t res;
    int store_failed;
    /* the frame's payload: after its 4-byte length */
    r = pw_ingest_frame(d->ing, h, msg, d->frame.data + 4, d->frame.len - 4, &res, &store_failed,
                        NULL);
    m->n_events = 0; /* the encoder's message, used again */
    m->events = NULL;
    return r;
}

pw_host_t *pw_double_restore(pw_double_t *d, const char *name, unsigned width, const pw_sample_t *s)
{
    return pw_ingest_restore(d->ing, name, width, s);
}
