/* term_vt.c: frames of `poolwatch top` as virtual terminal sequences (term.h), the Windows
 * console's way to draw (SetConsoleMode ENABLE_VIRTUAL_TERMINAL_PROCESSING; Microsoft "Console
 * Virtual Terminal Sequences"). Portable, so the native tests check the bytes too. */
#include "term.h"

#include <stdio.h>
#include <string.h>

static int put(pw_buf_t *out, const char *s)
{
    return pw_buf_append(out, s, strlen(s));
}

int pw_term_vt_frame(const pw_top_lines_t *l, int cols, int rows, pw_buf_t *out)
{
    char esc[32];
    size_t shown = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < l->n && (int)i < rows; i++, shown++) {
        snprintf(esc, sizeof(esc), "\x1b[%zu;1H", i + 1);
        rc = put(out, esc);
        if (rc == 0 && l->attr[i] == PW_TOP_ATTR_HEADER)
            rc = put(out, "\x1b[7m");
        else if (rc == 0 && l->attr[i] == PW_TOP_ATTR_HIGHLIGHT)
            rc = put(out, "\x1b[1m");
        size_t len = strlen(l->text[i]);
        if (cols >= 0 && len > (size_t)cols)
            len = (size_t)cols;
        if (rc == 0)
            rc = pw_buf_append(out, l->text[i], len);
        if (rc == 0)
            rc = put(out, "\x1b[0m\x1b[K");
    }
    if (rc == 0 && (int)shown < rows) {
        snprintf(esc, sizeof(esc), "\x1b[%zu;1H\x1b[J", shown + 1);
        rc = put(out, esc);
    }
    return rc;
}
