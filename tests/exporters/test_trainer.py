"""TrainerExporter on fresh registries: every recording call, good and bad values, failures."""

from __future__ import annotations

import math
import traceback

import pytest
from prometheus_client import CollectorRegistry

from ptmon.exporters import TrainerExporter
from ptmon.exporters.schema import (
    GRAD_NORM,
    KL,
    LEARNING_RATE,
    LOSS,
    POLICY_VERSION,
    TRAINER_LAST_STEP_TIMESTAMP,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_BYTES,
    WEIGHT_SYNC_FAILURE_SECONDS,
    WEIGHT_SYNC_FAILURES,
    WEIGHT_SYNC_SECONDS,
)
from tests.exporters.helpers import FakeClock, errors, value


@pytest.fixture
def clocks() -> tuple[FakeClock, FakeClock]:
    return FakeClock(1000.0), FakeClock(1_700_000_000.0)


@pytest.fixture
def trainer(clocks: tuple[FakeClock, FakeClock]) -> TrainerExporter:
    mono, wall = clocks
    return TrainerExporter(run="r1", model="qwen3-8b", algorithm="grpo", gpus=8, gpu_hour_price=3.0,
                           clock=mono, wall_clock=wall)


def test_step_counts_times_and_stamps(trainer: TrainerExporter, clocks: tuple[FakeClock, FakeClock]) -> None:
    mono, wall = clocks
    reg = trainer.registry
    # Before any step the timestamp is the start time, not 0 (stall detection reads it).
    assert value(reg, TRAINER_LAST_STEP_TIMESTAMP) == 1_700_000_000.0
    for seconds in (0.3, 4.0):
        with trainer.step():
            mono.advance(seconds)
            wall.advance(seconds)
    assert value(reg, TRAINER_STEPS) == 2
    assert value(reg, TRAINER_STEP_SECONDS, "_count") == 2
    assert value(reg, TRAINER_STEP_SECONDS, "_sum") == pytest.approx(4.3)
    assert value(reg, TRAINER_STEP_SECONDS, "_bucket", le="0.5") == 1
    assert value(reg, TRAINER_STEP_SECONDS, "_bucket", le="2.5") == 1
    assert value(reg, TRAINER_STEP_SECONDS, "_bucket", le="5.0") == 2
    assert value(reg, TRAINER_LAST_STEP_TIMESTAMP) == 1_700_000_004.3


def test_step_that_raises_is_not_counted_and_exception_passes(trainer: TrainerExporter) -> None:
    with pytest.raises(ZeroDivisionError):
        with trainer.step():
            1 / 0  # noqa: B018
    assert value(trainer.registry, TRAINER_STEPS) == 0
    assert value(trainer.registry, TRAINER_STEP_SECONDS, "_count") == 0


def test_record_tokens_and_scalars(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    assert value(reg, LOSS) is None  # optional scalars appear on first report, not as a fake 0
    trainer.record(tokens=4096, loss=0.7, kl=0.01, entropy=1.2, grad_norm=0.9, learning_rate=1e-6)
    trainer.record(tokens=100)
    trainer.record(loss=-0.2)  # negative losses are real (policy-gradient objectives)
    assert value(reg, TRAINER_TOKENS) == 4196
    assert value(reg, LOSS) == -0.2
    assert value(reg, KL) == 0.01
    assert value(reg, GRAD_NORM) == 0.9
    assert value(reg, LEARNING_RATE) == 1e-6
    assert errors(reg, "record") == 0


@pytest.mark.parametrize("bad", [{"tokens": -1}, {"tokens": "12"}, {"tokens": math.nan}, {"tokens": True},
                                 {"loss": math.nan}, {"kl": math.inf}, {"entropy": "high"}, {"grad_norm": [1.0]},
                                 {"learning_rate": None, "loss": object()}])
def test_record_drops_bad_values_keeps_good_ones(trainer: TrainerExporter, bad: dict) -> None:
    trainer.record(**{"tokens": 10, "loss": 0.5, **bad})
    reg = trainer.registry
    assert errors(reg, "record") == 1
    assert value(reg, TRAINER_TOKENS) == (0 if "tokens" in bad else 10)
    if "loss" not in bad:
        assert value(reg, LOSS) == 0.5
    else:
        assert value(reg, LOSS) is None


def test_record_accepts_numpy_like_scalars(trainer: TrainerExporter) -> None:
    class Scalar:  # what numpy/torch scalars offer: __float__
        def __float__(self) -> float:
            return 2.5

    trainer.record(tokens=Scalar(), loss=Scalar())  # type: ignore[arg-type]  # duck-typed on purpose
    assert value(trainer.registry, TRAINER_TOKENS) == 2.5
    assert value(trainer.registry, LOSS) == 2.5
    assert errors(trainer.registry, "record") == 0


def test_publish_policy(trainer: TrainerExporter) -> None:
    trainer.publish_policy(7)
    assert value(trainer.registry, POLICY_VERSION) == 7
    trainer.publish_policy(-1)
    trainer.publish_policy("8")  # type: ignore[arg-type]  # a bad value on purpose
    assert value(trainer.registry, POLICY_VERSION) == 7
    assert errors(trainer.registry, "publish_policy") == 2


def test_weight_sync_success(trainer: TrainerExporter, clocks: tuple[FakeClock, FakeClock]) -> None:
    mono, _ = clocks
    with trainer.weight_sync(version=8, nbytes=16e9):
        mono.advance(1.5)
    reg = trainer.registry
    assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 1
    assert value(reg, WEIGHT_SYNC_SECONDS, "_sum") == 1.5
    assert value(reg, WEIGHT_SYNC_SECONDS, "_bucket", le="1.024") == 0
    assert value(reg, WEIGHT_SYNC_SECONDS, "_bucket", le="2.048") == 1
    assert value(reg, WEIGHT_SYNC_BYTES) == 16e9
    assert value(reg, POLICY_VERSION) == 8
    assert value(reg, WEIGHT_SYNC_FAILURES) == 0


def test_weight_sync_failure_reraises_untouched(trainer: TrainerExporter, clocks: tuple[FakeClock, FakeClock]
                                                ) -> None:
    mono, _ = clocks
    trainer.publish_policy(7)
    boom = ConnectionError("nccl broadcast failed")
    with pytest.raises(ConnectionError) as caught:
        with trainer.weight_sync(version=8, nbytes=16e9):
            mono.advance(300.0)
            raise boom
    assert caught.value is boom  # the same object, not a wrapper
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].name == "test_weight_sync_failure_reraises_untouched"  # raised where the user raised it
    assert boom.__context__ is None and boom.__cause__ is None
    reg = trainer.registry
    assert value(reg, WEIGHT_SYNC_FAILURES) == 1
    assert value(reg, WEIGHT_SYNC_BYTES) == 0
    assert value(reg, POLICY_VERSION) == 7  # the failed version was never published
    assert value(reg, WEIGHT_SYNC_FAILURE_SECONDS) == 300.0  # the time was spent either way ...
    assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 0  # ... but never in the success latency


def test_weight_sync_bad_arguments_still_time_the_sync(trainer: TrainerExporter) -> None:
    with trainer.weight_sync(version="eight", nbytes=-5):  # type: ignore[arg-type]  # bad on purpose
        pass
    reg = trainer.registry
    assert errors(reg, "weight_sync") == 1
    assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 1
    assert value(reg, WEIGHT_SYNC_BYTES) == 0
    assert value(reg, POLICY_VERSION) == 0


def test_internal_metric_failure_never_reaches_the_loop(trainer: TrainerExporter,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("metrics backend broke")

    monkeypatch.setattr(trainer, "_steps_inc", broken)
    monkeypatch.setattr(trainer, "_sync_observe", broken)
    monkeypatch.setattr(trainer, "_tokens_inc", broken)
    with trainer.step():
        pass
    with trainer.weight_sync(version=1, nbytes=1):
        pass
    trainer.record(tokens=5)
    assert errors(trainer.registry, "step") == 1
    assert errors(trainer.registry, "weight_sync") == 1
    assert errors(trainer.registry, "record") == 1
    # ...and a user exception inside a sync still comes out as itself, not as the metrics error.
    with pytest.raises(KeyError):
        with trainer.weight_sync(version=2):
            raise KeyError("user")


def test_constructor_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError, match="gpus"):
        TrainerExporter(run="r", model="m", algorithm="a", gpus=-1, gpu_hour_price=3.0)
    with pytest.raises(ValueError, match="gpu_hour_price"):
        TrainerExporter(run="r", model="m", algorithm="a", gpus=1, gpu_hour_price=math.nan)
    with pytest.raises(ValueError, match="run"):
        TrainerExporter(run="", model="m", algorithm="a", gpus=1, gpu_hour_price=3.0)
    with pytest.raises(TypeError):
        TrainerExporter("r", "m", "a", 1, 3.0)  # type: ignore[misc]  # keyword-only


# --- sync latency from milliseconds up (issue 13 item 3) ------------------------------------------------

def test_default_sync_buckets_run_1_ms_to_past_10_min_each_at_most_2x_the_last() -> None:
    bounds = WEIGHT_SYNC_SECONDS.buckets
    assert bounds[0] == 0.001 and bounds[-1] >= 600.0
    assert all(b <= 2.0 * a for a, b in zip(bounds, bounds[1:], strict=False))
    assert any(0.015 <= b <= 0.03 for b in bounds) and any(1.3 <= b <= 2.6 for b in bounds)


def test_sync_buckets_are_configurable(clocks: tuple[FakeClock, FakeClock]) -> None:
    mono, wall = clocks
    t = TrainerExporter(registry=CollectorRegistry(), clock=mono, wall_clock=wall,
                        weight_sync_buckets=(0.01, 0.02, 0.04))
    with t.weight_sync(version=1):
        mono.advance(0.015)
    assert value(t.registry, WEIGHT_SYNC_SECONDS, "_bucket", le="0.01") == 0
    assert value(t.registry, WEIGHT_SYNC_SECONDS, "_bucket", le="0.02") == 1
    assert value(t.registry, WEIGHT_SYNC_SECONDS, "_bucket", le="+Inf") == 1


@pytest.mark.parametrize("bad", [(), (0.02, 0.01), (0.0, 1.0), (1.0, math.nan), (-1.0, 1.0)])
def test_unusable_sync_buckets_are_refused_at_construction(bad: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="weight_sync_buckets"):
        TrainerExporter(registry=CollectorRegistry(), weight_sync_buckets=bad)


def test_record_idle_adds_a_frameworks_bubbles_by_reason_and_drops_bad_ones() -> None:
    from ptmon.exporters.schema import IDLE_SECONDS

    trainer = TrainerExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0)
    assert value(trainer.registry, IDLE_SECONDS, reason="wait_for_batch") == 0  # each reason exists from the start
    trainer.record_idle(0.5, reason="wait_for_batch")
    trainer.record_idle(0.25, reason="wait_for_batch")
    trainer.record_idle(2.0, reason="wait_for_policy")
    for bad in ((-1.0, "wait_for_batch"), (math.nan, "wait_for_batch"), (1.0, "lunch")):
        trainer.record_idle(bad[0], reason=bad[1])
    assert value(trainer.registry, IDLE_SECONDS, reason="wait_for_batch") == 0.75
    assert value(trainer.registry, IDLE_SECONDS, reason="wait_for_policy") == 2.0
    assert value(trainer.registry, IDLE_SECONDS, reason="lunch") is None
    assert errors(trainer.registry, "record_idle") == 3
