/* tokens.c: bearer tokens file (see tokens.h). */
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "alloc.h"

typedef struct token_s {
    unsigned char hash[32];
    pw_role_t role;
    char name[PW_TOKENS_MAX_NAME];
} token_t;

struct pw_tokens_s {
    token_t *v;
    size_t n, cap;
};

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static int sha256(const void *p, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1 || len != 32)
        return PW_ETLS;
    return 0;
}

/* Next whitespace-separated field of [*p, end): start and length; 0 when none. */
static size_t field(const char **p, const char *end, const char **start)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    const char *e = s;
    while (e < end && *e != ' ' && *e != '\t')
        e++;
    *start = s;
    *p = e;
    return (size_t)(e - s);
}

_Static_assert(PW_TOKENS_MAX_NAME == 64, "the message below says 1..63");

const char *pw_tokens_name_error(const char *name, size_t len, size_t *at)
{
    if (at)
        *at = 0;
    if (name == NULL || len == 0 || len >= PW_TOKENS_MAX_NAME)
        return "a name of 1..63 bytes is required";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e) {
            if (at)
                *at = i;
            return "the name must be printable ASCII without spaces";
        }
    return NULL;
}

/* Fills d with the reason only: pw_tokens_parse and pw_tokens_load put "line N" or "FILE:N"
 * in front. */
static int parse_line(pw_tokens_t *t, const char *s, const char *end, uint32_t line, uint64_t off,
                      pw_diag_t *d)
{
    const char *p = s, *f;
    size_t n = field(&p, end, &f);
    if (n == 0 || f[0] == '#')
        return 0;
    if (n != 64)
        return pw_diag_set(d, PW_EPARSE, line, off + (uint64_t)(f - s), "hash",
                           "the hash must be 64 hex digits (SHA-256), got %zu bytes", n);
    token_t tk;
    memset(&tk, 0, sizeof(tk));
    for (size_t i = 0; i < 32; i++) {
        int hi = hexval((unsigned char)f[2 * i]), lo = hexval((unsigned char)f[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return pw_diag_set(d, PW_EPARSE, line, off + (uint64_t)(f - s) + 2 * i, "hash",
                               "the hash has a non-hex digit");
        tk.hash[i] = (unsigned char)(hi << 4 | lo);
    }
    n = field(&p, end, &f);
    if (n == 4 && memcmp(f, "read", 4) == 0)
        tk.role = PW_ROLE_READ;
    else if (n == 5 && memcmp(f, "admin", 5) == 0)
        tk.role = PW_ROLE_ADMIN;
    else
        return pw_diag_set(d, PW_EPARSE, line, off + (uint64_t)(f - s), "role",
                           "role must be 'read' or 'admin'");
    n = field(&p, end, &f);
    size_t at;
    const char *why = pw_tokens_name_error(f, n, &at);
    if (why != NULL)
        return pw_diag_set(d, PW_EPARSE, line, off + (uint64_t)(f - s) + at, "name", "%s", why);
    memcpy(tk.name, f, n);
    const char *rest;
    if (field(&p, end, &rest) != 0)
        return pw_diag_set(d, PW_EPARSE, line, off + (uint64_t)(rest - s), "name",
                           "extra text after the name");
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 8;
        token_t *v = pw_realloc(t->v, nc * sizeof(*v));
        if (v == NULL)
            return pw_diag_set(d, PW_ENOMEM, line, off, "", "out of memory");
        t->v = v;
        t->cap = nc;
    }
    t->v[t->n++] = tk;
    return 0;
}

/* origin: the file's path for "FILE:N: reason", or NULL for "line N: reason". */
/* Puts "FILE:N: ", "FILE: " or "line N: " in front of d's reason (cut to fit). */
static int where(pw_diag_t *d, int r, const char *origin)
{
    if (d == NULL || (origin == NULL && d->line == 0))
        return r;
    char pre[sizeof(d->msg)];
    if (origin == NULL)
        snprintf(pre, sizeof(pre), "line %u: ", d->line);
    else if (d->line == 0)
        snprintf(pre, sizeof(pre), "%s: ", origin);
    else
        snprintf(pre, sizeof(pre), "%s:%u: ", origin, d->line);
    size_t pl = strlen(pre), ml = strlen(d->msg);
    if (pl + ml >= sizeof(d->msg))
        ml = sizeof(d->msg) - 1 - pl;
    memmove(d->msg + pl, d->msg, ml);
    memcpy(d->msg, pre, pl);
    d->msg[pl + ml] = '\0';
    return r;
}

static int parse(const char *buf, size_t len, const char *origin, pw_tokens_t **out, pw_diag_t *d)
{
    if (out == NULL || (buf == NULL && len > 0))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    if (len > PW_TOKENS_MAX_FILE)
        return where(
            d,
            pw_diag_set(d, PW_ETOOBIG, 0, 0, "", "tokens file over %u bytes", PW_TOKENS_MAX_FILE),
            origin);
    if (len > 0 && memchr(buf, '\0', len) != NULL) {
        const char *z = memchr(buf, '\0', len);
        return where(d,
                     pw_diag_set(d, PW_EPARSE, 0, (uint64_t)(z - buf), "",
                                 "NUL byte in tokens file at offset %zu", (size_t)(z - buf)),
                     origin);
    }
    pw_tokens_t *t = pw_calloc(1, sizeof(*t));
    if (t == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    const char *p = buf, *end = buf + len;
    uint32_t line = 0;
    int r = 0;
    while (p < end && r == 0) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le - p > PW_TOKENS_MAX_LINE) {
            r = pw_diag_set(d, PW_ETOOBIG, line, (uint64_t)(p - buf), "",
                            "line longer than %d bytes", PW_TOKENS_MAX_LINE);
            break;
        }
        const char *ce = le;
        if (ce > p && ce[-1] == '\r')
            ce--;
        r = parse_line(t, p, ce, line, (uint64_t)(p - buf), d);
        p = nl ? nl + 1 : end;
    }
    if (r != 0) {
        pw_tokens_free(t);
        return where(d, r, origin);
    }
    *out = t;
    return 0;
}

int pw_tokens_parse(const char *buf, size_t len, pw_tokens_t **out, pw_diag_t *d)
{
    return parse(buf, len, NULL, out, d);
}

int pw_tokens_load(const char *path, pw_tokens_t **out, pw_diag_t *d)
{
    if (path == NULL || out == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = -errno;
        return pw_diag_set(d, e, 0, 0, "tokens_file", "cannot open '%s': %s", path, strerror(-e));
    }
    char *buf = pw_malloc(PW_TOKENS_MAX_FILE + 1);
    if (buf == NULL) {
        fclose(f);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    }
    size_t n = fread(buf, 1, PW_TOKENS_MAX_FILE + 1, f);
    int err = ferror(f);
    fclose(f);
    int r;
    if (err)
        r = pw_diag_set(d, PW_EIO, 0, 0, "tokens_file", "cannot read '%s'", path);
    else
        r = parse(buf, n, path, out, d);
    pw_free(buf);
    return r;
}

void pw_tokens_free(pw_tokens_t *t)
{
    if (t == NULL)
        return;
    pw_free(t->v);
    pw_free(t);
}

size_t pw_tokens_count(const pw_tokens_t *t)
{
    return t ? t->n : 0;
}

pw_role_t pw_tokens_check(const pw_tokens_t *t, const char *token, size_t len, const char **name)
{
    if (name)
        *name = NULL;
    if (t == NULL || token == NULL || len == 0 || len > PW_TOKENS_MAX_TOKEN)
        return PW_ROLE_NONE;
    unsigned char h[32];
    if (sha256(token, len, h) != 0)
        return PW_ROLE_NONE;
    /* Every entry is compared, whatever matched earlier: constant time in the token. */
    size_t hit = (size_t)-1;
    for (size_t i = 0; i < t->n; i++)
        if (CRYPTO_memcmp(h, t->v[i].hash, 32) == 0 && hit == (size_t)-1)
            hit = i;
    if (hit == (size_t)-1)
        return PW_ROLE_NONE;
    if (name)
        *name = t->v[hit].name;
    return t->v[hit].role;
}

int pw_tokens_hash(const char *token, char out[65])
{
    if (token == NULL || token[0] == '\0' || out == NULL)
        return PW_EINVAL;
    unsigned char h[32];
    int r = sha256(token, strlen(token), h);
    if (r != 0)
        return r;
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = hx[h[i] >> 4];
        out[2 * i + 1] = hx[h[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

const char *pw_role_name(pw_role_t r)
{
    return r == PW_ROLE_READ ? "read" : r == PW_ROLE_ADMIN ? "admin" : "none";
}
