"""Alert rules over a Dashboard: what broke, how badly, since when.

Rules read only the Dashboard (never the store or the network), so they are
pure and each one is a few lines a reader can check against its threshold.
``since`` survives across evaluations: pass the previous evaluation's alerts
back in and an alert that is still firing keeps the time it was first seen
(keyed by rule and subject), so the UI can say "stalled for 6 min".

Comparisons follow the threshold names: "above" is strict, "at or below" is
inclusive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from ptmon.exporters import schema
from ptmon.monitor.dashboard import Alert, Dashboard, Level
from ptmon.monitor.format import fmt_duration
from ptmon.monitor.settings import RECENT_RATE_S, Thresholds

__all__ = ["evaluate", "RULES", "RULE_CARDS", "recent_rollout_rate", "stall_limit_s"]

# Every rule, with the headline card it colours (the ids of ptmon.monitor.widgets.cards.CARDS): a rule says
# where it belongs, the screen does not guess. None: no card (target_down: the header's count and the
# targets table show it).
RULE_CARDS: Mapping[str, str | None] = MappingProxyType({
    "target_down": None,
    "trainer_stalled": "trainer",
    "weight_sync_slow": "sync",
    "weight_sync_failing": "sync",
    "policy_not_advancing": "sync",
    "staleness": "staleness",
    "rollout_rate_drop": "rollout",
    "marginal_ipd": "ipd",
    "eval_regression": "ipd",
    "eval_stale": "ipd",
})
RULES = tuple(RULE_CARDS)


def stall_limit_s(d: Dashboard, th: Thresholds) -> float:
    """No step for this long means stalled: max(stall_factor x median step time, stall_min_s)."""
    if d.step_seconds_median is None:
        return th.stall_min_s
    return max(th.stall_factor * d.step_seconds_median, th.stall_min_s)


def recent_rollout_rate(d: Dashboard) -> float | None:
    """The rollout rate now: the mean of the chart series over the last 30 s, else the window's rate.

    The window's rate (up to an hour) reacts too slowly to show a drop
    against the 10-minute median; the last 30 s of slots do not.
    """
    recent = [v for t, v in d.rollout_rate_series if t > d.now - RECENT_RATE_S]
    if recent:
        return sum(recent) / len(recent)
    if d.workers and not any(w.up for w in d.workers):
        return 0.0  # every worker is down: nothing is rolling out, whatever the window still holds
    return d.rollout_rate_per_s


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _above(value: float | None, warn: float, critical: float) -> tuple[Level, float] | None:
    """The level ``value`` is strictly above, with the limit it crossed; None below both."""
    if value is None:
        return None
    if value > critical:
        return "critical", critical
    if value > warn:
        return "warn", warn
    return None


def _candidates(d: Dashboard, th: Thresholds, marginal_k: int) -> Iterable[tuple[str, Level, str, str | None]]:
    for t in d.targets:
        if t.up is False:
            level: Level = "critical" if t.role == schema.ROLE_TRAINER else "warn"
            why = f": {t.error}" if t.error else ""
            yield "target_down", level, f"{t.name} ({t.url}) is down{why}", t.name

    if d.seconds_since_last_step is not None:
        limit = stall_limit_s(d, th)
        if d.seconds_since_last_step >= limit:
            yield ("trainer_stalled", "critical",
                   f"no training step for {d.seconds_since_last_step:.0f} s (limit {limit:.0f} s)", None)

    p99 = d.weight_sync_p99_s
    above = _above(p99, th.weight_sync_p99_warn_s, th.weight_sync_p99_critical_s)
    if above and p99 is not None:  # above implies known
        level, limit = above
        yield "weight_sync_slow", level, f"weight-sync p99 {_fmt(p99)} s > {_fmt(limit)} s", None

    yield from _sync_failing(d, th)
    yield from _policy_not_advancing(d, th)

    yield from _staleness(d, th)

    ref = d.rollout_rate_median_10m
    now_rate = recent_rollout_rate(d)
    if ref is not None and ref > 0 and now_rate is not None and now_rate <= th.rollout_drop_ratio * ref:
        level = "critical" if now_rate <= 0 else "warn"
        yield ("rollout_rate_drop", level,
               f"rollout rate {_fmt(now_rate)}/s is at or below {th.rollout_drop_ratio:.0%} of its "
               f"10-minute median {_fmt(ref)}/s", None)

    m = d.marginal_ipd_points_per_kilodollar
    if m is not None and len(d.eval_curve) >= marginal_k and m <= th.marginal_ipd_min:
        yield ("marginal_ipd", "warn",
               f"marginal intelligence per dollar {_fmt(m)} points/$1k over the last {marginal_k} evals "
               f"(at or below {_fmt(th.marginal_ipd_min)}): money without progress", None)

    if len(d.eval_curve) >= 2:
        best = max(d.eval_curve[:-1], key=lambda p: p.score)
        latest = d.eval_curve[-1]
        if latest.score < best.score - th.eval_regression_points:
            yield ("eval_regression", "warn",
                   f"{d.benchmark or 'eval'} score {_fmt(latest.score)} is {_fmt(best.score - latest.score)} "
                   f"below the best so far ({_fmt(best.score)})", d.benchmark)


def _stale_push(d: Dashboard, th: Thresholds) -> Iterable[tuple[str, Level, str, str | None]]:
    """The newest eval pushed to a Pushgateway is older than ``eval_push_max_age_s``: the eval job stopped."""
    if d.eval_pushed_at is not None and d.now - d.eval_pushed_at > th.eval_push_max_age_s:
        yield ("eval_stale", "warn",
               f"last eval pushed {fmt_duration(d.now - d.eval_pushed_at)} ago "
               f"(over {fmt_duration(th.eval_push_max_age_s)}): "
               "is the eval job still running?", None)


def _sync_failing(d: Dashboard, th: Thresholds) -> Iterable[tuple[str, Level, str, str | None]]:
    """Any failed sync in the window warns; a share of the attempts, or a run since the last success, is
    critical (a failed sync publishes no version, so staleness alone never shows it)."""
    failed = d.weight_sync_failures
    if not failed or failed <= 0:
        return
    attempts = failed + (d.weight_sync_count or 0.0)
    share = failed / attempts
    row = d.weight_sync_failures_in_a_row or 0.0
    critical = share >= th.weight_sync_failure_share_critical or row >= th.weight_sync_failures_in_a_row_critical
    level: Level = "critical" if critical else "warn"
    run = f", {row:.0f} since the last success" if row > 0 else ""
    yield ("weight_sync_failing", level,
           f"{failed:.0f} of {attempts:.0f} weight syncs failed in the window ({share:.0%}{run})", None)


def _staleness(d: Dashboard, th: Thresholds) -> Iterable[tuple[str, Level, str, str | None]]:
    """The furthest-behind worker over a staleness limit: it is the subject (with 64 workers an alert
    naming none cannot be acted on), and the message counts the workers over that limit."""
    lag = d.staleness_max
    above = _above(lag, th.staleness_warn, th.staleness_critical)
    if not above or lag is None:
        return
    level, limit = above
    lags = [(w.staleness, w.name) for w in d.workers if w.staleness is not None]
    if not lags:
        yield ("staleness", level, f"rollouts {_fmt(lag)} policy versions behind the trainer (> {_fmt(limit)})",
               None)
        return
    worst = min(lags, key=lambda x: (-x[0], x[1]))[1]  # the most behind; ties: the first name
    over = sum(1 for v, _ in lags if v > limit)
    yield ("staleness", level,
           f"{worst} samples {_fmt(lag)} policy versions behind the trainer (> {_fmt(limit)}); "
           f"{over} of {len(lags)} workers over {_fmt(limit)}", worst)


def _policy_not_advancing(d: Dashboard, th: Thresholds) -> Iterable[tuple[str, Level, str, str | None]]:
    """The published version held over ``policy_stuck_s`` while the trainer stepped and syncs were tried:
    training goes on, the fleet's weights do not (critical, as a stall: the steps train on ever older data)."""
    held, steps, tried = d.policy_held_s, d.policy_held_steps, d.policy_held_sync_attempts
    if held is None or held <= th.policy_stuck_s or not steps or steps <= 0 or not tried or tried <= 0:
        return
    version = "the policy version" if d.policy_version is None else f"policy version {d.policy_version:.0f}"
    yield ("policy_not_advancing", "critical",
           f"{version} has not moved for {fmt_duration(held)} (limit {fmt_duration(th.policy_stuck_s)}) "
           f"while the trainer took {steps:.0f} steps and tried {tried:.0f} weight syncs", None)


def evaluate(dashboard: Dashboard, thresholds: Thresholds, *, previous: Iterable[Alert] = (),
             marginal_k: int = 5) -> tuple[Alert, ...]:
    """The alerts firing on ``dashboard``, critical first.

    ``previous``: the last evaluation's alerts; one still firing keeps its
    ``since``. ``marginal_k``: evals the marginal-IPD rule needs before it
    judges (Settings.marginal_k): two noisy evals are not a trend.
    """
    since = {(a.name, a.subject): a.since for a in previous}
    alerts = [Alert(name=name, level=level, message=message, since=since.get((name, subject), dashboard.now),
                    subject=subject)
              for name, level, message, subject in (*_candidates(dashboard, thresholds, marginal_k),
                                                    *_stale_push(dashboard, thresholds))]
    alerts.sort(key=lambda a: (a.level != "critical", a.name, a.subject or ""))
    return tuple(alerts)
