/* wine.c: helpers of the Wine end-to-end tests (wine.h). */
#include "test_util.h"
#include "wine.h"
#include "proc.h"

#include <sys/wait.h>

const char *pw_wine_path(const char *unix_path, char *out, size_t n)
{
    char in[600];
    if (snprintf(in, sizeof(in), "%s", unix_path) >= (int)sizeof(in) || /* out may be unix_path */
        snprintf(out, n, "Z:%s", in) >= (int)n)
        abort(); /* a test path over 600 bytes: make the buffers larger */
    for (char *p = out; *p; p++)
        if (*p == '/')
            *p = '\\';
    return out;
}

pid_t pw_wine_start_agent(const char *wine, const char *exe, const char *dir, int port,
                          const char *name, const char *source, const char *host,
                          const char *extra1, const char *extra2)
{
    pw_proc_daemon_t dm = {wine, exe, dir};
    char cert[300];
    snprintf(cert, sizeof(cert), "pki/agent-%s", host);
    const char *extra[] = {"--agent.log_level=info", extra1, extra2};
    return pw_proc_start_agent(&dm, port, name, source, host, cert, "200ms", extra, 3);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

void pw_wine_write_pooltag(const char *path, uint32_t a, uint32_t f)
{
    uint8_t b[8 + 2 * 40];
    memset(b, 0, sizeof(b));
    put32(b, 2);
    memcpy(b + 8, "Leak", 4);
    put32(b + 8 + 4, a);
    put32(b + 8 + 8, f);
    put64(b + 8 + 16, 64ull * (a - f));
    memcpy(b + 48, "Ddk ", 4);
    put32(b + 48 + 24, 4660);
    put32(b + 48 + 28, 4096);
    put64(b + 48 + 32, 614400);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, sizeof(b), fp), sizeof(b));
    fclose(fp);
}

void pw_wine_write_perfinfo(const char *path)
{
    uint8_t b[120]; /* PW_WIN_PERFINFO_MIN_LEN: up to NonPagedPoolPages */
    memset(b, 0, sizeof(b));
    put32(b + 44, 300);  /* AvailablePages */
    put32(b + 48, 1000); /* CommittedPages */
    put32(b + 52, 5000); /* CommitLimit */
    put32(b + 112, 25);  /* PagedPoolPages */
    put32(b + 116, 10);  /* NonPagedPoolPages */
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, sizeof(b), fp), sizeof(b));
    fclose(fp);
}

int pw_wine_sc_state(const char *wine, const char *name)
{
    char cmd[512], line[256];
    snprintf(cmd, sizeof(cmd), "%s sc query %s </dev/null 2>/dev/null", wine, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int state = -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        const char *k = strstr(line, "STATE");
        const char *c = k ? strchr(k, ':') : NULL;
        if (c != NULL)
            state = atoi(c + 1);
    }
    pclose(p);
    return state;
}

int pw_wine_sc_wait(const char *wine, const char *name, int state)
{
    int st = -1;
    for (int i = 0; i < 50 && (st = pw_wine_sc_state(wine, name)) != state; i++)
        pw_proc_sleep_ms(200);
    return st;
}

/* The last `max` bytes of `path` on stderr, under a title. */
static void print_tail(const char *title, const char *path, size_t max)
{
    size_t n = 0;
    char *t = pw_test_read_file(path, &n);
    if (t == NULL)
        return;
    fprintf(stderr, "--- %s (%s), last %zu bytes:\n%s\n", title, path, n < max ? n : max,
            t + (n > max ? n - max : 0));
    free(t);
}

void pw_wine_sc_start(const char *wine, const char *name, const char *slog, const char *svc_log)
{
    char args[300];
    snprintf(args, sizeof(args), "sc start %s", name);
    pw_wine_run(wine, args, slog);
    int st = -1;
    for (int i = 0; i < 300 && (st = pw_wine_sc_state(wine, name)) != 4; i++)
        pw_proc_sleep_ms(200);
    if (st == 4)
        return;
    print_tail("sc output", slog, 2000);
    static const char *const pd[] = {"users/Public", "ProgramData"};
    const char *prefix = getenv("WINEPREFIX");
    for (size_t k = 0; prefix != NULL && k < 2; k++) {
        char log[400];
        snprintf(log, sizeof(log), "%s/drive_c/%s/poolwatch/%s", prefix, pd[k], svc_log);
        print_tail("the service's log", log, 3000);
    }
    fail_msg("service %s: state %d after sc start, not 4 (RUNNING)", name, st);
}

int pw_wine_run(const char *wine, const char *args, const char *log)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s %s </dev/null >>%s 2>&1", wine, args, log);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
