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
    "Dashboard": "monitor.dashboard",
    "TargetHealth": "monitor.dashboard",
    "WorkerRow": "monitor.dashboard",
    "EvalPoint": "monitor.dashboard",
    "Alert": "monitor.dashboard",
    "Feed": "monitor.feed",
    "LiveFeed": "monitor.live",
    "Settings": "monitor.settings",
    "Target": "monitor.settings",
    "Thresholds": "monitor.settings",
    "ConfigError": "monitor.config",
    "load_settings": "monitor.config",
    "Sample": "monitor.parse",
    "ParseError": "monitor.parse",
    "parse": "monitor.parse",
    "ExpositionParser": "monitor.parse",
    "Store": "monitor.store",
    "build_dashboard": "monitor.build",
    "evaluate": "monitor.alerts",
    "PtmonApp": "monitor.app",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'monitor' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
