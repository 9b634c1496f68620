/* fuzz_slabinfo.c: pw_slabinfo_parse on arbitrary bytes, lenient and strict, with small limits
 * so that the limit paths are reached too. Checks the invariants a caller relies on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slabinfo_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const pw_slabinfo_doc_t *doc)
{
    size_t partial = 0;
    for (size_t i = 0; i < doc->n_caches; i++) {
        const pw_slab_cache_t *c = &doc->caches[i];
        if (c->name == NULL || strlen(c->name) != c->name_len || c->name_len == 0 ||
            c->name_len > PW_SLABINFO_MAX_NAME || c->block >= doc->n_blocks ||
            c->n_stats > PW_SLABINFO_MAX_SECTION || c->n_cpustat > PW_SLABINFO_MAX_SECTION)
            abort();
        partial += c->partial;
        uint64_t b;
        (void)pw_slabinfo_cache_slab_bytes(c, 4096, &b);
    }
    if (partial != doc->n_partial || doc->version == NULL)
        abort();
    (void)pw_slabinfo_doc_slab_bytes(doc, 4096, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_slabinfo_opts_t opts[3] = {
        {0},
        {.strict = true},
        {.max_line_bytes = 64, .max_caches = 4},
    };
    for (int k = 0; k < 3; k++) {
        pw_slabinfo_doc_t doc;
        pw_diag_t d;
        int r = pw_slabinfo_parse((const char *)data, size, &opts[k], &doc, &d);
        if (r == 0)
            check(&doc);
        else if (d.code != r || doc.n_caches != 0 || memchr(d.msg, '\0', sizeof(d.msg)) == NULL)
            abort();
        pw_slabinfo_doc_close(&doc);
    }
    return 0;
}
