/* selfstat_win.c: the agent's own footprint on Windows (selfstat.h). */
#define PSAPI_VERSION 2 /* K32GetProcessMemoryInfo in kernel32 (Windows 7 and later) */
#include "selfstat.h"

#include <string.h>
#include <windows.h>
#include <psapi.h>

#include "error.h"

int pw_selfstat_read(pw_selfstat_t *out)
{
    memset(out, 0, sizeof(*out));
    HANDLE p = GetCurrentProcess();
    int got = 0;
    PROCESS_MEMORY_COUNTERS pmc;
    memset(&pmc, 0, sizeof(pmc));
    pmc.cb = sizeof(pmc);
    if (GetProcessMemoryInfo(p, &pmc, sizeof(pmc))) {
        out->rss_bytes = (uint64_t)pmc.WorkingSetSize;
        got = 1;
    }
    DWORD n = 0;
    if (GetProcessHandleCount(p, &n)) {
        out->handles = (uint32_t)n;
        got = 1;
    }
    FILETIME c, e, k, u;
    if (GetProcessTimes(p, &c, &e, &k, &u)) {
        uint64_t kk = ((uint64_t)k.dwHighDateTime << 32) | k.dwLowDateTime;
        uint64_t uu = ((uint64_t)u.dwHighDateTime << 32) | u.dwLowDateTime;
        out->cpu_ms = (kk + uu) / 10000u; /* 100 ns units */
        got = 1;
    }
    return got ? 0 : PW_EIO;
}
