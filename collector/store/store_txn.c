/* store_txn.c: statements and transactions. The first put after a commit opens a BEGIN
 * IMMEDIATE transaction, the collector's group commit ends it (COMMIT, the WAL fsync'ed); any
 * failure inside rolls all of it back and forgets what memory held about it. */
#include "store_internal.h"

int pw__store_sqlfail(pw_store_sql_t *q, int rc, pw_diag_t *d, const char *what)
{
    int prim = rc & 0xff;
    int code = prim == SQLITE_FULL ? PW_ENOSPC : prim == SQLITE_NOMEM ? PW_ENOMEM : PW_ESTORE;
    return pw_diag_set(d, code, 0, 0, what, "sqlite: %s: %s (code %d)", what, sqlite3_errmsg(q->db),
                       rc);
}

sqlite3_stmt *pw__store_stmt(pw_store_sql_t *q, int i)
{
    sqlite3_stmt *s = q->st[i];
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

/* Runs a statement that returns no row. */
int pw__store_run(pw_store_sql_t *q, sqlite3_stmt *s, pw_diag_t *d, const char *what)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        rc = SQLITE_DONE;
    int r = rc == SQLITE_DONE ? 0 : pw__store_sqlfail(q, rc, d, what);
    sqlite3_reset(s);
    return r;
}

/* Rolls back the open transaction (if any) and forgets what memory held about it. */
void pw__store_abort_txn(pw_store_sql_t *q)
{
    if (!sqlite3_get_autocommit(q->db)) {
        sqlite3_stmt *s = pw__store_stmt(q, S_ROLLBACK);
        sqlite3_step(s);
        sqlite3_reset(s);
    }
    q->in_txn = 0;
    pw__store_forget_hosts(q);
    pw_tagdict_truncate(&q->tags, q->tags_committed);
    /* what was compacted or merged may be back: look again */
    q->sealed_from = q->unpaged_from = q->merge_scan = 0;
    q->totals_todo = 1;
}

int pw__store_begin(pw_store_sql_t *q, pw_diag_t *d)
{
    if (q->in_txn)
        return 0;
    int rc = pw__store_run(q, pw__store_stmt(q, S_BEGIN), d, "begin");
    if (rc == 0)
        q->in_txn = 1;
    return rc;
}

int pw__store_sql_commit(pw_store_sql_t *q, pw_diag_t *d)
{
    return pw__store_commit_as(q, 0, d);
}

int pw__store_commit_as(pw_store_sql_t *q, int background, pw_diag_t *d)
{
    if (!q->in_txn)
        return 0;
    int rc = pw__store_run(q, pw__store_stmt(q, S_COMMIT), d, "commit");
    if (rc != 0) {
        pw__store_abort_txn(q);
        return rc;
    }
    q->in_txn = 0;
    q->tags_committed = pw_tagdict_count(&q->tags);
    pw__store_wal_after_commit(q, background);
    return 0;
}
