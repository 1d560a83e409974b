"""Replay: a recording played back through the same Store, build and alerts as the live screen.

``ReplaySource`` is a third source beside the scraper and the Prometheus
reader: it fills a Store with the recorded scrapes stored by the playhead's
time, in the order they were stored, and reports each target's recorded
health at that time. ``ReplayFeed`` is a Feed over it, so the TUI and
``ptmon snapshot`` get Dashboards without knowing they are old: the same
samples in the same Store at the same ``now`` give the same numbers the
live screen showed. Alerts keep the ``since`` the recording says they had.

Going back in time cannot un-store samples: a seek backwards rebuilds the
Store, from a checkpoint rather than from the start of the recording, so it
costs the Store's depth, not the file's length. Playing forward keeps a small
checkpoint every quarter of the Store's depth: what outlives the Store's ring
buffers (the evals met so far, each target's health, the source's target
list, and for each GPU-seconds series its counter resets so far and its last
value, which spend across restarts needs). A seek to T rebuilds from the
latest checkpoint at least the Store's depth before T (its capacity times the
longest interval), so the rebuilt Store holds the same points the live one
held at T. The event log is kept, not rebuilt: it has seen everything up to
the furthest point played, and lists what happened by the playhead.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from ptmon.monitor.alerts import evaluate
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.dashboard import Alert, Dashboard, TargetHealth
from ptmon.monitor.evals import Baseline, EvalLog, observe_evals
from ptmon.monitor.events import Event, EventLog, as_of
from ptmon.monitor.exposed import GPU_SECONDS
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.reads import is_read
from ptmon.monitor.recording.codec import HealthRecord
from ptmon.monitor.recording.reader import AlertSpan, Recording, StoredScrape
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store
from ptmon.monitor.window import series_of

__all__ = ["Playhead", "ReplaySource", "ReplayFeed", "Checkpoint", "SPEEDS"]

SPEEDS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


class Playhead:
    """The replay's clock: a recorded time that moves at ``speed`` x real time while playing."""

    def __init__(self, start: float, end: float, *, real: Callable[[], float] = time.monotonic) -> None:
        self.start, self.end = start, end
        self._real = real
        self._at = start
        self._anchor = real()
        self.playing = False
        self.speed = 1.0

    def now(self) -> float:
        if not self.playing:
            return self._at
        t = self._at + (self._real() - self._anchor) * self.speed
        if t >= self.end:
            self._at, self._anchor, self.playing = self.end, self._real(), False  # the end: stop there
            return self.end
        return t

    def _pin(self) -> None:
        self._at, self._anchor = self.now(), self._real()

    def seek(self, t: float) -> None:
        self._at = min(max(t, self.start), self.end)
        self._anchor = self._real()

    def play(self) -> None:
        self._pin()
        self.playing = self._at < self.end

    def pause(self) -> None:
        self._pin()
        self.playing = False

    def set_speed(self, speed: float) -> None:
        if not 0 < speed <= SPEEDS[-1]:
            raise ValueError(f"speed must be above 0 and at most {SPEEDS[-1]:g}x, got {speed!r}")
        self._pin()
        self.speed = float(speed)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The replay's state at ``at`` that the Store's ring buffers do not hold (see the module's docstring).

    ``points``: every series' last point (target, name, labels, time, value) and, for GPU-seconds series,
    the pre-reset values of its restarts so far: a rebuilt Store starts with them, so a target that says
    nothing new after ``at`` (down) still shows its last values and prices, a restart right after ``at`` is
    a drop from its last point, and spend carries the restarts before.
    """

    at: float
    evals: EvalLog
    health: Mapping[str, TargetHealth]
    roster: tuple[str, ...] | None
    points: tuple[tuple[str, str, Mapping[str, str], float, float, float], ...]


class ReplaySource:
    """A ``ptmon.monitor.sources.base.Source`` reading a recording instead of the network.

    ``advance_to(t)`` stores every recorded scrape stored by ``t``;
    ``between`` is called every ``every`` scrapes on the way (the feed reads
    its evals there, before the Store's ring buffers drop them).
    """

    def __init__(self, recording: Recording, *, store: Store, settings: Settings,
                 on_health: Callable[[TargetHealth, float], None] | None = None,
                 resume: Checkpoint | None = None) -> None:
        """``resume``: go on from a checkpoint (everything stored by its time is behind), not the start."""
        self._rec = recording
        self._on_health = on_health
        self._store = store
        self._settings = settings
        start = None if resume is None else resume.at
        self._scrapes: Iterator[StoredScrape] = recording.scrapes(start)
        self._health_iter = recording.health(start)
        self._next: StoredScrape | None = None
        self._next_health: tuple[str, HealthRecord] | None = None
        self._health: dict[str, TargetHealth] = {} if resume is None else dict(resume.health)
        self.position = -math.inf if start is None else start
        self.last_stored = self.position  # when the last scrape stored was stored
        names = [t.name for t in settings.targets] or recording.targets()
        self._order = list(dict.fromkeys((*names, *recording.targets())))
        # The source's own list of targets over time, when the recording has it (the default above otherwise).
        self._rosters = [r for r in recording.rosters() if start is None or r[0] > start]
        self._roster: tuple[str, ...] | None = None if resume is None else resume.roster
        self._urls = {t.name: t.url for t in settings.targets}
        self._roles = {t.name: t.role for t in settings.targets}

    def advance_to(self, t: float, *, every: int = 0, between: Callable[[], None] | None = None) -> int:
        """Store the scrapes stored in ``(position, t]``; how many. ``between`` runs after about every
        ``every`` scrapes, where every scrape stored by ``last_stored`` (and the health by then) is in."""
        n, due = 0, False
        while True:
            if self._next is None:
                self._next = next(self._scrapes, None)
                if self._next is None:
                    break
            target, stamp, stored_at, samples = self._next
            if stored_at > t:
                break
            if due and stored_at > self.last_stored and between is not None:  # a boundary: all of one time in
                self._advance_health(self.last_stored)
                between()
                due = False
            self._store.ingest(target, stamp, samples)
            self.last_stored = stored_at
            self._next = None
            n += 1
            due = due or bool(every and n % every == 0)
        self._advance_health(t)
        self.position = max(self.position, t)
        return n

    def _advance_health(self, t: float) -> None:
        while True:
            if self._next_health is None:
                self._next_health = next(self._health_iter, None)
                if self._next_health is None:
                    break
            name, record = self._next_health
            if record.at > t:
                break
            self._health[name] = record.health
            if self._on_health is not None:
                self._on_health(record.health, record.at)
            self._next_health = None
        while self._rosters and self._rosters[0][0] <= t:
            self._roster = self._rosters.pop(0)[1]

    def checkpoint(self, evals: EvalLog) -> Checkpoint:
        """What outlives the Store at ``last_stored``, for a later rebuild to go on from."""
        cost = {id(s) for target in self._store.targets() for s in series_of(self._store, target, GPU_SECONDS)}
        points = []
        for target in self._store.targets():
            for s in (s for name in self._store.names(target) for s in self._store.series(target, name)):
                last = s.last()
                if last is None:
                    continue
                span = s.span() if id(s) in cost else None
                points.append((target, s.name, s.labels, last[0], last[1],
                               s.carried + span.resets if span is not None else 0.0))
        return Checkpoint(at=self.last_stored, evals=evals, health=dict(self._health), roster=self._roster,
                          points=tuple(points))

    async def start(self) -> None:
        pass

    async def scrape_once(self) -> None:
        pass

    def health(self) -> tuple[TargetHealth, ...]:
        out = []
        for name in self._roster if self._roster is not None else self._order:
            h = self._health.get(name)
            if h is None:  # not scraped yet at this time, as a live scraper says before its first scrape
                h = TargetHealth(name=name, url=self._urls.get(name, ""), role=self._roles.get(name), up=None)
            out.append(replace(h, series=self._store.series_count(name)))
        return tuple(out)

    def set_interval(self, interval_s: float) -> None:
        pass  # the recording's interval is what it is; the screen's refresh is the app's

    async def aclose(self) -> None:
        pass


def _active(spans: list[AlertSpan], t: float) -> list[Alert]:
    """The recorded alerts firing at ``t``, as the live screen had them (their since)."""
    return [Alert(name=a.name, level=a.level, message=a.message, since=a.start, subject=a.subject)  # type: ignore[arg-type]
            for a in spans if a.start <= t and (a.end is None or t < a.end)]


def _seed(store: Store, resume: Checkpoint) -> None:
    """The checkpoint's last points into an empty Store (one ingest per target and time, in its order),
    with the restarts the GPU-seconds series carry."""
    groups: dict[tuple[str, float], list[Sample]] = {}
    carry: dict[tuple[str, str, tuple[tuple[str, str], ...]], float] = {}
    for target, name, labels, t, value, resets in resume.points:
        groups.setdefault((target, t), []).append(Sample(name, Labels(labels), value))
        if resets:
            carry[(target, name, tuple(labels.items()))] = resets
    for (target, t), samples in groups.items():
        store.ingest(target, t, samples)
    for (target, name, key), resets in carry.items():
        for s in store.series(target, name):
            if tuple(s.labels.items()) == key:
                s.carry(resets)
    _index_counters(store)


def _index_counters(store: Store) -> None:
    """Start the GPU-seconds series' reset index: from then on a restart is counted before its points leave
    the Store, however many scrapes a seek stores at once (spend across restarts needs it)."""
    for target in store.targets():
        for s in series_of(store, target, GPU_SECONDS):
            s.span()


class ReplayFeed:
    """A ``ptmon.monitor.feed.Feed`` over a recording, with the playback controls the replay keys call."""

    def __init__(self, recording: Recording, settings: Settings, *, real: Callable[[], float] = time.monotonic,
                 capacity: int | None = None, rewind: str = "checkpoint") -> None:
        """``rewind``: how a seek back rebuilds: ``checkpoint`` (from the Store's depth before), or ``start``
        (from the start of the recording: the benchmark's baseline)."""
        span = recording.span()
        if span is None:
            raise ValueError(f"{recording.path}: the recording is empty")
        if rewind not in ("checkpoint", "start"):
            raise ValueError(f"rewind must be 'checkpoint' or 'start', got {rewind!r}")
        self.recording = recording
        self.settings = settings
        self._capacity = capacity
        self._rewind_from_checkpoints = rewind == "checkpoint"
        self.playhead = Playhead(*span, real=real)
        self._spans = recording.alerts()
        self._actions = recording.actions()
        self._checkpoints: list[Checkpoint] = []
        self.log = EventLog(settings)
        self._log_health_until = -math.inf  # health records the log has seen (a rebuild meets them again)
        self._log_health_names: set[str] = set()  # the targets whose record at that time it saw
        self._log_alerts_until = -math.inf
        self.rebuilt_from: float | None = None  # where the last seek back rebuilt from (None: the start)
        self._reset(None)

    def _reset(self, resume: Checkpoint | None) -> None:
        kwargs = {"capacity": self._capacity} if self._capacity else {}
        self.store = Store(max_series=self.settings.max_series, max_label_bytes=self.settings.max_label_bytes,
                           keep=is_read, **kwargs)
        self.source = ReplaySource(self.recording, store=self.store, settings=self.settings,
                                   on_health=self._log_health, resume=resume)
        self._evals = EvalLog()
        if resume is not None:
            self._evals = resume.evals
            _seed(self.store, resume)
        self._baseline: Baseline | None = None
        self._alerts: tuple[Alert, ...] = ()

    def _log_health(self, h: TargetHealth, at: float) -> None:
        """A health record to the log, unless a rebuild meets it again (the log saw it on the way)."""
        if at > self._log_health_until:
            self._log_health_until, self._log_health_names = at, set()
        if at == self._log_health_until and h.name not in self._log_health_names:
            self._log_health_names.add(h.name)
            self.log.observe_health((h,), at=at)

    def _depth_s(self) -> float:
        """How far back the Store reaches: its capacity at the longest interval the recording used."""
        intervals = [self.settings.interval_s, *(v for _, kind, v in self._actions if kind == "interval" and v)]
        return self.store.capacity * max(intervals)

    def _rewind(self, t: float) -> None:
        resume = None
        if self._rewind_from_checkpoints:
            i = bisect_right([c.at for c in self._checkpoints], t - self._depth_s())
            resume = self._checkpoints[i - 1] if i else None
        self.rebuilt_from = None if resume is None else resume.at
        self._reset(resume)

    def _observe(self) -> None:
        _index_counters(self.store)
        self._evals = observe_evals(self.store, self.settings, previous=self._evals)
        self.log.observe_store(self.store, until=math.inf, evals=self._evals)

    def _between(self) -> None:
        self._observe()
        at = self.source.last_stored
        # A quarter of the Store's depth apart: a seek back reads at most 1.25 depths of scrapes.
        if not self._checkpoints or at >= self._checkpoints[-1].at + self._depth_s() / 4:
            self._checkpoints.append(self.source.checkpoint(self._evals))

    def _advance(self, t: float) -> None:
        if t < self.source.position:
            self._rewind(t)
        self.source.advance_to(t, every=max(1, self.store.capacity // 4), between=self._between)
        self._observe()

    def now(self) -> float:
        return self.playhead.now()

    @property
    def evals(self) -> EvalLog:
        """Every eval met up to the playhead."""
        return self._evals

    # -- Feed -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        pass

    async def dashboard(self, *, window_s: float) -> Dashboard:
        return self.dashboard_at(self.playhead.now(), window_s=window_s)

    def _as_set_at(self, t: float) -> tuple[Settings, float | None, Baseline | None]:
        """The interval, the rates' restart and the pinned baseline as the person at the live screen had
        set them by ``t`` (a baseline pinned here in the replay wins)."""
        interval, since, pinned = self.settings.interval_s, None, None
        for at, kind, value in self._actions:
            if at > t:
                break
            if kind == "interval" and value is not None and value != interval:
                interval, since = value, at
            elif kind == "baseline":
                pinned = at
        baseline = self._baseline
        if baseline is None and pinned is not None:
            curve = [p for p in self._evals.curve(self.settings.primary_benchmark) if p.timestamp <= pinned]
            if curve:
                baseline = Baseline(score=curve[-1].score, spend_dollars=curve[-1].spend_dollars,
                                    timestamp=curve[-1].timestamp)
        settings = self.settings if interval == self.settings.interval_s else replace(self.settings,
                                                                                       interval_s=interval)
        return settings, since, baseline

    def dashboard_at(self, t: float, *, window_s: float) -> Dashboard:
        """The Dashboard the live screen would have shown at ``t`` over ``window_s``."""
        self._advance(t)
        settings, since, baseline = self._as_set_at(t)
        d = build_dashboard(self.store, self.source.health(), settings, now=t, window_s=window_s,
                            baseline=baseline, evals=self._evals, rates_since=since)
        recorded = _active(self._spans, t)
        keys = {(a.name, a.subject) for a in recorded}
        previous = (*recorded, *(a for a in self._alerts if (a.name, a.subject) not in keys))
        self._alerts = evaluate(d, self.settings.thresholds, previous=previous, marginal_k=self.settings.marginal_k)
        if not self._spans and t >= self._log_alerts_until:  # a recording without alerts: as they come
            self._log_alerts_until = t
            self.log.observe_alerts(self._alerts, now=t)
        return replace(d, alerts=self._alerts)

    def events(self) -> tuple[Event, ...]:
        """The event log up to the playhead: the recorded alerts and what the Store and health show."""
        t = self.source.position
        alerts = [Event(a.start, "alert", a.subject, f"{a.name}: {a.message}", level=a.level, lasting=True,
                        end=a.end if a.end is not None and a.end <= t else None)
                  for a in self._spans if a.start <= t]
        # The log has seen up to the furthest point played: what happened by the playhead, as it stood then.
        seen = [as_of(e, t) for e in self.log.events() if e.at <= t]
        return tuple(sorted((*seen, *alerts), key=lambda e: (e.at, e.kind, e.subject or "")))

    def set_interval(self, interval_s: float) -> None:
        pass

    def set_baseline_now(self) -> None:
        curve = [p for p in self._evals.curve(self.settings.primary_benchmark) if p.timestamp <= self.playhead.now()]
        if curve:
            latest = curve[-1]
            self._baseline = Baseline(score=latest.score, spend_dollars=latest.spend_dollars,
                                      timestamp=latest.timestamp)

    async def aclose(self) -> None:
        self.recording.close()

    # -- playback -----------------------------------------------------------------------------------------

    def moments(self) -> list[float]:
        """Times worth seeking to, in order: every alert's start and end, and every event so far."""
        times = {a.start for a in self._spans} | {a.end for a in self._spans if a.end is not None}
        times.update(e.at for e in self.log.events())
        times.update(e.end for e in self.log.events() if e.end is not None)
        return sorted(times)

    def seek_next(self, direction: int = 1) -> float | None:
        """Jump to the next (or previous) alert or event; None when there is none that way.

        Forward, events not met yet are looked for by playing ahead two intervals at a time; the playhead
        lands where the screen first showed the event (within those two intervals of it).
        """
        now = self.playhead.now()
        if direction < 0:
            target = next((t for t in reversed(self.moments()) if t < now - 1e-6), None)
        else:
            target = next((t for t in self.moments() if t > now + 1e-6), None)
            t = max(now, self.source.position)
            step = 2 * self.settings.interval_s
            while t < self.playhead.end and (target is None or t < target):
                seen = len(self.log.events())
                t = min(self.playhead.end, t + step)
                self._advance(t)
                if len(self.log.events()) > seen and any(e.at > now + 1e-6 for e in self.log.events()):
                    target = t if target is None else min(target, t)
                    break
        if target is not None:
            self.playhead.seek(target)
        return target

    def step(self, direction: int) -> None:
        """One recorded interval forward or back, paused."""
        self.playhead.pause()
        self.playhead.seek(self.playhead.now() + direction * self.settings.interval_s)
