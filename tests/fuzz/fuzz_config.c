/* fuzz_config.c: pw_config on arbitrary bytes, three ways: as an INI file, as command-line
 * arguments (one per line), and through the duration and size parsers. Invariants checked:
 * errors carry their code in the diag with a NUL-terminated message; a configuration that
 * loaded dumps to text that loads back to the same dump; nothing leaks (pw_config_free). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_cfg_s {
    uint64_t interval_ms;
    char *source;
    int64_t retries;
    bool verbose;
    pw_config_list_t tags;
    int level;
    uint64_t max_bytes;
    char *dir;
    char *ca;
    pw_config_list_t endpoints;
    uint64_t timeout_ms;
} fuzz_cfg_t;

static const char *const levels[] = {"error", "warn", "info", "debug", NULL};

static const pw_config_opt_t tab[] = {
    PW_CONFIG_OPT_DURATION("agent", "interval", "10s", 1000, 3600000, fuzz_cfg_t, interval_ms, "d"),
    PW_CONFIG_OPT_STRING("agent", "source", "linux", fuzz_cfg_t, source, 0, "s"),
    PW_CONFIG_OPT_INT("agent", "retries", "3", -5, 100, fuzz_cfg_t, retries, "i"),
    PW_CONFIG_OPT_BOOL("agent", "verbose", "false", fuzz_cfg_t, verbose, "b"),
    PW_CONFIG_OPT_LIST("agent", "tags", "a,b", 0, 0, fuzz_cfg_t, tags, 0, "l"),
    PW_CONFIG_OPT_ENUM("log", "level", "info", levels, fuzz_cfg_t, level, "e"),
    PW_CONFIG_OPT_SIZE("spool", "max_size", "256MiB", 0, 0, fuzz_cfg_t, max_bytes, "z"),
    PW_CONFIG_OPT_STRING("spool", "dir", "/var/spool", fuzz_cfg_t, dir, PW_CONFIG_PATH, "p"),
    PW_CONFIG_OPT_STRING("tls", "ca_file", NULL, fuzz_cfg_t, ca, PW_CONFIG_REQUIRED, "r"),
    PW_CONFIG_OPT_LIST("uplink", "endpoints", NULL, 0, 4, fuzz_cfg_t, endpoints, 0, "l"),
    PW_CONFIG_OPT_DURATION("uplink", "interval", "1s", 0, 0, fuzz_cfg_t, timeout_ms, "d"),
    PW_CONFIG_END,
};

static void check_diag(int r, const pw_diag_t *d)
{
    if (r >= 0 || d->code != r || memchr(d->msg, '\0', sizeof(d->msg)) == NULL ||
        memchr(d->field, '\0', sizeof(d->field)) == NULL)
        abort();
}

static char *dump(const fuzz_cfg_t *c)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (f == NULL)
        abort();
    if (pw_config_dump(tab, c, f) != 0)
        abort();
    fclose(f);
    return s;
}

/* A loaded configuration must dump to text that loads back to the same dump. Reloading may
 * only fail on the line limit (the dump writes "name = value" with spaces). */
static void round_trip(const fuzz_cfg_t *c)
{
    fuzz_cfg_t c2;
    pw_diag_t d;
    char *s = dump(c);
    if (pw_config_defaults(tab, &c2, &d) != 0)
        abort();
    int r = pw_config_load_string(tab, &c2, s, &d);
    if (r == 0) {
        char *s2 = dump(&c2);
        if (strcmp(s, s2) != 0)
            abort();
        free(s2);
    } else if (r != PW_ETOOBIG) {
        abort();
    }
    pw_config_free(tab, &c2);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_cfg_t c;
    pw_diag_t d;

    /* 1. As an INI file. */
    if (pw_config_defaults(tab, &c, &d) != 0)
        abort();
    int r = pw_config_load_buffer(tab, &c, (const char *)data, size, "fuzz.conf", &d);
    if (r == 0)
        round_trip(&c);
    else
        check_diag(r, &d);
    r = pw_config_check(tab, &c, &d);
    if (r != 0)
        check_diag(r, &d);
    pw_config_free(tab, &c);

    /* 2. As argv, one argument per line (at most 16), and through the number parsers. */
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[18];
    int argc = 0;
    argv[argc++] = "fuzz";
    for (char *p = text; argc < 17;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    static const char *const own[] = {"config=", "check-config", NULL};
    if (pw_config_defaults(tab, &c, &d) != 0)
        abort();
    int optind = -1;
    r = pw_config_apply_args(tab, &c, argc, argv, own, &optind, &d);
    if (r == 0) {
        if (optind < 1 || optind > argc)
            abort();
        round_trip(&c);
    } else {
        check_diag(r, &d);
    }
    pw_config_free(tab, &c);
    const char *v;
    (void)pw_config_find_flag(argc, argv, "config", &v);

    uint64_t x = 7;
    r = pw_config_parse_duration_ms(argv[1], &x);
    if (r != 0 && (x != 7 || (r != PW_EINVAL && r != PW_ERANGE)))
        abort();
    x = 7;
    r = pw_config_parse_size(argv[1], &x);
    if (r != 0 && (x != 7 || (r != PW_EINVAL && r != PW_ERANGE)))
        abort();
    free(text);
    return 0;
}
