"""Bounded in-memory time series: one ring buffer per (target, series).

Memory is bounded whatever a target sends: each series keeps at most
``capacity`` points and each target at most ``max_series`` series; series
beyond the cap are dropped and counted, so the target's health can say so.
When a target is full, series it has not sent for ``capacity`` scrapes are
forgotten to make room (label churn must not lock new series out forever).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter
from types import MappingProxyType

from ptmon.monitor.parse import Labels, Sample

__all__ = ["Store", "Series", "IngestResult", "SeriesKey", "DEFAULT_CAPACITY", "DEFAULT_MAX_SERIES"]

DEFAULT_CAPACITY = 3600  # one hour at one scrape per second
DEFAULT_MAX_SERIES = 20_000

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]

_time = itemgetter(0)


def series_key(name: str, labels: Mapping[str, str]) -> SeriesKey:
    return (name, tuple(sorted(labels.items())))


class Series:
    """A ring buffer of (timestamp, value) points, oldest first."""

    __slots__ = ("name", "labels", "_points")

    def __init__(self, name: str, labels: Mapping[str, str], *, capacity: int) -> None:
        self.name = name
        self.labels: Mapping[str, str] = MappingProxyType(dict(labels))
        self._points: deque[tuple[float, float]] = deque(maxlen=capacity)

    def append(self, timestamp: float, value: float) -> bool:
        """Append a point newer than the last; refuse (return False) one that is not.

        Time must strictly increase within a series: a repeated or backwards
        timestamp (an exporter pinning its own timestamps, a series listed twice
        in one exposition) would otherwise make rate() divide by zero and break
        the newest-first scan in ``points``. Prometheus drops those samples too.
        """
        pts = self._points
        if pts and timestamp <= pts[-1][0]:
            return False
        pts.append((timestamp, value))
        return True

    def last(self) -> tuple[float, float] | None:
        return self._points[-1] if self._points else None

    def points(self, start: float | None = None, end: float | None = None) -> list[tuple[float, float]]:
        """Points with ``start <= t <= end``, oldest first.

        Times strictly increase (``append`` refuses the rest), so both ends are
        found by bisection and only the points in range are copied, at C speed
        and from the newest end: the last five minutes of an hour-long buffer
        cost five minutes, which is what a dashboard rebuilt every second needs.
        """
        pts = self._points
        n = len(pts)
        lo = 0 if start is None else bisect_left(pts, start, key=_time)
        hi = n if end is None else bisect_right(pts, end, key=_time)
        if lo >= hi:
            return []
        if hi == n:
            out = list(islice(reversed(pts), n - lo))
            out.reverse()
            return out
        return list(islice(pts, lo, hi))

    def __len__(self) -> int:
        return len(self._points)

    def __repr__(self) -> str:
        return f"Series({self.name!r}, {dict(self.labels)!r}, {len(self._points)} points)"


@dataclass(slots=True)
class IngestResult:
    accepted: int = 0  # points stored (a repeated or older timestamp is not stored)
    dropped_series: int = 0


@dataclass(slots=True)
class _TargetData:
    series: dict[SeriesKey, Series] = field(default_factory=dict)
    by_name: dict[str, list[Series]] = field(default_factory=dict)
    scrapes: deque[float] = field(default_factory=deque)
    dropped_series: int = 0
    # id(Labels) -> (labels, name, series or None when dropped): the fast path of ingest.
    known: dict[int, tuple[Mapping[str, str], str, Series | None]] = field(default_factory=dict)


class Store:
    """Per-target series store. Not thread-safe: one event loop owns it."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, max_series: int = DEFAULT_MAX_SERIES) -> None:
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2 points, got {capacity}")
        if max_series < 1:
            raise ValueError(f"max_series must be at least 1, got {max_series}")
        self.capacity = capacity
        self.max_series = max_series
        self._targets: dict[str, _TargetData] = {}

    def ingest(self, target: str, timestamp: float, samples: Iterable[Sample]) -> IngestResult:
        """Append one scrape's samples at ``timestamp`` (a sample's own timestamp wins)."""
        data = self._targets.get(target)
        if data is None:
            data = self._targets[target] = _TargetData(scrapes=deque(maxlen=self.capacity))
        data.scrapes.append(timestamp)
        result = IngestResult()
        table = data.series
        # The parser hands out the same read-only Labels object for a series on
        # every scrape, so the series is found by identity (one dict lookup and
        # an ``is``) instead of sorting its labels into a key each time: that
        # sort was most of the cost of a steady-state scrape.
        known = data.known
        known_get = known.get
        accepted = dropped = 0
        evicted = False
        for s in samples:
            labels = s.labels
            hit = known_get(id(labels))
            if hit is not None and hit[0] is labels and hit[1] == s.name:
                series = hit[2]
            else:
                key = (s.name, tuple(sorted(labels.items())))
                series = table.get(key)
                if series is None and len(table) >= self.max_series and not evicted:
                    evicted = True  # at most one sweep per scrape
                    if self._evict_stale(data):
                        known.clear()  # it may point at evicted series or remember "dropped"
                if series is None and len(table) < self.max_series:
                    series = table[key] = Series(s.name, labels, capacity=self.capacity)
                    data.by_name.setdefault(s.name, []).append(series)
                if type(labels) is Labels:  # immutable: safe to remember by identity
                    known[id(labels)] = (labels, s.name, series)  # holding it keeps the id unique
            if series is None:  # over the series cap
                dropped += 1
            elif series.append(timestamp if s.timestamp is None else s.timestamp, s.value):
                accepted += 1
        if len(known) > max(4 * self.max_series, 2 * (accepted + dropped)):
            # Series churn: start afresh. Like the parser's own cache this follows
            # the size of a scrape, itself bounded by the scraper's body cap; a
            # flooding target's dropped series stay cheap to drop again.
            known.clear()
        result.accepted, result.dropped_series = accepted, dropped
        data.dropped_series += dropped
        return result

    def _evict_stale(self, data: _TargetData) -> int:
        """Forget series with no point in the target's last ``capacity`` scrapes.

        Without this a target whose label values churn (restarted workers, new
        engine ids) would fill the cap with series that will never come back
        and have every new one dropped forever. Only a full target is swept,
        and only series entirely older than the oldest scrape still held, so
        nothing inside the stored horizon is lost.
        """
        if len(data.scrapes) < self.capacity:
            return 0
        horizon = data.scrapes[0]
        stale = [key for key, series in data.series.items() if (series.last() or (horizon, 0.0))[0] < horizon]
        if not stale:
            return 0
        for key in stale:
            series = data.series.pop(key)
            same_name = data.by_name[series.name]
            same_name.remove(series)
            if not same_name:
                del data.by_name[series.name]
        return len(stale)

    def targets(self) -> list[str]:
        return list(self._targets)

    def series(self, target: str, name: str) -> list[Series]:
        """Every series of ``target`` whose sample name is exactly ``name``."""
        data = self._targets.get(target)
        if data is None:
            return []
        return list(data.by_name.get(name, ()))

    def names(self, target: str) -> Iterator[str]:
        data = self._targets.get(target)
        return iter(data.by_name) if data is not None else iter(())

    def scrape_times(self, target: str) -> list[float]:
        data = self._targets.get(target)
        return list(data.scrapes) if data is not None else []

    def series_count(self, target: str) -> int:
        data = self._targets.get(target)
        return len(data.series) if data is not None else 0

    def dropped_series(self, target: str) -> int:
        data = self._targets.get(target)
        return data.dropped_series if data is not None else 0
