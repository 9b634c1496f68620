/* api.h: the query API's request model, shared by http.c (transport: TLS, HTTP/1.1 parsing
 * with http-parser, keep-alive, limits), api_v1.c (routing table, auth, /api/v1 handlers with
 * jansson) and metrics_prom.c (/metrics). The contract is docs/openapi.json (served at
 * /api/v1/openapi.json).
 *
 * The API reads the fleet through fleet.h, history from the store, results from the analysis
 * pass; it writes only through ingest (imports) and reaches agents through pw_api_agents_t,
 * which the wiring provides. Handlers run on the collector's loop thread and are synchronous,
 * except a command to an agent, whose answer arrives later (pw_http_command_result).
 * Everything here can run without sockets: tests, the fuzz target and the benchmark call
 * pw_api_handle directly.
 */
#ifndef PW_API_H
#define PW_API_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "analysis_run.h"
#include "buf.h"
#include "fleet.h"
#include "ingest.h"
#include "pooltag.h"
#include "remote_write.h"
#include "tokens.h"

#define PW_API_MAX_HEADER_BYTES   (16u << 10)  /* request line + headers */
#define PW_API_MAX_BODY_BYTES     (1u << 20)   /* body of any request but /import */
#define PW_API_MAX_IMPORT_BYTES   (256u << 20) /* body of POST /api/v1/import */
#define PW_API_REQUEST_TIMEOUT_MS 30000        /* end of the request head to the response */
#define PW_API_IMPORT_BYTES_PER_S (1u << 20)   /* an import's body gets 1 s more per MiB */
#define PW_API_HEAD_TIMEOUT_MS    10000        /* request line + headers complete (below) */
#define PW_API_IDLE_TIMEOUT_MS    60000        /* keep-alive connection without a request */
#define PW_API_MAX_CONNS          256          /* HTTP connections at once; more are refused */
/* Slots of PW_API_MAX_CONNS that only authenticated connections hold: a connection counts as
 * unauthenticated ("pre-auth") until one of its requests carries a valid bearer token. */
#define PW_API_RESERVED_CONNS 64
/* Pre-auth connections from one address at once. At this cap (or at the overall pre-auth
 * cap) a new connection replaces the oldest pre-auth one of that address (or anywhere) that is
 * older than PW_API_EVICT_MIN_AGE_MS; when none is, the new one is refused. */
#define PW_API_MAX_PREAUTH_PER_IP 16
#define PW_API_EVICT_MIN_AGE_MS   1000
#define PW_API_COMMAND_TIMEOUT_MS 10000 /* wait for an agent's CommandResult, then 504 */
#define PW_API_METRICS_TOP_N      20    /* per-host (tag, pool) series in /metrics */

/* HTTP methods the router knows (values of http-parser's enum http_method). */
typedef enum { PW_API_DELETE = 0, PW_API_GET = 1, PW_API_POST = 3 } pw_api_method_t;

/* One parsed request; every pointer borrowed for the call. */
typedef struct pw_api_req_s {
    int method;        /* http-parser's enum http_method */
    const char *path;  /* raw (still percent-encoded) path, NUL-terminated, no query */
    const char *query; /* raw query string without '?', "" when none */
    const char *auth;  /* value of the Authorization header, NULL when absent */
    const uint8_t *body;
    size_t body_len;
    uint64_t now_ms; /* wall clock, ms since the epoch */
} pw_api_req_t;

/* One response. body is owned (pw_buf_t, no ceiling beyond memory). */
typedef struct pw_api_resp_s {
    int status;               /* HTTP status */
    const char *content_type; /* static string */
    pw_buf_t body;
    int pending;     /* 1: a command was sent; the answer comes with cmd_id (or a timeout) */
    uint64_t cmd_id; /* with pending */
    char cmd_host[256];
    /* Set by the dashboard's static files (web.h); empty/NULL for API responses. */
    char etag[24];             /* ETag header value (quoted), "" for none */
    const char *cache_control; /* static string; NULL means "no-store" */
    const char *extra_headers; /* static "Name: value\r\n" lines, or NULL */
} pw_api_resp_t;

/* Counters of the API for /metrics. */
typedef struct pw_api_stats_s {
    uint64_t requests;                /* answered requests */
    uint64_t by_class[6];             /* by status class: [2] 2xx ... [5] 5xx */
    uint64_t unauthorized, forbidden; /* 401s and 403s */
    uint64_t handler_us_total;        /* time in handlers, microseconds */
    uint64_t connections, refused;    /* accepted / refused at the cap */
    uint64_t open_connections;
    uint64_t preauth_evicted; /* pre-auth connections closed for a newer one (PW_API_...) */
    uint64_t head_timeouts;   /* 408: request head not complete in time */
    uint64_t preauth_max_ip;  /* most pre-auth connections of one address open at once */
} pw_api_stats_t;

/* How the API reaches agents: provided by the wiring (the agents' listener). */
typedef struct pw_api_agents_s {
    /* Sends a command to host h's agent: 0, or PW_ECLOSED when it is not connected. */
    int (*send_command)(void *arg, const pw_host_t *h, const Poolwatch__V1__Command *cmd);
    size_t (*connections)(void *arg); /* open agent connections, for /metrics */
    void *arg;
} pw_api_agents_t;

/* The API's state: what it reads (borrowed), loaded tokens and tag descriptions. */
typedef struct pw_api_s {
    pw_ingest_t *ing;                 /* the fleet, the store and imports */
    const pw_analysis_run_t *an;      /* suspects, alerts, pressure; NULL = none */
    const pw_remote_write_t *rw;      /* remote write's counters for /metrics; NULL = off */
    const struct pw_fleetq_s *fleetq; /* the global fleet view ([fleet] query_url); NULL = off:
                                         /hosts, /tags, /leaks answer from it unless
                                         ?scope=local (api_global.c) */
    struct pw__api_gcache_s *gcache;  /* its answers, rendered once per snapshot (owned) */
    pw_api_agents_t agents;           /* send_command NULL = no agents (503) */
    pw_tokens_t *tokens;              /* owned; NULL = nobody is let in */
    pw_pooltag_t *pooltag;            /* owned; NULL = no descriptions */
    uint64_t next_cmd_id;
    pw_api_stats_t stats;
    int64_t cert_not_after_s; /* the server certificate's notAfter, Unix s (0 = unknown) */
    int64_t ca_not_after_s;   /* the earliest CA certificate's notAfter */
} pw_api_t;

/* A route: method, pattern with {name} segments, the role it needs, and its handler. */
typedef struct pw_api_route_s {
    int method;
    const char *pattern;
    pw_role_t role;
    int (*handler)(pw_api_t *api, const pw_api_req_t *req, char **params, pw_api_resp_t *resp);
} pw_api_route_t;

/* The routing table (static) and its length: for the OpenAPI consistency test. */
const pw_api_route_t *pw_api_routes(size_t *n);

/* Initialises resp (status 500, empty body). */
void pw_api_resp_init(pw_api_resp_t *resp);
/* Frees resp's body. */
void pw_api_resp_close(pw_api_resp_t *resp);

/* Routes, authenticates (401 without or with an unknown bearer token, 403 when the token's
 * role is too low) and runs the handler. Always fills resp (status, JSON body or the error
 * object {"error":{"code","message"}}): 404 for an unknown path, 405 for a known path with
 * another method, 400 for a bad parameter or body, 503 for a command to a disconnected host.
 * Returns resp->status. */
int pw_api_handle(pw_api_t *api, const pw_api_req_t *req, pw_api_resp_t *resp);

/* Fills resp with the error object. code is the short name ("ENOENT", "EINVAL" ...).
 * resp->body is then also a C string: a NUL follows its body.len bytes (not counted, not
 * sent), so a caller may strstr the message. Returns status. */
int pw_api_error(pw_api_resp_t *resp, int status, const char *code, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 4, 5)));

/* The JSON body of a command's answer ({"status","message","matches"}) into resp (200). */
void pw_api_command_result(pw_api_resp_t *resp, const Poolwatch__V1__CommandResult *res);

/* /metrics: the Prometheus text exposition of the fleet and the collector (metrics_prom.c).
 * Returns 0 or PW_ENOMEM. */
int pw_api_metrics(pw_api_t *api, pw_buf_t *out);

/* The embedded docs/openapi.json (generated at build time) and its length. */
extern const char pw_openapi_json[];
extern const size_t pw_openapi_json_len;

/* ---- http.c: the HTTPS listener of the API and the dashboard ---------------------------- */

typedef struct pw_http_opts_s {
    const char *listen;                         /* "IP:port" (port 0: any free one) */
    const char *ca_file, *cert_file, *key_file; /* server certificate (CA for client certs) */
    const char *tokens_file;                    /* NULL/"" = every request gets 401 */
    const char *pooltag_file;                   /* NULL/"" = no tag descriptions */
    uint64_t head_timeout_ms; /* a request head must be complete this long after its first
                                 byte, after the accept (TLS handshake included) for the
                                 first request, and after the previous response while the
                                 connection is unauthenticated; 0 = PW_API_HEAD_TIMEOUT_MS */
} pw_http_opts_t;

typedef struct pw_http_s pw_http_t;

/* Loads the tokens and tag descriptions, binds opts->listen and serves the API with `deps`
 * (its ing, an, rw, fleetq and agents are copied; tokens and pooltag are the listener's own).
 * Returns 0, PW_ECONFIG (listen not IP:port), a file's error or a libuv error; `d` says what.
 * On failure nothing is left open. */
int pw_http_start(uv_loop_t *loop, const pw_http_opts_t *opts, const pw_api_t *deps,
                  pw_http_t **out, pw_diag_t *d);

/* Closes every connection and the listener; the listener's state is freed in the close
 * callback (run the loop). Accepts NULL. */
void pw_http_stop(pw_http_t *s);

/* Reads the tokens file again (SIGHUP) and, when it parses, uses it for the next requests; on
 * an error the tokens in use stay and `d` says what and where. Returns the number of tokens
 * loaded (>= 0), or PW_EINVAL (no tokens file) or the loader's error. */
int64_t pw_http_reload_tokens(pw_http_t *s, pw_diag_t *d);

/* Makes a new TLS context from these files (SIGHUP: a renewed certificate) for connections
 * accepted from now on; open ones keep theirs. The certificates' expiry for /metrics follows.
 * Returns 0, or pw_tls_ctx_new's error with `d` saying which file: the context in use stays. */
int pw_http_reload_tls(pw_http_t *s, const char *ca_file, const char *cert_file,
                       const char *key_file, pw_diag_t *d);

/* An agent's CommandResult, handed to the request waiting for it (if any). */
void pw_http_command_result(pw_http_t *s, const pw_host_t *h,
                            const Poolwatch__V1__CommandResult *res);

/* The bound port (1..65535): how tests that listen on port 0 learn it. */
int pw_http_port(const pw_http_t *s);

/* The listener's API state (tests and /metrics use it). */
pw_api_t *pw_http_api(pw_http_t *s);

/* The global view's answers made once per snapshot (api_global.c): pass these as fleetq.h's
 * prepare hook (pw_fleetq_opts_t .prepare / .prepared_free), as the collector's wiring does.
 * pw_api_global_prepare reads `s` only and touches no other state, so it runs on the worker
 * thread that parsed s; it returns what it made (kept with s as s->prepared, owned by it), or
 * NULL when out of memory (the API then makes it at the snapshot's first request).
 * pw_api_global_prepared_free frees that value; it accepts NULL. */
struct pw_fleetq_snap_s;
void *pw_api_global_prepare(const struct pw_fleetq_snap_s *s);
void pw_api_global_prepared_free(void *prepared);

/* Reason phrase of an HTTP status ("OK", "Not Found" ...). */
const char *pw_api_reason(int status);

#endif /* PW_API_H */
