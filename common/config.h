/* config.h: table-driven configuration (fluent-bit config maps, Redis
 * static_configs[]). A binary declares its options once, as rows of a table; one generic
 * routine applies defaults, reads an INI file (parsed by inih, https://github.com/benhoyt/inih,
 * Debian package libinih-dev), applies command-line overrides, range-checks, dumps the
 * effective configuration and writes a documented example file from the same rows.
 *
 * Order of use in a main():
 *
 *     agent_config_t cfg;                     // plain struct, fields named by the table
 *     pw_diag_t d;
 *     const char *path = NULL;
 *     pw_config_find_flag(argc, argv, "config", &path);
 *     if (pw_config_defaults(tab, &cfg, &d) < 0 ||
 *         (path != NULL && pw_config_load_file(tab, &cfg, path, &d) < 0) ||
 *         pw_config_apply_args(tab, &cfg, argc, argv, own_flags, &optind, &d) < 0 ||
 *         pw_config_check(tab, &cfg, &d) < 0)
 *         die(d.msg);                         // msg names file, line, key and problem
 *     ...
 *     pw_config_free(tab, &cfg);
 *
 * File syntax (what inih accepts, with the choices below):
 *   - `[section]` headers and `name = value` lines (`name: value` too); whitespace around
 *     names and values is stripped; a UTF-8 BOM is allowed;
 *   - comments: lines starting with `#` or `;`, and inline ` ; comment` (a `;` preceded by
 *     whitespace). A value therefore cannot contain whitespace followed by `;`;
 *   - one pair of surrounding double quotes is removed from string values (to keep leading
 *     or trailing spaces); there are no escapes;
 *   - no continuation lines (an indented line is an ordinary line);
 *   - every key belongs to a section; unknown sections and keys are errors;
 *   - a key given twice in one file is an error naming both lines (a repeated `ca_file`
 *     is more likely a mistake than an intent, and "last one wins" would hide it);
 *   - limits: PW_CONFIG_MAX_FILE bytes per file, PW_CONFIG_MAX_LINE bytes per line, no NUL
 *     or other control bytes (tab excepted).
 * Command-line values override file values; a later flag overrides an earlier one.
 *
 * Value syntax by type:
 *   STRING    any text (no control bytes); as the struct field `char *`, NULL when unset.
 *   BOOL      true/false, yes/no, on/off, 1/0 (any case); field `bool`.
 *   INT       decimal with optional sign; field `int64_t`.
 *   DURATION  number+unit pairs, units ms, s, m, h, d: "250ms", "10s", "15m", "1h30m";
 *             a bare "0" is allowed; field `uint64_t`, milliseconds.
 *   SIZE      number with optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or kB, MB,
 *             GB, TB (powers of 1000), any case; a bare number is bytes; field `uint64_t`.
 *             Single-letter K/M/G/T are rejected as ambiguous.
 *   ENUM      one of the row's words (any case); field `int`, the word's index.
 *   LIST      comma-separated strings, each trimmed, none empty; "" is the empty list;
 *             field pw_config_list_t.
 *
 * Thread safety: inih keeps its options in process globals, which the load functions set;
 * load configuration from one thread at a time (in practice: at start-up, in main).
 *
 * Errors (all functions): PW_ECONFIG for a value or key that is not accepted, PW_EPARSE for
 * INI syntax, PW_ETOOBIG for size limits, PW_ENOMEM, negated errno for file access. The
 * pw_diag_t (may be NULL) gets the code, the 1-based line (0 for the command line), the byte
 * offset of the line (the argv index for the command line), field = "section.name" (or the
 * argument) and a message "<origin>:<line>: section.name: problem" ready to print.
 */
#ifndef PW_CONFIG_H
#define PW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define PW_CONFIG_MAX_FILE ((size_t)1 << 20) /* bytes per configuration file (1 MiB) */
#define PW_CONFIG_MAX_LINE ((size_t)4096)    /* bytes per line, without the line end */

typedef enum {
    PW_CONFIG_STRING = 1, /* char *            */
    PW_CONFIG_BOOL,       /* bool              */
    PW_CONFIG_INT,        /* int64_t           */
    PW_CONFIG_DURATION,   /* uint64_t, ms      */
    PW_CONFIG_SIZE,       /* uint64_t, bytes   */
    PW_CONFIG_ENUM,       /* int, word index   */
    PW_CONFIG_LIST        /* pw_config_list_t  */
} pw_config_type_t;

/* Row flags.
 * PW_CONFIG_REQUIRED: a STRING or LIST without default; pw_config_check fails while it is
 *   NULL / empty.
 * PW_CONFIG_PATH: a STRING naming a file; a relative path read from a file is taken relative
 *   to that file's directory (systemd starts us in /); on the command line it stays relative
 *   to the working directory.
 * PW_CONFIG_POOL_UNITS: a SIZE that is a pool limit: kB, MB, GB and TB count in powers of 1024
 *   as Windows and Microsoft's tables write pool limits ("128 MB" = 134,217,728 bytes), the
 *   rule of pw_config_parse_pool_size; KiB..TiB as usual; a bare number other than 0 is
 *   refused (128 would be 128 bytes, which no pool has: bytes are written with B, "128B"), as
 *   poolwatch import refuses it, and printed values of bytes carry their B. */
#define PW_CONFIG_REQUIRED   0x1u
#define PW_CONFIG_PATH       0x2u
#define PW_CONFIG_POOL_UNITS 0x4u

/* A LIST value: `n` strings. items (and the strings) live in one allocation owned by the
 * config; NULL when n == 0. */
typedef struct pw_config_list_s {
    char **items;
    size_t n;
} pw_config_list_t;

/* One option. Tables are arrays ending with PW_CONFIG_END (name == NULL). Section and name
 * are [A-Za-z0-9_-]+; the pair is unique within a table. */
typedef struct pw_config_opt_s {
    const char *section;      /* INI section, without brackets */
    const char *name;         /* key within the section; NULL ends the table */
    pw_config_type_t type;    /* type of the value and of the struct field */
    const char *def;          /* default as text in the value syntax; NULL (no default) only
                                 for STRING (field NULL) and LIST (empty) */
    size_t offset;            /* offsetof(the binary's config struct, field) */
    int64_t min, max;         /* INT: value range; DURATION: ms; SIZE: bytes; STRING: length
                                 in bytes; LIST: number of items. min = max = 0: no bounds */
    const char *const *words; /* ENUM: the accepted words, NULL-terminated */
    unsigned flags;           /* PW_CONFIG_REQUIRED | PW_CONFIG_PATH */
    const char *desc;         /* one-line description, for the example file */
} pw_config_opt_t;

/* Row helpers. `st` is the config struct type, `field` its member; the extra sizeof term is a
 * compile-time check that the member has the C type the row's type needs (a mismatch is a
 * "comparison of distinct pointer types" diagnostic). */
#define PW_CONFIG_FIELD_(st, field, ctype)                                                         \
    (offsetof(st, field) + 0 * sizeof(&((st *)0)->field == (ctype *)0))
#define PW_CONFIG_OPT_STRING(sec, nm, def, st, field, flags, desc)                                 \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_STRING, (def), PW_CONFIG_FIELD_(st, field, char *), 0, 0, NULL,     \
            (flags), (desc)                                                                        \
    }
#define PW_CONFIG_OPT_BOOL(sec, nm, def, st, field, desc)                                          \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_BOOL, (def), PW_CONFIG_FIELD_(st, field, bool), 0, 0, NULL, 0,      \
            (desc)                                                                                 \
    }
#define PW_CONFIG_OPT_INT(sec, nm, def, min, max, st, field, desc)                                 \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_INT, (def), PW_CONFIG_FIELD_(st, field, int64_t), (min), (max),     \
            NULL, 0, (desc)                                                                        \
    }
#define PW_CONFIG_OPT_DURATION(sec, nm, def, min_ms, max_ms, st, field, desc)                      \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_DURATION, (def), PW_CONFIG_FIELD_(st, field, uint64_t), (min_ms),   \
            (max_ms), NULL, 0, (desc)                                                              \
    }
#define PW_CONFIG_OPT_SIZE(sec, nm, def, min_b, max_b, st, field, desc)                            \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_SIZE, (def), PW_CONFIG_FIELD_(st, field, uint64_t), (min_b),        \
            (max_b), NULL, 0, (desc)                                                               \
    }
/* A pool limit (PW_CONFIG_POOL_UNITS): 128MB = 128MiB. */
#define PW_CONFIG_OPT_POOL_SIZE(sec, nm, def, min_b, max_b, st, field, desc)                       \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_SIZE, (def), PW_CONFIG_FIELD_(st, field, uint64_t), (min_b),        \
            (max_b), NULL, PW_CONFIG_POOL_UNITS, (desc)                                            \
    }
#define PW_CONFIG_OPT_ENUM(sec, nm, def, words, st, field, desc)                                   \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_ENUM, (def), PW_CONFIG_FIELD_(st, field, int), 0, 0, (words), 0,    \
            (desc)                                                                                 \
    }
#define PW_CONFIG_OPT_LIST(sec, nm, def, min_n, max_n, st, field, flags, desc)                     \
    {                                                                                              \
        (sec), (nm), PW_CONFIG_LIST, (def), PW_CONFIG_FIELD_(st, field, pw_config_list_t),         \
            (min_n), (max_n), NULL, (flags), (desc)                                                \
    }
#define PW_CONFIG_END                                                                              \
    {                                                                                              \
        NULL, NULL, 0, NULL, 0, 0, 0, NULL, 0, NULL                                                \
    }

/* Sets every field named by `tab` in `cfg` to its default. The fields must not hold memory
 * from an earlier call (pass a fresh struct, or one given to pw_config_free). Also checks the
 * table itself (unique keys, ENUM words, bounds, defaults that parse and fit), so a unit test
 * that calls it validates a binary's table. Returns 0, PW_ECONFIG (table error: d names the
 * row) or PW_ENOMEM; on failure the fields are safe to pass to pw_config_free. */
int pw_config_defaults(const pw_config_opt_t *tab, void *cfg, pw_diag_t *d);

/* Reads the INI file `path` (at most PW_CONFIG_MAX_FILE bytes) and sets the options it names.
 * Returns 0; PW_EPARSE, PW_ECONFIG, PW_ETOOBIG (file or line too long), PW_ENOMEM, or a
 * negated errno when the file cannot be opened or read (d->msg names the file). On failure
 * the options before the failing line keep their new values (the caller is expected to stop);
 * everything stays owned by cfg and is released by pw_config_free. */
int pw_config_load_file(const pw_config_opt_t *tab, void *cfg, const char *path, pw_diag_t *d);

/* As pw_config_load_file, for `len` bytes at `data` (need not be NUL-terminated; a NUL byte
 * is an error). `origin` names the input in messages ("<string>" when NULL). PATH options
 * stay as written (there is no file directory). */
int pw_config_load_buffer(const pw_config_opt_t *tab, void *cfg, const char *data, size_t len,
                          const char *origin, pw_diag_t *d);

/* pw_config_load_buffer on a NUL-terminated string, origin "<string>". */
int pw_config_load_string(const pw_config_opt_t *tab, void *cfg, const char *text, pw_diag_t *d);

/* Sets one option from text. `key` is "section.name", or "name" alone when only one section
 * has it; '-' and '_' are the same character in `key`. The value is parsed and checked first,
 * so on failure the option is unchanged. Returns 0, PW_ECONFIG (unknown or ambiguous key,
 * bad value) or PW_ENOMEM. Used for the command line and for remote "set" commands. */
int pw_config_set(const pw_config_opt_t *tab, void *cfg, const char *key, const char *value,
                  pw_diag_t *d);

/* Applies command-line overrides from argv[1 .. argc-1] (argv[0] is the program name):
 * `--key=value`, or `--key value` (the next argument is the value), with key as in
 * pw_config_set; a BOOL option also takes `--key` alone for true (it never consumes the next
 * argument). Processing stops at `--` (skipped) or at the first argument that does not start
 * with `--` (a positional argument, "-", or a single-dash flag such as "-h", which the caller
 * handles); *optind (may be NULL) receives the index of that argument, argc when none.
 * `own_flags` (NULL-terminated, may be NULL) lists flags the binary handles itself, which are
 * skipped: a name ending in '=' takes a value ("config=" skips `--config FILE`), others do
 * not ("check-config"). Returns 0, PW_ECONFIG (unknown option, missing value, bad value;
 * d->offset is the argv index) or PW_ENOMEM. */
int pw_config_apply_args(const pw_config_opt_t *tab, void *cfg, int argc, char **argv,
                         const char *const *own_flags, int *optind, pw_diag_t *d);

/* Finds `--name=value` or `--name value` in argv[1 ..] before any `--`; for finding the
 * config file path before the file is loaded. Returns 1 and sets *value (the argument's text,
 * or NULL when the flag is last or given as `--name` with no value) if present (the last
 * occurrence wins), 0 if absent. Borrowed pointers into argv. */
int pw_config_find_flag(int argc, char **argv, const char *name, const char **value);

/* Checks what can only be checked once all sources are applied: PW_CONFIG_REQUIRED options
 * are set (STRING non-NULL and non-empty, LIST non-empty). Returns 0 or PW_ECONFIG naming
 * the first missing option. */
int pw_config_check(const pw_config_opt_t *tab, const void *cfg, pw_diag_t *d);

/* Writes the effective configuration as INI (for --check-config): every option, grouped by
 * section in table order, values in canonical form (durations and sizes in the largest exact
 * unit), unset strings as an empty value commented out. Reading the output back gives the
 * same values. Returns 0 or PW_EIO (write error on `out`). */
int pw_config_dump(const pw_config_opt_t *tab, const void *cfg, FILE *out);

/* Writes a documented example file from the rows: per option the description, type and unit,
 * range, accepted words, flags, then `name = default` (commented out when there is no
 * default). `title` (may be NULL) becomes the first comment line. Reading the example back
 * gives the defaults. Returns 0 or PW_EIO. */
int pw_config_write_example(const pw_config_opt_t *tab, const char *title, FILE *out);

/* Writes the options of `tab` for --help, in table order (the rows --print-example documents):
 * per option a line "  --section.name=TYPE (default VALUE)" (TYPE: string, path, bool,
 * integer, duration, size, list, or the accepted words a|b|c; "(required)" for a required
 * option, nothing for one without a default), then its description wrapped under it, indented
 * by 6. Returns 0 or PW_EIO (write error on `out`). */
int pw_config_write_options(const pw_config_opt_t *tab, FILE *out);

/* Formats the value of one option (canonical form, as in pw_config_dump) into buf (`size`
 * bytes, NUL-terminated, truncated if too small). Returns the length it needed (snprintf
 * semantics) or PW_EINVAL for an unknown key. */
int pw_config_format(const pw_config_opt_t *tab, const void *cfg, const char *key, char *buf,
                     size_t size);

/* Frees the strings and lists that the functions above stored in `cfg` and sets those fields
 * to NULL / empty. Other fields are left alone. Accepts cfg == NULL. */
void pw_config_free(const pw_config_opt_t *tab, void *cfg);

/* Parses a duration (DURATION syntax above) into *ms. Returns 0, or PW_ERANGE (does not fit
 * in 64 bits) or PW_EINVAL (syntax); *ms is written only on success. */
int pw_config_parse_duration_ms(const char *text, uint64_t *ms);

/* Parses a size (SIZE syntax above) into *bytes. Returns 0, PW_ERANGE or PW_EINVAL; *bytes is
 * written only on success. */
int pw_config_parse_size(const char *text, uint64_t *bytes);

/* Parses a pool limit into *bytes: the SIZE syntax, but kB, MB, GB and TB count in powers of
 * 1024, as Windows and Microsoft's "Memory Limits for Windows Releases" write pool limits
 * ("128 MB" = 134,217,728 bytes; PW_CONFIG_POOL_UNITS). The agent's [limits] and the CLI's
 * import --nonpaged-limit / --paged-limit use it. Returns 0, PW_ERANGE or PW_EINVAL; *bytes is
 * written only on success. */
int pw_config_parse_pool_size(const char *text, uint64_t *bytes);

#endif /* PW_CONFIG_H */
