/* findtag_win.c: find-tag's directory walk on Windows (findtag_internal.h). */
#include "findtag_internal.h"

#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "error.h"

/* Windows: FindFirstFile gives names, sizes and the directory bit in one pass (no dirent.h in
 * MSVC's C runtime). Narrow (ANSI) names, as the drivers directories have. Reparse points
 * (junctions, symbolic links) are not followed. Returns 0, 1 to stop, PW_ENOENT at the top. */
static int walk_in(const pw_findtag_root_t *root, const char *rel, int depth,
                   pw__findtag_file_fn fn, void *ctx)
{
    char dirpath[4096], pat[4096];
    snprintf(dirpath, sizeof(dirpath), "%s%s%s", root->dir, rel[0] ? "\\" : "", rel);
    snprintf(pat, sizeof(pat), "%s\\*", dirpath);
    WIN32_FIND_DATAA fd;
    HANDLE h = FindFirstFileA(pat, &fd);
    if (h == INVALID_HANDLE_VALUE)
        return depth == 0 ? PW_ENOENT : 0;
    int stop = 0;
    do {
        if (strcmp(fd.cFileName, ".") == 0 || strcmp(fd.cFileName, "..") == 0 ||
            (fd.dwFileAttributes & (FILE_ATTRIBUTE_DEVICE | FILE_ATTRIBUTE_REPARSE_POINT)))
            continue;
        char path[4096], sub[4096];
        snprintf(path, sizeof(path), "%s\\%s", dirpath, fd.cFileName);
        snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "\\" : "", fd.cFileName);
        if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) {
            if (depth < root->max_depth)
                stop = walk_in(root, sub, depth + 1, fn, ctx) == 1;
            continue;
        }
        uint64_t size = ((uint64_t)fd.nFileSizeHigh << 32) | fd.nFileSizeLow;
        size_t nl = strlen(fd.cFileName);
        if (size > PW__FINDTAG_MAX_FILE ||
            (root->sys_only && (nl < 4 || _stricmp(fd.cFileName + nl - 4, ".sys") != 0)))
            continue;
        stop = fn(path, sub, size, ctx) == 1;
    } while (!stop && FindNextFileA(h, &fd));
    FindClose(h);
    return stop;
}

int pw__findtag_walk(const pw_findtag_root_t *root, pw__findtag_file_fn fn, void *ctx)
{
    int r = walk_in(root, "", 0, fn, ctx);
    return r < 0 ? r : 0;
}
