/* source_win_testhook.c: TEST BUILDS ONLY (compiled into poolwatch-agent-testhooks.exe, never
 * into poolwatch-agent.exe): replaces NtQuerySystemInformation for the "win" source with
 * recorded buffers, so that an end-to-end test under Wine, which has no pool-tag information,
 * drives the real source_win.c code path (grow loop, parsing, totals, limits).
 *
 *   POOLWATCH_TEST_POOLTAG_BUFFER=a.bin;b.bin;...  SystemPoolTagInformation buffers (x64 layout,
 *       source_win.h), one per successful query, in order; the last one is repeated. Note that
 *       the source's open makes one query (to fail early) before the first sample.
 *   POOLWATCH_TEST_PERFINFO_BUFFER=p.bin           SystemPerformanceInformation buffer; when
 *       unset the class reports STATUS_INVALID_INFO_CLASS.
 *
 * A query with a buffer smaller than the recording gets STATUS_INFO_LENGTH_MISMATCH and the
 * needed length, as the kernel answers. SystemSessionPoolTagInformation always reports
 * STATUS_INVALID_INFO_CLASS. The hook installs itself from a constructor when the first variable
 * is set, so main.c needs no test code.
 *
 *   POOLWATCH_TEST_EVENT_XML=a.xml;b.xml;...  replaces the System-log subscription (evsub.h):
 *       a thread hands over each file's events (wevtutil or EvtRender XML) 1 s apart, the
 *       first 1 s after the subscription starts, as EvtSubscribe's callback does. */
#ifndef PW_WIN_TEST_HOOKS
#error "source_win_testhook.c is for the test build only (PW_WIN_TEST_HOOKS)"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evsub.h"
#include "source_win.h"

#include <windows.h>

#define MAX_FILES 64
#define MAX_BYTES (16u << 20)

typedef struct {
    unsigned char *data;
    size_t len;
} rec_t;

static rec_t pooltag[MAX_FILES];
static size_t n_pooltag, next_pooltag;
static rec_t perfinfo;

static int load(const char *path, rec_t *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    out->data = malloc(MAX_BYTES);
    out->len = out->data ? fread(out->data, 1, MAX_BYTES, f) : 0;
    fclose(f);
    return out->data ? 0 : -1;
}

static uint32_t serve(const rec_t *r, void *buf, uint32_t len, uint32_t *ret_len)
{
    if (ret_len)
        *ret_len = (uint32_t)r->len;
    if (len < r->len)
        return PW_WIN_STATUS_INFO_LENGTH_MISMATCH;
    memcpy(buf, r->data, r->len);
    return 0;
}

static uint32_t recorded_query(uint32_t cls, void *buf, uint32_t len, uint32_t *ret_len)
{
    if (cls == PW_WIN_CLASS_POOLTAG) {
        uint32_t st = serve(&pooltag[next_pooltag], buf, len, ret_len);
        if (st == 0 && next_pooltag + 1 < n_pooltag)
            next_pooltag++;
        return st;
    }
    if (cls == PW_WIN_CLASS_PERFORMANCE && perfinfo.data != NULL)
        return serve(&perfinfo, buf, len, ret_len);
    if (ret_len)
        *ret_len = 0;
    return PW_WIN_STATUS_INVALID_INFO_CLASS;
}

/* ---- the recorded System log --------------------------------------------------------------- */

static rec_t events[MAX_FILES];
static size_t n_events;

typedef struct {
    HANDLE th, stop;
    pw_evsub_deliver_fn deliver;
    void *ctx;
} ev_feed_t;

static DWORD WINAPI feed_thread(LPVOID arg)
{
    ev_feed_t *f = arg;
    for (size_t i = 0; i < n_events; i++) {
        if (WaitForSingleObject(f->stop, 1000) == WAIT_OBJECT_0)
            break;
        f->deliver(f->ctx, events[i].data, events[i].len);
    }
    return 0;
}

static int recorded_start(const char *query, pw_evsub_deliver_fn deliver, void *ctx, void **handle,
                          pw_diag_t *d)
{
    (void)query;
    ev_feed_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "events", "out of memory");
    f->deliver = deliver;
    f->ctx = ctx;
    f->stop = CreateEventA(NULL, TRUE, FALSE, NULL);
    f->th = CreateThread(NULL, 0, feed_thread, f, 0, NULL);
    if (f->stop == NULL || f->th == NULL) {
        free(f);
        return pw_diag_set(d, PW_EIO, 0, 0, "events", "cannot start the feed thread");
    }
    fprintf(stderr, "testhook: %zu recorded event files replace EvtSubscribe\n", n_events);
    *handle = f;
    return 0;
}

static void recorded_stop(void *handle)
{
    ev_feed_t *f = handle;
    SetEvent(f->stop);
    WaitForSingleObject(f->th, INFINITE);
    CloseHandle(f->th);
    CloseHandle(f->stop);
    free(f);
}

static void install_events(void)
{
    const char *list = getenv("POOLWATCH_TEST_EVENT_XML");
    if (list == NULL || *list == '\0')
        return;
    char *copy = strdup(list), *save = NULL;
    for (char *p = strtok_r(copy, ";", &save); p && n_events < MAX_FILES;
         p = strtok_r(NULL, ";", &save)) {
        if (load(p, &events[n_events]) != 0) {
            fprintf(stderr, "testhook: cannot read %s\n", p);
            exit(3);
        }
        n_events++;
    }
    free(copy);
    pw_evsub_set_fns(recorded_start, recorded_stop);
}

__attribute__((constructor)) static void install_hook(void)
{
    install_events();
    const char *list = getenv("POOLWATCH_TEST_POOLTAG_BUFFER");
    if (list == NULL || *list == '\0')
        return;
    char *copy = strdup(list), *save = NULL;
    for (char *p = strtok_r(copy, ";", &save); p && n_pooltag < MAX_FILES;
         p = strtok_r(NULL, ";", &save)) {
        if (load(p, &pooltag[n_pooltag]) != 0) {
            fprintf(stderr, "testhook: cannot read %s\n", p);
            exit(3);
        }
        n_pooltag++;
    }
    free(copy);
    const char *pi = getenv("POOLWATCH_TEST_PERFINFO_BUFFER");
    if (pi && *pi && load(pi, &perfinfo) != 0) {
        fprintf(stderr, "testhook: cannot read %s\n", pi);
        exit(3);
    }
    if (n_pooltag == 0)
        return;
    fprintf(stderr, "testhook: recorded buffers replace NtQuerySystemInformation (%zu files)\n",
            n_pooltag);
    pw_win_set_query_fn(recorded_query);
}
