/* findtag_internal.h: between findtag.c (portable) and its platform walk (findtag_posix.c,
 * findtag_win.c). Not for other modules. */
#ifndef PW_FINDTAG_INTERNAL_H
#define PW_FINDTAG_INTERNAL_H

#include "findtag.h"

#define PW__FINDTAG_MAX_FILE ((uint64_t)256 << 20) /* bytes; larger files are skipped */
#define PW__FINDTAG_MAX_READ ((uint64_t)64 << 20)  /* bytes; PE structure read up to this */

/* What the walk hands each file to: `path` to open, `rel` to report, its size. Returns 0 to go
 * on, 1 to stop (the file budget is spent). */
typedef int (*pw__findtag_file_fn)(const char *path, const char *rel, uint64_t size, void *ctx);

/* The platform walk over root->dir, max_depth levels, regular files only (root->sys_only: only
 * "*.sys"), symbolic links not followed. Returns 0 or PW_ENOENT (the directory cannot be
 * read). */
int pw__findtag_walk(const pw_findtag_root_t *root, pw__findtag_file_fn fn, void *ctx);

#endif /* PW_FINDTAG_INTERNAL_H */
