"""A monitor restarted mid-run with its recording: the eval curve from the run's first eval, not from its start."""

from __future__ import annotations

from typing import Any

from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.app import PtmonApp
from ptmon.monitor.events import EventsFeed
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.recording.feed import recording_feed
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.widgets.events import EventsScreen
from tests.monitor.helpers import T0, Clock
from tests.monitor.screen import screen_text


class _Run:
    """A trainer, a worker and an eval job on loopback, driven round by round by one clock."""

    def __init__(self) -> None:
        self.clock = Clock(T0)
        ident: dict[str, Any] = dict(run="run-h", model="m", algorithm="grpo")
        self.trainer = TrainerExporter(**ident, gpus=8, gpu_hour_price=3.0, clock=self.clock, wall_clock=self.clock)
        self.worker = RolloutExporter(**ident, gpus=2, gpu_hour_price=2.0, clock=self.clock)
        self.evals = EvalExporter(**ident, gpus=1, gpu_hour_price=3.0, clock=self.clock)
        self.servers = {n: serve(e.registry) for n, e in (("trainer", self.trainer), ("w", self.worker),
                                                          ("eval", self.evals))}
        self.settings = Settings(targets=tuple(Target(name=n, url=s.url) for n, s in self.servers.items()),
                                 interval_s=5.0, timeout_s=2.0, window_s=60.0)

    async def rounds(self, feed, first: int, last: int):
        d = None
        for i in range(first, last):
            self.clock.t = T0 + 5 * i
            with self.trainer.step():
                pass
            self.worker.record_rollout(env="math", tokens=50, reward=0.5, seconds=1.0, policy_version=0)
            if i % 10 == 5:
                self.evals.record_eval(benchmark="gsm8k", score=0.3 + 0.01 * i, policy_version=i, samples=100)
            await feed.collect_once()
            d = await feed.dashboard(window_s=60.0)
        return d

    def close(self) -> None:
        for s in self.servers.values():
            s.close()


async def test_a_restarted_monitor_shows_the_eval_curve_from_the_first_eval(tmp_path):
    path = tmp_path / "run.rec"
    run = _Run()
    try:
        first = recording_feed(run.settings, str(path), clock=run.clock)
        before = await run.rounds(first, 0, 30)  # evals at rounds 5, 15, 25
        await first.aclose()
        assert [p.timestamp for p in before.eval_curve] == [T0 + 5 * i for i in (5, 15, 25)]

        # The monitor restarts at round 32 (the run went on meanwhile) with the same recording ...
        run.clock.t = T0 + 5 * 31
        again = recording_feed(run.settings, str(path), clock=run.clock)
        after = await run.rounds(again, 32, 50)  # ... and sees the evals of rounds 35 and 45 itself
        await again.aclose()
        # ... while one without the recording starts its curve at its own first look (round 32's reading
        # of the round-25 score counts as its first eval).
        fresh = LiveFeed(run.settings, clock=run.clock)
        run.clock.t = T0 + 5 * 32
        await fresh.collect_once()
        alone = await fresh.dashboard(window_s=60.0)
        await fresh.aclose()
    finally:
        run.close()
    assert [p.timestamp for p in after.eval_curve] == [T0 + 5 * i for i in (5, 15, 25, 35, 45)]
    assert [p.score for p in after.eval_curve] == [0.3 + 0.01 * i for i in (5, 15, 25, 35, 45)]
    assert after.eval_curve[:3] == before.eval_curve  # placed at the same spend as the first monitor saw
    assert after.baseline_score == 0.35  # IPD over the whole run, from its first eval
    assert [p.timestamp for p in alone.eval_curve] == [T0 + 5 * 32]


async def test_the_restarted_tui_and_its_event_log(tmp_path):
    path = tmp_path / "run.rec"
    run = _Run()
    try:
        first = recording_feed(run.settings, str(path), clock=run.clock)
        await run.rounds(first, 0, 20)
        await first.aclose()
        run.clock.t = T0 + 5 * 21
        recording = recording_feed(run.settings, str(path), clock=run.clock)
        feed = EventsFeed(recording, past=recording.history.events if recording.history else ())
        await run.rounds(feed, 21, 30)
        app = PtmonApp(feed, interval_s=5.0, window_s=60.0, clock=run.clock)
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(200):
                await pilot.pause(0.02)
                if app.dashboard is not None:
                    break
            assert [p.timestamp for p in app.dashboard.eval_curve] == [T0 + 5 * i for i in (5, 15, 25)]
            await pilot.press("e")
            await pilot.pause(0.1)
            assert isinstance(app.screen, EventsScreen)
            text = screen_text(app)
            assert "event log" in text
            assert text.count("gsm8k 0.") >= 3  # the evals before the restart are in the log
            await pilot.press("e")
            await pilot.pause(0.05)
            assert not isinstance(app.screen, EventsScreen)
    finally:
        run.close()
