"""What the monitor is told: targets, timing, prices, benchmark, thresholds.

Plain frozen data. ``ptmon.monitor.config`` builds it from ptmon.toml and CLI flags
(with errors naming the file and key); everything else only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "Target",
    "Thresholds",
    "Settings",
    "DEFAULT_INTERVAL_S",
    "DEFAULT_WINDOW_S",
    "WINDOWS_S",
    "MEDIAN_WINDOW_S",
    "MEDIAN_SLOT_S",
    "RECENT_RATE_S",
    "CHART_POINTS",
    "chart_step_s",
    "median_slot_s",
    "evaluated_max_age_s",
]

DEFAULT_INTERVAL_S = 1.0
DEFAULT_WINDOW_S = 300.0
WINDOWS_S = (60.0, 300.0, 900.0, 3600.0)  # the TUI's [ / ] steps: 1m, 5m, 15m, 1h

# The rate-drop alert compares "the rollout rate now" (the chart's mean over the last RECENT_RATE_S) with
# its median over the last MEDIAN_WINDOW_S, taken over slots of median_slot_s; the shipped Prometheus rule
# (ptmon.monitor.deploy.rules) is written from the same numbers.
MEDIAN_WINDOW_S = 600.0
MEDIAN_SLOT_S = 10.0
RECENT_RATE_S = 30.0
CHART_POINTS = 120  # the rollout-rate chart: at most this many points over the window


def chart_step_s(window_s: float, interval_s: float) -> float:
    """The rollout-rate chart's step: ``CHART_POINTS`` over the window, never under two scrapes."""
    return max(2 * interval_s, window_s / CHART_POINTS)


def median_slot_s(interval_s: float) -> float:
    """The 10-minute median's slot: ``MEDIAN_SLOT_S``, never under two scrapes (a slot needs two points)."""
    return max(2 * interval_s, MEDIAN_SLOT_S)


def evaluated_max_age_s(interval_s: float) -> float:
    """How old a Prometheus server's answers may be and still stand for "now": three polls, at least one
    poll and 5 s (a slow server answers late); older, the stored samples' numbers are shown."""
    return max(3 * interval_s, interval_s + 5.0)


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: str
    role: str | None = None  # None: detect from posttrain_run_info, then from what it exposes
    bearer_token_file: str | None = None
    basic_auth: tuple[str, str] | None = None  # (username, password)
    ca_file: str | None = None
    verify_tls: bool = True


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Alert thresholds; warn and critical levels where a rule has both."""

    weight_sync_p99_warn_s: float = 30.0
    weight_sync_p99_critical_s: float = 120.0
    staleness_warn: float = 2.0  # policy versions behind the trainer
    staleness_critical: float = 4.0
    stall_min_s: float = 120.0  # trainer stalled: no step for max(stall_factor x median step, stall_min_s)
    stall_factor: float = 10.0
    rollout_drop_ratio: float = 0.5  # rate at or below this fraction of its 10-minute median
    marginal_ipd_min: float = 0.0  # points per $1k over the last K evals; at or below fires
    eval_regression_points: float = 0.02  # score this far below the best so far fires


@dataclass(frozen=True, slots=True)
class Settings:
    targets: tuple[Target, ...] = ()
    interval_s: float = DEFAULT_INTERVAL_S
    window_s: float = DEFAULT_WINDOW_S
    timeout_s: float | None = None  # None: 0.8 x interval, at least 0.25 s
    prices: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # role -> $/GPU-hour override
    primary_benchmark: str | None = None  # None: the first benchmark seen
    baseline_score: float | None = None  # None: the first eval seen
    baseline_spend_dollars: float | None = None
    marginal_k: int = 5
    thresholds: Thresholds = field(default_factory=Thresholds)
    max_series: int = 20_000
    max_body_bytes: int = 16 * 1024 * 1024
    concurrency: int = 16
    # Read this Prometheus-compatible server's query API instead of scraping targets (exclusive with targets).
    prometheus: Target | None = None
    # With ``prometheus``: only the targets whose posttrain_run_info says this run (a server holding several runs).
    run: str | None = None

    @property
    def effective_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return max(0.25, 0.8 * self.interval_s)
