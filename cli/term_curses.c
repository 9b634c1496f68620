/* term_curses.c: the terminal of `poolwatch top` with ncurses (term.h), on POSIX. */
#include "term.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

int pw_term_is_tty(void)
{
    return isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
}

int pw_term_open(void)
{
    if (initscr() == NULL)
        return PW_EIO;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    return 0;
}

int pw_term_rows(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
        return ws.ws_row;
    const char *l = getenv("LINES");
    int n = l ? atoi(l) : 0;
    return n > 0 ? n : 24;
}

void pw_term_size(int *cols, int *rows)
{
    *cols = COLS;
    *rows = LINES;
}

void pw_term_draw(const pw_top_lines_t *l)
{
    erase();
    for (size_t i = 0; i < l->n && (int)i < LINES; i++) {
        int at = l->attr[i] == PW_TOP_ATTR_HEADER      ? A_REVERSE
                 : l->attr[i] == PW_TOP_ATTR_HIGHLIGHT ? A_BOLD
                                                       : A_NORMAL;
        attrset(at);
        mvaddnstr((int)i, 0, l->text[i], COLS);
    }
    attrset(A_NORMAL);
    refresh();
}

int pw_term_key(int timeout_ms)
{
    timeout(timeout_ms);
    int ch = getch();
    return ch == ERR ? PW_TERM_KEY_NONE : ch;
}

void pw_term_prompt(const char *label, char *buf, size_t size)
{
    char tmp[256] = "";
    move(LINES - 1, 0);
    clrtoeol();
    attrset(A_BOLD);
    addstr(label);
    attrset(A_NORMAL);
    echo();
    curs_set(1);
    timeout(-1);
    getnstr(tmp, (int)sizeof(tmp) - 1);
    noecho();
    curs_set(0);
    snprintf(buf, size, "%s", tmp);
}

void pw_term_close(void)
{
    endwin();
}
