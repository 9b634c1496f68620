/* store_put.c: putting samples: hosts' in-memory state (loaded or created inside the
 * transaction), agent instances and duplicates, and the records of the open chunk (a sample
 * re-encoded by pw_store_put, or the agent's frame as received by pw_store_put_frame). */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "codec.h"
#include "frame.h"
#include "store_internal.h"

/* Start of the chunk window holding `ts` for host `hs`. Hosts' windows are offset by whole
 * 15-minute steps (by host id), so that the chunks of a whole fleet do not all close in the same
 * minute after each hour; 15-min rollup buckets still fall inside one chunk. */
static uint64_t window_of(const pw_store_sql_t *q, const pw_store_hstate_t *hs, uint64_t ts)
{
    uint64_t w = q->opts.chunk_window_ms;
    uint64_t off = 0;
    if (w > 900000 && w % 900000 == 0)
        off = ((uint64_t)hs->id % (w / 900000)) * 900000;
    if (ts < off)
        return 0;
    return ts - (ts - off) % w;
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void hstate_free(pw_store_hstate_t *hs)
{
    if (hs == NULL)
        return;
    if (hs->enc_live)
        pw_delta_enc_close(&hs->enc);
    pw__store_live_drop(hs);
    pw__store_totals_drop(hs);
    pw_free(hs->row_os);
    pw_free(hs->name);
    pw_free(hs);
}

void pw__store_forget_hosts(pw_store_sql_t *q)
{
    for (size_t i = 0; i < q->nslots; i++) {
        hstate_free(q->slots[i]);
        q->slots[i] = NULL;
    }
    q->nhosts = 0;
    pw__store_live_forget_sealed(q);
}

static int host_insert(pw_store_sql_t *q, pw_store_hstate_t *hs);

void pw__store_forget_host(pw_store_sql_t *q, const char *name)
{
    if (q->nslots == 0)
        return;
    size_t m = q->nslots - 1, i = hash_name(name) & m;
    while (q->slots[i] != NULL && strcmp(q->slots[i]->name, name) != 0)
        i = (i + 1) & m;
    if (q->slots[i] == NULL)
        return;
    pw__store_live_forget_host(q, q->slots[i]->id);
    hstate_free(q->slots[i]);
    q->slots[i] = NULL;
    q->nhosts--;
    /* Linear probing: the run after the hole is inserted again so that lookups still reach it
     * (no growth: there is one entry fewer). */
    for (size_t j = (i + 1) & m; q->slots[j] != NULL; j = (j + 1) & m) {
        pw_store_hstate_t *h = q->slots[j];
        q->slots[j] = NULL;
        q->nhosts--;
        host_insert(q, h);
    }
}

pw_store_hstate_t *pw__store_host_find(pw_store_sql_t *q, const char *name)
{
    if (q->nslots == 0)
        return NULL;
    size_t m = q->nslots - 1;
    for (size_t i = hash_name(name) & m;; i = (i + 1) & m) {
        if (q->slots[i] == NULL)
            return NULL;
        if (strcmp(q->slots[i]->name, name) == 0)
            return q->slots[i];
    }
}

static int host_insert(pw_store_sql_t *q, pw_store_hstate_t *hs)
{
    if ((q->nhosts + 1) * 2 > q->nslots) {
        size_t ns = q->nslots ? q->nslots * 2 : 64;
        pw_store_hstate_t **slots = pw_calloc(ns, sizeof(*slots));
        if (slots == NULL)
            return PW_ENOMEM;
        for (size_t i = 0; i < q->nslots; i++) {
            pw_store_hstate_t *h = q->slots[i];
            if (h == NULL)
                continue;
            size_t j = hash_name(h->name) & (ns - 1);
            while (slots[j] != NULL)
                j = (j + 1) & (ns - 1);
            slots[j] = h;
        }
        pw_free(q->slots);
        q->slots = slots;
        q->nslots = ns;
    }
    size_t j = hash_name(hs->name) & (q->nslots - 1);
    while (q->slots[j] != NULL)
        j = (j + 1) & (q->nslots - 1);
    q->slots[j] = hs;
    q->nhosts++;
    return 0;
}

/* Column i (an agent or boot id, at most 64 bytes) into dst; its length (0 for NULL). */
static size_t col_id(sqlite3_stmt *s, int i, uint8_t *dst)
{
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    const void *p = sqlite3_column_blob(s, i);
    if (p == NULL || n > 64)
        return 0;
    memcpy(dst, p, n);
    return n;
}

/* The in-memory state of host `name`, loaded or created (inside the transaction). */
int pw__store_host_get(pw_store_sql_t *q, const pw_store_host_t *h, pw_store_hstate_t **out,
                       pw_diag_t *d)
{
    pw_store_hstate_t *hs = pw__store_host_find(q, h->name);
    if (hs != NULL) {
        *out = hs;
        return 0;
    }
    hs = pw_calloc(1, sizeof(*hs));
    if (hs == NULL || (hs->name = pw_strdup(h->name)) == NULL) {
        pw_free(hs);
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
    }
    sqlite3_stmt *s = pw__store_stmt(q, S_HOST_GET);
    sqlite3_bind_text(s, 1, h->name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        hs->id = sqlite3_column_int64(s, 0);
        hs->row_width = (unsigned)sqlite3_column_int(s, 1);
        hs->row_agent_len = col_id(s, 2, hs->row_agent);
        hs->row_boot_len = col_id(s, 3, hs->row_boot);
        hs->row_os = pw__store_col_strdup(s, 4);
        hs->row_source_kind = sqlite3_column_int(s, 5);
        hs->row_interval_ms = (uint32_t)sqlite3_column_int64(s, 6);
        pw__store_col_limit(s, 7, &hs->row_limit[0]);
        pw__store_col_limit(s, 10, &hs->row_limit[1]);
        hs->row_os_build = (uint32_t)sqlite3_column_int64(s, 13);
        const unsigned char *arch = sqlite3_column_text(s, 14), *av = sqlite3_column_text(s, 15);
        snprintf(hs->row_arch, sizeof(hs->row_arch), "%s", arch ? (const char *)arch : "");
        snprintf(hs->row_agent_version, sizeof(hs->row_agent_version), "%s",
                 av ? (const char *)av : "");
        hs->row_known = hs->row_os != NULL;
        rc = 0;
    } else if (rc == SQLITE_DONE) {
        sqlite3_reset(s);
        s = pw__store_stmt(q, S_HOST_INS);
        sqlite3_bind_text(s, 1, h->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, h->os ? h->os : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 3, (int)h->counter_width);
        rc = pw__store_run(q, s, d, "insert host");
        hs->id = sqlite3_last_insert_rowid(q->db);
        /* agent_id and boot_id NULL: the first put writes the row */
    } else {
        rc = pw__store_sqlfail(q, rc, d, "find host");
    }
    sqlite3_reset(s);
    if (rc == 0)
        rc = pw__store_close_stale_chunks(q, hs, d);
    if (rc == 0 && host_insert(q, hs) != 0)
        rc = pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
    if (rc != 0) {
        hstate_free(hs);
        return rc;
    }
    *out = hs;
    return 0;
}

static int same_id(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* Another agent instance puts into `hs`. The one before gets its row written when puts came
 * since it was (they are in the open chunk, which from now on ends with the new instance's
 * samples), then the new one's last seq is read (its row, or its host's open chunk). */
static int inst_load(pw_store_sql_t *q, pw_store_hstate_t *hs, const pw_store_host_t *h,
                     pw_diag_t *d)
{
    sqlite3_stmt *s;
    int rc;
    if (hs->inst_known && hs->inst_dirty) {
        s = pw__store_stmt(q, S_INST_AWAY);
        sqlite3_bind_blob(s, 1, hs->agent, (int)hs->agent_len, SQLITE_STATIC);
        sqlite3_bind_blob(s, 2, hs->boot, (int)hs->boot_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, (int64_t)hs->inst_seq);
        sqlite3_bind_int64(s, 4, (int64_t)hs->inst_ts);
        if ((rc = pw__store_run(q, s, d, "update agent instance")) != 0)
            return rc;
    }
    hs->inst_known = hs->inst_dirty = 0;
    s = pw__store_stmt(q, S_INST_GET);
    sqlite3_bind_blob(s, 1, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    rc = sqlite3_step(s);
    hs->inst_has_seq = rc == SQLITE_ROW;
    hs->inst_here = 0;
    if (rc == SQLITE_ROW) {
        hs->inst_seq = (uint64_t)sqlite3_column_int64(s, 0);
        hs->inst_here = sqlite3_column_int64(s, 1) == hs->id;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return pw__store_sqlfail(q, rc, d, "find agent instance");
    memcpy(hs->agent, h->agent_id, h->agent_id_len);
    memcpy(hs->boot, h->boot_id, h->boot_id_len);
    hs->agent_len = h->agent_id_len;
    hs->boot_len = h->boot_id_len;
    hs->inst_known = 1;
    return 0;
}

/* The first put of an instance into `hs` whose row names another host (or that has none yet):
 * the row moves here with this put's seq. Another host's state holding the same instance (one
 * agent's samples under two names) loads it again at its next put, so that its puts move the
 * row back before they count on it. */
static int inst_move_here(pw_store_sql_t *q, pw_store_hstate_t *hs, const pw_store_host_t *h,
                          uint64_t seq, uint64_t ts, pw_diag_t *d)
{
    sqlite3_stmt *st = pw__store_stmt(q, S_INST_UPSERT);
    sqlite3_bind_blob(st, 1, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, hs->id);
    sqlite3_bind_int64(st, 4, (int64_t)seq);
    sqlite3_bind_int64(st, 5, (int64_t)ts);
    int rc = pw__store_run(q, st, d, "update agent instance");
    if (rc != 0)
        return rc;
    hs->inst_here = 1;
    for (size_t i = 0; i < q->nslots; i++) {
        pw_store_hstate_t *o = q->slots[i];
        if (o != NULL && o != hs && o->inst_known &&
            same_id(o->agent, o->agent_len, hs->agent, hs->agent_len) &&
            same_id(o->boot, o->boot_len, hs->boot, hs->boot_len))
            o->inst_known = o->inst_dirty = 0; /* its puts are in its open chunk: counted */
    }
    return 0;
}

/* Whether the Hello's limit `l` (NULL or bytes 0: none said) is what the row has. */
static int same_limit(const pw_pool_limit_t *row, const pw_pool_limit_t *l)
{
    return l == NULL || l->bytes == 0 ||
           (row->bytes == l->bytes && row->source == l->source &&
            strcmp(row->detail, l->detail) == 0);
}

/* Writes the Hello's limits into the host's row when they differ from it (rare: a new host, a
 * changed limit), keeping the row's where the Hello said none. */
static int host_limits_sync(pw_store_sql_t *q, pw_store_hstate_t *hs, const pw_store_host_t *h,
                            pw_diag_t *d)
{
    const pw_pool_limit_t *said[2] = {h->nonpaged_limit, h->paged_limit};
    if (same_limit(&hs->row_limit[0], said[0]) && same_limit(&hs->row_limit[1], said[1]))
        return 0;
    pw_pool_limit_t nl[2];
    for (int p = 0; p < 2; p++)
        nl[p] = same_limit(&hs->row_limit[p], said[p]) ? hs->row_limit[p] : *said[p];
    sqlite3_stmt *st = pw__store_stmt(q, S_HOST_LIMITS);
    sqlite3_bind_int64(st, 1, hs->id);
    for (int p = 0; p < 2; p++) {
        sqlite3_bind_int64(st, 2 + 3 * p, (int64_t)nl[p].bytes);
        sqlite3_bind_int(st, 3 + 3 * p, (int)nl[p].source);
        sqlite3_bind_text(st, 4 + 3 * p, nl[p].detail, -1, SQLITE_TRANSIENT);
    }
    int rc = pw__store_run(q, st, d, "update host limits");
    if (rc == 0)
        memcpy(hs->row_limit, nl, sizeof(nl));
    return rc;
}

/* Writes the host's row when this put's instance, OS (build, architecture, agent version too),
 * counter width, source kind, interval or limits are not what it names. */
static int host_row_sync(pw_store_sql_t *q, pw_store_hstate_t *hs, const pw_store_host_t *h,
                         uint64_t seq, uint64_t ts, pw_diag_t *d)
{
    const char *os = h->os ? h->os : "";
    char arch[sizeof(hs->row_arch)], av[sizeof(hs->row_agent_version)];
    snprintf(arch, sizeof(arch), "%s", h->arch ? h->arch : "");
    snprintf(av, sizeof(av), "%s", h->agent_version ? h->agent_version : "");
    int lr = host_limits_sync(q, hs, h, d);
    if (lr != 0)
        return lr;
    if (hs->row_known && hs->row_width == h->counter_width &&
        hs->row_source_kind == h->source_kind && hs->row_interval_ms == h->interval_ms &&
        same_id(hs->row_agent, hs->row_agent_len, h->agent_id, h->agent_id_len) &&
        same_id(hs->row_boot, hs->row_boot_len, h->boot_id, h->boot_id_len) &&
        strcmp(hs->row_os, os) == 0 && hs->row_os_build == h->os_build &&
        strcmp(hs->row_arch, arch) == 0 && strcmp(hs->row_agent_version, av) == 0)
        return 0;
    char *nos = pw_strdup(os);
    if (nos == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "host", "out of memory");
    sqlite3_stmt *st = pw__store_stmt(q, S_HOST_UPD);
    sqlite3_bind_int64(st, 1, hs->id);
    sqlite3_bind_text(st, 2, os, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int)h->counter_width);
    sqlite3_bind_blob(st, 4, h->agent_id, (int)h->agent_id_len, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, h->boot_id, (int)h->boot_id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)ts);
    sqlite3_bind_int64(st, 7, (int64_t)seq);
    sqlite3_bind_int(st, 8, h->source_kind);
    sqlite3_bind_int64(st, 9, (int64_t)h->interval_ms);
    sqlite3_bind_int64(st, 10, (int64_t)h->os_build);
    sqlite3_bind_text(st, 11, arch, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, av, -1, SQLITE_STATIC);
    int rc = pw__store_run(q, st, d, "update host");
    if (rc != 0) {
        pw_free(nos);
        return rc;
    }
    pw_free(hs->row_os);
    hs->row_os = nos;
    hs->row_width = h->counter_width;
    hs->row_source_kind = h->source_kind;
    hs->row_interval_ms = h->interval_ms;
    hs->row_os_build = h->os_build;
    memcpy(hs->row_arch, arch, sizeof(arch));
    memcpy(hs->row_agent_version, av, sizeof(av));
    memcpy(hs->row_agent, h->agent_id, h->agent_id_len);
    memcpy(hs->row_boot, h->boot_id, h->boot_id_len);
    hs->row_agent_len = h->agent_id_len;
    hs->row_boot_len = h->boot_id_len;
    hs->row_known = 1;
    return 0;
}

/* The first steps of a put: the host's state, its agent instance, the duplicate check, and
 * closing the open chunk when the sample cannot join it (another window, full, older than its
 * newest sample, another counter width). Returns 0, PW_STORE_DUPLICATE or a negative code. */
static int put_prepare(pw_store_sql_t *q, const pw_store_host_t *h, uint64_t seq, uint64_t ts,
                       pw_store_hstate_t **out, pw_diag_t *d)
{
    pw_store_hstate_t *hs;
    int rc = pw__store_host_get(q, h, &hs, d);
    if (rc != 0)
        return rc;
    if (!hs->inst_known || !same_id(hs->agent, hs->agent_len, h->agent_id, h->agent_id_len) ||
        !same_id(hs->boot, hs->boot_len, h->boot_id, h->boot_id_len)) {
        rc = inst_load(q, hs, h, d);
        if (rc != 0)
            return rc;
        hs->chain = 0; /* another agent instance: another codec chain */
    }
    if (hs->inst_has_seq && seq <= hs->inst_seq)
        return PW_STORE_DUPLICATE;
    uint64_t ws = window_of(q, hs, ts);
    if (hs->nsamples > 0 && (ws != hs->window_start || hs->nsamples >= q->opts.chunk_max_samples ||
                             ts < hs->t1 || h->counter_width != hs->width)) {
        rc = pw__store_close_chunk(q, hs, d);
        if (rc != 0)
            return rc;
    }
    *out = hs;
    return 0;
}

/* Writes the record in q->frame (one codec frame) for sample `seq` at `ts` into the host's
 * open chunk (creating the chunk row first), then the gap row, and the instance and host rows
 * when they change. A group commit of one sample then writes the pages of that record alone
 * (the instance and host rows were two more 16-KB pages in the WAL at every commit): the
 * newest sample of the open chunk is where the last seq and time are read (S_INST_GET,
 * S_HOSTS_ALL), and sealing a chunk writes them into both rows (pw__store_close_chunk). */
static int put_record(pw_store_sql_t *q, const pw_store_host_t *h, pw_store_hstate_t *hs,
                      uint64_t seq, uint64_t ts, uint64_t gap_before, pw_diag_t *d)
{
    int rc;
    sqlite3_stmt *st;
    if (hs->chunk_id == 0) {
        st = pw__store_stmt(q, S_CHUNK_INS);
        sqlite3_bind_int64(st, 1, hs->id);
        sqlite3_bind_int64(st, 2, (int64_t)hs->window_start);
        sqlite3_bind_int64(st, 3, (int64_t)ts);
        sqlite3_bind_int(st, 4, (int)hs->width);
        sqlite3_bind_int64(st, 5, (int64_t)seq);
        if ((rc = pw__store_run(q, st, d, "insert chunk")) != 0)
            return rc;
        hs->chunk_id = sqlite3_last_insert_rowid(q->db);
        if ((rc = pw__store_totals_chunk_new(q, hs, d)) != 0)
            return rc;
    }
    st = pw__store_stmt(q, S_ROWS_INS);
    sqlite3_bind_int64(st, 1, hs->chunk_id);
    sqlite3_bind_int64(st, 2, hs->nsamples);
    sqlite3_bind_int64(st, 3, (int64_t)seq);
    sqlite3_bind_int64(st, 4, (int64_t)ts);
    sqlite3_bind_blob(st, 5, q->frame.data, (int)q->frame.len, SQLITE_STATIC);
    if ((rc = pw__store_run(q, st, d, "insert chunk row")) != 0)
        return rc;
    if (hs->nsamples == 0) {
        hs->t0 = ts;
        hs->first_seq = seq;
    }
    hs->t1 = ts;
    hs->last_seq = seq;
    hs->nsamples++;

    if (!hs->inst_here && (rc = inst_move_here(q, hs, h, seq, ts, d)) != 0)
        return rc;
    if ((rc = host_row_sync(q, hs, h, seq, ts, d)) != 0)
        return rc;
    if (gap_before > 0) {
        st = pw__store_stmt(q, S_GAP_INS);
        sqlite3_bind_int64(st, 1, hs->id);
        sqlite3_bind_int64(st, 2, (int64_t)ts);
        sqlite3_bind_int64(st, 3, (int64_t)seq);
        sqlite3_bind_int64(st, 4, (int64_t)gap_before);
        if ((rc = pw__store_run(q, st, d, "insert gap")) != 0)
            return rc;
    }
    hs->inst_seq = seq;
    hs->inst_ts = ts;
    hs->inst_has_seq = 1;
    hs->inst_dirty = 1;
    return 0;
}

/* The indexes in rows[0..n) (the table after `msg`) of the rows a delta of changes only
 * changed, in q->chg; NULL for a keyframe, a delta that adds, resets or drops rows, or
 * when memory runs out (the live form then compares every row). */
static const uint32_t *changed_rows(pw_store_sql_t *q, const Poolwatch__V1__Sample *msg,
                                    const pw_row_t *rows, size_t n, size_t *nchg)
{
    const Poolwatch__V1__Changes *c = msg->changes;
    if (msg->keyframe || (msg->rows != NULL && msg->rows->n_key_gap > 0) ||
        msg->n_vanished_gap > 0 || c == NULL)
        return NULL;
    if (c->n_key_gap > q->chg_cap) {
        uint32_t *np = pw_realloc(q->chg, c->n_key_gap * sizeof(*np));
        if (np == NULL)
            return NULL;
        q->chg = np;
        q->chg_cap = c->n_key_gap;
    }
    uint32_t key = 0;
    size_t at = 0;
    for (size_t i = 0; i < c->n_key_gap; i++) {
        key = i == 0 ? c->key_gap[0] : key + c->key_gap[i];
        at += pw_rows_lower_bound(rows + at, n - at, key);
        if (at >= n || rows[at].key != key)
            return NULL;
        q->chg[i] = (uint32_t)at;
    }
    *nchg = c->n_key_gap;
    return q->chg;
}

static int put_locked(pw_store_sql_t *q, const pw_store_host_t *h, const pw_sample_t *s,
                      uint64_t gap_before, int *wrote, pw_diag_t *d)
{
    pw_store_hstate_t *hs;
    uint64_t ts = s->timestamp_ms;
    int rc = put_prepare(q, h, s->seq, ts, &hs, d);
    if (rc != 0)
        return rc;
    if (!hs->enc_live) {
        /* a fresh encoder numbers tags anew: keys of earlier records mean other tags */
        if (hs->nsamples > 0)
            pw__store_live_drop(hs);
        if (pw_delta_enc_init(&hs->enc, h->counter_width) != 0)
            return pw_diag_set(d, PW_EINVAL, 0, 0, "counter_width", "bad counter width");
        hs->enc_live = 1;
        hs->width = h->counter_width;
        hs->window_start = window_of(q, hs, ts);
    }
    /* The chunk's own numbering: agent seqs restart with every boot, the codec wants growth.
     * A fresh encoder starts with a dict_reset keyframe, also after frames of an agent's chain
     * (pw_store_put_frame) in the same chunk. */
    pw_sample_t tmp = *s;
    tmp.seq = (uint64_t)hs->nsamples + 1;
    const Poolwatch__V1__Sample *msg;
    rc = pw_delta_encode(&hs->enc, &tmp, 0, &msg, d);
    if (rc != 0) {
        if (hs->nsamples == 0)
            pw__store_chunk_reset(hs);
        return rc; /* nothing written for this sample: the transaction stays good */
    }
    *wrote = 1; /* the encoder moved on: from here a failure must roll back */
    hs->chain = 0;
    pw_buf_reset(&q->frame);
    rc = pw_codec_pack_sample(msg, FRAME_MAX, &q->frame);
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "sample", "packing: %s", pw_strerror(rc));
    rc = put_record(q, h, hs, s->seq, ts, gap_before, d);
    if (rc == 0) { /* the encoder's base is now this sample's table */
        pw__store_totals_put(hs, ts, &s->totals);
        size_t nchg = 0;
        const uint32_t *chg = changed_rows(q, msg, hs->enc.prev, hs->enc.nprev, &nchg);
        pw__store_live_add(q, hs, ts, hs->enc.prev, hs->enc.nprev, &hs->enc.dict, chg, nchg);
    }
    return rc;
}

static int put_frame_locked(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d)
{
    pw_store_hstate_t *hs;
    uint64_t ts = dec->timestamp_ms;
    int rc = put_prepare(q, h, dec->seq, ts, &hs, d);
    if (rc != 0)
        return rc;
    if (hs->enc_live) {
        /* Records of pw_store_put in this chunk: their encoder's base is not what the frames
         * below leave in a reader's decoder, so a later pw_store_put starts over. */
        pw_delta_enc_close(&hs->enc);
        hs->enc_live = 0;
    }
    if (hs->nsamples == 0) {
        hs->width = dec->width;
        hs->window_start = window_of(q, hs, ts);
        hs->chain = 0;
    }
    pw_buf_reset(&q->frame);
    if (follows && hs->chain && base_seq == hs->chain_seq && payload != NULL) {
        /* The chunk's reader holds exactly the agent's base: the frame as received. */
        uint8_t hdr[PW_FRAME_HEADER];
        pw_frame_put_header(hdr, (uint32_t)len);
        rc = pw_buf_append(&q->frame, hdr, sizeof(hdr));
        rc = rc ? rc : pw_buf_append(&q->frame, payload, len);
    } else {
        /* A chunk start, or the chain broke (keyframe, dict_reset, a sample not stored, a
         * gap): a keyframe of the decoder's table, with its whole dictionary. */
        rc = pw_delta_dec_pack_keyframe(dec, gap_before, FRAME_MAX, &q->frame);
        /* its dictionary may number tags otherwise than the chunk's earlier records */
        if (hs->nsamples > 0)
            pw__store_live_drop(hs);
    }
    if (rc != 0)
        return pw_diag_set(d, rc, 0, 0, "sample", "packing: %s", pw_strerror(rc));
    rc = put_record(q, h, hs, dec->seq, ts, gap_before, d);
    if (rc == 0) {
        pw__store_totals_put(hs, ts, &dec->totals);
        hs->chain = 1;
        hs->chain_seq = dec->seq;
        /* after an apply of changes only, dec->idx lists the rows it changed */
        pw__store_live_add(q, hs, ts, dec->rows, dec->n, &dec->dict,
                           dec->n_idx != SIZE_MAX ? dec->idx : NULL,
                           dec->n_idx != SIZE_MAX ? dec->n_idx : 0);
    }
    return rc;
}

/* Writes the instance and host rows that puts left behind their open chunks, so that a store
 * closed cleanly holds them exact (after a crash they are read from the open chunks), and the
 * open chunks' totals buckets. One transaction; a failure leaves them to be read from there (the
 * chunks' totals replayed), and so does a checkpointer holding the write lock (a close does not
 * wait for it). */
void pw__store_sync_rows(pw_store_sql_t *q)
{
    if (q->in_txn || q->db == NULL || pw__store_ckpt_holding(q))
        return;
    int rc = 0, began = 0;
    for (size_t i = 0; rc == 0 && i < q->nslots; i++) {
        pw_store_hstate_t *hs = q->slots[i];
        if (hs == NULL || hs->nsamples == 0 || hs->hot == NULL)
            continue;
        if (!began && (rc = pw__store_begin(q, NULL)) != 0)
            break;
        began = 1;
        rc = pw__store_totals_seal(q, hs, NULL);
    }
    for (size_t i = 0; rc == 0 && i < q->nslots; i++) {
        pw_store_hstate_t *hs = q->slots[i];
        if (hs == NULL || !hs->inst_known || !hs->inst_dirty)
            continue;
        if (!began && (rc = pw__store_begin(q, NULL)) != 0)
            break;
        began = 1;
        sqlite3_stmt *s = pw__store_stmt(q, S_INST_AWAY);
        sqlite3_bind_blob(s, 1, hs->agent, (int)hs->agent_len, SQLITE_STATIC);
        sqlite3_bind_blob(s, 2, hs->boot, (int)hs->boot_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, (int64_t)hs->inst_seq);
        sqlite3_bind_int64(s, 4, (int64_t)hs->inst_ts);
        rc = pw__store_run(q, s, NULL, "update agent instance");
        if (rc == 0) { /* its newest put is the host's newest sample */
            s = pw__store_stmt(q, S_HOST_SEAL);
            sqlite3_bind_int64(s, 1, hs->id);
            sqlite3_bind_int64(s, 2, (int64_t)hs->inst_seq);
            sqlite3_bind_int64(s, 3, (int64_t)hs->inst_ts);
            rc = pw__store_run(q, s, NULL, "update host");
        }
    }
    if (began && (rc != 0 || pw__store_sql_commit(q, NULL) != 0)) {
        pw__store_abort_txn(q);
        return;
    }
    for (size_t i = 0; began && i < q->nslots; i++)
        if (q->slots[i] != NULL)
            q->slots[i]->inst_dirty = 0;
}

/* ---- entry points ------------------------------------------------------------------------ */

int pw__store_sql_put(pw_store_sql_t *q, const pw_store_host_t *h, const pw_sample_t *s,
                      uint64_t gap_before, pw_diag_t *d)
{
    int rc = pw__store_begin(q, d);
    if (rc != 0) {
        pw__store_abort_txn(q);
        return rc;
    }
    int wrote = 0;
    rc = put_locked(q, h, s, gap_before, &wrote, d);
    /* Codec refusals before anything was written leave the transaction as it was. */
    if (rc < 0 && (wrote || (rc != PW_EINVAL && rc != PW_ETOOBIG && rc != PW_ESEQ)))
        pw__store_abort_txn(q);
    return rc;
}

int pw__store_sql_put_frame(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d)
{
    int rc = pw__store_begin(q, d);
    if (rc == 0)
        rc = put_frame_locked(q, h, dec, payload, len, base_seq, follows, gap_before, d);
    /* Any failure may have closed a chunk or written a row: roll everything back. */
    if (rc < 0)
        pw__store_abort_txn(q);
    return rc;
}
