"""The sources' own HTTP transport against real servers on loopback.

Every test runs over both transports a scraper may use: ``StreamTransport``
(h11) and ``LeanTransport`` (hand-written HTTP/1.1 for plain http, in front of it).
Each server here is a real socket peer speaking one of the ways HTTP/1.x
ends a response (Content-Length with keep-alive, chunked, HTTP/1.0 until
close) or one of the ways a peer hangs up; the assertions count the TCP
connections the server saw, so reuse and reconnects are observed, not assumed.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from ptmon.monitor.sources._lean import LeanTransport
from ptmon.monitor.sources.body import read_capped
from ptmon.monitor.sources.errors import FetchError
from ptmon.monitor.sources.transport import StreamTransport, client_over, make_client

_KIND = ["lean"]


@pytest.fixture(autouse=True, params=["lean", "h11"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which transport ``_transport`` makes for this run of the test."""
    _KIND[0] = request.param
    yield request.param
    _KIND[0] = "lean"


def _transport() -> StreamTransport | LeanTransport:
    return LeanTransport(fallback=StreamTransport()) if _KIND[0] == "lean" else StreamTransport()


def _idle(transport: StreamTransport | LeanTransport, port: int) -> list[tuple[float, tuple[object, ...]]]:
    """The transport's idle connections to 127.0.0.1:``port``, each (since, (link, socket transport, ...))."""
    if isinstance(transport, LeanTransport):
        return transport._idle[("127.0.0.1", port)]  # type: ignore[return-value]
    return transport._idle[("http", "127.0.0.1", port)]  # type: ignore[return-value]

BODY = b"".join(b"metric_%d{env=\"math\"} %d\n" % (i, i) for i in range(500))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    connections = 0
    requests = 0

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-body (the cap test) is expected here, not news


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _handler(respond: Callable[[BaseHTTPRequestHandler], None], *, version: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = version

        def setup(self) -> None:
            super().setup()
            self.server.connections += 1  # type: ignore[attr-defined]

        def do_GET(self) -> None:  # noqa: N802 (http.server's spelling)
            self.server.requests += 1  # type: ignore[attr-defined]
            respond(self)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def _content_length(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.send_header("Content-Length", str(len(BODY)))
    h.end_headers()
    h.wfile.write(BODY)


def _chunked_gzip(h: BaseHTTPRequestHandler) -> None:
    payload = gzip.compress(BODY)
    h.send_response(200)
    h.send_header("Content-Encoding", "gzip")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for i in range(0, len(payload), 700):
        piece = payload[i:i + 700]
        h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
    h.wfile.write(b"0\r\n\r\n")


def _until_close(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.end_headers()  # HTTP/1.0, no length: the body ends when the server closes
    h.wfile.write(BODY)


def _close_after_answer(h: BaseHTTPRequestHandler) -> None:
    _content_length(h)
    h.close_connection = True  # says keep-alive (HTTP/1.1, no Connection: close), then hangs up


async def _get(client: httpx.AsyncClient, url: str, *, cap: int = 2**20) -> tuple[int, bytes]:
    request = client.build_request("GET", url, headers={"Accept-Encoding": "gzip"})
    response = await client.send(request, stream=True)
    try:
        return response.status_code, await read_capped(response, cap)
    finally:
        await response.aclose()


def _client() -> httpx.AsyncClient:
    return client_over(_transport())


async def test_keep_alive_server_is_scraped_over_one_connection() -> None:
    with serve(_handler(_content_length, version="HTTP/1.1")) as server:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        async with _client() as client:
            for _ in range(3):
                assert await _get(client, url) == (200, BODY)
        assert (server.requests, server.connections) == (3, 1)


async def test_chunked_gzip_body_is_read_whole_and_the_connection_reused() -> None:
    with serve(_handler(_chunked_gzip, version="HTTP/1.1")) as server:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        async with _client() as client:
            assert await _get(client, url) == (200, BODY)
            assert await _get(client, url) == (200, BODY)
        assert (server.requests, server.connections) == (2, 1)


async def test_http10_body_until_close_takes_a_connection_per_request() -> None:
    with serve(_handler(_until_close, version="HTTP/1.0")) as server:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        async with _client() as client:
            assert await _get(client, url) == (200, BODY)
            assert await _get(client, url) == (200, BODY)
        assert (server.requests, server.connections) == (2, 2)


async def test_bodies_read_at_once_over_many_connections_stay_whole_and_apart() -> None:
    # Every connection of a transport reads its socket into one shared scratch buffer: bodies of several
    # sizes (past the point where reading pauses) fetched together must each come back byte for byte.
    sizes = [10, 70_000, 300_000, 1_500_000]

    def body_of(size: int) -> bytes:
        return (b"%d|" % size * size)[:size]  # which body it is, all through it

    def sized(h: BaseHTTPRequestHandler) -> None:
        size = int(h.path.rsplit("/", 1)[1])
        body = body_of(size)
        h.send_response(200)
        h.send_header("Content-Length", str(size))
        h.end_headers()
        h.wfile.write(body)

    with serve(_handler(sized, version="HTTP/1.1")) as server:
        base = f"http://127.0.0.1:{server.server_port}/"
        async with _client() as client:
            for _ in range(2):  # the second round over the kept-alive connections
                answers = await asyncio.gather(*(_get(client, base + str(n), cap=2**21) for n in sizes * 2))
                assert [body for _, body in answers] == [body_of(n) for n in sizes * 2]


async def test_a_kept_alive_connection_the_server_dropped_is_replaced_without_an_error() -> None:
    with serve(_handler(_close_after_answer, version="HTTP/1.1")) as server:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        transport = _transport()
        async with httpx.AsyncClient(transport=transport) as client:
            assert await _get(client, url) == (200, BODY)
            # Pretend the FIN has not been seen yet: the idle connection looks alive and is tried first.
            idle = _idle(transport, server.server_port)
            assert len(idle) == 1
            idle[0][1][0]._eof = False  # type: ignore[attr-defined]
            assert await _get(client, url) == (200, BODY)
        assert (server.requests, server.connections) == (2, 2)


async def test_a_server_that_hangs_up_without_answering_is_a_clear_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def hang_up() -> None:
            conn, _ = listener.accept()
            conn.recv(4096)
            conn.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        async with _client() as client:
            with pytest.raises(httpx.RemoteProtocolError, match="Server disconnected without sending a response"):
                await _get(client, f"http://127.0.0.1:{listener.getsockname()[1]}/metrics")
        thread.join(timeout=5)


async def test_a_truncated_body_is_an_error_not_a_short_scrape() -> None:
    def short_body(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(BODY) + 100))
        h.end_headers()
        h.wfile.write(BODY)
        h.close_connection = True

    with serve(_handler(short_body, version="HTTP/1.1")) as server:
        async with _client() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await _get(client, f"http://127.0.0.1:{server.server_port}/metrics")


async def test_aclose_closes_idle_connections_and_refuses_new_requests() -> None:
    with serve(_handler(_content_length, version="HTTP/1.1")) as server:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        transport = _transport()
        client = httpx.AsyncClient(transport=transport)
        assert await _get(client, url) == (200, BODY)
        (_, conn), = _idle(transport, server.server_port)
        writer = conn[1]
        assert isinstance(writer, asyncio.Transport)
        await client.aclose()
        assert writer.is_closing()
        with pytest.raises(RuntimeError):
            await transport.handle_async_request(httpx.Request("GET", url))


async def test_a_bad_ca_file_is_a_reason_not_a_client(tmp_path) -> None:
    missing = tmp_path / "nope.pem"
    reason = make_client(verify_tls=True, ca_file=str(missing), transport=None)
    assert isinstance(reason, str) and reason.startswith(f"ca_file {missing}")


async def test_read_capped_refuses_a_body_over_the_cap_while_streaming() -> None:
    with serve(_handler(_chunked_gzip, version="HTTP/1.1")) as server:
        async with _client() as client:
            response = await client.send(
                client.build_request("GET", f"http://127.0.0.1:{server.server_port}/"), stream=True)
            try:
                with pytest.raises(FetchError, match="body exceeds 1 KiB"):
                    await read_capped(response, 1024)
            finally:
                await response.aclose()


# -- LeanTransport's own limits (once: they are its, not StreamTransport's) ----------------------------


def _raw_answer(answer: bytes) -> Iterator[int]:
    from tests.monitor.sources.peers import raw_peer

    return raw_peer(answer, read_first=True)  # type: ignore[return-value]


@pytest.mark.parametrize("size", [b"zz", b"-1", b"1" * 20])
async def test_lean_a_bad_chunk_size_is_an_error_not_a_short_body(kind: str, size: bytes) -> None:
    if kind != "lean":
        pytest.skip("h11 reads a 20-digit size as a size and waits for it (the scraper's deadline ends it)")
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n" + size + b"\r\nxyz\r\n0\r\n\r\n"
    with _raw_answer(answer) as port:  # type: ignore[attr-defined]
        async with _client() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await _get(client, f"http://127.0.0.1:{port}/metrics")

