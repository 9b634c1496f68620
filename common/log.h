/* log.h: levelled, module-prefixed log lines (Redis serverLog, fluent-bit flb_plg_*) and a
 * rate-limited "complainer" for conditions that repeat every sample (collectd c_complain).
 * Modules in common/ do not log on error paths: they return a code and a pw_diag_t, and the
 * binary's wiring logs once. */
#ifndef PW_LOG_H
#define PW_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* printf format checking: on mingw-w64, GCC's "printf" means Microsoft's msvcrt dialect (no %zu);
 * poolwatch's Windows build uses mingw's C99 printf (__USE_MINGW_ANSI_STDIO, CMakeLists.txt),
 * which is "gnu_printf". */
#ifndef PW_PRINTF_FORMAT
#ifdef __MINGW32__
#define PW_PRINTF_FORMAT gnu_printf
#else
#define PW_PRINTF_FORMAT printf
#endif
#endif

typedef enum {
    PW_LOG_LVL_ERROR = 0,
    PW_LOG_LVL_WARN = 1,
    PW_LOG_LVL_INFO = 2,
    PW_LOG_LVL_DEBUG = 3,
    PW_LOG_LVL_TRACE = 4
} pw_log_level_t;

/* Current threshold; lines above it cost one comparison and evaluate no argument. */
extern int pw_log_level;

/* Sink: receives one formatted line without a trailing newline. Default writes
 * "2026-11-29T14:00:00.123Z LEVEL [module] message" to stderr. NULL restores the default. */
typedef void (*pw_log_sink_cb)(int level, const char *module, const char *line, void *arg);
void pw_log_set_sink(pw_log_sink_cb cb, void *arg);

/* Where the default sink and the daemons' start-up messages (daemon.h) go: stderr unless set.
 * A Windows service has no standard handles, and msvcrt cannot reopen stderr onto a file then
 * (freopen fails): the service's log file is given here instead (service_win.c). `f` stays
 * the caller's; NULL restores stderr. */
void pw_log_set_file(FILE *f);
FILE *pw_log_file(void);

/* Copies the NUL-terminated `src` (NULL: "") into dst (cap bytes, cap >= 1; always
 * terminated, cut to fit) with every control byte (below 0x20, and 0x7f) replaced by '?': text
 * from a peer (an agent's Hello) then cannot forge log lines (CR/LF) or drive a terminal.
 * Returns dst. */
char *pw_log_clean(char *dst, size_t cap, const char *src);

/* Parses "error|warn|info|debug|trace" into a level; returns the level or PW_EINVAL. */
int pw_log_parse_level(const char *name);

void pw__log(int level, const char *module, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 3, 4)));

#define PW_LOG(lvl, mod, ...)                                                                      \
    do {                                                                                           \
        if ((lvl) <= pw_log_level)                                                                 \
            pw__log((lvl), (mod), __VA_ARGS__);                                                    \
    } while (0)
#define PW_LOG_ERROR(mod, ...) PW_LOG(PW_LOG_LVL_ERROR, mod, __VA_ARGS__)
#define PW_LOG_WARN(mod, ...)  PW_LOG(PW_LOG_LVL_WARN, mod, __VA_ARGS__)
#define PW_LOG_INFO(mod, ...)  PW_LOG(PW_LOG_LVL_INFO, mod, __VA_ARGS__)
#define PW_LOG_DEBUG(mod, ...) PW_LOG(PW_LOG_LVL_DEBUG, mod, __VA_ARGS__)

/* A complaint: repeated failures are logged at 1, 2, 4 ... times the base interval, up to a
 * cap; the first success after logs one "recovered" line. Caller-owned, zero-initialise it. */
typedef struct pw_complaint_s {
    uint64_t last_ms;     /* when last logged, ms on the caller's clock */
    uint64_t interval_ms; /* current back-off; 0 = not complaining */
    uint64_t suppressed;  /* repeats not logged since last_ms */
} pw_complaint_t;

/* Logs `fmt` at `level` if the complaint's interval has passed at `now_ms` (ms, any
 * monotonic clock). base_ms/cap_ms: first and largest repeat interval. */
void pw_complain(pw_complaint_t *c, uint64_t now_ms, uint64_t base_ms, uint64_t cap_ms, int level,
                 const char *module, const char *fmt, ...)
    __attribute__((format(PW_PRINTF_FORMAT, 7, 8)));

/* Ends a complaint: logs "`what` recovered" at INFO once if one was active. */
void pw_complain_release(pw_complaint_t *c, const char *module, const char *what);

#endif /* PW_LOG_H */
