"""Reading a response body under a cap, gzip inflated here so a bomb costs at most the cap."""

from __future__ import annotations

import zlib

import httpx

from ptmon.monitor.sources.errors import BadAnswer, BadBody, BodyTooLarge

__all__ = ["read_capped", "refuse_web_page"]

_PAGES = frozenset({"text/html", "application/xhtml+xml"})


def refuse_web_page(response: httpx.Response, *, expected: str) -> None:
    """A web page where ``expected`` was asked for (a login page, a proxy's error page, a dashboard's UI)
    is said to be one, before its body is read, rather than parsed into an error about its first line."""
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media in _PAGES:
        raise BadAnswer(f"got {media}, not {expected} (a login page?)")


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body, inflated, refusing to hold more than ``limit`` bytes.

    A declared Content-Length over the cap is refused before reading one byte,
    and gzip is inflated here with ``max_length``, so a gzip bomb costs at most
    the cap: httpx's decoder would inflate a whole network chunk (up to ~1000x
    its size) before it could be counted.
    """
    if response.is_stream_consumed:
        # A transport that hands over a body it already read (and decoded),
        # as httpx.MockTransport does with bytes: only the cap is left to check.
        if len(response.content) > limit:
            raise BodyTooLarge(limit)
        return response.content
    encoding = response.headers.get("content-encoding", "").strip().lower()
    inflater = None
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    elif encoding not in ("", "identity"):
        raise BadBody(f"unsupported Content-Encoding {encoding!r}")
    length = response.headers.get("content-length", "")
    if inflater is None and length.isdigit() and int(length) > limit:
        raise BodyTooLarge(limit)
    buf = bytearray()
    async for chunk in response.aiter_raw():
        if inflater is not None:
            try:
                chunk = inflater.decompress(chunk, limit + 1 - len(buf))
            except zlib.error as exc:
                raise BadBody(f"invalid gzip body: {exc}") from None
        buf += chunk
        if len(buf) > limit:
            raise BodyTooLarge(limit)
    if inflater is not None and not inflater.eof:
        raise BadBody("truncated gzip body")
    return bytes(buf)
