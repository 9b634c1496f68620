/* alert_file.c: the firing alerts kept across restarts (alert_file.h).
 *
 * A JSON array beside the store, written when an alert starts or stops firing and restored at
 * start without a transition: receivers do not see the alerts fire a second time, and they
 * resolve as usual when the analysis no longer finds their condition. */
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

static void save_firing_cb(const pw_alert_transition_t *cur, void *arg)
{
    if (cur->to != PW_ALERT_FIRING)
        return;
    json_array_append_new(arg, json_pack("{s:s,s:s,s:s,s:s,s:I,s:f}", "host", cur->key.host, "tag",
                                         cur->key.tag, "pool", cur->key.pool, "severity",
                                         cur->key.severity, "since_ms",
                                         (json_int_t)cur->active_since_ms, "value", cur->value));
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

int pw_alert_save(const pw_alert_set_t *set, const char *path)
{
    json_t *a = json_array();
    if (a == NULL)
        return UV_ENOMEM;
    pw_alert_foreach(set, save_firing_cb, a);
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

size_t pw_alert_load(pw_alert_set_t *set, const char *path)
{
    json_error_t err;
    json_t *a = json_load_file(path, 0, &err);
    if (a == NULL) {
        if (errno != ENOENT && access(path, F_OK) == 0)
            PW_LOG_WARN(MOD, "%s:%d: firing alerts not restored: %s", path, err.line, err.text);
        return 0;
    }
    size_t i, n = 0;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        pw_alert_key_t k;
        memset(&k, 0, sizeof(k));
        const char *host, *tag, *pool, *sev;
        json_int_t since;
        double value;
        if (json_unpack(o, "{s:s,s:s,s:s,s:s,s:I,s:F}", "host", &host, "tag", &tag, "pool", &pool,
                        "severity", &sev, "since_ms", &since, "value", &value) != 0 ||
            strlen(host) >= sizeof(k.host) || strlen(tag) >= sizeof(k.tag) ||
            strlen(pool) >= sizeof(k.pool) || strlen(sev) >= sizeof(k.severity)) {
            PW_LOG_WARN(MOD, "%s: entry %zu is not a firing alert: skipped", path, i);
            continue;
        }
        snprintf(k.host, sizeof(k.host), "%s", host);
        snprintf(k.tag, sizeof(k.tag), "%s", tag);
        snprintf(k.pool, sizeof(k.pool), "%s", pool);
        snprintf(k.severity, sizeof(k.severity), "%s", sev);
        if (pw_alert_restore(set, &k, (int64_t)since, value) == 0)
            n++;
    }
    json_decref(a);
    if (n > 0)
        PW_LOG_INFO(MOD, "%zu firing alerts restored from %s", n, path);
    return n;
}
