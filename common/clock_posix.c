/* clock_posix.c: clock.h with clock_gettime and gmtime_r. */
#include "clock.h"

#include <string.h>

uint64_t pw_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t pw_clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int pw_clock_gmtime(int64_t secs, struct tm *out)
{
    time_t t = (time_t)secs;
    if (gmtime_r(&t, out) == NULL) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return 0;
}
