/* store_events.c: a host's Windows pool events (store.h, schema 6). Rare writes and reads, so
 * the statements are prepared per call; a put joins the open group-commit transaction. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "store_internal.h"

#define TAG_REC 13 /* tag bytes (4), pool (1), bytes (8, little-endian) */

static int64_t host_id(pw_store_sql_t *q, const char *name, pw_diag_t *d)
{
    sqlite3_stmt *s = NULL;
    int rc =
        sqlite3_prepare_v2(q->db, "SELECT id FROM hosts WHERE name=?1 AND retired=0", -1, &s, NULL);
    if (rc != SQLITE_OK)
        return pw__store_sqlfail(q, rc, d, "event host");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    int64_t r = rc == SQLITE_ROW    ? id
                : rc == SQLITE_DONE ? pw_diag_set(d, PW_ENOENT, 0, 0, "host", "no host '%s'", name)
                                    : pw__store_sqlfail(q, rc, d, "event host");
    sqlite3_finalize(s);
    return r;
}

static void tags_pack(const pw_winevent_t *ev, uint8_t *out)
{
    for (size_t i = 0; i < ev->n_tags; i++) {
        uint8_t *p = out + i * TAG_REC;
        memcpy(p, ev->tags[i].tag, 4);
        p[4] = ev->tags[i].pool;
        for (int b = 0; b < 8; b++)
            p[5 + b] = (uint8_t)(ev->tags[i].bytes >> (8 * b));
    }
}

static void tags_unpack(const uint8_t *p, size_t len, pw_winevent_t *ev)
{
    size_t n = len / TAG_REC;
    ev->n_tags = n < PW_WINEVENT_TAGS_MAX ? n : PW_WINEVENT_TAGS_MAX;
    for (size_t i = 0; i < ev->n_tags; i++, p += TAG_REC) {
        memcpy(ev->tags[i].tag, p, 4);
        ev->tags[i].pool = p[4];
        ev->tags[i].bytes = 0;
        for (int b = 7; b >= 0; b--)
            ev->tags[i].bytes = ev->tags[i].bytes << 8 | p[5 + b];
    }
}

int pw_store_put_events(pw_store_t *st, const char *host, const pw_winevent_t *ev, size_t n,
                        uint64_t received_ms, uint8_t *is_new, pw_diag_t *d)
{
    if (st == NULL || host == NULL || (n > 0 && ev == NULL))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    if (n == 0)
        return 0;
    pw_store_sql_t *q = st->sql;
    int rc = pw__store_begin(q, d);
    if (rc != 0)
        return rc;
    int64_t hid = host_id(q, host, d);
    if (hid == PW_ENOENT)
        return (int)hid; /* nothing written: the transaction stays as it was */
    if (hid < 0) {
        pw__store_abort_txn(q);
        return (int)hid;
    }
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(q->db,
                            "INSERT OR IGNORE INTO events(host_id, ts_ms, provider, event_id,"
                            " record_id, pool, tags, received_ms) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
                            -1, &s, NULL);
    if (rc != SQLITE_OK) {
        rc = pw__store_sqlfail(q, rc, d, "insert event");
        pw__store_abort_txn(q);
        return rc;
    }
    int stored = 0;
    uint8_t blob[PW_WINEVENT_TAGS_MAX * TAG_REC];
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t nt = ev[i].n_tags < PW_WINEVENT_TAGS_MAX ? ev[i].n_tags : PW_WINEVENT_TAGS_MAX;
        pw_winevent_t e = ev[i];
        e.n_tags = nt;
        tags_pack(&e, blob);
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, hid);
        sqlite3_bind_int64(s, 2, (int64_t)(e.ts_ms & INT64_MAX));
        sqlite3_bind_text(s, 3, e.provider, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, (int64_t)e.event_id);
        sqlite3_bind_int64(s, 5, (int64_t)(e.record_id & INT64_MAX));
        sqlite3_bind_int(s, 6, e.pool);
        sqlite3_bind_blob(s, 7, blob, (int)(nt * TAG_REC), SQLITE_STATIC);
        sqlite3_bind_int64(s, 8, (int64_t)(received_ms & INT64_MAX));
        int r = sqlite3_step(s);
        if (r != SQLITE_DONE) {
            rc = pw__store_sqlfail(q, r, d, "insert event");
            break;
        }
        int added = sqlite3_changes(q->db) > 0;
        stored += added;
        if (is_new)
            is_new[i] = (uint8_t)added;
    }
    sqlite3_finalize(s);
    if (rc != 0) {
        pw__store_abort_txn(q);
        return rc;
    }
    return stored;
}

int64_t pw_store_events(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                        size_t max, pw_store_event_t **out, pw_diag_t *d)
{
    if (out)
        *out = NULL;
    if (st == NULL || host == NULL || out == NULL || from_ms > to_ms)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "bad argument");
    pw_store_sql_t *q = st->sql;
    sqlite3_stmt *s = NULL;
    /* the newest `max` in the range, handed back oldest first */
    int rc = sqlite3_prepare_v2(
        q->db,
        "SELECT ts_ms, provider, event_id, record_id, pool, tags, received_ms FROM"
        " (SELECT e.* FROM events e JOIN hosts h ON h.id=e.host_id WHERE h.name=?1 AND"
        " h.retired=0 AND e.ts_ms BETWEEN ?2 AND ?3 ORDER BY e.ts_ms DESC, e.record_id DESC,"
        " e.id DESC LIMIT ?4) ORDER BY ts_ms, record_id, id",
        -1, &s, NULL);
    if (rc != SQLITE_OK)
        return pw__store_sqlfail(q, rc, d, "select events");
    sqlite3_bind_text(s, 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)(from_ms & INT64_MAX));
    sqlite3_bind_int64(s, 3, (int64_t)(to_ms & INT64_MAX));
    sqlite3_bind_int64(s, 4, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    pw_store_event_t *v = NULL;
    size_t n = 0, cap = 0;
    int64_t r = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            pw_store_event_t *p = pw_realloc(v, nc * sizeof(*p));
            if (p == NULL) {
                r = pw_diag_set(d, PW_ENOMEM, 0, 0, "events", "out of memory");
                break;
            }
            v = p;
            cap = nc;
        }
        pw_store_event_t *e = &v[n++];
        memset(e, 0, sizeof(*e));
        e->ev.ts_ms = (uint64_t)sqlite3_column_int64(s, 0);
        const unsigned char *prov = sqlite3_column_text(s, 1);
        snprintf(e->ev.provider, sizeof(e->ev.provider), "%s", prov ? (const char *)prov : "");
        e->ev.event_id = (uint32_t)sqlite3_column_int64(s, 2);
        e->ev.record_id = (uint64_t)sqlite3_column_int64(s, 3);
        e->ev.pool = (uint8_t)sqlite3_column_int(s, 4);
        const void *b = sqlite3_column_blob(s, 5);
        if (b)
            tags_unpack(b, (size_t)sqlite3_column_bytes(s, 5), &e->ev);
        e->received_ms = (uint64_t)sqlite3_column_int64(s, 6);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pw__store_sqlfail(q, rc, d, "select events");
    sqlite3_finalize(s);
    if (r < 0) {
        pw_free(v);
        return r;
    }
    *out = v;
    return (int64_t)n;
}
