"""The live screen says when sync latencies are per-scrape means (issue 14 item 9), on the card and the chart."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text

from ptmon.monitor.app import PtmonApp
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.widgets import Card, Chart
from tests.monitor.fakes import T0, FakeFeed
from tests.monitor.test_app import WIDE, settle
from tests.support.clock import FakeClock


@dataclass
class AveragedFeed(FakeFeed):
    averaged: bool = True

    def build(self, *, window_s: float) -> Dashboard:
        return replace(super().build(window_s=window_s), weight_sync_averaged=self.averaged)


async def shown(averaged: bool) -> tuple[list[str], str]:
    clock = FakeClock(T0)
    app = PtmonApp(AveragedFeed(clock=clock, averaged=averaged), clock=clock, interval_s=1.0, window_s=300.0)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        labels = [str(label) for label, _ in app.query_one("#card-sync", Card).rows]
        subtitle = Text.from_markup(app.query_one("#chart-sync", Chart).border_subtitle or "").plain
    return labels, subtitle


async def test_per_scrape_means_are_labelled_on_the_card_and_chart() -> None:
    labels, subtitle = await shown(True)
    assert "last avg" in labels and "last" not in labels
    assert subtitle.endswith(" · per-scrape means")
    labels, subtitle = await shown(False)
    assert "last" in labels and "per-scrape" not in subtitle
