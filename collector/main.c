/* main.c: poolwatch-collector's command line: configuration (file + flags), --check-config,
 * --print-example, then pw_collector_run. */
#include "collector.h"
#include "tokens.h"

#include <openssl/rand.h>
#include "config.h"
#include "log.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: poolwatch-collector [--config FILE] [--section.option=VALUE ...]\n"
                 "       poolwatch-collector --check-config [--config FILE] [options]\n"
                 "       poolwatch-collector --print-example\n"
                 "\n"
                 "Receives pool-tag samples from poolwatch agents over mutual TLS, stores their\n"
                 "history, finds leaking tags and serves the query API, dashboard and metrics.\n"
                 "Every option of the file can be given as a flag, e.g. --store.path=pw.db.\n"
                 "Options are documented in deploy/config/collector.conf.example.\n"
                 "\n"
                 "       poolwatch-collector --new-token ROLE NAME\n"
                 "prints a fresh bearer token (ROLE read or admin) on stderr and the line to add\n"
                 "to the tokens file (its SHA-256, role and name) on stdout.\n");
}

/* Makes a random token and prints its tokens-file line: the file never holds the token. */
static int new_token(const char *role, const char *name)
{
    if (strcmp(role, "read") != 0 && strcmp(role, "admin") != 0) {
        fprintf(stderr, "poolwatch-collector: --new-token: role must be read or admin, not '%s'\n",
                role);
        return 2;
    }
    /* The tokens-file parser's rule: a line it would refuse is never printed. */
    const char *why = pw_tokens_name_error(name, strlen(name), NULL);
    if (why != NULL) {
        fprintf(stderr, "poolwatch-collector: --new-token: name '%s': %s\n", name, why);
        return 2;
    }
    unsigned char raw[24];
    char token[49], hash[65];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        fprintf(stderr, "poolwatch-collector: no random bytes\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    if (pw_tokens_hash(token, hash) != 0)
        return 1;
    fprintf(stderr, "token (give it to the user; it is not stored): %s\n", token);
    printf("%s %s %s\n", hash, role, name);
    return 0;
}

int main(int argc, char **argv)
{
#ifndef _WIN32
    /* A peer that hangs up mid-write must not kill the process: libuv reports EPIPE. */
    signal(SIGPIPE, SIG_IGN);
#endif
    if (argc >= 2 && strcmp(argv[1], "--new-token") == 0) {
        if (argc != 4) {
            fprintf(stderr, "poolwatch-collector: --new-token needs a ROLE (read or admin) and a "
                            "NAME: poolwatch-collector --new-token ROLE NAME\n");
            return 2;
        }
        return new_token(argv[2], argv[3]);
    }
    static const char *const own[] = {"config=", "check-config", "print-example", "help", NULL};
    pw_collector_cfg_t cfg;
    pw_diag_t d;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--print-example") == 0)
            return pw_config_write_example(pw_collector_options, "poolwatch-collector", stdout) == 0
                       ? 0
                       : 1;
    }
    memset(&cfg, 0, sizeof(cfg));
    pw_diag_clear(&d);
    int optind = 0;
    if (pw_config_find_flag(argc, argv, "config", &path) < 0 ||
        pw_config_defaults(pw_collector_options, &cfg, &d) < 0 ||
        (path != NULL && pw_config_load_file(pw_collector_options, &cfg, path, &d) < 0) ||
        pw_config_apply_args(pw_collector_options, &cfg, argc, argv, own, &optind, &d) < 0 ||
        pw_config_check(pw_collector_options, &cfg, &d) < 0) {
        fprintf(stderr, "poolwatch-collector: %s\n", d.msg[0] ? d.msg : "bad --config");
        pw_config_free(pw_collector_options, &cfg);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "poolwatch-collector: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        pw_config_free(pw_collector_options, &cfg);
        return 2;
    }
    int lvl = pw_log_parse_level(cfg.log_level ? cfg.log_level : "info");
    if (lvl < 0) {
        fprintf(stderr,
                "poolwatch-collector: collector.log_level: '%s' is not error, warn, info or "
                "debug\n",
                cfg.log_level);
        pw_config_free(pw_collector_options, &cfg);
        return 2;
    }
    pw_log_level = lvl;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--check-config") == 0) {
            int rc = pw_collector_check(&cfg, &d);
            if (rc != 0)
                fprintf(stderr, "poolwatch-collector: check failed: %s\n", d.msg);
            else
                pw_config_dump(pw_collector_options, &cfg, stdout);
            pw_config_free(pw_collector_options, &cfg);
            return rc == 0 ? 0 : 2;
        }
    int r = pw_collector_run(&cfg, &d);
    if (r != 0) {
        /* Many messages already end with the reason ("cannot open 'tokens': No such file or
         * directory"): say it once, as the agent does. */
        if (strstr(d.msg, pw_strerror(r)) != NULL)
            fprintf(stderr, "poolwatch-collector: %s\n", d.msg);
        else
            fprintf(stderr, "poolwatch-collector: %s: %s\n", pw_strerror(r), d.msg);
    }
    pw_config_free(pw_collector_options, &cfg);
    return r == 0 ? 0 : 1;
}
