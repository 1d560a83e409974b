"""Bounded in-memory time series: one ring buffer per (target, series).

Memory is bounded whatever a target sends: each series keeps at most
``capacity`` points and each target at most ``max_series`` series, whose
label sets may take at most ``max_label_bytes`` (their text plus what Python
keeps per label and per series, see ``label_cost``); series beyond either
cap are dropped and counted, so the target's health can say so. Without the
byte budget a target churning fat label values (each under the per-value and
per-series limits) grew the monitor by gigabytes within the hour its series
are kept.
When a target is full, series it has not sent for ``capacity`` scrapes are
forgotten to make room (label churn must not lock new series out forever).

A series is an ``array('d')`` value column; its times are its target's scrape
times (``_Clock``, one column per target) while it has a point at every
scrape, else a time column of its own: 8 bytes a point (16 with its own
times) where a deque of tuples took about 100. Only the names something
downstream reads (``Store(keep=reads.is_read)``) keep their history; the
other series keep their newest point. A scrape shaped like the last is stored
by its ``_Plan``, with no Python call per sample. Counter resets are indexed per series,
lazily and incrementally, so a rate over any window is a few bisections
(``Series.span``) instead of a scan of the window.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from math import isfinite
from operator import gt, itemgetter, not_, setitem
from types import MappingProxyType
from typing import NamedTuple

from ptmon.monitor import _chunk
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.settings import DEFAULT_MAX_LABEL_BYTES, DEFAULT_MAX_SERIES

__all__ = ["Store", "Series", "Span", "IngestResult", "SeriesKey", "DEFAULT_CAPACITY", "DEFAULT_MAX_SERIES",
           "DEFAULT_MAX_LABEL_BYTES", "DEFAULT_HOT", "CHUNK", "label_cost"]

DEFAULT_CAPACITY = 3600  # one hour at one scrape per second

# A series' name and its label set, itself (``Labels`` hash and compare as the set they hold, whatever their
# order): the key is the series' one copy of its labels, where a sorted tuple of pairs was a second.
SeriesKey = tuple[str, Labels]

# Points that fell out of the window are cut off the arrays' front in batches of capacity/16:
# one memmove per batch instead of a ring's wrap-around (which would split every window in two).
_SLACK_FRACTION = 16

# Points older than the newest DEFAULT_HOT of a series are frozen CHUNK at a time into ``_chunk``'s compact
# encoding (0.1-3 B a point for counters and repeating gauges, against 8): an hour of points takes a fraction of
# the memory, while every read the Dashboard makes each second (its window, 5 minutes by default, and the
# 10-minute median) stays on the plain array. A chunk is at most a series' slack, so each cut of the front
# removes at least one whole chunk.
DEFAULT_HOT = 660
CHUNK = 200


# What one stored series costs beyond its label text, measured with tracemalloc on CPython 3.11-3.13: the
# Series object, its two arrays and slots (~1 KiB), and per label its key and value str objects and dict
# entry (~190 bytes; a series of 2,000 one-byte labels took 380 KB for 20 KB of text).
_SERIES_OVERHEAD = 1024
_LABEL_OVERHEAD = 200


def series_key(name: str, labels: Mapping[str, str]) -> SeriesKey:
    return (name, labels if type(labels) is Labels else Labels(labels))


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def label_cost(name: str, labels: Mapping[str, str]) -> int:
    """The bytes a series' name and labels take in the store, as counted against ``max_label_bytes``.

    Text alone would let many tiny labels through at 20x their text; the per-label and per-series
    overheads make the budget a bound on memory, not on characters.
    """
    text = _utf8_len(name) + sum(_utf8_len(k) + _utf8_len(v) for k, v in labels.items())
    return text + _LABEL_OVERHEAD * len(labels) + _SERIES_OVERHEAD


class Span(NamedTuple):
    """What PromQL's rate/increase need from the points of a window: count, ends and resets.

    The count is ``n``: a field named ``count`` would hide ``tuple.count``.

    ``resets`` is the sum of the values just before each drop between the
    first and the last point (a drop means the counter restarted from zero),
    summed in time order exactly as a scan of the points would. Only finite
    points count: the ends, ``n`` and the drops are those of the finite points.
    """

    n: int  # how many points
    first_t: float
    first_v: float
    last_t: float
    last_v: float
    resets: float


class _ResetIndex:
    """A series' counter resets and non-finite points, by absolute index (points ever appended).

    ``drops``: the point after each drop; ``before`` / ``before_at``: the
    value just before it and that value's index (the last finite point, which
    a NaN between can separate from the drop); ``nonfinite``: every point that
    is NaN or infinite (a staleness marker in a server's raw answer, a NaN an
    exporter sent), passed over by every comparison; ``scanned``: how far the
    index is built; ``last_finite``: the newest finite point indexed, -1 none.
    """

    __slots__ = ("drops", "before", "before_at", "nonfinite", "scanned", "last_finite")

    def __init__(self, scanned: int, last_finite: int) -> None:
        self.drops: array[int] = array("q")
        self.before: array[float] = array("d")
        self.before_at: array[int] = array("q")
        self.nonfinite: array[int] = array("q")
        self.scanned = scanned
        self.last_finite = last_finite

    def forget_before(self, base: int) -> float:
        """Drop what refers to points below ``base`` (cut off); returns the pre-reset values that left."""
        gone = bisect_left(self.before_at, base)  # drops whose earlier point is gone
        carried = 0.0
        if gone:
            carried = sum(self.before[:gone])
            del self.drops[:gone]
            del self.before[:gone]
            del self.before_at[:gone]
        del self.nonfinite[:bisect_left(self.nonfinite, base)]
        return carried

    def add_finite(self, first: int, cur: array[float], prior_value: float | None) -> None:
        """Index ``cur`` (points ``first``.., all finite) with C-level passes only: the usual case."""
        end = first + len(cur)
        if prior_value is not None:
            prev = array("d", (prior_value,))
            prev.extend(cur[:-1])
            prev_at: Iterable[int] = chain((self.last_finite,), range(first, end - 1))
            at: Iterable[int] = range(first, end)
        else:  # nothing finite before these points: the first of them has nothing to drop from
            prev, cur = cur[:-1], cur[1:]
            prev_at, at = range(first, end - 1), range(first + 1, end)
        flags = list(map(gt, prev, cur))
        self.drops.extend(compress(at, flags))
        self.before.extend(compress(prev, flags))
        self.before_at.extend(compress(prev_at, flags))
        self.last_finite = end - 1

    def add_mixed(self, first: int, cur: array[float], prior_value: float | None) -> None:
        """Index ``cur`` when some of it is not finite: each finite point against the last finite one."""
        last, prior = prior_value, self.last_finite
        for j, x in enumerate(cur, first):
            if not isfinite(x):
                self.nonfinite.append(j)
                continue
            if last is not None and last > x:
                self.drops.append(j)
                self.before.append(last)
                self.before_at.append(prior)
            last, prior = x, j
        self.last_finite = prior


class _Clock:
    """A target's scrape times, shared by each of its series that has had a point at every scrape since its first.

    Such a series (``Series._t`` None) keeps no time column of its own: its
    physical point ``i`` is at ``times[i + _s0 - base]``. Eight of the sixteen
    bytes a point cost, and one of the two appends, go. ``base`` is the absolute
    scrape index (scrapes ever timed) of ``times[0]``.
    """

    __slots__ = ("times", "base", "epoch")

    def __init__(self) -> None:
        self.times: array[float] = array("d")
        self.base = 0
        self.epoch = 0  # how many of its series stopped sharing it

    def tick(self, timestamp: float) -> int | None:
        """Time the next scrape; its absolute index, or None when ``timestamp`` is not after the last."""
        times = self.times
        if times and timestamp <= times[-1]:
            return None
        times.append(timestamp)
        return self.base + len(times) - 1


class Series:
    """The newest ``capacity`` points of one series, oldest first, as two float columns.

    Points live in ``_t[_lo:]`` / ``_v[_lo:]``; older ones are cut off the front
    in batches (``_SLACK_FRACTION``). ``_base`` is the absolute index (points ever
    appended) of physical index 0, so the drop index survives those cuts. A series
    the Store keeps in step with its target's scrapes has no ``_t``: its times are
    the target's ``_Clock``'s, from scrape ``_s0`` on (``_times``).
    """

    __slots__ = ("name", "labels", "cost", "_t", "_v", "_lo", "_base", "_cap", "_slack", "_index", "_carried",
                 "_clock", "_s0", "_cold", "_ncold", "_k", "_freeze", "_thawed", "_sorted")

    def __init__(self, name: str, labels: Mapping[str, str], *, capacity: int, cost: int = 0,
                 hot: int = DEFAULT_HOT, chunk: int = CHUNK) -> None:
        """``hot``: how many newest points stay a plain array; older ones are frozen ``chunk`` at a time
        (never when ``hot`` + a chunk reaches ``capacity``: there would be nothing old to freeze)."""
        if hot < 1 or chunk < 1:
            raise ValueError(f"hot and chunk must be at least 1 point, got {hot} and {chunk}")
        self.name = name
        # The parser's Labels cannot change: shared, not copied (the store's known-cache holds the same object).
        self.labels: Mapping[str, str] = MappingProxyType(labels if type(labels) is Labels else dict(labels))
        self.cost = cost  # label_cost, as charged to the target's budget
        self._sorted: tuple[str, tuple[tuple[str, str], ...]] | None = None  # sorted_labels' last answer
        self._t: array[float] | None = array("d")
        self._clock: _Clock | None = None
        self._s0 = 0
        self._v = array("d")
        self._lo = 0
        self._base = 0
        self._cap = capacity
        self._slack = max(1, capacity // _SLACK_FRACTION)
        # Frozen chunks: physical points [0, _ncold), ``_k`` each, then ``_v``. ``_freeze``: the length of
        # ``_v`` at which its oldest chunk is frozen (0: never).
        self._cold: list[bytes] = []
        self._ncold = 0
        self._thawed: tuple[bytes, array[float]] | None = None  # the last frozen chunk read, decoded (_thaw)
        self._k = min(chunk, self._slack)
        self._freeze = hot + self._k if hot + self._k < capacity else 0
        # Counter resets, indexed on first use (gauges never pay for it).
        self._index: _ResetIndex | None = None
        # Pre-reset values of drops cut off the front with their points: a counter's total
        # across restarts (spend) must not shrink when the restart leaves the buffer.
        self._carried = 0.0

    def sorted_labels(self, *, without: str = "") -> tuple[tuple[str, str], ...]:
        """Its label set as sorted (name, value) pairs, less the label ``without``: what groups series of
        one family across names (a histogram's ``_sum``, ``_count`` and buckets). Labels never change, so
        the last answer is kept: every build asked again for every bucket series of every target."""
        memo = self._sorted
        if memo is not None and memo[0] == without:
            return memo[1]
        labels = self.labels
        if without in labels:
            rest = dict(labels)
            del rest[without]
            items = tuple(sorted(rest.items()))
        else:
            items = tuple(sorted(labels.items()))
        self._sorted = (without, items)
        return items

    @property
    def carried(self) -> float:
        """Sum of the pre-reset values of counter drops older than the points held."""
        return self._carried

    def carry(self, amount: float) -> None:
        """Add pre-reset values of drops this series never held (a replay rebuilt from a checkpoint)."""
        self._carried += amount

    def append(self, timestamp: float, value: float) -> bool:
        """Append a point newer than the last; refuse (return False) one that is not.

        Time must strictly increase within a series: a repeated or backwards
        timestamp (an exporter pinning its own timestamps, a series listed twice
        in one exposition) would otherwise make rate() divide by zero and break
        the bisections below. Prometheus drops those samples too.
        """
        t = self._t
        if t is None:
            t = self._own()
        if t and timestamp <= t[-1]:
            return False
        t.append(timestamp)
        v = self._v
        v.append(value)
        if len(t) - self._lo > self._cap or len(v) == self._freeze:
            self._settle()
        return True

    def _align(self, clock: _Clock, scrape: int) -> None:
        """Share ``clock``'s times from scrape ``scrape`` on (an empty series, about to get its first point)."""
        self._t, self._clock, self._s0 = None, clock, scrape

    def _append_scrape(self, scrape: int, timestamp: float, value: float) -> bool:
        """``append`` at the target's scrape ``scrape`` (at ``timestamp``): a value only, when in step."""
        if self._t is None:
            v = self._v
            at = self._s0 + self._ncold + len(v)
            if at == scrape:
                v.append(value)
                if self._ncold + len(v) - self._lo > self._cap or len(v) == self._freeze:
                    self._settle()
                return True
            if at == scrape + 1:  # a second sample of the series in one scrape: its time is not newer
                return False
        return self.append(timestamp, value)

    def _start(self) -> int:
        """Physical index of the oldest point held: ``_lo``, or later where appends in a batch (``Store``'s
        scrape plan) went past ``capacity`` and ``_lo`` was not moved yet."""
        lo = self._lo
        over = self._ncold + len(self._v) - self._cap
        return over if over > lo else lo

    def _settle(self) -> None:
        """Freeze what is past the hot points, move ``_lo`` to the oldest point held and cut the front when a
        batch of points is out."""
        v, k = self._v, self._k
        while self._freeze and len(v) >= self._freeze:
            self._cold.append(_chunk.encode(v[:k]))
            del v[:k]  # in place: a scrape plan holds this very array
            self._ncold += k
        self._lo = self._start()
        if self._lo >= self._slack:
            self._compact()

    def _own(self) -> array[float]:
        """Stop sharing the clock (a scrape missed, a timestamp of its own): copy its times into ``_t``."""
        self._lo = self._start()
        if self._lo:
            self._compact()
        clock = self._clock
        assert clock is not None
        clock.epoch += 1  # a scrape plan holding this series' values without its times is void
        off = self._s0 - clock.base
        t = self._t = clock.times[off:off + self._ncold + len(self._v)]
        self._clock = None
        return t

    def _times(self) -> tuple[array[float], int]:
        """The time column and the offset of this series' physical index 0 in it."""
        t = self._t
        if t is not None:
            return t, 0
        clock = self._clock
        assert clock is not None
        return clock.times, self._s0 - clock.base

    def _compact(self) -> None:
        if self._index is not None:
            self._indexed()  # drops among the points about to go are counted before they go (a bulk ingest)
        lo, cold = self._lo, self._ncold
        if cold:  # whole chunks only: one partly held stays, its older points below ``_lo``
            whole = min(lo, cold) // self._k
            del self._cold[:whole]
            self._ncold -= whole * self._k
            cut = cold if lo >= cold else whole * self._k
            if cut == cold:
                self._ncold, self._cold = 0, []
                cut = lo
                del self._v[:lo - cold]
        else:
            cut = lo
            del self._v[:lo]
        if self._t is not None:
            del self._t[:cut]
        else:
            self._s0 += cut
        self._base += cut
        self._lo = lo - cut
        if self._index is not None:
            self._carried += self._index.forget_before(self._base)

    def _vals(self, a: int, b: int) -> array[float]:
        """Values of physical points ``[a, b)`` (a copy), decoding the frozen chunks they reach into."""
        cold = self._ncold
        if a >= cold:
            return self._v[a - cold:b - cold]
        k, out = self._k, array("d")
        for c in range(a // k, min(b, cold) // k + (min(b, cold) % k > 0)):
            lo = c * k
            out.extend(self._thaw(c)[max(a - lo, 0):min(b - lo, k)])
        if b > cold:
            out.extend(self._v[:b - cold])
        return out

    def _val(self, i: int) -> float:
        """The value of physical point ``i``."""
        cold = self._ncold
        if i >= cold:
            return self._v[i - cold]
        return self._thaw(i // self._k)[i % self._k]

    def _thaw(self, c: int) -> array[float]:
        """Frozen chunk ``c``'s values. The series keeps the last chunk it decoded: a window longer than the hot
        points starts in the same chunk for ``chunk`` scrapes in a row, and with thousands of series read each
        second the shared cache of 64 would turn over before any came back (a decode is ~20 µs)."""
        blob = self._cold[c]
        thawed = self._thawed
        if thawed is not None and thawed[0] is blob:
            return thawed[1]
        values = _chunk.decode(blob)
        self._thawed = (blob, values)
        return values

    def last(self) -> tuple[float, float] | None:
        v = self._v
        if not v:
            return None
        t, off = self._times()
        return t[self._ncold + len(v) - 1 + off], v[-1]

    def finite_ends(self) -> tuple[float, float] | None:
        """The first and the last finite value held; None when none is. Two point reads when both ends are
        finite: a creation time is read in every build, and copying its whole history (frozen chunks
        decoded) grew each build with the store's fill."""
        a, b = self._window(None, None)
        if a >= b:
            return None
        first, last = self._val(a), self._val(b - 1)
        if isfinite(first) and isfinite(last):
            return first, last
        finite = [v for v in self._vals(a, b) if isfinite(v)]
        return (finite[0], finite[-1]) if finite else None

    def points(self, start: float | None = None, end: float | None = None) -> list[tuple[float, float]]:
        """Points with ``start <= t <= end``, oldest first.

        Times strictly increase (``append`` refuses the rest), so both ends are
        found by bisection and only the points in range are copied.
        """
        t, off = self._times()
        lo, hi = self._start() + off, self._ncold + len(self._v) + off
        a = lo if start is None else bisect_left(t, start, lo, hi)
        b = hi if end is None else bisect_right(t, end, lo, hi)
        if a >= b:
            return []
        return list(zip(t[a:b], self._vals(a - off, b - off), strict=False))

    def _window(self, start: float | None, end: float | None) -> tuple[int, int]:
        """Physical indices ``[a, b)`` of the points with ``start < t <= end`` (left-open, as PromQL)."""
        # _times() and _start() inlined: this runs for every series read in every build.
        t = self._t
        n = self._ncold + len(self._v)
        if t is None:
            clock = self._clock
            assert clock is not None
            t, off = clock.times, self._s0 - clock.base
        else:
            off = 0
        lo = self._lo
        if n - self._cap > lo:
            lo = n - self._cap
        lo += off
        hi = n + off
        a = lo if start is None else bisect_right(t, start, lo, hi)
        b = hi if end is None else bisect_right(t, end, lo, hi)
        return a - off, b - off

    def columns(self, start: float | None = None, end: float | None = None) -> tuple[array[float], array[float]]:
        """(times, values) of the points with ``start < t <= end`` as two arrays (a memcpy, no tuples)."""
        a, b = self._window(start, end)
        if a >= b:
            return array("d"), array("d")
        t, off = self._times()
        return t[a + off:b + off], self._vals(a, b)

    def span(self, start: float | None = None, end: float | None = None) -> Span | None:
        """The ``Span`` of the finite points with ``start < t <= end``; None when there is none.

        A few bisections whatever the window's length: this is what makes a
        rate over an hour cost the same as a rate over a minute. Non-finite
        points are left out, as PromQL's range selectors leave out staleness
        markers: they are neither an end, nor counted, nor a drop.
        """
        a, b = self._window(start, end)
        if a >= b:
            return None
        index = self._indexed()
        if index.nonfinite:
            return self._finite_span(a, b)
        # Every point finite (the usual case): the index read once, its drops bisected only when it has any.
        # A Dashboard build spans thousands of series; this path is most of what each one costs.
        t = self._t
        off = 0
        if t is None:
            clock = self._clock
            assert clock is not None
            t, off = clock.times, self._s0 - clock.base
        resets = 0.0
        drops = index.drops
        if drops and b - a >= 2:
            base = self._base
            i, k = bisect_left(index.before_at, base + a), bisect_left(drops, base + b)
            if i < k:
                resets = sum(index.before[i:k])
        return Span(b - a, t[a + off], self._val(a), t[b - 1 + off], self._val(b - 1), resets)

    def _finite_span(self, a: int, b: int) -> Span | None:
        """``span`` of physical ``[a, b)`` when the series holds non-finite points: they are passed over."""
        a, b = self._finite_window(a, b)
        if a >= b:
            return None
        t, off = self._times()
        n = b - a - self._nonfinite_between(a, b)
        return Span(n, t[a + off], self._val(a), t[b - 1 + off], self._val(b - 1), self._resets(a, b))

    def drop_times(self, start: float | None = None, end: float | None = None) -> list[float]:
        """Times of the finite points just before each drop, among the points with ``start < t <= end``."""
        a, b = self._finite_window(*self._window(start, end))
        i, k = self._drop_range(a, b)
        if i == k or self._index is None:
            return []
        t, off = self._times()
        shift = off - self._base
        return [t[j + shift] for j in self._index.before_at[i:k]]

    def value_at(self, timestamp: float) -> float | None:
        """The value of the point at exactly ``timestamp``; None when there is no such point."""
        t, off = self._times()
        hi = self._ncold + len(self._v) + off
        i = bisect_left(t, timestamp, self._start() + off, hi)
        return self._val(i - off) if i < hi and t[i] == timestamp else None

    def _finite_window(self, a: int, b: int) -> tuple[int, int]:
        """Physical ``[a, b)`` narrowed to start and end on a finite point (empty when there is none)."""
        if a >= b or self._nonfinite_between(a, b) == 0:
            return a, b
        val = self._val
        while a < b and not isfinite(val(a)):
            a += 1
        while b > a and not isfinite(val(b - 1)):
            b -= 1
        return a, b

    def _nonfinite_between(self, a: int, b: int) -> int:
        """How many non-finite points lie at physical indices ``[a, b)`` (brings the index up to date)."""
        nonfinite = self._indexed().nonfinite
        if not nonfinite:
            return 0
        base = self._base
        return bisect_left(nonfinite, base + b) - bisect_left(nonfinite, base + a)

    def _resets(self, a: int, b: int) -> float:
        i, k = self._drop_range(a, b)
        return sum(self._indexed().before[i:k]) if i < k else 0.0

    def _drop_range(self, a: int, b: int) -> tuple[int, int]:
        """Positions in the drop index of the drops between physical points a and b - 1 (both inside)."""
        if b - a < 2:
            return 0, 0
        index = self._indexed()
        base = self._base
        return bisect_left(index.before_at, base + a), bisect_left(index.drops, base + b)

    def _indexed(self) -> _ResetIndex:
        """The reset index, brought up to the newest point: only points appended since the last call are read."""
        index = self._index
        base = self._base
        end = base + self._ncold + len(self._v)
        if index is not None and index.scanned >= end:
            return index  # up to date: the second and later reads of a build
        if index is None:
            lo = self._start()
            index = self._index = _ResetIndex(base + lo, self._finite_before(lo))
        first = max(index.scanned, base)
        if first == end - 1 and isfinite(x := self._v[-1]):
            # One new finite point (a build a scrape after the last): compared with the last finite one
            # in place, not through add_finite's arrays and maps, as add_finite would for a one-point batch.
            prior = index.last_finite
            if prior >= base and (pv := self._val(prior - base)) > x:
                index.drops.append(first)
                index.before.append(pv)
                index.before_at.append(prior)
            index.last_finite = first
            index.scanned = end
        elif first < end:
            prior = index.last_finite
            prior_value = self._val(prior - base) if prior >= base else None  # one cut off is no longer compared
            cur = self._vals(first - base, end - base)
            if isfinite(sum(cur)):  # every new point finite (the sum of finite values is)
                index.add_finite(first, cur, prior_value)
            else:
                index.add_mixed(first, cur, prior_value)
            index.scanned = end
        return index

    def _finite_before(self, lo: int) -> int:
        """Absolute index of the newest finite point at a physical index below ``lo``; -1 when none."""
        val = self._val
        for i in range(lo - 1, -1, -1):
            if isfinite(val(i)):
                return self._base + i
        return -1

    def __len__(self) -> int:
        return self._ncold + len(self._v) - self._start()

    def __repr__(self) -> str:
        return f"Series({self.name!r}, {dict(self.labels)!r}, {len(self)} points)"


class _Latest(Series):
    """A series no part of the monitor reads the history of (``Store(keep=...)``): its newest point only.

    It is still a series of the target (counted, listed with its latest value
    in the detail, swept when stale, charged to the label budget) so health and
    the detail say what they said when every point was kept; its history, which
    nothing reads, costs nothing.
    """

    __slots__ = ("_tv",)

    def __init__(self, name: str, labels: Mapping[str, str], *, cost: int = 0) -> None:
        # Series.__init__ is not called: none of its columns are used.
        self.name = name
        self.labels = MappingProxyType(labels if type(labels) is Labels else dict(labels))
        self.cost = cost
        self._sorted = None
        self._carried = 0.0
        # (time, value) in one array: a scrape plan (``Store``) sets both from C, no call per sample.
        self._tv = array("d", (-math.inf, math.nan))

    def append(self, timestamp: float, value: float) -> bool:
        tv = self._tv
        if timestamp <= tv[0]:
            return False
        tv[0], tv[1] = timestamp, value
        return True

    def _append_scrape(self, scrape: int, timestamp: float, value: float) -> bool:
        return self.append(timestamp, value)

    def last(self) -> tuple[float, float] | None:
        return (self._tv[0], self._tv[1]) if self._tv[0] != -math.inf else None

    def _inside(self, start: float | None, end: float | None) -> bool:
        t = self._tv[0]
        return t != -math.inf and (start is None or start < t) and (end is None or t <= end)

    def points(self, start: float | None = None, end: float | None = None) -> list[tuple[float, float]]:
        t = self._tv[0]
        inside = t != -math.inf and (start is None or start <= t) and (end is None or t <= end)
        return [(t, self._tv[1])] if inside else []

    def columns(self, start: float | None = None, end: float | None = None) -> tuple[array[float], array[float]]:
        if not self._inside(start, end):
            return array("d"), array("d")
        return array("d", (self._tv[0],)), array("d", (self._tv[1],))

    def span(self, start: float | None = None, end: float | None = None) -> Span | None:
        if not self._inside(start, end) or not isfinite(self._tv[1]):
            return None
        return Span(1, self._tv[0], self._tv[1], self._tv[0], self._tv[1], 0.0)

    def drop_times(self, start: float | None = None, end: float | None = None) -> list[float]:
        return []

    def finite_ends(self) -> tuple[float, float] | None:
        v = self._tv[1]
        return (v, v) if self._tv[0] != -math.inf and isfinite(v) else None

    def value_at(self, timestamp: float) -> float | None:
        return self._tv[1] if timestamp == self._tv[0] else None

    def __len__(self) -> int:
        return 0 if self._tv[0] == -math.inf else 1


@dataclass(slots=True)
class IngestResult:
    accepted: int = 0  # points stored (a repeated or older timestamp is not stored)
    dropped_series: int = 0
    over_label_bytes: int = 0  # of dropped_series, those refused by the byte budget (the rest by the series cap)


_LABELS, _NAME, _VALUE, _STAMP = itemgetter(1), itemgetter(0), itemgetter(2), itemgetter(3)


@dataclass(slots=True)
class _Plan:
    """Where each sample of a target's last scrape went, to store the next one like it from C.

    A scrape is "like it" when its samples are the same series in the same
    order (the parser hands out the same ``Labels`` objects while a page's
    text keeps its shape), with no timestamps, at the next scrape of the
    target's clock: then each stored series is in step (its time is the
    clock's), so its point is a value appended to its column, and a series
    kept for its latest point only gets both set in its two-float array. No
    Python call per sample: a few ``map``s over the scrape.
    """

    labels: list[Mapping[str, str]]
    names: list[str]
    columns: list[array[float]]  # the value column of each stored series, in page order
    stored: list[bool] | None  # per sample: into ``columns`` (else ``latest``); None when all are
    latest: list[array[float]]  # the (time, value) of each latest-only series, in page order
    series: list[Series]  # whose fronts to settle when one of them is due a cut
    scrape: int  # the clock's scrape the plan was last applied at
    epoch: int  # the clock's epoch then: a series that left the clock voids the plan
    due: int = 0  # scrapes until a series in ``series`` has a batch of points to cut

    def settle(self, capacity: int, slack: int) -> None:
        """Cut the fronts due, and count down to the next."""
        for s in self.series:
            if s._ncold + len(s._v) - capacity >= slack or 0 < s._freeze <= len(s._v):
                s._settle()
        self.due = min((min(capacity + slack - s._ncold - len(s._v), (s._freeze or 1 << 62) - len(s._v))
                        for s in self.series), default=1 << 62)


@dataclass(slots=True)
class _TargetData:
    series: dict[SeriesKey, Series] = field(default_factory=dict)
    by_name: dict[str, list[Series]] = field(default_factory=dict)
    scrapes: deque[float] = field(default_factory=deque)
    clock: _Clock = field(default_factory=_Clock)  # the times of the series in step with the scrapes
    dropped_series: int = 0
    label_bytes: int = 0  # label_cost of every stored series
    # id(Labels) -> (labels, name, series or None when dropped): the fast path of ingest.
    known: dict[int, tuple[Mapping[str, str], str, Series | None]] = field(default_factory=dict)
    known_dropped_bytes: int = 0  # label_cost of the dropped series ``known`` keeps alive
    plan: _Plan | None = None  # how the last scrape was stored, when the next may be stored the same way


class Store:
    """Per-target series store. Not thread-safe: one event loop owns it."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, max_series: int = DEFAULT_MAX_SERIES,
                 max_label_bytes: int = DEFAULT_MAX_LABEL_BYTES, keep: Callable[[str], bool] | None = None,
                 hot: int = DEFAULT_HOT, chunk: int = CHUNK) -> None:
        """``keep``: which sample names to keep the history of (``reads.is_read``); the newest point only of
        the rest. None keeps every name's history. ``hot``/``chunk``: see ``Series`` (older points frozen)."""
        if hot < 1 or chunk < 1:
            raise ValueError(f"hot and chunk must be at least 1 point, got {hot} and {chunk}")
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2 points, got {capacity}")
        if max_series < 1:
            raise ValueError(f"max_series must be at least 1, got {max_series}")
        if max_label_bytes < 1:
            raise ValueError(f"max_label_bytes must be at least 1, got {max_label_bytes}")
        self.capacity = capacity
        self.max_series = max_series
        self.max_label_bytes = max_label_bytes
        self.keep = keep
        self.hot, self.chunk = hot, chunk
        self._slack = max(1, capacity // _SLACK_FRACTION)
        self._targets: dict[str, _TargetData] = {}

    @property
    def wanted(self) -> Callable[[str], bool] | None:
        """The sample names ``ingest`` must be handed; None: every one. A source that parses may skip the
        rest (its parser's ``keep``): this store keeps only their newest point, which such a source keeps
        itself (the detail's raw series) far more cheaply than a series each."""
        return self.keep

    def ingest(self, target: str, timestamp: float, samples: Iterable[Sample]) -> IngestResult:
        """Append one scrape's samples at ``timestamp`` (a sample's own timestamp wins)."""
        data = self._targets.get(target)
        if data is None:
            data = self._targets[target] = _TargetData(scrapes=deque(maxlen=self.capacity))
        data.scrapes.append(timestamp)
        scrape = data.clock.tick(timestamp)  # None: not after the last scrape, so every point has its own time
        samples = samples if isinstance(samples, (list, tuple)) else list(samples)
        plan = data.plan
        if plan is not None:
            if scrape is not None and self._follow(data, plan, scrape, timestamp, samples):
                return IngestResult(accepted=len(samples))
            data.plan = None
        result = IngestResult()
        order: list[Series | None] = []  # where each sample went, for the next scrape's plan
        stamped = False
        # The parser hands out the same read-only Labels object for a series on
        # every scrape, so the series is found by identity (one dict lookup and
        # an ``is``) instead of sorting its labels into a key each time: that
        # sort was most of the cost of a steady-state scrape.
        known = data.known
        known_get = known.get
        accepted = 0
        swept = [False]  # at most one sweep of stale series per scrape
        for s in samples:
            labels = s.labels
            hit = known_get(id(labels))
            own = s.timestamp
            stamped = stamped or own is not None
            if hit is not None and hit[0] is labels and hit[1] == s.name:
                series = hit[2]
            else:
                series = self._admit(data, s.name, labels, result, swept, scrape if own is None else None)
            order.append(series)
            if series is None:  # over the series cap or the byte budget
                result.dropped_series += 1
            elif (series._append_scrape(scrape, timestamp, s.value) if own is None and scrape is not None
                  else series.append(timestamp if own is None else own, s.value)):
                accepted += 1
        if len(data.clock.times) > self.capacity + self._slack:
            self._cut_clock(data)
        if (len(known) > max(4 * self.max_series, 2 * (accepted + result.dropped_series))
                or data.known_dropped_bytes > self.max_label_bytes // 8):
            # Series churn: start afresh. Like the parser's own cache this follows
            # the size of a scrape, itself bounded by the scraper's body cap; a
            # flooding target's dropped series stay cheap to drop again, and the labels
            # they keep alive stay within an eighth of the budget.
            self._forget_known(data)
        result.accepted = accepted
        data.dropped_series += result.dropped_series
        if scrape is not None and not stamped and accepted == len(order):
            data.plan = self._plan(data, samples, order, scrape)  # type: ignore[arg-type]
        return result

    def _plan(self, data: _TargetData, samples: Sequence[Sample], order: list[Series], scrape: int) -> _Plan | None:
        """The plan of a scrape just stored whole, every point at the scrape's time; None when a series is
        not in step with the clock (its times are its own)."""
        columns, latest, series, stored = [], [], [], []
        for s in order:
            if type(s) is _Latest:
                latest.append(s._tv)
                stored.append(False)
            elif s._t is None:
                columns.append(s._v)
                series.append(s)
                stored.append(True)
            else:
                return None
        labels = list(map(_LABELS, samples))
        if set(map(type, labels)) != {Labels}:  # a mutable mapping may be the same object with new contents
            return None
        plan = _Plan(labels=labels, names=list(map(_NAME, samples)), columns=columns,
                     stored=None if all(stored) else stored, latest=latest, series=series, scrape=scrape,
                     epoch=data.clock.epoch)
        plan.settle(self.capacity, self._slack)
        return plan

    def _follow(self, data: _TargetData, plan: _Plan, scrape: int, timestamp: float,
                samples: Sequence[Sample]) -> bool:
        """Store a scrape like the last by its plan, from C; False (nothing stored) when it is not like it."""
        if (scrape != plan.scrape + 1 or plan.epoch != data.clock.epoch or len(samples) != len(plan.labels)
                or list(map(_LABELS, samples)) != plan.labels or list(map(_NAME, samples)) != plan.names
                or list(map(_STAMP, samples)).count(None) != len(samples)):
            return False
        values = list(map(_VALUE, samples))
        stored = plan.stored
        deque(map(array.append, plan.columns, values if stored is None else compress(values, stored)), 0)
        if plan.latest:
            assert stored is not None
            latest = plan.latest
            deque(map(setitem, latest, repeat(1), compress(values, map(not_, stored))), 0)
            deque(map(setitem, latest, repeat(0), repeat(timestamp, len(latest))), 0)
        plan.scrape = scrape
        plan.due -= 1
        if plan.due <= 0:
            plan.settle(self.capacity, self._slack)
        if len(data.clock.times) > self.capacity + self._slack:
            self._cut_clock(data)
        return True

    def _admit(self, data: _TargetData, name: str, labels: Mapping[str, str], result: IngestResult,
               swept: list[bool], scrape: int | None) -> Series | None:
        """The stored series for (name, labels), made when both caps allow; None when it is dropped."""
        key = series_key(name, labels)
        kept = key[1]  # the label set the series keeps: the key's, its one copy
        table = data.series
        series = table.get(key)
        if series is None:
            cost = label_cost(name, kept)
            if not self._fits(data, cost) and not swept[0]:
                swept[0] = True
                if self._evict_stale(data):
                    self._forget_known(data)  # it may point at evicted series or remember "dropped"
            if self._fits(data, cost):
                keep = self.keep
                if keep is None or keep(name):
                    series = Series(name, kept, capacity=self.capacity, cost=cost, hot=self.hot, chunk=self.chunk)
                    if scrape is not None:
                        series._align(data.clock, scrape)
                else:
                    series = _Latest(name, kept, cost=cost)
                table[key] = series
                data.by_name.setdefault(name, []).append(series)
                data.label_bytes += cost
            else:
                if len(table) < self.max_series:
                    result.over_label_bytes += 1
                data.known_dropped_bytes += cost
        if type(labels) is Labels:  # immutable: safe to remember by identity
            data.known[id(labels)] = (labels, name, series)  # holding it keeps the id unique
        return series

    def _cut_clock(self, data: _TargetData) -> None:
        """Cut the target's clock to its newest ``capacity`` scrapes; a series left behind (it stopped
        coming, and its newest point is older than those) takes a copy of its times first."""
        clock = data.clock
        floor = clock.base + len(clock.times) - self.capacity
        for series in data.series.values():
            if type(series) is Series and series._t is None and series._s0 + series._start() < floor:
                series._own()
        del clock.times[:floor - clock.base]
        clock.base = floor

    def _fits(self, data: _TargetData, cost: int) -> bool:
        return len(data.series) < self.max_series and data.label_bytes + cost <= self.max_label_bytes

    @staticmethod
    def _forget_known(data: _TargetData) -> None:
        data.known.clear()
        data.known_dropped_bytes = 0

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
            if type(series) is Series and series._t is None:
                series._own()  # a caller may still hold it; the clock will not keep its times
            data.label_bytes -= series.cost
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

    def first_scrape(self, target: str) -> float | None:
        """The oldest scrape time held of ``target``; None when it has none. Every build asks it of every
        target: ``scrape_times(t)[0]`` copied up to an hour of times to read one (at 256 targets, 154,000
        floats a build by minute 10, growing with the store's fill)."""
        data = self._targets.get(target)
        return data.scrapes[0] if data is not None and data.scrapes else None

    def series_count(self, target: str) -> int:
        data = self._targets.get(target)
        return len(data.series) if data is not None else 0

    def label_bytes(self, target: str) -> int:
        """What ``target``'s stored label sets cost against ``max_label_bytes``."""
        data = self._targets.get(target)
        return data.label_bytes if data is not None else 0

    def dropped_series(self, target: str) -> int:
        data = self._targets.get(target)
        return data.dropped_series if data is not None else 0
