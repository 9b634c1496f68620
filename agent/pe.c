/* pe.c: PE headers, tag placement and the version resource (see pe.h). Every read is checked
 * against the buffer: the files are whatever sits in a drivers directory. */
#include "pe.h"

#include <stdio.h>
#include <string.h>

#define RT_VERSION    16
#define SCN_CNT_CODE  0x00000020u
#define SCN_MEM_EXEC  0x20000000u
#define VS_SIGNATURE  0xFEEF04BDu
#define MAX_RSRC_SPAN 64 /* resource directory entries looked at per level */

static int in(size_t len, uint64_t off, uint64_t n)
{
    return off <= len && n <= len - off;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

int pw_pe_parse(const uint8_t *buf, size_t len, pw_pe_t *out, pw_diag_t *d)
{
    memset(out, 0, sizeof(*out));
    if (!in(len, 0, 0x40) || buf[0] != 'M' || buf[1] != 'Z')
        return pw_diag_set(d, PW_EFORMAT, 0, 0, "e_magic", "no MZ header: not a PE file");
    uint32_t pe = rd32(buf + 0x3C);
    if (!in(len, pe, 24) || memcmp(buf + pe, "PE\0\0", 4) != 0)
        return pw_diag_set(d, PW_EFORMAT, 0, pe, "e_lfanew", "no PE signature at %u", pe);
    const uint8_t *coff = buf + pe + 4;
    out->machine = rd16(coff);
    uint16_t nsec = rd16(coff + 2);
    uint16_t optsz = rd16(coff + 16);
    uint64_t opt = (uint64_t)pe + 24;
    if (!in(len, opt, optsz) || optsz < 2)
        return pw_diag_set(d, PW_EPARSE, 0, opt, "SizeOfOptionalHeader",
                           "optional header of %u bytes outside the file", optsz);
    uint16_t magic = rd16(buf + opt);
    if (magic != 0x10b && magic != 0x20b)
        return pw_diag_set(d, PW_EFORMAT, 0, opt, "Magic", "optional header magic 0x%x", magic);
    out->pe32plus = magic == 0x20b;
    uint32_t ndir_off = out->pe32plus ? 108 : 92, dir_off = out->pe32plus ? 112 : 96;
    if (optsz >= ndir_off + 4 && rd32(buf + opt + ndir_off) > 2 && optsz >= dir_off + 24) {
        out->rsrc_rva = rd32(buf + opt + dir_off + 16);
        out->rsrc_size = rd32(buf + opt + dir_off + 20);
    }
    if (nsec > PW_PE_MAX_SECTIONS)
        return pw_diag_set(d, PW_EPARSE, 0, pe + 6, "NumberOfSections", "%u sections (at most %d)",
                           nsec, PW_PE_MAX_SECTIONS);
    uint64_t st = opt + optsz;
    if (!in(len, st, (uint64_t)nsec * 40))
        return pw_diag_set(d, PW_EPARSE, 0, st, "sections", "section table outside the file");
    for (uint16_t i = 0; i < nsec; i++) {
        const uint8_t *s = buf + st + (uint64_t)i * 40;
        pw_pe_section_t *o = &out->sec[i];
        memcpy(o->name, s, 8);
        o->name[8] = '\0';
        o->vsize = rd32(s + 8);
        o->va = rd32(s + 12);
        o->raw_size = rd32(s + 16);
        o->raw = rd32(s + 20);
        o->flags = rd32(s + 36);
    }
    out->n_sec = nsec;
    return 0;
}

/* The kind of file offset `off` (the section holding it). */
static pw_pe_match_t kind_at(const pw_pe_t *pe, uint64_t off)
{
    for (size_t i = 0; pe && i < pe->n_sec; i++) {
        const pw_pe_section_t *s = &pe->sec[i];
        if (off >= s->raw && off - s->raw < s->raw_size)
            return (s->flags & (SCN_CNT_CODE | SCN_MEM_EXEC)) ? PW_PE_MATCH_CODE : PW_PE_MATCH_DATA;
    }
    return PW_PE_MATCH_FILE;
}

pw_pe_match_t pw_pe_find(const pw_pe_t *pe, const uint8_t *buf, size_t len, const uint8_t *tag,
                         size_t tag_len, uint64_t *offset)
{
    pw_pe_match_t best = PW_PE_MATCH_NONE;
    if (tag_len == 0 || tag_len > len)
        return best;
    for (size_t i = 0; i + tag_len <= len && best != PW_PE_MATCH_CODE; i++) {
        const uint8_t *hit = memchr(buf + i, tag[0], len - tag_len + 1 - i);
        if (hit == NULL)
            break;
        i = (size_t)(hit - buf);
        if (memcmp(hit, tag, tag_len) != 0)
            continue;
        pw_pe_match_t k = kind_at(pe, i);
        if (best == PW_PE_MATCH_NONE || k < best) {
            best = k;
            if (offset)
                *offset = i;
        }
    }
    return best;
}

/* File offset of an RVA (the section holding it), or UINT64_MAX. */
static uint64_t rva_off(const pw_pe_t *pe, uint32_t rva)
{
    for (size_t i = 0; i < pe->n_sec; i++) {
        const pw_pe_section_t *s = &pe->sec[i];
        uint32_t span = s->vsize > s->raw_size ? s->vsize : s->raw_size;
        if (rva >= s->va && rva - s->va < span && rva - s->va < s->raw_size)
            return (uint64_t)s->raw + (rva - s->va);
    }
    return UINT64_MAX;
}

/* The first entry of the resource directory at rsrc + dir whose id is `id` (any when id < 0).
 * Returns its OffsetToData (high bit: a subdirectory), or 0 with *ok = 0. */
static uint32_t rsrc_entry(const uint8_t *buf, size_t len, uint64_t rsrc, uint32_t dir, int id,
                           int *ok)
{
    *ok = 0;
    uint64_t p = rsrc + dir;
    if (!in(len, p, 16))
        return 0;
    uint32_t n = (uint32_t)rd16(buf + p + 12) + rd16(buf + p + 14);
    if (n > MAX_RSRC_SPAN)
        n = MAX_RSRC_SPAN;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = p + 16 + (uint64_t)i * 8;
        if (!in(len, e, 8))
            return 0;
        uint32_t name = rd32(buf + e);
        if (id < 0 || (!(name & 0x80000000u) && name == (uint32_t)id)) {
            *ok = 1;
            return rd32(buf + e + 4);
        }
    }
    return 0;
}

/* UTF-16LE [p, p + 2n) to UTF-8 in out (NUL-terminated, truncated at a whole character). */
static void utf16_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = rd16(p + 2 * i);
        if (c == 0)
            break;
        if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n) {
            uint32_t lo = rd16(p + 2 * (i + 1));
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
                i++;
            }
        }
        if (c >= 0xD800 && c <= 0xDFFF)
            c = 0xFFFD;
        char u[4];
        size_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (k == 1) {
            u[0] = (char)c;
        } else if (k == 2) {
            u[0] = (char)(0xC0 | (c >> 6));
            u[1] = (char)(0x80 | (c & 0x3F));
        } else if (k == 3) {
            u[0] = (char)(0xE0 | (c >> 12));
            u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
            u[2] = (char)(0x80 | (c & 0x3F));
        } else {
            u[0] = (char)(0xF0 | (c >> 18));
            u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
            u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
            u[3] = (char)(0x80 | (c & 0x3F));
        }
        if (o + k + 1 > cap)
            break;
        memcpy(out + o, u, k);
        o += k;
    }
    out[o] = '\0';
}

/* A version block at [b, end): wLength, wValueLength, wType, key (UTF-16, NUL-terminated),
 * value at the next 4-byte boundary, children after the value. */
typedef struct {
    uint64_t at, end;        /* the block */
    uint64_t key, key_chars; /* its key */
    uint64_t value, value_bytes;
    uint64_t children;
} vblock_t;

static int vblock(const uint8_t *buf, uint64_t b, uint64_t end, vblock_t *v)
{
    if (b + 6 > end)
        return -1;
    uint16_t wlen = rd16(buf + b), vlen = rd16(buf + b + 2), type = rd16(buf + b + 4);
    if (wlen < 6 || b + wlen > end)
        return -1;
    v->at = b;
    v->end = b + wlen;
    v->key = b + 6;
    uint64_t k = v->key;
    while (k + 2 <= v->end && rd16(buf + k) != 0)
        k += 2;
    if (k + 2 > v->end)
        return -1;
    v->key_chars = (k - v->key) / 2;
    v->value = (k + 2 + 3) & ~(uint64_t)3;
    v->value_bytes = type == 1 ? (uint64_t)vlen * 2 : vlen; /* text: WCHARs */
    if (v->value > v->end)
        v->value = v->end;
    if (v->value + v->value_bytes > v->end)
        v->value_bytes = v->end - v->value;
    v->children = (v->value + v->value_bytes + 3) & ~(uint64_t)3;
    return 0;
}

static int key_is(const uint8_t *buf, const vblock_t *v, const char *ascii)
{
    size_t n = strlen(ascii);
    if (v->key_chars != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (rd16(buf + v->key + 2 * i) != (unsigned char)ascii[i])
            return 0;
    return 1;
}

int pw_pe_version(const pw_pe_t *pe, const uint8_t *buf, size_t len, pw_pe_version_t *out)
{
    memset(out, 0, sizeof(*out));
    if (pe->rsrc_rva == 0)
        return PW_ENOENT;
    uint64_t rsrc = rva_off(pe, pe->rsrc_rva);
    if (rsrc == UINT64_MAX)
        return PW_EPARSE;
    int ok;
    uint32_t e = rsrc_entry(buf, len, rsrc, 0, RT_VERSION, &ok);
    if (!ok)
        return PW_ENOENT;
    for (int level = 0; level < 2; level++) { /* name, then language: the first of each */
        if (!(e & 0x80000000u))
            return PW_EPARSE;
        e = rsrc_entry(buf, len, rsrc, e & 0x7FFFFFFFu, -1, &ok);
        if (!ok)
            return PW_EPARSE;
    }
    if (e & 0x80000000u || !in(len, rsrc + e, 16))
        return PW_EPARSE;
    uint32_t data_rva = rd32(buf + rsrc + e), data_size = rd32(buf + rsrc + e + 4);
    uint64_t vo = rva_off(pe, data_rva);
    if (vo == UINT64_MAX || !in(len, vo, data_size))
        return PW_EPARSE;
    vblock_t root;
    if (vblock(buf, vo, vo + data_size, &root) != 0 || !key_is(buf, &root, "VS_VERSION_INFO"))
        return PW_EPARSE;
    if (root.value_bytes >= 52 && rd32(buf + root.value) == VS_SIGNATURE) {
        uint32_t ms = rd32(buf + root.value + 8), ls = rd32(buf + root.value + 12);
        snprintf(out->file_version, sizeof(out->file_version), "%u.%u.%u.%u", ms >> 16, ms & 0xFFFF,
                 ls >> 16, ls & 0xFFFF);
    }
    /* StringFileInfo -> StringTable(s) -> String; the first table that has a value wins */
    vblock_t sfi, tab, str;
    for (uint64_t c = root.children; c < root.end && vblock(buf, c, root.end, &sfi) == 0;
         c = (sfi.end + 3) & ~(uint64_t)3) {
        if (!key_is(buf, &sfi, "StringFileInfo"))
            continue;
        for (uint64_t t = sfi.children; t < sfi.end && vblock(buf, t, sfi.end, &tab) == 0;
             t = (tab.end + 3) & ~(uint64_t)3) {
            for (uint64_t s = tab.children; s < tab.end && vblock(buf, s, tab.end, &str) == 0;
                 s = (str.end + 3) & ~(uint64_t)3) {
                struct {
                    const char *key;
                    char *dst;
                    size_t cap;
                } want[] = {
                    {"CompanyName", out->company, sizeof(out->company)},
                    {"ProductName", out->product, sizeof(out->product)},
                    {"FileDescription", out->description, sizeof(out->description)},
                    {"FileVersion", out->file_version, sizeof(out->file_version)},
                };
                for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
                    if (want[w].dst[0] == '\0' && key_is(buf, &str, want[w].key))
                        utf16_to_utf8(buf + str.value, str.value_bytes / 2, want[w].dst,
                                      want[w].cap);
            }
        }
    }
    return 0;
}

const char *pw_pe_match_name(pw_pe_match_t m)
{
    switch (m) {
    case PW_PE_MATCH_CODE:
        return "code";
    case PW_PE_MATCH_DATA:
        return "data";
    case PW_PE_MATCH_FILE:
        return "file";
    default:
        return "none";
    }
}
