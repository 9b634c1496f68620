/* daemon.c: the daemons' shared command line (see daemon.h). */
#include "daemon.h"

#include <signal.h>
#include <string.h>

#include "log.h"
#include "pw_version.h"

void pw_daemon_print_version(FILE *out, const char *name, const char *tls)
{
    fprintf(out, "%s %s (commit %s)%s%s\n", name, PW_VERSION, PW_GIT_COMMIT, tls ? ", " : "",
            tls ? tls : "");
}

const char *pw_daemon_signal_name(int signum)
{
    static char other[32];
    switch (signum) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
#ifndef _WIN32
    case SIGHUP:
        return "SIGHUP";
#endif
    default:
        snprintf(other, sizeof(other), "signal %d", signum);
        return other;
    }
}

/* The part between loading and freeing the configuration; returns the exit code. */
static int with_config(const pw_daemon_t *dm, void *cfg, int argc, char **argv, pw_diag_t *d)
{
    static const char *const own[] = {"config=", "check-config", "print-example",
                                      "help",    "version",      NULL};
    const char *path = NULL;
    int optind = 0;
    int bad = pw_config_find_flag(argc, argv, "config", &path) < 0 ||
              pw_config_defaults(dm->options, cfg, d) < 0 ||
              (path != NULL && pw_config_load_file(dm->options, cfg, path, d) < 0) ||
              pw_config_apply_args(dm->options, cfg, argc, argv, own, &optind, d) < 0;
    /* an argument that is no option is said before what the options lack */
    if (!bad && optind >= argc && pw_config_check(dm->options, cfg, d) < 0)
        bad = 1;
    if (bad) {
        fprintf(pw_log_file(), "%s: %s\n", dm->name, d->msg[0] ? d->msg : "bad --config");
        return 2;
    }
    if (optind < argc) {
        /* a short option other than -h and -V is not one: say what the options look like */
        if (argv[optind][0] == '-' && argv[optind][1] != '-' && argv[optind][1] != '\0')
            fprintf(pw_log_file(),
                    "%s: unknown option '%s' (options are --section.name=VALUE, --config FILE, "
                    "--check-config, --help or -h, --version or -V)\n",
                    dm->name, argv[optind]);
        else
            fprintf(pw_log_file(), "%s: unexpected argument '%s'\n", dm->name, argv[optind]);
        dm->usage(pw_log_file());
        return 2;
    }
    const char *level = *(char *const *)(const void *)((const char *)cfg + dm->log_level_offset);
    int lvl = pw_log_parse_level(level ? level : "info");
    if (lvl < 0) {
        fprintf(pw_log_file(), "%s: %s: '%s' is not error, warn, info or debug\n", dm->name,
                dm->log_level_option, level);
        return 2;
    }
    pw_log_level = lvl;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--check-config") == 0) {
            int rc = dm->check(cfg, d);
            if (rc != 0)
                fprintf(pw_log_file(), "%s: check failed: %s\n", dm->name, d->msg);
            else
                pw_config_dump(dm->options, cfg, stdout);
            return rc == 0 ? 0 : 2;
        }
    int r = dm->run(cfg, d);
    if (r != 0) {
        /* Many messages already end with the reason ("FILE: cannot open: No such file or
         * directory"): say it once. */
        if (strstr(d->msg, pw_strerror(r)) != NULL)
            fprintf(pw_log_file(), "%s: %s\n", dm->name, d->msg);
        else
            fprintf(pw_log_file(), "%s: %s: %s\n", dm->name, pw_strerror(r), d->msg);
    }
    return r == 0 ? 0 : 1;
}

int pw_daemon_main(const pw_daemon_t *dm, void *cfg, size_t cfg_size, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            dm->usage(stdout);
            /* every option of the table --print-example writes, with its default */
            fputs("\nOptions (in a file: [section] name = value):\n", stdout);
            return pw_config_write_options(dm->options, stdout) == 0 ? 0 : 1;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            pw_daemon_print_version(stdout, dm->name, dm->tls_library ? dm->tls_library() : NULL);
            return 0;
        }
        if (strcmp(argv[i], "--print-example") == 0)
            return pw_config_write_example(dm->options, dm->name, stdout) == 0 ? 0 : 1;
    }
    pw_diag_t d;
    memset(cfg, 0, cfg_size);
    pw_diag_clear(&d);
    int rc = with_config(dm, cfg, argc, argv, &d);
    pw_config_free(dm->options, cfg);
    return rc;
}
