/* test_api_pool.c: the pool table's order, selection and filters (GET /api/v1/hosts/H/pool).
 *
 * The handler sorts on integer keys (the column, then the tag's first 8 bytes), falls back to
 * the whole tag and the pool type on ties, keeps a k-item heap when a limit is given and
 * matches include/exclude patterns once per tag on its printable form. These tests pin the
 * cases where such shortcuts go wrong:
 *  - host "P": ties beyond the 8-byte prefix (LongTagNameA/B), a tag that is a prefix of
 *    another ("Ab" and "Ab\0"), one tag in two pools, escaped tags ("\x01ab", "a\b"), a 32-bit
 *    counter that wrapped and one that was reset. Every expected order and value is worked
 *    out by hand in the comments.
 *  - host "R": 436 rows with many equal values; for every sort column, order and by_change,
 *    the answer is compared with a reference order computed here from the inputs (plain
 *    insertion sort), and every limit's rows with the first rows of that order.
 * Hosts are made through the collector's own ingest by the test double (double.h). */
#include "test_util.h"

#include <jansson.h>

#include "api.h"
#include "delta.h"
#include "double.h"
#include "fleet_agg.h"
#include "linux_series.h"

static pw_double_t g_d;

static void add(pw_sample_t *s, const char *tag, size_t len, pw_pool_t pool, uint64_t a, uint64_t f,
                uint64_t bytes)
{
    assert_int_equal(pw_sample_add(s, tag, len, pool, a, f, a - f, bytes), 0);
}

static void apply(pw_delta_enc_t *e, pw_host_t *h, const pw_sample_t *s)
{
    assert_int_equal(pw_double_send(&g_d, e, h, s), 0);
}

/* Host P (see the file comment). */
static void build_p(void)
{
    pw_host_t *h = pw_double_stream(&g_d, "P", 32, 0);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = 1000;
    add(&s, "Wrap", 4, PW_POOL_NONPAGED, 0xFFFFFFF0u, 0xFFFFFFE0u, 100);
    add(&s, "Rset", 4, PW_POOL_NONPAGED, 1000, 500, 5000);
    add(&s, "LongTagNameA", 12, PW_POOL_NONPAGED, 10, 5, 300);
    add(&s, "LongTagNameB", 12, PW_POOL_NONPAGED, 10, 5, 300);
    add(&s, "Ab", 2, PW_POOL_PAGED, 5, 1, 64);
    add(&s, "Same", 4, PW_POOL_PAGED, 7, 2, 700);
    add(&s, "Same", 4, PW_POOL_NONPAGED, 7, 2, 700);
    apply(&e, h, &s);
    pw_sample_reset(&s);
    s.seq = 2;
    s.timestamp_ms = 2000;
    add(&s, "Wrap", 4, PW_POOL_NONPAGED, 0x10, 0x08, 160);
    add(&s, "Rset", 4, PW_POOL_NONPAGED, 10, 4, 600);
    add(&s, "LongTagNameA", 12, PW_POOL_NONPAGED, 20, 5, 400);
    add(&s, "LongTagNameB", 12, PW_POOL_NONPAGED, 20, 5, 400);
    add(&s, "Ab", 2, PW_POOL_PAGED, 5, 1, 64);
    add(&s, "Ab\0", 3, PW_POOL_PAGED, 3, 0, 64); /* new */
    add(&s, "Same", 4, PW_POOL_PAGED, 9, 2, 900);
    add(&s, "Same", 4, PW_POOL_NONPAGED, 9, 2, 900);
    add(&s,
        "\x01"
        "ab",
        3, PW_POOL_NONPAGED, 4, 0, 64);            /* new */
    add(&s, "a\\b", 3, PW_POOL_NONPAGED, 2, 1, 8); /* new */
    apply(&e, h, &s);
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
}

/* Host R: tags "R000".."R199" in both pools and "LongLong00".."LongLong35" (the same first 8
 * bytes) nonpaged; values from a fixed generator over a small range (many ties); every 17th
 * row is new in the second sample. The inputs are kept for the reference order. */
#define R_ROWS 436
typedef struct ref_s {
    char tag[16];
    size_t len;
    int pool;
    uint64_t v[5]; /* allocs, frees, diff, bytes, per_alloc (second sample) */
    int64_t ch[4]; /* changes of allocs, frees, diff, bytes */
} ref_t;
static ref_t g_ref[R_ROWS];

static uint64_t g_rng = 12345;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static void build_r(void)
{
    pw_host_t *h = pw_double_stream(&g_d, "R", 32, 0);
    assert_non_null(h);
    size_t n = 0;
    for (int i = 0; i < 200; i++)
        for (int p = 0; p < 2; p++, n++) {
            snprintf(g_ref[n].tag, sizeof(g_ref[n].tag), "R%03d", i);
            g_ref[n].len = 4;
            g_ref[n].pool = p;
        }
    for (int i = 0; i < 36; i++, n++) {
        snprintf(g_ref[n].tag, sizeof(g_ref[n].tag), "LongLong%02d", i);
        g_ref[n].len = 10;
        g_ref[n].pool = PW_POOL_NONPAGED;
    }
    assert_int_equal(n, R_ROWS);
    uint64_t a1[R_ROWS], f1[R_ROWS], b1[R_ROWS];
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (int k = 1; k <= 2; k++) {
        pw_sample_reset(&s);
        s.seq = (uint64_t)k;
        s.timestamp_ms = 1000u * (unsigned)k;
        for (size_t i = 0; i < R_ROWS; i++) {
            uint64_t a = 100 + rnd() % 4, f = rnd() % 3, b = (rnd() % 3) * 64;
            if (k == 1) {
                a1[i] = a, f1[i] = f, b1[i] = b;
                if (i % 17 == 0)
                    continue; /* new in the second sample */
            } else {
                ref_t *r = &g_ref[i];
                int isnew = i % 17 == 0;
                r->v[0] = a, r->v[1] = f, r->v[2] = a - f, r->v[3] = b;
                r->v[4] = a - f ? b / (a - f) : 0;
                r->ch[0] = (int64_t)a - (isnew ? 0 : (int64_t)a1[i]);
                r->ch[1] = (int64_t)f - (isnew ? 0 : (int64_t)f1[i]);
                r->ch[2] = (int64_t)(a - f) - (isnew ? 0 : (int64_t)(a1[i] - f1[i]));
                r->ch[3] = (int64_t)b - (isnew ? 0 : (int64_t)b1[i]);
            }
            add(&s, g_ref[i].tag, g_ref[i].len, (pw_pool_t)g_ref[i].pool, a, f, b);
        }
        apply(&e, h, &s);
    }
    pw_sample_close(&s);
    pw_delta_enc_close(&e);
}

static int setup(void **state)
{
    (void)state;
    if (pw_double_open_with_token(&g_d, "tok", "read") != 0)
        return -1;
    build_p();
    build_r();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pw_double_close(&g_d); /* and the API's tokens */
    return 0;
}

static json_t *pool(const char *host, const char *query)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/hosts/%s/pool", host);
    pw_api_req_t req = {PW_API_GET, path, query, "Bearer tok", NULL, 0, 0};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&g_d.api, &req, &resp);
    if (st != 200)
        fail_msg("%s?%s: %d %.*s", path, query, st, (int)resp.body.len, resp.body.data);
    json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
    pw_api_resp_close(&resp);
    assert_non_null(j);
    return j;
}

static json_int_t geti(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        fail_msg("'%s' is not an integer", k);
    return json_integer_value(v);
}

/* "tag:p|tag:n|..." (p paged, n nonpaged, s session) of an answer's rows. */
static const char *rows_text(json_t *j, char *buf, size_t size)
{
    json_t *rows = json_object_get(j, "rows");
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        size_t o = strlen(buf);
        snprintf(buf + o, size - o, "%s%s:%c", i ? "|" : "",
                 json_string_value(json_object_get(r, "tag")),
                 json_string_value(json_object_get(r, "type"))[0]);
    }
    return buf;
}

static void check_p(const char *query, const char *expect)
{
    char buf[1024];
    json_t *j = pool("P", query);
    if (strcmp(rows_text(j, buf, sizeof(buf)), expect) != 0)
        fail_msg("P?%s:\n got  %s\n want %s", query, buf, expect);
    json_decref(j);
}

/* "tag:s:N|..." of an answer's session rows (N the session). */
static void check_s(const char *query, const char *expect)
{
    char buf[1024] = "";
    json_t *j = pool("S", query);
    json_t *rows = json_object_get(j, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        size_t o = strlen(buf);
        snprintf(buf + o, sizeof(buf) - o, "%s%s:%c:%lld", i ? "|" : "",
                 json_string_value(json_object_get(r, "tag")),
                 json_string_value(json_object_get(r, "type"))[0],
                 (long long)json_integer_value(json_object_get(r, "session")));
    }
    if (strcmp(buf, expect) != 0)
        fail_msg("S?%s:\n got  %s\n want %s", query, buf, expect);
    json_decref(j);
}

static void test_p_orders(void **state)
{
    (void)state;
    /* bytes: Same 900 (paged before nonpaged), Rset 600, LongTagNameA/B 400 (they differ
     * in byte 12), Wrap 160, then 64: "\x01ab" (0x01 < 'A'), "Ab", "Ab\0" (the shorter
     * first), and a\b 8. */
    check_p("sort=bytes", "Same:p|Same:n|Rset:n|LongTagNameA:n|LongTagNameB:n|Wrap:n|"
                          "0x016162:n|Ab:p|0x416200:p|a\\\\b:n");
    /* Ascending: ties still by tag ascending. */
    check_p("sort=bytes&order=asc", "a\\\\b:n|0x016162:n|Ab:p|0x416200:p|Wrap:n|LongTagNameA:n|"
                                    "LongTagNameB:n|Rset:n|Same:p|Same:n");
    /* Tags by bytes: 0x01 < 'A' < 'L' < 'R' < 'S' < 'W' < 'a'. */
    check_p("sort=tag", "0x016162:n|Ab:p|0x416200:p|LongTagNameA:n|LongTagNameB:n|Rset:n|Same:p|"
                        "Same:n|Wrap:n|a\\\\b:n");
    check_p("sort=tag&order=desc", "a\\\\b:n|Wrap:n|Same:n|Same:p|Rset:n|LongTagNameB:n|"
                                   "LongTagNameA:n|0x416200:p|Ab:p|0x016162:n");
    /* allocs changes: Wrap 0x10 - 0xFFFFFFF0 mod 2^32 = 32, LongTagName* 10, \x01ab 4 (new),
     * Ab\0 3 (new), Same 2 and 2, a\b 2 (new), Ab 0, Rset 10 - 1000 = -990 (a reset). */
    check_p("sort=allocs&by_change=1", "Wrap:n|LongTagNameA:n|LongTagNameB:n|0x016162:n|"
                                       "0x416200:p|Same:p|Same:n|a\\\\b:n|Ab:p|Rset:n");
    /* frees changes: Rset 4 - 500 = -496, zeros by tag, a\b 1, Wrap 0x08 - 0xFFFFFFE0 = 40. */
    check_p("sort=frees&by_change=1&order=asc", "Rset:n|0x016162:n|Ab:p|0x416200:p|"
                                                "LongTagNameA:n|LongTagNameB:n|Same:p|Same:n|"
                                                "a\\\\b:n|Wrap:n");
    /* diff changes: LongTagName* 15 - 5 = 10, \x01ab 4, Ab\0 3, Same 7 - 5 = 2, a\b 1, Ab 0,
     * Wrap 8 - 16 = -8, Rset 6 - 500 = -494. */
    check_p("sort=diff&by_change=1", "LongTagNameA:n|LongTagNameB:n|0x016162:n|0x416200:p|Same:p|"
                                     "Same:n|a\\\\b:n|Ab:p|Wrap:n|Rset:n");
    /* per_alloc: Same 900/7 = 128, Rset 600/6 = 100, Ab 64/4 = 16, \x01ab 64/4 = 16,
     * LongTagName* 400/15 = 26, Ab\0 64/3 = 21, Wrap 160/8 = 20, a\b 8/1 = 8. */
    check_p("sort=per_alloc", "Same:p|Same:n|Rset:n|LongTagNameA:n|LongTagNameB:n|0x416200:p|"
                              "Wrap:n|0x016162:n|Ab:p|a\\\\b:n");

    json_t *j = pool("P", "sort=tag&include=Wrap,Rset");
    json_t *rows = json_object_get(j, "rows");
    json_t *rset = json_array_get(rows, 0), *wrap = json_array_get(rows, 1);
    assert_int_equal(geti(rset, "allocs_change"), -990);
    assert_int_equal(geti(rset, "frees_change"), -496);
    assert_int_equal(geti(rset, "diff_change"), -494);   /* 6 - 500 */
    assert_int_equal(geti(rset, "bytes_change"), -4400); /* 600 - 5000 */
    assert_int_equal(geti(wrap, "allocs"), 16);
    assert_int_equal(geti(wrap, "allocs_change"), 32);
    assert_int_equal(geti(wrap, "frees_change"), 40);
    assert_int_equal(geti(wrap, "diff_change"), -8);
    assert_int_equal(geti(wrap, "bytes_change"), 60);
    json_decref(j);
}

static void test_p_limits(void **state)
{
    (void)state;
    check_p("limit=3", "Same:p|Same:n|Rset:n");
    /* The cut falls between the two LongTagName rows: the tie is decided past byte 8. */
    check_p("limit=4", "Same:p|Same:n|Rset:n|LongTagNameA:n");
    check_p("limit=4&order=asc", "a\\\\b:n|0x016162:n|Ab:p|0x416200:p");
    check_p("sort=tag&order=desc&limit=2", "a\\\\b:n|Wrap:n");
    check_p("limit=0", "");
    const char *all = "Same:p|Same:n|Rset:n|LongTagNameA:n|LongTagNameB:n|Wrap:n|0x016162:n|Ab:p|"
                      "0x416200:p|a\\\\b:n";
    check_p("limit=10", all);
    check_p("limit=11", all);
    json_t *j = pool("P", "limit=3&pool=nonpaged");
    assert_int_equal(geti(j, "count"), 3);
    assert_int_equal(geti(j, "total_rows"), 7); /* nonpaged rows */
    assert_int_equal(geti(j, "table_rows"), 10);
    json_decref(j);
}

static void test_p_patterns(void **state)
{
    (void)state;
    /* Patterns apply to the printable form: the binary tag 01 'a' 'b' (shown 0x016162) is
     * matched by 0x01*, "a\b" (shown a\\b) by a\\*, "Ab\0" (0x416200) by 0x416200. */
    check_p("include=0x01*", "0x016162:n");
    check_p("include=a%5C%5C*", "a\\\\b:n");
    check_p("include=0x416200", "0x416200:p");
    check_p("include=Ab", "Ab:p");
    check_p("include=LongTagName%3F&exclude=*B", "LongTagNameA:n");
    check_p("include=S*,W*&pool=nonpaged&sort=tag", "Same:n|Wrap:n");
    /* Tags with an 'a' in their text go: LongTagName*, Same, Wrap, a\b (the binary tags'
     * texts, 0x016162 and 0x416200, have none). */
    check_p("exclude=*a*&sort=tag", "0x016162:n|Ab:p|0x416200:p|Rset:n");
    /* Texts of 4 characters go: Wrap, Rset, Same twice and a\\b (a, two backslashes, b). */
    check_p("include=*&exclude=%3F%3F%3F%3F&sort=tag",
            "0x016162:n|Ab:p|0x416200:p|LongTagNameA:n|LongTagNameB:n");
    json_t *j = pool("P", "include=,");
    assert_int_equal(geti(j, "total_rows"), 0); /* a list of empty patterns matches nothing */
    json_decref(j);
    j = pool("P", "exclude=");
    assert_int_equal(geti(j, "total_rows"), 10);
    json_decref(j);
}

/* ---- host R against a reference order ------------------------------------------------------ */

static int g_sort, g_desc, g_change;

static int ref_cmp_tag(const ref_t *x, const ref_t *y)
{
    int c = memcmp(x->tag, y->tag, x->len < y->len ? x->len : y->len);
    if (c == 0)
        c = (int)x->len - (int)y->len;
    if (c == 0)
        c = x->pool - y->pool;
    return c;
}

/* x before y? sort 0 tag, 1..5 allocs frees diff bytes per_alloc. */
static int ref_before(const ref_t *x, const ref_t *y)
{
    if (g_sort == 0)
        return g_desc ? ref_cmp_tag(x, y) > 0 : ref_cmp_tag(x, y) < 0;
    if (g_change && g_sort < 5) {
        int64_t u = x->ch[g_sort - 1], v = y->ch[g_sort - 1];
        if (u != v)
            return g_desc ? u > v : u < v;
    } else {
        uint64_t u = x->v[g_sort - 1], v = y->v[g_sort - 1];
        if (u != v)
            return g_desc ? u > v : u < v;
    }
    return ref_cmp_tag(x, y) < 0;
}

static void test_r_reference(void **state)
{
    (void)state;
    static const char *const sorts[] = {"tag", "allocs", "frees", "diff", "bytes", "per_alloc"};
    static const size_t limits[] = {1, 2, 3, 7, 50, 435, 436, 437};
    const ref_t *ord[R_ROWS];
    static char want[R_ROWS * 16], got[R_ROWS * 16];
    for (g_sort = 0; g_sort < 6; g_sort++)
        for (g_desc = 0; g_desc < 2; g_desc++)
            for (g_change = 0; g_change < 2; g_change++) {
                for (size_t i = 0; i < R_ROWS; i++) { /* insertion sort */
                    size_t k = i;
                    while (k > 0 && ref_before(&g_ref[i], ord[k - 1])) {
                        ord[k] = ord[k - 1];
                        k--;
                    }
                    ord[k] = &g_ref[i];
                }
                size_t wl[R_ROWS + 1];
                want[0] = '\0';
                wl[0] = 0;
                for (size_t i = 0; i < R_ROWS; i++) {
                    size_t o = strlen(want);
                    snprintf(want + o, sizeof(want) - o, "%s%s:%c", i ? "|" : "", ord[i]->tag,
                             ord[i]->pool ? 'n' : 'p');
                    wl[i + 1] = strlen(want);
                }
                char q[128];
                snprintf(q, sizeof(q), "sort=%s&order=%s&by_change=%d", sorts[g_sort],
                         g_desc ? "desc" : "asc", g_change);
                json_t *j = pool("R", q);
                if (strcmp(rows_text(j, got, sizeof(got)), want) != 0)
                    fail_msg("R?%s:\n got  %.300s\n want %.300s", q, got, want);
                json_decref(j);
                for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
                    char ql[160];
                    snprintf(ql, sizeof(ql), "%s&limit=%zu", q, limits[l]);
                    j = pool("R", ql);
                    size_t k = limits[l] < R_ROWS ? limits[l] : R_ROWS;
                    if (strlen(rows_text(j, got, sizeof(got))) != wl[k] ||
                        memcmp(got, want, wl[k]) != 0)
                        fail_msg("R?%s:\n got  %.300s\n want %.*s", ql, got, (int)wl[k], want);
                    assert_int_equal(geti(j, "count"), k);
                    assert_int_equal(geti(j, "total_rows"), R_ROWS);
                    json_decref(j);
                }
            }
}

/* The fleet's tag index after an agent restarts with a fresh encoder: its dictionary starts
 * over and the same ids, in the same row positions, name other tags. The index must follow
 * the tags, not the ids (worked by hand: AAAA holds 700 bytes after the restart, BBBB 100). */
/* A Remote Desktop host "S": session-pool rows of sessions 1 and 2 (keys tag + session,
 * sample.h) and one nonpaged row. Each row says its session; ?session=N keeps session N's
 * rows, ?session=all every session's; /series?session=N reads session N's history. */
static void test_sessions(void **state)
{
    (void)state;
    pw_host_t *h = pw_double_stream(&g_d, "S", 32, 0);
    assert_non_null(h);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = 5000;
    assert_int_equal(pw_sample_add_session(&s, "Gh05", 1, 30, 10, 20, 2048), 0);
    assert_int_equal(pw_sample_add_session(&s, "Gh05", 2, 5, 1, 4, 512), 0);
    assert_int_equal(pw_sample_add_session(&s, "Usqm", 2, 7, 7, 0, 0), 0);
    add(&s, "Proc", 4, PW_POOL_NONPAGED, 9, 2, 900);
    assert_int_equal(pw_double_send_first(&g_d, h, &s), 0);
    assert_true(pw_ingest_commit(g_d.ing, NULL) >= 0);
    pw_sample_close(&s);

    json_t *j = pool("S", "sort=bytes");
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 4);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(r0, "tag")), "Gh05");
    assert_string_equal(json_string_value(json_object_get(r0, "type")), "session");
    assert_int_equal(geti(r0, "session"), 1);
    assert_int_equal(geti(r0, "bytes"), 2048);
    assert_int_equal(geti(r0, "diff"), 20);
    assert_string_equal(json_string_value(json_object_get(r1, "tag")), "Proc");
    assert_null(json_object_get(r1, "session")); /* not a session-pool row */
    json_decref(j);
    check_s("sort=bytes&session=2", "Gh05:s:2|Usqm:s:2");
    check_s("sort=bytes&session=all", "Gh05:s:1|Gh05:s:2|Usqm:s:2");
    check_s("sort=bytes&session=7", "");
    check_s("sort=bytes&session=2&include=U*", "Usqm:s:2"); /* patterns see the tag alone */
    pw_api_req_t req = {PW_API_GET, "/api/v1/hosts/S/pool", "session=x", "Bearer tok", NULL, 0, 0};
    pw_api_resp_t resp;
    pw_api_resp_init(&resp);
    assert_int_equal(pw_api_handle(&g_d.api, &req, &resp), 400);
    pw_api_resp_close(&resp);

    pw_api_req_t sreq = {PW_API_GET,
                         "/api/v1/hosts/S/series",
                         "tag=Gh05&pool=session&session=2&from=0&to=10000",
                         "Bearer tok",
                         NULL,
                         0,
                         0};
    pw_api_resp_init(&resp);
    int st = pw_api_handle(&g_d.api, &sreq, &resp);
    if (st != 200)
        fail_msg("series: %d %.*s", st, (int)resp.body.len, resp.body.data);
    j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
    pw_api_resp_close(&resp);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "tag")), "Gh05");
    assert_int_equal(geti(j, "session"), 2);
    json_t *pts = json_object_get(j, "points");
    assert_int_equal(json_array_size(pts), 1);
    assert_int_equal(geti(json_array_get(pts, 0), "bytes"), 512);
    assert_int_equal(geti(json_array_get(pts, 0), "diff"), 4);
    json_decref(j);
}

static void test_index_dict_reset(void **state)
{
    (void)state;
    pw_host_t *h = pw_double_stream(&g_d, "D", 32, 0);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    s.seq = 1;
    s.timestamp_ms = 1000;
    add(&s, "AAAA", 4, PW_POOL_NONPAGED, 10, 5, 100);
    add(&s, "BBBB", 4, PW_POOL_NONPAGED, 10, 5, 700);
    assert_int_equal(pw_double_send(&g_d, &e, h, &s), 0);
    const pw_fleet_agg_t *ix;
    assert_int_equal(pw_fleet_agg_sync(pw_ingest_fleet(g_d.ing), &ix), 0);
    pw_delta_enc_close(&e);
    /* the restarted agent: a fresh encoder meets the tags in the other order */
    assert_int_equal(pw_delta_enc_init(&e, 32), 0);
    pw_sample_reset(&s);
    s.seq = 2;
    s.timestamp_ms = 2000;
    add(&s, "BBBB", 4, PW_POOL_NONPAGED, 10, 5, 100);
    add(&s, "AAAA", 4, PW_POOL_NONPAGED, 10, 5, 700);
    assert_int_equal(pw_double_send(&g_d, &e, h, &s), 0);
    assert_int_equal(pw_fleet_agg_sync(pw_ingest_fleet(g_d.ing), &ix), 0);
    int64_t ia = pw_tagdict_find(&ix->tags, (const uint8_t *)"AAAA", 4);
    int64_t ib = pw_tagdict_find(&ix->tags, (const uint8_t *)"BBBB", 4);
    assert_true(ia >= 0 && ib >= 0);
    uint64_t a = ix->aggs[PW_ROW_KEY(ia, PW_POOL_NONPAGED)].total;
    uint64_t b = ix->aggs[PW_ROW_KEY(ib, PW_POOL_NONPAGED)].total;
    assert_int_equal(a, 700);
    assert_int_equal(b, 100);
    pw_delta_enc_close(&e);
    pw_sample_close(&s);
}

/* One imported row's changes in the pool table: the tag's object, with the row `tag` and `type`
 * of the answer's rows (NULL when absent). */
static json_t *row_of(json_t *j, const char *tag, const char *type)
{
    json_t *rows = json_object_get(j, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        if (strcmp(json_string_value(json_object_get(r, "tag")), tag) == 0 &&
            strcmp(json_string_value(json_object_get(r, "type")), type) == 0)
            return r;
    }
    return NULL;
}

/* An imported host's table shows its last screen's change since the screen before (the
 * new-user trial: every change column 0). Two screens 15 min apart: Ddk 100/40 -> 130/45
 * allocs/frees (diff 60 -> 85, bytes 6000 -> 8500), Mmst paged 10/10 -> 10/10, New  only in
 * the second (a new row: all of it is change). A later import of one screen changes against
 * the table shown until then: Ddk 131/45 (+1, 0, +1, +100). */
static void test_import_changes(void **state)
{
    (void)state;
    pw_sample_t ss[2];
    for (int k = 0; k < 2; k++) {
        pw_sample_init(&ss[k]);
        ss[k].timestamp_ms = 1700000000000ull + (uint64_t)k * 900000;
        ss[k].seq = (uint64_t)k + 1;
    }
    assert_int_equal(pw_sample_add(&ss[0], "Ddk ", 4, PW_POOL_NONPAGED, 100, 40, 60, 6000), 0);
    assert_int_equal(pw_sample_add(&ss[0], "Mmst", 4, PW_POOL_PAGED, 10, 10, 0, 0), 0);
    assert_int_equal(pw_sample_add(&ss[1], "Mmst", 4, PW_POOL_PAGED, 10, 10, 0, 0), 0);
    assert_int_equal(pw_sample_add(&ss[1], "Ddk ", 4, PW_POOL_NONPAGED, 130, 45, 85, 8500), 0);
    assert_int_equal(pw_sample_add(&ss[1], "New ", 4, PW_POOL_NONPAGED, 7, 2, 5, 320), 0);
    pw_ingest_import_res_t ir;
    assert_int_equal(pw_ingest_import(g_d.ing, "imp01", 32, "import:x", ss, 2, &ir, NULL), 0);
    json_t *j = pool("imp01", "");
    assert_int_equal(geti(j, "prev_timestamp_ms"), 1700000000000);
    json_t *r = row_of(j, "Ddk ", "nonpaged");
    assert_non_null(r);
    assert_int_equal(geti(r, "allocs_change"), 30);
    assert_int_equal(geti(r, "frees_change"), 5);
    assert_int_equal(geti(r, "diff_change"), 25);
    assert_int_equal(geti(r, "bytes_change"), 2500);
    r = row_of(j, "Mmst", "paged");
    assert_non_null(r);
    assert_int_equal(geti(r, "allocs_change"), 0);
    assert_int_equal(geti(r, "bytes_change"), 0);
    r = row_of(j, "New ", "nonpaged");
    assert_non_null(r);
    assert_int_equal(geti(r, "allocs_change"), 7);
    assert_int_equal(geti(r, "diff_change"), 5);
    assert_int_equal(geti(r, "bytes_change"), 320);
    json_decref(j);

    pw_sample_t one;
    pw_sample_init(&one);
    one.timestamp_ms = 1700000000000ull + 1800000;
    one.seq = 1;
    assert_int_equal(pw_sample_add(&one, "Ddk ", 4, PW_POOL_NONPAGED, 131, 45, 86, 8600), 0);
    assert_int_equal(pw_ingest_import(g_d.ing, "imp01", 32, "import:y", &one, 1, &ir, NULL), 0);
    j = pool("imp01", "");
    assert_int_equal(geti(j, "prev_timestamp_ms"), 1700000900000);
    r = row_of(j, "Ddk ", "nonpaged");
    assert_non_null(r);
    assert_int_equal(geti(r, "allocs_change"), 1);
    assert_int_equal(geti(r, "frees_change"), 0);
    assert_int_equal(geti(r, "diff_change"), 1);
    assert_int_equal(geti(r, "bytes_change"), 100);
    json_decref(j);
    pw_sample_close(&one);
    for (int k = 0; k < 2; k++)
        pw_sample_close(&ss[k]);
}

/* Held bytes (a Linux slab cache's slabs) from an agent's stream and from an import of saved
 * slabinfo dumps, in the pool table, its held_bytes sort, /metrics, and the stored history.
 * case25's caches by hand: ext3_inode_cache 147614 slabs x 4096 = 604,626,944 B; dentry_cache
 * 37899 x 4096 = 155,234,304; size-4096 184 x 4096 = 753,664. */
static void add_cache(pw_sample_t *s, const char *name, uint64_t objs, uint64_t size, uint64_t held)
{
    assert_int_equal(
        pw_sample_add(s, name, strlen(name), PW_POOL_NONPAGED, 0, 0, objs, objs * size), 0);
    s->entries[s->n - 1].held_bytes = held;
}

static void test_held_bytes(void **state)
{
    (void)state;
    char aid[300];
    Poolwatch__V1__Hello hm;
    pw_double_hello_init(&hm, "L", 64, aid);
    hm.os_family = "linux";
    hm.source_kind = POOLWATCH__V1__SOURCE_KIND__SOURCE_LINUX_SLAB;
    pw_host_t *h = pw_double_hello(&g_d, &hm, 0);
    assert_non_null(h);
    pw_delta_enc_t e;
    assert_int_equal(pw_delta_enc_init(&e, 64), 0);
    pw_sample_t s;
    pw_sample_init(&s);
    for (uint64_t seq = 1; seq <= 2; seq++) {
        pw_sample_reset(&s);
        s.seq = seq;
        s.timestamp_ms = 1000 * seq;
        s.flags = PW_SAMPLE_NO_ALLOCS;
        add_cache(&s, "ext3_inode_cache", 1328526, 416, 604626944);
        /* second sample: dentry_cache one slab more, size-4096 one object and slab more */
        add_cache(&s, "dentry_cache", 1061172, 140, 155234304 + (seq - 1) * 4096);
        add_cache(&s, "size-4096", 184 + (seq - 1), 4096, 753664 + (seq - 1) * 4096);
        apply(&e, h, &s);
    }
    pw_delta_enc_close(&e);
    json_t *j = pool("L", "sort=held_bytes");
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 3);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(r0, "tag")), "ext3_inode_cache");
    assert_int_equal(geti(r0, "held_bytes"), 604626944);
    assert_int_equal(geti(r0, "held_bytes_change"), 0);
    assert_int_equal(geti(r0, "bytes"), 552666816); /* 1328526 x 416: what the objects use */
    assert_string_equal(json_string_value(json_object_get(r1, "tag")), "dentry_cache");
    assert_int_equal(geti(r1, "held_bytes"), 155238400);
    assert_int_equal(geti(r1, "held_bytes_change"), 4096);
    assert_int_equal(geti(r1, "bytes_change"), 0);
    json_decref(j);
    /* by change: dentry_cache and size-4096 both +4096 (ties by tag), ext3_inode_cache 0 */
    char buf[1024];
    j = pool("L", "sort=held_bytes&by_change=1");
    assert_string_equal(rows_text(j, buf, sizeof(buf)),
                        "dentry_cache:n|size-4096:n|ext3_inode_cache:n");
    json_decref(j);
    /* a Windows host's rows have none: null, not 0 */
    j = pool("P", "sort=held_bytes");
    rows = json_object_get(j, "rows");
    assert_true(json_array_size(rows) > 0);
    assert_true(json_is_null(json_object_get(json_array_get(rows, 0), "held_bytes")));
    assert_true(json_is_null(json_object_get(json_array_get(rows, 0), "held_bytes_change")));
    json_decref(j);

    /* /metrics: the Linux host's rows have poolwatch_tag_held_bytes, host P's none */
    pw_buf_t m;
    pw_buf_init(&m, 64u << 20);
    assert_int_equal(pw_api_metrics(&g_d.api, &m), 0);
    assert_int_equal(pw_buf_append(&m, (const uint8_t *)"", 1), 0);
    const char *txt = (const char *)m.data;
    assert_non_null(strstr(txt, "# TYPE poolwatch_tag_held_bytes gauge\n"));
    assert_non_null(strstr(txt, "poolwatch_tag_held_bytes{host=\"L\",tag=\"ext3_inode_cache\","
                                "pool=\"nonpaged\"} 604626944\n"));
    assert_non_null(strstr(txt, "poolwatch_tag_held_bytes{host=\"L\",tag=\"size-4096\","
                                "pool=\"nonpaged\"} 757760\n"));
    assert_null(strstr(txt, "poolwatch_tag_held_bytes{host=\"P\""));
    pw_buf_close(&m);

    /* An import of a shell loop's dumps (tests/fixtures/linux_series, SOURCES.md): dentry has
     * 4200 + 210 k objects, 21 a slab of 1 page: 200 + 10 k slabs; kmalloc-8k 26 slabs of 8
     * pages. The last point (k = 11): dentry 310 x 4096 = 1,269,760 B, kmalloc-8k 851,968 B. */
    size_t len;
    char *text =
        pw_test_read_file(pw_test_fixture("linux_series/slab_loop_12x15min_dentry_leak.txt"), &len);
    pw_linux_series_t ser;
    pw_diag_t d;
    assert_int_equal(pw_linux_series_parse(text, len, NULL, &ser, &d), 0);
    assert_int_equal(ser.n_points, 12);
    pw_sample_t *pts = calloc(ser.n_points, sizeof(*pts));
    assert_non_null(pts);
    for (size_t i = 0; i < ser.n_points; i++) {
        pw_sample_init(&pts[i]);
        assert_int_equal(pw_sample_copy(&pts[i], &ser.points[i].sample), 0);
        pts[i].seq = i + 1;
    }
    uint64_t t0 = ser.points[0].timestamp_ms;
    pw_ingest_import_res_t ir;
    int r = pw_ingest_import(g_d.ing, "Limp", 64, "import-held", pts, ser.n_points, &ir, &d);
    if (r != 0)
        fail_msg("import: %s", d.msg);
    j = pool("Limp", "sort=held_bytes&limit=2");
    assert_string_equal(rows_text(j, buf, sizeof(buf)), "dentry:n|kmalloc-8k:n");
    rows = json_object_get(j, "rows");
    assert_int_equal(geti(json_array_get(rows, 0), "held_bytes"), 1269760);
    assert_int_equal(geti(json_array_get(rows, 0), "bytes"), 6510 * 192);
    assert_int_equal(geti(json_array_get(rows, 1), "held_bytes"), 851968);
    json_decref(j);
    /* an allocation site has no slabs: 0 on a host whose rows have held bytes */
    j = pool("Limp", "include=fs/dcache.c:1700");
    rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 1);
    assert_int_equal(geti(json_array_get(rows, 0), "held_bytes"), 0);
    json_decref(j);
    /* the stored history keeps them: the first point's table (200 dentry slabs), from the
     * chunk as stored, then compacted */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            assert_int_equal(pw_store_flush(g_d.store, &d), 0);
        pw_sample_t got;
        pw_sample_init(&got);
        assert_int_equal(pw_store_table_at(g_d.store, "Limp", t0, &got, &d), 0);
        int found = 0;
        for (size_t i = 0; i < got.n; i++)
            if (got.entries[i].tag_len == 6 && memcmp(got.entries[i].tag, "dentry", 6) == 0) {
                assert_int_equal(got.entries[i].held_bytes, 200 * 4096);
                found = 1;
            }
        assert_true(found);
        pw_sample_close(&got);
    }
    for (size_t i = 0; i < ser.n_points; i++)
        pw_sample_close(&pts[i]);
    free(pts);
    pw_linux_series_close(&ser);
    free(text);
    pw_sample_close(&s);
}

/* The fleet's per-tag index follows a stream step by step: three hosts of 40 rows whose steps
 * change a few rows' bytes (the index visits only those), now and then add or drop a row or
 * start a new dictionary (it re-indexes the host); after every step each aggregate's total and
 * each host's entry are checked against sums made here from the hosts' own tables
 * (pw_host_row), a second method. */
static void test_index_follows_changed_rows(void **state)
{
    (void)state;
    enum { HOSTS = 3, ROWS = 40, STEPS = 80 };
    const char *names[HOSTS] = {"FA", "FB", "FC"};
    pw_host_t *h[HOSTS];
    pw_delta_enc_t e[HOSTS];
    uint64_t bytes[HOSTS][ROWS];
    int present[HOSTS][ROWS];
    uint64_t rng = 0x5eed;
    for (int k = 0; k < HOSTS; k++) {
        h[k] = pw_double_stream(&g_d, names[k], 64, 0);
        assert_non_null(h[k]);
        assert_int_equal(pw_delta_enc_init(&e[k], 64), 0);
        for (int i = 0; i < ROWS; i++) {
            bytes[k][i] = 4096u * (uint64_t)(i + 1);
            present[k][i] = i % 7 != k; /* each host lacks a few rows */
        }
    }
    pw_sample_t s;
    pw_sample_init(&s);
    for (int step = 0; step < STEPS; step++) {
        for (int k = 0; k < HOSTS; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int i = (int)((rng >> 33) % ROWS);
            if (step % 10 == 9) {
                present[k][i] = !present[k][i]; /* a row comes or goes: re-indexed whole */
            } else {
                for (int c = 0; c < 3; c++) { /* a few rows move: only they are visited */
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    bytes[k][(rng >> 33) % ROWS] += 16u * ((rng >> 20) % 100);
                }
            }
            if (step == 40 && k == 1) { /* a restarted agent: a new dictionary */
                pw_delta_enc_close(&e[k]);
                assert_int_equal(pw_delta_enc_init(&e[k], 64), 0);
            }
            pw_sample_reset(&s);
            s.seq = (uint64_t)step + 1;
            s.timestamp_ms = 1000u * ((uint64_t)step + 1);
            for (int r = 0; r < ROWS; r++) {
                char tag[8];
                snprintf(tag, sizeof(tag), "T%03d", r / 2);
                if (present[k][r])
                    add(&s, tag, 4, r % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED, 100 + (uint64_t)r, 10,
                        bytes[k][r]);
            }
            assert_int_equal(pw_double_send(&g_d, &e[k], h[k], &s), 0);
        }
        const pw_fleet_agg_t *ix;
        assert_int_equal(pw_fleet_agg_sync(pw_ingest_fleet(g_d.ing), &ix), 0);
        for (int r = 0; r < ROWS; r++) {
            char tag[8];
            snprintf(tag, sizeof(tag), "T%03d", r / 2);
            int64_t id = pw_tagdict_find(&ix->tags, (const uint8_t *)tag, 4);
            assert_true(id >= 0);
            int pool = r % 2 ? PW_POOL_PAGED : PW_POOL_NONPAGED;
            const pw_agg_t *g = &ix->aggs[PW_ROW_KEY(id, pool)];
            uint64_t want = 0, got = 0;
            int hosts_with = 0;
            for (int k = 0; k < HOSTS; k++) /* from each host's own table */
                for (size_t j = 0; j < pw_host_nrows(h[k]); j++) {
                    pw_host_row_t row;
                    pw_host_row_plain(h[k], j, &row);
                    if (row.tag_len == 4 && memcmp(row.tag, tag, 4) == 0 && row.pool == pool) {
                        want += row.bytes;
                        hosts_with++;
                        for (uint32_t v = 0; v < g->n; v++)
                            if (g->v[v].host == h[k]->index)
                                assert_int_equal(g->v[v].bytes, row.bytes);
                    }
                }
            for (uint32_t v = 0; v < g->n; v++)
                got += g->v[v].bytes;
            assert_int_equal(g->n, hosts_with); /* no other host has these tags */
            assert_int_equal(got, want);
            assert_int_equal(g->total, want);
        }
    }
    pw_sample_close(&s);
    for (int k = 0; k < HOSTS; k++)
        pw_delta_enc_close(&e[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p_orders),         cmocka_unit_test(test_p_limits),
        cmocka_unit_test(test_p_patterns),       cmocka_unit_test(test_r_reference),
        cmocka_unit_test(test_index_dict_reset), cmocka_unit_test(test_index_follows_changed_rows),
        cmocka_unit_test(test_sessions),         cmocka_unit_test(test_held_bytes),
        cmocka_unit_test(test_import_changes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
