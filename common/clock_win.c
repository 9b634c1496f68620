/* clock_win.c: clock.h with the Windows API (GetSystemTimeAsFileTime,
 * QueryPerformanceCounter) and msvcrt's gmtime_s. */
#ifndef _WIN32
#error "clock_win.c is for Windows builds only"
#endif
#include "clock.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <string.h>

uint64_t pw_clock_wall_ms(void)
{
    /* FILETIME counts 100 ns intervals since 1601-01-01, 11644473600 s before the epoch. */
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    uint64_t t100 = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    return t100 / 10000u - 11644473600000u;
}

uint64_t pw_clock_mono_us(void)
{
    /* The counter's frequency is fixed at boot (Microsoft, "Acquiring high-resolution time
     * stamps"): read once. */
    static LONGLONG freq;
    LARGE_INTEGER c;
    if (freq == 0) {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        freq = f.QuadPart;
    }
    QueryPerformanceCounter(&c);
    return (uint64_t)(c.QuadPart / freq) * 1000000u +
           (uint64_t)(c.QuadPart % freq) * 1000000u / (uint64_t)freq;
}

int pw_clock_gmtime(int64_t secs, struct tm *out)
{
    time_t t = (time_t)secs;
    if (gmtime_s(out, &t) != 0) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return 0;
}
