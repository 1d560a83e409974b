"""``ptmon replay``'s keys, driven with Pilot on a real recording."""

from __future__ import annotations

from textual.widgets import Input

from ptmon.monitor.recording.commands import open_replay
from ptmon.monitor.recording.replay import ReplayFeed
from ptmon.monitor.recording.replay_app import ReplayApp, ReplayBar
from tests.monitor.helpers import T0
from tests.monitor.recording.test_replay import _live_run


async def _settle(app, pilot, now: float | None = None) -> None:
    """Until the screen shows a Dashboard at ``now`` (at the playhead when None)."""
    for _ in range(500):
        await pilot.pause(0.02)
        want = app.replay.playhead.now() if now is None else now
        if app.dashboard is not None and app.dashboard.now == want:
            return


async def _replay_app(tmp_path) -> tuple[ReplayApp, ReplayFeed]:
    """``ptmon replay`` on a recording of a real live run."""
    path = tmp_path / "run.rec"
    await _live_run(path)
    feed = open_replay(str(path))
    return ReplayApp(feed), feed


async def test_pause_step_speed_seek_and_the_bar(tmp_path):
    app, feed = await _replay_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        head = feed.playhead
        for _ in range(200):
            await pilot.pause(0.02)
            if app.dashboard is not None:
                break
        assert head.playing and app.dashboard is not None
        await pilot.press("p")
        assert not head.playing
        at = head.now()
        await pilot.press("full_stop")
        await _settle(app, pilot)
        assert head.now() == at + 5.0 and app.dashboard.now == at + 5.0  # the screen shows the new moment
        await pilot.press("comma", "comma")
        assert head.now() == max(head.start, at - 5.0)
        await pilot.press("greater_than_sign", "greater_than_sign")
        assert head.speed == 5.0
        await pilot.press("less_than_sign")
        assert head.speed == 2.0
        await pilot.press("end")
        await _settle(app, pilot)
        assert app.dashboard.now == head.end
        bar = str(app.query_one(ReplayBar).render())
        assert "REPLAY" in bar and "paused" in bar and "2x" not in bar
        await pilot.press("home", "n")
        await _settle(app, pilot)
        assert head.now() > head.start
        await pilot.press("g")
        for _ in range(500):  # the box takes the keys only once it is up and focused
            await pilot.pause(0.02)
            if isinstance(app.focused, Input):
                break
        await pilot.press(*"+100s", "enter")
        await _settle(app, pilot)
        assert head.now() == head.start + 100.0 == app.dashboard.now
        assert app.dashboard.now - T0 <= 5 * 40


async def test_the_follow_timer_ticking_as_the_widgets_go_does_not_crash_the_app(tmp_path):
    """At quit the bar is removed before the half-second follow timer stops; CI once saw NoMatches there."""
    app, _ = await _replay_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("p")
        await app.query_one(ReplayBar).remove()
        app._follow()  # paused: it redraws the bar, which is gone
        await pilot.pause()
        assert app.is_running and app.return_code is None
