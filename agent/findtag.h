/* findtag.h: find-tag, the agent command that looks for a pool tag in driver files, as
 * `findstr /m /l TAG %SystemRoot%\System32\drivers\*.sys` does by hand, and then says more than
 * findstr: where in the file the tag stands (pe.h: in code, as the immediate operand of the
 * allocation call, in data, or elsewhere), and the file's version, product and company from
 * its version resource. Files are reported best match first.
 *
 * The portable part (findtag.c) checks the tag, examines one file and ranks; the walk over a
 * directory is platform code behind findtag_internal.h (findtag_posix.c, findtag_win.c). */
#ifndef PW_FINDTAG_H
#define PW_FINDTAG_H

#include <stddef.h>
#include <stdint.h>

#include "pe.h"

#define PW_FINDTAG_MAX_MATCHES 256   /* matches reported per search (the best ones) */
#define PW_FINDTAG_MAX_FILES   50000 /* files examined per search: the rest is not looked at */

/* One file that contains the tag. Strings are borrowed for the callback's duration. */
typedef struct pw_findtag_match_s {
    const char *name; /* path relative to the root searched, prefixed by the root's label
                         ("DriverStore\FileRepository\x.inf_amd64_1\x.sys") when it has one */
    uint64_t size_bytes;
    pw_pe_match_t kind;  /* where the tag stands (PW_PE_MATCH_FILE for a file that is not PE) */
    uint64_t offset;     /* file offset of that occurrence */
    pw_pe_version_t ver; /* "" fields when the file has no version resource */
} pw_findtag_match_t;

typedef void (*pw_findtag_cb)(const pw_findtag_match_t *m, void *arg);

/* A directory to search. */
typedef struct pw_findtag_root_s {
    const char *dir;   /* the directory */
    const char *label; /* prefix of the names reported ("" or NULL: names relative to dir) */
    int max_depth;     /* subdirectory levels walked (0: the directory's own files) */
    int sys_only;      /* 1: only files whose name ends in ".sys" (any case) */
} pw_findtag_root_t;

/* Scans the regular files of `dir` for the bytes of `tag` (1..PW_TAG_MAX bytes): on Windows
 * the files of `dir` itself; elsewhere also its subdirectories, 8 levels deep, without
 * following symbolic links (/lib/modules/RELEASE/kernel keeps modules in a tree; compressed
 * modules, .ko.xz or .ko.zst, are not looked into). Calls `cb` for each file that contains
 * them, best first: by kind (code, data, file), then by name. Files larger than 256 MiB are
 * skipped; PE structure is read in files up to 64 MiB (a larger one is searched as bytes, kind
 * "file"). Runs on the caller's thread (a module tree takes seconds). Returns the number of
 * matches, PW_EINVAL (tag length) or PW_ENOENT (the directory cannot be read). */
int pw_findtag_scan(const char *dir, const uint8_t *tag, size_t tag_len, pw_findtag_cb cb,
                    void *arg);

/* The same over several roots, ranked together; a root that cannot be read is skipped, and
 * PW_ENOENT is returned only when none can. At most PW_FINDTAG_MAX_FILES files are examined
 * and PW_FINDTAG_MAX_MATCHES reported. */
int pw_findtag_scan_roots(const pw_findtag_root_t *roots, size_t n_roots, const uint8_t *tag,
                          size_t tag_len, pw_findtag_cb cb, void *arg);

#endif /* PW_FINDTAG_H */
