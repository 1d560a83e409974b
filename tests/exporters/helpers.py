"""Small helpers shared by the exporter tests: a hand-driven clock, a test's exporter, sample lookups."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from prometheus_client import CollectorRegistry

from ptmon.exporters.schema import EXPORTER_ERRORS, MetricSpec
from tests.support.clock import FakeClock

__all__ = ["FakeClock", "exporter", "value", "errors"]

E = TypeVar("E")




def exporter(cls: Callable[..., E], **overrides: object) -> E:
    """``cls`` as the tests know it (run r1, qwen3-8b, grpo, 1 GPU at $3/h, a FakeClock), ``overrides`` applied."""
    options: dict[str, object] = dict(run="r1", model="qwen3-8b", algorithm="grpo", gpus=1, gpu_hour_price=3.0,
                                      clock=FakeClock())
    options.update(overrides)
    return cls(**options)


def value(registry: CollectorRegistry, spec: MetricSpec, suffix: str = "", **labels: str) -> float | None:
    """The sample ``spec.name + suffix`` with ``labels`` (None when absent)."""
    return registry.get_sample_value(spec.name + suffix, labels)


def errors(registry: CollectorRegistry, call: str) -> float | None:
    return value(registry, EXPORTER_ERRORS, call=call)
