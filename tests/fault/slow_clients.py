"""Slow API clients from one address (issue 15, item 1), for test_fault_api_slow_connections.

Usage: slow_clients.py PORT CA_FILE N SECONDS
Holds up to N TLS connections from 127.0.0.2 to the collector's API on 127.0.0.1:PORT, each
sending a request head one header line a second and never finishing it; every connection the
server closes is opened again at once. Prints "ready" once N connections were started, then,
after SECONDS (or SIGTERM), one line "connects C handshakes H max_open M closed_by_server K".
Bounded: only loopback, only for SECONDS.
"""
import errno
import resource
import selectors
import signal
import socket
import ssl
import sys
import time

port, ca, n, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < n + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
ctx = ssl.create_default_context(cafile=ca)
sel = selectors.DefaultSelector()
stats = {"connects": 0, "handshakes": 0, "max_open": 0, "closed": 0}
stop = [False]
signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))


class Conn:
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        self.sock.bind(("127.0.0.2", 0))
        self.tls = None
        self.open = False  # handshake done: a slow request head is being sent
        self.next_line = 0.0
        self.lines = 0
        err = self.sock.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            raise OSError(err, "connect")
        stats["connects"] += 1
        sel.register(self.sock, selectors.EVENT_WRITE, self)

    def close(self, by_server):
        try:
            sel.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        (self.tls or self.sock).close()
        stats["closed"] += by_server

    def step(self):
        """Moves the handshake on; returns False when the connection is over."""
        try:
            if self.tls is None:
                if self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    return False
                self.tls = ctx.wrap_socket(self.sock, server_hostname="localhost",
                                           do_handshake_on_connect=False)
            if not self.open:
                self.tls.do_handshake()
                self.open = True
                stats["handshakes"] += 1
                self.tls.send(b"GET /api/v1/hosts HTTP/1.1\r\nHost: x\r\n")
                self.next_line = time.monotonic() + 1
                sel.modify(self.sock, selectors.EVENT_READ, self)
                return True
            return len(self.tls.recv(4096)) > 0  # an answer (408) or the close
        except ssl.SSLWantReadError:
            sel.modify(self.sock, selectors.EVENT_READ, self)
            return True
        except ssl.SSLWantWriteError:
            sel.modify(self.sock, selectors.EVENT_WRITE, self)
            return True
        except (OSError, ssl.SSLError):
            return False


conns = []
end = time.monotonic() + secs
said_ready = False
while not stop[0] and time.monotonic() < end:
    while len(conns) < n:
        try:
            conns.append(Conn())
        except OSError:
            break
    if not said_ready and stats["connects"] >= n:
        print("ready", flush=True)
        said_ready = True
    for key, _ in sel.select(timeout=0.05):
        c = key.data
        if not c.step():
            c.close(True)
            conns.remove(c)
    now = time.monotonic()
    for c in list(conns):
        if c.open and now >= c.next_line:
            try:
                c.tls.send(b"X-Slow-%d: 1\r\n" % c.lines)
                c.lines += 1
                c.next_line = now + 1
            except (OSError, ssl.SSLError):
                c.close(True)
                conns.remove(c)
    stats["max_open"] = max(stats["max_open"], sum(c.open for c in conns))
for c in conns:
    c.close(False)
print("connects %d handshakes %d max_open %d closed_by_server %d" % (
    stats["connects"], stats["handshakes"], stats["max_open"], stats["closed"]), flush=True)
