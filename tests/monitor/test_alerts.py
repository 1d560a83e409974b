"""monitor.alerts: each rule at, just below and just above its threshold; since is kept across evaluations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ptmon.monitor.alerts import evaluate, recent_rollout_rate, stall_limit_s
from ptmon.monitor.dashboard import Dashboard, EvalPoint, TargetHealth
from ptmon.monitor.settings import Thresholds

TH = Thresholds()
NOW = 10_000.0


def dash(**kw) -> Dashboard:
    return Dashboard(now=kw.pop("now", NOW), window_s=300.0, interval_s=1.0, **kw)


def names(alerts) -> dict[str, str]:
    return {a.name: a.level for a in alerts}


def test_healthy_dashboard_has_no_alerts() -> None:
    d = dash(targets=(TargetHealth("t", "http://t/metrics", "trainer", True),), seconds_since_last_step=5.0,
             step_seconds_median=2.0, weight_sync_p99_s=1.0, staleness_max=1.0, rollout_rate_per_s=3.0,
             rollout_rate_median_10m=3.0, rollout_rate_series=((NOW - 5, 3.0),))
    assert evaluate(d, TH) == ()
    assert dash().level == "ok"


def test_target_down_names_the_target_and_its_error() -> None:
    d = dash(targets=(TargetHealth("trainer", "http://a:1/metrics", "trainer", False, error="connection refused"),
                      TargetHealth("w1", "http://b:2/metrics", "rollout", False, error="timed out after 0.8 s"),
                      TargetHealth("w2", "http://c:3/metrics", "rollout", True),
                      TargetHealth("w3", "http://d:4/metrics", None, None)))  # not scraped yet: not down
    alerts = evaluate(d, TH)
    assert [(a.name, a.level, a.subject) for a in alerts] == [
        ("target_down", "critical", "trainer"), ("target_down", "warn", "w1")]
    assert "connection refused" in alerts[0].message and "http://a:1/metrics" in alerts[0].message


def test_stall_limit_is_max_of_factor_times_median_and_minimum() -> None:
    assert stall_limit_s(dash(step_seconds_median=2.0), TH) == 120.0  # 10 x 2 s < 120 s
    assert stall_limit_s(dash(step_seconds_median=30.0), TH) == 300.0
    assert stall_limit_s(dash(), TH) == 120.0  # no median yet: the minimum
    assert "trainer_stalled" not in names(evaluate(dash(step_seconds_median=30.0, seconds_since_last_step=299.0), TH))
    a = evaluate(dash(step_seconds_median=30.0, seconds_since_last_step=300.0), TH)
    assert names(a) == {"trainer_stalled": "critical"}
    assert "300 s" in a[0].message


@pytest.mark.parametrize(("p99", "level"), [(30.0, None), (30.5, "warn"), (120.0, "warn"), (121.0, "critical")])
def test_weight_sync_p99(p99: float, level: str | None) -> None:
    assert names(evaluate(dash(weight_sync_p99_s=p99), TH)).get("weight_sync_slow") == level


@pytest.mark.parametrize(("st", "level"), [(2.0, None), (3.0, "warn"), (4.0, "warn"), (5.0, "critical")])
def test_staleness(st: float, level: str | None) -> None:
    assert names(evaluate(dash(staleness_max=st), TH)).get("staleness") == level


def test_rollout_rate_drop_uses_the_last_30_s_against_the_10_minute_median() -> None:
    series = tuple((NOW - 100 + i * 10, 4.0) for i in range(7)) + ((NOW - 25, 2.0), (NOW - 15, 2.0), (NOW, 2.0))
    d = dash(rollout_rate_per_s=3.5, rollout_rate_median_10m=4.0, rollout_rate_series=series)
    assert recent_rollout_rate(d) == 2.0
    assert names(evaluate(d, TH)) == {"rollout_rate_drop": "warn"}  # 2.0 <= 0.5 x 4.0
    d = replace(d, rollout_rate_series=series[:-3] + ((NOW, 2.1),))
    assert "rollout_rate_drop" not in names(evaluate(d, TH))
    d = replace(d, rollout_rate_series=((NOW, 0.0),))
    assert names(evaluate(d, TH)) == {"rollout_rate_drop": "critical"}
    # No recent slot: the window's rate stands in.
    assert recent_rollout_rate(dash(rollout_rate_per_s=1.5)) == 1.5
    # No reference yet, or a reference of 0: nothing to compare with.
    assert evaluate(dash(rollout_rate_per_s=0.0), TH) == ()
    assert evaluate(dash(rollout_rate_per_s=0.0, rollout_rate_median_10m=0.0), TH) == ()


def curve(*scores: float) -> tuple[EvalPoint, ...]:
    return tuple(EvalPoint(timestamp=NOW - 1000 + 100 * i, spend_dollars=10.0 * i, score=s)
                 for i, s in enumerate(scores))


def test_marginal_ipd_at_or_below_zero_over_k_evals() -> None:
    flat = dash(eval_curve=curve(0.5, 0.5, 0.5, 0.5, 0.5), marginal_ipd_points_per_kilodollar=0.0)
    assert names(evaluate(flat, TH)) == {"marginal_ipd": "warn"}
    assert "money without progress" in evaluate(flat, TH)[0].message
    rising = replace(flat, marginal_ipd_points_per_kilodollar=0.1)
    assert evaluate(rising, TH) == ()
    too_few = replace(flat, eval_curve=curve(0.5, 0.5, 0.5))  # fewer than K=5 evals: no judgement yet
    assert evaluate(too_few, TH) == ()
    assert names(evaluate(too_few, TH, marginal_k=3)) == {"marginal_ipd": "warn"}


def test_eval_regression_against_the_best_so_far() -> None:
    d = dash(benchmark="gsm8k", eval_curve=curve(0.40, 0.50, 0.47))
    a = evaluate(d, TH)
    assert names(a) == {"eval_regression": "warn"}  # 0.47 < 0.50 - 0.02
    assert a[0].subject == "gsm8k"
    assert evaluate(replace(d, eval_curve=curve(0.40, 0.50, 0.485)), TH) == ()
    assert evaluate(replace(d, eval_curve=curve(0.40)), TH) == ()


def test_since_is_kept_while_firing_and_reset_after_clearing() -> None:
    down = dash(targets=(TargetHealth("w1", "u", "rollout", False),))
    first = evaluate(down, TH)
    assert first[0].since == NOW
    later = evaluate(replace(down, now=NOW + 60), TH, previous=first)
    assert later[0].since == NOW
    cleared = evaluate(replace(down, now=NOW + 70, targets=(TargetHealth("w1", "u", "rollout", True),)), TH,
                       previous=later)
    assert cleared == ()
    again = evaluate(replace(down, now=NOW + 80), TH, previous=cleared)
    assert again[0].since == NOW + 80


def test_critical_first_and_thresholds_are_configurable() -> None:
    d = dash(staleness_max=3.0, weight_sync_p99_s=200.0)
    assert [a.level for a in evaluate(d, TH)] == ["critical", "warn"]
    assert evaluate(d, Thresholds(staleness_warn=10, staleness_critical=20, weight_sync_p99_warn_s=500,
                                  weight_sync_p99_critical_s=600)) == ()
    assert replace(d, alerts=evaluate(d, TH)).level == "critical"


def test_rollout_rate_drop_fires_critical_when_every_worker_is_down() -> None:
    from ptmon.monitor.dashboard import WorkerRow

    def worker(name: str, up: bool) -> WorkerRow:
        return WorkerRow(name=name, role="rollout", up=up, rollouts_per_s=None, tokens_per_s=None,
                         policy_version=None, staleness=None, mean_reward=None, status="down" if not up else "ok")

    old = tuple((NOW - 200 + i * 10, 10.0) for i in range(10))  # nothing in the last 30 s
    d = dash(rollout_rate_per_s=18.0, rollout_rate_median_10m=20.0, rollout_rate_series=old,
             workers=(worker("a", False), worker("b", False)))
    assert recent_rollout_rate(d) == 0.0
    assert names(evaluate(d, TH)).get("rollout_rate_drop") == "critical"
    # one worker still up: the window's rate stands in, as before
    d = replace(d, workers=(worker("a", False), worker("b", True)))
    assert recent_rollout_rate(d) == 18.0


def test_mean_of_huge_gauges_is_unknown_not_a_crash() -> None:
    from ptmon.monitor.derive import mean

    assert mean([1.7e308, 1.7e308]) is None
    assert mean([1.0, 2.0]) == 1.5
    assert mean([]) is None


def test_an_eval_pushed_longer_ago_than_the_limit_is_called_out() -> None:
    # Issue 14: an eval job pushing to a Pushgateway that stopped is said, with the age of its last push.
    limit = TH.eval_push_max_age_s
    assert names(evaluate(dash(eval_pushed_at=NOW - limit), TH)) == {}  # at the limit: not over it
    assert names(evaluate(dash(eval_pushed_at=None), TH)) == {}  # evals served, or none: nothing to judge
    (alert,) = evaluate(dash(eval_pushed_at=NOW - limit - 600), TH)
    assert (alert.name, alert.level) == ("eval_stale", "warn")
    assert alert.message == "last eval pushed 1h10m ago (over 1h00m): is the eval job still running?"
    assert names(evaluate(dash(eval_pushed_at=NOW - 700), Thresholds(eval_push_max_age_s=600))) == {
        "eval_stale": "warn"}


# --- weight_sync_failing (issue 13 item 5) ------------------------------------------------------------

@pytest.mark.parametrize(("failed", "ok", "row", "level"), [
    (0.0, 10.0, 0.0, None),  # no failure
    (1.0, 10.0, 0.0, "warn"),  # any failure warns
    (1.0, 2.0, 1.0, "warn"),  # share 1/3, just below 50%; 1 in a row, below 3
    (2.0, 2.0, 0.0, "critical"),  # share exactly 50%
    (2.0, 1.0, 2.0, "critical"),  # share 2/3, above
    (2.0, 20.0, 2.0, "warn"),  # 2 in a row, just below 3
    (3.0, 20.0, 3.0, "critical"),  # 3 in a row (share 3/23 small)
    (19.0, 0.0, 19.0, "critical"),  # every broadcast fails after a peer died
])
def test_weight_sync_failing(failed: float, ok: float, row: float, level: str | None) -> None:
    d = dash(weight_sync_failures=failed, weight_sync_count=ok, weight_sync_failures_in_a_row=row)
    assert names(evaluate(d, Thresholds())).get("weight_sync_failing") == level


def test_weight_sync_failing_thresholds_are_configurable_and_the_message_counts() -> None:
    d = dash(weight_sync_failures=2.0, weight_sync_count=6.0, weight_sync_failures_in_a_row=2.0)
    assert names(evaluate(d, Thresholds())).get("weight_sync_failing") == "warn"
    th = Thresholds(weight_sync_failure_share_critical=0.25)
    (alert,) = [a for a in evaluate(d, th) if a.name == "weight_sync_failing"]
    assert alert.level == "critical"
    assert alert.message == "2 of 8 weight syncs failed in the window (25%, 2 since the last success)"
    in_a_row = Thresholds(weight_sync_failures_in_a_row_critical=2.0)
    assert names(evaluate(d, in_a_row))["weight_sync_failing"] == "critical"


# --- policy_not_advancing (issue 13): the trainer steps, syncs are tried, the published version holds ----------

@pytest.mark.parametrize(("held", "steps", "tried", "fires"), [
    (TH.policy_stuck_s + 1, 12.0, 3.0, True),
    (TH.policy_stuck_s, 12.0, 3.0, False),  # at the limit: not over it
    (TH.policy_stuck_s + 1, 0.0, 3.0, False),  # no step: trainer_stalled's business, not this
    (TH.policy_stuck_s + 1, 12.0, 0.0, False),  # no sync tried: a loop that syncs rarely is not stuck
    (TH.policy_stuck_s + 1, None, 3.0, False),
    (None, 12.0, 3.0, False),
])
def test_policy_not_advancing(held: float | None, steps: float | None, tried: float | None, fires: bool) -> None:
    d = dash(policy_version=12.0, policy_held_s=held, policy_held_steps=steps, policy_held_sync_attempts=tried)
    alerts = [a for a in evaluate(d, TH) if a.name == "policy_not_advancing"]
    assert bool(alerts) is fires
    if fires:
        assert alerts[0].level == "critical"
        assert alerts[0].message == ("policy version 12 has not moved for 5m01s (limit 5m00s) while the trainer "
                                     "took 12 steps and tried 3 weight syncs")


def test_policy_not_advancing_follows_its_threshold() -> None:
    d = dash(policy_held_s=100.0, policy_held_steps=5.0, policy_held_sync_attempts=1.0)
    assert "policy_not_advancing" not in names(evaluate(d, TH))
    assert names(evaluate(d, Thresholds(policy_stuck_s=60.0)))["policy_not_advancing"] == "critical"
