"""The live TUI fed numbers at the edge of what a float holds (issue 12 item 1).

One eval at a spend of 2^53 and of 1e16 (past 2^54 ``x ± 1`` is ``x``), evals and series at
±1e308 (where ``max - min`` overflows to inf), and values swinging between
the two from one poll to the next: the charts, the compact layout's
sparklines, the cards and the tables all draw, through resizes both ways,
and the app never ends. A widget that still fails to draw says so in its own
box and in the header, and the rest of the screen keeps updating.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot

from ptmon.monitor.app import PtmonApp
from ptmon.monitor.dashboard import Dashboard, EvalPoint
from ptmon.monitor.widgets import Card, Chart, ChartData, SparkCell
from ptmon.monitor.widgets import chart as chart_module
from tests.monitor.fakes import T0, FakeFeed
from tests.monitor.screen import screen_text
from tests.support.clock import FakeClock

WIDE, SMALL = (160, 48), (80, 24)
BIGS = {"2^53": 2.0**53, "1e16": 1e16}
HUGE = 1e308
SPARK_BARS = set("▁▂▃▄▅▆▇█")


def _extreme(d: Dashboard, case: str, poll: int) -> Dashboard:
    """``d`` with every number a chart, sparkline, card or table shows pushed to ``case``'s edge."""
    if case == "swinging":  # from one poll to the next: 1e16, then ±1e308, then back
        case = ("1e16", "1e308")[poll % 2]
    curve: tuple[EvalPoint, ...]
    if case in BIGS:
        big = BIGS[case]
        curve = (EvalPoint(timestamp=d.now - 60, spend_dollars=big, score=0.61),)
        value, swing = big, (big, big)
    else:  # spend -9.9e307 to 9.9e307: the x span overflows; the series swing -1e308 to 1e308
        curve = (EvalPoint(timestamp=d.now - 600, spend_dollars=-9.9e307, score=0.55),
                 EvalPoint(timestamp=d.now - 60, spend_dollars=9.9e307, score=0.61))
        value, swing = HUGE, (HUGE, -HUGE)
    times = [t for t, _ in d.rollout_rate_series]
    series = tuple((t, swing[i % 2]) for i, t in enumerate(times))
    workers = tuple(replace(w, rollouts_per_s=value, tokens_per_s=-value, policy_version=value, staleness=value,
                            mean_reward=-value) for w in d.workers)
    targets = tuple(replace(t, scrape_seconds=value, samples=int(value)) for t in d.targets)
    return replace(
        d, eval_curve=curve, score=curve[-1].score, baseline_score=curve[0].score,
        baseline_spend_dollars=curve[0].spend_dollars, ipd_points_per_kilodollar=value,
        marginal_ipd_points_per_kilodollar=-value, dollars_per_next_point=value,
        rollout_rate_series=series, weight_sync_series=series, rollout_rate_per_s=value,
        rollout_rate_median_10m=value / 3, rollout_tokens_per_s=value, weight_sync_p50_s=value,
        weight_sync_p99_s=value, weight_sync_last_s=value, weight_sync_bytes_per_s=value, policy_version=value,
        staleness_max=value, staleness_mean=value, spend_dollars=value, burn_dollars_per_hour=value,
        seconds_since_last_step=value, loss=-value, workers=workers, targets=targets,
    )


@dataclass
class ExtremeFeed(FakeFeed):
    case: str = "1e16"
    polls: int = 0

    def build(self, *, window_s: float) -> Dashboard:
        self.polls += 1
        return _extreme(super().build(window_s=window_s), self.case, self.polls)


async def _poll(pilot: Pilot[int]) -> None:
    await pilot.app.poll_once()  # type: ignore[attr-defined]
    await pilot.pause()


def _assert_drawn_whole(app: PtmonApp) -> None:
    text = screen_text(app)
    assert app.is_running
    assert "cannot draw" not in text and "feed error" not in text, text


def _assert_numbers_short(app: PtmonApp) -> None:
    """Beyond what a card or a column holds a number is shown in scientific notation, never 300 digits."""
    values = [Text(v).plain if isinstance(v, str) else v.plain for card in app.query(Card) for _, v in card.rows]
    assert values and all(len(v) <= 13 for v in values), values
    assert any("e+" in v for v in values)
    for panel in ("targets", "workers"):
        table = app.table(panel)
        cells = [table.get_row_at(i)[1:-1] for i in range(table.row_count)]  # the numbers: not name or url
        assert all(len(c.plain) <= 12 for row in cells for c in row), cells


@pytest.mark.parametrize("start", [WIDE, SMALL], ids=["wide-first", "compact-first"])
@pytest.mark.parametrize("case", ["2^53", "1e16", "1e308", "swinging"])
async def test_extreme_numbers_draw_in_the_wide_and_compact_layouts_through_resizes(
        case: str, start: tuple[int, int]) -> None:
    clock = FakeClock(T0)
    feed = ExtremeFeed(clock=clock, case=case)
    app = PtmonApp(feed, clock=clock, interval_s=1.0, window_s=300.0)
    other = SMALL if start == WIDE else WIDE
    async with app.run_test(size=start) as pilot:
        for size in (start, other, start):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            for _ in range(2):  # two polls: "swinging" goes 1e16 -> ±1e308 -> 1e16 under each layout
                clock.advance(1)
                await _poll(pilot)
            _assert_drawn_whole(app)
            text = screen_text(app)
            if size == WIDE:
                for chart in app.query(Chart):
                    assert chart.data.points
                assert sum(0x2800 < ord(ch) <= 0x28FF for ch in text) > 10  # the braille lines are there
            else:
                assert all(app.query_one(f"#spark-{k}", SparkCell)._values for k in ("ipd", "rollout", "sync"))
                assert SPARK_BARS & set(text)
            _assert_numbers_short(app)
        assert app.return_code is None  # still running: nothing ended the app


async def test_a_widget_that_cannot_draw_says_so_and_the_rest_keeps_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    real_plot = chart_module.plot

    def plot(data: ChartData, **kw: Any) -> Text:
        if data.empty == "no evals yet":  # only the intelligence-per-dollar chart
            raise ZeroDivisionError("float division by zero")
        return real_plot(data, **kw)

    monkeypatch.setattr(chart_module, "plot", plot)
    clock = FakeClock(T0)
    feed = FakeFeed(clock=clock)
    app = PtmonApp(feed, clock=clock, interval_s=1.0, window_s=300.0)
    async with app.run_test(size=WIDE) as pilot:
        await _poll(pilot)
        await pilot.pause()
        text = screen_text(app)
        assert app.is_running
        assert "feed error: display: chart-ipd: ZeroDivisionError: float division by zero" in text
        assert "⚠ cannot draw: ZeroDivisionError" in text
        ipd = app.query_one("#chart-ipd", Chart)
        assert ipd.draw_error == "ZeroDivisionError: float division by zero"
        assert app.query_one("#chart-rollout", Chart).draw_error is None
        before = app.dashboard
        clock.advance(5)
        feed.kill("rollout-2")
        await _poll(pilot)
        assert app.dashboard is not before and "targets 7/8" in screen_text(app)  # the rest keeps updating
        monkeypatch.undo()  # the chart can draw again: its error leaves the header
        ipd.invalidate()
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "cannot draw" not in text and "display: chart-ipd" not in text
        assert ipd.draw_error is None
