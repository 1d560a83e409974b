"""The Grafana dashboard: the TUI's questions as panels, for a team that lives in Grafana.

Panels query the raw expressions (``ptmon.monitor.promql`` and ``ptmon.monitor.deploy.rules``),
not the recorded series: the dashboard then works on any Prometheus that
scrapes the exporters, with or without ptmon's rules loaded, and shows
history from before the rules were. The window is the rules' and the TUI's
default (5m), not Grafana's ``$__rate_interval``, so a panel and the TUI
show the same number. The datasource is a template variable, so the JSON
imports into any Grafana without editing.

One Prometheus usually holds several runs: a ``run`` variable (the values of
``posttrain_run_info``'s ``run`` label; several or All) filters every panel
through the run-info join, and every legend names the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.deploy.rules import (
    IPD_WINDOW,
    STALENESS_OFFSET,
    WINDOW,
    ipd_expr,
    marginal_ipd_expr,
    score_expr,
    worker_staleness_expr,
)

__all__ = ["DASHBOARD_UID", "RUN_VARIABLE", "RUN_ALL", "Query", "Panel", "panels", "panel_queries", "dashboard"]

DASHBOARD_UID = "ptmon"
_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_PER_TARGET = (*promql.TARGET_BY, schema.TARGET_NAME_LABEL)  # the demo's and the shipped config's target name
RUN_VARIABLE = "run"
RUN_ALL = ".*"  # what the variable's "All" sends: every run, including ones that started after the page loaded
_RUNS = f'{promql.RUN_LABEL}=~"${RUN_VARIABLE}"'  # Grafana regex-escapes each selected value in a =~ matcher
_RUN_LEGEND = "{{run}}"
_TARGET_LEGEND = "{{run}} {{ptmon_name}} {{instance}}"


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
    """The dashboard's panels, in reading order: money, rollout side, weight sync (each per run)."""
    spend = promql.spend_dollars(per_run=True, runs=_RUNS)
    return (
        Panel("Eval score against spend", "Each run's eval score per benchmark (left) and dollars spent (right): "
              "a score that stops rising while spend climbs is money without progress.", "none",
              (Query(score_expr(runs=_RUNS), f"{_RUN_LEGEND} {{{{benchmark}}}}"),
               Query(spend, f"{_RUN_LEGEND} spend", right_axis_unit="currencyUSD"))),
        Panel(f"Intelligence per dollar ({IPD_WINDOW})", "Score points per $1k, per run: score change over the "
              f"last {IPD_WINDOW} / the run's dollars spent in it, and the marginal value (score slope / burn). "
              "Flat or negative while spend grows is the marginal_ipd alert.", "none",
              (Query(ipd_expr(runs=_RUNS), f"{_RUN_LEGEND} {{{{benchmark}}}} points/$1k"),
               Query(marginal_ipd_expr(runs=_RUNS), f"{_RUN_LEGEND} {{{{benchmark}}}} marginal points/$1k"))),
        Panel("Spend and burn", "Dollars each run spent per the GPU-seconds counters (left; a restarted process "
              "starts again from 0) and its burn rate in $/h (right).", "currencyUSD",
              (Query(spend, f"{_RUN_LEGEND} spend"),
               Query(promql.burn_dollars_per_hour(WINDOW, per_run=True, runs=_RUNS), f"{_RUN_LEGEND} burn $/h",
                     right_axis_unit="currencyUSD"))),
        Panel(f"Rollouts/s ({WINDOW})", "Rollouts finished per second, each run's fleet and per worker.", "reqps",
              (Query(promql.rate(schema.ROLLOUTS, WINDOW, per_run=True, runs=_RUNS), f"{_RUN_LEGEND} fleet"),
               Query(promql.rate(schema.ROLLOUTS, WINDOW, by=_PER_TARGET, per_run=True, runs=_RUNS),
                     _TARGET_LEGEND))),
        Panel(f"Rollout tokens/s ({WINDOW})", "Tokens generated in rollouts per second, each run's fleet and per "
              "worker.", "short",
              (Query(promql.rate(schema.ROLLOUT_TOKENS, WINDOW, per_run=True, runs=_RUNS), f"{_RUN_LEGEND} fleet"),
               Query(promql.rate(schema.ROLLOUT_TOKENS, WINDOW, by=_PER_TARGET, per_run=True, runs=_RUNS),
                     _TARGET_LEGEND))),
        Panel(f"Weight-sync latency ({WINDOW})", "Trainer-to-inference weight-sync time quantiles per run, from "
              "the histogram's bucket rates (the weight_sync_slow alert reads p99).", "s",
              tuple(Query(promql.sync_quantile(q, WINDOW, per_run=True, runs=_RUNS), f"{_RUN_LEGEND} {key}")
                    for key, q in promql.QUANTILES.items())),
        Panel("Policy staleness", "Policy versions the rollout workers lag their run's trainer: the furthest "
              "behind in each run and each worker.", "none",
              (Query(promql.staleness_max(per_run=True, runs=_RUNS, behind=STALENESS_OFFSET), f"{_RUN_LEGEND} max"),
               Query(worker_staleness_expr(_PER_TARGET, runs=_RUNS), _TARGET_LEGEND))),
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


_RUN_VALUES = f"label_values({schema.RUN_INFO.name}, {promql.RUN_LABEL})"  # refresh 2: on every time-range change


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
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [], "refresh": 1,
             "regex": "", "skipUrlSync": False},
            {"name": RUN_VARIABLE, "label": "Run", "type": "query", "datasource": _DATASOURCE,
             "definition": _RUN_VALUES, "query": {"query": _RUN_VALUES, "refId": "PrometheusVariableQueryEditor"},
             "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
             "hide": 0, "includeAll": True, "allValue": RUN_ALL, "multi": True, "options": [],
             "refresh": 2, "regex": "", "sort": 1, "skipUrlSync": False},
        ]},
        "annotations": {"list": []},
        "links": [],
        "panels": [_panel_json(i + 1, p, 12 * (i % 2), 8 * (i // 2)) for i, p in enumerate(panels())],
    }
