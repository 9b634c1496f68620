/* store.c: the store's public API: checks arguments, fills in option defaults, times
 * commits and counts puts; the work is in the store_*.c files (store_internal.h). */
#include "store.h"

#include <string.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "store_internal.h"

static uint64_t mono_us(void)
{
    return pw_clock_mono_us();
}

static int fill_opts(const pw_store_opts_t *in, pw_store_opts_t *o, pw_diag_t *d)
{
    memset(o, 0, sizeof(*o));
    if (in != NULL)
        *o = *in;
    if (o->raw_retention_ms == 0)
        o->raw_retention_ms = PW_STORE_DEFAULT_RAW_RETENTION_MS;
    if (o->m1_retention_ms == 0)
        o->m1_retention_ms = PW_STORE_DEFAULT_1MIN_RETENTION_MS;
    if (o->m15_retention_ms == 0)
        o->m15_retention_ms = PW_STORE_DEFAULT_15MIN_RETENTION_MS;
    if (o->chunk_window_ms == 0)
        o->chunk_window_ms = PW_STORE_DEFAULT_CHUNK_WINDOW_MS;
    if (o->chunk_max_samples == 0)
        o->chunk_max_samples = PW_STORE_DEFAULT_CHUNK_MAX_SAMPLES;
    if (o->zstd_level == 0)
        o->zstd_level = PW_STORE_DEFAULT_ZSTD_LEVEL;
    if (o->busy_timeout_ms == 0)
        o->busy_timeout_ms = PW_STORE_DEFAULT_BUSY_TIMEOUT_MS;
    if (o->wal_max_bytes == 0)
        o->wal_max_bytes = PW_STORE_DEFAULT_WAL_MAX_BYTES;
    if (o->live_series_max_bytes == 0)
        o->live_series_max_bytes = PW_STORE_DEFAULT_LIVE_SERIES_MAX_BYTES;
    if (o->wal_max_bytes < (1u << 20))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "wal_max_bytes", "WAL limit %llu bytes < 1 MiB",
                           (unsigned long long)o->wal_max_bytes);
    /* Windows must hold whole 1-min buckets, and 15-min buckets must not straddle two
     * windows more than they need to: a window divides 15 min or is a multiple of it. */
    uint64_t w = o->chunk_window_ms;
    if (w < 60000 || w % 60000 != 0 || (900000 % w != 0 && w % 900000 != 0) || w > 86400000ull)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "chunk_window_ms",
                           "chunk window %llu ms: must be a multiple of 60000 dividing 900000 "
                           "or a multiple of 900000, at most one day",
                           (unsigned long long)w);
    if (o->zstd_level < 1 || o->zstd_level > 19)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "zstd_level", "zstd level %d not in 1..19",
                           o->zstd_level);
    if (o->chunk_max_samples < 2 || o->chunk_max_samples > 100000)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "chunk_max_samples",
                           "chunk_max_samples %u not in 2..100000", o->chunk_max_samples);
    if (o->busy_timeout_ms < 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "busy_timeout_ms", "negative busy timeout");
    return 0;
}

int pw_store_open(const char *path, const pw_store_opts_t *opts, pw_store_t **out, pw_diag_t *d)
{
    if (path == NULL || out == NULL || path[0] == '\0')
        return pw_diag_set(d, PW_EINVAL, 0, 0, "path", "no database path");
    *out = NULL;
    pw_store_t *st = pw_calloc(1, sizeof(*st));
    if (st == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
    int rc = fill_opts(opts, &st->opts, d);
    if (rc == 0)
        rc = pw__store_sql_open(path, &st->opts, &st->sql, d);
    if (rc != 0) {
        pw_free(st);
        return rc;
    }
    *out = st;
    return 0;
}

void pw_store_close(pw_store_t *st)
{
    if (st == NULL)
        return;
    pw__store_sql_close(st->sql);
    pw_free(st);
}

static int check_id(const uint8_t *id, size_t len, const char *what, pw_diag_t *d)
{
    if (id == NULL || len == 0 || len > 64)
        return pw_diag_set(d, PW_EINVAL, 0, 0, what, "%s must be 1..64 bytes", what);
    return 0;
}

static int check_host(const pw_store_host_t *host, pw_diag_t *d)
{
    size_t nl = host->name ? strlen(host->name) : 0;
    if (nl == 0 || nl > 255)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "host", "host name must be 1..255 bytes");
    int rc = check_id(host->agent_id, host->agent_id_len, "agent_id", d);
    if (rc == 0)
        rc = check_id(host->boot_id, host->boot_id_len, "boot_id", d);
    if (rc != 0)
        return rc;
    if (host->counter_width != 32 && host->counter_width != 64)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "counter_width", "counter width %u not 32 or 64",
                           host->counter_width);
    return 0;
}

int pw_store_put(pw_store_t *st, const pw_store_host_t *host, const pw_sample_t *s,
                 uint64_t gap_before, pw_diag_t *d)
{
    if (st == NULL || host == NULL || s == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int rc = check_host(host, d);
    if (rc != 0)
        return rc;
    if (s->n > 0 && s->entries == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "entries", "entries missing");
    rc = pw__store_sql_put(st->sql, host, s, gap_before, d);
    if (rc == 0) {
        st->puts++;
        st->updates += s->n;
    } else if (rc == PW_STORE_DUPLICATE) {
        st->duplicates++;
    }
    return rc;
}

int pw_store_put_frame(pw_store_t *st, const pw_store_host_t *host, const pw_delta_dec_t *dec,
                       const uint8_t *payload, size_t len, uint64_t base_seq, int follows,
                       uint64_t gap_before, pw_diag_t *d)
{
    if (st == NULL || host == NULL || dec == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int rc = check_host(host, d);
    if (rc != 0)
        return rc;
    if (!dec->have_base)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "dec", "the decoder holds no table");
    if (dec->width != host->counter_width)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "counter_width",
                           "decoder counters are %u-bit, the host's %u-bit", dec->width,
                           host->counter_width);
    if (payload != NULL && (len == 0 || len > UINT32_MAX))
        return pw_diag_set(d, PW_EINVAL, 0, 0, "payload", "frame payload of %zu bytes", len);
    rc =
        pw__store_sql_put_frame(st->sql, host, dec, payload, len, base_seq, follows, gap_before, d);
    if (rc == 0) {
        st->puts++;
        st->updates += dec->n;
    } else if (rc == PW_STORE_DUPLICATE) {
        st->duplicates++;
    }
    return rc;
}

int pw_store_commit(pw_store_t *st, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL store");
    uint64_t t0 = mono_us();
    int rc = pw__store_sql_commit(st->sql, d);
    uint64_t us = mono_us() - t0;
    if (rc == 0) {
        st->commits++;
        st->commit_us_total += us;
        if (us > st->commit_us_max)
            st->commit_us_max = us;
    } else {
        st->failed_commits++;
    }
    return rc;
}

int64_t pw_store_retention(pw_store_t *st, uint64_t now_ms, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL store");
    int idle = pw__store_wal_idle(st->sql); /* before the pass's own commit */
    int64_t n = pw__store_sql_retention(st->sql, now_ms, d);
    if (n >= 0 && idle)
        pw__store_wal_trim(st->sql);
    return n;
}

int64_t pw_store_series(pw_store_t *st, const char *host, const uint8_t *tag, size_t tag_len,
                        pw_pool_t pool, uint64_t from_ms, uint64_t to_ms, uint64_t step_ms,
                        pw_store_series_t *out, pw_diag_t *d)
{
    if (st == NULL || host == NULL || out == NULL || tag == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    if (tag_len == 0 || tag_len > PW_TAG_MAX)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "tag", "tag length %zu not in 1..%d", tag_len,
                           PW_TAG_MAX);
    if ((unsigned)pool >= PW_POOL__COUNT)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "pool", "pool %d unknown", (int)pool);
    if (from_ms > to_ms)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "from_ms", "from %llu after to %llu",
                           (unsigned long long)from_ms, (unsigned long long)to_ms);
    out->n = 0;
    out->level = PW_STORE_RAW;
    return pw__store_sql_series(st->sql, host, tag, tag_len, pool, from_ms, to_ms, step_ms, out, d);
}

void pw_store_series_free(pw_store_series_t *s)
{
    if (s == NULL)
        return;
    pw_free(s->points);
    memset(s, 0, sizeof(*s));
}

int pw_store_latest(pw_store_t *st, const char *host, pw_sample_t *out, pw_diag_t *d)
{
    if (st == NULL || host == NULL || out == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    pw_sample_reset(out);
    return pw__store_sql_latest(st->sql, host, out, d);
}

int pw_store_hosts(pw_store_t *st, pw_store_host_info_t **out, size_t *n, pw_diag_t *d)
{
    if (st == NULL || out == NULL || n == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    *out = NULL;
    *n = 0;
    return pw__store_sql_hosts(st->sql, out, n, d);
}

static int check_name(const char *name, const char *field, pw_diag_t *d)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 255)
        return pw_diag_set(d, PW_EINVAL, 0, 0, field, "%s: 1..255 bytes", field);
    return 0;
}

int pw_store_gaps(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                  pw_store_gap_t **out, size_t *n, pw_diag_t *d)
{
    if (st == NULL || out == NULL || n == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    *out = NULL;
    *n = 0;
    int r = check_name(host, "host", d);
    if (r == 0 && from_ms > to_ms)
        r = pw_diag_set(d, PW_EINVAL, 0, 0, "from", "from %llu ms after to %llu ms",
                        (unsigned long long)from_ms, (unsigned long long)to_ms);
    return r ? r : pw__store_sql_gaps(st->sql, host, from_ms, to_ms, out, n, d);
}

void pw_store_gaps_free(pw_store_gap_t *gaps)
{
    pw_free(gaps);
}

int pw_store_host_limits(pw_store_t *st, const char *host, const pw_pool_limit_t *nonpaged,
                         const pw_pool_limit_t *paged, pw_diag_t *d)
{
    if (st == NULL || nonpaged == NULL || paged == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int r = check_name(host, "host", d);
    return r ? r : pw__store_sql_host_limits(st->sql, host, nonpaged, paged, d);
}

int pw_store_host_os(pw_store_t *st, const char *host, const char *os, pw_diag_t *d)
{
    if (st == NULL || os == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int r = check_name(host, "host", d);
    return r ? r : pw__store_sql_host_os(st->sql, host, os, d);
}

int pw_store_host_retire(pw_store_t *st, const char *host, int keep_history, uint64_t now_ms,
                         pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int r = check_name(host, "host", d);
    return r ? r : pw__store_sql_host_retire(st->sql, host, keep_history, now_ms, d);
}

int pw_store_host_stopped(pw_store_t *st, const char *host, uint64_t stopped_ms, const char *reason,
                          pw_diag_t *d)
{
    if (st == NULL || stopped_ms > (uint64_t)INT64_MAX)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "bad argument");
    int r = check_name(host, "host", d);
    return r ? r : pw__store_sql_host_stopped(st->sql, host, stopped_ms, reason ? reason : "", d);
}

int pw_store_host_rename(pw_store_t *st, const char *from, const char *to, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    int r = check_name(from, "host", d);
    r = r ? r : check_name(to, "name", d);
    return r ? r : pw__store_sql_host_rename(st->sql, from, to, d);
}

void pw_store_hosts_free(pw_store_host_info_t *hosts, size_t n)
{
    for (size_t i = 0; hosts != NULL && i < n; i++) {
        pw_free(hosts[i].name);
        pw_free(hosts[i].os);
    }
    pw_free(hosts);
}

int pw_store_last_seq(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                      const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq)
{
    if (st == NULL || seq == NULL || check_id(agent_id, agent_id_len, "agent_id", NULL) != 0 ||
        check_id(boot_id, boot_id_len, "boot_id", NULL) != 0)
        return PW_EINVAL;
    return pw__store_sql_last_seq(st->sql, agent_id, agent_id_len, boot_id, boot_id_len, seq);
}

int pw_store_last_seq_ts(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                         const uint8_t *boot_id, size_t boot_id_len, uint64_t *seq, uint64_t *ts_ms)
{
    if (st == NULL || seq == NULL || ts_ms == NULL ||
        check_id(agent_id, agent_id_len, "agent_id", NULL) != 0 ||
        check_id(boot_id, boot_id_len, "boot_id", NULL) != 0)
        return PW_EINVAL;
    return pw__store_sql_last_seq_ts(st->sql, agent_id, agent_id_len, boot_id, boot_id_len, seq,
                                     ts_ms);
}

int pw_store_agent_last_seq(pw_store_t *st, const uint8_t *agent_id, size_t agent_id_len,
                            uint64_t *seq)
{
    if (st == NULL || seq == NULL || check_id(agent_id, agent_id_len, "agent_id", NULL) != 0)
        return PW_EINVAL;
    return pw__store_sql_agent_last_seq(st->sql, agent_id, agent_id_len, seq);
}

int pw_store_stats(pw_store_t *st, pw_store_stats_t *out, pw_diag_t *d)
{
    if (st == NULL || out == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    memset(out, 0, sizeof(*out));
    int rc = pw__store_sql_stats(st->sql, out, d);
    out->puts = st->puts;
    out->duplicates = st->duplicates;
    out->commits = st->commits;
    out->failed_commits = st->failed_commits;
    out->updates = st->updates;
    out->commit_us_total = st->commit_us_total;
    out->commit_us_max = st->commit_us_max;
    return rc;
}

/* The arguments of a totals read: a store, a host, an output (`have_out`), a time range. */
static int totals_args(const pw_store_t *st, const char *host, int have_out, uint64_t from_ms,
                       uint64_t to_ms, pw_diag_t *d)
{
    if (st == NULL || host == NULL || !have_out)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    if (from_ms > (uint64_t)INT64_MAX || to_ms > (uint64_t)INT64_MAX || from_ms > to_ms)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "range", "time range invalid");
    return 0;
}

int pw_store_totals(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                    pw_store_totals_cb cb, void *arg, pw_diag_t *d)
{
    int r = totals_args(st, host, cb != NULL, from_ms, to_ms, d);
    return r ? r : pw__store_sql_totals(st->sql, host, from_ms, to_ms, cb, arg, d);
}

int64_t pw_store_totals_series(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                               uint64_t step_ms, pw_store_tseries_t *out, pw_diag_t *d)
{
    int r = totals_args(st, host, out != NULL, from_ms, to_ms, d);
    return r ? r : pw__store_sql_totals_series(st->sql, host, from_ms, to_ms, step_ms, 1, out, d);
}

int64_t pw_store_totals_buckets(pw_store_t *st, const char *host, uint64_t from_ms, uint64_t to_ms,
                                pw_store_tseries_t *out, pw_diag_t *d)
{
    int r = totals_args(st, host, out != NULL, from_ms, to_ms, d);
    return r ? r : pw__store_sql_totals_series(st->sql, host, from_ms, to_ms, 60000, 0, out, d);
}

void pw_store_tseries_free(pw_store_tseries_t *s)
{
    if (s == NULL)
        return;
    pw_free(s->points);
    memset(s, 0, sizeof(*s));
}

int pw_store_table_at(pw_store_t *st, const char *host, uint64_t from_ms, pw_sample_t *out,
                      pw_diag_t *d)
{
    if (st == NULL || host == NULL || out == NULL || from_ms > (uint64_t)INT64_MAX)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "bad argument");
    return pw__store_sql_table_at(st->sql, host, from_ms, out, d);
}

int64_t pw_store_compact(pw_store_t *st, uint64_t budget_ms, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL argument");
    return pw__store_sql_compact(st->sql, budget_ms * 1000u, d);
}

int pw_store_flush(pw_store_t *st, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL store");
    return pw__store_sql_flush(st->sql, d);
}

int pw_store_checkpoint(pw_store_t *st, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL store");
    return pw__store_sql_checkpoint(st->sql, d);
}

int pw_store_set_max_bytes(pw_store_t *st, uint64_t max_db_bytes, pw_diag_t *d)
{
    if (st == NULL)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "", "NULL store");
    st->opts.max_db_bytes = max_db_bytes;
    return pw__store_sql_set_max_bytes(st->sql, max_db_bytes, d);
}
