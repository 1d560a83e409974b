"""slots: several slot grids in one pass give each grid's own rate_slots, exactly; a SlotMemo changes no number."""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ptmon.monitor.slots import SlotMemo, rate_slot_sets, rate_slots, slot_bounds
from ptmon.monitor.store import Series
from ptmon.monitor.window import Window

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


def test_slots_are_aligned_to_their_step_with_a_part_slot_at_each_end() -> None:
    assert slot_bounds(1001.3, 1011.3, 2.5) == [1001.3, 1002.5, 1005.0, 1007.5, 1010.0, 1011.3]
    assert slot_bounds(1000.0, 1010.0, 5.0) == [1000.0, 1005.0, 1010.0]
    assert slot_bounds(1000.5, 1001.5, 5.0) == [1000.5, 1001.5]


@given(st.lists(st.lists(_DELTAS, min_size=1, max_size=4), min_size=1, max_size=3),
       st.sets(st.integers(0, 200), max_size=12), st.integers(0, 90), st.floats(5, 60), st.floats(2, 12),
       st.lists(st.tuples(st.integers(0, 4), st.floats(0, 0.99), st.floats(0, 2.5)), min_size=2, max_size=24),
       st.integers(0, 23))
# Found by a search with the memo's rules broken: a slot cached before its upper bound's scrapes were all
# stored (a scrape stored after the build that could not see it), and one whose lower bound's scrape left
# the window (a gap at the window's start).
@example([[[1.0, 2.0]]], set(), 0, 20.0, 3.0, [(1, 0.3, 2.0)] * 10, 23)
@example([[[1.0, 2.0]]], {161, 75, 47, 85, 182, 30, 184, 185, 190, 25}, 0, 32.5, 11.67,
         [(4, 0.83, 1.68), (2, 0.28, 2.43), (3, 0.85, 1.26), (4, 0.85, 1.2), (3, 0.41, 0.43), (4, 0.88, 1.94),
          (2, 0.09, 1.66), (0, 0.78, 1.3), (3, 0.37, 1.83), (3, 0.04, 1.76), (4, 0.59, 0.98), (1, 0.17, 0.57)], 23)
@settings(max_examples=300)
def test_a_memo_kept_across_builds_changes_no_number(targets, gaps, late, window, step, moves, swap) -> None:
    """Builds as the TUI makes them: the window slides (by a part of a step too), a scrape taken before a
    build is stored after it (``lag``), series come late, skip scrapes, restart and go NaN, and one build
    sees a target's series replaced by new objects; every build with the memo equals it without one."""
    n = 220
    full = [_series(rows, gaps, n, late) for rows in targets]
    live = [[Series(s.name, dict(s.labels), capacity=4 * n) for s in group] for group in full]
    memo = SlotMemo()
    stored = T0 - 1
    end = T0 + 70.0
    for b, (advance, fraction, lag) in enumerate(moves):
        end += advance + fraction
        upto = max(stored, end - lag)  # the scrapes taken since ``upto`` are not stored yet
        for src, dst in zip(full, live, strict=True):
            for s, d in zip(src, dst, strict=True):
                for t, v in s.points(stored, upto):
                    d.append(t, v)
        stored = upto
        if b == swap:  # the store forgot a target's series and made them again: new objects, same points
            live[0] = [_copy(s) for s in live[0]]
        specs = ((end - window, end, step), (end - 2 * window, end, 2 * step))
        with_memo = rate_slot_sets(live, specs, memo=memo)
        assert _same(with_memo, rate_slot_sets(live, specs))


def test_a_memo_computes_only_the_slots_that_moved() -> None:
    """A steady fleet built once a second, from its first scrapes (most of the window before them) to
    full windows: after the first build, each build computes the first slot with data and the newest one
    or two per target, not all 182 of the chart and the median."""
    fleet = [[Series("posttrain_rollouts_total", {"env": e}, capacity=2000) for e in "ab"] for _ in range(3)]
    memo = SlotMemo()
    counts = []
    for i in range(700):
        for group in fleet:
            for k, s in enumerate(group):
                s.append(T0 + i, (k + 1.0) * i)
        if i >= 20:
            end = T0 + i + 0.3
            chart, med = rate_slot_sets(fleet, ((end - 300, end, 2.5), (end - 600, end, 10.0)), memo=memo)
            assert chart[-1][1] == med[-1][1] == 9.0 and chart[-1][0] > end - 2.5 and med[-1][0] > end - 2.5
            counts.append(memo.computed)
    assert counts[0] >= 3 * len(chart + med) // 20  # the first build: every slot with data
    assert max(counts[1:]) <= 3 * 8, counts


def _copy(s: Series) -> Series:
    c = Series(s.name, dict(s.labels), capacity=s._cap)
    for t, v in s.points():
        c.append(t, v)
    return c


def _same(x: list[list[tuple[float, float]]], y: list[list[tuple[float, float]]]) -> bool:
    """Equal, NaN equal to NaN (a NaN point's slot is NaN on both sides)."""
    return len(x) == len(y) and all(
        len(p) == len(q) and all(a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))
                                 for a, b in zip(p, q, strict=True)) for p, q in zip(x, y, strict=True))

