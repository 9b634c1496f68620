/* fuzz_winevent.c: the System-log event XML reader (common/winevent.h) on arbitrary bytes.
 * Checks what a caller relies on: strings terminated, tag counts bounded, the pool in range,
 * a failure that says what it was. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "winevent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *arg, const pw_winevent_t *ev)
{
    ++*(int *)arg;
    if (memchr(ev->provider, '\0', sizeof(ev->provider)) == NULL)
        abort();
    if (ev->n_tags > PW_WINEVENT_TAGS_MAX || ev->pool > PW_WINEVENT_POOL_NONPAGED)
        abort();
    for (size_t i = 0; i < ev->n_tags; i++)
        if (ev->tags[i].pool != PW_WINEVENT_POOL_PAGED &&
            ev->tags[i].pool != PW_WINEVENT_POOL_NONPAGED)
            abort();
    (void)pw_winevent_kind_text(pw_winevent_kind(ev));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int calls = 0;
    pw_diag_t d;
    int r = pw_winevent_parse(data, size, check, &calls, &d);
    if (r >= 0 && r != calls)
        abort();
    if (r < 0 && d.code != r)
        abort();
    return 0;
}
