"""MetricsBridge's rules, on in-process registries: unknown keys ignored, bad values dropped and counted,
never raised; steps joined by number; rollouts recorded once their parts are in; auto waits until sure."""

from __future__ import annotations

import logging
import math

import pytest

from ptmon.exporters import Colocated
from ptmon.exporters.bridges import FRAMEWORKS, MetricsBridge
from ptmon.exporters.schema import (
    EXPORTER_ERRORS,
    LOSS,
    ROLLOUT_REWARD,
    ROLLOUT_REWARD_POSITIVE,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    WEIGHT_SYNC_SECONDS,
)
from tests.exporters.helpers import FakeClock, value


def bridge(framework: str, **options: object) -> tuple[MetricsBridge, Colocated]:
    loop = Colocated(run="r", gpus=1, gpu_hour_price=1.0, clock=FakeClock())
    return MetricsBridge(framework, trainer=loop.trainer, rollouts=loop.rollouts, evals=loop.evals,
                         **options), loop  # type: ignore[arg-type]


def errors(loop: Colocated) -> float | None:
    return value(loop.registry, EXPORTER_ERRORS, call="bridge_log")


def test_unknown_keys_are_ignored_and_bad_values_dropped_and_counted() -> None:
    b, loop = bridge("verl")
    b.log({"timing_s/step": 2.0, "no/such/key": math.nan, "another": "text", "actor/pg_loss": math.nan,
           "actor/grad_norm": None, "actor/entropy": "1.2", "actor/lr": [1e-6], 7: 1.0,  # type: ignore[dict-item]
           "critic/score/mean": math.inf})
    reg = loop.registry
    assert value(reg, TRAINER_STEPS) == 1  # the good value in the same dict still lands
    assert value(reg, LOSS) is None
    assert errors(loop) == 5  # the five known keys with unusable values; unknown keys are not errors


def test_log_never_raises_into_the_loop() -> None:
    b, loop = bridge("trl")
    b.log(None)  # type: ignore[arg-type]
    b.log({"loss": object()})
    b.log({"loss": 0.5}, step="seven")  # type: ignore[arg-type]
    assert errors(loop) == 3
    b.flush()


def test_configuration_errors_raise_at_once() -> None:
    with pytest.raises(ValueError, match="unknown framework 'deepspeed-chat'.*prime-rl"):
        MetricsBridge("deepspeed-chat")
    with pytest.raises(ValueError, match="rollouts_per_step"):
        MetricsBridge("verl", rollouts_per_step=0)
    assert FRAMEWORKS == ("prime-rl", "verl", "nemo-rl", "openrlhf", "trl", "skyrl", "slime", "areal", "roll",
                          "auto")


def test_with_no_exporters_the_bridge_makes_a_colocated_set() -> None:
    b = MetricsBridge("openrlhf")
    assert b.trainer is not None and b.rollouts is not None and b.evals is not None
    assert b.trainer.registry is b.registry is b.rollouts.registry is b.evals.registry


def test_dicts_of_one_step_number_are_one_step() -> None:
    b, loop = bridge("prime-rl")
    for step in (1, 2):
        b.log({"time/step": 9.0, "step": step})
        b.log({"loss/mean": 0.3, "step": step})
        b.log({"time/step": 9.0, "step": step})  # the same step logged again: still one step
    reg = loop.registry
    assert value(reg, TRAINER_STEPS) == 2
    assert value(reg, TRAINER_STEP_SECONDS, "_count") == 2


def test_without_a_step_number_each_dict_is_a_step() -> None:
    b, loop = bridge("nemo-rl")
    for _ in range(3):
        b.log({"timing/train/total_step_time": 5.0})
    assert value(loop.registry, TRAINER_STEPS) == 3


def test_a_zero_that_means_nothing_happened_is_skipped() -> None:
    b, loop = bridge("prime-rl")
    b.log({"time/broadcast_weights": 0, "time/step": 1.0, "step": 1})
    b.log({"time/broadcast_weights": 2.0, "time/step": 1.0, "step": 2})
    assert value(loop.registry, WEIGHT_SYNC_SECONDS, "_count") == 1


def test_one_of_two_spellings_in_the_same_dict() -> None:
    b, loop = bridge("nemo-rl")
    b.log({"timing/train/weight_sync": 2.0,
           "timing/train/prepare_for_generation/transfer_and_update_weights": 1.5}, step=1)
    b.log({"timing/train/prepare_for_generation/transfer_and_update_weights": 1.5}, step=2)
    assert value(loop.registry, WEIGHT_SYNC_SECONDS, "_count") == 2
    assert value(loop.registry, WEIGHT_SYNC_SECONDS, "_sum") == 3.5


def test_rollouts_wait_for_their_parts_then_the_step_end() -> None:
    b, loop = bridge("nemo-rl")
    reg = loop.registry
    b.log({"performance/samples_per_sec": 4.0}, step=1)
    b.log({"train/reward": 0.5}, step=1)
    assert value(reg, ROLLOUTS, env="nemo-rl", outcome="ok") == 0  # the seconds the rate is per: not yet
    b.log({"timing/train/total_step_time": 8.0}, step=1)
    assert value(reg, ROLLOUTS, env="nemo-rl", outcome="ok") == 32
    assert value(reg, ROLLOUT_REWARD_POSITIVE, env="nemo-rl") == 16.0
    b.log({"performance/samples_per_sec": 2.0, "timing/train/total_step_time": 8.0}, step=2)  # no reward logged
    assert value(reg, ROLLOUTS, env="nemo-rl", outcome="ok") == 32
    b.flush()  # the step is over: its rollouts count with what arrived
    assert value(reg, ROLLOUTS, env="nemo-rl", outcome="ok") == 48
    assert value(reg, ROLLOUT_REWARD, "_count", env="nemo-rl") == 32  # the mean is over rewarded rollouts
    assert value(reg, ROLLOUT_REWARD_POSITIVE, env="nemo-rl") == 16.0  # nothing invented for step 2


def test_no_rollout_count_means_no_rollouts_unless_given(caplog: pytest.LogCaptureFixture) -> None:
    b, loop = bridge("verl")
    with caplog.at_level(logging.WARNING, logger="ptmon.exporters"):
        for step in (1, 2):
            b.log({"critic/score/mean": 0.5, "response_length/mean": 10.0, "training/global_step": step})
        b.flush()
    # no series at all (a worker row reading 0 rollouts/s would be a made-up number), and one hint
    assert value(loop.registry, ROLLOUTS, env="verl", outcome="ok") is None
    assert sum("rollouts_per_step" in r.getMessage() for r in caplog.records) == 1
    given, loop2 = bridge("verl", rollouts_per_step=8, env="math")
    given.log({"critic/score/mean": 0.5, "response_length/mean": 10.0, "training/global_step": 1})
    assert value(loop2.registry, ROLLOUTS, env="math", outcome="ok") == 8
    assert value(loop2.registry, ROLLOUT_TOKENS, env="math") == 80


def test_several_keys_for_one_quantity_are_averaged() -> None:
    b, loop = bridge("prime-rl")
    b.log({"progress/rollouts": 10, "progress/output_tokens": 100, "train/agg/all/solver/reward/mean": 1.0,
           "train/agg/all/critic/reward/mean": 0.0, "step": 1})
    reg = loop.registry
    assert value(reg, ROLLOUT_REWARD_POSITIVE, env="prime-rl") == 5.0  # 10 rollouts at the mean 0.5


def test_auto_waits_for_a_dict_it_can_tell_then_sticks() -> None:
    b, loop = bridge("auto")
    b.log({"loss": 0.5})  # TRL and others log "loss": not enough to tell
    b.log({"eval/all/avg_score": 0.5})  # patterns alone never decide
    assert b.framework is None and value(loop.registry, LOSS) is None
    b.log({"timing_s/step": 3.0, "actor/pg_loss": 0.25, "training/global_step": 1})
    assert b.framework == "verl"
    assert value(loop.registry, LOSS) == 0.25
    b.log({"time/broadcast_weights": 1.0, "off_policy/max": 1.0, "step": 2})  # prime-rl's keys: ignored now
    assert b.framework == "verl"
    assert value(loop.registry, WEIGHT_SYNC_SECONDS, "_count") == 0
