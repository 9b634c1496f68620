/* findtag.h: find-tag, the agent command that looks for a pool tag in driver files, as
 * `findstr /m /l TAG %SystemRoot%\System32\drivers\*.sys` does by hand.
 *
 * The portable part (findtag.c) checks the tag and searches one file; the walk over the
 * directory is platform code behind findtag_internal.h (findtag_posix.c, findtag_win.c). */
#ifndef PW_FINDTAG_H
#define PW_FINDTAG_H

#include <stddef.h>
#include <stdint.h>

/* One match: its path relative to the directory searched and its size in bytes. */
typedef void (*pw_findtag_cb)(const char *name, uint64_t size_bytes, void *arg);

/* Scans the regular files of `dir` for the bytes of `tag` (1..PW_TAG_MAX bytes): on Windows
 * the files of `dir` itself; elsewhere also its subdirectories, 8 levels deep, without
 * following symbolic links (/lib/modules/RELEASE/kernel keeps modules in a tree; compressed
 * modules, .ko.xz or .ko.zst, are not looked into). Calls `cb` for each file that contains
 * them. Files larger than 256 MiB are skipped. Runs on the caller's thread (a module tree
 * takes seconds). Returns the number of matches, PW_EINVAL (tag length) or PW_ENOENT (the
 * directory cannot be read). */
int pw_findtag_scan(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                    void *arg);

#endif /* PW_FINDTAG_H */
