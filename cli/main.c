/* main.c: entry point of the `poolwatch` CLI; everything else is in cli.c and cmd_*.c. */
#include <locale.h>
#include <stdlib.h>

#include "cli.h"

static const char *env_get(const char *name)
{
    return getenv(name);
}

int main(int argc, char **argv)
{
    /* ncurses needs the locale for line drawing; numbers are printed without grouping. */
    setlocale(LC_CTYPE, "");
    return pw_cli_run(argc, argv, env_get, stdout, stderr);
}
