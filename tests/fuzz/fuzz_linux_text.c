/* fuzz_linux_text.c: the Linux text decoders on arbitrary bytes: /proc/allocinfo (strict and
 * lenient), /proc/vmallocinfo (strict and lenient), the rows built from them, and a saved
 * series (linux_series). Checks the invariants a caller relies on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocinfo_text.h"
#include "linux_rows.h"
#include "linux_series.h"
#include "vmallocinfo_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every row's tag fits and no (tag, pool) repeats. */
static void check_rows(const pw_sample_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->entries[i].tag_len == 0 || s->entries[i].tag_len > PW_LINUX_KEY_MAX ||
            s->entries[i].allocs != 0 || s->entries[i].frees != 0)
            abort();
        for (size_t j = 0; j < i && s->n < 200; j++)
            if (s->entries[j].tag_len == s->entries[i].tag_len &&
                memcmp(s->entries[j].tag, s->entries[i].tag, s->entries[i].tag_len) == 0)
                abort();
    }
}

static void diag_ok(int r, const pw_diag_t *d)
{
    if (d->code != r || memchr(d->msg, '\0', sizeof(d->msg)) == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    pw_linux_rows_t lr;
    pw_linux_rows_init(&lr);
    pw_sample_t s;
    pw_sample_init(&s);
    if (pw_linux_rows_begin(&lr, &s) != 0)
        abort();
    for (int strict = 0; strict < 2; strict++) {
        pw_allocinfo_opts_t ao = {.strict = strict, .max_sites = 64};
        pw_allocinfo_doc_t ad;
        pw_diag_t d;
        int r = pw_allocinfo_parse(t, size, &ao, &ad, &d);
        if (r == 0) {
            for (size_t i = 0; i < ad.n_sites; i++)
                if (ad.sites[i].file == NULL || ad.sites[i].func == NULL ||
                    ad.sites[i].module == NULL)
                    abort();
            if (pw_linux_rows_add_alloc(&lr, &ad, &d) != 0)
                abort();
        } else {
            diag_ok(r, &d);
            if (ad.n_sites != 0)
                abort();
        }
        pw_allocinfo_doc_close(&ad);
        pw_vmallocinfo_opts_t vo = {.strict = strict};
        pw_vmallocinfo_doc_t vd;
        r = pw_vmallocinfo_parse(t, size, &vo, &vd, &d);
        if (r == 0) {
            uint64_t sum = 0;
            size_t areas = 0;
            for (size_t i = 0; i < vd.n_callers; i++) {
                if (strlen(vd.callers[i].key) != vd.callers[i].key_len ||
                    vd.callers[i].key_len > PW_VMALLOCINFO_MAX_KEY)
                    abort();
                sum += vd.callers[i].bytes;
                areas += vd.callers[i].areas;
            }
            if (sum != vd.total_bytes || areas != vd.n_areas)
                abort();
            if (pw_linux_rows_add_vmalloc(&lr, &vd, &d) != 0)
                abort();
        } else {
            diag_ok(r, &d);
        }
        pw_vmallocinfo_doc_close(&vd);
    }
    check_rows(&s);
    pw_sample_close(&s);
    pw_linux_rows_close(&lr);
    pw_linux_series_t ser;
    pw_diag_t d;
    int r = pw_linux_series_parse(t, size, NULL, &ser, &d);
    if (r == 0) {
        for (size_t i = 0; i < ser.n_points; i++) {
            check_rows(&ser.points[i].sample);
            if (i > 0 && !ser.points[i].has_file_time &&
                ser.points[i].timestamp_ms != ser.points[i - 1].timestamp_ms + 900000)
                abort();
        }
    } else {
        diag_ok(r, &d);
        if (ser.n_points != 0)
            abort();
    }
    pw_linux_series_close(&ser);
    return 0;
}
