"""The PromQL ptmon sends and ships, checked by a real engine (promtool's rule unit tests)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ptmon.exporters import schema
from ptmon.monitor import promql


def test_durations_are_whole_seconds_when_exact_else_milliseconds() -> None:
    assert [promql.duration(x) for x in (300, 2.5, 0.0004, 3600.0)] == ["300s", "2500ms", "1ms", "3600s"]
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            promql.duration(bad)


def test_selectors_refuse_the_wrong_kind_and_combine_refuses_odd_keys() -> None:
    with pytest.raises(ValueError, match="not a counter"):
        promql.counter(schema.POLICY_VERSION)
    with pytest.raises(ValueError, match="not a histogram"):
        promql._suffixed(schema.ROLLOUTS, "_bucket")  # noqa: SLF001
    with pytest.raises(ValueError, match="letters"):
        promql.combine({'x") or vector(1': "up"})
    with pytest.raises(ValueError):
        promql.combine({})


def _promtool_eval(promtool: str, tmp_path: Path, exprs: dict[str, str], series: list[dict], at: str,
                   expected: dict[str, list[dict]]) -> subprocess.CompletedProcess[str]:
    """Record each expr as a rule and let promtool compare its value at ``at`` with ``expected``.

    JSON is YAML: the files are written with json.dumps, so no quoting question arises.
    """
    rules = {"groups": [{"name": "t", "rules": [{"record": name, "expr": e} for name, e in exprs.items()]}]}
    (tmp_path / "rules.yml").write_text(json.dumps(rules))
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": name, "eval_time": at, "exp_samples": samples}
                             for name, samples in expected.items()]}]}
    (tmp_path / "test.yml").write_text(json.dumps(test))
    return subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)


def test_a_counter_is_counted_under_either_name_and_the_combined_query_tags_every_answer(
        tmp_path: Path, promtool_bin: str) -> None:
    # Two workers: one exposes posttrain_rollouts_total (prometheus_client), one a bare posttrain_rollouts.
    # Each adds 60 rollouts a minute: 1/s each. A weight-sync histogram with one sync a minute of 2 s.
    a = '{job="rollout", instance="a:1", env="math", outcome="ok"}'
    b = '{job="rollout", instance="b:1", env="math", outcome="ok"}'
    sync = '{job="trainer", instance="t:1"'
    series = [
        {"series": f"posttrain_rollouts_total{a}", "values": "0+60x10"},
        {"series": f"posttrain_rollouts{b}", "values": "0+60x10"},
        {"series": f'posttrain_weight_sync_seconds_bucket{sync}, le="1"}}', "values": "0+0x10"},
        {"series": f'posttrain_weight_sync_seconds_bucket{sync}, le="4"}}', "values": "0+1x10"},
        {"series": f'posttrain_weight_sync_seconds_bucket{sync}, le="+Inf"}}', "values": "0+1x10"},
        {"series": f"posttrain_weight_sync_seconds_count{sync}}}", "values": "0+1x10"},
    ]
    queries = promql.instant_queries(300)
    wanted = {k: queries[k] for k in ("rollouts", "sync_p50")}
    wanted["sync_count"] = promql.increase(schema.WEIGHT_SYNC_SECONDS.count, "5m")
    exprs = {"fleet_rate": promql.rate(schema.ROLLOUTS, "5m"), "combined": promql.combine(wanted)}
    q = promql.Q_LABEL
    expected = {
        "fleet_rate": [{"labels": "fleet_rate", "value": 2}],
        # Per target; a quantile interpolated in (1, 4]: half the syncs at 1 + 3 x 0.5 = 2.5; 5 syncs in 5 min.
        "combined": [
            {"labels": f'combined{{{q}="rollouts", job="rollout", instance="a:1"}}', "value": 1},
            {"labels": f'combined{{{q}="rollouts", job="rollout", instance="b:1"}}', "value": 1},
            {"labels": f'combined{{{q}="sync_p50"}}', "value": 2.5},
            {"labels": f'combined{{{q}="sync_count"}}', "value": 5},
        ],
    }
    result = _promtool_eval(promtool_bin, tmp_path, exprs, series, "10m", expected)
    assert result.returncode == 0, result.stdout + result.stderr
    # And the check has teeth: a wrong expectation fails.
    expected["fleet_rate"] = [{"labels": "fleet_rate", "value": 1}]
    assert _promtool_eval(promtool_bin, tmp_path, exprs, series, "10m", expected).returncode != 0
