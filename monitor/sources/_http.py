"""HTTP pieces both sources share: one client recipe, one capped body reader, one error wording.

The direct scraper and the Prometheus source fetch over the same httpx stack
and must fail alike (a refused port, a bad CA file, a gzip bomb read the same
on screen whichever source hit it), so the rules live here once.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Generator
from typing import Any

import h11
import httpx

from ptmon.monitor.text import safe

__all__ = [
    "FetchError",
    "BearerTokenFile",
    "StreamTransport",
    "USER_AGENT",
    "connect_message",
    "format_size",
    "make_client",
    "read_capped",
    "short",
]

USER_AGENT = "ptmon"
_ERROR_MAX_CHARS = 200


class FetchError(Exception):
    """A target-level failure whose message is already short and human."""


def format_size(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def short(text: str) -> str:
    """One line, no control characters, bounded length: fit for a table cell."""
    text = safe(text)
    if len(text) > _ERROR_MAX_CHARS:
        text = text[: _ERROR_MAX_CHARS - 1] + "…"
    return text


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


_ERRNO_MESSAGES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "connect timed out",
}


def connect_message(exc: Exception) -> str:
    """Why a connection failed, in a few words, from the root cause httpx wraps."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = f": {cause.verify_message}" if cause.verify_message else ""
            return f"TLS certificate verify failed{detail}"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or cause}"
        if isinstance(cause, socket.gaierror):
            return "cannot resolve host"
        if isinstance(cause, OSError) and cause.errno in _ERRNO_MESSAGES:
            return _ERRNO_MESSAGES[cause.errno]
    text = str(exc)
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "name or service not known" in low or "name resolution" in low:
        return "cannot resolve host"
    return f"cannot connect: {text}" if text else "cannot connect"


class BearerTokenFile(httpx.Auth):
    """``Authorization: Bearer`` from a file, re-read when the file changes.

    Token files are rotated in place (Kubernetes projected tokens); checking
    the file's stat on each scrape picks up a new token without a restart at
    the cost of one ``stat`` call.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._token = ""

    def token(self) -> str:
        try:
            st = os.stat(self._path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if stamp != self._stamp:
                with open(self._path, encoding="utf-8") as f:
                    token = f.read().strip()
                self._token, self._stamp = token, stamp
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise FetchError(f"bearer token file {self._path}: {reason}") from None
        if not self._token:
            raise FetchError(f"bearer token file {self._path} is empty")
        return self._token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


_READ_BYTES = 64 * 1024
_KEEPALIVE_S = 5.0  # an idle connection older than this is closed, not reused (httpx's default expiry)
_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection]


class StreamTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 for a scraper: asyncio streams for the socket, h11 for the protocol.

    httpx's default transport (httpcore over anyio) spent about 1.5 ms of CPU on
    each small loopback scrape, mostly on locks, pool bookkeeping and stream
    wrappers (three times the socket work itself, and most of the data loop's
    CPU with 8 targets scraped every second); this one spends about 0.7 ms.
    This transport does the same HTTP/1.1 (h11 parses, as in httpcore;
    keep-alive when the server allows it, else a connection per
    request, as prometheus_client's HTTP/1.0 server wants) with a plain list of
    idle connections per origin. It keeps httpx's client (auth, headers, the
    Response the readers use) and its exception types, with the OS or TLS error
    as the cause, so failures read the same. Timeouts are the caller's
    ``asyncio.timeout`` (both sources wrap every request in one); a request cut
    off half-way closes its connection.
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[tuple[float, _Conn]]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("transport is closed")
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", request=request)
        origin = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        body = await request.aread()
        conn = self._reusable(origin)
        if conn is not None:
            try:
                response = await self._exchange(conn, request, body)
            except (httpx.RemoteProtocolError, httpx.ReadError):
                # A kept-alive connection the server dropped before we saw its FIN (a restart, a kill,
                # its idle timeout): no answer came, so a GET is sent again on a fresh connection.
                if request.method not in ("GET", "HEAD"):
                    raise
            else:
                return self._response(origin, conn, request, response)
        conn = await self._connect(origin, request)
        return self._response(origin, conn, request, await self._exchange(conn, request, body))

    def _response(self, origin: tuple[str, str, int], conn: _Conn, request: httpx.Request,
                  event: h11.Response) -> httpx.Response:
        return httpx.Response(
            event.status_code,
            headers=event.headers.raw_items(),
            stream=_Body(self, origin, conn, request),
            extensions={"http_version": b"HTTP/" + event.http_version, "reason_phrase": event.reason},
        )

    async def _exchange(self, conn: _Conn, request: httpx.Request, body: bytes) -> h11.Response:
        """Send the request and read up to the response's head; any failure closes the connection."""
        _, writer, h = conn
        try:
            headers = list(request.headers.raw)
            if body and not any(k.lower() in (b"content-length", b"transfer-encoding") for k, _ in headers):
                headers.append((b"Content-Length", str(len(body)).encode()))
            try:
                data = h.send(h11.Request(method=request.method, target=request.url.raw_path, headers=headers))
                if body:
                    data += h.send(h11.Data(data=body))
                data += h.send(h11.EndOfMessage())
            except h11.LocalProtocolError as exc:  # e.g. a header value with a newline: refused, as httpcore does
                raise httpx.LocalProtocolError(str(exc), request=request) from exc
            writer.write(data)
            while True:
                event = await _next_event(conn, request)
                if isinstance(event, h11.Response):
                    break
                # 1xx informational answers are skipped, as httpcore does.
        except BaseException:
            writer.close()
            raise
        return event

    def _reusable(self, origin: tuple[str, str, int]) -> _Conn | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            since, conn = idle.pop()
            if now - since < _KEEPALIVE_S and not conn[0].at_eof() and not conn[1].is_closing():
                return conn
            conn[1].close()  # the server hung up (or soon will): never send into it
        return None

    async def _connect(self, origin: tuple[str, str, int], request: httpx.Request) -> _Conn:
        scheme, host, port = origin
        context = None
        if scheme == "https":
            context = self._ssl if self._ssl is not None else httpx.create_ssl_context(trust_env=False)
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=host if context is not None else None,
                limit=_READ_BYTES)
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return reader, writer, h11.Connection(h11.CLIENT)

    def _release(self, origin: tuple[str, str, int], conn: _Conn, *, complete: bool) -> None:
        h = conn[2]
        if complete and not self._closed and h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
            self._idle.setdefault(origin, []).append((time.monotonic(), conn))
        else:
            conn[1].close()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for _, (_, writer, _) in conns:
                writer.close()


async def _next_event(conn: _Conn, request: httpx.Request) -> object:
    reader, _, h = conn
    try:
        while True:
            event = h.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await reader.read(_READ_BYTES)
            if not data and h.their_state is h11.SEND_RESPONSE:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
            h.receive_data(data)
    except h11.RemoteProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc) or "protocol error", request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


class _Body(httpx.AsyncByteStream):
    """A response body read off its connection; closing it hands the connection back or closes it."""

    def __init__(self, transport: StreamTransport, origin: tuple[str, str, int], conn: _Conn,
                 request: httpx.Request) -> None:
        self._transport, self._origin, self._conn, self._request = transport, origin, conn, request
        self._complete = False
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while not self._complete:
            event = await _next_event(self._conn, self._request)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._complete = True

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._transport._release(self._origin, self._conn, complete=self._complete)


def make_client(*, verify_tls: bool, ca_file: str | None, transport: httpx.AsyncBaseTransport | None,
                limits: httpx.Limits | None = None) -> httpx.AsyncClient | str:
    """A client for one TLS setting, or the short reason it cannot be made (a bad CA file).

    ``trust_env=False``: no proxy variables or .netrc credentials sneak into
    fetches; what is fetched and how is exactly what the config says. Redirects
    are the caller's (httpx would read a whole 3xx body, past any cap). Without
    an injected ``transport`` requests go through ``StreamTransport``.
    """
    try:
        if not verify_tls:
            context = httpx.create_ssl_context(verify=False, trust_env=False)
        elif ca_file:
            context = ssl.create_default_context(cafile=ca_file)
        else:
            context = httpx.create_ssl_context(trust_env=False)  # httpx's default CA bundle, as before
    except (OSError, ssl.SSLError) as exc:
        return short(f"ca_file {ca_file}: {getattr(exc, 'strerror', None) or exc}")
    if transport is None:
        transport = StreamTransport(ssl_context=context)
    extra: dict[str, Any] = {} if limits is None else {"limits": limits}  # None: httpx's default
    return httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                             headers={"User-Agent": USER_AGENT}, **extra)


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body, inflated, refusing to hold more than ``limit`` bytes.

    A declared Content-Length over the cap is refused before reading one byte,
    and gzip is inflated here with ``max_length``, so a gzip bomb costs at most
    the cap: httpx's decoder would inflate a whole network chunk (up to ~1000x
    its size) before it could be counted.
    """
    too_big = f"body exceeds {format_size(limit)}"
    if response.is_stream_consumed:
        # A transport that hands over a body it already read (and decoded),
        # as httpx.MockTransport does with bytes: only the cap is left to check.
        if len(response.content) > limit:
            raise FetchError(too_big)
        return response.content
    encoding = response.headers.get("content-encoding", "").strip().lower()
    inflater = None
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    elif encoding not in ("", "identity"):
        raise FetchError(f"unsupported Content-Encoding {encoding!r}")
    length = response.headers.get("content-length", "")
    if inflater is None and length.isdigit() and int(length) > limit:
        raise FetchError(too_big)
    buf = bytearray()
    async for chunk in response.aiter_raw():
        if inflater is not None:
            try:
                chunk = inflater.decompress(chunk, limit + 1 - len(buf))
            except zlib.error as exc:
                raise FetchError(f"invalid gzip body: {exc}") from None
        buf += chunk
        if len(buf) > limit:
            raise FetchError(too_big)
    if inflater is not None and not inflater.eof:
        raise FetchError("truncated gzip body")
    return bytes(buf)
