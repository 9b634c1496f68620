/* alert_file.c: the firing and pending alerts and the suspects' found times kept across
 * restarts (alert_file.h).
 *
 * A JSON array beside the store, written when an alert changes state or a suspect comes or
 * goes, and restored at start without a transition: receivers do not see the alerts fire a
 * second time, a pending alert fires when its `for` is over (not a whole `for` after the
 * restart), a suspect keeps the time it was found, and alerts resolve as usual when the
 * analysis no longer finds their condition. */
#include "alert_file.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#ifndef _WIN32
#include <unistd.h>
#else
#include <io.h>
#define access _access
#define F_OK   0
#endif

#define MOD             "analysis"
#define PATH_MAX_ALERTS 4096

static void save_alert_cb(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to != PW_ALERT_FIRING && cur->to != PW_ALERT_PENDING)
        return;
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:f}", "host", cur->key.host, "tag", cur->key.tag,
                          "pool", cur->key.pool, "severity", cur->key.severity, "since_ms",
                          (json_int_t)cur->active_since_ms, "value", cur->value);
    if (o != NULL && cur->to == PW_ALERT_PENDING)
        json_object_set_new(o, "state", json_string("pending"));
    json_array_append_new(arg, o);
}

/* Replaces `path` by `text` so that a crash leaves the old or the new file, and the new one
 * survives a power cut once this returns: write a temporary file, fsync it, rename it over
 * the old one, fsync the directory (libuv's synchronous fs calls, so this works on Windows
 * too, where the directory step is skipped). Returns 0 or a negative libuv code. */
static int replace_file(const char *path, const char *tmp, char *text)
{
    uv_fs_t req;
    int fd =
        uv_fs_open(NULL, &req, tmp, UV_FS_O_WRONLY | UV_FS_O_CREAT | UV_FS_O_TRUNC, 0600, NULL);
    uv_fs_req_cleanup(&req);
    if (fd < 0)
        return fd;
    size_t len = strlen(text), off = 0;
    int r = 0;
    while (r == 0 && off < len) {
        uv_buf_t b = uv_buf_init(text + off, (unsigned)(len - off));
        int n = uv_fs_write(NULL, &req, fd, &b, 1, -1, NULL);
        uv_fs_req_cleanup(&req);
        if (n < 0)
            r = n;
        else
            off += (size_t)n;
    }
    if (r == 0)
        r = uv_fs_fsync(NULL, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    uv_fs_close(NULL, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    if (r == 0)
        r = uv_fs_rename(NULL, &req, tmp, path, NULL);
    uv_fs_req_cleanup(&req);
    if (r != 0)
        return r;
#ifndef _WIN32
    char dir[PATH_MAX_ALERTS + 8];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    int dfd = uv_fs_open(NULL, &req, dir, UV_FS_O_RDONLY, 0, NULL);
    uv_fs_req_cleanup(&req);
    if (dfd >= 0) {
        uv_fs_fsync(NULL, &req, dfd, NULL); /* best effort: the rename is done */
        uv_fs_req_cleanup(&req);
        uv_fs_close(NULL, &req, dfd, NULL);
        uv_fs_req_cleanup(&req);
    }
#endif
    return 0;
}

int pw_alert_save_found(const pw_alert_set_t *set, const pw_alert_found_t *f, size_t nf,
                        const char *path)
{
    json_t *a = json_array();
    if (a == NULL)
        return UV_ENOMEM;
    pw_alert_foreach(set, save_alert_cb, a);
    for (size_t i = 0; i < nf; i++)
        json_array_append_new(a,
                              json_pack("{s:s,s:s,s:s,s:I}", "host", f[i].host, "tag", f[i].tag,
                                        "pool", f[i].pool, "found_ms", (json_int_t)f[i].found_ms));
    size_t n = strlen(path) + 8;
    char *tmp = pw_malloc(n);
    char *text = json_dumps(a, JSON_COMPACT);
    int r = UV_ENOMEM;
    if (tmp != NULL && text != NULL) {
        snprintf(tmp, n, "%s.tmp", path);
        r = replace_file(path, tmp, text);
    }
    if (r != 0)
        PW_LOG_WARN(MOD, "cannot write %s: %s", path, uv_strerror(r));
    free(text); /* jansson's allocator is malloc */
    pw_free(tmp);
    json_decref(a);
    return r;
}

int pw_alert_save(const pw_alert_set_t *set, const char *path)
{
    return pw_alert_save_found(set, NULL, 0, path);
}

static int label(const char *v, char *out, size_t cap)
{
    if (strlen(v) >= cap)
        return -1;
    snprintf(out, cap, "%s", v);
    return 0;
}

/* One found-time entry into f[*n] (grown). Returns 0, -1 when malformed, PW_ENOMEM. */
static int load_found(json_t *o, pw_alert_found_t **f, size_t *n, size_t *cap)
{
    const char *host, *tag, *pool;
    json_int_t ms;
    pw_alert_found_t x;
    memset(&x, 0, sizeof(x));
    if (json_unpack(o, "{s:s,s:s,s:s,s:I}", "host", &host, "tag", &tag, "pool", &pool, "found_ms",
                    &ms) != 0 ||
        label(host, x.host, sizeof(x.host)) || label(tag, x.tag, sizeof(x.tag)) ||
        label(pool, x.pool, sizeof(x.pool)) || ms <= 0)
        return -1;
    x.found_ms = (int64_t)ms;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        pw_alert_found_t *p = pw_realloc(*f, nc * sizeof(*p));
        if (p == NULL)
            return PW_ENOMEM;
        *f = p;
        *cap = nc;
    }
    (*f)[(*n)++] = x;
    return 0;
}

size_t pw_alert_load_found(pw_alert_set_t *set, const char *path, pw_alert_found_t **f, size_t *nf)
{
    size_t fcap = 0;
    if (f != NULL) {
        *f = NULL;
        *nf = 0;
    }
    json_error_t err;
    json_t *a = json_load_file(path, 0, &err);
    if (a == NULL) {
        if (errno != ENOENT && access(path, F_OK) == 0)
            PW_LOG_WARN(MOD, "%s:%d: alerts not restored: %s", path, err.line, err.text);
        return 0;
    }
    size_t i, n = 0, pending = 0;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        if (json_object_get(o, "found_ms") != NULL) {
            if (f != NULL && load_found(o, f, nf, &fcap) == -1)
                PW_LOG_WARN(MOD, "%s: entry %zu is not a suspect's found time: skipped", path, i);
            continue;
        }
        pw_alert_key_t k;
        memset(&k, 0, sizeof(k));
        const char *host, *tag, *pool, *sev, *st = "firing";
        json_int_t since;
        double value;
        if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:I,s:F,s?s}", "host", &host, "tag", &tag, "pool",
                        &pool, "severity", &sev, "since_ms", &since, "value", &value, "state",
                        &st) != 0 ||
            label(host, k.host, sizeof(k.host)) || label(tag, k.tag, sizeof(k.tag)) ||
            label(pool, k.pool, sizeof(k.pool)) || label(sev, k.severity, sizeof(k.severity)) ||
            (strcmp(st, "firing") != 0 && strcmp(st, "pending") != 0)) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a firing or pending alert: skipped", path, i);
            continue;
        }
        int pend = strcmp(st, "pending") == 0;
        if (pw_alert_restore_state(set, &k, pend ? PW_ALERT_PENDING : PW_ALERT_FIRING,
                                   (int64_t)since, value) == 0) {
            n++;
            pending += pend;
        }
    }
    json_decref(a);
    if (n > 0)
        PW_LOG_INFO(MOD, "%zu alerts restored from %s (%zu firing, %zu pending)", n, path,
                    n - pending, pending);
    return n;
}

size_t pw_alert_load(pw_alert_set_t *set, const char *path)
{
    return pw_alert_load_found(set, path, NULL, NULL);
}
