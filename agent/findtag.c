/* findtag.c: find-tag's portable part (see findtag.h): the tag check and the search of one
 * file; the directory walk is in findtag_posix.c / findtag_win.c. */
#include "findtag_internal.h"

#include <stdio.h>
#include <string.h>

#include "error.h"
#include "sample.h" /* PW_TAG_MAX */

int pw__findtag_file_contains(const char *path, const uint8_t *tag, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    /* Read in blocks, keeping the last len-1 bytes so a match across blocks is found. */
    uint8_t buf[65536 + PW_TAG_MAX];
    size_t keep = 0, n;
    int found = 0;
    while (!found && (n = fread(buf + keep, 1, 65536, f)) > 0) {
        size_t total = keep + n;
        for (size_t i = 0; i + len <= total; i++)
            if (buf[i] == tag[0] && memcmp(buf + i, tag, len) == 0) {
                found = 1;
                break;
            }
        keep = len - 1 < total ? len - 1 : total;
        memmove(buf, buf + total - keep, keep);
    }
    fclose(f);
    return found;
}

int pw_findtag_scan(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                    void *arg)
{
    if (tag_len == 0 || tag_len > PW_TAG_MAX)
        return PW_EINVAL;
    return pw__findtag_walk(dir, tag, tag_len, cb, arg);
}
