/* test_config.c: the option-table layer (common/config.c): value syntax of every type, INI
 * files with their errors and line numbers, command-line overrides, dump and example round
 * trips, hostile input, and allocation-failure torture. Expected numbers are worked out by
 * hand in the comments (15m = 15 * 60 * 1000 ms, 256MiB = 256 * 2^20 bytes, ...). */
#include "test_util.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"

typedef struct test_cfg_s {
    uint64_t interval_ms;
    uint64_t live_ttl_ms;
    char *source;
    int64_t retries;
    int64_t offset;
    bool verbose;
    pw_config_list_t tags;
    char *label;
    int level;
    uint64_t spool_max_bytes;
    char *spool_dir;
    char *ca_file;
    pw_config_list_t endpoints;
    uint64_t uplink_interval_ms;
    uint64_t timeout_ms;
} test_cfg_t;

static const char *const levels[] = {"error", "warn", "info", "debug", "trace", NULL};

#define MIN_MS (60 * 1000)
static const pw_config_opt_t tab[] = {
    PW_CONFIG_OPT_DURATION("agent", "interval", "10s", 1000, 3600000, test_cfg_t, interval_ms,
                           "Sampling interval."),
    PW_CONFIG_OPT_DURATION("agent", "live_ttl", "10m", 1000, 10 * MIN_MS, test_cfg_t, live_ttl_ms,
                           "How long live mode lasts."),
    PW_CONFIG_OPT_STRING("agent", "source", "linux", test_cfg_t, source, 0, "Data source."),
    PW_CONFIG_OPT_INT("agent", "retries", "3", 0, 100, test_cfg_t, retries, "Retries."),
    PW_CONFIG_OPT_INT("agent", "offset", "-5", 0, 0, test_cfg_t, offset, "Any integer."),
    PW_CONFIG_OPT_BOOL("agent", "verbose", "false", test_cfg_t, verbose, "Verbose output."),
    PW_CONFIG_OPT_LIST("agent", "tags", "a, b", 0, 0, test_cfg_t, tags, 0, "Tags to watch."),
    {"agent", "label", PW_CONFIG_STRING, "", offsetof(test_cfg_t, label), 0, 16, NULL, 0,
     "A label of at most 16 bytes."},
    PW_CONFIG_OPT_ENUM("log", "level", "info", levels, test_cfg_t, level, "Log level."),
    PW_CONFIG_OPT_SIZE("spool", "max_size", "256MiB", 4 << 20, (int64_t)1 << 40, test_cfg_t,
                       spool_max_bytes, "Spool ceiling."),
    PW_CONFIG_OPT_STRING("spool", "dir", "/var/lib/poolwatch/spool", test_cfg_t, spool_dir,
                         PW_CONFIG_PATH, "Spool directory."),
    PW_CONFIG_OPT_STRING("tls", "ca_file", NULL, test_cfg_t, ca_file,
                         PW_CONFIG_REQUIRED | PW_CONFIG_PATH, "CA certificate (PEM)."),
    PW_CONFIG_OPT_LIST("uplink", "endpoints", NULL, 1, 3, test_cfg_t, endpoints, PW_CONFIG_REQUIRED,
                       "Collector endpoints, tried in turn."),
    PW_CONFIG_OPT_DURATION("uplink", "interval", "1s", 0, 0, test_cfg_t, uplink_interval_ms,
                           "A second 'interval', to make the bare name ambiguous."),
    PW_CONFIG_OPT_DURATION("uplink", "timeout", "15s", 0, 0, test_cfg_t, timeout_ms,
                           "Connect timeout."),
    PW_CONFIG_END,
};

static void defaults(test_cfg_t *c)
{
    pw_diag_t d;
    memset(c, 0xA5, sizeof(*c)); /* garbage: defaults must not read the old fields */
    assert_int_equal(pw_config_defaults(tab, c, &d), 0);
}

/* Writes the dump of `c` into a malloc'd string. */
static char *dump_str(const test_cfg_t *c)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    assert_non_null(f);
    assert_int_equal(pw_config_dump(tab, c, f), 0);
    fclose(f);
    return s;
}

/* Loads `text` into a fresh default config; returns the code, diag in *d. */
static int load(test_cfg_t *c, const char *text, pw_diag_t *d)
{
    defaults(c);
    return pw_config_load_string(tab, c, text, d);
}

/* Expects loading `text` to fail with `code` on `line`, the message containing `needle`. */
static void expect_load_error(const char *text, int code, uint32_t line, const char *field,
                              const char *needle)
{
    test_cfg_t c;
    pw_diag_t d;
    int r = load(&c, text, &d);
    if (r != code || d.line != line || (needle && strstr(d.msg, needle) == NULL) ||
        (field && strcmp(d.field, field) != 0))
        fail_msg("input <<%.60s>>: got %d (%s) line %u field '%s' msg '%s'; want %d line %u %s",
                 text, r, pw_err_name(r), d.line, d.field, d.msg, code, line, needle ? needle : "");
    assert_int_equal(d.code, code);
    pw_config_free(tab, &c);
}

/* --- value syntax ------------------------------------------------------------------------ */

static void test_duration(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t ms;
    } ok[] = {
        {"250ms", 250},
        {"10s", 10000},
        {"15m", 900000},   /* 15 * 60 * 1000 */
        {"2h", 7200000},   /* 2 * 3600 * 1000 */
        {"7d", 604800000}, /* 7 * 86400 * 1000 */
        {"1h30m", 5400000},
        {"1h 30m", 5400000},
        {"10 s", 10000},
        {"0", 0},
        {"0s", 0},
        {"1d1h1m1s1ms", 90061001}, /* 86400000 + 3600000 + 60000 + 1000 + 1 */
        /* 2^64 = 18446744073709551616; floor(2^64 / 86400000) = 213503982334 days */
        {"213503982334d", 18446744073657600000ull},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = 12345;
        int r = pw_config_parse_duration_ms(ok[i].text, &v);
        if (r != 0 || v != ok[i].ms)
            fail_msg("'%s': r=%d v=%llu", ok[i].text, r, (unsigned long long)v);
    }
    static const struct {
        const char *text;
        int code;
    } bad[] = {
        {"", PW_EINVAL},
        {"10", PW_EINVAL},
        {"10x", PW_EINVAL},
        {"1.5h", PW_EINVAL},
        {"-1s", PW_EINVAL},
        {"s", PW_EINVAL},
        {"10sec", PW_EINVAL},
        {"10S", PW_EINVAL},
        {"5s 7", PW_EINVAL},
        {"99999999999999999999d", PW_ERANGE},  /* digits alone overflow */
        {"213503982335d", PW_ERANGE},          /* one day more than fits */
        {"213503982334d 1d", PW_ERANGE},       /* the sum overflows */
        {"18446744073709551616ms", PW_ERANGE}, /* 2^64 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 777;
        int r = pw_config_parse_duration_ms(bad[i].text, &v);
        if (r != bad[i].code || v != 777)
            fail_msg("'%s': r=%d v=%llu, want %d", bad[i].text, r, (unsigned long long)v,
                     bad[i].code);
    }
}

static void test_size(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        {"256MiB", 268435456},   /* 256 * 1048576 */
        {"4MiB", 4194304},       /* 4 * 1048576 */
        {"512KiB", 524288},      /* 512 * 1024 */
        {"1GB", 1000000000},     /* decimal */
        {"1gib", 1073741824},    /* units in any case */
        {"2TiB", 2199023255552}, /* 2 * 2^40 */
        {"3kB", 3000},
        {"5MB", 5000000},
        {"4096", 4096},
        {"10B", 10},
        {"256 MiB", 268435456},
        {"0", 0},
        {"16777215TiB", 18446742974197923840ull}, /* 2^64 - 2^40 */
        {"18446744073709551615", 18446744073709551615ull},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = 12345;
        int r = pw_config_parse_size(ok[i].text, &v);
        if (r != 0 || v != ok[i].bytes)
            fail_msg("'%s': r=%d v=%llu", ok[i].text, r, (unsigned long long)v);
    }
    static const struct {
        const char *text;
        int code;
    } bad[] = {
        {"1M", PW_EINVAL},
        {"1k", PW_EINVAL},
        {"1.5GiB", PW_EINVAL},
        {"MiB", PW_EINVAL},
        {"", PW_EINVAL},
        {"-1", PW_EINVAL},
        {"1 MiB x", PW_EINVAL},
        {"1MiBs", PW_EINVAL},
        {"1 2", PW_EINVAL},
        {"18446744073709551616", PW_ERANGE}, /* 2^64 */
        {"16777216TiB", PW_ERANGE},          /* 2^24 * 2^40 = 2^64 */
        {"99999999999999999999GB", PW_ERANGE},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 777;
        int r = pw_config_parse_size(bad[i].text, &v);
        if (r != bad[i].code || v != 777)
            fail_msg("'%s': r=%d v=%llu, want %d", bad[i].text, r, (unsigned long long)v,
                     bad[i].code);
    }
}

/* Pool limits as Windows writes them (pw_config_parse_pool_size, PW_CONFIG_POOL_UNITS): kB..TB
 * in powers of 1024, the other units and bare bytes as for any size; the agent's [limits] and
 * the CLI's import --nonpaged-limit share the rule (Microsoft's "Memory Limits for Windows
 * Releases": Server 2003 /3GB nonpaged "128 MB" is 134,217,728 bytes). */
typedef struct {
    uint64_t limit, plain;
} pool_cfg_t;

static void test_pool_size(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        {"128MB", 134217728},   /* 128 * 2^20 */
        {"128 mb", 134217728},  /* any case, a blank before the unit */
        {"530MB", 555745280},   /* 530 * 2^20 */
        {"1GB", 1073741824},    /* 2^30 */
        {"64kB", 65536},        /* 64 * 2^10 */
        {"2TB", 2199023255552}, /* 2 * 2^40 */
        {"128MiB", 134217728},  /* binary units as usual */
        {"134217728", 134217728}, {"10B", 10},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = 12345;
        int r = pw_config_parse_pool_size(ok[i].text, &v);
        if (r != 0 || v != ok[i].bytes)
            fail_msg("'%s': r=%d v=%llu", ok[i].text, r, (unsigned long long)v);
    }
    uint64_t v = 777;
    assert_int_equal(pw_config_parse_pool_size("128M", &v), PW_EINVAL); /* still ambiguous */
    assert_int_equal(pw_config_parse_pool_size("16777216TB", &v), PW_ERANGE);
    assert_int_equal(v, 777);
    /* the same text as an ordinary size stays decimal */
    assert_int_equal(pw_config_parse_size("128MB", &v), 0);
    assert_int_equal(v, 128000000);
    /* an option row with the flag reads the rule from a file; one without keeps 10^6 */
    static const pw_config_opt_t pt[] = {
        PW_CONFIG_OPT_POOL_SIZE("limits", "nonpaged", "0", 0, 0, pool_cfg_t, limit, "a limit"),
        PW_CONFIG_OPT_SIZE("store", "max_size", "0", 0, 0, pool_cfg_t, plain, "a size"),
        PW_CONFIG_END,
    };
    pool_cfg_t c;
    pw_diag_t d;
    assert_int_equal(pw_config_defaults(pt, &c, &d), 0);
    assert_int_equal(pw_config_load_string(
                         pt, &c, "[limits]\nnonpaged = 128MB\n[store]\nmax_size = 128MB\n", &d),
                     0);
    assert_int_equal(c.limit, 134217728);
    assert_int_equal(c.plain, 128000000);
    /* the example file says the rule beside the option */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(pw_config_write_example(pt, "t", f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "# Type: size in bytes (units KiB, MiB, GiB, TiB; kB, MB, GB, TB "
                                "count in 1024s too, as Windows\n# writes pool limits: 128MB = "
                                "128MiB; a bare number other than 0 is refused: bytes take B)\n"));
    free(buf);
    /* a bare number in a file is refused with the file and line (it would be 128 bytes; the
     * new-user trial: the agent took it, poolwatch import refused it); 0 (estimate) and bytes
     * with B are taken, and bytes print back with their B */
    static const char bare[] = "[limits]\nnonpaged = 128\n";
    assert_int_equal(pw_config_load_buffer(pt, &c, bare, sizeof(bare) - 1, "agent.conf", &d),
                     PW_ECONFIG);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.msg, "agent.conf:2: "));
    assert_non_null(strstr(d.msg, "'128': a bare number would be bytes; write the limit with its "
                                  "unit, as Windows does: 128MB (= 128MiB), 2GB, or bytes with B; "
                                  "0 = estimate"));
    static const char zero[] = "[limits]\nnonpaged = 0\n";
    assert_int_equal(pw_config_load_buffer(pt, &c, zero, sizeof(zero) - 1, "agent.conf", &d), 0);
    assert_int_equal(c.limit, 0);
    static const char bytes[] = "[limits]\nnonpaged = 134217729B\n";
    assert_int_equal(pw_config_load_buffer(pt, &c, bytes, sizeof(bytes) - 1, "agent.conf", &d), 0);
    assert_int_equal(c.limit, 134217729);
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(pw_config_dump(pt, &c, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "nonpaged = 134217729B\n"));
    free(buf);
    pw_config_free(pt, &c);
}

static void test_defaults(void **state)
{
    (void)state;
    test_cfg_t c;
    defaults(&c);
    assert_int_equal(c.interval_ms, 10000);
    assert_int_equal(c.live_ttl_ms, 600000);
    assert_string_equal(c.source, "linux");
    assert_int_equal(c.retries, 3);
    assert_int_equal(c.offset, -5);
    assert_false(c.verbose);
    assert_int_equal(c.tags.n, 2);
    assert_string_equal(c.tags.items[0], "a");
    assert_string_equal(c.tags.items[1], "b");
    assert_string_equal(c.label, "");
    assert_int_equal(c.level, 2); /* "info" is word 2 */
    assert_int_equal(c.spool_max_bytes, 268435456);
    assert_string_equal(c.spool_dir, "/var/lib/poolwatch/spool");
    assert_null(c.ca_file);
    assert_int_equal(c.endpoints.n, 0);
    assert_null(c.endpoints.items);
    assert_int_equal(c.uplink_interval_ms, 1000);
    assert_int_equal(c.timeout_ms, 15000);
    pw_config_free(tab, &c);
    assert_null(c.source);
    assert_null(c.tags.items);
    assert_int_equal(c.tags.n, 0);
    pw_config_free(tab, &c); /* twice is harmless */
    pw_config_free(tab, NULL);
}

static void test_bad_tables(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    static const char *const none[] = {NULL};
    const pw_config_opt_t dup[] = {
        PW_CONFIG_OPT_INT("a", "x", "1", 0, 0, test_cfg_t, retries, "x"),
        PW_CONFIG_OPT_INT("a", "x", "1", 0, 0, test_cfg_t, offset, "x"),
        PW_CONFIG_END,
    };
    const pw_config_opt_t noword[] = {
        PW_CONFIG_OPT_ENUM("a", "e", "x", none, test_cfg_t, level, "x"),
        PW_CONFIG_END,
    };
    const pw_config_opt_t badef[] = {
        PW_CONFIG_OPT_STRING("a", "s", "ok", test_cfg_t, source, 0, "x"),
        PW_CONFIG_OPT_INT("a", "n", "200", 0, 100, test_cfg_t, retries, "x"),
        PW_CONFIG_END,
    };
    const pw_config_opt_t reqdef[] = {
        PW_CONFIG_OPT_STRING("a", "s", "x", test_cfg_t, source, PW_CONFIG_REQUIRED, "x"),
        PW_CONFIG_END,
    };
    const pw_config_opt_t nodef[] = {
        {"a", "n", PW_CONFIG_INT, NULL, offsetof(test_cfg_t, retries), 0, 0, NULL, 0, "x"},
        PW_CONFIG_END,
    };
    const pw_config_opt_t badname[] = {
        PW_CONFIG_OPT_INT("a.b", "n", "1", 0, 0, test_cfg_t, retries, "x"),
        PW_CONFIG_END,
    };
    const pw_config_opt_t *tabs[] = {dup, noword, badef, reqdef, nodef, badname};
    const char *keys[] = {"a.x", "a.e", "a.n", "a.s", "a.n", "a.b.n"};
    for (size_t i = 0; i < sizeof(tabs) / sizeof(tabs[0]); i++) {
        memset(&c, 0, sizeof(c));
        int r = pw_config_defaults(tabs[i], &c, &d);
        if (r != PW_ECONFIG || strcmp(d.field, keys[i]) != 0 ||
            strstr(d.msg, "option table") == NULL)
            fail_msg("table %zu: r=%d field '%s' msg '%s'", i, r, d.field, d.msg);
        pw_config_free(tabs[i], &c); /* the string set before the failing row is freed */
    }
}

/* --- INI files --------------------------------------------------------------------------- */

static void test_load_all_types(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    const char *text = "; comment\n"
                       "# another comment\n"
                       "[agent]\n"
                       "interval = 15m\n"
                       "live_ttl=90s ; inline comment\n"
                       "  source = \"  replay:a b  \"\n"
                       "retries = 100\n"
                       "offset = -9223372036854775808\n"
                       "verbose = Yes\n"
                       "tags = x , y,z\n"
                       "label = 0123456789abcdef\n"
                       "\n"
                       "[log]\n"
                       "level = DEBUG\n"
                       "[spool]\n"
                       "max_size = 1GB\n"
                       "dir = spool\n"
                       "[tls]\n"
                       "ca_file: /etc/pw/ca.pem\n"
                       "[uplink]\n"
                       "endpoints = c1:7070, c2:7070\n"
                       "interval = 2h\n"
                       "[agent]\n"
                       "; sections may be re-opened\n";
    int r = load(&c, text, &d);
    if (r != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(c.interval_ms, 900000);
    assert_int_equal(c.live_ttl_ms, 90000);
    assert_string_equal(c.source, "  replay:a b  ");
    assert_int_equal(c.retries, 100);
    assert_true(c.offset == INT64_MIN);
    assert_true(c.verbose);
    assert_int_equal(c.tags.n, 3);
    assert_string_equal(c.tags.items[0], "x");
    assert_string_equal(c.tags.items[1], "y");
    assert_string_equal(c.tags.items[2], "z");
    assert_string_equal(c.label, "0123456789abcdef");
    assert_int_equal(c.level, 3);
    assert_int_equal(c.spool_max_bytes, 1000000000);
    assert_string_equal(c.spool_dir, "spool"); /* no file, so no directory to prepend */
    assert_string_equal(c.ca_file, "/etc/pw/ca.pem");
    assert_int_equal(c.endpoints.n, 2);
    assert_string_equal(c.endpoints.items[0], "c1:7070");
    assert_string_equal(c.endpoints.items[1], "c2:7070");
    assert_int_equal(c.uplink_interval_ms, 7200000);
    assert_int_equal(c.timeout_ms, 15000); /* untouched default */
    assert_int_equal(pw_config_check(tab, &c, &d), 0);
    pw_config_free(tab, &c);
}

static void test_bom_crlf_empty(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    assert_int_equal(load(&c, "\xEF\xBB\xBF[agent]\r\nretries = 7\r\n[log]\r\nlevel = warn", &d),
                     0);
    assert_int_equal(c.retries, 7);
    assert_int_equal(c.level, 1);
    pw_config_free(tab, &c);
    assert_int_equal(load(&c, "", &d), 0);
    assert_int_equal(c.retries, 3);
    pw_config_free(tab, &c);
    /* An empty value: empty string, empty list. */
    assert_int_equal(load(&c, "[agent]\nsource =\ntags =\n", &d), 0);
    assert_string_equal(c.source, "");
    assert_int_equal(c.tags.n, 0);
    assert_null(c.tags.items);
    pw_config_free(tab, &c);
}

static void test_unknown_and_syntax(void **state)
{
    (void)state;
    expect_load_error("[agent]\ninterval = 5s\n\nintervall = 3s\n", PW_ECONFIG, 4,
                      "agent.intervall", "<string>:4: agent.intervall: unknown key 'intervall'");
    expect_load_error("[agent]\nretries = 1\n\n[agnet]\n", PW_ECONFIG, 4, NULL,
                      "<string>:4: unknown section [agnet]");
    expect_load_error("retries = 1\n", PW_ECONFIG, 1, "retries", "outside of any [section]");
    expect_load_error("[agent]\nretries = 1\nnot a key line\n", PW_EPARSE, 3, NULL,
                      "<string>:3: syntax error");
    expect_load_error("[agent]\n[log\nlevel = info\n", PW_EPARSE, 2, NULL, "syntax error");
    expect_load_error("[agent]\nretries = 1\n  verbose = yes\nretries = 2\n", PW_ECONFIG, 4,
                      "agent.retries", "duplicate key (already set on line 2)");
    /* Case matters for keys and sections. */
    expect_load_error("[Agent]\n", PW_ECONFIG, 1, NULL, "unknown section [Agent]");
    expect_load_error("[agent]\nRetries = 1\n", PW_ECONFIG, 2, "agent.Retries", "unknown key");
}

static void test_bad_values_in_file(void **state)
{
    (void)state;
    expect_load_error("[agent]\nverbose = maybe\n", PW_ECONFIG, 2, "agent.verbose",
                      "not a boolean");
    expect_load_error("[agent]\nretries = 12a\n", PW_ECONFIG, 2, "agent.retries", "not an integer");
    expect_load_error("[agent]\nretries = 101\n", PW_ECONFIG, 2, "agent.retries",
                      "'101' is out of range (0 to 100)");
    expect_load_error("[agent]\nretries = -1\n", PW_ECONFIG, 2, "agent.retries", "out of range");
    expect_load_error("[agent]\noffset = 9223372036854775808\n", PW_ECONFIG, 2, "agent.offset",
                      "does not fit");
    expect_load_error("[agent]\ninterval = 500ms\n", PW_ECONFIG, 2, "agent.interval",
                      "'500ms' is out of range (1s to 1h)");
    expect_load_error("[agent]\ninterval = 2h\n", PW_ECONFIG, 2, "agent.interval", "out of range");
    expect_load_error("[agent]\ninterval = 5\n", PW_ECONFIG, 2, "agent.interval",
                      "'5' needs a unit: e.g. '5s' or '5ms' (ms, s, m, h, d)");
    expect_load_error("[agent]\ninterval = 5y\n", PW_ECONFIG, 2, "agent.interval",
                      "unknown unit 'y'");
    expect_load_error("[agent]\n\ninterval = 99999999999999999999d\n", PW_ECONFIG, 3,
                      "agent.interval", "too large");
    expect_load_error("[spool]\nmax_size = 1M\n", PW_ECONFIG, 2, "spool.max_size",
                      "ambiguous unit 'M'");
    expect_load_error("[spool]\nmax_size = 3MiB\n", PW_ECONFIG, 2, "spool.max_size",
                      "out of range (4MiB to 1TiB)");
    expect_load_error("[spool]\nmax_size = 20000000000000000000\n", PW_ECONFIG, 2, "spool.max_size",
                      "too large");
    expect_load_error("[log]\nlevel = loud\n", PW_ECONFIG, 2, "log.level",
                      "'loud' is not one of: error, warn, info, debug, trace");
    expect_load_error("[agent]\ntags = a,,b\n", PW_ECONFIG, 2, "agent.tags",
                      "item 2 of the list is empty");
    expect_load_error("[agent]\ntags = a,\n", PW_ECONFIG, 2, "agent.tags", "item 2");
    expect_load_error("[uplink]\nendpoints = a,b,c,d\n", PW_ECONFIG, 2, "uplink.endpoints",
                      "4 items; expected 1 to 3");
    expect_load_error("[agent]\nlabel = 0123456789abcdefg\n", PW_ECONFIG, 2, "agent.label",
                      "length 17 is out of range (0 to 16)");
}

static void test_hostile(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    /* A file over 1 MiB, made of valid comment lines. */
    size_t big = PW_CONFIG_MAX_FILE + 1;
    char *buf = malloc(big + 1);
    assert_non_null(buf);
    for (size_t i = 0; i < big; i++)
        buf[i] = (i % 64 == 63) ? '\n' : '#';
    buf[big] = '\0';
    assert_int_equal(load(&c, buf, &d), PW_ETOOBIG);
    assert_non_null(strstr(d.msg, "larger than the limit of 1048576 bytes"));
    pw_config_free(tab, &c);
    /* Exactly 1 MiB is accepted. */
    buf[big - 1] = '\0';
    assert_int_equal(load(&c, buf, &d), 0);
    pw_config_free(tab, &c);
    free(buf);

    /* A line of 4096 bytes is accepted, one of 4097 is not (line 2, offset 8). */
    char *line = malloc(8 + 4097 + 2);
    assert_non_null(line);
    memcpy(line, "[agent]\nsource = ", 17);
    memset(line + 17, 'x', 4096 - 9);
    strcpy(line + 8 + 4096, "\n");
    assert_int_equal(load(&c, line, &d), 0);
    assert_int_equal(strlen(c.source), 4087);
    pw_config_free(tab, &c);
    line[8 + 4096] = 'y';
    strcpy(line + 8 + 4097, "\n");
    assert_int_equal(load(&c, line, &d), PW_ETOOBIG);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.offset, 8);
    assert_non_null(strstr(d.msg, "line of 4097 bytes is longer than the limit of 4096"));
    pw_config_free(tab, &c);
    free(line);

    /* A NUL byte, through the buffer interface: line 2, offset 12. */
    static const char nul[] = "[agent]\nret\0ries = 1\n";
    defaults(&c);
    assert_int_equal(pw_config_load_buffer(tab, &c, nul, sizeof(nul) - 1, "agent.conf", &d),
                     PW_EPARSE);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.offset, 11);
    assert_non_null(strstr(d.msg, "agent.conf:2: NUL byte at offset 11"));
    pw_config_free(tab, &c);
    expect_load_error("[agent]\nsource = a\033[2Jb\n", PW_EPARSE, 2, NULL,
                      "control character 0x1b");
    expect_load_error("[agent]\rretries = 1\n", PW_EPARSE, 1, NULL, "control character 0x0d");
}

static void test_partial_apply_and_set(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    /* Lines before the error are applied; the caller is expected to stop, then free. */
    assert_int_equal(load(&c, "[agent]\nsource = sim:x\nretries = many\n", &d), PW_ECONFIG);
    assert_string_equal(c.source, "sim:x");
    assert_int_equal(c.retries, 3);
    /* pw_config_set leaves the option unchanged on failure. */
    assert_int_equal(pw_config_set(tab, &c, "agent.retries", "1000", &d), PW_ECONFIG);
    assert_int_equal(c.retries, 3);
    assert_string_equal(d.field, "agent.retries");
    assert_int_equal(pw_config_set(tab, &c, "retries", "42", &d), 0);
    assert_int_equal(c.retries, 42);
    assert_int_equal(pw_config_set(tab, &c, "live-ttl", "2m", &d), 0);
    assert_int_equal(c.live_ttl_ms, 120000);
    assert_int_equal(pw_config_set(tab, &c, "interval", "2s", &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "several sections"));
    assert_int_equal(pw_config_set(tab, &c, "uplink.interval", "2s", &d), 0);
    assert_int_equal(c.uplink_interval_ms, 2000);
    assert_int_equal(pw_config_set(tab, &c, "nope", "1", &d), PW_ECONFIG);
    assert_non_null(strstr(d.msg, "unknown option"));
    /* Text that a file could not hold is refused, so that dumps always read back. */
    assert_int_equal(pw_config_set(tab, &c, "agent.source", "a ; b", &d), PW_ECONFIG);
    assert_int_equal(pw_config_set(tab, &c, "agent.source", "a\nb", &d), PW_ECONFIG);
    assert_int_equal(pw_config_set(tab, &c, "agent.tags", "a, ;b", &d), PW_ECONFIG);
    assert_string_equal(c.source, "sim:x");
    char buf[16];
    assert_int_equal(pw_config_format(tab, &c, "uplink.timeout", buf, sizeof(buf)), 3);
    assert_string_equal(buf, "15s");
    assert_int_equal(pw_config_format(tab, &c, "nope", buf, sizeof(buf)), PW_EINVAL);
    pw_config_free(tab, &c);
}

/* --- files on disk and PATH options ------------------------------------------------------ */

static void test_load_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/pw_test_config_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/agent.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[tls]\nca_file = certs/ca.pem\n[spool]\ndir = /abs/spool\n[agent]\nbogus = 1\n", f);
    fclose(f);

    test_cfg_t c;
    pw_diag_t d;
    defaults(&c);
    assert_int_equal(pw_config_load_file(tab, &c, path, &d), PW_ECONFIG);
    assert_int_equal(d.line, 6);
    char want[400];
    snprintf(want, sizeof(want), "%s:6: agent.bogus: unknown key", path);
    assert_non_null(strstr(d.msg, want));
    /* Relative PATH values are taken from the file's directory, absolute ones kept. */
    char ca[300];
    snprintf(ca, sizeof(ca), "%s/certs/ca.pem", dir);
    assert_string_equal(c.ca_file, ca);
    assert_string_equal(c.spool_dir, "/abs/spool");
    /* On the command line a relative path stays relative (to the cwd). */
    char *argv[] = {"prog", "--ca-file=my/ca.pem", NULL};
    assert_int_equal(pw_config_apply_args(tab, &c, 2, argv, NULL, NULL, &d), 0);
    assert_string_equal(c.ca_file, "my/ca.pem");
    pw_config_free(tab, &c);

    snprintf(path, sizeof(path), "%s/missing.conf", dir);
    defaults(&c);
    assert_int_equal(pw_config_load_file(tab, &c, path, &d), PW_ENOENT);
    assert_non_null(strstr(d.msg, "missing.conf: cannot open"));
    /* A directory opens but cannot be read. */
    assert_int_equal(pw_config_load_file(tab, &c, dir, &d), -EISDIR);
    pw_config_free(tab, &c);

    snprintf(path, sizeof(path), "%s/agent.conf", dir);
    unlink(path);
    rmdir(dir);
}

/* --- command line ------------------------------------------------------------------------ */

static void test_args(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    assert_int_equal(
        load(&c, "[agent]\nretries = 5\nsource = file\n[spool]\nmax_size = 8MiB\n", &d), 0);
    char *argv[] = {"poolwatch-agent",
                    "--agent.retries=9", /* overrides the file's 5 */
                    "--config",
                    "x.conf",         /* own flag with a value */
                    "--check-config", /* own flag without one */
                    "--source",
                    "sim:fleet",        /* value in the next argument */
                    "--verbose",        /* bool alone = true */
                    "--max-size=16MiB", /* '-' for '_' */
                    "--uplink.interval",
                    "3s",
                    "--retries=11", /* a later flag beats an earlier one */
                    "install",
                    "--retries=50",
                    NULL};
    int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
    static const char *const own[] = {"config=", "check-config", NULL};
    int optind = -1;
    assert_int_equal(pw_config_apply_args(tab, &c, argc, argv, own, &optind, &d), 0);
    assert_int_equal(optind, 12);
    assert_string_equal(argv[optind], "install");
    assert_int_equal(c.retries, 11);
    assert_string_equal(c.source, "sim:fleet");
    assert_true(c.verbose);
    assert_int_equal(c.spool_max_bytes, 16777216); /* 16 * 2^20 */
    assert_int_equal(c.uplink_interval_ms, 3000);
    assert_int_equal(c.interval_ms, 10000);

    char *a2[] = {"p", "--verbose=off", "--", "--retries=1", NULL};
    assert_int_equal(pw_config_apply_args(tab, &c, 4, a2, NULL, &optind, &d), 0);
    assert_false(c.verbose);
    assert_int_equal(optind, 3);
    assert_int_equal(c.retries, 11);

    char *a3[] = {"p", "-h", NULL};
    assert_int_equal(pw_config_apply_args(tab, &c, 2, a3, NULL, &optind, &d), 0);
    assert_int_equal(optind, 1);

    struct {
        char *args[4];
        int argc;
        const char *needle;
        uint64_t offset;
    } bad[] = {
        {{"p", "--retries=1", "--bogus=1"}, 3, "command line: --bogus: unknown option", 2},
        {{"p", "--interval=5s"}, 2, "several sections", 1},
        {{"p", "--source"}, 2, "--source: needs a value", 1},
        {{"p", "--config"}, 2, "--config: needs a value", 1},
        {{"p", "--agent.retries", "x"}, 3, "--agent.retries: 'x' is not an integer", 2},
        {{"p", "--verbose=2"}, 2, "not a boolean", 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int r = pw_config_apply_args(tab, &c, bad[i].argc, bad[i].args, own, &optind, &d);
        if (r != PW_ECONFIG || strstr(d.msg, bad[i].needle) == NULL || d.offset != bad[i].offset ||
            d.line != 0)
            fail_msg("case %zu: r=%d offset=%llu msg '%s'", i, r, (unsigned long long)d.offset,
                     d.msg);
    }
    pw_config_free(tab, &c);
}

static void test_find_flag(void **state)
{
    (void)state;
    const char *v = "untouched";
    char *a[] = {"p",
                 "--config",
                 "/etc/a.conf",
                 "--retries=1",
                 "--config=/etc/b.conf",
                 "--",
                 "--config=/etc/c.conf",
                 NULL};
    assert_int_equal(pw_config_find_flag(7, a, "config", &v), 1);
    assert_string_equal(v, "/etc/b.conf");
    assert_int_equal(pw_config_find_flag(4, a, "config", &v), 1);
    assert_string_equal(v, "/etc/a.conf");
    v = "untouched";
    assert_int_equal(pw_config_find_flag(7, a, "conf", &v), 0);
    assert_string_equal(v, "untouched");
    char *b[] = {"p", "--check-config", "--config", NULL};
    assert_int_equal(pw_config_find_flag(3, b, "config", &v), 1);
    assert_null(v);
    assert_int_equal(pw_config_find_flag(3, b, "check_config", &v), 1);
    assert_null(v);
}

static void test_check_required(void **state)
{
    (void)state;
    test_cfg_t c;
    pw_diag_t d;
    defaults(&c);
    assert_int_equal(pw_config_check(tab, &c, &d), PW_ECONFIG);
    assert_string_equal(d.field, "tls.ca_file");
    assert_int_equal(pw_config_set(tab, &c, "tls.ca_file", "", &d), 0);
    assert_int_equal(pw_config_check(tab, &c, &d), PW_ECONFIG); /* empty counts as unset */
    assert_int_equal(pw_config_set(tab, &c, "tls.ca_file", "/ca.pem", &d), 0);
    assert_int_equal(pw_config_check(tab, &c, &d), PW_ECONFIG);
    assert_string_equal(d.field, "uplink.endpoints");
    assert_int_equal(pw_config_set(tab, &c, "endpoints", "h:1", &d), 0);
    assert_int_equal(pw_config_check(tab, &c, &d), 0);
    pw_config_free(tab, &c);
}

/* --- output ------------------------------------------------------------------------------ */

static void test_dump_round_trip(void **state)
{
    (void)state;
    test_cfg_t c, c2;
    pw_diag_t d;
    const char *text = "[agent]\ninterval = 900s\nlive_ttl = 90000ms\nsource = \" padded \"\n"
                       "tags = p,  q\nlabel = \"\"quoted\"\"\noffset = 12\n[spool]\n"
                       "max_size = 1000MB\n[tls]\nca_file = /x\n[uplink]\nendpoints = h:1\n"
                       "interval = 1h30m\n";
    assert_int_equal(load(&c, text, &d), 0);
    char *s = dump_str(&c);
    /* Canonical forms worked out by hand: 900 s = 15 m; 90000 ms = 90 s (not a whole number
     * of minutes); 1000 MB = 1 GB; 1h30m = 90 m. */
    assert_non_null(strstr(s, "[agent]\ninterval = 15m\nlive_ttl = 90s\n"));
    assert_non_null(strstr(s, "source = \" padded \"\n"));
    assert_non_null(strstr(s, "label = \"\"quoted\"\"\n")); /* the quotes were part of it */
    assert_non_null(strstr(s, "tags = p,q\n"));
    assert_non_null(strstr(s, "level = info\n"));
    assert_non_null(strstr(s, "max_size = 1GB\n"));
    assert_non_null(strstr(s, "dir = /var/lib/poolwatch/spool\n"));
    assert_non_null(strstr(s, "[uplink]\nendpoints = h:1\ninterval = 90m\ntimeout = 15s\n"));
    assert_int_equal(load(&c2, s, &d), 0);
    assert_string_equal(c2.source, " padded ");
    assert_string_equal(c2.label, "\"quoted\"");
    char *s2 = dump_str(&c2);
    assert_string_equal(s, s2);
    free(s);
    free(s2);
    pw_config_free(tab, &c);
    pw_config_free(tab, &c2);

    /* Unset strings appear commented out. */
    defaults(&c);
    s = dump_str(&c);
    assert_non_null(strstr(s, "[tls]\n# ca_file =\n"));
    free(s);
    pw_config_free(tab, &c);
}

static void test_example_round_trip(void **state)
{
    (void)state;
    char *ex = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&ex, &n);
    assert_non_null(f);
    assert_int_equal(pw_config_write_example(tab, "poolwatch test config", f), 0);
    fclose(f);
    assert_non_null(strstr(ex, "# poolwatch test config\n"));
    assert_non_null(strstr(ex, "# Spool ceiling.\n# Type: size in bytes (units KiB, MiB, GiB, "
                               "TiB; kB, MB, GB, TB); range 4MiB to 1TiB\nmax_size = 256MiB\n"));
    assert_non_null(strstr(ex, "# Type: duration (units ms, s, m, h, d); range 1s to 1h\n"
                               "interval = 10s\n"));
    assert_non_null(strstr(ex, "# Type: one of error, warn, info, debug, trace\nlevel = info\n"));
    assert_non_null(strstr(ex, "required\n# ca_file =\n"));
    assert_non_null(strstr(ex, "# Type: comma-separated list; items 1 to 3; required\n"
                               "# endpoints =\n"));
    /* Reading the example back gives exactly the defaults. */
    test_cfg_t c, c2;
    pw_diag_t d;
    defaults(&c);
    if (load(&c2, ex, &d) != 0)
        fail_msg("%s", d.msg);
    char *s1 = dump_str(&c), *s2 = dump_str(&c2);
    assert_string_equal(s1, s2);
    /* And every option line is active in it except the ones without a default. */
    for (const pw_config_opt_t *r = tab; r->name != NULL; r++) {
        char line[128];
        snprintf(line, sizeof(line), r->def ? "\n%s = " : "\n# %s =\n", r->name);
        if (strstr(ex, line) == NULL)
            fail_msg("example lacks %s", line + 1);
    }
    free(s1);
    free(s2);
    free(ex);
    pw_config_free(tab, &c);
    pw_config_free(tab, &c2);
}

/* --- allocation failures ----------------------------------------------------------------- */

static int run_everything(test_cfg_t *c, pw_diag_t *d)
{
    char *argv[] = {"p", "--tags=k,l,m", "--source", "s2", "--ca-file=/c", NULL};
    int r = pw_config_defaults(tab, c, d);
    if (r == 0)
        r = pw_config_load_string(tab, c,
                                  "[agent]\nsource = s1\ntags = x,y\n[tls]\nca_file = ca\n"
                                  "[uplink]\nendpoints = a,b\n",
                                  d);
    if (r == 0)
        r = pw_config_apply_args(tab, c, 5, argv, NULL, NULL, d);
    if (r == 0)
        r = pw_config_set(tab, c, "uplink.endpoints", "z", d);
    return r;
}

/* --help's list: every row in table order, its type (or words) and default; the description
 * wrapped at 92 columns under it. Written out by hand. */
typedef struct {
    char *path;
    int mode;
    uint64_t wait_ms;
    bool on;
} help_cfg_t;

static void test_write_options(void **state)
{
    (void)state;
    static const char *const modes[] = {"fast", "safe", NULL};
    static const pw_config_opt_t ht[] = {
        PW_CONFIG_OPT_STRING("store", "path", NULL, help_cfg_t, path,
                             PW_CONFIG_PATH | PW_CONFIG_REQUIRED, "Where the file is."),
        PW_CONFIG_OPT_ENUM("store", "mode", "safe", modes, help_cfg_t, mode, "How."),
        PW_CONFIG_OPT_DURATION("net", "wait", "30s", 0, 0, help_cfg_t, wait_ms,
                               "A long description of more than ninety-two characters, so that "
                               "it is wrapped at the last space before its 92nd character."),
        PW_CONFIG_OPT_BOOL("net", "on", "true", help_cfg_t, on, NULL),
        PW_CONFIG_END,
    };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(pw_config_write_options(ht, f), 0);
    fclose(f);
    assert_string_equal(buf, "  --store.path=path (required)\n"
                             "      Where the file is.\n"
                             "  --store.mode=fast|safe (default safe)\n"
                             "      How.\n"
                             "  --net.wait=duration (default 30s)\n"
                             "      A long description of more than ninety-two characters, so "
                             "that it is wrapped at the last\n"
                             "      space before its 92nd character.\n"
                             "  --net.on=bool (default true)\n");
    free(buf);
}

static void test_alloc_torture(void **state)
{
    (void)state;
    unsigned long n;
    int ok = 0;
    for (n = 1; n < 200 && !ok; n++) {
        test_cfg_t c;
        pw_diag_t d;
        memset(&c, 0, sizeof(c));
        pw_alloc_fail_after(n);
        int r = run_everything(&c, &d);
        pw_alloc_fail_after(0);
        if (r == 0) {
            ok = 1;
            assert_string_equal(c.source, "s2");
            assert_int_equal(c.tags.n, 3);
            assert_string_equal(c.endpoints.items[0], "z");
        } else if (r != PW_ENOMEM || d.code != PW_ENOMEM) {
            fail_msg("allocation %lu failing gave %d (%s)", n, r, d.msg);
        }
        pw_config_free(tab, &c); /* LeakSanitizer checks that nothing is left */
    }
    assert_true(ok);
    assert_true(n > 8); /* the sequence above makes more than 8 allocations */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_write_options),
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_load_all_types),
        cmocka_unit_test(test_bom_crlf_empty),
        cmocka_unit_test(test_unknown_and_syntax),
        cmocka_unit_test(test_bad_values_in_file),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_partial_apply_and_set),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_find_flag),
        cmocka_unit_test(test_check_required),
        cmocka_unit_test(test_dump_round_trip),
        cmocka_unit_test(test_example_round_trip),
        cmocka_unit_test(test_pool_size),
        cmocka_unit_test(test_alloc_torture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
