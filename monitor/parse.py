"""Prometheus text exposition parser (0.0.4 and OpenMetrics 1.0).

PLACEHOLDER: the fast implementation lands with issue 3. The types below are
the interface every other module codes against and must not change shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["Sample", "ParseError", "parse"]


class Sample(NamedTuple):
    """One sample line: metric name, labels, value and optional timestamp (seconds)."""

    name: str
    labels: Mapping[str, str]
    value: float
    timestamp: float | None = None


class ParseError(ValueError):
    """An exposition line that is not valid; ``lineno`` is 1-based."""

    def __init__(self, message: str, *, lineno: int, line: str = "") -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno
        self.line = line


def parse(text: str) -> list[Sample]:
    raise NotImplementedError
