"""GPU cost: exact GPU-seconds at collect time across GPU-count changes, with no background thread."""

from __future__ import annotations

import math
import threading

import pytest

from ptmon.exporters import EvalExporter, RolloutExporter, TrainerExporter
from ptmon.exporters.cost import GpuMeter, gpu_seconds
from ptmon.exporters.schema import GPU_HOUR_PRICE, GPU_SECONDS, GPUS
from tests.exporters.helpers import FakeClock, errors, value


def test_gpu_seconds_is_banked_plus_current_rate() -> None:
    assert gpu_seconds(banked=10.0, gpus=8, since=100.0, now=102.5) == 30.0
    assert gpu_seconds(banked=10.0, gpus=8, since=100.0, now=99.0) == 10.0  # a clock stepping back adds nothing


def test_meter_is_exact_across_gpu_count_changes() -> None:
    clock = FakeClock(50.0)
    meter = GpuMeter(gpus=8, gpu_hour_price=3.0, clock=clock)
    clock.advance(10)
    assert meter.read() == (8, 80.0)
    meter.set_gpus(16)
    clock.advance(5)
    assert meter.read() == (16, 160.0)
    meter.set_gpus(0)
    clock.advance(1000)
    assert meter.read() == (0, 160.0)


def test_exporter_exposes_cost_computed_at_collect_time() -> None:
    clock = FakeClock()
    trainer = TrainerExporter(run="r1", model="m", algorithm="grpo", gpus=8, gpu_hour_price=2.5, clock=clock)
    reg = trainer.registry
    assert value(reg, GPU_SECONDS, role="trainer") == 0
    clock.advance(3600)  # nothing ticks in between: the value is computed when collected
    assert value(reg, GPU_SECONDS, role="trainer") == 8 * 3600
    trainer.set_gpus(16)
    clock.advance(1800)
    assert value(reg, GPUS, role="trainer") == 16
    assert value(reg, GPU_SECONDS, role="trainer") == 8 * 3600 + 16 * 1800
    assert value(reg, GPU_HOUR_PRICE, role="trainer") == 2.5
    assert trainer.gpus == 16


def test_no_background_thread() -> None:
    before = threading.active_count()
    RolloutExporter(run="r", model="m", algorithm="a", gpus=4, gpu_hour_price=3.0)
    EvalExporter(run="r", model="m", algorithm="a", gpus=0, gpu_hour_price=3.0)
    assert threading.active_count() == before


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, "8", None, True])
def test_set_gpus_drops_bad_counts(bad: object) -> None:
    clock = FakeClock()
    rollout = RolloutExporter(run="r", model="m", algorithm="a", gpus=2, gpu_hour_price=3.0, clock=clock)
    clock.advance(10)
    rollout.set_gpus(bad)  # type: ignore[arg-type]
    clock.advance(10)
    assert value(rollout.registry, GPUS, role="rollout") == 2
    assert value(rollout.registry, GPU_SECONDS, role="rollout") == 40
    assert errors(rollout.registry, "set_gpus") == 1


def test_fractional_gpus_are_allowed() -> None:
    clock = FakeClock()
    evals = EvalExporter(run="r", model="m", algorithm="a", gpus=0.5, gpu_hour_price=3.0, clock=clock)
    clock.advance(4)
    assert value(evals.registry, GPU_SECONDS, role="eval") == 2.0


def test_prices_and_gpu_counts_beyond_a_sane_bound_are_refused() -> None:
    # A price of 1e300 (or a GPU count from a uint64 wrap) would be shown as spend; it is a bug, not a cost.
    from ptmon.exporters.schema import MAX_GPU_HOUR_PRICE, MAX_GPUS

    for price in (-3.0, MAX_GPU_HOUR_PRICE * 1.01, 1e300):
        with pytest.raises(ValueError, match="gpu_hour_price must be dollars per GPU-hour from 0 to 1,000"):
            RolloutExporter(run="r", model="m", algorithm="a", gpus=1, gpu_hour_price=price)
    with pytest.raises(ValueError, match="gpus must be a number from 0 to 1,000,000"):
        RolloutExporter(run="r", model="m", algorithm="a", gpus=2**64 - 1, gpu_hour_price=3.0)
    rollout = RolloutExporter(run="r", model="m", algorithm="a", gpus=MAX_GPUS, gpu_hour_price=MAX_GPU_HOUR_PRICE)
    for gpus in (MAX_GPUS + 1, 2**64 - 1, -2):
        rollout.set_gpus(gpus)
    assert rollout.gpus == MAX_GPUS and errors(rollout.registry, "set_gpus") == 3
    assert value(rollout.registry, GPU_HOUR_PRICE, role="rollout") == MAX_GPU_HOUR_PRICE
