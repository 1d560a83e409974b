"""targets.run_start's reads: the ends a span would give, without building a gauge a reset index."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ptmon.monitor.store import Series
from ptmon.monitor.targets import _finite_ends

_VALUES = st.lists(st.one_of(st.floats(1e9, 2e9), st.just(math.nan), st.just(math.inf)), max_size=40)


@given(_VALUES, st.integers(2, 30))
def test_finite_ends_are_the_spans_ends(values: list[float], capacity: int) -> None:
    s = Series("posttrain_rollouts_created", {}, capacity=capacity)
    for i, v in enumerate(values):
        s.append(1000.0 + i, v)
    ends = _finite_ends(s)
    sp = Series.span(s)
    assert ends == (() if sp is None else (sp.first_v, sp.last_v))

