/* store_internal.h: between the store's thin API (store.c: arguments, timing, counters) and
 * its SQLite backend (store_sqlite.c). Not for other modules. */
#ifndef PW_STORE_INTERNAL_H
#define PW_STORE_INTERNAL_H

#include "store.h"

typedef struct pw_store_sql_s pw_store_sql_t;

struct pw_store_s {
    pw_store_sql_t *sql;
    pw_store_opts_t opts; /* defaults filled in */
    uint64_t puts, duplicates, commits, failed_commits, updates;
    uint64_t commit_us_total, commit_us_max;
};

int pw__store_sql_open(const char *path, const pw_store_opts_t *opts, pw_store_sql_t **out,
                       pw_diag_t *d);
void pw__store_sql_close(pw_store_sql_t *q);
int pw__store_sql_put(pw_store_sql_t *q, const pw_store_host_t *host, const pw_sample_t *s,
                      uint64_t gap_before, pw_diag_t *d);
int pw__store_sql_put_frame(pw_store_sql_t *q, const pw_store_host_t *h, const pw_delta_dec_t *dec,
                            const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                            uint64_t gap_before, pw_diag_t *d);
int pw__store_sql_commit(pw_store_sql_t *q, pw_diag_t *d);
int64_t pw__store_sql_retention(pw_store_sql_t *q, uint64_t now_ms, pw_diag_t *d);
int64_t pw__store_sql_series(pw_store_sql_t *q, const char *host, const uint8_t *tag,
                             size_t tag_len, pw_pool_t pool, uint64_t from_ms, uint64_t to_ms,
                             uint64_t step_ms, pw_store_series_t *out, pw_diag_t *d);
int pw__store_sql_latest(pw_store_sql_t *q, const char *host, pw_sample_t *out, pw_diag_t *d);
int pw__store_sql_totals(pw_store_sql_t *q, const char *host, uint64_t from_ms, uint64_t to_ms,
                         pw_store_totals_cb cb, void *arg, pw_diag_t *d);
int pw__store_sql_table_at(pw_store_sql_t *q, const char *host, uint64_t from_ms, pw_sample_t *out,
                           pw_diag_t *d);
int pw__store_sql_hosts(pw_store_sql_t *q, pw_store_host_info_t **out, size_t *n, pw_diag_t *d);
int pw__store_sql_last_seq(pw_store_sql_t *q, const uint8_t *agent_id, size_t agent_id_len,
                           const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq);
int pw__store_sql_stats(pw_store_sql_t *q, pw_store_stats_t *out, pw_diag_t *d);
int pw__store_sql_flush(pw_store_sql_t *q, pw_diag_t *d);
int64_t pw__store_sql_compact(pw_store_sql_t *q, uint64_t budget_us, pw_diag_t *d);
int pw__store_sql_checkpoint(pw_store_sql_t *q, pw_diag_t *d);
int pw__store_sql_set_max_bytes(pw_store_sql_t *q, uint64_t max_db_bytes, pw_diag_t *d);

#endif /* PW_STORE_INTERNAL_H */
