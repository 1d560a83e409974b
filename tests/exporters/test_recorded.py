"""Numbers measured elsewhere: record_step, record_weight_sync, running totals, drops, consumed staleness,
and aggregated rollouts. Same rules as the context managers: bad values dropped and counted, never raised."""

from __future__ import annotations

import math

import pytest

from ptmon.exporters import RolloutExporter, TrainerExporter
from ptmon.exporters.schema import (
    POLICY_VERSION,
    ROLLOUT_REWARD,
    ROLLOUT_REWARD_NEGATIVE,
    ROLLOUT_REWARD_POSITIVE,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    SAMPLE_STALENESS,
    TRAINER_DROPPED,
    TRAINER_LAST_STEP_TIMESTAMP,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_BYTES,
    WEIGHT_SYNC_FAILURE_SECONDS,
    WEIGHT_SYNC_FAILURES,
    WEIGHT_SYNC_SECONDS,
)
from tests.exporters.helpers import FakeClock, errors, exporter, value


@pytest.fixture
def wall() -> FakeClock:
    return FakeClock(1_700_000_000.0)


@pytest.fixture
def trainer(wall: FakeClock) -> TrainerExporter:
    return exporter(TrainerExporter, wall_clock=wall)


def test_record_step_counts_times_stamps_and_adds_tokens(trainer: TrainerExporter, wall: FakeClock) -> None:
    reg = trainer.registry
    wall.advance(5)
    trainer.record_step(seconds=4.0, tokens=1000)
    wall.advance(3)
    trainer.record_step()  # a step whose time is not known: counted and stamped, not timed
    assert value(reg, TRAINER_STEPS) == 2
    assert value(reg, TRAINER_STEP_SECONDS, "_count") == 1
    assert value(reg, TRAINER_STEP_SECONDS, "_sum") == 4.0
    assert value(reg, TRAINER_LAST_STEP_TIMESTAMP) == 1_700_000_008.0
    assert value(reg, TRAINER_TOKENS) == 1000
    assert errors(reg, "record_step") == 0


def test_tokens_total_is_set_not_added(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    for total in (512, 1536, 1536, 4096):
        trainer.record_step(seconds=1.0, tokens_total=total)
    assert value(reg, TRAINER_TOKENS) == 4096
    trainer.record(tokens_total=5000)  # the same running total, through record()
    assert value(reg, TRAINER_TOKENS) == 5000
    trainer.record(tokens_total=300)  # the source restarted from zero: it counted 300 since
    assert value(reg, TRAINER_TOKENS) == 5300


@pytest.mark.parametrize("bad", [dict(seconds=math.nan), dict(seconds=-1.0), dict(tokens="12"),
                                 dict(tokens_total=math.inf), dict(seconds=True)])
def test_record_step_drops_a_bad_value_but_counts_the_step(trainer: TrainerExporter, bad: dict[str, object]) -> None:
    trainer.record_step(**bad)  # type: ignore[arg-type]
    reg = trainer.registry
    assert value(reg, TRAINER_STEPS) == 1
    assert value(reg, TRAINER_STEP_SECONDS, "_count") == 0
    assert value(reg, TRAINER_TOKENS) == 0
    assert errors(reg, "record_step") == 1


def test_record_weight_sync_ok_and_failed(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    trainer.record_weight_sync(seconds=1.5, nbytes=16e9, version=3)
    trainer.record_weight_sync(seconds=30.0, nbytes=16e9, version=4, ok=False)
    assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 1  # the failed sync never moves the latency
    assert value(reg, WEIGHT_SYNC_SECONDS, "_sum") == 1.5
    assert value(reg, WEIGHT_SYNC_BYTES) == 16e9
    assert value(reg, WEIGHT_SYNC_FAILURES) == 1
    assert value(reg, WEIGHT_SYNC_FAILURE_SECONDS) == 30.0  # its time was spent too
    assert value(reg, POLICY_VERSION) == 3
    assert errors(reg, "record_weight_sync") == 0


def test_record_weight_sync_drops_bad_values(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    trainer.record_weight_sync(seconds=math.nan, nbytes=-5, version=2)
    assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 0
    assert value(reg, WEIGHT_SYNC_BYTES) == 0
    assert value(reg, POLICY_VERSION) == 2  # the good value still lands
    assert errors(reg, "record_weight_sync") == 1


def test_record_dropped_counts_and_running_totals(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    trainer.record_dropped()
    trainer.record_dropped(3)
    trainer.record_dropped(2, reason="filtered")
    for total in (10, 25):
        trainer.record_dropped(total=total, reason="error")
    assert value(reg, TRAINER_DROPPED, reason="stale") == 4
    assert value(reg, TRAINER_DROPPED, reason="filtered") == 2
    assert value(reg, TRAINER_DROPPED, reason="error") == 25
    assert errors(reg, "record_dropped") == 0
    trainer.record_dropped(1, reason="bored")
    trainer.record_dropped(-1)
    trainer.record_dropped(1, total=5)
    assert value(reg, TRAINER_DROPPED, reason="bored") is None
    assert value(reg, TRAINER_DROPPED, reason="stale") == 4
    assert errors(reg, "record_dropped") == 3


def test_record_staleness_as_measured_and_from_versions(trainer: TrainerExporter) -> None:
    reg = trainer.registry
    trainer.record_staleness(mean=0.5, max=2, source="prime-rl")
    assert value(reg, SAMPLE_STALENESS, stat="mean", source="prime-rl") == 0.5
    assert value(reg, SAMPLE_STALENESS, stat="max", source="prime-rl") == 2
    trainer.record_staleness(versions=[7, 6])  # no policy published yet: nothing to measure against
    assert value(reg, SAMPLE_STALENESS, stat="mean", source="trainer") is None
    assert errors(reg, "record_staleness") == 1
    with trainer.weight_sync(version=7):
        pass
    trainer.record_staleness(versions=[7, 6, 4, 9])  # a sample newer than the trainer's policy counts 0
    assert value(reg, SAMPLE_STALENESS, stat="mean", source="trainer") == (0 + 1 + 3 + 0) / 4
    assert value(reg, SAMPLE_STALENESS, stat="max", source="trainer") == 3
    trainer.record_weight_sync(seconds=1.0, version=9)
    trainer.record_staleness(versions=[8])
    assert value(reg, SAMPLE_STALENESS, stat="max", source="trainer") == 1


@pytest.mark.parametrize("bad", [dict(mean=math.nan), dict(max=-1.0), dict(source=""), dict(source="x" * 41),
                                 dict(source="\udcff"), dict(versions=[1, math.nan])])
def test_record_staleness_drops_bad_values(trainer: TrainerExporter, bad: dict[str, object]) -> None:
    trainer.publish_policy(3)
    trainer.record_staleness(**bad)  # type: ignore[arg-type]
    assert errors(trainer.registry, "record_staleness") == 1
    text = [s for f in trainer.registry.collect() for s in f.samples if s.name == SAMPLE_STALENESS.name]
    assert text == []


def test_record_rollouts_keeps_count_tokens_and_mean_reward_exact() -> None:
    rollouts = exporter(RolloutExporter)
    reg = rollouts.registry
    rollouts.record_rollouts(env="math", count=8, tokens=8 * 120, reward_mean=0.375, policy_version=2)
    rollouts.record_rollouts(env="math", count=4, tokens=400, reward_mean=-0.5)
    assert value(reg, ROLLOUTS, env="math", outcome="ok") == 12
    assert value(reg, ROLLOUT_TOKENS, env="math") == 1360
    assert value(reg, ROLLOUT_REWARD, "_count", env="math") == 12
    positive = value(reg, ROLLOUT_REWARD_POSITIVE, env="math")
    negative = value(reg, ROLLOUT_REWARD_NEGATIVE, env="math")
    assert positive == 3.0 and negative == 2.0
    assert (positive - negative) / 12 == pytest.approx((8 * 0.375 - 4 * 0.5) / 12)
    assert errors(reg, "record_rollouts") == 0


@pytest.mark.parametrize("bad", [dict(count=2.5), dict(count=-1), dict(env=""), dict(outcome="meh"),
                                 dict(count=math.nan)])
def test_record_rollouts_drops_a_call_it_cannot_attribute(bad: dict[str, object]) -> None:
    rollouts = exporter(RolloutExporter)
    options: dict[str, object] = dict(env="math", count=4, tokens=10, reward_mean=1.0)
    options.update(bad)
    rollouts.record_rollouts(**options)  # type: ignore[arg-type]
    assert value(rollouts.registry, ROLLOUTS, env="math", outcome="ok") in (None, 0)
    assert errors(rollouts.registry, "record_rollouts") == 1
