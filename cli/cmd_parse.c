/* cmd_parse.c: `poolwatch parse FILE [--format auto|poolmon|slabinfo] [--json]`. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

#include "alloc.h"
#include "poolmon_json.h"
#include "sample.h"

/* JSON integers are signed 64-bit in jansson; counters above that (never seen in practice)
 * become reals rather than wrapping negative. */
static json_t *jnum(uint64_t v)
{
    if (v > (uint64_t)INT64_MAX)
        return json_real((double)v);
    return json_integer((json_int_t)v);
}

static int set_new(json_t *obj, const char *key, json_t *v)
{
    return v == NULL ? -1 : json_object_set_new(obj, key, v);
}

json_t *pw_parse_poolmon_json(const pw_poolmon_doc_t *doc)
{
    json_t *root = json_object();
    json_t *screens = json_array();
    int bad = root == NULL || screens == NULL;
    bad |= set_new(root, "format", json_string("poolmon"));
    if (!bad && json_object_set(root, "screens", screens) != 0)
        bad = 1;
    for (size_t i = 0; !bad && i < doc->n_screens; i++) {
        const pw_poolmon_screen_t *s = &doc->screens[i];
        const pw_poolmon_header_t *h = &s->header;
        json_t *js = json_object(), *jh = json_object(), *rows = json_array();
        bad |= js == NULL || jh == NULL || rows == NULL;
        if (!bad) {
            bad |= set_new(js, "title", s->title ? json_string(s->title) : json_null());
            static const struct {
                uint32_t bit;
                const char *key;
                size_t off;
            } fields[] = {
                {PW_POOLMON_HAS_MEMORY, "memory_kb", offsetof(pw_poolmon_header_t, memory_kb)},
                {PW_POOLMON_HAS_AVAIL, "avail_kb", offsetof(pw_poolmon_header_t, avail_kb)},
                {PW_POOLMON_HAS_PAGE_FAULTS, "page_faults",
                 offsetof(pw_poolmon_header_t, page_faults)},
                {PW_POOLMON_HAS_COMMIT, "commit_kb", offsetof(pw_poolmon_header_t, commit_kb)},
                {PW_POOLMON_HAS_COMMIT_LIMIT, "commit_limit_kb",
                 offsetof(pw_poolmon_header_t, commit_limit_kb)},
                {PW_POOLMON_HAS_COMMIT_PEAK, "commit_peak_kb",
                 offsetof(pw_poolmon_header_t, commit_peak_kb)},
                {PW_POOLMON_HAS_POOL_NONPAGED, "pool_nonpaged_kb",
                 offsetof(pw_poolmon_header_t, pool_nonpaged_kb)},
                {PW_POOLMON_HAS_POOL_PAGED, "pool_paged_kb",
                 offsetof(pw_poolmon_header_t, pool_paged_kb)},
            };
            for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
                if (h->has & fields[f].bit) {
                    uint64_t v;
                    memcpy(&v, (const char *)h + fields[f].off, sizeof(v));
                    bad |= set_new(jh, fields[f].key, jnum(v));
                }
            }
            bad |= json_object_set(js, "header", jh);
            bad |= json_object_set(js, "rows", rows);
            /* rows of it that could not be read (or its header lost): an import leaves it out */
            bad |= set_new(js, "incomplete", json_integer((json_int_t)s->incomplete));
            bad |= json_array_append(screens, js);
        }
        for (size_t r = 0; !bad && r < s->n_rows; r++) {
            const pw_poolmon_row_t *row = &s->rows[r];
            char tag[4 * 4 + 1];
            pw_tag_format(row->tag, 4, tag, sizeof(tag));
            json_t *jr = json_object();
            bad |= jr == NULL;
            if (!bad) {
                bad |= set_new(jr, "tag", json_string(tag));
                bad |= set_new(jr, "type", json_string(pw_poolmon_type_name(row->pool)));
                bad |= set_new(jr, "allocs", jnum(row->allocs));
                bad |= set_new(jr, "frees", jnum(row->frees));
                bad |= set_new(jr, "diff", jnum(row->diff));
                bad |= set_new(jr, "bytes", jnum(row->bytes));
                bad |= set_new(jr, "per_alloc", jnum(row->per_alloc));
                /* Driver text from the file may be in an ANSI code page: jansson wants UTF-8,
                 * so anything else goes through the tag escaping. */
                json_t *drv = json_null();
                if (row->mapped_driver != NULL) {
                    drv = json_string(row->mapped_driver);
                    if (drv == NULL) {
                        size_t n = strlen(row->mapped_driver);
                        char *esc = pw_malloc(n * 4 + 1);
                        if (esc != NULL) {
                            /* pw_tag_format takes at most PW_TAG_MAX bytes per call. */
                            size_t o = 0;
                            for (size_t k = 0; k < n; k += PW_TAG_MAX) {
                                size_t part = n - k > PW_TAG_MAX ? PW_TAG_MAX : n - k;
                                o += pw_tag_format((const uint8_t *)row->mapped_driver + k, part,
                                                   esc + o, n * 4 + 1 - o);
                            }
                            drv = json_string(esc);
                            pw_free(esc);
                        }
                    }
                }
                bad |= set_new(jr, "mapped_driver", drv);
                bad |= json_array_append(rows, jr);
            }
            json_decref(jr);
        }
        json_decref(js);
        json_decref(jh);
        json_decref(rows);
    }
    json_decref(screens);
    json_t *probs = bad ? NULL : pw_poolmon_problems_json(doc);
    bad |= probs == NULL || json_object_set_new(root, "unreadable_rows", probs) != 0;
    bad |= set_new(root, "unreadable_rows_total", json_integer((json_int_t)doc->n_problems_total));
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

void pw_poolmon_problems_print(FILE *err, const char *file, const pw_poolmon_doc_t *doc,
                               const char *fate)
{
    for (size_t i = 0; i < doc->n_problems && i < 20; i++) {
        const pw_poolmon_problem_t *pr = &doc->problems[i];
        fprintf(err, "%s:%" PRIu32 ": warning: %s: screen %" PRIu32 " of %zu is incomplete%s\n",
                file, pr->line, pr->msg, pr->screen + 1, doc->n_screens, fate);
    }
    if (doc->n_problems_total > 20)
        fprintf(err, "%s: warning: %zu more rows that cannot be read\n", file,
                doc->n_problems_total - 20);
}

json_t *pw_parse_slabinfo_json(const pw_slabinfo_doc_t *doc)
{
    json_t *root = json_object();
    json_t *caches = json_array();
    int bad = root == NULL || caches == NULL;
    bad |= set_new(root, "format", json_string("slabinfo"));
    if (!bad && doc->version != NULL && doc->version[0] != '\0')
        bad |= set_new(root, "version", json_string(doc->version));
    if (!bad)
        bad |= json_object_set(root, "caches", caches);
    for (size_t i = 0; !bad && i < doc->n_caches; i++) {
        const pw_slab_cache_t *c = &doc->caches[i];
        json_t *jc = json_object();
        bad |= jc == NULL;
        if (bad)
            break;
        json_t *name = json_stringn(c->name, c->name_len);
        if (name == NULL) { /* not UTF-8 (the parser checks, but stay safe) */
            char esc[PW_SLABINFO_MAX_NAME * 4 + 1];
            size_t o = 0;
            for (size_t k = 0; k < c->name_len; k += PW_TAG_MAX) {
                size_t part = c->name_len - k > PW_TAG_MAX ? PW_TAG_MAX : c->name_len - k;
                o += pw_tag_format((const uint8_t *)c->name + k, part, esc + o, sizeof(esc) - o);
            }
            name = json_string(esc);
        }
        bad |= set_new(jc, "name", name);
        static const struct {
            uint32_t bit;
            const char *key;
            size_t off;
        } fields[] = {
            {PW_SLAB_HAS_ACTIVE_OBJS, "active_objs", offsetof(pw_slab_cache_t, active_objs)},
            {PW_SLAB_HAS_NUM_OBJS, "num_objs", offsetof(pw_slab_cache_t, num_objs)},
            {PW_SLAB_HAS_OBJSIZE, "objsize", offsetof(pw_slab_cache_t, objsize)},
            {PW_SLAB_HAS_OBJPERSLAB, "objperslab", offsetof(pw_slab_cache_t, objperslab)},
            {PW_SLAB_HAS_PAGESPERSLAB, "pagesperslab", offsetof(pw_slab_cache_t, pagesperslab)},
            {PW_SLAB_HAS_ACTIVE_SLABS, "active_slabs", offsetof(pw_slab_cache_t, active_slabs)},
            {PW_SLAB_HAS_NUM_SLABS, "num_slabs", offsetof(pw_slab_cache_t, num_slabs)},
        };
        for (size_t f = 0; !bad && f < sizeof(fields) / sizeof(fields[0]); f++) {
            if (c->present & fields[f].bit) {
                uint64_t v;
                memcpy(&v, (const char *)c + fields[f].off, sizeof(v));
                bad |= set_new(jc, fields[f].key, jnum(v));
            }
        }
        bad |= set_new(jc, "partial", json_boolean(c->partial));
        bad |= json_array_append(caches, jc);
        json_decref(jc);
    }
    json_decref(caches);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static void print_kb(FILE *out, const char *label, uint32_t has, uint32_t bit, uint64_t v, int k)
{
    if (has & bit)
        fprintf(out, " %s %" PRIu64 "%s", label, v, k ? "K" : "");
}

void pw_parse_poolmon_print(const pw_poolmon_doc_t *doc, FILE *out)
{
    for (size_t i = 0; i < doc->n_screens; i++) {
        const pw_poolmon_screen_t *s = &doc->screens[i];
        const pw_poolmon_header_t *h = &s->header;
        char ts[32];
        pw_cli_format_time(s->timestamp_ms, ts, sizeof(ts));
        if (i > 0)
            fputc('\n', out);
        char inc[64] = "";
        if (s->incomplete)
            snprintf(inc, sizeof(inc), ", INCOMPLETE: %" PRIu32 " row%s not read", s->incomplete,
                     s->incomplete == 1 ? "" : "s");
        fprintf(out, "Screen %zu (line %" PRIu32 "%s%s): %s, %zu rows%s%s\n", i + 1, s->line,
                s->has_file_time ? ", " : "", s->has_file_time ? ts : "",
                s->title ? s->title : "untitled", s->n_rows, s->elided ? ", rows elided (...)" : "",
                inc);
        if (h->has & 0x7u) {
            print_kb(out, "Memory:", h->has, PW_POOLMON_HAS_MEMORY, h->memory_kb, 1);
            print_kb(out, "Avail:", h->has, PW_POOLMON_HAS_AVAIL, h->avail_kb, 1);
            print_kb(out, "PageFlts:", h->has, PW_POOLMON_HAS_PAGE_FAULTS, h->page_faults, 0);
            print_kb(out, "InRam Krnl:", h->has, PW_POOLMON_HAS_INRAM_KRNL, h->inram_krnl_kb, 1);
            print_kb(out, "P:", h->has, PW_POOLMON_HAS_INRAM_PAGED, h->inram_paged_kb, 1);
            fputc('\n', out);
        }
        if (h->has & 0x3e0u) {
            print_kb(out, "Commit:", h->has, PW_POOLMON_HAS_COMMIT, h->commit_kb, 1);
            print_kb(out, "Limit:", h->has, PW_POOLMON_HAS_COMMIT_LIMIT, h->commit_limit_kb, 1);
            print_kb(out, "Peak:", h->has, PW_POOLMON_HAS_COMMIT_PEAK, h->commit_peak_kb, 1);
            print_kb(out, "Pool N:", h->has, PW_POOLMON_HAS_POOL_NONPAGED, h->pool_nonpaged_kb, 1);
            print_kb(out, "P:", h->has, PW_POOLMON_HAS_POOL_PAGED, h->pool_paged_kb, 1);
            fputc('\n', out);
        }
        if (s->n_rows == 0)
            continue;
        fprintf(out, " %-4s %-5s %10s %10s %9s %10s %9s%s\n", "Tag", "Type", "Allocs", "Frees",
                "Diff", "Bytes", "Per Alloc", s->has_mapped_driver ? "  Mapped_Driver" : "");
        for (size_t r = 0; r < s->n_rows; r++) {
            const pw_poolmon_row_t *row = &s->rows[r];
            char tag[17];
            pw_tag_format(row->tag, 4, tag, sizeof(tag));
            fprintf(out,
                    " %-4s %-5s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %10" PRIu64 " %9" PRIu64
                    "%s%s\n",
                    tag, row->pool == PW_POOL_NONPAGED ? "Nonp" : "Paged", row->allocs, row->frees,
                    row->diff, row->bytes, row->per_alloc, row->mapped_driver ? "  " : "",
                    row->mapped_driver ? row->mapped_driver : "");
        }
        for (size_t r = 0; r < s->n_rows; r++) {
            const pw_poolmon_row_t *row = &s->rows[r];
            char tag[17];
            pw_tag_format(row->tag, 4, tag, sizeof(tag));
            if (row->flags & PW_POOLMON_ROW_PER_ALLOC_MISMATCH)
                fprintf(out,
                        "note: line %" PRIu32 ": %s Per Alloc is %" PRIu64
                        " in the file, floor(bytes / diff) = %" PRIu64 "\n",
                        row->line, tag, row->file_per_alloc, row->per_alloc);
            if (row->flags & PW_POOLMON_ROW_DIFF_MISMATCH)
                fprintf(out, "note: line %" PRIu32 ": %s allocs - frees != diff\n", row->line, tag);
        }
    }
    if (doc->ignored_lines > 0)
        fprintf(out, "(%" PRIu32 " other lines ignored, the first at line %" PRIu32 ")\n",
                doc->ignored_lines, doc->first_ignored_line);
}

static void print_u64_or_dash(FILE *out, int width, uint32_t present, uint32_t bit, uint64_t v)
{
    if (present & bit)
        fprintf(out, " %*" PRIu64, width, v);
    else
        fprintf(out, " %*s", width, "-");
}

void pw_parse_slabinfo_print(const pw_slabinfo_doc_t *doc, FILE *out)
{
    fprintf(out, "slabinfo version %s, %zu caches%s\n",
            doc->version && doc->version[0] ? doc->version : "(none)", doc->n_caches,
            doc->n_partial ? " (some partial)" : "");
    int w = 4;
    for (size_t i = 0; i < doc->n_caches; i++)
        if ((int)doc->caches[i].name_len > w)
            w = (int)doc->caches[i].name_len;
    if (w > 32)
        w = 32;
    fprintf(out, "%-*s %11s %11s %8s %10s %12s %12s %10s\n", w, "name", "active_objs", "num_objs",
            "objsize", "objperslab", "pagesperslab", "active_slabs", "num_slabs");
    for (size_t i = 0; i < doc->n_caches; i++) {
        const pw_slab_cache_t *c = &doc->caches[i];
        fprintf(out, "%-*s", w, c->name);
        print_u64_or_dash(out, 11, c->present, PW_SLAB_HAS_ACTIVE_OBJS, c->active_objs);
        print_u64_or_dash(out, 11, c->present, PW_SLAB_HAS_NUM_OBJS, c->num_objs);
        print_u64_or_dash(out, 8, c->present, PW_SLAB_HAS_OBJSIZE, c->objsize);
        print_u64_or_dash(out, 10, c->present, PW_SLAB_HAS_OBJPERSLAB, c->objperslab);
        print_u64_or_dash(out, 12, c->present, PW_SLAB_HAS_PAGESPERSLAB, c->pagesperslab);
        print_u64_or_dash(out, 12, c->present, PW_SLAB_HAS_ACTIVE_SLABS, c->active_slabs);
        print_u64_or_dash(out, 10, c->present, PW_SLAB_HAS_NUM_SLABS, c->num_slabs);
        fputs(c->partial ? "  partial\n" : "\n", out);
    }
}

static void report(FILE *err, const char *file, const char *what, const pw_diag_t *d, int rc)
{
    const char *msg = d->msg[0] ? d->msg : pw_strerror(rc);
    if (d->line > 0)
        fprintf(err, "%s:%" PRIu32 ": %s%s\n", file, d->line, what, msg);
    else
        fprintf(err, "%s: %s%s\n", file, what, msg);
}

#define PARSE_USAGE "poolwatch parse FILE [--format auto|poolmon|slabinfo] [--json]"

int pw_cmd_parse(pw_cli_t *cli)
{
    const char *file = NULL, *format = "auto";
    for (int i = 1; i < cli->argc; i++) {
        const char *v;
        int r = pw_cli_opt(cli, cli->argc, cli->argv, &i, "--format", &v);
        if (r < 0)
            return PW_EXIT_USAGE;
        if (r > 0) {
            format = v;
        } else if (cli->argv[i][0] == '-' && cli->argv[i][1] != '\0' &&
                   strcmp(cli->argv[i], "--") != 0) {
            static const char *const opts[] = {"--format", NULL};
            return pw_cli_bad_args(cli, cli->argv[i], NULL, opts, PARSE_USAGE);
        } else if (strcmp(cli->argv[i], "--") == 0) {
            continue;
        } else if (file == NULL) {
            file = cli->argv[i];
        } else {
            fputs("poolwatch parse: one FILE only\n", cli->err);
            return PW_EXIT_USAGE;
        }
    }
    int want_pm = strcmp(format, "auto") == 0 || strcmp(format, "poolmon") == 0;
    int want_slab = strcmp(format, "auto") == 0 || strcmp(format, "slabinfo") == 0;
    if (file == NULL)
        return pw_cli_bad_args(cli, NULL, "FILE", NULL, PARSE_USAGE);
    if (!want_pm && !want_slab) {
        fprintf(cli->err, "poolwatch parse: --format must be auto, poolmon or slabinfo, not '%s'\n",
                format);
        fprintf(cli->err, "usage: %s\n", PARSE_USAGE);
        return PW_EXIT_USAGE;
    }
    char *data;
    size_t len;
    pw_diag_t d;
    pw_diag_clear(&d);
    int rc = pw_cli_read_file(file, PW_POOLMON_MAX_INPUT_DEFAULT, &data, &len, &d);
    if (rc < 0) {
        report(cli->err, file, "", &d, rc);
        return PW_EXIT_USAGE;
    }
    if (pw_cli_say_empty(cli, file, data, len)) { /* not "no poolmon screen ... not slabinfo" */
        pw_free(data);
        return PW_EXIT_USAGE;
    }
    int ex = PW_EXIT_OK;
    pw_diag_t dpm, dslab;
    pw_diag_clear(&dpm);
    pw_diag_clear(&dslab);
    int rc_pm = 1, rc_slab = 1;
    unsigned cut_line = 0; /* a capture whose only fault is a last row cut short */
    json_t *j = NULL;
    if (want_pm) {
        pw_poolmon_doc_t doc;
        pw_poolmon_opts_t po;
        memset(&po, 0, sizeof(po));
        po.skip_bad_rows = 1; /* said with FILE:LINE, as import says it */
        rc_pm = pw_poolmon_parse(data, len, &po, &doc, &dpm);
        if (rc_pm == 0) {
            pw_poolmon_problems_print(cli->err, file, &doc,
                                      " (`poolwatch import` leaves it out: a gap, not a tag "
                                      "read as freed)");
            if (cli->json)
                j = pw_parse_poolmon_json(&doc);
            else
                pw_parse_poolmon_print(&doc, cli->out);
            pw_poolmon_doc_close(&doc);
        } else {
            pw_poolmon_opts_t lax;
            memset(&lax, 0, sizeof(lax));
            lax.allow_cut_last_line = 1;
            lax.skip_bad_rows = 1;
            if (pw_poolmon_parse(data, len, &lax, &doc, NULL) == 0) {
                if (doc.cut_line == dpm.line)
                    cut_line = doc.cut_line;
                pw_poolmon_doc_close(&doc);
            }
        }
    }
    if (rc_pm != 0 && want_slab) {
        pw_slabinfo_doc_t doc;
        rc_slab = pw_slabinfo_parse(data, len, NULL, &doc, &dslab);
        if (rc_slab == 0) {
            if (cli->json)
                j = pw_parse_slabinfo_json(&doc);
            else
                pw_parse_slabinfo_print(&doc, cli->out);
        }
        pw_slabinfo_doc_close(&doc);
    }
    pw_free(data);
    if (rc_pm != 0 && rc_slab != 0) {
        int both = want_pm && want_slab;
        if (want_pm)
            report(cli->err, file, both ? "not poolmon: " : "", &dpm, rc_pm);
        if (want_slab)
            report(cli->err, file, both ? "not slabinfo: " : "", &dslab, rc_slab);
        if (cut_line != 0)
            fprintf(cli->err,
                    "%s:%u: the file ends inside this row; everything before it parses: "
                    "`poolwatch import` keeps those rows, `parse` stays strict\n",
                    file, cut_line);
        return PW_EXIT_USAGE;
    }
    if (cli->json) {
        if (j == NULL) {
            fputs("poolwatch parse: out of memory\n", cli->err);
            return PW_EXIT_SERVER;
        }
        pw_cli_print_json(cli, j);
        json_decref(j);
    }
    return ex;
}
