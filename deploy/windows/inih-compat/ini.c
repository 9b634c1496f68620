/* ini.c: stand-in for inih's stream parser (contract in ini.h). Written for poolwatch's Windows
 * cross build; semantics follow inih's documentation: sections in [], name=value or name:value,
 * whitespace trimmed, start-of-line comments from ini_start_comment_prefixes, inline comments
 * (a prefix character preceded by whitespace), optional multi-line continuation, UTF-8 BOM. */
#include "ini.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECTION 50
#define MAX_NAME    50

bool ini_allow_multiline = true;
bool ini_allow_bom = true;
char *ini_start_comment_prefixes = ";#";
bool ini_allow_inline_comments = true;
char *ini_inline_comment_prefixes = ";";
int ini_max_line = 200;
bool ini_stop_on_first_error = false;
bool ini_allow_no_value = false;

static char *rstrip(char *s)
{
    char *p = s + strlen(s);
    while (p > s && isspace((unsigned char)p[-1]))
        *--p = '\0';
    return s;
}

static char *lskip(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return (char *)s;
}

/* First of `chars` in s, or of an inline comment prefix preceded by whitespace; else the end. */
static char *find_chars_or_comment(const char *s, const char *chars)
{
    int was_space = 0;
    while (*s && (!chars || !strchr(chars, *s)) &&
           !(ini_allow_inline_comments && was_space && strchr(ini_inline_comment_prefixes, *s))) {
        was_space = isspace((unsigned char)*s);
        s++;
    }
    return (char *)s;
}

static void copy_trunc(char *dst, const char *src, size_t size)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user)
{
    int max_line = ini_max_line > 4 ? ini_max_line : 4;
    char *line = malloc((size_t)max_line);
    char section[MAX_SECTION] = "";
    char prev_name[MAX_NAME] = "";
    int lineno = 0, error = 0;
    if (line == NULL)
        return -2;
    while (reader(line, max_line, stream) != NULL) {
        lineno++;
        char *start = line;
        if (lineno == 1 && ini_allow_bom && (unsigned char)start[0] == 0xEF &&
            (unsigned char)start[1] == 0xBB && (unsigned char)start[2] == 0xBF)
            start += 3;
        int indented = start[0] != '\0' && isspace((unsigned char)start[0]);
        start = lskip(rstrip(start));
        if (strchr(ini_start_comment_prefixes, *start) && *start != '\0') {
            /* comment line */
        } else if (ini_allow_multiline && prev_name[0] && *start && indented) {
            char *end = find_chars_or_comment(start, NULL);
            *end = '\0';
            rstrip(start);
            if (!handler(user, section, prev_name, start) && !error)
                error = lineno;
        } else if (*start == '[') {
            char *end = find_chars_or_comment(start + 1, "]");
            if (*end == ']') {
                *end = '\0';
                copy_trunc(section, start + 1, sizeof(section));
                prev_name[0] = '\0';
            } else if (!error) {
                error = lineno;
            }
        } else if (*start) {
            char *end = find_chars_or_comment(start, "=:");
            if (*end == '=' || *end == ':') {
                *end = '\0';
                char *name = rstrip(start);
                char *value = lskip(end + 1);
                end = find_chars_or_comment(value, NULL);
                *end = '\0';
                rstrip(value);
                copy_trunc(prev_name, name, sizeof(prev_name));
                if (!handler(user, section, name, value) && !error)
                    error = lineno;
            } else if (ini_allow_no_value) {
                *end = '\0';
                rstrip(start);
                if (!handler(user, section, start, NULL) && !error)
                    error = lineno;
            } else if (!error) {
                error = lineno;
            }
        }
        if (error && ini_stop_on_first_error)
            break;
    }
    free(line);
    return error;
}
