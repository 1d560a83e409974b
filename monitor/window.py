"""One build's view of a window ``(start, end]`` over the store: each series read once, in a few bisections.

Cost: independent of the window's length for almost every number. Rates,
increases and counts come from each series' ``Span`` (a few bisections and
the store's incremental counter-reset index); the rate chart's slots are
``ptmon.monitor.slots``'s. Only the numbers that need every point (the
trainer's per-sync series) read the window point by point, and each series
at most once per build. tests/bench/bench_build.py measures it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ptmon.monitor.derive import in_window, span_rate, span_raw_increase
from ptmon.monitor.store import Series, Span, Store

__all__ = ["Window", "series_of", "sum_known", "finite"]

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
        return self.span(series) if begin <= self.start else self._span_from(series, begin)

    def _span_from(self, series: Series, begin: float) -> Span | None:
        """The series' ``Span`` over ``(begin, end]``, ``begin`` inside the window (memoised)."""
        key = (id(series), begin)
        sp = self._rate_spans.get(key, _MISSING)
        if sp is _MISSING:
            sp = self._rate_spans[key] = series.span(begin, self.end)
        return sp  # type: ignore[return-value]

    def rate_sum(self, target: str, series: Iterable[Series]) -> float | None:
        """Σ PromQL rate over ``target``'s series; None when none has two points in the window."""
        total: float | None = None
        begin, end = self.range_start(target), self.end
        # rate_span's choice made once for the target, not once a series (this is most of a build's rates).
        spans = map(self.span, series) if begin <= self.start else (self._span_from(s, begin) for s in series)
        for sp in spans:
            r = span_rate(sp, start=begin, end=end)
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
