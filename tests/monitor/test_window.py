"""window.rate_slot_sets: several slot grids in one pass give each grid's own rate_slots, exactly."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ptmon.monitor.store import Series
from ptmon.monitor.window import Window, rate_slot_sets, rate_slots

T0 = 1000.0


def _series(rows: list[list[float]], gaps: set[int], n: int, late: int = 0) -> list[Series]:
    """One target's series, sharing scrape times except where one is ``gaps`` apart; the last series
    starts ``late`` scrapes after the others (a series that appeared later: a window's points then sit
    at another offset in its columns)."""
    out = []
    for r, deltas in enumerate(rows):
        s = Series("posttrain_rollouts_total", {"env": str(r)}, capacity=4 * n)
        v = 0.0
        for i in range(n):
            d = deltas[i % len(deltas)]
            v = v + d if d >= 0 else -d  # a negative delta: a restart to that value
            if i in gaps or (r == len(rows) - 1 and i < late) or (r % 2 and i + r in gaps):
                continue
            s.append(T0 + i, math.nan if d == 99 else v)
        out.append(s)
    return out


_DELTAS = st.lists(st.one_of(st.floats(0, 50), st.floats(-5, -0.5), st.just(99.0)), min_size=1, max_size=7)


@given(st.lists(st.lists(_DELTAS, min_size=1, max_size=4), min_size=1, max_size=3),
       st.sets(st.integers(0, 120), max_size=10), st.integers(2, 120), st.integers(0, 60),
       st.floats(1, 60), st.floats(1, 60), st.floats(2, 20), st.floats(2, 20))
def test_two_grids_in_one_pass_are_each_grids_own_slots(targets, gaps, n, late, w1, w2, step1, step2) -> None:
    per_target = [_series(rows, gaps, n, late) for rows in targets]
    end = T0 + n - 1
    specs = ((end - w1, end, step1), (end - w2, end - w2 / 3, step2))
    together = rate_slot_sets(per_target, specs)
    apart = [rate_slots(per_target, Window(a, b), step) for a, b, step in specs]
    assert _same(together, apart)


def test_the_slots_of_a_steady_counter() -> None:
    """Two targets at 2/s and 3/s in 5-second slots: 5/s in every slot, one point per slot end."""
    a = Series("posttrain_rollouts_total", {}, capacity=100)
    b = Series("posttrain_rollouts_total", {}, capacity=100)
    for i in range(31):
        a.append(T0 + i, 2.0 * i)
        b.append(T0 + i, 3.0 * i)
    chart, med = rate_slot_sets([[a], [b]], ((T0 + 10, T0 + 30, 5.0), (T0, T0 + 30, 10.0)))
    assert chart == [(T0 + 15, 5.0), (T0 + 20, 5.0), (T0 + 25, 5.0), (T0 + 30, 5.0)]
    assert med == [(T0 + 10, 5.0), (T0 + 20, 5.0), (T0 + 30, 5.0)]


def _same(x: list[list[tuple[float, float]]], y: list[list[tuple[float, float]]]) -> bool:
    """Equal, NaN equal to NaN (a NaN point's slot is NaN on both sides)."""
    return len(x) == len(y) and all(
        len(p) == len(q) and all(a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))
                                 for a, b in zip(p, q, strict=True)) for p, q in zip(x, y, strict=True))

