/* service_win_args.c: the portable half of the Windows service support (contract in
 * service_win.h): subcommand parsing, command-line quoting, default paths. No Windows headers,
 * so the unit tests run natively as well as under Wine. */
#include "service_win.h"

#include <stdio.h>
#include <string.h>

static int take_value(int argc, char **argv, int *i, const char *flag, const char **val,
                      pw_diag_t *d)
{
    size_t n = strlen(flag);
    const char *a = argv[*i];
    if (strncmp(a, flag, n) == 0 && a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (strcmp(a, flag) != 0)
        return 0;
    if (*i + 1 >= argc)
        return pw_diag_set(d, PW_ECONFIG, 0, (size_t)*i, flag, "%s needs a value", flag);
    *val = argv[++*i];
    return 1;
}

int pw_service_parse_args(int argc, char **argv, const char *default_name, pw_svc_args_t *out,
                          pw_diag_t *d)
{
    memset(out, 0, sizeof(*out));
    out->name = default_name;
    if (argc < 2 || argv[1] == NULL)
        return 0;
    pw_svc_cmd_t cmd;
    if (strcmp(argv[1], "install") == 0)
        cmd = PW_SVC_INSTALL;
    else if (strcmp(argv[1], "uninstall") == 0)
        cmd = PW_SVC_UNINSTALL;
    else if (strcmp(argv[1], "service") == 0)
        cmd = PW_SVC_RUN;
    else
        return 0;
    const char *name = NULL, *config = NULL;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        int at = i, r;
        if ((r = take_value(argc, argv, &i, "--name", &v, d)) != 0) {
            if (r < 0)
                return r;
            if (name != NULL)
                return pw_diag_set(d, PW_ECONFIG, 0, (size_t)at, "--name", "--name given twice");
            name = v;
        } else if (cmd != PW_SVC_UNINSTALL &&
                   (r = take_value(argc, argv, &i, "--config", &v, d)) != 0) {
            if (r < 0)
                return r;
            if (config != NULL)
                return pw_diag_set(d, PW_ECONFIG, 0, (size_t)at, "--config",
                                   "--config given twice");
            if (!pw_service_path_is_absolute(v))
                return pw_diag_set(d, PW_ECONFIG, 0, (size_t)at, "--config",
                                   "--config '%s' is not an absolute path (a service starts in "
                                   "C:\\Windows\\System32)",
                                   v);
            config = v;
        } else {
            return pw_diag_set(d, PW_ECONFIG, 0, (size_t)i, argv[i], "%s: unexpected argument '%s'",
                               argv[1], argv[i]);
        }
    }
    if (name != NULL) {
        size_t n = strlen(name);
        if (n == 0 || n > PW_SERVICE_NAME_MAX || strpbrk(name, "/\\") != NULL)
            return pw_diag_set(d, PW_ECONFIG, 0, 0, "--name",
                               "service name '%.64s' must be 1 to %d characters without '/' or "
                               "'\\'",
                               name, PW_SERVICE_NAME_MAX);
        out->name = name;
    }
    out->config = config;
    out->cmd = cmd;
    return 0;
}

static int is_sep(char c)
{
    return c == '\\' || c == '/';
}

int pw_service_path_is_absolute(const char *path)
{
    if (path == NULL)
        return 0;
    if (((path[0] >= 'A' && path[0] <= 'Z') || (path[0] >= 'a' && path[0] <= 'z')) &&
        path[1] == ':' && is_sep(path[2]))
        return 1;
    return is_sep(path[0]) && is_sep(path[1]) && path[2] != '\0' && !is_sep(path[2]);
}

int pw_service_quote_arg(char *out, size_t size, size_t *len, const char *arg)
{
    char tmp[4096];
    size_t n = 0;
    int quote = arg[0] == '\0' || strpbrk(arg, " \t\"") != NULL;
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (n + 1 >= sizeof(tmp))                                                                  \
            return PW_ETOOBIG;                                                                     \
        tmp[n++] = (c);                                                                            \
    } while (0)
    if (*len > 0)
        PUT(' ');
    if (quote)
        PUT('"');
    for (const char *p = arg;; p++) {
        size_t bs = 0;
        while (*p == '\\') {
            bs++;
            p++;
        }
        if (*p == '\0') {
            /* Backslashes before the closing quote are doubled, else they escape it. */
            for (size_t k = 0; k < (quote ? bs * 2 : bs); k++)
                PUT('\\');
            break;
        }
        if (*p == '"') {
            for (size_t k = 0; k < bs * 2 + 1; k++)
                PUT('\\');
            PUT('"');
        } else {
            for (size_t k = 0; k < bs; k++)
                PUT('\\');
            PUT(*p);
        }
    }
    if (quote)
        PUT('"');
#undef PUT
    if (*len + n + 1 > size)
        return PW_ETOOBIG;
    memcpy(out + *len, tmp, n);
    *len += n;
    out[*len] = '\0';
    return 0;
}

int pw_service_command_line(const char *exe, const char *name, const char *config, char *out,
                            size_t size)
{
    size_t len = 0;
    /* The executable always in quotes; a path never ends in a backslash, and cannot contain a
     * quote, so no escaping is needed. */
    int n = snprintf(out, size, "\"%s\"", exe);
    if (n < 0 || (size_t)n >= size || strchr(exe, '"') != NULL)
        return PW_ETOOBIG;
    len = (size_t)n;
    int r;
    if ((r = pw_service_quote_arg(out, size, &len, "service")) != 0 ||
        (r = pw_service_quote_arg(out, size, &len, "--name")) != 0 ||
        (r = pw_service_quote_arg(out, size, &len, name)) != 0 ||
        (r = pw_service_quote_arg(out, size, &len, "--config")) != 0 ||
        (r = pw_service_quote_arg(out, size, &len, config)) != 0)
        return r;
    return 0;
}

int pw_service_default_path(const char *programdata, const char *file, char *out, size_t size)
{
    const char *base = programdata && *programdata ? programdata : "C:\\ProgramData";
    size_t bl = strlen(base);
    if (bl > 0 && is_sep(base[bl - 1]))
        bl--;
    int n = file ? snprintf(out, size, "%.*s\\%s\\%s", (int)bl, base, PW_SERVICE_DIR, file)
                 : snprintf(out, size, "%.*s\\%s", (int)bl, base, PW_SERVICE_DIR);
    return n < 0 || (size_t)n >= size ? PW_ETOOBIG : 0;
}
