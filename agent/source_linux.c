/* source_linux.c: the "linux" source: /proc/slabinfo + /proc/meminfo (+ /proc/allocinfo and
 * /proc/vmallocinfo) under a configurable root (see source_linux.h for what each figure is). */
#include "source_linux.h"
#include "source_internal.h"
#include "alloc.h"
#include "buf.h"
#include "allocinfo_text.h"
#include "linux_rows.h"
#include "sample.h"
#include "slabinfo_text.h"
#include "vmallocinfo_text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define PATH_BYTES     4096
#define MAX_PROC_BYTES ((size_t)64 << 20) /* /proc/slabinfo is ~30 KB; 64 MiB is absurd */

typedef struct {
    char root[PATH_BYTES]; /* copy of cfg->proc_root ("" = real /) */
    pw_buf_t buf;          /* file contents, reused between samples */
    pw_slabinfo_doc_t doc; /* last parsed /proc/slabinfo */
    int have_doc;
    pw_source_linux_stats_t stats;
    int have_stats;
    uint64_t configured_limit;
    unsigned want;        /* X_* files to read besides slabinfo */
    unsigned must;        /* X_* files named in the spec: missing is an error */
    pw_linux_rows_t rows; /* tags of the sample being built */
} linux_priv_t;

/* The files read besides slabinfo (spec "linux:slab,allocinfo,vmallocinfo"). */
enum { X_ALLOCINFO = 1, X_VMALLOCINFO = 2 };

/* Facts read from /proc/meminfo, bytes; `have` bits say which lines were there. */
typedef struct {
    uint64_t mem_total, mem_available, slab, s_reclaimable, s_unreclaim, committed_as, commit_limit;
    unsigned have;
} meminfo_t;

enum {
    M_TOTAL = 1,
    M_AVAIL = 2,
    M_SLAB = 4,
    M_SRECL = 8,
    M_SUNRECL = 16,
    M_COMMIT = 32,
    M_LIMIT = 64
};

static int make_path(const linux_priv_t *priv, const char *rel, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "%s%s", priv->root, rel);
    return n < 0 || (size_t)n >= out_size ? PW_ERANGE : 0;
}

/* Reads a whole file into priv->buf (NUL-terminated, the NUL not counted in len). /proc
 * files report size 0, so read until EOF. Returns 0 or a negated errno / PW_ETOOBIG. */
static int read_file(pw_buf_t *b, const char *path)
{
    pw_buf_reset(b);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = 0;
    for (;;) {
        r = pw_buf_reserve(b, 65536);
        if (r != 0)
            break;
        ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            break;
        }
        if (n == 0)
            break;
        b->len += (size_t)n;
    }
    close(fd);
    if (r == 0)
        b->data[b->len] = '\0';
    return r;
}

static int file_error(pw_diag_t *d, int err, const char *path, const char *what)
{
    if (err == PW_EACCES || err == -EPERM)
        return pw_diag_set(d, PW_EACCES, 0, 0, "proc",
                           "cannot read %s (%s): permission denied; run the agent as root, or "
                           "grant it CAP_DAC_READ_SEARCH, or make /proc/slabinfo readable",
                           what, path);
    if (err == PW_ENOENT && strstr(what, "slabinfo"))
        return pw_diag_set(d, PW_ENOENT, 0, 0, "proc",
                           "%s (%s) does not exist: the kernel has no slabinfo (SLOB, or "
                           "CONFIG_SLUB_DEBUG off) or the proc root is wrong",
                           what, path);
    if (err == PW_ETOOBIG)
        return pw_diag_set(d, err, 0, 0, "proc", "%s (%s) is larger than %zu bytes", what, path,
                           MAX_PROC_BYTES);
    return pw_diag_set(d, err, 0, 0, "proc", "cannot read %s (%s): %s", what, path,
                       pw_strerror(err));
}

/* Says which file a parser's or the rows' error is about: they only know line and field. */
static int with_path(pw_diag_t *d, int r, const char *path)
{
    if (d != NULL) {
        char msg[PW_DIAG_MSG_MAX];
        snprintf(msg, sizeof(msg), "%.100s: %.150s", path, d->msg);
        memcpy(d->msg, msg, sizeof(msg));
    }
    return r;
}

/* Reads one small text file (hostname, osrelease) into out without the trailing newline.
 * Returns 0 when the file was there and non-empty. */
static int read_small(linux_priv_t *priv, const char *rel, char *out, size_t out_size)
{
    char path[PATH_BYTES];
    if (make_path(priv, rel, path, sizeof(path)) != 0 || read_file(&priv->buf, path) != 0)
        return -1;
    size_t n = priv->buf.len;
    while (n > 0 && (priv->buf.data[n - 1] == '\n' || priv->buf.data[n - 1] == ' '))
        n--;
    if (n == 0 || n >= out_size)
        return -1;
    memcpy(out, priv->buf.data, n);
    out[n] = '\0';
    return 0;
}

/* Parses "Key:   123 kB" lines. Lines without a number are skipped: meminfo grows new keys
 * with every kernel, and we only take the ones we know. */
static int parse_meminfo(const char *s, size_t len, meminfo_t *m, pw_diag_t *d)
{
    static const struct {
        const char *key;
        unsigned bit;
        size_t off;
    } keys[] = {
        {"MemTotal", M_TOTAL, offsetof(meminfo_t, mem_total)},
        {"MemAvailable", M_AVAIL, offsetof(meminfo_t, mem_available)},
        {"Slab", M_SLAB, offsetof(meminfo_t, slab)},
        {"SReclaimable", M_SRECL, offsetof(meminfo_t, s_reclaimable)},
        {"SUnreclaim", M_SUNRECL, offsetof(meminfo_t, s_unreclaim)},
        {"Committed_AS", M_COMMIT, offsetof(meminfo_t, committed_as)},
        {"CommitLimit", M_LIMIT, offsetof(meminfo_t, commit_limit)},
    };
    memset(m, 0, sizeof(*m));
    const char *p = s;
    const char *end = s + len;
    uint32_t line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon != NULL) {
            size_t klen = (size_t)(colon - p);
            for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                if (strlen(keys[i].key) != klen || memcmp(keys[i].key, p, klen) != 0)
                    continue;
                const char *q = colon + 1;
                while (q < le && (*q == ' ' || *q == '\t'))
                    q++;
                uint64_t v = 0;
                const char *q0 = q;
                while (q < le && *q >= '0' && *q <= '9') {
                    if (v > (UINT64_MAX - 9) / 10)
                        return pw_diag_set(d, PW_ERANGE, line, (uint64_t)(q - s), keys[i].key,
                                           "meminfo value too large");
                    v = v * 10 + (uint64_t)(*q++ - '0');
                }
                if (q == q0)
                    return pw_diag_set(d, PW_EPARSE, line, (uint64_t)(q - s), keys[i].key,
                                       "meminfo %s has no number", keys[i].key);
                while (q < le && *q == ' ')
                    q++;
                /* "kB" is the kernel's unit for all of these (fs/proc/meminfo.c: KiB). */
                uint64_t mult = (le - q >= 2 && q[0] == 'k' && q[1] == 'B') ? 1024 : 1;
                if (__builtin_mul_overflow(v, mult, &v))
                    return pw_diag_set(d, PW_ERANGE, line, (uint64_t)(q - s), keys[i].key,
                                       "meminfo value too large");
                *(uint64_t *)((char *)m + keys[i].off) = v;
                m->have |= keys[i].bit;
            }
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

static void set_arch(pw_source_info_t *info, const char *machine)
{
    const char *a = machine;
    if (strcmp(machine, "x86_64") == 0 || strcmp(machine, "amd64") == 0)
        a = "x64";
    else if (machine[0] == 'i' && strlen(machine) == 4 && strcmp(machine + 2, "86") == 0)
        a = "x86";
    else if (strcmp(machine, "aarch64") == 0 || strcmp(machine, "arm64") == 0)
        a = "arm64";
    snprintf(info->arch, sizeof(info->arch), "%s", a);
}

static uint64_t read_btime_ms(linux_priv_t *priv)
{
    char path[PATH_BYTES];
    if (make_path(priv, "/proc/stat", path, sizeof(path)) != 0 || read_file(&priv->buf, path) != 0)
        return 0;
    const char *s = (const char *)priv->buf.data;
    const char *p = strstr(s, "\nbtime ");
    if (p == NULL)
        return 0;
    p += 7;
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9' && v < UINT64_MAX / 10000)
        v = v * 10 + (uint64_t)(*p++ - '0');
    return v * 1000;
}

/* "" (everything there), or a comma list of slab, allocinfo, vmallocinfo. */
static int parse_spec(linux_priv_t *priv, const char *arg, pw_diag_t *d)
{
    if (arg == NULL || arg[0] == '\0') {
        priv->want = X_ALLOCINFO | X_VMALLOCINFO;
        priv->must = 0;
        return 0;
    }
    priv->want = priv->must = 0;
    const char *p = arg;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == 4 && memcmp(p, "slab", 4) == 0) {
        } else if (n == 9 && memcmp(p, "allocinfo", 9) == 0) {
            priv->want |= X_ALLOCINFO;
        } else if (n == 11 && memcmp(p, "vmallocinfo", 11) == 0) {
            priv->want |= X_VMALLOCINFO;
        } else {
            return pw_diag_set(d, PW_EINVAL, 0, 0, "source",
                               "linux:%s: '%.*s' is not one of slab, allocinfo, vmallocinfo", arg,
                               (int)n, p);
        }
        p += n + (c != NULL);
    }
    priv->must = priv->want;
    return 0;
}

static int linux_open(pw_source_t *src, const char *arg, const pw_source_config_t *cfg,
                      pw_diag_t *d)
{
    linux_priv_t *priv = src->priv;
    pw_buf_init(&priv->buf, MAX_PROC_BYTES + 1);
    const char *root = cfg->proc_root ? cfg->proc_root : "";
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--; /* "/" and "" both mean the real root */
    if (rl >= sizeof(priv->root) - 32)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
    memcpy(priv->root, root, rl);
    priv->root[rl] = '\0';
    priv->configured_limit = cfg->nonpaged_limit_bytes;

    pw_source_info_t *info = &src->info;
    info->kind = PW_SOURCE_LINUX_SLAB;
    info->counter_width = 64;
    snprintf(info->os_family, sizeof(info->os_family), "linux");
    struct utsname u;
    int have_uname = uname(&u) == 0;
    if (read_small(priv, "/proc/sys/kernel/osrelease", info->os_version,
                   sizeof(info->os_version)) != 0 &&
        have_uname)
        snprintf(info->os_version, sizeof(info->os_version), "%.63s", u.release);
    if (read_small(priv, "/proc/sys/kernel/hostname", info->host_name, sizeof(info->host_name)) !=
            0 &&
        have_uname)
        snprintf(info->host_name, sizeof(info->host_name), "%s", u.nodename);
    if (have_uname)
        set_arch(info, u.machine);
    info->boot_time_ms = read_btime_ms(priv);
    if (cfg->paged_limit_bytes > 0) {
        info->paged_limit.bytes = cfg->paged_limit_bytes;
        info->paged_limit.source = PW_LIMIT_CONFIGURED;
        snprintf(info->paged_limit.detail, sizeof(info->paged_limit.detail), "configured");
    }

    /* Fail now, not at the first sample, when slabinfo is unreadable (not root). */
    char path[PATH_BYTES];
    if (make_path(priv, "/proc/slabinfo", path, sizeof(path)) != 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return file_error(d, -errno, path, "/proc/slabinfo");
    close(fd);
    int r = parse_spec(priv, arg, d);
    if (r != 0)
        return r;
    /* allocinfo and vmallocinfo: read when there and readable, or when the spec names them */
    static const struct {
        unsigned bit;
        const char *rel;
    } extra[] = {{X_ALLOCINFO, "/proc/allocinfo"}, {X_VMALLOCINFO, "/proc/vmallocinfo"}};
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        if (!(priv->want & extra[i].bit))
            continue;
        if (make_path(priv, extra[i].rel, path, sizeof(path)) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            continue;
        }
        int err = -errno;
        if (priv->must & extra[i].bit) {
            if (err == PW_ENOENT && extra[i].bit == X_ALLOCINFO)
                return pw_diag_set(d, PW_ENOENT, 0, 0, "proc",
                                   "%s does not exist: the kernel has no memory allocation "
                                   "profiling (Linux 6.10+, CONFIG_MEM_ALLOC_PROFILING)",
                                   path);
            return file_error(d, err, path, extra[i].rel);
        }
        priv->want &= ~extra[i].bit; /* not there: slabinfo alone, as before */
    }
    return 0;
}

static int linux_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d)
{
    linux_priv_t *priv = src->priv;
    char path[PATH_BYTES];
    meminfo_t mi;

    /* meminfo first, then slabinfo: the two reads are as close as we can make them. */
    if (make_path(priv, "/proc/meminfo", path, sizeof(path)) != 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
    int r = read_file(&priv->buf, path);
    if (r != 0)
        return file_error(d, r, path, "/proc/meminfo");
    r = parse_meminfo((const char *)priv->buf.data, priv->buf.len, &mi, d);
    if (r != 0)
        return r;

    if (make_path(priv, "/proc/slabinfo", path, sizeof(path)) != 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
    r = read_file(&priv->buf, path);
    if (r != 0)
        return file_error(d, r, path, "/proc/slabinfo");
    pw_slabinfo_doc_close(&priv->doc);
    priv->have_doc = 0;
    priv->have_stats = 0;
    pw_slabinfo_opts_t opts = {.strict = true};
    r = pw_slabinfo_parse((const char *)priv->buf.data, priv->buf.len, &opts, &priv->doc, d);
    if (r != 0)
        return with_path(d, r, path);
    priv->have_doc = 1;

    long ps = sysconf(_SC_PAGESIZE);
    uint64_t page_size = ps > 0 ? (uint64_t)ps : 4096;
    pw_source_linux_stats_t st = {0};
    st.page_size = page_size;
    st.n_caches = priv->doc.n_caches;
    st.slab_bytes = pw_slabinfo_doc_slab_bytes(&priv->doc, page_size, NULL);
    priv->rows.page_size = page_size; /* the rows' held bytes */
    r = pw_linux_rows_begin(&priv->rows, out);
    if (r == 0)
        r = pw_linux_rows_add_slab(&priv->rows, priv->doc.caches, priv->doc.n_caches, d);
    if (r != 0)
        return with_path(d, r, path);
    if (priv->want & X_ALLOCINFO) {
        if (make_path(priv, "/proc/allocinfo", path, sizeof(path)) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
        r = read_file(&priv->buf, path);
        if (r != 0)
            return file_error(d, r, path, "/proc/allocinfo");
        pw_allocinfo_doc_t ad;
        pw_allocinfo_opts_t ao = {.strict = true};
        r = pw_allocinfo_parse((const char *)priv->buf.data, priv->buf.len, &ao, &ad, d);
        if (r == 0)
            r = pw_linux_rows_add_alloc(&priv->rows, &ad, d);
        st.n_sites = ad.n_sites;
        pw_allocinfo_doc_close(&ad);
        if (r != 0)
            return with_path(d, r, path);
    }
    if (priv->want & X_VMALLOCINFO) {
        if (make_path(priv, "/proc/vmallocinfo", path, sizeof(path)) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "proc_root", "proc root path is too long");
        r = read_file(&priv->buf, path);
        if (r != 0)
            return file_error(d, r, path, "/proc/vmallocinfo");
        /* lenient: a line of a kernel we do not know is counted (n_vmalloc_skipped), not fatal */
        pw_vmallocinfo_doc_t vd;
        r = pw_vmallocinfo_parse((const char *)priv->buf.data, priv->buf.len, NULL, &vd, d);
        if (r == PW_EFORMAT) /* nothing mapped or only lines we do not know */
            r = 0;
        if (r == 0)
            r = pw_linux_rows_add_vmalloc(&priv->rows, &vd, d);
        st.n_vmalloc_areas = vd.n_areas;
        st.vmalloc_bytes = vd.total_bytes;
        st.n_vmalloc_skipped = vd.n_skipped;
        pw_vmallocinfo_doc_close(&vd);
        if (r != 0)
            return with_path(d, r, path);
    }
    st.rows = priv->rows.st;

    pw_totals_t *t = &out->totals;
    t->slab_reclaimable_bytes = mi.s_reclaimable;
    t->slab_unreclaimable_bytes = mi.s_unreclaim;
    /* Nonpaged is what the kernel cannot give back: unreclaimable slab (SUnreclaim). The
     * reclaimable caches (dentries, inodes: SReclaimable) shrink under memory pressure, as a
     * cache does, and counting them made a busy file server's "nonpaged" climb for no leak;
     * they are sent apart (slab_reclaimable_bytes), and their rows stay in the table. A kernel
     * before 2.6.19 gives only Slab, undivided. */
    if (mi.have & M_SUNRECL)
        t->nonpaged_bytes = mi.s_unreclaim;
    else if (mi.have & M_SLAB)
        t->nonpaged_bytes = mi.slab;
    t->physical_memory_bytes = mi.mem_total;
    t->available_bytes = mi.mem_available;
    t->commit_bytes = mi.committed_as;
    t->commit_limit_bytes = mi.commit_limit;

    pw_source_info_t *info = &src->info;
    info->physical_memory_bytes = mi.mem_total;
    if (priv->configured_limit > 0) {
        info->nonpaged_limit.bytes = priv->configured_limit;
        info->nonpaged_limit.source = PW_LIMIT_CONFIGURED;
        snprintf(info->nonpaged_limit.detail, sizeof(info->nonpaged_limit.detail), "configured");
    } else if (mi.have & M_TOTAL) {
        /* Slab has no fixed ceiling on Linux: it can grow until RAM is gone. */
        info->nonpaged_limit.bytes = mi.mem_total;
        info->nonpaged_limit.source = PW_LIMIT_COMPUTED;
        snprintf(info->nonpaged_limit.detail, sizeof(info->nonpaged_limit.detail),
                 "MemTotal from /proc/meminfo: slab is bounded only by RAM");
    }
    t->nonpaged_limit_bytes = info->nonpaged_limit.bytes;
    t->paged_limit_bytes = info->paged_limit.bytes;

    priv->stats = st;
    priv->have_stats = 1;
    return 0;
}

static void linux_close(pw_source_t *src)
{
    linux_priv_t *priv = src->priv;
    if (priv == NULL)
        return;
    pw_slabinfo_doc_close(&priv->doc);
    pw_buf_close(&priv->buf);
    pw_linux_rows_close(&priv->rows);
}

const pw_source_ops_t pw__source_linux_ops = {
    .name = "linux",
    .description = "Linux slab caches from /proc/slabinfo and /proc/meminfo, allocation sites "
                   "from /proc/allocinfo and vmalloc callers from /proc/vmallocinfo when there",
    .priv_size = sizeof(linux_priv_t),
    .open = linux_open,
    .sample = linux_sample,
    .close = linux_close,
};

int pw_source_linux_stats(const pw_source_t *src, pw_source_linux_stats_t *out)
{
    if (src == NULL || src->ops != &pw__source_linux_ops || out == NULL)
        return PW_EINVAL;
    const linux_priv_t *priv = src->priv;
    if (!priv->have_stats)
        return PW_EAGAIN;
    *out = priv->stats;
    return 0;
}

const pw_slabinfo_doc_t *pw_source_linux_last_doc(const pw_source_t *src)
{
    if (src == NULL || src->ops != &pw__source_linux_ops)
        return NULL;
    const linux_priv_t *priv = src->priv;
    return priv->have_doc ? &priv->doc : NULL;
}
