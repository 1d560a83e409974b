"""One target (or rollout worker) in detail: what the Enter screen shows, built from the store and health.

The Dashboard holds a row per target; a person chasing one slow or dead
worker wants more: its numbers per env, how its rollouts ended, when it
failed and why, every series it exposes with its current value, and how its
scrapes went over time. ``build_detail`` is a pure function of the stored
points, the health reports and an explicit ``now``/window (like
``build_dashboard``), so the screen never reads the store and the tests get
the same numbers for the same data.

The scrape history is the one thing the store does not keep (it stores
good scrapes only): ``ScrapeLog`` records each attempt the health reports
show (each distinct ``last_scrape``), outcome, reason and data age, as the
feed asks for them once a refresh. Attempts between two refreshes are not
seen (the feed refreshes at the scrape interval, so that is rare); the
window's count of good scrapes comes from the store, whose count is exact.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ptmon.exporters import schema
from ptmon.monitor import exposed
from ptmon.monitor.dashboard import TargetHealth, WorkerRow
from ptmon.monitor.derive import span_counter_total
from ptmon.monitor.parse import Sample
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Series, Store
from ptmon.monitor.targets import known_targets
from ptmon.monitor.window import Window, finite

__all__ = ["ScrapeRecord", "ScrapeLog", "EnvRow", "OutcomeCount", "ErrorEvent", "RawSeries", "TargetDetail",
           "build_detail", "detail_from_health", "MAX_SERIES_SHOWN", "MAX_ERRORS_SHOWN"]

MAX_SERIES_SHOWN = 400  # a target flooding series shows the first this many (and says how many more)
MAX_ERRORS_SHOWN = 50  # the newest this many error events
_KEEP_SCRAPES = 600  # per target: ten minutes at 1 s


@dataclass(frozen=True, slots=True)
class ScrapeRecord:
    """One scrape attempt as the health report showed it."""

    at: float  # when the attempt ended
    ok: bool
    seconds: float | None = None
    error: str | None = None  # raw text from the peer: render literally
    samples: int = 0
    age_s: float | None = None  # the target's data age then (at - last good scrape); None: never good yet


class ScrapeLog:
    """Each target's recent scrape attempts, newest last, at most ``keep`` per target. One event loop owns it.

    Held as plain tuples, made ``ScrapeRecord``s when asked for (the detail of one target): a tuple of
    numbers and strings is dropped from the garbage collector's lists at its first collection, where a
    record object stays on them. 600 a target are kept, so at 256 targets the records made the young
    collections promote, and every full collection walk, 154,000 more objects by minute 10.
    """

    def __init__(self, *, keep: int = _KEEP_SCRAPES) -> None:
        self._keep = keep
        self._by_target: dict[str, deque[tuple[float, bool, float | None, str | None, int, float | None]]] = {}

    def observe(self, health: Iterable[TargetHealth]) -> None:
        """Record each target's last attempt if it is one not seen yet."""
        for h in health:
            if h.last_scrape is None:
                continue
            log = self._by_target.setdefault(h.name, deque(maxlen=self._keep))
            if log and log[-1][0] >= h.last_scrape:
                continue
            age = None if h.last_success is None else max(0.0, h.last_scrape - h.last_success)
            # In ScrapeRecord's field order; an exact tuple, so the collector can untrack it.
            log.append((h.last_scrape, h.up is True, h.scrape_seconds, h.error, h.samples, age))

    def of(self, name: str) -> tuple[ScrapeRecord, ...]:
        return tuple(ScrapeRecord(*fields) for fields in self._by_target.get(name, ()))


@dataclass(frozen=True, slots=True)
class EnvRow:
    """One env's numbers on this target over the window; rates are None when down (as in the worker row)."""

    env: str  # raw label value: render literally ("" when the series carry no env label)
    rollouts_per_s: float | None
    tokens_per_s: float | None
    errors_per_s: float | None
    mean_reward: float | None
    rollouts: float | None  # finished in the window (every outcome)


@dataclass(frozen=True, slots=True)
class OutcomeCount:
    outcome: str  # raw label value
    in_window: float | None  # rollouts that ended so in the window
    total: float | None  # since the process started, across restarts the store holds


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    at: float
    what: str  # may hold scraped text (a label value, a peer's error): render literally
    count: float | None = None  # how many at once (a counter's step); None: a failed scrape


@dataclass(frozen=True, slots=True)
class RawSeries:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    at: float  # the sample's time


@dataclass(frozen=True, slots=True)
class TargetDetail:
    """Everything the detail screen shows of one target at ``now`` over ``(now - window_s, now]``."""

    name: str
    now: float
    window_s: float
    health: TargetHealth
    worker: WorkerRow | None = None  # the Dashboard's row, when the target is a rollout worker
    envs: tuple[EnvRow, ...] = ()
    outcomes: tuple[OutcomeCount, ...] = ()
    errors: tuple[ErrorEvent, ...] = ()  # newest last
    series: tuple[RawSeries, ...] = ()  # by name, then labels
    series_total: int = 0  # every series stored (``series`` may show fewer)
    scrapes: tuple[ScrapeRecord, ...] = ()  # the attempts seen, oldest first
    good_scrapes_in_window: int = 0  # from the store: every good scrape, seen or not

    @property
    def failed_scrapes_in_window(self) -> int:
        return sum(1 for r in self.scrapes if not r.ok and r.at > self.now - self.window_s)

    @property
    def last_failure(self) -> ScrapeRecord | None:
        return next((r for r in reversed(self.scrapes) if not r.ok), None)


def detail_from_health(health: TargetHealth, *, now: float, window_s: float, worker: WorkerRow | None = None,
                       scrapes: Sequence[ScrapeRecord] = ()) -> TargetDetail:
    """A detail of what the Dashboard alone says (a feed with no store, a replay): health and its row."""
    return TargetDetail(name=health.name, now=now, window_s=window_s, health=health, worker=worker,
                        scrapes=tuple(scrapes), errors=_scrape_errors(scrapes, now - window_s))


def build_detail(store: Store, health: Sequence[TargetHealth], settings: Settings, *, name: str, now: float,
                 window_s: float, scrapes: Sequence[ScrapeRecord] = (), worker: WorkerRow | None = None,
                 rates_since: float | None = None, unread: Sequence[Sample] = ()) -> TargetDetail | None:
    """``name``'s detail, None when no health report nor data speaks of it.

    ``unread``: the target's latest samples the store was not handed (a scraper that skips unread names,
    ``Scraper.unread``), listed among the raw series as the store's own.

    Rates follow the build's rules (``Window``: PromQL's rate, cut to where this monitor's data on the
    target begins and to ``rates_since``), so an env's rates add up to the worker row's.
    """
    known = {t.name: t for t in known_targets(store, health, settings)}
    target = known.get(name)
    if target is None:
        return None
    firsts = store.scrape_times(name)
    begin = max(firsts[0] - settings.interval_s / 2, -math.inf if rates_since is None else rates_since) \
        if firsts else None
    w = Window(now - window_s, now, coverage={name: begin} if begin is not None else None)
    rollouts = _series(store, name, exposed.ROLLOUTS)
    series, total = _raw_series(store, name, unread)
    counted = _Counted(w, firsts[0] if firsts else None)
    return TargetDetail(
        name=name, now=now, window_s=window_s, health=target.health, worker=worker,
        envs=_env_rows(store, name, w, rollouts, counted, down=target.down),
        outcomes=_outcomes(rollouts, counted),
        errors=_errors(store, name, counted, scrapes),
        series=series, series_total=total, scrapes=tuple(scrapes),
        good_scrapes_in_window=sum(1 for t in firsts if now - window_s < t <= now),
    )


class _Counted:
    """Whole counts in the window, a counter born in it included.

    prometheus_client creates a labelled child on its first ``inc``, so a series that first appears after
    the target's first scrape (the first error of an env) was born by its first step: that step counts
    from zero. PromQL's increase() would miss it; a person reading "1 error" in the list would not.
    """

    def __init__(self, w: Window, first_scrape: float | None) -> None:
        self.w = w
        self._first = first_scrape

    def points(self, s: Series) -> list[tuple[float, float]]:
        """The window's points, led by a zero when the series was born inside the window."""
        pts = self.w.pts(s)
        whole = s.span()
        born = whole is not None and self._first is not None and whole.first_t > self._first
        if pts and born and whole is not None and pts[0][0] == whole.first_t:
            return [(math.nan, 0.0), *pts]
        return pts

    def total(self, series: Iterable[Series]) -> float | None:
        steps = [n for s in series for _, n in _steps(self.points(s))]
        known = [s for s in series if len(self.points(s)) >= 2]
        return float(sum(steps)) if steps or known else None


def _series(store: Store, target: str, names: Iterable[str]) -> list[Series]:
    return [s for n in names for s in store.series(target, n)]


def _by_label(series: Iterable[Series], label: str) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = {}
    for s in series:
        out.setdefault(s.labels.get(label, ""), []).append(s)
    return out


def _env_rows(store: Store, name: str, w: Window, rollouts: list[Series], counted: _Counted, *,
              down: bool) -> tuple[EnvRow, ...]:
    tokens = _by_label(_series(store, name, exposed.ROLLOUT_TOKENS), schema.LABEL_ENV)
    by_env = _by_label(rollouts, schema.LABEL_ENV)
    rows = []
    for env in sorted(set(by_env) | set(tokens)):
        series = by_env.get(env, [])
        errors = [s for s in series if s.labels.get(schema.LABEL_OUTCOME) == schema.OUTCOME_ERROR]
        rate = finite(w.rate_sum(name, series))
        rows.append(EnvRow(
            env=env,
            rollouts_per_s=None if down else rate,
            tokens_per_s=None if down else finite(w.rate_sum(name, tokens.get(env, []))),
            errors_per_s=None if down else (finite(w.rate_sum(name, errors)) if errors else
                                            (0.0 if rate is not None else None)),
            mean_reward=_mean_reward(store, name, w, env),
            rollouts=finite(counted.total(series)),
        ))
    return tuple(rows)


def _mean_reward(store: Store, name: str, w: Window, env: str) -> float | None:
    """Mean reward of the env's rollouts in the window: Δ(positive − negative) or Δsum over Δcount."""
    def of_env(names: Iterable[str]) -> list[Series]:
        return [s for s in _series(store, name, names) if s.labels.get(schema.LABEL_ENV, "") == env]

    count = w.raw_increase_sum(of_env((schema.ROLLOUT_REWARD.count,)))
    if not count:
        return None
    positive = w.raw_increase_sum(of_env(exposed.exposed_names(schema.ROLLOUT_REWARD_POSITIVE)))
    negative = w.raw_increase_sum(of_env(exposed.exposed_names(schema.ROLLOUT_REWARD_NEGATIVE)))
    if positive is not None and negative is not None:
        return finite((positive - negative) / count)
    total = w.raw_increase_sum(of_env((schema.ROLLOUT_REWARD.sum,)))
    return None if total is None else finite(total / count)


def _outcomes(rollouts: list[Series], counted: _Counted) -> tuple[OutcomeCount, ...]:
    rows = []
    for outcome, series in sorted(_by_label(rollouts, schema.LABEL_OUTCOME).items()):
        totals = [t + s.carried for s in series if (t := span_counter_total(s.span())) is not None]
        rows.append(OutcomeCount(outcome=outcome, in_window=finite(counted.total(series)),
                                 total=finite(sum(totals)) if totals else None))
    return tuple(rows)


def _error_counters(store: Store, name: str) -> list[tuple[str, Series]]:
    """(what a step of it means, series) of each counter of ``name`` that counts something going wrong."""
    out = [(f"rollout error ({_env_of(s)})" if _env_of(s) else "rollout error", s)
           for s in _series(store, name, exposed.ROLLOUTS)
           if s.labels.get(schema.LABEL_OUTCOME) == schema.OUTCOME_ERROR]
    out += [("weight sync failed", s) for s in _series(store, name, exposed.SYNC_FAILURES)]
    out += [(f"exporter dropped a value ({s.labels.get(schema.LABEL_CALL, '?')})", s)
            for s in _series(store, name, exposed.exposed_names(schema.EXPORTER_ERRORS))]
    return out


def _env_of(s: Series) -> str:
    return s.labels.get(schema.LABEL_ENV, "")


def _steps(points: Sequence[tuple[float, float]]) -> Iterable[tuple[float, float]]:
    """(time, how much) of each step up of a counter; after a drop (a restart) it counts from zero."""
    for (_, a), (t, b) in zip(points, points[1:], strict=False):
        n = b - a if b >= a else b
        if n > 0 and math.isfinite(n):
            yield t, n


def _scrape_errors(scrapes: Sequence[ScrapeRecord], start: float) -> tuple[ErrorEvent, ...]:
    return tuple(ErrorEvent(r.at, f"scrape failed: {r.error or 'no reason given'}")
                 for r in scrapes if not r.ok and r.at > start)


def _errors(store: Store, name: str, counted: _Counted, scrapes: Sequence[ScrapeRecord]
            ) -> tuple[ErrorEvent, ...]:
    """Failed scrapes and each step of an error counter in the window (a newborn's first too), newest last."""
    events = list(_scrape_errors(scrapes, counted.w.start))
    for what, s in _error_counters(store, name):
        events += [ErrorEvent(t, what, n) for t, n in _steps(counted.points(s))]
    events.sort(key=lambda e: e.at)
    return tuple(events[-MAX_ERRORS_SHOWN:])


def _raw_series(store: Store, name: str, unread: Sequence[Sample] = ()) -> tuple[tuple[RawSeries, ...], int]:
    """Every series with its latest value (a NaN shown as such: it is what the target sent), by name;
    ``unread``'s too (a series the store also holds is listed once, as the store has it)."""
    rows = [RawSeries(s.name, tuple(sorted(s.labels.items())), s.value,
                      s.timestamp if s.timestamp is not None else math.nan)
            for s in unread if not any(x.labels == s.labels for x in store.series(name, s.name))]
    extra = len(rows)
    for metric in sorted(store.names(name)):
        for s in store.series(name, metric):
            last = s.last()
            if last is not None:
                rows.append(RawSeries(metric, tuple(sorted(s.labels.items())), last[1], last[0]))
    rows.sort(key=lambda r: (r.name, r.labels))
    return tuple(rows[:MAX_SERIES_SHOWN]), store.series_count(name) + extra
