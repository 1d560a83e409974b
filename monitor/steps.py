"""Work done in steps: a generator that yields between them and returns its result.

The Dashboard build is hundreds of ms at 64 targets of 1,000 series; as
steps, a caller on an event loop can let scrapes run between them
(``LiveFeed``) while everyone else runs it in one go with ``run_steps``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

__all__ = ["Steps", "run_steps"]

T = TypeVar("T")
Steps = Generator[None, None, T]


def run_steps(steps: Steps[T]) -> T:
    """Run ``steps`` to the end without stopping: its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
