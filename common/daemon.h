/* daemon.h: the command line the daemons share (poolwatch-agent, poolwatch-collector):
 * --help (-h), --version (-V), --print-example, the configuration from defaults, --config
 * FILE and --section.option=VALUE flags (common/config.h), the log level, then --check-config
 * (check and print the effective configuration) or the daemon's run function.
 *
 * Exit codes: 0 (success, help, example), 1 (the run or the example failed), 2 (bad command
 * line or configuration, or the check failed). Messages go to stderr prefixed by the name. */
#ifndef PW_DAEMON_H
#define PW_DAEMON_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "error.h"

typedef struct pw_daemon_s {
    const char *name;               /* "poolwatch-agent": the prefix of every message */
    const pw_config_opt_t *options; /* the option table; cfg is its struct */
    size_t log_level_offset;        /* offsetof(the struct, its `char *log_level`) */
    const char *log_level_option;   /* "agent.log_level", for the message about a bad level */
    void (*usage)(FILE *out);
    /* --check-config: 0, or a negative code with `d` set. */
    int (*check)(const void *cfg, pw_diag_t *d);
    /* The daemon itself, until it stops: 0, or a negative code with `d` set. */
    int (*run)(const void *cfg, pw_diag_t *d);
    /* --version: the TLS library in use (pw_tls_library()); NULL prints none. */
    const char *(*tls_library)(void);
} pw_daemon_t;

/* Runs the command line `argv` for `dm`. `cfg` is the daemon's zeroed-here configuration
 * struct, which the options fill and which is freed (pw_config_free) before returning.
 * Returns the process exit code. */
int pw_daemon_main(const pw_daemon_t *dm, void *cfg, size_t cfg_size, int argc, char **argv);

/* Writes the --version line of program `name` to `out`: "NAME VERSION (commit C), TLS\n", the
 * version and commit from pw_version.h (the commit CMake saw at configure time, "unknown"
 * outside git) and `tls` (the TLS library's own text; omitted when NULL). */
void pw_daemon_print_version(FILE *out, const char *name, const char *tls);

/* The name of signal `signum` as the log says it ("SIGHUP", "SIGTERM"), or "signal N" in a
 * static buffer for others (not thread safe; the daemons call it from their loop). */
const char *pw_daemon_signal_name(int signum);

#endif /* PW_DAEMON_H */
