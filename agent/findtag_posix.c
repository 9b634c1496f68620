/* findtag_posix.c: find-tag's directory walk on POSIX systems (findtag_internal.h). */
#include "findtag_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "error.h"

/* Depth-first over `dir` + `rel`, symbolic links not followed (a link to /etc/passwd is not a
 * driver). Returns 0, 1 when the walk is to stop, or PW_ENOENT when the top directory cannot
 * be read. */
static int walk_in(const pw_findtag_root_t *root, const char *rel, int depth,
                   pw__findtag_file_fn fn, void *ctx)
{
    char dirpath[4096];
    int w = snprintf(dirpath, sizeof(dirpath), "%s%s%s", root->dir, rel[0] ? "/" : "", rel);
    if (w < 0 || (size_t)w >= sizeof(dirpath))
        return 0; /* a path too long to open: skipped */
    DIR *dp = opendir(dirpath);
    if (dp == NULL)
        return depth == 0 ? PW_ENOENT : 0;
    struct dirent *de;
    int stop = 0;
    while (!stop && (de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[4096], sub[4096];
        struct stat st;
        int pn = snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
        int sn = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (pn < 0 || (size_t)pn >= sizeof(path) || sn < 0 || (size_t)sn >= sizeof(sub) ||
            lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            /* /lib/modules/RELEASE/kernel/drivers/net/ethernet/intel/e1000e: depth 5 */
            if (depth < root->max_depth)
                stop = walk_in(root, sub, depth + 1, fn, ctx) == 1;
            continue;
        }
        size_t nl = strlen(de->d_name);
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > PW__FINDTAG_MAX_FILE ||
            (root->sys_only && (nl < 4 || strcasecmp(de->d_name + nl - 4, ".sys") != 0)))
            continue;
        stop = fn(path, sub, (uint64_t)st.st_size, ctx) == 1;
    }
    closedir(dp);
    return stop;
}

int pw__findtag_walk(const pw_findtag_root_t *root, pw__findtag_file_fn fn, void *ctx)
{
    int r = walk_in(root, "", 0, fn, ctx);
    return r < 0 ? r : 0;
}
