/* findtag_win.c: find-tag's directory walk on Windows (findtag_internal.h). */
#include "findtag_internal.h"

#include <stdio.h>
#include <windows.h>

#include "error.h"

/* Windows: FindFirstFile gives names, sizes and the directory bit in one pass (no dirent.h in
 * MSVC's C runtime). Narrow (ANSI) names, as the drivers directory has. */
int pw__findtag_walk(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                     void *arg)
{
    char pat[4096];
    snprintf(pat, sizeof(pat), "%s\\*", dir);
    WIN32_FIND_DATAA fd;
    HANDLE h = FindFirstFileA(pat, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return PW_ENOENT;
    int matches = 0;
    do {
        uint64_t size = ((uint64_t)fd.nFileSizeHigh << 32) | fd.nFileSizeLow;
        if (fd.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE) ||
            size > PW__FINDTAG_MAX_FILE)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s\\%s", dir, fd.cFileName);
        if (pw__findtag_file_contains(path, tag, tag_len)) {
            matches++;
            cb(fd.cFileName, size, arg);
        }
    } while (FindNextFileA(h, &fd));
    FindClose(h);
    return matches;
}
