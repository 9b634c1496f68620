/* cmd_import.c: `poolwatch import FILE... --host NAME [--interval 15m] [--start T]
 * [--nonpaged-limit SIZE] [--paged-limit SIZE] [--os TEXT]`.
 *
 * A FILE is saved poolmon screens, or a Linux host's saved /proc/slabinfo (and /proc/allocinfo)
 * dumps (common/linux_series.h), or a support bundle's directory (sosreport layout: its
 * proc/slabinfo, proc/allocinfo and the time of its `date` run). Each is checked locally with
 * the same parser the server uses, so a bad capture fails fast with FILE:LINE before any
 * upload, then POSTed to /api/v1/import.
 * Files without time stamps follow each other: file k+1 starts one interval after the last
 * screen the server stored for file k.
 * A FILE may also be the host's System-log events as XML (common/winevent.h: `wevtutil qe
 * System /f:xml`, Event Viewer's "Save as XML"): its pool events (srv 2019/2020, 2004) are
 * attached to the host, after the captures of the same command (the host must exist).
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "capture_order.h"
#include "clock.h"
#include "config.h"
#include "linux_series.h"
#include "winevent.h"
#include "winlimit.h"

#define PROGRESS_MIN_BYTES    ((size_t)1 << 20) /* smaller uploads finish too fast for a bar */
#define PW_IMPORT_BYTES_PER_S (1u << 20)        /* as the server's PW_API_IMPORT_BYTES_PER_S */

typedef struct progress_s {
    FILE *err;
    const char *file;
    int shown;
} progress_t;

static void on_progress(uint64_t sent, uint64_t total, void *arg)
{
    progress_t *p = arg;
    const int width = 30;
    int fill = total ? (int)(sent * (uint64_t)width / total) : width;
    char bar[64];
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, ' ', (size_t)(width - fill));
    bar[width] = '\0';
    fprintf(p->err, "\r%s [%s] %3d%% %.1f/%.1f MiB", p->file, bar,
            total ? (int)(sent * 100 / total) : 100, (double)sent / 1048576.0,
            (double)total / 1048576.0);
    fflush(p->err);
    p->shown = 1;
}

/* A support bundle's directory (sosreport layout): proc/slabinfo, proc/allocinfo when there,
 * the time from sos_commands/date/date_--utc (or .../date, or a top-level "date" file) as the
 * bundle's `date` run wrote it. Builds the text a shell loop would have saved: the time line,
 * then the dumps. Returns 0, or a negative code with `d` saying which file. */
static int load_bundle(const char *dir, char **data, size_t *len, pw_diag_t *d)
{
    static const char *const dates[] = {"sos_commands/date/date_--utc", "sos_commands/date/date",
                                        "date"};
    static const char *const dumps[] = {"proc/slabinfo", "proc/allocinfo"};
    char path[4096];
    char *out = NULL;
    size_t n = 0;
    int r = 0;
    /* any other directory (a folder of captures, a typo) is said as such, not as a file of
     * the bundle that cannot be opened */
    snprintf(path, sizeof(path), "%s/proc/slabinfo", dir);
    if (access(path, F_OK) != 0)
        return pw_diag_set(d, PW_ENOENT, 0, 0, "",
                           "a directory, and not a support bundle: a directory is imported "
                           "only in the sosreport layout, whose proc/slabinfo it does not have; "
                           "give the capture files themselves (e.g. %s/*.txt)",
                           dir);
    for (size_t i = 0; i < 2 + 1 && r == 0; i++) {
        char *part = NULL;
        size_t pl = 0;
        if (i == 0) {
            /* the first date file that reads: its first line is the time */
            for (size_t k = 0; k < sizeof(dates) / sizeof(dates[0]) && part == NULL; k++) {
                snprintf(path, sizeof(path), "%s/%s", dir, dates[k]);
                if (access(path, R_OK) == 0 && pw_cli_read_file(path, 4096, &part, &pl, d) == 0) {
                    char *nl = memchr(part, '\n', pl);
                    pl = nl ? (size_t)(nl - part) + 1 : pl;
                }
            }
        } else {
            snprintf(path, sizeof(path), "%s/%s", dir, dumps[i - 1]);
            if (i == 2 && access(path, F_OK) != 0)
                continue; /* no allocinfo in the bundle */
            r = pw_cli_read_file(path, PW_POOLMON_MAX_INPUT_DEFAULT, &part, &pl, d);
            if (r < 0)
                break;
        }
        if (part == NULL)
            continue;
        char *grown = pw_realloc(out, n + pl + 2);
        if (grown == NULL) {
            pw_free(part);
            r = pw_diag_set(d, PW_ENOMEM, 0, 0, "", "out of memory");
            break;
        }
        out = grown;
        memcpy(out + n, part, pl);
        n += pl;
        if (pl > 0 && out[n - 1] != '\n')
            out[n++] = '\n';
        out[n] = '\0';
        pw_free(part);
    }
    if (r < 0) {
        pw_free(out);
        return r;
    }
    *data = out;
    *len = n;
    return 0;
}

/* A file as it is, or a support bundle's directory turned into a saved series. */
static int load_input(const char *file, char **data, size_t *len, pw_diag_t *d)
{
    struct stat sb;
    if (stat(file, &sb) == 0 && S_ISDIR(sb.st_mode))
        return load_bundle(file, data, len, d);
    return pw_cli_read_file(file, PW_POOLMON_MAX_INPUT_DEFAULT, data, len, d);
}

/* What import takes, for a file that is none of it. */
#define IMPORT_TAKES                                                                               \
    "saved poolmon screens, a Linux host's saved /proc/slabinfo or /proc/allocinfo dumps (or a "   \
    "sosreport directory), or System-log pool events exported as XML"

/* Reads and parses one capture (poolmon screens, or a Linux host's slabinfo/allocinfo dumps);
 * prints FILE:LINE on failure. Returns 0 or PW_EXIT_USAGE, and the number of screens (points)
 * and of those without a time stamp of their own. */
static int count_pool_event(void *arg, const pw_winevent_t *ev)
{
    *(size_t *)arg += pw_winevent_kind(ev) != PW_WINEVENT_OTHER;
    return 0;
}

/* What check_file keeps of a poolmon capture for the order of the files: its first and last
 * screen's table (empty for other formats; last empty too for a capture of one screen). */
typedef struct ends_s {
    pw_sample_t first, last;
} ends_t;

static const pw_sample_t *ends_last(const ends_t *e)
{
    return e->last.n > 0 ? &e->last : &e->first;
}

/* Says (FILE:LINE warning) the neighbouring screens of one kind in doc[0..keep) whose allocs
 * and frees fall for most tags: out of order, or a reboot between them (capture_order.h); and
 * keeps the first and last screen's table in *ends. */
static void screens_order(pw_cli_t *cli, const char *file, const pw_poolmon_doc_t *doc, size_t keep,
                          ends_t *ends)
{
    pw_sample_t prev, cur;
    pw_sample_init(&prev);
    pw_sample_init(&cur);
    for (size_t i = 0; i < keep; i++) {
        pw_sample_reset(&cur);
        if (pw_poolmon_screen_to_sample(&doc->screens[i], &cur) != 0)
            break;
        size_t common = 0, fell = 0;
        if (i > 0 && doc->screens[i - 1].session == doc->screens[i].session &&
            pw_capture_counters_fall(&prev, &cur, &common, &fell) == 0 &&
            pw_capture_fell(common, fell))
            fprintf(cli->err,
                    "%s:%" PRIu32 ": warning: counters fall between screen %zu (line %" PRIu32
                    ") and screen %zu for %zu of %zu tags: out of order, or a reboot?\n",
                    file, doc->screens[i].line, i, doc->screens[i - 1].line, i + 1, fell, common);
        if (i == 0)
            pw_sample_copy(&ends->first, &cur);
        else if (i + 1 == keep)
            pw_sample_copy(&ends->last, &cur);
        pw_sample_t t = prev;
        prev = cur;
        cur = t;
    }
    pw_sample_close(&prev);
    pw_sample_close(&cur);
}

static int check_file(pw_cli_t *cli, const char *file, uint64_t interval_ms, size_t *screens,
                      size_t *unstamped, int *events, ends_t *ends)
{
    char *data;
    size_t len;
    pw_diag_t d;
    pw_diag_clear(&d);
    int rc = load_input(file, &data, &len, &d);
    if (rc < 0) {
        fprintf(cli->err, "%s: %s\n", file, d.msg);
        return PW_EXIT_USAGE;
    }
    /* an empty file is not "no poolmon screen": say it is empty, as parse does */
    if (pw_cli_say_empty(cli, file, data, len)) {
        pw_free(data);
        return PW_EXIT_USAGE;
    }
    if (pw_winevent_sniff(data, len)) { /* *screens: its pool events; none unstamped */
        size_t pool_events = 0;
        rc = pw_winevent_parse(data, len, count_pool_event, &pool_events, &d);
        pw_free(data);
        if (rc < 0) {
            fprintf(cli->err, "%s:%" PRIu32 ": not a System-log event export: %s\n", file, d.line,
                    d.msg);
            return PW_EXIT_USAGE;
        }
        if (pool_events == 0)
            fprintf(cli->err,
                    "%s: note: %d event(s), none of srv 2019/2020 or Resource-Exhaustion-"
                    "Detector 2004: nothing to import\n",
                    file, rc);
        *screens = pool_events;
        *unstamped = 0;
        *events = 1;
        return 0;
    }
    if (pw_linux_series_sniff(data, len)) {
        pw_linux_series_opts_t lo = {.interval_ms = interval_ms};
        pw_linux_series_t ser;
        rc = pw_linux_series_parse(data, len, &lo, &ser, &d);
        pw_free(data);
        if (rc < 0) {
            fprintf(cli->err, "%s:%" PRIu32 ": %s\n", file, d.line, d.msg);
            return PW_EXIT_USAGE;
        }
        if (ser.n_skipped)
            fprintf(cli->err,
                    "%s:%" PRIu32 ": note: %zu line(s) between the dumps are not slabinfo or "
                    "allocinfo rows (prompts, separators): skipped\n",
                    file, ser.first_skipped, ser.n_skipped);
        *screens = ser.n_points;
        *unstamped = 0;
        for (size_t i = 0; i < ser.n_points; i++)
            *unstamped += !ser.points[i].has_file_time;
        pw_linux_series_close(&ser);
        return 0;
    }
    pw_poolmon_opts_t opts = {
        .interval_ms = interval_ms, .allow_cut_last_line = 1, .skip_bad_rows = 1};
    pw_poolmon_doc_t doc;
    rc = pw_poolmon_parse(data, len, &opts, &doc, &d);
    pw_free(data);
    if (rc < 0) {
        /* not poolmon at all: also name the other formats import takes */
        const char *hint = rc == PW_ENOTPOOLMON ? " (import takes " IMPORT_TAKES ")" : "";
        if (d.line > 0)
            fprintf(cli->err, "%s:%" PRIu32 ": %s%s\n", file, d.line, d.msg, hint);
        else
            fprintf(cli->err, "%s: %s%s\n", file, d.msg[0] ? d.msg : pw_strerror(rc), hint);
        return PW_EXIT_USAGE;
    }
    if (doc.cut_line) /* the rest: all else, or the screens before a last screen cut short */
        fprintf(cli->err,
                "%s:%" PRIu32 ": warning: the last line is cut inside a row (file truncated?): "
                "left out, %s\n",
                file, doc.cut_line,
                pw_poolmon_last_screen_partial(&doc, NULL, NULL)
                    ? "and so is the screen it ends (below)"
                    : "the rest is imported");
    /* A screen saved before poolmon drew its table (or with its rows cut away) has a header
     * and no rows: a capture of such screens only would be a host with nothing in it. */
    size_t empty = 0;
    for (size_t i = 0; i < doc.n_screens; i++)
        empty += doc.screens[i].n_rows == 0;
    if (doc.n_screens > 0 && empty == doc.n_screens) {
        fprintf(cli->err,
                "%s:%" PRIu32 ": no pool tag rows: %s header only (saved before poolmon drew "
                "its table, or the rows were cut away): nothing to import\n",
                file, doc.screens[0].line,
                doc.n_screens == 1 ? "the capture's screen has a" : "every screen has a");
        pw_poolmon_doc_close(&doc);
        return PW_EXIT_USAGE;
    }
    for (size_t i = 0, said = 0; i < doc.n_screens && empty > 0; i++) {
        if (doc.screens[i].n_rows != 0)
            continue;
        if (said++ < 5)
            fprintf(cli->err,
                    "%s:%" PRIu32 ": warning: screen %zu of %zu has a header but no rows: it is "
                    "imported as a table with no tag in it\n",
                    file, doc.screens[i].line, i + 1, doc.n_screens);
        else if (said == 6)
            fprintf(cli->err, "%s: warning: %zu more screens without rows\n", file, empty - 5);
    }
    /* A last screen cut short (3 of 8 rows) is left out by the server, as here: said, with
     * why, rather than becoming the host's table with nothing saying it is partial. */
    size_t keep = doc.n_screens, rows = 0, before = 0;
    if (pw_poolmon_last_screen_partial(&doc, &rows, &before)) {
        keep--;
        fprintf(cli->err,
                "%s:%" PRIu32 ": warning: the last screen has %zu row%s where the screen before "
                "it has %zu: the file ends inside it (saved while poolmon was writing, or cut "
                "short); it is left out, since the %zu tag%s missing from it would read as freed "
                "and it would become the host's table; the %zu screen%s before it %s imported\n",
                file, doc.screens[keep].line, rows, rows == 1 ? "" : "s", before, before - rows,
                before - rows == 1 ? "" : "s", keep, keep == 1 ? "" : "s",
                keep == 1 ? "is" : "are");
    }
    /* rows that cannot be read: their screens are left out by the server (a gap), said here */
    pw_poolmon_problems_print(cli->err, file, &doc,
                              ": it is left out (a gap, not a tag read as freed)");
    *screens = keep;
    *unstamped = 0;
    for (size_t i = 0; i < keep; i++)
        *unstamped += !doc.screens[i].has_file_time;
    screens_order(cli, file, &doc, keep, ends);
    pw_poolmon_doc_close(&doc);
    return 0;
}

/* Orders names as a person reads them: runs of digits by their number ("poolsnap2" before
 * "poolsnap10"), the rest byte by byte. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a != '\0' && *b != '\0') {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            while (*a == '0' && a[1] >= '0' && a[1] <= '9')
                a++;
            while (*b == '0' && b[1] >= '0' && b[1] <= '9')
                b++;
            size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c != 0)
                return c;
            a += la;
            b += la;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a == *b ? 0 : *a == '\0' ? -1 : 1;
}

/* The first k of order[0..n-1) whose file's last screen and the next file's first screen fall
 * (capture_order.h), with the tags counted; n - 1 when none (or fewer than 2 files). */
static size_t first_fall(const ends_t *ends, const size_t *order, size_t n, size_t *common,
                         size_t *fell)
{
    for (size_t k = 0; k + 1 < n; k++)
        if (pw_capture_counters_fall(ends_last(&ends[order[k]]), &ends[order[k + 1]].first, common,
                                     fell) == 0 &&
            pw_capture_fell(*common, *fell))
            return k;
    return n ? n - 1 : 0;
}

/* How many neighbours of order[0..n) fall (first_fall's test). */
static size_t count_falls(const ends_t *ends, const size_t *order, size_t n)
{
    size_t falls = 0, common, fell;
    for (size_t k = 0; k + 1 < n; k++)
        falls += pw_capture_counters_fall(ends_last(&ends[order[k]]), &ends[order[k + 1]].first,
                                          &common, &fell) == 0 &&
                 pw_capture_fell(common, fell);
    return falls;
}

static const char *const *g_sort_names; /* natural_order's names (qsort has no argument) */

static int order_cmp(const void *x, const void *y)
{
    return natural_cmp(g_sort_names[*(const size_t *)x], g_sort_names[*(const size_t *)y]);
}

/* The capture files files[0..n) in time order. poolmon's counters only grow within a boot, so
 * when they fall between two files for most tags, the files are out of order (a shell glob
 * puts poolsnap10 before poolsnap2) or the host rebooted between them. Files of one screen
 * without time stamps each (placed one after the other in the order given) are put in their
 * names' natural order when their counters fall fewer times so (none: the glob's order; one: a
 * reboot among the files), and it is said; each fall left is warned about, naming the files.
 * order[0..n) receives the order (indexes into files). Returns 0 or PW_EXIT_SERVER (out of memory).
 */
static int files_order(pw_cli_t *cli, const char *const *files, const size_t *screens,
                       const size_t *unstamped, const ends_t *ends, size_t n, size_t *order)
{
    int one_each = n > 1;
    for (size_t k = 0; k < n; k++) {
        order[k] = k;
        one_each = one_each && screens[k] == 1 && unstamped[k] == 1;
    }
    size_t common = 0, fell = 0, at = first_fall(ends, order, n, &common, &fell);
    if (at + 1 >= n)
        return 0;
    if (one_each) {
        size_t *nat = pw_calloc(n, sizeof(*nat));
        if (nat == NULL)
            return PW_EXIT_SERVER;
        memcpy(nat, order, n * sizeof(*nat));
        g_sort_names = (const char *const *)files;
        qsort(nat, n, sizeof(*nat), order_cmp);
        size_t left = count_falls(ends, nat, n);
        if (left < count_falls(ends, order, n)) {
            size_t i = 0;
            while (nat[i] == order[i])
                i++;
            fprintf(cli->err,
                    "poolwatch import: ordered by name: %s before %s (in the order given, "
                    "counters fall between %s and %s for %zu of %zu tags)\n",
                    files[nat[i]], files[order[i]], files[order[at]], files[order[at + 1]], fell,
                    common);
            memcpy(order, nat, n * sizeof(*nat));
            pw_free(nat);
            if (left == 0)
                return 0;
            at = 0; /* a reboot among the files: its fall said below */
        } else {
            pw_free(nat);
        }
    }
    for (size_t k = at; k + 1 < n; k++)
        if (pw_capture_counters_fall(ends_last(&ends[order[k]]), &ends[order[k + 1]].first, &common,
                                     &fell) == 0 &&
            pw_capture_fell(common, fell))
            fprintf(cli->err,
                    "poolwatch import: warning: counters fall between %s and %s for %zu of %zu "
                    "tags: out of order, or a reboot?\n",
                    files[order[k]], files[order[k + 1]], fell, common);
    return 0;
}

#define IMPORT_USAGE                                                                               \
    "poolwatch import FILE... --host NAME [--interval 15m] [--start T] [--nonpaged-limit SIZE] "   \
    "[--paged-limit SIZE] [--os TEXT]"

/* A limit option: a size above 0 with its unit, as Windows and its documentation write pool
 * limits: "128 MB" is 128 MiB (Microsoft's tables use binary units), so kB, MB, GB and TB count
 * in powers of 1024, the agent's [limits] rule (pw_config_parse_pool_size); bytes are written
 * with B. A bare number is refused: `--nonpaged-limit 128` would be 128 bytes, which no pool
 * has (poolmon users think in K and MB). At most PW_WIN_IMPORT_MAX_LIMIT_BYTES, the API's
 * bound. Prints why not and returns PW_EXIT_USAGE. */
/* "1.5GB" (or "1,5GB"): 1 and the same size in the largest smaller unit it is a whole number of
 * ("1536MB"; units of 1024 as pool limits count), or bytes; 0 when the text is no decimal size,
 * or the size is no whole number of bytes. */
static int decimal_size(const char *text, char *out, size_t size)
{
    const char *p = text;
    uint64_t ip = 0, fn = 0, fd = 1;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *d0 = p;
    while (*p >= '0' && *p <= '9' && ip < 1000000000000ull)
        ip = ip * 10 + (uint64_t)(*p++ - '0');
    if (p == d0 || (*p != '.' && *p != ','))
        return 0;
    p++;
    for (const char *f0 = p; *p >= '0' && *p <= '9'; p++) {
        if (p - f0 >= 6)
            return 0;
        fn = fn * 10 + (uint64_t)(*p - '0');
        fd *= 10;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    char one[32];
    uint64_t mult;
    if (*p == '\0' || strlen(p) > 8)
        return 0;
    snprintf(one, sizeof(one), "1%s", p);
    if (pw_config_parse_pool_size(one, &mult) != 0 || mult > (1ull << 40) ||
        (fn * mult) % fd != 0 || ip > UINT64_MAX / mult - 1)
        return 0;
    uint64_t b = ip * mult + fn * mult / fd;
    static const struct {
        const char *name;
        uint64_t mult;
    } units[] = {
        {"TB", 1ull << 40}, {"GB", 1ull << 30}, {"MB", 1ull << 20}, {"KB", 1ull << 10}, {"B", 1}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (units[i].mult < mult && b % units[i].mult == 0 && b > 0) {
            snprintf(out, size, "%" PRIu64 "%s", b / units[i].mult, units[i].name);
            return 1;
        }
    return 0;
}

static int parse_limit(pw_cli_t *cli, const char *opt, const char *text, uint64_t *bytes)
{
    if (text == NULL)
        return 0;
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    int bare = *p == '\0' && p != text;
    char whole[48];
    if (decimal_size(text, whole, sizeof(whole))) {
        /* "1.5GB": not taken (a limit is a whole number of its unit, as Windows writes it),
         * but said so, with the same size written in a smaller unit */
        fprintf(cli->err,
                "poolwatch import: bad %s '%s': a size with decimals is not taken; write it in "
                "a smaller unit: %s\n",
                opt, text, whole);
        return PW_EXIT_USAGE;
    }
    int r = bare ? PW_EINVAL : pw_config_parse_pool_size(text, bytes);
    if (r == PW_ERANGE || (r == 0 && *bytes > PW_WIN_IMPORT_MAX_LIMIT_BYTES)) {
        /* a size past 2^64 bytes overflows: not "a size above 0", which it is */
        fprintf(cli->err,
                "poolwatch import: bad %s '%s': %s; the largest pool limit taken is 1024TB "
                "(1,125,899,906,842,624 bytes)\n",
                opt, text,
                r == PW_ERANGE ? "too large, more than 2^64 bytes" : "above the largest limit");
        return PW_EXIT_USAGE;
    }
    if (r != 0 || *bytes == 0) {
        fprintf(cli->err,
                "poolwatch import: bad %s '%s': %sgive a size above 0 with its unit, as Windows "
                "writes pool limits: 128MB (= 128MiB, 134,217,728 bytes), 2GB, 512KB, or bytes "
                "with B (134217728B); at most 1024TB\n",
                opt, text, bare ? "a bare number would be bytes; " : "");
        return PW_EXIT_USAGE;
    }
    return 0;
}

/* "; limits changed: nonpaged 128.0 MiB (rule), was 512.0 MiB; paged ..." when the import
 * changed the host's limits (the API's limits_changed), else "". */
static void limits_change(const json_t *root, char *out, size_t size)
{
    static const char *const pool[2] = {"nonpaged", "paged"};
    out[0] = '\0';
    if (!json_is_true(json_object_get(root, "limits_changed")))
        return;
    size_t n = (size_t)snprintf(out, size, "; limits changed:"), said = 0;
    for (int k = 0; k < 2 && n < size; k++) {
        char key[40], prev[48], detail[40], now_b[24] = "unknown", was_b[24] = "unknown";
        snprintf(key, sizeof(key), "%s_limit_bytes", pool[k]);
        snprintf(prev, sizeof(prev), "previous_%s_limit_bytes", pool[k]);
        snprintf(detail, sizeof(detail), "%s_limit_detail", pool[k]);
        json_t *now = json_object_get(root, key), *was = json_object_get(root, prev);
        json_int_t nv = json_is_integer(now) ? json_integer_value(now) : 0;
        json_int_t wv = json_is_integer(was) ? json_integer_value(was) : 0;
        if (nv == wv)
            continue;
        if (nv > 0)
            pw_cli_format_bytes((uint64_t)nv, now_b, sizeof(now_b));
        if (wv > 0)
            pw_cli_format_bytes((uint64_t)wv, was_b, sizeof(was_b));
        const char *dt = json_string_value(json_object_get(root, detail));
        /* the pools apart: "nonpaged 768.0 MiB (rule), was 128.0 MiB; paged ..." */
        n += (size_t)snprintf(out + n, size - n, "%s %s %s%s%s%s, was %s", said++ ? ";" : "",
                              pool[k], now_b, dt && dt[0] ? " (" : "", dt && dt[0] ? dt : "",
                              dt && dt[0] ? ")" : "", was_b);
    }
}

const char *const pw_cli_import_params[] = {"nonpaged_limit_bytes",
                                            "--nonpaged-limit",
                                            "paged_limit_bytes",
                                            "--paged-limit",
                                            "os",
                                            "--os",
                                            NULL};

/* The screens the server left out (the answer's screens_left_out: rows that cannot be read),
 * one line: how many and where. */
static void print_left_out(pw_cli_t *cli, const char *file, json_t *lo)
{
    size_t n = json_array_size(lo);
    if (n == 0)
        return;
    fprintf(cli->err,
            "%s: %zu screen%s left out, a gap in the history (rows that cannot be read: "
            "the warnings above): line%s",
            file, n, n == 1 ? "" : "s", n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < 20; i++)
        fprintf(cli->err, "%s %lld", i ? "," : "",
                (long long)json_integer_value(json_object_get(json_array_get(lo, i), "line")));
    fputs(n > 20 ? ", ...\n" : "\n", cli->err);
}

/* After an import: a host whose nonpaged limit is unknown has no level and no ETA, so say what
 * gives it one; a pool far above the limit it was given (25 % or more: a pool cannot grow past
 * its limit) says the limit rule may not fit this host. */
static void limit_hints(pw_cli_t *cli, const char *file, json_t *root, int linux_series)
{
    json_t *lim = json_object_get(root, "nonpaged_limit_bytes");
    if (!json_is_integer(lim) || json_integer_value(lim) <= 0) {
        fprintf(cli->err,
                "%s: note: limit unknown: give %s (the host has no level and no ETA until its "
                "nonpaged pool has a limit)\n",
                file, linux_series ? "--nonpaged-limit" : "--os or --nonpaged-limit");
        return;
    }
    static const char *const pools[2][3] = {
        {"nonpaged", "nonpaged_limit_bytes", "last_nonpaged_bytes"},
        {"paged", "paged_limit_bytes", "last_paged_bytes"}};
    for (int p = 0; p < 2; p++) {
        json_t *lv = json_object_get(root, pools[p][1]), *bv = json_object_get(root, pools[p][2]);
        if (!json_is_integer(lv) || !json_is_integer(bv) || json_integer_value(lv) <= 0)
            continue;
        uint64_t l = (uint64_t)json_integer_value(lv), b = (uint64_t)json_integer_value(bv);
        if (b < l || b - l < l / 4) /* under 125 % of the limit */
            continue;
        char lb[24], bb[24];
        pw_cli_format_bytes(l, lb, sizeof(lb));
        pw_cli_format_bytes(b, bb, sizeof(bb));
        const char *detail = json_string_value(
            json_object_get(root, p == 0 ? "nonpaged_limit_detail" : "paged_limit_detail"));
        fprintf(cli->err,
                "%s: warning: the capture's %s pool, %s at its last screen, is %.0f %% above "
                "its limit %s (%s): a pool cannot grow past its limit, so the limit rule may not "
                "fit this host (check --os, or give --%s-limit)\n",
                file, pools[p][0], bb, ((double)b / (double)l - 1.0) * 100.0, lb,
                detail && detail[0] ? detail : "given", pools[p][0]);
    }
}

int pw_cmd_import(pw_cli_t *cli)
{
    const char *host = NULL, *interval = NULL, *start = NULL, *np_text = NULL, *pg_text = NULL,
               *os = NULL;
    const char **files = pw_calloc((size_t)cli->argc, sizeof(char *));
    size_t nf = 0;
    if (files == NULL)
        return PW_EXIT_SERVER;
    int ex = PW_EXIT_OK;
    cli->param_names = pw_cli_import_params; /* the server's 400s name its parameters */
    for (int i = 1; i < cli->argc; i++) {
        int r;
        if ((r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--host", &host)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--interval", &interval)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--start", &start)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--nonpaged-limit", &np_text)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--paged-limit", &pg_text)) != 0 ||
            (r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--os", &os)) != 0) {
            if (r < 0)
                ex = PW_EXIT_USAGE;
        } else if (cli->argv[i][0] == '-') {
            static const char *const opts[] = {
                "--host",        "--interval", "--start", "--nonpaged-limit",
                "--paged-limit", "--os",       NULL};
            pw_free(files);
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, IMPORT_USAGE);
        } else {
            files[nf++] = cli->argv[i];
        }
    }
    uint64_t interval_ms = PW_POOLMON_INTERVAL_DEFAULT_MS, start_ms = 0;
    if (ex == 0 && interval != NULL &&
        (pw_cli_parse_duration(interval, &interval_ms) < 0 || interval_ms == 0)) {
        fprintf(cli->err, "poolwatch import: bad --interval '%s' (e.g. 15m, 30s)\n", interval);
        ex = PW_EXIT_USAGE;
    }
    if (ex == 0 && start != NULL) {
        if (pw_cli_parse_time(start, pw_clock_wall_ms() / 1000u * 1000u, &start_ms) < 0) {
            fprintf(cli->err, "poolwatch import: bad --start '%s' (" PW_CLI_TIME_FORMS ")\n",
                    start);
            ex = PW_EXIT_USAGE;
        }
    }
    uint64_t np_bytes = 0, pg_bytes = 0;
    if (ex == 0)
        ex = parse_limit(cli, "--nonpaged-limit", np_text, &np_bytes);
    if (ex == 0)
        ex = parse_limit(cli, "--paged-limit", pg_text, &pg_bytes);
    if (ex == 0 && os != NULL) {
        /* The server reads it with the same rule table; an unknown OS fails here, before any
         * upload. */
        pw_win_os_t wo;
        pw_diag_t od;
        if (pw_win_os_parse(os, &wo, &od) != 0) {
            fprintf(cli->err, "poolwatch import: --os: %s\n", od.msg);
            ex = PW_EXIT_USAGE;
        }
    }
    if (ex == 0 && (host == NULL || host[0] == '\0' || nf == 0))
        ex = pw_cli_bad_args(cli, NULL, nf == 0 ? "FILE" : "--host NAME", NULL, IMPORT_USAGE);
    pw_client_t probe;
    if (ex == 0)
        ex = pw_cli_client(cli, &probe); /* URL errors before reading big files */
    json_t *results = json_array();
    /* Every file is checked before the first upload: a bad file uploads nothing. */
    size_t *screens = pw_calloc(nf ? nf : 1, sizeof(size_t));
    size_t *unstamped = pw_calloc(nf ? nf : 1, sizeof(size_t));
    size_t *order = pw_calloc(nf ? nf : 1, sizeof(size_t));
    int *is_ev = pw_calloc(nf ? nf : 1, sizeof(int));
    ends_t *ends = pw_calloc(nf ? nf : 1, sizeof(ends_t));
    size_t unstamped_total = 0, ncap = 0;
    if (screens == NULL || unstamped == NULL || order == NULL || is_ev == NULL || ends == NULL)
        ex = PW_EXIT_SERVER;
    for (size_t k = 0; ex == 0 && k < nf; k++) {
        pw_sample_init(&ends[k].first);
        pw_sample_init(&ends[k].last);
        ex =
            check_file(cli, files[k], interval_ms, &screens[k], &unstamped[k], &is_ev[k], &ends[k]);
        unstamped_total += unstamped[k];
    }
    /* event exports go after the captures: they attach to the host the captures make */
    for (size_t k = 0, m = 0; ex == 0 && m < nf; m++)
        if (!is_ev[m]) {
            const char *f = files[m];
            size_t sc = screens[m];
            memmove(files + k + 1, files + k, (m - k) * sizeof(*files));
            memmove(screens + k + 1, screens + k, (m - k) * sizeof(*screens));
            memmove(is_ev + k + 1, is_ev + k, (m - k) * sizeof(*is_ev));
            size_t un = unstamped[m];
            memmove(unstamped + k + 1, unstamped + k, (m - k) * sizeof(*unstamped));
            ends_t en = ends[m];
            memmove(ends + k + 1, ends + k, (m - k) * sizeof(*ends));
            files[k] = f, screens[k] = sc, is_ev[k] = 0, unstamped[k] = un, ends[k] = en;
            k++;
            ncap = k;
        }
    /* the captures in time order: a shell glob's poolsnap10 before poolsnap2 (capture_order.h) */
    if (ex == 0)
        ex = files_order(cli, files, screens, unstamped, ends, ncap, order);
    if (ex == 0 && ncap > 1) {
        const char **f2 = pw_calloc(ncap, sizeof(*f2));
        size_t *s2 = pw_calloc(ncap, sizeof(*s2));
        if (f2 == NULL || s2 == NULL)
            ex = PW_EXIT_SERVER;
        for (size_t k = 0; ex == 0 && k < ncap; k++)
            f2[k] = files[order[k]], s2[k] = screens[order[k]];
        if (ex == 0) {
            memcpy(files, f2, ncap * sizeof(*f2));
            memcpy(screens, s2, ncap * sizeof(*s2));
        }
        pw_free(f2);
        pw_free(s2);
    }
    if (ex == 0 && start == NULL) {
        /* Without --start, unstamped screens end now: saved captures are the past. */
        uint64_t now_ms = pw_clock_wall_ms();
        uint64_t span = unstamped_total > 1 ? (uint64_t)(unstamped_total - 1) * interval_ms : 0;
        start_ms = span < now_ms ? now_ms - span : 0;
    }
    for (size_t k = 0; ex == 0 && k < nf; k++) {
        char *data;
        size_t len;
        pw_diag_t d;
        pw_diag_clear(&d);
        if (load_input(files[k], &data, &len, &d) < 0) {
            fprintf(cli->err, "%s: %s\n", files[k], d.msg);
            ex = PW_EXIT_USAGE;
            break;
        }
        char path[1024] = "/api/v1/import?host=";
        pw_url_escape(path, sizeof(path), host);
        size_t n = strlen(path);
        snprintf(path + n, sizeof(path) - n, "&interval_ms=%" PRIu64 "&start_ms=%" PRIu64,
                 interval_ms, start_ms);
        n = strlen(path);
        if (np_bytes)
            snprintf(path + n, sizeof(path) - n, "&nonpaged_limit_bytes=%" PRIu64, np_bytes);
        n = strlen(path);
        if (pg_bytes)
            snprintf(path + n, sizeof(path) - n, "&paged_limit_bytes=%" PRIu64, pg_bytes);
        n = strlen(path);
        if (os != NULL && n + 4 < sizeof(path)) {
            strcat(path, "&os=");
            pw_url_escape(path, sizeof(path), os); /* appends */
        }
        progress_t pg = {.err = cli->err, .file = files[k], .shown = 0};
        int bar = len >= PROGRESS_MIN_BYTES && cli->err == stderr && isatty(STDERR_FILENO);
        json_t *root;
        /* the server stores a big capture before it answers (14 days of 15-minute screens of an
         * 800-tag server are 92 MB, stored in about 10 s; its deadline for the body is a second
         * per MiB more): 4 s more per MiB */
        uint64_t wait_ms = PW_CLIENT_TIMEOUT_MS + (uint64_t)len * 4000u / PW_IMPORT_BYTES_PER_S;
        cli->timeout_ms = wait_ms > INT32_MAX ? INT32_MAX : (int)wait_ms;
        ex = pw_cli_call(cli, "POST", path, "text/plain", data, len, bar ? on_progress : NULL, &pg,
                         &root);
        cli->timeout_ms = 0;
        if (pg.shown)
            fputc('\n', cli->err);
        pw_free(data);
        if (ex != 0)
            break;
        uint64_t last = 0;
        json_t *lv = json_object_get(root, "last_ts_ms");
        if (json_is_integer(lv) && json_integer_value(lv) >= 0)
            last = (uint64_t)json_integer_value(lv);
        if (!is_ev[k]) /* events move no capture's time */
            start_ms = last + interval_ms;
        if (cli->json) {
            json_object_set_new(root, "file", json_string(files[k]));
            json_array_append(results, root);
        } else if (is_ev[k]) {
            char a[32], b[32], n1[32], n2[32];
            json_t *fv = json_object_get(root, "first_ts_ms");
            pw_cli_format_time(json_is_integer(fv) ? (uint64_t)json_integer_value(fv) : 0, a,
                               sizeof(a));
            pw_cli_format_time(last, b, sizeof(b));
            fprintf(
                cli->out, "%s: %s for %s (server stored %s, %lld already there)%s%s%s%s\n",
                files[k], pw_cli_count(screens[k], "pool event", n1, sizeof(n1)), host,
                pw_cli_count((uint64_t)json_integer_value(json_object_get(root, "events_stored")),
                             "event", n2, sizeof(n2)),
                (long long)json_integer_value(json_object_get(root, "events_already_stored")),
                screens[k] ? ", " : "", screens[k] ? a : "", screens[k] ? " .. " : "",
                screens[k] ? b : "");
        } else {
            char a[32], b[32];
            pw_cli_format_time(last, b, sizeof(b));
            json_t *fv = json_object_get(root, "first_ts_ms");
            pw_cli_format_time(json_is_integer(fv) ? (uint64_t)json_integer_value(fv) : 0, a,
                               sizeof(a));
            char n1[32], n2[32], n3[32], lim[160] = "";
            json_t *lv2 = json_object_get(root, "nonpaged_limit_bytes");
            if (json_is_integer(lv2) && json_integer_value(lv2) > 0) {
                char lb[24];
                pw_cli_format_bytes((uint64_t)json_integer_value(lv2), lb, sizeof(lb));
                snprintf(lim, sizeof(lim), "; nonpaged limit %s (%s)", lb,
                         json_string_value(json_object_get(root, "nonpaged_limit_detail"))
                             ? json_string_value(json_object_get(root, "nonpaged_limit_detail"))
                             : "");
            }
            /* a Linux series has points in time (a slabinfo and/or allocinfo dump each) */
            const char *fmt = json_string_value(json_object_get(root, "format"));
            const char *unit = fmt && strcmp(fmt, "linux") == 0 ? "point" : "screen";
            char changed[320];
            limits_change(root, changed, sizeof(changed));
            json_t *al = json_object_get(root, "screens_already_stored");
            json_t *sv = json_object_get(root, "screens_stored");
            json_int_t stored = json_is_integer(sv) ? json_integer_value(sv) : 0;
            if (json_is_integer(al) && json_integer_value(al) > 0) {
                /* what an import of the same content changes is said: a new --os or limit
                 * changes the host's limits even when no screen is new */
                /* a capture poolmon grew since: its new screens, after the stored ones */
                char n4[32], n5[32], again[160] = "nothing stored again";
                if (stored > 0)
                    snprintf(again, sizeof(again), "%s new, stored after them (the last at %s)",
                             pw_cli_count((uint64_t)stored, unit, n5, sizeof(n5)), b);
                fprintf(cli->out,
                        "%s: already imported into %s: %s of this capture were stored by an "
                        "earlier import of the same capture (its first screen; the start time "
                        "does not make it new); %s%s\n",
                        files[k], host,
                        pw_cli_count((uint64_t)json_integer_value(al), unit, n4, sizeof(n4)), again,
                        changed);
                json_decref(root);
                continue;
            }
            fprintf(cli->out, "%s: %s (server stored %s, %s) as %s, %s .. %s%s%s\n", files[k],
                    pw_cli_count(screens[k], unit, n1, sizeof(n1)),
                    pw_cli_count((uint64_t)json_integer_value(json_object_get(root, "screens")),
                                 unit, n2, sizeof(n2)),
                    pw_cli_count((uint64_t)json_integer_value(json_object_get(root, "rows")), "row",
                                 n3, sizeof(n3)),
                    host, a, b, changed[0] ? "" : lim, changed);
            print_left_out(cli, files[k], json_object_get(root, "screens_left_out"));
            /* the host's limits: once, after its last file (not a note a file) */
            if (k + 1 == nf)
                limit_hints(cli, files[k], root, fmt && strcmp(fmt, "linux") == 0);
        }
        json_decref(root);
    }
    if (ex == 0 && cli->json) {
        json_t *doc = json_pack("{s:O}", "imports", results);
        if (doc != NULL)
            pw_cli_print_json(cli, doc);
        json_decref(doc);
    }
    json_decref(results);
    for (size_t k = 0; ends != NULL && k < nf; k++) {
        pw_sample_close(&ends[k].first);
        pw_sample_close(&ends[k].last);
    }
    pw_free(ends);
    pw_free(screens);
    pw_free(unstamped);
    pw_free(order);
    pw_free(is_ev);
    pw_free(files);
    return ex;
}
