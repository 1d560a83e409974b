"""run_start reads each creation-time series' ends (``Series.finite_ends``) in every build."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptmon.monitor import _chunk
from ptmon.monitor.parse import Sample
from ptmon.monitor.store import Series, Store

_VALUES = st.lists(st.one_of(st.floats(1e9, 2e9), st.just(math.nan), st.just(math.inf)), max_size=40)


@given(_VALUES, st.integers(2, 30), st.integers(1, 8), st.integers(1, 6))
def test_finite_ends_are_the_spans_ends(values: list[float], capacity: int, hot: int, chunk: int) -> None:
    s = Series("posttrain_rollouts_created", {}, capacity=capacity, hot=hot, chunk=chunk)
    for i, v in enumerate(values):
        s.append(1000.0 + i, v)
    sp = Series.span(s)
    assert s.finite_ends() == (None if sp is None else (sp.first_v, sp.last_v))


def test_finite_ends_decode_at_most_the_first_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """An hour of a creation time, frozen in chunks, costs two point reads a build, not the hour decoded."""
    s = Series("posttrain_rollouts_created", {}, capacity=3600, hot=60, chunk=60)
    for i in range(3600):
        s.append(1000.0 + i, 1.7e9)
    decoded: list[bytes] = []
    real = _chunk.decode

    def counting(blob: bytes) -> object:
        decoded.append(blob)
        return real(blob)

    monkeypatch.setattr(_chunk, "decode", counting)
    assert s.finite_ends() == (1.7e9, 1.7e9)
    assert len(decoded) <= 1


def test_a_latest_only_series_has_its_one_value_as_both_ends() -> None:
    store = Store(keep=lambda name: False)
    store.ingest("t", 10.0, [])
    store.ingest("t", 11.0, [Sample("posttrain_rollouts_created", {}, 1.7e9)])
    store.ingest("t", 12.0, [Sample("x_created", {}, math.nan)])
    (created,) = store.series("t", "posttrain_rollouts_created")
    (nan,) = store.series("t", "x_created")
    assert type(created) is not Series  # the history was not kept
    assert created.finite_ends() == (1.7e9, 1.7e9)
    assert nan.finite_ends() is None
