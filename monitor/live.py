"""The live Feed: scrape targets into a Store, build Dashboards, evaluate alerts.

This is where the data layer's state lives, so every piece below it can stay
pure: the Store (ring buffers), the EvalLog (evals outlive the buffers), the
pinned IPD baseline (``set_baseline_now``) and the previous alerts (their
``since``). Dashboards are built on demand from what has been collected;
asking for one never waits on a target.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace

import httpx

from ptmon.monitor.alerts import evaluate
from ptmon.monitor.build import Baseline, EvalLog, build_steps, observe_evals
from ptmon.monitor.dashboard import Alert, Dashboard, TargetHealth, WorkerRow
from ptmon.monitor.detail import ScrapeLog, TargetDetail, build_detail
from ptmon.monitor.evaluated import Evaluated
from ptmon.monitor.reads import is_read
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.slots import SlotMemo
from ptmon.monitor.sources.base import Source
from ptmon.monitor.sources.combined import Sources
from ptmon.monitor.sources.files import FileSource, file_targets
from ptmon.monitor.sources.prometheus import PrometheusSource
from ptmon.monitor.sources.scrape import Scraper
from ptmon.monitor.store import Store

__all__ = ["LiveFeed"]

# The longest the build runs before it lets the event loop go (scrapes waiting on their sockets and timers):
# at 64 targets of 1,000 series a build takes hundreds of ms, which held every scrape up and timed some out.
# Small fleets never reach it, so their builds run in one go, as before.
YIELD_AFTER_S = 0.02
_DETAIL_KEPT = 3  # Dashboards a detail is still built with after it was last asked for (the screen asks each second)


class LiveFeed:
    """A ``ptmon.monitor.feed.Feed`` over direct scrapes of ``settings.targets``, or over ``settings.prometheus``.

    ``clock`` stamps scrapes and sets the Dashboard's now; ``transport``
    replaces the HTTP transport (tests); ``store`` lets a caller share or
    pre-fill the store; ``evals`` the evals seen before (``ptmon watch --record`` on an existing recording).
    ``settle_heap``: once every target has been polled, freeze what is on the heap (``gc.freeze``) for a
    long-running monitor (``ptmon watch``, the demo): the store's series and the parser's caches live as
    long as the process, and every full collection walked them all again, holding the event loop (and each
    scrape waiting on it) for tens of ms per 100,000 series.
    """

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time,
                 transport: httpx.AsyncBaseTransport | None = None, store: Store | None = None,
                 evals: EvalLog | None = None, settle_heap: bool = False) -> None:
        self._settings = settings
        self._unsettled = settle_heap  # the heap is still to be frozen, once every target has been polled
        self._clock = clock
        # The store's default depth (3600 points: an hour at 1 s) bounds memory at about 9 bytes a
        # point (a float64 value column plus slack, the target's scrape times shared, as
        # tests/bench/bench_store.py measures; 17 for a series with timestamps of its own); at faster
        # intervals the longest window shows what fits, and rates use the span held.
        self.store = store if store is not None else Store(max_series=settings.max_series,
                                                           max_label_bytes=settings.max_label_bytes, keep=is_read)
        # Either source fills the same store with the same samples; nothing below here can tell which.
        self._scraper: Source
        self._prometheus: PrometheusSource | None = None
        self._endpoints: Scraper | None = None  # the direct scraper, which holds the unread series' latest
        if settings.prometheus is not None:
            self._scraper = self._prometheus = PrometheusSource.from_settings(
                settings, store=self.store, transport=transport, clock=clock)
        else:
            self._endpoints = Scraper.from_settings(replace(settings, targets=_endpoints(settings)), store=self.store,
                                                    transport=transport, clock=clock)
            self._scraper = _direct(settings, self._endpoints, store=self.store, clock=clock)
        # ``evals``: the run's evals from before this monitor started (a recording's), to go on from.
        self._evals = evals if evals is not None else EvalLog()
        self._baseline: Baseline | None = None
        self._alerts: tuple[Alert, ...] = ()
        self._rates_since: float | None = None  # the last interval change: rates start there
        self._slot_memo = SlotMemo()  # the rate chart's settled slots, read again by the next build
        self._scrapes = ScrapeLog()  # each target's attempts as health showed them (the detail's history)
        # The details a screen shows, built with each Dashboard (same store state, health and now, so the two
        # agree), for as long as it asks: (name, window) -> Dashboards left before it is no longer built.
        self._watched: dict[tuple[str, float], int] = {}
        self._details: dict[tuple[str, float], TargetDetail | None] = {}

    @property
    def settings(self) -> Settings:
        return self._settings

    async def start(self) -> None:
        await self._scraper.start()

    async def collect_once(self) -> None:
        """Scrape every target once, now, and return when the samples are stored."""
        await self._scraper.scrape_once()

    @property
    def evals(self) -> EvalLog:
        """Every eval observed so far (the event log lists them)."""
        return self._evals

    def health(self) -> tuple[TargetHealth, ...]:
        """Each target's health as the source last saw it (what a recorder keeps beside the samples)."""
        return self._scraper.health()

    async def dashboard(self, *, window_s: float) -> Dashboard:
        settings = self._settings
        self._evals = observe_evals(self.store, settings, previous=self._evals)
        health, now = self._scraper.health(), self._clock()
        self._scrapes.observe(health)
        if self._unsettled and all(h.last_scrape is not None for h in health):
            self._unsettled = False
            _freeze_heap()
        d = await _yielding(build_steps(self.store, health, settings, now=now, window_s=window_s,
                                        baseline=self._baseline, evals=self._evals,
                                        evaluated=self._evaluated(window_s), rates_since=self._rates_since,
                                        slot_memo=self._slot_memo))
        self._alerts = evaluate(d, settings.thresholds, previous=self._alerts, marginal_k=settings.marginal_k)
        rows = {w.name: w for w in d.workers}
        self._details = {(name, ws): self._build_detail(name, ws, health, now, rows.get(name))
                         for name, ws in self._watched}
        self._watched = {key: left - 1 for key, left in self._watched.items() if left > 1}
        return replace(d, alerts=self._alerts)

    def detail(self, name: str, *, window_s: float, worker: WorkerRow | None = None) -> TargetDetail | None:
        """One target in detail (``ptmon.monitor.detail``): as built with the last Dashboard once asked for
        (so it agrees with that Dashboard, its worker row included), else now (``worker``: its row)."""
        key = (name, float(window_s))
        self._watched[key] = _DETAIL_KEPT
        if key in self._details:
            return self._details[key]
        return self._build_detail(name, window_s, self._scraper.health(), self._clock(), worker)

    def _build_detail(self, name: str, window_s: float, health: Sequence[TargetHealth], now: float,
                      worker: WorkerRow | None) -> TargetDetail | None:
        unread = self._endpoints.unread(name) if self._endpoints is not None else ()
        return build_detail(self.store, health, self._settings, name=name, now=now, window_s=window_s,
                            scrapes=self._scrapes.of(name), worker=worker, rates_since=self._rates_since,
                            unread=unread)

    def _evaluated(self, window_s: float) -> Evaluated | None:
        """The Prometheus server's last answers, an input of the build (which prefers them where they are
        for this window and fresh); this window is asked for from the next poll."""
        if self._prometheus is None:
            return None
        self._prometheus.set_window(window_s)
        return self._prometheus.evaluated()

    def set_interval(self, interval_s: float) -> None:
        if float(interval_s) != self._settings.interval_s:
            # Rates restart at the change, as for a fresh monitor: PromQL's extrapolation over samples of two
            # spacings reads 30-40% low for a whole window.
            self._rates_since = self._clock()
        self._scraper.set_interval(interval_s)
        self._settings = replace(self._settings, interval_s=float(interval_s))

    def set_baseline_now(self) -> None:
        """Pin the latest eval of the primary benchmark as the IPD baseline (no eval yet: no change)."""
        self._evals = observe_evals(self.store, self._settings, previous=self._evals)
        curve = self._evals.curve(self._settings.primary_benchmark)
        if curve:
            latest = curve[-1]
            self._baseline = Baseline(score=latest.score, spend_dollars=latest.spend_dollars,
                                      timestamp=latest.timestamp)

    async def aclose(self) -> None:
        await self._scraper.aclose()


async def _yielding(steps: Generator[None, None, Dashboard]) -> Dashboard:
    """Run the build's steps, giving the event loop a turn whenever ``YIELD_AFTER_S`` has gone by since the
    last one. A scrape stored in between carries a later time than the build's ``now``: it lies outside
    every window (rates, increases, quantiles, the chart); only a latest-value read of a later section (a
    gauge's last value) can see it, one scrape newer than an earlier section's. Builds of small fleets
    never reach the budget and see one store state, as before."""
    clock = time.perf_counter
    since = clock()
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if clock() - since >= YIELD_AFTER_S:
            await asyncio.sleep(0)
            since = clock()


def _freeze_heap() -> None:
    """Collect what is garbage now, then move every surviving object out of the collector's reach: they
    are the monitor's long-lived state, and later collections need only look at what is new."""
    gc.collect()
    gc.freeze()


def _endpoints(settings: Settings) -> tuple[Target, ...]:
    return tuple(t for t in settings.targets if t.path is None)


def _direct(settings: Settings, scraper: Scraper, *, store: Store, clock: Callable[[], float]) -> Source:
    """The endpoints scraped (``scraper``) and the metrics files tailed (``Target.path``), one source for both."""
    files = file_targets(settings.targets)
    if not files:
        return scraper
    tails = FileSource.from_settings(settings, store=store, clock=clock)
    return Sources((scraper, tails), names=[t.name for t in settings.targets]) if _endpoints(settings) else tails
