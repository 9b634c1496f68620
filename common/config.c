/* config.c: the generic option-table routine over inih (see config.h for the contract).
 *
 * inih is fed through ini_parse_stream with our own line reader rather than
 * ini_parse_string/ini_parse_file: Debian builds libinih without INI_HANDLER_LINENO, so the
 * handler is not told the line, but the reader is called once per line and can count them.
 * Reading the whole input first also lets us reject NUL bytes, control bytes, over-long lines
 * and unknown (even empty) sections with their exact line before inih sees anything. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "alloc.h"

#define WHY_MAX 200

typedef union value_u {
    char *s;
    bool b;
    int64_t i;
    uint64_t u;
    int e;
    pw_config_list_t l;
} value_t;

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                              */
/* ------------------------------------------------------------------------------------------ */

static void *field_of(const pw_config_opt_t *row, void *cfg)
{
    return (char *)cfg + row->offset;
}

static const void *cfield_of(const pw_config_opt_t *row, const void *cfg)
{
    return (const char *)cfg + row->offset;
}

static int is_blank(int c)
{
    return c == ' ' || c == '\t';
}

static int valid_ident(const char *s)
{
    if (s == NULL || *s == '\0')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return 0;
    return 1;
}

/* Compares identifier `a` (NUL-terminated) with the first `n` bytes of `b`, '-' equal to
 * '_' so that `--spool-max` and `spool_max` name the same option. */
static int ident_eq(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    for (; i < n && a[i] != '\0'; i++) {
        char x = a[i] == '-' ? '_' : a[i];
        char y = b[i] == '-' ? '_' : b[i];
        if (x != y)
            return 0;
    }
    return i == n && a[i] == '\0';
}

static size_t table_len(const pw_config_opt_t *tab)
{
    size_t n = 0;
    while (tab[n].name != NULL)
        n++;
    return n;
}

static int has_bounds(const pw_config_opt_t *row)
{
    return row->min != 0 || row->max != 0;
}

/* Finds the row for `key` ("section.name" or a unique "name", klen bytes). *ambiguous is set
 * when a bare name exists in several sections. */
static const pw_config_opt_t *find_key(const pw_config_opt_t *tab, const char *key, size_t klen,
                                       int *ambiguous)
{
    const char *dot = memchr(key, '.', klen);
    const pw_config_opt_t *found = NULL;
    *ambiguous = 0;
    for (const pw_config_opt_t *r = tab; r->name != NULL; r++) {
        if (dot != NULL) {
            if (ident_eq(r->section, key, (size_t)(dot - key)) &&
                ident_eq(r->name, dot + 1, klen - (size_t)(dot - key) - 1))
                return r;
        } else if (ident_eq(r->name, key, klen)) {
            if (found != NULL) {
                *ambiguous = 1;
                return NULL;
            }
            found = r;
        }
    }
    return found;
}

static int section_known(const pw_config_opt_t *tab, const char *sec, size_t n)
{
    for (const pw_config_opt_t *r = tab; r->name != NULL; r++)
        if (strlen(r->section) == n && memcmp(r->section, sec, n) == 0)
            return 1;
    return 0;
}

static const char *type_name(pw_config_type_t t)
{
    switch (t) {
    case PW_CONFIG_STRING:
        return "string";
    case PW_CONFIG_BOOL:
        return "bool";
    case PW_CONFIG_INT:
        return "integer";
    case PW_CONFIG_DURATION:
        return "duration";
    case PW_CONFIG_SIZE:
        return "size";
    case PW_CONFIG_ENUM:
        return "enum";
    case PW_CONFIG_LIST:
        return "list";
    }
    return "?";
}

/* ------------------------------------------------------------------------------------------ */
/* Numbers, durations, sizes                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Reads decimal digits at *p into *v. Returns 0, PW_EINVAL (no digit) or PW_ERANGE. */
static int read_u64(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    if (!isdigit((unsigned char)*s))
        return PW_EINVAL;
    for (; isdigit((unsigned char)*s); s++) {
        unsigned dgt = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - dgt) / 10)
            return PW_ERANGE;
        x = x * 10 + dgt;
    }
    *p = s;
    *v = x;
    return 0;
}

static int parse_int(const char *text, int64_t *out, char *why)
{
    const char *p = text;
    int neg = 0;
    uint64_t mag;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    int r = read_u64(&p, &mag);
    if (r == PW_ERANGE || (r == 0 && mag > (uint64_t)INT64_MAX + (uint64_t)neg)) {
        snprintf(why, WHY_MAX, "'%s' does not fit in a 64-bit integer", text);
        return PW_ECONFIG;
    }
    if (r != 0 || *p != '\0') {
        snprintf(why, WHY_MAX, "'%s' is not an integer", text);
        return PW_ECONFIG;
    }
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

typedef struct unit_s {
    const char *name;
    uint64_t mult;
} unit_t;

static const unit_t duration_units[] = {
    {"d", 86400000ull}, {"h", 3600000ull}, {"m", 60000ull}, {"s", 1000ull}, {"ms", 1ull},
};

static const unit_t size_units[] = {
    {"TiB", 1ull << 40}, {"GiB", 1ull << 30},      {"MiB", 1ull << 20},
    {"KiB", 1ull << 10}, {"TB", 1000000000000ull}, {"GB", 1000000000ull},
    {"MB", 1000000ull},  {"kB", 1000ull},          {"B", 1ull},
};

static void skip_blanks(const char **p)
{
    while (is_blank(**p))
        (*p)++;
}

static int parse_duration(const char *text, uint64_t *ms, char *why)
{
    const char *p = text;
    uint64_t total = 0;
    int terms = 0;
    skip_blanks(&p);
    if (strcmp(p, "0") == 0) {
        *ms = 0;
        return 0;
    }
    while (*p != '\0') {
        uint64_t n;
        int r = read_u64(&p, &n);
        if (r == PW_ERANGE)
            goto range;
        if (r != 0) {
            snprintf(why, WHY_MAX, "'%s' is not a duration (e.g. 250ms, 10s, 15m, 2h, 7d)", text);
            return PW_EINVAL;
        }
        if (*p == '.' || *p == ',') {
            snprintf(why, WHY_MAX, "'%s': fractions are not supported (write 1h30m, 1500ms)", text);
            return PW_EINVAL;
        }
        skip_blanks(&p);
        const char *u = p;
        while (isalpha((unsigned char)*p))
            p++;
        size_t ulen = (size_t)(p - u);
        const unit_t *unit = NULL;
        for (size_t k = 0; k < sizeof(duration_units) / sizeof(duration_units[0]); k++)
            if (strlen(duration_units[k].name) == ulen &&
                memcmp(duration_units[k].name, u, ulen) == 0)
                unit = &duration_units[k];
        if (unit == NULL && ulen == 0) {
            /* A bare number is ambiguous here (the CLI reads seconds, Windows tools ms). */
            snprintf(why, WHY_MAX, "'%s' needs a unit: e.g. '%.*ss' or '%.*sms' (ms, s, m, h, d)",
                     text, (int)(u - text), text, (int)(u - text), text);
            return PW_EINVAL;
        }
        if (unit == NULL) {
            snprintf(why, WHY_MAX, "'%s': unknown unit '%.*s' (use ms, s, m, h or d)", text,
                     (int)ulen, u);
            return PW_EINVAL;
        }
        if (n > UINT64_MAX / unit->mult || total > UINT64_MAX - n * unit->mult)
            goto range;
        total += n * unit->mult;
        terms++;
        skip_blanks(&p);
    }
    if (terms == 0) {
        snprintf(why, WHY_MAX, "empty duration");
        return PW_EINVAL;
    }
    *ms = total;
    return 0;
range:
    snprintf(why, WHY_MAX, "'%.60s' is too large (more than 2^64 ms)", text);
    return PW_ERANGE;
}

/* A size. `pool`: kB, MB, GB and TB count in powers of 1024, as Windows and Microsoft's
 * tables write pool limits ("128 MB" nonpaged is 134,217,728 bytes; PW_CONFIG_POOL_UNITS). */
static int parse_size(const char *text, uint64_t *bytes, char *why, int pool)
{
    const char *p = text;
    uint64_t n;
    skip_blanks(&p);
    int r = read_u64(&p, &n);
    if (r == PW_ERANGE)
        goto range;
    if (r != 0) {
        snprintf(why, WHY_MAX, "'%s' is not a size (e.g. 4096, 512KiB, 256MiB, 1GB)", text);
        return PW_EINVAL;
    }
    if (*p == '.' || *p == ',') {
        snprintf(why, WHY_MAX, "'%s': fractions are not supported (write 1536MiB)", text);
        return PW_EINVAL;
    }
    skip_blanks(&p);
    const char *u = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t ulen = (size_t)(p - u);
    skip_blanks(&p);
    uint64_t mult = 1;
    if (ulen > 0) {
        const unit_t *unit = NULL;
        for (size_t k = 0; k < sizeof(size_units) / sizeof(size_units[0]); k++)
            if (strlen(size_units[k].name) == ulen && strncasecmp(size_units[k].name, u, ulen) == 0)
                unit = &size_units[k];
        if (unit == NULL && ulen == 1 && strchr("kKmMgGtT", *u) != NULL) {
            snprintf(why, WHY_MAX,
                     "'%s': ambiguous unit '%c' (write %ciB for 1024s or %cB for 1000s)", text, *u,
                     toupper((unsigned char)*u),
                     *u == 'k' || *u == 'K' ? 'k' : toupper((unsigned char)*u));
            return PW_EINVAL;
        }
        if (unit == NULL) {
            snprintf(why, WHY_MAX,
                     "'%s': unknown unit '%.*s' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)", text,
                     (int)ulen, u);
            return PW_EINVAL;
        }
        mult = unit->mult;
        if (pool)
            for (uint64_t dec = 1000, bin = 1024; dec <= 1000000000000ull; dec *= 1000, bin *= 1024)
                if (mult == dec)
                    mult = bin;
    }
    if (*p != '\0') {
        snprintf(why, WHY_MAX, "'%s': unexpected text after the size", text);
        return PW_EINVAL;
    }
    if (n > UINT64_MAX / mult)
        goto range;
    *bytes = n * mult;
    return 0;
range:
    snprintf(why, WHY_MAX, "'%.60s' is too large (more than 2^64 bytes)", text);
    return PW_ERANGE;
}

int pw_config_parse_duration_ms(const char *text, uint64_t *ms)
{
    char why[WHY_MAX];
    uint64_t v;
    if (text == NULL || ms == NULL)
        return PW_EINVAL;
    int r = parse_duration(text, &v, why);
    if (r == 0)
        *ms = v;
    return r;
}

static int parse_size_into(const char *text, uint64_t *bytes, int pool)
{
    char why[WHY_MAX];
    uint64_t v;
    if (text == NULL || bytes == NULL)
        return PW_EINVAL;
    int r = parse_size(text, &v, why, pool);
    if (r == 0)
        *bytes = v;
    return r;
}

int pw_config_parse_size(const char *text, uint64_t *bytes)
{
    return parse_size_into(text, bytes, 0);
}

int pw_config_parse_pool_size(const char *text, uint64_t *bytes)
{
    return parse_size_into(text, bytes, 1);
}

/* Canonical text: the largest unit that divides exactly (durations), or the unit giving the
 * smallest exact number (sizes, binary first on a tie). */
static int format_duration(uint64_t ms, char *buf, size_t size)
{
    if (ms == 0)
        return snprintf(buf, size, "0s");
    for (size_t k = 0; k < sizeof(duration_units) / sizeof(duration_units[0]); k++)
        if (ms % duration_units[k].mult == 0)
            return snprintf(buf, size, "%" PRIu64 "%s", ms / duration_units[k].mult,
                            duration_units[k].name);
    return snprintf(buf, size, "%" PRIu64 "ms", ms);
}

static int format_size(uint64_t b, char *buf, size_t size)
{
    const unit_t *best = &size_units[sizeof(size_units) / sizeof(size_units[0]) - 1];
    if (b != 0)
        for (size_t k = 0; k < sizeof(size_units) / sizeof(size_units[0]); k++)
            if (b % size_units[k].mult == 0 && b / size_units[k].mult < b / best->mult)
                best = &size_units[k];
    if (best->mult == 1)
        return snprintf(buf, size, "%" PRIu64, b);
    return snprintf(buf, size, "%" PRIu64 "%s", b / best->mult, best->name);
}

/* ------------------------------------------------------------------------------------------ */
/* Values                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* A whitespace byte followed by ';' starts an inline comment in inih, so such text cannot be
 * written to a file and read back: refuse it everywhere. */
static int has_comment_start(const char *s, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (s[i] == ';' && isspace((unsigned char)s[i - 1]))
            return 1;
    return 0;
}

static int is_relative_path(const char *s)
{
    if (s[0] == '/' || s[0] == '\\')
        return 0;
    if (isalpha((unsigned char)s[0]) && s[1] == ':') /* Windows drive letter */
        return 0;
    return 1;
}

static void free_value(pw_config_type_t type, value_t *v)
{
    if (type == PW_CONFIG_STRING) {
        pw_free(v->s);
        v->s = NULL;
    } else if (type == PW_CONFIG_LIST) {
        pw_free(v->l.items);
        v->l.items = NULL;
        v->l.n = 0;
    }
}

static int parse_list(const pw_config_opt_t *row, const char *text, value_t *out, char *why)
{
    size_t n = 0, chars = 0;
    const char *p = text;
    if (has_comment_start(text, strlen(text))) {
        snprintf(why, WHY_MAX,
                 "a value cannot contain whitespace followed by ';' (it starts a "
                 "comment in the file)");
        return PW_ECONFIG;
    }
    skip_blanks(&p);
    if (*p != '\0') {
        for (const char *q = p;; q++) {
            const char *start = q;
            while (*q != '\0' && *q != ',')
                q++;
            const char *a = start, *b = q;
            while (a < b && isspace((unsigned char)*a))
                a++;
            while (b > a && isspace((unsigned char)b[-1]))
                b--;
            n++;
            if (a == b) {
                snprintf(why, WHY_MAX, "item %zu of the list is empty", n);
                return PW_ECONFIG;
            }
            if (*a == ';') {
                snprintf(why, WHY_MAX, "item %zu of the list starts with ';'", n);
                return PW_ECONFIG;
            }
            chars += (size_t)(b - a) + 1;
            if (*q == '\0')
                break;
        }
    }
    if (has_bounds(row) && ((int64_t)n < row->min || (int64_t)n > row->max)) {
        snprintf(why, WHY_MAX, "%zu items; expected %" PRId64 " to %" PRId64, n, row->min,
                 row->max);
        return PW_ECONFIG;
    }
    out->l.items = NULL;
    out->l.n = 0;
    if (n == 0)
        return 0;
    /* One block: the pointer array, then the NUL-terminated items. */
    char **items = pw_malloc(n * sizeof(char *) + chars);
    if (items == NULL)
        return PW_ENOMEM;
    char *dst = (char *)(items + n);
    size_t k = 0;
    for (const char *q = p;; q++) {
        const char *start = q;
        while (*q != '\0' && *q != ',')
            q++;
        const char *a = start, *b = q;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        items[k++] = dst;
        memcpy(dst, a, (size_t)(b - a));
        dst += b - a;
        *dst++ = '\0';
        if (*q == '\0')
            break;
    }
    out->l.items = items;
    out->l.n = n;
    return 0;
}

static void format_bound(const pw_config_opt_t *row, int64_t v, char *buf, size_t size)
{
    if (row->type == PW_CONFIG_DURATION)
        format_duration((uint64_t)v, buf, size);
    else if (row->type == PW_CONFIG_SIZE)
        format_size((uint64_t)v, buf, size);
    else
        snprintf(buf, size, "%" PRId64, v);
}

/* Whether `text` is digits alone, blanks around them allowed (a size without its unit). */
static int bare_number(const char *text)
{
    const char *p = text;
    skip_blanks(&p);
    const char *d = p;
    while (*p >= '0' && *p <= '9')
        p++;
    int digits = p > d;
    skip_blanks(&p);
    return digits && *p == '\0';
}

static int out_of_range(const pw_config_opt_t *row, const char *text, char *why)
{
    char lo[32], hi[32];
    format_bound(row, row->min, lo, sizeof(lo));
    format_bound(row, row->max, hi, sizeof(hi));
    snprintf(why, WHY_MAX, "'%.80s' is out of range (%s to %s)", text, lo, hi);
    return PW_ECONFIG;
}

/* Parses `text` for `row` into *out (which then owns any memory). `dir` (may be NULL) is the
 * directory of the file the text came from, for PATH options. Returns 0, PW_ECONFIG with the
 * reason in `why`, or PW_ENOMEM. */
static int parse_value(const pw_config_opt_t *row, const char *text, const char *dir, value_t *out,
                       char *why)
{
    size_t len = strlen(text);
    why[0] = '\0';
    if (len > PW_CONFIG_MAX_LINE) {
        snprintf(why, WHY_MAX, "value longer than %zu bytes", PW_CONFIG_MAX_LINE);
        return PW_ECONFIG;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(why, WHY_MAX, "control character 0x%02x at byte %zu of the value", c, i);
            return PW_ECONFIG;
        }
    }
    switch (row->type) {
    case PW_CONFIG_STRING: {
        const char *s = text;
        size_t n = len;
        if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
            s++;
            n -= 2;
        }
        if (has_comment_start(s, n)) {
            snprintf(why, WHY_MAX,
                     "a value cannot contain whitespace followed by ';' (it "
                     "starts a comment in the file)");
            return PW_ECONFIG;
        }
        if (has_bounds(row) && ((int64_t)n < row->min || (int64_t)n > row->max)) {
            snprintf(why, WHY_MAX, "length %zu is out of range (%" PRId64 " to %" PRId64 ")", n,
                     row->min, row->max);
            return PW_ECONFIG;
        }
        if ((row->flags & PW_CONFIG_PATH) && dir != NULL && n > 0 && is_relative_path(s)) {
            size_t dl = strlen(dir);
            char *p = pw_malloc(dl + 1 + n + 1);
            if (p == NULL)
                return PW_ENOMEM;
            memcpy(p, dir, dl);
            p[dl] = '/';
            memcpy(p + dl + 1, s, n);
            p[dl + 1 + n] = '\0';
            out->s = p;
            return 0;
        }
        out->s = pw_strndup(s, n);
        return out->s == NULL ? PW_ENOMEM : 0;
    }
    case PW_CONFIG_BOOL: {
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};
        for (size_t k = 0; k < 4; k++) {
            if (strcasecmp(text, yes[k]) == 0) {
                out->b = true;
                return 0;
            }
            if (strcasecmp(text, no[k]) == 0) {
                out->b = false;
                return 0;
            }
        }
        snprintf(why, WHY_MAX, "'%.80s' is not a boolean (true/false, yes/no, on/off, 1/0)", text);
        return PW_ECONFIG;
    }
    case PW_CONFIG_INT: {
        int64_t v;
        if (parse_int(text, &v, why) < 0)
            return PW_ECONFIG;
        if (has_bounds(row) && (v < row->min || v > row->max))
            return out_of_range(row, text, why);
        out->i = v;
        return 0;
    }
    case PW_CONFIG_DURATION:
    case PW_CONFIG_SIZE: {
        uint64_t v;
        int r = row->type == PW_CONFIG_DURATION
                    ? parse_duration(text, &v, why)
                    : parse_size(text, &v, why, (row->flags & PW_CONFIG_POOL_UNITS) != 0);
        if (r < 0)
            return PW_ECONFIG;
        if ((row->flags & PW_CONFIG_POOL_UNITS) && v != 0 && bare_number(text)) {
            /* 128 would be 128 bytes, which no pool has: refused, as poolwatch import does */
            snprintf(why, WHY_MAX,
                     "'%.24s': a bare number would be bytes; write the limit with its unit, as "
                     "Windows does: 128MB (= 128MiB), 2GB, or bytes with B; 0 = estimate",
                     text);
            return PW_ECONFIG;
        }
        if (has_bounds(row) && (v < (uint64_t)row->min || v > (uint64_t)row->max))
            return out_of_range(row, text, why);
        out->u = v;
        return 0;
    }
    case PW_CONFIG_ENUM: {
        for (int k = 0; row->words[k] != NULL; k++) {
            if (strcasecmp(text, row->words[k]) == 0) {
                out->e = k;
                return 0;
            }
        }
        int n = snprintf(why, WHY_MAX, "'%.60s' is not one of:", text);
        for (int k = 0; row->words[k] != NULL && n > 0 && n < WHY_MAX; k++)
            n += snprintf(why + n, WHY_MAX - (size_t)n, "%s %s", k ? "," : "", row->words[k]);
        return PW_ECONFIG;
    }
    case PW_CONFIG_LIST:
        return parse_list(row, text, out, why);
    }
    snprintf(why, WHY_MAX, "bad option type %d", (int)row->type);
    return PW_ECONFIG;
}

/* Moves *v into the field, freeing what the field held. */
static void store_value(const pw_config_opt_t *row, void *cfg, value_t *v)
{
    void *f = field_of(row, cfg);
    switch (row->type) {
    case PW_CONFIG_STRING:
        pw_free(*(char **)f);
        *(char **)f = v->s;
        break;
    case PW_CONFIG_BOOL:
        *(bool *)f = v->b;
        break;
    case PW_CONFIG_INT:
        *(int64_t *)f = v->i;
        break;
    case PW_CONFIG_DURATION:
    case PW_CONFIG_SIZE:
        *(uint64_t *)f = v->u;
        break;
    case PW_CONFIG_ENUM:
        *(int *)f = v->e;
        break;
    case PW_CONFIG_LIST:
        pw_free(((pw_config_list_t *)f)->items);
        *(pw_config_list_t *)f = v->l;
        break;
    }
}

static int set_row(const pw_config_opt_t *row, void *cfg, const char *text, const char *dir,
                   char *why)
{
    value_t v;
    memset(&v, 0, sizeof(v));
    int r = parse_value(row, text, dir, &v, why);
    if (r < 0) {
        free_value(row->type, &v);
        if (r == PW_ENOMEM)
            snprintf(why, WHY_MAX, "out of memory");
        return r;
    }
    store_value(row, cfg, &v);
    return 0;
}

/* Quotes a string when reading it back would otherwise change it. */
static int needs_quotes(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return 0;
    return isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]) || s[0] == ';' ||
           (n >= 2 && s[0] == '"' && s[n - 1] == '"');
}

static int format_row(const pw_config_opt_t *row, const void *cfg, char *buf, size_t size)
{
    const void *f = cfield_of(row, cfg);
    switch (row->type) {
    case PW_CONFIG_STRING: {
        const char *s = *(char *const *)f;
        if (s == NULL)
            s = "";
        return snprintf(buf, size, needs_quotes(s) ? "\"%s\"" : "%s", s);
    }
    case PW_CONFIG_BOOL:
        return snprintf(buf, size, "%s", *(const bool *)f ? "true" : "false");
    case PW_CONFIG_INT:
        return snprintf(buf, size, "%" PRId64, *(const int64_t *)f);
    case PW_CONFIG_DURATION:
        return format_duration(*(const uint64_t *)f, buf, size);
    case PW_CONFIG_SIZE: {
        uint64_t b = *(const uint64_t *)f;
        int n = format_size(b, buf, size);
        /* a pool limit in bytes reads back only with its B (a bare number is refused) */
        if ((row->flags & PW_CONFIG_POOL_UNITS) && b != 0 && n > 0 && (size_t)n + 1 < size &&
            bare_number(buf))
            n += snprintf(buf + n, size - (size_t)n, "B");
        return n;
    }
    case PW_CONFIG_ENUM: {
        int e = *(const int *)f;
        int n = 0;
        while (row->words[n] != NULL)
            n++;
        return snprintf(buf, size, "%s", e >= 0 && e < n ? row->words[e] : "?");
    }
    case PW_CONFIG_LIST: {
        const pw_config_list_t *l = f;
        size_t need = 0;
        if (size > 0)
            buf[0] = '\0';
        for (size_t k = 0; k < l->n; k++) {
            int w = snprintf(need < size ? buf + need : NULL, need < size ? size - need : 0, "%s%s",
                             k ? "," : "", l->items[k]);
            need += (size_t)w;
        }
        return need > INT_MAX ? INT_MAX : (int)need;
    }
    }
    return snprintf(buf, size, "?");
}

/* ------------------------------------------------------------------------------------------ */
/* Table, defaults, free, check                                                               */
/* ------------------------------------------------------------------------------------------ */

static int check_row(const pw_config_opt_t *tab, const pw_config_opt_t *row, pw_diag_t *d)
{
    const char *sec = row->section ? row->section : "";
    char key[96];
    snprintf(key, sizeof(key), "%s.%s", sec, row->name);
    if (!valid_ident(row->section) || !valid_ident(row->name))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: '%s': bad section or name",
                           key);
    if (row->type < PW_CONFIG_STRING || row->type > PW_CONFIG_LIST)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: bad type %d", key,
                           (int)row->type);
    if (row->type == PW_CONFIG_ENUM && (row->words == NULL || row->words[0] == NULL))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: enum without words", key);
    if (row->min > row->max || (row->type != PW_CONFIG_INT && row->type != PW_CONFIG_BOOL &&
                                row->type != PW_CONFIG_ENUM && row->min < 0))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: bad bounds", key);
    if (row->def == NULL && row->type != PW_CONFIG_STRING && row->type != PW_CONFIG_LIST)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: needs a default", key);
    if ((row->flags & PW_CONFIG_REQUIRED) &&
        ((row->type != PW_CONFIG_STRING && row->type != PW_CONFIG_LIST) || row->def != NULL))
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key,
                           "option table: %s: only a string or list without default can be "
                           "required",
                           key);
    if ((row->flags & PW_CONFIG_PATH) && row->type != PW_CONFIG_STRING)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: path must be a string",
                           key);
    if ((row->flags & PW_CONFIG_POOL_UNITS) && row->type != PW_CONFIG_SIZE)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s: pool units need a size",
                           key);
    for (const pw_config_opt_t *r = tab; r != row; r++)
        if (ident_eq(r->section, row->section, strlen(row->section)) &&
            ident_eq(r->name, row->name, strlen(row->name)))
            return pw_diag_set(d, PW_ECONFIG, 0, 0, key, "option table: %s listed twice", key);
    return 0;
}

static void clear_field(const pw_config_opt_t *row, void *cfg)
{
    void *f = field_of(row, cfg);
    switch (row->type) {
    case PW_CONFIG_STRING:
        *(char **)f = NULL;
        break;
    case PW_CONFIG_LIST:
        ((pw_config_list_t *)f)->items = NULL;
        ((pw_config_list_t *)f)->n = 0;
        break;
    default:
        break;
    }
}

int pw_config_defaults(const pw_config_opt_t *tab, void *cfg, pw_diag_t *d)
{
    pw_diag_clear(d);
    /* First make every owned field empty, so that a failure below leaves cfg freeable. */
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        if (row->type == PW_CONFIG_STRING || row->type == PW_CONFIG_LIST)
            clear_field(row, cfg);
    }
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        int r = check_row(tab, row, d);
        if (r < 0)
            return r;
    }
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        if (row->def == NULL)
            continue;
        char why[WHY_MAX];
        int r = set_row(row, cfg, row->def, NULL, why);
        if (r < 0) {
            char key[96];
            snprintf(key, sizeof(key), "%s.%s", row->section, row->name);
            return pw_diag_set(d, r, 0, 0, key, "option table: %s: default: %s", key, why);
        }
    }
    return 0;
}

void pw_config_free(const pw_config_opt_t *tab, void *cfg)
{
    if (cfg == NULL || tab == NULL)
        return;
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        void *f = field_of(row, cfg);
        if (row->type == PW_CONFIG_STRING)
            pw_free(*(char **)f);
        else if (row->type == PW_CONFIG_LIST)
            pw_free(((pw_config_list_t *)f)->items);
        else
            continue;
        clear_field(row, cfg);
    }
}

int pw_config_check(const pw_config_opt_t *tab, const void *cfg, pw_diag_t *d)
{
    pw_diag_clear(d);
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        if (!(row->flags & PW_CONFIG_REQUIRED))
            continue;
        const void *f = cfield_of(row, cfg);
        int missing = row->type == PW_CONFIG_STRING
                          ? (*(char *const *)f == NULL || **(char *const *)f == '\0')
                          : ((const pw_config_list_t *)f)->n == 0;
        if (missing) {
            char key[96];
            snprintf(key, sizeof(key), "%s.%s", row->section, row->name);
            return pw_diag_set(d, PW_ECONFIG, 0, 0, key,
                               "%s: required option is not set (in the file: [%s] %s = ...; "
                               "on the command line: --%s=...)",
                               key, row->section, row->name, key);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* INI input                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct load_s {
    const pw_config_opt_t *tab;
    void *cfg;
    const char *origin;
    const char *dir; /* directory of the file, for PATH options; NULL for buffers */
    const char *data;
    size_t len;
    size_t pos;
    uint32_t line;     /* lines handed to inih so far = the current line */
    size_t line_start; /* offset of the current line */
    uint32_t *seen;    /* per row: line that set it in this input, 0 = not yet */
    int err;
    pw_diag_t *d;
} load_t;

static char *read_line(char *str, int num, void *stream)
{
    load_t *st = stream;
    if (st->err != 0 || st->pos >= st->len)
        return NULL;
    const char *p = st->data + st->pos;
    const char *nl = memchr(p, '\n', st->len - st->pos);
    size_t n = nl ? (size_t)(nl - p) + 1 : st->len - st->pos;
    st->line++;
    st->line_start = st->pos;
    if (num <= 0 || n + 1 > (size_t)num) {
        /* Only with an inih built with a smaller line limit than ours (see ini_setup). */
        st->err = pw_diag_set(st->d, PW_ETOOBIG, st->line, st->line_start, "",
                              "%s:%u: line longer than the INI library accepts (%d bytes)",
                              st->origin, st->line, num - 3);
        return NULL;
    }
    memcpy(str, p, n);
    str[n] = '\0';
    st->pos += n;
    return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    load_t *st = user;
    char key[96], why[WHY_MAX];
    if (st->err != 0)
        return 0;
    snprintf(key, sizeof(key), "%s.%s", section, name);
    if (section[0] == '\0') {
        st->err =
            pw_diag_set(st->d, PW_ECONFIG, st->line, st->line_start, name,
                        "%s:%u: %s: key outside of any [section]", st->origin, st->line, name);
        return 0;
    }
    const pw_config_opt_t *row = NULL;
    for (const pw_config_opt_t *r = st->tab; r->name != NULL; r++)
        if (strcmp(r->section, section) == 0 && strcmp(r->name, name) == 0)
            row = r;
    if (row == NULL) {
        int sec_ok = section_known(st->tab, section, strlen(section));
        st->err = pw_diag_set(st->d, PW_ECONFIG, st->line, st->line_start, key,
                              sec_ok ? "%s:%u: %s: unknown key '%s' in section [%s]"
                                     : "%s:%u: %s: unknown section [%s] (key '%s')",
                              st->origin, st->line, key, sec_ok ? name : section,
                              sec_ok ? section : name);
        return 0;
    }
    size_t idx = (size_t)(row - st->tab);
    if (st->seen[idx] != 0) {
        st->err = pw_diag_set(st->d, PW_ECONFIG, st->line, st->line_start, key,
                              "%s:%u: %s: duplicate key (already set on line %u)", st->origin,
                              st->line, key, st->seen[idx]);
        return 0;
    }
    int r = set_row(row, st->cfg, value, st->dir, why);
    if (r < 0) {
        st->err = pw_diag_set(st->d, r, st->line, st->line_start, key, "%s:%u: %s: %s", st->origin,
                              st->line, key, why);
        return 0;
    }
    st->seen[idx] = st->line;
    return 1;
}

/* Checks bytes, line lengths and section headers before inih runs, so that each problem is
 * reported with its line and byte offset. */
static int prescan(load_t *st)
{
    uint32_t line = 1;
    size_t start = 0;
    for (size_t i = 0; i <= st->len; i++) {
        unsigned char c = i < st->len ? (unsigned char)st->data[i] : '\n';
        if (c != '\n') {
            if (c == '\0')
                return pw_diag_set(st->d, PW_EPARSE, line, i, "", "%s:%u: NUL byte at offset %zu",
                                   st->origin, line, i);
            if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f ||
                (c == '\r' && i + 1 < st->len && st->data[i + 1] != '\n'))
                return pw_diag_set(st->d, PW_EPARSE, line, i, "",
                                   "%s:%u: control character 0x%02x at offset %zu", st->origin,
                                   line, c, i);
            continue;
        }
        size_t end = i;
        if (end > start && st->data[end - 1] == '\r')
            end--;
        if (end - start > PW_CONFIG_MAX_LINE)
            return pw_diag_set(st->d, PW_ETOOBIG, line, start, "",
                               "%s:%u: line of %zu bytes is longer than the limit of %zu",
                               st->origin, line, end - start, PW_CONFIG_MAX_LINE);
        const char *s = st->data + start, *e = st->data + end;
        if (line == 1 && e - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
            s += 3;
        while (s < e && isspace((unsigned char)*s))
            s++;
        if (s < e && *s == '[') {
            const char *close = memchr(s, ']', (size_t)(e - s));
            if (close != NULL && !section_known(st->tab, s + 1, (size_t)(close - s - 1)))
                return pw_diag_set(st->d, PW_ECONFIG, line, start, "",
                                   "%s:%u: unknown section [%.*s]", st->origin, line,
                                   (int)(close - s - 1 > 64 ? 64 : close - s - 1), s + 1);
        }
        line++;
        start = i + 1;
    }
    return 0;
}

/* inih's behaviour switches are process globals in Debian's build (patched in so that one
 * shared library serves every user); set the ones our syntax depends on before each parse. */
static void ini_setup(void)
{
#ifdef PW_HAVE_INIH_RUNTIME_OPTS
    ini_max_line = (int)PW_CONFIG_MAX_LINE + 3; /* + CR, LF and NUL, as ini.h asks */
    ini_allow_multiline = false;                /* an indented line is a line, not a continuation */
    ini_allow_bom = true;
    ini_allow_inline_comments = true;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
#endif
}

static int load_common(const pw_config_opt_t *tab, void *cfg, const char *data, size_t len,
                       const char *origin, const char *dir, pw_diag_t *d)
{
    load_t st;
    pw_diag_clear(d);
    if (len > PW_CONFIG_MAX_FILE)
        return pw_diag_set(d, PW_ETOOBIG, 0, PW_CONFIG_MAX_FILE, "",
                           "%s: larger than the limit of %zu bytes", origin, PW_CONFIG_MAX_FILE);
    memset(&st, 0, sizeof(st));
    st.tab = tab;
    st.cfg = cfg;
    st.origin = origin;
    st.dir = dir;
    st.data = data;
    st.len = len;
    st.d = d;
    int r = prescan(&st);
    if (r < 0)
        return r;
    st.seen = pw_calloc(table_len(tab) + 1, sizeof(uint32_t));
    if (st.seen == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "%s: out of memory", origin);
    ini_setup();
    r = ini_parse_stream(read_line, &st, on_key, &st);
    pw_free(st.seen);
    if (st.err != 0)
        return st.err;
    if (r == -2)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "%s: out of memory", origin);
    if (r != 0) {
        /* inih's own syntax errors: r is the line. Find its offset for the diag. */
        size_t off = 0;
        for (int l = 1; l < r && off < len; l++) {
            const char *nl = memchr(data + off, '\n', len - off);
            off = nl ? (size_t)(nl - data) + 1 : len;
        }
        return pw_diag_set(d, PW_EPARSE, r > 0 ? (uint32_t)r : 0, off, "",
                           "%s:%d: syntax error (expected [section], name = value, or a "
                           "comment starting with # or ;)",
                           origin, r);
    }
    return 0;
}

int pw_config_load_buffer(const pw_config_opt_t *tab, void *cfg, const char *data, size_t len,
                          const char *origin, pw_diag_t *d)
{
    return load_common(tab, cfg, data, len, origin ? origin : "<string>", NULL, d);
}

int pw_config_load_string(const pw_config_opt_t *tab, void *cfg, const char *text, pw_diag_t *d)
{
    return load_common(tab, cfg, text, strlen(text), "<string>", NULL, d);
}

int pw_config_load_file(const pw_config_opt_t *tab, void *cfg, const char *path, pw_diag_t *d)
{
    pw_diag_clear(d);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno ? -errno : PW_EIO;
        return pw_diag_set(d, e, 0, 0, "", "%s: cannot open: %s", path, pw_strerror(e));
    }
    /* Read one byte more than the limit, to tell "exactly the limit" from "too big". */
    char *buf = pw_malloc(PW_CONFIG_MAX_FILE + 1);
    size_t dl = strlen(path);
    char *dir = pw_malloc(dl + 2);
    if (buf == NULL || dir == NULL) {
        fclose(f);
        pw_free(buf);
        pw_free(dir);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, PW_CONFIG_MAX_FILE + 1, f);
    int rerr = ferror(f) ? (errno ? -errno : PW_EIO) : 0;
    fclose(f);
    int r;
    if (rerr != 0) {
        r = pw_diag_set(d, rerr, 0, n, "", "%s: read error: %s", path, pw_strerror(rerr));
    } else {
        /* Directory part of the path, for PATH options ("." when there is none). */
        const char *slash = strrchr(path, '/');
#ifdef _WIN32
        /* Windows paths separate with a backslash too (C:\ProgramData\poolwatch\agent.conf). */
        const char *bs = strrchr(path, '\\');
        if (bs != NULL && (slash == NULL || bs > slash))
            slash = bs;
#endif
        if (slash == NULL) {
            strcpy(dir, ".");
        } else {
            size_t k = slash == path ? 1 : (size_t)(slash - path);
            memcpy(dir, path, k);
            dir[k] = '\0';
        }
        r = load_common(tab, cfg, buf, n, path, dir, d);
    }
    pw_free(buf);
    pw_free(dir);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Single options and the command line                                                        */
/* ------------------------------------------------------------------------------------------ */

int pw_config_set(const pw_config_opt_t *tab, void *cfg, const char *key, const char *value,
                  pw_diag_t *d)
{
    int ambiguous;
    char why[WHY_MAX];
    pw_diag_clear(d);
    const pw_config_opt_t *row = find_key(tab, key, strlen(key), &ambiguous);
    if (row == NULL)
        return pw_diag_set(d, PW_ECONFIG, 0, 0, key,
                           ambiguous ? "%s: option name used in several sections (write "
                                       "section.%s)"
                                     : "%s: unknown option%s",
                           key, ambiguous ? key : "");
    int r = set_row(row, cfg, value, NULL, why);
    if (r < 0)
        return pw_diag_set(d, r, 0, 0, key, "%s: %s", key, why);
    return 0;
}

/* Is `key` (klen bytes) one of the caller's own flags? *takes_value tells if it has a value. */
static int own_flag(const char *const *own, const char *key, size_t klen, int *takes_value)
{
    for (; own != NULL && *own != NULL; own++) {
        size_t n = strlen(*own);
        int tv = n > 0 && (*own)[n - 1] == '=';
        if (tv)
            n--;
        if (n != klen)
            continue;
        size_t i = 0;
        for (; i < n; i++) {
            char x = (*own)[i] == '-' ? '_' : (*own)[i];
            char y = key[i] == '-' ? '_' : key[i];
            if (x != y)
                break;
        }
        if (i == n) {
            *takes_value = tv;
            return 1;
        }
    }
    return 0;
}

int pw_config_apply_args(const pw_config_opt_t *tab, void *cfg, int argc, char **argv,
                         const char *const *own_flags, int *optind, pw_diag_t *d)
{
    int i;
    char why[WHY_MAX];
    pw_diag_clear(d);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strncmp(a, "--", 2) != 0)
            break;
        const char *key = a + 2;
        const char *eq = strchr(key, '=');
        size_t klen = eq ? (size_t)(eq - key) : strlen(key);
        int takes_value, ambiguous;
        if (own_flag(own_flags, key, klen, &takes_value)) {
            if (takes_value && eq == NULL) {
                if (i + 1 >= argc)
                    return pw_diag_set(d, PW_ECONFIG, 0, (uint64_t)i, a,
                                       "command line: %s: needs a value", a);
                i++;
            }
            continue;
        }
        const pw_config_opt_t *row = find_key(tab, key, klen, &ambiguous);
        if (row == NULL)
            return pw_diag_set(d, PW_ECONFIG, 0, (uint64_t)i, a,
                               ambiguous ? "command line: --%.*s: option name used in several "
                                           "sections (write --section.name)"
                                         : "command line: --%.*s: unknown option",
                               (int)(klen > 200 ? 200 : klen), key);
        const char *value;
        if (eq != NULL) {
            value = eq + 1;
        } else if (row->type == PW_CONFIG_BOOL) {
            value = "true";
        } else {
            if (i + 1 >= argc)
                return pw_diag_set(d, PW_ECONFIG, 0, (uint64_t)i, a,
                                   "command line: --%.*s: needs a value",
                                   (int)(klen > 200 ? 200 : klen), key);
            value = argv[++i];
        }
        int r = set_row(row, cfg, value, NULL, why);
        if (r < 0)
            return pw_diag_set(d, r, 0, (uint64_t)i, a, "command line: --%s.%s: %s", row->section,
                               row->name, why);
    }
    if (optind != NULL)
        *optind = i;
    return 0;
}

int pw_config_find_flag(int argc, char **argv, const char *name, const char **value)
{
    int found = 0;
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strncmp(a, "--", 2) != 0 || !ident_eq(name, a + 2, strcspn(a + 2, "=")))
            continue;
        found = 1;
        if (a[2 + n] == '=') {
            *value = a + 3 + n;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            *value = argv[++i];
        } else {
            *value = NULL;
        }
    }
    return found;
}

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Formats into a buffer that grows when the value is longer than the stack one. */
static char *format_alloc(const pw_config_opt_t *row, const void *cfg, char *stackbuf, size_t size)
{
    int n = format_row(row, cfg, stackbuf, size);
    if (n < 0 || (size_t)n < size)
        return stackbuf;
    char *b = pw_malloc((size_t)n + 1);
    if (b == NULL)
        return NULL;
    format_row(row, cfg, b, (size_t)n + 1);
    return b;
}

/* Is row `r` the first of its section in the table? */
static int first_of_section(const pw_config_opt_t *tab, const pw_config_opt_t *r)
{
    for (const pw_config_opt_t *q = tab; q != r; q++)
        if (strcmp(q->section, r->section) == 0)
            return 0;
    return 1;
}

int pw_config_dump(const pw_config_opt_t *tab, const void *cfg, FILE *out)
{
    int first = 1, err = 0;
    for (const pw_config_opt_t *s = tab; s->name != NULL; s++) {
        if (!first_of_section(tab, s))
            continue;
        fprintf(out, "%s[%s]\n", first ? "" : "\n", s->section);
        first = 0;
        for (const pw_config_opt_t *row = s; row->name != NULL; row++) {
            if (strcmp(row->section, s->section) != 0)
                continue;
            if (row->type == PW_CONFIG_STRING && *(char *const *)cfield_of(row, cfg) == NULL) {
                fprintf(out, "# %s =\n", row->name);
                continue;
            }
            char sb[256];
            char *v = format_alloc(row, cfg, sb, sizeof(sb));
            if (v == NULL) {
                err = PW_ENOMEM;
                continue;
            }
            fprintf(out, "%s = %s\n", row->name, v);
            if (v != sb)
                pw_free(v);
        }
    }
    if (fflush(out) != 0 || ferror(out))
        return PW_EIO;
    return err;
}

/* Writes `text` as "# " comment lines of at most 100 columns, breaking at spaces. */
/* Writes `text` in lines of at most `width` characters (cut at a space when there is one), each
 * after `prefix`. */
static void write_wrapped_as(FILE *out, const char *prefix, size_t width, const char *text)
{
    while (*text != '\0') {
        size_t n = strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0)
                n = width;
        }
        fprintf(out, "%s%.*s\n", prefix, (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
    }
}

static void write_wrapped(FILE *out, const char *text)
{
    write_wrapped_as(out, "# ", 98, text);
}

int pw_config_write_example(const pw_config_opt_t *tab, const char *title, FILE *out)
{
    if (title != NULL)
        write_wrapped(out, title);
    write_wrapped(out, "Every option with its default value; remove or change lines as needed. "
                       "Command-line flags --section.name=value override this file.");
    for (const pw_config_opt_t *s = tab; s->name != NULL; s++) {
        if (!first_of_section(tab, s))
            continue;
        fprintf(out, "\n[%s]\n", s->section);
        for (const pw_config_opt_t *row = s; row->name != NULL; row++) {
            if (strcmp(row->section, s->section) != 0)
                continue;
            char info[512], lo[32], hi[32];
            int n;
            fprintf(out, "\n");
            if (row->desc != NULL)
                write_wrapped(out, row->desc);
            switch (row->type) {
            case PW_CONFIG_DURATION:
                n = snprintf(info, sizeof(info), "Type: duration (units ms, s, m, h, d)");
                break;
            case PW_CONFIG_SIZE:
                n = snprintf(
                    info, sizeof(info), "%s",
                    row->flags & PW_CONFIG_POOL_UNITS
                        ? "Type: size in bytes (units KiB, MiB, GiB, TiB; kB, MB, GB, TB "
                          "count in 1024s too, as Windows writes pool limits: 128MB = "
                          "128MiB; a bare number other than 0 is refused: bytes take B)"
                        : "Type: size in bytes (units KiB, MiB, GiB, TiB; kB, MB, GB, TB)");
                break;
            case PW_CONFIG_BOOL:
                n = snprintf(info, sizeof(info), "Type: bool (true or false)");
                break;
            case PW_CONFIG_ENUM:
                n = snprintf(info, sizeof(info), "Type: one of");
                for (int k = 0; row->words[k] != NULL && n > 0 && (size_t)n < sizeof(info); k++)
                    n += snprintf(info + n, sizeof(info) - (size_t)n, "%s %s", k ? "," : "",
                                  row->words[k]);
                break;
            case PW_CONFIG_LIST:
                n = snprintf(info, sizeof(info), "Type: comma-separated list");
                break;
            case PW_CONFIG_STRING:
                n = snprintf(info, sizeof(info), "Type: %s",
                             row->flags & PW_CONFIG_PATH
                                 ? "path (relative paths start at this file's directory)"
                                 : "string");
                break;
            default:
                n = snprintf(info, sizeof(info), "Type: %s", type_name(row->type));
                break;
            }
            if (n > 0 && (size_t)n < sizeof(info) && has_bounds(row)) {
                format_bound(row, row->min, lo, sizeof(lo));
                format_bound(row, row->max, hi, sizeof(hi));
                const char *what = row->type == PW_CONFIG_STRING ? "; length "
                                   : row->type == PW_CONFIG_LIST ? "; items "
                                                                 : "; range ";
                n += snprintf(info + n, sizeof(info) - (size_t)n, "%s%s to %s", what, lo, hi);
            }
            if (n > 0 && (size_t)n < sizeof(info) && (row->flags & PW_CONFIG_REQUIRED))
                snprintf(info + n, sizeof(info) - (size_t)n, "; required");
            write_wrapped(out, info);
            if (row->def == NULL) {
                fprintf(out, "# %s =\n", row->name);
            } else if (row->type == PW_CONFIG_STRING && needs_quotes(row->def)) {
                fprintf(out, "%s = \"%s\"\n", row->name, row->def);
            } else {
                fprintf(out, "%s = %s\n", row->name, row->def);
            }
        }
    }
    if (fflush(out) != 0 || ferror(out))
        return PW_EIO;
    return 0;
}

int pw_config_write_options(const pw_config_opt_t *tab, FILE *out)
{
    for (const pw_config_opt_t *row = tab; row->name != NULL; row++) {
        char value[160];
        if (row->type == PW_CONFIG_ENUM) {
            int n = 0;
            for (int k = 0; row->words[k] != NULL && n >= 0 && (size_t)n < sizeof(value); k++)
                n += snprintf(value + n, sizeof(value) - (size_t)n, "%s%s", k ? "|" : "",
                              row->words[k]);
        } else {
            snprintf(value, sizeof(value), "%s",
                     row->type == PW_CONFIG_STRING && (row->flags & PW_CONFIG_PATH)
                         ? "path"
                         : type_name(row->type));
        }
        fprintf(out, "  --%s.%s=%s", row->section, row->name, value);
        if (row->flags & PW_CONFIG_REQUIRED)
            fputs(" (required)", out);
        else if (row->def != NULL && row->def[0] != '\0')
            fprintf(out, " (default %s)", row->def);
        fputc('\n', out);
        if (row->desc != NULL) /* wrapped at 98 columns under the option */
            write_wrapped_as(out, "      ", 92, row->desc);
    }
    if (fflush(out) != 0 || ferror(out))
        return PW_EIO;
    return 0;
}

int pw_config_format(const pw_config_opt_t *tab, const void *cfg, const char *key, char *buf,
                     size_t size)
{
    int ambiguous;
    const pw_config_opt_t *row = find_key(tab, key, strlen(key), &ambiguous);
    if (row == NULL)
        return PW_EINVAL;
    return format_row(row, cfg, buf, size);
}
