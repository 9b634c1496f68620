/* store_checkpoint.c: WAL checkpoints, in the background (a thread with its own connection)
 * and on request (pw_store_checkpoint). */
#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "alloc.h"
#include "store_internal.h"

/* SQLite's automatic checkpoint runs inside the COMMIT that crosses wal_autocheckpoint pages:
 * on the collector's loop, it copies the WAL into the database and fsyncs it while no sample
 * is read and no ack is sent. A thread with its own connection does it instead, every
 * CKPT_MS: a PASSIVE checkpoint never blocks the writer, and readers and the writer never
 * wait for it (https://sqlite.org/wal.html#checkpointing, sqlite3_wal_checkpoint_v2). The WAL
 * restarts from its beginning at the first commit after a checkpoint that caught up. */
#define CKPT_MS 1000
/* A store without a commit for this long is idle: the WAL file is truncated to zero bytes
 * (TRUNCATE checkpoint), so an idle collector's disk use is its database file alone. */
#define IDLE_MS 5000
/* A TRUNCATE holds the write lock while the file system truncates the WAL file: under heavy I/O
 * that took longer than the writer's 5-s busy timeout (a put failed with "database is locked"),
 * and the writer then waited for it on the collector's loop, which answered no signal meanwhile
 * (a SIGTERM waited over 20 s in a loaded suite). So only a small WAL is truncated when idle (a
 * short hold: what a file system frees for at most this much); a larger one, left by a burst, is
 * reused by the next commits, and truncated by the writer's own connection at the retention
 * pass once idle (pw__store_wal_trim_idle) or at close. */
#define IDLE_TRUNC_MAX (4u << 20)
/* The writer's busy handler waits for a hold of the checkpointer (a small WAL's truncation) up
 * to this long before the put fails (60 s before: the loop, and a SIGTERM, waited as long):
 * failing at once would make every agent resend, waiting longer holds the collector's loop. */
#define CKPT_HOLD_MAX_MS 5000

struct pw_store_ckpt_s {
    sqlite3 *db;
    uv_thread_t th; /* libuv's threads: the same code on POSIX and Windows */
    uv_mutex_t mu;
    uv_cond_t cv;
    int stop;
    char *wal_path;
    _Atomic uint64_t last_commit_ms; /* monotonic, set by the writer's thread */
    _Atomic int holding; /* 1 while this thread runs a checkpoint that takes the write lock */
    int detached;        /* stopped during a hold: the thread frees all this itself (under mu) */
    _Atomic uint64_t hold_gen;       /* counts the holds (from 1): the writer waits once per hold */
    _Atomic uint64_t writer_wait_ms; /* monotonic, the writer's busy handler's last call */
};

static uint64_t mono_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* One read on the checkpointer's connection: it then knows the database is in WAL mode and
 * maps the WAL. Returns an SQLite result code. */
static int ckpt_touch(sqlite3 *db)
{
    return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
}

static void ckpt_free(pw_store_ckpt_t *k)
{
    sqlite3_close(k->db);
    uv_mutex_destroy(&k->mu);
    uv_cond_destroy(&k->cv);
    pw_free(k->wal_path);
    pw_free(k);
}

static void ckpt_main(void *arg)
{
    pw_store_ckpt_t *k = arg;
    uv_mutex_lock(&k->mu);
    while (!k->stop) {
        uv_cond_timedwait(&k->cv, &k->mu, (uint64_t)CKPT_MS * 1000000u);
        if (k->stop)
            break;
        uv_mutex_unlock(&k->mu);
        /* Errors (busy, disk full) leave the WAL as it is: the next round tries again. A
         * connection that has not read the database since it opened has not opened its WAL
         * either, and its checkpoint is a no-op that reports success with log = -1 (SQLite
         * 3.40): the WAL then grew without end. A read opens it (ckpt_touch). */
        int log = 0, done = 0;
        int r = sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (r == SQLITE_OK && log < 0 && ckpt_touch(k->db) == SQLITE_OK)
            sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        /* Idle, every frame copied and a small file: TRUNCATE takes the write lock for a moment
         * and empties it. Not when the writer waited for a lock since the last round (it yields
         * to the writer: the next round tries again); a put that comes during it waits for it
         * (writer_busy). */
        uint64_t wal = 0;
        if (r == SQLITE_OK && log > 0 && done == log &&
            mono_ms() - atomic_load(&k->last_commit_ms) >= IDLE_MS &&
            mono_ms() - atomic_load(&k->writer_wait_ms) >= CKPT_MS &&
            (wal = pw__store_file_size(k->wal_path, "")) > 0 && wal <= IDLE_TRUNC_MAX) {
            uv_mutex_lock(&k->mu); /* a stop decides under mu whether it waits for this */
            int go = !k->stop;
            if (go)
                atomic_fetch_add(&k->hold_gen, 1);
            atomic_store(&k->holding, go);
            uv_mutex_unlock(&k->mu);
            if (go)
                sqlite3_wal_checkpoint_v2(k->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
            atomic_store(&k->holding, 0);
        }
        uv_mutex_lock(&k->mu);
    }
    int detached = k->detached;
    uv_mutex_unlock(&k->mu);
    if (detached)
        ckpt_free(k);
}

/* The writer connection's busy handler (sqlite3_busy_handler): SQLite's busy timeout, except
 * that a hold of the checkpointer thread is waited for up to CKPT_HOLD_MAX_MS (it ends when its
 * I/O does; failing the put would only make every agent resend), once per hold: a hold that
 * outlasted a whole wait makes the next calls fail at once while it lasts (each would hold the
 * collector's loop 5 s more: a SIGTERM waited 28 s behind such waits for a 30-s hold). Returns
 * 1 to try again. */
static int writer_busy(void *arg, int count)
{
    pw_store_sql_t *q = arg;
    pw_store_ckpt_t *k = q->ckpt;
    uint64_t now = mono_ms();
    if (count == 0)
        q->busy_other_ms = q->busy_ckpt_ms = 0;
    else if (q->busy_was_ckpt)
        q->busy_ckpt_ms += now - q->busy_last_ms;
    else
        q->busy_other_ms += now - q->busy_last_ms;
    int ckpt = k != NULL && atomic_load(&k->holding);
    uint64_t gen = ckpt ? atomic_load(&k->hold_gen) : 0;
    if (ckpt && gen == q->busy_gave_up)
        return 0;
    if (q->busy_other_ms >= (uint64_t)q->opts.busy_timeout_ms ||
        q->busy_ckpt_ms >= CKPT_HOLD_MAX_MS) {
        if (ckpt && q->busy_ckpt_ms >= CKPT_HOLD_MAX_MS)
            q->busy_gave_up = gen;
        return 0;
    }
    if (k != NULL)
        atomic_store(&k->writer_wait_ms, now);
    q->busy_was_ckpt = ckpt;
    q->busy_last_ms = now;
    uv_sleep(count < 10 ? 1 : 5);
    return 1;
}

void pw__store_ckpt_stop(pw_store_ckpt_t *k)
{
    if (k == NULL)
        return;
    /* A collector told to stop does not wait for the checkpointer: a round copying a large WAL
     * stops at its next page (SQLITE_INTERRUPT; what it copied stays valid), and a truncation
     * in progress, which nothing interrupts (the file system's), is left to finish on its own:
     * the thread then frees its state itself (the process is usually exiting). */
    uv_mutex_lock(&k->mu);
    k->stop = 1;
    k->detached = atomic_load(&k->holding);
    int detached = k->detached;
    uv_cond_signal(&k->cv);
    if (!detached)
        sqlite3_interrupt(k->db);
    uv_mutex_unlock(&k->mu);
    if (detached)
        return; /* never joined: its few resources go with the process */
    uv_thread_join(&k->th);
    ckpt_free(k);
}

/* Starts the checkpointer and turns the automatic checkpoint off; when it cannot start, the
 * automatic checkpoint stays on (slower, still correct). */
void pw__store_ckpt_start(pw_store_sql_t *q)
{
    pw_store_ckpt_t *k = pw_calloc(1, sizeof(*k));
    if (k == NULL)
        return;
    size_t pl = strlen(q->path);
    if ((k->wal_path = pw_malloc(pl + 5)) == NULL) {
        pw_free(k);
        return;
    }
    memcpy(k->wal_path, q->path, pl);
    memcpy(k->wal_path + pl, "-wal", 5);
    atomic_store(&k->last_commit_ms, mono_ms());
    if (sqlite3_open_v2(q->path, &k->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close(k->db);
        pw_free(k->wal_path);
        pw_free(k);
        return;
    }
    /* Short: a TRUNCATE waiting for the writer holds up the writer's next BEGIN meanwhile. */
    sqlite3_busy_timeout(k->db, 100);
    ckpt_touch(k->db); /* a failure is retried by the first round */
    if (uv_mutex_init(&k->mu) != 0) {
        sqlite3_close(k->db);
        pw_free(k->wal_path);
        pw_free(k);
        return;
    }
    if (uv_cond_init(&k->cv) != 0) {
        sqlite3_close(k->db);
        uv_mutex_destroy(&k->mu);
        pw_free(k->wal_path);
        pw_free(k);
        return;
    }
    if (uv_thread_create(&k->th, ckpt_main, k) != 0) {
        sqlite3_close(k->db);
        uv_mutex_destroy(&k->mu);
        uv_cond_destroy(&k->cv);
        pw_free(k->wal_path);
        pw_free(k);
        return;
    }
    if (pw__store_exec(q, "PRAGMA wal_autocheckpoint=0", NULL, "wal_autocheckpoint") != 0) {
        pw__store_ckpt_stop(k);
        return;
    }
    q->ckpt = k;
    sqlite3_busy_handler(q->db, writer_busy, q); /* replaces the busy timeout */
}

int pw__store_sql_checkpoint(pw_store_sql_t *q, pw_diag_t *d)
{
    if (q->in_txn)
        return pw_diag_set(d, PW_EAGAIN, 0, 0, "checkpoint", "a transaction is open");
    /* Two checkpoints never run at once: SQLite answers SQLITE_BUSY at once, without the busy
     * handler, while the checkpointer thread runs its round (test_vacuum_after_retention failed
     * on that once). That round ends quickly: try again within the busy timeout. */
    uint64_t t0 = mono_ms();
    for (;;) {
        int log = 0, done = 0;
        int rc = sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
        if (rc == SQLITE_OK)
            return 0;
        if (rc != SQLITE_BUSY)
            return pw__store_sqlfail(q, rc, d, "checkpoint");
        if (mono_ms() - t0 >= (uint64_t)q->opts.busy_timeout_ms)
            return pw_diag_set(d, PW_EAGAIN, 0, 0, "checkpoint", "readers hold the WAL");
        uv_sleep(5);
    }
}

void pw__store_ckpt_poke(pw_store_sql_t *q)
{
    pw_store_ckpt_t *k = q->ckpt;
    if (k == NULL)
        return;
    uv_mutex_lock(&k->mu);
    uv_cond_signal(&k->cv);
    uv_mutex_unlock(&k->mu);
}

void pw__store_wal_after_commit(pw_store_sql_t *q, int background)
{
    if (q->memory)
        return;
    if (q->ckpt != NULL)
        atomic_store(&q->ckpt->last_commit_ms, mono_ms());
    uint64_t wal = pw__store_file_size(q->path, "-wal");
    if (wal > q->wal_max_seen)
        q->wal_max_seen = wal;
    uint64_t in_wal = (uint64_t)q->wal_pages * (uint64_t)q->page_size;
    if (in_wal <= q->opts.wal_max_bytes / 2)
        return;
    if (background && q->ckpt != NULL && in_wal <= q->opts.wal_max_bytes) {
        pw__store_ckpt_poke(q); /* its round now, not in a second */
        return;
    }
    /* PASSIVE on the writer's own connection between transactions: no writer to wait for,
     * and the only other reader is the checkpointer (busy: the next commit tries again). */
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done) == SQLITE_OK)
        q->wal_checkpoints++;
    if (log >= 0 && done == log)
        q->wal_pages = 0;
}

int pw__store_ckpt_holding(pw_store_sql_t *q)
{
    return q->ckpt != NULL && atomic_load(&q->ckpt->holding);
}

int pw__store_wal_idle(pw_store_sql_t *q)
{
    return q->ckpt != NULL && mono_ms() - atomic_load(&q->ckpt->last_commit_ms) >= IDLE_MS;
}

void pw__store_wal_trim(pw_store_sql_t *q)
{
    if (q->memory || q->in_txn || pw__store_file_size(q->path, "-wal") <= IDLE_TRUNC_MAX)
        return;
    pw__store_sql_checkpoint(q, NULL); /* busy (a reader): the next pass tries again */
}
