/* test_rwqueue.c: remote write's disk queue (collector/export/rwqueue.h): files leave oldest
 * first, also across a reopen (a collector restart) and when an older request is written back
 * at shutdown; the budget drops the oldest files and says how many series; a file whose body
 * was changed on disk is refused by its CRC and reported with its series; a temporary file of
 * an interrupted write is removed at open. Sizes by hand: a file is 32 header bytes + body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "rwqueue.h"

static char dir[256];

static void pop_expect(pw_rwqueue_t *q, uint64_t seq, const char *body, size_t series)
{
    uint64_t s;
    uint8_t *b;
    size_t len, n;
    assert_int_equal(pw_rwqueue_pop(q, &s, &b, &len, &n), 1);
    assert_int_equal(s, seq);
    assert_int_equal(len, strlen(body));
    assert_memory_equal(b, body, len);
    assert_int_equal(n, series);
    pw_free(b);
}

static void test_queue(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s/pw-rwq-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    char qd[300];
    snprintf(qd, sizeof(qd), "%s/q", dir);
    pw_rwqueue_t *q;
    pw_diag_t d;
    /* budget 3 files of 32 + 8 bytes */
    assert_int_equal(pw_rwqueue_open(qd, 120, &q, &d), 0);
    assert_int_equal(pw_rwqueue_next_seq(q), 1);
    uint64_t dropped;
    assert_int_equal(pw_rwqueue_push(q, 1, (const uint8_t *)"body-one", 8, 10, &dropped), 0);
    assert_int_equal(pw_rwqueue_push(q, 2, (const uint8_t *)"body-two", 8, 20, &dropped), 0);
    assert_int_equal(pw_rwqueue_push(q, 3, (const uint8_t *)"body-thr", 8, 30, &dropped), 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(pw_rwqueue_bytes(q), 120);
    assert_int_equal(pw_rwqueue_series(q), 60);
    /* a fourth: the oldest (10 series) goes */
    assert_int_equal(pw_rwqueue_push(q, 4, (const uint8_t *)"body-fou", 8, 40, &dropped), 0);
    assert_int_equal(dropped, 10);
    assert_int_equal(pw_rwqueue_count(q), 3);
    assert_int_equal(pw_rwqueue_push(q, 5, (const uint8_t *)"x", 200, 1, NULL), PW_ETOOBIG);
    assert_int_equal(pw_rwqueue_push(q, 3, (const uint8_t *)"dup", 3, 1, NULL), PW_EINVAL);
    pw_rwqueue_close(q);

    /* reopen: 2, 3, 4 in order; a leftover temporary file is removed */
    char p[400];
    snprintf(p, sizeof(p), "%s/tmp-0000000000000009.rwq", qd);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("half", f);
    fclose(f);
    assert_int_equal(pw_rwqueue_open(qd, 1000, &q, &d), 0);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(pw_rwqueue_count(q), 3);
    assert_int_equal(pw_rwqueue_next_seq(q), 5);
    pop_expect(q, 2, "body-two", 20);
    /* an older request written back (shutdown) takes its place before 3 */
    assert_int_equal(pw_rwqueue_push(q, 2, (const uint8_t *)"back-two", 8, 21, NULL), 0);
    pop_expect(q, 2, "back-two", 21);
    /* 3's body changed on disk: refused by the CRC, its 30 series reported */
    snprintf(p, sizeof(p), "%s/0000000000000003.rwq", qd);
    f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, 32 + 2, SEEK_SET);
    fputc('X', f);
    fclose(f);
    uint64_t s;
    uint8_t *b;
    size_t len, n;
    assert_int_equal(pw_rwqueue_pop(q, &s, &b, &len, &n), PW_ECORRUPT);
    assert_int_equal(s, 3);
    assert_int_equal(n, 30);
    assert_null(b);
    pop_expect(q, 4, "body-fou", 40);
    assert_int_equal(pw_rwqueue_pop(q, &s, &b, &len, &n), 0);
    assert_int_equal(pw_rwqueue_bytes(q), 0);
    pw_rwqueue_close(q);

    /* a directory that cannot be made: named in the message */
    assert_int_equal(pw_rwqueue_open("/proc/pw-no/q", 0, &q, &d), PW_EIO);
    assert_non_null(strstr(d.msg, "remote_write.queue_dir: /proc/pw-no/q"));
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_queue)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
