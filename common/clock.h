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

#endif /* PW_CLOCK_H */
