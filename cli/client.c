/* client.c: blocking HTTP(S) client of the CLI (see client.h). */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "alloc.h"
#include "buf.h"
#include "sock.h"

/* ---- response parsing (http-parser) -------------------------------------------------------- */

typedef struct reader_s {
    http_parser parser;
    http_parser_settings settings;
    pw_buf_t body;
    pw_client_resp_t *resp;
    int in_ctype; /* the header being read is Content-Type */
    int done;
    int err;     /* PW_ETOOBIG / PW_ENOMEM from a callback */
    size_t seen; /* bytes fed so far */
} reader_t;

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    reader_t *r = p->data;
    /* A field name split across reads arrives in pieces; Content-Type is short enough that a
     * split one just loses the content type, which only decorates errors. */
    r->in_ctype = (len == 12 && strncasecmp(at, "Content-Type", 12) == 0);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    reader_t *r = p->data;
    if (r->in_ctype) {
        size_t have = strlen(r->resp->content_type);
        size_t room = sizeof(r->resp->content_type) - 1 - have;
        if (len > room)
            len = room;
        memcpy(r->resp->content_type + have, at, len);
        r->resp->content_type[have + len] = '\0';
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    reader_t *r = p->data;
    int rc = pw_buf_append(&r->body, at, len);
    if (rc < 0) {
        r->err = rc;
        return 1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    reader_t *r = p->data;
    r->done = 1;
    /* Stop here: anything after the response is not ours. */
    http_parser_pause(p, 1);
    return 0;
}

static void reader_init(reader_t *r, pw_client_resp_t *resp)
{
    memset(r, 0, sizeof(*r));
    memset(resp, 0, sizeof(*resp));
    http_parser_init(&r->parser, HTTP_RESPONSE);
    r->parser.data = r;
    http_parser_settings_init(&r->settings);
    r->settings.on_header_field = on_header_field;
    r->settings.on_header_value = on_header_value;
    r->settings.on_body = on_body;
    r->settings.on_message_complete = on_message_complete;
    pw_buf_init(&r->body, PW_CLIENT_MAX_BODY);
    r->resp = resp;
}

/* Feeds `len` bytes (0 = end of stream). Returns 0 or a negative code. */
static int reader_feed(reader_t *r, const char *data, size_t len, pw_diag_t *diag)
{
    if (r->done)
        return 0;
    if (len == 0 && r->seen == 0)
        return pw_diag_set(diag, PW_EPROTO, 0, 0, "http",
                           "the server closed the connection without answering");
    r->seen += len;
    size_t used = http_parser_execute(&r->parser, &r->settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&r->parser);
    if (r->err != 0)
        return pw_diag_set(diag, r->err, 0, used, "body", "response body: %s", pw_strerror(r->err));
    if (e != HPE_OK && e != HPE_PAUSED)
        return pw_diag_set(diag, PW_EPROTO, 0, used, "http", "malformed HTTP response: %s",
                           http_errno_description(e));
    if (len == 0 && !r->done)
        return pw_diag_set(diag, PW_EPROTO, 0, 0, "http",
                           "connection closed before the end of the response");
    return 0;
}

static int reader_finish(reader_t *r, pw_diag_t *diag)
{
    pw_client_resp_t *resp = r->resp;
    if (pw_buf_append(&r->body, "", 1) < 0) {
        pw_buf_close(&r->body);
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "body", "out of memory");
    }
    resp->status = (int)r->parser.status_code;
    resp->body_len = r->body.len - 1;
    resp->body = (char *)r->body.data; /* handed over */
    return 0;
}

int pw_client_response_parse(const char *data, size_t len, pw_client_resp_t *resp, pw_diag_t *diag)
{
    reader_t r;
    reader_init(&r, resp);
    int rc = reader_feed(&r, data, len, diag);
    if (rc == 0)
        rc = reader_feed(&r, NULL, 0, diag);
    if (rc == 0)
        return reader_finish(&r, diag);
    pw_buf_close(&r.body);
    memset(resp, 0, sizeof(*resp));
    return rc;
}

void pw_client_resp_close(pw_client_resp_t *resp)
{
    if (resp == NULL)
        return;
    pw_free(resp->body);
    memset(resp, 0, sizeof(*resp));
}

/* ---- transport ---------------------------------------------------------------------------- */

typedef struct conn_s {
    pw_sock_t fd;
    SSL_CTX *ctx;
    SSL *ssl;
} conn_t;

static int tls_error(pw_diag_t *diag, int code, const char *what)
{
    char buf[200] = "";
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return pw_diag_set(diag, code, 0, 0, "tls", "%s%s%s", what, buf[0] ? ": " : "", buf);
}

static int conn_open(conn_t *c, const pw_client_t *cl, int timeout_ms, pw_diag_t *diag)
{
    memset(c, 0, sizeof(*c));
    c->fd = PW_SOCK_INVALID;
    int rc = pw_sock_connect(cl->url.host, cl->url.port, timeout_ms, &c->fd, diag);
    if (rc < 0 || !cl->url.tls)
        return rc;
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (c->ctx == NULL)
        return tls_error(diag, PW_ETLS, "SSL_CTX_new");
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (cl->ca_file != NULL && cl->ca_file[0] != '\0') {
        if (SSL_CTX_load_verify_locations(c->ctx, cl->ca_file, NULL) != 1) {
            /* Why: errno for a file that cannot be read, else OpenSSL's reason (no PEM). */
            unsigned long e = ERR_peek_error();
            const char *why = ERR_GET_LIB(e) == ERR_LIB_SYS ? strerror(ERR_GET_REASON(e))
                                                            : ERR_reason_error_string(e);
            pw_diag_set(diag, PW_EAUTH, 0, 0, "ca", "cannot load CA file %s: %s", cl->ca_file,
                        why ? why : "no reason given by OpenSSL");
            ERR_clear_error();
            return PW_EAUTH;
        }
    } else if (SSL_CTX_set_default_verify_paths(c->ctx) != 1) {
        return tls_error(diag, PW_ETLS, "cannot load the system CA store");
    }
    c->ssl = SSL_new(c->ctx);
    if (c->ssl == NULL)
        return tls_error(diag, PW_ETLS, "SSL_new");
    X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
    if (pw_sock_is_ip_literal(cl->url.host)) {
        /* An IP literal is checked against the certificate's IP SANs, not its DNS names. */
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, cl->url.host) != 1)
            return tls_error(diag, PW_ETLS, "bad IP address for verification");
    } else {
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (X509_VERIFY_PARAM_set1_host(vp, cl->url.host, 0) != 1)
            return tls_error(diag, PW_ETLS, "bad host name for verification");
        SSL_set_tlsext_host_name(c->ssl, cl->url.host);
    }
    SSL_set_fd(c->ssl, (int)c->fd); /* a SOCKET fits an int (OpenSSL on Windows) */
    if (SSL_connect(c->ssl) != 1) {
        long v = SSL_get_verify_result(c->ssl);
        /* Say what to do: a name mismatch is the URL's business, anything else (self-signed,
         * unknown issuer, expired) is about which CA the CLI trusts. */
        if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
            return pw_diag_set(diag, PW_EAUTH, 0, 0, "tls",
                               "server certificate of %s not accepted: %s (use a --url host "
                               "that the certificate names)",
                               cl->url.host, X509_verify_cert_error_string(v));
        if (v != X509_V_OK)
            return pw_diag_set(diag, PW_EAUTH, 0, 0, "tls",
                               "server certificate of %s not accepted: %s (checked against %s%s; "
                               "give the CA file that signed it with --ca FILE or POOLWATCH_CA)",
                               cl->url.host, X509_verify_cert_error_string(v),
                               cl->ca_file && cl->ca_file[0] ? "the CA file "
                                                             : "the system's CA store",
                               cl->ca_file && cl->ca_file[0] ? cl->ca_file : "");
        return tls_error(diag, PW_ETLS, "TLS handshake failed");
    }
    return 0;
}

static void conn_close(conn_t *c)
{
    if (c->ssl != NULL) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    if (c->ctx != NULL)
        SSL_CTX_free(c->ctx);
    pw_sock_close(c->fd);
    memset(c, 0, sizeof(*c));
    c->fd = PW_SOCK_INVALID;
}

static int conn_write(conn_t *c, const void *data, size_t len, pw_diag_t *diag)
{
    const char *p = data;
    while (len > 0) {
        size_t chunk = len > (64u << 10) ? (64u << 10) : len;
        long n;
        if (c->ssl != NULL) {
            pw_sock_err_clear();
            int w = SSL_write(c->ssl, p, (int)chunk);
            if (w <= 0) {
                /* the socket's send timeout (SO_SNDTIMEO) ends the write with EAGAIN, which
                 * OpenSSL reports as "want write" */
                int e = SSL_get_error(c->ssl, w);
                if ((e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_SYSCALL) &&
                    pw_sock_err_state() == 1)
                    return pw_diag_set(diag, PW_ETIMEDOUT, 0, 0, "send",
                                       "server took nothing for too long (timed out)");
                return tls_error(diag, PW_EIO, "send failed");
            }
            n = w;
        } else if ((n = pw_sock_send(c->fd, p, chunk, diag)) < 0) {
            return (int)n;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads into buf; returns bytes read, 0 at end of stream, or a negative code. */
static long conn_read(conn_t *c, char *buf, size_t cap, pw_diag_t *diag)
{
    if (c->ssl == NULL)
        return pw_sock_recv(c->fd, buf, cap, diag);
    pw_sock_err_clear();
    int n = SSL_read(c->ssl, buf, (int)cap);
    if (n > 0)
        return n;
    int e = SSL_get_error(c->ssl, n);
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    int st = pw_sock_err_state();
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && st == 0)
        return 0; /* closed without close_notify: http-parser decides if complete */
    /* the socket's receive timeout (SO_RCVTIMEO) ends the read with EAGAIN, which OpenSSL
     * reports as "want read" */
    if ((e == SSL_ERROR_SYSCALL || e == SSL_ERROR_WANT_READ) && st == 1)
        return pw_diag_set(diag, PW_ETIMEDOUT, 0, 0, "recv", "server did not answer in time");
    return tls_error(diag, PW_EIO, "receive failed");
}

int pw_client_request(const pw_client_t *cl, const char *method, const char *path,
                      const char *content_type, const void *body, size_t body_len,
                      pw_client_progress_cb progress, void *arg, pw_client_resp_t *resp,
                      pw_diag_t *diag)
{
    memset(resp, 0, sizeof(*resp));
    int timeout = cl->timeout_ms > 0 ? cl->timeout_ms : PW_CLIENT_TIMEOUT_MS;
    char head[2048];
    char hostport[PW_CLIENT_HOST_MAX + 16];
    int v6 = strchr(cl->url.host, ':') != NULL;
    int default_port = strcmp(cl->url.port, cl->url.tls ? "443" : "80") == 0;
    snprintf(hostport, sizeof(hostport), "%s%s%s%s%s", v6 ? "[" : "", cl->url.host, v6 ? "]" : "",
             default_port ? "" : ":", default_port ? "" : cl->url.port);
    int hl = snprintf(head, sizeof(head),
                      "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: poolwatch-cli/0.1\r\n"
                      "Accept: application/json\r\nConnection: close\r\n",
                      method, cl->url.base, path, hostport);
    if (hl < 0 || (size_t)hl >= sizeof(head))
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "path", "request line too long");
    if (cl->token != NULL && cl->token[0] != '\0') {
        if (strpbrk(cl->token, "\r\n") != NULL)
            return pw_diag_set(diag, PW_EINVAL, 0, 0, "token", "token contains a line break");
        hl += snprintf(head + hl, sizeof(head) - (size_t)hl, "Authorization: Bearer %s\r\n",
                       cl->token);
    }
    if (body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0)
        hl += snprintf(head + hl, sizeof(head) - (size_t)hl,
                       "Content-Type: %s\r\nContent-Length: %zu\r\n",
                       content_type ? content_type : "application/json", body_len);
    hl += snprintf(head + hl, sizeof(head) - (size_t)hl, "\r\n");
    if ((size_t)hl >= sizeof(head))
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "token", "request head too long");

    conn_t c;
    int rc = conn_open(&c, cl, timeout, diag);
    if (rc < 0) {
        conn_close(&c);
        return rc;
    }
    rc = conn_write(&c, head, (size_t)hl, diag);
    for (size_t off = 0; rc == 0 && off < body_len;) {
        size_t chunk = body_len - off > (256u << 10) ? (256u << 10) : body_len - off;
        rc = conn_write(&c, (const char *)body + off, chunk, diag);
        off += chunk;
        if (rc == 0 && progress != NULL)
            progress(off, body_len, arg);
    }
    reader_t r;
    reader_init(&r, resp);
    char buf[16384];
    while (rc == 0 && !r.done) {
        long n = conn_read(&c, buf, sizeof(buf), diag);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        rc = reader_feed(&r, buf, (size_t)n, diag);
        if (n == 0)
            break;
    }
    /* A TLS listener drops a plain HTTP request without a word: the usual cause. */
    if (rc == PW_EPROTO && r.seen == 0 && !cl->url.tls)
        pw_diag_set(diag, PW_EPROTO, 0, 0, "http",
                    "the server closed the connection without answering (an HTTPS server? the "
                    "collector's API is https://)");
    conn_close(&c);
    if (rc == 0)
        return reader_finish(&r, diag);
    pw_buf_close(&r.body);
    memset(resp, 0, sizeof(*resp));
    return rc;
}
