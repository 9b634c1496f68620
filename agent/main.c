/* main.c: poolwatch-agent's command line: configuration (file + flags), --check-config,
 * --print-example, then pw_agent_run. Windows service subcommands live in service_win.c. */
#include "agent.h"
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
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static void usage(FILE *out)
{
    fprintf(out, "usage: poolwatch-agent [--config FILE] [--section.option=VALUE ...]\n"
                 "       poolwatch-agent --check-config [--config FILE] [options]\n"
                 "       poolwatch-agent --print-example\n"
                 "       poolwatch-agent --version | -V\n"
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

/* pw_daemon_t's callbacks take the configuration untyped. */
static int check(const void *cfg, pw_diag_t *d)
{
    return pw_agent_check(cfg, d);
}

static int run(const void *cfg, pw_diag_t *d)
{
    return pw_agent_run(cfg, d);
}

static int agent_main(int argc, char **argv)
{
    static const pw_daemon_t dm = {.name = "poolwatch-agent",
                                   .options = pw_agent_options,
                                   .log_level_offset = offsetof(pw_agent_cfg_t, log_level),
                                   .log_level_option = "agent.log_level",
                                   .usage = usage,
                                   .check = check,
                                   .run = run,
                                   .tls_library = pw_tls_library};
    pw_agent_cfg_t cfg;
    return pw_daemon_main(&dm, &cfg, sizeof(cfg), argc, argv);
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
    static const pw_service_desc_t svc = {
        .program = "poolwatch-agent",
        .default_name = "poolwatch-agent",
        .display_name = "poolwatch agent",
        .description = "Streams kernel pool-tag counters to a poolwatch collector",
        .config_file = PW_SERVICE_CONFIG_FILE,
        .log_file = PW_SERVICE_LOG_FILE,
        .main = agent_main,
        .stop = pw_agent_stop};
    int rc;
    if (pw_service_dispatch(&svc, argc, argv, &rc))
        return rc;
#endif
    return agent_main(argc, argv);
}
