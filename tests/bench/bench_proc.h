/* bench_proc.h: helpers shared by the benchmarks that run the real poolwatch binaries
 * (bench_agent.c, bench_collector.c): a throw-away PKI from deploy/pki.sh, a free loopback
 * port, starting and stopping a child process, and reading its CPU time and RSS from /proc
 * (proc(5): /proc/PID/task/TID/schedstat, first field: time on a CPU in ns, summed over
 * the threads — clock ticks of /proc/PID/stat are 10 ms, too coarse for an agent that runs
 * a few ms a minute; /proc/PID/status VmRSS, RssAnon, RssFile, VmHWM in kB). Header-only (static
 * functions): each benchmark is one program.
 */
#ifndef PW_BENCH_PROC_H
#define PW_BENCH_PROC_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double bp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void bp_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close). */
static inline int bp_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("bench: free port");
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* 1 once something accepts TCP connections on 127.0.0.1:port. */
static inline int bp_port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Runs a shell command; exits the benchmark when it fails. */
static inline void bp_system(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int r = system(cmd);
    if (r != 0) {
        fprintf(stderr, "bench: '%s' failed (%d)\n", cmd, r);
        exit(1);
    }
}

/* Starts argv[0] with stdout/stderr appended to `log`; returns the pid. */
static inline pid_t bp_spawn(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench: fork");
        exit(1);
    }
    if (pid == 0) {
        FILE *f = freopen(log, "a", stdout);
        if (f != NULL)
            dup2(fileno(stdout), 2);
        execv(argv[0], argv);
        perror(argv[0]);
        _exit(127);
    }
    return pid;
}

/* SIGTERM, then SIGKILL after `grace_ms`; reaps the child. */
static inline void bp_stop(pid_t pid, unsigned grace_ms)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (unsigned t = 0; t < grace_ms; t += 50) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        bp_sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* 1 while the child runs (reaps it when it exited). */
static inline int bp_alive(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == 0;
}

/* CPU time (user + system) of all threads of `pid` in seconds; -1 when unreadable. */
static inline double bp_cpu_s(pid_t pid)
{
    char path[64], tpath[400];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dp = opendir(path);
    if (dp == NULL)
        return -1;
    unsigned long long total = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(tpath, sizeof(tpath), "%s/%s/schedstat", path, de->d_name);
        FILE *f = fopen(tpath, "r");
        unsigned long long ns = 0;
        if (f != NULL) {
            if (fscanf(f, "%llu", &ns) != 1)
                ns = 0;
            fclose(f);
        }
        total += ns;
    }
    closedir(dp);
    return (double)total / 1e9;
}

/* A "Vm...:" line of /proc/PID/status in kB (key e.g. "VmRSS"); -1 when unreadable. */
static inline long bp_status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* Makes (or keeps: pki.sh is idempotent) the throw-away PKI in `dir` with client
 * certificates for the `n` names. */
static inline void bp_pki(const char *dir, const char *const *agents, size_t n)
{
    char cmd[4096];
    size_t off = (size_t)snprintf(
        cmd, sizeof(cmd), "%s/deploy/pki.sh %s --collector-name localhost", PW_SOURCE_DIR, dir);
    for (size_t i = 0; i < n && off < sizeof(cmd) - 300; i++)
        off += (size_t)snprintf(cmd + off, sizeof(cmd) - off, " --agent %s", agents[i]);
    snprintf(cmd + off, sizeof(cmd) - off, " >/dev/null");
    bp_system("%s", cmd);
}

/* Starts the poolwatch-collector of this build tree (bin_dir/collector/) on 127.0.0.1:port
 * for agents with the PKI in `pki`, its store and log (collector.log) in `work`, the HTTP API
 * off, plus `extra` (one more flag, or NULL), and waits up to 10 s for the port to open.
 * Returns its pid, or -1 when the binary is not built. */
static inline pid_t bp_collector_spawn_argv(const char *bin_dir, const char *work, const char *pki,
                                            int port, const char *const *extras);

static inline pid_t bp_collector_spawn(const char *bin_dir, const char *work, const char *pki,
                                       int port, const char *extra)
{
    const char *const ex[] = {extra, NULL};
    return bp_collector_spawn_argv(bin_dir, work, pki, port, ex);
}

/* The same with any number of extra arguments (NULL-terminated, at most 8). */
static inline pid_t bp_collector_spawn_argv(const char *bin_dir, const char *work, const char *pki,
                                            int port, const char *const *extras)
{
    char bin[1024], listen[64], store[1024], ca[1024], cert[1024], key[1024], log[1024];
    snprintf(bin, sizeof(bin), "%s/collector/poolwatch-collector", bin_dir);
    snprintf(listen, sizeof(listen), "--agents.listen=127.0.0.1:%d", port);
    snprintf(store, sizeof(store), "--store.path=%s/collector.db", work);
    snprintf(ca, sizeof(ca), "--agents.ca_file=%s/ca.pem", pki);
    snprintf(cert, sizeof(cert), "--agents.cert_file=%s/collector.pem", pki);
    snprintf(key, sizeof(key), "--agents.key_file=%s/collector.key", pki);
    snprintf(log, sizeof(log), "%s/collector.log", work);
    char *argv[] = {bin,
                    listen,
                    store,
                    ca,
                    cert,
                    key,
                    "--http.listen=",
                    "--collector.log_level=warn",
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL};
    for (size_t i = 0; extras != NULL && extras[i] != NULL && i < 8; i++)
        argv[8 + i] = (char *)(uintptr_t)extras[i];
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "bench: %s not built\n", bin);
        return -1;
    }
    pid_t pid = bp_spawn(argv, log);
    for (int i = 0; i < 100 && !bp_port_open(port); i++)
        bp_sleep_ms(100);
    return pid;
}

#endif /* PW_BENCH_PROC_H */
