/* term_win.c: the terminal of `poolwatch top` in a Windows console (term.h): the alternate
 * screen buffer and frames as virtual terminal sequences (term_vt.c), keys read with
 * ReadConsoleInput. Needs a console with virtual terminal processing (Windows 10 1511 and
 * later, Windows Terminal): pw_term_open says so when SetConsoleMode refuses it. */
#ifndef _WIN32
#error "term_win.c is for Windows builds only"
#endif
#include "term.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <io.h>

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#ifndef ENABLE_VIRTUAL_TERMINAL_PROCESSING
#define ENABLE_VIRTUAL_TERMINAL_PROCESSING 0x0004
#endif

static struct {
    HANDLE in, out;
    DWORD in_mode, out_mode; /* as found, restored by pw_term_close */
} term;

static void out_str(const char *s, size_t n)
{
    DWORD w;
    while (n > 0 && WriteConsoleA(term.out, s, (DWORD)n, &w, NULL) && w > 0) {
        s += w;
        n -= w;
    }
}

int pw_term_is_tty(void)
{
    DWORD m;
    return GetConsoleMode(GetStdHandle(STD_INPUT_HANDLE), &m) &&
           GetConsoleMode(GetStdHandle(STD_OUTPUT_HANDLE), &m);
}

int pw_term_open(void)
{
    term.in = GetStdHandle(STD_INPUT_HANDLE);
    term.out = GetStdHandle(STD_OUTPUT_HANDLE);
    if (!GetConsoleMode(term.in, &term.in_mode) || !GetConsoleMode(term.out, &term.out_mode))
        return PW_EIO;
    if (!SetConsoleMode(term.out, term.out_mode | ENABLE_PROCESSED_OUTPUT |
                                      ENABLE_VIRTUAL_TERMINAL_PROCESSING))
        return PW_EIO;
    /* Keys one at a time, no echo; Ctrl+C still ends the program. */
    SetConsoleMode(term.in, ENABLE_PROCESSED_INPUT | ENABLE_WINDOW_INPUT);
    static const char enter[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"; /* alternate screen */
    out_str(enter, sizeof(enter) - 1);
    return 0;
}

void pw_term_size(int *cols, int *rows)
{
    CONSOLE_SCREEN_BUFFER_INFO bi;
    if (GetConsoleScreenBufferInfo(term.out, &bi)) {
        *cols = bi.srWindow.Right - bi.srWindow.Left + 1;
        *rows = bi.srWindow.Bottom - bi.srWindow.Top + 1;
    } else {
        *cols = 80;
        *rows = 25;
    }
}

void pw_term_draw(const pw_top_lines_t *l)
{
    int cols, rows;
    pw_term_size(&cols, &rows);
    pw_buf_t b;
    pw_buf_init(&b, 4u << 20);
    if (pw_term_vt_frame(l, cols, rows, &b) == 0)
        out_str((const char *)b.data, b.len); /* one write: no flicker */
    pw_buf_close(&b);
}

int pw_term_key(int timeout_ms)
{
    ULONGLONG end = GetTickCount64() + (ULONGLONG)(timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        ULONGLONG now = GetTickCount64();
        DWORD wait = timeout_ms < 0 ? INFINITE : now >= end ? 0 : (DWORD)(end - now);
        if (WaitForSingleObject(term.in, wait) != WAIT_OBJECT_0)
            return PW_TERM_KEY_NONE;
        INPUT_RECORD r;
        DWORD got = 0;
        if (!ReadConsoleInputA(term.in, &r, 1, &got) || got == 0)
            return PW_TERM_KEY_NONE;
        /* Key presses with a character; releases, arrows, resizes and the mouse are skipped
         * (a resize shows at the next frame, which reads the size again). */
        if (r.EventType == KEY_EVENT && r.Event.KeyEvent.bKeyDown &&
            r.Event.KeyEvent.uChar.AsciiChar != 0)
            return (unsigned char)r.Event.KeyEvent.uChar.AsciiChar;
    }
}

void pw_term_prompt(const char *label, char *buf, size_t size)
{
    int cols, rows;
    pw_term_size(&cols, &rows);
    char esc[64];
    snprintf(esc, sizeof(esc), "\x1b[%d;1H\x1b[K\x1b[1m", rows);
    out_str(esc, strlen(esc));
    out_str(label, strlen(label));
    out_str("\x1b[0m\x1b[?25h", 10);
    SetConsoleMode(term.in, ENABLE_PROCESSED_INPUT | ENABLE_LINE_INPUT | ENABLE_ECHO_INPUT);
    FlushConsoleInputBuffer(term.in);
    char tmp[256];
    DWORD got = 0;
    if (!ReadConsoleA(term.in, tmp, sizeof(tmp) - 1, &got, NULL))
        got = 0;
    while (got > 0 && (tmp[got - 1] == '\n' || tmp[got - 1] == '\r'))
        got--;
    tmp[got] = '\0';
    SetConsoleMode(term.in, ENABLE_PROCESSED_INPUT | ENABLE_WINDOW_INPUT);
    out_str("\x1b[?25l", 6);
    snprintf(buf, size, "%s", tmp);
}

void pw_term_close(void)
{
    static const char leave[] = "\x1b[0m\x1b[?25h\x1b[?1049l";
    out_str(leave, sizeof(leave) - 1);
    SetConsoleMode(term.out, term.out_mode);
    SetConsoleMode(term.in, term.in_mode);
}

int pw_term_rows(int fd)
{
    CONSOLE_SCREEN_BUFFER_INFO bi;
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    if (h != INVALID_HANDLE_VALUE && GetConsoleScreenBufferInfo(h, &bi) &&
        bi.srWindow.Bottom >= bi.srWindow.Top)
        return bi.srWindow.Bottom - bi.srWindow.Top + 1;
    const char *l = getenv("LINES");
    int n = l ? atoi(l) : 0;
    return n > 0 ? n : 24;
}
