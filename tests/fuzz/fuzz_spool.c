/* fuzz_spool.c: the spool's reader of files found on disk after a crash or tampering.
 *
 * The input (after one control byte) becomes a file in a scratch spool directory, then the
 * spool is opened (scan, CRC check, repair), every record is read back, one record is
 * appended and one ack written, as the agent does after a restart. Control byte:
 *   bit 0: 0 = the input is segment spool-1, 1 = the input is the state file (with a valid
 *          segment 1 beside it);
 *   bit 1: a valid segment starting at seq 1000 follows, so segment 1 is not the last one
 *          (corruption path instead of torn-tail path).
 * Must never crash, leak, or return a record whose CRC failed. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void clean_dir(void)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    char p[512];
    while (dp && (de = readdir(dp)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (dp)
        closedir(dp);
}

static void remove_dir(void)
{
    clean_dir();
    rmdir(dir);
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (n > 0 && fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

/* A valid segment with records first..first+2, payload "seg!" (layout from spool.h). */
static void write_valid_seg(uint64_t first)
{
    uint8_t buf[16 + 3 * 24];
    memcpy(buf, "PWSPOOL1", 8);
    for (int i = 0; i < 8; i++)
        buf[8 + i] = (uint8_t)(first >> (8 * i));
    for (int k = 0; k < 3; k++) {
        uint8_t *r = buf + 16 + 24 * k;
        memset(r, 0, 24);
        r[0] = 4;
        r[3] = 0xA5;
        uint64_t seq = first + (uint64_t)k;
        for (int i = 0; i < 8; i++)
            r[8 + i] = (uint8_t)(seq >> (8 * i));
        r[16] = k == 0; /* keyframe */
        memcpy(r + 20, "seg!", 4);
        uLong c = crc32(0, r, 4);
        c = crc32(c, r + 8, 16);
        for (int i = 0; i < 4; i++)
            r[4 + i] = (uint8_t)(c >> (8 * i));
    }
    char name[64];
    snprintf(name, sizeof(name), "spool-%020llu.seg", (unsigned long long)first);
    write_file(name, buf, sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    if (dir[0] == '\0') {
        strcpy(dir, "/tmp/pw_fuzz_spool_XXXXXX");
        if (mkdtemp(dir) == NULL)
            abort();
        atexit(remove_dir);
    }
    uint8_t ctl = data[0];
    data++;
    size--;
    if (ctl & 1) {
        write_file("state", data, size);
        write_valid_seg(1);
    } else {
        write_file("spool-00000000000000000001.seg", data, size);
    }
    if (ctl & 2)
        write_valid_seg(1000);

    pw_spool_opts_t o = {
        .max_bytes = 64 * 1024, .segment_bytes = 4096, .fsync = PW_SPOOL_FSYNC_NEVER};
    pw_spool_t *sp = NULL;
    pw_spool_report_t rep;
    if (pw_spool_open(dir, &o, &sp, &rep, NULL) == 0) {
        pw_spool_iter_t *it;
        if (pw_spool_iter_open(sp, 0, &it) == 0) {
            pw_spool_rec_t r;
            uint64_t prev = 0;
            int rc, n = 0;
            while ((rc = pw_spool_iter_next(it, &r, NULL)) != 0 && n++ < 100000) {
                if (rc < 0)
                    continue;
                if (r.seq <= prev) /* seqs come out strictly increasing */
                    abort();
                prev = r.seq;
                volatile uint8_t sink = 0;
                for (size_t i = 0; i < r.len; i++)
                    sink ^= r.payload[i];
                (void)sink;
            }
            pw_spool_iter_close(it);
        }
        uint64_t last = pw_spool_last_seq(sp);
        if (last < UINT64_MAX - 1) {
            pw_diag_t d;
            if (pw_spool_append(sp, last + 1, PW_SPOOL_KEYFRAME, "new", 3, &d) != 0) {
                /* an opened spool always takes the next seq (64 KiB is enough) */
                fprintf(stderr, "fuzz_spool: append after open failed: %s\n", d.msg);
                abort();
            }
            (void)pw_spool_ack(sp, last, NULL);
        }
        pw_spool_close(sp);
    }
    clean_dir();
    return 0;
}
