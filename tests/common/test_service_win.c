/* Tests of the Windows service's portable half (service_win_args.c): subcommand parsing, the
 * quoting of the service command line, absolute-path checks and the default paths. Runs natively
 * and, in the Windows cross build, under Wine. Expected command lines are written out by hand
 * from Microsoft's "Parsing C command-line arguments" rules: 2n backslashes + quote -> n
 * backslashes and a delimiter; 2n+1 backslashes + quote -> n backslashes and a literal quote;
 * backslashes not followed by a quote are literal. */
#include "test_util.h"

#include "service_win.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_service_args_not_a_subcommand(void **state)
{
    (void)state;
    pw_svc_args_t a;
    char *v0[] = {"poolwatch-agent"};
    assert_int_equal(pw_service_parse_args(ARGC(v0), v0, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_NONE);
    char *v1[] = {"poolwatch-agent", "--config=C:\\x.conf"};
    assert_int_equal(pw_service_parse_args(ARGC(v1), v1, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_NONE);
    /* Subcommands are exact words: "Install" or "--install" are ordinary arguments. */
    char *v2[] = {"poolwatch-agent", "Install"};
    assert_int_equal(pw_service_parse_args(ARGC(v2), v2, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_NONE);
}

static void test_service_args_install_forms(void **state)
{
    (void)state;
    pw_svc_args_t a;
    char *v0[] = {"agent", "install"};
    assert_int_equal(pw_service_parse_args(ARGC(v0), v0, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_INSTALL);
    assert_string_equal(a.name, "poolwatch-agent");
    assert_null(a.config);
    /* The default name is the program's: the collector's service is another one. */
    char *vc[] = {"collector", "uninstall"};
    assert_int_equal(pw_service_parse_args(ARGC(vc), vc, "poolwatch-collector", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_UNINSTALL);
    assert_string_equal(a.name, "poolwatch-collector");

    char *v1[] = {"agent", "install", "--config", "D:\\pw\\agent.conf", "--name=pw2"};
    assert_int_equal(pw_service_parse_args(ARGC(v1), v1, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_INSTALL);
    assert_string_equal(a.name, "pw2");
    assert_string_equal(a.config, "D:\\pw\\agent.conf");

    char *v2[] = {"agent", "service", "--config=\\\\srv\\share\\a.conf", "--name", "x y"};
    assert_int_equal(pw_service_parse_args(ARGC(v2), v2, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_RUN);
    assert_string_equal(a.name, "x y");
    assert_string_equal(a.config, "\\\\srv\\share\\a.conf");

    char *v3[] = {"agent", "uninstall", "--name", "pw2"};
    assert_int_equal(pw_service_parse_args(ARGC(v3), v3, "poolwatch-agent", &a, NULL), 0);
    assert_int_equal(a.cmd, PW_SVC_UNINSTALL);
    assert_string_equal(a.name, "pw2");
}

static void test_service_args_errors(void **state)
{
    (void)state;
    pw_svc_args_t a;
    pw_diag_t d;
    char *v0[] = {"agent", "install", "--config"};
    assert_int_equal(pw_service_parse_args(ARGC(v0), v0, "poolwatch-agent", &a, &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "--config needs a value"));
    assert_int_equal(d.offset, 2);

    char *v1[] = {"agent", "install", "--config=agent.conf"};
    assert_int_equal(pw_service_parse_args(ARGC(v1), v1, "poolwatch-agent", &a, &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "not an absolute path"));

    char *v2[] = {"agent", "uninstall", "--config=C:\\a.conf"}; /* uninstall takes no config */
    assert_int_equal(pw_service_parse_args(ARGC(v2), v2, "poolwatch-agent", &a, &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "unexpected argument '--config=C:\\a.conf'"));
    assert_int_equal(d.offset, 2);

    char *v3[] = {"agent", "install", "--name=a/b"};
    assert_int_equal(pw_service_parse_args(ARGC(v3), v3, "poolwatch-agent", &a, &d), PW_ECONFIG);
    char *v4[] = {"agent", "install", "--name="};
    assert_int_equal(pw_service_parse_args(ARGC(v4), v4, "poolwatch-agent", &a, &d), PW_ECONFIG);
    char *v5[] = {"agent", "install", "--name=a", "--name=b"};
    assert_int_equal(pw_service_parse_args(ARGC(v5), v5, "poolwatch-agent", &a, &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "twice"));
    assert_int_equal(d.offset, 3);

    char longname[PW_SERVICE_NAME_MAX + 10];
    memset(longname, 'n', PW_SERVICE_NAME_MAX + 1);
    longname[PW_SERVICE_NAME_MAX + 1] = '\0';
    char flag[PW_SERVICE_NAME_MAX + 20];
    snprintf(flag, sizeof(flag), "--name=%s", longname);
    char *v6[] = {"agent", "install", flag};
    assert_int_equal(pw_service_parse_args(ARGC(v6), v6, "poolwatch-agent", &a, &d), PW_ECONFIG);
    longname[PW_SERVICE_NAME_MAX] = '\0'; /* exactly the limit is fine */
    snprintf(flag, sizeof(flag), "--name=%s", longname);
    assert_int_equal(pw_service_parse_args(ARGC(v6), v6, "poolwatch-agent", &a, &d), 0);
    assert_int_equal(strlen(a.name), PW_SERVICE_NAME_MAX);
}

static void test_service_absolute_paths(void **state)
{
    (void)state;
    assert_true(pw_service_path_is_absolute("C:\\ProgramData\\poolwatch\\agent.conf"));
    assert_true(pw_service_path_is_absolute("c:/x"));
    assert_true(pw_service_path_is_absolute("\\\\server\\share\\a.conf"));
    assert_false(pw_service_path_is_absolute("agent.conf"));
    assert_false(pw_service_path_is_absolute("C:agent.conf")); /* relative to C:'s cwd */
    assert_false(pw_service_path_is_absolute("\\agent.conf")); /* relative to the drive */
    assert_false(pw_service_path_is_absolute("\\\\"));
    assert_false(pw_service_path_is_absolute("1:\\x"));
    assert_false(pw_service_path_is_absolute(""));
    assert_false(pw_service_path_is_absolute(NULL));
}

/* Quotes one argument into an empty buffer; returns a static copy. */
static const char *q(const char *arg)
{
    static char out[256];
    size_t len = 0;
    out[0] = '\0';
    assert_int_equal(pw_service_quote_arg(out, sizeof(out), &len, arg), 0);
    assert_int_equal(len, strlen(out));
    return out;
}

static void test_service_quoting(void **state)
{
    (void)state;
    assert_string_equal(q("plain"), "plain");
    assert_string_equal(q(""), "\"\"");
    assert_string_equal(q("a b"), "\"a b\"");
    /* No quote needed: backslashes stay as they are, even trailing ones. */
    assert_string_equal(q("C:\\dir\\"), "C:\\dir\\");
    /* Quoted, with a trailing backslash: doubled so it does not escape the closing quote. */
    assert_string_equal(q("C:\\my dir\\"), "\"C:\\my dir\\\\\"");
    /* An embedded quote: backslash-quote; a backslash before it: 2*1+1 = 3 backslashes. */
    assert_string_equal(q("say \"hi\""), "\"say \\\"hi\\\"\"");
    assert_string_equal(q("a\\\"b"), "\"a\\\\\\\"b\"");
    /* A second argument is separated by one space. */
    char out[64] = "x";
    size_t len = 1;
    assert_int_equal(pw_service_quote_arg(out, sizeof(out), &len, "y z"), 0);
    assert_string_equal(out, "x \"y z\"");
    /* Too small: PW_ETOOBIG and nothing written. */
    char small[6] = "ab";
    len = 2;
    assert_int_equal(pw_service_quote_arg(small, sizeof(small), &len, "cdef"), PW_ETOOBIG);
    assert_string_equal(small, "ab");
    assert_int_equal(len, 2);
}

static void test_service_command_line(void **state)
{
    (void)state;
    char out[512];
    assert_int_equal(pw_service_command_line(
                         "C:\\Program Files\\poolwatch\\poolwatch-agent.exe", "poolwatch-agent",
                         "C:\\ProgramData\\poolwatch\\agent.conf", out, sizeof(out)),
                     0);
    assert_string_equal(out, "\"C:\\Program Files\\poolwatch\\poolwatch-agent.exe\" service "
                             "--name poolwatch-agent --config "
                             "C:\\ProgramData\\poolwatch\\agent.conf");
    assert_int_equal(
        pw_service_command_line("C:\\pw.exe", "pw agent", "D:\\conf dir\\a.conf", out, sizeof(out)),
        0);
    assert_string_equal(out, "\"C:\\pw.exe\" service --name \"pw agent\" --config "
                             "\"D:\\conf dir\\a.conf\"");
    assert_int_equal(pw_service_command_line("C:\\pw.exe", "n", "C:\\a.conf", out, 20), PW_ETOOBIG);
}

static void test_service_default_paths(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(
        pw_service_default_path("C:\\ProgramData", PW_SERVICE_CONFIG_FILE, out, sizeof(out)), 0);
    assert_string_equal(out, "C:\\ProgramData\\poolwatch\\agent.conf");
    assert_int_equal(pw_service_default_path("D:\\Data\\", PW_SERVICE_LOG_FILE, out, sizeof(out)),
                     0);
    assert_string_equal(out, "D:\\Data\\poolwatch\\agent.log");
    assert_int_equal(pw_service_default_path(NULL, NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "C:\\ProgramData\\poolwatch");
    assert_int_equal(pw_service_default_path("", PW_SERVICE_SPOOL_DIR, out, sizeof(out)), 0);
    assert_string_equal(out, "C:\\ProgramData\\poolwatch\\spool");
    /* "C:\ProgramData\poolwatch\agent.conf" is 35 bytes + NUL. */
    assert_int_equal(pw_service_default_path(NULL, PW_SERVICE_CONFIG_FILE, out, 36), 0);
    assert_int_equal(pw_service_default_path(NULL, PW_SERVICE_CONFIG_FILE, out, 35), PW_ETOOBIG);
}

#ifdef _WIN32
#include <windows.h>

static int no_agent(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void no_stop(void)
{
}

/* The agent's service as agent/main.c describes it, with a daemon that never runs. */
static const pw_service_desc_t test_svc = {.program = "poolwatch-agent",
                                           .default_name = "poolwatch-agent",
                                           .display_name = "poolwatch agent",
                                           .description = "poolwatch service test",
                                           .config_file = PW_SERVICE_CONFIG_FILE,
                                           .log_file = PW_SERVICE_LOG_FILE,
                                           .main = no_agent,
                                           .stop = no_stop};

/* install and uninstall against the Service Control Manager (Wine's services.exe under Wine):
 * the service's command line, its restart actions (10 s, 60 s, 5 min; reset after a day) and
 * the failure actions flag that makes them fire on an exit with an error code, read back with
 * QueryServiceConfig(2)W; a name with a non-ASCII character goes through the wide APIs. */
static void test_service_install_scm(void **state)
{
    (void)state;
    char name[64];
    /* "pw-test-ä-<pid>": ä (U+00E4) in the ANSI code page, as the C runtime's argv holds it */
    wchar_t wname[64];
    swprintf(wname, 64, L"pw-test-\x00e4-%lu", (unsigned long)GetCurrentProcessId());
    assert_true(WideCharToMultiByte(CP_ACP, 0, wname, -1, name, (int)sizeof(name), NULL, NULL) > 0);
    char *argv[] = {(char *)"poolwatch-agent",
                    (char *)"install",
                    (char *)"--name",
                    name,
                    (char *)"--config",
                    (char *)"C:\\pw data\\agent.conf",
                    NULL};
    int rc = -1;
    assert_int_equal(pw_service_dispatch(&test_svc, 6, argv, &rc), 1);
    assert_int_equal(rc, 0);

    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
    assert_non_null(scm);
    SC_HANDLE s = OpenServiceW(scm, wname, SERVICE_QUERY_CONFIG);
    assert_non_null(s);
    static BYTE buf[16384];
    DWORD need = 0;
    assert_true(QueryServiceConfigW(s, (QUERY_SERVICE_CONFIGW *)buf, sizeof(buf), &need));
    const QUERY_SERVICE_CONFIGW *qc = (const QUERY_SERVICE_CONFIGW *)buf;
    wchar_t want_tail[128];
    swprintf(want_tail, 128, L" service --name %ls --config \"C:\\pw data\\agent.conf\"", wname);
    size_t bl = wcslen(qc->lpBinaryPathName), tl = wcslen(want_tail);
    int cmd_ok = bl > tl && wcscmp(qc->lpBinaryPathName + bl - tl, want_tail) == 0;
    DWORD start = qc->dwStartType;
    wchar_t want_display[96];
    swprintf(want_display, 96, L"poolwatch agent (%ls)", wname); /* unique, as the SCM wants */
    int display_ok = qc->lpDisplayName != NULL && wcscmp(qc->lpDisplayName, want_display) == 0;
    /* Wine (8.0) implements neither query of the failure actions (nor the flag's setting,
     * which install reports as "not supported", as Windows before Vista would): checked on
     * Windows only. */
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
    int wine = ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
    static BYTE fbuf[4096], gbuf[64];
    BOOL fa_ok = TRUE, flag_ok = TRUE;
    if (!wine) {
        fa_ok = QueryServiceConfig2W(s, SERVICE_CONFIG_FAILURE_ACTIONS, fbuf, sizeof(fbuf), &need);
        flag_ok = QueryServiceConfig2W(s, 4 /* SERVICE_CONFIG_FAILURE_ACTIONS_FLAG */, gbuf,
                                       sizeof(gbuf), &need);
    }
    CloseServiceHandle(s);
    CloseServiceHandle(scm);
    char *uargv[] = {(char *)"poolwatch-agent", (char *)"uninstall", (char *)"--name", name, NULL};
    rc = -1;
    assert_int_equal(pw_service_dispatch(&test_svc, 4, uargv, &rc), 1);
    assert_int_equal(rc, 0);

    assert_true(cmd_ok);
    assert_true(display_ok);
    assert_int_equal(start, SERVICE_AUTO_START);
    if (!wine) {
        assert_true(fa_ok);
        const SERVICE_FAILURE_ACTIONSW *fa = (const SERVICE_FAILURE_ACTIONSW *)fbuf;
        assert_int_equal(fa->dwResetPeriod, 86400);
        assert_int_equal(fa->cActions, 3);
        assert_int_equal(fa->lpsaActions[0].Type, SC_ACTION_RESTART);
        assert_int_equal(fa->lpsaActions[0].Delay, 10000);
        assert_int_equal(fa->lpsaActions[1].Delay, 60000);
        assert_int_equal(fa->lpsaActions[2].Delay, 300000);
        assert_true(flag_ok);
        assert_int_equal(((const BOOL *)gbuf)[0], TRUE); /* fFailureActionsOnNonCrashFailures */
    }
    /* Gone: opening it again fails. */
    scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
    assert_null(OpenServiceW(scm, wname, SERVICE_QUERY_CONFIG));
    CloseServiceHandle(scm);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_args_not_a_subcommand),
        cmocka_unit_test(test_service_args_install_forms),
        cmocka_unit_test(test_service_args_errors),
        cmocka_unit_test(test_service_absolute_paths),
        cmocka_unit_test(test_service_quoting),
        cmocka_unit_test(test_service_command_line),
        cmocka_unit_test(test_service_default_paths),
#ifdef _WIN32
        cmocka_unit_test(test_service_install_scm),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
