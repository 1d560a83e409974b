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


class _Gunzip:
    """Inflates a gzip body of one or more members (RFC 1952 allows several, as Go's and Python's readers
    read), with zero padding between or after them, as Python's reader allows; anything else after a
    member is an error, not silently dropped with half the series."""

    def __init__(self) -> None:
        self._member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)

    @property
    def complete(self) -> bool:
        return self._member.eof

    def inflate(self, data: bytes, max_length: int) -> bytes:
        """At most ``max_length`` bytes (> 0) inflated from ``data``; input past them is not read."""
        out = bytearray()
        while data and len(out) < max_length:
            if self._member.eof:  # between members
                data = data.lstrip(b"\0")
                if not data:
                    break
                if not _GZIP_MAGIC.startswith(data[: len(_GZIP_MAGIC)]):
                    raise BadBody("invalid gzip body: data after the compressed stream")
                self._member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            try:
                out += self._member.decompress(data, max_length - len(out))
            except zlib.error as exc:
                raise BadBody(f"invalid gzip body: {exc}") from None
            data = self._member.unused_data if self._member.eof else b""
        return bytes(out)


_GZIP_MAGIC = b"\x1f\x8b"


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
    gunzip = None
    if encoding in ("gzip", "x-gzip"):
        gunzip = _Gunzip()
    elif encoding not in ("", "identity"):
        raise BadBody(f"unsupported Content-Encoding {encoding!r}")
    length = response.headers.get("content-length", "")
    if gunzip is None and length.isdigit() and int(length) > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []  # joined once at the end: the body is copied once here, not once a chunk
    held = 0
    async for chunk in response.aiter_raw():
        if gunzip is not None:
            chunk = gunzip.inflate(chunk, limit + 1 - held)
        held += len(chunk)
        if held > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    if gunzip is not None and not gunzip.complete:
        raise BadBody("truncated gzip body")
    if len(chunks) == 1 and type(chunks[0]) is bytes:
        return chunks[0]
    return b"".join(chunks)
