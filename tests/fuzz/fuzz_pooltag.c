/* fuzz_pooltag.c: pooltag.txt loader. Parses strictly and leniently with the default limits and
 * with small ones, then looks up every entry's tag and a few fixed tags, touching every string
 * the table hands out under ASan/UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pooltag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const pw_pooltag_t *t)
{
    volatile size_t sink = 0;
    const pw_pooltag_stats_t *s = pw_pooltag_stats(t);
    for (size_t i = 0; i < s->entries; i++) {
        const pw_pooltag_entry_t *e = pw_pooltag_entry(t, i);
        size_t n = 0;
        const pw_pooltag_entry_t *hit = pw_pooltag_lookup(t, e->tag, 4, &n);
        if (hit == NULL || n == 0)
            __builtin_trap(); /* an entry's own tag must be found */
        sink += strlen(e->binary) + strlen(e->desc) + strlen(hit->desc);
    }
    static const char *probe[] = {"Io", "AfdX", "CM12", "Ddk", "", "ABCDE"};
    for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
        const pw_pooltag_entry_t *e = pw_pooltag_lookup(t, probe[i], strlen(probe[i]), NULL);
        if (e)
            sink += strlen(e->desc);
    }
    size_t n;
    const pw_pooltag_skip_t *sk = pw_pooltag_skipped(t, &n);
    for (size_t i = 0; i < n; i++)
        sink += sk[i].line;
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const pw_pooltag_opts_t opts[] = {
        {0},
        {.flags = PW_POOLTAG_LENIENT},
        {.max_input = 4096, .max_line = 16, .max_entries = 8, .flags = PW_POOLTAG_LENIENT},
    };
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
        pw_pooltag_t *t = NULL;
        pw_diag_t d;
        if (pw_pooltag_parse((const char *)data, size, &opts[k], &t, &d) == 0)
            touch(t);
        pw_pooltag_free(t);
    }
    return 0;
}
