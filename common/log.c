#include "log.h"
#include "clock.h"
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int pw_log_level = PW_LOG_LVL_INFO;

static pw_log_sink_cb sink_cb;
static void *sink_arg;
static FILE *log_file; /* NULL: stderr */

void pw_log_set_file(FILE *f)
{
    log_file = f;
}

FILE *pw_log_file(void)
{
    return log_file != NULL ? log_file : stderr;
}
static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

void pw_log_set_sink(pw_log_sink_cb cb, void *arg)
{
    sink_cb = cb;
    sink_arg = arg;
}

char *pw_log_clean(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src != NULL && src[i] != '\0' && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[i] = '\0';
    return dst;
}

int pw_log_parse_level(const char *name)
{
    for (int i = 0; i < 5; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    if (strcasecmp(name, "warning") == 0)
        return PW_LOG_LVL_WARN;
    return PW_EINVAL;
}

static void vlog(int level, const char *module, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
    if (sink_cb != NULL) {
        sink_cb(level, module, line, sink_arg);
        return;
    }
    struct tm tm;
    char when[32];
    uint64_t now_ms = pw_clock_wall_ms(); /* clock.h: the same on POSIX and Windows */
    pw_clock_gmtime((int64_t)(now_ms / 1000u), &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    if (level < 0 || level > 4)
        level = PW_LOG_LVL_INFO;
    fprintf(pw_log_file(), "%s.%03ldZ %-5s [%s] %s\n", when, (long)(now_ms % 1000u),
            level_names[level], module, line);
}

void pw__log(int level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, module, fmt, ap);
    va_end(ap);
}

void pw_complain(pw_complaint_t *c, uint64_t now_ms, uint64_t base_ms, uint64_t cap_ms, int level,
                 const char *module, const char *fmt, ...)
{
    if (c->interval_ms != 0 && now_ms - c->last_ms < c->interval_ms) {
        c->suppressed++;
        return;
    }
    if (c->interval_ms == 0)
        c->interval_ms = base_ms ? base_ms : 1;
    else if (c->interval_ms < cap_ms / 2)
        c->interval_ms *= 2;
    else
        c->interval_ms = cap_ms;
    if (level <= pw_log_level) {
        char msg[900];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (c->suppressed)
            pw__log(level, module, "%s (repeated %llu times)", msg,
                    (unsigned long long)c->suppressed);
        else
            pw__log(level, module, "%s", msg);
    }
    c->last_ms = now_ms;
    c->suppressed = 0;
}

void pw_complain_release(pw_complaint_t *c, const char *module, const char *what)
{
    if (c->interval_ms == 0)
        return;
    PW_LOG_INFO(module, "%s recovered", what);
    memset(c, 0, sizeof(*c));
}
