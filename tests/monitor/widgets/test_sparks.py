from __future__ import annotations

import math

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from ptmon.monitor.widgets.sparks import SparkCell
from tests.monitor.screen import screen_text

BARS = set("▁▂▃▄▅▆▇█")


def test_drawable_keeps_the_shape_and_drops_what_cannot_be_drawn() -> None:
    from ptmon.monitor.widgets.sparks import drawable

    assert drawable([1.0, math.nan, 3.0, math.inf, -math.inf, 2.0]) == [1.0, 3.0, 2.0]
    assert drawable([1e308, -1e308, 0.0]) == [5e307, -5e307, 0.0]  # same ratios, a finite spread
    assert drawable([2.0**53, 2.0**53]) == [2.0**53, 2.0**53]
    assert drawable([]) == []


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield SparkCell("score", id="s")


@pytest.mark.parametrize(
    "values",
    [[1e308, -1e308], [1e308, -1e308] * 30, [2.0**53] * 10, [0.5, math.nan, 0.7, math.inf], [math.nan] * 5,
     [1.7976931348623157e308, -1.7976931348623157e308, 0.0]],
)
async def test_a_sparkline_of_extreme_values_draws(values: list[float]) -> None:
    app = One()
    async with app.run_test(size=(40, 4)) as pilot:
        app.query_one(SparkCell).show(values, Text("now"))
        await pilot.pause()
        await pilot.resize_terminal(30, 4)
        await pilot.pause()
        text = screen_text(app)
        assert app.is_running and "cannot draw" not in text
        assert BARS & set(text)
