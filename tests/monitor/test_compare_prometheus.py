"""``ptmon compare --prometheus URL --run a --run b``: two runs on one real Prometheus, numbers by hand.

Each run is one eval job (its run info says run a or b) holding 10 GPUs at $360/GPU-hour, i.e. $1 a
second of its injected clock, scraped by the same Prometheus in the same job. Each step moves a run's
clock on (its spend), waits until Prometheus has scraped that spend, and only then records the eval, so
the scrape that first shows an eval shows its spend too:

run a: evals at $0, 100, 200: 0.40 0.50 0.55, and spent $300 at the end
run b: evals at $0, 50, 150, 250: 0.40 0.42 0.44 0.46, and spent $250 at the end

S* = min(300, 250) = $250.
a at $250: score 0.55 (the $200 eval); IPD (0.55 - 0.40) / 250 x 1000 = 0.6; marginal: slope of
  (0, 100, 200; .40 .50 .55): Σ dx dy / Σ dx² = (100 x 0.0833 + 100 x 0.0667) / 20000 = 15 / 20000
  = 0.00075 per $ = 0.75 per $1k.
b at $250: score 0.46; IPD 0.06 / 250 x 1000 = 0.24; marginal: x̄ 112.5, ȳ 0.43: Σ dx dy = 8.5,
  Σ dx² = 36875: 0.000230508 per $ = 0.2305 per $1k.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from ptmon.exporters import schema
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.compare_prometheus import reached_at, summarize_prometheus
from ptmon.monitor.config import prometheus_from_url
from ptmon.monitor.settings import Settings
from tests.support.clock import FakeClock

RUNS = {"a": ([(0, 0.40), (100, 0.50), (200, 0.55)], 300),
        "b": ([(0, 0.40), (50, 0.42), (150, 0.44), (250, 0.46)], 250)}


@pytest.fixture
def two_runs(prometheus_server: Callable[..., Any]) -> Any:
    clocks = {run: FakeClock(0.0) for run in RUNS}
    exporters = {run: EvalExporter(run=run, model="m", algorithm="grpo", gpus=10, gpu_hour_price=360.0,
                                   clock=clocks[run]) for run in RUNS}
    servers = {run: serve(e.registry) for run, e in exporters.items()}
    try:
        prom = prometheus_server({"eval": [s.url for s in servers.values()]}, scrape_interval=0.25)
        instance = {run: s.url.split("/")[2] for run, s in servers.items()}

        def spent(run: str, dollars: float) -> None:
            clocks[run].now = dollars
            prom.wait_for(f'{schema.GPU_SECONDS.name}{{instance="{instance[run]}"}} == {10 * dollars:g}')

        for run, (evals, final) in RUNS.items():
            for dollars, score in evals:
                spent(run, dollars)
                exporters[run].record_eval(benchmark="gsm8k", score=score, samples=400)
                prom.wait_for(f'{schema.EVAL_SCORE.name}{{instance="{instance[run]}"}} == {score:g}')
            spent(run, final)
        yield prom
    finally:
        for s in servers.values():
            s.close()


def test_runs_on_one_prometheus_at_equal_spend_the_hand_computed_numbers(two_runs: Any) -> None:
    settings = Settings(prometheus=prometheus_from_url(two_runs.url))
    spend, curves, rows = summarize_prometheus(settings, ["a", "b"])
    assert spend == pytest.approx(250.0)
    # Each run's whole eval curve (from its first eval), placed at the spend it was recorded at.
    assert [[(p.spend_dollars, p.score) for p in c.curve] for c in curves] == [
        [pytest.approx((0.0, 0.40)), pytest.approx((100.0, 0.50)), pytest.approx((200.0, 0.55))],
        [pytest.approx((0.0, 0.40)), pytest.approx((50.0, 0.42)), pytest.approx((150.0, 0.44)),
         pytest.approx((250.0, 0.46))]]
    a, b = rows
    assert (a.name, b.name) == ("a", "b")
    assert (a.spend_dollars, b.spend_dollars) == (pytest.approx(300.0), pytest.approx(250.0))
    assert (a.score, b.score) == (0.55, 0.46)
    assert a.ipd_points_per_kilodollar == pytest.approx(0.6)
    assert b.ipd_points_per_kilodollar == pytest.approx(0.24)
    assert a.marginal_ipd_points_per_kilodollar == pytest.approx(0.75)
    assert b.marginal_ipd_points_per_kilodollar == pytest.approx(8.5 / 36875 * 1000)
    # the moment each reached $250: a Dashboard there (b at its last scrape's spend, a before its end)
    assert a.at is not None and b.at is not None


def test_the_command_and_its_errors(two_runs: Any) -> None:
    out = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", "--prometheus", two_runs.url,
                          "--run", "a", "--run", "b", "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["equal_spend_dollars"] == pytest.approx(250.0)
    assert [r["ipd_points_per_kilodollar"] for r in doc["runs"]] == [pytest.approx(0.6), pytest.approx(0.24)]
    table = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", "--prometheus", two_runs.url,
                            "--run", "a", "--run", "b"], capture_output=True, text=True, timeout=60,
                           env={"COLUMNS": "160", "PATH": ""})
    assert table.returncode == 0 and "at equal spend: $250" in table.stdout, table.stderr
    missing = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", "--prometheus", two_runs.url,
                              "--run", "a", "--run", "nope"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "run 'nope'" in missing.stderr and "no target of run" in missing.stderr
    one = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", "--prometheus", two_runs.url,
                          "--run", "a"], capture_output=True, text=True, timeout=60)
    assert one.returncode == 2 and "at least two different runs" in one.stderr


def test_reached_at_bisects_a_growing_spend() -> None:
    def spend(t: float) -> float | None:
        return None if t < 10 else (t - 10) * 2.0  # $2 a second from t = 10

    assert reached_at(spend, 0.0, 100.0, 50.0, tolerance=0.01) == pytest.approx(35.0, abs=0.01)
    assert reached_at(spend, 0.0, 100.0, 500.0, tolerance=0.01) is None  # never that much
    assert reached_at(spend, 20.0, 100.0, 10.0, tolerance=0.01) == 20.0  # already there at the start
