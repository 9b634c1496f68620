/* tagdict.h: pool tag bytes <-> small integer ids ("inside one connection each
 * tag gets a small integer id in a dictionary that the agent sends once").
 *
 * Ids are dense and assigned in order of first use: 0, 1, 2, ... An encoder adds tags as it
 * meets them; a decoder accepts a definition only for the next free id (or a repeat of an
 * existing one with identical bytes), so a hostile peer cannot make it allocate sparse
 * tables. Tags are raw bytes (1..PW_TAG_MAX): spaces, NUL and bytes >= 0x80 are kept.
 */
#ifndef PW_TAGDICT_H
#define PW_TAGDICT_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

/* At most this many tags per dictionary (Windows hosts have a few thousand tags). */
#define PW_TAGDICT_MAX_DEFAULT (1u << 20)

typedef struct pw_tagdict_s {
    uint8_t *bytes; /* every tag's bytes back to back, in id order (no padding: a Windows
                     * tag costs 4 bytes here, not PW_TAG_MAX) */
    size_t used;    /* bytes in use */
    size_t bytes_cap;
    uint32_t *off;   /* id -> offset of its bytes */
    uint8_t *lens;   /* id -> length */
    uint32_t n;      /* ids in use: 0 .. n-1 */
    uint32_t cap;    /* of off and lens */
    uint32_t max;    /* ceiling on n */
    uint32_t *slots; /* open-addressing hash: id + 1, 0 = empty */
    uint32_t nslots; /* power of two */
} pw_tagdict_t;

/* Initialises an empty dictionary holding at most `max_tags` (0 = PW_TAGDICT_MAX_DEFAULT). */
void pw_tagdict_init(pw_tagdict_t *d, uint32_t max_tags);

/* Frees all storage. Accepts NULL. */
void pw_tagdict_close(pw_tagdict_t *d);

/* Looks `tag` up. Returns its id (>= 0) or PW_ENOENT. */
int64_t pw_tagdict_find(const pw_tagdict_t *d, const uint8_t *tag, size_t len);

/* Returns the id of `tag`, adding it when new; *added (may be NULL) tells which.
 * Returns the id, PW_EINVAL (length 0 or > PW_TAG_MAX), PW_ETOOBIG (dictionary full) or
 * PW_ENOMEM. */
int64_t pw_tagdict_intern(pw_tagdict_t *d, const uint8_t *tag, size_t len, int *added);

/* Decoder side: accepts the definition "id means tag". id == n appends; id < n must repeat
 * the same bytes. Returns 0, PW_EBADTAG (gap, or redefinition with other bytes),
 * PW_EINVAL (length), PW_ETOOBIG or PW_ENOMEM. Nothing changes on failure. */
int pw_tagdict_define(pw_tagdict_t *d, uint32_t id, const uint8_t *tag, size_t len);

/* The bytes of `id` (borrowed, valid until the dictionary changes) and their length, or
 * NULL when id >= n. */
const uint8_t *pw_tagdict_get(const pw_tagdict_t *d, uint32_t id, size_t *len);

/* Forgets every id >= n (n <= count), without allocating: used to roll back a decoder's
 * definitions when the rest of a message turns out invalid. */
void pw_tagdict_truncate(pw_tagdict_t *d, uint32_t n);

/* Number of ids defined. */
static inline uint32_t pw_tagdict_count(const pw_tagdict_t *d)
{
    return d->n;
}

#endif /* PW_TAGDICT_H */
