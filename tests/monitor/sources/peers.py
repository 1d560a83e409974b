"""Real peers on loopback for the sources' tests: an HTTP server answering with a function, a raw TCP peer.

A thread per server (no process: the fast lane may use them); each yields its port
and is shut down, its threads joined, when the ``with`` block ends.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["http_server", "raw_peer", "send"]

Respond = Callable[[BaseHTTPRequestHandler], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-answer is what some tests do


@contextmanager
def http_server(respond: Respond) -> Iterator[int]:
    """An HTTP/1.0 server on 127.0.0.1 whose every GET is answered by ``respond``; yields its port."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's spelling)
            respond(self)

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def send(h: BaseHTTPRequestHandler, body: bytes, content_type: str | None = None, *, status: int = 200,
         headers: dict[str, str] | None = None) -> None:
    """One whole answer with its Content-Length."""
    h.send_response(status)
    if content_type is not None:
        h.send_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        h.send_header(name, value)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@contextmanager
def raw_peer(answer: bytes, *, read_first: bool) -> Iterator[int]:
    """A TCP peer that sends ``answer`` (after reading the request, or at once as SSH does) and then waits."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    conns: list[socket.socket] = []

    def run() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conns.append(conn)
            if read_first:
                conn.recv(65536)
            conn.sendall(answer)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (a close alone does not, on Linux)
        listener.close()
        for conn in conns:
            conn.close()
        thread.join(timeout=5)
