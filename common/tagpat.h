/* tagpat.h: the one rule for tag patterns, shared by the query API's include/exclude
 * parameters (collector/api_v1.c) and `poolwatch top`'s I and X keys (cli/cmd_top.c).
 *
 * The rule, poolmon's /i and /x: a pattern is matched against the whole printable tag text,
 * case-sensitively; `*` matches any run of bytes (also none) and `?` exactly one byte; every
 * other byte, `[` and `\` included, stands for itself. poolmon pads tags shorter than 4
 * characters with spaces ("Io  "); those padding spaces are optional: a pattern that matches
 * the tag without its trailing spaces matches the tag too ("Io", "Io*" and "Io??" all match
 * "Io  "; "????" matches "Io  " but not a 2-byte Linux name "Io"). A list is comma-separated;
 * empty patterns in it match nothing.
 */
#ifndef PW_TAGPAT_H
#define PW_TAGPAT_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the pattern p[0..pn) matches the tag text s[0..sn) by the rule above, else 0. */
int pw_tagpat_match(const char *p, size_t pn, const char *s, size_t sn);

/* 1 if any pattern of the comma-separated `list` (NUL-terminated) matches s[0..sn). No
 * allocation: for a list used once (top's filter, a row at a time). */
int pw_tagpat_list_match_str(const char *list, const char *s, size_t sn);

/* A comma-separated list split once, for matching many tags (an API request's rows). */
typedef struct pw_tagpat_pat_s {
    const char *p; /* into the list string, which stays borrowed */
    size_t n;
} pw_tagpat_pat_t;

typedef struct pw_tagpat_list_s {
    int present; /* a list was given (an empty list then matches nothing) */
    size_t n;
    pw_tagpat_pat_t *v; /* owned */
    int any_first;      /* some pattern starts with `*` or `?` */
    uint64_t first[4];  /* else: the set of the patterns' first bytes (a quick refusal) */
} pw_tagpat_list_t;

/* Splits `list` (NULL: absent, then present = 0) into l; `list` is borrowed until
 * pw_tagpat_list_free. Returns 0 or PW_ENOMEM. */
int pw_tagpat_list_init(pw_tagpat_list_t *l, const char *list);

/* Frees what l owns; accepts a zeroed or freed list. */
void pw_tagpat_list_free(pw_tagpat_list_t *l);

/* 1 if any pattern of l matches s[0..sn), else 0 (also for an absent list). */
int pw_tagpat_list_match(const pw_tagpat_list_t *l, const char *s, size_t sn);

#endif /* PW_TAGPAT_H */
