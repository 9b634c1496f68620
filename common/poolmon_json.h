/* poolmon_json.h: the JSON account of the rows a skip_bad_rows parse could not read, shared by
 * `poolwatch parse --json` (cli/cmd_parse.c) and the import API's answer
 * (collector/api/api_import.c). Header-only: common/ does not link jansson; each includer does.
 */
#ifndef PW_POOLMON_JSON_H
#define PW_POOLMON_JSON_H

#include <jansson.h>

#include "poolmon_text.h"

/* The rows of `doc->problems` as a JSON array of {line, screen (1-based), tag|null, type
 * ("paged"/"nonpaged")|null, kind ("number", "type", "not_a_row", "duplicate_tag"), message}.
 * Returns a new reference, or NULL when out of memory. */
static inline json_t *pw_poolmon_problems_json(const pw_poolmon_doc_t *doc)
{
    static const char *const kinds[] = {"", "number", "type", "not_a_row", "duplicate_tag"};
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < doc->n_problems; i++) {
        const pw_poolmon_problem_t *pr = &doc->problems[i];
        char tag[17];
        if (pr->has_tag)
            pw_tag_format(pr->tag, 4, tag, sizeof(tag));
        json_t *o = json_pack(
            "{s:I,s:I,s:o,s:o,s:s,s:s}", "line", (json_int_t)pr->line, "screen",
            (json_int_t)pr->screen + 1, "tag", pr->has_tag ? json_string(tag) : json_null(), "type",
            pr->pool >= 0 ? json_string(pw_poolmon_type_name(pr->pool)) : json_null(), "kind",
            kinds[pr->kind], "message", pr->msg);
        if (o == NULL || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

#endif /* PW_POOLMON_JSON_H */
