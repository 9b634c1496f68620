/* store_hosts.c: what an operator does to a host's row (store.h): the limits an import was
 * given, its agent's clean stop, retiring (history deleted, or kept under a new name) and renaming.
 * Rare calls, so the statements are prepared per call. Each runs in its own transaction. */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

void pw__store_col_limit(sqlite3_stmt *s, int i, pw_pool_limit_t *out)
{
    memset(out, 0, sizeof(*out));
    int64_t b = sqlite3_column_int64(s, i);
    int src = sqlite3_column_int(s, i + 1);
    const unsigned char *t = sqlite3_column_text(s, i + 2);
    out->bytes = b > 0 ? (uint64_t)b : 0;
    out->source = src >= PW_LIMIT_UNKNOWN && src <= PW_LIMIT_CONFIGURED ? (pw_limit_source_t)src
                                                                        : PW_LIMIT_UNKNOWN;
    snprintf(out->detail, sizeof(out->detail), "%s", t ? (const char *)t : "");
}

/* Runs `sql` with texts[0..n) bound to ?1..?n and nums[0..nn) to the parameters after them, in
 * a transaction of its own; returns the rows it changed (>= 0) or a negative code (PW_EEXIST
 * for a UNIQUE constraint). */
static int64_t run_one(pw_store_sql_t *q, const char *sql, const char *const *texts, size_t n,
                       const int64_t *nums, size_t nn, pw_diag_t *d, const char *what)
{
    if (q->in_txn) {
        int r = pw__store_sql_commit(q, d); /* the caller's pending puts go first */
        if (r != 0)
            return r;
    }
    int r = pw__store_begin(q, d);
    if (r != 0)
        return r;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK) {
        r = pw__store_sqlfail(q, rc, d, what);
    } else {
        for (size_t i = 0; i < n; i++)
            sqlite3_bind_text(s, (int)i + 1, texts[i], -1, SQLITE_STATIC);
        for (size_t i = 0; i < nn; i++)
            sqlite3_bind_int64(s, (int)(n + i) + 1, nums[i]);
        rc = sqlite3_step(s);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
            r = (rc & 0xff) == SQLITE_CONSTRAINT
                    ? pw_diag_set(d, PW_EEXIST, 0, 0, what, "%s: the name is taken", what)
                    : pw__store_sqlfail(q, rc, d, what);
    }
    int64_t changed = r == 0 ? sqlite3_changes(q->db) : 0;
    sqlite3_finalize(s);
    if (r == 0)
        r = pw__store_sql_commit(q, d);
    else
        pw__store_abort_txn(q);
    return r != 0 ? r : changed;
}

static int not_found(int64_t changed, const char *host, pw_diag_t *d)
{
    if (changed < 0)
        return (int)changed;
    if (changed == 0)
        return pw_diag_set(d, PW_ENOENT, 0, 0, "host", "no host '%s' in the store", host);
    return 0;
}

int pw__store_sql_host_limits(pw_store_sql_t *q, const char *host, const pw_pool_limit_t *nonpaged,
                              const pw_pool_limit_t *paged, pw_diag_t *d)
{
    const char *texts[] = {host, nonpaged->detail, paged->detail};
    int64_t nums[] = {(int64_t)nonpaged->bytes, nonpaged->source, (int64_t)paged->bytes,
                      paged->source};
    int64_t c = run_one(q,
                        "UPDATE hosts SET np_limit_detail=?2, p_limit_detail=?3, np_limit=?4,"
                        " np_limit_source=?5, p_limit=?6, p_limit_source=?7"
                        " WHERE name=?1 AND retired=0",
                        texts, 3, nums, 4, d, "host limits");
    return not_found(c, host, d);
}

int pw__store_sql_host_os(pw_store_sql_t *q, const char *host, const char *os, pw_diag_t *d)
{
    const char *texts[] = {host, os};
    int64_t c = run_one(q, "UPDATE hosts SET os=?2 WHERE name=?1 AND retired=0", texts, 2, NULL, 0,
                        d, "host os");
    /* the next put writes the row as before (its agent's OS), not only when that OS changes */
    pw_store_hstate_t *hs = c > 0 ? pw__store_host_find(q, host) : NULL;
    if (hs != NULL)
        hs->row_known = 0;
    return not_found(c, host, d);
}

int pw__store_sql_host_stopped(pw_store_sql_t *q, const char *host, uint64_t stopped_ms,
                               const char *reason, pw_diag_t *d)
{
    char why[32]; /* pw_store_host_info_t.stop_reason */
    snprintf(why, sizeof(why), "%s", stopped_ms ? reason : "");
    const char *texts[] = {host, why};
    int64_t nums[] = {(int64_t)stopped_ms};
    int64_t c =
        run_one(q, "UPDATE hosts SET stop_reason=?2, stopped_ms=?3 WHERE name=?1 AND retired=0",
                texts, 2, nums, 1, d, "host stopped");
    return not_found(c, host, d);
}

int pw__store_sql_host_retire(pw_store_sql_t *q, const char *host, int keep_history,
                              uint64_t now_ms, pw_diag_t *d)
{
    const char *texts[] = {host};
    int64_t nums[] = {(int64_t)now_ms};
    /* Kept history moves to a name no agent has ('#' is not a host-name character), so the
     * name is free for a new host; ON DELETE CASCADE removes the rest with the row. */
    int64_t c = keep_history ? run_one(q,
                                       "UPDATE hosts SET retired=1, name=name || '#retired-' || ?2"
                                       " WHERE name=?1 AND retired=0",
                                       texts, 1, nums, 1, d, "retire host")
                             : run_one(q, "DELETE FROM hosts WHERE name=?1 AND retired=0", texts, 1,
                                       NULL, 0, d, "delete host");
    int r = not_found(c, host, d);
    if (r == 0)
        pw__store_forget_host(q, host);
    return r;
}

int pw__store_sql_host_rename(pw_store_sql_t *q, const char *from, const char *to, pw_diag_t *d)
{
    const char *texts[] = {from, to};
    int64_t c = run_one(q, "UPDATE hosts SET name=?2 WHERE name=?1 AND retired=0", texts, 2, NULL,
                        0, d, "rename host");
    if (c == PW_EEXIST)
        return pw_diag_set(d, PW_EEXIST, 0, 0, "name", "a host named '%s' exists in the store", to);
    int r = not_found(c, from, d);
    if (r == 0)
        pw__store_forget_host(q, from);
    return r;
}
