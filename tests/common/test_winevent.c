/* test_winevent.c: System-log pool events from their XML (common/winevent.h) on the fixtures of
 * tests/fixtures/winevent/ (written from Microsoft's event schema, SOURCES.md). Expected times
 * are computed with `date -u -d 2026-11-30T14:03:12Z +%s` = 1796047392 (13:58:40 ->
 * 1796047120, 14:05:07 -> 1796047507), plus the fraction's first three digits. */
#include "test_util.h"

#include "alloc.h"
#include "winevent.h"

#define T_2019 (1796047392ull * 1000 + 486) /* 14:03:12.4861234Z */
#define T_2020 (1796047120ull * 1000)       /* 13:58:40.0000000Z */
#define T_2004 (1796047507ull * 1000 + 500) /* 14:05:07.5Z */

typedef struct {
    pw_winevent_t ev[16];
    size_t n;
} got_t;

static int collect(void *arg, const pw_winevent_t *ev)
{
    got_t *g = arg;
    if (g->n < 16)
        g->ev[g->n++] = *ev;
    return 0;
}

static int parse_file(const char *rel, got_t *g, pw_diag_t *d)
{
    size_t len;
    char *xml = pw_test_read_file(pw_test_fixture(rel), &len);
    assert_non_null(xml);
    memset(g, 0, sizeof(*g));
    int r = pw_winevent_parse(xml, len, collect, g, d);
    free(xml);
    return r;
}

static void assert_tag(const pw_winevent_tag_t *t, const char *tag, int pool, uint64_t bytes)
{
    assert_memory_equal(t->tag, tag, 4);
    assert_int_equal(t->pool, pool);
    assert_int_equal(t->bytes, bytes);
}

static void check_2019(const pw_winevent_t *e)
{
    assert_string_equal(e->provider, "Srv");
    assert_int_equal(e->event_id, 2019);
    assert_int_equal(e->record_id, 48213);
    assert_int_equal(e->ts_ms, T_2019);
    assert_int_equal(e->pool, PW_WINEVENT_POOL_NONPAGED);
    assert_int_equal(e->n_tags, 0);
    assert_int_equal(pw_winevent_kind(e), PW_WINEVENT_NONPAGED_EMPTY);
}

/* One event as EvtRender(EvtRenderEventXml) gives it: one line, single quotes. */
static void test_single(void **state)
{
    (void)state;
    got_t g;
    pw_diag_t d;
    assert_int_equal(parse_file("winevent/srv2019.xml", &g, &d), 1);
    assert_int_equal(g.n, 1);
    check_2019(&g.ev[0]);
}

/* wevtutil qe System /f:xml: events one after another, no root; an event of another source
 * is handed over as such (kind OTHER). 2004's named tags from its EventData, nonpaged first. */
static void test_wevtutil(void **state)
{
    (void)state;
    got_t g;
    pw_diag_t d;
    assert_int_equal(parse_file("winevent/wevtutil-system.xml", &g, &d), 4);
    assert_int_equal(g.n, 4);
    const pw_winevent_t *e = &g.ev[0];
    assert_string_equal(e->provider, "Srv");
    assert_int_equal(e->event_id, 2020);
    assert_int_equal(e->record_id, 48190);
    assert_int_equal(e->ts_ms, T_2020);
    assert_int_equal(e->pool, PW_WINEVENT_POOL_PAGED);
    assert_int_equal(pw_winevent_kind(e), PW_WINEVENT_PAGED_EMPTY);
    e = &g.ev[1];
    assert_string_equal(e->provider, "Service Control Manager");
    assert_int_equal(e->event_id, 7036);
    assert_int_equal(pw_winevent_kind(e), PW_WINEVENT_OTHER);
    assert_int_equal(e->n_tags, 0); /* param1/param2 are no pool fields */
    check_2019(&g.ev[2]);
    e = &g.ev[3];
    assert_string_equal(e->provider, PW_WINEVENT_PROVIDER_RED);
    assert_int_equal(e->event_id, 2004);
    assert_int_equal(e->record_id, 48220);
    assert_int_equal(e->ts_ms, T_2004);
    assert_int_equal(e->pool, PW_WINEVENT_POOL_NONE);
    assert_int_equal(pw_winevent_kind(e), PW_WINEVENT_DIAGNOSIS);
    assert_int_equal(e->n_tags, 6);
    assert_tag(&e->tags[0], "Ddk ", PW_WINEVENT_POOL_NONPAGED, 98566144);
    assert_tag(&e->tags[1], "Thre", PW_WINEVENT_POOL_NONPAGED, 3145728);
    assert_tag(&e->tags[2], "File", PW_WINEVENT_POOL_NONPAGED, 2097152);
    assert_tag(&e->tags[3], "MmSt", PW_WINEVENT_POOL_PAGED, 41943040);
    assert_tag(&e->tags[4], "CM31", PW_WINEVENT_POOL_PAGED, 20971520);
    assert_tag(&e->tags[5], "Ntff", PW_WINEVENT_POOL_PAGED, 8388608);
}

/* Event Viewer's "Save as XML": a declaration, an <Events> root, indented, double quotes, a
 * 9-digit fraction; the 2004 with its pool fields as UserData elements, "Ddk" written without
 * its trailing space, a tag without its Used (bytes 0). The UTF-16 copy reads the same. */
static void check_saved(const got_t *g)
{
    assert_int_equal(g->n, 2);
    check_2019(&g->ev[0]);
    const pw_winevent_t *e = &g->ev[1];
    assert_int_equal(e->event_id, 2004);
    assert_int_equal(e->ts_ms, T_2004);
    assert_int_equal(e->n_tags, 3);
    assert_tag(&e->tags[0], "Ddk ", PW_WINEVENT_POOL_NONPAGED, 98566144);
    assert_tag(&e->tags[1], "Thre", PW_WINEVENT_POOL_NONPAGED, 0);
    assert_tag(&e->tags[2], "MmSt", PW_WINEVENT_POOL_PAGED, 41943040);
}

static void test_saved(void **state)
{
    (void)state;
    got_t g;
    pw_diag_t d;
    assert_int_equal(parse_file("winevent/eventviewer-saved.xml", &g, &d), 2);
    check_saved(&g);
    assert_int_equal(parse_file("winevent/eventviewer-saved-utf16.xml", &g, &d), 2);
    check_saved(&g);
}

static int parse_str(const char *s, got_t *g, pw_diag_t *d)
{
    memset(g, 0, sizeof(*g));
    return pw_winevent_parse(s, strlen(s), collect, g, d);
}

/* Missing elements are tolerated: each field is 0 / "" and the event is still handed over. */
static void test_tolerant(void **state)
{
    (void)state;
    got_t g;
    pw_diag_t d;
    assert_int_equal(parse_str("<Event><System/></Event>", &g, &d), 1);
    assert_int_equal(g.ev[0].event_id, 0);
    assert_int_equal(g.ev[0].ts_ms, 0);
    assert_string_equal(g.ev[0].provider, "");
    assert_int_equal(pw_winevent_kind(&g.ev[0]), PW_WINEVENT_OTHER);
    /* a time that does not read is 0, an offset is applied, a provider in other case counts */
    assert_int_equal(parse_str("<e:Event xmlns:e='x'><e:System><e:Provider Name='SRV'/>"
                               "<e:EventID>2020</e:EventID><e:TimeCreated "
                               "SystemTime='2026-11-30T15:58:40+02:00'/></e:System></e:Event>"
                               "<Event><System><TimeCreated SystemTime='yesterday'/></System>"
                               "</Event>",
                               &g, &d),
                     2);
    assert_int_equal(pw_winevent_kind(&g.ev[0]), PW_WINEVENT_PAGED_EMPTY);
    assert_int_equal(g.ev[0].ts_ms, T_2020);
    assert_int_equal(g.ev[1].ts_ms, 0);
    /* tags longer than 4 characters, empty, or with an N out of range are no tags */
    assert_int_equal(parse_str("<Event><EventData><Data Name='NonPagedPoolTag_1'>Toolong</Data>"
                               "<Data Name='NonPagedPoolTag_2'></Data>"
                               "<Data Name='NonPagedPoolTag_9'>Abcd</Data>"
                               "<Data Name='NonPagedPoolTag_0'>Abcd</Data>"
                               "<Data Name='PagedPoolTag_3'>Ab</Data></EventData></Event>",
                               &g, &d),
                     1);
    assert_int_equal(g.ev[0].n_tags, 1);
    assert_tag(&g.ev[0].tags[0], "Ab  ", PW_WINEVENT_POOL_PAGED, 0);
    /* no event at all is 0 events, not an error */
    assert_int_equal(parse_str("", &g, &d), 0);
    assert_int_equal(parse_str("<?xml version='1.0'?><Events/>", &g, &d), 0);
}

/* Broken input names line and column; a DOCTYPE is refused; the callback can stop. */
static void test_errors(void **state)
{
    (void)state;
    got_t g;
    pw_diag_t d;
    assert_int_equal(parse_str("<Event>\n<System>\n</Event>", &g, &d), PW_EPARSE);
    assert_int_equal(d.line, 3);
    assert_non_null(strstr(d.msg, "line 3, column 3: mismatched tag"));
    assert_int_equal(parse_str("<?xml version='1.0'?><!DOCTYPE Events [<!ENTITY a 'b'>]>"
                               "<Events/>",
                               &g, &d),
                     PW_EPARSE);
    assert_non_null(strstr(d.msg, "DOCTYPE"));
    assert_int_equal(parse_str("<Event/><Event", &g, &d), PW_EPARSE);
    assert_int_equal(g.n, 1); /* the complete one was handed over first */
}

static int stop_at_first(void *arg, const pw_winevent_t *ev)
{
    (void)ev;
    ++*(int *)arg;
    return PW_ENOSPC;
}

static void test_stop(void **state)
{
    (void)state;
    int calls = 0;
    pw_diag_t d;
    const char *s = "<Event/><Event/><Event/>";
    assert_int_equal(pw_winevent_parse(s, strlen(s), stop_at_first, &calls, &d), PW_ENOSPC);
    assert_int_equal(calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single), cmocka_unit_test(test_wevtutil),
        cmocka_unit_test(test_saved),  cmocka_unit_test(test_tolerant),
        cmocka_unit_test(test_errors), cmocka_unit_test(test_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
