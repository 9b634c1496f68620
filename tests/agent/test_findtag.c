/* test_findtag.c: find-tag's reading of driver files (agent/pe.h, agent/findtag.h) on PE files
 * built here byte by byte from the PE specification (the values they must give are the ones
 * written into them), and, under Wine (the Windows build of this test), on the real .sys files
 * Wine installs in its prefix's System32\drivers. */
#include "test_util.h"

#include "findtag.h"
#include "pe.h"

#ifndef _WIN32
#include <sys/stat.h>
#include <unistd.h>
#endif

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

/* A version block (VS_VERSIONINFO layout) at buf + at: header, key (UTF-16, NUL), value at the
 * next 4-byte boundary; children appended by the caller, who then calls block_end. Returns the
 * offset where children go. */
static size_t block(uint8_t *buf, size_t at, const char *key, const void *value, size_t vbytes,
                    int text)
{
    size_t p = at + 6;
    for (const char *k = key;; k++) {
        put16(buf + p, (uint16_t)(unsigned char)*k);
        p += 2;
        if (*k == '\0')
            break;
    }
    p = (p + 3) & ~(size_t)3;
    if (text) {
        const char *s = value;
        for (size_t i = 0; i <= strlen(s); i++)
            put16(buf + p + 2 * i, (uint16_t)(unsigned char)s[i]);
        put16(buf + at + 2, (uint16_t)(strlen(s) + 1)); /* WCHARs */
        p += 2 * (strlen(s) + 1);
    } else {
        if (vbytes)
            memcpy(buf + p, value, vbytes);
        put16(buf + at + 2, (uint16_t)vbytes);
        p += vbytes;
    }
    put16(buf + at + 4, (uint16_t)(text ? 1 : 0));
    return (p + 3) & ~(size_t)3;
}

static void block_end(uint8_t *buf, size_t at, size_t end)
{
    put16(buf + at, (uint16_t)(end - at));
}

/* A PE32+ x64 driver of 4 KiB: .text (code) at file 0x400 holding `mov r8d, 'Ddk '` at
 * +0x10; .data at 0x600 holding "Xyz1"; .rsrc at 0x800 with a version resource (file version
 * 5.2.3790.1830, CompanyName "Ddk Corp", ProductName "Ddk Driver Kit"); "Hdr!" in the DOS
 * stub, outside every section. */
static size_t build_pe(uint8_t *buf, int with_version)
{
    memset(buf, 0, 4096);
    buf[0] = 'M';
    buf[1] = 'Z';
    memcpy(buf + 0x48, "Hdr!", 4);
    put32(buf + 0x3C, 0x80);
    memcpy(buf + 0x80, "PE\0\0", 4);
    uint8_t *coff = buf + 0x84;
    put16(coff, 0x8664);
    put16(coff + 2, 3);
    put16(coff + 16, 240);
    uint8_t *opt = buf + 0x98;
    put16(opt, 0x20b);
    put32(opt + 108, 16);
    if (with_version) {
        put32(opt + 128, 0x3000); /* resource directory RVA */
        put32(opt + 132, 0x400);
    }
    static const struct {
        const char *name;
        uint32_t va, raw, flags;
    } secs[] = {{".text", 0x1000, 0x400, 0x60000020u},
                {".data", 0x2000, 0x600, 0xC0000040u},
                {".rsrc", 0x3000, 0x800, 0x40000040u}};
    for (int i = 0; i < 3; i++) {
        uint8_t *s = opt + 240 + 40 * i;
        memcpy(s, secs[i].name, strlen(secs[i].name));
        put32(s + 8, 0x200);
        put32(s + 12, secs[i].va);
        put32(s + 16, i == 2 ? 0x400 : 0x200);
        put32(s + 20, secs[i].raw);
        put32(s + 36, secs[i].flags);
    }
    static const uint8_t mov[] = {0x41, 0xb8, 'D', 'd', 'k', ' '}; /* mov r8d, imm32 */
    memcpy(buf + 0x410, mov, sizeof(mov));
    memcpy(buf + 0x620, "Xyz1", 4);
    if (!with_version)
        return 4096;
    /* resource tree: type 16 -> name 1 -> language 0x409 -> data entry */
    uint8_t *r = buf + 0x800;
    put16(r + 14, 1);
    put32(r + 16, 16);
    put32(r + 20, 0x80000018u);
    put16(r + 0x18 + 14, 1);
    put32(r + 0x18 + 16, 1);
    put32(r + 0x18 + 20, 0x80000030u);
    put16(r + 0x30 + 14, 1);
    put32(r + 0x30 + 16, 0x409);
    put32(r + 0x30 + 20, 0x48);
    put32(r + 0x48, 0x3000 + 0x60); /* an RVA */
    /* VS_VERSIONINFO at 0x860 */
    size_t vi = 0x860;
    uint8_t ffi[52] = {0};
    put32(ffi, 0xFEEF04BDu);
    put32(ffi + 4, 0x00010000u);
    put32(ffi + 8, (5u << 16) | 2u);        /* 5.2 */
    put32(ffi + 12, (3790u << 16) | 1830u); /* .3790.1830 */
    size_t c = block(buf, vi, "VS_VERSION_INFO", ffi, sizeof(ffi), 0);
    size_t sfi = c;
    c = block(buf, sfi, "StringFileInfo", NULL, 0, 0);
    size_t tab = c;
    c = block(buf, tab, "040904B0", NULL, 0, 0);
    static const char *const kv[][2] = {{"CompanyName", "Ddk Corp"},
                                        {"FileDescription", "Ddk sample driver"},
                                        {"ProductName", "Ddk Driver Kit"},
                                        {"FileVersion", "5.2.3790.1830 (srv03_sp1_rtm)"}};
    for (int i = 0; i < 4; i++) {
        size_t s = c;
        c = block(buf, s, kv[i][0], kv[i][1], 0, 1);
        block_end(buf, s, c);
    }
    block_end(buf, tab, c);
    block_end(buf, sfi, c);
    block_end(buf, vi, c);
    put32(r + 0x48 + 4, (uint32_t)(c - vi));
    return 4096;
}

static void test_pe_layout_and_version(void **state)
{
    (void)state;
    uint8_t buf[4096];
    size_t len = build_pe(buf, 1);
    pw_pe_t pe;
    pw_diag_t d;
    assert_int_equal(pw_pe_parse(buf, len, &pe, &d), 0);
    assert_int_equal(pe.machine, 0x8664);
    assert_int_equal(pe.pe32plus, 1);
    assert_int_equal(pe.n_sec, 3);
    assert_string_equal(pe.sec[0].name, ".text");
    assert_int_equal(pe.sec[2].raw, 0x800);
    uint64_t off = 0;
    assert_int_equal(pw_pe_find(&pe, buf, len, (const uint8_t *)"Ddk ", 4, &off), PW_PE_MATCH_CODE);
    assert_int_equal(off, 0x412);
    assert_int_equal(pw_pe_find(&pe, buf, len, (const uint8_t *)"Xyz1", 4, &off), PW_PE_MATCH_DATA);
    assert_int_equal(off, 0x620);
    assert_int_equal(pw_pe_find(&pe, buf, len, (const uint8_t *)"Hdr!", 4, &off), PW_PE_MATCH_FILE);
    assert_int_equal(off, 0x48);
    assert_int_equal(pw_pe_find(&pe, buf, len, (const uint8_t *)"Nope", 4, NULL), PW_PE_MATCH_NONE);
    pw_pe_version_t v;
    assert_int_equal(pw_pe_version(&pe, buf, len, &v), 0);
    assert_string_equal(v.file_version, "5.2.3790.1830"); /* VS_FIXEDFILEINFO, not the string */
    assert_string_equal(v.company, "Ddk Corp");
    assert_string_equal(v.product, "Ddk Driver Kit");
    assert_string_equal(v.description, "Ddk sample driver");
    /* without a resource directory */
    len = build_pe(buf, 0);
    assert_int_equal(pw_pe_parse(buf, len, &pe, &d), 0);
    assert_int_equal(pw_pe_version(&pe, buf, len, &v), PW_ENOENT);
    /* not PE; a section table beyond the file */
    assert_int_equal(pw_pe_parse((const uint8_t *)"MZ..Ddk ..", 10, &pe, &d), PW_EFORMAT);
    build_pe(buf, 1);
    put16(buf + 0x86, 96); /* 96 sections: 392 + 96 * 40 bytes run past 4 KiB */
    assert_int_equal(pw_pe_parse(buf, 4096, &pe, &d), PW_EPARSE);
    assert_string_equal(d.field, "sections");
}

typedef struct {
    char names[8][128];
    int kinds[8];
    char company[8][160];
    int n;
} seen_t;

static void on_match(const pw_findtag_match_t *m, void *arg)
{
    seen_t *s = arg;
    if (s->n < 8) {
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s", m->name);
        snprintf(s->company[s->n], sizeof(s->company[0]), "%s", m->ver.company);
        s->kinds[s->n++] = (int)m->kind;
    }
}

#ifndef _WIN32
static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Ranking: the driver whose code holds the tag first, then data, then a file that merely
 * contains the bytes (a .sys that is not PE, an .inf), whatever the names' order; two roots
 * ranked together, with their labels; a root's *.sys filter. */
static void test_findtag_ranks_files(void **state)
{
    (void)state;
    char root[] = "/tmp/pw_findtag_pe_XXXXXX", p[512];
    assert_non_null(mkdtemp(root));
    uint8_t buf[4096];
    build_pe(buf, 1);
    snprintf(p, sizeof(p), "%s/zz_code.sys", root);
    write_file(p, buf, sizeof(buf));
    /* the same driver with the tag moved from .text to .data */
    memcpy(buf + 0x410, "\0\0\0\0\0\0", 6);
    memcpy(buf + 0x630, "Ddk ", 4);
    snprintf(p, sizeof(p), "%s/mm_data.sys", root);
    write_file(p, buf, sizeof(buf));
    snprintf(p, sizeof(p), "%s/aa_plain.sys", root);
    write_file(p, "MZ..Ddk ..", 10);
    snprintf(p, sizeof(p), "%s/store", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/store/pkg.inf_amd64_1", root);
    assert_int_equal(mkdir(p, 0700), 0);
    build_pe(buf, 1);
    snprintf(p, sizeof(p), "%s/store/pkg.inf_amd64_1/ddk.SYS", root);
    write_file(p, buf, sizeof(buf));
    snprintf(p, sizeof(p), "%s/store/pkg.inf_amd64_1/ddk.inf", root);
    write_file(p, "Ddk ", 4);

    seen_t s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(pw_findtag_scan(root, (const uint8_t *)"Ddk ", 4, on_match, &s), 5);
    assert_int_equal(s.n, 5);
    /* code: store/pkg.../ddk.SYS and zz_code.sys (by name); data; then the plain files */
    assert_string_equal(s.names[0], "store/pkg.inf_amd64_1/ddk.SYS");
    assert_int_equal(s.kinds[0], PW_PE_MATCH_CODE);
    assert_string_equal(s.company[0], "Ddk Corp");
    assert_string_equal(s.names[1], "zz_code.sys");
    assert_int_equal(s.kinds[1], PW_PE_MATCH_CODE);
    assert_string_equal(s.names[2], "mm_data.sys");
    assert_int_equal(s.kinds[2], PW_PE_MATCH_DATA);
    assert_string_equal(s.names[3], "aa_plain.sys");
    assert_int_equal(s.kinds[3], PW_PE_MATCH_FILE);
    assert_string_equal(s.names[4], "store/pkg.inf_amd64_1/ddk.inf");

    /* as the Windows agent searches: drivers (flat) and the store (2 levels, *.sys only) */
    char store[512];
    snprintf(store, sizeof(store), "%s/store", root);
    pw_findtag_root_t roots[3] = {{root, "drivers", 0, 0},
                                  {store, "DriverStore/FileRepository", 2, 1},
                                  {"/nonexistent/poolwatch", "gone", 0, 0}};
    memset(&s, 0, sizeof(s));
    assert_int_equal(pw_findtag_scan_roots(roots, 3, (const uint8_t *)"Ddk ", 4, on_match, &s), 4);
    assert_string_equal(s.names[0], "DriverStore/FileRepository/pkg.inf_amd64_1/ddk.SYS");
    assert_string_equal(s.names[1], "drivers/zz_code.sys");
    assert_string_equal(s.names[2], "drivers/mm_data.sys");
    assert_string_equal(s.names[3], "drivers/aa_plain.sys");
    assert_int_equal(pw_findtag_scan_roots(roots + 2, 1, (const uint8_t *)"Ddk ", 4, on_match, &s),
                     PW_ENOENT);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
}
#else
/* Wine's own drivers in the prefix (wine 8.0, Debian 12's wine64): mountmgr.sys holds the
 * bytes "CD00" as the immediate of `mov $0x30304443, ...` in .text (objdump -d of the same
 * file, offset 0x1a89 inside .text at file offset 0x1000); ksecdd.sys has a version resource
 * (strings -el: CompanyName "Microsoft Corporation", ProductName "Wine", FileVersion
 * 10.0.14393.187). */
static void test_findtag_wine_drivers(void **state)
{
    (void)state;
    const char *sr = getenv("SystemRoot");
    char dir[512];
    snprintf(dir, sizeof(dir), "%s\\system32\\drivers", sr ? sr : "C:\\windows");
    seen_t s;
    memset(&s, 0, sizeof(s));
    int n = pw_findtag_scan(dir, (const uint8_t *)"CD00", 4, on_match, &s);
    assert_true(n >= 1);
    assert_string_equal(s.names[0], "mountmgr.sys");
    assert_int_equal(s.kinds[0], PW_PE_MATCH_CODE);
    memset(&s, 0, sizeof(s));
    n = pw_findtag_scan(dir, (const uint8_t *)"ksecdd.sys", 10, on_match, &s);
    assert_true(n >= 1);
    int k = -1;
    for (int i = 0; i < s.n; i++)
        if (strcmp(s.names[i], "ksecdd.sys") == 0)
            k = i;
    assert_true(k >= 0);
    assert_string_equal(s.company[k], "Microsoft Corporation");
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pe_layout_and_version),
#ifndef _WIN32
        cmocka_unit_test(test_findtag_ranks_files),
#else
        cmocka_unit_test(test_findtag_wine_drivers),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
