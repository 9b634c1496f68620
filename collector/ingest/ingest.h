/* ingest.h: the one writer of the fleet and of samples into the store.
 *
 * Every change to a host's table goes through here: an agent's Hello and its Sample frames
 * (handed over decoded by the session layer, session.h), an imported poolmon capture
 * (parsed into samples by the API first) and the fleet rebuilt from the store at start.
 * Samples are put into the store as they arrive and made durable by pw_ingest_commit (the
 * group commit); what became durable is each host's committed seq, which the session layer
 * acknowledges. Ingest knows no connection, no HTTP and no JSON: a session is an opaque
 * pointer it keeps on the host so that a newer session can replace it.
 *
 * Single-threaded: the collector's loop calls everything here.
 */
#ifndef PW_INGEST_H
#define PW_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "fleet.h"
#include "poolwatch.pb-c.h"
#include "sample.h"
#include "store.h"
#include "winevent.h"

typedef struct pw_ingest_s pw_ingest_t;

/* Called after a sample was applied to host `h` (and stored, when it was new) with `screen`
 * NULL: read the new table through the view (fleet.h); and after an import, once per imported
 * screen in time order with `screen` the stored screen (borrowed for the call). The analysis
 * keeps its per-host state current from here. */
typedef void (*pw_ingest_sample_cb)(void *arg, const pw_host_t *h, const pw_sample_t *screen);

/* Creates ingest over an open store (borrowed; it must outlive ingest) and rebuilds the fleet
 * from it: every stored host with its identity, last seq and last table. Returns 0,
 * PW_ENOMEM, or the store's error with `d` saying what. */
int pw_ingest_new(pw_store_t *store, pw_ingest_t **out, pw_diag_t *d);

/* Frees ingest and its fleet. Accepts NULL. Uncommitted samples are not committed. */
void pw_ingest_free(pw_ingest_t *ing);

/* Files host `name` with counter width `width` and last table `table` (copied) as the store
 * gives it back at start: no stream, no change columns, its history ring read back later
 * (pw_ingest_restore_history); its identity and last_seen_ms are the caller's to set from
 * the store. A host that already exists takes the table unless it streams. Returns the host, or
 * NULL on PW_ENOMEM. */
pw_host_t *pw_ingest_restore(pw_ingest_t *ing, const char *name, unsigned width,
                             const pw_sample_t *table);

/* The fleet (owned by ingest): read it through fleet.h. */
const pw_fleet_t *pw_ingest_fleet(const pw_ingest_t *ing);

/* The store ingest writes (borrowed). */
pw_store_t *pw_ingest_store(const pw_ingest_t *ing);

/* What ingest refuses of one host's samples (pw_ingest_frame): a hostile or broken agent
 * cannot grow the collector without bound or store nonsense. */
typedef struct pw_ingest_limits_s {
    uint64_t min_ts_ms;    /* samples stamped earlier: PW_ESTAMP (default 2000-01-01) */
    uint64_t max_ahead_ms; /* samples stamped later than now + this: PW_ESTAMP (1 day) */
    uint32_t max_tags;     /* tags in a host's dictionary (16,384): PW_ELIMIT */
    uint32_t max_tag_len;  /* bytes of one tag (48; Windows tags have 4): PW_ELIMIT */
    uint32_t max_rows;     /* rows of a host's table (3 x 16,384): PW_ELIMIT */
} pw_ingest_limits_t;

#define PW_INGEST_MIN_TS_MS    946684800000ull /* 2000-01-01T00:00:00Z */
#define PW_INGEST_MAX_AHEAD_MS 86400000ull
#define PW_INGEST_MAX_TAGS     16384u
#define PW_INGEST_MAX_TAG_LEN  48u
#define PW_INGEST_MAX_ROWS     (3u * PW_INGEST_MAX_TAGS)
#define PW_INGEST_MAX_EVENTS   64 /* pool events one sample may carry (the agent sends <= 64) */

/* Fills *l with the defaults above (what pw_ingest_new sets). */
void pw_ingest_limits_default(pw_ingest_limits_t *l);

/* Replaces the limits (copied). Tests that build fleets with times of 1970 relax them. */
void pw_ingest_set_limits(pw_ingest_t *ing, const pw_ingest_limits_t *l);

/* Sets the observer of applied samples (NULL: none). */
void pw_ingest_on_sample(pw_ingest_t *ing, pw_ingest_sample_cb cb, void *arg);

/* Called with the pool events (winevent.h) of host `h` that were stored now (`n` of them,
 * borrowed for the call): those a new sample carried, or an import's. An event already stored
 * is not given again. */
typedef void (*pw_ingest_events_cb)(void *arg, const pw_host_t *h, const pw_winevent_t *ev,
                                    size_t n);

/* Sets the observer of stored pool events (NULL: none). */
void pw_ingest_on_events(pw_ingest_t *ing, pw_ingest_events_cb cb, void *arg);

/* Called when host `h` was renamed (pw_ingest_rename) from `from` (borrowed for the call):
 * readers that keep the host's name (the analysis' suspects and alerts) follow it. */
typedef void (*pw_ingest_rename_cb)(void *arg, const pw_host_t *h, const char *from);

/* Sets the observer of renames (NULL: none). */
void pw_ingest_on_rename(pw_ingest_t *ing, pw_ingest_rename_cb cb, void *arg);

/* Stores pool events ev[0..n) of host `name` (an import's: a host the store holds), received
 * at `now_ms`, committed at once, and gives the new ones to the observer. Returns the number
 * stored now (>= 0; events stored before are kept once); PW_ENOENT (no such host); a store
 * error with `d` saying what. */
int pw_ingest_events(pw_ingest_t *ing, const char *name, const pw_winevent_t *ev, size_t n,
                     uint64_t now_ms, pw_diag_t *d);

/* What a Hello did. */
typedef struct pw_ingest_hello_res_s {
    pw_host_t *host; /* the host the session now streams to */
    void *replaced;  /* the session this one replaced on the host, or NULL */
    int twin;        /* the replaced session was another agent (other agent id) */
    char old_os_family[16];
    uint64_t resume_seq; /* the agent resends from resume_seq + 1: the last durable seq */
} pw_ingest_hello_res_t;

/* Files an agent's Hello under host `name` (verified against the client certificate by the
 * session layer, spelt as the certificate spells it) and attaches `session` to the host. A new
 * agent instance (agent or boot id) starts a new stream whose seqs continue after what the
 * store holds for that instance. Returns 0; PW_EPROTO when the Hello is malformed (counter
 * width not 32 or 64, ids empty or longer than 64 bytes) with `d` saying so; PW_ENOMEM. */
int pw_ingest_hello(pw_ingest_t *ing, const Poolwatch__V1__Hello *hello, const char *name,
                    void *session, pw_ingest_hello_res_t *res, pw_diag_t *d);

/* Detaches `session` from its host (the connection closed). Does nothing when another
 * session has replaced it. */
void pw_ingest_detach(pw_ingest_t *ing, pw_host_t *h, void *session);

/* The host's agent said Goodbye (a clean stop): pw_host_t.stopped_ms = g->timestamp_ms (its
 * last sample's time, or 1, when the agent gave 0) and stop_reason its reason, cleaned of
 * control bytes; both stay until the host's next Hello, across a collector restart too (kept in
 * the store with pw_store_host_stopped, which commits the samples put before it). */
void pw_ingest_goodbye(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__Goodbye *g);

/* Notes a frame from the host's agent at loop time `now_ms` (pw_host_t.last_contact_ms). */
void pw_ingest_contact(pw_ingest_t *ing, pw_host_t *h, uint64_t now_ms);

/* Keeps `bp`, the big-pool snapshot the host's agent answered (CommandResult.big_pool), as the
 * host's latest for its tag (pw_host_big_pool), replacing an older one of that tag; when the
 * host holds PW_HOST_BIGPOOL_MAX tags the one received longest ago gives way. `automatic`: the
 * collector asked for it (a new suspect), else an operator did; `now_ms`: the collector's clock.
 * Returns 0, PW_EINVAL (a tag that is not 4 bytes, more than 12 histogram buckets: the
 * snapshot is not kept) or PW_ENOMEM. */
int pw_ingest_big_pool(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__BigPoolSnapshot *bp,
                       int automatic, uint64_t now_ms);

/* Puts back `snap`, a snapshot host `h` of the fleet held before a collector restart (kept
 * with its suspect, pw_alert_save_kept), unless the host holds a newer one of its tag
 * (taken_ms). Returns 0, PW_ENOENT (not a host of this fleet), PW_EINVAL (more than 12
 * histogram buckets) or PW_ENOMEM. */
int pw_ingest_big_pool_restore(pw_ingest_t *ing, const pw_host_t *h, const pw_bigpool_snap_t *snap);

/* The wire snapshot `bp` as the fleet keeps it, into *out (zeroed first; received_ms and
 * automatic 0; a tag of other than 4 bytes and histogram buckets past 12 are cut). */
void pw_ingest_big_pool_snap(const Poolwatch__V1__BigPoolSnapshot *bp, pw_bigpool_snap_t *out);

/* The session attached to the host, or NULL. */
void *pw_ingest_session(const pw_host_t *h);

/* What a Sample frame did. */
typedef struct pw_ingest_frame_res_s {
    uint64_t stored_seq; /* the sample's seq when it was stored now, 0 otherwise (a resend) */
    uint64_t gap_before; /* samples the agent reported lost before this one */
    size_t events;       /* pool events it carried that were stored now */
} pw_ingest_frame_res_t;

/* Applies Sample `s` (the decoded frame `payload` of `len` bytes: the store may keep it as it
 * is) to the host of a session that said Hello, updates the fleet's indexes and, when its seq
 * is new, puts it into the store (durable at the next pw_ingest_commit). Returns 0; a
 * negative code when the sample is refused (PW_ENOBASE, PW_ESEQ, PW_EPROTO ...: the session
 * should say so and close) with `d` saying why; among them, checked before anything changes:
 * PW_ESEQ (seq 0 or above 2^63 - 1: seqs are SQLite integers), PW_ESTAMP (time outside the
 * limits), PW_EPROTO (boot_id over 64 bytes, a malformed pool event: codec.h), PW_ELIMIT (tags, tag
 * length or rows over the limits, pw_ingest_limits_t); and after the decode PW_ECOUNTERS (64-bit
 * counters with a row's diff above its allocs: the host's table is dropped, its agent must send a
 * keyframe); PW_ESTORE-class codes from the store when putting failed: then everything since the
 * last commit was rolled back (every host's stored seq is back at its committed seq: sessions with
 * unacked samples must restart). The two kinds are told apart by *store_failed. */
int pw_ingest_frame(pw_ingest_t *ing, pw_host_t *h, const Poolwatch__V1__Sample *s,
                    const uint8_t *payload, size_t len, pw_ingest_frame_res_t *res,
                    int *store_failed, pw_diag_t *d);

/* What an import did. */
typedef struct pw_ingest_import_res_s {
    size_t screens;   /* samples stored */
    size_t already;   /* samples an earlier import of this capture had stored (the instance
                         is its first screen's content; new times do not make them new) */
    size_t rows;      /* rows in them */
    uint64_t last_ts; /* time of the last stored sample */
    /* PW_EEXIST for another capture's screens in the new screens' time: the host's stored
     * screens in that time (held, the first and last one's time, ms since the epoch) and the
     * new screens (fresh, their first and last time); 0 otherwise */
    size_t held, fresh;
    uint64_t held_first, held_last, fresh_first, fresh_last;
} pw_ingest_import_res_t;

/* 0 when host `name` may take an import; PW_EEXIST when it has samples from an agent (history
 * is not mixed), with `d` saying so. */
int pw_ingest_import_check(const pw_ingest_t *ing, const char *name, pw_diag_t *d);

/* Where the screens an earlier import of capture `boot_id` into host `name` stored end: the
 * last seq stored (*seq: the screen's index, 1-based) and that screen's time (*ts_ms, ms since
 * the epoch). Returns 0; PW_ENOENT (no import of this capture into this host); PW_EINVAL;
 * PW_ESTORE. */
int pw_ingest_import_known(pw_ingest_t *ing, const char *name, const char *boot_id, uint64_t *seq,
                           uint64_t *ts_ms);

/* Imports `n` samples of a saved capture (screens in time order, seq 1..n: the screen's index)
 * as host `name` with counter width `width` (32 or 64), instance "import:<name>" / `boot_id`
 * (the capture's identity, its first screen's content: the same capture again, or grown by
 * screens appended since, stores only the screens not stored before). The new screens (seq
 * above the instance's last stored) must not share time with what the host already holds
 * (another capture of it): PW_EEXIST with `d` naming the times, nothing stored. Rows are made
 * store-acceptable (frees rebuilt as allocs - diff, repeated (tag, pool) rows dropped), the
 * samples stored and committed, and the fleet shows the host's last screen unless the host
 * streams live. Samples flagged PW_SAMPLE_NO_ALLOCS (saved slabinfo/allocinfo) make a host
 * of family "linux" and keep allocs = frees = 0; others "windows". Returns 0; PW_EEXIST when the
 * host has samples from an agent (history is not mixed) or holds screens of another import
 * within the new screens' time range; PW_EINVAL, PW_ENOMEM or a store error with
 * `d` saying what. `samples` are changed in place (the row fixes). */
int pw_ingest_import(pw_ingest_t *ing, const char *name, unsigned width, const char *boot_id,
                     pw_sample_t *samples, size_t n, pw_ingest_import_res_t *res, pw_diag_t *d);

/* Gives imported host `name` what an operator said about it (the import's options): its OS text
 * (`os`, may be NULL or "": unchanged; shown as "windows <os>") and its pool limits (`nonpaged`,
 * `paged`; bytes 0 = none given, the host's limit stays as it was). Kept in the store, so a
 * restart keeps them. Returns 0; PW_ENOENT (no such host); PW_EINVAL (not an imported host: an
 * agent's Hello says its own); a store error; `d` says which. */
int pw_ingest_import_meta(pw_ingest_t *ing, const char *name, const char *os,
                          const pw_pool_limit_t *nonpaged, const pw_pool_limit_t *paged,
                          pw_diag_t *d);

/* Retires host `name` (an operator's DELETE): pending samples are committed first, then the
 * host's stored history is deleted (keep_history 0) or kept out of sight (1, see
 * pw_store_host_retire; `now_ms` names it); in the fleet the host is marked retired
 * (pw_host_retired), its table emptied and the per-tag index updated; its entry and index stay.
 * An agent that later says Hello under that name starts a new host (a new index). Returns 0;
 * PW_ENOENT (no such host); PW_EAGAIN (an agent is connected to it: it would carry on under a
 * retired entry; stop the agent first); a store error; `d` says which. */
int pw_ingest_retire(pw_ingest_t *ing, const char *name, int keep_history, uint64_t now_ms,
                     pw_diag_t *d);

/* Renames imported host `from` to `to` (1..255 bytes), in the fleet and the store. Returns 0;
 * PW_ENOENT (no host `from`); PW_EINVAL (not an imported host: an agent's host is named by its
 * certificate; or a bad name); PW_EEXIST (`to` is taken, in the fleet or the store); a store
 * error; `d` says which. */
int pw_ingest_rename(pw_ingest_t *ing, const char *from, const char *to, pw_diag_t *d);

/* Samples put since the last commit. */
uint64_t pw_ingest_uncommitted(const pw_ingest_t *ing);

/* The group commit: makes every sample put so far durable and sets each host's committed seq
 * (pw_host_committed_seq) to its stored seq. Returns the number of samples made durable (0:
 * nothing to do), or the store's error: then everything since the last commit was rolled
 * back, as in pw_ingest_frame. */
int64_t pw_ingest_commit(pw_ingest_t *ing, pw_diag_t *d);

/* Reads the host's older history points back from the store once, from its raw samples over
 * window_ms, or over the span a full ring covers at the host's interval when that is longer
 * (up to 7 days): hosts rebuilt at start have a ring of the store's 1-min buckets, which the
 * raw samples replace where the store still holds them (the first analysis pass calls this
 * under its time slices). Returns 1 when points were to be read (now done), 0 when there was
 * nothing to do. */
int pw_ingest_restore_history(pw_ingest_t *ing, const pw_host_t *h, uint64_t window_ms);

#endif /* PW_INGEST_H */
