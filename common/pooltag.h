/* pooltag.h: loader for `pooltag.txt`-format tag descriptions (Debugging Tools for Windows,
 * `triage\pooltag.txt`), so that every leak suspect shows its driver and
 * description, or "unknown".
 *
 * Format (the file's own header): `<PoolTag> - <binary-name> - <Description>`, one per line,
 * e.g. `Thre - nt!ps        - Thread objects`. What the real files contain and how we treat it
 * (shared/data/README.md "pooltag.txt" and our own reading of the files):
 *   - the tag is the first 4 bytes of the line, spaces kept (`Io  `, `Dh 0`, `BIG `), and
 *     must be followed by ` -` (then a space or the end of the line); tags are case-sensitive
 *     (`aFDC` and `AfdC` are different tags);
 *   - wildcard tags: `?` matches one byte, `*` matches the rest of the tag (bytes after it in
 *     the pattern are ignored: `Bu* ` matches `Bu`, `BuX`, `Bu12`);
 *   - three fields: binary (`afd.sys`, `nt!ps`, `<unknown>`, `nt!store or rdyboost.sys`) and
 *     description, split at the first ` -` after the tag's separator; both trimmed (extra
 *     indentation of sub-entries is dropped); `-internal` without a space after the dash
 *     (2003 file) is accepted: the split needs only whitespace before the dash;
 *   - two fields (`ATmp - AppTag mount point`, no second ` -`): binary "" and the rest is the
 *     description;
 *   - comment lines: `rem` (any case) followed by whitespace or the end of the line, and
 *     lines starting with `//`; blank lines (only spaces/tabs); note `ReMo - refs.sys` is a tag,
 *     not a comment;
 *   - CRLF or LF endings, an initial UTF-8 BOM, and a final DOS end-of-file byte (0x1A, the
 *     last line of the modern file) are accepted; the parse stops at 0x1A;
 *   - malformed lines are skipped and recorded (line number and reason): 3-byte tags followed
 *     by ` -` (`PX1 - ndproxy.sys - ...`, `I4e -  tcpip.sys ...`), a tag followed by two spaces
 *     (`Tun4  - `), free text (`QUIC Allocation tags are ...`), a line that is only
 *     `       <unknown>`, lines with control bytes, lines longer than max_line.
 *     With PW_POOLTAG_LENIENT the first two kinds are accepted instead: a 3-byte tag is padded
 *     with a space (`PX1 `, as poolmon prints short tags) and extra spaces before the dash are
 *     allowed; the lines are then counted in `lenient`.
 *   - duplicate tags keep every definition in file order; lookup returns the first and the
 *     number of definitions.
 * Hostile input: NUL bytes (also UTF-16 text) are rejected with PW_EPARSE; input larger than
 * max_input or more entries than max_entries give PW_ETOOBIG; both fill pw_diag_t (line,
 * byte offset, field).
 */
#ifndef PW_POOLTAG_H
#define PW_POOLTAG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PW_POOLTAG_MAX_INPUT_DEFAULT   ((size_t)16 << 20) /* bytes; the real file is 255 KB */
#define PW_POOLTAG_MAX_LINE_DEFAULT    ((size_t)1024)     /* bytes per line */
#define PW_POOLTAG_MAX_ENTRIES_DEFAULT ((size_t)1 << 17)  /* definitions */

#define PW_POOLTAG_LENIENT 0x1u /* accept 3-byte tags and extra spaces before the dash */

typedef struct pw_pooltag_opts_s {
    size_t max_input;   /* 0 = default */
    size_t max_line;    /* 0 = default */
    size_t max_entries; /* 0 = default */
    unsigned flags;     /* PW_POOLTAG_* */
} pw_pooltag_opts_t;

typedef struct pw_pooltag_entry_s {
    char tag[5];        /* 4 bytes + NUL, spaces kept */
    uint8_t wildcard;   /* 1 when the tag contains `?` or `*` */
    uint8_t lenient;    /* 1 when accepted only by PW_POOLTAG_LENIENT */
    uint32_t line;      /* 1-based line in the file */
    const char *binary; /* NUL-terminated, owned by the table; "" for two-field lines */
    const char *desc;   /* NUL-terminated, owned by the table; may be "" */
} pw_pooltag_entry_t;

typedef enum {
    PW_POOLTAG_SKIP_SHORT_TAG = 1, /* tag shorter than 4 bytes before ` -` (`PX1 - `) */
    PW_POOLTAG_SKIP_SEPARATOR = 2, /* 4-byte tag not followed by ` - ` (`Tun4  - `) */
    PW_POOLTAG_SKIP_TEXT = 3,      /* free text, or a line starting with whitespace */
    PW_POOLTAG_SKIP_CONTROL = 4,   /* control bytes in the line */
    PW_POOLTAG_SKIP_TOO_LONG = 5   /* longer than max_line */
} pw_pooltag_skip_reason_t;

typedef struct pw_pooltag_skip_s {
    uint32_t line;
    uint32_t reason; /* pw_pooltag_skip_reason_t */
} pw_pooltag_skip_t;

typedef struct pw_pooltag_stats_s {
    size_t lines;      /* lines read (the 0x1A line, if any, included) */
    size_t entries;    /* definitions kept */
    size_t unique;     /* distinct tags among them */
    size_t duplicated; /* distinct tags defined more than once */
    size_t wildcards;  /* definitions with a wildcard tag */
    size_t two_field;  /* definitions without a binary field */
    size_t comments;   /* rem / // lines */
    size_t blank;      /* empty or whitespace-only lines */
    size_t skipped;    /* malformed lines (see pw_pooltag_skipped) */
    size_t lenient;    /* lines accepted only because of PW_POOLTAG_LENIENT */
} pw_pooltag_stats_t;

typedef struct pw_pooltag_s pw_pooltag_t;

/* Parses buf[0..len) (need not be NUL-terminated) into a new table *out (free with
 * pw_pooltag_free). opts may be NULL for the defaults. Returns 0, PW_EINVAL (NULL args),
 * PW_EPARSE (NUL bytes / UTF-16), PW_ETOOBIG (input or entry limit) or PW_ENOMEM; diag (may be
 * NULL) says what and where. Malformed lines are not errors (see pw_pooltag_skipped). */
int pw_pooltag_parse(const char *buf, size_t len, const pw_pooltag_opts_t *opts, pw_pooltag_t **out,
                     pw_diag_t *diag);

/* Reads the file at `path` (at most max_input bytes) and parses it as above. Also returns
 * negated errno values from open/read (PW_ENOENT, PW_EACCES, PW_EIO). */
int pw_pooltag_load(const char *path, const pw_pooltag_opts_t *opts, pw_pooltag_t **out,
                    pw_diag_t *diag);

/* Frees the table (accepts NULL). */
void pw_pooltag_free(pw_pooltag_t *t);

/* Looks up a tag of tag_len bytes (1..4; shorter tags are padded with spaces, as poolmon shows
 * `Io` as `Io  `). Exact definitions first; else the wildcard definition with the most literal
 * bytes (`Afd?` before `Af??`), ties in file order. Returns the first definition of the
 * matching tag and, in *n_defs (may be NULL), how many definitions that tag has; NULL (and
 * *n_defs = 0) when nothing matches or tag_len is 0 or > 4. The entry lives as long as t. */
const pw_pooltag_entry_t *pw_pooltag_lookup(const pw_pooltag_t *t, const void *tag, size_t tag_len,
                                            size_t *n_defs);

/* The i-th definition in file order (i < stats.entries), or NULL. */
const pw_pooltag_entry_t *pw_pooltag_entry(const pw_pooltag_t *t, size_t i);

/* Counters of the parse. */
const pw_pooltag_stats_t *pw_pooltag_stats(const pw_pooltag_t *t);

/* Skipped lines in file order; *n gets their number. */
const pw_pooltag_skip_t *pw_pooltag_skipped(const pw_pooltag_t *t, size_t *n);

#endif /* PW_POOLTAG_H */
