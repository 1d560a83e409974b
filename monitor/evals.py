"""Evals, observed incrementally, and the baseline intelligence per dollar is measured from.

Evals are the one thing that outlives the store's ring buffers (an eval
every 20 minutes outlasts one hour of 1 s points after a few evals), so they
are observed incrementally into an ``EvalLog`` that the caller keeps and
passes back in; ``build_dashboard`` computes one from scratch when given
none. An eval is placed on the $ axis at the spend at its time, priced by
``ptmon.monitor.pricing`` as the spend card is.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ptmon.exporters import schema
from ptmon.monitor.dashboard import EvalPoint
from ptmon.monitor.derive import in_window, running_total
from ptmon.monitor.pricing import CostSeries, cost_series
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Series, Store
from ptmon.monitor.targets import target_roles

__all__ = ["Baseline", "EvalLog", "observe_evals", "latest_push", "spend_clock", "MAX_EVALS_PER_BENCHMARK"]

MAX_EVALS_PER_BENCHMARK = 10_000

_Key = tuple[str, tuple[tuple[str, str], ...]]  # (target, a score series' labels: benchmark and grouping key)
_Read = tuple[float, float, float | None]  # (time read up to, last score, last policy version)


@dataclass(frozen=True, slots=True)
class Baseline:
    """The intelligence-per-dollar reference: a score and the spend it was reached at."""

    score: float
    spend_dollars: float
    timestamp: float | None = None  # the eval it was taken from; None when configured


@dataclass(frozen=True, slots=True)
class EvalLog:
    """Every eval observed so far, per benchmark, and how far each eval series has been read."""

    evals: Mapping[str, tuple[EvalPoint, ...]] = field(default_factory=lambda: MappingProxyType({}))
    read: Mapping[_Key, _Read] = field(default_factory=lambda: MappingProxyType({}))

    def primary(self, configured: str | None) -> str | None:
        """The configured benchmark, else the one whose first eval came first."""
        if configured:
            return configured
        firsts = [(pts[0].timestamp, name) for name, pts in self.evals.items() if pts]
        return min(firsts)[1] if firsts else None

    def curve(self, configured: str | None) -> tuple[EvalPoint, ...]:
        """The primary benchmark's evals, oldest first."""
        bench = self.primary(configured)
        return self.evals.get(bench, ()) if bench is not None else ()


class _Spend:
    """Spend in dollars at any time, from each cost series' reset-corrected running total."""

    def __init__(self, cost: Sequence[CostSeries]) -> None:
        self._entries: list[tuple[list[float], list[float], float]] = []
        for c in cost:
            pts = c.series.points()
            if not pts:
                continue
            times = [t for t, _ in pts]
            totals = running_total([v for _, v in pts])
            if c.series.carried:
                totals = [x + c.series.carried for x in totals]
            self._entries.append((times, totals, c.price))

    def at(self, t: float) -> float | None:
        dollars: float | None = None
        for times, totals, price in self._entries:
            # Before a series' first point, its first value is the best guess: targets of one
            # scrape round land microseconds apart, and an eval must not look free.
            i = max(1, bisect_right(times, t))
            value = totals[i - 1] * price / 3600.0
            if math.isfinite(value):  # a NaN/Inf counter is no spend to speak of
                dollars = value if dollars is None else dollars + value
        return dollars if dollars is not None and math.isfinite(dollars) else None


def spend_clock(store: Store, settings: Settings) -> Callable[[float], float | None]:
    """Dollars spent by any time ``t`` the store holds (evals are placed by it): a Dashboard's spend is
    the whole history held, so a time in the past needs this instead."""
    return _Spend(cost_series(store, settings, target_roles(store, (), settings))).at


def _group(labels: Mapping[str, str], own: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """A series' labels but its metric's own: the labels every series of its group (one exporter's registry,
    one Pushgateway group with its grouping key) has alike."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in own))


def _push_times(store: Store, target: str) -> dict[tuple[tuple[str, str], ...], Series]:
    """A Pushgateway's ``push_time_seconds`` per group on ``target`` (none where nothing was pushed)."""
    return {_group(s.labels, ()): s for s in store.series(target, schema.PUSHGATEWAY_PUSH_TIME)}


def _pushed_at(push: Series | None, t: float) -> float | None:
    """When the group holding a point scraped at ``t`` was pushed: its push time at that scrape."""
    if push is None:
        return None
    value = push.value_at(t)
    if value is None:
        held = push.points(None, t)
        value = held[-1][1] if held else None
    return value if value is not None and math.isfinite(value) and 0 < value <= t + 1.0 else None


def _series_evals(series: Series, version: Series | None, samples: Series | None, push: Series | None,
                  read: _Read) -> tuple[list[EvalPoint], _Read] | None:
    """The evals of one score series after its read position (spend not placed), and its next position.

    An eval is a change of the score or its policy version (the first value seen counts as one), timed by
    its group's push when it came through a Pushgateway (a group pushed an hour ago and scraped now is an
    eval of an hour ago), else by the scrape that saw it.
    """
    since, last_score, last_version = read
    pts = in_window(series, since, math.inf)
    if not pts:
        return None
    ver = dict(in_window(version, since, math.inf)) if version is not None else {}
    smp = dict(in_window(samples, since, math.inf)) if samples is not None else {}
    out: list[EvalPoint] = []
    for t, score in pts:
        if not math.isfinite(score):  # NaN would differ from itself: a new "eval" every scrape
            continue
        v = ver.get(t, last_version)
        if score != last_score or v != last_version:
            pushed = _pushed_at(push, t)
            out.append(EvalPoint(timestamp=t if pushed is None else pushed, spend_dollars=math.nan, score=score,
                                 policy_version=v, samples=smp.get(t), pushed=pushed is not None))
        last_score, last_version = score, v
    return out, (pts[-1][0], last_score, last_version)


def _new_evals(store: Store, read: Mapping[_Key, _Read]) -> tuple[dict[_Key, list[EvalPoint]], dict[_Key, _Read]]:
    """Evals (spend not placed yet) stored after each series' read position, and the positions after them.

    Per score series, every label set on its own: a Pushgateway holds one group per grouping key (a run,
    a checkpoint), each with the same benchmark, and read together they would re-read each other's points
    as a new eval every scrape. A series' policy version and samples are the ones with its labels.
    """
    new: dict[_Key, list[EvalPoint]] = {}
    read_next: dict[_Key, _Read] = {}
    for target in store.targets():
        versions = {_group(s.labels, ()): s for s in store.series(target, schema.EVAL_POLICY_VERSION.name)}
        samples = {_group(s.labels, ()): s for s in store.series(target, schema.EVAL_SAMPLES.name)}
        pushes = _push_times(store, target)
        for series in store.series(target, schema.EVAL_SCORE.name):
            labels = _group(series.labels, ())
            key = (target, labels)
            found = _series_evals(series, versions.get(labels), samples.get(labels),
                                  pushes.get(_group(series.labels, schema.EVAL_SCORE.labels)),
                                  read.get(key, (-math.inf, math.nan, None)))
            if found is None:
                continue
            points, read_next[key] = found
            if points:
                new[key] = points
    return new, read_next


def latest_push(store: Store) -> float | None:
    """The newest push time of a Pushgateway group that holds an eval score, on any target; None when no
    eval came through a gateway. It stays put once the gateway is gone, so its age keeps growing."""
    newest: float | None = None
    for target in store.targets():
        groups = {_group(s.labels, schema.EVAL_SCORE.labels) for s in store.series(target, schema.EVAL_SCORE.name)}
        for group, push in _push_times(store, target).items():
            last = push.last()
            if group in groups and last is not None and math.isfinite(last[1]) and last[1] > 0:
                newest = last[1] if newest is None else max(newest, last[1])
    return newest


def observe_evals(store: Store, settings: Settings, *, previous: EvalLog | None = None) -> EvalLog:
    """``previous`` plus the evals stored since it was read.

    An eval is a change of a benchmark's score or eval policy version gauge
    (the first value seen counts as one), placed at the spend at that time.
    Only points newer than what ``previous`` read are looked at.
    """
    previous = previous or EvalLog()
    read = dict(previous.read)
    new, read_next = _new_evals(store, read)
    if not new:
        read.update(read_next)
        return EvalLog(evals=previous.evals, read=MappingProxyType(read))
    spend = _Spend(cost_series(store, settings, target_roles(store, (), settings)))
    evals = dict(previous.evals)
    for key, advanced in read_next.items():
        points = new.get(key, [])
        placed = [replace(p, spend_dollars=s) for p in points if (s := spend.at(p.timestamp)) is not None]
        if len(placed) < len(points):
            # No cost data yet: an eval with no spend cannot go on the $ axis. Keep it pending
            # (this key's read position stays put) so it is placed once spend is known, not lost.
            continue
        read[key] = advanced
        if placed:
            bench = dict(key[1]).get(schema.LABEL_BENCHMARK, "")
            merged = sorted((*evals.get(bench, ()), *placed), key=lambda p: p.timestamp)
            evals[bench] = tuple(merged[-MAX_EVALS_PER_BENCHMARK:])
    return EvalLog(evals=MappingProxyType(evals), read=MappingProxyType(read))
