/* findtag_posix.c: find-tag's directory walk on POSIX systems (findtag_internal.h). */
#include "findtag_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"

/* Depth-first over `dir` + `rel`, symbolic links not followed (a link to /etc/passwd is not a
 * driver); `matches` counts. Returns 0 or PW_ENOENT when the top directory cannot be read. */
static int find_tag_in(const char *root, const char *rel, int depth, const uint8_t *tag,
                       size_t tag_len, pw_findtag_cb cb, void *arg, int *matches)
{
    char dirpath[4096];
    int w = snprintf(dirpath, sizeof(dirpath), "%s%s%s", root, rel[0] ? "/" : "", rel);
    if (w < 0 || (size_t)w >= sizeof(dirpath))
        return 0; /* a path too long to open: skipped */
    DIR *dp = opendir(dirpath);
    if (dp == NULL)
        return depth == 0 ? PW_ENOENT : 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
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
            if (depth < 8)
                find_tag_in(root, sub, depth + 1, tag, tag_len, cb, arg, matches);
            continue;
        }
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > PW__FINDTAG_MAX_FILE)
            continue;
        if (pw__findtag_file_contains(path, tag, tag_len)) {
            (*matches)++;
            cb(sub, (uint64_t)st.st_size, arg);
        }
    }
    closedir(dp);
    return 0;
}

int pw__findtag_walk(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                     void *arg)
{
    int matches = 0;
    int r = find_tag_in(dir, "", 0, tag, tag_len, cb, arg, &matches);
    return r < 0 ? r : matches;
}
