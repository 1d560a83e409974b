"""The real-server fixtures of tests/conftest.py: they start what they say, mark, skip or fail as documented.

Every ecosystem test leans on these, so they are checked once here: each
server answers on its port, is gone after teardown, and a missing binary is a
skip with the Debian package named, or a failure under
PTMON_REQUIRE_PROMETHEUS=1 (CI must never go green by skipping).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from ptmon.exporters import EvalExporter
from tests.conftest import (
    PROMETHEUS_FIXTURES,
    AlertmanagerServer,
    PrometheusServer,
    PushgatewayServer,
    VictoriaMetricsServer,
    VMAlertServer,
    _require_binary,
)


def test_a_missing_binary_skips_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PTMON_REQUIRE_PROMETHEUS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no-such-vm not found on PATH \(Debian: apt-get install "
                                                    r"victoria-metrics\)"):
        _require_binary("no-such-vm", "victoria-metrics")


def test_a_missing_binary_fails_when_ci_requires_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTMON_REQUIRE_PROMETHEUS", "1")
    with pytest.raises(pytest.fail.Exception, match="PTMON_REQUIRE_PROMETHEUS=1 forbids skipping"):
        _require_binary("no-such-gateway", "prometheus-pushgateway")


def test_the_ecosystem_fixtures_carry_the_prometheus_marker(request: pytest.FixtureRequest) -> None:
    wanted = {"victoria_metrics_bin", "vmalert_bin", "pushgateway_bin", "alertmanager_bin",
              "victoria_metrics_on_config", "vmalert_server", "pushgateway_server", "alertmanager_server"}
    assert wanted <= PROMETHEUS_FIXTURES
    assert request.node.get_closest_marker("prometheus") is None  # this test uses none of them


@pytest.mark.slow
def test_pushgateway_takes_a_push_and_dies_when_killed(
        pushgateway_server: Callable[[], PushgatewayServer], request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("prometheus") is not None  # added from the fixture
    gateway = pushgateway_server()
    evals = EvalExporter(run="r1", model="m", algorithm="grpo", gpus=1, gpu_hour_price=3.0)
    evals.record_eval(benchmark="gsm8k", score=0.5, policy_version=1)
    assert evals.push(gateway=gateway.address, job="eval", grouping_key={"run": "r1"})
    assert [g["labels"] for g in gateway.groups()] == [{"job": "eval", "run": "r1"}]
    gateway.kill()
    assert not gateway.running
    with pytest.raises(httpx.HTTPError):
        httpx.get(gateway.url + "/-/ready", timeout=1.0)
    gateway.start()  # same port again, empty (no persistence file)
    assert gateway.groups() == []


@pytest.mark.slow
def test_victoria_metrics_and_vmalert_answer_the_query_api(
        victoria_metrics_on_config: Callable[..., VictoriaMetricsServer],
        vmalert_server: Callable[..., VMAlertServer],
        alertmanager_server: Callable[[], AlertmanagerServer], tmp_path: Path) -> None:
    config = tmp_path / "scrape.yml"
    config.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": []}))
    vm = victoria_metrics_on_config(config)
    assert vm.query("vector(1)")[0]["value"][1] == "1"
    rules = tmp_path / "rules.yml"
    rules.write_text(json.dumps({"groups": [{"name": "g", "rules": [
        {"alert": "Always", "expr": "vector(1)", "labels": {"severity": "warning"}}]}]}))
    am = alertmanager_server()
    alert = vmalert_server(vm.url, [rules], notifier=am.url, evaluation_interval=1.0)
    deadline = time.monotonic() + 20.0
    while not any(a["labels"].get("alertname") == "Always" for a in am.alerts()):
        assert time.monotonic() < deadline, f"no alert reached Alertmanager; vmalert log:\n{alert.log_tail()}"
        time.sleep(0.2)
    assert [a["name"] for g in alert.api("rules")["groups"] for a in g["rules"]] == ["Always"]


@pytest.mark.parametrize("server", [PrometheusServer, VictoriaMetricsServer, VMAlertServer])
def test_a_query_servers_failure_message_carries_its_log(server: type[PrometheusServer], tmp_path: Path) -> None:
    """wait_for's timeout and a failed start quote the server's log; the query mixin's placeholder once came
    first in the MRO and raised NotImplementedError instead, hiding why Prometheus did not answer."""
    instance = object.__new__(server)  # no process: only its log is read
    instance.log_path = tmp_path / "log"
    instance.log_path.write_text("level=error msg=\"the real reason\"\n")
    assert "the real reason" in instance.log_tail()
