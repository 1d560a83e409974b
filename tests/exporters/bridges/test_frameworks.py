"""Each framework's per-step dicts, exactly as its source emits them, through a real Colocated registry
served over loopback into the monitor's Dashboard: every mapped quantity lands; ``auto`` picks each."""

from __future__ import annotations

import pytest

from ptmon.exporters.bridges import detect
from ptmon.exporters.schema import EVAL_SCORE, EXPORTER_ERRORS, SAMPLE_STALENESS, TRAINER_DROPPED
from tests.exporters.bridges import samples
from tests.exporters.bridges.helpers import TARGET, bridge_dashboard, last_value, window_s
from tests.exporters.bridges.samples import SAMPLES, SCALARS, STEP_S, STEPS, Sample

NAMES = sorted(SAMPLES)
WINDOW = window_s(STEPS, STEP_S)


@pytest.mark.parametrize("name", NAMES)
async def test_every_mapped_quantity_reaches_the_dashboard(name: str) -> None:
    sample = SAMPLES[name]
    d, feed, bridge = await bridge_dashboard(sample.framework, sample.dicts, steps=STEPS, step_s=STEP_S,
                                             rollouts_per_step=sample.rollouts_per_step)
    assert bridge.framework == sample.framework
    # trainer: one step per step number, however many dicts it came in; the framework's own step time
    assert d.steps_per_s == pytest.approx(STEPS / WINDOW)
    assert d.step_seconds == pytest.approx(sample.step_seconds)
    # (a framework that logs no token count reads unknown, not 0: the counter exists from the start, never moved)
    assert d.trainer_tokens_per_s == (pytest.approx(STEPS * samples.TOKENS / WINDOW) if sample.trainer_tokens else None)
    for scalar, value in SCALARS.items():
        assert getattr(d, scalar) == (pytest.approx(value) if scalar in sample.scalars else None), scalar
    # weight sync: every one, the last one's time, the step published as the policy version
    if sample.sync:
        assert d.weight_sync_count == STEPS
        assert d.weight_sync_last_s == pytest.approx(samples.SYNC)
        assert d.policy_version == STEPS
    else:
        assert d.weight_sync_count in (None, 0) and d.weight_sync_last_s is None
    # ptmon's own version difference, over worker rows: the rollouts load each synced version
    assert d.staleness_max == (0 if sample.rollouts else None)
    # rollouts: count, tokens and exact mean reward, on the loop's worker row
    rows = {w.name: w for w in d.workers}
    if sample.rollouts:
        assert d.rollout_rate_per_s == pytest.approx(STEPS * samples.ROLLOUTS / WINDOW)
        row = rows[TARGET]
        assert row.mean_reward == pytest.approx(samples.REWARD)
        expected_tokens = STEPS * samples.ROLLOUTS * samples.ROLLOUT_TOKENS / WINDOW if sample.rollout_tokens else 0.0
        assert row.tokens_per_s == pytest.approx(expected_tokens)
    else:  # no rollouts logged: no worker row (not one reading 0 rollouts/s)
        assert TARGET not in rows
    # evals: each score on the curve, the step as its policy version
    if sample.benchmarks:
        assert d.benchmark in sample.benchmarks
        assert [e.policy_version for e in d.eval_curve] == [2, 4]
        assert [e.score for e in d.eval_curve] == pytest.approx([0.4, 0.6])
        for benchmark in sample.benchmarks:
            assert last_value(feed, EVAL_SCORE.name, benchmark=benchmark) == pytest.approx(0.6)
    else:
        assert d.eval_curve == ()
    # the framework's own staleness, labelled with its name; stale drops
    for stat in ("mean", "max"):
        expected = sample.staleness.get(stat)
        got = last_value(feed, SAMPLE_STALENESS.name, stat=stat, source=sample.framework)
        assert got == (pytest.approx(expected) if expected is not None else None), stat
    dropped = last_value(feed, TRAINER_DROPPED.name, reason="stale")
    assert dropped == sample.dropped_stale
    assert last_value(feed, EXPORTER_ERRORS.name, call="bridge_log") == 0


@pytest.mark.parametrize("name", NAMES)
def test_auto_picks_each_framework_from_its_first_step(name: str) -> None:
    sample: Sample = SAMPLES[name]
    decided = {detect(metrics.keys()) for metrics, _ in sample.dicts(2)} - {None}
    assert decided == {sample.framework}


@pytest.mark.parametrize("name", NAMES)
async def test_auto_reads_each_run_as_the_named_framework_does(name: str) -> None:
    sample = SAMPLES[name]
    named, _, _ = await bridge_dashboard(sample.framework, sample.dicts, rollouts_per_step=sample.rollouts_per_step)
    auto, _, bridge = await bridge_dashboard("auto", sample.dicts, rollouts_per_step=sample.rollouts_per_step)
    assert bridge.framework == sample.framework
    # (not the rollout rate: until a dict names the framework, auto cannot know the rollout series exist, so
    # they start with the first step's rollouts instead of at 0, as a series appearing mid-window does)
    fields = ("steps_per_s", "step_seconds", "trainer_tokens_per_s", "weight_sync_count", "loss", "score",
              "policy_version")
    assert {f: getattr(auto, f) for f in fields} == {f: getattr(named, f) for f in fields}
