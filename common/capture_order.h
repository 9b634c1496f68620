/* capture_order.h: whether the screens of a saved capture (or of several files of one host)
 * are in time order, read from the screens themselves.
 *
 * Two signs, both of poolmon's own columns:
 *   - a screen stamped (a time line of the file) at or before the screen before it: time stamps
 *     that go back or repeat (a DST change in zone-less stamps, a clock set back);
 *   - counters that fall: a tag's Allocs and Frees only grow within a boot (Windows counts
 *     them from boot; a 32-bit counter wraps, but not both of a tag's, and not for most tags
 *     between two screens), so when allocs AND frees fall for most of the tags two neighbouring
 *     screens share, the screens are out of order, or the host rebooted between them.
 */
#ifndef PW_CAPTURE_ORDER_H
#define PW_CAPTURE_ORDER_H

#include <stddef.h>

#include "poolmon_text.h"
#include "sample.h"

/* The first of screens doc->screens[1 .. n) stamped by the file at or before the time of the
 * screen before it (its index: the screen before it is index - 1); 0 when every stamped screen
 * comes after the one before it (also for NULL doc or n < 2). n is at most doc->n_screens. */
size_t pw_capture_time_back(const pw_poolmon_doc_t *doc, size_t n);

/* Counters between two tables of one host, `a` then `b` (borrowed): tags (tag, pool) in both
 * with allocs counted (*common), and of them those whose allocs and frees both fell from a to b
 * (*fell). Tables without allocs (PW_SAMPLE_NO_ALLOCS: slab caches) give 0 and 0. Returns 0;
 * PW_ENOMEM (both 0). */
int pw_capture_counters_fall(const pw_sample_t *a, const pw_sample_t *b, size_t *common,
                             size_t *fell);

/* 1 when the counters fell for most tags (more than half of `common`, and at least 2 of them):
 * out of order, or a reboot between the two tables. */
int pw_capture_fell(size_t common, size_t fell);

#endif
