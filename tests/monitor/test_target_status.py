"""A target that answers with nothing ptmon reads (a node exporter, say) is said to, not shown as plain "up".

Otherwise the screen is all dashes at level ok with no word why.
"""

from __future__ import annotations

import io

from prometheus_client import CollectorRegistry, Gauge
from rich.console import Console

from ptmon.exporters.serve import serve
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.snapshot import render
from ptmon.monitor.widgets.tables import TargetsTable
from tests.monitor.helpers import T0, Clock
from tests.monitor.widgets.test_tables import Host


async def test_a_node_exporter_reads_up_but_nothing_recognised_on_screen_and_in_the_table() -> None:
    registry = CollectorRegistry()
    Gauge("node_load1", "1m load average.", registry=registry).set(0.42)
    server = serve(registry)
    clock = Clock(T0)
    feed = LiveFeed(Settings(targets=(Target(name="node", url=server.url),), interval_s=1.0, timeout_s=0.5),
                    clock=clock)
    try:
        await feed.collect_once()
        d = await feed.dashboard(window_s=60.0)
    finally:
        await feed.aclose()
        server.close()
    (t,) = d.targets
    assert t.up is True and t.recognised is False
    buf = io.StringIO()
    render(d, Console(file=buf, width=200))
    assert "up, nothing recognised" in buf.getvalue()
    app = Host()
    async with app.run_test(size=(160, 10)) as pilot:
        table = app.query_one(TargetsTable)
        table.show(d.targets, now=d.now)
        await pilot.pause()
        text = "".join(seg.text for strip in table.render_lines(table.region) for seg in strip)
    assert "nothing recognised (" in text
