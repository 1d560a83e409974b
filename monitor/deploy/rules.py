"""Prometheus recording and alerting rules, generated from the code the TUI runs.

Why generated: a rule file written by hand drifts from the numbers it claims
to compute. Here every expression comes from ``monitor.promql`` (the PromQL
the ``--prometheus`` source runs), every name from ``exporters.schema`` and
every alert threshold from ``monitor.settings.Thresholds()``'s defaults, so a
Grafana panel, a recorded series, a Prometheus alert and the TUI agree, and a
changed default changes the shipped files (a test fails until they are
regenerated).

Alerts use raw expressions, not the recorded series, so the alert file works
on its own and an alert does not lag its recording rule by one evaluation.
Where PromQL cannot say exactly what ``monitor.alerts`` says (the last K
evals, the best score of the whole run), the closest window is used and the
difference is written next to the rule and in the deploy notes.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporters import schema
from monitor import promql
from monitor.build import MEDIAN_WINDOW_S, RECENT_RATE_S
from monitor.settings import Settings, Thresholds

__all__ = [
    "WINDOW",
    "SCRAPE_JOB",
    "DEMO_JOB_PREFIX",
    "IPD_WINDOW",
    "RecordingRule",
    "AlertRule",
    "recording_rules",
    "alerting_rules",
    "ipd_expr",
    "marginal_ipd_expr",
    "score_expr",
    "worker_staleness_expr",
]

WINDOW = "5m"  # the TUI's default window (Settings.window_s = 300 s): same numbers as its default screen
# Evals are sparse (every 10-30 minutes in real runs): intelligence per dollar needs a window that holds
# several, and K = 5 evals for the marginal alert.
IPD_WINDOW = "2h"
_BEST_SCORE_WINDOW = "1d"  # the TUI remembers the best eval of the whole run; a rule looks back a day
_SEEN_WINDOW = "1h"  # the TUI's store keeps an hour: a target seen in it is still one of ours
_MEDIAN_STEP = "10s"  # the TUI's median slots are max(2 x interval, 10 s) wide
SCRAPE_JOB = "ptmon"  # the shipped scrape config's job (a targets file may set its own job label)
DEMO_JOB_PREFIX = "posttrain-"  # the demo's jobs: posttrain-trainer, posttrain-rollout, posttrain-eval
_PTMON_JOBS = f"{SCRAPE_JOB}|{DEMO_JOB_PREFIX}.+"
_LEVEL = "ptmon"  # recording-rule level for fleet-wide sums (no labels left)
_PER_TARGET = "job_instance"


@dataclass(frozen=True, slots=True)
class RecordingRule:
    record: str
    expr: str
    help: str  # written as a comment-free description in the notes and tests

    def as_dict(self) -> dict[str, object]:
        return {"record": self.record, "expr": self.expr}


@dataclass(frozen=True, slots=True)
class AlertRule:
    """One Prometheus alerting rule; ``tui_rule`` is the ``monitor.alerts`` rule it mirrors."""

    alert: str
    tui_rule: str
    severity: str  # "warning" or "critical" (the TUI's "warn" / "critical")
    expr: str
    summary: str
    description: str

    def as_dict(self) -> dict[str, object]:
        return {"alert": self.alert, "expr": self.expr,
                "labels": {"severity": self.severity, "ptmon_rule": self.tui_rule},
                "annotations": {"summary": self.summary, "description": self.description}}


def _n(x: float) -> str:
    """A threshold as PromQL writes it: 30 not 30.0, 0.02 as is."""
    return f"{x:g}"


def score_expr() -> str:
    """Eval score per benchmark (one eval job per benchmark is the usual set-up; max picks one if not)."""
    return f"max by (benchmark) ({schema.EVAL_SCORE.name})"


def ipd_expr(window: str = IPD_WINDOW) -> str:
    """Intelligence per dollar over ``window``: score change / spend over the same samples x 1000.

    Score change and spend come from the same range, so on a run younger
    than the window this is the score gained per dollar since the start (the
    TUI's number with the first eval as baseline, give or take half a scrape
    interval: ``delta`` extrapolates the score half an interval before its
    first sample, ``increase`` a counter born at 0 not below zero); on an
    older run, the last ``window``'s. Unknown while nothing was spent.
    """
    return (f"1000 * max by (benchmark) (delta({schema.EVAL_SCORE.name}[{window}])) "
            f"/ on () group_left () ({promql.spend_dollars(window)} > 0)")


def marginal_ipd_expr(window: str = IPD_WINDOW, burn_window: str = WINDOW) -> str:
    """Marginal intelligence per dollar: score's least-squares slope per second / dollars per second x 1000.

    The TUI fits score against spend over the last K evals; with a steady
    burn, score-vs-time slope divided by $/s is that slope. ``deriv`` works
    on the raw gauge, so no subquery is needed.
    """
    return (f"1000 * 3600 * max by (benchmark) (deriv({schema.EVAL_SCORE.name}[{window}])) "
            f"/ on () group_left () ({promql.burn_dollars_per_hour(burn_window)} > 0)")


def worker_staleness_expr(by: tuple[str, ...] = promql.TARGET_BY) -> str:
    """Versions each worker lags the trainer, at least 0 (as the TUI's rows).

    Prometheus scrapes the trainer and a worker at different moments, so a
    worker can read a version ahead of the trainer's last scrape for a few
    seconds; that is no lag, not negative lag.
    """
    return (f"clamp_min(max({schema.POLICY_VERSION.name}) - on () group_right () "
            f"max by ({', '.join(by)}) ({schema.ROLLOUT_POLICY_VERSION.name}), 0)")


def recording_rules() -> list[RecordingRule]:
    """Every recorded series, in the order of the rules file (level:metric:operations names)."""
    w = WINDOW
    rules = [
        RecordingRule(f"{_LEVEL}:rollouts_per_second:rate{w}", promql.rate(schema.ROLLOUTS, w),
                      "rollouts/s of the whole fleet, every outcome"),
        RecordingRule(f"{_PER_TARGET}:rollouts_per_second:rate{w}",
                      promql.rate(schema.ROLLOUTS, w, by=promql.TARGET_BY), "rollouts/s per worker"),
        RecordingRule(f"{_LEVEL}:rollout_tokens_per_second:rate{w}", promql.rate(schema.ROLLOUT_TOKENS, w),
                      "rollout tokens/s of the whole fleet"),
        RecordingRule(f"{_PER_TARGET}:rollout_tokens_per_second:rate{w}",
                      promql.rate(schema.ROLLOUT_TOKENS, w, by=promql.TARGET_BY), "rollout tokens/s per worker"),
    ]
    for key, q in promql.QUANTILES.items():
        rules.append(RecordingRule(f"{_LEVEL}:weight_sync_seconds:{key}_{w}", promql.sync_quantile(q, w),
                                   f"weight-sync latency {key} over {w}"))
    rules += [
        RecordingRule(f"{_LEVEL}:staleness_versions:max", promql.staleness_max(),
                      "policy versions the furthest-behind worker lags the trainer"),
        RecordingRule(f"{_PER_TARGET}:staleness_versions:current", worker_staleness_expr(),
                      "policy versions each worker lags the trainer"),
        RecordingRule(f"{_LEVEL}:spend_dollars:total", promql.spend_dollars(),
                      "dollars spent per the GPU-seconds counters (a restarted process starts again at 0)"),
        RecordingRule(f"{_LEVEL}:spend_dollars:increase{IPD_WINDOW}", promql.spend_dollars(IPD_WINDOW),
                      f"dollars spent over the last {IPD_WINDOW}, across restarts"),
        RecordingRule(f"{_LEVEL}:burn_dollars_per_hour:rate{w}", promql.burn_dollars_per_hour(w),
                      "dollars per hour now"),
        RecordingRule(f"benchmark:intelligence_per_kilodollar:delta{IPD_WINDOW}", ipd_expr(),
                      f"score points per $1k over the last {IPD_WINDOW}"),
        RecordingRule(f"benchmark:marginal_intelligence_per_kilodollar:deriv{IPD_WINDOW}", marginal_ipd_expr(),
                      f"score slope over the last {IPD_WINDOW} per dollar at the 5m burn rate, per $1k"),
    ]
    return rules


def _target_scope() -> str:
    """(job, instance) of every target that is ptmon's: in a ptmon job, or seen exposing run info lately."""
    by = ", ".join(promql.TARGET_BY)
    return (f"group by ({by}) (last_over_time({schema.RUN_INFO.name}[{_SEEN_WINDOW}])) "
            f"or group by ({by}) (up{{job=~\"{_PTMON_JOBS}\"}})")


def _trainers() -> str:
    by = ", ".join(promql.TARGET_BY)
    return (f"group by ({by}) (last_over_time({schema.RUN_INFO.name}{{role=\"{schema.ROLE_TRAINER}\"}}"
            f"[{_SEEN_WINDOW}])) or group by ({by}) (up{{job=\"{DEMO_JOB_PREFIX}{schema.ROLE_TRAINER}\"}})")


def alerting_rules(thresholds: Thresholds | None = None, *, marginal_k: int | None = None) -> list[AlertRule]:
    """The TUI's seven alert rules (``monitor.alerts.RULES``) as Prometheus alerts, with its default thresholds.

    One Prometheus rule per level: a two-level TUI rule becomes a warning
    rule bounded above by the critical threshold and a critical rule, so
    exactly one of them fires, as the TUI shows one level.
    """
    th = thresholds or Thresholds()
    k = Settings().marginal_k if marginal_k is None else marginal_k
    on = f"on ({', '.join(promql.TARGET_BY)})"
    target = "{{ with $labels.ptmon_name }}{{ . }} {{ end }}({{ $labels.instance }}, job {{ $labels.job }})"
    rules = [
        AlertRule("PtmonTargetDown", "target_down", "critical", f"up == 0 and {on} ({_trainers()})",
                  target + " is down",
                  "Prometheus's last scrape of the trainer failed: no steps, syncs or spend are being reported."),
        AlertRule("PtmonTargetDown", "target_down", "warning",
                  f"(up == 0 and {on} ({_target_scope()})) unless {on} ({_trainers()})",
                  target + " is down", "Prometheus's last scrape of this target failed."),
    ]

    ts = schema.TRAINER_LAST_STEP_TIMESTAMP.name
    step_buckets = schema.TRAINER_STEP_SECONDS.bucket
    median_step = f"histogram_quantile(0.5, sum by (le) (last_over_time({step_buckets}[{_SEEN_WINDOW}])))"
    limit = f"((clamp_min({_n(th.stall_factor)} * {median_step}, {_n(th.stall_min_s)}) >= 0) or vector({_n(th.stall_min_s)}))"
    rules.append(AlertRule(
        "PtmonTrainerStalled", "trainer_stalled", "critical",
        f"(time() - max(last_over_time({ts}[{_SEEN_WINDOW}]) > 0)) >= {limit}",
        "no training step for {{ $value | humanizeDuration }}",
        f"No step for at least max({_n(th.stall_factor)} x the median step time, {_n(th.stall_min_s)} s)."))

    p99 = promql.sync_quantile(promql.QUANTILES["p99"], WINDOW)
    warn_s, crit_s = _n(th.weight_sync_p99_warn_s), _n(th.weight_sync_p99_critical_s)
    rules += [
        AlertRule("PtmonWeightSyncSlow", "weight_sync_slow", "critical", f"{p99} > {crit_s}",
                  "weight-sync p99 {{ $value | printf \"%.3g\" }} s > " + crit_s + " s",
                  f"99th percentile of trainer-to-inference weight-sync time over {WINDOW}."),
        AlertRule("PtmonWeightSyncSlow", "weight_sync_slow", "warning", f"{p99} > {warn_s} <= {crit_s}",
                  "weight-sync p99 {{ $value | printf \"%.3g\" }} s > " + warn_s + " s",
                  f"99th percentile of trainer-to-inference weight-sync time over {WINDOW}."),
    ]

    stale = promql.staleness_max()
    warn_v, crit_v = _n(th.staleness_warn), _n(th.staleness_critical)
    rules += [
        AlertRule("PtmonStaleness", "staleness", "critical", f"{stale} > {crit_v}",
                  "rollouts {{ $value }} policy versions behind the trainer (> " + crit_v + ")",
                  "The furthest-behind rollout worker samples with a policy this many versions old."),
        AlertRule("PtmonStaleness", "staleness", "warning", f"{stale} > {warn_v} <= {crit_v}",
                  "rollouts {{ $value }} policy versions behind the trainer (> " + warn_v + ")",
                  "The furthest-behind rollout worker samples with a policy this many versions old."),
    ]

    recent = promql.duration(RECENT_RATE_S)
    now = f"({promql.rate(schema.ROLLOUTS, recent)} or vector(0))"
    ref = (f"quantile_over_time(0.5, ({promql.rate(schema.ROLLOUTS, recent)})"
           f"[{promql.duration(MEDIAN_WINDOW_S)}:{_MEDIAN_STEP}])")
    ratio = _n(th.rollout_drop_ratio)
    rules += [
        AlertRule("PtmonRolloutRateDrop", "rollout_rate_drop", "critical", f"{now} <= 0 and ({ref} > 0)",
                  "no rollouts in the last " + recent,
                  "The rollout rate fell to 0 from a positive 10-minute median."),
        AlertRule("PtmonRolloutRateDrop", "rollout_rate_drop", "warning",
                  f"({now} <= {ratio} * ({ref} > 0)) > 0",
                  "rollout rate {{ $value | printf \"%.3g\" }}/s is at or below " + f"{th.rollout_drop_ratio:.0%}"
                  + " of its 10-minute median",
                  f"Rollouts/s over the last {recent} against the median of the last 10 minutes."),
    ]

    evals = f"max by (benchmark) (changes({schema.EVAL_POLICY_VERSION.name}[{IPD_WINDOW}])) >= {k - 1}"
    rules.append(AlertRule(
        "PtmonMarginalIPD", "marginal_ipd", "warning",
        f"({marginal_ipd_expr()} <= {_n(th.marginal_ipd_min)}) and on (benchmark) ({evals})",
        "{{ $labels.benchmark }}: marginal intelligence per dollar {{ $value | printf \"%.3g\" }} points/$1k "
        "(at or below " + _n(th.marginal_ipd_min) + "): money without progress",
        f"Least-squares score slope over the last {IPD_WINDOW} per dollar, judged once {k} evals are in it."))

    score = schema.EVAL_SCORE.name
    drop = _n(th.eval_regression_points)
    rules.append(AlertRule(
        "PtmonEvalRegression", "eval_regression", "warning",
        f"{score} < max_over_time({score}[{_BEST_SCORE_WINDOW}]) - {drop}",
        "{{ $labels.benchmark }} score {{ $value | printf \"%.3g\" }} is more than " + drop
        + " below its best of the last day",
        "The latest eval score regressed from the best one seen in the last day."))
    return rules
