/* test_slabinfo_text.c: the slabinfo parser on every shared capture (expected values from
 * shared/data/README.md and from reading the files; totals computed with awk over the
 * unwrapped files, see tests/fixtures/SOURCES.md) and on hand-made inputs for each layout
 * variant and each error. */
#include "test_util.h"

#include "slabinfo_text.h"

#define KIB 1024ull

typedef struct {
    char *text;
    size_t len;
    pw_slabinfo_doc_t doc;
} loaded_t;

static void load(loaded_t *l, const char *file)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "slabinfo/%s", file);
    l->text = pw_test_read_file(pw_test_fixture(rel), &l->len);
    pw_diag_t d;
    int r = pw_slabinfo_parse(l->text, l->len, NULL, &l->doc, &d);
    if (r != 0)
        fail_msg("%s: %d line %u field %s: %s", file, r, d.line, d.field, d.msg);
}

static void unload(loaded_t *l)
{
    pw_slabinfo_doc_close(&l->doc);
    free(l->text);
}

static const pw_slab_cache_t *find(const pw_slabinfo_doc_t *doc, const char *name)
{
    for (size_t i = 0; i < doc->n_caches; i++)
        if (strcmp(doc->caches[i].name, name) == 0)
            return &doc->caches[i];
    fail_msg("cache '%s' not found", name);
    return NULL;
}

static uint64_t slab_kib(const pw_slab_cache_t *c)
{
    uint64_t b = 0;
    assert_int_equal(pw_slabinfo_cache_slab_bytes(c, 4096, &b), 0);
    return b / KIB;
}

static uint64_t total_kib(const pw_slabinfo_doc_t *doc)
{
    size_t missing = 99;
    uint64_t b = pw_slabinfo_doc_slab_bytes(doc, 4096, &missing);
    assert_int_equal(missing, 0);
    return b / KIB;
}

static int parse_str(const char *s, const pw_slabinfo_opts_t *o, pw_slabinfo_doc_t *doc,
                     pw_diag_t *d)
{
    return pw_slabinfo_parse(s, strlen(s), o, doc, d);
}

/* ---- the shared captures ------------------------------------------------------------------ */

static void test_case20_v11_plain(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case20_slabinfo_1.1_2004_inode_dentry_growth_2.4.26.txt");
    assert_string_equal(l.doc.version, "1.1");
    assert_int_equal(l.doc.n_blocks, 1);
    assert_int_equal(l.doc.blocks[0].layout, PW_SLABINFO_LAYOUT_V1);
    assert_int_equal(l.doc.n_caches, 69);
    assert_int_equal(l.doc.n_partial, 0);
    assert_int_equal(l.doc.n_skipped_lines, 0);
    const pw_slab_cache_t *c = find(&l.doc, "inode_cache");
    assert_int_equal(c->active_objs, 369522);
    assert_int_equal(c->num_objs, 491666);
    assert_int_equal(c->objsize, 512);
    assert_int_equal(c->active_slabs, 70224);
    assert_int_equal(c->num_slabs, 70238);
    assert_int_equal(c->pagesperslab, 1);
    /* 1.1 has no objperslab: 491666 / 70238 = 7 exactly, so it is derived and flagged. */
    assert_int_equal(c->objperslab, 7);
    assert_true(c->derived & PW_SLAB_HAS_OBJPERSLAB);
    assert_false(c->partial);
    assert_int_equal(slab_kib(c), 280952);
    c = find(&l.doc, "dentry_cache");
    assert_int_equal(c->active_objs, 172781);
    assert_int_equal(c->num_objs, 368580);
    assert_int_equal(slab_kib(c), 49144);
    c = find(&l.doc, "size-32(DMA)");
    assert_int_equal(c->objsize, 64);
    c = find(&l.doc, "size-131072");
    assert_int_equal(c->pagesperslab, 32);
    /* No slabs: objperslab cannot be derived and stays absent. */
    assert_false(c->present & PW_SLAB_HAS_OBJPERSLAB);
    assert_int_equal(total_kib(&l.doc), 347820);
    /* First and last rows, by line. */
    assert_string_equal(l.doc.caches[0].name, "kmem_cache");
    assert_int_equal(l.doc.caches[0].line, 2);
    assert_string_equal(l.doc.caches[68].name, "size-32");
    assert_int_equal(l.doc.caches[68].line, 70);
    unload(&l);
}

static void test_case21_wrapped_quoted_stats(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case21_slabinfo_1.1stats_2001_wrapped_quoted_2.4.13ac.txt");
    assert_string_equal(l.doc.version, "1.1 (statistics)");
    assert_true(l.doc.blocks[0].flags & PW_SLABINFO_STATISTICS);
    assert_int_equal(l.doc.n_caches, 65);
    assert_int_equal(l.doc.n_partial, 0);
    assert_int_equal(l.doc.n_skipped_lines, 0);
    for (size_t i = 0; i < l.doc.n_caches; i++) {
        assert_true(l.doc.caches[i].flags & PW_SLAB_WRAPPED);
        assert_int_equal(l.doc.caches[i].n_stats, 5);
        /* Record i starts on line 2 + 2i (line 1 is the version). */
        assert_int_equal(l.doc.caches[i].line, 2 + 2 * i);
    }
    const pw_slab_cache_t *c = find(&l.doc, "buffer_head");
    assert_int_equal(c->active_objs, 133028);
    assert_int_equal(c->num_objs, 158804);
    assert_int_equal(c->num_slabs, 4292);
    assert_int_equal(slab_kib(c), 17168);
    assert_int_equal(slab_kib(find(&l.doc, "inode_cache")), 6756);
    c = find(&l.doc, "file lock cache");
    assert_int_equal(c->active_objs, 149);
    assert_int_equal(c->objsize, 100);
    uint64_t want[5] = {187, 11840518, 11, 6, 0}; /* high allocs grown reaped errors */
    for (int i = 0; i < 5; i++)
        assert_int_equal(c->stats[i], want[i]);
    find(&l.doc, "dnotify cache");
    find(&l.doc, "fasync cache");
    assert_int_equal(find(&l.doc, "sigqueue")->stats[1], 1826655747ull);
    assert_int_equal(find(&l.doc, "size-32")->stats[1], 52785063ull);
    assert_int_equal(total_kib(&l.doc), 33384);
    unload(&l);
}

static void test_case22_v11_stats(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case22_slabinfo_1.1stats_2002_swapoff_leak_2.4.19.txt");
    assert_int_equal(l.doc.n_caches, 59);
    assert_int_equal(total_kib(&l.doc), 1288);
    assert_int_equal(slab_kib(find(&l.doc, "buffer_head")), 768);
    const pw_slab_cache_t *c = find(&l.doc, "names_cache");
    assert_int_equal(c->active_objs, 0);
    assert_int_equal(c->stats[1], 341326);
    assert_false(c->flags & PW_SLAB_WRAPPED);
    unload(&l);
}

static void test_case23_v11_smp_prompt(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case23_slabinfo_1.1smp_2001_buffer_head_lowmem_2.4.15.txt");
    assert_string_equal(l.doc.version, "1.1 (SMP)");
    assert_true(l.doc.blocks[0].flags & PW_SLABINFO_SMP);
    assert_int_equal(l.doc.n_caches, 60);
    /* The shell prompt line is noise. */
    assert_int_equal(l.doc.n_skipped_lines, 1);
    assert_int_equal(l.doc.first_skipped, 1);
    const pw_slab_cache_t *c = find(&l.doc, "buffer_head");
    assert_int_equal(c->active_objs, 561764);
    assert_int_equal(c->num_objs, 719760);
    assert_int_equal(c->num_slabs, 17994);
    assert_int_equal(slab_kib(c), 71976);
    assert_int_equal(c->limit, 252);
    assert_int_equal(c->batchcount, 126);
    c = find(&l.doc, "sock");
    assert_int_equal(c->limit, 124);
    assert_int_equal(c->batchcount, 62);
    assert_int_equal(slab_kib(find(&l.doc, "inode_cache")), 19184);
    assert_int_equal(find(&l.doc, "file lock cache")->active_objs, 91);
    assert_int_equal(total_kib(&l.doc), 96692);
    unload(&l);
}

static void test_case24_broken_manual_wrap(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case24_slabinfo_2.0stats_2003_broken_cache_manual_wrap.txt");
    assert_string_equal(l.doc.version, "2.0 (statistics)");
    assert_int_equal(l.doc.blocks[0].layout, PW_SLABINFO_LAYOUT_V2);
    assert_int_equal(l.doc.n_caches, 1);
    const pw_slab_cache_t *c = &l.doc.caches[0];
    assert_string_equal(c->name, "broken");
    assert_int_equal(c->active_objs, 128);
    assert_int_equal(c->num_objs, 2486);
    assert_int_equal(c->objsize, 180);
    assert_int_equal(c->objperslab, 22);
    assert_int_equal(c->pagesperslab, 1);
    assert_int_equal(c->limit, 32);
    assert_int_equal(c->batchcount, 16);
    assert_int_equal(c->sharedfactor, 8);
    assert_int_equal(c->active_slabs, 113);
    assert_int_equal(c->num_slabs, 113);
    assert_int_equal(c->sharedavail, 128);
    uint64_t gs[7] = {664846, 590238, 26829, 0, 0, 1, 70};
    assert_int_equal(c->n_stats, 7);
    for (int i = 0; i < 7; i++)
        assert_int_equal(c->stats[i], gs[i]);
    /* cpustat printed 5 numbers for 4 names: kept raw, flagged, not partial. */
    assert_int_equal(c->n_cpustat, 5);
    assert_int_equal(c->cpustat[0], 1);
    assert_int_equal(c->cpustat[1], 974008);
    assert_int_equal(c->cpustat[4], 61964);
    assert_true(c->flags & PW_SLAB_ODD_SECTION);
    assert_true(c->flags & PW_SLAB_WRAPPED);
    assert_false(c->partial);
    assert_int_equal(slab_kib(c), 452); /* 113 slabs * 1 page * 4 KiB */
    unload(&l);
}

static void test_case25_v20(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case25_slabinfo_2.0_2004_dcache_ext3_inode_growth_2.6.8.txt");
    assert_string_equal(l.doc.version, "2.0");
    assert_true(l.doc.blocks[0].flags & PW_SLABINFO_HEADER);
    assert_int_equal(l.doc.n_caches, 105);
    const pw_slab_cache_t *c = find(&l.doc, "ext3_inode_cache");
    assert_int_equal(c->active_objs, 1328526);
    assert_int_equal(c->objsize, 416);
    assert_int_equal(c->num_slabs, 147614);
    assert_int_equal(slab_kib(c), 590456);
    /* 2.0 header says <batchcount> <limit>, but the kernel prints limit first. */
    assert_int_equal(c->limit, 54);
    assert_int_equal(c->batchcount, 27);
    assert_int_equal(slab_kib(find(&l.doc, "dentry_cache")), 151596);
    c = find(&l.doc, "biovec-(256)");
    assert_int_equal(c->objsize, 3072);
    assert_int_equal(c->pagesperslab, 2);
    for (size_t i = 0; i < l.doc.n_caches; i++) {
        c = &l.doc.caches[i];
        assert_int_equal(c->num_objs, c->num_slabs * c->objperslab);
        assert_int_equal(c->derived, 0);
        assert_false(c->partial);
    }
    assert_int_equal(total_kib(&l.doc), 758628);
    unload(&l);
}

static void test_case26_wrapped72(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case26_slabinfo_2.0_2005_email_wrapped72_buffer_head_radix.txt");
    assert_int_equal(l.doc.n_caches, 117);
    assert_int_equal(l.doc.n_partial, 0);
    assert_int_equal(l.doc.n_skipped_lines, 0);
    const pw_slab_cache_t *c = find(&l.doc, "radix_tree_node");
    assert_int_equal(c->active_objs, 158919);
    assert_int_equal(c->num_objs, 174223);
    assert_int_equal(c->objsize, 536);
    assert_int_equal(slab_kib(c), 99556);
    assert_int_equal(c->sharedfactor, 8);
    c = find(&l.doc, "buffer_head");
    assert_int_equal(c->active_objs, 409537);
    assert_int_equal(c->num_objs, 514796);
    assert_int_equal(slab_kib(c), 50224);
    assert_int_equal(find(&l.doc, "jfs_mp")->sharedavail, 60);
    for (size_t i = 0; i < l.doc.n_caches; i++) {
        c = &l.doc.caches[i];
        assert_true(c->flags & PW_SLAB_WRAPPED);
        assert_int_equal(c->num_objs, c->num_slabs * c->objperslab);
        assert_int_equal(c->line, 5 + 2 * i); /* header spans lines 2-4 */
    }
    assert_int_equal(total_kib(&l.doc), 174912);
    unload(&l);
}

static void test_case28_partial_rows(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case28_slabinfo_2.1_2016_partial_quoted_wrapped_header.txt");
    assert_string_equal(l.doc.version, "2.1");
    assert_int_equal(l.doc.n_caches, 4);
    assert_int_equal(l.doc.n_partial, 4);
    const pw_slab_cache_t *c = &l.doc.caches[0];
    assert_string_equal(c->name, "kmalloc-8192");
    assert_int_equal(c->active_objs, 268);
    assert_int_equal(c->num_objs, 268);
    assert_int_equal(c->objsize, 8192);
    assert_int_equal(c->objperslab, 4);
    assert_int_equal(c->pagesperslab, 8);
    assert_true(c->partial);
    assert_false(c->present & (PW_SLAB_HAS_ACTIVE_SLABS | PW_SLAB_HAS_NUM_SLABS));
    uint64_t b;
    assert_int_equal(pw_slabinfo_cache_slab_bytes(c, 4096, &b), PW_ENOENT);
    c = &l.doc.caches[3];
    assert_string_equal(c->name, "kmalloc-1024");
    assert_int_equal(c->active_objs, 2505);
    assert_int_equal(c->num_objs, 2976);
    size_t missing = 0;
    assert_int_equal(pw_slabinfo_doc_slab_bytes(&l.doc, 4096, &missing), 0);
    assert_int_equal(missing, 4);
    unload(&l);
}

static void test_case29_syslog_ellipsis(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case29_slabinfo_2.1_syslog_prefixed_ellipsis.txt");
    assert_int_equal(l.doc.n_caches, 3);
    assert_int_equal(l.doc.n_skipped_lines, 2); /* the marker line and the ellipsis */
    const char *names[3] = {"nf_conntrack", "ovl_inode", "AF_VSOCK"};
    uint64_t act[3] = {288, 22, 75}, size[3] = {256, 728, 1280};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(l.doc.caches[i].name, names[i]);
        assert_int_equal(l.doc.caches[i].active_objs, act[i]);
        assert_int_equal(l.doc.caches[i].num_objs, act[i]);
        assert_int_equal(l.doc.caches[i].objsize, size[i]);
    }
    /* 9*2 + 1*4 + 3*8 pages of 4 KiB */
    assert_int_equal(total_kib(&l.doc), 184);
    unload(&l);
}

static void test_case31_headerless(void **state)
{
    (void)state;
    loaded_t l;
    load(&l, "case31_slabinfo_2.1_grep_dentry_single_line_plus_dentry_state.txt");
    assert_string_equal(l.doc.version, "");
    assert_true(l.doc.blocks[0].flags & PW_SLABINFO_HEADERLESS);
    assert_int_equal(l.doc.n_caches, 1); /* the dentry-state line is not a cache */
    assert_int_equal(l.doc.n_skipped_lines, 1);
    const pw_slab_cache_t *c = &l.doc.caches[0];
    assert_string_equal(c->name, "dentry");
    assert_int_equal(c->active_objs, 2369308);
    assert_int_equal(c->num_objs, 2369325);
    assert_int_equal(c->objsize, 192);
    assert_int_equal(c->num_slabs, 112825);
    assert_int_equal(slab_kib(c), 451300);
    unload(&l);
}

/* ---- hand-made variants ------------------------------------------------------------------- */

static void test_crlf_bom_nested_quotes(void **state)
{
    (void)state;
    const char *s = "\xEF\xBB\xBF> >  slabinfo - version: 2.1\r\n"
                    ">> # name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
                    "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
                    "<num_slabs> <sharedavail>\r\n"
                    "> >    dentry 10 20 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\r\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_caches, 1);
    assert_string_equal(doc.caches[0].name, "dentry");
    assert_int_equal(doc.caches[0].num_slabs, 1);
    assert_false(doc.caches[0].partial);
    pw_slabinfo_doc_close(&doc);
}

static void test_syslog_kernel_prefixes(void **state)
{
    (void)state;
    const char *s = "Jan 15 03:04:05 box kernel: slabinfo - version: 2.1\n"
                    "Jan 15 03:04:05 box kernel: [ 1234.567890] kmalloc-64 640 640 64 64 1 : "
                    "tunables 0 0 0 : slabdata 10 10 0\n"
                    "2024-01-15T03:04:05.123456+00:00 box kernel: task_struct 100 120 4352 7 8 "
                    ": tunables 0 0 0 : slabdata 17 17 0\n";
    pw_slabinfo_doc_t doc;
    pw_diag_t d;
    assert_int_equal(parse_str(s, NULL, &doc, &d), 0);
    assert_int_equal(doc.n_caches, 2);
    assert_string_equal(doc.caches[0].name, "kmalloc-64");
    assert_int_equal(doc.caches[0].active_objs, 640);
    assert_string_equal(doc.caches[1].name, "task_struct");
    assert_int_equal(doc.caches[1].pagesperslab, 8);
    assert_int_equal(doc.caches[1].num_slabs, 17);
    pw_slabinfo_doc_close(&doc);
}

static void test_v21_statistics(void **state)
{
    (void)state;
    /* 2.1 (statistics) as mm/slab.c prints it: globalstat with more fields, cpustat 4. */
    const char *s =
        "slabinfo - version: 2.1 (statistics)\n"
        "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
        "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> "
        "<sharedavail> : globalstat <listallocs> <maxobjs> <grown> <reaped> <error> "
        "<maxfreeable> <nodeallocs> <remotefrees> <alienoverflow> : cpustat <allochit> "
        "<allocmiss> <freehit> <freemiss>\n"
        "ext4_inode_cache  5000  5100   1080   3    1 : tunables   24   12    8 : slabdata   "
        "1700   1700      0 : globalstat   9000  5200  1800  100    0    1    0    0    0 : "
        "cpustat  11 12 13 14\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_caches, 1);
    const pw_slab_cache_t *c = &doc.caches[0];
    assert_false(c->partial);
    assert_int_equal(c->flags & PW_SLAB_ODD_SECTION, 0);
    assert_int_equal(c->n_stats, 9);
    assert_int_equal(c->stats[0], 9000);
    assert_int_equal(c->stats[2], 1800);
    assert_int_equal(c->n_cpustat, 4);
    assert_int_equal(c->cpustat[3], 14);
    assert_int_equal(c->limit, 24);
    assert_int_equal(c->num_slabs, 1700);
    pw_slabinfo_doc_close(&doc);
}

static void test_v11_smp_statistics(void **state)
{
    (void)state;
    /* 2.4 with STATS and SMP: stats(5) : limit batchcount : allochit allocmiss freehit
     * freemiss, wrapped once in the middle of the second section. */
    const char *s = "slabinfo - version: 1.1 (statistics) (SMP)\n"
                    "inode_cache 100 120 480 14 15 1 : 130 5000 20 5 0 : 124\n"
                    "62 : 900 80 850 40\n"
                    "dentry_cache 10 30 128 1 1 1 : 30 40 1 0 0 : 252 126 : 1 2 3 4\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_caches, 2);
    const pw_slab_cache_t *c = &doc.caches[0];
    assert_false(c->partial);
    assert_true(c->flags & PW_SLAB_WRAPPED);
    assert_int_equal(c->num_slabs, 15);
    assert_int_equal(c->objperslab, 8); /* 120 / 15 */
    assert_int_equal(c->stats[1], 5000);
    assert_int_equal(c->limit, 124);
    assert_int_equal(c->batchcount, 62);
    assert_int_equal(c->cpustat[0], 900);
    assert_int_equal(c->cpustat[3], 40);
    assert_int_equal(doc.caches[1].batchcount, 126);
    assert_int_equal(doc.caches[1].cpustat[2], 3);
    pw_slabinfo_doc_close(&doc);
}

static void test_wrap_at_section_label_and_partial_at_end(void **state)
{
    (void)state;
    const char *s = "slabinfo - version: 2.0\n"
                    "# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
                    "tunables <batchcount> <limit> <sharedfactor> : slabdata <active_slabs> "
                    "<num_slabs> <sharedavail>\n"
                    "a_very_long_cache_name_here 1 2 3 4 1 : tunables 1 2 3 :\n"
                    "slabdata 5 6 7\n"
                    "last 8 9 10 11\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_caches, 2);
    assert_int_equal(doc.caches[0].num_slabs, 6);
    assert_int_equal(doc.caches[0].sharedavail, 7);
    assert_false(doc.caches[0].partial);
    /* A record that ends at EOF before its layout's fields is partial. */
    assert_string_equal(doc.caches[1].name, "last");
    assert_true(doc.caches[1].partial);
    assert_int_equal(doc.caches[1].objperslab, 11);
    assert_false(doc.caches[1].present & PW_SLAB_HAS_PAGESPERSLAB);
    assert_int_equal(doc.n_partial, 1);
    pw_slabinfo_doc_close(&doc);
}

static void test_concatenated_dumps(void **state)
{
    (void)state;
    const char *s = "slabinfo - version: 1.1\n"
                    "inode_cache 10 14 512 2 2 1\n"
                    "\n"
                    "some prose between the dumps, with 3 numbers 4 and 5\n"
                    "slabinfo - version: 2.1\n"
                    "# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
                    "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
                    "<num_slabs> <sharedavail>\n"
                    "inode_cache 20 21 600 7 1 : tunables 0 0 0 : slabdata 3 3 0\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.n_blocks, 2);
    assert_string_equal(doc.version, "1.1");
    assert_string_equal(doc.blocks[1].version, "2.1");
    assert_int_equal(doc.blocks[0].layout, PW_SLABINFO_LAYOUT_V1);
    assert_int_equal(doc.blocks[1].layout, PW_SLABINFO_LAYOUT_V2);
    assert_int_equal(doc.n_caches, 2);
    assert_int_equal(doc.caches[0].block, 0);
    assert_int_equal(doc.caches[0].pagesperslab, 1);
    assert_int_equal(doc.caches[0].num_slabs, 2);
    assert_int_equal(doc.caches[1].block, 1);
    assert_int_equal(doc.caches[1].objperslab, 7);
    assert_int_equal(doc.blocks[1].first_cache, 1);
    assert_int_equal(doc.n_skipped_lines, 1);
    assert_int_equal(doc.first_skipped, 4);
    pw_slabinfo_doc_close(&doc);
}

static void test_header_decides_layout(void **state)
{
    (void)state;
    /* A "1.1" version line followed by a 2.x header: the header wins. And a header that
     * orders the base columns differently is followed. */
    const char *s = "slabinfo - version: 1.1\n"
                    "# name <num_objs> <active_objs> <objsize> <objperslab> <pagesperslab> : "
                    "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
                    "<num_slabs> <sharedavail>\n"
                    "x 30 20 64 10 1 : tunables 0 0 0 : slabdata 3 3 0\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(s, NULL, &doc, NULL), 0);
    assert_int_equal(doc.blocks[0].layout, PW_SLABINFO_LAYOUT_V2);
    assert_int_equal(doc.caches[0].num_objs, 30);
    assert_int_equal(doc.caches[0].active_objs, 20);
    assert_int_equal(doc.caches[0].objperslab, 10);
    pw_slabinfo_doc_close(&doc);
}

static void test_headerless_v11_row(void **state)
{
    (void)state;
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str("inode_cache 369522 491666 512 70224 70238 1\n", NULL, &doc, NULL),
                     0);
    assert_int_equal(doc.blocks[0].layout, PW_SLABINFO_LAYOUT_V1);
    assert_int_equal(doc.caches[0].num_slabs, 70238);
    assert_int_equal(doc.caches[0].pagesperslab, 1);
    pw_slabinfo_doc_close(&doc);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void expect_error(const char *s, size_t len, const pw_slabinfo_opts_t *o, int code,
                         uint32_t line, const char *field)
{
    pw_slabinfo_doc_t doc;
    pw_diag_t d;
    int r = pw_slabinfo_parse(s, len, o, &doc, &d);
    if (r != code)
        fail_msg("want %d got %d (%s)", code, r, d.msg);
    assert_int_equal(d.code, code);
    assert_int_equal(d.line, line);
    assert_string_equal(d.field, field);
    assert_true(strlen(d.msg) > 0);
    assert_int_equal(doc.n_caches, 0);
    assert_null(doc.caches);
    pw_slabinfo_doc_close(&doc);
}

static void test_errors(void **state)
{
    (void)state;
    static const char v[] = "slabinfo - version: 2.1\n";
    char buf[512];

    /* Binary: NUL byte on line 2, and invalid UTF-8 (a lone continuation byte). */
    memcpy(buf, v, sizeof(v) - 1);
    memcpy(buf + sizeof(v) - 1, "abc\0def 1 2 3\n", 14);
    expect_error(buf, sizeof(v) - 1 + 14, NULL, PW_EPARSE, 2, "text");
    expect_error("slabinfo - version: 2.1\nx\x80y 1 2 3 4 5\n", 38, NULL, PW_EPARSE, 2, "text");
    /* Latin-1 (not UTF-8) is rejected too; a UTF-8 name is fine. */
    expect_error("caf\xe9 1 2 3\n", 11, NULL, PW_EPARSE, 1, "text");
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str("caf\xc3\xa9 1 2 3 4 5 6\n", NULL, &doc, NULL), 0);
    assert_string_equal(doc.caches[0].name, "caf\xc3\xa9");
    pw_slabinfo_doc_close(&doc);

    /* Oversized input and overlong line. */
    pw_slabinfo_opts_t o = {.max_input_bytes = 10};
    expect_error(v, strlen(v), &o, PW_ETOOBIG, 0, "input");
    pw_slabinfo_opts_t o2 = {.max_line_bytes = 30};
    snprintf(buf, sizeof(buf), "%sname 1 2 3 4 5 : tunables 0 0 0 : slabdata 1 1 0\n", v);
    expect_error(buf, strlen(buf), &o2, PW_ETOOBIG, 2, "line");

    /* Number above 2^64-1, named by its column. */
    snprintf(buf, sizeof(buf), "%sx 1 99999999999999999999 3 4 5\n", v);
    expect_error(buf, strlen(buf), NULL, PW_ERANGE, 2, "num_objs");

    /* Too many values in one section. */
    snprintf(buf, sizeof(buf), "%sx 1 2 3 4 5 : tunables 1 2 3 4 5 6 7 8 9 10 11 12 13\n", v);
    expect_error(buf, strlen(buf), NULL, PW_EPARSE, 2, "tunables");

    /* Cache limit. */
    pw_slabinfo_opts_t o3 = {.max_caches = 1};
    snprintf(buf, sizeof(buf), "%sa 1 2 3 4 5\nb 1 2 3 4 5\n", v);
    expect_error(buf, strlen(buf), &o3, PW_ETOOBIG, 3, "name");

    /* Name over PW_SLABINFO_MAX_NAME. */
    char longname[400];
    memset(longname, 'n', 200);
    longname[200] = '\0';
    snprintf(buf, sizeof(buf), "%s%s 1 2 3 4 5\n", v, longname);
    expect_error(buf, strlen(buf), NULL, PW_ETOOBIG, 2, "name");

    /* Not slabinfo at all (a poolmon line, prose, empty). */
    expect_error(" Tag  Type     Allocs            Frees\n", 39, NULL, PW_EFORMAT, 1, "");
    expect_error("", 0, NULL, PW_EFORMAT, 0, "");
    expect_error(NULL, 5, NULL, PW_EINVAL, 0, "");
}

static void test_strict_mode(void **state)
{
    (void)state;
    pw_slabinfo_opts_t o = {.strict = true};
    /* The live file parses; a wrapped, quoted or partial record does not. */
    const char *good = "slabinfo - version: 2.1\n"
                       "# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : "
                       "tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
                       "<num_slabs> <sharedavail>\n"
                       "dentry 10 21 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n";
    pw_slabinfo_doc_t doc;
    assert_int_equal(parse_str(good, &o, &doc, NULL), 0);
    assert_int_equal(doc.n_caches, 1);
    pw_slabinfo_doc_close(&doc);

    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", good);
    buf[strlen(buf) - 8] = '\n'; /* "slabdata 1 1 0" -> "slabdata\n..." */
    expect_error(buf, strlen(buf), &o, PW_EPARSE, 4, "row");
    snprintf(buf, sizeof(buf), "%sx 1 2 3 4 5\n", good);
    expect_error(buf, strlen(buf), &o, PW_EPARSE, 4, "row");
    snprintf(buf, sizeof(buf), "> %s", good);
    expect_error(buf, strlen(buf), &o, PW_EPARSE, 1, "version");
    snprintf(buf, sizeof(buf), "%s\n", good);
    expect_error(buf, strlen(buf), &o, PW_EPARSE, 4, "row");
    snprintf(buf, sizeof(buf), "%sgarbage here\n", good);
    expect_error(buf, strlen(buf), &o, PW_EPARSE, 4, "row");
    expect_error("", 0, &o, PW_EFORMAT, 0, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_case20_v11_plain),
        cmocka_unit_test(test_case21_wrapped_quoted_stats),
        cmocka_unit_test(test_case22_v11_stats),
        cmocka_unit_test(test_case23_v11_smp_prompt),
        cmocka_unit_test(test_case24_broken_manual_wrap),
        cmocka_unit_test(test_case25_v20),
        cmocka_unit_test(test_case26_wrapped72),
        cmocka_unit_test(test_case28_partial_rows),
        cmocka_unit_test(test_case29_syslog_ellipsis),
        cmocka_unit_test(test_case31_headerless),
        cmocka_unit_test(test_crlf_bom_nested_quotes),
        cmocka_unit_test(test_syslog_kernel_prefixes),
        cmocka_unit_test(test_v21_statistics),
        cmocka_unit_test(test_v11_smp_statistics),
        cmocka_unit_test(test_wrap_at_section_label_and_partial_at_end),
        cmocka_unit_test(test_concatenated_dumps),
        cmocka_unit_test(test_header_decides_layout),
        cmocka_unit_test(test_headerless_v11_row),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_strict_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
