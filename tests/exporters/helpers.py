"""Small helpers shared by the exporter tests: a hand-driven clock and sample lookups."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from exporters.schema import EXPORTER_ERRORS, MetricSpec

__all__ = ["FakeClock", "value", "errors"]


class FakeClock:
    """A clock the test moves by hand, so durations and GPU-seconds are exact."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def value(registry: CollectorRegistry, spec: MetricSpec, suffix: str = "", **labels: str) -> float | None:
    """The sample ``spec.name + suffix`` with ``labels`` (None when absent)."""
    return registry.get_sample_value(spec.name + suffix, labels)


def errors(registry: CollectorRegistry, call: str) -> float | None:
    return value(registry, EXPORTER_ERRORS, call=call)
