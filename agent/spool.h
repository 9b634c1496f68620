/* spool.h: the agent's durable on-disk spool of encoded samples.
 *
 * The agent appends every encoded sample to the spool before sending it; the collector's acks
 * ("highest contiguous seq durably stored", DESIGN.md §3) trim it; after a reconnect, an agent
 * restart or a host reboot the agent resends every record after the last ack. Prose, failure
 * behaviour and an example flow: docs/internals/spool.md.
 *
 * On disk, a directory holds:
 *   spool-<first seq, 20 decimal digits>.seg   append-only segment files
 *   state                                      ack, drop point, pending gaps and the collector's
 *                                              stored seq (atomic rename)
 *   lock                                       held with a POSIX record lock while open
 *   *.bad                                      quarantined files (kept as evidence, ignored)
 * Segment file: 16-byte header "PWSPOOL1" + u64 first_seq, then records, then possibly zero
 * bytes up to the end of the file (a preallocated segment; a zero length word ends the data).
 * Record (all integers little-endian): u32 0xA5000000|payload_len, u32 CRC-32 (zlib crc32, over
 * every other byte of the record), u64 seq, u32 flags, payload. Sequence numbers strictly
 * increase across the spool.
 *
 * Preallocation: unless the fsync policy is NEVER, a new segment is written whole with zeros
 * (segment_bytes) and synced once when it is created; records then overwrite those zeros, so
 * the per-record fdatasync has no file size or extent change to commit (on ext4 about half
 * its CPU time). A segment's unused tail is given back (ftruncate) when the next one starts;
 * only the active segment holds one, and it counts whole against max_bytes.
 *
 * Threading: a spool and its iterators belong to one thread (the agent's libuv loop).
 */
#ifndef PW_SPOOL_H
#define PW_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct pw_spool_s pw_spool_t;
typedef struct pw_spool_iter_s pw_spool_iter_t;

/* Record flag: the payload is a keyframe (decodable without any earlier sample). Other bits
 * are stored and returned unchanged. */
#define PW_SPOOL_KEYFRAME 0x1u

#define PW_SPOOL_MAX_BYTES_DEFAULT         (256ull << 20) /* whole spool, bytes */
#define PW_SPOOL_SEGMENT_BYTES_DEFAULT     (8ull << 20)   /* one segment file, bytes */
#define PW_SPOOL_SEGMENT_BYTES_MIN         4096ull
#define PW_SPOOL_FSYNC_INTERVAL_DEFAULT_MS 1000u
/* Largest payload of one record, bytes (the length field has 24 bits). Frames are capped at
 * 4 MiB (DESIGN.md §3), well below. */
#define PW_SPOOL_MAX_RECORD 0xFFFFFFu
/* Pending gaps remembered at once; more are merged (see pw_spool_gaps). */
#define PW_SPOOL_MAX_GAPS 16

/* When appended data is forced to stable storage (fdatasync; _commit on Windows).
 * ALWAYS: after every pw_spool_append (one fdatasync per sample: about 0.1-5 ms on SSDs, more
 *   on disks; at the default 10 s interval this is negligible, and it is what makes "evidence
 *   from before a crash reboot" true). A batch of appends can be made with NEVER/INTERVAL and
 *   one pw_spool_sync() call.
 * INTERVAL: at an append when fsync_interval_ms have passed since the last sync, and at
 *   pw_spool_sync / pw_spool_close; a crash loses at most that window.
 * NEVER: only the OS decides (tests, benchmarks, tmpfs). Survives an agent crash, not a host
 *   crash.
 * MANUAL: appends are synced by pw_spool_sync (and when a segment or the spool closes), as the
 *   caller decides; segments are preallocated and the state file synced as with ALWAYS. For a
 *   caller that knows when a record is durable elsewhere: the agent syncs only the records
 *   the collector has not acked within a deadline (agent.h, spool.fsync = ack). */
typedef enum {
    PW_SPOOL_FSYNC_ALWAYS = 0,
    PW_SPOOL_FSYNC_INTERVAL = 1,
    PW_SPOOL_FSYNC_NEVER = 2,
    PW_SPOOL_FSYNC_MANUAL = 3
} pw_spool_fsync_t;

/* Options of pw_spool_open; zero-initialise and set what you need (0 = default). */
typedef struct pw_spool_opts_s {
    uint64_t max_bytes;         /* all segment files together, bytes; default 256 MiB */
    uint64_t segment_bytes;     /* roll to a new segment past this size; default 8 MiB,
                                   minimum 4 KiB, at most max_bytes; also the size a new
                                   segment is preallocated to (fsync policy not NEVER) */
    pw_spool_fsync_t fsync;     /* default PW_SPOOL_FSYNC_ALWAYS */
    uint32_t fsync_interval_ms; /* for PW_SPOOL_FSYNC_INTERVAL; default 1000 */
} pw_spool_opts_t;

/* What pw_spool_open found and repaired. Nothing here is an error: the spool is usable, and
 * the agent logs a non-zero count once. */
typedef struct pw_spool_report_s {
    uint32_t segments;         /* segment files in use after open */
    uint64_t records;          /* valid records in them (acked ones included) */
    uint64_t bytes;            /* bytes of the segment files in use (preallocated tails too) */
    uint64_t torn_bytes_cut;   /* bytes of a torn last record cut off (ftruncate) or erased
                                  (overwritten with zeros inside a preallocated segment) */
    uint32_t corrupt_segments; /* segments cut short at a bad record (bytes kept on disk) */
    uint64_t corrupt_bytes;    /* bytes after such bad records, not readable */
    uint32_t quarantined;      /* files renamed to *.bad (bad header, seq order) */
    uint32_t ignored;          /* files in the directory that are not the spool's */
    int state_reset;           /* 1: the state file was unreadable (renamed state.bad);
                                  acks restart from 0, so acked records may be resent */
    pw_diag_t first_problem;   /* first problem found: code, file in `field`, offset */
} pw_spool_report_t;

/* Records that will never be sent, to be told to the collector with the record `next_seq`
 * (Sample.gap_before = records). A gap stays pending (and durable) until an ack reaches
 * next_seq, so a crash before the collector stored it tells it again. */
/* Why records of a gap were lost (pw_spool_gap_t.cause). */
#define PW_SPOOL_GAP_FULL 1u /* dropped to make room (max_bytes) */
#define PW_SPOOL_GAP_CORRUPT                                                                       \
    2u /* unreadable: a bad record ended its segment, a file was                                   \
          quarantined (found again at every open while on disk) */

typedef struct pw_spool_gap_s {
    uint64_t first_seq; /* lowest seq dropped */
    uint64_t last_seq;  /* highest seq dropped */
    uint64_t records;   /* records dropped (for a corrupt segment tail: seqs in the hole) */
    uint64_t next_seq;  /* first seq kept after the gap: the record that carries it */
    uint32_t cause;     /* PW_SPOOL_GAP_*: of the newest gap when gaps were merged. Kept in
                           memory: a gap read back from the state file is FULL, unless the
                           open finds its hole again (CORRUPT) */
} pw_spool_gap_t;

/* One record returned by pw_spool_iter_next. */
typedef struct pw_spool_rec_s {
    uint64_t seq;
    uint32_t flags;         /* PW_SPOOL_KEYFRAME, ... */
    const uint8_t *payload; /* borrowed: valid until the next call on the iterator */
    size_t len;             /* payload bytes */
    uint64_t gap_before;    /* records dropped just before this one (0 = none): the value
                               for Sample.gap_before */
    uint32_t gap_cause;     /* PW_SPOOL_GAP_* of those (the newest cause), 0 when none */
} pw_spool_rec_t;

/* Opens (creating it with mode 0700 when missing, one level) the spool in directory `dir`,
 * scans and verifies every segment, repairs what it can and says what in `report`:
 * - zero bytes after the last valid record of a segment are its preallocated tail: the end of
 *   its data, not a problem (a record none of whose bytes reached the disk leaves just that);
 * - a torn last record (incomplete, or failing its CRC and followed by nothing but zero bytes
 *   up to the end of the last segment) is cut with ftruncate, or overwritten with zeros when
 *   a preallocated tail follows it; appends continue right after the last valid record;
 * - a bad record elsewhere ends its segment there: the bytes after it stay on disk but are
 *   never returned, the segment takes no more appends, and the lost seqs become a gap;
 * - a segment whose header is bad or whose seqs do not follow the previous segment is renamed
 *   to <name>.bad; files that are not the spool's are left alone and counted.
 * Segments entirely at or below the durable ack are deleted.
 * `opts` may be NULL (all defaults); it is copied. `report` and `d` may be NULL.
 * On success *out is a new handle (free with pw_spool_close); on failure *out is untouched.
 * Returns 0, PW_EINVAL (bad options), PW_EAGAIN (another process holds the spool's lock),
 * PW_ENOMEM, or a negated errno from the file system; `d` names the file. */
int pw_spool_open(const char *dir, const pw_spool_opts_t *opts, pw_spool_t **out,
                  pw_spool_report_t *report, pw_diag_t *d);

/* Syncs pending data (unless the policy is NEVER), closes files, frees. Iterators must be
 * closed before. Accepts NULL. */
void pw_spool_close(pw_spool_t *sp);

/* Appends one record: seq (must be greater than pw_spool_last_seq), flags, `len` payload
 * bytes (borrowed, copied to the file). Rolls to a new segment when the current one would
 * exceed segment_bytes. When the spool would exceed max_bytes, the oldest segments are
 * deleted whole, and then records up to the next keyframe are skipped too (a delta whose base
 * is gone cannot be decoded); the dropped unacked records become a pending gap
 * (pw_spool_gaps, pw_spool_rec_t.gap_before), recorded durably before any file is deleted.
 * Syncs per the fsync policy. Returns 0, or PW_ESEQ (seq not increasing), PW_ETOOBIG (len
 * over PW_SPOOL_MAX_RECORD), PW_ESPOOLFULL (one record larger than max_bytes can hold),
 * PW_ENOSPC / PW_EIO / other negated errno (the partial record is removed, the spool stays
 * consistent and the same seq may be retried), PW_ENOMEM. `d` (may be NULL) names file and
 * offset. */
int pw_spool_append(pw_spool_t *sp, uint64_t seq, uint32_t flags, const void *payload, size_t len,
                    pw_diag_t *d);

/* Forces appended data to stable storage now (fdatasync), whatever the policy. Returns 0 or a
 * negated errno. */
int pw_spool_sync(pw_spool_t *sp, pw_diag_t *d);

/* Records that the collector durably stored every seq <= acked_seq: writes the state file
 * (atomically: temporary file, sync, rename, directory sync), then deletes the segments whose
 * records are all <= acked_seq, and forgets the gaps carried by acked records. An ack at or
 * below the current one is ignored (returns 0). Returns 0, PW_ESEQ (acked_seq above
 * pw_spool_last_seq: the collector acks what was never written), or a negated errno. */
int pw_spool_ack(pw_spool_t *sp, uint64_t acked_seq, pw_diag_t *d);

/* The collector already durably holds every seq <= `seq`, which is above everything this
 * spool ever wrote (the spool was repaired after corruption, lost, or restored from a backup
 * or a VM snapshot): the agent continues numbering after it. Every record counts as acked
 * (all segment files are deleted), pending gaps below `seq` are forgotten (the collector holds
 * those seqs), and acked and last seq become `seq`, written to the state file before any file
 * is deleted, so a reopen continues after it; the next append must be above `seq`. A `seq` at
 * or below the last seq is an ordinary ack (pw_spool_ack). Iterators skip the deleted records.
 * Returns 0 or a negated errno (the state file could not be written: nothing changed, or a
 * segment could not be deleted: it is deleted by a later ack or open). */
int pw_spool_skip_to(pw_spool_t *sp, uint64_t seq, pw_diag_t *d);

/* Notes that the collector holds every seq <= `seq` (its ack) while the spool keeps records
 * below it (the agent trims only up to a keyframe): a restarted agent then knows what not to
 * send again, even under a new instance. Kept in memory and written with the state file (the
 * next ack or drop, and pw_spool_close): a crash may lose the latest, which only means resends
 * the collector recognises. A `seq` at or below the known one is ignored. Returns 0, PW_EINVAL,
 * PW_ESEQ (above the last seq). */
int pw_spool_note_stored(pw_spool_t *sp, uint64_t seq);

/* The collector's stored seq as last noted (pw_spool_note_stored), or the ack when higher. */
uint64_t pw_spool_stored_seq(const pw_spool_t *sp);

/* Highest seq ever appended (survives restarts, also when every segment was deleted); 0 when
 * none. */
uint64_t pw_spool_last_seq(const pw_spool_t *sp);

/* Highest seq acked (durable); 0 when none. */
uint64_t pw_spool_acked_seq(const pw_spool_t *sp);

/* Bytes of the segment files in use, the active segment's preallocated tail included (what
 * max_bytes bounds). */
uint64_t pw_spool_bytes(const pw_spool_t *sp);

/* Copies up to `max` pending gaps, oldest first, into `out` (may be NULL when max is 0).
 * Returns how many are pending (may exceed max). When more than PW_SPOOL_MAX_GAPS would be
 * pending, the two oldest are merged (the range then also covers the records between them,
 * which are still sent; records is the sum). */
size_t pw_spool_gaps(const pw_spool_t *sp, pw_spool_gap_t *out, size_t max);

/* Creates an iterator over the records with seq >= from_seq that are still to be sent
 * (from_seq 0 means "after the last ack"; records at or below the ack or the last drop are
 * never returned). Records appended after the iterator was created are returned too; records
 * deleted by an ack or a drop are skipped. Returns 0 and *out (free with pw_spool_iter_close),
 * or PW_ENOMEM. */
int pw_spool_iter_open(pw_spool_t *sp, uint64_t from_seq, pw_spool_iter_t **out);

/* Next record into *rec. Returns 1 (a record), 0 (no more for now: call again after more
 * appends), PW_ECORRUPT (a record failed its CRC since open: `d` names file and offset; the
 * rest of that segment is skipped and the next call continues after it), or a negated errno.
 * rec->payload is valid until the next call on this iterator or its close. */
int pw_spool_iter_next(pw_spool_iter_t *it, pw_spool_rec_t *rec, pw_diag_t *d);

/* Frees the iterator. Accepts NULL. */
void pw_spool_iter_close(pw_spool_iter_t *it);

#endif /* PW_SPOOL_H */
