"""Shared by the data-layer tests: a settable clock, and one real rollout exporter scraped over loopback.

One clock drives both sides (the exporter's GPU meter and the feed's scrape stamps), so the numbers a
test records are exactly the numbers the Dashboard must show.
"""

from __future__ import annotations

from collections.abc import Callable

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from tests.support.clock import FakeClock

__all__ = ["Clock", "T0", "scrape_one_worker"]

T0 = 1000.0


Clock = FakeClock  # the suite's one clock, under the name these tests know



async def scrape_one_worker(record_round: Callable[[RolloutExporter], None], *, rounds: int = 11,
                            step_s: float = 10.0, window_s: float = 100.0,
                            gpu_hour_price: float = 1.0) -> tuple[Dashboard, LiveFeed]:
    """A real RolloutExporter ("w") served on loopback: ``rounds`` times, at T0 + i * step_s, call
    ``record_round`` on it and scrape it once; then the Dashboard over ``window_s`` and the (closed) feed,
    whose store a test may still read."""
    clock = Clock(T0)
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=gpu_hour_price,
                             clock=clock)
    server = serve(worker.registry)
    feed = LiveFeed(Settings(targets=(Target(name="w", url=server.url),), interval_s=step_s, timeout_s=2.0),
                    clock=clock)
    try:
        for i in range(rounds):
            clock.t = T0 + step_s * i
            record_round(worker)
            await feed.collect_once()
        d = await feed.dashboard(window_s=window_s)
    finally:
        await feed.aclose()
        server.close()
    return d, feed
