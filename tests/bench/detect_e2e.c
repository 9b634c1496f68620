/* detect_e2e.c: bench_detect's end-to-end harness (detect_e2e.h). */
#define _GNU_SOURCE
#include "detect_e2e.h"

#include "bench_proc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define E2E_TOKEN      "bench-detect-admin-token-7c1e"
#define E2E_MAX_AGENTS 64

struct pw_e2e_s {
    char dir[64], src[512], cli[512], agent[512];
    int agents_port, http_port;
    pid_t collector;
    pid_t agents[E2E_MAX_AGENTS];
    int exits[E2E_MAX_AGENTS]; /* started with --replay.exit_when_done */
    size_t n_agents;
};

static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static int sh(const char *cmd)
{
    int r = system(cmd);
    return r == 0 ? 0 : -1;
}

pw_e2e_t *pw_e2e_start(const char *source_dir, const char *collector_bin, const char *cli_bin,
                       const char *agent_bin)
{
    pw_e2e_t *e = calloc(1, sizeof(*e));
    if (e == NULL)
        return NULL;
    snprintf(e->dir, sizeof(e->dir), "/tmp/pw-detect-e2e-XXXXXX");
    snprintf(e->src, sizeof(e->src), "%s", source_dir);
    snprintf(e->cli, sizeof(e->cli), "%s", cli_bin);
    snprintf(e->agent, sizeof(e->agent), "%s", agent_bin);
    if (mkdtemp(e->dir) == NULL) {
        perror("bench_detect e2e: mkdtemp");
        free(e);
        return NULL;
    }
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "'%s/deploy/pki.sh' '%s/pki' >/dev/null && printf '%%s admin bench\\n' $(printf %%s "
             "'%s' | sha256sum | cut -d' ' -f1) > '%s/tokens'",
             e->src, e->dir, E2E_TOKEN, e->dir);
    if (sh(cmd) != 0) {
        fprintf(stderr, "bench_detect e2e: PKI or tokens file failed: %s\n", cmd);
        pw_e2e_stop(e, 1);
        return NULL;
    }
    e->agents_port = bp_free_port();
    e->http_port = bp_free_port();
    char a[8][600], log[600];
    snprintf(a[0], sizeof(a[0]), "--agents.listen=127.0.0.1:%d", e->agents_port);
    snprintf(a[1], sizeof(a[1]), "--store.path=%s/pw.db", e->dir);
    snprintf(a[2], sizeof(a[2]), "--agents.ca_file=%s/pki/ca.pem", e->dir);
    snprintf(a[3], sizeof(a[3]), "--agents.cert_file=%s/pki/collector.pem", e->dir);
    snprintf(a[4], sizeof(a[4]), "--agents.key_file=%s/pki/collector.key", e->dir);
    snprintf(a[5], sizeof(a[5]), "--http.listen=127.0.0.1:%d", e->http_port);
    snprintf(a[6], sizeof(a[6]), "--http.tokens_file=%s/tokens", e->dir);
    snprintf(log, sizeof(log), "%s/collector.log", e->dir);
    char *argv[] = {
        (char *)(uintptr_t)collector_bin, a[0], a[1], a[2], a[3], a[4], a[5], a[6], NULL};
    e->collector = bp_spawn(argv, log);
    for (int i = 0; i < 300 && !file_has(log, "agents: "); i++)
        bp_sleep_ms(100);
    if (!file_has(log, "agents: ")) {
        fprintf(stderr, "bench_detect e2e: the collector did not start (see %s)\n", log);
        pw_e2e_stop(e, 1);
        return NULL;
    }
    char url[64], ca[600];
    snprintf(url, sizeof(url), "https://localhost:%d", e->http_port);
    snprintf(ca, sizeof(ca), "%s/pki/ca.pem", e->dir);
    setenv("POOLWATCH_URL", url, 1);
    setenv("POOLWATCH_CA", ca, 1);
    setenv("POOLWATCH_TOKEN", E2E_TOKEN, 1);
    return e;
}

const char *pw_e2e_dir(const pw_e2e_t *e)
{
    return e->dir;
}

int pw_e2e_import(pw_e2e_t *e, const char *host, const char *text, size_t len)
{
    char path[600], cmd[2048];
    snprintf(path, sizeof(path), "%s/%s.txt", e->dir, host);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "bench_detect e2e: cannot write %s\n", path);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "'%s' import '%s' --host '%s' >'%s/import.out' 2>&1", e->cli, path,
             host, e->dir);
    if (sh(cmd) != 0) {
        fprintf(stderr, "bench_detect e2e: import of %s failed:\n", host);
        snprintf(cmd, sizeof(cmd), "cat '%s/import.out' >&2", e->dir);
        (void)sh(cmd);
        return -1;
    }
    return 0;
}

int pw_e2e_agent(pw_e2e_t *e, const char *host, const char *source, const char *o1, const char *o2,
                 const char *o3)
{
    if (e->n_agents == E2E_MAX_AGENTS)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/deploy/pki.sh' '%s/pki' --agent '%s' >/dev/null", e->src,
             e->dir, host);
    if (sh(cmd) != 0) {
        fprintf(stderr, "bench_detect e2e: no certificate for agent %s\n", host);
        return -1;
    }
    char a[9][700], log[700];
    snprintf(a[0], sizeof(a[0]), "--agent.source=%s", source);
    snprintf(a[1], sizeof(a[1]), "--agent.host_name=%s", host);
    snprintf(a[2], sizeof(a[2]), "--spool.dir=%s/spool-%s", e->dir, host);
    snprintf(a[3], sizeof(a[3]), "--collector.endpoints=127.0.0.1:%d", e->agents_port);
    snprintf(a[4], sizeof(a[4]), "--collector.ca_file=%s/pki/ca.pem", e->dir);
    snprintf(a[5], sizeof(a[5]), "--collector.cert_file=%s/pki/agent-%s.pem", e->dir, host);
    snprintf(a[6], sizeof(a[6]), "--collector.key_file=%s/pki/agent-%s.key", e->dir, host);
    snprintf(a[7], sizeof(a[7]), "--collector.server_name=localhost");
    snprintf(log, sizeof(log), "%s/agent-%s.log", e->dir, host);
    char *argv[] = {e->agent,
                    a[0],
                    a[1],
                    a[2],
                    a[3],
                    a[4],
                    a[5],
                    a[6],
                    a[7],
                    (char *)(uintptr_t)o1,
                    (char *)(uintptr_t)o2,
                    (char *)(uintptr_t)o3,
                    NULL};
    const char *opts[3] = {o1, o2, o3};
    int exits = 0;
    for (int i = 0; i < 3; i++)
        exits |= opts[i] != NULL && strcmp(opts[i], "--replay.exit_when_done") == 0;
    e->exits[e->n_agents] = exits;
    e->agents[e->n_agents++] = bp_spawn(argv, log);
    return 0;
}

size_t pw_e2e_wait_agents(pw_e2e_t *e, int timeout_s)
{
    size_t left = 0;
    for (int t = 0; t <= timeout_s * 10; t++) {
        left = 0;
        for (size_t i = 0; i < e->n_agents; i++) {
            if (!e->exits[i] || e->agents[i] <= 0)
                continue;
            int st;
            if (waitpid(e->agents[i], &st, WNOHANG) == e->agents[i])
                e->agents[i] = 0;
            else
                left++;
        }
        if (left == 0)
            break;
        bp_sleep_ms(100);
    }
    return left;
}

long pw_e2e_passes(pw_e2e_t *e)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "curl -sf --cacert '%s/pki/ca.pem' -H 'Authorization: Bearer %s' "
             "'https://localhost:%d/metrics' | awk '$1 == \"poolwatch_analysis_passes_total\" "
             "{print $2}'",
             e->dir, E2E_TOKEN, e->http_port);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    long v = -1;
    if (fscanf(p, "%ld", &v) != 1)
        v = -1;
    pclose(p);
    return v;
}

json_t *pw_e2e_cli_json(pw_e2e_t *e, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' %s --json --compact", e->cli, args);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return NULL;
    json_error_t err;
    json_t *j = json_loadf(p, 0, &err);
    if (pclose(p) != 0 || j == NULL) {
        fprintf(stderr, "bench_detect e2e: poolwatch %s: %s\n", args, j ? "failed" : err.text);
        json_decref(j);
        return NULL;
    }
    return j;
}

void pw_e2e_stop(pw_e2e_t *e, int keep)
{
    if (e == NULL)
        return;
    for (size_t i = 0; i < e->n_agents; i++)
        bp_stop(e->agents[i], 10000);
    bp_stop(e->collector, 10000);
    if (keep) {
        fprintf(stderr, "bench_detect e2e: kept %s\n", e->dir);
    } else {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
        (void)sh(cmd);
    }
    free(e);
}
