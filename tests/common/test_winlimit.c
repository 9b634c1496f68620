/* test_winlimit.c: the OS text an operator gives an import (--os) read into what the Windows
 * pool-limit rule table needs, and the limits that table then gives (common/winlimit.h).
 * The table's own rows are tested in tests/agent/test_source_win_parse.c; the values here are
 * the table's rules applied by hand. */
#include "test_util.h"
#include "winlimit.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

typedef struct {
    const char *text;
    unsigned major, minor;
    int server;
    pw_win_arch_t arch;
    int gt4;
} os_row_t;

static void test_winlimit_os_parse_products(void **state)
{
    (void)state;
    static const os_row_t rows[] = {
        {"Windows Server 2003 x86 /3GB", 5, 2, 1, PW_WIN_ARCH_X86, 1},
        {"windows server 2003 r2 sp2 /3gb", 5, 2, 1, PW_WIN_ARCH_X86, 1}, /* /3GB implies x86 */
        /* the rule text poolwatch itself prints (hosts, import): a user copies it */
        {"Windows Server 2003 x86 with /3GB", 5, 2, 1, PW_WIN_ARCH_X86, 1},
        /* boot.ini as admins copy it, and bcdedit's form on Vista */
        {"Windows Server 2003 /3GB /USERVA=2800", 5, 2, 1, PW_WIN_ARCH_X86, 1},
        {"Windows Server 2003 /userva=3030", 5, 2, 1, PW_WIN_ARCH_X86, 1},
        {"Windows Vista increaseuserva 3072", 6, 0, 0, PW_WIN_ARCH_X86, 1},
        {"Windows Vista increaseuserva=2560", 6, 0, 0, PW_WIN_ARCH_X86, 1},
        {"Windows Server 2003", 5, 2, 1, PW_WIN_ARCH_X86, 0},
        {"Windows XP", 5, 1, 0, PW_WIN_ARCH_X86, 0},
        {"Windows XP x64", 5, 2, 0, PW_WIN_ARCH_X64, 0},
        {"Windows 2000 Server", 5, 0, 1, PW_WIN_ARCH_X86, 0},
        {"Windows NT 4.0", 4, 0, 0, PW_WIN_ARCH_X86, 0},
        {"Windows Vista x86", 6, 0, 0, PW_WIN_ARCH_X86, 0},
        {"Windows Server 2008 R2 Enterprise", 6, 1, 1, PW_WIN_ARCH_X64, 0},
        {"Windows 7 x64", 6, 1, 0, PW_WIN_ARCH_X64, 0},
        {"Windows 8.1", 6, 3, 0, PW_WIN_ARCH_X64, 0},
        {"Windows Server 2012 R2", 6, 3, 1, PW_WIN_ARCH_X64, 0},
        {"Windows Server 2019 Datacenter", 10, 0, 1, PW_WIN_ARCH_X64, 0},
        {"Windows 11 arm64", 10, 0, 0, PW_WIN_ARCH_ARM64, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        pw_win_os_t os;
        pw_diag_t d;
        pw_diag_clear(&d);
        int r = pw_win_os_parse(rows[i].text, &os, &d);
        if (r != 0)
            fail_msg("'%s': %s", rows[i].text, d.msg);
        if (os.major != rows[i].major || os.minor != rows[i].minor || os.server != rows[i].server ||
            os.arch != rows[i].arch || os.increase_user_va != rows[i].gt4)
            fail_msg("'%s': %u.%u server %d arch %d 3gb %d", rows[i].text, os.major, os.minor,
                     os.server, (int)os.arch, os.increase_user_va);
    }
    /* 10.0 products carry the build of their first release, so they are named right. */
    static const struct {
        const char *text;
        uint32_t build;
        const char *name;
    } b[] = {
        {"Windows Server 2016", 14393, "Windows Server 2016"},
        {"Windows Server 2019", 17763, "Windows Server 2019"},
        {"Windows Server 2022", 20348, "Windows Server 2022"},
        {"Windows Server 2025", 26100, "Windows Server 2025"},
        {"Windows 10", 10240, "Windows 10"},
        {"Windows 11", 22000, "Windows 11"},
        {"Windows 7", 0, "Windows 7"},
    };
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        pw_win_os_t os;
        char n[48];
        assert_int_equal(pw_win_os_parse(b[i].text, &os, NULL), 0);
        assert_int_equal(os.build, b[i].build);
        assert_string_equal(pw_win_os_name(&os, n, sizeof(n)), b[i].name);
    }
}

static void test_winlimit_os_parse_refuses(void **state)
{
    (void)state;
    pw_win_os_t os;
    memset(&os, 0x5A, sizeof(os));
    pw_diag_t d;
    assert_int_equal(pw_win_os_parse("Windows 95", &os, &d), PW_EINVAL);
    assert_string_equal(d.field, "os");
    assert_string_equal(d.msg, "os 'Windows 95': '95' is not a Windows version the limit table "
                               "knows (e.g. \"Windows Server 2003 x86 /3GB\", \"Windows 7 x64\")");
    assert_int_equal(os.major, 0x5A5A5A5Au); /* untouched on failure */
    assert_int_equal(pw_win_os_parse("Ubuntu 22.04", &os, &d), PW_EINVAL);
    assert_string_equal(d.msg, "os 'Ubuntu 22.04': 'Ubuntu' is not a Windows version the limit "
                               "table knows (e.g. \"Windows Server 2003 x86 /3GB\", \"Windows 7 "
                               "x64\")");
    assert_int_equal(pw_win_os_parse("Windows Server", &os, &d), PW_EINVAL);
    assert_string_equal(d.msg, "os 'Windows Server': no Windows version found (e.g. \"Windows "
                               "Server 2003 x86 /3GB\", \"Windows 7 x64\")");
    assert_int_equal(pw_win_os_parse("", &os, &d), PW_EINVAL);
    assert_int_equal(pw_win_os_parse("Windows 7 2008", &os, &d), PW_EINVAL);
    assert_string_equal(d.msg, "os 'Windows 7 2008': '2008' is not a second product name");
    assert_int_equal(pw_win_os_parse("Windows Server 2003 /3GB /USERVA=4000", &os, &d), PW_EINVAL);
    assert_string_equal(d.msg, "os 'Windows Server 2003 /3GB /USERVA=4000': '/USERVA=4000': the "
                               "user address space is 2048 to 3072 (MB, as in /USERVA=2800)");
    assert_int_equal(pw_win_os_parse("Windows Server 2003 x64 /3GB", &os, &d), PW_EINVAL);
    assert_string_equal(d.msg, "os 'Windows Server 2003 x64 /3GB': /3GB is an x86 boot option, "
                               "not one of this architecture");
}

/* The example: the OS text through the same table the Windows source uses. */
static void test_winlimit_os_text_to_limits(void **state)
{
    (void)state;
    pw_win_os_t os;
    pw_pool_limit_t np, p;
    assert_int_equal(pw_win_os_parse("Windows Server 2003 x86 /3GB", &os, NULL), 0);
    pw_win_pool_limits(&os, 0, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 128 * MiB); /* 134217728 */
    assert_int_equal(np.source, PW_LIMIT_COMPUTED);
    assert_string_equal(np.detail, "Windows Server 2003 x86 with /3GB: 128 MB");
    assert_int_equal(p.bytes, 530 * MiB);
    /* without /3GB: 256 MB */
    assert_int_equal(pw_win_os_parse("Windows Server 2003", &os, NULL), 0);
    pw_win_pool_limits(&os, 0, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 256 * MiB);
    /* 7 x64 with 8 GiB: 75 % of RAM = 6 GiB; without RAM the rule gives 0 (unknown) */
    assert_int_equal(pw_win_os_parse("Windows 7 x64", &os, NULL), 0);
    pw_win_pool_limits(&os, 8 * GiB, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 6 * GiB);
    assert_string_equal(np.detail, "Windows 7 x64: 75% of RAM <= 128 GB = 6 GB");
    pw_win_pool_limits(&os, 0, 0, NULL, &np, &p);
    assert_int_equal(np.bytes, 0);
    assert_int_equal(np.source, PW_LIMIT_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_winlimit_os_parse_products),
        cmocka_unit_test(test_winlimit_os_parse_refuses),
        cmocka_unit_test(test_winlimit_os_text_to_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
