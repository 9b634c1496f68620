/* service_win.c: the Windows service of a daemon: install and uninstall through the Service
 * Control Manager, and the service itself (StartServiceCtrlDispatcher, a control handler that
 * stops the daemon). Contract and subcommands: service_win.h. */
#ifndef _WIN32
#error "service_win.c is for Windows builds only"
#endif

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "service_win.h"

#define CMDLINE_MAX 4096

/* Before Vista's headers: the flag that makes failure actions fire on a clean exit with an error
 * code (winsvc.h SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, SERVICE_FAILURE_ACTIONS_FLAG). */
#ifndef SERVICE_CONFIG_FAILURE_ACTIONS_FLAG
#define SERVICE_CONFIG_FAILURE_ACTIONS_FLAG 4
#endif
typedef struct {
    BOOL fFailureActionsOnNonCrashFailures;
} failure_actions_flag_t;

/* State of the running service (one per process: SERVICE_WIN32_OWN_PROCESS). */
static struct {
    SERVICE_STATUS_HANDLE handle;
    SERVICE_STATUS status;
    const pw_service_desc_t *desc;
    wchar_t name[PW_SERVICE_NAME_MAX + 1];
    char config[MAX_PATH * 4]; /* in the ANSI code page, as the daemon's argv and fopen take it */
} svc;

static const char *program = "poolwatch"; /* the message prefix: desc->program */

/* Strings: the service APIs are the wide ones (the ANSI ones lose every character outside the
 * system code page). argv and getenv of the C runtime are in the ANSI code page (CP_ACP); the
 * service command line is built in UTF-8 (pw_service_command_line works on bytes) and handed
 * to the SCM as UTF-16. Both helpers return 0, or -1 when the text does not fit or convert. */
static int to_wide(UINT cp, const char *s, wchar_t *out, int n)
{
    int r = MultiByteToWideChar(cp, cp == CP_UTF8 ? MB_ERR_INVALID_CHARS : 0, s, -1, out, n);
    return r > 0 ? 0 : -1;
}

static int to_narrow(UINT cp, const wchar_t *w, char *out, int n)
{
    int r = WideCharToMultiByte(cp, 0, w, -1, out, n, NULL, NULL);
    return r > 0 ? 0 : -1;
}

static void print_win_error_code(const char *what, DWORD e)
{
    wchar_t wmsg[512] = L"";
    char msg[1024] = "";
    FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, wmsg,
                   (DWORD)(sizeof(wmsg) / sizeof(wmsg[0])), NULL);
    if (to_narrow(CP_UTF8, wmsg, msg, (int)sizeof(msg)) != 0)
        msg[0] = '\0';
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    fprintf(stderr, "%s: %s: error %lu%s%s\n", program, what, (unsigned long)e, n ? ": " : "", msg);
}

static void print_win_error(const char *what)
{
    print_win_error_code(what, GetLastError());
}

/* <ProgramData>\poolwatch\<file> in code page `cp` (see pw_service_default_path). */
static void default_path(UINT cp, const char *file, char *out, size_t size)
{
    wchar_t pdw[MAX_PATH * 2];
    char pd[MAX_PATH * 4];
    DWORD n = GetEnvironmentVariableW(L"ProgramData", pdw, (DWORD)(sizeof(pdw) / sizeof(pdw[0])));
    const char *base = NULL;
    if (n > 0 && n < sizeof(pdw) / sizeof(pdw[0]) && to_narrow(cp, pdw, pd, (int)sizeof(pd)) == 0)
        base = pd;
    if (pw_service_default_path(base, file, out, size) != 0)
        out[0] = '\0';
}

/* Sets the service's description, its restart actions and the flag that makes them fire on an
 * exit with an error code too (without it, only a crash restarts the service: a daemon exits
 * cleanly with a code when, e.g., its spool or store fails). Each failure is reported; the service
 * stays installed. Returns the number of settings that failed. */
static int configure_service(SC_HANDLE s, const pw_service_desc_t *d)
{
    int failed = 0;
    wchar_t text_w[512];
    SERVICE_DESCRIPTIONW text = {text_w};
    if (to_wide(CP_UTF8, d->description, text_w, (int)(sizeof(text_w) / sizeof(text_w[0]))) != 0 ||
        !ChangeServiceConfig2W(s, SERVICE_CONFIG_DESCRIPTION, &text)) {
        print_win_error("ChangeServiceConfig2 (description)");
        failed++;
    }
    /* Restart after a crash or a fatal error: 10 s, 60 s, then every 5 min; the failure count
     * resets after a day. */
    SC_ACTION acts[3] = {
        {SC_ACTION_RESTART, 10000}, {SC_ACTION_RESTART, 60000}, {SC_ACTION_RESTART, 300000}};
    SERVICE_FAILURE_ACTIONSW fa;
    memset(&fa, 0, sizeof(fa));
    fa.dwResetPeriod = 86400;
    fa.cActions = 3;
    fa.lpsaActions = acts;
    if (!ChangeServiceConfig2W(s, SERVICE_CONFIG_FAILURE_ACTIONS, &fa)) {
        print_win_error("ChangeServiceConfig2 (failure actions: no restarts)");
        failed++;
    }
    failure_actions_flag_t flag = {TRUE};
    if (!ChangeServiceConfig2W(s, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &flag)) {
        DWORD e = GetLastError();
        /* Before Vista the flag does not exist: restarts follow crashes only. */
        print_win_error_code(e == ERROR_INVALID_LEVEL
                                 ? "ChangeServiceConfig2 (failure actions flag: not supported by "
                                   "this Windows; restarts after crashes only)"
                                 : "ChangeServiceConfig2 (failure actions flag)",
                             e);
        failed++;
    }
    return failed;
}

static int install(const pw_service_desc_t *desc, const pw_svc_args_t *a)
{
    wchar_t exe_w[MAX_PATH * 4];
    char exe[MAX_PATH * 12], config[MAX_PATH * 12], name[PW_SERVICE_NAME_MAX * 4 + 1];
    char cmd[CMDLINE_MAX];
    wchar_t cmd_w[CMDLINE_MAX], name_w[PW_SERVICE_NAME_MAX + 1];
    DWORD n = GetModuleFileNameW(NULL, exe_w, (DWORD)(sizeof(exe_w) / sizeof(exe_w[0])));
    if (n == 0 || n >= sizeof(exe_w) / sizeof(exe_w[0]) ||
        to_narrow(CP_UTF8, exe_w, exe, (int)sizeof(exe)) != 0) {
        print_win_error("GetModuleFileName");
        return 1;
    }
    wchar_t tmp[MAX_PATH * 4];
    if (a->config) {
        if (to_wide(CP_ACP, a->config, tmp, (int)(sizeof(tmp) / sizeof(tmp[0]))) != 0 ||
            to_narrow(CP_UTF8, tmp, config, (int)sizeof(config)) != 0) {
            fprintf(stderr, "%s: install: --config path too long\n", program);
            return 1;
        }
    } else {
        default_path(CP_UTF8, desc->config_file, config, sizeof(config));
    }
    if (to_wide(CP_ACP, a->name, name_w, (int)(sizeof(name_w) / sizeof(name_w[0]))) != 0 ||
        to_narrow(CP_UTF8, name_w, name, (int)sizeof(name)) != 0) {
        fprintf(stderr, "%s: install: --name too long\n", program);
        return 1;
    }
    if (pw_service_command_line(exe, name, config, cmd, sizeof(cmd)) != 0 ||
        to_wide(CP_UTF8, cmd, cmd_w, (int)(sizeof(cmd_w) / sizeof(cmd_w[0]))) != 0) {
        fprintf(stderr, "%s: install: command line too long\n", program);
        return 1;
    }
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CREATE_SERVICE);
    if (scm == NULL) {
        print_win_error("OpenSCManager (run as Administrator)");
        return 1;
    }
    /* Display names are unique too (ERROR_DUPLICATE_SERVICE_NAME): a second daemon installed
     * under another --name shows it. */
    wchar_t display_w[PW_SERVICE_NAME_MAX + 96], dflt_w[PW_SERVICE_NAME_MAX + 1], base_w[64];
    if (to_wide(CP_UTF8, desc->default_name, dflt_w, (int)(sizeof(dflt_w) / sizeof(dflt_w[0]))) !=
            0 ||
        to_wide(CP_UTF8, desc->display_name, base_w, (int)(sizeof(base_w) / sizeof(base_w[0]))) !=
            0) {
        fprintf(stderr, "%s: install: service names too long\n", program);
        CloseServiceHandle(scm);
        return 1;
    }
    if (wcscmp(name_w, dflt_w) == 0)
        swprintf(display_w, sizeof(display_w) / sizeof(display_w[0]), L"%ls", base_w);
    else
        swprintf(display_w, sizeof(display_w) / sizeof(display_w[0]), L"%ls (%ls)", base_w, name_w);
    SC_HANDLE s = CreateServiceW(scm, name_w, display_w, SERVICE_ALL_ACCESS,
                                 SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START,
                                 SERVICE_ERROR_NORMAL, cmd_w, NULL, NULL, NULL, NULL, NULL);
    if (s == NULL) {
        print_win_error("CreateService");
        CloseServiceHandle(scm);
        return 1;
    }
    int failed = configure_service(s, desc);
    printf("installed service '%s': %s%s\n", name, cmd,
           failed ? " (some settings failed, see above)" : "");
    CloseServiceHandle(s);
    CloseServiceHandle(scm);
    return 0;
}

static int uninstall(const pw_svc_args_t *a)
{
    wchar_t name_w[PW_SERVICE_NAME_MAX + 1];
    if (to_wide(CP_ACP, a->name, name_w, (int)(sizeof(name_w) / sizeof(name_w[0]))) != 0) {
        fprintf(stderr, "%s: uninstall: --name too long\n", program);
        return 1;
    }
    SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
    if (scm == NULL) {
        print_win_error("OpenSCManager (run as Administrator)");
        return 1;
    }
    SC_HANDLE s = OpenServiceW(scm, name_w, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE);
    if (s == NULL) {
        print_win_error("OpenService");
        CloseServiceHandle(scm);
        return 1;
    }
    SERVICE_STATUS st;
    if (QueryServiceStatus(s, &st) && st.dwCurrentState != SERVICE_STOPPED &&
        ControlService(s, SERVICE_CONTROL_STOP, &st)) {
        /* Give the daemon up to 30 s to close its sessions, spool or store. */
        for (int i = 0; i < 300 && st.dwCurrentState != SERVICE_STOPPED; i++) {
            Sleep(100);
            if (!QueryServiceStatus(s, &st))
                break;
        }
    }
    int rc = 0;
    if (!DeleteService(s)) {
        print_win_error("DeleteService");
        rc = 1;
    } else {
        printf("uninstalled service '%s'\n", a->name);
    }
    CloseServiceHandle(s);
    CloseServiceHandle(scm);
    return rc;
}

static void report(DWORD state, DWORD exit_code, DWORD wait_hint)
{
    svc.status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    svc.status.dwCurrentState = state;
    svc.status.dwControlsAccepted =
        state == SERVICE_RUNNING ? SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN : 0;
    svc.status.dwWin32ExitCode = exit_code ? ERROR_SERVICE_SPECIFIC_ERROR : NO_ERROR;
    svc.status.dwServiceSpecificExitCode = exit_code;
    svc.status.dwWaitHint = wait_hint;
    svc.status.dwCheckPoint =
        state == SERVICE_RUNNING || state == SERVICE_STOPPED ? 0 : svc.status.dwCheckPoint + 1;
    SetServiceStatus(svc.handle, &svc.status);
}

/* Runs on the dispatcher thread; the daemon runs on the service thread. */
static DWORD WINAPI control_handler(DWORD ctrl, DWORD type, LPVOID data, LPVOID ctx)
{
    (void)type;
    (void)data;
    (void)ctx;
    switch (ctrl) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
        report(SERVICE_STOP_PENDING, 0, 30000);
        svc.desc->stop();
        return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE:
        return NO_ERROR;
    default:
        return ERROR_CALL_NOT_IMPLEMENTED;
    }
}

/* A service has no console: the log (stderr) goes to %ProgramData%\poolwatch\<log_file>. */
static void redirect_log(void)
{
    char dir[MAX_PATH * 12], log[MAX_PATH * 12];
    wchar_t dir_w[MAX_PATH * 4], log_w[MAX_PATH * 4];
    default_path(CP_UTF8, NULL, dir, sizeof(dir));
    default_path(CP_UTF8, svc.desc->log_file, log, sizeof(log));
    if (dir[0] == '\0' || log[0] == '\0' ||
        to_wide(CP_UTF8, dir, dir_w, (int)(sizeof(dir_w) / sizeof(dir_w[0]))) != 0 ||
        to_wide(CP_UTF8, log, log_w, (int)(sizeof(log_w) / sizeof(log_w[0]))) != 0)
        return;
    CreateDirectoryW(dir_w, NULL);
    /* msvcrt cannot reopen a stderr that has no file (a service has no standard handles:
     * freopen fails), so the log goes to its own stream then (log.h). */
    FILE *f = _wfreopen(log_w, L"a", stderr);
    if (f == NULL && (f = _wfopen(log_w, L"a")) != NULL)
        pw_log_set_file(f);
    if (f != NULL)
        setvbuf(f, NULL, _IONBF, 0);
}

static void WINAPI service_main(DWORD argc, LPWSTR *argv)
{
    (void)argc;
    (void)argv;
    svc.handle = RegisterServiceCtrlHandlerExW(svc.name, control_handler, NULL);
    if (svc.handle == NULL)
        return;
    report(SERVICE_START_PENDING, 0, 10000);
    redirect_log();
    char cfg_flag[sizeof(svc.config) + 16];
    snprintf(cfg_flag, sizeof(cfg_flag), "--config=%s", svc.config);
    char *args[] = {(char *)(uintptr_t)svc.desc->program, cfg_flag, NULL};
    report(SERVICE_RUNNING, 0, 0);
    int rc = svc.desc->main(2, args);
    fflush(pw_log_file());
    report(SERVICE_STOPPED, (DWORD)rc, 0);
}

static int run_service(const pw_service_desc_t *desc, const pw_svc_args_t *a)
{
    svc.desc = desc;
    if (to_wide(CP_ACP, a->name, svc.name, (int)(sizeof(svc.name) / sizeof(svc.name[0]))) != 0) {
        fprintf(stderr, "%s: service: --name too long\n", program);
        return 1;
    }
    /* The daemon opens its configuration with the C runtime's narrow calls: ANSI code page. */
    if (a->config)
        snprintf(svc.config, sizeof(svc.config), "%s", a->config);
    else
        default_path(CP_ACP, desc->config_file, svc.config, sizeof(svc.config));
    SERVICE_TABLE_ENTRYW table[] = {{svc.name, service_main}, {NULL, NULL}};
    /* Blocks until the service stops; fails at once when not started by the SCM. */
    if (!StartServiceCtrlDispatcherW(table)) {
        if (GetLastError() == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT)
            fprintf(stderr,
                    "%s: 'service' is run by the Service Control Manager; use 'install', or run "
                    "without it in a console\n",
                    program);
        else
            print_win_error("StartServiceCtrlDispatcher");
        return 1;
    }
    return svc.status.dwServiceSpecificExitCode == 0 ? 0 : 1;
}

int pw_service_dispatch(const pw_service_desc_t *desc, int argc, char **argv, int *exit_code)
{
    program = desc->program;
    pw_svc_args_t a;
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_service_parse_args(argc, argv, desc->default_name, &a, &d) != 0) {
        fprintf(stderr, "%s: %s\n", program, d.msg);
        *exit_code = 2;
        return 1;
    }
    switch (a.cmd) {
    case PW_SVC_INSTALL:
        *exit_code = install(desc, &a);
        return 1;
    case PW_SVC_UNINSTALL:
        *exit_code = uninstall(&a);
        return 1;
    case PW_SVC_RUN:
        *exit_code = run_service(desc, &a);
        return 1;
    default:
        return 0;
    }
}
