/* ini.h: a stand-in for inih's header (the API of Debian's libinih 55, whose switches are run-time
 * globals), used by the Windows cross build when the archive does not serve Debian's libinih
 * source package (deploy/windows/build-deps.sh). Our own implementation, in ini.c: only the
 * stream parser that common/config.c calls, with the same contract as inih:
 *
 *   ini_parse_stream(reader, stream, handler, user) reads lines with the fgets-like `reader`
 *   (buffer of ini_max_line bytes) and calls handler(user, section, name, value) for each
 *   "name = value" or "name: value" line (both sides trimmed; section "" before any [section]).
 *   Returns 0, the line number of the first error (a line that is neither a comment, a section
 *   header nor a name/value pair, or a handler returning 0), or -2 when out of memory.
 */
#ifndef INI_H
#define INI_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*ini_handler)(void *user, const char *section, const char *name, const char *value);
typedef char *(*ini_reader)(char *str, int num, void *stream);

int ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user);

/* Switches, with inih's defaults. */
extern bool ini_allow_multiline;          /* indented line continues the previous value (1) */
extern bool ini_allow_bom;                /* skip a UTF-8 BOM on line 1 (1) */
extern char *ini_start_comment_prefixes;  /* ";#" */
extern bool ini_allow_inline_comments;    /* (1) */
extern char *ini_inline_comment_prefixes; /* ";": must follow whitespace */
extern int ini_max_line;                  /* buffer size incl. CR, LF and NUL (200) */
extern bool ini_stop_on_first_error;      /* (0) */
extern bool ini_allow_no_value;           /* "name" alone calls the handler with NULL (0) */

#ifdef __cplusplus
}
#endif

#endif /* INI_H */
