/* fuzz_pe.c: find-tag's PE reader (agent/pe.h) on arbitrary bytes: headers, where a tag
 * stands, and the version resource. Checks the invariants a caller relies on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pw_pe_t pe;
    pw_diag_t d;
    int r = pw_pe_parse(data, size, &pe, &d);
    static const uint8_t tag[] = {'D', 'd', 'k', ' '};
    uint64_t off = 0;
    pw_pe_match_t k = pw_pe_find(r == 0 ? &pe : NULL, data, size, tag, 4, &off);
    if (k != PW_PE_MATCH_NONE && (off + 4 > size || memcmp(data + off, tag, 4) != 0))
        abort();
    if (r != 0) {
        if (d.code != r)
            abort();
        return 0;
    }
    if (pe.n_sec > PW_PE_MAX_SECTIONS)
        abort();
    pw_pe_version_t v;
    (void)pw_pe_version(&pe, data, size, &v);
    terminated(v.file_version, sizeof(v.file_version));
    terminated(v.product, sizeof(v.product));
    terminated(v.company, sizeof(v.company));
    terminated(v.description, sizeof(v.description));
    return 0;
}
