/* main.c: poolwatch-collector's command line: configuration (file + flags), --check-config,
 * --print-example, then pw_collector_run. */
#include "collector.h"
#include "tokens.h"

#include <openssl/rand.h>
#include "daemon.h"
#include "log.h"
#include "tls.h"
#ifdef _WIN32
#include "service_win.h"
#endif

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: poolwatch-collector [--config FILE] [--section.option=VALUE ...]\n"
                 "       poolwatch-collector --check-config [--config FILE] [options]\n"
                 "       poolwatch-collector --print-example\n"
                 "       poolwatch-collector --version | -V\n"
                 "\n"
                 "Receives pool-tag samples from poolwatch agents over mutual TLS, stores their\n"
                 "history, finds leaking tags and serves the query API, dashboard and metrics.\n"
                 "Every option of the file can be given as a flag, e.g. --store.path=pw.db.\n"
                 "Options are documented in deploy/config/collector.conf.example.\n"
                 "\n"
                 "       poolwatch-collector --new-token ROLE NAME\n"
                 "prints a fresh bearer token (ROLE read or admin) on stderr and the line to add\n"
                 "to the tokens file (its SHA-256, role and name) on stdout.\n");
#ifdef _WIN32
    fprintf(out, "\nWindows service: poolwatch-collector install [--config FILE] [--name NAME]\n"
                 "                 poolwatch-collector uninstall [--name NAME]\n");
#endif
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

/* pw_daemon_t's callbacks take the configuration untyped. */
static int check(const void *cfg, pw_diag_t *d)
{
    return pw_collector_check(cfg, d);
}

static int run(const void *cfg, pw_diag_t *d)
{
    return pw_collector_run(cfg, d);
}

static int collector_main(int argc, char **argv)
{
    static const pw_daemon_t dm = {.name = "poolwatch-collector",
                                   .options = pw_collector_options,
                                   .log_level_offset = offsetof(pw_collector_cfg_t, log_level),
                                   .log_level_option = "collector.log_level",
                                   .usage = usage,
                                   .check = check,
                                   .run = run,
                                   .tls_library = pw_tls_library};
    pw_collector_cfg_t cfg;
    return pw_daemon_main(&dm, &cfg, sizeof(cfg), argc, argv);
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
#ifdef _WIN32
    /* install / uninstall / service subcommands (common/service_win.c): the service runs
     * collector_main with its configuration under %ProgramData%\poolwatch. */
    static const pw_service_desc_t svc = {
        .program = "poolwatch-collector",
        .default_name = "poolwatch-collector",
        .display_name = "poolwatch collector",
        .description = "Stores pool-tag history from poolwatch agents, finds leaks, serves the "
                       "API and dashboard",
        .config_file = PW_SERVICE_COLLECTOR_CONFIG_FILE,
        .log_file = PW_SERVICE_COLLECTOR_LOG_FILE,
        .main = collector_main,
        .stop = pw_collector_stop};
    int rc;
    if (pw_service_dispatch(&svc, argc, argv, &rc))
        return rc;
#endif
    return collector_main(argc, argv);
}
