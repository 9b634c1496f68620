/* cli.h: declarations shared by the files of the `poolwatch` CLI (the cli directory) and its tests.
 *
 * Every command is `int pw_cmd_<name>(pw_cli_t *cli)` returning an exit code (PW_EXIT_*) and
 * writing to cli->out / cli->err, so tests run commands in-process on memory streams. The
 * formatting of each listing is a separate function from JSON to text, tested on canned
 * server responses.
 */
#ifndef PW_CLI_H
#define PW_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "client.h"
#include "error.h"
#include "poolmon_text.h"
#include "slabinfo_text.h"

/* Exit codes (docs/cli.md, `poolwatch --help`). */
#define PW_EXIT_OK       0 /* success */
#define PW_EXIT_SERVER   1 /* server or network error (connect, TLS, 5xx, bad response) */
#define PW_EXIT_USAGE    2 /* usage or input error (bad option, unreadable/invalid file, 400) */
#define PW_EXIT_NOTFOUND 3 /* host, tag or resource not found (404) */
#define PW_EXIT_AUTH     4 /* authentication or authorisation refused (401, 403) */

typedef struct pw_cli_s {
    const char *url;   /* --url or POOLWATCH_URL */
    const char *token; /* --token or POOLWATCH_TOKEN */
    const char *ca;    /* --ca or POOLWATCH_CA */
    int json;          /* --json: print the server's JSON */
    int compact;       /* --compact: with --json, one line instead of indented */
    FILE *out;
    FILE *err;
    int argc; /* the command's arguments, argv[0] = the command name */
    char **argv;
    /* The API's parameter names and the options that set them, in pairs ending with NULL
     * ({"nonpaged_limit_bytes", "--nonpaged-limit", ..., NULL}; NULL: none): a server error's
     * message names the option the user typed (pw_cli_call). */
    const char *const *param_names;
    int timeout_ms; /* the client's connect/read/write timeout for pw_cli_call, 0 = the default
                       (PW_CLIENT_TIMEOUT_MS) */
} pw_cli_t;

/* Global option handling and dispatch (cli.c). `env` supplies the environment (getenv in
 * main; a table in tests): returns the value of a name or NULL. Returns the exit code. */
typedef const char *(*pw_cli_getenv_fn)(const char *name);
int pw_cli_run(int argc, char **argv, pw_cli_getenv_fn env, FILE *out, FILE *err);

/* Usage text of `poolwatch --help`. */
void pw_cli_usage(FILE *f);

/* Builds a client from cli->url/token/ca. Returns 0, or PW_EXIT_USAGE after printing why. */
int pw_cli_client(pw_cli_t *cli, pw_client_t *client);

/* Runs one request and decodes a JSON body. On success (2xx with a JSON body) returns 0 and
 * sets *root (caller json_decref's it). Otherwise prints "poolwatch: ..." with the server's
 * error code and message (its parameter names as cli->param_names' options) to cli->err and
 * returns the exit code (PW_EXIT_*). */
int pw_cli_call(pw_cli_t *cli, const char *method, const char *path, const char *ctype,
                const void *body, size_t body_len, pw_client_progress_cb progress, void *arg,
                json_t **root);

/* Checks that every real number in `root` has a magnitude below 2^64, the range of the
 * API's counts, byte sizes and millisecond times (a double such as 8.7e80 has no uint64
 * value). Returns 0, or PW_EPARSE with the first offending value in *bad (may be NULL) and
 * its JSON path ("hosts[0].nonpaged_bytes", cut to where_size; where may be NULL). `root` is
 * not modified (non-const only for jansson's object iteration). */
int pw_cli_json_check_numbers(json_t *root, char *where, size_t where_size, double *bad);

/* `import`'s: its options and the API parameters they set, for cli->param_names. */
extern const char *const pw_cli_import_params[];

/* `msg` into out (NUL-terminated, cut at `size`) with each whole word that is an API parameter
 * of `names` (pairs of parameter and option, ending with NULL; may be NULL) replaced by its
 * option, quotes around it dropped: "parameter 'nonpaged_limit_bytes' must be above 0" ->
 * "parameter --nonpaged-limit must be above 0". A word is a run of letters, digits and '_'.
 * Returns out. */
const char *pw_cli_param_words(const char *msg, const char *const *names, char *out, size_t size);

/* Exit code for an HTTP status: 2xx 0, 400/413/422 2, 404 3, 401/403 4, others 1. */
int pw_cli_exit_for_status(int status);

/* Prints `root` per --json / --compact, with a final newline. */
void pw_cli_print_json(pw_cli_t *cli, const json_t *root);

/* Option helper: if argv[*i] is `--name VALUE` or `--name=VALUE`, stores VALUE, advances *i
 * past it and returns 1; returns -1 (after printing) when the value is missing; else 0. */
int pw_cli_opt(pw_cli_t *cli, int argc, char **argv, int *i, const char *name, const char **value);

/* The choice in `choices` (NULL-terminated) nearest to `word` within two single-character
 * edits (insert, delete, substitute, or swap of neighbours: "hots" -> "hosts", "--jsn" ->
 * "--json"), or NULL when none is that close. Ties go to the earlier choice. */
const char *pw_cli_closest(const char *word, const char *const *choices);

/* Says what is wrong with a command's arguments, then prints its usage line, on cli->err, and
 * returns PW_EXIT_USAGE. `arg` is the argument at fault: one starting with '-' is reported as
 * an unknown option (with the nearest of `options`, NULL-terminated, when close: see
 * pw_cli_closest), another as an unexpected argument; arg NULL means something is missing and
 * `missing` says what ("HOST", "TAG"; NULL: only the usage line). `usage` is the line without
 * "usage: ". */
int pw_cli_bad_args(pw_cli_t *cli, const char *arg, const char *missing, const char *const *options,
                    const char *usage);

/* Durations: "500ms", "30s", "15m", "2h", "1d"; a bare number is seconds. Returns 0 and
 * *ms, or PW_EINVAL. */
int pw_cli_parse_duration(const char *s, uint64_t *ms);

/* The time forms pw_cli_parse_time takes, for "bad --start" / "bad --from" messages. */
#define PW_CLI_TIME_FORMS                                                                          \
    "a time: now, -2h for two hours ago, 2024-03-14T10:00:00Z or 2024-03-14 10:00:00 (UTC), or "   \
    "ms since the epoch"

/* Times: ms since the epoch ("1764400000000"), "now", "-2h" (relative to now_ms), or ISO-8601
 * UTC "2024-03-14T10:00:00Z" / "2024-03-14 10:00:00". Returns 0 and *ms, or PW_EINVAL. */
int pw_cli_parse_time(const char *s, uint64_t now_ms, uint64_t *ms);

/* "2024-03-14 10:15:00Z" for ms since the epoch, into out (>= 24 bytes). */
void pw_cli_format_time(uint64_t ms, char *out, size_t size);

/* Fits `s` into exactly `width` display columns (UTF-8 characters; `width` >= 1) in out:
 * padded with spaces on the right (left-aligned) or on the left (`right` 1, for numbers);
 * a longer text is cut to width - 1 characters and "…" so that the columns after it stay
 * aligned. Returns out. */
const char *pw_cli_fit(const char *s, int width, int right, char *out, size_t size);

/* "1 screen" / "2 screens": `n` and the noun, plural unless n is 1, into out. */
const char *pw_cli_count(uint64_t n, const char *noun, char *out, size_t size);

/* Bytes as "812 B", "91.9 KiB", "1.5 MiB", ... into out. */
void pw_cli_format_bytes(uint64_t bytes, char *out, size_t size);

/* ---- parse (cmd_parse.c) ------------------------------------------------------------------ */

/* The stable `poolwatch parse --json` documents (README "poolwatch parse --json"). Return a
 * new reference, NULL on allocation failure. */
json_t *pw_parse_poolmon_json(const pw_poolmon_doc_t *doc);
json_t *pw_parse_slabinfo_json(const pw_slabinfo_doc_t *doc);

/* Human-readable tables. */
void pw_parse_poolmon_print(const pw_poolmon_doc_t *doc, FILE *out);

/* Prints one warning per problem of `doc` (the first 20, then how many more) on `err` as
 * `FILE:LINE: warning: MESSAGE: screen N of M is incomplete` followed by `fate` (what becomes
 * of the screen; "" for nothing). */
void pw_poolmon_problems_print(FILE *err, const char *file, const pw_poolmon_doc_t *doc,
                               const char *fate);
void pw_parse_slabinfo_print(const pw_slabinfo_doc_t *doc, FILE *out);

/* Reads a whole file (at most max bytes) into a pw_malloc'd buffer. Returns 0, or a negative
 * code with a message in diag. */
int pw_cli_read_file(const char *path, size_t max, char **data, size_t *len, pw_diag_t *diag);

/* When the `len` bytes at `data` (borrowed), read from `file`, are nothing but spaces, tabs and
 * line ends, says so on cli->err ("FILE: the file is empty (only blank lines): no poolmon screen
 * or /proc/slabinfo dump in it"), the one message of parse and import for an empty file, and
 * returns 1; else returns 0 and prints nothing. */
int pw_cli_say_empty(pw_cli_t *cli, const char *file, const char *data, size_t len);

/* ---- listings (cmd_query.c): JSON of each endpoint to text. Return 0, or PW_EPARSE when the
 * document does not have the endpoint's shape (nothing printed then). ---------------------- */
int pw_fmt_hosts(const json_t *root, FILE *out);
int pw_fmt_tags(const json_t *root, int fleet, FILE *out);
int pw_fmt_tag(const json_t *root, FILE *out);
int pw_fmt_leaks(const json_t *root, FILE *out);
int pw_fmt_alerts(const json_t *root, FILE *out);
int pw_fmt_series(const json_t *root, FILE *out);
/* `events`: GET /hosts/{host}/events as a table: time, provider and event id with its meaning,
 * the pool that was empty, the tags a 2004 names with their bytes. 0 or PW_EPARSE. */
int pw_fmt_events(const json_t *root, FILE *out);
/* pooltag.txt's answer and, when `find` is not NULL, the agent's find_tag result; returns 1
 * (after printing the agent's message) when the agent could not search (status < 0). */
int pw_fmt_lookup(const json_t *pooltag, const json_t *find, FILE *out);
/* `bigpool`: the agent's answer to a big_pool command (POST /hosts/{host}/commands) for HOST:
 * the summary line and the non-empty size buckets. Returns 0, 1 when the agent could not take
 * the snapshot (its message is printed), or PW_EPARSE. */
int pw_fmt_bigpool(const char *host, const json_t *res, FILE *out);

/* ---- top (cmd_top.c) ---------------------------------------------------------------------- */

typedef enum {
    PW_TOP_SORT_TAG = 0,
    PW_TOP_SORT_ALLOCS,
    PW_TOP_SORT_FREES,
    PW_TOP_SORT_DIFF,
    PW_TOP_SORT_BYTES,
    PW_TOP_SORT_PER_ALLOC,
    PW_TOP_SORT_HELD /* held_bytes: a Linux slab cache's slabs (C, slabtop's cache size) */
} pw_top_sort_t;

typedef enum { PW_TOP_POOL_BOTH = 0, PW_TOP_POOL_NONPAGED, PW_TOP_POOL_PAGED } pw_top_pools_t;

typedef struct pw_top_row_s {
    char tag[PW_TAG_MAX * 4 + 1]; /* printable form (pw_tag_format), as the API sends it */
    int pool;                     /* pw_pool_t */
    int64_t session;              /* a session-pool row's session; -1: none or all sessions */
    uint64_t allocs, frees, diff, bytes, per_alloc;
    int64_t allocs_change, frees_change, diff_change, bytes_change;
    /* A Linux slab cache's slabs (num_slabs x pagesperslab x page size) and their change;
     * has_held 0 when the API gives null (hosts that do not report them) */
    int has_held;
    uint64_t held_bytes;
    int64_t held_bytes_change;
    char driver[64]; /* the API's "driver" (pooltag.txt's mapping, cut to fit); "" when null */
} pw_top_row_t;

/* A leak suspect's latest big-pool snapshot (GET /api/v1/leaks?host=H, its big_pool): how the
 * tag's bytes are made up, a few large blocks or many small allocations. */
typedef struct pw_top_bigpool_s {
    char tag[PW_TAG_MAX * 4 + 1]; /* the suspect's printable tag */
    int pool;                     /* pw_pool_t of the suspect */
    uint64_t taken_ms;            /* the agent's clock, ms since the epoch */
    uint64_t count, bytes, largest_bytes, smallest_bytes; /* blocks of a page or more */
} pw_top_bigpool_t;

#define PW_TOP_BIGPOOL_MAX 4 /* suspects' snapshots shown, in the API's order (most urgent) */

/* One pool's limit, level and time to exhaustion (GET /api/v1/hosts/{host}): what the Limit
 * line of top says. Index 0 nonpaged, 1 paged. */
typedef struct pw_top_limits_s {
    int have;                /* the host document came: the Limit line is shown */
    uint64_t used[2];        /* bytes in use (the host's nonpaged_bytes / paged_bytes) */
    uint64_t limit[2];       /* bytes; 0 = unknown (the API's null) */
    char source[2][16];      /* reported, computed, registry, configured; "" when unknown */
    char level[2][12];       /* ok, warn, critical, unknown */
    uint64_t eta_ms[2];      /* when the pool runs out, ms since the epoch; 0 = no ETA */
    uint64_t ran_out_ms[2];  /* the pool is at or over its limit since then; 0 = not */
    char basis[2][8];        /* how the ETA is known: "pool", "leak", "ran_out"; "" = none */
    char note[2][192];       /* how, or why there is none (PREFIX_eta_note); "" from an older
                                collector */
    uint64_t range_ms[2][2]; /* a leak-based ETA's range (soon, late); 0 = none / never */
    char detail[2][96];      /* the rule of a computed limit ("Windows Server 2003 x86 with
                                /3GB: 128 MB"); "" when none */
    int loading;             /* loading_history: level and ETA are of an old sample, not said */
} pw_top_limits_t;

typedef struct pw_top_table_s {
    char host[256];
    uint64_t timestamp_ms;
    int has_prev; /* prev_timestamp_ms not null: the changes are meaningful */
    /* totals in bytes, 0 = not given */
    uint64_t physical_memory, available, commit, commit_limit, commit_peak, paged, nonpaged;
    /* the host's poolwatch agent itself (totals.agent; has_agent 0 when the API gives null) */
    int has_agent;
    uint64_t agent_rss, agent_cpu_ms, agent_handles;
    pw_top_row_t *rows; /* pw_malloc'd */
    size_t n_rows;
    int has_held; /* a row has held bytes: the Held column is shown (Linux hosts) */
    /* the host's suspects' big-pool snapshots (pw_top_bigpool_from_json), one line each */
    pw_top_bigpool_t big[PW_TOP_BIGPOOL_MAX];
    size_t n_big;
    size_t total_rows;
    pw_top_limits_t limits; /* pw_top_limits_from_json; limits.have 0: no Limit line */
} pw_top_table_t;

typedef struct pw_top_view_s {
    pw_top_sort_t sort;
    int by_change; /* S: sort by the change of the sort column */
    int reverse;   /* pressing the sort key again reverses its default order */
    pw_top_pools_t pools;
    int totals;        /* E */
    int highlight;     /* L */
    char include[256]; /* comma-separated * ? patterns, "" = all */
    char exclude[256];
    char note[256];  /* status note (live mode refused, last error), "" = none */
    int help;        /* ?: the key help in place of the table */
    int64_t session; /* N: session N's session-pool rows only (poolmon /sN); PW_TOP_SESSION_* */
    uint32_t sessions[32]; /* sessions seen in the last table of every session (N cycles them) */
    size_t n_sessions;
} pw_top_view_t;

#define PW_TOP_SESSION_EVERY (-1) /* every row: system pools and each session's rows */
#define PW_TOP_SESSION_ALL   (-2) /* session-pool rows of all sessions (poolmon /s) */

typedef struct pw_top_lines_s {
    char **text;         /* n lines, each pw_malloc'd, no newline */
    unsigned char *attr; /* per line: PW_TOP_ATTR_* */
    size_t n;
} pw_top_lines_t;

#define PW_TOP_ATTR_NONE      0
#define PW_TOP_ATTR_HEADER    1 /* the column header: shown reversed */
#define PW_TOP_ATTR_HIGHLIGHT 2 /* a changed row with L on: shown bold */

/* The default view: sort by bytes descending, both pools, no totals, no highlight. */
void pw_top_view_init(pw_top_view_t *v);

/* Decodes GET /hosts/{host}/pool. Returns 0 or PW_EPARSE (diag says which key). */
int pw_top_table_from_json(const json_t *root, pw_top_table_t *t, pw_diag_t *diag);
void pw_top_table_close(pw_top_table_t *t);

/* Takes the big-pool snapshots of the suspects in `leaks` (GET /api/v1/leaks?host=H: suspects
 * whose big_pool is an object; null ones are skipped) into t->big, the first
 * PW_TOP_BIGPOOL_MAX. Returns 0 or PW_EPARSE (no suspects array, a snapshot with a bad
 * number: t->n_big is then 0). */
int pw_top_bigpool_from_json(const json_t *leaks, pw_top_table_t *t, pw_diag_t *diag);

/* Takes the pools' limits, their sources, levels and ETAs from `host` (GET /api/v1/hosts/{host})
 * into t->limits. Returns 0 or PW_EPARSE (not an object, a bad number: t->limits.have is then
 * 0 and top shows no Limit line). */
int pw_top_limits_from_json(const json_t *host, pw_top_table_t *t, pw_diag_t *diag);

/* The request path for the view: /api/v1/hosts/HOST/pool?sort=..&by_change=..&order=..
 * &pool=..[&session=N|all][&include=..][&exclude=..]. Returns 0 or PW_ETOOBIG. */
int pw_top_query(const pw_top_view_t *v, const char *host, char *out, size_t size);

/* Applies a key (poolmon's letters, either case; ? toggles the key help). Returns
 * PW_TOP_KEY_* . */
#define PW_TOP_KEY_NONE    0
#define PW_TOP_KEY_CHANGED 1 /* view changed: refetch/redraw */
#define PW_TOP_KEY_QUIT    2
#define PW_TOP_KEY_INCLUDE 3 /* ask for include patterns */
#define PW_TOP_KEY_EXCLUDE 4 /* ask for exclude patterns */
#define PW_TOP_KEY_SESSION 5 /* N: call pw_top_next_session, then refetch */
int pw_top_key(pw_top_view_t *v, int key);

/* N: the next session view after v->session: every row -> all sessions -> each session seen
 * (ascending, the sessions of `t` when it is a table of every session) -> every row again. */
void pw_top_next_session(pw_top_view_t *v, const pw_top_table_t *t);

/* Does `tag` match one of the comma-separated patterns? The rule of common/tagpat.h: `*`, `?`,
 * case-sensitive, the padding spaces of a short tag optional. */
int pw_top_match(const char *patterns, const char *tag);

/* Renders the screen for a `width` x `height` terminal: header lines, status, column header,
 * optional totals, rows (filtered by pools and patterns, sorted per the view) cut to fit.
 * Returns 0 or PW_ENOMEM; free with pw_top_lines_close. */
int pw_top_render(const pw_top_table_t *t, const pw_top_view_t *v, int width, int height,
                  pw_top_lines_t *out);
void pw_top_lines_close(pw_top_lines_t *l);

/* ---- commands ----------------------------------------------------------------------------- */
int pw_cmd_parse(pw_cli_t *cli);
int pw_cmd_hosts(pw_cli_t *cli);
int pw_cmd_tags(pw_cli_t *cli);
int pw_cmd_leaks(pw_cli_t *cli);
int pw_cmd_alerts(pw_cli_t *cli);
int pw_cmd_series(pw_cli_t *cli);
int pw_cmd_events(pw_cli_t *cli);
int pw_cmd_lookup(pw_cli_t *cli);
int pw_cmd_bigpool(pw_cli_t *cli);
int pw_cmd_top(pw_cli_t *cli);
int pw_cmd_import(pw_cli_t *cli);
int pw_cmd_host(pw_cli_t *cli);

#endif /* PW_CLI_H */
