/* cli.c: global options, dispatch, the request helper and small formatting helpers. */
#include "cli.h"
#include "clock.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "daemon.h"

typedef struct command_s {
    const char *name;
    int (*run)(pw_cli_t *cli);
    /* `poolwatch help NAME` and `poolwatch NAME --help`: usage, then what it does (the long
     * form is docs/cli.md) */
    const char *help;
} command_t;

static const command_t commands[] = {
    {"parse", pw_cmd_parse,
     "usage: poolwatch parse FILE [--format auto|poolmon|slabinfo] [--json]\n"
     "Shows what a saved poolmon capture or slabinfo dump holds (header fields and rows), with\n"
     "notes for rows whose Per Alloc or Diff disagree with the recomputed value. No server.\n"},
    {"hosts", pw_cmd_hosts,
     "usage: poolwatch hosts [--json]\n"
     "Hosts by nonpaged pressure: OS, connected, nonpaged used / limit / ratio / level / ETA,\n"
     "paged, leak suspects, last seen. An unknown limit shows '-' and level 'unknown'.\n"},
    {"tags", pw_cmd_tags,
     "usage: poolwatch tags [TAG] [--fleet] [--type paged|nonpaged|session] [--limit N]\n"
     "Per-tag fleet aggregates; --fleet the distribution over hosts; with TAG, the tag on each\n"
     "host with its robust z score.\n"},
    {"leaks", pw_cmd_leaks,
     "usage: poolwatch leaks [--host NAME] [--limit N] [--json]\n"
     "Leak suspects by urgency: those whose pool is critical first, then warn, then the rest;\n"
     "within a level the nearest time to exhaustion first, then the score. Each with growth per\n"
     "hour, share of the host's growth, first and current bytes, the pool's limit, its source,\n"
     "level and ETA, driver / description. --host: one host's; --limit: the first N (server\n"
     "default 500).\n"},
    {"alerts", pw_cmd_alerts,
     "usage: poolwatch alerts [--json]\n"
     "Alerts: state, severity, name, host, tag, since, summary.\n"},
    {"series", pw_cmd_series,
     "usage: poolwatch series HOST TAG [--pool P] [--from T] [--to T] [--step D]\n"
     "A tag's history on a host, one line per point; the header says which level (raw, 1m,\n"
     "15m) answered. Quote tags with spaces: poolwatch series HOST01 'Io  '.\n"},
    {"events", pw_cmd_events,
     "usage: poolwatch events HOST [--from T] [--to T] [--limit N] [--json]\n"
     "The Windows System-log events of HOST that say a pool ran out: srv 2019 (nonpaged pool\n"
     "empty), srv 2020 (paged pool empty) and Resource-Exhaustion-Detector 2004 (low virtual\n"
     "memory, with the pool tags it names and their bytes), oldest first; --limit: the newest\n"
     "N (server default 1000). Sent by the host's agent, or imported with poolwatch import.\n"},
    {"lookup", pw_cmd_lookup,
     "usage: poolwatch lookup TAG [--host HOST] [--json]\n"
     "The pooltag.txt driver and description of TAG; with --host (admin token), the driver\n"
     "files on that host's agent that contain the tag.\n"},
    {"bigpool", pw_cmd_bigpool,
     "usage: poolwatch bigpool HOST TAG [--json]\n"
     "How TAG's large blocks on HOST are made up (admin token; Windows agents): blocks, bytes,\n"
     "nonpaged share, largest and smallest, blocks per size, from the kernel's big-pool table.\n"},
    {"top", pw_cmd_top,
     "usage: poolwatch top HOST [--once] [--no-live]\n"
     "poolmon's screen for a remote host, refreshed every second; press ? for the keys.\n"
     "--once prints one screen as text; --no-live skips asking the agent for live mode.\n"
     "--json prints one snapshot as the API's pool table (GET /api/v1/hosts/HOST/pool).\n"},
    {"import", pw_cmd_import,
     "usage: poolwatch import FILE... --host NAME [--interval 15m] [--start T]\n"
     "                 [--nonpaged-limit SIZE] [--paged-limit SIZE] [--os TEXT]\n"
     "Uploads saved poolmon captures as NAME's history (admin token); also a Linux host's saved\n"
     "/proc/slabinfo and /proc/allocinfo dumps (one file or concatenated, a time line before\n"
     "each), a support bundle's directory (sosreport: proc/slabinfo, proc/allocinfo, the date\n"
     "it ran), and System-log pool events exported as XML (wevtutil qe System ... /f:xml:\n"
     "srv 2019/2020, Resource-Exhaustion-Detector 2004). --nonpaged-limit and\n"
     "--paged-limit give the host its pool limits (128MB, 2GB); they count as Windows writes\n"
     "pool limits, in powers of 1024: 128MB = 128MiB = 134217728 bytes. --os derives the\n"
     "others from the Windows rule table (\"Windows Server 2003 x86 /3GB\" -> 128 MB\n"
     "nonpaged; boot.ini's /USERVA=2800 counts as /3GB).\n"},
    {"host", pw_cmd_host,
     "usage: poolwatch host rm HOST [--keep-history]\n"
     "       poolwatch host rename OLD NEW\n"
     "rm retires a host (admin token; its agent must be stopped): gone from the fleet,\n"
     "/metrics, remote write and alerts; its history is deleted, or kept out of sight with\n"
     "--keep-history. An agent or import under the name later starts a new host. rename\n"
     "renames an imported host with its history.\n"},
};

static const command_t *find_command(const char *name)
{
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (strcmp(name, commands[k].name) == 0)
            return &commands[k];
    return NULL;
}

/* "unknown command 'X' (did you mean 'Y'?)" on err. */
static void unknown_command(FILE *err, const char *word)
{
    const char *names[sizeof(commands) / sizeof(commands[0]) + 2];
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        names[k] = commands[k].name;
    names[sizeof(commands) / sizeof(commands[0])] = "help";
    names[sizeof(commands) / sizeof(commands[0]) + 1] = NULL;
    const char *near = pw_cli_closest(word, names);
    if (near != NULL)
        fprintf(err, "poolwatch: unknown command '%s' (did you mean '%s'?)\n", word, near);
    else
        fprintf(err, "poolwatch: unknown command '%s'\n", word);
}

/* `poolwatch help [COMMAND]` and `COMMAND --help`: the command's help, or the usage. */
static int help(FILE *out, FILE *err, const char *word)
{
    if (word == NULL || strcmp(word, "help") == 0) {
        pw_cli_usage(out);
        return PW_EXIT_OK;
    }
    const command_t *c = find_command(word);
    if (c == NULL) {
        unknown_command(err, word);
        pw_cli_usage(err);
        return PW_EXIT_USAGE;
    }
    fputs(c->help, out);
    fprintf(out, "Global options: --url, --token, --ca, --json; see poolwatch --help and "
                 "docs/cli.md.\n");
    return PW_EXIT_OK;
}

void pw_cli_usage(FILE *f)
{
    fputs("usage: poolwatch [--url URL] [--token TOKEN] [--ca FILE] [--json [--compact]] COMMAND "
          "...\n"
          "       poolwatch help COMMAND | COMMAND --help | --version | -V\n"
          "\n"
          "Commands:\n"
          "  parse FILE [--format auto|poolmon|slabinfo]   show what a saved capture holds\n"
          "  hosts                                         hosts by nonpaged pressure\n"
          "  tags [TAG] [--fleet] [--type T] [--limit N]   per-tag fleet aggregates\n"
          "  leaks [--host NAME] [--limit N]               leak suspects, most urgent first\n"
          "  alerts                                        alerts (pending, firing, resolved)\n"
          "  series HOST TAG [--pool P] [--from T] [--to T] [--step D]\n"
          "                                                a tag's history on a host\n"
          "  events HOST [--from T] [--to T] [--limit N]   a host's pool-empty events (srv\n"
          "                                                2019/2020, 2004 with named tags)\n"
          "  lookup TAG [--host HOST]                      pooltag description; with --host,\n"
          "                                                ask that agent which drivers hold TAG\n"
          "  bigpool HOST TAG                              a tag's big-pool blocks on a host\n"
          "  top HOST [--once] [--no-live]                 poolmon-like live screen (--once:\n"
          "                                                one screen as text)\n"
          "  import FILE... --host NAME [--interval 15m] [--start T]\n"
          "         [--nonpaged-limit SIZE] [--paged-limit SIZE] [--os TEXT]\n"
          "                                                upload saved poolmon captures\n"
          "  host rm HOST [--keep-history]                 retire a host (admin)\n"
          "  host rename OLD NEW                           rename an imported host (admin)\n"
          "\n"
          "Connection: --url (POOLWATCH_URL, e.g. https://collector:7443), --token\n"
          "(POOLWATCH_TOKEN, bearer token), --ca (POOLWATCH_CA, PEM file to verify the server;\n"
          "default: the system store). --json prints the server's JSON (indented; --compact: one\n"
          "line) for every listing; with parse, the documented parse JSON.\n"
          "Times: ms since the epoch, now, -2h, or 2024-03-14T10:00:00Z. Durations: 500ms 30s 15m\n"
          "2h 1d (a bare number is seconds).\n"
          "\n"
          "Exit codes: 0 ok, 1 server or network error, 2 usage or input error, 3 not found,\n"
          "4 authentication or authorisation refused.\n",
          f);
}

int pw_cli_opt(pw_cli_t *cli, int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(cli->err, "poolwatch: %s needs a value\n", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

/* Optimal string alignment distance, capped: returns 3 as soon as it is certainly above 2. */
static int edits(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32 || (la > lb ? la - lb : lb - la) > 2)
        return 3;
    int d[33][33];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + c < v)
                v = d[i - 1][j - 1] + c;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb] < 3 ? d[la][lb] : 3;
}

const char *pw_cli_closest(const char *word, const char *const *choices)
{
    const char *best = NULL;
    /* close: one edit for a word of up to 4 characters ("tpo", "hots"), two for longer ones;
     * "foo" is not a misspelt "top" */
    int best_d = strlen(word) <= 4 ? 2 : 3;
    for (size_t k = 0; choices != NULL && choices[k] != NULL; k++) {
        int e = edits(word, choices[k]);
        if (e < best_d) {
            best_d = e;
            best = choices[k];
        }
    }
    return best;
}

int pw_cli_bad_args(pw_cli_t *cli, const char *arg, const char *missing, const char *const *options,
                    const char *usage)
{
    const char *cmd = cli->argc > 0 ? cli->argv[0] : "";
    if (arg != NULL && arg[0] == '-' && arg[1] != '\0') {
        /* "--jsn=x" is judged by its name. */
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
        static const char *const global[] = {"--json", "--compact", "--url", "--token",
                                             "--ca",   "--help",    NULL};
        const char *near = pw_cli_closest(name, options);
        if (near == NULL)
            near = pw_cli_closest(name, global);
        if (near != NULL)
            fprintf(cli->err, "poolwatch %s: unknown option '%s' (did you mean '%s'?)\n", cmd, arg,
                    near);
        else
            fprintf(cli->err, "poolwatch %s: unknown option '%s'\n", cmd, arg);
    } else if (arg != NULL) {
        fprintf(cli->err, "poolwatch %s: unexpected argument '%s'\n", cmd, arg);
    } else if (missing != NULL) {
        fprintf(cli->err, "poolwatch %s: missing %s\n", cmd, missing);
    }
    fprintf(cli->err, "usage: %s\n", usage);
    return PW_EXIT_USAGE;
}

int pw_cli_run(int argc, char **argv, pw_cli_getenv_fn env, FILE *out, FILE *err)
{
    pw_cli_t cli;
    memset(&cli, 0, sizeof(cli));
    cli.out = out;
    cli.err = err;
    cli.url = env("POOLWATCH_URL");
    cli.token = env("POOLWATCH_TOKEN");
    cli.ca = env("POOLWATCH_CA");
    if (cli.ca != NULL && cli.ca[0] == '\0') /* POOLWATCH_CA= (set empty): the system store */
        cli.ca = NULL;
    /* Global options may appear anywhere; the rest (command and its options) is kept. */
    char **rest = pw_calloc((size_t)argc + 1, sizeof(char *));
    if (rest == NULL) {
        fputs("poolwatch: out of memory\n", err);
        return PW_EXIT_SERVER;
    }
    int n = 0, only_args = 0, want_help = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (only_args) {
            rest[n++] = argv[i];
        } else if (strcmp(argv[i], "--") == 0) {
            only_args = 1;
            rest[n++] = argv[i];
        } else if ((r = pw_cli_opt(&cli, argc, argv, &i, "--url", &v)) != 0) {
            if (r < 0)
                goto usage;
            cli.url = v;
        } else if ((r = pw_cli_opt(&cli, argc, argv, &i, "--token", &v)) != 0) {
            if (r < 0)
                goto usage;
            cli.token = v;
        } else if ((r = pw_cli_opt(&cli, argc, argv, &i, "--ca", &v)) != 0) {
            if (r < 0)
                goto usage;
            cli.ca = v;
        } else if (strcmp(argv[i], "--json") == 0) {
            cli.json = 1;
        } else if (strcmp(argv[i], "--compact") == 0) {
            cli.compact = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            want_help = 1; /* the command's help when a command is named */
        } else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            pw_free(rest);
            pw_daemon_print_version(out, "poolwatch", OpenSSL_version(OPENSSL_VERSION));
            return PW_EXIT_OK;
        } else {
            rest[n++] = argv[i];
        }
    }
    if (want_help || (n > 0 && strcmp(rest[0], "help") == 0)) {
        /* `help COMMAND`, `COMMAND --help`, `--help`: the same text either way */
        const char *word = n == 0                         ? NULL
                           : strcmp(rest[0], "help") == 0 ? (n > 1 ? rest[1] : NULL)
                                                          : rest[0];
        int rc = help(out, err, word);
        pw_free(rest);
        return rc;
    }
    if (n == 0) {
        fputs("poolwatch: no command\n", err);
        goto usage;
    }
    const command_t *c = find_command(rest[0]);
    if (c != NULL) {
        cli.argc = n;
        cli.argv = rest;
        int rc = c->run(&cli);
        pw_free(rest);
        return rc;
    }
    unknown_command(err, rest[0]);
usage:
    pw_free(rest);
    pw_cli_usage(err);
    return PW_EXIT_USAGE;
}

/* ---- table columns ------------------------------------------------------------------------ */

static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

const char *pw_cli_fit(const char *s, int width, int right, char *out, size_t size)
{
    size_t len = strlen(s), w = width > 0 ? (size_t)width : 1;
    size_t chars = utf8_chars(s, len), o = 0;
    if (size == 0)
        return out;
    if (chars > w) {
        /* w - 1 characters, then the ellipsis (3 bytes, one column) */
        size_t keep = 0, seen = 0;
        while (keep < len && seen < w - 1) {
            keep++;
            while (keep < len && ((unsigned char)s[keep] & 0xC0) == 0x80)
                keep++;
            seen++;
        }
        snprintf(out, size, "%.*s\xe2\x80\xa6", (int)keep, s);
        return out;
    }
    size_t pad = w - chars;
    if (right)
        for (; o < pad && o + 1 < size; o++)
            out[o] = ' ';
    o += (size_t)snprintf(out + o, size - o, "%s", s);
    for (size_t i = 0; !right && i < pad && o + 1 < size; i++)
        out[o++] = ' ';
    out[o < size ? o : size - 1] = '\0';
    return out;
}

const char *pw_cli_count(uint64_t n, const char *noun, char *out, size_t size)
{
    snprintf(out, size, "%llu %s%s", (unsigned long long)n, noun, n == 1 ? "" : "s");
    return out;
}

int pw_cli_client(pw_cli_t *cli, pw_client_t *client)
{
    pw_diag_t d;
    pw_diag_clear(&d);
    memset(client, 0, sizeof(*client));
    if (cli->url == NULL || cli->url[0] == '\0') {
        fprintf(cli->err, "poolwatch: no server URL (set POOLWATCH_URL or --url)\n");
        return PW_EXIT_USAGE;
    }
    if (pw_url_parse(cli->url, &client->url, &d) < 0) {
        /* the parser's reason, with the hint the CLI can give */
        fprintf(cli->err, "poolwatch: --url %s: %s%s\n", cli->url, d.msg,
                strcmp(d.field, "userinfo") == 0 ? " (use POOLWATCH_TOKEN)" : "");
        return PW_EXIT_USAGE;
    }
    client->token = cli->token;
    client->ca_file = cli->ca;
    client->timeout_ms = cli->timeout_ms;
    return 0;
}

int pw_cli_exit_for_status(int status)
{
    if (status >= 200 && status < 300)
        return PW_EXIT_OK;
    if (status == 401 || status == 403)
        return PW_EXIT_AUTH;
    if (status == 404)
        return PW_EXIT_NOTFOUND;
    if (status == 400 || status == 413 || status == 422)
        return PW_EXIT_USAGE;
    return PW_EXIT_SERVER;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

const char *pw_cli_param_words(const char *msg, const char *const *names, char *out, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return out;
    for (const char *p = msg; *p != '\0' && o + 1 < size;) {
        const char *opt = NULL;
        size_t wl = 0;
        if (names != NULL && word_char(*p) && (p == msg || !word_char(p[-1])))
            for (size_t k = 0; names[k] != NULL && names[k + 1] != NULL; k += 2) {
                size_t l = strlen(names[k]);
                if (strncmp(p, names[k], l) == 0 && !word_char(p[l])) {
                    opt = names[k + 1];
                    wl = l;
                    break;
                }
            }
        if (opt == NULL) {
            out[o++] = *p++;
            continue;
        }
        /* 'name' -> --option: the option needs no quotes */
        int quoted = o > 0 && out[o - 1] == '\'' && p[wl] == '\'';
        if (quoted)
            o--;
        size_t ol = strlen(opt);
        if (ol > size - 1 - o)
            ol = size - 1 - o;
        memcpy(out + o, opt, ol);
        o += ol;
        p += wl + (quoted ? 1 : 0);
    }
    out[o] = '\0';
    return out;
}

int pw_cli_call(pw_cli_t *cli, const char *method, const char *path, const char *ctype,
                const void *body, size_t body_len, pw_client_progress_cb progress, void *arg,
                json_t **root)
{
    pw_client_t client;
    *root = NULL;
    int ex = pw_cli_client(cli, &client);
    if (ex != 0)
        return ex;
    pw_client_resp_t resp;
    pw_diag_t d;
    pw_diag_clear(&d);
    int rc =
        pw_client_request(&client, method, path, ctype, body, body_len, progress, arg, &resp, &d);
    if (rc < 0) {
        fprintf(cli->err, "poolwatch: %s\n", d.msg[0] ? d.msg : pw_strerror(rc));
        return PW_EXIT_SERVER; /* TLS refusals included: the server was not trusted */
    }
    json_error_t je;
    json_t *j = json_loadb(resp.body, resp.body_len, 0, &je);
    ex = pw_cli_exit_for_status(resp.status);
    if (ex != 0) {
        json_t *e = j ? json_object_get(j, "error") : NULL;
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        char named[1024];
        if (msg != NULL && cli->param_names != NULL)
            msg = pw_cli_param_words(msg, cli->param_names, named, sizeof(named));
        fprintf(cli->err, "poolwatch: %s %s: HTTP %d%s%s%s%s\n", method, path, resp.status,
                code ? " " : "", code ? code : "", msg ? ": " : "", msg ? msg : "");
        json_decref(j);
        pw_client_resp_close(&resp);
        return ex;
    }
    if (j == NULL) {
        fprintf(cli->err, "poolwatch: %s %s: response is not JSON (line %d: %s)\n", method, path,
                je.line, je.text);
        pw_client_resp_close(&resp);
        return PW_EXIT_SERVER;
    }
    pw_client_resp_close(&resp);
    char where[160];
    double bad;
    if (pw_cli_json_check_numbers(j, where, sizeof(where), &bad) < 0) {
        fprintf(cli->err,
                "poolwatch: %s %s: response field %s: %g is out of range (counts, sizes and "
                "times are below 2^64)\n",
                method, path, where[0] ? where : "(top level)", bad);
        json_decref(j);
        return PW_EXIT_SERVER;
    }
    *root = j;
    return 0;
}

void pw_cli_print_json(pw_cli_t *cli, const json_t *root)
{
    /* The server's precision (collector/api_v1.c): 0.3513231555, not 0.35132315549999998. */
    size_t flags = JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10) |
                   (cli->compact ? JSON_COMPACT : JSON_INDENT(2));
    json_dumpf(root, cli->out, flags);
    fputc('\n', cli->out);
}

int pw_cli_parse_duration(const char *s, uint64_t *ms)
{
    if (s == NULL || !isdigit((unsigned char)*s))
        return PW_EINVAL;
    uint64_t v = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > UINT64_MAX / 10 / 86400000u)
            return PW_EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    uint64_t mul;
    if (strcmp(p, "ms") == 0)
        mul = 1;
    else if (*p == '\0' || strcmp(p, "s") == 0)
        mul = 1000;
    else if (strcmp(p, "m") == 0)
        mul = 60000;
    else if (strcmp(p, "h") == 0)
        mul = 3600000;
    else if (strcmp(p, "d") == 0)
        mul = 86400000;
    else
        return PW_EINVAL;
    *ms = v * mul;
    return 0;
}

int pw_cli_parse_time(const char *s, uint64_t now_ms, uint64_t *ms)
{
    if (s == NULL || *s == '\0')
        return PW_EINVAL;
    if (strcmp(s, "now") == 0) {
        *ms = now_ms;
        return 0;
    }
    if (*s == '-') {
        uint64_t d;
        if (pw_cli_parse_duration(s + 1, &d) < 0 || d > now_ms)
            return PW_EINVAL;
        *ms = now_ms - d;
        return 0;
    }
    size_t digits = strspn(s, "0123456789");
    if (digits == strlen(s)) {
        if (digits > 19)
            return PW_EINVAL;
        *ms = strtoull(s, NULL, 10);
        return 0;
    }
    unsigned y, mo, d, h = 0, mi = 0, sec = 0;
    int used = 0;
    if (sscanf(s, "%4u-%2u-%2u%n", &y, &mo, &d, &used) != 3 || used != 10)
        return PW_EINVAL;
    const char *p = s + 10;
    if (*p == 'T' || *p == ' ') {
        int u2 = 0;
        if (sscanf(p + 1, "%2u:%2u:%2u%n", &h, &mi, &sec, &u2) != 3 || u2 != 8)
            return PW_EINVAL;
        p += 9;
    }
    if (*p == 'Z')
        p++;
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
        y < 1970)
        return PW_EINVAL;
    int64_t days = pw_clock_days_from_civil(y, mo, d);
    *ms = ((uint64_t)days * 86400u + h * 3600u + mi * 60u + sec) * 1000u;
    return 0;
}

void pw_cli_format_time(uint64_t ms, char *out, size_t size)
{
    struct tm tm;
    if (pw_clock_gmtime((int64_t)(ms / 1000), &tm) != 0 ||
        strftime(out, size, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
        snprintf(out, size, "?");
}

void pw_cli_format_bytes(uint64_t bytes, char *out, size_t size)
{
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(out, size, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s", v, units[u]);
}

int pw_cli_say_empty(pw_cli_t *cli, const char *file, const char *data, size_t len)
{
    size_t blank = 0;
    while (blank < len && (data[blank] == ' ' || data[blank] == '\t' || data[blank] == '\r' ||
                           data[blank] == '\n'))
        blank++;
    if (blank < len)
        return 0;
    fprintf(cli->err, "%s: the file is empty%s: no poolmon screen or /proc/slabinfo dump in it\n",
            file, len ? " (only blank lines)" : "");
    return 1;
}

int pw_cli_read_file(const char *path, size_t max, char **data, size_t *len, pw_diag_t *diag)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return pw_diag_set(diag, -errno, 0, 0, "file", "cannot open: %s", strerror(errno));
    /* A regular file over the limit is refused before it is read into memory. */
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max) {
        fclose(f);
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "file", "larger than %zu bytes", max);
    }
    size_t cap = 65536, n = 0;
    char *buf = pw_malloc(cap);
    if (buf == NULL) {
        fclose(f);
        return pw_diag_set(diag, PW_ENOMEM, 0, 0, "file", "out of memory");
    }
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                pw_free(buf);
                fclose(f);
                return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "file", "larger than %zu bytes", max);
            }
            char *nb = pw_realloc(buf, cap * 2);
            if (nb == NULL) {
                pw_free(buf);
                fclose(f);
                return pw_diag_set(diag, PW_ENOMEM, 0, 0, "file", "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
        errno = 0;
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f), why = errno; /* a directory opens, then reads fail with EISDIR */
    fclose(f);
    if (bad) {
        pw_free(buf);
        return pw_diag_set(diag, PW_EIO, 0, 0, "file", "cannot read: %s",
                           why ? strerror(why) : "read error");
    }
    if (n > max) {
        pw_free(buf);
        return pw_diag_set(diag, PW_ETOOBIG, 0, 0, "file", "larger than %zu bytes", max);
    }
    *data = buf;
    *len = n;
    return 0;
}
