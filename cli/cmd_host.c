/* cmd_host.c: `poolwatch host rm HOST [--keep-history]` and `poolwatch host rename OLD NEW`:
 * the host lifecycle (DELETE /api/v1/hosts/{host}, POST /api/v1/hosts/{host}/rename; admin
 * token). */
#include "cli.h"

#include <string.h>

#define HOST_USAGE "poolwatch host rm HOST [--keep-history] | poolwatch host rename OLD NEW"

/* "/api/v1/hosts/HOST" + suffix into path; PW_EXIT_USAGE when it does not fit. */
static int host_path(char *path, size_t size, const char *host, const char *suffix)
{
    snprintf(path, size, "/api/v1/hosts/");
    if (pw_url_escape(path, size, host) < 0 || strlen(path) + strlen(suffix) >= size)
        return PW_EXIT_USAGE;
    strcat(path, suffix);
    return 0;
}

static int host_rm(pw_cli_t *cli)
{
    const char *host = NULL;
    int keep = 0;
    for (int i = 2; i < cli->argc; i++) {
        if (strcmp(cli->argv[i], "--keep-history") == 0) {
            keep = 1;
        } else if (cli->argv[i][0] == '-' || host != NULL) {
            static const char *const opts[] = {"--keep-history", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, HOST_USAGE);
        } else {
            host = cli->argv[i];
        }
    }
    if (host == NULL)
        return pw_cli_bad_args(cli, NULL, "HOST", NULL, HOST_USAGE);
    char path[600];
    if (host_path(path, sizeof(path), host, keep ? "?keep_history=1" : "") != 0)
        return pw_cli_bad_args(cli, host, NULL, NULL, HOST_USAGE);
    json_t *root;
    int ex = pw_cli_call(cli, "DELETE", path, NULL, NULL, 0, NULL, NULL, &root);
    if (ex != 0)
        return ex;
    if (cli->json) {
        pw_cli_print_json(cli, root);
    } else {
        const char *name = json_string_value(json_object_get(root, "host"));
        fprintf(cli->out, "retired %s: %s\n", name ? name : host,
                keep ? "its history is kept in the store, out of the fleet"
                     : "its history is deleted");
    }
    json_decref(root);
    return 0;
}

static int host_rename(pw_cli_t *cli)
{
    const char *names[2] = {NULL, NULL};
    int n = 0;
    for (int i = 2; i < cli->argc; i++) {
        if (cli->argv[i][0] == '-' || n == 2)
            return pw_cli_bad_args(cli, cli->argv[i], NULL, NULL, HOST_USAGE);
        names[n++] = cli->argv[i];
    }
    if (n < 2)
        return pw_cli_bad_args(cli, NULL, n == 0 ? "OLD and NEW" : "NEW", NULL, HOST_USAGE);
    char path[600];
    if (host_path(path, sizeof(path), names[0], "/rename") != 0)
        return pw_cli_bad_args(cli, names[0], NULL, NULL, HOST_USAGE);
    json_t *body = json_pack("{s:s}", "name", names[1]);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        fprintf(cli->err, "poolwatch: out of memory\n");
        return PW_EXIT_SERVER;
    }
    json_t *root;
    int ex =
        pw_cli_call(cli, "POST", path, "application/json", text, strlen(text), NULL, NULL, &root);
    free(text);
    if (ex != 0)
        return ex;
    if (cli->json)
        pw_cli_print_json(cli, root);
    else
        fprintf(cli->out, "renamed %s to %s\n", names[0], names[1]);
    json_decref(root);
    return 0;
}

int pw_cmd_host(pw_cli_t *cli)
{
    const char *sub = cli->argc > 1 ? cli->argv[1] : NULL;
    if (sub != NULL && strcmp(sub, "rm") == 0)
        return host_rm(cli);
    if (sub != NULL && strcmp(sub, "rename") == 0)
        return host_rename(cli);
    if (sub == NULL)
        return pw_cli_bad_args(cli, NULL, "rm or rename", NULL, HOST_USAGE);
    fprintf(cli->err, "poolwatch host: unknown subcommand '%s' (rm or rename)\n", sub);
    fprintf(cli->err, "usage: %s\n", HOST_USAGE);
    return PW_EXIT_USAGE;
}
