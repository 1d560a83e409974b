"""The shipped files: committed = generated, written safely, installed with the package, valid to promtool."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ptmon.demo.launcher import Endpoint, write_sd_file
from ptmon.monitor.cli import main
from ptmon.monitor.deploy import ASSETS_DIR, AssetConflict, render_assets, write_assets
from ptmon.monitor.deploy.files import ALERTS_FILE, PROMETHEUS_CONFIG, RULES_FILE, TARGETS_DIR, VM_CONFIG
from tests.monitor.deploy.helpers import copy_assets, run

ROOT = Path(__file__).resolve().parents[3]


def test_committed_assets_are_what_the_generator_writes_now() -> None:
    rendered = render_assets()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in ASSETS_DIR.iterdir() if p.is_file()}
    assert sorted(on_disk) == sorted(rendered)
    for name, text in rendered.items():
        assert on_disk[name] == text, (
            f"{name} is stale: run `python -m ptmon.monitor.deploy monitor/deploy/assets --force`")


def test_every_asset_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "ptmon.monitor.deploy" in config["packages"] and "ptmon.monitor.deploy.assets" in config["packages"]
    patterns = config["package-data"]["ptmon.monitor.deploy.assets"]
    for name in render_assets():
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name


def test_write_assets_writes_then_leaves_identical_files_alone(tmp_path: Path) -> None:
    dest = tmp_path / "new" / "dir"
    done = write_assets(dest)
    assert [what for _, what in done] == ["wrote"] * len(render_assets())
    assert (dest / TARGETS_DIR).is_dir()
    assert {p.name: p.read_text() for p in dest.iterdir() if p.is_file()} == render_assets()
    assert [what for _, what in write_assets(dest)] == ["unchanged"] * len(render_assets())


def test_a_changed_file_is_refused_untouched_unless_forced(tmp_path: Path) -> None:
    write_assets(tmp_path)
    edited = tmp_path / RULES_FILE
    edited.write_text("# my edits\n")
    (tmp_path / ALERTS_FILE).unlink()
    with pytest.raises(AssetConflict, match=RULES_FILE):
        write_assets(tmp_path)
    assert edited.read_text() == "# my edits\n"
    assert not (tmp_path / ALERTS_FILE).exists()  # refused before writing anything
    done = dict(write_assets(tmp_path, force=True))
    assert done[str(edited)] == "replaced" and done[str(tmp_path / ALERTS_FILE)] == "wrote"
    assert edited.read_text() == render_assets()[RULES_FILE]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_ptmon_assets_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["assets", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in render_assets():
        assert f"wrote     {tmp_path / name}" in out
    (tmp_path / PROMETHEUS_CONFIG).write_text("global: {}\n")
    assert main(["assets", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ptmon assets:" in err and PROMETHEUS_CONFIG in err and "--force" in err
    assert (tmp_path / PROMETHEUS_CONFIG).read_text() == "global: {}\n"
    assert main(["assets", "--force", str(tmp_path)]) == 0
    assert f"replaced  {tmp_path / PROMETHEUS_CONFIG}" in capsys.readouterr().out


def test_ptmon_assets_config_puts_the_users_thresholds_in_the_alerts(tmp_path: Path, promtool_bin: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The alerts equal the TUI's as the user runs it: the [alerts] and marginal_k of their ptmon.toml."""
    config = tmp_path / "ptmon.toml"
    config.write_text("[eval]\nmarginal_k = 3\n[alerts]\nweight_sync_p99_warn_s = 12.5\nstaleness_critical = 7\n")
    out = tmp_path / "out"
    assert main(["assets", str(out), "--config", str(config)]) == 0
    alerts = (out / ALERTS_FILE).read_text()
    assert f"with the thresholds of {config}" in alerts
    assert "> 12.5 <= 120" in alerts and "> 7" in alerts and "> 4" not in alerts
    assert ">= 2)" in alerts  # K - 1 eval-version changes with K = 3
    assert alerts != render_assets()[ALERTS_FILE]
    # Everything else is the shipped text, and the result is valid to promtool.
    for name, text in render_assets().items():
        if name != ALERTS_FILE:
            assert (out / name).read_text() == text
    result = run(promtool_bin, "check", "rules", str(out / ALERTS_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    capsys.readouterr()
    config.write_text("[alerts]\nweight_sync_p99_warn_s = 'fast'\n")
    assert main(["assets", str(tmp_path / "bad"), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptmon assets: ") and "weight_sync_p99_warn_s" in err
    assert not (tmp_path / "bad").exists()


def test_ptmon_assets_into_an_unwritable_place_is_a_clear_error(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["assets", str(blocker / "sub")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ptmon assets: cannot write to ") and "a-file" in err and "Traceback" not in err


@pytest.mark.slow  # starts a process
def test_python_m_monitor_deploy_writes_them(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "ptmon.monitor.deploy", str(tmp_path)], capture_output=True,
                            text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / RULES_FILE).read_text() == render_assets()[RULES_FILE]


def test_scrape_config_never_sets_a_target_label_that_clashes() -> None:
    text = render_assets()[PROMETHEUS_CONFIG]
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "file_sd_configs" in body and f"'{TARGETS_DIR}/*.json'" in body
    assert f"- '{RULES_FILE}'" in body and f"- '{ALERTS_FILE}'" in body
    for label in ("role", "run", "env", "model", "algorithm"):
        assert f" {label}:" not in body


@pytest.mark.prometheus
def test_promtool_checks_the_scrape_config_with_a_demo_targets_file(tmp_path: Path, promtool_bin: str) -> None:
    assets = copy_assets(tmp_path)
    write_sd_file(assets / TARGETS_DIR / "ptmon.demo.json",
                  [Endpoint("trainer", "trainer", 9001), Endpoint("rollout-0", "rollout", 9002)])
    result = run(promtool_bin, "check", "config", str(assets / PROMETHEUS_CONFIG), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 2 rule files found" in result.stdout
    assert "targets/*.json" not in result.stdout + result.stderr  # found relative to the config, no warning
    groups = json.loads((assets / TARGETS_DIR / "ptmon.demo.json").read_text())
    assert groups[0]["labels"] == {"job": "posttrain-trainer", "ptmon_name": "trainer"}


def _uncommented_jobs(text: str) -> str:
    """The commented example jobs of a shipped scrape config, uncommented (the lines from ``# - job_name:``
    up to the next comment that is not YAML), so a test can check them as a user would use them."""
    out: list[str] = []
    taking = False
    for line in text.splitlines():
        body = line.removeprefix("# ")
        if body == line:  # not a comment
            taking = False
        elif body.startswith("- job_name:"):
            taking = True
        elif taking and not body.startswith("  "):
            taking = False
        if taking:
            out.append(body)
    return "\n".join(out) + "\n"


def test_both_scrape_configs_hold_the_same_jobs_and_only_prometheus_has_its_own_fields() -> None:
    assets = render_assets()
    prometheus, vm = assets[PROMETHEUS_CONFIG], assets[VM_CONFIG]
    assert "rule_files:" in prometheus and "evaluation_interval:" in prometheus and "refresh_interval:" in prometheus
    for field in ("rule_files", "evaluation_interval", "refresh_interval"):  # VictoriaMetrics refuses these
        assert f"{field}:" not in "\n".join(line for line in vm.splitlines() if not line.startswith("#"))
    assert _uncommented_jobs(prometheus) == _uncommented_jobs(vm)
    assert "-promscrape.fileSDCheckInterval=30s" in vm and f"-rule={RULES_FILE} -rule={ALERTS_FILE}" in vm
    assert "-datasource.url='http://VM:8428/?nocache=1'" in vm  # else every rule is evaluated 30 s late


def test_the_commented_pushgateway_job_honors_the_pushed_labels() -> None:
    jobs = _uncommented_jobs(render_assets()[PROMETHEUS_CONFIG])
    gateway = jobs[jobs.index("- job_name: 'pushgateway'"):]
    assert "  honor_labels: true\n" in gateway and "pushgateway:9091" in gateway


@pytest.mark.prometheus
def test_promtool_accepts_the_commented_jobs_uncommented(tmp_path: Path, promtool_bin: str) -> None:
    assets = copy_assets(tmp_path)
    config = assets / PROMETHEUS_CONFIG
    text = config.read_text()
    jobs = _uncommented_jobs(text)
    config.write_text(text.replace("scrape_configs:\n", "scrape_configs:\n" + jobs, 1))
    result = run(promtool_bin, "check", "config", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # starts victoria-metrics
@pytest.mark.parametrize("with_jobs", [False, True], ids=["as shipped", "commented jobs uncommented"])
def test_victoria_metrics_accepts_its_scrape_config(tmp_path: Path, victoria_metrics_bin: str,
                                                    with_jobs: bool) -> None:
    assets = copy_assets(tmp_path)
    config = assets / VM_CONFIG
    if with_jobs:
        text = config.read_text()
        config.write_text(text.replace("scrape_configs:\n", "scrape_configs:\n" + _uncommented_jobs(text), 1))
    result = run(victoria_metrics_bin, f"-promscrape.config={config}", "-promscrape.config.dryRun", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # The Prometheus variant is refused (why there are two): its rule and refresh fields.
    refused = run(victoria_metrics_bin, f"-promscrape.config={assets / PROMETHEUS_CONFIG}", "-promscrape.config.dryRun",
                  cwd=tmp_path)
    assert refused.returncode != 0 and "rule_files" in refused.stdout + refused.stderr
