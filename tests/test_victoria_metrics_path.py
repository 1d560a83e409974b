"""Issue 14, VictoriaMetrics as a first-class engine: the shipped files over ``ptmon demo --headless``.

Debian's single-node VictoriaMetrics runs the shipped ``victoria-metrics.yml``
unchanged with nothing but its storage path and listen address (no
``-promscrape.config.strictParse=false``, no latency or cache flag: ptmon's
queries send ``nocache=1``); the demo's targets reach it through ``ptmon demo
--headless --sd-file``, as a user's would.

- ``ptmon snapshot --prometheus VM`` and a direct ``ptmon snapshot`` of the
  same demo over the same 20 s agree: rollouts/s within 5%, weight-sync p50
  within one histogram bucket, the same targets up.
- In the crash scenario, after three restarts of ``rollout-1``, the rollout
  spend read through VictoriaMetrics is within 2% of the one read through
  Prometheus scraping the same demo. VictoriaMetrics writes a staleness
  marker (NaN) into every series of a target whose scrape fails, and its raw
  answers carry them: before issue 14 the counter-reset index never saw a
  restart across one, and the spend fell further behind with each restart.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptmon.monitor.deploy import ASSETS_DIR
from ptmon.monitor.deploy.files import SCRAPE_INTERVAL, TARGETS_DIR, VM_CONFIG
from tests.conftest import PrometheusServer, VictoriaMetricsServer
from tests.test_prometheus_path import (
    Demo,
    direct_config,
    finish,
    same_targets_and_rate,
    snapshot,
    stop_process,
    sync_bucket,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

SPEED = 200.0  # as test_prometheus_path: ~4.6 weight syncs per real second, a steady rollout rate
WORKERS = 4
WINDOW_S = 20.0  # ~700 rollouts/s over 20 s: counting noise far under 5%; ~90 syncs for the p50
DIRECT_OVER_S = WINDOW_S + 8.0  # see test_prometheus_path: both windows full, no target's start inside
VM_OVER_S = 3.0
FIRST_SCRAPES_TIMEOUT_S = 30.0


def _up_names(server: PrometheusServer | VictoriaMetricsServer) -> set[str]:
    return {s["metric"].get("ptmon_name", "") for s in server.query("up == 1")}


def test_victoria_metrics_on_the_shipped_config_agrees_with_a_direct_scrape(
        victoria_metrics_on_config: Callable[..., VictoriaMetricsServer], tmp_path: Path) -> None:
    assert SCRAPE_INTERVAL == "5s"
    assets = tmp_path / "assets"
    assert subprocess.run([sys.executable, "-m", "ptmon.monitor", "assets", str(assets)], capture_output=True,
                          timeout=60).returncode == 0
    assert (assets / VM_CONFIG).read_bytes() == (ASSETS_DIR / VM_CONFIG).read_bytes()
    demo = Demo(assets / TARGETS_DIR / "ptmon.demo.json", tmp_path / "demo.log", speed=SPEED, workers=WORKERS)
    direct: subprocess.Popen[str] | None = None
    through: subprocess.Popen[str] | None = None
    try:
        demo.wait_ready()
        groups = demo.targets()
        names = {g["labels"]["ptmon_name"] for g in groups}
        config = direct_config(tmp_path / "ptmon.toml", groups)
        vm = victoria_metrics_on_config(assets / VM_CONFIG)  # storage path and listen address only
        vm.wait_for("up", lambda r: {s["metric"].get("ptmon_name") for s in r} == names,
                    timeout=FIRST_SCRAPES_TIMEOUT_S, nocache="1")
        direct = snapshot("--config", str(config), "--over", f"{DIRECT_OVER_S:g}", "--window", f"{WINDOW_S:g}")
        time.sleep(DIRECT_OVER_S - VM_OVER_S)
        through = snapshot("--prometheus", vm.url, "--over", f"{VM_OVER_S:g}", "--window", f"{WINDOW_S:g}")
        by_direct = finish(direct, timeout=DIRECT_OVER_S + 60)
        by_vm = finish(through, timeout=VM_OVER_S + 60)
        assert _up_names(vm) == names, vm.log_tail()
    finally:
        stop_process(direct)
        stop_process(through)
        orphans = demo.stop()
    assert orphans == []

    rate_direct, rate_vm, rate_diff = same_targets_and_rate(by_direct, by_vm, names, window_s=WINDOW_S)
    p50_direct, p50_vm = by_direct["weight_sync_p50_s"], by_vm["weight_sync_p50_s"]
    assert p50_direct is not None and p50_vm is not None
    assert abs(sync_bucket(p50_direct) - sync_bucket(p50_vm)) <= 1, (p50_direct, p50_vm)
    print(f"\nvictoria-metrics path: rollouts/s direct {rate_direct:.1f} vm {rate_vm:.1f} "
          f"({100 * rate_diff:.2f}% apart); weight-sync p50 direct {p50_direct:.2f} s vm {p50_vm:.2f} s; "
          f"targets up {len(names)}")


# --- the crash scenario: spend across restarts ------------------------------------------------------

CRASH_SPEED = 100.0  # rollout-1 lives 6 s and is down 1.8 s (10 and 3 simulated minutes)
# Each death is several failed scrapes (VictoriaMetrics writes a NaN into every series of the target), and
# the last scrape of each server before the demo stops is at most 0.25 s of spend (~$0.08 of ~$8) apart.
CRASH_INTERVAL = "250ms"
RESTARTS = 3
SPEND_TOLERANCE = 0.02


def _fast_config(text: str) -> str:
    """A shipped scrape config at the crash test's scrape interval."""
    return text.replace(f"'{SCRAPE_INTERVAL}'", f"'{CRASH_INTERVAL}'")


def _rollout_spend(result: dict[str, Any]) -> float:
    spend = dict(result["spend_by_role"]).get("rollout")
    assert spend, result["spend_by_role"]
    return float(spend)


def test_rollout_spend_through_victoria_metrics_survives_restarts(
        victoria_metrics_on_config: Callable[..., VictoriaMetricsServer],
        prometheus_on_config: Callable[[Path], PrometheusServer], tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / TARGETS_DIR).mkdir()
    for name in ("prometheus.yml", VM_CONFIG):
        (assets / name).write_text(_fast_config((ASSETS_DIR / name).read_text()))
    for name in ("ptmon.rules.yml", "ptmon.alerts.yml"):
        (assets / name).write_bytes((ASSETS_DIR / name).read_bytes())
    # Both servers run before the demo starts, so both see every life of rollout-1 (a life is 6 s):
    # Prometheus watches the targets file; VictoriaMetrics is told to re-read it every second.
    vm = victoria_metrics_on_config(assets / VM_CONFIG, flags=["-promscrape.fileSDCheckInterval=1s"])
    prom = prometheus_on_config(assets / "prometheus.yml")
    demo = Demo(assets / TARGETS_DIR / "ptmon.demo.json", tmp_path / "demo.log", scenario="crash",
                speed=CRASH_SPEED, workers=2)
    via_vm: subprocess.Popen[str] | None = None
    via_prom: subprocess.Popen[str] | None = None
    try:
        demo.wait_ready()
        # Three restarts: rollout-1's GPU-seconds counter dropped three times (seen by Prometheus).
        prom.wait_for(f'resets(posttrain_gpu_seconds_total{{ptmon_name="rollout-1"}}[10m]) >= {RESTARTS}',
                      timeout=90.0)
        # The demo stops, so both servers hold the same final counters (up to their last scrape's offset).
        assert demo.stop() == []
        via_vm = snapshot("--prometheus", vm.url, "--over", "3")
        via_prom = snapshot("--prometheus", prom.url, "--over", "3")
        by_vm, by_prom = finish(via_vm, timeout=60), finish(via_prom, timeout=60)
        # VictoriaMetrics's raw answer holds a staleness marker for each death (the case issue 14 fixed).
        raw = vm.api("query", query='posttrain_gpu_seconds_total{ptmon_name="rollout-1"}[10m]', nocache="1")
        markers = sum(v == "NaN" for series in raw["result"] for _, v in series["values"])
    finally:
        stop_process(via_vm)
        stop_process(via_prom)
        orphans = demo.stop()
    assert orphans == []
    spend_vm, spend_prom = _rollout_spend(by_vm), _rollout_spend(by_prom)
    diff = abs(spend_vm - spend_prom) / spend_prom
    print(f"\ncrash scenario after {RESTARTS} restarts: rollout spend via victoria-metrics ${spend_vm:.2f}, "
          f"via prometheus ${spend_prom:.2f} ({100 * diff:.2f}% apart); "
          f"staleness markers in VictoriaMetrics's raw answer: {markers}")
    assert markers >= RESTARTS
    assert diff <= SPEND_TOLERANCE, (spend_vm, spend_prom)
