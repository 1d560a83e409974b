"""policy_not_advancing (issue 13): a real trainer whose every sync fails, scraped over loopback."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
from rich.console import Console

from ptmon.exporters import TrainerExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.sections.policy import held_since, increase_since
from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.snapshot import render, to_json
from ptmon.monitor.store import Series
from tests.monitor.helpers import T0, Clock

STEP_S = 10.0  # one step, one sync and one scrape each 10 s


async def run_a_trainer(rounds: int, *, syncs_fail: bool) -> list[Dashboard]:
    """Each round: a step, a sync (raising ConnectionError when ``syncs_fail``, else publishing version i + 1),
    one scrape; the Dashboard after each scrape, alerts evaluated by the feed as the TUI's are."""
    wall, mono = Clock(T0), Clock(0.0)
    trainer = TrainerExporter(run="r", model="m", algorithm="grpo", clock=mono, wall_clock=wall)
    server = serve(trainer.registry)
    feed = LiveFeed(Settings(targets=(Target(name="trainer", url=server.url),), interval_s=STEP_S, timeout_s=2.0),
                    clock=wall)
    out = []
    try:
        for i in range(rounds):
            wall.t = T0 + STEP_S * i
            with trainer.step():
                mono.t += 1.0
            with contextlib.suppress(ConnectionError), trainer.weight_sync(version=i + 1):
                mono.t += 0.01
                if syncs_fail:
                    raise ConnectionError("broadcast: peer gone")
            await feed.collect_once()
            out.append(await feed.dashboard(window_s=300.0))
        return out
    finally:
        await feed.aclose()
        server.close()


def levels(d: Dashboard) -> dict[str, str]:
    return {a.name: a.level for a in d.alerts}


async def test_every_sync_failing_raises_both_alerts_each_in_its_time() -> None:
    limit = Thresholds().policy_stuck_s
    rounds = int(limit // STEP_S) + 3
    ds = await run_a_trainer(rounds, syncs_fail=True)
    # weight_sync_failing within two intervals of the first failure (round 0's, before the first scrape)
    assert "weight_sync_failing" in levels(ds[1])
    assert all(levels(d).get("weight_sync_failing") == "critical" for d in ds[2:])
    # policy_not_advancing once the version (0: never published) has held past the limit, not before
    first = next(i for i, d in enumerate(ds) if "policy_not_advancing" in levels(d))
    assert ds[first].policy_held_s is not None and ds[first].policy_held_s > limit
    assert ds[first - 1].policy_held_s is not None and ds[first - 1].policy_held_s <= limit
    assert first == int(limit // STEP_S) + 1  # held 310 s at round 31 (the first scrape showed it at round 0)
    assert levels(ds[first])["policy_not_advancing"] == "critical"
    assert ds[first].policy_held_steps == first and ds[first].policy_held_sync_attempts == first
    alert = next(a for a in ds[-1].alerts if a.name == "policy_not_advancing")
    assert alert.since == ds[first].now  # kept across evaluations
    assert alert.message.startswith("policy version 0 has not moved for 5m")


async def test_syncs_that_publish_raise_neither() -> None:
    ds = await run_a_trainer(int(Thresholds().policy_stuck_s // STEP_S) + 3, syncs_fail=False)
    assert all("policy_not_advancing" not in levels(d) and "weight_sync_failing" not in levels(d) for d in ds)
    assert ds[-1].policy_held_s == 0.0  # the last scrape showed a new version
    # one scrape since: nothing counted over it yet (unknown, not a made-up 0)
    assert ds[-1].policy_held_sync_attempts is None and ds[-1].policy_held_steps is None


def series(*points: tuple[float, float]) -> Series:
    s = Series("v", {}, capacity=100)
    for t, v in points:
        s.append(t, v)
    return s


def test_held_since_is_the_first_scrape_of_the_current_value() -> None:
    assert held_since(series()) is None
    assert held_since(series((1, 3), (2, 3))) == 1  # no change seen: since the first point, a lower bound
    assert held_since(series((1, 2), (2, 3), (3, 3), (4, float("nan")), (5, 3))) == 2
    assert held_since(series((1, 2), (2, 3), (3, 2))) == 3  # a restart that republished 2 is a change


def test_increase_since_counts_scrapes_from_then_on_across_a_reset() -> None:
    c = series((1, 5), (2, 6), (3, 8), (4, 1), (5, 2))
    assert increase_since([c], 2) == pytest.approx(2 + 1 + 1)  # 6 -> 8, reset to 1, 1 -> 2
    assert increase_since([c], 5) is None  # one point: no increase known


async def test_the_snapshot_says_so_in_text_and_json() -> None:
    d = (await run_a_trainer(int(Thresholds().policy_stuck_s // STEP_S) + 2, syncs_fail=True))[-1]
    doc = json.loads(json.dumps(to_json(d)))
    assert doc["policy_held_s"] == 310.0 and doc["policy_held_sync_attempts"] == 31
    assert {a["name"]: a["level"] for a in doc["alerts"]}["policy_not_advancing"] == "critical"
    buf = io.StringIO()
    render(d, Console(file=buf, width=200))
    out = buf.getvalue()
    assert re.search(r"policy unchanged for\s+5m10s", out)
    assert "policy_not_advancing" in out and "has not moved for 5m10s" in out
