"""Issue 14, a shared Pushgateway as teams run it: real gateway, real Prometheus, ptmon on both.

One run (``r1``) serves a trainer exporter and pushes six evals as six
groups, a fresh ``EvalExporter`` per checkpoint (the usual batch-eval
pattern), with the grouping key the README recommends ({run, checkpoint});
Prometheus scrapes the trainer and the gateway (``honor_labels: true``, as
the shipped config's commented job) and loads the shipped rules.

- ptmon scraping the trainer and the gateway directly, and ``ptmon snapshot
  --prometheus --run r1``, both show exactly the six evals, a positive
  intelligence per dollar on the rising score, no eval_regression, and the
  last push's time.
- A second run pushing six falling scores to the same gateway changes
  nothing in r1's snapshot (its curve, its eval spend, no alert); every
  shipped rule stays healthy with all twelve groups on the gateway.
- Killing the gateway marks r1's eval target down through Prometheus within
  two scrape intervals.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ptmon.exporters import EvalExporter, TrainerExporter, serve
from ptmon.monitor.deploy import ASSETS_DIR
from ptmon.monitor.deploy.files import ALERTS_FILE, RULES_FILE
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from tests.conftest import PrometheusServer, PushgatewayServer
from tests.test_prometheus_path import finish, snapshot, stop_process

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

SCRAPE_S = 1.0  # Prometheus's scrape and rule interval here
PUSH_EVERY_S = 0.5
R1_SCORES = (0.40, 0.42, 0.45, 0.47, 0.50, 0.52)
R2_SCORES = (0.90, 0.80, 0.70, 0.60, 0.50, 0.40)  # mixed into r1's curve, a regression and a negative slope


def push_evals(gateway: PushgatewayServer, run: str, scores: tuple[float, ...]) -> None:
    """One fresh EvalExporter per checkpoint, each pushed as its own group, PUSH_EVERY_S apart."""
    for i, score in enumerate(scores):
        evals = EvalExporter(run=run, model="m", algorithm="grpo", gpus=1, gpu_hour_price=3.0)
        evals.record_eval(benchmark="gsm8k", score=score, policy_version=10 * (i + 1), samples=1319)
        assert evals.push(gateway=gateway.address, job="eval", grouping_key={"run": run, "checkpoint": f"step-{i}"})
        time.sleep(PUSH_EVERY_S)


@pytest.fixture
def trainer() -> Iterator[str]:
    """Run r1's trainer exporter, served on loopback: ``host:port``."""
    exporter = TrainerExporter(run="r1", model="m", algorithm="grpo", gpus=8, gpu_hour_price=3.0)
    server = serve(exporter.registry)
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        server.close()


def prometheus_config(path: Path, trainer: str, gateway: PushgatewayServer) -> Path:
    """The trainer and the gateway (honor_labels, as the shipped commented job), and the shipped rules."""
    rules = []
    for name in (RULES_FILE, ALERTS_FILE):
        (path.parent / name).write_bytes((ASSETS_DIR / name).read_bytes())
        rules.append(name)
    interval = f"{int(SCRAPE_S * 1000)}ms"
    path.write_text(json.dumps({
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "rule_files": rules,
        "scrape_configs": [
            {"job_name": "posttrain-trainer",
             "static_configs": [{"targets": [trainer], "labels": {"ptmon_name": "trainer"}}]},
            {"job_name": "pushgateway", "honor_labels": True, "static_configs": [{"targets": [gateway.address]}]},
        ]}))
    return path


def evals_of(result: dict[str, Any]) -> list[tuple[float, float]]:
    return [(p["score"], round(p["timestamp"], 3)) for p in result["eval_curve"]]


def alert_names(result: dict[str, Any]) -> set[str]:
    return {a["name"] for a in result["alerts"]}


def rule_problems(prom: PrometheusServer) -> list[str]:
    return [f"{g['name']}/{r['name']}: {r['health']} {r.get('lastError', '')}"
            for g in prom.api("rules")["groups"] for r in g["rules"] if r["health"] != "ok"]


async def seconds_until_down(settings: Settings, name: str, kill: Callable[[], None], timeout: float) -> float:
    """From ``kill()`` to the Prometheus source saying target ``name`` is down."""
    feed = LiveFeed(settings)
    await feed.start()
    try:
        deadline = time.monotonic() + 10.0
        while not any(h.name == name and h.up for h in (await feed.dashboard(window_s=60.0)).targets):
            assert time.monotonic() < deadline, "the eval target never showed up"
            await asyncio.sleep(0.1)
        killed = time.monotonic()
        kill()
        while time.monotonic() - killed < timeout:
            d = await feed.dashboard(window_s=60.0)
            if any(h.name == name and h.up is False for h in d.targets):
                return time.monotonic() - killed
            await asyncio.sleep(0.1)
        return float("inf")
    finally:
        await feed.aclose()


def test_a_shared_pushgateway_keeps_evals_runs_and_health_apart(
        pushgateway_server: Callable[[], PushgatewayServer],
        prometheus_on_config: Callable[[Path], PrometheusServer], trainer: str, tmp_path: Path) -> None:
    gateway = pushgateway_server()
    prom = prometheus_on_config(prometheus_config(tmp_path / "prometheus.yml", trainer, gateway))
    prom.wait_for("up", lambda r: len(r) == 2 and all(s["value"][1] == "1" for s in r), timeout=30.0)
    over = len(R1_SCORES) * PUSH_EVERY_S + 4 * SCRAPE_S
    direct: subprocess.Popen[str] | None = None
    through: subprocess.Popen[str] | None = None
    try:
        # Both snapshots run while the six checkpoints are pushed, so spend is known at every push.
        direct = snapshot(trainer, gateway.address, "--over", f"{over:g}", "--interval", "0.5")
        through = snapshot("--prometheus", prom.url, "--run", "r1", "--over", f"{over:g}", "--interval", "0.5")
        push_evals(gateway, "r1", R1_SCORES)
        by_direct, by_prom = finish(direct, timeout=over + 60), finish(through, timeout=over + 60)

        push_evals(gateway, "r2", R2_SCORES)  # a second run on the same gateway
        time.sleep(2 * SCRAPE_S)
        after = finish(snapshot("--prometheus", prom.url, "--run", "r1", "--over", "2", "--interval", "0.5"),
                       timeout=60)
        groups = gateway.groups()
        problems = rule_problems(prom)

        down_after = asyncio.run(seconds_until_down(
            Settings(prometheus=Target(name="prometheus", url=prom.url), run="r1", interval_s=0.5),
            "eval", gateway.kill, timeout=4 * SCRAPE_S))
    finally:
        stop_process(direct)
        stop_process(through)

    for result in (by_direct, by_prom):
        curve = evals_of(result)
        assert [score for score, _ in curve] == list(R1_SCORES), result["eval_curve"]
        assert [p["pushed"] for p in result["eval_curve"]] == [True] * len(R1_SCORES)
        times = [t for _, t in curve]
        assert times == sorted(times) and times[-1] - times[0] >= (len(R1_SCORES) - 1.5) * PUSH_EVERY_S
        assert result["ipd_points_per_kilodollar"] is not None and result["ipd_points_per_kilodollar"] > 0
        assert result["marginal_ipd_points_per_kilodollar"] is not None
        assert result["marginal_ipd_points_per_kilodollar"] > 0
        assert "eval_regression" not in alert_names(result) and "marginal_ipd" not in alert_names(result)
        assert result["eval_pushed_at"] == pytest.approx(times[-1], abs=1e-3)
    assert evals_of(by_direct) == evals_of(by_prom)  # the push times, whichever way they were read

    # The second run's six groups are on the gateway beside r1's, and r1's view is as it was.
    assert len(groups) == len(R1_SCORES) + len(R2_SCORES)
    assert evals_of(after) == evals_of(by_prom)
    assert dict(after["spend_by_role"]).get("eval") == pytest.approx(dict(by_prom["spend_by_role"]).get("eval"))
    assert after["ipd_points_per_kilodollar"] > 0 and not alert_names(after) & {"eval_regression", "marginal_ipd"}
    assert problems == []

    assert down_after <= 2 * SCRAPE_S, down_after
    print(f"\npushgateway: {len(groups)} groups; r1's evals direct and through Prometheus "
          f"{[s for s, _ in evals_of(by_direct)]}; IPD direct {by_direct['ipd_points_per_kilodollar']:.3g}, "
          f"through Prometheus {by_prom['ipd_points_per_kilodollar']:.3g} points/$1k; eval target down "
          f"{down_after:.2f} s after the gateway was killed")
