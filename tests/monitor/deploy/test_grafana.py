"""The Grafana dashboard: importable anywhere (datasource variable), and every query is valid PromQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptmon.monitor.deploy import ASSETS_DIR, _yaml, panel_queries
from ptmon.monitor.deploy import dashboard as _dashboard
from ptmon.monitor.deploy.files import DASHBOARD_FILE
from tests.monitor.deploy.helpers import run

DS = {"type": "prometheus", "uid": "${datasource}"}

dashboard: Callable[[], dict[str, Any]] = _dashboard  # JSON the tests index into: Any, not object


def test_the_datasource_is_a_template_variable_used_by_every_panel_and_target() -> None:
    d = json.loads((ASSETS_DIR / DASHBOARD_FILE).read_text())
    assert d == dashboard()
    assert 36 <= d["schemaVersion"] <= 41 and d["uid"] and d["title"]
    (var,) = [v for v in d["templating"]["list"] if v["name"] == "datasource"]
    assert var["type"] == "datasource" and var["query"] == "prometheus"
    assert d["panels"]
    for panel in d["panels"]:
        assert panel["datasource"] == DS, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DS and target["expr"].strip() and target["refId"]
    assert len({p["id"] for p in d["panels"]}) == len(d["panels"])


def test_a_run_variable_filters_every_query_and_every_legend_names_the_run() -> None:
    d = dashboard()
    (var,) = [v for v in d["templating"]["list"] if v["name"] == "run"]
    assert var["type"] == "query" and var["datasource"] == DS
    assert var["definition"] == var["query"]["query"] == "label_values(posttrain_run_info, run)"
    assert var["multi"] and var["includeAll"] and var["allValue"] == ".*"
    for panel in d["panels"]:
        for target in panel["targets"]:
            assert 'posttrain_run_info{run=~"$run"}' in target["expr"], panel["title"]
            assert target["legendFormat"].startswith("{{run}} "), panel["title"]


def test_panels_do_not_overlap_on_the_grid() -> None:
    cells: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, panel["title"]
        cells |= mine


def test_panel_queries_lists_every_target_and_covers_the_issue() -> None:
    from_json = [(p["title"], t["expr"]) for p in dashboard()["panels"] for t in p["targets"]]
    assert panel_queries() == from_json
    titles = " ".join(t.lower() for t, _ in from_json)
    for topic in ("intelligence per dollar", "spend", "burn", "rollouts/s", "tokens/s", "weight-sync",
                  "staleness"):
        assert topic in titles, topic
    exprs = " ".join(e for _, e in from_json)
    for q in ("0.5", "0.9", "0.99"):
        assert f"histogram_quantile({q}," in exprs


def test_a_right_axis_is_declared_for_the_second_quantity() -> None:
    panel = next(p for p in dashboard()["panels"] if p["title"] == "Spend and burn")
    (override,) = panel["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byFrameRefID", "options": "B"}
    assert {"id": "custom.axisPlacement", "value": "right"} in override["properties"]


@pytest.mark.prometheus
def test_every_panel_query_parses(tmp_path: Path, promtool_bin: str) -> None:
    # promtool parses a recording rule's expression: one rule per panel query.
    rules = [{"record": f"ptmon_panel_check:query_{i}", "expr": expr} for i, (_, expr) in enumerate(panel_queries())]
    path = tmp_path / "panels.rules.yml"
    path.write_text(_yaml.dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = run(promtool_bin, "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


@pytest.mark.prometheus
def test_the_parse_check_would_see_a_bad_query(tmp_path: Path, promtool_bin: str) -> None:
    path = tmp_path / "bad.rules.yml"
    path.write_text(_yaml.dump({"groups": [{"name": "bad",
                                            "rules": [{"record": "a:b:c", "expr": "sum(rate(x[5m])"}]}]}))
    assert run(promtool_bin, "check", "rules", str(path)).returncode != 0
