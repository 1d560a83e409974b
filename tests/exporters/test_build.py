"""MetricSpec -> collector, and the fast paths' equivalence with prometheus_client's public API."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from ptmon.exporters import _build
from ptmon.exporters.schema import CONTRACT, ROLLOUT_REWARD, ROLLOUT_SECONDS, ROLLOUTS, RUN_INFO, TRAINER_STEPS


def test_base_name_strips_the_suffix_prometheus_client_adds() -> None:
    assert _build.base_name(TRAINER_STEPS) == "posttrain_trainer_steps"
    assert _build.base_name(RUN_INFO) == "posttrain_run"
    assert _build.base_name(ROLLOUT_SECONDS) == "posttrain_rollout_seconds"


@pytest.mark.parametrize("spec", [s for s in CONTRACT if s.kind in ("counter", "gauge", "histogram")],
                         ids=lambda s: s.name)
def test_every_contract_metric_is_exposed_under_its_contract_name(spec) -> None:  # noqa: ANN001
    registry = CollectorRegistry()
    builders: dict[str, Callable[..., Any]] = {"counter": _build.counter, "gauge": _build.gauge,
                                               "histogram": _build.histogram}
    metric = builders[spec.kind](spec, registry)
    if spec.labels:
        metric.labels(*["x"] * len(spec.labels))
    names = {sample.name for family in registry.collect() for sample in family.samples}
    assert (spec.bucket if spec.kind == "histogram" else spec.name) in names


def test_kind_mismatch_is_refused() -> None:
    with pytest.raises(TypeError, match="counter"):
        _build.gauge(ROLLOUTS, CollectorRegistry())


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, max_size=40))
def test_fast_paths_expose_exactly_what_the_public_api_does(values: list[float]) -> None:
    fast_registry, public_registry = CollectorRegistry(), CollectorRegistry()
    fast_h = _build.histogram(ROLLOUT_REWARD, fast_registry).labels(env="e")
    public_h = _build.histogram(ROLLOUT_REWARD, public_registry).labels(env="e")
    fast_c = _build.counter(ROLLOUTS, fast_registry).labels(env="e", outcome="ok")
    public_c = _build.counter(ROLLOUTS, public_registry).labels(env="e", outcome="ok")
    observe, inc = _build.fast_observe(fast_h), _build.fast_inc(fast_c)
    assert observe is not fast_h.observe and inc is not fast_c.inc  # the fast paths are really in use
    for x in values + list(ROLLOUT_REWARD.buckets):  # values on the bounds too: le is inclusive
        observe(x)
        public_h.observe(x)
        inc(abs(x))
        public_c.inc(abs(x))

    def samples(registry: CollectorRegistry) -> list:
        return [(s.name, s.labels, s.value) for f in registry.collect() for s in f.samples
                if not s.name.endswith("_created")]

    assert samples(fast_registry) == samples(public_registry)
    assert generate_latest(fast_registry).count(b"\n") == generate_latest(public_registry).count(b"\n")


def test_fast_paths_fall_back_to_the_public_api_when_internals_change() -> None:
    class Opaque:
        def inc(self, amount: float = 1) -> None: ...

        def observe(self, amount: float) -> None: ...

    opaque = Opaque()
    assert _build.fast_inc(opaque) == opaque.inc  # type: ignore[arg-type]
    total_inc, bounds, bucket_incs = _build.histogram_parts(opaque)  # type: ignore[arg-type]
    assert total_inc == opaque.observe and bounds == (float("inf"),) and len(bucket_incs) == 1


def test_fallback_parts_still_record_through_the_public_api() -> None:
    registry = CollectorRegistry()
    child = _build.histogram(ROLLOUT_SECONDS, registry).labels(env="e")

    class Wrapper:  # hides the internals, keeps the public API
        def observe(self, amount: float) -> None:
            child.observe(amount)

    observe = _build.fast_observe(Wrapper())  # type: ignore[arg-type]
    observe(3.0)
    assert registry.get_sample_value(ROLLOUT_SECONDS.bucket, {"env": "e", "le": "5.0"}) == 1
    assert registry.get_sample_value(ROLLOUT_SECONDS.bucket, {"env": "e", "le": "2.5"}) == 0


# Fork safety: a training process forks (code sandboxes, multiprocessing) while its threads record.
@pytest.mark.slow  # starts a process that forks 20 children
@pytest.mark.parametrize("multiprocess", [False, True])
def test_20_forks_under_three_busy_threads_all_complete(multiprocess: bool, tmp_path: Path) -> None:
    # Before every lock was replaced in the child, 20 of 20 children hung on their first set_gpus.
    args = [sys.executable, "-m", "tests.exporters.fork_worker", "20"]
    if multiprocess:
        args += ["--multiprocess", str(tmp_path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"completed": 20, "hung": 0, "failed": 0}

