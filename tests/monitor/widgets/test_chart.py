from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from ptmon.monitor.format import fmt_num
from ptmon.monitor.widgets.chart import ChartData, plot


def braille(text: str) -> int:
    return sum(1 for ch in text if 0x2800 < ord(ch) <= 0x28FF)


def test_plot_fills_exactly_the_box_it_is_given() -> None:
    data = ChartData(points=tuple((float(t), float(t % 7)) for t in range(100)), x_labels=("-5m", "now"))
    for width, height in ((40, 10), (80, 3), (12, 2)):
        lines = plot(data, width=width, height=height).plain.split("\n")
        assert len(lines) == height
        assert max(len(line) for line in lines) <= width
    lines = plot(data, width=40, height=10).plain.split("\n")
    assert lines[-1].strip().startswith("-5m") and lines[-1].rstrip().endswith("now")
    assert lines[0].lstrip().startswith("6")  # y max label on the top row
    assert lines[-2].lstrip().startswith("0")  # y min label on the bottom plot row


def test_a_rising_line_climbs_from_bottom_left_to_top_right() -> None:
    data = ChartData(points=((0.0, 0.0), (1.0, 1.0)))
    rows = plot(data, width=21, height=5).plain.split("\n")[:4]
    plot_rows = [row.split("│", 1)[1] for row in rows]
    first_col = [i for i, row in enumerate(plot_rows) if row[0].strip()]
    last_col = [i for i, row in enumerate(plot_rows)
                if row.rstrip() and len(row) >= len(plot_rows[0]) and row[-1].strip()]
    assert first_col == [3] and last_col == [0]
    assert all(braille(row) for row in plot_rows)  # connected: every row has dots


def test_marks_and_reference_line_are_drawn_where_no_dots_are() -> None:
    data = ChartData(points=((0.0, 1.0), (10.0, 1.0)), marks=(5.0,), hline=0.0, x_range=(0.0, 10.0))
    text = plot(data, width=30, height=8).plain
    assert "╎" in text
    assert "┄" in text


def test_empty_and_non_finite_data_say_so() -> None:
    assert "no data yet" in plot(ChartData(), width=30, height=5).plain
    assert "no evals" in plot(ChartData(points=((math.nan, 1.0),), empty="no evals"), width=30, height=5).plain
    assert plot(ChartData(), width=0, height=5).plain == ""


def test_a_flat_series_gets_a_range_and_points_outside_the_window_are_skipped() -> None:
    data = ChartData(points=((0.0, 5.0), (1.0, 5.0), (50.0, 99.0)), x_range=(0.0, 1.0))
    text = plot(data, width=30, height=6).plain
    assert braille(text) > 0
    assert "99" not in text  # the y range comes from the points inside the window


async def test_a_new_subtitle_repaints_only_the_bottom_border_row_and_shows() -> None:
    from textual.app import App, ComposeResult
    from textual.geometry import Region

    from ptmon.monitor.widgets.chart import Chart
    from tests.monitor.screen import screen_text

    refreshed: list[tuple[Region, ...]] = []

    class SpyChart(Chart):
        def refresh(self, *regions: Region, **kwargs: bool) -> SpyChart:
            if not self._hold_refresh:
                refreshed.append(regions)
            return super().refresh(*regions, **kwargs)

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield SpyChart("rollouts/s", id="c")

    data = ChartData(points=tuple((float(t), float(t % 5)) for t in range(50)))
    app = One()
    async with app.run_test(size=(60, 14)) as pilot:
        chart = app.query_one(SpyChart)
        chart.show(data, subtitle="41.5/s · ╎ weight sync")
        await pilot.pause()
        assert "41.5/s" in screen_text(app)
        refreshed.clear()
        chart.show(data, subtitle="42.7/s · ╎ weight sync")  # same points: only the subtitle changed
        await pilot.pause()
        # One region: the widget's last row (the bottom border), given relative to the content as refresh() wants.
        assert len(refreshed) == 1 and len(refreshed[0]) == 1
        (row,) = refreshed[0]
        assert row.translate(chart.content_offset) == Region(0, chart.outer_size.height - 1, chart.outer_size.width, 1)
        text = screen_text(app)
        assert "42.7/s" in text and "41.5/s" not in text


MAX = 1.7976931348623157e308


@pytest.mark.parametrize(
    "points",
    [
        ((2.0**53, 0.61),),  # one eval at a spend of 2^53
        ((1e16, 0.61),),  # past 2^54: x - 1.0 == x + 1.0, the old zero-width span
        ((1e20, 1e20),),  # a GPU-seconds counter of 1e20, alone
        ((-9.9e307, 0.55), (9.9e307, 0.61)),  # x1 - x0 overflows to inf
        ((0.0, -1e308), (1.0, 1e308)),  # yhi - ylo overflows to inf
        tuple((float(t), (-1) ** t * MAX) for t in range(40)),  # swinging between the extremes
        ((0.0, MAX), (1.0, MAX)),  # flat at the top of the range: the pad must not overflow
        ((-MAX, -MAX), (MAX, MAX)),
        ((5e-324, 5e-324), (1e-323, 1e-320)),  # subnormals
    ],
)
def test_extreme_finite_numbers_are_drawn_not_raised(points: tuple[tuple[float, float], ...]) -> None:
    formats: tuple[Callable[[float], str], ...] = (fmt_num, lambda _: "y")
    for fmt in formats:  # short labels too: then the plot area is there to divide
        data = ChartData(points=points, marks=(points[0][0],), hline=points[-1][1], y_format=fmt)
        for width, height in ((40, 10), (14, 3), (80, 20)):
            lines = plot(data, width=width, height=height).plain.split("\n")
            assert len(lines) == height and max(len(line) for line in lines) <= width
            assert braille("".join(lines)) > 0


def test_a_window_that_is_not_finite_falls_back_to_the_points_own_range() -> None:
    data = ChartData(points=((0.0, 1.0), (1.0, 2.0)), x_range=(-math.inf, math.nan))
    assert braille(plot(data, width=30, height=6).plain) > 0



def test_a_sync_every_few_seconds_leaves_the_line_whole_its_marks_on_the_axis_row() -> None:
    """Issue 16: at demo speed the rollouts chart was a wall of ╎; on the axis row the line keeps every dot."""
    points = tuple((float(t), 10.0 + math.sin(t / 9)) for t in range(301))
    syncs = tuple(float(t) for t in range(0, 301, 2))  # a sync every 2 s over a 5 m window
    bare = plot(ChartData(points=points, x_range=(0.0, 300.0), x_labels=("-5m", "now")), width=60, height=10)
    marked = plot(ChartData(points=points, x_range=(0.0, 300.0), marks=syncs, marks_on_axis=True,
                            x_labels=("-5m", "now")), width=60, height=10).plain.split("\n")
    assert marked[:-1] == bare.plain.split("\n")[:-1]  # the plot rows are exactly the line's
    assert "╎" not in "".join(marked) and marked[-1].count("╵") > 40
    assert marked[-1].lstrip().startswith("-5m") and marked[-1].rstrip().endswith("now")
    # With no axis row (2 lines high) they stay in the plot, thinned to one in six cells.
    short = plot(ChartData(points=points, x_range=(0.0, 300.0), marks=syncs, marks_on_axis=True),
                 width=60, height=2).plain.split("\n")
    ticks = [i for i, ch in enumerate(short[0]) if ch == "╎"]
    assert ticks and all(b - a >= 6 for a, b in zip(ticks, ticks[1:], strict=False))


def test_y_zero_puts_zero_on_the_axis_where_the_fit_would_not() -> None:
    points = ((0.0, 95.0), (1.0, 105.0))  # ±5% noise: fitted, it fills the box
    fitted = plot(ChartData(points=points), width=30, height=6).plain.split("\n")
    zero = plot(ChartData(points=points, y_zero=True), width=30, height=6).plain.split("\n")
    assert fitted[-2].lstrip().startswith("95") and zero[-2].lstrip().startswith("0│")
    assert zero[0].lstrip().startswith("105")


def test_error_bars_are_columns_of_dots_through_their_points_and_widen_the_range() -> None:
    # A flat line at 0.5 with a ±0.25 bar on the middle point: the y range grows to 0.25..0.75 (labels) and
    # the bar's column has dots on every plot row; without the bar the line is one row of dots.
    flat = ChartData(points=((0.0, 0.5), (1.0, 0.5), (2.0, 0.5)), y_format=lambda y: f"{y:.2f}")
    barred = ChartData(points=flat.points, errors=(None, 0.25, None), y_format=flat.y_format)
    rows = plot(barred, width=21, height=5).plain.split("\n")[:4]
    assert rows[0].startswith("0.75") and rows[3].startswith("0.25")
    plot_rows = [row.split("│", 1)[1] for row in rows]
    middle = len(plot_rows[0]) // 2
    assert all(braille(row[middle]) for row in plot_rows)  # the bar: top to bottom
    assert all(not braille(row[0]) for row in (plot_rows[0], plot_rows[3]))  # the line's ends stay on 0.5
    plain = [row.split("│", 1)[1] for row in plot(flat, width=21, height=5).plain.split("\n")[:4]]
    assert sum(1 for row in plain if braille(row)) == 1
    # an unknown or non-finite error draws no bar
    none = ChartData(points=flat.points, errors=(None, math.nan, None), y_format=flat.y_format)
    assert plot(none, width=21, height=5).plain == plot(flat, width=21, height=5).plain
