"""Why a fetch failed: a small typed hierarchy, one mapping from transport exceptions, one wording.

The direct scraper and the Prometheus source must fail alike (a refused port,
a bad CA file, a gzip bomb read the same on screen whichever source hit it),
and a caller that treats one failure differently (a backfill too big for the
body cap is given up, not fatal) branches on the type, never on the message.
Every message is already short and human: it is what the targets table shows.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from ptmon.monitor.text import safe

__all__ = [
    "FetchError",
    "FetchTimeout",
    "ConnectFailed",
    "ProtocolFailed",
    "BodyTooLarge",
    "BadBody",
    "BadStatus",
    "BadAnswer",
    "CredentialsError",
    "NotHTTPError",
    "InvalidRequestError",
    "fetching",
    "connect_message",
    "series_limit_error",
    "format_size",
    "short",
]

_ERROR_MAX_CHARS = 200


class FetchError(Exception):
    """A target-level failure whose message is already short and human."""


class FetchTimeout(FetchError):
    """The whole exchange did not end within its deadline."""


class ConnectFailed(FetchError):
    """No connection: refused, unreachable, unresolvable, or TLS would not agree."""


class ProtocolFailed(FetchError):
    """Connected, but the peer broke HTTP (hung up, sent what is not a response)."""


class BodyTooLarge(FetchError):
    """The body (declared, streamed or inflated) is over the cap; nothing past the cap was held."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body exceeds {format_size(limit)}")
        self.limit = limit


class BadBody(FetchError):
    """A body that cannot be read as sent: bad or truncated gzip, an unknown encoding, bytes not UTF-8."""


class BadStatus(FetchError):
    """An answer other than 200 (redirects the caller did not follow included)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class BadAnswer(FetchError):
    """A 200 whose body is not what was asked for: a web page instead of metrics, not the API's JSON,
    a failed query."""


class CredentialsError(FetchError):
    """A credentials file that cannot be used now (missing, unreadable, empty); its content is never shown."""


class NotHTTPError(httpx.RemoteProtocolError):
    """The transport's word for a peer whose answer does not start as HTTP's does; ``sent`` is its start."""

    def __init__(self, sent: bytes, *, request: httpx.Request) -> None:
        super().__init__(not_http_message(sent), request=request)
        self.sent = sent


class InvalidRequestError(httpx.LocalProtocolError):
    """The transport's word for a request HTTP refuses to carry (a header value with a line break); the
    message names the header, never its value, which may be a credential."""


def not_http_message(sent: bytes) -> str:
    """What a peer that is not an HTTP server sent, when it is a line of text (SSH's banner, an SMTP or
    Redis greeting); TLS records are named; anything else is just not HTTP."""
    if len(sent) >= 2 and sent[0] in (0x15, 0x16) and sent[1] == 0x03:
        return "not an HTTP response (the server speaks TLS: use https://)"
    line = sent.split(b"\n", 1)[0].rstrip(b"\r")
    if line and all(0x20 <= b < 0x7F for b in line):
        return f"not an HTTP server (it sent {line.decode('ascii')[:60]!r})"
    return "not an HTTP response"


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


def series_limit_error(max_series: int, dropped: int, *, over_label_bytes: int = 0,
                       max_label_bytes: int = 0) -> str:
    """A target over the store's series cap or label budget: stored up to the cap, flagged down, and this
    says what is missing (and, for the budget, the likely cause: label values that keep changing)."""
    if over_label_bytes and over_label_bytes >= dropped:
        return (f"label memory limit {_mib(max_label_bytes)} reached: {dropped:,} new series dropped "
                "(label values that keep changing, or very long ones?)")
    return f"series limit {max_series:,} reached: {dropped:,} new series dropped"


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n:,} bytes"


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


# OpenSSL's reason when the first record back is not TLS at all: an HTTP server's "HTTP/1.0 400" answer.
_PLAIN_HTTP_REASONS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST"})


def connect_message(exc: Exception) -> str:
    """Why a connection failed, in a few words, from the root cause httpx wraps."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = f": {cause.verify_message}" if cause.verify_message else ""
            return f"TLS certificate verify failed{detail}"
        if isinstance(cause, ssl.SSLError):
            if cause.reason in _PLAIN_HTTP_REASONS:
                return "the server speaks plain HTTP: use http://"
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


@asynccontextmanager
async def fetching(timeout: float) -> AsyncIterator[None]:
    """One deadline over a whole exchange, and every transport exception as the ``FetchError`` saying why.

    ``FetchError``s raised inside (a status, the body cap) pass unchanged;
    a cancel from outside (``aclose``) goes on up.
    """
    try:
        async with asyncio.timeout(timeout):
            yield
    except (TimeoutError, httpx.TimeoutException):
        raise FetchTimeout(f"timed out after {timeout:g} s") from None
    except httpx.ConnectError as exc:
        raise ConnectFailed(connect_message(exc)) from None
    except (NotHTTPError, InvalidRequestError) as exc:  # already human: no exception name in front
        raise ProtocolFailed(str(exc)) from None
    except httpx.HTTPError as exc:
        raise ProtocolFailed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
