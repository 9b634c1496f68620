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
} pw_win_os_t;

/* Overrides, strongest first: configuration, then the registry values NonPagedPoolLimit /
 * PagedPoolLimit (REG_DWORD, bytes) under HKLM\SYSTEM\CurrentControlSet\Control\Session
 * Manager\Memory Management. 0 = not set. */
typedef struct pw_win_limit_overrides_s {
    uint64_t cfg_nonpaged_bytes;
    uint64_t cfg_paged_bytes;
    uint32_t reg_nonpaged_bytes;
    uint32_t reg_paged_bytes;
} pw_win_limit_overrides_t;

/* Writes a short product name for `os` ("Windows Server 2003", "Windows 7", ...) into `out`
 * (NUL-terminated, truncated to out_size). Returns `out`. */
const char *pw_win_os_name(const pw_win_os_t *os, char *out, size_t out_size);

/* Estimates the nonpaged and paged pool limits (no API returns them). Order: configuration
 * (PW_LIMIT_CONFIGURED), registry (PW_LIMIT_REGISTRY), else the rule table (PW_LIMIT_COMPUTED);
 * `detail` says which rule, e.g. "Windows Server 2003 x86 with /3GB: 128 MB". Where no rule is
 * known the limit is 0 with PW_LIMIT_UNKNOWN. ram_bytes is physical memory; commit_limit_bytes
 * (0 = unknown) caps the x64 paged pool from Windows 8 on, as the table says.
 *
 * Rule table, from Microsoft "Memory Limits for Windows and Windows Server Releases" (section
 * "Memory and Address Space Limits") and Windows Internals (pool sizing chapter):
 *   nonpaged  NT4 x86: 128 MB.
 *             2000 x86: 256 MB, reached at 1.5 GB of RAM; below that our rule scales it
 *               linearly: 256 MB * RAM / 1.5 GB (the real sizing is a step function of RAM;
 *               this is an approximation, stated in the detail text).
 *             XP / 2003 x86: 256 MB, 128 MB with /3GB (4GT).
 *             XP / 2003 x64: 75 % of RAM up to 128 GB.
 *             Vista and later x86: min(75 % of RAM, 2 GB).
 *             Vista x64 (6.0 workstation): 40 % of RAM up to 128 GB.
 *             2008 (6.0 server), 7, 2008 R2 x64: 75 % of RAM up to 128 GB.
 *             8 / 2012 x64: min(RAM, 128 GB).  8.1 / 2012 R2 and later x64/arm64: min(RAM, 16 TB).
 *   paged     NT4: unknown (not in the table).  2000 x86: 350 MB.  XP x86: 490 MB.
 *             2003 x86: 530 MB.  XP / 2003 x64, Vista, 7, 2008 (R2) x64: 128 GB.
 *             Vista and later x86: 2 GB (the kernel address space).
 *             8 / 2012 x64: min(384 GB, commit limit).
 *             8.1 / 2012 R2 and later x64/arm64: min(15.5 TB, commit limit).
 * The registry values exist from Vista SP1 on (the table's note); older systems read them as
 * 0, which means "not set". */
void pw_win_pool_limits(const pw_win_os_t *os, uint64_t ram_bytes, uint64_t commit_limit_bytes,
                        const pw_win_limit_overrides_t *ovr, pw_pool_limit_t *nonpaged,
                        pw_pool_limit_t *paged);

/* Parses an OS as an operator writes it, e.g. "Windows Server 2003 x86 /3GB", "Windows 7 x64",
 * "Windows Server 2012 R2", "Windows XP", "Windows 10" (case-insensitive; words in any order
 * after the product name): product (NT 4.0, 2000, XP, Server 2003 [R2], Vista, Server 2008
 * [R2], 7, 8, 8.1, Server 2012 [R2], 10, 11, Server 2016/2019/2022/2025), architecture (x86,
 * 32-bit, x64, amd64, 64-bit, arm64) and /3GB (also "3GB", "4GT", "increaseuserva", which make
 * it x86). Without an architecture: x86 for systems before Vista unless the product is "XP x64",
 * x64 from Vista on. Fills *os (zeroed first) on success. Returns 0, or PW_EINVAL with `d`
 * (field "os") naming the word that is not understood or saying that no product was found. */
int pw_win_os_parse(const char *text, pw_win_os_t *os, pw_diag_t *d);

#endif /* PW_WINLIMIT_H */
