/* commit.c: the group-commit policy (commit.h). */
#include "commit.h"

#include <string.h>

void pw_commit_init(pw_commit_t *c, const pw_commit_policy_t *p)
{
    memset(c, 0, sizeof(*c));
    c->p = *p;
    if (c->p.max_wait_ms == 0)
        c->p.max_wait_ms = 1;
}

static int bound_reached(const pw_commit_t *c)
{
    return (c->p.max_samples && c->samples >= c->p.max_samples) ||
           (c->p.max_bytes && c->bytes >= c->p.max_bytes);
}

int pw_commit_add(pw_commit_t *c, uint64_t now_ms, uint64_t bytes)
{
    if (c->samples == 0)
        c->oldest_ms = now_ms;
    c->samples++;
    c->bytes += bytes;
    return bound_reached(c);
}

int64_t pw_commit_arm(pw_commit_t *c, uint64_t now_ms, uint64_t bytes)
{
    /* The first pending sample sets the deadline and later ones join it, until a bound is
     * reached: then at once. */
    int first = c->samples == 0;
    if (!pw_commit_add(c, now_ms, bytes) && !first)
        return -1;
    uint64_t due = pw_commit_deadline_ms(c);
    return due > now_ms ? (int64_t)(due - now_ms) : 0;
}

uint64_t pw_commit_deadline_ms(const pw_commit_t *c)
{
    if (c->samples == 0)
        return UINT64_MAX;
    if (bound_reached(c))
        return c->oldest_ms;
    return c->oldest_ms > UINT64_MAX - c->p.max_wait_ms ? UINT64_MAX
                                                        : c->oldest_ms + c->p.max_wait_ms;
}

int pw_commit_due(const pw_commit_t *c, uint64_t now_ms)
{
    return c->samples > 0 && pw_commit_deadline_ms(c) <= now_ms;
}

void pw_commit_done(pw_commit_t *c)
{
    c->samples = 0;
    c->bytes = 0;
    c->oldest_ms = 0;
}

uint64_t pw_commit_pending(const pw_commit_t *c)
{
    return c->samples;
}
