"""A bridge on a real Colocated registry served over loopback and scraped by a real LiveFeed.

One clock drives the exporters (GPU meter, last-step stamp) and the feed, so the Dashboard's rates are
exact: steps logged one per ``step_s`` read as 1 / ``step_s`` steps per second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ptmon.exporters import Colocated, serve
from ptmon.exporters.bridges import MetricsBridge
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from tests.monitor.helpers import T0, Clock

__all__ = ["bridge_dashboard", "last_value", "window_s", "TARGET"]

TARGET = "loop"
Dicts = Sequence[tuple[Mapping[str, object], int | None]]


async def bridge_dashboard(framework: str, step_dicts: Callable[[int], Dicts], *, steps: int = 4,
                           step_s: float = 10.0, rollouts_per_step: int | None = None,
                           ) -> tuple[Dashboard, LiveFeed, MetricsBridge]:
    """Scrape once, then for each step 1..``steps``: advance the clock ``step_s``, ``bridge.log`` every
    (dict, step) of ``step_dicts(step)``, scrape. The Dashboard spans the whole run (``window_s``)."""
    clock = Clock(T0)
    loop = Colocated(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0, clock=clock,
                     wall_clock=clock)
    bridge = MetricsBridge(framework, trainer=loop.trainer, rollouts=loop.rollouts, evals=loop.evals,
                           rollouts_per_step=rollouts_per_step)
    server = serve(loop.registry)
    feed = LiveFeed(Settings(targets=(Target(name=TARGET, url=server.url),), interval_s=step_s, timeout_s=2.0),
                    clock=clock)
    try:
        await feed.collect_once()
        for i in range(1, steps + 1):
            clock.t = T0 + step_s * i
            for metrics, step in step_dicts(i):
                bridge.log(metrics, step=step)
            await feed.collect_once()
        d = await feed.dashboard(window_s=window_s(steps, step_s))
    finally:
        await feed.aclose()
        server.close()
    return d, feed, bridge


def window_s(steps: int, step_s: float) -> float:
    """The Dashboard's window: half a step more than the run, so the scrape before the first step is inside
    it ((start, end]) and every step's increase counts; rates are then increases over this window."""
    return step_s * (steps + 0.5)


def last_value(feed: LiveFeed, name: str, **labels: str) -> float | None:
    """The newest scraped value of the series ``name`` with ``labels`` (None when never scraped)."""
    for series in feed.store.series(TARGET, name):
        if all(series.labels.get(k) == v for k, v in labels.items()):
            last = series.last()
            return None if last is None else last[1]
    return None
