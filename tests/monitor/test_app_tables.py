"""The tables driven as a person would (Pilot): natural sort, ``S``, the column chooser, the detail screen.

The detail screens are shown for real exporters scraped over loopback by a real LiveFeed (the test
decides when it scrapes, on one settable clock), and for a target that refuses every connection.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from textual.widgets import SelectionList

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.app import PtmonApp
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.widgets.columns import ColumnsScreen
from ptmon.monitor.widgets.detail import DetailScreen
from tests.monitor.fakes import HOSTILE
from tests.monitor.screen import screen_lines, screen_text
from tests.monitor.test_app import WIDE, make_app, settle
from tests.support.clock import FakeClock

T0 = 1_780_000_000.0


def _header(app: PtmonApp, panel: str) -> str:
    """The table's header line as on screen (the line under its top border)."""
    lines = screen_lines(app)
    region = app.table(panel).region
    return lines[region.y + 1][region.x:region.right] if region.y + 1 < len(lines) else ""


async def test_names_sort_naturally_rollout_2_before_rollout_10() -> None:
    app, _, _ = make_app(workers=12)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        assert app.table("workers").visible_keys() == [f"rollout-{i}" for i in range(12)]
        rows = [line for line in screen_text(app).splitlines() if re.search(r"rollout-1\b|rollout-10\b", line)]
        assert "rollout-10" not in rows[0]  # rollout-1 is drawn above rollout-10 (and 2..9 between them)


async def test_capital_s_reverses_the_current_sort_and_again_restores_it() -> None:
    app, _, _ = make_app(workers=12)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        workers = app.table("workers")
        ascending = workers.visible_keys()
        await pilot.press("S")
        assert workers.visible_keys() == ascending[::-1]
        assert "worker ▼" in _header(app, "workers")
        await pilot.press("s", "S")  # rollouts/s, then fastest first
        rates = {w.name: w.rollouts_per_s for w in app.dashboard.workers} if app.dashboard else {}
        shown = [rates[k] for k in workers.visible_keys()]
        assert workers.sort_label == "rollouts/s" and shown == sorted(shown, reverse=True)
        await pilot.press("S")
        assert [rates[k] for k in workers.visible_keys()] == sorted(shown)


async def test_the_column_chooser_hides_and_shows_columns_and_the_choice_stays() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        assert "reward" in _header(app, "workers")
        await pilot.press("c")
        chooser: Any = app.screen  # (mypy narrows Screen[object] to a ModalScreen[None] oddly)
        assert isinstance(chooser, ColumnsScreen)
        listed = chooser.query_one(SelectionList)
        assert [str(listed.get_option_at_index(i).prompt)
                for i in range(listed.option_count)] == list(app.table("workers").column_labels)
        await pilot.press("down", "down", "down", "down", "down", "space")  # the sixth: reward
        await pilot.press("escape")
        assert not isinstance(app.screen, ColumnsScreen)
        assert "reward" not in _header(app, "workers") and "staleness" in _header(app, "workers")
        assert "1 hidden" in screen_text(app)
        await pilot.press("t", "w")  # another panel and back, and a new dashboard: still hidden
        await app.poll_once()
        await pilot.pause()
        assert "reward" not in _header(app, "workers")
        await pilot.press("c", "space")  # the cursor is on the first column: hide the names too
        await pilot.press("escape")
        assert "worker" not in _header(app, "workers")
        await pilot.press("c")
        for _ in range(8):  # untick everything: the last shown column stays
            await pilot.press("space", "down")
        await pilot.press("escape")
        assert len(app.table("workers").shown_indexes) >= 1


@asynccontextmanager
async def live_fleet() -> AsyncIterator[tuple[PtmonApp, FakeClock]]:
    """A real rollout worker (``rollout-1``, two envs, one with a hostile name) and a target refusing every
    connection (``rollout-9``), scraped 7 times 10 s apart by a real LiveFeed, shown by the app."""
    clock = FakeClock(T0)
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", clock=clock)
    server = serve(worker.registry)
    settings = Settings(targets=(Target("rollout-1", server.url, role="rollout"),
                                 Target("rollout-9", "http://127.0.0.1:1/metrics", role="rollout")),
                        interval_s=10.0, timeout_s=2.0)

    class Driven(LiveFeed):
        async def start(self) -> None:  # the test scrapes, at the times it sets
            return

    feed = Driven(settings, clock=clock)
    try:
        for i in range(7):
            clock.t = T0 + 10 * i
            worker.set_policy_version(i)
            for _ in range(2):
                worker.record_rollout(env="math", tokens=100, reward=0.5)
            worker.record_rollout(env=HOSTILE["benchmark"], tokens=40, reward=1.0,
                                  outcome="error" if i == 3 else "ok")
            await feed.collect_once()
            await feed.dashboard(window_s=60.0)  # what the app does each refresh (the scrape log sees it)
        app = PtmonApp(feed, clock=clock, interval_s=10.0, window_s=60.0)
        yield app, clock
    finally:
        await feed.aclose()
        server.close()


async def _open_detail(app: PtmonApp, pilot, panel: str, name: str) -> DetailScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press(panel[0])
    table = app.table(panel)
    while table.cursor_key != name:
        before = table.cursor_row
        await pilot.press("down")
        assert table.cursor_row != before, (name, table.visible_keys())
    await pilot.press("enter")
    assert isinstance(app.screen, DetailScreen)
    return app.screen


async def test_enter_on_a_worker_opens_its_detail_and_escape_closes_it() -> None:
    async with live_fleet() as (app, _clock):
        async with app.run_test(size=WIDE) as pilot:
            screen = await _open_detail(app, pilot, "workers", "rollout-1")
            d = screen.detail
            assert d is not None and d.name == "rollout-1" and d.worker is not None
            envs = {e.env: e for e in d.envs}
            assert set(envs) == {"math", HOSTILE["benchmark"]}
            # the envs' rates add up to the worker's row
            assert sum(e.rollouts_per_s or 0 for e in d.envs) == pytest.approx(d.worker.rollouts_per_s)
            assert {o.outcome: o.total for o in d.outcomes} == {"ok": 7 * 2 + 6, "error": 1}
            # in the window (T0, T0+60]: math 14 - 4, gsm8k ok 6 - 2; the error series was born at T0+30 by
            # its first error, which counts (PromQL's increase() would miss it)
            assert {o.outcome: o.in_window for o in d.outcomes} == {"ok": 10 + 4, "error": 1}
            assert [(e.at, e.count) for e in d.errors] == [(T0 + 30, 1.0)]
            assert [r.ok for r in d.scrapes] == [True] * 7
            text = screen_text(app)
            for _ in range(12):  # page down to the raw series, as a person would
                if "posttrain_rollouts_total{" in text:
                    break
                await pilot.press("pagedown")
                text += "\n" + screen_text(app)
            for seen in ("per env", "outcomes", "scrape history", "6 good scrapes stored, 0 failed seen",
                         "▮▮▮▮▮▮▮", "rollout error ([blink]gsm8k[/blink])",
                         'posttrain_rollouts_total{env="math",outcome="ok"}'):
                assert seen in text, (seen, text)
            assert re.search(r"posttrain_rollout_policy_version\s+6\s", text)  # the last version it set
            assert re.search(r"posttrain_rollouts_total\{env=\"math\",outcome=\"ok\"\}\s+14\s", text)
            await pilot.press("escape")
            assert not isinstance(app.screen, DetailScreen)
            assert app.table("workers").cursor_key == "rollout-1"  # back where it was


async def test_enter_on_a_down_target_shows_its_reason_and_failed_scrapes() -> None:
    async with live_fleet() as (app, _clock):
        async with app.run_test(size=WIDE) as pilot:
            screen = await _open_detail(app, pilot, "targets", "rollout-9")
            d = screen.detail
            assert d is not None and d.health.up is False and d.health.error
            assert [r.ok for r in d.scrapes] == [False] * 7 and d.series == ()
            text = screen_text(app)
            assert f"✗ DOWN: {d.health.error}" in text
            # 7 attempts seen; the window (now - 60 s, now] holds the last 6 of them
            assert "0 good scrapes stored, 6 failed seen" in text and "✗✗✗✗✗✗✗" in text
            assert text.count(f"scrape failed: {d.health.error}") == 6  # each with its time, in errors
            assert re.search(r"last error\s+\d\d:\d\d:\d\d " + re.escape(d.health.error), text)
            await pilot.press("escape")
            assert not isinstance(app.screen, DetailScreen)


async def test_a_feed_without_a_store_still_gives_the_dashboards_detail() -> None:
    app, feed, _ = make_app(hostile=True)
    feed.kill(HOSTILE["target"])
    async with app.run_test(size=WIDE) as pilot:
        screen = await _open_detail(app, pilot, "targets", HOSTILE["target"])
        assert screen.detail is not None and screen.detail.health.up is False
        text = screen_text(app)
        assert "detail [red]evil[/red]\\x1b[2J" in text  # the name literally, in the title
        assert "✗ DOWN: \\x1b[31mboom\\x1b[0m [bold red]x[/]" in text


async def test_enter_on_an_alert_opens_its_subjects_detail() -> None:
    app, feed, _ = make_app()
    feed.kill("rollout-4")
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("a")
        alerts = app.table("alerts")
        while not (alerts.cursor_key or "").endswith("\0rollout-4"):
            before = alerts.cursor_row
            await pilot.press("down")
            assert alerts.cursor_row != before, alerts.visible_keys()
        await pilot.press("enter")
        shown: Any = app.screen
        assert isinstance(shown, DetailScreen) and shown.target_name == "rollout-4"
        assert "✗ DOWN: ConnectError: [Errno 111] Connection refused" in screen_text(app)
