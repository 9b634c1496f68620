/* test_cli_parse.c: the poolwatch CLI in-process: `parse` (JSON values and shape, errors),
 * `top` rendering and keys, URL and environment handling, canned HTTP responses, the listing
 * formatters, and requests against a one-shot fake HTTP server (fork).
 *
 * Expected numbers come from shared/data/README.md (quoted next to each check) or were worked
 * out by hand from the fixture text and the documented column widths, never from the code.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#include "cli.h"

/* ---- running the CLI in-process ------------------------------------------------------------ */

static const char *env_url, *env_token, *env_ca;

static const char *fake_env(const char *name)
{
    if (strcmp(name, "POOLWATCH_URL") == 0)
        return env_url;
    if (strcmp(name, "POOLWATCH_TOKEN") == 0)
        return env_token;
    if (strcmp(name, "POOLWATCH_CA") == 0)
        return env_ca;
    return NULL;
}

typedef struct run_s {
    int rc;
    char *out;
    char *err;
} run_t;

static run_t run(int argc, const char **argv)
{
    run_t r;
    size_t olen, elen;
    FILE *out = open_memstream(&r.out, &olen);
    FILE *err = open_memstream(&r.err, &elen);
    assert_non_null(out);
    assert_non_null(err);
    char *av[64];
    assert_true(argc < 64);
    for (int i = 0; i < argc; i++)
        av[i] = strdup(argv[i]);
    av[argc] = NULL;
    r.rc = pw_cli_run(argc, av, fake_env, out, err);
    for (int i = 0; i < argc; i++)
        free(av[i]);
    fclose(out);
    fclose(err);
    return r;
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
}

#define RUN(...)                                                                                   \
    ({                                                                                             \
        const char *argv_[] = {"poolwatch", __VA_ARGS__};                                          \
        run(sizeof(argv_) / sizeof(argv_[0]), argv_);                                              \
    })

static void reset_env(void)
{
    env_url = env_token = env_ca = NULL;
}

/* ---- parse --json: values ---------------------------------------------------------------------
 */

static void test_parse_case02_header_and_rows(void **state)
{
    (void)state;
    run_t r = RUN("parse", "--json", "--compact",
                  pw_test_fixture("poolmon/case02_poolmon_xp_msdocs_display_sort_alloc.txt"));
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    /* README case02: Memory 260620K, Avail 96364K, PageFlts 0, Commit 203500K, Limit 640916K,
     * Peak 260632K, Pool N 8332K, Pool P 27220K; InRam fields are not part of the JSON. */
    assert_non_null(strstr(r.out, "\"header\":{\"memory_kb\":260620,\"avail_kb\":96364,"
                                  "\"page_faults\":0,\"commit_kb\":203500,"
                                  "\"commit_limit_kb\":640916,\"commit_peak_kb\":260632,"
                                  "\"pool_nonpaged_kb\":8332,\"pool_paged_kb\":27220}"));
    assert_non_null(strstr(r.out, "{\"format\":\"poolmon\",\"screens\":[{\"title\":"
                                  "\"System pool information\",\"header\""));
    /* README: Max Bytes `Io  ` Nonp 91912; the file row: 1021112 1020985 127 91912 723. */
    assert_non_null(strstr(r.out, "{\"tag\":\"Io  \",\"type\":\"nonpaged\",\"allocs\":1021112,"
                                  "\"frees\":1020985,\"diff\":127,\"bytes\":91912,"
                                  "\"per_alloc\":723,\"mapped_driver\":null}"));
    /* Key Paged 954821 953979 842 87528 103 (87528/842 = 103.95 -> 103). */
    assert_non_null(strstr(r.out, "{\"tag\":\"Key \",\"type\":\"paged\",\"allocs\":954821,"
                                  "\"frees\":953979,\"diff\":842,\"bytes\":87528,"
                                  "\"per_alloc\":103,\"mapped_driver\":null}"));
    /* ObSt Diff 0 Bytes 0 PerAlloc 0. */
    assert_non_null(strstr(r.out, "\"tag\":\"ObSt\",\"type\":\"nonpaged\",\"allocs\":2791258,"
                                  "\"frees\":2791258,\"diff\":0,\"bytes\":0,\"per_alloc\":0"));
    run_free(&r);
}

static void test_parse_case08_per_alloc_floor_and_driver(void **state)
{
    (void)state;
    run_t r = RUN("parse", "--compact", "--json",
                  pw_test_fixture("poolmon/case08_poolmon_xp_msdocs_ip_double_mapped.txt"));
    assert_int_equal(r.rc, 0);
    /* README case08: IpSI Nonp 1027/0 Diff 1027 Bytes 53272 PerAlloc 51 (floor); the mapped
     * driver text is two bracket groups with the original typo. */
    assert_non_null(strstr(r.out, "{\"tag\":\"IpSI\",\"type\":\"nonpaged\",\"allocs\":1027,"
                                  "\"frees\":0,\"diff\":1027,\"bytes\":53272,\"per_alloc\":51,"
                                  "\"mapped_driver\":\"[ipsec][ipsec.sys    - initial "
                                  "allcoations]\"}"));
    /* IpFI 26/0 7408/284. */
    assert_non_null(strstr(r.out, "\"tag\":\"IpFI\",\"type\":\"nonpaged\",\"allocs\":26,"
                                  "\"frees\":0,\"diff\":26,\"bytes\":7408,\"per_alloc\":284,"));
    /* Header P: 9532K is InRam paged (not in the JSON); Pool N 8372K P 13384K. */
    assert_non_null(strstr(r.out, "\"pool_nonpaged_kb\":8372,\"pool_paged_kb\":13384}"));
    run_free(&r);
}

static void test_parse_case05_case_sensitive_tags(void **state)
{
    (void)state;
    run_t r = RUN("parse", "--json", "--compact", "--format", "poolmon",
                  pw_test_fixture("poolmon/case05_poolmon_xp_msdocs_ntf_mapped_driver.txt"));
    assert_int_equal(r.rc, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *rows = json_object_get(json_array_get(json_object_get(j, "screens"), 0), "rows");
    /* README case05: 13 rows; NtFs Nonp 48825/47226 Diff 1599 Bytes 64536 PerAlloc 40; NtFC
     * Paged 1579279/1579269 Bytes 640. */
    assert_int_equal(json_array_size(rows), 13);
    int seen_ntfs = 0, seen_ntfc = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *tag = json_string_value(json_object_get(row, "tag"));
        if (strcmp(tag, "NtFs") == 0) {
            seen_ntfs++;
            assert_string_equal(json_string_value(json_object_get(row, "type")), "nonpaged");
            assert_int_equal(json_integer_value(json_object_get(row, "allocs")), 48825);
            assert_int_equal(json_integer_value(json_object_get(row, "frees")), 47226);
            assert_int_equal(json_integer_value(json_object_get(row, "diff")), 1599);
            assert_int_equal(json_integer_value(json_object_get(row, "bytes")), 64536);
            assert_int_equal(json_integer_value(json_object_get(row, "per_alloc")), 40);
        }
        if (strcmp(tag, "NtFC") == 0) {
            seen_ntfc++;
            assert_string_equal(json_string_value(json_object_get(row, "type")), "paged");
            assert_int_equal(json_integer_value(json_object_get(row, "bytes")), 640);
        }
    }
    assert_int_equal(seen_ntfs, 1);
    assert_int_equal(seen_ntfc, 1);
    json_decref(j);
    run_free(&r);
}

static void test_parse_case10_sessions_and_space_tags(void **state)
{
    (void)state;
    run_t r = RUN("parse", "--json",
                  pw_test_fixture("poolmon/case10_poolmon_2003_msdocs_session_pools_dh_space.txt"));
    assert_int_equal(r.rc, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *screens = json_object_get(j, "screens");
    /* README case10: two screens, 16 rows each, titles "All sessions pool information" and
     * "Session 0 pool information"; tags "Dh 1" / "Dh 2" keep their inner space. */
    assert_int_equal(json_array_size(screens), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(screens, 0), "title")),
                        "All sessions pool information");
    assert_string_equal(json_string_value(json_object_get(json_array_get(screens, 1), "title")),
                        "Session 0 pool information");
    assert_int_equal(json_array_size(json_object_get(json_array_get(screens, 0), "rows")), 16);
    assert_int_equal(json_array_size(json_object_get(json_array_get(screens, 1), "rows")), 16);
    /* Limit:1279764K fused to its label (first line of the file). */
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(screens, 0), "header"), "commit_limit_kb")),
                     1279764);
    assert_non_null(strstr(r.out, "\"tag\": \"Dh 1\""));
    json_decref(j);
    run_free(&r);
}

static void test_parse_slabinfo_case20_inode_cache(void **state)
{
    (void)state;
    run_t r =
        RUN("parse", "--json", "--compact",
            pw_test_fixture("slabinfo/case20_slabinfo_1.1_2004_inode_dentry_growth_2.4.26.txt"));
    assert_int_equal(r.rc, 0);
    /* README case20: version 1.1, 69 caches; inode_cache 369522/491666 x 512 B, 70238 slabs.
     * The row is `inode_cache 369522 491666 512 70224 70238 1` (active_slabs 70224,
     * pagesperslab 1); 1.1 prints no objperslab, derived as 491666 / 70238 = 7 exactly. */
    assert_non_null(strstr(r.out, "{\"format\":\"slabinfo\",\"version\":\"1.1\",\"caches\":["));
    assert_non_null(strstr(r.out, "{\"name\":\"inode_cache\",\"active_objs\":369522,"
                                  "\"num_objs\":491666,\"objsize\":512,\"objperslab\":7,"
                                  "\"pagesperslab\":1,\"active_slabs\":70224,"
                                  "\"num_slabs\":70238,\"partial\":false}"));
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "caches")), 69);
    json_decref(j);
    run_free(&r);
}

static void test_parse_slabinfo_case28_partial(void **state)
{
    (void)state;
    run_t r =
        RUN("parse", "--json", "--compact", "--format=slabinfo",
            pw_test_fixture("slabinfo/case28_slabinfo_2.1_2016_partial_quoted_wrapped_header.txt"));
    assert_int_equal(r.rc, 0);
    /* README case28: 4 rows with only the first 5 numbers; kmalloc-8192 268/268 objsize 8192
     * objperslab 4 pagesperslab 8; slabdata absent, so active_slabs/num_slabs are omitted. */
    assert_non_null(strstr(r.out, "{\"name\":\"kmalloc-8192\",\"active_objs\":268,"
                                  "\"num_objs\":268,\"objsize\":8192,\"objperslab\":4,"
                                  "\"pagesperslab\":8,\"partial\":true}"));
    assert_non_null(strstr(r.out, "{\"name\":\"kmalloc-1024\",\"active_objs\":2505,"
                                  "\"num_objs\":2976,"));
    assert_null(strstr(r.out, "active_slabs"));
    run_free(&r);
}

/* Every object has exactly the documented keys, in the documented order. */
static void check_keys(json_t *o, const char *const *keys, size_t n, int subset)
{
    assert_true(json_is_object(o));
    const char *k;
    json_t *v;
    size_t pos = 0;
    json_object_foreach(o, k, v)
    {
        while (pos < n && strcmp(keys[pos], k) != 0) {
            assert_true(subset); /* a key may be absent only where absence is allowed */
            pos++;
        }
        if (pos == n)
            fail_msg("unexpected or misordered key %s", k);
        pos++;
    }
    if (!subset)
        assert_int_equal(pos, n);
}

static void test_parse_json_shape(void **state)
{
    (void)state;
    static const char *const top[] = {"format", "screens", "unreadable_rows",
                                      "unreadable_rows_total"};
    static const char *const screen[] = {"title", "header", "rows", "incomplete"};
    static const char *const header[] = {"memory_kb",        "avail_kb",        "page_faults",
                                         "commit_kb",        "commit_limit_kb", "commit_peak_kb",
                                         "pool_nonpaged_kb", "pool_paged_kb"};
    static const char *const row[] = {"tag",  "type",  "allocs",    "frees",
                                      "diff", "bytes", "per_alloc", "mapped_driver"};
    const char *files[] = {"poolmon/case02_poolmon_xp_msdocs_display_sort_alloc.txt",
                           "poolmon/case06_poolmon_xp_msdocs_mem_unknown_driver_noheader.txt",
                           "poolmon/case19_poolmon_win10_msdocs_hid_mapped_truncated_col.txt",
                           "poolmon/variant_case10_utf16le_bom_crlf.txt"};
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        run_t r = RUN("parse", "--json", pw_test_fixture(files[f]));
        assert_int_equal(r.rc, 0);
        json_t *j = json_loads(r.out, 0, NULL);
        assert_non_null(j);
        check_keys(j, top, 4, 0);
        assert_int_equal(json_array_size(json_object_get(j, "unreadable_rows")), 0);
        assert_string_equal(json_string_value(json_object_get(j, "format")), "poolmon");
        size_t i, k;
        json_t *s, *rw;
        json_array_foreach(json_object_get(j, "screens"), i, s)
        {
            check_keys(s, screen, 4, 0);
            assert_int_equal(json_integer_value(json_object_get(s, "incomplete")), 0);
            json_t *t = json_object_get(s, "title");
            assert_true(json_is_string(t) || json_is_null(t));
            check_keys(json_object_get(s, "header"), header, 8, 1);
            json_array_foreach(json_object_get(s, "rows"), k, rw)
            {
                check_keys(rw, row, 8, 0);
                const char *type = json_string_value(json_object_get(rw, "type"));
                assert_true(strcmp(type, "paged") == 0 || strcmp(type, "nonpaged") == 0);
                json_t *md = json_object_get(rw, "mapped_driver");
                assert_true(json_is_string(md) || json_is_null(md));
                assert_int_equal(strlen(json_string_value(json_object_get(rw, "tag"))), 4);
            }
        }
        json_decref(j);
        run_free(&r);
    }
    static const char *const stop[] = {"format", "version", "caches"};
    static const char *const cache[] = {"name",         "active_objs", "num_objs",
                                        "objsize",      "objperslab",  "pagesperslab",
                                        "active_slabs", "num_slabs",   "partial"};
    const char *sfiles[] = {
        "slabinfo/case22_slabinfo_1.1stats_2002_swapoff_leak_2.4.19.txt",
        "slabinfo/case25_slabinfo_2.0_2004_dcache_ext3_inode_growth_2.6.8.txt",
        "slabinfo/case31_slabinfo_2.1_grep_dentry_single_line_plus_dentry_state.txt"};
    for (size_t f = 0; f < sizeof(sfiles) / sizeof(sfiles[0]); f++) {
        run_t r = RUN("parse", "--json", pw_test_fixture(sfiles[f]));
        assert_int_equal(r.rc, 0);
        json_t *j = json_loads(r.out, 0, NULL);
        assert_non_null(j);
        check_keys(j, stop, 3, 1);
        assert_true(json_array_size(json_object_get(j, "caches")) > 0);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(j, "caches"), i, c)
        {
            check_keys(c, cache, 9, 1);
            assert_true(json_is_string(json_object_get(c, "name")));
            assert_true(json_is_boolean(json_object_get(c, "partial")));
        }
        json_decref(j);
        run_free(&r);
    }
}

static void test_parse_case31_headerless(void **state)
{
    (void)state;
    run_t r =
        RUN("parse", "--json", "--compact",
            pw_test_fixture(
                "slabinfo/case31_slabinfo_2.1_grep_dentry_single_line_plus_dentry_state.txt"));
    assert_int_equal(r.rc, 0);
    /* README case31: dentry 2,369,308/2,369,325 x 192 B, 112,825 slabs; no version line. */
    assert_non_null(strstr(r.out, "{\"format\":\"slabinfo\",\"caches\":[{\"name\":\"dentry\","
                                  "\"active_objs\":2369308,\"num_objs\":2369325,"
                                  "\"objsize\":192,"));
    assert_non_null(strstr(r.out, "\"num_slabs\":112825,"));
    run_free(&r);
}

/* ---- parse: errors --------------------------------------------------------------------------- */

static void test_parse_rejects_with_file_line(void **state)
{
    (void)state;
    const char *f =
        pw_test_fixture("poolmon/case18_pooltags_alt_wsl41296_markdown_not_poolmon.txt");
    char path[4096];
    snprintf(path, sizeof(path), "%s", f);
    run_t r = RUN("parse", "--format", "poolmon", path);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    /* The file's line 3 is its "| Tag | ..." table header (README: rejected with the line). */
    char want[4200];
    snprintf(want, sizeof(want), "%s:3: ", path);
    assert_memory_equal(r.err, want, strlen(want));
    assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1); /* one line only */
    run_free(&r);

    /* auto: both parsers' errors, each as FILE:LINE. */
    r = RUN("parse", path);
    assert_int_equal(r.rc, 2);
    snprintf(want, sizeof(want), "%s:3: not poolmon: ", path);
    assert_memory_equal(r.err, want, strlen(want));
    snprintf(want, sizeof(want), "\n%s:", path);
    assert_non_null(strstr(r.err, want));
    assert_non_null(strstr(r.err, "not slabinfo: "));
    run_free(&r);

    r = RUN("parse", "/nonexistent/capture.txt");
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.err,
                        "/nonexistent/capture.txt: cannot open: No such file or directory\n");
    run_free(&r);

    r = RUN("parse", "--format", "csv", path);
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = RUN("parse");
    assert_int_equal(r.rc, 2);
    run_free(&r);
}

/* An empty file (or one of blank lines only) is said to be empty, in one message naming the file
 * that parse and import print alike, not as two parsers' "no screen found" (import checks its
 * files before it connects: the URL is never reached). */
static void test_parse_import_empty_file(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } cases[] = {{"", ""}, {"\r\n  \n\t\n", " (only blank lines)"}};
    for (size_t c = 0; c < 2; c++) {
        char path[] = "/tmp/pw_cli_emptyXXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        size_t n = strlen(cases[c].text);
        assert_int_equal(write(fd, cases[c].text, n), (ssize_t)n);
        close(fd);
        char want[256];
        snprintf(want, sizeof(want),
                 "%s: the file is empty%s: no poolmon screen or /proc/slabinfo dump in it\n", path,
                 cases[c].why);
        run_t r = RUN("parse", path);
        assert_int_equal(r.rc, 2);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, want);
        run_free(&r);
        env_url = "https://127.0.0.1:1";
        env_token = "t";
        r = RUN("import", path, "--host", "EMPTY01");
        reset_env();
        unlink(path);
        assert_int_equal(r.rc, 2);
        assert_string_equal(r.err, want);
        run_free(&r);
    }
}

static void test_parse_truncated_row(void **state)
{
    (void)state;
    char path[] = "/tmp/pw_cli_badXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    /* Line 3 starts like a row but its Frees column is not a number. */
    const char text[] =
        " Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n"
        " Wait Nonp    3971107 (   0)   3971077 (   0)       30    8456 (     0)    281\n"
        " Io   Nonp    1021112 (   1)   10x0985 (   1)      127   91912 (     0)    723\n";
    assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    close(fd);
    run_t r = RUN("parse", "--format", "poolmon", path);
    unlink(path);
    /* a row that cannot be read is said with its line and its screen marked incomplete, as
     * import says it (which leaves that screen out); the rows that parse are shown */
    assert_int_equal(r.rc, 0);
    char want[512];
    snprintf(want, sizeof(want),
             "%s:3: warning: unexpected character after the number in column frees: screen 1 "
             "of 1 is incomplete (`poolwatch import` leaves it out: a gap, not a tag read as "
             "freed)\n",
             path);
    assert_string_equal(r.err, want);
    assert_non_null(strstr(r.out, "Screen 1 (line 1): untitled, 1 rows, INCOMPLETE: 1 row not "
                                  "read\n"));
    assert_null(strstr(r.err, "ends inside this row")); /* garbage, not a cut */
    run_free(&r);
    /* The same capture cut inside its last row (no newline): parse stays strict, and says
     * that only the cut is wrong and that import keeps the rest. */
    strcpy(path, "/tmp/pw_cli_badXXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    const char cut[] =
        " Tag  Type     Allocs            Frees            Diff   Bytes       Per Alloc\n"
        " Wait Nonp    3971107 (   0)   3971077 (   0)       30    8456 (     0)    281\n"
        " Io   Nonp    1021112 (   1)   10";
    assert_int_equal(write(fd, cut, sizeof(cut) - 1), (ssize_t)(sizeof(cut) - 1));
    close(fd);
    r = RUN("parse", path);
    unlink(path);
    assert_int_equal(r.rc, 2);
    snprintf(want, sizeof(want),
             "%s:3: the file ends inside this row; everything before it parses: `poolwatch "
             "import` keeps those rows, `parse` stays strict\n",
             path);
    if (strstr(r.err, want) == NULL)
        fail_msg("stderr: %s", r.err);
    run_free(&r);
}

static void test_parse_human_table(void **state)
{
    (void)state;
    run_t r =
        RUN("parse", pw_test_fixture("poolmon/case08_poolmon_xp_msdocs_ip_double_mapped.txt"));
    assert_int_equal(r.rc, 0);
    /* Columns: " %-4s %-5s %10s %10s %9s %10s %9s  driver" (tag, type, allocs, frees, diff,
     * bytes, per alloc), values of the IpSI row. */
    assert_non_null(strstr(r.out, "\n IpSI Nonp        1027          0      1027      53272"
                                  "        51  [ipsec][ipsec.sys    - initial allcoations]\n"));
    run_free(&r);
    r = RUN("parse",
            pw_test_fixture("slabinfo/case28_slabinfo_2.1_2016_partial_quoted_wrapped_header.txt"));
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "slabinfo version 2.1, 4 caches"));
    /* name padded to 12 (longest name), then %11 %11 %8 %10 %12, '-' for the absent slabs. */
    assert_non_null(strstr(r.out, "\nkmalloc-8192         268         268     8192          4"
                                  "            8            -          -  partial\n"));
    run_free(&r);
}

/* ---- top: rendering and keys ------------------------------------------------------------------
 */

static const char canned_pool[] =
    "{\"host\":\"HOST01\",\"timestamp_ms\":1710411300000,\"prev_timestamp_ms\":1710411299000,"
    "\"totals\":{\"physical_memory_bytes\":268435456,\"available_bytes\":104857600,"
    "\"commit_limit_bytes\":671088640,\"nonpaged_bytes\":8531968,\"paged_bytes\":27873280},"
    "\"rows\":["
    "{\"tag\":\"Wait\",\"type\":\"nonpaged\",\"allocs\":3971107,\"frees\":3971077,\"diff\":30,"
    "\"bytes\":8456,\"per_alloc\":281,\"allocs_change\":0,\"frees_change\":0,\"diff_change\":2,"
    "\"bytes_change\":512,\"driver\":null,\"description\":null},"
    "{\"tag\":\"Io  \",\"type\":\"nonpaged\",\"allocs\":1021112,\"frees\":1020985,\"diff\":127,"
    "\"bytes\":91912,\"per_alloc\":723,\"allocs_change\":1,\"frees_change\":1,\"diff_change\":0,"
    "\"bytes_change\":0,\"driver\":\"io.sys\",\"description\":\"I/O\"},"
    "{\"tag\":\"Key \",\"type\":\"paged\",\"allocs\":954821,\"frees\":953979,\"diff\":842,"
    "\"bytes\":87528,\"per_alloc\":103,\"allocs_change\":0,\"frees_change\":0,\"diff_change\":0,"
    "\"bytes_change\":0,\"driver\":null,\"description\":null}],"
    "\"count\":3,\"total_rows\":10}";

/* The three rows as the documented format prints them:
 * " %-4s %-5s %10u (%5d) %10u (%5d) %9u (%5d) %11u (%7d) %9u", then poolmon /g's mapped driver
 * (the API's "driver") where the row has one: Io's io.sys. */
#define ROW_IO                                                                                     \
    " Io   Nonp     1021112 (    1)    1020985 (    1)       127 (    0)       91912 (      0)   " \
    "    723  io.sys"
#define ROW_KEY                                                                                    \
    " Key  Paged     954821 (    0)     953979 (    0)       842 (    0)       87528 (      0)   " \
    "    103"
#define ROW_WAIT                                                                                   \
    " Wait Nonp     3971107 (    0)    3971077 (    0)        30 (    2)        8456 (    512)   " \
    "    281"
#define COL_HDR                                                                                    \
    " Tag  Type      Allocs (     )      Frees (     )      Diff (     )       Bytes (       ) "   \
    "Per Alloc  Mapped_Driver"

static void load_table(pw_top_table_t *t)
{
    json_t *j = json_loads(canned_pool, 0, NULL);
    assert_non_null(j);
    pw_diag_t d;
    assert_int_equal(pw_top_table_from_json(j, t, &d), 0);
    json_decref(j);
}

static void test_top_render_default(void **state)
{
    (void)state;
    pw_top_table_t t;
    load_table(&t);
    assert_int_equal(t.n_rows, 3);
    assert_int_equal(t.total_rows, 10);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    const char *want[] = {
        /* 268435456 B = 262144K, 104857600 B = 102400K; 1710411300 s = 2024-03-14 10:15:00 UTC */
        " Memory:   262144K Avail:   102400K   Host: HOST01  2024-03-14 10:15:00Z",
        /* commit and peak not given -> "-"; 671088640 B = 655360K, 8531968 = 8332K,
         * 27873280 = 27220K */
        " Commit:         - Limit:   655360K Peak:         -  Pool N:     8332K P:    27220K",
        " Sort: Bytes (desc)  Pool: both  Include: *  Exclude: -  Rows: 3/10", "", COL_HDR,
        ROW_IO,   /* 91912 bytes */
        ROW_KEY,  /* 87528 */
        ROW_WAIT, /* 8456 */
    };
    assert_int_equal(l.n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < l.n; i++)
        assert_string_equal(l.text[i], want[i]);
    assert_int_equal(l.attr[4], PW_TOP_ATTR_HEADER);
    assert_int_equal(l.attr[5], PW_TOP_ATTR_NONE); /* L is off */
    pw_top_lines_close(&l);

    /* A 6-line terminal keeps the header and one row; 40 columns cut every line. */
    assert_int_equal(pw_top_render(&t, &v, 40, 6, &l), 0);
    assert_int_equal(l.n, 6);
    assert_string_equal(l.text[5], " Io   Nonp     1021112 (    1)    102098");
    pw_top_lines_close(&l);
    pw_top_table_close(&t);
}

/* The agent's own footprint under the totals (totals.agent of the pool table): 25165824 B =
 * 24576K, 12345 ms = 12.3 s, 345 handles; a Linux agent's 0 handles read "-"; none without it
 * (test_top_render_default). */
static void test_top_render_agent(void **state)
{
    (void)state;
    json_t *j = json_loads(canned_pool, 0, NULL);
    assert_non_null(j);
    json_t *ag = json_pack("{s:I,s:I,s:I}", "rss_bytes", (json_int_t)25165824, "cpu_ms",
                           (json_int_t)12345, "handles", (json_int_t)345);
    assert_int_equal(json_object_set_new(json_object_get(j, "totals"), "agent", ag), 0);
    pw_top_table_t t;
    pw_diag_t d;
    assert_int_equal(pw_top_table_from_json(j, &t, &d), 0);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 9);
    assert_string_equal(
        l.text[2], " Agent:     24576K CPU:     12.3s Handles:    345  (poolwatch-agent itself)");
    assert_string_equal(l.text[3], " Sort: Bytes (desc)  Pool: both  Include: *  Exclude: -  "
                                   "Rows: 3/10");
    assert_int_equal(l.attr[5], PW_TOP_ATTR_HEADER);
    pw_top_lines_close(&l);
    pw_top_table_close(&t);
    json_object_set_new(ag, "handles", json_integer(0));
    assert_int_equal(pw_top_table_from_json(j, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(
        l.text[2], " Agent:     24576K CPU:     12.3s Handles:      -  (poolwatch-agent itself)");
    pw_top_lines_close(&l);
    pw_top_table_close(&t);
    json_object_set_new(ag, "rss_bytes", json_string("x"));
    assert_int_equal(pw_top_table_from_json(j, &t, &d), PW_EPARSE);
    assert_string_equal(d.msg, "bad totals.agent");
    json_decref(j);
}

/* The Limit line under the totals (GET /api/v1/hosts/{host}): each pool's use against its
 * limit with the limit's source and level, and when the most urgent pool runs out. Used bytes
 * are the pool table's: 8531968 B = 8.1 MiB of a 10485760 B limit = 81.4 % (8531968 / 10485760
 * = 0.81367); paged 27873280 B = 26.6 MiB. ETAs: 1710500000000 = 2024-03-15 10:53:20Z,
 * 1710420000000 = 2024-03-14 12:40:00Z (date -u -d @...). */
static void test_top_render_limits(void **state)
{
    (void)state;
    pw_top_table_t t;
    load_table(&t);
    pw_diag_t d;
    json_t *h = json_pack("{s:I,s:I,s:s,s:s,s:I,s:I,s:n,s:s,s:s,s:n}", "nonpaged_bytes",
                          (json_int_t)8500000, "nonpaged_limit_bytes", (json_int_t)10485760,
                          "nonpaged_limit_source", "computed", "nonpaged_level", "warn",
                          "nonpaged_eta_ms", (json_int_t)1710500000000, "paged_bytes",
                          (json_int_t)27000000, "paged_limit_bytes", "paged_limit_source",
                          "unknown", "paged_level", "unknown", "paged_eta_ms");
    assert_non_null(h);
    assert_int_equal(pw_top_limits_from_json(h, &t, &d), 0);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 9);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, warn)  P: "
                                   "26.6 MiB, limit unknown  ETA: N 2024-03-15 10:53:20Z");
    pw_top_lines_close(&l);

    /* Both pools run out: the higher level wins over the nearer time (the paged pool's 12:40
     * is nearer, but nonpaged is critical); at one level the nearer time wins. 27873280 /
     * 33554432 = 83.1 %. */
    json_object_set_new(h, "nonpaged_level", json_string("critical"));
    json_object_set_new(h, "paged_limit_bytes", json_integer(33554432));
    json_object_set_new(h, "paged_limit_source", json_string("reported"));
    json_object_set_new(h, "paged_level", json_string("warn"));
    json_object_set_new(h, "paged_eta_ms", json_integer(1710420000000));
    assert_int_equal(pw_top_limits_from_json(h, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, critical)  P: "
                                   "26.6 MiB of 32.0 MiB (83.1%, reported, warn)  ETA: N "
                                   "2024-03-15 10:53:20Z");
    pw_top_lines_close(&l);
    json_object_set_new(h, "paged_level", json_string("critical"));
    assert_int_equal(pw_top_limits_from_json(h, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, critical)  P: "
                                   "26.6 MiB of 32.0 MiB (83.1%, reported, critical)  ETA: P "
                                   "2024-03-14 12:40:00Z");
    pw_top_lines_close(&l);

    /* No limit known and no ETA (an imported capture without --os): said, never 0 %. */
    json_t *none =
        json_pack("{s:I,s:n,s:s,s:s,s:n,s:I,s:n,s:n}", "nonpaged_bytes", (json_int_t)8500000,
                  "nonpaged_limit_bytes", "nonpaged_limit_source", "unknown", "nonpaged_level",
                  "unknown", "nonpaged_eta_ms", "paged_bytes", (json_int_t)27000000,
                  "paged_limit_bytes", "paged_eta_ms");
    assert_int_equal(pw_top_limits_from_json(none, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB, limit unknown  P: 26.6 MiB, limit unknown  "
                                   "ETA: - (no pool grows towards a known limit)");
    pw_top_lines_close(&l);
    /* A host whose backlog streams in (quickstart's ddk-2003 in its first minute): an old
     * sample's level and ETA (ok, an ETA already past) are not shown as now. */
    json_object_set_new(h, "loading_history", json_true());
    assert_int_equal(pw_top_limits_from_json(h, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit: loading history (the table is of the newest sample so "
                                   "far)");
    pw_top_lines_close(&l);
    json_object_set_new(h, "loading_history", json_false());
    /* The limit's rule and how the ETA is known go on a line under it (the new-user trial: top
     * said only "computed", and "no pool grows towards a known limit" for a 3-screen import
     * whose leak gives an ETA): a leak's growth alone, with its range (1710410000000 =
     * 2024-03-14 09:53:20Z, 1710600000000 = 2024-03-16 14:40:00Z). */
    json_t *few = json_pack(
        "{s:I,s:I,s:s,s:s,s:s,s:I,s:s,s:[I,I],s:s,s:I,s:n,s:n,s:s,s:n,s:n,s:s}", "nonpaged_bytes",
        (json_int_t)8500000, "nonpaged_limit_bytes", (json_int_t)10485760, "nonpaged_limit_source",
        "computed", "nonpaged_limit_detail", "Windows Server 2003 x86 with /3GB: 128 MB",
        "nonpaged_level", "warn", "nonpaged_eta_ms", (json_int_t)1710500000000,
        "nonpaged_eta_basis", "leak", "nonpaged_eta_range_ms", (json_int_t)1710410000000,
        (json_int_t)1710600000000, "nonpaged_eta_note",
        "from this leak's growth alone, low confidence: 3 points over 30 min (the pool's trend "
        "needs 6 in its window)",
        "paged_bytes", (json_int_t)27000000, "paged_limit_bytes", "paged_eta_ms", "paged_level",
        "unknown", "paged_eta_basis", "paged_ran_out_ms", "paged_eta_note",
        "no ETA: the pool's limit is unknown");
    assert_non_null(few);
    assert_int_equal(pw_top_limits_from_json(few, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 10);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, warn)  P: "
                                   "26.6 MiB, limit unknown  ETA: N 2024-03-15 10:53:20Z");
    assert_string_equal(l.text[3], " N limit computed: Windows Server 2003 x86 with /3GB: 128 MB  "
                                   "ETA N (between 2024-03-14 09:53:20Z and 2024-03-16 "
                                   "14:40:00Z): from this leak's growth alone, low confidence: 3 "
                                   "points over 30 min (the pool's trend needs 6 in its window)");
    pw_top_lines_close(&l);
    /* A pool that ran out: "ran out" and since when (1710400000000 = 2024-03-14 07:06:40Z),
     * never "runs out" at its last sample. */
    json_object_set_new(few, "nonpaged_eta_ms", json_integer(1710400000000));
    json_object_set_new(few, "nonpaged_ran_out_ms", json_integer(1710400000000));
    json_object_set_new(few, "nonpaged_eta_basis", json_string("ran_out"));
    json_object_set_new(few, "nonpaged_eta_range_ms", json_null());
    json_object_set_new(few, "nonpaged_level", json_string("critical"));
    json_object_set_new(few, "nonpaged_eta_note",
                        json_string("ran out: at or over its limit since 2024-03-14 07:06:40Z "
                                    "(100.2% of it)"));
    assert_int_equal(pw_top_limits_from_json(few, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, critical)  P: "
                                   "26.6 MiB, limit unknown  ETA: N ran out 2024-03-14 07:06:40Z");
    assert_string_equal(l.text[3], " N limit computed: Windows Server 2003 x86 with /3GB: 128 MB  "
                                   "N pool ran out: at or over its limit since 2024-03-14 "
                                   "07:06:40Z (100.2% of it)");
    pw_top_lines_close(&l);
    /* No ETA from this collector: why, not "no pool grows" */
    json_object_set_new(few, "nonpaged_eta_ms", json_null());
    json_object_set_new(few, "nonpaged_ran_out_ms", json_null());
    json_object_set_new(few, "nonpaged_eta_basis", json_null());
    json_object_set_new(few, "nonpaged_limit_detail", json_string(""));
    json_object_set_new(few, "nonpaged_eta_note",
                        json_string("no ETA: the pool as a whole does not rise (trend p 0.4 over "
                                    "12 points)"));
    assert_int_equal(pw_top_limits_from_json(few, &t, &d), 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Limit N: 8.1 MiB of 10.0 MiB (81.4%, computed, critical)  P: "
                                   "26.6 MiB, limit unknown  ETA: -");
    assert_string_equal(l.text[3], " ETA N: no ETA: the pool as a whole does not rise (trend p 0.4 "
                                   "over 12 points)");
    pw_top_lines_close(&l);
    json_decref(few);
    /* A bad number leaves the line out. */
    json_object_set_new(h, "nonpaged_limit_bytes", json_string("x"));
    assert_int_equal(pw_top_limits_from_json(h, &t, &d), PW_EPARSE);
    assert_int_equal(t.limits.have, 0);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 8);
    pw_top_lines_close(&l);
    json_decref(none);
    json_decref(h);
    pw_top_table_close(&t);
}

/* Linux rows in top (issue 19 item 5): the Tag column grows to the longest tag up to 32
 * columns; an allocation site longer than that keeps its end (file and line) after "…", so the
 * columns after it stay where the header puts them. */
static void test_top_render_long_tags(void **state)
{
    (void)state;
    const char *doc =
        "{\"host\":\"lnx\",\"timestamp_ms\":1710411300000,\"total_rows\":3,\"rows\":["
        "{\"tag\":\"mlx5/core/steering/dr_ste_v1.c:1234\",\"type\":\"nonpaged\",\"allocs\":0,"
        "\"frees\":0,\"diff\":12,\"bytes\":40960,\"per_alloc\":3413},"
        "{\"tag\":\"vm:alloc_large_system_hash+0x204\",\"type\":\"nonpaged\",\"allocs\":0,"
        "\"frees\":0,\"diff\":3,\"bytes\":20480,\"per_alloc\":6826},"
        "{\"tag\":\"dentry\",\"type\":\"nonpaged\",\"allocs\":0,\"frees\":0,\"diff\":21,"
        "\"bytes\":4032,\"per_alloc\":192}]}";
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    pw_top_table_t t;
    pw_diag_t d;
    assert_int_equal(pw_top_table_from_json(j, &t, &d), 0);
    json_decref(j);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 8);
    /* 32 columns: "Tag" and 29 spaces; the 35-byte site: "…" and its last 31 bytes; the
     * 32-byte vmalloc caller as it is; dentry and 26 spaces */
    const char *want[] = {
        " Tag                              Type      Allocs",
        " \xe2\x80\xa6/core/steering/dr_ste_v1.c:1234 Nonp           0",
        " vm:alloc_large_system_hash+0x204 Nonp           0",
        " dentry                           Nonp           0",
    };
    assert_memory_equal(l.text[4], want[0], strlen(want[0]));
    assert_memory_equal(l.text[5], want[1], strlen(want[1]));
    assert_memory_equal(l.text[6], want[2], strlen(want[2]));
    assert_memory_equal(l.text[7], want[3], strlen(want[3]));
    /* every row's Bytes column ends where the header's does */
    const char *hb = strstr(l.text[4], "Bytes");
    assert_non_null(hb);
    size_t col = (size_t)(hb - l.text[4]) + 5;
    assert_memory_equal(l.text[5] + col + 2 - 11, "      40960", 11); /* 2: the "…" bytes */
    assert_memory_equal(l.text[7] + col - 11, "       4032", 11);
    pw_top_lines_close(&l);
    pw_top_table_close(&t);
}

/* The host's suspects' big-pool snapshots under the totals (GET /api/v1/leaks?host=H), in the
 * API's order; a suspect without one (null) has no line. Values of tests/agent/test_bigpool.c's
 * x64 buffer, as test_fmt's leaks case: 18886656 B = 18.0 MiB, 16777216 = 16.0 MiB, 12288 =
 * 12.0 KiB; 1710411300000 = 2024-03-14 10:15:00Z. */
static void test_top_render_bigpool(void **state)
{
    (void)state;
    const char *leaks =
        "{\"suspects\":[{\"host\":\"HOST01\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
        "\"big_pool\":{\"tag\":\"Ddk \",\"taken_ms\":1710411300000,\"scanned\":4,\"count\":3,"
        "\"bytes\":18886656,\"nonpaged_count\":2,\"nonpaged_bytes\":16789504,"
        "\"largest_bytes\":16777216,\"smallest_bytes\":12288}},"
        "{\"host\":\"HOST01\",\"tag\":\"Irp \",\"type\":\"nonpaged\",\"big_pool\":null},"
        "{\"host\":\"HOST01\",\"tag\":\"NtFC\",\"type\":\"paged\",\"big_pool\":{\"tag\":"
        "\"NtFC\",\"taken_ms\":1710411300000,\"scanned\":4,\"count\":0,\"bytes\":0}}]}";
    pw_top_table_t t;
    load_table(&t);
    json_t *j = json_loads(leaks, 0, NULL);
    assert_non_null(j);
    pw_diag_t d;
    assert_int_equal(pw_top_bigpool_from_json(j, &t, &d), 0);
    json_decref(j);
    assert_int_equal(t.n_big, 2);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 10);
    assert_string_equal(l.text[2], " Big pool Ddk  Nonp: 3 block(s) of a page or more, 18.0 MiB "
                                   "(largest 16.0 MiB, smallest 12.0 KiB)  2024-03-14 10:15:00Z");
    assert_string_equal(l.text[3], " Big pool NtFC Paged: no block of a page or more (small "
                                   "allocations)  2024-03-14 10:15:00Z");
    assert_string_equal(l.text[6], COL_HDR);
    pw_top_lines_close(&l);
    /* a snapshot with a bad number: refused, no line */
    j = json_loads("{\"suspects\":[{\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"big_pool\":"
                   "{\"count\":\"x\"}}]}",
                   0, NULL);
    assert_int_equal(pw_top_bigpool_from_json(j, &t, &d), PW_EPARSE);
    assert_int_equal(t.n_big, 0);
    json_decref(j);
    pw_top_table_close(&t);
}

/* A Linux host's table carries held_bytes (a slab cache's slabs): a Held column after Bytes,
 * the C key sorts by it (again: reversed), the API gets sort=held_bytes; a table whose
 * held_bytes are null (Windows, test_top_render_default) has no such column. case25's caches:
 * ext3_inode_cache 147614 slabs x 4096 B, dentry_cache 37900 x 4096 after one more slab. */
static void test_top_render_held(void **state)
{
    (void)state;
    const char *doc =
        "{\"host\":\"lnx\",\"timestamp_ms\":1710411300000,\"total_rows\":2,\"rows\":["
        "{\"tag\":\"dentry_cache\",\"type\":\"nonpaged\",\"allocs\":0,\"frees\":0,"
        "\"diff\":1061172,\"bytes\":148564080,\"per_alloc\":140,\"held_bytes\":155238400,"
        "\"held_bytes_change\":4096},"
        "{\"tag\":\"ext3_inode_cache\",\"type\":\"nonpaged\",\"allocs\":0,\"frees\":0,"
        "\"diff\":1328526,\"bytes\":552666816,\"per_alloc\":416,\"held_bytes\":604626944,"
        "\"held_bytes_change\":0}]}";
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    pw_top_table_t t;
    pw_diag_t d;
    assert_int_equal(pw_top_table_from_json(j, &t, &d), 0);
    json_decref(j);
    assert_true(t.has_held);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 7);
    assert_string_equal(l.text[4], " Tag              Type      Allocs (     )      Frees (     ) "
                                   "     Diff (     )       Bytes (       )        Held (       ) "
                                   "Per Alloc");
    assert_string_equal(l.text[5], " ext3_inode_cache Nonp           0 (    0)          0 (    0) "
                                   "  1328526 (    0)   552666816 (      0)   604626944 (      0) "
                                   "      416");
    assert_string_equal(l.text[6], " dentry_cache     Nonp           0 (    0)          0 (    0) "
                                   "  1061172 (    0)   148564080 (      0)   155238400 (   4096) "
                                   "      140");
    pw_top_lines_close(&l);
    /* C: by Held, largest first; again: smallest first */
    assert_int_equal(pw_top_key(&v, 'c'), PW_TOP_KEY_CHANGED);
    char q[512];
    assert_int_equal(pw_top_query(&v, "lnx", q, sizeof(q)), 0);
    assert_non_null(strstr(q, "sort=held_bytes&by_change=0&order=desc"));
    assert_int_equal(pw_top_key(&v, 'C'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_memory_equal(l.text[2], " Sort: Held (asc)", 17);
    assert_memory_equal(l.text[5], " dentry_cache ", 14);
    pw_top_lines_close(&l);
    /* S: by the change of Held, still ascending: ext3_inode_cache's 0 before +4096 */
    assert_int_equal(pw_top_key(&v, 's'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_memory_equal(l.text[5], " ext3_inode_cache ", 18);
    pw_top_lines_close(&l);
    pw_top_table_close(&t);
}

static void test_top_keys(void **state)
{
    (void)state;
    pw_top_table_t t;
    load_table(&t);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;

    /* ?: the key help in place of the table (3 header lines, blank, 11 help lines); ? again
     * brings the table back. */
    assert_int_equal(pw_top_key(&v, '?'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 15);
    assert_string_equal(l.text[4], " Keys (either case; ? again to close):");
    assert_int_equal(l.attr[4], PW_TOP_ATTR_HEADER);
    assert_string_equal(l.text[8],
                        "  C       sort by Held (Linux: the bytes a slab cache holds, slabtop's "
                        "cache size)");
    assert_string_equal(l.text[13],
                        "  N       session pools: every row -> all sessions -> session 0, 1, ... "
                        "(S:N rows)");
    assert_string_equal(l.text[14], "  Q       quit");
    pw_top_lines_close(&l);
    assert_int_equal(pw_top_key(&v, '?'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_memory_equal(l.text[4], " Tag ", 5);
    pw_top_lines_close(&l);

    /* P: both -> nonpaged: Io and Wait only. */
    assert_int_equal(pw_top_key(&v, 'P'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 7);
    assert_string_equal(l.text[2],
                        " Sort: Bytes (desc)  Pool: nonpaged  Include: *  Exclude: -  Rows: 2/10");
    assert_string_equal(l.text[5], ROW_IO);
    assert_string_equal(l.text[6], ROW_WAIT);
    pw_top_lines_close(&l);

    /* S: by the change of Bytes: Wait (+512) before Io (0). */
    assert_int_equal(pw_top_key(&v, 's'), PW_TOP_KEY_CHANGED);
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(
        l.text[2],
        " Sort: Bytes change (desc)  Pool: nonpaged  Include: *  Exclude: -  Rows: 2/10");
    assert_string_equal(l.text[5], ROW_WAIT);
    assert_string_equal(l.text[6], ROW_IO);
    pw_top_lines_close(&l);

    /* P again: paged only (Key); P a third time: both. */
    pw_top_key(&v, 'p');
    assert_int_equal(v.pools, PW_TOP_POOL_PAGED);
    pw_top_key(&v, 'p');
    assert_int_equal(v.pools, PW_TOP_POOL_BOTH);
    pw_top_key(&v, 'S');

    /* T: tags ascending (ASCII: "Io  " < "Key " < "Wait"); T again: descending. */
    pw_top_key(&v, 'T');
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[5], ROW_IO);
    assert_string_equal(l.text[6], ROW_KEY);
    assert_string_equal(l.text[7], ROW_WAIT);
    pw_top_lines_close(&l);
    pw_top_key(&v, 't');
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2],
                        " Sort: Tag (desc)  Pool: both  Include: *  Exclude: -  Rows: 3/10");
    assert_string_equal(l.text[5], ROW_WAIT);
    pw_top_lines_close(&l);

    /* A: allocs descending: Wait 3971107, Io 1021112, Key 954821. M: per alloc: Io 723, Wait
     * 281, Key 103. F, D pick their columns. */
    pw_top_key(&v, 'A');
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[5], ROW_WAIT);
    assert_string_equal(l.text[6], ROW_IO);
    assert_string_equal(l.text[7], ROW_KEY);
    pw_top_lines_close(&l);
    pw_top_key(&v, 'M');
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[5], ROW_IO);
    assert_string_equal(l.text[6], ROW_WAIT);
    assert_string_equal(l.text[7], ROW_KEY);
    pw_top_lines_close(&l);
    pw_top_key(&v, 'D'); /* diff: Key 842, Io 127, Wait 30 */
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[5], ROW_KEY);
    assert_string_equal(l.text[7], ROW_WAIT);
    pw_top_lines_close(&l);
    pw_top_key(&v, 'F');
    assert_int_equal(v.sort, PW_TOP_SORT_FREES);

    /* E: Sum lines per type after the column header; L: changed rows highlighted. */
    pw_top_key(&v, 'B');
    pw_top_key(&v, 'E');
    pw_top_key(&v, 'L');
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 10);
    /* Nonp: Io + Wait: allocs 4992219 (+1), frees 4992062 (+1), diff 157 (+2), bytes 100368
     * (+512), per alloc floor(100368 / 157) = 639. Paged: Key alone. */
    assert_string_equal(l.text[5], " Sum  Nonp     4992219 (    1)    4992062 (    1)       157 (  "
                                   "  2)      100368 (    512)       639");
    assert_string_equal(l.text[6], " Sum  Paged     954821 (    0)     953979 (    0)       842 (  "
                                   "  0)       87528 (      0)       103");
    assert_string_equal(l.text[7], ROW_IO);
    assert_int_equal(l.attr[7], PW_TOP_ATTR_HIGHLIGHT); /* Io: allocs/frees changed */
    assert_int_equal(l.attr[8], PW_TOP_ATTR_NONE);      /* Key: nothing changed */
    assert_int_equal(l.attr[9], PW_TOP_ATTR_HIGHLIGHT); /* Wait: diff/bytes changed */
    pw_top_lines_close(&l);

    /* I / X ask for patterns; patterns match the padded or the trimmed tag. */
    assert_int_equal(pw_top_key(&v, 'i'), PW_TOP_KEY_INCLUDE);
    assert_int_equal(pw_top_key(&v, 'X'), PW_TOP_KEY_EXCLUDE);
    assert_int_equal(pw_top_key(&v, 'q'), PW_TOP_KEY_QUIT);
    assert_int_equal(pw_top_key(&v, 'z'), PW_TOP_KEY_NONE);
    pw_top_key(&v, 'E');
    snprintf(v.include, sizeof(v.include), "Io,W*");
    snprintf(v.exclude, sizeof(v.exclude), "Wa?t");
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 6);
    assert_string_equal(l.text[5], ROW_IO);
    pw_top_lines_close(&l);
    assert_true(pw_top_match("Io", "Io  "));
    assert_true(pw_top_match("Io??", "Io  "));
    assert_false(pw_top_match("io*", "Io  ")); /* case-sensitive, as poolmon /i */
    assert_true(pw_top_match("Nt*,Dh ?", "Dh 1"));
    assert_false(pw_top_match("", "Io  "));
    pw_top_table_close(&t);
}

static void test_top_query(void **state)
{
    (void)state;
    pw_top_view_t v;
    pw_top_view_init(&v);
    char q[512];
    assert_int_equal(pw_top_query(&v, "HOST 01", q, sizeof(q)), 0);
    assert_string_equal(q,
                        "/api/v1/hosts/HOST%2001/pool?sort=bytes&by_change=0&order=desc&pool=both");
    pw_top_key(&v, 'T');
    pw_top_key(&v, 'P');
    pw_top_key(&v, 'S'); /* no change column for tags: by_change stays 0 in the query */
    snprintf(v.include, sizeof(v.include), "Io*,Nt?");
    assert_int_equal(pw_top_query(&v, "h", q, sizeof(q)), 0);
    assert_string_equal(q, "/api/v1/hosts/h/pool?sort=tag&by_change=0&order=asc&pool=nonpaged"
                           "&include=Io%2A%2CNt%3F");
    pw_top_key(&v, 'D');
    snprintf(v.exclude, sizeof(v.exclude), "Dh 1");
    assert_int_equal(pw_top_query(&v, "h", q, sizeof(q)), 0);
    assert_string_equal(q, "/api/v1/hosts/h/pool?sort=diff&by_change=1&order=desc&pool=nonpaged"
                           "&include=Io%2A%2CNt%3F&exclude=Dh%201");
    assert_int_equal(pw_top_query(&v, "h", q, 40), PW_ETOOBIG);
}

/* Session pools per session: rows of sessions 1 and 2 ("S:N" in the Type column), the N key
 * cycling every row -> all sessions -> session 1 -> session 2 -> every row, and the query. */
static const char canned_sessions[] =
    "{\"host\":\"RDS01\",\"timestamp_ms\":1710411300000,\"prev_timestamp_ms\":null,"
    "\"rows\":["
    "{\"tag\":\"Gh05\",\"type\":\"session\",\"session\":2,\"allocs\":5,\"frees\":1,"
    "\"diff\":4,\"bytes\":512,\"per_alloc\":128,\"allocs_change\":0,\"frees_change\":0,"
    "\"diff_change\":0,\"bytes_change\":0},"
    "{\"tag\":\"Gh05\",\"type\":\"session\",\"session\":1,\"allocs\":30,\"frees\":10,"
    "\"diff\":20,\"bytes\":2048,\"per_alloc\":102,\"allocs_change\":0,\"frees_change\":0,"
    "\"diff_change\":0,\"bytes_change\":0},"
    "{\"tag\":\"Proc\",\"type\":\"nonpaged\",\"allocs\":9,\"frees\":2,\"diff\":7,"
    "\"bytes\":900,\"per_alloc\":128,\"allocs_change\":0,\"frees_change\":0,"
    "\"diff_change\":0,\"bytes_change\":0}],"
    "\"count\":3,\"total_rows\":3}";

static void test_top_sessions(void **state)
{
    (void)state;
    json_t *j = json_loads(canned_sessions, 0, NULL);
    assert_non_null(j);
    pw_top_table_t t;
    pw_diag_t d;
    assert_int_equal(pw_top_table_from_json(j, &t, &d), 0);
    json_decref(j);
    assert_int_equal(t.rows[0].session, 2);
    assert_int_equal(t.rows[2].session, -1);
    pw_top_view_t v;
    pw_top_view_init(&v);
    pw_top_lines_t l;
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    /* Bytes descending: Gh05 of session 1 (2048), Proc (900), Gh05 of session 2 (512). */
    assert_string_equal(l.text[5], " Gh05 S:1           30 (    0)         10 (    0)        20 "
                                   "(    0)        2048 (      0)       102");
    assert_string_equal(l.text[6], " Proc Nonp           9 (    0)          2 (    0)         7 "
                                   "(    0)         900 (      0)       128");
    assert_string_equal(l.text[7], " Gh05 S:2            5 (    0)          1 (    0)         4 "
                                   "(    0)         512 (      0)       128");
    pw_top_lines_close(&l);

    char q[512];
    assert_int_equal(pw_top_key(&v, 'n'), PW_TOP_KEY_SESSION);
    pw_top_next_session(&v, &t);
    assert_int_equal(v.session, PW_TOP_SESSION_ALL);
    assert_int_equal(v.n_sessions, 2);
    assert_int_equal(pw_top_query(&v, "RDS01", q, sizeof(q)), 0);
    assert_string_equal(q, "/api/v1/hosts/RDS01/pool?sort=bytes&by_change=0&order=desc&pool=both"
                           "&session=all");
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_string_equal(l.text[2], " Sort: Bytes (desc)  Pool: both  Session: all  Include: *  "
                                   "Exclude: -  Rows: 2/3");
    pw_top_lines_close(&l);
    pw_top_next_session(&v, &t);
    assert_int_equal(v.session, 1);
    assert_int_equal(pw_top_query(&v, "RDS01", q, sizeof(q)), 0);
    assert_non_null(strstr(q, "&session=1"));
    assert_int_equal(pw_top_render(&t, &v, 0, 0, &l), 0);
    assert_int_equal(l.n, 6); /* one row: session 1's Gh05 */
    assert_non_null(strstr(l.text[5], "Gh05 S:1"));
    pw_top_lines_close(&l);
    pw_top_next_session(&v, &t);
    assert_int_equal(v.session, 2);
    pw_top_next_session(&v, &t);
    assert_int_equal(v.session, PW_TOP_SESSION_EVERY);
    assert_int_equal(pw_top_query(&v, "RDS01", q, sizeof(q)), 0);
    assert_null(strstr(q, "session"));
    pw_top_table_close(&t);
}

/* bigpool: the agent's summary as text (values of tests/agent/test_bigpool.c's x64 buffer). */
static void test_fmt_bigpool(void **state)
{
    (void)state;
    const char *doc =
        "{\"status\":0,\"message\":\"3 big-pool block(s)\",\"matches\":[],\"big_pool\":{"
        "\"tag\":\"Ddk \",\"taken_ms\":1,\"scanned\":4,\"count\":3,\"bytes\":18886656,"
        "\"nonpaged_count\":2,\"nonpaged_bytes\":16789504,\"largest_bytes\":16777216,"
        "\"smallest_bytes\":12288,\"size_hist\":[0,1,0,0,0,0,0,0,0,1,0,1]}}";
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_bigpool("HOST01", j, f), 0);
    fclose(f);
    assert_string_equal(buf, "HOST01 'Ddk ': 3 big-pool block(s), 18886656 bytes (nonpaged: 2, "
                             "16789504 bytes); largest 16777216, smallest 12288; 4 entries in "
                             "the table\n"
                             "  size                 blocks\n"
                             "  [8K, 16K)                 1\n"
                             "  [2M, 4M)                  1\n"
                             "  [8M, ...)                 1\n");
    free(buf);
    json_decref(j);
    /* No block of a page or more: said as leaks and top say it, not "0 block(s)" */
    j = json_loads("{\"big_pool\":{\"tag\":\"Ddk \",\"scanned\":11008,\"count\":0,"
                   "\"bytes\":0,\"nonpaged_count\":0,\"nonpaged_bytes\":0,\"largest_bytes\":0,"
                   "\"smallest_bytes\":0,\"size_hist\":[]}}",
                   0, NULL);
    f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_bigpool("ddk-2003", j, f), 0);
    fclose(f);
    assert_string_equal(buf, "ddk-2003 'Ddk ': no block of a page or more (its bytes are small "
                             "allocations); 11008 entries in the table\n");
    free(buf);
    json_decref(j);
    /* An agent that could not take it: its message, and 1. */
    j = json_loads("{\"status\":-95,\"message\":\"source 'linux' has no big-pool table\","
                   "\"matches\":[]}",
                   0, NULL);
    f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_bigpool("lx", j, f), 1);
    fclose(f);
    assert_string_equal(buf, "lx: no big-pool snapshot: source 'linux' has no big-pool table\n");
    free(buf);
    json_decref(j);
    /* A histogram of 53 buckets: the last would start at 2^64 (no uint64_t): refused; 52
     * buckets print up to [8796093022208M, ...) = 2^63 B */
    for (size_t nb = 52; nb <= 53; nb++) {
        char d2[512];
        int o = snprintf(d2, sizeof(d2),
                         "{\"big_pool\":{\"tag\":\"Ddk \",\"scanned\":1,\"count\":1,"
                         "\"bytes\":1,\"nonpaged_count\":1,\"nonpaged_bytes\":1,"
                         "\"largest_bytes\":1,\"smallest_bytes\":1,\"size_hist\":[");
        for (size_t i = 0; i < nb; i++)
            o += snprintf(d2 + o, sizeof(d2) - (size_t)o, "%s%d", i ? "," : "", i + 1 == nb);
        snprintf(d2 + o, sizeof(d2) - (size_t)o, "]}}");
        j = json_loads(d2, 0, NULL);
        assert_non_null(j);
        f = open_memstream(&buf, &len);
        assert_int_equal(pw_fmt_bigpool("big", j, f), nb == 52 ? 0 : PW_EPARSE);
        fclose(f);
        if (nb == 52)
            assert_non_null(strstr(buf, "  [8796093022208M, ...)          1\n"));
        free(buf);
        json_decref(j);
    }
}

/* `poolwatch events`: the API's events as docs/cli.md shows them (times: 1796047120000 ms is
 * 2026-11-30 13:58:40Z, `date -u -d @1796047120`; 98566144 B = 94 x 1 MiB, 41943040 B = 40 MiB). */
static void test_fmt_events(void **state)
{
    (void)state;
    const char *doc =
        "{\"host\":\"ddk-2003\",\"events\":["
        "{\"ts_ms\":1796047120000,\"provider\":\"Srv\",\"event_id\":2020,\"record_id\":48190,"
        "\"kind\":\"paged_pool_empty\",\"pool\":\"paged\",\"message\":\"paged pool empty\","
        "\"tags\":[]},"
        "{\"ts_ms\":1796047392486,\"provider\":\"Srv\",\"event_id\":2019,\"record_id\":48213,"
        "\"kind\":\"nonpaged_pool_empty\",\"pool\":\"nonpaged\",\"message\":\"nonpaged pool "
        "empty\",\"tags\":[]},"
        "{\"ts_ms\":1796047507500,\"provider\":\"Microsoft-Windows-Resource-Exhaustion-Detector\","
        "\"event_id\":2004,\"record_id\":48220,\"kind\":\"low_virtual_memory\",\"pool\":null,"
        "\"message\":\"low virtual memory\",\"tags\":[{\"tag\":\"Ddk \",\"pool\":\"nonpaged\","
        "\"bytes\":98566144},{\"tag\":\"MmSt\",\"pool\":\"paged\",\"bytes\":41943040}]}]}";
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_events(j, f), 0);
    fclose(f);
    assert_string_equal(
        buf, "ddk-2003: 3 pool events from the System log\n"
             "TIME                  EVENT                                                 POOL     "
             "TAGS NAMED\n"
             "2026-11-30 13:58:40Z  Srv 2020: paged pool empty                            paged    "
             "-\n"
             "2026-11-30 14:03:12Z  Srv 2019: nonpaged pool empty                         nonpaged "
             "-\n"
             "2026-11-30 14:05:07Z  Resource-Exhaustion-Detector 2004: low virtual memory -        "
             "\"Ddk \" nonpaged 94.0 MiB, \"MmSt\" paged 40.0 MiB\n");
    free(buf);
    json_decref(j);
    j = json_loads("{\"host\":\"h\",\"events\":[]}", 0, NULL);
    f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_events(j, f), 0);
    fclose(f);
    assert_string_equal(buf, "h: 0 pool events from the System log\n");
    free(buf);
    json_decref(j);
    j = json_loads("{\"host\":\"h\"}", 0, NULL);
    assert_int_equal(pw_fmt_events(j, stderr), PW_EPARSE);
    json_decref(j);
}

static void test_top_table_rejects_bad_json(void **state)
{
    (void)state;
    const char *bad[] = {"{\"host\":\"h\"}", "{\"rows\":[{\"tag\":\"Io  \",\"type\":\"weird\"}]}",
                         "{\"rows\":[{\"tag\":\"Io  \",\"type\":\"paged\",\"bytes\":\"12\"}]}",
                         "{\"rows\":[{\"type\":\"paged\"}]}", "[]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        pw_top_table_t t;
        pw_diag_t d;
        assert_int_equal(pw_top_table_from_json(j, &t, &d), PW_EPARSE);
        pw_top_table_close(&t);
        json_decref(j);
    }
}

/* ---- URLs, environment, helpers ---------------------------------------------------------------
 */

static void test_url_parse(void **state)
{
    (void)state;
    pw_url_t u;
    pw_diag_t d;
    assert_int_equal(pw_url_parse("https://collector.example:8443/pw/", &u, &d), 0);
    assert_int_equal(u.tls, 1);
    assert_string_equal(u.host, "collector.example");
    assert_string_equal(u.port, "8443");
    assert_string_equal(u.base, "/pw");
    assert_int_equal(pw_url_parse("HTTPS://h", &u, &d), 0);
    assert_string_equal(u.port, "443");
    assert_string_equal(u.base, "");
    assert_int_equal(pw_url_parse("http://[::1]:8080", &u, &d), 0);
    assert_int_equal(u.tls, 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "8080");
    assert_int_equal(pw_url_parse("http://127.0.0.1", &u, &d), 0);
    assert_string_equal(u.port, "80");
    const char *bad[] = {"",
                         "ftp://h",
                         "https://",
                         "https://h:0",
                         "https://h:65536",
                         "https://h:8x",
                         "https://u@h",
                         "https://h/?q=1",
                         "https://[::1",
                         "collector:8443",
                         "https://h:"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(pw_url_parse(bad[i], &u, &d), PW_EINVAL);
    assert_int_equal(pw_url_parse(NULL, &u, &d), PW_EINVAL);

    char e[32] = "/x/";
    assert_int_equal(pw_url_escape(e, sizeof(e), "Io  "), 11);
    assert_string_equal(e, "/x/Io%20%20");
    e[0] = '\0';
    pw_url_escape(e, sizeof(e), "a/b?c&d=e~_.-\\\xe9");
    assert_string_equal(e, "a%2Fb%3Fc%26d%3De~_.-%5C%E9");
    char small[6] = "";
    assert_int_equal(pw_url_escape(small, sizeof(small), "Io  "), PW_ETOOBIG);
    assert_string_equal(small, "Io%20"); /* 5 bytes + NUL fill 6; the 2nd space would not */
}

/* `poolwatch help COMMAND` prints what `poolwatch COMMAND --help` prints; --version names the
 * version, the commit and OpenSSL. */
static void test_cli_help_and_version(void **state)
{
    (void)state;
    reset_env();
    static const char *const cmds[] = {"parse",  "hosts",  "tags", "leaks",  "alerts",
                                       "series", "lookup", "top",  "import", "host"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        run_t a = RUN("help", cmds[i]);
        run_t b = RUN(cmds[i], "--help");
        run_t c = RUN(cmds[i], "-h");
        assert_int_equal(a.rc, 0);
        assert_int_equal(b.rc, 0);
        assert_string_equal(a.out, b.out);
        assert_string_equal(a.out, c.out);
        char want[64];
        snprintf(want, sizeof(want), "usage: poolwatch %s", cmds[i]);
        assert_memory_equal(a.out, want, strlen(want));
        assert_string_equal(a.err, "");
        run_free(&a);
        run_free(&b);
        run_free(&c);
    }
    run_t r = RUN("help", "top");
    assert_string_equal(r.out,
                        "usage: poolwatch top HOST [--once] [--no-live]\n"
                        "poolmon's screen for a remote host, refreshed every second; press ? for "
                        "the keys.\n"
                        "--once prints one screen as text; --no-live skips asking the agent for "
                        "live mode.\n"
                        "--json prints one snapshot as the API's pool table (GET "
                        "/api/v1/hosts/HOST/pool).\n"
                        "Global options: --url, --token, --ca, --json; see poolwatch --help and "
                        "docs/cli.md.\n");
    run_free(&r);
    r = RUN("help");
    assert_int_equal(r.rc, 0);
    assert_memory_equal(r.out, "usage: poolwatch [--url URL]", 28);
    /* the usage names the options a new user looked for */
    assert_non_null(strstr(r.out, "\n  leaks [--host NAME] [--limit N] "));
    assert_non_null(strstr(r.out, "\n  top HOST [--once] [--no-live] "));
    run_free(&r);
    r = RUN("help", "foo");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch: unknown command 'foo'\n"));
    assert_null(strstr(r.err, "did you mean"));
    run_free(&r);
    r = RUN("help", "tpo");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch: unknown command 'tpo' (did you mean 'top'?)\n"));
    run_free(&r);
    r = RUN("--version");
    assert_int_equal(r.rc, 0);
    assert_memory_equal(r.out, "poolwatch 0.1.0 (commit ", 24);
    assert_non_null(strstr(r.out, "), OpenSSL "));
    run_free(&r);
}

static void test_env_and_flags(void **state)
{
    (void)state;
    reset_env();
    run_t r = RUN("hosts");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "POOLWATCH_URL"));
    run_free(&r);

    env_url = "ftp://collector";
    r = RUN("hosts");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "https://"));
    run_free(&r);

    /* --url wins over the environment: port 1 on loopback refuses -> network error, exit 1. */
    r = RUN("--url", "http://127.0.0.1:1", "hosts");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    run_free(&r);
    r = RUN("hosts", "--url=http://127.0.0.1:1");
    assert_int_equal(r.rc, 1);
    run_free(&r);

    r = RUN("hosts", "--url");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = RUN("frobnicate");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown command 'frobnicate'"));
    run_free(&r);
    r = RUN();
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = RUN("--help");
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out,
                           "Exit codes: 0 ok, 1 server or network error, 2 usage or input "
                           "error, 3 not found,\n4 authentication or authorisation refused."));
    run_free(&r);
    r = RUN("series", "HOST01");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = RUN("import", "x.txt");
    assert_int_equal(r.rc, 2); /* no --host */
    run_free(&r);
    r = RUN("top");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch top: missing HOST\nusage: poolwatch top HOST"));
    run_free(&r);
    reset_env();
}

static void test_cli_bad_arguments_say_what_and_suggest(void **state)
{
    (void)state;
    /* Edit distances by hand: hots->hosts 1 (insert), --jsn->--json 1, --onec->--once 1 (swap),
     * --limt->--limit 1, seriez->series 1; --bogus is 3+ from every option. */
    assert_string_equal(pw_cli_closest("hots", (const char *const[]){"hosts", "top", NULL}),
                        "hosts");
    assert_string_equal(
        pw_cli_closest("--onec", (const char *const[]){"--once", "--no-live", NULL}), "--once");
    assert_null(pw_cli_closest("--bogus", (const char *const[]){"--once", "--no-live", NULL}));
    assert_null(pw_cli_closest("hostsxyz", (const char *const[]){"hosts", NULL})); /* 3 */
    assert_null(pw_cli_closest("x", NULL));
    /* a short word is close at one edit only: "foo" is no misspelt "top" (2 edits) */
    assert_null(pw_cli_closest("foo", (const char *const[]){"hosts", "top", "tags", NULL}));
    assert_string_equal(pw_cli_closest("tpo", (const char *const[]){"hosts", "top", NULL}), "top");

    run_t r = RUN("hots");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown command 'hots' (did you mean 'hosts'?)"));
    run_free(&r);
    r = RUN("top", "HOST01", "--bogus");
    assert_int_equal(r.rc, 2);
    assert_non_null(
        strstr(r.err, "poolwatch top: unknown option '--bogus'\nusage: poolwatch top HOST"));
    run_free(&r);
    r = RUN("top", "HOST01", "--onec");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown option '--onec' (did you mean '--once'?)"));
    run_free(&r);
    r = RUN("hosts", "--jsn");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch hosts: unknown option '--jsn' (did you mean "
                                  "'--json'?)\nusage: poolwatch hosts [--json]"));
    run_free(&r);
    r = RUN("hosts", "extra");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch hosts: unexpected argument 'extra'"));
    run_free(&r);
    r = RUN("tags", "--limt=5");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown option '--limt=5' (did you mean '--limit'?)"));
    run_free(&r);
    r = RUN("series", "--bogus", "Ddk");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch series: unknown option '--bogus'"));
    run_free(&r);
    r = RUN("series", "HOST01");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch series: missing TAG"));
    run_free(&r);
    r = RUN("lookup");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch lookup: missing TAG"));
    run_free(&r);
    r = RUN("parse", "--formt", "poolmon", "x");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown option '--formt' (did you mean '--format'?)"));
    run_free(&r);
    r = RUN("parse", "x", "--format", "csv");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--format must be auto, poolmon or slabinfo, not 'csv'"));
    run_free(&r);
    r = RUN("import", "--hots", "h", "x.txt");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "unknown option '--hots' (did you mean '--host'?)"));
    run_free(&r);
    r = RUN("import", "x.txt");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "poolwatch import: missing --host NAME"));
    run_free(&r);
    /* --json re-prints the server's reals at its precision (10 digits), not 17. */
    {
        pw_cli_t c;
        memset(&c, 0, sizeof(c));
        char *buf = NULL;
        size_t blen = 0;
        c.out = open_memstream(&buf, &blen);
        c.compact = 1;
        json_t *j = json_pack("{s:f}", "share", 0.3513231555);
        pw_cli_print_json(&c, j);
        json_decref(j);
        fclose(c.out);
        assert_string_equal(buf, "{\"share\":0.3513231555}\n");
        free(buf);
    }
    /* A file over the limit is refused from its size, before a byte is read: a sparse 64 GiB
     * file would take minutes (and the memory) to read. */
    {
        char big[] = "/tmp/pw_cli_bigXXXXXX";
        int fd = mkstemp(big);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)64 << 30), 0);
        close(fd);
        char *data = NULL;
        size_t len = 0;
        pw_diag_t d;
        assert_int_equal(pw_cli_read_file(big, 1u << 20, &data, &len, &d), PW_ETOOBIG);
        assert_null(data);
        assert_string_equal(d.msg, "larger than 1048576 bytes");
        unlink(big);
    }
    /* A directory opens but does not read: say why. */
    r = RUN("parse", "/");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "Is a directory"));
    run_free(&r);
    reset_env();
}

static void test_exit_codes_and_units(void **state)
{
    (void)state;
    assert_int_equal(pw_cli_exit_for_status(200), 0);
    assert_int_equal(pw_cli_exit_for_status(204), 0);
    assert_int_equal(pw_cli_exit_for_status(400), 2);
    assert_int_equal(pw_cli_exit_for_status(413), 2);
    assert_int_equal(pw_cli_exit_for_status(401), 4);
    assert_int_equal(pw_cli_exit_for_status(403), 4);
    assert_int_equal(pw_cli_exit_for_status(404), 3);
    assert_int_equal(pw_cli_exit_for_status(405), 1);
    assert_int_equal(pw_cli_exit_for_status(500), 1);
    assert_int_equal(pw_cli_exit_for_status(503), 1);

    uint64_t ms;
    assert_int_equal(pw_cli_parse_duration("15m", &ms), 0);
    assert_int_equal(ms, 900000);
    assert_int_equal(pw_cli_parse_duration("500ms", &ms), 0);
    assert_int_equal(ms, 500);
    assert_int_equal(pw_cli_parse_duration("30", &ms), 0);
    assert_int_equal(ms, 30000);
    assert_int_equal(pw_cli_parse_duration("2h", &ms), 0);
    assert_int_equal(ms, 7200000);
    assert_int_equal(pw_cli_parse_duration("1d", &ms), 0);
    assert_int_equal(ms, 86400000);
    assert_int_equal(pw_cli_parse_duration("15x", &ms), PW_EINVAL);
    assert_int_equal(pw_cli_parse_duration("m", &ms), PW_EINVAL);
    assert_int_equal(pw_cli_parse_duration("-5m", &ms), PW_EINVAL);
    assert_int_equal(pw_cli_parse_duration("99999999999999999999s", &ms), PW_EINVAL);

    assert_int_equal(pw_cli_parse_time("2024-03-14T10:15:00Z", 0, &ms), 0);
    assert_int_equal(ms, 1710411300000ull); /* date -u -d @1710411300 */
    assert_int_equal(pw_cli_parse_time("2024-03-14 10:15:00", 0, &ms), 0);
    assert_int_equal(ms, 1710411300000ull);
    assert_int_equal(pw_cli_parse_time("2024-03-14", 0, &ms), 0);
    assert_int_equal(ms, 1710374400000ull); /* 10:15 earlier: 36900 s */
    assert_int_equal(pw_cli_parse_time("1764400000000", 0, &ms), 0);
    assert_int_equal(ms, 1764400000000ull);
    assert_int_equal(pw_cli_parse_time("now", 5000, &ms), 0);
    assert_int_equal(ms, 5000);
    assert_int_equal(pw_cli_parse_time("-2h", 10000000, &ms), 0);
    assert_int_equal(ms, 10000000 - 7200000);
    assert_int_equal(pw_cli_parse_time("-2h", 1000, &ms), PW_EINVAL);
    assert_int_equal(pw_cli_parse_time("2024-13-01", 0, &ms), PW_EINVAL);
    assert_int_equal(pw_cli_parse_time("yesterday", 0, &ms), PW_EINVAL);

    char b[32];
    pw_cli_format_bytes(812, b, sizeof(b));
    assert_string_equal(b, "812 B");
    pw_cli_format_bytes(91912, b, sizeof(b));
    assert_string_equal(b, "89.8 KiB"); /* 91912 / 1024 = 89.76 */
    pw_cli_format_bytes(1572864, b, sizeof(b));
    assert_string_equal(b, "1.5 MiB");
    pw_cli_format_time(1710411300123ull, b, sizeof(b));
    assert_string_equal(b, "2024-03-14 10:15:00Z");
}

/* ---- canned HTTP responses (http-parser) ------------------------------------------------------
 */

static void test_response_parse(void **state)
{
    (void)state;
    pw_client_resp_t r;
    pw_diag_t d;
    const char ok[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                      "Content-Length: 44\r\n\r\n" /* 9+8+9+10+6+2 bytes below */
                      "{\"error\":{\"code\":\"ENOENT\",\"message\":\"host\"}}";
    assert_int_equal(pw_client_response_parse(ok, sizeof(ok) - 1, &r, &d), 0);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.content_type, "application/json");
    assert_int_equal(r.body_len, 44);
    assert_string_equal(r.body, "{\"error\":{\"code\":\"ENOENT\",\"message\":\"host\"}}");
    pw_client_resp_close(&r);

    const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    assert_int_equal(pw_client_response_parse(chunked, sizeof(chunked) - 1, &r, &d), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "hello world");
    assert_string_equal(r.content_type, "");
    pw_client_resp_close(&r);

    const char eof[] = "HTTP/1.0 200 OK\r\n\r\nabc";
    assert_int_equal(pw_client_response_parse(eof, sizeof(eof) - 1, &r, &d), 0);
    assert_string_equal(r.body, "abc");
    pw_client_resp_close(&r);

    const char *bad[] = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                         "SSH-2.0-OpenSSH_9.2\r\n", "HTTP/1.1 200 OK\r\nContent-Le", "",
                         "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nabc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(pw_client_response_parse(bad[i], strlen(bad[i]), &r, &d), PW_EPROTO);
        assert_null(r.body);
    }
}

/* ---- listing formatters on canned API documents -----------------------------------------------
 */

static char *fmt_with(int (*fn)(const json_t *, FILE *), const char *doc, int want_rc)
{
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(fn(j, f), want_rc);
    fclose(f);
    json_decref(j);
    return buf;
}

static int fmt_tags_fleet(const json_t *j, FILE *f)
{
    return pw_fmt_tags(j, 1, f);
}

static int fmt_tags_plain(const json_t *j, FILE *f)
{
    return pw_fmt_tags(j, 0, f);
}

static int fmt_lookup_only(const json_t *j, FILE *f)
{
    return pw_fmt_lookup(json_object_get(j, "pt"), json_object_get(j, "find"), f);
}

/* Long names and huge numbers are cut with "…" (one column, 3 bytes) so the columns after them
 * stay where the header says. */
static void test_fmt_truncates_long_columns(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(pw_cli_fit("abc", 5, 0, b, sizeof(b)), "abc  ");
    assert_string_equal(pw_cli_fit("abc", 5, 1, b, sizeof(b)), "  abc");
    assert_string_equal(pw_cli_fit("abcde", 5, 0, b, sizeof(b)), "abcde");
    assert_string_equal(pw_cli_fit("linux 6.1.0-18-amd64", 14, 0, b, sizeof(b)),
                        "linux 6.1.0-1\xe2\x80\xa6");
    assert_string_equal(pw_cli_fit("12345678901", 8, 1, b, sizeof(b)), "1234567\xe2\x80\xa6");
    /* a multi-byte character counts as one column and is never split */
    assert_string_equal(pw_cli_fit("\xc3\xa9t\xc3\xa9-host", 4, 0, b, sizeof(b)),
                        "\xc3\xa9t\xc3\xa9\xe2\x80\xa6"); /* "été…" */
    assert_string_equal(pw_cli_fit("\xc3\xa9t\xc3\xa9", 4, 0, b, sizeof(b)), "\xc3\xa9t\xc3\xa9 ");
    char *s = fmt_with(pw_fmt_hosts,
                       "{\"hosts\":[{\"name\":\"a-very-long-host-name.example.com\","
                       "\"os\":\"linux 6.1.0-18-amd64\",\"connected\":true,"
                       "\"last_seen_ms\":1710411300000,\"nonpaged_bytes\":1024,"
                       "\"nonpaged_limit_bytes\":null,\"nonpaged_ratio\":null,"
                       "\"nonpaged_level\":\"unknown\",\"paged_bytes\":1024,"
                       "\"suspects\":12345678901}]}",
                       0);
    /* 20 + 1 + 14 + 1 columns before CONN, as in the header */
    assert_non_null(
        strstr(s, "\na-very-long-host-na\xe2\x80\xa6 linux 6.1.0-1\xe2\x80\xa6 yes         "
                  "     1.0 KiB           - -               - unknown  -           "
                  "           "
                  "   1.0 KiB 1234567\xe2\x80\xa6 2024-03-14 10:15:00Z\n"));
    free(s);
    s = fmt_with(
        pw_fmt_leaks,
        "{\"suspects\":[{\"host\":\"lnx01\",\"tag\":\"ext4_inode_cache\",\"type\":\"paged\","
        "\"score\":1.5,\"growth_bytes_per_h\":2048,\"share_of_host_growth\":0.25,"
        "\"first_bytes\":1024,\"current_bytes\":4096,\"driver\":null,"
        "\"description\":null}]}",
        0);
    /* a slab cache's name is not cut to 6 characters: the TAG column grows to it */
    assert_non_null(strstr(s, "\nlnx01                \"ext4_inode_cache\" paged       1.50 "));
    free(s);
}

static void test_fmt_listings(void **state)
{
    (void)state;
    char *s =
        fmt_with(pw_fmt_hosts,
                 "{\"hosts\":[{\"name\":\"HOST01\",\"os\":\"windows 5.2\",\"os_build\":3790,"
                 "\"connected\":true,\"last_seen_ms\":1710411300000,"
                 "\"nonpaged_bytes\":220200960,\"nonpaged_limit_bytes\":268435456,"
                 "\"nonpaged_limit_source\":\"reported\","
                 "\"nonpaged_ratio\":0.82,\"nonpaged_level\":\"warn\",\"nonpaged_eta_ms\":null,"
                 "\"paged_bytes\":104857600,\"suspects\":2},{\"name\":\"HOST02\"}]}",
                 0);
    /* 220200960 B = 210.0 MiB, 268435456 = 256.0 MiB, 104857600 = 100.0 MiB; columns
     * %-20s %-14s %-4s %11s %11s %-10s %6s %-7s %-21s %11s %8s %s; the limit's source, "-"
     * with no limit. */
    assert_non_null(
        strstr(s, "HOST                 OS             CONN            NONPAGED    NP LIMIT "
                  "SOURCE        NP% LEVEL    NP ETA                      PAGED "
                  "SUSPECTS LAST SEEN\n"));
    assert_non_null(
        strstr(s, "\nHOST01               windows 5.2    yes            210.0 MiB   256.0 MiB "
                  "reported    82.0% warn     -                       100.0 MiB        2 "
                  "2024-03-14 10:15:00Z\n"));
    assert_non_null(
        strstr(s, "\nHOST02               -              -                      -           - "
                  "-               - -        -                               -        0 "
                  "-\n"));
    free(s);
    /* An unknown limit: null from the API (LINUX01), or 0 from an older collector (OLD02):
     * "-" for the limit and the ratio, as for an ETA not given, never "0 B" / "0.0%".
     * 104857600 B = 100.0 MiB, 52428800 = 50.0 MiB, 1024 = 1.0 KiB; "unknown" fills the level
     * column's 7. */
    s = fmt_with(pw_fmt_hosts,
                 "{\"hosts\":[{\"name\":\"LINUX01\",\"os\":\"linux 6.1\",\"connected\":true,"
                 "\"last_seen_ms\":1710411300000,\"nonpaged_bytes\":104857600,"
                 "\"nonpaged_limit_bytes\":null,\"nonpaged_ratio\":null,"
                 "\"nonpaged_level\":\"unknown\",\"nonpaged_eta_ms\":null,"
                 "\"paged_bytes\":52428800,\"paged_limit_bytes\":null,\"paged_ratio\":null,"
                 "\"suspects\":0},"
                 "{\"name\":\"OLD02\",\"connected\":false,\"nonpaged_bytes\":1024,"
                 "\"nonpaged_limit_bytes\":0,\"nonpaged_ratio\":0.0,"
                 "\"nonpaged_level\":\"unknown\"}]}",
                 0);
    assert_non_null(
        strstr(s, "\nLINUX01              linux 6.1      yes            100.0 MiB           - "
                  "-               - unknown  -                        50.0 MiB        0 "
                  "2024-03-14 10:15:00Z\n"));
    assert_non_null(
        strstr(s, "\nOLD02                -              no               1.0 KiB           - "
                  "-               - unknown  -                               -        0 "
                  "-\n"));
    assert_null(strstr(s, "0 B"));
    assert_null(strstr(s, "0.0%"));
    free(s);
    /* A backfill streaming in (loading_history): its "ok" and missing ETA are of its newest
     * sample so far, 12 days old; "loading" fills the level column's 7. 117440512 B = 112.0 MiB,
     * 134217728 = 128.0 MiB (87.5 %). */
    s = fmt_with(pw_fmt_hosts,
                 "{\"hosts\":[{\"name\":\"ddk-2003\",\"os\":\"windows 5.2\",\"connected\":true,"
                 "\"last_seen_ms\":1710411300000,\"loading_history\":true,"
                 "\"nonpaged_bytes\":117440512,\"nonpaged_limit_bytes\":134217728,"
                 "\"nonpaged_limit_source\":\"computed\",\"nonpaged_ratio\":0.875,"
                 "\"nonpaged_level\":\"ok\",\"nonpaged_eta_ms\":null,\"paged_bytes\":1024,"
                 "\"suspects\":0}]}",
                 0);
    assert_non_null(
        strstr(s, "\nddk-2003             windows 5.2    yes            112.0 MiB   128.0 MiB "
                  "computed    87.5% loading  loading history           1.0 KiB        0 "
                  "2024-03-14 10:15:00Z\n"));
    free(s);
    /* The new-user trial: CONN told stopped, imported and disconnected apart only on the
     * dashboard (the API's `connection`); the limit's rule only in JSON; a 3-screen import's
     * ETA (its leak's growth) only in `leaks`; a pool that ran out read "runs out <its last
     * sample>"; a host that said Hello and sent nothing read "0 B, 0.0 %, ok, 1970-01-01".
     * 123731968 B = 118.0 MiB of 134217728 = 128.0 MiB (92.2 %); 451936256 = 431.0 MiB of
     * 450887680 = 430.0 MiB (100.2 %); 1710500000000 = 2024-03-15 10:53:20Z, 1710410000000 =
     * 2024-03-14 09:53:20Z, 1710600000000 = 2024-03-16 14:40:00Z, 1710400000000 = 2024-03-14
     * 07:06:40Z (date -u -d @...). */
    s = fmt_with(
        pw_fmt_hosts,
        "{\"hosts\":[{\"name\":\"imp-3\",\"os\":\"windows 5.2\",\"connected\":false,"
        "\"connection\":\"imported\",\"last_seen_ms\":1710411300000,\"nonpaged_bytes\":123731968,"
        "\"nonpaged_limit_bytes\":134217728,\"nonpaged_limit_source\":\"computed\","
        "\"nonpaged_limit_detail\":\"Windows Server 2003 x86 with /3GB: 128 MB\","
        "\"nonpaged_ratio\":0.9219,\"nonpaged_level\":\"critical\","
        "\"nonpaged_eta_ms\":1710500000000,\"nonpaged_eta_basis\":\"leak\","
        "\"nonpaged_eta_range_ms\":[1710410000000,1710600000000],\"nonpaged_eta_note\":"
        "\"from this leak's growth alone, low confidence: 3 points over 30 min (the pool's trend "
        "needs 6 in its window)\",\"nonpaged_ran_out_ms\":null,\"paged_bytes\":1024,"
        "\"suspects\":1},"
        "{\"name\":\"sim-pool-empty\",\"os\":\"windows 10.0\",\"connected\":false,"
        "\"connection\":\"stopped\",\"last_seen_ms\":1710411300000,\"nonpaged_bytes\":451936256,"
        "\"nonpaged_limit_bytes\":450887680,\"nonpaged_limit_source\":\"configured\","
        "\"nonpaged_limit_detail\":\"configured: 430 MB\",\"nonpaged_ratio\":1.00233,"
        "\"nonpaged_level\":\"critical\",\"nonpaged_eta_ms\":1710400000000,"
        "\"nonpaged_eta_basis\":\"ran_out\",\"nonpaged_eta_range_ms\":null,"
        "\"nonpaged_eta_note\":\"ran out: at or over its limit since 2024-03-14 07:06:40Z "
        "(100.2% of it)\",\"nonpaged_ran_out_ms\":1710400000000,\"paged_bytes\":1024,"
        "\"suspects\":1},"
        "{\"name\":\"new01\",\"connected\":true,\"connection\":\"streaming\","
        "\"last_seen_ms\":0,\"nonpaged_bytes\":0,\"nonpaged_limit_bytes\":null,"
        "\"nonpaged_ratio\":null,\"nonpaged_level\":\"ok\",\"nonpaged_eta_ms\":null,"
        "\"paged_bytes\":0,\"suspects\":0}]}",
        0);
    assert_non_null(strstr(
        s, "\nimp-3                windows 5.2    imported       118.0 MiB   128.0 MiB computed    "
           "92.2% critical 2024-03-15 10:53:20Z      1.0 KiB        1 2024-03-14 10:15:00Z\n"
           "  nonpaged ETA 2024-03-15 10:53:20Z (between 2024-03-14 09:53:20Z and 2024-03-16 "
           "14:40:00Z) from this leak's growth alone, low confidence: 3 points over 30 min (the "
           "pool's trend needs 6 in its window)\n"
           "sim-pool-empty       windows 10.0   stopped        431.0 MiB   430.0 MiB configured "
           "100.2% critical ran out 03-14 07:06Z      1.0 KiB        1 2024-03-14 10:15:00Z\n"
           "  nonpaged pool ran out: at or over its limit since 2024-03-14 07:06:40Z (100.2% of "
           "it)\n"
           "new01                -              streaming              -           - -          "
           "     - -        -                               -        0 no sample yet\n"
           "nonpaged limits (SOURCE and its rule):\n"
           "  computed: Windows Server 2003 x86 with /3GB: 128 MB: imp-3\n"
           "  configured: 430 MB: sim-pool-empty\n"));
    assert_null(strstr(s, "1970"));
    free(s);
    s = fmt_with(pw_fmt_hosts, "{\"tags\":[]}", PW_EPARSE);
    assert_string_equal(s, "");
    free(s);

    s = fmt_with(fmt_tags_fleet,
                 "{\"tags\":[{\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"hosts\":2,"
                 "\"bytes_total\":1536,\"bytes_min\":512,\"bytes_p50\":512,\"bytes_p90\":1024,"
                 "\"bytes_max\":1024,\"top_hosts\":[{\"host\":\"H1\",\"bytes\":1024},"
                 "{\"host\":\"H2\",\"bytes\":512}]}]}",
                 0);
    assert_non_null(strstr(s, "\n\"Ddk \"   nonpaged      2     1.5 KiB       512 B       512 B "
                              "    1.0 KiB     1.0 KiB  H1 (1.0 KiB), H2 (512 B)\n"));
    free(s);
    s = fmt_with(fmt_tags_plain,
                 "{\"tags\":[{\"tag\":\"Io  \",\"type\":\"nonpaged\",\"hosts\":1,"
                 "\"bytes_total\":91912,\"driver\":\"io.sys\",\"description\":\"general I/O\"}]}",
                 0);
    assert_non_null(
        strstr(s, "\n\"Io  \"   nonpaged      1    89.8 KiB  io.sys           general I/O\n"));
    free(s);

    /* beside each leak its pool's limit (134217728 B = 128.0 MiB), the limit's source, the
     * pool's level and ETA (1710411300000 = 2024-03-14 10:15:00Z); "-" for each from an older
     * collector (HOST02) */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"HOST01\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
                 "\"score\":0.9,\"growth_bytes_per_h\":1048576,\"share_of_host_growth\":0.5,"
                 "\"first_bytes\":1024,\"current_bytes\":2048,\"driver\":null,"
                 "\"description\":\"Default for driver allocated memory\","
                 "\"pool_limit_bytes\":134217728,\"pool_limit_source\":\"computed\","
                 "\"pool_level\":\"critical\",\"pool_eta_ms\":1710411300000},"
                 "{\"host\":\"HOST02\",\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"score\":0.5}]}",
                 0);
    assert_non_null(strstr(s, "  LIMIT SOURCE     LEVEL    ETA                    DRIVER"));
    assert_non_null(
        strstr(s, "\nHOST01               \"Ddk \"   nonpaged    0.90      +1.0 MiB  50.0% "
                  "    1.0 KiB     2.0 KiB   128.0 MiB computed   critical 2024-03-14 10:15:00Z "
                  "  - / Default for driver allocated memory\n"));
    assert_non_null(strstr(s, "          -           - -          -        -                 "
                              "     - / -\n"));
    assert_null(strstr(s, "screens"));  /* a trend (no method: an older collector) */
    assert_null(strstr(s, "\n  ETA ")); /* no basis (an older collector): nothing more to say */
    free(s);
    /* an ETA from the leak's growth alone (3 screens), with its range (1710411300000 =
     * 10:15:00Z, 1710409500000 = 09:45:00Z, 1710414900000 = 11:15:00Z); none (and why) */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"IMP\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
                 "\"score\":0.5,\"pool_limit_bytes\":134217728,\"pool_eta_ms\":1710411300000,"
                 "\"pool_eta_basis\":\"leak\",\"pool_eta_range_ms\":[1710409500000,1710414900000],"
                 "\"pool_eta_note\":\"from this leak's growth alone, low confidence: 3 points "
                 "over 30 min (the pool's trend needs 6 in its window)\"},"
                 "{\"host\":\"IMP2\",\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"score\":0.4,"
                 "\"pool_eta_ms\":null,\"pool_eta_basis\":null,\"pool_eta_range_ms\":null,"
                 "\"pool_eta_note\":\"no ETA: too few points for one (3 over 30 min say nothing "
                 "past 12.0 h; at this leak's rate alone 30.0 h)\"},"
                 "{\"host\":\"LIVE\",\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"score\":0.3,"
                 "\"pool_eta_ms\":1710411300000,\"pool_eta_basis\":\"pool\","
                 "\"pool_eta_range_ms\":[1710409500000,null],"
                 "\"pool_eta_note\":\"from the pool's trend over 13 points\"}]}",
                 0);
    assert_non_null(strstr(s, "\n  ETA 2024-03-14 10:15:00Z (between 2024-03-14 09:45:00Z and "
                              "2024-03-14 11:15:00Z) from this leak's growth alone, low "
                              "confidence: 3 points over 30 min (the pool's trend needs 6 in its "
                              "window)\n"));
    assert_non_null(strstr(s, "\n  no ETA: too few points for one (3 over 30 min say nothing past "
                              "12.0 h; at this leak's rate alone 30.0 h)\n"));
    assert_null(strstr(s, "pool's trend over")); /* the pool's own ETA is the column */
    free(s);
    /* a collector that says how the pool's ETA was reckoned: a line ties it to GROWTH/H (the
     * tag's own over its window_ms: 1,209,600,000 ms = 14.0 days) */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"DDK\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
                 "\"score\":2.38,\"growth_bytes_per_h\":244121.6,\"window_ms\":1209600000,"
                 "\"pool_eta_ms\":1710411300000,\"pool_eta_basis\":\"pool\","
                 "\"pool_eta_method\":\"day\",\"pool_eta_rate_bytes_per_h\":563200,"
                 "\"pool_eta_range_ms\":[1710409500000,1710414900000],"
                 "\"pool_eta_note\":\"from +550.0 KiB/h, the pool's pace in the 10.0 h it grew "
                 "of the last 23.8 h (+5.4 MiB a day), that day repeated (rising, p 1e-10)\"}]}",
                 0);
    assert_non_null(strstr(s, "\n  ETA from +550.0 KiB/h, the pool's pace in the 10.0 h it grew "
                              "of the last 23.8 h (+5.4 MiB a day), that day repeated (rising, p "
                              "1e-10); GROWTH/H is this tag's own over 14.0 days\n"));
    free(s);
    /* 2 screens: one step, its range is one time: no "(between X and X)" (the trial) */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"IMP\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
                 "\"score\":0.5,\"pool_limit_bytes\":134217728,\"pool_eta_ms\":1710411300000,"
                 "\"pool_eta_basis\":\"leak\",\"pool_eta_range_ms\":[1710411300000,1710411300000],"
                 "\"pool_eta_note\":\"from this leak's growth alone, low confidence: 2 points, "
                 "one step, so no range\"}]}",
                 0);
    assert_non_null(strstr(s, "\n  ETA 2024-03-14 10:15:00Z from this leak's growth alone, low "
                              "confidence: 2 points, one step, so no range\n"));
    assert_null(strstr(s, "between"));
    free(s);
    /* a Linux host's slab cache is not a 4-byte tag: the TAG column grows to the longest shown
     * ("ext4_inode_cache" in quotes: 18 columns), not cut to "ext4_…" (the new-user trial);
     * one longer than 32 characters keeps the first 33 columns and "…" */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"LNX01\",\"tag\":\"ext4_inode_cache\","
                 "\"type\":\"nonpaged\",\"score\":1.5},{\"host\":\"HOST01\",\"tag\":\"Ddk \","
                 "\"type\":\"nonpaged\",\"score\":0.5}]}",
                 0);
    assert_memory_equal(s, "HOST                 TAG                TYPE     ", 49);
    assert_non_null(strstr(s, "\nLNX01                \"ext4_inode_cache\" nonpaged    1.50 "));
    assert_non_null(strstr(s, "\nHOST01               \"Ddk \"             nonpaged    0.50 "));
    free(s);
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"LNX01\",\"tag\":"
                 "\"mlx5/core/steering/dr_ste_v1.c:1234\",\"type\":\"nonpaged\",\"score\":1}]}",
                 0);
    assert_non_null(strstr(
        s, "\nLNX01                \"mlx5/core/steering/dr_ste_v1.c:1\xe2\x80\xa6 nonpaged "));
    free(s);
    /* nothing judged yet (a collector just started): when the first pass is due, not an empty
     * table; 1710411330000 = 2024-03-14 10:15:30Z */
    s = fmt_with(pw_fmt_leaks, "{\"suspects\":[],\"first_pass_ms\":1710411330000}", 0);
    assert_string_equal(s, "analysis has not run yet (first pass at 10:15:30 UTC)\n");
    free(s);
    s = fmt_with(pw_fmt_leaks, "{\"suspects\":[],\"first_pass_ms\":null}", 0);
    assert_memory_equal(s, "HOST ", 5); /* a pass ran: the (empty) table */
    free(s);
    /* leaks --host H with no suspect: said, not a bare header */
    s = fmt_with(pw_fmt_leaks, "{\"suspects\":[],\"first_pass_ms\":null,\"host_asked\":\"H1\"}", 0);
    assert_string_equal(s, "no suspects on H1\n");
    free(s);
    /* the engine's evidence under a suspect, its finding, and a list cut by the API's limit */
    s = fmt_with(pw_fmt_leaks,
                 "{\"total\":3,\"suspects\":[{\"host\":\"LNX01\",\"tag\":\"dentry\","
                 "\"type\":\"paged\",\"score\":1.5,\"growth_bytes_per_h\":1024,"
                 "\"share_of_host_growth\":0.5,\"first_bytes\":1,\"current_bytes\":2,"
                 "\"driver\":null,\"description\":null,\"method\":\"trend\","
                 "\"evidence\":\"rose in 9 of 9 steps\",\"confidence\":0.97,"
                 "\"finding\":{\"head\":true,\"tags\":3,\"with\":\"inode, lsm\"}}]}",
                 0);
    assert_non_null(strstr(s, "\n  rose in 9 of 9 steps (confidence 0.97)\n"));
    assert_non_null(strstr(s, "\n  grew together with: inode, lsm\n"));
    assert_non_null(strstr(s, "\n(1 of 3 suspects shown)\n"));
    free(s);
    /* the suspect's big-pool snapshot (values of tests/agent/test_bigpool.c's x64 buffer:
     * 18886656 B = 18.0 MiB, 16777216 = 16.0 MiB, 12288 = 12.0 KiB; 1710411300000 =
     * 2024-03-14 10:15:00Z), and one of a tag with no block of a page or more */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"HOST01\",\"tag\":\"Ddk \",\"type\":\"nonpaged\","
                 "\"score\":0.9,\"growth_bytes_per_h\":1048576,\"first_bytes\":1,"
                 "\"current_bytes\":2,\"big_pool\":{\"tag\":\"Ddk \",\"taken_ms\":1710411300000,"
                 "\"scanned\":4,\"count\":3,\"bytes\":18886656,\"nonpaged_count\":2,"
                 "\"nonpaged_bytes\":16789504,\"largest_bytes\":16777216,"
                 "\"smallest_bytes\":12288,\"size_hist\":[0,1,0,0,0,0,0,0,0,1,0,1]}},"
                 "{\"host\":\"HOST01\",\"tag\":\"NtFC\",\"type\":\"nonpaged\",\"score\":0.5,"
                 "\"big_pool\":{\"tag\":\"NtFC\",\"taken_ms\":1710411300000,\"scanned\":4,"
                 "\"count\":0,\"bytes\":0}},"
                 "{\"host\":\"HOST02\",\"tag\":\"Irp \",\"type\":\"nonpaged\",\"score\":0.4,"
                 "\"big_pool\":null}]}",
                 0);
    assert_non_null(strstr(s, "\n  big pool at 2024-03-14 10:15:00Z: 3 block(s) of a page or "
                              "more, 18.0 MiB (largest 16.0 MiB, smallest 12.0 KiB); 4 blocks of "
                              "every tag in the table\n"));
    assert_non_null(strstr(s, "\n  big pool at 2024-03-14 10:15:00Z: no block of a page or more "
                              "(its bytes are small allocations); 4 blocks of every tag in the "
                              "table\n"));
    int nbp = 0;
    for (const char *q = strstr(s, "big pool at"); q != NULL; q = strstr(q + 1, "big pool at"))
        nbp++;
    assert_int_equal(nbp, 2); /* none for HOST02's null */
    free(s);
    /* a comparison of two screens says so, with the deltas (case09's Drsd, data README) */
    s = fmt_with(pw_fmt_leaks,
                 "{\"suspects\":[{\"host\":\"PRN01\",\"tag\":\"Drsd\",\"type\":\"paged\","
                 "\"score\":0.38,\"growth_bytes_per_h\":19968,\"share_of_host_growth\":null,"
                 "\"first_bytes\":17472,\"current_bytes\":22464,\"driver\":null,"
                 "\"description\":null,\"method\":\"compare\",\"points\":2,"
                 "\"trend_min_points\":12,\"screen_delta\":{\"allocs\":177,\"frees\":171,"
                 "\"diff\":6,\"bytes\":4992,\"per_alloc_bytes\":832.0}}]}",
                 0);
    assert_non_null(strstr(s, "\n  only 2 screens, a trend test needs at least 12: first to last "
                              "screen allocs +177, frees +171, diff +6, bytes +4992 (832 B per "
                              "allocation)\n"));
    free(s);

    s = fmt_with(pw_fmt_alerts,
                 "{\"alerts\":[{\"name\":\"NonpagedPoolNearLimit\",\"state\":\"firing\","
                 "\"severity\":\"critical\",\"labels\":{\"host\":\"HOST01\",\"pool\":\"nonpaged\"},"
                 "\"since_ms\":1710411300000,\"value\":0.93,\"summary\":\"93% of limit\"}]}",
                 0);
    assert_non_null(strstr(s,
                           "\nfiring    critical  NonpagedPoolNearLimit    HOST01               -  "
                           "      2024-03-14 10:15:00Z  93% of limit\n"));
    free(s);
    /* the API gives a host's pool alert an empty tag label: "-", not "" */
    s = fmt_with(pw_fmt_alerts,
                 "{\"alerts\":[{\"name\":\"NonpagedPoolPressure\",\"state\":\"pending\","
                 "\"severity\":\"warning\",\"labels\":{\"host\":\"ddk-2003\",\"tag\":\"\","
                 "\"pool\":\"nonpaged\"},\"since_ms\":1710411300000,\"summary\":\"s\"}]}",
                 0);
    assert_non_null(strstr(s, " ddk-2003             -        2024-03-14 10:15:00Z  s\n"));
    free(s);

    s = fmt_with(pw_fmt_series,
                 "{\"host\":\"HOST01\",\"tag\":\"Io  \",\"pool\":\"nonpaged\",\"level\":\"raw\","
                 "\"points\":[{\"ts_ms\":1710411300000,\"bytes\":91912,\"diff\":127,"
                 "\"allocs\":1021112,\"frees\":1020985,\"bytes_min\":91912,\"bytes_max\":91912}]}",
                 0);
    assert_string_equal(s, "HOST01 \"Io  \" nonpaged (raw samples, 1 point)\n"
                           "TIME                           BYTES       DIFF       ALLOCS        "
                           "FREES      BYTES_MIN      BYTES_MAX\n"
                           "2024-03-14 10:15:00Z           91912        127      1021112      "
                           "1020985          91912          91912\n");
    free(s);
    /* No points: a hint at the other pool instead of an empty table. */
    s = fmt_with(pw_fmt_series,
                 "{\"host\":\"HOST01\",\"tag\":\"Drsd\",\"pool\":\"nonpaged\",\"level\":\"raw\","
                 "\"points\":[]}",
                 0);
    assert_string_equal(
        s, "HOST01 \"Drsd\" nonpaged (raw samples, 0 points)\n(nothing in the nonpaged pool "
           "in that time: a tag's paged and nonpaged rows are separate, try --pool "
           "paged; tags are 4 characters, poolmon pads them with spaces)\n");
    free(s);
    /* A rollup answer says so (the points' spacing is the step asked for). */
    s = fmt_with(pw_fmt_series,
                 "{\"host\":\"HOST01\",\"tag\":\"Drsd\",\"pool\":\"paged\",\"level\":\"15m\","
                 "\"points\":[]}",
                 0);
    assert_non_null(strstr(s, "HOST01 \"Drsd\" paged (15m rollup, 0 points)\n"));
    free(s);

    s = fmt_with(pw_fmt_tag,
                 "{\"tag\":\"Ddk \",\"type\":\"nonpaged\",\"bytes_total\":2048,\"driver\":null,"
                 "\"description\":\"Default\",\"hosts\":[{\"host\":\"H1\",\"type\":\"nonpaged\","
                 "\"bytes\":2048,\"diff\":4,\"robust_z\":3.5,\"outlier\":true,\"os_build\":3790}]}",
                 0);
    assert_string_equal(
        s, "Tag \"Ddk \" nonpaged: 2.0 KiB on 1 host; driver -; Default\n"
           "HOST                 TYPE           BYTES       DIFF ROBUST_Z OUTLIER OS BUILD\n"
           "H1                   nonpaged     2.0 KiB          4     3.50 yes     3790\n");
    free(s);

    s = fmt_with(
        fmt_lookup_only,
        "{\"pt\":{\"tag\":\"Ddk \",\"driver\":null,\"description\":\"Default for driver "
        "allocated memory\",\"known\":true},\"find\":{\"status\":0,\"message\":\"1 match\","
        "\"matches\":[{\"file\":\"C:\\\\Windows\\\\System32\\\\drivers\\\\x.sys\","
        "\"size_bytes\":12345,\"file_version\":\"5.2.3790.0\",\"match\":\"code\","
        "\"product\":\"Ddk Driver Kit\",\"company\":\"Ddk Corp\"}]}}",
        0);
    assert_string_equal(
        s, "Tag \"Ddk \": listed in pooltag.txt\n"
           "  driver:      -\n"
           "  description: Default for driver allocated memory\n"
           "Agent: 1 match\n"
           "  code  C:\\Windows\\System32\\drivers\\x.sys  12345 bytes  version 5.2.3790.0  "
           "Ddk Driver Kit  (Ddk Corp)\n");
    free(s);
    /* A module found on Linux has no file version: none printed. An agent that could not
     * search says why and returns 1 (the command exits 1), not "no file contains it". */
    s = fmt_with(fmt_lookup_only,
                 "{\"pt\":{\"tag\":\"Ddk \",\"known\":false},\"find\":{\"status\":0,"
                 "\"message\":\"1 file(s)\",\"matches\":[{\"file\":\"drivers/net/x.ko\","
                 "\"size_bytes\":9,\"file_version\":\"\",\"match\":\"file\"}]}}",
                 0);
    assert_non_null(strstr(s, "Agent: 1 file(s)\n  file  drivers/net/x.ko  9 bytes\n"));
    free(s);
    s = fmt_with(fmt_lookup_only,
                 "{\"pt\":{\"tag\":\"Ddk \",\"known\":false},\"find\":{\"status\":-2,"
                 "\"message\":\"cannot read /lib/modules/x/kernel: No such file or directory\","
                 "\"matches\":[]}}",
                 1);
    assert_non_null(
        strstr(s, "Agent: cannot read /lib/modules/x/kernel: No such file or directory\n"));
    assert_null(strstr(s, "no driver file contains the tag"));
    free(s);
    /* a collector without pooltag.txt knows no tag: it says so, not "not in pooltag.txt" */
    s = fmt_with(fmt_lookup_only,
                 "{\"pt\":{\"tag\":\"Ddk \",\"known\":false,\"pooltag_loaded\":false}}", 0);
    assert_string_equal(s, "Tag \"Ddk \": no description: the collector has no pooltag.txt "
                           "([analysis] pooltag_file)\n");
    free(s);
    s = fmt_with(fmt_lookup_only,
                 "{\"pt\":{\"tag\":\"Ddk \",\"known\":false,\"pooltag_loaded\":true}}", 0);
    assert_string_equal(s, "Tag \"Ddk \": not in pooltag.txt\n");
    free(s);
}

/* The server's messages name its parameters; the CLI says the options the user typed. */
static void test_param_words(void **state)
{
    (void)state;
    const char *const *names = pw_cli_import_params; /* import's table */
    char b[256];
    assert_string_equal(
        pw_cli_param_words("parameter 'nonpaged_limit_bytes' must be above 0", names, b, sizeof(b)),
        "parameter --nonpaged-limit must be above 0");
    /* a word, not a part of one: paged_limit_bytes inside nonpaged_limit_bytes is not it */
    assert_string_equal(pw_cli_param_words("parameter os 'Windows 7 x64': no nonpaged limit (x): "
                                           "give nonpaged_limit_bytes or paged_limit_bytes",
                                           names, b, sizeof(b)),
                        "parameter --os 'Windows 7 x64': no nonpaged limit (x): give "
                        "--nonpaged-limit or --paged-limit");
    assert_string_equal(pw_cli_param_words("cosine costs; OS", names, b, sizeof(b)),
                        "cosine costs; OS");
    assert_string_equal(pw_cli_param_words("os", NULL, b, sizeof(b)), "os");
    /* cut at the buffer's end, NUL-terminated */
    assert_string_equal(pw_cli_param_words("give os", names, b, 7), "give -");
}

/* ---- a one-shot fake HTTP server (child process) ----------------------------------------------
 */

typedef struct fake_s {
    pid_t pid;
    int port;
    int pipe_rd;
} fake_t;

static void fake_start(fake_t *f, const char *response)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s, 4), 0);
    socklen_t al = sizeof(a);
    getsockname(s, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        close(p[0]);
        alarm(20);
        int c = accept(s, NULL, NULL);
        size_t cap = 1 << 20, n = 0;
        char *buf = malloc(cap);
        for (;;) {
            if (n == cap) {
                cap *= 2;
                buf = realloc(buf, cap);
            }
            ssize_t r = recv(c, buf + n, cap - n, 0);
            if (r <= 0)
                break;
            n += (size_t)r;
            char *end = memmem(buf, n, "\r\n\r\n", 4);
            if (end == NULL)
                continue;
            size_t head = (size_t)(end - buf) + 4, cl = 0;
            char *h = memmem(buf, head, "Content-Length: ", 16);
            if (h != NULL)
                cl = strtoul(h + 16, NULL, 10);
            if (n >= head + cl)
                break;
        }
        if (write(p[1], buf, n) < 0)
            _exit(1);
        if (write(c, response, strlen(response)) < 0)
            _exit(1);
        close(c);
        _exit(0);
    }
    close(s);
    close(p[1]);
    f->pipe_rd = p[0];
}

/* Returns the request the server received (malloc'd, NUL-terminated). */
static char *fake_finish(fake_t *f, size_t *len_out)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t r = read(f->pipe_rd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(f->pipe_rd);
    int st;
    waitpid(f->pid, &st, 0);
    if (len_out)
        *len_out = n;
    return buf;
}

static char url_buf[64];

static const char *fake_url(const fake_t *f)
{
    snprintf(url_buf, sizeof(url_buf), "http://127.0.0.1:%d", f->port);
    return url_buf;
}

/* A fake server answering 200 with the JSON document `doc`; env_url points at it. */
static void fake_start_json(fake_t *f, const char *doc)
{
    char resp[8192];
    snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", strlen(doc),
             doc);
    fake_start(f, resp);
    env_url = fake_url(f);
}

static void test_fake_server_hosts(void **state)
{
    (void)state;
    reset_env();
    fake_t f;
    const char *doc = "{\"hosts\":[{\"name\":\"HOST01\",\"connected\":false}]}";
    char resp[512];
    snprintf(resp, sizeof(resp),
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(doc), doc);
    fake_start(&f, resp);
    env_url = fake_url(&f);
    env_token = "tok-read";
    run_t r = RUN("hosts");
    char *req = fake_finish(&f, NULL);
    assert_int_equal(r.rc, 0);
    assert_memory_equal(req, "GET /api/v1/hosts HTTP/1.1\r\n", 28);
    assert_non_null(strstr(req, "\r\nAuthorization: Bearer tok-read\r\n"));
    char host_hdr[64];
    snprintf(host_hdr, sizeof(host_hdr), "\r\nHost: 127.0.0.1:%d\r\n", f.port);
    assert_non_null(strstr(req, host_hdr));
    assert_non_null(strstr(r.out, "\nHOST01               -              no "));
    free(req);
    run_free(&r);

    /* --json --compact prints the document itself. */
    fake_start(&f, resp);
    env_url = fake_url(&f);
    r = RUN("--json", "--compact", "hosts");
    free(fake_finish(&f, NULL));
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\"hosts\":[{\"name\":\"HOST01\",\"connected\":false}]}\n");
    run_free(&r);
    reset_env();
}

/* A double with no uint64 value (8.7e80: converting it was undefined behaviour, found by
 * clang's UBSan under libFuzzer) is refused with the field's path, not printed as a number. */
static void test_fake_server_number_out_of_range(void **state)
{
    (void)state;
    char where[64];
    double bad = 0;
    json_t *j = json_loads("{\"hosts\":[{\"name\":\"a\",\"paged_bytes\":1.5e3},"
                           "{\"name\":\"b\",\"nonpaged_bytes\":8.7e80}]}",
                           0, NULL);
    assert_non_null(j);
    assert_int_equal(pw_cli_json_check_numbers(j, where, sizeof(where), &bad), PW_EPARSE);
    assert_string_equal(where, "hosts[1].nonpaged_bytes");
    assert_true(bad == 8.7e80);
    /* the formatter alone stays defined: the value is clamped to 2^64 - 1 */
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pw_fmt_hosts(j, f), 0);
    fclose(f);
    free(buf);
    json_decref(j);
    /* 2^64 itself is out; 2^64 - 2048 (the largest double below it) and -2^63 are in */
    j = json_loads("[18446744073709549568.0, -9.2233720368547758e18, {\"x\":[1e300]}]", 0, NULL);
    assert_int_equal(pw_cli_json_check_numbers(j, where, sizeof(where), &bad), PW_EPARSE);
    assert_string_equal(where, "[2].x[0]");
    assert_true(bad == 1e300);
    json_decref(j);
    j = json_loads("{\"a\":18446744073709551616.0}", 0, NULL);
    assert_int_equal(pw_cli_json_check_numbers(j, NULL, 0, NULL), PW_EPARSE);
    json_decref(j);

    reset_env();
    fake_t fk;
    fake_start_json(&fk, "{\"hosts\":[{\"name\":\"HOST01\",\"nonpaged_bytes\":8.7e80}]}");
    run_t r = RUN("hosts");
    free(fake_finish(&fk, NULL));
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "poolwatch: GET /api/v1/hosts: response field "
                               "hosts[0].nonpaged_bytes: 8.7e+80 is out of range (counts, "
                               "sizes and times are below 2^64)\n");
    run_free(&r);
    reset_env();
}

static void test_fake_server_status_codes(void **state)
{
    (void)state;
    static const struct {
        const char *status;
        int exit;
    } cases[] = {{"404 Not Found", 3},   {"401 Unauthorized", 4},
                 {"403 Forbidden", 4},   {"500 Internal Server Error", 1},
                 {"400 Bad Request", 2}, {"503 Unavailable", 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *doc = "{\"error\":{\"code\":\"ENOENT\",\"message\":\"no such host\"}}";
        char resp[512];
        snprintf(resp, sizeof(resp), "HTTP/1.1 %s\r\nContent-Length: %zu\r\n\r\n%s",
                 cases[i].status, strlen(doc), doc);
        fake_t f;
        fake_start(&f, resp);
        reset_env();
        env_url = fake_url(&f);
        /* series: also checks the escaped path and the parsed times */
        run_t r = RUN("series", "HOST 01", "Io  ", "--pool", "nonpaged", "--from",
                      "2024-03-14T10:00:00Z", "--to=1710411300000", "--step", "1m");
        char *req = fake_finish(&f, NULL);
        assert_int_equal(r.rc, cases[i].exit);
        assert_string_equal(req + strlen(req) - 4, "\r\n\r\n");
        assert_memory_equal(req,
                            "GET /api/v1/hosts/HOST%2001/series?tag=Io%20%20&pool=nonpaged"
                            "&from=1710410400000&to=1710411300000&step=60000 HTTP/1.1\r\n",
                            strlen("GET /api/v1/hosts/HOST%2001/series?tag=Io%20%20&pool=nonpaged"
                                   "&from=1710410400000&to=1710411300000&step=60000 HTTP/1.1\r\n"));
        assert_null(strstr(req, "Authorization:")); /* no token configured */
        assert_non_null(strstr(r.err, "ENOENT: no such host"));
        free(req);
        run_free(&r);
    }
    reset_env();
}

/* leaks --host/--limit become the API's query parameters (escaped); bad flags are refused
 * before anything is sent. */
static void test_fake_server_leaks_query(void **state)
{
    (void)state;
    reset_env();
    fake_t f;
    fake_start_json(&f, "{\"suspects\":[],\"total\":0,\"first_pass_ms\":null}");
    env_token = "tok-read";
    run_t r = RUN("leaks", "--host", "web 01", "--limit", "20", "--json");
    size_t rlen;
    char *req = fake_finish(&f, &rlen);
    assert_int_equal(r.rc, 0);
    const char *want = "GET /api/v1/leaks?host=web%2001&limit=20 HTTP/1.1\r\n";
    assert_memory_equal(req, want, strlen(want));
    free(req);
    run_free(&r);
    r = RUN("leaks", "--hots", "x");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--hots"));
    run_free(&r);
    reset_env();
}

static void test_fake_server_import(void **state)
{
    (void)state;
    reset_env();
    const char *file =
        pw_test_fixture("poolmon/case09_poolmon_xp_msdocs_drsd_before_after_replay.txt");
    char path[4096];
    snprintf(path, sizeof(path), "%s", file);
    size_t flen;
    char *content = pw_test_read_file(path, &flen);
    const char *doc = "{\"host\":\"OLD01\",\"screens\":2,\"rows\":4,\"first_ts_ms\":0,"
                      "\"last_ts_ms\":900000}";
    fake_t f;
    fake_start_json(&f, doc);
    env_token = "tok-admin";
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    run_t r = RUN("import", path, "--host", "OLD 01", "--interval", "10m");
    clock_gettime(CLOCK_REALTIME, &t1);
    size_t rlen;
    char *req = fake_finish(&f, &rlen);
    assert_int_equal(r.rc, 0);
    /* No --start: case09's two unstamped screens end now, so the first is 10 min before. */
    const char *want = "POST /api/v1/import?host=OLD%2001&interval_ms=600000&start_ms=";
    assert_memory_equal(req, want, strlen(want));
    unsigned long long start = strtoull(req + strlen(want), NULL, 10);
    assert_true(start >= (unsigned long long)t0.tv_sec * 1000u - 600000u);
    assert_true(start <= (unsigned long long)t1.tv_sec * 1000u + 1000u - 600000u);
    char cl[64];
    snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", flen);
    assert_non_null(strstr(req, cl));
    assert_non_null(strstr(req, "\r\nContent-Type: text/plain\r\n"));
    /* The body is the file, byte for byte. */
    assert_true(rlen >= flen);
    assert_memory_equal(req + rlen - flen, content, flen);
    assert_non_null(strstr(r.out, "server stored 2 screens, 4 rows"));
    free(req);
    run_free(&r);

    /* A file that is not poolmon is refused locally (exit 2, FILE:LINE), nothing is sent. */
    char bad[4096];
    snprintf(bad, sizeof(bad), "%s",
             pw_test_fixture("poolmon/case32_pooltags_alt_wsl41296_npmb_share_not_poolmon.txt"));
    env_url = "http://127.0.0.1:1";
    r = RUN("import", bad, "--host", "H");
    assert_int_equal(r.rc, 2);
    char want_err[4200];
    snprintf(want_err, sizeof(want_err), "%s:", bad);
    assert_memory_equal(r.err, want_err, strlen(want_err));
    assert_true(r.err[strlen(want_err)] >= '1' && r.err[strlen(want_err)] <= '9');
    run_free(&r);
    r = RUN("import", path, "--host", "H", "--interval", "0m");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    /* Every file is checked before any upload: with nothing listening, a good file followed
     * by a bad one gives 2 (input), not 1 (network). */
    r = RUN("import", path, bad, "--host", "H");
    assert_int_equal(r.rc, 2);
    assert_memory_equal(r.err, want_err, strlen(want_err));
    run_free(&r);

    /* --start: the first unstamped screen at that time (2024-03-14T10:00:00Z = 1710410400 s). */
    fake_start_json(&f, doc);
    r = RUN("import", "--start", "2024-03-14T10:00:00Z", path, "--host", "H");
    req = fake_finish(&f, NULL);
    assert_int_equal(r.rc, 0);
    want = "POST /api/v1/import?host=H&interval_ms=900000&start_ms=1710410400000 HTTP/1.1\r\n";
    assert_memory_equal(req, want, strlen(want));
    free(req);
    run_free(&r);
    free(content);
    reset_env();
}

static void test_fake_server_top_once(void **state)
{
    (void)state;
    reset_env();
    fake_t f;
    fake_start_json(&f, canned_pool);
    run_t r = RUN("top", "HOST01", "--once");
    char *req = fake_finish(&f, NULL);
    assert_int_equal(r.rc, 0);
    const char *want =
        "GET /api/v1/hosts/HOST01/pool?sort=bytes&by_change=0&order=desc&pool=both HTTP/1.1\r\n";
    assert_memory_equal(req, want, strlen(want));
    assert_non_null(strstr(r.out, "\n" COL_HDR "\n" ROW_IO "\n" ROW_KEY "\n" ROW_WAIT "\n"));
    free(req);
    run_free(&r);
    reset_env();
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_case02_header_and_rows),
        cmocka_unit_test(test_parse_case08_per_alloc_floor_and_driver),
        cmocka_unit_test(test_parse_case05_case_sensitive_tags),
        cmocka_unit_test(test_parse_case10_sessions_and_space_tags),
        cmocka_unit_test(test_parse_slabinfo_case20_inode_cache),
        cmocka_unit_test(test_parse_slabinfo_case28_partial),
        cmocka_unit_test(test_parse_case31_headerless),
        cmocka_unit_test(test_parse_json_shape),
        cmocka_unit_test(test_parse_rejects_with_file_line),
        cmocka_unit_test(test_parse_import_empty_file),
        cmocka_unit_test(test_parse_truncated_row),
        cmocka_unit_test(test_parse_human_table),
        cmocka_unit_test(test_top_render_default),
        cmocka_unit_test(test_top_sessions),
        cmocka_unit_test(test_fmt_bigpool),
        cmocka_unit_test(test_top_render_agent),
        cmocka_unit_test(test_top_render_limits),
        cmocka_unit_test(test_top_render_long_tags),
        cmocka_unit_test(test_top_render_held),
        cmocka_unit_test(test_top_render_bigpool),
        cmocka_unit_test(test_top_keys),
        cmocka_unit_test(test_top_query),
        cmocka_unit_test(test_top_table_rejects_bad_json),
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_env_and_flags),
        cmocka_unit_test(test_cli_help_and_version),
        cmocka_unit_test(test_cli_bad_arguments_say_what_and_suggest),
        cmocka_unit_test(test_exit_codes_and_units),
        cmocka_unit_test(test_response_parse),
        cmocka_unit_test(test_fmt_listings),
        cmocka_unit_test(test_param_words),
        cmocka_unit_test(test_fmt_truncates_long_columns),
        cmocka_unit_test(test_fake_server_hosts),
        cmocka_unit_test(test_fake_server_number_out_of_range),
        cmocka_unit_test(test_fake_server_status_codes),
        cmocka_unit_test(test_fmt_events),
        cmocka_unit_test(test_fake_server_import),
        cmocka_unit_test(test_fake_server_leaks_query),
        cmocka_unit_test(test_fake_server_top_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
