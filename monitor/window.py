"""One build's view of a window ``(start, end]`` over the store: each series read once, in a few bisections.

Cost: independent of the window's length for almost every number. Rates,
increases and counts come from each series' ``Span`` (a few bisections and
the store's incremental counter-reset index); the rate chart copies one value
column per series (a memcpy) and picks its slot bounds in C. Only the numbers
that need every point (the trainer's per-sync series) read the window point
by point, and each series at most once per build. tests/bench/bench_build.py
measures it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice, repeat
from operator import add, itemgetter, sub
from typing import Any

from ptmon.monitor.dashboard import Point
from ptmon.monitor.derive import in_window, span_rate, span_raw_increase
from ptmon.monitor.steps import Steps, run_steps
from ptmon.monitor.store import Series, Span, Store

__all__ = ["Window", "series_of", "rate_slots", "rate_slot_sets", "rate_slot_steps", "sum_known", "finite"]

_MISSING = object()


def series_of(store: Store, target: str, names: Iterable[str]) -> list[Series]:
    """``target``'s series under any of ``names`` (the spellings one metric may be exposed under)."""
    out: list[Series] = []
    for name in names:
        out.extend(store.series(target, name))
    return out


def sum_known(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (unknown is not zero)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def finite(x: float | None) -> float | None:
    """``x`` if it is a finite number, else unknown (a NaN gauge, an Inf counter are nothing to show)."""
    return x if x is not None and math.isfinite(x) else None


class Window:
    """``(start, end]``, with each series' span (or, where needed, points) memoised for one build."""

    __slots__ = ("start", "end", "_memo", "_spans", "_rate_spans", "_from")

    def __init__(self, start: float, end: float, *, coverage: Mapping[str, float] | None = None) -> None:
        self.start = start
        self.end = end
        self._memo: dict[int, list[tuple[float, float]]] = {}
        self._spans: dict[int, Span | None] = {}
        self._rate_spans: dict[tuple[int, float], Span | None] = {}
        self._from = coverage or {}

    def range_start(self, target: str) -> float:
        """Where ``target``'s rates start: the window's start, or where this monitor's data on it begins.

        PromQL divides by the whole range; a monitor started 20 s ago would then
        show a third of the true rate for its first minute (and a new worker a
        fraction of its own). The range is cut to the data this monitor has.
        """
        return max(self.start, self._from.get(target, self.start))

    def pts(self, series: Series) -> list[tuple[float, float]]:
        """The series' points in the window, as a list (for the few numbers that need every point)."""
        key = id(series)
        pts = self._memo.get(key)
        if pts is None:
            pts = self._memo[key] = in_window(series, self.start, self.end)
        return pts

    def span(self, series: Series) -> Span | None:
        """The series' ``Span`` in the window: a few bisections, however long the window."""
        key = id(series)
        sp = self._spans.get(key, _MISSING)
        if sp is _MISSING:
            sp = self._spans[key] = series.span(self.start, self.end)
        return sp  # type: ignore[return-value]

    def rate_span(self, series: Series, target: str) -> Span | None:
        """The series' ``Span`` over ``target``'s rate range (``range_start`` to the end): no sample from
        before the range, such as one taken at another interval before a change of it."""
        begin = self.range_start(target)
        if begin <= self.start:
            return self.span(series)
        key = (id(series), begin)
        sp = self._rate_spans.get(key, _MISSING)
        if sp is _MISSING:
            sp = self._rate_spans[key] = series.span(begin, self.end)
        return sp  # type: ignore[return-value]

    def rate_sum(self, target: str, series: Iterable[Series]) -> float | None:
        """Σ PromQL rate over ``target``'s series; None when none has two points in the window."""
        total: float | None = None
        begin = self.range_start(target)
        for s in series:
            r = span_rate(self.rate_span(s, target), start=begin, end=self.end)
            if r is not None:
                total = r if total is None else total + r
        return total

    def raw_increase(self, series: Series) -> float | None:
        return span_raw_increase(self.span(series))

    def raw_increase_sum(self, series: Iterable[Series]) -> float | None:
        total: float | None = None
        for s in series:
            r = span_raw_increase(self.span(s))
            if r is not None:
                total = r if total is None else total + r
        return total

    def last(self, series: Series) -> float | None:
        """The latest finite value at or before ``end`` if it is newer than ``start``."""
        p = series.last()
        if p is not None and p[0] > self.end:
            sp = self.span(series)
            p = (sp.last_t, sp.last_v) if sp is not None else None
        if p is None or p[0] <= self.start or not math.isfinite(p[1]):
            return None
        return p[1]


def rate_slots(per_target: Iterable[list[Series]], w: Window, step: float) -> list[Point]:
    """The summed rate per time slot ``(start + k*step, start + (k+1)*step]``, as ``(slot end, rate)``.

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


def rate_slot_sets(per_target: Iterable[list[Series]], specs: Sequence[tuple[float, float, float]]
                   ) -> list[list[Point]]:
    """``rate_slots`` over several ``(start, end, step)`` at once (the chart and the 10-minute median): each
    series' columns are copied once for all of them, the same numbers as one ``rate_slots`` each."""
    return run_steps(rate_slot_steps(per_target, specs))


def rate_slot_steps(per_target: Iterable[list[Series]], specs: Sequence[tuple[float, float, float]]
                    ) -> Steps[list[list[Point]]]:
    """``rate_slot_sets`` in steps, one per target (``ptmon.monitor.steps``)."""
    grids = [_bounds(start, end, step) for start, end, step in specs]
    totals = [[0.0] * (len(b) - 1) for b in grids]
    seen = [[False] * (len(b) - 1) for b in grids]
    lo, hi = min(sp[0] for sp in specs), max(sp[1] for sp in specs)
    for series in per_target:
        for j, (slot_inc, slot_dt) in enumerate(_target_slots(series, lo, hi, specs, grids)):
            tot, sn = totals[j], seen[j]
            for k in range(len(tot)):
                if slot_dt[k] > 0:
                    tot[k] += slot_inc[k] / slot_dt[k]
                    sn[k] = True
        yield
    return [[(b[k + 1], tot[k]) for k in range(len(tot)) if sn[k]] for b, tot, sn in zip(grids, totals, seen,
                                                                                          strict=True)]


def _bounds(start: float, end: float, step: float) -> list[float]:
    n = max(1, math.ceil((end - start) / step - 1e-9))
    return [start + k * step for k in range(n + 1)]


class _Layout:
    """One window's slot bounds as picks into the columns of a target's series of one layout: ``rel``, the
    index of the point picked at each bound among the window's points (what ``key`` decides, as in a
    single window), and ``pick``, those indices offset by ``at`` (where the window starts in the columns
    copied, which a series with earlier points moves)."""

    __slots__ = ("key", "rel", "at", "pick", "inc", "dt")

    def __init__(self, n: int) -> None:
        self.key: tuple[int, float, float] | None = None
        self.rel: tuple[int, ...] = ()
        self.at = -1
        self.pick: itemgetter[Any] = itemgetter(0)
        self.inc = [0.0] * n
        self.dt = [0.0] * n

    def offset(self, at: int) -> itemgetter[Any]:
        if at != self.at:
            self.at = at
            self.pick = itemgetter(*map(add, self.rel, repeat(at)))
        return self.pick


def _target_slots(series: list[Series], lo: float, hi: float, specs: Sequence[tuple[float, float, float]],
                  grids: list[list[float]]) -> list[tuple[list[float], list[float]]]:
    """One target's (increase, seconds between the scrapes at its bounds) per slot, per window of ``specs``.

    Each series' columns over ``(lo, hi]`` (every window inside) are copied once; a window's points are
    the physical range ``[a, e)`` of them, so the picks are those of the window's own columns."""
    layouts = [_Layout(len(b) - 1) for b in grids]
    for s in series:
        times, values = s.columns(lo, hi)
        if len(times) < 2:
            continue
        for (start, end, _), bounds, lay in zip(specs, grids, layouts, strict=True):
            a = bisect_right(times, start) if start > lo else 0
            e = bisect_right(times, end) if end < hi else len(times)
            if e - a < 2:
                continue
            key = (e - a, times[a], times[e - 1])
            if key != lay.key:
                lay.key = key
                # The last point at or before each bound (none before: the window's first), in C for
                # every series of the layout.
                found = map(min, map(bisect_right, repeat(times), bounds), repeat(e))
                lay.rel = tuple(map(sub, map(max, map(sub, found, repeat(1)), repeat(a)), repeat(a)))
                lay.at = -1
                picked = lay.offset(a)(times)
                lay.dt = list(map(max, lay.dt, map(sub, islice(picked, 1, None), picked)))
            picked = lay.offset(a)(values)
            incs = list(map(sub, islice(picked, 1, None), picked))
            if min(incs) < 0:  # a restart: the counter went on from zero
                incs = [d if d >= 0 else v for d, v in zip(incs, islice(picked, 1, None), strict=False)]
            lay.inc = list(map(add, lay.inc, incs))
    return [(lay.inc, lay.dt) for lay in layouts]

