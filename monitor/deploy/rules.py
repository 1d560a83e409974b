"""Prometheus recording and alerting rules, generated from the code the TUI runs.

Why generated: a rule file written by hand drifts from the numbers it claims
to compute. Here every expression comes from ``ptmon.monitor.promql`` (the PromQL
the ``--prometheus`` source runs), every name from ``ptmon.exporters.schema`` and
every alert threshold from ``monitor.settings.Thresholds()``'s defaults, so a
Grafana panel, a recorded series, a Prometheus alert and the TUI agree, and a
changed default changes the shipped files (a test fails until they are
regenerated).

Alerts use raw expressions, not the recorded series, so the alert file works
on its own and an alert does not lag its recording rule by one evaluation.
Where PromQL cannot say exactly what ``ptmon.monitor.alerts`` says (the last K
evals, the best score of the whole run), the closest window is used and the
difference is written next to the rule and in the deploy notes.

Per run: one company Prometheus usually holds several runs at once, and
comparing run A's trainer with run B's workers (or summing their spend)
gives wrong answers. Every number that belongs to a run is therefore
grouped by the ``run`` label of ``posttrain_run_info``, joined onto each
target's series on (job, instance) (``promql.run_join``). Per-run numbers
count only targets exposing run info, which every ptmon exporter does; the
per-target rollout rules keep a target without it (a hand-written exporter),
just without a ``run`` label.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.settings import MEDIAN_SLOT_S, MEDIAN_WINDOW_S, RECENT_RATE_S, Settings, Thresholds

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
    "SCRAPE_INTERVAL_S",
    "STALENESS_OFFSET",
]

WINDOW = "5m"  # the TUI's default window (Settings.window_s = 300 s): same numbers as its default screen
# Evals are sparse (every 10-30 minutes in real runs): intelligence per dollar needs a window that holds
# several, and K = 5 evals for the marginal alert.
IPD_WINDOW = "2h"
_BEST_SCORE_WINDOW = "1d"  # the TUI remembers the best eval of the whole run; a rule looks back a day
_SEEN_WINDOW = "1h"  # the TUI's store keeps an hour: a target seen in it is still one of ours
_MEDIAN_STEP = promql.duration(MEDIAN_SLOT_S)  # the TUI's median slots: max(2 x interval, MEDIAN_SLOT_S) wide
SCRAPE_JOB = "ptmon"  # the shipped scrape config's job (a targets file may set its own job label)
DEMO_JOB_PREFIX = schema.DEMO_JOB_PREFIX  # the demo's jobs: posttrain-trainer, posttrain-rollout, posttrain-eval
_PTMON_JOBS = f"{SCRAPE_JOB}|{DEMO_JOB_PREFIX}.+"
_PER_RUN = "run"  # recording-rule level for a run's numbers (label run left)
_PER_TARGET = "job_instance"  # per target (job, instance; plus run when the target exposes run info)
_PER_RUN_BENCHMARK = "run_benchmark"
_RUN = promql.RUN_LABEL
_RUN_NAME = "run {{ $labels.run }}: "  # alert summaries name the run
SCRAPE_INTERVAL_S = 5.0  # the shipped scrape config's interval (ptmon.monitor.deploy.files.SCRAPE_INTERVAL)
# A worker's latest sample is compared with the trainer as it was this long ago: one scrape interval (a
# worker's latest sample is at most that old) and a margin for a late scrape (promql.trainer_version).
STALENESS_OFFSET = promql.duration(SCRAPE_INTERVAL_S + 1.0)


@dataclass(frozen=True, slots=True)
class RecordingRule:
    record: str
    expr: str
    help: str  # written as a comment-free description in the notes and tests

    def as_dict(self) -> dict[str, object]:
        return {"record": self.record, "expr": self.expr}


@dataclass(frozen=True, slots=True)
class AlertRule:
    """One Prometheus alerting rule; ``tui_rule`` is the ``ptmon.monitor.alerts`` rule it mirrors."""

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


def score_expr(*, runs: str = "") -> str:
    """Eval score per run and benchmark (one eval job per benchmark is the usual set-up; max picks one if not)."""
    return f"max by ({_RUN}, benchmark) ({promql.with_run(schema.EVAL_SCORE.name, runs=runs)})"


def ipd_expr(window: str = IPD_WINDOW, *, runs: str = "") -> str:
    """Intelligence per dollar over ``window``: the score's least-squares slope per dollar at its burn then, x 1000.

    The score gained per dollar along the line fitted to every eval of the
    window (slope per second / dollars per second over the same window), so
    it means the same on Prometheus and VictoriaMetrics, and on a run younger
    than the window: ``deriv`` fits the same samples on both, where ``delta``
    of a gauge that starts inside the range is extrapolated by one and
    counted from 0 by the other (2x on a healthy run, the sign flipped on a
    plateau). Unknown while nothing is spent. Per run and benchmark.
    """
    slope = promql.with_run(f"deriv({schema.EVAL_SCORE.name}[{window}])", runs=runs)
    return (f"1000 * 3600 * max by ({_RUN}, benchmark) ({slope}) "
            f"/ on ({_RUN}) group_left () ({promql.burn_dollars_per_hour(window, per_run=True, runs=runs)} > 0)")


def marginal_ipd_expr(window: str = IPD_WINDOW, burn_window: str = WINDOW, *, runs: str = "") -> str:
    """Marginal intelligence per dollar: score's least-squares slope per second / dollars per second now x 1000.

    The TUI fits score against spend over the last K evals; with a steady
    burn, score-vs-time slope divided by $/s is that slope. ``deriv`` works
    on the raw gauge, so no subquery is needed. The same slope as
    ``ipd_expr`` over the burn of the last ``burn_window``: what the next
    dollar buys, not the window's average. Per run and benchmark.
    """
    slope = promql.with_run(f"deriv({schema.EVAL_SCORE.name}[{window}])", runs=runs)
    return (f"1000 * 3600 * max by ({_RUN}, benchmark) ({slope}) "
            f"/ on ({_RUN}) group_left () ({promql.burn_dollars_per_hour(burn_window, per_run=True, runs=runs)} > 0)")


def worker_staleness_expr(by: tuple[str, ...] = promql.TARGET_BY, *, runs: str = "",
                          behind: str = STALENESS_OFFSET) -> str:
    """Versions each worker lags the trainer, at least 0 (as the TUI's rows).

    Prometheus scrapes the trainer and a worker at different moments, so a
    worker can read a version ahead of the trainer's last scrape for a few
    seconds; that is no lag, not negative lag. And the trainer's last scrape
    can be newer than the worker's: the trainer as it was ``behind`` ago (a
    shipped scrape interval and a margin) is at or before the worker's sample,
    as the TUI compares each worker with the trainer at its own sample's time.
    Each worker against its own run's trainer (label ``run`` added); a worker
    without run info has no trainer to lag and is left out.
    """
    trainer = promql.with_run(promql.trainer_version(behind), runs=runs)
    workers = promql.with_run(schema.ROLLOUT_POLICY_VERSION.name, runs=runs)
    grouping = ", ".join((_RUN, *(b for b in by if b != _RUN)))
    return (f"clamp_min(max by ({_RUN}) ({trainer}) - on ({_RUN}) group_right () "
            f"max by ({grouping}) ({workers}), 0)")


def per_target_rate_expr(spec: schema.MetricSpec, window: str = WINDOW) -> str:
    """Rate per target, labelled with its run when it exposes run info, and without ``run`` otherwise.

    A hand-written exporter without ``posttrain_run_info`` still has a
    per-target rate; it just cannot be put in a run.
    """
    return (f"{promql.rate(spec, window, by=promql.TARGET_BY, per_run=True)} "
            f"or on ({', '.join(promql.TARGET_BY)}) {promql.rate(spec, window, by=promql.TARGET_BY)}")


def recording_rules() -> list[RecordingRule]:
    """Every recorded series, in the order of the rules file (level:metric:operations names)."""
    w = WINDOW
    rules = [
        RecordingRule(f"{_PER_RUN}:rollouts_per_second:rate{w}", promql.rate(schema.ROLLOUTS, w, per_run=True),
                      "rollouts/s of each run's fleet, every outcome"),
        RecordingRule(f"{_PER_TARGET}:rollouts_per_second:rate{w}", per_target_rate_expr(schema.ROLLOUTS),
                      "rollouts/s per worker (label run when it exposes run info)"),
        RecordingRule(f"{_PER_RUN}:rollout_tokens_per_second:rate{w}",
                      promql.rate(schema.ROLLOUT_TOKENS, w, per_run=True), "rollout tokens/s of each run's fleet"),
        RecordingRule(f"{_PER_TARGET}:rollout_tokens_per_second:rate{w}", per_target_rate_expr(schema.ROLLOUT_TOKENS),
                      "rollout tokens/s per worker (label run when it exposes run info)"),
    ]
    for key, q in promql.QUANTILES.items():
        rules.append(RecordingRule(f"{_PER_RUN}:weight_sync_seconds:{key}_{w}",
                                   promql.sync_quantile(q, w, per_run=True),
                                   f"weight-sync latency {key} over {w}, per run"))
    rules += [
        RecordingRule(f"{_PER_RUN}:staleness_versions:max", promql.staleness_max(per_run=True, behind=STALENESS_OFFSET),
                      "policy versions the run's furthest-behind worker lags its trainer"),
        RecordingRule(f"{_PER_TARGET}:staleness_versions:current", worker_staleness_expr(),
                      "policy versions each worker lags its run's trainer (label run)"),
        RecordingRule(f"{_PER_RUN}:spend_dollars:total", promql.spend_dollars(per_run=True),
                      "dollars each run spent per the GPU-seconds counters (a restarted process starts again at 0)"),
        RecordingRule(f"{_PER_RUN}:spend_dollars:increase{IPD_WINDOW}", promql.spend_dollars(IPD_WINDOW, per_run=True),
                      f"dollars each run spent over the last {IPD_WINDOW}, across restarts"),
        RecordingRule(f"{_PER_RUN}:burn_dollars_per_hour:rate{w}", promql.burn_dollars_per_hour(w, per_run=True),
                      "dollars per hour each run burns now"),
        RecordingRule(f"{_PER_RUN_BENCHMARK}:intelligence_per_kilodollar:slope{IPD_WINDOW}", ipd_expr(),
                      f"score points per $1k over the last {IPD_WINDOW} (least-squares score slope / the burn of "
                      f"those {IPD_WINDOW}), per run and benchmark"),
        RecordingRule(f"{_PER_RUN_BENCHMARK}:marginal_intelligence_per_kilodollar:deriv{IPD_WINDOW}",
                      marginal_ipd_expr(),
                      f"score slope over the last {IPD_WINDOW} per dollar at the 5m burn rate, per $1k, "
                      "per run and benchmark"),
    ]
    return rules


def _target_scope() -> str:
    """(job, instance) of every target that is ptmon's: in a ptmon job, or seen exposing run info lately."""
    by = ", ".join(promql.TARGET_BY)
    return (f"group by ({by}) (last_over_time({schema.RUN_INFO.name}[{_SEEN_WINDOW}])) "
            f"or group by ({by}) (up{{job=~\"{_PTMON_JOBS}\"}})")


def _trainers() -> str:
    by = ", ".join(promql.TARGET_BY)
    return (f"group by ({by}) (last_over_time({schema.RUN_INFO.name}{{{schema.LABEL_ROLE}=\"{schema.ROLE_TRAINER}\"}}"
            f"[{_SEEN_WINDOW}])) or group by ({by}) (up{{job=\"{DEMO_JOB_PREFIX}{schema.ROLE_TRAINER}\"}})")


def _with_run_if_known(expr: str) -> str:
    """Per-target ``expr`` with the target's run (from run info seen in the last hour) when it has one.

    A down target's run info is stale, hence the hour; a target that never
    exposed run info keeps its alert, without ``run`` (``or on (job, instance)``).
    """
    return (f"({expr}) * {promql.run_join(seen=_SEEN_WINDOW)} "
            f"or on ({', '.join(promql.TARGET_BY)}) ({expr})")


def _sync_failing_rules(th: Thresholds) -> list[AlertRule]:
    """weight_sync_failing per run. The TUI's "N since the last success" becomes "N in the window with no
    success in it" (PromQL sees counts, not their order); increase() extrapolates to the window's edges."""
    def total(spec: schema.MetricSpec, sample: str) -> str:
        return f"sum by ({_RUN}) ({promql.with_run(f'increase({sample}[{WINDOW}])')})"
    failed = total(schema.WEIGHT_SYNC_FAILURES, schema.WEIGHT_SYNC_FAILURES.name)
    ok = f"({total(schema.WEIGHT_SYNC_SECONDS, schema.WEIGHT_SYNC_SECONDS.count)} or 0 * {failed})"
    share, row = _n(th.weight_sync_failure_share_critical), _n(th.weight_sync_failures_in_a_row_critical)
    critical = (f"({failed} > 0) and (({failed} / ({failed} + {ok}) >= {share}) "
                f"or ({failed} >= {row} and {ok} <= 0))")
    why = f"Weight syncs that raised over {WINDOW}: a failed sync publishes no version, so staleness never shows it."
    return [
        AlertRule("PtmonWeightSyncFailing", "weight_sync_failing", "critical", critical,
                  _RUN_NAME + "weight syncs failing: {{ $value | printf \"%.3g\" }} failed in the last " + WINDOW
                  + " (at least " + f"{th.weight_sync_failure_share_critical:.0%}" + " of attempts, or " + row
                  + " with no success)", why),
        AlertRule("PtmonWeightSyncFailing", "weight_sync_failing", "warning",
                  f"({failed} > 0) unless on ({_RUN}) ({critical})",
                  _RUN_NAME + "{{ $value | printf \"%.3g\" }} weight syncs failed in the last " + WINDOW, why),
    ]


def alerting_rules(thresholds: Thresholds | None = None, *, marginal_k: int | None = None) -> list[AlertRule]:
    """The TUI's alert rules (``ptmon.monitor.alerts.RULES``) as Prometheus alerts, with its default thresholds.

    One Prometheus rule per level: a two-level TUI rule becomes a warning
    rule bounded above by the critical threshold and a critical rule, so
    exactly one of them fires, as the TUI shows one level.
    """
    th = thresholds or Thresholds()
    k = Settings().marginal_k if marginal_k is None else marginal_k
    return _loop_rules(th) + _progress_rules(th, k)


def _loop_rules(th: Thresholds) -> list[AlertRule]:
    """Is the loop running: targets down, the trainer stalled, weight syncs slow or failing."""
    on = f"on ({', '.join(promql.TARGET_BY)})"
    target = ("{{ with $labels.run }}run {{ . }}: {{ end }}"
              "{{ with $labels.ptmon_name }}{{ . }} {{ end }}({{ $labels.instance }}, job {{ $labels.job }})")
    down_trainer = f"up == 0 and {on} ({_trainers()})"
    down_other = f"(up == 0 and {on} ({_target_scope()})) unless {on} ({_trainers()})"
    rules = [
        AlertRule("PtmonTargetDown", "target_down", "critical", _with_run_if_known(down_trainer),
                  target + " is down",
                  "Prometheus's last scrape of the trainer failed: no steps, syncs or spend are being reported."),
        AlertRule("PtmonTargetDown", "target_down", "warning", _with_run_if_known(down_other),
                  target + " is down", "Prometheus's last scrape of this target failed."),
    ]

    # Per run: a run's freshest trainer step against that run's median step time. Run info is read over
    # the last hour, as the step timestamp is, so a trainer that went down still counts under its run.
    ts = promql.with_run(f"(last_over_time({schema.TRAINER_LAST_STEP_TIMESTAMP.name}[{_SEEN_WINDOW}]) > 0)",
                         seen=_SEEN_WINDOW)
    buckets = promql.with_run(f"last_over_time({schema.TRAINER_STEP_SECONDS.bucket}[{_SEEN_WINDOW}])",
                              seen=_SEEN_WINDOW)
    median_step = f"histogram_quantile(0.5, sum by (le, {_RUN}) ({buckets}))"
    floor = f"{_n(th.stall_min_s)} * group by ({_RUN}) (last_over_time({schema.RUN_INFO.name}[{_SEEN_WINDOW}]))"
    limit = f"((clamp_min({_n(th.stall_factor)} * {median_step}, {_n(th.stall_min_s)}) >= 0) or {floor})"
    rules.append(AlertRule(
        "PtmonTrainerStalled", "trainer_stalled", "critical",
        f"(time() - max by ({_RUN}) ({ts})) >= on ({_RUN}) {limit}",
        _RUN_NAME + "no training step for {{ $value | humanizeDuration }}",
        f"No step for at least max({_n(th.stall_factor)} x the median step time, {_n(th.stall_min_s)} s)."))

    p99 = promql.sync_quantile(promql.QUANTILES["p99"], WINDOW, per_run=True)
    warn_s, crit_s = _n(th.weight_sync_p99_warn_s), _n(th.weight_sync_p99_critical_s)
    rules += [
        AlertRule("PtmonWeightSyncSlow", "weight_sync_slow", "critical", f"{p99} > {crit_s}",
                  _RUN_NAME + "weight-sync p99 {{ $value | printf \"%.3g\" }} s > " + crit_s + " s",
                  f"99th percentile of trainer-to-inference weight-sync time over {WINDOW}."),
        AlertRule("PtmonWeightSyncSlow", "weight_sync_slow", "warning", f"{p99} > {warn_s} <= {crit_s}",
                  _RUN_NAME + "weight-sync p99 {{ $value | printf \"%.3g\" }} s > " + warn_s + " s",
                  f"99th percentile of trainer-to-inference weight-sync time over {WINDOW}."),
    ]

    rules += _sync_failing_rules(th)
    rules.append(_policy_not_advancing_rule(th))
    return rules


def _policy_not_advancing_rule(th: Thresholds) -> AlertRule:
    """policy_not_advancing per run: the trainer's version constant over the last ``policy_stuck_s`` while it
    stepped and tried syncs in them. The TUI counts from the version's last change; PromQL sees the range
    only, so a version must also have been there at its start (``offset``): a trainer younger than the limit
    has not held anything that long."""
    held = promql.duration(th.policy_stuck_s)
    version = schema.POLICY_VERSION.name

    def per_run(term: str) -> str:
        return f"max by ({_RUN}) ({promql.with_run(term)})"

    def grew(sample: str) -> str:
        return f"sum by ({_RUN}) ({promql.with_run(f'increase({sample}[{held}])')}) > 0"
    steps = grew(promql.counter(schema.TRAINER_STEPS))
    tried = f"({grew(schema.WEIGHT_SYNC_FAILURES.name)} or {grew(schema.WEIGHT_SYNC_SECONDS.count)})"
    expr = (f"{per_run(version)} and on ({_RUN}) ({per_run(f'changes({version}[{held}])')} == 0) "
            f"and on ({_RUN}) {per_run(f'{version} offset {held}')} "
            f"and on ({_RUN}) ({steps}) and on ({_RUN}) {tried}")
    return AlertRule(
        "PtmonPolicyNotAdvancing", "policy_not_advancing", "critical", expr,
        _RUN_NAME + "policy version {{ $value }} has not moved for over " + held
        + " while the trainer steps and tries weight syncs",
        "Every weight sync failed or published nothing new: the rollout fleet samples ever older weights "
        "while the trainer trains on them.")


def _progress_rules(th: Thresholds, k: int) -> list[AlertRule]:
    """Is it still buying progress: staleness, the rollout rate, marginal IPD, eval regression and age."""
    rules: list[AlertRule] = []
    # The run's furthest-behind worker (one per run: topk), with its job, instance and ptmon_name to name it.
    worst = f"topk by ({_RUN}) (1, {worker_staleness_expr((*promql.TARGET_BY, schema.TARGET_NAME_LABEL))})"
    warn_v, crit_v = _n(th.staleness_warn), _n(th.staleness_critical)
    worker = ("{{ with $labels.ptmon_name }}{{ . }} ({{ $labels.instance }}){{ else }}{{ $labels.instance }}"
              "{{ end }} samples {{ $value }} policy versions behind the trainer (> ")
    why = ("The run's furthest-behind rollout worker samples with a policy this many versions old (against the "
           f"trainer's version {STALENESS_OFFSET} ago, at or before the worker's sample: scrape skew is no lag).")
    rules += [
        AlertRule("PtmonStaleness", "staleness", "critical", f"{worst} > {crit_v}",
                  _RUN_NAME + worker + crit_v + ")", why),
        AlertRule("PtmonStaleness", "staleness", "warning", f"{worst} > {warn_v} <= {crit_v}",
                  _RUN_NAME + worker + warn_v + ")", why),
    ]

    recent = promql.duration(RECENT_RATE_S)
    ref = (f"quantile_over_time(0.5, ({promql.rate(schema.ROLLOUTS, recent, per_run=True)})"
           f"[{promql.duration(MEDIAN_WINDOW_S)}:{_MEDIAN_STEP}])")
    # A run whose workers are all gone has no rate at all: it counts as 0 (0 x its reference keeps its run).
    now = f"({promql.rate(schema.ROLLOUTS, recent, per_run=True)} or 0 * {ref})"
    ratio = _n(th.rollout_drop_ratio)
    rules += [
        AlertRule("PtmonRolloutRateDrop", "rollout_rate_drop", "critical", f"{now} <= 0 and ({ref} > 0)",
                  _RUN_NAME + "no rollouts in the last " + recent,
                  "The run's rollout rate fell to 0 from a positive 10-minute median."),
        AlertRule("PtmonRolloutRateDrop", "rollout_rate_drop", "warning",
                  f"({now} <= {ratio} * ({ref} > 0)) > 0",
                  _RUN_NAME + "rollout rate {{ $value | printf \"%.3g\" }}/s is at or below "
                  + f"{th.rollout_drop_ratio:.0%}" + " of its 10-minute median",
                  f"The run's rollouts/s over the last {recent} against the median of the last 10 minutes."),
    ]

    changes = promql.with_run(f"changes({schema.EVAL_POLICY_VERSION.name}[{IPD_WINDOW}])")
    evals = f"max by ({_RUN}, benchmark) ({changes}) >= {k - 1}"
    rules.append(AlertRule(
        "PtmonMarginalIPD", "marginal_ipd", "warning",
        f"({marginal_ipd_expr()} <= {_n(th.marginal_ipd_min)}) and on ({_RUN}, benchmark) ({evals})",
        _RUN_NAME + "{{ $labels.benchmark }}: marginal intelligence per dollar {{ $value | printf \"%.3g\" }} "
        "points/$1k (at or below " + _n(th.marginal_ipd_min) + "): money without progress",
        f"Least-squares score slope over the last {IPD_WINDOW} per dollar, judged once {k} evals are in it."))

    score = schema.EVAL_SCORE.name
    best = promql.with_run(f"max_over_time({score}[{_BEST_SCORE_WINDOW}])")
    drop = _n(th.eval_regression_points)
    rules.append(AlertRule(
        "PtmonEvalRegression", "eval_regression", "warning",
        f"{score_expr()} < max by ({_RUN}, benchmark) ({best}) - {drop}",
        _RUN_NAME + "{{ $labels.benchmark }} score {{ $value | printf \"%.3g\" }} is more than " + drop
        + " below its best of the last day",
        "The run's latest eval score regressed from the best one seen in the last day."))
    rules.append(_eval_stale_rule(th))
    return rules


def _eval_stale_rule(th: Thresholds) -> AlertRule:
    """The newest push of a run's eval groups to a Pushgateway is older than ``eval_push_max_age_s``.

    Read over the last day, as the TUI's store keeps a gateway's last push once it is gone: a dead gateway's
    series go stale in Prometheus, and an alert reading only fresh ones would stop exactly then. A group
    counts when it holds an eval score (its push time and score share every label but ``benchmark``).
    """
    w = _BEST_SCORE_WINDOW
    pushed = (f"(last_over_time({schema.PUSHGATEWAY_PUSH_TIME}[{w}]) and ignoring ({schema.LABEL_BENCHMARK}) "
              f"last_over_time({schema.EVAL_SCORE.name}[{w}]))")
    limit = _n(th.eval_push_max_age_s)
    return AlertRule(
        "PtmonEvalStale", "eval_stale", "warning",
        f"time() - max by ({_RUN}) ({promql.with_run(pushed, seen=w)}) > {limit}",
        _RUN_NAME + "last eval pushed {{ $value | humanizeDuration }} ago (over " + limit + " s)",
        "The newest eval group the run pushed to a Pushgateway is older than the limit: is the eval job running?")
