/* test_tls.c: mutual TLS over libuv on loopback, one loop, certificates made at test time by
 * deploy/pki.sh (two unrelated CAs), plus the net.h helpers. */
#include "test_util.h"

#include <unistd.h>

#include <uv.h>

#include "alloc.h"
#include "net.h"
#include "tls.h"

#include <openssl/crypto.h>

#define PAYLOAD_LEN (1024 * 1024)
#define MAX_MATCH   8

static char g_dir[256]; /* mkdtemp'd: a/ = our CA, b/ = an unrelated CA */

static const char *path_in(const char *sub, const char *file)
{
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, sizeof(bufs[0]), "%s/%s/%s", g_dir, sub, file);
    return p;
}

static void sh(const char *cmd)
{
    int r = system(cmd);
    if (r != 0)
        fail_msg("command failed (%d): %s", r, cmd);
}

/* Both PKIs, plus two odd client certificates from CA a made here with the openssl CLI:
 * cnonly (CN=cnonly.example, no SAN) and mixed (CN=cn.example, SAN DNS:san.example). */
static int group_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/pw_test_tls.XXXXXX");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    char cmd[4096];
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd),
                 "bash '%s/deploy/pki.sh' '%s/%s' --collector-name coll.example "
                 "--agent a1.example >/dev/null",
                 PW_SOURCE_DIR, g_dir, i == 0 ? "a" : "b");
        sh(cmd);
    }
    /* c/: a third CA with a revocation: old-r1.pem is r1's first certificate, revoked (pki.sh
     * --revoke renames it; it is copied first), agent-r1.example.pem its replacement. */
    snprintf(cmd, sizeof(cmd),
             "bash '%s/deploy/pki.sh' '%s/c' --collector-name coll.example --agent r1.example "
             "--agent k1.example >/dev/null && cd '%s/c' && cp agent-r1.example.pem old-r1.pem && "
             "cp agent-r1.example.key old-r1.key && cp crl.pem crl-empty.pem && "
             "bash '%s/deploy/pki.sh' . --collector-name coll.example --revoke agent-r1.example "
             "--agent r1.example >/dev/null",
             PW_SOURCE_DIR, g_dir, g_dir, PW_SOURCE_DIR);
    sh(cmd);
    const char *names[2][3] = {{"cnonly", "/CN=cnonly.example", "basicConstraints=CA:FALSE"},
                               {"mixed", "/CN=cn.example", "subjectAltName=DNS:san.example"}};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof(cmd),
                 "cd '%s/a' && printf '%%s\\n' '%s' > %s.ext && "
                 "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s.key && "
                 "openssl req -new -key %s.key -subj '%s' -out %s.csr && "
                 "openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -set_serial %d -days 2 "
                 "-extfile %s.ext -out %s.pem 2>/dev/null",
                 g_dir, names[i][2], names[i][0], names[i][0], names[i][0], names[i][1],
                 names[i][0], names[i][0], 4242 + i, names[i][0], names[i][0]);
        sh(cmd);
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- a one-connection loopback harness ------------------------------------------------- */

typedef struct side_s {
    pw_tls_conn_t *conn;
    int established;
    int closed;
    int status;
    char msg[256];
    uint8_t *rx;
    size_t rx_len, rx_cap;
    char version[16];
    char cn[64];
    size_t n_dns;
    char dns0[64];
    int match[MAX_MATCH];      /* pw_tls_peer_matches for run.match_names, at on_established */
    char canon[MAX_MATCH][64]; /* pw_tls_peer_match_name's spelling of the same */
} side_t;

typedef struct run_s {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_timer_t guard;
    int timed_out;
    pw_tls_ctx_t *sctx, *cctx;
    side_t server, client;
    const char *greeting;   /* server writes it on establishment (may be NULL) */
    const uint8_t *payload; /* client writes it in pieces on establishment (may be NULL) */
    size_t payload_len;
    const char *match_names[MAX_MATCH]; /* NULL-terminated */
    int early_write;                    /* pw_tls_write right after pw_tls_connect */
    const char *srv_crl, *cli_crl;      /* crl_file of each side's context (NULL = none) */
} run_t;

static void rx_append(side_t *s, const uint8_t *d, size_t n)
{
    if (s->rx_len + n > s->rx_cap) {
        s->rx_cap = (s->rx_len + n) * 2;
        s->rx = realloc(s->rx, s->rx_cap);
        assert_non_null(s->rx);
    }
    memcpy(s->rx + s->rx_len, d, n);
    s->rx_len += n;
}

static void record_established(run_t *run, side_t *s, pw_tls_conn_t *conn)
{
    assert_true(pw_tls_is_established(conn));
    assert_ptr_equal(pw_tls_data(conn), run);
    s->established = 1;
    snprintf(s->version, sizeof(s->version), "%s", pw_tls_version(conn));
    snprintf(s->cn, sizeof(s->cn), "%s", pw_tls_peer_cn(conn));
    s->n_dns = pw_tls_peer_dns_count(conn);
    snprintf(s->dns0, sizeof(s->dns0), "%s", s->n_dns ? pw_tls_peer_dns(conn, 0) : "");
    assert_null(pw_tls_peer_dns(conn, s->n_dns));
    for (int i = 0; i < MAX_MATCH && run->match_names[i]; i++) {
        s->match[i] = pw_tls_peer_matches(conn, run->match_names[i]);
        int m = pw_tls_peer_match_name(conn, run->match_names[i], s->canon[i], sizeof(s->canon[i]));
        assert_int_equal(m, s->match[i]);
    }
}

static void maybe_done(run_t *run)
{
    if (run->server.closed && run->client.closed)
        uv_timer_stop(&run->guard);
}

static void record_close(run_t *run, side_t *s, int status, const char *msg)
{
    assert_int_equal(s->closed, 0); /* exactly once */
    s->closed = 1;
    s->status = status;
    snprintf(s->msg, sizeof(s->msg), "%s", msg);
    maybe_done(run);
}

static void srv_established(pw_tls_conn_t *conn)
{
    run_t *run = pw_tls_data(conn);
    record_established(run, &run->server, conn);
    if (run->greeting)
        assert_int_equal(pw_tls_write(conn, run->greeting, strlen(run->greeting)), 0);
}

static void srv_data(pw_tls_conn_t *conn, const uint8_t *d, size_t n)
{
    run_t *run = pw_tls_data(conn);
    assert_true(n >= 1 && n <= 16384);
    rx_append(&run->server, d, n);
    assert_int_equal(pw_tls_write(conn, d, n), 0); /* echo */
}

static void srv_close(pw_tls_conn_t *conn, int status, const char *msg)
{
    run_t *run = pw_tls_data(conn);
    record_close(run, &run->server, status, msg);
}

static const pw_tls_cbs_t srv_cbs = {srv_established, srv_data, srv_close};

static void cli_established(pw_tls_conn_t *conn)
{
    run_t *run = pw_tls_data(conn);
    record_established(run, &run->client, conn);
    if (run->payload == NULL)
        return;
    /* Pieces of awkward sizes: 1 byte, a partial record, exactly a record, more than one. */
    static const size_t sizes[] = {1, 100, 16384, 16385, 65536};
    size_t off = 0, i = 0;
    while (off < run->payload_len) {
        size_t n = i < 5 ? sizes[i] : 60000;
        if (n > run->payload_len - off)
            n = run->payload_len - off;
        assert_int_equal(pw_tls_write(conn, run->payload + off, n), 0);
        off += n;
        i++;
    }
    assert_int_equal(pw_tls_write(conn, run->payload, 0), 0);
}

static void cli_data(pw_tls_conn_t *conn, const uint8_t *d, size_t n)
{
    run_t *run = pw_tls_data(conn);
    rx_append(&run->client, d, n);
    size_t want = (run->greeting ? strlen(run->greeting) : 0) + run->payload_len;
    if (run->client.rx_len == want) {
        pw_tls_close(conn);
        pw_tls_close(conn); /* idempotent */
        assert_true(pw_tls_is_closing(conn));
        assert_false(pw_tls_is_established(conn));
        assert_int_equal(pw_tls_write(conn, "x", 1), PW_ECLOSED);
    }
}

static void cli_close(pw_tls_conn_t *conn, int status, const char *msg)
{
    run_t *run = pw_tls_data(conn);
    record_close(run, &run->client, status, msg);
}

static const pw_tls_cbs_t cli_cbs = {cli_established, cli_data, cli_close};

static void on_connection(uv_stream_t *server, int status)
{
    run_t *run = server->data;
    assert_int_equal(status, 0);
    pw_diag_t d;
    assert_int_equal(pw_tls_accept(&run->server.conn, server, run->sctx, &srv_cbs, run, &d), 0);
    uv_close((uv_handle_t *)server, NULL); /* one connection per run */
}

static void on_guard(uv_timer_t *t)
{
    run_t *run = t->data;
    run->timed_out = 1;
    if (!run->server.closed && run->server.conn)
        pw_tls_close(run->server.conn);
    if (!run->client.closed && run->client.conn)
        pw_tls_close(run->client.conn);
    if (!uv_is_closing((uv_handle_t *)&run->listener))
        uv_close((uv_handle_t *)&run->listener, NULL);
}

static pw_tls_ctx_t *make_ctx_crl(pw_tls_role_t role, const char *ca, const char *cert,
                                  const char *key, const char *crl)
{
    pw_tls_ctx_opts_t o = {
        .role = role, .ca_file = ca, .cert_file = cert, .key_file = key, .crl_file = crl};
    pw_tls_ctx_t *ctx = NULL;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_tls_ctx_new(&ctx, &o, &d);
    if (r != 0)
        fail_msg("pw_tls_ctx_new: %s: %s", pw_err_name(r), d.msg);
    return ctx;
}

static pw_tls_ctx_t *make_ctx(pw_tls_role_t role, const char *ca, const char *cert, const char *key)
{
    return make_ctx_crl(role, ca, cert, key, NULL);
}

/* Server: collector cert from PKI `srv_pki` trusting CA `srv_ca`; client: cert `cli_base`
 * (NULL = none) from PKI `cli_pki`, trusting CA `cli_ca`, expecting `host`. Runs to the end. */
static void run_pair(run_t *run, const char *srv_pki, const char *srv_ca, const char *cli_pki,
                     const char *cli_base, const char *cli_ca, const char *host)
{
    char cert[64], key[64];
    run->sctx =
        make_ctx_crl(PW_TLS_SERVER, path_in(srv_ca, "ca.pem"), path_in(srv_pki, "collector.pem"),
                     path_in(srv_pki, "collector.key"), run->srv_crl);
    if (cli_base) {
        snprintf(cert, sizeof(cert), "%s.pem", cli_base);
        snprintf(key, sizeof(key), "%s.key", cli_base);
        run->cctx = make_ctx_crl(PW_TLS_CLIENT, path_in(cli_ca, "ca.pem"), path_in(cli_pki, cert),
                                 path_in(cli_pki, key), run->cli_crl);
    } else {
        run->cctx =
            make_ctx_crl(PW_TLS_CLIENT, path_in(cli_ca, "ca.pem"), NULL, NULL, run->cli_crl);
    }

    assert_int_equal(uv_loop_init(&run->loop), 0);
    assert_int_equal(uv_timer_init(&run->loop, &run->guard), 0);
    run->guard.data = run;
    assert_int_equal(uv_timer_start(&run->guard, on_guard, 20000, 0), 0);
    uv_unref((uv_handle_t *)&run->guard);

    struct sockaddr_storage ss;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 0, &ss), 0);
    assert_int_equal(uv_tcp_init(&run->loop, &run->listener), 0);
    run->listener.data = run;
    assert_int_equal(uv_tcp_bind(&run->listener, (struct sockaddr *)&ss, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&run->listener, 8, on_connection), 0);
    int port = pw_net_bound_port(&run->listener);
    assert_true(port > 0);

    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", (uint16_t)port, &ss), 0);
    pw_diag_t d;
    int r = pw_tls_connect(&run->client.conn, &run->loop, run->cctx, (struct sockaddr *)&ss, host,
                           &cli_cbs, run, &d);
    assert_int_equal(r, 0);
    if (run->early_write) {
        assert_false(pw_tls_is_established(run->client.conn));
        assert_int_equal(pw_tls_write(run->client.conn, "x", 1), PW_EAGAIN);
    }
    /* A context may go before its connections: this drops only our reference. (The server
     * context is still needed by on_connection.) */
    pw_tls_ctx_free(run->cctx);

    uv_run(&run->loop, UV_RUN_DEFAULT);
    pw_tls_ctx_free(run->sctx);
    assert_false(run->timed_out);
    assert_true(run->client.closed);
    assert_true(run->server.conn == NULL || run->server.closed);
    uv_close((uv_handle_t *)&run->guard, NULL);
    uv_run(&run->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&run->loop), 0);
}

static void run_free(run_t *run)
{
    free(run->server.rx);
    free(run->client.rx);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_tls_library_names_version_and_place(void **state)
{
    (void)state;
    /* This test links the shared libcrypto (only poolwatch-agent links it in). */
    const char *t = pw_tls_library();
    assert_true(strncmp(t, "OpenSSL ", 8) == 0);
    assert_non_null(strstr(t, OpenSSL_version(OPENSSL_VERSION)));
    const char *where = strstr(t, ", shared /");
    if (where == NULL || strstr(where, "libcrypto") == NULL)
        fail_msg("pw_tls_library: '%s'", t);
    assert_ptr_equal(pw_tls_library(), t); /* computed once */
}

static void test_tls_handshake_and_echo_1mib(void **state)
{
    (void)state;
    static run_t run; /* 1 MiB buffers hang off it; keep it off the stack */
    memset(&run, 0, sizeof(run));
    uint8_t *payload = malloc(PAYLOAD_LEN);
    assert_non_null(payload);
    for (size_t i = 0; i < PAYLOAD_LEN; i++)
        payload[i] = (uint8_t)(i * 7 + (i >> 8));
    run.payload = payload;
    run.payload_len = PAYLOAD_LEN;
    run.greeting = "hello from the collector";
    run.early_write = 1;
    run.match_names[0] = "a1.example";
    run.match_names[1] = "A1.Example"; /* DNS names compare case-insensitively */
    run.match_names[2] = "a2.example";
    run.match_names[3] = "a1.example.evil";
    run.match_names[4] = "example";
    run.match_names[5] = "";

    run_pair(&run, "a", "a", "a", "agent-a1.example", "a", "coll.example");

    /* Both sides verified, TLS 1.3 negotiated (both ends are OpenSSL 3). */
    assert_true(run.server.established);
    assert_true(run.client.established);
    assert_string_equal(run.server.version, "TLSv1.3");
    assert_string_equal(run.client.version, "TLSv1.3");
    /* The server sees the agent's names as pki.sh made them: CN = SAN DNS = a1.example. */
    assert_string_equal(run.server.cn, "a1.example");
    assert_int_equal(run.server.n_dns, 1);
    assert_string_equal(run.server.dns0, "a1.example");
    assert_int_equal(run.server.match[0], 1);
    assert_int_equal(run.server.match[1], 1);
    assert_int_equal(run.server.match[2], 0);
    assert_int_equal(run.server.match[3], 0);
    assert_int_equal(run.server.match[4], 0);
    assert_int_equal(run.server.match[5], 0);
    /* One certificate is one host: "A1.Example" is kept as the certificate spells it. */
    assert_string_equal(run.server.canon[0], "a1.example");
    assert_string_equal(run.server.canon[1], "a1.example");
    assert_string_equal(run.server.canon[2], "");
    /* The client sees the collector's: CN coll.example; SANs localhost, 127.0.0.1 (IP, not
     * listed), coll.example. */
    assert_string_equal(run.client.cn, "coll.example");
    assert_int_equal(run.client.n_dns, 2);
    assert_string_equal(run.client.dns0, "localhost");

    /* Server received the payload exactly; client received greeting + echo exactly. */
    assert_int_equal(run.server.rx_len, PAYLOAD_LEN);
    assert_memory_equal(run.server.rx, payload, PAYLOAD_LEN);
    size_t glen = strlen(run.greeting);
    assert_int_equal(run.client.rx_len, glen + PAYLOAD_LEN);
    assert_memory_equal(run.client.rx, run.greeting, glen);
    assert_memory_equal(run.client.rx + glen, payload, PAYLOAD_LEN);

    /* The client closed with close_notify: orderly on both sides. */
    assert_int_equal(run.client.status, 0);
    assert_string_equal(run.client.msg, "");
    assert_int_equal(run.server.status, 0);
    free(payload);
    run_free(&run);
}

static void test_tls_client_accepts_ip_san_and_localhost(void **state)
{
    (void)state;
    const char *hosts[] = {"127.0.0.1", "localhost", "COLL.example"};
    for (int i = 0; i < 3; i++) {
        run_t run;
        memset(&run, 0, sizeof(run));
        run.greeting = "hi";
        run_pair(&run, "a", "a", "a", "cli", "a", hosts[i]);
        assert_true(run.client.established);
        assert_int_equal(run.client.rx_len, 2);
        assert_int_equal(run.client.status, 0);
        assert_int_equal(run.server.status, 0);
        assert_string_equal(run.server.cn, "poolwatch-cli");
        run_free(&run);
    }
}

static void test_tls_client_rejects_server_from_other_ca(void **state)
{
    (void)state;
    run_t run;
    memset(&run, 0, sizeof(run));
    /* Server uses PKI b's collector cert (trusting b); client trusts only CA a. */
    run_pair(&run, "b", "a", "a", "agent-a1.example", "a", "coll.example");
    assert_false(run.client.established);
    assert_false(run.server.established);
    assert_int_equal(run.client.status, PW_EAUTH);
    /* X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY's text (OpenSSL x509_txt.c). */
    assert_non_null(strstr(run.client.msg, "unable to get local issuer certificate"));
    /* The client's alert reaches the server, which reports a refusal of its certificate. */
    assert_int_equal(run.server.status, PW_EAUTH);
    assert_non_null(strstr(run.server.msg, "peer refused our certificate"));
    run_free(&run);
}

static void test_tls_client_rejects_name_mismatch(void **state)
{
    (void)state;
    const char *hosts[] = {"wrong.example", "127.0.0.2", "coll.example.evil"};
    for (int i = 0; i < 3; i++) {
        run_t run;
        memset(&run, 0, sizeof(run));
        run_pair(&run, "a", "a", "a", "agent-a1.example", "a", hosts[i]);
        assert_false(run.client.established);
        assert_int_equal(run.client.status, PW_EAUTH);
        /* X509_V_ERR_HOSTNAME_MISMATCH / X509_V_ERR_IP_ADDRESS_MISMATCH texts. */
        assert_non_null(
            strstr(run.client.msg, i == 1 ? "IP address mismatch" : "hostname mismatch"));
        assert_int_equal(run.server.status, PW_EAUTH);
        run_free(&run);
    }
}

static void test_tls_server_rejects_client_without_cert(void **state)
{
    (void)state;
    run_t run;
    memset(&run, 0, sizeof(run));
    run_pair(&run, "a", "a", "a", NULL, "a", "coll.example");
    assert_false(run.server.established);
    assert_int_equal(run.server.status, PW_EAUTH);
    assert_non_null(strstr(run.server.msg, "peer presented no certificate"));
    /* TLS 1.3: the client may finish first, then learns of the refusal from the alert. */
    assert_int_equal(run.client.status, PW_EAUTH);
    assert_non_null(strstr(run.client.msg, "peer refused our certificate"));
    run_free(&run);
}

static void test_tls_server_rejects_client_from_other_ca(void **state)
{
    (void)state;
    run_t run;
    memset(&run, 0, sizeof(run));
    /* Client presents PKI b's agent cert; it trusts CA a, so it accepts the server. */
    run_pair(&run, "a", "a", "b", "agent-a1.example", "a", "coll.example");
    assert_false(run.server.established);
    assert_int_equal(run.server.status, PW_EAUTH);
    assert_non_null(strstr(run.server.msg, "unable to get local issuer certificate"));
    assert_int_equal(run.client.status, PW_EAUTH);
    run_free(&run);
}

/* Issue 15 item 13: with the CA's CRL (deploy/pki.sh --revoke), a revoked agent certificate is
 * refused at the handshake; the same agent's replacement and another agent are let in. */
static void test_tls_server_refuses_revoked_client(void **state)
{
    (void)state;
    char crl[512]; /* path_in's buffers are reused */
    snprintf(crl, sizeof(crl), "%s", path_in("c", "crl.pem"));
    const struct {
        const char *base;
        int ok;
    } cases[] = {{"old-r1", 0}, {"agent-r1.example", 1}, {"agent-k1.example", 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_t run;
        memset(&run, 0, sizeof(run));
        run.greeting = "hi"; /* the client closes once it has it */
        run.srv_crl = crl;
        run_pair(&run, "c", "c", "c", cases[i].base, "c", "coll.example");
        assert_int_equal(run.server.established, cases[i].ok);
        if (cases[i].ok) {
            assert_int_equal(run.server.status, 0);
            assert_string_equal(run.server.cn, cases[i].base + 6);
        } else {
            assert_int_equal(run.server.status, PW_EAUTH);
            assert_non_null(strstr(run.server.msg, "certificate revoked"));
            assert_int_equal(run.client.status, PW_EAUTH);
        }
        run_free(&run);
    }
    /* Without the CRL the revoked certificate is still let in: the check is the CRL's. */
    run_t run;
    memset(&run, 0, sizeof(run));
    run.greeting = "hi";
    run_pair(&run, "c", "c", "c", "old-r1", "c", "coll.example");
    assert_true(run.server.established);
    run_free(&run);
    /* The CRL from before the revocation lets it in too; one of another CA refuses everybody
     * (no CRL of this issuer: OpenSSL's "unable to get certificate CRL"). */
    memset(&run, 0, sizeof(run));
    run.greeting = "hi";
    run.srv_crl = path_in("c", "crl-empty.pem");
    run_pair(&run, "c", "c", "c", "old-r1", "c", "coll.example");
    assert_true(run.server.established);
    run_free(&run);
    memset(&run, 0, sizeof(run));
    run.greeting = "hi";
    run.srv_crl = path_in("a", "crl.pem");
    run_pair(&run, "c", "c", "c", "agent-k1.example", "c", "coll.example");
    assert_false(run.server.established);
    assert_int_equal(run.server.status, PW_EAUTH);
    assert_non_null(strstr(run.server.msg, "unable to get certificate CRL"));
    run_free(&run);
}

/* A client with the CRL refuses a revoked collector certificate. */
static void test_tls_client_refuses_revoked_server(void **state)
{
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "rm -rf '%s/d' && bash '%s/deploy/pki.sh' '%s/d' --collector-name coll.example "
             "--agent a1.example >/dev/null && cd '%s/d' && mkdir -p old && "
             "cp collector.pem collector.key old/ && bash '%s/deploy/pki.sh' . --collector-name "
             "coll.example --revoke collector >/dev/null && cp ca.pem crl.pem old/ && "
             "cp agent-a1.example.pem agent-a1.example.key old/",
             g_dir, PW_SOURCE_DIR, g_dir, g_dir, PW_SOURCE_DIR);
    sh(cmd);
    run_t run;
    memset(&run, 0, sizeof(run));
    run.cli_crl = path_in("d/old", "crl.pem");
    run_pair(&run, "d/old", "d/old", "d/old", "agent-a1.example", "d/old", "coll.example");
    assert_false(run.client.established);
    assert_int_equal(run.client.status, PW_EAUTH);
    assert_non_null(strstr(run.client.msg, "certificate revoked"));
    run_free(&run);
}

/* The number after "key=" in a command's output ("notAfter=Dec  1 17:02:15 2028 GMT" through
 * date(1) as Unix seconds): the expiry as the openssl CLI reads it, not as tls.c does. */
static int64_t cli_not_after(const char *pem)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "date -u -d \"$(openssl x509 -in '%s' -noout -enddate | sed 's/^notAfter=//')\" +%%s",
             pem);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    long long v = -1;
    assert_int_equal(fscanf(p, "%lld", &v), 1);
    pclose(p);
    return v;
}

static void test_tls_ctx_not_after_and_expiry_check(void **state)
{
    (void)state;
    pw_tls_ctx_t *ctx = make_ctx(PW_TLS_SERVER, path_in("a", "ca.pem"),
                                 path_in("a", "collector.pem"), path_in("a", "collector.key"));
    int64_t cert_s = 0, ca_s = 0;
    assert_int_equal(pw_tls_ctx_not_after(ctx, &cert_s, &ca_s), 0);
    assert_int_equal(cert_s, cli_not_after(path_in("a", "collector.pem")));
    assert_int_equal(ca_s, cli_not_after(path_in("a", "ca.pem")));
    assert_true(cert_s > 0 && ca_s > 0);
    char msg[160];
    /* pki.sh made the CA and then the certificate for the same days: they expire within
     * seconds of each other, and the certificate's own is named first. 15 days before:
     * nothing; 14 days less 1 s before: "in 13 days"; 2.5 days after: expired. */
    assert_true(cert_s - ca_s >= 0 && cert_s - ca_s < 600);
    assert_int_equal(
        pw_tls_ctx_expiry_check(ctx, cert_s - 15 * 86400, PW_TLS_EXPIRY_WARN_S, msg, sizeof(msg)),
        0);
    assert_string_equal(msg, "");
    assert_int_equal(pw_tls_ctx_expiry_check(ctx, cert_s - 14 * 86400 + 1, PW_TLS_EXPIRY_WARN_S,
                                             msg, sizeof(msg)),
                     1);
    assert_non_null(strstr(msg, "the certificate expires on "));
    assert_non_null(strstr(msg, " UTC, in 13 days"));
    assert_int_equal(pw_tls_ctx_expiry_check(ctx, cert_s + 2 * 86400 + 43200, PW_TLS_EXPIRY_WARN_S,
                                             msg, sizeof(msg)),
                     1);
    assert_non_null(strstr(msg, "the certificate expired on "));
    assert_non_null(strstr(msg, ", 2 days ago"));
    /* The date is the certificate's own, as openssl prints it in ISO form. */
    char iso[64], cmd[600];
    snprintf(cmd, sizeof(cmd), "date -u -d @%lld '+%%Y-%%m-%%d %%H:%%M:%%S UTC'",
             (long long)cert_s);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(iso, sizeof(iso), p));
    pclose(p);
    iso[strcspn(iso, "\n")] = '\0';
    assert_int_equal(
        pw_tls_ctx_expiry_check(ctx, cert_s - 86400, PW_TLS_EXPIRY_WARN_S, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, iso));
    pw_tls_ctx_free(ctx);
    /* a client without a certificate: only the CA */
    ctx = make_ctx(PW_TLS_CLIENT, path_in("a", "ca.pem"), NULL, NULL);
    assert_int_equal(pw_tls_ctx_not_after(ctx, &cert_s, &ca_s), 0);
    assert_int_equal(cert_s, 0);
    assert_int_equal(ca_s, cli_not_after(path_in("a", "ca.pem")));
    assert_int_equal(
        pw_tls_ctx_expiry_check(ctx, ca_s - 86400, PW_TLS_EXPIRY_WARN_S, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "the CA certificate expires on "));
    pw_tls_ctx_free(ctx);
    assert_int_equal(pw_tls_ctx_not_after(NULL, &cert_s, &ca_s), PW_EINVAL);
}

/* The digest changes with any byte of any of the four files, and only then. */
static void test_tls_files_digest(void **state)
{
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/e' && cp '%s/a/ca.pem' '%s/a/collector.pem' "
             "'%s/a/collector.key' '%s/a/crl.pem' '%s/e/'",
             g_dir, g_dir, g_dir, g_dir, g_dir, g_dir);
    sh(cmd);
    pw_tls_ctx_opts_t o = {.role = PW_TLS_SERVER,
                           .ca_file = path_in("e", "ca.pem"),
                           .cert_file = path_in("e", "collector.pem"),
                           .key_file = path_in("e", "collector.key"),
                           .crl_file = path_in("e", "crl.pem")};
    uint8_t d1[32], d2[32];
    assert_int_equal(pw_tls_files_digest(&o, d1), 0);
    assert_int_equal(pw_tls_files_digest(&o, d2), 0);
    assert_memory_equal(d1, d2, 32);
    /* the same bytes in place (a copy over itself) change nothing */
    snprintf(cmd, sizeof(cmd), "cd '%s/e' && cp collector.pem x && mv x collector.pem", g_dir);
    sh(cmd);
    assert_int_equal(pw_tls_files_digest(&o, d2), 0);
    assert_memory_equal(d1, d2, 32);
    /* another certificate of the same size class: a different digest */
    snprintf(cmd, sizeof(cmd), "cp '%s/b/collector.pem' '%s/e/collector.pem'", g_dir, g_dir);
    sh(cmd);
    assert_int_equal(pw_tls_files_digest(&o, d2), 0);
    assert_memory_not_equal(d1, d2, 32);
    memcpy(d1, d2, 32);
    /* the CRL alone */
    snprintf(cmd, sizeof(cmd), "cp '%s/c/crl.pem' '%s/e/crl.pem'", g_dir, g_dir);
    sh(cmd);
    assert_int_equal(pw_tls_files_digest(&o, d2), 0);
    assert_memory_not_equal(d1, d2, 32);
    assert_int_equal(pw_tls_files_digest(NULL, d2), PW_EINVAL);
}

static void test_tls_peer_matches_san_not_cn(void **state)
{
    (void)state;
    run_t run;
    memset(&run, 0, sizeof(run));
    run.greeting = "hi"; /* the client closes once it has it */
    run.match_names[0] = "san.example";
    run.match_names[1] = "cn.example";
    run_pair(&run, "a", "a", "a", "mixed", "a", "coll.example");
    assert_true(run.server.established);
    assert_string_equal(run.server.cn, "cn.example");
    assert_int_equal(run.server.n_dns, 1);
    assert_string_equal(run.server.dns0, "san.example");
    assert_int_equal(run.server.match[0], 1);
    assert_int_equal(run.server.match[1], 0); /* a CN is ignored when a DNS SAN exists */
    run_free(&run);
}

static void test_tls_peer_matches_cn_without_san(void **state)
{
    (void)state;
    run_t run;
    memset(&run, 0, sizeof(run));
    run.greeting = "hi";
    run.match_names[0] = "cnonly.example";
    run.match_names[1] = "other.example";
    run_pair(&run, "a", "a", "a", "cnonly", "a", "coll.example");
    assert_true(run.server.established);
    assert_string_equal(run.server.cn, "cnonly.example");
    assert_int_equal(run.server.n_dns, 0);
    assert_int_equal(run.server.match[0], 1);
    assert_int_equal(run.server.match[1], 0);
    run_free(&run);
}

static void on_refused_close(pw_tls_conn_t *conn, int status, const char *msg)
{
    int *out = pw_tls_data(conn);
    out[0] = status;
    out[1]++;
    if (status != 0)
        assert_non_null(strstr(msg, "connect"));
}

static void on_unused_data(pw_tls_conn_t *conn, const uint8_t *d, size_t n)
{
    (void)conn, (void)d, (void)n;
    fail_msg("no data expected");
}

static void test_tls_connect_refused_reports_once(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    /* A port that was just free: bind, learn it, close. */
    uv_tcp_t t;
    struct sockaddr_storage ss;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 0, &ss), 0);
    assert_int_equal(uv_tcp_init(&loop, &t), 0);
    assert_int_equal(uv_tcp_bind(&t, (struct sockaddr *)&ss, 0), 0);
    int port = pw_net_bound_port(&t);
    assert_true(port > 0);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);

    pw_tls_ctx_t *ctx = make_ctx(PW_TLS_CLIENT, path_in("a", "ca.pem"), path_in("a", "cli.pem"),
                                 path_in("a", "cli.key"));
    pw_tls_cbs_t cbs = {NULL, on_unused_data, on_refused_close};
    int result[2] = {0, 0};
    pw_tls_conn_t *conn = NULL;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", (uint16_t)port, &ss), 0);
    assert_int_equal(
        pw_tls_connect(&conn, &loop, ctx, (struct sockaddr *)&ss, "localhost", &cbs, result, NULL),
        0);
    pw_tls_ctx_free(ctx);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(result[0], UV_ECONNREFUSED);
    assert_int_equal(result[1], 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_tls_close_before_connect_completes(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    pw_tls_ctx_t *ctx = make_ctx(PW_TLS_CLIENT, path_in("a", "ca.pem"), path_in("a", "cli.pem"),
                                 path_in("a", "cli.key"));
    struct sockaddr_storage ss;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 9, &ss), 0);
    pw_tls_cbs_t cbs = {NULL, on_unused_data, on_refused_close};
    int result[2] = {1, 0};
    pw_tls_conn_t *conn = NULL;
    assert_int_equal(
        pw_tls_connect(&conn, &loop, ctx, (struct sockaddr *)&ss, "localhost", &cbs, result, NULL),
        0);
    pw_tls_close(conn); /* close-now: on_close comes from the loop, with status 0 */
    assert_int_equal(result[1], 0);
    pw_tls_ctx_free(ctx);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(result[0], 0);
    assert_int_equal(result[1], 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_tls_ctx_errors(void **state)
{
    (void)state;
    pw_tls_ctx_t *ctx = (pw_tls_ctx_t *)0x1;
    pw_diag_t d;
    pw_tls_ctx_opts_t o = {.role = PW_TLS_SERVER, .ca_file = path_in("a", "ca.pem")};
    assert_int_equal(pw_tls_ctx_new(&ctx, &o, &d), PW_EINVAL); /* a server needs a cert */
    assert_string_equal(d.field, "cert_file");

    o.cert_file = path_in("a", "collector.pem");
    o.key_file = path_in("a", "agent-a1.example.key");
    assert_int_equal(pw_tls_ctx_new(&ctx, &o, &d), PW_ETLS);
    assert_string_equal(d.field, "key_file");
    /* OpenSSL checks the pair while loading the key: X509_R_KEY_VALUES_MISMATCH's text. */
    assert_non_null(strstr(d.msg, "key values mismatch"));
    assert_non_null(strstr(d.msg, "agent-a1.example.key"));

    o.ca_file = path_in("a", "no-such-ca.pem");
    o.key_file = path_in("a", "collector.key");
    assert_int_equal(pw_tls_ctx_new(&ctx, &o, &d), PW_ETLS);
    assert_string_equal(d.field, "ca_file");
    assert_non_null(strstr(d.msg, "no-such-ca.pem"));
    /* The OS reason (ENOENT), not OpenSSL 3's "system library: unknown reason". */
    char want[600];
    snprintf(want, sizeof(want), "CA file '%s': No such file or directory", o.ca_file);
    assert_memory_equal(d.msg, want, strlen(want));

    o.ca_file = path_in("a", "ca.pem");
    o.role = (pw_tls_role_t)7;
    assert_int_equal(pw_tls_ctx_new(&ctx, &o, &d), PW_EINVAL);
    o.role = PW_TLS_CLIENT;
    o.key_file = NULL;
    assert_int_equal(pw_tls_ctx_new(&ctx, &o, &d), PW_EINVAL); /* cert without key */
    assert_ptr_equal(ctx, (pw_tls_ctx_t *)0x1);                /* untouched on failure */

    /* A server context cannot connect; a client context needs a host name. */
    o.key_file = path_in("a", "collector.key");
    o.role = PW_TLS_SERVER;
    pw_tls_ctx_t *sctx = NULL;
    assert_int_equal(pw_tls_ctx_new(&sctx, &o, &d), 0);
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    struct sockaddr_storage ss;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 9, &ss), 0);
    pw_tls_conn_t *conn = NULL;
    assert_int_equal(
        pw_tls_connect(&conn, &loop, sctx, (struct sockaddr *)&ss, "localhost", &cli_cbs, NULL, &d),
        PW_EINVAL);
    pw_tls_ctx_t *cctx = make_ctx(PW_TLS_CLIENT, path_in("a", "ca.pem"), NULL, NULL);
    assert_int_equal(
        pw_tls_connect(&conn, &loop, cctx, (struct sockaddr *)&ss, "", &cli_cbs, NULL, &d),
        PW_EINVAL);
    assert_null(conn);
    pw_tls_ctx_free(sctx);
    pw_tls_ctx_free(cctx);
    pw_tls_ctx_free(NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- a raw (non-TLS) client against the TLS server -------------------------------------- */

typedef struct raw_s {
    uv_loop_t loop;
    uv_tcp_t listener, client;
    uv_connect_t creq;
    uv_write_t wreq;
    pw_tls_ctx_t *sctx;
    const char *send; /* bytes the raw client writes, then it closes */
    side_t server;
    int accepted;
} raw_t;

static void raw_srv_close(pw_tls_conn_t *conn, int status, const char *msg)
{
    raw_t *raw = pw_tls_data(conn);
    assert_int_equal(raw->server.closed, 0);
    raw->server.closed = 1;
    raw->server.status = status;
    snprintf(raw->server.msg, sizeof(raw->server.msg), "%s", msg);
}

static void raw_on_connection(uv_stream_t *server, int status)
{
    raw_t *raw = server->data;
    assert_int_equal(status, 0);
    pw_tls_cbs_t cbs = {NULL, on_unused_data, raw_srv_close};
    assert_int_equal(pw_tls_accept(&raw->server.conn, server, raw->sctx, &cbs, raw, NULL), 0);
    raw->accepted = 1;
    uv_close((uv_handle_t *)server, NULL);
}

static void raw_on_write(uv_write_t *req, int status)
{
    (void)status;
    /* A half close (FIN): the server reads our bytes, then end of file. */
    uv_close((uv_handle_t *)req->handle, NULL);
}

static void raw_on_connect(uv_connect_t *req, int status)
{
    raw_t *raw = req->data;
    assert_int_equal(status, 0);
    if (raw->send == NULL) {
        uv_close((uv_handle_t *)&raw->client, NULL);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)(uintptr_t)raw->send, (unsigned int)strlen(raw->send));
    assert_int_equal(uv_write(&raw->wreq, (uv_stream_t *)&raw->client, &b, 1, raw_on_write), 0);
}

static void run_raw(raw_t *raw)
{
    raw->sctx = make_ctx(PW_TLS_SERVER, path_in("a", "ca.pem"), path_in("a", "collector.pem"),
                         path_in("a", "collector.key"));
    assert_int_equal(uv_loop_init(&raw->loop), 0);
    struct sockaddr_storage ss;
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 0, &ss), 0);
    assert_int_equal(uv_tcp_init(&raw->loop, &raw->listener), 0);
    raw->listener.data = raw;
    assert_int_equal(uv_tcp_bind(&raw->listener, (struct sockaddr *)&ss, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&raw->listener, 8, raw_on_connection), 0);
    int port = pw_net_bound_port(&raw->listener);
    assert_int_equal(pw_net_addr_from_literal("127.0.0.1", (uint16_t)port, &ss), 0);
    assert_int_equal(uv_tcp_init(&raw->loop, &raw->client), 0);
    raw->creq.data = raw;
    assert_int_equal(
        uv_tcp_connect(&raw->creq, &raw->client, (struct sockaddr *)&ss, raw_on_connect), 0);
    uv_run(&raw->loop, UV_RUN_DEFAULT);
    pw_tls_ctx_free(raw->sctx);
    assert_int_equal(uv_loop_close(&raw->loop), 0);
    assert_true(raw->accepted);
    assert_true(raw->server.closed);
}

static void test_tls_server_rejects_plaintext(void **state)
{
    (void)state;
    raw_t raw;
    memset(&raw, 0, sizeof(raw));
    raw.send = "GET / HTTP/1.0\r\n\r\n";
    run_raw(&raw);
    assert_int_equal(raw.server.status, PW_ETLS);
    assert_non_null(strstr(raw.server.msg, "handshake: "));
}

static void test_tls_server_reports_eof_during_handshake(void **state)
{
    (void)state;
    raw_t raw;
    memset(&raw, 0, sizeof(raw));
    run_raw(&raw); /* connects and closes without a byte */
    assert_int_equal(raw.server.status, PW_ECLOSED);
    assert_string_equal(raw.server.msg, "peer closed the connection during the handshake");
}

/* Every allocation of ours in pw_tls_ctx_new / pw_tls_connect failing in turn: a clean
 * PW_ENOMEM, no callback, no leak (LeakSanitizer), the loop closes. */
static void test_tls_alloc_failures_are_clean(void **state)
{
    (void)state;
    pw_tls_ctx_opts_t o = {.role = PW_TLS_CLIENT,
                           .ca_file = path_in("a", "ca.pem"),
                           .cert_file = path_in("a", "cli.pem"),
                           .key_file = path_in("a", "cli.key")};
    int saw_enomem = 0, saw_ok = 0;
    for (unsigned long n = 1; n <= 4; n++) {
        uv_loop_t loop;
        assert_int_equal(uv_loop_init(&loop), 0);
        pw_tls_ctx_t *ctx = NULL;
        pw_tls_conn_t *conn = NULL;
        int result[2] = {0, 0};
        struct sockaddr_storage ss;
        assert_int_equal(pw_net_addr_from_literal("127.0.0.1", 9, &ss), 0);
        pw_tls_cbs_t cbs = {NULL, on_unused_data, on_refused_close};
        pw_alloc_fail_after(n);
        int r = pw_tls_ctx_new(&ctx, &o, NULL);
        if (r == 0)
            r = pw_tls_connect(&conn, &loop, ctx, (struct sockaddr *)&ss, "localhost", &cbs, result,
                               NULL);
        pw_alloc_fail_after(0);
        if (r == 0) {
            saw_ok = 1;
            pw_tls_close(conn);
        } else {
            assert_int_equal(r, PW_ENOMEM);
            assert_null(conn);
            saw_enomem = 1;
        }
        pw_tls_ctx_free(ctx);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(result[1], r == 0 ? 1 : 0);
        assert_int_equal(uv_loop_close(&loop), 0);
    }
    assert_true(saw_enomem);
    assert_true(saw_ok);
}

/* ---- net.h ------------------------------------------------------------------------------ */

static void test_net_split_host_port(void **state)
{
    (void)state;
    char host[PW_NET_HOST_MAX];
    uint16_t port = 0;
    pw_diag_t d;
    assert_int_equal(pw_net_split_host_port("coll.example:7443", 1, host, sizeof(host), &port, &d),
                     0);
    assert_string_equal(host, "coll.example");
    assert_int_equal(port, 7443);
    assert_int_equal(pw_net_split_host_port("coll", 7443, host, sizeof(host), &port, &d), 0);
    assert_string_equal(host, "coll");
    assert_int_equal(port, 7443);
    assert_int_equal(pw_net_split_host_port("[::1]:65535", 1, host, sizeof(host), &port, &d), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 65535);
    assert_int_equal(pw_net_split_host_port("fe80::1", 99, host, sizeof(host), &port, &d), 0);
    assert_string_equal(host, "fe80::1");
    assert_int_equal(port, 99);

    port = 5;
    strcpy(host, "keep");
    const char *bad[] = {"h:0",  "h:65536", "h:",   "h:12a",        ":80",
                         "[::1", "[::1]x",  "[]:1", "h:99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(pw_net_split_host_port(bad[i], 1, host, sizeof(host), &port, &d),
                         PW_EINVAL);
    assert_int_equal(port, 5);
    assert_string_equal(host, "keep");
    assert_int_equal(pw_net_split_host_port("abcdef:1", 1, host, 6, &port, &d), PW_ETOOBIG);
    assert_int_equal(pw_net_split_host_port("h:1x", 1, host, sizeof(host), &port, &d), PW_EINVAL);
    assert_string_equal(d.field, "port");
    assert_int_equal(d.offset, 3);
}

static void test_net_addr_literal_and_format(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    char out[64];
    assert_int_equal(pw_net_addr_from_literal("10.1.2.3", 7443, &ss), 0);
    assert_int_equal(pw_net_addr_format((struct sockaddr *)&ss, out, sizeof(out)), 13);
    assert_string_equal(out, "10.1.2.3:7443");
    assert_int_equal(pw_net_addr_from_literal("::1", 80, &ss), 0);
    assert_int_equal(pw_net_addr_format((struct sockaddr *)&ss, out, sizeof(out)), 8);
    assert_string_equal(out, "[::1]:80");
    assert_int_equal(pw_net_addr_format((struct sockaddr *)&ss, out, 5), PW_ETOOBIG);
    assert_int_equal(pw_net_addr_from_literal("coll.example", 1, &ss), PW_EINVAL);
    assert_int_equal(pw_net_addr_from_literal("1.2.3.256", 1, &ss), PW_EINVAL);
    assert_true(pw_net_is_ip_literal("127.0.0.1"));
    assert_true(pw_net_is_ip_literal("::ffff:1.2.3.4"));
    assert_false(pw_net_is_ip_literal("localhost"));
    assert_false(pw_net_is_ip_literal(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_library_names_version_and_place),
        cmocka_unit_test(test_tls_handshake_and_echo_1mib),
        cmocka_unit_test(test_tls_client_accepts_ip_san_and_localhost),
        cmocka_unit_test(test_tls_client_rejects_server_from_other_ca),
        cmocka_unit_test(test_tls_client_rejects_name_mismatch),
        cmocka_unit_test(test_tls_server_rejects_client_without_cert),
        cmocka_unit_test(test_tls_server_rejects_client_from_other_ca),
        cmocka_unit_test(test_tls_peer_matches_san_not_cn),
        cmocka_unit_test(test_tls_peer_matches_cn_without_san),
        cmocka_unit_test(test_tls_connect_refused_reports_once),
        cmocka_unit_test(test_tls_close_before_connect_completes),
        cmocka_unit_test(test_tls_ctx_errors),
        cmocka_unit_test(test_tls_server_rejects_plaintext),
        cmocka_unit_test(test_tls_server_reports_eof_during_handshake),
        cmocka_unit_test(test_tls_alloc_failures_are_clean),
        cmocka_unit_test(test_tls_server_refuses_revoked_client),
        cmocka_unit_test(test_tls_client_refuses_revoked_server),
        cmocka_unit_test(test_tls_ctx_not_after_and_expiry_check),
        cmocka_unit_test(test_tls_files_digest),
        cmocka_unit_test(test_net_split_host_port),
        cmocka_unit_test(test_net_addr_literal_and_format),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
