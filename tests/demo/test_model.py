"""The demo's pure models: deterministic, realistic magnitudes, and the shapes each scenario promises."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from ptmon.demo import model
from ptmon.demo.model import ENVS, RunSpec
from ptmon.demo.scenarios import SCENARIOS

SPEC = RunSpec()
HEALTHY, SLOW_SYNC, STRAGGLER, PLATEAU = (SCENARIOS[n] for n in ("healthy", "slow-sync", "straggler", "plateau"))


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=False)) / sum((x - mx) ** 2 for x in xs)


def _evals(scenario, seed: int, n: int = 30) -> tuple[list[float], list[float]]:
    spends = [SPEC.useful_spend(SPEC.eval_every * i) for i in range(n)]
    return spends, [model.eval_score(seed, i, SPEC, scenario, x) for i, x in enumerate(spends)]


def test_same_seed_same_run_other_seed_other_run() -> None:
    def draw(seed: int) -> list[float]:
        rng = model.seeded_rng(seed, "trainer")
        return [model.sync_seconds(rng, SPEC, HEALTHY, 0.0) for _ in range(5)] + _evals(HEALTHY, seed, 5)[1]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_fleet_costs_what_its_gpus_cost() -> None:
    assert SPEC.fleet_gpus == 8 + 4 * 2 + 1
    assert SPEC.dollars_per_second == pytest.approx(17 * 3.0 / 3600)
    assert SPEC.model_bytes == 16e9  # 8B parameters in bf16


def test_sync_latency_is_bytes_over_bandwidth_with_jitter_and_rare_slow_syncs() -> None:
    rng = model.seeded_rng(0, "sync")
    samples = [model.sync_seconds(rng, SPEC, HEALTHY, 0.0) for _ in range(2000)]
    assert statistics.median(samples) == pytest.approx(16e9 / 10e9 + 0.3, rel=0.05)
    slow = sum(s > 3 * 1.9 for s in samples) / len(samples)
    assert 0.02 < slow < 0.08  # about slow_sync_p = 5%


def test_slow_sync_doubles_then_caps() -> None:
    assert model.sync_slowdown(HEALTHY, 10_000.0) == 1.0
    assert model.sync_slowdown(SLOW_SYNC, 0.0) == 1.0
    assert model.sync_slowdown(SLOW_SYNC, 300.0) == pytest.approx(2.0)
    assert model.sync_slowdown(SLOW_SYNC, 1200.0) == pytest.approx(16.0)
    assert model.sync_slowdown(SLOW_SYNC, 1e6) == SLOW_SYNC.sync_slowdown_max


def test_straggler_slows_only_its_worker_and_only_later() -> None:
    i = STRAGGLER.straggler_index
    assert model.worker_speed(STRAGGLER, i, STRAGGLER.straggler_after_s - 1) == 1.0
    assert model.worker_speed(STRAGGLER, i, STRAGGLER.straggler_after_s) == STRAGGLER.straggler_factor
    assert model.worker_speed(STRAGGLER, i + 1, 1e6) == 1.0
    rng = model.seeded_rng(0, "pickup")
    assert model.pickup_delay(rng, SPEC, 0.03) > SPEC.pickup_s[1]  # a slow worker adopts new weights late


def test_rollouts_take_longer_on_a_slow_worker_and_truncate_at_the_cap() -> None:
    env = ENVS[0]
    fast = model.sample_rollout(model.seeded_rng(1, "r"), env, SPEC, version=0)
    slow = model.sample_rollout(model.seeded_rng(1, "r"), env, SPEC, version=0, speed=0.1)
    assert slow.tokens == fast.tokens and slow.seconds > 5 * fast.seconds
    short_env = replace(env, max_tokens=32)
    outcomes = {model.sample_rollout(model.seeded_rng(s, "r"), short_env, SPEC, version=0).outcome for s in range(50)}
    assert "truncated" in outcomes


def test_reward_improves_with_the_policy_version() -> None:
    for env in ENVS:
        assert model.reward_mean(env, 0) < model.reward_mean(env, 10) < model.reward_mean(env, 100) <= 1.0

    def mean_reward(version: int) -> float:
        rng = model.seeded_rng(3, "reward")
        rewards = [model.sample_rollout(rng, ENVS[0], SPEC, version=version).reward for _ in range(3000)]
        return statistics.fmean(r for r in rewards if r is not None)

    assert mean_reward(60) > mean_reward(0) + 0.1


def test_eval_noise_shrinks_with_the_sample_count() -> None:
    def spread(samples: int) -> float:
        spec = replace(SPEC, eval_samples=samples)
        return statistics.pstdev(model.eval_score(s, 0, spec, HEALTHY, 50.0) for s in range(300))

    small, large = spread(200), spread(5000)
    assert large < small / 3  # 1/sqrt(n): sqrt(25) = 5, with sampling slack


def test_healthy_eval_climbs_with_positive_marginal_slope() -> None:
    for seed in range(3):
        spends, scores = _evals(HEALTHY, seed)
        assert scores[-1] > scores[0] + 0.05
        slopes = [_slope(spends[i - 5:i], scores[i - 5:i]) for i in range(5, len(spends) + 1)]
        assert all(s > 0 for s in slopes), (seed, slopes)


def test_plateau_marginal_slope_falls_to_zero_or_below() -> None:
    for seed in range(3):
        spends, scores = _evals(PLATEAU, seed)
        knee = next(i for i, x in enumerate(spends) if x > PLATEAU.plateau_spend)
        # ...until the slide reaches its floor, after which the curve is flat and the slope is noise.
        floor = next(i for i, x in enumerate(spends) if model.score_mean(SPEC, PLATEAU, x) <= PLATEAU.plateau_floor)
        late = [_slope(spends[i - 5:i], scores[i - 5:i]) for i in range(knee + 5, floor + 1)]
        assert len(late) >= 5 and all(s <= 0 for s in late), (seed, late)


def test_plateau_collapses_entropy() -> None:
    rng = model.seeded_rng(0, "s")
    assert (model.trainer_scalars(rng, 100, SPEC, PLATEAU).entropy
            < model.trainer_scalars(rng, 100, SPEC, HEALTHY).entropy / 2)
