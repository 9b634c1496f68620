/* winlimit.h: the Windows pool-limit rule table, shared by the agent's Windows and simulated
 * sources and the collector's import (an imported capture's --os names the system, the table
 * gives its limits). Pure functions, no Windows headers: unit-tested on Linux. */
#ifndef PW_WINLIMIT_H
#define PW_WINLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"

/* ---- pool limits -------------------------------------------------------------------------- */

typedef enum { PW_WIN_ARCH_X86 = 0, PW_WIN_ARCH_X64 = 1, PW_WIN_ARCH_ARM64 = 2 } pw_win_arch_t;

/* What the rule table needs to know about the OS (RtlGetVersion, GetNativeSystemInfo, boot
 * options). */
typedef struct pw_win_os_s {
    uint32_t major; /* 4 NT4, 5.0 2000, 5.1 XP, 5.2 2003/XP x64, 6.0 Vista/2008, 6.1 7/2008 R2, */
    uint32_t minor; /* 6.2 8/2012, 6.3 8.1/2012 R2, 10.0 10/11/2016+ */
    uint32_t build;
    int server;           /* product type server or domain controller (not VER_NT_WORKSTATION) */
    pw_win_arch_t arch;   /* of the OS, not of the agent process */
    int increase_user_va; /* x86 booted with /3GB (4GT) or increaseuserva */
    uint32_t user_va_mb;  /* x86 with increase_user_va: the user address space in MB (BCD
                           * IncreaseUserVa, 2048-3072); 0 = not known, taken as 3072 (/3GB) */
} pw_win_os_t;

/* Overrides, strongest first: configuration, then the registry values NonPagedPoolLimit /
 * PagedPoolLimit (REG_DWORD) under HKLM\SYSTEM\CurrentControlSet\Control\Session
 * Manager\Memory Management, as read. 0 = not set.
 *
 * The registry values are megabytes, 0-2048 (0: the system sizes the pool), and the kernel reads
 * them on 32-bit Windows only, from Windows Vista SP1 (build 6001) on (Microsoft "Memory Limits
 * for Windows and Windows Server Releases": "Starting with Windows Vista SP1, the nonpaged pool
 * can also be limited by the NonPagedPoolLimit registry key value"; the 32-bit column only; the
 * MB unit and range: Microsoft Learn, "Memory Management Registry Keys"). Elsewhere, or above
 * 2048, the rule table decides and the values are ignored. */
typedef struct pw_win_limit_overrides_s {
    uint64_t cfg_nonpaged_bytes;
    uint64_t cfg_paged_bytes;
    uint32_t reg_nonpaged_mb;
    uint32_t reg_paged_mb;
} pw_win_limit_overrides_t;

/* Largest registry NonPagedPoolLimit / PagedPoolLimit the kernel takes, in MB. */
#define PW_WIN_REG_POOL_LIMIT_MAX_MB 2048u

/* Largest pool limit an import takes (POST /api/v1/import's nonpaged_limit_bytes and
 * paged_limit_bytes, `poolwatch import --nonpaged-limit`), bytes: 2^50 (1 PiB). */
#define PW_WIN_IMPORT_MAX_LIMIT_BYTES (1ull << 50)

/* "x86", "x64" or "arm64". */
const char *pw_win_arch_name(pw_win_arch_t arch);

/* Writes a short product name for `os` ("Windows Server 2003", "Windows 7", ...) into `out`
 * (NUL-terminated, truncated to out_size). Version 10.0 is named from the build number: client
 * builds from 22000 on are Windows 11, earlier ones Windows 10; servers 14393 Windows Server 2016,
 * 17763 2019, 20348 2022, 26100 2025, any other "Windows Server (build N)" (Microsoft's release
 * information pages); build 0 (unknown) gives "Windows 10/11" or "Windows Server 2016+".
 * Returns `out`. */
const char *pw_win_os_name(const pw_win_os_t *os, char *out, size_t out_size);

/* Estimates the nonpaged and paged pool limits (no API returns them). Order: configuration
 * (PW_LIMIT_CONFIGURED), registry (PW_LIMIT_REGISTRY), else the rule table (PW_LIMIT_COMPUTED);
 * `detail` says which rule, e.g. "Windows Server 2003 x86 with /3GB: 128 MB". Where no rule is
 * known the limit is 0 with PW_LIMIT_UNKNOWN. ram_bytes is physical memory; commit_limit_bytes
 * (0 = unknown) caps the x64 paged pool from Windows 8 on, as the table says.
 *
 * Rule table, from Microsoft "Memory Limits for Windows and Windows Server Releases" (section
 * "Memory and Address Space Limits", rows "Paged pool" and "Nonpaged pool"; learn.microsoft.com
 * /windows/win32/memory/memory-limits-for-windows-releases) and, where the table is silent, our
 * own assumption, which the detail text then says:
 *   kernel VA (x86)  2 GB; with 4GT 4 GB minus the user space (IncreaseUserVa; /3GB = 3 GB, so
 *               1 GB): every x86 pool limit from Vista on is capped by it (the table: "limited by
 *               available kernel-mode virtual address space").
 *   nonpaged  NT4 x86: 128 MB (older table editions).
 *             2000, XP, 2003 x86: 256 MB, 128 MB with 4GT (the table: "256 MB, or 128 MB with
 *               4GT"; no RAM scaling).
 *             XP / 2003 x64: min(RAM, 128 GB) (the table: "up to 128 GB depending on
 *               configuration and RAM").
 *             Vista and later x86: min(75 % of RAM, 2 GB, kernel VA).
 *             Vista x64 (6.0 workstation): 40 % of RAM up to 128 GB.
 *             2008 (6.0 server), 7, 2008 R2 x64: 75 % of RAM up to 128 GB.
 *             8 / 2012 x64: min(RAM, 128 GB).  8.1 / 2012 R2 x64/arm64: min(RAM, 16 TB).
 *   paged     NT4: unknown (not in the table).  2000 x86: 350 MB.  XP x86: 490 MB.
 *             2003 x86: 530 MB.  XP / 2003 x64: 128 GB.
 *             Vista, 7, 2008 (R2) x64: min(128 GB, commit limit).
 *             Vista and later x86: the kernel VA (2 GB, less with 4GT).
 *             8 / 2012 x64: min(384 GB, commit limit).
 *             8.1 / 2012 R2 x64/arm64: min(15.5 TB, commit limit).
 *   10, 11, Server 2016-2025 (10.0): not listed by the table; we assume the 8.1 / 2012 R2 rules
 *             and the detail says "(assumed)".
 * The registry values (see pw_win_limit_overrides_t) count only where the kernel reads them. */
void pw_win_pool_limits(const pw_win_os_t *os, uint64_t ram_bytes, uint64_t commit_limit_bytes,
                        const pw_win_limit_overrides_t *ovr, pw_pool_limit_t *nonpaged,
                        pw_pool_limit_t *paged);

/* Parses an OS as an operator writes it, e.g. "Windows Server 2003 x86 /3GB", "Windows 7 x64",
 * "Windows Server 2012 R2", "Windows XP", "Windows 10" (case-insensitive; words in any order
 * after the product name): product (NT 4.0, 2000, XP, Server 2003 [R2], Vista, Server 2008
 * [R2], 7, 8, 8.1, Server 2012 [R2], 10, 11, Server 2016/2019/2022/2025; 10.0 products get the
 * build of their first release, 10240, 22000, 14393, 17763, 20348, 26100), architecture (x86,
 * 32-bit, x64, amd64, 64-bit, arm64) and /3GB (also "3GB", "4GT", "increaseuserva", boot.ini's
 * "/USERVA=2800", bcdedit's "increaseuserva 3072" or "increaseuserva=3072": MB from 2048 to
 * 3072; each makes it x86). Without an architecture: x86 for systems before Vista unless the
 * product is "XP x64", x64 from Vista on. Fills *os (zeroed first) on success. Returns 0, or
 * PW_EINVAL with `d` (field "os") naming the word that is not understood or saying that no product
 * was found. */
int pw_win_os_parse(const char *text, pw_win_os_t *os, pw_diag_t *d);

#endif /* PW_WINLIMIT_H */
