/* rwqueue.h: remote write's disk queue: request bodies that cannot wait in memory (the receiver
 * is away or slower than the collector) wait in a directory, one file per request, oldest
 * first, so that an outage of the receiver loses nothing up to a size budget.
 *
 * A file is `<seq as 16 hex digits>.rwq`: a 32-byte header (magic "PWRQ", version 1, series,
 * body length, CRC-32 of the body, in this machine's byte order: the directory is the
 * collector's own) and the body (a snappy-compressed
 * WriteRequest, remote_write.h). Files are written under a temporary name and renamed, so a
 * crash leaves whole files or none; a file whose header or CRC does not check is skipped and
 * reported by pw_rwqueue_pop. Files are not fsync'ed: the queue is for a receiver's outage; a
 * crash of the machine may lose the newest files.
 *
 * The budget: when a push would take the files past max_bytes, the oldest files are deleted
 * first and their series reported as dropped. Single-threaded (the collector's loop).
 */
#ifndef PW_RWQUEUE_H
#define PW_RWQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct pw_rwqueue_s pw_rwqueue_t;

/* Opens (creating it, mode 0700, when missing) the queue directory `dir` with a budget of
 * max_bytes (0 = 1 GiB) of files, and lists the files an earlier run left, oldest first
 * (temporary files of an interrupted write are removed). Returns 0; PW_EIO with d naming the
 * directory and the reason; PW_EINVAL; PW_ENOMEM. */
int pw_rwqueue_open(const char *dir, uint64_t max_bytes, pw_rwqueue_t **out, pw_diag_t *d);

/* Writes body[0..len) (borrowed), holding `series` series, as the file of `seq` (not in the
 * queue yet; new requests take pw_rwqueue_next_seq, requests written back from memory keep
 * their older seq and take their place in the order). Deletes the oldest
 * files first when the budget needs it: *dropped_series (may be NULL) gets their series.
 * Returns 0; PW_EIO (write failed: disk full, permissions: nothing kept of this body);
 * PW_ETOOBIG (the body alone is larger than the budget); PW_EINVAL; PW_ENOMEM. */
int pw_rwqueue_push(pw_rwqueue_t *q, uint64_t seq, const uint8_t *body, size_t len, size_t series,
                    uint64_t *dropped_series);

/* Takes the oldest file out of the queue: its seq, body (pw_malloc'ed, the caller frees it
 * with pw_free) and series. Returns 1 with a body, 0 when the queue is empty, PW_ECORRUPT
 * when the oldest file does not check (it is deleted; *series holds what its header claimed,
 * 0 when the header itself is bad: the caller counts them as dropped), PW_EIO when it cannot
 * be read (left in place), PW_ENOMEM. */
int pw_rwqueue_pop(pw_rwqueue_t *q, uint64_t *seq, uint8_t **body, size_t *len, size_t *series);

/* Files waiting, their bytes (headers included) and series. */
size_t pw_rwqueue_count(const pw_rwqueue_t *q);
uint64_t pw_rwqueue_bytes(const pw_rwqueue_t *q);
uint64_t pw_rwqueue_series(const pw_rwqueue_t *q);

/* One above the highest seq ever seen in the directory (files of an earlier run included);
 * 1 for an empty new queue. */
uint64_t pw_rwqueue_next_seq(const pw_rwqueue_t *q);

/* Frees the in-memory list; the files stay for the next run. Accepts NULL. */
void pw_rwqueue_close(pw_rwqueue_t *q);

#endif /* PW_RWQUEUE_H */
