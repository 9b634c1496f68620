/* winevent.h: Windows System-log events that say a pool ran out, read from their XML (the
 * event schema's rendering: EvtRender(EvtRenderEventXml) on the agent, `wevtutil qe System
 * /f:xml` and Event Viewer's "Save as XML" on an admin's desk).
 *
 * The events (docs/protocol.md, "Pool events"):
 *   - Srv 2019: "The server was unable to allocate from the system nonpaged pool because the
 *     pool was empty" (nonpaged); Srv 2020: the same of the paged pool. Classic events of the
 *     System log, source "Srv", no named data the parser needs.
 *   - Microsoft-Windows-Resource-Exhaustion-Detector 2004: "Windows successfully diagnosed a
 *     low virtual memory condition". Its event data names the top processes and, on Windows
 *     builds that have them, the top pool tags of each pool: Data elements named
 *     PagedPoolTag_N / PagedPoolUsed_N and NonPagedPoolTag_N / NonPagedPoolUsed_N (N = 1..3).
 *     Those names are the provider's manifest template as the OSSEM data dictionary lists it
 *     (data_dictionaries/windows/etw-providers/Microsoft-Windows-Resource-Exhaustion-Detector/
 *     events/event-2004.md); they are not confirmed from a recorded event, so the parser takes
 *     any N, any order, and a tag without its Used (bytes 0) or an event without any.
 *
 * Element and attribute names are the event schema's
 * (https://learn.microsoft.com/windows/win32/wes/eventschema-schema): Event/System/Provider
 * @Name, EventID (text; a Qualifiers attribute is ignored), TimeCreated @SystemTime (ISO 8601
 * UTC, fraction optional), EventRecordID, Computer; Event/EventData/Data @Name. Namespace
 * prefixes are ignored. Parsing uses expat (Debian's libexpat1-dev; cross-built for Windows).
 */
#ifndef PW_WINEVENT_H
#define PW_WINEVENT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Which pool an event is about: the numbers are the wire enum EventPool. */
typedef enum {
    PW_WINEVENT_POOL_NONE = 0, /* not one pool (2004) */
    PW_WINEVENT_POOL_PAGED = 1,
    PW_WINEVENT_POOL_NONPAGED = 2
} pw_winevent_pool_t;

/* What the collector and the agent make of an event. */
typedef enum {
    PW_WINEVENT_OTHER = 0,          /* any other event: skipped */
    PW_WINEVENT_NONPAGED_EMPTY = 1, /* Srv 2019 */
    PW_WINEVENT_PAGED_EMPTY = 2,    /* Srv 2020 */
    PW_WINEVENT_DIAGNOSIS = 3       /* Resource-Exhaustion-Detector 2004 */
} pw_winevent_kind_t;

#define PW_WINEVENT_PROVIDER_SRV "Srv"
#define PW_WINEVENT_PROVIDER_RED "Microsoft-Windows-Resource-Exhaustion-Detector"

#define PW_WINEVENT_TAGS_MAX     8  /* named tags kept per event (2004 names 3 per pool) */
#define PW_WINEVENT_PROVIDER_MAX 80 /* bytes with the NUL; longer names are cut */

/* A tag an event names: its 4 bytes (a shorter name padded with spaces, as poolmon prints
 * tags), its pool and the bytes the event gives for it (0 = not given). */
typedef struct pw_winevent_tag_s {
    uint8_t tag[4];
    uint8_t pool; /* pw_winevent_pool_t */
    uint64_t bytes;
} pw_winevent_tag_t;

typedef struct pw_winevent_s {
    uint64_t ts_ms;     /* TimeCreated, ms since the Unix epoch; 0 = missing or unreadable */
    uint64_t record_id; /* EventRecordID; 0 = missing */
    uint32_t event_id;  /* EventID; 0 = missing */
    uint8_t pool;       /* pw_winevent_pool_t, from the kind */
    char provider[PW_WINEVENT_PROVIDER_MAX]; /* Provider@Name, "" when missing */
    size_t n_tags;
    pw_winevent_tag_t tags[PW_WINEVENT_TAGS_MAX]; /* in the event's order (its N) per pool */
} pw_winevent_t;

/* The event's kind from its provider (compared ignoring case) and id. */
pw_winevent_kind_t pw_winevent_kind(const pw_winevent_t *ev);

/* Called once per <Event> element, in document order, with the event (borrowed for the call).
 * Return 0 to go on; anything else stops the parse, which returns it. */
typedef int (*pw_winevent_cb)(void *arg, const pw_winevent_t *ev);

#define PW_WINEVENT_MAX_INPUT (256u << 20) /* bytes of XML one call takes */

/* Parses `len` bytes of event XML at `xml`: one <Event>, events one after another without a
 * root (wevtutil qe /f:xml), or a document whose root holds them (<Events>, Event Viewer's
 * "Save as XML"; wevtutil /e:ROOT). UTF-8, or UTF-16 with its byte-order mark (PowerShell's
 * `>` writes that). A DOCTYPE is refused. Calls `cb` for every Event element (kinds the
 * caller does not want included: see pw_winevent_kind). Returns the number of events (>= 0),
 * or a negative code: PW_EPARSE (not well-formed XML, a DOCTYPE: `d` has the line, column
 * and byte offset and expat's message), PW_ETOOBIG (over PW_WINEVENT_MAX_INPUT), PW_ENOMEM,
 * or cb's non-zero return. */
int pw_winevent_parse(const void *xml, size_t len, pw_winevent_cb cb, void *arg, pw_diag_t *d);

/* 1 when `len` bytes at `data` look like event XML (what pw_winevent_parse reads): after a
 * byte-order mark and blanks, "<Event" or an XML declaration followed by an "<Event" within
 * the first 4 KiB (UTF-16 is looked at as its ASCII bytes); else 0. Reads no more than 8 KiB. */
int pw_winevent_sniff(const void *data, size_t len);

/* "srv 2019 nonpaged pool empty" style one-line description of the event's kind: "nonpaged
 * pool empty", "paged pool empty", "low virtual memory", "other". Static string. */
const char *pw_winevent_kind_text(pw_winevent_kind_t k);

#endif /* PW_WINEVENT_H */
