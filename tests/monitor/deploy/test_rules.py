"""The shipped rules: promtool accepts them, and hand-computed unit tests hold (values, levels, edges).

ptmon_rules_test.yml (next to this file) feeds hand-written series to the
real rule files and states every expected value with its arithmetic; the
Python tests here check what promtool cannot: that the thresholds are the
TUI's and follow them when they change, and that every TUI rule has its
Prometheus alert.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ptmon.monitor.alerts import RULES
from ptmon.monitor.deploy import alerting_rules, recording_rules
from ptmon.monitor.deploy.files import ALERTS_FILE, RULES_FILE
from ptmon.monitor.settings import Thresholds
from tests.monitor.deploy.helpers import HERE, copy_assets, run

pytestmark = pytest.mark.prometheus
UNIT_TESTS = HERE / "ptmon_rules_test.yml"


def test_promtool_checks_both_rule_files(tmp_path: Path, promtool_bin: str) -> None:
    assets = copy_assets(tmp_path)
    result = run(promtool_bin, "check", "rules", str(assets / RULES_FILE), str(assets / ALERTS_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(recording_rules())} rules found" in result.stdout
    assert f"SUCCESS: {len(alerting_rules())} rules found" in result.stdout


def test_promtool_unit_tests_pass(tmp_path: Path, promtool_bin: str) -> None:
    assets = copy_assets(tmp_path)
    shutil.copy(UNIT_TESTS, assets / UNIT_TESTS.name)
    result = run(promtool_bin, "test", "rules", UNIT_TESTS.name, cwd=assets)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_unit_tests_catch_a_wrong_threshold(tmp_path: Path, promtool_bin: str) -> None:
    # The same unit tests against alerts built with a staleness warning at 1 instead of 2: they must fail.
    from ptmon.monitor.deploy import _yaml

    assets = copy_assets(tmp_path)
    shutil.copy(UNIT_TESTS, assets / UNIT_TESTS.name)
    wrong = [a.as_dict() for a in alerting_rules(Thresholds(staleness_warn=1.0))]
    (assets / ALERTS_FILE).write_text(_yaml.dump({"groups": [{"name": "ptmon-alerts", "rules": wrong}]}))
    result = run(promtool_bin, "test", "rules", UNIT_TESTS.name, cwd=assets)
    assert result.returncode != 0
    assert "name: staleness" in result.stdout + result.stderr


def test_every_tui_rule_has_its_alert_at_the_tui_levels() -> None:
    levels: dict[str, set[str]] = {}
    for a in alerting_rules():
        levels.setdefault(a.tui_rule, set()).add(a.severity)
        assert a.alert.startswith("Ptmon") and a.summary and a.description
    assert set(levels) == set(RULES)
    two_levels = {"target_down", "weight_sync_slow", "weight_sync_failing", "staleness", "rollout_rate_drop"}
    for rule, seen in levels.items():
        assert seen == ({"warning", "critical"} if rule in two_levels else
                        {"critical"} if rule in ("trainer_stalled", "policy_not_advancing") else {"warning"}), rule


def test_alert_thresholds_are_the_tui_defaults_and_follow_them() -> None:
    th = Thresholds()
    exprs = {(a.tui_rule, a.severity): a.expr for a in alerting_rules()}
    assert exprs[("weight_sync_slow", "critical")].endswith(f"> {th.weight_sync_p99_critical_s:g}")
    assert exprs[("weight_sync_slow", "warning")].endswith(
        f"> {th.weight_sync_p99_warn_s:g} <= {th.weight_sync_p99_critical_s:g}")
    assert exprs[("staleness", "warning")].endswith(f"> {th.staleness_warn:g} <= {th.staleness_critical:g}")
    assert f"{th.stall_factor:g} * histogram_quantile(0.5" in exprs[("trainer_stalled", "critical")]
    assert f"<= {th.rollout_drop_ratio:g} * (" in exprs[("rollout_rate_drop", "warning")]
    assert f"- {th.eval_regression_points:g}" in exprs[("eval_regression", "warning")]

    assert exprs[("eval_stale", "warning")].endswith(f"> {th.eval_push_max_age_s:g}")
    assert f"changes(posttrain_policy_version[{th.policy_stuck_s:g}s])" in exprs[("policy_not_advancing", "critical")]

    custom = Thresholds(weight_sync_p99_warn_s=7.5, staleness_critical=9.0, stall_min_s=45.0,
                        rollout_drop_ratio=0.25, marginal_ipd_min=1.5, eval_regression_points=0.1,
                        eval_push_max_age_s=900.0, policy_stuck_s=600.0)
    text = " ".join(a.expr for a in alerting_rules(custom, marginal_k=3))
    for needle in ("> 7.5 <= 120", "> 9", "45 * group by (run)", "<= 0.25 * (", "<= 1.5)", "- 0.1", ">= 2)",
                   ") > 900", "changes(posttrain_policy_version[600s])", "posttrain_policy_version offset 600s"):
        assert needle in text, needle


def test_recording_rule_names_follow_the_prometheus_convention() -> None:
    names = [name for name, _ in recording_rules()]
    assert len(names) == len(set(names))
    for name in names:
        assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z0-9_]+", name), name
    assert {"run:rollouts_per_second:rate5m", "run:weight_sync_seconds:p99_5m",
            "run:staleness_versions:max", "run:spend_dollars:total", "run:burn_dollars_per_hour:rate5m",
            "run_benchmark:intelligence_per_kilodollar:slope2h"} <= set(names)


def test_every_number_of_a_run_is_grouped_by_run_and_its_alerts_name_it() -> None:
    # One Prometheus holds several runs (review F4): each rule joins run info and keeps `run`; the unit
    # tests' two-run case checks the values, this checks no rule was left out of it.
    join = "group_left (run) topk by (job, instance) (1, "
    for name, expr in recording_rules():
        assert join in expr, name
        if not name.startswith("job_instance:"):
            assert name.split(":")[0] in {"run", "run_benchmark"}, name
            assert re.search(r"by \((le, )?run[,)]", expr), name
    for a in alerting_rules():
        if a.tui_rule == "target_down":  # per target; named with its run when it has one
            assert join in a.expr and a.summary.startswith("{{ with $labels.run }}run {{ . }}: {{ end }}")
            continue
        assert join in a.expr and a.summary.startswith("run {{ $labels.run }}: "), a.alert
