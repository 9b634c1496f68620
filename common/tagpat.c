/* tagpat.c: tag patterns (the rule is in tagpat.h). */
#include "tagpat.h"

#include <string.h>

#include "alloc.h"
#include "error.h"

/* `*` any run, `?` one byte, the rest literal; counted strings (no copies per row). A pattern
 * byte equal to the text byte is taken literally before `*` is tried, so a `*` in a tag is
 * matched by a `*` in the pattern as one byte. */
static int glob(const char *p, size_t pn, const char *s, size_t sn)
{
    size_t pi = 0, si = 0, star = SIZE_MAX, ss = 0;
    while (si < sn) {
        if (pi < pn && (p[pi] == '?' || p[pi] == s[si])) {
            pi++;
            si++;
        } else if (pi < pn && p[pi] == '*') {
            star = pi++;
            ss = si;
        } else if (star != SIZE_MAX) {
            pi = star + 1;
            si = ++ss;
        } else {
            return 0;
        }
    }
    while (pi < pn && p[pi] == '*')
        pi++;
    return pi == pn;
}

int pw_tagpat_match(const char *p, size_t pn, const char *s, size_t sn)
{
    if (pn == 0)
        return 0;
    if (glob(p, pn, s, sn))
        return 1;
    size_t tn = sn;
    while (tn > 0 && s[tn - 1] == ' ')
        tn--;
    return tn > 0 && tn < sn && glob(p, pn, s, tn);
}

int pw_tagpat_list_match_str(const char *list, const char *s, size_t sn)
{
    for (const char *p = list; p != NULL && *p;) {
        size_t n = strcspn(p, ",");
        if (pw_tagpat_match(p, n, s, sn))
            return 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

int pw_tagpat_list_init(pw_tagpat_list_t *l, const char *list)
{
    memset(l, 0, sizeof(*l));
    if (list == NULL)
        return 0;
    l->present = 1;
    size_t cap = 1;
    for (const char *c = list; (c = strchr(c, ',')) != NULL; c++)
        cap++;
    if ((l->v = pw_malloc(cap * sizeof(*l->v))) == NULL)
        return PW_ENOMEM;
    for (const char *p = list;;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n > 0) {
            unsigned char c0 = (unsigned char)p[0];
            l->v[l->n++] = (pw_tagpat_pat_t){p, n};
            if (c0 == '*' || c0 == '?')
                l->any_first = 1;
            l->first[c0 >> 6] |= 1ull << (c0 & 63);
        }
        if (c == NULL)
            return 0;
        p = c + 1;
    }
}

void pw_tagpat_list_free(pw_tagpat_list_t *l)
{
    if (l == NULL)
        return;
    pw_free(l->v);
    memset(l, 0, sizeof(*l));
}

int pw_tagpat_list_match(const pw_tagpat_list_t *l, const char *s, size_t sn)
{
    if (!l->any_first) { /* every pattern starts with a literal byte: s[0] must be one */
        unsigned char c0 = sn ? (unsigned char)s[0] : 0;
        if (sn == 0 || !(l->first[c0 >> 6] >> (c0 & 63) & 1))
            return 0;
    }
    for (size_t i = 0; i < l->n; i++) {
        const pw_tagpat_pat_t *p = &l->v[i];
        /* A literal first byte that differs: no match (what the matcher would find). */
        if (p->p[0] != '*' && p->p[0] != '?' && (sn == 0 || p->p[0] != s[0]))
            continue;
        if (pw_tagpat_match(p->p, p->n, s, sn))
            return 1;
    }
    return 0;
}
