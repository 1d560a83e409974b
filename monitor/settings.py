"""What the monitor is told: targets, timing, prices, benchmark, thresholds.

Plain frozen data. ``ptmon.monitor.config`` builds it from ptmon.toml and CLI flags
(with errors naming the file and key); everything else only reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

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
    "DEFAULT_MAX_SERIES",
    "DEFAULT_MAX_LABEL_BYTES",
    "DEFAULT_MAX_BODY_BYTES",
    "PROMETHEUS_MAX_BODY_BYTES",
    "MIN_TIMEOUT_S",
    "MIN_INTERVAL_S",
    "effective_timeout",
    "stale_after_s",
    "timeout_fits",
    "window_fits",
    "fit_timing",
    "secret_problem",
    "buffer_warning",
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

# Sources' limits: what one peer may cost before it is refused with a clear error instead.
DEFAULT_MAX_SERIES = 20_000  # per target; new series past it are dropped, counted and the target flagged
# What a target's stored label sets may take (text plus Python's per-label and per-series overhead, see
# ptmon.monitor.store.label_cost): 20,000 ordinary series of 10 labels take ~65 MB, so the series cap
# binds first for them; a target churning fat label values is refused here instead of growing for an hour.
DEFAULT_MAX_LABEL_BYTES = 64 * 2**20
DEFAULT_MAX_BODY_BYTES = 16 * 2**20  # one /metrics body, inflated
# A Prometheus answer covers the whole fleet (and, once, the window's history): a larger default cap.
PROMETHEUS_MAX_BODY_BYTES = 64 * 2**20
MIN_TIMEOUT_S = 0.25
# Faster than this a monitor only loads its targets: nothing on screen moves at 10 Hz (and a typo
# like 1e-7 would hammer every target at a thousand requests a second).
MIN_INTERVAL_S = 0.1
_TIMEOUT_SHARE = 0.8  # of the interval, when no timeout is set


def stale_after_s(interval_s: float, timeout_s: float | None) -> float:
    """When a target's numbers are old: two missed turns plus the time the third may take. A scrape late by
    less than that is the ordinary jitter of a loaded machine, not something to flag."""
    return 2 * interval_s + effective_timeout(interval_s, timeout_s)


def effective_timeout(interval_s: float, timeout_s: float | None) -> float:
    """The per-fetch deadline: the configured one, else 0.8 x interval but at least 0.25 s.

    Shorter than the interval so a hung target has given up before its next
    turn would be due.
    """
    if timeout_s is not None:
        return timeout_s
    return max(MIN_TIMEOUT_S, _TIMEOUT_SHARE * interval_s)


def secret_problem(secret: str) -> str | None:
    """Why a token or password (as read from its file, ends stripped) cannot go into a header, in words that
    never quote it; None when it can. A line break inside is the usual one: an editor's second line, two
    tokens pasted, a file written with ``echo -e``."""
    if "\n" in secret or "\r" in secret:
        return "a line break inside"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in secret):
        return "a control character inside"
    return None


# -- which (interval, window, timeout) work together: the config refuses the rest, the TUI never makes them ---


def timeout_fits(interval_s: float, timeout_s: float | None) -> bool:
    """A set timeout must be shorter than the interval: a scrape that may run past its next turn delays
    every reading of that target (Prometheus refuses scrape_timeout > scrape_interval for the same reason)."""
    return timeout_s is None or timeout_s < interval_s


def window_fits(interval_s: float, window_s: float) -> bool:
    """The window must hold two scrapes: with one, every rate, quantile and slope is unknown."""
    return window_s >= 2 * interval_s


def _spoken(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    return f"{s / 60:.3g} min" if s >= 60 else f"{s:.3g} s"


def buffer_warning(interval_s: float, window_s: float, *, capacity: int) -> str | None:
    """Why the window shows less than it says, when it is longer than ``capacity`` scrapes at this interval;
    None when the buffer holds it. Not an error: the numbers over what is held are right, only shorter. The
    buffer is not grown for it: each series' depth times the series cap is the monitor's memory bound."""
    held = capacity * interval_s
    if window_s <= held:
        return None
    return (f"the {_spoken(window_s)} window is longer than the {_spoken(held)} the buffer holds at a "
            f"{_spoken(interval_s)} interval ({capacity:,} scrapes a series): rates, charts and quantiles "
            f"cover the last {_spoken(held)}; a longer interval holds more")


def _first(values: Iterable[float], ok: Callable[[float], bool]) -> float | None:
    return next((v for v in values if ok(v)), None)


def fit_timing(interval_s: float, window_s: float, *, keep: Literal["interval", "window"],
               timeout_s: float | None = None, intervals: Sequence[float] = (),
               windows: Sequence[float] = WINDOWS_S) -> tuple[float, float]:
    """The (interval, window) nearest the one asked for that the config accepts, keeping the one just changed.

    For the TUI's keys, which step one of the two: where the pair would be
    refused (every 1m with a 1m window), the other one moves instead, along
    its steps (``intervals``, ``windows``): the window up to the first step
    holding two intervals (else exactly two), the interval down to the last
    step that fits the window (else exactly half of it). An interval that can
    never be (below the minimum, or not above the configured timeout) moves
    up to the first step that can (else to the least that can), whichever
    one was kept; a window too short for any interval that can be moves up.
    """
    def interval_ok(i: float) -> bool:
        return i >= MIN_INTERVAL_S and timeout_fits(i, timeout_s)

    least = max(MIN_INTERVAL_S, 2 * timeout_s if timeout_s is not None else 0.0)
    floor = _first(sorted(intervals), interval_ok) or least  # the shortest interval that can be

    def window_for(i: float, w: float) -> float:
        return w if window_fits(i, w) else _first(sorted(windows), lambda x: window_fits(i, x)) or 2 * i

    interval = interval_s if interval_ok(interval_s) else max(floor, interval_s)
    if keep == "interval":
        return interval, window_for(interval, window_s)
    window = window_for(floor, window_s)
    if window_fits(interval, window):
        return interval, window
    below = _first(sorted(intervals, reverse=True), lambda i: interval_ok(i) and window_fits(i, window))
    if below is not None:
        return below, window
    return (window / 2 if interval_ok(window / 2) else floor), window


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: str
    role: str | None = None  # None: detect from posttrain_run_info, then from what it exposes
    bearer_token_file: str | None = None
    basic_auth: tuple[str, str] | None = None  # (username, password)
    ca_file: str | None = None
    verify_tls: bool = True
    # A JSONL metrics file instead of an endpoint (``url`` is then the path as shown): tailed, each line read
    # with ``framework``'s map (None: detected from the keys), by ``ptmon.monitor.sources.files``.
    path: str | None = None
    framework: str | None = None
    gpus: float | None = None  # a file target's run's GPUs (None: PTMON_GPUS, else its spend is unknown)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Alert thresholds; warn and critical levels where a rule has both."""

    weight_sync_p99_warn_s: float = 30.0
    weight_sync_p99_critical_s: float = 120.0
    # weight_sync_failing: any failed sync in the window warns; critical at this share of the window's
    # attempts, or this many failures since the last success (a dead peer fails every broadcast at once).
    weight_sync_failure_share_critical: float = 0.5
    weight_sync_failures_in_a_row_critical: float = 3.0
    # policy_not_advancing: the published version held this long while the trainer stepped and syncs were
    # tried (each failed, or published nothing new): the fleet samples ever older weights.
    policy_stuck_s: float = 300.0
    staleness_warn: float = 2.0  # policy versions behind the trainer
    staleness_critical: float = 4.0
    stall_min_s: float = 120.0  # trainer stalled: no step for max(stall_factor x median step, stall_min_s)
    stall_factor: float = 10.0
    rollout_drop_ratio: float = 0.5  # rate at or below this fraction of its 10-minute median
    marginal_ipd_min: float = 0.0  # points per $1k over the last K evals; at or below fires
    eval_regression_points: float = 0.02  # score this far below the best so far fires
    eval_push_max_age_s: float = 3600.0  # the last eval pushed to a Pushgateway longer ago than this fires


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
    eval_point: float = 0.01  # the score step "$ per next point" prices: 0.01 is a percentage point of a [0, 1] score
    target_score: float | None = None  # the budget ETA's goal; None: no ETA
    thresholds: Thresholds = field(default_factory=Thresholds)
    max_series: int = DEFAULT_MAX_SERIES
    max_label_bytes: int = DEFAULT_MAX_LABEL_BYTES
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    concurrency: int = 16
    # Read this Prometheus-compatible server's query API instead of scraping targets (exclusive with targets).
    prometheus: Target | None = None
    # With ``prometheus``: only the targets whose posttrain_run_info says this run (a server holding several runs).
    run: str | None = None
    # The ptmon.toml these settings were read from (given or discovered), as it is shown; None: no file.
    config_file: str | None = None

    @property
    def effective_timeout_s(self) -> float:
        return effective_timeout(self.interval_s, self.timeout_s)
