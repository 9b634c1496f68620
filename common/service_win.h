/* service_win.h: the daemons (poolwatch-agent, poolwatch-collector) as Windows services.
 * Subcommands of poolwatch-agent.exe and poolwatch-collector.exe (PROGRAM):
 *
 *   PROGRAM install [--config FILE] [--name NAME]   registers the service (auto start)
 *   PROGRAM uninstall [--name NAME]                 stops it if running, then deletes it
 *   PROGRAM service [--config FILE] [--name NAME]   what the SCM runs: the daemon, with its log
 *                                                   in its log file under %ProgramData%
 *
 * NAME defaults to the program's name (pw_service_desc_t.default_name); FILE to
 * %ProgramData%\poolwatch\<config_file> and must be absolute (the SCM starts services in
 * C:\Windows\System32). The argument parsing, the quoting of the service command line and the
 * default paths are portable functions (service_win_args.c, unit-tested on every platform);
 * the SCM calls are in service_win.c (Windows only).
 *
 * Service control: SERVICE_CONTROL_STOP and SERVICE_CONTROL_SHUTDOWN call the program's stop
 * function (pw_agent_stop, pw_collector_stop), which ends its run as SIGTERM does on POSIX; the
 * service then reports SERVICE_STOPPED with the daemon's exit code as its service-specific exit
 * code.
 */
#ifndef PW_SERVICE_WIN_H
#define PW_SERVICE_WIN_H

#include <stddef.h>

#include "error.h"

#define PW_SERVICE_NAME_MAX 256         /* SCM limit on service names (CreateServiceW) */
#define PW_SERVICE_DIR      "poolwatch" /* under %ProgramData%: every program's data */
/* The agent's files there (its spool: agent_config.c's default). */
#define PW_SERVICE_CONFIG_FILE "agent.conf"
#define PW_SERVICE_LOG_FILE    "agent.log"
#define PW_SERVICE_SPOOL_DIR   "spool"
/* The collector's (its store: collector_config.c's default, poolwatch.db). */
#define PW_SERVICE_COLLECTOR_CONFIG_FILE "collector.conf"
#define PW_SERVICE_COLLECTOR_LOG_FILE    "collector.log"

typedef enum {
    PW_SVC_NONE = 0, /* argv[1] is not a service subcommand: run the agent as usual */
    PW_SVC_INSTALL,
    PW_SVC_UNINSTALL,
    PW_SVC_RUN, /* "service": started by the SCM */
} pw_svc_cmd_t;

typedef struct pw_svc_args_s {
    pw_svc_cmd_t cmd;
    const char *name;   /* borrowed from argv, or the default_name given to the parser */
    const char *config; /* borrowed from argv; NULL = the default path */
} pw_svc_args_t;

/* Parses argv for a service subcommand (argv[1] "install", "uninstall" or "service"; flags
 * `--config FILE`, `--config=FILE`, `--name NAME`, `--name=NAME`; uninstall takes only --name).
 * Returns 0 with out->cmd set (PW_SVC_NONE when argv[1] is anything else), or PW_ECONFIG for an
 * unknown or repeated flag, a missing value, a name that is empty, longer than
 * PW_SERVICE_NAME_MAX or contains '/' or '\' (the SCM forbids them), or a relative config path;
 * `d` (may be NULL) names the argument (d->offset = argv index). */
int pw_service_parse_args(int argc, char **argv, const char *default_name, pw_svc_args_t *out,
                          pw_diag_t *d);

/* 1 if `path` is an absolute Windows path: a drive letter, ':' and a separator ("C:\x", "c:/x")
 * or a UNC path ("\\server\share"); 0 otherwise ("x", "C:x", "\x": relative to a drive or
 * directory the service does not control). */
int pw_service_path_is_absolute(const char *path);

/* Appends `arg` to `out` (NUL-terminated, capacity `size`, current length *len) quoted so that
 * CommandLineToArgvW and the Microsoft C runtime give back exactly `arg`: in double quotes when it
 * is empty or contains a space, tab or quote; inside quotes, each quote is preceded by a
 * backslash, and backslashes are doubled when they precede a quote or the closing quote
 * (Microsoft "Parsing C command-line arguments"). A space separates it from what is before.
 * Returns 0, or PW_ETOOBIG when it does not fit (out unchanged). */
int pw_service_quote_arg(char *out, size_t size, size_t *len, const char *arg);

/* Writes the command line the SCM runs for the service: "<exe>" service --name <name>
 * --config <config>, each quoted as above (the executable always in quotes, so a path with
 * spaces is not split, the classic unquoted-service-path hole). Returns 0 or PW_ETOOBIG. */
int pw_service_command_line(const char *exe, const char *name, const char *config, char *out,
                            size_t size);

/* Writes `<programdata>\poolwatch\<file>` into out (programdata = %ProgramData%, NULL or empty:
 * "C:\ProgramData"; one trailing separator of programdata is dropped). `file` is e.g.
 * PW_SERVICE_CONFIG_FILE, or NULL for the directory itself. Returns 0 or PW_ETOOBIG. */
int pw_service_default_path(const char *programdata, const char *file, char *out, size_t size);

/* ---- Windows only (service_win.c) ---------------------------------------------------------- */

/* The daemon's ordinary main, which the service runs with the arguments "--config=FILE". */
typedef int (*pw_service_main_fn)(int argc, char **argv);

/* What the service support needs to know of a program. All strings static. */
typedef struct pw_service_desc_s {
    const char *program;      /* "poolwatch-agent": messages' prefix, argv[0] of the run */
    const char *default_name; /* service name without --name: "poolwatch-agent" */
    const char *display_name; /* "poolwatch agent" */
    const char *description;  /* the SCM's description text */
    const char *config_file;  /* default configuration under %ProgramData%\poolwatch */
    const char *log_file;     /* the service's log (stderr) under %ProgramData%\poolwatch */
    pw_service_main_fn main;  /* the daemon */
    void (*stop)(void);       /* ends `main`'s run from the SCM's thread, as SIGTERM */
} pw_service_desc_t;

#ifdef _WIN32
/* Handles a service subcommand of `desc`'s program: install, uninstall, or run as a service
 * (connecting to the SCM with StartServiceCtrlDispatcher and calling desc->main in the service
 * thread, with stderr, where the log goes, appended to %ProgramData%\poolwatch\<log_file>).
 * Returns 1 and sets *exit_code when argv held a service subcommand (exit_code 0 on success, 1
 * on an SCM error, 2 on bad arguments; the reason goes to stderr), 0 when it did not (the
 * caller runs the daemon as usual). */
int pw_service_dispatch(const pw_service_desc_t *desc, int argc, char **argv, int *exit_code);
#endif

#endif /* PW_SERVICE_WIN_H */
