"""Chunks: what goes in comes out bit for bit; a damaged chunk is an error, never wrong numbers."""

from __future__ import annotations

import math
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.recording.codec import CODECS, CodecError, HealthRecord, Scrape, decode_chunk, encode_chunk


def _bits(a: array) -> bytes:
    return a.tobytes()


def _same(a: Scrape, b: Scrape) -> None:
    assert (a.stamp, a.stored_at) == (b.stamp, b.stored_at)
    assert list(a.series) == list(b.series)
    assert _bits(array("d", a.values)) == _bits(array("d", b.values))  # NaN, -0.0 and inf included
    if a.timestamps is None:
        assert b.timestamps is None
    else:
        assert b.timestamps is not None and _bits(array("d", a.timestamps)) == _bits(array("d", b.timestamps))


def _health(at: float, **kw) -> HealthRecord:
    return HealthRecord(at=at, health=TargetHealth(name="w", url="http://h:1/metrics", role=None, up=None, **kw))


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_layouts_own_timestamps_and_health(codec):
    scrapes = [
        Scrape(10.0, 10.01, array("I", [1, 2, 3]), array("d", [1.0, 2.5, math.nan])),
        Scrape(11.0, 11.01, array("I", [1, 2, 3]), array("d", [2.0, -0.0, math.inf])),
        Scrape(12.0, 12.02, array("I", [1, 4]), array("d", [3.0, 7.0])),  # a new layout: series 4 appeared
        Scrape(13.0, 13.0, array("I", [5, 5]), array("d", [1.0, 2.0]), array("d", [12.5, math.nan])),
        Scrape(14.0, 14.0, array("I", []), array("d", [])),
    ]
    health = [_health(10.01, last_scrape=10.01, samples=3, series=3),
              _health(12.5, last_scrape=12.5, error="connection refused: \x1b[31m[b]x[/b]", scrape_seconds=0.2),
              HealthRecord(at=13.0, health=TargetHealth(name="w", url="u", role="rollout", up=True,
                                                        last_scrape=13.0, last_success=13.0, dropped_series=2))]
    chunk = decode_chunk(encode_chunk(scrapes, health, codec=codec))
    assert len(chunk.scrapes) == len(scrapes)
    for a, b in zip(scrapes, chunk.scrapes, strict=True):
        _same(a, b)
    assert chunk.health == tuple(health)


def test_every_health_field_comes_back_also_ones_added_later():
    """A field TargetHealth gains (``recognised`` came after the codec) round-trips without a codec change."""
    from dataclasses import fields

    values = {"name": "w", "url": "http://w/metrics", "role": "rollout", "up": False, "last_scrape": 1.5,
              "last_success": 0.5, "scrape_seconds": 0.25, "samples": 7, "series": 9, "dropped_series": 2,
              "error": "boom"}
    odd = {f.name: (not f.default if isinstance(f.default, bool) or f.default is None else f.default)
           for f in fields(TargetHealth) if f.name not in values}
    assert odd, "no field beyond the columns: the generic path is untested"
    h = TargetHealth(**values, **odd)
    (back,) = decode_chunk(encode_chunk([], [HealthRecord(at=1.0, health=h)])).health
    assert back.health == h


def test_damaged_or_foreign_chunks_are_errors():
    blob = encode_chunk([Scrape(1.0, 1.0, array("I", [1]), array("d", [1.0]))], [], codec="zlib")
    with pytest.raises(CodecError, match="decompress"):
        decode_chunk(blob[:-3])
    with pytest.raises(CodecError, match="unknown codec"):
        decode_chunk(b"\x09" + blob[1:])
    with pytest.raises(CodecError, match="truncated"):
        decode_chunk(encode_chunk([Scrape(1.0, 1.0, array("I", [1]), array("d", [1.0]))], [], codec="none")[:-4])
    with pytest.raises(CodecError, match="not a ptmon chunk"):
        decode_chunk(b"\x00" + b"XXXX" + bytes(16))
    with pytest.raises(ValueError, match="one value per series"):
        encode_chunk([Scrape(1.0, 1.0, array("I", [1, 2]), array("d", [1.0]))], [])


values = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def scrape_lists(draw):
    layouts = draw(st.lists(st.lists(st.integers(1, 50), max_size=8), min_size=1, max_size=3))
    out = []
    t = 0.0
    for _ in range(draw(st.integers(0, 12))):
        ids = draw(st.sampled_from(layouts))
        t += draw(st.floats(0.001, 10.0))
        own = draw(st.booleans())
        vals = array("d", draw(st.lists(values, min_size=len(ids), max_size=len(ids))))
        ts = array("d", draw(st.lists(values, min_size=len(ids), max_size=len(ids)))) if own else None
        out.append(Scrape(t, t + 0.01, array("I", ids), vals, ts))
    return out


@settings(max_examples=60, deadline=None)
@given(scrape_lists(), st.sampled_from(CODECS))
def test_round_trip_property(scrapes, codec):
    chunk = decode_chunk(encode_chunk(scrapes, [], codec=codec))
    for a, b in zip(scrapes, chunk.scrapes, strict=True):
        _same(a, b)
