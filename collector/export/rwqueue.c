/* rwqueue.c: remote write's disk queue (rwqueue.h). */
#include "rwqueue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc.h"

/* Windows (mingw-w64's msvcrt): mkdir takes no mode, files open in text mode unless asked, and
 * handles are not inherited by the collector's children anyway (it starts none). */
#ifdef _WIN32
#include <direct.h>
#define RWQ_MKDIR(p) _mkdir(p)
#define RWQ_O_EXTRA  O_BINARY
#else
#define RWQ_MKDIR(p) mkdir((p), 0700)
#define RWQ_O_EXTRA  O_CLOEXEC
#endif

#define HDR     32
#define MAGIC   "PWRQ"
#define VERSION 1u
#define SUFFIX  ".rwq"
#define TMP_PFX "tmp-"
#define DEF_MAX (UINT64_C(1) << 30)

typedef struct ent_s {
    uint64_t seq, bytes, series;
} ent_t;

struct pw_rwqueue_s {
    char *dir;
    uint64_t max_bytes, bytes, series, next_seq;
    ent_t *e; /* a ring: e[(head + i) % cap], oldest first */
    size_t head, n, cap;
};

/* The file header, in this machine's byte order (the directory is this collector's own). */
typedef struct hdr_s {
    char magic[4];
    uint32_t version;
    uint64_t series;
    uint64_t len;
    uint32_t crc; /* CRC-32 (zlib) of the body */
    uint32_t pad;
} hdr_t;

static void path_of(const pw_rwqueue_t *q, uint64_t seq, const char *pfx, char *out, size_t size)
{
    snprintf(out, size, "%s/%s%016llx" SUFFIX, q->dir, pfx, (unsigned long long)seq);
}

static int grow(pw_rwqueue_t *q)
{
    if (q->n < q->cap)
        return 0;
    size_t cap = q->cap ? q->cap * 2 : 64;
    ent_t *e = pw_malloc(cap * sizeof(*e));
    if (e == NULL)
        return PW_ENOMEM;
    for (size_t i = 0; i < q->n; i++)
        e[i] = q->e[(q->head + i) % q->cap];
    pw_free(q->e);
    q->e = e;
    q->head = 0;
    q->cap = cap;
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const ent_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The series a file's header claims; 0 when the header cannot be read or does not check. */
static uint64_t header_series(const char *path)
{
    hdr_t h;
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(&h, 1, sizeof(h), f) : 0;
    if (f)
        fclose(f);
    if (n != sizeof(h) || memcmp(h.magic, MAGIC, 4) != 0 || h.version != VERSION)
        return 0;
    return h.series;
}

int pw_rwqueue_open(const char *dir, uint64_t max_bytes, pw_rwqueue_t **out, pw_diag_t *d)
{
    if (dir == NULL || dir[0] == '\0' || out == NULL)
        return PW_EINVAL;
    if (RWQ_MKDIR(dir) != 0 && errno != EEXIST)
        return pw_diag_set(d, PW_EIO, 0, 0, "queue_dir", "remote_write.queue_dir: %s: %s", dir,
                           strerror(errno));
    DIR *dh = opendir(dir);
    if (dh == NULL)
        return pw_diag_set(d, PW_EIO, 0, 0, "queue_dir", "remote_write.queue_dir: %s: %s", dir,
                           strerror(errno));
    pw_rwqueue_t *q = pw_calloc(1, sizeof(*q));
    if (q == NULL || (q->dir = pw_strdup(dir)) == NULL) {
        closedir(dh);
        pw_free(q);
        return PW_ENOMEM;
    }
    q->max_bytes = max_bytes ? max_bytes : DEF_MAX;
    q->next_seq = 1;
    int r = 0;
    struct dirent *de;
    while (r == 0 && (de = readdir(dh)) != NULL) {
        char path[4096];
        size_t nl = strlen(de->d_name);
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (strncmp(de->d_name, TMP_PFX, strlen(TMP_PFX)) == 0) {
            unlink(path); /* an interrupted write */
            continue;
        }
        char *end;
        if (nl != 16 + strlen(SUFFIX) || strcmp(de->d_name + 16, SUFFIX) != 0)
            continue;
        unsigned long long seq = strtoull(de->d_name, &end, 16);
        struct stat st;
        if (end != de->d_name + 16 || stat(path, &st) != 0)
            continue;
        if ((r = grow(q)) != 0)
            break;
        ent_t *e = &q->e[q->n++];
        e->seq = seq;
        e->bytes = (uint64_t)st.st_size;
        e->series = header_series(path);
        q->bytes += e->bytes;
        q->series += e->series;
        if (seq >= q->next_seq)
            q->next_seq = seq + 1;
    }
    closedir(dh);
    if (r != 0) {
        pw_rwqueue_close(q);
        return r;
    }
    if (q->n > 1)
        qsort(q->e, q->n, sizeof(*q->e), by_seq);
    *out = q;
    return 0;
}

static void drop_head(pw_rwqueue_t *q)
{
    ent_t *e = &q->e[q->head];
    q->bytes -= e->bytes;
    q->series -= e->series;
    q->head = (q->head + 1) % q->cap;
    q->n--;
}

int pw_rwqueue_push(pw_rwqueue_t *q, uint64_t seq, const uint8_t *body, size_t len, size_t series,
                    uint64_t *dropped_series)
{
    if (dropped_series)
        *dropped_series = 0;
    if (q == NULL || (body == NULL && len > 0))
        return PW_EINVAL;
    if (q->n > 0 && seq <= q->e[(q->head + q->n - 1) % q->cap].seq)
        for (size_t i = 0; i < q->n; i++)
            if (q->e[(q->head + i) % q->cap].seq == seq)
                return PW_EINVAL;
    uint64_t need = (uint64_t)len + HDR;
    if (need > q->max_bytes)
        return PW_ETOOBIG;
    int r = grow(q);
    if (r != 0)
        return r;
    while (q->n > 0 && q->bytes + need > q->max_bytes) {
        char p[4096];
        path_of(q, q->e[q->head].seq, "", p, sizeof(p));
        unlink(p);
        if (dropped_series)
            *dropped_series += q->e[q->head].series;
        drop_head(q);
    }
    hdr_t h = {.version = VERSION,
               .series = series,
               .len = len,
               .crc = (uint32_t)crc32(0L, body, (uInt)len)};
    memcpy(h.magic, MAGIC, 4);
    char tmp[4096], dst[4096];
    path_of(q, seq, TMP_PFX, tmp, sizeof(tmp));
    path_of(q, seq, "", dst, sizeof(dst));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | RWQ_O_EXTRA, 0600);
    if (fd < 0)
        return PW_EIO;
    int ok = write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
             (len == 0 || write(fd, body, len) == (ssize_t)len);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, dst) != 0) {
        unlink(tmp);
        return PW_EIO;
    }
    /* Usually the newest; an older seq (requests written back from memory at shutdown) goes
     * to its place so that the files leave in seq order. */
    size_t at = q->n;
    while (at > 0 && q->e[(q->head + at - 1) % q->cap].seq > seq) {
        q->e[(q->head + at) % q->cap] = q->e[(q->head + at - 1) % q->cap];
        at--;
    }
    ent_t *e = &q->e[(q->head + at) % q->cap];
    e->seq = seq;
    e->bytes = need;
    e->series = series;
    q->n++;
    q->bytes += need;
    q->series += series;
    if (seq >= q->next_seq)
        q->next_seq = seq + 1;
    return 0;
}

int pw_rwqueue_pop(pw_rwqueue_t *q, uint64_t *seq, uint8_t **body, size_t *len, size_t *series)
{
    if (q == NULL || body == NULL || len == NULL || series == NULL)
        return PW_EINVAL;
    *body = NULL;
    *len = 0;
    *series = 0;
    if (q->n == 0)
        return 0;
    ent_t e = q->e[q->head];
    char p[4096];
    path_of(q, e.seq, "", p, sizeof(p));
    if (seq)
        *seq = e.seq;
    FILE *f = fopen(p, "rb");
    if (f == NULL) {
        if (errno != ENOENT)
            return PW_EIO;
        drop_head(q); /* removed by someone else: nothing to send */
        *series = (size_t)e.series;
        return PW_ECORRUPT;
    }
    hdr_t h;
    uint8_t *b = NULL;
    int r = PW_ECORRUPT;
    uint64_t blen = 0;
    if (fread(&h, 1, sizeof(h), f) == sizeof(h) && memcmp(h.magic, MAGIC, 4) == 0 &&
        h.version == VERSION && (blen = h.len) == e.bytes - HDR) {
        b = pw_malloc(blen ? blen : 1);
        if (b == NULL) {
            fclose(f);
            return PW_ENOMEM;
        }
        if (fread(b, 1, blen, f) == blen && (uint32_t)crc32(0L, b, (uInt)blen) == h.crc)
            r = 1;
    }
    fclose(f);
    unlink(p);
    drop_head(q);
    *series = (size_t)e.series;
    if (r != 1) {
        pw_free(b);
        return r;
    }
    *body = b;
    *len = (size_t)blen;
    return 1;
}

size_t pw_rwqueue_count(const pw_rwqueue_t *q)
{
    return q ? q->n : 0;
}

uint64_t pw_rwqueue_bytes(const pw_rwqueue_t *q)
{
    return q ? q->bytes : 0;
}

uint64_t pw_rwqueue_series(const pw_rwqueue_t *q)
{
    return q ? q->series : 0;
}

uint64_t pw_rwqueue_next_seq(const pw_rwqueue_t *q)
{
    return q ? q->next_seq : 1;
}

void pw_rwqueue_close(pw_rwqueue_t *q)
{
    if (q == NULL)
        return;
    pw_free(q->e);
    pw_free(q->dir);
    pw_free(q);
}
