/* term.h: the terminal under `poolwatch top`, the one platform-specific part of it
 * (cmd_top.c keeps the model, keys and layout). term_curses.c: ncurses on POSIX; term_win.c:
 * the Windows console with virtual terminal sequences, its frames made by term_vt.c (portable,
 * tested on both). Same screen on both: the header reversed, changed rows bold. */
#ifndef PW_CLI_TERM_H
#define PW_CLI_TERM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cli.h"

#define PW_TERM_KEY_NONE (-1) /* pw_term_key: no key within the timeout */

/* 1 when both stdin and stdout are a terminal (a console on Windows), else 0. */
int pw_term_is_tty(void);

/* Takes the screen: keys one at a time without echo, cursor hidden. Returns 0, or PW_EIO when
 * the terminal cannot be set up (then nothing was changed). */
int pw_term_open(void);

/* Rows of the terminal that fd writes to (its window), else $LINES, else 24. Needs no
 * pw_term_open (for commands that print a screenful, like `series`). */
int pw_term_rows(int fd);

/* The screen's size in character cells. */
void pw_term_size(int *cols, int *rows);

/* Shows `l` from the top-left corner (lines past the screen's height left out, each cut at its
 * width). */
void pw_term_draw(const pw_top_lines_t *l);

/* Waits up to timeout_ms for a key; returns its character (ASCII) or PW_TERM_KEY_NONE. */
int pw_term_key(int timeout_ms);

/* Reads one line on the bottom row after `label` (echoed, cursor shown) into buf (NUL-terminated,
 * without the line end), then takes the screen back. */
void pw_term_prompt(const char *label, char *buf, size_t size);

/* Gives the screen back as it was. */
void pw_term_close(void);

/* The bytes of one frame for a virtual-terminal console (term_win.c; portable so that it is
 * tested everywhere): for each of the first `rows` lines of `l`, the cursor to its row
 * (ESC[<row>;1H), its attribute (ESC[7m header, ESC[1m highlight), the text cut at `cols`
 * bytes, ESC[0m, and the rest of the row erased (ESC[K); then, when the lines do not fill the
 * screen, the cursor to the next row and the rest of the screen erased (ESC[J). No line end is
 * written, so the bottom row never scrolls the screen. Appends to `out`; returns 0 or
 * PW_ENOMEM / PW_ETOOBIG from the buffer. */
int pw_term_vt_frame(const pw_top_lines_t *l, int cols, int rows, pw_buf_t *out);

#endif /* PW_CLI_TERM_H */
