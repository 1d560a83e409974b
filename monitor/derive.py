"""Pure numeric primitives over stored points: rate, quantiles, slopes.

Every function here is a pure function of ``(timestamp, value)`` points and
explicit times: no clock, no store, no I/O, so each number on the dashboard
can be checked by hand in a test.

``rate``/``increase`` follow PromQL's ``extrapolatedRate`` (as in current
Prometheus: the start gap is capped at half a spacing before the zero-point
clamp; 2.42 clamps first, which differs only for a series that begins inside
the range) and ``histogram_quantile`` follows PromQL's ``bucketQuantile``:
the same points give the same number as a Prometheus server, which is what
lets a user check ptmon against their Grafana. Windows are left-open,
``(start, end]``, as in Prometheus 3.

Each counter function has a ``span_`` twin that takes a ``Span`` (a
window's count, ends and summed resets, from ``Series.span`` in a few
bisections) instead of the points: the same arithmetic in the same order, so
the dashboard gets PromQL's number without copying or scanning the window.

Functions return ``None`` where PromQL returns nothing or NaN (fewer than two
points, no observations): the dashboard shows "unknown", never a made-up 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, islice
from operator import add, gt, itemgetter, mul

from ptmon.monitor.store import Series, Span

__all__ = [
    "Points",
    "in_window",
    "span_of",
    "rate",
    "increase",
    "raw_increase",
    "counter_total",
    "span_rate",
    "span_increase",
    "span_raw_increase",
    "span_counter_total",
    "running_total",
    "histogram_quantile",
    "histogram_sum_estimate",
    "parse_le",
    "least_squares_slope",
    "median",
    "mean",
    "step_gauge_rate",
    "changed_at",
]

Points = Sequence[tuple[float, float]]

# PromQL extrapolates to a range boundary only when the first/last sample is
# within 110% of the average spacing from it (promql/functions.go).
_EXTRAPOLATION_THRESHOLD = 1.1

_value = itemgetter(1)


def in_window(series: Series, start: float, end: float) -> list[tuple[float, float]]:
    """The series' points with ``start < t <= end`` (PromQL's left-open range)."""
    pts = series.points(start, end)
    if pts and pts[0][0] <= start:  # times strictly increase: only the first can sit on the start
        del pts[0]
    return pts


def span_of(points: Points) -> Span | None:
    """The ``Span`` of a list of points (what ``Series.span`` gives without the list)."""
    if not points:
        return None
    values = list(map(_value, points))
    first_t, first_v = points[0]
    last_t, last_v = points[-1]
    return Span(len(points), first_t, first_v, last_t, last_v, _reset_correction(values))


def _reset_correction(values: list[float]) -> float:
    """Sum of the values just before each drop: a drop means a restart from zero."""
    if values == sorted(values):  # the common case, no restart: timsort's O(n) check beats any scan
        return 0.0
    return sum(compress(values, map(gt, values, islice(values, 1, None))))


def _extrapolated(span: Span | None, start: float, end: float, *, is_rate: bool) -> float | None:
    if span is None:
        return None
    n, first_t, first_v, last_t, last_v, resets = span
    if n < 2:
        return None
    sampled = last_t - first_t
    if sampled <= 0:
        return None
    result = last_v - first_v + resets
    avg = sampled / (n - 1)
    threshold = avg * _EXTRAPOLATION_THRESHOLD
    to_start = first_t - start
    to_end = end - last_t
    if to_start >= threshold:
        to_start = avg / 2
    # A counter cannot have been negative: extrapolate back to zero at most.
    if result > 0 and first_v >= 0:
        to_zero = sampled * (first_v / result)
        if to_zero < to_start:
            to_start = to_zero
    if to_end >= threshold:
        to_end = avg / 2
    factor = (sampled + to_start + to_end) / sampled
    if is_rate:
        factor /= end - start
    return result * factor


def increase(points: Points, *, start: float, end: float) -> float | None:
    """PromQL ``increase(x[end-start])`` at ``end`` over points already in ``(start, end]``."""
    return _extrapolated(span_of(points), start, end, is_rate=False)


def rate(points: Points, *, start: float, end: float) -> float | None:
    """PromQL ``rate(x[end-start])`` at ``end``: per-second, counter resets handled, extrapolated."""
    return _extrapolated(span_of(points), start, end, is_rate=True)


def span_increase(span: Span | None, *, start: float, end: float) -> float | None:
    """``increase`` from a window's ``Span`` (``Series.span(start, end)``): O(log n), same number."""
    return _extrapolated(span, start, end, is_rate=False)


def span_rate(span: Span | None, *, start: float, end: float) -> float | None:
    """``rate`` from a window's ``Span`` (``Series.span(start, end)``): O(log n), same number."""
    return _extrapolated(span, start, end, is_rate=True)


def span_raw_increase(span: Span | None) -> float | None:
    """``raw_increase`` from a ``Span``."""
    if span is None or span.n < 2:
        return None
    return span.last_v - span.first_v + span.resets


def raw_increase(points: Points) -> float | None:
    """How much a counter grew between its first and last point, resets handled, no extrapolation.

    For counts a person reads as whole events ("3 syncs in the window"),
    where PromQL's extrapolated 3.3 would look like a bug.
    """
    return span_raw_increase(span_of(points))


def span_counter_total(span: Span | None) -> float | None:
    """``counter_total`` from a ``Span``."""
    return None if span is None else span.last_v + span.resets


def counter_total(points: Points) -> float | None:
    """The counter's total across restarts seen in ``points``: last value plus pre-reset values."""
    return span_counter_total(span_of(points))


def running_total(values: list[float]) -> list[float]:
    """Each value plus the pre-reset values before it: a counter's total as if it never restarted.

    C-level passes only (no per-point Python), because the dashboard runs
    this over every rollout series every second.
    """
    if values == sorted(values):  # no restart: the values are their own running total
        return list(values)
    drops = map(gt, values, islice(values, 1, None))
    corrections = accumulate(map(mul, values, drops), initial=0.0)
    return list(map(add, values, corrections))


def parse_le(text: str) -> float | None:
    """A bucket's ``le`` label as a float (``+Inf`` included); None when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return None


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """PromQL ``histogram_quantile`` over ``(upper_bound, cumulative_count)`` pairs.

    Linear interpolation inside the bucket holding the rank; the lowest bucket
    starts at 0 when its upper bound is positive; a rank in the +Inf bucket
    returns the highest finite bound. None where PromQL gives NaN: no +Inf
    bucket, fewer than two buckets (a +Inf-only histogram), no observations.
    """
    if math.isnan(q):
        return None
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(buckets)
    if not ordered or ordered[-1][0] != math.inf:
        return None
    # Coalesce equal bounds (e.g. the same histogram summed from two label sets).
    bounds: list[float] = []
    counts: list[float] = []
    for le, c in ordered:
        if bounds and bounds[-1] == le:
            counts[-1] += c
        else:
            bounds.append(le)
            counts.append(c)
    # Float noise from rate() across buckets: treat relative differences <= 1e-12 as equal.
    prev = counts[0]
    for i in range(1, len(counts)):
        cur = counts[i]
        delta = abs(cur - prev)
        if delta == 0:
            continue
        if cur != 0 and delta / cur <= 1e-12:
            counts[i] = prev
        else:
            prev = cur
    # Cumulative counts cannot decrease: take the envelope (scrape skew between buckets).
    top = counts[0]
    for i in range(1, len(counts)):
        if counts[i] > top:
            top = counts[i]
        elif counts[i] < top:
            counts[i] = top
    if len(bounds) < 2:
        return None
    observations = counts[-1]
    if not observations > 0:
        return None
    rank = q * observations
    b = 0
    last = len(counts) - 1
    while b < last and counts[b] < rank:
        b += 1
    if b == last:
        return bounds[-2]
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start = 0.0
    end = bounds[b]
    count = counts[b]
    if b > 0:
        start = bounds[b - 1]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    if count == 0:  # q == 0 on an empty lowest bucket: PromQL's 0/0
        return None
    return start + (end - start) * (rank / count)


def histogram_sum_estimate(buckets: Iterable[tuple[float, float]]) -> tuple[float, float] | None:
    """(estimated sum, count) of the observations in ``(upper_bound, cumulative_count)`` pairs.

    For a histogram exposed without ``_sum`` (prometheus_client drops it when
    a bucket bound is negative, as the reward's are): each bucket's count sits
    at its midpoint; the lowest bucket at its upper bound when that bound is
    at or below zero (it reaches down to -Inf: the bound is the only finite
    value, as in ``histogram_quantile``), else at the midpoint of ``(0, bound]``;
    the +Inf bucket at the highest finite bound. The error is at most half the
    widest bucket that holds observations (plus whatever lies beyond the
    outer bounds). Bounds are coalesced and counts made monotonic as in
    ``histogram_quantile``. None without a +Inf bucket, without a finite
    bound, or without observations.
    """
    by_le: dict[float, float] = {}
    for le, c in buckets:
        by_le[le] = by_le.get(le, 0.0) + c
    bounds = sorted(by_le)
    if len(bounds) < 2 or bounds[-1] != math.inf:
        return None
    total = 0.0
    below = 0.0  # the cumulative count so far (monotonic envelope)
    for i, le in enumerate(bounds):
        c = max(by_le[le], below)
        n = c - below
        below = c
        if n == 0:
            continue
        if i == 0:
            at = le if le <= 0 else le / 2
        elif le == math.inf:
            at = bounds[i - 1]
        else:
            at = (bounds[i - 1] + le) / 2
        total += n * at
    if not below > 0 or not math.isfinite(total):
        return None
    return total, below


def least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Ordinary least-squares slope of ys on xs; None with fewer than two distinct xs."""
    if len(xs) != len(ys) or len(xs) < 2:
        return None
    try:
        slope = statistics.linear_regression(xs, ys).slope
    except statistics.StatisticsError:  # every x equal: no slope to speak of
        return None
    except (OverflowError, ValueError):  # fsum over values near the float limit, or ±Inf: no number to show
        return None
    return slope if math.isfinite(slope) else None


def median(values: Iterable[float]) -> float | None:
    """The middle value (mean of the two middle ones for an even count); None when empty."""
    data = list(values)
    return statistics.median(data) if data else None


def mean(values: Iterable[float]) -> float | None:
    """The arithmetic mean; None when empty or not finite (huge gauges overflow fsum)."""
    data = list(values)
    if not data:
        return None
    try:
        m = statistics.fmean(data)
    except (OverflowError, ValueError):
        return None
    return m if math.isfinite(m) else None


def step_gauge_rate(points: Points) -> float | None:
    """Steps per second from a gauge holding the step number (prime-rl's ``trainer_step``, verl's global step):
    the slope from the first to the last point since the gauge last fell (a restart from an older checkpoint
    starts the count again, never a negative rate). None with fewer than two such points."""
    start = 0
    for i in range(1, len(points)):
        if points[i][1] < points[i - 1][1]:
            start = i
    if len(points) - start < 2:
        return None
    (t0, v0), (t1, v1) = points[start], points[-1]
    return (v1 - v0) / (t1 - t0) if t1 > t0 else None


def changed_at(points: Points) -> float | None:
    """When the gauge took its latest value: the first point holding it, where an earlier point held another.
    None when every point holds it (it changed before the data begins: when is unknown)."""
    if not points:
        return None
    last = points[-1][1]
    for i in range(len(points) - 1, 0, -1):
        if points[i - 1][1] != last:
            return points[i][0]
    return None
