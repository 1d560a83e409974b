"""Exporters built with no identity or cost arguments: the environment, else "unknown", GPUs unknown, $3.00."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from ptmon.exporters import Colocated, EvalExporter, RolloutExporter, TrainerExporter, _defaults
from ptmon.exporters.schema import DEFAULT_GPU_HOUR_PRICE, GPU_HOUR_PRICE, GPU_SECONDS, GPUS, RUN_INFO
from tests.exporters.helpers import FakeClock, value


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test is a new process: no generated run yet, no GPUs claimed, nothing logged, no PTMON_ variables."""
    monkeypatch.setattr(_defaults, "_generated_run", None)
    monkeypatch.setattr(_defaults, "_gpus_claimed", False)
    monkeypatch.setattr(_defaults, "_logged", set())
    for name in (_defaults.ENV_RUN, _defaults.ENV_GPUS, _defaults.ENV_PRICE):
        monkeypatch.delenv(name, raising=False)
    yield


def run_info(registry: CollectorRegistry) -> dict[str, dict[str, str]]:
    """role -> labels of each posttrain_run_info series."""
    out = {}
    for family in registry.collect():
        for s in family.samples:
            if s.name == RUN_INFO.name:
                out[s.labels["role"]] = s.labels
    return out


def test_no_arguments_generates_one_run_and_says_spend_is_unknown(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ptmon.exporters"):
        trainer = TrainerExporter()
        rollouts = RolloutExporter()
        EvalExporter()
    labels = run_info(trainer.registry)["trainer"]
    assert re.fullmatch(r"run-\d{8}-\d{6}-[0-9a-f]{4}", labels["run"])
    assert labels["model"] == labels["algorithm"] == "unknown"
    assert run_info(rollouts.registry)["rollout"]["run"] == labels["run"]  # one process, one run
    # GPUs unknown: NaN GPUs and no GPU-seconds (a 0 would be billed as $0 spent), the price still said.
    assert math.isnan(value(trainer.registry, GPUS, role="trainer") or 0.0)
    assert value(trainer.registry, GPU_SECONDS, role="trainer") is None
    assert value(trainer.registry, GPU_HOUR_PRICE, role="trainer") == DEFAULT_GPU_HOUR_PRICE
    messages = [r.getMessage() for r in caplog.records]
    # Said once each, however many exporters: the generated name, and that spend is unknown.
    assert sum(labels["run"] in m for m in messages) == 1
    assert sum("spend is unknown" in m and "PTMON_GPUS" in m for m in messages) == 1


def test_environment_names_run_gpus_and_price(monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PTMON_RUN", "grpo-7b-0412")
    monkeypatch.setenv("PTMON_GPUS", "8")
    monkeypatch.setenv("PTMON_GPU_HOUR_PRICE", "2.5")
    clock = FakeClock()
    with caplog.at_level(logging.WARNING, logger="ptmon.exporters"):
        trainer = TrainerExporter(clock=clock)
    clock.advance(3600)
    assert run_info(trainer.registry)["trainer"]["run"] == "grpo-7b-0412"
    assert value(trainer.registry, GPUS, role="trainer") == 8
    assert value(trainer.registry, GPU_SECONDS, role="trainer") == 8 * 3600
    assert value(trainer.registry, GPU_HOUR_PRICE, role="trainer") == 2.5
    assert caplog.records == []  # nothing was left to guess


def test_explicit_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTMON_RUN", "from-env")
    monkeypatch.setenv("PTMON_GPUS", "8")
    trainer = TrainerExporter(run="r1", model="m", algorithm="dpo", gpus=2, gpu_hour_price=1.0)
    assert run_info(trainer.registry)["trainer"] == dict(run="r1", model="m", algorithm="dpo", role="trainer")
    assert value(trainer.registry, GPUS, role="trainer") == 2


def test_the_process_gpus_are_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTMON_GPUS is the process's count: a second role (same registry or not) must not bill it again."""
    monkeypatch.setenv("PTMON_GPUS", "8")
    trainer = TrainerExporter()
    rollouts = RolloutExporter(registry=trainer.registry)
    evals = EvalExporter()  # its own registry, same process
    assert value(trainer.registry, GPUS, role="trainer") == 8
    assert value(trainer.registry, GPUS, role="rollout") == 0
    assert value(evals.registry, GPUS, role="eval") == 0
    assert rollouts.gpus == 0


@pytest.mark.parametrize("name, text", [("PTMON_GPUS", "eight"), ("PTMON_GPUS", "-1"),
                                        ("PTMON_GPU_HOUR_PRICE", "nan"), ("PTMON_GPU_HOUR_PRICE", "inf")])
def test_an_unreadable_variable_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, name: str,
                                                         text: str) -> None:
    monkeypatch.setenv(name, text)
    with pytest.raises(ValueError, match=name):
        TrainerExporter()


def test_colocated_counts_gpus_once_under_the_trainer() -> None:
    clock = FakeClock()
    loop = Colocated(run="r1", gpus=8, gpu_hour_price=2.0, clock=clock)
    clock.advance(100)
    reg = loop.registry
    assert loop.rollouts.registry is reg and loop.evals.registry is reg
    assert set(run_info(reg)) == {"trainer", "rollout", "eval"}
    assert {r: value(reg, GPU_SECONDS, role=r) for r in ("trainer", "rollout", "eval")} == {
        "trainer": 800.0, "rollout": 0.0, "eval": 0.0}
    assert {labels["run"] for labels in run_info(reg).values()} == {"r1"}
    loop.set_gpus(4)
    clock.advance(100)
    assert value(reg, GPU_SECONDS, role="trainer") == 1200.0
    assert loop.gpus == 4


def test_colocated_takes_the_process_gpus_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTMON_GPUS", "4")
    loop = Colocated()
    assert (loop.trainer.gpus, loop.rollouts.gpus, loop.evals.gpus) == (4, 0, 0)


def test_unknown_gpus_become_known_with_set_gpus() -> None:
    clock = FakeClock()
    trainer = TrainerExporter(clock=clock)
    clock.advance(100)
    assert math.isnan(value(trainer.registry, GPUS, role="trainer") or 0.0)
    trainer.set_gpus(2)
    clock.advance(10)
    assert value(trainer.registry, GPUS, role="trainer") == 2
    assert value(trainer.registry, GPU_SECONDS, role="trainer") == 20.0  # billed from when the count came


def test_colocated_without_a_gpu_count_leaves_the_trainers_unknown() -> None:
    loop = Colocated()
    reg = loop.registry
    assert math.isnan(value(reg, GPUS, role="trainer") or 0.0)
    assert (value(reg, GPUS, role="rollout"), value(reg, GPUS, role="eval")) == (0, 0)  # counted under the trainer
