"""The Dashboard: one immutable snapshot of everything ptmon shows.

The TUI, ``ptmon snapshot`` and the tests read only this. Every number that
can't be known yet (no data, empty window, a single eval) is ``None``, never a
made-up zero: the UI shows "—" and JSON shows null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Dashboard",
    "TargetHealth",
    "WorkerRow",
    "EvalPoint",
    "Alert",
    "Level",
    "Point",
]

Level = Literal["ok", "warn", "critical"]
Point = tuple[float, float]  # (unix time or dollars, value)


@dataclass(frozen=True, slots=True)
class TargetHealth:
    """Health of one scrape target, as the scraper last saw it."""

    name: str
    url: str
    role: str | None  # trainer, rollout, eval, engine, gpu; None while unknown
    up: bool | None  # None: not scraped yet
    last_scrape: float | None = None  # unix time the last attempt ended
    last_success: float | None = None
    scrape_seconds: float | None = None
    samples: int = 0
    series: int = 0
    dropped_series: int = 0
    error: str | None = None  # short, human; raw text from the peer, render literally
    # False: it answers, but with no series ptmon reads (a node exporter, say): "up · nothing recognised";
    # None: not known (never answered).
    recognised: bool | None = None
    age_s: float | None = None  # now - the last successful scrape; None: never succeeded (or not measured)
    # Numbers it sends that ptmon refuses to use (a price below zero, say), in words; raw text: render literally.
    warning: str | None = None

    def is_old(self, stale_after_s: float | None) -> bool:
        """Its numbers are older than ``stale_after_s`` (the Dashboard's): shown, but said to be old."""
        return self.age_s is not None and stale_after_s is not None and self.age_s > stale_after_s


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """One rollout worker (a rollout target, or an inference engine)."""

    name: str
    role: str
    up: bool | None
    rollouts_per_s: float | None
    tokens_per_s: float | None
    policy_version: float | None
    staleness: float | None
    mean_reward: float | None
    status: str  # "ok", "down", "stale", "slow", "unknown"; short text for the table


@dataclass(frozen=True, slots=True)
class EvalPoint:
    """One eval result placed on the intelligence-per-dollar curve."""

    timestamp: float
    spend_dollars: float
    score: float
    policy_version: float | None = None
    samples: float | None = None
    pushed: bool = False  # came through a Pushgateway: ``timestamp`` is its group's push time


@dataclass(frozen=True, slots=True)
class Alert:
    name: str  # rule name, e.g. "target_down", "trainer_stalled"
    level: Level  # "warn" or "critical"
    message: str  # may contain scraped text: render literally
    since: float  # unix time the condition was first seen
    subject: str | None = None  # target or worker the alert is about


@dataclass(frozen=True, slots=True)
class Dashboard:
    now: float
    window_s: float
    interval_s: float

    # identity (from posttrain_run_info)
    run: str | None = None
    model: str | None = None
    algorithm: str | None = None
    started_at: float | None = None  # run start (earliest _created), else earliest data seen; uptime = now - it

    targets: tuple[TargetHealth, ...] = ()
    workers: tuple[WorkerRow, ...] = ()
    # A target's data older than this is old (about 2 intervals plus the scrape timeout); None: not judged.
    stale_after_s: float | None = None

    # rollout side
    rollout_rate_per_s: float | None = None
    rollout_tokens_per_s: float | None = None
    rollout_rate_median_10m: float | None = None  # for the trend arrow and the rate-drop alert
    rollout_error_rate_per_s: float | None = None
    engine_tokens_per_s: float | None = None  # vLLM / SGLang generation tokens/s
    engine_requests_running: float | None = None
    engine_queue_depth: float | None = None
    engine_kv_cache_usage: float | None = None  # 0..1, max over engines

    # weight sync
    weight_sync_p50_s: float | None = None
    weight_sync_p90_s: float | None = None
    weight_sync_p99_s: float | None = None
    weight_sync_last_s: float | None = None
    weight_sync_max_s: float | None = None
    weight_sync_count: float | None = None  # syncs in the window
    weight_sync_bytes_per_s: float | None = None
    weight_sync_failures: float | None = None  # failures in the window
    weight_sync_failures_in_a_row: float | None = None  # failures in the window after its last success
    # last, max and the chart's points are per-scrape means: some scrape interval held several syncs (a
    # server scraping every 5 s, or syncs faster than the scrapes); False: each one is a sync's own duration
    weight_sync_averaged: bool = False

    # staleness (trainer policy version - worker policy version)
    policy_version: float | None = None
    # since the published version last moved (stored history): how long, the trainer's steps, syncs tried
    policy_held_s: float | None = None
    policy_held_steps: float | None = None
    policy_held_sync_attempts: float | None = None
    staleness_max: float | None = None
    staleness_mean: float | None = None
    # the framework's own, as it defines them (ptmon.monitor.sections.framework): (source, mean, max, definition)
    # per source of posttrain_sample_staleness, and (reason, share of wall time, $/h burnt waiting or None,
    # definition) per bubble a framework timed
    framework_staleness: tuple[tuple[str, float | None, float | None, str], ...] = ()
    bubbles: tuple[tuple[str, float, float | None, str], ...] = ()

    # trainer
    steps_per_s: float | None = None
    step_seconds: float | None = None  # mean step time over the window
    step_seconds_median: float | None = None
    seconds_since_last_step: float | None = None
    trainer_tokens_per_s: float | None = None
    loss: float | None = None
    kl: float | None = None
    entropy: float | None = None
    grad_norm: float | None = None
    learning_rate: float | None = None
    # what a training loop serves of itself (SkyRL's Ray gauges): the macro-phase it is in (literal scraped
    # text, e.g. "sync_weights"; None between phases or unknown) and its generation buffer's depth and capacity
    trainer_phase: str | None = None
    generation_buffer: float | None = None
    generation_buffer_max: float | None = None

    # GPUs (DCGM)
    gpu_util_percent: float | None = None  # mean over GPUs
    gpu_power_watts: float | None = None  # sum over GPUs

    # cost
    spend_dollars: float | None = None
    spend_by_role: tuple[tuple[str, float], ...] = ()
    # targets whose GPU count is unknown (an exporter given none): spend, burn and $/token are unknown, not $0
    gpus_unknown: tuple[str, ...] = ()
    burn_dollars_per_hour: float | None = None
    dollars_per_million_rollout_tokens: float | None = None

    # intelligence per dollar (primary benchmark)
    benchmark: str | None = None
    score: float | None = None
    baseline_score: float | None = None
    baseline_spend_dollars: float | None = None
    eval_samples: float | None = None
    ipd_points_per_kilodollar: float | None = None
    marginal_ipd_points_per_kilodollar: float | None = None
    dollars_per_next_point: float | None = None  # dollars for the next ``eval_point`` of score (marginal)
    # The ± of each (one standard error, from the evals' binomial errors); None: not known.
    score_se: float | None = None
    ipd_se_points_per_kilodollar: float | None = None
    marginal_ipd_se_points_per_kilodollar: float | None = None
    eval_point: float = 0.01  # the score step "$ per next point" prices ([eval] point)
    next_point_never: bool = False  # the marginal slope is <= 0: no amount buys the next point
    # The budget ETA to ``target_score`` ([eval] target_score; None: not configured, no ETA): its status
    # (unknown, reached, estimated, never, unreachable), dollars and hours with their ±.
    target_score: float | None = None
    eta_status: str | None = None
    eta_dollars: float | None = None
    eta_dollars_se: float | None = None
    eta_hours: float | None = None
    eta_hours_se: float | None = None
    eta_maybe_never: bool = False
    eval_pushed_at: float | None = None  # the last push of an eval group to a Pushgateway (push_time_seconds)

    # chart series over the window
    eval_curve: tuple[EvalPoint, ...] = ()
    rollout_rate_series: tuple[Point, ...] = ()  # (t, rollouts/s)
    weight_sync_series: tuple[Point, ...] = ()  # (t, seconds of one sync; a scrape's mean when averaged)
    sync_events: tuple[float, ...] = ()  # unix times of syncs in the window

    alerts: tuple[Alert, ...] = field(default=())

    @property
    def targets_up(self) -> int:
        return sum(1 for t in self.targets if t.up)

    @property
    def uptime_s(self) -> float | None:
        return None if self.started_at is None else max(0.0, self.now - self.started_at)

    @property
    def level(self) -> Level:
        """Worst alert level on the dashboard."""
        if any(a.level == "critical" for a in self.alerts):
            return "critical"
        if self.alerts:
            return "warn"
        return "ok"
