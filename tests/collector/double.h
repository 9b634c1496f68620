/* double.h: the one collector test double. A store on ":memory:", ingest over it, the analysis
 * pass (no loop: passes run when a test asks) and the API's dependencies, all the product's
 * own code: hosts are made the ways the collector makes them (an agent's Hello and Sample
 * frames through pw_ingest_frame, a table restored from the store through pw_ingest_restore).
 * Commands to agents go to a test callback. */
#ifndef PW_TEST_DOUBLE_H
#define PW_TEST_DOUBLE_H

#include "analysis_run.h"
#include "api.h"
#include "buf.h"
#include "delta.h"
#include "ingest.h"
#include "store.h"

typedef struct pw_double_s {
    pw_store_t *store;
    pw_ingest_t *ing;
    pw_analysis_run_t *an;
    pw_api_t api; /* deps filled; tokens and pooltag are the test's */
    pw_buf_t frame;
    int session; /* the address of this is the session of "connected" hosts */
    /* Commands: what the API sent last (send_command returns cmd_ret). */
    int (*on_command)(void *arg, const pw_host_t *h, const Poolwatch__V1__Command *cmd);
    void *on_command_arg;
} pw_double_t;

/* Opens the double: ingest takes any sample time (tests stamp from 1970 on); the other
 * limits are ingest's defaults. Returns 0 or a negative code. */
int pw_double_open(pw_double_t *d);

/* Opens the double and gives the API one bearer token `token` with role `role` ("read" or
 * "admin"). Returns 0 or a negative code. */
int pw_double_open_with_token(pw_double_t *d, const char *token, const char *role);

/* Closes everything (the API's tokens and pooltag too). */
void pw_double_close(pw_double_t *d);

/* An agent's Hello for host `name`: protocol, counter width, ids "agent:NAME" (in `aid`, which
 * must outlive the Hello) / "boot:1", empty OS strings. Set other fields before
 * pw_double_hello. */
void pw_double_hello_init(Poolwatch__V1__Hello *hm, const char *name, unsigned width,
                          char aid[300]);

/* Files Hello `hm` through pw_ingest_hello; the session stays attached when `connected`.
 * Returns the host, or NULL. */
pw_host_t *pw_double_hello(pw_double_t *d, const Poolwatch__V1__Hello *hm, int connected);

/* A host that streams from an agent: an agent's Hello with counter width `width` (ids
 * "agent:NAME" / "boot:1"); the session stays attached when `connected`. */
pw_host_t *pw_double_stream(pw_double_t *d, const char *name, unsigned width, int connected);

/* Sends sample `s` as the host's agent would: encoded with `e` (a delta against the previous
 * one, or a keyframe), framed, and handed to pw_ingest_frame. Returns its result. */
int pw_double_send(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, const pw_sample_t *s);

/* pw_double_send with pool events ev[0..n) (n <= 8) in the Sample, as the agent sends them. */
int pw_double_send_events(pw_double_t *d, pw_delta_enc_t *e, pw_host_t *h, const pw_sample_t *s,
                          const pw_winevent_t *ev, size_t n);

/* Sends `s` as the first sample of host `h`'s agent (a keyframe of a fresh encoder of the
 * host's counter width). Returns pw_double_send's result. */
int pw_double_send_first(pw_double_t *d, pw_host_t *h, const pw_sample_t *s);

/* A host whose last table `s` is restored from the store (no stream). */
pw_host_t *pw_double_restore(pw_double_t *d, const char *name, unsigned width,
                             const pw_sample_t *s);

#endif /* PW_TEST_DOUBLE_H */
