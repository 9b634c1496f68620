/* service_win.c: the Windows service: install and uninstall through the Service Control Manager,
 * and the service itself (StartServiceCtrlDispatcher, a control handler that stops the agent).
 * Contract and subcommands: service_win.h. */
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

#include "agent.h"
#include "service_win.h"

#define CMDLINE_MAX 4096

/* State of the running service (one per process: SERVICE_WIN32_OWN_PROCESS). */
static struct {
    SERVICE_STATUS_HANDLE handle;
    SERVICE_STATUS status;
    pw_service_main_fn agent_main;
    char name[PW_SERVICE_NAME_MAX + 1];
    char config[MAX_PATH * 2];
} svc;

static void print_win_error(const char *what)
{
    DWORD e = GetLastError();
    char msg[512] = "";
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, msg,
                   sizeof(msg), NULL);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    fprintf(stderr, "poolwatch-agent: %s: error %lu%s%s\n", what, (unsigned long)e, n ? ": " : "",
            msg);
}

static void default_path(const char *file, char *out, size_t size)
{
    const char *pd = getenv("ProgramData");
    if (pw_service_default_path(pd, file, out, size) != 0)
        out[0] = '\0';
}

static int install(const pw_svc_args_t *a)
{
    char exe[MAX_PATH * 2], config[MAX_PATH * 2], cmd[CMDLINE_MAX];
    DWORD n = GetModuleFileNameA(NULL, exe, sizeof(exe));
    if (n == 0 || n >= sizeof(exe)) {
        print_win_error("GetModuleFileName");
        return 1;
    }
    if (a->config)
        snprintf(config, sizeof(config), "%s", a->config);
    else
        default_path(PW_SERVICE_CONFIG_FILE, config, sizeof(config));
    if (pw_service_command_line(exe, a->name, config, cmd, sizeof(cmd)) != 0) {
        fprintf(stderr, "poolwatch-agent: install: command line too long\n");
        return 1;
    }
    SC_HANDLE scm = OpenSCManagerA(NULL, NULL, SC_MANAGER_CREATE_SERVICE);
    if (scm == NULL) {
        print_win_error("OpenSCManager (run as Administrator)");
        return 1;
    }
    SC_HANDLE s = CreateServiceA(scm, a->name, PW_SERVICE_DISPLAY_NAME, SERVICE_ALL_ACCESS,
                                 SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START,
                                 SERVICE_ERROR_NORMAL, cmd, NULL, NULL, NULL, NULL, NULL);
    if (s == NULL) {
        print_win_error("CreateService");
        CloseServiceHandle(scm);
        return 1;
    }
    SERVICE_DESCRIPTIONA desc = {
        (char *)(uintptr_t) "Streams kernel pool-tag counters to a poolwatch collector"};
    ChangeServiceConfig2A(s, SERVICE_CONFIG_DESCRIPTION, &desc);
    /* Restart after a crash or a fatal error: 10 s, 60 s, then every 5 min; the failure count
     * resets after a day. */
    SC_ACTION acts[3] = {
        {SC_ACTION_RESTART, 10000}, {SC_ACTION_RESTART, 60000}, {SC_ACTION_RESTART, 300000}};
    SERVICE_FAILURE_ACTIONSA fa;
    memset(&fa, 0, sizeof(fa));
    fa.dwResetPeriod = 86400;
    fa.cActions = 3;
    fa.lpsaActions = acts;
    ChangeServiceConfig2A(s, SERVICE_CONFIG_FAILURE_ACTIONS, &fa);
    printf("installed service '%s': %s\n", a->name, cmd);
    CloseServiceHandle(s);
    CloseServiceHandle(scm);
    return 0;
}

static int uninstall(const pw_svc_args_t *a)
{
    SC_HANDLE scm = OpenSCManagerA(NULL, NULL, SC_MANAGER_CONNECT);
    if (scm == NULL) {
        print_win_error("OpenSCManager (run as Administrator)");
        return 1;
    }
    SC_HANDLE s = OpenServiceA(scm, a->name, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE);
    if (s == NULL) {
        print_win_error("OpenService");
        CloseServiceHandle(scm);
        return 1;
    }
    SERVICE_STATUS st;
    if (QueryServiceStatus(s, &st) && st.dwCurrentState != SERVICE_STOPPED &&
        ControlService(s, SERVICE_CONTROL_STOP, &st)) {
        /* Give the agent up to 30 s to close its session and spool. */
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

/* Runs on the dispatcher thread; the agent runs on the service thread. */
static DWORD WINAPI control_handler(DWORD ctrl, DWORD type, LPVOID data, LPVOID ctx)
{
    (void)type;
    (void)data;
    (void)ctx;
    switch (ctrl) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
        report(SERVICE_STOP_PENDING, 0, 30000);
        pw_agent_stop();
        return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE:
        return NO_ERROR;
    default:
        return ERROR_CALL_NOT_IMPLEMENTED;
    }
}

/* A service has no console: the log (stderr) goes to %ProgramData%\poolwatch\agent.log. */
static void redirect_log(void)
{
    char dir[MAX_PATH * 2], log[MAX_PATH * 2];
    default_path(NULL, dir, sizeof(dir));
    default_path(PW_SERVICE_LOG_FILE, log, sizeof(log));
    if (dir[0] == '\0' || log[0] == '\0')
        return;
    CreateDirectoryA(dir, NULL);
    if (freopen(log, "a", stderr) != NULL)
        setvbuf(stderr, NULL, _IONBF, 0);
}

static void WINAPI service_main(DWORD argc, LPSTR *argv)
{
    (void)argc;
    (void)argv;
    svc.handle = RegisterServiceCtrlHandlerExA(svc.name, control_handler, NULL);
    if (svc.handle == NULL)
        return;
    report(SERVICE_START_PENDING, 0, 10000);
    redirect_log();
    char cfg_flag[MAX_PATH * 2 + 16];
    snprintf(cfg_flag, sizeof(cfg_flag), "--config=%s", svc.config);
    char *args[] = {(char *)(uintptr_t) "poolwatch-agent", cfg_flag, NULL};
    report(SERVICE_RUNNING, 0, 0);
    int rc = svc.agent_main(2, args);
    fflush(stderr);
    report(SERVICE_STOPPED, (DWORD)rc, 0);
}

static int run_service(const pw_svc_args_t *a, pw_service_main_fn agent_main)
{
    svc.agent_main = agent_main;
    snprintf(svc.name, sizeof(svc.name), "%s", a->name);
    if (a->config)
        snprintf(svc.config, sizeof(svc.config), "%s", a->config);
    else
        default_path(PW_SERVICE_CONFIG_FILE, svc.config, sizeof(svc.config));
    SERVICE_TABLE_ENTRYA table[] = {{svc.name, service_main}, {NULL, NULL}};
    /* Blocks until the service stops; fails at once when not started by the SCM. */
    if (!StartServiceCtrlDispatcherA(table)) {
        if (GetLastError() == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT)
            fprintf(stderr, "poolwatch-agent: 'service' is run by the Service Control Manager; "
                            "use 'install', or run without it in a console\n");
        else
            print_win_error("StartServiceCtrlDispatcher");
        return 1;
    }
    return svc.status.dwServiceSpecificExitCode == 0 ? 0 : 1;
}

int pw_service_dispatch(int argc, char **argv, pw_service_main_fn agent_main, int *exit_code)
{
    pw_svc_args_t a;
    pw_diag_t d;
    pw_diag_clear(&d);
    if (pw_service_parse_args(argc, argv, &a, &d) != 0) {
        fprintf(stderr, "poolwatch-agent: %s\n", d.msg);
        *exit_code = 2;
        return 1;
    }
    switch (a.cmd) {
    case PW_SVC_INSTALL:
        *exit_code = install(&a);
        return 1;
    case PW_SVC_UNINSTALL:
        *exit_code = uninstall(&a);
        return 1;
    case PW_SVC_RUN:
        *exit_code = run_service(&a, agent_main);
        return 1;
    default:
        return 0;
    }
}
