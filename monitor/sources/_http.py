"""HTTP pieces both sources share: one client recipe, one capped body reader, one error wording.

The direct scraper and the Prometheus source fetch over the same httpx stack
and must fail alike (a refused port, a bad CA file, a gzip bomb read the same
on screen whichever source hit it), so the rules live here once.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import socket
import ssl
import sys
import zlib
from collections.abc import Generator

import httpx

from monitor.text import safe

__all__ = [
    "FetchError",
    "BearerTokenFile",
    "USER_AGENT",
    "connect_message",
    "format_size",
    "make_client",
    "read_capped",
    "short",
]

USER_AGENT = "ptmon"
_ERROR_MAX_CHARS = 200


def _stop_missing_sniffio_lookups() -> None:
    """Make httpcore's repeated ``import sniffio`` cheap when sniffio is not installed.

    httpcore (1.0.x) imports sniffio inside every lock and pool request, about six times a
    scrape, and falls back to asyncio when it is missing. Python does not remember a failed
    import, so each one walked sys.path again with a stat per entry: a fifth of the CPU of
    the whole data loop in bench_tui. A ``None`` in ``sys.modules`` is Python's documented
    way to say "absent": the import still fails (httpcore picks asyncio as before), at once.
    With sniffio installed nothing changes.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


_stop_missing_sniffio_lookups()


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


def make_client(*, verify_tls: bool, ca_file: str | None, transport: httpx.AsyncBaseTransport | None,
                limits: httpx.Limits | None = None) -> httpx.AsyncClient | str:
    """A client for one TLS setting, or the short reason it cannot be made (a bad CA file).

    ``trust_env=False``: no proxy variables or .netrc credentials sneak into
    fetches; what is fetched and how is exactly what the config says. Redirects
    are the caller's (httpx would read a whole 3xx body, past any cap).
    """
    try:
        verify: ssl.SSLContext | bool = False
        if verify_tls:
            verify = ssl.create_default_context(cafile=ca_file) if ca_file else True
    except (OSError, ssl.SSLError) as exc:
        return short(f"ca_file {ca_file}: {getattr(exc, 'strerror', None) or exc}")
    extra = {} if limits is None else {"limits": limits}
    return httpx.AsyncClient(transport=transport, verify=verify, trust_env=False, follow_redirects=False,
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
