"""A lean HTTP/1.1 client for a scraper's plain ``http://`` GETs; everything else goes to ``StreamTransport``.

``StreamTransport`` hands every received chunk to h11, which copies it into its
own buffer, walks a state machine and builds an event per piece of the answer;
measured with ``tests/bench/bench_scrape.py`` (64 targets × 1,000 samples,
kept alive), that was most of the fetch's cost over the bare floor. A scrape is
the simplest HTTP there is: the same GET, no body, one answer. So here the
request's bytes are built (and checked) once per target, the answer's status
line and headers are parsed by hand from a bounded buffer, and the body is
handed on as the socket gave it (Content-Length, chunked, or until close for
HTTP/1.0), with no copy when a chunk is body only. Failures raise the httpx
exceptions ``StreamTransport`` raises (``errors.fetching`` words them), so a
hostile peer reads the same whichever transport met it; gzip and the body cap
stay with ``body.read_capped``. https, other methods, or a request with a body
go through the fallback unchanged.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator

import httpx

from ptmon.monitor.sources.errors import InvalidRequestError, NotHTTPError
from ptmon.monitor.sources.transport import StreamTransport, _Link, _refused

__all__ = ["ENABLED", "LeanTransport", "lean_over"]

ENABLED = True  # the Scraper's http:// targets go through LeanTransport; False: all through StreamTransport
_MAX_HEAD_BYTES = 64 * 1024  # a response's status line and headers, at most (h11's limit is 16 KiB)
_MAX_LINE_BYTES = 4096  # a chunk-size or trailer line, at most
_SNIFF_BYTES = 80  # as StreamTransport: the start kept to say what a peer that is not HTTP sent
_HTTP_START = b"HTTP/"
_KEEPALIVE_S = 5.0
_REQUESTS_KEPT = 256  # request bytes built, one per target and deadline
_STATUS = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_UNTIL_CLOSE = -1
_CHUNKED = -2

_Conn = tuple[_Link, asyncio.Transport]


def lean_over(fallback: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """The Scraper's transport: ``LeanTransport`` for plain http in front of ``fallback``, unless switched off."""
    if ENABLED and isinstance(fallback, StreamTransport):
        return LeanTransport(fallback=fallback)
    return fallback


class _Feed:
    """A connection's received chunks read as a stream: whole chunks handed on, a line taken out of them."""

    __slots__ = ("link", "request", "data", "pos")

    def __init__(self, link: _Link, request: httpx.Request, data: bytes) -> None:
        self.link, self.request, self.data, self.pos = link, request, data, 0

    async def _more(self, *, eof_ok: bool) -> bool:
        try:
            data = await self.link.read()
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=self.request) from exc
        if not data:
            if eof_ok:
                return False
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body",
                                            request=self.request)
        self.data, self.pos = data, 0
        return True

    async def take(self, n: int, *, eof_ok: bool = False) -> bytes:
        """Up to ``n`` (> 0) bytes, at least one; b"" only at the peer's close when ``eof_ok``."""
        if self.pos >= len(self.data) and not await self._more(eof_ok=eof_ok):
            return b""
        data, pos = self.data, self.pos
        if pos == 0 and n >= len(data):
            self.pos = len(data)
            return data  # the chunk as received: no copy
        out = memoryview(data)[pos:pos + n]  # a view: read_capped joins the pieces once
        self.pos = pos + len(out)
        return out  # type: ignore[return-value]

    async def line(self) -> bytes:
        """The next line (its CRLF or LF dropped), refused past ``_MAX_LINE_BYTES``."""
        got = bytearray()
        while True:
            if self.pos >= len(self.data):
                await self._more(eof_ok=False)
            end = self.data.find(b"\n", self.pos)
            stop = len(self.data) if end < 0 else end + 1
            got += self.data[self.pos:stop]
            self.pos = stop
            if len(got) > _MAX_LINE_BYTES:
                raise httpx.RemoteProtocolError("chunked body: a line too long", request=self.request)
            if end >= 0:
                return bytes(got).rstrip(b"\r\n")

    @property
    def drained(self) -> bool:
        return self.pos >= len(self.data)


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 GETs to http:// origins by hand over ``_Link`` connections kept alive per origin; the rest
    (https, other methods, bodies) through ``fallback``, which is closed with this transport."""

    def __init__(self, *, fallback: StreamTransport) -> None:
        self._fallback = fallback
        self._idle: dict[tuple[str, int], list[tuple[float, _Conn]]] = {}
        self._requests: dict[tuple[bytes, tuple[tuple[bytes, bytes], ...]], bytes] = {}
        self._scratch = memoryview(bytearray(256 * 1024))
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("transport is closed")
        url = request.url
        headers = tuple(request.headers.raw)
        if url.scheme != "http" or request.method != "GET" or any(
                k.lower() in (b"content-length", b"transfer-encoding") for k, _ in headers):
            return await self._fallback.handle_async_request(request)
        origin = (url.host, url.port or 80)
        data = self._bytes(request, url.raw_path, headers)
        conn = self._reusable(origin)
        if conn is not None:
            try:
                return await self._exchange(origin, conn, request, data)
            except (httpx.RemoteProtocolError, httpx.ReadError):
                pass  # a kept-alive connection the server dropped (restart, idle timeout): a GET is sent again
        return await self._exchange(origin, await self._connect(origin, request), request, data)

    def _bytes(self, request: httpx.Request, target: bytes, headers: tuple[tuple[bytes, bytes], ...]) -> bytes:
        """The request's bytes, checked as h11 checks a request (a header value with a line break is refused,
        by name only), built once: a scraper sends the same GET every scrape."""
        key = (target, headers)
        data = self._requests.get(key)
        if data is None:
            if not target or any(b in target for b in b" \r\n\0") or not all(
                    _TOKEN.fullmatch(k) and not any(b in v for b in b"\r\n\0") and v == v.strip(b" \t")
                    for k, v in headers):
                raise InvalidRequestError(_refused(list(headers)), request=request)
            data = b"".join([b"GET ", target, b" HTTP/1.1\r\n",
                             *(b"%s: %s\r\n" % (k, v) for k, v in headers), b"\r\n"])
            if len(self._requests) >= _REQUESTS_KEPT:
                self._requests.clear()
            self._requests[key] = data
        return data

    async def _exchange(self, origin: tuple[str, int], conn: _Conn, request: httpx.Request,
                        data: bytes) -> httpx.Response:
        """Send the GET and read the answer's head; any failure closes the connection."""
        link, sock = conn
        try:
            sock.write(data)
            status, reason, keep, headers, feed = await _read_head(link, request)
            framing = _framing(status, headers, request)
        except BaseException:
            sock.close()
            raise
        return httpx.Response(
            status, headers=headers,
            stream=_Body(self, origin, conn, feed, framing, keep=keep and framing != _UNTIL_CLOSE),
            extensions={"http_version": b"HTTP/1.1" if keep else b"HTTP/1.0", "reason_phrase": reason})

    def _reusable(self, origin: tuple[str, int]) -> _Conn | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            since, conn = idle.pop()
            if now - since < _KEEPALIVE_S and not conn[0].at_eof() and not conn[1].is_closing():
                return conn
            conn[1].close()
        return None

    async def _connect(self, origin: tuple[str, int], request: httpx.Request) -> _Conn:
        host, port = origin
        try:
            sock, link = await asyncio.get_running_loop().create_connection(
                lambda: _Link(over_ssl=False, scratch=self._scratch), host, port)
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return link, sock

    def _release(self, origin: tuple[str, int], conn: _Conn, *, reuse: bool) -> None:
        if reuse and not self._closed:
            self._idle.setdefault(origin, []).append((time.monotonic(), conn))
        else:
            conn[1].close()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for _, (_, sock) in conns:
                sock.close()
        await self._fallback.aclose()


async def _read_head(link: _Link, request: httpx.Request
                     ) -> tuple[int, bytes, bool, list[tuple[bytes, bytes]], _Feed]:
    """The first final (non-1xx) answer's status, reason, keep-alive, raw headers, and the feed its body is
    read from. A peer whose first bytes are not HTTP's is said to be so at once (as StreamTransport)."""
    buf = b""  # what has come of the head so far (usually the first chunk alone: never copied whole)
    searched = 0
    while True:
        end = buf.find(b"\n\r\n", searched)
        bare = buf.find(b"\n\n", searched, end if end >= 0 else len(buf))
        if bare >= 0:
            end, skip = bare, 2
        else:
            skip = 3
        if end >= 0:
            status, reason, keep, headers = _parse_head(buf[:end], request)
            if 100 <= status < 200:  # informational answers are skipped, as httpcore does
                buf, searched = buf[end + skip:], 0
                continue
            feed = _Feed(link, request, buf)
            feed.pos = end + skip
            return status, reason, keep, headers, feed
        if len(buf) > _MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError(f"response head exceeds {_MAX_HEAD_BYTES // 1024} KiB",
                                            request=request)
        searched = max(0, len(buf) - 2)
        try:
            data = await link.read()
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        if not data:
            if buf:
                raise NotHTTPError(buf[:_SNIFF_BYTES], request=request)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        buf = buf + data if buf else data
        start = buf[:_SNIFF_BYTES].lstrip(b"\r\n")[: len(_HTTP_START)]
        if not _HTTP_START.startswith(start):
            raise NotHTTPError(buf[:_SNIFF_BYTES], request=request)


def _parse_head(head: bytes, request: httpx.Request) -> tuple[int, bytes, bool, list[tuple[bytes, bytes]]]:
    """Status, reason, whether the connection may be kept, and the headers; a head that is not HTTP's
    (a malformed status line or header, an obsolete folded line) is NotHTTPError, as h11's refusal is."""
    lines = head.lstrip(b"\r\n").split(b"\n")
    match = _STATUS.fullmatch(lines[0].rstrip(b"\r"))
    if match is None:
        raise NotHTTPError(head[:_SNIFF_BYTES], request=request)
    headers: list[tuple[bytes, bytes]] = []
    close = False
    for raw in lines[1:]:
        line = raw.rstrip(b"\r")
        name, sep, value = line.partition(b":")
        if not sep or _TOKEN.fullmatch(name) is None or any(b in value for b in b"\r\0"):
            raise NotHTTPError(head[:_SNIFF_BYTES], request=request)
        value = value.strip(b" \t")
        headers.append((name, value))
        if name.lower() == b"connection" and b"close" in value.lower():
            close = True
    return int(match[2]), match[3] or b"", match[1] == b"1" and not close, headers


def _framing(status: int, headers: list[tuple[bytes, bytes]], request: httpx.Request) -> int:
    """How the body ends: its length, ``_CHUNKED``, or ``_UNTIL_CLOSE``; a contradictory length is refused."""
    if status in (204, 304):
        return 0
    lengths: set[bytes] = set()
    coding = b""
    for name, value in headers:
        low = name.lower()
        if low == b"transfer-encoding":
            coding = value.lower()
        elif low == b"content-length":
            lengths.update(v.strip() for v in value.split(b","))
    if coding:
        if coding.rsplit(b",", 1)[-1].strip() != b"chunked":
            raise httpx.RemoteProtocolError("unsupported Transfer-Encoding", request=request)
        return _CHUNKED
    if not lengths:
        return _UNTIL_CLOSE
    if len(lengths) != 1 or not next(iter(lengths)).isdigit():
        raise httpx.RemoteProtocolError("bad Content-Length", request=request)
    return int(next(iter(lengths)))


class _Body(httpx.AsyncByteStream):
    """An answer's body off its connection; closing it hands the connection back (whole and kept alive)
    or closes it."""

    def __init__(self, transport: LeanTransport, origin: tuple[str, int], conn: _Conn, feed: _Feed,
                 framing: int, *, keep: bool) -> None:
        self._transport, self._origin, self._conn, self._feed = transport, origin, conn, feed
        self._framing, self._keep = framing, keep
        self._complete = False
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        feed = self._feed
        if self._framing == _CHUNKED:
            async for piece in _chunks(feed):
                yield piece
        elif self._framing == _UNTIL_CLOSE:
            while piece := await feed.take(1 << 30, eof_ok=True):
                yield piece
        else:
            left = self._framing
            while left:
                piece = await feed.take(left)
                left -= len(piece)
                yield piece
        self._complete = True

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            reuse = self._complete and self._keep and self._feed.drained
            self._transport._release(self._origin, self._conn, reuse=reuse)


async def _chunks(feed: _Feed) -> AsyncIterator[bytes]:
    """A chunked body's data, pieces as received; trailers are read and dropped."""
    while True:
        size_line = (await feed.line()).split(b";", 1)[0].strip()
        if not size_line or len(size_line) > 16 or size_line.strip(b"0123456789abcdefABCDEF"):
            raise httpx.RemoteProtocolError("chunked body: a bad chunk size", request=feed.request)
        left = int(size_line, 16)
        if left == 0:
            while await feed.line():
                pass  # a trailer
            return
        while left:
            piece = await feed.take(left)
            left -= len(piece)
            yield piece
        if await feed.line():
            raise httpx.RemoteProtocolError("chunked body: data after a chunk", request=feed.request)
