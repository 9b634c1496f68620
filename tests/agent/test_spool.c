/* test_spool.c: the agent's durable spool (agent/spool.h).
 *
 * Sizes used throughout, from the format in spool.h: segment header 16 bytes, record header
 * 20 bytes. With segment_bytes = 4096 and 1000-byte payloads, a record takes 1020 bytes and a
 * segment holds 4 of them exactly (16 + 4 * 1020 = 4096); the 5th rolls to a new segment.
 * Expected values below are derived from that by hand, never from the spool's own output.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "test_util.h"

#include "spool.h"

#define PAY    1000
#define REC    (20 + PAY)
#define SEGSZ  4096
#define SEGHDR 16

typedef struct {
    char dir[64];
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof(*fx));
    strcpy(fx->dir, "/tmp/pw_spool_XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    DIR *dp = opendir(fx->dir);
    struct dirent *de;
    char p[512];
    while (dp && (de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
        unlink(p);
    }
    if (dp)
        closedir(dp);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static const char *fpath(const fx_t *fx, const char *name)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", fx->dir, name);
    return p;
}

static int exists(const fx_t *fx, const char *name)
{
    struct stat st;
    return stat(fpath(fx, name), &st) == 0;
}

static long fsize(const fx_t *fx, const char *name)
{
    struct stat st;
    if (stat(fpath(fx, name), &st) != 0)
        return -1;
    return (long)st.st_size;
}

static void flip_byte(const fx_t *fx, const char *name, long off)
{
    int fd = open(fpath(fx, name), O_RDWR);
    assert_true(fd >= 0);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x40;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static void cut_file(const fx_t *fx, const char *name, long size)
{
    assert_int_equal(truncate(fpath(fx, name), size), 0);
}

static void payload_for(uint64_t seq, uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seq * 31 + i);
}

/* Policy NEVER: no preallocation, the files hold exactly their records. INTERVAL (with an
 * interval longer than any test): segments are preallocated, records not synced one by one
 * (the tests check layout and recovery, not durability). */
static pw_spool_t *open_policy(const fx_t *fx, uint64_t max_bytes, pw_spool_fsync_t policy,
                               pw_spool_report_t *rep)
{
    pw_spool_opts_t o = {.max_bytes = max_bytes,
                         .segment_bytes = SEGSZ,
                         .fsync = policy,
                         .fsync_interval_ms = 3600000};
    pw_spool_t *sp = NULL;
    pw_diag_t d;
    int rc = pw_spool_open(fx->dir, &o, &sp, rep, &d);
    if (rc != 0)
        fail_msg("open: %s (%s)", pw_strerror(rc), d.msg);
    return sp;
}

static pw_spool_t *open_spool(const fx_t *fx, uint64_t max_bytes, pw_spool_report_t *rep)
{
    return open_policy(fx, max_bytes, PW_SPOOL_FSYNC_NEVER, rep);
}

static pw_spool_t *open_prealloc(const fx_t *fx, uint64_t max_bytes, pw_spool_report_t *rep)
{
    return open_policy(fx, max_bytes, PW_SPOOL_FSYNC_INTERVAL, rep);
}

/* Appends seqs [from, to], keyframes at 1, 1 + key_every, ... (key_every 0: none, 1: all). */
static void append_range(pw_spool_t *sp, uint64_t from, uint64_t to, uint64_t key_every)
{
    uint8_t buf[PAY];
    for (uint64_t s = from; s <= to; s++) {
        payload_for(s, buf, PAY);
        uint32_t fl = key_every && s % key_every == 1 % key_every ? PW_SPOOL_KEYFRAME : 0;
        pw_diag_t d;
        int rc = pw_spool_append(sp, s, fl, buf, PAY, &d);
        if (rc != 0)
            fail_msg("append %llu: %s (%s)", (unsigned long long)s, pw_strerror(rc), d.msg);
    }
}

/* Iterates from `from` and checks that exactly seqs want[0..n) come out with intact payloads.
 * Returns the gap_before of the first record. */
static uint64_t expect_seqs(pw_spool_t *sp, uint64_t from, const uint64_t *want, size_t n)
{
    pw_spool_iter_t *it;
    assert_int_equal(pw_spool_iter_open(sp, from, &it), 0);
    pw_spool_rec_t r;
    uint8_t buf[PAY];
    uint64_t gap0 = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
        assert_int_equal(r.seq, want[i]);
        assert_int_equal(r.len, PAY);
        payload_for(r.seq, buf, PAY);
        assert_memory_equal(r.payload, buf, PAY);
        if (i == 0)
            gap0 = r.gap_before;
        else
            assert_int_equal(r.gap_before, 0);
    }
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0);
    pw_spool_iter_close(it);
    return gap0;
}

static void seq_list(uint64_t *out, uint64_t from, uint64_t to)
{
    for (uint64_t s = from; s <= to; s++)
        *out++ = s;
}

/* The spool holds one pending gap: seqs first..last (records of them) carried by `next`,
 * of cause `cause`. */
static void expect_one_gap(pw_spool_t *sp, uint64_t first, uint64_t last, uint64_t records,
                           uint64_t next, uint32_t cause)
{
    pw_spool_gap_t g[2];
    assert_int_equal(pw_spool_gaps(sp, g, 2), 1);
    assert_int_equal(g[0].first_seq, first);
    assert_int_equal(g[0].last_seq, last);
    assert_int_equal(g[0].records, records);
    assert_int_equal(g[0].next_seq, next);
    assert_int_equal(g[0].cause, cause);
}

/* Iterating from the start gives exactly seqs want[0..n), record `carrier` with gap_before
 * `gap` and gap_cause `cause`, every other one with none. */
static void expect_carrier(pw_spool_t *sp, const uint64_t *want, size_t n, uint64_t carrier,
                           uint64_t gap, uint32_t cause)
{
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
        assert_int_equal(r.seq, want[i]);
        assert_int_equal(r.gap_before, r.seq == carrier ? gap : 0);
        assert_int_equal(r.gap_cause, r.seq == carrier ? cause : 0);
    }
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0);
    pw_spool_iter_close(it);
}

/* ------------------------------------------------------------------------------------------ */

static void test_round_trip_segments(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0);
    /* [1-4] 4096, [5-8] 4096, [9-10] 16 + 2040 */
    assert_int_equal(pw_spool_bytes(sp), 4096 + 4096 + 2056);
    assert_int_equal(pw_spool_last_seq(sp), 10);
    assert_int_equal(fsize(fx, "spool-00000000000000000001.seg"), 4096);
    assert_int_equal(fsize(fx, "spool-00000000000000000005.seg"), 4096);
    assert_int_equal(fsize(fx, "spool-00000000000000000009.seg"), 2056);
    uint64_t want[10];
    seq_list(want, 1, 10);
    assert_int_equal(expect_seqs(sp, 0, want, 10), 0);
    assert_int_equal(expect_seqs(sp, 7, want + 6, 4), 0);

    /* Flags and an empty payload come back as given; record header bytes checked by hand. */
    assert_int_equal(pw_spool_append(sp, 11, PW_SPOOL_KEYFRAME | 0x80, NULL, 0, NULL), 0);
    assert_int_equal(fsize(fx, "spool-00000000000000000009.seg"), 2056 + 20);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 11, &it), 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 11);
    assert_int_equal(r.flags, 0x81);
    assert_int_equal(r.len, 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0);
    /* Appends after the iterator reached the end are seen by it. */
    append_range(sp, 12, 12, 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 12);
    pw_spool_iter_close(it);
    pw_spool_close(sp);

    size_t n;
    char *raw = pw_test_read_file(fpath(fx, "spool-00000000000000000001.seg"), &n);
    const unsigned char *u = (const unsigned char *)raw;
    assert_memory_equal(raw, "PWSPOOL1", 8);
    assert_int_equal(u[8], 1); /* first seq, little-endian */
    /* first record: len 1000 = 0x3E8 with magic 0xA5 in the top byte, LE; seq 1 at 16+8 */
    assert_int_equal(u[16], 0xE8);
    assert_int_equal(u[17], 0x03);
    assert_int_equal(u[18], 0x00);
    assert_int_equal(u[19], 0xA5);
    assert_int_equal(u[24], 1);
    uLong c = crc32(0, u + 16, 4);
    c = crc32(c, u + 24, 12);
    c = crc32(c, u + 36, PAY);
    assert_int_equal((uint32_t)c, (uint32_t)u[20] | (uint32_t)u[21] << 8 | (uint32_t)u[22] << 16 |
                                      (uint32_t)u[23] << 24);
    free(raw);
}

static void test_ack_trims_and_survives_reopen(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0);
    assert_int_equal(pw_spool_ack(sp, 6, NULL), 0);
    /* [1-4] all acked: deleted; [5-8] keeps 7 and 8 */
    assert_false(exists(fx, "spool-00000000000000000001.seg"));
    assert_true(exists(fx, "spool-00000000000000000005.seg"));
    assert_int_equal(pw_spool_bytes(sp), 4096 + 2056);
    assert_int_equal(pw_spool_acked_seq(sp), 6);
    assert_int_equal(pw_spool_ack(sp, 3, NULL), 0); /* older ack: ignored */
    assert_int_equal(pw_spool_acked_seq(sp), 6);
    pw_diag_t d;
    assert_int_equal(pw_spool_ack(sp, 11, &d), PW_ESEQ);
    pw_spool_close(sp);

    pw_spool_report_t rep;
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.segments, 2);
    assert_int_equal(rep.records, 6); /* 5..10 on disk, 5 and 6 acked */
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.quarantined, 0);
    assert_int_equal(pw_spool_acked_seq(sp), 6);
    assert_int_equal(pw_spool_last_seq(sp), 10);
    uint64_t want[] = {7, 8, 9, 10};
    expect_seqs(sp, 0, want, 4); /* restart resends exactly the unacked records */

    /* Everything acked: no segment left, yet the seq continues after a reopen. */
    assert_int_equal(pw_spool_ack(sp, 10, NULL), 0);
    assert_int_equal(pw_spool_bytes(sp), 0);
    assert_false(exists(fx, "spool-00000000000000000005.seg"));
    assert_false(exists(fx, "spool-00000000000000000009.seg"));
    pw_spool_close(sp);
    sp = open_spool(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_last_seq(sp), 10);
    assert_int_equal(pw_spool_append(sp, 10, 0, "x", 1, NULL), PW_ESEQ);
    append_range(sp, 11, 11, 0);
    assert_true(exists(fx, "spool-00000000000000000011.seg"));
    uint64_t want2[] = {11};
    expect_seqs(sp, 0, want2, 1);
    pw_spool_close(sp);
}

static void test_torn_tail_truncated(void **state)
{
    fx_t *fx = *state;
    const char *last = "spool-00000000000000000009.seg";
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0);
    pw_spool_close(sp);

    /* A write cut 3 bytes short: record 10 (at 16 + 1020 = 1036) is incomplete. */
    cut_file(fx, last, 2056 - 3);
    pw_spool_report_t rep;
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 2053 - 1036);
    assert_int_equal(rep.corrupt_segments, 0);
    assert_int_equal(rep.first_problem.code, PW_ETRUNCATED);
    assert_int_equal(rep.first_problem.offset, 1036);
    assert_int_equal(rep.records, 9);
    assert_int_equal(fsize(fx, last), 1036);
    assert_int_equal(pw_spool_last_seq(sp), 9);
    uint64_t want[10];
    seq_list(want, 1, 10);
    expect_seqs(sp, 0, want, 9);
    /* Appending continues at the cut. */
    append_range(sp, 10, 10, 0);
    assert_int_equal(fsize(fx, last), 2056);
    expect_seqs(sp, 0, want, 10);
    pw_spool_close(sp);

    /* A flipped byte in the last record's payload: CRC fails at the tail: cut. */
    flip_byte(fx, last, 2056 - 1);
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 1020);
    assert_int_equal(rep.corrupt_segments, 0);
    assert_int_equal(fsize(fx, last), 1036);
    expect_seqs(sp, 0, want, 9);
    pw_spool_gap_t g;
    assert_int_equal(pw_spool_gaps(sp, &g, 1), 0);
    pw_spool_close(sp);

    /* A flipped length byte of the last record (now 9 at 16): it claims to run past EOF. */
    flip_byte(fx, last, 16 + 1);
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 1020);
    assert_int_equal(fsize(fx, last), 16);
    expect_seqs(sp, 0, want, 8);
    pw_spool_close(sp);
}

static void test_corrupt_older_segment(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0);
    pw_spool_close(sp);

    /* Record 2 starts at 16 + 1020 = 1036; flip a payload byte. Records 2..4 are lost; the
     * segment stops at 1036 and the bytes after stay on disk. */
    flip_byte(fx, "spool-00000000000000000001.seg", 1036 + 20 + 5);
    pw_spool_report_t rep;
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.corrupt_segments, 1);
    assert_int_equal(rep.corrupt_bytes, 4096 - 1036);
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.first_problem.code, PW_ECORRUPT);
    assert_int_equal(rep.first_problem.offset, 1036);
    assert_non_null(strstr(rep.first_problem.msg, "spool-00000000000000000001.seg"));
    assert_int_equal(rep.records, 1 + 4 + 2);
    assert_int_equal(fsize(fx, "spool-00000000000000000001.seg"), 4096);
    expect_one_gap(sp, 2, 4, 3, 5, PW_SPOOL_GAP_CORRUPT);
    pw_spool_gap_t g[2];
    uint64_t want[] = {5, 6, 7, 8, 9, 10};
    expect_seqs(sp, 2, want, 6);
    uint64_t want_all[] = {1, 5, 6, 7, 8, 9, 10};
    expect_carrier(sp, want_all, 7, 5, 3, PW_SPOOL_GAP_CORRUPT);
    pw_spool_close(sp);

    /* Reopen: the same hole, recorded once. */
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(pw_spool_gaps(sp, g, 2), 1);
    assert_int_equal(g[0].records, 3);
    /* Ack past the carrier: the gap is told, the sealed segment goes. */
    assert_int_equal(pw_spool_ack(sp, 5, NULL), 0);
    assert_int_equal(pw_spool_gaps(sp, g, 2), 0);
    assert_false(exists(fx, "spool-00000000000000000001.seg"));
    pw_spool_close(sp);
}

/* The collector's own ack (above the trim point, which stays at a keyframe) survives a
 * reopen: a restarted agent knows what the collector holds (issue 15, item 2). */
static void test_stored_seq_persists(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 5); /* keyframes 1, 6 */
    assert_int_equal(pw_spool_ack(sp, 5, NULL), 0);
    assert_int_equal(pw_spool_note_stored(sp, 8), 0);
    assert_int_equal(pw_spool_note_stored(sp, 7), 0); /* lower: ignored */
    assert_int_equal(pw_spool_note_stored(sp, 11), PW_ESEQ);
    assert_int_equal(pw_spool_stored_seq(sp), 8);
    pw_spool_close(sp); /* writes it */
    sp = open_spool(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_acked_seq(sp), 5);
    assert_int_equal(pw_spool_stored_seq(sp), 8);
    uint64_t want[] = {6, 7, 8, 9, 10}; /* the records are kept from the keyframe on */
    expect_seqs(sp, 0, want, 5);
    pw_spool_close(sp);
}

/* An OLDER segment whose last record looks torn (cut short at the end of its file, or failing
 * its CRC with nothing after it) is not a torn write: only the last segment takes writes. It
 * is sealed as corrupt (bytes kept, not cut), the lost seq is a gap with its cause, and the
 * later segments are kept whole (without the is_last guard, such a tail would be cut). */
static void torn_older_segment(const fx_t *fx, int crc)
{
    const char *first = "spool-00000000000000000001.seg";
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -f %s/*", fx->dir);
    assert_int_equal(system(cmd), 0);
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0); /* [1-4] [5-8] [9-10] */
    pw_spool_close(sp);
    long size = crc ? 4096 : 4096 - 3;
    if (crc)
        flip_byte(fx, first, 4096 - 1); /* record 4 (at 3076) fails its CRC, nothing after */
    else
        cut_file(fx, first, size); /* record 4 cut short */
    pw_spool_report_t rep;
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.corrupt_segments, 1);
    assert_int_equal(rep.corrupt_bytes, (uint64_t)size - 3076);
    assert_int_equal(rep.first_problem.code, PW_ECORRUPT);
    assert_int_equal(rep.first_problem.offset, 3076);
    assert_int_equal(fsize(fx, first), size); /* kept as evidence */
    assert_int_equal(rep.records, 3 + 4 + 2);
    expect_one_gap(sp, 4, 4, 1, 5, PW_SPOOL_GAP_CORRUPT);
    /* 1..3, then 5..10, 5 carrying the gap of 1 with its cause */
    uint64_t want[] = {1, 2, 3, 5, 6, 7, 8, 9, 10};
    expect_carrier(sp, want, 9, 5, 1, PW_SPOOL_GAP_CORRUPT);
    append_range(sp, 11, 11, 0); /* appends go on in the last segment */
    assert_int_equal(pw_spool_last_seq(sp), 11);
    pw_spool_close(sp);
}

static void test_torn_older_segment_sealed(void **state)
{
    torn_older_segment(*state, 0);
    torn_older_segment(*state, 1);
}

/* The collector holds seqs up to 100, past this spool's last (10, with records 2..4 lost to
 * a corrupt record): skip_to makes 100 the acked and last seq, deletes every segment, forgets
 * the hole (the collector has those seqs) and survives a reopen; the next record is 101. */
static void test_skip_to_continues_after_the_collector(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 5);
    pw_spool_close(sp);
    flip_byte(fx, "spool-00000000000000000001.seg", 1036 + 20 + 5); /* record 2 */
    sp = open_spool(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_gaps(sp, NULL, 0), 1);
    assert_int_equal(pw_spool_last_seq(sp), 10);
    pw_spool_iter_t *it;
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    assert_int_equal(pw_spool_skip_to(sp, 100, NULL), 0);
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0); /* the old records are gone */
    assert_int_equal(pw_spool_last_seq(sp), 100);
    assert_int_equal(pw_spool_acked_seq(sp), 100);
    assert_int_equal(pw_spool_gaps(sp, NULL, 0), 0);
    assert_int_equal(pw_spool_bytes(sp), 0);
    assert_false(exists(fx, "spool-00000000000000000001.seg"));
    assert_false(exists(fx, "spool-00000000000000000005.seg"));
    assert_false(exists(fx, "spool-00000000000000000009.seg"));
    uint8_t buf[PAY];
    payload_for(100, buf, PAY);
    assert_int_equal(pw_spool_append(sp, 100, 0, buf, PAY, NULL), PW_ESEQ);
    append_range(sp, 101, 102, 0);
    uint64_t want[] = {101, 102};
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 101);
    assert_int_equal(r.gap_before, 0);
    pw_spool_iter_close(it);
    pw_spool_close(sp);

    /* Reopen: no hole between 10 and 101 (all acked), nothing below 101. */
    pw_spool_report_t rep;
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.segments, 1);
    assert_int_equal(rep.records, 2);
    assert_int_equal(pw_spool_last_seq(sp), 102);
    assert_int_equal(pw_spool_acked_seq(sp), 100);
    assert_int_equal(pw_spool_gaps(sp, NULL, 0), 0);
    assert_int_equal(expect_seqs(sp, 0, want, 2), 0);
    assert_true(exists(fx, "spool-00000000000000000101.seg"));
    /* At or below the last seq it is an ordinary ack. */
    assert_int_equal(pw_spool_skip_to(sp, 101, NULL), 0);
    assert_int_equal(pw_spool_acked_seq(sp), 101);
    assert_int_equal(pw_spool_last_seq(sp), 102);
    pw_spool_close(sp);
    sp = open_spool(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_last_seq(sp), 102);
    assert_int_equal(pw_spool_acked_seq(sp), 101);
    pw_spool_close(sp);
}

static void test_full_drops_oldest_and_reports_gap(void **state)
{
    fx_t *fx = *state;
    /* Room for 3 full segments; keyframes at 1, 6, 11, 16 (every 5). */
    pw_spool_t *sp = open_spool(fx, 3 * SEGSZ, NULL);
    append_range(sp, 1, 12, 5);
    assert_int_equal(pw_spool_bytes(sp), 3 * SEGSZ);
    pw_spool_gap_t g[4];
    assert_int_equal(pw_spool_gaps(sp, g, 4), 0);

    /* 13 needs a new segment (16 + 1020): [1-4] goes whole (4 records), then 5 is a delta
     * whose base is gone: skipped up to keyframe 6. Gap: 1..5, 5 records, told with 6. */
    append_range(sp, 13, 13, 5);
    assert_false(exists(fx, "spool-00000000000000000001.seg"));
    assert_true(exists(fx, "spool-00000000000000000005.seg"));
    assert_int_equal(pw_spool_bytes(sp), 2 * SEGSZ + SEGHDR + REC);
    assert_int_equal(pw_spool_gaps(sp, g, 4), 1);
    assert_int_equal(g[0].first_seq, 1);
    assert_int_equal(g[0].last_seq, 5);
    assert_int_equal(g[0].records, 5);
    assert_int_equal(g[0].next_seq, 6);
    assert_int_equal(g[0].cause, PW_SPOOL_GAP_FULL);
    uint64_t want[8];
    seq_list(want, 6, 13);
    assert_int_equal(expect_seqs(sp, 0, want, 8), 5);
    pw_spool_close(sp);

    /* The gap and the drop point are durable. */
    sp = open_spool(fx, 3 * SEGSZ, NULL);
    assert_int_equal(pw_spool_gaps(sp, g, 4), 1);
    assert_int_equal(g[0].records, 5);
    assert_int_equal(expect_seqs(sp, 0, want, 8), 5);

    /* Fill [13-16], then 17 drops [5-8] (6, 7, 8 unsent), skips 9 and 10 up to keyframe 11.
     * The first gap's carrier (6) is gone too: one merged gap 1..10, 5 + 5 records. */
    append_range(sp, 14, 17, 5);
    assert_false(exists(fx, "spool-00000000000000000005.seg"));
    assert_int_equal(pw_spool_gaps(sp, g, 4), 1);
    assert_int_equal(g[0].first_seq, 1);
    assert_int_equal(g[0].last_seq, 10);
    assert_int_equal(g[0].records, 10);
    assert_int_equal(g[0].next_seq, 11);
    uint64_t want2[7];
    seq_list(want2, 11, 17);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 11);
    assert_int_equal(r.flags, PW_SPOOL_KEYFRAME);
    assert_int_equal(r.gap_before, 10);
    pw_spool_iter_close(it);
    expect_seqs(sp, 0, want2, 7);

    /* The collector stores 11: the gap was told. */
    assert_int_equal(pw_spool_ack(sp, 11, NULL), 0);
    assert_int_equal(pw_spool_gaps(sp, g, 4), 0);
    pw_spool_close(sp);
    sp = open_spool(fx, 3 * SEGSZ, NULL);
    assert_int_equal(pw_spool_gaps(sp, g, 4), 0);
    expect_seqs(sp, 0, want2 + 1, 6);
    pw_spool_close(sp);
}

static void test_full_acked_records_not_counted(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 3 * SEGSZ, NULL);
    append_range(sp, 1, 12, 1); /* all keyframes */
    assert_int_equal(pw_spool_ack(sp, 2, NULL), 0);
    append_range(sp, 13, 13, 1);
    /* [1-4] dropped; 1 and 2 were acked: the gap is 3..4, told with 5 (a keyframe). */
    pw_spool_gap_t g;
    assert_int_equal(pw_spool_gaps(sp, &g, 1), 1);
    assert_int_equal(g.first_seq, 3);
    assert_int_equal(g.last_seq, 4);
    assert_int_equal(g.records, 2);
    assert_int_equal(g.next_seq, 5);
    pw_spool_close(sp);
}

static void test_full_without_keyframe(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 3 * SEGSZ, NULL);
    append_range(sp, 1, 12, 0); /* deltas only */
    append_range(sp, 13, 13, 0);
    /* [1-4] dropped, then no keyframe anywhere: 5..12 skipped as well, and their segments,
     * made only of skipped records, deleted. 13 carries the gap of 12 records. */
    pw_spool_gap_t g;
    assert_int_equal(pw_spool_gaps(sp, &g, 1), 1);
    assert_int_equal(g.first_seq, 1);
    assert_int_equal(g.last_seq, 12);
    assert_int_equal(g.records, 12);
    assert_int_equal(g.next_seq, 13);
    assert_false(exists(fx, "spool-00000000000000000005.seg"));
    assert_false(exists(fx, "spool-00000000000000000009.seg"));
    assert_int_equal(pw_spool_bytes(sp), SEGHDR + REC);
    uint64_t want[] = {13};
    assert_int_equal(expect_seqs(sp, 0, want, 1), 12);
    pw_spool_close(sp);
}

static void test_seq_and_size_checks(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 2 * SEGSZ, NULL);
    pw_diag_t d;
    assert_int_equal(pw_spool_append(sp, 0, 0, "a", 1, &d), PW_ESEQ);
    assert_int_equal(pw_spool_append(sp, 5, 0, "a", 1, NULL), 0);
    assert_int_equal(pw_spool_append(sp, 5, 0, "b", 1, &d), PW_ESEQ);
    assert_int_equal(d.code, PW_ESEQ);
    assert_int_equal(pw_spool_append(sp, 4, 0, "b", 1, NULL), PW_ESEQ);
    assert_int_equal(pw_spool_last_seq(sp), 5);
    /* Largest record that fits a 8192-byte spool: 8192 - 16 - 20 = 8156 bytes. */
    uint8_t *big = calloc(1, 8157);
    assert_int_equal(pw_spool_append(sp, 6, 0, big, 8157, NULL), PW_ESPOOLFULL);
    assert_int_equal(pw_spool_append(sp, 6, 0, big, 8156, NULL), 0);
    assert_int_equal(pw_spool_bytes(sp), 8192);
    free(big);
    /* Checked before the payload is read. */
    assert_int_equal(pw_spool_append(sp, 7, 0, "x", (size_t)PW_SPOOL_MAX_RECORD + 1, NULL),
                     PW_ETOOBIG);
    pw_spool_close(sp);

    pw_spool_opts_t o = {.segment_bytes = 100};
    assert_int_equal(pw_spool_open(fx->dir, &o, &sp, NULL, &d), PW_EINVAL);
    o.segment_bytes = 8192;
    o.max_bytes = 4096;
    assert_int_equal(pw_spool_open(fx->dir, &o, &sp, NULL, &d), PW_EINVAL);
}

static void test_reopen_continues(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 3, 0);
    pw_spool_close(sp);
    sp = open_spool(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_last_seq(sp), 3);
    assert_int_equal(pw_spool_append(sp, 3, 0, "x", 1, NULL), PW_ESEQ);
    append_range(sp, 4, 4, 0);
    /* Same segment: 16 + 4 * 1020 */
    assert_int_equal(fsize(fx, "spool-00000000000000000001.seg"), 4096);
    uint64_t want[] = {1, 2, 3, 4};
    expect_seqs(sp, 0, want, 4);
    pw_spool_close(sp);
}

/* Writes a segment file by hand from the documented layout (independent of spool.c). */
static void write_seg(const fx_t *fx, uint64_t first, const uint64_t *seqs, size_t n)
{
    char name[64];
    snprintf(name, sizeof(name), "spool-%020llu.seg", (unsigned long long)first);
    FILE *f = fopen(fpath(fx, name), "wb");
    assert_non_null(f);
    unsigned char h[16] = "PWSPOOL1";
    for (int i = 0; i < 8; i++)
        h[8 + i] = (unsigned char)(first >> (8 * i));
    fwrite(h, 1, 16, f);
    for (size_t k = 0; k < n; k++) {
        unsigned char r[20 + 4] = {0};
        r[0] = 4;
        r[3] = 0xA5;
        for (int i = 0; i < 8; i++)
            r[8 + i] = (unsigned char)(seqs[k] >> (8 * i));
        memcpy(r + 20, "abcd", 4);
        uLong c = crc32(0, r, 4);
        c = crc32(c, r + 8, 16);
        for (int i = 0; i < 4; i++)
            r[4 + i] = (unsigned char)(c >> (8 * i));
        fwrite(r, 1, sizeof(r), f);
    }
    fclose(f);
}

static void write_text(const fx_t *fx, const char *name, const char *text)
{
    FILE *f = fopen(fpath(fx, name), "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_garbage_files(void **state)
{
    fx_t *fx = *state;
    uint64_t a[] = {1, 2, 3};
    uint64_t b[] = {3, 4}; /* starts at or below the previous segment's last seq */
    uint64_t c[] = {10, 11};
    write_seg(fx, 1, a, 3);
    write_seg(fx, 3, b, 2);
    write_seg(fx, 10, c, 2);
    write_text(fx, "notes.txt", "hello");
    write_text(fx, "spool-12.seg", "short name");
    write_text(fx, "spool-00000000000000000050.seg", "this is not a segment header");
    write_text(fx, "state", "garbage state");

    pw_spool_report_t rep;
    pw_spool_t *sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.ignored, 2);
    assert_int_equal(rep.quarantined, 2);
    assert_int_equal(rep.state_reset, 1);
    assert_int_equal(rep.segments, 2);
    assert_int_equal(rep.records, 5);
    assert_true(exists(fx, "spool-00000000000000000003.seg.bad"));
    assert_true(exists(fx, "spool-00000000000000000050.seg.bad"));
    assert_false(exists(fx, "spool-00000000000000000003.seg"));
    assert_true(exists(fx, "notes.txt"));
    assert_true(exists(fx, "state.bad"));
    assert_int_equal(pw_spool_last_seq(sp), 11);
    /* 4..9 were in no kept segment: a gap told with 10. */
    pw_spool_gap_t g;
    assert_int_equal(pw_spool_gaps(sp, &g, 1), 1);
    assert_int_equal(g.first_seq, 4);
    assert_int_equal(g.last_seq, 9);
    assert_int_equal(g.records, 6);
    assert_int_equal(g.next_seq, 10);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    uint64_t want[] = {1, 2, 3, 10, 11};
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
        assert_int_equal(r.seq, want[i]);
        assert_int_equal(r.gap_before, r.seq == 10 ? 6 : 0);
        assert_int_equal(r.len, 4);
        assert_memory_equal(r.payload, "abcd", 4);
    }
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0);
    pw_spool_iter_close(it);
    /* The hand-written last segment takes appends. */
    assert_int_equal(pw_spool_append(sp, 12, 0, "efgh", 4, NULL), 0);
    assert_int_equal(fsize(fx, "spool-00000000000000000010.seg"), 16 + 3 * 24);
    pw_spool_close(sp);

    /* A last segment with only part of its header (crash while creating it) is removed. */
    write_text(fx, "spool-00000000000000000020.seg", "PWSP");
    sp = open_spool(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 4);
    assert_false(exists(fx, "spool-00000000000000000020.seg"));
    assert_int_equal(pw_spool_last_seq(sp), 12);
    pw_spool_close(sp);
}

static void test_iterator_survives_trim(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    append_range(sp, 1, 10, 0);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 0, &it), 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 1);
    /* The segment being read is acked away: the iterator continues after the ack. */
    assert_int_equal(pw_spool_ack(sp, 6, NULL), 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 7);
    pw_spool_iter_close(it);
    pw_spool_close(sp);
}

static void test_lock_excludes_other_process(void **state)
{
    fx_t *fx = *state;
    pw_spool_t *sp = open_spool(fx, 1 << 20, NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pw_spool_t *other = NULL;
        int rc = pw_spool_open(fx->dir, NULL, &other, NULL, NULL);
        _exit(rc == PW_EAGAIN ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    pw_spool_close(sp);
}

static void test_default_fsync_policy(void **state)
{
    /* The default policy (fdatasync per append) works end to end, not only NEVER. */
    fx_t *fx = *state;
    pw_spool_t *sp = NULL;
    assert_int_equal(pw_spool_open(fx->dir, NULL, &sp, NULL, NULL), 0);
    append_range(sp, 1, 3, 1);
    assert_int_equal(pw_spool_sync(sp, NULL), 0);
    assert_int_equal(pw_spool_ack(sp, 1, NULL), 0);
    pw_spool_close(sp);
    pw_spool_opts_t o = {.fsync = PW_SPOOL_FSYNC_INTERVAL, .fsync_interval_ms = 1};
    assert_int_equal(pw_spool_open(fx->dir, &o, &sp, NULL, NULL), 0);
    append_range(sp, 4, 5, 1);
    uint64_t want[] = {2, 3, 4, 5};
    expect_seqs(sp, 0, want, 4);
    pw_spool_close(sp);
}

/* ---- preallocated segments (fsync policy other than NEVER) -------------------------------- */

static void append_len(pw_spool_t *sp, uint64_t seq, size_t len)
{
    uint8_t buf[4096];
    assert_true(len <= sizeof(buf));
    payload_for(seq, buf, len);
    pw_diag_t d;
    int rc = pw_spool_append(sp, seq, 0, buf, len, &d);
    if (rc != 0)
        fail_msg("append %llu: %s (%s)", (unsigned long long)seq, pw_strerror(rc), d.msg);
}

/* 1 when bytes [from, to) of the file are all zero. */
static int zero_range(const fx_t *fx, const char *name, long from, long to)
{
    size_t n;
    char *raw = pw_test_read_file(fpath(fx, name), &n);
    assert_non_null(raw);
    assert_true((size_t)to <= n);
    int z = 1;
    for (long i = from; i < to; i++)
        z &= raw[i] == 0;
    free(raw);
    return z;
}

/* Overwrites bytes [from, to) of a file with zeros (sectors of a write that never landed). */
static void zero_bytes(const fx_t *fx, const char *name, long from, long to)
{
    int fd = open(fpath(fx, name), O_RDWR);
    assert_true(fd >= 0);
    char z[4096] = {0};
    assert_true(to - from <= (long)sizeof(z));
    assert_int_equal(pwrite(fd, z, (size_t)(to - from), from), to - from);
    close(fd);
}

static void test_prealloc_zero_tail_is_end(void **state)
{
    fx_t *fx = *state;
    const char *first = "spool-00000000000000000001.seg";
    pw_spool_t *sp = open_prealloc(fx, 1 << 20, NULL);
    append_range(sp, 1, 2, 0);
    /* The file is the whole segment from its creation; the records take 16 + 2 * 1020. */
    assert_int_equal(fsize(fx, first), SEGSZ);
    assert_int_equal(pw_spool_bytes(sp), SEGSZ);
    pw_spool_close(sp);
    assert_true(zero_range(fx, first, 2056, SEGSZ));

    pw_spool_report_t rep;
    sp = open_prealloc(fx, 1 << 20, &rep);
    /* The zeros are the end of the data, not a torn record: nothing cut, nothing reported. */
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.corrupt_segments, 0);
    assert_int_equal(rep.first_problem.code, 0);
    assert_int_equal(rep.records, 2);
    assert_int_equal(rep.bytes, SEGSZ);
    assert_int_equal(fsize(fx, first), SEGSZ);
    assert_int_equal(pw_spool_last_seq(sp), 2);
    /* The restart appends right after record 2 (offset 2056), not at the end of the file. */
    append_range(sp, 3, 3, 0);
    assert_int_equal(fsize(fx, first), SEGSZ);
    size_t n;
    char *raw = pw_test_read_file(fpath(fx, first), &n);
    const unsigned char *u = (const unsigned char *)raw;
    assert_int_equal(u[2056 + 3], 0xA5); /* magic byte of the length word */
    assert_int_equal(u[2056 + 8], 3);    /* seq, little-endian */
    free(raw);
    uint64_t want[4];
    seq_list(want, 1, 4);
    expect_seqs(sp, 0, want, 3);
    /* 4 fills the segment exactly (16 + 4 * 1020 = 4096); 5 starts a new preallocated one. */
    append_range(sp, 4, 5, 0);
    assert_int_equal(fsize(fx, first), SEGSZ);
    assert_int_equal(fsize(fx, "spool-00000000000000000005.seg"), SEGSZ);
    assert_int_equal(pw_spool_bytes(sp), 2 * SEGSZ);
    pw_spool_close(sp);

    /* A zero tail shorter than a record header: records of 3 * 1020 + 1014 end at 4090. */
    sp = open_prealloc(fx, 1 << 20, NULL);
    assert_int_equal(pw_spool_ack(sp, 4, NULL), 0); /* segment 1 goes */
    append_len(sp, 6, PAY);                         /* still in segment 5: 16 + 2 * 1020 */
    append_len(sp, 7, PAY);
    append_len(sp, 8, 994);
    pw_spool_close(sp);
    const char *second = "spool-00000000000000000005.seg";
    assert_true(zero_range(fx, second, 4090, SEGSZ));
    sp = open_prealloc(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.first_problem.code, 0);
    assert_int_equal(rep.records, 4); /* 5 to 8 */
    assert_int_equal(fsize(fx, second), SEGSZ);
    /* 9 does not fit in the 6 bytes left: segment 5 is closed at 4090 (its tail given back,
     * here 6 bytes) and 9 starts a new preallocated segment. */
    append_len(sp, 9, 10);
    assert_int_equal(fsize(fx, second), 4090);
    assert_int_equal(fsize(fx, "spool-00000000000000000009.seg"), SEGSZ);
    assert_int_equal(pw_spool_bytes(sp), 4090 + SEGSZ);
    pw_spool_close(sp);
}

/* MANUAL (the agent's spool.fsync = ack): records the collector acked may never have been
 * synced here, so a host crash can take them from the segment while the state file (synced
 * at the ack) keeps the ack. The spool must open, keep its seqs above the ack and append on. */
static void test_manual_acked_tail_lost(void **state)
{
    fx_t *fx = *state;
    const char *first = "spool-00000000000000000001.seg";
    pw_spool_t *sp = open_policy(fx, 1 << 20, PW_SPOOL_FSYNC_MANUAL, NULL);
    append_range(sp, 1, 3, 0);
    assert_int_equal(pw_spool_ack(sp, 2, NULL), 0);
    pw_spool_close(sp);
    /* Records 2 (acked) and 3 (not) never reached the disk: zeros, as preallocated. */
    zero_bytes(fx, first, 1036, SEGSZ);
    pw_spool_report_t rep;
    sp = open_policy(fx, 1 << 20, PW_SPOOL_FSYNC_MANUAL, &rep);
    assert_int_equal(rep.first_problem.code, 0);
    assert_int_equal(pw_spool_acked_seq(sp), 2);
    assert_true(pw_spool_last_seq(sp) >= 2);
    uint64_t next = pw_spool_last_seq(sp) + 1;
    append_range(sp, next, next, 0);
    assert_int_equal(pw_spool_last_seq(sp), next);
    uint64_t want[1] = {next};
    expect_seqs(sp, 0, want, 1);
    pw_spool_close(sp);
}

static void test_prealloc_torn_record(void **state)
{
    fx_t *fx = *state;
    const char *first = "spool-00000000000000000001.seg";
    pw_spool_t *sp = open_prealloc(fx, 1 << 20, NULL);
    append_range(sp, 1, 3, 0);
    pw_spool_close(sp);

    /* Record 3 (at 16 + 2 * 1020 = 2056, 1020 bytes) was being written when the host died:
     * its header and the start of its payload reached the disk, the rest is still zeros. */
    zero_bytes(fx, first, 2056 + 20 + 500, 3076);
    pw_spool_report_t rep;
    sp = open_prealloc(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 1020);
    assert_int_equal(rep.corrupt_segments, 0);
    assert_int_equal(rep.first_problem.code, PW_ETRUNCATED);
    assert_int_equal(rep.first_problem.offset, 2056);
    assert_int_equal(rep.records, 2);
    assert_int_equal(pw_spool_last_seq(sp), 2);
    /* The torn bytes are erased, the preallocation stays. */
    assert_int_equal(fsize(fx, first), SEGSZ);
    assert_true(zero_range(fx, first, 2056, SEGSZ));
    pw_spool_gap_t g;
    assert_int_equal(pw_spool_gaps(sp, &g, 1), 0);
    /* Seq 3 again, shorter than the torn one: nothing of the old bytes may follow it. */
    append_len(sp, 3, 10);
    pw_spool_close(sp);
    sp = open_prealloc(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.corrupt_segments, 0);
    assert_int_equal(rep.records, 3);
    pw_spool_iter_t *it;
    pw_spool_rec_t r;
    assert_int_equal(pw_spool_iter_open(sp, 3, &it), 0);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 1);
    assert_int_equal(r.seq, 3);
    assert_int_equal(r.len, 10);
    uint8_t buf[10];
    payload_for(3, buf, 10);
    assert_memory_equal(r.payload, buf, 10);
    assert_int_equal(pw_spool_iter_next(it, &r, NULL), 0);
    pw_spool_iter_close(it);
    pw_spool_close(sp);

    /* Bytes that are not zeros after a bad record are not a torn write: the segment is sealed
     * there (corrupt) and the next append rolls. Record 4 goes at 2056 + 30 = 2086; a byte
     * after it, in the tail, is not zero. */
    sp = open_prealloc(fx, 1 << 20, NULL);
    append_len(sp, 4, 10);
    pw_spool_close(sp);
    flip_byte(fx, first, 2086 + 30 + 100);
    flip_byte(fx, first, 2086 + 25); /* record 4's payload: its CRC fails */
    sp = open_prealloc(fx, 1 << 20, &rep);
    assert_int_equal(rep.torn_bytes_cut, 0);
    assert_int_equal(rep.corrupt_segments, 1);
    assert_int_equal(rep.corrupt_bytes, SEGSZ - 2086);
    assert_int_equal(rep.first_problem.offset, 2086);
    pw_spool_close(sp);
}

static void test_prealloc_full_spool(void **state)
{
    fx_t *fx = *state;
    /* Room for 3 segments; keyframes at 1, 6, 11 (every 5). A preallocated segment counts
     * whole against max_bytes from its creation. */
    pw_spool_t *sp = open_prealloc(fx, 3 * SEGSZ, NULL);
    append_range(sp, 1, 9, 5);
    assert_int_equal(pw_spool_bytes(sp), 3 * SEGSZ); /* [1-4] [5-8] [9 + 3060 zero bytes] */
    append_range(sp, 10, 12, 5);                     /* inside segment 9: no drop */
    pw_spool_gap_t g[2];
    assert_int_equal(pw_spool_gaps(sp, g, 2), 0);
    /* 13 needs a new segment, preallocated: [1-4] goes whole, 5 is skipped up to keyframe 6.
     * Gap 1..5, 5 records, told with 6: the same as without preallocation. */
    append_range(sp, 13, 13, 5);
    assert_false(exists(fx, "spool-00000000000000000001.seg"));
    assert_int_equal(pw_spool_bytes(sp), 3 * SEGSZ);
    assert_int_equal(fsize(fx, "spool-00000000000000000013.seg"), SEGSZ);
    assert_int_equal(pw_spool_gaps(sp, g, 2), 1);
    assert_int_equal(g[0].first_seq, 1);
    assert_int_equal(g[0].last_seq, 5);
    assert_int_equal(g[0].records, 5);
    assert_int_equal(g[0].next_seq, 6);
    uint64_t want[8];
    seq_list(want, 6, 13);
    assert_int_equal(expect_seqs(sp, 0, want, 8), 5);
    pw_spool_close(sp);
    /* Reopen: the files on disk add up to what was counted. */
    pw_spool_report_t rep;
    sp = open_prealloc(fx, 3 * SEGSZ, &rep);
    assert_int_equal(rep.bytes, 3 * SEGSZ);
    assert_int_equal(rep.first_problem.code, 0);
    assert_int_equal(expect_seqs(sp, 0, want, 8), 5);
    pw_spool_close(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ack_trims_and_survives_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_older_segment_sealed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stored_seq_persists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_older_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skip_to_continues_after_the_collector, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_drops_oldest_and_reports_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_acked_records_not_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_without_keyframe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seq_and_size_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_continues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iterator_survives_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_excludes_other_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_fsync_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prealloc_zero_tail_is_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manual_acked_tail_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prealloc_torn_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prealloc_full_spool, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
