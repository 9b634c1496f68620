/* winevent.c: System-log pool events from their XML, with expat (winevent.h). */
#include "winevent.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <expat.h>

#include "alloc.h"
#include "clock.h"

#define TEXT_MAX  256 /* bytes of an element's text kept (tags, numbers, names are short) */
#define NAME_MAX_ 64  /* bytes of a Data@Name kept */

typedef enum { F_NONE, F_EVENT_ID, F_RECORD_ID, F_DATA } field_t;

typedef struct {
    XML_Parser p;
    pw_winevent_cb cb;
    void *arg;
    int stop;  /* the callback's non-zero return */
    int count; /* events handed over */
    int doctype;
    int in_event, in_system, in_data;
    int event_depth, depth;
    field_t field;
    char text[TEXT_MAX];
    size_t text_len;
    char data_name[NAME_MAX_];
    pw_winevent_t ev;
    /* named tags of 2004 before they are paired with their bytes: index N per pool */
    struct {
        uint8_t tag[4];
        int have_tag;
        uint64_t bytes;
    } named[2][PW_WINEVENT_TAGS_MAX];
} parse_t;

static const char *local_name(const XML_Char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static const char *attr(const XML_Char **atts, const char *want)
{
    for (size_t i = 0; atts[i] && atts[i + 1]; i += 2)
        if (strcmp(local_name(atts[i]), want) == 0)
            return atts[i + 1];
    return NULL;
}

/* "2026-11-30T14:03:12.1234567Z" (fraction optional, "Z" or an offset) as ms since the epoch;
 * 0 when it does not read or is before 1970. */
static uint64_t parse_time(const char *s)
{
    unsigned y, mo, d, h, mi, se;
    int n = 0;
    if (sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n < 19)
        return 0;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return 0;
    const char *p = s + n;
    uint64_t ms = 0;
    if (*p == '.') {
        unsigned digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (uint64_t)(*p - '0');
        for (; digits < 3; digits++)
            ms *= 10;
    }
    int64_t off_s = 0;
    if (*p == '+' || *p == '-') {
        unsigned oh, om;
        if (sscanf(p + 1, "%2u:%2u", &oh, &om) != 2 || oh > 23 || om > 59)
            return 0;
        off_s = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    } else if (*p != 'Z' && *p != '\0') {
        return 0;
    }
    int64_t t = pw_clock_days_from_civil((int64_t)y, mo, d) * 86400 +
                (int64_t)(h * 3600 + mi * 60 + se) - off_s;
    return t < 0 ? 0 : (uint64_t)t * 1000 + ms;
}

static uint64_t parse_u64(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return (uint64_t)v;
}

pw_winevent_kind_t pw_winevent_kind(const pw_winevent_t *ev)
{
    if (strcasecmp(ev->provider, PW_WINEVENT_PROVIDER_SRV) == 0) {
        if (ev->event_id == 2019)
            return PW_WINEVENT_NONPAGED_EMPTY;
        if (ev->event_id == 2020)
            return PW_WINEVENT_PAGED_EMPTY;
    }
    if (strcasecmp(ev->provider, PW_WINEVENT_PROVIDER_RED) == 0 && ev->event_id == 2004)
        return PW_WINEVENT_DIAGNOSIS;
    return PW_WINEVENT_OTHER;
}

const char *pw_winevent_kind_text(pw_winevent_kind_t k)
{
    switch (k) {
    case PW_WINEVENT_NONPAGED_EMPTY:
        return "nonpaged pool empty";
    case PW_WINEVENT_PAGED_EMPTY:
        return "paged pool empty";
    case PW_WINEVENT_DIAGNOSIS:
        return "low virtual memory";
    default:
        return "other";
    }
}

/* "PagedPoolTag_2" -> pool 0 (paged) / 1 (nonpaged), index 1, is_tag 1; -1 when not a pool
 * tag field. */
static int named_field(const char *name, int *pool, size_t *idx, int *is_tag)
{
    const char *p = name;
    if (strncmp(p, "NonPagedPool", 12) == 0) {
        *pool = 1;
        p += 12;
    } else if (strncmp(p, "PagedPool", 9) == 0) {
        *pool = 0;
        p += 9;
    } else {
        return -1;
    }
    if (strncmp(p, "Tag_", 4) == 0)
        *is_tag = 1, p += 4;
    else if (strncmp(p, "Used_", 5) == 0)
        *is_tag = 0, p += 5;
    else
        return -1;
    if (!isdigit((unsigned char)*p))
        return -1;
    char *end;
    unsigned long n = strtoul(p, &end, 10);
    if (*end != '\0' || n < 1 || n > PW_WINEVENT_TAGS_MAX)
        return -1;
    *idx = n - 1;
    return 0;
}

/* A tag's text as its 4 bytes: trailing blanks dropped by whoever wrote it come back as
 * spaces; longer text or none is not a tag. */
static int tag_bytes(const char *s, uint8_t out[4])
{
    size_t n = strlen(s);
    if (n == 0 || n > 4)
        return -1;
    memset(out, ' ', 4);
    memcpy(out, s, n);
    return 0;
}

static void end_data(parse_t *ps)
{
    int pool;
    size_t idx;
    int is_tag;
    if (named_field(ps->data_name, &pool, &idx, &is_tag) != 0)
        return;
    if (is_tag) {
        ps->named[pool][idx].have_tag = tag_bytes(ps->text, ps->named[pool][idx].tag) == 0;
    } else {
        ps->named[pool][idx].bytes = parse_u64(ps->text);
    }
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    parse_t *ps = ud;
    const char *n = local_name(name);
    ps->depth++;
    ps->text_len = 0;
    ps->text[0] = '\0';
    ps->field = F_NONE;
    if (!ps->in_event) {
        if (strcmp(n, "Event") == 0) {
            ps->in_event = 1;
            ps->event_depth = ps->depth;
            memset(&ps->ev, 0, sizeof(ps->ev));
            memset(ps->named, 0, sizeof(ps->named));
        }
        return;
    }
    if (ps->depth == ps->event_depth + 1) {
        ps->in_system = strcmp(n, "System") == 0;
        ps->in_data = !ps->in_system; /* EventData, or UserData's own elements */
        return;
    }
    if (ps->in_data) {
        int pool, is_tag;
        size_t idx;
        if (strcmp(n, "Data") == 0) { /* EventData: <Data Name='PagedPoolTag_1'> */
            const char *v = attr(atts, "Name");
            snprintf(ps->data_name, sizeof(ps->data_name), "%s", v ? v : "");
            ps->field = F_DATA;
        } else if (named_field(n, &pool, &idx, &is_tag) == 0) { /* UserData: <PagedPoolTag_1> */
            snprintf(ps->data_name, sizeof(ps->data_name), "%s", n);
            ps->field = F_DATA;
        }
        return;
    }
    if (ps->depth != ps->event_depth + 2)
        return;
    if (ps->in_system) {
        if (strcmp(n, "Provider") == 0) {
            const char *v = attr(atts, "Name");
            snprintf(ps->ev.provider, sizeof(ps->ev.provider), "%s", v ? v : "");
        } else if (strcmp(n, "TimeCreated") == 0) {
            const char *v = attr(atts, "SystemTime");
            ps->ev.ts_ms = v ? parse_time(v) : 0;
        } else if (strcmp(n, "EventID") == 0) {
            ps->field = F_EVENT_ID;
        } else if (strcmp(n, "EventRecordID") == 0) {
            ps->field = F_RECORD_ID;
        }
    }
}

static void finish_event(parse_t *ps)
{
    pw_winevent_t *ev = &ps->ev;
    pw_winevent_kind_t k = pw_winevent_kind(ev);
    ev->pool = k == PW_WINEVENT_NONPAGED_EMPTY ? PW_WINEVENT_POOL_NONPAGED
               : k == PW_WINEVENT_PAGED_EMPTY  ? PW_WINEVENT_POOL_PAGED
                                               : PW_WINEVENT_POOL_NONE;
    /* nonpaged first: the pool that runs out first on the servers that log these */
    static const int order[2] = {1, 0};
    for (size_t o = 0; o < 2; o++) {
        int pool = order[o];
        for (size_t i = 0; i < PW_WINEVENT_TAGS_MAX && ev->n_tags < PW_WINEVENT_TAGS_MAX; i++) {
            if (!ps->named[pool][i].have_tag)
                continue;
            pw_winevent_tag_t *t = &ev->tags[ev->n_tags++];
            memcpy(t->tag, ps->named[pool][i].tag, 4);
            t->pool = pool ? PW_WINEVENT_POOL_NONPAGED : PW_WINEVENT_POOL_PAGED;
            t->bytes = ps->named[pool][i].bytes;
        }
    }
    ps->count++;
    if (ps->cb != NULL) {
        int r = ps->cb(ps->arg, ev);
        if (r != 0) {
            ps->stop = r;
            XML_StopParser(ps->p, XML_FALSE);
        }
    }
}

static void on_end(void *ud, const XML_Char *name)
{
    parse_t *ps = ud;
    (void)name;
    if (ps->in_event) {
        ps->text[ps->text_len] = '\0';
        switch (ps->field) {
        case F_EVENT_ID:
            ps->ev.event_id = (uint32_t)parse_u64(ps->text);
            break;
        case F_RECORD_ID:
            ps->ev.record_id = parse_u64(ps->text);
            break;
        case F_DATA:
            end_data(ps);
            break;
        default:
            break;
        }
        ps->field = F_NONE;
        if (ps->depth == ps->event_depth + 1)
            ps->in_system = ps->in_data = 0;
        if (ps->depth == ps->event_depth) {
            ps->in_event = 0;
            finish_event(ps);
        }
    }
    ps->depth--;
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    parse_t *ps = ud;
    if (ps->field == F_NONE || len <= 0)
        return;
    size_t room = TEXT_MAX - 1 - ps->text_len;
    size_t n = (size_t)len < room ? (size_t)len : room;
    memcpy(ps->text + ps->text_len, s, n);
    ps->text_len += n;
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                       int has_internal_subset)
{
    parse_t *ps = ud;
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    ps->doctype = 1;
    XML_StopParser(ps->p, XML_FALSE);
}

/* UTF-16 (BOM first) as UTF-8 into a new buffer; unpaired surrogates become U+FFFD. */
static int utf16_to_utf8(const uint8_t *in, size_t len, int be, char **out, size_t *out_len)
{
    size_t n = len / 2;
    char *o = pw_malloc(n * 3 + 1);
    if (o == NULL)
        return PW_ENOMEM;
    size_t k = 0;
    for (size_t i = 1; i < n; i++) { /* 0 is the BOM */
        uint32_t c = be ? (uint32_t)(in[2 * i] << 8 | in[2 * i + 1])
                        : (uint32_t)(in[2 * i + 1] << 8 | in[2 * i]);
        if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n) {
            uint32_t c2 = be ? (uint32_t)(in[2 * i + 2] << 8 | in[2 * i + 3])
                             : (uint32_t)(in[2 * i + 3] << 8 | in[2 * i + 2]);
            if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
                c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
                i++;
            } else {
                c = 0xFFFD;
            }
        } else if (c >= 0xD800 && c <= 0xDFFF) {
            c = 0xFFFD;
        }
        if (c < 0x80) {
            o[k++] = (char)c;
        } else if (c < 0x800) {
            o[k++] = (char)(0xC0 | c >> 6);
            o[k++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            o[k++] = (char)(0xE0 | c >> 12);
            o[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
            o[k++] = (char)(0x80 | (c & 0x3F));
        } else {
            o[k++] = (char)(0xF0 | c >> 18);
            o[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
            o[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
            o[k++] = (char)(0x80 | (c & 0x3F));
        }
    }
    o[k] = '\0';
    *out = o;
    *out_len = k;
    return 0;
}

int pw_winevent_sniff(const void *data, size_t len)
{
    const uint8_t *in = data;
    if (in == NULL)
        return 0;
    char head[4097];
    size_t n = 0, i = 0;
    int utf16 = len >= 2 && ((in[0] == 0xFF && in[1] == 0xFE) || (in[0] == 0xFE && in[1] == 0xFF));
    if (utf16)
        i = 2;
    else if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF)
        i = 3;
    size_t end = len < 8192 ? len : 8192;
    for (; i < end && n < sizeof(head) - 1; i++)
        if (!utf16 || in[i] != 0) /* the ASCII half of each UTF-16 unit */
            head[n++] = (char)in[i];
    head[n] = '\0';
    const char *p = head;
    while (isspace((unsigned char)*p))
        p++;
    if (strncmp(p, "<Event", 6) == 0)
        return 1;
    return strncmp(p, "<?xml", 5) == 0 && strstr(p, "<Event") != NULL;
}

static const char WRAP_OPEN[] = "<pw-events>";
static const char WRAP_CLOSE[] = "</pw-events>";

int pw_winevent_parse(const void *xml, size_t len, pw_winevent_cb cb, void *arg, pw_diag_t *d)
{
    if (xml == NULL && len > 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "xml", "no input");
    if (len > PW_WINEVENT_MAX_INPUT)
        return pw_diag_set(d, PW_ETOOBIG, 0, 0, "xml", "%zu bytes of event XML (at most %u)", len,
                           PW_WINEVENT_MAX_INPUT);
    const uint8_t *in = xml;
    char *conv = NULL;
    const char *text = (const char *)in;
    size_t tlen = len;
    if (len >= 2 && ((in[0] == 0xFF && in[1] == 0xFE) || (in[0] == 0xFE && in[1] == 0xFF))) {
        int r = utf16_to_utf8(in, len, in[0] == 0xFE, &conv, &tlen);
        if (r != 0)
            return pw_diag_set(d, r, 0, 0, "xml", "out of memory converting UTF-16");
        text = conv;
    } else if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) {
        text += 3, tlen -= 3;
    }
    size_t skip = 0;
    while (skip < tlen && isspace((unsigned char)text[skip]))
        skip++;
    /* a document (declaration first) is parsed as it is; events one after another get a root */
    int wrap = !(tlen - skip >= 5 && memcmp(text + skip, "<?xml", 5) == 0);
    parse_t ps;
    memset(&ps, 0, sizeof(ps));
    ps.cb = cb;
    ps.arg = arg;
    ps.p = XML_ParserCreate("UTF-8"); /* overrides a declaration's encoding (now UTF-8) */
    if (ps.p == NULL) {
        pw_free(conv);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "xml", "out of memory (XML parser)");
    }
    XML_SetUserData(ps.p, &ps);
    XML_SetElementHandler(ps.p, on_start, on_end);
    XML_SetCharacterDataHandler(ps.p, on_text);
    XML_SetStartDoctypeDeclHandler(ps.p, on_doctype);
    enum XML_Status st = XML_STATUS_OK;
    if (wrap)
        st = XML_Parse(ps.p, WRAP_OPEN, (int)(sizeof(WRAP_OPEN) - 1), XML_FALSE);
    /* XML_Parse takes an int length: feed large input in pieces */
    size_t off = skip;
    while (st == XML_STATUS_OK && off < tlen) {
        size_t n = tlen - off > (1u << 24) ? (1u << 24) : tlen - off;
        st = XML_Parse(ps.p, text + off, (int)n, XML_FALSE);
        off += n;
    }
    if (st == XML_STATUS_OK)
        st = wrap ? XML_Parse(ps.p, WRAP_CLOSE, (int)(sizeof(WRAP_CLOSE) - 1), XML_TRUE)
                  : XML_Parse(ps.p, "", 0, XML_TRUE);
    int rc = ps.count;
    if (ps.stop) {
        rc = ps.stop;
    } else if (ps.doctype) {
        rc = pw_diag_set(d, PW_EPARSE, (uint32_t)XML_GetCurrentLineNumber(ps.p),
                         (size_t)XML_GetCurrentByteIndex(ps.p), "xml",
                         "line %lu: a DOCTYPE is not an event export",
                         (unsigned long)XML_GetCurrentLineNumber(ps.p));
    } else if (st != XML_STATUS_OK) {
        long idx = (long)XML_GetCurrentByteIndex(ps.p);
        long where = idx - (wrap ? (long)(sizeof(WRAP_OPEN) - 1) : 0);
        where = where < 0 ? 0 : where > (long)(tlen - skip) ? (long)(tlen - skip) : where;
        rc = pw_diag_set(d, PW_EPARSE, (uint32_t)XML_GetCurrentLineNumber(ps.p),
                         (size_t)where + skip, "xml", "line %lu, column %lu: %s",
                         (unsigned long)XML_GetCurrentLineNumber(ps.p),
                         (unsigned long)XML_GetCurrentColumnNumber(ps.p) + 1,
                         XML_ErrorString(XML_GetErrorCode(ps.p)));
    }
    XML_ParserFree(ps.p);
    pw_free(conv);
    return rc;
}
