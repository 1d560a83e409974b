"""The Grafana dashboard: the TUI's questions as panels, for a team that lives in Grafana.

Panels query the raw expressions (``monitor.promql`` and ``monitor.deploy.rules``),
not the recorded series: the dashboard then works on any Prometheus that
scrapes the exporters, with or without ptmon's rules loaded, and shows
history from before the rules were. The window is the rules' and the TUI's
default (5m), not Grafana's ``$__rate_interval``, so a panel and the TUI
show the same number. The datasource is a template variable, so the JSON
imports into any Grafana without editing.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporters import schema
from monitor import promql
from monitor.deploy.rules import (
    IPD_WINDOW,
    WINDOW,
    ipd_expr,
    marginal_ipd_expr,
    score_expr,
    worker_staleness_expr,
)

__all__ = ["DASHBOARD_UID", "Query", "Panel", "panels", "panel_queries", "dashboard"]

DASHBOARD_UID = "ptmon"
_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_PER_TARGET = (*promql.TARGET_BY, "ptmon_name")  # ptmon_name: the demo's and the shipped config's target name
_TARGET_LEGEND = "{{ptmon_name}} {{instance}}"


@dataclass(frozen=True, slots=True)
class Query:
    expr: str
    legend: str
    right_axis_unit: str | None = None  # drawn on a right-hand axis in this unit (two quantities, one panel)


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]


def panels() -> tuple[Panel, ...]:
    """The dashboard's panels, in reading order: money, rollout side, weight sync."""
    spend = promql.spend_dollars()
    return (
        Panel("Eval score against spend", "Each benchmark's eval score (left) and dollars spent (right): "
              "a score that stops rising while spend climbs is money without progress.", "none",
              (Query(score_expr(), "{{benchmark}}"), Query(spend, "spend", right_axis_unit="currencyUSD"))),
        Panel(f"Intelligence per dollar ({IPD_WINDOW})", "Score points per $1k: score change over the last "
              f"{IPD_WINDOW} / dollars spent in it, and the marginal value (score slope / burn). Flat or "
              "negative while spend grows is the marginal_ipd alert.", "none",
              (Query(ipd_expr(), "{{benchmark}} points/$1k"),
               Query(marginal_ipd_expr(), "{{benchmark}} marginal points/$1k"))),
        Panel("Spend and burn", "Dollars spent per the GPU-seconds counters (left; a restarted process starts "
              "again from 0) and the burn rate in $/h (right).", "currencyUSD",
              (Query(spend, "spend"),
               Query(promql.burn_dollars_per_hour(WINDOW), "burn $/h", right_axis_unit="currencyUSD"))),
        Panel(f"Rollouts/s ({WINDOW})", "Rollouts finished per second, fleet and per worker.", "reqps",
              (Query(promql.rate(schema.ROLLOUTS, WINDOW), "fleet"),
               Query(promql.rate(schema.ROLLOUTS, WINDOW, by=_PER_TARGET), _TARGET_LEGEND))),
        Panel(f"Rollout tokens/s ({WINDOW})", "Tokens generated in rollouts per second, fleet and per worker.",
              "short",
              (Query(promql.rate(schema.ROLLOUT_TOKENS, WINDOW), "fleet"),
               Query(promql.rate(schema.ROLLOUT_TOKENS, WINDOW, by=_PER_TARGET), _TARGET_LEGEND))),
        Panel(f"Weight-sync latency ({WINDOW})", "Trainer-to-inference weight-sync time quantiles, from the "
              "histogram's bucket rates (the weight_sync_slow alert reads p99).", "s",
              tuple(Query(promql.sync_quantile(q, WINDOW), key) for key, q in promql.QUANTILES.items())),
        Panel("Policy staleness", "Policy versions the rollout workers lag the trainer: the furthest behind "
              "and each worker.", "none",
              (Query(promql.staleness_max(), "max"),
               Query(worker_staleness_expr(_PER_TARGET), _TARGET_LEGEND))),
    )


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every query of the dashboard, in panel order."""
    return [(p.title, q.expr) for p in panels() for q in p.queries]


def _panel_json(panel_id: int, panel: Panel, x: int, y: int) -> dict[str, object]:
    targets = []
    overrides = []
    for i, q in enumerate(panel.queries):
        ref = chr(ord("A") + i)
        targets.append({"refId": ref, "datasource": _DATASOURCE, "expr": q.expr, "legendFormat": q.legend,
                        "range": True, "instant": False, "editorMode": "code"})
        if q.right_axis_unit is not None:
            overrides.append({"matcher": {"id": "byFrameRefID", "options": ref},
                              "properties": [{"id": "custom.axisPlacement", "value": "right"},
                                             {"id": "unit", "value": q.right_axis_unit}]})
    return {
        "id": panel_id, "type": "timeseries", "title": panel.title, "description": panel.description,
        "datasource": _DATASOURCE, "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": panel.unit, "custom": {"lineWidth": 1, "fillOpacity": 0,
                                                                     "showPoints": "never", "spanNulls": False}},
                        "overrides": overrides},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "none"}},
    }


def dashboard() -> dict[str, object]:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file)."""
    return {
        "title": "ptmon: post-training loop",
        "uid": DASHBOARD_UID,
        "description": "Intelligence per dollar, rollout rate, weight-sync latency and staleness of a "
                       "post-training run, from the metrics of ptmon's exporters (generated by `ptmon assets`).",
        "tags": ["ptmon", "post-training"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "10s",
        "timezone": "",
        "templating": {"list": [{
            "name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [], "refresh": 1,
            "regex": "", "skipUrlSync": False}]},
        "annotations": {"list": []},
        "links": [],
        "panels": [_panel_json(i + 1, p, 12 * (i % 2), 8 * (i // 2)) for i, p in enumerate(panels())],
    }
