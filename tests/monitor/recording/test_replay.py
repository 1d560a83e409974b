"""Replay shows what the live screen showed: every Dashboard field, alerts and their since included.

Real exporters on loopback scraped by a real LiveFeed that records (the path of ``ptmon watch --record``),
one injected clock driving both sides; a worker dies and comes back on the same port. Then a ReplayFeed on
the file must give, at each of those moments, the Dashboard the live feed gave, field for field.
"""

from __future__ import annotations

import math

import pytest

from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.recording.commands import open_replay
from ptmon.monitor.recording.feed import recording_feed
from ptmon.monitor.recording.replay import Playhead, ReplayFeed
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.snapshot import to_json
from tests.monitor.helpers import T0, Clock

ROUNDS = 40
DOWN = range(15, 22)  # rounds during which w2 is gone


async def _live_run(path):
    clock = Clock(T0)
    ident = dict(run="run-9", model="m", algorithm="grpo")
    trainer = TrainerExporter(**ident, gpus=8, gpu_hour_price=3.0, clock=clock, wall_clock=clock)
    w1 = RolloutExporter(**ident, gpus=2, gpu_hour_price=2.0, clock=clock)
    ev = EvalExporter(**ident, gpus=1, gpu_hour_price=3.0, clock=clock)
    servers = {"trainer": serve(trainer.registry), "w1": serve(w1.registry), "eval": serve(ev.registry)}
    w2 = RolloutExporter(**ident, gpus=2, gpu_hour_price=2.0, clock=clock)
    w2_server = serve(w2.registry)
    port = w2_server.port
    targets = (*(Target(name=n, url=s.url) for n, s in servers.items()), Target(name="w2", url=w2_server.url))
    settings = Settings(targets=targets, interval_s=5.0, timeout_s=2.0, window_s=60.0)
    feed = recording_feed(settings, str(path), clock=clock)
    shown = {}
    try:
        for i in range(ROUNDS):
            clock.t = T0 + 5 * i
            with trainer.step():
                pass
            trainer.record(tokens=1000, loss=0.5)
            if i % 4 == 0:
                with trainer.weight_sync(version=i // 4 + 1, nbytes=1e9):
                    clock.t += 45.0 if i == 8 else 1.0  # one slow sync
                clock.t = T0 + 5 * i
            for _ in range(10 + i % 3):
                w1.record_rollout(env="math", tokens=50, reward=0.5, seconds=1.0, policy_version=i // 4)
            if i == DOWN.start:
                w2_server.close()
            if i == DOWN.stop:  # back, restarted: a fresh process, counters from zero
                w2 = RolloutExporter(**ident, gpus=2, gpu_hour_price=2.0, clock=clock)
                w2_server = serve(w2.registry, port=port)
            if i not in DOWN:
                w2.record_rollout(env="code", tokens=80, reward=0.1, seconds=2.0, policy_version=i // 4)
            if i % 10 == 5:
                ev.record_eval(benchmark="gsm8k", score=0.3 + 0.01 * i, policy_version=i // 4, samples=100)
            await feed.collect_once()
            if i == 27:  # the person at the screen presses + (rates restart there) and, later, b
                feed.set_interval(10.0)
            if i == 33:
                feed.set_baseline_now()
            d = await feed.dashboard(window_s=60.0)
            shown[d.now] = d
    finally:
        await feed.aclose()
        for s in (*servers.values(), w2_server):
            s.close()
    return shown


async def test_replay_gives_every_dashboard_the_live_feed_gave(tmp_path):
    path = tmp_path / "run.rec"
    shown = await _live_run(path)
    assert any(a.name == "target_down" for d in shown.values() for a in d.alerts)  # the run did what it should
    assert shown[T0 + 5 * 33].baseline_score != shown[T0 + 5 * 32].baseline_score  # b moved the baseline
    assert shown[T0 + 5 * 28].interval_s == 10.0
    feed = open_replay(str(path))
    try:
        for t, live in shown.items():
            assert to_json(feed.dashboard_at(t, window_s=60.0)) == to_json(live), t
        # Backwards (the Store is rebuilt from the start) and a single jump to a moment: the same again.
        for t in (T0 + 5 * 18, T0 + 5 * 3, T0 + 5 * 39):
            assert to_json(feed.dashboard_at(t, window_s=60.0)) == to_json(shown[t])
    finally:
        await feed.aclose()
    alone = open_replay(str(path), at=f"{T0 + 5 * 20}")
    try:
        assert to_json(await alone.dashboard(window_s=60.0)) == to_json(shown[T0 + 5 * 20])
    finally:
        await alone.aclose()


async def test_the_event_log_lists_the_down_the_restart_the_slow_sync_and_evals(tmp_path):
    path = tmp_path / "run.rec"
    await _live_run(path)
    feed = open_replay(str(path), at="end")
    try:
        feed.dashboard_at(feed.playhead.end, window_s=60.0)
        events = feed.events()
    finally:
        await feed.aclose()
    assert [e.at for e in events] == sorted(e.at for e in events)
    down = [e for e in events if e.kind == "target_down"]
    assert [(e.subject, e.at, e.end, e.duration(0.0)) for e in down] == [
        ("w2", T0 + 5 * DOWN.start, T0 + 5 * DOWN.stop, 5.0 * len(DOWN))]
    alert = [e for e in events if e.kind == "alert" and e.subject == "w2"]
    assert [(e.at, e.end) for e in alert] == [(T0 + 5 * DOWN.start, T0 + 5 * DOWN.stop)]
    restarts = [e for e in events if e.kind == "restart"]
    assert [(e.subject, e.at) for e in restarts] == [("w2", T0 + 5 * DOWN.stop)]
    slow = [e for e in events if e.kind == "sync_slow"]
    assert [(e.subject, e.at) for e in slow] == [("trainer", T0 + 5 * 8)] and "45" in slow[0].message
    evals = [e for e in events if e.kind == "eval"]
    assert [e.at for e in evals] == [T0 + 5 * i for i in (5, 15, 25, 35)]
    policy = [e for e in events if e.kind == "policy"]
    assert [e.message for e in policy] == [f"policy version v{v} published" for v in range(2, 11)]


def test_playhead_moves_at_its_speed_and_stops_at_the_end():
    real = Clock(0.0)
    head = Playhead(100.0, 200.0, real=real)
    assert head.now() == 100.0
    head.play()
    real.t = 10.0
    assert head.now() == 110.0
    head.set_speed(5.0)
    real.t = 12.0
    assert head.now() == 120.0
    head.pause()
    real.t = 50.0
    assert head.now() == 120.0
    head.play()
    real.t = 1000.0
    assert head.now() == 200.0 and not head.playing
    with pytest.raises(ValueError, match="at most 100x"):
        head.set_speed(500.0)
    head.seek(-5.0)
    assert head.now() == 100.0


async def test_seek_to_the_next_event_finds_ones_not_played_yet(tmp_path):
    path = tmp_path / "run.rec"
    await _live_run(path)
    feed = open_replay(str(path))
    try:
        first = feed.seek_next(1)
        assert first is not None and first > feed.playhead.start
        # Past the slow sync at round 8, the next thing is w2 going down at round 15 (policy versions
        # and evals are events too: walk until the down).
        feed.playhead.seek(T0 + 5 * 12)
        seen = []
        while (t := feed.seek_next(1)) is not None and t < T0 + 5 * DOWN.start + 10:
            seen.append(t)
        assert any(T0 + 5 * DOWN.start <= t <= T0 + 5 * DOWN.start + 10 for t in [*seen, t or math.inf])
        back = feed.seek_next(-1)
        assert back is not None and back < (t or math.inf)
    finally:
        await feed.aclose()


async def test_the_replay_is_a_source_and_a_feed_like_the_others(tmp_path):
    from ptmon.monitor.feed import Feed
    from ptmon.monitor.sources.base import Source

    path = tmp_path / "run.rec"
    await _live_run(path)
    feed = open_replay(str(path))
    try:
        assert isinstance(feed, Feed) and isinstance(feed.source, Source)
    finally:
        await feed.aclose()


def test_an_empty_recording_is_refused(tmp_path):
    from ptmon.monitor.recording.reader import Recording
    from ptmon.monitor.recording.writer import Recorder

    path = tmp_path / "empty.rec"
    Recorder(path).open().close()
    with pytest.raises(ValueError, match="empty"):
        ReplayFeed(Recording(path), Settings())


async def test_a_seek_back_rebuilds_from_a_checkpoint_the_stores_depth_before_not_from_the_start(tmp_path):
    """With a Store 8 points deep (80 s at the 10 s interval the run ends with), a seek back rebuilds from
    the latest checkpoint at least 80 s before, and every Dashboard and the event log are those of a replay
    played forward to that moment: spend across w2's restart (a GPU-seconds counter back to 0 at round 22)
    included, whether the rebuild starts before or after it."""
    path = tmp_path / "run.rec"
    await _live_run(path)
    times = [T0 + 5 * i for i in range(ROUNDS)]
    forward = open_replay(str(path))
    ahead = ReplayFeed(forward.recording, forward.settings, capacity=8)
    played = {t: (to_json(ahead.dashboard_at(t, window_s=60.0)), ahead.events()) for t in times}
    rewound = ReplayFeed(forward.recording, forward.settings, capacity=8)
    rewound.dashboard_at(times[-1], window_s=60.0)
    depth = 8 * 10.0
    try:
        for t in reversed(times[:-1]):
            assert to_json(rewound.dashboard_at(t, window_s=60.0)) == played[t][0], t
            assert rewound.events() == played[t][1], t
            if t - depth >= T0:  # a checkpoint that far back (the first is at T0): rebuilt from it, depth / 4 apart
                assert rewound.rebuilt_from is not None and t - depth - 20 <= rewound.rebuilt_from <= t - depth, t
            else:
                assert rewound.rebuilt_from is None, t
            rewound.dashboard_at(times[-1], window_s=60.0)  # and forward again to the end each time
        old = ReplayFeed(forward.recording, forward.settings, capacity=8, rewind="start")
        old.dashboard_at(times[-1], window_s=60.0)
        assert to_json(old.dashboard_at(times[30], window_s=60.0)) == played[times[30]][0]
        assert old.rebuilt_from is None
    finally:
        await forward.aclose()
