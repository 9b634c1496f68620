#include "source.h"
#include "source_internal.h"
#include "alloc.h"

#include <stdio.h>
#include <string.h>

/* The registry: one pointer per source built into this binary (pattern 3). */
static const pw_source_ops_t *const registry[] = {
#ifdef _WIN32
    &pw__source_win_ops,
#else
    &pw__source_linux_ops,
#endif
    &pw__source_replay_ops,
    &pw__source_sim_ops,
    NULL,
};

const pw_source_ops_t *const *pw_source_registry(void)
{
    return registry;
}

int pw_source_open(const char *spec, const pw_source_config_t *cfg, pw_source_t **out, pw_diag_t *d)
{
    static const pw_source_config_t zero_cfg;
    if (spec == NULL || out == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "source", "no source given");
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : "";
    const pw_source_ops_t *ops = NULL;
    for (size_t i = 0; registry[i] != NULL; i++)
        if (strlen(registry[i]->name) == name_len && memcmp(registry[i]->name, spec, name_len) == 0)
            ops = registry[i];
    if (ops == NULL) {
#ifdef _WIN32
        if (name_len == 5 && memcmp(spec, "linux", 5) == 0)
#else
        if (name_len == 3 && memcmp(spec, "win", 3) == 0)
#endif
            return pw_diag_set(d, PW_ENOTSUP, 0, 0, "source",
                               "source '%.*s' is not built on this operating system", (int)name_len,
                               spec);
        char names[128] = "";
        for (size_t i = 0; registry[i] != NULL; i++) {
            strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
            strncat(names, registry[i]->name, sizeof(names) - strlen(names) - 1);
        }
        return pw_diag_set(d, PW_EINVAL, 0, 0, "source", "unknown source '%.*s' (known: %s)",
                           (int)name_len, spec, names);
    }
    pw_source_t *src = pw_calloc(1, sizeof(*src));
    if (src == NULL)
        return PW_ENOMEM;
    src->ops = ops;
    src->cfg = cfg ? *cfg : zero_cfg;
    if (ops->priv_size) {
        src->priv = pw_calloc(1, ops->priv_size);
        if (src->priv == NULL) {
            pw_free(src);
            return PW_ENOMEM;
        }
    }
    int r = ops->open(src, arg, &src->cfg, d);
    if (r != 0) {
        pw_source_close(src);
        return r;
    }
    *out = src;
    return 0;
}

int pw_source_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d)
{
    pw_sample_reset(out);
    return src->ops->sample(src, out, d);
}

void pw_source_close(pw_source_t *src)
{
    if (src == NULL)
        return;
    if (src->ops->close)
        src->ops->close(src);
    pw_free(src->priv);
    pw_free(src);
}

int pw_source_big_pool(pw_source_t *src, const uint8_t tag[4], struct pw_bigpool_summary_s *out,
                       pw_diag_t *d)
{
    if (src->ops->big_pool == NULL)
        return pw_diag_set(d, PW_ENOTSUP, 0, 0, "source",
                           "source '%s' has no big-pool table (Windows hosts only)",
                           src->ops->name);
    return src->ops->big_pool(src, tag, out, d);
}

size_t pw_source_events(pw_source_t *src, struct pw_winevent_s *out, size_t max)
{
    return src->ops->events != NULL && max > 0 ? src->ops->events(src, out, max) : 0;
}

const char *pw_source_name(const pw_source_t *src)
{
    return src->ops->name;
}
