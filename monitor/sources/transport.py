"""The HTTP/1.1 transport both sources fetch through, and the client recipe around it.

httpx's default transport (httpcore over anyio) costs more CPU per small
loopback scrape than the socket work itself; ``StreamTransport`` does the same
HTTP/1.1 with an asyncio protocol and h11. ``make_client`` is the one way a source
gets a client: TLS from the target's settings, no environment, no redirects.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import AsyncIterator

import h11
import httpx

from ptmon.monitor.sources.errors import InvalidRequestError, NotHTTPError, short

__all__ = ["StreamTransport", "USER_AGENT", "authorize", "client_over", "make_client", "make_transport", "origin",
           "redirect_request"]

USER_AGENT = "ptmon"
_SNIFF_BYTES = 80  # of an answer's start kept to say what a peer that is not HTTP sent
_HTTP_START = b"HTTP/"
_KEEPALIVE_S = 5.0  # an idle connection older than this is closed, not reused (httpx's default expiry)
_PAUSE_BYTES = 256 * 1024  # received but not yet read: past this the socket is not read (as StreamReader's limit)
_SCRATCH_BYTES = 256 * 1024  # one socket read at most (asyncio's own read size)
_EVENTS_KEPT = 256  # request heads h11 validated, kept to send again (one per target and deadline)


class _Link(asyncio.BufferedProtocol):
    """A connection's receiving side: each chunk the socket gave kept as it came, handed on whole.

    asyncio's StreamReader copies every chunk into one buffer and out again (and
    wakes a reader per read); a scraper reads whole responses, so chunks are
    queued and h11 is fed each one as is. The socket is read into ``scratch``
    (one buffer all of a transport's connections share: the event loop reads
    one socket at a time and the chunk is copied out at once), not into a fresh
    256 KiB object per read, which cost more than all the rest of a fetch. Like
    StreamReaderProtocol, the socket stays open for writing after the peer's FIN
    (a kept-alive connection the server dropped is then found out by its reset),
    and reading pauses past ``_PAUSE_BYTES`` not yet read.
    """

    def __init__(self, *, over_ssl: bool, scratch: memoryview) -> None:
        self._over_ssl = over_ssl
        self._scratch = scratch
        self._transport: asyncio.Transport | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self._eof = False  # the peer's FIN (or the connection's end) seen
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(self._scratch[:nbytes]))

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > _PAUSE_BYTES and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return not self._over_ssl  # keep the socket half-open (asyncio ignores it over TLS, with a warning)

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def at_eof(self) -> bool:
        return self._eof and not self._chunks

    async def read(self) -> bytes:
        """The next chunk received; b"" at the end; the OS error the connection ended with, raised."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._eof:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = self._chunks.popleft()
        self._buffered -= len(data)
        if self._paused and self._buffered <= _PAUSE_BYTES and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data


_Conn = tuple[_Link, asyncio.Transport, h11.Connection]


class StreamTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 for a scraper: an asyncio protocol for the socket, h11 for HTTP.

    httpx's default transport (httpcore over anyio) spent about 1.5 ms of CPU on
    each small loopback scrape, mostly on locks, pool bookkeeping and stream
    wrappers (three times the socket work itself, and most of the data loop's
    CPU with 8 targets scraped every second); this one spends about 0.7 ms.
    It does the same HTTP/1.1 (h11 parses, as in httpcore; keep-alive when the
    server allows it, else a connection per request, as prometheus_client's
    HTTP/1.0 server wants) with a plain list of idle connections per origin.
    Received chunks go to h11 as they came (``_Link``), and a request head h11
    validated is kept and sent again, not validated anew every scrape. It keeps
    httpx's Request and Response (the readers use them) and its exception types,
    with the OS or TLS error as the cause, so failures read the same. Timeouts are the caller's
    ``asyncio.timeout`` (both sources wrap every request in one); a request cut
    off half-way closes its connection.
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[tuple[float, _Conn]]] = {}
        self._events: dict[tuple[bytes, bytes, tuple[tuple[bytes, bytes], ...]], h11.Request] = {}
        self._scratch = memoryview(bytearray(_SCRATCH_BYTES))  # every connection's socket reads land here
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
                data = h.send(self._head(request.method.encode(), request.url.raw_path, headers))
                if body:
                    data += h.send(h11.Data(data=body))
                data += h.send(h11.EndOfMessage())
            except h11.LocalProtocolError:  # e.g. a header value with a newline: refused, as httpcore does
                # h11's text quotes the value, and the value may be a token: name the header, never echo it.
                raise InvalidRequestError(_refused(headers), request=request) from None
            writer.write(data)
            head = bytearray()  # the answer's first bytes, to tell a peer that is not HTTP at all
            while True:
                event = await _next_event(conn, request, head=head)
                if isinstance(event, h11.Response):
                    break
                # 1xx informational answers are skipped, as httpcore does.
        except BaseException:
            writer.close()
            raise
        return event

    def _head(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> h11.Request:
        """The request's h11 event, validated once: a scraper sends the same head every scrape."""
        key = (method, target, tuple(headers))
        event = self._events.get(key)
        if event is None:
            event = h11.Request(method=method, target=target, headers=headers)
            if len(self._events) >= _EVENTS_KEPT:
                self._events.clear()
            self._events[key] = event
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
        loop = asyncio.get_running_loop()
        try:
            sock, link = await loop.create_connection(
                lambda: _Link(over_ssl=context is not None, scratch=self._scratch), host, port, ssl=context,
                server_hostname=host if context is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return link, sock, h11.Connection(h11.CLIENT)

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


def _refused(headers: list[tuple[bytes, bytes]]) -> str:
    """Which request header HTTP refuses, by name only (the value may be a credential)."""
    for name, value in headers:
        if any(b in value for b in b"\r\n\0") or value != value.strip(b" \t"):
            return (f"request header {name.decode('latin-1')} is not valid HTTP (a line break, NUL or "
                    f"surrounding space in it; its value is not shown)")
    return "the request is not valid HTTP (its header values are not shown)"


async def _next_event(conn: _Conn, request: httpx.Request, *, head: bytearray | None = None) -> object:
    """The next h11 event; ``head`` (while the response's head is awaited) collects its first bytes, so a
    peer that is not an HTTP server (SSH's banner, binary junk) is said to be so at once, not after the
    deadline h11 would wait for a blank line."""
    reader, _, h = conn
    try:
        while True:
            event = h.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await reader.read()
            if not data and h.their_state is h11.SEND_RESPONSE:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
            if head is not None and len(head) < _SNIFF_BYTES:
                head += data[: _SNIFF_BYTES - len(head)]
                start = bytes(head).lstrip(b"\r\n")[: len(_HTTP_START)]
                if not _HTTP_START.startswith(start):
                    raise NotHTTPError(bytes(head), request=request)
            h.receive_data(data)
    except h11.RemoteProtocolError as exc:
        if head is not None:  # the status line or headers are not HTTP's
            raise NotHTTPError(bytes(head), request=request) from exc
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
                yield event.data  # h11's own copy (a bytearray): read_capped joins them once
            elif isinstance(event, h11.EndOfMessage):
                self._complete = True

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._transport._release(self._origin, self._conn, complete=self._complete)


def make_transport(*, verify_tls: bool, ca_file: str | None) -> StreamTransport | str:
    """The transport for one TLS setting, or the short reason it cannot be made (a bad CA file)."""
    try:
        if not verify_tls:
            context = httpx.create_ssl_context(verify=False, trust_env=False)
        elif ca_file:
            context = ssl.create_default_context(cafile=ca_file)
        else:
            context = httpx.create_ssl_context(trust_env=False)  # httpx's default CA bundle, as before
    except (OSError, ssl.SSLError) as exc:
        return short(f"ca_file {ca_file}: {getattr(exc, 'strerror', None) or exc}")
    return StreamTransport(ssl_context=context)


def client_over(transport: httpx.AsyncBaseTransport) -> httpx.AsyncClient:
    """The client recipe over ``transport``.

    ``trust_env=False``: no proxy variables or .netrc credentials sneak into
    fetches; what is fetched and how is exactly what the config says. Redirects
    are the caller's (httpx would read a whole 3xx body, past any cap). A
    transport is always given, so httpx's pool ``limits`` never apply.
    """
    return httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                             headers={"User-Agent": USER_AGENT})


def make_client(*, verify_tls: bool, ca_file: str | None,
                transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient | str:
    """A client for one TLS setting, or the short reason it cannot be made (a bad CA file).

    Without an injected ``transport`` requests go through ``StreamTransport``.
    """
    made = make_transport(verify_tls=verify_tls, ca_file=ca_file)
    if isinstance(made, str):
        return made
    return client_over(made if transport is None else transport)


def authorize(request: httpx.Request, auth: httpx.Auth | None) -> None:
    """Credentials put on ``request`` as ``httpx.AsyncClient.send(request, auth=auth)`` puts them: ``auth``,
    else the URL's user:password. Only single-step schemes (basic, bearer: all ptmon makes) are supported:
    the flow is run to its first request, never fed a response."""
    if auth is None:
        url = request.url
        if not url.userinfo:
            return
        auth = httpx.BasicAuth(url.username, url.password)
    flow = auth.sync_auth_flow(request)
    try:
        next(flow)
    finally:
        flow.close()


def redirect_request(request: httpx.Request, response: httpx.Response) -> httpx.Request:
    """The GET that follows ``response``'s redirect, as ``httpx.AsyncClient`` builds it (its URL rules, the
    Authorization header kept only on the same origin or an https upgrade of it, a new Host), minus cookies:
    like Prometheus, a scraper keeps none."""
    try:
        url = httpx.URL(response.headers["Location"])
    except httpx.InvalidURL as exc:
        raise httpx.RemoteProtocolError(f"Invalid URL in location header: {exc}.", request=request) from None
    old = request.url
    if url.scheme and not url.host:
        url = url.copy_with(host=old.host)
    if url.is_relative_url:
        url = old.join(url)
    if old.fragment and not url.fragment:
        url = url.copy_with(fragment=old.fragment)
    headers = httpx.Headers(request.headers)
    if origin(url) != origin(old):
        if not (old.host == url.host and origin(old)[::2] == ("http", 80) and origin(url)[::2] == ("https", 443)):
            headers.pop("Authorization", None)
        headers["Host"] = url.netloc.decode("ascii")
    headers.pop("Cookie", None)
    return httpx.Request("GET", url, headers=headers, extensions=request.extensions)


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in, as httpx compares origins."""
    port = url.port
    if port is None:
        port = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port
