/* test_daemon.c: the daemons' shared command line (common/daemon.h): which of help, example,
 * check and run happens, with which configuration, and the exit codes daemon.h promises. */
#include "test_util.h"
#include "daemon.h"
#include "log.h"

#include <stddef.h>

typedef struct {
    char *log_level;
    int64_t n;
} tcfg_t;

static const pw_config_opt_t tab[] = {
    PW_CONFIG_OPT_STRING("t", "log_level", "info", tcfg_t, log_level, 0, "level"),
    PW_CONFIG_OPT_INT("t", "n", "3", 0, 100, tcfg_t, n, "a number"),
    PW_CONFIG_END,
};

static int g_checks, g_runs, g_usages, g_rc;
static int64_t g_seen_n;

static void usage(FILE *out)
{
    (void)out;
    g_usages++;
}

static int check(const void *cfg, pw_diag_t *d)
{
    g_checks++;
    g_seen_n = ((const tcfg_t *)cfg)->n;
    return g_rc == 0 ? 0 : pw_diag_set(d, g_rc, 0, 0, "n", "refused");
}

static int run(const void *cfg, pw_diag_t *d)
{
    g_runs++;
    g_seen_n = ((const tcfg_t *)cfg)->n;
    return g_rc == 0 ? 0 : pw_diag_set(d, g_rc, 0, 0, "n", "failed");
}

static const pw_daemon_t dm = {.name = "test-daemon",
                               .options = tab,
                               .log_level_offset = offsetof(tcfg_t, log_level),
                               .log_level_option = "t.log_level",
                               .usage = usage,
                               .check = check,
                               .run = run};

static int go(int rc, int argc, char **argv)
{
    g_checks = g_runs = g_usages = 0;
    g_seen_n = -1;
    g_rc = rc;
    tcfg_t cfg;
    return pw_daemon_main(&dm, &cfg, sizeof(cfg), argc, argv);
}

static void test_paths(void **state)
{
    (void)state;
    char *run_default[] = {"d", NULL};
    assert_int_equal(go(0, 1, run_default), 0);
    assert_int_equal(g_runs, 1);
    assert_int_equal(g_checks, 0);
    assert_int_equal(g_seen_n, 3); /* the table's default */

    char *run_flag[] = {"d", "--t.n=42", NULL};
    assert_int_equal(go(PW_EIO, 2, run_flag), 1); /* a failed run: 1 */
    assert_int_equal(g_runs, 1);
    assert_int_equal(g_seen_n, 42);

    char *chk[] = {"d", "--check-config", "--t.n=7", NULL};
    assert_int_equal(go(0, 3, chk), 0);
    assert_int_equal(g_checks, 1);
    assert_int_equal(g_runs, 0);
    assert_int_equal(g_seen_n, 7);
    assert_int_equal(go(PW_ECONFIG, 3, chk), 2); /* a failed check: 2 */

    char *help[] = {"d", "--t.n=7", "--help", NULL};
    assert_int_equal(go(0, 3, help), 0);
    assert_int_equal(g_usages, 1);
    assert_int_equal(g_runs + g_checks, 0);

    char *bad_value[] = {"d", "--t.n=101", NULL}; /* above the row's maximum */
    assert_int_equal(go(0, 2, bad_value), 2);
    assert_int_equal(g_runs, 0);

    char *stray[] = {"d", "stray", NULL};
    assert_int_equal(go(0, 2, stray), 2);
    assert_int_equal(g_usages, 1);

    char *level[] = {"d", "--t.log_level=loud", NULL};
    assert_int_equal(go(0, 2, level), 2);
    assert_int_equal(g_runs, 0);

    char *missing[] = {"d", "--config=/nonexistent/poolwatch-test.conf", NULL};
    assert_int_equal(go(0, 2, missing), 2);
    pw_log_level = PW_LOG_LVL_INFO;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
