/* proc_text.h: what the parsers of the kernel's line-oriented /proc text share
 * (allocinfo_text, vmallocinfo_text): a line reader that refuses binary input and over-long
 * lines with the line named, and decimal numbers with their range checked. */
#ifndef PW_PROC_TEXT_H
#define PW_PROC_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct pw_proc_lines_s {
    const char *base, *p, *end;
    size_t max_line;  /* bytes of one line */
    uint32_t line;    /* 1-based number of the line last returned */
    const char *what; /* "allocinfo", "vmallocinfo": named in the errors */
} pw_proc_lines_t;

/* Starts reading `len` bytes of `data` (borrowed) line by line; `what` names the input in
 * errors (borrowed, static). */
void pw_proc_lines_init(pw_proc_lines_t *it, const char *data, size_t len, size_t max_line,
                        const char *what);

/* The next non-blank line: [*s, *e) without leading blanks or trailing blanks and CR, *off its
 * byte offset in the input. Returns 1, 0 at the end, or PW_ETOOBIG (a line over max_line) /
 * PW_EPARSE (a control byte other than tab and CR) with `d` naming line and offset. */
int pw_proc_lines_next(pw_proc_lines_t *it, const char **s, const char **e, uint64_t *off,
                       pw_diag_t *d);

/* Reads the unsigned decimal [p, e) (digits only). Returns 0 and sets *out, -1 when it is not
 * a number, PW_ERANGE above 2^64-1. */
int pw_proc_text_u64(const char *p, const char *e, uint64_t *out);

/* FNV-1a (64-bit) of `n` bytes: the hash of the parsers' lookup tables and of shortened names. */
uint64_t pw_proc_text_hash(const void *p, size_t n);

#endif /* PW_PROC_TEXT_H */
