"""ptmon's demo: a synthetic asynchronous RL post-training run as real processes.

``ptmon demo`` (``ptmon.demo.launcher.run_demo``) starts a trainer, rollout workers
and an eval job (``python -m ptmon.demo ROLE``), each instrumented only through
``exporters/`` and served on its own loopback port, and opens the TUI on
them. The names below load lazily: every child process imports this package
first, and it should not pay for the launcher's imports.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "run_demo",
    "Fleet",
    "DemoOptions",
    "Endpoint",
    "DEFAULT_SPEED",
    "Scenario",
    "SCENARIOS",
    "SCENARIO_NAMES",
    "RunSpec",
]

_HOMES = {
    "run_demo": "ptmon.demo.launcher",
    "Fleet": "ptmon.demo.launcher",
    "DemoOptions": "ptmon.demo.launcher",
    "Endpoint": "ptmon.demo.launcher",
    "DEFAULT_SPEED": "ptmon.demo.launcher",
    "Scenario": "ptmon.demo.scenarios",
    "SCENARIOS": "ptmon.demo.scenarios",
    "SCENARIO_NAMES": "ptmon.demo.scenarios",
    "RunSpec": "ptmon.demo.model",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'demo' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
