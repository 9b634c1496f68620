/* selfstat_posix.c: the agent's own footprint on POSIX systems (selfstat.h). */
#include "selfstat.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "error.h"

int pw_selfstat_read(pw_selfstat_t *out)
{
    memset(out, 0, sizeof(*out));
    int got = 0;
    /* statm: size resident shared ... in pages (proc(5)) */
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        unsigned long long size, resident;
        long ps = sysconf(_SC_PAGESIZE);
        if (fscanf(f, "%llu %llu", &size, &resident) == 2 && ps > 0) {
            out->rss_bytes = (uint64_t)resident * (uint64_t)ps;
            got = 1;
        }
        fclose(f);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        out->cpu_ms = (uint64_t)ru.ru_utime.tv_sec * 1000u + (uint64_t)ru.ru_utime.tv_usec / 1000u +
                      (uint64_t)ru.ru_stime.tv_sec * 1000u + (uint64_t)ru.ru_stime.tv_usec / 1000u;
        got = 1;
    }
    return got ? 0 : PW_EIO;
}
