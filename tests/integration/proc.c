/* proc.c: processes of the end-to-end tests (proc.h). */
#include "proc.h"
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 512

static pid_t children[MAX_CHILDREN];
static size_t n_children;

static void forget(pid_t pid)
{
    for (size_t i = 0; i < n_children; i++)
        if (children[i] == pid) {
            children[i] = children[--n_children];
            return;
        }
}

int pw_proc_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &l);
    close(s);
    return ntohs(a.sin_port);
}

void pw_proc_kill_all(void)
{
    while (n_children > 0) {
        pid_t pid = children[--n_children];
        if (kill(pid, SIGKILL) == 0)
            waitpid(pid, NULL, 0);
    }
}

pid_t pw_proc_spawn(char *const argv[], const char *log)
{
    static int registered;
    if (!registered) {
        atexit(pw_proc_kill_all);
        registered = 1;
    }
    assert_true(n_children < MAX_CHILDREN);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd < 0 || nul < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        dup2(nul, 0);
        execvp(argv[0], argv);
        _exit(127);
    }
    children[n_children++] = pid;
    return pid;
}

void pw_proc_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t pw_proc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int pw_proc_wait_exit(pid_t pid, long timeout_ms)
{
    uint64_t end = mono_ms() + (uint64_t)timeout_ms;
    for (;;) {
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            forget(pid);
            return st;
        }
        if (mono_ms() >= end)
            return -1;
        pw_proc_sleep_ms(20);
    }
}

int pw_proc_stop(pid_t pid, int sig, long timeout_ms)
{
    kill(pid, sig);
    int st = pw_proc_wait_exit(pid, timeout_ms);
    if (st == -1) {
        fprintf(stderr, "process %d still running %ld ms after signal %d: killed\n", (int)pid,
                timeout_ms, sig);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        forget(pid);
    }
    return st;
}

void pw_proc_dump_log(const char *path, int lines)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "echo '--- last %d lines of %s:' >&2; tail -n %d '%s' >&2", lines,
             path, lines, path);
    if (system(cmd) != 0)
        fprintf(stderr, "(cannot show %s)\n", path);
}

void pw_proc_wait(int (*cond)(void *arg), void *arg, long timeout_ms, const char *what,
                  const char *log)
{
    uint64_t start = mono_ms();
    while (!cond(arg)) {
        if (mono_ms() - start >= (uint64_t)timeout_ms) {
            if (log != NULL)
                pw_proc_dump_log(log, 30);
            fail_msg("timed out after %ld ms waiting for %s", timeout_ms, what);
        }
        pw_proc_sleep_ms(50);
    }
}

typedef struct {
    const char *log, *needle;
    size_t count;
} log_wait_t;

static int log_has(void *arg)
{
    const log_wait_t *w = arg;
    if (access(w->log, R_OK) != 0)
        return 0;
    return pw_test_count_in_file(w->log, w->needle) >= w->count;
}

void pw_proc_wait_log(const char *log, const char *needle, size_t count, long timeout_ms)
{
    char what[1200];
    snprintf(what, sizeof(what), "%zu x '%s' in %s", count, needle, log);
    log_wait_t w = {log, needle, count};
    pw_proc_wait(log_has, &w, timeout_ms, what, log);
}

void pw_proc_remove_dir(const char *dir, const char *keep_env)
{
    if (getenv(keep_env) != NULL)
        return;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fail_msg("cannot remove %s", dir);
}

void pw_proc_pki(const char *source_dir, const char *dir, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "bash '%s/deploy/pki.sh' '%s' %s >/dev/null 2>&1", source_dir, dir,
             args);
    if (system(cmd) != 0)
        fail_msg("deploy/pki.sh %s %s failed", dir, args);
}

void pw_proc_tokens_file(const char *path, const char *token, const char *role_and_name)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "printf '%%s %%s\\n' $(printf %%s '%s' | sha256sum | cut -d' ' -f1) '%s' > '%s'",
             token, role_and_name, path);
    assert_int_equal(system(cmd), 0);
}

char *pw_proc_https(const char *ca_file, int port, const char *token, const char *path,
                    const char *body)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "curl -s --cacert '%s' -H 'Authorization: Bearer %s' %s%s%s "
             "'https://localhost:%d%s'",
             ca_file, token, body ? "-d '" : "", body ? body : "", body ? "'" : "", port, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n;
    while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    pclose(p);
    return out;
}

uint64_t pw_proc_json_u64(const char *json, const char *key, uint64_t dflt)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (p == NULL)
        return dflt;
    p += strlen(pat);
    if (*p < '0' || *p > '9')
        return dflt;
    return strtoull(p, NULL, 10);
}

pid_t pw_proc_vm_start(const char *data_dir, int port, const char *log)
{
    char a_dir[400], a_addr[64];
    snprintf(a_dir, sizeof(a_dir), "-storageDataPath=%s", data_dir);
    snprintf(a_addr, sizeof(a_addr), "-httpListenAddr=127.0.0.1:%d", port);
    char *argv[] = {"/usr/bin/victoria-metrics",
                    a_dir,
                    a_addr,
                    "-retentionPeriod=100y",
                    "-dedup.minScrapeInterval=1ms",
                    "-search.disableCache",
                    "-search.latencyOffset=0s",
                    "-loggerLevel=ERROR",
                    NULL};
    pid_t pid = pw_proc_spawn(argv, log);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "curl -sf -o /dev/null http://127.0.0.1:%d/health", port);
    for (int i = 0; i < 300; i++) {
        if (system(cmd) == 0)
            return pid;
        pw_proc_sleep_ms(100);
    }
    pw_proc_dump_log(log, 20);
    fail_msg("victoria-metrics did not answer /health within 30 s");
    return -1;
}

/* ---- the daemons of the tests ------------------------------------------------------------ */

const char *pw_proc_daemon_path(const pw_proc_daemon_t *dm, const char *rel, char *out, size_t n)
{
    if (snprintf(out, n, "%s%s/%s", dm->wine ? "Z:" : "", dm->dir, rel) >= (int)n)
        fail_msg("path %s/%s longer than %zu bytes: make the buffer larger", dm->dir, rel, n);
    for (char *p = out; dm->wine && *p; p++)
        if (*p == '/')
            *p = '\\';
    return out;
}

#define MAX_ARGS 32

/* argv[0..n) = [wine] exe, then the daemon's flags */
static size_t launch_args(const pw_proc_daemon_t *dm, char **argv)
{
    size_t n = 0;
    if (dm->wine)
        argv[n++] = (char *)(uintptr_t)dm->wine;
    argv[n++] = (char *)(uintptr_t)dm->exe;
    return n;
}

static void add_extra(char **argv, size_t *n, const char *const *extra, size_t n_extra)
{
    for (size_t i = 0; i < n_extra; i++)
        if (extra[i] != NULL) {
            assert_true(*n < MAX_ARGS - 1);
            argv[(*n)++] = (char *)(uintptr_t)extra[i];
        }
    argv[*n] = NULL;
}

pid_t pw_proc_start_collector(const pw_proc_daemon_t *dm, const char *name, const char *db,
                              int agents_port, int http_port, const char *const *extra,
                              size_t n_extra)
{
    char log[400], listen[64], a_db[700], ca[700], cert[700], key[700], http[64], tokens[700],
        w[600];
    snprintf(log, sizeof(log), "%s/%s.log", dm->dir, name);
    snprintf(listen, sizeof(listen), "--agents.listen=127.0.0.1:%d", agents_port);
    snprintf(a_db, sizeof(a_db), "--store.path=%s", pw_proc_daemon_path(dm, db, w, sizeof(w)));
    snprintf(ca, sizeof(ca), "--agents.ca_file=%s",
             pw_proc_daemon_path(dm, "pki/ca.pem", w, sizeof(w)));
    snprintf(cert, sizeof(cert), "--agents.cert_file=%s",
             pw_proc_daemon_path(dm, "pki/collector.pem", w, sizeof(w)));
    snprintf(key, sizeof(key), "--agents.key_file=%s",
             pw_proc_daemon_path(dm, "pki/collector.key", w, sizeof(w)));
    snprintf(http, sizeof(http), "--http.listen=127.0.0.1:%d", http_port);
    snprintf(tokens, sizeof(tokens), "--http.tokens_file=%s",
             pw_proc_daemon_path(dm, "tokens", w, sizeof(w)));
    char *argv[MAX_ARGS];
    size_t n = launch_args(dm, argv);
    const char *flags[] = {listen, a_db, ca,     cert,
                           key,    http, tokens, "--collector.log_level=debug"};
    add_extra(argv, &n, flags, sizeof(flags) / sizeof(flags[0]));
    add_extra(argv, &n, extra, n_extra);
    return pw_proc_spawn(argv, log);
}

pid_t pw_proc_start_agent(const pw_proc_daemon_t *dm, int port, const char *name,
                          const char *source, const char *host, const char *cert,
                          const char *interval, const char *const *extra, size_t n_extra)
{
    char log[400], rel[300], w[600], src[700], a_host[300], spool[700], ep[64], ca[700],
        a_cert[700], a_key[700], iv[64];
    snprintf(log, sizeof(log), "%s/agent-%s.log", dm->dir, name);
    snprintf(src, sizeof(src), "--agent.source=%s", source);
    snprintf(a_host, sizeof(a_host), "--agent.host_name=%s", host);
    snprintf(rel, sizeof(rel), "spool-%s", name);
    snprintf(spool, sizeof(spool), "--spool.dir=%s", pw_proc_daemon_path(dm, rel, w, sizeof(w)));
    snprintf(ep, sizeof(ep), "--collector.endpoints=127.0.0.1:%d", port);
    snprintf(ca, sizeof(ca), "--collector.ca_file=%s",
             pw_proc_daemon_path(dm, "pki/ca.pem", w, sizeof(w)));
    snprintf(rel, sizeof(rel), "%s.pem", cert);
    snprintf(a_cert, sizeof(a_cert), "--collector.cert_file=%s",
             pw_proc_daemon_path(dm, rel, w, sizeof(w)));
    snprintf(rel, sizeof(rel), "%s.key", cert);
    snprintf(a_key, sizeof(a_key), "--collector.key_file=%s",
             pw_proc_daemon_path(dm, rel, w, sizeof(w)));
    snprintf(iv, sizeof(iv), "--agent.interval=%s", interval);
    char *argv[MAX_ARGS];
    size_t n = launch_args(dm, argv);
    const char *flags[] = {src,
                           a_host,
                           spool,
                           ep,
                           ca,
                           a_cert,
                           a_key,
                           "--collector.server_name=localhost",
                           "--collector.backoff_min=200ms",
                           "--collector.backoff_max=1s",
                           iv};
    add_extra(argv, &n, flags, sizeof(flags) / sizeof(flags[0]));
    add_extra(argv, &n, extra, n_extra);
    return pw_proc_spawn(argv, log);
}

int pw_proc_run_tests(const struct CMUnitTest *tests, size_t n)
{
    signal(SIGPIPE, SIG_IGN);
    int r = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
    pw_proc_kill_all();
    return pw_test_exit(r);
}
