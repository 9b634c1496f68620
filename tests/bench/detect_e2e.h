/* detect_e2e.h: bench_detect's end-to-end harness: the real poolwatch-collector, poolwatch CLI
 * and poolwatch-agent binaries on loopback, with mutual TLS from deploy/pki.sh, driven as a user
 * drives them (`poolwatch import`, agents with replay and sim sources, `poolwatch leaks --json`).
 * Nothing of the product's policy is here: it starts processes and reads their answers. */
#ifndef PW_DETECT_E2E_H
#define PW_DETECT_E2E_H

#include <stddef.h>

#include <jansson.h>

typedef struct pw_e2e_s pw_e2e_t;

/* Makes a directory under /tmp with a PKI (deploy/pki.sh under source_dir), an admin token and
 * starts `collector_bin` on two free loopback ports; waits up to 30 s for its listeners.
 * Returns the harness, or NULL with the reason on stderr. */
pw_e2e_t *pw_e2e_start(const char *source_dir, const char *collector_bin, const char *cli_bin,
                       const char *agent_bin);

/* The harness' directory (files written by pw_e2e_import are DIR/HOST.txt). */
const char *pw_e2e_dir(const pw_e2e_t *e);

/* Saves text[0..len) as a file and uploads it with `poolwatch import FILE --host HOST` (screens
 * 15 minutes apart, the last one now). Returns 0, or -1 (the CLI's output is on stderr). */
int pw_e2e_import(pw_e2e_t *e, const char *host, const char *text, size_t len);

/* Starts an agent named `host` (its certificate is made first) with `--agent.source=SOURCE` and
 * up to 3 more options (NULL ends them). Returns 0, or -1. */
int pw_e2e_agent(pw_e2e_t *e, const char *host, const char *source, const char *o1, const char *o2,
                 const char *o3);

/* Waits until every agent started with --replay.exit_when_done has exited (up to timeout_s).
 * Returns how many are still running. */
size_t pw_e2e_wait_agents(pw_e2e_t *e, int timeout_s);

/* The counter poolwatch_analysis_passes_total from /metrics, or -1. */
long pw_e2e_passes(pw_e2e_t *e);

/* The parsed JSON of `poolwatch ARGS --json` (ARGS a shell word list), or NULL. The caller
 * json_decref()s it. */
json_t *pw_e2e_cli_json(pw_e2e_t *e, const char *args);

/* Stops every process (SIGTERM, then SIGKILL after 10 s), removes the directory unless keep is
 * set (its path is printed) and frees e. */
void pw_e2e_stop(pw_e2e_t *e, int keep);

#endif /* PW_DETECT_E2E_H */
