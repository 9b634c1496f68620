/* test_source_replay.c: the "replay:" source on saved poolmon captures. Values from the data
 * README (case09: Drsd Diff 21 -> 27, Bytes 17472 -> 22464) and from reading the fixtures.
 *
 * The source is opened through the registry (pw_source_open("replay:..."), agent/source.h), as
 * the agent opens it. */
#include "test_util.h"
#include "source.h"

static int open_replay(const char *arg, const pw_source_config_t *cfg, pw_source_t **out,
                       pw_diag_t *d)
{
    static char spec[8300];
    assert_true(snprintf(spec, sizeof(spec), "replay:%s", arg) < (int)sizeof(spec));
    pw_diag_clear(d);
    return pw_source_open(spec, cfg, out, d);
}

#define close_replay pw_source_close
#define next         pw_source_sample

static char *fixture_list(const char *a, const char *b)
{
    static char spec[8192];
    char pa[4096];
    snprintf(pa, sizeof(pa), "%s", pw_test_fixture(a));
    if (b == NULL)
        snprintf(spec, sizeof(spec), "%s", pa);
    else
        snprintf(spec, sizeof(spec), "%s,%s", pa, pw_test_fixture(b));
    return spec;
}

#define CASE09 "poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt"
#define CASE19 "poolmon/case19_poolmon_win10_msdocs_hid_mapped_truncated_col.txt"

static void test_replay_case09_two_samples_then_eof(void **state)
{
    (void)state;
    pw_source_config_t cfg = {.replay_start_ms = 1000, .replay_interval_ms = 60000};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(open_replay(fixture_list(CASE09, NULL), &cfg, &src, &d), 0);
    assert_int_equal(src->info.kind, PW_SOURCE_POOLMON_REPLAY);
    assert_int_equal(src->info.counter_width, 32);
    assert_string_equal(src->info.os_family, "windows");
    assert_int_equal(src->info.physical_memory_bytes, 130480ull * 1024);

    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 1);
    assert_memory_equal(s.entries[0].tag, "Drsd", 4);
    assert_int_equal(s.entries[0].tag_len, 4);
    assert_int_equal(s.entries[0].pool, PW_POOL_PAGED);
    assert_int_equal(s.entries[0].allocs, 560);
    assert_int_equal(s.entries[0].frees, 539);
    assert_int_equal(s.entries[0].diff, 21);
    assert_int_equal(s.entries[0].bytes, 17472);
    assert_int_equal(s.timestamp_ms, 1000);
    assert_int_equal(s.totals.nonpaged_bytes, 2224ull * 1024);
    assert_int_equal(s.totals.paged_bytes, 8004ull * 1024);
    assert_int_equal(s.totals.available_bytes, 91856ull * 1024);
    assert_int_equal(s.totals.commit_bytes, 30104ull * 1024);
    assert_int_equal(s.totals.commit_limit_bytes, 248432ull * 1024);

    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.entries[0].allocs, 737);
    assert_int_equal(s.entries[0].frees, 710);
    assert_int_equal(s.entries[0].diff, 27);
    assert_int_equal(s.entries[0].bytes, 22464);
    assert_int_equal(s.timestamp_ms, 61000);
    assert_int_equal(s.totals.paged_bytes, 8012ull * 1024);

    assert_int_equal(next(src, &s, &d), PW_EOF);
    assert_int_equal(next(src, &s, &d), PW_EOF);
    pw_sample_close(&s);
    close_replay(src);
}

/* [limits] reach the replay source (a capture has none): info and every sample's totals carry
 * them, source CONFIGURED; without them the limit stays unknown (0). */
static void test_replay_configured_limits(void **state)
{
    (void)state;
    pw_source_config_t cfg = {
        .replay_start_ms = 1000, .nonpaged_limit_bytes = 134217728, .paged_limit_bytes = 555745280};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(open_replay(fixture_list(CASE09, NULL), &cfg, &src, &d), 0);
    assert_int_equal(src->info.nonpaged_limit.bytes, 134217728);
    assert_int_equal(src->info.nonpaged_limit.source, PW_LIMIT_CONFIGURED);
    assert_string_equal(src->info.nonpaged_limit.detail, "configured");
    assert_int_equal(src->info.paged_limit.bytes, 555745280);
    assert_int_equal(src->info.paged_limit.source, PW_LIMIT_CONFIGURED);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.totals.nonpaged_limit_bytes, 134217728);
    assert_int_equal(s.totals.paged_limit_bytes, 555745280);
    close_replay(src);
    pw_source_config_t none = {.replay_start_ms = 1000};
    assert_int_equal(open_replay(fixture_list(CASE09, NULL), &none, &src, &d), 0);
    assert_int_equal(src->info.nonpaged_limit.bytes, 0);
    assert_int_equal(src->info.nonpaged_limit.source, PW_LIMIT_UNKNOWN);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.totals.nonpaged_limit_bytes, 0);
    pw_sample_close(&s);
    close_replay(src);
}

static void test_replay_two_files_in_order(void **state)
{
    (void)state;
    pw_source_config_t cfg = {.replay_start_ms = 1000, .replay_interval_ms = 60000};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(open_replay(fixture_list(CASE09, CASE19), &cfg, &src, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 3); /* case19: HidC paged, HidC nonpaged, HidP */
    assert_memory_equal(s.entries[0].tag, "HidC", 4);
    assert_memory_equal(s.entries[1].tag, "HidC", 4);
    assert_int_equal(s.entries[0].pool, PW_POOL_PAGED);
    assert_int_equal(s.entries[1].pool, PW_POOL_NONPAGED);
    assert_int_equal(s.entries[1].bytes, 19808);
    assert_int_equal(s.timestamp_ms, 121000); /* continues the series of the first file */
    assert_int_equal(next(src, &s, &d), PW_EOF);
    pw_sample_close(&s);
    close_replay(src);
}

static void test_replay_file_time_stamps(void **state)
{
    (void)state;
    pw_source_config_t cfg = {.replay_start_ms = 1000};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(
        open_replay(fixture_list("poolmon/variant_case09_timestamped.txt", NULL), &cfg, &src, &d),
        0);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.timestamp_ms, 1710410400000ull); /* 2024-03-14T10:00:00Z */
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.timestamp_ms, 1710411330500ull); /* 10:15:30.50 */
    pw_sample_close(&s);
    close_replay(src);
}

static void test_replay_session_screens(void **state)
{
    (void)state;
    pw_source_config_t cfg = {.replay_start_ms = 1};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(open_replay(fixture_list("poolmon/variant_case10_utf16le_bom_crlf.txt", NULL),
                                 &cfg, &src, &d),
                     0);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 16);
    assert_int_equal(s.entries[0].pool, PW_POOL_SESSION);
    assert_memory_equal(s.entries[3].tag, "Dh 1", 4);
    assert_int_equal(s.timestamp_ms, 1);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.timestamp_ms, 1 + 15 * 60 * 1000); /* default interval */
    assert_int_equal(next(src, &s, &d), PW_EOF);
    pw_sample_close(&s);
    close_replay(src);
}

/* A capture whose last line is cut inside a row (a truncated save): the row is left out, the
 * rest replays. case09 cut after screen 2's frees (710): screen 1 whole, screen 2 without rows. */
static void test_replay_cut_last_line(void **state)
{
    (void)state;
    size_t len;
    char *text = pw_test_read_file(pw_test_fixture(CASE09), &len);
    char *cut = strstr(text, "710");
    assert_non_null(cut);
    const char *path = "test_replay_cut.txt"; /* in the test's working directory */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = (size_t)(cut - text) + 3;
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
    free(text);
    pw_source_config_t cfg = {.replay_start_ms = 1000, .replay_interval_ms = 60000};
    pw_source_t *src;
    pw_diag_t d;
    assert_int_equal(open_replay(path, &cfg, &src, &d), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.entries[0].allocs, 560);
    assert_int_equal(s.entries[0].bytes, 17472);
    assert_int_equal(next(src, &s, &d), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(s.totals.paged_bytes, 8012ull * 1024);
    assert_int_equal(next(src, &s, &d), PW_EOF);
    pw_sample_close(&s);
    close_replay(src);
    remove(path);
}

static void test_replay_errors_name_file_and_line(void **state)
{
    (void)state;
    pw_source_config_t cfg = {0};
    pw_source_t *src = NULL;
    pw_diag_t d;
    const char *bad = "poolmon/case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt";
    assert_int_equal(open_replay(fixture_list(CASE09, bad), &cfg, &src, &d), PW_ENOTPOOLMON);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.msg, "case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt:3:"));

    assert_int_equal(open_replay(fixture_list("poolmon/no_such_file.txt", NULL), &cfg, &src, &d),
                     PW_ENOENT);
    assert_non_null(strstr(d.msg, "no_such_file.txt"));

    assert_int_equal(open_replay("", &cfg, &src, &d), PW_EINVAL);
    char spec[8192];
    snprintf(spec, sizeof(spec), "%s,", pw_test_fixture(CASE09));
    assert_int_equal(open_replay(spec, &cfg, &src, &d), PW_EINVAL);
    /* the name the registry knows it by */
    assert_int_equal(open_replay(pw_test_fixture(CASE09), &cfg, &src, &d), 0);
    assert_string_equal(pw_source_name(src), "replay");
    pw_source_close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_case09_two_samples_then_eof),
        cmocka_unit_test(test_replay_two_files_in_order),
        cmocka_unit_test(test_replay_configured_limits),
        cmocka_unit_test(test_replay_file_time_stamps),
        cmocka_unit_test(test_replay_session_screens),
        cmocka_unit_test(test_replay_cut_last_line),
        cmocka_unit_test(test_replay_errors_name_file_and_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
