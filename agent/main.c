/* main.c: poolwatch-agent's command line: configuration (file + flags), --check-config,
 * --print-example, then pw_agent_run. Windows service subcommands live in service_win.c. */
#include "agent.h"
#include "config.h"
#include "log.h"
#ifdef _WIN32
#include "service_win.h"
#endif

#include <signal.h>
#include <stdio.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static void usage(FILE *out)
{
    fprintf(out, "usage: poolwatch-agent [--config FILE] [--section.option=VALUE ...]\n"
                 "       poolwatch-agent --check-config [--config FILE] [options]\n"
                 "       poolwatch-agent --print-example\n"
                 "\n"
                 "Samples kernel pool tags (or slab caches) and streams them to a poolwatch\n"
                 "collector over mutual TLS. Every option of the file can be given as a flag,\n"
                 "e.g. --agent.source=sim:steady/0 --collector.endpoints=127.0.0.1:7070.\n"
                 "Options are documented in deploy/config/agent.conf.example.\n");
#ifdef _WIN32
    fprintf(out, "\nWindows service: poolwatch-agent install [--config FILE] [--name NAME]\n"
                 "                 poolwatch-agent uninstall [--name NAME]\n");
#endif
}

static int agent_main(int argc, char **argv)
{
    static const char *const own[] = {"config=", "check-config", "print-example", "help", NULL};
    pw_agent_cfg_t cfg;
    pw_diag_t d;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--print-example") == 0)
            return pw_config_write_example(pw_agent_options, "poolwatch-agent", stdout) == 0 ? 0
                                                                                             : 1;
    }
    memset(&cfg, 0, sizeof(cfg));
    pw_diag_clear(&d);
    int optind = 0;
    if (pw_config_find_flag(argc, argv, "config", &path) < 0 ||
        pw_config_defaults(pw_agent_options, &cfg, &d) < 0 ||
        (path != NULL && pw_config_load_file(pw_agent_options, &cfg, path, &d) < 0) ||
        pw_config_apply_args(pw_agent_options, &cfg, argc, argv, own, &optind, &d) < 0 ||
        pw_config_check(pw_agent_options, &cfg, &d) < 0) {
        fprintf(stderr, "poolwatch-agent: %s\n", d.msg[0] ? d.msg : "bad --config");
        pw_config_free(pw_agent_options, &cfg);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "poolwatch-agent: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        pw_config_free(pw_agent_options, &cfg);
        return 2;
    }
    int lvl = pw_log_parse_level(cfg.log_level ? cfg.log_level : "info");
    if (lvl < 0) {
        fprintf(stderr,
                "poolwatch-agent: agent.log_level: '%s' is not error, warn, info or "
                "debug\n",
                cfg.log_level);
        pw_config_free(pw_agent_options, &cfg);
        return 2;
    }
    pw_log_level = lvl;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--check-config") == 0) {
            int rc = pw_agent_check(&cfg, &d);
            if (rc != 0)
                fprintf(stderr, "poolwatch-agent: check failed: %s\n", d.msg);
            else
                pw_config_dump(pw_agent_options, &cfg, stdout);
            pw_config_free(pw_agent_options, &cfg);
            return rc == 0 ? 0 : 2;
        }
    int r = pw_agent_run(&cfg, &d);
    if (r != 0) {
        /* Many messages already end with the reason ("FILE: cannot open: No such file or
         * directory"): say it once. */
        if (strstr(d.msg, pw_strerror(r)) != NULL)
            fprintf(stderr, "poolwatch-agent: %s\n", d.msg);
        else
            fprintf(stderr, "poolwatch-agent: %s: %s\n", pw_strerror(r), d.msg);
    }
    pw_config_free(pw_agent_options, &cfg);
    return r == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
#ifndef _WIN32
    /* A peer that hangs up mid-write must not kill the process: libuv reports EPIPE. */
    signal(SIGPIPE, SIG_IGN);
#endif
#if defined(__GLIBC__)
    /* The agent lives for months in a few MB. Blocks of 32 KiB and more (sample and
     * encoder tables, the decoder a rebase uses for a while) get their own mappings, given
     * back whole when freed; a fixed threshold also stops glibc from raising it after such
     * a free, which would put the next big transient block in the heap, where it stays
     * resident. Free space at the top of the heap is returned past 64 KiB. The steady-state
     * loop allocates nothing this large, so no system call is added per sample.
     * bench_agent: about 170 kB less RssAnon (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024);
    mallopt(M_TRIM_THRESHOLD, 64 * 1024);
#endif
#ifdef _WIN32
    /* install / uninstall / service subcommands (service_win.c); the service runs agent_main. */
    int rc;
    if (pw_service_dispatch(argc, argv, agent_main, &rc))
        return rc;
#endif
    return agent_main(argc, argv);
}
