/* test_poolmon_layouts.c: a capture of three screens written in every public layout
 * (tests/bench/poolmon_layouts.c) parses back to the pool tables it was written from: every
 * row's tag, pool and counters, the header's totals (or, where a layout has no header, the sums
 * of the screen's rows, computed here) and the screens' times. The tables are the independent
 * values; the parser only has the text. */
#include "test_util.h"
#include "poolmon_layouts.h"
#include "poolmon_text.h"

#define SCREENS  3
#define ROWS     40
#define START_MS 1764496800000ull /* 2025-11-30 10:00:00 UTC */
#define STEP_MS  900000ull        /* 15 minutes */

/* Tags of the kinds real screens hold: short ones poolmon pads, an inner space, a leading digit,
 * case pairs, one tag in both pools. */
static const char *fixed_tags[] = {"Io  ", "CM  ", "Dh 1", "1MEM", "NtFs", "NtFS", "HidC", "HidC"};

static void make_tables(pw_sample_t *ss)
{
    uint64_t x = 88172645463325252ull; /* xorshift64: a seeded table, the same every run */
    uint64_t base_allocs[ROWS], base_frees[ROWS], size[ROWS];
    char tags[ROWS][4];
    for (size_t r = 0; r < ROWS; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (r < sizeof(fixed_tags) / sizeof(fixed_tags[0])) {
            memcpy(tags[r], fixed_tags[r], 4);
        } else {
            for (int k = 0; k < 4; k++)
                tags[r][k] = (char)('A' + (x >> (8 * k)) % 26);
            tags[r][0] = (char)('A' + r % 26); /* distinct from the others by row */
            tags[r][1] = (char)('a' + r / 26);
        }
        base_allocs[r] = 1000 + x % 5000000;
        base_frees[r] = base_allocs[r] - (x >> 20) % 1000;
        size[r] = 16 + (x >> 40) % 4096;
    }
    for (size_t i = 0; i < SCREENS; i++) {
        pw_sample_init(&ss[i]);
        ss[i].timestamp_ms = START_MS + i * STEP_MS;
        for (size_t r = 0; r < ROWS; r++) {
            uint64_t allocs = base_allocs[r] + i * (r + 1) * 37;
            uint64_t frees = base_frees[r] + i * (r + 1) * 35;
            uint64_t diff = allocs - frees;
            pw_pool_t pool = r == 7 || r % 3 == 1 ? PW_POOL_PAGED : PW_POOL_NONPAGED;
            assert_int_equal(
                pw_sample_add(&ss[i], tags[r], 4, pool, allocs, frees, diff, diff * size[r]), 0);
        }
        /* totals in whole KiB: a header prints KiB */
        ss[i].totals.nonpaged_bytes = (30000 + 10 * i) * 1024ull;
        ss[i].totals.paged_bytes = (60000 + 20 * i) * 1024ull;
        ss[i].totals.physical_memory_bytes = 4193848 * 1024ull;
        ss[i].totals.available_bytes = (2092344 - i) * 1024ull;
        ss[i].totals.commit_bytes = (930104 + i) * 1024ull;
        ss[i].totals.commit_limit_bytes = 8248432 * 1024ull;
        ss[i].totals.commit_peak_bytes = 934028 * 1024ull;
    }
}

static void check_layout(int layout, int crlf)
{
    pw_sample_t ss[SCREENS];
    make_tables(ss);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < SCREENS; i++)
        assert_int_equal(pw_gen_layout_screen(&ss[i], layout, i, crlf, &text, &len, &cap), 0);
    assert_int_equal(pw_gen_layout_finish(layout, &text, &len, &cap), 0);

    /* a start and spacing other than the tables' for a stamped layout: its times must win */
    int stamped = pw_gen_layout_has_time(layout);
    pw_poolmon_opts_t o = {.start_ms = stamped ? 1000 : START_MS, .interval_ms = STEP_MS};
    pw_poolmon_doc_t doc;
    pw_diag_t d;
    pw_diag_clear(&d);
    int r = pw_poolmon_parse(text, len, &o, &doc, &d);
    if (r != 0)
        fail_msg("layout %s: %s at line %u: %s", pw_gen_layout_name(layout), pw_err_name(r), d.line,
                 d.msg);
    assert_int_equal(doc.n_screens, SCREENS);
    for (size_t i = 0; i < SCREENS; i++) {
        const pw_poolmon_screen_t *sc = &doc.screens[i];
        assert_int_equal(sc->n_rows, ROWS);
        assert_int_equal(sc->per_alloc_mismatches, 0);
        assert_int_equal(sc->diff_mismatches, 0);
        assert_int_equal(sc->has_file_time, stamped);
        pw_sample_t got;
        pw_sample_init(&got);
        assert_int_equal(pw_poolmon_screen_to_sample(sc, &got), 0);
        assert_int_equal(got.timestamp_ms, ss[i].timestamp_ms);
        assert_int_equal(got.n, ROWS);
        uint64_t np = 0, pg = 0;
        for (size_t k = 0; k < ROWS; k++) {
            const pw_entry_t *w = &ss[i].entries[k], *g = &got.entries[k];
            if (g->tag_len != 4 || memcmp(g->tag, w->tag, 4) != 0 || g->pool != w->pool)
                fail_msg("layout %s screen %zu row %zu: '%.*s' pool %d, want '%.4s' pool %d",
                         pw_gen_layout_name(layout), i, k, (int)g->tag_len, (const char *)g->tag,
                         g->pool, (const char *)w->tag, w->pool);
            assert_int_equal(g->allocs, w->allocs);
            assert_int_equal(g->frees, w->frees);
            assert_int_equal(g->diff, w->diff);
            assert_int_equal(g->bytes, w->bytes);
            *(w->pool == PW_POOL_PAGED ? &pg : &np) += w->bytes;
        }
        if (pw_gen_layout_has_totals(layout)) {
            assert_int_equal(got.totals.nonpaged_bytes, ss[i].totals.nonpaged_bytes);
            assert_int_equal(got.totals.paged_bytes, ss[i].totals.paged_bytes);
            assert_int_equal(got.totals.physical_memory_bytes, ss[i].totals.physical_memory_bytes);
            assert_int_equal(got.totals.available_bytes, ss[i].totals.available_bytes);
            assert_int_equal(got.totals.commit_bytes, ss[i].totals.commit_bytes);
            assert_int_equal(got.totals.commit_limit_bytes, ss[i].totals.commit_limit_bytes);
            assert_int_equal(got.totals.commit_peak_bytes, ss[i].totals.commit_peak_bytes);
        } else {
            /* no header: the pools are the sums of the rows (a lower bound) */
            assert_int_equal(got.totals.nonpaged_bytes, np);
            assert_int_equal(got.totals.paged_bytes, pg);
            assert_int_equal(got.totals.physical_memory_bytes, 0);
        }
        pw_sample_close(&got);
    }
    pw_poolmon_doc_close(&doc);
    free(text);
    for (size_t i = 0; i < SCREENS; i++)
        pw_sample_close(&ss[i]);
}

static void test_every_layout_lf(void **state)
{
    (void)state;
    for (int l = 0; l < PW_GEN_LAYOUTS; l++)
        check_layout(l, 0);
}

static void test_every_layout_crlf(void **state)
{
    (void)state;
    for (int l = 0; l < PW_GEN_LAYOUTS; l++)
        check_layout(l, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_layout_lf),
        cmocka_unit_test(test_every_layout_crlf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
