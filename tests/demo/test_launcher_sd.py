"""``ptmon demo --headless --sd-file PATH``: the running targets as a Prometheus file_sd file.

The point is that the shipped ``prometheus.yml`` (``ptmon assets``) scrapes
the demo unchanged when the file sits in its ``targets/`` directory: the
end-to-end test starts a real Prometheus on exactly that.
"""

from __future__ import annotations

import json
import signal
import stat
import time
from pathlib import Path

import pytest

from ptmon.demo.launcher import Endpoint, file_sd_groups, write_sd_file
from ptmon.exporters.schema import GPUS
from ptmon.monitor.deploy.files import PROMETHEUS_CONFIG, TARGETS_DIR
from ptmon.monitor.deploy.rules import DEMO_JOB_PREFIX
from tests.demo.helpers import URL_RE, start_headless
from tests.monitor.deploy.helpers import copy_assets

ENDPOINTS = [Endpoint("trainer", "trainer", 9001), Endpoint("rollout-0", "rollout", 9002),
             Endpoint("eval", "eval", 9004)]


def test_groups_name_each_target_and_set_its_job_but_no_clashing_label() -> None:
    groups = file_sd_groups(ENDPOINTS)
    assert groups == [
        {"targets": ["127.0.0.1:9001"], "labels": {"job": DEMO_JOB_PREFIX + "trainer", "ptmon_name": "trainer"}},
        {"targets": ["127.0.0.1:9002"], "labels": {"job": DEMO_JOB_PREFIX + "rollout", "ptmon_name": "rollout-0"}},
        {"targets": ["127.0.0.1:9004"], "labels": {"job": DEMO_JOB_PREFIX + "eval", "ptmon_name": "eval"}},
    ]


def test_the_file_is_replaced_whole_and_no_temp_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "ptmon.demo.json"
    write_sd_file(path, ENDPOINTS)
    first_inode = path.stat().st_ino
    write_sd_file(path, ENDPOINTS[:1])
    assert json.loads(path.read_text()) == file_sd_groups(ENDPOINTS[:1])
    assert path.stat().st_ino != first_inode  # a rename, not an in-place rewrite a reader could see half of
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["ptmon.demo.json"]


def test_an_sd_file_in_a_missing_directory_is_refused_up_front(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from ptmon.monitor.cli import main

    assert main(["demo", "--headless", "--sd-file", str(tmp_path / "nope" / "ptmon.demo.json")]) == 2
    assert "--sd-file" in capsys.readouterr().err


@pytest.mark.prometheus
@pytest.mark.slow  # the shipped 5 s scrape interval: about 10 s
def test_the_shipped_config_scrapes_the_demo_through_its_sd_file(prometheus_bin: str, tmp_path: Path) -> None:
    from tests.conftest import PrometheusServer

    assets = copy_assets(tmp_path)
    sd_file = assets / TARGETS_DIR / "ptmon.demo.json"
    shipped = (assets / PROMETHEUS_CONFIG).read_text()
    proc, text = start_headless("--sd-file", str(sd_file))
    prom = PrometheusServer(binary=prometheus_bin, directory=assets, scrape_configs=[], interval="5s")
    try:
        printed = {name: f"127.0.0.1:{port}" for name, _, port in URL_RE.findall(text)}
        assert f"# file_sd targets: {sd_file}" in text
        groups = json.loads(sd_file.read_text())
        assert {g["labels"]["ptmon_name"]: g["targets"][0] for g in groups} == printed
        assert all(set(g["labels"]) == {"job", "ptmon_name"} for g in groups)

        prom.config_path.write_text(shipped)  # the class wrote its own config: put the shipped one back
        prom.start()
        up = prom.wait_for("up == 1", lambda r: len(r) == 4)
        assert {(s["metric"]["job"], s["metric"]["ptmon_name"]) for s in up} == {
            ("posttrain-trainer", "trainer"), ("posttrain-rollout", "rollout-0"),
            ("posttrain-rollout", "rollout-1"), ("posttrain-eval", "eval")}
        gpus = prom.wait_for(GPUS.name, lambda r: len(r) == 4)
        assert sorted(s["metric"]["role"] for s in gpus) == ["eval", "rollout", "rollout", "trainer"]
        assert not any(k.startswith("exported_") for s in gpus for k in s["metric"])
        # The rule files were found next to the config and evaluate cleanly.
        groups_loaded = prom.api("rules")["groups"]
        assert sorted(g["name"] for g in groups_loaded) == ["ptmon", "ptmon-alerts"]
        prom.wait_for("run:spend_dollars:total > 0")
        deadline = time.monotonic() + 20.0  # each group runs at its own offset within the 5 s interval
        while True:
            health = {r["name"]: (r["health"], r.get("lastError", "")) for g in prom.api("rules")["groups"]
                      for r in g["rules"]}
            if all(h == "ok" for h, _ in health.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert all(h == "ok" for h, _ in health.values()), health
    finally:
        prom.stop()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert json.loads(sd_file.read_text()) == []  # the stopped demo took its targets out of discovery
