/* test_linux_text.c: /proc/allocinfo and /proc/vmallocinfo parsers on public captures (origins
 * in tests/fixtures/SOURCES.md), the rows a Linux sample is made of (linux_rows), and saved
 * series (linux_series). Expected values were read off the files by hand or computed with awk
 * over them (the commands are in SOURCES.md). */
#include "test_util.h"

#include "allocinfo_text.h"
#include "linux_rows.h"
#include "linux_series.h"
#include "poolmon_text.h"
#include "vmallocinfo_text.h"

static char *load(const char *rel, size_t *len)
{
    return pw_test_read_file(pw_test_fixture(rel), len);
}

static const pw_entry_t *row(const pw_sample_t *s, const char *tag)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].tag_len == strlen(tag) &&
            memcmp(s->entries[i].tag, tag, strlen(tag)) == 0)
            return &s->entries[i];
    fail_msg("no row '%s'", tag);
    return NULL;
}

/* ---- allocinfo ---------------------------------------------------------------------------- */

/* The 1.0 format as the kernel printed it when the version line was added (LKML 2024): nine
 * sites, two with live allocations. Strict mode accepts it. */
static void test_allocinfo_v1(void **state)
{
    (void)state;
    size_t len;
    char *t = load("allocinfo/case40_allocinfo_1.0_lkml_2024_head.txt", &len);
    pw_allocinfo_doc_t doc;
    pw_allocinfo_opts_t strict = {.strict = true};
    pw_diag_t d;
    assert_int_equal(pw_allocinfo_parse(t, len, &strict, &doc, &d), 0);
    assert_string_equal(doc.version, "1.0");
    assert_int_equal(doc.n_sites, 9);
    assert_string_equal(doc.sites[0].file, "init/main.c");
    assert_int_equal(doc.sites[0].src_line, 1314);
    assert_string_equal(doc.sites[0].func, "do_initcalls");
    assert_string_equal(doc.sites[0].module, "");
    assert_int_equal(doc.sites[7].bytes, 512);
    assert_int_equal(doc.sites[7].calls, 1);
    assert_string_equal(doc.sites[7].file, "arch/x86/events/rapl.c");
    assert_int_equal(doc.sites[7].src_line, 681);
    assert_int_equal(doc.sites[7].line, 9);
    assert_int_equal(doc.sites[8].bytes, 128);

    /* rows: the 7 idle sites are left out */
    pw_sample_t s;
    pw_sample_init(&s);
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_alloc(&lr, &doc, &d), 0);
    assert_int_equal(s.n, 2);
    assert_true(s.flags & PW_SAMPLE_NO_ALLOCS);
    const pw_entry_t *e = row(&s, "arch/x86/events/rapl.c:681");
    assert_int_equal(e->pool, PW_POOL_NONPAGED);
    assert_int_equal(e->diff, 1);
    assert_int_equal(e->bytes, 512);
    assert_int_equal(e->allocs, 0);
    assert_int_equal(row(&s, "arch/x86/events/rapl.c:571")->bytes, 128);
    assert_int_equal(lr.st.sites_idle, 7);
    assert_int_equal(lr.st.site_rows, 2);
    pw_linux_rows_close(&lr);
    pw_sample_close(&s);
    pw_allocinfo_doc_close(&doc);
    free(t);
}

/* 2.0 (LKML 2025): "accurate:no" after the tag marks two sites; both are kept. */
static void test_allocinfo_v2_accurate(void **state)
{
    (void)state;
    size_t len;
    char *t = load("allocinfo/case41_allocinfo_2.0_lkml_2025_accurate_no.txt", &len);
    pw_allocinfo_doc_t doc;
    pw_allocinfo_opts_t strict = {.strict = true};
    assert_int_equal(pw_allocinfo_parse(t, len, &strict, &doc, NULL), 0);
    assert_string_equal(doc.version, "2.0");
    assert_int_equal(doc.n_sites, 10);
    assert_true(doc.sites[2].inaccurate);
    assert_string_equal(doc.sites[2].func, "__its_alloc");
    assert_false(doc.sites[1].inaccurate);
    assert_true(doc.sites[7].inaccurate);
    assert_int_equal(doc.sites[7].bytes, 49152);
    assert_int_equal(doc.sites[7].calls, 48);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_alloc(&lr, &doc, NULL), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(row(&s, "arch/x86/kernel/cpu/mce/core.c:2709")->bytes, 49152);
    assert_int_equal(row(&s, "arch/x86/kernel/cpu/mce/genpool.c:132")->diff, 1);
    assert_int_equal(lr.st.sites_inaccurate, 1); /* the idle __its_alloc is left out */
    pw_linux_rows_close(&lr);
    pw_sample_close(&s);
    pw_allocinfo_doc_close(&doc);
    free(t);
}

/* proc.rst's example (pasted: a prompt, no version line, "..."): lenient mode reads the 11
 * rows and counts the 2 other lines; strict mode refuses the prompt by line. */
static void test_allocinfo_procrst(void **state)
{
    (void)state;
    size_t len;
    char *t = load("allocinfo/case42_allocinfo_procrst_sorted_module.txt", &len);
    pw_allocinfo_doc_t doc;
    pw_diag_t d;
    assert_int_equal(pw_allocinfo_parse(t, len, NULL, &doc, &d), 0);
    assert_string_equal(doc.version, "");
    assert_int_equal(doc.n_sites, 11);
    assert_int_equal(doc.n_skipped, 2);
    assert_int_equal(doc.first_skipped, 1);
    assert_int_equal(doc.sites[0].bytes, 127664128);
    assert_int_equal(doc.sites[0].calls, 31168);
    assert_string_equal(doc.sites[8].module, "ctagmod");
    assert_string_equal(doc.sites[8].func, "ctagmod_start");
    assert_string_equal(doc.sites[8].file, "drivers/staging/ctagmod/ctagmod.c");
    assert_int_equal(doc.sites[8].src_line, 20);
    pw_allocinfo_doc_close(&doc);
    pw_allocinfo_opts_t strict = {.strict = true};
    assert_int_equal(pw_allocinfo_parse(t, len, &strict, &doc, &d), PW_EPARSE);
    assert_int_equal(d.line, 1);
    assert_int_equal(doc.n_sites, 0);
    free(t);
}

static void test_allocinfo_errors(void **state)
{
    (void)state;
    pw_allocinfo_doc_t doc;
    pw_diag_t d;
    pw_allocinfo_opts_t strict = {.strict = true};
    /* header with and without '#', a negative size (per-CPU sums read unlocked), '*' marks */
    const char *ok = "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n"
                     "<size> <calls> <tag info>\n"
                     "         -64        0 mm/a.c:1 func:f \n"
                     "          8*       1* mm/b.c:2 func:g \n";
    assert_int_equal(pw_allocinfo_parse(ok, strlen(ok), &strict, &doc, &d), 0);
    assert_int_equal(doc.n_sites, 2);
    assert_int_equal(doc.sites[0].bytes, -64);
    assert_true(doc.sites[1].inaccurate);
    pw_allocinfo_doc_close(&doc);
    /* a size beyond int64 */
    const char *big = "allocinfo - version: 1.0\n 9223372036854775808 1 mm/a.c:1 func:f\n";
    assert_int_equal(pw_allocinfo_parse(big, strlen(big), &strict, &doc, &d), PW_ERANGE);
    assert_int_equal(d.line, 2);
    assert_string_equal(d.field, "size");
    /* a row before the version line (strict), a NUL byte, not allocinfo at all (lenient) */
    const char *early = " 1 1 mm/a.c:1 func:f\n";
    assert_int_equal(pw_allocinfo_parse(early, strlen(early), &strict, &doc, &d), PW_EPARSE);
    assert_int_equal(pw_allocinfo_parse("allocinfo - version: 1.0\n\0", 26, NULL, &doc, &d),
                     PW_EPARSE);
    assert_int_equal(d.line, 2);
    assert_int_equal(pw_allocinfo_parse("hello\n", 6, NULL, &doc, &d), PW_EFORMAT);
    /* a line number that is not a number is not a row */
    const char *noline = "allocinfo - version: 1.0\n 1 1 mm/a.c:x func:f\n";
    assert_int_equal(pw_allocinfo_parse(noline, strlen(noline), &strict, &doc, &d), PW_EPARSE);
}

/* ---- vmallocinfo -------------------------------------------------------------------------- */

/* A 4.9 ARM IP camera's whole /proc/vmallocinfo: 97 areas of 51 callers (awk, SOURCES.md). */
static void test_vmallocinfo_camera(void **state)
{
    (void)state;
    size_t len;
    char *t = load("vmallocinfo/case43_vmallocinfo_4.9_arm_ipc_camera.txt", &len);
    pw_vmallocinfo_doc_t doc;
    pw_vmallocinfo_opts_t strict = {.strict = true};
    pw_diag_t d;
    assert_int_equal(pw_vmallocinfo_parse(t, len, &strict, &doc, &d), 0);
    assert_int_equal(doc.n_areas, 97);
    assert_int_equal(doc.n_callers, 51);
    assert_int_equal(doc.total_bytes, 38096896);
    const pw_vmalloc_caller_t *c = &doc.callers[0];
    assert_string_equal(c->key, "load_module+0x650");
    assert_int_equal(c->areas, 8);
    assert_int_equal(c->bytes, 741376);
    assert_int_equal(c->pages, 173);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_vmalloc(&lr, &doc, &d), 0);
    assert_int_equal(s.n, 51);
    const pw_entry_t *e = row(&s, "vm:vpu_create_channel+0x124 [vpu]");
    assert_int_equal(e->diff, 3);
    assert_int_equal(e->bytes, 27824128); /* 360448 + 2080768 + 25382912 */
    e = row(&s, "vm:hhe_chn_mem_init+0x5f8 [enc]");
    assert_int_equal(e->diff, 10);
    assert_int_equal(e->bytes, 245760);
    assert_int_equal(row(&s, "vm:iotable_init+0x0")->bytes, 131072);
    assert_int_equal(row(&s, "vm:n_tty_open+0x10")->diff, 3);
    assert_int_equal(row(&s, "vm:_create_jpg_chan+0xa0 [jpeg]")->bytes, 135168);
    pw_linux_rows_close(&lr);
    pw_sample_close(&s);
    pw_vmallocinfo_doc_close(&doc);
    free(t);
}

/* Hashed addresses "0x(ptrval)" (stable 2022) and a mail-wrapped pair (LKML 2024, the
 * continuation lines are not areas: counted, the areas kept). */
static void test_vmallocinfo_ptrval_wrapped(void **state)
{
    (void)state;
    size_t len;
    char *t = load("vmallocinfo/case44_vmallocinfo_ptrval_stable_2022.txt", &len);
    pw_vmallocinfo_doc_t doc;
    assert_int_equal(pw_vmallocinfo_parse(t, len, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_areas, 5);
    assert_int_equal(doc.n_callers, 3);
    assert_int_equal(doc.n_skipped, 2); /* the prompt and "..." */
    assert_string_equal(doc.callers[1].key, "start_kernel+0x4e0");
    assert_int_equal(doc.callers[1].bytes, 24576);
    assert_int_equal(doc.callers[1].pages, 4);
    assert_string_equal(doc.callers[2].key, "_mpic_map_mmio.constprop.0+0x20");
    pw_vmallocinfo_doc_close(&doc);
    free(t);
    t = load("vmallocinfo/case45_vmallocinfo_ghes_lkml_2024_wrapped.txt", &len);
    assert_int_equal(pw_vmallocinfo_parse(t, len, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_areas, 2);
    assert_int_equal(doc.n_callers, 1);
    assert_int_equal(doc.callers[0].bytes, 942227456); /* 1843200 + 940384256 */
    assert_int_equal(doc.n_skipped, 3);
    pw_vmallocinfo_doc_close(&doc);
    pw_vmallocinfo_opts_t strict = {.strict = true};
    pw_diag_t d;
    assert_int_equal(pw_vmallocinfo_parse(t, len, &strict, &doc, &d), PW_EPARSE);
    assert_int_equal(d.line, 1);
    pw_vmallocinfo_doc_close(&doc);
    free(t);
    /* areas without a caller */
    const char *nc = "0xffffb3eb00000000-0xffffb3eb00002000    8192 vm_map_ram\n"
                     "0xffffb3eb00002000-0xffffb3eb00004000    8192 unpurged vm_area\n"
                     "0xffffb3eb00004000-0xffffb3eb00006000    8192 vm_map_ram\n";
    assert_int_equal(pw_vmallocinfo_parse(nc, strlen(nc), &strict, &doc, NULL), 0);
    assert_int_equal(doc.n_callers, 2);
    assert_string_equal(doc.callers[0].key, "vm_map_ram");
    assert_int_equal(doc.callers[0].areas, 2);
    assert_string_equal(doc.callers[1].key, "unpurged vm_area");
    pw_vmallocinfo_doc_close(&doc);
    const char *big = "0x0-0x1 18446744073709551616 f+0x1/0x2\n";
    assert_int_equal(pw_vmallocinfo_parse(big, strlen(big), NULL, &doc, &d), PW_ERANGE);
    assert_int_equal(pw_vmallocinfo_parse("x\n", 2, NULL, &doc, &d), PW_EFORMAT);
}

/* ---- rows --------------------------------------------------------------------------------- */

/* Two caches of one name (mlx5 per device, node_exporter#3506) stay two rows, in order; an
 * allocation site whose path is too long keeps its last directories. */
static void test_rows_duplicates_and_long_sites(void **state)
{
    (void)state;
    size_t len;
    char *t = load("slabinfo/case46_slabinfo_2.1_mlx5_duplicate_names.txt", &len);
    pw_slabinfo_doc_t doc;
    pw_slabinfo_opts_t strict = {.strict = true};
    pw_diag_t d;
    assert_int_equal(pw_slabinfo_parse(t, len, &strict, &doc, &d), 0);
    assert_int_equal(doc.n_caches, 5);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), 0);
    assert_int_equal(s.n, 5);
    assert_int_equal(row(&s, "mlx5_fs_ftes")->diff, 44);
    assert_int_equal(row(&s, "mlx5_fs_ftes")->bytes, 44 * 736);
    assert_int_equal(row(&s, "mlx5_fs_ftes#2")->diff, 396);
    assert_int_equal(row(&s, "mlx5_fs_ftes#2")->bytes, 396 * 736);
    assert_int_equal(row(&s, "mlx5_fs_fgs#2")->diff, 84);
    assert_int_equal(lr.st.renamed, 2);
    /* the same table again: the same names (ordinals follow the file's order) */
    pw_sample_t s2;
    pw_sample_init(&s2);
    assert_int_equal(pw_linux_rows_begin(&lr, &s2), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_memory_equal(s.entries[i].tag, s2.entries[i].tag, s.entries[i].tag_len);
    pw_sample_close(&s2);
    char key[PW_LINUX_KEY_MAX + 1];
    size_t kl = pw_linux_rows_site_key(
        "drivers/net/ethernet/mellanox/mlx5/core/steering/dr_ste_v1.c", 1234, key);
    /* 66 bytes: "drivers/", "net/", "ethernet/" dropped to fit 48 */
    assert_string_equal(key, "mellanox/mlx5/core/steering/dr_ste_v1.c:1234");
    assert_int_equal(kl, 44);
    kl = pw_linux_rows_site_key("mm/slub.c", 2259, key);
    assert_string_equal(key, "mm/slub.c:2259");
    pw_linux_rows_close(&lr);
    pw_sample_close(&s);
    pw_slabinfo_doc_close(&doc);
    free(t);
}

/* ---- held bytes: what each slab cache holds -------------------------------------------------
 * num_slabs x pagesperslab x page size per cache, by hand from the files (awk check in
 * SOURCES.md); their sum is what /proc/meminfo calls Slab: when both are read at once. */

static uint64_t held_sum(const pw_sample_t *s)
{
    uint64_t t = 0;
    for (size_t i = 0; i < s->n; i++)
        t += s->entries[i].held_bytes;
    return t;
}

static void test_rows_held_bytes(void **state)
{
    (void)state;
    size_t len;
    char *t = load("slabinfo/case25_slabinfo_2.0_2004_dcache_ext3_inode_growth_2.6.8.txt", &len);
    pw_slabinfo_doc_t doc;
    pw_diag_t d;
    assert_int_equal(pw_slabinfo_parse(t, len, NULL, &doc, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    assert_int_equal(lr.page_size, 4096);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), 0);
    /* ext3_inode_cache: 147614 slabs x 1 page; its objects use 1328526 x 416 */
    assert_int_equal(row(&s, "ext3_inode_cache")->held_bytes, 147614ull * 4096);
    assert_int_equal(row(&s, "ext3_inode_cache")->held_bytes, 604626944ull);
    assert_int_equal(row(&s, "ext3_inode_cache")->bytes, 552666816ull);
    assert_int_equal(row(&s, "dentry_cache")->held_bytes, 155234304ull); /* 37899 x 4096 */
    assert_int_equal(row(&s, "biovec-(256)")->held_bytes, 1048576ull);   /* 128 x 2 pages */
    assert_int_equal(row(&s, "size-4096")->held_bytes, 753664ull);       /* 184 x 4096 */
    assert_int_equal(row(&s, "size-4096")->bytes, 753664ull);            /* one object a page */
    /* Summed: 758,628 KiB (the data README's figure); the reporter's meminfo says Slab:
     * 736384 kB, read separately while updatedb ran: 22,244 KiB (3.0 %) apart. */
    assert_int_equal(held_sum(&s), 758628ull * 1024);
    assert_int_equal(held_sum(&s) - 736384ull * 1024, 22244ull * 1024);
    pw_slabinfo_doc_close(&doc);
    free(t);

    /* case46 on a kernel of 64 KiB pages (arm64): the same slabs hold 16 times more */
    t = load("slabinfo/case46_slabinfo_2.1_mlx5_duplicate_names.txt", &len);
    assert_int_equal(pw_slabinfo_parse(t, len, NULL, &doc, &d), 0);
    lr.page_size = 65536;
    pw_sample_reset(&s);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), 0);
    assert_int_equal(row(&s, "kmem_cache")->held_bytes, 10ull * 2 * 65536);
    assert_int_equal(row(&s, "mlx5_fs_ftes")->held_bytes, 1ull * 8 * 65536);
    assert_int_equal(row(&s, "mlx5_fs_ftes#2")->held_bytes, 9ull * 8 * 65536);
    /* num_slabs x pagesperslab x page size past 2^64: refused with the cache's line */
    lr.page_size = 1ull << 62;
    pw_sample_reset(&s);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), PW_ERANGE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.msg, "kmem_cache"));
    pw_slabinfo_doc_close(&doc);
    free(t);

    /* case28's rows stop after pagesperslab (no slabdata): held bytes are not known, 0 */
    t = load("slabinfo/case28_slabinfo_2.1_2016_partial_quoted_wrapped_header.txt", &len);
    assert_int_equal(pw_slabinfo_parse(t, len, NULL, &doc, &d), 0);
    lr.page_size = 4096;
    pw_sample_reset(&s);
    assert_int_equal(pw_linux_rows_begin(&lr, &s), 0);
    assert_int_equal(pw_linux_rows_add_slab(&lr, doc.caches, doc.n_caches, &d), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(row(&s, "kmalloc-8192")->bytes, 268ull * 8192);
    assert_int_equal(held_sum(&s), 0);
    pw_slabinfo_doc_close(&doc);
    free(t);
    pw_linux_rows_close(&lr);
    pw_sample_close(&s);
}

/* The import's path: case26 as a mailer wrapped it, read as a saved series. Each cache's held
 * bytes and their sum, which is the point's nonpaged total: 174,912 KiB, against the reporter's
 * meminfo Slab: 174020 kB (the data README; read separately, 892 KiB apart). */
static void test_series_held_bytes(void **state)
{
    (void)state;
    size_t len;
    char *t = load("slabinfo/case26_slabinfo_2.0_2005_email_wrapped72_buffer_head_radix.txt", &len);
    pw_linux_series_t ser;
    pw_diag_t d;
    int r = pw_linux_series_parse(t, len, NULL, &ser, &d);
    if (r != 0)
        fail_msg("%d line %u: %s", r, d.line, d.msg);
    assert_int_equal(ser.n_points, 1);
    const pw_sample_t *s = &ser.points[0].sample;
    assert_int_equal(s->n, 117);
    /* radix_tree_node: 24889 slabs x 1 page */
    assert_int_equal(row(s, "radix_tree_node")->held_bytes, 24889ull * 4096);
    assert_int_equal(row(s, "radix_tree_node")->bytes, 158919ull * 536);
    assert_int_equal(held_sum(s), 174912ull * 1024);
    assert_int_equal(s->totals.nonpaged_bytes, held_sum(s));
    assert_int_equal(held_sum(s) - 174020ull * 1024, 892ull * 1024);
    pw_linux_series_close(&ser);
    /* A page size given to the series (an arm64 host's dumps) */
    pw_linux_series_opts_t o = {.page_size = 65536};
    assert_int_equal(pw_linux_series_parse(t, len, &o, &ser, &d), 0);
    s = &ser.points[0].sample;
    assert_int_equal(row(s, "radix_tree_node")->held_bytes, 24889ull * 65536);
    assert_int_equal(held_sum(s), s->totals.nonpaged_bytes);
    pw_linux_series_close(&ser);
    free(t);
}

/* ---- time lines and series ---------------------------------------------------------------- */

static void test_time_lines(void **state)
{
    (void)state;
    uint64_t ms = 0;
    /* date(1) in the C locale; 2026-12-01T16:59:17Z is 1796144357 s (date -u -d ... +%s) */
    assert_int_equal(pw_poolmon_parse_time("Tue Dec  1 16:59:17 UTC 2026", 28, &ms), 1);
    assert_int_equal(ms, 1796144357000ull);
    assert_int_equal(pw_poolmon_parse_time("Tue Dec  1 17:59:17 +0100 2026", 30, &ms), 1);
    assert_int_equal(ms, 1796144357000ull);
    assert_int_equal(pw_poolmon_parse_time("Tue Dec  1 16:59:17 CET 2026", 28, &ms), -1);
    assert_int_equal(pw_poolmon_parse_time("2026-12-01T16:59:17+00:00\r", 26, &ms), 1);
    assert_int_equal(ms, 1796144357000ull);
    assert_int_equal(pw_poolmon_parse_time("dentry 1 2 3", 12, &ms), 0);
}

/* A shell loop's log (date; cat /proc/slabinfo; cat /proc/allocinfo): three points 15 min
 * apart, dentry growing; a prompt line between dumps is skipped and counted. */
static void test_series_loop(void **state)
{
    (void)state;
    const char *text =
        "Tue Dec  1 16:59:17 UTC 2026\n"
        "slabinfo - version: 2.1\n"
        "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
        "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> "
        "<sharedavail>\n"
        "dentry              4200   4221    192   21    1 : tunables    0    0    0 : slabdata "
        "   201    201      0\n"
        "allocinfo - version: 1.0\n"
        "#     <size>  <calls> <tag info>\n"
        "        4096        1 fs/dcache.c:1700 func:__d_alloc \n"
        "$ sleep 900\n"
        "Tue Dec  1 17:14:17 UTC 2026\n"
        "slabinfo - version: 2.1\n"
        "dentry              4410   4410    192   21    1 : tunables    0    0    0 : slabdata "
        "   210    210      0\n"
        "allocinfo - version: 1.0\n"
        "        8192        2 fs/dcache.c:1700 func:__d_alloc \n"
        "slabinfo - version: 2.1\n"
        "dentry              4620   4620    192   21    1 : tunables    0    0    0 : slabdata "
        "   220    220      0\n";
    pw_linux_series_t ser;
    pw_linux_series_opts_t o = {.start_ms = 5, .interval_ms = 600000};
    pw_diag_t d;
    assert_int_equal(pw_linux_series_sniff(text, strlen(text)), 1);
    int r = pw_linux_series_parse(text, strlen(text), &o, &ser, &d);
    if (r != 0)
        fail_msg("%d line %u: %s", r, d.line, d.msg);
    assert_int_equal(ser.n_points, 3);
    assert_int_equal(ser.n_skipped, 1);
    assert_int_equal(ser.first_skipped, 8);
    assert_int_equal(ser.points[0].timestamp_ms, 1796144357000ull);
    assert_true(ser.points[0].has_file_time);
    assert_int_equal(ser.points[0].line, 2);
    assert_int_equal(ser.points[1].timestamp_ms, 1796144357000ull + 900000);
    /* the third dump has no time line: the second's time + interval */
    assert_false(ser.points[2].has_file_time);
    assert_int_equal(ser.points[2].timestamp_ms, 1796144357000ull + 900000 + 600000);
    assert_false(ser.points[2].has_allocinfo);
    const pw_sample_t *s1 = &ser.points[1].sample;
    assert_int_equal(s1->timestamp_ms, ser.points[1].timestamp_ms);
    assert_int_equal(s1->n, 2);
    assert_int_equal(row(s1, "dentry")->bytes, 4410 * 192);
    assert_int_equal(row(s1, "fs/dcache.c:1700")->bytes, 8192);
    assert_int_equal(row(s1, "fs/dcache.c:1700")->diff, 2);
    /* slab pages: 210 slabs * 1 page * 4 KiB */
    assert_int_equal(s1->totals.nonpaged_bytes, 210ull * 4096);
    assert_int_equal(ser.st.slab_rows, 3);
    assert_int_equal(ser.st.site_rows, 2);
    pw_linux_series_close(&ser);

    /* a zone name cannot be placed: said with the line */
    const char *cet = "Tue Dec  1 16:59:17 CET 2026\nslabinfo - version: 2.1\n";
    assert_int_equal(pw_linux_series_parse(cet, strlen(cet), NULL, &ser, &d), PW_EPARSE);
    assert_int_equal(d.line, 1);
    /* poolmon text is not a series */
    const char *pm =
        " Tag  Type     Allocs            Frees            Diff   Bytes      Per Alloc\n";
    assert_int_equal(pw_linux_series_sniff(pm, strlen(pm)), 0);
    assert_int_equal(pw_linux_series_parse(pm, strlen(pm), NULL, &ser, &d), PW_EFORMAT);
    /* a dump that does not parse names the whole text's line */
    const char *bad = "Tue Dec  1 16:59:17 UTC 2026\nslabinfo - version: 2.1\n"
                      "dentry 99999999999999999999 4221 192 21 1 : tunables 0 0 0 : slabdata 201 "
                      "201 0\n";
    assert_int_equal(pw_linux_series_parse(bad, strlen(bad), NULL, &ser, &d), PW_ERANGE);
    assert_int_equal(d.line, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocinfo_v1),
        cmocka_unit_test(test_allocinfo_v2_accurate),
        cmocka_unit_test(test_allocinfo_procrst),
        cmocka_unit_test(test_allocinfo_errors),
        cmocka_unit_test(test_vmallocinfo_camera),
        cmocka_unit_test(test_vmallocinfo_ptrval_wrapped),
        cmocka_unit_test(test_rows_duplicates_and_long_sites),
        cmocka_unit_test(test_rows_held_bytes),
        cmocka_unit_test(test_series_held_bytes),
        cmocka_unit_test(test_time_lines),
        cmocka_unit_test(test_series_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
