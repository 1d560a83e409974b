"""ptmon's monitor: sources → parse → store → derive/build → Dashboard → alerts → TUI.

The public names load lazily so ``ptmon --help`` and the data layer never pay
for Textual, and the CLI starts fast. Nothing here but the TUI imports Textual.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Dashboard",
    "TargetHealth",
    "WorkerRow",
    "EvalPoint",
    "Alert",
    "Feed",
    "LiveFeed",
    "Settings",
    "Target",
    "Thresholds",
    "ConfigError",
    "load_settings",
    "Sample",
    "ParseError",
    "parse",
    "ExpositionParser",
    "Store",
    "build_dashboard",
    "evaluate",
    "PtmonApp",
]

_HOMES = {
    "Dashboard": "ptmon.monitor.dashboard",
    "TargetHealth": "ptmon.monitor.dashboard",
    "WorkerRow": "ptmon.monitor.dashboard",
    "EvalPoint": "ptmon.monitor.dashboard",
    "Alert": "ptmon.monitor.dashboard",
    "Feed": "ptmon.monitor.feed",
    "LiveFeed": "ptmon.monitor.live",
    "Settings": "ptmon.monitor.settings",
    "Target": "ptmon.monitor.settings",
    "Thresholds": "ptmon.monitor.settings",
    "ConfigError": "ptmon.monitor.config",
    "load_settings": "ptmon.monitor.config",
    "Sample": "ptmon.monitor.parse",
    "ParseError": "ptmon.monitor.parse",
    "parse": "ptmon.monitor.parse",
    "ExpositionParser": "ptmon.monitor.parse",
    "Store": "ptmon.monitor.store",
    "build_dashboard": "ptmon.monitor.build",
    "evaluate": "ptmon.monitor.alerts",
    "PtmonApp": "ptmon.monitor.app",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'monitor' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
