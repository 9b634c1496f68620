/* clock.h: wall and monotonic time and UTC calendar fields, the same on POSIX and Windows (the
 * C runtime of mingw-w64, msvcrt, has neither clock_gettime nor timespec_get nor gmtime_r).
 * Platform code: clock_posix.c, clock_win.c. */
#ifndef PW_CLOCK_H
#define PW_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds since the Unix epoch (UTC), from the system's wall clock: it can step. */
uint64_t pw_clock_wall_ms(void);

/* Microseconds from an arbitrary start, never going back: for durations and timeouts. */
uint64_t pw_clock_mono_us(void);

/* The UTC calendar fields of `secs` seconds since the Unix epoch into *out. Returns 0, or -1
 * when the C runtime cannot represent that time (*out is then zeroed). */
int pw_clock_gmtime(int64_t secs, struct tm *out);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12, d 1..31; earlier dates
 * negative): the inverse of pw_clock_gmtime's calendar, portable (H. Hinnant's
 * days_from_civil, https://howardhinnant.github.io/date_algorithms.html). */
static inline int64_t pw_clock_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

#endif /* PW_CLOCK_H */
