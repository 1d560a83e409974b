"""PtmonCallback without TRL: the events a trainer calls, on stand-in args and state (no transformers
needed, which is also what lets the module import anywhere)."""

from __future__ import annotations

import importlib
import sys
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest

from ptmon.exporters.bridges.trl import PtmonCallback
from ptmon.exporters.schema import (
    EVAL_SCORE,
    EXPORTER_ERRORS,
    POLICY_VERSION,
    ROLLOUT_POLICY_VERSION,
    ROLLOUT_REWARD_POSITIVE,
    ROLLOUTS,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_FAILURE_SECONDS,
    WEIGHT_SYNC_FAILURES,
    WEIGHT_SYNC_SECONDS,
)
from tests.exporters.helpers import FakeClock, value

ARGS = SimpleNamespace(per_device_train_batch_size=8, gradient_accumulation_steps=2, world_size=1,
                       num_iterations=1, device=SimpleNamespace(type="cpu"))


def started(**options: Any) -> tuple[PtmonCallback, SimpleNamespace, FakeClock]:
    clock = FakeClock()
    cb = PtmonCallback(port=0, gpus=1, gpu_hour_price=2.0, clock=clock, **options)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    cb.on_init_end(ARGS, state, None, model=SimpleNamespace(config=SimpleNamespace(name_or_path="tiny")))
    return cb, state, clock


def step(cb: PtmonCallback, state: SimpleNamespace, clock: FakeClock, seconds: float, **logs: float) -> None:
    cb.on_step_begin(ARGS, state, None)
    clock.advance(seconds)
    state.global_step += 1
    cb.on_step_end(ARGS, state, None)
    cb.on_log(ARGS, state, None, logs=logs)


def test_events_become_steps_rollouts_and_evals_on_one_endpoint() -> None:
    cb, state, clock = started()
    try:
        assert cb.url is not None and "127.0.0.1" in cb.url
        step(cb, state, clock, 2.0, loss=0.5, reward=0.25, num_tokens=1000.0, **{"completions/mean_length": 10.0})
        step(cb, state, clock, 3.0, loss=0.4, reward=0.75, num_tokens=2500.0, step_time=99.0)
        cb.on_log(ARGS, state, None, logs={"eval_reward": 0.9, "eval_loss": 0.1})  # an eval's log: skipped
        cb.on_evaluate(ARGS, state, None, metrics={"eval_reward": 0.6, "eval_loss": 0.1})
        reg = cb.registry
        assert value(reg, TRAINER_STEPS) == 2
        assert value(reg, TRAINER_STEP_SECONDS, "_sum") == 5.0  # its own clock, not TRL's averaged step_time
        assert value(reg, TRAINER_TOKENS) == 2500  # a running total: set
        assert value(reg, ROLLOUTS, env="train", outcome="ok") == 32  # 8 x 2 x 1 / 1 per step
        assert value(reg, ROLLOUT_REWARD_POSITIVE, env="train") == 16 * 0.25 + 16 * 0.75
        assert value(reg, EVAL_SCORE, benchmark="reward") == 0.6
        assert value(reg, POLICY_VERSION) == 2 and value(reg, ROLLOUT_POLICY_VERSION) == 2
        text = urllib.request.urlopen(cb.url, timeout=5).read().decode()
        assert 'model="tiny"' in text and "posttrain_rollouts_total" in text
    finally:
        cb.close()


def test_logging_every_few_steps_counts_every_steps_rollouts() -> None:
    cb, state, clock = started()
    try:
        for _ in range(3):
            cb.on_step_begin(ARGS, state, None)
            state.global_step += 1
            cb.on_step_end(ARGS, state, None)
        cb.on_log(ARGS, state, None, logs={"reward": 0.5})  # logging_steps=3: TRL's mean over three steps
        assert value(cb.registry, ROLLOUTS, env="train", outcome="ok") == 3 * 16
    finally:
        cb.close()


class FakeGeneration:
    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.fail = clock, False

    def sync_weights(self) -> None:
        self.clock.advance(1.5)
        if self.fail:
            raise RuntimeError("NCCL timeout")


def test_vllm_weight_syncs_are_timed_and_a_failure_passes_through() -> None:
    cb, state, clock = started()
    try:
        trainer = SimpleNamespace(vllm_generation=FakeGeneration(clock), state=state,
                                  callback_handler=SimpleNamespace(callbacks=[cb]))
        cb.attach(trainer)
        cb.attach(trainer)  # wrapping twice would time each sync twice
        state.global_step = 3
        trainer.vllm_generation.sync_weights()
        trainer.vllm_generation.fail = True
        with pytest.raises(RuntimeError, match="NCCL timeout"):
            trainer.vllm_generation.sync_weights()
        reg = cb.registry
        assert value(reg, WEIGHT_SYNC_SECONDS, "_count") == 1  # the success; the failure is timed apart
        assert value(reg, WEIGHT_SYNC_SECONDS, "_sum") == 1.5
        assert value(reg, WEIGHT_SYNC_FAILURES) == 1
        assert value(reg, WEIGHT_SYNC_FAILURE_SECONDS) == 1.5
        assert value(reg, POLICY_VERSION) == 3 and value(reg, ROLLOUT_POLICY_VERSION) == 3
    finally:
        cb.close()


def test_only_the_main_process_serves_and_bad_values_never_raise() -> None:
    other = PtmonCallback(port=0)
    other.on_init_end(ARGS, SimpleNamespace(global_step=0, is_world_process_zero=False), None)
    other.on_step_end(ARGS, SimpleNamespace(global_step=1), None)
    assert other.url is None and other.registry is None
    cb, state, clock = started()
    try:
        cb.on_log(ARGS, state, None, logs={"loss": "nan?", "reward": float("nan"), "grad_norm": None})
        cb.on_unknown_event(ARGS, state, None)  # events it has no use for are no-ops
        assert value(cb.registry, EXPORTER_ERRORS, call="trl_callback") == 2
    finally:
        cb.close()
    with pytest.raises(ValueError, match="port"):
        PtmonCallback(port=70000)


def test_the_module_imports_without_transformers_or_trl(monkeypatch: pytest.MonkeyPatch) -> None:
    import ptmon.exporters.bridges.trl as module

    for name in ("trl", "transformers", "torch", "datasets"):
        monkeypatch.setitem(sys.modules, name, None)  # any import of them now raises ImportError
    reloaded = importlib.reload(module)
    cb = reloaded.PtmonCallback(port=0)
    assert cb.url is None  # constructed; serves once a trainer starts it
