/* spool.c: durable on-disk spool of encoded samples (format and contract in spool.h, prose in
 * docs/internals/spool.md).
 *
 * Crash-safety rules followed throughout:
 * - data is appended at the known valid end of the active segment; a failed write is cut off
 *   again, so a segment's file holds its valid records followed only by zero bytes (the
 *   preallocated tail, see create_seg) except after a crash;
 * - a segment is preallocated by writing zeros (and syncing them) when it is created, unless
 *   the fsync policy is NEVER: a record then overwrites initialised blocks inside the file,
 *   and its fdatasync flushes only the data, with no size or extent change to commit to the
 *   file system journal (about half the CPU of an appending fdatasync on ext4; PostgreSQL
 *   preallocates its WAL segments for the same reason). A record's length word is never
 *   zero (its magic byte), so a zero word marks the end of the data;
 * - any state that says "these records are gone" (ack, drop point, gaps) is written to the
 *   state file (temporary file, sync, rename, directory sync) BEFORE segment files are
 *   deleted, so a crash in between leaves records that open() trims, never a silent hole;
 * - open() never trusts a length before checking the record's magic byte and the file size,
 *   and never returns a payload whose CRC failed.
 */
#include "spool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "alloc.h"
#include "spool_internal.h"

#define SEG_HDR          16u
#define REC_HDR          20u
#define REC_MAGIC        0xA5u
#define SEG_MAGIC        "PWSPOOL1"
#define STATE_MAGIC      "PWSPST01"
#define STATE_FIXED      40u
#define STATE_GAP        32u
#define STATE_HAS_STORED 1u /* flags word: the collector's stored seq follows the gaps (u64) */
#define READ_CHUNK       (64u * 1024u)
#define PATH_MAX_LEN     PW__SPOOL_PATH_MAX
#define DIR_MAX_LEN      (PATH_MAX_LEN - 64u)
#define SEG_NAME_LEN     30u /* "spool-" + 20 digits + ".seg" */

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct seg_s {
    uint64_t first_seq; /* from the file name (== header == first record's seq) */
    uint64_t last_seq;  /* seq of the last valid record; 0 while nrec == 0 */
    uint64_t nrec;      /* valid records */
    uint64_t size;      /* valid bytes, header included */
    uint64_t alloc;     /* file size: size plus a zero-filled (preallocated) tail; what the
                           segment costs against max_bytes */
    int sealed;         /* takes no more appends (a bad record ends it) */
} seg_t;

/* A read window over one file: records are parsed from here, payload views point into it. */
typedef struct reader_s {
    int fd;
    uint8_t *buf;
    size_t cap;
    uint64_t boff; /* file offset of buf[0] */
    size_t blen;   /* valid bytes in buf */
} reader_t;

struct pw_spool_iter_s {
    pw_spool_t *sp;
    pw_spool_iter_t *next_it; /* the spool's list of live iterators */
    uint64_t next_seq;        /* lowest seq still to return */
    uint64_t cur_first;       /* first_seq of the segment being read; 0 = none */
    uint64_t off;             /* next record's offset in that segment */
    reader_t rd;
};

struct pw_spool_s {
    char *dir;
    pw_spool_opts_t opts;
    seg_t *segs;
    size_t nseg, capseg;
    int wfd;    /* open for appends on segs[nseg - 1]; -1 when there is no active segment */
    int lockfd; /* holds the directory's lock */
    int dirty;  /* appended data not yet synced */
    uint64_t last_sync_ms;
    uint64_t last_seq;
    uint64_t acked;
    uint64_t skip_through; /* records <= this were dropped (spool full) */
    uint64_t stored;       /* the collector's own ack (pw_spool_note_stored), >= acked */
    int stored_dirty;      /* stored changed since the state file was written */
    uint64_t bytes;
    pw_spool_gap_t gaps[PW_SPOOL_MAX_GAPS];
    size_t ngaps;
    pw_spool_iter_t *iters;
};

/* ------------------------------------------------------------------------------------------ */
/* Little-endian helpers                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The CRC covers the length word, seq, flags and payload: everything but itself. */
static uint32_t rec_crc(const uint8_t *hdr, const uint8_t *payload, size_t len)
{
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, hdr, 4);
    c = crc32(c, hdr + 8, REC_HDR - 8);
    if (len > 0)
        c = crc32(c, payload, (uInt)len);
    return (uint32_t)c;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing (the OS layer is in spool_posix.c / spool_win.c, behind spool_internal.h)          */
/* ------------------------------------------------------------------------------------------ */

int pw__spool_write_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n > 0) {
        errno = 0;
        long long w = pw__spool_os_pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? pw__spool_os_err() : PW_EIO;
        p += w;
        off += (uint64_t)w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Paths and names                                                                            */
/* ------------------------------------------------------------------------------------------ */

static void seg_name(uint64_t first_seq, char *buf, size_t size)
{
    snprintf(buf, size, "spool-%020llu.seg", (unsigned long long)first_seq);
}

static void seg_path(const pw_spool_t *sp, uint64_t first_seq, char *buf, size_t size)
{
    char name[40];
    seg_name(first_seq, name, sizeof(name));
    snprintf(buf, size, "%s/%s", sp->dir, name);
}

static void file_path(const pw_spool_t *sp, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", sp->dir, name);
}

/* Parses "spool-<20 digits>.seg" strictly; 1 and *seq on a match. */
static int parse_seg_name(const char *name, uint64_t *seq)
{
    if (strlen(name) != SEG_NAME_LEN || strncmp(name, "spool-", 6) != 0 ||
        strcmp(name + 26, ".seg") != 0)
        return 0;
    uint64_t v = 0;
    for (int i = 6; i < 26; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        unsigned dgt = (unsigned)(name[i] - '0');
        if (v > (UINT64_MAX - dgt) / 10)
            return 0;
        v = v * 10 + dgt;
    }
    *seq = v;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Reader                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void reader_init(reader_t *r)
{
    r->fd = -1;
    r->buf = NULL;
    r->cap = 0;
    r->boff = 0;
    r->blen = 0;
}

static void reader_reset(reader_t *r, int fd)
{
    if (r->fd >= 0)
        pw__spool_os_close(r->fd);
    r->fd = fd;
    r->boff = 0;
    r->blen = 0;
}

static void reader_free(reader_t *r)
{
    reader_reset(r, -1);
    pw_free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

/* Makes bytes [off, off + n) of the file available at *out, reading at most up to `limit`
 * (the valid size). Returns 0, PW_ETRUNCATED (range past limit, or the file is shorter than
 * it should be), PW_ENOMEM, or a negated errno. */
static int reader_get(reader_t *r, uint64_t off, size_t n, uint64_t limit, const uint8_t **out)
{
    if (off > limit || n > limit - off)
        return PW_ETRUNCATED;
    if (off >= r->boff && off - r->boff <= r->blen && n <= r->blen - (off - r->boff)) {
        *out = r->buf + (off - r->boff);
        return 0;
    }
    size_t want = n > READ_CHUNK ? n : READ_CHUNK;
    if (want > limit - off)
        want = (size_t)(limit - off);
    if (want > r->cap) {
        size_t cap = want > READ_CHUNK ? want : READ_CHUNK;
        uint8_t *nb = pw_realloc(r->buf, cap);
        if (nb == NULL)
            return PW_ENOMEM;
        r->buf = nb;
        r->cap = cap;
    }
    r->blen = 0;
    size_t got = 0;
    while (got < want) {
        errno = 0;
        long long k = pw__spool_os_pread(r->fd, r->buf + got, want - got, off + got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return pw__spool_os_err();
        if (k == 0)
            break;
        got += (size_t)k;
    }
    r->boff = off;
    r->blen = got;
    if (got < n)
        return PW_ETRUNCATED;
    *out = r->buf;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* State file                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static int save_state(pw_spool_t *sp, pw_diag_t *d)
{
    uint8_t buf[STATE_FIXED + STATE_GAP * PW_SPOOL_MAX_GAPS + 8 + 4];
    memcpy(buf, STATE_MAGIC, 8);
    put64(buf + 8, sp->acked);
    put64(buf + 16, sp->skip_through);
    put64(buf + 24, sp->last_seq);
    put32(buf + 32, (uint32_t)sp->ngaps);
    put32(buf + 36, STATE_HAS_STORED);
    size_t n = STATE_FIXED;
    for (size_t i = 0; i < sp->ngaps; i++, n += STATE_GAP) {
        put64(buf + n, sp->gaps[i].first_seq);
        put64(buf + n + 8, sp->gaps[i].last_seq);
        put64(buf + n + 16, sp->gaps[i].records);
        put64(buf + n + 24, sp->gaps[i].next_seq);
    }
    put64(buf + n, sp->stored);
    n += 8;
    put32(buf + n, (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)n));
    n += 4;

    char tmp[PATH_MAX_LEN], dst[PATH_MAX_LEN];
    file_path(sp, "state.tmp", tmp, sizeof(tmp));
    file_path(sp, "state", dst, sizeof(dst));
    int fd = pw__spool_os_open_trunc(tmp);
    if (fd < 0)
        return pw_diag_set(d, pw__spool_os_err(), 0, 0, "state.tmp", "cannot create %s", tmp);
    int rc = pw__spool_write_all(fd, buf, n, 0);
    if (rc == 0 && sp->opts.fsync != PW_SPOOL_FSYNC_NEVER)
        rc = pw__spool_os_datasync(fd);
    pw__spool_os_close(fd);
    if (rc == 0)
        rc = pw__spool_os_rename(tmp, dst);
    if (rc == 0 && sp->opts.fsync != PW_SPOOL_FSYNC_NEVER)
        rc = pw__spool_os_dirsync(sp->dir);
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "state", "cannot write %s: %s", dst, pw_strerror(rc));
    sp->stored_dirty = 0;
    return 0;
}

/* Loads the state file. Returns 0 (loaded, or absent: all zero), 1 (present but invalid:
 * the caller quarantines it), or a negated errno. */
static int load_state(pw_spool_t *sp, pw_diag_t *problem)
{
    char path[PATH_MAX_LEN];
    file_path(sp, "state", path, sizeof(path));
    int fd = pw__spool_os_open(path, 0, 0);
    if (fd < 0)
        return errno == ENOENT ? 0 : pw__spool_os_err();
    uint8_t buf[STATE_FIXED + STATE_GAP * PW_SPOOL_MAX_GAPS + 16];
    size_t got = 0;
    while (got < sizeof(buf)) {
        long long k = pw__spool_os_pread(fd, buf + got, sizeof(buf) - got, got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    pw__spool_os_close(fd);
    const char *why = NULL;
    uint32_t ngaps = got >= STATE_FIXED ? get32(buf + 32) : 0;
    /* Written before the stored seq was kept: no flag, no stored seq (it is the ack then). */
    size_t extra = got >= STATE_FIXED && (get32(buf + 36) & STATE_HAS_STORED) ? 8 : 0;
    if (got < STATE_FIXED + 4 || memcmp(buf, STATE_MAGIC, 8) != 0)
        why = "bad magic or short file";
    else if (ngaps > PW_SPOOL_MAX_GAPS || got != STATE_FIXED + STATE_GAP * ngaps + extra + 4)
        why = "bad gap count or size";
    else if (get32(buf + got - 4) != (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(got - 4)))
        why = "CRC mismatch";
    if (why != NULL) {
        pw_diag_set(problem, PW_ECORRUPT, 0, 0, "state", "state file %s: %s", path, why);
        return 1;
    }
    sp->acked = get64(buf + 8);
    sp->skip_through = get64(buf + 16);
    sp->last_seq = get64(buf + 24);
    sp->ngaps = ngaps;
    for (size_t i = 0; i < ngaps; i++) {
        const uint8_t *g = buf + STATE_FIXED + STATE_GAP * i;
        sp->gaps[i].first_seq = get64(g);
        sp->gaps[i].last_seq = get64(g + 8);
        sp->gaps[i].records = get64(g + 16);
        sp->gaps[i].next_seq = get64(g + 24);
        sp->gaps[i].cause = PW_SPOOL_GAP_FULL; /* the open finds corrupt holes again */
    }
    sp->stored = extra ? get64(buf + STATE_FIXED + STATE_GAP * ngaps) : 0;
    if (sp->stored < sp->acked)
        sp->stored = sp->acked;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Gaps                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static uint64_t eff_start(const pw_spool_t *sp)
{
    return max64(sp->acked, sp->skip_through);
}

/* Adds gap g, first merging into it every pending gap whose carrier (next_seq) was dropped
 * as well (next_seq <= g.last_seq, or not yet assigned), since the collector must hear of
 * both with the one record that now follows them. */
static void add_gap(pw_spool_t *sp, pw_spool_gap_t g)
{
    size_t k = 0;
    for (size_t i = 0; i < sp->ngaps; i++) {
        pw_spool_gap_t *o = &sp->gaps[i];
        if (o->next_seq == 0 || o->next_seq <= g.last_seq) {
            if (o->first_seq < g.first_seq)
                g.first_seq = o->first_seq;
            g.records += o->records;
        } else {
            sp->gaps[k++] = *o;
        }
    }
    sp->ngaps = k;
    if (sp->ngaps == PW_SPOOL_MAX_GAPS) {
        /* Out of room: fold the oldest into the next one (documented in spool.h). */
        sp->gaps[1].first_seq = sp->gaps[0].first_seq;
        sp->gaps[1].records += sp->gaps[0].records;
        memmove(&sp->gaps[0], &sp->gaps[1], (sp->ngaps - 1) * sizeof(sp->gaps[0]));
        sp->ngaps--;
    }
    sp->gaps[sp->ngaps++] = g;
}

static void forget_acked_gaps(pw_spool_t *sp)
{
    size_t k = 0;
    for (size_t i = 0; i < sp->ngaps; i++)
        if (sp->gaps[i].next_seq == 0 || sp->gaps[i].next_seq > sp->acked)
            sp->gaps[k++] = sp->gaps[i];
    sp->ngaps = k;
}

/* ------------------------------------------------------------------------------------------ */
/* Segments                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static seg_t *find_seg(pw_spool_t *sp, uint64_t first_seq, size_t *idx)
{
    for (size_t i = 0; i < sp->nseg; i++)
        if (sp->segs[i].first_seq == first_seq) {
            if (idx)
                *idx = i;
            return &sp->segs[i];
        }
    return NULL;
}

static int push_seg(pw_spool_t *sp, const seg_t *s)
{
    if (sp->nseg == sp->capseg) {
        size_t cap = sp->capseg ? sp->capseg * 2 : 16;
        seg_t *ns = pw_realloc(sp->segs, cap * sizeof(*ns));
        if (ns == NULL)
            return PW_ENOMEM;
        sp->segs = ns;
        sp->capseg = cap;
    }
    sp->segs[sp->nseg++] = *s;
    return 0;
}

/* Iterators reading a segment about to be deleted let go of it first (Windows cannot delete
 * an open file); they find their place again by seq. */
static void iters_forget(pw_spool_t *sp, uint64_t first_seq)
{
    for (pw_spool_iter_t *it = sp->iters; it != NULL; it = it->next_it)
        if (it->cur_first == first_seq) {
            reader_reset(&it->rd, -1);
            it->cur_first = 0;
        }
}

static int sync_active(pw_spool_t *sp, pw_diag_t *d)
{
    if (sp->wfd < 0 || !sp->dirty)
        return 0;
    int rc = pw__spool_os_datasync(sp->wfd);
    if (rc != 0) {
        char path[PATH_MAX_LEN];
        seg_path(sp, sp->segs[sp->nseg - 1].first_seq, path, sizeof(path));
        return pw_diag_set(d, rc, 0, sp->segs[sp->nseg - 1].size, "segment", "fdatasync %s: %s",
                           path, pw_strerror(rc));
    }
    sp->dirty = 0;
    sp->last_sync_ms = pw__spool_os_now_ms();
    return 0;
}

static void close_active(pw_spool_t *sp)
{
    if (sp->wfd >= 0) {
        if (sp->opts.fsync != PW_SPOOL_FSYNC_NEVER)
            (void)sync_active(sp, NULL); /* best effort: the record syncs already reported */
        pw__spool_os_close(sp->wfd);
        sp->wfd = -1;
        sp->dirty = 0;
    }
}

/* Closes the active segment for good (the next append rolls): its unused preallocated tail
 * is given back, so only the active segment ever holds one. If the cut fails the tail stays
 * (zeros, read as the end of the data) and keeps counting against max_bytes. */
static void seal_active(pw_spool_t *sp)
{
    if (sp->wfd >= 0) {
        seg_t *s = &sp->segs[sp->nseg - 1];
        if (s->alloc > s->size && pw__spool_os_truncate(sp->wfd, s->size) == 0) {
            sp->bytes -= s->alloc - s->size;
            s->alloc = s->size;
        }
    }
    close_active(sp);
}

/* Deletes segments [0, n) from the front; stops at the first file that cannot be removed. */
static int drop_front(pw_spool_t *sp, size_t n, pw_diag_t *d)
{
    size_t done = 0;
    int rc = 0;
    for (; done < n; done++) {
        seg_t *s = &sp->segs[done];
        char path[PATH_MAX_LEN];
        seg_path(sp, s->first_seq, path, sizeof(path));
        iters_forget(sp, s->first_seq);
        if (done == sp->nseg - 1)
            close_active(sp);
        rc = pw__spool_os_unlink(path);
        if (rc != 0 && rc != PW_ENOENT) {
            pw_diag_set(d, rc, 0, 0, "segment", "cannot delete %s: %s", path, pw_strerror(rc));
            break;
        }
        rc = 0;
        sp->bytes -= s->alloc;
    }
    if (done > 0) {
        memmove(sp->segs, sp->segs + done, (sp->nseg - done) * sizeof(seg_t));
        sp->nseg -= done;
    }
    return rc;
}

/* Number of leading segments with nothing left to send. */
static size_t count_done_front(const pw_spool_t *sp)
{
    uint64_t eff = eff_start(sp);
    size_t n = 0;
    for (; n < sp->nseg; n++) {
        const seg_t *s = &sp->segs[n];
        /* An empty sealed segment (its first record was bad) is done once the hole up to the
         * next segment is past. */
        int done = s->nrec > 0 ? s->last_seq <= eff
                               : n + 1 < sp->nseg && sp->segs[n + 1].first_seq <= eff + 1;
        if (!done)
            break;
    }
    return n;
}

/* Calls cb for each record header of segment s (no CRC check: used for counting and keyframe
 * search while dropping). cb returns non-zero to stop. A bad header ends the walk. */
typedef int (*walk_cb)(uint64_t seq, uint32_t flags, void *arg);

static int walk_seg(pw_spool_t *sp, const seg_t *s, walk_cb cb, void *arg)
{
    char path[PATH_MAX_LEN];
    seg_path(sp, s->first_seq, path, sizeof(path));
    reader_t r;
    reader_init(&r);
    r.fd = pw__spool_os_open(path, 0, 0);
    if (r.fd < 0)
        return pw__spool_os_err();
    int rc = 0;
    uint64_t off = SEG_HDR;
    while (off < s->size) {
        const uint8_t *h;
        rc = reader_get(&r, off, REC_HDR, s->size, &h);
        if (rc != 0)
            break;
        uint32_t lm = get32(h);
        if ((lm >> 24) != REC_MAGIC)
            break;
        if ((rc = cb(get64(h + 8), get32(h + 16), arg)) != 0) {
            rc = rc > 0 ? 0 : rc;
            break;
        }
        off += REC_HDR + (lm & 0xFFFFFFu);
    }
    reader_free(&r);
    return rc;
}

typedef struct drop_acc_s {
    uint64_t above;   /* only records with seq > above count */
    uint64_t records; /* counted */
    uint64_t first, last;
    uint64_t keyframe; /* keyframe search: seq of the first keyframe found, 0 = none */
} drop_acc_t;

static int count_cb(uint64_t seq, uint32_t flags, void *arg)
{
    drop_acc_t *a = arg;
    (void)flags;
    if (seq <= a->above)
        return 0;
    if (a->records++ == 0)
        a->first = seq;
    a->last = seq;
    return 0;
}

static int keyframe_cb(uint64_t seq, uint32_t flags, void *arg)
{
    drop_acc_t *a = arg;
    if (seq <= a->above)
        return 0;
    if (flags & PW_SPOOL_KEYFRAME) {
        a->keyframe = seq;
        return 1;
    }
    return count_cb(seq, flags, arg);
}

/* Frees room for `need` more bytes by dropping the oldest whole segments (never the active
 * one), then skipping records up to the next keyframe; records the gap durably before any
 * file is deleted. incoming_seq is the record about to be appended. */
static int make_room(pw_spool_t *sp, uint64_t need, uint64_t incoming_seq, pw_diag_t *d)
{
    size_t droppable = sp->wfd >= 0 ? sp->nseg - 1 : sp->nseg;
    size_t n = 0;
    uint64_t used = sp->bytes;
    while (n < droppable && used + need > sp->opts.max_bytes)
        used -= sp->segs[n++].alloc;
    if (used + need > sp->opts.max_bytes)
        return pw_diag_set(d, PW_ESPOOLFULL, 0, 0, "max_bytes",
                           "spool %s cannot hold %llu more bytes", sp->dir,
                           (unsigned long long)need);
    if (n == 0)
        return 0;

    drop_acc_t acc = {.above = eff_start(sp)};
    for (size_t i = 0; i < n; i++) {
        if (sp->segs[i].nrec == 0 || sp->segs[i].last_seq <= acc.above)
            continue;
        int rc = walk_seg(sp, &sp->segs[i], count_cb, &acc);
        if (rc != 0)
            return pw_diag_set(d, rc, 0, 0, "segment", "reading segment %llu to drop it: %s",
                               (unsigned long long)sp->segs[i].first_seq, pw_strerror(rc));
    }
    uint64_t new_skip = acc.above;
    for (size_t i = 0; i < n; i++)
        new_skip = max64(new_skip, sp->segs[i].last_seq);

    pw_spool_gap_t gaps_before[PW_SPOOL_MAX_GAPS];
    size_t ngaps_before = sp->ngaps;
    memcpy(gaps_before, sp->gaps, sizeof(gaps_before));
    if (acc.records > 0) {
        /* The first record kept must be a keyframe: skip deltas (counted in the gap) until
         * one, in the segments that stay. If none is left, the incoming record carries the
         * gap and the collector asks for a keyframe if it cannot decode it (DESIGN.md §3). */
        acc.above = new_skip;
        for (size_t i = n; i < sp->nseg && acc.keyframe == 0; i++) {
            if (sp->segs[i].nrec == 0)
                continue;
            int rc = walk_seg(sp, &sp->segs[i], keyframe_cb, &acc);
            if (rc != 0)
                return pw_diag_set(d, rc, 0, 0, "segment", "reading segment %llu: %s",
                                   (unsigned long long)sp->segs[i].first_seq, pw_strerror(rc));
        }
        new_skip = max64(new_skip, acc.last);
        pw_spool_gap_t g = {acc.first, acc.last, acc.records,
                            acc.keyframe ? acc.keyframe : incoming_seq, PW_SPOOL_GAP_FULL};
        add_gap(sp, g);
    }
    uint64_t old_skip = sp->skip_through;
    sp->skip_through = new_skip;
    int rc = save_state(sp, d);
    if (rc != 0) {
        sp->skip_through = old_skip;
        sp->ngaps = ngaps_before;
        memcpy(sp->gaps, gaps_before, sizeof(gaps_before));
        return rc;
    }
    /* Whole segments made of skipped deltas go too (never the active one). */
    while (n < droppable && sp->segs[n].nrec > 0 && sp->segs[n].last_seq <= new_skip)
        n++;
    return drop_front(sp, n, d);
}

/* Creates the segment starting at first_seq as the active one, `alloc` bytes long (header,
 * then zeros), synced with its directory entry when alloc > SEG_HDR: the preallocation that
 * lets each record's fdatasync skip the journal. The caller made room for alloc bytes. */
static int create_seg(pw_spool_t *sp, uint64_t first_seq, uint64_t alloc, pw_diag_t *d)
{
    char path[PATH_MAX_LEN];
    seg_path(sp, first_seq, path, sizeof(path));
    int fd = pw__spool_os_open(path, 1, 1);
    if (fd < 0)
        return pw_diag_set(d, pw__spool_os_err(), 0, 0, "segment", "cannot create %s", path);
    uint8_t hdr[SEG_HDR];
    memcpy(hdr, SEG_MAGIC, 8);
    put64(hdr + 8, first_seq);
    int rc = pw__spool_write_all(fd, hdr, SEG_HDR, 0);
    if (rc == 0 && alloc > SEG_HDR) {
        rc = pw__spool_os_write_zeros(fd, SEG_HDR, alloc);
        if (rc == 0)
            rc = pw__spool_os_datasync(fd);
        if (rc != 0 && pw__spool_os_truncate(fd, SEG_HDR) == 0) {
            /* No room for the zeros (ENOSPC): records extend the file, as without
             * preallocation; their own writes and syncs report what still fails. */
            alloc = SEG_HDR;
            rc = 0;
        }
    }
    if (rc == 0 && sp->opts.fsync != PW_SPOOL_FSYNC_NEVER)
        rc = pw__spool_os_dirsync(sp->dir);
    seg_t s = {first_seq, 0, 0, SEG_HDR, alloc, 0};
    if (rc == 0)
        rc = push_seg(sp, &s);
    if (rc != 0) {
        pw__spool_os_close(fd);
        pw__spool_os_unlink(path);
        return pw_diag_set(d, rc, 0, 0, "segment", "cannot create %s: %s", path, pw_strerror(rc));
    }
    sp->wfd = fd;
    sp->bytes += alloc;
    sp->dirty = alloc == SEG_HDR; /* else the header was synced with the zeros */
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Open: scan and repair                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct listing_s {
    uint64_t *seqs;
    size_t n, cap;
    uint32_t ignored;
    pw_spool_report_t *rep;
    const char *dir;
    int rc;
} listing_t;

static int list_cb(const char *name, void *arg)
{
    listing_t *l = arg;
    uint64_t seq;
    if (parse_seg_name(name, &seq)) {
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 32;
            uint64_t *ns = pw_realloc(l->seqs, cap * sizeof(*ns));
            if (ns == NULL)
                return PW_ENOMEM;
            l->seqs = ns;
            l->cap = cap;
        }
        l->seqs[l->n++] = seq;
        return 0;
    }
    size_t len = strlen(name);
    if (strcmp(name, "state") == 0 || strcmp(name, "state.tmp") == 0 || strcmp(name, "lock") == 0 ||
        (len > 4 && strcmp(name + len - 4, ".bad") == 0))
        return 0;
    l->ignored++;
    if (l->rep && l->rep->first_problem.code == 0)
        pw_diag_set(&l->rep->first_problem, PW_EFORMAT, 0, 0, "file",
                    "%s/%s is not a spool file: ignored", l->dir, name);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void note(pw_spool_report_t *rep, int code, uint64_t off, const char *path, const char *what)
{
    if (rep->first_problem.code == 0)
        pw_diag_set(&rep->first_problem, code, 0, off, "segment", "%s at offset %llu: %s", path,
                    (unsigned long long)off, what);
}

static int quarantine(pw_spool_t *sp, const char *path, pw_spool_report_t *rep, uint64_t off,
                      const char *why)
{
    char bad[PATH_MAX_LEN + 8];
    snprintf(bad, sizeof(bad), "%s.bad", path);
    note(rep, PW_ECORRUPT, off, path, why);
    rep->quarantined++;
    (void)sp;
    /* If the rename fails the file stays, ignored again at the next open; not fatal. */
    (void)pw__spool_os_rename(path, bad);
    return 0;
}

enum { BAD_NONE, BAD_SHORT, BAD_MAGIC, BAD_CRC, BAD_SEQ };

/* Checks the records of one segment file of `fsize` bytes. Fills *s (valid size, records,
 * last seq) and returns the kind of the first bad record (BAD_NONE if all good); *bad_off is
 * its offset, *bad_end where it ends by its length word (capped at fsize; *bad_off when its
 * magic byte is wrong, so the length is unknown). */
static int scan_records(reader_t *r, uint64_t fsize, uint64_t name_seq, seg_t *s, uint64_t *bad_off,
                        uint64_t *bad_end, int *err)
{
    uint64_t off = SEG_HDR;
    *err = 0;
    while (off < fsize) {
        *bad_off = off;
        *bad_end = fsize;
        const uint8_t *h;
        if (fsize - off < REC_HDR)
            return BAD_SHORT;
        int rc = reader_get(r, off, REC_HDR, fsize, &h);
        if (rc != 0) {
            *err = rc;
            return BAD_SHORT;
        }
        uint32_t lm = get32(h);
        uint32_t len = lm & 0xFFFFFFu;
        if ((lm >> 24) != REC_MAGIC) {
            *bad_end = off;
            return BAD_MAGIC;
        }
        if (len > fsize - off - REC_HDR)
            return BAD_SHORT;
        *bad_end = off + REC_HDR + len;
        rc = reader_get(r, off, REC_HDR + len, fsize, &h);
        if (rc != 0) {
            *err = rc;
            return BAD_SHORT;
        }
        if (get32(h + 4) != rec_crc(h, h + REC_HDR, len))
            return BAD_CRC;
        uint64_t seq = get64(h + 8);
        if (s->nrec == 0 ? seq != name_seq : seq <= s->last_seq)
            return BAD_SEQ;
        s->nrec++;
        s->last_seq = seq;
        off += REC_HDR + len;
        s->size = off;
    }
    return BAD_NONE;
}

static int all_zero(reader_t *r, uint64_t off, uint64_t end)
{
    while (off < end) {
        size_t n = end - off > READ_CHUNK ? READ_CHUNK : (size_t)(end - off);
        const uint8_t *p;
        if (reader_get(r, off, n, end, &p) != 0)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (p[i] != 0)
                return 0;
        off += n;
    }
    return 1;
}

/* Opens, checks and repairs segment file `seq` (the `is_last` one of the directory). Adds it
 * to sp->segs when kept. prev_seq: highest seq of the segments kept before it. */
static int load_seg(pw_spool_t *sp, uint64_t seq, int is_last, uint64_t prev_seq,
                    pw_spool_report_t *rep, pw_diag_t *d)
{
    char path[PATH_MAX_LEN];
    seg_path(sp, seq, path, sizeof(path));
    reader_t r;
    reader_init(&r);
    /* Read-write only where a torn tail may have to be cut. */
    r.fd = pw__spool_os_open(path, is_last, 0);
    if (r.fd < 0)
        return pw_diag_set(d, pw__spool_os_err(), 0, 0, "segment", "cannot open %s", path);
    uint64_t fsize = 0; /* set by pw__spool_os_filesize; mingw -O2 cannot see that */
    int rc = pw__spool_os_filesize(r.fd, &fsize);
    if (rc != 0) {
        reader_free(&r);
        return pw_diag_set(d, rc, 0, 0, "segment", "cannot stat %s", path);
    }
    uint8_t want[SEG_HDR];
    memcpy(want, SEG_MAGIC, 8);
    put64(want + 8, seq);
    const uint8_t *h = NULL;
    if (fsize >= SEG_HDR && (rc = reader_get(&r, 0, SEG_HDR, fsize, &h)) != 0) {
        reader_free(&r);
        return pw_diag_set(d, rc, 0, 0, "segment", "cannot read %s", path);
    }
    if (fsize < SEG_HDR) {
        /* A crash between creating the file and writing its header leaves a prefix of the
         * header (or nothing): no record was ever in it. */
        const uint8_t *p = NULL;
        int prefix = fsize == 0 || (reader_get(&r, 0, (size_t)fsize, fsize, &p) == 0 &&
                                    memcmp(p, want, (size_t)fsize) == 0);
        reader_free(&r);
        if (prefix && is_last) {
            rep->torn_bytes_cut += fsize;
            note(rep, PW_ETRUNCATED, 0, path, "segment header incomplete: file removed");
            /* A file another process holds (antivirus, backup) cannot go: set it aside instead
             * rather than stop the agent. */
            if (pw__spool_os_unlink(path) != 0)
                return quarantine(sp, path, rep, 0, "segment header incomplete");
            return 0;
        }
        return quarantine(sp, path, rep, 0, "segment header incomplete");
    }
    if (memcmp(h, want, SEG_HDR) != 0) {
        reader_free(&r);
        return quarantine(sp, path, rep, 0, "bad segment header");
    }
    if (seq <= prev_seq) {
        reader_free(&r);
        return quarantine(sp, path, rep, 0, "first seq not above the previous segment's");
    }
    seg_t s = {seq, 0, 0, SEG_HDR, 0, 0};
    uint64_t bad_off = 0, bad_end = 0;
    int err = 0;
    int bad = scan_records(&r, fsize, seq, &s, &bad_off, &bad_end, &err);
    if (err != 0 && err != PW_ETRUNCATED) {
        reader_free(&r);
        return pw_diag_set(d, err, 0, bad_off, "segment", "cannot read %s", path);
    }
    if (bad == BAD_SEQ && s.nrec == 0) {
        reader_free(&r);
        return quarantine(sp, path, rep, bad_off, "first record's seq differs from the name");
    }
    s.alloc = fsize;
    if ((bad == BAD_SHORT || bad == BAD_MAGIC) && all_zero(&r, bad_off, fsize)) {
        /* Only zeros after the last record: the preallocated tail (create_seg), where the next
         * record goes. A record whose write never reached the disk at all is not known to
         * have existed (its seq is reused). */
        bad = BAD_NONE;
    }
    if (bad != BAD_NONE) {
        /* Torn: the last write of the last segment, partly on disk, followed by nothing but
         * the zeros it was overwriting (or the end of the file). */
        int torn =
            is_last && (bad == BAD_SHORT || (bad == BAD_CRC && all_zero(&r, bad_end, fsize)));
        if (torn && bad_end < fsize) {
            /* Inside a preallocated segment: zero the torn bytes (a shorter record written
             * over them would leave garbage behind it) and keep the tail. */
            rc = pw__spool_os_write_zeros(r.fd, bad_off, bad_end);
            if (rc == 0 && sp->opts.fsync != PW_SPOOL_FSYNC_NEVER)
                rc = pw__spool_os_datasync(r.fd);
            if (rc != 0) {
                reader_free(&r);
                return pw_diag_set(d, rc, 0, bad_off, "segment", "cannot erase torn record in %s",
                                   path);
            }
            rep->torn_bytes_cut += bad_end - bad_off;
            note(rep, PW_ETRUNCATED, bad_off, path, "torn last record erased");
        } else if (torn) {
            rc = pw__spool_os_truncate(r.fd, bad_off);
            if (rc != 0) {
                reader_free(&r);
                return pw_diag_set(d, rc, 0, bad_off, "segment", "cannot truncate %s", path);
            }
            s.alloc = bad_off;
            rep->torn_bytes_cut += fsize - bad_off;
            note(rep, PW_ETRUNCATED, bad_off, path, "torn last record cut");
        } else {
            s.sealed = 1;
            rep->corrupt_segments++;
            rep->corrupt_bytes += fsize - bad_off;
            note(rep, PW_ECORRUPT, bad_off, path,
                 bad == BAD_SEQ ? "seq out of order: rest of segment ignored"
                                : "bad record: rest of segment ignored");
        }
    }
    if (!is_last && s.nrec == 0 && !s.sealed) {
        /* An empty segment in the middle holds nothing. If it cannot be deleted now (held by
         * another process), it is left for the next open: not a reason to stop. */
        reader_free(&r);
        (void)pw__spool_os_unlink(path);
        return 0;
    }
    rc = push_seg(sp, &s);
    if (rc == 0)
        sp->bytes += s.alloc;
    reader_free(&r);
    return rc;
}

/* Seqs missing between kept segments (a bad record ended a segment early, or a file was
 * quarantined), and after a sealed last segment up to the last seq ever written. The agent
 * numbers samples contiguously (DESIGN.md §2), so every hole is lost samples: they must reach
 * the collector as a gap like drops do, or its contiguous ack would wait forever. */
static void add_gap_replacing(pw_spool_t *sp, uint64_t first, uint64_t last, uint64_t next)
{
    first = max64(first, eff_start(sp) + 1);
    if (first > last)
        return;
    /* The same hole was recorded by an earlier open, maybe before its carrier existed. */
    size_t k = 0;
    for (size_t j = 0; j < sp->ngaps; j++)
        if (sp->gaps[j].first_seq != first)
            sp->gaps[k++] = sp->gaps[j];
    sp->ngaps = k;
    pw_spool_gap_t g = {first, last, last - first + 1, next, PW_SPOOL_GAP_CORRUPT};
    add_gap(sp, g);
}

static void add_hole_gaps(pw_spool_t *sp)
{
    for (size_t i = 0; i < sp->nseg; i++) {
        const seg_t *s = &sp->segs[i];
        uint64_t first = s->nrec ? s->last_seq + 1 : s->first_seq;
        if (i + 1 < sp->nseg) {
            uint64_t next = sp->segs[i + 1].first_seq;
            if (next > first)
                add_gap_replacing(sp, first, next - 1, next);
        } else if (s->sealed) {
            add_gap_replacing(sp, first, sp->last_seq, 0); /* the next append carries it */
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Public API                                                                                 */
/* ------------------------------------------------------------------------------------------ */

int pw_spool_open(const char *dir, const pw_spool_opts_t *opts, pw_spool_t **out,
                  pw_spool_report_t *report, pw_diag_t *d)
{
    pw_spool_report_t rep_local;
    pw_spool_report_t *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof(*rep));
    pw_diag_clear(d);
    if (dir == NULL || out == NULL || dir[0] == '\0')
        return pw_diag_set(d, PW_EINVAL, 0, 0, "dir", "no spool directory");
    if (strlen(dir) > DIR_MAX_LEN)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "dir", "spool directory path too long");
    pw_spool_opts_t o = {0};
    if (opts)
        o = *opts;
    if (o.max_bytes == 0)
        o.max_bytes = PW_SPOOL_MAX_BYTES_DEFAULT;
    if (o.segment_bytes == 0)
        o.segment_bytes = o.max_bytes < PW_SPOOL_SEGMENT_BYTES_DEFAULT
                              ? o.max_bytes
                              : PW_SPOOL_SEGMENT_BYTES_DEFAULT;
    if (o.fsync_interval_ms == 0)
        o.fsync_interval_ms = PW_SPOOL_FSYNC_INTERVAL_DEFAULT_MS;
    if (o.segment_bytes < PW_SPOOL_SEGMENT_BYTES_MIN || o.segment_bytes > o.max_bytes)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "segment_bytes",
                           "segment_bytes %llu must be in [%llu, max_bytes %llu]",
                           (unsigned long long)o.segment_bytes,
                           (unsigned long long)PW_SPOOL_SEGMENT_BYTES_MIN,
                           (unsigned long long)o.max_bytes);
    if ((unsigned)o.fsync > PW_SPOOL_FSYNC_MANUAL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "fsync", "unknown fsync policy %d", (int)o.fsync);

    int rc = pw__spool_os_mkdir(dir);
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "dir", "cannot create %s: %s", dir, pw_strerror(rc));
    pw_spool_t *sp = pw_calloc(1, sizeof(*sp));
    if (sp == NULL || (sp->dir = pw_strdup(dir)) == NULL) {
        pw_free(sp);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    }
    sp->opts = o;
    sp->wfd = -1;
    sp->lockfd = -1;
    sp->last_sync_ms = pw__spool_os_now_ms();

    char path[PATH_MAX_LEN];
    listing_t l = {.rep = rep, .dir = dir};
    file_path(sp, "lock", path, sizeof(path));
    sp->lockfd = pw__spool_os_open(path, 1, 0);
    if (sp->lockfd < 0 && errno == ENOENT)
        sp->lockfd = pw__spool_os_open(path, 1, 1);
    if (sp->lockfd < 0) {
        rc = pw_diag_set(d, pw__spool_os_err(), 0, 0, "lock", "cannot open %s", path);
        goto fail;
    }
    if ((rc = pw__spool_os_lock(sp->lockfd)) != 0) {
        pw_diag_set(d, rc, 0, 0, "lock", "spool %s is in use by another process", dir);
        goto fail;
    }

    rc = load_state(sp, &rep->first_problem);
    if (rc < 0) {
        pw_diag_set(d, rc, 0, 0, "state", "cannot read the state of %s: %s", dir, pw_strerror(rc));
        goto fail;
    }
    int save = 0;
    if (rc == 1) {
        char bad[PATH_MAX_LEN];
        file_path(sp, "state", path, sizeof(path));
        file_path(sp, "state.bad", bad, sizeof(bad));
        (void)pw__spool_os_rename(path, bad);
        rep->state_reset = 1;
        save = 1;
    }
    file_path(sp, "state.tmp", path, sizeof(path));
    (void)pw__spool_os_unlink(path); /* a crash during save_state; "state" is still the old one */

    rc = pw__spool_os_list_dir(dir, list_cb, &l);
    if (rc != 0) {
        pw_diag_set(d, rc, 0, 0, "dir", "cannot list %s: %s", dir, pw_strerror(rc));
        goto fail;
    }
    rep->ignored = l.ignored;
    if (l.n > 1)
        qsort(l.seqs, l.n, sizeof(*l.seqs), cmp_u64);
    uint64_t prev = 0;
    for (size_t i = 0; i < l.n; i++) {
        rc = load_seg(sp, l.seqs[i], i + 1 == l.n, prev, rep, d);
        if (rc != 0)
            goto fail;
        if (sp->nseg > 0)
            prev = max64(prev, sp->segs[sp->nseg - 1].nrec ? sp->segs[sp->nseg - 1].last_seq
                                                           : sp->segs[sp->nseg - 1].first_seq);
    }
    /* Appends continue in the last segment kept, unless a bad record sealed it (then the
     * next append rolls), right after its last valid record: only zeros follow it (the scan
     * checked, or erased a torn record). */
    if (sp->nseg > 0 && !sp->segs[sp->nseg - 1].sealed) {
        seg_path(sp, sp->segs[sp->nseg - 1].first_seq, path, sizeof(path));
        sp->wfd = pw__spool_os_open(path, 1, 0);
        if (sp->wfd < 0) {
            rc = pw_diag_set(d, pw__spool_os_err(), 0, 0, "segment", "cannot open %s", path);
            goto fail;
        }
    }
    /* A sealed segment's name proves its first seq was written, even if no record of it is
     * readable; an unsealed empty one takes that seq with the next append. */
    for (size_t i = 0; i < sp->nseg; i++)
        sp->last_seq = max64(sp->last_seq, sp->segs[i].sealed
                                               ? max64(sp->segs[i].first_seq, sp->segs[i].last_seq)
                                               : sp->segs[i].last_seq);
    sp->last_seq = max64(sp->last_seq, eff_start(sp));
    pw_spool_gap_t gaps_before[PW_SPOOL_MAX_GAPS];
    size_t ngaps = sp->ngaps;
    memcpy(gaps_before, sp->gaps, sizeof(gaps_before));
    add_hole_gaps(sp);
    forget_acked_gaps(sp);
    if (save || sp->ngaps != ngaps || memcmp(gaps_before, sp->gaps, sizeof(gaps_before)) != 0) {
        if ((rc = save_state(sp, d)) != 0)
            goto fail;
    }
    if ((rc = drop_front(sp, count_done_front(sp), d)) != 0)
        goto fail;

    rep->segments = (uint32_t)sp->nseg;
    for (size_t i = 0; i < sp->nseg; i++)
        rep->records += sp->segs[i].nrec;
    rep->bytes = sp->bytes;
    pw_free(l.seqs);
    *out = sp;
    return 0;

fail:
    pw_free(l.seqs);
    pw_spool_close(sp);
    return rc;
}

void pw_spool_close(pw_spool_t *sp)
{
    if (sp == NULL)
        return;
    if (sp->stored_dirty)
        save_state(sp, NULL); /* best effort: a stale stored seq only means more resends */
    close_active(sp);
    if (sp->lockfd >= 0)
        pw__spool_os_close(sp->lockfd);
    pw_free(sp->segs);
    pw_free(sp->dir);
    pw_free(sp);
}

int pw__spool_test_fail_appends;

int pw_spool_append(pw_spool_t *sp, uint64_t seq, uint32_t flags, const void *payload, size_t len,
                    pw_diag_t *d)
{
    if (sp == NULL || (payload == NULL && len > 0))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "bad arguments");
    if (pw__spool_test_fail_appends > 0) {
        pw__spool_test_fail_appends--;
        return pw_diag_set(d, PW_ENOSPC, 0, 0, "", "test: the disk is full");
    }
    if (seq <= sp->last_seq)
        return pw_diag_set(d, PW_ESEQ, 0, 0, "seq", "seq %llu not above the last seq %llu",
                           (unsigned long long)seq, (unsigned long long)sp->last_seq);
    if (len > PW_SPOOL_MAX_RECORD)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "len", "record of %llu bytes over the %u maximum",
                           (unsigned long long)len, PW_SPOOL_MAX_RECORD);
    uint64_t rec = REC_HDR + (uint64_t)len;
    if (SEG_HDR + rec > sp->opts.max_bytes)
        return pw_diag_set(d, PW_ESPOOLFULL, 0, 0, "max_bytes",
                           "record of %llu bytes cannot fit in a spool of %llu bytes",
                           (unsigned long long)len, (unsigned long long)sp->opts.max_bytes);

    seg_t *act = sp->wfd >= 0 ? &sp->segs[sp->nseg - 1] : NULL;
    int roll = act == NULL || (act->nrec > 0 && act->size + rec > sp->opts.segment_bytes);
    /* A new segment is preallocated whole when the record fits in it and records are synced
     * (the preallocation only makes fdatasync cheaper). Room is made for what the file will
     * take on disk: the whole preallocation, or what the record adds past the file's end. */
    uint64_t alloc = SEG_HDR;
    if (roll && sp->opts.fsync != PW_SPOOL_FSYNC_NEVER && SEG_HDR + rec <= sp->opts.segment_bytes)
        alloc = sp->opts.segment_bytes;
    uint64_t need = roll ? max64(alloc, SEG_HDR + rec)
                         : (act->size + rec > act->alloc ? act->size + rec - act->alloc : 0);
    if (roll && act != NULL) {
        seal_active(sp);
        act = NULL;
    }
    int rc;
    if (sp->bytes + need > sp->opts.max_bytes && (rc = make_room(sp, need, seq, d)) != 0)
        return rc;
    if (roll && (rc = create_seg(sp, seq, alloc, d)) != 0)
        return rc;
    act = &sp->segs[sp->nseg - 1];

    uint8_t hdr[REC_HDR];
    put32(hdr, (uint32_t)REC_MAGIC << 24 | (uint32_t)len);
    put64(hdr + 8, seq);
    put32(hdr + 16, flags);
    put32(hdr + 4, rec_crc(hdr, payload, len));
    rc = pw__spool_os_write_record(sp->wfd, hdr, REC_HDR, payload, len, act->size);
    if (rc == 0 && sp->opts.fsync == PW_SPOOL_FSYNC_ALWAYS)
        rc = pw__spool_os_datasync(sp->wfd);
    if (rc != 0) {
        /* Leave the segment exactly as before, so the same seq can be retried: cut at its
         * valid end (a preallocated tail goes too; later records extend the file). */
        if (pw__spool_os_truncate(sp->wfd, act->size) == 0 && act->alloc > act->size) {
            sp->bytes -= act->alloc - act->size;
            act->alloc = act->size;
        }
        char path[PATH_MAX_LEN];
        seg_path(sp, act->first_seq, path, sizeof(path));
        return pw_diag_set(d, rc, 0, act->size, "segment", "appending seq %llu to %s: %s",
                           (unsigned long long)seq, path, pw_strerror(rc));
    }
    act->size += rec;
    act->nrec++;
    act->last_seq = seq;
    if (act->size > act->alloc) {
        sp->bytes += act->size - act->alloc;
        act->alloc = act->size;
    }
    sp->last_seq = seq;
    if (sp->opts.fsync == PW_SPOOL_FSYNC_ALWAYS) {
        sp->dirty = 0;
    } else {
        sp->dirty = 1;
        if (sp->opts.fsync == PW_SPOOL_FSYNC_INTERVAL &&
            pw__spool_os_now_ms() - sp->last_sync_ms >= sp->opts.fsync_interval_ms)
            (void)sync_active(sp, NULL); /* retried at the next append or pw_spool_sync */
    }
    for (size_t i = 0; i < sp->ngaps; i++)
        if (sp->gaps[i].next_seq == 0)
            sp->gaps[i].next_seq = seq; /* not durable until the next save: open re-derives */
    return 0;
}

int pw_spool_sync(pw_spool_t *sp, pw_diag_t *d)
{
    if (sp == NULL)
        return PW_EINVAL;
    return sync_active(sp, d);
}

int pw_spool_ack(pw_spool_t *sp, uint64_t acked_seq, pw_diag_t *d)
{
    if (sp == NULL)
        return PW_EINVAL;
    if (acked_seq <= sp->acked)
        return 0;
    if (acked_seq > sp->last_seq)
        return pw_diag_set(d, PW_ESEQ, 0, 0, "seq", "ack %llu above the last seq %llu",
                           (unsigned long long)acked_seq, (unsigned long long)sp->last_seq);
    pw_spool_gap_t gaps_before[PW_SPOOL_MAX_GAPS];
    size_t ngaps_before = sp->ngaps;
    memcpy(gaps_before, sp->gaps, sizeof(gaps_before));
    uint64_t old = sp->acked;
    sp->acked = acked_seq;
    forget_acked_gaps(sp);
    int rc = save_state(sp, d);
    if (rc != 0) {
        sp->acked = old;
        sp->ngaps = ngaps_before;
        memcpy(sp->gaps, gaps_before, sizeof(gaps_before));
        return rc;
    }
    return drop_front(sp, count_done_front(sp), d);
}

int pw_spool_note_stored(pw_spool_t *sp, uint64_t seq)
{
    if (sp == NULL)
        return PW_EINVAL;
    if (seq > sp->last_seq)
        return PW_ESEQ;
    if (seq > sp->stored) {
        sp->stored = seq;
        sp->stored_dirty = 1;
    }
    return 0;
}

uint64_t pw_spool_stored_seq(const pw_spool_t *sp)
{
    return sp->stored > sp->acked ? sp->stored : sp->acked;
}

int pw_spool_skip_to(pw_spool_t *sp, uint64_t seq, pw_diag_t *d)
{
    if (sp == NULL)
        return PW_EINVAL;
    if (seq <= sp->last_seq)
        return pw_spool_ack(sp, seq, d);
    pw_spool_gap_t gaps_before[PW_SPOOL_MAX_GAPS];
    size_t ngaps_before = sp->ngaps;
    memcpy(gaps_before, sp->gaps, sizeof(gaps_before));
    uint64_t old_acked = sp->acked, old_last = sp->last_seq;
    sp->acked = sp->last_seq = seq;
    /* Every pending gap lies below seq, its carrier not yet assigned included: the collector
     * holds those seqs, nothing is to be told. */
    sp->ngaps = 0;
    int rc = save_state(sp, d);
    if (rc != 0) {
        sp->acked = old_acked;
        sp->last_seq = old_last;
        sp->ngaps = ngaps_before;
        memcpy(sp->gaps, gaps_before, sizeof(gaps_before));
        return rc;
    }
    /* A sealed or empty last segment is done too: every seq it could hold is <= seq. */
    return drop_front(sp, sp->nseg, d);
}

uint64_t pw_spool_last_seq(const pw_spool_t *sp)
{
    return sp ? sp->last_seq : 0;
}

uint64_t pw_spool_acked_seq(const pw_spool_t *sp)
{
    return sp ? sp->acked : 0;
}

uint64_t pw_spool_bytes(const pw_spool_t *sp)
{
    return sp ? sp->bytes : 0;
}

size_t pw_spool_gaps(const pw_spool_t *sp, pw_spool_gap_t *out, size_t max)
{
    if (sp == NULL)
        return 0;
    for (size_t i = 0; i < sp->ngaps && i < max; i++)
        out[i] = sp->gaps[i];
    return sp->ngaps;
}

/* ------------------------------------------------------------------------------------------ */
/* Iterator                                                                                   */
/* ------------------------------------------------------------------------------------------ */

int pw_spool_iter_open(pw_spool_t *sp, uint64_t from_seq, pw_spool_iter_t **out)
{
    if (sp == NULL || out == NULL)
        return PW_EINVAL;
    pw_spool_iter_t *it = pw_calloc(1, sizeof(*it));
    if (it == NULL)
        return PW_ENOMEM;
    it->sp = sp;
    it->next_seq = from_seq;
    reader_init(&it->rd);
    it->next_it = sp->iters;
    sp->iters = it;
    *out = it;
    return 0;
}

void pw_spool_iter_close(pw_spool_iter_t *it)
{
    if (it == NULL)
        return;
    for (pw_spool_iter_t **pp = &it->sp->iters; *pp != NULL; pp = &(*pp)->next_it)
        if (*pp == it) {
            *pp = it->next_it;
            break;
        }
    reader_free(&it->rd);
    pw_free(it);
}

/* Points the iterator at segment idx (opening it). */
static int iter_enter(pw_spool_iter_t *it, size_t idx, pw_diag_t *d)
{
    pw_spool_t *sp = it->sp;
    char path[PATH_MAX_LEN];
    seg_path(sp, sp->segs[idx].first_seq, path, sizeof(path));
    int fd = pw__spool_os_open(path, 0, 0);
    if (fd < 0) {
        it->cur_first = 0;
        return pw_diag_set(d, pw__spool_os_err(), 0, 0, "segment", "cannot open %s", path);
    }
    reader_reset(&it->rd, fd);
    it->cur_first = sp->segs[idx].first_seq;
    it->off = SEG_HDR;
    return 0;
}

int pw_spool_iter_next(pw_spool_iter_t *it, pw_spool_rec_t *rec, pw_diag_t *d)
{
    if (it == NULL || rec == NULL)
        return PW_EINVAL;
    pw_spool_t *sp = it->sp;
    for (;;) {
        uint64_t lo = max64(it->next_seq, eff_start(sp) + 1);
        size_t idx = 0;
        seg_t *s = it->cur_first ? find_seg(sp, it->cur_first, &idx) : NULL;
        if (s == NULL) {
            for (idx = 0; idx < sp->nseg; idx++)
                if (sp->segs[idx].nrec > 0 && sp->segs[idx].last_seq >= lo)
                    break;
            if (idx == sp->nseg)
                return 0;
            int rc = iter_enter(it, idx, d);
            if (rc != 0)
                return rc;
            s = &sp->segs[idx];
        }
        if (it->off >= s->size || s->last_seq < lo) {
            if (idx + 1 >= sp->nseg)
                return 0; /* stay here: the active segment may grow */
            int rc = iter_enter(it, idx + 1, d);
            if (rc != 0)
                return rc;
            continue;
        }
        const uint8_t *h;
        int rc = reader_get(&it->rd, it->off, REC_HDR, s->size, &h);
        uint32_t len = 0;
        if (rc == 0) {
            uint32_t lm = get32(h);
            len = lm & 0xFFFFFFu;
            if ((lm >> 24) != REC_MAGIC)
                rc = PW_ECORRUPT;
            else
                rc = reader_get(&it->rd, it->off, REC_HDR + len, s->size, &h);
        }
        if (rc == 0 && get32(h + 4) != rec_crc(h, h + REC_HDR, len))
            rc = PW_ECORRUPT;
        if (rc != 0) {
            char path[PATH_MAX_LEN];
            seg_path(sp, s->first_seq, path, sizeof(path));
            uint64_t off = it->off;
            it->off = s->size; /* skip the rest of this segment */
            if (rc == PW_ETRUNCATED)
                rc = PW_ECORRUPT; /* the file shrank under us */
            return pw_diag_set(d, rc, 0, off, "segment", "%s at offset %llu: %s", path,
                               (unsigned long long)off, pw_strerror(rc));
        }
        uint64_t seq = get64(h + 8);
        it->off += REC_HDR + len;
        if (seq < lo)
            continue;
        rec->seq = seq;
        rec->flags = get32(h + 16);
        rec->payload = h + REC_HDR;
        rec->len = len;
        rec->gap_before = 0;
        rec->gap_cause = 0;
        for (size_t i = 0; i < sp->ngaps; i++)
            if (sp->gaps[i].next_seq == seq) {
                rec->gap_before += sp->gaps[i].records;
                rec->gap_cause = sp->gaps[i].cause;
            }
        it->next_seq = seq + 1;
        return 1;
    }
}
