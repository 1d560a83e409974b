"""The rollout-rate chart and its 10-minute median: a fleet's summed rate per time slot, kept between builds.

Slots are aligned to multiples of their step (as a Grafana range query's
are), with a part slot at each end of the window so the chart still starts
at its start and reaches ``now``. Aligned, a slot that is complete is the same
number at every build while it stays in the window, so ``SlotMemo`` keeps it:
a build a second then reads the one or two newest slots of each target and
the first, where it read all ~180 (at 128 targets, half of a build).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from operator import add, gt, itemgetter, or_, sub
from typing import Any

from ptmon.monitor.dashboard import Point
from ptmon.monitor.steps import Steps, run_steps
from ptmon.monitor.store import Series
from ptmon.monitor.window import Window

__all__ = ["SlotMemo", "rate_slots", "rate_slot_sets", "rate_slot_steps", "slot_bounds"]

_Columns = tuple[Any, Any]  # a series' (times, values) over the widest window asked for


def slot_bounds(start: float, end: float, step: float) -> list[float]:
    """``start``, every multiple of ``step`` strictly inside ``(start, end)``, and ``end``: the slot bounds."""
    return [start, *(k * step for k in _multiples(start, end, step)), end]


def _multiples(start: float, end: float, step: float) -> range:
    """The k of every multiple ``k * step`` strictly inside ``(start, end)`` (the memo's slot numbering)."""
    first, last = math.floor(start / step) + 1, math.ceil(end / step) - 1
    if first * step <= start:  # the division rounded
        first += 1
    if last * step >= end:
        last -= 1
    return range(first, last + 1)


def rate_slots(per_target: Iterable[list[Series]], w: Window, step: float) -> list[Point]:
    """The summed rate per slot of ``slot_bounds(w.start, w.end, step)``, as ``(slot end, rate)``.

    Per target, each series' increase between the last scrapes at or before
    the slot's two bounds is added (a drop counts from zero, Prometheus's
    reset rule at slot granularity) and divided by the seconds between those
    scrapes; targets' rates then add up. Slots where no target had data are
    left out, not zero.

    Only the points at slot bounds are read: series of one target share
    their scrape times, so the bounds are bisected once per layout and every
    other series costs one memcpy of its value column and one C-level pick.
    """
    return rate_slot_sets(per_target, ((w.start, w.end, step),))[0]


def rate_slot_sets(per_target: Iterable[list[Series]], specs: Sequence[tuple[float, float, float]], *,
                   memo: SlotMemo | None = None) -> list[list[Point]]:
    """``rate_slots`` over several ``(start, end, step)`` at once (the chart and the 10-minute median): each
    series' columns are copied once for all of them, the same numbers as one ``rate_slots`` each."""
    return run_steps(rate_slot_steps(per_target, specs, memo=memo))


def rate_slot_steps(per_target: Iterable[list[Series]], specs: Sequence[tuple[float, float, float]], *,
                    memo: SlotMemo | None = None) -> Steps[list[list[Point]]]:
    """``rate_slot_sets`` in steps, one per target (``ptmon.monitor.steps``). ``memo``: the slots settled at
    earlier builds (the same numbers, read instead of computed); it then holds this call's targets only."""
    grids = [_Grid(start, end, step) for start, end, step in specs]
    totals = [[0.0] * g.slots for g in grids]
    seen = [[False] * g.slots for g in grids]
    lo, hi = min(sp[0] for sp in specs), max(sp[1] for sp in specs)
    if memo is not None:
        memo.begin()
    for series in per_target:
        for j, (rates, known) in enumerate(_target_rates(series, lo, hi, grids, memo)):
            totals[j] = list(map(add, totals[j], rates))
            seen[j] = list(map(or_, seen[j], known))
        yield
    if memo is not None:
        memo.end()
    return [[(g.bounds[k + 1], tot[k]) for k in range(g.slots) if sn[k]] for g, tot, sn in zip(grids, totals, seen,
                                                                                              strict=True)]


class _Grid:
    """One ``(start, end, step)``'s slot bounds; slot i (1 .. slots-2) is the aligned slot ``k0 + i - 1``."""

    __slots__ = ("start", "end", "step", "bounds", "slots", "k0")

    def __init__(self, start: float, end: float, step: float) -> None:
        self.start, self.end, self.step = start, end, step
        self.bounds = slot_bounds(start, end, step)
        self.slots = len(self.bounds) - 1
        self.k0 = _multiples(start, end, step).start


@dataclass(slots=True)
class _Run:
    """A target's settled slots ``k .. k + len(rates) - 1`` of one step: its rate in each (0.0 where it had
    no data) and whether it had data. ``series``: held, so the ids in the memo's key stay theirs."""

    series: list[Series]
    k: int
    rates: list[float]
    known: list[bool]


class SlotMemo:
    """Settled slots per target from one build to the next: what ``rate_slot_steps`` need not compute again.

    A slot is settled when its upper bound is at or before the newest point
    in the window of every series of the target (a series only ever gets
    points after its last) and its lower bound is at or after the first
    point in the window of every series (so neither bound's scrape depends
    on where the window starts). Such a slot reads the same points at every
    later build while the target's series are the same objects. Keyed by
    those series' identity and the step; a target left out of a call is
    forgotten at its end. ``computed``: slots the last call computed.
    """

    __slots__ = ("_runs", "_used", "computed")

    def __init__(self) -> None:
        self._runs: dict[tuple[float, tuple[int, ...]], _Run] = {}
        self._used: set[tuple[float, tuple[int, ...]]] = set()
        self.computed = 0

    def begin(self) -> None:
        self._used = set()
        self.computed = 0

    def end(self) -> None:
        for key in self._runs.keys() - self._used:
            del self._runs[key]

    def run(self, series: list[Series], step: float) -> _Run | None:
        """The run kept for these very series (a run holds its series, so no other object has their ids)."""
        key = (step, tuple(map(id, series)))
        self._used.add(key)
        return self._runs.get(key)

    def keep(self, series: list[Series], step: float, run: _Run) -> None:
        self._runs[(step, tuple(map(id, series)))] = run


def _target_rates(series: list[Series], lo: float, hi: float, grids: list[_Grid], memo: SlotMemo | None
                  ) -> list[tuple[list[float], list[bool]]]:
    """One target's rate and whether it had data, per slot of each grid: none in the slots before its
    first point, settled slots from ``memo``, the others from its series' columns over ``(lo, hi]``
    (copied once for every grid)."""
    cols = [s.columns(lo, hi) for s in series]
    out = []
    for g in grids:
        run = memo.run(series, g.step) if memo is not None else None
        empty, ok_lo, ok_hi = _slot_kinds(cols, g, lo, hi)
        use_lo, use_hi = _reusable(run, g, ok_lo, ok_hi)
        if use_lo >= use_hi:
            use_lo = use_hi = g.slots
        head, tail = _computed(cols, g, (empty, use_lo), (use_hi, g.slots), lo, hi)
        rates, known = [0.0] * empty + head[0], [False] * empty + head[1]
        if run is not None and use_lo < use_hi:
            at = g.k0 + use_lo - 1 - run.k
            rates = rates + run.rates[at:at + use_hi - use_lo]
            known = known + run.known[at:at + use_hi - use_lo]
        rates, known = rates + tail[0], known + tail[1]
        if memo is not None:
            memo.computed += g.slots - empty - (use_hi - use_lo)
            if ok_lo < ok_hi:
                memo.keep(series, g.step, _Run(series, g.k0 + ok_lo - 1, rates[ok_lo:ok_hi], known[ok_lo:ok_hi]))
        out.append((rates, known))
    return out


def _reusable(run: _Run | None, g: _Grid, ok_lo: int, ok_hi: int) -> tuple[int, int]:
    """The slots ``[i, j)`` of ``g`` that ``run`` holds and are settled now."""
    if run is None:
        return 0, 0
    held = run.k - g.k0 + 1  # the grid's slot of the run's first
    return max(ok_lo, held), min(ok_hi, held + len(run.rates))


def _slot_kinds(cols: list[_Columns], g: _Grid, lo: float, hi: float) -> tuple[int, int, int]:
    """``(n, i, j)``: the first ``n`` slots of ``g`` end before the target's first point in the window (no
    data: both bounds pick that point), and the aligned slots ``[i, j)`` are settled (``SlotMemo``). A
    series with fewer than two points in the window adds to no slot now, though it may have added to one
    kept from before: then no slot is settled."""
    earliest, first, last = math.inf, -math.inf, math.inf
    settled = True
    for times, _ in cols:
        a = bisect_right(times, g.start) if g.start > lo else 0
        e = bisect_right(times, g.end) if g.end < hi else len(times)
        if e - a < 2:
            settled = False
            continue
        earliest, first, last = min(earliest, times[a]), max(first, times[a]), min(last, times[e - 1])
    b = g.bounds
    empty = g.slots if earliest == math.inf else max(0, bisect_left(b, earliest) - 1)
    if not settled or earliest == math.inf:
        return empty, 0, 0
    return empty, max(1, bisect_left(b, first)), min(g.slots - 1, bisect_right(b, last) - 1)


def _computed(cols: list[_Columns], g: _Grid, head: tuple[int, int], tail: tuple[int, int], lo: float, hi: float
              ) -> tuple[tuple[list[float], list[bool]], tuple[list[float], list[bool]]]:
    """Slots ``[i, j)`` of ``g`` for each of ``head`` and ``tail`` read from the columns, in one pass over
    them (the slot between the two runs is read too, and dropped): the target's rate in each slot, and
    whether it had data."""
    (i, j), (m, n) = head, tail
    if i >= j and m >= n:
        return ([], []), ([], [])
    b = g.bounds
    bounds = b[i:j + 1] + b[m:n + 1] if i < j and m < n else b[i:j + 1] if i < j else b[m:n + 1]
    inc, dt = _slot_sums(cols, g.start, g.end, bounds, lo, hi)
    rates = [x / d if d > 0 else 0.0 for x, d in zip(inc, dt, strict=True)]
    known = list(map(gt, dt, repeat(0.0)))
    cut = max(0, j - i)
    if i < j and m < n:
        return (rates[:cut], known[:cut]), (rates[cut + 1:], known[cut + 1:])
    return ((rates, known), ([], [])) if i < j else (([], []), (rates, known))


class _Layout:
    """A window's slot bounds as picks into the columns of a target's series of one layout: ``rel``, the
    index of the point picked at each bound among the window's points (what ``key`` decides), and ``pick``,
    those indices offset by ``at`` (where the window starts in the columns copied, which a series with
    earlier points moves)."""

    __slots__ = ("key", "rel", "at", "pick")

    def __init__(self) -> None:
        self.key: tuple[int, float, float] | None = None
        self.rel: tuple[int, ...] = ()
        self.at = -1
        self.pick: itemgetter[Any] = itemgetter(0)

    def offset(self, at: int) -> itemgetter[Any]:
        if at != self.at:
            self.at = at
            self.pick = itemgetter(*map(add, self.rel, repeat(at)))
        return self.pick


def _slot_sums(cols: list[_Columns], start: float, end: float, bounds: list[float], lo: float, hi: float
               ) -> tuple[list[float], list[float]]:
    """The target's summed increase per slot of ``bounds`` in the window ``(start, end]``, and the seconds
    between the scrapes at its bounds (the longest of its layouts'). A window's points are the range
    ``[a, e)`` of the columns, so the picks are those of the window's own columns."""
    n = len(bounds) - 1
    inc, dt = [0.0] * n, [0.0] * n
    lay = _Layout()
    for times, values in cols:
        a = bisect_right(times, start) if start > lo else 0
        e = bisect_right(times, end) if end < hi else len(times)
        if e - a < 2:
            continue
        key = (e - a, times[a], times[e - 1])
        if key != lay.key:
            lay.key = key
            # The last point at or before each bound (none before: the window's first), in C for every
            # series of the layout.
            found = map(min, map(bisect_right, repeat(times), bounds), repeat(e))
            lay.rel = tuple(map(sub, map(max, map(sub, found, repeat(1)), repeat(a)), repeat(a)))
            lay.at = -1
            picked = lay.offset(a)(times)
            dt = list(map(max, dt, map(sub, islice(picked, 1, None), picked)))
        picked = lay.offset(a)(values)
        incs = list(map(sub, islice(picked, 1, None), picked))
        if any(map(gt, repeat(0.0), incs)):  # a restart: the counter went on from zero (NaN stays NaN)
            incs = [v if d < 0 else d for d, v in zip(incs, islice(picked, 1, None), strict=False)]
        inc = list(map(add, inc, incs))
    return inc, dt
