"""Rates stay right across a change of the scrape interval.

Samples 60 s apart and then 0.5 s apart in one range make PromQL's
extrapolation read 30-40% low for a whole window (and the rate-drop alert
and the ▼ arrow follow). The rate range restarts at the change, as for a
fresh monitor. A real exporter is scraped over loopback on one settable clock
while its counter moves at exactly 10 rollouts/s.
"""

from __future__ import annotations

import pytest

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from tests.monitor.helpers import T0, Clock

RATE = 10.0  # rollouts per second


async def test_the_rollout_rate_is_exact_after_going_from_60_s_to_half_a_second() -> None:
    clock = Clock(T0)
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0, clock=clock)
    server = serve(worker.registry)
    feed = LiveFeed(Settings(targets=(Target(name="w", url=server.url),), interval_s=60.0, timeout_s=0.4,
                             window_s=300.0), clock=clock)
    done = 0

    async def scrape_at(t: float) -> None:
        nonlocal done
        clock.t = t
        due = int(round((t - T0) * RATE))
        for _ in range(due - done):
            worker.record_rollout(env="math", tokens=1, reward=1.0, seconds=0.1, policy_version=1, outcome="ok")
        done = due
        await feed.collect_once()

    try:
        for k in range(4):  # every 60 s for three minutes
            await scrape_at(T0 + 60.0 * k)
        changed = T0 + 180.0
        feed.set_interval(0.5)
        for k in range(1, 41):  # then every 0.5 s for 20 s
            await scrape_at(changed + 0.5 * k)
        d = await feed.dashboard(window_s=300.0)
    finally:
        await feed.aclose()
        server.close()
    assert d.rollout_rate_per_s == pytest.approx(RATE, rel=0.01)
    (row,) = d.workers
    assert row.rollouts_per_s == pytest.approx(RATE, rel=0.01)
