/* findtag_internal.h: between findtag.c (portable) and its platform walk (findtag_posix.c,
 * findtag_win.c). Not for other modules. */
#ifndef PW_FINDTAG_INTERNAL_H
#define PW_FINDTAG_INTERNAL_H

#include "findtag.h"

#define PW__FINDTAG_MAX_FILE ((uint64_t)256 << 20) /* bytes; larger files are skipped */

/* 1 if the file at `path` contains tag[0..len) (len >= 1), 0 otherwise or unreadable. */
int pw__findtag_file_contains(const char *path, const uint8_t *tag, size_t len);

/* The platform walk over `dir` (findtag.h says which files); the tag is already checked.
 * Returns the number of matches or PW_ENOENT. */
int pw__findtag_walk(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                     void *arg);

#endif /* PW_FINDTAG_INTERNAL_H */
