"""One chunk of a recording: a target's scrapes and health over a stretch of time, as bytes.

A chunk holds what the source handed the Store (each ingest: its stamp, the
time it was stored, and every sample) and the target's health as it changed.
The layout was chosen by measurement (tests/bench/bench_record.py, README
"Performance"): values of one series sit next to each other (grouped per
*layout*, the ordered list of series a scrape carried, which is the same
scrape after scrape), byte-shuffled (all first bytes of the float64s, then
all second bytes, ...) and compressed with lzma. Neighbouring values of a
series share their high bytes, so the shuffled planes are long runs.
XOR-ing each value with its predecessor (Gorilla's trick) bought 4% more and
cost a Python loop per value; zstd (backports.zstd) was no smaller than lzma.

Everything here is pure: bytes in, records out. Little-endian on disk.
"""

from __future__ import annotations

import json
import lzma
import math
import struct
import sys
import zlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ptmon.monitor.dashboard import TargetHealth

__all__ = ["Scrape", "HealthRecord", "Chunk", "encode_chunk", "decode_chunk", "CODECS", "CodecError",
           "DEFAULT_CODEC"]

_MAGIC = b"PTC2"
_HEAD = struct.Struct("<4sIIII")
_NO = -1  # no string / unknown
CODECS = ("none", "zlib", "lzma")
DEFAULT_CODEC = "lzma"
_LZMA_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 6}]


class CodecError(ValueError):
    """A chunk that cannot be read back (truncated, foreign, or from a newer ptmon)."""


@dataclass(frozen=True, slots=True)
class Scrape:
    """One ``Store.ingest`` call: which series (ids into the recording's series table) had which values.

    ``timestamps`` holds each sample's own timestamp (NaN where it had none)
    only when at least one sample carried one; otherwise every sample is at
    ``stamp``. ``stored_at`` is the source's clock when the samples reached
    the Store: a replay at time T shows exactly the scrapes stored by T.
    """

    stamp: float
    stored_at: float
    series: array  # array('I') of series ids, in the order the samples came
    values: array  # array('d'), one per series id
    timestamps: array | None = None


@dataclass(frozen=True, slots=True)
class HealthRecord:
    """A target's health from ``at`` on (its last scrape's end when known, else when it was read)."""

    at: float
    health: TargetHealth


@dataclass(frozen=True, slots=True)
class Chunk:
    scrapes: tuple[Scrape, ...]
    health: tuple[HealthRecord, ...]


def _le(a: array) -> bytes:
    if sys.byteorder == "big":  # pragma: no cover - no big-endian machine to test on
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _from(typecode: str, data: bytes | memoryview) -> array:
    a = array(typecode)
    a.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover
        a.byteswap()
    return a


def _shuffle(data: bytes, width: int = 8) -> bytes:
    return b"".join(data[i::width] for i in range(width))


def _unshuffle(data: bytes | memoryview, width: int = 8) -> bytes:
    n = len(data) // width
    out = bytearray(len(data))
    for i in range(width):
        out[i::width] = data[i * n:(i + 1) * n]
    return bytes(out)


# TargetHealth's fields with columns of their own; any other field (a newer ptmon's) goes in a JSON string.
_COLUMNS = frozenset(("name", "url", "role", "up", "last_scrape", "last_success", "scrape_seconds", "samples",
                      "series", "dropped_series", "error"))
_DEFAULTS = {f.name: f.default for f in fields(TargetHealth)}


def _extra(h: TargetHealth) -> str | None:
    """The fields without a column that differ from their default, as JSON (None when there is none)."""
    out = {k: getattr(h, k) for k in _DEFAULTS if k not in _COLUMNS and getattr(h, k) != _DEFAULTS[k]}
    return json.dumps(out, sort_keys=True) if out else None


def _unextra(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    raw = json.loads(text)
    return {k: v for k, v in raw.items() if k in _DEFAULTS and k not in _COLUMNS}  # an unknown field: dropped


def _opt(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _unopt(x: float) -> float | None:
    return None if math.isnan(x) else x


class _Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, s: str | None) -> int:
        if s is None:
            return _NO
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.index)
        return i


def encode_chunk(scrapes: Sequence[Scrape], health: Sequence[HealthRecord], *, codec: str = DEFAULT_CODEC,
                 level: int | None = None) -> bytes:
    """The chunk as bytes: a codec byte, then the compressed payload. ``level``: zlib's (default 9)."""
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; expected one of {', '.join(CODECS)}")
    layouts: dict[bytes, int] = {}
    layout_arrays: list[array] = []
    groups: list[list[int]] = []
    for i, s in enumerate(scrapes):
        key = s.series.tobytes()
        k = layouts.get(key)
        if k is None:
            k = layouts[key] = len(layout_arrays)
            layout_arrays.append(s.series)
            groups.append([])
        groups[k].append(i)
    parts: list[bytes] = []
    for k, members in enumerate(groups):  # per layout: position-major (each series' values side by side)
        width = len(layout_arrays[k])
        rows = array("d")
        for i in members:
            if len(scrapes[i].values) != width:
                raise ValueError("a scrape needs one value per series id")
            rows.extend(scrapes[i].values)
        parts.extend(_le(rows[p::width]) for p in range(width))
    values = _shuffle(b"".join(parts))
    own = [s for s in scrapes if s.timestamps is not None]
    strings = _Strings()
    h = health
    out = [
        _HEAD.pack(_MAGIC, len(scrapes), len(layout_arrays), len(h), 0),
        b"".join(struct.pack("<I", len(a)) + _le(array("I", a)) for a in layout_arrays),
        _le(array("d", (s.stamp for s in scrapes))),
        _le(array("d", (s.stored_at for s in scrapes))),
        _le(array("I", (layouts[s.series.tobytes()] for s in scrapes))),
        bytes(1 if s.timestamps is not None else 0 for s in scrapes),
        struct.pack("<I", len(values)), values,
        b"".join(_le(array("d", s.timestamps)) for s in own if s.timestamps is not None),
        _le(array("d", (r.at for r in h))),
        bytes(2 if r.health.up is None else int(r.health.up) for r in h),
        _le(array("d", (_opt(r.health.last_scrape) for r in h))),
        _le(array("d", (_opt(r.health.last_success) for r in h))),
        _le(array("d", (_opt(r.health.scrape_seconds) for r in h))),
        _le(array("q", (r.health.samples for r in h))),
        _le(array("q", (r.health.series for r in h))),
        _le(array("q", (r.health.dropped_series for r in h))),
        _le(array("i", (strings(r.health.error) for r in h))),
        _le(array("i", (strings(r.health.role) for r in h))),
        _le(array("i", (strings(r.health.url) for r in h))),
        _le(array("i", (strings(r.health.name) for r in h))),
        _le(array("i", (strings(_extra(r.health)) for r in h))),
    ]
    table = b"".join(struct.pack("<I", len(b)) + b for b in (s.encode() for s in strings.index))
    out[0] = _HEAD.pack(_MAGIC, len(scrapes), len(layout_arrays), len(h), len(strings.index))
    payload = b"".join(out) + table
    if codec == "zlib":
        payload = zlib.compress(payload, 9 if level is None else level)
    elif codec == "lzma":
        payload = lzma.compress(payload, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)
    return bytes([CODECS.index(codec)]) + payload


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise CodecError("chunk is truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def arr(self, typecode: str, n: int) -> array:
        return _from(typecode, self.take(n * array(typecode).itemsize))


def _decompress(blob: bytes) -> bytes:
    if not blob:
        raise CodecError("empty chunk")
    codec, payload = blob[0], blob[1:]
    try:
        if codec == 0:
            return bytes(payload)
        if codec == 1:
            return zlib.decompress(payload)
        if codec == 2:
            return lzma.decompress(payload, format=lzma.FORMAT_RAW, filters=_LZMA_FILTERS)
    except (zlib.error, lzma.LZMAError) as exc:
        raise CodecError(f"chunk does not decompress: {exc}") from None
    raise CodecError(f"unknown codec {codec} (a newer ptmon wrote this file?)")


def decode_chunk(blob: bytes) -> Chunk:
    """The scrapes and health records ``encode_chunk`` wrote, bit for bit."""
    r = _Reader(_decompress(blob))
    magic, n, n_layouts, n_health, n_strings = _HEAD.unpack(r.take(_HEAD.size))
    if magic != _MAGIC:
        raise CodecError("not a ptmon chunk")
    layouts = [r.arr("I", r.u32()) for _ in range(n_layouts)]
    stamps, stored, which = r.arr("d", n), r.arr("d", n), r.arr("I", n)
    own_flags = bytes(r.take(n))
    values = _from("d", _unshuffle(r.take(r.u32())))
    members: list[list[int]] = [[] for _ in layouts]
    for i, k in enumerate(which):
        if k >= n_layouts:
            raise CodecError("chunk refers to a missing layout")
        members[k].append(i)
    per_scrape: list[array] = [array("d")] * n
    offset = 0
    for k, group in enumerate(members):
        width, m = len(layouts[k]), len(group)
        block = values[offset:offset + width * m]
        offset += width * m
        if len(block) != width * m:
            raise CodecError("chunk holds fewer values than its scrapes need")
        for j, i in enumerate(group):
            per_scrape[i] = block[j::m] if m > 1 else block
    scrapes = []
    for i in range(n):
        ts = r.arr("d", len(layouts[which[i]])) if own_flags[i] else None
        scrapes.append(Scrape(stamp=stamps[i], stored_at=stored[i], series=layouts[which[i]],
                              values=per_scrape[i], timestamps=ts))
    h = n_health
    at, up = r.arr("d", h), bytes(r.take(h))
    last_scrape, last_success, seconds = r.arr("d", h), r.arr("d", h), r.arr("d", h)
    samples, series, dropped = r.arr("q", h), r.arr("q", h), r.arr("q", h)
    error, role, url, name = r.arr("i", h), r.arr("i", h), r.arr("i", h), r.arr("i", h)
    extra = r.arr("i", h)
    strings = [bytes(r.take(r.u32())).decode() for _ in range(n_strings)]

    def s(i: int) -> str | None:
        return None if i == _NO else strings[i]

    health = tuple(HealthRecord(at=at[i], health=TargetHealth(
        name=s(name[i]) or "", url=s(url[i]) or "", role=s(role[i]), up=None if up[i] == 2 else bool(up[i]),
        last_scrape=_unopt(last_scrape[i]), last_success=_unopt(last_success[i]),
        scrape_seconds=_unopt(seconds[i]), samples=samples[i], series=series[i], dropped_series=dropped[i],
        error=s(error[i]), **_unextra(s(extra[i])))) for i in range(h))
    return Chunk(scrapes=tuple(scrapes), health=health)
