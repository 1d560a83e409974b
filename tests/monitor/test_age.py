"""A target's data age: shown when its last good scrape is older than two intervals plus the timeout.

A real exporter is scraped over loopback by a real LiveFeed on one settable
clock; then the clock moves on without a scrape (a target that stopped
answering, or a monitor that stopped scraping it), and the Dashboard must
say how old the numbers it still shows are.
"""

from __future__ import annotations

import pytest

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target, stale_after_s
from ptmon.monitor.snapshot import to_json
from tests.monitor.helpers import T0, Clock


def test_stale_after_is_two_intervals_plus_the_timeout() -> None:
    assert stale_after_s(1.0, None) == pytest.approx(2.8)  # the default timeout is 0.8 x interval
    assert stale_after_s(5.0, 2.0) == 12.0


async def test_a_target_not_scraped_for_a_while_reads_old_in_the_dashboard_and_the_json() -> None:
    clock = Clock(T0)
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0, clock=clock)
    server = serve(worker.registry)
    feed = LiveFeed(Settings(targets=(Target(name="w", url=server.url),), interval_s=1.0, timeout_s=0.5),
                    clock=clock)
    try:
        worker.record_rollout(env="math", tokens=10, reward=1.0, seconds=1.0, policy_version=1, outcome="ok")
        await feed.collect_once()
        clock.t = T0 + 2.0
        fresh = await feed.dashboard(window_s=60.0)
        clock.t = T0 + 10.0  # no scrape since T0
        old = await feed.dashboard(window_s=60.0)
    finally:
        await feed.aclose()
        server.close()
    assert fresh.stale_after_s == old.stale_after_s == 2.5
    (f,), (o,) = fresh.targets, old.targets
    assert f.age_s == 2.0 and not f.is_old(fresh.stale_after_s)
    assert o.up is True and o.age_s == 10.0 and o.is_old(old.stale_after_s)
    assert to_json(old)["targets"][0]["age_s"] == 10.0
