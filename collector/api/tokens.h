/* tokens.h: bearer tokens of the query API.
 *
 * The tokens file holds one token per line, never the token itself but its SHA-256:
 *
 *     # comment lines and blank lines are ignored
 *     <64 lowercase or uppercase hex digits: SHA-256 of the token> <role> <name>
 *
 * role is `read` (GET endpoints and /metrics) or `admin` (everything). name (1..63 printable
 * bytes, no spaces) says whose token it is, for logs. Fields are separated by spaces or tabs;
 * CRLF line ends are accepted. A request's bearer token is hashed with SHA-256 (OpenSSL EVP)
 * and compared with every entry in constant time (CRYPTO_memcmp, and no early exit), so the
 * time taken says nothing about how close a guess was. */
#ifndef PW_TOKENS_H
#define PW_TOKENS_H

#include <stddef.h>

#include "error.h"

typedef enum {
    PW_ROLE_NONE = 0, /* unknown or missing token */
    PW_ROLE_READ = 1,
    PW_ROLE_ADMIN = 2
} pw_role_t;

#define PW_TOKENS_MAX_FILE  (1u << 20) /* bytes of a tokens file */
#define PW_TOKENS_MAX_LINE  512        /* bytes of one line */
#define PW_TOKENS_MAX_NAME  64         /* name buffer incl. NUL */
#define PW_TOKENS_MAX_TOKEN 4096       /* bytes of a bearer token accepted for hashing */

typedef struct pw_tokens_s pw_tokens_t;

/* Parses buf[0..len) into a new table *out (free with pw_tokens_free). Returns 0; PW_EPARSE
 * (a line that is not `hash role name`: bad hex, wrong length, unknown role, missing or bad
 * name, NUL byte) with the line and field in `d` and d->msg "line N: reason"; PW_ETOOBIG (over
 * PW_TOKENS_MAX_FILE or a line over PW_TOKENS_MAX_LINE); PW_EINVAL (NULL); PW_ENOMEM. An empty file
 * is a valid table that accepts nothing. */
int pw_tokens_parse(const char *buf, size_t len, pw_tokens_t **out, pw_diag_t *d);

/* Reads the file at `path` and parses it as above, d->msg then "PATH:N: reason" (or "PATH:
 * reason" for the whole file). Also returns negated errno values of open/read (PW_ENOENT,
 * PW_EACCES, PW_EIO) with the path in `d`. */
int pw_tokens_load(const char *path, pw_tokens_t **out, pw_diag_t *d);

/* Whether `name` (len bytes, need not be NUL-terminated) may be a tokens-file name: 1 to
 * PW_TOKENS_MAX_NAME - 1 bytes of printable ASCII 0x21..0x7e (no space, tab or control byte).
 * Returns NULL when it may, else a static reason ("a name of 1..63 bytes is required", "the
 * name must be printable ASCII without spaces"); *at (may be NULL) gets the offset of the first
 * bad byte (0 for a bad length). The rule pw_tokens_parse applies, for tools that write lines. */
const char *pw_tokens_name_error(const char *name, size_t len, size_t *at);

/* Frees the table. Accepts NULL. */
void pw_tokens_free(pw_tokens_t *t);

/* Number of entries. */
size_t pw_tokens_count(const pw_tokens_t *t);

/* The role of bearer token `token` (len bytes, not NUL-terminated); PW_ROLE_NONE when it is
 * not in the table, empty, longer than PW_TOKENS_MAX_TOKEN, or t is NULL. *name (may be NULL)
 * gets the entry's name (borrowed from t) or NULL. */
pw_role_t pw_tokens_check(const pw_tokens_t *t, const char *token, size_t len, const char **name);

/* Writes the lowercase hex SHA-256 of the NUL-terminated `token` into out (64 digits + NUL):
 * what a tokens file line starts with. Returns 0, PW_EINVAL (NULL or empty token) or PW_ETLS
 * (OpenSSL failure). */
int pw_tokens_hash(const char *token, char out[65]);

/* "read", "admin" or "none". */
const char *pw_role_name(pw_role_t r);

#endif /* PW_TOKENS_H */
