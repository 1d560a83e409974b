"""Unknown is not zero (issue 15): tokens never logged and GPUs never told read as unknown, not as 0 and $0.

Real exporters on loopback, scraped by a real LiveFeed on one clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from rich.console import Console

from ptmon.exporters import RolloutExporter, TrainerExporter, _defaults
from ptmon.exporters.serve import serve
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.snapshot import render
from ptmon.monitor.widgets.cards import card_rows
from tests.monitor.helpers import T0, Clock

STEP_S = 10.0


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No PTMON_ variables, no GPUs claimed yet: each test is a new process."""
    monkeypatch.setattr(_defaults, "_gpus_claimed", False)
    monkeypatch.setattr(_defaults, "_logged", set())
    for name in (_defaults.ENV_RUN, _defaults.ENV_GPUS, _defaults.ENV_PRICE):
        monkeypatch.delenv(name, raising=False)
    yield


async def scrape(trainer: TrainerExporter, clock: Clock, tick: Callable[[int], None], *, steps: int = 5,
                 rollouts: RolloutExporter | None = None) -> Dashboard:
    servers = [serve(trainer.registry)] + ([serve(rollouts.registry)] if rollouts is not None else [])
    targets = tuple(Target(name=name, url=s.url) for name, s in zip(("t", "w"), servers, strict=False))
    feed = LiveFeed(Settings(targets=targets, interval_s=STEP_S, timeout_s=2.0), clock=clock)
    try:
        await feed.collect_once()
        for i in range(1, steps + 1):
            clock.t = T0 + STEP_S * i
            tick(i)
            await feed.collect_once()
        return await feed.dashboard(window_s=STEP_S * (steps + 0.5))
    finally:
        await feed.aclose()
        for s in servers:
            s.close()


def trainer_on(clock: Clock, **kwargs: object) -> TrainerExporter:
    return TrainerExporter(run="r", model="m", algorithm="grpo", gpu_hour_price=1.0, clock=clock,
                           wall_clock=clock, **kwargs)  # type: ignore[arg-type]


async def test_trainer_tokens_never_logged_are_unknown_not_zero() -> None:
    clock = Clock(T0)
    trainer = trainer_on(clock, gpus=1)
    d = await scrape(trainer, clock, lambda i: trainer.record_step(seconds=STEP_S))
    assert d.steps_per_s is not None and d.steps_per_s > 0
    assert d.trainer_tokens_per_s is None
    assert dict((str(k), str(v)) for k, v in card_rows("trainer", d, Thresholds()))["tokens"] == "—"


async def test_trainer_tokens_that_stopped_read_zero() -> None:
    clock = Clock(T0)
    trainer = trainer_on(clock, gpus=1)
    trainer.record(tokens=500)  # counted once, before the window: then steps with no tokens
    d = await scrape(trainer, clock, lambda i: trainer.record_step(seconds=STEP_S))
    assert d.trainer_tokens_per_s == 0.0


async def test_unknown_gpus_make_spend_unknown_not_zero() -> None:
    clock = Clock(T0)
    trainer = trainer_on(clock)  # no gpus=, no PTMON_GPUS: unknown
    rollouts = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=2, gpu_hour_price=1.0, clock=clock)
    d = await scrape(trainer, clock, lambda i: trainer.record_step(seconds=STEP_S), rollouts=rollouts)
    assert d.gpus_unknown == ("t",)
    assert d.spend_dollars is None
    assert d.burn_dollars_per_hour is None
    assert d.ipd_points_per_kilodollar is None
    console = Console(width=200, record=True, color_system=None)
    render(d, console)
    assert "unknown: no GPU count from t (gpus= or PTMON_GPUS)" in console.export_text()


async def test_known_gpus_still_make_spend() -> None:
    clock = Clock(T0)
    trainer = trainer_on(clock, gpus=4)
    rollouts = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=2, gpu_hour_price=1.0, clock=clock)
    d = await scrape(trainer, clock, lambda i: trainer.record_step(seconds=STEP_S), rollouts=rollouts)
    assert d.gpus_unknown == ()
    assert d.spend_dollars == pytest.approx(6 * 5 * STEP_S / 3600)  # 6 GPUs at $1/h for 50 s
    assert d.burn_dollars_per_hour is not None and d.burn_dollars_per_hour > 0
