"""The run's event log: what happened, when, for how long, in time order.

An alert that resolves vanishes from the screen; a worker that crashed and
came back looks fine a minute later. The event log keeps them: every
alert's start, end and duration, targets going down and coming back,
worker restarts (a counter that went back to zero), weight syncs slower
than the warn limit, failed syncs, evals, and each policy version the
trainer published.

``EventLog`` is fed incrementally, like the eval log: ``observe_store``
reads only the points stored since its last call (so it is cheap every
second, and sees everything however long the run, as long as it is called
more often than the Store's ring buffers turn over), ``observe_health``
and ``observe_alerts`` take what each Dashboard says. The live feed and the
replay feed both keep one; nothing here reaches back into a source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ptmon.exporters import schema
from ptmon.monitor.dashboard import Alert, Dashboard, TargetHealth
from ptmon.monitor.evals import EvalLog
from ptmon.monitor.format import fmt_duration, fmt_money, fmt_score, fmt_seconds, fmt_version
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Series, Store

__all__ = ["Event", "EventLog", "KINDS", "as_of", "events_json", "EventsFeed"]

KINDS = ("alert", "target_down", "restart", "sync_slow", "sync_failed", "eval", "policy")

# Counters every ptmon exporter (or an engine) exposes: one of them going back down means the process restarted.
_RESTART_COUNTERS = tuple(dict.fromkeys(
    n for spec in (schema.GPU_SECONDS, schema.ROLLOUTS, schema.ROLLOUT_TOKENS, schema.TRAINER_STEPS,
                   schema.VLLM_GENERATION_TOKENS, schema.SGLANG_GENERATION_TOKENS)
    for n in schema.counter_aliases(spec.name)))
_FAILURES = schema.counter_aliases(schema.WEIGHT_SYNC_FAILURES.name)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened at ``at``; alerts and target downs also end (``end`` None: still going)."""

    at: float
    kind: str  # one of KINDS
    subject: str | None  # the target, worker or benchmark; None for the run
    message: str  # may hold scraped text: render literally
    end: float | None = None
    level: str | None = None  # alerts: warn or critical
    lasting: bool = False  # alerts and downs: it has a duration (so far, while end is None)

    def duration(self, now: float) -> float | None:
        if not self.lasting:
            return None
        return (self.end if self.end is not None else now) - self.at


def _back_after(start: float, end: float) -> str:
    return f"; back after {fmt_duration(end - start)}"


def as_of(e: Event, t: float) -> Event:
    """``e`` as it stood at ``t``: an end after ``t`` was not known yet (a replay played back before it)."""
    if e.end is None or e.end <= t:
        return e
    message = e.message.removesuffix(_back_after(e.at, e.end)) if e.kind == "target_down" else e.message
    return replace(e, end=None, message=message)


def _key(e: Event) -> tuple[float, int, str]:
    return (e.at, KINDS.index(e.kind), e.subject or "")


class EventLog:
    """Events seen so far. Not thread-safe: one event loop owns it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._events: list[Event] = []
        self._read: dict[tuple[str, str, tuple[tuple[str, str], ...]], float] = {}  # series -> time read up to
        self._down: dict[str, int] = {}  # target -> index of its open target_down event
        self._up: dict[str, bool | None] = {}
        self._alerts: dict[tuple[str, str | None], int] = {}
        self._evals_seen: set[tuple[str, float]] = set()

    def events(self) -> tuple[Event, ...]:
        return tuple(sorted(self._events, key=_key))

    # -- from the Store ---------------------------------------------------------------------------------

    def _new_points(self, target: str, series: Series, until: float) -> list[tuple[float, float]]:
        """The series' points after the last one read, with that last one first (to compare against).

        Read positions are kept by (target, name, labels), not by the Series object: a replay that goes
        back in time rebuilds its Store with new Series and must not report the same events twice."""
        key = (target, series.name, tuple(series.labels.items()))
        seen = self._read.get(key)
        pts = series.points(seen, until)
        if pts:
            self._read[key] = max(pts[-1][0], seen) if seen is not None else pts[-1][0]
        return pts if seen is not None else [(math.nan, math.nan), *pts]

    def observe_store(self, store: Store, *, until: float, evals: EvalLog | None = None) -> None:
        """Everything stored up to ``until`` and not read yet."""
        th = self._settings.thresholds
        for target in store.targets():
            restarts: set[float] = set()
            for name in _RESTART_COUNTERS:
                for s in store.series(target, name):
                    pts = self._new_points(target, s, until)
                    restarts.update(b[0] for a, b in zip(pts, pts[1:], strict=False) if b[1] < a[1])
            for t in sorted(restarts):
                self._events.append(Event(t, "restart", target, f"{target} restarted: its counters went back to 0"))
            for name in _FAILURES:
                for s in store.series(target, name):
                    pts = self._new_points(target, s, until)
                    for a, b in zip(pts, pts[1:], strict=False):
                        n = b[1] - a[1] if b[1] >= a[1] else b[1]
                        if n > 0 and math.isfinite(n):
                            what = "a weight sync" if n == 1 else f"{n:g} weight syncs"
                            self._events.append(Event(b[0], "sync_failed", target, f"{what} failed"))
            self._syncs(store, target, until, th.weight_sync_p99_warn_s)
            for s in store.series(target, schema.POLICY_VERSION.name):
                pts = self._new_points(target, s, until)
                for a, b in zip(pts, pts[1:], strict=False):
                    # The first value this log sees (a is NaN) was published before it looked: not an event.
                    if a[1] == a[1] and b[1] != a[1] and math.isfinite(b[1]):
                        self._events.append(Event(b[0], "policy", target,
                                                  f"policy version {fmt_version(b[1])} published"))
        if evals is not None:
            self._observe_evals(evals, until)

    def _syncs(self, store: Store, target: str, until: float, warn_s: float) -> None:
        spec = schema.WEIGHT_SYNC_SECONDS
        counts = {tuple(sorted(s.labels.items())): s for s in store.series(target, spec.count)}
        for su in store.series(target, spec.sum):
            co = counts.get(tuple(sorted(su.labels.items())))
            if co is None:
                continue
            sums = [p for p in self._new_points(target, su, until) if p[0] == p[0]]
            counts_at = dict(p for p in self._new_points(target, co, until) if p[0] == p[0])
            prev: tuple[float, float] | None = None
            for t, v in sums:
                c = counts_at.get(t)
                if c is None:
                    continue
                if prev is not None:
                    ds, dc = (v, c) if c < prev[1] else (v - prev[0], c - prev[1])
                    if dc > 0 and ds / dc > warn_s:
                        self._events.append(Event(t, "sync_slow", target,
                                                  f"weight sync took {fmt_seconds(ds / dc)} "
                                                  f"(warn limit {fmt_seconds(warn_s)})"))
                prev = (v, c)

    def _observe_evals(self, evals: EvalLog, until: float) -> None:
        for bench, points in evals.evals.items():
            for p in points:
                if p.timestamp <= until and (bench, p.timestamp) not in self._evals_seen:
                    self._evals_seen.add((bench, p.timestamp))
                    self._events.append(Event(p.timestamp, "eval", bench or None,
                                              f"{bench or 'eval'} {fmt_score(p.score)} at {fmt_money(p.spend_dollars)}"
                                              f" spent (policy {fmt_version(p.policy_version)})"))

    # -- from health and Dashboards -------------------------------------------------------------------------

    def observe_health(self, health: Iterable[TargetHealth], *, at: float | None = None) -> None:
        """Targets going down and coming back (at their last scrape's time when known)."""
        for h in health:
            was = self._up.get(h.name)
            if h.up == was or h.up is None:
                continue
            self._up[h.name] = h.up
            when = h.last_scrape if h.last_scrape is not None else at
            if when is None:
                continue
            if h.up is False:
                why = f": {h.error}" if h.error else ""
                self._down[h.name] = len(self._events)
                self._events.append(Event(when, "target_down", h.name, f"{h.name} down{why}", lasting=True))
            elif h.name in self._down:
                i = self._down.pop(h.name)
                e = self._events[i]
                self._events[i] = replace(e, end=when, message=e.message + _back_after(e.at, when))

    def observe_alerts(self, alerts: Iterable[Alert], *, now: float) -> None:
        current = {(a.name, a.subject): a for a in alerts}
        for key, a in current.items():
            i = self._alerts.get(key)
            if i is None or self._events[i].at != a.since:
                self._alerts[key] = len(self._events)
                self._events.append(Event(a.since, "alert", a.subject, f"{a.name}: {a.message}", level=a.level,
                                          lasting=True))
            elif a.level == "critical" and self._events[i].level != "critical":
                self._events[i] = replace(self._events[i], level="critical", message=f"{a.name}: {a.message}")
        for key in [k for k in self._alerts if k not in current]:
            i = self._alerts.pop(key)
            self._events[i] = replace(self._events[i], end=now)

    def observe_dashboard(self, d: Dashboard, store: Store, evals: EvalLog | None = None) -> None:
        self.observe_store(store, until=d.now, evals=evals)
        self.observe_health(d.targets, at=d.now)
        self.observe_alerts(d.alerts, now=d.now)


def events_json(events: Sequence[Event], *, now: float) -> list[dict[str, Any]]:
    """Events for ``--json``: time, kind, subject, message, level, end and duration (null when not known)."""
    return [{"at": e.at, "kind": e.kind, "subject": e.subject, "message": e.message, "level": e.level,
             "end": e.end, "duration_s": e.duration(now)} for e in events]


class EventsFeed:
    """A ``ptmon.monitor.feed.Feed`` decorator keeping an EventLog of what ``feed`` shows (``ptmon watch``).

    ``feed`` is a LiveFeed or a RecordingFeed (anything with ``settings``, ``store`` and ``evals``);
    ``past``: the events of the run before this monitor started (from its recording).
    """

    def __init__(self, feed: Any, *, past: Sequence[Event] = ()) -> None:
        self.feed = feed
        self.log = EventLog(feed.settings)
        self._past = tuple(past)

    @property
    def store(self) -> Store:
        store: Store = self.feed.store
        return store

    async def start(self) -> None:
        await self.feed.start()

    async def collect_once(self) -> None:
        await self.feed.collect_once()

    async def dashboard(self, *, window_s: float) -> Dashboard:
        d = await self.feed.dashboard(window_s=window_s)
        self.log.observe_dashboard(d, self.feed.store, self.feed.evals)
        return d

    def events(self) -> tuple[Event, ...]:
        return (*self._past, *self.log.events())

    def detail(self, name: str, **options: Any) -> Any:
        """The wrapped feed's detail of one target (``LiveFeed.detail``); None when it has none."""
        detail = getattr(self.feed, "detail", None)
        return detail(name, **options) if callable(detail) else None

    def set_interval(self, interval_s: float) -> None:
        self.feed.set_interval(interval_s)

    def set_baseline_now(self) -> None:
        self.feed.set_baseline_now()

    async def aclose(self) -> None:
        await self.feed.aclose()
