/* winlimit.c: the Windows pool-limit rule table and the OS text parser (see winlimit.h for the
 * table's sources). */
#include "winlimit.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MB (1024ull * 1024ull)
#define GB (1024ull * MB)
#define TB (1024ull * GB)

/* ---- pool limits -------------------------------------------------------------------------- */

const char *pw_win_arch_name(pw_win_arch_t a)
{
    return a == PW_WIN_ARCH_X64 ? "x64" : a == PW_WIN_ARCH_ARM64 ? "arm64" : "x86";
}

/* 10.0 server builds by release (Microsoft's Windows Server release information). */
static const struct {
    uint32_t build;
    const char *name;
} server10[] = {
    {14393, "Windows Server 2016"},
    {17763, "Windows Server 2019"},
    {20348, "Windows Server 2022"},
    {26100, "Windows Server 2025"},
};

const char *pw_win_os_name(const pw_win_os_t *os, char *out, size_t out_size)
{
    unsigned v = os->major * 100 + os->minor;
    const char *name;
    switch (v) {
    case 400:
        name = os->server ? "Windows NT 4.0 Server" : "Windows NT 4.0 Workstation";
        break;
    case 500:
        name = os->server ? "Windows 2000 Server" : "Windows 2000 Professional";
        break;
    case 501:
        name = "Windows XP";
        break;
    case 502:
        name = os->server ? "Windows Server 2003" : "Windows XP x64";
        break;
    case 600:
        name = os->server ? "Windows Server 2008" : "Windows Vista";
        break;
    case 601:
        name = os->server ? "Windows Server 2008 R2" : "Windows 7";
        break;
    case 602:
        name = os->server ? "Windows Server 2012" : "Windows 8";
        break;
    case 603:
        name = os->server ? "Windows Server 2012 R2" : "Windows 8.1";
        break;
    case 1000:
        if (!os->server) {
            name = os->build == 0       ? "Windows 10/11"
                   : os->build >= 22000 ? "Windows 11"
                                        : "Windows 10";
            break;
        }
        name = os->build == 0 ? "Windows Server 2016+" : NULL;
        for (size_t i = 0; i < sizeof(server10) / sizeof(server10[0]); i++)
            if (server10[i].build == os->build)
                name = server10[i].name;
        if (name == NULL) {
            snprintf(out, out_size, "Windows Server (build %u)", (unsigned)os->build);
            return out;
        }
        break;
    default:
        name = NULL;
        break;
    }
    if (name != NULL)
        snprintf(out, out_size, "%s", name);
    else if (os->major >= 10)
        snprintf(out, out_size, "Windows %s %u.%u", os->server ? "Server" : "client", os->major,
                 os->minor);
    else
        snprintf(out, out_size, "Windows %u.%u", os->major, os->minor);
    return out;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Prints a byte count as the table states it: whole TB, GB or MB, else KB. */
static void fmt_size(uint64_t b, char *out, size_t n)
{
    if (b >= TB && b % TB == 0)
        snprintf(out, n, "%llu TB", (unsigned long long)(b / TB));
    else if (b >= GB && b % GB == 0)
        snprintf(out, n, "%llu GB", (unsigned long long)(b / GB));
    else if (b >= MB && b % MB == 0)
        snprintf(out, n, "%llu MB", (unsigned long long)(b / MB));
    else
        snprintf(out, n, "%llu KB", (unsigned long long)(b / 1024));
}

static void set_limit(pw_pool_limit_t *l, uint64_t bytes, pw_limit_source_t src, const char *os,
                      const char *rule)
{
    char sz[32], text[192];
    fmt_size(bytes, sz, sizeof(sz));
    l->bytes = bytes;
    l->source = bytes ? src : PW_LIMIT_UNKNOWN;
    if (bytes == 0)
        snprintf(text, sizeof(text), "%s: %s", os, rule);
    else
        snprintf(text, sizeof(text), "%s: %s%s%s", os, rule, rule[0] ? " = " : "", sz);
    /* Bounded copy: the detail field is shorter than the longest text we could build. */
    snprintf(l->detail, sizeof(l->detail), "%.*s", (int)sizeof(l->detail) - 1, text);
}

/* x86 kernel address space: 4 GB minus the user space (2 GB by default, 3 GB with /3GB unless
 * IncreaseUserVa says otherwise). */
static uint64_t x86_kernel_va(const pw_win_os_t *os)
{
    uint64_t user_mb = 2048;
    if (os->increase_user_va)
        user_mb = os->user_va_mb >= 2048 && os->user_va_mb <= 3072 ? os->user_va_mb : 3072;
    return (4096 - user_mb) * MB;
}

static void computed_nonpaged(const pw_win_os_t *os, uint64_t ram, const char *osn,
                              pw_pool_limit_t *l)
{
    unsigned v = os->major * 100 + os->minor;
    int x86 = os->arch == PW_WIN_ARCH_X86;
    if (v < 400) {
        set_limit(l, 0, PW_LIMIT_UNKNOWN, osn, "no rule for this version");
    } else if (v < 500) {
        set_limit(l, x86 ? 128 * MB : 0, PW_LIMIT_COMPUTED, osn,
                  x86 ? "" : "no rule for this architecture");
    } else if (v < 600 && x86) {
        set_limit(l, os->increase_user_va ? 128 * MB : 256 * MB, PW_LIMIT_COMPUTED, osn, "");
    } else if (v < 600) {
        set_limit(l, v == 500 ? 0 : min_u64(ram, 128 * GB), PW_LIMIT_COMPUTED, osn,
                  v == 500 ? "no rule for this architecture" : "min(RAM, 128 GB)");
    } else if (x86) {
        uint64_t kva = x86_kernel_va(os);
        int by_va = kva < 2 * GB && kva < ram / 4 * 3;
        set_limit(l, min_u64(min_u64(ram / 4 * 3, 2 * GB), kva), PW_LIMIT_COMPUTED, osn,
                  by_va ? "kernel address space" : "min(75% of RAM, 2 GB)");
    } else if (v == 600 && !os->server) {
        set_limit(l, min_u64(ram / 5 * 2, 128 * GB), PW_LIMIT_COMPUTED, osn,
                  "40% of RAM <= 128 GB");
    } else if (v <= 601) {
        set_limit(l, min_u64(ram / 4 * 3, 128 * GB), PW_LIMIT_COMPUTED, osn,
                  "75% of RAM <= 128 GB");
    } else if (v == 602) {
        set_limit(l, min_u64(ram, 128 * GB), PW_LIMIT_COMPUTED, osn, "min(RAM, 128 GB)");
    } else {
        set_limit(l, min_u64(ram, 16 * TB), PW_LIMIT_COMPUTED, osn,
                  v > 603 ? "min(RAM, 16 TB) (assumed)" : "min(RAM, 16 TB)");
    }
}

static void computed_paged(const pw_win_os_t *os, uint64_t commit_limit, const char *osn,
                           pw_pool_limit_t *l)
{
    unsigned v = os->major * 100 + os->minor;
    int x86 = os->arch == PW_WIN_ARCH_X86;
    if (v < 500) {
        set_limit(l, 0, PW_LIMIT_UNKNOWN, osn, "paged pool limit not in the table");
    } else if (v == 500) {
        set_limit(l, x86 ? 350 * MB : 0, PW_LIMIT_COMPUTED, osn,
                  x86 ? "" : "no rule for this architecture");
    } else if (v < 600 && x86) {
        set_limit(l, v == 501 ? 490 * MB : 530 * MB, PW_LIMIT_COMPUTED, osn, "");
    } else if (v < 600) {
        set_limit(l, 128 * GB, PW_LIMIT_COMPUTED, osn, "");
    } else if (x86) {
        set_limit(l, x86_kernel_va(os), PW_LIMIT_COMPUTED, osn, "kernel address space");
    } else {
        uint64_t cap = v <= 601 ? 128 * GB : v == 602 ? 384 * GB : 15 * TB + TB / 2;
        int capped = commit_limit != 0 && commit_limit < cap;
        const char *rule = capped     ? "commit limit"
                           : v <= 602 ? ""
                           : v == 603 ? "15.5 TB"
                                      : "15.5 TB (assumed)";
        set_limit(l, capped ? commit_limit : cap, PW_LIMIT_COMPUTED, osn, rule);
    }
}

/* The registry values count on x86 from Vista SP1 (6.0 build 6001) on, 1-2048 MB. */
static int registry_applies(const pw_win_os_t *os, uint32_t mb)
{
    unsigned v = os->major * 100 + os->minor;
    if (mb == 0 || mb > PW_WIN_REG_POOL_LIMIT_MAX_MB || os->arch != PW_WIN_ARCH_X86)
        return 0;
    return v > 600 || (v == 600 && os->build >= 6001);
}

void pw_win_pool_limits(const pw_win_os_t *os, uint64_t ram_bytes, uint64_t commit_limit_bytes,
                        const pw_win_limit_overrides_t *ovr, pw_pool_limit_t *nonpaged,
                        pw_pool_limit_t *paged)
{
    char name[48], osn[72];
    pw_win_os_name(os, name, sizeof(name));
    snprintf(osn, sizeof(osn), "%s %s%s", name, pw_win_arch_name(os->arch),
             os->arch == PW_WIN_ARCH_X86 && os->increase_user_va ? " with /3GB" : "");
    static const pw_win_limit_overrides_t none;
    if (ovr == NULL)
        ovr = &none;

    if (ovr->cfg_nonpaged_bytes)
        set_limit(nonpaged, ovr->cfg_nonpaged_bytes, PW_LIMIT_CONFIGURED, "configured", "");
    else if (registry_applies(os, ovr->reg_nonpaged_mb))
        set_limit(nonpaged, (uint64_t)ovr->reg_nonpaged_mb * MB, PW_LIMIT_REGISTRY, "registry",
                  "NonPagedPoolLimit");
    else
        computed_nonpaged(os, ram_bytes, osn, nonpaged);

    if (ovr->cfg_paged_bytes)
        set_limit(paged, ovr->cfg_paged_bytes, PW_LIMIT_CONFIGURED, "configured", "");
    else if (registry_applies(os, ovr->reg_paged_mb))
        set_limit(paged, (uint64_t)ovr->reg_paged_mb * MB, PW_LIMIT_REGISTRY, "registry",
                  "PagedPoolLimit");
    else
        computed_paged(os, commit_limit_bytes, osn, paged);
}

/* ---- OS text ------------------------------------------------------------------------------ */

/* Products by the word that names them; `r2` is the version of the product's R2, 0 if none. */
typedef struct {
    const char *word;
    unsigned v, r2; /* major * 100 + minor */
    int server;
    uint32_t build; /* 10.0 products: the build of the first release, which names them */
} product_t;

static const product_t products[] = {
    {"2000", 500, 0, -1, 0}, /* Professional or Server: "server" says */
    {"xp", 501, 0, 0, 0},        {"2003", 502, 502, 1, 0},    {"vista", 600, 0, 0, 0},
    {"2008", 600, 601, 1, 0},    {"7", 601, 0, 0, 0},         {"8", 602, 0, 0, 0},
    {"8.1", 603, 0, 0, 0},       {"2012", 602, 603, 1, 0},    {"10", 1000, 0, 0, 10240},
    {"11", 1000, 0, 0, 22000},   {"2016", 1000, 0, 1, 14393}, {"2019", 1000, 0, 1, 17763},
    {"2022", 1000, 0, 1, 20348}, {"2025", 1000, 0, 1, 26100},
};

/* Words that say nothing the table needs: editions, service packs, vendor, and the "with" of
 * the rule text poolwatch prints ("Windows Server 2003 x86 with /3GB: 128 MB"). */
static int ignorable(const char *w)
{
    static const char *const words[] = {
        "microsoft",    "windows",     "edition",   "standard",   "enterprise",
        "datacenter",   "web",         "small",     "business",   "home",
        "professional", "pro",         "ultimate",  "premium",    "basic",
        "starter",      "workstation", "storage",   "foundation", "essentials",
        "ltsc",         "ltsb",        "education", "with",       NULL};
    for (size_t i = 0; words[i]; i++)
        if (strcasecmp(w, words[i]) == 0)
            return 1;
    /* service packs: sp1, sp2, ... */
    return (w[0] == 's' || w[0] == 'S') && (w[1] == 'p' || w[1] == 'P') &&
           isdigit((unsigned char)w[2]);
}

int pw_win_os_parse(const char *text, pw_win_os_t *os, pw_diag_t *d)
{
    pw_win_os_t o;
    memset(&o, 0, sizeof(o));
    const product_t *prod = NULL;
    int server = 0, r2 = 0, arch = -1, nt = 0, x64_word = 0, va_word = 0;
    char word[32];
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        size_t n = strcspn(p, " \t,");
        if (n >= sizeof(word))
            return pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(p - text), "os",
                               "os '%.80s': '%.*s' is not a word of a Windows version", text,
                               (int)n, p);
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        const char *w = word[0] == '/' ? word + 1 : word;
        /* boot.ini's /USERVA=2800 (with /3GB) and bcdedit's increaseuserva 3072 (or =3072): the
         * user address space in MB, 2048 to 3072 (Microsoft's 4GT documentation); the kernel
         * keeps the rest, and the pool limits are 4GT's */
        const char *eq = strchr(w, '=');
        size_t kl = eq ? (size_t)(eq - w) : strlen(w);
        int is_va = (kl == 6 && strncasecmp(w, "userva", 6) == 0) ||
                    (kl == 14 && strncasecmp(w, "increaseuserva", 14) == 0);
        const char *num = eq && is_va ? eq + 1 : va_word && isdigit((unsigned char)w[0]) ? w : NULL;
        va_word = is_va && eq == NULL;
        if (num != NULL) {
            char *end;
            unsigned long mb = strtoul(num, &end, 10);
            if (*end != '\0' || mb < 2048 || mb > 3072)
                return pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(p - n - text), "os",
                                   "os '%.80s': '%s': the user address space is 2048 to 3072 "
                                   "(MB, as in /USERVA=2800)",
                                   text, word);
            o.increase_user_va = 1;
            continue;
        }
        if (nt && (strcmp(w, "4.0") == 0 || strcmp(w, "4") == 0)) {
            nt = 2;
        } else if (strcasecmp(w, "nt") == 0) {
            nt = 1;
        } else if (strcasecmp(w, "server") == 0) {
            server = 1;
        } else if (strcasecmp(w, "r2") == 0) {
            r2 = 1;
        } else if (strcasecmp(w, "x86") == 0 || strcasecmp(w, "32-bit") == 0 ||
                   strcasecmp(w, "i386") == 0) {
            arch = PW_WIN_ARCH_X86;
        } else if (strcasecmp(w, "x64") == 0 || strcasecmp(w, "amd64") == 0 ||
                   strcasecmp(w, "64-bit") == 0 || strcasecmp(w, "x86_64") == 0 ||
                   strcasecmp(w, "x86-64") == 0) {
            arch = PW_WIN_ARCH_X64;
            x64_word = 1;
        } else if (strcasecmp(w, "arm64") == 0) {
            arch = PW_WIN_ARCH_ARM64;
        } else if (strcasecmp(w, "3gb") == 0 || strcasecmp(w, "4gt") == 0 || is_va) {
            o.increase_user_va = 1;
        } else if (ignorable(w)) {
            continue;
        } else {
            const product_t *hit = NULL;
            for (size_t i = 0; i < sizeof(products) / sizeof(products[0]); i++)
                if (strcasecmp(w, products[i].word) == 0)
                    hit = &products[i];
            if (hit == NULL || prod != NULL)
                return pw_diag_set(d, PW_EINVAL, 0, (uint64_t)(p - n - text), "os",
                                   "os '%.80s': '%s' is not %s", text, word,
                                   hit ? "a second product name"
                                       : "a Windows version the limit table knows (e.g. "
                                         "\"Windows Server 2003 x86 /3GB\", \"Windows 7 x64\")");
            prod = hit;
        }
    }
    unsigned v;
    if (nt == 2 && prod == NULL) {
        v = 400;
    } else if (prod != NULL && nt != 1) {
        v = r2 && prod->r2 ? prod->r2 : prod->v;
        if (prod->server >= 0 && !server)
            server = prod->server;
        if (strcmp(prod->word, "xp") == 0 && x64_word)
            v = 502; /* XP x64 is built on Server 2003 (5.2) */
    } else {
        return pw_diag_set(d, PW_EINVAL, 0, 0, "os",
                           "os '%.80s': no Windows version found (e.g. \"Windows Server 2003 x86 "
                           "/3GB\", \"Windows 7 x64\")",
                           text ? text : "");
    }
    if (o.increase_user_va && arch == -1)
        arch = PW_WIN_ARCH_X86; /* /3GB is an x86 boot option */
    if (o.increase_user_va && arch != PW_WIN_ARCH_X86)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "os",
                           "os '%.80s': /3GB is an x86 boot option, not one of this architecture",
                           text);
    if (arch == -1)
        arch = v < 600 && !(v == 502 && !server) ? PW_WIN_ARCH_X86 : PW_WIN_ARCH_X64;
    o.major = v / 100;
    o.minor = v % 100;
    o.build = prod != NULL ? prod->build : 0;
    o.server = server;
    o.arch = (pw_win_arch_t)arch;
    *os = o;
    return 0;
}
