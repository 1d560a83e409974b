"""The live TUI driven as a person would (Pilot), on a deterministic fake Feed and clock.

The screen is read back from the exported screenshot (tests/monitor/screen.py),
so each assertion is about what a person would see, not about widget internals.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, cast

import pytest
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.command import CommandPalette
from textual.notifications import SeverityLevel
from textual.pilot import Pilot
from textual.widgets import Input

from ptmon.monitor.app import INTERVALS_S, PtmonApp
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.feed import Feed
from ptmon.monitor.settings import WINDOWS_S
from ptmon.monitor.widgets import Card, Chart, HelpScreen, SparkCell, StatusHeader
from tests.monitor.fakes import HOSTILE, T0, FakeFeed
from tests.monitor.screen import screen_lines, screen_text
from tests.support.clock import FakeClock

WIDE, SMALL = (160, 48), (80, 24)


def make_app(**feed_options) -> tuple[PtmonApp, FakeFeed, FakeClock]:
    clock = FakeClock(T0)
    feed = FakeFeed(clock=clock, **feed_options)
    return PtmonApp(feed, clock=clock, interval_s=1.0, window_s=300.0), feed, clock


async def settle(pilot: Pilot) -> None:
    """Wait for the first dashboard and for the footer to list the keys."""
    app = cast(PtmonApp, pilot.app)
    for _ in range(500):
        if app.polls and app.query_one("Footer").children:
            break
        await pilot.pause(0.01)
    await pilot.pause()


async def poll(pilot: Pilot) -> None:
    await cast(PtmonApp, pilot.app).poll_once()
    await pilot.pause()


def row_texts(app: PtmonApp, panel: str) -> list[str]:
    table = app.table(panel)
    return [" ".join(cell.plain for cell in table.get_row_at(i)) for i in range(table.row_count)]


def test_fake_feed_is_a_feed() -> None:
    assert isinstance(FakeFeed(), Feed)


async def test_first_dashboard_fills_the_screen_and_the_feed_is_started_and_closed() -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert feed.started
        text = screen_text(app)
        assert "grpo-math-7b-r3" in text and "Qwen2.5-7B-Instruct" in text
        assert "targets 8/8" in text
        assert "up 3h12m" in text
        assert "$98.20/h" in text
        assert "every 1s" in text and "window 5m" in text
        assert app.table("targets").visible_keys()[0] == "eval"  # sorted by name
        assert len(app.table("workers").visible_keys()) == 6
        assert app.table("alerts").visible_keys() == ["staleness\0rollout-3"]  # rollout-3 is 3 versions behind
        # the staleness card carries the warn alert's colour; the others stay ok
        assert app.query_one("#card-staleness", Card).level == "warn"
        assert app.query_one("#card-sync", Card).level == "ok"
        assert not feed.closed
    assert feed.closed


async def test_unknown_numbers_show_a_dash_not_zero() -> None:
    class EmptyFeed(FakeFeed):
        def build(self, *, window_s: float) -> Dashboard:
            return Dashboard(now=self.clock(), window_s=window_s, interval_s=1.0)

    clock = FakeClock(T0)
    app = PtmonApp(EmptyFeed(clock=clock), clock=clock)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        rows = dict((str(k), str(v)) for k, v in app.query_one("#card-sync", Card).rows)
        assert rows["p99"] == "—" and rows["failures"] == "—"
        text = screen_text(app)
        assert "no evals yet" in text
        assert "no targets scraped yet" in text and "no active alerts" in text


async def test_help_screen_lists_every_key_in_the_footer() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = screen_text(app)
        shown = [b for b in cast("list[Binding]", app.BINDINGS) if b.show]
        assert len(shown) == 14  # e (event log) joined the 13; z is in ? and the palette only
        footer = screen_lines(app)[-1]
        for binding in shown:
            key = binding.key_display or binding.key
            assert f"│  {key}  {binding.tooltip}" in help_text, (key, help_text)
            assert f"{key} {binding.description}" in footer
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark", "escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits() -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0
    assert feed.closed


@pytest.mark.parametrize("where", ["tables", "filter box", "help", "palette"])
async def test_ctrl_c_quits_from_anywhere_with_no_toast(where: str) -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await settle(pilot)
        if where == "filter box":
            await pilot.press("slash", "r")
            assert app.query_one("#filter", Input).has_focus
        elif where == "help":
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
        elif where == "palette":
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0
        assert not app._notifications  # no "press ctrl+q to quit" toast
    assert feed.closed


async def test_p_freezes_the_screen_and_resuming_shows_the_latest_without_a_gap() -> None:
    app, feed, clock = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        before = app.dashboard
        await pilot.press("p")
        assert app.paused
        clock.advance(40)
        feed.kill("rollout-2")
        await poll(pilot)
        text = screen_text(app)
        assert app.dashboard is before
        assert "PAUSED 40s" in text
        assert "targets 8/8" in text and "DOWN" not in text
        await pilot.press("p")
        await poll(pilot)
        text = screen_text(app)
        assert not app.paused and "PAUSED" not in text
        assert "targets 7/8" in text and "DOWN" in text
        assert app.dashboard is not None and app.dashboard.now == clock()
        # the window's series kept filling while paused: no hole at the pause
        times = [t for t, _ in app.dashboard.rollout_rate_series]
        assert max(b - a for a, b in zip(times, times[1:], strict=False)) <= 300 / 120 + 1e-9


async def test_plus_and_minus_step_the_interval_and_tell_the_feed() -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("plus")
        assert app.interval_s == 2.0 and feed.intervals == [2.0]
        await pilot.press("plus", "plus")
        assert app.interval_s == 10.0
        await pilot.press("minus", "minus", "minus", "minus", "minus")
        assert app.interval_s == INTERVALS_S[0] and feed.intervals[-1] == INTERVALS_S[0]
        await pilot.pause()
        assert "every 0.5s" in screen_text(app)


async def test_the_keys_never_reach_an_interval_and_window_the_config_refuses() -> None:
    """Every 1m with a 1m window is refused by ptmon.toml (a window must hold two scrapes): the other moves."""
    from ptmon.monitor.config import load_settings

    app, feed, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press(*["left_square_bracket"] * 3)  # 1m window
        await pilot.press(*["plus"] * 8)  # up to 1m: the window grows to hold two scrapes
        assert (app.interval_s, app.window_s) == (60.0, 300.0)
        await pilot.press(*["left_square_bracket"] * 2)  # back to 1m: the interval comes down to fit it
        assert (app.interval_s, app.window_s) == (30.0, 60.0)
        for pair in [(app.interval_s, app.window_s), (feed.intervals[-1], app.window_s)]:
            load_settings(urls=["http://127.0.0.1:1/metrics"], interval_s=pair[0], window_s=pair[1])


async def test_a_window_longer_than_the_buffer_holds_is_said_in_a_toast_when_a_key_makes_one() -> None:
    # Issue 12 item 8: at every 0.5 s the 3,600-point buffer holds 30 min; a 1h window passed silently.
    app, _feed, _ = make_app()
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket")  # 15m, then 1h: held at 1 s
        assert app.window_s == 3600.0 and not app._notifications
        await pilot.press("minus")  # every 0.5 s: 30 min held
        assert app.interval_s == 0.5
        messages = [n.message for n in app._notifications]
        assert messages == ["the 1 h window is longer than the 30 min the buffer holds at a 0.5 s interval "
                            "(3,600 scrapes a series): rates, charts and quantiles cover the last 30 min; "
                            "a longer interval holds more"]
        await pilot.press("left_square_bracket")  # 15m fits: no new toast
        assert len(app._notifications) == 1


async def test_brackets_step_the_window_through_1m_5m_15m_1h() -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        seen = []
        for key in ["right_square_bracket"] * 3 + ["left_square_bracket"] * 4:
            await pilot.press(key)
            seen.append(app.window_s)
        assert seen == [900.0, 3600.0, 3600.0, 900.0, 300.0, 60.0, 60.0]
        await poll(pilot)
        assert feed.windows[-1] == WINDOWS_S[0]
        assert "window 1m" in screen_text(app)
        assert app.query_one("#chart-rollout", Chart).data.x_labels == ("-1m", "now")


async def test_slash_filters_the_active_table_enter_keeps_escape_clears() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        box = app.query_one("#filter", Input)
        assert box.display and box.has_focus
        await pilot.press(*"rollout-1")
        assert app.table("targets").visible_keys() == ["rollout-1"]
        assert not app.paused  # "p" typed into the filter is text, not the pause key
        await pilot.press("enter")
        assert not box.display and app.table("targets").has_focus
        await poll(pilot)
        assert app.table("targets").visible_keys() == ["rollout-1"]  # the filter survives new data
        assert "filter: rollout-1" in screen_text(app)
        app.table("targets").set_filter("no-such-target")
        await pilot.pause()
        assert "no rows match the filter" in screen_text(app)
        app.table("targets").set_filter("rollout-1")
        await pilot.press("slash", "escape")
        assert not box.display
        assert len(app.table("targets").visible_keys()) == 8


async def test_keys_typed_before_the_filter_box_has_focus_land_in_it() -> None:
    """A paste or a fast typist sends "/rollout-1" in one read; none of it may reach the table."""
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for char in "/rollout-1":
            app.post_message(events.Key("slash" if char == "/" else char, char))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert app.table("targets").visible_keys() == ["rollout-1"]
        assert not app.query_one("#filter", Input).display
        assert not app.paused


async def test_filter_matches_any_column_of_the_workers_table() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("w", "slash", *"stale", "enter")
        assert app.table("workers").visible_keys() == ["rollout-3"]
        assert app.table("targets").filter_text == ""


async def test_s_cycles_the_sort_column_and_changes_the_order() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        workers = app.table("workers")
        assert workers.sort_label == "worker"
        await pilot.press("s")  # rollouts/s, ascending
        assert workers.sort_label == "rollouts/s"
        rates = [app.dashboard.workers[[w.name for w in app.dashboard.workers].index(k)].rollouts_per_s
                 for k in workers.visible_keys()]
        assert rates == sorted(rates)
        for _ in range(4):
            await pilot.press("s")
        assert workers.sort_label == "reward"
        await pilot.press("s", "s")
        assert workers.sort_label == "worker"
        await pilot.press("t", "s", "s")  # targets by up: down first
        assert app.table("targets").sort_label == "up"


async def test_clicking_a_header_sorts_by_it_and_again_reverses() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        targets = app.table("targets")
        await pilot.click("#targets", offset=(2, 1))  # the "name" header
        await pilot.pause()
        assert targets.sort_label == "name" and targets.sort_reverse
        assert targets.visible_keys()[0] == "trainer"


async def test_t_w_a_switch_the_panel_and_in_compact_layout_show_only_it() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert app.compact
        for key, panel in (("w", "workers"), ("a", "alerts"), ("t", "targets")):
            await pilot.press(key)
            assert app.active_panel == panel and app.table(panel).has_focus
            shown = [p for p in ("targets", "workers", "alerts") if app.table(p).display]
            assert shown == [panel]
            assert app.table(panel).region.height > 5


async def test_b_sets_the_baseline_to_now() -> None:
    app, feed, clock = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        first = app.dashboard.baseline_score
        await pilot.press("b")
        await poll(pilot)
        assert feed.baseline_calls == 1
        assert app.dashboard.baseline_score != first
        assert app.dashboard.baseline_score == app.dashboard.score


async def test_a_target_going_down_turns_red_and_raises_the_alert() -> None:
    app, feed, clock = make_app()
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await settle(pilot)
        feed.kill("rollout-2")
        clock.advance(5)
        await poll(pilot)
        targets = app.table("targets")
        row = targets.get_row("rollout-2")
        assert "DOWN" in row[2].plain
        assert all("red" in str(cell.style) or any("red" in str(s.style) for s in cell.spans) for cell in row)
        assert "Connection refused" in row[6].plain
        assert "target_down\0rollout-2" in app.table("alerts").visible_keys()
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "targets 7/8" in text
        assert "rollout-2 (http://127.0.0.1:9103/metrics) is down: ConnectError" in text  # the alerts panel
        assert app.query_one("#card-rollout", Card).level == "ok"  # a rollout target down is a warn, not a card's
        # the other targets kept updating
        assert sum("● up" in r for r in row_texts(app, "targets")) == 7


@pytest.mark.parametrize("size", [WIDE, SMALL])
async def test_a_target_whose_data_is_old_says_so_in_the_table_and_on_the_cards_it_feeds(size: tuple[int, int]) -> None:
    app, feed, clock = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert " old" not in screen_text(app)  # a healthy fleet: nothing is old
        feed.freeze("rollout-2")  # up, but not scraped again (a stuck scrape loop)
        clock.advance(58)
        await poll(pilot)
        targets = app.table("targets")
        row = targets.get_row("rollout-2")
        assert row[2].plain == "⚠ 58s old"
        assert all(any("dim" in str(span.style) for span in cell.spans) for cell in row if cell.plain)  # all dim
        assert targets.get_row("rollout-1")[2].plain == "● up"
        notes = {card: Text.from_markup(app.query_one(f"#card-{card}", Card).border_subtitle or "").plain
                 for card in ("ipd", "rollout", "sync", "staleness", "trainer")}
        assert notes == {"ipd": "⚠ 58s old", "rollout": "⚠ 58s old", "sync": "", "staleness": "⚠ 58s old",
                         "trainer": ""}
        assert "⚠ 58s old" in screen_text(app)  # drawn in the cards' bottom borders (and the table when shown)
        feed.revive("rollout-2")
        await poll(pilot)
        assert targets.get_row("rollout-2")[2].plain == "● up"
        assert all(not app.query_one(f"#card-{card}", Card).border_subtitle for card in notes)
        assert " old" not in screen_text(app)


async def test_a_new_critical_alert_raises_one_error_notification() -> None:
    notes: list[tuple[str, str]] = []

    class Recording(PtmonApp):
        def notify(self, message: str, *, severity: SeverityLevel = "information", **kw) -> None:
            notes.append((severity, message))
            super().notify(message, severity=severity, **kw)

    clock = FakeClock(T0)
    feed = FakeFeed(clock=clock)
    app = Recording(feed, clock=clock)
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await settle(pilot)
        assert notes == []  # the staleness warning is no notification
        feed.kill("trainer")
        await poll(pilot)
        assert [s for s, _ in notes] == ["error"]
        assert notes[0][1].startswith("trainer (http://127.0.0.1:9100/metrics) is down")
        await pilot.pause(0.2)
        assert len(app.screen.query("Toast")) == 1  # on screen, bottom right
        await poll(pilot)
        await poll(pilot)
        assert len(notes) == 1  # still firing: no second toast
        feed.revive("trainer")
        await poll(pilot)
        feed.kill("trainer")
        await poll(pilot)
        assert len(notes) == 2  # fired again after it cleared


async def test_hostile_strings_render_literally() -> None:
    app, feed, clock = make_app(hostile=True)
    feed.kill(HOSTILE["target"])
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        svg = app.export_screenshot()
        text = screen_text(app)
        assert "\x1b" not in svg and "\x07" not in svg
        assert "[bold red]pwned[/]" in text  # markup shown, not applied
        assert r"\x1b]0;owned-title\x07model[/link]" in text  # the OSC title write made visible
        assert "[blink]gsm8k[/blink]" in text
        assert r"[red]evil[/red]\x1b[2J" in text
        assert r"\x1b[31mboom\x1b[0m [bold red]x[/]" in text
        # the URL column is off screen to the right at this width: read the cell as the table will draw it
        url = app.table("targets").get_row(HOSTILE["target"])[-1]
        assert url.plain == HOSTILE["url"] and {str(s.style) for s in url.spans} == {"red"}  # the down-row colour only
        assert app.title == "ptmon"


class GatedFeed(FakeFeed):
    """dashboard() waits until the test opens the gate (not a sleep, which a loaded machine outlasts while the
    keys are still being pressed) and counts how many calls overlap."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.gate = asyncio.Event()
        self.active = 0
        self.max_active = 0
        self.calls = 0

    async def dashboard(self, *, window_s: float) -> Dashboard:
        self.active += 1
        self.calls += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await self.gate.wait()
            return await super().dashboard(window_s=window_s)
        finally:
            self.active -= 1


async def test_keys_are_handled_while_a_poll_is_in_flight_and_polls_never_overlap() -> None:
    clock = FakeClock(T0)
    feed = GatedFeed(clock=clock)
    app = PtmonApp(feed, clock=clock, interval_s=0.05)
    async with app.run_test(size=WIDE) as pilot:
        for _ in range(500):
            if feed.active:
                break
            await pilot.pause(0.01)
        assert feed.active == 1
        await pilot.press("right_square_bracket", "minus", "plus", "b")  # each wakes the loop
        await pilot.pause(0.2)  # four intervals: a loop that did not wait for the poll would call again
        assert app.window_s == 900.0  # handled while the poll is still waiting on the feed
        assert (feed.active, feed.calls) == (1, 1)
        feed.gate.set()
        for _ in range(500):
            if feed.calls >= 3:
                break
            await pilot.pause(0.02)
        assert feed.calls >= 3
        assert feed.max_active == 1


async def shown_then_recovered(feed: FakeFeed, *, shown: str, gone: str) -> None:
    """The app polls ``feed`` while it misbehaves (``shown`` on screen), then once it is well again
    (``feed.bad = False``): ``gone`` has left the screen and the dashboard is back."""
    app = PtmonApp(feed, clock=feed.clock)
    async with app.run_test(size=WIDE) as pilot:
        await poll(pilot)
        assert shown in screen_text(app)
        feed.bad = False  # type: ignore[attr-defined]
        await poll(pilot)
        text = screen_text(app)
        assert gone not in text and "targets 8/8" in text


async def test_a_feed_error_is_shown_and_the_next_poll_recovers() -> None:
    class FlakyFeed(FakeFeed):
        bad = True

        async def dashboard(self, *, window_s: float) -> Dashboard:
            if self.bad:
                raise RuntimeError("store exploded [bold]")
            return await super().dashboard(window_s=window_s)

    await shown_then_recovered(FlakyFeed(clock=FakeClock(T0)),
                               shown="feed error: RuntimeError: store exploded [bold]", gone="feed error")


async def test_a_dashboard_the_widgets_choke_on_is_reported_and_polling_goes_on() -> None:
    class OddFeed(FakeFeed):
        bad = True

        async def dashboard(self, *, window_s: float) -> Dashboard:
            d = await super().dashboard(window_s=window_s)
            return replace(d, workers=(object(),)) if self.bad else d  # type: ignore[arg-type]

    await shown_then_recovered(OddFeed(clock=FakeClock(T0)), shown="display: AttributeError", gone="display:")


async def test_resizing_switches_between_compact_and_wide_layouts() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert not app.compact
        assert app.query_one("#charts").display and not app.query_one("#sparks").display
        assert all(app.table(p).display for p in ("targets", "workers", "alerts"))
        await pilot.resize_terminal(*SMALL)
        await pilot.pause()
        assert app.compact
        assert not app.query_one("#charts").display and app.query_one("#sparks").display
        assert app.query_one("#spark-rollout", SparkCell)._values  # filled on the switch, no wait
        assert app.query_one(StatusHeader).region.height == 2
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert not app.compact and app.query_one(StatusHeader).region.height == 1
        assert app.query_one("#chart-ipd", Chart).data.points


async def test_command_palette_offers_ptmon_commands() -> None:
    app, feed, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Pause / resume", "Set baseline to now", "Show workers", "Window 15m", "Keys"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"baseline")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert feed.baseline_calls == 1


async def test_live_exporters_over_http_fill_the_screen_while_a_dead_and_a_hanging_target_fail() -> None:
    """The real path end to end: exporters served on loopback, LiveFeed scraping them, the app showing it.

    One port refuses connections, one accepts and never answers (each scrape times out); the rest
    keeps updating and the keyboard keeps answering.
    """
    import socket

    from ptmon.exporters.rollout import RolloutExporter
    from ptmon.exporters.serve import serve
    from ptmon.exporters.trainer import TrainerExporter
    from ptmon.monitor.config import load_settings
    from ptmon.monitor.live import LiveFeed

    ident: dict[str, Any] = dict(run="e2e-[b]run[/b]", model="tiny", algorithm="grpo", gpus=1, gpu_hour_price=2.0)
    trainer, rollout = TrainerExporter(**ident), RolloutExporter(**ident)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    with socket.socket() as hanging, serve(trainer.registry) as t_srv, serve(rollout.registry) as r_srv:
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(8)  # the kernel completes the handshake; nobody ever reads the request
        slow = hanging.getsockname()[1]
        urls = [t_srv.url, r_srv.url, f"127.0.0.1:{dead}", f"127.0.0.1:{slow}"]
        settings = load_settings(urls=urls, interval_s=0.5)
        app = PtmonApp(LiveFeed(settings), interval_s=0.5, window_s=60.0)
        async with app.run_test(size=WIDE) as pilot:
            for step in range(300):
                with trainer.step():
                    pass
                rollout.record_rollout(env="math", tokens=100 + step, reward=0.5)
                d = app.dashboard
                if d is not None and d.targets_up == 2 and d.rollout_rate_per_s and sum(
                        t.up is False for t in d.targets) == 2:
                    break
                await pilot.pause(0.05)
            d = app.dashboard
            assert d is not None and d.targets_up == 2
            await pilot.pause()
            text = screen_text(app)
            assert "e2e-[b]run[/b]" in text  # the run name, literally
            assert "targets 2/4" in text
            table = app.table("targets")
            down = {k: table.get_row(k)[6].plain for k in table.visible_keys() if "DOWN" in table.get_row(k)[2].plain}
            assert set(down) == {f"127.0.0.1:{dead}", f"127.0.0.1:{slow}"}
            assert "timed out" in down[f"127.0.0.1:{slow}"]
            await pilot.press("p")  # the keyboard answers while scrapes of the hanging target time out
            assert app.paused


def test_watch_with_nothing_to_watch_says_how_and_exits_2(capsys) -> None:
    from ptmon.monitor.cli import main

    assert main(["watch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ptmon watch URL") and "no targets" in err


def test_watch_with_a_bad_config_names_it_and_exits_2(tmp_path, capsys) -> None:
    from ptmon.monitor.cli import main

    bad = tmp_path / "ptmon.toml"
    bad.write_text("[[targets]]\nurl = 5\n")
    assert main(["watch", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptmon watch: ") and str(bad) in err and "url" in err


# Snapshots: deterministic data (fixed fake clock), looked at before committing.


def _snap_app(**feed_options) -> PtmonApp:
    app, feed, clock = make_app(**feed_options)
    return app


def _incident_app() -> PtmonApp:
    """rollout-2 died 42 s ago (the feed saw it then, so the alert is 42 s old)."""
    app, feed, clock = make_app()
    feed.kill("rollout-2")
    asyncio.run(feed.dashboard(window_s=300.0))
    clock.advance(42)
    return app


async def _ready(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.pause(0.1)


def test_snapshot_wide_healthy(snap_compare) -> None:
    assert snap_compare(_snap_app(), terminal_size=WIDE, run_before=_ready)


def test_snapshot_compact_healthy(snap_compare) -> None:
    assert snap_compare(_snap_app(), terminal_size=SMALL, run_before=_ready)


def test_snapshot_wide_target_down(snap_compare) -> None:
    async def ready(pilot: Pilot) -> None:
        await _ready(pilot)
        pilot.app.clear_notifications()  # toasts time out on the wall clock: keep them out of the picture
        await pilot.pause()

    assert snap_compare(_incident_app(), terminal_size=WIDE, run_before=ready)


def test_snapshot_compact_alerts_panel(snap_compare) -> None:
    async def ready(pilot: Pilot) -> None:
        await _ready(pilot)
        pilot.app.clear_notifications()
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(_incident_app(), terminal_size=SMALL, run_before=ready)


def test_snapshot_compact_help(snap_compare) -> None:
    assert snap_compare(_snap_app(), terminal_size=SMALL, run_before=_ready, press=["question_mark"])


async def test_the_targets_table_names_the_config_file_read() -> None:
    clock = FakeClock(T0)
    app = PtmonApp(FakeFeed(clock=clock), clock=clock, config_file="~/.config/ptmon/ptmon.toml")
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert "from ~/.config/ptmon/ptmon.toml" in screen_text(app)
    plain = PtmonApp(FakeFeed(clock=clock), clock=clock)
    async with plain.run_test(size=WIDE) as pilot:
        await settle(pilot)
        assert " · from " not in screen_text(plain)


async def test_a_query_string_secret_never_reaches_the_screen() -> None:
    import socket

    from ptmon.monitor.config import load_settings
    from ptmon.monitor.live import LiveFeed

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = load_settings(urls=[f"worker=http://127.0.0.1:{port}/metrics?token=s3cr3t-abc"], window_s=60.0)
    app = PtmonApp(LiveFeed(settings), interval_s=settings.interval_s, window_s=settings.window_s)
    async with app.run_test(size=(250, 48)) as pilot:
        await settle(pilot)
        for _ in range(200):  # until the failed scrape is on screen
            if "DOWN" in screen_text(app):
                break
            await pilot.pause(0.02)
        text = screen_text(app)
        assert "DOWN" in text and "token=***" in text
        assert "s3cr3t" not in text


async def _screenshot_from_the_palette(app: PtmonApp, pilot: Pilot) -> None:
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*"screenshot")
    await pilot.pause(0.3)
    await pilot.press("enter")
    for _ in range(200):
        if any(n.title == "Screenshot" for n in app._notifications):
            return
        await pilot.pause(0.02)


async def test_the_palettes_screenshot_saves_into_the_working_directory_and_says_where(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await _screenshot_from_the_palette(app, pilot)
        saved = sorted(tmp_path.glob("ptmon-*.svg"))
        assert len(saved) == 1 and saved[0].read_text().startswith("<svg")
        toast = [n for n in app._notifications if n.title == "Screenshot"]
        assert [n.message for n in toast] == [f"saved {saved[0]}"] and toast[0].severity == "information"


async def test_a_screenshot_that_cannot_be_written_says_why(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "removed"
    monkeypatch.setattr("os.getcwd", lambda: str(gone))  # the working directory was deleted under the app
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await _screenshot_from_the_palette(app, pilot)
        toast = [n for n in app._notifications if n.title == "Screenshot"]
        assert len(toast) == 1 and toast[0].severity == "error"
        assert toast[0].message.startswith(f"cannot write {gone}/ptmon-")
        assert "No such file or directory" in toast[0].message
