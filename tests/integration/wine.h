/* wine.h: what the Wine end-to-end tests share (test_e2e_wine.c, test_e2e_wine_collector.c):
 * Windows spellings of this machine's paths, the recorded pool buffers that replace
 * NtQuerySystemInformation in poolwatch-agent-testhooks.exe, and Wine's service manager. */
#ifndef PW_TEST_WINE_H
#define PW_TEST_WINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The Windows spelling of a path of this machine (Wine maps drive Z: to "/"): "Z:" then the
 * path with '\' for '/'. `out` may be `unix_path`. Returns out. */
const char *pw_wine_path(const char *unix_path, char *out, size_t n);

/* Starts agent `exe` under Wine with its log at <dir>/agent-<name>.log, its spool at
 * <dir>/spool-<name>, source `source`, host name `host` (certificate <dir>/pki/agent-<host>.pem
 * and .key, CA <dir>/pki/ca.pem, all given as Windows paths) streaming to 127.0.0.1:port
 * (server name localhost), sampling every 200 ms; extra1 and extra2 (NULL: none) are more
 * flags. Returns its PID (proc.h). */
pid_t pw_wine_start_agent(const char *wine, const char *exe, const char *dir, int port,
                          const char *name, const char *source, const char *host,
                          const char *extra1, const char *extra2);

/* One recording of SYSTEM_POOLTAG_INFORMATION (x64): "Leak" paged (allocs a, frees f, bytes
 * 64 * (a - f)) and "Ddk " nonpaged (fixed 4660/4096/614400). Layout: Count, pad, 40-byte
 * entries with PagedAllocs 4, PagedFrees 8, PagedUsed 16, NonPagedAllocs 24, NonPagedFrees 28,
 * NonPagedUsed 32 (agent/source_win.h). */
void pw_wine_write_pooltag(const char *path, uint32_t a, uint32_t f);

/* A SYSTEM_PERFORMANCE_INFORMATION recording up to NonPagedPoolPages (120 bytes): available
 * 300, committed 1000, commit limit 5000, paged pool 25, nonpaged pool 10 pages. */
void pw_wine_write_perfinfo(const char *path);

/* The STATE of service `name` in `wine sc query` (1 stopped, 2 start pending, 3 stop pending,
 * 4 running), -1 when the SCM does not know it. */
int pw_wine_sc_state(const char *wine, const char *name);

/* Polls until service `name` is in `state` (10 s at most); returns the last state seen. */
int pw_wine_sc_wait(const char *wine, const char *name, int state);

/* `sc start NAME` (its output appended to `slog`), then waits up to 60 s for RUNNING; fails the
 * test otherwise, printing the end of `slog` and of the service's own log
 * %ProgramData%\poolwatch\<svc_log> (both places Wine uses, see service_stops in
 * test_e2e_wine_collector.c) so that a failed start says why. */
void pw_wine_sc_start(const char *wine, const char *name, const char *slog, const char *svc_log);

/* Runs `wine ARGS` with its output appended to `log`; returns its exit code (-1: no exit). */
int pw_wine_run(const char *wine, const char *args, const char *log);

#endif /* PW_TEST_WINE_H */
