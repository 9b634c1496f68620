/* poolmon_text.h: parser for saved poolmon.exe screens (the agent's replay source and the CLI
 * import share it).
 *
 * Input is what an administrator saves from a console running poolmon: one or more screens,
 * each made of (all optional, in this order) a "Memory:" header line, a "Commit:" header
 * line, a title ("System pool information", "All sessions pool information", "Session N pool
 * information"), a column header ("Tag  Type  Allocs ... Per Alloc [Mapped_Driver]") and
 * rows. Several screens in one file form a time series. Formats accepted (all seen in real
 * captures, see tests/fixtures/SOURCES.md):
 *   - encodings: ASCII/ANSI (bytes >= 0x80 kept as they are), UTF-8 with or without BOM,
 *     UTF-16LE with BOM (Notepad "Unicode"), UTF-16BE with BOM; LF or CRLF line ends;
 *   - header fields with or without a space after the colon (`Memory:16468560K`,
 *     `Limit:1279764K`, `P: 680K`), any spacing between fields;
 *   - rows with or without the `( n)` delta columns (signed, `(+10)` and `( -512)` too), any
 *     spacing or tabs between columns, whitespace collapsed to single spaces, and an optional
 *     trailing Mapped_Driver text (`/g`, `/c`: `[ntfs.sys - X]`, `[a][b]`, `Unknown Driver`,
 *     or cut by the console width);
 *   - lines skipped: blank lines, `-----` separators, `...` elisions (the screen is flagged
 *     elided), and any other line that is neither header, title, column header, time stamp
 *     nor row (echoed prompts, `PoolMon: ...` messages): counted in doc->ignored_lines;
 *   - a markdown `#` prefix before a header, title or column header (`## Tag  Type ...`).
 *
 * Tags. A row is `[spaces] TAG TYPE numbers [driver]`, TYPE being `Paged`, `Nonp` or
 * `Nonpaged`. The tag is the text before TYPE with leading and trailing blanks removed: 1 to
 * 4 bytes, inner spaces kept (`Dh 1`), stored left-justified and space-padded to 4 bytes,
 * which is how poolmon and pooltag.txt write short tags (`Io  `, `CM  `). So the
 * right-aligned ` CM ` / ` Fat` of Windows 2000-era screens yield "CM  " / "Fat ". Tags are
 * case-sensitive (NtFS and NtFs are different tags). A tag made only of spaces cannot be
 * told from alignment and is not supported (the line is not a row).
 *
 * Checks that are reported, not hidden: per_alloc is recomputed as floor(bytes / diff) (0
 * when diff is 0, as poolmon does) and a different value in the file sets
 * PW_POOLMON_ROW_PER_ALLOC_MISMATCH; allocs - frees != diff (also modulo 2^32, since Windows
 * counters are 32-bit ULONGs that wrap) sets PW_POOLMON_ROW_DIFF_MISMATCH. Screens count both.
 *
 * Time stamps. poolmon prints none; capture scripts often echo one before each screen. A line
 * holding only a date-time (`2024-03-14 10:15:00`, `2024-03-14T10:15:00Z`, optionally with
 * `.fff` and a `+hh:mm` offset, cmd's en-US `%date% %time%`: `Tue 03/14/2024 10:15:00.12`, or
 * date(1)'s default output in the C locale with zone UTC, GMT or +hhmm: `Tue Dec  1 16:59:17 UTC
 * 2026`) stamps the next screen; zone-less times are taken as UTC. A screen without one gets the
 * previous screen's time + interval_ms, the first screen start_ms.
 *
 * Rejected: input that is not poolmon (no screen part at all, or a table whose header starts
 * with "Tag" but is not poolmon's, as the pool-tag dumps of WSL#41296) -> PW_ENOTPOOLMON
 * with the line; a row that starts like a row but whose numbers do not parse -> PW_EPARSE
 * (PW_ETRUNCATED when it is the unterminated last line) with line and field; input longer
 * than max_input_bytes or a line longer than max_line_bytes -> PW_ETOOBIG; a NUL byte in
 * 8-bit input -> PW_EPARSE.
 */
#ifndef PW_POOLMON_TEXT_H
#define PW_POOLMON_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sample.h"

#define PW_POOLMON_MAX_INPUT_DEFAULT   ((size_t)256 << 20) /* 256 MiB */
#define PW_POOLMON_MAX_LINE_DEFAULT    ((size_t)64 << 10)  /* 64 KiB */
#define PW_POOLMON_INTERVAL_DEFAULT_MS (15u * 60u * 1000u) /* the documented 15-min procedure */

/* Options; zero-initialise (or pass NULL) for the defaults. */
typedef struct pw_poolmon_opts_s {
    size_t max_input_bytes;  /* raw input ceiling in bytes, 0 = PW_POOLMON_MAX_INPUT_DEFAULT */
    size_t max_line_bytes;   /* line ceiling in bytes (after decoding), 0 = 64 KiB */
    uint64_t start_ms;       /* time of the first screen when the file has none (ms since
                                the Unix epoch; 0 is taken literally) */
    uint64_t interval_ms;    /* spacing of unstamped screens, 0 = 15 min */
    int allow_cut_last_line; /* 1: a last line cut inside a row or header value (a file
                                saved while poolmon was still writing, or truncated by a
                                copy) is left out and reported in doc.cut_line instead of
                                failing the whole capture with PW_ETRUNCATED */
    int skip_bad_rows;       /* 1: a row that cannot be read (a number that does not parse, a
                                pool type that is not Paged/Nonp, a line that is no row
                                between the rows of one screen) does not fail the capture: it
                                is recorded in doc.problems and its screen marked incomplete;
                                a tag that comes twice in one screen (a lost header merged two
                                screens) starts a new screen, recorded and marked incomplete
                                too. 0: such a row fails with its line (PW_EPARSE, PW_ERANGE)
                                and a duplicate tag is kept in its screen. */
} pw_poolmon_opts_t;

/* Header fields present in a screen (pw_poolmon_header_t.has). */
#define PW_POOLMON_HAS_MEMORY        0x001u /* "Memory:" physical memory */
#define PW_POOLMON_HAS_AVAIL         0x002u /* "Avail:" available physical memory */
#define PW_POOLMON_HAS_PAGE_FAULTS   0x004u /* "PageFlts:" page faults per refresh */
#define PW_POOLMON_HAS_INRAM_KRNL    0x008u /* "InRam Krnl:" kernel code in RAM */
#define PW_POOLMON_HAS_INRAM_PAGED   0x010u /* the "P:" after InRam Krnl: paged pool in RAM */
#define PW_POOLMON_HAS_COMMIT        0x020u /* "Commit:" commit charge */
#define PW_POOLMON_HAS_COMMIT_LIMIT  0x040u /* "Limit:" commit limit */
#define PW_POOLMON_HAS_COMMIT_PEAK   0x080u /* "Peak:" commit peak */
#define PW_POOLMON_HAS_POOL_NONPAGED 0x100u /* "Pool N:" nonpaged pool */
#define PW_POOLMON_HAS_POOL_PAGED    0x200u /* the "P:" after Pool N: paged pool */

/* The two header lines; every size in KiB as poolmon prints them ("K" suffix). */
typedef struct pw_poolmon_header_s {
    uint32_t has; /* PW_POOLMON_HAS_* bits; a field without its bit is 0 and unknown */
    uint64_t memory_kb;
    uint64_t avail_kb;
    uint64_t page_faults; /* a count, not KiB */
    uint64_t inram_krnl_kb;
    uint64_t inram_paged_kb;
    uint64_t commit_kb;
    uint64_t commit_limit_kb;
    uint64_t commit_peak_kb;
    uint64_t pool_nonpaged_kb;
    uint64_t pool_paged_kb;
} pw_poolmon_header_t;

/* Row flags (pw_poolmon_row_t.flags). */
#define PW_POOLMON_ROW_HAS_DELTAS         0x01u /* the row had `( n)` delta columns */
#define PW_POOLMON_ROW_PER_ALLOC_MISMATCH 0x02u /* file per_alloc != floor(bytes / diff) */
#define PW_POOLMON_ROW_DIFF_MISMATCH      0x04u /* allocs - frees != diff */
#define PW_POOLMON_ROW_DRIVER_CUT         0x08u /* mapped driver `[...` without its `]` */

typedef struct pw_poolmon_row_s {
    uint8_t tag[4];          /* left-justified, space-padded, case kept (see top) */
    uint8_t pool;            /* PW_POOL_PAGED or PW_POOL_NONPAGED, as the Type column says */
    uint8_t flags;           /* PW_POOLMON_ROW_* */
    uint32_t line;           /* 1-based line of the row in the input */
    uint64_t allocs;         /* cumulative allocations */
    uint64_t frees;          /* cumulative frees */
    uint64_t diff;           /* outstanding allocations, as in the file */
    uint64_t bytes;          /* outstanding bytes */
    uint64_t per_alloc;      /* recomputed: floor(bytes / diff), 0 when diff is 0 */
    uint64_t file_per_alloc; /* the Per Alloc column as printed */
    int64_t allocs_delta;    /* `( n)` columns: change since the previous refresh; 0 ... */
    int64_t frees_delta;     /* ... when the row has none (see PW_POOLMON_ROW_HAS_DELTAS) */
    int64_t bytes_delta;
    const char *mapped_driver; /* trailing text, trimmed, NUL-terminated, owned by the doc;
                                  NULL when the row has none */
} pw_poolmon_row_t;

/* Session of a screen (pw_poolmon_screen_t.session). */
#define PW_POOLMON_SESSION_NONE (-1) /* system pools ("System pool information" or no title) */
#define PW_POOLMON_SESSION_ALL  (-2) /* "All sessions pool information" */

typedef struct pw_poolmon_screen_s {
    const char *title; /* title line, trimmed, owned by the doc; NULL when none */
    int32_t session;   /* PW_POOLMON_SESSION_*, or the N of "Session N pool ..." */
    uint32_t line;     /* 1-based line where the screen starts */
    pw_poolmon_header_t header;
    pw_poolmon_row_t *rows; /* owned by the doc, in file order */
    size_t n_rows;
    uint64_t timestamp_ms;         /* ms since the Unix epoch (see top) */
    uint8_t has_file_time;         /* 1 when timestamp_ms comes from the file */
    uint8_t has_column_header;     /* 1 when the screen had a "Tag Type ..." line */
    uint8_t has_mapped_driver;     /* 1 when the column header names Mapped_Driver */
    uint8_t elided;                /* 1 when a `...` line says rows were left out */
    uint32_t per_alloc_mismatches; /* rows with PW_POOLMON_ROW_PER_ALLOC_MISMATCH */
    uint32_t diff_mismatches;      /* rows with PW_POOLMON_ROW_DIFF_MISMATCH */
    uint32_t incomplete;           /* problems (skip_bad_rows) that make this screen incomplete:
                                      a row left out, or its header lost; 0 = whole */
} pw_poolmon_screen_t;

/* What skip_bad_rows left out (pw_poolmon_problem_t.kind). */
typedef enum {
    PW_POOLMON_BAD_NUMBER = 1,   /* a row whose numbers do not parse (`16x2`): tag and pool known */
    PW_POOLMON_BAD_TYPE = 2,     /* a row whose type is not Paged/Nonp/Nonpaged: tag known */
    PW_POOLMON_NOT_A_ROW = 3,    /* a line that is no row between the rows of one screen */
    PW_POOLMON_DUPLICATE_TAG = 4 /* a tag again in one screen: a new screen starts here, its
                                    header lost (two screens merged) */
} pw_poolmon_problem_kind_t;

#define PW_POOLMON_PROBLEMS_KEPT 1000 /* problems kept in detail; the rest are counted */

typedef struct pw_poolmon_problem_s {
    pw_poolmon_problem_kind_t kind;
    uint32_t line;       /* 1-based line of the row left out (DUPLICATE_TAG: the repeated row) */
    uint32_t screen;     /* 0-based index of the screen it makes incomplete */
    uint32_t first_line; /* DUPLICATE_TAG: line of the tag's first row in the screen before */
    uint8_t has_tag;     /* 1 when tag is known (BAD_NUMBER, BAD_TYPE, DUPLICATE_TAG) */
    uint8_t tag[4];      /* as rows' tags: left-justified, space-padded */
    int8_t pool;         /* PW_POOL_PAGED/NONPAGED when known (BAD_NUMBER, DUPLICATE_TAG), -1 */
    char msg[160];       /* what is wrong, e.g. "unexpected character after the number in column
                            diff"; NUL-terminated, no line number */
} pw_poolmon_problem_t;

typedef enum {
    PW_POOLMON_ENC_8BIT = 0, /* ASCII / ANSI code page / UTF-8 without BOM */
    PW_POOLMON_ENC_UTF8_BOM = 1,
    PW_POOLMON_ENC_UTF16LE = 2, /* Notepad "Unicode" */
    PW_POOLMON_ENC_UTF16BE = 3
} pw_poolmon_encoding_t;

typedef struct pw_poolmon_doc_s {
    pw_poolmon_screen_t *screens; /* owned, in file order */
    size_t n_screens;
    pw_poolmon_encoding_t encoding;
    uint8_t crlf;                   /* 1 when lines ended in CRLF */
    uint32_t lines;                 /* lines in the input */
    uint32_t ignored_lines;         /* noise lines skipped (see top) */
    uint32_t first_ignored_line;    /* 1-based, 0 when none */
    uint32_t cut_line;              /* 1-based last line left out as cut (allow_cut_last_line),
                                       0 when none */
    pw_poolmon_problem_t *problems; /* skip_bad_rows: the first PW_POOLMON_PROBLEMS_KEPT
                                       problems, in file order; owned by the doc */
    size_t n_problems;              /* problems kept in `problems` */
    size_t n_problems_total;        /* all problems (more than n_problems when some were not
                                       kept) */
    size_t screens_incomplete;      /* screens whose `incomplete` is not 0 */
    size_t problems_cap_;           /* private */
    char *text_;                    /* private: decoded text the strings point into */
    size_t screens_cap_;            /* private */
} pw_poolmon_doc_t;

/* Parses `len` bytes at `data` (need not be NUL-terminated) into `out`, which is initialised
 * by the call (its previous contents are not freed). `opts` may be NULL (defaults). On
 * success returns 0 and `out` owns its memory until pw_poolmon_doc_close; on failure returns
 * a negative code, fills `diag` (may be NULL: line 1-based; offset in bytes into the input, or
 * into the UTF-8 decoding for UTF-16 input; field names the column or header field) and
 * leaves `out` empty (nothing to close, closing is harmless). Errors: PW_ETOOBIG (input or a
 * line over its ceiling), PW_ENOTPOOLMON (not a poolmon capture, line of the first offending
 * line), PW_EPARSE (malformed row, header value, NUL byte, bad UTF-16), PW_ETRUNCATED (last
 * line cut inside a row, or odd-length UTF-16), PW_ERANGE (a number over 2^64-1), PW_ENOMEM,
 * PW_EINVAL (NULL data with len > 0, or NULL out). */
int pw_poolmon_parse(const char *data, size_t len, const pw_poolmon_opts_t *opts,
                     pw_poolmon_doc_t *out, pw_diag_t *diag);

/* Whether the capture's last screen was cut short (a file saved or copied while poolmon was
 * still writing): it has rows, fewer than the screen before it with the same title, and no
 * `...` line said rows were left out. poolmon draws its whole table every screen and a tag,
 * once allocated, stays in the kernel's tag table, so a later screen of one capture never has
 * fewer rows than an earlier one unless it was cut. An import leaves such a screen out: the
 * tags missing from it would read as freed, and it would become the host's current table.
 * Sets *rows and *rows_before (either may be NULL) when it returns 1; returns 0 otherwise
 * (also for NULL doc). */
int pw_poolmon_last_screen_partial(const pw_poolmon_doc_t *doc, size_t *rows, size_t *rows_before);

/* Frees what pw_poolmon_parse allocated; the doc is empty afterwards. Accepts NULL. */
void pw_poolmon_doc_close(pw_poolmon_doc_t *doc);

/* Appends the rows of `screen` to `out` (initialised; not reset first) and sets its
 * timestamp_ms and totals. Each row becomes an entry with its 4 tag bytes; pool: Nonp rows are
 * PW_POOL_NONPAGED, Paged rows PW_POOL_PAGED, except in session screens (session != NONE),
 * where Paged rows are PW_POOL_SESSION (session pool is paged session space), keyed by the
 * screen's session ("Session N pool information": tag + N, pw_sample_add_session in sample.h;
 * "All sessions pool information": the 4-byte tag, the sum over sessions). Totals from the
 * header, KiB * 1024: paged/nonpaged pool, physical memory, available, commit, commit limit and
 * peak; absent fields stay 0 (unknown), except the pool totals of a non-session screen, which
 * then are the sum of the screen's rows of that pool (a lower bound when the screen was
 * filtered). Limits are not in a poolmon screen and stay 0.
 * Returns 0 or PW_ENOMEM (out may then hold part of the rows). */
int pw_poolmon_screen_to_sample(const pw_poolmon_screen_t *screen, pw_sample_t *out);

/* Reads `len` bytes of one line that should hold only a date-time in one of the forms above.
 * Returns 1 and sets *out_ms (ms since the Unix epoch), 0 when the line is not a time, -1 when
 * it is date(1) output whose zone is a name other than UTC/GMT (CET, EST...: its offset is not
 * in the line; the caller says so rather than guess). */
int pw_poolmon_parse_time(const char *line, size_t len, uint64_t *out_ms);

/* "paged" or "nonpaged": the JSON `type` of a row's pool (PW_POOL_PAGED / NONPAGED). */
const char *pw_poolmon_type_name(int pool);

#endif /* PW_POOLMON_TEXT_H */
