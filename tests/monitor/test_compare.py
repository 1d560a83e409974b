"""``ptmon compare`` on two recorded runs, healthy and plateau, with the numbers worked out by hand.

Each run: a trainer on 10 (healthy) or 20 (plateau) GPUs at $3.60/GPU-hour, i.e. $0.01 or $0.02 a
second, scraped every 10 s with one injected clock, so a round costs exactly $0.10 or $0.20; a worker
with no GPUs doing 3 or 5 rollouts a round; an eval job with no GPUs.

healthy: 45 rounds (spent $4.40 at the last), evals at rounds 0, 10, 20, 30, 40 ($0, 1, 2, 3, 4):
         0.30 0.40 0.46 0.50 0.52
plateau: 30 rounds (spent $5.80), evals at rounds 0, 5, 10, 15, 20, 25 ($0, 1, 2, 3, 4, 5):
         0.30 0.36 0.38 0.38 0.37 0.36

Equal spend S* = min(4.40, 5.80) = $4.40 (plateau reaches it at round 22).
healthy at $4.40: score 0.52; IPD (0.52 - 0.30) / 4.40 * 1000 = 50; marginal over the last 5 evals: the
  slope of (0..4 $, .30 .40 .46 .50 .52) = 0.54 / 10 = 0.054 per $ = 54 per $1k.
plateau at $4.40: score 0.37 (the $4 eval; the $5 one comes later); IPD 0.07 / 4.40 * 1000 = 15.909...;
  marginal: slope of (0..4 $, .30 .36 .38 .38 .37) = 0.16 / 10 = 16 per $1k.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.compare import RunCurve, at_spend, equal_spend, summarize
from ptmon.monitor.dashboard import EvalPoint
from ptmon.monitor.recording.feed import recording_feed
from ptmon.monitor.settings import Settings, Target
from tests.monitor.helpers import T0, Clock


async def _record_run(path, *, name: str, gpus: int, rollouts: int, rounds: int, evals: dict[int, float]) -> None:
    clock = Clock(T0)
    ident: dict[str, Any] = dict(run=name, model="m", algorithm="grpo")
    trainer = TrainerExporter(**ident, gpus=gpus, gpu_hour_price=3.6, clock=clock, wall_clock=clock)
    worker = RolloutExporter(**ident, gpus=0, gpu_hour_price=3.6, clock=clock)
    ev = EvalExporter(**ident, gpus=0, gpu_hour_price=3.6, clock=clock)
    servers = [serve(e.registry) for e in (trainer, worker, ev)]
    settings = Settings(targets=tuple(Target(name=n, url=s.url) for n, s in zip(("trainer", "w", "eval"), servers,
                                                                                strict=True)),
                        interval_s=10.0, timeout_s=2.0, window_s=60.0)
    feed = recording_feed(settings, str(path), clock=clock)
    try:
        for i in range(rounds):
            clock.t = T0 + 10 * i
            with trainer.step():
                pass
            with trainer.weight_sync(version=i + 1, nbytes=1e9):
                pass
            for _ in range(rollouts):
                worker.record_rollout(env="math", tokens=100, reward=0.5, seconds=1.0, policy_version=i)
            if i in evals:
                ev.record_eval(benchmark="gsm8k", score=evals[i], policy_version=i, samples=500)
            await feed.collect_once()
            await feed.dashboard(window_s=60.0)
    finally:
        await feed.aclose()
        for s in servers:
            s.close()


HEALTHY = {0: 0.30, 10: 0.40, 20: 0.46, 30: 0.50, 40: 0.52}
PLATEAU = {0: 0.30, 5: 0.36, 10: 0.38, 15: 0.38, 20: 0.37, 25: 0.36}


@pytest.fixture
async def two_runs(tmp_path):
    a, b = tmp_path / "healthy.rec", tmp_path / "plateau.rec"
    await _record_run(a, name="healthy", gpus=10, rollouts=3, rounds=45, evals=HEALTHY)
    await _record_run(b, name="plateau", gpus=20, rollouts=5, rounds=30, evals=PLATEAU)
    return str(a), str(b)


def test_at_equal_spend_the_hand_computed_numbers(two_runs):
    spend, runs, rows = summarize(two_runs)
    assert spend == pytest.approx(4.40)
    assert [r.name for r in runs] == ["healthy", "plateau"]
    assert [p.spend_dollars for p in runs[0].curve] == pytest.approx([0.0, 1.0, 2.0, 3.0, 4.0])
    assert [p.spend_dollars for p in runs[1].curve] == pytest.approx([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    healthy, plateau = rows
    assert healthy.score == 0.52 and plateau.score == 0.37
    assert healthy.ipd_points_per_kilodollar == pytest.approx(50.0)
    assert plateau.ipd_points_per_kilodollar == pytest.approx(0.07 / 4.40 * 1000)
    assert healthy.marginal_ipd_points_per_kilodollar == pytest.approx(54.0)
    assert plateau.marginal_ipd_points_per_kilodollar == pytest.approx(16.0)
    # The Dashboards at the moment each reached $4.40: healthy at its last round, plateau at round 22.
    assert healthy.at == T0 + 440 and plateau.at == T0 + 220
    assert healthy.burn_dollars_per_hour == pytest.approx(36.0) and plateau.burn_dollars_per_hour == pytest.approx(72.0)
    assert healthy.rollout_rate_per_s == pytest.approx(0.3) and plateau.rollout_rate_per_s == pytest.approx(0.5)
    # $ per 1M rollout tokens: burn / (tokens per hour) * 1e6 = 36 / (30 tokens/s * 3600) * 1e6.
    assert healthy.dollars_per_million_rollout_tokens == pytest.approx(36.0 / (30 * 3600) * 1e6)
    assert healthy.weight_sync_p99_s is not None and healthy.weight_sync_p99_s <= 0.05  # instant syncs: first bucket


def test_the_rules_on_their_own():
    curve = tuple(EvalPoint(timestamp=float(i), spend_dollars=float(i), score=s) for i, s in enumerate((0.1, 0.2)))
    assert equal_spend([RunCurve("a", curve, 3.0), RunCurve("b", (), None)]) is None  # an unknown spend
    row = at_spend(RunCurve("a", curve, 3.0), 0.5)
    assert (row.score, row.ipd_points_per_kilodollar) == (0.1, None)  # one eval reached: no IPD yet
    row = at_spend(RunCurve("a", curve, 3.0, baseline_score=0.0), 2.0)
    assert row.ipd_points_per_kilodollar == pytest.approx(0.2 / 2.0 * 1000)


@pytest.mark.slow
def test_the_command(two_runs):
    proc = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", *two_runs, "--json"],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["equal_spend_dollars"] == pytest.approx(4.40)
    assert [(r["name"], r["score"]) for r in out["runs"]] == [("healthy", 0.52), ("plateau", 0.37)]
    table = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", *two_runs], capture_output=True,
                           timeout=120, env={"COLUMNS": "140", "PATH": ""})
    text = table.stdout.decode()
    assert table.returncode == 0 and "at equal spend: $4.40" in text and "healthy" in text and "plateau" in text
    assert "┊" in text  # the equal spend marked on the chart
    bad = subprocess.run([sys.executable, "-m", "ptmon.monitor", "compare", two_runs[0], "/nonexistent.rec"],
                         capture_output=True, timeout=60)
    assert bad.returncode == 2 and b"no such recording" in bad.stderr
