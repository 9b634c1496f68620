/* sock_posix.c: the CLI's sockets on POSIX (sock.h). */
#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int pw_sock_connect(const char *host, const char *port, int timeout_ms, pw_sock_t *out,
                    pw_diag_t *d)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0)
        return pw_diag_set(d, PW_EIO, 0, 0, "host", "cannot resolve %s: %s", host, gai_strerror(g));
    int last = ECONNREFUSED;
    int timed_out = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int fl = fcntl(fd, F_GETFL, 0);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int pr = poll(&pfd, 1, timeout_ms);
            if (pr == 0) {
                timed_out = 1;
                close(fd);
                continue;
            }
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            rc = (pr < 0 || soerr != 0) ? -1 : 0;
            errno = pr < 0 ? errno : soerr;
        }
        if (rc < 0) {
            last = errno;
            close(fd);
            continue;
        }
        fcntl(fd, F_SETFL, fl);
        /* Reads and writes block with a bound, so a stuck server cannot hang the CLI. */
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        freeaddrinfo(res);
        *out = fd;
        return 0;
    }
    freeaddrinfo(res);
    if (timed_out)
        return pw_diag_set(d, PW_ETIMEDOUT, 0, 0, "host", "connect to %s:%s timed out", host, port);
    return pw_diag_set(d, PW_EIO, 0, 0, "host", "cannot connect to %s:%s: %s", host, port,
                       strerror(last));
}

long pw_sock_send(pw_sock_t s, const void *p, size_t n, pw_diag_t *d)
{
    for (;;) {
        ssize_t w = send((int)s, p, n, MSG_NOSIGNAL);
        if (w >= 0)
            return (long)w;
        if (errno == EINTR)
            continue;
        return pw_diag_set(d, errno == EAGAIN ? PW_ETIMEDOUT : PW_EIO, 0, 0, "send",
                           "send failed: %s", strerror(errno));
    }
}

long pw_sock_recv(pw_sock_t s, void *p, size_t n, pw_diag_t *d)
{
    for (;;) {
        ssize_t r = recv((int)s, p, n, 0);
        if (r >= 0)
            return (long)r;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return pw_diag_set(d, PW_ETIMEDOUT, 0, 0, "recv", "server did not answer in time");
        return pw_diag_set(d, PW_EIO, 0, 0, "recv", "receive failed: %s", strerror(errno));
    }
}

void pw_sock_close(pw_sock_t s)
{
    if (s != PW_SOCK_INVALID)
        close((int)s);
}

void pw_sock_err_clear(void)
{
    errno = 0;
}

int pw_sock_err_state(void)
{
    if (errno == 0)
        return 0;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : 2;
}

int pw_sock_is_ip_literal(const char *host)
{
    unsigned char tmp[16];
    return inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
}
