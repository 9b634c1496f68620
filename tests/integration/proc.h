/* proc.h: the processes of the end-to-end tests (tests/integration/): agents, collectors and
 * helpers started with their output in a log file; waits on what they do (a log line, an API
 * answer, an exit) with a bounded timeout and a failure that names what was awaited and shows
 * the end of the log; stops; and whatever is still running is killed when the test exits.
 * Built once (library pw_test_proc) and linked by every integration test. */
#ifndef PW_TEST_PROC_H
#define PW_TEST_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A free TCP port on 127.0.0.1 (bound, read back, released). */
int pw_proc_free_port(void);

/* Starts argv[0] (looked up in PATH when it has no '/') with stdin from /dev/null and stdout
 * and stderr appended to `log`. The child is remembered and killed at exit if still running. */
pid_t pw_proc_spawn(char *const argv[], const char *log);

/* Waits up to timeout_ms for pid to exit; returns its wait status, or -1 if it still runs. */
int pw_proc_wait_exit(pid_t pid, long timeout_ms);

/* Sends `sig` and waits up to timeout_ms; a process still running then is killed with SIGKILL
 * (said on stderr) and -1 returned. Otherwise returns the wait status. */
int pw_proc_stop(pid_t pid, int sig, long timeout_ms);

/* SIGKILLs and reaps every child still running (also run at exit). */
void pw_proc_kill_all(void);

void pw_proc_sleep_ms(long ms);

/* Wall-clock time in ms since the Unix epoch. */
uint64_t pw_proc_now_ms(void);

/* Polls cond(arg) every 50 ms until it returns non-zero; after timeout_ms the test fails with
 * "timed out after N ms waiting for <what>" and, when `log` is not NULL, the end of that log. */
void pw_proc_wait(int (*cond)(void *arg), void *arg, long timeout_ms, const char *what,
                  const char *log);

/* Waits until the file at `log` holds `needle` at least `count` times. */
void pw_proc_wait_log(const char *log, const char *needle, size_t count, long timeout_ms);

/* Prints the last `lines` lines of the file at `path` to stderr, headed by its name. */
void pw_proc_dump_log(const char *path, int lines);

/* Removes the test directory `dir` (rm -rf) unless the environment variable `keep_env` is set
 * (to look at a run's logs and files); fails the test if it cannot. */
void pw_proc_remove_dir(const char *dir, const char *keep_env);

/* Runs deploy/pki.sh DIR ARGS (quietly, under source_dir); fails the test if it fails. */
void pw_proc_pki(const char *source_dir, const char *dir, const char *args);

/* Writes a tokens file at `path` with one line: SHA-256 of `token`, then `role_and_name`
 * ("admin e2e"). */
void pw_proc_tokens_file(const char *path, const char *token, const char *role_and_name);

/* The body of https://localhost:PORT/PATH (a GET, or a POST of `body` when not NULL) with
 * `Authorization: Bearer token`, trusting ca_file; malloc'd, "" when nothing came back. */
char *pw_proc_https(const char *ca_file, int port, const char *token, const char *path,
                    const char *body);

/* The unsigned integer after "key": in a JSON text (the first one), or `dflt` when absent. */
uint64_t pw_proc_json_u64(const char *json, const char *key, uint64_t dflt);

/* How an end-to-end test starts a daemon (pw_proc_start_collector, pw_proc_start_agent): the
 * binary, natively or under Wine, and the test directory that holds its files: pki/ (from
 * deploy/pki.sh: ca.pem, collector.pem/.key, agent-HOST.pem/.key), tokens, the store, spools
 * and logs. A program under Wine is given this machine's paths in their Windows spelling. */
typedef struct pw_proc_daemon_s {
    const char *wine; /* NULL: run `exe` natively; else the wine program that runs it */
    const char *exe;  /* poolwatch-collector or poolwatch-agent (a .exe under Wine) */
    const char *dir;  /* the test directory (absolute) */
} pw_proc_daemon_t;

/* The path <dir>/<rel> as the daemon is given it: as it is natively, "Z:" and '\' for '/'
 * under Wine (Wine maps drive Z: to "/"), into out (n bytes). Returns out. */
const char *pw_proc_daemon_path(const pw_proc_daemon_t *dm, const char *rel, char *out, size_t n);

/* Starts a collector with its log at <dir>/<name>.log: agents on 127.0.0.1:agents_port with
 * the pki/ certificates, the store at <dir>/<db>, the API on 127.0.0.1:http_port with the
 * tokens file <dir>/tokens, log level debug, then `extra` (NULL entries skipped, n_extra of
 * them). Returns its PID. */
pid_t pw_proc_start_collector(const pw_proc_daemon_t *dm, const char *name, const char *db,
                              int agents_port, int http_port, const char *const *extra,
                              size_t n_extra);

/* Starts an agent with its log at <dir>/agent-<name>.log and its spool at <dir>/spool-<name>:
 * source `source`, host name `host`, certificate <dir>/<cert>.pem and .key ("pki/agent-HOST"),
 * CA <dir>/pki/ca.pem, streaming to 127.0.0.1:port (server name localhost, reconnecting after
 * 200 ms to 1 s), sampling every `interval` ("100ms"), then `extra` (NULL entries skipped).
 * Returns its PID. */
pid_t pw_proc_start_agent(const pw_proc_daemon_t *dm, int port, const char *name,
                          const char *source, const char *host, const char *cert,
                          const char *interval, const char *const *extra, size_t n_extra);

struct CMUnitTest; /* cmocka.h */

/* The main of an end-to-end program: runs the `n` cmocka tests with SIGPIPE ignored (a peer
 * that hangs up must not end the test), then kills every child still running; returns the exit
 * code (pw_test_exit: 77 when something was skipped). */
int pw_proc_run_tests(const struct CMUnitTest *tests, size_t n);

/* Starts Debian's VictoriaMetrics (/usr/bin/victoria-metrics) on 127.0.0.1:port with its data
 * in `data_dir`, a 100-year retention (samples of any age), deduplication of samples with one
 * timestamp (-dedup.minScrapeInterval=1ms: a request sent again after a lost answer stores
 * nothing twice), no query cache and no latency offset (fresh samples are seen at once), its
 * output in `log`; waits up to 30 s for /health. Fails the test when it does not answer. */
pid_t pw_proc_vm_start(const char *data_dir, int port, const char *log);

#endif /* PW_TEST_PROC_H */
