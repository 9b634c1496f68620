/* evsub_win.c: the platform subscription of evsub.h on Windows: EvtSubscribe on the System
 * log (wevtapi, Vista and later) with the pool events' query, each event rendered as XML
 * (EvtRender, EvtRenderEventXml: UTF-16) and handed over as UTF-8. wevtapi.dll is loaded at
 * run time: an agent on a Windows without it (before Vista) samples on without events.
 * https://learn.microsoft.com/windows/win32/api/winevt/nf-winevt-evtsubscribe */
#include <windows.h>
#include <winevt.h>

#include <stdio.h>

#include "alloc.h"
#include "evsub.h"

#define RENDER_MAX (1u << 20) /* an event's XML is a few KiB; a larger one is not ours */

typedef EVT_HANDLE(WINAPI *subscribe_fn)(EVT_HANDLE, HANDLE, LPCWSTR, LPCWSTR, EVT_HANDLE, PVOID,
                                         EVT_SUBSCRIBE_CALLBACK, DWORD);
typedef BOOL(WINAPI *render_fn)(EVT_HANDLE, EVT_HANDLE, DWORD, DWORD, PVOID, PDWORD, PDWORD);
typedef BOOL(WINAPI *close_fn)(EVT_HANDLE);

static subscribe_fn p_subscribe;
static render_fn p_render;
static close_fn p_close;

/* The three functions of wevtapi.dll, once; 0 or PW_ENOTSUP. */
static int load_wevtapi(void)
{
    if (p_subscribe && p_render && p_close)
        return 0;
    HMODULE m = LoadLibraryW(L"wevtapi.dll");
    if (m == NULL)
        return PW_ENOTSUP;
    p_subscribe = (subscribe_fn)(void (*)(void))GetProcAddress(m, "EvtSubscribe");
    p_render = (render_fn)(void (*)(void))GetProcAddress(m, "EvtRender");
    p_close = (close_fn)(void (*)(void))GetProcAddress(m, "EvtClose");
    return p_subscribe && p_render && p_close ? 0 : PW_ENOTSUP;
}

typedef struct {
    EVT_HANDLE sub;
    pw_evsub_deliver_fn deliver;
    void *ctx;
    wchar_t *buf; /* the callback's render buffer (callbacks of one subscription are serial) */
    DWORD cap;    /* in bytes */
} win_sub_t;

static void render(win_sub_t *w, EVT_HANDLE ev)
{
    DWORD used = 0, props = 0;
    if (!p_render(NULL, ev, EvtRenderEventXml, w->cap, w->buf, &used, &props)) {
        if (GetLastError() != ERROR_INSUFFICIENT_BUFFER || used > RENDER_MAX)
            return;
        wchar_t *nb = pw_realloc(w->buf, used);
        if (nb == NULL)
            return;
        w->buf = nb;
        w->cap = used;
        if (!p_render(NULL, ev, EvtRenderEventXml, w->cap, w->buf, &used, &props))
            return;
    }
    int wlen = (int)(used / sizeof(wchar_t)); /* with its NUL */
    int n = WideCharToMultiByte(CP_UTF8, 0, w->buf, wlen, NULL, 0, NULL, NULL);
    if (n <= 0)
        return;
    char *u8 = pw_malloc((size_t)n);
    if (u8 == NULL)
        return;
    WideCharToMultiByte(CP_UTF8, 0, w->buf, wlen, u8, n, NULL, NULL);
    size_t len = strnlen(u8, (size_t)n);
    w->deliver(w->ctx, u8, len);
    pw_free(u8);
}

static DWORD WINAPI on_event(EVT_SUBSCRIBE_NOTIFY_ACTION action, PVOID ctx, EVT_HANDLE ev)
{
    win_sub_t *w = ctx;
    if (action == EvtSubscribeActionDeliver)
        render(w, ev);
    return ERROR_SUCCESS; /* EvtSubscribeActionError: the subscription goes on */
}

int pw__evsub_win_start(const char *query, pw_evsub_deliver_fn deliver, void *ctx, void **handle,
                        pw_diag_t *d)
{
    if (load_wevtapi() != 0)
        return pw_diag_set(d, PW_ENOTSUP, 0, 0, "events", "no wevtapi.dll (Windows before Vista)");
    wchar_t wq[1024];
    if (MultiByteToWideChar(CP_UTF8, 0, query, -1, wq, (int)(sizeof(wq) / sizeof(wq[0]))) == 0)
        return pw_diag_set(d, PW_EINVAL, 0, 0, "events", "query does not convert");
    win_sub_t *w = pw_calloc(1, sizeof(*w));
    if (w == NULL)
        return pw_diag_set(d, PW_ENOMEM, 0, 0, "events", "out of memory");
    w->deliver = deliver;
    w->ctx = ctx;
    /* the last day's events first (a host rebooted after its pool ran out), then new ones */
    w->sub =
        p_subscribe(NULL, NULL, L"System", wq, NULL, w, on_event, EvtSubscribeStartAtOldestRecord);
    if (w->sub == NULL) {
        DWORD e = GetLastError();
        pw_free(w);
        return pw_diag_set(d, e == ERROR_CALL_NOT_IMPLEMENTED ? PW_ENOTSUP : PW_EIO, 0, 0, "events",
                           "EvtSubscribe(System): Win32 error %lu", (unsigned long)e);
    }
    *handle = w;
    return 0;
}

void pw__evsub_win_stop(void *handle)
{
    win_sub_t *w = handle;
    if (w == NULL)
        return;
    p_close(w->sub); /* waits for a running callback: none runs after it */
    pw_free(w->buf);
    pw_free(w);
}
