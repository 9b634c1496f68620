/* backoff.c: exponential backoff (see backoff.h). */
#include "backoff.h"

uint64_t pw_backoff_delay_ms(uint64_t min_ms, uint64_t max_ms, uint32_t n)
{
    uint64_t base = min_ms;
    for (uint32_t i = 0; i < n && base < max_ms; i++)
        base *= 2;
    return base > max_ms ? max_ms : base;
}

void pw_backoff_init(pw_backoff_t *b, uint64_t min_ms, uint64_t max_ms)
{
    b->min_ms = min_ms ? min_ms : 1000;
    b->max_ms = max_ms ? max_ms : 300000;
    if (b->max_ms < b->min_ms)
        b->max_ms = b->min_ms;
    b->attempt = 0;
}

uint64_t pw_backoff_next(pw_backoff_t *b, uint32_t rnd)
{
    uint64_t base = pw_backoff_delay_ms(b->min_ms, b->max_ms, b->attempt);
    if (b->attempt < 64)
        b->attempt++;
    uint64_t half = base / 2;
    return half + (uint64_t)rnd % (base - half + 1);
}

void pw_backoff_reset(pw_backoff_t *b)
{
    b->attempt = 0;
}
