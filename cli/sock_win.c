/* sock_win.c: the CLI's sockets on Windows (sock.h), with Winsock 2. */
#ifndef _WIN32
#error "sock_win.c is for Windows builds only"
#endif
#include "sock.h"

#include <winsock2.h>
#include <ws2tcpip.h>

#include <stdio.h>
#include <string.h>

/* Winsock's text for error e (FormatMessage), without the line break. */
static const char *wsa_text(int e, char *buf, size_t size)
{
    buf[0] = '\0';
    FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, (DWORD)e, 0,
                   buf, (DWORD)size, NULL);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    if (n == 0)
        snprintf(buf, size, "Winsock error %d", e);
    return buf;
}

static int wsa_started(pw_diag_t *d)
{
    static int started; /* the CLI is one thread */
    if (started)
        return 0;
    WSADATA wd;
    int e = WSAStartup(MAKEWORD(2, 2), &wd);
    if (e != 0) {
        char m[200];
        return pw_diag_set(d, PW_EIO, 0, 0, "host", "WSAStartup: %s", wsa_text(e, m, sizeof(m)));
    }
    started = 1;
    return 0;
}

int pw_sock_connect(const char *host, const char *port, int timeout_ms, pw_sock_t *out,
                    pw_diag_t *d)
{
    int rc = wsa_started(d);
    if (rc < 0)
        return rc;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        char m[200];
        return pw_diag_set(d, PW_EIO, 0, 0, "host", "cannot resolve %s: %s", host,
                           wsa_text(g, m, sizeof(m)));
    }
    int last = WSAECONNREFUSED;
    int timed_out = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        SOCKET s = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (s == INVALID_SOCKET) {
            last = WSAGetLastError();
            continue;
        }
        u_long nb = 1;
        ioctlsocket(s, FIONBIO, &nb);
        int c = connect(s, ai->ai_addr, (int)ai->ai_addrlen);
        if (c != 0 && WSAGetLastError() == WSAEWOULDBLOCK) {
            /* select, not WSAPoll: WSAPoll misses a refused connect on some Windows versions. */
            fd_set wr, ex;
            FD_ZERO(&wr);
            FD_ZERO(&ex);
            FD_SET(s, &wr);
            FD_SET(s, &ex);
            struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
            int sr = select(0, NULL, &wr, &ex, &tv);
            if (sr == 0) {
                timed_out = 1;
                closesocket(s);
                continue;
            }
            int soerr = 0;
            int sl = sizeof(soerr);
            getsockopt(s, SOL_SOCKET, SO_ERROR, (char *)&soerr, &sl);
            if (sr < 0)
                soerr = WSAGetLastError();
            c = soerr != 0 || FD_ISSET(s, &ex) ? -1 : 0;
            if (c != 0)
                WSASetLastError(soerr != 0 ? soerr : WSAECONNREFUSED);
        }
        if (c != 0) {
            last = WSAGetLastError();
            closesocket(s);
            continue;
        }
        nb = 0;
        ioctlsocket(s, FIONBIO, &nb);
        /* Reads and writes block with a bound (milliseconds on Windows). */
        DWORD ms = (DWORD)timeout_ms;
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, (const char *)&ms, sizeof(ms));
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, (const char *)&ms, sizeof(ms));
        freeaddrinfo(res);
        *out = (pw_sock_t)s;
        return 0;
    }
    freeaddrinfo(res);
    if (timed_out)
        return pw_diag_set(d, PW_ETIMEDOUT, 0, 0, "host", "connect to %s:%s timed out", host, port);
    char m[200];
    return pw_diag_set(d, PW_EIO, 0, 0, "host", "cannot connect to %s:%s: %s", host, port,
                       wsa_text(last, m, sizeof(m)));
}

long pw_sock_send(pw_sock_t s, const void *p, size_t n, pw_diag_t *d)
{
    int w = send((SOCKET)s, p, (int)n, 0);
    if (w >= 0)
        return w;
    int e = WSAGetLastError();
    char m[200];
    return pw_diag_set(d, e == WSAETIMEDOUT ? PW_ETIMEDOUT : PW_EIO, 0, 0, "send",
                       "send failed: %s", wsa_text(e, m, sizeof(m)));
}

long pw_sock_recv(pw_sock_t s, void *p, size_t n, pw_diag_t *d)
{
    int r = recv((SOCKET)s, p, (int)n, 0);
    if (r >= 0)
        return r;
    int e = WSAGetLastError();
    if (e == WSAETIMEDOUT)
        return pw_diag_set(d, PW_ETIMEDOUT, 0, 0, "recv", "server did not answer in time");
    char m[200];
    return pw_diag_set(d, PW_EIO, 0, 0, "recv", "receive failed: %s", wsa_text(e, m, sizeof(m)));
}

void pw_sock_close(pw_sock_t s)
{
    if (s != PW_SOCK_INVALID)
        closesocket((SOCKET)s);
}

void pw_sock_err_clear(void)
{
    WSASetLastError(0);
}

int pw_sock_err_state(void)
{
    int e = WSAGetLastError();
    if (e == 0)
        return 0;
    return e == WSAETIMEDOUT ? 1 : 2;
}

int pw_sock_is_ip_literal(const char *host)
{
    unsigned char tmp[16];
    return inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
}
