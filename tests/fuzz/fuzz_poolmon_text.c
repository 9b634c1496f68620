/* fuzz_poolmon_text.c: saved poolmon screens. Parses with the default limits and with a small
 * line limit, then turns every screen into a sample, so that the strings, rows and totals the
 * parser hands out are all touched under ASan/UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "poolmon_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const pw_poolmon_doc_t *doc)
{
    pw_sample_t smp;
    pw_sample_init(&smp);
    volatile size_t sink = 0;
    for (size_t i = 0; i < doc->n_screens; i++) {
        const pw_poolmon_screen_t *s = &doc->screens[i];
        if (s->title)
            sink += strlen(s->title);
        for (size_t j = 0; j < s->n_rows; j++)
            if (s->rows[j].mapped_driver)
                sink += strlen(s->rows[j].mapped_driver);
        pw_sample_reset(&smp);
        pw_poolmon_screen_to_sample(s, &smp);
        sink += smp.n;
    }
    (void)sink;
    pw_sample_close(&smp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_poolmon_doc_t doc;
    pw_diag_t d;
    if (pw_poolmon_parse((const char *)data, size, NULL, &doc, &d) == 0)
        touch(&doc);
    pw_poolmon_doc_close(&doc);

    pw_poolmon_opts_t o = {.max_line_bytes = 64,
                           .start_ms = UINT64_MAX - 5,
                           .interval_ms = 7,
                           .allow_cut_last_line = 1};
    if (pw_poolmon_parse((const char *)data, size, &o, &doc, &d) == 0)
        touch(&doc);
    pw_poolmon_doc_close(&doc);

    /* as import and parse read: rows that cannot be read recorded, duplicate tags split */
    pw_poolmon_opts_t skip = {.allow_cut_last_line = 1, .skip_bad_rows = 1};
    if (pw_poolmon_parse((const char *)data, size, &skip, &doc, &d) == 0) {
        touch(&doc);
        size_t inc = 0;
        for (size_t i = 0; i < doc.n_screens; i++)
            inc += doc.screens[i].incomplete != 0;
        if (inc != doc.screens_incomplete || doc.n_problems > doc.n_problems_total ||
            (doc.n_problems_total > 0) != (inc > 0))
            __builtin_trap();
        for (size_t i = 0; i < doc.n_problems; i++)
            if (doc.problems[i].screen >= doc.n_screens)
                __builtin_trap();
    }
    pw_poolmon_doc_close(&doc);
    return 0;
}
