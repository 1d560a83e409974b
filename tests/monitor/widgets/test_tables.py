"""The sort/filter table in a minimal app: rows in, keys out, in screen order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from ptmon.monitor.dashboard import TargetHealth, WorkerRow
from ptmon.monitor.widgets.tables import TargetsTable, WorkersTable


class Host(App):
    def compose(self) -> ComposeResult:
        yield TargetsTable(id="targets")
        yield WorkersTable(id="workers")


TARGETS = (
    TargetHealth("trainer", "http://t", "trainer", True, last_scrape=99.0, scrape_seconds=0.004, samples=300),
    TargetHealth("rollout-1", "http://r1", "rollout", False, last_scrape=98.0, error="refused"),
    TargetHealth("rollout-0", "http://r0", "rollout", None),
)


@asynccontextmanager
async def targets_shown() -> AsyncIterator[tuple[Pilot, TargetsTable]]:
    """A TargetsTable in a running app, showing TARGETS at t=100."""
    app = Host()
    async with app.run_test() as pilot:
        table = app.query_one(TargetsTable)
        table.show(TARGETS, now=100.0)
        await pilot.pause()
        yield pilot, table


async def test_sort_cycles_columns_unknowns_last_and_filter_matches_any_cell() -> None:
    async with targets_shown() as (_, table):
        assert table.visible_keys() == ["rollout-0", "rollout-1", "trainer"]
        table.cycle_sort()  # role
        assert table.sort_label == "role"
        table.cycle_sort()  # up: down first, then unknown, then up
        assert table.visible_keys() == ["rollout-1", "rollout-0", "trainer"]
        table.sort_by(4)  # scrape time: only the trainer knows it; unknowns last in either direction
        assert table.visible_keys()[0] == "trainer"
        table.sort_by(4)
        assert table.sort_reverse and table.visible_keys()[0] == "trainer"
        table.set_filter("REFUSED")
        assert table.visible_keys() == ["rollout-1"]
        assert "1/3" in str(table.border_title)
        table.set_filter("")
        assert len(table.visible_keys()) == 3


async def test_the_cursor_stays_on_its_row_across_updates() -> None:
    async with targets_shown() as (pilot, table):
        table.move_cursor(row=table.visible_keys().index("trainer"))
        table.show(TARGETS[:2] + (TargetHealth("a-new-one", "http://n", None, None),), now=101.0)
        await pilot.pause()
        assert table.visible_keys()[0] == "a-new-one"
        assert table.cursor_key == "trainer"


async def test_a_target_warning_shows_in_the_error_column_and_is_filtered_on() -> None:
    warned = "GPU-hour price $-3 ignored (expected $0 to $1,000); the default price is used"
    app = Host()
    async with app.run_test(size=(220, 20)) as pilot:
        table = app.query_one(TargetsTable)
        table.show((TargetHealth("w", "http://w", "rollout", True, last_scrape=99.0, warning=warned),), now=100.0)
        await pilot.pause()
        shown = "".join(seg.text for y in range(table.size.height) for seg in table.render_line(y))
        assert f"⚠ {warned}"[:60] in shown
        table.set_filter("price $-3")
        assert table.visible_keys() == ["w"]


async def test_unchanged_rows_are_not_rebuilt() -> None:
    app = Host()
    async with app.run_test() as pilot:
        table = app.query_one(WorkersTable)
        rows = (WorkerRow("w0", "rollout", True, 2.0, 1000.0, 5.0, 0.0, 0.5, "ok"),)
        table.show(rows, now=1.0)
        await pilot.pause()
        before = table._shown
        table.show(rows, now=2.0)
        assert table._shown is before


def test_row_regions_merge_runs_of_rows_and_keep_the_offset() -> None:
    from textual.geometry import Region

    from ptmon.monitor.widgets.lines import row_regions

    assert row_regions([], 10) == []
    assert row_regions([3, 1, 2, 7, 7], 10) == [Region(0, 1, 10, 3), Region(0, 7, 10, 1)]
    assert row_regions([0, 1], 5, top=-4) == [Region(0, -4, 5, 2)]


def test_natural_key_orders_numbers_by_value_and_ignores_case() -> None:
    from ptmon.monitor.widgets.tables import natural_key

    names = ["rollout-10", "rollout-2", "Rollout-3", "rollout-1", "a", "a10", "a2", "b", "gpu-1.10", "gpu-1.9"]
    assert sorted(names, key=natural_key) == ["a", "a2", "a10", "b", "gpu-1.9", "gpu-1.10", "rollout-1",
                                              "rollout-2", "Rollout-3", "rollout-10"]
    assert natural_key(None) is None
    assert natural_key("w") != natural_key("W")  # a total order: case breaks ties


async def test_hidden_columns_leave_the_rows_and_header_clicks_sort_by_the_shown_column() -> None:
    async with targets_shown() as (pilot, table):
        table.set_hidden({"role", "up"})
        await pilot.pause()
        assert [c.plain for c in table.get_row("trainer")][:2] == ["trainer", "1s ago"]  # name, last scrape
        table.sort_by(table.shown_indexes[1])
        assert table.sort_label == "last scrape"
        table.cycle_sort()  # the next shown column: scrape (up and role are skipped)
        assert table.sort_label == "scrape"
        table.set_hidden(set(table.column_labels))  # everything: the first column stays
        assert table.shown_indexes == (0,)
        table.reverse_sort()
        assert table.sort_reverse


async def test_a_column_left_out_for_a_long_error_comes_back_once_the_error_is_gone() -> None:
    # Columns keep their widest width so ticking values don't make the table dance; but an error that
    # passed (a target's first scrape timing out on a busy machine) must not hide the URLs for the rest of
    # the run: a column whose widest value is now under half its remembered width narrows to it.
    long_error = "no answer from the target within 0.8 s (timeout; it may be busy or overloaded)" * 2
    app = Host()
    async with app.run_test(size=(100, 24)) as pilot:
        table = app.query_one(TargetsTable)
        url = table.column_labels.index("url")
        up = tuple(TargetHealth(f"rollout-{i}", f"http://10.0.0.{i}:8000/metrics", "rollout", True,
                                last_scrape=99.0, scrape_seconds=0.004, samples=53) for i in range(2))
        table.show(up, now=100.0)
        await pilot.pause()
        assert url in table.shown_columns
        table.show((TargetHealth("rollout-0", up[0].url, "rollout", False, last_scrape=99.0, error=long_error),
                    up[1]), now=101.0)
        await pilot.pause()
        assert url not in table.shown_columns  # the error takes the room; the URL gives way first
        table.show(up, now=102.0)
        await pilot.pause()
        assert url in table.shown_columns


def _screen_rows(table: TargetsTable) -> list[str]:
    return ["".join(seg.text for seg in table.render_line(y)) for y in range(1, table.row_count + 1)]


async def test_a_ticking_cell_is_drawn_anew_while_its_row_keeps_the_other_cells() -> None:
    """Rows rendered cell by cell reuse unchanged cells' segments: a changed value must still appear,
    in its own row only, and a sort change must move the rows with their current values."""
    async with targets_shown() as (pilot, table):
        rows = _screen_rows(table)
        assert any("1s ago" in r and "trainer" in r for r in rows)
        table.show(TARGETS, now=107.0)  # only the ages tick
        await pilot.pause()
        rows = _screen_rows(table)
        assert any("8s ago" in r and "trainer" in r for r in rows)
        assert any("9s ago" in r and "rollout-1" in r for r in rows)
        assert not any("1s ago" in r or "2s ago" in r for r in rows)
        faster = (TargetHealth("trainer", "http://t", "trainer", True, last_scrape=106.0, scrape_seconds=0.25,
                               samples=301), *TARGETS[1:])
        table.show(faster, now=107.0)
        await pilot.pause()
        trainer = next(r for r in _screen_rows(table) if "trainer" in r)
        assert "250ms" in trainer or "0.25" in trainer
        assert "301" in trainer and "1s ago" in trainer
        table.sort_by(table.column_labels.index("samples"))
        table.sort_by(table.column_labels.index("samples"))  # most samples first
        await pilot.pause()
        assert table.visible_keys()[0] == "trainer"
        assert "301" in _screen_rows(table)[0]


def test_a_row_drawn_cell_by_cell_has_the_segments_of_the_row_drawn_whole() -> None:
    """The row's Strip must be what rendering the assembled row gave (segment for segment), or the
    screen and its snapshots would change: styled, unstyled, cut, padded, empty, wide and row-styled cells."""
    import random

    from rich.console import Console
    from rich.text import Text

    from ptmon.monitor.format import lit
    from ptmon.monitor.widgets.tables import _join, _piece

    console = Console(width=200)

    def whole(cells: list[Text], widths: list[int]) -> tuple[list, int]:
        parts = [Text(" ")]
        for k, c in enumerate(cells):
            c = c.copy()
            c.truncate(widths[k], pad=True, overflow="ellipsis")
            parts += [Text("  ") if k else Text(""), c]
        text = Text.assemble(*parts, no_wrap=True, end="")
        return list(text.render(console)), text.cell_len

    rnd = random.Random(18)
    styles = ["", "", "bold", "red", "dim", "bold red", "yellow"]
    words = ["", "a", "rollout-12", "● up", "3s ago", "1.2ms", "http://x:1/metrics", "⚠ wide 漢字", "—"]
    for _ in range(3000):
        cells = []
        for _ in range(rnd.randint(1, 5)):
            kind = rnd.random()
            if kind < 0.3:
                cell = Text(rnd.choice(words), style=rnd.choice(styles))
            elif kind < 0.5:
                cell = lit(rnd.choice(words), style=rnd.choice(styles))
            else:
                cell = Text.assemble(Text(rnd.choice(words), style=rnd.choice(styles)),
                                     Text(rnd.choice(words), style=rnd.choice(styles)))
            if rnd.random() < 0.3 and (row_style := rnd.choice(styles)):
                cell.stylize_before(row_style)
            cells.append(cell)
        widths = [rnd.randint(0, 14) for _ in cells]
        assert _join([_piece(c, w, console) for c, w in zip(cells, widths, strict=True)]) == whole(cells, widths)
