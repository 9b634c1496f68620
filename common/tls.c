/* tls.c: OpenSSL over libuv TCP streams through memory BIOs (see tls.h for the contract). */
#ifndef _WIN32
#define _GNU_SOURCE /* dladdr (pw_tls_library) */
#endif
#include "tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "alloc.h"
#include "net.h"

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

/* Ciphertext is read into a buffer shared by all connections of a context: read_cb copies it
 * into the connection's read BIO before anything else runs, so one buffer per context (one
 * thread) is enough and 10,000 idle connections do not each hold 64 KiB. */
#define READ_BUF_SIZE  65536
#define PLAIN_BUF_SIZE 16384 /* one TLS record's maximum plaintext */
#define MSG_MAX        256
#define WRITE_REQ_MAX  (4u << 20) /* ciphertext per uv_write request; big writes take several */

struct pw_tls_ctx_s {
    SSL_CTX *ssl_ctx;
    pw_tls_role_t role;
    int64_t cert_not_after_s; /* own certificate's notAfter, 0 = none */
    int64_t ca_not_after_s;   /* earliest trusted CA's notAfter, 0 = none */
    unsigned refs;            /* the creator's reference + one per connection */
    char rbuf[READ_BUF_SIZE];
    uint8_t pbuf[PLAIN_BUF_SIZE];
};

enum { ST_CONNECTING, ST_HANDSHAKE, ST_ESTABLISHED };

struct pw_tls_conn_s {
    uv_tcp_t tcp; /* tcp.data points back to the connection */
    uv_connect_t connect_req;
    pw_tls_ctx_t *ctx;
    SSL *ssl;
    BIO *rbio; /* owned by ssl: ciphertext from the peer */
    BIO *wbio; /* owned by ssl: ciphertext for the peer */
    pw_tls_cbs_t cbs;
    void *data;
    int state;
    int closing;  /* uv_close was called */
    int notify;   /* call cbs.on_close (0 when creation failed) */
    int verified; /* handshake finished: peer names are valid */
    int status;   /* reported by on_close */
    char msg[MSG_MAX];
    char *peer_cn;
    char *peer_dns[PW_TLS_PEER_MAX_DNS];
    size_t n_dns;
};

/* A write request owns its ciphertext; freed in on_write (including when cancelled). */
typedef struct write_req_s {
    uv_write_t req;
    char data[];
} write_req_t;

/* ---- error translation ------------------------------------------------------------------ */

/* Alerts a peer sends when it does not accept our certificate (RFC 8446 section 6.2). */
static int is_cert_refusal(int reason)
{
    switch (reason) {
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        return 1;
    default:
        return 0;
    }
}

/* Formats the oldest queued OpenSSL error as "library: reason (data)"; "" when none. */
static unsigned long openssl_text(char *out, size_t size)
{
    const char *data = NULL;
    int flags = 0;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    unsigned long e = ERR_peek_error_all(NULL, NULL, NULL, &data, &flags);
#else
    unsigned long e = ERR_peek_error_line_data(NULL, NULL, &data, &flags);
#endif
    if (e == 0) {
        snprintf(out, size, "no further detail from OpenSSL");
        return 0;
    }
    const char *lib = ERR_lib_error_string(e);
    const char *reason = ERR_reason_error_string(e);
    int has_data = data != NULL && (flags & ERR_TXT_STRING) && data[0] != '\0';
    if (ERR_GET_LIB(e) == ERR_LIB_SYS) {
        /* A failed system call (fopen of a missing file): the reason is errno, which OpenSSL 3
         * has no text for ("unknown reason"). */
        snprintf(out, size, "%s%s%s%s", strerror(ERR_GET_REASON(e)), has_data ? " (" : "",
                 has_data ? data : "", has_data ? ")" : "");
        return e;
    }
    snprintf(out, size, "%s: %s%s%s%s", lib ? lib : "OpenSSL", reason ? reason : "unknown reason",
             has_data ? " (" : "", has_data ? data : "", has_data ? ")" : "");
    return e;
}

/* Turns a failed SSL_* call into PW_EAUTH or PW_ETLS with a message, and clears OpenSSL's
 * error queue so that nothing leaks into the next call. */
static int translate_ssl(SSL *ssl, int ret, const char *what, char *msg, size_t size)
{
    int se = SSL_get_error(ssl, ret);
    char text[160];
    unsigned long e = openssl_text(text, sizeof(text));
    int reason = (e != 0 && ERR_GET_LIB(e) == ERR_LIB_SSL) ? ERR_GET_REASON(e) : 0;
    long vr = SSL_get_verify_result(ssl);
    int code = PW_ETLS;

    if (vr != X509_V_OK) {
        code = PW_EAUTH;
        snprintf(msg, size, "%s: peer certificate not accepted: %s", what,
                 X509_verify_cert_error_string(vr));
    } else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
        code = PW_EAUTH;
        snprintf(msg, size, "%s: peer presented no certificate", what);
    } else if (is_cert_refusal(reason)) {
        code = PW_EAUTH;
        snprintf(msg, size, "%s: peer refused our certificate: %s", what, text);
    } else if (se == SSL_ERROR_SYSCALL && e == 0) {
        snprintf(msg, size, "%s: unexpected end of TLS data", what);
    } else {
        snprintf(msg, size, "%s: %s", what, text);
    }
    ERR_clear_error();
    return code;
}

/* Context-creation failure: what we were doing, then OpenSSL's text. */
static int ctx_fail(pw_diag_t *diag, const char *field, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 3, 4)));

static int ctx_fail(pw_diag_t *diag, const char *field, const char *fmt, ...)
{
    char text[160], what[200];
    openssl_text(text, sizeof(text));
    ERR_clear_error();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return pw_diag_set(diag, PW_ETLS, 0, 0, field, "%s: %s", what, text);
}

/* ---- contexts --------------------------------------------------------------------------- */

const char *pw_tls_library(void)
{
    static char text[512];
    if (text[0] != '\0')
        return text;
    const char *v = OpenSSL_version(OPENSSL_VERSION);
#ifdef _WIN32
    HMODULE code = NULL, exe = GetModuleHandleW(NULL);
    char path[MAX_PATH] = "";
    if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                               GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCWSTR)(void *)OpenSSL_version, &code) &&
        code != exe)
        GetModuleFileNameA(code, path, sizeof(path));
    if (path[0] != '\0')
        snprintf(text, sizeof(text), "%s, shared %s", v, path);
    else
        snprintf(text, sizeof(text), "%s, linked in", v);
#else
    Dl_info code, exe;
    /* The executable's own symbol: main is not visible to dladdr, this function is. */
    if (dladdr((void *)OpenSSL_version, &code) != 0 && dladdr((void *)pw_tls_library, &exe) != 0 &&
        code.dli_fbase != exe.dli_fbase && code.dli_fname != NULL)
        snprintf(text, sizeof(text), "%s, shared %s", v, code.dli_fname);
    else
        snprintf(text, sizeof(text), "%s, linked in", v);
#endif
    return text;
}

/* An ASN1_TIME as Unix seconds (ASN1_TIME_diff from the epoch: portable, no timegm). */
static int64_t asn1_unix(const ASN1_TIME *t)
{
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, secs = 0;
    int ok = epoch != NULL && t != NULL && ASN1_TIME_diff(&days, &secs, epoch, t) == 1;
    ASN1_TIME_free(epoch);
    return ok ? (int64_t)days * 86400 + secs : 0;
}

/* Adds every CRL of the PEM file to the context's store and turns on the leaf's CRL check. */
static int load_crls(SSL_CTX *sc, const char *file, pw_diag_t *diag)
{
    BIO *b = BIO_new_file(file, "r");
    if (b == NULL)
        return ctx_fail(diag, "crl_file", "CRL file '%s'", file);
    X509_STORE *st = SSL_CTX_get_cert_store(sc);
    int n = 0;
    X509_CRL *crl;
    while ((crl = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL)) != NULL) {
        int ok = X509_STORE_add_crl(st, crl) == 1; /* the store takes its own reference */
        X509_CRL_free(crl);
        if (!ok) {
            BIO_free(b);
            return ctx_fail(diag, "crl_file", "CRL file '%s': CRL %d not added", file, n + 1);
        }
        n++;
    }
    BIO_free(b);
    /* The loop ends on "no start line" at the end of the file; anything else is an error. */
    unsigned long e = ERR_peek_last_error();
    if (n == 0 ||
        (e != 0 && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)))
        return ctx_fail(diag, "crl_file", "CRL file '%s': %s", file,
                        n == 0 ? "no PEM X509 CRL in it" : "CRL not readable");
    ERR_clear_error();
    X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
    return 0;
}

/* The earliest notAfter of the CA certificates in the context's store. */
static int64_t store_ca_not_after(SSL_CTX *sc)
{
    STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(sc));
    int64_t min = 0;
    for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
        X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
        if (x == NULL)
            continue;
        int64_t t = asn1_unix(X509_get0_notAfter(x));
        if (t != 0 && (min == 0 || t < min))
            min = t;
    }
    return min;
}

int pw_tls_ctx_not_after(const pw_tls_ctx_t *ctx, int64_t *cert_s, int64_t *ca_s)
{
    if (ctx == NULL)
        return PW_EINVAL;
    if (cert_s != NULL)
        *cert_s = ctx->cert_not_after_s;
    if (ca_s != NULL)
        *ca_s = ctx->ca_not_after_s;
    return 0;
}

int pw_tls_ctx_expiry_check(const pw_tls_ctx_t *ctx, int64_t now_s, int64_t within_s, char *msg,
                            size_t size)
{
    if (ctx == NULL || msg == NULL || size == 0)
        return PW_EINVAL;
    msg[0] = '\0';
    const struct {
        const char *what;
        int64_t t;
    } c[2] = {{"the certificate", ctx->cert_not_after_s},
              {"the CA certificate", ctx->ca_not_after_s}};
    for (int i = 0; i < 2; i++) {
        if (c[i].t == 0 || c[i].t - now_s > within_s)
            continue;
        ASN1_TIME *at = ASN1_TIME_set(NULL, (time_t)c[i].t);
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        if (at == NULL || ASN1_TIME_to_tm(at, &tm) != 1)
            memset(&tm, 0, sizeof(tm));
        ASN1_TIME_free(at);
        char when[40];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
        int64_t left = c[i].t - now_s;
        if (left < 0)
            snprintf(msg, size, "%s expired on %s, %lld days ago", c[i].what, when,
                     (long long)(-left / 86400));
        else
            snprintf(msg, size, "%s expires on %s, in %lld days", c[i].what, when,
                     (long long)(left / 86400));
        return 1;
    }
    return 0;
}

#define DIGEST_FILE_MAX (16u << 20)

int pw_tls_files_digest(const pw_tls_ctx_opts_t *opts, uint8_t out[32])
{
    if (opts == NULL || out == NULL)
        return PW_EINVAL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    char *buf = pw_malloc(65536);
    if (md == NULL || buf == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        pw_free(buf);
        return PW_ENOMEM;
    }
    const char *files[4] = {opts->ca_file, opts->cert_file, opts->key_file, opts->crl_file};
    for (size_t i = 0; i < 4; i++) {
        uint64_t total = 0;
        FILE *f = files[i] != NULL && files[i][0] != '\0' ? fopen(files[i], "rb") : NULL;
        /* Each file's bytes, then its length: "ab" + "c" differs from "a" + "bc". */
        size_t n;
        while (f != NULL && total < DIGEST_FILE_MAX && (n = fread(buf, 1, 65536, f)) > 0) {
            EVP_DigestUpdate(md, buf, n);
            total += n;
        }
        if (f != NULL)
            fclose(f);
        uint8_t len8[8];
        for (int k = 0; k < 8; k++)
            len8[k] = (uint8_t)(total >> (8 * k));
        EVP_DigestUpdate(md, len8, sizeof(len8));
    }
    unsigned int olen = 0;
    int ok = EVP_DigestFinal_ex(md, out, &olen) == 1 && olen == 32;
    EVP_MD_CTX_free(md);
    pw_free(buf);
    ERR_clear_error();
    return ok ? 0 : PW_ENOMEM;
}

int pw_tls_ctx_new(pw_tls_ctx_t **out, const pw_tls_ctx_opts_t *opts, pw_diag_t *diag)
{
    if (out == NULL || opts == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "NULL argument");
    if (opts->role != PW_TLS_CLIENT && opts->role != PW_TLS_SERVER)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "role", "unknown TLS role %d", (int)opts->role);
    if (opts->ca_file == NULL || opts->ca_file[0] == '\0')
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "ca_file", "a CA file is required");
    if (opts->role == PW_TLS_SERVER && (opts->cert_file == NULL || opts->cert_file[0] == '\0'))
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "cert_file",
                           "a server needs a certificate and key");
    if (opts->no_client_cert && opts->role != PW_TLS_SERVER)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "no_client_cert",
                           "no_client_cert applies to server contexts only");
    if ((opts->cert_file == NULL) != (opts->key_file == NULL))
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "key_file",
                           "certificate and key must be given together");

    pw_tls_ctx_t *ctx = pw_calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "", "out of memory");
    ctx->role = opts->role;
    ctx->refs = 1;

    int rc;
    ERR_clear_error();
    SSL_CTX *sc =
        SSL_CTX_new(opts->role == PW_TLS_SERVER ? TLS_server_method() : TLS_client_method());
    if (sc == NULL) {
        rc = ctx_fail(diag, "", "creating the TLS context");
        goto fail_ctx;
    }
    ctx->ssl_ctx = sc;
    if (SSL_CTX_set_min_proto_version(sc, TLS1_2_VERSION) != 1) {
        rc = ctx_fail(diag, "", "setting TLS 1.2 as the minimum");
        goto fail_ssl;
    }
    SSL_CTX_set_options(sc, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    /* Idle connections give their record buffers back: the collector holds thousands. */
    SSL_CTX_set_mode(sc, SSL_MODE_RELEASE_BUFFERS);

    /* The configured CA is the only trust anchor: no system default paths. */
    if (SSL_CTX_load_verify_locations(sc, opts->ca_file, NULL) != 1) {
        rc = ctx_fail(diag, "ca_file", "CA file '%s'", opts->ca_file);
        goto fail_ssl;
    }
    if (opts->cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(sc, opts->cert_file) != 1) {
            rc = ctx_fail(diag, "cert_file", "certificate file '%s'", opts->cert_file);
            goto fail_ssl;
        }
        if (SSL_CTX_use_PrivateKey_file(sc, opts->key_file, SSL_FILETYPE_PEM) != 1) {
            rc = ctx_fail(diag, "key_file", "key file '%s'", opts->key_file);
            goto fail_ssl;
        }
        if (SSL_CTX_check_private_key(sc) != 1) {
            rc = ctx_fail(diag, "key_file", "key file '%s' does not match the certificate",
                          opts->key_file);
            goto fail_ssl;
        }
        ctx->cert_not_after_s = asn1_unix(X509_get0_notAfter(SSL_CTX_get0_certificate(sc)));
    }
    ctx->ca_not_after_s = store_ca_not_after(sc);
    if (opts->crl_file != NULL && opts->crl_file[0] != '\0' &&
        (rc = load_crls(sc, opts->crl_file, diag)) != 0)
        goto fail_ssl;

    if (opts->role == PW_TLS_SERVER) {
        if (opts->no_client_cert) {
            /* No CertificateRequest at all: the peer stays anonymous at the TLS layer. */
            SSL_CTX_set_verify(sc, SSL_VERIFY_NONE, NULL);
        } else {
            SSL_CTX_set_verify(sc, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
            /* Tell clients which CA we accept, so one holding several certificates picks
             * ours. */
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(opts->ca_file);
            if (names != NULL)
                SSL_CTX_set_client_CA_list(sc, names);
        }
        /* No resumption: every connection presents and verifies a full certificate chain, and
         * no ticket bytes are spent on agents that reconnect rarely. */
        SSL_CTX_set_session_cache_mode(sc, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(sc, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(sc, 0);
        static const unsigned char sid[] = "poolwatch";
        SSL_CTX_set_session_id_context(sc, sid, sizeof(sid) - 1);
    } else {
        SSL_CTX_set_verify(sc, SSL_VERIFY_PEER, NULL);
        X509_VERIFY_PARAM_set_hostflags(SSL_CTX_get0_param(sc),
                                        X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    ERR_clear_error();
    *out = ctx;
    return 0;

fail_ssl:
    SSL_CTX_free(sc);
fail_ctx:
    pw_free(ctx);
    return rc;
}

static void ctx_unref(pw_tls_ctx_t *ctx)
{
    if (ctx == NULL || --ctx->refs > 0)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    pw_free(ctx);
}

void pw_tls_ctx_free(pw_tls_ctx_t *ctx)
{
    ctx_unref(ctx);
}

/* ---- connection life cycle -------------------------------------------------------------- */

static void conn_free(pw_tls_conn_t *conn)
{
    SSL_free(conn->ssl); /* frees both BIOs */
    pw_free(conn->peer_cn);
    for (size_t i = 0; i < conn->n_dns; i++)
        pw_free(conn->peer_dns[i]);
    ctx_unref(conn->ctx);
    pw_free(conn);
}

static void on_uv_close(uv_handle_t *h)
{
    pw_tls_conn_t *conn = h->data;
    if (conn->notify && conn->cbs.on_close != NULL)
        conn->cbs.on_close(conn, conn->status, conn->msg);
    conn_free(conn);
}

static int flush(pw_tls_conn_t *conn);

/* Close now, free later: sends whatever OpenSSL queued (an alert, close_notify), stops
 * reading and closes the handle; on_uv_close frees. */
static void start_close(pw_tls_conn_t *conn)
{
    if (conn->closing)
        return;
    flush(conn);
    if (conn->closing)
        return; /* the flush failed and already closed */
    conn->closing = 1;
    uv_read_stop((uv_stream_t *)&conn->tcp);
    uv_close((uv_handle_t *)&conn->tcp, on_uv_close);
}

static void fail(pw_tls_conn_t *conn, int code, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 3, 4)));

/* Records the first error (the one on_close reports) and starts the close. */
static void fail(pw_tls_conn_t *conn, int code, const char *fmt, ...)
{
    if (conn->closing || conn->status != 0)
        return;
    conn->status = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(conn->msg, sizeof(conn->msg), fmt, ap);
    va_end(ap);
    start_close(conn);
}

static void fail_ssl(pw_tls_conn_t *conn, int ret, const char *what)
{
    char msg[MSG_MAX];
    int code = translate_ssl(conn->ssl, ret, what, msg, sizeof(msg));
    fail(conn, code, "%s", msg);
}

static void on_write(uv_write_t *req, int status)
{
    pw_tls_conn_t *conn = req->handle->data;
    pw_free(req); /* req is the first member of write_req_t */
    if (status < 0 && status != UV_ECANCELED)
        fail(conn, status, "write: %s", uv_strerror(status));
}

/* Moves everything OpenSSL wrote into the write BIO onto the socket. Returns 0, or the error
 * that also started the close. */
static int flush(pw_tls_conn_t *conn)
{
    size_t pending;
    while (!conn->closing && (pending = BIO_ctrl_pending(conn->wbio)) > 0) {
        if (pending > WRITE_REQ_MAX)
            pending = WRITE_REQ_MAX;
        write_req_t *wr = pw_malloc(sizeof(*wr) + pending);
        if (wr == NULL) {
            fail(conn, PW_ENOMEM, "out of memory queueing %zu bytes", pending);
            return PW_ENOMEM;
        }
        size_t got = 0;
        if (BIO_read_ex(conn->wbio, wr->data, pending, &got) != 1 || got == 0) {
            pw_free(wr);
            ERR_clear_error();
            break;
        }
        uv_buf_t b = uv_buf_init(wr->data, (unsigned int)got);
        int r = uv_write(&wr->req, (uv_stream_t *)&conn->tcp, &b, 1, on_write);
        if (r != 0) {
            pw_free(wr);
            fail(conn, r, "write: %s", uv_strerror(r));
            return r;
        }
    }
    return 0;
}

/* Copies a certificate string, refusing embedded NULs (a classic name-confusion trick). */
static char *dup_asn1_string(const ASN1_STRING *s, int *bad)
{
    const unsigned char *p = ASN1_STRING_get0_data(s);
    int n = ASN1_STRING_length(s);
    if (p == NULL || n <= 0 || memchr(p, '\0', (size_t)n) != NULL) {
        *bad = 1;
        return NULL;
    }
    return pw_strndup((const char *)p, (size_t)n);
}

/* Keeps the verified peer's CN and DNS SANs for display (matching uses the certificate). */
static int collect_peer_names(pw_tls_conn_t *conn)
{
    X509 *peer = SSL_get0_peer_certificate(conn->ssl);
    if (peer == NULL)
        return 0;
    X509_NAME *subj = X509_get_subject_name(peer);
    int idx = subj ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
    if (idx >= 0) {
        X509_NAME_ENTRY *ent = X509_NAME_get_entry(subj, idx);
        unsigned char *utf8 = NULL;
        int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(ent));
        if (n > 0 && memchr(utf8, '\0', (size_t)n) == NULL) {
            conn->peer_cn = pw_strndup((const char *)utf8, (size_t)n);
            if (conn->peer_cn == NULL) {
                OPENSSL_free(utf8);
                return PW_ENOMEM;
            }
        }
        OPENSSL_free(utf8);
    }
    GENERAL_NAMES *gens = X509_get_ext_d2i(peer, NID_subject_alt_name, NULL, NULL);
    int rc = 0;
    for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type != GEN_DNS || conn->n_dns == PW_TLS_PEER_MAX_DNS)
            continue;
        int bad = 0;
        char *s = dup_asn1_string(g->d.dNSName, &bad);
        if (bad)
            continue; /* empty or with an embedded NUL: not a name, do not show it */
        if (s == NULL) {
            rc = PW_ENOMEM;
            break;
        }
        conn->peer_dns[conn->n_dns++] = s;
    }
    GENERAL_NAMES_free(gens);
    ERR_clear_error();
    return rc;
}

/* Runs the handshake and decrypts whatever ciphertext the read BIO holds. Stops as soon as a
 * callback starts the close. */
static void advance(pw_tls_conn_t *conn)
{
    pw_tls_ctx_t *ctx = conn->ctx;
    if (conn->state == ST_HANDSHAKE) {
        ERR_clear_error();
        int r = SSL_do_handshake(conn->ssl);
        if (r != 1) {
            int se = SSL_get_error(conn->ssl, r);
            if (se == SSL_ERROR_WANT_READ) {
                flush(conn);
                return;
            }
            fail_ssl(conn, r, "handshake");
            return;
        }
        if (flush(conn) != 0)
            return;
        conn->state = ST_ESTABLISHED;
        conn->verified = 1;
        if (collect_peer_names(conn) != 0) {
            fail(conn, PW_ENOMEM, "out of memory keeping the peer's names");
            return;
        }
        if (conn->cbs.on_established != NULL)
            conn->cbs.on_established(conn);
    }
    while (!conn->closing) {
        size_t n = 0;
        ERR_clear_error();
        int r = SSL_read_ex(conn->ssl, ctx->pbuf, sizeof(ctx->pbuf), &n);
        if (r == 1) {
            conn->cbs.on_data(conn, ctx->pbuf, n);
            continue;
        }
        int se = SSL_get_error(conn->ssl, r);
        if (se == SSL_ERROR_WANT_READ) {
            flush(conn); /* post-handshake messages may want an answer (KeyUpdate) */
            return;
        }
        if (se == SSL_ERROR_ZERO_RETURN) {
            ERR_clear_error();
            pw_tls_close(conn); /* the peer's close_notify: answer it and close */
            return;
        }
        fail_ssl(conn, r, "read");
        return;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    pw_tls_conn_t *conn = h->data;
    (void)suggested;
    *buf = uv_buf_init(conn->ctx->rbuf, sizeof(conn->ctx->rbuf));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    pw_tls_conn_t *conn = stream->data;
    if (conn->closing || nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_EOF)
            fail(conn, PW_ECLOSED,
                 conn->state == ST_ESTABLISHED ? "peer closed the connection without close_notify"
                                               : "peer closed the connection during the handshake");
        else
            fail(conn, (int)nread, "read: %s", uv_strerror((int)nread));
        return;
    }
    size_t put = 0;
    if (BIO_write_ex(conn->rbio, buf->base, (size_t)nread, &put) != 1 || put != (size_t)nread) {
        ERR_clear_error();
        fail(conn, PW_ENOMEM, "out of memory buffering %zd bytes of TLS data", nread);
        return;
    }
    advance(conn);
}

static void on_connect(uv_connect_t *req, int status)
{
    pw_tls_conn_t *conn = req->handle->data;
    if (conn->closing)
        return; /* UV_ECANCELED from our own uv_close */
    if (status < 0) {
        fail(conn, status, "connect: %s", uv_strerror(status));
        return;
    }
    int r = uv_read_start((uv_stream_t *)&conn->tcp, on_alloc, on_read);
    if (r != 0) {
        fail(conn, r, "read start: %s", uv_strerror(r));
        return;
    }
    conn->state = ST_HANDSHAKE;
    advance(conn); /* sends the ClientHello */
}

/* Allocates the connection and its SSL object; the TCP handle is not initialised yet. */
static int conn_new(pw_tls_conn_t **out, pw_tls_ctx_t *ctx, const pw_tls_cbs_t *cbs, void *data,
                    pw_diag_t *diag)
{
    pw_tls_conn_t *conn = pw_calloc(1, sizeof(*conn));
    if (conn == NULL)
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "", "out of memory");
    ERR_clear_error();
    conn->ssl = SSL_new(ctx->ssl_ctx);
    BIO *rbio = BIO_new(BIO_s_mem());
    BIO *wbio = BIO_new(BIO_s_mem());
    if (conn->ssl == NULL || rbio == NULL || wbio == NULL) {
        int rc = ctx_fail(diag, "", "creating the TLS connection");
        BIO_free(rbio);
        BIO_free(wbio);
        SSL_free(conn->ssl);
        pw_free(conn);
        return rc;
    }
    /* An empty memory BIO means "no data yet", not end of file. */
    BIO_set_mem_eof_return(rbio, -1);
    BIO_set_mem_eof_return(wbio, -1);
    SSL_set_bio(conn->ssl, rbio, wbio);
    conn->rbio = rbio;
    conn->wbio = wbio;
    conn->cbs = *cbs;
    conn->data = data;
    conn->ctx = ctx;
    ctx->refs++;
    *out = conn;
    return 0;
}

/* Creation failed after uv_tcp_init: the handle must still go through uv_close, silently. */
static void abandon(pw_tls_conn_t *conn)
{
    conn->notify = 0;
    conn->closing = 1;
    uv_close((uv_handle_t *)&conn->tcp, on_uv_close);
}

static int check_cbs(const pw_tls_cbs_t *cbs, pw_diag_t *diag)
{
    if (cbs == NULL || cbs->on_data == NULL || cbs->on_close == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "cbs", "on_data and on_close are required");
    return 0;
}

int pw_tls_connect(pw_tls_conn_t **out, uv_loop_t *loop, pw_tls_ctx_t *ctx,
                   const struct sockaddr *addr, const char *expected_host, const pw_tls_cbs_t *cbs,
                   void *data, pw_diag_t *diag)
{
    if (out == NULL || loop == NULL || ctx == NULL || addr == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "NULL argument");
    if (ctx->role != PW_TLS_CLIENT)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "ctx", "not a client context");
    if (expected_host == NULL || expected_host[0] == '\0')
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "host",
                           "the server's expected host name is required");
    int rc = check_cbs(cbs, diag);
    if (rc != 0)
        return rc;

    pw_tls_conn_t *conn;
    rc = conn_new(&conn, ctx, cbs, data, diag);
    if (rc != 0)
        return rc;
    ERR_clear_error();
    int ok;
    if (pw_net_is_ip_literal(expected_host)) {
        /* SNI carries names only (RFC 6066 section 3); an address is checked as an IP SAN. */
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(conn->ssl), expected_host) == 1;
    } else {
        ok = SSL_set1_host(conn->ssl, expected_host) == 1 &&
             SSL_set_tlsext_host_name(conn->ssl, expected_host) == 1;
    }
    if (!ok) {
        rc = ctx_fail(diag, "host", "expected host '%s'", expected_host);
        conn_free(conn);
        return rc;
    }
    SSL_set_connect_state(conn->ssl);

    rc = uv_tcp_init(loop, &conn->tcp);
    if (rc != 0) {
        conn_free(conn);
        return pw_diag_set(diag, rc, 0, 0, "", "uv_tcp_init: %s", uv_strerror(rc));
    }
    conn->tcp.data = conn;
    conn->state = ST_CONNECTING;
    uv_tcp_nodelay(&conn->tcp, 1); /* frames are small; a lost hint only costs latency */
    rc = uv_tcp_connect(&conn->connect_req, &conn->tcp, addr, on_connect);
    if (rc != 0) {
        abandon(conn);
        return pw_diag_set(diag, rc, 0, 0, "", "connect: %s", uv_strerror(rc));
    }
    conn->notify = 1;
    *out = conn;
    return 0;
}

int pw_tls_accept(pw_tls_conn_t **out, uv_stream_t *server, pw_tls_ctx_t *ctx,
                  const pw_tls_cbs_t *cbs, void *data, pw_diag_t *diag)
{
    if (out == NULL || server == NULL || ctx == NULL)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "", "NULL argument");
    if (ctx->role != PW_TLS_SERVER)
        return pw_diag_set(diag, PW_EINVAL, 0, 0, "ctx", "not a server context");
    int rc = check_cbs(cbs, diag);
    if (rc != 0)
        return rc;

    pw_tls_conn_t *conn;
    rc = conn_new(&conn, ctx, cbs, data, diag);
    if (rc != 0)
        return rc;
    SSL_set_accept_state(conn->ssl);
    rc = uv_tcp_init(server->loop, &conn->tcp);
    if (rc != 0) {
        conn_free(conn);
        return pw_diag_set(diag, rc, 0, 0, "", "uv_tcp_init: %s", uv_strerror(rc));
    }
    conn->tcp.data = conn;
    rc = uv_accept(server, (uv_stream_t *)&conn->tcp);
    if (rc == 0)
        rc = uv_read_start((uv_stream_t *)&conn->tcp, on_alloc, on_read);
    if (rc != 0) {
        abandon(conn);
        return pw_diag_set(diag, rc, 0, 0, "", "accept: %s", uv_strerror(rc));
    }
    uv_tcp_nodelay(&conn->tcp, 1);
    conn->state = ST_HANDSHAKE;
    conn->notify = 1;
    *out = conn;
    return 0;
}

int pw_tls_write(pw_tls_conn_t *conn, const void *data, size_t len)
{
    if (conn == NULL || (data == NULL && len > 0))
        return PW_EINVAL;
    if (conn->closing)
        return PW_ECLOSED;
    if (conn->state != ST_ESTABLISHED)
        return PW_EAGAIN;
    if (len == 0)
        return 0;
    ERR_clear_error();
    size_t written = 0;
    /* Memory BIOs never block and partial writes are off: all of `data` is encrypted. */
    int r = SSL_write_ex(conn->ssl, data, len, &written);
    if (r != 1) {
        fail_ssl(conn, r, "write");
        return conn->status;
    }
    return flush(conn);
}

void pw_tls_close(pw_tls_conn_t *conn)
{
    if (conn == NULL || conn->closing)
        return;
    if (conn->state == ST_ESTABLISHED) {
        ERR_clear_error();
        SSL_shutdown(conn->ssl); /* queues close_notify; we do not wait for the peer's */
        ERR_clear_error();
    }
    start_close(conn);
}

/* ---- accessors -------------------------------------------------------------------------- */

int pw_tls_is_established(const pw_tls_conn_t *conn)
{
    return conn != NULL && !conn->closing && conn->state == ST_ESTABLISHED;
}

int pw_tls_is_closing(const pw_tls_conn_t *conn)
{
    return conn != NULL && conn->closing;
}

void *pw_tls_data(const pw_tls_conn_t *conn)
{
    return conn ? conn->data : NULL;
}

void pw_tls_set_data(pw_tls_conn_t *conn, void *data)
{
    if (conn != NULL)
        conn->data = data;
}

uv_tcp_t *pw_tls_tcp(pw_tls_conn_t *conn)
{
    return conn ? &conn->tcp : NULL;
}

size_t pw_tls_write_queue_bytes(const pw_tls_conn_t *conn)
{
    return conn ? conn->tcp.write_queue_size : 0;
}

const char *pw_tls_version(const pw_tls_conn_t *conn)
{
    if (conn == NULL || !conn->verified)
        return "";
    return SSL_get_version(conn->ssl);
}

const char *pw_tls_cipher(const pw_tls_conn_t *conn)
{
    if (conn == NULL || !conn->verified)
        return "";
    const char *name = SSL_CIPHER_get_name(SSL_get_current_cipher(conn->ssl));
    return name ? name : "";
}

const char *pw_tls_peer_cn(const pw_tls_conn_t *conn)
{
    return (conn && conn->peer_cn) ? conn->peer_cn : "";
}

int pw_tls_peer_has_ou(const pw_tls_conn_t *conn, const char *ou)
{
    X509 *peer = conn && conn->ssl ? SSL_get0_peer_certificate(conn->ssl) : NULL;
    X509_NAME *subj = peer ? X509_get_subject_name(peer) : NULL;
    size_t want = ou ? strlen(ou) : 0;
    for (int idx = -1; subj != NULL && want > 0;) {
        idx = X509_NAME_get_index_by_NID(subj, NID_organizationalUnitName, idx);
        if (idx < 0)
            break;
        const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, idx));
        if ((size_t)ASN1_STRING_length(s) == want &&
            memcmp(ASN1_STRING_get0_data(s), ou, want) == 0)
            return 1;
    }
    return 0;
}

size_t pw_tls_peer_dns_count(const pw_tls_conn_t *conn)
{
    return conn ? conn->n_dns : 0;
}

const char *pw_tls_peer_dns(const pw_tls_conn_t *conn, size_t i)
{
    return (conn && i < conn->n_dns) ? conn->peer_dns[i] : NULL;
}

int pw_tls_peer_match_name(const pw_tls_conn_t *conn, const char *host, char *out, size_t size)
{
    if (size > 0)
        out[0] = '\0';
    if (conn == NULL || !conn->verified || host == NULL || host[0] == '\0')
        return 0;
    X509 *peer = SSL_get0_peer_certificate(conn->ssl);
    if (peer == NULL)
        return 0;
    char *matched = NULL;
    int r = X509_check_host(peer, host, strlen(host), X509_CHECK_FLAG_NO_WILDCARDS, &matched);
    ERR_clear_error();
    if (r == 1 && size > 0)
        snprintf(out, size, "%s", matched ? matched : host);
    OPENSSL_free(matched);
    return r == 1;
}

int pw_tls_cert_names_host(const char *cert_file, const char *host, char *names, size_t size)
{
    if (names != NULL && size > 0)
        names[0] = '\0';
    BIO *b = BIO_new_file(cert_file, "r");
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (x == NULL) {
        ERR_clear_error();
        return PW_ETLS;
    }
    int r = X509_check_host(x, host, strlen(host), X509_CHECK_FLAG_NO_WILDCARDS, NULL) == 1;
    if (!r && names != NULL && size > 0) {
        size_t o = 0;
        char cn[256];
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn)) > 0)
            o += (size_t)snprintf(names + o, size - o, "CN %s", cn);
        GENERAL_NAMES *alt = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
        for (int i = 0; alt != NULL && i < sk_GENERAL_NAME_num(alt) && o < size; i++) {
            const GENERAL_NAME *g = sk_GENERAL_NAME_value(alt, i);
            if (g->type != GEN_DNS)
                continue;
            const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
            int dl = ASN1_STRING_length(g->d.dNSName);
            o += (size_t)snprintf(names + o, size - o, "%sDNS %.*s", o ? ", " : "", dl,
                                  (const char *)d);
        }
        GENERAL_NAMES_free(alt);
    }
    X509_free(x);
    ERR_clear_error();
    return r;
}

int pw_tls_peer_matches(const pw_tls_conn_t *conn, const char *host)
{
    if (conn == NULL || !conn->verified || host == NULL || host[0] == '\0')
        return 0;
    X509 *peer = SSL_get0_peer_certificate(conn->ssl);
    if (peer == NULL)
        return 0;
    /* X509_check_host compares DNS SANs and consults the CN only when there is no DNS SAN. */
    int r = X509_check_host(peer, host, strlen(host), X509_CHECK_FLAG_NO_WILDCARDS, NULL);
    ERR_clear_error();
    return r == 1;
}
