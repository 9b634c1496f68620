/* proc_text.c: the line reader and numbers of the /proc text parsers (see proc_text.h). */
#include "proc_text.h"

#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

void pw_proc_lines_init(pw_proc_lines_t *it, const char *data, size_t len, size_t max_line,
                        const char *what)
{
    it->base = it->p = data;
    it->end = data + len;
    it->max_line = max_line;
    it->line = 0;
    it->what = what;
}

int pw_proc_lines_next(pw_proc_lines_t *it, const char **s, const char **e, uint64_t *off,
                       pw_diag_t *d)
{
    while (it->p < it->end) {
        const char *p = it->p;
        const char *nl = memchr(p, '\n', (size_t)(it->end - p));
        const char *le = nl ? nl : it->end;
        it->line++;
        it->p = nl ? nl + 1 : it->end;
        *off = (uint64_t)(p - it->base);
        if ((size_t)(le - p) > it->max_line)
            return pw_diag_set(d, PW_ETOOBIG, it->line, *off, "",
                               "line %u is longer than %zu bytes", it->line, it->max_line);
        for (const char *q = p; q < le; q++) {
            unsigned char c = (unsigned char)*q;
            if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
                return pw_diag_set(d, PW_EPARSE, it->line, (uint64_t)(q - it->base), "",
                                   "line %u: control byte 0x%02x: not %s text", it->line, c,
                                   it->what);
        }
        while (p < le && is_blank(*p))
            p++;
        while (le > p && is_blank(le[-1]))
            le--;
        if (p == le)
            continue;
        *s = p;
        *e = le;
        return 1;
    }
    return 0;
}

int pw_proc_text_u64(const char *p, const char *e, uint64_t *out)
{
    if (p == e)
        return -1;
    uint64_t v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return PW_ERANGE;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

uint64_t pw_proc_text_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
