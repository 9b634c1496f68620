/* selfstat.h: the agent's own footprint, sent in every sample (HostTotals agent_*): an
 * exporter that leaks into the memory it watches is itself the leak (the collector raises
 * AgentFootprint when it grows). Platform code: selfstat_posix.c, selfstat_win.c. */
#ifndef PW_SELFSTAT_H
#define PW_SELFSTAT_H

#include <stdint.h>

typedef struct pw_selfstat_s {
    uint64_t rss_bytes; /* resident set (Linux: /proc/self/statm resident pages * page size;
                           Windows: the working set, GetProcessMemoryInfo) */
    uint64_t cpu_ms;    /* user + kernel CPU time since the process started */
    uint32_t handles;   /* open handles (Windows: GetProcessHandleCount); 0 elsewhere */
} pw_selfstat_t;

/* Reads this process's figures into *out (a figure that cannot be read is 0). Returns 0, or
 * PW_EIO when none could be read. */
int pw_selfstat_read(pw_selfstat_t *out);

#endif /* PW_SELFSTAT_H */
