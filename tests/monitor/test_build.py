"""build_dashboard over a hand-made store: every number against arithmetic done by hand.

The scenario: scrapes every 10 s from t=1000 to t=1300, window 300 s, so the
window (1000, 1300] holds the 30 points t=1010..1300. Counters are linear in
t with a large offset, so PromQL extrapolates by the full 10 s gap at the
start and rate() is exactly the slope (factor (290 + 10) / 290, divided by
300). Step-shaped counters (weight syncs) get the same factor: rate = raw
increase / 290.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from ptmon.exporters import schema
from ptmon.monitor.build import Baseline, EvalLog, build_dashboard, observe_evals
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.parse import Sample
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.store import Store

T0, NOW, WINDOW, DT = 1000.0, 1300.0, 300.0, 10.0
SYNC_TIMES = (1060.0, 1120.0, 1180.0, 1240.0, 1300.0)
SYNC_SECONDS = (1.0, 2.0, 3.0, 4.0, 5.0)
SYNC_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
EVALS = ((1000.0, 0.40, 5.0), (1100.0, 0.45, 7.0), (1200.0, 0.47, 9.0))  # (t, score, version)

Gen = Callable[[float], list[Sample]]


def S(name: str, value: float, **labels: str) -> Sample:
    return Sample(name, labels, float(value))


def histogram(spec: schema.MetricSpec, observations: list[float], *, buckets: tuple[float, ...] | None = None,
              **labels: str) -> list[Sample]:
    out = [S(spec.bucket, sum(1 for o in observations if o <= le), le=_le(le), **labels)
           for le in (spec.buckets if buckets is None else buckets)]
    out.append(S(spec.bucket, len(observations), le="+Inf", **labels))
    out.append(S(spec.count, len(observations), **labels))
    out.append(S(spec.sum, sum(observations), **labels))
    return out


def _le(x: float) -> str:
    return "+Inf" if x == math.inf else repr(float(x))


def trainer(t: float) -> list[Sample]:
    r = t - T0
    steps = 500 + 0.5 * r
    syncs = [0.3] * 20 + [d for ts, d in zip(SYNC_TIMES, SYNC_SECONDS, strict=False) if ts <= t]
    out = [
        S(schema.RUN_INFO.name, 1, run="run-1", model="qwen-7b", algorithm="grpo", role="trainer"),
        S(schema.TRAINER_STEPS.name, steps),
        S(schema.TRAINER_LAST_STEP_TIMESTAMP.name, t - 1),
        S(schema.POLICY_VERSION.name, 10),
        S(schema.LOSS.name, 0.25),
        S(schema.WEIGHT_SYNC_BYTES.name, 1e9 * len(syncs)),
        S(schema.WEIGHT_SYNC_FAILURES.name, 3 + (1 if t >= 1150 else 0)),
        S(schema.GPU_SECONDS.name, 8 * (r + 3600), role="trainer"),
        S(schema.GPU_HOUR_PRICE.name, 3.0, role="trainer"),
        S(schema.TRAINER_STEP_SECONDS.count, steps),
        S(schema.TRAINER_STEP_SECONDS.sum, 2.0 * steps),
    ]
    for le in schema.TRAINER_STEP_SECONDS.buckets:
        out.append(S(schema.TRAINER_STEP_SECONDS.bucket, steps if le >= 2.5 else 0, le=_le(le)))
    out.append(S(schema.TRAINER_STEP_SECONDS.bucket, steps, le="+Inf"))
    # The bounds the numbers below were worked out on (an exporter's own buckets, whatever the default).
    return out + histogram(schema.WEIGHT_SYNC_SECONDS, syncs, buckets=SYNC_BUCKETS)


def worker(ok_rate: float, err_rate: float, tok_rate: float, version: float) -> Gen:
    def gen(t: float) -> list[Sample]:
        r = t - T0
        ok = 100 + ok_rate * r
        err = 5 + err_rate * r
        out = [
            S(schema.RUN_INFO.name, 1, run="run-1", model="qwen-7b", algorithm="grpo", role="rollout"),
            S(schema.ROLLOUTS.name, ok, env="math", outcome="ok"),
            S(schema.ROLLOUT_TOKENS.name, 1e5 + tok_rate * r, env="math"),
            S(schema.ROLLOUT_POLICY_VERSION.name, version),
            S(schema.GPU_SECONDS.name, 4 * (r + 100), role="rollout"),
            S(schema.GPU_HOUR_PRICE.name, 2.0, role="rollout"),
            S(schema.ROLLOUT_REWARD.count, ok + err, env="math"),
            S(schema.ROLLOUT_REWARD.sum, 0.5 * (ok + err), env="math"),
        ]
        if err_rate:
            out.append(S(schema.ROLLOUTS.name, err, env="math", outcome="error"))
        return out
    return gen


def evaluator(t: float) -> list[Sample]:
    current = [e for e in EVALS if e[0] <= t][-1]
    return [
        S(schema.RUN_INFO.name, 1, run="run-1", model="qwen-7b", algorithm="grpo", role="eval"),
        S(schema.EVAL_SCORE.name, current[1], benchmark="gsm8k"),
        S(schema.EVAL_POLICY_VERSION.name, current[2], benchmark="gsm8k"),
        S(schema.EVAL_SAMPLES.name, 1319, benchmark="gsm8k"),
    ]


def dcgm(t: float) -> list[Sample]:
    return [
        S("DCGM_FI_DEV_GPU_UTIL", 80, gpu="0", UUID="GPU-a", Hostname="node-1"),
        S("DCGM_FI_DEV_GPU_UTIL", 60, gpu="1", UUID="GPU-b", Hostname="node-1"),
        S("DCGM_FI_DEV_POWER_USAGE", 300, gpu="0", UUID="GPU-a", Hostname="node-1"),
        S("DCGM_FI_DEV_POWER_USAGE", 250, gpu="1", UUID="GPU-b", Hostname="node-1"),
    ]


def vllm(t: float) -> list[Sample]:
    r = t - T0
    labels = {"model_name": "qwen-7b", "engine": "0"}
    return [
        Sample("vllm:generation_tokens_total", labels, 1e6 + 2000 * r),
        Sample("vllm:num_requests_running", labels, 8.0),
        Sample("vllm:num_requests_waiting", labels, 3.0),
        Sample("vllm:kv_cache_usage_perc", labels, 0.4),
    ]


SCENARIO: dict[str, Gen] = {
    "trainer": trainer,
    "w1": worker(2.0, 0.1, 1000.0, 9.0),
    "w2": worker(1.0, 0.0, 500.0, 7.0),
    "eval": evaluator,
    "dcgm": dcgm,
    "vllm": vllm,
}


def fill(store: Store, gens: dict[str, Gen], *, start: float = T0, end: float = NOW, dt: float = DT) -> Store:
    n = int(round((end - start) / dt))
    for i in range(n + 1):
        t = start + i * dt
        for name, gen in gens.items():
            store.ingest(name, t, gen(t))
    return store


def up(*names: str) -> tuple[TargetHealth, ...]:
    return tuple(TargetHealth(name=n, url=f"http://{n}/metrics", role=None, up=True) for n in names)


@pytest.fixture(scope="module")
def dash():
    store = fill(Store(), SCENARIO)
    return build_dashboard(store, up(*SCENARIO), Settings(), now=NOW, window_s=WINDOW)


# Spend of the scenario at t (seconds since T0): trainer 8 GPUs at $3 with 3600 s banked,
# two workers 4 GPUs each at $2 with 100 s banked.
def spend_at(r: float) -> float:
    return 8 * (r + 3600) * 3.0 / 3600 + 2 * 4 * (r + 100) * 2.0 / 3600


def test_identity_and_roles(dash) -> None:
    assert (dash.run, dash.model, dash.algorithm) == ("run-1", "qwen-7b", "grpo")
    roles = {t.name: t.role for t in dash.targets}
    assert roles == {"trainer": "trainer", "w1": "rollout", "w2": "rollout", "eval": "eval", "dcgm": "gpu",
                     "vllm": "engine"}
    assert dash.started_at == T0
    assert dash.uptime_s == 300.0


def created(gen: Gen, *stamps: tuple[schema.MetricSpec, float | Callable[[float], float]]) -> Gen:
    """``gen`` plus each spec's ``_created`` sample (a constant, or a function of the scrape time)."""
    def with_created(t: float) -> list[Sample]:
        return gen(t) + [S(spec.created, v(t) if callable(v) else v) for spec, v in stamps]
    return with_created


def test_uptime_counts_from_the_trainers_created_counters() -> None:
    # The trainer's counters were created at t=400 and 410 (it started 600 s before the monitor's first
    # scrape); a worker's at 300 (it started earlier still, but the run is the trainer's).
    gens = dict(SCENARIO, trainer=created(trainer, (schema.TRAINER_STEPS, 410.0),
                                          (schema.WEIGHT_SYNC_SECONDS, 400.0)),
                w1=created(SCENARIO["w1"], (schema.ROLLOUTS, 300.0)))
    d = build_dashboard(fill(Store(), gens), up(*gens), Settings(), now=NOW, window_s=WINDOW)
    assert d.started_at == 400.0
    assert d.uptime_s == NOW - 400.0


def test_uptime_without_a_trainer_stamp_uses_any_targets_then_the_first_data() -> None:
    gens = dict(SCENARIO, w1=created(SCENARIO["w1"], (schema.ROLLOUTS, 450.0), (schema.GPU_SECONDS, 350.0)),
                w2=created(SCENARIO["w2"], (schema.ROLLOUT_REWARD, 380.0)))
    d = build_dashboard(fill(Store(), gens), up(*gens), Settings(), now=NOW, window_s=WINDOW)
    assert d.started_at == 350.0
    d = build_dashboard(fill(Store(), SCENARIO), up(*SCENARIO), Settings(), now=NOW, window_s=WINDOW)
    assert d.started_at == T0  # no _created anywhere: the earliest data seen, as before


def test_a_restarted_trainer_keeps_the_first_start_and_bad_stamps_are_ignored() -> None:
    # Restarted at t=1150: its counters' _created jumps from 400 to 1149 in the same series.
    gens = dict(SCENARIO, trainer=created(trainer, (schema.TRAINER_STEPS, lambda t: 400.0 if t < 1150 else 1149.0)))
    d = build_dashboard(fill(Store(), gens), up(*gens), Settings(), now=NOW, window_s=WINDOW)
    assert d.started_at == 400.0
    # A stamp from the future (another clock), NaN or 0 is no start: the worker's 900 is used.
    for bad in (NOW + 5, math.nan, 0.0):
        gens = dict(SCENARIO, trainer=created(trainer, (schema.TRAINER_STEPS, bad)),
                    w1=created(SCENARIO["w1"], (schema.ROLLOUTS, 900.0)))
        d = build_dashboard(fill(Store(), gens), up(*gens), Settings(), now=NOW, window_s=WINDOW)
        assert d.started_at == 900.0, bad


def test_rollout_rates_total_and_per_worker(dash) -> None:
    assert dash.rollout_rate_per_s == pytest.approx(2.1 + 1.0)
    assert dash.rollout_tokens_per_s == pytest.approx(1500.0)
    assert dash.rollout_error_rate_per_s == pytest.approx(0.1)
    rows = {w.name: w for w in dash.workers}
    assert set(rows) == {"w1", "w2", "vllm"}
    assert rows["w1"].rollouts_per_s == pytest.approx(2.1)
    assert rows["w1"].tokens_per_s == pytest.approx(1000.0)
    assert rows["w1"].mean_reward == pytest.approx(0.5)
    assert rows["w2"].rollouts_per_s == pytest.approx(1.0)
    assert rows["vllm"].role == "engine"
    assert rows["vllm"].rollouts_per_s is None
    assert rows["vllm"].tokens_per_s == pytest.approx(2000.0)


def test_rollout_rate_series_and_ten_minute_median(dash) -> None:
    assert dash.rollout_rate_series, "a chart series over the window"
    assert all(v == pytest.approx(3.1) for _, v in dash.rollout_rate_series)
    assert all(T0 < t <= NOW for t, _ in dash.rollout_rate_series)
    assert dash.rollout_rate_median_10m == pytest.approx(3.1)


def test_staleness_and_worker_status(dash) -> None:
    assert dash.policy_version == 10
    rows = {w.name: w for w in dash.workers}
    assert rows["w1"].staleness == 1 and rows["w2"].staleness == 3
    assert dash.staleness_max == 3
    assert dash.staleness_mean == 2
    assert rows["w1"].status == "ok"
    assert rows["w2"].status == "stale"  # 3 versions behind > warn at 2


def test_weight_sync(dash) -> None:
    # Bucket increases in the window: <=1: 1, <=2: 2, <=5: 5, +Inf: 5 (one factor for all, it cancels).
    assert dash.weight_sync_p50_s == pytest.approx(2.5)  # rank 2.5: 0.5 of 3 into (2, 5]
    assert dash.weight_sync_p90_s == pytest.approx(4.5)
    assert dash.weight_sync_p99_s == pytest.approx(4.95)
    assert dash.weight_sync_count == 5
    assert dash.weight_sync_last_s == pytest.approx(5.0)
    assert dash.weight_sync_max_s == pytest.approx(5.0)
    assert [v for _, v in dash.weight_sync_series] == pytest.approx(list(SYNC_SECONDS))
    assert dash.sync_events == SYNC_TIMES
    assert dash.weight_sync_bytes_per_s == pytest.approx(5e9 / 290)  # raw 5e9 x (300/290) / 300
    assert dash.weight_sync_failures == 1


def test_trainer(dash) -> None:
    assert dash.steps_per_s == pytest.approx(0.5)
    assert dash.step_seconds == pytest.approx(2.0)
    assert dash.step_seconds_median == pytest.approx(1.75)  # all in (1, 2.5]: half way
    assert dash.seconds_since_last_step == pytest.approx(1.0)
    assert dash.loss == 0.25
    assert dash.kl is None  # never reported: unknown, not 0


def test_engines_and_gpus(dash) -> None:
    assert dash.engine_tokens_per_s == pytest.approx(2000.0)
    assert dash.engine_requests_running == 8
    assert dash.engine_queue_depth == 3
    assert dash.engine_kv_cache_usage == 0.4
    assert dash.gpu_util_percent == pytest.approx(70.0)
    assert dash.gpu_power_watts == pytest.approx(550.0)


def test_cost(dash) -> None:
    assert dash.spend_dollars == pytest.approx(spend_at(300))
    assert dict(dash.spend_by_role) == pytest.approx({"trainer": 8 * 3900 * 3 / 3600,
                                                      "rollout": 2 * 4 * 400 * 2 / 3600})
    assert dash.burn_dollars_per_hour == pytest.approx(8 * 3.0 + 2 * 4 * 2.0)  # 40 $/h
    assert dash.dollars_per_million_rollout_tokens == pytest.approx(40 / (1500 * 3600) * 1e6)


def test_intelligence_per_dollar(dash) -> None:
    assert dash.benchmark == "gsm8k"
    assert dash.score == 0.47
    assert dash.eval_samples == 1319
    assert [(p.timestamp, p.score, p.policy_version) for p in dash.eval_curve] == list(EVALS)
    assert [p.spend_dollars for p in dash.eval_curve] == pytest.approx([spend_at(0), spend_at(100), spend_at(200)])
    assert dash.baseline_score == 0.40
    assert dash.baseline_spend_dollars == pytest.approx(spend_at(0))
    # (0.47 - 0.40) / (spend now - spend at the baseline) x 1000
    assert dash.ipd_points_per_kilodollar == pytest.approx(0.07 / (spend_at(300) - spend_at(0)) * 1000)
    # Least squares on 3 equally spaced spends h apart: slope = (y3 - y1) / (2h)
    h = spend_at(100) - spend_at(0)
    slope = (0.47 - 0.40) / (2 * h)
    assert dash.marginal_ipd_points_per_kilodollar == pytest.approx(slope * 1000)
    # "$ per next point" prices the default point, 0.01 of score (a percentage point of a [0, 1] benchmark)
    assert dash.eval_point == 0.01
    assert dash.dollars_per_next_point == pytest.approx(0.01 / slope)
    assert dash.next_point_never is False


def test_intelligence_per_dollar_uncertainty() -> None:
    # Every eval has 1319 samples: a score p has the binomial error sqrt(p (1 - p) / 1319).
    store = fill(Store(), SCENARIO)
    d = build_dashboard(store, up(*SCENARIO), Settings(target_score=0.5, eval_point=0.05), now=NOW, window_s=WINDOW)
    se_first, se_last = math.sqrt(0.40 * 0.60 / 1319), math.sqrt(0.47 * 0.53 / 1319)
    assert d.score_se == pytest.approx(se_last) and d.score_se == pytest.approx(0.013742, abs=1e-6)
    spent = spend_at(300) - spend_at(0)  # $3.33: 300 s at $40/h
    assert d.ipd_se_points_per_kilodollar == pytest.approx(math.hypot(se_first, se_last) / spent * 1000)
    assert d.ipd_se_points_per_kilodollar == pytest.approx(5.777, abs=1e-3)
    # Slope over spends -h, 0, +h about their mean: se = sqrt(h² se1² + h² se3²) / (2 h²)
    h = spend_at(100) - spend_at(0)
    assert d.marginal_ipd_se_points_per_kilodollar == pytest.approx(math.hypot(se_first, se_last) / (2 * h) * 1000)
    assert d.marginal_ipd_se_points_per_kilodollar == pytest.approx(8.665, abs=1e-3)
    slope = 0.07 / (2 * h)
    assert d.dollars_per_next_point == pytest.approx(0.05 / slope)
    # Budget ETA to 0.5: (0.5 - 0.47) / slope dollars, at the burn of $40/h
    slope_se = math.hypot(se_first, se_last) / (2 * h)
    assert (d.target_score, d.eta_status, d.eta_maybe_never) == (0.5, "estimated", False)
    assert d.eta_dollars == pytest.approx(0.03 / slope) and d.eta_dollars == pytest.approx(0.95238, abs=1e-5)
    assert d.eta_dollars_se == pytest.approx(math.hypot(se_last / slope, 0.03 * slope_se / slope**2))
    assert d.eta_dollars_se == pytest.approx(0.50888, abs=1e-4)
    assert d.eta_hours == pytest.approx(0.95238 / 40, abs=1e-6)
    assert d.eta_hours_se == pytest.approx(0.50888 / 40, abs=1e-5)


def test_budget_eta_unreachable_and_never() -> None:
    store = fill(Store(), SCENARIO)
    over = build_dashboard(store, up(*SCENARIO), Settings(target_score=1.2), now=NOW, window_s=WINDOW)
    assert over.eta_status == "unreachable"  # scores are fractions of 1319 samples: 1.2 is past the end
    assert (over.eta_dollars, over.eta_hours) == (None, None)
    reached = build_dashboard(store, up(*SCENARIO), Settings(target_score=0.45), now=NOW, window_s=WINDOW)
    assert (reached.eta_status, reached.eta_dollars, reached.eta_hours) == ("reached", 0.0, 0.0)
    off = build_dashboard(store, up(*SCENARIO), Settings(), now=NOW, window_s=WINDOW)
    assert (off.target_score, off.eta_status, off.eta_dollars) == (None, None, None)


def test_empty_store_is_all_unknown() -> None:
    d = build_dashboard(Store(), (), Settings(), now=NOW, window_s=WINDOW)
    for name in ("rollout_rate_per_s", "rollout_tokens_per_s", "rollout_rate_median_10m", "weight_sync_p99_s",
                 "weight_sync_count", "staleness_max", "steps_per_s", "seconds_since_last_step", "spend_dollars",
                 "burn_dollars_per_hour", "ipd_points_per_kilodollar", "marginal_ipd_points_per_kilodollar",
                 "dollars_per_next_point", "score", "gpu_util_percent", "engine_queue_depth", "started_at"):
        assert getattr(d, name) is None, name
    assert d.targets == () and d.workers == () and d.eval_curve == ()


def test_empty_window_is_unknown_not_zero() -> None:
    store = fill(Store(), SCENARIO)
    d = build_dashboard(store, (), Settings(), now=NOW + 3600, window_s=60)  # an hour after the last scrape
    assert d.rollout_rate_per_s is None
    assert d.steps_per_s is None
    assert d.weight_sync_p99_s is None
    assert d.weight_sync_count is None
    assert d.staleness_max is None
    assert d.burn_dollars_per_hour is None
    assert d.weight_sync_last_s == pytest.approx(5.0)  # the last sync ever is still known
    assert d.seconds_since_last_step == pytest.approx(3601.0)
    assert d.spend_dollars == pytest.approx(spend_at(300))  # money spent stays spent


def test_monitor_started_inside_the_window_reports_the_true_rate() -> None:
    # The monitor has scraped only since 1240 (every 10 s) but the window is 300 s. PromQL would divide
    # 60 s of increase by 300 s; the range is cut to where the data begins (half an interval before).
    store = fill(Store(), SCENARIO, start=1240.0)
    d = build_dashboard(store, (), Settings(interval_s=10.0), now=NOW, window_s=WINDOW)
    assert d.started_at == 1240.0
    assert d.rollout_rate_per_s == pytest.approx(3.1)
    assert {w.name: w.rollouts_per_s for w in d.workers if w.rollouts_per_s} == pytest.approx({"w1": 2.1, "w2": 1.0})
    assert d.steps_per_s == pytest.approx(0.5)
    assert d.burn_dollars_per_hour == pytest.approx(40.0)
    assert d.engine_tokens_per_s == pytest.approx(2000.0)


def test_worker_that_joined_mid_window_counts_at_its_own_rate() -> None:
    store = fill(Store(), {"w1": SCENARIO["w1"]})
    fill(store, {"w2": SCENARIO["w2"]}, start=1200.0)
    d = build_dashboard(store, (), Settings(interval_s=10.0), now=NOW, window_s=WINDOW)
    rows = {w.name: w for w in d.workers}
    assert rows["w2"].rollouts_per_s == pytest.approx(1.0)
    assert d.rollout_rate_per_s == pytest.approx(3.1)


def test_nan_and_inf_from_a_target_are_unknown() -> None:
    def broken(t: float) -> list[Sample]:
        return [S(schema.ROLLOUTS.name, math.nan, env="e", outcome="ok"),
                S(schema.ROLLOUT_POLICY_VERSION.name, math.nan),
                S(schema.POLICY_VERSION.name, 5),
                S(schema.LOSS.name, math.inf),
                S(schema.GPU_SECONDS.name, math.inf, role="rollout")]

    d = build_dashboard(fill(Store(), {"w": broken}), (), Settings(), now=NOW, window_s=WINDOW)
    assert d.rollout_rate_per_s is None
    assert d.staleness_max is None  # a NaN worker version is no version, not staleness 0
    assert d.loss is None
    assert d.spend_dollars is None and d.burn_dollars_per_hour is None and d.spend_by_role == ()
    assert d.policy_version == 5


def test_a_nan_eval_score_is_not_an_eval() -> None:
    def ev(t: float) -> list[Sample]:
        score = math.nan if 1100 <= t < 1200 else (0.4 if t < 1100 else 0.5)
        return [S(schema.EVAL_SCORE.name, score, benchmark="b")]

    d = build_dashboard(fill(Store(), {"trainer": trainer, "eval": ev}), (), Settings(), now=NOW, window_s=WINDOW)
    assert [p.score for p in d.eval_curve] == [0.4, 0.5]


def test_worker_restart_is_a_counter_reset() -> None:
    def restarting(t: float) -> list[Sample]:
        # 2 rollouts/s; the process restarts at t=1150 and counts from zero again.
        v = 1000 + 2 * (t - T0) if t < 1150 else 2 * (t - 1150)
        return [S(schema.ROLLOUTS.name, v, env="math", outcome="ok"), S(schema.ROLLOUT_POLICY_VERSION.name, 1)]

    store = fill(Store(), {"w": restarting})
    d = build_dashboard(store, (), Settings(), now=NOW, window_s=WINDOW)
    # Raw increase: 1010..1140 grows 260, then 0..300 -> (1280 - 1020) + 300 = 560 over 290 s sampled,
    # extrapolated x 300/290: rate = 560 / 290.
    assert d.rollout_rate_per_s == pytest.approx(560 / 290)
    # Per slot: 2/s everywhere but the scrape that saw the restart, which counts only the new value (0).
    by_t = dict(d.rollout_rate_series)
    assert by_t.pop(1150.0) == 0.0
    assert all(v == pytest.approx(2.0) for v in by_t.values())


def test_single_eval_has_no_ipd_yet() -> None:
    store = fill(Store(), {"trainer": trainer, "eval": lambda t: evaluator(T0)})
    d = build_dashboard(store, (), Settings(), now=NOW, window_s=WINDOW)
    assert d.score == 0.40 and d.baseline_score == 0.40
    assert len(d.eval_curve) == 1
    assert d.ipd_points_per_kilodollar is None  # no eval after the baseline: no evidence yet
    assert d.marginal_ipd_points_per_kilodollar is None
    assert d.dollars_per_next_point is None


def test_configured_baseline_and_passed_baseline() -> None:
    store = fill(Store(), {"trainer": trainer, "eval": lambda t: evaluator(T0)})
    d = build_dashboard(store, (), Settings(baseline_score=0.30, baseline_spend_dollars=20.0), now=NOW,
                        window_s=WINDOW)
    assert d.ipd_points_per_kilodollar == pytest.approx((0.40 - 0.30) / (26.0 - 20.0) * 1000)
    d = build_dashboard(store, (), Settings(), now=NOW, window_s=WINDOW,
                        baseline=Baseline(score=0.35, spend_dollars=25.0))
    assert d.baseline_score == 0.35
    assert d.ipd_points_per_kilodollar == pytest.approx((0.40 - 0.35) / (26.0 - 25.0) * 1000)


def test_flat_scores_give_no_dollars_per_point() -> None:
    flat = ((1000.0, 0.5, 1.0), (1100.0, 0.5, 2.0), (1200.0, 0.5, 3.0))

    def ev(t: float) -> list[Sample]:
        cur = [e for e in flat if e[0] <= t][-1]
        return [S(schema.EVAL_SCORE.name, cur[1], benchmark="b"), S(schema.EVAL_POLICY_VERSION.name, cur[2],
                                                                    benchmark="b")]

    store = fill(Store(), {"trainer": trainer, "eval": ev})
    d = build_dashboard(store, (), Settings(), now=NOW, window_s=WINDOW)
    assert len(d.eval_curve) == 3  # same score, new policy version: still a new eval
    assert d.marginal_ipd_points_per_kilodollar == pytest.approx(0.0, abs=1e-12)
    assert d.dollars_per_next_point is None


def test_eval_log_is_incremental_and_outlives_the_ring_buffer() -> None:
    store = Store(capacity=5)
    settings = Settings()
    log = EvalLog()
    for i in range(31):
        t = T0 + i * DT
        store.ingest("trainer", t, trainer(t))
        store.ingest("eval", t, evaluator(t))
        log = observe_evals(store, settings, previous=log)
    assert [p.score for p in log.evals["gsm8k"]] == [0.40, 0.45, 0.47]
    d = build_dashboard(store, (), settings, now=NOW, window_s=WINDOW, evals=log)
    assert [p.score for p in d.eval_curve] == [0.40, 0.45, 0.47]
    # Without the log, only what the 5-point buffer still holds is visible.
    assert len(build_dashboard(store, (), settings, now=NOW, window_s=WINDOW).eval_curve) == 1


def test_weight_sync_inf_only_histogram_is_unknown() -> None:
    def inf_only(t: float) -> list[Sample]:
        n = int((t - T0) // 60)
        return [S(schema.WEIGHT_SYNC_SECONDS.bucket, n, le="+Inf"), S(schema.WEIGHT_SYNC_SECONDS.count, n),
                S(schema.WEIGHT_SYNC_SECONDS.sum, 2.0 * n)]

    d = build_dashboard(fill(Store(), {"t": inf_only}), (), Settings(), now=NOW, window_s=WINDOW)
    assert d.weight_sync_p50_s is None and d.weight_sync_p99_s is None
    assert d.weight_sync_count == 5  # the count is still known
    assert d.weight_sync_last_s == pytest.approx(2.0)


def test_syncs_slower_than_the_last_bucket_report_no_less_than_the_slowest_known_sync() -> None:
    def slow(t: float) -> list[Sample]:
        n = int((t - T0) // 60)
        return histogram(schema.WEIGHT_SYNC_SECONDS, [400.0] * n, buckets=SYNC_BUCKETS)

    d = build_dashboard(fill(Store(), {"t": slow}), (), Settings(), now=NOW, window_s=WINDOW)
    # histogram_quantile says the highest finite bound (300 s); every sync is known to have taken 400 s.
    assert d.weight_sync_p99_s == 400.0


def test_down_target_is_not_a_current_reading() -> None:
    store = fill(Store(), SCENARIO)
    health = up("trainer", "w1", "eval", "dcgm", "vllm") + (
        TargetHealth(name="w2", url="http://w2/metrics", role=None, up=False, error="connection refused"),)
    d = build_dashboard(store, health, Settings(), now=NOW, window_s=WINDOW)
    rows = {w.name: w for w in d.workers}
    assert rows["w2"].status == "down"
    assert rows["w2"].policy_version is None
    assert d.staleness_max == 1  # only w1 is current
    assert {t.name: t.error for t in d.targets}["w2"] == "connection refused"


def test_a_down_worker_shows_no_rates_but_its_samples_still_count_in_the_fleet_totals(dash) -> None:
    # w2 (1 rollout/s, 500 tokens/s) died at t=1300 with all its samples in the window. Its row shows no
    # rate (the slope of what it sent before dying is not a current reading), while the fleet totals keep
    # its samples exactly as PromQL's sum(rate(x[300s])) would: the same numbers as with w2 up.
    health = up("trainer", "w1", "eval", "dcgm", "vllm") + (
        TargetHealth(name="w2", url="http://w2/metrics", role=None, up=False, error="connection refused"),)
    d = build_dashboard(fill(Store(), SCENARIO), health, Settings(), now=NOW, window_s=WINDOW)
    rows = {w.name: w for w in d.workers}
    assert (rows["w2"].status, rows["w2"].rollouts_per_s, rows["w2"].tokens_per_s) == ("down", None, None)
    assert rows["w1"].rollouts_per_s == pytest.approx(2.1) and rows["w1"].tokens_per_s == pytest.approx(1000.0)
    assert d.rollout_rate_per_s == pytest.approx(2.1 + 1.0) == dash.rollout_rate_per_s
    assert d.rollout_tokens_per_s == pytest.approx(1500.0) == dash.rollout_tokens_per_s
    assert d.rollout_error_rate_per_s == pytest.approx(0.1)
    assert d.rollout_rate_series == dash.rollout_rate_series
    assert d.rollout_rate_median_10m == dash.rollout_rate_median_10m


def test_a_down_engine_shows_no_tokens_per_second() -> None:
    health = up("trainer", "w1", "w2", "eval", "dcgm") + (
        TargetHealth(name="vllm", url="http://vllm/metrics", role=None, up=False, error="timed out"),)
    d = build_dashboard(fill(Store(), SCENARIO), health, Settings(), now=NOW, window_s=WINDOW)
    row = {w.name: w for w in d.workers}["vllm"]
    assert (row.status, row.rollouts_per_s, row.tokens_per_s) == ("down", None, None)
    assert d.engine_tokens_per_s == pytest.approx(2000.0)  # its samples in the window still count


def test_price_override_and_counters_without_total_and_ray_engine() -> None:
    def plain(t: float) -> list[Sample]:
        r = t - T0
        return [S("posttrain_rollouts", 10 + 3 * r, env="e", outcome="ok"),  # no _total
                S("posttrain_gpu_seconds", 2 * (r + 50), role="rollout"),
                S(schema.GPU_HOUR_PRICE.name, 2.0, role="rollout")]

    def ray(t: float) -> list[Sample]:
        return [S("ray_vllm_generation_tokens_total", 5e5 + 700 * (t - T0), model_name="m"),
                S("ray_vllm_num_requests_waiting", 4)]

    settings = Settings(prices={"rollout": 5.0}, targets=(Target(name="r", url="http://r/metrics"),))
    d = build_dashboard(fill(Store(), {"w": plain, "r": ray}), (), settings, now=NOW, window_s=WINDOW)
    assert d.rollout_rate_per_s == pytest.approx(3.0)
    assert d.burn_dollars_per_hour == pytest.approx(2 * 5.0)  # the override beats the exporter's $2
    assert d.spend_dollars == pytest.approx(2 * 350 * 5.0 / 3600)
    assert d.engine_tokens_per_s == pytest.approx(700.0)
    assert d.engine_queue_depth == 4
    assert {t.name: t.role for t in d.targets}["r"] == "engine"


def test_spend_survives_a_cost_counter_reset() -> None:
    def restarted(t: float) -> list[Sample]:
        r = t - T0
        gs = 4 * (r + 100) if t < 1150 else 4 * (t - 1150)
        return [S(schema.GPU_SECONDS.name, gs, role="rollout"), S(schema.GPU_HOUR_PRICE.name, 3.0, role="rollout")]

    d = build_dashboard(fill(Store(), {"w": restarted}), (), Settings(), now=NOW, window_s=WINDOW)
    # Before the restart: 4 x (140 + 100) = 960 GPU-s at t=1140; after: 4 x 150 = 600.
    assert d.spend_dollars == pytest.approx((960 + 600) * 3.0 / 3600)


# --- whatever targets send, a build never raises and shows only finite numbers or None ------------

from dataclasses import fields  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import settings as hsettings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ptmon.monitor.alerts import evaluate  # noqa: E402

_NAMES = [
    schema.ROLLOUTS.name, "posttrain_rollouts", schema.ROLLOUT_TOKENS.name, schema.ROLLOUT_POLICY_VERSION.name,
    schema.POLICY_VERSION.name, schema.TRAINER_STEPS.name, schema.TRAINER_LAST_STEP_TIMESTAMP.name,
    schema.WEIGHT_SYNC_SECONDS.bucket, schema.WEIGHT_SYNC_SECONDS.count, schema.WEIGHT_SYNC_SECONDS.sum,
    schema.TRAINER_STEP_SECONDS.bucket, schema.ROLLOUT_REWARD.sum, schema.ROLLOUT_REWARD.count,
    schema.GPU_SECONDS.name, schema.GPU_HOUR_PRICE.name, schema.EVAL_SCORE.name, schema.EVAL_POLICY_VERSION.name,
    schema.RUN_INFO.name, "vllm:generation_tokens_total", "vllm:num_requests_waiting", "DCGM_FI_DEV_GPU_UTIL",
]
_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**6).map(float))
_LABELS = st.dictionaries(st.sampled_from(["le", "role", "env", "outcome", "benchmark", "Hostname", "uuid"]),
                          st.sampled_from(["+Inf", "0.5", "x", "", "rollout", "ok", "error", "b", "1e3", "-1"]),
                          max_size=3)
_SCRAPE = st.lists(st.tuples(st.sampled_from(_NAMES), _LABELS, _VALUES), max_size=12)


@hsettings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0, 400), _SCRAPE), max_size=40),
       st.sampled_from([30.0, 300.0, 3600.0]))
def test_any_store_builds_a_dashboard_of_finite_numbers(scrapes, window_s) -> None:
    store = Store()
    for target, t, samples in sorted(scrapes, key=lambda s: s[1]):
        store.ingest(target, T0 + t, [Sample(n, labels, v) for n, labels, v in samples])
    d = build_dashboard(store, (), Settings(), now=T0 + 400, window_s=window_s)
    evaluate(d, Settings().thresholds)  # the rules take whatever the build gives
    for f in fields(d):
        v = getattr(d, f.name)
        if isinstance(v, float):
            assert math.isfinite(v), f.name
    for p in d.eval_curve:
        assert math.isfinite(p.score) and math.isfinite(p.spend_dollars)
    for row in d.workers:
        for f in fields(row):
            v = getattr(row, f.name)
            assert not isinstance(v, float) or math.isfinite(v), f.name
    for series in (d.rollout_rate_series, d.weight_sync_series):
        assert all(math.isfinite(v) for _, v in series)


# --- mean reward: signed sum counters, else _sum, else the buckets ------------------------------


def reward_buckets_only(t: float) -> list[Sample]:
    """A worker whose reward histogram has buckets and _count but no _sum (prometheus_client's
    exposition when a bound is negative). Per 10 s: math gets rewards 1.0 and 0.0, code gets -1.0
    and 0.35; cumulative counts grow by that much every scrape."""
    k = (t - T0) / DT + 7  # scrapes so far, offset: the counters did not start with the monitor
    out = [S(schema.ROLLOUTS.name, 2 * k, env="math", outcome="ok")]
    per_scrape = {"math": (1.0, 0.0), "code": (-1.0, 0.35)}
    for env, rewards in per_scrape.items():
        for le in schema.DEFAULT_REWARD_BUCKETS:
            out.append(S(schema.ROLLOUT_REWARD.bucket, k * sum(1 for r in rewards if r <= le), env=env, le=_le(le)))
        out.append(S(schema.ROLLOUT_REWARD.bucket, k * len(rewards), env=env, le="+Inf"))
        out.append(S(schema.ROLLOUT_REWARD.count, k * len(rewards), env=env))
    return out


def test_mean_reward_is_estimated_from_bucket_increases_when_sum_is_absent() -> None:
    # Every scrape interval adds: 1.0 in (0.9, 1] -> 0.95; 0.0 in (-0.5, 0] -> -0.25; -1.0 in the lowest
    # bucket (-Inf, -1] -> -1; 0.35 in (0.3, 0.4] -> 0.35. Mean (0.95 - 0.25 - 1 + 0.35) / 4 = 0.0125,
    # whatever the window holds (every interval adds the same).
    store = fill(Store(), {"w": reward_buckets_only})
    d = build_dashboard(store, up("w"), Settings(), now=NOW, window_s=WINDOW)
    (row,) = d.workers
    assert row.mean_reward == pytest.approx(0.0125)
    # A counter reset (the worker restarted) is handled like any counter's: the estimate is unchanged.
    restarted = fill(Store(), {"w": reward_buckets_only}, end=1150.0)
    fill(restarted, {"w": lambda t: reward_buckets_only(t - 160.0)}, start=1160.0)
    d = build_dashboard(restarted, up("w"), Settings(), now=NOW, window_s=WINDOW)
    assert d.workers[0].mean_reward == pytest.approx(0.0125)


def test_mean_reward_uses_sum_where_it_exists_and_estimates_the_rest() -> None:
    # env="math" has a _sum: exactly 0.5 per rollout; env="code" has buckets only (-1.0 and 0.35 per
    # interval: -0.65 over 2). Per interval: math 3 rollouts summing 1.5, code 2 summing -0.65.
    def gen(t: float) -> list[Sample]:
        k = (t - T0) / DT + 1
        out = [s for s in reward_buckets_only(t) if s.labels.get("env") == "code"]
        out += [S(schema.ROLLOUTS.name, 3 * k, env="math", outcome="ok"),
                S(schema.ROLLOUT_REWARD.count, 3 * k, env="math"), S(schema.ROLLOUT_REWARD.sum, 1.5 * k, env="math")]
        for le in schema.DEFAULT_REWARD_BUCKETS:
            out.append(S(schema.ROLLOUT_REWARD.bucket, 3 * k if le >= 0.5 else 0.0, env="math", le=_le(le)))
        out.append(S(schema.ROLLOUT_REWARD.bucket, 3 * k, env="math", le="+Inf"))
        return out

    store = fill(Store(), {"w": gen})
    d = build_dashboard(store, up("w"), Settings(), now=NOW, window_s=WINDOW)
    assert d.workers[0].mean_reward == pytest.approx((1.5 - 0.65) / 5)


def reward_samples(env: str, rewards: tuple[float, ...], k: float, *, signed: bool = True, with_sum: bool = False,
                   positive: str = schema.ROLLOUT_REWARD_POSITIVE.name,
                   negative: str = schema.ROLLOUT_REWARD_NEGATIVE.name) -> list[Sample]:
    """What a worker exposes after ``k`` scrape intervals of ``rewards`` each: buckets and _count always,
    the signed sum counters (as the exporters do) and/or _sum (as a non-negative-bucket or multiprocess
    exporter does) when asked."""
    out = [S(schema.ROLLOUT_REWARD.bucket, k * sum(1 for r in rewards if r <= le), env=env, le=_le(le))
           for le in schema.DEFAULT_REWARD_BUCKETS]
    out.append(S(schema.ROLLOUT_REWARD.bucket, k * len(rewards), env=env, le="+Inf"))
    out.append(S(schema.ROLLOUT_REWARD.count, k * len(rewards), env=env))
    if signed:
        out.append(S(positive, k * sum(r for r in rewards if r >= 0), env=env))
        out.append(S(negative, k * sum(-r for r in rewards if r < 0), env=env))
    if with_sum:
        out.append(S(schema.ROLLOUT_REWARD.sum, k * sum(rewards), env=env))
    return out


@pytest.mark.parametrize("spelling", ["_total", "plain"])
def test_mean_reward_from_the_signed_counters_across_a_worker_restart(spelling: str) -> None:
    # Until t=1150 (k = 8 at 1010 .. 22 at 1150, the counters older than the monitor) each 10 s brings
    # rewards 1.0 and 0.0. The worker restarts; its first scrape after (t=1160) holds one interval of the
    # new rewards 0.5 and -1.0, which go on until 1300 (j = 1 .. 15).
    # Window (1000, 1300]: positive 22 - 8 = 14, drop to 0.5 (a restart: + 0.5), 7.5 - 0.5 = 7 -> 21.5;
    # negative 0 .. 0, then 1 .. 15 (a rise, no restart needed) -> 15; count 44 - 16 = 28, drop to 2
    # (+ 2), 30 - 2 = 28 -> 58. Mean (21.5 - 15) / 58: the true mean of the 58 rewards observed,
    # 14 x 1.0 + 15 x (0.5 - 1.0) = 6.5. (The bucket estimate would read 0.95/-0.25 and 0.45/-1.0.)
    names: dict[str, Any] = ({} if spelling == "_total" else
                             dict(positive=schema.ROLLOUT_REWARD_POSITIVE.name.removesuffix("_total"),
                                  negative=schema.ROLLOUT_REWARD_NEGATIVE.name.removesuffix("_total")))

    def before(t: float) -> list[Sample]:
        k = (t - T0) / DT + 7
        return [S(schema.ROLLOUTS.name, 2 * k, env="math", outcome="ok"),
                *reward_samples("math", (1.0, 0.0), k, **names)]

    def after(t: float) -> list[Sample]:
        j = (t - 1160.0) / DT + 1
        return [S(schema.ROLLOUTS.name, 2 * j, env="math", outcome="ok"),
                *reward_samples("math", (0.5, -1.0), j, **names)]

    store = fill(Store(), {"w": before}, end=1150.0)
    fill(store, {"w": after}, start=1160.0)
    d = build_dashboard(store, up("w"), Settings(), now=NOW, window_s=WINDOW)
    assert d.workers[0].mean_reward == pytest.approx(6.5 / 58)
    # A window after the restart only, (1160, 1300]: 13 intervals of (0.5, -1.0) -> exactly -0.25.
    d = build_dashboard(store, up("w"), Settings(), now=NOW, window_s=140.0)
    assert d.workers[0].mean_reward == -0.25


def test_mean_reward_per_env_from_the_best_source_each_has() -> None:
    # Per 10 s: math has the signed counters (rewards 1.0, 0.0: sum 1 over 2), code has _sum (-0.5, 0.25:
    # sum -0.25 over 2), game has buckets only (0.35, estimated at its bucket's midpoint 0.35). All expose
    # buckets; math's and code's would be estimated at 0.95 - 0.25 and -0.75 + 0.25, so the answer tells
    # which source each env was read from: (1 - 0.25 + 0.35) / 5 = 0.22.
    def gen(t: float) -> list[Sample]:
        k = (t - T0) / DT + 3
        return [S(schema.ROLLOUTS.name, 5 * k, env="math", outcome="ok"),
                *reward_samples("math", (1.0, 0.0), k),
                *reward_samples("code", (-0.5, 0.25), k, signed=False, with_sum=True),
                *reward_samples("game", (0.35,), k, signed=False)]

    d = build_dashboard(fill(Store(), {"w": gen}), up("w"), Settings(), now=NOW, window_s=WINDOW)
    assert d.workers[0].mean_reward == pytest.approx(0.22)


def test_mean_reward_with_only_one_signed_counter_falls_back() -> None:
    # A worker with a positive counter but no negative one (not what the exporters expose: both exist from
    # an env's first rollout) is not read as "no negative rewards": its _sum is used instead.
    def gen(t: float) -> list[Sample]:
        k = (t - T0) / DT + 1
        out = reward_samples("math", (1.0, -0.5), k, with_sum=True)
        return [S(schema.ROLLOUTS.name, 2 * k, env="math", outcome="ok"),
                *(x for x in out if x.name != schema.ROLLOUT_REWARD_NEGATIVE.name)]

    d = build_dashboard(fill(Store(), {"w": gen}), up("w"), Settings(), now=NOW, window_s=WINDOW)
    assert d.workers[0].mean_reward == 0.25


async def test_mean_reward_of_the_real_rollout_exporter_over_http() -> None:
    # The real RolloutExporter (default buckets from -1: no _sum on /metrics, but the signed reward
    # counters) served on loopback and scraped by the LiveFeed. Each 10 s: rewards 1.0, 0.0, 0.35 (math)
    # and -1.0 (code): the true mean (1 + 0 + 0.35 - 1) / 4 = 0.0875. (The bucket estimate this replaced
    # read 0.95, -0.25, 0.35 and -1: 0.0125.)
    from ptmon.exporters.rollout import RolloutExporter
    from tests.monitor.helpers import scrape_one_worker

    def round_of_rollouts(exporter: RolloutExporter) -> None:
        for reward in (1.0, 0.0, 0.35):
            exporter.record_rollout(env="math", tokens=10, reward=reward)
        exporter.record_rollout(env="code", tokens=10, reward=-1.0)

    d, _ = await scrape_one_worker(round_of_rollouts, rounds=11, step_s=10.0, window_s=100.0)
    (row,) = d.workers
    assert row.rollouts_per_s == pytest.approx(0.4)
    assert row.mean_reward == pytest.approx(0.0875)


# --- spend and evals that outlive the ring buffer ---------------------------------------------


def test_spend_keeps_a_restarts_cost_after_the_restart_leaves_the_buffer() -> None:
    store = Store(capacity=100)
    value = 0.0
    seen: dict[int, float | None] = {}
    for i in range(300):
        t = 1000.0 + i
        value = 0.0 if i == 50 else value + 3600.0  # restarted at i=50; one GPU-hour a scrape
        store.ingest("w", t, [Sample(schema.GPU_SECONDS.name, {"role": "rollout"}, value)])
        if i in (60, 200, 299):  # dashboards are built while the buffer wraps, as in the TUI
            seen[i] = build_dashboard(store, (), Settings(), now=t, window_s=60).spend_dollars
    price = schema.DEFAULT_GPU_HOUR_PRICE
    # before the restart: i=0..49 -> 50 GPU-hours; after it: (i - 50) more
    assert seen[60] == pytest.approx((50 + 10) * price)
    assert seen[200] == pytest.approx((50 + 150) * price)
    assert seen[299] == pytest.approx((50 + 249) * price)


def test_an_eval_seen_before_any_cost_data_is_placed_once_spend_is_known() -> None:
    store, settings = Store(), Settings()
    store.ingest("eval", 1000.0, [Sample(schema.EVAL_SCORE.name, {"benchmark": "gsm8k"}, 0.40)])
    log = observe_evals(store, settings)  # no cost series anywhere yet
    assert log.evals == {}
    for i in range(1, 200):
        t = 1000.0 + i
        store.ingest("trainer", t, [Sample(schema.GPU_SECONDS.name, {"role": "trainer"}, 8.0 * i)])
        store.ingest("eval", t, [Sample(schema.EVAL_SCORE.name, {"benchmark": "gsm8k"}, 0.40 if i < 100 else 0.45)])
        log = observe_evals(store, settings, previous=log)
    d = build_dashboard(store, (), settings, now=1199.0, window_s=300, evals=log)
    assert [(p.timestamp, p.score) for p in d.eval_curve] == [(1000.0, 0.40), (1100.0, 0.45)]
    assert d.baseline_score == 0.40 and d.ipd_points_per_kilodollar is not None


def test_prices_and_gpu_seconds_that_cannot_be_right_are_not_used_and_the_target_says_so() -> None:
    # Issue 12 item 8: an exporter price of -3 (or 1e300) was used as is, and negative GPU-seconds times a
    # negative price read as a positive spend of $5.6e9. Now: the default price for a bad gauge, a bad
    # counter left out of spend and burn, and each target's row says which number was refused and why.
    def priced(price: float) -> Gen:
        def gen(t: float) -> list[Sample]:
            return [S(schema.GPU_SECONDS.name, 4 * (t - T0 + 100), role="rollout"),
                    S(schema.GPU_HOUR_PRICE.name, price, role="rollout")]
        return gen

    def negative(t: float) -> list[Sample]:
        return [S(schema.GPU_SECONDS.name, -4 * (t - T0 + 100), role="trainer"),
                S(schema.GPU_HOUR_PRICE.name, -3.0, role="trainer")]

    store = fill(Store(), {"neg": priced(-3.0), "huge": priced(1e300), "fine": priced(2.0), "wrap": negative})
    d = build_dashboard(store, (), Settings(), now=NOW, window_s=WINDOW)
    gpu_s = 4 * (NOW - T0 + 100)  # each good counter's value at now: spend counts it all
    default = schema.DEFAULT_GPU_HOUR_PRICE
    assert d.spend_dollars == pytest.approx(gpu_s * (default + default + 2.0) / 3600)
    assert d.burn_dollars_per_hour == pytest.approx(4 * (default + default + 2.0))
    rows = {t.name: t for t in d.targets}
    assert rows["fine"].warning is None
    assert rows["neg"].warning == ("GPU-hour price $-3 ignored (expected $0 to $1,000); the default price is used")
    assert rows["huge"].warning is not None and rows["huge"].warning.startswith("GPU-hour price $1e+300 ignored")
    wrap = rows["wrap"].warning
    assert wrap is not None and "GPU-hour price $-3 ignored" in wrap
    assert "GPU-seconds counter (-1600) below zero or beyond 1,000,000 GPUs for a year: left out of spend" in wrap
    assert ("wrap", "trainer") not in {(t, r) for t, r, *_ in d.spend_by_role}
