"""``ptmon watch --record`` and ``ptmon record``: a Feed that records what the feed under it collects.

A decorator, not a new source: the LiveFeed scrapes (or reads Prometheus)
into a ``TappedStore`` exactly as without recording; this adds the targets'
health (read a few times per interval, kept when it changed) and the alerts
of every Dashboard it passes on. The screen cannot tell it is there.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.evals import EvalLog
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.reads import is_read
from ptmon.monitor.recording.history import History, load_history
from ptmon.monitor.recording.meta import settings_to_json
from ptmon.monitor.recording.writer import Recorder, TappedStore
from ptmon.monitor.settings import Settings

__all__ = ["RecordingFeed", "recording_feed"]

_HEALTH_PER_INTERVAL = 4


class RecordingFeed:
    """A ``ptmon.monitor.feed.Feed``: ``feed``'s Dashboards, with ``recorder`` fed on the way."""

    def __init__(self, feed: LiveFeed, recorder: Recorder, *, history: History | None = None) -> None:
        self.feed = feed
        self.recorder = recorder
        self.history = history  # what the file held of the run before this monitor started
        self._task: asyncio.Task[None] | None = None

    @property
    def settings(self) -> Settings:
        return self.feed.settings

    @property
    def evals(self) -> EvalLog:
        return self.feed.evals

    @property
    def store(self) -> TappedStore:
        store = self.feed.store
        assert isinstance(store, TappedStore)
        return store

    async def start(self) -> None:
        await self.feed.start()
        if self._task is None:
            self._task = asyncio.create_task(self._watch_health(), name="ptmon-record-health")

    async def _watch_health(self) -> None:
        while True:
            self.recorder.observe_health(self.feed.health())
            await asyncio.sleep(self.feed.settings.interval_s / _HEALTH_PER_INTERVAL)

    async def collect_once(self) -> None:
        await self.feed.collect_once()
        self.recorder.observe_health(self.feed.health())

    async def dashboard(self, *, window_s: float) -> Dashboard:
        d = await self.feed.dashboard(window_s=window_s)
        self.recorder.observe_health(self.feed.health())  # the source's list (the Dashboard may add to it)
        self.recorder.observe_alerts(d.alerts, now=d.now)
        return d

    def detail(self, name: str, **options: Any) -> Any:
        """The live feed's detail of one target (``LiveFeed.detail``)."""
        return self.feed.detail(name, **options)

    def set_interval(self, interval_s: float) -> None:
        self.feed.set_interval(interval_s)
        self.recorder.observe_action("interval", float(interval_s))

    def set_baseline_now(self) -> None:
        self.feed.set_baseline_now()
        self.recorder.observe_action("baseline")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            await self.feed.aclose()
            self.recorder.observe_health(self.feed.health())
        finally:
            await asyncio.to_thread(self.recorder.close)


def recording_feed(settings: Settings, path: str, *, retention_s: float | None = None, history: bool = True,
                   **feed_kwargs: Any) -> RecordingFeed:
    """A LiveFeed on ``settings`` recording into ``path`` (locked and opened here: RecordingError if it can't).

    ``history``: when the file already holds the run, the feed starts with its evals (and the events so far).
    """
    clock = feed_kwargs.get("clock")
    recorder = Recorder(path, settings_json=settings_to_json(settings), retention_s=retention_s,
                        **({"clock": clock} if clock is not None else {})).open()
    try:
        past = load_history(path, settings) if history else None
    except BaseException:
        recorder.close()
        raise
    store = TappedStore(recorder, max_series=settings.max_series, max_label_bytes=settings.max_label_bytes,
                        keep=is_read)
    feed = LiveFeed(settings, store=store, evals=past.evals if past else None, **feed_kwargs)
    return RecordingFeed(feed, recorder, history=past)
