/* poolmon_layouts.h: writes a pool table as the screens of saved poolmon captures look in the
 * public layouts (tests/fixtures/SOURCES.md): poolmon of XP/2003, Windows 2000 with its dashed
 * separator, a markdown paste, the wide x64 `-n` log, `/g` with its Mapped_Driver column, no
 * leading spaces after an echoed prompt, a web copy with collapsed spaces, tabs, UTF-16LE with
 * a BOM, and screens stamped by a capture script. The labelled suite renders its captures
 * through these so the product is judged on the layouts captures come in, not on one.
 *
 * Usage: for each screen, pw_gen_layout_screen(...) appends to a growing buffer; at the end
 * pw_gen_layout_finish(...) converts the whole text when the layout is UTF-16. */
#ifndef PW_POOLMON_LAYOUTS_H
#define PW_POOLMON_LAYOUTS_H

#include <stddef.h>

#include "sample.h"

#define PW_GEN_LAYOUTS 10

/* The layout's short name ("xp", "w2k-dashed", ...); "?" out of range. */
const char *pw_gen_layout_name(int layout);

/* Whether the layout writes the Memory/Commit header (pool totals, RAM and commit): 1, or 0
 * when it has none and the parser's totals are the sums of the screen's rows. */
int pw_gen_layout_has_totals(int layout);

/* Whether the layout stamps each screen with its time (a capture script's date line): 1 or 0. */
int pw_gen_layout_has_time(int layout);

/* Appends sample `s` as screen number `index` (0-based; some layouts write a prompt before the
 * first) of a capture in layout `layout` (0 .. PW_GEN_LAYOUTS - 1) to the NUL-terminated
 * buffer *out of *len bytes and *cap allocated (realloc'ed, the caller frees; start with NULL,
 * 0, 0). Lines end in CRLF when `crlf` (UTF-16 layouts always). Header values are s's totals
 * in KiB (bytes / 1024, rounded down). Returns 0, PW_EINVAL (layout out of range) or PW_ENOMEM. */
int pw_gen_layout_screen(const pw_sample_t *s, int layout, size_t index, int crlf, char **out,
                         size_t *len, size_t *cap);

/* Ends a capture of layout `layout`: UTF-16 layouts get their BOM and are converted from the
 * 8-bit text in place (*out reallocated, *len doubled plus 2). Returns 0 or PW_ENOMEM. */
int pw_gen_layout_finish(int layout, char **out, size_t *len, size_t *cap);

/* A console's screen of poolmon sorted by bytes (`/b`): the `k` rows of `s` with the most bytes,
 * most first (ties by tag, then pool), with s's time and totals, into `out` (initialised; reset
 * first). A window of k rows shows only those: a tag drops out of view and comes back as its
 * bytes move past others'. Returns 0 or PW_ENOMEM. Not reentrant (qsort without an argument). */
int pw_gen_view_top_bytes(const pw_sample_t *s, size_t k, pw_sample_t *out);

#endif
