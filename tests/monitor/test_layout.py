"""Every terminal size a person uses (issue 16, "Sizes"): each gets a layout that uses its space, no
number is ever cut, the alerts are on screen or counted in the header, and the footer keeps whole keys.

The screen is read back from the exported screenshot (tests/monitor/screen.py), cell by cell, so
"cut" means what a person would see: a value whose tail the box's border took.
"""

from __future__ import annotations

import asyncio

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from ptmon.monitor.app import PtmonApp, layout_for
from ptmon.monitor.widgets import Card, HelpScreen, SortFilterTable, StatusHeader
from ptmon.monitor.widgets.cards import SHORT_LABELS
from tests.monitor.screen import screen_rows, screen_text
from tests.monitor.test_app import make_app, settle

SIZES = ((80, 24), (100, 30), (100, 60), (120, 40), (160, 48), (200, 30), (250, 70))
INCIDENT_ALERTS = 2  # rollout-2 down, and the staleness it leaves behind


async def incident() -> PtmonApp:
    """rollout-2 died 42 s ago: a down target with a long error, and two warn alerts."""
    app, feed, clock = make_app()
    feed.kill("rollout-2")
    await feed.dashboard(window_s=300.0)
    clock.advance(42)
    return app


def incident_app() -> PtmonApp:
    return asyncio.run(incident())


async def ready(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.pause(0.1)
    pilot.app.clear_notifications()  # toasts time out on the wall clock: keep them out of the picture
    await pilot.pause()


def _ends_whole(segment: str, wholes: list[str]) -> bool:
    """The text the box's right edge left: the end of a whole value, an explicit … , or nothing."""
    tail = segment.rstrip()
    return not tail or tail.endswith("…") or any(tail.endswith(w) for w in wholes if w)


def cut_cells(app: PtmonApp) -> list[str]:
    """Every table cell, table header and card value on screen whose tail is cut off (none should be)."""
    rows = screen_rows(app)
    cut = []
    for table in app.query(SortFilterTable):
        if not table.display or not table.region.height:
            continue
        box = table.content_region
        labels = [label + arrow for c in table.COLUMNS for label in (c.label, c.short or c.label)
                  for arrow in ("", " ▲", " ▼")]
        header = rows[box.y][box.x:box.right]
        if not _ends_whole(header, labels):
            cut.append(f"{table.id} header: {header.rstrip()!r}")
        for i in range(min(table.row_count, box.height - 1)):
            segment = rows[box.y + 1 + i][box.x:box.right]
            cells = [cell.plain for cell in table.get_row_at(i)]
            if not _ends_whole(segment, cells):
                cut.append(f"{table.id} row {i}: {segment.rstrip()!r}")
    for card in app.query(Card):
        box = card.content_region
        for k, (_, value) in enumerate(card.rows[:box.height]):
            line = rows[box.y + k][box.x:box.right]
            if str(value) not in line and not line.rstrip().endswith("…"):
                cut.append(f"{card.id}: {line!r} lacks {str(value)!r}")
    return cut


def alerts_shown(app: PtmonApp) -> bool:
    """Both alerts in the alerts table on screen, or their number in the header."""
    header = "\n".join(screen_rows(app)[:app.query_one(StatusHeader).region.height])
    if f"alerts {INCIDENT_ALERTS}" in header or "alerts 2 warn" in header:
        return True
    table = app.table("alerts")
    return bool(table.display and table.region.height >= 2 + INCIDENT_ALERTS)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_no_number_is_cut_and_the_alerts_are_visible_or_counted(size: tuple[int, int]) -> None:
    app = await incident()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        assert cut_cells(app) == []
        assert alerts_shown(app), screen_text(app)
        header = screen_rows(app)[:app.query_one(StatusHeader).region.height]
        assert not any(line.rstrip().endswith("…") for line in header), header


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_snapshot_every_size(snap_compare, size: tuple[int, int]) -> None:
    assert snap_compare(incident_app(), terminal_size=size, run_before=ready)


async def test_each_size_gets_its_layout_and_a_resize_follows() -> None:
    """Tall-narrow panes stack charts and tables, wide-short ones put tables side by side under sparklines."""
    app = await incident()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        for size, layout, charts, tables in (
            ((100, 60), "tall", True, ("targets", "workers", "alerts")),
            ((200, 30), "short", False, ("targets", "workers", "alerts")),
            ((100, 30), "compact", False, ("targets",)),
            ((120, 36), "wide", True, ("targets", "workers", "alerts")),
        ):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            assert app.screen_layout == layout == layout_for(*size), size
            assert app.query_one("#charts").display is charts and app.query_one("#sparks").display is not charts
            assert tuple(p for p in ("targets", "workers", "alerts") if app.table(p).display) == tables, size
            targets, workers = app.table("targets").region, app.table("workers").region
            if layout == "tall":  # stacked, each the full width
                assert targets.bottom <= workers.y and targets.width == workers.width == size[0]
            elif len(tables) > 1:  # side by side
                assert targets.y == workers.y and targets.right <= workers.x
            assert app.query_one("#card-sync", Card).border_title == ("sync" if size[0] < 120 else "weight sync")


async def test_below_80x24_it_says_the_terminal_is_too_small_and_comes_back() -> None:
    app = await incident()
    async with app.run_test(size=(79, 30)) as pilot:
        await ready(pilot)
        assert screen_text(app).strip() == "terminal too small: need 80x24, have 79x30"
        await pilot.resize_terminal(100, 23)
        await pilot.pause()
        assert screen_text(app).strip() == "terminal too small: need 80x24, have 100x23"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not app.query_one("#too-small", Static).display
        assert "targets 7/8" in screen_text(app) and cut_cells(app) == []


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_footer_never_cuts_a_key(size: tuple[int, int]) -> None:
    app = await incident()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        keys = list(app.query(FooterKey))
        palette = [k for k in keys if k.has_class("-command-palette")]
        assert len(palette) == 1
        bottom = screen_rows(app)[-1]
        shown = [k for k in keys if k not in palette and k.display]
        assert [k.key_display for k in shown[:3]] == ["q", "p", "?"]  # help (and so every key) always reachable
        for key in shown:
            assert key.region.right <= palette[0].region.x, (key.key_display, key.region, palette[0].region)
            assert f"{key.key_display} {key.description}" in bottom, bottom


async def test_the_footer_fits_again_after_resizes_behind_the_help_screen() -> None:
    """Seen in tmux: 80x24 with ? open, resized to 120x40, closed, back to 80x24: "a ▏^p palette"."""
    app = await incident()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.resize_terminal(120, 40)  # at once, as tmux sent them
        for _ in range(3):
            await pilot.pause(0.05)
        await pilot.resize_terminal(80, 24)
        for _ in range(3):
            await pilot.pause(0.05)
        keys = [k for k in app.query(FooterKey) if k.display]
        palette = next(k for k in keys if k.has_class("-command-palette"))
        assert all(k.region.right <= palette.region.x for k in keys if k is not palette)
        bottom = screen_rows(app)[-1]
        assert all(f"{k.key_display} {k.description}" in bottom for k in keys if k is not palette), bottom


# Everything compact the screen shows that a person has to look up.
COMPACT_MARKS = ("max 3 / 2", "▲ ▼ ▶", "╵", "┄", "—", "…", "40x time", "/s /h /k$ /Mt", "roll/s", "tok/s", "stale",
                 "scraped", "took", "1s/5m", "tgt", "green yellow red", "⚠ 58s old")


async def test_help_explains_every_compact_label_mark_and_unit_at_80x24() -> None:
    """``?`` at 80x24, scrolled through as a person would: every short label with its long form and meaning."""
    app = await incident()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        seen = []
        for _ in range(30):
            seen.append(screen_text(app))
            await pilot.press("pagedown")
            await pilot.pause()
        text = "\n".join(seen)
        for label, short in SHORT_LABELS.items():
            assert f"{label} ({short})" in text, (label, short)
        for mark in COMPACT_MARKS:
            assert mark in text, mark
