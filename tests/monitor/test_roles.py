"""monitor.roles: config > posttrain_run_info > what the target exposes."""

from __future__ import annotations

import pytest

from ptmon.exporters import schema
from ptmon.monitor.roles import detect_role, label_ci, run_info_names


def test_config_wins_over_everything() -> None:
    assert detect_role(configured="eval", run_info_roles=["trainer"],
                       names=[schema.TRAINER_STEPS.name]) == "eval"


def test_run_info_role_wins_over_exposed_names() -> None:
    assert detect_role(configured=None, run_info_roles=["rollout"],
                       names=["vllm:generation_tokens_total"]) == "rollout"


def test_colocated_process_is_named_by_its_first_role() -> None:
    assert detect_role(configured=None, run_info_roles=["rollout", "eval", "trainer"], names=[]) == "trainer"


def test_unknown_run_info_role_falls_through_to_names() -> None:
    assert detect_role(configured=None, run_info_roles=["actor"],
                       names=[schema.SGLANG_RUNNING_REQS.name]) == "engine"


@pytest.mark.parametrize(
    ("names", "role"),
    [
        (["vllm:num_requests_running", "vllm:generation_tokens_total"], "engine"),
        (["sglang:num_queue_reqs"], "engine"),
        (["ray_vllm_num_requests_running", "ray_vllm_generation_tokens_total"], "engine"),  # behind Ray
        (["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"], "gpu"),
        ([schema.TRAINER_STEPS.name], "trainer"),
        (["posttrain_trainer_steps"], "trainer"),  # counter without _total
        ([schema.ROLLOUTS.name, "vllm:generation_tokens_total"], "rollout"),  # ptmon's own metrics win
        ([schema.EVAL_SCORE.name], "eval"),
        (["process_cpu_seconds_total", "python_info"], None),
        ([], None),
    ],
)
def test_role_from_exposed_names(names: list[str], role: str | None) -> None:
    assert detect_role(configured=None, run_info_roles=[], names=names) == role


def test_run_info_sample_names() -> None:
    assert schema.RUN_INFO.name in run_info_names()


def test_dcgm_labels_match_case_insensitively() -> None:
    old = {"gpu": "0", "UUID": "GPU-abc", "Hostname": "node-1"}
    new = {"gpu": "0", "uuid": "GPU-abc", "hostname": "node-1"}
    for labels in (old, new):
        assert label_ci(labels, "hostname") == "node-1"
        assert label_ci(labels, "UUID") == "GPU-abc"
    assert label_ci(old, "modelName") is None
