/* source_replay.c: "replay:FILE[,FILE...]", saved poolmon screens as a finite source.
 *
 * Every file is read and parsed at open (common/poolmon_text.h), so a file that cannot be read
 * or is not a poolmon capture fails the open with its name and line, before any sample is
 * produced. Then each sample() returns the next screen, files in the order given, and PW_EOF
 * after the last. Time stamps: a screen's own (from a time-stamp line in the file), else the
 * previous screen's + replay_interval_ms (0 = 15 min); the first screen of the first file gets
 * replay_start_ms (0 = now), the first unstamped screen of a later file the last time of the
 * previous file + the interval. File names cannot contain ',' (the separator). */
#include "source.h"
#include "source_internal.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"
#include "poolmon_text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct replay_s {
    pw_poolmon_doc_t *docs; /* one per file */
    size_t n_docs;
    size_t doc_i; /* next screen to return: docs[doc_i].screens[screen_i] */
    size_t screen_i;
} replay_t;

/* Reads the whole file into `b` (limited to the parser's input ceiling). */
static int read_file(const char *path, pw_buf_t *b, pw_diag_t *d)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        return pw_diag_set(d, e ? -e : PW_EIO, 0, 0, "file", "%s: cannot open: %s", path,
                           strerror(e));
    }
    char chunk[65536];
    int r = 0;
    for (;;) {
        size_t n = fread(chunk, 1, sizeof(chunk), f);
        if (n > 0 && (r = pw_buf_append(b, chunk, n)) != 0) {
            if (r == PW_ETOOBIG)
                pw_diag_set(d, r, 0, b->len, "file", "%s: larger than the %zu-byte input limit",
                            path, b->max);
            else
                pw_diag_set(d, r, 0, b->len, "file", "%s: out of memory while reading", path);
            break;
        }
        if (n < sizeof(chunk)) {
            if (ferror(f)) {
                int e = errno;
                r = pw_diag_set(d, e ? -e : PW_EIO, 0, b->len, "file", "%s: read error: %s", path,
                                strerror(e));
            }
            break;
        }
    }
    fclose(f);
    return r;
}

static int replay_open(pw_source_t *src, const char *arg, const pw_source_config_t *cfg,
                       pw_diag_t *d)
{
    replay_t *ctx = src->priv;
    if (arg == NULL || *arg == '\0')
        return pw_diag_set(d, PW_EINVAL, 0, 0, "source",
                           "replay needs files: replay:FILE[,FILE...]");
    size_t n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    ctx->docs = pw_calloc(n, sizeof(*ctx->docs));
    if (ctx->docs == NULL)
        return PW_ENOMEM;

    uint64_t interval =
        cfg->replay_interval_ms ? cfg->replay_interval_ms : PW_POOLMON_INTERVAL_DEFAULT_MS;
    uint64_t next_ms = cfg->replay_start_ms ? cfg->replay_start_ms : (uint64_t)time(NULL) * 1000;
    const char *p = arg;
    for (size_t i = 0; i < n; i++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *path = pw_strndup(p, len);
        if (path == NULL)
            return PW_ENOMEM;
        int r = 0;
        if (len == 0)
            r = pw_diag_set(d, PW_EINVAL, 0, 0, "source", "replay: empty file name in '%s'", arg);
        pw_buf_t b;
        pw_buf_init(&b, PW_POOLMON_MAX_INPUT_DEFAULT);
        if (r == 0)
            r = read_file(path, &b, d);
        if (r == 0) {
            pw_poolmon_opts_t o = {
                .start_ms = next_ms, .interval_ms = interval, .allow_cut_last_line = 1};
            pw_diag_t pd;
            pw_diag_clear(&pd);
            r = pw_poolmon_parse((const char *)b.data, b.len, &o, &ctx->docs[i], &pd);
            if (r != 0 && pd.line != 0)
                pw_diag_set(d, r, pd.line, pd.offset, pd.field, "%s:%u: %s", path, pd.line, pd.msg);
            else if (r != 0)
                pw_diag_set(d, r, 0, pd.offset, pd.field, "%s: %s", path, pd.msg);
        }
        pw_buf_close(&b);
        pw_free(path);
        if (r != 0)
            return r;
        ctx->n_docs = i + 1;
        const pw_poolmon_doc_t *doc = &ctx->docs[i];
        if (doc->cut_line)
            PW_LOG_WARN("replay",
                        "%.*s:%u: the last line is cut inside a row (file truncated?): "
                        "left out",
                        (int)len, p, doc->cut_line);
        next_ms = doc->screens[doc->n_screens - 1].timestamp_ms + interval;
        p = comma ? comma + 1 : p + len;
    }

    src->info.kind = PW_SOURCE_POOLMON_REPLAY;
    src->info.counter_width = 32; /* poolmon shows ULONG counters */
    /* A capture carries no limit: the agent's [limits] section is the only source of one, as
     * for the other sources; without it the limit stays unknown (0), never a guess. */
    if (cfg->nonpaged_limit_bytes)
        src->info.nonpaged_limit =
            (pw_pool_limit_t){cfg->nonpaged_limit_bytes, PW_LIMIT_CONFIGURED, "configured"};
    if (cfg->paged_limit_bytes)
        src->info.paged_limit =
            (pw_pool_limit_t){cfg->paged_limit_bytes, PW_LIMIT_CONFIGURED, "configured"};
    snprintf(src->info.os_family, sizeof(src->info.os_family), "windows");
    for (size_t i = 0; i < ctx->n_docs && src->info.physical_memory_bytes == 0; i++)
        for (size_t j = 0; j < ctx->docs[i].n_screens; j++) {
            const pw_poolmon_header_t *h = &ctx->docs[i].screens[j].header;
            if (h->has & PW_POOLMON_HAS_MEMORY) {
                src->info.physical_memory_bytes = h->memory_kb * 1024;
                break;
            }
        }
    return 0;
}

static int replay_sample(pw_source_t *src, pw_sample_t *out, pw_diag_t *d)
{
    replay_t *ctx = src->priv;
    while (ctx->doc_i < ctx->n_docs && ctx->screen_i >= ctx->docs[ctx->doc_i].n_screens) {
        ctx->doc_i++;
        ctx->screen_i = 0;
    }
    if (ctx->doc_i >= ctx->n_docs)
        return PW_EOF;
    const pw_poolmon_screen_t *s = &ctx->docs[ctx->doc_i].screens[ctx->screen_i++];
    int r = pw_poolmon_screen_to_sample(s, out);
    if (r != 0)
        return pw_diag_set(d, r, s->line, 0, "", "replay: out of memory");
    out->totals.nonpaged_limit_bytes = src->info.nonpaged_limit.bytes;
    out->totals.paged_limit_bytes = src->info.paged_limit.bytes;
    return 0;
}

static void replay_close(pw_source_t *src)
{
    replay_t *ctx = src->priv;
    if (ctx == NULL || ctx->docs == NULL)
        return;
    for (size_t i = 0; i < ctx->n_docs; i++)
        pw_poolmon_doc_close(&ctx->docs[i]);
    pw_free(ctx->docs);
    ctx->docs = NULL;
}

const pw_source_ops_t pw__source_replay_ops = {
    .name = "replay",
    .description = "saved poolmon screens: replay:FILE[,FILE...], one sample per screen",
    .priv_size = sizeof(replay_t),
    .open = replay_open,
    .sample = replay_sample,
    .close = replay_close,
};
