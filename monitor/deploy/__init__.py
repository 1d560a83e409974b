"""Deploy assets: a Prometheus scrape config, recording and alerting rules, a Grafana dashboard.

Why a package that generates them: past one machine ptmon is read through a
Prometheus, and the numbers a team sees in Grafana or gets paged on must be
the TUI's. So every expression comes from ``ptmon.monitor.promql``, every name
from ``ptmon.exporters.schema`` and every threshold from ``Thresholds()``; the
files in ``assets/`` are this package's output, shipped as package data and
checked against it by the tests. ``ptmon assets DIR`` (or ``python -m
monitor.deploy DIR``) writes them for a user.
"""

from __future__ import annotations

from ptmon.monitor.deploy.files import (
    ASSETS_DIR,
    AssetConflict,
    render_assets,
    write_assets,
)
from ptmon.monitor.deploy.grafana import dashboard, panel_queries
from ptmon.monitor.deploy.rules import AlertRule, RecordingRule, alerting_rules
from ptmon.monitor.deploy.rules import recording_rules as _recording_rule_objects

__all__ = [
    "ASSETS_DIR",
    "AssetConflict",
    "AlertRule",
    "RecordingRule",
    "alerting_rules",
    "dashboard",
    "panel_queries",
    "recording_rules",
    "render_assets",
    "write_assets",
]


def recording_rules() -> list[tuple[str, str]]:
    """(record, expr) of every recording rule, in the rules file's order."""
    return [(r.record, r.expr) for r in _recording_rule_objects()]
