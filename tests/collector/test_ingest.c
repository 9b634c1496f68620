/* test_ingest.c: ingest's guards against storing a sample twice (issue 15, item 2), in
 * process through the collector test double (double.h): an agent that resends after a
 * reconnect, resends a lower seq, restarts with a new boot id (a new instance) holding unacked
 * samples of the old one, and a collector that restarts over the same store. Every sample is
 * in the store once, under the instance that took it; the analysis is fed once per stored
 * sample; the resume point (the ack a Hello gets) never goes back. */
#include "test_util.h"

#include "codec.h"
#include "double.h"
#include "frame.h"

static pw_double_t g_d;
static int g_fed; /* samples handed to the observer (the analysis in the collector) */

static void on_sample(void *arg, const pw_host_t *h, const pw_sample_t *screen)
{
    (void)arg;
    (void)h;
    (void)screen;
    g_fed++;
}

static void add(pw_sample_t *s, const char *tag, uint64_t a, uint64_t f, uint64_t bytes)
{
    assert_int_equal(pw_sample_add(s, tag, strlen(tag), PW_POOL_NONPAGED, a, f, a - f, bytes), 0);
}

/* The agent's sample `seq`: one tag growing by 10 allocations a sample. */
static void sample_at(pw_sample_t *s, uint64_t seq)
{
    pw_sample_reset(s);
    s->seq = seq;
    s->timestamp_ms = 1764400000000ull + seq * 10000;
    add(s, "Ddk ", 100 + 10 * seq, 50, 1000 * seq);
    s->totals.nonpaged_bytes = 1000 * seq;
}

/* Frames Sample `m` as an agent sends it and hands it to ingest `ing` for host `h`: returns
 * pw_ingest_frame's result, *stored the seq it reports stored (0: not). */
static int to_ingest(pw_ingest_t *ing, pw_host_t *h, Poolwatch__V1__Sample *m, uint64_t *stored)
{
    Poolwatch__V1__Envelope env = POOLWATCH__V1__ENVELOPE__INIT;
    env.msg_case = POOLWATCH__V1__ENVELOPE__MSG_SAMPLE;
    env.sample = m;
    pw_buf_reset(&g_d.frame);
    assert_int_equal(pw_codec_pack_frame(&env, PW_FRAME_MAX_DEFAULT, &g_d.frame), 0);
    pw_ingest_frame_res_t res;
    int store_failed;
    int r = pw_ingest_frame(ing, h, m, g_d.frame.data + 4, g_d.frame.len - 4, &res, &store_failed,
                            NULL);
    assert_int_equal(store_failed, 0);
    *stored = res.stored_seq;
    return r;
}

/* Encodes sample `seq` with `e` (keyframe when `kf`), naming instance `boot` (NULL: the
 * session's), and hands the frame to ingest `ing` for host `h`. Returns pw_ingest_frame's
 * result with *stored the seq it reports stored (0: not). */
static int send_seq(pw_ingest_t *ing, pw_delta_enc_t *e, pw_host_t *h, uint64_t seq, int kf,
                    const char *boot, uint64_t *stored)
{
    pw_sample_t s;
    pw_sample_init(&s);
    sample_at(&s, seq);
    const Poolwatch__V1__Sample *msg;
    int r = pw_delta_encode(e, &s, kf ? PW_DELTA_KEYFRAME | PW_DELTA_WITH_DICT : 0, &msg, NULL);
    pw_sample_close(&s);
    assert_int_equal(r, 0);
    Poolwatch__V1__Sample *m = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    if (boot) {
        m->boot_id.data = (uint8_t *)(uintptr_t)boot;
        m->boot_id.len = strlen(boot);
    }
    r = to_ingest(ing, h, m, stored);
    m->boot_id.data = NULL;
    m->boot_id.len = 0;
    return r;
}

/* The agent's Hello as instance `boot`; returns the host and the resume point. */
static pw_host_t *hello(pw_ingest_t *ing, const char *boot, uint64_t *resume)
{
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, "HOST01", 32, aid);
    hm.boot_id.data = (uint8_t *)(uintptr_t)boot;
    hm.boot_id.len = strlen(boot);
    pw_ingest_hello_res_t res;
    assert_int_equal(pw_ingest_hello(ing, &hm, "HOST01", &g_d.session, &res, NULL), 0);
    *resume = res.resume_seq;
    return res.host;
}

static uint64_t stored_samples(void)
{
    pw_store_stats_t st;
    assert_int_equal(pw_store_stats(g_d.store, &st, NULL), 0);
    return st.samples;
}

static uint64_t inst_last(const char *boot)
{
    const char *aid = "agent:HOST01";
    uint64_t seq = 0;
    assert_int_equal(pw_store_last_seq(g_d.store, (const uint8_t *)aid, strlen(aid),
                                       (const uint8_t *)boot, strlen(boot), &seq),
                     0);
    return seq;
}

static void test_resends_stored_once(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&g_d), 0);
    pw_ingest_on_sample(g_d.ing, on_sample, NULL); /* in place of the analysis */
    g_fed = 0;
    uint64_t resume, stored;
    pw_delta_enc_t e;

    /* Instance boot:1 sends 1..3; all committed (acked 3). */
    pw_host_t *h = hello(g_d.ing, "boot:1", &resume);
    assert_int_equal(resume, 0);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    for (uint64_t s = 1; s <= 3; s++) {
        assert_int_equal(send_seq(g_d.ing, &e, h, s, s == 1, NULL, &stored), 0);
        assert_int_equal(stored, s);
    }
    pw_delta_enc_close(&e);
    assert_int_equal(pw_ingest_commit(g_d.ing, NULL), 3);
    assert_int_equal(pw_host_committed_seq(h), 3);

    /* Reconnect (same instance): resume at 3; the rebase keyframe of 3 and then 3 again and
     * a lower seq (2) are applied, never stored again. */
    h = hello(g_d.ing, "boot:1", &resume);
    assert_int_equal(resume, 3);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 3, 1, NULL, &stored), 0);
    assert_int_equal(stored, 0);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 3, 1, NULL, &stored), 0);
    assert_int_equal(stored, 0);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 2, 1, NULL, &stored), 0);
    assert_int_equal(stored, 0);
    pw_delta_enc_close(&e);
    assert_int_equal(stored_samples(), 3);
    assert_int_equal(g_fed, 3);
    assert_int_equal(h->resent, 3);

    /* The agent restarts with a new boot id: the resume point stays at 3 (before: 0, and the
     * agent resent its spool under boot:2, stored a second time). It rebases on 3 (taken by
     * boot:1), resends its unacked 4 (boot:1) and goes on with 5 (boot:2). */
    h = hello(g_d.ing, "boot:2", &resume);
    assert_int_equal(resume, 3);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 3, 1, "boot:1", &stored), 0);
    assert_int_equal(stored, 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 4, 0, "boot:1", &stored), 0);
    assert_int_equal(stored, 4);
    assert_int_equal(send_seq(g_d.ing, &e, h, 5, 0, NULL, &stored), 0);
    assert_int_equal(stored, 5);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_ingest_commit(g_d.ing, NULL), 2);
    assert_int_equal(inst_last("boot:1"), 4);
    assert_int_equal(inst_last("boot:2"), 5);
    assert_int_equal(stored_samples(), 5);
    assert_int_equal(g_fed, 5);

    /* The collector restarts over the same store (a second ingest: the fleet is rebuilt from
     * it); the agent restarts again (boot:3) and resends 4 (boot:1) and 5 (boot:2), which
     * the store holds: resume at 5, nothing stored, nothing fed. */
    pw_ingest_t *ing2;
    assert_int_equal(pw_ingest_new(g_d.store, &ing2, NULL), 0);
    pw_ingest_on_sample(ing2, on_sample, NULL);
    h = hello(ing2, "boot:3", &resume);
    assert_int_equal(resume, 5);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(ing2, &e, h, 4, 1, "boot:1", &stored), 0);
    assert_int_equal(stored, 0);
    assert_int_equal(send_seq(ing2, &e, h, 5, 0, "boot:2", &stored), 0);
    assert_int_equal(stored, 0);
    assert_int_equal(send_seq(ing2, &e, h, 6, 0, NULL, &stored), 0);
    assert_int_equal(stored, 6);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_ingest_commit(ing2, NULL), 1);
    assert_int_equal(pw_host_committed_seq(h), 6);
    assert_int_equal(inst_last("boot:3"), 6);
    assert_int_equal(stored_samples(), 6);
    assert_int_equal(g_fed, 6);
    pw_ingest_detach(ing2, h, &g_d.session);
    pw_ingest_free(ing2);
    pw_double_close(&g_d);
}

/* A store on a file of its own, chunks of 4 samples; `ing` over it (NULL: none). */
static pw_store_t *open_file_store(const char *path, pw_ingest_t **ing)
{
    pw_store_opts_t o = {.chunk_max_samples = 4};
    pw_store_t *st;
    assert_int_equal(pw_store_open(path, &o, &st, NULL), 0);
    assert_int_equal(pw_ingest_new(st, ing, NULL), 0);
    return st;
}

/* The API's `samples` of a host is the number of distinct samples the store ever stored of it:
 * resends are not counted, and neither retention (the store's raw chunks drop old samples) nor
 * a restart of the collector (the store closed and opened again, ingest rebuilt from it) makes
 * it go down. Counted by hand: seq 1..10 stored (10); 9 and 10 resent, 11 new (11); raw
 * retention at the 8th sample's time + 48 h + 1 ms drops the two compacted chunks 1..4 and
 * 5..8 (the store holds 3 then); after the restart 11 (resent, instance boot:1) is not new and
 * 12 is (12); after a second restart still 12. */
static void test_samples_across_retention_and_restart(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&g_d), 0); /* its frame buffer and session */
    char base[200], tpl[256], path[300];
    size_t bn = sizeof(base);
    assert_int_equal(uv_os_tmpdir(base, &bn), 0);
    snprintf(tpl, sizeof(tpl), "%s/pw_ingest_XXXXXX", base);
    uv_fs_t req;
    assert_int_equal(uv_fs_mkdtemp(NULL, &req, tpl, NULL), 0);
    snprintf(path, sizeof(path), "%s/store.db", req.path);
    char dir[256];
    snprintf(dir, sizeof(dir), "%s", req.path);
    uv_fs_req_cleanup(&req);

    pw_ingest_t *ing;
    pw_store_t *st = open_file_store(path, &ing);
    uint64_t resume, stored;
    pw_delta_enc_t e;
    pw_host_t *h = hello(ing, "boot:1", &resume);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    for (uint64_t s = 1; s <= 10; s++)
        assert_int_equal(send_seq(ing, &e, h, s, s == 1, NULL, &stored), 0);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_ingest_commit(ing, NULL), 10);
    assert_int_equal(h->samples_stored, 10);
    h = hello(ing, "boot:1", &resume); /* a reconnect that resends 9 and 10 */
    assert_int_equal(resume, 10);
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(ing, &e, h, 9, 1, NULL, &stored), 0);
    assert_int_equal(send_seq(ing, &e, h, 10, 0, NULL, &stored), 0);
    assert_int_equal(send_seq(ing, &e, h, 11, 0, NULL, &stored), 0);
    assert_int_equal(stored, 11);
    pw_delta_enc_close(&e);
    assert_int_equal(pw_ingest_commit(ing, NULL), 1);
    assert_int_equal(h->resent, 2);
    assert_int_equal(h->samples, 13); /* received: the resends too */
    assert_int_equal(h->samples_stored, 11);

    /* chunks 1..4 and 5..8 sealed: compacted, then dropped by raw retention */
    pw_diag_t d;
    assert_int_equal(pw_store_compact(st, 1000, &d), 2);
    uint64_t t8 = 1764400000000ull + 8 * 10000;
    assert_true(pw_store_retention(st, t8 + PW_STORE_DEFAULT_RAW_RETENTION_MS + 1, &d) >= 2);
    pw_store_stats_t ss;
    assert_int_equal(pw_store_stats(st, &ss, NULL), 0);
    assert_int_equal(ss.samples, 3);
    assert_int_equal(h->samples_stored, 11);

    for (int restart = 0; restart < 2; restart++) {
        pw_ingest_detach(ing, h, &g_d.session);
        pw_ingest_free(ing);
        pw_store_close(st);
        st = open_file_store(path, &ing);
        h = pw_fleet_find(pw_ingest_fleet(ing), "HOST01");
        assert_non_null(h);
        assert_int_equal(h->samples_stored, restart == 0 ? 11 : 12);
        assert_int_equal(h->samples, 0); /* received since this start */
        if (restart == 1)
            break;
        /* its agent restarted too: resends 11 (boot:1), then 12 under boot:2 */
        h = hello(ing, "boot:2", &resume);
        assert_int_equal(resume, 11);
        assert_int_equal(pw_delta_enc_init(&e, 32), 0);
        assert_int_equal(send_seq(ing, &e, h, 11, 1, "boot:1", &stored), 0);
        assert_int_equal(stored, 0);
        assert_int_equal(send_seq(ing, &e, h, 12, 0, NULL, &stored), 0);
        assert_int_equal(stored, 12);
        pw_delta_enc_close(&e);
        assert_int_equal(pw_ingest_commit(ing, NULL), 1);
        assert_int_equal(h->samples_stored, 12);
    }
    pw_ingest_free(ing);
    pw_store_close(st);
    static const char *const suffix[] = {"", "-wal", "-shm", ".lock"};
    for (size_t i = 0; i < 4; i++) {
        char p[320];
        snprintf(p, sizeof(p), "%s%s", path, suffix[i]);
        uv_fs_unlink(NULL, &req, p, NULL);
        uv_fs_req_cleanup(&req);
    }
    uv_fs_rmdir(NULL, &req, dir, NULL);
    uv_fs_req_cleanup(&req);
    pw_double_close(&g_d);
}

/* The Hello's limits with their source and detail are kept with the host: a collector that
 * restarts while the agent is away knows where ddk-2003's 128 MiB comes from (the new-user
 * trial: "unknown" until the agent came back, the 128 MiB alone kept by the samples' totals).
 * A later Hello with another limit replaces it; a Hello without a paged limit keeps the
 * row's. */
static void test_limit_source_kept_across_restart(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&g_d), 0);
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, "ddk-2003", 32, aid);
    Poolwatch__V1__PoolLimit np = POOLWATCH__V1__POOL_LIMIT__INIT, pg = np;
    np.bytes = 134217728;
    np.source = POOLWATCH__V1__LIMIT_SOURCE__LIMIT_COMPUTED;
    np.detail = "Windows Server 2003 x86 with /3GB: 128 MB";
    pg.bytes = 268435456;
    pg.source = POOLWATCH__V1__LIMIT_SOURCE__LIMIT_REPORTED;
    pg.detail = "";
    hm.nonpaged_limit = &np;
    hm.paged_limit = &pg;
    pw_host_t *h = pw_double_hello(&g_d, &hm, 1);
    assert_non_null(h);
    pw_delta_enc_t e;
    uint64_t stored;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    assert_int_equal(send_seq(g_d.ing, &e, h, 1, 1, NULL, &stored), 0);
    assert_int_equal(pw_ingest_commit(g_d.ing, NULL), 1);
    pw_ingest_detach(g_d.ing, h, &g_d.session);

    /* restart: no Hello yet */
    pw_ingest_t *ing2;
    assert_int_equal(pw_ingest_new(g_d.store, &ing2, NULL), 0);
    const pw_host_t *r = pw_fleet_find(pw_ingest_fleet(ing2), "ddk-2003");
    assert_non_null(r);
    assert_int_equal(r->nonpaged_limit_bytes, 134217728);
    assert_int_equal(r->nonpaged_limit_source, PW_LIMIT_COMPUTED);
    assert_string_equal(r->nonpaged_limit_detail, "Windows Server 2003 x86 with /3GB: 128 MB");
    assert_int_equal(r->paged_limit_bytes, 268435456);
    assert_int_equal(r->paged_limit_source, PW_LIMIT_REPORTED);

    /* the agent back with a registry limit and no paged one: the nonpaged limit changes, the
     * paged one stays, and so after another restart */
    np.bytes = 100663296;
    np.source = POOLWATCH__V1__LIMIT_SOURCE__LIMIT_REGISTRY;
    np.detail = "NonPagedPoolSize";
    hm.paged_limit = NULL;
    pw_ingest_hello_res_t res;
    assert_int_equal(pw_ingest_hello(ing2, &hm, "ddk-2003", &g_d.session, &res, NULL), 0);
    assert_int_equal(send_seq(ing2, &e, res.host, 2, 1, NULL, &stored), 0);
    assert_int_equal(pw_ingest_commit(ing2, NULL), 1);
    pw_ingest_detach(ing2, res.host, &g_d.session);
    pw_ingest_free(ing2);
    assert_int_equal(pw_ingest_new(g_d.store, &ing2, NULL), 0);
    r = pw_fleet_find(pw_ingest_fleet(ing2), "ddk-2003");
    assert_non_null(r);
    assert_int_equal(r->nonpaged_limit_bytes, 100663296);
    assert_int_equal(r->nonpaged_limit_source, PW_LIMIT_REGISTRY);
    assert_string_equal(r->nonpaged_limit_detail, "NonPagedPoolSize");
    assert_int_equal(r->paged_limit_bytes, 268435456);
    assert_int_equal(r->paged_limit_source, PW_LIMIT_REPORTED);
    pw_ingest_free(ing2);
    pw_delta_enc_close(&e);
    pw_double_close(&g_d);
}

/* A sample `seq` at `ts` with `ntags` tags of `taglen` bytes (and 64-bit counters with
 * `diff` outstanding of `allocs`) as a keyframe from a fresh encoder; its pw_ingest_frame
 * result. */
static int send_custom(pw_host_t *h, uint64_t seq, uint64_t ts, size_t ntags, size_t taglen,
                       uint64_t allocs, uint64_t diff)
{
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = seq;
    s.timestamp_ms = ts;
    for (size_t i = 0; i < ntags; i++) {
        char tag[PW_TAG_MAX + 1];
        snprintf(tag, sizeof(tag), "%0*zu", (int)taglen, i);
        assert_int_equal(
            pw_sample_add(&s, tag, taglen, PW_POOL_NONPAGED, allocs, allocs - diff, diff, 64), 0);
    }
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    const Poolwatch__V1__Sample *msg;
    int r = pw_delta_encode(&e, &s, PW_DELTA_KEYFRAME | PW_DELTA_WITH_DICT, &msg, NULL);
    pw_sample_close(&s);
    assert_int_equal(r, 0);
    Poolwatch__V1__Sample *m = (Poolwatch__V1__Sample *)(uintptr_t)msg;
    if (seq == UINT64_MAX - 1) /* the encoder refuses nothing: make it the reserved top seq */
        m->seq = UINT64_MAX;
    uint64_t stored;
    r = to_ingest(g_d.ing, h, m, &stored);
    pw_delta_enc_close(&e);
    return r;
}

/* Issue 15, items 5, 8 and 9: what a hostile agent sends is refused with a named error before
 * it changes anything (seq 2^64 - 1, times of 1970 and 9999, diff above allocs with 64-bit
 * counters, more tags or rows than a host may have, a tag of 64 bytes), and Hello strings
 * lose their control bytes. */
static void test_hostile_samples_refused(void **state)
{
    (void)state;
    assert_int_equal(pw_double_open(&g_d), 0);
    pw_ingest_limits_t lim;
    pw_ingest_limits_default(&lim); /* the collector's, time checks included */
    lim.max_tags = 100;
    lim.max_rows = 100;
    pw_ingest_set_limits(g_d.ing, &lim);
    g_fed = 0;
    pw_ingest_on_sample(g_d.ing, on_sample, NULL);
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, "HOST01", 64, aid);
    hm.os_version = "6.1\r\n2026-12-01T00:00:00.000Z WARN  [collector] forged\x1b[2J";
    hm.agent_version = "1.0\n";
    pw_host_t *h = pw_double_hello(&g_d, &hm, 1);
    assert_non_null(h);
    assert_string_equal(h->os_version,
                        "6.1??2026-12-01T00:00:00.000Z WARN  [collector] forged?[2J");
    assert_string_equal(h->agent_version, "1.0?");
    uint64_t now = 1764400000000ull; /* 2025: between 2000 and now + 1 day */
    assert_int_equal(send_custom(h, UINT64_MAX - 1, now, 1, 4, 10, 5), PW_ESEQ);
    assert_int_equal(send_custom(h, 1, 1000, 1, 4, 10, 5), PW_ESTAMP);               /* 1970 */
    assert_int_equal(send_custom(h, 1, 253402300799000ull, 1, 4, 10, 5), PW_ESTAMP); /* 9999 */
    assert_int_equal(send_custom(h, 1, now, 1, 4, 10, 11), PW_ECOUNTERS);
    assert_int_equal(send_custom(h, 1, now, 101, 4, 10, 5), PW_ELIMIT);
    assert_int_equal(send_custom(h, 1, now, 1, 64, 10, 5), PW_ELIMIT);
    assert_int_equal(send_custom(h, 1, now, 1, 48, 10, 5), 0); /* within every limit */
    assert_int_equal(send_custom(h, 2, now + 10000, 100, 4, 10, 5), 0);
    assert_string_equal(pw_err_name(PW_ESTAMP), "ESTAMP");
    assert_string_equal(pw_err_name(PW_ELIMIT), "ELIMIT");
    assert_string_equal(pw_err_name(PW_ECOUNTERS), "ECOUNTERS");
    assert_int_equal(g_fed, 2);
    assert_int_equal(stored_samples(), 2);
    pw_ingest_detach(g_d.ing, h, &g_d.session);
    pw_double_close(&g_d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resends_stored_once),
        cmocka_unit_test(test_limit_source_kept_across_restart),
        cmocka_unit_test(test_hostile_samples_refused),
        cmocka_unit_test(test_samples_across_retention_and_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
