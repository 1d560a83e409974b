"""Old points frozen into compact chunks (monitor/_chunk.py): bit-exact, and invisible to every reader."""

from __future__ import annotations

import math
import struct
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from ptmon.monitor import _chunk
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.store import Series, Store
from tests.monitor.test_store import _bytes_per_point

_ANY_BITS = st.integers(min_value=0, max_value=(1 << 64) - 1).map(
    lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0])  # every NaN payload, -0.0, subnormals
_VALUES = st.one_of(_ANY_BITS, st.floats(), st.integers(-(1 << 60), 1 << 60).map(float),
                    st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 2.0 ** 53, 1e300, 5e-324]))


def _bits(values: array[float]) -> bytes:
    return values.tobytes()


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, min_size=1, max_size=300))
def test_a_chunk_decodes_to_the_same_bits_whatever_its_floats(values: list[float]) -> None:
    raw = array("d", values)
    assert _bits(_chunk.decode(_chunk.encode(raw))) == _bits(raw)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(1 << 52), 1 << 52), min_size=1, max_size=300))
def test_integer_chunks_round_trip_including_resets(ints: list[int]) -> None:
    raw = array("d", ints)
    assert _bits(_chunk.decode(_chunk.encode(raw))) == _bits(raw)


def test_a_still_counter_a_repeating_gauge_and_an_integer_counter_take_a_few_bits_a_point() -> None:
    for values in ([7.0] * 200, [0.3] * 200, [1e6 + 3 * i for i in range(200)],
                   [1e6 + (i * 7919) % 37 + 40 * i for i in range(200)]):
        assert len(_chunk.encode(array("d", values))) / 200 < 1.1, values[:3]


def _both(values: list[float], *, capacity: int, hot: int, chunk: int) -> tuple[Series, Series]:
    frozen = Series("m", {}, capacity=capacity, hot=hot, chunk=chunk)
    plain = Series("m", {}, capacity=capacity, hot=capacity)
    for t, v in enumerate(values):
        assert frozen.append(float(t), v) == plain.append(float(t), v)
    return frozen, plain


def _same_reads(frozen: Series, plain: Series, n: int) -> None:
    assert len(frozen) == len(plain)
    assert repr(frozen.last()) == repr(plain.last())
    assert repr(frozen.points()) == repr(plain.points())
    for start, end in [(None, None), (-1.0, n / 3), (n / 4, n / 2), (n / 2 - 0.5, n + 1.0), (n - 3.0, None),
                       (1.0, 2.0), (n * 0.1, n * 0.9)]:
        ft, fv = frozen.columns(start, end)
        pt, pv = plain.columns(start, end)
        assert (ft, _bits(fv)) == (pt, _bits(pv))
        assert repr(frozen.span(start, end)) == repr(plain.span(start, end))
        assert frozen.drop_times(start, end) == plain.drop_times(start, end)
        assert repr(frozen.points(start, end)) == repr(plain.points(start, end))
    for t in (0.0, 1.0, n / 2, n - 1.0, n + 5.0, 0.5):
        assert repr(frozen.value_at(t)) == repr(plain.value_at(t))
    assert frozen.carried == plain.carried


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(_VALUES, st.integers(0, 50).map(float)), min_size=1, max_size=260),
       st.integers(1, 12), st.integers(1, 40), st.integers(2, 300), st.booleans())
def test_every_reader_sees_the_same_points_across_chunk_boundaries(values: list[float], chunk: int, hot: int,
                                                                  capacity: int, span_early: bool) -> None:
    frozen, plain = _both(values[: len(values) // 2] if span_early else values, capacity=capacity, hot=hot,
                          chunk=chunk)
    if span_early:  # the reset index built before points are frozen, then brought up to date after
        assert repr(frozen.span()) == repr(plain.span())
        for t, v in enumerate(values[len(values) // 2:], len(values) // 2):
            frozen.append(float(t), v)
            plain.append(float(t), v)
    _same_reads(frozen, plain, len(values))


def test_a_counter_with_resets_reads_the_same_after_an_hour_through_the_store() -> None:
    """The scrape plan's path (values appended from C) freezes too, and reads match a store that freezes none."""
    labels = [Labels({"i": str(i)}) for i in range(5)]
    stores = [Store(capacity=3600, hot=660), Store(capacity=3600, hot=3600)]
    for k in range(4500):
        samples = [Sample("m", labels[i], float((k * (i + 1)) % 997), None) for i in range(5)]
        for store in stores:
            store.ingest("a", 1000.0 + k, samples)
    frozen, plain = (store.series("a", "m") for store in stores)
    assert frozen[0]._ncold > 0  # it did freeze
    for f, p in zip(frozen, plain, strict=True):
        _same_reads(f, p, 4500)
        assert repr(f.span(1000.0 + 1000, 1000.0 + 4000)) == repr(p.span(1000.0 + 1000, 1000.0 + 4000))


def test_frozen_points_take_a_fraction_of_the_plain_column() -> None:
    plain = _bytes_per_point(own_times=False)
    frozen = _bytes_per_point(own_times=False, hot=100)
    assert frozen < plain / 2, (frozen, plain)  # 100-162 points of 1,000 stay plain (hot + a chunk)


def test_hot_and_chunk_below_one_point_are_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="at least 1 point"):
        Store(hot=0)
    with pytest.raises(ValueError, match="at least 1 point"):
        Series("m", {}, capacity=10, chunk=0)


def test_a_long_window_read_every_second_decodes_nothing_again(monkeypatch: object) -> None:
    """An hour's window starts among frozen points and stays in one chunk for ``chunk`` scrapes: with a few
    hundred series read each second, the shared cache of 64 chunks turned over and every read decoded again."""
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    labels = [Labels({"i": str(i)}) for i in range(300)]
    store = Store(capacity=3600, hot=660)
    for k in range(1200):
        store.ingest("a", 1000.0 + k, [Sample("m", labels[i], float(k * (i + 1)), None) for i in range(300)])
    series = store.series("a", "m")
    assert all(s._ncold > 0 for s in series)
    decoded: list[bytes] = []
    real = _chunk.decode

    def counting(blob: bytes) -> array[float]:
        decoded.append(blob)
        return real(blob)

    monkeypatch.setattr(_chunk, "decode", counting)
    expected = [s.span(1000.0 + 100, None) for s in series]  # the first read builds each reset index
    decoded.clear()
    for _ in range(5):  # five builds over the same window, the shared cache cycled through by 300 series
        assert [s.span(1000.0 + 100, None) for s in series] == expected
    assert decoded == []  # the chunk each window starts in was kept by its series, not decoded once a read


def test_an_hours_columns_read_twice_decode_each_chunk_once() -> None:
    """A chart over an hour copies every frozen chunk of its series each second: the second build must find
    them decoded (a cache of 64 turned over within one build of a hundred series)."""
    labels = [Labels({"i": str(i)}) for i in range(100)]
    store = Store(capacity=3600, hot=660)
    for k in range(3600):
        store.ingest("a", 1000.0 + k, [Sample("m", labels[i], float(k * (i + 1)), None) for i in range(100)])
    series = store.series("a", "m")
    chunks = sum(len(s._cold) for s in series)
    assert chunks > 1000
    _chunk.decode.cache_clear()
    first = [s.columns() for s in series]
    assert [s.columns() for s in series] == first
    assert _chunk.decode.cache_info().misses == chunks  # each chunk decoded once over both reads
