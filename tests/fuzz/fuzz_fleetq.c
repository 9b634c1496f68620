/* fuzz_fleetq.c: what the global fleet view decodes from the shared store (fleetq.h): the
 * input's first byte picks the query (0..3) the rest answers, then the same bytes answer every
 * query of one build in turn; the snapshot is built and looked up. */
#include <stddef.h>
#include <stdint.h>

#include "fleetq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    pw_diag_t d;
    pw_fleetq_build_t *b = pw_fleetq_build_new();
    if (b == NULL)
        return 0;
    pw_fleetq_build_add(b, data[0] % 4, (const char *)data + 1, size - 1, &d);
    for (int q = 0; q < 4; q++)
        pw_fleetq_build_add(b, q, (const char *)data + 1, size - 1, &d);
    pw_fleetq_snap_t *s = pw_fleetq_build_end(b);
    if (s != NULL && s->n_hosts > 0)
        (void)pw_fleetq_find(s, s->hosts[s->n_hosts - 1].name);
    pw_fleetq_snap_free(s);
    return 0;
}
